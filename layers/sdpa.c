/*
 * sdpa.c — scaled_dot_product_attention's backends (docs/autograd.md §4.4–4.8):
 * the choice (vc_sdpa_pick), the math kernel with its release-dependent
 * softmax (--torch), flash and memory-efficient attention, each as the ops
 * it allocates and saves. Used by attention.c (MultiheadAttention's SDPA
 * path, the native fast path's SDPA-backed branch, the SDPA layer kind).
 */
#include "attention_int.h"
#include "release.h"

/* SMs of the GPU the flash split-KV heuristic sees (H100 SXM, A100). */
#define VC_SMS_HOPPER 132
#define VC_SMS_OTHER 108

/* Whether the memory-efficient kernel runs with an attn_mask at this release (release.c
 * VC_REL_MEFF_MASK: 2.0's check_for_attn_mask rules out both fused kernels; 2.1 on take it). */
static bool vc_sdpa_eff_takes_mask(vc_build *b, bool masked)
{
    return !masked || vc_release_value(vc__op_torch(b), VC_REL_MEFF_MASK) != VC_MEFF_MASK_NONE;
}

/* §4.4: flash for fp16/bf16 with equal head dims up to the release's limit
 * (VC_REL_FLASH_HDIM: 128 before 2.2's FlashAttention v2, 256 since),
 * memory-efficient for fp32/fp16/bf16 with aligned head dims, math
 * otherwise; a requested backend that cannot run falls back in that order.
 * cuDNN attention (sdp_utils.cpp priority_order: first on sm90/sm100 when
 * check_prefer_cudnn_attention holds) is not modelled. */
int vc_sdpa_pick(vc_build *b, const sdpa_t *g, vc_dtype dt)
{
    bool half = is_half(dt);
    /* sdp_utils.cpp check_for_attn_mask: flash takes no attn_mask (ModernBERT's float masks) */
    bool flash = !g->masked && g->fused && half && g->D == g->Dv && g->D <= vc_release_value(vc__op_torch(b), VC_REL_FLASH_HDIM);
    int64_t align = half ? 8 : 4; /* minimum_gemm_alignment on sm80+ */
    bool eff = g->fused && g->D % align == 0 && g->Dv % align == 0 && vc_sdpa_eff_takes_mask(b, g->masked);
    switch (vc_opts(b)->attention) {
    case VC_ATTN_MATH: return BK_MATH;
    case VC_ATTN_EFFICIENT: return eff ? BK_EFFICIENT : BK_MATH;
    default: return flash ? BK_FLASH : eff ? BK_EFFICIENT : BK_MATH;
    }
}

/* The math backend's softmax (attention.cpp, _scaled_dot_product_attention_math),
 * by release (--torch, the VC_REL_SOFTMAX rows of release.c):
 *  - before 2.5: at::softmax(attn, -1): the result only;
 *  - 2.5: at::_safe_softmax: out = softmax(self), masked = self.eq(-inf)
 *    (bool [B, H, L, S]), masked_rows = all(masked, -1, keepdim) and two 0-d
 *    device tensors (scalar_tensor(-inf), scalar_tensor(0.0): 512 B blocks),
 *    then at::where(masked_rows, zero, out): a new result, allocated while
 *    out and the masks are alive;
 *  - 2.6 and later (PyTorch PR #139613): at::where_out(out, masked_rows,
 *    zero, out) writes into the softmax output: no separate result.
 * Keeps its result. */
static vc_t safe_softmax(vc_build *b, vc_t x, int64_t rows_ps)
{
    const int form = vc_release_value(vc__op_torch(b), VC_REL_SOFTMAX);
    const bool safe = form != VC_SOFTMAX_PLAIN, where_new = form == VC_SOFTMAX_SAFE_WHERE;
    vc_op *o = vc_op_begin(b, safe ? "_safe_softmax" : "_softmax");
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    if (safe) {
        tparts t = {0};
        if (where_new) tp_add(&t, vc_numel_of(b, x), vc_dt_of(b, x), 0);
        tp_add(&t, vc_numel_of(b, x), VC_DT_BOOL, 0);
        tp_add(&t, vc_n_sample(rows_ps), VC_DT_BOOL, 0);
        tp_add(&t, vc_n_fixed(2 * 512), VC_DT_U8, 0);
        vc_op_ftemp_parts(o, t.p, t.n, false);
    }
    vc_op_save(o, y);
    vc_op_end(o);
    return y;
}

