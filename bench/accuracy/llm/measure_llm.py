#!/usr/bin/python3
"""measure_llm.py -- peak memory of a reference HF causal LM (reference.py) with torch 1.13 on CPU.

    /usr/bin/python3 bench/accuracy/llm/measure_llm.py CONFIG.json --batch 2 --seq 64 \
        --optim adamw --precision bf16 [--ckpt] [--lora 8 --lora-targets q_proj,v_proj \
        --lora-dropout 0.05] [--attn eager|sdpa] --json
    /usr/bin/python3 bench/accuracy/llm/measure_llm.py CONFIG.json --mode generate \
        --batch 1 --prompt 64 --new-tokens 16 --precision bf16 --json

The protocol is bench/accuracy/measure.py's (SPEC.md section 4), with the same two
libraries: LD_PRELOAD=libmemtrack.so counts c10's CPU allocations (each rounded up to
512 B); libopobserver.so reads the total after every aten operator; compat 2x (2.x
InputBuffer accumulation, wrapped scalars not counted).  Baseline = the total before the
model is built; then the model (and .to(bfloat16) for bf16), LoRA, the int64 input_ids and
labels (resident).  train: model.train(); 3 steps of
    loss = compute_loss(model, input_ids, labels)    # as transformers' Trainer.compute_loss:
                                                      # the outputs (logits) die on return
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
peak = the highest reading during steps 2 and 3.  Optimizers: bench/accuracy/optim2x.py
(2.x foreach Adam / AdamW / SGD), over the trainable parameters only.
generate: model.eval(), torch.no_grad(); greedy generation as transformers'
GenerationMixin._sample runs it (generation/utils.py @000034a) with a DynamicCache
(reference.DynamicCache, cache_utils.py @004999d: every update a torch.cat):
prefill over the prompt with logits_to_keep=1, then one token per step; run twice, the
second measured; prefill and decode peaks reported separately. t5 (t5_replica.generate): generate() of
an encoder-decoder, the prefill phase the attention mask, the encoder over --prompt and the decoder's first
step.
"""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(ACC))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, ACC)
sys.path.insert(0, HERE)

import measure  # noqa: E402  bench/accuracy/measure.py: Tracker, ensure_built, reexec_with_preload


