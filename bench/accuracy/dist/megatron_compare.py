#!/usr/bin/python3
"""megatron_compare.py -- --parallel megatron / megatron-dist against Megatron-LM's own arithmetic.

Megatron's compute_weight_and_optimizer_memory (NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
megatron/training/theoretical_memory_usage.py, transcribed in reference.py as
meg_compute_weight_and_optimizer_memory) counts, per parameter of the most loaded shard, 18 bytes
(bf16 weight 2, fp32 main_grad 4, fp32 main param 4, Adam exp_avg + exp_avg_sq 8), or with
--use-distributed-optimizer 6 + 12 / dp (the weight and main_grad whole, the rest sharded over the
data-parallel group; expert parameters over the expert-data-parallel group, world / (etp x ep x pp)).

vramcalc's rows (src/parallel/layout_megatron.c) allocate what Megatron-Core's DistributedDataParallel and
optimizers allocate: the bf16 parameters (or, distributed, the bf16 param_data buffer they are
re-pointed into), one fp32 grad_data buffer per (dense | expert) group, the fp32 main params
(whole, or the busiest rank's pieces of its range) and Adam's two states on them. For each
config (Llama-3.1-8B and -70B dense over tp/pp/dp, Mixtral-8x7B with ep) this checks:
  1. vramcalc's parameters per rank equal Megatron's most loaded shard, less final_layernorm / pp
     on the first pipeline stage (Megatron spreads the final norm over the stages; the model has
     it on the last: TransformerBlock.has_final_layernorm_in_this_stage; ep_compare.py);
  2. vramcalc's resident weights + gradients + optimizer states per rank R against the formula's
     bytes on vramcalc's own parameter count, E = 18 N, or 6 N + 12 N_dense / dp + 12 N_expert / edp:
     0 <= R - E <= the bound of what the formula leaves out: every tensor in 512-byte allocator
     blocks (4 tensors a parameter, or 3 pieces' plus 2 buffers'), and, distributed, the buffers'
     padding (each parameter's start to 64 elements: param_layout.py pad_param_start; the bucket's
     end to lcm(dp, 128): pad_bucket_end) at 6 B an element, with the busiest rank's range holding
     up to that padding more real elements at 12 B (_build_model_gbuf_param_range_map);
     (R less the model's one buffer, RoPE's inv_freq, 512 B, which vramcalc counts in weights);
  3. prints R against Megatron's own bytes (its shard's count) with the percent difference.
The tensors counted for the bound are vramcalc's (the transformers module layout); Megatron's
model fuses QKV and gate/up (fewer tensors, less start padding), a difference under 64 elements a
tensor either way.
"""

import json
import math
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
import reference as Rf  # noqa: E402

HF = os.path.join(ROOT, "tests", "data", "hf")
LLAMA = {"llama3.1-8b": "llama-3.1-8b.json", "llama3.1-70b": "llama-3.1-70b.json"}
MIXTRAL = "mixtral-8x7b-v0.1.json"

# (model, tp, pp, gpus, ep)
CASES = [("llama3.1-8b", 1, 1, 1, 1), ("llama3.1-8b", 1, 1, 8, 1), ("llama3.1-8b", 1, 1, 6, 1), ("llama3.1-8b", 2, 1, 8, 1), ("llama3.1-8b", 1, 2, 8, 1),
         ("llama3.1-8b", 8, 1, 8, 1), ("llama3.1-70b", 8, 1, 64, 1), ("llama3.1-70b", 8, 2, 64, 1),
         ("llama3.1-70b", 4, 4, 64, 1), ("mixtral", 1, 1, 8, 8), ("mixtral", 1, 1, 16, 8),
         ("mixtral", 1, 2, 16, 4)]


def config(model):
    with open(os.path.join(HF, MIXTRAL if model == "mixtral" else LLAMA[model])) as f:
        return json.load(f)


def meg(model, tp, pp, gpus, ep, dist):
    c = config(model)
    if model == "mixtral":
        args = Rf.meg_args(hidden_size=c["hidden_size"], num_attention_heads=c["num_attention_heads"],
                           group_query_attention=True, num_query_groups=c["num_key_value_heads"],
                           num_layers=c["num_hidden_layers"], ffn_hidden_size=c["intermediate_size"],
                           moe_ffn_hidden_size=c["intermediate_size"], num_experts=c["num_local_experts"],
                           moe_router_topk=c["num_experts_per_tok"], swiglu=True, normalization="RMSNorm",
                           untie_embeddings_and_output_weights=not c.get("tie_word_embeddings", False),
                           add_bias_linear=False, vocab_size=c["vocab_size"], expert_model_parallel_size=ep,
                           tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp, world_size=gpus,
                           use_distributed_optimizer=dist)
    else:
        args = Rf.llama_meg_args(model, dict(world_size=gpus, tensor_model_parallel_size=tp,
                                             pipeline_model_parallel_size=pp, use_distributed_optimizer=dist))
    return Rf.meg_compute_weight_and_optimizer_memory(args)


