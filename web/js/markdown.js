// markdown.js - a board's statement (its description.md) as a page: Markdown
// through marked, math through KaTeX, code blocks through highlight.js.
//
// Math is taken out before marked sees the text (so that "_" and "\" inside
// it stay as written): $$...$$ (display, may span lines) and $...$ (inline:
// no space after the opening $ or before the closing one, no digit after
// it), never inside code blocks or `code spans`. Each becomes a placeholder
// that is replaced with KaTeX's HTML afterwards, or with the TeX source as
// code when KaTeX is missing. Without marked the statement is shown as its
// plain Markdown text. The description comes from the operator's board
// folder; the page's Content-Security-Policy keeps any script in it from
// running.

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

// Render md into a new element. libs: {marked, katex, hljs}, each may be null.
export function renderMarkdown(md, libs) {
  const {marked, katex, hljs} = libs;
  const parse = marked && (marked.parse || (typeof marked === "function" ? marked : null));
  if (!parse) return h("pre.plain-md", md);
  const {text, math} = extractMath(md);
  let html = parse.call(marked, text, {headerIds: false, mangle: false});
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
  const el = h("div.md");
  el.innerHTML = html;
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