/* _scaled_dot_product_attention_math (§4.8). */
static vc_t sdpa_math(vc_build *b, vc_t q, vc_t k, vc_t v, sdpa_t *g)
{
    const int64_t H = g->H, L = g->L, S = g->S, Dv = g->Dv;
    const vc_dtype odt = vc_dt_of(b, q);
    /* query_acc/key_acc/value_acc: fp32 copies of fp16/bf16 inputs */
    vc_t qa = is_half(odt) ? vc__op_cast(b, q, VC_DT_F32) : q;
    vc_t ka = is_half(vc_dt_of(b, k)) ? vc__op_cast(b, k, VC_DT_F32) : k;
    vc_t va = is_half(vc_dt_of(b, v)) ? vc__op_cast(b, v, VC_DT_F32) : v;
    vc_t qs = mul_scalar(b, qa); /* query = query_acc * sqrt(scale) */
    vc_t mask = -1;
    if (g->causal) { /* ones({L, S}, bool).tril() -> where(!mask, -inf, 0) */
        vc_t ones = nodiff(b, "ones", -1, vc_n_fixed(L * S), VC_DT_BOOL);
        vc_t tril = nodiff(b, "tril", ones, vc_n_fixed(L * S), VC_DT_BOOL);
        vc_t notm = nodiff(b, "logical_not", tril, vc_n_fixed(L * S), VC_DT_BOOL);
        mask = nodiff(b, "where", notm, vc_n_fixed(L * S), vc_dt_of(b, qs));
        vc_release(b, tril); /* replaced by the converted mask after `where` */
    }
    if (g->masked) mask = g->mask; /* a float attn_mask (ModernBERT's): the caller's, added in place below */
    vc_t ke = ka, ve = va;
    if (g->gqa_inside) { /* pre_process_group_query_attention_input: key_acc.repeat_interleave(H / Hkv, -3) */
        ke = vc__op_fresh(b, "repeat_interleave", ka, vc_n_sample(H * S * g->D));
        ve = vc__op_fresh(b, "repeat_interleave", va, vc_n_sample(H * S * Dv));
    }
    vc_t ks = mul_scalar(b, ke); /* key_expanded.transpose(-2, -1) * sqrt(scale) */
    /* matmul reshapes [.., L, D] to [B*, L, D]: a copy (saved instead) when
     * the leading dims cannot merge */
    vc_t qm = g->fold_q ? copy_op(b, qs) : qs;
    /* gqa_bcast: at::matmul expands the [B, Hkv, ..] operand to the query's heads and reshapes it
     * to 3-D (LinearAlgebra.cpp _matmul_impl, tensor2.expand(tensor2_expand_size).reshape(
     * {expand_batch_product, m2, p})): a [B*H, D, S] copy, made in the call (and saved by its bmm),
     * unless the batch is one: the size-1 batch dim merges with the stride-0 head dim, a view
     * (TensorUtils.cpp computeStride_impl skips size-1 dims; measured: falcon_replica.py's decode
     * at --batch 1 on torch 1.13 runs expand, _reshape_alias, bmm with no copy) */
    const bool bcast_copy = g->gqa_bcast && g->N != 1;
    vc_t km = bcast_copy ? vc__op_fresh(b, "expand_reshape", ks, vc_n_sample(H * S * g->D)) : g->fold_k ? copy_op(b, ks) : ks;
    /* inside scaled_dot_product_attention the autocast key is excluded: no casts */
    vc_t attn = vc__op_bmm_raw(b, qm, km, vc_n_sample(H * L * S));
    vc_release(b, ks); /* a temporary argument of matmul: alive until it returns */
    if (mask >= 0) { /* attn.add_(attn_mask) */
        vc_op *o = vc_op_begin(b, "add_");
        int ia = vc_op_in(o, attn);
        vc_op_in_nodiff(o, mask);
        attn = vc_op_out_view(o, ia, vc_numel_of(b, attn), true);
        vc_op_grad(o, ia, VC_GRAD_PASS);
        vc_op_end(o);
    }
    attn = safe_softmax(b, attn, H * L);
    attn = vc__op_dropout(b, attn, g->p);
    /* return make_tuple(matmul(attn, v).to(dt), attn.to(dt)): the
     * temporaries of the return statement live until it ends, so the fp32
     * matmul result, its cast and the discarded second output (a copy for
     * fp16/bf16) are alive together whatever the evaluation order */
    vc_t second = is_half(odt) ? vc__op_cast(b, attn, odt) : -1;
    vc_t vm = bcast_copy ? vc__op_fresh(b, "expand_reshape", ve, vc_n_sample(H * S * Dv)) : g->fold_v ? copy_op(b, ve) : ve;
    vc_t o = vc__op_bmm_raw(b, attn, vm, vc_n_sample(H * L * Dv));
    o = vc__op_cast(b, o, odt);
    /* C++ locals live until the function returns: `attn` too (a named local of
     * _scaled_dot_product_attention_math, rebound by _safe_softmax and dropout),
     * so without autograd holding it the fp32 probabilities are alive beside the
     * fp32 matmul result, its cast and `second` (cyyever/pytorch @0d188885,
     * aten/src/ATen/native/transformers/attention.cpp) */
    vc_release(b, attn);
    vc_release(b, second);
    vc_release(b, qa);
    vc_release(b, ka);
    vc_release(b, va);
    if (g->gqa_inside) {
        vc_release(b, ke);
        vc_release(b, ve);
    }
    vc_release(b, qs);
    if (!g->masked) vc_release(b, mask);
    g->lout = LAY_BHLD;
    return o;
}

