// code.js - source code on a page: syntax highlighting (highlight.js when
// present) split into numbered lines, and a compile log whose "file(LINE)"
// references jump to that line of the source.

import {h} from "./dom.js";

// highlight.js's HTML for text, one string per line: spans that cross a
// line break are closed at its end and opened again on the next line.
// null when hljs is missing or fails.
export function highlightLines(hljs, text, lang = "cpp") {
  if (!hljs) return null;
  let html;
  try {
    const major = parseInt(String(hljs.versionString || "9").split(".")[0], 10);
    html = major >= 10 ? hljs.highlight(text, {language: lang, ignoreIllegals: true}).value
                       : hljs.highlight(lang, text, true).value;
  } catch (e) {
    return null;
  }
  const lines = [], open = [];
  let cur = "";
  const re = /<span class="([^"]*)">|<\/span>|[^<]+|</g;
  let m;
  while ((m = re.exec(html)) !== null) {
    const tok = m[0];
    if (m[1] !== undefined) {
      open.push(m[1]);
      cur += tok;
    } else if (tok === "</span>") {
      open.pop();
      cur += tok;
    } else {
      const parts = tok.split("\n");
      cur += parts[0];
      for (let i = 1; i < parts.length; i++) {
        lines.push(cur + "</span>".repeat(open.length));
        cur = open.map(c => '<span class="' + c + '">').join("") + parts[i];
      }
    }
  }
  lines.push(cur);
  return lines;
}

// A numbered, optionally highlighted view of text. Returns {el, goto(n)}.
export function sourceView(text, hljs, lang = "cpp") {
  const plain = text.replace(/\n$/, "").split("\n");
  const hl = highlightLines(hljs, text.replace(/\n$/, ""), lang);
  const rows = plain.map((line, i) => {
    const code = h("td.src");
    if (hl && hl.length === plain.length) code.innerHTML = hl[i] || "";
    else code.textContent = line;
    return h("tr", {dataset: {line: i + 1}}, h("td.ln", {"aria-hidden": "true"}, String(i + 1)), code);
  });
  const el = h("div.code" + (hl ? ".hljs" : ""), h("table", h("tbody", rows)));
  return {
    el,
    goto(n) {
      const row = rows[n - 1];
      if (!row) return;
      rows.forEach(r => r.classList.remove("hit"));
      row.classList.add("hit");
      row.scrollIntoView({block: "center", behavior: "smooth"});
    },
  };
}

// A compile log with numbered lines; "name.cu(12)" or "line 12" becomes a
// button that calls go(12).
export function logView(log, go) {
  const rows = log.replace(/\n$/, "").split("\n").map((line, i) => {
    const cell = h("td.src");
    const re = /([\w.\-]+\.cuh?\((\d+)\))|(\bline (\d+))/g;
    let at = 0, m;
    while (go && (m = re.exec(line)) !== null) {
      cell.append(line.slice(at, m.index));
      const n = parseInt(m[2] || m[4], 10);
      cell.append(h("button.linkish", {type: "button", title: "show line " + n + " of the source",
                                       onclick: () => go(n)}, m[0]));
      at = m.index + m[0].length;
    }
    cell.append(line.slice(at));
    if (/\berror\b/i.test(line)) cell.classList.add("err");
    return h("tr", h("td.ln", String(i + 1)), cell);
  });
  return h("div.code.log", h("table", h("tbody", rows)));
}
