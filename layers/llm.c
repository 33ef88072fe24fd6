/*
 * llm.c — the layer kinds Hugging Face decoder/encoder LLMs need (issue 12):
 * RotaryEmbedding, RotaryAttention, HFRMSNorm, GatedActivation, Scale,
 * PositionEmbedding, SparseMoE.
 *
 * Each op sequence follows the Hugging Face modeling source, read at
 * huggingface/transformers commit 5dd4a63548857797727ae73eeb6a6e886ea02a3e
 * (modeling_llama.py and siblings) and 00c238bd242b4c6ddfb2c17d4573174ec2daaec8
 * (integrations/sdpa_attention.py); the function each part replicates is
 * named where it is modelled. HF's default attention implementation,
 * "sdpa", is the one modelled (eager is not); --attention picks the SDPA
 * backend as for ScaledDotProductAttention.
 *
 * These kinds are usable in hand-written model files too; src/hf/hf.c writes
 * them (with Linear layers named as HF names its modules, so that per-layer
 * policies such as LoRA targets can select the projections by name).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moe_ep.h"
#include "ops.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static vc_t packed_position_ids(vc_build *b, int64_t T);
static vc_t packed_mask(vc_build *b, int64_t T);

/* ================================================== RotaryEmbedding */

typedef struct {
    int64_t head_dim, rotary_dim;
    bool half; /* GptOssRotaryEmbedding: emb = freqs (no cat): cos/sin of rotary_dim / 2 */
    bool complex; /* Llama4TextRotaryEmbedding: freqs_cis, complex64 [L, rotary_dim / 2] (as float32 [2, L, R / 2]) */
    int64_t bidir; /* ModernBERT's local_attention: the model's masks made first (bidir_masks), 0 none */
    int64_t smask; /* the layers' sdpa sliding window: the sliding mask made here under checkpointing, 0 none */
    bool smask_4x; /* ... transformers 4.46-4.52's float one (sliding_mask_4x) */
    bool f32;      /* Olmo2RotaryEmbedding: `return cos, sin` without .to(x.dtype): float32 whatever the model's dtype */
    bool pmask;    /* PaliGemma's model-wide float mask (prefix_mask_4x), made before the language model runs */
    bool mrope;    /* Glm4vTextRotaryEmbedding: cos / sin of position_ids [3, B, L], [3, B, L, rotary_dim] each */
} rope_cfg;

static vc_t sliding_mask(vc_build *b, int64_t L, int64_t S, bool padded);
static vc_t sliding_mask_4x(vc_build *b, int64_t L, int64_t S);
static vc_t prefix_mask_4x(vc_build *b, int64_t L, int64_t S);
static vc_t prefix_sliding(vc_build *b, vc_t m, int64_t L, int64_t S, vc_t *tril);

static void bidir_masks(vc_build *b, int64_t L, vc_t *g, vc_t *s);

static int rope_parse(vc_args *a, void *p)
{
    rope_cfg *c = p;
    if (vc_arg_int(a, "head_dim", VC_REQUIRED, 2, &c->head_dim) ||
        vc_arg_int(a, "rotary_dim", c->head_dim, 2, &c->rotary_dim) || vc_arg_bool(a, "half", false, &c->half) ||
        vc_arg_bool(a, "complex", false, &c->complex) || vc_arg_int(a, "bidir_masks", 0, 0, &c->bidir) ||
        vc_arg_int(a, "sliding_mask", 0, 0, &c->smask) || vc_arg_bool(a, "sliding_mask_4x", false, &c->smask_4x) ||
        vc_arg_bool(a, "f32", false, &c->f32) || vc_arg_bool(a, "prefix_mask", false, &c->pmask) ||
        vc_arg_bool(a, "mrope", false, &c->mrope))
        return -1;
    if (c->mrope && (c->half || c->complex || c->f32 || c->pmask || c->bidir))
        return vc_arg_fail(a, "mrope", "is Glm4vTextRotaryEmbedding's cos / sin pair: no \"half\", \"complex\", \"f32\", "
                           "\"prefix_mask\" or \"bidir_masks\"");
    if (c->pmask && (c->smask || c->bidir || c->complex))
        return vc_arg_fail(a, "prefix_mask", "is PaliGemma's mask over every layer: no \"sliding_mask\", \"bidir_masks\" or \"complex\"");
    if (c->f32 && (c->half || c->complex)) return vc_arg_fail(a, "f32", "is Olmo2's cos/sin pair, not \"half\" or \"complex\"");
    if (c->half && c->complex) return vc_arg_fail(a, "complex", "is Llama 4's freqs_cis, not gpt-oss's half cos/sin");
    if (c->rotary_dim % 2) return vc_arg_fail(a, "rotary_dim", "must be even, got %lld", (long long)c->rotary_dim);
    if (c->rotary_dim > c->head_dim)
        return vc_arg_fail(a, "rotary_dim", "%lld is more than head_dim %lld", (long long)c->rotary_dim, (long long)c->head_dim);
    return 0;
}

/* Input: the int64 token ids [L]. Output: cos and sin, [2, L, rotary_dim],
 * shared by the batch (position_ids is [1, L]). */
static int rope_setup(vc_setup *s, void *p)
{
    const rope_cfg *c = p;
    if (s->in[0].nd != 1) return vc_fail(s, "inputs", "RotaryEmbedding takes the token ids [L]");
    int64_t n;
    if (vc_mul(s, s->in[0].d[0], c->rotary_dim, &n)) return -1;
    int64_t d[3] = {2, s->in[0].d[0], c->half || c->complex ? c->rotary_dim / 2 : c->rotary_dim};
    s->out = vc_shape_make(3, d);
    /* inv_freq: a non-persistent buffer of rotary_dim / 2 fp32 (_compute_default_rope_parameters) */
    return vc_buffer(s, "inv_freq", c->rotary_dim / 2, VC_DT_F32);
}

/* LlamaRotaryEmbedding.forward (@torch.no_grad, autocast off), called once
 * per forward by LlamaModel.forward with position_ids = cache_position
 * .unsqueeze(0) (arange(L), int64): inv_freq_expanded @ position_ids
 * .float() -> freqs [1, R/2, L] fp32, cat((freqs, freqs)) [1, L, R], cos(),
 * sin(), * attention_scaling (new tensors even for 1.0), .to(x.dtype). The
 * cos/sin pair is returned to every decoder layer and saved by their
 * q * cos / k * cos products: alive until backward is done with them. */
/* Llama4TextRotaryEmbedding.forward (modeling_llama4.py @ 000c33fd; @torch.no_grad, autocast off):
 * position_ids[:, None, :].float() [1, 1, L], inv_freq_expanded @ it -> freqs [1, R/2, L] float32
 * (transposed: a view), torch.polar(torch.ones_like(freqs), freqs) -> freqs_cis complex64 [1, L, R/2],
 * * attention_scaling (a new tensor). The result stays complex64 whatever the model's dtype (8 bytes
 * an element: the bytes of float32 [2, L, R/2]), shared by every decoder layer. */
static void rope_complex_emit(vc_build *b, const rope_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], R = c->rotary_dim;
    vc_t pos = vc__op_new(b, "arange", vc_n_fixed(L), VC_DT_I64);
    vc_t posf = vc__op_new(b, "_to_copy", vc_n_fixed(L), VC_DT_F32);
    vc_t freqs = vc__op_new(b, "matmul", vc_n_fixed(L * R / 2), VC_DT_F32);
    vc_t ones = vc__op_new(b, "ones_like", vc_n_fixed(L * R / 2), VC_DT_F32);
    vc_t cis = vc__op_new(b, "polar", vc_n_fixed(L * R), VC_DT_F32);
    vc_release(b, ones);
    vc_release(b, freqs);
    vc_t out = vc__op_new(b, "mul", vc_n_fixed(L * R), VC_DT_F32); /* freqs_cis * self.attention_scaling */
    vc_release(b, cis);
    vc_release(b, pos);
    vc_release(b, posf);
    if (vc_input_is_model_input(b, 0) && !vc_serving(b)) vc_keep_model_forward(b, out); /* Llama4TextModel's freqs_cis */
    vc_set_output(b, out);
}

static void rope_emit(vc_build *b, const void *p)
{
    const rope_cfg *c = p;
    if (c->complex) {
        rope_complex_emit(b, c);
        return;
    }
    int64_t L = vc_input_shape(b, 0)->d[0], R = c->half ? c->rotary_dim / 2 : c->rotary_dim;
    vc_dtype dt = vc_param_dt(b); /* x = inputs_embeds: the embedding weight's dtype */
    if (c->bidir) { /* ModernBertModel.forward: _update_attention_mask before the embeddings, outside the layers */
        vc_t gm, sm;
        bidir_masks(b, L, &gm, &sm);
    }
    if (c->mrope && vc_opts(b)->packing > 1) { /* Glm4vTextModel: the packed rows' 2-D position_ids expanded to 3 */
        vc_refuse(b, O("packing"), "packed sequences through Glm4v's mrope (3-row position_ids into create_causal_mask) "
                  "are not modelled");
        return;
    }
    if (c->pmask && vc_opts(b)->packing > 1) { /* PaliGemma's forward makes its own 4-D mask (prefix_mask_4x) */
        vc_refuse(b, O("packing"), "packed sequences through PaliGemma's 4-D float mask are not modelled");
        return;
    }
    int64_t past;
    /* PaliGemma's generate(): a StaticCache makes _update_causal_mask's mask max_cache_len wide (not written). Beam
     * search was measured (paligemma_replica.py through measure_llm.py --num-beams): fp32 batch 1 within 0.16%, but
     * bf16 batch 2 prefills +1.2% / +1.7%: the 16-bit math sdpa's upcast value is dense, yet layers/sdpa.c's fold_v
     * copies it again before the second bmm (the harness shows no such clone, greedy decoding steps too); refused */
    if (c->pmask && vc_gen_decoder(b, &past) && vc_opts(b)->cache != VC_CACHE_DYNAMIC) {
        vc_refuse(b, O("cache"), "paligemma's generate() is modelled with a DynamicCache (" OV("cache", "dynamic") ") only");
        return;
    }
    if (c->pmask && vc_gen_decoder(b, &past) && vc_opts(b)->num_beams > 1) {
        vc_refuse(b, O("num_beams"), "paligemma's beam search is not modelled (greedy generate() only)");
        return;
    }
    if (vc_opts(b)->packing > 1 && vc_forward_local(b) < 0) /* --packing: the mask, or flash's position_ids alone */
        vc_set_forward_local(b, vc_opts(b)->attention == VC_ATTN_FLASH ? packed_position_ids(b, L) : packed_mask(b, L));
    /* The sliding-window mask under gradient checkpointing: transformers makes causal_mask_mapping in the model's
     * forward before the decoder layers (masking_utils.py @00c4411c create_sliding_window_causal_mask, called by
     * e.g. MistralModel.forward / Qwen2Model.forward / Gemma2Model.forward), and GradientCheckpointingLayer binds
     * it in each checkpointed layer's partial (modeling_layers.py), kept until that layer's backward; made here
     * (outside every checkpointed region) when the training step's sliding layers take it (sliding_mask_needed:
     * a kv length of sliding_window or more). Without checkpoint regions the first sliding layer makes it, the
     * same tensors at nearly the same point. */
    if (c->smask > 0 && !c->bidir && vc_checkpointed(b) && L >= c->smask && vc_opts(b)->attention != VC_ATTN_FLASH &&
        !vc_serve_profile(b) && vc_opts(b)->cache != VC_CACHE_STATIC && vc_forward_local(b) < 0)
        (void)(c->smask_4x ? sliding_mask_4x(b, L, L) : sliding_mask(b, L, L, false));
    /* PaliGemmaForConditionalGeneration.forward makes its causal_mask before the language model runs (prefix_mask_4x) */
    if (c->pmask && vc_opts(b)->attention != VC_ATTN_FLASH && !vc_serve_profile(b) && vc_opts(b)->cache != VC_CACHE_STATIC &&
        vc_forward_local(b) < 0)
        (void)prefix_mask_4x(b, L, vc_gen_decoder(b, &past) ? past + L : L); /* generate(): the kv length */
    /* Glm4vTextRotaryEmbedding.forward (models/glm4v/modeling_glm4v.py @ 03eac6f6): position_ids [3, B, L] (text
     * alone: arange(L) expanded, a view), position_ids[:, :, None, :].float() [3, B, 1, L], inv_freq expanded to [3, B,
     * R/2, 1] @ it, the cat, cos / sin, * attention_scaling and .to(x.dtype): every tensor 3 B times Llama's [1, L] */
    const vc_numel n1 = c->mrope ? vc_n_sample(3) : vc_n_fixed(1);
    vc_t pos = vc__op_new(b, "arange", vc_n_fixed(L), VC_DT_I64);
    vc_t posf = vc__op_new(b, "_to_copy", vc_n_scale(n1, L), VC_DT_F32);
    vc_t freqs = vc__op_new(b, "matmul", vc_n_scale(n1, L * (c->half ? R : R / 2)), VC_DT_F32);
    vc_t emb = freqs; /* GptOssRotaryEmbedding.forward: emb = freqs */
    if (!c->half) {
        emb = vc__op_new(b, "cat", vc_n_scale(n1, L * R), VC_DT_F32);
        vc_release(b, freqs);
    }
    vc_t cs = vc__op_new(b, "cos+sin", vc_n_scale(n1, 2 * L * R), VC_DT_F32);
    vc_release(b, emb);
    vc_t sc = vc__op_new(b, "mul", vc_n_scale(n1, 2 * L * R), VC_DT_F32); /* cos * attention_scaling, sin * ... */
    vc_release(b, cs);
    vc_t out = sc;
    /* Olmo2RotaryEmbedding.forward (models/olmo2/modeling_olmo2.py @ 0233e509): cos = emb.cos() *
     * self.attention_scaling, sin likewise, `return cos, sin`: no cast, float32 in every dtype */
    if (dt != VC_DT_F32 && !c->f32) {
        out = vc__op_new(b, "_to_copy", vc_n_scale(n1, 2 * L * R), dt);
        vc_release(b, sc);
    }
    vc_release(b, pos);
    vc_release(b, posf);
    /* position_embeddings = self.rotary_emb(hidden_states, position_ids): a local of LlamaModel.forward
     * (models/llama/modeling_llama.py @ 5dd4a63; Gemma4TextModel.forward's dict of them per layer type,
     * modeling_gemma4.py @ 0246b4f3), alive until it returns its hidden states to the head, not only to the
     * last decoder layer's use. A vision tower's (positions from the patch grid, not the token ids: Qwen2-VL's
     * rotary_pos_emb) is a local of the tower's forward, gone at its last use as the tower returns. vLLM's
     * model (--serve's profile and graph capture) has no such tuple: its rotary reads cos_sin_cache per layer. */
    if (vc_input_is_model_input(b, 0) && !vc_serving(b)) vc_keep_model_forward(b, out);
    vc_set_output(b, out);
}

const vc_kind vc_kind_RotaryEmbedding = {
    .ops = 17, /* ModernBERT's: its two masks are made here (bidir_masks) */
    .name = "RotaryEmbedding", .summary = "HF rotary cos/sin [2, L, rotary_dim] from the token ids (one per model)",
    .min_inputs = 1, .max_inputs = 1, .flags = VC_KIND_INT_INPUT, .cfg_size = sizeof(rope_cfg),
    .parse = rope_parse, .setup = rope_setup, .emit = rope_emit,
};

/* ================================================== HF RMSNorm */

typedef struct {
    int64_t hidden;
    double eps;
    int variant; /* 0 llama (weight * x.to(dtype)), 1 gemma (x * (1 + weight.float())).type_as(x),
                  * 2 gpt_oss ((weight * x).to(dtype), the weight float32: _keep_in_fp32_modules),
                  * 3 gemma4 ((x * weight.float()).type_as(x)),
                  * 4 olmo ((weight * x).to(dtype), the weight in the model's dtype: Olmo3RMSNorm, Olmo2RMSNorm),
                  * 5 cohere (CohereLayerNorm: a mean-subtracted LayerNorm without bias, in float32; hf_cohere_norm) */
    bool liger; /* --liger: LigerRMSNorm.forward bound to the module (liger_rmsnorm) */
    bool liger_in_place; /* its in_place (True but for gemma2 / gemma3's _patch_rms_norm_module partials) */
} hfrms_cfg;

static const char *const rms_variants[] = {"llama", "gemma", "gpt_oss", "gemma4", "olmo", "cohere", NULL};

static int hfrms_parse(vc_args *a, void *p)
{
    hfrms_cfg *c = p;
    return vc_arg_int(a, "hidden_size", VC_REQUIRED, 1, &c->hidden) ||
           vc_arg_float(a, "eps", 1e-6, 0.0, 1.0, &c->eps) || vc_arg_enum(a, "variant", rms_variants, 0, &c->variant) ||
           vc_arg_bool(a, "liger", false, &c->liger) || vc_arg_bool(a, "liger_in_place", true, &c->liger_in_place) ||
           (c->liger && c->variant > 1 ? vc_arg_fail(a, "liger", "is LigerRMSNorm with casting_mode \"llama\" (the "
                                                     "llama variant's) or \"gemma\" with offset 1.0 (the gemma variant's)")
                                       : 0) ||
           (!c->liger_in_place && !c->liger ? vc_arg_fail(a, "liger_in_place", "needs \"liger\": true") : 0);
}

static int hfrms_setup(vc_setup *s, void *p)
{
    const hfrms_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->d[x->nd - 1] != c->hidden)
        return vc_fail(s, "hidden_size", "hidden_size is %lld but the input has %lld features (last dimension)",
                       (long long)c->hidden, (long long)x->d[x->nd - 1]);
    s->out = *x;
    if (c->variant == 2) /* GptOssPreTrainedModel._keep_in_fp32_modules: the norms' weights stay float32 */
        return vc_param_shape(s, "weight", 1, (int64_t[1]){c->hidden}, VC_PARAM_F32);
    return vc_param(s, "weight", c->hidden);
}

static vc_dtype promote(vc_dtype a, vc_dtype b2) { return a == VC_DT_F32 || b2 == VC_DT_F32 ? VC_DT_F32 : a; }

/* LlamaRMSNorm.forward / Qwen3RMSNorm (the same code), GemmaRMSNorm.forward:
 *   h = x.to(float32); variance = h.pow(2).mean(-1, keepdim=True)
 *   h = h * torch.rsqrt(variance + eps); return weight * h.to(input_dtype)
 * gemma: out = h * (1.0 + weight.float()); return out.type_as(x).
 * gemma4 (Gemma4RMSNorm, modeling_gemma4.py @ 0246b4f3: _norm(x.float()) = x * torch.pow(x.pow(2).mean(-1,
 * keepdim=True) + eps, -0.5), then normed_output * self.weight.float() (with_scale), .type_as(x)): pow(v, -0.5)
 * saves its input where rsqrt saves its output, both [rows] float32: the same sizes.
 * rows: rows per sample (the mean's size), or fixed rows when fixed. */
/* x.pow(2) of a float32 tensor: pow_backward (grad * 2 * self) saves self and makes a float32 temporary of twice
 * its size */
static vc_t pow2_f32(vc_build *b, vc_t x, vc_numel full)
{
    vc_op *o = vc_op_begin(b, "pow");
    int i = vc_op_in(o, x);
    vc_t sq = vc_op_out(o, full, VC_DT_F32);
    vc_op_save_if(o, x, i);
    vc_op_btemp(o, vc_n_scale(full, 2), VC_DT_F32);
    vc_op_end(o);
    return sq;
}

/* CohereLayerNorm.forward (models/cohere/modeling_cohere.py @ 0233e509531ace915c8241b4c16c8032a583279c; Cohere2LayerNorm
 * in modeling_cohere2.py alike):
 *   h = x.to(float32); mean = h.mean(-1, keepdim=True)
 *   variance = (h - mean).pow(2).mean(-1, keepdim=True)      the first h - mean, saved by pow
 *   h = (h - mean) * torch.rsqrt(variance + eps)             a second h - mean, saved by the mul with rsqrt's output
 *   h = self.weight.to(float32) * h                          the weight's float32 copy and h saved
 *   return h.to(input_dtype)
 * rows: rows per sample (the means' size); w the weight ([hidden], or [heads, head_dim] for the q / k norms). */
static vc_t hf_cohere_norm(vc_build *b, vc_t x, vc_t w, vc_numel rows)
{
    vc_dtype in_dt = vc_dt_of(b, x);
    vc_numel full = vc_numel_of(b, x);
    vc_t h = vc__op_cast(b, x, VC_DT_F32);
    vc_t mean = vc__op_mean(b, h, rows);
    vc_t d1 = vc__op_add(b, h, mean, full, false); /* h - mean: sub saves nothing, as add */
    vc_t sq = pow2_f32(b, d1, full);
    vc_t var = vc__op_mean(b, sq, rows);
    vc_t ve = vc__op_fresh(b, "add", var, rows); /* variance + eps */
    vc_t r = vc__op_unary(b, "rsqrt", ve, VC_SAVE_OUT, false);
    vc_t d2 = vc__op_add(b, h, mean, full, false);
    vc_t hn = vc__op_mul_dt(b, d2, r, full, VC_DT_F32);
    vc_keep_to_here(b, h); /* hidden_states, rebound to the product once it is made */
    vc_t wf = vc__op_cast(b, w, VC_DT_F32);
    vc_t y = vc__op_cast(b, vc__op_mul_dt(b, wf, hn, full, VC_DT_F32), in_dt);
    vc_keep_to_here(b, mean); /* mean and variance: locals until it returns */
    vc_keep_to_here(b, var);
    return y;
}

static vc_t hf_rmsnorm(vc_build *b, vc_t x, vc_t w, vc_numel rows, int variant)
{
    if (variant == 5) return hf_cohere_norm(b, x, w, rows);
    vc_dtype in_dt = vc_dt_of(b, x);
    vc_numel full = vc_numel_of(b, x);
    vc_t h = vc__op_cast(b, x, VC_DT_F32); /* .to(float32): x itself when fp32 */
    vc_t sq = pow2_f32(b, h, full);
    vc_t var = vc__op_mean(b, sq, rows);
    vc_t ve = vc__op_fresh(b, "add", var, rows); /* variance + eps: a new tensor */
    vc_t r = vc__op_unary(b, "rsqrt", ve, VC_SAVE_OUT, false);
    vc_t hn = vc__op_mul_dt(b, h, r, full, VC_DT_F32);
    if (w < 0) return vc__op_cast(b, hn, in_dt);
    if (variant == 3) { /* Gemma4RMSNorm: (normed_output * self.weight.float()).type_as(x) */
        vc_t wf = vc__op_cast(b, w, VC_DT_F32);
        return vc__op_cast(b, vc__op_mul_dt(b, hn, wf, full, VC_DT_F32), in_dt);
    }
    if (variant == 1) {
        vc_t wf = vc__op_cast(b, w, VC_DT_F32);                       /* weight.float() */
        vc_t w1 = vc__op_fresh(b, "add", wf, vc_numel_of(b, wf));      /* 1.0 + weight */
        vc_t y = vc__op_mul_dt(b, hn, w1, full, VC_DT_F32);
        return vc__op_cast(b, y, in_dt); /* type_as(x) */
    }
    /* GptOssRMSNorm and Olmo3RMSNorm (modeling_olmo3.py @ 0233e509): (self.weight * hidden_states).to(input_dtype),
     * the product float32 (hidden_states is) whatever the weight's dtype */
    if (variant == 2 || variant == 4)
        return vc__op_cast(b, vc__op_mul_dt(b, w, hn, full, promote(vc_dt_of(b, w), VC_DT_F32)), in_dt);
    vc_t hc = vc__op_cast(b, hn, in_dt); /* h.to(input_dtype) */
    return vc__op_mul_dt(b, w, hc, full, promote(vc_dt_of(b, w), in_dt));
}

static int64_t rows_of(const vc_shape *x)
{
    int64_t m = 1;
    for (int i = 0; i < x->nd - 1; i++) m *= x->d[i];
    return m;
}

/* LigerRMSNormFunction.apply(x, weight, eps, offset 0, casting_mode "llama", in_place True), what
 * _patch_rms_norm_module binds (Liger-Kernel @ ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c,
 * src/liger_kernel/ops/rms_norm.py). Gemma's (offset 1.0, casting_mode "gemma": the kernels cast X and W to
 * float32 in registers) allocates the same: RSTD is float32 in both modes (l.451-453). in_place False
 * (apply_liger_kernel_to_gemma2 / _gemma3_text's partial, monkey_patch.py l.1023-1025, l.1099-1101):
 * dX = torch.zeros_like(dY) (l.543), a new gradient beside the incoming one:
 *   forward (l.636-660): ensure_contiguous (x is); rms_norm_forward (l.436-510): Y = torch.empty((n_rows, n_cols),
 *     X.dtype) (l.449), RSTD = torch.empty(n_rows, float32) (l.452-453, the llama casting mode), the kernel writes
 *     both; save_for_backward(X, W, RSTD) (l.657)
 *   backward (l.664-683): rms_norm_backward (l.513-609): sm_count = multi_processor_count (l.519-525, 1 off CUDA),
 *     _dW = torch.empty((sm_count, n_cols), float32) (l.529), dX = dY (in_place, l.541-542: the incoming gradient
 *     rewritten), dW = _dW.sum(dim=0).to(W.dtype) (l.605): a float32 [H] and, for a bf16 weight, its cast (the
 *     weight's gradient); _dW and the float32 sum live until it returns. rows: rows per sample */
static vc_t liger_rmsnorm(vc_build *b, vc_t x, vc_t w, vc_numel rows, int64_t H, bool in_place)
{
    vc_dtype wdt = vc_dt_of(b, w);
    vc_op *o = vc_op_begin(b, "LigerRMSNormFunction");
    int ix = vc_op_in(o, x);
    vc_op_grad(o, ix, in_place ? VC_GRAD_PASS : VC_GRAD_NEW);
    vc_op_in(o, w);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_save(o, x);
    vc_op_extra(o, rows, VC_DT_F32);
    vc_part p[2] = {{vc_n_fixed(vc_sm_count(b) * H), VC_DT_F32, 0, 0, 0}, {vc_n_fixed(H), VC_DT_F32, 0, 0, 0}};
    vc_op_btemp_parts(o, p, wdt == VC_DT_F32 ? 1 : 2, false);
    vc_op_end(o);
    return y;
}

static void hfrms_emit(vc_build *b, const void *p)
{
    const hfrms_cfg *c = p;
    if (c->liger) {
        vc_set_output(b, liger_rmsnorm(b, vc_input(b, 0), vc_weight(b, 0), vc_n_sample(rows_of(vc_input_shape(b, 0))),
                                       c->hidden, c->liger_in_place));
        return;
    }
    vc_set_output(b, hf_rmsnorm(b, vc_input(b, 0), vc_weight(b, 0), vc_n_sample(rows_of(vc_input_shape(b, 0))), c->variant));
}

const vc_kind vc_kind_HFRMSNorm = {
    .ops = 12, /* the cohere variant's (hf_cohere_norm): cast, mean, sub, pow, mean, add, rsqrt, sub, mul, cast, mul, cast */
    .name = "HFRMSNorm", .summary = "HF's RMSNorm (llama/gemma variant): fp32 upcast, pow, mean, rsqrt, mul",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(hfrms_cfg),
    .parse = hfrms_parse, .setup = hfrms_setup, .emit = hfrms_emit,
};

/* ================================================== RotaryAttention */

typedef struct {
    int64_t H, KV, D, R;      /* heads, kv heads, head_dim, rotary_dim (0: none) */
    bool fused, causal, qk_norm;
    bool qk_whole;            /* Olmo2Attention: q_norm / k_norm over the whole projection, not per head */
    bool eager;               /* attn_implementation="eager" (Gemma2's default): explicit weights */
    int64_t window;           /* sliding_window, 0 none */
    double dropout, norm_eps;
    double softcap;           /* attn_logit_softcapping (eager), 0 none */
    int qk_variant;           /* q_norm / k_norm: 0 llama, 1 gemma (Gemma3RMSNorm: x * (1 + weight)) */
    int rope_style;           /* 0 rotate_half over [2, L, R]; 1 gpt_oss: _apply_rotary_emb over [2, L, R / 2];
                               * 3 glm4: cos / sin[..., :R / 2].repeat_interleave(2) first (interleaved pairs) */
    bool sinks;               /* GptOssAttention.sinks: a learned logit per head joined to the scores (eager) */
    bool output_gate;         /* Qwen3NextAttention: the query input is [L, 2 x heads x head_dim] (query and gate) */
    bool falcon;              /* FalconAttention: _split_heads of query_key_value, F.sdpa without enable_gqa */
    bool kv_expand;           /* falcon's new_decoder_architecture: k and v broadcast to num_heads before the cache */
    bool block_mask;          /* a [1, L, L] bool mask passed to sdpa (Qwen2.5-VL's vision attention) */
    /* Llama4TextAttention (modeling_llama4.py @ 000c33fd): rope_style 2 (apply_rotary_emb on complex
     * numbers), l2_qk_norm (Llama4TextL2Norm: no weight), temperature_tuning (the NoPE layers' q
     * scaled by attn_scales), chunk (attention_chunk_size of a "chunked_attention" layer, 0 none) */
    bool l2_qk, temp;
    int64_t chunk;
    bool l4_scale; /* Ministral3Attention: q times the llama-4 attention scale after the rotation, in q's dtype */
    int64_t bidir;            /* ModernBERT's local_attention: the model's global and sliding-window masks, 0 none */
    bool local_mask;          /* with bidir: this layer reads the sliding-window one */
    bool v_norm;              /* Gemma4TextAttention: v_norm (Gemma4RMSNorm(head_dim, with_scale=False)) on the values */
    /* Gemma4TextAttention's kv sharing (shared_kv_states): kv_store, the last layer of its type (kv_type: 0 sliding,
     * 1 full) before the shared ones (every model's, sharing or not) stores its keys and values; kv_shared, a
     * shared layer reading them (inputs [q, rope], no k_norm); kv_last, the model's last layer (the dict's
     * entries live until Gemma4TextModel.forward returns: here until that layer's block returns) */
    bool kv_store, kv_shared, kv_last;
    int64_t kv_type;
    /* Gemma3Model.forward with an image input (hf_layers.c): create_causal_mask_mapping's token_type_ids
     * or-mask (image_masks), in every layer of the language model */
    bool image_mask;
    /* PaliGemmaForConditionalGeneration's float mask over every layer (prefix_mask_4x), no is_causal */
    bool prefix_mask;
    bool hybrid; /* PaliGemma 2: Gemma2Model.forward's HybridCache outside training (hybrid_update) */
    bool liger_rope; /* --liger: liger_rotary_pos_emb in apply_rotary_pos_emb's place (liger_rope) */
    bool mask_4x; /* the sliding mask is transformers 4.46-4.52's float one (sliding_mask_4x; release.c
                   * VC_TF_SLIDING_FLOAT_MASK) where no attention_mask is passed (training, --mode infer) */
    bool rope_f32; /* Olmo2's apply_rotary_pos_emb on float32 cos / sin: float32 products, q_embed.to(q_type) */
    bool rope_upcast; /* Cohere's apply_rotary_pos_emb: q.float(), k.float() first, then rope_f32's products */
    bool mrope; /* Glm4v's apply_multimodal_rotary_pos_emb: mrope's sections of [3, B, L, R] cos / sin cat'ed per layer */
    bool qk_heads;    /* CohereAttention: q_norm / k_norm weights of [heads, head_dim] (qk_norm_heads) */
    bool qk_rope;     /* HunYuanDenseV1Attention / HunYuanMoEV1Attention: query_layernorm / key_layernorm per head
                       * after apply_rotary_pos_emb (qk_norm_after_rope) */
    int64_t qk_gather; /* qk_norm_gather: vLLM's Olmo2Attention / OlmoeAttention under --serve --tp, q and k all-gathered
                        * over these ranks before the whole q_norm / k_norm (src/hf/hf_tp.c), 1: none */
} ra_cfg;

static const char *const rope_styles[] = {"llama", "gpt_oss", "llama4", "glm4", NULL};

/* tensor_model_parallel_all_gather(x.contiguous()) over g ranks along the last dim, as src/engine/serve_nccl.c reads
 * DeviceCommunicatorBase.all_gather (base_device_communicator.py @ 00a18bc3): x.contiguous() a copy (in vLLM q and
 * k are split() views of qkv_proj's output), the empty [g x rows, cols] filled by all_gather_into_tensor, and the
 * copy movedim(0, -1)'s reshape makes, [rows, g x cols]; the buffer and the argument die as it returns. The path
 * there: communication_op.py @ 00ff72f2 tensor_model_parallel_all_gather -> parallel_state.py @ 0c175ae9
 * GroupCoordinator.all_gather -> torch.ops.vllm.all_gather on CUDA -> _all_gather_out_place -> the device
 * communicator's all_gather (tests/test_fam_olmo2.c test_serve_tp_gather: the sizes by hand) */
static vc_t qk_all_gather(vc_build *b, vc_t x, int64_t per_sample, int64_t g)
{
    const vc_dtype dt = vc_dt_of(b, x);
    const vc_numel n = vc_n_sample(per_sample), ng = vc_n_sample(per_sample * g);
    vc_t c = vc__op_nograd(b, "contiguous", x, -1, n, dt);
    vc_t buf = vc__op_nograd(b, "all_gather_into_tensor", c, -1, ng, dt);
    vc_t out = vc__op_nograd(b, "reshape", buf, -1, ng, dt);
    vc_keep_to_here(b, c);
    return out;
}

