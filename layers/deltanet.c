/*
 * deltanet.c — GatedDeltaNet: the linear-attention token mixer of Qwen3-Next
 * (model_type qwen3_next), as transformers runs it without the
 * flash-linear-attention and causal-conv1d kernels.
 *
 * Source: huggingface/transformers 7515843b617551b008901620ca58f1208bbc330d,
 * src/transformers/models/qwen3_next/modeling_qwen3_next.py:
 *  - Qwen3NextGatedDeltaNet.__init__: dt_bias [num_v_heads], A_log [num_v_heads],
 *    conv1d (depthwise, no bias) weight [conv_dim, 1, kernel] with conv_dim =
 *    2 key_dim + value_dim, norm (Qwen3NextRMSNormGated) weight [head_v_dim];
 *    in_proj_qkvz, in_proj_ba and out_proj are nn.Linear layers of their own
 *    (src/hf/hf_layers.c writes them around this layer);
 *  - Qwen3NextGatedDeltaNet.forward and fix_query_key_value_ordering: the
 *    projections split and reshaped, cat into mixed_qkv, conv1d + silu (or
 *    torch_causal_conv1d_update with a cached conv state), beta = sigmoid(b),
 *    g = -exp(A_log) * softplus(a + dt_bias), q/k repeat_interleave'd to the
 *    value heads, the gated delta rule, the gated RMSNorm;
 *  - torch_chunk_gated_delta_rule (the prefill and training path, chunk 64):
 *    l2norm, fp32 copies, pad to the chunk, the decay mask, the in-place
 *    row-by-row solve of the intra-chunk matrix (63 clone/mul/sum/copy_
 *    steps, each product saved for backward), then one step per chunk
 *    carrying the [v_heads, head_k_dim, head_v_dim] fp32 state;
 *  - torch_recurrent_gated_delta_rule (a decoding step with a cached state);
 *  - Qwen3NextRMSNormGated.forward.
 * Qwen3.5 / Qwen3.6 (model_type qwen3_5, qwen3_5_moe; huggingface/transformers
 * 8940358a, src/transformers/models/qwen3_5/modular_qwen3_5.py
 * Qwen3_5GatedDeltaNet, which Qwen3_5MoeGatedDeltaNet is): the same layer with
 * four projections instead of two (in_proj_qkv [2 key_dim + value_dim],
 * in_proj_z [value_dim], in_proj_b and in_proj_a [num_v_heads]) and no
 * fix_query_key_value_ordering: mixed_qkv is in_proj_qkv's output itself
 * (transposed, no cat), rebound to the conv's output, and z, b, a are the
 * projections' contiguous outputs (split_projections: true, four inputs).
 * What is modelled is this torch path, the one that runs when the `fla`
 * package (and causal_conv1d) is absent: fla's chunk_gated_delta_rule is a
 * Triton autograd.Function that saves its inputs and recomputes the rest,
 * which this file does not model (docs/llm.md says so).
 *
 * The state --mode generate keeps (Qwen3NextDynamicCache): per layer and
 * sequence conv_states [conv_dim, kernel] in the activations' dtype and
 * recurrent_states [v_heads, head_k_dim, head_v_dim] in fp32 (the chunk
 * rule's last_recurrent_state, made .to(value) of its fp32 value), a fixed
 * size whatever the length (vc_ssm_state, src/engine/generate.c).
 */
#include "ops.h"

typedef struct {
    int64_t hk, hv, dk, dv, kernel;
    double eps;
    bool split; /* Qwen3_5GatedDeltaNet: inputs [in_proj_qkv, in_proj_z, in_proj_b, in_proj_a] */
} gdn_cfg;

static int gdn_parse(vc_args *a, void *p)
{
    gdn_cfg *c = p;
    if (vc_arg_int(a, "num_k_heads", VC_REQUIRED, 1, &c->hk) || vc_arg_int(a, "num_v_heads", VC_REQUIRED, 1, &c->hv) ||
        vc_arg_int(a, "head_k_dim", VC_REQUIRED, 1, &c->dk) || vc_arg_int(a, "head_v_dim", VC_REQUIRED, 1, &c->dv) ||
        vc_arg_int(a, "conv_kernel", 4, 1, &c->kernel) || vc_arg_float(a, "eps", 1e-6, 0.0, 1.0, &c->eps) ||
        vc_arg_bool(a, "split_projections", false, &c->split))
        return -1;
    if (c->hv % c->hk)
        return vc_arg_fail(a, "num_v_heads", "must be divisible by num_k_heads (%lld), got %lld", (long long)c->hk,
                           (long long)c->hv);
    return 0;
}

#define CHUNK 64 /* torch_chunk_gated_delta_rule(chunk_size=64) */

