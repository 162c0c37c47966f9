// pages/submission.js - #/submission/ID: one submission. Who, board, GPU,
// mode, verdict, score, rank and times; while it is queued or running, its
// progress live from the event stream (queue position, compile, each test,
// each timed shape); the evidence of a failure (compile log, mismatches,
// the CUDA error), each fact once; per-shape timings with their throughput,
// share of the bound, confidence intervals, floor and launch configuration
// (a column nobody may see here left out); the kernels' resources; the source, highlighted
// and numbered; and its diff against any earlier submission of the same
// user to the board; in profile and sanitize modes the Nsight Compute summary
// and the sanitizer's findings (pages/tool.js). What is shown is what the API gives this caller
// (docs/protocol.md, "Who sees a submission").

import {api, board, events, setLastBoard, whoami} from "../api.js";
import {profileSection, sanitizeSection} from "./tool.js";
import {errorBox, fill, fmtBytes, fmtNs, h, langBadge, saveText, shapeLabel, table, timeEl, verdictBadge,
        VERDICT_TEXT} from "../dom.js";
import {lib} from "../libs.js";
import {logView, sourceView} from "../code.js";
import {diffCounts, diffView, lineDiff} from "../diff.js";
import {fmtGbs, fmtPct, fmtTflops, rate} from "../rate.js";

export async function submissionPage({main, params, signal}) {
  const id = params[0];
  const u = await whoami().catch(() => null);
  const box = h("div");
  main.append(box);
  const live = {el: null};
  const load = async () => {
    let s, d;
    try {
      [s, d] = await Promise.all([api("/api/v1/submissions/" + id, {signal}),
                                  api("/api/v1/submissions/" + id + "/detail", {signal}).catch(() => null)]);
    } catch (e) {
      if (e.name === "AbortError") throw e;
      fill(box, h("h1", "Submission #" + id), e.status === 404
        ? h("p", "There is no submission #" + id + " that you may see. Others' submissions are visible " +
            "only while they are ranked" + (u ? "" : "; yours after you ") , u ? "." : h("a", {href: "#/signin"}, "sign in"))
        : errorBox(e, "Cannot load the submission"));
      return;
    }
    const b = await board(s.leaderboard).catch(() => null);
    setLastBoard(s.leaderboard, s.gpu); // the submit form's first choice
    render(box, s, d, b, u, live, load, signal);
  };
  await load();
}

function render(box, s, d, b, u, live, reload, signal) {
  const owner = u && (u.name === s.user || u.role === "admin");
  fill(box,
    h("p.crumbs", h("a", {href: "#/"}, "Boards"), " / ",
      h("a", {href: "#/board/" + encodeURIComponent(s.leaderboard)}, s.leaderboard), " / ",
      u && u.name === s.user ? [h("a", {href: "#/me"}, "my submissions"), " / "] : null, "#" + s.id),
    h("h1", "Submission #" + s.id, " ", verdictBadge(s)),
    facts(s, d));
  const done = s.status === "done";
  if (!done && owner) {
    if (!live.el) {
      live.el = h("section.live", {"aria-live": "polite"});
      follow(live.el, s, b, reload, signal, state => {
        const badge = box.querySelector("h1 .badge");
        if (badge) badge.replaceWith(verdictBadge({status: state}));
      });
    }
    box.append(live.el);
  }
  if (!done && !owner) box.append(h("p.muted", "This submission is " + s.status + "."));
  const res = s.result && typeof s.result === "object" ? s.result : null;
  const src = {view: null};
  const goto = n => src.view && src.view.goto(n);
  if (done && res) box.append(evidence(s, res, b, goto));
  if (res && res.tests && res.tests.length && owner) box.append(testsSection(res.tests, res.message));
  if (s.mode === "profile" || s.mode === "sanitize") {
    if (res && res.profile) box.append(profileSection(s, res.profile, owner, d, b));
    if (res && res.sanitize) box.append(sanitizeSection(res.sanitize, goto));
  } else {
    box.append(timings(s, d, res, b));
  }
  if (d && d.kernels && d.kernels.length) box.append(kernels(d.kernels));
  if (res && res.system && res.system.gpu) box.append(system(res.system));
  if (done && live.el) box.append(h("details.log", h("summary", "Judging log"), live.el));
  if (s.source !== undefined) {
    const holder = h("div"); // filled once highlight.js has loaded, before the actions below
    box.append(holder);
    sourceSection(holder, s, d, u, src, signal);
  }
  else box.append(h("p.muted", "The source of this submission is visible to its author and admins, and to " +
                               "everyone signed in once the board's sources are published."));
  const act = actions(s, u, reload);
  if (act) box.append(act);
}

