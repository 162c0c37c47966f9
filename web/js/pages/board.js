// pages/board.js - #/board/NAME: the problem (statement, signature, shapes,
// tolerances, limits, downloads) and #/board/NAME/rankings[/GPU]: the
// rankings on one GPU type with per-shape medians, tied ranks marked "="
// with the board's resolution on that GPU, the signed-in user's row marked,
// and the best score over time (a chart, or a table without Chart.js).
// Beside each median its throughput (rate.js). A GPU type that no runner
// serves says so (GET /gpus's note). The reference is offered only to those
// who may read it (the board's public_reference, the rankings'
// sources_published), so no refused request is made. The statement's
// https://HOST is this server's own address; the signature is named as the
// template's launch line names its kernel.

import {api, board, setLastBoard, whoami} from "../api.js";
import {deadlineEl, errorBox, fill, fmtNs, h, langBadge, saveText, shapeLabel, table, timeEl, ago} from "../dom.js";
import {lib} from "../libs.js";
import {renderMarkdown} from "../markdown.js";
import {highlightLines} from "../code.js";
import {rate, rateText} from "../rate.js";

export async function boardPage({main, params, signal}) {
  const [name, tab, gpuParam] = params;
  let b;
  try {
    b = await board(name);
  } catch (e) {
    main.append(h("h1", name), errorBox(e, "Cannot load this leaderboard"));
    return;
  }
  const base = "#/board/" + encodeURIComponent(b.name);
  const gpu = tab ? gpuParam || b.gpus[0] : undefined;
  setLastBoard(b.name, gpu);
  main.append(
    h("p.crumbs", h("a", {href: "#/"}, "Boards"), " / ", b.name),
    h("h1", b.title),
    h("p.meta", deadlineEl(b.deadline), " \u00b7 GPUs: ", b.gpus.map(g => [h("span.chip", g), " "]),
      " \u00b7 ", h("a.button", {href: "#/submit?board=" + encodeURIComponent(b.name) +
                                  (gpu ? "&gpu=" + encodeURIComponent(gpu) : "")}, "Submit a kernel")),
    h("nav.tabs", h("a", {href: base, class: tab ? "" : "on"}, "Problem"),
      h("a", {href: base + "/rankings", class: tab ? "on" : ""}, "Rankings")));
  if (tab) return rankings(main, b, gpu, base, signal);
  return problem(main, b, signal);
}

