/*
 * mvit.c — torchvision's video MViT: MultiscaleAttention and the block's
 * pool_skip (Pool with MaxPool3d), read in torchvision/models/video/mvit.py
 * as Debian ships it (0.14.1, /usr/lib/python3/dist-packages/torchvision);
 * read again in pytorch/vision at 772211c98cd7 (models/video/mvit.py): Pool,
 * _unsqueeze/_squeeze, _add_rel_pos, _add_shortcut, MultiscaleAttention
 * (constructor and forward), MultiscaleBlock.forward and PositionalEncoding
 * are unchanged there.
 *
 * Tokens are [N, C] per sample, N = 1 + T*H*W (the class token first); the
 * module is called with thw = (T, H, W), fixed when the model is built (the
 * file's "thw"). MultiscaleAttention.forward, h heads, d = output_dim / h:
 *
 *  - qkv = F.linear (keeps its input) -> reshape(B, N, 3, h, d).transpose(1, 3)
 *    .unbind(2): q, k, v are [B, h, N, d] views of qkv; unbind's backward
 *    stacks the three gradients into one new qkv-sized tensor;
 *  - Pool (pool_k, pool_v, pool_q in that order, each where the kernel or the
 *    stride is not all ones): tensor_split(x, (1,), 2) (two slices: each
 *    slice_backward is a new full-size tensor), transpose(2, 3).reshape((B*h,
 *    d) + thw) (a copy: the views of qkv cannot be merged) .contiguous(), the
 *    depthwise Conv3d (groups = d, no bias; keeps its input), reshape and
 *    transpose (views), cat((class_token, x), 2) (a new tensor, nothing kept),
 *    LayerNorm(d) (keeps its input and the fp32 mean/rstd);
 *  - self.scaler * q (a new tensor, nothing kept), q @ k^T (matmul's reshape
 *    of the contiguous pooled operands is a view; bmm keeps both);
 *  - v2's _add_rel_pos (torch.fx.wrap'ped): for each of h, w, t a float
 *    distance [q, k] (a local) and its .long() copy, kept by the gather
 *    (IndexBackward0 saves the indices) rel_pos_X[idx] -> [q, k, d] (no
 *    batch); r_q = q[:, :, 1:] (a slice) reshaped (a view); the two einsums
 *    (aten/src/ATen/native/Linear.cpp sumproduct_pair, read at pytorch
 *    81735ee6f5da: left.permute(..).reshape({lro, lo, sum}) -- [q_h, rows, d],
 *    a copy bmm keeps -- right.permute(..).reshape (a view), bmm, view.permute)
 *    and the temporal matmul (its own
 *    permuted copy of r_q); the broadcast sum (two adds, the first a
 *    temporary; each broadcast operand's gradient is reduced) comes out of
 *    TensorIterator in the einsum result's dim order, so .reshape copies it;
 *    attn[:, :, 1:, 1:] += rel_pos: add_ on a slice view of attn, then
 *    Python's setitem copies the slice onto itself (copy_): two CopySlices
 *    nodes, whose backward each makes a base-sized copy of the gradient and a
 *    clone of the slice (the copy_'s also zeros_like(slice) and, for the
 *    view written by the add_, an as_strided_backward base-sized zero tensor
 *    added to the first);
 *  - softmax (keeps its result), attn @ v (bmm keeps both);
 *  - v2's _add_shortcut: x.add_(q) with the class token, else
 *    x[:, :, 1:, :] += q[:, :, 1:, :] (CopySlices as above);
 *  - transpose(1, 2).reshape(B, -1, output_dim) (a copy with h > 1),
 *    project (Linear; keeps its input).
 *
 * Python locals live until the function returns: q, k, v (the pooled ones),
 * _add_rel_pos's distances, gathers and einsum results until it returns.
 */
#include "ops.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int64_t C, D, heads, thw[3], kq[3], kkv[3], sq[3], skv[3];
    bool res_pool, res_cls, rel_pos;
    double eps;
    /* set by setup */
    int64_t d, L, q_thw[3], k_thw[3], Lq, Lk, rel_sp, rel_t;
    bool pool_q, pool_kv;
} msa_cfg;

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

