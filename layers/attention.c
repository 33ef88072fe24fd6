/*
 * attention.c — MultiheadAttention, ScaledDotProductAttention,
 * TransformerEncoderLayer, TransformerDecoderLayer.
 *
 * What each keeps follows docs/autograd.md §4 (PyTorch 2.x, CUDA, eager):
 *  - MultiheadAttention runs F.multi_head_attention_forward (§4.1): the
 *    module is always batch_first, so the in-projection linear sees a
 *    transposed, non-contiguous input and matmul's folding saves an L·N·E
 *    copy of it; the packed [L, N, 3E] projection is then copied into
 *    [3, L, N, E] (q, k, v are views of that copy). need_weights=True (the
 *    module default) takes the explicit L×S path (§4.2); need_weights=False
 *    calls scaled_dot_product_attention (§4.3).
 *  - scaled_dot_product_attention picks a backend (§4.4, option
 *    vc_opts(b)->attention): flash (§4.5), memory-efficient (§4.6) or math
 *    (§4.8, explicit [B, H, L, S] matrices, fp32 for fp16/bf16 inputs).
 *  - Transformer*Layer (§4.9): self-attention (+ cross-attention), the
 *    feed-forward block, dropouts, LayerNorms and residual adds, post-norm
 *    or norm_first.
 * Python locals that outlive their last use in PyTorch's code (q, k, v and
 * q_scaled in F.multi_head_attention_forward, query_acc/query in the math
 * kernel, a module's arguments during its forward) are kept alive to the
 * point where PyTorch drops them.
 *
 * Inference (eval + no_grad): where PyTorch's "why not fast path" checks
 * pass, MultiheadAttention runs torch._native_multi_head_attention and
 * TransformerEncoderLayer torch._transformer_encoder_layer_fwd, modelled op
 * for op from the CUDA source (mha_native, tf_native); elsewhere the same
 * forward as in training with nothing saved. The SDPA backends are in
 * sdpa.c.
 */
#include <stdio.h>
#include <string.h>

#include "attention_int.h"

/* ------------------------------------------------------------ op helpers */

/* A view of x. Its backward passes a view of the gradient, or (grad_copy)
 * reshapes a gradient whose strides do not allow a view: a copy of x's size. */
static vc_t view_op(vc_build *b, const char *name, vc_t x, vc_numel n, bool contig, bool grad_copy)
{
    vc_op *o = vc_op_begin(b, name);
    int i = vc_op_in(o, x);
    vc_t y = vc_op_out_view(o, i, n, contig);
    vc_op_grad(o, i, grad_copy ? VC_GRAD_NEW : VC_GRAD_PASS);
    vc_op_end(o);
    return y;
}

/* torch.cat([x, y]) into `out` elements, with type promotion (an fp32 bias
 * joined to an fp16 projection under autocast makes the result fp32).
 * Backward: narrow views of the gradient, cast for an input of another dtype. */
static vc_t cat2(vc_build *b, vc_t x, vc_t y, vc_numel out)
{
    vc_dtype dx = vc_dt_of(b, x), dy = vc_dt_of(b, y);
    vc_dtype dt = (dx == VC_DT_F32 || dy == VC_DT_F32) ? VC_DT_F32 : dx;
    vc_op *o = vc_op_begin(b, "cat");
    int ix = vc_op_in(o, x);
    int iy = vc_op_in(o, y);
    vc_t r = vc_op_out(o, out, dt);
    vc_op_grad(o, ix, dx == dt ? VC_GRAD_PASS : VC_GRAD_NEW);
    vc_op_grad(o, iy, dy == dt ? VC_GRAD_PASS : VC_GRAD_NEW);
    vc_op_end(o);
    return r;
}

/* x + y of equal sizes (the residual adds), with type promotion: under
 * autocast an fp16 block output added to an fp32 stream gives fp32, and the
 * engine casts the gradient back for the fp16 input. */
static vc_t add_res(vc_build *b, vc_t x, vc_t y)
{
    vc_dtype dx = vc_dt_of(b, x), dy = vc_dt_of(b, y);
    vc_dtype dt = (dx == VC_DT_F32 || dy == VC_DT_F32) ? VC_DT_F32 : dx;
    vc_op *o = vc_op_begin(b, "add");
    int ix = vc_op_in(o, x);
    int iy = vc_op_in(o, y);
    vc_t r = vc_op_out(o, vc_numel_of(b, x), dt);
    vc_op_grad(o, ix, dx == dt ? VC_GRAD_PASS : VC_GRAD_NEW);
    vc_op_grad(o, iy, dy == dt ? VC_GRAD_PASS : VC_GRAD_NEW);
    vc_op_end(o);
    return r;
}

/* w.split(...) / w.chunk(...) of a parameter: views; SplitBackward
 * assembles one gradient of the whole parameter from the pieces' grads. */
static void split_param(vc_build *b, vc_t w, int n, const int64_t *numel, vc_t *out)
{
    vc_op *o = vc_op_begin(b, "split");
    int i = vc_op_in(o, w);
    for (int k = 0; k < n; k++) out[k] = vc_op_out_view(o, i, vc_n_fixed(numel[k]), true);
    vc_op_end(o);
}

/* F.layer_norm over the last dim: mean/rstd per row. */
static vc_t layer_norm(vc_build *b, vc_t x, vc_t w, vc_t bias, int64_t rows)
{
    return vc__op_layer_norm(b, x, w, bias, vc_n_sample(rows));
}

/* Under autocast, an fp32 activation fed to an op on the lower-precision
 * list is cast with _to_copy, which keeps a non-contiguous layout. */
static vc_t amp_cast_keep(vc_build *b, vc_t x)
{
    vc_t y = vc__op_autocast(b, x);
    if (y != x && !vc_contiguous(b, x)) y = vc__op_view(b, y, vc_numel_of(b, y), false);
    return y;
}

/* ------------------------------------------------------------ MultiheadAttention */

typedef struct {
    int64_t E, H, kdim, vdim;
    double dropout;
    bool bias, add_bias_kv, add_zero_attn, need_weights, avg_weights;
} mha_cfg;

static bool mha_same(const mha_cfg *c) { return c->kdim == c->E && c->vdim == c->E; }

/* The parameter tensors of one attention block, -1 when absent. */
typedef struct {
    vc_t in_w, q_w, k_w, v_w, in_b, bias_k, bias_v, out_w, out_b;
} mha_w;

