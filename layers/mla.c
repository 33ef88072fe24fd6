/*
 * mla.c — Multi-head Latent Attention (DeepSeek-V2/V3, Kimi-K2; issue 31):
 * the layer kind MLAttention, DeepseekV3Attention.forward from the query
 * projection's output and kv_a_proj_with_mqa's to what o_proj reads.
 *
 * Written from huggingface/transformers @ 00b676f8f0489b88652a31d70751cc540dd06305,
 * src/transformers/models/deepseek_v3/modeling_deepseek_v3.py,
 * DeepseekV3Attention.forward:
 *
 *   q_states = q_proj(x) | q_b_proj(q_a_layernorm(q_a_proj(x)))    (Linear layers outside)
 *   q_states = q_states.view(B, L, -1, qk_head_dim).transpose(1, 2)            view
 *   q_pass, q_rot = torch.split(q_states, [nope, rope], dim=-1)               views
 *   compressed_kv = self.kv_a_proj_with_mqa(x)                                (a Linear outside)
 *   k_pass, k_rot = torch.split(compressed_kv, [kv_lora_rank, rope], dim=-1)  views
 *   k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass))                      RMSNorm, Linear (here)
 *            .view(B, L, -1, nope + v).transpose(1, 2)                       view
 *   k_pass, value_states = torch.split(k_pass, [nope, v], dim=-1)             views
 *   k_rot = k_rot.view(B, 1, L, rope)                                          view
 *   q_rot, k_rot = apply_rotary_pos_emb[_interleave](q_rot, k_rot, cos, sin)
 *   k_rot = k_rot.expand(*k_pass.shape[:-1], -1)                              view
 *   query_states = torch.cat((q_pass, q_rot), dim=-1)                         new [B, H, L, qk_head_dim]
 *   key_states = torch.cat((k_pass, k_rot), dim=-1)                           new [B, H, L, qk_head_dim]
 *   past_key_value.update(key_states, value_states)                           (generate: the full K/V)
 *   attention_interface(query, key, value, ...)                               sdpa (the default)
 *   attn_output.reshape(B, L, -1).contiguous(); o_proj                        (o_proj outside)
 *
 * apply_rotary_pos_emb_interleave (config.rope_interleave, DeepseekV3Config's
 * default True, configuration_deepseek_v3.py @ 001f85b3): q.view(b, h, s,
 * d // 2, 2).transpose(4, 3).reshape(b, h, s, d) first, a copy of q_rot and of
 * k_rot, then the plain rotation. The split's single backward node
 * (SplitWithSizesBackward0) makes one gradient of compressed_kv's size for
 * both halves; k_rot's expand sums its gradient back to [B, 1, L, rope].
 *
 * qk_head_dim (nope + rope) differs from v_head_dim: the sdpa backends see
 * D != Dv (flash is not eligible: sdp_utils' equal head dims; the
 * memory-efficient kernel takes them). transformers pads the value to
 * qk_head_dim (F.pad) and slices the output only under flash_attention_2,
 * which is not modelled; sdpa gets the unpadded value, a strided view of
 * kv_b_proj's output. The softmax scale (qk_head_dim^-0.5, times yarn's
 * mscale^2 with rope_scaling's mscale_all_dim) changes no tensor's size.
 *
 * Inputs: the query states [L, H x (nope + rope)], compressed_kv [L,
 * kv_lora_rank + rope], the RotaryEmbedding's cos/sin [2, L, rope].
 * Parameters: kv_a_layernorm.weight [kv_lora_rank], kv_b_proj.weight
 * [H x (nope + v), kv_lora_rank] (an nn.Linear's: a quantized format
 * replaces it). Output: [L, H x v].
 *
 * complex (DeepseekV2Attention.forward, transformers @ 0233e509531ace915c8241b4c16c8032a583279c,
 * models/deepseek_v2/modeling_deepseek_v2.py): the same steps, with the rotation of
 * apply_rotary_emb on DeepseekV2RotaryEmbedding's freqs_cis (complex64 [L, rope / 2]: the rope
 * input is then [2, L, rope / 2], RotaryEmbedding complex): xq.float() (a copy of a 16-bit q_pe;
 * in float32 the strided view itself, which reshape(..., -1, 2) views: its last dimension is
 * contiguous), view_as_complex, xq_ * freqs_cis (complex64: float32's bytes of [B, H, L, rope];
 * mul saves freqs_cis alone, which needs no grad), view_as_real(...).flatten(3).type_as(xq) (a
 * copy for a 16-bit model, the product itself in float32); xk likewise on k_pe [B, 1, L, rope].
 * The float copies (xq_, xk_) are the function's locals until it returns. No interleave copy.
 *
 * index_n_heads > 0: DeepseekV32Attention (DeepSeek Sparse Attention; huggingface/transformers @
 * 01f8fa55d98fbd77fb6461c47ae14fc6206f2f87, models/deepseek_v32/modeling_deepseek_v32.py), two more inputs:
 * q_resid = q_a_layernorm(q_a_proj(x)) [L, q_lora_rank] and the normed hidden states [L, hidden]; the indexer's
 * parameters (wq_b, wk, k_norm, weights_proj) are this layer's, named indexer.*. DeepseekV32Attention.forward:
 * apply_rotary_pos_emb_interleave on even / odd slices (cat of two products: vc__rope_apply_half, no copy);
 * the MLA key / value and the cache update as above (expand_kv's new_empty + two copy_ make key_states as the
 * cat does: one new tensor); then DeepseekV32Indexer.forward under @torch.no_grad (dsa_indexer below) and the
 * index mask it returns; sdpa with that bool mask. The indexer's parameters get no gradient (its forward is
 * no_grad; torch.optim skips a parameter whose grad is None): declared frozen. Under --serve (vLLM) the indexer
 * is src/engine/serve.c's: only the MLA part runs here.
 */
