/*
 * recipe.c — --recipe NAME: each row a library's training config as the
 * vramcalc options that say the same thing (recipe.h). The request layer
 * applies a row's pairs as defaults: an option the user gives wins.
 *
 * torchtune rows: pytorch/torchtune @ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1,
 * recipes/configs/<name>.yaml. The keys, as the recipes read them
 * (recipes/lora_finetune_single_device.py, full_finetune_single_device.py):
 *   model.lora_attn_modules ['q_proj', 'v_proj', 'output_proj'] and
 *   apply_lora_to_mlp True (w1, w2, w3)  -> --lora-targets in the config.json's
 *                              names: q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj
 *                              (torchtune's convert_weights maps output_proj to
 *                              o_proj, w1 gate_proj, w2 down_proj, w3 up_proj)
 *   lora_rank, lora_alpha, lora_dropout -> --lora, --lora-alpha, --lora-dropout
 *   the LoRA model built under training.set_default_dtype(dtype): the adapters in
 *                              the model's bf16 -> --lora-dtype model
 *   qlora_llama3_1_8b (the base Linears' weights NF4Tensor) -> --qlora
 *   dtype bf16 (the whole model, no autocast)  -> -p bf16
 *   batch_size, gradient_accumulation_steps -> -b, --accumulate
 *   optimizer torch.optim.AdamW fused: True  -> --optim adamw --optim-impl fused
 *   optimizer bitsandbytes.optim.PagedAdamW8bit -> --optim paged_adamw8bit
 *   optimizer_in_bwd True                   -> --optim-in-bwd
 *   enable_activation_checkpointing True    -> --grad-ckpt (every decoder layer) --grad-ckpt-kind
 *                              non-reentrant: training.set_activation_checkpointing
 *                              (torchtune/training/memory.py @033177875786d2530912185c5c7ceccaadd1d615, the stored
 *                              version; bd2a0fc7's was not stored) calls torch's apply_activation_checkpointing
 *                              with no checkpoint_wrapper_fn, whose checkpoint_wrapper defaults to
 *                              CheckpointImpl.NO_REENTRANT (torch/distributed/algorithms/_checkpoint/
 *                              checkpoint_wrapper.py; that file not read at a pinned commit here)
 *   enable_activation_offloading False, compile False: vramcalc's defaults (eager,
 *                              nothing offloaded)
 *   loss torchtune.modules.loss.LinearCrossEntropyLoss (num_output_chunks=8 in
 *                              modules/loss/cross_entropy_loss.py) -> --loss chunked
 *                              --loss-chunks 8, see not_applied
 * Left to the user: the sequence length (tokenizer.max_seq_len null, alpaca
 * samples padded to the batch's longest: --seq), the GPU.
 */
#include "recipe.h"

#include "release.h"

#include <stdio.h>
#include <string.h>

#define TT "pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1 recipes/configs/"
#define TT_LORA_TARGETS {"lora_targets", "q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"}
#define TT_LOSS {"loss", "chunked"}, {"loss_chunks", "8", "loss"}
/* every decoder layer checkpointed, non-reentrant: torchtune's enable_activation_checkpointing (the header) */
#define CKPT_NON_REENTRANT {"grad_ckpt", "true"}, {"grad_ckpt_kind", "non-reentrant", "grad_ckpt"}
/* a pair whose value is the --trl release's row w (release.c): {option, NULL, needs, 1 + w} */
#define TRL_PAIR(option, needs, w) {option, NULL, needs, 1 + (w)}
/* TRL's gradient_checkpointing default and its use_reentrant, by release (release.c: True with use_reentrant
 * False at every release --trl names; sft_trainer.py and grpo_trainer.py setdefault("use_reentrant", False)) */
