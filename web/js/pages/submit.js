// pages/submit.js - #/submit[?board=NAME]: pick a board, a GPU type, a
// language (CUDA C++, PTX, or Python in KernelBot's form on a board that
// takes it) and a mode, upload a file or write in the editor (CodeMirror when
// present, in C++ or Python mode; a textarea otherwise), and POST it as
// multipart (the same request as curl -F); on 202 the page moves to the
// submission's live page. The server tells the language by the file name
// (.py is Python), which the language picker keeps in step. The board is
// the link's (?board=), else the last board this tab showed (lastBoard in
// api.js), and the editor starts with that board's template, replaced when
// the board or language changes while it still holds an unedited template.
// Only the chosen mode's own fields show (the sanitizer's tool, the
// profiled shape).

import {api, boards, lastBoard, whoami} from "../api.js";
import {errorBox, fill, h} from "../dom.js";
import {lib} from "../libs.js";

// [value, label, file extension, CodeMirror mode, placeholder]
const LANGS = [
  ["cuda", "CUDA C++", ".cu", "text/x-c++src", "// your CUDA C++ kernel, with its //!kjudge launch line"],
  ["python", "Python", ".py", "text/x-python",
   "# #!POPCORN lines, then def custom_kernel(data: input_t) -> output_t (PyTorch, Triton, Helion)"],
  // PTX: C-like mode for its // comments, braces and numbers (CodeMirror has no PTX mode).
  ["ptx", "PTX", ".ptx", "text/x-csrc", "// //!kjudge lines, then .version, .target and the board's .entry"],
];
const langOf = v => LANGS.find(l => l[0] === v) || LANGS[0];

const MODES = [
  ["test", "test", "compile and check every test shape once"],
  ["benchmark", "benchmark", "check, then time every shape (not ranked)"],
  ["leaderboard", "leaderboard", "as benchmark, with secret seeds: ranked"],
  ["profile", "profile", "check, then profile the benchmark shapes with Nsight Compute (not ranked)"],
  ["sanitize", "sanitize", "check the tests under compute-sanitizer: races, bad accesses (not ranked)"],
];