static int mha_declare(vc_setup *s, const mha_cfg *c, const char *prefix)
{
    char n[128];
    int64_t ee, e3, ek, ev;
    if (vc_mul(s, c->E, c->E, &ee) || vc_mul(s, ee, 3, &e3) || vc_mul(s, c->E, c->kdim, &ek) ||
        vc_mul(s, c->E, c->vdim, &ev))
        return -1;
    /* shapes as MultiheadAttention._reset_parameters creates them: in_proj_weight
     * [3E, E], q/k/v_proj_weight [E, E|kdim|vdim], bias_k/v [1, 1, E] */
    int64_t bkv[3] = {1, 1, c->E};
#define P(name, numel) (snprintf(n, sizeof n, "%s%s", prefix, name), vc_param(s, n, numel))
#define P2(name, rows, cols) (snprintf(n, sizeof n, "%s%s", prefix, name), vc_param2(s, n, rows, cols))
#define P3(name) (snprintf(n, sizeof n, "%s%s", prefix, name), vc_param_shape(s, n, 3, bkv, 0))
    (void)ee; (void)e3; (void)ek; (void)ev; /* computed above for their overflow checks */
    if (mha_same(c)) {
        if (P2("in_proj_weight", 3 * c->E, c->E)) return -1;
    } else if (P2("q_proj_weight", c->E, c->E) || P2("k_proj_weight", c->E, c->kdim) || P2("v_proj_weight", c->E, c->vdim)) {
        return -1;
    }
    if (c->bias && P("in_proj_bias", 3 * c->E)) return -1;
    if (c->add_bias_kv && (P3("bias_k") || P3("bias_v"))) return -1;
    if (P2("out_proj.weight", c->E, c->E) || (c->bias && P("out_proj.bias", c->E))) return -1;
#undef P3
#undef P2
#undef P
    return 0;
}

/* Reads the block's parameters from index *i on (mha_declare's order). */
static void mha_weights(vc_build *b, const mha_cfg *c, int *i, mha_w *w)
{
    w->in_w = w->q_w = w->k_w = w->v_w = w->in_b = w->bias_k = w->bias_v = w->out_b = -1;
    if (mha_same(c)) {
        w->in_w = vc_weight(b, (*i)++);
    } else {
        w->q_w = vc_weight(b, (*i)++);
        w->k_w = vc_weight(b, (*i)++);
        w->v_w = vc_weight(b, (*i)++);
    }
    if (c->bias) w->in_b = vc_weight(b, (*i)++);
    if (c->add_bias_kv) {
        w->bias_k = vc_weight(b, (*i)++);
        w->bias_v = vc_weight(b, (*i)++);
    }
    w->out_w = vc_weight(b, (*i)++);
    if (c->bias) w->out_b = vc_weight(b, (*i)++);
}

/* Is [N, len, E].transpose(1, 0) contiguous? (only when N or len is 1) */
static bool tr_contig(vc_build *b, int64_t len)
{
    return vc_batch_is_one(b) || len == 1;
}

/* F.linear on a batch_first module input: the module's transpose(1, 0)
 * makes [len, N, in] (non-contiguous), so Linear.cpp's matmul folding
 * copies it; under autocast the input is cast first (_to_copy keeps the
 * layout). A non-contiguous input is taken to be [len, N, in] storage seen
 * through a transpose (another MultiheadAttention's output): transposing
 * it back gives a contiguous tensor, which linear uses without a copy. */
static vc_t proj_in(vc_build *b, vc_t x, vc_t w, vc_t bias, int64_t len, int64_t in, int64_t out)
{
    bool contig = vc_contiguous(b, x) ? tr_contig(b, len) : true;
    x = vc__op_autocast(b, x);
    vc_t t = vc__op_view(b, x, vc_numel_of(b, x), contig);
    return vc__op_linear(b, t, w, bias, len, in, out);
}

/* proj [len, N, k*E].unflatten(-1, (k, E)).unsqueeze(0).transpose(0, -2)
 * .squeeze(-2).contiguous() -> [k, len, N, E]. Backward: the unflatten's
 * view backward reshapes the permuted gradient (a copy of proj's size). */
static vc_t packed(vc_build *b, vc_t proj, int64_t len)
{
    bool triv = vc_batch_is_one(b) && len == 1;
    vc_t t = view_op(b, "unflatten+transpose", proj, vc_numel_of(b, proj), triv, !triv);
    return vc__op_contiguous(b, t);
}

/* bias_k.repeat(1, N, 1) joined to k ([len, N, E]) along dim 0. */
static vc_t cat_bias_kv(vc_build *b, vc_t x, vc_t bias, int64_t len, int64_t E)
{
    vc_t r = vc__op_fresh(b, "repeat", bias, vc_n_sample(E)); /* backward: sum over the repeats */
    return cat2(b, x, r, vc_n_sample((len + 1) * E));
}

/* F.multi_head_attention_forward's in-projections: q, k and v ([N, len, E]). */
static void mha_project(vc_build *b, const mha_cfg *c, const mha_w *w, vc_t xq, vc_t xk, vc_t xv, int64_t L,
                        int64_t S, vc_t *q, vc_t *k, vc_t *v)
{
    const int64_t E = c->E;
    if (mha_same(c) && xq == xk && xk == xv) { /* self-attention: one packed projection */
        vc_t pk = packed(b, proj_in(b, xq, w->in_w, w->in_b, L, E, 3 * E), L);
        *q = vc__op_select(b, pk, vc_n_sample(L * E), true);
        *k = vc__op_select(b, pk, vc_n_sample(L * E), true);
        *v = vc__op_select(b, pk, vc_n_sample(L * E), true);
    } else if (mha_same(c) && xk == xv) { /* encoder-decoder: w.split([E, 2E]) */
        vc_t wp[2], bp[2] = {-1, -1};
        split_param(b, w->in_w, 2, (const int64_t[]){E * E, 2 * E * E}, wp);
        if (w->in_b >= 0) split_param(b, w->in_b, 2, (const int64_t[]){E, 2 * E}, bp);
        *q = proj_in(b, xq, wp[0], bp[0], L, E, E);
        vc_t pk = packed(b, proj_in(b, xk, wp[1], bp[1], S, E, 2 * E), S);
        *k = vc__op_select(b, pk, vc_n_sample(S * E), true);
        *v = vc__op_select(b, pk, vc_n_sample(S * E), true);
    } else { /* w.chunk(3), or q/k/v_proj_weight; in_proj_bias.chunk(3) */
        vc_t wp[3], bp[3] = {-1, -1, -1};
        if (mha_same(c)) {
            split_param(b, w->in_w, 3, (const int64_t[]){E * E, E * E, E * E}, wp);
        } else {
            wp[0] = w->q_w;
            wp[1] = w->k_w;
            wp[2] = w->v_w;
        }
        if (w->in_b >= 0) split_param(b, w->in_b, 3, (const int64_t[]){E, E, E}, bp);
        *q = proj_in(b, xq, wp[0], bp[0], L, E, E);
        *k = proj_in(b, xk, wp[1], bp[1], S, c->kdim, E);
        *v = proj_in(b, xv, wp[2], bp[2], S, c->vdim, E);
    }
}

