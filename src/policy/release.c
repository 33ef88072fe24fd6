/*
 * release.c — the --torch table: what each PyTorch release does where the
 * memory depends on it. A row holds from its release until the next row of
 * the same behaviour. Each row cites the source (file, function, PR) it
 * follows; docs/accuracy.md "The PyTorch release followed" lists them.
 * Then the --transformers table, the same for the transformers releases a
 * Hugging Face config.json runs as (docs/llm.md "The transformers release"), and the
 * --trl table of the TRL releases the trl: recipes follow (docs/llm.md "The TRL release").
 */
#include "release.h"

#include <stddef.h>

#include "vramcalc/vramcalc.h"

typedef struct {
    vc_rel_what what;
    int from;  /* first release with this value, 100*major + minor */
    int value;
} vc_rel_row;

/* In release order within each behaviour. */
static const vc_rel_row rows[] = {
    /* aten/src/ATen/native/transformers/attention.cpp,
     * _scaled_dot_product_attention_math: at::softmax(attn, -1) before 2.5;
     * 2.5 calls at::_safe_softmax, which returns at::where(masked_rows,
     * zero, out) (a new tensor); PR #139613 (first in 2.6) makes it
     * at::where_out(out, masked_rows, zero, out), into the softmax output. */
    {VC_REL_SOFTMAX, 200, VC_SOFTMAX_PLAIN},
    {VC_REL_SOFTMAX, 205, VC_SOFTMAX_SAFE_WHERE},
    {VC_REL_SOFTMAX, 206, VC_SOFTMAX_SAFE_OUT},
    /* aten/src/ATen/native/transformers/cuda/sdp_utils.cpp: flash attention
     * was FlashAttention v1 in 2.0 and 2.1 (head dims up to 128: "any head
     * dimensions that are multiples of 8, up to 128", Dao-AILab/flash-attention
     * issue #28, 2022-10-24; FlashAttention 2 supports up to 256); PR #105602
     * "Flash Attention v2" (first in 2.2) raised check_head_dim_size_flash's
     * limit to 256, which it still is ("All head_dim sizes must be equal and
     * less than 256", sdp_utils.cpp at 001f694a). */
    {VC_REL_FLASH_HDIM, 200, 128},
    {VC_REL_FLASH_HDIM, 202, 256},
    /* torch/optim/optimizer.py _default_to_fused_or_foreach: foreach on
     * CUDA when foreach, fused and differentiable are not given, from 2.0
     * (PR #92306; #95241, cherry-picked into 2.0 as #95415, made it foreach
     * and not fused; #95862 made it apply to nn.Parameters); fused has not
     * become the default (PR #177605, "Default to fused implementation when
     * available", is open). */
    {VC_REL_OPTIM_DEFAULT, 200, VC_IMPL_FOREACH},
    /* torch/optim/_adafactor.py: torch.optim.Adafactor is new in 2.5 */
    {VC_REL_ADAFACTOR, 200, 0},
    {VC_REL_ADAFACTOR, 205, 1},
    /* aten/src/ATen/cuda/CublasHandlePool.cpp @ 26a39059 (the H200 run's 2.11):
     * getCurrentCUDABlasHandle calls setWorkspaceForHandle, which allocates
     * getChosenWorkspaceSize() bytes (CUBLAS_WORKSPACE_CONFIG, default
     * :4096:2:16:8 = 8,519,680 B, 4096 x 8 KiB = 32 MiB on sm90) from the
     * caching allocator per (handle, stream) and keeps it. PyTorch 2.15's
     * documentation (docs.pytorch.org/docs/2.15/cuda_environment_variables.html,
     * TORCH_CUBLAS_WORKSPACE_CACHE: "If set to 1, retains ATen's cuBLAS and
     * cuBLASLt workspaces per handle and stream"; torch.cuda.current_blas_handle:
     * "the handle uses the BLAS library's default workspace unless ATen
     * workspace caching is explicitly enabled") makes it off by default: the
     * handle's workspace is cuBLAS's own, outside the caching allocator
     * (src/engine/state.c). The first release without it is not pinned:
     * 2.12-2.14 keep 2.11's row until a release's source is read. */
    {VC_REL_CUBLAS_WS_RETAINED, 200, 1},
    {VC_REL_CUBLAS_WS_RETAINED, 215, 0},
    /* torch/_inductor/config.py reorder_for_peak_memory, the scheduler pass of
     * torch/_inductor/memory.py reorder_for_peak_memory (a memory-aware topological sort of
     * the fused nodes, the lowest estimated peak of its methods): PR #134874 (2024-08-30)
     * added it behind TORCHINDUCTOR_REORDER_FOR_PEAK_MEMORY=1; PR #137205 ("restructuring
     * memory.py and turn on the flag", October 2024, after the 2.5 branch) made it
     * `reorder_for_peak_memory = True`, first in 2.6. --compile reports it, the estimate
     * does not model it (src/engine/compile.c). */
    {VC_REL_INDUCTOR_REORDER, 200, 0},
    {VC_REL_INDUCTOR_REORDER, 206, 1},
    /* The memory-efficient SDPA kernel's attn_mask (layers/sdpa.c sdpa_efficient).
     * 2.0: aten/src/ATen/native/transformers/cuda/sdp_utils.h check_for_attn_mask ("Both fused
     * kernels do not support non-null attn_mask"): a mask rules out flash and memory-efficient
     * alike, so the math backend runs. 2.1: PR #104310 ("Meff Attn Bias") lets the kernel take it;
     * attention.cpp preprocess_mask (mem_eff_alignment 16) expand_symints the mask to [B, H, L, S]
     * and, when S % 16 != 0, pad_bias pads that expanded view (a new [B, H, L, round16(S)] tensor,
     * sliced back). PR #114173 ("Require less alignment for attn bias", merged 2023-11, first in
     * 2.2; its description: the earlier fix, #112673, "causes un-needed memory regressions") made it
     * mem_eff_alignment 8: aligned_tensor<8> (every stride but the last a multiple of 8, the last
     * 1) or else pad_bias<8> of the mask as given (convert_boolean_attn_mask's result, e.g.
     * [B, 1, L, S]), then expand_symint (a view); unchanged at cyyever/pytorch @0d188885.
     * Per minor release, 2.1 is 2.1.0. Not modelled: #112796 (the cherry-pick of #112673 "Fix mem
     * eff bias bug", merged 2023-11-02, asked for 2.1.1 in tracker #110961; its diff not read here:
     * vramcalc's issue 31/27 says it made a stride-0 or unaligned bias .contiguous(), materialising the
     * expanded [B, H, L, S]) and #114837 ("Require less alignment for attn bias (#114173)", merged
     * 2023-11-30 inside the 2.1.2 tracker's cherry-pick window, #113962; its base branch not read),
     * which would make 2.1.2 behave as 2.2. */
    {VC_REL_MEFF_MASK, 200, VC_MEFF_MASK_NONE},
    {VC_REL_MEFF_MASK, 201, VC_MEFF_MASK_PAD16},
    {VC_REL_MEFF_MASK, 202, VC_MEFF_MASK_PAD8},
};