def vramcalc(cli, model, tp, pp, gpus, ep, row):
    cfg = os.path.join(HF, MIXTRAL if model == "mixtral" else LLAMA[model])
    a = [cli, cfg, "--seq", "256", "-p", "mixed-bf16", "-o", "adam", "-f", "json", "--gpus", str(gpus),
         "--parallel", row]
    a += ["--tp", str(tp)] if tp > 1 else []
    a += ["--pp", str(pp), "--micro-batches", str(pp)] if pp > 1 else []
    a += ["--ep", str(ep)] if ep > 1 else []
    d = json.loads(subprocess.run(a, capture_output=True, text=True, check=True).stdout)
    if pp > 1:  # the first stage: Megatron's most loaded shard ("1 embedding layer")
        d = [r for r in d["ranks"] if r["kind"] == "first"][0]
    return d


def shape(model, pp, ep):
    """Tensors per rank (an upper bound: the whole model's on one stage) and expert parameters per rank."""
    c = config(model)
    L, h = c["num_hidden_layers"], c["hidden_size"]
    if model != "mixtral":
        return 9 * L + 3, 0
    E, f = c["num_local_experts"], c["intermediate_size"]
    # layers/moe_ep.c: router, then per local expert linear_fc1 [2F, H] and linear_fc2 [H, F]
    return (4 + 1 + 2 * E + 2) * L + 3, 3 * h * f * (E // ep) * (L // pp)


def rope_block(c):
    """The model's one buffer, rotary_emb.inv_freq (head_dim / 2 fp32, transformers' LlamaRotaryEmbedding /
    MixtralRotaryEmbedding register_buffer), in vramcalc's weights: a parameter formula leaves it out."""
    head_dim = c["hidden_size"] // c["num_attention_heads"]
    return (head_dim // 2 * 4 + 511) // 512 * 512


def main(argv):
    cli = argv[argv.index("--cli") + 1] if "--cli" in argv else os.path.join(ROOT, "build", "vramcalc")
    bad = 0
    print("| model | tp | pp | gpus | ep | row | params per rank (vramcalc / Megatron) | formula on vramcalc's "
          "params E (B) | vramcalc R (B) | R - E - inv_freq (B) | bound (B) | Megatron (B) | R vs Megatron |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model, tp, pp, gpus, ep in CASES:
        c = config(model)
        dp, edp = gpus // (tp * pp), gpus // (tp * ep * pp)
        tensors, n_exp = shape(model, pp, ep)
        for row, dist in (("megatron", False), ("megatron-dist", True)):
            mem, det = meg(model, tp, pp, gpus, ep, dist)
            v = vramcalc(cli, model, tp, pp, gpus, ep, row)
            n = v["parameters"]
            shard = int(det["parameters_on_most_loaded_shard"])
            want_n = shard - (c["hidden_size"] // pp if pp > 1 else 0)
            bad += n != want_n
            R = v["memory"]["weights"] + v["memory"]["gradients"] + v["memory"]["optimizer_states"]
            if dist:
                E = 6 * n + 12 * (n - n_exp) / dp + 12 * n_exp / edp
                lcm = max(dp, edp) * 128 // math.gcd(max(dp, edp), 128)
                bound = 512 * (3 * tensors + 4) + 18 * (64 * tensors + 2 * lcm)
            else:
                E = 18 * n
                bound = 512 * (4 * tensors + 2)
            diff = R - E - rope_block(c)
            bad += not (0 <= diff <= bound)
            print("| %s | %d | %d | %d | %d | %s | %s / %s | %s | %s | %s | %s | %s | %+.4f%% |%s" % (
                model, tp, pp, gpus, ep, row, format(n, ","), format(shard, ","), format(int(E), ","),
                format(R, ","), format(int(diff), ","), format(bound, ","), format(int(mem), ","),
                (R - mem) / mem * 100, "" if 0 <= diff <= bound and n == want_n else " **MISMATCH**"))
    # zero2 with --ep stays refused; the megatron rows take it
    r = subprocess.run([cli, os.path.join("tests", "data", "hf", MIXTRAL), "--ep", "8", "--gpus", "8", "--parallel",
                        "zero2"], capture_output=True, text=True, cwd=ROOT)
    print("--parallel zero2 --ep 8: exit %d, %s" % (r.returncode, r.stderr.strip()))
    bad += r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
