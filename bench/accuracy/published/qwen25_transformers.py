#!/usr/bin/env python3
"""vramcalc --mode generate against the Qwen team's published peak memory of
transformers' generate() (issue 13 item 6: published GPU measurements).

Source of the measurements: QwenLM/Qwen2.5, docs/source/benchmark/speed_benchmark.rst
at commit a912d239c2d0e2e5d10bb8d02e6f5685edb43e68 ("Rebuild docs for speed
benchmark", 2024-11-06), the "(Transformer)" tables. Their setting, stated there and
in examples/speed-benchmark/speed_benchmark_transformers.py at the same repository:
one A100 80GB, PyTorch 2.3.1, transformers 4.46.0, flash_attention_2, torch_dtype
'auto' (bf16 for the BF16 models, fp16 for GPTQ/AWQ), batch 1, a prompt of N
tokens, generate() with max_new_tokens = min_length - N = 2048 (so exactly 2048
new tokens), the figure is torch.cuda.max_memory_allocated() / 1024**3 after the
run (GiB, two decimals). GPTQ rows: AutoGPTQ 0.7.1 (Int8: 0.6.0); AWQ: AutoAWQ
0.2.6; both group size 128.

The configs (configs/) are the published Qwen2.5-*-Instruct architectures; each
one's parameter count equals the model card's (checked below).

Usage: qwen25_transformers.py --cli build/vramcalc [--markdown] [--bound PCT] [--only Q,Q]
Exit 1 when a row (of the --only quantizations, default all) is off by more than
--bound percent (default: no bound).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# model: (config file, parameters on the model card as sum(p.numel()))
MODELS = {
    "0.5B": ("qwen2.5-0.5b-instruct.json", 494032768),
    "1.5B": ("qwen2.5-1.5b-instruct.json", 1543714304),
    "3B": ("qwen2.5-3b-instruct.json", 3085938688),
    "7B": ("qwen2.5-7b-instruct.json", 7615616512),
    "14B": ("qwen2.5-14b-instruct.json", 14770033664),
    "32B": ("qwen2.5-32b-instruct.json", 32763876352),
}
# quantization in the table -> (vramcalc --weights, dtype of the run)
QUANT = {"BF16": (None, "bf16"), "GPTQ-Int8": ("gptq8", "fp16"), "GPTQ-Int4": ("gptq4", "fp16"),
         "AWQ": ("awq4", "fp16")}
# (model, prompt tokens, quantization, published GiB), transcribed from the tables
PUBLISHED = [
    ("0.5B", 1, "BF16", 0.97), ("0.5B", 1, "GPTQ-Int8", 0.64), ("0.5B", 1, "GPTQ-Int4", 0.48), ("0.5B", 1, "AWQ", 0.68),
    ("0.5B", 6144, "BF16", 1.23), ("0.5B", 6144, "GPTQ-Int8", 0.90), ("0.5B", 6144, "GPTQ-Int4", 0.73), ("0.5B", 6144, "AWQ", 0.72),
    ("0.5B", 14336, "BF16", 1.60), ("0.5B", 14336, "GPTQ-Int8", 1.26), ("0.5B", 14336, "GPTQ-Int4", 1.10), ("0.5B", 14336, "AWQ", 1.10),
    ("0.5B", 30720, "BF16", 2.34), ("0.5B", 30720, "GPTQ-Int8", 2.01), ("0.5B", 30720, "GPTQ-Int4", 1.85), ("0.5B", 30720, "AWQ", 1.84),
    ("1.5B", 1, "BF16", 2.95), ("1.5B", 1, "GPTQ-Int8", 1.82), ("1.5B", 1, "GPTQ-Int4", 1.18), ("1.5B", 1, "AWQ", 1.51),
    ("1.5B", 6144, "BF16", 3.43), ("1.5B", 6144, "GPTQ-Int8", 2.30), ("1.5B", 6144, "GPTQ-Int4", 1.66), ("1.5B", 6144, "AWQ", 1.63),
    ("1.5B", 14336, "BF16", 4.16), ("1.5B", 14336, "GPTQ-Int8", 3.03), ("1.5B", 14336, "GPTQ-Int4", 2.39), ("1.5B", 14336, "AWQ", 2.36),
    ("1.5B", 30720, "BF16", 5.62), ("1.5B", 30720, "GPTQ-Int8", 4.49), ("1.5B", 30720, "GPTQ-Int4", 3.85), ("1.5B", 30720, "AWQ", 3.82),
    ("3B", 1, "BF16", 5.95), ("3B", 1, "GPTQ-Int8", 3.38), ("3B", 1, "GPTQ-Int4", 2.06), ("3B", 1, "AWQ", 2.50),
    ("3B", 6144, "BF16", 6.59), ("3B", 6144, "GPTQ-Int8", 3.98), ("3B", 6144, "GPTQ-Int4", 2.67), ("3B", 6144, "AWQ", 2.62),
    ("3B", 14336, "BF16", 7.47), ("3B", 14336, "GPTQ-Int8", 4.89), ("3B", 14336, "GPTQ-Int4", 3.58), ("3B", 14336, "AWQ", 3.54),
    ("3B", 30720, "BF16", 9.30), ("3B", 30720, "GPTQ-Int8", 6.72), ("3B", 30720, "GPTQ-Int4", 5.41), ("3B", 30720, "AWQ", 5.37),
    ("7B", 1, "BF16", 14.38), ("7B", 1, "GPTQ-Int8", 8.42), ("7B", 1, "GPTQ-Int4", 5.52), ("7B", 1, "AWQ", 5.39),
    ("7B", 6144, "BF16", 15.38), ("7B", 6144, "GPTQ-Int8", 9.43), ("7B", 6144, "GPTQ-Int4", 6.52), ("7B", 6144, "AWQ", 6.39),
    ("7B", 14336, "BF16", 16.91), ("7B", 14336, "GPTQ-Int8", 10.96), ("7B", 14336, "GPTQ-Int4", 8.05), ("7B", 14336, "AWQ", 7.92),
    ("7B", 30720, "BF16", 19.97), ("7B", 30720, "GPTQ-Int8", 14.01), ("7B", 30720, "GPTQ-Int4", 11.11), ("7B", 30720, "AWQ", 10.98),
    ("14B", 1, "BF16", 28.08), ("14B", 1, "GPTQ-Int8", 16.11), ("14B", 1, "GPTQ-Int4", 9.94), ("14B", 1, "AWQ", 9.79),
    ("14B", 6144, "BF16", 29.50), ("14B", 6144, "GPTQ-Int8", 17.61), ("14B", 6144, "GPTQ-Int4", 11.36), ("14B", 6144, "AWQ", 11.22),
    ("14B", 14336, "BF16", 31.95), ("14B", 14336, "GPTQ-Int8", 19.98), ("14B", 14336, "GPTQ-Int4", 13.81), ("14B", 14336, "AWQ", 13.67),
    ("14B", 30720, "BF16", 36.85), ("14B", 30720, "GPTQ-Int8", 24.88), ("14B", 30720, "GPTQ-Int4", 18.71), ("14B", 30720, "AWQ", 18.57),
    ("32B", 1, "BF16", 61.58), ("32B", 1, "GPTQ-Int8", 33.56), ("32B", 1, "GPTQ-Int4", 18.94), ("32B", 1, "AWQ", 18.67),
    ("32B", 6144, "BF16", 63.72), ("32B", 6144, "GPTQ-Int8", 35.86), ("32B", 6144, "GPTQ-Int4", 21.09), ("32B", 6144, "AWQ", 20.81),
    ("32B", 14336, "BF16", 67.31), ("32B", 14336, "GPTQ-Int8", 39.28), ("32B", 14336, "GPTQ-Int4", 24.67), ("32B", 14336, "AWQ", 24.39),
    ("32B", 30720, "BF16", 74.47), ("32B", 30720, "GPTQ-Int8", 46.45), ("32B", 30720, "GPTQ-Int4", 31.84), ("32B", 30720, "AWQ", 31.56),
]


def run(cli, args):
    p = subprocess.run([cli] + args + ["-f", "json"], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("vramcalc %s: %s" % (" ".join(args), p.stderr.strip()))
    return json.loads(p.stdout)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--bound", type=float, default=None)
    ap.add_argument("--only", default=",".join(QUANT), help="the rows --bound applies to, by quantization")
    a = ap.parse_args(argv)
    bad = 0
    for name, (cfg, params) in MODELS.items():
        got = run(a.cli, [os.path.join(HERE, "configs", cfg)])["parameters"]
        if got != params:
            print("FAIL: %s: %d parameters, the model card says %d" % (name, got, params))
            bad += 1
    rows = []
    for model, prompt, quant, gib in PUBLISHED:
        weights, dtype = QUANT[quant]
        args = [os.path.join(HERE, "configs", MODELS[model][0]), "--mode", "generate", "--prompt", str(prompt),
                "--new-tokens", "2048", "-p", dtype, "--attention", "flash", "--gpu", "a100-80gb"]
        if weights:
            args += ["--weights", weights]
        r = run(a.cli, args)
        est = r["memory"]["peak_allocated"]
        pub = gib * 2**30
        err = 100.0 * (est - pub) / pub
        # the published figure is rounded to 0.01 GiB: +-0.005 GiB of it is rounding
        rows.append((model, prompt, quant, gib, est, err, r["generate"]["prefill_peak"] >= r["generate"]["decode_peak"]))
        if a.bound is not None and quant in a.only.split(",") and abs(err) > a.bound:
            print("FAIL: Qwen2.5-%s-Instruct prompt %d %s: %+.1f%%" % (model, prompt, quant, err))
            bad += 1
    if a.markdown:
        print("| model | prompt | weights | published GiB | vramcalc GiB | error | peak in |")
        print("|---|---:|---|---:|---:|---:|---|")
    for model, prompt, quant, gib, est, err, pre in rows:
        fmt = "| Qwen2.5-%s-Instruct | %d | %s | %.2f | %.3f | %+.1f%% | %s |" if a.markdown else "%-6s %6d %-10s %6.2f %8.3f %+6.1f%% %s"
        print(fmt % (model, prompt, quant, gib, est / 2**30, err, "prefill" if pre else "decode"))
    errs = [abs(r[5]) for r in rows]
    by = {}
    for r in rows:
        by.setdefault(r[2], []).append(abs(r[5]))
    print("%d rows: mean |error| %.1f%%, max %.1f%%; %s" % (len(rows), sum(errs) / len(errs), max(errs),
          ", ".join("%s mean %.1f%% max %.1f%%" % (k, sum(v) / len(v), max(v)) for k, v in by.items())))
    if bad:
        print("%d failure(s)" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