/* F.multi_head_attention_forward (PyTorch 2.x), batch_first, no masks.
 * xq/xk/xv: the module's inputs ([N, len, dim]); identical tensors select
 * the packed self-attention and the shared-k/v paths, as `is` does. */
static vc_t mha_forward(vc_build *b, const mha_cfg *c, const mha_w *w, vc_t xq, vc_t xk, vc_t xv, int64_t L,
                        int64_t S, bool need_weights)
{
    const int64_t E = c->E, H = c->H, hd = E / H, N = vc_batch(b);
    const double p = vc_training(b) ? c->dropout : 0.0;
    (void)vc_batch_is_one(b); /* the layouts below see the batch dim's size: 1 or more */
    vc_t q, k, v;
    mha_project(b, c, w, xq, xk, xv, L, S, &q, &k, &v);
    int64_t S2 = S;
    if (c->add_bias_kv) {
        k = cat_bias_kv(b, k, w->bias_k, S, E);
        v = cat_bias_kv(b, v, w->bias_v, S, E);
        S2++;
    }
    int64_t szq[4] = {N, H, L, hd}, szk[4] = {N, H, S2, hd};
    int64_t szk2[4] = {N, H, S2 + (c->add_zero_attn ? 1 : 0), hd};

    /* the backend decides how the gradients of the views below arrive */
    sdpa_t g = {N, H, L, szk2[DL], hd, hd, true, LAY_LBHD, c->add_zero_attn ? LAY_BHLD : LAY_LBHD,
                c->add_zero_attn ? LAY_BHLD : LAY_LBHD, LAY_LBHD, false, false, false, p, false, BK_MATH,
                LAY_BHLD};
    if (!need_weights) g.backend = vc_sdpa_pick(b, &g, vc_autocast_dt(b) != VC_DT_F32 ? vc_autocast_dt(b) : vc_dt_of(b, q));
    /* q/k/v.view(len, N*H, hd).transpose(0, 1) (view 1) and, for SDPA,
     * .view(N, H, len, hd) (view 2). Their backward reshapes the gradient
     * back; that is a copy when the gradient's strides do not allow a view:
     *  - explicit path and math: q's and v's gradients arrive
     *    [N*H, len, hd]-contiguous (bmm / mul outputs): view 1 copies unless
     *    H or len is 1; k's arrives transposed ([.., hd, S] contiguous) and
     *    reshapes as a view;
     *  - flash: dq/dk/dv are empty_like(q/k/v): views (padded head dims: the
     *    pad's backward makes them contiguous, so view 1 copies);
     *  - efficient: grad_q/k/v are [N, len, H, hd]-contiguous: view 2 copies
     *    (unless len, N or H is 1), then view 1 as for math. */
    bool mq = !lay_merge(LAY_BHLD, szq, DH, DD), mk = !lay_merge(LAY_BHLD, szk, DH, DD);
    bool q1 = mq, k1 = false, v1 = mk, q2 = false, k2 = false, v2 = false;
    if (!need_weights && g.backend == BK_FLASH) {
        bool pad = hd % 8 != 0;
        q1 = pad && mq, k1 = pad && mk, v1 = pad && mk;
    } else if (!need_weights && g.backend == BK_EFFICIENT) {
        q2 = !lay_merge(LAY_BLHD, szq, DB, DH);
        k2 = v2 = !lay_merge(LAY_BLHD, szk2, DB, DH);
        q1 = q2 && mq, k1 = k2 && mk, v1 = v2 && mk;
    }
    vc_t qh = view_op(b, "view+transpose", q, vc_n_sample(L * E), lay_contig(LAY_LBHD, szq, ORD_BHLD), q1);
    vc_t kh = view_op(b, "view+transpose", k, vc_n_sample(S2 * E), lay_contig(LAY_LBHD, szk, ORD_BHLD), k1);
    vc_t vh = view_op(b, "view+transpose", v, vc_n_sample(S2 * E), lay_contig(LAY_LBHD, szk, ORD_BHLD), v1);
    if (c->add_zero_attn) { /* cat([k, zeros(N*H, 1, hd)], dim=1) */
        kh = cat2(b, kh, vc__op_new(b, "zeros", vc_n_sample(E), vc_dt_of(b, kh)), vc_n_sample((S2 + 1) * E));
        vh = cat2(b, vh, vc__op_new(b, "zeros", vc_n_sample(E), vc_dt_of(b, vh)), vc_n_sample((S2 + 1) * E));
        S2++;
    }

    vc_t o, weights = -1, qsc = -1;
    if (need_weights) { /* §4.2 */
        qsc = mul_scalar(b, qh);
        vc_t attn = vc__op_bmm(b, qsc, kh, vc_n_sample(H * L * S2));
        attn = vc__op_softmax(b, attn, false);
        attn = vc__op_dropout(b, attn, p);
        o = vc__op_bmm(b, attn, vh, vc_n_sample(L * E));
        weights = attn;
        g.lout = LAY_BHLD;
    } else { /* §4.3: q.view(N, H, L, hd) etc. */
        vc_t q4 = view_op(b, "view", qh, vc_n_sample(L * E), lay_contig(g.lq, szq, ORD_BHLD), q2);
        vc_t k4 = view_op(b, "view", kh, vc_n_sample(S2 * E), lay_contig(g.lk, szk2, ORD_BHLD), k2);
        vc_t v4 = view_op(b, "view", vh, vc_n_sample(S2 * E), lay_contig(g.lv, szk2, ORD_BHLD), v2);
        /* scaled_dot_product_attention is on autocast's lower-precision list */
        q4 = amp_cast_keep(b, q4);
        k4 = amp_cast_keep(b, k4);
        v4 = amp_cast_keep(b, v4);
        o = vc_sdpa_run(b, q4, k4, v4, &g);
        qh = q4;
        kh = k4;
        vh = v4;
    }
    /* attn_output.transpose(0, 1) / .permute(2, 0, 1, 3), .contiguous().view(L*N, E) */
    o = vc__op_view(b, o, vc_numel_of(b, o), lay_contig(g.lout, szq, ORD_LBHD));
    o = vc__op_contiguous(b, o);
    vc_t y = vc__op_linear(b, o, w->out_w, w->out_b, L, E, E);
    /* attn_output_weights.view(N, H, L, S).mean(dim=1): returned, dropped */
    if (weights >= 0 && c->avg_weights) vc__op_mean(b, weights, vc_n_sample(L * S2));
    /* q, k, v (views of the projections) and q_scaled are locals of
     * F.multi_head_attention_forward: alive until it returns */
    vc_release(b, qh);
    vc_release(b, kh);
    vc_release(b, vh);
    vc_release(b, qsc);
    vc_release(b, weights);
    /* .view(L, N, E), then the module's transpose(1, 0) back to [N, L, E] */
    return vc__op_view(b, y, vc_numel_of(b, y), tr_contig(b, L));
}