static int msa_parse(vc_args *a, void *p)
{
    msa_cfg *c = p;
    if (vc_arg_int(a, "embed_dim", VC_REQUIRED, 1, &c->C) || vc_arg_int(a, "output_dim", 0, 0, &c->D) ||
        vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) || vc_arg_ints(a, "thw", 3, VC_REQUIRED, 1, c->thw) ||
        vc_arg_ints(a, "kernel_q", 3, 1, 1, c->kq) || vc_arg_ints(a, "kernel_kv", 3, 1, 1, c->kkv) ||
        vc_arg_ints(a, "stride_q", 3, 1, 1, c->sq) || vc_arg_ints(a, "stride_kv", 3, 1, 1, c->skv) ||
        vc_arg_bool(a, "residual_pool", false, &c->res_pool) ||
        vc_arg_bool(a, "residual_with_cls_embed", true, &c->res_cls) ||
        vc_arg_bool(a, "rel_pos_embed", false, &c->rel_pos) || vc_arg_float(a, "norm_eps", 1e-5, 0.0, 1.0, &c->eps))
        return -1;
    if (c->D == 0) c->D = c->C;
    if (c->D % c->heads)
        return vc_arg_fail(a, "num_heads", "output_dim (%lld) must be divisible by num_heads (%lld)", (long long)c->D,
                           (long long)c->heads);
    return 0;
}

/* The Conv3d(d, d, k, stride, padding=k // 2) output size in each dim. */
static void pooled(const int64_t *thw, const int64_t *k, const int64_t *s, int64_t *out)
{
    for (int i = 0; i < 3; i++) out[i] = (thw[i] + 2 * (k[i] / 2) - k[i]) / s[i] + 1;
}

/* One Pool's parameters: pool.weight [d, 1, k], norm_act.0.weight/bias [d]. */
static int pool_params(vc_setup *s, const char *name, int64_t d, const int64_t *k)
{
    char w[48], nw[48], nb[48];
    snprintf(w, sizeof w, "%s.pool.weight", name);
    snprintf(nw, sizeof nw, "%s.norm_act.0.weight", name);
    snprintf(nb, sizeof nb, "%s.norm_act.0.bias", name);
    const int64_t dims[5] = {d, 1, k[0], k[1], k[2]};
    return vc_param_shape(s, w, 5, dims, 0) || vc_param(s, nw, d) || vc_param(s, nb, d);
}

/* Parameters in named_parameters() order: the module's own rel_pos_h/w/t
 * first, then qkv, project.0, pool_q, pool_k, pool_v. rel_pos sizes as the
 * constructor computes them from input_size (= thw): size = max(H, W),
 * spatial 2 * max(size // stride_q[1], size // stride_kv[1]) - 1, temporal
 * 2 * T - 1. */
static int msa_params(vc_setup *s, msa_cfg *c)
{
    if (c->rel_pos) {
        const int64_t sp[2] = {c->rel_sp, c->d}, tp[2] = {c->rel_t, c->d};
        if (vc_param_shape(s, "rel_pos_h", 2, sp, 0) || vc_param_shape(s, "rel_pos_w", 2, sp, 0) ||
            vc_param_shape(s, "rel_pos_t", 2, tp, 0))
            return -1;
    }
    int64_t three = 0;
    if (vc_mul(s, 3, c->D, &three)) return -1;
    const int64_t qw[2] = {three, c->C}, pw[2] = {c->D, c->D};
    if (vc_param_shape(s, "qkv.weight", 2, qw, VC_PARAM_LINEAR) || vc_param(s, "qkv.bias", three) ||
        vc_param_shape(s, "project.0.weight", 2, pw, VC_PARAM_LINEAR) || vc_param(s, "project.0.bias", c->D))
        return -1;
    if (c->pool_q && pool_params(s, "pool_q", c->d, c->kq)) return -1;
    if (c->pool_kv && (pool_params(s, "pool_k", c->d, c->kkv) || pool_params(s, "pool_v", c->d, c->kkv))) return -1;
    return 0;
}