def parse_args(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--mode", default="train", choices=["train", "generate", "infer"],
                    help="infer: the text encoders' (encoder_replica.py), t5's and gemma4_text's (gemma4_replica.py) forward "
                    "under torch.no_grad(), eval()")
    ap.add_argument("-b", "--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--target-seq", type=int, help="t5 (t5_replica.py): the decoder's tokens per sample (labels in "
                    "training, decoder_input_ids with --mode infer); default --seq")
    ap.add_argument("-o", "--optim", default="adamw", choices=["sgd", "momentum", "adam", "adamw"])
    ap.add_argument("-p", "--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--ckpt", action="store_true", help="gradient checkpointing per decoder layer")
    ap.add_argument("--ckpt-every", type=int, default=1,
                    help="with --ckpt: only every N-th decoder layer checkpointed, counting from 1 (torchtune's "
                    "ac_mode selective, ac_option N)")
    ap.add_argument("--ckpt-kind", choices=["non-reentrant", "reentrant"], default="non-reentrant",
                    help="with --ckpt: torch.utils.checkpoint's variant (reentrant: vctorch._checkpoint_reentrant2x, "
                         "reference.py's decoder-only families, full or LoRA)")
    ap.add_argument("--ckpt-ops", action="store_true",
                    help="with --ckpt: torchtitan's op-level selective AC in each checkpointed layer (ac_replica.py)")
    ap.add_argument("--lora", type=int, default=0, help="LoRA rank (0: full fine-tuning)")
    ap.add_argument("--lora-alpha", type=float, default=16)
    ap.add_argument("--lora-dropout", type=float, default=0.0)
    ap.add_argument("--lora-targets", help="default: PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING "
                    "(q_proj,v_proj; gpt_neox: query_key_value)")
    ap.add_argument("--lora-dtype", default="auto", choices=["auto", "fp32", "bf16", "fp16", "model"],
                    help="the adapters' dtype: auto, get_peft_model(autocast_adapter_dtype=True): fp32; model: the base "
                    "weights' (autocast_adapter_dtype=False; torchtune's LoRALinear); fp32/bf16/fp16: that dtype")
    ap.add_argument("--peft", default="lora", choices=["lora", "dora", "ia3", "ln_tuning"],
                    help="lora: reference.py's LoraLinear; dora (LoraConfig use_dora=True, with --lora R), ia3 "
                    "(IA3Config) and ln_tuning (LNTuningConfig; --lora-targets default PEFT's mapping): peft_replica.py")
    ap.add_argument("--modules-to-save", default="", help="PEFT's modules_to_save (peft_replica.py ModulesToSaveWrapper)")
    ap.add_argument("--attn", choices=["eager", "sdpa"], help="default: sdpa, gemma2 eager")
    ap.add_argument("--liger", action="store_true", help="Liger-Kernel's patch set as use_liger_kernel=True applies it "
                    "(liger_patch_replica.py: the RMSNorm, SwiGLU and RoPE Functions, and --loss liger's fused linear "
                    "cross-entropy); llama, mistral, qwen2, qwen3, gemma2, gemma3_text, mixtral, qwen3_moe")
    ap.add_argument("--liger-kernels", default="", help="with --liger: the kernels switched on (liger_patch_replica.py "
                    "KERNELS), every other keyword of apply_liger_kernel_to_<family> False")
    ap.add_argument("--loss", default="hf", choices=["hf", "liger", "cce", "chunked", "mean", "sum", "dpo", "dpo-precomputed", "orpo", "kto",
                                                         "chunked-nll", "grpo", "nll"],
                    help="hf: ForCausalLMLoss; liger: Liger-Kernel's fused linear cross-entropy (liger_replica.py); "
                    "cce: Apple's Cut Cross-Entropy (cce_replica.py); chunked: torchtune's chunked output and "
                    "CEWithChunkedOutputLoss (chunked_replica.py); mean: model(ids).logits.mean(), no labels; "
                    "sum: model(ids).logits.sum(), no labels; dpo: TRL's "
                    "DPOTrainer._compute_loss (dpo_replica.py; --batch counts the 2 x pairs sequences), with a "
                    "reference forward (LoRA: adapters disabled; else a frozen copy); dpo-precomputed: "
                    "precompute_ref_log_probs=True, no reference; orpo: TRL's ORPOTrainer step (orpo_replica.py; "
                    "--batch counts the 2 x pairs sequences), no reference; kto: TRL's KTOTrainer step (kto_replica.py; "
                    "the first half desirable), the KL sequences, a reference as dpo's; chunked-nll: TRL SFTTrainer's "
                    "default loss_type chunked_nll (trl_sft_replica.py), with --packing the padding-free collator; "
                    "nll: TRL SFTTrainer's loss_type nll (its default before TRL 1.7): the model's loss, then "
                    "compute_loss's no-grad entropy and token accuracy over outputs.logits")
    ap.add_argument("--packing", action="store_true",
                    help="TRL's padding_free collator: the --batch sequences of --seq tokens as one row with "
                    "position_ids, transformers' sdpa block-causal mask (packing_replica.py)")
    ap.add_argument("--loss-chunks", type=int, default=8, help="chunked: num_output_chunks (torchtune's default 8)")
    ap.add_argument("--zero-grad", default="none", choices=["none", "zero"],
                    help="none: opt.zero_grad(set_to_none=True); zero: set_to_none=False (the gradients kept, zeroed in place)")
    ap.add_argument("--optim-in-bwd", action="store_true",
                    help="torchtune's optimizer_in_bwd: a one-parameter optimizer per trainable parameter, stepped "
                    "and zero_grad(set_to_none=True) from its gradient hook inside backward (InBackward)")
    ap.add_argument("--act-offload", default="none", choices=["none", "sync"],
                    help="torchtune's OffloadActivations(use_streams=False) around the model's forward, the "
                    "output head and what follows it under its NoOpManager (ac_replica.py)")
    ap.add_argument("--hold-output", action="store_true",
                    help="the loop keeps the model's output (logits) until loss.backward() returns: out = model(...); "
                    "out.loss.backward(); then dropped")
    ap.add_argument("--beta", type=float, default=0.0, help="grpo: GRPOConfig.beta (0.0: no reference model)")
    ap.add_argument("--num-generations", type=int, default=2, help="grpo: GRPOConfig.num_generations")
    ap.add_argument("--accumulate", type=int, default=1,
                    help="grpo: gradient_accumulation_steps (= steps_per_generation, GRPOConfig's default): one "
                         "generation of batch x N completions, then N micro-steps, each with its backward, then the "
                         "optimizer step")
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--cache", default="dynamic", choices=["dynamic", "quantized"],
                    help="generate: DynamicCache, or QuantizedCache with the quanto backend (kvq_replica.py)")
    ap.add_argument("--num-beams", type=int, default=1,
                    help="generate: beam search with N beams, GenerationMixin._beam_search (generate_beams below)")
    ap.add_argument("--transformers", default="4.57", choices=["4.57", "5.0"],
                    help="generate: the release's prefill. 4.57 (the cases measured before this option; their commands "
                    "have none): the loop's first step over the whole prompt. 5.0: GenerationMixin._prefill (generation/"
                    "utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f) over input_ids[:, :-1], its outputs dropped, "
                    "then the loop from the last prompt token (prefill() below)")
    ap.add_argument("--kv-bits", type=int, default=4)
    ap.add_argument("--kv-group-size", type=int, default=64)
    ap.add_argument("--kv-residual-length", type=int, default=128)
    ap.add_argument("--per-op-file", help="train: step 2's per-op timeline (the harness's log) into this file; "
                    "generate: the whole measured generation's")
    ap.add_argument("--experts", default="per_expert", choices=["per_expert", "grouped_mm"],
                    help="MoE experts: per_expert, transformers 4.x's nn.ModuleList loop (reference.py); "
                    "grouped_mm, transformers 5's stacked experts and default (moe_v5_replica.py)")
    ap.add_argument("--image", help="qwen2_5_vl: WxH, each sample's images (qwen25vl_replica.py: smart_resize, "
                    "pixel_values resident like input_ids, the image tokens before --seq's text tokens)")
    ap.add_argument("--images", type=int, default=1, help="with --image: images per sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    return ap.parse_args(argv)


def rounded(t):
    return measure.rounded(t)


class KeepGrads:
    """The optimizer with zero_grad(set_to_none=False) as torch/optim/optimizer.py's
    Optimizer.zero_grad (2.x, foreach) runs it: each existing p.grad detached
    (p.grad.detach_() when it has a grad_fn, else p.grad.requires_grad_(False)), then
    torch._foreach_zero_ over them, in place; the gradients stay allocated for the next
    backward, whose AccumulateGrad adds into them. measure.train_steps calls
    zero_grad(set_to_none=True): this wrapper is the loop that passes False."""

    def __init__(self, opt, params):
        self.opt, self.params = opt, params

    @property
    def state(self):
        return self.opt.state

    def step(self):
        self.opt.step()

    def zero_grad(self, set_to_none=True):
        import torch
        grads = []
        for p in self.params:
            if p.grad is not None:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                grads.append(p.grad)
        if grads:
            torch._foreach_zero_(grads)


class InBackward:
    """torchtune's optimizer_in_bwd (recipes/full_finetune_single_device.py _setup_optimizer @ bd2a0fc7:
    optim_dict = {p: optimizer([p])}; torchtune/training/memory.py register_optim_in_bwd_hooks:
    p.register_post_accumulate_grad_hook(optim_step), optim_step = optim_dict[p].step();
    optim_dict[p].zero_grad()). torch 1.13 has no register_post_accumulate_grad_hook (2.1+): the
    pattern before it, a post hook on the parameter's AccumulateGrad node (kept alive here, so the
    graph reuses it), runs at the same point: once AccumulateGrad has put the gradient in p.grad,
    before the engine runs the next node. The loop's own step() and zero_grad() do nothing, as the
    recipe skips them."""

    def __init__(self, params, make):
        self.opts = {p: make([p]) for p in params}
        self.nodes = []
        for p in params:
            node = p.expand_as(p).grad_fn.next_functions[0][0]  # p's AccumulateGrad

            def hook(grad_inputs, grad_outputs, p=p):
                self.opts[p].step()
                self.opts[p].zero_grad(set_to_none=True)
            node.register_hook(hook)
            self.nodes.append(node)

    @property
    def state(self):
        return {k: v for o in self.opts.values() for k, v in o.state.items()}

    def step(self):
        pass

    def zero_grad(self, set_to_none=True):
        pass


def main(argv):
    args = parse_args(argv)
    measure.reexec_with_preload()
    import gc
    import torch
    import vctorch
    import optim2x
    import reference as R
    import near_llama_replica  # glm4 (issue 31): its FAMILIES run --mode infer too

    torch.manual_seed(args.seed)
    tr = measure.Tracker()
    vctorch.HOOKS.fused = tr.fused
    vctorch.HOOKS.read = tr.read
    with open(args.config) as f:
        raw = json.load(f)
    if raw.get("model_type") == "distilbert":  # DistilBertConfig names its heads n_heads (attribute_map)
        raw.setdefault("num_attention_heads", raw.get("n_heads", 12))
    if raw.get("model_type") in ("t5", "mt5", "umt5"):  # T5Config (MT5Config, UMT5Config) names its heads num_heads (attribute_map)
        raw.setdefault("num_attention_heads", raw.get("num_heads", 8))
        raw.setdefault("vocab_size", 32128)
    if raw.get("model_type") in ("bart", "marian", "pegasus", "mbart", "m2m_100"):  # BartConfig / MarianConfig: num_attention_heads is
        raw.setdefault("num_attention_heads", raw.get("encoder_attention_heads", 16))  # encoder_attention_heads
        raw.setdefault("vocab_size", {"marian": 58101, "m2m_100": 128112}.get(raw.get("model_type"), 50265))
    if raw.get("model_type") == "whisper":  # WhisperConfig: attribute_map num_attention_heads -> encoder_attention_heads
        raw.setdefault("num_attention_heads", raw.get("encoder_attention_heads", 6))
        raw.setdefault("vocab_size", 51865)
    if raw.get("model_type") == "gemma3":  # Gemma3Config: the language model's keys are text_config's
        raw = dict(raw["text_config"], model_type="gemma3", vision_config=raw.get("vision_config") or {},
                   mm_tokens_per_image=raw.get("mm_tokens_per_image", 256),
                   image_token_index=raw.get("image_token_index", 262144))
    if raw.get("model_type") == "paligemma":  # PaliGemmaConfig: text_config's keys, the tower's beside (paligemma_replica.py)
        import paligemma_replica
        raw = paligemma_replica.flatten(raw)
    if raw.get("model_type") in ("qwen3_5", "qwen3_5_moe"):  # Qwen3_5Config: text_config and vision_config
        raw = dict(raw["text_config"], model_type=raw["model_type"], vision_config=raw.get("vision_config") or {},
                   image_token_id=raw.get("image_token_id"))
    if raw.get("model_type") in ("qwen3_vl", "qwen3_vl_moe"):  # Qwen3VL(Moe)Config: the language model's keys are text_config's
        raw = dict(raw["text_config"], model_type=raw["model_type"], vision_config=raw.get("vision_config") or {},
                   image_token_id=raw.get("image_token_id"))
    if raw.get("model_type") == "mistral3":  # Mistral3Config: text_config's keys, the tower's beside them (mistral3_replica.py)
        import mistral3_replica
        raw = mistral3_replica.flatten(raw)
    if raw.get("model_type") in ("smolvlm", "idefics3"):  # text_config's keys, the tower's beside (idefics3_replica.py)
        import idefics3_replica
        raw = idefics3_replica.flatten(raw)
    if raw.get("model_type") == "glm4v":  # Glm4vConfig: text_config's keys, the tower's beside (glm4v_replica.py)
        import glm4v_replica
        raw = glm4v_replica.flatten(raw)
    if raw.get("model_type") == "internvl":  # InternVLConfig: text_config's keys, the tower's beside (internvl_replica.py)
        import internvl_replica
        raw = internvl_replica.flatten(raw)
    if raw.get("model_type") == "mllama":  # MllamaConfig: text_config's keys with their defaults, the tower's beside (mllama_replica.py)
        import mllama_replica
        raw = mllama_replica.flatten(raw)
    if raw.get("model_type") == "gemma4_text":  # Gemma4TextConfig's defaults and layer_types (gemma4_replica.py)
        import gemma4_replica
        raw = gemma4_replica.resolve(raw)
    if raw.get("model_type") == "minimax_m2":  # MiniMaxM2Config: partial_rotary_factor from rotary_dim (minimax_replica.py)
        import minimax_replica
        raw = minimax_replica.resolve(raw)
    if raw.get("model_type") == "granitemoehybrid":  # GraniteMoeHybridConfig's defaults (granite4_replica.py)
        import granite4_replica
        raw = granite4_replica.resolve(raw)
    if raw.get("model_type") == "mamba2":  # Mamba2Config's defaults (mamba2_replica.py)
        import mamba2_replica
        raw = mamba2_replica.resolve(raw)
    if raw.get("model_type") in ("lfm2", "lfm2_moe"):  # Lfm2Config's / Lfm2MoeConfig's defaults, block_ff_dim, layer_types (lfm2_replica.py)
        import lfm2_replica
        raw = lfm2_replica.resolve(raw)
    if raw.get("model_type") == "nemotron_h":  # NemotronHConfig's defaults and the layer pattern (nemotron_h_replica.py)
        import nemotron_h_replica
        raw = nemotron_h_replica.resolve(raw)
    if raw.get("model_type") == "falcon_h1":  # FalconH1Config's defaults (falcon_h1_replica.py)
        import falcon_h1_replica
        raw = falcon_h1_replica.resolve(raw)
    if raw.get("model_type") == "siglip":  # SiglipConfig: text_config's vocabulary and heads for the harness (siglip_replica.py)
        import siglip_replica
        tc = siglip_replica.resolve_text(raw)
        raw = dict(raw, vocab_size=tc["vocab_size"], num_attention_heads=tc["num_attention_heads"])
    if raw.get("model_type") == "clip":  # CLIPConfig: text_config's vocabulary and heads for the harness (clip_replica.py)
        import clip_replica
        tc = clip_replica.resolve_text(raw)
        raw = dict(raw, vocab_size=tc["vocab_size"], num_attention_heads=tc["num_attention_heads"])
    cfg = R.Config(raw)
    cfg.d["_experts_implementation"] = args.experts
    if args.lora_targets is None and args.peft in ("ia3", "ln_tuning"):  # peft utils/constants.py (peft_replica.py)
        import peft_replica
        args.lora_targets = (peft_replica.IA3_TARGETS if args.peft == "ia3" else peft_replica.LN_TUNING_TARGETS)[cfg.model_type]
    if args.lora_targets is None and cfg.model_type in ("distilbert", "bert", "roberta", "xlm-roberta"):
        args.lora_targets = "q_lin,v_lin" if cfg.model_type == "distilbert" else "query,value"  # peft constants.py
    if args.lora_targets is None and cfg.model_type in ("t5", "mt5"):
        args.lora_targets = "q,v"  # peft utils/constants.py: "t5" and "mt5": ["q", "v"]
    if args.lora_targets is None:  # peft utils/constants.py
        args.lora_targets = "query_key_value" if cfg.model_type in ("gpt_neox", "falcon") else "q_proj,v_proj"
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    gc.collect()
    tr.start(install=True)
    tr.O.opobs_set_compat_2x(1)

    import encoder_replica
    encoder = cfg.model_type in encoder_replica.ENCODERS  # *ForSequenceClassification (encoder_replica.py)
    if encoder:
        if args.peft != "lora" or args.modules_to_save or args.mode == "generate" or args.loss != "hf":
            raise SystemExit("measure_llm.py: %s: the encoder replica measures training (full, LoRA, --ckpt; "
                             "--loss hf) and --mode infer only" % cfg.model_type)
        model = encoder_replica.build(cfg.d)
        model.attn_impl = "sdpa"
    elif cfg.model_type in ("t5", "mt5", "umt5"):  # T5ForConditionalGeneration (t5_replica.py; mt5: modeling_mt5.py
        # copies it; umt5: t5_replica.py's umt5 flag)
        if (args.peft != "lora" or args.loss != "hf" or args.modules_to_save or args.ckpt_every != 1 or args.ckpt_ops
                or args.act_offload != "none" or (args.mode == "generate" and (args.cache != "dynamic" or args.lora))):
            raise SystemExit("measure_llm.py: t5: the replica measures training (full, LoRA, --ckpt of every T5Block; "
                             "--loss hf), --mode infer and --mode generate (t5_replica.generate, its own cache)")
        import t5_replica
        model = t5_replica.T5ForConditionalGeneration(t5_replica.Config(raw))
    elif cfg.model_type in ("bart", "marian", "pegasus", "mbart", "m2m_100"):  # BartForConditionalGeneration, MarianMTModel (bart_replica.py)
        if (args.peft != "lora" or args.loss != "hf" or args.modules_to_save or args.ckpt_every != 1 or args.ckpt_ops
                or args.act_offload != "none" or (args.mode == "generate" and (args.cache != "dynamic" or args.lora))):
            raise SystemExit("measure_llm.py: bart: the replica measures training (full, LoRA, --ckpt of every layer; "
                             "--loss hf), --mode infer and --mode generate (bart_replica.generate, --num-beams)")
        import bart_replica
        model = bart_replica.BartForConditionalGeneration(bart_replica.Config(raw))
    elif cfg.model_type == "whisper":  # WhisperForConditionalGeneration (whisper_replica.py)
        if (args.peft != "lora" or args.loss != "hf" or args.modules_to_save
                or args.ckpt_every != 1 or args.ckpt_ops or args.act_offload != "none"
                or (args.mode == "generate" and (args.cache != "dynamic" or args.lora))):
            raise SystemExit("measure_llm.py: whisper: the replica measures training (full, LoRA, --ckpt of every layer; "
                             "--loss hf), --mode infer and --mode generate (whisper_replica.generate: --prompt the "
                             "decoder's init tokens)")
        import whisper_replica
        model = whisper_replica.WhisperForConditionalGeneration(whisper_replica.Config(raw))
    elif cfg.model_type == "paligemma":  # PaliGemmaForConditionalGeneration, tower frozen (paligemma_replica.py)
        import paligemma_replica
        model = paligemma_replica.build(cfg, args.attn)
    elif args.mode == "infer" and cfg.model_type not in ("gemma4_text", "qwen3_vl_moe", "granitemoehybrid", "mamba2", "ernie4_5", "ernie4_5_moe",
                                                         "lfm2", "lfm2_moe", "nemotron_h", "falcon_h1", "deepseek_v32", "glm_moe_dsa", "glm4v") + near_llama_replica.FAMILIES and not (
            args.image and cfg.model_type in ("qwen3_5", "qwen3_5_moe", "qwen3_vl", "qwen3_vl_moe", "qwen2_5_vl", "qwen2_vl", "mistral3", "mllama",
                                              "smolvlm", "idefics3", "internvl")):
        raise SystemExit("measure_llm.py: --mode infer is the text encoders' forward (encoder_replica.py), Gemma 4's "
                         "(gemma4_replica.py), Qwen3-VL-MoE's on text (qwen3vl_replica.py), the Qwen3.5 and Qwen3-VL towers' with --image (qwen3vl_tower_replica.py) "
                         "and Qwen2.5-VL's with --image (qwen25vl_replica.py)")
    elif args.image and cfg.model_type in ("qwen3_5", "qwen3_5_moe"):  # the tower run on images (qwen3vl_tower_replica.py)
        import qwen3vl_tower_replica
        model = qwen3vl_tower_replica.build_qwen3_5(cfg, args.attn)
    elif cfg.model_type == "falcon":  # FalconForCausalLM (falcon_replica.py)
        import falcon_replica
        model = falcon_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type in ("gpt_oss", "gemma3_text"):  # transformers 5's gpt-oss and Gemma 3 (gptoss_replica.py)
        import gptoss_replica
        model = gptoss_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type == "gemma3":  # the SigLIP tower and projector, frozen, with Gemma 3's LM (gemma3vl_replica.py)
        import gemma3vl_replica
        model = gemma3vl_replica.build(cfg, args.attn)
    elif cfg.model_type == "gemma4_text":  # Gemma4ForCausalLM's dense layers (gemma4_replica.py)
        import gemma4_replica
        model = gemma4_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type == "granitemoehybrid":  # GraniteMoeHybridForCausalLM with the mamba kernels (granite4_replica.py)
        import granite4_replica
        model = granite4_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type == "mamba2":  # Mamba2ForCausalLM with the mamba kernels (mamba2_replica.py)
        import mamba2_replica
        model = mamba2_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type in ("lfm2", "lfm2_moe"):  # Lfm2ForCausalLM, Lfm2MoeForCausalLM, Lfm2ShortConv.slow_forward (lfm2_replica.py)
        import lfm2_replica
        model = lfm2_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type == "nemotron_h":  # NemotronHForCausalLM with the mamba kernels (nemotron_h_replica.py)
        import nemotron_h_replica
        model = nemotron_h_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type == "falcon_h1":  # FalconH1ForCausalLM with the mamba kernels (falcon_h1_replica.py)
        import falcon_h1_replica
        model = falcon_h1_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type == "llama4_text":  # Llama4ForCausalLM (llama4_replica.py)
        import llama4_replica
        model = llama4_replica.CausalLM(cfg, args.attn)
    elif cfg.model_type in ("qwen3_vl", "qwen3_vl_moe") and args.image:  # the tower and deepstack on images (qwen3vl_tower_replica.py)
        import qwen3vl_tower_replica
        model = qwen3vl_tower_replica.build_qwen3_vl(cfg, args.attn)
    elif cfg.model_type in ("qwen3_vl", "qwen3_vl_moe"):  # Qwen3-VL(-MoE) on text: the LM with MRoPE, the tower frozen (qwen3vl_replica.py)
        import qwen3vl_replica
        model = qwen3vl_replica.build(cfg, args.attn)
    elif cfg.model_type == "ministral":  # MinistralForCausalLM (modeling_ministral.py @3edd469d): Mistral's modules,
        # sliding_window on the layer_types' "sliding_attention" layers (reference.py through sliding_replica.layer_types)
        model = R.CausalLM(R.Config(dict(cfg.d, model_type="mistral")), args.attn)
    elif cfg.model_type == "mistral3" and args.image:  # the Pixtral tower and projector run (mistral3_replica.py)
        import mistral3_replica
        model = mistral3_replica.build_image(cfg, args.attn)
    elif cfg.model_type == "mistral3":  # Mistral3 on text: Mistral's LM, the Pixtral tower frozen (mistral3_replica.py)
        import mistral3_replica
        model = mistral3_replica.build(cfg, args.attn)
    elif cfg.model_type in ("smolvlm", "idefics3"):  # on text: Llama's LM, the tower and connector loaded (idefics3_replica.py)
        import idefics3_replica
        # with --image: the tower and connector run frozen (idefics3_replica.build_image)
        model = (idefics3_replica.build_image if args.image else idefics3_replica.build)(cfg, args.attn)
    elif cfg.model_type == "glm4v":  # GLM-4.1V on text: Glm4's decoder with mrope, the tower frozen (glm4v_replica.py)
        import glm4v_replica
        if args.image and args.mode == "generate":
            raise SystemExit("measure_llm.py: glm4v: generate with --image is not replicated (vramcalc refuses it)")
        # with --image: the tower run on the images (glm4v_replica.build_image)
        model = (glm4v_replica.build_image if args.image else glm4v_replica.build)(cfg, args.attn)
    elif cfg.model_type == "internvl":  # on text: Qwen2's / Qwen3's LM, the tower and projector loaded (internvl_replica.py)
        import internvl_replica
        # with --image: the tower and projector run frozen (internvl_replica.build_image)
        model = (internvl_replica.build_image if args.image else internvl_replica.build)(cfg, args.attn)
    elif cfg.model_type == "mllama":  # Mllama on text: Llama's self-attention layers, the rest loaded (mllama_replica.py)
        import mllama_replica
        model = mllama_replica.build(cfg, args.attn)
        if args.image:  # the tower and the projector frozen, the cross-attention layers run (mllama_replica.py)
            mllama_replica.freeze_towers(model)
    elif cfg.model_type in ("qwen2_5_vl", "qwen2_vl"):  # the Qwen2.5-VL / Qwen2-VL tower, frozen, before Qwen2's LM (qwen25vl_replica.py)
        import qwen25vl_replica
        model = qwen25vl_replica.build(cfg, args.attn)
    else:
        model = R.CausalLM(cfg, args.attn)
    model.loss_impl = args.loss
    if args.liger:  # _apply_liger_kernel_to_instance(model): before PEFT wraps it (TRL patches the base model)
        if args.loss not in ("hf", "liger"):
            raise SystemExit("measure_llm.py: --liger applies the fused linear cross-entropy (--loss liger)")
        import liger_patch_replica
        kernels = args.liger_kernels.split(",") if args.liger_kernels else None
        model.loss_impl = "hf"  # the model's own loss unless the patch sets fused_linear_cross_entropy
        liger_patch_replica.apply(model, R, kernels)
        if args.loss == "liger" and model.loss_impl != "liger":
            raise SystemExit("measure_llm.py: --liger-kernels leaves fused_linear_cross_entropy out, --loss liger is it")
        args.loss = model.loss_impl
    model.loss_chunks = args.loss_chunks
    if args.precision == "bf16":
        model.to(torch.bfloat16)
        rot = getattr(getattr(model, "visual", None), "rotary_pos_emb", None)
        if cfg.model_type == "ernie4_5_moe":  # _keep_in_fp32_modules_strict (ernie_replica.py)
            import ernie_replica
            ernie_replica.keep_fp32(model)
        if cfg.model_type in ("hunyuan_v1_dense", "hunyuan_v1_moe"):  # the float32 wg and rotary buffers (hunyuan_replica.py)
            import hunyuan_replica
            hunyuan_replica.keep_fp32(model)
        if cfg.model_type == "lfm2_moe":  # the float32 expert_bias buffers (lfm2_replica.py)
            import lfm2_replica
            lfm2_replica.keep_fp32(model)
        if cfg.model_type == "mistral3":
            # PixtralRotaryEmbedding's tables: float32 (compute_default_rope_parameters' .float()), which
            # from_pretrained(dtype=bfloat16) leaves as built; model.to() here cast them: restored
            pr = model.vision_tower.patch_positional_embedding
            pr.inv_freq, pr.original_inv_freq = pr.inv_freq.float(), pr.original_inv_freq.float()
        if args.image and cfg.model_type in ("qwen3_5", "qwen3_5_moe", "qwen3_vl", "qwen3_vl_moe", "glm4v") and rot is not None:
            # Qwen3VLVisionRotaryEmbedding's inv_freq: torch.arange(..., dtype=torch.float), a non-persistent
            # buffer that from_pretrained(dtype=bfloat16) leaves float32 (the default dtype does not apply to an
            # explicit one; nothing casts buffers): rot_pos_emb's freq table, emb and the cos / sin float32
            rot.inv_freq = rot.inv_freq.float()
    ref_model = None
    if (args.loss in ("dpo", "kto") or (args.loss == "grpo" and args.beta != 0.0)) and not args.lora and args.peft == "lora":
        # TRL's create_model_from_path: the same checkpoint loaded again in the same dtype, eval mode
        ref_model = R.CausalLM(cfg, args.attn)
        if args.precision == "bf16":
            ref_model.to(torch.bfloat16)
        ref_model.load_state_dict(model.state_dict())
        ref_model.eval()
    if args.ckpt:
        model.gradient_checkpointing = True
        model.ckpt_every = args.ckpt_every
        model.ckpt_ops = args.ckpt_ops
        # with offloading, the checkpoint's input goes through the offload hooks, as 2.x's
        # _NoopSaveInputs saves it (the harness's _checkpoint2x keeps it in its closure)
        model.ckpt_save_inputs = args.act_offload != "none"
        if args.ckpt_kind == "reentrant":
            if args.ckpt_ops or args.act_offload != "none" or args.loss == "grpo" or not hasattr(model, "ckpt_reentrant"):
                raise SystemExit("measure_llm.py: --ckpt-kind reentrant: reference.py's decoder layers, without --ckpt-ops, "
                                 "--act-offload or --loss grpo")
            model.ckpt_reentrant = True
    if args.peft != "lora" or args.modules_to_save:  # peft_replica.py: DoRA, IA3, LN tuning, modules_to_save
        import peft_replica
        adapter_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}.get(args.lora_dtype)
        peft_replica.apply_peft(model, args.peft, r=args.lora, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                                targets=tuple(args.lora_targets.split(",")),
                                feedforward=tuple(peft_replica.IA3_FEEDFORWARD[cfg.model_type].split(",")),
                                autocast_adapter_dtype=args.lora_dtype != "model", adapter_dtype=adapter_dtype,
                                modules_to_save=tuple(x for x in args.modules_to_save.split(",") if x))
    elif args.lora:
        adapter_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}.get(args.lora_dtype)
        R.apply_lora(model, r=args.lora, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                     targets=tuple(args.lora_targets.split(",")),
                     autocast_adapter_dtype=args.lora_dtype != "model", adapter_dtype=adapter_dtype,
                     # --ckpt-every N > 1 is torchtune's selective layer AC: its LoRA recipes make no
                     # input require grad (PEFT's enable_input_require_grads is a PeftModel's)
                     input_require_grads=args.ckpt_every == 1 and not args.ckpt_ops)
    params = list(model.parameters())
    n_params = sum(p.numel() for p in params)
    trainable = [p for p in params if p.requires_grad]
    n_train = sum(p.numel() for p in trainable)
    weights_bytes = sum(rounded(p) for p in params) + sum(rounded(b) for b in model.buffers())
    V = 0 if cfg.model_type in ("vit", "dinov2", "siglip_vision_model") else cfg.vocab_size  # pixel_values, no token ids
    result = {"config": os.path.relpath(args.config, ROOT), "model_type": cfg.model_type,
              "mode": args.mode, "batch": args.batch, "precision": args.precision,
              "attn_implementation": model.attn_impl, "params": n_params,
              "trainable_params": n_train, "weights_bytes": weights_bytes,
              "torch": torch.__version__}
    if cfg.model_type in ("mixtral", "qwen2_moe", "deepseek_v3", "qwen3_next", "qwen3_5_moe", "deepseek_v2", "qwen3_vl_moe",
                          "qwen3_moe", "deepseek_v32", "glm_moe_dsa"):
        result["experts_implementation"] = args.experts

    image_tokens = 0
    if args.image and cfg.model_type == "gemma3":
        # Gemma3ImageProcessor: every image resized to image_size, pixel_values [images, C, S, S] float32;
        # Gemma3Processor: each image's full_image_sequence ("\n\n", boi, mm_tokens_per_image image
        # tokens, eoi, "\n\n") before the --seq text tokens; token_type_ids 1 at the image tokens
        import gemma3vl_replica
        gk = gemma3vl_replica.siglip_keys(cfg.d["vision_config"])
        n_img = args.batch * args.images
        if args.images != 1:
            raise SystemExit("measure_llm.py: gemma3: one image per sample (vramcalc's model)")
        image_tokens = args.images * (cfg.d["mm_tokens_per_image"] + gemma3vl_replica.IMAGE_EXTRA)
        result.update({"image": args.image, "images": args.images, "image_tokens": image_tokens})
    elif args.image and cfg.model_type == "paligemma":
        # SiglipImageProcessor: every image resized to image_size, pixel_values [images, C, S, S] float32;
        # PaliGemmaProcessor: (image_size // patch_size) ** 2 image tokens first, then bos, --seq's text
        import paligemma_replica
        pk = paligemma_replica.vision_keys(cfg.d.get("vision_config"))
        n_img = args.batch * args.images
        if args.images != 1:
            raise SystemExit("measure_llm.py: paligemma: one image per sample (vramcalc's model)")
        image_tokens = paligemma_replica.image_tokens(cfg.d.get("vision_config"))
        result.update({"image": args.image, "images": args.images, "image_tokens": image_tokens})
    elif args.image and cfg.model_type == "mistral3":
        # PixtralProcessor: each image resized (mistral3_replica.image_grid), pixel_values [images, C, h, w]
        # float32; its tokens rows x (cols + 1): [IMG] x cols then [IMG_BREAK] per row, the last [IMG_END]
        import mistral3_replica
        mk = mistral3_replica.vision_keys(cfg.d.get("vision_config") or {}, cfg.d.get("vision_config") is None)
        mm = cfg.d.get("spatial_merge_size", 2)
        W, Hh = (int(x) for x in args.image.lower().split("x"))
        rh, rw = mistral3_replica.image_grid(mk, mm, W, Hh)
        rows, cols = rh // (mk["P"] * mm), rw // (mk["P"] * mm)
        n_img = args.batch * args.images
        image_tokens = args.images * rows * (cols + 1)

        def mistral3_ids(ids):
            """the image's tokens first: [IMG] (image_token_index) x cols then a break per row, no other id equal"""
            tid = cfg.d.get("image_token_index", 10)
            ids = torch.where(ids == tid, torch.full_like(ids, tid + 1), ids)
            for im in range(args.images):
                for r in range(rows):
                    at = im * rows * (cols + 1) + r * (cols + 1)
                    ids[:, at:at + cols] = tid
            return ids
        result.update({"image": args.image, "images": args.images, "image_tokens": image_tokens,
                       "image_embeds": args.images * rows * cols})
    elif args.image and cfg.model_type in ("smolvlm", "idefics3"):
        # SmolVLMImageProcessor's frames (idefics3_replica.frames: tiles and the global image, each image_size
        # square), pixel_values [B, frames, C, S, S] in the model's dtype; the prompt's image text first: its
        # <image> tokens, then the wrapper tokens (as text ids), then --seq's text
        import idefics3_replica
        W, Hh = (int(x) for x in args.image.lower().split("x"))
        image_tokens, i3_embeds, i3_frames = idefics3_replica.image_tokens(cfg, W, Hh, args.images)
        i3k = dict(idefics3_replica.VISION)
        i3k.update({n: x for n, x in (cfg.d.get("vision_config") or {}).items() if n in i3k and x is not None})

        def i3_ids(ids):
            tid = cfg.d.get("image_token_id", 128257)
            ids = torch.where(ids == tid, torch.full_like(ids, tid - 1 if tid + 1 >= V else tid + 1), ids)
            ids[:, :i3_embeds] = tid
            return ids

        def i3_pixels():
            return torch.randn(args.batch, i3_frames, i3k["num_channels"], i3k["image_size"], i3k["image_size"],
                               dtype=dtype)
        result.update({"image": args.image, "images": args.images, "image_tokens": image_tokens,
                       "image_embeds": i3_embeds, "frames": i3_frames})
    elif args.image and cfg.model_type == "internvl":
        # GotOcr2ImageProcessor's tiles (internvl_replica.tiles), pixel_values [tiles, C, S, S] in the model's dtype;
        # the prompt's image text first: per image <img> (a text id), its image-context tokens, </img>
        import internvl_replica
        W, Hh = (int(x) for x in args.image.lower().split("x"))
        image_tokens, iv_embeds, iv_tiles = internvl_replica.image_tokens(cfg, W, Hh, args.images)
        ivk = dict(internvl_replica.VISION)
        ivk.update({n: x for n, x in (cfg.d.get("vision_config") or {}).items() if n in ivk and x is not None})

        def i3_ids(ids):
            tid, per = cfg.d.get("image_token_id", 151667), image_tokens // args.images
            ids = torch.where(ids == tid, torch.full_like(ids, tid - 1 if tid + 1 >= V else tid + 1), ids)
            for im in range(args.images):
                ids[:, im * per + 1:(im + 1) * per - 1] = tid
            return ids

        def i3_pixels():
            S = internvl_replica._side(ivk["image_size"])
            return torch.randn(args.batch * iv_tiles, ivk["num_channels"], S, S, dtype=dtype)  # the batch's samples' tiles
        result.update({"image": args.image, "images": args.images, "image_tokens": image_tokens,
                       "image_embeds": iv_embeds, "tiles": iv_tiles})
    elif args.image and cfg.model_type == "mllama":
        # MllamaProcessor (mllama_replica.set_images): pixel_values padded to max_image_tiles, the masks; one
        # <|image|> token per image counted in --seq
        result.update({"image": args.image, "images": args.images})
    elif args.image and cfg.model_type == "dinov2":
        # Dinov2Embeddings.forward at the image's height x width (dinov2_replica.interpolate_pos_encoding)
        if args.images != 1:
            raise SystemExit("measure_llm.py: dinov2: one image per sample")
        result.update({"image": args.image, "images": args.images})
    elif args.image:
        if cfg.model_type == "glm4v":  # Glm4vImageProcessor's smart_resize (glm4v_replica.smart_resize)
            import glm4v_replica as vrep
        elif cfg.model_type in ("qwen3_5", "qwen3_5_moe", "qwen3_vl", "qwen3_vl_moe"):
            # Qwen2VLImageProcessorFast with the checkpoints' min / max pixels (qwen3vl_tower_replica.smart_resize)
            import qwen3vl_tower_replica as vrep
        else:  # Qwen2VLImageProcessor: pixel_values [patches, C*T*P*P] float32, image_grid_thw
            import qwen25vl_replica as vrep
        vk = vrep.vision_keys(cfg.d.get("vision_config") or {})
        W, Hh = (int(x) for x in args.image.lower().split("x"))
        rh, rw = vrep.smart_resize(Hh, W, vk["P"] * vk["M"])
        gh, gw = rh // vk["P"], rw // vk["P"]
        n_img = args.batch * args.images
        image_tokens = args.images * gh * gw // vk["M"] ** 2
        result.update({"image": args.image, "images": args.images, "image_tokens": image_tokens})
    whisper = cfg.model_type == "whisper"
    vit = cfg.model_type in ("vit", "dinov2", "siglip_vision_model", "siglip", "clip")  # ViTForImageClassification
    # (vision_encoder_replica.py), dinov2_replica.py, siglip_replica.py
    if vit:
        import vision_encoder_replica
        import dinov2_replica
        import siglip_replica
    t5 = cfg.model_type in ("t5", "mt5", "umt5", "bart", "marian", "pegasus", "mbart", "m2m_100") or whisper  # an encoder-decoder: labels / decoder_input_ids of --target-seq tokens
    T = args.target_seq or args.seq
    if t5 and args.mode != "generate":  # generate: the decoder's tokens are the new ones
        result["target_seq"] = T

    def pixels():
        # vit: ViTImageProcessor's pixel_values [B, num_channels, image_size, image_size] float32 (the model casts
        # them to its dtype: vision_encoder_replica.py); resident like input_ids
        vc = {"dinov2": dinov2_replica, "siglip_vision_model": siglip_replica}.get(
            cfg.model_type, vision_encoder_replica).resolve(cfg.d)
        if cfg.model_type == "siglip":  # SiglipModel: vision_config's image, the text ids (--seq) beside it
            vc = siglip_replica.resolve(cfg.d.get("vision_config") or {})
            model.input_ids = torch.randint(0, V, (args.batch, args.seq), dtype=torch.int64)
        if cfg.model_type == "clip":  # CLIPModel: as SiglipModel's (clip_replica.py)
            import clip_replica
            vc = clip_replica.resolve_vision(cfg.d)
            model.input_ids = torch.randint(0, V, (args.batch, args.seq), dtype=torch.int64)
        if args.image and cfg.model_type == "dinov2":  # --image WxH: pixel_values [B, C, H, W]
            W, Hh = (int(x) for x in args.image.lower().split("x"))
            return torch.randn(args.batch, vc["num_channels"], Hh, W)
        return torch.randn(args.batch, vc["num_channels"], vc["image_size"], vc["image_size"])

    def features():
        # whisper: WhisperFeatureExtractor's input_features [B, num_mel_bins, 2 x max_source_positions] (30 s), cast
        # to the model's dtype by the caller before the forward; resident like input_ids
        wc = model.config
        return torch.randn(args.batch, wc.num_mel_bins, 2 * wc.max_source_positions, dtype=dtype)
    if (t5 or encoder or image_tokens or (args.image and cfg.model_type == "mllama") or cfg.model_type == "paligemma" or cfg.model_type in ("gemma4_text", "qwen3_vl_moe", "granitemoehybrid", "mamba2", "ernie4_5",
                                                           "ernie4_5_moe", "lfm2", "lfm2_moe", "nemotron_h", "falcon_h1", "deepseek_v32", "glm_moe_dsa", "glm4v") +
            near_llama_replica.FAMILIES) and args.mode == "infer":
        # model.eval(); with torch.no_grad(): logits = model(input_ids).logits (t5: with decoder_input_ids, the
        # batch's, resident like input_ids) -- run twice, the second measured; the logits dropped after
        input_ids = features() if whisper else pixels() if vit else torch.randint(0, V, (args.batch, args.seq + image_tokens),
                                                             dtype=torch.int64)
        if image_tokens and cfg.model_type == "paligemma":  # the image tokens first (paligemma_replica.py)
            tid = cfg.d["image_token_index"]
            input_ids = torch.where(input_ids == tid, torch.full_like(input_ids, tid + 1), input_ids)
            input_ids[:, :image_tokens] = tid
            model.pixel_values = torch.randn(n_img, pk["num_channels"], pk["image_size"], pk["image_size"])
        elif image_tokens and cfg.model_type in ("smolvlm", "idefics3", "internvl"):  # idefics3_replica / internvl_replica .build_image
            input_ids = i3_ids(input_ids)
            model.embed_tokens.pixel_values = i3_pixels()
        elif image_tokens and cfg.model_type == "mistral3":  # mistral3_replica.py: the image's rows first
            input_ids = mistral3_ids(input_ids)
            model.embed_tokens.pixel_values = torch.randn(n_img, mk["cin"], rh, rw)
            model.embed_tokens.image_sizes = [(rh, rw)] * n_img
        elif image_tokens:  # the image tokens first (Qwen3.5: qwen3vl_tower_replica.py), pixel_values resident
            tid = cfg.d["image_token_id"]
            input_ids = torch.where(input_ids == tid, torch.full_like(input_ids, tid + 1), input_ids)
            input_ids[:, :image_tokens] = tid
            model.embed_tokens.pixel_values = torch.randn(n_img * gh * gw, vk["cin"] * vk["T"] * vk["P"] ** 2)
            model.embed_tokens.grid_thw = torch.tensor([[1, gh, gw]] * n_img)
        if args.image and cfg.model_type == "mllama":  # MllamaProcessor's inputs (mllama_replica.set_images)
            mllama_replica.set_images(model, input_ids, args.image, args.images)
        kw = {"decoder_input_ids": torch.randint(0, V, (args.batch, T), dtype=torch.int64)} if t5 else {}
        after_build = tr.O.opobs_current()
        model.eval()
        for rep in range(2):
            if rep == 1:
                tr.O.opobs_reset_peak()
                tr.tag("infer")
                if args.per_op_file:
                    tr.O.opobs_log_open(args.per_op_file.encode())
            with torch.no_grad():
                logits = model(input_ids, **kw)[1]
            del logits
        if args.per_op_file:
            tr.O.opobs_log_close()
        result.update({"seq": args.seq, "peak_allocated": int(tr.O.opobs_peak()),
                       "peak_where": tr.O.opobs_peak_where().decode(errors="replace"),
                       "after_build_bytes": int(after_build)})
    elif args.mode == "train":
        if args.accumulate != 1 and (args.loss != "grpo" or args.accumulate < 1):
            raise SystemExit("measure_llm.py: --accumulate: --loss grpo's steps_per_generation only (1 or more)")
        if args.loss.startswith("dpo"):
            import dpo_replica  # the collator's [chosen; rejected] batch, resident like the inputs below
            dpo = dpo_replica.DPO(model, args.batch, args.seq, V, ref_model=ref_model,
                                  precompute=args.loss == "dpo-precomputed")
        elif args.loss == "kto":
            import kto_replica  # DataCollatorForUnpairedPreference's batch, resident like the inputs below
            kto = kto_replica.KTO(model, args.batch, args.seq, V, ref_model=ref_model)
        elif args.loss == "grpo":
            import grpo_replica  # the step generates its own batch (_prepare_inputs), --prompt + --new-tokens tokens
            if args.ckpt and (args.ckpt_every != 1 or args.ckpt_ops or args.act_offload != "none"):
                raise SystemExit("measure_llm.py: --loss grpo: --ckpt of every decoder layer only")
            grpo = grpo_replica.GRPO(model, args.batch, args.prompt, args.new_tokens, V, ref_model=ref_model,
                                     beta=args.beta, num_generations=args.num_generations,
                                     steps_per_generation=args.accumulate)
            grpo_phases = {}

            def on_phase(name, call):  # step 2 (the first measured): the peak since its start
                if call == 2:
                    grpo_phases[name] = int(tr.O.opobs_peak())
            grpo.on_phase = on_phase
        elif args.loss == "orpo":
            import orpo_replica  # DPODataCollatorWithPadding's chosen/rejected batch, resident like the inputs below
            orpo = orpo_replica.ORPO(model, args.batch, args.seq, V)
        elif args.packing:
            import packing_replica  # the collator's one row, resident like the inputs below
            if image_tokens or args.loss not in ("hf", "chunked-nll") or encoder:
                raise SystemExit("measure_llm.py: --packing: a text causal LM with --loss hf or chunked-nll")
            packed = packing_replica.collate_padding_free(args.batch, args.seq, V)
            input_ids, labels, position_ids = packed["input_ids"], packed["labels"], packed["position_ids"]
            del packed
        else:
            input_ids = features() if whisper else pixels() if vit else torch.randint(0, V, (args.batch, args.seq + image_tokens),
                                                                 dtype=torch.int64)
            if image_tokens and cfg.model_type == "gemma3":
                tid, mmt = cfg.d["image_token_index"], cfg.d["mm_tokens_per_image"]
                input_ids = torch.where(input_ids == tid, torch.full_like(input_ids, tid + 1), input_ids)
                input_ids[:, 2:2 + mmt] = tid  # after "\n\n" and boi; eoi and "\n\n" follow
                model.pixel_values = torch.randn(n_img, gk["cin"], gk["img"], gk["img"])
                model.token_type_ids = (input_ids == tid).long()  # the processor's mm_token_type_ids, held
            elif image_tokens and cfg.model_type == "paligemma":
                tid = cfg.d["image_token_index"]
                input_ids = torch.where(input_ids == tid, torch.full_like(input_ids, tid + 1), input_ids)
                input_ids[:, :image_tokens] = tid  # the image tokens first, then bos and the text
                model.pixel_values = torch.randn(n_img, pk["num_channels"], pk["image_size"], pk["image_size"])
            elif image_tokens and cfg.model_type in ("smolvlm", "idefics3", "internvl"):
                input_ids = i3_ids(input_ids)
                model.embed_tokens.pixel_values = i3_pixels()
            elif image_tokens and cfg.model_type == "mistral3":
                input_ids = mistral3_ids(input_ids)
                model.embed_tokens.pixel_values = torch.randn(n_img, mk["cin"], rh, rw)
                model.embed_tokens.image_sizes = [(rh, rw)] * n_img
            elif image_tokens:  # the image tokens first, no other id equal to image_token_id
                tid = cfg.d["image_token_id"]
                input_ids = torch.where(input_ids == tid, torch.full_like(input_ids, tid + 1), input_ids)
                input_ids[:, :image_tokens] = tid
                model.embed_tokens.pixel_values = torch.randn(n_img * gh * gw, vk["cin"] * vk["T"] * vk["P"] ** 2)
                model.embed_tokens.grid_thw = torch.tensor([[1, gh, gw]] * n_img)
            labels = None if whisper else input_ids.clone()  # DataCollatorForLanguageModeling(mlm=False): labels = input_ids.clone()
            if cfg.model_type == "paligemma":  # PaliGemmaProcessor's token_type_ids with a suffix (is_training), held
                model.token_type_ids = torch.zeros_like(input_ids)
            if args.image and cfg.model_type == "mllama":  # MllamaProcessor's inputs (mllama_replica.set_images)
                labels = mllama_replica.set_images(model, input_ids, args.image, args.images)
            if t5:  # DataCollatorForSeq2Seq: the target's ids, [B, target_seq]
                labels = torch.randint(0, V, (args.batch, T), dtype=torch.int64)
        if encoder and cfg.model_type in ("siglip_vision_model", "siglip", "clip"):  # no labels (siglip_replica.py)
            labels = None
        elif encoder:  # a class index per sequence (single_label_classification)
            labels = torch.randint(0, encoder_replica._labels(cfg.d), (args.batch,), dtype=torch.int64)
        if args.loss == "chunked-nll":
            # TRL's DataCollatorForLanguageModeling also returns the attention_mask (all ones: no
            # padding; the sdpa path drops it), resident with the batch
            if encoder or t5 or image_tokens or cfg.model_type in ("gemma2", "gpt_neox"):
                raise SystemExit("measure_llm.py: --loss chunked-nll: a Llama-style text causal LM")
            if not args.packing:  # padding_free: position_ids instead (packing_replica.py), already held
                attention_mask = torch.ones_like(input_ids)  # noqa: F841  (held, as the batch dict holds it)
            import trl_sft_replica

            def trl_head(hidden_states, labels, logits_to_keep, head):
                # _patch_chunked_ce_lm_head's forward: the backbone's last_hidden_state and
                # lm_head.weight into _chunked_cross_entropy_loss; logits=None
                loss = trl_sft_replica.chunked_cross_entropy_loss(
                    hidden_states, head.weight, trl_sft_replica.CHUNK_SIZE, labels=labels,
                    num_items_in_batch=num_items[0])[0]
                return loss, None
            model._head = trl_head
            num_items = [None]
        if args.loss == "nll":
            # TRL's DataCollatorForLanguageModeling (padding_free False) returns the attention_mask too (all ones:
            # the sdpa path drops it), resident with the batch, as for chunked-nll above
            if encoder or t5 or image_tokens or args.packing:
                raise SystemExit("measure_llm.py: --loss nll: a text causal LM, without --packing")
            attention_mask = torch.ones_like(input_ids)
            import dpo_replica  # trl/trainer/utils.py entropy_from_logits, the same commit
        after_build = tr.O.opobs_current()

        if args.loss == "chunked":
            import chunked_replica
            loss_fn = chunked_replica.CEWithChunkedOutputLoss(args.loss_chunks)

        def compute_loss():
            if args.loss.startswith("dpo"):
                return dpo.compute_loss()
            if args.loss == "orpo":
                return orpo.compute_loss()
            if args.loss == "grpo":
                # Trainer's accumulation (_inner_training_loop: training_step per micro-batch, each its own
                # backward, then optimizer.step()): micro-steps 1..N-1 forward and backward here, the N-th's loss
                # returned for measure.train_steps' backward; gradients accumulate into .grad between them
                for _ in range(args.accumulate - 1):
                    micro = grpo.compute_loss()
                    tr.O.opobs_set_backward(1)
                    micro.backward()
                    tr.O.opobs_set_backward(0)
                    del micro
                return grpo.compute_loss()
            if args.loss == "kto":
                return kto.compute_loss()
            if args.loss == "chunked-nll":
                # transformers Trainer.training_step: num_items_in_batch (get_batch_samples: the labels'
                # non -100 count, a scalar on the device) passed into the patched forward
                num_items[0] = (labels[..., 1:] != -100).sum()
                kw = {"position_ids": position_ids} if args.packing else {}
                loss, logits = model(input_ids, labels=labels, **kw)
                num_items[0] = None
                return loss
            if args.loss == "nll":
                # TRL SFTTrainer.compute_loss with loss_type "nll", without use_liger_kernel (huggingface/trl
                # @ f2cd57710ae345ea6428ae95363267fcf38a3dc8, trl/trainer/sft_trainer.py l.1700-1830):
                # (loss, outputs) = super().compute_loss(model, inputs, return_outputs=True): transformers'
                # Trainer.compute_loss, outputs = model(**inputs), loss = outputs["loss"]; `outputs` a local
                # until compute_loss returns
                loss, logits = model(input_ids, labels=labels)
                with torch.no_grad():  # l.1763-1792, no "shift_labels" key (no CP/SP), no virtual tokens
                    shift_logits = logits[..., :-1, :]
                    shift_labels = labels[..., 1:]
                    per_token_entropy = dpo_replica.entropy_from_logits(shift_logits)
                    predictions = shift_logits.argmax(dim=-1)
                    mask = shift_labels != -100
                    entropy_sum = (per_token_entropy * mask).sum()
                    total_tokens = mask.sum()
                    correct_predictions = (predictions == shift_labels) & mask
                    correct_tokens = correct_predictions.sum()
                    # accelerator.gather_for_metrics on one process returns its tensor
                    entropy = (entropy_sum / total_tokens).item() if total_tokens > 0 else 0.0
                    total_sum = total_tokens.sum()
                    accuracy = (correct_tokens.sum() / total_sum).item() if total_sum > 0 else 0.0
                del entropy, accuracy
                # mode "train": num_tokens_in_batch from the attention_mask (l.1797-1806)
                attention_mask.sum().item()
                return loss
            if args.loss == "chunked":
                # torchtune recipes/lora_finetune_single_device.py _loss_step: outputs =
                # self._model(**batch); loss = self._loss_fn(outputs, labels); del outputs
                outputs = model(input_ids)[1]
                loss = loss_fn(outputs, labels)
                del outputs
                return loss
            if args.loss in ("mean", "sum"):
                # the simplest loop: out = model(input_ids); loss = out.logits.mean() (or .sum())
                # (no labels: lm_head's output in the model's dtype)
                logits = model(input_ids)[1]
                loss = logits.mean() if args.loss == "mean" else logits.sum()
                if args.hold_output:
                    held.append(logits)
                del logits
                return loss
            # transformers Trainer.compute_loss: outputs = model(**inputs); loss = outputs[0]
            if offload is not None:
                # torchtune's `with self.activations_handling_ctx: outputs = self._model(...)`; the
                # head's pre-hook enters the NoOpManager (get_act_offloading_ctx_manager), here kept
                # until the model returns, so the loss computed after the head is not offloaded
                with offload:
                    loss, logits = model(input_ids, labels=labels)
                    if noop_on:
                        noop.__exit__()
                        noop_on.clear()
            elif args.packing:
                loss, logits = model(input_ids, labels=labels, position_ids=position_ids)
            else:
                loss, logits = model(input_ids, labels=labels)
            if args.hold_output:  # out = model(...); out.loss.backward(): the logits held by `out`
                held.append(logits)
            del logits
            return loss

        held = []
        offload = None
        if args.act_offload == "sync":
            import ac_replica
            offload, noop, noop_on = ac_replica.OffloadActivations(), ac_replica.NoOpManager(), []

            def enter_noop(*_):
                noop.__enter__()
                noop_on.append(1)
            (model.embed_out if cfg.model_type == "gpt_neox" else model.lm_head).register_forward_pre_hook(enter_noop)

        def tag(name):
            # --hold-output: `out` goes once loss.backward() has returned (train_steps tags sN.opt next)
            if name.endswith(".opt"):
                held.clear()
            tr.tag(name)

        model.train()
        opt = optim2x.make(trainable, args.optim) if not args.optim_in_bwd else \
            InBackward(trainable, lambda ps: optim2x.make(ps, args.optim))
        if args.zero_grad == "zero":
            opt = KeepGrads(opt, trainable)
        def per_op_log(step):
            if step == 2 and args.per_op_file:
                tr.O.opobs_log_open(args.per_op_file.encode())
            if step == 3 and args.per_op_file:
                tr.O.opobs_log_close()

        measure.train_steps(tr, compute_loss, opt, args.steps, tag=tag, at_step=per_op_log)
        steady = tr.O.opobs_current()
        result.update({
            "seq": args.prompt + args.new_tokens if args.loss == "grpo" else args.seq, "optim": args.optim, "gradient_checkpointing": bool(args.ckpt), "loss": args.loss,
            **({"loss_chunks": args.loss_chunks} if args.loss == "chunked" else {}),
            **({"zero_grad": "zero"} if args.zero_grad == "zero" else {}),
            **({"ckpt_every": args.ckpt_every} if args.ckpt and args.ckpt_every != 1 else {}),
            **({"ckpt_ops": True} if args.ckpt and args.ckpt_ops else {}),
            **({"ckpt_kind": "reentrant"} if args.ckpt and args.ckpt_kind == "reentrant" else {}),
            **({"hold_output": True} if args.hold_output else {}),
            **({"packing": True} if args.packing else {}),
            **({"liger": True} if args.liger else {}),
            **({"liger_kernels": args.liger_kernels} if args.liger and args.liger_kernels else {}),
            **({"prompt": args.prompt, "new_tokens": args.new_tokens, "beta": args.beta,
                "num_generations": args.num_generations, **({"accumulate": args.accumulate} if args.accumulate > 1 else {}),
                "generate_peak": grpo_phases.get("generate")} if args.loss == "grpo" else {}),
            **({"optim_in_bwd": True} if args.optim_in_bwd else {}),
            **({"act_offload": args.act_offload} if args.act_offload != "none" else {}),
            "lora": ({"r": args.lora, "alpha": args.lora_alpha, "dropout": args.lora_dropout,
                      "targets": args.lora_targets.split(","),
                      "adapter_dtype": str(R.lora_dtype(model)).replace("torch.", ""),
                      **({"lora_dtype": args.lora_dtype} if args.lora_dtype != "auto" else {}),
                      "input_require_grads": bool(args.ckpt) and args.ckpt_every == 1 and not args.ckpt_ops}
                     if args.lora and args.peft == "lora" and not args.modules_to_save else None),
            **({"peft": {"method": args.peft, "r": args.lora, "alpha": args.lora_alpha, "dropout": args.lora_dropout,
                         "targets": args.lora_targets.split(","),
                         "adapter_dtype": str(__import__("peft_replica").adapter_dtype_of(model)).replace("torch.", ""),
                         **({"lora_dtype": args.lora_dtype} if args.lora_dtype != "auto" else {}),
                         **({"modules_to_save": args.modules_to_save.split(",")} if args.modules_to_save else {}),
                         "input_require_grads": bool(args.ckpt)}} if args.peft != "lora" or args.modules_to_save else {}),
            "peak_allocated": int(tr.O.opobs_peak()),
            "peak_where": tr.O.opobs_peak_where().decode(errors="replace"),
            "after_build_bytes": int(after_build), "steady_bytes": int(steady),
            "optimizer_state_bytes": int(sum(rounded(v) for st in opt.state.values()
                                             for v in st.values() if torch.is_tensor(v))),
        })
    else:
        B, P, M = args.batch, args.prompt, args.new_tokens
        # whisper: the input_features (features()), --prompt the decoder's init tokens (whisper_replica.generate)
        prompt_ids = features() if whisper else torch.randint(0, V, (B, P + image_tokens), dtype=torch.int64)
        pixel_values = grid_thw = token_type_ids = None
        mllama_images = None
        if args.image and cfg.model_type == "mllama":
            # MllamaProcessor's inputs for the prompt (its <|image|> tokens first, counted in --prompt), held in
            # generate()'s model_kwargs; pixel_values / aspect ratios passed in the prefill alone
            # (prepare_inputs_for_generation: cache_position[0] == 0), the cross_attention_mask every step
            mllama_replica.set_images(model, prompt_ids, args.image, args.images)
            mllama_images = (model.pixel_values, model.cross_attention_mask)
        if image_tokens and cfg.model_type == "gemma3":
            # Gemma3Processor: the full_image_sequence ("\n\n", boi, the image tokens, eoi, "\n\n") before
            # --prompt's text, token_type_ids 1 at the image tokens; pixel_values [images, C, S, S] and
            # token_type_ids kept in generate()'s model_kwargs (gemma3vl_replica.py _generate_step)
            tid, mmt = cfg.d["image_token_index"], cfg.d["mm_tokens_per_image"]
            prompt_ids = torch.where(prompt_ids == tid, torch.full_like(prompt_ids, tid + 1), prompt_ids)
            prompt_ids[:, 2:2 + mmt] = tid
            pixel_values = torch.randn(n_img, gk["cin"], gk["img"], gk["img"])
            token_type_ids = (prompt_ids == tid).long()
            P += image_tokens
        elif image_tokens and cfg.model_type in ("smolvlm", "idefics3"):
            # SmolVLMProcessor's input_ids (i3_ids) and pixel_values, kept in generate()'s model_kwargs; the prefill's
            # image_hidden_states passed to the decoding steps (idefics3_replica.build_image's Embed keeps them)
            prompt_ids = i3_ids(prompt_ids)
            pixel_values = i3_pixels()
            model.embed_tokens.generating = True
            P += image_tokens
        elif image_tokens and cfg.model_type == "internvl":
            # InternVLProcessor's input_ids (i3_ids) and pixel_values [tiles, C, S, S], kept in generate()'s
            # model_kwargs, passed in the prefill alone (prepare_inputs_for_generation: cache_position[0] == 0)
            prompt_ids = i3_ids(prompt_ids)
            pixel_values = i3_pixels()
            P += image_tokens
        elif image_tokens and cfg.model_type == "mistral3":
            # PixtralProcessor's input_ids (mistral3_ids), pixel_values [images, C, h, w] float32 and image_sizes
            # kept in generate()'s model_kwargs to its return (mistral3_replica.py's Embed reads them)
            prompt_ids = mistral3_ids(prompt_ids)
            pixel_values = torch.randn(n_img, mk["cin"], rh, rw)
            grid_thw = [(rh, rw)] * n_img  # the image_sizes, set on the Embed as Qwen's grid_thw is
            P += image_tokens
        elif image_tokens and cfg.model_type == "paligemma":
            # PaliGemmaProcessor: the image tokens first, then --prompt's text; pixel_values [images, C, S, S] kept in
            # generate()'s model_kwargs, passed in the prefill alone (paligemma_replica.py)
            tid = cfg.d["image_token_index"]
            prompt_ids = torch.where(prompt_ids == tid, torch.full_like(prompt_ids, tid + 1), prompt_ids)
            prompt_ids[:, :image_tokens] = tid
            pixel_values = torch.randn(n_img, pk["num_channels"], pk["image_size"], pk["image_size"])
            P += image_tokens
        elif image_tokens:
            # the processor's input_ids: the image tokens first, then --prompt's text (no other id equal to
            # image_token_id); pixel_values and image_grid_thw kept in generate()'s model_kwargs to its return
            if cfg.model_type not in ("qwen3_5", "qwen3_5_moe", "qwen3_vl", "qwen3_vl_moe", "qwen2_5_vl", "qwen2_vl"):
                raise SystemExit("measure_llm.py: generate with --image: the Qwen towers (qwen3vl_tower_replica.py, "
                                 "qwen25vl_replica.py)")
            tid = cfg.d["image_token_id"]
            prompt_ids = torch.where(prompt_ids == tid, torch.full_like(prompt_ids, tid + 1), prompt_ids)
            prompt_ids[:, :image_tokens] = tid
            pixel_values = torch.randn(n_img * gh * gw, vk["cin"] * vk["T"] * vk["P"] ** 2)
            grid_thw = torch.tensor([[1, gh, gw]] * n_img)
            P += image_tokens  # the prompt the language model sees
        after_build = tr.O.opobs_current()
        model.eval()
        phases = {}

        def layer_types():
            # C: DynamicCache(config=...) reads layer_types, or makes every layer sliding when the
            # config has a sliding_window (Qwen2Config: sliding_window only with use_sliding_window,
            # sliding from max_window_layers on)
            n = cfg.num_hidden_layers
            if cfg.model_type in ("gpt_oss", "gemma3_text", "gemma4_text"):  # DynamicCache(config=...) reads layer_types
                return cfg.layer_types, cfg.sliding_window
            if cfg.model_type == "gemma3":  # the text config's (gemma3vl_replica.py's language model)
                return R.Config(dict(cfg.d, model_type="gemma3_text")).layer_types, cfg.sliding_window
            if cfg.model_type == "llama4_text":  # chunked layers: DynamicSlidingWindowLayer(attention_chunk_size)
                import llama4_replica
                return llama4_replica.cache_layer_types(cfg.d)
            if cfg.model_type in near_llama_replica.FAMILIES:  # olmo3's layer_types (near_llama_replica.py)
                return near_llama_replica.layer_types(cfg)
            if cfg.model_type == "ministral":  # MinistralConfig: layer_types, else every layer sliding with a window
                sw = cfg.sliding_window
                return list(cfg.d.get("layer_types") or ["sliding_attention" if sw else "full_attention"] * n), sw
            if cfg.model_type in ("qwen2", "qwen3"):  # Qwen3Config: the same layer_types
                sw = cfg.sliding_window if cfg.d.get("use_sliding_window") else None
                mwl = cfg.d.get("max_window_layers", n)
                return ["sliding_attention" if sw and i >= mwl else "full_attention" for i in range(n)], sw
            sw = cfg.sliding_window
            return ["sliding_attention" if sw else "full_attention"] * n, sw

        def prefill(input_ids, attention_mask, cache):
            # GU (generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f) GenerationMixin._prefill, no
            # prefill_chunk_size: the model over input_ids[:, :-1] with the attention mask sliced to it and
            # cache_position = arange(prefill_len) (_get_initial_cache_position), logits_to_keep=1 (generate() put it
            # in model_kwargs); _update_model_kwargs_for_generation then cats the sliced mask with new_ones and advances
            # cache_position; model_kwargs["attention_mask"] = attention_mask puts the full mask back; `outputs` dies
            # when _prefill returns. Returns the loop's cache_position ([prefill_len]).
            prefill_input_ids = input_ids[:, :-1, ...]
            prefill_len = prefill_input_ids.shape[1]
            am = attention_mask[:, :prefill_len, ...]
            cache_position = torch.arange(prefill_len, dtype=torch.int64)
            cur = prefill_input_ids[:, -cache_position.shape[0]:]  # prepare_inputs_for_generation
            outputs = model(cur, past_key_values=cache, cache_position=cache_position, attention_mask=am,
                            logits_to_keep=1)
            am = torch.cat([am, am.new_ones((am.shape[0], 1))], dim=-1)
            cache_position = cache_position[-1:] + 1
            del am, outputs
            return cache_position

        # _prefill only where input_ids has more than one token (prefill_input_ids.numel() == 0 otherwise)
        use_prefill = args.transformers == "5.0" and P > 1
        if use_prefill and (t5 or image_tokens):
            raise SystemExit("measure_llm.py: --transformers 5.0: decoder-only models with text prompts")

        def generate_t5(record):
            # t5_replica.generate: GenerationMixin.generate of an encoder-decoder (the encoder once, then the
            # decoder a step at a time with EncoderDecoderCache); phase 0 is the encoder and the first step
            import t5_replica
            cur = [None]

            def on_phase(name):
                if not record:
                    return
                if cur[0] is not None:  # the step before ends here
                    phases[cur[0]] = (int(tr.O.opobs_peak()), tr.O.opobs_peak_where().decode(errors="replace"))
                cur[0] = 0 if name == "prefill" else int(name[6:])
                tr.O.opobs_reset_peak()
                if args.per_op_file and name == "prefill":
                    tr.O.opobs_log_open(args.per_op_file.encode())
                tr.tag(name)

            def on_step_end():
                if record:
                    tr.read("step-end")
                    phases[cur[0]] = (int(tr.O.opobs_peak()), tr.O.opobs_peak_where().decode(errors="replace"))

            with torch.no_grad():
                if whisper:
                    import whisper_replica
                    return whisper_replica.generate(model, prompt_ids, P, M, on_phase, on_step_end)
                if cfg.model_type in ("bart", "marian", "pegasus", "mbart", "m2m_100"):  # bart_replica.generate: the same path, its logits processors
                    import bart_replica
                    return bart_replica.generate(model, prompt_ids, M, on_phase, on_step_end)
                return t5_replica.generate(model, prompt_ids, M, on_phase, on_step_end)

        def generate_beams(record):
            # GU = generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f, GenerationMixin._beam_search and its
            # helpers, num_beams N, do_sample False, the configs' one eos_token_id (StoppingCriteriaList of
            # MaxLengthCriteria and EosTokenCriteria, _get_stopping_criteria's order), no logits processor; a
            # DynamicCache (reference.DynamicCache) reordered by reorder_cache (CacheLayerMixin.reorder_cache:
            # index_select per layer, cache_utils.py @67dd5524)
            # an encoder-decoder (t5, mt5, umt5, whisper; encdec below): GenerationMixin.generate's encoder-decoder
            # path, t5_replica.prepare_generation / whisper_replica.prepare_generation (the encoder once over the
            # batch's rows), then _expand_inputs_for_generation and _beam_search over the decoder with
            # EncoderDecoderCache, whose reorder_cache index_selects the self- and the cross-attention caches (_beam_search
            # @000034a prefers a model's own _reorder_cache where the class has one; transformers 5's mt5 copy of
            # T5ForConditionalGeneration, whisper @efa7189c and WhisperGenerationMixin @000dccdb have none, and 4.x's
            # _temporary_reorder_cache @1097d4b3 sends a Cache object to reorder_cache: src/engine/generate.c
            # encdec_beams)
            encdec = t5  # bart: bart_replica.prepare_generation / forward_cached / logits_processors
            if args.cache != "dynamic" or image_tokens or cfg.model_type in (
                    "granitemoehybrid", "qwen3_next", "qwen3_5", "qwen3_5_moe"):
                raise SystemExit("measure_llm.py: --num-beams: decoder-only models with a DynamicCache, t5 and whisper")
            N = args.num_beams
            eos_id = cfg.d.get("eos_token_id")
            with torch.no_grad():
                encoder_hidden_states = held = None
                if encdec:
                    import t5_replica
                    if record:  # the prefill phase: the encoder and the loop's first step
                        tr.O.opobs_reset_peak()
                        if args.per_op_file:
                            tr.O.opobs_log_open(args.per_op_file.encode())
                        tr.tag("prefill")
                    if whisper:
                        import whisper_replica
                        dec_ids, encoder_hidden_states, attention_mask, held = whisper_replica.prepare_generation(
                            model, prompt_ids, P)
                    elif cfg.model_type in ("bart", "marian", "pegasus", "mbart", "m2m_100"):
                        import bart_replica
                        dec_ids, encoder_hidden_states, attention_mask, held = bart_replica.prepare_generation(
                            model, prompt_ids)
                    else:
                        dec_ids, encoder_hidden_states, attention_mask, held = t5_replica.prepare_generation(
                            model, prompt_ids)
                    # _beam_search's _expand_inputs_for_generation(expand_size=N, is_encoder_decoder=True) (generate()
                    # made only the empty cache in between; it is made here, after): input_ids (the decoder's)
                    # repeat_interleave'd, then model_kwargs' tensors (the attention mask), then
                    # model_kwargs["encoder_outputs"]'s (last_hidden_state), each rebound (the batch-row originals
                    # freed; whisper's decoder_input_ids stay held by WhisperGenerationMixin.generate)
                    input_ids = dec_ids.repeat_interleave(N, dim=0)
                    del dec_ids
                    attention_mask = attention_mask.repeat_interleave(N, dim=0)
                    encoder_hidden_states = encoder_hidden_states.repeat_interleave(N, dim=0)
                    # _prepare_cache_for_generation: EncoderDecoderCache(DynamicCache(), DynamicCache())
                    cache = t5_replica.EncoderDecoderCache(t5_replica.DynamicCache(), t5_replica.DynamicCache())
                else:
                    # _expand_inputs_for_generation(expand_size=N): repeat_interleave of input_ids and the attention
                    # mask (the mask made by _prepare_attention_mask_for_generation, then rebound in model_kwargs)
                    attention_mask = torch.ones((B, P), dtype=torch.int64)
                    input_ids = prompt_ids.repeat_interleave(N, dim=0)
                    attention_mask = attention_mask.repeat_interleave(N, dim=0)
                    lt, sw = layer_types()
                    cache = R.DynamicCache(lt, sw)
                pad = torch.tensor(cfg.d.get("pad_token_id") or 0, dtype=torch.long)  # _prepare_special_tokens
                # _prepare_special_tokens: _eos_token_tensor None without an eos_token_id (no EosTokenCriteria)
                eos = torch.tensor([eos_id], dtype=torch.long) if eos_id is not None else None
                vocab_size = V
                n_eos = eos.shape[0] if eos is not None else 0
                beams_to_keep = max(2, 1 + n_eos) * N
                top_num_beam_mask = torch.cat((torch.ones((N), dtype=torch.bool),
                                               torch.zeros((beams_to_keep - N), dtype=torch.bool)), dim=0)
                batch_size = input_ids.shape[0] // N
                cur_len = input_ids.shape[1]
                decoder_prompt_len = cur_len
                max_length = cur_len + M  # max_new_tokens + the input's length (an encoder-decoder's: the decoder's)
                length_penalty, early_stopping = 1.0, False  # GenerationConfig's defaults
                # _get_initial_cache_position (in _prefill with --transformers 5.0)
                cache_position = None if use_prefill else torch.arange(cur_len, dtype=torch.int64)
                if use_prefill:  # _beam_search: _prefill after _expand_inputs_for_generation, before the state
                    if record:  # the prefill phase: _prefill and the loop's first step
                        tr.O.opobs_reset_peak()
                        if args.per_op_file:
                            tr.O.opobs_log_open(args.per_op_file.encode())
                        tr.tag("prefill")
                    cache_position = prefill(input_ids, attention_mask, cache)
                running_sequences = torch.full((batch_size, N, max_length), fill_value=int(pad), dtype=torch.int64)
                running_sequences[:, :, :cur_len] = input_ids.reshape(batch_size, N, cur_len)
                sequences = running_sequences.detach().clone()
                running_beam_scores = torch.zeros((batch_size, N), dtype=torch.float)
                running_beam_scores[:, 1:] = -1e9
                beam_scores = torch.full((batch_size, N), fill_value=-1e9, dtype=torch.float)
                is_sent_finished = torch.zeros((batch_size, N), dtype=torch.bool)
                is_early_stop_heuristic_unsatisfied = torch.ones((batch_size, 1), dtype=torch.bool)
                next_token_hits_stopping_criteria = torch.zeros((batch_size, N), dtype=torch.bool)
                running_beam_indices = torch.full((batch_size, N, max_length - cur_len), fill_value=-1,
                                                  dtype=torch.int32)
                beam_indices = running_beam_indices.detach().clone()

                def flatten(t):  # _flatten_beam_dim
                    shape = list(t.shape)
                    return torch.reshape(t, [shape[0] * shape[1]] + shape[2:])

                def unflatten(t, n):  # _unflatten_beam_dim
                    shape = list(t.shape)
                    return torch.reshape(t, [batch_size, n] + shape[1:])

                def gather_beams(t, idx):  # _gather_beams
                    while len(idx.shape) < len(t.shape):
                        idx = idx.unsqueeze(-1)
                    return torch.take_along_dim(input=t, indices=idx, dim=1)

                def stopping_criteria(ids):  # StoppingCriteriaList.__call__
                    is_done = torch.full((ids.shape[0],), False, dtype=torch.bool)
                    is_done = is_done | torch.full((ids.shape[0],), ids.shape[-1] >= max_length, dtype=torch.bool)
                    if eos is not None:  # EosTokenCriteria (isin_mps_friendly)
                        is_done = is_done | torch.isin(ids[:, -1], eos)
                    return is_done

                step = 0
                this_peer_finished = False
                while not this_peer_finished:
                    if record and not ((use_prefill or encdec) and step == 0):
                        tr.O.opobs_reset_peak()
                        if args.per_op_file and step == 0:
                            tr.O.opobs_log_open(args.per_op_file.encode())
                        tr.tag("prefill" if step == 0 else "decode%d" % step)
                    # a. the forward
                    flat_running_sequences = flatten(running_sequences[:, :, :cur_len])
                    if encdec:
                        # prepare_inputs_for_generation (as t5_replica.generate): input_ids[:, cache_position] once
                        # input_ids is longer, decoder_input_ids = .clone(); the dict a local until rebound
                        cur = flat_running_sequences
                        if cur.shape[1] != cache_position.shape[0]:
                            cur = cur[:, cache_position]
                        model_inputs = {"decoder_input_ids": cur.clone(memory_format=torch.contiguous_format)}
                        del cur
                        if whisper:
                            model_logits = whisper_replica.forward_cached(model, model_inputs["decoder_input_ids"],
                                                                          encoder_hidden_states, cache, cache_position)
                        elif cfg.model_type in ("bart", "marian", "pegasus", "mbart", "m2m_100"):
                            model_logits = bart_replica.forward_cached(model, model_inputs["decoder_input_ids"],
                                                                       encoder_hidden_states, attention_mask, cache,
                                                                       cache_position)
                        else:
                            model_logits = model.forward_cached(model_inputs["decoder_input_ids"], encoder_hidden_states,
                                                                attention_mask, cache, cache_position)
                    else:
                        cur = flat_running_sequences[:, -cache_position.shape[0]:]  # prepare_inputs_for_generation
                        _, model_logits = model(cur, past_key_values=cache, cache_position=cache_position,
                                                attention_mask=attention_mask, logits_to_keep=1)
                        # _update_model_kwargs_for_generation
                        attention_mask = torch.cat([attention_mask,
                                                    attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
                    # _update_model_kwargs_for_generation (an encoder-decoder without decoder_attention_mask: this only)
                    cache_position = cache_position[-1:] + 1
                    logits = model_logits[:, -1, :].to(copy=True, dtype=torch.float32)
                    # b. log probs
                    log_probs = torch.nn.functional.log_softmax(logits, dim=-1)
                    if cfg.model_type in ("bart", "marian", "pegasus", "mbart", "m2m_100"):  # log_probs = logits_processor(flat_running_sequences, log_probs)
                        log_probs = bart_replica.logits_processors(model.config, flat_running_sequences, log_probs,
                                                                   max_length)
                    del model_logits  # del model_outputs
                    log_probs = unflatten(log_probs, N)
                    log_probs = log_probs + running_beam_scores[:, :, None]
                    log_probs = torch.reshape(log_probs, (batch_size, N * vocab_size))
                    # c. _get_top_k_continuations
                    topk_log_probs, topk_indices = torch.topk(log_probs, k=beams_to_keep)
                    topk_current_beam_indices = topk_indices // vocab_size
                    topk_running_beam_indices = gather_beams(running_beam_indices, topk_current_beam_indices)
                    topk_running_sequences = gather_beams(running_sequences, topk_current_beam_indices)
                    topk_ids = topk_indices % vocab_size
                    topk_running_sequences[:, :, cur_len] = topk_ids
                    batch_offset = torch.arange(batch_size).view(-1, 1) * N
                    batch_modified_indices = topk_current_beam_indices + batch_offset
                    topk_running_beam_indices[:, :, cur_len - decoder_prompt_len] = batch_modified_indices
                    del topk_indices, topk_current_beam_indices, topk_ids, batch_offset, batch_modified_indices
                    # d. the stopping criteria
                    next_token_hits_stopping_criteria = stopping_criteria(
                        flatten(topk_running_sequences[:, :, :cur_len + 1]))
                    next_token_hits_stopping_criteria = unflatten(next_token_hits_stopping_criteria, beams_to_keep)
                    # e. _get_running_beams_for_next_iteration
                    topk_running_log_probs = topk_log_probs + next_token_hits_stopping_criteria.to(torch.float32) * -1.0e9
                    next_topk_indices = torch.topk(topk_running_log_probs, k=N)[1]
                    running_sequences = gather_beams(topk_running_sequences, next_topk_indices)
                    running_beam_scores = gather_beams(topk_running_log_probs, next_topk_indices)
                    running_beam_indices = gather_beams(topk_running_beam_indices, next_topk_indices)
                    del topk_running_log_probs, next_topk_indices
                    # f. _update_finished_beams
                    did = next_token_hits_stopping_criteria & top_num_beam_mask[None, :]
                    tlp = topk_log_probs / ((cur_len + 1 - decoder_prompt_len) ** length_penalty)
                    full = torch.all(is_sent_finished, axis=-1, keepdims=True) & (early_stopping is True)
                    tlp += full.to(torch.float32) * -1.0e9
                    tlp += (~is_early_stop_heuristic_unsatisfied).to(torch.float32) * -1.0e9
                    tlp += (~did) * -1.0e9
                    merged_sequences = torch.cat((sequences, topk_running_sequences), dim=1)
                    merged_scores = torch.cat((beam_scores, tlp), dim=1)
                    merged_beam_indices = torch.cat((beam_indices, topk_running_beam_indices), dim=1)
                    merged_is_sent_finished = torch.cat((is_sent_finished, did), dim=1)
                    topk_merged_indices = torch.topk(merged_scores, k=N)[1]
                    sequences = gather_beams(merged_sequences, topk_merged_indices)
                    beam_scores = gather_beams(merged_scores, topk_merged_indices)
                    beam_indices = gather_beams(merged_beam_indices, topk_merged_indices)
                    is_sent_finished = gather_beams(merged_is_sent_finished, topk_merged_indices)
                    del did, tlp, full, merged_sequences, merged_scores, merged_beam_indices, merged_is_sent_finished
                    del topk_merged_indices
                    # g. reorder_cache
                    beam_idx = flatten(running_beam_indices[..., cur_len - decoder_prompt_len])
                    cache.reorder_cache(beam_idx)
                    cur_len = cur_len + 1
                    # _check_early_stop_heuristic (early_stopping False: the current length)
                    best = running_beam_scores[:, :1] / ((cur_len - decoder_prompt_len) ** length_penalty)
                    worst = torch.where(is_sent_finished, torch.min(beam_scores, dim=1, keepdim=True)[0], -1.0e9)
                    is_early_stop_heuristic_unsatisfied = is_early_stop_heuristic_unsatisfied & torch.any(
                        best > worst, dim=-1, keepdim=True)
                    del best, worst
                    # _beam_search_has_unfinished_sequences
                    this_peer_finished = not bool(torch.any(is_early_stop_heuristic_unsatisfied)
                                                  & ~(torch.all(is_sent_finished) & (early_stopping is True))
                                                  & ~torch.all(next_token_hits_stopping_criteria))
                    if record:
                        tr.read("step-end")
                        phases[step] = (int(tr.O.opobs_peak()), tr.O.opobs_peak_where().decode(errors="replace"))
                    step += 1
                if step != M:
                    raise SystemExit("measure_llm.py: beam search stopped after %d of %d steps" % (step, M))
                del cache, encoder_hidden_states, held
                if cfg.model_type in ("bart", "marian", "pegasus", "mbart", "m2m_100"):  # generate()'s logits processors die with it
                    model.config._length_1_bias = None
            return sequences

        def generate(record):
            if args.num_beams > 1:
                return generate_beams(record)
            if t5:
                return generate_t5(record)
            # GU: GenerationMixin._sample, greedy (do_sample=False), DynamicCache(config=...),
            # logits_to_keep=1; has_eos_stopping_criteria (the configs have eos_token_id)
            with torch.no_grad():
                input_ids = prompt_ids
                attention_mask = torch.ones((B, P), dtype=torch.int64)
                lt, sw = layer_types()
                if args.cache == "quantized":
                    # GU _prepare_cache_for_generation, cache_implementation="quantized":
                    # QuantizedCache(backend="quanto", **cache_config)
                    import kvq_replica
                    cache = kvq_replica.QuantizedCache(cfg.num_hidden_layers, args.kv_bits, args.kv_group_size,
                                                       args.kv_residual_length)
                elif cfg.model_type == "granitemoehybrid":
                    # GraniteMoeHybridForCausalLM.prepare_inputs_for_generation: HybridMambaAttentionDynamicCache(
                    # config, batch, self.dtype) before the prefill (granite4_replica.py)
                    import granite4_replica
                    cache = granite4_replica.HybridMambaAttentionDynamicCache(cfg.d, B, dtype)
                elif cfg.model_type == "mamba2":
                    # Mamba2Model.forward makes its Mamba2Cache on the first call (mamba2_replica.py)
                    import mamba2_replica
                    cache = mamba2_replica.Mamba2Cache(cfg.d)
                elif cfg.model_type in ("lfm2", "lfm2_moe"):
                    # Lfm2Model.forward: Lfm2HybridConvCache(config, batch, self.dtype) when use_cache and no cache
                    # is passed (generate() passes none for lfm2) (lfm2_replica.py)
                    import lfm2_replica
                    cache = lfm2_replica.Lfm2HybridConvCache(cfg.d, B, dtype)
                elif cfg.model_type == "nemotron_h":  # the Mamba states made before the prefill (nemotron_h_replica.py)
                    import nemotron_h_replica
                    cache = nemotron_h_replica.Cache(cfg.d, B, dtype)
                elif cfg.model_type == "falcon_h1":
                    # FalconH1ForCausalLM.prepare_inputs_for_generation: FalconHybridMambaAttentionDynamicCache before
                    # the prefill (falcon_h1_replica.py)
                    import falcon_h1_replica
                    cache = falcon_h1_replica.Cache(cfg.d, B, dtype)
                elif cfg.model_type in ("qwen3_next", "qwen3_5", "qwen3_5_moe"):
                    # Qwen3NextModel.forward: past_key_values = Qwen3NextDynamicCache(config) (deltanet_replica.py);
                    # Qwen3_5TextModel.forward: Qwen3_5DynamicCache, the same class (modular_qwen3_5.py @ 8940358a)
                    import deltanet_replica
                    cache = deltanet_replica.Qwen3NextDynamicCache(cfg)
                else:
                    cache = R.DynamicCache(lt, sw)
                # _get_initial_cache_position (in _prefill with --transformers 5.0)
                cache_position = None if use_prefill else torch.arange(P, dtype=torch.int64)
                unfinished = torch.ones(B, dtype=torch.long)
                pad = torch.tensor(cfg.d.get("pad_token_id") or 0, dtype=torch.long)
                tti = token_type_ids  # generate()'s model_kwargs["token_type_ids"] (gemma3 with images)
                for step in range(M):
                    if record:
                        tr.O.opobs_reset_peak()
                        if args.per_op_file and step == 0:
                            tr.O.opobs_log_open(args.per_op_file.encode())
                        tr.tag("prefill" if step == 0 else "decode%d" % step)
                    # prepare_inputs_for_generation: input_ids[:, -cache_position.shape[0]:] (a view);
                    # Qwen3VLForConditionalGeneration's (modeling_qwen3_vl.py @00709b86): pixel_values None once
                    # cache_position[0] != 0 (the tower runs in the prefill only; model_kwargs still hold them)
                    if tti is not None:  # Gemma3ForConditionalGeneration.prepare_inputs_for_generation
                        model.pixel_values = pixel_values if step == 0 else None
                        model.token_type_ids = tti
                    elif pixel_values is not None and cfg.model_type == "paligemma":
                        # PaliGemmaForConditionalGeneration.prepare_inputs_for_generation (@ efa7189c): pixel_values
                        # only while cache_position[0] == 0
                        model.pixel_values = pixel_values if step == 0 else None
                    elif pixel_values is not None and cfg.model_type == "mistral3":
                        # Mistral3ForConditionalGeneration.prepare_inputs_for_generation: pixel_values only while
                        # cache_position[0] == 0
                        model.embed_tokens.pixel_values = pixel_values if step == 0 else None
                        model.embed_tokens.image_sizes = grid_thw if step == 0 else None
                    elif pixel_values is not None:
                        model.embed_tokens.pixel_values = pixel_values if step == 0 else None
                        model.embed_tokens.grid_thw = grid_thw if step == 0 else None
                    if mllama_images is not None:  # mllama_replica.py: the tower in the prefill only
                        model.pixel_values = mllama_images[0] if step == 0 else None
                        if step == 0:
                            model.cross_attention_mask = mllama_images[1]
                    if use_prefill and step == 0:  # _sample: _prefill before the loop (tagged with its first step)
                        cache_position = prefill(input_ids, attention_mask, cache)
                    cur = input_ids[:, -cache_position.shape[0]:]
                    _, logits = model(cur, past_key_values=cache, cache_position=cache_position,
                                      attention_mask=attention_mask, logits_to_keep=1)
                    # _update_model_kwargs_for_generation: attention_mask grows, cache_position advances
                    attention_mask = torch.cat([attention_mask, attention_mask.new_ones((B, 1))], dim=-1)
                    cache_position = cache_position[-1:] + 1
                    if tti is not None:  # _update_model_kwargs_for_generation: the last value repeated
                        tti = torch.cat([tti, tti[:, -1].unsqueeze(-1)], dim=-1)
                    if mllama_images is not None:  # MllamaForConditionalGeneration._update_model_kwargs_for_generation
                        cam = model.cross_attention_mask
                        model.cross_attention_mask = torch.cat([cam, cam[:, -1:, ...]], dim=1)
                        del cam
                    next_token_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32)
                    next_tokens = torch.argmax(next_token_logits, dim=-1)
                    next_tokens = next_tokens * unfinished + pad * (1 - unfinished)
                    input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
                    # `del outputs`; next_token_logits and next_tokens are _sample's locals: they
                    # stay alive through the next step's forward, until rebound after it
                    del logits
                    if record:
                        tr.read("step-end")
                        phases[step] = (int(tr.O.opobs_peak()),
                                        tr.O.opobs_peak_where().decode(errors="replace"))
                del cache
            return input_ids

        out = generate(False)
        del out
        tr.O.opobs_reset_peak()
        out = generate(True)
        del out
        if args.per_op_file:
            tr.O.opobs_log_close()
        decode = {s: v for s, v in phases.items() if s > 0}
        dstep = max(decode, key=lambda s: decode[s][0]) if decode else None
        kv_per_token = 0
        if whisper:  # the decoder's self-attention keys and values per token (d_model each)
            kv_per_token = raw.get("decoder_layers", 4) * 2 * raw.get("d_model", 384) * (2 if args.precision == "bf16" else 4)
        elif t5:  # the decoder's self-attention keys and values per generated token (the cross-attention's: the prompt's)
            kv_per_token = raw.get("num_decoder_layers") or raw.get("num_layers", 6)
            kv_per_token *= 2 * raw.get("num_heads", 8) * raw.get("d_kv", 64) * (2 if args.precision == "bf16" else 4)
        elif cfg.model_type in ("deepseek_v3", "deepseek_v2", "deepseek_v32", "glm_moe_dsa"):  # MLA: DynamicCache keeps key_states
            # (qk_head_dim) and value_states; deepseek_v32 also the indexer's keys (index_head_dim, dsa_replica.py)
            # (glm_moe_dsa: the "full" indexer layers' alone, dsa_replica.glm_indexer_types)
            idx_layers = cfg.num_hidden_layers if cfg.model_type == "deepseek_v32" else 0
            if cfg.model_type == "glm_moe_dsa":
                import dsa_replica
                idx_layers = dsa_replica.glm_indexer_types(cfg.d, cfg.num_hidden_layers).count("full")
            kv_per_token = (cfg.num_hidden_layers * cfg.num_attention_heads * (
                cfg.d["qk_nope_head_dim"] + cfg.d["qk_rope_head_dim"] + cfg.d["v_head_dim"]) +
                idx_layers * cfg.d.get("index_head_dim", 128)) * (2 if args.precision == "bf16" else 4)
        elif cfg.model_type == "falcon":  # DynamicCache keeps what FalconAttention gives it (falcon_replica.py)
            import falcon_replica
            H, nh, kv, new, _ = falcon_replica.falcon_shape(cfg.d)
            kv_per_token = cfg.num_hidden_layers * 2 * (nh if new else kv) * (H // nh) * (2 if args.precision == "bf16" else 4)
        elif cfg.model_type == "granitemoehybrid":  # the attention layers' keys and values (granite4_replica.py)
            import granite4_replica
            kv_per_token = granite4_replica.kv_bytes_per_token(cfg.d, 2 if args.precision == "bf16" else 4)
        elif cfg.model_type == "mamba2":  # no keys or values: Mamba2Cache's states only
            kv_per_token = 0
        elif cfg.model_type in ("lfm2", "lfm2_moe"):  # the attention layers' keys and values (lfm2_replica.py)
            import lfm2_replica
            kv_per_token = lfm2_replica.kv_bytes_per_token(cfg.d, 2 if args.precision == "bf16" else 4)
        elif cfg.model_type == "nemotron_h":  # the attention layers' keys and values (nemotron_h_replica.py)
            import nemotron_h_replica
            kv_per_token = nemotron_h_replica.kv_bytes_per_token(cfg.d, 2 if args.precision == "bf16" else 4)
        elif cfg.model_type == "falcon_h1":  # every layer's keys and values (falcon_h1_replica.py)
            import falcon_h1_replica
            kv_per_token = falcon_h1_replica.kv_bytes_per_token(cfg.d, 2 if args.precision == "bf16" else 4)
        elif cfg.model_type == "gemma4_text":  # each layer's kv heads and head_dim (gemma4_replica.py)
            import gemma4_replica
            kv_per_token = gemma4_replica.kv_bytes_per_token(cfg.d, 2 if args.precision == "bf16" else 4)
        elif cfg.model_type != "gpt_neox":
            hd = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
            n_kv = cfg.num_hidden_layers
            if cfg.model_type in ("qwen3_next", "qwen3_5", "qwen3_5_moe"):  # keys and values on the full-attention layers only
                import deltanet_replica
                n_kv = deltanet_replica.layer_types(cfg).count("full_attention")
            kv_per_token = n_kv * 2 * cfg.num_key_value_heads * hd * (2 if args.precision == "bf16" else 4)
        if image_tokens:
            model.embed_tokens.pixel_values = model.embed_tokens.grid_thw = None
            model.embed_tokens.image_hidden_states = None  # idefics3_replica.py: generate()'s model_kwargs
            if token_type_ids is not None:
                model.pixel_values = model.token_type_ids = None
            P -= image_tokens  # the case's --prompt: the text's tokens
        result.update({
            "prompt": P, "new_tokens": M,
            **({"num_beams": args.num_beams} if args.num_beams > 1 else {}),
            **({"transformers": args.transformers} if args.transformers != "4.57" else {}),
            "cache": "DynamicCache" if args.cache == "dynamic" else "QuantizedCache(quanto)",
            "prefill_peak": phases[0][0], "prefill_peak_where": phases[0][1],
            "decode_peak": decode[dstep][0] if decode else None,
            "decode_peak_step": dstep,
            "decode_peak_where": decode[dstep][1] if decode else None,
            "peak_allocated": max(v[0] for v in phases.values()),
            "after_build_bytes": int(after_build),
            "kv_cache_bytes_per_token_per_sequence": kv_per_token,
        })
        if args.cache == "quantized":
            result.update({"kv_bits": args.kv_bits, "kv_group_size": args.kv_group_size,
                           "kv_residual_length": args.kv_residual_length,
                           "kv_cache_bytes_per_token_per_sequence": None})
    result["reads"] = int(tr.O.opobs_reads())
    result["wrapped_scalar_bytes_ignored"] = int(tr.O.opobs_forgotten())
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(result["peak_allocated"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