/* ------------------------------------------------------------ inference fast paths */

/* Why MultiheadAttention.forward (torch/nn/modules/activation.py) does not
 * call torch._native_multi_head_attention, in the order it checks; NULL
 * when it does. Not reachable in a model file: fast path disabled, unbatched
 * or nested input, batch_first=False, torch functions, make_fx, devices.
 * Inference runs in eval under no_grad, so "grad is enabled and ... requires
 * grad" never holds there; training fails on `self.training`. The native op
 * is called only with an in_proj_bias (bias=False falls through to the
 * ordinary path). */
static const char *mha_why_not(vc_build *b, const mha_cfg *c, bool self_attn)
{
    if (!self_attn) return "non-self attention was used";
    if (vc_act_dt(b) != vc_param_dt(b)) return "dtypes of query and in_proj_weight don't match";
    if (vc_training(b)) return "training is enabled";
    if (c->H % 2) return "self.num_heads is not even";
    if (c->add_bias_kv) return "self.bias_k was not None";
    if (c->add_zero_attn) return "add_zero_attn was enabled";
    if (!mha_same(c)) return "_qkv_same_embed_dim was not True";
    if (vc_autocast_dt(b) != VC_DT_F32) return "autocast is enabled";
    if (!c->bias) return "in_proj_bias is None (bias=False)";
    return NULL;
}

static void note_ordinary(vc_build *b, const char *why, bool need_weights)
{
    char n[160];
    snprintf(n, sizeof n, "F.multi_head_attention_forward (%s), not the fast path: %s",
             need_weights ? "explicit bmm, need_weights" : "SDPA", why);
    vc_note(b, n);
}

/* Softmax written into its input (attention.cpp masked_softmax without a
 * mask: at::_softmax_out(attn_scores, attn_scores, dim)). */
static vc_t softmax_inplace(vc_build *b, vc_t x)
{
    vc_op *o = vc_op_begin(b, "_softmax.out");
    int i = vc_op_in(o, x);
    vc_t y = vc_op_out_view(o, i, vc_numel_of(b, x), true);
    vc_op_end(o);
    return y;
}

/* torch._native_multi_head_attention on CUDA (native_multi_head_attention_cuda,
 * aten/src/ATen/native/transformers/cuda/attention.cu), self-attention,
 * no mask, inference; x is the module's [N, L, E] input (contiguous: the
 * fast path does not transpose it).
 *  - SDPA-backed, when dim_per_head % 8 == 0, !need_weights and
 *    select_sdp_backend picks flash or efficient: x = at::linear(query,
 *    qkv_weight, qkv_bias) [N, L, 3E]; q, k, v = views of x.chunk(3, -1);
 *    at::scaled_dot_product_attention(q, k, v); .transpose(1, 2).reshape(N,
 *    L, E) (a view of the [N, L, H, hd] output); at::linear(out_proj);
 *    the locals x and y live until the function returns.
 *  - otherwise: qkv = qkv_projection (gemm_nt: no bias) [N, L, 3E];
 *    q_k_v = _transform_bias_rescale_qkv (at::empty({3, N, H, L, hd}), q
 *    scaled), then qkv = Tensor(); qkt = bmm_nt(q, k) [N, H, L, L];
 *    masked_softmax in place; attn_ctx = bmm_nn(q, qkt, v) into q's
 *    storage; qkt dropped when !need_weights; transform0213_gemm_nt_bias:
 *    transform_0213 ([N, L, E] copy) then linear (addmm); with
 *    need_weights and average_attn_weights qkt.sum(1) [N, L, L] then
 *    `/= num_head` in place. q_k_v (a tuple local) lives until return. */
