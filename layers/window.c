/*
 * window.c — Swin Transformer's window attention: ShiftedWindowAttention and
 * ShiftedWindowAttentionV2; MaxViT's RelativePositionBias (torchvision/models/swin_transformer.py, read in
 * torchvision 0.14.1 as Debian ships it, /usr/lib/python3/dist-packages/
 * torchvision; the function is unchanged through torchvision 0.20).
 *
 * The module's forward is get_relative_position_bias() and then
 * shifted_window_attention(), a function registered with torch.fx.wrap (an
 * fx trace records it as one call). The kind runs the function's ops in
 * order, on the input [H, W, C] per sample (N = window_size[0]*window_size[1]
 * tokens per window, nW windows, h heads, d = C / h):
 *
 *  - the bias (parameter-sized, no batch): v1 table[index] (aten::index,
 *    IndexBackward0 keeps the int64 index buffer; index_backward makes
 *    zeros_like(table).index_put_(.., accumulate)), .view.permute(2, 0, 1)
 *    .contiguous() (a copy), .unsqueeze(0). v2 first runs cpb_mlp (Linear(2,
 *    512), ReLU(inplace), Linear(512, h, bias=False)) on the coordinate
 *    buffer, gathers, then 16 * sigmoid(bias) (sigmoid keeps its result);
 *  - F.pad(input, (0, 0, 0, pad_r, 0, pad_b)): constant_pad_nd, a new tensor
 *    even when every pad is 0 (aten/src/ATen/native/PadNd.cpp constant_pad_nd:
 *    "all_pads_non_positive ... return c_input.clone()"); its backward
 *    constant_pad_nd(grad, -pad) is a new input-sized tensor;
 *  - torch.roll by -shift when the block shifts (shift_size zeroed where
 *    window >= padded size, as the source does): a new tensor, nothing kept;
 *  - window partition view(B, nh, wh, nw, ww, C).permute(0, 1, 3, 2, 4, 5)
 *    .reshape(B*nW, N, C): a copy unless nw == 1 or wh == 1 (then the
 *    permuted strides merge and reshape is a view);
 *  - qkv = F.linear (keeps its input); .reshape.permute(2, 0, 3, 1, 4) and
 *    qkv[0], qkv[1], qkv[2]: selects (select_backward: a zero tensor of the
 *    whole qkv per select, autograd.md "Select / Slice");
 *  - v1: q * d**-0.5 (mul by a Python number: a new tensor, nothing kept;
 *    TensorIterator lays it out in q's stride order, [B*nW, N, h, d], so it is
 *    not contiguous); v2: F.normalize(q) and F.normalize(k) (norm keeps its
 *    input and result, clamp_min its input, the division both operands);
 *  - q @ k^T: matmul's reshape of both non-contiguous operands to 3-D copies
 *    them and bmm keeps both copies; v2 then clamp(logit_scale).exp() and
 *    attn * logit_scale (mul keeps both);
 *  - attn + relative_position_bias (a broadcast add: the bias's gradient is
 *    reduced); for a shifted block the mask, built each forward without
 *    batch: new_zeros((Hp, Wp)), the window reshape (a copy as above),
 *    unsqueeze(1) - unsqueeze(2) [nW, N, N], masked_fill(!= 0) and
 *    masked_fill(== 0) (each with its bool mask), added to attn;
 *  - softmax (keeps its result), F.dropout(p=attention_dropout): torchvision
 *    passes no `training`, so it drops whenever p > 0, in eval mode too;
 *  - attn @ v (v copied for bmm), .transpose(1, 2).reshape (a copy),
 *    F.linear (proj), F.dropout(p=dropout); the reverse window view/permute/
 *    reshape (a copy unless nw == 1 or wh == 1), the reverse roll, and
 *    x[:, :H, :W, :].contiguous() (a copy only when the input was padded).
 *
 * RelativePositionBias is the bias alone (MaxViT's get_relative_positional_bias,
 * torchvision/models/maxvit.py): the v1 gather above, as a layer without input.
 *
 * Python locals live until the function returns: the input, qkv (q, k, v are
 * its views), the scaled q, the softmax output, the mask, the bias and the
 * logit scale are released at the end, the window copy x when it is rebound.
 */
#include "ops.h"

