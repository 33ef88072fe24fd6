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
    /usr/bin/python3 bench/accuracy/dist/pp_compare.py --interleaved --cli build/vramcalc
--interleaved: the virtual pipeline (--pp-virtual V, Megatron's virtual_pipeline_model_parallel_size):
Megatron's interleaved_schedule_memory_penalty 1 + (pp - 1) / (pp V) on the first stage's activations
(with no micro-batch discount: the formula ignores M then) against the ratio of vramcalc's first-stage
activations held at the end of the forward, interleaved over 1F1B at the same M.
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


# model, pp, seq, micro-batches, model chunks per rank (--interleaved)
CASES_VP = [("llama3.1-8b", 4, 4096, 4, 2), ("llama3.1-8b", 4, 4096, 8, 2), ("llama3.1-8b", 4, 4096, 16, 4),
            ("llama3.1-70b", 8, 4096, 16, 2)]


def vramcalc(cli, model, pp, seq, mb, vp=1):
    args = [cli, os.path.join(ROOT, CONFIGS[model]), "-f", "json", "-p", "mixed-bf16", "--attention", "flash",
            "--seq", str(seq), "--pp", str(pp), "--gpus", str(pp)]
    if mb:
        args += ["--micro-batches", str(mb)]
    if vp > 1:
        args += ["--pp-virtual", str(vp)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def interleaved(cli):
    """The --interleaved table (see the docstring)."""
    print("| case | Megatron penalty | Megatron activations 1F1B / interleaved | vramcalc in flight first stage "
          "1F1B / interleaved (chunk micro-batches) | vramcalc activations first stage 1F1B / interleaved | ratio |")
    print("|---|---|---|---|---|---|")
    for model, pp, seq, mb, vp in CASES_VP:
        base = R.llama_meg_args(model, dict(world_size=pp, seq_length=seq, pipeline_model_parallel_size=pp))
        args = R.llama_meg_args(model, dict(world_size=pp, seq_length=seq, pipeline_model_parallel_size=pp,
                                            virtual_pipeline_model_parallel_size=vp))
        m0 = R.meg_compute_activation_memory_without_sp(base, None)
        m1 = R.meg_compute_activation_memory_without_sp(args, mb)
        d0, d1 = vramcalc(cli, model, pp, seq, mb), vramcalc(cli, model, pp, seq, mb, vp)
        f0, f1 = d0["ranks"][0], d1["ranks"][0]
        a0, a1 = f0["memory"]["activations"], f1["memory"]["activations"]
        print("| %s pp%d V%d s%d M=%d | %.4f | %d / %d | %d / %d | %d / %d | %.4f |" % (
            model, pp, vp, seq, mb, 1 + (pp - 1) / (pp * vp), m0, m1, f0["in_flight"], f1["in_flight"], a0, a1, a1 / a0))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"))
    ap.add_argument("--json")
    ap.add_argument("--interleaved", action="store_true")
    a = ap.parse_args(argv)
    if a.interleaved:
        return interleaved(a.cli)
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