static int ra_parse(vc_args *a, void *p)
{
    ra_cfg *c = p;
    if (vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->H) || vc_arg_int(a, "num_kv_heads", c->H, 1, &c->KV) ||
        vc_arg_int(a, "head_dim", VC_REQUIRED, 1, &c->D) || vc_arg_int(a, "rotary_dim", c->D, 0, &c->R) ||
        vc_arg_bool(a, "fused_qkv", false, &c->fused) || vc_arg_bool(a, "causal", true, &c->causal) ||
        vc_arg_bool(a, "qk_norm", false, &c->qk_norm) || vc_arg_float(a, "qk_norm_eps", 1e-6, 0.0, 1.0, &c->norm_eps) ||
        vc_arg_bool(a, "qk_norm_whole", false, &c->qk_whole) ||
        vc_arg_int(a, "sliding_window", 0, 0, &c->window) || vc_arg_float(a, "dropout", 0.0, 0.0, 1.0, &c->dropout) ||
        vc_arg_bool(a, "eager", false, &c->eager) || vc_arg_float(a, "softcap", 0.0, 0.0, 1e9, &c->softcap) ||
        vc_arg_enum(a, "qk_norm_variant", rms_variants, 0, &c->qk_variant) ||
        vc_arg_enum(a, "rope_style", rope_styles, 0, &c->rope_style) || vc_arg_bool(a, "mrope", false, &c->mrope) || vc_arg_bool(a, "sinks", false, &c->sinks) ||
        vc_arg_bool(a, "output_gate", false, &c->output_gate) ||
        vc_arg_bool(a, "falcon", false, &c->falcon) || vc_arg_bool(a, "kv_expand", false, &c->kv_expand) ||
        vc_arg_bool(a, "block_mask", false, &c->block_mask) || vc_arg_bool(a, "l2_qk_norm", false, &c->l2_qk) ||
        vc_arg_bool(a, "temperature_tuning", false, &c->temp) || vc_arg_int(a, "attention_chunk_size", 0, 0, &c->chunk) ||
        vc_arg_int(a, "bidir_masks", 0, 0, &c->bidir) || vc_arg_bool(a, "local_mask", false, &c->local_mask) ||
        vc_arg_bool(a, "v_norm", false, &c->v_norm) || vc_arg_bool(a, "kv_store", false, &c->kv_store) ||
        vc_arg_bool(a, "kv_shared", false, &c->kv_shared) || vc_arg_bool(a, "kv_last", false, &c->kv_last) ||
        vc_arg_int(a, "kv_type", 0, 0, &c->kv_type) || vc_arg_bool(a, "image_mask", false, &c->image_mask) ||
        vc_arg_bool(a, "sliding_mask_4x", false, &c->mask_4x) || vc_arg_bool(a, "rope_f32", false, &c->rope_f32) ||
        vc_arg_bool(a, "rope_upcast", false, &c->rope_upcast) || vc_arg_bool(a, "qk_norm_heads", false, &c->qk_heads) ||
        vc_arg_bool(a, "liger_rope", false, &c->liger_rope) || vc_arg_bool(a, "qk_norm_after_rope", false, &c->qk_rope) ||
        vc_arg_int(a, "qk_norm_gather", 1, 1, &c->qk_gather) || vc_arg_bool(a, "prefix_mask", false, &c->prefix_mask) ||
        vc_arg_bool(a, "llama4_attn_scale", false, &c->l4_scale) || vc_arg_bool(a, "hybrid_cache", false, &c->hybrid))
        return -1;
    if (c->hybrid && !c->prefix_mask)
        return vc_arg_fail(a, "hybrid_cache", "is PaliGemma 2's HybridCache under its mask (\"prefix_mask\")");
    if (c->prefix_mask && (!c->causal || c->eager || c->sinks || c->bidir || c->block_mask || c->chunk || c->kv_shared ||
                           c->image_mask))
        return vc_arg_fail(a, "prefix_mask", "is PaliGemma's sdpa attention over the model's float mask (\"causal\", no "
                           "\"eager\", \"sinks\", \"bidir_masks\", \"block_mask\", \"attention_chunk_size\", kv sharing "
                           "or \"image_mask\")");
    if (c->qk_gather > 1 && (!c->qk_norm || !c->qk_whole || c->fused || c->kv_shared || c->output_gate))
        return vc_arg_fail(a, "qk_norm_gather", "needs \"qk_norm\" and \"qk_norm_whole\": true, separate q, k, v");
    if (c->qk_rope && (!c->qk_norm || c->qk_whole || c->qk_heads || c->rope_style || c->rope_f32 || c->fused || c->falcon ||
                       c->kv_shared || c->liger_rope || c->output_gate || c->R != c->D))
        return vc_arg_fail(a, "qk_norm_after_rope", "is HunYuan's attention: needs \"qk_norm\": true per head (no "
                           "\"qk_norm_whole\" or \"qk_norm_heads\"), separate q, k, v, rope_style llama over the whole head");
    if (c->liger_rope && (c->rope_style || c->rope_f32 || c->fused || c->falcon || c->kv_shared || c->R != c->D))
        return vc_arg_fail(a, "liger_rope", "is LigerRopeFunction: rope_style llama over the whole head, separate q, k, v");
    if (c->rope_upcast && !c->rope_f32) return vc_arg_fail(a, "rope_upcast", "needs \"rope_f32\": true");
    if (c->mrope && (c->rope_style != 3 || c->rope_f32 || c->R <= 0 || c->liger_rope))
        return vc_arg_fail(a, "mrope", "is Glm4v's apply_multimodal_rotary_pos_emb: rope_style glm4 with a rotary_dim, no "
                           "\"rope_f32\" or \"liger_rope\"");
    if (c->qk_heads && (!c->qk_norm || c->qk_whole))
        return vc_arg_fail(a, "qk_norm_heads", "needs \"qk_norm\": true without \"qk_norm_whole\"");
    if (c->rope_f32 && ((c->rope_style && c->rope_style != 3) || c->falcon || c->kv_shared || c->R != c->D))
        return vc_arg_fail(a, "rope_f32", "is Olmo2Attention's (rope_style llama) or Ernie4_5Attention's (rope_style glm4): "
                           "the rotation of the whole head (rotary_dim = head_dim), separate q, k, v, no kv sharing");
    if (c->image_mask && (!c->causal || c->eager || c->sinks || c->bidir || c->block_mask || c->chunk || c->kv_shared))
        return vc_arg_fail(a, "image_mask", "is Gemma 3's causal sdpa attention with images (\"causal\", no \"eager\", "
                           "\"sinks\", \"bidir_masks\", \"block_mask\", \"attention_chunk_size\" or kv sharing)");
    if ((c->kv_store || c->kv_shared || c->kv_last) && !c->v_norm)
        return vc_arg_fail(a, c->kv_store ? "kv_store" : c->kv_shared ? "kv_shared" : "kv_last",
                           "is Gemma4TextAttention's kv sharing (needs \"v_norm\")");
    if (c->kv_type > 1) return vc_arg_fail(a, "kv_type", "expected 0 (sliding_attention) or 1 (full_attention)");
    if (c->kv_store && c->kv_shared) return vc_arg_fail(a, "kv_shared", "a layer stores or reads the shared keys, not both");
    if (c->v_norm && (c->fused || c->falcon || c->rope_style))
        return vc_arg_fail(a, "v_norm", "is Gemma4TextAttention's: separate q, k, v inputs, llama's rotation");
    if ((c->rope_style == 2 || c->l2_qk || c->temp || c->chunk) && (c->fused || c->qk_norm || c->eager || c->window > 0 ||
                                                                   c->falcon || c->output_gate || c->sinks || c->block_mask))
        return vc_arg_fail(a, c->rope_style == 2 ? "rope_style" : c->l2_qk ? "l2_qk_norm" : c->temp ? "temperature_tuning"
                           : "attention_chunk_size", "is Llama4TextAttention's: separate q, k, v, sdpa, no sliding_window, "
                           "qk_norm, sinks or output gate");
    if (c->l4_scale && (c->temp || c->rope_style || c->fused || c->falcon || c->kv_shared || c->output_gate || c->R != c->D))
        return vc_arg_fail(a, "llama4_attn_scale", "is Ministral3Attention's: MistralAttention's separate q, k, v and "
                           "rotation of the whole head (rope_style llama), no \"temperature_tuning\"");
    if (c->rope_style == 2 && c->R != c->D)
        return vc_arg_fail(a, "rope_style", "llama4 rotates the whole head: rotary_dim must equal head_dim (%lld)", (long long)c->D);
    if (c->bidir && (c->causal || c->eager || c->block_mask || c->window > 0 || c->fused == false))
        return vc_arg_fail(a, "bidir_masks", "is ModernBERT's non-causal sdpa attention on a fused Wqkv (\"causal\": false, "
                           "\"fused_qkv\": true, no \"eager\", \"block_mask\" or \"sliding_window\")");
    if (c->local_mask && !c->bidir) return vc_arg_fail(a, "local_mask", "needs \"bidir_masks\"");
    if (c->falcon && (!c->fused || c->qk_norm || c->eager || c->window > 0 || c->rope_style))
        return vc_arg_fail(a, "falcon", "FalconAttention reads one fused query_key_value projection, without q/k norms, "
                           "eager attention, sliding windows or gpt_oss's rotation");
    if (c->kv_expand && !c->falcon) return vc_arg_fail(a, "kv_expand", "needs \"falcon\": true");
    if (c->falcon && !c->kv_expand && c->KV != 1 && c->KV != c->H)
        return vc_arg_fail(a, "num_kv_heads", "FalconAttention without kv_expand has one kv head (multi_query) or num_heads");
    if (c->block_mask && (c->causal || c->eager))
        return vc_arg_fail(a, "block_mask", "is a non-causal sdpa attention's mask (\"causal\": false, no \"eager\")");
    if (c->sinks && !c->eager)
        return vc_arg_fail(a, "sinks", "needs \"eager\": true (GptOssAttention's sinks join the scores in eager_attention_forward)");
    if (c->rope_style == 1 && c->R != c->D)
        return vc_arg_fail(a, "rope_style", "gpt_oss rotates the whole head: rotary_dim must equal head_dim (%lld)", (long long)c->D);
    if (c->output_gate && c->fused) return vc_arg_fail(a, "output_gate", "needs separate q, k, v inputs");
    if (c->softcap > 0 && !c->eager)
        return vc_arg_fail(a, "softcap", "needs \"eager\": true (HF applies attn_logit_softcapping in eager attention only)");
    if (c->H % c->KV)
        return vc_arg_fail(a, "num_kv_heads", "num_heads (%lld) must be divisible by num_kv_heads (%lld)", (long long)c->H,
                           (long long)c->KV);
    if (c->R % 2 || c->R > c->D)
        return vc_arg_fail(a, "rotary_dim", "must be even and at most head_dim (%lld), got %lld", (long long)c->D, (long long)c->R);
    return 0;
}

static int ra_in_check(vc_setup *s, int i, const char *what, int64_t L, int64_t feat)
{
    const vc_shape *x = &s->in[i];
    if (x->nd != 2 || x->d[0] != L || x->d[1] != feat)
        return vc_fail(s, "inputs", "the %s must be [%lld, %lld] per sample", what, (long long)L, (long long)feat);
    return 0;
}

static int ra_setup(vc_setup *s, void *p)
{
    const ra_cfg *c = p;
    int nqkv = c->fused || c->kv_shared ? 1 : 3, want = nqkv + (c->R > 0 ? 1 : 0);
    if (c->kv_shared && s->nin != want)
        return vc_fail(s, "inputs", "a kv-shared RotaryAttention takes [q%s]: %d inputs, got %d", c->R > 0 ? ", rope" : "",
                       want, s->nin);
    if (s->nin != want)
        return vc_fail(s, "inputs", "RotaryAttention takes %s%s: %d inputs, got %d", c->fused ? "[qkv" : "[q, k, v",
                       c->R > 0 ? ", rope]" : "]", want, s->nin);
    if (s->in[0].nd != 2) return vc_fail(s, "inputs", "the query must be [L, features] per sample");
    int64_t L = s->in[0].d[0], hd, kd, t;
    if (vc_mul(s, c->H, c->D, &hd) || vc_mul(s, c->KV, c->D, &kd) || vc_mul(s, c->H, L, &t) || vc_mul(s, t, L, &t))
        return -1;
    if (t > (INT64_C(1) << 56)) return vc_fail(s, NULL, "an attention matrix has more than 2^56 elements per sample");
    if (c->fused) {
        if (ra_in_check(s, 0, "fused qkv projection", L, hd + 2 * kd)) return -1;
    } else if (c->kv_shared) {
        if (ra_in_check(s, 0, "query", L, hd)) return -1;
    } else if (ra_in_check(s, 0, c->output_gate ? "query and gate" : "query", L, c->output_gate ? 2 * hd : hd) || ra_in_check(s, 1, "key", L, kd) || ra_in_check(s, 2, "value", L, kd)) {
        return -1;
    }
    if (c->R > 0) {
        const vc_shape *r = &s->in[nqkv];
        int64_t rw = c->rope_style == 1 || c->rope_style == 2 ? c->R / 2 : c->R; /* gpt_oss: a "half" RotaryEmbedding's; llama4: a "complex" one's */
        if (r->nd != 3 || r->d[0] != 2 || r->d[1] != L || r->d[2] != rw)
            return vc_fail(s, "inputs", "the rope input must be a RotaryEmbedding's [2, %lld, %lld]", (long long)L, (long long)rw);
    }
    int64_t d[2] = {L, hd};
    s->out = vc_shape_make(2, d);
    if (c->qk_whole && !c->qk_norm) return vc_fail(s, "qk_norm_whole", "needs \"qk_norm\": true");
    /* qk_norm_gather: vLLM's q_norm / k_norm of total_num_heads / total_num_kv_heads x head_dim on every rank */
    if (c->qk_gather > 1 && (vc_mul(s, hd, c->qk_gather, &hd) || vc_mul(s, kd, c->qk_gather, &kd))) return -1;
    /* CohereAttention's q_norm / k_norm: CohereLayerNorm(hidden_size=(num_heads, head_dim)), a weight per head */
    /* HunYuanMoEV1Attention.__init__: query_layernorm / key_layernorm = RMSNorm(head_dim) */
    if (c->qk_norm && vc_param(s, c->qk_rope ? "query_layernorm.weight" : "q_norm.weight", c->qk_whole || c->qk_heads ? hd : c->D))
        return -1;
    if (c->qk_norm && !c->kv_shared &&
        vc_param(s, c->qk_rope ? "key_layernorm.weight" : "k_norm.weight", c->qk_whole || c->qk_heads ? kd : c->D))
        return -1;
    if (c->sinks && vc_param(s, "sinks", c->H)) return -1; /* GptOssAttention: nn.Parameter(torch.empty(num_attention_heads)) */
    return 0;
}

/* _apply_rotary_emb (modular_gpt_oss.py) on x [B, heads, L, D] with cos / sin
 * [L, D / 2]: first_half, second_half = torch.chunk(x, 2, dim=-1);
 * first_ = first_half * cos - second_half * sin; second_ = second_half * cos +
 * first_half * sin; cat((first_, second_), dim=-1). The products save cos /
 * sin only (x needs grad, they do not); each half-sized product and
 * difference is a temporary. */
static vc_t rope_apply_half(vc_build *b, vc_t x, vc_t cs, int64_t heads, int64_t L, int64_t D)
{
    vc_numel half = vc_n_sample(heads * L * D / 2);
    vc_dtype dt = vc_dt_of(b, x);
    vc_t x1 = vc__op_select(b, x, half, false), x2 = vc__op_select(b, x, half, false);
    vc_t a = vc__op_add(b, vc__op_mul_dt(b, x1, cs, half, dt), vc__op_mul_dt(b, x2, cs, half, dt), half, false);
    vc_t c = vc__op_add(b, vc__op_mul_dt(b, x2, cs, half, dt), vc__op_mul_dt(b, x1, cs, half, dt), half, false);
    vc_op *o = vc_op_begin(b, "cat");
    vc_op_grad(o, vc_op_in(o, a), VC_GRAD_PASS);
    vc_op_grad(o, vc_op_in(o, c), VC_GRAD_PASS);
    vc_t y = vc_op_out(o, vc_n_sample(heads * L * D), dt);
    vc_op_end(o);
    return y;
}

/* apply_rotary_pos_emb (modeling_llama.py) on x [B, heads, L, D] (a view):
 *   q_embed = (q * cos) + (rotate_half(q) * sin)
 *   rotate_half: cat((-x[..., D/2:], x[..., :D/2]), dim=-1)
 * The products save cos / sin (x needs grad; cos and sin do not), so no
 * x-sized tensor is kept; -x2, the cat and the products are temporaries.
 * Partial rotary (modeling_gpt_neox.py / modeling_phi3.py
 * apply_rotary_pos_emb): q_rot = q[..., :R], q_pass = q[..., R:], the above
 * on q_rot, then cat((q_embed, q_pass), dim=-1). */
/* upcast: Ernie4_5's apply_rotary_pos_emb (models/ernie4_5/modeling_ernie4_5.py @
 * 0233e509531ace915c8241b4c16c8032a583279c; ernie4_5_moe's the same): (q.float() * cos) + (rotate_half(q).float() * sin),
 * q.float() and rotate_half(q).float() explicit float32 copies (no-ops in float32), each a temporary its product
 * consumes (the product saves cos / sin only). */
static vc_t rope_apply_dt(vc_build *b, vc_t x, vc_t cs, int64_t heads, int64_t L, int64_t D, int64_t R, vc_dtype pdt,
                          bool upcast)
{
    vc_numel rot = vc_n_sample(heads * L * R), half = vc_n_sample(heads * L * R / 2);
    vc_t xr = R < D ? vc__op_select(b, x, rot, false) : x;
    vc_t a = vc__op_mul_dt(b, upcast ? vc__op_cast(b, xr, pdt) : xr, cs, rot, pdt);
    vc_t x2 = vc__op_select(b, xr, half, false);
    vc_t x1 = vc__op_select(b, xr, half, false);
    vc_t nx2 = vc__op_unary(b, "neg", x2, VC_SAVE_NONE, false);
    vc_op *o = vc_op_begin(b, "cat");
    vc_op_grad(o, vc_op_in(o, nx2), VC_GRAD_PASS);
    vc_op_grad(o, vc_op_in(o, x1), VC_GRAD_PASS);
    vc_t rh = vc_op_out(o, rot, vc_dt_of(b, x));
    vc_op_end(o);
    vc_t c = vc__op_mul_dt(b, upcast ? vc__op_cast(b, rh, pdt) : rh, cs, rot, pdt);
    vc_t e = vc__op_add(b, a, c, rot, false);
    if (R == D) return e;
    vc_t pass = vc__op_select(b, x, vc_n_sample(heads * L * (D - R)), false);
    o = vc_op_begin(b, "cat");
    vc_op_grad(o, vc_op_in(o, e), VC_GRAD_PASS);
    vc_op_grad(o, vc_op_in(o, pass), VC_GRAD_PASS);
    vc_t y = vc_op_out(o, vc_n_sample(heads * L * D), vc_dt_of(b, x));
    vc_op_end(o);
    return y;
}

/* LigerRopeFunction (Liger-Kernel @ ead96b61, src/liger_kernel/ops/rope.py) on x [B, heads, L, D] (a view of
 * the projection's [B, L, heads, D] storage): forward, rope_forward: x.transpose(1, 2).contiguous() (the storage
 * itself: no copy), the kernel rotates it in place, x.transpose(1, 2) returned (a view); save_for_backward(cos,
 * sin). backward, rope_backward: dq.transpose(1, 2).contiguous(), rotated in place and returned: a copy when the
 * gradient arrives [B, heads, L, D]-contiguous, as the math backend's and eager attention's matmul gradients do
 * (copy); flash and efficient attention's backward allocate dq like q ([B, L, heads, D] storage: no copy). Modelled
 * as one Function per tensor (the node's two gradients arrive together), each reading the other's input. */
static vc_t liger_rope(vc_build *b, vc_t x, vc_t other, vc_t cs, bool copy)
{
    vc_op *o = vc_op_begin(b, "LigerRopeFunction");
    int ix = vc_op_in(o, x);
    vc_op_grad(o, ix, copy ? VC_GRAD_NEW : VC_GRAD_PASS);
    /* the Function's other tensor (k for q, q for k): both outputs require grad when either input does (a
     * frozen k_proj's keys over inputs that need none, LoRA's first layer, come out requiring grad) */
    vc_op_grad(o, vc_op_in(o, other), VC_GRAD_NONE);
    vc_op_in_nodiff(o, cs);
    vc_t y = vc_op_out_view(o, ix, vc_numel_of(b, x), false);
    vc_op_save(o, cs);
    vc_op_end(o);
    return y;
}

/* The products in x's dtype (cos / sin cast to it by the rotary embedding). */
static vc_t rope_apply(vc_build *b, vc_t x, vc_t cs, int64_t heads, int64_t L, int64_t D, int64_t R)
{
    return rope_apply_dt(b, x, cs, heads, L, D, R, vc_dt_of(b, x), false);
}

vc_t vc__hf_rmsnorm(vc_build *b, vc_t x, vc_t w, vc_numel rows, int variant) { return hf_rmsnorm(b, x, w, rows, variant); }
vc_t vc__rope_apply(vc_build *b, vc_t x, vc_t cs, int64_t heads, int64_t L, int64_t D, int64_t R)
{
    return rope_apply(b, x, cs, heads, L, D, R);
}

vc_t vc__rope_apply_half(vc_build *b, vc_t x, vc_t cs, int64_t heads, int64_t L, int64_t D)
{
    return rope_apply_half(b, x, cs, heads, L, D);
}

/* A nodiff op of one input (masks). */
static vc_t mask_op(vc_build *b, const char *name, vc_t x, vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, name);
    if (x >= 0) vc_op_in_nodiff(o, x);
    vc_t y = vc_op_out(o, n, dt);
    vc_op_end(o);
    return y;
}

/* The same with two inputs (where, masked_fill, le, eq, and): a new tensor, nothing saved. */
static vc_t mask_op2(vc_build *b, const char *name, vc_t x, vc_t y, vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_in_nodiff(o, x);
    vc_op_in_nodiff(o, y);
    vc_t r = vc_op_out(o, n, dt);
    vc_op_end(o);
    return r;
}

/* The model's 4-D causal mask, made once per forward (the model keeps it
 * until it returns): _prepare_4d_causal_attention_mask_with_cache_position,
 * full((L, S), min) -> triu(1) -> *= arange(S) > cache_position -> expand
 * [B, 1, L, S] (a view). */
static vc_t causal_mask(vc_build *b, int64_t L, int64_t S)
{
    vc_t m = vc_forward_local(b);
    if (m >= 0) return m;
    vc_dtype dt = vc_act_dt(b);
    vc_t full = mask_op(b, "full", -1, vc_n_fixed(L * S), dt);
    vc_t tri = mask_op(b, "triu", full, vc_n_fixed(L * S), dt);
    vc_t ar = mask_op(b, "arange", -1, vc_n_fixed(S), VC_DT_I64);
    vc_t gt = mask_op(b, "gt", ar, vc_n_fixed(L * S), VC_DT_BOOL);
    vc_op *o = vc_op_begin(b, "mul_"); /* in place */
    int i = vc_op_in_nodiff(o, tri);
    vc_op_in_nodiff(o, gt);
    m = vc_op_out_view(o, i, vc_n_fixed(L * S), true);
    vc_op_end(o);
    vc_set_forward_local(b, m);
    return m;
}

/* eager_attention_forward (modeling_gemma2.py / modeling_llama.py) on q [B,
 * H, L, D] (a view of [B, L, H, D] storage) and k, v (kv heads; kv_blhd:
 * views of [B, S, KV, D] storage, else contiguous):
 *   repeat_kv (expand + reshape: a copy when KV < H), matmul(q, k^T) * scaling,
 *   softcapping (/ cap, tanh, * cap), + the mask, softmax(dtype=float32).to(q.dtype),
 *   dropout, matmul(weights, v). A sliding layer's mask first
 *   (Gemma2DecoderLayer.forward): where(tril(ones_like(mask), -window), min, mask).
 * matmul folds [B, H, ., .] into 3-D: a view only for contiguous [B, H] leading
 * dims, else a copy (saved in its place). Returns [B, H, L, D], contiguous. */
/* transformers 5's masks for eager attention (masking_utils.py: GptOssModel.forward makes
 * create_causal_mask and create_sliding_window_causal_mask once per forward, each
 * sdpa_mask's boolean [B, 1, L, S] turned into torch.where(mask, 0.0, finfo.min) of the
 * model's dtype by eager_mask): both, held until the model returns, as one forward-local
 * tensor of 2 x [B, 1, L, S] (the first layer's S: a decoding step's sliding layers see
 * fewer keys, a difference of a few bytes per row). */
static vc_t v5_masks(vc_build *b, int64_t L, int64_t S)
{
    vc_t m = vc_forward_local(b);
    if (m >= 0) return m;
    vc_t ar = mask_op(b, "arange", -1, vc_n_fixed(S), VC_DT_I64);
    vc_t bl = mask_op(b, "sdpa_mask", ar, vc_n_sample(L * S), VC_DT_BOOL);
    vc_t m1 = mask_op(b, "where", bl, vc_n_sample(L * S), vc_act_dt(b));
    vc_t bl2 = mask_op(b, "sdpa_mask", ar, vc_n_sample(L * S), VC_DT_BOOL);
    m = mask_op2(b, "where", bl2, m1, vc_n_sample(2 * L * S), vc_act_dt(b)); /* the second mask, the pair as one tensor */
    vc_set_forward_local(b, m);
    return m;
}

/* ModernBertModel._update_attention_mask (models/modernbert/modeling_modernbert.py @ 000c33fd),
 * run once per forward on the [B, L] ones attention_mask, its results held until the model returns
 * (the forward's attention_mask and sliding_window_mask): global_attention_mask =
 * _prepare_4d_attention_mask(mask, self.dtype) (modeling_attn_mask_utils.py _expand_mask:
 * mask[:, None, None, :].expand(B, 1, L, L).to(dtype), inverted = 1.0 - expanded,
 * inverted.masked_fill(inverted.to(torch.bool), finfo.min): [B, 1, L, L] of the model's dtype, the
 * two locals alive until it returns); rows = arange(L)[None], distance = abs(rows - rows.T) (int64
 * [L, L], the difference a temporary), window_mask = distance <= local_attention // 2 (bool [L, L]),
 * sliding_window_mask = global.masked_fill(window_mask.logical_not(), finfo.min) ([B, 1, L, L]);
 * rows, distance and window_mask live until the method returns. *g and *s: the two masks. */
static void bidir_masks(vc_build *b, int64_t L, vc_t *g, vc_t *s)
{
    *g = vc_forward_local(b);
    *s = vc_forward_local2(b);
    if (*g >= 0 && *s >= 0) return;
    const vc_dtype dt = vc_param_dt(b); /* self.dtype: the parameters' */
    const vc_numel bll = vc_n_sample(L * L), ll = vc_n_fixed(L * L);
    vc_t e = mask_op(b, "_to_copy", -1, bll, dt);
    vc_hold(b, e);
    vc_t inv = mask_op(b, "rsub", e, bll, dt);
    vc_hold(b, inv);
    vc_t tb = mask_op(b, "_to_copy", inv, bll, VC_DT_BOOL);
    *g = mask_op2(b, "masked_fill", inv, tb, bll, dt);
    vc_release(b, e);
    vc_release(b, inv);
    vc_t rows = mask_op(b, "arange", -1, vc_n_fixed(L), VC_DT_I64);
    vc_hold(b, rows);
    vc_t dist = mask_op(b, "abs", mask_op(b, "sub", rows, ll, VC_DT_I64), ll, VC_DT_I64);
    vc_hold(b, dist);
    vc_t win = mask_op(b, "le", dist, ll, VC_DT_BOOL);
    vc_hold(b, win);
    vc_t notw = mask_op(b, "logical_not", win, ll, VC_DT_BOOL);
    *s = mask_op2(b, "masked_fill", *g, notw, bll, dt);
    vc_release(b, rows);
    vc_release(b, dist);
    vc_release(b, win);
    vc_set_forward_local(b, *g);
    vc_set_forward_local2(b, *s);
}

static vc_t eager_attention(vc_build *b, const ra_cfg *c, vc_t q, vc_t k, vc_t v, int64_t L, int64_t S, bool kv_blhd)
{
    const int64_t H = c->H, KV = c->KV, D = c->D;
    vc_dtype dt = vc_dt_of(b, q);
    vc_t mask = c->causal && c->sinks ? v5_masks(b, L, S) : c->causal ? causal_mask(b, L, S) : -1;
    if (mask >= 0 && c->window > 0 && !c->sinks) {
        vc_t ones = mask_op(b, "ones_like", mask, vc_n_sample(L * S), VC_DT_BOOL);
        vc_t tril = mask_op(b, "tril", ones, vc_n_sample(L * S), VC_DT_BOOL);
        mask = mask_op2(b, "where", tril, mask, vc_n_sample(L * S), vc_act_dt(b));
    }
    vc_t kr = k, vr = v;
    if (KV != H) {
        kr = vc__op_fresh(b, "repeat_kv", k, vc_n_sample(H * S * D));
        vr = vc__op_fresh(b, "repeat_kv", v, vc_n_sample(H * S * D));
    } else if (kv_blhd && S > 1) {
        kr = vc__op_clone(b, k);
        vr = vc__op_clone(b, v);
    }
    vc_t qm = L > 1 ? vc__op_clone(b, q) : q;
    vc_t w = vc__op_bmm_raw(b, qm, kr, vc_n_sample(H * L * S));
    w = vc__op_fresh(b, "mul", w, vc_numel_of(b, w)); /* * scaling */
    if (c->softcap > 0) {
        w = vc__op_fresh(b, "div", w, vc_numel_of(b, w));
        w = vc__op_unary(b, "tanh", w, VC_SAVE_OUT, false);
        w = vc__op_fresh(b, "mul", w, vc_numel_of(b, w));
    }
    if (mask >= 0) w = vc__op_add(b, w, mask, vc_numel_of(b, w), false);
    if (c->sinks) {
        /* eager_attention_forward (modular_gpt_oss.py): sinks.reshape(1, -1, 1, 1).expand(B, -1, L, -1)
         * (a view of the parameter), combined = cat([weights, sinks], -1) [B, H, L, S + 1];
         * combined - combined.max(-1, keepdim=True).values (max keeps its int64 indices for
         * backward); softmax(dim=-1, dtype=combined.dtype) (no float32 upcast); probs[..., :-1]
         * (a view: the sink column dropped, the [B, H, L, S + 1] storage stays) */
        vc_t sk = vc__op_view(b, vc_weight(b, c->qk_norm ? 2 : 0), vc_n_fixed(H), false);
        vc_op *o = vc_op_begin(b, "cat");
        vc_op_grad(o, vc_op_in(o, w), VC_GRAD_PASS);
        vc_op_grad(o, vc_op_in(o, sk), VC_GRAD_REDUCE);
        vc_t comb = vc_op_out(o, vc_n_sample(H * L * (S + 1)), dt);
        vc_op_end(o);
        o = vc_op_begin(b, "max"); /* backward: zeros of comb's size, scattered at the indices */
        vc_op_in(o, comb);
        vc_t mx = vc_op_out(o, vc_n_sample(H * L), dt);
        vc_op_extra(o, vc_n_sample(H * L), VC_DT_I64);
        vc_op_end(o);
        comb = vc__op_add(b, comb, mx, vc_numel_of(b, comb), false); /* combined - max: a new tensor */
        w = vc__op_softmax(b, comb, false);
        w = vc__op_select(b, w, vc_n_sample(H * L * S), false);
        w = vc__op_dropout(b, w, vc_training(b) ? c->dropout : 0.0);
        return vc__op_bmm_raw(b, w, vr, vc_n_sample(H * L * D));
    }
    if (dt != VC_DT_F32) w = vc__op_cast(b, w, VC_DT_F32);
    w = vc__op_softmax(b, w, false);
    if (dt != VC_DT_F32) w = vc__op_cast(b, w, dt);
    w = vc__op_dropout(b, w, vc_training(b) ? c->dropout : 0.0);
    return vc__op_bmm_raw(b, w, vr, vc_n_sample(H * L * D));
}

/* FalconAttention.forward with rotary embeddings (models/falcon/modeling_falcon.py @00dcc6dd, sdpa
 * and eager share the class; the sdpa branch is the default) on fused_qkv [B, L, (H + 2 KV) D]:
 *  - _split_heads: multi-head (KV == H): view [B, L, H, 3, D], q/k/v fused_qkv[..., i, :] (strided
 *    views); multi_query (KV == 1): view [B, L, H + 2, D], q = [..., :-2, :] (a view), k and v
 *    [..., [-2], :] / [..., [-1], :] (advanced indexing: new [B, L, 1, D] tensors);
 *    new_decoder_architecture (kv_expand): view [B, L, KV, H / KV + 2, D], q = [:, :, :, :-2],
 *    k / v = [:, :, :, [-2]] (new tensors), broadcast_to(q.shape), then flatten(2, 3) of each:
 *    copies of [B, L, H, D] (the strides do not merge), k and v at num_heads heads;
 *  - x.transpose(1, 2).reshape(B, heads, L, D): the reshape keeps the transpose's own shape, which
 *    at::reshape always views (computeStride succeeds for unchanged sizes): no copy, the
 *    [B, L, heads, D] stride order stays, and with it that of apply_rotary_pos_emb's products
 *    (TensorIterator), so matmul copies q and k when it folds them to 3-D, as it does v;
 *  - apply_rotary_pos_emb (Llama's), layer_past.update (the cache holds what it is given: H heads
 *    with kv_expand), F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p=0.0, is_causal)
 *    without enable_gqa (the rotary branch applies no attention dropout);
 *  - attn_output.transpose(1, 2).reshape(B, L, H * D), then dense (the caller's Linear).
 * Lifetimes: fused_qkv (this layer's input) is a local until the forward returns; so are
 * query_layer / key_layer (apply_rotary_pos_emb's results; their arguments, freed when it
 * returns) and value_layer (until update rebinds it). The argument, attention_layernorm_out, is
 * FalconDecoderLayer.forward's local until the decoder layer returns (its MLP and residuals
 * included), whatever the projection saves. */
static void falcon_emit(vc_build *b, const ra_cfg *c)
{
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->H, D = c->D;
    const int64_t KV = c->kv_expand ? H : c->KV; /* the heads k and v carry from _split_heads on */
    vc_t qkv = vc_input(b, 0), cs = c->R > 0 ? vc_input(b, 1) : -1;
    vc_t q = vc__op_select(b, qkv, vc_n_sample(L * H * D), false), k, v;
    if (c->kv_expand) {
        q = vc__op_clone(b, q); /* flatten(2, 3) */
        k = vc__op_fresh(b, "index", qkv, vc_n_sample(L * c->KV * D));
        v = vc__op_fresh(b, "index", qkv, vc_n_sample(L * c->KV * D));
        k = vc__op_fresh(b, "flatten", k, vc_n_sample(L * H * D)); /* broadcast_to + flatten(2, 3) */
        v = vc__op_fresh(b, "flatten", v, vc_n_sample(L * H * D));
    } else if (c->KV == H) {
        k = vc__op_select(b, qkv, vc_n_sample(L * H * D), false);
        v = vc__op_select(b, qkv, vc_n_sample(L * H * D), false);
    } else {
        k = vc__op_fresh(b, "index", qkv, vc_n_sample(L * D));
        v = vc__op_fresh(b, "index", qkv, vc_n_sample(L * D));
    }
    /* transpose(1, 2).reshape(B, heads, L, D): views */
    q = vc__op_view(b, q, vc_numel_of(b, q), false);
    k = vc__op_view(b, k, vc_numel_of(b, k), KV == 1);
    v = vc__op_view(b, v, vc_numel_of(b, v), KV == 1);
    if (c->R > 0) {
        vc_t q0 = q, k0 = k; /* apply_rotary_pos_emb's arguments, until it returns */
        q = rope_apply(b, q, cs, H, L, D, c->R);
        k = rope_apply(b, k, cs, KV, L, D, c->R);
        vc_release(b, q0);
        vc_release(b, k0);
    }
    const vc_t qs = q, ks = k, vs = v;
    vc_sdpa_args a = {H, KV, L, L, D, true, true, true, c->causal, 0.0, 0, true};
    /* vLLM's FalconAttention (vllm/model_executor/models/falcon.py) pages num_kv_heads (kv_expand:
     * the projection's c->KV) of K and V per token, not the broadcast heads transformers caches */
    bool cached = c->kv_expand ? vc_kv_update_paged(b, 2 * c->KV * D, &k, &v, &a.S) : vc_kv_update(b, 0, &k, &v, &a.S);
    if (cached) {
        a.k_blhd = a.v_blhd = false; /* the cache's contiguous [B, heads, S, D] states */
        a.causal = c->causal && L > 1; /* is_causal: query_length > 1, no mask */
    }
    bool blhd = false;
    vc_t o = vc__op_sdpa_gqa(b, q, k, v, &a, &blhd);
    o = vc__op_view(b, o, vc_numel_of(b, o), blhd); /* transpose(1, 2).reshape: a copy unless [B, L, H, D] storage */
    o = vc__op_contiguous(b, o);
    vc_set_output(b, vc__op_view(b, o, vc_numel_of(b, o), true));
    vc_keep_to_here(b, qs); /* the forward's locals, until it returns */
    if (!cached) {
        vc_keep_to_here(b, ks);
        vc_keep_to_here(b, vs);
    }
    vc_keep_through_block(b, vc_input_arg(b, 0));
    vc_kv_end(b);
}