/* ---- --transformers: the transformers releases (huggingface/transformers) ---- */

typedef struct {
    vc_tf_what what;
    int from; /* first release with this value, 100*major + minor */
    int value;
} vc_tf_row;

static const vc_tf_row tf_rows[] = {
    /* 4.x: a MoE block's experts are an nn.ModuleList of per-expert MLPs run in a loop over
     * the experts hit (models/mixtral/modeling_mixtral.py MixtralSparseMoeBlock.forward,
     * `for expert_idx in expert_hit`, @5dd4a63; Qwen2MoeSparseMoeBlock the same loop).
     * 5.0: stacked 3-D expert weights (MixtralExperts gate_up_proj [E, 2I, H], down_proj
     * [E, H, I]) and PreTrainedModel.get_correct_experts_implementation picking grouped_mm
     * when none is requested, run by integrations/moe.py grouped_mm_experts_forward
     * (@8b584a67b474f3dfdedcdda7acb96a33dcc3b5e3). docs/llm.md "Mixture of experts". */
    {VC_TF_EXPERTS, 446, VC_EXPERTS_PER_EXPERT},
    {VC_TF_EXPERTS, 500, VC_EXPERTS_GROUPED_MM},
    /* gemma2's default attention. 4.45 and 4.46: Gemma2PreTrainedModel._check_and_enable_sdpa
     * (PR #32865 "Gemma2: eager attention by default", commit 975b988b, first in 4.45) calls
     * PreTrainedModel's and, when not hard_check_only and it chose "sdpa", sets
     * config._attn_implementation = "eager" (explicit [b, h, s, s] weights, the softcapping).
     * PR #34282 ("Gemma capping", GEMMA2_ATTENTION_FUNCTION) dropped the override; PR #34942 of
     * 2024-11-26 patched its code on main, so it is in 4.47.0 (2024-12-05; that tag itself was not
     * read). modeling_gemma2.py @006e86931247d7bacf94ad00ada1fb6baf11e94b (GEMMA2_ATTENTION_FUNCTION,
     * Gemma2SdpaAttention "will be removed in v4.48") and @5dd4a63548857797727ae73eeb6a6e886ea02a3e
     * (5.x) define no _check_and_enable_sdpa: PreTrainedModel's default picks sdpa (5.x:
     * _check_and_adjust_attn_implementation / get_correct_attn_implementation), and
     * sdpa_attention_forward takes no softcap. docs/llm.md "The transformers release". */
    {VC_TF_GEMMA2_EAGER, 446, 1},
    {VC_TF_GEMMA2_EAGER, 447, 0},
    /* Mistral's sliding-window mask under sdpa. 4.46 to 4.52: MistralModel._update_causal_mask and
     * _prepare_4d_causal_attention_mask_with_cache_position (modeling_mistral.py @93e0020c96f1aaf6c380491c943fcf57502c5e19,
     * a main commit between those releases: its modular_mistral.py layout, ALL_ATTENTION_FUNCTIONS, num_logits_to_keep;
     * @005a187ea7c5a291ef79f737d47233641ac17f24, before the attention refactor, builds the same mask): once
     * AttentionMaskConverter._ignore_causal_mask_sdpa (modeling_attn_mask_utils.py @c276655525da90e4bd84ad58c47260f643928974)
     * no longer drops it (a kv length of sliding_window or more), a FLOAT mask of the embeddings' dtype,
     * torch.full((L, target_length), min_dtype) with target_length = past + L + 1 without an attention_mask,
     * multiplied in place by the bool diagonal_attend_mask | sliding_attend_mask, expanded to [B, 1, L, T]
     * (layers/llm.c sliding_mask_4x). 5.0: masking_utils.py @00c4411c create_sliding_window_causal_mask, a bool
     * mask (layers/llm.c sliding_mask). The tags themselves (v4.46.0 to v4.52.x; masking_utils from 4.53) were
     * not read: the two commits above stand for them. docs/llm.md "The sliding-window mask under sdpa". */
    {VC_TF_SLIDING_FLOAT_MASK, 446, 1},
    {VC_TF_SLIDING_FLOAT_MASK, 453, 0},
    /* gradient_checkpointing_enable(gradient_checkpointing_kwargs=None), what transformers' Trainer calls with
     * TrainingArguments' gradient_checkpointing_kwargs None (and PEFT's prepare_model_for_kbit_training without
     * kwargs). 4.x: `if gradient_checkpointing_kwargs is None: gradient_checkpointing_kwargs = {"use_reentrant":
     * True}` (modeling_utils.py PreTrainedModel.gradient_checkpointing_enable @040ba146759afc625c77f49d04982bb54873995f,
     * a 4.4x main commit; PR #28538, merged 2024-01, first in 4.37), then, with adapters loaded through the PEFT
     * integration (_hf_peft_config_loaded), enable_input_require_grads(). 5.0: use_reentrant=False by default (PR
     * #43203 "Switch gradient checkpointing default to use_reentrant=False", merged 2026-01-09; the 5.0 tag's
     * modeling_utils.py was not stored to read: the PR thread is the source). docs/llm.md "Gradient checkpointing". */
    {VC_TF_CKPT_REENTRANT, 446, 1},
    {VC_TF_CKPT_REENTRANT, 500, 0},
    /* generate()'s prefill. 4.x: GenerationMixin._sample and _beam_search run the decoding loop's first step over the
     * whole prompt (prepare_inputs_for_generation slices input_ids by cache_position = arange(prompt)), whose logits
     * (logits_to_keep=1) pick the first token (generation/utils.py @1097d4b3f8dd6440add50f87a2784b03cc0b4c85, a 4.4x
     * commit: no _prefill). PR #40652 ("Isolate prefill from generation loops", marked breaking, opened 2025-09-03;
     * PR #42088 of 2025-11-07 calls its merge recent) made GenerationMixin._prefill (generation/utils.py
     * @000034a44ef887621d9b36001a5eb7c46e64cb3f), called by _sample and _beam_search after _expand_inputs_for_generation:
     * prefill_input_ids = input_ids[:, :-1] (none for a one-token prompt: an encoder-decoder's decoder_start_token),
     * the attention mask sliced to it, cache_position = arange(prompt - 1), one forward (logits_to_keep=1, as
     * generate() set it) whose outputs are dropped when _prefill returns, _update_model_kwargs_for_generation (its
     * mask cat dropped as the full mask is put back); the loop then starts from the last prompt token over the cache
     * of prompt - 1 tokens, whatever the cache class. First in 5.0 (the v5.0.0 tag itself was not stored to read; 4.57
     * was not read either: the PR's breaking marker and dates stand for them). Not tabled: PR #44130 (merged
     * 2026-02; a Hub custom_generate tests transformers >= 5.3.0 for it) makes _prefill run the whole prompt again and
     * hand its outputs to the loop's first step. */
    {VC_TF_PREFILL_BUT_LAST, 446, 0},
    {VC_TF_PREFILL_BUT_LAST, 500, 1},
};