#include "ops.h"

typedef struct {
    int64_t H, nope, rope, v, kvl; /* heads, qk_nope/qk_rope/v head dims, kv_lora_rank */
    bool interleave, causal, complex;
    double dropout, eps;
    int64_t inh, ihd, itopk; /* DeepSeek-V3.2's indexer: index_n_heads (0: none), index_head_dim, index_topk */
    int dsa_rope;            /* with the indexer: DSA_ROPE_V32 or DSA_ROPE_GLM (dsa_rope_names) */
    bool ishared;            /* GLM-MoE-DSA's "shared" layer (index_shared): no indexer, the carried top-k (dsa_topk_carry) */
} mla_cfg;

/* The rotations of an MLAttention with an indexer: "deepseek_v32" (DeepseekV32Attention: even / odd slices in the
 * attention, apply_rotary_pos_emb's half split in DeepseekV32Indexer) or "glm_moe_dsa" (GlmMoeDsaAttention and
 * GlmMoeDsaIndexer, modular_glm_moe_dsa.py @ 01f8fa55: DeepSeek-V3's apply_rotary_pos_emb_interleave in both, whose
 * view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d) copies q and k before rotate_half; the copies are the
 * function's locals, freed when it returns). */
static const char *const dsa_rope_names[] = {"deepseek_v32", "glm_moe_dsa", NULL};
enum { DSA_ROPE_V32, DSA_ROPE_GLM };

static int mla_parse(vc_args *a, void *p)
{
    mla_cfg *c = p;
    if (vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->H) || vc_arg_int(a, "qk_nope_head_dim", VC_REQUIRED, 0, &c->nope) ||
        vc_arg_int(a, "qk_rope_head_dim", VC_REQUIRED, 2, &c->rope) || vc_arg_int(a, "v_head_dim", VC_REQUIRED, 1, &c->v) ||
        vc_arg_int(a, "kv_lora_rank", VC_REQUIRED, 1, &c->kvl) || vc_arg_bool(a, "rope_interleave", true, &c->interleave) ||
        vc_arg_bool(a, "causal", true, &c->causal) || vc_arg_float(a, "dropout", 0.0, 0.0, 1.0, &c->dropout) ||
        vc_arg_float(a, "eps", 1e-6, 0.0, 1.0, &c->eps) || vc_arg_bool(a, "complex_rope", false, &c->complex) ||
        vc_arg_int(a, "index_n_heads", 0, 0, &c->inh) || vc_arg_int(a, "index_head_dim", c->inh ? VC_REQUIRED : 0, 0, &c->ihd) ||
        vc_arg_int(a, "index_topk", c->inh ? VC_REQUIRED : 0, 0, &c->itopk) ||
        vc_arg_enum(a, "dsa_rope", dsa_rope_names, DSA_ROPE_V32, &c->dsa_rope) ||
        vc_arg_bool(a, "index_shared", false, &c->ishared))
        return -1;
    if (c->ishared && (c->inh || c->complex || vc_arg_type(a, "dsa_rope")))
        return vc_arg_fail(a, "index_shared", "a shared layer has no indexer (index_n_heads, dsa_rope) and DeepSeek-V3's rotation");
    if (c->ishared) {
        c->dsa_rope = DSA_ROPE_GLM;
        if (vc_arg_int(a, "index_topk", VC_REQUIRED, 1, &c->itopk)) return -1;
    }
    if (!c->inh && vc_arg_type(a, "dsa_rope")) return vc_arg_fail(a, "dsa_rope", "applies to an indexer (index_n_heads)");
    if (c->inh && (c->ihd < c->rope || c->itopk < 1 || c->complex))
        return vc_arg_fail(a, "index_head_dim", "the indexer needs index_head_dim >= qk_rope_head_dim, index_topk >= 1 "
                           "and DeepSeek-V3's rotation");
    if (c->complex && vc_arg_type(a, "rope_interleave"))
        return vc_arg_fail(a, "rope_interleave", "complex_rope (DeepSeek-V2's apply_rotary_emb) pairs adjacent "
                           "elements itself: no interleave");
    if (c->rope % 2) return vc_arg_fail(a, "qk_rope_head_dim", "must be even, got %lld", (long long)c->rope);
    return 0;
}

