// diff.js - a line diff of two sources (the shortest edit script, found by
// walking the edit graph diagonal by diagonal, one more edit per round) and
// its view as hunks with both line numbers.

import {h} from "./dom.js";

// Lines of b against a: [{op: " " | "-" | "+", text, a, b}] where a and b
// are 1-based line numbers in each text (null where the line is absent).
// null when more than maxEdits lines differ (the page then says so).
export function lineDiff(aText, bText, maxEdits = 2000) {
  const a = split(aText), b = split(bText);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre &&
         a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const A = a.slice(pre, a.length - suf), B = b.slice(pre, b.length - suf);
  const mid = middle(A, B, maxEdits);
  if (mid === null) return null;
  const out = [];
  for (let i = 0; i < pre; i++) out.push({op: " ", text: a[i], a: i + 1, b: i + 1});
  for (const e of mid) {
    out.push({op: e.op, text: e.op === "+" ? B[e.j] : A[e.i],
              a: e.op === "+" ? null : pre + e.i + 1, b: e.op === "-" ? null : pre + e.j + 1});
  }
  for (let k = 0; k < suf; k++) {
    const i = a.length - suf + k, j = b.length - suf + k;
    out.push({op: " ", text: a[i], a: i + 1, b: j + 1});
  }
  return out;
}

function split(t) {
  if (t === "") return [];
  return t.replace(/\n$/, "").split("\n");
}

// The edit script between A and B: [{op, i, j}] with i into A, j into B.
// For d = 0, 1, ... keep, per diagonal k = x - y, the furthest x reached
// with d edits; front[] is saved before each round to walk back from the end.
function middle(A, B, maxEdits) {
  const N = A.length, M = B.length, off = N + M + 1;
  const front = new Int32Array(2 * off + 1);
  const saved = [];
  let D = -1;
  front[off + 1] = 0;
  for (let d = 0; d <= N + M && D < 0; d++) {
    if (d > maxEdits) return null;
    saved.push(front.slice(off - d - 1, off + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = (k === -d || (k !== d && front[off + k - 1] < front[off + k + 1]))
        ? front[off + k + 1] : front[off + k - 1] + 1;
      let y = x - k;
      while (x < N && y < M && A[x] === B[y]) { x++; y++; }
      front[off + k] = x;
      if (x >= N && y >= M) { D = d; break; }
    }
  }
  const ops = [];
  let x = N, y = M;
  for (let d = D; d > 0; d--) {
    const prev = saved[d], at = k => prev[k + d + 1]; // front after round d - 1
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const pk = down ? k + 1 : k - 1;
    const px = at(pk), py = px - pk;
    while (x > px + (down ? 0 : 1) && y > py + (down ? 1 : 0)) {
      x--; y--;
      ops.push({op: " ", i: x, j: y});
    }
    if (down) { y--; ops.push({op: "+", i: x, j: y}); }
    else { x--; ops.push({op: "-", i: x, j: y}); }
  }
  while (x > 0 && y > 0) { x--; y--; ops.push({op: " ", i: x, j: y}); }
  return ops.reverse();
}

// Counts of a diff: {added, removed}.
export function diffCounts(ops) {
  let added = 0, removed = 0;
  for (const o of ops) {
    if (o.op === "+") added++;
    else if (o.op === "-") removed++;
  }
  return {added, removed};
}

// The diff as hunks with `context` unchanged lines around each change; the
// unchanged lines between hunks are folded into one "N unchanged lines" row.
export function diffView(ops, context = 3) {
  const keep = new Uint8Array(ops.length);
  ops.forEach((o, i) => {
    if (o.op === " ") return;
    for (let j = Math.max(0, i - context); j <= Math.min(ops.length - 1, i + context); j++) keep[j] = 1;
  });
  const rows = [];
  let skipped = 0;
  const fold = () => {
    if (skipped) rows.push(h("tr.fold", h("td.ln"), h("td.ln"), h("td.sign"),
                             h("td.src", "\u22ef " + skipped + " unchanged line" + (skipped > 1 ? "s" : ""))));
    skipped = 0;
  };
  ops.forEach((o, i) => {
    if (!keep[i]) { skipped++; return; }
    fold();
    const cls = o.op === "+" ? "add" : o.op === "-" ? "del" : "same";
    rows.push(h("tr." + cls, h("td.ln", o.a === null ? "" : String(o.a)),
                h("td.ln", o.b === null ? "" : String(o.b)), h("td.sign", o.op), h("td.src", o.text)));
  });
  fold();
  if (!ops.some(o => o.op !== " ")) return h("p.muted", "The two sources are identical.");
  return h("div.code.diff", h("table", h("tbody", rows)));
}