int vc_transformers_value(int version, vc_tf_what what)
{
    if (version == 0) version = VC_TRANSFORMERS_DEFAULT;
    int value = 0;
    for (size_t i = 0; i < sizeof tf_rows / sizeof tf_rows[0]; i++)
        if (tf_rows[i].what == what && tf_rows[i].from <= version) value = tf_rows[i].value;
    return value;
}

/* "M.m" -> 100*M + m for a major from lo to hi: digits only, no sign, a minor of one or two digits without a
 * leading zero; -1 otherwise */
static int release_name(const char *s, char lo, char hi)
{
    if (!s || s[0] < lo || s[0] > hi || s[1] != '.' || !s[2]) return -1;
    int minor = 0;
    for (const char *p = s + 2; *p; p++) {
        if (*p < '0' || *p > '9' || p - (s + 2) >= 2 || (p == s + 2 && *p == '0' && p[1])) return -1;
        minor = minor * 10 + (*p - '0');
    }
    return (s[0] - '0') * 100 + minor;
}

int vc_transformers_from_name(const char *s)
{
    int v = release_name(s, '4', '5');
    return (v >= VC_TRANSFORMERS_OLDEST && v <= VC_TRANSFORMERS_LAST_4X) || v == VC_TRANSFORMERS_DEFAULT ? v : -1;
}

