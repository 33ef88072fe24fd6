/*
 * layer.h — what a layer kind is, and the three things it must do.
 *
 * A kind is one `const vc_kind` descriptor: it parses its JSON fields into
 * a config struct, works out its output shape and parameters from its input
 * shapes ("setup"), and describes its forward pass as autograd ops ("emit").
 * The engine derives everything else — what stays alive for backward, what
 * backward allocates, gradients, optimizer state — from those ops.
 *
 * Adding a layer kind
 * -------------------
 *  1. Pick its family file in layers/ (conv.c, norm.c, ...) or add a new one
 *     (and list it in CMakeLists.txt's VC_LAYER_SOURCES).
 *  2. Write a config struct, and static parse/setup/emit functions:
 *       parse: read every constructor argument with vc_arg_*; PyTorch's
 *              default when absent; unknown keys are rejected by the loader.
 *       setup: check the input shapes (vc_fail on mismatch, naming both
 *              numbers), set s->out, declare each parameter with vc_param
 *              and each buffer with vc_buffer, in named_parameters() order.
 *       emit:  call the op helpers (ops.h) the way the PyTorch module's
 *              forward calls aten ops; vc_set_output() the result.
 *  3. End the family file with `const vc_kind vc_kind_Foo = {...}`.
 *  4. Add one line to layers/registry.c.
 *  5. Add fixture cases to tests/fixtures/gen_layer_fixtures.py, regenerate
 *     tests/data/layers/, and add op-level memory tests where the kind
 *     saves something unusual.
 */
#ifndef VC_LAYER_H
#define VC_LAYER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "vramcalc/vramcalc.h"

#ifndef VC_OPTION_MARKS /* the same in src/util/util.h and layers/layer.h (layers/ includes only its own headers) */
#define VC_OPTION_MARKS
/* An option named in a message, between option marks (VC_OPTION_MARK), by its
 * table name (src/api/options.def): vc_error_format_for spells it as the front
 * end does. O("tp"): --tp, tp=; OV("mode", "generate"): --mode generate,
 * mode=generate; OS("precision", "fp32"): the CLI's short form, -p fp32,
 * precision=fp32. vc_set_error keeps marks that name an option of the table
 * (and escapes any other control byte, as before). */
#define O(name) "\x1f" name "\x1f"
#define OV(name, value) "\x1f" name "=" value "\x1f"
#define OS(name, value) "\x1f-" name "=" value "\x1f"
#endif

/* ---- shapes and dtypes ---- */
typedef struct {
    int nd;
    int64_t d[VC_MAX_DIMS];
} vc_shape;

/* Element types. VC_DT_FLOAT is "the model's float type" at load time; the
 * engine resolves it per precision. */
typedef enum { VC_DT_FLOAT, VC_DT_F32, VC_DT_F16, VC_DT_BF16, VC_DT_I64, VC_DT_BOOL, VC_DT_U8,
               VC_DT_I8, VC_DT_I32, VC_DT_F8 /* quantized storage (src/policy/quant.c): int8, int32, float8_e4m3fn */ } vc_dtype;

int vc_dtype_size(vc_dtype dt);

/* Product of dims; -1 on overflow. */
int64_t vc_shape_numel(const vc_shape *s);
vc_shape vc_shape_make(int nd, const int64_t *d);
bool vc_shape_eq(const vc_shape *a, const vc_shape *b);
/* "[16, 32, 32]" */
void vc_shape_str(const vc_shape *s, char *buf, size_t n);
/* Normalises a PyTorch dim (which counts the batch dim as 0, negatives from
 * the end) for a per-sample shape of nd dims: returns the per-sample index
 * 0..nd-1, or -1 when out of range, -2 when it names the batch dim. */
int vc_dim_index(int64_t dim, int nd);

/* ---- parsing fields ---- */
typedef struct vc_args vc_args;

#define VC_REQUIRED INT64_MIN /* as `def`: the key must be present */

/* Each returns 0, or -1 after recording an error naming the key. */
int vc_arg_int(vc_args *a, const char *key, int64_t def, int64_t min, int64_t *out);
/* An int or a list of exactly n ints (kernel_size=3 or [3, 5]). */
int vc_arg_ints(vc_args *a, const char *key, int n, int64_t def, int64_t min, int64_t *out);
/* A list of 1..VC_MAX_DIMS ints, each >= min. *n receives the length. */
int vc_arg_list(vc_args *a, const char *key, bool required, int64_t min, int64_t *out, int *n);
int vc_arg_bool(vc_args *a, const char *key, bool def, bool *out);
int vc_arg_float(vc_args *a, const char *key, double def, double min, double max, double *out);
/* One of a NULL-terminated list of strings; *out = its index. def: an index, or -1 when required. */
int vc_arg_enum(vc_args *a, const char *key, const char *const *choices, int def, int *out);
/* The JSON type of a key: 0 absent, 1 number, 2 string, 3 array, 4 bool, 5 null, 6 other. */
int vc_arg_type(vc_args *a, const char *key);
/* For a key holding a list (a field with its own rules, such as output_size
 * with null entries): its length, 0 when it is not a list; element i's type
 * numbered as vc_arg_type does (0 past the end), a number's value in *num. */