/* --packing (vc_options.packing: n sequences in the one row of T tokens): the collator's
 * position_ids [1, T] int64 (TRL DataCollatorForLanguageModeling with padding_free, trl @f2cd5771
 * sft_trainer.py torch_call), resident like input_ids; made by the RotaryEmbedding (a model
 * without one: its first attention layer). */
static vc_t packed_position_ids(vc_build *b, int64_t T)
{
    vc_t pid = vc__op_new(b, "position_ids", vc_n_fixed(T), VC_DT_I64);
    vc_persist(b, pid);
    return pid;
}

/* The block-causal mask transformers builds for sdpa when position_ids say the row is packed
 * (huggingface/transformers @00c4411cbe15d4c56d54d3b56d4d171e9c289dac, masking_utils.py), made
 * once per forward and kept until it returns (LlamaModel.forward's causal_mask):
 *  _preprocess_mask_arguments -> find_packed_sequence_indices(position_ids): position_ids[:, :1] - 1,
 *    torch.diff(prepend=...) (at::diff: cat [1, T + 1], then the difference [1, T]),
 *    (position_diff != 1).cumsum(-1) -> packed_sequence_mask int64 [1, T], [:, -1] == 0 and all();
 *  create_causal_mask: and_masks(causal_mask_function, packed_sequence_mask_function), and
 *    allow_is_causal_skip = False; sdpa_mask (use_vmap False): arange(1) twice, arange(T) + 0 for
 *    q and kv (int64 [T], locals until it returns), then and_mask: result = new_ones(()) (0-d bool);
 *    result = result & (kv_idx <= q_idx) ([1, 1, T, T] bool, then the & a new one);
 *    result = result & (psm[b, q_idx] == psm[b, kv_idx]) (two int64 index results [T], their ==
 *    [1, 1, T, T] and the & a new one: three T x T bools alive at once); expand (a view); torch >=
 *    2.5 skips allow_torch_fix. The bool [1, 1, T, T] is the mask every layer passes to sdpa. */
static vc_t packed_mask(vc_build *b, int64_t T)
{
    vc_t m = vc_forward_local(b);
    if (m >= 0) return m;
    const vc_numel t = vc_n_fixed(T), tt = vc_n_fixed(T * T), one = vc_n_fixed(1);
    vc_t pid = packed_position_ids(b, T);
    vc_t first = mask_op(b, "sub", pid, one, VC_DT_I64); /* position_ids[:, :1] - 1 */
    vc_hold(b, first);
    vc_t cat = mask_op(b, "cat", first, vc_n_fixed(T + 1), VC_DT_I64);
    vc_t diff = mask_op(b, "sub", cat, t, VC_DT_I64);
    vc_hold(b, diff);
    vc_t psm = mask_op(b, "cumsum", mask_op(b, "ne", diff, t, VC_DT_BOOL), t, VC_DT_I64);
    vc_hold(b, psm);
    vc_t last = mask_op(b, "eq", psm, one, VC_DT_BOOL);
    mask_op(b, "all", last, one, VC_DT_BOOL);
    vc_release(b, first); /* find_packed_sequence_indices returns */
    vc_release(b, diff);
    vc_t ar[4];
    for (int i = 0; i < 4; i++) { /* batch_arange, head_arange, q_arange, kv_arange */
        ar[i] = i < 2 ? mask_op(b, "arange", -1, one, VC_DT_I64) : mask_op(b, "add", mask_op(b, "arange", -1, t, VC_DT_I64), t, VC_DT_I64);
        vc_hold(b, ar[i]);
    }
    vc_t r = mask_op(b, "new_ones", -1, one, VC_DT_BOOL);
    vc_t c = mask_op2(b, "le", ar[3], ar[2], tt, VC_DT_BOOL); /* kv_idx <= q_idx */
    r = mask_op2(b, "and", r, c, tt, VC_DT_BOOL);
    vc_t iq = mask_op(b, "index", psm, t, VC_DT_I64), ik = mask_op(b, "index", psm, t, VC_DT_I64);
    vc_t e = mask_op2(b, "eq", iq, ik, tt, VC_DT_BOOL);
    m = mask_op2(b, "and", r, e, tt, VC_DT_BOOL);
    for (int i = 0; i < 4; i++) vc_release(b, ar[i]); /* sdpa_mask returns */
    vc_release(b, psm);                              /* create_causal_mask returns */
    vc_set_forward_local(b, m);
    return m;
}

/* transformers 5's sliding-window mask under sdpa (huggingface/transformers @00c4411cbe15d4c56d54d3b56d4d171e9c289dac,
 * masking_utils.py; the model's forward makes its causal_mask_mapping once, before the layers: "full_attention":
 * create_causal_mask, "sliding_attention": create_sliding_window_causal_mask, each layer reading the one of its
 * layer_type; MistralModel.forward and Phi3Model.forward one create_sliding_window_causal_mask for every layer).
 * sdpa_mask returns None when _ignore_causal_mask_sdpa holds: (q_length == 1 or kv_length == q_length) and
 * (local_attention_size is None or kv_length < local_attention_size) and no padding; the sliding mask passes
 * local_size=sliding_window, so a kv length of sliding_window or more materialises it (at exactly the window
 * too, where the window masks nothing yet). kv_length: q_length without a cache, else the layer's
 * get_mask_sizes (the S its update returns: DynamicSlidingWindowLayer, window - 1 + q_length once full),
 * so a decoding step's mask exists once the sliding cache holds window - 1 tokens. The full layers' mask is
 * skipped (kv_length == q_length, or q_length 1). --attention flash: transformers' flash_attention_2
 * (flash_attention_mask: None without padding; the window goes to the kernel), no mask. */
static bool sliding_mask_needed(const vc_build *b, const ra_cfg *c, int64_t L, int64_t S)
{
    if (c->window <= 0 || !c->causal || c->eager || c->sinks || c->bidir || c->block_mask || c->chunk) return false;
    if (vc_opts(b)->attention == VC_ATTN_FLASH || vc_serve_profile(b) || vc_opts(b)->cache == VC_CACHE_STATIC) return false;
    return !((L == 1 || S == L) && S < c->window);
}

/* sdpa_mask's index tensors (masking_utils.py @00c4411c): batch_arange = arange(B), head_arange = arange(1),
 * q_arange = arange(L) + q_offset, kv_arange = arange(S) + kv_offset (int64, the sums new tensors), held:
 * locals until sdpa_mask returns (the caller releases them) */
static void mask_aranges(vc_build *b, int64_t L, int64_t S, vc_t ar[4])
{
    for (int i = 0; i < 4; i++) { /* batch_arange, head_arange, q_arange, kv_arange */
        ar[i] = i == 0 ? mask_op(b, "arange", -1, vc_n_sample(1), VC_DT_I64)
              : i == 1 ? mask_op(b, "arange", -1, vc_n_fixed(1), VC_DT_I64)
                       : mask_op(b, "add", mask_op(b, "arange", -1, vc_n_fixed(i == 2 ? L : S), VC_DT_I64),
                                 vc_n_fixed(i == 2 ? L : S), VC_DT_I64);
        vc_hold(b, ar[i]);
    }
}

/* The sliding-window mask itself (masking_utils.py @00c4411c: sdpa_mask with use_vmap False and
 * mask_function = sliding_window_causal_mask_function(window) = and_masks(sliding_window_overlay(window),
 * causal_mask_function)), made once per forward by the first sliding layer that needs it and kept until the
 * model returns (the mapping's entry, read by every sliding layer):
 *  - batch_arange = arange(B), head_arange = arange(1), q_arange = arange(L) + q_offset, kv_arange =
 *    arange(S) + kv_offset (int64, the sums new tensors; locals until sdpa_mask returns), viewed 4-D by
 *    _non_vmap_expansion_sdpa;
 *  - and_mask: result = q_idx.new_ones(()) (0-d bool); result & (kv_idx > q_idx - window) (the difference an
 *    int64 [L], the comparison and the & each a new [1, 1, L, S] bool); result & (kv_idx <= q_idx) (the same):
 *    three [L, S] bools alive at once;
 *  - generate() passes its 2-D attention_mask (all ones): _preprocess_mask_arguments makes its bool copy
 *    ([B, past + L], a local of create_sliding_window_causal_mask) and sdpa_mask ands padding_mask_function
 *    on top: and_masks(mask_function, padding_mask_function(padding_mask)): ones(()) & the window mask (a new
 *    [L, S]), then & padding_mask[batch_idx, kv_idx] (an index result [B, 1, 1, S]): a [B, 1, L, S] mask;
 *    without it (training, --mode infer) the [1, 1, L, S] result is expand()ed to [B, 1, L, S] (a view);
 *  - torch >= 2.5: no allow_torch_fix. */
static vc_t sliding_mask(vc_build *b, int64_t L, int64_t S, bool padded)
{
    vc_t m = vc_forward_local(b);
    if (m >= 0) return m;
    const vc_numel ls = vc_n_fixed(L * S), one = vc_n_fixed(1);
    vc_t pm = -1;
    if (padded) { /* attention_mask.to(dtype=torch.bool): [B, past + L] */
        pm = mask_op(b, "_to_copy", -1, vc_n_sample(S), VC_DT_BOOL);
        vc_hold(b, pm);
    }
    vc_t ar[4];
    mask_aranges(b, L, S, ar);
    vc_t r = mask_op(b, "new_ones", -1, one, VC_DT_BOOL);
    vc_t lo = mask_op(b, "sub", ar[2], vc_n_fixed(L), VC_DT_I64); /* q_idx - sliding_window */
    r = mask_op2(b, "and", r, mask_op2(b, "gt", ar[3], lo, ls, VC_DT_BOOL), ls, VC_DT_BOOL);
    r = mask_op2(b, "and", r, mask_op2(b, "le", ar[3], ar[2], ls, VC_DT_BOOL), ls, VC_DT_BOOL);
    if (padded) {
        vc_t r0 = mask_op(b, "new_ones", -1, one, VC_DT_BOOL);
        r = mask_op2(b, "and", r0, r, ls, VC_DT_BOOL);
        vc_t pi = mask_op(b, "index", pm, vc_n_sample(S), VC_DT_BOOL); /* padding_mask[batch_idx, kv_idx] */
        r = mask_op2(b, "and", r, pi, vc_n_sample(L * S), VC_DT_BOOL);
        vc_release(b, pm);
    }
    for (int i = 0; i < 4; i++) vc_release(b, ar[i]); /* sdpa_mask returns */
    vc_set_forward_local(b, r);
    return r;
}

/* transformers 4.46 to 4.52's sliding-window mask under sdpa, Mistral's (release.c VC_TF_SLIDING_FLOAT_MASK;
 * modeling_mistral.py @93e0020c96f1aaf6c380491c943fcf57502c5e19 MistralModel.forward: causal_mask =
 * self._update_causal_mask(...) before the decoder layers, a local until it returns), with no attention_mask
 * (training, --mode infer): _update_causal_mask keeps it once AttentionMaskConverter._ignore_causal_mask_sdpa
 * (modeling_attn_mask_utils.py @c2766555) fails (kv_length >= sliding_window: the same point as masking_utils'
 * bool mask) and takes target_length = past_seen_tokens + sequence_length + 1 = S + 1 (attention_mask None);
 * _prepare_4d_causal_attention_mask_with_cache_position then makes
 *  - causal_mask = torch.full((L, T), min_dtype, dtype=inputs_embeds' dtype): [L, T], no batch dim;
 *  - diagonal_attend_mask = torch.arange(T) > cache_position.reshape(-1, 1): an int64 [T] temporary, a bool
 *    [L, T] local;
 *  - sliding_attend_mask = torch.arange(T) <= (cache_position.reshape(-1, 1) - sliding_window): int64 [T] and
 *    [L, 1] temporaries, a bool [L, T] local; diagonal_attend_mask.bitwise_or_(sliding_attend_mask) in place;
 *  - causal_mask *= diagonal_attend_mask (in place); causal_mask[None, None].expand(B, 1, -1, -1) (a view);
 *    the two bool locals go when it returns.
 * The layers' attention slices it, attention_mask[:, :, :, :S] (a view, rows T apart: sliding_mask_args),
 * and F.scaled_dot_product_attention takes the float mask as it is (no convert_boolean_attn_mask). */
static vc_t sliding_mask_4x(vc_build *b, int64_t L, int64_t S)
{
    vc_t m = vc_forward_local(b);
    if (m >= 0) return m;
    const int64_t T = S + 1;
    const vc_numel lt = vc_n_fixed(L * T);
    vc_t full = mask_op(b, "full", -1, lt, vc_act_dt(b));
    vc_t diag = mask_op(b, "gt", mask_op(b, "arange", -1, vc_n_fixed(T), VC_DT_I64), lt, VC_DT_BOOL);
    vc_hold(b, diag);
    vc_t lo = mask_op(b, "sub", -1, vc_n_fixed(L), VC_DT_I64); /* cache_position.reshape(-1, 1) - sliding_window */
    vc_t sl = mask_op2(b, "le", mask_op(b, "arange", -1, vc_n_fixed(T), VC_DT_I64), lo, lt, VC_DT_BOOL);
    vc_hold(b, sl);
    vc_op *o = vc_op_begin(b, "bitwise_or_"); /* in place */
    int i = vc_op_in_nodiff(o, diag);
    vc_op_in_nodiff(o, sl);
    (void)vc_op_out_view(o, i, lt, true);
    vc_op_end(o);
    o = vc_op_begin(b, "mul_"); /* causal_mask *= diagonal_attend_mask */
    i = vc_op_in_nodiff(o, full);
    vc_op_in_nodiff(o, diag);
    m = vc_op_out_view(o, i, lt, true);
    vc_op_end(o);
    vc_release(b, diag); /* _prepare_4d_causal_attention_mask_with_cache_position returns */
    vc_release(b, sl);
    vc_set_forward_local(b, m);
    return m;
}

/* PaliGemma's mask (models/paligemma/modeling_paligemma.py @efa7189c5546a94e8c1194b2ccc6669e0f7ad65e
 * PaliGemmaForConditionalGeneration._update_causal_mask, called by its forward after the image merge, the result a
 * local until the forward returns), with no attention_mask (training, --mode infer) and no cache: target_length =
 * cache_position[0] + sequence_length + 1 = S + 1;
 *  - causal_mask = torch.full((L, T), min_dtype, dtype=self.dtype): [L, T] in the model's (parameters') dtype;
 *  - sequence_length != 1: is_training (token_type_ids and labels given) causal_mask = torch.triu(causal_mask,
 *    diagonal=1), a new [L, T] (the full one dies); otherwise causal_mask[:, :L] = 0.0 in place (the whole prefix
 *    attended both ways);
 *  - causal_mask *= torch.arange(T) > cache_position.reshape(-1, 1): an int64 [T] and a bool [L, T] temporary, the
 *    product in place; causal_mask[None, None].expand(B, 1, -1, -1) (a view); attention_mask None: no clone and no
 *    token_type_ids / padding fills (those need the 2-D attention_mask).
 * The language model takes the 4-D mask as it is (GemmaModel._update_causal_mask: _ignore_causal_mask_sdpa is False
 * for a 4-D mask, _prepare_4d_causal_attention_mask_with_cache_position returns it), its sdpa_attention_forward
 * slices it attention_mask[:, :, :, :S] (rows T apart) and runs F.scaled_dot_product_attention with it, is_causal
 * False (sliding_mask_args).
 * generate() (its prepare_inputs_for_generation passes the 2-D attention_mask, [B, past + L] ones; the cache a
 * DynamicCache: neither StaticCache nor HybridCache): target_length = attention_mask.shape[-1] = S, the kv length;
 * the prefill's prefix zeroed in place (the whole prompt, image tokens and text, attended both ways), a decoding
 * step's one row left full then *= (all False past the last position); then, attention_mask not None:
 *  - causal_mask = causal_mask.clone(): a contiguous [B, 1, L, S] (the [L, S] one dies with its expanded view);
 *  - padding_mask = causal_mask[..., :S] + attention_mask[:, None, None, :]: a new [B, 1, L, S] in the mask's dtype
 *    (a float tensor plus an int64 one), then padding_mask == 0: a bool [B, 1, L, S], the sum freed as it is rebound;
 *  - causal_mask[..., :S] = causal_mask[..., :S].masked_fill(padding_mask, min_dtype): a new [B, 1, L, S] copied in
 *    (copy_ in place) and freed; padding_mask dies when _update_causal_mask returns.
 * sdpa_attention_forward's slice [:, :, :, :S] is then the whole contiguous mask (mask_ld 0). */
static vc_t prefix_mask_4x(vc_build *b, int64_t L, int64_t S)
{
    vc_t m = vc_forward_local(b);
    if (m >= 0) return m;
    int64_t past;
    const bool gen = vc_gen_decoder(b, &past);
    const int64_t T = gen ? S : S + 1;
    const vc_numel lt = vc_n_fixed(L * T);
    m = mask_op(b, "full", -1, lt, vc_param_dt(b));
    if (L != 1 && vc_training(b)) {
        m = mask_op(b, "triu", m, lt, vc_param_dt(b)); /* the full one dies */
    }
    vc_t gt = mask_op(b, "gt", mask_op(b, "arange", -1, vc_n_fixed(T), VC_DT_I64), lt, VC_DT_BOOL);
    vc_hold(b, gt);
    vc_op *o = vc_op_begin(b, "mul_"); /* causal_mask *= ... */
    int i = vc_op_in_nodiff(o, m);
    vc_op_in_nodiff(o, gt);
    m = vc_op_out_view(o, i, lt, true);
    vc_op_end(o);
    vc_release(b, gt);
    if (gen) { /* the 2-D attention_mask's clone and padding fill */
        const vc_numel blt = vc_n_sample(L * T);
        m = mask_op(b, "clone", m, blt, vc_param_dt(b));
        vc_t pad = mask_op(b, "eq", mask_op(b, "add", m, blt, vc_param_dt(b)), blt, VC_DT_BOOL);
        vc_hold(b, pad);
        vc_t fill = mask_op2(b, "masked_fill", m, pad, blt, vc_param_dt(b));
        o = vc_op_begin(b, "copy_"); /* causal_mask[..., :S] = ... */
        i = vc_op_in_nodiff(o, m);
        vc_op_in_nodiff(o, fill);
        m = vc_op_out_view(o, i, blt, true);
        vc_op_end(o);
        vc_release(b, pad);
    }
    vc_set_forward_local(b, m);
    vc_keep_forward(b, m); /* PaliGemmaForConditionalGeneration.forward's local through its loss */
    return m;
}

/* PaliGemma 2's sliding layers (models/gemma2/modeling_gemma2.py @efa7189c5546a94e8c1194b2ccc6669e0f7ad65e
 * Gemma2DecoderLayer.forward, is_sliding and a 4-D attention_mask, not flash_attention_2) on PaliGemma's mask
 * (prefix_mask_4x, the expanded [B, 1, L, T] view, T = S + 1): torch.ones_like(attention_mask, dtype=torch.bool)
 * (a new contiguous [B, 1, L, T]: the expanded view is not dense), torch.tril(..., diagonal=-sliding_window) (a
 * new [B, 1, L, T] bool, the local `sliding_window_mask`; the ones die), torch.where(sliding_window_mask,
 * min_dtype, attention_mask) (a new [B, 1, L, T] in the mask's dtype), then attention_mask[:, :, :, offset : offset
 * + effective_seq_len] (a view: Gemma2Model.forward's last_cache_position is cache_position[-1].item() = S - 1 for
 * a 4-D mask, effective_seq_len = max(S, sliding_window), offset 0). The layer's locals `sliding_window_mask`
 * (*tril) and `attention_mask` (returned): held here through its attention (sliding_mask_done releases them;
 * transformers keeps them until the decoder layer returns, through its MLP too, not modelled). */
static vc_t prefix_sliding(vc_build *b, vc_t m, int64_t L, int64_t S, vc_t *tril)
{
    const vc_numel n = vc_n_sample(L * (S + 1));
    vc_t ones = mask_op(b, "ones_like", m, n, VC_DT_BOOL);
    *tril = mask_op(b, "tril", ones, n, VC_DT_BOOL);
    vc_hold(b, *tril);
    return mask_op2(b, "where", *tril, m, n, vc_dt_of(b, m));
}

/* Gemma 3 with an image input: its two masks (modeling_gemma3.py @0018aa647bb13801f061e2d1027c326f531b59fb
 * Gemma3Model.forward -> create_causal_mask_mapping: may_have_image_input holds without a cache (training, infer) and in
 * generate()'s prefill (pixel_values given), not in a decoding step; the caller sets image_mask accordingly).
 * create_causal_mask_mapping first makes image_group_ids: is_image = token_type_ids == 1 ([B, L] bool),
 * pad(is_image, (1, 0))[:, :-1], ~, &, .int(), cumsum, - 1, where(is_image, ., -1) ([B, L] int64); is_image and
 * image_group_ids stay alive (a local, and the or-function's closure) while create_masks_for_generate makes the
 * "full_attention" mask (create_causal_mask) and then the "sliding_attention" one
 * (create_sliding_window_causal_mask), both with or_mask_function = token_type_ids_mask_function (masking_utils.py
 * @00c4411cbe15d4c56d54d3b56d4d171e9c289dac: or_masks(...), allow_is_causal_skip = False and use_vmap = True,
 * so _ignore_causal_mask_sdpa never drops them and sdpa_mask evaluates the mask function under vmap over
 * (batch, head, q, kv): each intermediate is materialised over the dims it depends on). Per mask: sdpa_mask's
 * aranges (mask_aranges); the causal part (kv_idx <= q_idx, [L, S]; the sliding one also kv_idx > q_idx - window
 * and their &); inner_mask: safe_idx = where(kv_idx < n, kv_idx, 0) ([S]), token_type_ids[batch_idx, safe_idx]
 * and its where ([B, S]), image_group_ids[batch_idx, safe_idx] and its where ([B, S]), is_image_block =
 * (token_type_ids[batch_idx, q_idx] == 1) & (tt_kv == 1) ([B, L], [B, S], then [B, L, S]), same_image_block =
 * image_group_ids[batch_idx, q_idx] == group_kv ([B, L, S]), their & ([B, L, S]); or_masks: causal | inner
 * ([B, 1, L, S] bool, the mask). generate() passes its 2-D attention_mask: the bool copy
 * (_preprocess_mask_arguments, [B, S], a local of each create_* call) and padding_mask_function anded on top
 * (the index [B, S], then [B, L, S]). The two masks are the forward's locals (causal_mask_mapping) until the
 * model returns: the sliding one in vc_forward_local (as sliding_mask's), the full one in vc_forward_local2; made
 * here by the first layer (transformers makes them just before the decoder layers). The token_type_ids input
 * itself ([B, L] int64) is not counted. */
static vc_t image_mask_one(vc_build *b, int64_t L, int64_t S, int64_t window, bool padded, vc_t tt, vc_t grp)
{
    const vc_numel ls = vc_n_fixed(L * S), bls = vc_n_sample(L * S), bs = vc_n_sample(S), bl = vc_n_sample(L);
    vc_t pm = -1;
    if (padded) { /* attention_mask.to(dtype=torch.bool): [B, S] */
        pm = mask_op(b, "_to_copy", -1, bs, VC_DT_BOOL);
        vc_hold(b, pm);
    }
    vc_t ar[4];
    mask_aranges(b, L, S, ar);
    vc_t r = mask_op2(b, "le", ar[3], ar[2], ls, VC_DT_BOOL); /* causal_mask_function */
    if (window > 0) { /* sliding_window_overlay & causal */
        vc_t lo = mask_op(b, "sub", ar[2], vc_n_fixed(L), VC_DT_I64);
        r = mask_op2(b, "and", mask_op2(b, "gt", ar[3], lo, ls, VC_DT_BOOL), r, ls, VC_DT_BOOL);
    }
    vc_hold(b, r);
    /* inner_mask */
    vc_t safe = mask_op2(b, "where", mask_op(b, "lt", ar[3], vc_n_fixed(S), VC_DT_BOOL), ar[3], vc_n_fixed(S), VC_DT_I64);
    vc_hold(b, safe);
    vc_t tkv = mask_op2(b, "index", tt, safe, bs, VC_DT_I64);
    tkv = mask_op2(b, "where", mask_op(b, "lt", ar[3], vc_n_fixed(S), VC_DT_BOOL), tkv, bs, VC_DT_I64);
    vc_hold(b, tkv);
    vc_t gkv = mask_op2(b, "index", grp, safe, bs, VC_DT_I64);
    gkv = mask_op2(b, "where", mask_op(b, "lt", ar[3], vc_n_fixed(S), VC_DT_BOOL), gkv, bs, VC_DT_I64);
    vc_hold(b, gkv);
    vc_release(b, safe);
    vc_t iq = mask_op(b, "eq", mask_op(b, "index", tt, bl, VC_DT_I64), bl, VC_DT_BOOL);
    vc_hold(b, iq);
    vc_t blk = mask_op2(b, "and", iq, mask_op(b, "eq", tkv, bs, VC_DT_BOOL), bls, VC_DT_BOOL);
    vc_release(b, iq);
    vc_release(b, tkv);
    vc_hold(b, blk);
    vc_t same = mask_op2(b, "eq", mask_op(b, "index", grp, bl, VC_DT_I64), gkv, bls, VC_DT_BOOL);
    vc_release(b, gkv);
    vc_t inner = mask_op2(b, "and", blk, same, bls, VC_DT_BOOL);
    vc_release(b, blk);
    vc_t m = mask_op2(b, "or", r, inner, bls, VC_DT_BOOL);
    vc_release(b, r);
    if (padded) {
        vc_t pi = mask_op(b, "index", pm, bs, VC_DT_BOOL); /* padding_mask[batch_idx, kv_idx] */
        m = mask_op2(b, "and", m, pi, bls, VC_DT_BOOL);
        vc_release(b, pm);
    }
    for (int i = 0; i < 4; i++) vc_release(b, ar[i]); /* sdpa_mask returns */
    return m;
}

/* The mask of this layer's type (sliding: window > 0), both made by the first layer of the forward. */
static vc_t image_masks(vc_build *b, int64_t L, int64_t S, int64_t window, bool padded)
{
    vc_t s = vc_forward_local(b), f = vc_forward_local2(b);
    if (s < 0 || f < 0) {
        const vc_numel bl = vc_n_sample(L);
        vc_t tt = mask_op(b, "eq", -1, bl, VC_DT_BOOL); /* is_image = token_type_ids == 1 */
        vc_hold(b, tt);
        vc_t prev = mask_op(b, "constant_pad_nd", tt, vc_n_sample(L + 1), VC_DT_BOOL);
        vc_t start = mask_op2(b, "and", tt, mask_op(b, "bitwise_not", prev, bl, VC_DT_BOOL), bl, VC_DT_BOOL);
        vc_t g = mask_op(b, "cumsum", mask_op(b, "_to_copy", start, bl, VC_DT_I32), bl, VC_DT_I64);
        vc_t grp = mask_op2(b, "where", tt, mask_op(b, "sub", g, bl, VC_DT_I64), bl, VC_DT_I64); /* image_group_ids */
        vc_hold(b, grp);
        f = image_mask_one(b, L, S, 0, padded, tt, grp);
        s = image_mask_one(b, L, S, window, padded, tt, grp);
        vc_release(b, tt); /* create_causal_mask_mapping returns */
        vc_release(b, grp);
        vc_set_forward_local(b, s);
        vc_set_forward_local2(b, f);
    }
    return window > 0 ? s : f;
}

static bool image_mask_needed(const vc_build *b, const ra_cfg *c)
{
    return c->image_mask && vc_opts(b)->attention != VC_ATTN_FLASH && !vc_serve_profile(b) &&
           vc_opts(b)->cache != VC_CACHE_STATIC;
}

/* repeat_kv of one kv head: hidden_states[:, :, None].expand(B, 1, n_rep, S, D).reshape(B, n_rep, S, D) merges a
 * size-1 dim with the stride-0 one, so reshape returns a view (no copy; measured: gemma4_e_small's sliding layers);
 * its backward sums the gradient over the repeats (a new tensor of the input's size). The math backend scales the
 * key (query_acc * scale style: a new contiguous tensor, TensorIterator keeping the order when a stride is 0: marked
 * contiguous here) but feeds the value to matmul as it is, whose reshape to [B * H, S, D] copies it (stride 0 on
 * the heads) unless the batch or the heads are 1 (sdpa.c fold_v) */
static vc_t repeat_kv_view(vc_build *b, vc_t x, vc_numel n, bool contiguous)
{
    vc_op *o = vc_op_begin(b, "repeat_kv");
    int i = vc_op_in(o, x);
    vc_t y = vc_op_out_view(o, i, n, contiguous);
    vc_op_grad(o, i, VC_GRAD_REDUCE);
    vc_op_end(o);
    return y;
}

/* sdpa_attention_forward's repeat_kv with a mask (integrations/sdpa_attention.py @00c238bd: use_gqa_in_sdpa false
 * whenever attention_mask is not None), for every masked caller (the sliding / image masks, --packing's packed
 * mask): when kv heads < heads, key = repeat_kv(key, n_rep) and value = repeat_kv(value, n_rep) (expand + reshape:
 * new [B, H, S, D] tensors, views for one kv head: repeat_kv_view), the function's locals `key` and `value` rebound
 * to them, alive until it returns (the caller releases them after the call: repeat_kv_done) */
static void repeat_kv_args(vc_build *b, const ra_cfg *c, vc_t *k, vc_t *v, vc_sdpa_args *a)
{
    if (c->KV == c->H) return;
    const vc_numel n = vc_n_sample(c->H * a->S * c->D);
    *k = c->KV == 1 ? repeat_kv_view(b, *k, n, true) : vc__op_fresh(b, "repeat_kv", *k, n);
    *v = c->KV == 1 ? repeat_kv_view(b, *v, n, false) : vc__op_fresh(b, "repeat_kv", *v, n);
    vc_hold(b, *k);
    vc_hold(b, *v);
    a->Hkv = c->H;
    a->k_blhd = a->v_blhd = false;
}

/* After the sdpa call: the repeated key and value go (sdpa_attention_forward returns). */
static void repeat_kv_done(vc_build *b, const ra_cfg *c, vc_t k, vc_t v)
{
    if (c->KV == c->H) return;
    vc_release(b, k);
    vc_release(b, v);
}

/* An in-place op name_(dst, src) (copy_, index_put_, add_, mul_): dst's storage, a view of it returned. */
static vc_t inplace_op(vc_build *b, const char *name, vc_t dst, vc_t src)
{
    vc_op *o = vc_op_begin(b, name);
    int i = vc_op_in_nodiff(o, dst);
    vc_op_in_nodiff(o, src);
    vc_t y = vc_op_out_view(o, i, vc_numel_of(b, dst), true);
    vc_op_end(o);
    return y;
}

/* PaliGemma 2 under --mode infer: Gemma2Model.forward (models/gemma2/modeling_gemma2.py @efa7189c5546a94e8c1194b2ccc6669e0f7ad65e)
 * makes past_key_values = HybridCache(config, max_batch_size=B, max_cache_len=L, dtype) when use_cache and not
 * self.training (after PaliGemma's mask, which therefore takes no cache: prefix_mask_4x), and Gemma2Attention.forward
 * runs key_states, value_states = past_key_value.update(...). HybridCache could not be read at a pinned commit
 * (cache_utils.py is stored @ 67dd5524 only, a later release's layered caches); from the stored, unattributed
 * cache_utils.py of efa7189c's release line (HybridCache.__init__ with the deprecated layer_device_map; no device:
 * "meta"; bench/accuracy/llm/paligemma_replica.py HybridCache): update() makes the layer's zeros_like K and V on the
 * key's device at its first update, [B, kv, L, D] (global) or [B, kv, min(sliding_window, L), D] (sliding), kept by
 * the cache until the model's forward returns (outputs.past_key_values); then
 *  - global (_static_update): k_out[:, :, cache_position] = key_states in place (V too), the cache's tensors returned;
 *  - sliding past max_cache_len tokens: cache += key_states[:, :, -max:] in place, key_states / value_states returned
 *    (false: the caller's k and v stay);
 *  - sliding otherwise: slicing = ones(max).cumsum(0), the clamped cache_position, to_shift, indices (int64 [max]
 *    temporaries, the last three the function's locals), k_out = k_out[:, :, indices] (a new [B, kv, max, D], V too),
 *    k_out[:, :, cache_position] = key_states in place, cache.zero_(), cache += k_out; the new k_out / v_out
 *    returned: the attention's key_states / value_states until it returns (*hk, *hv).
 * Returns true when *k and *v were rebound (contiguous [B, kv, S, D]). */
static bool hybrid_update(vc_build *b, const ra_cfg *c, int64_t L, vc_t *k, vc_t *v, vc_t *hk, vc_t *hv)
{
    const int64_t n = c->window > 0 && c->window < L ? c->window : L;
    const vc_numel cn = vc_n_sample(c->KV * n * c->D);
    const vc_dtype dt = vc_dt_of(b, *k);
    vc_t ck = vc__op_new(b, "zeros_like", cn, dt);
    vc_keep_forward(b, ck);
    vc_t cv = vc__op_new(b, "zeros_like", cn, dt);
    vc_keep_forward(b, cv);
    if (c->window > 0 && L > n) {
        (void)inplace_op(b, "add_", ck, *k);
        (void)inplace_op(b, "add_", cv, *v);
        return false;
    }
    if (c->window == 0) {
        *k = inplace_op(b, "index_put_", ck, *k);
        *v = inplace_op(b, "index_put_", cv, *v);
        return true;
    }
    const vc_numel ni = vc_n_fixed(n), nl = vc_n_fixed(L);
    vc_t sl = mask_op(b, "cumsum", mask_op(b, "ones", -1, ni, VC_DT_I64), ni, VC_DT_I64);
    vc_hold(b, sl);
    vc_t cp = mask_op(b, "clamp", -1, nl, VC_DT_I64);
    vc_hold(b, cp);
    vc_t ts = mask_op(b, "ge", cp, nl, VC_DT_BOOL);
    vc_hold(b, ts);
    vc_t idx = mask_op(b, "remainder", mask_op(b, "sub", mask_op(b, "add", sl, ni, VC_DT_I64), ni, VC_DT_I64), ni,
                       VC_DT_I64);
    vc_hold(b, idx);
    *hk = inplace_op(b, "index_put_", mask_op2(b, "index", ck, idx, cn, dt), *k);
    *hv = inplace_op(b, "index_put_", mask_op2(b, "index", cv, idx, cn, dt), *v);
    (void)inplace_op(b, "add_", inplace_op(b, "zero_", ck, ck), *hk);
    (void)inplace_op(b, "add_", inplace_op(b, "zero_", cv, cv), *hv);
    vc_release(b, sl);
    vc_release(b, cp);
    vc_release(b, ts);
    vc_release(b, idx);
    *k = *hk;
    *v = *hv;
    return true;
}