static int msa_setup(vc_setup *s, void *p)
{
    msa_cfg *c = p;
    c->d = c->D / c->heads;
    int64_t L = 0, t = 0;
    if (vc_mul(s, c->thw[0], c->thw[1], &L) || vc_mul(s, L, c->thw[2], &L)) return -1;
    if (s->in[0].nd != 2 || s->in[0].d[0] != L + 1 || s->in[0].d[1] != c->C) {
        char sh[96];
        vc_shape_str(&s->in[0], sh, sizeof sh);
        return vc_fail(s, "thw", "MultiscaleAttention takes [1 + T*H*W, embed_dim] = [%lld, %lld] per sample, got %s",
                       (long long)(L + 1), (long long)c->C, sh);
    }
    c->L = L;
    c->pool_q = prod3(c->kq) > 1 || prod3(c->sq) > 1;
    c->pool_kv = prod3(c->kkv) > 1 || prod3(c->skv) > 1;
    for (int i = 0; i < 3; i++) {
        c->q_thw[i] = c->thw[i];
        c->k_thw[i] = c->thw[i];
    }
    if (c->pool_q) pooled(c->thw, c->kq, c->sq, c->q_thw);
    if (c->pool_kv) pooled(c->thw, c->kkv, c->skv, c->k_thw);
    c->Lq = 1 + prod3(c->q_thw);
    c->Lk = 1 + prod3(c->k_thw);
    if (vc_mul(s, c->heads, c->Lq, &t) || vc_mul(s, t, c->Lk, &t) || vc_mul(s, t, 4, &t)) return -1;
    if (c->rel_pos) {
        int64_t size = c->thw[1] > c->thw[2] ? c->thw[1] : c->thw[2], qs = size / c->sq[1], ks = size / c->skv[1];
        c->rel_sp = 2 * (qs > ks ? qs : ks) - 1;
        c->rel_t = 2 * c->thw[0] - 1;
        /* _add_rel_pos interpolates a table whose length differs from 2 * max(q, k) - 1 */
        for (int i = 0; i < 3; i++) {
            int64_t want = 2 * (c->q_thw[i] > c->k_thw[i] ? c->q_thw[i] : c->k_thw[i]) - 1;
            if (want != (i == 0 ? c->rel_t : c->rel_sp))
                return vc_fail(s, "thw", "rel_pos_embed: the pooled sizes need a relative position table of %lld rows "
                               "(the module's has %lld): _add_rel_pos would interpolate it, which is not modelled",
                               (long long)want, (long long)(i == 0 ? c->rel_t : c->rel_sp));
        }
    }
    const int64_t out[2] = {c->Lq, c->D};
    s->out = vc_shape_make(2, out);
    return msa_params(s, c);
}

/* tensor_split(x, (1,), dim=2) of [B, h, N, d] (or [B, 1, N, C]): the class
 * token (`one` elements per sample) and the rest, two slices. */
static void split_cls(vc_build *b, vc_t x, int64_t one, int64_t rest_n, vc_t *cls, vc_t *rest)
{
    *cls = vc__op_select(b, x, vc_n_sample(one), false);
    *rest = vc__op_select(b, x, vc_n_sample(rest_n), false);
}

static vc_t cat2(vc_build *b, vc_t x, vc_t y, vc_numel n)
{
    vc_op *o = vc_op_begin(b, "cat");
    vc_op_grad(o, vc_op_in(o, x), VC_GRAD_PASS);
    vc_op_grad(o, vc_op_in(o, y), VC_GRAD_PASS);
    vc_t r = vc_op_out(o, n, vc_dt_of(b, x));
    vc_op_end(o);
    return r;
}

/* Pool.forward with Conv3d + LayerNorm on q, k or v ([B, h, N, d]). */
static vc_t pool_conv(vc_build *b, const msa_cfg *c, vc_t x, const int64_t *othw, int wi)
{
    const int64_t h = c->heads, d = c->d, Lo = prod3(othw);
    vc_t cls, rest;
    split_cls(b, x, h * d, h * c->L * d, &cls, &rest);
    vc_t xc = vc__op_contiguous(b, vc__op_view(b, rest, vc_numel_of(b, rest), false)); /* transpose.reshape: a copy */
    vc_t y = vc__op_conv(b, xc, vc_weight(b, wi), -1, vc_n_sample(h * d * Lo));
    y = vc__op_view(b, y, vc_numel_of(b, y), false); /* reshape(B, h, d, -1).transpose(2, 3) */
    vc_t cat = cat2(b, cls, y, vc_n_sample(h * (1 + Lo) * d));
    vc_t r = vc__op_layer_norm(b, cat, vc_weight(b, wi + 1), vc_weight(b, wi + 2), vc_n_sample(h * (1 + Lo)));
    /* class_token (a view of qkv) is a local of Pool.forward, and the caller's q/k/v view is
     * rebound only when the pool returns: qkv's storage lives until then */
    vc_release(b, cls);
    vc_release(b, x);
    return r;
}

