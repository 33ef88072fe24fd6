/*
 * page_test.js — the page (web/) in a real browser against the native CLI
 * (issue 30), run by tests/web_page.sh (CTest web_page, label web):
 *   node web/test/page_test.js CLI PAGE_DIR NODE_CLI OUT_DIR [--docs]
 * Debian's Chromium driven headless by puppeteer-core (no browser download).
 * Checks, each against the native binary CLI run from the repository root:
 *  - every shipped example and config with the page's defaults, and a dozen
 *    option combinations: the page's JSON is the CLI's `-f json` for the
 *    command the page shows ("copy as CLI command"), its displayed peak the
 *    JSON's peak_allocated, its error line the CLI's stderr line;
 *  - --max-batch and --max-seq (the page's largest batch, sequence) equal the CLI's;
 *  - the sweep plot: the page's SVG text is the file the CLI's --plot writes,
 *    and the browser lays it out (a non-empty bounding box);
 *  - "copy as CLI command" and the share link (a fresh page, the same answer);
 *  - a config given by the file chooser, one dropped on the page, a pasted model
 *    JSON and a broken one (its error line the CLI's for a file of that name);
 *  - the CLI compiled to WebAssembly (NODE_CLI, under node) prints what the
 *    native one prints on figures above 4 GiB (32-bit size_t).
 * Logs the page's answer times (benchmark figures, not assertions) and saves
 * screenshots at 1280x800 and 390x844 in OUT_DIR (--docs: copies them to
 * docs/web-1280.png and docs/web-phone.png).
 */
"use strict";
const {spawnSync} = require("child_process");
const fs = require("fs");
const path = require("path");
const puppeteer = require("puppeteer-core");

const [CLI, PAGE_DIR, NODE_CLI, OUT] = process.argv.slice(2, 6);
const DOCS = process.argv.includes("--docs");
const ROOT = path.resolve(__dirname, "..", "..");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
let failures = 0, checks = 0;

function check(ok, what, detail) {
    checks++;
    if (!ok) {
        failures++;
        console.log(`FAIL: ${what}${detail ? "\n" + detail : ""}`);
    }
}

function cli(args, exe = CLI, cwd = ROOT) {
    const r = spawnSync(exe === NODE_CLI ? "node" : exe, exe === NODE_CLI ? [NODE_CLI, ...args] : args,
        {cwd, encoding: "utf8"});
    return {out: r.stdout, err: r.stderr, rc: r.status};
}

/* the page's "copy as CLI command" into argv (its quoting: '...' with '\'' inside) */
function words(cmd) {
    const out = [];
    for (const m of cmd.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)) out.push(m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : m[2]);
    return out.slice(1);
}

async function answer(page, fragment) {
    await page.evaluate(() => { document.body.dataset.state = "busy"; });
    await page.goto(`file://${PAGE_DIR}/index.html#${fragment}`);
    await page.evaluate(() => window.dispatchEvent(new HashChangeEvent("hashchange")));
    await page.waitForFunction(() => document.body.dataset.state === "done", {timeout: 60000});
    return page.evaluate(() => {
        const a = window.vramcalcPage.last(), $ = (id) => document.getElementById(id);
        return {cli: a.cli, main: a.main, maxBatch: a.maxBatch, maxSeq: a.maxSeq, sweep: a.sweep, ms: a.ms,
            peak: $("peak").dataset.bytes, peakText: $("peak").textContent, error: $("error").hidden ? "" : $("error").textContent,
            maxbatch: $("maxbatch").dataset.batch, maxseq: $("maxseq").dataset.seq, plotBox: (() => {
                const s = document.querySelector("#plot svg");
                if (!s) return null;
                const b = s.getBoundingClientRect();
                return {w: b.width, h: b.height, nodes: s.querySelectorAll("*").length};
            })()};
    });
}