typedef struct {
    int64_t dim, heads, win[2], shift[2];
    bool qkv_bias, proj_bias, v2;
    double attn_p, p;
    /* set by setup */
    int64_t H, W, Hp, Wp, nwin, tokens, table;
    bool shifted, part_view, padded;
} win_cfg;

static int win_parse(vc_args *a, void *p, bool v2)
{
    win_cfg *c = p;
    c->v2 = v2;
    if (vc_arg_int(a, "dim", VC_REQUIRED, 1, &c->dim) || vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) ||
        vc_arg_ints(a, "window_size", 2, VC_REQUIRED, 1, c->win) || vc_arg_ints(a, "shift_size", 2, VC_REQUIRED, 0, c->shift) ||
        vc_arg_bool(a, "qkv_bias", true, &c->qkv_bias) || vc_arg_bool(a, "proj_bias", true, &c->proj_bias) ||
        vc_arg_float(a, "attention_dropout", 0.0, 0.0, 1.0, &c->attn_p) || vc_arg_float(a, "dropout", 0.0, 0.0, 1.0, &c->p))
        return -1;
    if (c->dim % c->heads)
        return vc_arg_fail(a, "num_heads", "dim (%lld) must be divisible by num_heads (%lld)", (long long)c->dim, (long long)c->heads);
    return 0;
}

static int win_parse_v1(vc_args *a, void *p) { return win_parse(a, p, false); }
static int win_parse_v2(vc_args *a, void *p) { return win_parse(a, p, true); }

/* Parameters in named_parameters() order: v1 relative_position_bias_table
 * (a Parameter of the module, before its submodules), qkv, proj; v2
 * logit_scale, qkv, proj, cpb_mlp.0, cpb_mlp.2. Buffers: v1
 * relative_position_index; v2 relative_coords_table, relative_position_index. */
static int win_params(vc_setup *s, const win_cfg *c)
{
    const int64_t C = c->dim, h = c->heads;
    int64_t nn = 0, three = 0;
    if (vc_mul(s, c->tokens, c->tokens, &nn) || vc_mul(s, 3, C, &three)) return -1;
    const int64_t table[2] = {c->table, h}, ls[3] = {h, 1, 1};
    if (c->v2 ? vc_param_shape(s, "logit_scale", 3, ls, 0) : vc_param_shape(s, "relative_position_bias_table", 2, table, 0))
        return -1;
    const int64_t qw[2] = {three, C}, pw[2] = {C, C};
    if (vc_param_shape(s, "qkv.weight", 2, qw, VC_PARAM_LINEAR) || (c->qkv_bias && vc_param(s, "qkv.bias", three)) ||
        vc_param_shape(s, "proj.weight", 2, pw, VC_PARAM_LINEAR) || (c->proj_bias && vc_param(s, "proj.bias", C)))
        return -1;
    if (c->v2) {
        const int64_t w0[2] = {512, 2}, w2[2] = {h, 512};
        if (vc_param_shape(s, "cpb_mlp.0.weight", 2, w0, VC_PARAM_LINEAR) || vc_param(s, "cpb_mlp.0.bias", 512) ||
            vc_param_shape(s, "cpb_mlp.2.weight", 2, w2, VC_PARAM_LINEAR))
            return -1;
        int64_t coords = 0;
        if (vc_mul(s, c->table, 2, &coords) || vc_buffer(s, "relative_coords_table", coords, VC_DT_FLOAT)) return -1;
    }
    return vc_buffer(s, "relative_position_index", nn, VC_DT_I64);
}

/* N = wh*ww tokens per window; the bias table has (2wh-1)(2ww-1) rows. */
static int win_sizes(vc_setup *s, win_cfg *c)
{
    int64_t a = 0, b = 0;
    return vc_mul(s, c->win[0], c->win[1], &c->tokens) || vc_mul(s, 2, c->win[0], &a) || vc_mul(s, 2, c->win[1], &b) ||
           vc_mul(s, a - 1, b - 1, &c->table);
}