/* An operand of a batched matmul: under autocast first its low-precision
 * _to_copy (which keeps x's strides; bmm is on autocast's lower-precision
 * list), then a view when contiguous, else matmul's reshape copies it (bmm
 * keeps the copy). */
static vc_t mm_operand(vc_build *b, vc_t x)
{
    vc_t y = vc__op_autocast(b, x);
    if (y != x && !vc_contiguous(b, x)) y = vc__op_view(b, y, vc_numel_of(b, y), false);
    return vc__op_contiguous(b, y);
}

/* One einsum of _add_rel_pos as sumproduct_pair runs it: r_q permuted and
 * reshaped (a copy, alive until einsum returns), the table's permuted view;
 * under autocast bmm casts both. */
static vc_t rel_einsum(vc_build *b, vc_t rq, vc_t R, vc_numel out)
{
    vc_t l = vc__op_contiguous(b, vc__op_view(b, rq, vc_numel_of(b, rq), false));
    vc_t r = mm_operand(b, vc__op_view(b, R, vc_numel_of(b, R), false));
    vc_t y = vc__op_bmm_raw(b, mm_operand(b, l), r, out);
    vc_release(b, l);
    return y;
}

/* base[:, :, 1:, s:] += src (src the slice's size): an add_ into a slice
 * view of base, then Python's setitem copies the slice onto itself (copy_).
 * Each in-place op on the view makes the base's grad_fn a CopySlices
 * (torch/csrc/autograd/functions/tensor.cpp CopySlices::apply, read at
 * pytorch 1679682ec5ec: result = grad.new_empty_strided(base) and copy_, the
 * op's backward gets grad_slice.clone(), which AddBackward0 hands on as src's
 * gradient). The copy_'s backward (CopyBackwards::apply) also makes
 * zeros_like(grad) for the destination, and
 * the slice it copied from (the add_'s result, a view whose grad_fn is an
 * as_strided view of the base) gets the slice clone, which
 * as_strided_backward writes into a base-sized zero tensor, accumulated into
 * the CopySlices copy. Measured (torch 1.13 CPU, bench/accuracy/measure.py
 * --per-op): the node's peak is the incoming gradient, the copy, the clone
 * and the zeros together. */
static vc_t slice_iadd(vc_build *b, vc_t base, vc_t src)
{
    vc_numel bn = vc_numel_of(b, base), sn = vc_numel_of(b, src);
    vc_dtype dt = vc_dt_of(b, base);
    vc_op *o = vc_op_begin(b, "add_"); /* CopySlices(AddBackward0) */
    int ib = vc_op_in(o, base);
    vc_op_in(o, src); /* its gradient: the slice clone */
    vc_t y = vc_op_out_view(o, ib, bn, vc_contiguous(b, base));
    vc_op_end(o);
    o = vc_op_begin(b, "copy_"); /* CopySlices(CopyBackwards), then the view's AsStridedBackward0 */
    ib = vc_op_in(o, y);         /* the sum of the two base-sized gradients */
    vc_t z = vc_op_out_view(o, ib, bn, vc_contiguous(b, base));
    /* the slice clone and zeros_like(slice), alive together with the incoming gradient and the
     * base-sized copy; the as_strided_backward zeros come after the incoming gradient is freed
     * (and are added into the copy in place): not at this node's peak */
    const vc_part parts[2] = {{.n = sn, .dt = dt}, {.n = sn, .dt = dt}};
    vc_op_btemp_parts(o, parts, 2, false);
    vc_op_end(o);
    return z;
}

/* One table's gather in _add_rel_pos: the float distance [q, k] (a local),
 * its .long() copy kept by IndexBackward0, rel_pos_X[idx] -> [q, k, d]. */