static int gdn_setup(vc_setup *s, void *p)
{
    const gdn_cfg *c = p;
    int64_t kd, vd, conv, qkvz, t;
    if (vc_mul(s, c->hk, c->dk, &kd) || vc_mul(s, c->hv, c->dv, &vd) || vc_add(s, 2 * kd, vd, &conv) ||
        vc_add(s, 2 * kd, 2 * vd, &qkvz) || vc_mul(s, conv, c->kernel, &t))
        return -1;
    if (c->split) { /* Qwen3_5GatedDeltaNet: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a */
        if (s->nin != 4)
            return vc_fail(s, "inputs", "GatedDeltaNet with split_projections takes [in_proj_qkv, in_proj_z, in_proj_b, in_proj_a]");
        const int64_t w[4] = {conv, vd, c->hv, c->hv};
        static const char *const nm[4] = {"qkv", "z", "b", "a"};
        for (int i = 0; i < 4; i++)
            if (s->in[i].nd != 2 || s->in[i].d[0] != s->in[0].d[0] || s->in[i].d[1] != w[i])
                return vc_fail(s, "inputs", "the %s projection must be [L, %lld] per sample", nm[i], (long long)w[i]);
    } else {
        if (s->nin != 2) return vc_fail(s, "inputs", "GatedDeltaNet takes [in_proj_qkvz, in_proj_ba]");
        const vc_shape *x = &s->in[0], *ba = &s->in[1];
        if (x->nd != 2 || x->d[1] != qkvz)
            return vc_fail(s, "inputs", "the qkvz projection must be [L, %lld] per sample", (long long)qkvz);
        if (ba->nd != 2 || ba->d[0] != x->d[0] || ba->d[1] != 2 * c->hv)
            return vc_fail(s, "inputs", "the ba projection must be [%lld, %lld] per sample", (long long)x->d[0],
                           (long long)(2 * c->hv));
    }
    const int64_t L = s->in[0].d[0];
    /* the widest temporaries, each at most 2^56 elements per sample: the decay mask and the
     * intra-chunk matrix [v_heads, L padded, 64], the padded q/k/v [v_heads, L padded, head dim],
     * the conv output [conv_dim, L + kernel - 1], the state [v_heads, head_k_dim, head_v_dim] */
    const int64_t lim = INT64_C(1) << 56, lp = (L + CHUNK - 1) / CHUNK * CHUNK;
    const int64_t wide = c->dk > c->dv ? (c->dk > CHUNK ? c->dk : CHUNK) : (c->dv > CHUNK ? c->dv : CHUNK);
    int64_t t2, t3;
    if (vc_mul(s, c->hv, lp, &t) || vc_mul(s, t, wide, &t) || vc_mul(s, c->hv, c->dk, &t2) || vc_mul(s, t2, c->dv, &t2) ||
        vc_mul(s, conv, L + c->kernel - 1, &t3))
        return -1;
    if (t > lim || t2 > lim || t3 > lim)
        return vc_fail(s, NULL, "a temporary of the gated delta rule has more than 2^56 elements per sample");
    int64_t d[2] = {L, vd};
    s->out = vc_shape_make(2, d);
    /* named_parameters(): dt_bias, A_log, then the submodules conv1d, norm */
    return vc_param(s, "dt_bias", c->hv) || vc_param(s, "A_log", c->hv) ||
           vc_param_shape(s, "conv1d.weight", 3, (int64_t[3]){conv, 1, c->kernel}, 0) || vc_param(s, "norm.weight", c->dv);
}

static vc_dtype promote(vc_dtype a, vc_dtype b) { return a == VC_DT_F32 || b == VC_DT_F32 ? VC_DT_F32 : a; }

/* x * y broadcast to out (type promotion) */
static vc_t mul2(vc_build *b, vc_t x, vc_t y, vc_numel out) { return vc__op_mul_dt(b, x, y, out, promote(vc_dt_of(b, x), vc_dt_of(b, y))); }

/* x + y or x - y broadcast to out: nothing saved */
static vc_t add2(vc_build *b, const char *name, vc_t x, vc_t y, vc_numel out)
{
    vc_op *o = vc_op_begin(b, name);
    int ix = vc_op_in(o, x), iy = vc_op_in(o, y);
    vc_t r = vc_op_out(o, out, promote(vc_dt_of(b, x), vc_dt_of(b, y)));
    vc_op_grad(o, ix, vc_n_same(vc_numel_of(b, x), out) ? VC_GRAD_PASS : VC_GRAD_REDUCE);
    vc_op_grad(o, iy, vc_n_same(vc_numel_of(b, y), out) ? VC_GRAD_PASS : VC_GRAD_REDUCE);
    vc_op_end(o);
    return r;
}

/* torch.cat of n tensors into out: nothing saved, each gradient a slice of the output's */
static vc_t cat(vc_build *b, const vc_t *x, int n, vc_numel out, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, "cat");
    for (int i = 0; i < n; i++) vc_op_grad(o, vc_op_in(o, x[i]), VC_GRAD_PASS);
    vc_t r = vc_op_out(o, out, dt);
    vc_op_end(o);
    return r;
}

static vc_t sum_to(vc_build *b, vc_t x, vc_numel out) { return vc__op_fresh(b, "sum", x, out); }