static vc_t mha_native(vc_build *b, const mha_cfg *c, const mha_w *w, vc_t x, int64_t L, bool need_weights)
{
    const int64_t E = c->E, H = c->H, hd = E / H, N = vc_batch(b);
    (void)vc_batch_is_one(b); /* the SDPA layouts see the batch dim's size: 1 or more */
    if (hd % 8 == 0 && !need_weights) {
        sdpa_t g = {N, H, L, L, hd, hd, true, LAY_BLHD, LAY_BLHD, LAY_BLHD, -1, false, false, false, 0.0, false,
                    BK_MATH, LAY_BHLD};
        g.backend = vc_sdpa_pick(b, &g, vc_act_dt(b));
        if (g.backend != BK_MATH) {
            vc_note(b, g.backend == BK_FLASH ? "native MHA fast path, SDPA-backed (flash)"
                                             : "native MHA fast path, SDPA-backed (memory-efficient)");
            vc_t qkv = vc__op_linear(b, x, w->in_w, w->in_b, L, E, 3 * E);
            vc_t q = vc__op_view(b, qkv, vc_n_sample(L * E), false);
            vc_t k = vc__op_view(b, qkv, vc_n_sample(L * E), false);
            vc_t v = vc__op_view(b, qkv, vc_n_sample(L * E), false);
            vc_t y = vc_sdpa_run(b, q, k, v, &g);
            vc_t r = vc__op_linear(b, vc__op_view(b, y, vc_numel_of(b, y), true), w->out_w, w->out_b, L, E, E);
            vc_release(b, qkv); /* x, chunks and y are C++ locals: alive until return */
            vc_release(b, y);
            return r;
        }
    }
    vc_note(b, need_weights ? "native MHA fast path, explicit (bmm, softmax in place, need_weights)"
                            : "native MHA fast path, explicit (bmm, softmax in place; math SDPA not used)");
    vc_t qkv = vc__op_linear(b, x, w->in_w, -1, L, E, 3 * E);
    vc_t qkv5 = vc__op_fresh(b, "_transform_bias_rescale_qkv", qkv, vc_n_sample(3 * L * E));
    vc_t q = vc__op_view(b, qkv5, vc_n_sample(L * E), true);
    vc_t k = vc__op_view(b, qkv5, vc_n_sample(L * E), true);
    vc_t v = vc__op_view(b, qkv5, vc_n_sample(L * E), true);
    vc_t qkt = softmax_inplace(b, vc__op_bmm_raw(b, q, k, vc_n_sample(H * L * L)));
    vc_op *o = vc_op_begin(b, "bmm.out"); /* bmm_nn(q, qkt, v): into q */
    int iq = vc_op_in(o, q);
    vc_op_in(o, qkt);
    vc_op_in(o, v);
    vc_t ctx = vc_op_out_view(o, iq, vc_n_sample(L * E), true);
    vc_op_gemm(o);
    vc_op_end(o);
    vc_t a = vc__op_fresh(b, "transform_0213", ctx, vc_n_sample(L * E));
    vc_t y = vc__op_linear(b, a, w->out_w, w->out_b, L, E, E);
    if (need_weights && c->avg_weights) { /* qkt = qkt.sum(1); qkt /= num_head */
        vc_t s = vc__op_mean(b, qkt, vc_n_sample(L * L));
        vc_release(b, s); /* returned, dropped by the caller */
    } else if (need_weights) {
        vc_release(b, qkt);
    }
    vc_release(b, qkv5);
    return y;
}

static int arg_batch_first(vc_args *a)
{
    bool bf;
    if (vc_arg_bool(a, "batch_first", true, &bf)) return -1;
    if (!bf) return vc_arg_fail(a, "batch_first", "must be true: sequence modules are always batch_first ([L, E] per sample)");
    return 0;
}

/* kdim/vdim: an int, or null/absent (= embed_dim). */
static int arg_dim_or_null(vc_args *a, const char *key, int64_t def, int64_t *out)
{
    if (vc_arg_type(a, key) == 5) {
        *out = def;
        return 0;
    }
    return vc_arg_int(a, key, def, 1, out);
}

static int mha_parse(vc_args *a, void *p)
{
    mha_cfg *c = p;
    if (vc_arg_int(a, "embed_dim", VC_REQUIRED, 1, &c->E) || vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->H) ||
        vc_arg_float(a, "dropout", 0.0, 0.0, 1.0, &c->dropout) || vc_arg_bool(a, "bias", true, &c->bias) ||
        vc_arg_bool(a, "add_bias_kv", false, &c->add_bias_kv) ||
        vc_arg_bool(a, "add_zero_attn", false, &c->add_zero_attn) ||
        arg_dim_or_null(a, "kdim", c->E, &c->kdim) || arg_dim_or_null(a, "vdim", c->E, &c->vdim) ||
        arg_batch_first(a) || vc_arg_bool(a, "need_weights", true, &c->need_weights) ||
        vc_arg_bool(a, "average_attn_weights", true, &c->avg_weights))
        return -1;
    if (c->E % c->H)
        return vc_arg_fail(a, "num_heads", "embed_dim (%lld) must be divisible by num_heads (%lld)", (long long)c->E,
                           (long long)c->H);
    return 0;
}

/* Checks that a product of sizes stays well inside 64-bit arithmetic (the
 * attention matrices are H*L*S per sample). */
static int check_size(vc_setup *s, int64_t a, int64_t b2, int64_t c)
{
    int64_t t;
    if (vc_mul(s, a, b2, &t) || vc_mul(s, t, c, &t)) return -1;
    if (t > (INT64_C(1) << 56)) return vc_fail(s, NULL, "an attention matrix has more than 2^56 elements per sample");
    return 0;
}

static int seq_shape(vc_setup *s, int i, const char *what, const char *key, int64_t dim)
{
    const vc_shape *x = &s->in[i];
    char buf[96];
    if (x->nd != 2) { /* the shape's text only for the message */
        vc_shape_str(x, buf, sizeof buf);
        return vc_fail(s, NULL, "the %s must be [length, features] per sample (batch_first), got %s", what, buf);
    }
    if (x->d[1] != dim)
        return vc_fail(s, key, "%s is %lld but the %s has %lld features", key, (long long)dim, what, (long long)x->d[1]);
    return 0;
}

static int mha_setup(vc_setup *s, void *p)
{
    const mha_cfg *c = p;
    if (s->nin == 2) return vc_fail(s, "inputs", "MultiheadAttention takes inputs [q] or [q, k, v], got 2");
    if (s->nin == 1 && !mha_same(c))
        return vc_fail(s, c->kdim != c->E ? "kdim" : "vdim",
                       "kdim/vdim differ from embed_dim: give the key and value as inputs [q, k, v]");
    if (seq_shape(s, 0, "query", "embed_dim", c->E)) return -1;
    int ki = s->nin == 3 ? 1 : 0, vi = s->nin == 3 ? 2 : 0;
    if (seq_shape(s, ki, "key", mha_same(c) ? "embed_dim" : "kdim", c->kdim) ||
        seq_shape(s, vi, "value", mha_same(c) ? "embed_dim" : "vdim", c->vdim))
        return -1;
    if (s->in[ki].d[0] != s->in[vi].d[0])
        return vc_fail(s, "inputs", "the key has %lld positions but the value has %lld", (long long)s->in[ki].d[0],
                       (long long)s->in[vi].d[0]);
    int64_t L = s->in[0].d[0], S = s->in[ki].d[0];
    if (check_size(s, c->H, L, S + 2) || check_size(s, 3, L + 2, c->E) || check_size(s, 3, S + 2, c->E)) return -1;
    s->out = s->in[0];
    return mha_declare(s, c, "");
}