/* The page's answer for one fragment against the CLI's for the command it shows. */
function compare(name, a) {
    const argv = words(a.cli);
    check(a.cli.startsWith("vramcalc "), `${name}: the page shows a CLI command`, a.cli);
    const c = cli([...argv, "-f", "json"]);
    if (c.rc === 2) {
        check(!a.main.ok && a.error === c.err.trim(), `${name}: the page's error line is the CLI's`,
            `page: ${a.error}\ncli:  ${c.err.trim()}`);
        return;
    }
    check(a.main.ok, `${name}: the page answers (${a.cli})`, a.error);
    if (!a.main.ok) return;
    check(a.main.json === c.out, `${name}: the page's JSON is the CLI's -f json (${a.cli})`);
    check(a.main.status === c.rc, `${name}: the page's fit status is the CLI's exit status`, `${a.main.status} vs ${c.rc}`);
    const j = JSON.parse(c.out);
    if (j.memory) check(a.peak === String(j.memory.peak_allocated), `${name}: displayed peak = CLI peak_allocated`,
        `${a.peak} vs ${j.memory.peak_allocated}`);
    const t = cli([...argv, "--no-color"]);
    check(a.main.table === t.out, `${name}: the page's table is the CLI's (${a.cli})`);
    if (a.maxBatch && a.maxBatch.ok) {
        const m = JSON.parse(cli([...argv, "--max-batch", "-f", "json"]).out);
        check(a.maxbatch === String(m.max_batch), `${name}: the page's max batch is the CLI's --max-batch`,
            `${a.maxbatch} vs ${m.max_batch}`);
    }
    if (a.maxSeq) {
        const m = JSON.parse(cli([...argv, "--max-seq", "-f", "json"]).out);
        check(a.maxseq === String(m.max_seq), `${name}: the page's max seq is the CLI's --max-seq`, `${a.maxseq} vs ${m.max_seq}`);
    }
}