static int win_setup(vc_setup *s, void *p)
{
    win_cfg *c = p;
    if (s->in[0].nd != 3) {
        char sh[96];
        vc_shape_str(&s->in[0], sh, sizeof sh);
        return vc_fail(s, "inputs", "window attention takes [H, W, C] per sample (channels last), got %s", sh);
    }
    if (s->in[0].d[2] != c->dim)
        return vc_fail(s, "dim", "dim %lld does not match the input's %lld channels", (long long)c->dim, (long long)s->in[0].d[2]);
    c->H = s->in[0].d[0];
    c->W = s->in[0].d[1];
    /* pad_r = (ws[1] - W % ws[1]) % ws[1]; pad_b likewise */
    c->Hp = c->H + (c->win[0] - c->H % c->win[0]) % c->win[0];
    c->Wp = c->W + (c->win[1] - c->W % c->win[1]) % c->win[1];
    c->padded = c->Hp != c->H || c->Wp != c->W;
    /* "If window size is larger than feature size, there is no need to shift window" */
    int64_t sh0 = c->win[0] >= c->Hp ? 0 : c->shift[0], sh1 = c->win[1] >= c->Wp ? 0 : c->shift[1];
    c->shifted = sh0 + sh1 > 0;
    int64_t nh = c->Hp / c->win[0], nw = c->Wp / c->win[1], t0 = 0, t1 = 0, att = 0;
    c->part_view = nw == 1 || c->win[0] == 1;
    if (vc_mul(s, nh, nw, &c->nwin) || win_sizes(s, c) || vc_mul(s, c->Hp, c->Wp, &t0) || vc_mul(s, t0, 3, &t1) ||
        vc_mul(s, t1, c->dim, &t1) || vc_mul(s, c->nwin, c->heads, &att) || vc_mul(s, att, c->tokens, &att) ||
        vc_mul(s, att, c->tokens, &att))
        return -1;
    s->out = s->in[0];
    return win_params(s, c);
}

/* A weight-shaped linear on a tensor without batch (cpb_mlp on the
 * coordinate buffer): addmm/mm as vc__op_linear, of fixed size. cpb_mlp's two
 * Linears are nn.Linear modules of the attention module, so a quantized
 * storage format replaces them as any other (transformers
 * integrations/bitsandbytes.py _replace_with_bnb_linear: every nn.Linear
 * whose name is not in modules_to_not_convert; setup flags their weights
 * VC_PARAM_LINEAR): their forward makes the format's temporaries (bnb's
 * dequantized copy) over `rows` rows, a fixed count (no batch). */
static vc_t linear_fixed(vc_build *b, vc_t x, vc_t w, vc_t bias, int64_t rows, int64_t out)
{
    vc_t w0 = w; /* the parameter: its storage format's temporaries */
    x = vc__op_autocast(b, x);
    w = vc__op_autocast_weight(b, w);
    bias = vc__op_autocast_weight(b, bias);
    vc_op *o = vc_op_begin(b, bias >= 0 ? "addmm" : "mm");
    int ix = vc_op_in(o, x);
    int iw = vc_op_in(o, w);
    vc_op_weight_temps(o, w0, vc_n_fixed(rows));
    int ib = bias >= 0 ? vc_op_in(o, bias) : -1;
    vc_t y = vc_op_out(o, vc_n_fixed(rows * out), vc_dt_of(b, x));
    vc_op_save_if(o, x, iw);
    vc_op_save_if(o, w, ix);
    vc_op_grad_view(o, iw);
    if (ib >= 0) vc_op_grad_reduce_rows(o, ib, vc_n_fixed(rows), out);
    vc_op_gemm(o);
    vc_op_end(o);
    return y;
}

/* _get_relative_position_bias: table[index] -> [N*N, h], view, permute,
 * contiguous (a copy), unsqueeze: [1, h, N, N]. */
static vc_t rel_bias(vc_build *b, const win_cfg *c, vc_t table, vc_t index)
{
    vc_numel n = vc_n_fixed(c->tokens * c->tokens * c->heads);
    vc_op *o = vc_op_begin(b, "index");
    vc_op_in(o, table); /* index_backward: zeros_like(table).index_put_: a table-sized gradient */
    vc_op_in_nodiff(o, index);
    vc_t g = vc_op_out(o, n, vc_dt_of(b, table));
    vc_op_save(o, index); /* IndexBackward0: indices (the buffer itself) */
    vc_op_end(o);
    return vc__op_contiguous(b, vc__op_view(b, g, n, c->heads == 1)); /* [h, N, N] of [N, N, h]: contiguous only for h == 1 */
}