/* A sliding layer's sdpa call with the mask (integrations/sdpa_attention.py @00c238bd sdpa_attention_forward):
 * use_gqa_in_sdpa is false with a mask, so repeat_kv when kv heads < heads (repeat_kv_args), and is_causal False;
 * F.scaled_dot_product_attention converts the bool mask first
 * (aten/src/ATen/native/transformers/attention.cpp convert_boolean_attn_mask, cyyever/pytorch @0d188885:
 * at::where(mask, 0.0, at::scalar_tensor(-inf, query dtype)): a new [B, 1, L, S] in the query's dtype,
 * the expanded batch dim materialised, alive through the call); flash takes no mask (sdp_utils.cpp
 * check_for_attn_mask), so a GPU runs the memory-efficient kernel, which saves it for backward, padded to a
 * multiple of 8 columns when S is not one (2.2 on; the release's preprocess_mask: layers/sdpa.c
 * sdpa_efficient, release.c VC_REL_MEFF_MASK), or math. Sets *a; returns the converted mask,
 * which the caller releases after the call, with sliding_mask_done. */
static vc_t sliding_mask_args(vc_build *b, const ra_cfg *c, int64_t L, vc_t q, vc_t *k, vc_t *v, vc_sdpa_args *a, bool padded,
                              vc_t *aux)
{
    *aux = -1; /* a second tensor the mask's maker keeps through the call (prefix_sliding's), or none */
    if (c->prefix_mask || (c->mask_4x && !padded && !image_mask_needed(b, c))) { /* transformers 4.46-4.52 (sliding_mask_4x) */
        vc_t fm = c->prefix_mask ? prefix_mask_4x(b, L, a->S) : sliding_mask_4x(b, L, a->S);
        if (c->prefix_mask && c->window > 0) { /* PaliGemma 2's sliding layers: prefix_sliding */
            int64_t past;
            if (vc_gen_decoder(b, &past)) { /* generate(): the HybridCache generate() makes (src/hf/hf.c refuses) */
                vc_refuse(b, O("mode"), "PaliGemma 2's generate() (Gemma2's HybridCache, modeling_gemma2.py @ "
                          "efa7189c) is not modelled");
            }
            fm = prefix_sliding(b, fm, L, a->S, aux);
            vc_hold(b, fm);
        }
        repeat_kv_args(b, c, k, v, a);
        /* sdpa_attention_forward: attention_mask[:, :, :, :key.shape[-2]], a view of [L, S + 1] rows */
        a->causal = false;
        a->masked = true;
        a->mask = fm;
        int64_t past;
        a->mask_ld = vc_gen_decoder(b, &past) ? 0 : a->S + 1; /* generate(): the [B, 1, L, S] clone */
        return fm;
    }
    vc_t bm = image_mask_needed(b, c) ? image_masks(b, L, a->S, c->window, padded) : sliding_mask(b, L, a->S, padded);
    repeat_kv_args(b, c, k, v, a);
    vc_t inf = vc__op_new(b, "scalar_tensor", vc_n_fixed(1), vc_dt_of(b, q));
    vc_t fm = vc__op_nograd(b, "where", bm, inf, vc_n_sample(L * a->S), vc_dt_of(b, q));
    vc_hold(b, fm);
    a->causal = false;
    a->masked = true;
    a->mask = fm;
    return fm;
}

/* After the sdpa call: the converted mask and the repeated key and value go (sdpa_attention_forward returns). */
static void sliding_mask_done(vc_build *b, const ra_cfg *c, vc_t fm, vc_t aux, vc_t k, vc_t v)
{
    if (aux >= 0) vc_release(b, aux);
    if (fm != vc_forward_local(b)) vc_release(b, fm); /* not 4.x's model-wide mask (sliding_mask_4x) */
    repeat_kv_done(b, c, k, v);
}

/* The refusals of --packing by attention layer: what transformers' packed paths do not run as
 * modelled here. Returns false after a refusal. */
static bool packed_ok(vc_build *b, const ra_cfg *c, int64_t T, bool flash)
{
    const char *why = c->falcon ? "FalconAttention (its own mask path)" : c->eager ? "eager attention (this family's default)"
                    : !c->causal || c->block_mask ? "a non-causal attention" : NULL;
    if (!why && !flash && c->window > 0)
        why = "sliding-window layers under sdpa (" OV("attention", "flash") " passes the window to its kernel)";
    const vc_dtype dt = vc_autocast_dt(b) != VC_DT_F32 ? vc_autocast_dt(b) : vc_act_dt(b);
    if (!why && flash && dt != VC_DT_F16 && dt != VC_DT_BF16)
        why = "flash_attention_2 in fp32 (flash-attn: \"FlashAttention only support fp16 and bf16 data type\"; use a 16-bit "
              O("precision") ")";
    if (!why && flash && c->D > 256)
        why = "flash_attention_2 with a head dim above 256 (flash-attn supports at most 256)";
    if (!why) return true;
    vc_refuse(b, O("packing"), "packed sequences with %s are not modelled (%lld tokens in one row)", why, (long long)T);
    return false;
}

/* LlamaAttention.forward between the projections and o_proj (Qwen3: q_norm /
 * k_norm on the [B, L, heads, D] view before the transpose; Phi3 and
 * GPT-NeoX: slices of one fused projection), then sdpa_attention_forward
 * (enable_gqa when no mask, torch >= 2.5) and
 * attn_output.transpose(1, 2).contiguous().reshape(B, L, -1). */
/* apply_rotary_emb (modeling_llama4.py @ 000c33fd) on xq [B, L, H, D] and xk [B, L, KV, D] with the
 * complex freqs_cis: xq_ = view_as_complex(xq.float().reshape(..., -1, 2)) (the float copy of a 16-bit
 * q; q itself in float32), xk_ likewise, xq_out = view_as_real(xq_ * freqs_cis).flatten(3) (a complex64
 * product: float32's bytes; mul saves freqs_cis alone, which needs no grad), xk_out likewise, then
 * xq_out.type_as(xq), xk_out.type_as(xk) (copies for a 16-bit model, the products themselves in
 * float32). The float copies and the products are the function's locals until it returns. */
static void llama4_rope(vc_build *b, vc_t *q, vc_t *k, vc_t cs, int64_t H, int64_t KV, int64_t L, int64_t D)
{
    vc_dtype dt = vc_dt_of(b, *q);
    vc_t qf = vc__op_cast(b, *q, VC_DT_F32), kf = vc__op_cast(b, *k, VC_DT_F32);
    vc_hold(b, qf);
    vc_hold(b, kf);
    vc_t qo = vc__op_mul_dt(b, qf, cs, vc_n_sample(L * H * D), VC_DT_F32);
    vc_hold(b, qo);
    vc_t ko = vc__op_mul_dt(b, kf, cs, vc_n_sample(L * KV * D), VC_DT_F32);
    vc_hold(b, ko);
    vc_t q2 = vc__op_cast(b, qo, dt), k2 = vc__op_cast(b, ko, dt);
    vc_release(b, qf);
    vc_release(b, kf);
    vc_release(b, qo);
    vc_release(b, ko);
    vc_release(b, *q); /* the projections' views, rebound */
    vc_release(b, *k);
    *q = q2;
    *k = k2;
}

/* A per-position scale of q, [L] elements, held until the attention's forward returns.
 * Llama4TextAttention.forward's temperature tuning (attn_temperature_tuning, a NoPE layer; f32 true):
 * attn_scales = log1p(floor((cache_position.float() + 1.0) / floor_scale)) * attn_scale + 1.0, a
 * float32 [L] local until the forward returns (its intermediates are [L] too, not modelled), viewed
 * [1, L, 1, 1] and expanded; query_states * attn_scales is float32 (a 16-bit q times a float32 tensor
 * promotes; mul saves attn_scales alone), .to(query_states.dtype) a 16-bit copy.
 * Ministral3Attention.forward (models/ministral3/modular_ministral3.py @ 00b364c707dac287e81ab6a952c386246a1025f3;
 * f32 false): query_states * _get_llama_4_attn_scale(cache_position, beta, original_max_position_embeddings)
 * .to(query_states.dtype): the float32 [L, 1] scale (1 + beta * log(1 + floor(positions / original)); its [L]
 * intermediates freed inside the function, not modelled) cast to q's dtype first (a 16-bit [L, 1] copy; the float32
 * one freed then, not modelled), so the product is a new q-sized tensor in q's dtype; mul saves the scale alone. */
static vc_t llama4_scale(vc_build *b, vc_t q, int64_t L, int64_t width, vc_t *scales, bool f32)
{
    vc_dtype dt = vc_dt_of(b, q);
    *scales = vc__op_new(b, "attn_scales", vc_n_fixed(L), f32 ? VC_DT_F32 : dt);
    vc_hold(b, *scales);
    vc_t m = vc__op_mul_dt(b, q, *scales, vc_n_sample(L * width), f32 ? VC_DT_F32 : dt);
    return f32 ? vc__op_cast(b, m, dt) : m;
}

/* shared_kv_states' entries, held since their layers stored them: alive until the last decoder layer returns
 * (Gemma4TextModel.forward drops the dict when it returns, after the final norm). */
static void kv_dict_end(vc_build *b)
{
    for (int t = 0; t < 2; t++) {
        vc_t kt, vt;
        int64_t St;
        bool bt;
        if (!vc_kv_share_get(b, t, &kt, &vt, &St, &bt)) continue;
        vc_release(b, kt);
        vc_release(b, vt);
        vc_keep_through_block(b, kt);
        vc_keep_through_block(b, vt);
    }
}

/* Gemma4TextAttention.forward on a kv-shared layer (modeling_gemma4.py @ 0246b4f3): query_states =
 * q_proj(x).view, q_norm, apply_rotary_pos_emb, transpose; key_states, value_states =
 * shared_kv_states[self.layer_type] (what the storing layer put there: its keys and values after
 * past_key_values.update, no cache update here); the attention interface; o_proj (the caller's Linear).
 * The dict's entries live until Gemma4TextModel.forward returns: kept here until the last shared layer's
 * decoder layer returns (the model's final norm alone runs after it). */
static void ra_shared_emit(vc_build *b, const ra_cfg *c)
{
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->H, KV = c->KV, D = c->D;
    vc_t q = vc_input(b, 0), cs = c->R > 0 ? vc_input(b, 1) : -1, k, v;
    int64_t S;
    bool kblhd;
    if (!vc_kv_share_get(b, (int)c->kv_type, &k, &v, &S, &kblhd)) {
        vc_refuse(b, NULL, "a kv-shared attention layer runs before any layer stored the keys and values of its type");
        return;
    }
    vc_input_unheld(b, 0);
    const vc_t arg = vc_input_arg(b, 0);
    if (c->qk_norm) { /* query_states = self.q_norm(query_states): the projection freed when it returns */
        vc_t qp = q;
        q = hf_rmsnorm(b, q, vc_weight(b, 0), vc_n_sample(L * H), c->qk_variant);
        vc_release(b, qp);
    }
    q = vc__op_view(b, q, vc_numel_of(b, q), false);
    if (c->R > 0) {
        vc_t q0 = q;
        q = rope_apply(b, q, cs, H, L, D, c->R);
        vc_release(b, q0);
    }
    const vc_t qs = q;
    vc_sdpa_args a = {H, KV, L, S, D, true, kblhd, kblhd, c->causal && L > 1, c->dropout, 0, false};
    /* a kv-shared sliding layer past the window: its type's entry of causal_mask_mapping, made by the storing
     * layer before it (the same L and S), so `padded` does not matter here */
    vc_t aux = -1;
    const vc_t smask = sliding_mask_needed(b, c, L, S) ? sliding_mask_args(b, c, L, q, &k, &v, &a, false, &aux) : -1;
    bool blhd = false;
    vc_t o = vc__op_sdpa_gqa(b, q, k, v, &a, &blhd);
    if (smask >= 0) sliding_mask_done(b, c, smask, aux, k, v);
    o = vc__op_view(b, o, vc_numel_of(b, o), blhd);
    o = vc__op_contiguous(b, o);
    o = vc__op_view(b, o, vc_numel_of(b, o), true);
    vc_set_output(b, o);
    const vc_t owner = vc_input_arg_held_next(b, 0) ? arg : -1;
    vc_keep_to_here(b, arg);
    vc_keep_to_here(b, qs);
    vc_keep_with(b, qs, owner);
    if (c->kv_last) kv_dict_end(b);
}

static void ra_emit(vc_build *b, const void *p)
{
    const ra_cfg *c = p;
    if (c->kv_shared) {
        ra_shared_emit(b, c);
        return;
    }
    /* --packing: n sequences in the row (1: find_packed_sequence_indices finds none, as unpacked) */
    const int64_t npack = vc_opts(b)->packing > 1 ? vc_opts(b)->packing : 0;
    const bool pflash = npack && vc_opts(b)->attention == VC_ATTN_FLASH;
    if (npack && !packed_ok(b, c, vc_input_shape(b, 0)->d[0], pflash)) return;
    if (c->falcon) {
        falcon_emit(b, c);
        return;
    }
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->H, KV = c->KV, D = c->D;
    vc_t q, k, v, cs = c->R > 0 ? vc_input(b, c->fused ? 1 : 3) : -1;
    if (c->fused) { /* qkv[..., :q_pos] etc. (Phi3Attention.forward): strided views */
        vc_t qkv = vc_input(b, 0);
        q = vc__op_view(b, qkv, vc_n_sample(L * H * D), false);
        k = vc__op_view(b, qkv, vc_n_sample(L * KV * D), false);
        v = vc__op_view(b, qkv, vc_n_sample(L * KV * D), false);
    } else {
        q = vc_input(b, 0);
        k = vc_input(b, 1);
        v = vc_input(b, 2);
    }
    /* LlamaAttention.forward (modeling_llama.py @5dd4a63; Qwen3Attention, Olmo2Attention,
     * Qwen3NextAttention @000c33fd / @7515843b alike) from its argument to its return:
     *  - hidden_states, the module's argument (q_proj(hidden_states) reads it; the decoder
     *    layer's local of the same name until the call returns), alive until the forward
     *    returns, whatever its projections save: held here to the end;
     *  - separate projections: q_proj(x) / k_proj(x) (with q/k norms, q_norm's argument, its
     *    result in their place) are no arguments of the module but locals, rebound to
     *    apply_rotary_pos_emb's results when it returns (freed then, as autograd saves
     *    nothing of them); value_states until past_key_values.update's results rebind it,
     *    else the return;
     *  - a fused projection (GPTNeoXAttention's qkv, Phi3Attention's qkv): a local until
     *    the return, q/k/v its views: held as the input;
     *  - apply_rotary_pos_emb's results (query_states, key_states), until the return (the
     *    key until update rebinds it).
     * What autograd saves stays for backward as ever. */
    const bool locals = !c->fused;
    if (locals)
        for (int i = 0; i < 3; i++) vc_input_unheld(b, i);
    const vc_t arg = vc_input_arg(b, 0);
    vc_t gate = -1;
    if (c->output_gate) { /* modeling_qwen3_next.py @7515843b Qwen3NextAttention.forward: query_states, gate =
                           * torch.chunk(q_proj(x).view(..., -1, head_dim * 2), 2, dim=-1) (strided views);
                           * gate = gate.reshape(..., -1): a copy, a local until the forward returns */
        vc_t qg = q;
        q = vc__op_view(b, qg, vc_n_sample(L * H * D), false);
        gate = vc__op_clone(b, vc__op_view(b, qg, vc_n_sample(L * H * D), false));
        vc_hold(b, gate);
    }
    if (c->qk_gather > 1 && vc_opts(b)->mode != VC_MODE_INFER) { /* vLLM's forward: no autograd, no cache written */
        vc_refuse(b, "qk_norm_gather", "%lld: q and k all-gathered over tensor-parallel ranks are modelled as vLLM's "
                  "forward only (" O("serve") ", the mode infer its plans run in)", (long long)c->qk_gather);
        return;
    }
    if (c->qk_gather > 1) { /* vLLM's _apply_qk_norm (src/hf/hf_tp.c): the whole rows normed, the rank's slice kept */
        vc_t qp = q, kp = k;
        q = vc__op_view(b, hf_rmsnorm(b, qk_all_gather(b, q, L * H * D, c->qk_gather), vc_weight(b, 0), vc_n_sample(L), c->qk_variant),
                        vc_n_sample(L * H * D), false);
        vc_release(b, qp);
        k = vc__op_view(b, hf_rmsnorm(b, qk_all_gather(b, k, L * KV * D, c->qk_gather), vc_weight(b, 1), vc_n_sample(L), c->qk_variant),
                        vc_n_sample(L * KV * D), false);
        vc_release(b, kp);
    } else if (c->qk_norm && !c->qk_rope) { /* Qwen3Attention: self.q_norm(q_proj(x).view(hidden_shape)), per head;
                       * Olmo2Attention: self.q_norm(self.q_proj(hidden_states)), one row per token */
        vc_t qp = q, kp = k;
        q = hf_rmsnorm(b, q, vc_weight(b, 0), vc_n_sample(c->qk_whole ? L : L * H), c->qk_variant);
        vc_release(b, qp);
        k = hf_rmsnorm(b, k, vc_weight(b, 1), vc_n_sample(c->qk_whole ? L : L * KV), c->qk_variant);
        vc_release(b, kp);
    }
    /* .view(hidden_shape).transpose(1, 2): [B, heads, L, D] over [B, L, heads, D] storage */
    q = vc__op_view(b, q, vc_numel_of(b, q), false);
    k = vc__op_view(b, k, vc_numel_of(b, k), false);
    v = vc__op_view(b, v, vc_numel_of(b, v), false);
    if (c->R > 0 && c->rope_style == 2) { /* Llama4TextAttention: apply_rotary_emb (frees its arguments, rebound) */
        llama4_rope(b, &q, &k, cs, H, KV, L, D);
    } else if (c->R > 0 && c->liger_rope) {
        /* liger_rotary_pos_emb (Liger-Kernel @ ead96b61, src/liger_kernel/transformers/rope.py) for q, then k:
         * the projections rotated in place, the module's locals rebound to views of the same storages */
        const bool copy = c->eager || vc_opts(b)->attention == VC_ATTN_MATH;
        vc_t q0 = q;
        q = liger_rope(b, q, k, cs, copy);
        k = liger_rope(b, k, q0, cs, copy);
    } else if (c->R > 0 && c->rope_style == 1) { /* GptOssAttention: apply_rotary_pos_emb with _apply_rotary_emb */
        vc_t q0 = q, k0 = k; /* apply_rotary_pos_emb's arguments, until it returns */
        q = rope_apply_half(b, q, cs, H, L, D);
        k = rope_apply_half(b, k, cs, KV, L, D);
        if (locals) {
            vc_release(b, q0);
            vc_release(b, k0);
        }
    } else if (c->R > 0 && c->rope_f32) {
        /* Olmo2's apply_rotary_pos_emb (models/olmo2/modeling_olmo2.py @ 0233e509): q_type, k_type = q.dtype,
         * k.dtype; q_embed = (q * cos) + (rotate_half(q) * sin) with Olmo2RotaryEmbedding's float32 cos / sin:
         * float32 products and sum (type promotion), k_embed likewise; `return q_embed.to(q_type),
         * k_embed.to(k_type)`: both float32 sums alive until it returns, each cast a new tensor (none in float32) */
        /* rope_style glm4 (Ernie4_5's apply_rotary_pos_emb @ 0233e509): the float32 cos / sin [..., : D // 2]
         * .repeat_interleave(2) first (locals until it returns, as Glm4's below), the explicit .float() upcasts
         * (rope_apply_dt's upcast), the sums .to(original_dtype) */
        vc_t q0 = q, k0 = k;
        const bool ernie = c->rope_style == 3;
        vc_t ci = ernie ? vc__op_nograd(b, "repeat_interleave", cs, -1, vc_n_fixed(2 * L * c->R), vc_dt_of(b, cs)) : cs;
        /* Cohere's apply_rotary_pos_emb (models/cohere/modeling_cohere.py @ 0233e509531ace915c8241b4c16c8032a583279c,
         * Cohere2's the same): dtype = q.dtype; q = q.float(); k = k.float() (the float32 copies locals until it
         * returns), the products with the model-dtype cos / sin float32 (type promotion), rotate_half's interleaved
         * x[..., ::2] / x[..., 1::2] views, torch.stack([-x2, x1], -1).flatten(-2) a new [.., D] tensor as llama's
         * cat; q_embed.to(dtype=dtype) */
        vc_t qf = c->rope_upcast ? vc__op_cast(b, q, VC_DT_F32) : q, kf = c->rope_upcast ? vc__op_cast(b, k, VC_DT_F32) : k;
        vc_t qe = rope_apply_dt(b, qf, ci, H, L, D, c->R, VC_DT_F32, ernie);
        vc_t ke = rope_apply_dt(b, kf, ci, KV, L, D, c->R, VC_DT_F32, ernie);
        q = vc__op_cast(b, qe, vc_dt_of(b, q0));
        k = vc__op_cast(b, ke, vc_dt_of(b, k0));
        if (ci != cs) vc_release(b, ci);
        if (q != qe) vc_release(b, qe);
        if (qf != q0) vc_keep_to_here(b, qf);
        if (kf != k0) vc_keep_to_here(b, kf);
        if (locals) {
            vc_release(b, q0);
            vc_release(b, k0);
        }
    } else if (c->R > 0) { /* the products keep q's [B, L, H, D] stride order (TensorIterator) */
        vc_t q0 = q, k0 = k; /* apply_rotary_pos_emb's arguments, until it returns */
        vc_t ci = cs;
        if (c->rope_style == 3) {
            /* Glm4's apply_rotary_pos_emb (models/glm4/modeling_glm4.py @ 00d01786): cos = cos[..., : cos.shape[-1]
             * // 2].repeat_interleave(2, dim=-1), sin likewise: two new [1, 1, L, R] tensors (position_ids [1, L]:
             * the batch's), locals until it returns, saved by q_rot * cos and rotate_half(q_rot) * sin where q and k
             * need grad; rotate_half's x[..., 0::2] / x[..., 1::2] are strided views, torch.stack((-x2, x1), -1)
             * .flatten(-2) a new [.., R] tensor as llama's cat; then cat([q_embed, q_pass]) as partial rotary */
            if (c->mrope) {
                /* Glm4v's apply_multimodal_rotary_pos_emb (models/glm4v/modeling_glm4v.py @ 03eac6f6): cos =
                 * torch.cat([m[i % 3] for i, m in enumerate(cos.split(mrope_section * 2, dim=-1))], dim=-1)
                 * .unsqueeze(1), sin likewise: two new [B, L, R] tensors from the [3, B, L, R] pair (the split and the
                 * indexing are views), rebound by Glm4's repeat_interleave below ([B, 1, L, R]: the batch's, as
                 * position_ids [3, B, L] is), each freed as it is */
                vc_t ct = vc__op_nograd(b, "cat", cs, -1, vc_n_sample(2 * L * c->R), vc_dt_of(b, cs));
                ci = vc__op_nograd(b, "repeat_interleave", ct, -1, vc_n_sample(2 * L * c->R), vc_dt_of(b, cs));
                vc_release(b, ct);
            } else {
                ci = vc__op_nograd(b, "repeat_interleave", cs, -1, vc_n_fixed(2 * L * c->R), vc_dt_of(b, cs));
            }
        }
        q = rope_apply(b, q, ci, H, L, D, c->R);
        k = rope_apply(b, k, ci, KV, L, D, c->R);
        if (ci != cs) vc_release(b, ci);
        if (locals) {
            vc_release(b, q0);
            vc_release(b, k0);
        }
    }
    /* Llama4: query_states = self.qk_norm(query_states) (no weight); HunYuanMoEV1Attention.forward
     * (models/hunyuan_v1_moe/modeling_hunyuan_v1_moe.py @ 0233e509531ace915c8241b4c16c8032a583279c; hunyuan_v1_dense
     * the same): query_states = self.query_layernorm(query_states), key_states = self.key_layernorm(key_states) after
     * apply_rotary_pos_emb, on the [B, heads, L, head_dim] rotated tensors; the rebound ones freed */
    if (c->l2_qk || c->qk_rope) {
        vc_t q0 = q, k0 = k;
        q = hf_rmsnorm(b, q, c->qk_rope ? vc_weight(b, 0) : -1, vc_n_sample(L * H), c->qk_rope ? c->qk_variant : 0);
        vc_release(b, q0);
        k = hf_rmsnorm(b, k, c->qk_rope ? vc_weight(b, 1) : -1, vc_n_sample(L * KV), c->qk_rope ? c->qk_variant : 0);
        vc_release(b, k0);
    }
    vc_t scales = -1;
    if (c->temp || c->l4_scale) { /* Llama4TextAttention.forward, attn_temperature_tuning and not use_rope;
                                   * Ministral3Attention.forward after apply_rotary_pos_emb */
        vc_t q0 = q;
        q = llama4_scale(b, q, L, H * D, &scales, c->temp);
        vc_release(b, q0);
    }
    if (c->v_norm) { /* Gemma4TextAttention.forward: value_states = self.v_norm(value_states) after the key's rotation
                      * (a Gemma4RMSNorm without weight, per head: (x.float() * pow(...)).type_as(x)); with
                      * attention_k_eq_v the value is k_proj's output itself (the same input twice) */
        v = hf_rmsnorm(b, v, -1, vc_n_sample(L * KV), c->qk_variant);
        if (locals) vc_release(b, vc_input(b, 2)); /* v_proj(x) (k_proj(x) under k_eq_v), rebound */
    }
    const vc_t qs = q, ks = k, vs = v; /* query_states, key_states, value_states */
    /* ModernBERT's sdpa_attention_forward (modeling_modernbert.py @ 000c33fd): query and key, rebound to
     * apply_rotary_pos_emb's results, are its locals until F.scaled_dot_product_attention returns */
    if (c->bidir) {
        vc_hold(b, qs);
        vc_hold(b, ks);
    }
    /* Sliding windows (Mistral, Gemma2, Qwen2, Gemma 3): below the window transformers' sdpa path runs
     * is_causal without a mask; from a kv length of sliding_window on, the model's sliding-window mask
     * (sliding_mask_needed, after the cache's update below). */
    /* partial rotary: apply_rotary_pos_emb's last torch.cat((q_embed, q_pass), dim=-1) makes a
     * contiguous [B, heads, L, D] tensor (cat's output takes the default memory format), which
     * matmul folds to 3-D without a copy; the full rotation's sum keeps [B, L, heads, D] strides */
    const bool cat_rope = c->R > 0 && c->R < c->D && (c->rope_style == 0 || c->rope_style == 3);
    vc_sdpa_args a = {H, KV, L, L, D, !cat_rope, !cat_rope, true, c->causal, c->dropout, 0, false};
    /* generate(): the cache's update returns contiguous [B, KV, S, D] states;
     * sdpa_attention_forward: is_causal = q_len > 1 and no mask */
    /* block_mask: Qwen2.5-VL's vision attention (Qwen2_5_VLVisionSdpaAttention), run once in generate()'s
     * prefill on the patches: no cache (its forward takes no past_key_values) */
    bool cached = c->block_mask ? false
                  : c->chunk > 0 ? vc_kv_update_chunked(b, c->chunk, &k, &v, &a.S) : vc_kv_update(b, c->window, &k, &v, &a.S);
    vc_t hk = -1, hv = -1; /* PaliGemma 2's HybridCache under --mode infer (hybrid_update): the sliding layers' copies */
    if (c->hybrid && !cached && !vc_training(b) && !vc_serve_profile(b)) cached = hybrid_update(b, c, L, &k, &v, &hk, &hv);
    vc_t pmask = -1;
    if (npack && pflash) {
        /* attn_implementation="flash_attention_2" (modeling_flash_attention_utils.py
         * _flash_attention_forward @00c4411c): no mask (flash_attention_mask returns None), the
         * packed position_ids give cu_seqlens (prepare_fa_kwargs_from_position_ids; its transients,
         * a [T] bool and small int tensors, not counted), q/k/v viewed [T, heads, D] (contiguous: no copy), then
         * flash_attn_varlen_func: the flash kernel over the row, causal within each sequence */
        if (vc_forward_local(b) < 0) vc_set_forward_local(b, packed_position_ids(b, L));
        a.varlen = npack;
    } else if (npack) {
        /* attn_implementation="sdpa" (integrations/sdpa_attention.py sdpa_attention_forward): with a
         * mask, use_gqa_in_sdpa is false: repeat_kv as with the sliding mask (repeat_kv_args: [1, H, T, D]
         * copies held through the call, views for one kv head) and is_causal False;
         * scaled_dot_product_attention converts the bool mask first (convert_boolean_attn_mask:
         * where(mask, 0.0, scalar_tensor(-inf)), [T, T] in the query's dtype, alive through the call) and
         * picks efficient or math (vc__op_sdpa_gqa) */
        vc_t bm = packed_mask(b, L);
        repeat_kv_args(b, c, &k, &v, &a);
        vc_t inf = vc__op_new(b, "scalar_tensor", vc_n_fixed(1), vc_dt_of(b, q));
        pmask = vc__op_nograd(b, "where", bm, inf, vc_n_fixed(L * L), vc_dt_of(b, q));
        vc_hold(b, pmask);
        a.causal = false;
        a.masked = true;
        a.mask = pmask;
    }
    if (cached) {
        a.k_blhd = a.v_blhd = false;
        a.causal = c->causal && L > 1;
        if (locals) { /* update's arguments, rebound to its results */
            vc_release(b, ks);
            vc_release(b, vs);
        }
    }
    if (c->kv_store) { /* shared_kv_states[self.layer_type] = key_states, value_states (after the cache's update) */
        vc_hold(b, k);
        vc_hold(b, v);
        vc_kv_share_set(b, (int)c->kv_type, k, v, a.S, a.k_blhd);
    }
    /* PaliGemma's mask (prefix_mask_4x), generate()'s passes included */
    const bool pm = c->prefix_mask && vc_opts(b)->attention != VC_ATTN_FLASH && !vc_serve_profile(b) &&
                    vc_opts(b)->cache != VC_CACHE_STATIC;
    vc_t aux = -1;
    const vc_t smask = !npack && (pm || image_mask_needed(b, c) || sliding_mask_needed(b, c, L, a.S))
                           ? sliding_mask_args(b, c, L, q, &k, &v, &a, cached, &aux) : -1;
    /* block_mask: Qwen2_5_VLVisionSdpaAttention.forward (modeling_qwen2_5_vl.py @ efa7189c):
     * attention_mask = torch.zeros([1, L, L], dtype=torch.bool), True within each cu_seqlens block, a
     * local until the forward returns; F.scaled_dot_product_attention converts it first
     * (convert_boolean_attn_mask: where(logical_not(mask), -inf, 0) in the query's dtype), a C++
     * local through the call; the backend adds it to the scores in place. One sample's patches
     * here (transformers runs the whole batch's as one sequence: [1, B L, B L]) */
    /* ModernBERT's sdpa_attention_forward: attn_mask = sliding_window_mask on local layers, else
     * the global attention_mask; F.scaled_dot_product_attention(q, k, v, dropout_p, attn_mask) */
    if (c->bidir) {
        vc_t gm, sm;
        bidir_masks(b, L, &gm, &sm);
        a.masked = true;
        a.mask = c->local_mask ? sm : gm;
        /* ModernBertEncoderLayer receives both masks (attention_mask, sliding_window_mask): under gradient
         * checkpointing GradientCheckpointingLayer binds them in the partial its checkpoint keeps until the
         * layer's backward, whichever one the layer reads; a view of the two, recorded, allocates nothing */
        vc_op *o = vc_op_begin(b, "kwargs");
        int i0 = vc_op_in_nodiff(o, gm);
        vc_op_in_nodiff(o, sm);
        (void)vc_op_out_view(o, i0, vc_numel_of(b, gm), true);
        vc_op_end(o);
    }
    vc_t bmask = -1, fmask = -1;
    if (c->block_mask) {
        bmask = vc__op_new(b, "zeros", vc_n_sample(L * L), VC_DT_BOOL);
        vc_hold(b, bmask);
        vc_t notm = vc__op_nograd(b, "logical_not", bmask, -1, vc_n_sample(L * L), VC_DT_BOOL);
        fmask = vc__op_nograd(b, "where", notm, -1, vc_n_sample(L * L), vc_dt_of(b, q));
        vc_hold(b, fmask);
    }
    bool blhd = false;
    vc_t o = c->eager ? eager_attention(b, c, q, k, v, L, a.S, a.k_blhd) : vc__op_sdpa_gqa(b, q, k, v, &a, &blhd);
    if (fmask >= 0) vc_release(b, fmask);
    if (c->bidir) {
        vc_release(b, qs);
        vc_release(b, ks);
    }
    if (pmask >= 0) {
        vc_release(b, pmask);
        repeat_kv_done(b, c, k, v);
    }
    if (smask >= 0) sliding_mask_done(b, c, smask, aux, k, v);
    /* transpose(1, 2).contiguous(): a copy unless the result is [B, L, H, D] storage */
    o = vc__op_view(b, o, vc_numel_of(b, o), blhd);
    o = vc__op_contiguous(b, o);
    o = vc__op_view(b, o, vc_numel_of(b, o), true);
    if (gate >= 0) { /* attn_output = attn_output * torch.sigmoid(gate) */
        vc_t sg = vc__op_unary(b, "sigmoid", gate, VC_SAVE_OUT, false);
        o = vc__op_mul(b, o, sg, vc_numel_of(b, o), false);
        vc_release(b, gate);
    }
    vc_set_output(b, o);
    if (bmask >= 0) vc_release(b, bmask);
    if (scales >= 0) vc_release(b, scales);
    /* the forward's locals, until it returns: with its argument where the caller holds that to
     * the next layer, the module's output projection ("held_until" on the norm that made it) */
    const vc_t owner = vc_input_arg_held_next(b, 0) ? arg : -1;
    vc_keep_to_here(b, arg);
    vc_keep_to_here(b, qs);
    vc_keep_with(b, qs, owner);
    if (!cached) {
        vc_keep_to_here(b, ks);
        vc_keep_to_here(b, vs);
        vc_keep_with(b, ks, owner);
        vc_keep_with(b, vs, owner);
    }
    if (hk >= 0) { /* HybridCache._sliding_update's k_out / v_out: the attention's key_states / value_states */
        vc_keep_to_here(b, hk);
        vc_keep_to_here(b, hv);
    }
    vc_kv_end(b);
    if (c->kv_last) kv_dict_end(b);
}