/* l2norm(x): x * rsqrt((x * x).sum(-1, keepdim=True) + eps) over n rows */
static vc_t l2norm(vc_build *b, vc_t x, int64_t rows)
{
    vc_numel full = vc_numel_of(b, x), r = vc_n_sample(rows);
    vc_t sq = mul2(b, x, x, full);
    vc_t s = sum_to(b, sq, r);
    vc_t se = vc__op_fresh(b, "add", s, r);
    vc_t inv = vc__op_unary(b, "rsqrt", se, VC_SAVE_OUT, false);
    return mul2(b, x, inv, full);
}

/* x.transpose(1, 2).contiguous().to(torch.float32): a copy unless x is seen contiguous
 * (one token: the transposed dim has size 1), then the fp32 copy */
static vc_t to_heads_f32(vc_build *b, vc_t x, bool one)
{
    if (!one) x = vc__op_clone(b, vc__op_view(b, x, vc_numel_of(b, x), false));
    return vc__op_cast(b, x, VC_DT_F32);
}

/* Qwen3NextRMSNormGated.forward(core, z) over rows of head_v_dim */
static vc_t gated_norm(vc_build *b, vc_t x, vc_t z, vc_t w, int64_t rows)
{
    vc_dtype in_dt = vc_dt_of(b, x);
    vc_numel full = vc_numel_of(b, x), r = vc_n_sample(rows);
    vc_t h = vc__op_cast(b, x, VC_DT_F32);
    vc_t sq = mul2(b, h, h, full); /* pow(2): saves its input */
    vc_t var = vc__op_mean(b, sq, r);
    vc_t ve = vc__op_fresh(b, "add", var, r);
    vc_t rs = vc__op_unary(b, "rsqrt", ve, VC_SAVE_OUT, false);
    vc_t hn = mul2(b, h, rs, full);
    vc_t hc = vc__op_cast(b, hn, in_dt);  /* .to(input_dtype) */
    vc_t y = mul2(b, w, hc, full);        /* self.weight * hidden_states */
    vc_t zf = vc__op_cast(b, z, VC_DT_F32); /* gate.to(torch.float32) */
    vc_t sz = vc__op_unary(b, "silu", zf, VC_SAVE_IN, false);
    vc_t y2 = mul2(b, y, sz, full);
    return vc__op_cast(b, y2, in_dt);     /* .to(input_dtype) */
}

/* x.masked_fill(mask, 0) (or masked_fill_ in place): the mask saved, the gradient
 * grad.masked_fill(mask, 0), a new tensor */
static vc_t masked_fill(vc_build *b, vc_t x, vc_t mask, bool inplace)
{
    vc_op *o = vc_op_begin(b, inplace ? "masked_fill_" : "masked_fill");
    int ix = vc_op_in(o, x);
    vc_op_in_nodiff(o, mask);
    vc_t r = inplace ? vc_op_out_view(o, ix, vc_numel_of(b, x), vc_contiguous(b, x))
                     : vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_save(o, mask);
    vc_op_end(o);
    return r;
}

/* Python's locals: alive until rebound or the function returns (what autograd saves
 * stays for backward as ever); hold() keeps t, drop() ends the hold of the value it
 * rebinds (-1: none) */
static vc_t hold(vc_build *b, vc_t t)
{
    vc_hold(b, t);
    return t;
}
static void drop(vc_build *b, vc_t t)
{
    if (t >= 0) vc_release(b, t);
}

/* torch_chunk_gated_delta_rule on q, k [L, Hv, Dk], v [L, Hv, Dv], g and beta [L, Hv]
 * (q and k l2-normed already): core_attn_out [L, Hv, Dv] before its cast back; the final
 * state in *state when state is not NULL (output_final_state). The function's locals
 * (query, key, value, beta, g, k_beta, v_beta, decay_mask, k_cumdecay, core_attn_out, and
 * the chunk loop's) live until it returns or they are rebound. */
