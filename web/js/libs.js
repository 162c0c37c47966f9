// libs.js - loads the optional libraries from Debian's packages, served by
// kjudge-server under /static/vendor/ (server/web.c lists the files).
//
// lib(name) resolves to the library's global object, or to null when it is
// missing (package not installed, file refused, script error): every caller
// has a plain fallback (text without highlighting, a table instead of a
// chart, the Markdown source, a textarea instead of the editor).

const BASE = "/static/vendor/";

const LIBS = {
  hljs: {scripts: ["highlight.js/highlight.min.js"], css: ["highlight.js/styles/github.css"], global: "hljs"},
  chart: {scripts: ["chart.js/chart.min.js"], global: "Chart"},
  marked: {scripts: ["marked/marked.min.js"], global: "marked"},
  katex: {scripts: ["katex/katex.min.js"], css: ["katex/katex.min.css"], global: "katex"},
  codemirror: {scripts: ["codemirror/lib/codemirror.js", "codemirror/mode/clike/clike.js",
                         "codemirror/mode/python/python.js", "codemirror/addon/edit/matchbrackets.js"],
               css: ["codemirror/lib/codemirror.css"], global: "CodeMirror"},
};

const loading = new Map();

export function lib(name) {
  if (!loading.has(name)) loading.set(name, load(LIBS[name]));
  return loading.get(name);
}

async function load(spec) {
  for (const c of spec.css || []) {
    const l = document.createElement("link");
    l.rel = "stylesheet";
    l.href = BASE + c;
    document.head.appendChild(l);
  }
  for (const s of spec.scripts) {
    if (!(await script(BASE + s))) return null;
  }
  return window[spec.global] || null;
}

function script(src) {
  return new Promise(resolve => {
    const e = document.createElement("script");
    e.src = src;
    e.onload = () => resolve(true);
    e.onerror = () => resolve(false);
    document.head.appendChild(e);
  });
}