#define TRL_CKPT(ckpt, kind) TRL_PAIR("grad_ckpt", NULL, ckpt), TRL_PAIR("grad_ckpt_kind", "grad_ckpt", kind)
/* LinearCrossEntropyLoss against CEWithChunkedOutputLoss (what --loss chunked models) */
#define TT_LOSS_NOTE                                                                                                     \
    "loss LinearCrossEntropyLoss is estimated as --loss chunked (CEWithChunkedOutputLoss: 8 chunks, the fp32 upcast); "  \
    "LinearCrossEntropyLoss projects each chunk inside the loss, so the model's bf16 logits (batch x seq x vocab x 2 " \
    "bytes) are not all held, and it drops the ignored tokens (labels -100, data-dependent) before the projection: "   \
    "the estimate is high by up to those logits"
#define TT_CUSTOM_SHARDED_NOTE                                                                                           \
    "custom_sharded_layers ['tok_embeddings', 'output'] gives the embedding and the output projection their own "     \
    "fully_shard (resharded after forward), not modelled: here they are the root's, kept unsharded from forward "      \
    "through backward (high by up to their gathered bf16 weights)"
#define TT_SEQ_NOTE "tokenizer.max_seq_len null, dataset packed False: the sequence is the batch's longest sample (--seq)"