static vc_t chunk_rule(vc_build *b, const gdn_cfg *c, int64_t L, vc_t q, vc_t k, vc_t v, vc_t g, vc_t beta, vc_t *state)
{
    const int64_t Hv = c->hv, Dk = c->dk, Dv = c->dv, C = CHUNK;
    const int64_t nc = (L + C - 1) / C, Lp = nc * C;
    const vc_dtype dt0 = vc_dt_of(b, q); /* initial_dtype */
    /* [x.transpose(1, 2).contiguous().to(torch.float32) for x in (query, key, value, beta, g)] */
    q = to_heads_f32(b, q, false);
    k = to_heads_f32(b, k, false);
    v = to_heads_f32(b, v, false);
    beta = to_heads_f32(b, beta, false);
    g = to_heads_f32(b, g, false);
    /* F.pad(x, (0, 0, 0, pad_size)): constant_pad_nd, a new tensor even without padding */
    q = vc__op_fresh(b, "constant_pad_nd", q, vc_n_sample(Hv * Lp * Dk));
    k = vc__op_fresh(b, "constant_pad_nd", k, vc_n_sample(Hv * Lp * Dk));
    v = vc__op_fresh(b, "constant_pad_nd", v, vc_n_sample(Hv * Lp * Dv));
    beta = vc__op_fresh(b, "constant_pad_nd", beta, vc_n_sample(Hv * Lp));
    g = vc__op_fresh(b, "constant_pad_nd", g, vc_n_sample(Hv * Lp));
    q = hold(b, vc__op_fresh(b, "mul", q, vc_numel_of(b, q))); /* query = query * scale */
    hold(b, k);
    hold(b, beta);
    vc_t v0 = hold(b, v);
    vc_t v_beta = hold(b, mul2(b, v, beta, vc_numel_of(b, v)));
    vc_t k_beta = hold(b, mul2(b, k, beta, vc_numel_of(b, k)));
    vc_t mask = vc__op_new(b, "triu", vc_n_fixed(C * C), VC_DT_BOOL);
    g = hold(b, vc__op_fresh(b, "cumsum", g, vc_numel_of(b, g)));
    const vc_numel sq = vc_n_sample(Hv * Lp * C); /* [Hv, chunks, 64, 64] */
    /* decay_mask = ((g.unsqueeze(-1) - g.unsqueeze(-2)).tril().exp().float()).tril() */
    vc_t dm = add2(b, "sub", g, g, sq);
    dm = vc__op_fresh(b, "tril", dm, sq);
    dm = vc__op_unary(b, "exp", dm, VC_SAVE_OUT, false);
    dm = hold(b, vc__op_fresh(b, "tril", dm, sq));
    /* attn = -((k_beta @ key.transpose(-1, -2)) * decay_mask).masked_fill(mask, 0) */
    vc_t attn = vc__op_bmm(b, k_beta, vc__op_view(b, k, vc_numel_of(b, k), false), sq);
    attn = mul2(b, attn, dm, sq);
    attn = masked_fill(b, attn, mask, false);
    attn = vc__op_fresh(b, "neg", attn, sq);
    /* for i in range(1, chunk_size): row = attn[..., i, :i].clone(); sub = attn[..., :i, :i].clone()
     *     attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2) */
    vc_t row = -1, sub = -1; /* the loop's variables: each freed when rebound, the last ones at the return */
    for (int64_t i = 1; i < C; i++) {
        vc_numel nr = vc_n_sample(Hv * nc * i), ns = vc_n_sample(Hv * nc * i * i);
        vc_t r0 = row, s0 = sub;
        row = hold(b, vc__op_clone(b, vc__op_select(b, attn, nr, false)));
        drop(b, r0);
        sub = hold(b, vc__op_clone(b, vc__op_select(b, attn, ns, false)));
        drop(b, s0);
        vc_t pr = mul2(b, row, sub, ns);
        vc_t sm = sum_to(b, pr, nr);
        vc_t nw = add2(b, "add", row, sm, nr);
        attn = vc__op_copy_into(b, attn, nw);
    }
    vc_t eye = vc__op_new(b, "eye", vc_n_fixed(C * C), vc_dt_of(b, attn));
    attn = hold(b, add2(b, "add", attn, eye, sq));
    v = hold(b, vc__op_bmm(b, attn, v_beta, vc_n_sample(Hv * Lp * Dv))); /* value = attn @ v_beta */
    drop(b, v0);
    /* k_cumdecay = attn @ (k_beta * g.exp().unsqueeze(-1)) */
    vc_t ge = vc__op_unary(b, "exp", g, VC_SAVE_OUT, false);
    vc_t kcd = hold(b, vc__op_bmm(b, attn, mul2(b, k_beta, ge, vc_numel_of(b, k_beta)), vc_n_sample(Hv * Lp * Dk)));
    const vc_numel st = vc_n_sample(Hv * Dk * Dv);
    vc_t s = vc__op_new(b, "zeros", st, VC_DT_F32);
    s = hold(b, vc__op_cast(b, s, vc_dt_of(b, v))); /* .to(value) */
    const vc_t core0 = hold(b, vc__op_new(b, "zeros_like", vc_numel_of(b, v), vc_dt_of(b, v)));
    vc_t core = core0; /* written in place (copy_ into its chunks): the views share core0's storage */
    vc_t mask1 = vc__op_new(b, "triu", vc_n_fixed(C * C), VC_DT_BOOL);
    const vc_numel cq = vc_n_sample(Hv * C * Dk), cv = vc_n_sample(Hv * C * Dv), cc = vc_n_sample(Hv * C * C);
    const vc_numel cg = vc_n_sample(Hv * C), hv = vc_n_sample(Hv);
    vc_t loc[4] = {attn, -1, -1, -1}; /* the loop's attn, v_prime, v_new, attn_inter */
    vc_t dead[3] = {-1, -1, -1};     /* the unused final state's saved tensors */
    for (int64_t i = 0; i < nc; i++) {
        vc_t qi = vc__op_select(b, q, cq, false), ki = vc__op_select(b, k, cq, false), vi = vc__op_select(b, v, cv, false);
        /* attn = (q_i @ k_i.transpose(-1, -2) * decay_mask[:, :, i]).masked_fill_(mask, 0) */
        vc_t a = vc__op_bmm(b, qi, vc__op_view(b, ki, cq, false), cc);
        a = mul2(b, a, vc__op_select(b, dm, cc, false), cc);
        a = masked_fill(b, a, mask1, true);
        drop(b, loc[0]);
        loc[0] = hold(b, a);
        /* v_prime = k_cumdecay[:, :, i] @ last_recurrent_state; v_new = v_i - v_prime */
        vc_t vp = vc__op_bmm(b, vc__op_select(b, kcd, cq, false), s, cv);
        vc_t vn = add2(b, "sub", vi, vp, cv);
        drop(b, loc[1]);
        loc[1] = hold(b, vp);
        drop(b, loc[2]);
        loc[2] = hold(b, vn);
        /* attn_inter = (q_i * g[:, :, i, :, None].exp()) @ last_recurrent_state */
        vc_t gi = vc__op_unary(b, "exp", vc__op_select(b, g, cg, false), VC_SAVE_OUT, false);
        vc_t ai = vc__op_bmm(b, mul2(b, qi, gi, cq), s, cv);
        drop(b, loc[3]);
        loc[3] = hold(b, ai);
        /* core_attn_out[:, :, i] = attn_inter + attn @ v_new */
        vc_t av = vc__op_bmm(b, a, vn, cv);
        core = vc__op_copy_into(b, core, add2(b, "add", ai, av, cv));
        /* last_recurrent_state = last_recurrent_state * g[:, :, i, -1, None, None].exp()
         *     + (k_i * (g[:, :, i, -1, None] - g[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_new */
        vc_t s0 = s;
        if (!state && i == nc - 1) {
            /* the last chunk's state with output_final_state False: computed, then set to None at the
             * return, a branch no gradient reaches; autograd's nodes on it (never run by backward) keep
             * exp(g_last), the decay and k_i * decay until then, and free them with it */
            vc_t gl = vc__op_nograd(b, "exp", vc__op_select(b, g, hv, false), -1, hv, VC_DT_F32);
            vc_t s1 = vc__op_nograd(b, "mul", s, gl, st, vc_dt_of(b, s));
            vc_t d = vc__op_nograd(b, "sub", vc__op_select(b, g, hv, false), vc__op_select(b, g, cg, false), cg, VC_DT_F32);
            vc_t de = vc__op_nograd(b, "exp", d, -1, cg, VC_DT_F32);
            vc_t kd = vc__op_nograd(b, "mul", ki, de, cq, vc_dt_of(b, ki));
            vc_t s2 = vc__op_nograd(b, "bmm", kd, vn, st, vc_dt_of(b, kd));
            s = hold(b, vc__op_nograd(b, "add", s1, s2, st, vc_dt_of(b, s1)));
            dead[0] = hold(b, gl);
            dead[1] = hold(b, de);
            dead[2] = hold(b, kd);
        } else {
            vc_t gl = vc__op_unary(b, "exp", vc__op_select(b, g, hv, false), VC_SAVE_OUT, false);
            vc_t s1 = mul2(b, s, gl, st);
            vc_t d = add2(b, "sub", vc__op_select(b, g, hv, false), vc__op_select(b, g, cg, false), cg);
            vc_t de = vc__op_unary(b, "exp", d, VC_SAVE_OUT, false);
            vc_t kd = mul2(b, ki, de, cq);
            vc_t s2 = vc__op_bmm(b, vc__op_view(b, kd, cq, false), vn, st);
            s = hold(b, add2(b, "add", s1, s2, st));
        }
        drop(b, s0);
    }
    if (state) *state = s;
    /* core_attn_out[:, :, :sequence_length].transpose(1, 2).contiguous().to(initial_dtype) */
    vc_t o = vc__op_select(b, core, vc_n_sample(Hv * L * Dv), false);
    o = vc__op_clone(b, vc__op_view(b, o, vc_numel_of(b, o), false));
    o = vc__op_cast(b, o, dt0);
    const vc_t locals[] = {q, k, beta, v_beta, k_beta, g, dm, v, kcd, core0, s, row, sub, dead[0], dead[1], dead[2], loc[0], loc[1], loc[2], loc[3]};
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) drop(b, locals[i]);
    return o;
}