/* constant_pad_nd: a new tensor; backward slices the gradient (a copy). */
static vc_t pad_op(vc_build *b, vc_t x, vc_numel n) { return vc__op_fresh(b, "constant_pad_nd", x, n); }

static int64_t flash_sms(vc_build *b) { return 2 * (vc_opts(b)->hopper ? VC_SMS_HOPPER : VC_SMS_OTHER); }

/* flash's num_splits_heuristic (flash_api.cpp), used when p_dropout == 0. */
static int64_t flash_splits(vc_build *b, int64_t N, int64_t H, int64_t L, int64_t S, int64_t D)
{
    int64_t sms = flash_sms(b);
    int64_t block_n = D <= 64 ? 256 : D <= 128 ? 128 : 64;
    int64_t nblocks = ceil_div(S, block_n), mblocks = ceil_div(L, 64);
    int64_t bhm = sat_mul(sat_mul(N, H), mblocks);
    if ((double)bhm >= 0.8 * (double)sms) return 1;
    int64_t max_splits = min64(min64(128, sms), nblocks);
    double eff[129], best = 0;
    for (int64_t s = 1; s <= max_splits; s++) {
        bool ok = s == 1 || ceil_div(nblocks, s) != ceil_div(nblocks, s - 1);
        eff[s] = 0;
        if (!ok) continue;
        int64_t blocks = bhm * s; /* bhm < 0.8 * sms: no overflow */
        double waves = (double)blocks / (double)sms;
        eff[s] = waves / (double)ceil_div(blocks, sms);
        if (eff[s] > best) best = eff[s];
    }
    for (int64_t s = 1; s <= max_splits; s++) {
        bool ok = s == 1 || ceil_div(nblocks, s) != ceil_div(nblocks, s - 1);
        if (ok && eff[s] >= 0.85 * best) return s;
    }
    return 1;
}

/* The split count at batch n (g->D: the padded head dim); above the largest
 * batch whose (batch x heads x query blocks) is under 0.8 x 2 SMs it is 1. */
