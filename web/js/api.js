// api.js - the JSON API (docs/protocol.md) and the signed-in account.
//
// The token lives only in this tab's sessionStorage: it goes out in the
// Authorization header and nowhere else (not in a URL, not in a cookie,
// not in localStorage). A 401 for a token we sent signs the tab out.
// events() reads a submission's Server-Sent Events stream with fetch and
// a ReadableStream, because EventSource cannot send the header.

const KEY = "kjudge-token";
const LAST = "kjudge-last-board";

// The board (and GPU type) this tab last showed, for the submit form's
// first choice: {board, gpu}, each possibly undefined.
export function lastBoard() {
  try { return JSON.parse(sessionStorage.getItem(LAST)) || {}; } catch (e) { return {}; }
}

export function setLastBoard(board, gpu) {
  sessionStorage.setItem(LAST, JSON.stringify({board, gpu}));
}

export function token() {
  return sessionStorage.getItem(KEY) || "";
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
  me.value = undefined;
  window.dispatchEvent(new Event("kjudge-account"));
}

export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

// fetch path; returns the parsed JSON (or text) of a 2xx, throws ApiError otherwise.
// opts: method, json (a body to send as JSON), body (FormData), signal, noAuth,
// blob (return a 2xx body as a Blob: a binary download such as an artifact).
export async function api(path, opts = {}) {
  const headers = {Accept: "application/json"};
  const tok = opts.noAuth ? "" : token();
  let body = opts.body;
  if (tok) headers.Authorization = "Bearer " + tok;
  if (opts.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.json);
  }
  let r;
  try {
    r = await fetch(path, {method: opts.method || "GET", headers, body, signal: opts.signal,
                           credentials: "omit"});
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, "network", "cannot reach the server (" + e.message + ")");
  }
  const ct = r.headers.get("Content-Type") || "";
  if (opts.blob && r.ok) return await r.blob();
  const data = ct.startsWith("application/json") ? await r.json().catch(() => null) : await r.text();
  if (!r.ok) {
    const err = data && data.error ? data.error : {};
    if (r.status === 401 && tok && tok === token()) setToken("");
    throw new ApiError(r.status, err.code || "http_" + r.status, err.message || "HTTP " + r.status,
                       r.headers.get("Retry-After"));
  }
  return data;
}

// The account of the token: {name, role}, or null when signed out.
export const me = {value: undefined};

export async function whoami() {
  if (!token()) return null;
  if (me.value !== undefined) return me.value;
  try {
    me.value = await api("/api/v1/me");
  } catch (e) {
    if (e.status === 401 || e.status === 403) me.value = null;
    else throw e;
  }
  return me.value;
}

const boardCache = new Map();

// The board list and one board's detail change only on a reload: kept for the tab's life.
export async function boards() {
  if (!boardCache.has("")) boardCache.set("", api("/api/v1/leaderboards").then(d => d.leaderboards));
  try {
    return await boardCache.get("");
  } catch (e) {
    boardCache.delete("");
    throw e;
  }
}

export async function board(name) {
  if (!boardCache.has(name))
    boardCache.set(name, api("/api/v1/leaderboards/" + encodeURIComponent(name)));
  try {
    return await boardCache.get(name);
  } catch (e) {
    boardCache.delete(name);
    throw e;
  }
}

// Follow submission id's events: onEvent({id, event, data}) for each, replayed
// from the start, until the stream ends after the verdict (resolves), the
// signal aborts, or the server refuses (throws ApiError). A dropped connection
// is resumed with Last-Event-ID a few times.
export async function events(id, onEvent, signal) {
  let last = null, tries = 0;
  for (;;) {
    const headers = {Authorization: "Bearer " + token(), Accept: "text/event-stream"};
    if (last !== null) headers["Last-Event-ID"] = String(last);
    let r;
    try {
      r = await fetch("/api/v1/submissions/" + id + "/events?stream=1",
                      {headers, signal, credentials: "omit", cache: "no-store"});
    } catch (e) {
      if (e.name === "AbortError" || ++tries > 5) throw e;
      await sleep(1000 * tries, signal);
      continue;
    }
    if (!r.ok) {
      const d = await r.json().catch(() => ({}));
      throw new ApiError(r.status, d.error ? d.error.code : "http_" + r.status,
                         d.error ? d.error.message : "HTTP " + r.status, r.headers.get("Retry-After"));
    }
    let final = false, got = false;
    try {
      final = await readFrames(r.body.getReader(), ev => {
        if (ev.id !== null) last = ev.id;
        got = true;
        onEvent(ev);
      });
    } catch (e) {
      if (e.name === "AbortError") throw e;
    }
    if (final) return;
    if (got) tries = 0; // a stream that ran its time out (event: timeout) is renewed
    if (++tries > 5) throw new ApiError(0, "stream", "the event stream keeps breaking off");
    await sleep(1000, signal);
  }
}

// Parse "id:/event:/data:" frames separated by a blank line. Returns true
// when a verdict or error frame was seen (the server ends the stream there).
async function readFrames(reader, cb) {
  const dec = new TextDecoder();
  let buf = "", final = false;
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return final;
    buf += dec.decode(value, {stream: true}).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const ev = {id: null, event: "message", data: null};
      let data = "";
      for (const line of frame.split("\n")) {
        if (line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const k = i < 0 ? line : line.slice(0, i);
        const v = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (k === "id") ev.id = parseInt(v, 10);
        else if (k === "event") ev.event = v;
        else if (k === "data") data += (data ? "\n" : "") + v;
      }
      if (!data && ev.id === null && ev.event === "message") continue;
      try { ev.data = data ? JSON.parse(data) : null; } catch (e) { ev.data = data; }
      if (ev.event === "verdict" || ev.event === "error") final = true;
      cb(ev);
    }
  }
}

export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener("abort", () => { clearTimeout(t); reject(new DOMException("aborted", "AbortError")); }, {once: true});
  });
}
