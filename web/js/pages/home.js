// pages/home.js - #/: every board as a tile (title, deadline countdown, GPU
// types, how many are ranked, the top three per GPU type, each name leading to
// that user's ranked entries) and the GPU queues.

import {api, boards, whoami} from "../api.js";
import {deadlineEl, errorBox, fmtNs, h} from "../dom.js";

export async function homePage({main, signal}) {
  const u = await whoami().catch(() => null);
  main.append(h("h1", "Leaderboards"),
              h("p.lead", "Write one CUDA kernel file, submit it, and see it checked against the reference " +
                "and timed on real GPUs. ", u ? null : h("span", h("a", {href: "#/signin"}, "Sign in"),
                " with your token or an invite code to submit.")));
  const queues = h("div.queues");
  const grid = h("div.tiles");
  main.append(queues, grid);
  let list;
  try {
    list = await boards();
  } catch (e) {
    main.append(errorBox(e, "Cannot load the leaderboards"));
    return;
  }
  if (!list.length) grid.append(h("p.muted", "No leaderboards are loaded."));
  const pending = [];
  for (const b of list) {
    const per = h("ul.gpus");
    const tile = h("article.tile",
      h("h2", h("a", {href: "#/board/" + encodeURIComponent(b.name)}, b.title)),
      h("p.meta", h("code", b.name), " \u00b7 ", deadlineEl(b.deadline)),
      h("p.meta", b.num_tests + " tests, " + b.num_benchmarks + " timed shapes"),
      per,
      h("p.actions", h("a.button", {href: "#/board/" + encodeURIComponent(b.name)}, "Problem"), " ",
        h("a.button.light", {href: "#/board/" + encodeURIComponent(b.name) + "/rankings"}, "Rankings"), " ",
        h("a.button.light", {href: "#/submit?board=" + encodeURIComponent(b.name)}, "Submit")));
    grid.append(tile);
    for (const g of b.gpus) {
      const li = h("li", h("span.chip", g), " ", h("span.muted", "..."));
      per.append(li);
      pending.push(api("/api/v1/leaderboards/" + encodeURIComponent(b.name) + "/rankings?gpu=" +
                       encodeURIComponent(g), {signal}).then(r => {
        const n = r.rankings.length;
        const mine = u && r.rankings.find(x => x.user === u.name);
        const link = x => h("a", {href: "#/user/" + encodeURIComponent(x.user)}, x.user);
        const top = r.rankings.slice(0, 3).map((x, i) => h("li", {value: x.rank}, i ? link(x) : h("strong", link(x)), " ",
          h("a", {href: "#/submission/" + x.submission_id}, fmtNs(x.score_ns))));
        li.lastChild.replaceWith(n === 0 ? h("span.muted", "no ranked submission yet")
          : h("span", n + " ranked", mine ? h("span.you", " \u00b7 you: #" + mine.rank) : null, h("ol.top3", top)));
      }).catch(e => {
        if (e.name !== "AbortError") li.lastChild.replaceWith(h("span.error", e.message));
      }));
    }
  }
  api("/api/v1/gpus", {signal}).then(d => {
    for (const g of d.gpus) {
      const active = g.runners.filter(r => r.state !== "silent").length;
      queues.append(h("span.queue", h("span.chip", g.gpu), " ",
                      active + " runner" + (active === 1 ? "" : "s") + " up \u00b7 " + g.queued + " queued \u00b7 " +
                      g.running + " running",
                      // No runner serves it: its jobs wait (the note says since when).
                      g.note ? h("span.error", {title: g.note}, " \u00b7 no runner serves it") : null));
    }
  }).catch(() => {});
  await Promise.all(pending);
}
