// pages/tool.js - profile and sanitize results on a submission's page
// (docs/profile.md): Nsight Compute's summary per benchmark shape and
// launch with a download of the full report (for those who may read the
// source), and compute-sanitizer's findings grouped by kind.

import {api} from "../api.js";
import {errorBox, fill, fmtBytes, fmtNs, h, table} from "../dom.js";

const pct = v => (typeof v === "number" ? v.toFixed(1) + "%" : "-");
const num = (v, d = 0) => (typeof v === "number" ? v.toFixed(d) : "-");

async function download(id, msg) {
  try {
    const blob = await api("/api/v1/submissions/" + id + "/artifacts/profile.ncu-rep", {blob: true});
    const url = URL.createObjectURL(blob);
    const a = h("a", {href: url, download: "submission-" + id + ".ncu-rep"});
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  } catch (e) {
    fill(msg, errorBox(e, "Cannot download the report"));
  }
}

// The first view per launch: time, DRAM throughput and its share of the
// board's bound, occupancy and the top stall; every other counter under
// "All counters". The report's download is offered only when the job stored
// one (the detail's artifacts) and the viewer may read the source.
export function profileSection(s, p, owner, d, b) {
  const rows = [], all = [];
  for (const sh of p.shapes || []) {
    for (const l of sh.launches || []) {
      const r = l.roofline || {};
      const shape = h("code.nowrap", sh.shape || "#" + sh.benchmark);
      const top = (l.stalls || [])[0];
      rows.push([shape, h("code", l.kernel), {v: fmtNs(l.duration_ns), cls: "num"},
                 {v: typeof l.achieved_gbs === "number" ? num(l.achieved_gbs) + " GB/s" : "-", cls: "num"},
                 {v: pct(l.pct_of_board_bandwidth), cls: "num", title: "of the board's " + num(l.board_peak_gbs) + " GB/s"},
                 {v: pct(l.occupancy_achieved_pct), cls: "num"},
                 top ? top.reason + " (" + num(top.cycles_per_issue, 2) + ")" : "-"]);
      all.push([h("code.nowrap", sh.shape || "#" + sh.benchmark), h("code", l.kernel),
                {v: pct(l.sm_throughput_pct), cls: "num"}, {v: pct(l.memory_throughput_pct), cls: "num"},
                {v: typeof l.dram_bytes === "number" ? fmtBytes(l.dram_bytes) : "-", cls: "num"},
                {v: pct(l.occupancy_achieved_pct) + " / " + pct(l.occupancy_theoretical_pct), cls: "num"},
                {v: num(l.registers), cls: "num"},
                {v: fmtBytes((l.shared_static_bytes || 0) + (l.shared_dynamic_bytes || 0)), cls: "num"},
                {v: pct(l.l1_hit_pct) + " / " + pct(l.l2_hit_pct), cls: "num"},
                r.bound ? r.bound + " (" + num(r.intensity_flop_per_byte, 2) + " FLOP/B)" : "-",
                (l.stalls || []).map(x => x.reason + " " + num(x.cycles_per_issue, 2)).join(", ") || "-"]);
    }
  }
  const msg = h("div.msg");
  const report = d && (d.artifacts || []).find(a => a.name === "profile.ncu-rep");
  const dl = report && (owner || s.source !== undefined)
    ? h("p", h("button.button.light", {type: "button", onclick: () => download(s.id, msg)},
               "Download the Nsight Compute report (" + fmtBytes(report.bytes) + ")"),
        " opens in Nsight Compute or ncu --import", msg)
    : null;
  return h("section", h("h2", "Profile (Nsight Compute)"),
    rows.length ? [table(["shape", "kernel", {text: "time", cls: "num"}, {text: "DRAM", cls: "num"},
                          {text: "of bound", cls: "num"}, {text: "occupancy", cls: "num"}, "top stall (cycles/issue)"], rows,
                         {cls: "profile"}),
                   h("details", h("summary", "All counters"),
                     table(["shape", "kernel", {text: "SM", cls: "num"}, {text: "memory", cls: "num"},
                            {text: "DRAM bytes", cls: "num"}, {text: "occupancy (achieved / theoretical)", cls: "num"},
                            {text: "registers", cls: "num"}, {text: "shared", cls: "num"},
                            {text: "L1 / L2 hit", cls: "num"}, "roofline", "stalls (cycles/issue)"], all))]
      : h("p.muted", "No launch was profiled."),
    p.note ? h("p.muted", p.note) : null, dl);
}