static int64_t flash_splits_at(vc_build *b, const sdpa_t *g, int64_t n)
{
    return flash_splits(b, n, g->H, g->L, g->S, g->D);
}

static int64_t flash_splits_batch(vc_build *b, const sdpa_t *g, int64_t D8)
{
    sdpa_t h = *g;
    h.D = D8;
    int64_t hm = sat_mul(g->H, ceil_div(g->L, 64)), flat = 0;
    while ((double)sat_mul(flat + 1, hm) < 0.8 * (double)flash_sms(b)) flat++;
    return batch_const(b, &h, flash_splits_at, flat);
}

/* _scaled_dot_product_flash_attention (§4.5). */
static vc_t sdpa_flash(vc_build *b, vc_t q, vc_t k, vc_t v, sdpa_t *g)
{
    const int64_t N = g->N, H = g->H, L = g->L, S = g->S, D = g->D;
    const vc_dtype dt = vc_dt_of(b, q);
    const int64_t D8 = round_up(D, 8);
    int lq = g->lq;
    if (D8 != D) { /* pad_last_dim(x, 8): padded contiguous copies are the inputs */
        q = pad_op(b, q, vc_n_sample(H * L * D8));
        k = pad_op(b, k, vc_n_sample(H * S * D8));
        v = pad_op(b, v, vc_n_sample(H * S * D8));
        lq = LAY_BHLD;
    }
    int64_t sz[4] = {N, H, L, D8};
    /* the output gradient: padded by the slice's backward (contiguous), or
     * as the caller says, or in the output's layout */
    int lgrad = D8 != D ? LAY_BHLD : g->lgrad >= 0 ? g->lgrad : lq;
    vc_op *o = vc_op_begin(b, "_scaled_dot_product_flash_attention");
    vc_op_in(o, q);
    vc_op_in(o, k);
    vc_op_in(o, v);
    vc_t out = vc_op_out(o, vc_n_sample(H * L * D8), dt); /* empty_like(q): q's layout */
    vc_op_extra(o, vc_n_sample(H * L), VC_DT_F32);        /* softmax_lse [B, H, L] (varlen: [H, total_q]) */
    vc_op_extra(o, vc_n_fixed(2), VC_DT_I64);             /* rng_state uint64 [2] */
    /* _unused uint64 []; varlen: FlashAttnVarlenFunc saves cu_seqlens_q and _k, one int32 [n + 1]
     * tensor (transformers' prepare_fa_kwargs_from_position_ids: cu_seq_lens_k = cu_seq_lens_q) */
    if (g->varlen) vc_op_extra(o, vc_n_fixed(g->varlen + 1), VC_DT_I32);
    else vc_op_extra(o, vc_n_fixed(1), VC_DT_I64);
    if (g->p == 0.0 && !g->varlen) { /* split-KV accumulators (mha_varlen_fwd: for decoding only) */
        int64_t s = flash_splits_batch(b, g, D8);
        if (s > 1) {
            int64_t dr = round_up(D8, D8 <= 128 ? 32 : 64);
            tparts t = {0};
            tp_add(&t, vc_n_sample(s * H * L), VC_DT_F32, 0);
            tp_add(&t, vc_n_sample(s * H * L * dr), VC_DT_F32, 0);
            vc_op_ftemp_parts(o, t.p, t.n, false);
        }
    }
    vc_op_save(o, q);
    vc_op_save(o, k);
    vc_op_save(o, v);
    vc_op_save(o, out);
    /* backward (mha_bwd): grad_out.contiguous() and out.contiguous() in
     * [B, L, H, D] order, softmax_d [B, H, round128(L)], dq_accum
     * [B, round128(L), H, round(D)] fp32, alive together with dq, dk, dv */
    tparts t = {0};
    /* varlen (flash-attn csrc/flash_attn/flash_api.cpp mha_varlen_bwd, Dao-AILab/flash-attention
     * @765fbd92): softmax_d [H, total_q + 128 b] and dq_accum [total_q + 128 b, H, round(D)], b the
     * sequences: 128 rows per sequence instead of the row's length rounded to 128 */
    const int64_t Lr = g->varlen ? L + 128 * g->varlen : round_up(L, 128);
    tp_add(&t, vc_n_sample(H * Lr), VC_DT_F32, 0);
    tp_add(&t, vc_n_sample(Lr * H * round_up(D8, D8 <= 128 ? 32 : 64)), VC_DT_F32, 0);
    if (!lay_contig(lgrad, sz, ORD_BLHD)) tp_add(&t, vc_n_sample(H * L * D8), dt, 0);
    if (!lay_contig(lq, sz, ORD_BLHD)) tp_add(&t, vc_n_sample(H * L * D8), dt, 0);
    /* GQA (flash_api.cpp mha_bwd): dk_expanded and dv_expanded [B, S, H, D]
     * with all H heads, summed into dk / dv afterwards */
    if (g->Hkv > 0 && g->Hkv != H) {
        tp_add(&t, vc_n_sample(H * S * D8), dt, 0);
        tp_add(&t, vc_n_sample(H * S * D8), dt, 0);
    }
    vc_op_btemp_parts(o, t.p, t.n, false);
    vc_op_end(o);
    g->lout = lq;
    if (D8 != D) return vc__op_select(b, out, vc_n_sample(H * L * D), false); /* out[..., :D] */
    if (!lay_contig(lq, sz, ORD_BHLD)) out = vc__op_view(b, out, vc_numel_of(b, out), false);
    return out;
}