/* ShiftedWindowAttentionV2.get_relative_position_bias: cpb_mlp on the
 * coordinate buffer, view(-1, h), the gather above, 16 * sigmoid. */
static vc_t rel_bias_v2(vc_build *b, const win_cfg *c, int wi)
{
    vc_t h1 = linear_fixed(b, vc_buf(b, 0), vc_weight(b, wi), vc_weight(b, wi + 1), c->table, 512);
    h1 = vc__op_unary(b, "relu_", h1, VC_SAVE_OUT, true);
    vc_t t = linear_fixed(b, h1, vc_weight(b, wi + 2), -1, c->table, c->heads);
    vc_t r = vc__op_unary(b, "sigmoid", rel_bias(b, c, t, vc_buf(b, 1)), VC_SAVE_OUT, false);
    return vc__op_fresh(b, "mul", r, vc_numel_of(b, r)); /* 16 * r: a Python number, nothing kept */
}

/* x laid out in another dim order than the logical one (a TensorIterator
 * result of a non-contiguous input, a permute): a non-contiguous view. */
static vc_t strided(vc_build *b, vc_t x) { return vc__op_view(b, x, vc_numel_of(b, x), false); }

/* An operand of a batched matmul: autocast's _to_copy keeps the layout, then
 * matmul's reshape to 3-D copies a non-contiguous tensor (bmm keeps the copy).
 * With one head every operand here ([B*nW, 1, N, d] views of qkv, their
 * transposes) folds into 3-D as a view: bmm takes the strided view. */
static vc_t mm_operand(vc_build *b, const win_cfg *c, vc_t x)
{
    vc_t y = vc__op_autocast(b, x);
    if (y != x && !vc_contiguous(b, x)) y = strided(b, y);
    return c->heads == 1 ? y : vc__op_contiguous(b, y);
}

static vc_t matmul(vc_build *b, const win_cfg *c, vc_t x, vc_t y, int64_t out)
{
    return vc__op_bmm_raw(b, mm_operand(b, c, x), mm_operand(b, c, y), vc_n_sample(out));
}

/* view(..).permute(..).reshape(..) of a window partition or its reverse. */
static vc_t windows(vc_build *b, const win_cfg *c, vc_t x)
{
    return vc__op_contiguous(b, vc__op_view(b, x, vc_numel_of(b, x), c->part_view && vc_contiguous(b, x)));
}

/* The shifted block's attention mask [nW, N, N] (no batch, no gradient). */
static vc_t shift_mask(vc_build *b, const win_cfg *c, vc_dtype dt)
{
    vc_numel hw = vc_n_fixed(c->Hp * c->Wp), m = vc_n_fixed(c->nwin * c->tokens * c->tokens);
    vc_t z = vc__op_nograd(b, "new_zeros", -1, -1, hw, dt); /* filled in place by slice assignments */
    if (!c->part_view) z = vc__op_nograd(b, "clone", z, -1, hw, dt); /* view.permute.reshape */
    vc_t d = vc__op_nograd(b, "sub", z, -1, m, dt);                   /* unsqueeze(1) - unsqueeze(2) */
    vc_t m1 = vc__op_nograd(b, "masked_fill", d, vc__op_nograd(b, "ne", d, -1, m, VC_DT_BOOL), m, dt);
    vc_t m2 = vc__op_nograd(b, "masked_fill", m1, vc__op_nograd(b, "eq", d, -1, m, VC_DT_BOOL), m, dt);
    vc_release(b, d); /* attn_mask is rebound after the statement */
    return m2;
}

/* F.dropout(x, p) as shifted_window_attention calls it, without `training`
 * (default True): it drops in eval mode too. Without grad, native_dropout
 * (aten/src/ATen/native/Dropout.cpp; the fused CUDA kernel) still makes the
 * output and its bool mask, which nothing keeps. */
static vc_t dropout_always(vc_build *b, vc_t x, double p)
{
    if (vc_training(b) || p <= 0.0) return vc__op_dropout(b, x, p);
    vc_op *o = vc_op_begin(b, "native_dropout");
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_ftemp(o, vc_numel_of(b, x), VC_DT_BOOL);
    vc_op_end(o);
    return y;
}

