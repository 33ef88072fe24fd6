#!/usr/bin/python3
"""ep_compare.py -- --ep against Megatron-LM's theoretical_memory_usage.py for Mixtral-8x7B.

Megatron's compute_weight_and_optimizer_memory (NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
megatron/training/theoretical_memory_usage.py, transcribed in reference.py as
meg_compute_weight_and_optimizer_memory) splits the parameters into TP-sharded (attention,
embeddings), replicated (norms, routers) and expert-sharded ones (routed experts / (etp x ep)),
and counts 18 bytes per parameter (bf16 weight, fp32 main grad, fp32 main weight, fp32 Adam m and
v), or with --use-distributed-optimizer 6 + 12 / dp for the non-expert parameters and
6 + 12 / edp for the expert ones, edp = world / (etp x ep x pp).

For tests/data/hf/mixtral-8x7b-v0.1.json on world = ep GPUs (tp 1, pp 1) this checks:
  1. Megatron's total parameter count equals vramcalc's (and the HF model's) exactly;
  2. Megatron's parameters on the most loaded shard equal vramcalc's per-rank `parameters`
     with --ep N, exactly;
  3. vramcalc's resident weights + gradients + optimizer states with -p mixed-bf16 --parallel ddp
     (bf16 weight 2 B, fp32 master 4 B, bf16 gradient 2 B, DDP's bf16 bucket 2 B, Adam 8 B: 18 B
     per parameter, as Megatron's 2 + 4 + 4 + 8 with its fp32 main_grad in place of the bf16
     gradient and its bucket) within 0.01% of Megatron's 18 B x the shard's parameters.
The distributed-optimizer figure is printed for the docs; vramcalc refuses sharded layouts
with --ep (the expert-data-parallel group is not modelled).

With --pp P as well (world = ep x P, 1F1B, P micro-batches) it checks each pipeline rank kind:
  4. the stages' parameters sum to the --ep rank's whole model (each layer on one stage);
  5. the first stage's parameters equal Megatron's most loaded shard ("1/pp_size transformer
     layers ... and 1 embedding layer") and a middle stage's Megatron's other shards, each less
     final_layernorm / P: Megatron counts the final norm (hidden_size elements) in
     replicated_params_in_transformer_block and so spreads it over the stages, where the model has
     it on the last stage only (megatron/core/transformer/transformer_block.py
     TransformerBlock._build_layers / has_final_layernorm_in_this_stage: `self.post_process`
     without MTP layers);
  6. the first stage's resident bytes within 0.01% of Megatron's 18 B per parameter.
"""

import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
import reference as Rf  # noqa: E402

CFG = "tests/data/hf/mixtral-8x7b-v0.1.json"


def meg(ep, dist_opt, pp=1):
    with open(os.path.join(ROOT, CFG)) as f:
        c = json.load(f)
    args = Rf.meg_args(hidden_size=c["hidden_size"], num_attention_heads=c["num_attention_heads"],
                       group_query_attention=True, num_query_groups=c["num_key_value_heads"],
                       num_layers=c["num_hidden_layers"], ffn_hidden_size=c["intermediate_size"],
                       moe_ffn_hidden_size=c["intermediate_size"], num_experts=c["num_local_experts"],
                       moe_router_topk=c["num_experts_per_tok"], swiglu=True, normalization="RMSNorm",
                       untie_embeddings_and_output_weights=not c.get("tie_word_embeddings", False),
                       add_bias_linear=False, vocab_size=c["vocab_size"], expert_model_parallel_size=ep,
                       pipeline_model_parallel_size=pp, world_size=ep * pp, use_distributed_optimizer=dist_opt)
    return Rf.meg_compute_weight_and_optimizer_memory(args)


def vramcalc(cli, ep, pp=1):
    a = [cli, os.path.join(ROOT, CFG), "--seq", "256", "-p", "mixed-bf16", "-o", "adam", "-f", "json"]
    if ep > 1:
        a += ["--ep", str(ep), "--gpus", str(ep * pp), "--parallel", "ddp"]
    if pp > 1:
        a += ["--pp", str(pp), "--micro-batches", str(pp)]
    return json.loads(subprocess.run(a, capture_output=True, text=True, check=True).stdout)