int vc_arg_len(vc_args *a, const char *key);
int vc_arg_elem(vc_args *a, const char *key, int i, double *num);
/* Marks a key as known without reading it (for keys read by the loader). */
void vc_arg_known(vc_args *a, const char *key);
/* Records an error at `key` (NULL: the layer itself). Returns -1. */
int vc_arg_fail(vc_args *a, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- setup: shapes and parameters ---- */
typedef struct vc_setup {
    int nin;
    const vc_shape *in;      /* per-sample input shapes */
    const vc_dtype *in_dt;   /* VC_DT_FLOAT or VC_DT_I64 */
    vc_shape out;            /* set by setup */
    vc_dtype out_dt;         /* default VC_DT_FLOAT */
    const vc_lora *lora;     /* LoRA adapters for this layer (a kind with VC_KIND_LORA), NULL none */
    struct vc_setup_priv *priv;
    int64_t ep;              /* --ep: the expert-parallel ranks (vc_model_set_ep), 1 none */
    bool ep_used;            /* set by a kind that took ep > 1 (SparseMoE: its experts split) */
    bool ia3_feedforward;    /* with lora->method ia3: a feedforward module (its vector scales the input) */
    int64_t ops;             /* the kind's `ops`, unless setup sets a count that depends on the config */
} vc_setup;

/* Parameter flags. */
enum {
    VC_PARAM_FROZEN = 1u << 0,  /* requires_grad=False whatever the layer's `frozen` */
    VC_PARAM_ADAPTER = 1u << 1, /* a LoRA adapter: trainable while the model it adapts is frozen */
    VC_PARAM_F32 = 1u << 2,     /* kept in float32 whatever the precision (PEFT's fp32 adapters) */
    VC_PARAM_LINEAR = 1u << 3,  /* an nn.Linear's weight [out, in]: what a quantized storage format replaces (src/policy/quant.c) */
    VC_PARAM_BF16 = 1u << 4,    /* kept in bfloat16 whatever the precision (--lora-dtype bf16) */
    VC_PARAM_F16 = 1u << 5,     /* kept in float16 whatever the precision (--lora-dtype fp16) */
    VC_PARAM_EXPERTS = 1u << 6, /* stacked experts (Mixtral/DeepSeek [E, out, in]; GptOssExperts [E, in, out]): what
                                 * the FP8 formats (transformers finegrained_fp8.py FP8Experts, vLLM's Fp8MoEMethod) and
                                 * MXFP4 replace, unlike nn.Linear-only formats (src/policy/quant.c) */
    VC_PARAM_LLAMA4_EXPERTS = 1u << 7 /* Llama4TextExperts' stacked gate_up_proj [E, H, 2I] / down_proj [E, I, H]:
                                       * what transformers' replace_with_fbgemm_fp8_linear swaps for
                                       * FbgemmFp8Llama4TextExperts (integrations/fbgemm_fp8.py; src/policy/quant.c) */
};
#define VC_PARAM_PINNED (VC_PARAM_F32 | VC_PARAM_BF16 | VC_PARAM_F16)
/* A parameter's dtype: its pinned one (VC_PARAM_F32, _BF16, _F16), else dflt (the precision's). */
static inline vc_dtype vc_param_pinned_dt(unsigned flags, vc_dtype dflt)
{
    return flags & VC_PARAM_F32 ? VC_DT_F32 : flags & VC_PARAM_BF16 ? VC_DT_BF16 : flags & VC_PARAM_F16 ? VC_DT_F16 : dflt;
}
/* Declares a parameter: its name in named_parameters() below the module
 * ("weight", "in_proj_weight"), its shape as the module creates it (per-
 * parameter policies read them: factored optimizer states, quantization,
 * sharding), VC_PARAM_* flags. Returns -1 on overflow. */
int vc_param_shape(vc_setup *s, const char *name, int nd, const int64_t *dims, unsigned flags);
/* A 1-D parameter of `numel` elements (a bias, a norm's weight). */
int vc_param(vc_setup *s, const char *name, int64_t numel);
/* A 2-D parameter [rows, cols] (a Linear's weight is [out_features, in_features]). */
int vc_param2(vc_setup *s, const char *name, int64_t rows, int64_t cols);
/* Declares a buffer tensor of `numel` elements. Returns -1 on overflow. */
int vc_buffer(vc_setup *s, const char *name, int64_t numel, vc_dtype dt);
/* Records a shape error at `key` (NULL: the layer). Returns -1. */
int vc_fail(vc_setup *s, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Checked arithmetic for shape formulas: return -1 (after vc_fail) on overflow. */
int vc_mul(vc_setup *s, int64_t a, int64_t b, int64_t *out);
int vc_add(vc_setup *s, int64_t a, int64_t b, int64_t *out);

/* ---- emit: the forward pass as autograd ops ---- */
typedef struct vc_build vc_build;
typedef int vc_t; /* a tensor in the op graph; -1 = none */

#define VC_MAX_INPUTS 128 /* graph inputs of one layer (DenseNet-264 concatenates 65) */

/* Element count of an op-graph tensor at batch B: ps x B + fx (ps per
 * sample plus fx fixed); with div > 1, floor((ps x B + fx) / div) x mul
 * (mul 0 counts as 1): a count that is a floor of the batch's, such as the
 * tokens top-k routing gives one expert (SparseMoE) or a kernel's tiles
 * cdiv(N, 128), so that one plan holds for every batch (issue 16). div 0 or
 * 1: plain (mul unused, 0). ps, fx >= 0. */
typedef struct {
    int64_t ps, fx;
    int32_t div, mul;
} vc_numel;

vc_numel vc_n_sample(int64_t per_sample); /* {per_sample, 0} */
vc_numel vc_n_fixed(int64_t n);           /* {0, n} */
/* floor((per_sample x B + fixed) / div) elements (div >= 1) */
vc_numel vc_n_floor(int64_t per_sample, int64_t fixed, int32_t div);
/* k times n's elements: a plain count scales ps and fx, a floor count its mul
 * ({INT64_MAX, 0}, past any limit, on overflow) */
vc_numel vc_n_scale(vc_numel n, int64_t k);
/* n's elements at batch B (-1 past 2^63) */
int64_t vc_n_at(vc_numel n, int64_t batch);
/* the same element count at every batch */
bool vc_n_same(vc_numel a, vc_numel b);

const vc_options *vc_opts(const vc_build *b);
/* The estimated device's multiprocessors, as torch.cuda.get_device_properties(...).multi_processor_count
 * reads them (src/engine/scratch.c vc_kernel_sms: 1 under --workspace 0, the CPU harness) */
int64_t vc_sm_count(const vc_build *b);
int64_t vc_batch(const vc_build *b);
/* A layer that decides something from vc_batch() (a kernel chosen by the
 * batch, a transpose that is contiguous only for batch 1) declares the
 * batches over which that decision holds, lo <= vc_batch() <= hi
 * (VC_BATCH_ANY: no upper end): within them the plan's ops are the same and
 * every size is per sample times the batch plus a fixed part. The plan keeps
 * the intersection of what its layers declare; sweeps and the max-batch
 * search replay one plan for every batch inside it and build another only
 * outside (src/engine/sweep.c). */
#define VC_BATCH_ANY INT64_MAX
void vc_batch_range(vc_build *b, int64_t lo, int64_t hi);
/* The decision holds for this batch only: vc_batch_range(b, vc_batch(b), vc_batch(b)). */
void vc_batch_dependent(vc_build *b);
/* vc_batch(b) == 1, declared (a size-1 batch dim changes strides and views):
 * batch 1 alone, or 2 and above. */
bool vc_batch_is_one(vc_build *b);
/* The activation dtype of the run (fp32, or fp16/bf16 for pure/mixed precision). */
vc_dtype vc_act_dt(const vc_build *b);
/* The dtype parameters are stored in. */
vc_dtype vc_param_dt(const vc_build *b);
/* Low-precision dtype of autocast (F16/BF16), or VC_DT_F32 when not under amp. */
vc_dtype vc_autocast_dt(const vc_build *b);
/* Autocast's weight cache (cached_cast): the slot of parameter tensor w that
 * holds its low-precision copy for this forward (-1: not cast yet), NULL when
 * w is not a parameter. For ops.c's vc__op_autocast_weight alone. */
int32_t *vc__amp_cache(vc_build *b, vc_t w);
bool vc_training(const vc_build *b);
/* The model has checkpointed regions (--grad-ckpt, "checkpoint": true) and the step trains. */
bool vc_checkpointed(const vc_build *b);
/* PEFT's disable_adapter is on (--loss dpo's reference forward, src/engine/plan.c
 * vc__emit_reference): an adapter layer returns its base layer's output alone. */
bool vc_adapters_disabled(const vc_build *b);
/* --loss sum (src/engine/loss.c): this Linear, on weight parameter w, is the LM head whose backward mm receives
 * SumBackward0's stride-0 gradient and copies it contiguous (a backward temporary of its output's size). */
bool vc_head_grad_expanded(const vc_build *b, vc_t w);
/* The model's LoRA settings (r 0: none). */
const vc_lora *vc_lora_of(const vc_build *b);
/* A PEFT method's row (src/model/peft.c): what it adds to a target Linear. */
typedef struct {
    const char *name;
    bool lora;      /* lora_A [r, in] and lora_B [out, r] (the LoRA family) */
    bool magnitude; /* DoRA's lora_magnitude_vector [out] and its weight-norm forward */
    bool ia3;       /* IA3's ia3_l vector ([1, in] feedforward, [out, 1] otherwise) */
    bool copy;      /* LN tuning: a trainable deepcopy of each target module, the original frozen */
    const char *source; /* the peft source it follows */
} vc_peft_row;
const vc_peft_row *vc_peft_row_get(vc_peft p);

vc_t vc_input(vc_build *b, int i);
const vc_shape *vc_input_shape(const vc_build *b, int i);
const vc_shape *vc_output_shape(const vc_build *b);
/* Input i is no argument of the source's module but a temporary inside its
 * forward (Qwen3Attention's q_proj(x), consumed by q_norm(...)): no caller
 * holds it until the layer returns, its reference ends at its last use here
 * (autograd's saved tensors keep what backward needs as ever). At most 32 inputs. */
void vc_input_unheld(vc_build *b, int i);
/* The first input of the layer that made input i: the argument of the projection
 * that made it (LlamaAttention.forward's hidden_states, which q_proj(hidden_states)
 * reads); -1 when input i is a model input or its layer has no input. */
vc_t vc_input_arg(const vc_build *b, int i);
/* true when the model holds that argument until the next layer returns ("held_until" on the
 * layer that made it names the layer after this one: the source module's last, its o_proj) */
bool vc_input_arg_held_next(const vc_build *b, int i);
/* Keeps t alive at least until the last op emitted so far: a Python reference that
 * outlives its last use here (unlike vc_release, it never shortens a life). */
void vc_keep_to_here(vc_build *b, vc_t t);
/* Keeps t alive until the enclosing block (the Sequential copy this layer is in: a
 * Hugging Face decoder layer) returns: a local of the block's forward that outlives its
 * last use (FalconDecoderLayer.forward's attention_layernorm_out). */
void vc_keep_through_block(vc_build *b, vc_t t);
/* GlmMoeDsaModel.forward's topk_indices (modular_glm_moe_dsa.py @ 01f8fa55; layers/mla.c): the int32 top-k a DSA layer
 * returns, a variable of the model's layer loop passed to the next layer as prev_topk_indices (the "shared" layers
 * read it), rebound when the next layer returns and kept to the forward's return; -1 none yet in this forward.
 * _set keeps the one it replaces through the current decoder layer (vc_keep_through_block). */
vc_t vc_dsa_topk(const vc_build *b);
void vc_set_dsa_topk(vc_build *b, vc_t t);
/* Keeps t alive at least as long as `owner` (an earlier tensor) is referenced: the locals of a
 * module's forward, which live until it returns, tied to its argument, which the caller keeps
 * until then ("held_until" on the layer that made it: LlamaAttention.forward's query_states
 * until o_proj returns). */
void vc_keep_with(vc_build *b, vc_t t, vc_t owner);
/* PEFT's enable_input_require_grads applies (peft_model.py PeftModel.__init__ ->
 * _prepare_model_for_gradient_checkpointing with gradient checkpointing on; transformers'
 * modeling_utils.py enable_input_require_grads: a forward hook on get_input_embeddings() doing
 * output.requires_grad_(True)): training a Hugging Face model with adapters, every decoder layer
 * checkpointed whole. */
bool vc_peft_input_grads(const vc_build *b);
/* Input i is a model input (the token ids), not a layer's output. */
bool vc_input_is_model_input(const vc_build *b, int i);
vc_t vc_weight(vc_build *b, int i); /* the layer's i-th parameter */
vc_t vc_buf(vc_build *b, int i);    /* the layer's i-th buffer */
bool vc_has_weight(const vc_build *b, int i);
void vc_set_output(vc_build *b, vc_t t);

vc_numel vc_numel_of(const vc_build *b, vc_t t);
vc_dtype vc_dt_of(const vc_build *b, vc_t t);
bool vc_requires_grad(const vc_build *b, vc_t t);
bool vc_contiguous(const vc_build *b, vc_t t);

/* Keeps t alive until vc_release (a Python variable that outlives its last use). */
void vc_hold(vc_build *b, vc_t t);
void vc_release(vc_build *b, vc_t t);
/* Marks t as a tensor the step holds throughout, as its inputs (a VLM's pixel_values, layers/vision.c). */
void vc_persist(vc_build *b, vc_t t);

/* Refuses the step as not modelled (VC_ERR_USAGE naming option `opt`, an O() mark, and why);
 * the emitting layer then returns. */
void vc_refuse(vc_build *b, const char *opt, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A tensor the model's forward makes once and keeps until it returns (HF's
 * 4-D causal mask, made by the first layer that needs it): -1 none yet. */
vc_t vc_forward_local(const vc_build *b);
void vc_set_forward_local(vc_build *b, vc_t t);
/* A second such tensor (ModernBertModel's sliding-window mask beside its global one). */
vc_t vc_forward_local2(const vc_build *b);
void vc_set_forward_local2(vc_build *b, vc_t t);
/* Keeps t until the model's forward returns, its loss computed (a variable of a
 * *ForConditionalGeneration.forward: a VLM's pixel_values rebound to their cast copy, layers/vision.c). */
void vc_keep_forward(vc_build *b, vc_t t);
/* Keeps t until the base model's forward returns, before the LM head runs (a local of LlamaModel.forward:
 * position_embeddings, the rotary cos / sin every decoder layer reads) */
void vc_keep_model_forward(vc_build *b, vc_t t);
/* Gemma 4's shared_kv_states (Gemma4TextModel.forward's dict, layers/llm.c): the keys and values a layer of
 * type `type` (0, 1) stores for the kv-shared layers of its type after it, with their sequence length S and
 * whether their storage is [B, S, heads, D] (blhd); _get: false when none was stored in this forward. */
void vc_kv_share_set(vc_build *b, int type, vc_t k, vc_t v, int64_t S, bool blhd);
bool vc_kv_share_get(const vc_build *b, int type, vc_t *k, vc_t *v, int64_t *S, bool *blhd);

/* --mode generate (src/engine/generate.c): an attention layer's KV cache update
 * (transformers' DynamicLayer / DynamicSlidingWindowLayer / StaticLayer
 * .update) on its new keys and values [B, Hkv, L, D]: *k and *v become the
 * states the attention reads (contiguous [B, Hkv, S, D]), *S their length.
 * `window`: the layer's sliding_window (0 none). false, nothing changed,
 * outside generation. */
bool vc_kv_update(vc_build *b, int64_t window, vc_t *k, vc_t *v, int64_t *S);
/* The same for a chunked-attention layer (Llama 4's attention_chunk_size): transformers' cache keeps
 * chunk - 1 tokens as a sliding layer's; under --serve vLLM keeps every token (its hybrid KV cache
 * manager is off for chunked local attention by default; src/engine/generate.c). */
bool vc_kv_update_chunked(vc_build *b, int64_t chunk, vc_t *k, vc_t *v, int64_t *S);
/* --serve's profiling run (vLLM's forward, src/engine/serve.c): a layer whose vLLM module runs other
 * kernels than transformers' says so (SparseMoE style llama4: FusedMoE). */
bool vc_serving(const vc_build *b);
/* The same for an MLA layer (layers/mla.c): transformers caches its full
 * key_states and value_states as above; vLLM (--serve) keeps the compressed
 * latent instead, `latent` elements per token (kv_lora_rank +
 * qk_rope_head_dim, one head), which the slot records for the page size. */
bool vc_kv_update_latent(vc_build *b, int64_t latent, vc_t *k, vc_t *v, int64_t *S);
/* --mode generate: a Gated DeltaNet layer's slot of Qwen3NextDynamicCache
 * (modeling_qwen3_next.py @7515843b: conv_states and recurrent_states of its
 * layer_idx), {conv state, recurrent state} tensors (-1 before the prefill
 * made them) that the layer reads and rebinds; the cache keeps them to the
 * end. *decode: a pass after the prefill (the states exist). NULL outside
 * generation and in --serve's profiling run (no cache). */
int32_t *vc_ssm_state(vc_build *b, bool *decode);
/* --serve (src/engine/serve.c): a GatedDeltaNet layer's (cfg: its instance's parsed config) state per
 * request as vLLM keeps it, conv and temporal elements; *qwen3_5: Qwen3_5GatedDeltaNet (layers/deltanet.c). */
void vc__gdn_state(const void *cfg, int64_t *conv, int64_t *ssm, bool *qwen3_5);
/* A Mamba2Mixer config's HybridMambaAttentionDynamicCache state per sample, in elements (layers/mamba2.c):
 * conv_states [conv_dim, d_conv], ssm_states [heads, head_dim, state]. */
void vc__mamba2_state(const void *cfg, int64_t *conv, int64_t *ssm);
/* The same as vLLM keeps it per request under --serve (MambaSpec: conv (d_conv - 1, conv_dim), temporal
 * (heads, head_dim, state); layers/mamba2.c). */
void vc__mamba2_vllm_state(const void *cfg, int64_t *conv, int64_t *ssm);
/* A ShortConv config's Lfm2HybridConvCache conv_cache entry per sample, in elements: [hidden, L_cache]
 * (layers/shortconv.c). */
int64_t vc__shortconv_state(const void *cfg);
/* M2M100Positions (bart.c): the most positions (seq_len + past) looked up before forward rebuilds its buffer */
int64_t vc__m2m_positions_limit(const void *cfg);
/* vLLM's per-request conv state of one ShortConv layer, in elements: (conv_L_cache - 1) x hidden (shortconv.c) */
int64_t vc__shortconv_vllm_state(const void *cfg);
/* A RotaryAttention config with v_norm: Gemma4TextAttention's (layers/llm.c), which --serve pages as vLLM's Gemma 4 (src/engine/serve.c). */
bool vc__ra_v_norm(const void *cfg);
/* a RotaryAttention's kv heads, head_dim, sliding_window (0 none) and Gemma 4's kv_shared (--serve's pages) */
void vc__ra_kv_layout(const void *cfg, int64_t *kv_heads, int64_t *head_dim, int64_t *window, bool *kv_shared);
/* --mode generate: an MLA layer's DeepseekV32Indexer key cache (DynamicIndexedLayer.indexer_keys, layers/mla.c),
 * a slot of one tensor ([0]; -1 before the prefill) the layer rebinds, kept to the end and counted in the KV
 * cache; NULL outside generation and under --serve. */
int32_t *vc_kv_indexer(vc_build *b);
/* --serve's profiling run (vLLM's profile_run: no attention metadata, no cache; src/engine/generate.c). */
bool vc_serve_profile(const vc_build *b);
/* The same for a layer whose vLLM cache keeps `paged` K and V elements per token
 * while transformers caches *k and *v as given (falcon's new_decoder_architecture:
 * keys and values broadcast to every head before the update). */
bool vc_kv_update_paged(vc_build *b, int64_t paged, vc_t *k, vc_t *v, int64_t *S);
/* --mode generate of an encoder-decoder (src/engine/generate.c "Encoder-decoders"): true while
 * generate() runs the model (the encoder once, then the decoder a step at a time); the masks come from
 * generate's attention_mask and cache_position. *past: the tokens the decoder's self-attention cache held
 * before this step (0 in the encoder and at the first step). */
bool vc_gen_seq2seq(const vc_build *b, int64_t *past);
/* --mode generate of a decoder-only model, outside --serve's profiling run: true in each pass; *past the
 * tokens cached before it (0 in the prefill; 0 outside generate). */
bool vc_gen_decoder(const vc_build *b, int64_t *past);
/* ... the decoder's self-attention cache (EncoderDecoderCache.self_attention_cache, a DynamicCache whose
 * first update keeps the states, later ones torch.cat): as vc_kv_update. false outside it. */
bool vc_kv_update_self(vc_build *b, vc_t *k, vc_t *v, int64_t *S);
/* ... a cross-attention's cache, when input key_input of the current layer is a projection of the
 * encoder's output: the first step keeps *k and *v (their tensors), later steps set them to the kept ones
 * (the projections do not run then: their inputs read -1). mllama with --image: a projection of the tower's
 * output, the prefill keeping copies of *k and *v (DynamicLayer.update's cat) instead. false otherwise. */
bool vc_kv_cross(vc_build *b, int key_input, vc_t *k, vc_t *v);
/* The attention module returns: states its update returned that no cache holds
 * (a quantized cache's dequantized copies) die with its locals. */
void vc_kv_end(vc_build *b);

/* A generic autograd op. Build with vc_op_begin, describe, close with vc_op_end. */
typedef struct vc_op vc_op;

enum {
    VC_GRAD_NEW = 0,   /* backward allocates a fresh tensor of the input's size */
    VC_GRAD_PASS = 1,  /* backward passes (a view of) the incoming grad */
    VC_GRAD_NONE = 2,  /* no gradient for this input */
    VC_GRAD_REDUCE = 3, /* the node passes the incoming gradient on and the autograd engine
                        * reduces it to this (broadcast) input's shape (validate_outputs:
                        * sum_to): a new tensor of the input's size, allocated after the
                        * node's own backward returned (a bias of addmm, a broadcast add) */
    VC_GRAD_NEW_REDUCE = 4, /* the node computes an output-sized gradient in the output's dtype
                            * for this input (mul: grad * other), which the engine then reduces
                            * to the input's shape (a broadcast input) or casts to its dtype
                            * (validate_outputs): both alive together, the full one freed as
                            * its reduction replaces it */
    VC_GRAD_SAVED = 5, /* the gradient is a tensor the op made in forward (vc_op_extra_grad) */
    VC_GRAD_INTO_SAVED = 6, /* backward writes the gradient into this input's own storage, which the op saved
                             * (vc_op_save), and returns it: nothing allocated (Liger's LigerSiLUMulFunction);
                             * a new tensor where that storage is not among the node's saved ones (offloaded) */
    VC_GRAD_UNDEF = 7 /* a differentiable input whose gradient the node returns as None (a custom
                       * autograd.Function's backward): nothing allocated, but the edge stays, and autograd runs
                       * the producer's node with the undefined gradient once its consumers have run, releasing
                       * what it saved (torch/csrc/autograd/engine.cpp @ e1253a95 Engine::evaluate_function:
                       * every next edge is queued whatever the output, release_variables after each node) */
};

vc_op *vc_op_begin(vc_build *b, const char *name);
/* A differentiable input; returns its index. */
int vc_op_in(vc_op *o, vc_t t);
/* A non-differentiable input (indices, targets); returns its index. */
int vc_op_in_nodiff(vc_op *o, vc_t t);
void vc_op_grad(vc_op *o, int in, int how);
/* Backward allocates a grad of `n` elements (instead of the input's size) for input `in`. */
void vc_op_grad_size(vc_op *o, int in, vc_numel n, vc_dtype dt);
/* The gradient for input `in` arrives as a view that keeps its base (Linear's weight
 * gradient is mm(...).t().t()): autograd's InputBuffer cannot add a second gradient
 * into it in place (can_accumulate_inplace: its storage is shared), so a tied
 * parameter's two gradients are summed into a new tensor. */
void vc_op_grad_view(vc_op *o, int in);
/* Input `in`'s gradient is the incoming [rows, out] one summed over its rows
 * (a broadcast bias: VC_GRAD_REDUCE), with the CUDA reduction's scratch. */
void vc_op_grad_reduce_rows(vc_op *o, int in, vc_numel rows, int64_t out);
/* A new output tensor. */
vc_t vc_op_out(vc_op *o, vc_numel n, vc_dtype dt);
/* An output that shares input `in`'s storage (a view, or an in-place result). */
vc_t vc_op_out_view(vc_op *o, int in, vc_numel n, bool contiguous);
/* A tensor allocated in forward and kept only for this op's backward (indices, masks, stats). */
void vc_op_extra(vc_op *o, vc_numel n, vc_dtype dt);
/* An extra that backward hands on as input `in`'s gradient, allocating nothing (a custom
 * autograd.Function that computes its gradients in forward and saves them, as Liger's
 * fused linear cross-entropy does); a parameter's is a gradient from the start, so
 * AccumulateGrad steals it. */
void vc_op_extra_grad(vc_op *o, int in, vc_numel n, vc_dtype dt);
/* Saved for backward: always / only when input `in`'s gradient is needed. */
void vc_op_save(vc_op *o, vc_t t);
/* The op's output is a leaf that requires grad though no input does (a forward hook's
 * output.requires_grad_(True)): the ops that read it record their graph for it. Before
 * vc_op_out. */
void vc_op_leaf_grad(vc_op *o);
void vc_op_save_if(vc_op *o, vc_t t, int in);
/* Transient allocations inside the forward / backward call. */
void vc_op_ftemp(vc_op *o, vc_numel n, vc_dtype dt);
void vc_op_btemp(vc_op *o, vc_numel n, vc_dtype dt);
/* A backward transient that stays allocated until the op's last backward transient is made
 * (the C++ temporaries of one full-expression, freed together at its end). */
void vc_op_btemp_held(vc_op *o, vc_numel n, vc_dtype dt);
/* One tensor of a merged transient: n elements of dt, in alternative `alt`;
 * with div (0: 1) and mul (0: 1), floor((n.ps x batch + n.fx) / div) x mul
 * elements (a kernel's count such as num_indices / 10 + num_indices). */
typedef struct {
    vc_numel n;
    vc_dtype dt;
    int alt;
    int64_t div, mul;
} vc_part;
#define VC_MAX_PARTS 12
/* A transient block for several tensors that live together inside one
 * kernel call, allocated as one request of their summed sizes, each rounded
 * to 512 bytes as the caching allocator rounds it; with alternatives
 * (phases of the call that follow one another, numbered from 0), the
 * largest such sum; cap: at most 2^60 bytes. Its size follows the batch
 * exactly (no vc_batch_dependent needed). At most VC_MAX_PARTS parts. */
void vc_op_ftemp_parts(vc_op *o, const vc_part *p, int np, bool cap);
void vc_op_btemp_parts(vc_op *o, const vc_part *p, int np, bool cap);
/* A forward transient that stays allocated until vc_op_ftemp_free(o, handle) is
 * recorded (or the op's forward ends): a Python local of a multi-statement forward.
 * Transients run in the order recorded. Returns the handle, -1 on failure. */
int vc_op_ftemp_keep(vc_op *o, vc_numel n, vc_dtype dt);
void vc_op_ftemp_free(vc_op *o, int handle);
/* The temporaries weight w's storage format makes in a linear over `rows`
 * rows per sample (bitsandbytes' dequantized copy, forward and backward; an
 * fp8 kernel's quantized input): its row in src/policy/quant.c; none for a dense weight.
 * rows: the rows of the input (per sample, or a fixed count). */
void vc_op_weight_temps(vc_op *o, vc_t w, vc_numel rows);
/* The PEFT LoRA layer class over weight w: lora.Linear (a dense weight),
 * lora.bnb.Linear4bit, lora.bnb.Linear8bitLt (peft/tuners/lora/bnb.py, chosen
 * by dispatch_bnb_4bit / dispatch_bnb_8bit from the base layer's class). */
enum { VC_LORA_LINEAR, VC_LORA_BNB4, VC_LORA_BNB8 };
int vc_weight_lora_style(const vc_build *b, vc_t w);
/* cuDNN's workspaces for the convolution being emitted (src/engine/cudnn.c):
 * how VC_CONV_WS_NONE, none (the interval's low end); _BYTES, fwd/bwd_data/
 * bwd_filter are the bytes of the three calls (--cudnn-table, this batch's);
 * _FACTORS, they are multiples of the larger of the convolution's input and
 * output (the high end's bound). */
enum { VC_CONV_WS_NONE, VC_CONV_WS_BYTES, VC_CONV_WS_FACTORS };
typedef struct {
    int how;
    int64_t fwd, bwd_data, bwd_filter;
} vc_conv_ws;
void vc_conv_workspace(vc_build *b, vc_conv_ws *ws);
/* The storage format (vc_weights) of parameter w, VC_WEIGHTS_DENSE for a non-parameter. */
int vc_weight_format(const vc_build *b, vc_t w);
/* The op is a GEMM (cuBLAS workspace is allocated on first use). */
void vc_op_gemm(vc_op *o);
/* ... through cuBLASLt (addmm with a 1-D bias: Blas.cpp addmm_out_cuda_impl's
 * useLtInterface, gemm_and_bias), which takes a cuBLASLt workspace too. */
void vc_op_gemm_lt(vc_op *o);
void vc_op_end(vc_op *o);

/* ---- the kind descriptor ---- */
enum {
    VC_KIND_NO_INPUT = 1 << 0, /* takes no input (Parameter) */
    VC_KIND_TIEABLE = 1 << 1,  /* accepts `tie: NAME` (its parameter 0 is the tied weight) */
    VC_KIND_INT_INPUT = 1 << 2, /* takes int64 ids (Embedding) */
    VC_KIND_LORA = 1 << 3,      /* can take LoRA adapters (vc_setup.lora): Linear */
    VC_KIND_INDEX_INPUT = 1 << 4 /* its last input (not the first) is an int64 index (Gather) */
};

typedef struct vc_kind {
    const char *name;      /* "Conv2d": the JSON "type" */
    const char *summary;   /* one line for --list-layers */
    int min_inputs, max_inputs;
    unsigned flags;
    size_t cfg_size;       /* bytes of the config struct parse fills */
    int (*parse)(vc_args *a, void *cfg);
    int (*setup)(vc_setup *s, void *cfg);
    void (*emit)(vc_build *b, const void *cfg);
    /* The most autograd ops one copy records in a step (docs/limits.md): the
     * loader adds it up over every layer and `repeat` copy and refuses a model
     * over VC_MAX_PLAN_OPS before it expands the copies. The most measured
     * over the fixtures under training, inference, autocast, mixed precision
     * and each attention kernel (CTest kind_ops checks it against emission);
     * LoRA, quantized weights and parallel layouts add ops the build counts.
     * A setup whose count depends on its config may set vc_setup.ops. */
    int ops;
    /* NULL, or the names of the Linear modules this kind runs inside itself as frozen, gradient-free ops
     * ("q_proj,fc1"): a PEFT target naming one would adapt them there (PEFT matches every module by
     * name), which the kind does not model, so vc_model_set_lora refuses it naming --lora-targets */
    const char *frozen_linears;
} vc_kind;

const vc_kind *vc_kind_find(const char *name);
/* The registered kind name closest to `name` (for "did you mean"), or NULL. */
const char *vc_kind_suggest(const char *name);

#endif /* VC_LAYER_H */