/* The memory-efficient backward's fp32 accumulation workspace
 * (kernel_backward.h, workspace_size()): per (batch, head) a dQ tile buffer
 * (GradQTempStorage: a kBlockSizeI x kBlockSizeJ fp32 tile + 16 bytes) per
 * query block and head-dim block, plus dK/dV staging when the kernel cannot
 * keep them in registers. Block sizes follow cutlassB.h's sm80 dispatch
 * (first kernel whose kMaxK fits: fp32 64x64 up to D 64, 128x64 up to 128;
 * fp16/bf16 64x64 up to 64, 128x128 up to 128, 64x128 above): an estimate,
 * the choice also depends on shared memory and the GPU. */
static void eff_blocks(const sdpa_t *g, bool half, int64_t *bi, int64_t *bj, bool *in_rf)
{
    const int64_t K = max64(g->D, g->Dv);
    if (!half) {
        *bi = K <= 64 ? 64 : 128, *bj = 64, *in_rf = false;
    } else if (K <= 64) {
        *bi = 64, *bj = 64, *in_rf = true;
    } else if (K <= 128) {
        *bi = 128, *bj = 128, *in_rf = true;
    } else {
        *bi = 64, *bj = 128, *in_rf = false;
    }
}

/* The num_splits_key heuristic at batch n (16-bit, dK/dV not in registers);
 * 1 once batch x heads passes 200. */
static int64_t eff_splits_at(vc_build *b, const sdpa_t *g, int64_t n)
{
    (void)b;
    int64_t bi, bj;
    bool in_rf;
    eff_blocks(g, true, &bi, &bj, &in_rf);
    int64_t bh = sat_mul(n, g->H);
    int64_t splits = ceil_div(g->S, bj);
    if (bh >= 256 && g->S <= 2 * bj) splits = 1;
    splits = min64(splits, bh > 200 ? 0 : 200 / bh);
    return splits < 1 ? 1 : splits;
}

/* The workspace, as a part of the backward's merged transient: per (batch,
 * head) per_bh bytes, one tensor of N x H x per_bh x 4 bytes. */
static vc_part eff_workspace(vc_build *b, const sdpa_t *g, bool half, int alt)
{
    const int64_t H = g->H, L = g->L, D = g->D, Dv = g->Dv;
    int64_t bi, bj;
    bool in_rf;
    eff_blocks(g, half, &bi, &bj, &in_rf);
    int64_t gq = sat_mul(sat_mul(ceil_div(L, bi), ceil_div(D, bj)), 4 + bi * bj);
    int64_t gk = 0, gv = 0;
    if (half && !in_rf) { /* kNeedsAccumGradK/V; num_splits_key heuristic */
        int64_t splits = batch_const(b, g, eff_splits_at, 200 / H);
        gk = sat_mul(splits * bj, round_up(D, bi));
        gv = sat_mul(splits * bj, round_up(Dv, bi));
    }
    int64_t per_bh = round_up(sat_add(sat_add(gq, gk), gv), 4);
    return (vc_part){vc_n_sample(sat_mul(sat_mul(H, per_bh), 4)), VC_DT_U8, alt, 1, 1};
}

