// guide.js - #/guide/NAME: one of the guides in docs/ (participant, boards),
// fetched as Markdown from /static/docs/NAME.md (server/web.c serves those
// two files from the docs folder) and rendered like a board's statement
// (markdown.js), so the site and the repository show the same text. Without
// marked the guide is its plain Markdown.

import {errorBox, h} from "../dom.js";
import {lib} from "../libs.js";
import {renderMarkdown} from "../markdown.js";

export const GUIDES = {participant: "Taking part", boards: "Writing a leaderboard"};

export async function guidePage({main, params, signal}) {
  const [name] = params;
  if (!Object.prototype.hasOwnProperty.call(GUIDES, name)) {
    main.append(h("h1", "Not found"), h("p", "There is no guide named ", h("code", name), "."));
    return;
  }
  let md;
  try {
    const res = await fetch("/static/docs/" + name + ".md", {signal});
    if (!res.ok) throw new Error("HTTP " + res.status);
    md = await res.text();
  } catch (e) {
    if (e.name === "AbortError") throw e;
    main.append(h("h1", GUIDES[name]), errorBox(e, "Cannot load this guide"));
    return;
  }
  // The guides have no math: their "$VAR" stay text (KaTeX is not loaded).
  const [marked, hljs] = await Promise.all([lib("marked"), lib("hljs")]);
  if (signal.aborted) return;
  main.append(h("article.guide", {"data-guide": name}, renderMarkdown(md, {marked, katex: null, hljs})));
}