static const vc_recipe_row recipes[] = {
    {"torchtune:llama3_1/8B_lora_single_device", TT "llama3_1/8B_lora_single_device.yaml", "meta-llama/Llama-3.1-8B-Instruct",
     TT_SEQ_NOTE "; " TT_LOSS_NOTE,
     {{"lora", "8"}, {"lora_alpha", "16"}, {"lora_dropout", "0"}, TT_LORA_TARGETS, {"lora_dtype", "model"},
      {"precision", "bf16"}, {"batch", "2"}, {"accumulate", "8"}, {"optim", "adamw"}, {"optim_impl", "fused", "optim"},
      CKPT_NON_REENTRANT, TT_LOSS}},
    {"torchtune:llama3_1/8B_qlora_single_device", TT "llama3_1/8B_qlora_single_device.yaml", "meta-llama/Llama-3.1-8B-Instruct",
     TT_SEQ_NOTE "; the base weights are torchao's NF4Tensor (to_nf4: blocks of 64, int8 scalers per 256 blocks), "
     "estimated as --qlora's bitsandbytes nf4 with double quantization; " TT_LOSS_NOTE,
     {{"qlora", "true"}, {"lora", "8"}, {"lora_alpha", "16"}, {"lora_dropout", "0"}, TT_LORA_TARGETS,
      {"lora_dtype", "model"}, {"precision", "bf16"}, {"batch", "2"}, {"accumulate", "8"}, {"optim", "adamw"},
      {"optim_impl", "fused", "optim"}, CKPT_NON_REENTRANT, TT_LOSS}},
    {"torchtune:llama3_1/8B_full_single_device", TT "llama3_1/8B_full_single_device.yaml", "meta-llama/Llama-3.1-8B-Instruct",
     TT_SEQ_NOTE "; " TT_LOSS_NOTE,
     {{"precision", "bf16"}, {"batch", "2"}, {"optim", "paged_adamw8bit"}, {"optim_in_bwd", "true"},
      CKPT_NON_REENTRANT, TT_LOSS}},
    {"torchtune:llama3_2/3B_lora_single_device", TT "llama3_2/3B_lora_single_device.yaml", "meta-llama/Llama-3.2-3B-Instruct",
     TT_SEQ_NOTE "; " TT_LOSS_NOTE,
     {{"lora", "64"}, {"lora_alpha", "128"}, {"lora_dropout", "0"}, TT_LORA_TARGETS, {"lora_dtype", "model"},
      {"precision", "bf16"}, {"batch", "4"}, {"accumulate", "8"}, {"optim", "adamw"}, {"optim_impl", "fused", "optim"},
      CKPT_NON_REENTRANT, TT_LOSS}},
    {"torchtune:llama3_2/3B_full_single_device", TT "llama3_2/3B_full_single_device.yaml", "meta-llama/Llama-3.2-3B-Instruct",
     TT_SEQ_NOTE "; " TT_LOSS_NOTE,
     {{"precision", "bf16"}, {"batch", "4"}, {"optim", "paged_adamw8bit"}, {"optim_in_bwd", "true"},
      CKPT_NON_REENTRANT, TT_LOSS}},
    /* full_finetune_distributed (recipes/full_finetune_distributed.py _setup_model l.584-720 at the same
     * commit): the model built in dtype bf16 (training.set_default_dtype, no MixedPrecisionPolicy), every
     * TransformerSelfAttentionLayer checkpointed (enable_activation_checkpointing True), then
     * training.shard_model (torchtune/training/_distributed.py l.661-714): fully_shard of each layer
     * (get_shard_conditions: "layers.i") with reshard_after_forward True (fsdp_reshard_after_forward's
     * default) and of the root with False -> --parallel fsdp2 (fully_shard per repeated block and the
     * root, reshard_after_forward None: the same); fsdp_cpu_offload True -> CPUOffloadPolicy, --offload
     * params. --gpus: the config's launch line (tune run --nproc_per_node N). */
    {"torchtune:llama3_1/8B_full", TT "llama3_1/8B_full.yaml", "meta-llama/Llama-3.1-8B-Instruct",
     TT_SEQ_NOTE "; " TT_CUSTOM_SHARDED_NOTE "; " TT_LOSS_NOTE,
     {{"precision", "bf16"}, {"batch", "2"}, {"optim", "adamw"}, {"optim_impl", "fused", "optim"}, CKPT_NON_REENTRANT,
      {"parallel", "fsdp2"}, {"gpus", "4"}, TT_LOSS}},
    {"torchtune:llama3_1/70B_full", TT "llama3_1/70B_full.yaml", "meta-llama/Llama-3.1-70B-Instruct",
     TT_SEQ_NOTE "; " TT_CUSTOM_SHARDED_NOTE "; fsdp_cpu_offload True also runs the optimizer step on the CPU "
     "(offload_ops_to_cpu); " TT_LOSS_NOTE,
     {{"precision", "bf16"}, {"batch", "2"}, {"optim", "adamw"}, {"optim_impl", "foreach", "optim"}, CKPT_NON_REENTRANT,
      {"parallel", "fsdp2"}, {"gpus", "8"}, {"offload", "params"}, TT_LOSS}},
    /* lora_finetune_distributed (recipes/lora_finetune_distributed.py _setup_model l.472-600 at the same
     * commit): the LoRA model built in dtype bf16 (training.set_default_dtype: base and adapters bf16, no
     * MixedPrecisionPolicy) -> -p bf16 --lora-dtype model; set_trainable_params(model,
     * get_adapter_params(model)): only the adapters train; enable_activation_checkpointing as the yaml says
     * (8B False: vramcalc's default, no pair; 70B True: set_activation_checkpointing on every TransformerSelfAttentionLayer); training.shard_model
     * (torchtune/training/_distributed.py l.661-714) with custom_sharded_layers None (cfg.get default, l.324;
     * 70B_lora.yaml has it commented out): fully_shard of each "layers.i" (get_shard_conditions) with
     * reshard_after_forward True (fsdp_reshard_after_forward's default, l.326) and of the root with False
     * -> --parallel fsdp2 (layout_fsdp2.c: each group all-gathers its frozen weights and its adapters, only
     * the adapters are reduce-scattered); fsdp_cpu_offload absent (False). The optimizer is built on
     * model.parameters() (_setup_optimizer l.632): AdamW keeps no state for a frozen parameter (no .grad).
     * --gpus: the config's launch line (tune run --nproc_per_node N). */
    {"torchtune:llama3_1/8B_lora", TT "llama3_1/8B_lora.yaml", "meta-llama/Llama-3.1-8B-Instruct",
     TT_SEQ_NOTE "; " TT_LOSS_NOTE,
     {{"lora", "8"}, {"lora_alpha", "16"}, {"lora_dropout", "0"}, TT_LORA_TARGETS, {"lora_dtype", "model"},
      {"precision", "bf16"}, {"batch", "2"}, {"accumulate", "8"}, {"optim", "adamw"}, {"optim_impl", "fused", "optim"},
      {"parallel", "fsdp2"}, {"gpus", "2"}, TT_LOSS}},
    {"torchtune:llama3_1/70B_lora", TT "llama3_1/70B_lora.yaml", "meta-llama/Llama-3.1-70B-Instruct",
     TT_SEQ_NOTE "; " TT_LOSS_NOTE,
     {{"lora", "16"}, {"lora_alpha", "32"}, {"lora_dropout", "0"}, TT_LORA_TARGETS, {"lora_dtype", "model"},
      {"precision", "bf16"}, {"batch", "2"}, {"optim", "adamw"}, {"optim_impl", "fused", "optim"}, CKPT_NON_REENTRANT,
      {"parallel", "fsdp2"}, {"gpus", "8"}, TT_LOSS}},
    /* TRL's SFTTrainer with SFTConfig's defaults at the --trl release (release.c's TRL rows; the tags v1.6.0,
     * v1.8.0, v1.9.0, and huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8, main after v1.9.0, the same
     * SFT files): trl/trainer/base_config.py _BaseConfig: gradient_checkpointing True (non-reentrant:
     * sft_trainer.py sets use_reentrant False), bf16 True unless fp16; trl/trainer/sft_config.py:
     * loss_type None -> "chunked_nll" from 1.7 (__post_init__; nll at 1.6) -> --loss chunked-nll, max_length 1024
     * (the longest a sample is cut to: --seq left to the user), packing and padding_free False (the collator pads to
     * the batch's longest);
     * the rest is TrainingArguments' (transformers @ fd798335 as transformers:Trainer below):
     * per_device_train_batch_size 8, optim adamw_torch. Without a peft_config, a full fine-tune. */
    {"trl:sft", "huggingface/trl trl/trainer/sft_config.py",
     "any Hugging Face causal LM",
     "bf16 True is accelerate's bf16 autocast over the model as loaded (model_init_kwargs dtype, default float32: "
     "-p amp-bf16), under which chunked-nll is not modelled: the preset takes the model loaded in bfloat16 "
     "(model_init_kwargs={'dtype': torch.bfloat16}, as TRL's docs show) and leaves out autocast's casts (its bf16 "
     "matmuls and fp32 softmax and norm inputs); the sequence (--seq) is the data's: max_length 1024 truncates a "
     "sample, a batch is padded to its longest; later transformers releases default optim to adamw_torch_fused from "
     "torch 2.8 (add --optim-impl fused); max_grad_norm 1.0: clip_grad_norm_'s temporaries are not modelled",
     {{"precision", "bf16"}, {"batch", "8"}, {"optim", "adamw"}, {"optim_impl", "foreach", "optim"},
      TRL_CKPT(VC_TRL_SFT_CKPT, VC_TRL_SFT_CKPT_KIND), TRL_PAIR("loss", NULL, VC_TRL_SFT_LOSS)},
     1 + VC_TRL_SFT_STEP},
    /* transformers' Trainer with TrainingArguments' defaults (huggingface/transformers @ fd798335,
     * src/transformers/training_args.py): per_device_train_batch_size 8, gradient_accumulation_steps 1,
     * optim default_optim = "adamw_torch" (torch.optim.AdamW, foreach left to torch: foreach on CUDA),
     * gradient_checkpointing False, bf16 and fp16 False (no autocast), torch_compile False; the
     * Trainer drops the outputs once compute_loss returns (vramcalc's default, --hold-output off) and
     * its loss is the model's own (--loss hf, the default). */
    {"transformers:Trainer", "huggingface/transformers@fd798335c275520af034c678b35e8167820c7c80 src/transformers/training_args.py",
     "any Hugging Face causal LM",
     "the precision: bf16 and fp16 False, the model trains in the dtype it was loaded in (from_pretrained's "
     "torch_dtype; -p is yours, vramcalc's default fp32); later releases default optim to adamw_torch_fused from "
     "torch 2.8 (add --optim-impl fused); max_grad_norm 1.0: clip_grad_norm_'s norm temporaries are not modelled; "
     "the sequence (--seq) is the data's",
     {{"batch", "8"}, {"optim", "adamw"}, {"optim_impl", "foreach", "optim"}}},
    /* TRL's GRPOTrainer with GRPOConfig's defaults at the --trl release (release.c's TRL rows, the tags v1.0.0
     * to v1.9.0; src/engine/grpo.c follows huggingface/trl @ f2cd5771, main after v1.9.0, trl/trainer/grpo_config.py):
     * per_device_train_batch_size 8 (TrainingArguments'), num_generations 8 (every tag),
     * max_completion_length 256 (every tag; 512 on main after v1.9.0), beta 0.0 (no reference model),
     * loss_type "dapo", use_vllm False (the transformers generate() path), steps_per_generation = gradient_accumulation_steps 1 (an --accumulate N given
     * with the preset is gradient_accumulation_steps, and steps_per_generation follows it), optim adamw_torch,
     * gradient_checkpointing True (GRPOConfig's own default; off around generate(), its cache kept: grpo.c);
     * bf16 True, GRPOConfig's own default too: see not_applied. */
    {"trl:grpo", "huggingface/trl trl/trainer/grpo_config.py",
     "any Hugging Face causal LM",
     "bf16 True (autocast over the model in the dtype it was loaded in) is estimated as -p bf16, the model in bf16 "
     "without autocast; the prompt's length (--prompt) is the data's; max_grad_norm 1.0: clip_grad_norm_'s "
     "temporaries are not modelled; main after v1.9.0 defaults max_completion_length to 512 (PR #6264: add "
     "--new-tokens 512)",
     {{"loss", "grpo"}, {"num_generations", "8", "loss"}, TRL_PAIR("new_tokens", "loss", VC_TRL_GRPO_NEW_TOKENS),
      TRL_PAIR("beta", "loss", VC_TRL_GRPO_BETA), {"batch", "8"}, {"precision", "bf16"}, {"optim", "adamw"},
      {"optim_impl", "foreach", "optim"}, TRL_CKPT(VC_TRL_GRPO_CKPT, VC_TRL_GRPO_CKPT_KIND)}},
};