static int mla_in(vc_setup *s, int i, const char *what, int64_t L, int64_t feat)
{
    const vc_shape *x = &s->in[i];
    if (x->nd != 2 || x->d[0] != L || x->d[1] != feat)
        return vc_fail(s, "inputs", "the %s must be [%lld, %lld] per sample", what, (long long)L, (long long)feat);
    return 0;
}

static int mla_setup(vc_setup *s, void *p)
{
    const mla_cfg *c = p;
    if (s->nin != (c->inh ? 5 : 3))
        return vc_fail(s, "inputs", c->inh ? "MLAttention with an indexer takes [q, compressed_kv, rope, q_resid, hidden]: "
                       "5 inputs, got %d" : "MLAttention takes [q, compressed_kv, rope]: 3 inputs, got %d", s->nin);
    if (s->in[0].nd != 2) return vc_fail(s, "inputs", "the query states must be [L, features] per sample");
    int64_t L = s->in[0].d[0], q, kv, o, t;
    if (vc_mul(s, c->H, c->nope + c->rope, &q) || vc_mul(s, c->H, c->nope + c->v, &kv) || vc_mul(s, c->H, c->v, &o) ||
        vc_mul(s, c->H, L, &t) || vc_mul(s, t, L, &t) || vc_mul(s, kv, c->kvl, &t))
        return -1;
    if (mla_in(s, 0, "query states", L, q) || mla_in(s, 1, "compressed_kv", L, c->kvl + c->rope)) return -1;
    const vc_shape *r = &s->in[2];
    const int64_t rd = c->complex ? c->rope / 2 : c->rope; /* a complex RotaryEmbedding's freqs_cis */
    if (r->nd != 3 || r->d[0] != 2 || r->d[1] != L || r->d[2] != rd)
        return vc_fail(s, "inputs", "the rope input must be a%s RotaryEmbedding's [2, %lld, %lld]", c->complex ? " complex" : "",
                       (long long)L, (long long)rd);
    int64_t d[2] = {L, o};
    s->out = vc_shape_make(2, d);
    if (vc_param(s, "kv_a_layernorm.weight", c->kvl) ||
        vc_param_shape(s, "kv_b_proj.weight", 2, (int64_t[2]){kv, c->kvl}, VC_PARAM_LINEAR))
        return -1;
    if (c->ishared) s->ops += 10; /* the index mask from the carried top-k (dsa_index_mask) and the causal mask */
    if (!c->inh) return 0;
    s->ops += 48 + (c->dsa_rope == DSA_ROPE_GLM ? 4 : 0); /* the indexer's ops and the index mask (dsa_mask); GLM-MoE-DSA's four reshape copies */
    /* DeepseekV32Indexer.__init__: wq_b nn.Linear(q_lora_rank, index_n_heads x index_head_dim), wk nn.Linear(hidden,
     * index_head_dim), k_norm nn.LayerNorm(index_head_dim), weights_proj nn.Linear(hidden, index_n_heads), no biases;
     * wk and weights_proj unquantized (vLLM's wk_weights_proj, quant_config None: src/engine/serve.c) */
    const vc_shape *qr = &s->in[3], *hs = &s->in[4];
    if (qr->nd != 2 || qr->d[0] != L || hs->nd != 2 || hs->d[0] != L)
        return vc_fail(s, "inputs", "q_resid and the hidden states must be [%lld, features] per sample", (long long)L);
    const int64_t qlr = qr->d[1], hid = hs->d[1];
    if (vc_mul(s, c->inh, c->ihd, &t) || vc_mul(s, t, qlr, &t) || vc_mul(s, c->ihd + c->inh, hid, &t)) return -1;
    return vc_param_shape(s, "indexer.wq_b.weight", 2, (int64_t[2]){c->inh * c->ihd, qlr}, VC_PARAM_LINEAR | VC_PARAM_FROZEN) ||
           vc_param_shape(s, "indexer.wk.weight", 2, (int64_t[2]){c->ihd, hid}, VC_PARAM_FROZEN) ||
           vc_param_shape(s, "indexer.k_norm.weight", 1, (int64_t[1]){c->ihd}, VC_PARAM_FROZEN) ||
           vc_param_shape(s, "indexer.k_norm.bias", 1, (int64_t[1]){c->ihd}, VC_PARAM_FROZEN) ||
           vc_param_shape(s, "indexer.weights_proj.weight", 2, (int64_t[2]){c->inh, hid}, VC_PARAM_FROZEN);
}