async function problem(main, b, signal) {
  const files = "/api/v1/leaderboards/" + encodeURIComponent(b.name) + "/files/";
  const downloads = h("p.downloads", h("a.button.light", {href: files + "template.cu", download: "template.cu"},
                                       "template.cu"), " ",
                      b.python ? [h("a.button.light", {href: files + "template.py", download: "template.py"},
                                    "template.py"), " "] : null,
                      h("a.button.light", {href: files + "description.md", download: "description.md"}, "description.md"));
  const statement = h("div.statement", h("p.muted", "Loading the statement..."));
  const side = h("aside.facts");
  main.append(h("div.cols", h("section", statement), side));
  side.append(h("h2", "Files"), downloads);
  // reference.cu: public on some boards, and to everyone signed in once the sources are published.
  mayReadReference(b, signal).then(yes => {
    if (!yes || signal.aborted) return;
    downloads.append(" ", h("button.button.light", {type: "button", onclick: async () => {
      saveText("reference.cu", await api(files + "reference.cu"));
    }}, "reference.cu"));
  });
  const kernelName = api(files + "template.cu", {signal}).then(t => {
    const m = /^\/\/!kjudge\s+launch\s+([A-Za-z_]\w*)/m.exec(t || "");
    return m ? m[1] : null;
  }).catch(() => null);
  const hljsP = lib("hljs");
  const [marked, katex, hljs] = await Promise.all([lib("marked"), lib("katex"), hljsP]);
  if (signal.aborted) return;
  // The statement's examples say https://HOST: this server's own address.
  const text = (b.description || "").replace(/https?:\/\/HOST(?=[/\s]|$)/g, location.origin);
  const md = renderMarkdown(text, {marked, katex, hljs});
  // The statement's own title repeats the page's.
  if (md.firstElementChild && md.firstElementChild.tagName === "H1") md.firstElementChild.remove();
  fill(statement, md);

  const name = await kernelName;
  if (signal.aborted) return;
  const sig = "extern \"C\" __global__ void " + (name || "kernel") + b.signature + ";";
  const code = h("pre.sig");
  const lines = highlightLines(hljs, sig);
  if (lines) { code.innerHTML = lines.join("\n"); code.classList.add("hljs"); } else code.textContent = sig;
  side.append(h("h2", "Signature"), code, h("p.muted", name
    ? "Named as in the template; any name works if the //!kjudge launch line names it."
    : "Any name works if the //!kjudge launch line names it."));
  if (b.python) {
    // Python in KernelBot's form: the tuple custom_kernel receives and the one it returns.
    const py = "def custom_kernel(data: input_t) -> output_t:\n    " + b.python.args.join(", ") + " = data\n" +
               "    ...\n    return " + b.python.returns.join(", ");
    const pre = h("pre.sig");
    const pl = highlightLines(hljs, py, "python");
    if (pl) { pre.innerHTML = pl.join("\n"); pre.classList.add("hljs"); } else pre.textContent = py;
    side.append(h("h2", "In Python"), pre,
                h("p.muted", "An output in data is the judge's own tensor: fill it and return it, or return a new one."));
  }
  side.append(h("h2", "Buffers"), table(["name", "type", "shape", "role", "check"], b.buffers.map(x => [
    h("code", x.name), x.dtype, "[" + x.shape.join(", ") + "]", x.role,
    x.role === "output" ? "atol " + x.atol + ", rtol " + x.rtol
      : (x.init ? x.init.dist + (x.init.dist === "normal" ? " (" + x.init.mean + ", " + x.init.std + ")" :
        x.init.lo !== undefined ? " [" + x.init.lo + ", " + x.init.hi + "]" : "") : "")])));
  const shapeTable = rows => table(b.vars.concat(["seed"]), rows.map(r => b.vars.map(v => ({v: r[v], cls: "num"}))
    .concat([{v: r.seed, cls: "num muted"}])));
  side.append(h("h2", "Test shapes (" + b.tests.length + ")"), shapeTable(b.tests),
              h("h2", "Timed shapes (" + b.benchmarks.length + ")"), shapeTable(b.benchmarks));
  if (b.constraints && b.constraints.length)
    side.append(h("h2", "Constraints"), h("ul", b.constraints.map(c => h("li", h("code", c)))));
  const lim = b.time_limits_s || {};
  side.append(h("h2", "Limits"), h("p", "Whole job: test " + lim.test + " s, benchmark " + lim.benchmark +
                                   " s, leaderboard " + lim.leaderboard + " s. Ranking: " + b.ranking + " of the medians, " +
                                   (b.score === "gpu_time" ? "each the GPU time of the call's kernels and copies (CUPTI)."
                                                           : "each timed with CUDA events around the call.")));
  const res = (b.score === "gpu_time" ? b.gpu_time_resolution_pct : b.resolution_pct) || {};
  side.append(h("p.resolution", "Resolution (the smallest score difference that counts; closer scores tie): " +
                b.gpus.map(g => g + " " + (typeof res[g] === "number" ? res[g] + " %" : "not measured")).join(", ") + "."));
}

