/*
 * app.js — the page's front end (issue 30): the form into a request's
 * options, by their table names (the library's option table, vcw_options),
 * run by the library compiled to WebAssembly (vramcalc_web.c, vcw_run); the
 * CLI's table, JSON and SVG shown as the library renders them. No estimate,
 * default or message is computed here. The model stays in the page: it is
 * written into the module's in-memory file system, never sent anywhere;
 * the link's #fragment holds the options and the name of a shipped example.
 */
"use strict";

const $ = (id) => document.getElementById(id);
const PLOT_FILE = "/tmp/vramcalc-plot.svg"; /* --plot's file: in memory, read back as text */
let M = null;          /* the emscripten module */
let OPTIONS = {};      /* the option table by name: flag, type, choices, default */
let FLAGS = {};        /* by the CLI's long name */
let model = null;      /* {name, text, example} */
let last = null;       /* the latest answer: {cli, main, maxBatch, maxSeq, sweep, ms} */

/* ---- the library's calls ---- */
function call(fn, args) {
    const ptr = M.ccall(fn, "number", args.map((a) => (typeof a === "number" ? "number" : "string")), args);
    if (!ptr) return {ok: false, status: 2, error: "vramcalc: out of memory"};
    const text = M.UTF8ToString(ptr);
    M._free(ptr);
    return JSON.parse(text);
}