/* cat((a, b), dim=-1) into n elements: a new tensor (contiguous [B, H, L, D]);
 * CatBackward0 hands each input a slice of the gradient. b_grad: how b's
 * gradient is made (VC_GRAD_REDUCE for an expanded view: ExpandBackward0's
 * sum_to, a new tensor of b's size). */
static vc_t cat2(vc_build *b, vc_t x, vc_t y, vc_numel n, int y_grad)
{
    vc_op *o = vc_op_begin(b, "cat");
    vc_op_grad(o, vc_op_in(o, x), VC_GRAD_PASS);
    vc_op_grad(o, vc_op_in(o, y), y_grad);
    vc_t r = vc_op_out(o, n, vc_dt_of(b, x));
    vc_op_end(o);
    return r;
}

/* apply_rotary_pos_emb(_interleave) on x [B, heads, L, rope] (a strided view):
 * with interleave, the view/transpose/reshape copy first. */
static vc_t mla_rope(vc_build *b, const mla_cfg *c, vc_t x, vc_t cs, int64_t heads, int64_t L)
{
    if (c->interleave) x = vc__op_clone(b, x); /* .reshape(b, h, s, d) of the transposed view: a copy */
    return vc__rope_apply(b, x, cs, heads, L, c->rope, c->rope);
}

/* apply_rotary_emb (modeling_deepseek_v2.py) on q_pe [B, H, L, rope] and k_pe [B, 1, L, rope]. */
static void mla_rope_complex(vc_build *b, const mla_cfg *c, vc_t *q, vc_t *k, vc_t cs, int64_t L)
{
    const vc_dtype dt = vc_dt_of(b, *q);
    vc_t qf = vc__op_cast(b, *q, VC_DT_F32), kf = vc__op_cast(b, *k, VC_DT_F32);
    vc_hold(b, qf);
    vc_hold(b, kf);
    vc_t q2 = vc__op_cast(b, vc__op_mul_dt(b, qf, cs, vc_n_sample(L * c->H * c->rope), VC_DT_F32), dt);
    vc_t k2 = vc__op_cast(b, vc__op_mul_dt(b, kf, cs, vc_n_sample(L * c->rope), VC_DT_F32), dt);
    vc_release(b, qf);
    vc_release(b, kf);
    *q = q2;
    *k = k2;
}

/* kv_b_proj(kn).view(key_shape).transpose(1, 2), split into k_nope and value_states: views */
static void mla_kv_b(vc_build *b, const mla_cfg *c, vc_t kn, int64_t L, vc_t *k_nope, vc_t *val)
{
    vc_t kvb = vc__op_linear(b, kn, vc_weight(b, 1), -1, L, c->kvl, c->H * (c->nope + c->v));
    kvb = vc__op_view(b, kvb, vc_numel_of(b, kvb), false);
    *k_nope = vc__op_view(b, kvb, vc_n_sample(c->H * L * c->nope), false);
    *val = vc__op_view(b, kvb, vc_n_sample(c->H * L * c->v), false);
}