/* q @ k^T: v1 scales q first (q stays a local); v2 normalizes both. */
static vc_t scores(vc_build *b, const win_cfg *c, vc_t q, vc_t k, vc_t *q_local)
{
    const int64_t rows = c->nwin * c->heads * c->tokens, att = rows * c->tokens;
    if (!c->v2) {
        *q_local = vc__op_fresh(b, "mul", q, vc_numel_of(b, q));
        if (c->heads > 1) *q_local = strided(b, *q_local);
        return matmul(b, c, *q_local, k, att);
    }
    vc_t qk[2] = {q, k};
    for (int i = 0; i < 2; i++) { /* F.normalize: x / x.norm(2, -1, keepdim).clamp_min(eps).expand_as(x) */
        vc_op *o = vc_op_begin(b, "norm");
        vc_op_in(o, qk[i]);
        vc_t nrm = vc_op_out(o, vc_n_sample(rows), vc_dt_of(b, qk[i]));
        vc_op_save(o, qk[i]);
        vc_op_save(o, nrm);
        vc_op_end(o);
        vc_t den = vc__op_unary(b, "clamp_min", nrm, VC_SAVE_IN, false);
        /* div keeps both operands and makes an output-sized gradient for the
         * broadcast denominator: the memory of vc__op_mul */
        qk[i] = vc__op_mul(b, qk[i], den, vc_numel_of(b, qk[i]), false);
        if (c->heads > 1) qk[i] = strided(b, qk[i]);
    }
    vc_t a = matmul(b, c, qk[0], qk[1], att);
    vc_release(b, qk[0]); /* the normalized q and k are temporaries of the expression: */
    vc_release(b, qk[1]); /* alive until the matmul returns */
    return a;
}

static void win_emit(vc_build *b, const void *p)
{
    const win_cfg *c = p;
    const int64_t L = c->Hp * c->Wp, C = c->dim, att = c->nwin * c->heads * c->tokens * c->tokens;
    vc_t in = vc_input(b, 0);
    int wi = 1;
    vc_t qw = vc_weight(b, wi++), qb = c->qkv_bias ? vc_weight(b, wi++) : -1;
    vc_t pw = vc_weight(b, wi++), pb = c->proj_bias ? vc_weight(b, wi++) : -1;
    vc_t bias = c->v2 ? rel_bias_v2(b, c, wi) : rel_bias(b, c, vc_weight(b, 0), vc_buf(b, 0));
    vc_numel full = vc_n_sample(L * C);
    vc_t x = vc__op_fresh(b, "constant_pad_nd", in, full);
    if (c->shifted) x = vc__op_fresh(b, "roll", x, full);
    vc_t xw = windows(b, c, x);
    if (c->v2 && qb >= 0) qb = vc__op_clone(b, qb); /* qkv_bias.clone(), its k third zero_()ed in place */
    vc_t qkv = vc__op_linear(b, xw, qw, qb, L, C, 3 * C);
    vc_t qp = vc__op_view(b, qkv, vc_numel_of(b, qkv), false); /* reshape + permute(2, 0, 3, 1, 4) */
    vc_t q = vc__op_select(b, qp, full, false), k = vc__op_select(b, qp, full, false), v = vc__op_select(b, qp, full, false);
    vc_t q_local = -1, ls = -1, mask = -1;
    vc_t a = scores(b, c, q, k, &q_local);
    if (c->v2) { /* torch.clamp(logit_scale, max=log(100)).exp(); attn * logit_scale */
        ls = vc__op_unary(b, "exp", vc__op_unary(b, "clamp", vc_weight(b, 0), VC_SAVE_IN, false), VC_SAVE_OUT, false);
        a = vc__op_mul(b, a, ls, vc_n_sample(att), false);
    }
    a = vc__op_add(b, a, bias, vc_n_sample(att), false);
    if (c->shifted) {
        mask = shift_mask(b, c, vc_dt_of(b, xw));
        a = vc__op_add(b, a, mask, vc_n_sample(att), false);
    }
    a = dropout_always(b, vc__op_softmax(b, a, false), c->attn_p);
    vc_t ctx = matmul(b, c, a, v, L * C); /* .transpose(1, 2).reshape: a copy unless one head */
    if (c->heads > 1) ctx = vc__op_contiguous(b, strided(b, ctx));
    vc_release(b, xw);                                                 /* x is rebound here */
    vc_t y = dropout_always(b, vc__op_linear(b, ctx, pw, pb, L, C, C), c->p);
    y = windows(b, c, y);
    if (c->shifted) y = vc__op_fresh(b, "roll", y, full);
    /* x[:, :H, :W, :]: applySlice (aten/src/ATen/TensorIndexing.h) returns the tensor itself
     * only for start 0, stop == size, step 1; `:` unpacks to stop PY_SSIZE_T_MAX, so dims 0 and
     * 3 are always sliced (views whose backward, slice_backward, is a new full-size tensor),
     * :H and :W only when padded */
    y = vc__op_select(b, y, full, vc_contiguous(b, y));
    if (c->Hp != c->H) y = vc__op_select(b, y, vc_n_sample(c->H * c->Wp * C), false);
    if (c->Wp != c->W) y = vc__op_select(b, y, vc_n_sample(c->H * c->W * C), false);
    y = vc__op_select(b, y, vc_numel_of(b, y), vc_contiguous(b, y));
    if (c->padded) y = vc__op_contiguous(b, y);
    vc_release(b, in);
    vc_release(b, qkv);
    vc_release(b, q_local);
    vc_release(b, a);
    vc_release(b, mask);
    vc_release(b, bias);
    vc_release(b, ls);
    vc_release(b, qb);
    vc_set_output(b, y);
}