export async function submitPage({main, query, signal}) {
  const u = await whoami();
  main.append(h("h1", "Submit a kernel"));
  if (!u) {
    main.append(h("p", h("a", {href: "#/signin"}, "Sign in"), " first: submitting needs your token."));
    return;
  }
  let list;
  try {
    list = await boards();
  } catch (e) {
    main.append(errorBox(e, "Cannot load the leaderboards"));
    return;
  }
  if (!list.length) { main.append(h("p.muted", "No leaderboards are loaded.")); return; }
  const want = query.get("board") || lastBoard().board;
  const boardSel = h("select", {name: "leaderboard", id: "f-board"}, list.map(b =>
    h("option", {value: b.name, selected: b.name === want}, b.title + " (" + b.name + ")")));
  const gpuSel = h("select", {name: "gpu", id: "f-gpu"});
  const wantGpu = query.get("gpu") || lastBoard().gpu;
  const modeBox = h("fieldset.modes", h("legend", "Mode"), MODES.map(([v, label, help], i) =>
    h("label.mode", h("input", {type: "radio", name: "mode", value: v, checked: i === 0}), " ", h("strong", label),
      h("span.muted", " \u2013 " + help))));
  const toolSel = h("select", {name: "tool", id: "f-tool"}, ["memcheck", "racecheck", "initcheck", "synccheck"].map(t =>
    h("option", {value: t}, t)));
  const shapeIn = h("input", {type: "number", id: "f-shape", min: 0, step: 1, size: 4, placeholder: "all"});
  const toolRow = h("div.row", h("label", "Sanitizer tool ", toolSel));
  const shapeRow = h("div.row", h("label", "Benchmark shape to profile ", shapeIn),
                     h("span.muted", "its index from 0; empty: every shape"));
  const showOptions = () => {
    const m = form.querySelector("input[name=mode]:checked").value;
    toolRow.hidden = m !== "sanitize";
    shapeRow.hidden = m !== "profile";
  };
  const langSel = h("select", {name: "lang", id: "f-lang"}, LANGS.map(([v, label]) => h("option", {value: v}, label)));
  const fileIn = h("input", {type: "file", id: "f-file", accept: ".cu,.cuh,.py,.ptx,.txt,text/plain"});
  const nameIn = h("input", {type: "text", id: "f-name", value: "kernel.cu", size: 24, maxlength: 128,
                             pattern: "[A-Za-z0-9_.\\-]+", title: "letters, digits, '_', '.', '-'"});
  const area = h("textarea", {id: "f-source", rows: 22, spellcheck: "false", autocomplete: "off",
                              placeholder: "// your CUDA C++ kernel, with its //!kjudge launch line"});
  const msg = h("div.msg", {role: "status"});
  const send = h("button.button", {type: "submit"}, "Submit");
  const tmpl = h("button.button.light", {type: "button"}, "Start from the template");
  const form = h("form.submit",
    h("div.row", h("label", "Board ", boardSel), h("label", "GPU ", gpuSel), h("label", "Language ", langSel)),
    modeBox, toolRow, shapeRow,
    h("div.row", h("label", "Upload a file ", fileIn), h("span.muted", "or write below"), tmpl),
    h("div.editor", area),
    h("div.row", h("label", "File name ", nameIn), send), msg);
  main.append(form);
  modeBox.addEventListener("change", showOptions);
  showOptions();

  let editor = null;
  const text = () => (editor ? editor.getValue() : area.value);
  const setText = t => (editor ? editor.setValue(t) : (area.value = t));
  // The language: the editor's mode, the placeholder and the file name's extension follow it.
  const setLang = v => {
    const [, , ext, mode, hint] = langOf(v);
    langSel.value = v;
    area.placeholder = hint;
    if (editor) editor.setOption("mode", mode);
    const stem = (nameIn.value || "kernel").replace(/\.(cu|cuh|py|ptx)$/, "");
    if (!nameIn.value.endsWith(ext)) nameIn.value = stem + ext;
  };
  const gpus = () => {
    const b = list.find(x => x.name === boardSel.value);
    fill(gpuSel, (b ? b.gpus : []).map(g => h("option", {value: g, selected: g === wantGpu}, g)));
    const py = !!(b && (b.langs || []).includes("python"));
    langSel.querySelector("option[value=python]").disabled = !py;
    if (!py && langSel.value === "python") setLang("cuda");
  };
  gpus();
  // The editor holds the board's template until someone edits it: a change of
  // board or language then loads the other template.
  let template = null;
  const loadTemplate = async () => {
    const ext = langOf(langSel.value)[2], board = boardSel.value;
    try {
      const t = await api("/api/v1/leaderboards/" + encodeURIComponent(board) + "/files/template" + ext, {signal});
      if (board !== boardSel.value || (text().trim() && text() !== template)) return;
      setText(t);
      template = t;
      nameIn.value = board + ext;
    } catch (e) {
      if (e.name !== "AbortError") fill(msg, errorBox(e, "No template"));
    }
  };
  const fresh = () => !text().trim() || text() === template;
  boardSel.addEventListener("change", () => { gpus(); if (fresh()) loadTemplate(); });
  langSel.addEventListener("change", () => { setLang(langSel.value); if (fresh()) loadTemplate(); });
  nameIn.addEventListener("change", () => {
    if (/\.py$/.test(nameIn.value) && !langSel.querySelector("option[value=python]").disabled) setLang("python");
    else if (/\.(cu|cuh)$/.test(nameIn.value)) setLang("cuda");
    else if (/\.ptx$/.test(nameIn.value)) setLang("ptx");
  });
  fileIn.addEventListener("change", async () => {
    const f = fileIn.files[0];
    if (!f) return;
    if (f.size > 1 << 20) { fill(msg, h("p.error", "That file is larger than 1 MiB.")); return; }
    setText(await f.text());
    template = null;
    nameIn.value = f.name.replace(/[^A-Za-z0-9_.\-]/g, "_") || "kernel.cu";
    setLang(/\.py$/.test(nameIn.value) ? "python" : /\.ptx$/.test(nameIn.value) ? "ptx" : "cuda");
    fill(msg);
  });
  tmpl.addEventListener("click", async () => {
    if (text().trim() && !confirm("Replace what is in the editor with the template?")) return;
    setText("");
    template = null;
    await loadTemplate();
  });
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    const src = text();
    if (!src.trim()) { fill(msg, h("p.error", "Upload a file or write the kernel first.")); return; }
    const fd = new FormData();
    fd.append("leaderboard", boardSel.value);
    fd.append("gpu", gpuSel.value);
    const mode = form.querySelector("input[name=mode]:checked").value;
    fd.append("mode", mode);
    if (mode === "sanitize") fd.append("tool", toolSel.value);
    if (mode === "profile" && shapeIn.value !== "") fd.append("shape", shapeIn.value);
    fd.append("file", new Blob([src], {type: "text/plain"}), nameIn.value || "kernel.cu");
    send.disabled = true;
    fill(msg, h("p.muted", "Sending..."));
    try {
      const r = await api("/api/v1/submissions", {method: "POST", body: fd});
      location.hash = "#/submission/" + r.id;
    } catch (e) {
      fill(msg, errorBox(e, e.status === 429 ? "Too many submissions" + (e.retryAfter ? " (try again in " + e.retryAfter + " s)" : "")
                                             : "Not submitted"));
    } finally {
      send.disabled = false;
    }
  });
  const CM = await lib("codemirror");
  if (CM && !signal.aborted) {
    editor = CM.fromTextArea(area, {mode: langOf(langSel.value)[3], lineNumbers: true, indentUnit: 4,
                                    matchBrackets: true, viewportMargin: 50});
  }
  if (!signal.aborted && !text().trim()) loadTemplate();
}