function facts(s, d) {
  const res = s.result && typeof s.result === "object" ? s.result : null;
  const box = h("dl.facts");
  const add = (k, v, wide) => {
    if (v !== null && v !== undefined && v !== "") box.append(h("div" + (wide ? ".wide" : ""), h("dt", k), h("dd", v)));
  };
  add("user", h("a", {href: "#/user/" + encodeURIComponent(s.user)}, s.user)); // their ranked entries
  add("board", h("a", {href: "#/board/" + encodeURIComponent(s.leaderboard)}, s.leaderboard));
  add("GPU \u00b7 mode", s.gpu + " \u00b7 " + s.mode);
  add("language", s.lang ? langBadge(s.lang) : null);
  add("score", typeof s.score_ns === "number" ? h("strong", fmtNs(s.score_ns)) : null);
  add("rank", d && d.rank ? h("a", {href: "#/board/" + encodeURIComponent(s.leaderboard) + "/rankings/" +
                                encodeURIComponent(s.gpu)}, d.rank.text) : null);
  add("submitted", timeEl(s.created_at));
  if (s.finished_at) add("judged", h("span", timeEl(s.finished_at), s.started_at ? " (" +
    Math.round((new Date(s.finished_at) - new Date(s.started_at)) / 1000) + " s)" : ""));
  if (s.file_name) add("file", s.file_name + (d && d.source_bytes !== undefined
    ? " (" + fmtBytes(d.source_bytes) + ", " + d.source_lines + " lines)" : ""));
  if (s.source_sha256) add("sha256", h("code.hash", {title: s.source_sha256}, s.source_sha256.slice(0, 16) + "\u2026"));
  if (s.attempts) add("attempts", String(s.attempts));
  if (res && res.message && s.verdict === "accepted") add("message", res.message, true);
  if (s.reason) add("reason", s.reason, true);
  if (s.disqualified) add("disqualified", s.disqualified_reason || "yes", true);
  if (s.withdrawn) add("withdrawn", timeEl(s.withdrawn_at));
  return box;
}

