#!/usr/bin/env python3
"""Pipeline parallelism: vramcalc's first and last stage against Megatron's theoretical_memory_usage.py.

Megatron cannot run here (no GPU, no Megatron). reference.py transcribes its
theoretical_memory_usage.py (NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553);
this script evaluates it with tensor parallelism 1 and no sequence parallelism (the
compute_activation_memory_without_sp path: the layouts vramcalc models today) on Llama 3.1
configs, and runs vramcalc on the same config files (tests/data/hf) with the same
layout: --pp P --gpus P x DP, -p mixed-bf16 (bf16 weights and activations, fp32 master
weights and Adam states), --attention flash (Megatron's fused attention keeps no s x s
scores, as its formula assumes), micro-batch 1. Megatron's figures are its "most loaded
shard", the first stage; vramcalc's are per stage. docs/parallel.md 2.6 explains each
difference.

    /usr/bin/python3 bench/accuracy/dist/pp_compare.py --cli build/vramcalc [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as R  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CONFIGS = {"llama3.1-8b": "tests/data/hf/llama-3.1-8b.json", "llama3.1-70b": "tests/data/hf/llama-3.1-70b.json",
           "llama3.1-405b": "tests/data/hf/llama-3.1-405b.json"}
# model, pp, seq, micro-batches (None: Megatron's formula without num_microbatches, vramcalc's default pp)
CASES = [("llama3.1-8b", 4, 4096, None), ("llama3.1-8b", 4, 4096, 2), ("llama3.1-8b", 8, 4096, 16),
         ("llama3.1-70b", 8, 4096, None), ("llama3.1-405b", 16, 8192, None)]


def vramcalc(cli, model, pp, seq, mb):
    args = [cli, os.path.join(ROOT, CONFIGS[model]), "-f", "json", "-p", "mixed-bf16", "--attention", "flash",
            "--seq", str(seq), "--pp", str(pp), "--gpus", str(pp)]
    if mb:
        args += ["--micro-batches", str(mb)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"))
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []
    print("| case | Megatron first-stage params | vramcalc first / last stage params | Megatron weights+optimizer "
          "(18 B/param) | vramcalc weights+grads+states, first stage | Megatron activations | vramcalc activations "
          "first / last (held at end of forward) | vramcalc peak first / last |")
    print("|---|---|---|---|---|---|---|---|")
    for model, pp, seq, mb in CASES:
        args = R.llama_meg_args(model, dict(world_size=pp, seq_length=seq, pipeline_model_parallel_size=pp))
        w, detail = R.meg_compute_weight_and_optimizer_memory(args)
        act = R.meg_compute_activation_memory_without_sp(args, mb)
        d = vramcalc(a.cli, model, pp, seq, mb)
        f, l = d["ranks"][0], d["ranks"][-1]
        states = f["memory"]["weights"] + f["memory"]["gradients"] + f["memory"]["optimizer_states"]
        rec = {"model": model, "pp": pp, "seq": seq, "micro_batches": mb,
               "megatron": {"params_first_stage": detail["parameters_on_most_loaded_shard"],
                            "weight_and_optimizer_bytes": w, "activation_bytes": act},
               "vramcalc": {"params": [f["parameters"], l["parameters"]], "states_first": states,
                            "activations": [f["memory"]["activations"], l["memory"]["activations"]],
                            "in_flight": [f["in_flight"], l["in_flight"]],
                            "peak": [f["memory"]["peak_allocated"], l["memory"]["peak_allocated"]]}}
        rows.append(rec)
        print("| %s pp%d s%d M=%s | %d | %d / %d | %d | %d | %d | %d / %d | %d / %d |" % (
            model, pp, seq, mb or pp, detail["parameters_on_most_loaded_shard"], f["parameters"], l["parameters"],
            w, states, act, f["memory"]["activations"], l["memory"]["activations"],
            f["memory"]["peak_allocated"], l["memory"]["peak_allocated"]))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
