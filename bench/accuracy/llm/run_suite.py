#!/usr/bin/python3
"""run_suite.py -- run every case of the LLM truth set through measure_llm.py (one process
per case, so each starts from a fresh allocator baseline) and write measured.json.

    /usr/bin/python3 bench/accuracy/llm/run_suite.py [--only SUBSTR] [--out measured.json]

held_out: every third training case (by position in CASES) and two generation cases are
marked held_out=true: they are for checking an estimator after it has been tuned on the
others, never for tuning it.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAM = ["llama", "qwen2", "gemma2", "gpt_neox", "mixtral"]


def train_cases(out, rows, **extra):
    """Training cases from rows of (config, batch, seq, optim, precision, ckpt, lora), each with the
    settings in extra; every third held out."""
    for i, (cfg, b, s, o, p, c, l) in enumerate(rows):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=c, lora=l, **extra, held_out=(i % 3 == 2)))


def mode_cases(out, rows, config=None, lora_targets=None, train=None, **every):
    """Cases from rows of (mode, config, batch, seq or prompt, optim or new tokens, precision, ckpt, lora), without
    the config column when config is given (a name under configs/ or a configs/ path): a "train" row takes the
    optimizer, ckpt, lora (with lora_targets when lora is set) and the settings in train; "infer" the seq;
    "generate" the prompt and the new tokens; every case the settings in every; every third held out."""
    for i, r in enumerate(rows):
        mode, cfg, b, s, o, p, c, l = (r[0], config) + tuple(r[1:]) if config else r
        d = dict(config=cfg if cfg.startswith("configs/") else "configs/%s.json" % cfg, mode=mode, batch=b,
                 precision=p, held_out=(i % 3 == 2), **every)
        if mode == "train":
            d.update(seq=s, optim=o, ckpt=c, lora=l, **(train or {}), **({"lora_targets": lora_targets} if l else {}))
        elif mode == "infer":
            d.update(seq=s)
        else:
            d.update(prompt=s, new_tokens=o)
        out.append(d)


def cases():
    out = []
    # the grid: every family x {full, LoRA r=8} x {no ckpt, ckpt} x {fp32, bf16}, batch 2, seq 64, AdamW
    for fam in FAM:
        for lora in (0, 8):
            for ckpt in (False, True):
                for prec in ("fp32", "bf16"):
                    out.append(dict(config="configs/%s_small.json" % fam, batch=2, seq=64, optim="adamw",
                                    precision=prec, ckpt=ckpt, lora=lora))
    # other (batch, seq) pairs and optimizers
    extra = [
        ("llama", 1, 128, "adam", "fp32", False, 0, 0.0),
        ("llama", 4, 32, "sgd", "bf16", True, 0, 0.0),
        ("llama", 2, 96, "adamw", "bf16", False, 8, 0.05),
        ("qwen2", 4, 48, "adam", "bf16", False, 0, 0.0),
        ("qwen2", 1, 160, "sgd", "fp32", True, 8, 0.05),
        ("gemma2", 1, 48, "adamw", "fp32", False, 0, 0.0),
        ("gemma2", 2, 40, "adam", "bf16", True, 8, 0.05),
        ("gpt_neox", 4, 96, "adam", "fp32", False, 0, 0.0),
        ("gpt_neox", 1, 128, "sgd", "bf16", True, 8, 0.05),
        ("mixtral", 3, 40, "adam", "fp32", False, 0, 0.0),
        ("mixtral", 1, 128, "sgd", "bf16", True, 8, 0.05),
        ("llama", 2, 64, "adamw", "fp32", False, 8, 0.05),
    ]
    for fam, b, s, o, p, c, l, d in extra:
        out.append(dict(config="configs/%s_small.json" % fam, batch=b, seq=s, optim=o, precision=p,
                        ckpt=c, lora=l, lora_dropout=d))
    for i, c in enumerate(out):
        c["mode"] = "train"
        c["held_out"] = (i % 3 == 2)
    gen = [
        ("llama", 1, 64, 16, "fp32", False),
        ("llama", 2, 32, 24, "bf16", False),
        ("qwen2", 2, 48, 16, "bf16", True),
        ("mixtral", 1, 40, 12, "fp32", False),
        ("llama", 1, 16, 64, "fp32", False),    # decode-dominated: the cache grows to 80 tokens
        ("mixtral", 2, 8, 48, "bf16", True),
        ("qwen2", 1, 96, 8, "fp32", False),
        ("llama", 4, 24, 6, "bf16", True),
    ]
    for fam, b, p, m, prec, ho in gen:
        out.append(dict(config="configs/%s_small.json" % fam, mode="generate", batch=b, prompt=p,
                        new_tokens=m, precision=prec, held_out=ho))
    # --loss liger (issue 12 item 3): Liger-Kernel's fused linear cross-entropy (liger_replica.py),
    # on the small configs and two with a vocabulary 96-128x the hidden size (64 to 128 chunks of
    # 1-2 rows), where the loss sets the peak; sgd so that no optimizer state hides it. Every
    # third held out.
    liger = [
        ("llama_vocab8k", 2, 64, "sgd", "fp32", False, 0),
        ("llama_vocab8k", 2, 64, "sgd", "bf16", False, 0),
        ("llama_vocab8k", 1, 128, "sgd", "bf16", True, 0),
        ("llama_vocab8k", 2, 64, "adamw", "bf16", False, 8),
        ("llama_vocab8k", 4, 32, "adamw", "fp32", True, 8),
        ("qwen2_vocab6k", 2, 64, "sgd", "bf16", False, 0),
        ("qwen2_vocab6k", 1, 96, "adam", "fp32", False, 8),
        ("gemma2_small", 2, 40, "sgd", "bf16", False, 0),
        ("llama_small", 4, 48, "sgd", "fp32", False, 0),
        ("mixtral_small", 2, 40, "sgd", "bf16", False, 0),
        ("llama_vocab8k", 3, 80, "sgd", "fp32", False, 0),
        ("qwen2_vocab6k", 2, 72, "sgd", "fp32", True, 0),
    ]
    train_cases(out, liger, loss="liger")
    # --loss cce: Apple's Cut Cross-Entropy (cce_replica.py: the wrappers' allocations, kernels as
    # in-place writes). Every third held out.
    cce = [
        ("llama_vocab8k", 2, 64, "sgd", "fp32", False, 0),
        ("llama_vocab8k", 2, 64, "sgd", "bf16", False, 0),
        ("llama_vocab8k", 1, 128, "sgd", "bf16", True, 0),
        ("llama_vocab8k", 2, 64, "adamw", "bf16", False, 8),
        ("qwen2_vocab6k", 2, 64, "sgd", "bf16", False, 0),
        ("qwen2_vocab6k", 1, 96, "adam", "fp32", True, 8),
        ("gemma2_small", 2, 40, "sgd", "bf16", False, 0),
        ("mixtral_small", 2, 40, "sgd", "fp32", False, 0),
        ("llama_vocab8k", 3, 80, "sgd", "fp32", True, 0),
    ]
    train_cases(out, cce, loss="cce")
    # the same large-vocabulary steps with transformers' ForCausalLMLoss, for the contrast
    for cfg, b, s, o, p in (("llama_vocab8k", 2, 64, "sgd", "fp32"), ("llama_vocab8k", 2, 64, "sgd", "bf16")):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=False, lora=0, held_out=False))
    # --cache quantized: transformers' QuantizedCache, quanto backend (kvq_replica.py), with small
    # residual lengths so that the decoding requantizes (the step that requantizes and the last
    # step compete for the decoding peak); 3 of 7 held out
    kvq = [
        ("llama", 1, 64, 40, "fp32", 4, 16, False),
        ("llama", 2, 96, 24, "bf16", 2, 8, False),
        ("qwen2", 2, 48, 20, "bf16", 4, 8, True),
        ("mixtral", 1, 40, 12, "fp32", 4, 4, True),
        ("llama", 1, 128, 10, "fp32", 4, 128, False),
        ("llama", 4, 32, 18, "bf16", 2, 16, True),
        ("qwen2", 1, 96, 34, "fp32", 4, 32, False),
    ]
    for fam, b, p, m, prec, bits, res, ho in kvq:
        out.append(dict(config="configs/%s_small.json" % fam, mode="generate", batch=b, prompt=p,
                        new_tokens=m, precision=prec, cache="quantized", kv_bits=bits, kv_residual=res,
                        held_out=ho))
    # transformers 5's MoE (issue 31): stacked experts through grouped_mm_experts_forward
    # (moe_v5_replica.py), on mixtral_small and on mixtral_e96 (96 experts, more than the
    # per-expert loop's 84; top-4, intermediate 192, vocabulary 256: the experts set the
    # peak); train with every third held out, then generation (2 of 4 held out)
    v5 = [
        ("mixtral_small", 2, 64, "adamw", "fp32", False, 0),
        ("mixtral_small", 2, 64, "adamw", "bf16", True, 0),
        ("mixtral_small", 2, 64, "adamw", "fp32", False, 8),
        ("mixtral_e96", 2, 128, "sgd", "fp32", False, 0),
        ("mixtral_e96", 2, 128, "sgd", "bf16", False, 0),
        ("mixtral_e96", 1, 96, "sgd", "fp32", True, 0),
        ("mixtral_e96", 4, 48, "adam", "bf16", False, 8),
        ("mixtral_e96", 3, 80, "sgd", "fp32", False, 0),
        ("mixtral_e96", 2, 64, "adamw", "bf16", True, 8),
    ]
    for i, (cfg, b, s, o, p, c, l) in enumerate(v5):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=c, lora=l, lora_dropout=0.05 if l else 0.0, experts="grouped_mm",
                        held_out=(i % 3 == 2)))
    for cfg, b, p, m, prec, ho in (("mixtral_small", 1, 40, 12, "fp32", False), ("mixtral_e96", 2, 96, 8, "fp32", False),
                                   ("mixtral_e96", 1, 128, 16, "bf16", True), ("mixtral_e96", 3, 64, 6, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=p, new_tokens=m,
                        precision=prec, experts="grouped_mm", held_out=ho))
    # Qwen2-MoE as transformers 5 runs it (moe_v5_replica.py Qwen2MoeSparseMoeBlock: the shared
    # expert first, the router's weights in the logits' dtype, += the gated shared expert;
    # mlp_only_layers [0] makes the first layer dense): qwen2_moe_small, 24 experts, top-4
    qm = [
        ("train", 4, 256, "sgd", "bf16", False, 0, False),
        ("train", 2, 192, "adamw", "fp32", True, 0, False),
        ("train", 2, 128, "adamw", "bf16", False, 8, True),
        ("train", 3, 160, "sgd", "fp32", False, 0, False),
        ("generate", 2, 128, 8, "fp32", False, 0, False),
        ("generate", 1, 256, 6, "bf16", False, 0, True),
    ]
    for mode, b, s, o, p, c, l, ho in qm:
        if mode == "train":
            out.append(dict(config="configs/qwen2_moe_small.json", mode=mode, batch=b, seq=s, optim=o, precision=p,
                            ckpt=c, lora=l, lora_dropout=0.05 if l else 0.0, experts="grouped_mm", held_out=ho))
        else:
            out.append(dict(config="configs/qwen2_moe_small.json", mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, experts="grouped_mm", held_out=ho))
    # --lora-dtype (issue 26 item 1): the adapters in the base weights' dtype (model: PEFT with
    # autocast_adapter_dtype=False, torchtune's LoRALinear), fp32 (PEFT's default, auto) or pinned
    # bf16 on an fp32 model; a larger rank over every Linear of the blocks so that the adapters,
    # their gradients, states and fp32 inputs show. Every third held out.
    every = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
    ldt = [
        ("llama_small", 2, 64, "adamw", "bf16", False, 32, every, "model"),
        ("llama_small", 2, 64, "adamw", "bf16", False, 32, every, "auto"),
        ("llama_small", 2, 64, "adamw", "bf16", True, 32, every, "model"),
        ("qwen2_small", 2, 48, "adam", "bf16", False, 16, every, "model"),
        ("mixtral_small", 2, 40, "adamw", "bf16", False, 16, "q_proj,k_proj,v_proj,o_proj", "model"),
        ("llama_small", 2, 64, "adamw", "fp32", False, 32, every, "bf16"),
        ("gemma2_small", 2, 40, "adamw", "bf16", True, 16, every, "model"),
        ("llama_vocab8k", 1, 96, "sgd", "bf16", False, 16, every, "model"),
        ("qwen2_small", 1, 96, "adamw", "bf16", True, 32, every, "fp32"),
    ]
    for i, (cfg, b, s, o, p, c, r, tg, dt) in enumerate(ldt):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=c, lora=r, lora_targets=tg, lora_dtype=dt, held_out=(i % 3 == 2)))
    # --loss chunked (issue 26 item 2): torchtune's chunked output projection and
    # CEWithChunkedOutputLoss (chunked_replica.py); batch 1 (contiguous slices) and more (copies),
    # 8 chunks (torchtune's default) and uneven splits. Every third held out.
    chunked = [
        ("llama_vocab8k", 2, 64, "sgd", "bf16", False, 0, 8),
        ("llama_vocab8k", 2, 64, "sgd", "fp32", False, 0, 8),
        ("llama_vocab8k", 1, 128, "sgd", "bf16", False, 0, 8),
        ("llama_vocab8k", 2, 64, "adamw", "bf16", False, 8, 8),
        ("qwen2_vocab6k", 2, 64, "sgd", "bf16", False, 0, 3),
        ("qwen2_vocab6k", 1, 96, "adam", "fp32", True, 8, 8),
        ("llama_vocab8k", 3, 40, "sgd", "bf16", True, 0, 6),
        ("mixtral_small", 2, 40, "sgd", "bf16", False, 0, 8),
        ("llama_small", 4, 48, "adamw", "fp32", False, 0, 1),
        ("llama_vocab8k", 1, 80, "sgd", "fp32", False, 8, 16),
    ]
    for i, (cfg, b, s, o, p, c, l, n) in enumerate(chunked):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=c, lora=l, loss="chunked", loss_chunks=n, held_out=(i % 3 == 2)))
    # --zero-grad zero (issue 26 item 5): zero_grad(set_to_none=False), the gradients kept between
    # steps (measure_llm.py KeepGrads). Every third held out.
    keep = [
        ("llama_small", 2, 64, "adamw", "fp32", False, 0),
        ("llama_small", 2, 64, "adamw", "bf16", False, 0),
        ("qwen2_small", 2, 64, "sgd", "bf16", True, 0),
        ("gemma2_small", 2, 40, "adam", "fp32", False, 0),
        ("mixtral_small", 2, 40, "adamw", "bf16", True, 0),
        ("llama_small", 2, 64, "adamw", "bf16", False, 8),
    ]
    train_cases(out, keep, zero_grad="zero")
    # --hold-output (issue 26 item 5): the loop keeps `out` (the logits) until backward returns.
    # Every third held out.
    hold = [
        ("llama_vocab8k", 2, 64, "sgd", "bf16", False, 0),
        ("llama_vocab8k", 2, 64, "sgd", "fp32", False, 0),
        ("qwen2_vocab6k", 1, 96, "adamw", "bf16", True, 8),
        ("llama_small", 2, 64, "adamw", "fp32", False, 0),
        ("mixtral_small", 2, 40, "sgd", "bf16", False, 8),
        ("gemma2_small", 2, 40, "sgd", "bf16", True, 0),
    ]
    train_cases(out, hold, hold_output=True)
    # --loss mean (issue 26 item 2): model(ids).logits.mean(), the simplest loop. Every third held out.
    mean = [
        ("llama_vocab8k", 2, 64, "sgd", "bf16", False, 0),
        ("llama_vocab8k", 2, 64, "sgd", "fp32", False, 0),
        ("qwen2_vocab6k", 1, 96, "adamw", "bf16", False, 8),
        ("gemma2_small", 2, 40, "sgd", "bf16", False, 0),
        ("llama_small", 2, 64, "adam", "fp32", True, 0),
        ("mixtral_small", 2, 40, "sgd", "bf16", False, 8),
    ]
    train_cases(out, mean, loss="mean")
    # Qwen3 (issue 31): q_norm / k_norm on the per-head projections, whose outputs are temporaries
    # inside q_norm(...) (reference.py Attention, modeling_qwen3.py @000c33fd Qwen3Attention.forward);
    # configs/qwen3_small.json has attention 4x the hidden size (Qwen3-0.6B has 2x). Generation
    # (prefill and decode) and training. Every third held out. The LoRA + checkpointing case is at
    # batch 2: at batch 1 (seq 96) the estimate was 3.5% high from the math backend's matmul fold
    # copy of the query (layers/sdpa.c), which the measured ops do not make (a view at batch 1).
    q3 = [
        ("generate", 2, 64, 8, "fp32", False, 0),
        ("generate", 1, 128, 16, "bf16", False, 0),
        ("generate", 4, 32, 8, "bf16", False, 0),
        ("generate", 2, 96, 4, "fp32", False, 0),
        ("train", 2, 64, "adamw", "fp32", False, 0),
        ("train", 2, 64, "adamw", "bf16", False, 0),
        ("train", 2, 48, "sgd", "bf16", True, 8),
    ]
    for i, (mode, b, s, o, p, c, l) in enumerate(q3):
        if mode == "generate":
            out.append(dict(config="configs/qwen3_small.json", mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/qwen3_small.json", mode=mode, batch=b, seq=s, optim=o, precision=p,
                            ckpt=c, lora=l, held_out=(i % 3 == 2)))
    # --peft dora / ia3 (issue 26 item 1): peft_replica.py's DoraLinear and IA3Linear (peft @5d602fdb);
    # llama_wide (hidden 512) so that DoRA's weight-sized temporaries set the peak. Every third held out.
    every = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
    peft = [
        ("llama_wide", 2, 64, "adamw", "bf16", False, "dora", 8, 0.0, None, None),
        ("llama_wide", 2, 64, "adamw", "bf16", False, "dora", 8, 0.05, every, None),
        ("llama_wide", 2, 64, "adamw", "bf16", True, "dora", 16, 0.0, every, "model"),
        ("llama_small", 2, 64, "adamw", "fp32", False, "dora", 8, 0.0, None, None),
        ("qwen2_small", 2, 48, "adam", "bf16", False, "dora", 16, 0.0, every, None),
        ("llama_wide", 1, 96, "sgd", "fp32", True, "dora", 8, 0.1, None, None),
        ("llama_wide", 2, 64, "adamw", "bf16", False, "ia3", 0, 0.0, None, None),
        ("llama_wide", 2, 64, "adamw", "fp32", True, "ia3", 0, 0.0, None, None),
        ("qwen2_small", 2, 48, "adamw", "bf16", False, "ia3", 0, 0.0, None, None),
        ("gemma2_small", 2, 40, "adamw", "bf16", False, "ia3", 0, 0.0, None, None),
        ("llama_wide", 2, 64, "adamw", "bf16", False, "ia3", 0, 0.0, None, "model"),
        ("gemma2_small", 2, 40, "adamw", "bf16", False, "dora", 8, 0.0, None, None),
    ]
    for i, (cfg, b, s, o, p, c, m, r, d, tg, dt) in enumerate(peft):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=c, lora=r, lora_dropout=d, peft=m, **({"lora_targets": tg} if tg else {}),
                        **({"lora_dtype": dt} if dt else {}), held_out=(i % 3 == 2)))
    # --peft ln_tuning and --modules-to-save (issue 26 item 1): peft_replica.py's LNTuningLayer and
    # ModulesToSaveWrapper (peft @5d602fdb), alone and under LoRA / DoRA. Every third held out.
    saved = [
        ("llama_small", 2, 64, "adamw", "fp32", False, "ln_tuning", 0, None, ""),
        ("llama_wide", 2, 64, "adamw", "bf16", False, "ln_tuning", 0, "model", ""),
        ("llama_wide", 2, 64, "adamw", "fp32", True, "ln_tuning", 0, None, ""),
        ("qwen2_small", 2, 48, "adamw", "fp32", False, "ln_tuning", 0, None, ""),
        ("gemma2_small", 2, 40, "adamw", "bf16", False, "ln_tuning", 0, "model", ""),
        ("llama_small", 2, 64, "adamw", "bf16", False, "lora", 8, None, "lm_head"),
        ("llama_wide", 2, 64, "adamw", "bf16", False, "dora", 8, None, "lm_head"),
        ("llama_small", 2, 64, "adamw", "fp32", False, "ln_tuning", 0, None, "lm_head,embed_tokens"),
        ("llama_vocab8k", 2, 64, "adamw", "bf16", False, "lora", 8, None, "lm_head"),
        ("mixtral_small", 2, 40, "adamw", "bf16", False, "lora", 8, None, "lm_head"),
    ]
    for i, (cfg, b, s, o, p, c, m, r, dt, ms) in enumerate(saved):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=c, lora=r, peft=m, **({"lora_dtype": dt} if dt else {}),
                        **({"modules_to_save": ms} if ms else {}), held_out=(i % 3 == 2)))
    # MLA (issue 31): DeepSeek-V3's attention and transformers 5's DeepseekV3MoE (mla_replica.py) on
    # deepseek_v3_small (q_lora_rank 48, kv_lora_rank 32, nope 16 + rope 8, v 16, rope_interleave, 16
    # experts in 4 groups, top-4, one dense layer) and deepseek_v3_lite_small (q_lora_rank null: q_proj,
    # no interleave, 2 shared experts, two dense layers); LoRA on the Linears vramcalc names the same
    # (kv_b_proj is inside its MLAttention). Train and generate (full per-head K/V in DynamicCache).
    # Every third held out.
    mla_targets = "q_b_proj,kv_a_proj_with_mqa,o_proj"
    mla = [
        ("train", "deepseek_v3_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "deepseek_v3_small", 2, 64, "adamw", "bf16", False, 0),
        ("train", "deepseek_v3_small", 2, 64, "adamw", "bf16", True, 0),
        ("train", "deepseek_v3_small", 2, 96, "adamw", "bf16", False, 8),
        ("train", "deepseek_v3_lite_small", 3, 48, "sgd", "fp32", False, 0),
        ("train", "deepseek_v3_lite_small", 1, 128, "adam", "bf16", True, 8),
        ("generate", "deepseek_v3_small", 1, 64, 16, "fp32", False, 0),
        ("generate", "deepseek_v3_small", 2, 32, 24, "bf16", False, 0),
        ("generate", "deepseek_v3_lite_small", 2, 96, 8, "fp32", False, 0),
    ]
    for i, (mode, cfg, b, s, o, p, c, l) in enumerate(mla):
        if mode == "train":
            out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p,
                            ckpt=c, lora=l, lora_targets=mla_targets if l else None, experts="grouped_mm",
                            held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, experts="grouped_mm", held_out=(i % 3 == 2)))
    # issue 31: gpt-oss and Gemma 3 as transformers 5 runs them (gptoss_replica.py). gpt_oss_small:
    # eager attention with sinks, sliding_window 16 on layers 0 and 2, 8 biased experts top-2 through
    # grouped_mm, float32 norms; gemma3_small: q/k norms, layer_types sliding, sliding, full, two
    # rotary pairs, scaled embeddings, sdpa within its window of 64 (generation runs past it: the
    # sliding layers' cache keeps 63 tokens). Train (every third held out), then generation.
    i31 = [
        ("gpt_oss_small", 2, 64, "adamw", "fp32", False, 0, None),
        ("gpt_oss_small", 2, 128, "sgd", "bf16", False, 0, "mean"),
        ("gpt_oss_small", 1, 96, "adamw", "bf16", True, 0, None),
        ("gpt_oss_small", 4, 48, "sgd", "fp32", False, 8, None),
        ("gpt_oss_small", 2, 160, "sgd", "fp32", False, 0, "mean"),
        ("gpt_oss_small", 3, 64, "adam", "bf16", False, 0, None),
        ("gemma3_small", 2, 64, "adamw", "fp32", False, 0, None),
        ("gemma3_small", 2, 64, "sgd", "bf16", False, 0, "mean"),
        ("gemma3_small", 4, 48, "adamw", "bf16", True, 8, None),
        ("gemma3_small", 1, 64, "sgd", "fp32", False, 16, "mean"),
    ]
    for i, (cfg, b, s, o, p, c, l, loss) in enumerate(i31):
        d = dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                 ckpt=c, lora=l, held_out=(i % 3 == 2))
        if loss:
            d["loss"] = loss
        out.append(d)
    for cfg, b, p, m, prec, ho in (("gpt_oss_small", 1, 24, 24, "fp32", False), ("gpt_oss_small", 2, 48, 16, "bf16", False),
                                   ("gpt_oss_small", 1, 8, 40, "bf16", True), ("gemma3_small", 1, 48, 32, "fp32", False),
                                   ("gemma3_small", 2, 16, 60, "bf16", False), ("gemma3_small", 1, 64, 24, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=p, new_tokens=m,
                        precision=prec, held_out=ho))
    # --grad-ckpt-every N (issue 26 item 3): every N-th decoder layer checkpointed (torchtune's
    # ac_mode selective, ac_option N). Every third held out.
    every = [
        ("llama_small", 2, 64, "adamw", "fp32", 0, 2),
        ("llama_small", 2, 64, "adamw", "bf16", 8, 2),
        ("qwen2_small", 2, 64, "sgd", "bf16", 0, 3),
        ("mixtral_small", 2, 40, "adamw", "bf16", 0, 2),
        ("gemma2_small", 2, 40, "sgd", "fp32", 8, 2),
        ("llama_vocab8k", 2, 64, "sgd", "bf16", 0, 2),
    ]
    for i, (cfg, b, s, o, p, l, n) in enumerate(every):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=True, ckpt_every=n, lora=l, held_out=(i % 3 == 2)))
    # --optim-in-bwd (issue 26 item 4): torchtune's optimizer_in_bwd, a one-parameter optimizer
    # stepped from each gradient's hook (measure_llm.py InBackward). Short sequences, so that the
    # step, not the logits, holds the peak. Every third held out.
    inbwd = [
        ("llama_small", 1, 16, "adamw", "fp32", False, 0),
        ("qwen2_small", 1, 16, "adam", "bf16", False, 0),
        ("mixtral_small", 1, 16, "adamw", "bf16", False, 0),
        ("llama_small", 2, 32, "sgd", "fp32", False, 0),
        ("gemma2_small", 1, 16, "adamw", "bf16", True, 0),
        ("llama_small", 1, 32, "adamw", "bf16", False, 8),
    ]
    train_cases(out, inbwd, optim_in_bwd=True)
    # --grad-ckpt-ops (issue 26 item 3): torchtitan's op-level selective AC in each checkpointed
    # layer (ac_replica.py: its policy through torch 1.13's TorchDispatchMode). Every third held out.
    sac = [
        ("llama_small", 2, 64, "adamw", "fp32", 0, 1),
        ("llama_small", 4, 128, "sgd", "bf16", 0, 1),
        ("qwen2_small", 2, 64, "sgd", "bf16", 0, 1),
        ("mixtral_small", 2, 40, "sgd", "bf16", 0, 1),
        ("gemma2_small", 2, 40, "sgd", "fp32", 8, 1),
        ("llama_vocab8k", 2, 64, "sgd", "bf16", 0, 2),
    ]
    for i, (cfg, b, s, o, p, l, n) in enumerate(sac):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=True, ckpt_ops=True, lora=l, held_out=(i % 3 == 2),
                        **({"ckpt_every": n} if n > 1 else {})))
    # --act-offload sync (issue 26 item 3): torchtune's OffloadActivations(use_streams=False)
    # (ac_replica.py: the copies kept outside the counted allocator). Every third held out.
    offl = [
        ("llama_small", 2, 64, "sgd", "fp32", 0),
        ("llama_small", 2, 64, "adamw", "bf16", 0),
        ("qwen2_small", 2, 64, "sgd", "bf16", 0),
        ("mixtral_small", 2, 40, "sgd", "bf16", 0),
        ("gemma2_small", 2, 40, "sgd", "fp32", 8),
        ("gpt_neox_small", 2, 64, "adamw", "bf16", 0),
        ("llama_vocab8k", 2, 64, "sgd", "bf16", 8),
        ("qwen2_vocab6k", 1, 96, "adamw", "bf16", 0),
        ("llama_small", 4, 128, "sgd", "bf16", 8),
    ]
    for i, (cfg, b, s, o, p, l) in enumerate(offl):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=False, lora=l, act_offload="sync", held_out=(i % 3 == 2)))
    # --act-offload sync with --grad-ckpt: each checkpointed layer's hidden states saved by
    # _NoopSaveInputs under the offload hooks (ac_replica.py checkpoint_saving_inputs), brought back
    # by the recompute. Full fine-tuning (LoRA: see docs/llm.md). Every third held out.
    offc = [
        ("llama_small", 2, 64, "sgd", "fp32"),
        ("llama_small", 4, 128, "adamw", "bf16"),
        ("qwen2_small", 2, 64, "sgd", "bf16"),
        ("mixtral_small", 2, 40, "sgd", "bf16"),
        ("gemma2_small", 2, 40, "sgd", "fp32"),
        ("llama_vocab8k", 2, 64, "sgd", "bf16"),
    ]
    for i, (cfg, b, s, o, p) in enumerate(offc):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=True, lora=0, act_offload="sync", held_out=(i % 3 == 2)))
    # the text encoders (issue 31 item 4): encoder_replica.py's *ForSequenceClassification
    # (distilbert, xlm-roberta, and bert at MiniLM's shape: 12 heads of 32), training with a class
    # label per sequence and inference (--mode infer: eval(), no_grad). Every third held out.
    enc = [
        ("distilbert_small", "train", 2, 64, "adamw", "fp32"),
        ("distilbert_small", "train", 4, 128, "sgd", "bf16"),
        ("distilbert_small", "infer", 4, 256, None, "fp32"),
        ("distilbert_small", "infer", 1, 200, None, "bf16"),
        ("xlm_roberta_small", "train", 2, 64, "adamw", "bf16"),
        ("xlm_roberta_small", "train", 4, 128, "sgd", "fp32"),
        ("xlm_roberta_small", "infer", 4, 256, None, "fp32"),
        ("xlm_roberta_small", "infer", 2, 128, None, "bf16"),
        ("minilm_small", "train", 2, 128, "adamw", "fp32"),
        ("minilm_small", "train", 4, 96, "adam", "bf16"),
        ("minilm_small", "infer", 4, 128, None, "fp32"),
        ("distilbert_small", "train", 3, 80, "adamw", "bf16"),
    ]
    for i, (cfg, mode, b, s, o, p) in enumerate(enc):
        out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p,
                        ckpt=False, lora=0, held_out=(i % 3 == 2)))
    # the text encoders under gradient checkpointing (per layer, non-reentrant) and LoRA r=8 on
    # PEFT's default targets (q_lin,v_lin; query,value). Every third held out.
    enc2 = [
        ("distilbert_small", 2, 128, "adamw", "fp32", True, 0),
        ("xlm_roberta_small", 4, 256, "sgd", "bf16", True, 0),
        ("distilbert_small", 4, 128, "adamw", "bf16", False, 8),
        ("xlm_roberta_small", 4, 128, "adamw", "fp32", False, 8),
        ("minilm_small", 2, 128, "adamw", "bf16", True, 8),
        ("distilbert_small", 4, 256, "sgd", "bf16", True, 0),
    ]
    train_cases(out, enc2, lora_dropout=0.0)
    # --loss dpo / dpo-precomputed (issue 26 item 5): TRL's DPOTrainer._compute_loss (dpo_replica.py,
    # huggingface/trl @f2cd5771): the batch is the concatenated [chosen; rejected] sequences (2 x
    # pairs), the reference forward with LoRA's adapters disabled or a frozen copy. Every third held out.
    dpo = [
        ("llama_vocab8k", 4, 64, "adamw", "bf16", False, 0, "dpo"),
        ("llama_vocab8k", 4, 64, "adamw", "fp32", False, 0, "dpo"),
        ("llama_vocab8k", 4, 64, "adamw", "bf16", False, 8, "dpo"),
        ("qwen2_vocab6k", 2, 96, "adamw", "fp32", False, 8, "dpo"),
        ("llama_small", 4, 64, "sgd", "bf16", True, 0, "dpo"),
        ("llama_small", 2, 64, "adamw", "fp32", True, 8, "dpo"),
        ("gemma2_small", 2, 40, "adamw", "bf16", False, 8, "dpo"),
        ("mixtral_small", 2, 40, "sgd", "bf16", False, 8, "dpo"),
        ("llama_vocab8k", 4, 64, "adamw", "bf16", False, 0, "dpo-precomputed"),
        ("llama_wide", 2, 64, "sgd", "bf16", False, 0, "dpo"),
        ("qwen2_small", 4, 48, "adamw", "bf16", False, 0, "dpo"),
        ("llama_vocab8k", 2, 64, "adamw", "fp32", False, 8, "dpo-precomputed"),
    ]
    for i, (cfg, b, s, o, p, c, l, loss) in enumerate(dpo):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=c, lora=l, loss=loss, held_out=(i % 3 == 2)))
    # qwen3_next (issue 31): Gated DeltaNet layers 3:1 with a gated full-attention layer, the torch path
    # of modeling_qwen3_next.py @7515843b (deltanet_replica.py); dense MLPs (qwen3_next_small) and the
    # sparse block with its shared expert, transformers 5's stacked experts (qwen3_next_moe_small).
    # Sequences across the chunk of 64 (padding, two to four chunks). Every third held out.
    qn = [
        ("qwen3_next_small", 2, 64, "adamw", "fp32", False, 0),
        ("qwen3_next_small", 1, 200, "adamw", "bf16", False, 0),
        ("qwen3_next_small", 2, 130, "adam", "fp32", True, 0),
        ("qwen3_next_small", 3, 64, "adamw", "bf16", False, 8),
        ("qwen3_next_moe_small", 2, 96, "adamw", "bf16", False, 0),
        ("qwen3_next_moe_small", 1, 160, "sgd", "fp32", True, 0),
    ]
    train_cases(out, qn, experts="grouped_mm")
    # generate with Qwen3NextDynamicCache: the prefill's chunked rule, the decoding steps' recurrent rule
    # and torch_causal_conv1d_update on the fixed state, K/V on the full layer
    qn_gen = [
        ("qwen3_next_small", 1, 64, 8, "fp32", False),
        ("qwen3_next_small", 2, 100, 6, "bf16", False),
        ("qwen3_next_moe_small", 2, 80, 6, "fp32", True),
        ("qwen3_next_small", 1, 16, 40, "fp32", False),
    ]
    for cfg, b, pr, m, prec, ho in qn_gen:
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=prec, experts="grouped_mm", held_out=ho))
    # falcon (issue 31, falcon_replica.py): falcon-7b's layout (multi_query, parallel attention + MLP on
    # one input_layernorm), falcon-40b's (new_decoder_architecture: ln_attn + ln_mlp, k and v
    # broadcast to every head, 2 kv heads of 8), and the sequential multi-head one with dropouts 0.1;
    # training (full, LoRA r=8 on query_key_value, checkpointing) and generate. Every third held out.
    fal = [
        ("falcon_small", 2, 64, "adamw", "fp32", False, 0),
        ("falcon_small", 2, 64, "adamw", "bf16", True, 0),
        ("falcon_new_small", 2, 96, "adam", "bf16", False, 0),
        ("falcon_new_small", 1, 128, "adamw", "fp32", True, 8),
        ("falcon_seq_small", 2, 64, "adamw", "fp32", False, 0),
        ("falcon_small", 4, 48, "sgd", "bf16", False, 8),
        ("falcon_seq_small", 2, 80, "adamw", "bf16", True, 8),
        ("falcon_new_small", 2, 64, "adamw", "bf16", False, 8),
        ("falcon_small", 1, 160, "adam", "fp32", True, 0),
    ]
    train_cases(out, fal, lora_dropout=0.0)
    for cfg, b, p, m, prec, ho in (("falcon_small", 1, 32, 16, "fp32", False), ("falcon_new_small", 2, 24, 12, "bf16", False),
                                   ("falcon_seq_small", 1, 48, 8, "fp32", True), ("falcon_new_small", 1, 64, 24, "fp32", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=p, new_tokens=m,
                        precision=prec, held_out=ho))
    # issue 31 item 4: Qwen2.5-VL's vision tower and merger, frozen, before Qwen2's language model
    # (qwen25vl_replica.py, measure_llm.py --image): the processor's pixel_values held through the
    # step, the image tokens before --seq's text tokens. Every third held out.
    vlm = [
        (1, 64, "224x224", 1, "adamw", "fp32", 0),
        (1, 64, "224x224", 1, "adamw", "bf16", 0),
        (2, 48, "224x224", 1, "sgd", "fp32", 0),
        (1, 32, "448x336", 1, "adamw", "fp32", 0),
        (1, 64, "224x224", 2, "adamw", "bf16", 8),
        (1, 96, "640x480", 1, "sgd", "fp32", 0),
    ]
    for i, (b, s, img, n, o, p, l) in enumerate(vlm):
        out.append(dict(config="configs/qwen2_5_vl_small.json", mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=False, lora=l, image=img, images=n, held_out=(i % 3 == 2)))
    # issue 31 item 4: Gemma 3's SigLIP tower and projector, frozen, with Gemma 3's language model
    # (gemma3vl_replica.py, measure_llm.py --image): any image resized to image_size, its
    # full_image_sequence (68 tokens here) before --seq's text, token_type_ids' bidirectional image
    # blocks in the training masks. gemma3_vl448_small: 1,024 patches, the tower's attention the peak.
    # LoRA's default q_proj,v_proj adapt the tower's too (PEFT matches the names' ends). Every third held out.
    # The last two at batch 2: SiglipVisionModel runs the images as a batch dimension, so the
    # per-sample plan holds (vc_estimate at batch 2: -0.07% and -0.06%), but the CLI refuses --image
    # above batch 1 for every model type (request.c's Qwen2.5-VL rule): known gaps until it asks the family.
    g3 = [
        ("gemma3_vl_small", 1, 64, "640x480", "adamw", "fp32", 0),
        ("gemma3_vl_small", 1, 64, "640x480", "adamw", "bf16", 0),
        ("gemma3_vl448_small", 1, 32, "1280x720", "adamw", "fp32", 0),
        ("gemma3_vl_small", 1, 32, "224x224", "adamw", "fp32", 8),
        ("gemma3_vl448_small", 1, 96, "640x480", "sgd", "bf16", 0),
        ("gemma3_vl_small", 1, 128, "100x100", "sgd", "fp32", 0),
        ("gemma3_vl448_small", 2, 32, "640x480", "adamw", "fp32", 0),
        ("gemma3_vl_small", 2, 64, "640x480", "adamw", "bf16", 0),
    ]
    for i, (cfg, b, s, img, o, p, l) in enumerate(g3):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p,
                        ckpt=False, lora=l, lora_dropout=0.0, image=img, images=1, held_out=(i % 3 == 2)))
    # issue 31: Qwen3.5 / Qwen3.6 (qwen3_5 dense, qwen3_5_moe with the shared expert; deltanet_replica.py's
    # Qwen3_5 classes from modular_qwen3_5.py @ 8940358a): Qwen3_5GatedDeltaNet's four projections, the
    # mrope rotary embedding, the vision tower's weights loaded and frozen (no image). Training (full,
    # LoRA r=8 on q_proj,v_proj: PEFT's mapping has no qwen3_5, so the targets are named; checkpointing)
    # and generate with Qwen3_5DynamicCache. Every third held out.
    q35 = [
        ("qwen3_5_small", 2, 64, "adamw", "fp32", False, 0),
        ("qwen3_5_small", 1, 200, "adamw", "bf16", False, 0),
        ("qwen3_5_small", 2, 130, "adam", "fp32", True, 0),
        ("qwen3_5_small", 3, 64, "adamw", "bf16", False, 8),
        ("qwen3_5_moe_small", 2, 96, "adamw", "bf16", False, 0),
        ("qwen3_5_moe_small", 1, 160, "sgd", "fp32", True, 0),
        ("qwen3_5_moe_small", 2, 64, "adamw", "fp32", False, 8),
    ]
    train_cases(out, q35, experts="grouped_mm", lora_targets="q_proj,v_proj")
    for cfg, b, pr, m, prec, ho in (("qwen3_5_small", 1, 64, 8, "fp32", False), ("qwen3_5_small", 2, 100, 6, "bf16", False),
                                    ("qwen3_5_moe_small", 2, 80, 6, "fp32", True), ("qwen3_5_moe_small", 1, 16, 40, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=prec, experts="grouped_mm", held_out=ho))
    # issue 31: Llama 4's language model as transformers runs it (llama4_replica.py). llama4_small:
    # Maverick's alternation (interleave_moe_layer_step 2: layers 1 and 3 Llama4TextMoe, 8 experts
    # top-1, the shared expert), layer 3 NoPE with the temperature tuning, L2 qk norm on the rope
    # layers, chunk 128 (every sequence within it); llama4_scout_small: Scout's layout (every layer
    # MoE, 16 experts, no qk norm) with attention_chunk_size 32, so that training at 64 tokens runs the
    # chunked mask and generation past 32 tokens the chunked layers' cache ring. LoRA on q_proj,
    # v_proj. Train (every third held out), then generation.
    l4 = [
        ("llama4_small", 2, 64, "adamw", "fp32", False, 0),
        ("llama4_small", 2, 64, "adamw", "bf16", False, 0),
        ("llama4_small", 2, 64, "adamw", "fp32", True, 0),
        ("llama4_small", 2, 96, "sgd", "bf16", False, 8),
        ("llama4_small", 4, 48, "adam", "bf16", True, 0),
        ("llama4_scout_small", 2, 31, "adamw", "fp32", False, 0),
        ("llama4_scout_small", 4, 31, "sgd", "fp32", False, 0),
        ("llama4_scout_small", 1, 24, "adam", "bf16", True, 8),
        ("llama4_scout_small", 2, 64, "adamw", "bf16", False, 0),
        ("llama4_scout_small", 2, 48, "sgd", "fp32", False, 16),
    ]
    train_cases(out, l4)
    for cfg, b, p, m, prec, ho in (("llama4_small", 1, 64, 16, "fp32", False), ("llama4_small", 2, 32, 24, "bf16", False),
                                   ("llama4_scout_small", 1, 16, 12, "fp32", True),
                                   ("llama4_scout_small", 2, 24, 30, "bf16", False),
                                   ("llama4_scout_small", 1, 8, 60, "fp32", False),
                                   ("llama4_scout_small", 1, 64, 16, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=p, new_tokens=m,
                        precision=prec, held_out=ho))
    # issue 31 item 4: ModernBertForSequenceClassification on sdpa (modernbert_replica.py, modeling_modernbert.py
    # @000c33fd): the global and sliding-window float masks, global every 3rd layer (modernbert_small: cls
    # pooling, window 32, no biases) or every 2nd (modernbert_mean_small: mean pooling, window 16, every bias,
    # dropouts 0.1); training (full, LoRA r=8 on Wqkv and both Wo, checkpointing) and --mode infer. Every
    # third held out.
    mb = [
        ("modernbert_small", "train", 2, 64, "adamw", "fp32", False, 0),
        ("modernbert_small", "train", 4, 128, "sgd", "bf16", False, 0),
        ("modernbert_small", "infer", 2, 256, None, "fp32", False, 0),
        ("modernbert_mean_small", "train", 2, 96, "adamw", "bf16", False, 0),
        ("modernbert_mean_small", "train", 2, 128, "adamw", "fp32", True, 0),
        ("modernbert_small", "infer", 1, 512, None, "bf16", False, 0),
        ("modernbert_small", "train", 2, 128, "adamw", "fp32", False, 8),
        ("modernbert_mean_small", "infer", 4, 100, None, "fp32", False, 0),
        ("modernbert_small", "train", 1, 200, "adam", "bf16", True, 0),
        ("modernbert_mean_small", "train", 4, 64, "adamw", "bf16", False, 8),
        ("modernbert_small", "train", 3, 80, "adamw", "fp32", True, 8),
        ("modernbert_mean_small", "infer", 2, 300, None, "bf16", False, 0),
    ]
    for i, (cfg, mode, b, s, o, p, c, l) in enumerate(mb):
        out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p, ckpt=c,
                        lora=l, lora_dropout=0.0, lora_targets="Wqkv,Wo" if l else None, held_out=(i % 3 == 2)))
    # issue 31 item 4: Qwen3-VL on text alone (qwen3vl_replica.py, modeling_qwen3_vl.py @00709b86): Qwen3's
    # decoder with interleaved MRoPE, the vision tower's weights frozen and never run; training (full, LoRA
    # r=8 on q_proj,v_proj, checkpointing) and generate. Every third held out.
    q3vl = [
        ("qwen3_vl_small", 2, 64, "adamw", "fp32", False, 0),
        ("qwen3_vl_small", 2, 128, "adamw", "bf16", True, 0),
        ("qwen3_vl_small", 4, 96, "sgd", "bf16", False, 0),
        ("qwen3_vl_small", 2, 64, "adamw", "fp32", False, 8),
        ("qwen3_vl_small", 1, 200, "adamw", "bf16", True, 8),
        ("qwen3_vl_small", 3, 80, "adam", "fp32", False, 0),
    ]
    train_cases(out, q3vl, lora_dropout=0.0, lora_targets="q_proj,v_proj")
    for cfg, b, p, m, prec, ho in (("qwen3_vl_small", 1, 64, 16, "fp32", False), ("qwen3_vl_small", 2, 32, 24, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=p, new_tokens=m,
                        precision=prec, held_out=ho))
    # --packing (issue 26 item 5): TRL's padding_free collator (trl @f2cd5771 sft_trainer.py), the
    # --batch sequences of --seq tokens as one row with position_ids, and transformers' sdpa path under
    # the block-causal mask masking_utils.py builds for them (@00c4411c; packing_replica.py): llama,
    # qwen2 (biases), qwen3 (q/k norms), mixtral, GQA and MHA, full and LoRA, with checkpointing (the
    # mask an argument of every checkpointed layer). Every third held out.
    pk = [
        ("llama_small", 4, 64, "adamw", "bf16", False, 0),
        ("qwen2_small", 3, 48, "adamw", "fp32", False, 8),
        ("llama_small", 4, 64, "sgd", "bf16", True, 0),
        ("mixtral_small", 2, 40, "adamw", "bf16", False, 8),
        ("qwen3_small", 4, 32, "adamw", "bf16", False, 0),
        ("llama_vocab8k", 2, 64, "adamw", "fp32", True, 8),
        ("llama_wide", 3, 64, "sgd", "bf16", False, 0),
        ("llama_small", 8, 32, "adamw", "fp32", False, 0),
        ("qwen2_vocab6k", 2, 96, "adamw", "bf16", True, 8),
    ]
    train_cases(out, pk, packing=True)
    # --loss orpo (issue 26 item 5): TRL's ORPOTrainer step (orpo_replica.py, huggingface/trl @f2cd5771,
    # trl/experimental/orpo/orpo_trainer.py): the concatenated [chosen; rejected] batch (2 x pairs),
    # the chosen half's cross-entropy, the odds ratio on the average log-probs, no reference. The last
    # four were first run after the model was settled. Every third held out.
    orpo = [
        ("llama_vocab8k", 4, 64, "adamw", "bf16", False, 0),
        ("llama_vocab8k", 4, 64, "adamw", "fp32", False, 0),
        ("llama_vocab8k", 4, 64, "adamw", "bf16", False, 8),
        ("qwen2_vocab6k", 2, 96, "adamw", "fp32", False, 8),
        ("llama_small", 4, 64, "sgd", "bf16", True, 0),
        ("gemma2_small", 2, 40, "adamw", "bf16", False, 8),
        ("mixtral_small", 2, 40, "sgd", "bf16", False, 8),
        ("qwen3_small", 4, 48, "adamw", "bf16", False, 0),
        ("llama_wide", 2, 64, "sgd", "fp32", True, 0),
    ]
    train_cases(out, orpo, loss="orpo")
    # --loss kto (issue 26 item 5): TRL's KTOTrainer step (kto_replica.py, huggingface/trl @f2cd5771,
    # trl/trainer/kto_trainer.py): the unpaired batch (half desirable) with its KL sequences, the policy's
    # no-grad KL forward, its forward with grad, the reference's two no-grad forwards (LoRA: adapters
    # disabled; else a frozen copy), the metrics' copies. Every third held out.
    kto = [
        ("llama_vocab8k", 4, 64, "adamw", "bf16", False, 0),
        ("llama_vocab8k", 4, 64, "adamw", "fp32", False, 0),
        ("llama_vocab8k", 4, 64, "adamw", "bf16", False, 8),
        ("qwen2_vocab6k", 2, 96, "adamw", "fp32", False, 8),
        ("llama_small", 4, 64, "sgd", "bf16", True, 0),
        ("gemma2_small", 2, 40, "adamw", "bf16", False, 8),
        ("mixtral_small", 2, 40, "sgd", "bf16", False, 8),
        ("qwen3_small", 4, 48, "adamw", "bf16", False, 0),
        ("llama_wide", 2, 64, "sgd", "fp32", True, 0),
    ]
    train_cases(out, kto, loss="kto")
    # issue 31 item 4: T5ForConditionalGeneration (t5_replica.py, modeling_t5.py @ 6b8b757d): t5_small
    # (relu, tied: the d_model ** -0.5 rescale) and flan_t5_small (gated-gelu, untied, 2 encoder and 3
    # decoder blocks), dropout 0.1; --seq the encoder's tokens, target_seq the labels'; training (full,
    # LoRA r=8 on PEFT's q,v or on q,k,v,o) and the no_grad forward with decoder_input_ids (infer).
    # Every third held out.
    t5 = [
        ("t5_small", 4, 256, 128, "sgd", "fp32", 0, None),
        ("t5_small", 4, 256, 128, "sgd", "bf16", 0, None),
        ("flan_t5_small", 2, 192, 96, "adamw", "fp32", 0, None),
        ("t5_small", 2, 256, 64, "adamw", "bf16", 8, None),
        ("t5_small", 2, 256, 64, "adamw", "fp32", 8, None),
        ("flan_t5_small", 2, 128, 160, "adam", "bf16", 0, None),
        ("t5_small", 2, 128, 128, "adamw", "bf16", 8, "q,k,v,o"),
        ("flan_t5_small", 1, 320, 48, "sgd", "fp32", 8, None),
        ("t5_small", 3, 96, 200, "adam", "fp32", 0, None),
    ]
    for i, (cfg, b, s, t, o, p, l, tg) in enumerate(t5):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, target_seq=t, optim=o,
                        precision=p, ckpt=False, lora=l, lora_dropout=0.0, held_out=(i % 3 == 2),
                        **({"lora_targets": tg} if tg else {})))
    for cfg, b, s, t, p, ho in (("t5_small", 4, 256, 128, "fp32", False), ("flan_t5_small", 2, 192, 96, "bf16", False),
                                ("t5_small", 1, 512, 32, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="infer", batch=b, seq=s, target_seq=t, precision=p,
                        held_out=ho))
    # T5Stack's gradient checkpointing of every T5Block in both stacks (t5_replica.py: the non-reentrant
    # checkpoint, block 0's position biases outputs of its checkpoint, the cross-attention's zeros made to
    # require grad, use_cache off). Every third held out.
    t5c = [
        ("t5_small", 4, 256, 128, "sgd", "fp32", 0),
        ("t5_small", 4, 256, 128, "adamw", "bf16", 0),
        ("flan_t5_small", 2, 192, 96, "sgd", "fp32", 0),
        ("t5_small", 2, 256, 128, "adamw", "fp32", 8),
        ("flan_t5_small", 2, 128, 160, "sgd", "bf16", 0),
        ("t5_small", 1, 320, 64, "sgd", "fp32", 0),
    ]
    for i, (cfg, b, s, t, o, p, l) in enumerate(t5c):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, target_seq=t, optim=o,
                        precision=p, ckpt=True, lora=l, lora_dropout=0.0, held_out=(i % 3 == 2)))
    # issue 31 item 4: T5ForConditionalGeneration's generate() (t5_replica.generate: generation/utils.py
    # @000034a's encoder-decoder path, modeling_t5.py @6b8b757d's cached forward): the encoder once over
    # --prompt, then the decoder one token a step with EncoderDecoderCache (the self-attention's cat, the
    # cross-attention's states of the first step); prefill (the encoder and the first step) and decoding
    # peaks. Three held out.
    t5g = [
        ("t5_small", 2, 128, 16, "fp32", False),
        ("t5_small", 2, 128, 16, "bf16", False),
        ("flan_t5_small", 2, 96, 24, "fp32", True),
        ("flan_t5_small", 1, 64, 48, "bf16", False),
        ("t5_small", 4, 32, 64, "fp32", False),    # decode-dominated: the self-attention cache grows to 64 tokens
        ("t5_small", 1, 256, 8, "fp32", True),
        ("t5_small", 3, 100, 2, "bf16", False),
        ("flan_t5_small", 4, 160, 12, "bf16", True),
        ("t5_small", 1, 16, 96, "fp32", False),
    ]
    for cfg, b, pr, m, prec, ho in t5g:
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=prec, held_out=ho))
    # issue 31: Gemma 4's dense language model as transformers runs it (gemma4_replica.py, modeling_gemma4.py
    # @ 0246b4f3): gemma4_small: the 31B's kind (attention_k_eq_v on the full layers with 1 global kv head,
    # global_head_dim 64 over head_dim 32, 2:1 sliding / full, window 64, final soft-capping, tied);
    # gemma4_dense_small: separate values, global_head_dim 48 over 16, Gemma4TextConfig's default 5:1
    # pattern with the last layer forced full, window 96, untied. Training (full, LoRA on q_proj, v_proj,
    # checkpointing; every sequence within the window), --mode infer and generate (past the window: the
    # sliding layers' ring). Every third held out.
    g4 = [
        ("gemma4_small", "train", 2, 64, "adamw", "fp32", False, 0),
        ("gemma4_small", "train", 2, 64, "adamw", "bf16", False, 0),
        ("gemma4_small", "train", 4, 48, "adamw", "bf16", True, 8),
        ("gemma4_small", "train", 1, 64, "sgd", "fp32", False, 16),
        ("gemma4_dense_small", "train", 2, 96, "adamw", "fp32", False, 0),
        ("gemma4_dense_small", "train", 2, 80, "adamw", "bf16", True, 0),
        ("gemma4_dense_small", "train", 3, 64, "adam", "bf16", False, 8),
        ("gemma4_small", "train", 2, 64, "adamw", "fp32", True, 0),
        ("gemma4_dense_small", "train", 1, 96, "sgd", "fp32", True, 8),
        ("gemma4_small", "infer", 2, 64, None, "fp32", False, 0),
        ("gemma4_small", "infer", 4, 48, None, "bf16", False, 0),
        ("gemma4_dense_small", "infer", 2, 96, None, "bf16", False, 0),
    ]
    for i, (cfg, mode, b, s, o, p, c, l) in enumerate(g4):
        out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p, ckpt=c,
                        lora=l, lora_dropout=0.0, held_out=(i % 3 == 2)))
    for cfg, b, pr, m, prec, ho in (("gemma4_small", 1, 48, 32, "fp32", False), ("gemma4_small", 2, 16, 60, "bf16", False),
                                    ("gemma4_dense_small", 2, 64, 48, "fp32", True),
                                    ("gemma4_dense_small", 1, 96, 24, "bf16", False)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=prec, held_out=ho))
    # issue 31: Gemma 4's MoE block beside the MLP (gemma4_replica.py: Gemma4TextRouter, Gemma4TextExperts through
    # transformers 5's grouped_mm_experts_forward): gemma4_moe_small, the 26B-A4B's kind (16 experts of 32, top 4,
    # the dense MLP of 96 beside them, attention_k_eq_v, layers S, S, F, F). Training, infer, generate; every
    # third held out.
    g4m = [
        ("gemma4_moe_small", "train", 2, 64, "adamw", "fp32", False, 0),
        ("gemma4_moe_small", "train", 2, 64, "adamw", "bf16", False, 0),
        ("gemma4_moe_small", "train", 4, 48, "adamw", "bf16", True, 8),
        ("gemma4_moe_small", "train", 1, 64, "sgd", "fp32", False, 8),
        ("gemma4_moe_small", "train", 3, 48, "adam", "fp32", True, 0),
        ("gemma4_moe_small", "train", 2, 64, "sgd", "bf16", False, 0),
        ("gemma4_moe_small", "infer", 2, 64, None, "fp32", False, 0),
        ("gemma4_moe_small", "infer", 4, 64, None, "bf16", False, 0),
    ]
    for i, (cfg, mode, b, s, o, p, c, l) in enumerate(g4m):
        out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p, ckpt=c,
                        lora=l, lora_dropout=0.0, held_out=(i % 3 == 2)))
    for cfg, b, pr, m, prec, ho in (("gemma4_moe_small", 1, 48, 32, "fp32", False),
                                    ("gemma4_moe_small", 2, 16, 50, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=prec, held_out=ho))
    # issue 31: Gemma 4's E models' kind (gemma4_replica.py): gemma4_e_small, per-layer inputs of 16 over the
    # vocabulary, layers S S F S S F with the last 3 kv-shared (reading layer 1's and layer 2's keys and values
    # through shared_kv_states, the double-wide MLP on them), 1 kv head. Training, infer, generate; every third
    # held out.
    g4e = [
        ("gemma4_e_small", "train", 2, 64, "adamw", "fp32", False, 0),
        ("gemma4_e_small", "train", 2, 64, "adamw", "bf16", False, 0),
        ("gemma4_e_small", "train", 4, 48, "adamw", "bf16", True, 8),
        ("gemma4_e_small", "train", 1, 64, "sgd", "fp32", False, 8),
        ("gemma4_e_small", "train", 2, 64, "adamw", "fp32", True, 0),
        ("gemma4_e_small", "infer", 4, 48, None, "bf16", False, 0),
        ("gemma4_e_small", "infer", 2, 64, None, "fp32", False, 0),
    ]
    for i, (cfg, mode, b, s, o, p, c, l) in enumerate(g4e):
        out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p, ckpt=c,
                        lora=l, lora_dropout=0.0, held_out=(i % 3 == 2)))
    for cfg, b, pr, m, prec, ho in (("gemma4_e_small", 1, 48, 32, "fp32", False),
                                    ("gemma4_e_small", 2, 16, 60, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=prec, held_out=ho))
    # issue 31 item 4: WhisperForConditionalGeneration (whisper_replica.py, modeling_whisper.py @ efa7189c, sdpa):
    # whisper_small (tied, dropouts 0, 300 source positions: 600 mel frames), whisper_v3_small (128 mel bins,
    # untied, dropouts 0.1, 6 encoder and 3 decoder heads, 2 + 3 layers), whisper_30s_small (the real 1500
    # positions: 3000 frames, 30 s); the encoder always reads 2 x max_source_positions frames, seq = target_seq
    # the decoder's tokens (labels in training, decoder_input_ids with --mode infer); training (full, LoRA r=8)
    # and the no_grad forward. Every third held out.
    wh = [
        ("whisper_small", 2, 64, "adamw", "fp32", 0, None),
        ("whisper_small", 2, 64, "adamw", "bf16", 0, None),
        ("whisper_v3_small", 2, 48, "sgd", "fp32", 0, None),
        ("whisper_small", 2, 64, "adamw", "fp32", 8, "q_proj,v_proj"),
        ("whisper_v3_small", 1, 96, "adam", "bf16", 0, None),
        ("whisper_v3_small", 2, 40, "adamw", "bf16", 8, "q_proj,k_proj,v_proj,out_proj"),
        ("whisper_30s_small", 1, 128, "adamw", "fp32", 0, None),
        ("whisper_small", 3, 200, "sgd", "bf16", 8, "q_proj,v_proj"),
        ("whisper_30s_small", 2, 32, "adam", "bf16", 0, None),
    ]
    for i, (cfg, b, t, o, p, l, tg) in enumerate(wh):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=t, target_seq=t, optim=o,
                        precision=p, ckpt=False, lora=l, lora_dropout=0.0, held_out=(i % 3 == 2),
                        **({"lora_targets": tg} if tg else {})))
    for cfg, b, t, p, ho in (("whisper_small", 2, 64, "fp32", False), ("whisper_v3_small", 2, 96, "bf16", False),
                             ("whisper_30s_small", 2, 448, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="infer", batch=b, seq=t, target_seq=t, precision=p,
                        held_out=ho))
    # --grad-ckpt: every WhisperEncoderLayer and WhisperDecoderLayer through _gradient_checkpointing_func (the
    # harness's non-reentrant checkpoint), the decoder's cache off; LoRA r=8 on q_proj,v_proj with PEFT's
    # enable_input_require_grads hook on get_input_embeddings() (the decoder's embed_tokens). Every third held out.
    whc = [
        ("whisper_small", 2, 64, "adamw", "fp32", 0),
        ("whisper_v3_small", 2, 48, "sgd", "bf16", 0),
        ("whisper_30s_small", 1, 64, "adamw", "bf16", 0),
        ("whisper_small", 2, 64, "adamw", "bf16", 8),
        ("whisper_v3_small", 2, 40, "adamw", "fp32", 8),
        ("whisper_small", 1, 64, "adamw", "fp32", 8),
    ]
    for i, (cfg, b, t, o, p, l) in enumerate(whc):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=t, target_seq=t, optim=o,
                        precision=p, ckpt=True, lora=l, lora_dropout=0.0, held_out=(i % 3 == 2),
                        **({"lora_targets": "q_proj,v_proj"} if l else {})))
    # --loss chunked-nll (issue 26): TRL SFTTrainer's default loss_type "chunked_nll" (trl_sft_replica.py,
    # huggingface/trl @f2cd5771 sft_trainer.py _chunked_cross_entropy_loss): the shifted hidden states sorted
    # by label validity, 256-token chunks each under 2.x's non-reentrant checkpoint, fp32 logits per chunk
    # (16-bit: fp32 copies of h and the head weight); the collator's attention_mask resident. 1 to 4 chunks,
    # full and LoRA r=8, with and without layer checkpointing. Every third held out (first run in the suite).
    trl_sft = [
        ("llama_vocab8k", 4, 200, "adamw", "bf16", False, 0),
        ("llama_vocab8k", 4, 200, "adamw", "fp32", False, 0),
        ("qwen2_vocab6k", 3, 170, "adamw", "bf16", True, 0),
        ("qwen2_vocab6k", 2, 96, "adamw", "fp32", False, 8),
        ("llama_small", 8, 128, "sgd", "bf16", True, 0),
        ("llama_vocab8k", 6, 100, "sgd", "fp32", False, 8),
        ("llama_wide", 2, 200, "adamw", "bf16", True, 8),
        ("qwen3_small", 3, 120, "adamw", "bf16", False, 0),
        ("llama_wide", 1, 300, "adamw", "fp32", True, 0),
    ]
    train_cases(out, trl_sft, loss="chunked-nll")
    # --loss chunked-nll --packing: TRL's padding_free collator (packing_replica.py: one row, position_ids,
    # labels -100 at each sequence's start, sft_trainer.py l.502), so n_valid is B (L - 1) of the row's
    # B L - 1 tokens and the last chunk may take masked rows. Every third held out (first run in the suite).
    trl_sft_packed = [
        ("llama_vocab8k", 4, 64, "adamw", "bf16", False, 0),
        ("llama_vocab8k", 5, 100, "adamw", "fp32", True, 0),
        ("llama_vocab8k", 2, 257, "sgd", "bf16", False, 0),
        ("qwen2_vocab6k", 3, 130, "adamw", "bf16", False, 8),
        ("llama_small", 6, 90, "adamw", "fp32", True, 8),
        ("qwen3_small", 4, 150, "adamw", "bf16", True, 0),
    ]
    train_cases(out, trl_sft_packed, loss="chunked-nll", packing=True)
    # --loss grpo (issue 26 item 5): TRL's GRPOTrainer step (grpo_replica.py, huggingface/trl @f2cd5771,
    # trl/trainer/grpo_trainer.py): batch completions of new_tokens sampled after prompt tokens with the KV
    # cache (num_generations per prompt), the reference's no-grad log-probs when beta > 0 (LoRA: adapters
    # disabled; else a frozen copy), the policy's forward and backward with logits_to_keep, the dapo loss.
    # The last two were first run after the model was settled. Every third held out.
    grpo = [
        ("llama_small", 4, 16, 16, "adamw", "fp32", 0, 0.0, 2),
        ("llama_small", 4, 16, 16, "adamw", "bf16", 0, 0.04, 2),
        ("llama_small", 16, 64, 64, "adamw", "fp32", 8, 0.0, 4),
        ("llama_vocab8k", 4, 16, 16, "adamw", "fp32", 0, 0.0, 2),
        ("llama_vocab8k", 8, 24, 40, "adamw", "bf16", 8, 0.04, 4),
        ("qwen2_small", 8, 32, 32, "adamw", "bf16", 8, 0.04, 2),
        ("qwen2_vocab6k", 4, 32, 16, "adamw", "bf16", 8, 0.1, 2),
        ("llama_small", 8, 32, 48, "sgd", "fp32", 0, 0.04, 8),
        ("llama_wide", 4, 32, 32, "adamw", "bf16", 8, 0.0, 2),
    ]
    for i, (cfg, b, pr, nt, o, p, l, beta, g) in enumerate(grpo):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=pr + nt, optim=o, precision=p,
                        ckpt=False, lora=l, lora_dropout=0.0, loss="grpo", prompt=pr, new_tokens=nt, beta=beta,
                        num_generations=g, held_out=(i % 3 == 2)))
    # --loss grpo with gradient checkpointing (GRPOConfig's default): the generation with its cache (trl's
    # _unwrap_model_for_generation turns checkpointing off around generate()), the policy's forward checkpointed
    # per decoder layer, the reference's not. Every third held out.
    grpo_ckpt = [
        ("llama_small", 4, 16, 16, "adamw", "fp32", 0, 0.0, 2),
        ("llama_small", 8, 32, 32, "adamw", "bf16", 8, 0.0, 4),
        ("llama_vocab8k", 4, 16, 16, "adamw", "bf16", 0, 0.04, 2),
        ("qwen2_vocab6k", 4, 32, 32, "adamw", "bf16", 8, 0.04, 2),
        ("llama_wide", 4, 48, 16, "sgd", "fp32", 0, 0.0, 4),
        ("qwen2_small", 8, 24, 40, "adamw", "bf16", 8, 0.1, 8),
    ]
    for i, (cfg, b, pr, nt, o, p, l, beta, g) in enumerate(grpo_ckpt):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=pr + nt, optim=o, precision=p,
                        ckpt=True, lora=l, lora_dropout=0.0, loss="grpo", prompt=pr, new_tokens=nt, beta=beta,
                        num_generations=g, held_out=(i % 3 == 2)))
    # issue 31 item 4: Qwen3.5's vision tower run on images (qwen3vl_tower_replica.py, modular_qwen3_5.py @
    # 8940358a with modeling_qwen3_vl.py @ 68a7b7e2's blocks): smart_resize with the checkpoints' 65536 / 16777216
    # pixels (factor 32), patch_embed, pos_embed interpolated to the grid, float32 2-D rope, sdpa per image, the
    # merger; image_outputs and the cat copy kept to Qwen3_5Model.forward's end; the image tokens before --seq's
    # text. Training (full, LoRA r=8 on q_proj,v_proj) and --mode infer (the no_grad forward); 1280x960 and
    # 1024x768 make the tower's attention the peak. Batch 1: the tower runs a batch's images as one sequence,
    # one image's sdpa after another (refused above batch 1, request.c). Every third held out.
    q35v = [
        ("train", 1, 64, "adamw", "fp32", "224x224", 1, 0),
        ("train", 1, 64, "adamw", "bf16", "224x224", 1, 0),
        ("train", 1, 32, "sgd", "fp32", "640x480", 1, 0),
        ("train", 1, 64, "adamw", "bf16", "448x336", 2, 8),
        ("train", 1, 96, "adamw", "fp32", "320x320", 1, 0),
        ("train", 1, 48, "adamw", "fp32", "512x512", 2, 8),
        ("infer", 1, 64, None, "fp32", "640x480", 1, 0),
        ("infer", 1, 32, None, "fp32", "1280x960", 1, 0),
        ("infer", 1, 32, None, "fp32", "1024x768", 2, 0),
        ("infer", 1, 64, None, "bf16", "448x448", 1, 0),
        ("infer", 1, 32, None, "bf16", "1024x768", 1, 0),
    ]
    for i, (m, b, s, o, p, img, n, l) in enumerate(q35v):
        c = dict(config="configs/qwen3_5_vl_small.json", mode=m, batch=b, seq=s, precision=p, image=img, images=n,
                 experts="grouped_mm", held_out=(i % 3 == 2))
        if m == "train":
            c.update(optim=o, ckpt=False, lora=l, lora_dropout=0.0, lora_targets="q_proj,v_proj" if l else None)
        out.append(c)
    # issue 31 item 4: Qwen3-VL's tower and deepstack run on images (qwen3vl_tower_replica.py build_qwen3_vl,
    # modeling_qwen3_vl.py @ 00709b86): the tower of the Qwen3.5 rows with a deepstack merger after blocks 0 and 2
    # (configs/qwen3_vl_img_small.json), Qwen3VLModel.forward's image path (the cat copy, the deepstack list and
    # visual_pos_masks kept to its end, the merger's output dead after the cat), and Qwen3VLTextModel's
    # _deepstack_process after decoder layers 0 and 1 (clone, the masked gather + feature, index_put_; the loop's
    # layer_outputs alive until the next layer returns). Training (full, LoRA r=8 on q_proj,v_proj, checkpointing)
    # and --mode infer, batch 1. Every third held out.
    q3vi = [
        ("train", 1, 64, "adamw", "fp32", "224x224", 1, 0, False),
        ("train", 1, 64, "adamw", "bf16", "448x336", 2, 0, False),
        ("train", 1, 96, "sgd", "fp32", "640x480", 1, 0, False),
        ("train", 1, 64, "adamw", "fp32", "320x320", 1, 8, False),
        ("train", 1, 128, "adamw", "bf16", "224x224", 1, 0, True),
        ("train", 1, 48, "adam", "fp32", "512x512", 2, 8, False),
        ("infer", 1, 64, None, "fp32", "640x480", 1, 0, False),
        ("infer", 1, 32, None, "fp32", "1280x960", 1, 0, False),
        ("infer", 1, 256, None, "bf16", "224x224", 1, 0, False),
        ("infer", 1, 32, None, "bf16", "1024x768", 2, 0, False),
    ]
    for i, (m, b, s, o, p, img, n, l, ck) in enumerate(q3vi):
        c = dict(config="configs/qwen3_vl_img_small.json", mode=m, batch=b, seq=s, precision=p, image=img, images=n,
                 held_out=(i % 3 == 2))
        if m == "train":
            c.update(optim=o, ckpt=ck, lora=l, lora_dropout=0.0, lora_targets="q_proj,v_proj" if l else None)
        out.append(c)
    # issue 31 item 4: WhisperForConditionalGeneration's generate() (whisper_replica.generate:
    # generation_whisper.py @000dccdb's short-form path, GenerationMixin's encoder-decoder loop as
    # t5_replica.generate, modeling_whisper.py @efa7189c's cached sdpa attention): the features' segment copy,
    # the encoder once, the decoder from --prompt init tokens (1: a config without lang_to_id; 4:
    # <|startoftranscript|>, language, task, <|notimestamps|>) a token a step with EncoderDecoderCache.
    # Every third held out.
    whg = [
        ("whisper_small", 2, 4, 8, "fp32"),
        ("whisper_small", 2, 4, 8, "bf16"),
        ("whisper_v3_small", 2, 1, 16, "fp32"),
        ("whisper_v3_small", 1, 4, 64, "bf16"),
        ("whisper_30s_small", 1, 4, 32, "fp32"),
        ("whisper_small", 4, 2, 96, "fp32"),  # decode-dominated: the self-attention cache grows to 97 tokens
        ("whisper_30s_small", 2, 1, 8, "bf16"),
        ("whisper_small", 1, 4, 2, "fp32"),
        ("whisper_v3_small", 3, 3, 200, "bf16"),
    ]
    for i, (cfg, b, pr, m, prec) in enumerate(whg):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=prec, held_out=(i % 3 == 2)))
    # issue 31: generate() with images (measure_llm.py's generate loop, qwen3vl_tower_replica.py): the processor's
    # input_ids the image tokens then --prompt's text; pixel_values and image_grid_thw held in model_kwargs to the end;
    # prepare_inputs_for_generation (modeling_qwen3_vl.py @00709b86) passes pixel_values at the first step only: the
    # tower, merger and (Qwen3-VL) deepstack run in the prefill, the decoding steps embed their one token. Batch 1
    # (the tower runs a batch's images as one sequence). Qwen3.5 then Qwen3-VL; every third held out.
    vlg = [
        ("qwen3_5_vl_small", 32, 16, "640x480", 1, "fp32"),
        ("qwen3_5_vl_small", 64, 24, "224x224", 1, "bf16"),
        ("qwen3_5_vl_small", 16, 64, "448x336", 2, "fp32"),
        ("qwen3_5_vl_small", 128, 96, "320x320", 1, "fp32"),  # decode-dominated
        ("qwen3_5_vl_small", 8, 200, "224x224", 1, "bf16"),
        ("qwen3_5_vl_small", 32, 8, "1024x768", 1, "bf16"),  # the tower's attention the prefill's peak
        ("qwen3_vl_img_small", 32, 16, "640x480", 1, "fp32"),
        ("qwen3_vl_img_small", 64, 24, "224x224", 1, "bf16"),
        ("qwen3_vl_img_small", 16, 64, "448x336", 2, "fp32"),
        ("qwen3_vl_img_small", 128, 96, "320x320", 1, "fp32"),
        ("qwen3_vl_img_small", 8, 200, "224x224", 1, "bf16"),
        ("qwen3_vl_img_small", 32, 8, "1024x768", 1, "bf16"),
    ]
    for i, (cfg, pr, m, img, n, prec) in enumerate(vlg):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=1, prompt=pr, new_tokens=m,
                        precision=prec, image=img, images=n, held_out=(i % 3 == 2)))
    # --loss grpo --accumulate N (issue 26): gradient_accumulation_steps N with steps_per_generation left to
    # GRPOConfig.__post_init__ (= N): one generation of batch x N completions with the previous step's N
    # buffered slices resident, then N micro-steps on the slices of the new buffer, each forward and backward
    # (the 2nd..N-th into the accumulated gradients), then the optimizer step (grpo_replica.py, huggingface/trl
    # @f2cd5771 grpo_trainer.py _prepare_inputs). beta 0 here (beta > 0 below). All eight were written down
    # before the first was measured; every third held out.
    grpo_accum = [
        ("llama_small", 4, 16, 16, "adamw", "fp32", 0, 2, False, 2),
        ("llama_small", 2, 16, 16, "adamw", "bf16", 0, 4, False, 2),
        ("llama_small", 8, 32, 32, "adamw", "fp32", 8, 4, False, 3),
        ("llama_vocab8k", 4, 16, 24, "adamw", "bf16", 0, 2, True, 2),
        ("qwen2_small", 4, 32, 32, "adamw", "bf16", 8, 8, True, 4),
        ("llama_wide", 4, 24, 16, "sgd", "fp32", 0, 2, True, 3),
        ("qwen2_vocab6k", 6, 16, 32, "adamw", "fp32", 8, 4, False, 2),
        ("llama_small", 3, 16, 16, "adamw", "fp32", 0, 2, False, 4),
    ]
    for i, (cfg, b, pr, nt, o, p, l, g, ck, n) in enumerate(grpo_accum):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=pr + nt, optim=o, precision=p,
                        ckpt=ck, lora=l, lora_dropout=0.0, loss="grpo", prompt=pr, new_tokens=nt, beta=0.0,
                        num_generations=g, accumulate=n, held_out=(i % 3 == 2)))
    # --loss grpo --accumulate N with beta > 0: micro-step 1 also runs the reference's no-grad log-probs over
    # the generation batch of batch x N in chunks of batch (_get_per_token_logps_and_entropies with batch_size =
    # per_device_train_batch_size), micro-steps 2..N do not. All six written down before the first was
    # measured; every third held out.
    grpo_accum_beta = [
        ("llama_small", 4, 16, 16, "adamw", "bf16", 0, 2, False, 2, 0.04),
        ("llama_vocab8k", 4, 16, 16, "adamw", "bf16", 0, 2, True, 2, 0.04),
        ("qwen2_vocab6k", 4, 32, 32, "adamw", "bf16", 8, 2, True, 3, 0.04),
        ("llama_small", 4, 24, 40, "adamw", "fp32", 8, 4, False, 2, 0.1),
        ("llama_vocab8k", 2, 16, 32, "adamw", "bf16", 8, 4, True, 4, 0.04),
        ("qwen2_small", 4, 32, 32, "sgd", "fp32", 0, 4, False, 3, 0.04),
    ]
    for i, (cfg, b, pr, nt, o, p, l, g, ck, n, beta) in enumerate(grpo_accum_beta):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=pr + nt, optim=o, precision=p,
                        ckpt=ck, lora=l, lora_dropout=0.0, loss="grpo", prompt=pr, new_tokens=nt, beta=beta,
                        num_generations=g, accumulate=n, held_out=(i % 3 == 2)))
    # issue 31: Gemma 4 under gradient checkpointing (gemma4_replica.py through reference.CausalLM._layer:
    # shared_kv_states bound in every checkpointed layer's call, as GradientCheckpointingLayer's partial binds
    # it): every layer, every N-th (the kv-shared layers of gemma4_e_small checkpointed or not), torchtitan's
    # op-level SAC, the offloaded activations, LoRA. Every third held out.
    g4c = [
        ("gemma4_small", 2, 64, "adamw", "fp32", 0, {"ckpt_every": 2}),
        ("gemma4_e_small", 2, 64, "adamw", "bf16", 0, {"ckpt_ops": True}),
        ("gemma4_e_small", 2, 64, "adamw", "fp32", 0, {"ckpt_every": 2}),
        ("gemma4_dense_small", 2, 80, "adamw", "bf16", 0, {"act_offload": "sync"}),
        ("gemma4_moe_small", 2, 64, "adamw", "bf16", 0, {"ckpt_every": 3}),
        ("gemma4_e_small", 3, 48, "sgd", "bf16", 16, {}),
        ("gemma4_small", 4, 64, "adam", "bf16", 8, {}),
        ("gemma4_dense_small", 1, 96, "adamw", "fp32", 0, {}),
        ("gemma4_moe_small", 2, 48, "sgd", "fp32", 8, {}),
        ("gemma4_e_small", 4, 32, "adamw", "bf16", 0, {}),
        ("gemma4_small", 3, 48, "adamw", "fp32", 0, {"ckpt_ops": True}),
        ("gemma4_dense_small", 2, 64, "sgd", "bf16", 8, {"ckpt_every": 2}),
    ]
    for i, (cfg, b, s, o, p, l, x) in enumerate(g4c):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p, ckpt=True,
                        lora=l, lora_dropout=0.0, held_out=(i % 3 == 2), **x))
    # Gemma 2 at transformers' current default, sdpa (from 4.47: Gemma2PreTrainedModel's
    # _check_and_enable_sdpa override, which swapped it for eager in 4.45-4.46, is gone; src/policy/release.c
    # VC_TF_GEMMA2_EAGER): measure_llm.py --attn sdpa (reference.sdpa_attention_forward, no softcap). Every
    # sequence shorter than sliding_window (gemma2_w128: 128; gemma2_small: 16), where masking_utils'
    # _ignore_causal_mask_sdpa skips both layer types' masks (kv_length < local_attention_size): is_causal, no
    # mask, as the harness runs sdpa. Every third held out.
    g2s = [
        ("gemma2_w128", 4, 96, "adamw", "fp32", False, 0),
        ("gemma2_w128", 2, 120, "adamw", "bf16", True, 0),
        ("gemma2_w128", 4, 64, "sgd", "bf16", False, 8),
        ("gemma2_small", 8, 12, "adamw", "fp32", False, 0),
        ("gemma2_w128", 3, 112, "adam", "bf16", False, 0),
        ("gemma2_w128", 2, 100, "adamw", "fp32", True, 8),
    ]
    for i, (cfg, b, s, o, p, c, l) in enumerate(g2s):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p, ckpt=c,
                        lora=l, lora_dropout=0.0, attn="sdpa", held_out=(i % 3 == 2)))
    # issue 31 item 4: Qwen2.5-VL's tower run without grad (qwen25vl_replica.py, modeling_qwen2_5_vl.py @ efa7189c):
    # --mode infer's forward and generate() with the images (prepare_inputs_for_generation passes pixel_values
    # while cache_position[0] == 0: the tower and merger in the prefill only; pixel_values held to the end).
    # inputs_embeds = embed_tokens(input_ids) before the tower, the blocks' loop rebinding hidden_states, the
    # vision attention's [1, n, n] masks per block. Batch 1 (the tower runs a batch's images as one sequence).
    # Every third held out.
    q25i = [
        ("infer", 64, None, "fp32", "640x480", 1),
        ("infer", 64, None, "fp32", "1280x960", 1),  # the tower's attention: 6,256 patches
        ("infer", 256, None, "bf16", "224x224", 1),  # the language model's attention the peak
        ("infer", 32, None, "bf16", "1024x768", 2),
        ("infer", 128, None, "fp32", "448x336", 1),
        ("infer", 64, None, "bf16", "320x320", 2),
        ("infer", 32, None, "fp32", "224x224", 1),
        ("generate", 32, 8, "fp32", "224x224", 1),
        ("generate", 64, 16, "bf16", "448x336", 1),
        ("generate", 16, 8, "fp32", "640x480", 1),
        ("generate", 32, 16, "bf16", "320x320", 2),
    ]
    for i, (m, s, nt, p, img, n) in enumerate(q25i):
        c = dict(config="configs/qwen2_5_vl_small.json", mode=m, batch=1, precision=p, image=img, images=n,
                 held_out=(i % 3 == 2))
        if m == "infer":
            c.update(seq=s)
        else:
            c.update(prompt=s, new_tokens=nt)
        out.append(c)
    # issue 31 item 4: Gemma 3's generate() with an image (gemma3vl_replica.py _generate_step, modeling_gemma3.py
    # @ 0018aa64): Gemma3ForConditionalGeneration.prepare_inputs_for_generation passes pixel_values while
    # cache_position[0] == 0 (SigLIP, the projector's pooling and masked_scatter in the prefill only; pixel_values
    # and token_type_ids held in model_kwargs, token_type_ids grown a token a step); the prefill's token_type_ids
    # or-mask (two [B, 1, P, P] bool masks) and the language model's sdpa with it; every decoding step text only.
    # Prompts within sliding_window (4096). SigLIP runs a batch's images as a batch dimension: batch 2 and 3 too.
    # gemma3_vl448_small: 1,024 patches, the tower's attention the prefill's peak. Every third held out.
    g3g = [
        ("gemma3_vl_small", 1, 16, 8, "fp32", "640x480"),
        ("gemma3_vl_small", 1, 64, 16, "bf16", "224x224"),
        ("gemma3_vl448_small", 1, 32, 8, "fp32", "1280x720"),
        ("gemma3_vl_small", 2, 32, 16, "fp32", "640x480"),
        ("gemma3_vl448_small", 2, 16, 8, "bf16", "640x480"),
        ("gemma3_vl_small", 1, 8, 64, "fp32", "100x100"),  # decode-dominated: the cache grows to 139 tokens
        ("gemma3_vl448_small", 1, 128, 4, "bf16", "448x448"),
        ("gemma3_vl_small", 3, 48, 24, "bf16", "320x240"),
        ("gemma3_vl_small", 1, 200, 32, "fp32", "224x224"),  # the language model's prefill larger than the tower's
    ]
    for i, (cfg, b, pr, nt, p, img) in enumerate(g3g):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, precision=p, prompt=pr,
                        new_tokens=nt, image=img, images=1, held_out=(i % 3 == 2)))
    # issue 31: the sliding-window mask under sdpa past the window (sliding_replica.py, masking_utils.py @ 00c4411c:
    # create_sliding_window_causal_mask materialises a bool [B, 1, L, S] mask once the kv length reaches
    # sliding_window; sdpa_attention_forward then runs repeat_kv and no is_causal; SDPA converts the mask to the
    # query's dtype). mistral_w32_small: every layer sliding (window 32, 8 heads over 2 kv heads); qwen2_sw40_small:
    # use_sliding_window, layers from max_window_layers 1 on (window 40); gemma2_small at sdpa (window 16, every
    # other layer); gemma3_small (window 64, 2 of 3 layers). Training, then generation (prefills past or at the
    # window, decoding steps with the sliding cache full). Every third held out.
    swt = [
        ("mistral_w32_small", 2, 128, "adamw", "fp32", False, 0, None),
        ("mistral_w32_small", 2, 96, "sgd", "bf16", True, 0, None),
        ("mistral_w32_small", 1, 200, "adamw", "bf16", False, 8, None),
        ("qwen2_sw40_small", 2, 128, "adamw", "fp32", False, 0, None),
        ("qwen2_sw40_small", 4, 40, "sgd", "bf16", False, 0, None),  # a kv length of exactly the window
        ("qwen2_sw40_small", 1, 160, "adamw", "fp32", True, 8, None),
        ("gemma2_small", 2, 64, "adamw", "fp32", False, 0, "sdpa"),
        ("gemma2_small", 2, 48, "sgd", "bf16", True, 8, "sdpa"),
        ("gemma3_small", 2, 128, "adamw", "fp32", False, 0, None),
    ]
    for i, (cfg, b, s, o, p, c, l, at) in enumerate(swt):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p, ckpt=c,
                        lora=l, lora_dropout=0.0, held_out=(i % 3 == 2), **({"attn": at} if at else {})))
    swg = [
        ("mistral_w32_small", 2, 48, 20, "fp32"),
        ("mistral_w32_small", 1, 32, 24, "bf16"),  # the prefill at exactly the window
        ("qwen2_sw40_small", 1, 64, 12, "bf16"),
        ("qwen2_sw40_small", 2, 24, 32, "fp32"),  # the prefill within the window, the decoding past it
        ("gemma3_small", 1, 96, 16, "fp32"),
        ("gemma3_small", 2, 128, 8, "bf16"),
    ]
    for i, (cfg, b, pr, m, p) in enumerate(swg):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=p, held_out=(i % 3 == 2)))
    # issue 31: DeepSeek-V2 (mla_replica.py: DeepseekV2Attention's complex rotation on DeepseekV2RotaryEmbedding's
    # freqs_cis, DeepseekV2Moe's softmax routing over stacked experts, modeling_deepseek_v2.py @ 0233e509).
    # deepseek_v2_small: q_lora_rank 48, 16 experts in 4 groups, topk_method group_limited_greedy (top-2 groups,
    # top-4), routed_scaling_factor 16, one dense layer; deepseek_v2_lite_small: q_lora_rank null (q_proj),
    # greedy, 2 shared experts, two dense layers. Train (LoRA on the Linears vramcalc names the same),
    # generate (its prefill is the no_grad forward; DynamicCache's full per-head K/V). Every third held out.
    ds2 = [
        ("train", "deepseek_v2_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "deepseek_v2_small", 2, 64, "adamw", "bf16", False, 0),
        ("train", "deepseek_v2_small", 2, 64, "adamw", "bf16", True, 0),
        ("train", "deepseek_v2_small", 2, 96, "adamw", "bf16", False, 8),
        ("train", "deepseek_v2_lite_small", 3, 48, "sgd", "fp32", False, 0),
        ("train", "deepseek_v2_lite_small", 1, 128, "adam", "bf16", True, 8),
        ("generate", "deepseek_v2_small", 1, 64, 16, "fp32", False, 0),
        ("generate", "deepseek_v2_small", 2, 32, 24, "bf16", False, 0),
        ("generate", "deepseek_v2_lite_small", 2, 96, 8, "fp32", False, 0),
        ("train", "deepseek_v2_lite_small", 2, 64, "adamw", "fp32", False, 8),
        ("generate", "deepseek_v2_lite_small", 1, 48, 32, "bf16", False, 0),
        ("train", "deepseek_v2_small", 4, 32, "sgd", "fp32", True, 0),
    ]
    for i, (mode, cfg, b, s, o, p, c, l) in enumerate(ds2):
        if mode == "train":
            out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p,
                            ckpt=c, lora=l, lora_targets=mla_targets if l else None, experts="grouped_mm",
                            held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, experts="grouped_mm", held_out=(i % 3 == 2)))
    # Near-llama families (issue 31, near_llama_replica.py): glm4_small (Glm4DecoderLayer's four norms, q/k/v bias,
    # interleaved partial rotary of 8 of 16 dims, fused gate_up_proj; 8 heads over 2 kv heads). Training (full,
    # LoRA on q_proj / v_proj, checkpointed), the no_grad forward (--mode infer) and generation. Every third held out.
    nl = [
        ("glm4_small", "train", 2, 64, "adamw", "fp32", False, 0),
        ("glm4_small", "train", 2, 96, "adamw", "bf16", False, 0),
        ("glm4_small", "train", 1, 128, "sgd", "bf16", True, 8),
        ("glm4_small", "train", 4, 48, "adamw", "bf16", False, 8),
        ("glm4_small", "infer", 2, 128, None, "bf16", False, 0),
        ("glm4_small", "infer", 1, 256, None, "fp32", False, 0),
        ("glm4_small", "generate", 2, 64, 16, "fp32", False, 0),
        ("glm4_small", "generate", 1, 128, 8, "bf16", False, 0),
        ("glm4_small", "generate", 4, 32, 12, "bf16", False, 0),
        # olmo3_small: Olmo3DecoderLayer (norms after the sublayers, whole-projection q/k norms, Olmo3RMSNorm's float32
        # product), 3 sliding layers (window 32) then a full one, 8 heads over 2 kv heads: sequences past the window
        ("olmo3_small", "train", 2, 64, "adamw", "fp32", False, 0),
        ("olmo3_small", "train", 2, 96, "adamw", "bf16", False, 0),
        ("olmo3_small", "train", 1, 128, "sgd", "bf16", True, 8),
        ("olmo3_small", "train", 4, 48, "adamw", "bf16", False, 8),
        ("olmo3_small", "infer", 2, 128, None, "bf16", False, 0),
        ("olmo3_small", "infer", 1, 256, None, "fp32", False, 0),
        ("olmo3_small", "generate", 2, 64, 16, "fp32", False, 0),
        ("olmo3_small", "generate", 1, 128, 8, "bf16", False, 0),
        ("olmo3_small", "generate", 4, 24, 16, "bf16", False, 0),
        # starcoder2_small: Starcoder2DecoderLayer (biased LayerNorms, q/k/v/o and c_fc / c_proj with bias, tanh GELU),
        # the three dropouts at 0.1 (StarCoder2-15B's), every layer sliding (window 32), 8 heads over 2 kv heads
        ("starcoder2_small", "train", 2, 64, "adamw", "fp32", False, 0),
        ("starcoder2_small", "train", 2, 96, "adamw", "bf16", False, 0),
        ("starcoder2_small", "train", 1, 128, "sgd", "bf16", True, 8),
        ("starcoder2_small", "train", 4, 48, "adamw", "bf16", False, 8),
        ("starcoder2_small", "infer", 2, 128, None, "bf16", False, 0),
        ("starcoder2_small", "infer", 1, 256, None, "fp32", False, 0),
        ("starcoder2_small", "generate", 2, 64, 16, "fp32", False, 0),
        ("starcoder2_small", "generate", 1, 128, 8, "bf16", False, 0),
        ("starcoder2_small", "generate", 4, 24, 16, "bf16", False, 0),
    ]
    for i, (cfg, mode, b, s, o, p, c, l) in enumerate(nl):
        if mode == "train":
            out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p, ckpt=c,
                            lora=l, lora_dropout=0.0, held_out=(i % 3 == 2)))
        elif mode == "infer":
            out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, precision=p,
                            held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, prompt=s, new_tokens=o, precision=p,
                            held_out=(i % 3 == 2)))
    # issue 31: Qwen3-VL-MoE on text alone (qwen3vl_replica.py, modeling_qwen3_vl_moe.py @0142cff2): Qwen3-VL's
    # decoder with interleaved MRoPE and Qwen3VLMoeTextSparseMoeBlock (16 stacked experts, top-4, always
    # renormalized; layer 1 dense by mlp_only_layers) through transformers 5's grouped_mm, the tower frozen;
    # training (full, LoRA r=8 on q_proj,v_proj, checkpointing), inference and generate. Every third held out.
    q3vm = [
        ("qwen3_vl_moe_small", 2, 64, "adamw", "fp32", False, 0),
        ("qwen3_vl_moe_small", 2, 128, "adamw", "bf16", True, 0),
        ("qwen3_vl_moe_small", 4, 96, "sgd", "bf16", False, 0),
        ("qwen3_vl_moe_small", 2, 64, "adamw", "fp32", False, 8),
        ("qwen3_vl_moe_small", 1, 200, "adamw", "bf16", True, 8),
        ("qwen3_vl_moe_small", 3, 80, "adam", "fp32", False, 0),
    ]
    train_cases(out, q3vm, experts="grouped_mm", lora_dropout=0.0, lora_targets="q_proj,v_proj")
    for i, (b, s, p) in enumerate(((2, 128, "fp32"), (4, 64, "bf16"), (1, 256, "bf16"))):
        out.append(dict(config="configs/qwen3_vl_moe_small.json", mode="infer", batch=b, seq=s, precision=p,
                        experts="grouped_mm", held_out=(i % 3 == 2)))
    for b, pr, m, prec, ho in ((1, 64, 16, "fp32", False), (2, 32, 24, "bf16", True)):
        out.append(dict(config="configs/qwen3_vl_moe_small.json", mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=prec, experts="grouped_mm", held_out=ho))
    # the same on images (qwen3vl_tower_replica.py build_qwen3_vl on qwen3vl_replica.py's MoE language model):
    # qwen3_vl_img_small's tower and deepstack (after blocks 0 and 2, so after decoder layers 0 and 1; layer 1
    # dense) before the MoE layers; training, LoRA, --mode infer and generate, batch 1. Every third held out.
    q3vmi = [
        ("train", 1, 64, "adamw", "fp32", "224x224", 1, 0, False),
        ("train", 1, 64, "adamw", "bf16", "448x336", 2, 8, False),
        ("train", 1, 96, "sgd", "bf16", "640x480", 1, 0, True),
        ("infer", 1, 64, None, "fp32", "640x480", 1, 0, False),
        ("infer", 1, 32, None, "bf16", "1024x768", 1, 0, False),
    ]
    for i, (m, b, s, o, p, img, n, l, ck) in enumerate(q3vmi):
        c = dict(config="configs/qwen3_vl_moe_img_small.json", mode=m, batch=b, seq=s, precision=p, image=img, images=n,
                 experts="grouped_mm", held_out=(i % 3 == 2))
        if m == "train":
            c.update(optim=o, ckpt=ck, lora=l, lora_dropout=0.0, lora_targets="q_proj,v_proj" if l else None)
        out.append(c)
    for pr, m, img, prec, ho in ((32, 16, "640x480", "fp32", False), (64, 24, "224x224", "bf16", True)):
        out.append(dict(config="configs/qwen3_vl_moe_img_small.json", mode="generate", batch=1, prompt=pr, new_tokens=m,
                        precision=prec, image=img, images=1, experts="grouped_mm", held_out=ho))
    # issue 31 item 4: MPNetForSequenceClassification (mpnet_replica.py, modeling_mpnet.py @ 00099b9f): the eager
    # attention with the encoder's shared relative position bias, training (full and LoRA r=8 on q,v: PEFT's
    # mapping has no mpnet) and --mode infer; mpnet_nodrop_small without dropout, 40 buckets (32 used) and 3 labels.
    # MPNet does not support gradient checkpointing. Every third held out.
    mp = [
        ("mpnet_small", "train", 2, 128, "adamw", "fp32", 0),
        ("mpnet_small", "train", 4, 128, "sgd", "bf16", 0),
        ("mpnet_small", "infer", 4, 256, None, "fp32", 0),
        ("mpnet_small", "infer", 2, 128, None, "bf16", 0),
        ("mpnet_small", "train", 2, 128, "adamw", "fp32", 8),
        ("mpnet_nodrop_small", "train", 2, 96, "adamw", "bf16", 0),
        ("mpnet_nodrop_small", "train", 3, 64, "adam", "fp32", 8),
        ("mpnet_nodrop_small", "infer", 1, 200, None, "fp32", 0),
        ("mpnet_small", "train", 1, 512, "adamw", "bf16", 8),
        ("mpnet_nodrop_small", "infer", 4, 100, None, "bf16", 0),
    ]
    for i, (cfg, mode, b, s, o, p, l) in enumerate(mp):
        out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, optim=o, precision=p, ckpt=False,
                        lora=l, **({"lora_dropout": 0.0, "lora_targets": "q,v"} if l else {}), held_out=(i % 3 == 2)))
    # issue 31 item 4: MT5ForConditionalGeneration (modeling_mt5.py copies modeling_t5.py's modules: t5_replica.py
    # on model_type mt5): mt5_small, gated-gelu, untied lm_head, 2 + 2 blocks of 4 heads; training (full, LoRA q,v,
    # every T5Block checkpointed), infer, generate. Every third held out.
    m5 = [
        ("train", 2, 128, 64, "adamw", "fp32", False, 0),
        ("train", 4, 96, 48, "sgd", "bf16", False, 0),
        ("train", 2, 128, 96, "adamw", "bf16", False, 8),
        ("train", 2, 160, 64, "adamw", "fp32", True, 0),
        ("infer", 4, 200, 50, None, "fp32", False, 0),
        ("infer", 2, 128, 128, None, "bf16", False, 0),
    ]
    for i, (mode, b, s, t, o, p, c, l) in enumerate(m5):
        out.append(dict(config="configs/mt5_small.json", mode=mode, batch=b, seq=s, target_seq=t, optim=o, precision=p,
                        ckpt=c, lora=l, lora_dropout=0.0, held_out=(i % 3 == 2)))
    for i, (b, pr, m, p) in enumerate(((2, 96, 16, "fp32"), (1, 64, 32, "bf16"), (3, 128, 8, "fp32"))):
        out.append(dict(config="configs/mt5_small.json", mode="generate", batch=b, prompt=pr, new_tokens=m, precision=p,
                        held_out=(i == 2)))
    # issue 31 item 4: BartForConditionalGeneration (bart_replica.py, modeling_bart.py @ efa7189c: BartSdpaAttention,
    # post-LN layers, learned positions with offset 2, layernorm_embedding, final_logits_bias): bart_small (tied,
    # dropouts 0.1) and bart_nodrop_small (untied, scale_embedding, no dropout, 4 encoder / 6 decoder heads);
    # training (full, LoRA q_proj,v_proj, every layer checkpointed) and infer (decoder_input_ids, use_cache).
    # Every third held out.
    bt = [
        ("bart_small", "train", 2, 128, 64, "adamw", "fp32", False, 0),
        ("bart_small", "train", 4, 96, 48, "sgd", "bf16", False, 0),
        ("bart_small", "infer", 4, 200, 50, None, "fp32", False, 0),
        ("bart_small", "train", 2, 128, 96, "adamw", "bf16", False, 8),
        ("bart_small", "train", 2, 160, 64, "adamw", "fp32", True, 0),
        ("bart_small", "train", 2, 128, 64, "adamw", "fp32", True, 8),
        ("bart_nodrop_small", "train", 2, 96, 80, "adamw", "fp32", False, 0),
        ("bart_nodrop_small", "infer", 3, 200, 40, None, "bf16", False, 0),
        ("bart_nodrop_small", "train", 2, 128, 64, "sgd", "bf16", True, 0),
        ("bart_nodrop_small", "train", 1, 300, 100, "adamw", "fp32", False, 8),
        ("bart_small", "infer", 2, 128, 128, None, "bf16", False, 0),
        ("bart_small", "train", 2, 128, 64, "adamw", "fp32", False, -8),  # LoRA on fc2 alone: the attention runs frozen
    ]
    for i, (cfg, mode, b, s, t, o, p, c, l) in enumerate(bt):
        out.append(dict(config="configs/%s.json" % cfg, mode=mode, batch=b, seq=s, target_seq=t, optim=o, precision=p,
                        ckpt=c, lora=abs(l), **({"lora_dropout": 0.0, "lora_targets": "q_proj,v_proj" if l > 0 else "fc2"}
                                                 if l else {}),
                        held_out=(i % 3 == 2)))
    # issue 31: Mistral 3 on text alone (mistral3_replica.py; modeling_mistral3.py @00dcc6dd, modeling_pixtral.py
    # @0233e509): Mistral's decoder under text_config, the Pixtral tower and Mistral3MultiModalProjector frozen and
    # never run; training (full, LoRA r=8 on q_proj,v_proj, checkpointing) and generate. Every third held out.
    m3 = [
        ("mistral3_small", 2, 64, "adamw", "fp32", False, 0),
        ("mistral3_small", 2, 128, "adamw", "bf16", True, 0),
        ("mistral3_small", 4, 96, "sgd", "bf16", False, 0),
        ("mistral3_small", 2, 64, "adamw", "fp32", False, 8),
        ("mistral3_small", 1, 200, "adamw", "bf16", True, 8),
        ("mistral3_small", 3, 80, "adam", "fp32", False, 0),
    ]
    train_cases(out, m3, lora_dropout=0.0, lora_targets="q_proj,v_proj")
    for cfg, b, p, m, prec, ho in (("mistral3_small", 1, 64, 16, "fp32", False), ("mistral3_small", 2, 48, 24, "bf16", True)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=p, new_tokens=m,
                        precision=prec, held_out=ho))
    # issue 31: Ministral (modeling_ministral.py @3edd469d; measure_llm.py: reference.py's Mistral modules with the
    # config's layer_types): a full layer then three sliding ones (window 32), sequences past the window; training
    # (full, LoRA r=8, checkpointing) and generate with the prompt or the decoding past it. Every third held out.
    mn = [
        ("ministral_small", 2, 64, "adamw", "fp32", False, 0),
        ("ministral_small", 2, 96, "adamw", "bf16", True, 0),
        ("ministral_small", 4, 48, "sgd", "bf16", False, 0),
        ("ministral_small", 2, 64, "adamw", "fp32", False, 8),
        ("ministral_small", 1, 160, "adamw", "bf16", True, 8),
        ("ministral_small", 3, 80, "adam", "fp32", False, 0),
    ]
    train_cases(out, mn, lora_dropout=0.0, lora_targets="q_proj,v_proj")
    for cfg, b, p, m, prec, ho in (("ministral_small", 1, 48, 24, "fp32", False), ("ministral_small", 2, 24, 32, "bf16", True),
                                   ("ministral_small", 1, 96, 8, "bf16", False)):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=p, new_tokens=m,
                        precision=prec, held_out=ho))
    # issue 31: Mistral 3 with images (mistral3_replica.py build_image: PixtralVisionModel.forward @0233e509 and
    # Mistral3Model's image path @00dcc6dd, the tower and projector run frozen): training (full; --lora targets
    # the language model's q_proj / v_proj only where PEFT's names reach the tower too: not measured), --mode
    # infer and generate, one and several images per sample, batch 1 (the sample's images are one sequence).
    for i, (mode, img, n, s_, prec) in enumerate([
            ("train", "224x168", 1, 64, "fp32"), ("train", "224x168", 1, 64, "bf16"), ("train", "300x200", 2, 48, "fp32"),
            ("infer", "224x168", 1, 64, "fp32"), ("infer", "224x224", 1, 64, "bf16"), ("infer", "112x84", 3, 48, "fp32"),
            ("generate", "224x168", 1, 48, "fp32"), ("generate", "224x224", 1, 32, "bf16"), ("generate", "84x112", 2, 40, "fp32")]):
        c = dict(config="configs/mistral3_small.json", mode=mode, batch=1, precision=prec, image=img, images=n,
                 held_out=(i % 3 == 2))
        if mode == "generate":
            c.update(prompt=s_, new_tokens=16 if prec == "fp32" else 24)
        else:
            c.update(seq=s_, optim="adamw", ckpt=False, lora=0)
        out.append(c)
    # LoRA with an image: self_attn.q_proj / self_attn.v_proj (PEFT's dotted targets, reference.apply_lora) reach the
    # language model alone; q_proj / v_proj also wrap the tower's, whose adapters' backward through the tower is not
    # modelled (measured.json's known_gap on that case)
    for i, (img, prec, tg) in enumerate([("224x168", "bf16", "self_attn.q_proj,self_attn.v_proj"),
                                         ("224x224", "fp32", "self_attn.q_proj,self_attn.v_proj"),
                                         ("224x168", "bf16", "q_proj,v_proj")]):
        out.append(dict(config="configs/mistral3_small.json", mode="train", batch=1, seq=64, optim="adamw", precision=prec,
                        ckpt=False, lora=8, lora_dropout=0.0, lora_targets=tg, image=img, images=1, held_out=(i == 1)))
    # MiniMax-M2 (issue 31) as transformers 5 runs it (minimax_replica.py, modeling_minimax_m2.py @ 0205eec1):
    # minimax_m2_small, 16 experts top-4 with MiniMaxM2TopKRouter's sigmoid routing and e_score_correction_bias,
    # stacked experts through grouped_mm, q_norm / k_norm over all heads, rotary_dim 8 of head_dim 16. Train
    # (full, --grad-ckpt, LoRA on q_proj / v_proj), then generate. Every third held out.
    mm = [
        ("train", 2, 64, "adamw", "fp32", False, 0),
        ("train", 2, 64, "adamw", "bf16", False, 0),
        ("train", 2, 96, "adamw", "bf16", True, 0),
        ("train", 2, 64, "adamw", "fp32", False, 8),
        ("train", 3, 48, "sgd", "bf16", False, 8),
        ("train", 1, 128, "adam", "fp32", True, 0),
        ("generate", 2, 32, 12, "fp32", False, 0),
        ("generate", 1, 64, 8, "bf16", False, 0),
        ("generate", 2, 96, 6, "fp32", False, 0),
    ]
    for i, (mode, b, s, o, p, c, l) in enumerate(mm):
        if mode == "train":
            out.append(dict(config="configs/minimax_m2_small.json", mode=mode, batch=b, seq=s, optim=o, precision=p,
                            ckpt=c, lora=l, lora_targets="q_proj,v_proj" if l else None, experts="grouped_mm",
                            held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/minimax_m2_small.json", mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, experts="grouped_mm", held_out=(i % 3 == 2)))
    # Phi-3.5-MoE (issue 31) as transformers 5 runs it (phimoe_replica.py, modeling_phimoe.py @ 0233e509): phimoe_small,
    # 16 experts, sparsemixer's two picks (Gumbel sampling, PhimoeMultiplier's saved gates in training), the input
    # jitter of the block and the router (input_jitter_noise 0.01), biased q/k/v/o and lm_head, nn.LayerNorm layer
    # norms and final norm. Train (full, --grad-ckpt, LoRA on q_proj / v_proj), then generate. Every third held out.
    pm = [
        ("train", 2, 64, "adamw", "fp32", False, 0),
        ("train", 2, 64, "sgd", "bf16", False, 0),
        ("train", 2, 256, "sgd", "bf16", True, 0),
        ("train", 4, 256, "sgd", "fp32", False, 0),
        ("train", 2, 192, "adamw", "bf16", False, 8),
        ("train", 2, 64, "adamw", "fp32", False, 8),
        ("generate", 2, 32, 12, "fp32", False, 0),
        ("generate", 1, 64, 8, "bf16", False, 0),
        ("generate", 2, 96, 6, "fp32", False, 0),
    ]
    for i, (mode, b, s, o, p, c, l) in enumerate(pm):
        if mode == "train":
            out.append(dict(config="configs/phimoe_small.json", mode=mode, batch=b, seq=s, optim=o, precision=p,
                            ckpt=c, lora=l, lora_targets="q_proj,v_proj" if l else None, experts="grouped_mm",
                            held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/phimoe_small.json", mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, experts="grouped_mm", held_out=(i % 3 == 2)))
    # Granite 3.x MoE (issue 31) as transformers runs it (granitemoe_replica.py, modular_granitemoe.py @ 94cb76e8 with
    # JetMoe's top-k gating and ParallelExperts loop): granitemoe_small, 8 experts top-4, granite's multipliers
    # (embedding 12, residual 0.22, logits 6, attention 0.0625), tied embeddings. Train (full, --grad-ckpt, LoRA on
    # q_proj / v_proj), then generate. Every third held out. (measure_llm.py's --experts is not read for it.)
    gm = [
        ("train", 2, 64, "sgd", "fp32", False, 0),
        ("train", 2, 64, "adamw", "bf16", False, 0),
        ("train", 2, 128, "sgd", "bf16", True, 0),
        ("train", 4, 128, "sgd", "fp32", False, 0),
        ("train", 2, 96, "adamw", "bf16", False, 8),
        ("train", 2, 64, "sgd", "fp32", False, 8),
        ("generate", 2, 32, 4, "fp32", False, 0),
        ("generate", 1, 64, 8, "bf16", False, 0),
        ("generate", 2, 96, 6, "fp32", False, 0),
    ]
    for i, (mode, b, s, o, p, c, l) in enumerate(gm):
        if mode == "train":
            out.append(dict(config="configs/granitemoe_small.json", mode=mode, batch=b, seq=s, optim=o, precision=p,
                            ckpt=c, lora=l, lora_targets="q_proj,v_proj" if l else None, experts="grouped_mm",
                            held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/granitemoe_small.json", mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, experts="grouped_mm", held_out=(i % 3 == 2)))
    # GraniteMoeShared (issue 31, granitemoe_replica.py GraniteMoeSharedMLP, modular_granitemoeshared.py @ a878fc03):
    # granitemoeshared_small, granitemoe_small with a shared MLP of 48 beside the experts. Every third held out.
    gs = [
        ("train", 2, 64, "sgd", "fp32", False, 0),
        ("train", 2, 96, "adamw", "bf16", False, 0),
        ("train", 2, 128, "sgd", "bf16", True, 0),
        ("train", 2, 96, "adamw", "bf16", False, 8),
        ("generate", 2, 32, 4, "fp32", False, 0),
        ("generate", 1, 64, 8, "bf16", False, 0),
    ]
    for i, (mode, b, s, o, p, c, l) in enumerate(gs):
        if mode == "train":
            out.append(dict(config="configs/granitemoeshared_small.json", mode=mode, batch=b, seq=s, optim=o,
                            precision=p, ckpt=c, lora=l, lora_targets="q_proj,v_proj" if l else None,
                            experts="grouped_mm", held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/granitemoeshared_small.json", mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, experts="grouped_mm", held_out=(i % 3 == 2)))
    # issue 31: IBM Granite 4.0-H (granitemoehybrid, granite4_replica.py): Mamba2 layers through the mamba_ssm
    # kernels' allocations (mamba_split_conv1d_scan_combined in training, mamba_chunk_scan_combined and the
    # decoding kernels otherwise), NoPE attention, GraniteMoeHybridMoE's per-expert loop beside shared_mlp
    # (granitemoehybrid_small: 4 experts top-2, 2 groups, chunk 16) and the dense, rope variant
    # (granitemoehybrid_dense_small). Training (LoRA on in_proj / q_proj / v_proj, checkpointing), inference,
    # generate with HybridMambaAttentionDynamicCache; sequences off the chunk size too. Every third held out.
    g4t = [
        ("granitemoehybrid_small", 2, 64, "adamw", "fp32", False, 0),
        ("granitemoehybrid_small", 2, 40, "adamw", "bf16", False, 0),
        ("granitemoehybrid_small", 1, 96, "sgd", "fp32", True, 0),
        ("granitemoehybrid_small", 2, 64, "adamw", "bf16", False, 8),
        ("granitemoehybrid_dense_small", 2, 64, "adamw", "fp32", False, 0),
        ("granitemoehybrid_dense_small", 4, 48, "adam", "bf16", True, 0),
        ("granitemoehybrid_dense_small", 1, 128, "adamw", "fp32", False, 8),
    ]
    for i, (cfg, b, s, o, p, c, l) in enumerate(g4t):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim=o, precision=p, ckpt=c,
                        lora=l, lora_dropout=0.0, held_out=(i % 3 == 2),
                        **({"lora_targets": "in_proj,q_proj,v_proj"} if l else {})))
    g4i = [("granitemoehybrid_small", 2, 64, "fp32"), ("granitemoehybrid_dense_small", 2, 100, "bf16"),
           ("granitemoehybrid_small", 4, 32, "bf16")]
    for i, (cfg, b, s, p) in enumerate(g4i):
        out.append(dict(config="configs/%s.json" % cfg, mode="infer", batch=b, seq=s, precision=p, held_out=(i % 3 == 2)))
    g4g = [("granitemoehybrid_small", 1, 40, 8, "fp32"), ("granitemoehybrid_dense_small", 2, 64, 12, "bf16"),
           ("granitemoehybrid_small", 2, 24, 16, "bf16")]
    for i, (cfg, b, pr, m, p) in enumerate(g4g):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=pr, new_tokens=m,
                        precision=p, held_out=(i % 3 == 2)))
    # issue 31: UMT5ForConditionalGeneration (t5_replica.py's umt5 flag, modeling_umt5.py @ de0f5d1e): umt5_small
    # (mt5_small's sizes), a relative_attention_bias in every block's self-attention, each attention's own bias;
    # training (full, LoRA q,v: PEFT has no umt5 default, every UMT5Block checkpointed), infer, generate. Every
    # third held out.
    u5 = [
        ("train", 2, 128, 64, "adamw", "fp32", False, 0),
        ("train", 4, 96, 48, "sgd", "bf16", False, 0),
        ("train", 2, 128, 96, "adamw", "bf16", False, 8),
        ("train", 2, 160, 64, "adamw", "fp32", True, 0),
        ("train", 2, 100, 40, "adamw", "bf16", True, 0),
        ("infer", 4, 200, 50, None, "fp32", False, 0),
        ("infer", 2, 128, 128, None, "bf16", False, 0),
    ]
    for i, (mode, b, s, t, o, p, c, l) in enumerate(u5):
        out.append(dict(config="configs/umt5_small.json", mode=mode, batch=b, seq=s, target_seq=t, optim=o, precision=p,
                        ckpt=c, lora=l, lora_dropout=0.0, held_out=(i % 3 == 2), **({"lora_targets": "q,v"} if l else {})))
    for i, (b, pr, m, p) in enumerate(((2, 96, 16, "fp32"), (1, 64, 32, "bf16"), (3, 128, 8, "fp32"))):
        out.append(dict(config="configs/umt5_small.json", mode="generate", batch=b, prompt=pr, new_tokens=m, precision=p,
                        held_out=(i == 2)))
    # issue 31: OLMo 2 (olmo2_small, near_llama_replica.py, modeling_olmo2.py @ 0233e509): Olmo2RMSNorm's float32
    # weight * x before the cast, Olmo2RotaryEmbedding's float32 cos / sin (apply_rotary_pos_emb's products float32,
    # .to(q_type)), norms after the sublayers, whole-projection q/k norms; olmo3_small's shapes without sliding
    # layers. bf16 and fp32 training (full, LoRA on q_proj / v_proj, checkpointed), --mode infer, generate.
    o2 = [
        ("train", 2, 96, "adamw", "bf16", False, 0),
        ("train", 2, 64, "adamw", "fp32", False, 0),
        ("train", 1, 128, "sgd", "bf16", True, 8),
        ("train", 4, 48, "adamw", "bf16", False, 8),
        ("train", 2, 80, "adamw", "bf16", True, 0),
        ("infer", 2, 128, None, "bf16", False, 0),
        ("infer", 1, 256, None, "fp32", False, 0),
        ("generate", 2, 64, 16, "fp32", False, 0),
        ("generate", 1, 128, 8, "bf16", False, 0),
        ("generate", 4, 24, 16, "bf16", False, 0),
    ]
    for i, (mode, b, s, o, p, c, l) in enumerate(o2):
        if mode == "train":
            out.append(dict(config="configs/olmo2_small.json", mode=mode, batch=b, seq=s, optim=o, precision=p, ckpt=c,
                            lora=l, lora_dropout=0.0, held_out=(i % 3 == 2)))
        elif mode == "infer":
            out.append(dict(config="configs/olmo2_small.json", mode=mode, batch=b, seq=s, precision=p,
                            held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/olmo2_small.json", mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, held_out=(i % 3 == 2)))
    # OLMoE (issue 31) as transformers 5 runs it (olmoe_replica.py, modeling_olmoe.py @ 0233e509): olmoe_small, 16
    # experts top-4 without renormalisation, q_norm / k_norm over the whole projections, no shared expert. Train (full,
    # --grad-ckpt, LoRA on q_proj / v_proj), then generate. Every third held out.
    om = [
        ("train", 2, 64, "adamw", "fp32", False, 0),
        ("train", 2, 64, "sgd", "bf16", False, 0),
        ("train", 2, 256, "sgd", "bf16", True, 0),
        ("train", 4, 128, "adamw", "fp32", False, 0),
        ("train", 2, 192, "adamw", "bf16", False, 8),
        ("train", 2, 64, "adamw", "fp32", False, 8),
        ("generate", 2, 32, 12, "fp32", False, 0),
        ("generate", 1, 64, 8, "bf16", False, 0),
        ("generate", 2, 96, 6, "fp32", False, 0),
    ]
    for i, (mode, b, s, o, p, c, l) in enumerate(om):
        if mode == "train":
            out.append(dict(config="configs/olmoe_small.json", mode=mode, batch=b, seq=s, optim=o, precision=p,
                            ckpt=c, lora=l, lora_targets="q_proj,v_proj" if l else None, experts="grouped_mm",
                            held_out=(i % 3 == 2)))
        else:
            out.append(dict(config="configs/olmoe_small.json", mode=mode, batch=b, prompt=s, new_tokens=o,
                            precision=p, experts="grouped_mm", held_out=(i % 3 == 2)))
    # Beam search (issue 31): generate() with num_beams N, GenerationMixin._beam_search (generation/utils.py @000034a,
    # measure_llm.py generate_beams): batch x N rows, the fp32 log_softmax, topk over 2N, the running / finished state
    # tensors, reorder_cache's index_select per layer. Decoder-only families, full and sliding (mistral_w32_small,
    # qwen2_sw40_small, gemma3_small, ministral_small) caches, 2-4 beams; every one runs all its steps (no early stop
    # at these seeds). Every third held out.
    beams = [
        ("llama_small", 2, 64, 6, "fp32", 4),
        ("qwen2_small", 2, 48, 8, "bf16", 3),
        ("mistral_w32_small", 1, 64, 12, "fp32", 2),
        ("qwen2_sw40_small", 1, 96, 10, "bf16", 3),
        ("mistral_w32_small", 2, 48, 20, "bf16", 4),
        ("qwen2_small", 1, 96, 6, "fp32", 2),
        ("llama_small", 1, 128, 8, "bf16", 2),
        ("gemma3_small", 2, 64, 8, "bf16", 3),
        ("ministral_small", 2, 40, 10, "fp32", 3),
        ("olmo2_small", 1, 64, 8, "bf16", 2),
    ]
    for i, (cfg, b, s, o, p, n) in enumerate(beams):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=s, new_tokens=o, precision=p,
                        num_beams=n, held_out=(i % 3 == 2)))
    # issue 26: torch.utils.checkpoint's reentrant variant (--grad-ckpt-kind reentrant; measure_llm.py --ckpt-kind
    # reentrant: vctorch._checkpoint_reentrant2x, 2.x's CheckpointFunction), what transformers 4.37-4.57's
    # gradient_checkpointing_enable() runs by default: llama_small, qwen2_small and mixtral_small (a MoE, 4.x's
    # per-expert loop), full and LoRA r=8 (PEFT's input-embeddings hook: the layers' input requires grad), fp32 and
    # bf16, AdamW. Every third held out.
    rc = [
        ("llama_small", 2, 64, "fp32", 0),
        ("llama_small", 2, 128, "bf16", 8),
        ("llama_small", 1, 160, "fp32", 8),
        ("qwen2_small", 2, 96, "bf16", 0),
        ("qwen2_small", 2, 64, "fp32", 8),
        ("qwen2_small", 4, 48, "bf16", 8),
        ("mixtral_small", 2, 64, "fp32", 0),
        ("mixtral_small", 1, 128, "bf16", 8),
        ("mixtral_small", 2, 96, "bf16", 0),
    ]
    for i, (cfg, b, s, p, l) in enumerate(rc):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=b, seq=s, optim="adamw", precision=p,
                        ckpt=True, ckpt_kind="reentrant", lora=l, held_out=(i % 3 == 2)))
    # issue 31: Mamba2ForCausalLM (mamba2, mamba2_replica.py: granite4_replica's Mamba2 mixer through the mamba_ssm
    # kernels' allocations, Mamba2Block's casts under residual_in_fp32, Mamba2Cache, the .float() logits).
    # mamba2_small (2 groups, chunk 16, residual_in_fp32, untied) and mamba2_tied_small (1 group, chunk 32, biases,
    # residual in the model's dtype, tied). Training (full, LoRA on in_proj, checkpointing), inference, generate at
    # batch 1 (apply_mask_to_padding_states multiplies a mask of more than one row). Every third held out.
    m2 = [
        ("train", "mamba2_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "mamba2_small", 2, 40, "adamw", "bf16", False, 0),
        ("train", "mamba2_small", 1, 96, "sgd", "fp32", True, 0),
        ("train", "mamba2_small", 2, 64, "adamw", "bf16", False, 8),
        ("train", "mamba2_tied_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "mamba2_tied_small", 4, 48, "adam", "bf16", True, 0),
        ("train", "mamba2_tied_small", 1, 128, "adamw", "fp32", False, 8),
        ("infer", "mamba2_small", 2, 64, None, "fp32", False, 0),
        ("infer", "mamba2_tied_small", 2, 100, None, "bf16", False, 0),
        ("infer", "mamba2_small", 4, 32, None, "bf16", False, 0),
        ("generate", "mamba2_small", 1, 40, 8, "fp32", False, 0),
        ("generate", "mamba2_tied_small", 1, 64, 12, "bf16", False, 0),
        ("generate", "mamba2_small", 1, 24, 16, "bf16", False, 0),
    ]
    mode_cases(out, m2, lora_targets="in_proj", train=dict(lora_dropout=0.0))
    # issue 31, the near-llama families of 2026 (near_llama_replica.py), each config the same ten cases: EXAONE 4.0
    # (exaone4_small, modeling_exaone4.py @ 948448a0: norms after the sublayers, q_norm / k_norm per head after the
    # transpose, layers 0-2 sliding (window 32) with the rotary, layer 3 full attention without it (global NoPE));
    # Seed-OSS (seed_oss_small, modular_seed_oss.py @ 6e4054ae: q/k/v biases, attention_dropout 0.1 and
    # residual_dropout 0.1 after o_proj and down_proj). bf16 and fp32 training (full, LoRA on q_proj / v_proj,
    # checkpointed), --mode infer, generate. Every third held out.
    ex = [
        ("train", 2, 96, "adamw", "bf16", False, 0),
        ("train", 2, 64, "adamw", "fp32", False, 0),
        ("train", 1, 128, "sgd", "bf16", True, 8),
        ("train", 4, 48, "adamw", "bf16", False, 8),
        ("train", 2, 80, "adamw", "bf16", True, 0),
        ("infer", 2, 128, None, "bf16", False, 0),
        ("infer", 1, 256, None, "fp32", False, 0),
        ("generate", 2, 64, 16, "fp32", False, 0),
        ("generate", 1, 128, 8, "bf16", False, 0),
        ("generate", 4, 24, 16, "bf16", False, 0),
    ]
    for cf in ("exaone4_small", "seed_oss_small"):
        mode_cases(out, ex, config=cf, lora_targets="q_proj,v_proj", train=dict(lora_dropout=0.0))
    # ERNIE 4.5 (issue 31) as transformers 5 runs it (ernie_replica.py, modeling_ernie4_5.py and
    # modeling_ernie4_5_moe.py @ 0233e509): ernie_small (use_bias: q/k/v/o and MLP biases, head_dim 32 on hidden 64 /
    # 4 heads, tied) and ernie_moe_small (16 experts top-4, 2 shared experts, MoE on layers 1 and 3 by
    # moe_layer_interval 2, the float32 router); both rotate interleaved pairs on float32 upcasts. Train (full,
    # --grad-ckpt, LoRA on q_proj / v_proj), the no_grad forward, then generate. Every third held out.
    er = [
        ("train", 2, 64, "adamw", "fp32", False, 0),
        ("train", 2, 64, "sgd", "bf16", False, 0),
        ("train", 2, 128, "adamw", "fp32", True, 0),
        ("train", 4, 64, "adamw", "bf16", False, 8),
        ("train", 2, 96, "adamw", "fp32", True, 8),
        ("infer", 2, 128, None, "bf16", False, 0),
        ("infer", 4, 64, None, "fp32", False, 0),
        ("generate", 2, 32, 12, "fp32", False, 0),
        ("generate", 1, 64, 8, "bf16", False, 0),
    ]
    for cfg, ex in (("ernie_small", None), ("ernie_moe_small", "grouped_mm")):
        mode_cases(out, er, config=cfg, lora_targets="q_proj,v_proj", experts=ex)
    # issue 31: LiquidAI LFM2 (lfm2_replica.py, modeling_lfm2.py @ 0096ba4f): Lfm2ShortConv.slow_forward (B x, the
    # depthwise conv1d of conv_L_cache taps, C gating) beside GQA layers with per-head q/k layernorms;
    # lfm2_small (LFM2-1.2B's layout: full_attn_idxs, block_ff_dim adjusted, tied) and lfm2_bias_small (conv_bias,
    # layer_types, 4 taps, the multiplier null, untied). Training (full, LoRA on in_proj / out_proj / q_proj /
    # v_proj / w1 / w2 / w3: PEFT has no lfm2 default, checkpointing), --mode infer, generate with
    # Lfm2HybridConvCache. Every third held out.
    lf = [
        ("train", "lfm2_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "lfm2_small", 2, 96, "adamw", "bf16", False, 0),
        ("train", "lfm2_small", 1, 128, "sgd", "fp32", True, 0),
        ("train", "lfm2_small", 2, 64, "adamw", "bf16", False, 8),
        ("train", "lfm2_bias_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "lfm2_bias_small", 4, 48, "adam", "bf16", True, 0),
        ("train", "lfm2_bias_small", 1, 128, "adamw", "fp32", False, 8),
        ("infer", "lfm2_small", 2, 64, None, "fp32", False, 0),
        ("infer", "lfm2_bias_small", 2, 100, None, "bf16", False, 0),
        ("infer", "lfm2_small", 4, 32, None, "bf16", False, 0),
        ("generate", "lfm2_small", 1, 40, 8, "fp32", False, 0),
        ("generate", "lfm2_bias_small", 2, 64, 12, "bf16", False, 0),
        ("generate", "lfm2_small", 2, 24, 16, "bf16", False, 0),
    ]
    mode_cases(out, lf, lora_targets="in_proj,out_proj,q_proj,v_proj,w1,w2,w3", train=dict(lora_dropout=0.0))
    # Cohere and Cohere2 (issue 31) as transformers 5 runs them (cohere_replica.py, modeling_cohere.py and
    # modeling_cohere2.py @ 0233e509): cohere_small (use_qk_norm: CohereLayerNorm q/k norms of [heads, head_dim]),
    # cohere2_small (sliding_window 48, 3 sliding rotary layers : 1 full NoPE layer); the parallel block, float32
    # CohereLayerNorm, q.float() rotation, logits * logit_scale, tied embeddings. Train (full, --grad-ckpt, LoRA on
    # q_proj / v_proj), --mode infer, generate (past the window for cohere2). Every third held out.
    for cfg in ("configs/cohere_small.json", "configs/cohere2_small.json"):
        co = [
            ("train", 2, 64, "adamw", "bf16", False, 0),
            ("train", 2, 96, "adamw", "fp32", False, 0),
            ("train", 1, 128, "sgd", "bf16", True, 0),
            ("train", 2, 96, "adamw", "bf16", False, 8),
            ("train", 2, 128, "adamw", "bf16", True, 8),
            ("infer", 2, 128, None, "bf16", False, 0),
            ("infer", 1, 256, None, "fp32", False, 0),
            ("generate", 2, 64, 16, "bf16", False, 0),
            ("generate", 1, 40, 24, "fp32", False, 0),
        ]
        mode_cases(out, co, config=cfg, lora_targets="q_proj,v_proj")
    # issue 31: NVIDIA Nemotron-H (nemotron_h, nemotron_h_replica.py, modeling_nemotron_h.py @ 008d9e95): one mixer a
    # block (Mamba2 through the mamba_ssm kernels' allocations with the grouped Zamba2RMSNormGated, NoPE attention,
    # relu2 MLP), logits .float(). nemotron_h_small (new key names, 4 groups, chunk 16) and nemotron_h_legacy_small
    # (the legacy mamba_* names, use_bias and mlp_bias, chunk 32). Training (full, LoRA on in_proj / q_proj / v_proj /
    # up_proj, checkpointing), inference, generate; sequences off the chunk size too. Every third held out.
    nh = [
        ("train", "nemotron_h_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "nemotron_h_small", 2, 40, "adamw", "bf16", False, 0),
        ("train", "nemotron_h_small", 1, 96, "sgd", "fp32", True, 0),
        ("train", "nemotron_h_small", 2, 64, "adamw", "bf16", False, 8),
        ("train", "nemotron_h_legacy_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "nemotron_h_legacy_small", 4, 48, "adam", "bf16", True, 0),
        ("train", "nemotron_h_legacy_small", 1, 128, "adamw", "fp32", False, 8),
        ("train", "nemotron_h_small", 2, 80, "adamw", "bf16", True, 0),
        ("train", "nemotron_h_legacy_small", 2, 96, "adamw", "bf16", False, 8),
        ("infer", "nemotron_h_small", 2, 64, None, "fp32", False, 0),
        ("infer", "nemotron_h_legacy_small", 2, 100, None, "bf16", False, 0),
        ("infer", "nemotron_h_small", 4, 32, None, "bf16", False, 0),
        ("generate", "nemotron_h_small", 1, 40, 8, "fp32", False, 0),
        ("generate", "nemotron_h_legacy_small", 2, 64, 12, "bf16", False, 0),
        ("generate", "nemotron_h_small", 2, 24, 16, "bf16", False, 0),
    ]
    mode_cases(out, nh, lora_targets="in_proj,q_proj,v_proj,up_proj", train=dict(lora_dropout=0.0))
    # issue 31 item 4: ViTForImageClassification (vision_encoder_replica.py, modeling_vit.py @ 005db820): the patch
    # Conv2d, CLS token and position embeddings, pre-LN ViTLayers on sdpa, the classifier on the CLS token; training
    # (full, LoRA r=8 on query,value: PEFT's mapping has no vit; every ViTLayer checkpointed) and --mode infer;
    # vit_small 64 x 64 images of 8 x 8 patches (64 + CLS = --seq 65) with dropouts 0.1, vit_nodrop_small 96 x 96 of
    # 16 x 16 (36 + CLS = 37) without dropout or qkv_bias. Every third held out.
    vt = [
        ("train", "vit_small", 2, 65, "adamw", "fp32", False, 0),
        ("train", "vit_small", 4, 65, "sgd", "bf16", False, 0),
        ("train", "vit_small", 2, 65, "adamw", "fp32", True, 0),
        ("train", "vit_small", 2, 65, "adamw", "bf16", False, 8),
        ("infer", "vit_small", 4, 65, None, "fp32", False, 0),
        ("infer", "vit_small", 2, 65, None, "bf16", False, 0),
        ("train", "vit_nodrop_small", 3, 37, "adam", "fp32", False, 0),
        ("train", "vit_nodrop_small", 2, 37, "adamw", "bf16", True, 0),
        ("train", "vit_nodrop_small", 4, 37, "adamw", "fp32", False, 8),
        ("infer", "vit_nodrop_small", 8, 37, None, "fp32", False, 0),
        ("train", "vit_small", 1, 65, "adamw", "fp32", True, 8),
        ("infer", "vit_nodrop_small", 2, 37, None, "bf16", False, 0),
    ]
    mode_cases(out, vt, lora_targets="query,value", train=dict(lora_dropout=0.0))
    # issue 31 item 4: Qwen2-VL (qwen25vl_replica.py with model_type qwen2_vl, modeling_qwen2_vl.py @ efa7189c): the
    # frozen Qwen2VisionTransformerPretrainedModel (LayerNorm blocks, VisionMlp fc1 / quick_gelu / fc2, every block
    # over its image's cu_seqlens, PatchMerger's LayerNorm ln_q) before Qwen2's language model; training full, LoRA
    # (the language model's q_proj,v_proj) and checkpointed with and without an image, --mode infer, generate() with
    # the image in the prefill only. Batch 1 with images (the tower runs a batch's images as one sequence). Every
    # third held out.
    q2v = [
        ("train", 1, 64, "adamw", "fp32", False, 0, "224x224", 1),
        ("train", 1, 64, "adamw", "bf16", False, 0, None, 0),
        ("train", 1, 48, "sgd", "fp32", False, 0, "448x336", 1),
        ("train", 1, 64, "adamw", "bf16", False, 8, "224x224", 1),
        ("train", 2, 64, "adamw", "fp32", False, 8, None, 0),
        ("train", 1, 96, "adamw", "fp32", True, 0, "640x480", 1),
        ("train", 1, 64, "sgd", "bf16", True, 0, None, 0),
        ("train", 1, 32, "adamw", "fp32", True, 8, "320x320", 2),
        ("infer", 1, 64, None, "fp32", False, 0, "640x480", 1),
        ("infer", 1, 32, None, "bf16", False, 0, "448x336", 2),
        ("infer", 1, 128, None, "fp32", False, 0, "448x336", 1),
        ("infer", 1, 256, None, "bf16", False, 0, "224x224", 1),
        ("generate", 1, 32, 8, "fp32", False, 0, "224x224", 1),
        ("generate", 1, 64, 16, "bf16", False, 0, "448x336", 1),
        ("generate", 1, 16, 8, "fp32", False, 0, "640x480", 1),
    ]
    for i, (mode, b, s, o, p, c, l, img, n) in enumerate(q2v):
        d = dict(config="configs/qwen2_vl_small.json", mode=mode, batch=b, precision=p, held_out=(i % 3 == 2))
        if img:
            d.update(image=img, images=n)
        if mode == "train":
            d.update(seq=s, optim=o, ckpt=c, lora=l, lora_targets="q_proj,v_proj" if l else None)
        elif mode == "infer":
            d.update(seq=s)
        else:
            d.update(prompt=s, new_tokens=o)
        out.append(d)
    # issue 31: TII Falcon-H1 (falcon_h1, falcon_h1_replica.py, modeling_falcon_h1.py @ 68c08116): every layer a Mamba2
    # mixer (the mamba_ssm kernels' allocations, rmsnorm_weight None: mamba_rms_norm false) beside a rotary attention
    # on the same normed input, the muP multipliers, a SwiGLU MLP. falcon_h1_small (Falcon-H1-0.5B's multipliers,
    # chunk 16) and falcon_h1_bias_small (mamba_d_ssm null, 2 groups, every bias, tied, chunk 32). Training (full,
    # LoRA on in_proj / q_proj / v_proj / up_proj, checkpointing), inference, generate. Every third held out.
    fh = [
        ("train", "falcon_h1_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "falcon_h1_small", 2, 48, "adamw", "bf16", False, 0),
        ("train", "falcon_h1_small", 1, 96, "sgd", "fp32", True, 0),
        ("train", "falcon_h1_small", 2, 64, "adamw", "bf16", False, 8),
        ("train", "falcon_h1_bias_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "falcon_h1_bias_small", 4, 40, "adam", "bf16", True, 0),
        ("train", "falcon_h1_bias_small", 1, 128, "adamw", "fp32", False, 8),
        ("train", "falcon_h1_small", 2, 80, "adamw", "bf16", True, 0),
        ("train", "falcon_h1_bias_small", 2, 96, "adamw", "bf16", False, 8),
        ("infer", "falcon_h1_small", 2, 64, None, "fp32", False, 0),
        ("infer", "falcon_h1_bias_small", 2, 100, None, "bf16", False, 0),
        ("infer", "falcon_h1_small", 4, 32, None, "bf16", False, 0),
        ("generate", "falcon_h1_small", 1, 40, 8, "fp32", False, 0),
        ("generate", "falcon_h1_bias_small", 2, 64, 12, "bf16", False, 0),
        ("generate", "falcon_h1_small", 2, 24, 16, "bf16", False, 0),
    ]
    mode_cases(out, fh, lora_targets="in_proj,q_proj,v_proj,up_proj", train=dict(lora_dropout=0.0))
    # issue 31 item 6: generate() as transformers 5.0 runs it, GenerationMixin._prefill (generation/utils.py
    # @000034a44ef887621d9b36001a5eb7c46e64cb3f; measure_llm.py --transformers 5.0 prefill()): the model over
    # input_ids[:, :-1], its outputs dropped, then the loop from the last prompt token. Greedy over a full cache
    # (llama_small, qwen2_small), sliding layers past their window (mistral_w32_small, qwen2_sw40_small, gemma3_small),
    # a MoE (olmoe_small, grouped_mm), beam search, the quantized cache (its requantizing cycle one step earlier).
    # Every third held out.
    pre = [
        ("llama_small", 1, 64, 16, "fp32", 1, None, None),
        ("qwen2_small", 2, 48, 16, "bf16", 1, None, None),
        ("mistral_w32_small", 2, 48, 20, "fp32", 1, None, None),
        ("olmoe_small", 1, 40, 12, "fp32", 1, "grouped_mm", None),
        ("gemma3_small", 1, 96, 16, "fp32", 1, None, None),
        ("qwen2_sw40_small", 1, 64, 12, "bf16", 1, None, None),
        ("llama_small", 2, 64, 6, "fp32", 4, None, None),
        ("gemma3_small", 2, 64, 8, "bf16", 3, None, None),
        ("qwen2_small", 1, 97, 34, "fp32", 1, None, 32),
    ]
    for i, (cfg, b, s, o, p, n, ex, res) in enumerate(pre):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=s, new_tokens=o, precision=p,
                        num_beams=n, experts=ex, transformers="5.0", held_out=(i % 3 == 2),
                        **({"cache": "quantized", "kv_bits": 4, "kv_residual": res} if res else {})))
    # issue 26: --liger, Liger-Kernel's patch set as use_liger_kernel=True applies it (liger_patch_replica.py:
    # LigerRMSNormFunction, LigerSiLUMulFunction, LigerRopeFunction; liger_replica.py's fused linear
    # cross-entropy), llama / qwen2 / qwen3 / mistral, full and LoRA, with and without checkpointing;
    # llama_wide (I = 1408) where the MLP sets more of the peak. Every third held out.
    liger_patch = [
        ("llama_small", 2, 64, "adamw", "fp32", False, 0),
        ("llama_small", 2, 64, "adamw", "bf16", True, 0),
        ("llama_small", 2, 64, "adamw", "bf16", False, 8),
        ("llama_wide", 2, 64, "sgd", "bf16", False, 0),
        ("qwen2_small", 2, 64, "sgd", "bf16", False, 0),
        ("qwen2_small", 2, 64, "adamw", "bf16", True, 8),
        ("qwen3_small", 2, 64, "sgd", "bf16", False, 0),
        ("qwen3_small", 2, 64, "adamw", "fp32", True, 0),
        ("mistral_w32_small", 2, 64, "sgd", "fp32", False, 8),
        ("llama_vocab8k", 2, 64, "sgd", "bf16", False, 0),
        ("llama_wide", 1, 96, "adamw", "fp32", True, 8),
        ("qwen2_small", 1, 96, "sgd", "fp32", True, 8),
    ]
    train_cases(out, liger_patch, loss="liger", liger=True)
    # issue 31: LiquidAI LFM2-MoE (lfm2_moe, lfm2_replica.py, modular_lfm2_moe.py @ 0c67e26d): lfm2's layers with
    # Lfm2MoeMLP below num_dense_layers and Lfm2MoeSparseMoeBlock above (sigmoid router, float32 expert_bias for the
    # choice, / (sum + 1e-6), * routed_scaling_factor, stacked experts through grouped_mm_experts_forward).
    # lfm2_moe_small (LFM2-8B-A1B's routing: expert_bias, norm_topk_prob, tied; 1 dense layer) and
    # lfm2_moe_nobias_small (use_expert_bias false, norm_topk_prob false, scaling 2.5, conv_bias, 4 taps, untied).
    # Training (full, LoRA on in_proj / out_proj / q_proj / v_proj / w1 / w2 / w3, checkpointing), --mode infer,
    # generate with Lfm2HybridConvCache. Every third held out.
    lm = [
        ("train", "lfm2_moe_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "lfm2_moe_small", 2, 96, "adamw", "bf16", False, 0),
        ("train", "lfm2_moe_small", 1, 128, "sgd", "fp32", True, 0),
        ("train", "lfm2_moe_small", 2, 64, "adamw", "bf16", False, 8),
        ("train", "lfm2_moe_nobias_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "lfm2_moe_nobias_small", 4, 48, "adam", "bf16", True, 0),
        ("train", "lfm2_moe_nobias_small", 1, 128, "adamw", "fp32", False, 8),
        ("infer", "lfm2_moe_small", 2, 64, None, "fp32", False, 0),
        ("infer", "lfm2_moe_nobias_small", 2, 100, None, "bf16", False, 0),
        ("infer", "lfm2_moe_small", 4, 32, None, "bf16", False, 0),
        ("generate", "lfm2_moe_small", 1, 40, 8, "fp32", False, 0),
        ("generate", "lfm2_moe_nobias_small", 2, 64, 12, "bf16", False, 0),
        ("generate", "lfm2_moe_small", 2, 24, 16, "bf16", False, 0),
    ]
    mode_cases(out, lm, lora_targets="in_proj,out_proj,q_proj,v_proj,w1,w2,w3", train=dict(lora_dropout=0.0))
    # Arcee (issue 31; near_llama_replica.py, modular_arcee.py @ 031734d9): arcee_small, LlamaDecoderLayer with the
    # non-gated NemotronMLP (up_proj, relu2 = relu then torch.square, down_proj; the pow backward's two temporaries).
    # Train in fp32 and bf16 (full, --grad-ckpt, LoRA on q_proj / v_proj), --mode infer, generate. Every third held out.
    ar = [
        ("train", 2, 64, "adamw", "fp32", False, 0),
        ("train", 2, 96, "adamw", "bf16", False, 0),
        ("train", 1, 128, "sgd", "fp32", True, 0),
        ("train", 2, 96, "adamw", "fp32", False, 8),
        ("train", 2, 128, "adamw", "bf16", True, 8),
        ("train", 4, 48, "sgd", "fp32", False, 0),
        ("infer", 2, 128, None, "bf16", False, 0),
        ("infer", 1, 256, None, "fp32", False, 0),
        ("generate", 2, 64, 16, "fp32", False, 0),
        ("generate", 1, 40, 24, "bf16", False, 0),
    ]
    mode_cases(out, ar, config="arcee_small", lora_targets="q_proj,v_proj")
    # Tencent HunYuan (issue 31; hunyuan_replica.py, modeling_hunyuan_v1_dense.py / modeling_hunyuan_v1_moe.py @
    # 0233e509): hunyuan_small (LlamaDecoderLayer's template, query_layernorm / key_layernorm after the rotation, the
    # dynamic-NTK alpha rotary, untied) and hunyuan_moe_small (16 experts top-4 of intermediate_size, the shared MLP,
    # the float32 gate, tied; grouped_mm). Train (full, --grad-ckpt, LoRA on q_proj / v_proj: PEFT's mapping not
    # read), --mode infer, generate. Every third held out (train_cases' count, then the rest's).
    for cfg, ex in (("hunyuan_small", None), ("hunyuan_moe_small", "grouped_mm")):
        train_cases(out, [(cfg, 2, 64, "adamw", "fp32", False, 0), (cfg, 2, 96, "adamw", "bf16", False, 0),
                          (cfg, 2, 128, "adamw", "fp32", True, 0), (cfg, 4, 64, "adamw", "bf16", False, 8),
                          (cfg, 2, 96, "adamw", "fp32", True, 8), (cfg, 1, 128, "sgd", "fp32", False, 0)],
                    lora_targets="q_proj,v_proj", experts=ex)
        cf = "configs/%s.json" % cfg
        out += [dict(config=cf, mode="infer", batch=2, seq=128, precision="bf16", experts=ex, held_out=False),
                dict(config=cf, mode="infer", batch=4, seq=64, precision="fp32", experts=ex, held_out=False),
                dict(config=cf, mode="generate", batch=2, prompt=32, new_tokens=12, precision="fp32", experts=ex,
                     held_out=True),
                dict(config=cf, mode="generate", batch=1, prompt=64, new_tokens=8, precision="bf16", experts=ex,
                     held_out=False)]
    # issue 31 (towers and encoders): Dinov2ForImageClassification (dinov2_replica.py, modeling_dinov2.py @ 015e6876):
    # ViT's embeddings with mask_token, pre-LN Dinov2Layers with LayerScale, the classifier on [CLS, mean of the
    # patches]; training (full, LoRA r=8 on query,value: PEFT's mapping has no dinov2; every layer checkpointed) and
    # --mode infer; dinov2_small 112 x 112 images of 14 x 14 patches (64 + CLS = --seq 65) with dropouts 0.1,
    # dinov2_swiglu_small 64 x 64 of 8 x 8 (64 + CLS) with Dinov2SwiGLUFFN, no mask_token, no qkv_bias, no dropout.
    # Every third held out.
    dn = [
        ("train", "dinov2_small", 2, 65, "adamw", "fp32", False, 0),
        ("train", "dinov2_small", 4, 65, "sgd", "bf16", False, 0),
        ("train", "dinov2_small", 2, 65, "adamw", "fp32", True, 0),
        ("train", "dinov2_small", 2, 65, "adamw", "bf16", False, 8),
        ("infer", "dinov2_small", 4, 65, None, "fp32", False, 0),
        ("infer", "dinov2_small", 2, 65, None, "bf16", False, 0),
        ("train", "dinov2_swiglu_small", 3, 65, "adam", "fp32", False, 0),
        ("train", "dinov2_swiglu_small", 2, 65, "adamw", "bf16", True, 0),
        ("train", "dinov2_swiglu_small", 4, 65, "adamw", "fp32", False, 8),
        ("infer", "dinov2_swiglu_small", 8, 65, None, "fp32", False, 0),
        ("train", "dinov2_small", 1, 65, "adamw", "fp32", True, 8),
        ("infer", "dinov2_swiglu_small", 2, 65, None, "bf16", False, 0),
    ]
    mode_cases(out, dn, lora_targets="query,value", train=dict(lora_dropout=0.0))
    # Beam search of an encoder-decoder (issue 31; measure_llm.py generate_beams with t5_replica.prepare_generation /
    # whisper_replica.prepare_generation): the encoder once over the batch's rows, _expand_inputs_for_generation's
    # repeat_interleave of the decoder ids, the attention mask and the encoder's last_hidden_state (generation/utils.py
    # @000034a), _beam_search's state, EncoderDecoderCache.reorder_cache's index_select of the self- and the
    # cross-attention caches every step (cache_utils.py @004999d9). t5 (--prompt: the encoder's tokens) and whisper
    # (--prompt: the init tokens), 2 and 4 beams, fp32 and bf16; every one runs all its steps (no early stop at these
    # seeds). Every third held out.
    encdec_beams = [
        ("t5_small", 1, 64, 8, "fp32", 2),
        ("t5_small", 2, 96, 12, "bf16", 4),
        ("flan_t5_small", 1, 128, 6, "fp32", 4),
        ("whisper_small", 2, 4, 8, "fp32", 2),
        ("whisper_small", 1, 1, 12, "bf16", 4),
        ("whisper_v3_small", 2, 4, 6, "bf16", 2),
        ("t5_small", 2, 32, 24, "fp32", 2),
        ("whisper_v3_small", 1, 4, 16, "fp32", 4),
        ("flan_t5_small", 2, 64, 10, "bf16", 2),
    ]
    for i, (cfg, b, s, o, p, n) in enumerate(encdec_beams):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=s, new_tokens=o, precision=p,
                        num_beams=n, held_out=(i % 3 == 2)))
    # issue 26: --liger beyond llama (liger_patch_replica.py, Liger-Kernel @ ead96b61): gemma2's patch set
    # (LigerRMSNormFunction offset 1.0, casting_mode "gemma", in_place False on its five norms; LigerGELUMulFunction;
    # LigerRopeFunction; the fused loss with final_logit_softcapping) at transformers' sdpa, every sequence below
    # gemma2_w128's sliding_window; gemma3_text with --liger-kernels geglu,fused_linear_cross_entropy; mixtral
    # (transformers 5's experts) with rope,rms_norm,fused_linear_cross_entropy; --liger-kernels subsets on llama and
    # gemma2. Every third held out.
    lg2 = [
        ("gemma2_w128", 2, 64, "adamw", "fp32", False, 0),
        ("gemma2_w128", 2, 96, "sgd", "bf16", False, 0),
        ("gemma2_w128", 2, 64, "adamw", "bf16", True, 0),
        ("gemma2_w128", 4, 48, "sgd", "fp32", True, 8),
        ("gemma2_w128", 1, 120, "sgd", "fp32", False, 0),
        ("gemma2_w128", 2, 80, "adamw", "bf16", False, 8),
    ]
    train_cases(out, lg2, liger=True, attn="sdpa")
    train_cases(out, [("gemma3_small", 2, 64, "sgd", "bf16", False, 0), ("gemma3_small", 2, 48, "adamw", "fp32", False, 8),
                      ("gemma3_small", 1, 96, "sgd", "fp32", False, 0)],
                liger=True, liger_kernels="geglu,fused_linear_cross_entropy")
    train_cases(out, [("mixtral_small", 2, 64, "sgd", "fp32", False, 0), ("mixtral_small", 2, 64, "adamw", "bf16", True, 0),
                      ("mixtral_small", 2, 48, "sgd", "bf16", False, 0)],
                liger=True, liger_kernels="rope,rms_norm,fused_linear_cross_entropy", experts="grouped_mm")
    train_cases(out, [("llama_small", 2, 64, "sgd", "bf16", False, 0), ("llama_wide", 2, 64, "sgd", "fp32", False, 0),
                      ("llama_small", 2, 64, "adamw", "fp32", True, 0)],
                liger=True, liger_kernels="rope,rms_norm")
    train_cases(out, [("llama_wide", 2, 64, "sgd", "bf16", False, 0), ("llama_small", 2, 64, "adamw", "bf16", True, 8),
                      ("llama_wide", 1, 96, "sgd", "fp32", False, 0)],
                liger=True, liger_kernels="swiglu,fused_linear_cross_entropy")
    train_cases(out, [("gemma2_w128", 2, 64, "sgd", "fp32", True, 0), ("gemma2_w128", 2, 96, "sgd", "bf16", False, 0),
                      ("gemma2_w128", 2, 64, "sgd", "bf16", False, 8)],
                liger=True, liger_kernels="geglu,rms_norm", attn="sdpa")
    # mixtral at transformers 4.x's per-expert modules: each expert's forward LigerBlockSparseTop2MLP's
    train_cases(out, [("mixtral_small", 2, 64, "sgd", "fp32", False, 0), ("mixtral_small", 2, 64, "adamw", "bf16", True, 0),
                      ("mixtral_small", 1, 96, "sgd", "bf16", False, 0)],
                liger=True, experts="per_expert")
    # issue 31: Nemotron (Minitron-8B / 4B; near_llama_replica.py, modeling_nemotron.py @ 0233e509): nemotron_small,
    # NemotronLayerNorm1P (LayerNorm with weight + 1: a fresh tensor native_layer_norm keeps), partial rotary (half of
    # each head: slice, rotate, cat), NemotronMLP's up_proj / relu2 / down_proj. Train in fp32 and bf16 (full,
    # --grad-ckpt, LoRA on q_proj / v_proj), --mode infer, generate. Every third held out.
    train_cases(out, [("nemotron_small", 2, 64, "adamw", "fp32", False, 0),
                      ("nemotron_small", 2, 96, "adamw", "bf16", False, 0),
                      ("nemotron_small", 1, 128, "sgd", "fp32", True, 0)])
    train_cases(out, [("nemotron_small", 2, 96, "adamw", "fp32", False, 8),
                      ("nemotron_small", 2, 128, "adamw", "bf16", True, 8),
                      ("nemotron_small", 4, 48, "sgd", "fp32", False, 0)], lora_targets="q_proj,v_proj")
    out += [dict(config="configs/nemotron_small.json", mode="infer", batch=2, seq=128, precision="bf16", held_out=False),
            dict(config="configs/nemotron_small.json", mode="infer", batch=1, seq=256, precision="fp32", held_out=False),
            dict(config="configs/nemotron_small.json", mode="generate", batch=2, prompt=64, new_tokens=16,
                 precision="fp32", held_out=True),
            dict(config="configs/nemotron_small.json", mode="generate", batch=1, prompt=40, new_tokens=24,
                 precision="bf16", held_out=False)]
    # issue 31: Apertus (Apertus-8B / 70B; near_llama_replica.py, modeling_apertus.py @ 6e4054ae): apertus_small,
    # q_norm / k_norm per head on the transposed states, llama3 rope, ApertusMLP's up_proj / XIELUActivation (bf16
    # alpha_p / alpha_n, torch.where of two branches) / down_proj. Train in fp32 and bf16 (full, --grad-ckpt, LoRA on
    # q_proj / v_proj), --mode infer, generate. Every third held out.
    train_cases(out, [("apertus_small", 2, 64, "adamw", "fp32", False, 0),
                      ("apertus_small", 2, 96, "adamw", "bf16", False, 0),
                      ("apertus_small", 1, 128, "sgd", "fp32", True, 0)])
    train_cases(out, [("apertus_small", 2, 96, "adamw", "fp32", False, 8),
                      ("apertus_small", 2, 128, "adamw", "bf16", True, 8),
                      ("apertus_small", 4, 48, "sgd", "fp32", False, 0)], lora_targets="q_proj,v_proj")
    out += [dict(config="configs/apertus_small.json", mode="infer", batch=2, seq=128, precision="bf16", held_out=False),
            dict(config="configs/apertus_small.json", mode="infer", batch=1, seq=256, precision="fp32", held_out=False),
            dict(config="configs/apertus_small.json", mode="generate", batch=2, prompt=64, new_tokens=16,
                 precision="fp32", held_out=True),
            dict(config="configs/apertus_small.json", mode="generate", batch=1, prompt=40, new_tokens=24,
                 precision="bf16", held_out=False)]
    # issue 31 (towers and encoders): DINOv2's two behaviours that were refused (dinov2_replica.py, modeling_dinov2.py
    # @ 015e6876): dinov2_dp_small (dinov2_small at drop_path_rate 0.2: Dinov2DropPath's keep_prob + rand, floor_,
    # input.div(keep_prob) * random_tensor on both branches of every layer in training), and dinov2_small at
    # images other than its 112 x 112 (--image WxH: Dinov2Embeddings.interpolate_pos_encoding's bicubic resize of the
    # 8 x 8 position grid to (H // 14) x (W // 14), --seq the patches + CLS). Train (full, --grad-ckpt, LoRA r=8 on
    # query,value), --mode infer, bf16. Every third held out.
    dn2 = [
        ("train", "dinov2_dp_small", 8, 65, "sgd", "fp32", False, 0, None),
        ("train", "dinov2_dp_small", 4, 65, "adamw", "bf16", False, 0, None),
        ("train", "dinov2_dp_small", 8, 65, "sgd", "fp32", True, 0, None),
        ("train", "dinov2_dp_small", 4, 65, "sgd", "fp32", False, 8, None),
        ("infer", "dinov2_dp_small", 8, 65, None, "fp32", False, 0, None),
        ("train", "dinov2_dp_small", 16, 65, "sgd", "fp32", False, 0, None),
        ("train", "dinov2_small", 8, 101, "sgd", "fp32", False, 0, "140x140"),
        ("train", "dinov2_small", 4, 97, "sgd", "bf16", False, 0, "168x112"),
        ("train", "dinov2_small", 8, 49, "adamw", "fp32", False, 0, "112x84"),
        ("infer", "dinov2_small", 4, 197, None, "fp32", False, 0, "196x196"),
        ("train", "dinov2_small", 4, 101, "sgd", "fp32", True, 0, "140x140"),
        ("train", "dinov2_small", 4, 100, "sgd", "fp32", False, 8, "126x154"),
    ]
    n0 = len(out)
    mode_cases(out, [r[:8] for r in dn2], lora_targets="query,value", train=dict(lora_dropout=0.0))
    for c, r in zip(out[n0:], dn2):
        if r[8]:
            c.update(image=r[8], images=1)
    # issue 31: generate() of bart (bart_replica.generate / prepare_generation / forward_cached, measure_llm.py
    # generate_beams for --num-beams): the encoder once, the decoder with EncoderDecoderCache, final_logits_bias, the
    # logits processors of the config's keys (bart_gen_small: no_repeat_ngram_size 3, forced_bos_token_id 0,
    # forced_eos_token_id 2, as facebook/bart-large's config.json; bart_small: none), greedy fp32 / bf16 and 2 beams.
    # Every third held out.
    bart_gen = [
        ("bart_gen_small", 2, 64, 8, "fp32", 1),
        ("bart_small", 1, 96, 12, "fp32", 1),
        ("bart_gen_small", 1, 128, 6, "bf16", 1),
        ("bart_gen_small", 2, 48, 10, "bf16", 1),
        ("bart_gen_small", 1, 64, 8, "fp32", 2),
        ("bart_small", 2, 32, 6, "fp32", 2),
    ]
    for i, (cfg, b, s, o, p, n) in enumerate(bart_gen):
        out.append(dict(config="configs/%s.json" % cfg, mode="generate", batch=b, prompt=s, new_tokens=o, precision=p,
                        num_beams=n, held_out=(i % 3 == 2)))
    # issue 26: --liger-kernels with cross_entropy (liger_patch_replica.py: LigerCrossEntropyFunction as
    # torch.nn.functional.cross_entropy inside ForCausalLMLoss, Liger-Kernel @ ead96b61 ops/cross_entropy.py): llama
    # with rope,rms_norm,swiglu,cross_entropy and gemma2 with rope,rms_norm,geglu,cross_entropy at sdpa. Every third
    # held out.
    train_cases(out, [("llama_small", 2, 64, "sgd", "fp32", False, 0), ("llama_wide", 2, 64, "adamw", "bf16", False, 0),
                      ("llama_small", 2, 64, "sgd", "fp32", True, 0), ("llama_wide", 2, 96, "sgd", "fp32", False, 0),
                      ("llama_small", 2, 64, "adamw", "bf16", True, 8), ("llama_wide", 1, 128, "sgd", "bf16", False, 0)],
                liger=True, liger_kernels="rope,rms_norm,swiglu,cross_entropy")
    train_cases(out, [("gemma2_w128", 2, 64, "sgd", "fp32", False, 0), ("gemma2_w128", 2, 96, "sgd", "bf16", False, 0),
                      ("gemma2_w128", 2, 64, "sgd", "fp32", True, 0)],
                liger=True, liger_kernels="rope,rms_norm,geglu,cross_entropy", attn="sdpa")
    # ... where the loss is the peak (an 8k vocabulary): no log_softmax output, no logits-sized gradient
    train_cases(out, [("llama_vocab8k", 2, 128, "sgd", "fp32", False, 0), ("llama_vocab8k", 2, 128, "sgd", "bf16", False, 0),
                      ("llama_vocab8k", 1, 128, "adamw", "fp32", True, 0), ("llama_vocab8k", 2, 96, "adamw", "bf16", True, 0)],
                liger=True, liger_kernels="rope,rms_norm,swiglu,cross_entropy")
    # issue 26: Gemma 1 with --liger (apply_liger_kernel_to_gemma, l.921-987: LigerRMSNormForGemma offset 1.0 /
    # casting "gemma" / in_place True on its three norms, LigerGEGLUMLP, LigerRopeFunction, the fused loss;
    # reference.py's GemmaForCausalLM, modeling_gemma.py @ 0125ac68) and with rope,rms_norm,geglu (its own loss).
    # Every third held out.
    train_cases(out, [("gemma_small", 2, 64, "sgd", "fp32", False, 0), ("gemma_small", 2, 96, "adamw", "bf16", False, 0),
                      ("gemma_small", 2, 64, "sgd", "fp32", True, 0), ("gemma_small", 2, 64, "adamw", "fp32", False, 8),
                      ("gemma_small", 2, 64, "sgd", "bf16", True, 0), ("gemma_small", 1, 128, "sgd", "bf16", False, 0)],
                liger=True)
    train_cases(out, [("gemma_small", 2, 64, "sgd", "fp32", False, 0), ("gemma_small", 2, 64, "adamw", "bf16", True, 0),
                      ("gemma_small", 2, 96, "sgd", "bf16", False, 0)],
                liger=True, liger_kernels="rope,rms_norm,geglu")
    # issue 26: qwen3_moe at transformers 4.x's per-expert modules with --liger (apply_liger_kernel_to_qwen3_moe
    # l.1777-1781: each expert's forward LigerQwen3MoeSwiGLUMLP's; reference.py's Qwen3MoeSparseMoeBlock,
    # modeling_qwen3_moe.py @ 00d4b3d2), the defaults and rope,rms_norm,swiglu. Every third held out.
    train_cases(out, [("qwen3_moe_small", 2, 64, "sgd", "fp32", False, 0), ("qwen3_moe_small", 2, 64, "adamw", "bf16", False, 0),
                      ("qwen3_moe_small", 2, 64, "sgd", "fp32", True, 0)],
                liger=True, experts="per_expert")
    train_cases(out, [("qwen3_moe_small", 2, 96, "sgd", "bf16", False, 0), ("qwen3_moe_small", 2, 64, "adamw", "fp32", True, 0),
                      ("qwen3_moe_small", 1, 128, "sgd", "fp32", False, 0)],
                liger=True, liger_kernels="rope,rms_norm,swiglu", experts="per_expert")
    # issue 31: DeepSeek-V3.2 under transformers (dsa_replica.py, modeling_deepseek_v32.py @ 01f8fa55): deepseek_v3_small's
    # MLA and MoE with DeepSeek Sparse Attention's indexer (4 index heads of 16, index_topk 24 below the sequence, so the
    # index mask drops keys); deepseek_v32_widek_small's index_topk 128 exceeds every sequence (topk of all T keys).
    # Train fp32 / bf16 (seq 256: the indexer's float32 scores and matmul's expanded key copy at the peak), infer,
    # generate (the indexer's key cache beside the full K/V). Every third held out.
    mode_cases(out, [("train", "deepseek_v32_small", 2, 64, "adamw", "fp32", False, 0),
                     ("train", "deepseek_v32_small", 2, 64, "adamw", "bf16", False, 0),
                     ("infer", "deepseek_v32_small", 2, 64, None, "fp32", False, 0),
                     ("infer", "deepseek_v32_small", 1, 96, None, "bf16", False, 0),
                     ("generate", "deepseek_v32_small", 1, 64, 16, "fp32", False, 0),
                     ("generate", "deepseek_v32_small", 2, 32, 24, "bf16", False, 0),
                     ("train", "deepseek_v32_small", 2, 256, "adamw", "fp32", False, 0),
                     ("infer", "deepseek_v32_widek_small", 2, 48, None, "fp32", False, 0),
                     ("generate", "deepseek_v32_widek_small", 2, 40, 12, "fp32", False, 0),
                     ("train", "deepseek_v32_widek_small", 2, 48, "adamw", "bf16", False, 0)], experts="grouped_mm")
    # issue 31 (towers): SiglipVisionModel (siglip_replica.py, modeling_siglip.py @ efa7189c): the patch Conv2d, the
    # position nn.Embedding (no CLS token), pre-LN SiglipEncoderLayers, post_layernorm, the pooling head
    # (probe.repeat, nn.MultiheadAttention(probe, h, h), layernorm, MLP); the training step's loss
    # pooler_output.mean() (the model returns none). siglip_vision_small: 64 x 64 images of 8 x 8 patches (--seq 64),
    # attention_dropout 0.1; siglip_vision_nohead_small: 48 x 48 of 8 x 8 (36), vision_use_head false. Train (full,
    # every layer checkpointed, LoRA r=8 on q_proj,v_proj: PEFT's mapping, peft @ 00073fe8, has no siglip), fp32 and
    # bf16, and --mode infer. Every third held out.
    sg = [
        ("train", "siglip_vision_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "siglip_vision_small", 4, 64, "sgd", "bf16", False, 0),
        ("train", "siglip_vision_small", 2, 64, "adamw", "fp32", True, 0),
        ("infer", "siglip_vision_small", 4, 64, None, "fp32", False, 0),
        ("train", "siglip_vision_small", 2, 64, "adamw", "bf16", False, 8),
        ("infer", "siglip_vision_small", 2, 64, None, "bf16", False, 0),
        ("train", "siglip_vision_nohead_small", 3, 36, "adam", "fp32", False, 0),
        ("infer", "siglip_vision_nohead_small", 4, 36, None, "fp32", False, 0),
        ("train", "siglip_vision_small", 4, 64, "sgd", "fp32", False, 0),
    ]
    mode_cases(out, sg, lora_targets="q_proj,v_proj", train=dict(lora_dropout=0.0))
    # issue 26: mixtral at transformers 5's stacked experts with --liger: LigerExperts.forward bound to the experts
    # (LigerFusedMoEFunction, liger_patch_replica.py, Liger-Kernel @ ead96b61 ops/fused_moe.py l.160-434; the
    # experts of moe_v5_replica.py), train fp32 / bf16, --grad-ckpt, LoRA (PEFT over the patched model: the experts
    # frozen). Every third held out.
    train_cases(out, [("mixtral_small", 2, 64, "sgd", "fp32", False, 0), ("mixtral_small", 2, 64, "adamw", "bf16", False, 0),
                      ("mixtral_small", 2, 64, "sgd", "fp32", True, 0), ("mixtral_small", 2, 64, "adamw", "fp32", False, 8),
                      ("mixtral_small", 2, 96, "sgd", "bf16", True, 0), ("mixtral_small", 1, 128, "sgd", "bf16", False, 0)],
                liger=True, experts="grouped_mm")
    # issue 31: GLM-5 (glm_moe_dsa) under transformers (dsa_replica.py GlmMoeDsaAttention, modular_glm_moe_dsa.py @
    # 01f8fa55): deepseek_v32_small's sizes, every indexer layer "full", DeepSeek-V3's apply_rotary_pos_emb_interleave
    # (the view / transpose / reshape copy) in the attention and in the indexer. Train fp32 / bf16 (seq 256: the
    # indexer at the peak), infer, generate. Every third held out.
    mode_cases(out, [("train", "glm_moe_dsa_small", 2, 64, "adamw", "fp32", False, 0),
                     ("train", "glm_moe_dsa_small", 2, 64, "adamw", "bf16", False, 0),
                     ("infer", "glm_moe_dsa_small", 2, 64, None, "fp32", False, 0),
                     ("infer", "glm_moe_dsa_small", 1, 96, None, "bf16", False, 0),
                     ("generate", "glm_moe_dsa_small", 1, 64, 16, "fp32", False, 0),
                     ("generate", "glm_moe_dsa_small", 2, 32, 24, "bf16", False, 0),
                     ("train", "glm_moe_dsa_small", 2, 256, "adamw", "fp32", False, 0)], experts="grouped_mm")
    # issue 31 (VLMs): MllamaForConditionalGeneration without an image (mllama_replica.py, modeling_mllama.py @ befb7955:
    # MllamaTextModel.forward skips the cross-attention layers; the tower, projector and cross-attention layers loaded,
    # never run): mllama_small's 4 self-attention layers and 1 cross-attention layer, embed_tokens of vocab_size + 8.
    # Train fp32 / bf16 / checkpointed / LoRA r=8 on q_proj,v_proj (PEFT's mapping, peft @ 00073fe8, has no mllama; PEFT
    # also wraps the tower's and the cross-attention layer's q_proj / v_proj), SGD at batch 4, generate. Every third held out.
    mode_cases(out, [("train", 2, 64, "adamw", "fp32", False, 0), ("train", 2, 64, "adamw", "bf16", False, 0),
                     ("train", 2, 64, "adamw", "fp32", True, 0), ("train", 2, 64, "adamw", "bf16", False, 8),
                     ("train", 4, 48, "sgd", "fp32", False, 0), ("generate", 1, 32, 8, "fp32", False, 0)],
               config="mllama_small", lora_targets="q_proj,v_proj", train=dict(lora_dropout=0.0))
    # issue 31 (vision towers of VLMs): paligemma (paligemma_replica.py: PaliGemmaForConditionalGeneration as
    # modeling_paligemma.py @ efa7189c runs it, siglip_replica.py's SigLIP tower and the projector's Linear frozen, the
    # forward's float [L, L + 1] mask into every layer's sdpa, its own loss on the fp32 logits' shifted copy): any image
    # resized to image_size, (image_size / patch_size)^2 image tokens (64, 256) before --seq's text; train full / ckpt /
    # LoRA (o_proj, down_proj: the language model's alone), fp32 / bf16, infer; then the text alone (the mask and the
    # loss without the tower run). Every third held out.
    pg = [
        ("train", "paligemma_small", 1, 32, "adamw", "fp32", False, 0),
        ("train", "paligemma_small", 1, 64, "adamw", "bf16", False, 0),
        ("train", "paligemma_small", 1, 32, "sgd", "fp32", True, 0),
        ("train", "paligemma_small", 2, 32, "adamw", "fp32", False, 8),
        ("train", "paligemma224_small", 1, 16, "adamw", "fp32", False, 0),
        ("train", "paligemma224_small", 1, 16, "adamw", "bf16", True, 8),
        ("infer", "paligemma_small", 1, 32, None, "fp32", False, 0),
        ("infer", "paligemma224_small", 1, 16, None, "bf16", False, 0),
        ("infer", "paligemma_small", 2, 48, None, "fp32", False, 0),
    ]
    mode_cases(out, pg, lora_targets="o_proj,down_proj", train=dict(lora_dropout=0.0), image="224x224", images=1)
    train_cases(out, [("paligemma_small", 1, 64, "adamw", "fp32", False, 0), ("paligemma_small", 2, 48, "sgd", "bf16", False, 0),
                      ("paligemma_small", 1, 96, "adamw", "fp32", True, 0)])
    # issue 31 (towers): SiglipModel (siglip_replica.py, modeling_siglip.py @ efa7189c): the vision tower
    # (SiglipVisionModel's, the pooling head, attention_dropout 0.1) first, then SiglipTextTransformer (token + position
    # embeddings, SiglipEncoderLayers without a mask, final_layer_norm, the last token, head), the normalized
    # embeddings, logits_per_text [B, B], and with return_loss=True the sigmoid loss (eye-based labels, logsigmoid,
    # sum, mean). siglip_small: both towers 64 wide, 2 layers, 32 x 32 images of 8 x 8, 16 text positions (--seq 16,
    # the processor's padding="max_length"; 10 and 8 below it). Train (full, every layer of both towers checkpointed,
    # LoRA r=8 on q_proj,v_proj: PEFT has no mapping for siglip), fp32 and bf16, and --mode infer. Every third held out.
    mode_cases(out, [("train", 4, 16, "adamw", "fp32", False, 0), ("train", 4, 16, "sgd", "bf16", False, 0),
                     ("train", 4, 16, "adamw", "fp32", True, 0), ("infer", 4, 16, None, "fp32", False, 0),
                     ("train", 2, 16, "adamw", "bf16", False, 8), ("infer", 3, 16, None, "bf16", False, 0),
                     ("train", 3, 10, "sgd", "fp32", False, 0), ("train", 4, 16, "sgd", "bf16", True, 0),
                     ("infer", 2, 8, None, "fp32", False, 0)],
               config="siglip_small", lora_targets="q_proj,v_proj")
    # issue 31: MarianMTModel as a row of bart's (bart_replica.py model_type marian, modeling_marian.py @00b676f8:
    # MarianSinusoidalPositionalEmbedding frozen and looked up under no_grad, embed_tokens(ids) * embed_scale, no
    # layernorm_embedding, post-LN layers as bart's, final_logits_bias): marian_small (shared embeddings, swish,
    # scale_embedding, dropouts 0.1) and marian_unshared_small (share_encoder_decoder_embeddings false: deep copies,
    # relu, no dropout); training (full, LoRA q_proj,v_proj, every layer checkpointed), infer and generate (greedy;
    # 2 beams in the second list). Every third held out in each list.
    mode_cases(out, [
        ("train", "marian_small", 2, 96, "adamw", "fp32", False, 0),
        ("train", "marian_small", 2, 64, "adamw", "bf16", False, 8),
        ("infer", "marian_small", 4, 128, None, "fp32", False, 0),
        ("train", "marian_small", 2, 96, "adamw", "fp32", True, 8),
        ("train", "marian_unshared_small", 2, 80, "sgd", "fp32", True, 0),
        ("train", "marian_unshared_small", 2, 64, "adamw", "bf16", False, 0),
        ("generate", "marian_small", 2, 48, 8, "fp32", False, 0),
        ("generate", "marian_unshared_small", 1, 64, 10, "bf16", False, 0),
        ("infer", "marian_unshared_small", 2, 96, None, "bf16", False, 0),
    ], lora_targets="q_proj,v_proj", train=dict(lora_dropout=0.0))
    mode_cases(out, [("generate", "marian_small", 1, 40, 6, "fp32", False, 0),
                     ("generate", "marian_unshared_small", 2, 32, 6, "fp32", False, 0)], num_beams=2)
    # marian_gen_small: marian_small with the Hub configs' bad_words_ids [[pad]] (NoBadWordsLogitsProcessor: length_1_bias
    # once, zeros_like + add every step), greedy fp32 / bf16 and 2 beams
    mode_cases(out, [("generate", "marian_gen_small", 2, 48, 8, "fp32", False, 0),
                     ("generate", "marian_gen_small", 1, 64, 10, "bf16", False, 0),
                     ("generate", "marian_gen_small", 1, 40, 6, "fp32", False, 0)], num_beams=1)
    out[-1]["num_beams"] = 2
    # PegasusForConditionalGeneration (bart_replica.py model_type pegasus, modeling_pegasus.py @00b676f8: marian's
    # sinusoidal positions, MBart's pre-LN layers, each stack's final layer_norm): pegasus_small (relu,
    # scale_embedding, dropouts 0.1); training (full, LoRA q_proj,v_proj, checkpointed), infer, generate (greedy fp32 /
    # bf16, 2 beams). Every third held out.
    mode_cases(out, [
        ("train", "pegasus_small", 2, 96, "adamw", "fp32", False, 0),
        ("train", "pegasus_small", 2, 64, "adamw", "bf16", False, 8),
        ("infer", "pegasus_small", 4, 128, None, "fp32", False, 0),
        ("train", "pegasus_small", 2, 96, "sgd", "fp32", True, 0),
        ("generate", "pegasus_small", 2, 48, 8, "fp32", False, 0),
        ("generate", "pegasus_small", 1, 64, 10, "bf16", False, 0),
    ], lora_targets="q_proj,v_proj", train=dict(lora_dropout=0.0))
    mode_cases(out, [("generate", "pegasus_small", 1, 40, 6, "fp32", False, 0)], num_beams=2)
    # issue 31: Ministral 3 (ministral3; near_llama_replica.py Ministral3Attention, modular_ministral3.py @ 00b364c7:
    # MistralAttention with q scaled by the llama-4 attention scale after the rotation, in q's dtype): ministral3_small
    # (4 layers, 128 wide, 4 heads of 32, Ministral3Config's yarn rope_parameters). Train fp32 / bf16 at seq 64 and 256,
    # infer, generate. Every third held out.
    mode_cases(out, [("train", 2, 64, "adamw", "fp32", False, 0), ("train", 2, 256, "sgd", "bf16", False, 0),
                     ("train", 1, 256, "sgd", "fp32", False, 0), ("infer", 2, 128, None, "bf16", False, 0),
                     ("generate", 1, 64, 16, "fp32", False, 0), ("generate", 2, 32, 24, "bf16", False, 0)],
               config="ministral3_small")
    # issue 31: GLM-5.x's "shared" indexer layers (dsa_replica.py GlmMoeDsaAttention, modular_glm_moe_dsa.py @ 01f8fa55:
    # no indexer in a shared layer, the previous full layer's top-k threaded through the model's loop):
    # glm_moe_dsa_shared_small, glm_moe_dsa_small's sizes in 4 layers, indexer_types full, shared, shared, full. Train
    # fp32 / bf16, seq 256 (the indexer at the peak), infer, generate (the indexer keys of the full layers alone).
    # Every third held out.
    mode_cases(out, [("train", 2, 64, "adamw", "fp32", False, 0), ("infer", 2, 64, None, "fp32", False, 0),
                     ("generate", 2, 32, 24, "bf16", False, 0), ("train", 2, 256, "adamw", "fp32", False, 0),
                     ("train", 2, 64, "adamw", "bf16", False, 0), ("generate", 1, 64, 16, "fp32", False, 0)],
               config="glm_moe_dsa_shared_small", experts="grouped_mm")
    # MBartForConditionalGeneration (bart_replica.py model_type mbart, modeling_mbart.py @efa7189c: bart's learned
    # positions (+ 2) and layernorm_embedding, the pre-LN layers, each stack's final layer_norm, its shift_tokens_right):
    # mbart_small (gelu, scale_embedding, dropouts 0.1, forced_eos_token_id 2); training (full, LoRA q_proj,v_proj,
    # checkpointed), infer, generate (greedy fp32 / bf16, 2 beams). Every third held out.
    mode_cases(out, [
        ("train", "mbart_small", 2, 96, "adamw", "fp32", False, 0),
        ("train", "mbart_small", 2, 64, "adamw", "bf16", False, 8),
        ("infer", "mbart_small", 4, 128, None, "fp32", False, 0),
        ("train", "mbart_small", 2, 96, "sgd", "fp32", True, 0),
        ("generate", "mbart_small", 2, 48, 8, "fp32", False, 0),
        ("generate", "mbart_small", 1, 64, 10, "bf16", False, 0),
    ], lora_targets="q_proj,v_proj", train=dict(lora_dropout=0.0))
    mode_cases(out, [("generate", "mbart_small", 1, 40, 6, "fp32", False, 0)], num_beams=2)
    # M2M100ForConditionalGeneration (bart_replica.py model_type m2m_100, modeling_m2m_100.py @efa7189c: the sinusoidal
    # positions a non-persistent buffer indexed from the padding mask, no layernorm_embedding, the pre-LN layers and
    # each stack's final layer_norm, no final_logits_bias): m2m100_small (relu, scale_embedding, dropouts 0.1, layerdrop
    # 0); training (full, LoRA q_proj,v_proj, checkpointed), infer, generate (greedy fp32 / bf16, 2 beams). Every third
    # held out.
    mode_cases(out, [
        ("train", "m2m100_small", 2, 96, "adamw", "fp32", False, 0),
        ("train", "m2m100_small", 2, 64, "adamw", "bf16", False, 8),
        ("infer", "m2m100_small", 4, 128, None, "fp32", False, 0),
        ("train", "m2m100_small", 2, 96, "sgd", "fp32", True, 0),
        ("generate", "m2m100_small", 2, 48, 8, "fp32", False, 0),
        ("generate", "m2m100_small", 1, 64, 10, "bf16", False, 0),
    ], lora_targets="q_proj,v_proj", train=dict(lora_dropout=0.0))
    mode_cases(out, [("generate", "m2m100_small", 1, 40, 6, "fp32", False, 0)], num_beams=2)
    # issue 31 (VLMs): MllamaForConditionalGeneration with images (mllama_replica.py, modeling_mllama.py @ befb7955:
    # MllamaVisionModel's tiles, the local transformer's hidden states kept, the global gated transformer, the
    # projector, the cross-attention layers over the tiles' states with the cross-attention mask; the processor's
    # pixel_values zero-padded to max_image_tiles whatever the image, image_processing_mllama.py @ 0350540d).
    # mllama_vision_small: mllama_small's text, a 64-wide 4 + 1-layer tower on 56-pixel tiles (17 patches padded to 24).
    # The tower and projector frozen; train full fp32 / bf16, checkpointed, SGD, LoRA on the MLPs (the language model
    # alone) and on q_proj,v_proj (PEFT also wraps the tower's: their adapters' backward runs through it), infer, generate
    # (the tower in the prefill, the cross-attention keys / values cached, the cross_attention_mask grown a row a step);
    # 1 or 2 images per sample. vramcalc models train and infer (src/hf/hf_mllama.c, layers/mllama.c); measured.json's
    # known_gap stays on the generate cases (refused) and on LoRA q_proj,v_proj (PEFT's adapters in the tower, whose
    # graph vramcalc does not build). Every third held out.
    for i, (mode, b, s_, prec, ck, lora, tg, img, n) in enumerate([
            ("train", 1, 64, "fp32", False, 0, None, "600x400", 1),
            ("train", 2, 64, "bf16", False, 0, None, "560x560", 1),
            ("train", 2, 64, "bf16", True, 0, None, "1000x300", 2),
            ("train", 1, 96, "bf16", False, 8, "gate_proj,up_proj,down_proj", "600x400", 1),
            ("train", 2, 48, "fp32", False, 8, "q_proj,v_proj", "800x800", 2),
            ("infer", 1, 64, "fp32", False, 0, None, "600x400", 1),
            ("infer", 2, 32, "bf16", False, 0, None, "300x900", 2),
            ("train", 1, 64, "fp32", False, 0, None, "56x56", 1),
            ("generate", 1, 32, "fp32", False, 0, None, "600x400", 1),
            ("generate", 2, 24, "bf16", False, 0, None, "400x800", 2)]):
        c = dict(config="configs/mllama_vision_small.json", mode=mode, batch=b, precision=prec, image=img, images=n,
                 held_out=(i % 3 == 2), **({"prompt": s_, "new_tokens": 8} if mode == "generate" else {"seq": s_}))
        if mode == "train":
            c.update(optim="sgd" if i == 4 else "adamw", ckpt=ck, lora=lora, lora_dropout=0.0,
                     **({"lora_targets": tg} if lora else {}))
        out.append(c)
    # issue 31 (towers): CLIPModel (clip_replica.py, modeling_clip.py @ 000f1ffd) on SigLIP's two-tower path: the
    # vision tower (class token, pre_layrnorm, CLIPEncoderLayers, post_layernorm on the pooled token, attention_dropout
    # 0.1), the causal text tower (final_layer_norm, the eos position's row), the bias-free projections,
    # _get_vector_norm, logits_per_text [B, B], and with return_loss=True clip_loss (two cross_entropy). clip_small:
    # text 64 wide, vision 48 wide, 2 layers each, projection_dim 32, 32 x 32 images of 8 x 8, 16 text positions
    # (--seq 16, the processor's padding="max_length"; 10 below it). Train (full, every layer of both towers
    # checkpointed, LoRA r=8 on q_proj,v_proj: PEFT has no mapping for clip), fp32 and bf16, and --mode infer. Every
    # third held out.
    mode_cases(out, [("train", 4, 16, "adamw", "fp32", False, 0), ("train", 4, 16, "sgd", "bf16", False, 0),
                     ("train", 4, 16, "adamw", "fp32", True, 0), ("infer", 4, 16, None, "fp32", False, 0),
                     ("train", 2, 16, "adamw", "bf16", False, 8), ("infer", 3, 16, None, "bf16", False, 0),
                     ("train", 3, 10, "sgd", "fp32", False, 0), ("train", 4, 16, "sgd", "bf16", True, 0),
                     ("infer", 2, 10, None, "fp32", False, 0)],
               config="clip_small", lora_targets="q_proj,v_proj")
    # issue 31: PaliGemma 2 (paligemma_replica.py with text_config model_type gemma2: Gemma2ForCausalLM as
    # modeling_gemma2.py @ efa7189c runs it under PaliGemma's [L, L + 1] float mask: each sliding layer's ones_like /
    # tril / where over [B, 1, L, L + 1], the final soft-capping before PaliGemma's fp32 loss): paligemma2_small (4
    # layers, sliding_window 32 under 64 image tokens + --seq); train full / ckpt / LoRA (o_proj, down_proj), fp32 /
    # bf16, with the image, then the text alone. Every third held out.
    mode_cases(out, [
        ("train", "paligemma2_small", 1, 32, "adamw", "fp32", False, 0),
        ("train", "paligemma2_small", 1, 64, "adamw", "bf16", False, 0),
        ("train", "paligemma2_small", 1, 32, "sgd", "fp32", True, 0),
        ("train", "paligemma2_small", 2, 32, "adamw", "fp32", False, 8),
        ("train", "paligemma2_small", 2, 48, "adamw", "bf16", True, 0),
        ("train", "paligemma2_small", 1, 96, "sgd", "fp32", False, 0),
    ], lora_targets="o_proj,down_proj", train=dict(lora_dropout=0.0), image="224x224", images=1)
    train_cases(out, [("paligemma2_small", 1, 64, "adamw", "fp32", False, 0), ("paligemma2_small", 2, 48, "adamw", "bf16", False, 0),
                      ("paligemma2_small", 1, 96, "sgd", "fp32", True, 0)])
    # issue 31 (towers): SmolVLMForConditionalGeneration / Idefics3ForConditionalGeneration on text alone
    # (idefics3_replica.py, modeling_smolvlm.py @ b282e23b, modeling_idefics3.py @ 9a80143c: LlamaModel on
    # embed_tokens(input_ids), lm_head, ForCausalLMLoss; the vision transformer and the connector built trainable, never
    # run). smolvlm_small (untied, scale_factor 2), idefics3_small (tied, scale_factor 4). Train fp32 / bf16 /
    # checkpointed / LoRA r=8 on o_proj,down_proj (PEFT's mapping, peft @ 00073fe8, has neither; the tower has no
    # o_proj / down_proj), SGD at batch 4, generate. Every third held out.
    mode_cases(out, [
        ("train", "smolvlm_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "smolvlm_small", 2, 64, "adamw", "bf16", False, 0),
        ("train", "smolvlm_small", 2, 64, "adamw", "fp32", True, 0),
        ("train", "smolvlm_small", 2, 64, "adamw", "bf16", False, 8),
        ("train", "smolvlm_small", 4, 48, "sgd", "fp32", False, 0),
        ("generate", "smolvlm_small", 1, 32, 8, "fp32", False, 0),
        ("train", "idefics3_small", 2, 64, "adamw", "fp32", False, 0),
        ("generate", "idefics3_small", 2, 32, 12, "bf16", False, 0),
        ("train", "idefics3_small", 2, 48, "sgd", "bf16", False, 0),
    ], lora_targets="o_proj,down_proj", train=dict(lora_dropout=0.0))
    # --loss nll (issue 26): TRL SFTTrainer's loss_type "nll", its default before TRL 1.7 (measure_llm.py, from
    # huggingface/trl @f2cd5771 sft_trainer.py compute_loss l.1700-1830): the model's ForCausalLMLoss, then the
    # no-grad entropy_from_logits (its reshape copies the shifted logits from batch 2) and token accuracy over
    # outputs.logits, held until compute_loss returns; the collator's attention_mask resident. Full and LoRA r=8,
    # with and without layer checkpointing, batch 1 to 4. Every third held out (first run in the suite).
    trl_nll = [
        ("llama_vocab8k", 2, 64, "adamw", "fp32", False, 0),
        ("llama_vocab8k", 2, 64, "adamw", "bf16", False, 0),
        ("llama_vocab8k", 1, 64, "adamw", "bf16", False, 0),
        ("qwen2_vocab6k", 3, 96, "adamw", "bf16", True, 0),
        ("qwen2_vocab6k", 2, 80, "adamw", "fp32", False, 8),
        ("llama_small", 4, 128, "sgd", "bf16", True, 8),
        ("llama_vocab8k", 3, 100, "sgd", "fp32", True, 0),
        ("qwen3_small", 2, 120, "adamw", "bf16", False, 8),
        ("llama_wide", 2, 150, "adamw", "bf16", True, 0),
    ]
    train_cases(out, trl_nll, loss="nll")
    # issue 31 (towers): SmolVLM / Idefics3 with an image (idefics3_replica.build_image: SmolVLMImageProcessor's
    # frames, image_processing_smolvlm.py @ 72486fb4; get_image_features, the connector's pixel_shuffle and
    # inputs_merger, modeling_smolvlm.py @ b282e23b; the tower and connector frozen). smolvlm_small: 64x32 -> 2 x 4
    # tiles and the global image (9 frames of 16 patches, 4 tokens each); 32x96 -> 4 x 2 (9 frames); idefics3_small
    # (scale_factor 4: 1 token a frame): 64x32 -> 9 frames. Train full / checkpointed / LoRA r=8 on o_proj,down_proj,
    # fp32 / bf16, --mode infer, generate (pixel_values in the prefill). Every third held out.
    mode_cases(out, [
        ("train", "smolvlm_small", 1, 32, "adamw", "fp32", False, 0),
        ("train", "smolvlm_small", 2, 32, "adamw", "bf16", False, 0),
        ("train", "smolvlm_small", 1, 32, "adamw", "fp32", True, 0),
        ("train", "smolvlm_small", 1, 48, "adamw", "bf16", False, 8),
        ("infer", "smolvlm_small", 1, 32, None, "fp32", False, 0),
        ("generate", "smolvlm_small", 1, 16, 8, "fp32", False, 0),
        ("infer", "smolvlm_small", 2, 16, None, "bf16", False, 0),
        ("generate", "smolvlm_small", 2, 16, 6, "bf16", False, 0),
        ("train", "idefics3_small", 1, 32, "sgd", "fp32", False, 0),
    ], lora_targets="o_proj,down_proj", train=dict(lora_dropout=0.0), image="64x32", images=1)
    mode_cases(out, [
        ("train", "smolvlm_small", 1, 32, "adamw", "fp32", False, 0),
        ("infer", "smolvlm_small", 1, 32, None, "fp32", False, 0),
        ("train", "smolvlm_small", 1, 32, "sgd", "bf16", True, 0),
    ], lora_targets="o_proj,down_proj", train=dict(lora_dropout=0.0), image="32x96", images=1)
    # issue 31: PaliGemma (text_config gemma) outside training (paligemma_replica.py, modeling_paligemma.py @ efa7189c):
    # generate() greedy with a DynamicCache, PaliGemmaForConditionalGeneration.prepare_inputs_for_generation's
    # pixel_values in the prefill alone, _update_causal_mask from generate()'s 2-D attention_mask in every pass (the
    # clone, the padding sum, its == 0, the masked_fill), logits_to_keep=1; with the image (64 and 256 image tokens
    # before --prompt's text), then the text alone, and --mode infer on the text alone. Every third held out.
    mode_cases(out, [
        ("generate", "paligemma_small", 1, 16, 4, "fp32", False, 0),
        ("generate", "paligemma_small", 2, 32, 8, "bf16", False, 0),
        ("generate", "paligemma224_small", 1, 16, 4, "fp32", False, 0),
    ], image="224x224", images=1)
    mode_cases(out, [
        ("generate", "paligemma_small", 1, 32, 8, "fp32", False, 0),
        ("generate", "paligemma_small", 2, 48, 8, "bf16", False, 0),
        ("generate", "paligemma_small", 1, 64, 16, "fp32", False, 0),
        ("infer", "paligemma_small", 1, 48, None, "fp32", False, 0),
        ("infer", "paligemma_small", 2, 32, None, "bf16", False, 0),
        ("infer", "paligemma_small", 1, 96, None, "bf16", False, 0),
    ])
    # PaliGemma 2's --mode infer: Gemma2Model.forward's HybridCache (modeling_gemma2.py @ efa7189c; paligemma_replica.py
    # HybridCache: zeros per layer at its first update, the global layers' index_put_, the sliding layers' copies or,
    # past sliding_window 32, the whole states), with the image (64 image tokens + --seq: past the window) and on the
    # text alone (16 tokens: within it). Every third held out.
    for i, (b, s, p, img) in enumerate([(1, 32, "fp32", True), (2, 16, "bf16", False), (1, 48, "bf16", True)]):
        out.append(dict(config="configs/paligemma2_small.json", mode="infer", batch=b, seq=s, precision=p,
                        held_out=(i % 3 == 2), **(dict(image="224x224", images=1) if img else {})))
    # issue 31: Glm4vForConditionalGeneration (GLM-4.1V) on text alone (glm4v_replica.py, modeling_glm4v.py @ 03eac6f6:
    # Glm4's decoder with mrope's 3-row cos / sin and the per-layer section cat, q/k/v biased, head_dim 32 with 16
    # rotary dims in sections [2, 3, 3]; Glm4vVisionModel's weights loaded frozen, never run). Train fp32 / bf16 /
    # checkpointed / LoRA r=8 on q_proj,v_proj (PEFT's mapping, peft @ 00073fe8, has no glm4v), SGD, --mode infer,
    # generate. Every third held out.
    mode_cases(out, [
        ("train", "glm4v_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "glm4v_small", 2, 96, "adamw", "bf16", False, 0),
        ("train", "glm4v_small", 1, 128, "sgd", "bf16", True, 8),
        ("train", "glm4v_small", 4, 48, "adamw", "bf16", False, 8),
        ("train", "glm4v_small", 2, 64, "adamw", "fp32", True, 0),
        ("infer", "glm4v_small", 2, 128, None, "bf16", False, 0),
        ("infer", "glm4v_small", 1, 256, None, "fp32", False, 0),
        ("generate", "glm4v_small", 2, 64, 16, "fp32", False, 0),
        ("generate", "glm4v_small", 1, 128, 8, "bf16", False, 0),
    ], lora_targets="q_proj,v_proj", train=dict(lora_dropout=0.0))
    # --loss sum (issue 26): model(ids).logits.sum(), the simplest loop (measure_llm.py --loss sum). SumBackward0's
    # stride-0 gradient reaches the LM head's mm, whose contiguous copy of it is inside the mm kernel (not read by the
    # harness, --workspace 0); gemma2_small's soft-capping makes new gradients before its head; gemma2/gemma3/qwen3
    # tie the head to the embedding; the LoRA case's head is frozen. Every third held out.
    train_cases(out, [
        ("llama_vocab8k", 2, 64, "sgd", "bf16", False, 0),
        ("llama_vocab8k", 2, 64, "sgd", "fp32", False, 0),
        ("qwen3_small", 2, 64, "adamw", "bf16", False, 8),
        ("gemma2_small", 2, 40, "sgd", "bf16", False, 0),
        ("gemma3_small", 2, 64, "adam", "fp32", True, 0),
        ("llama_vocab8k", 1, 96, "adamw", "fp32", False, 8),
    ], loss="sum")
    # issue 31 (towers): InternVLForConditionalGeneration on text alone (internvl_replica.py, modeling_internvl.py @
    # 2fd44548: Qwen2Model / Qwen3Model on embed_tokens(input_ids), lm_head, ForCausalLMLoss; InternVLVisionModel and
    # the projector built trainable, never run). internvl_small (InternVL3's qwen2 text, untied, attention_bias),
    # internvl35_small (InternVL3.5's qwen3 text, tied; the tower's qk norm, rms_norm, mask token, final layernorm).
    # Train fp32 / bf16 / checkpointed / LoRA r=8 on o_proj,down_proj (PEFT's mapping, peft @ 00073fe8, has no
    # internvl; the tower has neither module), SGD at batch 4, generate. Every third held out.
    mode_cases(out, [
        ("train", "internvl_small", 2, 64, "adamw", "fp32", False, 0),
        ("train", "internvl_small", 2, 64, "adamw", "bf16", False, 0),
        ("train", "internvl_small", 2, 64, "adamw", "fp32", True, 0),
        ("train", "internvl_small", 2, 64, "adamw", "bf16", False, 8),
        ("train", "internvl_small", 4, 48, "sgd", "fp32", False, 0),
        ("generate", "internvl_small", 1, 32, 8, "fp32", False, 0),
        ("train", "internvl35_small", 2, 64, "adamw", "fp32", False, 0),
        ("generate", "internvl35_small", 2, 32, 12, "bf16", False, 0),
        ("train", "internvl35_small", 2, 48, "sgd", "bf16", True, 0),
    ], lora_targets="o_proj,down_proj", train=dict(lora_dropout=0.0))
    # InternVL with an image (internvl_replica.build_image: GotOcr2ImageProcessor's tiles, image_processing_got_ocr2.py
    # @ 0b97ca8d; InternVLModel.get_image_features, pixel_shuffle, the projector and masked_scatter, modeling_internvl.py
    # @ 2fd44548; the tower and projector frozen). 64x32 -> a 2 x 1 grid and the thumbnail (3 tiles of 16 patches, 4
    # tokens each, 14 tokens with <img> / </img>); 32x32 -> one tile; two 96x32 images -> 2 x 4 tiles. Train full /
    # checkpointed / LoRA r=8 on o_proj,down_proj, fp32 / bf16, --mode infer, generate (pixel_values in the prefill).
    # Every third held out.
    mode_cases(out, [
        ("train", "internvl_small", 1, 32, "adamw", "fp32", False, 0),
        ("train", "internvl_small", 2, 32, "adamw", "bf16", False, 0),
        ("train", "internvl_small", 1, 32, "adamw", "fp32", True, 0),
        ("train", "internvl_small", 1, 48, "adamw", "bf16", False, 8),
        ("infer", "internvl_small", 1, 32, None, "fp32", False, 0),
        ("generate", "internvl_small", 1, 16, 4, "fp32", False, 0),
        ("infer", "internvl35_small", 2, 16, None, "bf16", False, 0),
        ("train", "internvl35_small", 1, 32, "sgd", "fp32", False, 0),
        ("generate", "internvl35_small", 2, 16, 6, "bf16", False, 0),
    ], lora_targets="o_proj,down_proj", train=dict(lora_dropout=0.0), image="64x32", images=1)
    mode_cases(out, [
        ("train", "internvl_small", 1, 32, "adamw", "fp32", False, 0),
        ("infer", "internvl_small", 1, 32, None, "fp32", False, 0),
        ("train", "internvl35_small", 1, 32, "adamw", "bf16", True, 0),
    ], image="32x32", images=1)
    mode_cases(out, [("train", "internvl_small", 1, 32, "adamw", "fp32", False, 0)], image="96x32", images=2)
    # issue 31: GLM-4.1V with images (glm4v_replica.build_image, modeling_glm4v.py @ 03eac6f6): Glm4vImageProcessor's
    # smart_resize (image_processing_glm4v.py @ 1505215d, the class's min / max pixels), Glm4vVisionModel run frozen
    # (patch_embed, post_conv_layernorm, the 2-D rotary, the bicubic grid_sample of the position table, RMSNorm blocks
    # with sdpa per image, post_layernorm, the downsample Conv2d, Glm4vVisionPatchMerger), the image embeddings
    # masked_scatter'ed before --seq's text. Train bf16 / fp32 (AdamW, SGD, two images per sample), --mode infer. Every
    # third held out.
    first = len(out)
    mode_cases(out, [
        ("train", "glm4v_small", 1, 64, "adamw", "bf16", False, 0),
        ("train", "glm4v_small", 2, 48, "sgd", "fp32", False, 0),
        ("train", "glm4v_small", 1, 32, "sgd", "bf16", False, 0),
        ("infer", "glm4v_small", 1, 32, None, "bf16", False, 0),
        ("infer", "glm4v_small", 2, 64, None, "fp32", False, 0),
        ("infer", "glm4v_small", 1, 64, None, "fp32", False, 0),
    ], train=dict(lora_dropout=0.0))
    for d, (img, n) in zip(out[first:], [("112x112", 1), ("224x168", 2), ("336x336", 1), ("336x336", 1), ("140x84", 2),
                                         ("476x280", 1)]):
        d.update(image=img, images=n)
    # issue 31, LoRA adapters inside the vision tower with an image: PEFT matches every module by name, so targets
    # the towers share with the language model (q_proj / v_proj, qkv, gate_proj / up_proj / down_proj, fc1 / fc2)
    # adapt the tower too, and its run records autograd from the first adapted projection on (the image features,
    # inputs_embeds and the language model need gradients). One bf16 AdamW case per tower family, and GLM-4.1V's
    # MLP names alone (its language model's MLP is the fused gate_up_proj: only the tower is adapted). Every third
    # held out. Qwen3-VL's tower (qwen3_vl_img_small) measured -4.49% and is not a case yet (issue 31's note).
    tower = "q_proj,v_proj,qkv,gate_proj,up_proj,down_proj,fc1,fc2"
    for i, (cfg, seq, img, targets) in enumerate([
            ("qwen2_5_vl_small", 64, "224x224", tower), ("gemma3_vl_small", 64, "640x480", tower),
            ("qwen2_vl_small", 64, "224x224", tower), ("paligemma_small", 32, "224x224", tower),
            ("smolvlm_small", 32, "64x32", tower), ("idefics3_small", 32, "64x32", tower),
            ("internvl_small", 32, "64x32", tower), ("glm4v_small", 64, "112x112", tower),
            ("mistral3_small", 64, "224x168", tower), ("glm4v_small", 64, "112x112", "gate_proj,up_proj")]):
        out.append(dict(config="configs/%s.json" % cfg, mode="train", batch=1, seq=seq, optim="adamw", precision="bf16",
                        ckpt=False, lora=8, lora_targets=targets, lora_dropout=0.0, image=img, images=1,
                        held_out=(i % 3 == 2)))
    return out


def argv_of(c):
    a = [os.path.join(HERE, c["config"]), "--mode", c["mode"], "--batch", str(c["batch"]),
         "--precision", c["precision"], "--json"]
    if c.get("experts"):
        a += ["--experts", c["experts"]]
    if c.get("attn"):  # reference.py's attn_impl (default: sdpa, gemma2 eager)
        a += ["--attn", c["attn"]]
    if c["mode"] == "train":
        a += ["--seq", str(c["seq"]), "--optim", c["optim"]]
        if c["ckpt"]:
            a.append("--ckpt")
        if c.get("ckpt_every"):
            a += ["--ckpt-every", str(c["ckpt_every"])]
        if c.get("ckpt_ops"):
            a.append("--ckpt-ops")
        if c.get("ckpt_kind"):
            a += ["--ckpt-kind", c["ckpt_kind"]]
        if c.get("act_offload"):
            a += ["--act-offload", c["act_offload"]]
        if c["lora"]:
            a += ["--lora", str(c["lora"]), "--lora-dropout", str(c.get("lora_dropout", 0.0))]
            if c.get("lora_targets"):
                a += ["--lora-targets", c["lora_targets"]]
            if c.get("lora_dtype"):
                a += ["--lora-dtype", c["lora_dtype"]]
        if c.get("modules_to_save"):
            a += ["--modules-to-save", c["modules_to_save"]]
        if c.get("peft"):  # peft_replica.py: IA3 and LN tuning take their targets and dtype without a rank
            a += ["--peft", c["peft"]]
            if not c["lora"]:
                a += (["--lora-targets", c["lora_targets"]] if c.get("lora_targets") else []) + \
                     (["--lora-dtype", c["lora_dtype"]] if c.get("lora_dtype") else [])
        if c.get("loss"):
            a += ["--loss", c["loss"]]
        if c.get("loss_chunks"):
            a += ["--loss-chunks", str(c["loss_chunks"])]
        if c.get("zero_grad"):
            a += ["--zero-grad", c["zero_grad"]]
        if c.get("hold_output"):
            a.append("--hold-output")
        if c.get("packing"):
            a.append("--packing")
        if c.get("liger"):  # Liger-Kernel's patch set (liger_patch_replica.py)
            a.append("--liger")
        if c.get("liger_kernels"):  # the kernels switched on (liger_patch_replica.py KERNELS)
            a += ["--liger-kernels", c["liger_kernels"]]
        if c.get("optim_in_bwd"):
            a.append("--optim-in-bwd")
        if c.get("loss") == "grpo":  # grpo_replica.py: the step generates prompt + new_tokens
            a += ["--prompt", str(c["prompt"]), "--new-tokens", str(c["new_tokens"]), "--beta", str(c["beta"]),
                  "--num-generations", str(c["num_generations"])]
            if c.get("accumulate", 1) > 1:  # steps_per_generation = gradient_accumulation_steps
                a += ["--accumulate", str(c["accumulate"])]
    elif c["mode"] == "infer":  # the no_grad forward of the text encoders (encoder_replica.py), t5 (t5_replica.py)
        # and gemma4_text (gemma4_replica.py)
        a += ["--seq", str(c["seq"])]
    else:
        a += ["--prompt", str(c["prompt"]), "--new-tokens", str(c["new_tokens"])]
        if c.get("cache") == "quantized":
            a += ["--cache", "quantized", "--kv-bits", str(c["kv_bits"]), "--kv-residual-length", str(c["kv_residual"])]
        if c.get("num_beams", 1) > 1:  # beam search (measure_llm.py generate_beams)
            a += ["--num-beams", str(c["num_beams"])]
        if c.get("transformers"):  # the release's prefill (measure_llm.py --transformers)
            a += ["--transformers", c["transformers"]]
    if c.get("target_seq"):  # t5 (t5_replica.py): the decoder's tokens
        a += ["--target-seq", str(c["target_seq"])]
    if c.get("image"):  # qwen2_5_vl (qwen25vl_replica.py), gemma3 (gemma3vl_replica.py): the training cases' too
        a += ["--image", c["image"], "--images", str(c["images"])]
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--out", default=os.path.join(HERE, "measured.json"))
    ap.add_argument("--resume", action="store_true", help="keep the cases already in --out")
    args = ap.parse_args()
    results = []
    done = {}
    if args.resume and os.path.exists(args.out):
        done = {r["id"]: r for r in json.load(open(args.out))["cases"]}
    t0 = time.time()

    def write():
        doc = {"about": "Peak allocated bytes of reference HF causal LMs (reference.py) measured with "
                        "bench/accuracy's allocator counter on torch 1.13 CPU; see README.md",
               "cases": results}
        with open(args.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)

    for i, c in enumerate(cases()):
        if args.only and args.only not in json.dumps(c):
            continue
        if "llm%02d" % i in done:
            results.append(done["llm%02d" % i])
            continue
        cmd = ["/usr/bin/python3", os.path.join(HERE, "measure_llm.py")] + argv_of(c)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print("case %d failed: %s\n%s" % (i, " ".join(cmd), p.stderr[-2000:]), file=sys.stderr)
            return 1
        r = json.loads(p.stdout)
        r["id"] = "llm%02d" % i
        r["held_out"] = c["held_out"]
        r["command"] = "/usr/bin/python3 bench/accuracy/llm/measure_llm.py " + " ".join(
            os.path.relpath(x, os.path.dirname(os.path.dirname(os.path.dirname(HERE)))) if x.endswith(".json") else x
            for x in argv_of(c))
        results.append(r)
        print("%s %-9s %-8s b%d %s %s ckpt=%s lora=%s -> %d (%s)" % (
            r["id"], r["model_type"], r["mode"], r["batch"], r.get("seq", r.get("prompt")),
            r["precision"], r.get("gradient_checkpointing"), bool(r.get("lora")), r["peak_allocated"],
            r["peak_where"] if "peak_where" in r else r["prefill_peak_where"]), flush=True)
        write()
    write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