/* An op of no gradient from x and y (-1: none). */
static vc_t ng(vc_build *b, const char *name, vc_t x, vc_t y, int64_t per_sample, vc_dtype dt)
{
    return vc__op_nograd(b, name, x, y, vc_n_sample(per_sample), dt);
}

/* DeepseekV32Model.forward's create_causal_mask(..., allow_is_causal_skip=False) under sdpa (masking_utils
 * sdpa_mask, _non_vmap_expansion_sdpa): causal_mask_function(kv_arange <= q_arange) of arange(L) + past and
 * arange(T): bool [1, 1, L, T] expanded to the batch (a view), made once per forward, kept until it returns. */
static vc_t dsa_causal(vc_build *b, int64_t L, int64_t T)
{
    vc_t m = vc_forward_local(b);
    if (m >= 0) return m;
    vc_t ar = vc__op_new(b, "arange", vc_n_fixed(L), VC_DT_I64);
    vc_t aq = vc__op_nograd(b, "add", ar, -1, vc_n_fixed(L), VC_DT_I64);
    vc_t ak = vc__op_new(b, "arange", vc_n_fixed(T), VC_DT_I64);
    m = vc__op_nograd(b, "le", ak, aq, vc_n_fixed(L * T), VC_DT_BOOL);
    vc_set_forward_local(b, m);
    return m;
}

/* The index mask DeepseekV32Attention.forward (and GlmMoeDsaAttention's) builds from topk_indices loc[0] (int32
 * [B, L, K]) under sdpa / eager: index_mask = new_ones([B, S, T], bool).scatter(-1, topk_indices.long(), False);
 * attention_mask & ~index_mask (cm the causal mask); loc[1], loc[2] receive index_mask and the combined mask, forward's
 * locals; returns the float mask sdpa converts it to. */
static vc_t dsa_index_mask(vc_build *b, int64_t L, int64_t T, int64_t K, vc_t cm, vc_dtype qdt, vc_t loc[3])
{
    vc_t ones = vc__op_new(b, "new_ones", vc_n_sample(L * T), VC_DT_BOOL);
    loc[1] = ng(b, "scatter", ones, ng(b, "_to_copy", loc[0], -1, L * K, VC_DT_I64), L * T, VC_DT_BOOL);
    vc_hold(b, loc[1]);
    loc[2] = ng(b, "bitwise_and", cm, ng(b, "bitwise_not", loc[1], -1, L * T, VC_DT_BOOL), L * T, VC_DT_BOOL);
    vc_hold(b, loc[2]);
    /* F.scaled_dot_product_attention's convert_boolean_attn_mask: where(mask, 0, -inf) in the query's dtype */
    return ng(b, "where", loc[2], -1, L * T, qdt);
}

/* DeepseekV32Indexer.forward (@torch.no_grad) and the index mask DeepseekV32Attention.forward builds from it, on
 * L queries and T keys (the cache's after its update): returns the bool mask sdpa converts (attention_mask &
 * ~index_mask); loc receives forward's locals alive to its return (topk_indices, index_mask, that mask). */
