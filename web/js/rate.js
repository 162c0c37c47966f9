// rate.js - throughput beside a time. A board's "bytes" and "flops"
// expressions (leaderboard.json: integer arithmetic over the shape's
// variables, as common/expr.h evaluates them) give what a shape moves and
// computes; over a median that is GB/s and TFLOP/s. A timed shape's
// floor_ns (the least time those bytes take at the GPU's bandwidth, from the
// result) over its median is the share of the bound reached.

// Evaluate an integer expression (+ - * / % and parentheses) over vars;
// null for anything it cannot read (a name it does not know, bad syntax).
export function evalExpr(text, vars) {
  if (typeof text !== "string" || !text) return null;
  const toks = text.match(/\s*(\d+|[A-Za-z_]\w*|[-+*/%()])/g);
  if (!toks || toks.join("").replace(/\s/g, "") !== text.replace(/\s/g, "")) return null;
  const t = toks.map(x => x.trim());
  let i = 0;
  const atom = () => {
    const x = t[i++];
    if (x === undefined) throw new Error("end");
    if (x === "(") { const v = sum(); if (t[i++] !== ")") throw new Error(")"); return v; }
    if (x === "-") return -atom();
    if (x === "+") return atom();
    if (/^\d+$/.test(x)) return Number(x);
    if (/^[A-Za-z_]/.test(x) && typeof vars[x] === "number") return vars[x];
    throw new Error(x);
  };
  const prod = () => {
    let v = atom();
    while (t[i] === "*" || t[i] === "/" || t[i] === "%") {
      const op = t[i++], w = atom();
      if ((op === "/" || op === "%") && w === 0) throw new Error("0");
      v = op === "*" ? v * w : op === "/" ? Math.trunc(v / w) : v % w;
    }
    return v;
  };
  const sum = () => {
    let v = prod();
    while (t[i] === "+" || t[i] === "-") v = t[i++] === "+" ? v + prod() : v - prod();
    return v;
  };
  try {
    const v = sum();
    return i === t.length && isFinite(v) ? v : null;
  } catch (e) {
    return null;
  }
}

// {gbs, tflops, pct} for board b, shape (its variables), median ns and floor
// ns; each null when it cannot be known.
export function rate(b, shape, ns, floorNs) {
  const r = {gbs: null, tflops: null, pct: null};
  if (!b || !shape || typeof ns !== "number" || !(ns > 0)) return r;
  const bytes = evalExpr(b.bytes, shape), flops = evalExpr(b.flops, shape);
  if (bytes !== null && bytes > 0) r.gbs = bytes / ns;            // bytes per ns = GB/s
  if (flops !== null && flops > 0) r.tflops = flops / ns / 1000;  // FLOP per ns = GFLOP/s
  if (typeof floorNs === "number" && floorNs > 0) r.pct = 100 * floorNs / ns;
  return r;
}

const three = v => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

export function fmtGbs(v) {
  if (typeof v !== "number") return "-";
  return v >= 1000 ? three(v / 1000) + " TB/s" : three(v) + " GB/s";
}

export function fmtTflops(v) {
  if (typeof v !== "number") return "-";
  return v >= 1 ? three(v) + " TFLOP/s" : three(v * 1000) + " GFLOP/s";
}

export function fmtPct(v) {
  return typeof v === "number" ? three(v) + " %" : "-";
}

// One short text for a cell: "3.21 TB/s" (and ", 12.0 TFLOP/s" on a board
// that counts FLOPs), then " · 71 % of bound" when the floor is known.
export function rateText(r) {
  const parts = [];
  if (r.gbs !== null) parts.push(fmtGbs(r.gbs));
  if (r.tflops !== null) parts.push(fmtTflops(r.tflops));
  if (r.pct !== null) parts.push(fmtPct(r.pct) + " of bound");
  return parts.join(" \u00b7 ");
}