/* torch_recurrent_gated_delta_rule for one token with the cached state (fp32) *s:
 * core_attn_out [1, Hv, Dv]; *s becomes the new state */
static vc_t recurrent_rule(vc_build *b, const gdn_cfg *c, vc_t q, vc_t k, vc_t v, vc_t g, vc_t beta, vc_t *s)
{
    const int64_t Hv = c->hv, Dk = c->dk, Dv = c->dv;
    q = to_heads_f32(b, q, true);
    k = to_heads_f32(b, k, true);
    v = to_heads_f32(b, v, true);
    beta = to_heads_f32(b, beta, true);
    g = to_heads_f32(b, g, true);
    q = vc__op_fresh(b, "mul", q, vc_numel_of(b, q)); /* query * scale */
    const vc_numel st = vc_n_sample(Hv * Dk * Dv), hd = vc_n_sample(Hv * Dv);
    vc_t core = vc__op_new(b, "zeros", hd, VC_DT_F32);
    core = vc__op_cast(b, core, vc_dt_of(b, v)); /* .to(value) */
    vc_t st0 = vc__op_cast(b, *s, vc_dt_of(b, v)); /* initial_state.to(value) */
    vc_t gt = vc__op_unary(b, "exp", g, VC_SAVE_OUT, false);
    vc_t x = mul2(b, st0, gt, st);                     /* last_recurrent_state * g_t */
    vc_t kv = sum_to(b, mul2(b, x, k, st), hd);         /* (state * k_t.unsqueeze(-1)).sum(dim=-2) */
    vc_t delta = mul2(b, add2(b, "sub", v, kv, hd), beta, hd);
    x = add2(b, "add", x, mul2(b, k, delta, st), st);    /* state + k_t.unsqueeze(-1) * delta.unsqueeze(-2) */
    core = vc__op_copy_into(b, core, sum_to(b, mul2(b, x, q, st), hd));
    *s = x;
    return core;
}