// The live panel: one step per stage, filled from the event stream.
// badge(state) shows "running" once a runner has the job, then the verdict.
function follow(el, s, b, reload, signal, badge) {
  const nt = b ? b.num_tests : null, nb = b && s.mode !== "test" ? b.num_benchmarks : 0;
  const step = (title) => {
    const li = h("li.step", h("span.title", title), h("span.state", ""), h("div.rows"));
    return li;
  };
  const q = step("Queue"), c = step("Compile"), t = step("Tests"), bm = step("Timed shapes"), v = step("Verdict");
  const steps = [q, c, t].concat(nb ? [bm] : []).concat([v]);
  const set = (li, cls, text) => {
    li.className = "step " + cls;
    li.querySelector(".state").textContent = text;
  };
  const status = h("p.status", "Connecting to the event stream...");
  fill(el, h("h2", "Progress"), status, h("ol.steps", steps));
  set(q, "now", "waiting");
  let tests = 0, shapes = 0;
  const onEvent = ev => {
    const x = ev.data || {};
    status.textContent = "Live: updates as the runner reports.";
    if (ev.event === "queued") {
      // A position-less queued event (a replay once taken) changes nothing shown.
      if (x.position) set(q, "now", "position " + x.position + (x.gpu ? " on " + x.gpu : ""));
      if (x.reason) q.querySelector(".rows").append(h("div.muted", "retried: " + x.reason));
      // No runner serves this GPU type: say so, once (the stream repeats it on a reconnect).
      const rows = q.querySelector(".rows");
      if (x.note && !rows.querySelector(".note")) rows.append(h("div.note.warn", x.note));
    } else if (ev.event === "compiling") {
      badge("running");
      set(q, "ok", "taken by a runner");
      set(c, "now", "compiling" + (x.arch ? " for " + x.arch : "") + "...");
    } else if (ev.event === "compiled") {
      set(q, "ok", "taken by a runner");
      const ks = (x.kernels || []).map(k => k.name + " (" + k.registers + " registers)").join(", ");
      set(c, x.ok === false ? "bad" : "ok", x.ok === false ? "failed" :
          "compiled" + (typeof x.seconds === "number" ? " in " + x.seconds.toFixed(2) + " s" : "") + (ks ? ": " + ks : ""));
    } else if (ev.event === "test") {
      tests++;
      const bad = x.status !== "pass";
      set(t, bad ? "bad" : (nt && tests >= nt ? "ok" : "now"), tests + (nt ? " of " + nt : "") + (bad ? ": failed" : " passed"));
      t.querySelector(".rows").append(h("div.row" + (bad ? ".bad" : ""),
        h("span.idx", "test " + x.index), " ", h("code", shapeLabel(x.shape)), " ", h("strong", x.status),
        x.message ? h("span.msg", " " + x.message) : null));
    } else if (ev.event === "benchmark") {
      shapes++;
      set(t, "ok", (nt || tests) + " passed");
      set(bm, x.status === "pass" ? (shapes >= nb ? "ok" : "now") : "bad", shapes + " of " + nb);
      bm.querySelector(".rows").append(h("div.row",
        h("span.idx", "shape " + x.index), " ", h("code", shapeLabel(x.shape)), " median ",
        h("strong", fmtNs(x.median_ns)), typeof x.ci_lo_ns === "number"
          ? " (95% CI " + fmtNs(x.ci_lo_ns) + " \u2013 " + fmtNs(x.ci_hi_ns) + ", n=" + x.n + ")" : ""));
    } else if (ev.event === "verdict") {
      badge(x.verdict);
      set(v, x.verdict === "accepted" ? "ok" : "bad", (VERDICT_TEXT[x.verdict] || x.verdict || "") +
          (x.message ? ": " + x.message : ""));
      status.textContent = "Judged.";
    } else if (ev.event === "error") {
      status.textContent = "The stream ended: " + (x.message || x.code);
    }
  };
  events(s.id, onEvent, signal).then(() => {
    if (!signal.aborted) reload();
  }).catch(e => {
    if (e.name !== "AbortError") status.textContent = "No live progress: " + e.message + ". Reload the page to see the result.";
  });
}

// Why it failed, each fact once: the verdict's sentence, then per failing
// test its shape, seed, errors against the board's tolerance and the first
// mismatches (or the CUDA error); a message is repeated only when it says more.
function evidence(s, res, b, go) {
  const sec = h("section.evidence");
  const v = s.verdict;
  if (v === "accepted") return sec;
  sec.append(h("h2", "Why: " + (VERDICT_TEXT[v] || v)));
  if (res.message) sec.append(h("p.verdict-msg", res.message));
  const comp = res.compile || {};
  if (comp.log && (v === "compile_error" || v === "rejected" || comp.ok === false))
    sec.append(h("h3", "Compiler output"), logView(comp.log, go));
  const says = m => m && !(res.message || "").includes(m);
  for (const t of res.tests || []) {
    if (t.status === "fail" && t.mismatch) sec.append(mismatch(t, b, says(t.message)));
    else if (t.status === "error")
      sec.append(h("h3", "Test " + t.index + " (" + shapeLabel(t.shape) + "): error"),
                 h("pre.cuda-error", t.message || "error"));
  }
  return sec;
}