static vc_t rel_gather(vc_build *b, const msa_cfg *c, vc_t table, int64_t q, int64_t k, vc_t *dist)
{
    *dist = vc__op_nograd(b, "sub", -1, -1, vc_n_fixed(q * k), VC_DT_FLOAT);
    vc_t idx = vc__op_nograd(b, "_to_copy", *dist, -1, vc_n_fixed(q * k), VC_DT_I64);
    vc_op *o = vc_op_begin(b, "index");
    vc_op_in(o, table);
    vc_op_in_nodiff(o, idx);
    vc_t g = vc_op_out(o, vc_n_fixed(q * k * c->d), vc_dt_of(b, table));
    vc_op_save(o, idx);
    vc_op_end(o);
    return g;
}

/* _add_rel_pos(attn, q, q_thw, k_thw, rel_pos_h, rel_pos_w, rel_pos_t). */
static vc_t add_rel_pos(vc_build *b, const msa_cfg *c, vc_t attn, vc_t q)
{
    const int64_t h = c->heads, d = c->d, qt = c->q_thw[0], qh = c->q_thw[1], qw = c->q_thw[2];
    const int64_t kt = c->k_thw[0], kh = c->k_thw[1], kw = c->k_thw[2], Lq1 = c->Lq - 1, Lk1 = c->Lk - 1;
    vc_t dh, dw, dt;
    vc_t Rh = rel_gather(b, c, vc_weight(b, 0), qh, kh, &dh);
    vc_t Rw = rel_gather(b, c, vc_weight(b, 1), qw, kw, &dw);
    vc_t Rt = rel_gather(b, c, vc_weight(b, 2), qt, kt, &dt);
    vc_t rq = vc__op_select(b, q, vc_n_sample(h * Lq1 * d), false); /* q[:, :, 1:].reshape: a view */
    vc_hold(b, rq);
    /* einsum("bythwc,hkc->bythwk") and ("bythwc,wkc->bythwk"): sumproduct_pair */
    vc_t eh = rel_einsum(b, rq, Rh, vc_n_sample(h * Lq1 * kh));
    vc_t ew = rel_einsum(b, rq, Rw, vc_n_sample(h * Lq1 * kw));
    /* r_q = r_q.permute(2, 0, 1, 3, 4, 5).reshape(q_t, B*h*q_h*q_w, d) (a copy, rebound to the
     * local r_q: it lives until the function returns) @ Rt.transpose(1, 2) */
    vc_t rq2 = vc__op_contiguous(b, vc__op_view(b, rq, vc_numel_of(b, rq), false));
    vc_t et = vc__op_bmm_raw(b, mm_operand(b, rq2), mm_operand(b, vc__op_view(b, Rt, vc_numel_of(b, Rt), false)),
                         vc_n_sample(h * Lq1 * kt));
    vc_t s1 = vc__op_add(b, vc__op_view(b, eh, vc_numel_of(b, eh), false), vc__op_view(b, ew, vc_numel_of(b, ew), false),
                     vc_n_sample(h * Lq1 * kh * kw), false);
    vc_t s2 = vc__op_add(b, vc__op_view(b, s1, vc_numel_of(b, s1), false), vc__op_view(b, et, vc_numel_of(b, et), false),
                     vc_n_sample(h * Lq1 * Lk1), false);
    vc_t rel = vc__op_contiguous(b, vc__op_view(b, s2, vc_numel_of(b, s2), false)); /* .reshape: a copy */
    vc_t r = slice_iadd(b, attn, rel); /* attn[:, :, 1:, 1:] += rel_pos */
    vc_release(b, rq); /* the function's locals */
    vc_release(b, rq2);
    vc_release(b, eh);
    vc_release(b, ew);
    vc_release(b, et);
    vc_release(b, Rh);
    vc_release(b, Rw);
    vc_release(b, Rt);
    vc_release(b, dh);
    vc_release(b, dw);
    vc_release(b, dt);
    return r;
}