bool vc__ra_v_norm(const void *cfg) { return ((const ra_cfg *)cfg)->v_norm; }

void vc__ra_kv_layout(const void *cfg, int64_t *kv_heads, int64_t *head_dim, int64_t *window, bool *kv_shared)
{
    const ra_cfg *c = cfg;
    *kv_heads = c->KV;
    *head_dim = c->D;
    *window = c->window;
    *kv_shared = c->kv_shared;
}

const vc_kind vc_kind_RotaryAttention = {
    .ops = 125, /* 58, and the mask of a masked sdpa call: past the window 17 to make it (sliding_mask, generate()'s
                 * padded form), or Gemma 3's two image masks 63 (image_masks: 8 for image_group_ids, 23 the full
                 * mask, 26 the sliding one, 3 each for generate()'s padding), 4 to use it (repeat_kv twice,
                 * scalar_tensor, where) */
    .name = "RotaryAttention",
    .summary = "HF attention core: q/k/v (or fused qkv) + rope -> GQA SDPA -> [L, H*D] (q/k norm, partial rotary)",
    .min_inputs = 1, .max_inputs = 4, .cfg_size = sizeof(ra_cfg),
    .parse = ra_parse, .setup = ra_setup, .emit = ra_emit,
};

/* ================================================== GatedActivation */

enum { ACT_SILU, ACT_GELU, ACT_GELU_TANH, ACT_RELU };
static const char *const act_names[] = {"silu", "gelu", "gelu_tanh", "relu", NULL};

typedef struct {
    int act;
    bool fused;
    bool liger; /* --liger: LigerSiLUMulFunction (liger_silu_mul) */
} gate_cfg;

static int gate_parse(vc_args *a, void *p)
{
    gate_cfg *c = p;
    return vc_arg_enum(a, "activation", act_names, 0, &c->act) || vc_arg_bool(a, "fused", false, &c->fused) ||
           vc_arg_bool(a, "liger", false, &c->liger) ||
           (c->liger && (c->fused || (c->act != ACT_SILU && c->act != ACT_GELU && c->act != ACT_GELU_TANH))
                ? vc_arg_fail(a, "liger", "is LigerSiLUMulFunction(gate, up) (silu) or LigerGELUMulFunction(gate, up) "
                                          "(gelu, gelu_tanh): two inputs") : 0);
}

static int gate_setup(vc_setup *s, void *p)
{
    const gate_cfg *c = p;
    const vc_shape *g = &s->in[0];
    if (c->fused) {
        if (s->nin != 1) return vc_fail(s, "inputs", "a fused GatedActivation takes one input [.., 2 * I]");
        if (g->d[g->nd - 1] % 2) return vc_fail(s, "inputs", "the fused gate_up input's last dimension must be even");
        s->out = *g;
        s->out.d[g->nd - 1] /= 2;
        return 0;
    }
    if (s->nin != 2 || !vc_shape_eq(g, &s->in[1])) return vc_fail(s, "inputs", "GatedActivation takes [gate, up] of equal shapes");
    s->out = *g;
    return 0;
}

static vc_t act_op(vc_build *b, int act, vc_t x)
{
    switch (act) {
    case ACT_RELU: return vc__op_unary(b, "relu", x, VC_SAVE_OUT, false);
    case ACT_GELU: case ACT_GELU_TANH: return vc__op_unary(b, "gelu", x, VC_SAVE_IN, false);
    default: return vc__op_unary(b, "silu", x, VC_SAVE_IN, false);
    }
}

/* LlamaMLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x)); Phi3MLP:
 * gate, up = gate_up_proj(x).chunk(2, dim=-1); up * act_fn(gate). The
 * activation keeps its input (silu/gelu), the product keeps both factors. */
/* LigerSiLUMulFunction.apply(gate, up) (Liger-Kernel @ ead96b61, src/liger_kernel/ops/swiglu.py): forward
 * (l.201-233): ensure_contiguous (both are); swiglu_forward (l.122-160): c = torch.empty_like(a) (l.128), the
 * kernel writes silu(a) * b into it; save_for_backward(a, b) (l.231). backward (l.236-263): swiglu_backward
 * (l.163-198) recomputes silu(a) in the kernel and writes da into a, db into b, returning them: no allocation, the
 * saved inputs become the gradients (VC_GRAD_INTO_SAVED) */
/* LigerGELUMulFunction.apply(gate, up) (LigerGEGLUMLP.forward, src/liger_kernel/transformers/geglu.py @ ead96b61,
 * the gemma families' mlp through _patch_geglu_module; ops/geglu.py): forward (l.133-139): geglu_forward (l.87-108):
 * c = torch.empty_like(a) (l.93), the kernel writes gelu_tanh(a) * b; save_for_backward(a, b) (l.138). backward
 * (l.141-146): geglu_backward (l.111-130) stores da into a and db into b (the kernel's tl.store, l.83-84) and
 * returns them: the SiLUMul path's allocations and gradient mode (VC_GRAD_INTO_SAVED), whatever the config's
 * activation (LigerGEGLUMLP always computes the tanh form, geglu.py l.15-19) */
static vc_t liger_silu_mul(vc_build *b, vc_t g, vc_t u, vc_numel out, bool gelu)
{
    vc_op *o = vc_op_begin(b, gelu ? "LigerGELUMulFunction" : "LigerSiLUMulFunction");
    vc_op_grad(o, vc_op_in(o, g), VC_GRAD_INTO_SAVED);
    vc_op_grad(o, vc_op_in(o, u), VC_GRAD_INTO_SAVED);
    vc_t c = vc_op_out(o, out, vc_dt_of(b, g));
    vc_op_save(o, g);
    vc_op_save(o, u);
    vc_op_end(o);
    return c;
}

static void gate_emit(vc_build *b, const void *p)
{
    const gate_cfg *c = p;
    vc_numel out = vc_n_sample(vc_shape_numel(vc_output_shape(b)));
    if (c->liger) {
        vc_set_output(b, liger_silu_mul(b, vc_input(b, 0), vc_input(b, 1), out, c->act != ACT_SILU));
        return;
    }
    vc_t g, u;
    if (c->fused) {
        vc_t gu = vc_input(b, 0);
        g = vc__op_view(b, gu, out, false);
        u = vc__op_view(b, gu, out, false);
    } else {
        g = vc_input(b, 0);
        u = vc_input(b, 1);
    }
    vc_t a = act_op(b, c->act, g);
    vc_set_output(b, c->fused ? vc__op_mul(b, u, a, out, false) : vc__op_mul(b, a, u, out, false));
}

const vc_kind vc_kind_GatedActivation = {
    .ops = 4,
    .name = "GatedActivation", .summary = "act(gate) * up (SwiGLU/GeGLU); inputs [gate, up] or one fused [.., 2I]",
    .min_inputs = 1, .max_inputs = 2, .cfg_size = sizeof(gate_cfg),
    .parse = gate_parse, .setup = gate_setup, .emit = gate_emit,
};

/* ================================================== Scale */

typedef struct {
    double factor;
    bool keep; /* keep_forward: the output a local of the model's forward until it returns, loss included */
} scale_cfg;

static int scale_parse(vc_args *a, void *p)
{
    if (vc_arg_type(a, "factor") == 0) return vc_arg_fail(a, "factor", "missing (the number to multiply by)");
    return vc_arg_float(a, "factor", 1.0, -1e308, 1e308, &((scale_cfg *)p)->factor) ||
           vc_arg_bool(a, "keep_forward", false, &((scale_cfg *)p)->keep);
}

static int scale_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    return 0;
}

/* x * scalar (GemmaModel.forward: hidden_states * normalizer, a 0-d tensor;
 * Gemma2ForCausalLM: logits / softcap ... * softcap): a new tensor, nothing
 * of x's size saved; backward grad * scalar. */
static void scale_emit(vc_build *b, const void *p)
{
    vc_t x = vc_input(b, 0), y = vc__op_fresh(b, "mul", x, vc_numel_of(b, x));
    if (((const scale_cfg *)p)->keep) vc_keep_forward(b, y); /* keep_forward: PaliGemma's image_features */
    vc_set_output(b, y);
}

const vc_kind vc_kind_Scale = {
    .ops = 1,
    .name = "Scale", .summary = "x * factor (gemma's embedding normalizer, softcapping): saves nothing",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(scale_cfg),
    .parse = scale_parse, .setup = scale_setup, .emit = scale_emit,
};

/* ================================================== LayerScalar */

/* Gemma4TextDecoderLayer (models/gemma4/modeling_gemma4.py @ 0246b4f3): __init__
 * register_buffer("layer_scalar", torch.ones(1)) (cast with the model: the model's dtype), forward
 * `hidden_states *= self.layer_scalar`: mul_ in place, nothing allocated; its MulBackward0 saves the
 * buffer (`other`, saved when self needs a gradient: a tensor, packed by saved-tensor hooks, so a
 * checkpointed layer's recompute runs up to it and its backward's unpack triggers it) and computes
 * grad * other, a new tensor of x's size. */
static int lscalar_parse(vc_args *a, void *p)
{
    (void)a;
    (void)p;
    return 0;
}

static int lscalar_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    return vc_buffer(s, "layer_scalar", 1, VC_DT_FLOAT);
}

static void lscalar_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0);
    vc_set_output(b, vc__op_mul(b, x, vc_buf(b, 0), vc_numel_of(b, x), true));
}

const vc_kind vc_kind_LayerScalar = {
    .ops = 1,
    .name = "LayerScalar", .summary = "x *= a [1] buffer in place (gemma4's layer_scalar): saves the buffer",
    .min_inputs = 1, .max_inputs = 1,
    .parse = lscalar_parse, .setup = lscalar_setup, .emit = lscalar_emit,
};

/* ================================================== PositionEmbedding */

typedef struct {
    int64_t num, dim;
    bool per_sample;
    int64_t scatter; /* --tp --sp (src/hf/hf.c): the rank's 1/scatter of the positions */
} pos_cfg;

static int pos_parse(vc_args *a, void *p)
{
    pos_cfg *c = p;
    return vc_arg_int(a, "num_embeddings", VC_REQUIRED, 1, &c->num) ||
           vc_arg_int(a, "embedding_dim", VC_REQUIRED, 1, &c->dim) || vc_arg_bool(a, "per_sample", false, &c->per_sample) ||
           vc_arg_int(a, "sequence_scatter", 1, 1, &c->scatter);
}

static int pos_setup(vc_setup *s, void *p)
{
    const pos_cfg *c = p;
    if (s->in[0].nd != 1) return vc_fail(s, "inputs", "PositionEmbedding takes the token ids [L]");
    int64_t L = s->in[0].d[0];
    if (!c->per_sample && L > c->num)
        return vc_fail(s, "num_embeddings", "the sequence (%lld) is longer than the %lld learned positions", (long long)L,
                       (long long)c->num);
    if (L % c->scatter)
        return vc_fail(s, "sequence_scatter", "the sequence (%lld) is not divisible by %lld ranks", (long long)L, (long long)c->scatter);
    int64_t d[2] = {L / c->scatter, c->dim}, w;
    s->out = vc_shape_make(2, d);
    return vc_mul(s, c->num, c->dim, &w) || vc_param2(s, "weight", c->num, c->dim);
}

/* An nn.Embedding looked up with position ids: GPT2Model's wpe and BERT's
 * position_embeddings take position_ids [1, L] (a result shared by the
 * batch); BERT's token_type_embeddings (buffered_token_type_ids.expand(B, L))
 * and RoBERTa's positions (create_position_ids_from_input_ids, [B, L]) are
 * per sample. The ids themselves are int64 and small. With sequence_scatter
 * (GPT-2 under --tp --sp) the rank looks up the positions of its own 1/t of
 * the sequence: Megatron adds the positions before the scatter
 * (LanguageModelEmbedding.forward), a [s, b, h] sum instead of [s/t, b, h]. */
static void pos_emit(vc_build *b, const void *p)
{
    const pos_cfg *c = p;
    int64_t L = vc_input_shape(b, 0)->d[0] / c->scatter;
    vc_numel ids = c->per_sample ? vc_n_sample(L) : vc_n_fixed(L);
    vc_t idx = vc__op_new(b, "position_ids", ids, VC_DT_I64);
    vc_t w = vc_weight(b, 0);
    vc_op *o = vc_op_begin(b, "embedding");
    int iw = vc_op_in(o, w);
    vc_op_in_nodiff(o, idx);
    vc_t y = vc_op_out(o, vc_n_scale(ids, c->dim), vc_dt_of(b, w));
    vc_op_save_if(o, idx, iw);
    vc_op_end(o);
    vc_set_output(b, y);
}

const vc_kind vc_kind_PositionEmbedding = {
    .ops = 2,
    .name = "PositionEmbedding", .summary = "learned positions (or token types) looked up for [L] ids: [L, dim]",
    .min_inputs = 1, .max_inputs = 1, .flags = VC_KIND_INT_INPUT, .cfg_size = sizeof(pos_cfg),
    .parse = pos_parse, .setup = pos_setup, .emit = pos_emit,
};

/* ================================================== NewGELU */

typedef struct {
    int variant; /* 0 new, 1 fast, 2 quick */
} ngelu_cfg;

static const char *const ngelu_variants[] = {"new", "fast", "quick", NULL};

static int ngelu_parse(vc_args *a, void *p) { return vc_arg_enum(a, "variant", ngelu_variants, 0, &((ngelu_cfg *)p)->variant); }

/* x op python-scalar (mul/add): a new tensor, nothing saved */
static vc_t scalar_op(vc_build *b, const char *name, vc_t x) { return vc__op_fresh(b, name, x, vc_numel_of(b, x)); }

/* transformers activations.py, written in Python ops (not F.gelu):
 * NewGELUActivation (gpt2's "gelu_new"):
 *   0.5 * x * (1.0 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3.0))))
 * FastGELUActivation ("gelu_fast"):
 *   0.5 * x * (1.0 + tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))
 * QuickGELUActivation ("quick_gelu", Qwen2-VL's vision tower):
 *   input * torch.sigmoid(1.702 * input)
 * evaluated left to right; each tensor * tensor keeps both factors, pow
 * keeps its input, tanh and sigmoid their results. */
static void ngelu_emit(vc_build *b, const void *p)
{
    const ngelu_cfg *c = p;
    vc_t x = vc_input(b, 0);
    vc_numel n = vc_numel_of(b, x);
    vc_t inner;
    if (c->variant == 2) {
        vc_t sg = vc__op_unary(b, "sigmoid", scalar_op(b, "mul", x), VC_SAVE_OUT, false); /* sigmoid(1.702 * x) */
        vc_set_output(b, vc__op_mul(b, x, sg, n, false));
        return;
    }
    if (c->variant == 0) {
        vc_op *o = vc_op_begin(b, "pow");
        int i = vc_op_in(o, x);
        vc_t p3 = vc_op_out(o, n, vc_dt_of(b, x));
        vc_op_save_if(o, x, i);
        vc_op_end(o);
        vc_t t = scalar_op(b, "mul", p3);    /* 0.044715 * x^3 */
        t = vc__op_add(b, x, t, n, false);       /* x + ... */
        inner = scalar_op(b, "mul", t);      /* sqrt(2/pi) * (...) */
    } else {
        vc_t t = scalar_op(b, "mul", x);     /* 0.044715 * x */
        t = vc__op_mul(b, t, x, n, false);       /* ... * x */
        t = scalar_op(b, "add", t);          /* 1.0 + ... */
        vc_t u = scalar_op(b, "mul", x);     /* x * 0.7978845608 */
        inner = vc__op_mul(b, u, t, n, false);
    }
    vc_t th = vc__op_unary(b, "tanh", inner, VC_SAVE_OUT, false);
    vc_t one = scalar_op(b, "add", th);      /* 1.0 + tanh */
    vc_t half = scalar_op(b, "mul", x);      /* 0.5 * x */
    vc_set_output(b, vc__op_mul(b, half, one, n, false));
}

const vc_kind vc_kind_NewGELU = {
    .ops = 9,
    .name = "NewGELU", .summary = "HF's gelu_new / gelu_fast / quick_gelu written in Python ops (GPT-2, GPT-NeoX, Qwen2-VL's tower): keeps several tensors",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(ngelu_cfg),
    .parse = ngelu_parse, .setup = scale_setup, .emit = ngelu_emit,
};

/* ================================================== SparseMoE */

enum { MOE_MIXTRAL, MOE_QWEN2, MOE_DEEPSEEK, MOE_GPT_OSS, MOE_LLAMA4, MOE_GEMMA4, MOE_DEEPSEEK_V2, MOE_MINIMAX, MOE_PHIMOE,
       MOE_GRANITE, MOE_ERNIE, MOE_LFM2, MOE_HUNYUAN };
static const char *const moe_styles[] = {"mixtral", "qwen2_moe", "deepseek_v3", "gpt_oss", "llama4", "gemma4", "deepseek_v2",
                                         "minimax_m2", "phimoe", "granitemoe", "ernie4_5_moe", "lfm2_moe", "hunyuan_v1_moe",
                                         NULL};
/* style deepseek_v2's topk_method (DeepseekV2Moe.route_tokens_to_experts) */
enum { TOPK_GREEDY, TOPK_GROUP_LIMITED };
static const char *const topk_methods[] = {"greedy", "group_limited_greedy", NULL};
/* experts_implementation: per_expert, transformers 4.x's nn.ModuleList of
 * per-expert MLPs looped over (the kind's default, the hand-written model
 * format's meaning since issue 12); grouped_mm, transformers 5's stacked
 * experts (gate_up_proj [E, 2I, H], down_proj [E, H, I]) through
 * grouped_mm_experts_forward, its default (what an HF config gets). */
enum { MOE_PER_EXPERT, MOE_GROUPED_MM };
static const char *const moe_impls[] = {"per_expert", "grouped_mm", NULL};

typedef struct {
    int64_t hidden, inter, E, k, shared;
    int64_t n_group, topk_group; /* deepseek_v3 (deepseek_v2 group_limited_greedy): the expert groups and the groups kept */
    int act, style, impl;
    int topk_method; /* deepseek_v2: TOPK_* */
    bool norm_topk;
    double imbalance;
    int64_t ep; /* --ep: the expert-parallel ranks (vc_setup.ep), 0/1 none: layers/moe_ep.c */
    double jitter; /* phimoe: input_jitter_noise (the training jitter of the block's and the router's input) */
    bool router_f32; /* minimax_m2 under vLLM: the gate's weight and the bias float32, the gate's input cast to it */
    bool expert_bias; /* lfm2_moe: Lfm2MoeSparseMoeBlock's float32 expert_bias buffer (use_expert_bias) */
    bool liger;       /* --liger at 4.x: each expert's forward LigerBlockSparseTop2MLP's / LigerQwen3MoeSwiGLUMLP's */
} moe_cfg;

static int moe_parse(vc_args *a, void *p)
{
    moe_cfg *c = p;
    if (vc_arg_int(a, "hidden_size", VC_REQUIRED, 1, &c->hidden) ||
        vc_arg_int(a, "intermediate_size", VC_REQUIRED, 1, &c->inter) ||
        vc_arg_int(a, "num_experts", VC_REQUIRED, 1, &c->E) || vc_arg_int(a, "top_k", 2, 1, &c->k) ||
        vc_arg_int(a, "shared_expert_intermediate_size", 0, 0, &c->shared) ||
        vc_arg_enum(a, "activation", act_names, 0, &c->act) || vc_arg_enum(a, "style", moe_styles, 0, &c->style) ||
        vc_arg_bool(a, "norm_topk_prob", true, &c->norm_topk) ||
        vc_arg_float(a, "moe_imbalance", 1.0, 1.0, 1e6, &c->imbalance) ||
        vc_arg_enum(a, "experts_implementation", moe_impls, MOE_PER_EXPERT, &c->impl) ||
        vc_arg_int(a, "n_group", 1, 1, &c->n_group) || vc_arg_int(a, "topk_group", 1, 1, &c->topk_group) ||
        vc_arg_enum(a, "topk_method", topk_methods, TOPK_GREEDY, &c->topk_method) ||
        vc_arg_float(a, "input_jitter_noise", 0.0, 0.0, 1.0, &c->jitter) || vc_arg_bool(a, "router_f32", false, &c->router_f32) ||
        vc_arg_bool(a, "expert_bias", c->style == MOE_LFM2, &c->expert_bias) || vc_arg_bool(a, "liger", false, &c->liger))
        return -1;
    if (c->liger && (c->act != ACT_SILU || (c->impl == MOE_GROUPED_MM && ((c->style != MOE_MIXTRAL &&
                                                                           c->style != MOE_QWEN2) || c->shared))))
        return vc_arg_fail(a, "liger", "is LigerSiLUMulFunction in each expert module of per_expert's loop, or "
                           "LigerExperts.forward (LigerFusedMoEFunction) on grouped_mm's stacked experts of style mixtral "
                           "or qwen2_moe without a shared expert (silu)");
    if (c->style != MOE_LFM2 && vc_arg_type(a, "expert_bias"))
        return vc_arg_fail(a, "expert_bias", "only style lfm2_moe (Lfm2MoeSparseMoeBlock) has an expert_bias buffer");
    if (c->style != MOE_MINIMAX && c->style != MOE_ERNIE && c->style != MOE_HUNYUAN && c->router_f32)
        return vc_arg_fail(a, "router_f32", "only styles minimax_m2 (vLLM's MiniMaxM2MoE), ernie4_5_moe (transformers' "
                           "Ernie4_5_MoeTopKRouter) and hunyuan_v1_moe (HunYuanMoEV1Gate) have a float32 router");
    if (c->style != MOE_PHIMOE && vc_arg_type(a, "input_jitter_noise"))
        return vc_arg_fail(a, "input_jitter_noise", "only style phimoe jitters its input");
    if (c->style != MOE_DEEPSEEK_V2 && vc_arg_type(a, "topk_method"))
        return vc_arg_fail(a, "topk_method", "only style deepseek_v2 has a topk_method");
    if (c->style == MOE_DEEPSEEK_V2) { /* DeepseekV2Moe (modeling_deepseek_v2.py @ 0233e509) */
        if (c->impl != MOE_GROUPED_MM)
            return vc_arg_fail(a, "experts_implementation", "style deepseek_v2 is modelled with grouped_mm (transformers 5)");
        if (c->topk_method == TOPK_GREEDY && (vc_arg_type(a, "n_group") || vc_arg_type(a, "topk_group")))
            return vc_arg_fail(a, vc_arg_type(a, "n_group") ? "n_group" : "topk_group", "topk_method greedy routes "
                               "without groups");
        if (c->E % c->n_group) /* router_logits.view(T, num_group, -1) */
            return vc_arg_fail(a, "n_group", "%lld groups: num_experts (%lld) must split into them", (long long)c->n_group,
                               (long long)c->E);
        if (c->topk_group > c->n_group)
            return vc_arg_fail(a, "topk_group", "topk_group (%lld) is more than n_group (%lld)", (long long)c->topk_group,
                               (long long)c->n_group);
        if (c->shared < 1) /* forward adds self.shared_experts(residuals) unconditionally */
            return vc_arg_fail(a, "shared_expert_intermediate_size", "style deepseek_v2 has shared experts: "
                               "moe_intermediate_size x n_shared_experts");
    } else if (c->style == MOE_DEEPSEEK) { /* DeepseekV3MoE: routing only with the stacked experts here */
        if (c->impl != MOE_GROUPED_MM)
            return vc_arg_fail(a, "experts_implementation", "style deepseek_v3 is modelled with grouped_mm (transformers 5)");
        if (c->E % c->n_group || c->E / c->n_group < 2)
            return vc_arg_fail(a, "n_group", "%lld groups: num_experts (%lld) must split into groups of at least 2 "
                               "(each group's score is its top-2 sum)", (long long)c->n_group, (long long)c->E);
        if (c->topk_group > c->n_group)
            return vc_arg_fail(a, "topk_group", "topk_group (%lld) is more than n_group (%lld)", (long long)c->topk_group,
                               (long long)c->n_group);
        if (c->k > c->E / c->n_group * c->topk_group)
            return vc_arg_fail(a, "top_k", "top_k (%lld) is more than the %lld experts of the %lld groups kept", (long long)c->k,
                               (long long)(c->E / c->n_group * c->topk_group), (long long)c->topk_group);
        if (c->shared < 1)
            return vc_arg_fail(a, "shared_expert_intermediate_size", "style deepseek_v3 has shared experts: "
                               "moe_intermediate_size x n_shared_experts");
    } else if (c->style == MOE_LLAMA4) { /* Llama4TextMoe: one way to run its experts */
        if (vc_arg_type(a, "experts_implementation"))
            return vc_arg_fail(a, "experts_implementation", "style llama4 runs Llama4TextExperts' torch.bmm over every "
                               "expert (no per-expert loop, no grouped_mm)");
        if (c->shared < 1)
            return vc_arg_fail(a, "shared_expert_intermediate_size", "style llama4 has a shared expert (Llama4TextMLP of "
                               "intermediate_size)");
        if (c->imbalance > 1.0)
            return vc_arg_fail(a, "moe_imbalance", "style llama4 runs every token through every expert: the routing "
                               "changes no allocation");
    } else if (c->style == MOE_GEMMA4 && (c->impl != MOE_GROUPED_MM || c->shared)) {
        return vc_arg_fail(a, c->shared ? "shared_expert_intermediate_size" : "experts_implementation", "style gemma4 "
                           "(Gemma4TextRouter, Gemma4TextExperts) is modelled with grouped_mm (transformers 5) and has "
                           "no shared expert (the dense MLP beside it is its own layers)");
    } else if (c->style == MOE_GPT_OSS && c->impl != MOE_GROUPED_MM) {
        return vc_arg_fail(a, "experts_implementation", "style gpt_oss is modelled with grouped_mm (transformers 5)");
    } else if (c->style == MOE_GRANITE && (vc_arg_type(a, "experts_implementation") || c->shared || vc_arg_type(a, "n_group") ||
                                           vc_arg_type(a, "topk_group"))) {
        /* GraniteMoeMoE: JetMoe's ParallelExperts loop in every release, its shared MLP its own layers */
        return vc_arg_fail(a, vc_arg_type(a, "experts_implementation") ? "experts_implementation" : c->shared
                           ? "shared_expert_intermediate_size" : vc_arg_type(a, "n_group") ? "n_group" : "topk_group",
                           "style granitemoe runs GraniteMoeParallelExperts' per-expert loop (no per_expert / grouped_mm "
                           "choice), without a shared expert or groups");
    } else if (c->style == MOE_PHIMOE && (c->impl != MOE_GROUPED_MM || c->shared || c->k != 2 || vc_arg_type(a, "n_group") ||
                                          vc_arg_type(a, "topk_group"))) {
        /* PhimoeSparseMoeBlock (transformers 5): sparsemixer picks two experts, stacked experts, no shared expert */
        return vc_arg_fail(a, c->impl != MOE_GROUPED_MM ? "experts_implementation" : c->shared ? "shared_expert_intermediate_size"
                           : c->k != 2 ? "top_k" : vc_arg_type(a, "n_group") ? "n_group" : "topk_group", "style phimoe "
                           "(sparsemixer's two experts, PhimoeExperts) is modelled with grouped_mm (transformers 5), top_k 2, "
                           "no shared expert and no groups");
    } else if (c->style == MOE_MINIMAX && (c->impl != MOE_GROUPED_MM || c->shared || vc_arg_type(a, "n_group") ||
                                           vc_arg_type(a, "topk_group"))) {
        /* MiniMaxM2SparseMoeBlock (transformers 5 only): stacked experts, no shared expert, no groups */
        return vc_arg_fail(a, c->impl != MOE_GROUPED_MM ? "experts_implementation" : c->shared ? "shared_expert_intermediate_size"
                           : vc_arg_type(a, "n_group") ? "n_group" : "topk_group", "style minimax_m2 (MiniMaxM2TopKRouter, "
                           "MiniMaxM2Experts) is modelled with grouped_mm (transformers 5), no shared expert and no groups");
    } else if (c->style == MOE_ERNIE && (c->impl != MOE_GROUPED_MM || vc_arg_type(a, "n_group") || vc_arg_type(a, "topk_group"))) {
        /* Ernie4_5_MoeSparseMoeBlock (transformers 5): stacked Ernie4_5_MoeExperts; transformers 4.x's nn.ModuleList of
         * Ernie4_5_MoeMLP (biased with use_bias) is not written */
        return vc_arg_fail(a, c->impl != MOE_GROUPED_MM ? "experts_implementation" : vc_arg_type(a, "n_group") ? "n_group"
                           : "topk_group", "style ernie4_5_moe (Ernie4_5_MoeTopKRouter, Ernie4_5_MoeExperts) is modelled "
                           "with grouped_mm (transformers 5) and no groups");
    } else if (c->style == MOE_HUNYUAN && (c->impl != MOE_GROUPED_MM || c->shared < 1 || !c->norm_topk ||
                                           vc_arg_type(a, "n_group") || vc_arg_type(a, "topk_group"))) {
        /* HunYuanMoEV1Moe (transformers 5): stacked HunYuanMoEV1Experts, shared_mlp always, the top-k renormalised */
        return vc_arg_fail(a, c->impl != MOE_GROUPED_MM ? "experts_implementation" : c->shared < 1
                           ? "shared_expert_intermediate_size" : !c->norm_topk ? "norm_topk_prob" : vc_arg_type(a, "n_group")
                           ? "n_group" : "topk_group", "style hunyuan_v1_moe (HunYuanMoEV1Gate, HunYuanMoEV1Experts, "
                           "shared_mlp) is modelled with grouped_mm (transformers 5), a shared MLP, the top-k weights "
                           "renormalised and no groups");
    } else if (c->style == MOE_LFM2 && (c->impl != MOE_GROUPED_MM || c->shared || vc_arg_type(a, "n_group") ||
                                        vc_arg_type(a, "topk_group"))) {
        /* Lfm2MoeSparseMoeBlock (transformers 5 only): Lfm2MoeExperts (Qwen2MoeExperts), no shared expert, no groups */
        return vc_arg_fail(a, c->impl != MOE_GROUPED_MM ? "experts_implementation" : c->shared ? "shared_expert_intermediate_size"
                           : vc_arg_type(a, "n_group") ? "n_group" : "topk_group", "style lfm2_moe (Lfm2MoeSparseMoeBlock, "
                           "Lfm2MoeExperts) is modelled with grouped_mm (transformers 5), no shared expert and no groups");
    } else if (vc_arg_type(a, "n_group") || vc_arg_type(a, "topk_group"))
        return vc_arg_fail(a, vc_arg_type(a, "n_group") ? "n_group" : "topk_group", "only style deepseek_v3 routes by groups");
    if (c->k > c->E)
        return vc_arg_fail(a, "top_k", "top_k (%lld) is more than num_experts (%lld)", (long long)c->k, (long long)c->E);
    if (c->impl == MOE_PER_EXPERT && c->style != MOE_LLAMA4 && c->style != MOE_GRANITE && c->E * 3 + 4 > 256)
        return vc_arg_fail(a, "num_experts", "%lld experts: more than the 84 per_expert holds (256 parameter tensors; "
                           "experts_implementation grouped_mm stacks them)", (long long)c->E);
    return 0;
}

static vc_moe_ep moe_ep_of(const moe_cfg *c)
{
    return (vc_moe_ep){c->hidden, c->inter, c->E, c->k, c->ep, c->imbalance};
}

/* transformers 4.x: the router and each expert's three projections as
 * nn.Linear modules. */
static int per_expert_params(vc_setup *s, const moe_cfg *c)
{
    if (vc_param_shape(s, "gate.weight", 2, (int64_t[2]){c->E, c->hidden}, VC_PARAM_LINEAR)) return -1;
    /* the router and the experts are nn.Linear modules (modeling_mixtral.py,
     * modeling_qwen2_moe.py): a quantized format replaces them (src/policy/quant.c) */
    static const char *const mx[3] = {"w1", "w3", "w2"}, *const qw[3] = {"gate_proj", "up_proj", "down_proj"};
    const char *const *nm = c->style == MOE_MIXTRAL ? mx : qw;
    char n[64];
    for (int64_t e = 0; e < c->E; e++)
        for (int j = 0; j < 3; j++) {
            snprintf(n, sizeof n, "experts.%lld.%s.weight", (long long)e, nm[j]);
            int64_t d[2] = {j < 2 ? c->inter : c->hidden, j < 2 ? c->hidden : c->inter};
            if (vc_param_shape(s, n, 2, d, VC_PARAM_LINEAR)) return -1;
        }
    return 0;
}