function mismatch(t, b, showMsg) {
  const m = t.mismatch;
  const fmt = x => (typeof x === "number" ? String(Number.isInteger(x) ? x : +x.toPrecision(6)) : String(x));
  const buf = b && (b.buffers || []).find(x => x.name === m.buffer);
  const tol = buf && typeof buf.atol === "number"
    ? "; allowed |got \u2212 expected| \u2264 " + buf.atol + " + " + buf.rtol + " \u00d7 |expected|" : "";
  const abs = f => (typeof f.expected === "number" && typeof f.got === "number" ? Math.abs(f.got - f.expected) : NaN);
  return h("div.mismatch",
    h("h3", "Test " + t.index + " (" + shapeLabel(t.shape) + ")" + (t.seed !== undefined ? ", seed " + t.seed : "")),
    h("p", h("code", m.buffer), ": " + (showMsg ? m.count + " of " + m.total + " elements differ; " : "") +
      "largest error " + fmt(m.max_abs_err) + " absolute, " + fmt(m.max_rel_err) + " relative" + tol + "."),
    showMsg && t.message ? h("p.muted", t.message) : null,
    table(["index", {text: "expected", cls: "num"}, {text: "got", cls: "num"},
           {text: "abs error", cls: "num", title: "|got \u2212 expected|"}],
          (m.first || []).map(f => [h("code", "[" + (Array.isArray(f.index) ? f.index.join(", ") : f.index) + "]"),
                                    {v: fmt(f.expected), cls: "num"}, {v: fmt(f.got), cls: "num bad"},
                                    {v: isNaN(abs(f)) ? "-" : fmt(abs(f)), cls: "num"}])));
}

// The tests; a failing test's message is not repeated when the verdict says it.
// The message column only when some test has a message.
function testsSection(tests, verdictMsg) {
  const msgs = tests.some(t => t.message);
  return h("section", h("h2", "Tests"), table(["test", "shape", "seed", "result"].concat(msgs ? ["message"] : []),
    tests.map(t => [
      String(t.index), h("code", shapeLabel(t.shape)), t.seed === undefined ? "" : String(t.seed),
      {v: t.status, cls: t.status === "pass" ? "good" : "bad"}].concat(msgs ? [
      t.message && (verdictMsg || "").includes(t.message) ? h("span.muted", "(the verdict above)") : t.message || ""] : []))));
}

function launches(ls) {
  return (ls || []).map(l => l.kernel + " grid(" + l.grid.join(",") + ") block(" + l.block.join(",") + ")" +
                        (l.smem ? " smem " + fmtBytes(l.smem) : "")).join("; ");
}