/* _scaled_dot_product_efficient_attention (§4.6). */
static vc_t sdpa_efficient(vc_build *b, vc_t q, vc_t k, vc_t v, sdpa_t *g)
{
    const int64_t N = g->N, H = g->H, L = g->L, Dv = g->Dv;
    const vc_dtype dt = vc_dt_of(b, q);
    const bool half = is_half(dt);
    int64_t sz[4] = {N, H, L, Dv};
    /* compute_logsumexp: inputs require grad and grad mode is on */
    bool lse = vc_requires_grad(b, q) || vc_requires_grad(b, k) || vc_requires_grad(b, v);
    /* an attn_mask (aten/src/ATen/native/transformers/attention.cpp preprocess_mask), by release
     * (release.c VC_REL_MEFF_MASK; 2.0 runs math instead, vc_sdpa_pick):
     *  - 2.2 and later (PR #114173; cyyever/pytorch @0d188885): mem_eff_alignment 8; a mask that is not
     *    aligned_tensor<8> (a stride other than the last not a multiple of 8: here S % 8 != 0, the masks
     *    being contiguous with S last) goes through pad_bias<8> as given: at::pad_symint to round8(S) (a new
     *    tensor of the mask's own shape, [B, 1, L, round8(S)] for a [B, 1, L, S] mask), sliced back; then
     *    expand_symint to [B, H, L, S], a view. An aligned mask is passed as it is;
     *  - 2.1 (PR #104310): expand_symint to [B, H, L, S] first, then, when S % 16 != 0, pad_bias of the
     *    expanded view: a new [B, H, L, round16(S)].
     * The kernel's attn_bias (the padded tensor, or the caller's mask) is saved for backward
     * (derivatives.yaml) */
    vc_t bias = g->masked ? g->mask : -1;
    const int form = vc_release_value(vc__op_torch(b), VC_REL_MEFF_MASK);
    if (bias >= 0 && form == VC_MEFF_MASK_PAD16 && g->S % 16) {
        bias = nodiff(b, "constant_pad_nd", bias, vc_n_sample(sat_mul(H * L, round_up(g->S, 16))), vc_dt_of(b, bias));
    } else if (bias >= 0 && form == VC_MEFF_MASK_PAD8 && g->mask_ld > 0) {
        /* transformers 4.x's sliced [L, S + 1] mask (vc_sdpa_args.mask_ld): aligned_tensor<8> reads the strides
         * (0, L x ld, ld, 1), aligned only when ld % 8 == 0; otherwise pad_bias<8> pads it by 8 - S % 8 columns
         * (8 when S % 8 == 0: pad_count = alignment - (last_dim_size % alignment)) with at::pad_symint, a new
         * contiguous [B, 1, L, S + pad_count] (the batch's stride-0 dim materialised), sliced back */
        if (g->mask_ld % 8)
            bias = nodiff(b, "constant_pad_nd", bias, vc_n_sample(sat_mul(L, g->S + 8 - g->S % 8)), vc_dt_of(b, bias));
    } else if (bias >= 0 && form == VC_MEFF_MASK_PAD8 && g->S % 8) {
        vc_numel n = vc_numel_of(b, bias); /* the mask's own shape, its last dim S widened to round8(S) */
        const int64_t S8 = round_up(g->S, 8);
        n.ps = sat_mul(ceil_div(n.ps, g->S), S8);
        n.fx = sat_mul(ceil_div(n.fx, g->S), S8);
        bias = nodiff(b, "constant_pad_nd", bias, n, vc_dt_of(b, bias));
    }
    vc_op *o = vc_op_begin(b, "_scaled_dot_product_efficient_attention");
    vc_op_in(o, q);
    vc_op_in(o, k);
    vc_op_in(o, v);
    if (bias >= 0) vc_op_in_nodiff(o, bias);
    vc_t out = vc_op_out(o, vc_n_sample(H * L * Dv), dt); /* res [B, L, H, Dv] */
    if (lse) vc_op_extra(o, vc_n_sample(H * round_up(L, 32)), VC_DT_F32);
    /* output_accum [B, L, H, Dv] fp32 when a 16-bit output needs more than
     * one value iteration (head dim above 128: estimate) */
    if (half && Dv > 128) vc_op_ftemp(o, vc_n_sample(L * H * Dv), VC_DT_F32);
    vc_op_save(o, q);
    vc_op_save(o, k);
    vc_op_save(o, v);
    vc_op_save(o, out);
    if (bias >= 0) vc_op_save(o, bias);
    /* backward: grad_out.contiguous() ([B, L, H, Dv] order); delta [B, H, L]
     * fp32 (fp32 kernels compute it as (grad_out * out).sum(-1): an fp32
     * [B, L, H, Dv] product and a [B, L, H] sum); the workspace */
    int lgrad = g->lgrad >= 0 ? g->lgrad : LAY_BLHD;
    /* go + max(pre, delta + workspace), pre = delta (16-bit) or
     * max(prod + sum, sum + delta) (fp32): the phases as alternatives, each
     * with go, capped at 2^60 bytes */
    bool go = !lay_contig(lgrad, sz, ORD_BLHD);
    const vc_numel delta = vc_n_sample(H * L);
    tparts t = {0};
    int nalt = half ? 2 : 3;
    for (int a = 0; a < nalt && go; a++) tp_add(&t, vc_n_sample(H * L * Dv), dt, a);
    if (half) {
        tp_add(&t, delta, VC_DT_F32, 0);
    } else {
        tp_add(&t, vc_n_sample(L * H * Dv), VC_DT_F32, 0); /* prod */
        tp_add(&t, vc_n_sample(L * H), VC_DT_F32, 0);      /* sum */
        tp_add(&t, vc_n_sample(L * H), VC_DT_F32, 1);
        tp_add(&t, delta, VC_DT_F32, 1);
    }
    tp_add(&t, delta, VC_DT_F32, nalt - 1);
    if (t.n < VC_MAX_PARTS) t.p[t.n++] = eff_workspace(b, g, half, nalt - 1);
    vc_op_btemp_parts(o, t.p, t.n, true);
    vc_op_end(o);
    g->lout = LAY_BLHD;
    /* returned as res.transpose(1, 2) */
    if (!lay_contig(LAY_BLHD, sz, ORD_BHLD)) out = vc__op_view(b, out, vc_numel_of(b, out), false);
    return out;
}

