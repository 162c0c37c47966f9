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

export function profileSection(s, p, owner) {
  const rows = [];
  for (const sh of p.shapes || []) {
    for (const l of sh.launches || []) {
      const r = l.roofline || {};
      rows.push([h("code", sh.shape || "#" + sh.benchmark), h("code", l.kernel), {v: fmtNs(l.duration_ns), cls: "num"},
                 {v: pct(l.sm_throughput_pct), cls: "num"}, {v: pct(l.memory_throughput_pct), cls: "num"},
                 {v: typeof l.dram_bytes === "number" ? fmtBytes(l.dram_bytes) : "-", cls: "num"},
                 {v: num(l.achieved_gbs) + (typeof l.pct_of_board_bandwidth === "number" ? " (" + pct(l.pct_of_board_bandwidth) + ")" : ""),
                  cls: "num", title: "of the board's " + num(l.board_peak_gbs) + " GB/s"},
                 {v: pct(l.occupancy_achieved_pct) + " / " + pct(l.occupancy_theoretical_pct), cls: "num"},
                 {v: num(l.registers), cls: "num"},
                 {v: fmtBytes((l.shared_static_bytes || 0) + (l.shared_dynamic_bytes || 0)), cls: "num"},
                 {v: pct(l.l1_hit_pct) + " / " + pct(l.l2_hit_pct), cls: "num"},
                 r.bound ? r.bound + " (" + num(r.intensity_flop_per_byte, 2) + " FLOP/B)" : "-",
                 (l.stalls || []).map(x => x.reason + " " + num(x.cycles_per_issue, 2)).join(", ") || "-"]);
    }
  }
  const msg = h("div.msg");
  const dl = owner || s.source !== undefined
    ? h("p", h("button.button.light", {type: "button", onclick: () => download(s.id, msg)},
               "Download the Nsight Compute report"), " (opens in Nsight Compute or ncu --import)", msg)
    : null;
  return h("section", h("h2", "Profile (Nsight Compute)"),
    rows.length ? table(["shape", "kernel", {text: "time", cls: "num"}, {text: "SM", cls: "num"},
      {text: "memory", cls: "num"}, {text: "DRAM", cls: "num"}, {text: "GB/s (of peak)", cls: "num"},
      {text: "occupancy (achieved / theoretical)", cls: "num"}, {text: "registers", cls: "num"},
      {text: "shared", cls: "num"}, {text: "L1 / L2 hit", cls: "num"}, "roofline", "top stalls"], rows)
      : h("p.muted", "No launch was profiled."),
    p.note ? h("p.muted", p.note) : null, dl);
}

function where(f) {
  let w = f.file ? f.file + ":" + f.line : "";
  if (f.line2) w += " and " + (f.file2 || "") + ":" + f.line2;
  return w;
}

export function sanitizeSection(z) {
  const head = z.clean ? "clean: no findings"
    : z.errors + " finding" + (z.errors === 1 ? "" : "s") + (z.more ? " (" + z.shown + " listed)" : "");
  const groups = (z.groups || []).map(g => h("div",
    h("h3", g.kind + " \u00b7 " + g.count),
    table(["kernel", "where", "thread", "block", "address", {text: "size", cls: "num"}, {text: "hazards", cls: "num"}],
      (g.findings || []).map(f => [h("code", f.kernel || "?"), h("code", where(f)),
        f.thread ? "(" + f.thread.join(",") + ")" : "", f.block ? "(" + f.block.join(",") + ")" : "",
        f.address ? h("code", f.address) : "", {v: f.size === undefined ? "" : String(f.size), cls: "num"},
        {v: f.hazards === undefined ? "" : String(f.hazards), cls: "num"}]))));
  return h("section", h("h2", "Sanitizer (" + (z.tool || "memcheck") + "): " + head), groups,
    z.note ? h("p.muted", z.note) : null);
}