int vc_release_value(int version, vc_rel_what what)
{
    if (version == 0) version = VC_TORCH_DEFAULT;
    int value = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].what == what && rows[i].from <= version) value = rows[i].value;
    return value;
}

/* ---- --trl: the TRL releases (huggingface/trl) the trl: recipes follow ----
 * Read at the tags themselves (git tags v0.19.0 5b3ea9dd, v0.22.0 3a6b365c, v0.28.0 49ef3342, v1.0.0 f3e9ac10,
 * v1.6.0 0dac4405, v1.7.0 06b42c7e, v1.8.0 95809b94, v1.9.0 35def3ee; every v0.14.0 to v1.9.0 minor tag's
 * trl/trainer/{sft,grpo}_config.py and base_config.py compared field by field). The range starts at 1.0:
 * GRPOTrainer._get_per_token_logps_and_entropies divides the logits out of place before it (logits = logits /
 * self.temperature, grpo_trainer.py @ v0.29.0) where src/engine/grpo.c models 1.0's logits.div_(temperature),
 * and GRPOConfig.vllm_mode defaulted to "server" (a vLLM process elsewhere) before 1.0 ("colocate" from v1.0.0,
 * what --use-vllm models). From 1.0 to 1.9 the GRPO step's functions (training_step, _prepare_inputs,
 * _generate_single_turn's generate() path, _get_per_token_logps_and_entropies, _compute_loss) differ in
 * multimodal inputs, off-by-default features (entropy_coef, tools, MoE aux loss from 1.7) and the logged metrics,
 * and in one 0-d temporary (1.9's num_items_in_batch.clamp(min=1.0), not in 1.0 to 1.8: within a 512-byte block). */

typedef struct {
    vc_trl_what what;
    int from;          /* first release with this value, 100*major + minor */
    const char *value; /* the option's value; NULL: the recipe does not set it */
    const char *why;   /* not NULL: this release is not modelled, and why */
} vc_trl_row;

