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
 */
#include "ops.h"

typedef struct {
    int64_t H, nope, rope, v, kvl; /* heads, qk_nope/qk_rope/v head dims, kv_lora_rank */
    bool interleave, causal, complex;
    double dropout, eps;
} mla_cfg;

static int mla_parse(vc_args *a, void *p)
{
    mla_cfg *c = p;
    if (vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->H) || vc_arg_int(a, "qk_nope_head_dim", VC_REQUIRED, 0, &c->nope) ||
        vc_arg_int(a, "qk_rope_head_dim", VC_REQUIRED, 2, &c->rope) || vc_arg_int(a, "v_head_dim", VC_REQUIRED, 1, &c->v) ||
        vc_arg_int(a, "kv_lora_rank", VC_REQUIRED, 1, &c->kvl) || vc_arg_bool(a, "rope_interleave", true, &c->interleave) ||
        vc_arg_bool(a, "causal", true, &c->causal) || vc_arg_float(a, "dropout", 0.0, 0.0, 1.0, &c->dropout) ||
        vc_arg_float(a, "eps", 1e-6, 0.0, 1.0, &c->eps) || vc_arg_bool(a, "complex_rope", false, &c->complex))
        return -1;
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
    if (s->nin != 3) return vc_fail(s, "inputs", "MLAttention takes [q, compressed_kv, rope]: 3 inputs, got %d", s->nin);
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
    return vc_param(s, "kv_a_layernorm.weight", c->kvl) ||
           vc_param_shape(s, "kv_b_proj.weight", 2, (int64_t[2]){kv, c->kvl}, VC_PARAM_LINEAR);
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

static void mla_emit(vc_build *b, const void *p)
{
    const mla_cfg *c = p;
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->H, qk = c->nope + c->rope;
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
    /* self.kv_b_proj(self.kv_a_layernorm(k_pass)) */
    vc_t kn = vc__hf_rmsnorm(b, k_pass, vc_weight(b, 0), vc_n_sample(L), 0);
    vc_t kvb = vc__op_linear(b, kn, vc_weight(b, 1), -1, L, c->kvl, H * (c->nope + c->v));
    /* .view(key_shape).transpose(1, 2); split into k_pass and value_states: views */
    kvb = vc__op_view(b, kvb, vc_numel_of(b, kvb), false);
    vc_t k_nope = vc__op_view(b, kvb, vc_n_sample(H * L * c->nope), false);
    vc_t val = vc__op_view(b, kvb, vc_n_sample(H * L * c->v), false);
    /* k_rot.view(B, 1, L, rope); the rotations */
    k_rot = vc__op_view(b, k_rot, vc_numel_of(b, k_rot), false);
    if (c->complex) {
        mla_rope_complex(b, c, &q_rot, &k_rot, cs, L);
    } else {
        q_rot = mla_rope(b, c, q_rot, cs, H, L);
        k_rot = mla_rope(b, c, k_rot, cs, 1, L);
    }
    /* query_states = cat((q_pass, q_rot)); key_states = cat((k_pass, k_rot.expand(...))) */
    vc_t q = cat2(b, q_pass, q_rot, vc_n_sample(H * L * qk), VC_GRAD_PASS);
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
    bool blhd = false;
    vc_t y = vc__op_sdpa_gqa(b, q, k, val, &a, &blhd);
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
    .min_inputs = 3, .max_inputs = 3, .cfg_size = sizeof(mla_cfg),
    .parse = mla_parse, .setup = mla_setup, .emit = mla_emit,
};