const vc_kind vc_kind_ShiftedWindowAttention = {
    .ops = 47,
    .name = "ShiftedWindowAttention",
    .summary = "torchvision Swin window attention over [H, W, C]: pad, roll, windows, qkv, bias, mask, softmax, proj",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(win_cfg),
    .parse = win_parse_v1, .setup = win_setup, .emit = win_emit,
};

const vc_kind vc_kind_ShiftedWindowAttentionV2 = {
    .ops = 63,
    .name = "ShiftedWindowAttentionV2",
    .summary = "torchvision Swin V2 window attention: cosine attention, logit scale, cpb_mlp position bias",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(win_cfg),
    .parse = win_parse_v2, .setup = win_setup, .emit = win_emit,
};

/* ---- RelativePositionBias: get_relative_positional_bias of torchvision's MaxViT
 * (torchvision/models/maxvit.py RelativePositionalMultiHeadAttention; the same ops as Swin's
 * _get_relative_position_bias above): table[index].view(N, N, -1).permute(2, 0, 1)
 * .contiguous().unsqueeze(0), a [1, h, N, N] tensor without batch (its sizes are fixed: the
 * add that uses it broadcasts it, and reduces its gradient to that size). No input. */

static int rpb_parse(vc_args *a, void *p)
{
    win_cfg *c = p;
    if (vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) || vc_arg_int(a, "window_size", VC_REQUIRED, 1, &c->win[0]))
        return -1;
    c->win[1] = c->win[0]; /* MaxViT's windows are square: size = sqrt(max_seq_len) */
    return 0;
}

static int rpb_setup(vc_setup *s, void *p)
{
    win_cfg *c = p;
    int64_t nn = 0, hnn = 0;
    if (win_sizes(s, c) || vc_mul(s, c->tokens, c->tokens, &nn) || vc_mul(s, nn, c->heads, &hnn)) return -1;
    const int64_t out[4] = {1, c->heads, c->tokens, c->tokens}, table[2] = {c->table, c->heads};
    s->out = vc_shape_make(4, out);
    if (vc_param_shape(s, "relative_position_bias_table", 2, table, 0)) return -1;
    return vc_buffer(s, "relative_position_index", nn, VC_DT_I64);
}

static void rpb_emit(vc_build *b, const void *p) { vc_set_output(b, rel_bias(b, p, vc_weight(b, 0), vc_buf(b, 0))); }

const vc_kind vc_kind_RelativePositionBias = {
    .ops = 3,
    .name = "RelativePositionBias",
    .summary = "a [(2w-1)^2, heads] table gathered to [1, heads, N, N] (MaxViT's relative position bias); no batch",
    .min_inputs = 0, .max_inputs = 0, .flags = VC_KIND_NO_INPUT, .cfg_size = sizeof(win_cfg),
    .parse = rpb_parse, .setup = rpb_setup, .emit = rpb_emit,
};