static void msa_emit(vc_build *b, const void *p)
{
    const msa_cfg *c = p;
    const int64_t h = c->heads, d = c->d, D = c->D, N = c->L + 1;
    vc_t in = vc_input(b, 0);
    int wi = c->rel_pos ? 3 : 0;
    vc_t qkv_w = vc_weight(b, wi), qkv_b = vc_weight(b, wi + 1), pw = vc_weight(b, wi + 2), pb = vc_weight(b, wi + 3);
    int pq = wi + 4, pk = pq + (c->pool_q ? 3 : 0), pv = pk + 3;
    vc_t qkv = vc__op_linear(b, in, qkv_w, qkv_b, N, c->C, 3 * D);
    vc_t qv = vc__op_view(b, qkv, vc_numel_of(b, qkv), false); /* reshape.transpose(1, 3) */
    vc_op *o = vc_op_begin(b, "unbind");                    /* backward: stack, a new qkv-sized tensor */
    int iq = vc_op_in(o, qv);
    vc_t q = vc_op_out_view(o, iq, vc_n_sample(N * D), false);
    vc_t k = vc_op_out_view(o, iq, vc_n_sample(N * D), false);
    vc_t v = vc_op_out_view(o, iq, vc_n_sample(N * D), false);
    vc_op_end(o);
    if (c->pool_kv) {
        k = pool_conv(b, c, k, c->k_thw, pk);
        v = pool_conv(b, c, v, c->k_thw, pv);
    }
    if (c->pool_q) q = pool_conv(b, c, q, c->q_thw, pq);
    vc_hold(b, q);
    vc_hold(b, k);
    vc_hold(b, v);
    vc_t qs = vc__op_fresh(b, "mul", q, vc_numel_of(b, q)); /* self.scaler * q */
    if (!vc_contiguous(b, q)) qs = vc__op_view(b, qs, vc_numel_of(b, qs), false);
    vc_t kc = vc__op_autocast(b, k); /* k's copy under autocast, then k.transpose(2, 3): a view */
    vc_t kt = vc__op_view(b, kc, vc_numel_of(b, kc), false);
    vc_t attn = vc__op_bmm_raw(b, mm_operand(b, qs), vc_contiguous(b, k) ? kt : vc__op_contiguous(b, kt),
                           vc_n_sample(h * c->Lq * c->Lk));
    if (c->rel_pos) attn = add_rel_pos(b, c, attn, q);
    attn = vc__op_softmax(b, attn, false);
    vc_t x = vc__op_bmm_raw(b, attn, mm_operand(b, v), vc_n_sample(h * c->Lq * d));
    vc_release(b, in); /* x is rebound here */
    if (c->res_pool) {
        if (c->res_cls) {
            x = vc__op_add(b, x, q, vc_numel_of(b, x), true);
        } else {
            vc_t qsl = vc__op_select(b, q, vc_n_sample(h * (c->Lq - 1) * d), false);
            x = slice_iadd(b, x, qsl); /* x[:, :, 1:, :] += q[:, :, 1:, :] */
        }
    }
    x = vc__op_contiguous(b, vc__op_view(b, x, vc_numel_of(b, x), h == 1)); /* transpose(1, 2).reshape */
    vc_t y = vc__op_linear(b, x, pw, pb, c->Lq, D, D);
    vc_release(b, q);
    vc_release(b, k);
    vc_release(b, v);
    vc_set_output(b, y);
}

const vc_kind vc_kind_MultiscaleAttention = {
    .ops = 98,
    .name = "MultiscaleAttention",
    .summary = "torchvision MViT pooling attention over [1 + T*H*W, C] tokens: qkv, Conv3d pools, rel pos, residual pool",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(msa_cfg),
    .parse = msa_parse, .setup = msa_setup, .emit = msa_emit,
};

/* ---- MViTPool: MultiscaleBlock's pool_skip, Pool(nn.MaxPool3d(kernel, stride, padding),
 * None) on the block's input [N, C]: _unsqueeze (x.unsqueeze(1), a view), tensor_split of the
 * class token (two slices), transpose(2, 3).reshape((B, C) + thw) (a view: the size-1 head dim
 * merges) .contiguous() (a copy), max_pool3d_with_indices (keeps its input and the int64
 * indices), reshape/transpose (views), cat, _squeeze (a view). */

typedef struct {
    int64_t thw[3], k[3], s[3], pad[3];
    /* set by setup */
    int64_t C, L, out[3];
} mpool_cfg;

static int mpool_parse(vc_args *a, void *p)
{
    mpool_cfg *c = p;
    if (vc_arg_ints(a, "thw", 3, VC_REQUIRED, 1, c->thw) || vc_arg_ints(a, "kernel_size", 3, VC_REQUIRED, 1, c->k) ||
        vc_arg_ints(a, "padding", 3, 0, 0, c->pad))
        return -1;
    if (vc_arg_type(a, "stride") == 0) /* MaxPool3d: stride defaults to kernel_size */
        memcpy(c->s, c->k, sizeof c->s);
    else if (vc_arg_ints(a, "stride", 3, VC_REQUIRED, 1, c->s))
        return -1;
    for (int i = 0; i < 3; i++) {
        if (2 * c->pad[i] > c->k[i])
            return vc_arg_fail(a, "padding", "pad should be at most half of the kernel size (%lld > %lld / 2)",
                               (long long)c->pad[i], (long long)c->k[i]);
    }
    return 0;
}