vc_t vc_sdpa_run(vc_build *b, vc_t q, vc_t k, vc_t v, sdpa_t *g)
{
    switch (g->backend) {
    case BK_FLASH: return sdpa_flash(b, q, k, v, g);
    case BK_EFFICIENT: return sdpa_efficient(b, q, k, v, g);
    default: return sdpa_math(b, q, k, v, g);
    }
}

/* ---- vc__op_sdpa_gqa (ops.h): the backends for layers/llm.c (issue 12) ---- */

vc_t vc__op_sdpa_gqa(vc_build *b, vc_t q, vc_t k, vc_t v, const vc_sdpa_args *a, bool *out_blhd)
{
    (void)vc_batch_is_one(b); /* the layouts below see the batch dim's size: 1 or more */
    const int64_t Dv = a->Dv > 0 ? a->Dv : a->D;
    sdpa_t g = {vc_batch(b), a->H, a->L, a->S, a->D, Dv, true, a->q_blhd ? LAY_BLHD : LAY_BHLD,
                a->k_blhd ? LAY_BLHD : LAY_BHLD, a->v_blhd ? LAY_BLHD : LAY_BHLD, -1, false, false, false,
                vc_training(b) ? a->p : 0.0, a->causal, BK_MATH, LAY_BHLD, 0};
    g.masked = a->masked;
    g.mask = a->masked ? a->mask : -1;
    g.backend = vc_sdpa_pick(b, &g, vc_dt_of(b, q));
    g.Hkv = a->Hkv;
    g.varlen = a->varlen;
    g.mask_ld = a->masked ? a->mask_ld : 0;
    if (a->varlen) g.backend = BK_FLASH; /* flash-attn's own kernel, whatever SDPA would pick (ra_emit checks dtype and head dim) */
    if (a->masked && g.backend == BK_FLASH) {
        /* an explicit attn_mask: SDPA's flash backend takes none (sdp_utils.cpp check_for_attn_mask),
         * so the choice falls to efficient or math; sdpa_efficient pads and saves the mask */
        const int64_t align = is_half(vc_dt_of(b, q)) ? 8 : 4; /* as vc_sdpa_pick */
        g.backend = g.D % align == 0 && g.Dv % align == 0 && vc_sdpa_eff_takes_mask(b, true) ? BK_EFFICIENT : BK_MATH;
    }
    if (a->Hkv != a->H && a->no_gqa) {
        /* F.scaled_dot_product_attention(q, k, v) without enable_gqa (FalconAttention.forward,
         * modeling_falcon.py @00dcc6dd): the fused kernels refuse differing head counts
         * (sdp_utils.cpp check_batch_size_and_num_heads_dense), the math backend broadcasts
         * k and v in its matmuls (at::matmul's expand + reshape: [B, H, S, D] copies that its
         * bmm saves, each made in its own matmul) */
        g.backend = BK_MATH;
        g.gqa_bcast = true;
    } else if (a->Hkv != a->H && g.backend != BK_FLASH) {
        /* enable_gqa: flash reads the kv heads in place; the other backends
         * run on key/value.repeat_interleave(H / Hkv, -3): new [B, H, S, D]
         * tensors. The math backend makes them itself, after its fp32 copies
         * of 16-bit inputs (attention.cpp _scaled_dot_product_attention_math:
         * query_acc/key_acc/value_acc, the causal mask, then
         * pre_process_group_query_attention_input on key_acc/value_acc) */
        sdpa_t h = g;
        h.lk = h.lv = LAY_BHLD;
        int bk = vc_sdpa_pick(b, &h, vc_dt_of(b, q));
        if (bk == BK_MATH) {
            g.backend = BK_MATH;
            g.gqa_inside = true;
        } else {
            k = vc__op_fresh(b, "repeat_interleave", k, vc_n_sample(a->H * a->S * a->D));
            v = vc__op_fresh(b, "repeat_interleave", v, vc_n_sample(a->H * a->S * Dv));
            g.lk = g.lv = LAY_BHLD;
            g.backend = bk;
        }
    }
    vc_t x[3] = {q, k, v};
    int *lay[3] = {&g.lq, &g.lk, &g.lv};
    bool *fold[3] = {&g.fold_q, &g.fold_k, &g.fold_v};
    /* at::matmul reshapes [B, heads, ., .] to [B * heads, ., .]: a view when B and heads merge
     * (stride[B] == heads * stride[heads], or either of size 1: one sample, one head), else a copy */
    for (int i = 0; i < 3; i++) {
        int64_t sz[4] = {g.N, i == 0 ? g.H : g.Hkv, i == 0 ? g.L : g.S, i == 2 ? g.Dv : g.D};
        bool one = sz[DB] == 1 || sz[DH] == 1;
        *fold[i] = *lay[i] != LAY_BHLD ? !lay_merge(*lay[i], sz, DB, DH) : !vc_contiguous(b, x[i]) && !one;
    }
    if (g.gqa_inside || g.gqa_bcast) g.fold_k = g.fold_v = false; /* the repeats are new [B, H, S, D] tensors */
    vc_t y = vc_sdpa_run(b, q, k, v, &g);
    *out_blhd = g.lout == LAY_BLHD;
    return y;
}