static vc_t dsa_mask(vc_build *b, const mla_cfg *c, int64_t L, int64_t T, vc_dtype qdt, vc_t loc[3])
{
    const int64_t NH = c->inh, HD = c->ihd, R = c->rope, K = c->itopk < T ? c->itopk : T;
    const vc_t qr = vc_input(b, 3), hs = vc_input(b, 4), cs = vc_input(b, 2), cm = dsa_causal(b, L, T);
    const vc_dtype dt = vc_dt_of(b, hs);
    /* q = wq_b(q_resid).view(B, S, nh, hd); split [rope, hd - rope]: views */
    vc_t qi = ng(b, "linear", qr, vc_weight(b, 2), L * NH * HD, dt);
    vc_t q_rot = vc__op_view(b, qi, vc_n_sample(L * NH * R), false), q_pass = vc__op_view(b, qi, vc_n_sample(L * NH * (HD - R)), false);
    /* k = k_norm(wk(hidden_states)): native_layer_norm's output and its float32 mean / rstd */
    vc_t kw = ng(b, "linear", hs, vc_weight(b, 3), L * HD, dt);
    vc_op *o = vc_op_begin(b, "native_layer_norm");
    vc_op_in_nodiff(o, kw);
    vc_op_in_nodiff(o, vc_weight(b, 4));
    vc_op_in_nodiff(o, vc_weight(b, 5));
    vc_t kn = vc_op_out(o, vc_n_sample(L * HD), dt);
    vc_op_out(o, vc_n_sample(L), VC_DT_F32);
    vc_op_out(o, vc_n_sample(L), VC_DT_F32);
    vc_op_end(o);
    vc_t k_rot = vc__op_view(b, kn, vc_n_sample(L * R), false), k_pass = vc__op_view(b, kn, vc_n_sample(L * (HD - R)), false);
    /* apply_rotary_pos_emb (rotate_half, unsqueeze_dim=2) on the rotary parts; GLM-MoE-DSA's indexer
     * apply_rotary_pos_emb_interleave, its reshape copy first (dsa_rope_names); cat([rot, pass]) */
    if (c->dsa_rope == DSA_ROPE_GLM) {
        q_rot = vc__op_clone(b, q_rot);
        k_rot = vc__op_clone(b, k_rot);
    }
    q_rot = vc__rope_apply(b, q_rot, cs, NH, L, R, R);
    k_rot = vc__rope_apply(b, k_rot, cs, 1, L, R, R);
    vc_t q = ng(b, "cat", q_rot, q_pass, L * NH * HD, dt);
    vc_t k = ng(b, "cat", k_rot, k_pass, L * HD, dt);
    /* the indexer's locals alive to its return: wq_b's output (q_pass's base), k_norm's (k_pass's), the rotated parts,
     * then scores and weights */
    vc_t il[6] = {qi, kn, q_rot, k_rot, -1, -1};
    for (int i = 0; i < 4; i++) vc_hold(b, il[i]);
    /* past_key_values.update_indexer(k) (cache_utils DynamicIndexedLayer, read through the code search without a
     * pinned commit: indexer_keys = cat([indexer_keys, k], dim=1), the whole returned; the first a copy of k): a slot
     * generate keeps to the end */
    int32_t *slot = vc_kv_indexer(b);
    if (slot) {
        slot[0] = ng(b, "cat", slot[0], k, T * HD, dt);
        k = slot[0];
    }
    /* scores = matmul(q.float(), k.transpose(-1, -2).float().unsqueeze(1)): matmul (LinearAlgebra.cpp _matmul_impl)
     * expands the key to [B, S, hd, T] and reshapes it to [B * S, hd, T]: a copy when both B and S exceed 1 (the
     * stride-0 S cannot merge with B; with B or S 1 a view); bmm into float32 [B, S, nh, T] */
    vc_t qf = vc__op_cast(b, q, VC_DT_F32), kf = vc__op_cast(b, k, VC_DT_F32);
    vc_t kx = L > 1 && !vc_batch_is_one(b) ? ng(b, "expand_reshape", kf, -1, L * HD * T, VC_DT_F32) : kf;
    vc_t sc = ng(b, "bmm", qf, kx, L * NH * T, VC_DT_F32);
    sc = ng(b, "mul", sc, -1, L * NH * T, VC_DT_F32); /* * softmax_scale */
    sc = ng(b, "relu", sc, -1, L * NH * T, VC_DT_F32);
    vc_hold(b, sc);
    /* weights = weights_proj(hidden_states).float() * nh^-0.5; index_scores = matmul(weights.unsqueeze(-2), scores) */
    vc_t wt = vc__op_cast(b, ng(b, "linear", hs, vc_weight(b, 6), L * NH, dt), VC_DT_F32);
    wt = ng(b, "mul", wt, -1, L * NH, VC_DT_F32);
    vc_hold(b, wt);
    vc_t is = ng(b, "bmm", wt, sc, L * T, VC_DT_F32);
    il[4] = sc;
    il[5] = wt;
    /* masked_fill(~attention_mask[:, 0], -inf): [B, S, T] */
    is = ng(b, "masked_fill", is, ng(b, "bitwise_not", cm, -1, L * T, VC_DT_BOOL), L * T, VC_DT_F32);
    /* index_scores.topk(min(index_topk, T)).indices.to(int32): the (values, indices) tuple alive through the cast */
    o = vc_op_begin(b, "topk");
    vc_op_in_nodiff(o, is);
    vc_t tv = vc_op_out(o, vc_n_sample(L * K), VC_DT_F32);
    vc_t ti = vc_op_out(o, vc_n_sample(L * K), VC_DT_I64);
    vc_op_end(o);
    loc[0] = ng(b, "_to_copy", ti, tv, L * K, VC_DT_I32);
    vc_hold(b, loc[0]);
    for (int i = 0; i < 6; i++) vc_release(b, il[i]); /* the indexer returns */
    return dsa_index_mask(b, L, T, K, cm, qdt, loc);
}