size_t vc__recipe_count(void) { return sizeof recipes / sizeof *recipes; }

const vc_recipe_row *vc__recipe_at(size_t i) { return i < vc__recipe_count() ? &recipes[i] : NULL; }

const vc_recipe_row *vc__recipe_find(const char *name)
{
    for (size_t i = 0; name && i < vc__recipe_count(); i++)
        if (!strcmp(recipes[i].name, name)) return &recipes[i];
    return NULL;
}

int vc__recipe_follows_trl(const vc_recipe_row *r)
{
    int t = r->trl_step != 0;
    for (size_t k = 0; k < vc__recipe_npairs(r); k++) t |= r->set[k].trl != 0;
    return t;
}

const char *vc__recipe_value(const vc_recipe_pair *p, int trl, const char **why)
{
    if (why) *why = NULL;
    return p->trl ? vc_trl_value(trl, (vc_trl_what)(p->trl - 1), why) : p->value;
}

size_t vc__recipe_npairs(const vc_recipe_row *r)
{
    size_t n = 0;
    while (n < VC_RECIPE_MAX_SET && r->set[n].option) n++;
    return n;
}

void vc__recipe_names(char *buf, size_t n)
{
    size_t at = 0;
    if (n) buf[0] = 0;
    for (size_t i = 0; i < vc__recipe_count() && at < n; i++) {
        int k = snprintf(buf + at, n - at, "%s%s", i ? ", " : "", recipes[i].name);
        if (k < 0) break;
        at += (size_t)k;
    }
}
