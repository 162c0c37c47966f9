// dom.js - building elements and formatting numbers, times and shapes.
// Every page builds its DOM with h(); text goes in as text nodes, never as
// HTML, so user names, file names and messages cannot inject markup.

// h("a.cls", {href: "#/x"}, "text", child, [more]) -> element.
export function h(tag, attrs, ...kids) {
  const [name, ...classes] = tag.split(".");
  const e = document.createElement(name || "div");
  if (classes.length) e.className = classes.join(" ");
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    kids.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className += (e.className ? " " : "") + v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  append(e, kids);
  return e;
}

function append(e, kids) {
  for (const k of kids) {
    if (k === undefined || k === null || k === false) continue;
    if (Array.isArray(k)) append(e, k);
    else e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
}

// Replace the children of e.
export function fill(e, ...kids) {
  e.textContent = "";
  append(e, kids);
  return e;
}

// A table: heads are strings or {text, cls}; rows are arrays of cells
// (text, node, or {v, cls}); rowAttrs(i) may give a row its attributes.
export function table(heads, rows, opts = {}) {
  const t = h("table", {class: opts.cls});
  const thead = h("thead", h("tr", heads.map(x => typeof x === "object" && !(x instanceof Node)
    ? h("th", {class: x.cls, title: x.title}, x.text) : h("th", x))));
  const tbody = h("tbody");
  rows.forEach((r, i) => {
    const tr = h("tr", opts.rowAttrs ? opts.rowAttrs(i) : null);
    for (const c of r) {
      if (c !== null && typeof c === "object" && !(c instanceof Node) && !Array.isArray(c))
        tr.appendChild(h("td", {class: c.cls, title: c.title}, c.v));
      else tr.appendChild(h("td", c));
    }
    tbody.appendChild(tr);
  });
  t.append(thead, tbody);
  // Wide tables scroll sideways inside their box instead of widening the page.
  return h("div.scroll", t);
}

export function fmtNs(ns) {
  if (typeof ns !== "number" || !isFinite(ns)) return "-";
  if (ns >= 1e9) return (ns / 1e9).toFixed(3) + " s";
  if (ns >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
  if (ns >= 1e3) return (ns / 1e3).toFixed(3) + " \u00b5s";
  return ns.toFixed(ns < 10 ? 2 : 0) + " ns";
}

export function fmtBytes(n) {
  if (typeof n !== "number") return "-";
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
  return n + " B";
}

export function shapeLabel(shape) {
  if (!shape || typeof shape !== "object") return "-";
  return Object.keys(shape).map(k => k + "=" + shape[k]).join(" ");
}

const pad = n => String(n).padStart(2, "0");

// "2026-11-30 13:00" in the viewer's time zone; the element's title says UTC.
export function fmtTime(iso) {
  if (!iso) return "-";
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
         pad(d.getHours()) + ":" + pad(d.getMinutes());
}

export function timeEl(iso) {
  return h("time", {datetime: iso || "", title: iso ? iso.replace("T", " ").replace("Z", " UTC") : ""},
           fmtTime(iso));
}

// "3 d 04:05:06" for a duration in ms.
export function fmtSpan(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600), mm = Math.floor(s % 3600 / 60);
  return (d ? d + " d " : "") + pad(hh) + ":" + pad(mm) + ":" + pad(s % 60);
}

export function ago(iso) {
  const ms = Date.now() - new Date(iso).getTime();
  if (!isFinite(ms)) return "";
  if (ms < 60e3) return "just now";
  if (ms < 3600e3) return Math.floor(ms / 60e3) + " min ago";
  if (ms < 86400e3) return Math.floor(ms / 3600e3) + " h ago";
  return Math.floor(ms / 86400e3) + " d ago";
}

// Text of a deadline: "closes in 3 d 04:05:06", "closed 2 d ago", "no deadline".
export function deadlineText(iso) {
  if (!iso) return "no deadline";
  const ms = new Date(iso).getTime() - Date.now();
  return ms > 0 ? "closes in " + fmtSpan(ms) : "closed " + ago(iso);
}

// A deadline that counts down (main.js updates every [data-deadline] each second).
export function deadlineEl(iso) {
  return h("span.deadline", {dataset: {deadline: iso || ""}, title: iso || ""}, deadlineText(iso));
}

export const VERDICT_TEXT = {
  accepted: "accepted", wrong_answer: "wrong answer", compile_error: "compile error",
  runtime_error: "runtime error", time_limit: "time limit", rejected: "rejected",
  internal_error: "internal error", queued: "queued", running: "running",
};

// The verdict of a submission (or its status until it has one) as a badge.
export function verdictBadge(s) {
  const v = s.verdict || s.status || "unknown";
  const b = h("span.badge.v-" + v, VERDICT_TEXT[v] || v);
  const extra = [];
  if (s.disqualified) extra.push(h("span.badge.v-disq", "disqualified"));
  if (s.withdrawn) extra.push(h("span.badge.v-disq", "withdrawn"));
  return extra.length ? h("span", b, " ", extra) : b;
}

// A submission's language ("cuda", "python") as a small badge.
const LANG_TEXT = {cuda: "CUDA", python: "Python", ptx: "PTX"};
export function langBadge(lang) {
  return h("span.badge.lang.lang-" + (LANG_TEXT[lang] ? lang : "other"), {title: "submitted as " + (LANG_TEXT[lang] || lang)},
           LANG_TEXT[lang] || String(lang));
}

export function errorBox(e, what) {
  const msg = e && e.message ? e.message : String(e);
  return h("p.error", {role: "alert"}, (what ? what + ": " : "") + msg);
}

// Save text as a file through a blob URL (for files that need the token).
export function saveText(name, text) {
  const url = URL.createObjectURL(new Blob([text], {type: "text/plain"}));
  const a = h("a", {href: url, download: name});
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