/* --serve's profiling run: vLLM's layer, whose core does nothing there (vllm-project/vllm @ 6365b387,
 * vllm/model_executor/models/qwen3_next.py Qwen3NextGatedDeltaNet: forward, then _forward_core "if
 * attn_metadata is None: # V1 profile run: return"; vllm/v1/worker/gpu_model_runner.py @ 4e179065
 * _dummy_run builds attention metadata only with force_attention or a FULL cudagraph, which
 * profile_run's call has not). What the forward allocates:
 *  - Qwen3NextGatedDeltaNet.forward: in_proj_qkvz, in_proj_ba (the inputs, locals to the end);
 *    fix_query_key_value_ordering (torch.split views; value, z, b, a reshaped across the key-head groups:
 *    copies when there is more than one group), query / key / value rearranged "l p d -> l (p d)"
 *    (query and key copies then, value a view of its copy), mixed_qkv = torch.cat((query, key, value));
 *  - Qwen3_5GatedDeltaNet.forward (vllm/model_executor/models/qwen3_5.py @ 36c110bd): in_proj_qkv,
 *    in_proj_z (reshaped: a view), in_proj_b, in_proj_a (.contiguous(): themselves), no split or cat;
 *  - both: core_attn_out = torch.zeros((tokens, v_heads, head_v_dim), hidden dtype), left as it is;
 *    z.reshape(-1, head_v_dim) (a copy of a strided view: Qwen3-Next with one key-head group);
 *    self.norm (RMSNormGated: rmsnorm_fn -> layer_norm_fwd, vllm/model_executor/layers/fla/ops/
 *    layernorm_guard.py: out = torch.empty_like(x) and rstd float32 [rows], freed on return), the
 *    reshapes and rearrange (views) before out_proj. */