static void mha_emit(vc_build *b, const void *p)
{
    const mha_cfg *c = p;
    int i = 0;
    mha_w w;
    mha_weights(b, c, &i, &w);
    vc_t q = vc_input(b, 0);
    vc_t k = vc_input(b, 1) >= 0 ? vc_input(b, 1) : q;
    vc_t v = vc_input(b, 2) >= 0 ? vc_input(b, 2) : q;
    int64_t L = vc_input_shape(b, 0)->d[0];
    int64_t S = vc_input_shape(b, vc_input(b, 1) >= 0 ? 1 : 0)->d[0];
    const char *why = mha_why_not(b, c, q == k && k == v);
    vc_t y;
    if (why) {
        note_ordinary(b, why, c->need_weights);
        y = mha_forward(b, c, &w, q, k, v, L, S, c->need_weights);
    } else {
        y = mha_native(b, c, &w, q, L, c->need_weights);
    }
    /* the module's arguments are alive until forward returns */
    vc_release(b, q);
    vc_release(b, k);
    vc_release(b, v);
    vc_set_output(b, y);
}

const vc_kind vc_kind_MultiheadAttention = {
    .ops = 39,
    .name = "MultiheadAttention",
    .summary = "multi-head attention (batch_first; need_weights: explicit LxS path, else SDPA)",
    .min_inputs = 1, .max_inputs = 3, .cfg_size = sizeof(mha_cfg),
    .parse = mha_parse, .setup = mha_setup, .emit = mha_emit,
};

/* ------------------------------------------------------------ ScaledDotProductAttention */

typedef struct {
    bool causal;
    double p, scale;
} sdpa_cfg;

static int sdpa_parse(vc_args *a, void *p)
{
    sdpa_cfg *c = p;
    if (vc_arg_bool(a, "is_causal", false, &c->causal) || vc_arg_float(a, "dropout_p", 0.0, 0.0, 1.0, &c->p))
        return -1;
    c->scale = 0.0;
    if (vc_arg_type(a, "scale") == 5) return 0; /* None: 1/sqrt(D) */
    return vc_arg_float(a, "scale", 0.0, -1e308, 1e308, &c->scale);
}

static int sdpa_setup(vc_setup *s, void *p)
{
    (void)p;
    const vc_shape *q = &s->in[0], *k = &s->in[1], *v = &s->in[2];
    char bq[96], bk[96], bv[96];
    vc_shape_str(q, bq, sizeof bq);
    vc_shape_str(k, bk, sizeof bk);
    vc_shape_str(v, bv, sizeof bv);
    if (q->nd < 2) return vc_fail(s, "inputs", "the query must be [..., L, E] per sample, got %s", bq);
    if (k->nd != q->nd || v->nd != q->nd)
        return vc_fail(s, "inputs", "query %s, key %s and value %s must have the same number of dimensions", bq, bk, bv);
    for (int i = 0; i < q->nd - 2; i++)
        if (k->d[i] != q->d[i] || v->d[i] != q->d[i])
            return vc_fail(s, "inputs", "the leading dims of query %s, key %s and value %s differ (broadcasting is not supported)",
                           bq, bk, bv);
    int n = q->nd;
    if (k->d[n - 1] != q->d[n - 1])
        return vc_fail(s, "inputs", "the query has head dim %lld but the key has %lld", (long long)q->d[n - 1],
                       (long long)k->d[n - 1]);
    if (v->d[n - 2] != k->d[n - 2])
        return vc_fail(s, "inputs", "the key has %lld positions but the value has %lld", (long long)k->d[n - 2],
                       (long long)v->d[n - 2]);
    int64_t lead = 1;
    for (int i = 0; i < n - 2; i++) lead *= q->d[i]; /* a factor of q's numel */
    if (check_size(s, lead, q->d[n - 2], k->d[n - 2]) || check_size(s, lead, q->d[n - 2], v->d[n - 1] + 64) ||
        check_size(s, lead, k->d[n - 2] + 128, q->d[n - 1] + 64))
        return -1;
    s->out = *q;
    s->out.d[n - 1] = v->d[n - 1];
    return 0;
}

static void sdpa_emit(vc_build *b, const void *p)
{
    const sdpa_cfg *c = p;
    const vc_shape *qs = vc_input_shape(b, 0), *ks = vc_input_shape(b, 1), *vs = vc_input_shape(b, 2);
    int n = qs->nd;
    int64_t H = 1;
    for (int i = 0; i < n - 2; i++) H *= qs->d[i];
    vc_t in[3], x[3];
    for (int i = 0; i < 3; i++) {
        in[i] = vc_input(b, i);
        x[i] = amp_cast_keep(b, in[i]); /* scaled_dot_product_attention: lower-precision list */
    }
    (void)vc_batch_is_one(b); /* the layouts below see the batch dim's size: 1 or more */
    sdpa_t g = {vc_batch(b), H, qs->d[n - 2], ks->d[n - 2], qs->d[n - 1], vs->d[n - 1], n == 3, LAY_BHLD, LAY_BHLD,
                LAY_BHLD, -1, false, false, false, vc_training(b) ? c->p : 0.0, c->causal, BK_MATH, LAY_BHLD};
    /* A non-contiguous input is assumed to be the usual [B, L, H, D] storage
     * seen through transpose(1, 2) (x.view(B, L, H, D).transpose(1, 2)). */
    int *lay[3] = {&g.lq, &g.lk, &g.lv};
    bool *fold[3] = {&g.fold_q, &g.fold_k, &g.fold_v};
    for (int i = 0; i < 3; i++) {
        bool contig = vc_contiguous(b, x[i]);
        *lay[i] = contig ? LAY_BHLD : LAY_BLHD;
        int64_t sz[4] = {g.N, H, i == 0 ? g.L : g.S, i == 2 ? g.Dv : g.D};
        if (n == 3) *fold[i] = !lay_merge(*lay[i], sz, DB, DH);
        else if (n > 3) *fold[i] = !contig;
    }
    g.backend = vc_sdpa_pick(b, &g, vc_dt_of(b, x[0]));
    vc_t y = vc_sdpa_run(b, x[0], x[1], x[2], &g);
    for (int i = 0; i < 3; i++) vc_release(b, in[i]); /* the caller holds them during the call */
    vc_set_output(b, y);
}