static int mpool_setup(vc_setup *s, void *p)
{
    mpool_cfg *c = p;
    int64_t L = 0;
    if (vc_mul(s, c->thw[0], c->thw[1], &L) || vc_mul(s, L, c->thw[2], &L)) return -1;
    if (s->in[0].nd != 2 || s->in[0].d[0] != L + 1) {
        char sh[96];
        vc_shape_str(&s->in[0], sh, sizeof sh);
        return vc_fail(s, "thw", "MViTPool takes [1 + T*H*W, C] = [%lld, C] per sample, got %s", (long long)(L + 1), sh);
    }
    c->L = L;
    c->C = s->in[0].d[1];
    for (int i = 0; i < 3; i++) {
        c->out[i] = (c->thw[i] + 2 * c->pad[i] - c->k[i]) / c->s[i] + 1; /* pooling_output_shape, floor */
        if (c->out[i] < 1)
            return vc_fail(s, "kernel_size", "the pooled size in dim %d would be %lld", i, (long long)c->out[i]);
    }
    const int64_t out[2] = {1 + prod3(c->out), c->C};
    s->out = vc_shape_make(2, out);
    return 0;
}

static void mpool_emit(vc_build *b, const void *p)
{
    const mpool_cfg *c = p;
    const int64_t C = c->C, Lo = prod3(c->out);
    vc_t x = vc__op_view(b, vc_input(b, 0), vc_numel_of(b, vc_input(b, 0)), true); /* unsqueeze(1) */
    vc_t cls, rest;
    split_cls(b, x, C, c->L * C, &cls, &rest);
    vc_t xc = vc__op_contiguous(b, vc__op_view(b, rest, vc_numel_of(b, rest), false));
    vc_op *o = vc_op_begin(b, "max_pool3d_with_indices");
    vc_op_in(o, xc);
    vc_t y = vc_op_out(o, vc_n_sample(C * Lo), vc_dt_of(b, xc));
    vc_op_extra(o, vc_n_sample(C * Lo), VC_DT_I64);
    vc_op_save(o, xc);
    vc_op_end(o);
    y = vc__op_view(b, y, vc_numel_of(b, y), false); /* reshape(B, 1, C, -1).transpose(2, 3) */
    y = cat2(b, cls, y, vc_n_sample((1 + Lo) * C));
    vc_set_output(b, vc__op_view(b, y, vc_numel_of(b, y), true)); /* _squeeze */
}

const vc_kind vc_kind_MViTPool = {
    .ops = 9,
    .name = "MViTPool",
    .summary = "torchvision MViT's pool_skip: MaxPool3d over the [1 + T*H*W, C] tokens, the class token kept",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(mpool_cfg),
    .parse = mpool_parse, .setup = mpool_setup, .emit = mpool_emit,
};

/* ---- MViTPositionalEncoding: torchvision's PositionalEncoding (models/video/mvit.py) on the
 * patch tokens [T*H*W, C]: class_token.expand(B, -1).unsqueeze(1) (a view of the parameter;
 * its gradient is the batch sum), cat((class_token, x), 1) (a new tensor). Without
 * rel_pos_embed (MViT v1) the positional table is built each forward, without batch:
 * repeat_interleave(temporal_pos, H*W, 0) (index_select with an int64 index it keeps;
 * index_select_backward: new_zeros + index_add, a table-sized gradient), .add_() of
 * spatial_pos.unsqueeze(0).expand(T, -1, -1).reshape(-1, C) (a copy; its gradient summed
 * over T), cat((class_pos.unsqueeze(0), pos_embedding), 0), and x.add_(pos_embedding)
 * (in place; the table's gradient is the batch sum). */

typedef struct {
    int64_t E, T, hw[2];
    bool rel_pos;
    /* set by setup */
    int64_t C, L;
} mpe_cfg;