static void gdn_emit_vllm_profile(vc_build *b, const gdn_cfg *c)
{
    const int64_t L = vc_input_shape(b, 0)->d[0], Hk = c->hk, Hv = c->hv, Dk = c->dk, Dv = c->dv;
    const int64_t Kd = Hk * Dk, Vd = Hv * Dv, Cd = 2 * Kd + Vd;
    const vc_dtype dt = vc_dt_of(b, vc_input(b, 0));
    vc_t z, locals[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    int nl = 0;
    if (c->split) {
        z = vc_input(b, 1);
    } else {
        const bool copies = Hk > 1;
        vc_t qkvz = vc_input(b, 0), ba = vc_input(b, 1);
        vc_t q = vc__op_view(b, qkvz, vc_n_sample(L * Kd), false), k = vc__op_view(b, qkvz, vc_n_sample(L * Kd), false);
        vc_t v = vc__op_view(b, qkvz, vc_n_sample(L * Vd), false);
        z = vc__op_view(b, qkvz, vc_n_sample(L * Vd), false);
        vc_t bv = vc__op_view(b, ba, vc_n_sample(L * Hv), false), av = vc__op_view(b, ba, vc_n_sample(L * Hv), false);
        if (copies) {
            v = vc__op_clone(b, v);
            z = vc__op_clone(b, z);
            locals[nl++] = vc__op_clone(b, bv);
            locals[nl++] = vc__op_clone(b, av);
            q = vc__op_clone(b, q);
            k = vc__op_clone(b, k);
        }
        locals[nl++] = v;
        locals[nl++] = q;
        locals[nl++] = k;
        for (int i = 0; i < nl; i++) vc_hold(b, locals[i]);
        locals[nl++] = hold(b, vc__op_nograd(b, "cat", q, k, vc_n_sample(L * Cd), dt)); /* mixed_qkv */
        if (!copies) z = vc__op_clone(b, z); /* z.reshape(-1, head_v_dim) of the strided view */
        locals[nl++] = hold(b, z);
    }
    vc_t core = hold(b, vc__op_new(b, "zeros", vc_n_sample(L * Vd), dt)); /* core_attn_out */
    vc_t rstd = vc__op_nograd(b, "layer_norm_fwd", core, z, vc_n_sample(L * Hv), VC_DT_F32);
    vc_t y = vc__op_nograd(b, "layer_norm_fwd", core, z, vc_n_sample(L * Vd), dt);
    vc_release(b, rstd);
    vc_set_output(b, vc__op_view(b, y, vc_numel_of(b, y), true));
    vc_release(b, core);
    for (int i = 0; i < nl; i++) vc_release(b, locals[i]);
}

static void gdn_emit(vc_build *b, const void *p)
{
    const gdn_cfg *c = p;
    if (vc_serve_profile(b)) {
        gdn_emit_vllm_profile(b, c);
        return;
    }
    const int64_t L = vc_input_shape(b, 0)->d[0], Hk = c->hk, Hv = c->hv, Dk = c->dk, Dv = c->dv;
    const int64_t Kd = Hk * Dk, Vd = Hv * Dv, Cd = 2 * Kd + Vd, K = c->kernel;
    const bool split_copies = !c->split && Hk > 1; /* the reshapes across the key-head groups copy */
    vc_dtype dt = vc_dt_of(b, vc_input(b, 0));
    bool decode = false;
    int32_t *cache = vc_ssm_state(b, &decode); /* Qwen3NextDynamicCache's slot, NULL without one */
    decode = decode && L == 1;                 /* use_precomputed_states */
    vc_t held[6] = {-1, -1, -1, -1, -1, -1};   /* value, z, b, a, query, key: the forward's locals */
    vc_t z, bb, aa, mixed;
    if (c->split) {
        /* Qwen3_5GatedDeltaNet.forward: mixed_qkv = in_proj_qkv(h).transpose(1, 2), rebound to
         * the conv's output (its reference ends there); z = in_proj_z(h).reshape(..) (a view of
         * the contiguous output), b = in_proj_b(h), a = in_proj_a(h): locals to the end */
        vc_input_unheld(b, 0);
        z = vc_input(b, 1);
        bb = vc_input(b, 2);
        aa = vc_input(b, 3);
        mixed = vc__op_view(b, vc_input(b, 0), vc_n_sample(L * Cd), false); /* .transpose(1, 2) */
    } else {
        vc_t qkvz = vc_input(b, 0), ba = vc_input(b, 1);
        /* fix_query_key_value_ordering: torch.split views of the grouped projections, value and
         * z reshaped across the groups (copies), b and a likewise; then query and key reshaped
         * to [.., key_dim] (copies) */
        vc_t qv = vc__op_view(b, qkvz, vc_n_sample(L * Kd), false), kv = vc__op_view(b, qkvz, vc_n_sample(L * Kd), false);
        vc_t vv = vc__op_view(b, qkvz, vc_n_sample(L * Vd), false), zv = vc__op_view(b, qkvz, vc_n_sample(L * Vd), false);
        vc_t value = split_copies ? vc__op_clone(b, vv) : vv;
        z = split_copies ? vc__op_clone(b, zv) : zv;
        vc_t bv = vc__op_view(b, ba, vc_n_sample(L * Hv), false), av = vc__op_view(b, ba, vc_n_sample(L * Hv), false);
        bb = split_copies ? vc__op_clone(b, bv) : bv;
        aa = split_copies ? vc__op_clone(b, av) : av;
        vc_t query = split_copies ? vc__op_clone(b, qv) : qv, key = split_copies ? vc__op_clone(b, kv) : kv;
        const vc_t h[6] = {value, z, bb, aa, query, key};
        for (int i = 0; i < 6; i++) vc_hold(b, held[i] = h[i]); /* the forward's locals */
        vc_t parts[3] = {query, key, value};
        mixed = cat(b, parts, 3, vc_n_sample(L * Cd), dt); /* torch.cat((query, key, value), dim=-1) */
        mixed = vc__op_view(b, mixed, vc_numel_of(b, mixed), false); /* .transpose(1, 2) */
    }
    vc_t w_conv = vc_weight(b, 2);
    vc_t act;
    if (decode) {
        /* torch_causal_conv1d_update: cat([conv_state, hidden_states], -1).to(weight.dtype);
         * conv_state.copy_(new[:, :, -state_len:]); conv1d (no padding); silu(out[:, :, -seq_len:]) */
        vc_t hn = vc__op_nograd(b, "cat", cache[0], mixed, vc_n_sample(Cd * (K + 1)), dt);
        hn = vc__op_cast(b, hn, vc_dt_of(b, w_conv));
        cache[0] = vc__op_copy_into(b, cache[0], vc__op_select(b, hn, vc_n_sample(Cd * K), false));
        vc_t co = vc__op_conv(b, hn, w_conv, -1, vc_n_sample(Cd * 2));
        act = vc__op_unary(b, "silu", vc__op_select(b, co, vc_n_sample(Cd), false), VC_SAVE_IN, false);
        act = vc__op_cast(b, act, dt);
    } else {
        if (cache) /* conv_state = F.pad(mixed_qkv, (kernel - seq_len, 0)): the cache keeps it */
            cache[0] = vc__op_fresh(b, "constant_pad_nd", mixed, vc_n_sample(Cd * K));
        /* F.silu(self.conv1d(mixed_qkv)[:, :, :seq_len]) (padding kernel - 1) */
        vc_t co = vc__op_conv(b, mixed, w_conv, -1, vc_n_sample(Cd * (L + K - 1)));
        act = vc__op_unary(b, "silu", vc__op_select(b, co, vc_n_sample(Cd * L), false), VC_SAVE_IN, false);
    }
    /* mixed_qkv.transpose(1, 2); torch.split into query, key, value; reshape per head (views):
     * query, key and value rebound, their copies freed */
    act = hold(b, vc__op_view(b, act, vc_numel_of(b, act), false)); /* mixed_qkv, a local to the end */
    vc_t query = vc__op_view(b, act, vc_n_sample(L * Kd), false);
    vc_t key = vc__op_view(b, act, vc_n_sample(L * Kd), false);
    vc_t value = vc__op_view(b, act, vc_n_sample(L * Vd), false);
    drop(b, held[0]);
    drop(b, held[4]);
    drop(b, held[5]);
    /* beta = b.sigmoid(); g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias) */
    vc_t beta = vc__op_unary(b, "sigmoid", bb, VC_SAVE_OUT, false);
    vc_t ea = vc__op_unary(b, "exp", vc__op_cast(b, vc_weight(b, 1), VC_DT_F32), VC_SAVE_OUT, false);
    vc_t na = vc__op_fresh(b, "neg", ea, vc_numel_of(b, ea));
    vc_t sp = vc__op_unary(b, "softplus", add2(b, "add", vc__op_cast(b, aa, VC_DT_F32), vc_weight(b, 0), vc_n_sample(L * Hv)),
                           VC_SAVE_IN, false);
    vc_t g = mul2(b, na, sp, vc_n_sample(L * Hv));
    hold(b, beta);
    hold(b, g);
    if (Hv > Hk) { /* query.repeat_interleave(num_v_heads // num_k_heads, dim=2), key likewise */
        query = vc__op_fresh(b, "repeat_interleave", query, vc_n_sample(L * Hv * Dk));
        key = vc__op_fresh(b, "repeat_interleave", key, vc_n_sample(L * Hv * Dk));
    }
    const vc_t q0 = hold(b, query), k0 = hold(b, key); /* the forward's query and key, to its end */
    /* use_qk_l2norm_in_kernel=True: l2norm inside the rule, its results the rule's locals */
    query = l2norm(b, query, L * Hv);
    key = l2norm(b, key, L * Hv);
    vc_t core;
    if (decode) {
        vc_t s = cache[1];
        core = recurrent_rule(b, c, query, key, value, g, beta, &s);
        cache[1] = s; /* cache_params.recurrent_states[layer_idx] = last_recurrent_state */
    } else {
        vc_t s = -1;
        core = chunk_rule(b, c, L, query, key, value, g, beta, cache ? &s : NULL);
        if (cache) cache[1] = s;
    }
    core = vc__op_cast(b, core, dt); /* .to(initial_dtype) (the chunk rule's own, a no-op then) */
    /* core_attn_out.reshape(-1, head_v_dim); z.reshape(-1, head_v_dim) (a copy of z's strided view
     * when the split made none); self.norm(core_attn_out, z); reshape back (views) */
    if (!c->split && !split_copies) z = vc__op_clone(b, z);
    vc_t out = gated_norm(b, core, z, vc_weight(b, 3), L * Hv);
    vc_set_output(b, vc__op_view(b, out, vc_numel_of(b, out), true));
    drop(b, held[1]);
    drop(b, held[2]);
    drop(b, held[3]);
    const vc_t late[] = {act, beta, g, q0, k0};
    for (size_t i = 0; i < sizeof late / sizeof *late; i++) vc_release(b, late[i]);
}

const vc_kind vc_kind_GatedDeltaNet = {
    .name = "GatedDeltaNet",
    .summary = "Qwen3-Next's / Qwen3.5's Gated DeltaNet (torch fallback): [qkvz, ba] or [qkv, z, b, a] projections -> conv1d, gated delta rule, gated norm -> [L, v_heads*head_v_dim]",
    .min_inputs = 2, .max_inputs = 4, .cfg_size = sizeof(gdn_cfg),
    .parse = gdn_parse, .setup = gdn_setup, .emit = gdn_emit,
};

/* vLLM's per-request state of one Gated DeltaNet layer (src/engine/serve.c): vllm-project/vllm @ 2afe1e85,
 * vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator.gated_delta_net_state_shape
 * (tensor parallel size 1, no speculative tokens): the conv state (conv_kernel - 1, 2 key_dim + value_dim)
 * and the temporal state (num_v_heads, head_k_dim, head_v_dim), in elements; *qwen3_5: the layer is
 * Qwen3_5GatedDeltaNet's (its model keeps both states in float32, serve.c). */
void vc__gdn_state(const void *cfg, int64_t *conv, int64_t *ssm, bool *qwen3_5)
{
    const gdn_cfg *c = cfg;
    *conv = (c->kernel - 1) * (2 * c->hk * c->dk + c->hv * c->dv);
    *ssm = c->hv * c->dk * c->dv;
    *qwen3_5 = c->split;
}