// The timed shapes: median, its confidence interval, throughput (GB/s,
// TFLOP/s on a board that counts FLOPs) and the share of the shape's bound,
// the floor, n, why sampling stopped, the launches. A column nobody may see
// here (another user's ranked submission shows medians only) is left out.
function timings(s, d, res, b) {
  const rb = res && res.benchmarks ? res.benchmarks : [];
  const ds = d && d.shapes ? d.shapes : [];
  const n = Math.max(rb.length, ds.length);
  if (!n) return h("div");
  const xs = [];
  for (let i = 0; i < n; i++) xs.push(Object.assign({}, rb[i] || {}, ds[i] || {}));
  const cols = [
    {head: "shape", cell: x => h("code", shapeLabel(x.shape)), has: () => true},
    {head: {text: "median", cls: "num"}, cell: x => ({v: fmtNs(x.median_ns), cls: "num"}), has: x => typeof x.median_ns === "number"},
    {head: {text: "throughput", cls: "num", title: "the board's bytes (and FLOPs) for the shape over the median"},
     cell: x => { const r = rate(b, x.shape, x.median_ns);
                  return {v: [r.gbs !== null ? fmtGbs(r.gbs) : "-", r.tflops !== null ? " \u00b7 " + fmtTflops(r.tflops) : ""].join(""),
                          cls: "num"}; },
     has: x => rate(b, x.shape, x.median_ns).gbs !== null},
    {head: {text: "of bound", cls: "num", title: "the floor over the median: the share of the GPU's bandwidth bound reached"},
     cell: x => ({v: fmtPct(rate(b, x.shape, x.median_ns, x.floor_ns).pct), cls: "num"}),
     has: x => typeof x.floor_ns === "number" && typeof x.median_ns === "number"},
    {head: {text: "95% CI of the median", cls: "num"},
     cell: x => ({v: typeof x.ci_lo_ns === "number" ? fmtNs(x.ci_lo_ns) + " \u2013 " + fmtNs(x.ci_hi_ns) : "-", cls: "num"}),
     has: x => typeof x.ci_lo_ns === "number"},
    {head: {text: "floor", cls: "num"},
     cell: x => ({v: fmtNs(x.floor_ns) + (x.below_floor ? " \u26a0 below" : ""), cls: "num" + (x.below_floor ? " bad" : ""),
                  title: "the least time the bytes that must move can take on this GPU"}),
     has: x => typeof x.floor_ns === "number"},
    {head: {text: "n", cls: "num"}, cell: x => ({v: x.n === undefined ? "-" : String(x.n), cls: "num"}), has: x => x.n !== undefined},
    {head: "stopped", cell: x => x.stop_reason || "-", has: x => !!x.stop_reason},
    {head: "launches", cell: x => launches(x.launches) || "-", has: x => !!launches(x.launches)},
  ].filter(c => xs.some(c.has));
  return h("section", h("h2", "Timings"), table(cols.map(c => c.head), xs.map(x => cols.map(c => c.cell(x)))),
    typeof s.score_ns === "number" ? h("p", "Score (geometric mean of the medians): ", h("strong", fmtNs(s.score_ns))) : null);
}

function kernels(ks) {
  const yes = x => (x ? (typeof x === "string" ? x : "yes") : "no");
  return h("section", h("h2", "Kernel resources"), table(["kernel", {text: "registers", cls: "num"},
    {text: "static smem", cls: "num"}, {text: "stack", cls: "num"}, {text: "spills (st/ld)", cls: "num"},
    {text: "max threads/block", cls: "num"}, "tensor cores", "TMA", "bulk copy", "cp.async"],
    ks.map(k => [h("code", k.name), {v: String(k.registers), cls: "num"}, {v: fmtBytes(k.smem_static), cls: "num"},
                 {v: fmtBytes(k.stack_frame), cls: "num"},
                 {v: k.spill_stores + " / " + k.spill_loads, cls: "num" + (k.spill_stores || k.spill_loads ? " bad" : "")},
                 {v: k.max_threads_per_block === undefined ? "-" : String(k.max_threads_per_block), cls: "num"},
                 yes(k.tensor_cores), yes(k.tma), yes(k.bulk_copy), yes(k.cp_async)])));
}

function system(sys) {
  const bits = [sys.gpu, sys.arch, sys.driver && "driver " + sys.driver, sys.cuda && "CUDA " + sys.cuda,
                sys.sm_clock_mhz_before && "SM clock " + sys.sm_clock_mhz_before + " \u2192 " + sys.sm_clock_mhz_after + " MHz",
                sys.verify && "checked on the " + sys.verify].filter(Boolean);
  return h("p.muted.system", "Judged on: " + bits.join(" \u00b7 "));
}

async function sourceSection(box, s, d, u, src, signal) {
  const sec = h("section.source", h("h2", "Source"));
  box.append(sec);
  const tools = h("p.tools", h("button.button.light", {type: "button", onclick: () => saveText(s.file_name || "kernel.cu", s.source)},
                                "Download " + (s.file_name || "kernel.cu")));
  sec.append(tools);
  const hljs = await lib("hljs");
  if (signal.aborted) return;
  src.view = sourceView(s.source, hljs, s.lang === "python" ? "python" : "cpp");
  sec.append(src.view.el);
  diffSection(box, s, d, u, signal);
}