function runRequest(pairs) {
    /* in /models, the working directory: an example at its repository path, a file of
     * yours by its name, so that the table names it as the CLI run there does */
    let path = "";
    if (model) {
        path = model.example || model.name.replace(/^.*\//, "") || "model.json";
        if (path.includes("/")) M.FS.mkdirTree("/models/" + path.replace(/\/[^/]*$/, ""));
        M.FS.writeFile("/models/" + path, model.text);
    }
    return call("vcw_run", [JSON.stringify(pairs), path, 80]);
}

/* ---- the form into [name, value] pairs, in the CLI's order ---- */
function val(id) { return $(id).value.trim(); }

/* "More options": the CLI's words ("--flag value", "--flag=value", "-b 4") by
 * the option table; a flag takes no value. The messages are src/cli/main.c's. */
function unquote(w) { return w.replace(/^(["'])(.*)\1$/, "$2"); }
function parseExtra(text) {
    const pairs = [], words = text.match(/"[^"]*"|'[^']*'|\S+/g) || [];
    for (let i = 0; i < words.length; i++) {
        const word = unquote(words[i]);
        let w = word, v = null, o = null;
        const eq = w.indexOf("=");
        if (w.startsWith("--") && eq > 0) { v = w.slice(eq + 1); w = w.slice(0, eq); }
        if (w.startsWith("--")) o = FLAGS[w.slice(2)];
        else if (/^-[A-Za-z]$/.test(w)) o = Object.values(OPTIONS).find((x) => x.letter === w[1]);
        if (!o && /^-[A-Za-z]$/.test(w)) return {error: `vramcalc: unknown option '${w}' (see vramcalc --help)`};
        if (!o) {
            const near = M.ccall("vcw_suggest", "number", ["string"], [w]);
            return {error: near ? `vramcalc: unknown option '${word}'; did you mean '--${M.UTF8ToString(near)}'?`
                : `vramcalc: unknown option '${word}' (see vramcalc --help)`};
        }
        if (o.arg && v === null) {
            if (i + 1 >= words.length) return {error: `vramcalc: ${w} needs a value (see vramcalc --help)`};
            v = unquote(words[++i]);
        }
        pairs.push([o.name, o.arg ? v : null]);
    }
    return {pairs};
}

function formPairs() {
    const p = [], mode = val("mode");
    if (mode === "infer" || mode === "generate") p.push(["mode", mode]);
    if (mode === "serve") p.push(["serve", null]);
    if (mode === "qlora") p.push(["qlora", null]);
    if (mode === "lora" || (mode === "qlora" && val("lora"))) p.push(["lora", val("lora") || "8"]);
    const add = (name, id, modes) => {
        if (val(id) && (!modes || modes.includes(mode))) p.push([name, val(id)]);
    };
    add("precision", "precision");
    add("optim", "optim", ["train", "lora", "qlora"]);
    add("batch", "batch", ["train", "lora", "qlora", "infer", "generate"]);
    add("seq", "seq");
    add("prompt", "prompt", ["generate", "serve"]);
    add("new_tokens", "new_tokens", ["generate", "serve"]);
    add("gpu", "gpu");
    add("gpus", "gpus");
    add("parallel", "parallel");
    add("tp", "tp");
    const extra = parseExtra(val("extra"));
    return {pairs: p, extra: extra.pairs || [], error: extra.error};
}

/* The command line for the same request: the option table's flags. */
function quote(s) { return /^[\w@%+=:,./-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'"; }
function cliCommand(pairs) {
    const words = ["vramcalc"];
    if (model) words.push(quote(model.example || model.name));
    for (const [name, value] of pairs) {
        words.push("--" + OPTIONS[name].flag);
        if (value !== null) words.push(quote(value));
    }
    return words.join(" ");
}

/* ---- showing an answer ---- */
function tableLine(table, re) {
    const m = table && table.split("\n").find((l) => re.test(l));
    return m ? m.trim() : "";
}

function show(a) {
    const err = $("error"), main = a.main;
    err.hidden = main.ok;
    err.textContent = main.ok ? "" : main.error;
    $("cli").textContent = a.cli;
    $("table").textContent = main.ok ? main.table : "";
    $("json").textContent = main.ok ? main.json : "";
    const j = main.ok ? JSON.parse(main.json) : null;
    const mem = j && j.memory;
    $("summary").hidden = !mem;
    if (mem) {
        $("peak").textContent = tableLine(main.table, /^\s+peak allocated\s/).replace(/^peak allocated\s+(\S+ \S+).*$/, "$1");
        $("peak").dataset.bytes = mem.peak_allocated;
        $("total").textContent = tableLine(main.table, /^\s+total\s/).replace(/^total\s+(\S+ \S+).*$/, "$1");
        $("total").dataset.bytes = mem.total;
        const gpu = j.gpu;
        $("fitbar").hidden = !gpu;
        $("fitword").textContent = gpu ? (gpu.fits ? ": fits" : ": does not fit") : "";
        if (gpu) {
            const frac = Math.min(1, mem.total / gpu.capacity);
            $("fitfill").style.width = (100 * frac).toFixed(1) + "%";
            $("fitbar").classList.toggle("nofit", !gpu.fits);
            $("fitlabel").textContent = tableLine(main.table, new RegExp("^\\s+" + gpu.name + ": capacity"));
        }
    }
    const mb = a.maxBatch;
    $("maxbatch").textContent = mb ? (mb.ok ? tableLine(mb.table, /^\s+max (batch|seq)/) : mb.error) : "";
    $("maxbatch").dataset.batch = mb && mb.ok ? JSON.parse(mb.json).max_batch : "";
    $("maxseq").textContent = a.maxSeq ? tableLine(a.maxSeq.table, /^\s+max seq/) : "";
    $("maxseq").dataset.seq = a.maxSeq ? JSON.parse(a.maxSeq.json).max_seq : "";
    /* the library's SVG (src/api/svg.c escapes every text it writes, the model's name included) */
    $("plot").innerHTML = a.sweep && a.sweep.ok && a.sweep.svg ? a.sweep.svg : "";
    if (a.sweep && !a.sweep.ok) $("plot").textContent = a.sweep.error;
    $("timing").textContent = `answered in ${a.ms.toFixed(0)} ms`;
    $("timing").dataset.ms = a.ms.toFixed(1);
    document.body.dataset.state = "done";
}

/* ---- one answer: the estimate, the largest batch (and sequence) on the GPU, the sweep ---- */
function answer() {
    const t0 = performance.now(), f = formPairs(), mode = val("mode");
    const a = {cli: cliCommand(f.pairs) + (val("extra") ? " " + val("extra") : ""), main: null, maxBatch: null, maxSeq: null, sweep: null};
    f.pairs = f.pairs.concat(f.extra);
    a.main = f.error ? {ok: false, status: 2, error: f.error} : runRequest(f.pairs);
    const batchModes = ["train", "lora", "qlora", "infer", "generate"];
    if (a.main.ok && val("gpu") && batchModes.includes(mode) && JSON.parse(a.main.json).memory) {
        a.maxBatch = runRequest(f.pairs.concat([["max_batch", null]]));
        /* --max-seq: a config's sequence length; for a model file the library refuses it, and the page shows none */
        const ms = runRequest(f.pairs.concat([["max_seq", null]]));
        a.maxSeq = ms.ok ? ms : null;
    }
    if (a.main.ok && val("sweep") && batchModes.includes(mode)) {
        const sp = f.pairs.filter(([n]) => n !== "batch").concat([["sweep", val("sweep")], ["plot", PLOT_FILE]]);
        a.sweep = runRequest(sp);
    }
    a.ms = performance.now() - t0;
    last = a;
    show(a);
    saveFragment();
}

let timer = null;
function schedule() {
    document.body.dataset.state = "busy";
    clearTimeout(timer);
    timer = setTimeout(() => { if (M) answer(); }, 60);
}

/* ---- the link: options in the #fragment, the model only when it is a shipped example ---- */
const FIELDS = ["mode", "lora", "precision", "optim", "batch", "seq", "prompt", "new_tokens", "gpu", "gpus", "parallel",
    "tp", "sweep", "extra"];
function saveFragment() {
    const q = new URLSearchParams();
    if (model && model.example) q.set("example", model.example);
    for (const id of FIELDS) if (val(id) && !(id === "mode" && val(id) === "train")) q.set(id, val(id));
    history.replaceState(null, "", "#" + q.toString());
}
function loadFragment() {
    const q = new URLSearchParams(location.hash.slice(1));
    for (const id of FIELDS) $(id).value = q.get(id) || (id === "mode" ? "train" : ""); /* absent: the default */
    if (q.has("example")) pickExample(q.get("example"));
}

/* ---- models ---- */
function setModel(name, text, example) {
    model = {name, text, example};
    $("modelname").textContent = example || name + " (your file, kept in this page)";
    $("example").value = example || "";
    schedule();
}
function pickExample(name) {
    const e = (window.VC_EXAMPLES || []).find((x) => x.name === name);
    if (e) setModel(e.name, e.text, e.name);
}
function readFile(file) {
    const r = new FileReader();
    r.onload = () => setModel(file.name, r.result, "");
    r.readAsText(file);
}

/* ---- the form from the option table ---- */
function fillChoices(select, name) {
    const o = OPTIONS[name];
    select.add(new Option(`(default: ${o.default})`, ""));
    for (const c of (o.choices || "").split(",").map((s) => s.trim()).filter(Boolean)) select.add(new Option(c, c));
    select.title = o.help || "";
}

function modeChanged() {
    const mode = val("mode");
    for (const el of document.querySelectorAll("[data-modes]")) el.hidden = !el.dataset.modes.split(" ").includes(mode);
}

async function start() {
    M = await VramcalcModule();
    M.FS.mkdirTree("/models");
    M.FS.chdir("/models");
    $("version").textContent = M.UTF8ToString(M._vcw_version());
    for (const o of call("vcw_options", [])) {
        OPTIONS[o.name] = o;
        FLAGS[o.flag] = o;
    }
    for (const sel of document.querySelectorAll("select[data-option]")) fillChoices(sel, sel.dataset.option);
    const gpus = call("vcw_run", [JSON.stringify([["list_gpus", null]]), "", 80]);
    if (gpus.ok)
        for (const g of JSON.parse(gpus.json).gpus)
            $("gpu").add(new Option(`${g.name} (${(g.capacity / 2 ** 30).toFixed(0)} GiB)`, g.name));
    const groups = {};
    for (const e of window.VC_EXAMPLES || []) {
        const dir = e.name.replace(/\/[^/]*$/, "");
        if (!groups[dir]) {
            groups[dir] = document.createElement("optgroup");
            groups[dir].label = dir === "examples" ? "vramcalc models (examples/)" : `Hugging Face configs (${dir}/)`;
            $("example").add(groups[dir]);
        }
        groups[dir].appendChild(new Option(e.name.replace(/^.*\//, ""), e.name));
    }
    loadFragment();
    if (!model) pickExample("examples/resnet50.json");
    modeChanged();
    $("example").addEventListener("change", () => { if (val("example")) pickExample(val("example")); });
    $("file").addEventListener("change", () => { if ($("file").files[0]) readFile($("file").files[0]); });
    $("usepaste").addEventListener("click", () => setModel("pasted.json", $("paste").value, ""));
    const drop = $("drop");
    drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (e) => {
        e.preventDefault();
        drop.classList.remove("over");
        if (e.dataTransfer.files[0]) readFile(e.dataTransfer.files[0]);
    });
    $("mode").addEventListener("change", modeChanged);
    $("form").addEventListener("input", schedule);
    $("form").addEventListener("change", schedule);
    $("form").addEventListener("submit", (e) => e.preventDefault());
    window.addEventListener("hashchange", () => { loadFragment(); modeChanged(); schedule(); });
    const copy = (text, btn) => {
        const done = () => { const t = btn.textContent; btn.textContent = "Copied"; setTimeout(() => (btn.textContent = t), 1200); };
        const fallback = () => { /* no clipboard API (an older browser, a page not thought secure) */
            const t = document.createElement("textarea");
            t.value = text;
            document.body.appendChild(t);
            t.select();
            if (document.execCommand("copy")) done();
            t.remove();
        };
        if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, fallback);
        else fallback();
    };
    $("copycli").addEventListener("click", () => copy(last ? last.cli : "", $("copycli")));
    $("copylink").addEventListener("click", () => copy(location.href, $("copylink")));
    schedule();
}

/* for the browser test (tests/web_page.sh): the last answer */
window.vramcalcPage = {last: () => last, run: answer};
start().catch((e) => { $("error").hidden = false; $("error").textContent = "vramcalc: " + e; });