async function main() {
    fs.mkdirSync(OUT, {recursive: true});
    /* the CLI in WebAssembly under node against the native one, on figures above 4 GiB */
    for (const args of [["tests/data/hf/llama-3.1-405b.json", "-p", "bf16", "--parallel", "zero3", "--gpus", "8", "-f", "json"],
        ["tests/data/hf/llama-3.1-8b.json", "--qlora", "-f", "json"],
        ["tests/data/hf/llama-3.1-8b.json", "-m", "generate", "--prompt", "8192", "--new-tokens", "2048", "-f", "json"],
        ["tests/data/hf/mixtral-8x7b-v0.1.json", "--serve", "--gpu", "h100-80gb", "--tp", "2", "-f", "json"],
        ["examples/resnet50.json", "--sweep", "1,64,512,4096", "-f", "csv"]]) {
        const n = cli(args, NODE_CLI), c = cli(args);
        check(n.out === c.out && n.err === c.err && n.rc === c.rc, `node CLI = native CLI: ${args.join(" ")}`,
            `${n.err}${c.err}`);
    }

    const browser = await puppeteer.launch({executablePath: CHROMIUM, headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"]});
    const page = await browser.newPage();
    page.on("pageerror", (e) => check(false, "no error in the page", e.message));
    await page.setViewport({width: 1280, height: 800});

    /* every shipped example and config, the page's defaults */
    const t0 = Date.now();
    await page.goto(`file://${PAGE_DIR}/index.html`);
    await page.waitForFunction(() => document.body.dataset.state === "done", {timeout: 60000});
    console.log(`benchmark: the page opened from file:// to its first answer (ResNet-50): ${Date.now() - t0} ms`);
    const examples = await page.evaluate(() => window.VC_EXAMPLES.map((e) => e.name));
    check(examples.length >= 40, "the page lists the shipped examples", String(examples.length));
    for (const e of examples) compare(e, await answer(page, `example=${e}`));

    /* a dozen option combinations */
    const combos = [
        "example=tests/data/hf/llama-3.1-8b.json&mode=qlora&gpu=rtx4090",
        "example=tests/data/hf/llama-3.1-8b.json&mode=lora&lora=16&precision=bf16&gpu=a100-80gb",
        "example=tests/data/hf/qwen3-8b.json&mode=infer&precision=bf16&batch=8&seq=4096&gpu=l4",
        "example=tests/data/hf/llama-3.1-8b.json&mode=generate&precision=bf16&prompt=8192&new_tokens=2048&gpu=h100-80gb",
        "example=tests/data/hf/mixtral-8x7b-v0.1.json&mode=serve&gpu=h100-80gb&tp=2",
        "example=tests/data/hf/llama-3.1-70b.json&precision=bf16&parallel=zero3&gpus=8&gpu=h100-80gb",
        "example=tests/data/hf/gpt2.json&precision=mixed-bf16&optim=sgd&batch=4&seq=1024&extra=--grad-ckpt",
        "example=examples/resnet50.json&gpu=a100-80gb",
        "example=examples/vit_b_16.json&precision=fp16&batch=32&gpu=rtx4090&extra=--attention sdpa",
        "example=tests/data/hf/qwen3-30b-a3b.json&mode=qlora&lora=16&gpu=a100-80gb&extra=--moe-imbalance 1.5",
        "example=examples/bert_base.json&mode=infer&batch=64&gpu=t4",
        "example=tests/data/hf/llama-3.1-8b.json&mode=serve",
        "example=tests/data/hf/llama-3.1-8b.json&extra=--bach 4",
    ];
    for (const f of combos) compare(f, await answer(page, f));

    /* the sweep plot: the library's SVG, drawn */
    const sw = await answer(page, "example=examples/resnet50.json&gpu=a100-80gb&sweep=1,64,256,1024");
    check(sw.sweep && sw.sweep.ok && sw.plotBox && sw.plotBox.w > 100 && sw.plotBox.h > 50 && sw.plotBox.nodes > 10,
        "the sweep plot renders", JSON.stringify(sw.plotBox));
    const plotFile = path.join(OUT, "plot.svg");
    fs.rmSync(plotFile, {force: true});
    cli(["examples/resnet50.json", "--gpu", "a100-80gb", "--sweep", "1,64,256,1024", "--plot", plotFile]);
    check(sw.sweep && fs.existsSync(plotFile) && sw.sweep.svg === fs.readFileSync(plotFile, "utf8"),
        "the page's plot is the CLI's --plot file");

    /* the buttons: "copy as CLI command" copies the command compared above; the share link
     * (the page's URL, options in the #fragment) opened afresh gives the same answer */
    const shared = await answer(page, "example=tests/data/hf/qwen3-8b.json&mode=lora&lora=32&precision=bf16&gpu=a100-80gb&batch=2");
    const copied = await page.evaluate(async () => {
        const got = [];
        Object.defineProperty(navigator, "clipboard", {value: {writeText: (t) => { got.push(t); return Promise.resolve(); }}});
        document.getElementById("copycli").click();
        document.getElementById("copylink").click();
        return got;
    });
    check(copied[0] === shared.cli, "copy as CLI command: the command shown", JSON.stringify(copied));
    check(/^file:.*#/.test(copied[1] || "") && /lora=32/.test(copied[1]) && /example=tests%2Fdata%2Fhf%2Fqwen3-8b\.json/.test(copied[1]),
        "copy share link: the options and the example in the fragment", copied[1]);
    const page2 = await browser.newPage();
    await page2.goto(copied[1]);
    await page2.waitForFunction(() => document.body.dataset.state === "done", {timeout: 60000});
    const again = await page2.evaluate(() => window.vramcalcPage.last());
    check(again.main.ok && again.main.json === shared.main.json && again.cli === shared.cli, "the share link gives the same answer");
    await page2.close();

    /* a config by the file chooser, one dropped on the page */
    await answer(page, "mode=qlora&gpu=rtx4090");
    const input = await page.$("#file");
    await page.evaluate(() => { document.body.dataset.state = "busy"; });
    await input.uploadFile(path.join(ROOT, "tests/data/hf/mistral-7b-v0.1.json"));
    await page.waitForFunction(() => document.body.dataset.state === "done" && /mistral/.test(document.getElementById("modelname").textContent));
    let got = await page.evaluate(() => window.vramcalcPage.last());
    let c = cli(["tests/data/hf/mistral-7b-v0.1.json", "--qlora", "--gpu", "rtx4090", "-f", "json"]);
    check(got.main.ok && JSON.parse(got.main.json).memory.peak_allocated === JSON.parse(c.out).memory.peak_allocated,
        "a chosen config.json: the CLI's peak");
    const text = fs.readFileSync(path.join(ROOT, "tests/data/hf/phi-2.json"), "utf8");
    await page.evaluate((t) => {
        document.body.dataset.state = "busy";
        const dt = new DataTransfer();
        dt.items.add(new File([t], "config.json", {type: "application/json"}));
        document.getElementById("drop").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
    }, text);
    await page.waitForFunction(() => document.body.dataset.state === "done" && /config\.json/.test(document.getElementById("modelname").textContent));
    got = await page.evaluate(() => window.vramcalcPage.last());
    c = cli(["tests/data/hf/phi-2.json", "--qlora", "--gpu", "rtx4090", "-f", "json"]);
    check(got.main.ok && JSON.parse(got.main.json).memory.peak_allocated === JSON.parse(c.out).memory.peak_allocated,
        "a dropped config.json: the CLI's peak");
    check(got.cli.startsWith("vramcalc config.json --qlora"), "a dropped file: the command names it", got.cli);

    /* pasted JSON: a model file, then a broken one (the CLI's line:col error for a file of that name) */
    const paste = async (t) => {
        await page.evaluate((x) => {
            document.body.dataset.state = "busy";
            document.getElementById("paste").value = x;
            document.getElementById("usepaste").click();
        }, t);
        await page.waitForFunction(() => document.body.dataset.state === "done");
        return page.evaluate(() => window.vramcalcPage.last());
    };
    await answer(page, "example=examples/mlp.json&batch=16");
    const mlp = fs.readFileSync(path.join(ROOT, "examples/mlp.json"), "utf8");
    got = await paste(mlp);
    c = cli(["examples/mlp.json", "--batch", "16", "-f", "json"]);
    check(got.main.ok && JSON.parse(got.main.json).memory.peak_allocated === JSON.parse(c.out).memory.peak_allocated,
        "pasted model JSON: the CLI's peak");
    const broken = mlp.replace(/"layers"/, '"layers" 3,');
    got = await paste(broken);
    fs.writeFileSync(path.join(OUT, "pasted.json"), broken);
    c = cli(["pasted.json", "--batch", "16"], CLI, OUT);
    check(!got.main.ok && c.rc === 2 && got.main.error === c.err.trim(), "pasted broken JSON: the CLI's error line",
        `page: ${got.main.error}\ncli:  ${c.err.trim()}`);

    /* answer times (a benchmark, not an assertion): the median of 5, each a fresh answer */
    const bench = async (what, fragment) => {
        const ms = [];
        for (let i = 0; i < 5; i++) ms.push((await answer(page, fragment)).ms);
        ms.sort((x, y) => x - y);
        console.log(`benchmark: ${what}: ${ms[2].toFixed(0)} ms (median of 5; min ${ms[0].toFixed(0)}, max ${ms[4].toFixed(0)})`);
    };
    await bench("8B QLoRA (llama-3.1-8b --qlora --gpu rtx4090, the estimate, --max-batch and --max-seq)",
        "example=tests/data/hf/llama-3.1-8b.json&mode=qlora&gpu=rtx4090");
    await bench("ResNet-50 --max-batch --gpu a100-80gb (the estimate and --max-batch)",
        "example=examples/resnet50.json&gpu=a100-80gb");

    /* screenshots */
    await answer(page, "example=tests/data/hf/llama-3.1-8b.json&mode=qlora&gpu=rtx4090&sweep=1,2,4,8,16");
    await page.screenshot({path: path.join(OUT, "web-1280.png")});
    await page.setViewport({width: 390, height: 844, isMobile: true, deviceScaleFactor: 2});
    await answer(page, "example=tests/data/hf/llama-3.1-8b.json&mode=qlora&gpu=rtx4090&sweep=1,2,4,8,16");
    await page.screenshot({path: path.join(OUT, "web-phone.png")});
    await browser.close();
    if (DOCS)
        for (const f of ["web-1280.png", "web-phone.png"]) fs.copyFileSync(path.join(OUT, f), path.join(ROOT, "docs", f));
    console.log(`screenshots: ${path.join(OUT, "web-1280.png")} ${path.join(OUT, "web-phone.png")}`);
    console.log(`${checks} checks, ${failures} failed`);
    process.exit(failures ? 1 : 0);
}

main().catch((e) => {
    console.log(`FAIL: ${e.stack || e}`);
    process.exit(1);
});
