// markdown.js - a board's statement (its description.md) as a page: Markdown
// through marked, math through KaTeX, code blocks through highlight.js.
//
// Math is taken out before marked sees the text (so that "_" and "\" inside
// it stay as written): $$...$$ (display, may span lines) and $...$ (inline:
// no space after the opening $ or before the closing one, no digit after
// it), never inside code blocks or `code spans`. Each becomes a placeholder
// that is replaced with KaTeX's HTML afterwards, or with the TeX source as
// code when KaTeX is missing. Without marked the statement is shown as its
// plain Markdown text.
//
// The description comes from a board folder, and is treated as untrusted
// text like everything else the page shows: raw HTML in it is rendered as
// text (a <meta http-equiv=refresh> would send the tab away; the page's
// Content-Security-Policy only stops scripts), and a link or image whose
// scheme is not http(s) or mailto (javascript:, data:, vbscript:, ...)
// keeps its text but loses its target; relative ones stay. safeTree()
// then checks the finished element once more, whatever marked made of it.

import {h} from "./dom.js";
import {highlightLines} from "./code.js";

const MARK = "KJMATH";

export function extractMath(md) {
  const math = [];
  const out = [];
  let fenced = false;
  const lines = md.split("\n");
  let display = null; // lines of an open $$ block
  for (const line of lines) {
    if (display === null && /^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      out.push(line);
      continue;
    }
    if (fenced) { out.push(line); continue; }
    if (display !== null) {
      const end = line.indexOf("$$");
      if (end < 0) { display.push(line); continue; }
      display.push(line.slice(0, end));
      math.push({tex: display.join("\n"), display: true});
      display = null;
      out.push(MARK + (math.length - 1) + "X" + inline(line.slice(end + 2), math));
      continue;
    }
    const open = findOutsideCode(line, "$$");
    if (open >= 0 && line.indexOf("$$", open + 2) < 0) {
      display = [line.slice(open + 2)];
      out.push(inline(line.slice(0, open), math));
      continue;
    }
    out.push(inline(line, math));
  }
  if (display !== null) out.push("$$" + display.join("\n")); // unclosed: left as text
  return {text: out.join("\n"), math};
}

// Index of s in line outside `code spans`, or -1.
function findOutsideCode(line, s) {
  let inCode = false;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === "`") inCode = !inCode;
    else if (!inCode && line.startsWith(s, i)) return i;
  }
  return -1;
}

// Replace $$..$$ and $..$ on one line (outside code spans) with placeholders.
function inline(line, math) {
  let out = "", i = 0, inCode = false;
  while (i < line.length) {
    const c = line[i];
    if (c === "`") { inCode = !inCode; out += c; i++; continue; }
    if (inCode || c !== "$" || (i > 0 && line[i - 1] === "\\")) { out += c; i++; continue; }
    if (line.startsWith("$$", i)) {
      const end = line.indexOf("$$", i + 2);
      if (end > i + 2) {
        math.push({tex: line.slice(i + 2, end), display: true});
        out += MARK + (math.length - 1) + "X";
        i = end + 2;
        continue;
      }
    } else if (i + 1 < line.length && line[i + 1] !== " ") {
      let end = i + 1;
      while ((end = line.indexOf("$", end)) > 0 && (line[end - 1] === " " || line[end - 1] === "\\")) end++;
      if (end > i + 1 && !/[0-9]/.test(line[end + 1] || "")) {
        math.push({tex: line.slice(i + 1, end), display: false});
        out += MARK + (math.length - 1) + "X";
        i = end + 1;
        continue;
      }
    }
    out += c;
    i++;
  }
  return out;
}

const esc = s => s.replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));

// Is url (an href or src as written) safe to follow: relative, or http(s) or
// mailto? Resolved the way the browser will (it drops tabs, newlines and
// leading control characters before reading a scheme).
export function safeUrl(url) {
  if (typeof url !== "string") return false;
  try {
    return ["http:", "https:", "mailto:"].includes(new URL(url, document.baseURI).protocol);
  } catch (e) {
    return false;
  }
}

// marked's renderer with raw HTML as text and unsafe links and images
// dropped (their text stays). marked 4 calls html(text) for block and inline
// HTML alike; later versions pass a token with .text.
function safeRenderer(marked) {
  if (!marked.Renderer) return undefined;
  const r = new marked.Renderer();
  const link = r.link.bind(r), image = r.image.bind(r);
  r.html = x => esc(typeof x === "string" ? x : (x && (x.raw || x.text)) || "");
  r.link = (href, title, text) => {
    if (href && typeof href === "object") return safeUrl(href.href) ? link(href) : esc(href.text || "");
    return safeUrl(href) ? link(href, title, text) : '<span class="dropped-link">' + text + "</span>";
  };
  r.image = (href, title, text) => {
    if (href && typeof href === "object") return safeUrl(href.href) ? image(href) : esc(href.text || "");
    return safeUrl(href) ? image(href, title, text) : text || ""; // marked escaped the alt text
  };
  return r;
}

// Elements a statement never needs; any that got through are removed.
const UNSAFE = "script, style, meta, link, base, iframe, frame, frameset, object, embed, form, input, " +
               "button, textarea, select, template, svg foreignObject";

// Check the rendered statement: no unsafe element, no on* attribute, no
// href/src/action with a scheme other than http(s)/mailto. KaTeX's output
// (spans with classes and styles) passes unchanged.
function safeTree(el) {
  for (const bad of el.querySelectorAll(UNSAFE)) bad.remove();
  for (const e of el.querySelectorAll("*")) {
    for (const a of [...e.attributes]) {
      const n = a.name.toLowerCase();
      if (n.startsWith("on") || n === "srcset" || n === "formaction" ||
          ((n === "href" || n === "src" || n === "action" || n === "xlink:href") && !safeUrl(a.value)))
        e.removeAttribute(a.name);
    }
  }
  return el;
}

// Render md into a new element. libs: {marked, katex, hljs}, each may be null.
export function renderMarkdown(md, libs) {
  const {marked, katex, hljs} = libs;
  const parse = marked && (marked.parse || (typeof marked === "function" ? marked : null));
  if (!parse) return h("pre.plain-md", md);
  const {text, math} = extractMath(md);
  let html = parse.call(marked, text, {headerIds: false, mangle: false, renderer: safeRenderer(marked)});
  html = html.replace(new RegExp(MARK + "(\\d+)X", "g"), (all, n) => {
    const m = math[+n];
    if (!m) return all;
    if (katex) {
      try {
        return katex.renderToString(m.tex, {displayMode: m.display, throwOnError: false});
      } catch (e) { /* shown as source below */ }
    }
    return '<code class="math">' + esc(m.display ? "$$" + m.tex + "$$" : "$" + m.tex + "$") + "</code>";
  });
  // Parsed in an inert document first: nothing in it loads or runs until it is checked.
  const el = h("div.md");
  const doc = document.implementation.createHTMLDocument("");
  const body = doc.body;
  body.innerHTML = html;
  safeTree(body);
  el.append(...[...body.childNodes].map(n => document.adoptNode(n)));
  if (hljs) {
    for (const code of el.querySelectorAll("pre > code")) {
      const lang = /language-(cuda|cpp|c\+\+|c)\b/.test(code.className) ? "cpp"
        : /language-(sh|bash|shell)\b/.test(code.className) ? "bash" : null;
      if (!lang) continue;
      const lines = highlightLines(hljs, code.textContent, lang);
      if (lines) {
        code.innerHTML = lines.join("\n");
        code.classList.add("hljs");
      }
    }
  }
  return el;
}