async function rankings(main, b, gpu, base, signal) {
  const u = await whoami().catch(() => null);
  main.append(h("nav.tabs.sub", b.gpus.map(g => h("a", {href: base + "/rankings/" + encodeURIComponent(g),
                                                        class: g === gpu ? "on" : ""}, g))));
  if (!b.gpus.includes(gpu)) {
    main.append(h("p.error", "This leaderboard does not run on " + gpu + "."));
    return;
  }
  const q = "?gpu=" + encodeURIComponent(gpu);
  const path = "/api/v1/leaderboards/" + encodeURIComponent(b.name);
  const noteBox = h("div");
  const tableBox = h("section", h("p.muted", "Loading the rankings..."));
  const chartBox = h("section.chart", h("h2", "Best score over time"), h("p.muted", "Loading..."));
  main.append(noteBox, tableBox, chartBox);
  // No runner serves this GPU type: its jobs wait, and the page says so.
  api("/api/v1/gpus", {signal}).then(d => {
    const g = (d.gpus || []).find(x => x.gpu === gpu);
    if (g && g.note) fill(noteBox, h("p.warn", {role: "note"}, g.note.charAt(0).toUpperCase() + g.note.slice(1) + "."));
  }).catch(() => {});
  let r;
  try {
    r = await api(path + "/rankings" + q, {signal});
  } catch (e) {
    fill(tableBox, errorBox(e, "Cannot load the rankings"));
    return;
  }
  fill(tableBox, h("h2", "Rankings on " + gpu), rankingTable(r, b, u));
  if (r.sources_published) tableBox.append(h("p.muted", "The sources of this board are published: " +
                                                        "signed-in users can read every submission."));
  const [hist, Chart] = await Promise.all([api(path + "/history" + q + "&top=8", {signal}).catch(e => e),
                                           lib("chart")]);
  if (signal.aborted) return;
  if (hist instanceof Error) {
    fill(chartBox, h("h2", "Best score over time"), errorBox(hist, "Cannot load the history"));
    return;
  }
  fill(chartBox, h("h2", "Best score over time"));
  if (!hist.records.length) {
    chartBox.append(h("p.muted", "Nothing ranked yet."));
    return;
  }
  if (Chart) drawChart(Chart, chartBox, hist, u);
  chartBox.append(h("details", {open: Chart ? null : true}, h("summary", "Each time the best score improved"),
    table(["when", "user", "score", "submission"], hist.records.slice().reverse().map(p =>
      [timeEl(p.submitted_at), h("a", {href: userHref(p.user)}, p.user), {v: fmtNs(p.score_ns), cls: "num"},
       h("a", {href: "#/submission/" + p.submission_id}, "#" + p.submission_id)]))));
}

const userHref = name => "#/user/" + encodeURIComponent(name);

// May this tab read the board's reference? Public on some boards; to admins;
// to signed-in users (not runners) once the sources are published.
async function mayReadReference(b, signal) {
  if (b.public_reference) return true;
  const u = await whoami().catch(() => null);
  if (!u) return false;
  if (u.role === "admin") return true;
  if (u.role === "runner") return false;
  try {
    const r = await api("/api/v1/leaderboards/" + encodeURIComponent(b.name) + "/rankings?gpu=" +
                        encodeURIComponent(b.gpus[0]), {signal});
    return !!r.sources_published;
  } catch (e) {
    return false;
  }
}

function rankingTable(r, b, u) {
  if (!r.rankings.length) return h("p.muted", "No accepted leaderboard-mode submission on " + r.gpu + " yet.");
  const shapes = b.benchmarks.map(x => {
    const s = {};
    b.vars.forEach(v => { s[v] = x[v]; });
    return s;
  });
  const best = shapes.map((_, i) => Math.min(...r.rankings.map(row => row.shapes[i] ? row.shapes[i].median_ns : Infinity)));
  const heads = ["#", "user", {text: "lang", cls: "lang", title: "the language it was written in"},
                 {text: "score", cls: "num"}]
    .concat(shapes.map(s => ({text: shapeLabel(s), cls: "num shape", title: "median time on " + shapeLabel(s)})))
    .concat(["submitted", "id"]);
  const mine = u ? r.rankings.findIndex(x => x.user === u.name) : -1;
  const t = table(heads, r.rankings.map(row => [
    {v: String(row.rank) + (row.tied ? "=" : ""), cls: "num"},
    row.user === (u && u.name) ? h("span", h("a", {href: userHref(row.user)}, h("strong", row.user)), " ",
                                   h("span.badge.you", "you"))
      : h("a", {href: userHref(row.user)}, row.user),
    {v: row.lang ? langBadge(row.lang) : "", cls: "lang"},
    {v: fmtNs(row.score_ns), cls: "num score"},
    ...shapes.map((_, i) => {
      const m = row.shapes[i] ? row.shapes[i].median_ns : null;
      const t = rateText(rate(b, shapes[i], m, row.shapes[i] ? row.shapes[i].floor_ns : null));
      return {v: [fmtNs(m), t ? h("span.rate", t) : null], cls: "num" + (m !== null && m === best[i] ? " best" : "")};
    }),
    h("span", {title: row.submitted_at}, ago(row.submitted_at)),
    h("a", {href: "#/submission/" + row.submission_id}, "#" + row.submission_id),
  ]), {cls: "rank", rowAttrs: i => (i === mine ? {class: "me"} : null)});
  const box = h("div", t);
  const measure = r.score === "gpu_time" ? "Scores are GPU time (the GPU's own timestamps of each call's kernels and copies, CUPTI). "
                                          : "Scores are CUDA-event times around each call. ";
  box.append(h("p.muted.resolution", measure + (typeof r.resolution_pct === "number"
    ? "Resolution on " + r.gpu + ": " + r.resolution_pct + " %. Scores closer than that are tied (rank marked =), " +
      "listed by time of submission."
    : "Resolution not measured on " + r.gpu + ": only equal scores are tied (rank marked =).")));
  if (u && mine < 0) box.append(h("p.muted", "You have no ranked submission on " + r.gpu + " yet."));
  return box;
}

