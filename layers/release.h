/*
 * release.h — behaviours that moved memory between PyTorch releases, as a
 * table (src/policy/release.c): one row per (behaviour, first release with a value).
 * Part of the layers' interface to the engine, as layer.h: the layers ask
 * (sdpa.c), the engine answers and asks too (options.c, optim.c).
 * --torch X.Y (vc_options.torch_version, 100*major + minor) picks the row;
 * code asks vc_release_value, never compares release numbers itself.
 */
#ifndef VC_RELEASE_H
#define VC_RELEASE_H

typedef enum {
    VC_REL_SOFTMAX,       /* the math SDPA's softmax: a vc_rel_softmax */
    VC_REL_FLASH_HDIM,    /* flash attention's largest head dim (check_head_dim_size*) */
    VC_REL_OPTIM_DEFAULT, /* torch.optim's implementation when foreach/fused are not given: a vc_optim_impl */
    VC_REL_ADAFACTOR,     /* 1: torch.optim.Adafactor exists */
    VC_REL_CUBLAS_WS_RETAINED, /* 1: ATen keeps a cuBLAS workspace per (handle, stream) in the caching allocator */
    VC_REL_INDUCTOR_REORDER, /* 1: inductor's reorder_for_peak_memory pass is on by default (--compile) */
    VC_REL_MEFF_MASK,     /* the memory-efficient SDPA's attn_mask handling: a vc_rel_meff_mask */
    VC_REL__N
} vc_rel_what;

typedef enum {
    VC_SOFTMAX_PLAIN,      /* at::softmax: the result only */
    VC_SOFTMAX_SAFE_WHERE, /* _safe_softmax returning a new at::where(...) */
    VC_SOFTMAX_SAFE_OUT    /* _safe_softmax zeroing masked rows in its output (at::where_out) */
} vc_rel_softmax;

typedef enum {
    VC_MEFF_MASK_NONE,    /* the kernel takes no attn_mask: a masked call runs the math backend */
    VC_MEFF_MASK_PAD16,   /* expand to [B, H, L, S], then pad the expanded mask to a multiple of 16 */
    VC_MEFF_MASK_PAD8     /* pad the mask as given to a multiple of 8 when unaligned, then expand (a view) */
} vc_rel_meff_mask;

/* The value of `what` at release `version` (0: VC_TORCH_DEFAULT). */
int vc_release_value(int version, vc_rel_what what);

/* --transformers X.Y (100*major + minor): what a Hugging Face config.json runs as at
 * that transformers release, the second table of release.c. The releases named are
 * VC_TRANSFORMERS_OLDEST to VC_TRANSFORMERS_LAST_4X and 5.0 (VC_TRANSFORMERS_DEFAULT, the
 * newest tabled). */
#define VC_TRANSFORMERS_OLDEST 446
#define VC_TRANSFORMERS_LAST_4X 457 /* the last 4.x minor release */
#define VC_TRANSFORMERS_DEFAULT 500
typedef enum {
    VC_TF_EXPERTS, /* the MoE experts' implementation when not told: a vc_experts_impl */
    VC_TF_GEMMA2_EAGER, /* 1: gemma2's default attention is eager (its _check_and_enable_sdpa override), 0: sdpa */
    VC_TF_SLIDING_FLOAT_MASK, /* 1: Mistral's sdpa sliding mask is the model's float [L, T] mask
                               * (_prepare_4d_causal_attention_mask_with_cache_position), 0: masking_utils' bool one */
    VC_TF_CKPT_REENTRANT, /* 1: gradient_checkpointing_enable() without gradient_checkpointing_kwargs checkpoints
                           * with use_reentrant=True, 0: use_reentrant=False */
    VC_TF_PREFILL_BUT_LAST, /* 1: generate()'s GenerationMixin._prefill runs the model over input_ids[:, :-1] and
                             * discards its outputs, the decoding loop's first step feeding the last prompt token;
                             * 0: the loop's first step runs over the whole prompt (src/engine/generate.c) */
    VC_TF__N
} vc_tf_what;
/* The value of `what` at transformers release `version` (0: VC_TRANSFORMERS_DEFAULT). */
int vc_transformers_value(int version, vc_tf_what what);
/* "4.57" -> 457, "5.0" -> 500: a release the table names; -1 otherwise. */
int vc_transformers_from_name(const char *s);

/* --trl X.Y (100*major + minor: 1.9 -> 109): TRL's defaults at that release, the third table of
 * release.c, read by the trl: rows of --recipe (src/policy/recipe.c): a row's value is the option's value
 * as vc_request_set takes it, or NULL where the recipe sets no such option at that release; its why, where
 * not NULL, says why vramcalc cannot model the recipe at that release (a usage error naming --trl). The
 * releases named are VC_TRL_OLDEST to VC_TRL_DEFAULT (the newest tag, v1.9.0). */
#define VC_TRL_OLDEST 100
#define VC_TRL_DEFAULT 109
typedef enum {
    VC_TRL_SFT_STEP,        /* SFTTrainer's step outside its loss: only a why, where it is not modelled */
    VC_TRL_SFT_LOSS,        /* SFTConfig.loss_type's default as --loss */
    VC_TRL_SFT_CKPT,        /* SFTConfig.gradient_checkpointing's default as --grad-ckpt */
    VC_TRL_SFT_CKPT_KIND,   /* SFTTrainer's gradient_checkpointing_kwargs use_reentrant as --grad-ckpt-kind */
    VC_TRL_GRPO_BETA,       /* GRPOConfig.beta's default as --beta */
    VC_TRL_GRPO_NEW_TOKENS, /* GRPOConfig.max_completion_length's default as --new-tokens */
    VC_TRL_GRPO_CKPT,       /* GRPOConfig.gradient_checkpointing's default as --grad-ckpt */
    VC_TRL_GRPO_CKPT_KIND,  /* GRPOTrainer's use_reentrant as --grad-ckpt-kind */
    VC_TRL__N
} vc_trl_what;
/* The value of `what` at TRL release `version` (0: VC_TRL_DEFAULT); *why (when why is not NULL) the
 * reason that release is not modelled, or NULL. */
const char *vc_trl_value(int version, vc_trl_what what, const char **why);
/* "1.9" -> 109: a release the table names; -1 otherwise. */
int vc_trl_from_name(const char *s);

#endif