static int moe_setup(vc_setup *s, void *p)
{
    moe_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->nd != 2 || x->d[1] != c->hidden)
        return vc_fail(s, "hidden_size", "SparseMoE takes [L, %lld] per sample", (long long)c->hidden);
    s->out = *x;
    int64_t t;
    if (vc_mul(s, c->hidden, c->inter, &t) || vc_mul(s, t, 3 * c->E, &t) || vc_mul(s, x->d[0], c->k, &t) ||
        vc_mul(s, t, c->inter > c->hidden ? 2 * c->inter : c->hidden, &t))
        return -1;
    if (s->ep > 1 && c->liger && c->impl == MOE_GROUPED_MM) /* moe_ep.c's MoELayer, not LigerFusedMoEFunction */
        return vc_fail(s, "ep", "expert parallelism is not modelled with liger's LigerFusedMoEFunction");
    if (s->ep > 1 && c->style == MOE_GEMMA4) /* moe_ep.c's MoELayer routes with softmax top-k, no per_expert_scale */
        return vc_fail(s, "ep", "expert parallelism is not modelled for style gemma4 (Gemma4TextRouter's normed input, "
                       "scale and per_expert_scale)");
    if (s->ep > 1 && c->style == MOE_GPT_OSS) /* moe_ep.c's MoELayer has no expert biases or clamped SwiGLU */
        return vc_fail(s, "ep", "expert parallelism is not modelled for style gpt_oss (biased experts, clamped SwiGLU)");
    if (s->ep > 1 && c->style == MOE_LLAMA4) /* moe_ep.c's MoELayer routes; Llama4TextMoe runs every expert on every token */
        return vc_fail(s, "ep", "expert parallelism is not modelled for style llama4 (transformers' Llama4TextMoe runs "
                       "every expert on every token; a dispatcher's top-1 sigmoid routing is not written)");
    /* Llama4TextMoe runs every token through every expert: [E x L, max(2I, H)] per sample */
    if (c->style == MOE_LLAMA4 && (vc_mul(s, x->d[0], c->E, &t) || vc_mul(s, t, 2 * c->inter > c->hidden ? 2 * c->inter : c->hidden, &t)))
        return -1;
    if (c->style == MOE_LLAMA4) /* Llama4TextMoe.__init__: experts (nn.Parameters), router (Llama4Router, an
                                 * nn.Linear without bias), shared_expert (Llama4TextMLP) */
        return vc_param_shape(s, "router.weight", 2, (int64_t[2]){c->E, c->hidden}, 0) ||
               vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, c->hidden, 2 * c->inter}, VC_PARAM_LLAMA4_EXPERTS) ||
               vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->inter, c->hidden}, VC_PARAM_LLAMA4_EXPERTS) ||
               vc_param_shape(s, "shared_expert.gate_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
               vc_param_shape(s, "shared_expert.up_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
               vc_param_shape(s, "shared_expert.down_proj.weight", 2, (int64_t[2]){c->hidden, c->shared}, VC_PARAM_LINEAR);
    if (s->ep > 1 && c->style == MOE_GRANITE) /* moe_ep.c's MoELayer: no ParallelExperts loop written there */
        return vc_fail(s, "ep", "expert parallelism is not modelled for style granitemoe (GraniteMoeParallelExperts' loop)");
    if (c->style == MOE_GRANITE) /* GraniteMoeMoE.__init__ (modular_granitemoe.py @ 94cb76e8): input_linear, output_linear
                                  * (GraniteMoeParallelExperts: weight [E, out, in]), router (GraniteMoeTopKGating: layer, an
                                  * nn.Linear(H, E) without bias) */
        return vc_param_shape(s, "input_linear.weight", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, 0) ||
               vc_param_shape(s, "output_linear.weight", 3, (int64_t[3]){c->E, c->hidden, c->inter}, 0) ||
               vc_param_shape(s, "router.layer.weight", 2, (int64_t[2]){c->E, c->hidden}, VC_PARAM_LINEAR);
    if (s->ep > 1) { /* one Megatron-Core expert-parallel rank's MoELayer (layers/moe_ep.c) */
        c->ep = s->ep;
        s->ep_used = true;
        vc_moe_ep e = moe_ep_of(c);
        return vc__moe_ep_setup(s, &e, c->act == 0, c->shared > 0,
                                c->style == MOE_MIXTRAL || (c->norm_topk && c->style != MOE_DEEPSEEK_V2));
    }
    if (c->impl == MOE_GROUPED_MM) {
        /* transformers 5: the router (MixtralTopKRouter / Qwen2MoeTopKRouter) and
         * the experts (MixtralExperts, Qwen2MoeExperts, Qwen3MoeExperts) hold
         * nn.Parameters, no nn.Linear: a format of nn.Linear modules (bitsandbytes'
         * _replace_with_bnb_linear) leaves them dense, the FP8 formats replace the experts */
        if (c->style == MOE_GEMMA4) /* Gemma4TextDecoderLayer's router (Gemma4TextRouter: proj nn.Linear(H, E), scale [H],
                                     * per_expert_scale [E]), experts (Gemma4TextExperts) and pre_feedforward_layernorm_2 */
            return vc_param_shape(s, "router.proj.weight", 2, (int64_t[2]){c->E, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param(s, "router.scale", c->hidden) || vc_param(s, "router.per_expert_scale", c->E) ||
                   vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->hidden, c->inter}, VC_PARAM_EXPERTS) ||
                   vc_param(s, "pre_feedforward_layernorm_2.weight", c->hidden);
        if (c->style == MOE_PHIMOE) /* PhimoeSparseMoeBlock.__init__ (modeling_phimoe.py @ 4a435530): router (PhimoeTopKRouter,
                                     * an nn.Linear(H, E) without bias), experts (PhimoeExperts: [E, 2I, H], [E, H, I]) */
            return vc_param_shape(s, "router.weight", 2, (int64_t[2]){c->E, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->hidden, c->inter}, VC_PARAM_EXPERTS);
        if (c->style == MOE_MINIMAX) /* MiniMaxM2SparseMoeBlock.__init__ (modeling_minimax_m2.py @ 0205eec1): gate
                                      * (MiniMaxM2TopKRouter: weight, an nn.Parameter), experts (MiniMaxM2Experts: gate_up_proj
                                      * [E, 2I, H], down_proj [E, H, I]), e_score_correction_bias (nn.Buffer(torch.zeros(E)),
                                      * persistent, outside _keep_in_fp32_modules: the model's dtype) */
            return vc_param_shape(s, "gate.weight", 2, (int64_t[2]){c->E, c->hidden}, c->router_f32 ? VC_PARAM_F32 : 0) ||
                   vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->hidden, c->inter}, VC_PARAM_EXPERTS) ||
                   vc_buffer(s, "e_score_correction_bias", c->E, c->router_f32 ? VC_DT_F32 : VC_DT_FLOAT);
        if (c->style == MOE_LFM2) /* Lfm2MoeSparseMoeBlock.__init__ (modular_lfm2_moe.py @ 0c67e26d): gate (nn.Linear(H, E),
                                   * no bias), experts (Lfm2MoeExperts = Qwen2MoeExperts: [E, 2I, H], [E, H, I]),
                                   * expert_bias (register_buffer(torch.zeros(E, dtype=torch.float32)) under
                                   * use_expert_bias, else None) */
            return vc_param_shape(s, "gate.weight", 2, (int64_t[2]){c->E, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->hidden, c->inter}, VC_PARAM_EXPERTS) ||
                   (c->expert_bias && vc_buffer(s, "expert_bias", c->E, VC_DT_F32));
        if (c->style == MOE_GPT_OSS) /* GptOssMLP: router (GptOssTopKRouter: weight, bias), experts (GptOssExperts,
                                      * is_transposed: gate_up_proj [E, H, 2I], down_proj [E, I, H], and biases) */
            return vc_param_shape(s, "router.weight", 2, (int64_t[2]){c->E, c->hidden}, 0) ||
                   vc_param_shape(s, "router.bias", 1, (int64_t[1]){c->E}, 0) ||
                   vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, c->hidden, 2 * c->inter}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.gate_up_proj_bias", 2, (int64_t[2]){c->E, 2 * c->inter}, 0) ||
                   vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.down_proj_bias", 2, (int64_t[2]){c->E, c->hidden}, 0);
        /* DeepseekV3MoE.__init__: experts, gate, shared_experts. Every style's stacked experts are
         * VC_PARAM_EXPERTS: transformers' _replace_with_fp8_linear (integrations/finegrained_fp8.py
         * @0095b976) swaps a parameter whose name holds "gate_up_proj", or "down_proj" and "experts",
         * for FP8Expert whatever the model (MixtralExperts, Qwen2MoeExperts, Qwen3MoeExperts,
         * Qwen3NextExperts, DeepseekV3's), unless modules_to_not_convert names it */
        bool ds = c->style == MOE_DEEPSEEK, ds2 = c->style == MOE_DEEPSEEK_V2;
        if (c->style == MOE_ERNIE) /* Ernie4_5_MoeSparseMoeBlock.__init__ (modeling_ernie4_5_moe.py @ 0233e509): gate
                                    * (Ernie4_5_MoeTopKRouter: weight [E, H] float32, moe_statics.e_score_correction_bias
                                    * [1, E] float32 with requires_grad=False; both in _keep_in_fp32_modules_strict),
                                    * experts (Ernie4_5_MoeExperts: [E, 2I, H], [E, H, I]), shared_experts
                                    * (Ernie4_5_MoeMLP of moe_intermediate_size x moe_num_shared_experts) when any */
            return vc_param_shape(s, "gate.weight", 2, (int64_t[2]){c->E, c->hidden}, c->router_f32 ? VC_PARAM_F32 : 0) ||
                   vc_param_shape(s, "gate.moe_statics.e_score_correction_bias", 2, (int64_t[2]){1, c->E},
                                  (c->router_f32 ? VC_PARAM_F32 : 0) | VC_PARAM_FROZEN) ||
                   vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->hidden, c->inter}, VC_PARAM_EXPERTS) ||
                   (c->shared &&
                    (vc_param_shape(s, "shared_experts.gate_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
                     vc_param_shape(s, "shared_experts.up_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
                     vc_param_shape(s, "shared_experts.down_proj.weight", 2, (int64_t[2]){c->hidden, c->shared}, VC_PARAM_LINEAR)));
        if (c->style == MOE_HUNYUAN) /* HunYuanMoEV1Moe.__init__ (modeling_hunyuan_v1_moe.py @ 0233e509): gate
                                      * (HunYuanMoEV1Gate: wg = nn.Linear(H, E, bias=False, dtype=torch.float32)), experts
                                      * (HunYuanMoEV1Experts: [E, 2I, H], [E, H, I]), shared_mlp (HunYuanMoEV1MLP) */
            return vc_param_shape(s, "gate.wg.weight", 2, (int64_t[2]){c->E, c->hidden}, c->router_f32 ? VC_PARAM_F32 : 0) ||
                   vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->hidden, c->inter}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "shared_mlp.gate_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "shared_mlp.up_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "shared_mlp.down_proj.weight", 2, (int64_t[2]){c->hidden, c->shared}, VC_PARAM_LINEAR);
        if (ds2) /* DeepseekV2Moe.__init__: experts (DeepseekV2Experts, stacked), gate (nn.Linear, no bias),
                  * shared_experts (DeepseekV2MLP of moe_intermediate_size x n_shared_experts); no correction bias */
            return vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->hidden, c->inter}, VC_PARAM_EXPERTS) ||
                   vc_param_shape(s, "gate.weight", 2, (int64_t[2]){c->E, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "shared_experts.gate_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "shared_experts.up_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "shared_experts.down_proj.weight", 2, (int64_t[2]){c->hidden, c->shared}, VC_PARAM_LINEAR);
        if ((!ds && vc_param_shape(s, "gate.weight", 2, (int64_t[2]){c->E, c->hidden}, 0)) ||
            vc_param_shape(s, "experts.gate_up_proj", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, VC_PARAM_EXPERTS) ||
            vc_param_shape(s, "experts.down_proj", 3, (int64_t[3]){c->E, c->hidden, c->inter}, VC_PARAM_EXPERTS))
            return -1;
        if (ds) /* DeepseekV3TopkRouter: weight, and e_score_correction_bias a float32 buffer (not a parameter) */
            return vc_param_shape(s, "gate.weight", 2, (int64_t[2]){c->E, c->hidden}, 0) ||
                   vc_buffer(s, "gate.e_score_correction_bias", c->E, VC_DT_F32) ||
                   vc_param_shape(s, "shared_experts.gate_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "shared_experts.up_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
                   vc_param_shape(s, "shared_experts.down_proj.weight", 2, (int64_t[2]){c->hidden, c->shared}, VC_PARAM_LINEAR);
    } else if (per_expert_params(s, c))
        return -1;
    if (c->shared)
        return vc_param_shape(s, "shared_expert.gate_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
               vc_param_shape(s, "shared_expert.up_proj.weight", 2, (int64_t[2]){c->shared, c->hidden}, VC_PARAM_LINEAR) ||
               vc_param_shape(s, "shared_expert.down_proj.weight", 2, (int64_t[2]){c->hidden, c->shared}, VC_PARAM_LINEAR) ||
               vc_param_shape(s, "shared_expert_gate.weight", 2, (int64_t[2]){1, c->hidden}, VC_PARAM_LINEAR);
    return 0;
}

/* nn.Linear without bias on `rows` rows (a fixed count: the tokens routed to
 * one expert): mm saving x and the weight, as vc__op_linear does. */
static vc_t lin_rows(vc_build *b, vc_t x, vc_t w, vc_numel rows, int64_t out) { return vc__lin_rows(b, x, w, rows, out); }

/* mm of x [rows, in] and the parameter w0 as w (its autocast copy, or w0 itself). */
static vc_t mm_rows(vc_build *b, vc_t x, vc_t w, vc_t w0, vc_numel rows, int64_t out);

vc_t vc__lin_rows(vc_build *b, vc_t x, vc_t w, vc_numel rows, int64_t out)
{
    return mm_rows(b, vc__op_autocast(b, x), vc__op_autocast_weight(b, w), w, rows, out);
}

static vc_t mm_rows(vc_build *b, vc_t x, vc_t w, vc_t w0, vc_numel rows, int64_t out)
{
    vc_op *o = vc_op_begin(b, "mm");
    int ix = vc_op_in(o, x);
    int iw = vc_op_in(o, w);
    vc_op_weight_temps(o, w0, rows);
    vc_t y = vc_op_out(o, vc_n_scale(rows, out), vc_dt_of(b, x));
    vc_op_save_if(o, x, iw);
    vc_op_save_if(o, w, ix);
    vc_op_grad_view(o, iw);
    vc_op_gemm(o);
    vc_op_end(o);
    return y;
}

/* A gated MLP (MixtralBlockSparseTop2MLP / Qwen2MoeMLP) on rows x hidden; liger: a routed expert under --liger. */
static vc_t expert_mlp(vc_build *b, const moe_cfg *c, vc_t x, vc_numel rows, int64_t inter, vc_t wg, vc_t wu, vc_t wd,
                       bool liger)
{
    if (liger) {
        /* --liger at transformers 4.x: apply_liger_kernel_to_mixtral / _qwen3_moe (Liger-Kernel @ ead96b61,
         * monkey_patch.py l.858-862, l.1777-1781) rebind each expert's forward: LigerBlockSparseTop2MLP.forward
         * w2(LigerSiLUMulFunction.apply(w1(x), w3(x))) / LigerQwen3MoeSwiGLUMLP.forward (transformers/swiglu.py
         * l.37-38, l.119-120): both projections, then the Function (liger_silu_mul) */
        vc_t g = lin_rows(b, x, wg, rows, inter);
        vc_t u = lin_rows(b, x, wu, rows, inter);
        return lin_rows(b, liger_silu_mul(b, g, u, vc_numel_of(b, g), false), wd, rows, c->hidden);
    }
    vc_t g = lin_rows(b, x, wg, rows, inter);
    vc_t a = act_op(b, c->act, g);
    vc_t u = lin_rows(b, x, wu, rows, inter);
    vc_t h = vc__op_mul(b, a, u, vc_numel_of(b, a), false);
    return lin_rows(b, h, wd, rows, c->hidden);
}

/* The tokens each expert gets, T*k assignments in all: evenly spread
 * (T*k/E each, the remainder one more for the first experts) unless
 * moe_imbalance F > 1, which gives expert 0 (the busiest) min(T, ceil(F*T*k/E))
 * and spreads the rest evenly over the others. */
static int64_t moe_tokens(const moe_cfg *c, int64_t T, int64_t e)
{
    int64_t total = T * c->k, even = total / c->E;
    if (c->imbalance <= 1.0 || c->E == 1) return even + (e < total % c->E ? 1 : 0);
    double want = c->imbalance * (double)total / (double)c->E;
    int64_t busy = want >= (double)T ? T : (int64_t)want + ((double)(int64_t)want < want ? 1 : 0);
    busy = min64(busy, total);
    if (e == 0) return busy;
    int64_t rest = total - busy, n = c->E - 1;
    return rest / n + (e - 1 < rest % n ? 1 : 0);
}

/* Expert e's rows as a count the plan evaluates at each batch (issue 16):
 * spread evenly, moe_tokens gives floor(T k / E) plus one for the first
 * (T k mod E) experts, which is the number of assignments j in [0, T k)
 * with j mod E = e: floor((T k + E - 1 - e) / E), T = B x L, a floor count
 * (vc_n_floor) valid for every batch up to the token cap. Otherwise (a cap
 * reached, moe_imbalance > 1: ceil(F T k / E) in floating point) the count
 * at this batch, and the plan holds for the batches where it is that count
 * (past the cap: every batch; imbalance: this batch only). */
static vc_numel moe_rows(vc_build *b, const moe_cfg *c, int64_t L, int64_t tcap, int64_t e)
{
    int64_t B = vc_batch(b), Lk;
    bool capped = B > tcap / L;
    if (capped) vc_batch_range(b, tcap / L + 1, VC_BATCH_ANY);
    else vc_batch_range(b, 1, tcap / L);
    if (!capped && (c->imbalance <= 1.0 || c->E == 1) && c->E <= INT32_MAX && !__builtin_mul_overflow(L, c->k, &Lk))
        return vc_n_floor(Lk, c->E - 1 - e, (int32_t)c->E);
    if (!capped) vc_batch_dependent(b);
    return vc_n_fixed(moe_tokens(c, capped ? tcap : B * L, e));
}

/* An op with no gradient: n elements of dt from x, with a transient
 * of tn elements of tdt inside it (sort's values output, dropped). */
static vc_t nograd_tmp(vc_build *b, const char *name, vc_t x, vc_numel n, vc_dtype dt, vc_numel tn, vc_dtype tdt)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_in_nodiff(o, x);
    vc_t r = vc_op_out(o, n, dt);
    vc_op_ftemp(o, tn, tdt);
    vc_op_end(o);
    return r;
}

/* x[idx] along dim 0 (aten::index): rows x width of x's dtype, the indices
 * saved; backward scatters into zeros of x's size (index_put_ with
 * accumulate). */
static vc_t index_rows(vc_build *b, vc_t x, vc_t idx, vc_numel rows, int64_t width)
{
    vc_op *o = vc_op_begin(b, "index");
    vc_op_in(o, x);
    vc_op_in_nodiff(o, idx);
    vc_t y = vc_op_out(o, vc_n_scale(rows, width), vc_dt_of(b, x));
    vc_op_save(o, idx);
    vc_op_end(o);
    return y;
}

/* torch._grouped_mm(x.to(w.dtype), w.transpose(-2, -1), offs=offs): [S, out]
 * in the weight's dtype (not autocast-enabled: transformers casts the input
 * to the weight's dtype itself); backward (derivatives.yaml _grouped_mm)
 * saves each operand for the other's gradient (a frozen weight's input is not
 * kept), the weight's gradient a full [E, out, in] tensor
 * arriving through the transpose's view, as mm's through t(). */
static vc_t grouped_mm(vc_build *b, vc_t x, vc_t w, vc_t offs, vc_numel S, int64_t out)
{
    x = vc__op_cast(b, x, vc_dt_of(b, w));
    vc_op *o = vc_op_begin(b, "_grouped_mm");
    int ix = vc_op_in(o, x);
    int iw = vc_op_in(o, w);
    vc_op_in_nodiff(o, offs);
    vc_t y = vc_op_out(o, vc_n_scale(S, out), vc_dt_of(b, w));
    vc_op_save_if(o, x, iw);
    vc_op_save_if(o, w, ix);
    vc_op_grad_view(o, iw);
    vc_op_gemm(o);
    vc_op_end(o);
    return y;
}

/* torch.topk(x, k) recorded: the values (n of dt) and the int64 indices (*idx, n), the indices
 * saved for backward (TopkBackward0 scatters the values' gradient by them). */
static vc_t topk_op(vc_build *b, vc_t x, vc_numel n, vc_dtype dt, vc_t *idx)
{
    vc_op *o = vc_op_begin(b, "topk");
    vc_op_in(o, x);
    vc_t v = vc_op_out(o, n, dt);
    *idx = vc_op_out(o, n, VC_DT_I64);
    vc_op_save(o, *idx);
    vc_op_end(o);
    return v;
}

/* transformers 5's sparse MoE block with stacked experts, as its default
 * experts implementation runs it (huggingface/transformers
 * 8b584a67b474f3dfdedcdda7acb96a33dcc3b5e3; PreTrainedModel
 * .get_correct_experts_implementation: "grouped_mm" when none is requested
 * and _grouped_mm_can_dispatch):
 *  - MixtralSparseMoeBlock.forward: view(-1, H), `_, top_k_weights,
 *    top_k_index = self.gate(x)`, self.experts(x, top_k_index, top_k_weights);
 *    Qwen2MoeSparseMoeBlock: shared_expert(x) first, then the routed experts,
 *    sigmoid(shared_expert_gate(x)) * shared, expert_output += shared (in place);
 *  - MixtralTopKRouter.forward: F.linear(x, weight), softmax(logits.float()),
 *    topk, router_top_value /= sum (in place): float32 scores returned;
 *    Qwen2MoeTopKRouter (Qwen3MoeTopKRouter the same): softmax(dtype=float),
 *    topk, the division when norm_topk_prob, .to(router_logits.dtype);
 *  - integrations/moe.py grouped_mm_experts_forward: token_idx (arange,
 *    expand, reshape: a copy), hidden_states[token_idx], argsort(expert_ids),
 *    argsort(perm), expert_ids[perm], sample_weights[perm],
 *    selected_hidden_states[perm], histc of expert_ids_g.int() (CUDA), cumsum
 *    (int32 offsets), _grouped_linear (gate_up), _default_apply_gate
 *    (act_fn(gate) * up on chunk views), _grouped_linear (down), * the sorted
 *    weights (promoted to float32 with Mixtral's scores), [inv_perm],
 *    view(T, k, H).sum(dim=1), .to(hidden_states.dtype). Its locals live
 *    until it returns (held here, released after the cast).
 * The shapes are T x k rows whatever the routing: the experts' share of the
 * tokens (moe_imbalance) does not change what it allocates. CUDA's sort
 * scratch (cub) and grouped GEMM workspace are not modelled. */
/* The in-place top-k renormalisation of the routers, weights /= sum(-1,
 * keepdim=True) (+ 1e-20 in DeepSeek-V3's: the sum and a new denominator):
 * div_ saves its result and the divisor. */
static vc_t topk_renorm(vc_build *b, vc_t rw, vc_numel T, bool eps)
{
    vc_t sum = vc__op_mean(b, rw, T);
    if (eps) sum = scalar_op(b, "add", sum);
    vc_op *o = vc_op_begin(b, "div_");
    int ir = vc_op_in(o, rw);
    int is = vc_op_in(o, sum);
    vc_t r2 = vc_op_out_view(o, ir, vc_numel_of(b, rw), true);
    vc_op_save(o, r2);
    vc_op_save(o, sum);
    vc_op_grad(o, is, VC_GRAD_NEW_REDUCE);
    vc_op_end(o);
    return r2;
}

/* integrations/moe.py grouped_mm_experts_forward on x [T, H] with the
 * routing's top_k_index idx [S] (int64) and top_k_weights rw [S]; its
 * locals live until it returns. The stacked weights are parameters wgu, wd. */
static vc_t experts_grouped(vc_build *b, const moe_cfg *c, vc_t x, vc_t idx, vc_t rw, int wgu, int wd)
{
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, I = c->inter, E = c->E;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * c->k);
    vc_t ar = vc__op_new(b, "arange", T, VC_DT_I64);
    vc_t tok = vc__op_nograd(b, "reshape", ar, -1, S, VC_DT_I64); /* expand(-1, k).reshape(-1): a copy */
    vc_t sel = index_rows(b, x, tok, S, H);                    /* hidden_states[token_idx] */
    vc_t perm = nograd_tmp(b, "argsort", idx, S, VC_DT_I64, S, VC_DT_I64);
    vc_t inv = nograd_tmp(b, "argsort", perm, S, VC_DT_I64, S, VC_DT_I64);
    vc_t eg = vc__op_nograd(b, "index", idx, perm, S, VC_DT_I64); /* expert_ids[perm] */
    vc_t swg = index_rows(b, rw, perm, S, 1);                  /* sample_weights[perm] */
    vc_t selg = index_rows(b, sel, perm, S, H);                /* selected_hidden_states[perm] */
    vc_t hin = vc__op_nograd(b, "_to_copy", eg, -1, S, VC_DT_I32); /* expert_ids_g.int() */
    vc_t cnt = vc__op_nograd(b, "histc", hin, -1, vc_n_fixed(E), VC_DT_I32);
    vc_t offs = vc__op_nograd(b, "cumsum", cnt, -1, vc_n_fixed(E), VC_DT_I32);
    const vc_t locals[] = {tok, sel, perm, inv, eg, swg, selg, hin, cnt, offs};
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) vc_hold(b, locals[i]);
    vc_t gu = grouped_mm(b, selg, vc_weight(b, wgu), offs, S, 2 * I);
    vc_hold(b, gu);
    vc_numel SI = vc_n_scale(S, I);
    /* gate, up = gate_up_out.chunk(2, dim=-1): split's two views; its backward
     * (SplitBackward0: split_backward, at::cat of the two gradients) makes
     * the [S, 2I] gradient anew */
    vc_op *o = vc_op_begin(b, "split");
    int igu = vc_op_in(o, gu);
    vc_t g = vc_op_out_view(o, igu, SI, false), u = vc_op_out_view(o, igu, SI, false);
    vc_op_end(o);
    vc_t h = vc__op_mul(b, act_op(b, c->act, g), u, SI, false);
    vc_hold(b, h);
    vc_t og = grouped_mm(b, h, vc_weight(b, wd), offs, S, H);
    vc_dtype pdt = vc_dt_of(b, og) == VC_DT_F32 || vc_dt_of(b, swg) == VC_DT_F32 ? VC_DT_F32 : vc_dt_of(b, og);
    og = vc__op_mul_dt(b, og, swg, vc_numel_of(b, og), pdt); /* * sample_weights_g.unsqueeze(-1) */
    vc_hold(b, og);
    vc_t ops = index_rows(b, og, inv, S, H); /* out_per_sample_g[inv_perm] */
    vc_hold(b, ops);
    vc_t fin = vc__op_mean(b, ops, vc_n_scale(T, H)); /* .view(T, k, H).sum(dim=1) */
    vc_hold(b, fin);
    vc_t out = vc__op_cast(b, fin, vc_dt_of(b, x)); /* .to(hidden_states.dtype) */
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) vc_release(b, locals[i]);
    vc_release(b, gu);
    vc_release(b, h);
    vc_release(b, og);
    vc_release(b, ops);
    vc_release(b, fin);
    return out;
}

/* --liger at transformers >= 5: apply_liger_kernel_to_mixtral / _qwen3_moe bind LigerExperts.forward to the stacked
 * experts (Liger-Kernel @ ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c, monkey_patch.py l.862-863 / l.1777-1778,
 * _patch_swiglu_module l.136-138; transformers/swiglu.py LigerExperts.forward l.67-77): x = hidden_states.view(-1,
 * H), top_k_index.view(-1, K).to(torch.int32) (an int32 [T, K] copy, a local until it returns), top_k_weights.view
 * (no copy), LigerFusedMoEFunction.apply(x, gate_up_proj, down_proj, index, weights) (ops/fused_moe.py l.160-434;
 * ensure_contiguous copies nothing here: every argument is contiguous). Its forward, in order:
 *   compute_routing_metadata (l.35-133, under no_grad): tile_expert_counts int32 [E, n_tiles] (l.64; n_tiles =
 *     cdiv(T, max(1, 1024 // next_pow2(K))), l.58-61) and expert_tile_offset int32 [E + 1] (l.81), its locals;
 *     expert_token_count int32 [E] (l.77), bound to forward's `_` to its end; expert_start_idx int32 [E + 1]
 *     (l.80), tile_row_start / tile_expert int32 [num_m_tiles] (l.98-99), s_scatter_idx / s_reverse_scatter_idx /
 *     x_gather_idx int32 [TK] (l.102-104), all saved (l.258-270). num_m_tiles = sum over the experts of
 *     cdiv(tokens, 64) (BLOCK_M_TOKEN, l.27) follows the routing: at most floor((TK + 63 E) / 64), taken here;
 *   pre_act [TK, 2I] (l.206, saved), post_act [TK, I] (l.207) and Y [TK, H] (l.233), locals to its return, all of
 *     x's dtype; topk_weights_flat = top_k_weights.flatten().contiguous() (l.255, a view, saved); out [T, H]
 *     (_token_aggregation l.138), the output. x and both weights are saved too.
 * Its backward (l.285-434; ctx.set_materialize_grads(False)): d_pre_act [TK, 2I] (l.312), weighted_act [TK, I]
 *   (l.313), dS zeros [TK] (l.314, the weights' gradient, dO's dtype), ddown_proj zeros_like(down_proj) (l.347),
 *   dx_expanded [TK, H] (l.371), dx zeros [T, H] (l.394), dgate_up_proj zeros_like(gate_up_proj) (l.411): all
 *   locals alive to its return, the weights' gradients made whether or not they require grad (frozen experts under
 *   LoRA: returned and dropped by the engine). The engine casts dS to the weights' float32 (Mixtral's router scores)
 *   in validate_outputs. */
static vc_t liger_fused_moe(vc_build *b, const moe_cfg *c, vc_t x, vc_t idx, vc_t rw, int wgu, int wd)
{
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, I = c->inter, E = c->E, K = c->k, kp = 1;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * K);
    while (kp < K) kp *= 2;
    const int64_t tpb = 1024 / kp > 1 ? 1024 / kp : 1; /* TOKENS_PER_BLOCK */
    const vc_dtype xdt = vc_dt_of(b, x);
    vc_t i32 = vc__op_nograd(b, "_to_copy", idx, -1, S, VC_DT_I32); /* top_k_index...to(torch.int32) */
    vc_t w1 = vc_weight(b, wgu), w2 = vc_weight(b, wd);
    vc_op *o = vc_op_begin(b, "LigerFusedMoEFunction");
    vc_op_in(o, x);
    vc_op_in(o, w1);
    vc_op_in(o, w2);
    vc_op_in_nodiff(o, i32);
    vc_op_in(o, rw);
    vc_t out = vc_op_out(o, vc_n_scale(T, H), xdt);
    vc_op_save(o, x);
    vc_op_save(o, w1);
    vc_op_save(o, w2);
    vc_op_save(o, rw);
    vc_op_extra(o, vc_n_fixed(E + 1), VC_DT_I32); /* expert_start_idx */
    for (int i = 0; i < 3; i++) vc_op_extra(o, S, VC_DT_I32); /* x_gather_idx, s_scatter_idx, s_reverse_scatter_idx */
    for (int i = 0; i < 2; i++) vc_op_extra(o, vc_n_floor(L * K, 63 * E, 64), VC_DT_I32); /* tile_row_start, tile_expert */
    vc_op_extra(o, vc_n_scale(S, 2 * I), xdt); /* pre_act */
    int cnt = vc_op_ftemp_keep(o, vc_n_scale(vc_n_floor(L, tpb - 1, (int32_t)tpb), E), VC_DT_I32); /* tile_expert_counts */
    vc_op_ftemp_keep(o, vc_n_fixed(E), VC_DT_I32);                 /* expert_token_count (`_`) */
    int off = vc_op_ftemp_keep(o, vc_n_fixed(E + 1), VC_DT_I32);   /* expert_tile_offset */
    vc_op_ftemp_free(o, cnt);
    vc_op_ftemp_free(o, off);
    vc_op_ftemp_keep(o, vc_n_scale(S, I), xdt); /* post_act */
    vc_op_ftemp_keep(o, vc_n_scale(S, H), xdt); /* Y */
    vc_op_btemp_held(o, vc_n_scale(S, 2 * I), xdt); /* d_pre_act */
    vc_op_btemp_held(o, vc_n_scale(S, I), xdt);     /* weighted_act */
    if (vc_dt_of(b, rw) != xdt) vc_op_btemp_held(o, S, xdt); /* dS before validate_outputs' cast */
    vc_op_btemp_held(o, vc_n_scale(S, H), xdt);     /* dx_expanded */
    const vc_t ws[2] = {w2, w1};
    const int64_t wn[2] = {E * H * I, E * 2 * I * H};
    for (int i = 0; i < 2; i++) /* a frozen weight's zeros_like: made and dropped */
        if (!vc_requires_grad(b, ws[i])) vc_op_btemp_held(o, vc_n_fixed(wn[i]), vc_dt_of(b, ws[i]));
    vc_op_end(o);
    return out;
}

/* x + y in the promoted dtype dt (a float32 buffer added to 16-bit scores). */
static vc_t add_b(vc_build *b, vc_t x, vc_t y, vc_numel out, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, "add");
    int ix = vc_op_in(o, x);
    int iy = vc_op_in(o, y);
    vc_t r = vc_op_out(o, out, dt);
    vc_op_grad(o, ix, vc_n_same(vc_numel_of(b, x), out) ? VC_GRAD_PASS : VC_GRAD_REDUCE);
    vc_op_grad(o, iy, vc_n_same(vc_numel_of(b, y), out) ? VC_GRAD_PASS : VC_GRAD_REDUCE);
    vc_op_end(o);
    return r;
}

/* torch.gather(src, 1, idx) of the [T, k] chosen rows' scores: a new [S] tensor of dt, the index saved for backward */
static vc_t gather_k(vc_build *b, vc_t src, vc_t idx, vc_numel S, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, "gather");
    vc_op_in(o, src);
    vc_op_in_nodiff(o, idx);
    vc_t r = vc_op_out(o, S, dt);
    vc_op_save(o, idx);
    vc_op_end(o);
    return r;
}

/* rw / den out of place (den [T, 1]): a new [S] tensor of dt saving both, den's gradient reduced to [T, 1] */
static vc_t div_rows(vc_build *b, vc_t rw, vc_t den, vc_numel S, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, "div");
    vc_op_in(o, rw);
    int id = vc_op_in(o, den);
    vc_t q = vc_op_out(o, S, dt);
    vc_op_save(o, rw);
    vc_op_save(o, den);
    vc_op_grad(o, id, VC_GRAD_NEW_REDUCE); /* -grad * self / other^2, output-sized, reduced to [T, 1] */
    vc_op_end(o);
    return q;
}

/* The end of DeepseekV3MoE.forward and DeepseekV2Moe.forward: the routing's weights and indices
 * (held, as the block's locals) through the stacked experts, then hidden + shared_experts(residuals)
 * (parameters 3-5), the block's router logits, indices and weights released when it returns. */
static void deepseek_experts(vc_build *b, const moe_cfg *c, vc_t x, vc_numel T, vc_t idx, vc_t rw, vc_t logits)
{
    vc_hold(b, rw);
    vc_hold(b, idx);
    vc_t out = experts_grouped(b, c, x, idx, rw, 0, 1);
    vc_hold(b, out);
    vc_t se = expert_mlp(b, c, x, T, c->shared, vc_weight(b, 3), vc_weight(b, 4), vc_weight(b, 5), false);
    vc_release(b, out);
    vc_release(b, rw);
    vc_release(b, idx);
    vc_release(b, logits);
    vc_set_output(b, vc__op_add(b, out, se, vc_n_scale(T, c->hidden), false));
}

/* DeepseekV3MoE / Glm4MoeMoE (transformers 5; Glm4Moe's modular code is
 * DeepSeek-V3's: models/glm4_moe/modeling_glm4_moe.py at
 * 000c33fdfde12e1ffafbfcdb3c926df5727a00b6): the router
 * (Glm4MoeTopkRouter.forward: F.linear(hidden.type(float32),
 * weight.type(float32))), route_tokens_to_experts (sigmoid; +
 * e_score_correction_bias, a float32 buffer; the group scores: view(T, G,
 * E/G).topk(2)[0].sum(-1); topk(topk_group) of them; zeros_like + scatter_;
 * the mask expanded and reshaped, ~.bool(); masked_fill; topk(k)[1];
 * sigmoid scores gathered; the renormalisation with + 1e-20 when
 * norm_topk_prob; * routed_scaling_factor), the stacked experts
 * (DeepseekV3NaiveMoe, @use_experts_implementation: grouped_mm), then
 * hidden + shared_experts(residuals) (an MLP of moe_intermediate_size x
 * n_shared_experts, no gate). The choice's scores only pick indices: their
 * autograd graph dies with route_tokens_to_experts' locals, which live until
 * it returns, as the block's (the router logits, the indices and weights) live
 * until the block returns. Parameters: experts.gate_up_proj 0, down_proj 1,
 * gate.weight 2, shared_experts 3-5; buffer 0 the bias. */