// "k.cu:12", a button that shows that line of the source when go is given.
function where(f, go) {
  const at = (file, line) => {
    const t = (file || "") + ":" + line;
    return go && line > 0 ? h("button.linkish", {type: "button", title: "show line " + line + " of the source",
                                                 onclick: () => go(line)}, t) : t;
  };
  if (!f.file && !f.line) return "";
  return h("code", at(f.file, f.line), f.line2 ? [" and ", at(f.file2, f.line2)] : null);
}

// Findings that differ only in their thread, block or hazard count are one
// row, with how many they are (racecheck reports a hazard per thread pair).
function merge(findings) {
  const rows = new Map();
  for (const f of findings || []) {
    const key = [f.kernel, f.file, f.line, f.file2, f.line2, f.address, f.size, f.text].join("\u0000");
    const r = rows.get(key);
    const test = typeof f.test === "number" ? [f.test] : [];
    if (!r) rows.set(key, {f, n: 1, hazards: typeof f.hazards === "number" ? f.hazards : undefined,
                           tests: new Set(test)});
    else {
      r.n++;
      if (typeof f.hazards === "number") r.hazards = (r.hazards || 0) + f.hazards;
      test.forEach(t => r.tests.add(t));
    }
  }
  return [...rows.values()];
}

export function sanitizeSection(z, go) {
  const head = z.clean ? "clean: no findings"
    : z.errors + " finding" + (z.errors === 1 ? "" : "s") + (z.more ? " (" + z.shown + " listed)" : "");
  // A column no finding of the group fills (racecheck names no thread or address) is left out.
  const cols = [
    {head: {text: "test", title: "the test shape whose call the finding came from (numbered from 0, as in the Tests table)"},
     cell: r => [...r.tests].sort((a, b) => a - b).join(", "), has: r => r.tests.size > 0},
    {head: "kernel", cell: r => h("code", r.f.kernel || "?"), has: () => true},
    {head: "where", cell: r => where(r.f, go), has: () => true},
    {head: {text: "findings", cls: "num", title: "findings alike but for thread, block and hazard count"},
     cell: r => ({v: String(r.n), cls: "num"}), has: r => r.n > 1},
    {head: "thread", cell: r => (r.f.thread ? "(" + r.f.thread.join(",") + ")" + (r.n > 1 ? " \u2026" : "") : ""),
     has: r => !!r.f.thread},
    {head: "block", cell: r => (r.f.block ? "(" + r.f.block.join(",") + ")" + (r.n > 1 ? " \u2026" : "") : ""),
     has: r => !!r.f.block},
    {head: "address", cell: r => (r.f.address ? h("code", r.f.address) : ""), has: r => !!r.f.address},
    {head: {text: "size", cls: "num"}, cell: r => ({v: r.f.size === undefined ? "" : String(r.f.size), cls: "num"}),
     has: r => r.f.size !== undefined},
    {head: {text: "hazards", cls: "num"}, cell: r => ({v: r.hazards === undefined ? "" : String(r.hazards), cls: "num"}),
     has: r => r.hazards !== undefined},
  ];
  const groups = (z.groups || []).map(g => {
    const rows = merge(g.findings), use = cols.filter(c => rows.some(c.has));
    return h("div", h("h3", g.kind + " \u00b7 " + g.count),
             table(use.map(c => c.head), rows.map(r => use.map(c => c.cell(r)))));
  });
  return h("section", h("h2", "Sanitizer (" + (z.tool || "memcheck") + "): " + head), groups,
    z.clean || (z.groups || []).some(g => (g.findings || []).some(f => typeof f.test === "number")) ? null
      : h("p.muted", "compute-sanitizer watched every test shape; its log does not say which one a finding " +
          "came from (the Tests table lists their shapes and seeds)."),
    z.note ? h("p.muted", z.note) : null);
}