def main(argv):
    cli = argv[argv.index("--cli") + 1] if "--cli" in argv else os.path.join(ROOT, "build", "vramcalc")
    bad = 0
    total = meg(1, False)[1]["total_parameters"]
    v1 = vramcalc(cli, 1)["parameters"]
    print("total parameters: Megatron %s, vramcalc %s" % (format(int(total), ","), format(v1, ",")))
    bad += int(total) != v1
    print("| ep | Megatron params on the most loaded shard | vramcalc params per rank | Megatron 18 B/param (B) "
          "| vramcalc weights + gradients + optimizer states (B) | diff | Megatron distributed optimizer (B) |")
    print("|---|---|---|---|---|---|---|")
    for ep in (2, 4, 8):
        mem, d = meg(ep, False)
        dmem, _ = meg(ep, True)
        v = vramcalc(cli, ep)
        resident = v["memory"]["weights"] + v["memory"]["gradients"] + v["memory"]["optimizer_states"]
        diff = (resident - mem) / mem * 100
        shard = int(d["parameters_on_most_loaded_shard"])
        bad += shard != v["parameters"] or abs(diff) > 0.01
        print("| %d | %s | %s | %s | %s | %+.4f%% | %s |" % (ep, format(shard, ","), format(v["parameters"], ","),
                                                          format(int(mem), ","), format(resident, ","), diff,
                                                          format(int(dmem), ",")))
    bad += pipeline_rows(cli)
    # layout rules: ep not dividing the experts, a world size not divisible by ep: exit 2
    for extra in (["--ep", "3", "--gpus", "3", "--parallel", "ddp"], ["--ep", "8", "--gpus", "4", "--parallel", "ddp"]):
        r = subprocess.run([cli, os.path.join(ROOT, CFG)] + extra, capture_output=True, text=True)
        print("%s: exit %d, %s" % (" ".join(extra), r.returncode, r.stderr.strip()))
        bad += r.returncode != 2 or "--ep" not in r.stderr or len(r.stderr.strip().splitlines()) != 1
    return 1 if bad else 0


def pipeline_rows(cli):
    """Checks 4-6 of the docstring; returns the number of failures."""
    with open(os.path.join(ROOT, CFG)) as f:
        final_norm = json.load(f)["hidden_size"]  # MixtralRMSNorm(hidden_size): one weight
    bad, sums = 0, []
    print("| ep | pp | rank kind | Megatron params (shard) | Megatron - final_layernorm / pp | vramcalc params "
          "| Megatron 18 B/param (B) | vramcalc weights + gradients + optimizer states (B) |")
    print("|---|---|---|---|---|---|---|---|")
    for ep, pp in ((8, 2), (8, 4), (2, 4)):
        mem, d = meg(ep, False, pp)
        whole = vramcalc(cli, ep)["parameters"]
        ranks = {r["kind"]: r for r in vramcalc(cli, ep, pp)["ranks"]}
        per_stage = [r["parameters"] * (r["stages"][1] - r["stages"][0] + 1) for r in ranks.values()]
        bad += sum(per_stage) != whole
        for kind, key in (("first", "parameters_on_most_loaded_shard"), ("middle", "parameters_on_other_shards")):
            if kind not in ranks:
                continue
            r, shard = ranks[kind], int(d[key])
            want = shard - final_norm // pp
            bad += r["parameters"] != want
            resident = r["memory"]["weights"] + r["memory"]["gradients"] + r["memory"]["optimizer_states"]
            meg_b = 18 * shard if kind == "middle" else int(mem)
            if kind == "first":
                bad += abs(resident - meg_b) / meg_b > 1e-4
            print("| %d | %d | %s | %s | %s | %s | %s | %s |" % (ep, pp, kind, format(shard, ","), format(want, ","),
                                                               format(r["parameters"], ","), format(meg_b, ","),
                                                               format(resident, ",")))
        sums.append("stages' parameters (ep %d, pp %d): %s, the --ep %d model's %s" % (ep, pp, format(sum(per_stage), ","),
                                                                                     ep, format(whole, ",")))
    print("\n".join(sums))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
