// pages/mine.js - #/me: the signed-in user's submissions, newest first,
// with filters (board, GPU, mode, verdict; for an admin also whose: theirs
// or everyone's) and pages (the API's cursor; 25 rows, or ?limit=N).
// The filters and the cursor are in the URL (#/me?board=...&cursor=...), so
// the browser's Back goes to the newer page. While a row is queued or
// running the list is read again every few seconds.

import {api, boards, sleep, whoami} from "../api.js";
import {errorBox, fill, fmtNs, h, table, timeEl, verdictBadge} from "../dom.js";

const VERDICTS = ["accepted", "wrong_answer", "compile_error", "runtime_error", "time_limit", "rejected",
                  "internal_error"];

export async function minePage({main, query, signal}) {
  const u = await whoami();
  main.append(h("h1", query.get("user") === "*" ? "All submissions" : "My submissions"));
  if (!u) {
    main.append(h("p", h("a", {href: "#/signin"}, "Sign in"), " to see your submissions."));
    return;
  }
  const list = await boards().catch(() => []);
  const gpus = [...new Set(list.flatMap(b => b.gpus))];
  const f = {board: query.get("board") || "", gpu: query.get("gpu") || "", mode: query.get("mode") || "",
             verdict: query.get("verdict") || "", limit: query.get("limit") || "", user: u.role === "admin" && query.get("user") === "*" ? "*" : ""};
  const go = (extra) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(Object.assign({}, f, extra || {}))) if (v) p.set(k, v);
    const s = p.toString();
    location.hash = "#/me" + (s ? "?" + s : "");
  };
  const select = (key, label, values, names, anyText = "any") => h("label", label + " ", h("select", {name: key, onchange: e => {
    f[key] = e.target.value;
    go();
  }}, h("option", {value: ""}, anyText), values.map((v, i) => h("option", {value: v, selected: f[key] === v}, names ? names[i] : v))));
  main.append(h("form.filters", {onsubmit: e => e.preventDefault()},
    select("board", "board", list.map(b => b.name)), select("gpu", "GPU", gpus),
    select("mode", "mode", ["test", "benchmark", "leaderboard"]),
    select("verdict", "verdict", VERDICTS, VERDICTS.map(v => v.replace("_", " "))),
    u.role === "admin" ? select("user", "whose", ["*"], ["everyone's"], "mine") : null,
    (f.board || f.gpu || f.mode || f.verdict || f.user) ? h("a", {href: "#/me"}, "clear") : null));
  const box = h("div", h("p.muted", "Loading..."));
  main.append(box);
  const limit = Math.min(Math.max(parseInt(f.limit, 10) || 25, 1), 200);
  const q = new URLSearchParams({limit: String(limit)});
  if (f.board) q.set("leaderboard", f.board);
  for (const k of ["gpu", "mode", "verdict", "user"]) if (f[k]) q.set(k, f[k]);
  if (query.get("cursor")) q.set("cursor", query.get("cursor"));
  for (;;) {
    let d;
    try {
      d = await api("/api/v1/submissions?" + q.toString(), {signal});
    } catch (e) {
      if (e.name === "AbortError") throw e;
      fill(box, errorBox(e, "Cannot list your submissions"));
      return;
    }
    show(box, d, query.get("cursor"), go, f.user === "*");
    if (!d.submissions.some(x => x.status !== "done")) return;
    await sleep(3000, signal);
  }
}

function show(box, d, cursor, go, everyone) {
  const rows = d.submissions;
  fill(box);
  if (!rows.length) {
    box.append(h("p.muted", cursor ? "No older submissions." : "No submissions match. ",
                 cursor ? null : h("a", {href: "#/submit"}, "Submit one")));
  } else {
    // What matters first (verdict, score) comes first: on a phone the rest scrolls.
    const heads = ["id"].concat(everyone ? ["user"] : [])
      .concat(["verdict", {text: "score", cls: "num"}, "board", "GPU", "mode", "submitted", "file"]);
    box.append(table(heads,
      rows.map(s => [h("a", {href: "#/submission/" + s.id}, "#" + s.id)]
        .concat(everyone ? [s.user] : [])
        .concat([verdictBadge(s), {v: typeof s.score_ns === "number" ? fmtNs(s.score_ns) : "", cls: "num"},
                 s.leaderboard, s.gpu, s.mode, timeEl(s.created_at), s.file_name || ""])),
      {cls: "subs"}));
  }
  box.append(h("p.pager", cursor ? h("a.button.light", {href: "#/me", onclick: e => { e.preventDefault(); go({cursor: ""}); }}, "\u2190 Newest") : null, " ",
               d.next_cursor ? h("a.button.light", {href: "#", onclick: e => { e.preventDefault(); go({cursor: d.next_cursor}); }}, "Older \u2192") : null));
}