const COLORS = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b", "#975a16", "#4a5568"];

// The leader's line and the top users' lines, each a step function: a
// score holds from its submission until the next improvement (and to now).
// Chart.js's "before" steps keep a point's value up to the next point's x
// and drop there ("after" would drop at the earlier point).
function drawChart(Chart, box, hist, u) {
  const now = Date.now();
  const step = pts => {
    const d = pts.map(p => ({x: new Date(p.submitted_at).getTime(), y: p.score_ns / 1000, p}));
    if (d.length) d.push({x: Math.max(now, d[d.length - 1].x), y: d[d.length - 1].y, p: null});
    return d;
  };
  const datasets = [{label: "best", data: step(hist.records), stepped: "before", borderColor: "#111",
                     backgroundColor: "#111", borderWidth: 3, pointRadius: 3}];
  hist.users.forEach((x, i) => {
    const mine = u && x.user === u.name;
    datasets.push({label: x.user + (mine ? " (you)" : ""), data: step(x.points), stepped: "before",
                   borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length],
                   borderWidth: mine ? 3 : 1.5, borderDash: mine ? [] : [4, 3], pointRadius: 2});
  });
  const xs = datasets.flatMap(d => d.data.map(p => p.x)), ys = datasets.flatMap(d => d.data.map(p => p.y));
  const span = Math.max(...xs) - Math.min(...xs);
  const two = n => String(n).padStart(2, "0");
  // Times of day on a short span; the date too once it spans hours (a day
  // can change), the date alone over days, with the year over most of one.
  const MON = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const fmtDate = v => {
    const d = new Date(v);
    const hm = two(d.getHours()) + ":" + two(d.getMinutes());
    if (span < 2 * 3600e3) return hm + ":" + two(d.getSeconds());
    const day = MON[d.getMonth()] + " " + d.getDate() + (span > 300 * 86400e3 ? " " + d.getFullYear() : "");
    return span < 4 * 86400e3 ? [day, hm] : day;
  };
  // Round tick values without their zeros: "10 µs", not "10.000 µs".
  const fmtTick = v => fmtNs(v * 1000).replace(/(\.\d*?)0+(?= )/, "$1").replace(/\.(?= )/, "");
  const narrow = box.clientWidth < 600;
  // Fewer time labels on a narrow chart (a phone), more again when it widens.
  const onResize = (chart, size) => {
    const want = size.width < 600 ? 3 : 6;
    if (chart.options.scales.x.ticks.maxTicksLimit !== want) {
      chart.options.scales.x.ticks.maxTicksLimit = want;
      chart.update("none");
    }
  };
  const canvas = h("canvas", {"aria-label": "best score over time", role: "img"});
  box.append(h("div.chartwrap", canvas));
  new Chart(canvas, {
    type: "line",
    data: {datasets},
    options: {
      responsive: true, maintainAspectRatio: false, animation: false, parsing: false, onResize,
      interaction: {mode: "nearest", intersect: false},
      scales: {
        x: {type: "linear", min: Math.min(...xs), max: Math.max(...xs),
            ticks: {callback: fmtDate, maxTicksLimit: narrow ? 3 : 6, maxRotation: 0, autoSkipPadding: 16}},
        // A log scale once the scores span more than 4x, so early and late scores both stay readable.
        y: {type: Math.max(...ys) > 4 * Math.min(...ys) ? "logarithmic" : "linear",
            title: {display: true, text: "score"}, ticks: {callback: fmtTick, maxTicksLimit: 6}},
      },
      plugins: {
        legend: {position: "bottom", labels: {boxWidth: 12}},
        tooltip: {callbacks: {
          title: items => new Date(items[0].raw.x).toLocaleString(),
          label: it => it.dataset.label + ": " + fmtNs(it.raw.y * 1000) +
                       (it.raw.p ? " (#" + it.raw.p.submission_id + ")" : " (now)"),
        }},
      },
    },
  });
}