static void moe_deepseek_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], E = c->E, G = c->n_group;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * c->k), TE = vc_n_sample(L * E);
    vc_t x = vc_input(b, 0);
    vc_t logits = lin_rows(b, vc__op_cast(b, x, VC_DT_F32), vc__op_cast(b, vc_weight(b, 2), VC_DT_F32), T, E);
    vc_hold(b, logits);
    vc_dtype rdt = vc_dt_of(b, logits);
    vc_t sig = vc__op_unary(b, "sigmoid", logits, VC_SAVE_OUT, false);
    vc_t choice = add_b(b, sig, vc_buf(b, 0), TE, VC_DT_F32); /* + e_score_correction_bias */
    vc_t gv = nograd_tmp(b, "topk", choice, vc_n_sample(L * G * 2), VC_DT_F32, vc_n_sample(L * G * 2), VC_DT_I64);
    vc_t gs = vc__op_nograd(b, "sum", gv, -1, vc_n_sample(L * G), VC_DT_F32); /* group_scores */
    vc_t gidx = nograd_tmp(b, "topk", gs, vc_n_sample(L * c->topk_group), VC_DT_I64, vc_n_sample(L * c->topk_group),
                           VC_DT_F32);
    vc_t gmask = vc__op_new(b, "zeros_like", vc_n_sample(L * G), VC_DT_F32); /* scatter_ writes into it */
    vc_t smask = vc__op_nograd(b, "reshape", gmask, -1, TE, VC_DT_F32);      /* expand(...).reshape: a copy */
    vc_t nb = vc__op_nograd(b, "bitwise_not", vc__op_nograd(b, "_to_copy", smask, -1, TE, VC_DT_BOOL), -1, TE, VC_DT_BOOL);
    vc_t sfc = vc__op_nograd(b, "masked_fill", choice, nb, TE, VC_DT_F32);    /* scores_for_choice */
    vc_t idx = nograd_tmp(b, "topk", sfc, S, VC_DT_I64, S, VC_DT_F32);     /* topk(...)[1] */
    vc_op *o = vc_op_begin(b, "gather"); /* topk_weights = router_logits.gather(1, topk_indices) */
    vc_op_in(o, sig);
    vc_op_in_nodiff(o, idx);
    vc_t rw = vc_op_out(o, S, vc_dt_of(b, sig));
    vc_op_save(o, idx);
    vc_op_end(o);
    const vc_t rlocals[] = {sig, choice, gs, gidx, gmask, smask, nb, sfc};
    for (size_t i = 0; i < sizeof rlocals / sizeof *rlocals; i++) vc_hold(b, rlocals[i]);
    if (c->norm_topk) rw = topk_renorm(b, rw, T, true);
    rw = scalar_op(b, "mul", rw); /* * routed_scaling_factor */
    for (size_t i = 0; i < sizeof rlocals / sizeof *rlocals; i++) vc_release(b, rlocals[i]);
    (void)rdt;
    deepseek_experts(b, c, x, T, idx, rw, logits);
}

/* DeepseekV2Moe.forward (transformers 5, models/deepseek_v2/modeling_deepseek_v2.py at
 * 0233e509531ace915c8241b4c16c8032a583279c):
 *  - router_logits = F.linear(hidden_states.type(float32), gate.weight.type(float32)) [T, E], the
 *    forward's local until it returns;
 *  - route_tokens_to_experts: router_logits.softmax(dim=-1, dtype=float32) (a new tensor, saved by
 *    its backward); topk_method "greedy": topk(k, sorted=False); "group_limited_greedy": the group
 *    scores view(T, n_group, -1).max(dim=-1).values (MaxBackward0 keeps the int64 indices),
 *    topk(topk_group)[1], zeros_like + scatter_, the mask unsqueezed, expanded and reshaped (a
 *    copy), ~score_mask.bool(), masked_fill(mask, 0.0) (its backward keeps the mask),
 *    topk(k, sorted=False): the weights carry the softmax's gradient; topk_weight *
 *    routed_scaling_factor. norm_topk_prob is not read: no renormalisation. Its locals live until
 *    it returns;
 *  - DeepseekV2Experts under @use_experts_implementation: grouped_mm_experts_forward (experts_grouped),
 *    then hidden_states + self.shared_experts(residuals) (DeepseekV2MLP, moe_intermediate_size x
 *    n_shared_experts).
 * Parameters: experts.gate_up_proj 0, down_proj 1, gate.weight 2, shared_experts 3-5. */
static void moe_deepseek_v2_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], E = c->E, G = c->n_group;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * c->k), TE = vc_n_sample(L * E);
    vc_t x = vc_input(b, 0);
    vc_t logits = lin_rows(b, vc__op_cast(b, x, VC_DT_F32), vc__op_cast(b, vc_weight(b, 2), VC_DT_F32), T, E);
    vc_hold(b, logits);
    vc_t sm = vc__op_unary(b, "_softmax", logits, VC_SAVE_OUT, false);
    vc_t idx, rw, loc[7];
    size_t nloc = 0;
    loc[nloc++] = sm;
    if (c->topk_method == TOPK_GREEDY) {
        rw = topk_op(b, sm, S, VC_DT_F32, &idx);
    } else {
        vc_t gmax;
        vc_t gs = topk_op(b, sm, vc_n_sample(L * G), VC_DT_F32, &gmax); /* max(dim=-1): values and indices */
        vc_t gidx = nograd_tmp(b, "topk", gs, vc_n_sample(L * c->topk_group), VC_DT_I64, vc_n_sample(L * c->topk_group),
                               VC_DT_F32);
        vc_t gmask = vc__op_new(b, "zeros_like", vc_n_sample(L * G), VC_DT_F32); /* scatter_ writes into it */
        vc_t smask = vc__op_nograd(b, "reshape", gmask, -1, TE, VC_DT_F32);      /* expand(...).reshape: a copy */
        vc_t nb = vc__op_nograd(b, "bitwise_not", vc__op_nograd(b, "_to_copy", smask, -1, TE, VC_DT_BOOL), -1, TE, VC_DT_BOOL);
        vc_op *o = vc_op_begin(b, "masked_fill"); /* tmp_scores: the softmax's gradient flows through it */
        vc_op_in(o, sm);
        vc_op_in_nodiff(o, nb);
        vc_t tmp = vc_op_out(o, TE, VC_DT_F32);
        vc_op_save(o, nb);
        vc_op_end(o);
        rw = topk_op(b, tmp, S, VC_DT_F32, &idx);
        loc[nloc++] = gs;
        loc[nloc++] = gidx;
        loc[nloc++] = gmask;
        loc[nloc++] = smask;
        loc[nloc++] = nb;
        loc[nloc++] = tmp;
    }
    for (size_t i = 0; i < nloc; i++) vc_hold(b, loc[i]);
    rw = scalar_op(b, "mul", rw); /* * routed_scaling_factor */
    for (size_t i = 0; i < nloc; i++) vc_release(b, loc[i]);
    deepseek_experts(b, c, x, T, idx, rw, logits);
}

/* GptOssMLP.forward (modular_gpt_oss.py, transformers 5) with GptOssExperts under
 * @use_experts_implementation(is_transposed=True, has_bias=True) run by
 * grouped_mm_experts_forward (integrations/moe.py @8b584a67):
 *  - GptOssTopKRouter.forward: F.linear(x, weight, bias) [T, E] (returned and bound to
 *    `_` until the block returns), topk(logits, k) (values, int64 indices), softmax(values,
 *    dim=1, dtype=values.dtype): the scores stay in the logits' dtype;
 *  - grouped_mm_experts_forward as for Mixtral, with has_bias: gate_up_proj_bias[expert_ids_g]
 *    [S, 2I] and down_proj_bias[expert_ids_g] [S, H] made before the offsets and held to
 *    the end; _grouped_linear adds each to the grouped_mm output (a new tensor);
 *  - GptOssExperts._apply_gate: gate_up[..., ::2] and [..., 1::2] (views), gate.clamp(max=limit)
 *    and up.clamp(-limit, limit) (each saves its input, the gate_up storage), gate * alpha,
 *    sigmoid (saves its result), glu = gate * sigmoid (saves both), up + 1, (up + 1) * glu
 *    (saves both).
 * Parameters: router.weight 0, router.bias 1, experts.gate_up_proj 2, gate_up_proj_bias 3,
 * down_proj 4, down_proj_bias 5. */
static void moe_gptoss_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, I = c->inter, E = c->E;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * c->k), SI = vc_n_scale(S, I);
    vc_t x = vc_input(b, 0);
    vc_t logits = vc__op_linear(b, x, vc_weight(b, 0), vc_weight(b, 1), L, H, E);
    vc_hold(b, logits);
    vc_t idx;
    vc_t top = topk_op(b, logits, S, vc_dt_of(b, logits), &idx);
    vc_t rw = vc__op_softmax(b, top, false);
    vc_hold(b, rw);
    vc_hold(b, idx);
    /* grouped_mm_experts_forward */
    vc_t ar = vc__op_new(b, "arange", T, VC_DT_I64);
    vc_t tok = vc__op_nograd(b, "reshape", ar, -1, S, VC_DT_I64);
    vc_t sel = index_rows(b, x, tok, S, H);
    vc_t perm = nograd_tmp(b, "argsort", idx, S, VC_DT_I64, S, VC_DT_I64);
    vc_t inv = nograd_tmp(b, "argsort", perm, S, VC_DT_I64, S, VC_DT_I64);
    vc_t eg = vc__op_nograd(b, "index", idx, perm, S, VC_DT_I64);
    vc_t swg = index_rows(b, rw, perm, S, 1);
    vc_t selg = index_rows(b, sel, perm, S, H);
    vc_t bgu = index_rows(b, vc_weight(b, 3), eg, S, 2 * I); /* gate_up_proj_bias[expert_ids_g] */
    vc_t bd = index_rows(b, vc_weight(b, 5), eg, S, H);      /* down_proj_bias[expert_ids_g] */
    vc_t hin = vc__op_nograd(b, "_to_copy", eg, -1, S, VC_DT_I32);
    vc_t cnt = vc__op_nograd(b, "histc", hin, -1, vc_n_fixed(E), VC_DT_I32);
    vc_t offs = vc__op_nograd(b, "cumsum", cnt, -1, vc_n_fixed(E), VC_DT_I32);
    const vc_t locals[] = {tok, sel, perm, inv, eg, swg, selg, bgu, bd, hin, cnt, offs};
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) vc_hold(b, locals[i]);
    vc_t gu = vc__op_add(b, grouped_mm(b, selg, vc_weight(b, 2), offs, S, 2 * I), bgu, vc_n_scale(S, 2 * I), false);
    vc_hold(b, gu);
    /* _apply_gate */
    vc_dtype dt = vc_dt_of(b, gu);
    vc_t g = vc__op_view(b, gu, SI, false), u = vc__op_view(b, gu, SI, false);
    vc_t gc = vc__op_unary(b, "clamp", g, VC_SAVE_IN, false);
    vc_t uc = vc__op_unary(b, "clamp", u, VC_SAVE_IN, false);
    vc_t ga = vc__op_fresh(b, "mul", gc, SI); /* gate * alpha */
    vc_t sg = vc__op_unary(b, "sigmoid", ga, VC_SAVE_OUT, false);
    vc_t glu = vc__op_mul_dt(b, gc, sg, SI, dt);
    /* gate, up and glu are _apply_gate's locals: alive until it returns */
    vc_hold(b, gc);
    vc_hold(b, uc);
    vc_hold(b, glu);
    vc_t u1 = vc__op_fresh(b, "add", uc, SI); /* up + 1 */
    vc_t h = vc__op_mul_dt(b, u1, glu, SI, dt);
    vc_hold(b, h);
    vc_release(b, gc);
    vc_release(b, uc);
    vc_release(b, glu);
    vc_t og = vc__op_add(b, grouped_mm(b, h, vc_weight(b, 4), offs, S, H), bd, vc_n_scale(S, H), false);
    vc_dtype pdt = vc_dt_of(b, og) == VC_DT_F32 || vc_dt_of(b, swg) == VC_DT_F32 ? VC_DT_F32 : vc_dt_of(b, og);
    og = vc__op_mul_dt(b, og, swg, vc_numel_of(b, og), pdt);
    vc_hold(b, og);
    vc_t ops = index_rows(b, og, inv, S, H);
    vc_hold(b, ops);
    vc_t fin = vc__op_mean(b, ops, vc_n_scale(T, H));
    vc_hold(b, fin);
    vc_t out = vc__op_cast(b, fin, vc_dt_of(b, x));
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) vc_release(b, locals[i]);
    const vc_t rest[] = {gu, h, og, ops, fin, rw, idx, logits};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) vc_release(b, rest[i]);
    vc_set_output(b, out);
}

/* The MXFP4 experts with the Triton kernels (transformers integrations/mxfp4.py @0189b1d0):
 * mlp_forward replaces GptOssMLP.forward: router_logits = F.linear(x, router.weight,
 * router.bias) (returned), triton_kernels routing(router_logits, top_k) -> RoutingData
 * (gate_scal [S]) and the gather / scatter indices (two int32 [S] tensors shared by both,
 * the expert histogram [E]); Mxfp4GptOssExperts.forward: matmul_ogs(x, gate_up_proj,
 * gate_up_proj_bias.to(float32), gather_indx, fused swiglu) -> intermediate_cache1 [S, I],
 * matmul_ogs(intermediate_cache1, down_proj, down_proj_bias.to(float32), scatter_indx,
 * gammas=gate_scal) -> [T, H]. Inference only (Mxfp4HfQuantizer.is_trainable is False); the
 * kernels' own scratch is not modelled. */
static void moe_gptoss_mxfp4_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, I = c->inter, E = c->E;
    vc_numel S = vc_n_sample(L * c->k);
    vc_t x = vc_input(b, 0);
    vc_dtype dt = vc_dt_of(b, x);
    vc_t logits = vc__op_linear(b, x, vc_weight(b, 0), vc_weight(b, 1), L, H, E);
    vc_hold(b, logits);
    vc_t gs = vc__op_nograd(b, "routing", logits, -1, S, vc_dt_of(b, logits));
    vc_t ti = vc__op_nograd(b, "routing", logits, -1, S, VC_DT_I32);
    vc_t gi = vc__op_nograd(b, "routing", logits, -1, S, VC_DT_I32);
    vc_t hist = vc__op_nograd(b, "routing", logits, -1, vc_n_fixed(E), VC_DT_I32);
    const vc_t rt[] = {gs, ti, gi, hist};
    for (size_t i = 0; i < sizeof rt / sizeof *rt; i++) vc_hold(b, rt[i]);
    vc_t bgu = vc__op_cast(b, vc_weight(b, 3), VC_DT_F32);
    vc_t i1 = vc__op_nograd(b, "matmul_ogs", x, bgu, vc_n_scale(S, I), dt);
    vc_hold(b, i1);
    vc_t bd = vc__op_cast(b, vc_weight(b, 5), VC_DT_F32);
    vc_t out = vc__op_nograd(b, "matmul_ogs", i1, bd, vc_n_sample(L * H), dt);
    vc_release(b, i1);
    for (size_t i = 0; i < sizeof rt / sizeof *rt; i++) vc_release(b, rt[i]);
    vc_release(b, logits);
    vc_set_output(b, out);
}

/* Gemma4TextDecoderLayer.forward's MoE branch (modeling_gemma4.py @ 0246b4f3) on its input, the residual
 * (hidden_states_flat = residual.reshape(-1, H), a view), up to the experts' output:
 *  - Gemma4TextRouter.forward: norm (Gemma4RMSNorm without weight), * self.scale, * scalar_root_size,
 *    proj (nn.Linear(H, E)), softmax(dim=-1) in the activations' dtype, topk, top_k_weights /= sum
 *    (in place), * per_expert_scale[top_k_index]; it returns router_probabilities, top_k_weights,
 *    top_k_index, which the decoder layer binds (`_, top_k_weights, top_k_index = self.router(...)`):
 *    locals until the decoder layer returns;
 *  - pre_feedforward_layernorm_2(hidden_states_flat) (Gemma4RMSNorm), then Gemma4TextExperts under
 *    @use_experts_implementation: grouped_mm_experts_forward as for the other styles (experts_grouped).
 * post_feedforward_layernorm_2 and the sum with the dense MLP's branch follow as their own layers. */
static void moe_gemma4_emit(vc_build *b, const moe_cfg *c)
{
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, E = c->E;
    const vc_numel T = vc_n_sample(L), TH = vc_n_sample(L * H), S = vc_n_sample(L * c->k);
    vc_t x = vc_input(b, 0);
    vc_t h = hf_rmsnorm(b, x, -1, T, 3);                        /* self.norm(hidden_states) */
    h = vc__op_mul_dt(b, h, vc_weight(b, 1), TH, vc_dt_of(b, h)); /* * self.scale */
    h = vc__op_fresh(b, "mul", h, TH);                           /* * self.scalar_root_size */
    vc_hold(b, h); /* the router's hidden_states, a local until it returns */
    vc_t scores = lin_rows(b, h, vc_weight(b, 0), T, E);         /* expert_scores = self.proj(hidden_states) */
    vc_t probs = vc__op_unary(b, "_softmax", scores, VC_SAVE_OUT, false);
    vc_t idx;
    vc_t rw = topk_op(b, probs, S, vc_dt_of(b, probs), &idx);
    rw = topk_renorm(b, rw, T, false);                          /* top_k_weights /= sum(-1, keepdim=True) */
    vc_t pes = index_rows(b, vc_weight(b, 2), idx, S, 1);       /* self.per_expert_scale[top_k_index] */
    rw = vc__op_mul_dt(b, rw, pes, S, vc_dt_of(b, rw));
    vc_release(b, h);
    vc_keep_through_block(b, probs); /* the decoder layer's `_`, top_k_weights, top_k_index */
    vc_keep_through_block(b, rw);
    vc_keep_through_block(b, idx);
    vc_t xn = hf_rmsnorm(b, x, vc_weight(b, 5), T, 3);          /* pre_feedforward_layernorm_2(hidden_states_flat) */
    vc_hold(b, xn); /* hidden_states_2, the experts' argument: rebound to their result when they return */
    vc_t out = experts_grouped(b, c, xn, idx, rw, 3, 4);
    vc_release(b, xn);
    vc_set_output(b, out);
}

/* MiniMaxM2SparseMoeBlock.forward (models/minimax_m2/modeling_minimax_m2.py @ 0205eec1d869591488aa74eda3f2da23610c28d9,
 * transformers 5): view(-1, H), `_, top_k_weights, top_k_index = self.gate(hidden_states, self.e_score_correction_bias)`
 * (the three bound until the block returns), self.experts(...) under @use_experts_implementation
 * (grouped_mm_experts_forward: experts_grouped), reshape. MiniMaxM2TopKRouter.forward:
 * router_logits = F.linear(hidden_states.to(weight.dtype), weight) [T, E]; routing_weights =
 * sigmoid(router_logits.float()) (the float32 copy a temporary, sigmoid saving its result); scores_for_choice =
 * routing_weights + e_score_correction_bias (float32); `_, top_k_index = torch.topk(scores_for_choice, top_k)` (the
 * values bound to `_` until it returns); top_k_weights = routing_weights.gather(1, top_k_index); top_k_weights /=
 * sum(-1, keepdim=True) (in place, no epsilon, no scaling factor). Parameters: gate.weight 0, experts.gate_up_proj 1,
 * down_proj 2; buffer 0 the bias. */
static void moe_minimax_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], E = c->E;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * c->k), TE = vc_n_sample(L * E);
    vc_t x = vc_input(b, 0);
    /* vLLM: self.gate(hidden_states.to(torch.float32)), a float32 weight */
    vc_t logits = lin_rows(b, c->router_f32 ? vc__op_cast(b, x, VC_DT_F32) : x, vc_weight(b, 0), T, E);
    vc_hold(b, logits); /* the block's `_` */
    vc_t sig = vc__op_unary(b, "sigmoid", vc__op_cast(b, logits, VC_DT_F32), VC_SAVE_OUT, false); /* routing_weights */
    vc_t choice = add_b(b, sig, vc_buf(b, 0), TE, VC_DT_F32);                                   /* scores_for_choice */
    vc_t idx;
    vc_t top = topk_op(b, choice, S, VC_DT_F32, &idx); /* the router's `_` and top_k_index */
    vc_t rw = gather_k(b, sig, idx, S, VC_DT_F32); /* top_k_weights = routing_weights.gather(1, top_k_index) */
    const vc_t rlocals[] = {sig, choice, top};
    for (size_t i = 0; i < sizeof rlocals / sizeof *rlocals; i++) vc_hold(b, rlocals[i]);
    rw = topk_renorm(b, rw, T, false);
    for (size_t i = 0; i < sizeof rlocals / sizeof *rlocals; i++) vc_release(b, rlocals[i]);
    vc_hold(b, rw);
    vc_hold(b, idx);
    vc_t out = c->liger ? liger_fused_moe(b, c, x, idx, rw, 1, 2) : experts_grouped(b, c, x, idx, rw, 1, 2);
    vc_release(b, rw);
    vc_release(b, idx);
    vc_release(b, logits);
    vc_set_output(b, out);
}

/* x.max(dim=-1, keepdim=True) of [T, E] rows: the values ([T], x's dtype) and int64 indices, new tensors; no gradient
 * is kept (the values are a threshold under no_grad, or feed rand_like alone and die at once) */
static vc_t row_max(vc_build *b, vc_t x, vc_numel T, vc_t *idx)
{
    vc_op *o = vc_op_begin(b, "max");
    vc_op_in_nodiff(o, x);
    vc_t v = vc_op_out(o, T, vc_dt_of(b, x));
    *idx = vc_op_out(o, T, VC_DT_I64);
    vc_op_end(o);
    return v;
}

/* scores.masked_fill(mask, -inf) / torch.scatter(scores, -1, index, -inf): a new [T, E] tensor, the mask or the
 * index saved for backward (grad.masked_fill(mask, 0), grad.scatter(-1, index, 0)) */
static vc_t fill_saving(vc_build *b, const char *name, vc_t x, vc_t m)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_in(o, x);
    vc_op_in_nodiff(o, m);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_save(o, m);
    vc_op_end(o);
    return y;
}

/* One expert's pick of sparsemixer (modeling_phimoe.py @ 4a4355307f5fa0bae5560b00f034248b4121eaef): from `from`
 * (scores, or masked_scores for the second), under no_grad the threshold mask (max(dim=-1, keepdim) -> the values
 * and max_ind; factor = scores.abs().clamp(min=...) [T, E] (abs a temporary); ((threshold - scores) / factor) >
 * 2 jitter_eps: sub and div temporaries, the bool mask rebinding the threshold); masked_fill(mask, -inf); in training
 * Gumbel sampling ((masked - empty_like(masked).exponential_().log()).max(dim=-1)[1].unsqueeze(-1): the empty
 * tensor, its log, the difference and the max's values transient), else max_ind; softmax; gather. In training
 * the midpoint mask (masked_gates.max(dim=-1, keepdim): values and max_ind; selected == max_ind, rand_like(values)
 * > 0.75 (the second pick's rand_like(...).uniform_() the same), logical_or; torch.add(0.3333, mask, alpha) a
 * float32 [T], type_as the gates' dtype) and PhimoeMultiplier.apply (saves multiplier_o, selected_experts,
 * masked_gates; multiplier_o * mask_for_one). Locals rebound across the two picks (max_ind, factor, the mask) are
 * in *loc (held; released by the caller as sparsemixer returns). Returns the multiplier [T, 1], *sel the expert. */
enum { PM_MAXIND, PM_FACTOR, PM_MASK, PM_N };
static vc_t sparsemixer_pick(vc_build *b, vc_t scores, vc_t from, vc_numel T, vc_numel TE, vc_t loc[PM_N], vc_t *sel)
{
    const bool train = vc_training(b);
    const vc_dtype dt = vc_dt_of(b, scores);
#define REBIND(k, t) do { vc_t t_ = (t); vc_hold(b, t_); if (loc[k] >= 0) vc_release(b, loc[k]); loc[k] = t_; } while (0)
    vc_t mi;
    vc_t thr = row_max(b, from, T, &mi);
    vc_hold(b, thr);
    REBIND(PM_MAXIND, mi);
    vc_t ab = vc__op_nograd(b, "abs", scores, -1, TE, dt);
    REBIND(PM_FACTOR, vc__op_nograd(b, "clamp", ab, thr, TE, dt));
    vc_t sub = vc__op_nograd(b, "sub", thr, scores, TE, dt);
    vc_t dv = vc__op_nograd(b, "div", sub, loc[PM_FACTOR], TE, dt);
    REBIND(PM_MASK, vc__op_nograd(b, "gt", dv, -1, TE, VC_DT_BOOL));
    vc_release(b, thr);
    vc_t mg = fill_saving(b, "masked_fill", from, loc[PM_MASK]);
    vc_t s = loc[PM_MAXIND];
    if (train) { /* Gumbel sampling */
        vc_t e = vc__op_new(b, "empty_like", TE, dt);
        vc_t lg = vc__op_nograd(b, "log", e, -1, TE, dt);
        vc_t d = vc__op_add(b, mg, lg, TE, false); /* masked_gates - ...: no tensor saved */
        vc_t ix;
        row_max(b, d, T, &ix);
        s = ix;
    }
    vc_hold(b, s);
    vc_t gates = vc__op_softmax(b, mg, false); /* masked_gates, rebound */
    vc_hold(b, gates);
    vc_op *o = vc_op_begin(b, "gather"); /* multiplier_o = masked_gates.gather(-1, selected_experts) */
    vc_op_in(o, gates);
    vc_op_in_nodiff(o, s);
    vc_t mo = vc_op_out(o, T, vc_dt_of(b, gates));
    vc_op_save(o, s);
    vc_op_end(o);
    vc_t mult = mo;
    if (train) {
        vc_t mx = row_max(b, gates, T, &mi);
        REBIND(PM_MAXIND, mi);
        vc_t eq = vc__op_nograd(b, "eq", s, loc[PM_MAXIND], T, VC_DT_BOOL);
        vc_t rl = vc__op_nograd(b, "rand_like", mx, -1, T, dt);
        vc_t gt = vc__op_nograd(b, "gt", rl, -1, T, VC_DT_BOOL);
        vc_t lo = vc__op_nograd(b, "logical_or", eq, gt, T, VC_DT_BOOL);
        vc_t mf = vc__op_nograd(b, "add", lo, -1, T, VC_DT_F32);
        mf = vc__op_cast(b, mf, vc_dt_of(b, gates)); /* .type_as(masked_gates) */
        o = vc_op_begin(b, "PhimoeMultiplier");
        vc_op_in(o, scores);
        /* multiplier and masked_gates require grad (the gather's and the softmax's outputs): backward returns
         * None for them, so their nodes (gather, softmax, masked_fill, the second pick's scatter) run with
         * undefined gradients and release their saved index, result and mask then (VC_GRAD_UNDEF) */
        vc_op_grad(o, vc_op_in(o, mo), VC_GRAD_UNDEF);
        vc_op_in_nodiff(o, s);
        vc_op_grad(o, vc_op_in(o, gates), VC_GRAD_UNDEF);
        vc_op_in_nodiff(o, mf);
        mult = vc_op_out(o, T, vc_dt_of(b, gates));
        vc_op_save(o, mo);
        vc_op_save(o, s);
        vc_op_save(o, gates);
        /* backward: grad * multiplier [T, 1], .mul(-1) [T, 1], masked_gates * it [T, E] (the scores' gradient,
         * scatter_add_ in place) */
        vc_op_btemp(o, T, vc_dt_of(b, gates));
        vc_op_btemp(o, T, vc_dt_of(b, gates));
        vc_op_end(o);
    }
    vc_release(b, gates);
    vc_release(b, s);
    *sel = s;
#undef REBIND
    return mult;
}

/* PhimoeSparseMoeBlock.forward (models/phimoe/modeling_phimoe.py @ 4a4355307f5fa0bae5560b00f034248b4121eaef,
 * transformers 5): in training with input_jitter_noise, hidden_states *= torch.empty_like(hidden_states)
 * .uniform_(...) (in place: the random tensor saved by mul_'s backward), reshape(-1, H); PhimoeTopKRouter.forward
 * (the same jitter again on its argument, then the nn.Linear's logits and sparsemixer: two picks, the second on
 * torch.scatter(scores, -1, selected_experts, -inf), then torch.concat of the multipliers [T, 2] and the experts
 * [T, 2] int64); PhimoeExperts under @use_experts_implementation (grouped_mm_experts_forward: experts_grouped) with
 * the multipliers in the logits' dtype. sparsemixer's locals die as it returns; its saved tensors live in the
 * graph. Parameters: router.weight 0, experts.gate_up_proj 1, down_proj 2. */
static void moe_phimoe_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, E = c->E;
    vc_numel T = vc_n_sample(L), TE = vc_n_sample(L * E), S = vc_n_sample(L * 2), TH = vc_n_sample(L * H);
    vc_t x = vc_input(b, 0);
    for (int j = 0; j < 2 && vc_training(b) && c->jitter > 0; j++) { /* the block's jitter, then the router's */
        vc_t r = vc__op_new(b, "empty_like", TH, vc_dt_of(b, x));
        x = vc__op_mul(b, x, r, TH, true);
    }
    vc_t scores = vc__op_linear(b, x, vc_weight(b, 0), -1, L, H, E);
    vc_hold(b, scores);
    vc_t loc[PM_N] = {-1, -1, -1};
    vc_t s1, s2;
    vc_t m1 = sparsemixer_pick(b, scores, scores, T, TE, loc, &s1);
    vc_hold(b, m1);
    vc_hold(b, s1);
    vc_t ms = fill_saving(b, "scatter", scores, s1); /* masked_scores */
    vc_hold(b, ms);
    vc_t m2 = sparsemixer_pick(b, scores, ms, T, TE, loc, &s2);
    vc_hold(b, m2);
    vc_hold(b, s2);
    vc_op *o = vc_op_begin(b, "cat"); /* multiplier = torch.concat((multiplier, multiplier_top2), dim=-1) */
    vc_op_in(o, m1);
    vc_op_in(o, m2);
    vc_t rw = vc_op_out(o, S, vc_dt_of(b, m1));
    vc_op_end(o);
    vc_t idx = vc__op_nograd(b, "cat", s1, s2, S, VC_DT_I64);
    const vc_t locals[] = {m1, s1, ms, m2, s2, loc[PM_MAXIND], loc[PM_FACTOR], loc[PM_MASK], scores};
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) vc_release(b, locals[i]);
    vc_hold(b, rw);
    vc_hold(b, idx);
    vc_t out = c->liger ? liger_fused_moe(b, c, x, idx, rw, 1, 2) : experts_grouped(b, c, x, idx, rw, 1, 2);
    vc_release(b, rw);
    vc_release(b, idx);
    vc_set_output(b, out);
}

/* Ernie4_5_MoeSparseMoeBlock.forward (models/ernie4_5_moe/modeling_ernie4_5_moe.py @
 * 0233e509531ace915c8241b4c16c8032a583279c, transformers 5): view(-1, H); shared_output = self.shared_experts(x)
 * first (Ernie4_5_MoeMLP), a local until the sum; `_, top_k_index, top_k_weights = self.gate(x)` (the logits bound
 * to `_` until the block returns); Ernie4_5_MoeTopKRouter.forward under maybe_autocast(enabled=False):
 * router_logits = F.linear(x.float(), weight.float()) (the weight float32 already: the input's copy is what the mm
 * saves), softmax(dim=1, dtype=float) (saves its result), self.moe_statics(routing_weights) = routing_weights +
 * e_score_correction_bias.squeeze() (a new [T, E] tensor, the choice only: an unnamed temporary topk consumes;
 * topk's values are bound to `_` until the router returns), gather(routing_weights, -1, idx) (saves the index),
 * routing_weights / torch.clamp(sum(-1, keepdim), min=moe_norm_min) (the sum, the clamp (saving its input) and the quotient (saving both) new tensors),
 * .to(x.dtype); Ernie4_5_MoeExperts under @use_experts_implementation (experts_grouped); then
 * final_hidden_states + shared_output (a new tensor). Parameters: gate.weight 0, moe_statics 1, experts 2-3,
 * shared_experts 4-6. */
static void moe_ernie_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], E = c->E;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * c->k), TE = vc_n_sample(L * E);
    vc_t x = vc_input(b, 0);
    vc_t se = -1;
    if (c->shared) {
        se = expert_mlp(b, c, x, T, c->shared, vc_weight(b, 4), vc_weight(b, 5), vc_weight(b, 6), false);
        vc_hold(b, se);
    }
    /* router_f32 (what hf_layers.c writes for transformers): the float32 gate off autocast; without it vLLM's
     * ReplicatedLinear gate in the model's dtype (ernie45_moe.py @ 0028a751 Ernie4_5_MoeMoE: self.gate(hidden_states)) */
    vc_t logits = c->router_f32 ? mm_rows(b, vc__op_cast(b, x, VC_DT_F32), vc_weight(b, 0), vc_weight(b, 0), T, E)
                                : lin_rows(b, x, vc_weight(b, 0), T, E);
    vc_hold(b, logits); /* the block's `_` */
    vc_t sm = vc__op_unary(b, "_softmax", vc__op_cast(b, logits, VC_DT_F32), VC_SAVE_OUT, false); /* dtype=torch.float */
    vc_t choice = add_b(b, sm, vc_weight(b, 1), TE, VC_DT_F32); /* moe_statics(routing_weights) */
    vc_t idx;
    vc_t top = topk_op(b, choice, S, VC_DT_F32, &idx); /* `_, selected_experts` */
    vc_t rw = gather_k(b, sm, idx, S, VC_DT_F32);
    vc_hold(b, top); /* the router's `_`; the choice's scores an unnamed temporary topk consumed */
    vc_t den = vc__op_unary(b, "clamp", vc__op_mean(b, rw, T), VC_SAVE_IN, false);
    vc_t q = div_rows(b, rw, den, S, VC_DT_F32);
    vc_release(b, top);
    rw = vc__op_cast(b, q, vc_dt_of(b, x)); /* routing_weights.to(hidden_states.dtype) */
    vc_hold(b, rw);
    vc_hold(b, idx);
    vc_t out = experts_grouped(b, c, x, idx, rw, 2, 3);
    vc_release(b, rw);
    vc_release(b, idx);
    vc_release(b, logits);
    if (c->shared) {
        vc_release(b, se);
        out = vc__op_add(b, out, se, vc_n_scale(T, c->hidden), false);
    }
    vc_set_output(b, out);
}