static int mpe_parse(vc_args *a, void *p)
{
    mpe_cfg *c = p;
    return vc_arg_int(a, "embed_size", VC_REQUIRED, 1, &c->E) || vc_arg_int(a, "temporal_size", VC_REQUIRED, 1, &c->T) ||
           vc_arg_ints(a, "spatial_size", 2, VC_REQUIRED, 1, c->hw) || vc_arg_bool(a, "rel_pos_embed", false, &c->rel_pos);
}

static int mpe_setup(vc_setup *s, void *p)
{
    mpe_cfg *c = p;
    int64_t L = 0, hw = 0;
    if (vc_mul(s, c->hw[0], c->hw[1], &hw) || vc_mul(s, hw, c->T, &L)) return -1;
    if (s->in[0].nd != 2 || s->in[0].d[0] != L || s->in[0].d[1] != c->E) {
        char sh[96];
        vc_shape_str(&s->in[0], sh, sizeof sh);
        return vc_fail(s, "temporal_size", "MViTPositionalEncoding takes [T*H*W, embed_size] = [%lld, %lld] per sample, got %s",
                       (long long)L, (long long)c->E, sh);
    }
    c->L = L;
    c->C = s->in[0].d[1];
    const int64_t out[2] = {L + 1, c->C}, sp[2] = {hw, c->C}, tp[2] = {c->T, c->C};
    s->out = vc_shape_make(2, out);
    /* named_parameters(): class_token, spatial_pos, temporal_pos, class_pos */
    if (vc_param(s, "class_token", c->C)) return -1;
    if (c->rel_pos) return 0;
    return vc_param_shape(s, "spatial_pos", 2, sp, 0) || vc_param_shape(s, "temporal_pos", 2, tp, 0) ||
           vc_param(s, "class_pos", c->C);
}

static void mpe_emit(vc_build *b, const void *p)
{
    const mpe_cfg *c = p;
    const int64_t C = c->C, L = c->L;
    vc_op *o = vc_op_begin(b, "cat");
    vc_op_grad(o, vc_op_in(o, vc_weight(b, 0)), VC_GRAD_REDUCE); /* expand's backward: the batch sum */
    vc_op_grad(o, vc_op_in(o, vc_input(b, 0)), VC_GRAD_PASS);
    vc_t y = vc_op_out(o, vc_n_sample((L + 1) * C), vc_dt_of(b, vc_input(b, 0)));
    vc_op_end(o);
    if (!c->rel_pos) {
        vc_dtype dt = vc_dt_of(b, vc_weight(b, 2));
        vc_t idx = vc__op_nograd(b, "repeat_interleave", -1, -1, vc_n_fixed(L), VC_DT_I64);
        o = vc_op_begin(b, "index_select");
        vc_op_in(o, vc_weight(b, 2));
        vc_op_in_nodiff(o, idx);
        vc_t pe = vc_op_out(o, vc_n_fixed(L * C), dt);
        vc_op_save(o, idx);
        vc_op_end(o);
        o = vc_op_begin(b, "clone"); /* spatial_pos.unsqueeze(0).expand(T, -1, -1).reshape(-1, C) */
        vc_op_grad(o, vc_op_in(o, vc_weight(b, 1)), VC_GRAD_REDUCE);
        vc_t sp = vc_op_out(o, vc_n_fixed(L * C), dt);
        vc_op_end(o);
        pe = vc__op_add(b, pe, sp, vc_n_fixed(L * C), true);
        o = vc_op_begin(b, "cat");
        vc_op_grad(o, vc_op_in(o, vc_weight(b, 3)), VC_GRAD_PASS);
        vc_op_grad(o, vc_op_in(o, pe), VC_GRAD_PASS);
        vc_t full = vc_op_out(o, vc_n_fixed((L + 1) * C), dt);
        vc_op_end(o);
        y = vc__op_add(b, y, full, vc_n_sample((L + 1) * C), true);
    }
    vc_set_output(b, y);
}

const vc_kind vc_kind_MViTPositionalEncoding = {
    .ops = 7,
    .name = "MViTPositionalEncoding",
    .summary = "torchvision MViT's class token and (v1) spatio-temporal position table on [T*H*W, C] tokens",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(mpe_cfg),
    .parse = mpe_parse, .setup = mpe_setup, .emit = mpe_emit,
};