// The diff against an earlier submission of the same user to the board.
async function diffSection(box, s, d, u, signal) {
  const sec = h("section.diffsec", h("h2", "Changes"));
  box.append(sec);
  const opts = new Map();
  if (d && d.previous) opts.set(d.previous.id, d.previous);
  if (u && (u.name === s.user || u.role === "admin")) {
    const who = u.name === s.user ? "" : "&user=" + encodeURIComponent(s.user);
    try {
      const l = await api("/api/v1/submissions?limit=200&leaderboard=" + encodeURIComponent(s.leaderboard) + who, {signal});
      for (const x of l.submissions) if (x.id < s.id && !opts.has(x.id)) opts.set(x.id, x);
    } catch (e) {
      if (e.name === "AbortError") return;
    }
  }
  if (!opts.size) {
    sec.append(h("p.muted", "This is " + s.user + "'s first submission to " + s.leaderboard + "."));
    return;
  }
  const list = [...opts.values()].sort((a, b) => b.id - a.id);
  const sel = h("select", {id: "diff-against"}, list.map(x => h("option", {value: x.id},
    "#" + x.id + " \u00b7 " + x.mode + " \u00b7 " + (VERDICT_TEXT[x.verdict || x.status] || x.verdict || x.status || "queued") +
    (typeof x.score_ns === "number" ? " \u00b7 " + fmtNs(x.score_ns) : "") + (d && d.previous && d.previous.id === x.id ? " (previous)" : ""))));
  const out = h("div.diffout");
  sec.append(h("p", h("label", "Compare with ", sel)), out);
  const show = async () => {
    fill(out, h("p.muted", "Loading..."));
    try {
      const other = await api("/api/v1/submissions/" + sel.value, {signal});
      const ops = lineDiff(other.source || "", s.source || "");
      if (!ops) { fill(out, h("p.muted", "The sources differ in too many lines to show.")); return; }
      const c = diffCounts(ops);
      fill(out, h("p", h("span.add", "+" + c.added), " ", h("span.del", "\u2212" + c.removed),
                  " lines from #" + other.id + " (" + (other.file_name || "") + ") to #" + s.id), diffView(ops));
    } catch (e) {
      if (e.name !== "AbortError") fill(out, errorBox(e, "Cannot load #" + sel.value));
    }
  };
  sel.addEventListener("change", show);
  show();
}

function actions(s, u, reload) {
  if (!u) return null;
  const sec = h("section.actions");
  const msg = h("p.msg");
  if (u.name === s.user && s.mode === "leaderboard" && s.verdict === "accepted" && !s.withdrawn && !s.disqualified) {
    sec.append(h("button.button.light", {type: "button", onclick: async () => {
      if (!confirm("Take #" + s.id + " out of the rankings for good? This cannot be undone.")) return;
      try { await api("/api/v1/submissions/" + s.id + "/withdraw", {method: "POST", json: {}}); reload(); }
      catch (e) { fill(msg, errorBox(e, "Not withdrawn")); }
    }}, "Withdraw from the rankings"));
  }
  if (u.role === "admin" && s.status === "done" && !s.disqualified) {
    const reason = h("input", {type: "text", placeholder: "reason (shown to its author)", size: 30});
    sec.append(h("form.inline", {onsubmit: async ev => {
      ev.preventDefault();
      try { await api("/api/v1/submissions/" + s.id + "/disqualify", {method: "POST", json: {reason: reason.value}}); reload(); }
      catch (e) { fill(msg, errorBox(e, "Not disqualified")); }
    }}, reason, " ", h("button.button.danger", {type: "submit"}, "Disqualify")));
  }
  if (!sec.childNodes.length) return null;
  sec.append(msg);
  return sec;
}