const vc_kind vc_kind_ScaledDotProductAttention = {
    .ops = 18,
    .name = "ScaledDotProductAttention",
    .summary = "F.scaled_dot_product_attention(q, k, v): flash / efficient / math per --attention",
    .min_inputs = 3, .max_inputs = 3, .cfg_size = sizeof(sdpa_cfg),
    .parse = sdpa_parse, .setup = sdpa_setup, .emit = sdpa_emit,
};

/* ------------------------------------------------------------ Transformer layers */

typedef struct {
    int64_t d, nhead, ff;
    double dropout, eps;
    int act; /* 0 relu, 1 gelu */
    bool norm_first, bias;
    bool decoder;
} tf_cfg;

static int tf_parse(vc_args *a, tf_cfg *c)
{
    static const char *const acts[] = {"relu", "gelu", NULL};
    if (vc_arg_int(a, "d_model", VC_REQUIRED, 1, &c->d) || vc_arg_int(a, "nhead", VC_REQUIRED, 1, &c->nhead) ||
        vc_arg_int(a, "dim_feedforward", 2048, 1, &c->ff) || vc_arg_float(a, "dropout", 0.1, 0.0, 1.0, &c->dropout) ||
        vc_arg_enum(a, "activation", acts, 0, &c->act) ||
        vc_arg_float(a, "layer_norm_eps", 1e-5, -1e308, 1e308, &c->eps) || arg_batch_first(a) ||
        vc_arg_bool(a, "norm_first", false, &c->norm_first) || vc_arg_bool(a, "bias", true, &c->bias))
        return -1;
    if (c->d % c->nhead)
        return vc_arg_fail(a, "nhead", "d_model (%lld) must be divisible by nhead (%lld)", (long long)c->d,
                           (long long)c->nhead);
    return 0;
}

static int enc_parse(vc_args *a, void *p)
{
    tf_cfg *c = p;
    c->decoder = false;
    return tf_parse(a, c);
}

static int dec_parse(vc_args *a, void *p)
{
    tf_cfg *c = p;
    c->decoder = true;
    return tf_parse(a, c);
}

static mha_cfg tf_mha(const tf_cfg *c)
{
    mha_cfg m = {c->d, c->nhead, c->d, c->d, c->dropout, c->bias, false, false, false, true};
    return m;
}

static int tf_setup(vc_setup *s, void *p)
{
    const tf_cfg *c = p;
    if (seq_shape(s, 0, c->decoder ? "target" : "input", "d_model", c->d)) return -1;
    int64_t L = s->in[0].d[0], S = L;
    if (c->decoder) {
        if (seq_shape(s, 1, "memory", "d_model", c->d)) return -1;
        S = s->in[1].d[0];
    }
    if (check_size(s, c->nhead, L, L + 2) || check_size(s, c->nhead, L, S + 2) || check_size(s, 3, L + 2, c->d) ||
        check_size(s, 3, S + 2, c->d) || check_size(s, L, c->ff, 1))
        return -1;
    mha_cfg m = tf_mha(c);
    int64_t w1;
    if (mha_declare(s, &m, "self_attn.") || (c->decoder && mha_declare(s, &m, "multihead_attn.")) ||
        vc_mul(s, c->d, c->ff, &w1) || vc_param2(s, "linear1.weight", c->ff, c->d) || (c->bias && vc_param(s, "linear1.bias", c->ff)) ||
        vc_param2(s, "linear2.weight", c->d, c->ff) || (c->bias && vc_param(s, "linear2.bias", c->d)))
        return -1;
    for (int i = 1; i <= (c->decoder ? 3 : 2); i++) {
        char n[32];
        snprintf(n, sizeof n, "norm%d.weight", i);
        if (vc_param(s, n, c->d)) return -1;
        snprintf(n, sizeof n, "norm%d.bias", i);
        if (c->bias && vc_param(s, n, c->d)) return -1;
    }
    s->out = s->in[0];
    return 0;
}

typedef struct {
    mha_w sa, ca;
    vc_t w1, b1, w2, b2, nw[3], nb[3];
} tf_w;

static void tf_weights(vc_build *b, const tf_cfg *c, const mha_cfg *m, tf_w *w)
{
    int i = 0;
    mha_weights(b, m, &i, &w->sa);
    if (c->decoder) mha_weights(b, m, &i, &w->ca);
    w->w1 = vc_weight(b, i++);
    w->b1 = c->bias ? vc_weight(b, i++) : -1;
    w->w2 = vc_weight(b, i++);
    w->b2 = c->bias ? vc_weight(b, i++) : -1;
    for (int k = 0; k < 3; k++) {
        w->nw[k] = w->nb[k] = -1;
        if (k == 2 && !c->decoder) continue;
        w->nw[k] = vc_weight(b, i++);
        if (c->bias) w->nb[k] = vc_weight(b, i++);
    }
}

/* Why TransformerEncoderLayer.forward (torch/nn/modules/transformer.py)
 * does not call torch._transformer_encoder_layer_fwd, in its order; NULL
 * when it does. Not reachable in a model file: fast path disabled, input not
 * 3-D, batch_first=False, different kdim/vdim, another activation, unequal
 * norm eps, nested tensors with masks, hooks, torch functions, devices. */
static const char *tf_why_not(vc_build *b, const tf_cfg *c)
{
    if (vc_training(b)) return "training is enabled";
    if (!c->bias) return "self_attn was passed bias=False";
    if (c->nhead % 2) return "num_head is odd";
    if (vc_autocast_dt(b) != VC_DT_F32) return "autocast is enabled";
    return NULL;
}

/* x.add_(y): in place, nothing allocated. */
static vc_t add_inplace(vc_build *b, vc_t x, vc_t y)
{
    vc_op *o = vc_op_begin(b, "add_");
    int i = vc_op_in(o, x);
    vc_op_in(o, y);
    vc_t r = vc_op_out_view(o, i, vc_numel_of(b, x), vc_contiguous(b, x));
    vc_op_end(o);
    return r;
}

