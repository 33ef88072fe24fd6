#!/usr/bin/python3
"""tp_compare.py -- vramcalc's --tp / --sp against the references that stand in for a
measurement (no GPUs, no Megatron here): Korthikanti et al.'s per-layer activation formula,
Megatron's parameter split and its theoretical_memory_usage.py (bench/accuracy/dist/reference.py).

    /usr/bin/python3 bench/accuracy/dist/tp_compare.py --cli build/vramcalc

Prints the markdown tables of docs/parallel.md section 3.1.  Exit 1 when a number that the
docs say agrees does not (the Korthikanti rows after the named extras, the parameter split).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import reference as R  # noqa: E402

GPT = os.path.join(ROOT, "tests", "data", "parallel", "gpt2-medium-k.json")
LLAMA = {"llama3.1-8b": os.path.join(ROOT, "tests", "data", "hf", "llama-3.1-8b.json"),
         "llama3.1-70b": os.path.join(ROOT, "tests", "data", "hf", "llama-3.1-70b.json"),
         "llama3.1-405b": os.path.join(ROOT, "tests", "data", "hf", "llama-3.1-405b.json")}


def run(cli, cfg, *args):
    out = subprocess.run([cli, cfg, "--format", "json"] + list(args), check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def tp_args(t, sp):
    a = ["--tp", str(t), "--gpus", str(t)] if t > 1 else []
    return a + (["--sp"] if sp else [])


def korthikanti(cli):
    s, h, a, b = 1024, 1024, 16, 1
    sbh = s * b * h
    ok = True
    print("| t | SP | attention | vramcalc block bytes | K | K row | difference | of which LN stats + flash lse/rng | fp32 math core over K's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t in (1, 2, 4, 8):
        for sp in ((False,) if t == 1 else (False, True)):
            for att in ("flash", "math"):
                d = run(cli, GPT, "-p", "bf16", "-o", "sgd", "--workspace", "0", "--attention", att, "--per-layer",
                        *tp_args(t, sp))
                got = sum(L["activations"] for L in d["layers"] if L["name"].startswith("layers[4][1]."))
                rc = "selective" if att == "flash" else "none"
                k = R.k_layer(s, b, h, a, t, sp, rc)
                ts = t if sp else 1
                extras = 2 * 2 * 4 * s * b // ts + (4 * (a // t) * s * b + 1024 if att == "flash" else 0)
                core = ((14 * sbh + 9 * a * s * s * b) - (8 * sbh + 5 * a * s * s * b)) // t if att == "math" else 0
                good = got == k + extras + core
                ok &= good
                print("| %d | %s | %s | %s | %s | %s | %+d | %d | %d |%s" % (
                    t, "yes" if sp else "", att, format(got, ","), format(int(k), ","), "selective" if rc == "selective" else "full",
                    got - k, extras, core, "" if good else " **MISMATCH**"))
    return ok


def params(cli):
    ok = True
    print("| model | t | vramcalc parameters per rank | Megatron (most loaded shard, pp 1) | ranks x per rank - model | replicated x (t-1) + padding |")
    print("|---|---|---|---|---|---|")
    for model, cfg in LLAMA.items():
        total = run(cli, cfg, "--seq", "256", "--mode", "infer")["parameters"]
        for t in (1, 2, 4, 8):
            got = run(cli, cfg, "--seq", "256", "--mode", "infer", *tp_args(t, False))["parameters"]
            a = R.llama_meg_args(model, dict(world_size=t, seq_length=256, tensor_model_parallel_size=t))
            _, det = R.meg_compute_weight_and_optimizer_memory(a)
            meg = det["parameters_on_most_loaded_shard"]
            m = R.LLAMA[model]
            repl = (2 * m["num_layers"] + 1) * m["hidden_size"]
            pad = 2 * (a.padded_vocab_size - m["vocab_size"]) * m["hidden_size"] if t > 1 else 0
            good = got == meg and t * got - total == (t - 1) * repl + pad
            ok &= good
            print("| %s | %d | %s | %s | %s | %s |%s" % (model, t, format(got, ","), format(int(meg), ","),
                                                         format(t * got - total, ","), format((t - 1) * repl + pad, ","),
                                                         "" if good else " **MISMATCH**"))
    return ok


def megatron(cli):
    MiB = 2 ** 20
    print("| case | Megatron weight+optimizer MB | vramcalc weights+grads+states MB (mixed-bf16) | Megatron activation MB | vramcalc activations MB (flash) | vramcalc peak MB |")
    print("|---|---|---|---|---|---|")
    for model, t, sp in (("llama3.1-8b", 8, True), ("llama3.1-8b", 8, False), ("llama3.1-70b", 8, True),
                         ("llama3.1-70b", 8, False)):
        a = R.llama_meg_args(model, dict(world_size=t, seq_length=8192, tensor_model_parallel_size=t, sequence_parallel=sp,
                                         recompute_granularity="selective" if sp else None))
        w, act, tot, det = R.meg_report_theoretical_memory(a)
        d = run(cli, LLAMA[model], "--seq", "8192", "-p", "mixed-bf16", "--attention", "flash", *tp_args(t, sp))
        mem = d["memory"]
        states = (mem["weights"] + mem["gradients"] + mem["optimizer_states"]) / MiB
        print("| %s tp %d%s s 8192 | %s | %s | %s (%s) | %s | %s |" % (
            model, t, " + sp" if sp else "", format(round(w, 2), ",.2f"), format(round(states, 2), ",.2f"),
            format(round(act, 2), ",.2f"), "SP + selective" if sp else "without SP", format(round(mem["activations"] / MiB, 2), ",.2f"),
            format(round(mem["peak_allocated"] / MiB, 2), ",.2f")))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"))
    args = ap.parse_args(argv)
    print("### Korthikanti, one GPT block (tests/data/parallel/gpt2-medium-k.json: s 1024, h 1024, a 16, b 1, bf16)\n")
    ok = korthikanti(args.cli)
    print("\n### Parameters per tensor-parallel rank\n")
    ok &= params(args.cli)
    print("\n### Megatron theoretical_memory_usage.py (pp 1, dp 1, micro-batch 1)\n")
    megatron(args.cli)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
