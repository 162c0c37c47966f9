// pages/user.js - #/user/NAME: one user's public entries, the rows of every
// board's rankings on every GPU type that are theirs (rank, score, its
// submission). Built from the public rankings (GET .../rankings?gpu=G,
// cached by the server), the only list of another user's work anyone may
// read; a ranking's user name links here.

import {api, boards, whoami} from "../api.js";
import {errorBox, fill, fmtNs, h, langBadge, table, timeEl} from "../dom.js";

export async function userPage({main, params, signal}) {
  const name = params[0];
  const u = await whoami().catch(() => null);
  main.append(h("p.crumbs", h("a", {href: "#/"}, "Boards"), " / ", name), h("h1", name));
  if (u && u.name === name)
    main.append(h("p.muted", "Your ranked entries; ", h("a", {href: "#/me"}, "My submissions"), " lists everything you sent."));
  const box = h("section", h("p.muted", "Loading the rankings..."));
  main.append(box);
  let list;
  try {
    list = await boards();
  } catch (e) {
    fill(box, errorBox(e, "Cannot load the leaderboards"));
    return;
  }
  const jobs = [];
  for (const b of list)
    for (const g of b.gpus)
      jobs.push(api("/api/v1/leaderboards/" + encodeURIComponent(b.name) + "/rankings?gpu=" + encodeURIComponent(g),
                    {signal}).then(r => ({b, g, r})).catch(e => ({b, g, e})));
  const got = await Promise.all(jobs);
  if (signal.aborted) return;
  const rows = [];
  for (const {b, g, r} of got) {
    if (!r) continue;
    const x = r.rankings.find(row => row.user === name);
    if (x) rows.push([h("a", {href: "#/board/" + encodeURIComponent(b.name) + "/rankings/" + encodeURIComponent(g)}, b.title),
                      h("span.chip", g), {v: String(x.rank) + (x.tied ? "=" : "") + " of " + r.rankings.length, cls: "num"},
                      {v: fmtNs(x.score_ns), cls: "num"}, x.lang ? langBadge(x.lang) : "", timeEl(x.submitted_at),
                      h("a", {href: "#/submission/" + x.submission_id}, "#" + x.submission_id)]);
  }
  const failed = got.filter(x => x.e && x.e.name !== "AbortError").length;
  fill(box,
    rows.length ? table(["board", "GPU", {text: "rank", cls: "num"}, {text: "score", cls: "num"}, "lang", "submitted", "id"], rows)
      : h("p.muted", name + " has no ranked entry on any board."),
    failed ? h("p.error", failed + " ranking" + (failed === 1 ? "" : "s") + " could not be loaded.") : null);
}