/* GlmMoeDsaAttention in a "shared" layer (modular_glm_moe_dsa.py @ 01f8fa55): self.indexer None, topk_indices =
 * prev_topk_indices (GlmMoeDsaModel.forward's variable: vc_dsa_topk), the index mask built from it as in a full
 * layer; K its width, min(index_topk, T) as the full layer's topk made it. */
static vc_t dsa_shared_mask(vc_build *b, const mla_cfg *c, int64_t L, int64_t T, vc_dtype qdt, vc_t loc[3])
{
    loc[0] = vc_dsa_topk(b);
    if (loc[0] < 0) { /* layer 0 shared: the config check refuses it (src/hf/hf_deepseek_v32.c) */
        vc_refuse(b, NULL, "a shared DSA layer (index_shared) needs the top-k of a full indexer layer before it");
        return -1;
    }
    return dsa_index_mask(b, L, T, c->itopk < T ? c->itopk : T, dsa_causal(b, L, T), qdt, loc);
}

static void mla_emit(vc_build *b, const void *p)
{
    const mla_cfg *c = p;
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->H, qk = c->nope + c->rope;
    const bool dsa = c->inh || c->ishared; /* DeepseekV32Attention / GlmMoeDsaAttention, a shared layer's too */
    vc_t qs = vc_input(b, 0), ckv = vc_input(b, 1), cs = vc_input(b, 2);
    /* q_states.view(query_shape).transpose(1, 2); torch.split: views */
    qs = vc__op_view(b, qs, vc_numel_of(b, qs), false);
    vc_t q_pass = vc__op_view(b, qs, vc_n_sample(H * L * c->nope), false);
    vc_t q_rot = vc__op_view(b, qs, vc_n_sample(H * L * c->rope), false);
    /* torch.split(compressed_kv, [kv_lora_rank, rope]): one node, whose backward
     * makes a gradient of compressed_kv's size (the two halves' gradients cat) */
    vc_op *o = vc_op_begin(b, "split_with_sizes");
    int ic = vc_op_in(o, ckv);
    vc_t k_pass = vc_op_out_view(o, ic, vc_n_sample(L * c->kvl), false);
    vc_t k_rot = vc_op_out_view(o, ic, vc_n_sample(L * c->rope), false);
    vc_op_end(o);
    /* self.kv_b_proj(self.kv_a_layernorm(k_pass)); DeepseekV32Attention: k_pass = kv_a_layernorm(kv_pass), a local
     * alive to its return, and kv_b_proj (expand_kv) after the rotations and query_states */
    vc_t kn = vc__hf_rmsnorm(b, k_pass, vc_weight(b, 0), vc_n_sample(L), 0), k_nope = -1, val = -1;
    if (dsa) vc_hold(b, kn);
    else mla_kv_b(b, c, kn, L, &k_nope, &val);
    /* k_rot.view(B, 1, L, rope); the rotations */
    k_rot = vc__op_view(b, k_rot, vc_numel_of(b, k_rot), false);
    if (c->complex) {
        mla_rope_complex(b, c, &q_rot, &k_rot, cs, L);
    } else if (dsa) { /* DeepSeek-V3.2's apply_rotary_pos_emb_interleave: even / odd slices, no copy (GLM-MoE-DSA:
                          * DeepSeek-V3's, the reshape copy first: mla_rope); the rotated q_rot and k_rot locals alive
                          * to forward's return */
        q_rot = c->dsa_rope == DSA_ROPE_GLM ? mla_rope(b, c, q_rot, cs, H, L) : vc__rope_apply_half(b, q_rot, cs, H, L, c->rope);
        k_rot = c->dsa_rope == DSA_ROPE_GLM ? mla_rope(b, c, k_rot, cs, 1, L) : vc__rope_apply_half(b, k_rot, cs, 1, L, c->rope);
        vc_hold(b, q_rot);
        vc_hold(b, k_rot);
    } else {
        q_rot = mla_rope(b, c, q_rot, cs, H, L);
        k_rot = mla_rope(b, c, k_rot, cs, 1, L);
    }
    /* query_states = cat((q_pass, q_rot)); key_states = cat((k_pass, k_rot.expand(...))) (DeepSeek-V3.2's
     * expand_kv: new_empty and two copy_, one new tensor as the cat) */
    vc_t q = cat2(b, q_pass, q_rot, vc_n_sample(H * L * qk), VC_GRAD_PASS);
    if (dsa) mla_kv_b(b, c, kn, L, &k_nope, &val);
    vc_t k = cat2(b, k_nope, k_rot, vc_n_sample(H * L * qk), VC_GRAD_REDUCE);
    /* sdpa_attention_forward: q, k contiguous [B, H, L, qk]; the value a view of
     * kv_b_proj's [B, L, H, nope + v] output */
    vc_sdpa_args a = {H, H, L, L, qk, false, false, true, c->causal, c->dropout, c->v, false};
    /* generate(): DynamicLayer.update(key_states, value_states) caches both, full
     * heads; vLLM keeps the latent, kv_lora_rank + rope per token (one head) */
    if (vc_kv_update_latent(b, c->kvl + c->rope, &k, &val, &a.S)) {
        a.k_blhd = a.v_blhd = false;
        a.causal = c->causal && L > 1;
    }
    vc_t ixl[3] = {-1, -1, -1};
    if (dsa) { /* query_states, key_states, value_states: DeepseekV32Attention.forward's locals to its return */
        vc_hold(b, q);
        vc_hold(b, k);
        vc_hold(b, val);
    }
    if ((c->inh || c->ishared) && !vc_serving(b)) { /* the indexer's mask joins the causal one: sdpa with a mask */
        a.masked = true;
        a.causal = false;
        a.mask = c->ishared ? dsa_shared_mask(b, c, L, a.S, vc_dt_of(b, q), ixl) : dsa_mask(b, c, L, a.S, vc_dt_of(b, q), ixl);
        if (a.mask < 0) return;
        /* the converted mask is a C++ local of F.scaled_dot_product_attention (attention.cpp
         * scaled_dot_product_attention: attn_mask = convert_boolean_attn_mask(attn_mask_, query.dtype()), then the
         * backend call; cyyever/pytorch @0d188885, as sliding_mask_args in layers/llm.c): alive until the call
         * returns, not only to the backend's add_ of it into the scores */
        vc_hold(b, a.mask);
    }
    bool blhd = false;
    vc_t y = vc__op_sdpa_gqa(b, q, k, val, &a, &blhd);
    if (a.masked && (c->inh || c->ishared) && !vc_serving(b)) vc_release(b, a.mask);
    for (int i = c->ishared; i < 3; i++) /* forward's locals topk_indices, index_mask, the combined attention_mask */
        if (ixl[i] >= 0) vc_release(b, ixl[i]);
    /* GlmMoeDsaDecoderLayer returns topk_indices; GlmMoeDsaModel.forward keeps it as its loop variable (vc_dsa_topk) */
    if (c->dsa_rope == DSA_ROPE_GLM && ixl[0] >= 0) vc_set_dsa_topk(b, ixl[0]);
    if (dsa) { /* k_pass, q_rot, k_rot, the states */
        vc_release(b, q);
        vc_release(b, k);
        vc_release(b, val);
        vc_release(b, kn);
        vc_release(b, q_rot);
        vc_release(b, k_rot);
    }
    /* attn_output.transpose(1, 2).contiguous() (sdpa_attention_forward), then
     * reshape(B, L, -1).contiguous(): a view */
    y = vc__op_view(b, y, vc_numel_of(b, y), blhd);
    y = vc__op_contiguous(b, y);
    vc_set_output(b, vc__op_view(b, y, vc_numel_of(b, y), true));
    vc_kv_end(b);
}

const vc_kind vc_kind_MLAttention = {
    .ops = 47,
    .name = "MLAttention",
    .summary = "DeepSeek's multi-head latent attention core: q states + compressed_kv + rope -> kv_a_layernorm, kv_b_proj, "
               "SDPA -> [L, H*v]",
    .min_inputs = 3, .max_inputs = 5, .cfg_size = sizeof(mla_cfg),
    .parse = mla_parse, .setup = mla_setup, .emit = mla_emit,
};