#define TRL_SFT_METRICS_WHY                                                                                         \
    "SFTTrainer.compute_loss's metrics of TRL 1.0 to 1.5 (entropy_from_logits over the whole logits, then "      \
    "outputs.logits[..., :-1, :].contiguous() and its argmax; sft_trainer.py @ v1.0.0) are not modelled: 1.6's are"
#define TRL_SFT_CHUNKED_WHY                                                                                         \
    "TRL 1.7's chunked_nll keeps the valid rows (hidden[valid], sft_trainer.py @ v1.7.0 "                       \
    "_chunked_cross_entropy_loss) where 1.8 sorts them (argsort, hidden[order]): only 1.8's is modelled"

static const vc_trl_row trl_rows[] = {
    /* SFTTrainer.compute_loss: 1.0 to 1.5 compute the entropy over outputs.logits, then copy the shifted slice
     * (.contiguous()) for the accuracy (sft_trainer.py @ v1.0.0, the same through v1.5.0); v1.6.0 drops the copies
     * (shift_logits = outputs.logits[..., :-1, :], a view), the order src/engine/loss.c emit_trl_nll models. */
    {VC_TRL_SFT_STEP, 100, NULL, TRL_SFT_METRICS_WHY},
    {VC_TRL_SFT_STEP, 106, NULL, NULL},
    /* SFTConfig.loss_type (sft_config.py): the field is new in v0.23.0, default "nll"; v1.6.0 makes the default
     * None, which __post_init__ sets to "nll" with a FutureWarning ("will change ... to 'chunked_nll' in TRL 1.7",
     * l.297-308);
     * v1.7.0's __post_init__ sets None to "nll" if use_liger_kernel else "chunked_nll" (l.335-336), as through
     * v1.9.0. --loss chunked-nll is 1.8's _chunked_cross_entropy_loss (v1.9.0 and f2cd5771 the same function). */
    {VC_TRL_SFT_LOSS, 23, "nll", NULL},
    {VC_TRL_SFT_LOSS, 107, "chunked-nll", TRL_SFT_CHUNKED_WHY},
    {VC_TRL_SFT_LOSS, 108, "chunked-nll", NULL},
    /* gradient_checkpointing True: SFTConfig's and GRPOConfig's own field from v0.22.0 (TrainingArguments' False
     * before), base_config.py's (BaseConfig at v0.29.0, _BaseConfig from v1.0.0) after. use_reentrant: SFTTrainer.__init__ and
     * GRPOTrainer.__init__ gradient_checkpointing_kwargs.setdefault("use_reentrant", False) from v0.28.0 (under
     * transformers < 5.0, whose own default is non-reentrant: docs/llm.md "Gradient checkpointing"); v0.27.0 and
     * before pass TrainingArguments' None, transformers' gradient_checkpointing_enable default. */
    {VC_TRL_SFT_CKPT, 22, "true", NULL},
    {VC_TRL_SFT_CKPT_KIND, 28, "non-reentrant", NULL},
    {VC_TRL_GRPO_CKPT, 22, "true", NULL},
    {VC_TRL_GRPO_CKPT_KIND, 28, "non-reentrant", NULL},
    /* GRPOConfig.beta (grpo_config.py): 0.04 from v0.14.0 to v0.18.x, 0.0 from v0.19.0 (no reference model). */
    {VC_TRL_GRPO_BETA, 19, "0", NULL},
    /* GRPOConfig.max_completion_length: 256 in every tag from v0.14.0 to v1.9.0; main changed it to 512 after
     * v1.9.0 (commit 286d19fc, PR #6264, in f2cd5771), in no release yet. */
    {VC_TRL_GRPO_NEW_TOKENS, 14, "256", NULL},
};

const char *vc_trl_value(int version, vc_trl_what what, const char **why)
{
    if (version == 0) version = VC_TRL_DEFAULT;
    const vc_trl_row *row = NULL;
    for (size_t i = 0; i < sizeof trl_rows / sizeof trl_rows[0]; i++)
        if (trl_rows[i].what == what && trl_rows[i].from <= version) row = &trl_rows[i];
    if (why) *why = row ? row->why : NULL;
    return row ? row->value : NULL;
}

int vc_trl_from_name(const char *s)
{
    int v = release_name(s, '0', '1');
    return v >= VC_TRL_OLDEST && v <= VC_TRL_DEFAULT ? v : -1;
}