/* transformer_encoder_layer_forward (aten/src/ATen/native/transformers/
 * transformer.cpp): [norm_first: x = norm1(src)]; x = _native_multi_head_attention(
 * x, x, x, need_weights=false)[0]; x.add_(src); [post-norm: x = norm1(x)];
 * pre_ffn_res = x; [norm_first: x = norm2(x)]; x = ffn(x): _addmm_activation
 * (bias, x, w1.t(), use_gelu) [N*L, ff] then addmm [N*L, E]; x.add_(pre_ffn_res);
 * [post-norm: x = norm2(x)]. pre_ffn_res lives until return. */
static vc_t tf_native(vc_build *b, const tf_cfg *c, const tf_w *w, vc_t src, int64_t L)
{
    mha_cfg m = tf_mha(c);
    vc_note(b, "TransformerEncoderLayer fast path (_transformer_encoder_layer_fwd)");
    vc_t x = c->norm_first ? layer_norm(b, src, w->nw[0], w->nb[0], L) : src;
    x = add_inplace(b, mha_native(b, &m, &w->sa, x, L, false), src);
    if (!c->norm_first) x = layer_norm(b, x, w->nw[0], w->nb[0], L);
    vc_t pre = x;
    if (c->norm_first) x = layer_norm(b, x, w->nw[1], w->nb[1], L);
    vc_t h = vc__op_linear(b, x, w->w1, w->b1, L, c->d, c->ff);
    h = vc__op_unary(b, c->act == 0 ? "relu" : "gelu", h, VC_SAVE_NONE, true); /* fused into _addmm_activation */
    x = add_inplace(b, vc__op_linear(b, h, w->w2, w->b2, L, c->ff, c->d), pre);
    if (!c->norm_first) x = layer_norm(b, x, w->nw[1], w->nb[1], L);
    vc_release(b, pre);
    return x;
}

/* _sa_block / _mha_block: self_attn(x, x, x, need_weights=False)[0] (or
 * multihead_attn(x, mem, mem)), then dropout1 (dropout2). The block's
 * argument x is alive until the attention returns. */
static vc_t tf_attn(vc_build *b, const tf_cfg *c, const mha_w *w, vc_t x, vc_t mem, int64_t L, int64_t S)
{
    mha_cfg m = tf_mha(c);
    vc_t kv = mem >= 0 ? mem : x;
    const char *why = mha_why_not(b, &m, mem < 0);
    vc_t y;
    if (why) {
        note_ordinary(b, why, false);
        y = mha_forward(b, &m, w, x, kv, kv, L, S, false);
    } else { /* a decoder's self-attention in inference */
        y = mha_native(b, &m, w, x, L, false);
    }
    vc_release(b, x);
    return vc__op_dropout(b, y, c->dropout);
}

/* _ff_block: linear2(dropout(activation(linear1(x)))), then dropout2
 * (decoder: dropout3). x is alive until linear2 returns. */
static vc_t tf_ff(vc_build *b, const tf_cfg *c, const tf_w *w, vc_t x, int64_t L)
{
    vc_t h = vc__op_linear(b, x, w->w1, w->b1, L, c->d, c->ff);
    h = c->act == 0 ? vc__op_unary(b, "relu", h, VC_SAVE_OUT, false) : vc__op_unary(b, "gelu", h, VC_SAVE_IN, false);
    h = vc__op_dropout(b, h, c->dropout);
    h = vc__op_linear(b, h, w->w2, w->b2, L, c->ff, c->d);
    vc_release(b, x);
    return vc__op_dropout(b, h, c->dropout);
}

static void tf_emit(vc_build *b, const void *p)
{
    const tf_cfg *c = p;
    mha_cfg m = tf_mha(c);
    tf_w w;
    tf_weights(b, c, &m, &w);
    vc_t src = vc_input(b, 0);
    vc_t mem = c->decoder ? vc_input(b, 1) : -1;
    int64_t L = vc_input_shape(b, 0)->d[0], S = c->decoder ? vc_input_shape(b, 1)->d[0] : L;
    vc_t x = src;
    int nn = c->decoder ? 3 : 2;
    const char *why = c->decoder ? "TransformerDecoderLayer has no fast path" : tf_why_not(b, c);
    if (why && !c->decoder) {
        char n[160];
        snprintf(n, sizeof n, "TransformerEncoderLayer, not the fast path: %s", why);
        vc_note(b, n);
    }
    if (!why) {
        x = tf_native(b, c, &w, src, L);
    } else if (c->norm_first) {
        /* x = x + block(norm(x)): the old x is alive until the add returns */
        x = add_res(b, x, tf_attn(b, c, &w.sa, layer_norm(b, x, w.nw[0], w.nb[0], L), -1, L, L));
        if (c->decoder) x = add_res(b, x, tf_attn(b, c, &w.ca, layer_norm(b, x, w.nw[1], w.nb[1], L), mem, L, S));
        x = add_res(b, x, tf_ff(b, c, &w, layer_norm(b, x, w.nw[nn - 1], w.nb[nn - 1], L), L));
    } else {
        /* x = norm(x + block(x)): the old x is alive until norm returns */
        vc_t prev = x;
        x = layer_norm(b, add_res(b, x, tf_attn(b, c, &w.sa, x, -1, L, L)), w.nw[0], w.nb[0], L);
        if (c->decoder) {
            prev = x;
            x = layer_norm(b, add_res(b, x, tf_attn(b, c, &w.ca, x, mem, L, S)), w.nw[1], w.nb[1], L);
            vc_release(b, prev);
        }
        prev = x;
        x = layer_norm(b, add_res(b, x, tf_ff(b, c, &w, x, L)), w.nw[nn - 1], w.nb[nn - 1], L);
        vc_release(b, prev);
    }
    /* forward's arguments (src/tgt, memory) are alive until it returns */
    vc_release(b, src);
    vc_release(b, mem);
    vc_set_output(b, x);
}

const vc_kind vc_kind_TransformerEncoderLayer = {
    .ops = 38,
    .name = "TransformerEncoderLayer",
    .summary = "self-attention + feed-forward block with LayerNorms (post-norm or norm_first)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tf_cfg),
    .parse = enc_parse, .setup = tf_setup, .emit = tf_emit,
};

const vc_kind vc_kind_TransformerDecoderLayer = {
    .ops = 70,
    .name = "TransformerDecoderLayer",
    .summary = "self-attention + cross-attention on memory + feed-forward (inputs [tgt, memory])",
    .min_inputs = 2, .max_inputs = 2, .cfg_size = sizeof(tf_cfg),
    .parse = dec_parse, .setup = tf_setup, .emit = tf_emit,
};