/* Lfm2MoeSparseMoeBlock.forward (models/lfm2_moe/modular_lfm2_moe.py @ 0c67e26d765996423ebf953347b1428b47dc38d5,
 * transformers 5): view(-1, H); router_logits = self.gate(x) (nn.Linear, a local until forward returns);
 * route_tokens_to_experts: routing_weights = router_logits.sigmoid() (the logits' dtype, saving its result); with
 * expert_bias scores_for_routing = routing_weights + expert_bias (float32, the choice only), `_, selected_experts =
 * torch.topk(scores_for_routing, k)` (the values bound to `_` until it returns), routing_weights =
 * torch.gather(routing_weights, 1, selected_experts).type_as(router_logits) (saves the index; the cast a no-op);
 * without it routing_weights, selected_experts = torch.topk(routing_weights, k); with norm_topk_prob routing_weights /
 * (routing_weights.sum(-1, keepdim=True) + 1e-6) (the sum, the sum + 1e-6 and the quotient new tensors, div saving
 * both), then * routed_scaling_factor (a new tensor, a Python scalar: nothing saved); self.experts(...) under
 * @use_experts_implementation (grouped_mm_experts_forward: experts_grouped); reshape. Parameters: gate.weight 0,
 * experts.gate_up_proj 1, down_proj 2; buffer 0 expert_bias. */
static void moe_lfm2_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], E = c->E;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * c->k), TE = vc_n_sample(L * E);
    vc_t x = vc_input(b, 0);
    vc_t logits = lin_rows(b, x, vc_weight(b, 0), T, E);
    vc_hold(b, logits); /* router_logits, the block's local */
    vc_dtype ldt = vc_dt_of(b, logits);
    vc_t sig = vc__op_unary(b, "sigmoid", logits, VC_SAVE_OUT, false); /* routing_weights */
    vc_hold(b, sig);
    vc_t idx, rw, top = -1, choice = -1;
    if (c->expert_bias) {
        choice = add_b(b, sig, vc_buf(b, 0), TE, VC_DT_F32); /* scores_for_routing */
        top = topk_op(b, choice, S, VC_DT_F32, &idx);        /* `_, selected_experts` */
        vc_hold(b, top);
        rw = gather_k(b, sig, idx, S, ldt);
    } else {
        rw = topk_op(b, sig, S, ldt, &idx);
    }
    if (c->norm_topk) {
        /* sum(dim=-1, keepdim=True) + 1e-6: sum is on autocast's float32 list (its input's float32 copy a
         * temporary), and the quotient takes the promoted dtype */
        vc_t den = scalar_op(b, "add", vc__op_mean(b, vc__op_autocast_f32(b, rw), T));
        rw = div_rows(b, rw, den, S, vc_dt_of(b, den) == VC_DT_F32 ? VC_DT_F32 : ldt);
    }
    rw = scalar_op(b, "mul", rw); /* * self.routed_scaling_factor */
    vc_release(b, sig);
    if (top >= 0) vc_release(b, top);
    vc_hold(b, rw);
    vc_hold(b, idx);
    vc_t out = c->liger ? liger_fused_moe(b, c, x, idx, rw, 1, 2) : experts_grouped(b, c, x, idx, rw, 1, 2);
    vc_release(b, rw);
    vc_release(b, idx);
    vc_release(b, logits);
    vc_set_output(b, out);
}

static void moe_grouped_emit(vc_build *b, const moe_cfg *c)
{
    if (c->style == MOE_LFM2) {
        moe_lfm2_emit(b, c);
        return;
    }
    if (c->style == MOE_ERNIE) {
        moe_ernie_emit(b, c);
        return;
    }
    if (c->style == MOE_PHIMOE) {
        moe_phimoe_emit(b, c);
        return;
    }
    if (c->style == MOE_MINIMAX) {
        moe_minimax_emit(b, c);
        return;
    }
    if (c->style == MOE_GEMMA4) {
        moe_gemma4_emit(b, c);
        return;
    }
    if (c->style == MOE_GPT_OSS && vc_weight_format(b, vc_weight(b, 2)) == VC_WEIGHTS_MXFP4) {
        moe_gptoss_mxfp4_emit(b, c);
        return;
    }
    if (c->style == MOE_GPT_OSS) {
        moe_gptoss_emit(b, c);
        return;
    }
    if (c->style == MOE_DEEPSEEK) {
        moe_deepseek_emit(b, c);
        return;
    }
    if (c->style == MOE_DEEPSEEK_V2) {
        moe_deepseek_v2_emit(b, c);
        return;
    }
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, E = c->E;
    vc_numel T = vc_n_sample(L), S = vc_n_sample(L * c->k);
    vc_t x = vc_input(b, 0);
    vc_t se = -1;
    int sw = 1 + 2;
    if (c->shared) { /* shared_expert_output = self.shared_expert(hidden_states) (Qwen2MoeMLP) */
        se = expert_mlp(b, c, x, T, c->shared, vc_weight(b, sw), vc_weight(b, sw + 1), vc_weight(b, sw + 2), false);
        vc_hold(b, se);
    }
    /* the router. HunYuanMoEV1Moe.forward (modeling_hunyuan_v1_moe.py @ 0233e509531ace915c8241b4c16c8032a583279c):
     * hidden_states_mlp = self.shared_mlp(hidden_states) first (above; sw = 3: the shared MLP's parameters follow
     * the experts' as here), router_logits = self.gate(hidden_states) (HunYuanMoEV1Gate: with wg float32,
     * hidden_states.float() then wg: the copy is what the mm saves; a local until forward returns);
     * route_tokens_to_experts: softmax(dim=1, dtype=float), topk, routing_weights /= sum(-1, keepdim=True) in place,
     * .to(router_logits.dtype) (its argument is the logits: float32 with router_f32, a no-op); self.experts
     * (@use_experts_implementation: grouped_mm); final_hidden_states + hidden_states_mlp (a new tensor) */
    const bool hy = c->style == MOE_HUNYUAN;
    vc_t logits = hy && c->router_f32 ? mm_rows(b, vc__op_cast(b, x, VC_DT_F32), vc_weight(b, 0), vc_weight(b, 0), T, E)
                                      : lin_rows(b, x, vc_weight(b, 0), T, E);
    vc_hold(b, logits); /* returned to the block: `_, top_k_weights, top_k_index = self.gate(x)` binds it until the block returns */
    vc_t sm = vc__op_unary(b, "_softmax", vc__op_cast(b, logits, VC_DT_F32), VC_SAVE_OUT, false);
    vc_t idx; /* top_k_index: the block's local */
    vc_t rw = topk_op(b, sm, S, VC_DT_F32, &idx);
    if (c->style == MOE_MIXTRAL || c->norm_topk) rw = topk_renorm(b, rw, T, false);
    if (c->style != MOE_MIXTRAL) rw = vc__op_cast(b, rw, vc_dt_of(b, logits)); /* .to(router_logits.dtype) */
    vc_hold(b, rw);
    vc_hold(b, idx);
    vc_t out = c->liger ? liger_fused_moe(b, c, x, idx, rw, 1, 2) : experts_grouped(b, c, x, idx, rw, 1, 2);
    vc_release(b, rw);
    vc_release(b, idx);
    vc_release(b, logits);
    if (hy) { /* final_hidden_states + hidden_states_mlp */
        vc_release(b, se);
        out = vc__op_add(b, out, se, vc_n_scale(T, H), false);
    } else if (c->shared) { /* sigmoid(shared_expert_gate(x)) * shared_expert_output; expert_output += it */
        vc_t sg = lin_rows(b, x, vc_weight(b, sw + 3), T, 1);
        sg = vc__op_unary(b, "sigmoid", sg, VC_SAVE_OUT, false);
        vc_t s2 = vc__op_mul_dt(b, sg, se, vc_numel_of(b, se), vc_dt_of(b, se));
        vc_release(b, se);
        out = vc__op_add(b, out, s2, vc_n_scale(T, H), true);
    }
    vc_set_output(b, out);
}

/* torch.bmm(x, w) with w an [E, in, out] parameter (Llama4TextExperts): autocast casts both. */
static vc_t bmm_param(vc_build *b, vc_t x, vc_t w, vc_numel out)
{
    return vc__op_bmm_raw(b, vc__op_autocast(b, x), vc__op_autocast_weight(b, w), out);
}

/* FbgemmFp8Llama4TextExperts.forward (transformers integrations/fbgemm_fp8.py @000c33fd), what the
 * experts run under fbgemm_fp8 (inference only: FbgemmFp8HfQuantizer.is_trainable is False):
 * hidden_states.view(E, -1, H); next_states = torch.empty_like(hidden_states) [E x T, H]; then a Python
 * loop over the experts, each iteration binding, in order:
 *   expert_quantized, expert_scale = quantize_fp8_per_row(expert_hidden)  fp8 [T, H], fp32 [T]
 *   gate = f8f8bf16_rowwise(expert_quantized, gate_up_proj[i].transpose(0, 1)[:I].contiguous(), ...)
 *          bf16 [T, I]; the .contiguous() of the transposed slice an fp8 [I, H] copy alive for the call
 *          (the scales' .to(torch.float32) and .view(-1, 1).contiguous() are no-op views: fp32 already)
 *   up = the same with [I:]                                               bf16 [T, I], fp8 [I, H] copy
 *   activated = up * self.act_fn(gate)                                    bf16 [T, I] (act_fn's a temporary)
 *   activated_quantized, activated_scale = quantize_fp8_per_row(activated) fp8 [T, I], fp32 [T]
 *   expert_output = f8f8bf16_rowwise(..., down_proj[i].transpose(0, 1).contiguous(), ...)
 *          bf16 [T, H], the fp8 [H, I] copy alive for the call; next_states[i] = expert_output (copy_ in place).
 * quantize_fp8_per_row (pytorch/FBGEMM fbgemm_gpu/experimental/gen_ai/src/quantize/quantize.cu):
 * quantized_input = torch::empty(input's shape, fp8 e4m3), scales = torch::empty(input's shape
 * without its last dim, float32), nothing else. f8f8bf16_rowwise returns a new bf16 [rows, out].
 * A name rebound in the next iteration frees its old tensor once the new one exists, so every local
 * of iteration i - 1 lives into iteration i until its own rebinding; all die as forward returns, and
 * next_states (viewed [E x T, H]) is routed_out. */
/* f8f8bf16_rowwise(xq, w.contiguous(), xs, w_scale): the fp8 weight copy (`copy` elements) alive for the
 * call, a new bf16 output */
static vc_t f8f8bf16_rowwise(vc_build *b, vc_t xq, vc_t xs, vc_t w, int64_t copy, vc_numel out)
{
    vc_op *o = vc_op_begin(b, "f8f8bf16_rowwise");
    vc_op_in_nodiff(o, xq);
    vc_op_in_nodiff(o, xs);
    vc_op_in_nodiff(o, w);
    vc_op_ftemp(o, vc_n_fixed(copy), VC_DT_F8);
    vc_t y = vc_op_out(o, out, VC_DT_BF16);
    vc_op_end(o);
    return y;
}

static vc_t moe_llama4_fbgemm(vc_build *b, const moe_cfg *c, vc_t ri, int64_t L)
{
    int64_t H = c->hidden, I = c->inter;
    vc_dtype dt = vc_dt_of(b, ri);
    vc_t ns = vc__op_new(b, "empty_like", vc_n_sample(L * c->E * H), dt);
    vc_hold(b, ns);
    enum { EQ, ES, GATE, UP, ACT, AQ, AS, EO, NLOC };
    vc_t loc[NLOC];
    for (int k = 0; k < NLOC; k++) loc[k] = -1;
#define REBIND(k, t) do { vc_t t_ = (t); vc_hold(b, t_); if (loc[k] >= 0) vc_release(b, loc[k]); loc[k] = t_; } while (0)
    for (int64_t e = 0; e < c->E; e++) {
        for (int q = 0; q < 2; q++) { /* quantize_fp8_per_row of the expert's rows, then of activated */
            vc_op *o = vc_op_begin(b, "quantize_fp8_per_row");
            vc_op_in_nodiff(o, q ? loc[ACT] : ri);
            vc_t xq = vc_op_out(o, vc_n_sample(L * (q ? I : H)), VC_DT_F8);
            vc_t xs = vc_op_out(o, vc_n_sample(L), VC_DT_F32);
            vc_op_end(o);
            REBIND(q ? AQ : EQ, xq);
            REBIND(q ? AS : ES, xs);
            if (q) break;
            for (int g = 0; g < 2; g++) /* gate, then up: over a contiguous fp8 [I, H] copy */
                REBIND(g ? UP : GATE, f8f8bf16_rowwise(b, loc[EQ], loc[ES], vc_weight(b, 1), I * H, vc_n_sample(L * I)));
            REBIND(ACT, vc__op_mul(b, loc[UP], act_op(b, c->act, loc[GATE]), vc_n_sample(L * I), false));
        }
        REBIND(EO, f8f8bf16_rowwise(b, loc[AQ], loc[AS], vc_weight(b, 2), H * I, vc_n_sample(L * H)));
    }
#undef REBIND
    for (int k = 0; k < NLOC; k++) vc_release(b, loc[k]);
    return ns; /* held: moe_llama4_tail releases it as routed_out */
}

/* The end of Llama4TextMoe.forward, after the experts: out = shared_expert(hidden_states),
 * out.add_(routed_out.reshape(E, -1, H).sum(dim=0)); routed_in, routed_out, router_scores and
 * router_logits die as it returns. */
static void moe_llama4_tail(vc_build *b, const moe_cfg *c, vc_t ri, vc_t ro, vc_t rs, vc_t logits, int64_t L)
{
    int64_t H = c->hidden;
    vc_t x = vc_input(b, 0);
    vc_hold(b, ro); /* routed_out: the block's local until it returns */
    vc_t out = expert_mlp(b, c, x, vc_n_sample(L), c->shared, vc_weight(b, 3), vc_weight(b, 4), vc_weight(b, 5), false);
    vc_t sum = vc__op_mean(b, ro, vc_n_sample(L * H));
    out = vc__op_add(b, out, sum, vc_n_sample(L * H), true);
    vc_release(b, ri);
    vc_release(b, ro);
    vc_release(b, rs);
    vc_release(b, logits);
    vc_set_output(b, out);
}

/* Llama4TextMoe.forward (modeling_llama4.py @ 000c33fdfde12e1ffafbfcdb3c926df5727a00b6):
 *  - Llama4Router.forward: router_logits = nn.Linear's forward [T, E] (returned: the decoder layer
 *    binds it to `_` until it returns); topk(logits, top_k, dim=1) (values, int64 indices);
 *    full_like(logits, -inf).scatter_(1, indices, values) (scatter_'s backward gathers: the indices
 *    saved); sigmoid(scores.float()) (a float32 copy of 16-bit scores; sigmoid saves its result),
 *    .to(scores.dtype); router_scores is the block's local until it returns;
 *  - routed_in = hidden_states.repeat(E, 1): [E x T, H], every token once per expert; routed_in *
 *    router_scores.transpose(0, 1).reshape(-1, 1) (the reshape of the transpose a copy, [E x T, 1]; the
 *    product saves each operand the other's gradient needs: the repeat for the router's, the column
 *    for the tokens');
 *  - Llama4TextExperts.forward: view(E, -1, H), gate_up = torch.bmm(x, gate_up_proj) [E, T, 2I],
 *    gate, up = chunk(2) (views), torch.bmm(up * act_fn(gate), down_proj) [E, T, H] (act saves the
 *    gate view, the product both factors, each bmm its input for the experts' gradient);
 *  - out = shared_expert(hidden_states) (Llama4TextMLP: act(gate_proj(x)) * up_proj(x), down_proj),
 *    out.add_(routed_out.reshape(E, -1, H).sum(dim=0)) in place.
 * Weights: router.weight 0, experts.gate_up_proj 1, experts.down_proj 2, shared_expert 3-5. */
/* vLLM's Llama4MoE.forward (vllm/model_executor/models/llama4.py @ 0121c95e), what --serve's profiling
 * run executes instead of transformers' block: router_logits = self.router(x) (ReplicatedLinear [T, E]);
 * shared_out = self.shared_expert(x) (LlamaMLP: gate_up_proj [T, 2I], SiluAndMul [T, I], down_proj);
 * routed_out = self.experts(x, router_logits) (FusedMoE with Llama4MoE.custom_routing_function:
 * fast_topk values and int64 indices, sigmoid(values.float()), indices.to(int32); then
 * fused_experts_impl, vllm/model_executor/layers/fused_moe/fused_moe.py @ 000d1458: out_hidden_states =
 * torch.empty_like(hidden_states), cache13 = torch.empty(M x top_k x max(N, K)) shared by
 * intermediate_cache1 [M, top_k, N = 2I] and intermediate_cache3 [M, top_k, K = H],
 * intermediate_cache2 [M x top_k, N / 2], M = min(tokens, VLLM_FUSED_MOE_CHUNK_SIZE 32768); the
 * kernels write into them); experts_out = routed_out + shared_out. No autograd (inference).
 * moe_align_block_size's int32 index tensors (top_k x tokens + E x (BLOCK_SIZE_M - 1) entries) are
 * not modelled. */
static void moe_llama4_vllm_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, E = c->E, I = c->inter, S = c->shared;
    vc_numel T = vc_n_sample(L), K = vc_n_sample(L * c->k);
    vc_t x = vc_input(b, 0);
    vc_dtype dt = vc_dt_of(b, x);
    vc_t logits = lin_rows(b, x, vc_weight(b, 0), T, E);
    vc_hold(b, logits); /* router_logits: Llama4MoE.forward's local */
    vc_t g = lin_rows(b, x, vc_weight(b, 3), T, S); /* gate_up_proj's [T, 2I]: its gate and up halves */
    vc_t u = lin_rows(b, x, vc_weight(b, 4), T, S);
    vc_t a = vc__op_nograd(b, "silu_and_mul", g, u, vc_n_sample(L * S), dt);
    vc_t shared = lin_rows(b, a, vc_weight(b, 5), T, H);
    vc_hold(b, shared);
    vc_t top = vc__op_nograd(b, "topk", logits, -1, K, vc_dt_of(b, logits));
    vc_t idx = vc__op_nograd(b, "topk", logits, -1, K, VC_DT_I64);
    vc_t tw = vc__op_nograd(b, "sigmoid", vc__op_cast(b, top, VC_DT_F32), -1, K, VC_DT_F32);
    vc_t ti = vc__op_nograd(b, "_to_copy", idx, -1, K, VC_DT_I32);
    vc_hold(b, tw);
    vc_hold(b, ti);
    vc_t out = vc__op_nograd(b, "empty_like", x, -1, vc_n_sample(L * H), dt);
    vc_hold(b, out);
    int64_t w13 = 2 * I > H ? 2 * I : H;
    /* the caches, alive together through the kernels that write them (cache1, silu_and_mul into cache2,
     * cache3, moe_sum into out), freed when fused_experts_impl returns */
    vc_t c13 = vc__op_new(b, "empty", vc_n_sample(L * c->k * w13), dt);
    vc_hold(b, c13);
    vc_t c2 = vc__op_new(b, "empty", vc_n_sample(L * c->k * I), dt);
    vc_release(b, c2);
    vc_release(b, c13);
    vc_release(b, tw);
    vc_release(b, ti);
    vc_release(b, out);
    vc_t y = vc__op_nograd(b, "add", out, shared, vc_n_sample(L * H), dt);
    vc_release(b, shared);
    vc_release(b, logits);
    vc_set_output(b, y);
}

static void moe_llama4_emit(vc_build *b, const moe_cfg *c)
{
    if (vc_serving(b)) {
        moe_llama4_vllm_emit(b, c);
        return;
    }
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, E = c->E, I = c->inter;
    vc_numel T = vc_n_sample(L), TE = vc_n_sample(L * E), K = vc_n_sample(L * c->k);
    vc_t x = vc_input(b, 0);
    vc_t logits = lin_rows(b, x, vc_weight(b, 0), T, E);
    vc_hold(b, logits);
    vc_dtype ldt = vc_dt_of(b, logits);
    vc_t idx;
    vc_t top = topk_op(b, logits, K, ldt, &idx);
    vc_t full = vc__op_new(b, "full_like", TE, ldt);
    vc_op *o = vc_op_begin(b, "scatter_");
    int ifl = vc_op_in_nodiff(o, full);
    vc_op_in(o, top);
    vc_op_in_nodiff(o, idx);
    vc_t sc = vc_op_out_view(o, ifl, TE, true);
    vc_op_save(o, idx);
    vc_op_end(o);
    vc_t sg = vc__op_unary(b, "sigmoid", vc__op_cast(b, sc, VC_DT_F32), VC_SAVE_OUT, false);
    vc_t rs = vc__op_cast(b, sg, ldt);
    vc_hold(b, rs);
    vc_t rep = vc__op_fresh(b, "repeat", x, vc_n_sample(L * E * H));
    vc_t col = vc__op_clone(b, vc__op_view(b, rs, TE, false));
    vc_t ri = vc__op_mul_dt(b, rep, col, vc_n_sample(L * E * H), promote(vc_dt_of(b, rep), vc_dt_of(b, col)));
    vc_hold(b, ri); /* routed_in: the block's local until it returns */
    if (vc_weight_format(b, vc_weight(b, 1)) == VC_WEIGHTS_FP8_CHANNEL) {
        moe_llama4_tail(b, c, ri, moe_llama4_fbgemm(b, c, ri, L), rs, logits, L);
        return;
    }
    vc_t gu = bmm_param(b, ri, vc_weight(b, 1), vc_n_sample(L * E * 2 * I));
    vc_hold(b, gu); /* gate_up (and its gate, up views): Llama4TextExperts.forward's locals until it returns */
    vc_numel EI = vc_n_sample(L * E * I);
    vc_t g = vc__op_view(b, gu, EI, false), u = vc__op_view(b, gu, EI, false);
    vc_t act = act_op(b, c->act, g);
    vc_t h = vc__op_mul(b, u, act, EI, false);
    vc_t ro = bmm_param(b, h, vc_weight(b, 2), vc_n_sample(L * E * H));
    vc_release(b, gu);
    moe_llama4_tail(b, c, ri, ro, rs, logits, L);
}

/* JetMoeParallelExperts.forward (models/jetmoe/modeling_jetmoe.py, GraniteMoeParallelExperts' code): input_list =
 * inputs.split(expert_size) (views), F.linear(input_list[i], self.weight[i]) per expert (weight[i] a select view of
 * the [E, out, in] parameter: its gradient a zeros [E, out, in] with the slice copied in, select_backward), the
 * outputs kept in output_list until torch.cat makes the [S, out] result. */
static vc_t parallel_experts(vc_build *b, const moe_cfg *c, vc_t xin, int wi, int64_t out, int64_t in, int64_t L, int64_t tcap)
{
    vc_t w = vc_weight(b, wi);
    vc_t *outs = calloc((size_t)c->E, sizeof *outs);
    if (!outs) return xin;
    vc_op *o;
    for (int64_t e = 0; e < c->E; e++) {
        vc_numel rows = moe_rows(b, c, L, tcap, e);
        vc_t xs = vc__op_view(b, xin, vc_n_scale(rows, in), true);          /* input_list[i] */
        vc_t we = vc__op_select(b, w, vc_n_fixed(out * in), true);          /* self.weight[i] */
        outs[e] = lin_rows(b, xs, we, rows, out);
        vc_hold(b, outs[e]);
    }
    vc_numel S = vc_n_sample(L * c->k);
    o = vc_op_begin(b, "cat");
    for (int64_t e = 0; e < c->E; e++) vc_op_in(o, outs[e]);
    vc_t r = vc_op_out(o, vc_n_scale(S, out), vc_dt_of(b, outs[0]));
    vc_op_end(o);
    for (int64_t e = 0; e < c->E; e++) vc_release(b, outs[e]);
    free(outs);
    return r;
}

/* GraniteMoeMoE.forward (models/granitemoe/modular_granitemoe.py @ 94cb76e8b28f69cd844073ae246c3bd1375d2e0b; its router
 * and experts JetMoe's, models/jetmoe/modeling_jetmoe.py): layer_input.reshape(-1, H); `_, batch_index, batch_gates,
 * expert_size, _ = self.router(layer_input)` (the last `_`, the float32 logits, alive until the block returns);
 * JetMoeTopKGating.forward: logits = self.layer(x).float(), topk, softmax(top_k_logits, dim=1).type_as(x), zeros
 * [T, E] and its scatter(1, top_k_indices, 1), gates.long().sum(0) (.tolist()), top_k_indices.flatten().sort(0) (the
 * values a local `_`), index_sorted_experts.div(k) (batch_index), top_k_gates.flatten()[index_sorted_experts]
 * (batch_gates); then expert_inputs = layer_input[batch_index], input_linear (parallel_experts), chunk(2),
 * activation(chunk 0) * chunk 1, output_linear, * batch_gates[:, None], zeros((T, H)).index_add(0, batch_index, ...)
 * (out of place). Parameters: input_linear 0, output_linear 1, router.layer 2. */
static void moe_granite_emit(vc_build *b, const moe_cfg *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, I = c->inter, E = c->E;
    vc_numel S = vc_n_sample(L * c->k), TE = vc_n_sample(L * E), SI = vc_n_scale(S, I);
    int64_t wmax = 2 * I > H ? 2 * I : H;
    int64_t tcap = (INT64_C(1) << 53) / wmax;
    vc_t x = vc_input(b, 0);
    vc_dtype dt = vc_dt_of(b, x);
    vc_t logits = vc__op_cast(b, vc__op_linear(b, x, vc_weight(b, 2), -1, L, H, E), VC_DT_F32); /* self.layer(x).float() */
    vc_hold(b, logits);
    vc_t tki;
    vc_t tkl = topk_op(b, logits, S, VC_DT_F32, &tki);
    vc_hold(b, tki);
    vc_t tkg = vc__op_cast(b, vc__op_softmax(b, tkl, false), dt); /* softmax(...).type_as(hidden_states) */
    vc_hold(b, tkg);
    vc_t z = vc__op_new(b, "zeros", TE, vc_dt_of(b, tkg));
    vc_hold(b, z);
    vc_t g = vc__op_nograd(b, "scatter", z, tki, TE, vc_dt_of(b, tkg));
    vc_hold(b, g);
    vc_t lo = vc__op_nograd(b, "_to_copy", g, -1, TE, VC_DT_I64); /* gates.long() */
    vc__op_nograd(b, "sum", lo, -1, vc_n_fixed(E), VC_DT_I64);     /* .sum(0), then .tolist() */
    vc_op *o = vc_op_begin(b, "sort");                              /* _, index_sorted_experts = ....sort(0) */
    vc_op_in_nodiff(o, tki);
    vc_t sv = vc_op_out(o, S, VC_DT_I64);
    vc_t isx = vc_op_out(o, S, VC_DT_I64);
    vc_op_end(o);
    vc_hold(b, sv);
    vc_t bi = vc__op_nograd(b, "div", isx, -1, S, VC_DT_I64); /* batch_index */
    vc_hold(b, bi);
    vc_t bg = index_rows(b, tkg, isx, S, 1);                   /* batch_gates */
    vc_hold(b, bg);
    const vc_t rlocals[] = {z, g, sv, tkg, tki};
    for (size_t i = 0; i < sizeof rlocals / sizeof *rlocals; i++) vc_release(b, rlocals[i]);
    vc_t ei = index_rows(b, x, bi, S, H); /* expert_inputs */
    vc_hold(b, ei);
    vc_t h = parallel_experts(b, c, ei, 0, 2 * I, H, L, tcap);
    vc_hold(b, h);
    o = vc_op_begin(b, "split"); /* hidden_states.chunk(2, dim=-1) */
    int ih = vc_op_in(o, h);
    vc_t g0 = vc_op_out_view(o, ih, SI, false), g1 = vc_op_out_view(o, ih, SI, false);
    vc_op_end(o);
    vc_t hm = vc__op_mul(b, act_op(b, c->act, g0), g1, SI, false);
    vc_hold(b, hm); /* hidden_states, rebound: chunked_hidden_states, a local, keeps the first one's views alive */
    vc_t eo = parallel_experts(b, c, hm, 1, H, I, L, tcap);
    eo = vc__op_mul_dt(b, eo, bg, vc_numel_of(b, eo), vc_dt_of(b, eo)); /* * batch_gates[:, None] */
    vc_t zz = vc__op_new(b, "zeros", vc_n_sample(L * H), vc_dt_of(b, eo));
    /* zeros.index_add(0, batch_index, expert_outputs), out of place: derivatives.yaml index_add's source gradient
     * grad.index_select(dim, index).expand_as(source) keeps the index and the source itself */
    o = vc_op_begin(b, "index_add");
    int iz = vc_op_in(o, zz);
    int ie = vc_op_in(o, eo);
    vc_op_in_nodiff(o, bi);
    vc_t out = vc_op_out(o, vc_n_sample(L * H), vc_dt_of(b, eo));
    vc_op_save(o, bi);
    vc_op_save_if(o, eo, ie);
    vc_op_grad(o, iz, VC_GRAD_PASS);
    vc_op_end(o);
    const vc_t locals[] = {ei, h, hm, bi, bg, logits};
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) vc_release(b, locals[i]);
    vc_set_output(b, out);
}

/* MixtralSparseMoeBlock.forward / Qwen2MoeSparseMoeBlock.forward. */
static void moe_emit(vc_build *b, const void *p)
{
    const moe_cfg *c = p;
    if (c->style == MOE_GRANITE) {
        moe_granite_emit(b, c);
        return;
    }
    if (c->style == MOE_LLAMA4) {
        moe_llama4_emit(b, c);
        return;
    }
    if (c->ep > 1) {
        vc_moe_ep e = moe_ep_of(c);
        vc__moe_ep_emit(b, &e);
        return;
    }
    if (c->impl == MOE_GROUPED_MM) {
        moe_grouped_emit(b, c);
        return;
    }
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden;
    /* tokens in the step, capped so that T x width x 8 bytes stays below 2^56
     * (far past any GPU: only the largest-batch search goes there) */
    int64_t wmax = c->inter > H ? c->inter : H;
    if (c->shared > wmax) wmax = c->shared;
    int64_t tcap = (INT64_C(1) << 53) / wmax;
    vc_t x = vc_input(b, 0); /* hidden_states.view(-1, hidden_dim) */
    vc_dtype dt = vc_dt_of(b, x);
    vc_t logits = lin_rows(b, x, vc_weight(b, 0), vc_n_sample(L), c->E); /* router_logits = self.gate(x) */
    /* routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float) */
    vc_t sm = vc__op_unary(b, "_softmax", vc__op_cast(b, logits, VC_DT_F32), VC_SAVE_OUT, false);
    /* torch.topk(routing_weights, top_k): values + int64 indices (kept for backward) */
    vc_op *o = vc_op_begin(b, "topk");
    vc_op_in(o, sm);
    vc_t rw = vc_op_out(o, vc_n_sample(L * c->k), VC_DT_F32);
    vc_op_extra(o, vc_n_sample(L * c->k), VC_DT_I64);
    vc_op_end(o);
    if (c->style == MOE_MIXTRAL || c->norm_topk) { /* routing_weights /= routing_weights.sum(-1, keepdim=True) */
        vc_t sum = vc__op_mean(b, rw, vc_n_sample(L));
        o = vc_op_begin(b, "div_");
        int ir = vc_op_in(o, rw);
        int is = vc_op_in(o, sum);
        vc_t r2 = vc_op_out_view(o, ir, vc_numel_of(b, rw), true);
        vc_op_save(o, r2);  /* div_ backward needs the result and the divisor */
        vc_op_save(o, sum);
        vc_op_grad(o, is, VC_GRAD_NEW_REDUCE);
        vc_op_end(o);
        rw = r2;
    }
    rw = vc__op_cast(b, rw, dt); /* .to(hidden_states.dtype) */
    /* final_hidden_states = zeros((T, H)); expert_mask = one_hot(selected_experts, E).permute(2, 1, 0): int64 [E, k, T] */
    vc_t fin = vc__op_new(b, "zeros", vc_n_sample(L * H), dt);
    vc_t mask = vc__op_new(b, "one_hot", vc_n_sample(L * c->k * c->E), VC_DT_I64);
    for (int64_t e = 0; e < c->E; e++) {
        vc_numel rows = moe_rows(b, c, L, tcap, e);
        /* idx, top_x = torch.where(expert_mask[expert_idx]): nonzero -> [n_e, 2] int64 */
        vc_t nz = vc__op_new(b, "nonzero", vc_n_scale(rows, 2), VC_DT_I64);
        /* current_state = hidden_states[None, top_x].reshape(-1, H): index saves the indices;
         * its backward scatters into zeros of hidden_states' size */
        o = vc_op_begin(b, "index");
        vc_op_in(o, x);
        vc_op_in_nodiff(o, nz);
        vc_t cur = vc_op_out(o, vc_n_scale(rows, H), dt);
        vc_op_save(o, nz);
        vc_op_end(o);
        vc_t y = expert_mlp(b, c, cur, rows, c->inter, vc_weight(b, 1 + 3 * (int)e), vc_weight(b, 2 + 3 * (int)e),
                            vc_weight(b, 3 + 3 * (int)e), c->liger);
        /* * routing_weights[top_x, idx, None]: an [n_e, 1] gather */
        o = vc_op_begin(b, "index");
        vc_op_in(o, rw);
        vc_op_in_nodiff(o, nz);
        vc_t wsel = vc_op_out(o, rows, dt);
        vc_op_save(o, nz);
        vc_op_end(o);
        y = vc__op_mul_dt(b, y, wsel, vc_numel_of(b, y), vc_dt_of(b, y));
        /* final_hidden_states.index_add_(0, top_x, current_hidden_states.to(dtype)) */
        y = vc__op_cast(b, y, dt);
        o = vc_op_begin(b, "index_add_");
        int ifn = vc_op_in(o, fin);
        int iy = vc_op_in(o, y);
        vc_op_in_nodiff(o, nz);
        fin = vc_op_out_view(o, ifn, vc_n_sample(L * H), true);
        vc_op_grad(o, ifn, VC_GRAD_PASS);
        vc_op_save(o, nz);
        /* derivatives.yaml index_add: source's gradient is
         * grad.index_select(dim, index).expand_as(source): source is saved */
        vc_op_save_if(o, y, iy);
        vc_op_end(o);
    }
    vc_release(b, mask);
    if (c->shared) { /* Qwen2Moe: + sigmoid(shared_expert_gate(x)) * shared_expert(x) */
        int i = 1 + 3 * (int)c->E;
        vc_t se = expert_mlp(b, c, x, vc_n_sample(L), c->shared, vc_weight(b, i), vc_weight(b, i + 1), vc_weight(b, i + 2), false);
        vc_t sg = lin_rows(b, x, vc_weight(b, i + 3), vc_n_sample(L), 1);
        sg = vc__op_unary(b, "sigmoid", sg, VC_SAVE_OUT, false);
        se = vc__op_mul_dt(b, sg, se, vc_numel_of(b, se), vc_dt_of(b, se));
        fin = vc__op_add(b, fin, se, vc_n_sample(L * H), false);
    }
    vc_set_output(b, fin);
}

const vc_kind vc_kind_SparseMoE = {
    .name = "SparseMoE",
    .summary = "router + top-k experts (Mixtral / Qwen2-MoE with shared expert); tokens spread per moe_imbalance",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(moe_cfg),
    .parse = moe_parse, .setup = moe_setup, .emit = moe_emit,
};
