/*
 * rnn.c — RNN, LSTM, GRU (torch/nn/modules/rnn.py; the cuDNN path of
 * aten/src/ATen/native/cudnn/RNN.cpp; docs/autograd.md §5).
 *
 * Sequence modules are always batch_first (docs/contract.md §2): the per-sample input is
 * [L, input_size], the output [L, D*H_out] (D = 2 if bidirectional, H_out =
 * proj_size if > 0 else hidden_size). Only the first output (the sequence)
 * is the layer's output; h_n (and c_n) are dropped by the caller.
 *
 * What one forward call does on CUDA (training, hx=None):
 *   nn.LSTM.forward: h_zeros = zeros(L*D, N, H_out), c_zeros = zeros(L*D, N, H)
 *     (RNN/GRU: one hx of H), in the input's dtype.
 *   _VF.lstm -> _cudnn_impl -> _cudnn_rnn(input, weights, weight_buf, hx, cx):
 *     x = input.transpose(0, 1).contiguous()  copy of the input unless it is
 *                                             already T-major (transient);
 *     output [T, N, D*H_out], hy [L*D, N, H_out], cy [L*D, N, H] (LSTM; else
 *     empty({0}), no block); cuDNN workspace (transient, size chosen by cuDNN:
 *     not modelled); reserve (kept for backward; training only); output is
 *     transposed back in place (so the layer's output is NOT contiguous:
 *     batch-major shape over T-major memory).
 *   Saved: input, weights, weight_buf (aliases), hx, cx, output, reserve,
 *   dropout_state.
 * Backward (_cudnn_rnn_backward): grad_hy = zeros_like(hx) and grad_cy =
 *   zeros_like(cx) (h_n/c_n were dropped, so their grads are undefined);
 *   _cudnn_rnn_backward_input — always run ("it mutates reserve"), so dx is
 *   allocated even when the input needs no grad — x = input.contiguous()
 *   copy, dy = grad_output.contiguous() copy, dx, dhx, dcx, workspace; then
 *   _cudnn_rnn_backward_weight: x copy again, dw = zeros(flat weight size),
 *   workspace; the parameter grads are views into dw.
 *
 * How it is modelled here (two graph nodes for one autograd node, so that
 * the input part runs before dw exists, as in PyTorch):
 *   node "_cudnn_rnn" (emitted first, so its backward runs last): the weight
 *     part. Forward allocations and every save live here; its backward
 *     allocates the weight grads and the weight part's temporaries, then
 *     releases the saves.
 *   node "_cudnn_rnn_backward_input" (emitted second, runs first in
 *     backward): a view of the output whose backward allocates dx (the
 *     input's grad) and the input part's temporaries and passes grad_output
 *     on to the first node.
 *   The reserve (and the dropout state) are outputs of the first node that
 *   only it saves, so without a grad_fn they die after the call.
 *   A batch-size-1 output is contiguous in PyTorch; here it is always
 *   non-contiguous.
 *
 * Deviations and estimates (all marked ESTIMATE / DEVIATION below):
 *  - reserve size: cuDNN's cudnnGetRNNTempSpaceSizes, not derivable from
 *    PyTorch's source; docs/autograd.md §5's unverified estimate
 *    num_layers*D*T*N*(G*H + H)*isz is used.
 *  - cuDNN workspaces (forward and both backward calls) are left out: their
 *    size is chosen inside cuDNN.
 *  - On CUDA all weights are views into ONE flat buffer (flatten_parameters),
 *    so their 512-byte rounding happens once; the engine allocates one
 *    storage per parameter. Likewise dw is one flat zeros whose views are the
 *    grads (stolen by AccumulateGrad, so dw lives as long as any grad): here
 *    each parameter gets its own VC_GRAD_NEW grad. The difference is at most
 *    511 bytes per parameter tensor. cuDNN's flat buffer also has (zero) bias
 *    slots when bias=False (try_get_weight_buf: two pointers per matrix);
 *    they are in the autocast flat copy below but not in the weights/grads.
 *  - Backward temporaries that are alive together are one btemp of their
 *    summed size (the engine runs btemps one after another), so they are
 *    rounded to 512 bytes once, not each.
 *  - Whether the input needs the transpose copy is decided by contiguity: a
 *    non-contiguous input is taken to be T-major (the output of a previous
 *    RNN layer), which needs no copy; a Permute/Transpose output would.
 *    grad_output is assumed batch-major contiguous (what a Linear, Mean or
 *    loss backward produces), so dy is a copy (unless T == 1); the dx of a
 *    following RNN layer is T-major and would need none.
 *  - The cuDNN dropout state (dropout > 0, training) is a process-lifetime
 *    buffer shared by all RNN modules ("Each state is slightly over 2MB",
 *    RNN.cpp; cudnnDropoutGetStatesSize): modelled as 2 MiB kept by each such
 *    module from its forward to its backward (the engine has no persistent
 *    non-parameter allocation), so two RNN modules with dropout count it
 *    twice.
 *  - bf16 models: cudnn_is_acceptable() accepted only fp64/fp32/fp16 in
 *    earlier 2.x releases (bf16 ran the native per-timestep cells); recent
 *    code accepts any dtype. The cuDNN path is modelled for every dtype.
 *  - input_size must be >= 1 (PyTorch constructs input_size=0, but an empty
 *    input never takes the cuDNN path).
 *
 * Autocast (AutocastRNN.cpp, _cudnn_rnn_cast_reflatten): every call,
 *   copy_weights_to_flat_buf_views casts the fp32 weights into a new fp16
 *   flat buffer (autograd-visible: zeros + copy_ into views), and input, hx,
 *   cx are cast with cached_cast(kHalf) (activations: plain copies). The dtype
 *   is hard-coded fp16, also under amp-bf16. The flat copy is saved by
 *   _cudnn_rnn (as weight list and weight_buf); its grad dw is fp16 of the
 *   flat size, and the copy's backward (as_strided/CopySlices) makes one more
 *   flat-size fp16 tensor (ESTIMATE: derived from the autograd design, the
 *   small per-slice clones are left out) and the fp32 grads of the weights.
 */
#include <stdio.h>

#include "ops.h"

enum { M_RNN_TANH, M_RNN_RELU, M_LSTM, M_GRU };

typedef struct {
    int mode;
    int64_t in, hid, layers, proj;
    bool bias, bidir;
    double dropout;
    /* set by setup (per-sample element counts) */
    int64_t T, D, G, Ho;
    int64_t nparams;  /* parameter tensors */
    int64_t flat;     /* cuDNN flat weight buffer elements (bias slots included) */
    int64_t x_ps;     /* input  T*E */
    int64_t y_ps;     /* output T*D*H_out */
    int64_t h_ps;     /* hx     L*D*H_out */
    int64_t c_ps;     /* cx     L*D*H (LSTM), else 0 */
    int64_t res_ps;   /* reserve ESTIMATE L*D*T*(G*H + H) */
} rnn_cfg;

/* 2 MiB: "Each state is slightly over 2MB" (RNN.cpp, dropout_state_cache);
 * ESTIMATE: the exact size is cudnnDropoutGetStatesSize, GPU-dependent. */
#define RNN_DROPOUT_STATE_BYTES (INT64_C(2) << 20)

static const char *kind_name(int mode)
{
    return mode == M_LSTM ? "LSTM" : mode == M_GRU ? "GRU" : "RNN";
}

/* ---- parse (RNNBase.__init__ and the subclasses' __init__) */

static int rnn_parse_common(vc_args *a, rnn_cfg *c)
{
    if (vc_arg_int(a, "input_size", VC_REQUIRED, 1, &c->in) || vc_arg_int(a, "hidden_size", VC_REQUIRED, 1, &c->hid) ||
        vc_arg_int(a, "num_layers", 1, 1, &c->layers) || vc_arg_bool(a, "bias", true, &c->bias) ||
        vc_arg_float(a, "dropout", 0.0, 0.0, 1.0, &c->dropout) || vc_arg_bool(a, "bidirectional", false, &c->bidir))
        return -1;
    /* PyTorch's default is batch_first=False; vramcalc's sequence modules
     * are always batch_first (docs/contract.md §2), so only true (or absent) is accepted. */
    bool bf = true;
    if (vc_arg_bool(a, "batch_first", true, &bf)) return -1;
    if (!bf)
        return vc_arg_fail(a, "batch_first",
                           "must be true (or left out): vramcalc's sequence modules are always batch_first, "
                           "with a per-sample input of [L, input_size]");
    /* dropout > 0 with num_layers == 1 only warns in PyTorch: accepted. */
    return 0;
}

static int rnn_parse(vc_args *a, void *p)
{
    rnn_cfg *c = p;
    static const char *const nonlin[] = {"tanh", "relu", NULL};
    int nl = 0;
    if (vc_arg_type(a, "proj_size"))
        return vc_arg_fail(a, "proj_size", "proj_size argument is only supported for LSTM, not RNN or GRU");
    if (rnn_parse_common(a, c) || vc_arg_enum(a, "nonlinearity", nonlin, 0, &nl)) return -1;
    c->mode = nl == 0 ? M_RNN_TANH : M_RNN_RELU;
    c->proj = 0;
    return 0;
}

static int gru_parse(vc_args *a, void *p)
{
    rnn_cfg *c = p;
    if (vc_arg_type(a, "proj_size"))
        return vc_arg_fail(a, "proj_size", "proj_size argument is only supported for LSTM, not RNN or GRU");
    if (rnn_parse_common(a, c)) return -1;
    c->mode = M_GRU;
    c->proj = 0;
    return 0;
}

static int lstm_parse(vc_args *a, void *p)
{
    rnn_cfg *c = p;
    if (rnn_parse_common(a, c) || vc_arg_int(a, "proj_size", 0, 0, &c->proj)) return -1;
    if (c->proj >= c->hid)
        return vc_arg_fail(a, "proj_size", "proj_size has to be smaller than hidden_size (proj_size %lld, hidden_size %lld)",
                           (long long)c->proj, (long long)c->hid);
    c->mode = M_LSTM;
    return 0;
}

/* ---- setup */

static int rnn_setup(vc_setup *s, void *p)
{
    rnn_cfg *c = p;
    const vc_shape *x = &s->in[0];
    const char *kn = kind_name(c->mode);
    if (x->nd != 2)
        return vc_fail(s, NULL,
                       "%s takes a [L, input_size] input per sample (batch_first: [N, L, input_size] with the batch); "
                       "got a %d-dimensional input",
                       kn, x->nd);
    if (x->d[1] != c->in)
        return vc_fail(s, "input_size", "input_size is %lld but the input has %lld features (last dimension)",
                       (long long)c->in, (long long)x->d[1]);
    c->T = x->d[0];
    c->D = c->bidir ? 2 : 1;
    c->G = c->mode == M_LSTM ? 4 : c->mode == M_GRU ? 3 : 1;
    c->Ho = c->proj > 0 ? c->proj : c->hid;
    c->flat = 0;
    c->nparams = 0;

    int64_t gh, gh_ho, hr, dho;
    if (vc_mul(s, c->G, c->hid, &gh) || vc_mul(s, gh, c->Ho, &gh_ho) || vc_mul(s, c->proj, c->hid, &hr) ||
        vc_mul(s, c->D, c->Ho, &dho))
        return -1;
    /* named_parameters(): for each layer, for each direction (suffix
     * _reverse): weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k},
     * weight_hr_l{k} (LSTM with proj_size). */
    for (int64_t k = 0; k < c->layers; k++) {
        int64_t in_k = k == 0 ? c->in : dho, w_ih;
        if (vc_mul(s, gh, in_k, &w_ih)) return -1;
        for (int64_t d = 0; d < c->D; d++) {
            const char *sfx = d ? "_reverse" : "";
            char name[64];
            snprintf(name, sizeof name, "weight_ih_l%lld%s", (long long)k, sfx);
            if (vc_param2(s, name, gh, in_k)) return -1;
            snprintf(name, sizeof name, "weight_hh_l%lld%s", (long long)k, sfx);
            if (vc_param2(s, name, gh, c->Ho)) return -1;
            if (c->bias) {
                snprintf(name, sizeof name, "bias_ih_l%lld%s", (long long)k, sfx);
                if (vc_param(s, name, gh)) return -1;
                snprintf(name, sizeof name, "bias_hh_l%lld%s", (long long)k, sfx);
                if (vc_param(s, name, gh)) return -1;
            }
            if (c->proj > 0) {
                snprintf(name, sizeof name, "weight_hr_l%lld%s", (long long)k, sfx);
                if (vc_param2(s, name, c->proj, c->hid)) return -1;
            }
            c->nparams += 2 + (c->bias ? 2 : 0) + (c->proj > 0 ? 1 : 0);
            /* the flat buffer always has both bias vectors (cuDNN double bias) */
            if (vc_add(s, c->flat, w_ih, &c->flat) || vc_add(s, c->flat, gh_ho, &c->flat) ||
                vc_add(s, c->flat, gh, &c->flat) || vc_add(s, c->flat, gh, &c->flat) || vc_add(s, c->flat, hr, &c->flat))
                return -1;
        }
    }

    int64_t ld, gh_h, t_gh;
    if (vc_mul(s, c->T, c->in, &c->x_ps) || vc_mul(s, c->T, dho, &c->y_ps) || vc_mul(s, c->layers, c->D, &ld) ||
        vc_mul(s, ld, c->Ho, &c->h_ps) || vc_mul(s, ld, c->mode == M_LSTM ? c->hid : 0, &c->c_ps) ||
        vc_add(s, gh, c->hid, &gh_h) || vc_mul(s, c->T, gh_h, &t_gh) || vc_mul(s, ld, t_gh, &c->res_ps))
        return -1;
    /* the largest backward temporary sum (see rnn_emit) must not overflow */
    int64_t big = 0;
    if (vc_add(s, c->h_ps, c->c_ps, &big) || vc_add(s, big, big, &big) || vc_add(s, big, c->x_ps, &big) ||
        vc_add(s, big, c->x_ps, &big) || vc_add(s, big, c->y_ps, &big))
        return -1;

    s->out.nd = 2;
    s->out.d[0] = c->T;
    s->out.d[1] = dho;
    return 0;
}

/* ---- emit */

/* Autocast: copy_weights_to_flat_buf_views -> one fp16 flat buffer, cast
 * from every fp32 weight, autograd-visible. */
static vc_t flat_cast(vc_build *b, const rnn_cfg *c)
{
    vc_op *o = vc_op_begin(b, "copy_weights_to_flat_buf_views");
    for (int64_t i = 0; i < c->nparams; i++) vc_op_in(o, vc_weight(b, (int)i)); /* fp32 grads: CopyBackwards */
    vc_t flat = vc_op_out(o, vc_n_fixed(c->flat), VC_DT_F16);
    /* ESTIMATE: the as_strided/CopySlices backward holds one more flat-size
     * fp16 tensor next to the incoming dw (the fp16 flat grad). */
    vc_op_btemp(o, vc_n_fixed(c->flat), VC_DT_F16);
    vc_op_end(o);
    return flat;
}

static void rnn_emit(vc_build *b, const void *p)
{
    const rnn_cfg *c = p;
    const bool lstm = c->mode == M_LSTM;
    const bool train = vc_training(b);
    const bool amp = vc_autocast_dt(b) != VC_DT_F32;
    vc_t x = vc_input(b, 0);
    const vc_t x_orig = x;
    /* DEVIATION (guess): a non-contiguous input is taken to be T-major. With
     * T == 1 the transposed tensor is contiguous: no copies (x nor dy). */
    const bool copy_x = vc_contiguous(b, x) && c->T > 1;
    const bool copy_dy = c->T > 1;

    /* nn.RNNBase.forward: zero initial states in the input's dtype */
    vc_t h0 = vc__op_new(b, "zeros", vc_n_sample(c->h_ps), vc_dt_of(b, x));
    vc_t c0 = lstm ? vc__op_new(b, "zeros", vc_n_sample(c->c_ps), vc_dt_of(b, x)) : -1;
    const vc_t h0_orig = h0, c0_orig = c0;

    vc_t flat = -1;
    bool w_grad = false;
    if (amp) {
        flat = flat_cast(b, c);
        w_grad = vc_requires_grad(b, flat);
        x = vc__op_cast(b, x, VC_DT_F16); /* cached_cast(kHalf, ...): fp16 even under amp-bf16 */
        h0 = vc__op_cast(b, h0, VC_DT_F16);
        c0 = vc__op_cast(b, c0, VC_DT_F16);
    } else {
        for (int64_t i = 0; i < c->nparams; i++) w_grad |= vc_requires_grad(b, vc_weight(b, (int)i));
    }
    const vc_dtype dt = vc_dt_of(b, x);
    const bool x_grad = vc_requires_grad(b, x);

    /* Backward temporaries (per-sample elements, in dt), each set alive
     * together inside _cudnn_rnn_backward:
     *   both parts: grad_hy, grad_cy (zeros_like hx/cx), dhx, dcx, the x copy,
     *               and dx when the input needs no grad (computed anyway);
     *   input part: + the dy copy (grad_output made T-major). */
    int64_t both = 2 * (c->h_ps + c->c_ps) + (copy_x ? c->x_ps : 0) + (x_grad ? 0 : c->x_ps);
    int64_t in_part = both + (copy_dy ? c->y_ps : 0);

    /* _cudnn_rnn: the weight part (see the header) */
    vc_op *o = vc_op_begin(b, "_cudnn_rnn");
    int ix = vc_op_in(o, x);
    vc_op_grad(o, ix, VC_GRAD_NONE); /* dx comes from the node below */
    if (amp)
        vc_op_in(o, flat); /* its grad: dw, one fp16 flat buffer */
    else
        for (int64_t i = 0; i < c->nparams; i++) vc_op_in(o, vc_weight(b, (int)i)); /* grads: views into dw */
    vc_op_in_nodiff(o, h0);
    if (c0 >= 0) vc_op_in_nodiff(o, c0);
    if (amp) { /* the module's fp32 input and zero states stay referenced through the call */
        if (x_orig != x) vc_op_in_nodiff(o, x_orig);
        if (h0_orig != h0) vc_op_in_nodiff(o, h0_orig);
        if (c0_orig != c0) vc_op_in_nodiff(o, c0_orig);
    }
    vc_t y0 = vc_op_out(o, vc_n_sample(c->y_ps), dt);
    vc_op_out(o, vc_n_sample(c->h_ps), dt);         /* hy, dropped by the caller */
    if (lstm) vc_op_out(o, vc_n_sample(c->c_ps), dt); /* cy, dropped by the caller */
    /* result3, the reserve (training only; else empty({0})), and the dropout
     * state: outputs that only this node's backward keeps (when no grad is
     * needed they die after the call, as in PyTorch). */
    vc_t reserve = -1, dstate = -1;
    if (train) {
        /* ESTIMATE num_layers*D*T*N*(G*H + H)*isz (docs/autograd.md §5, unverified) */
        reserve = vc_op_out(o, vc_n_sample(c->res_ps), dt);
        /* ESTIMATE 2 MiB, see the header */
        if (c->dropout > 0.0) dstate = vc_op_out(o, vc_n_fixed(RNN_DROPOUT_STATE_BYTES), VC_DT_U8);
    }
    if (copy_x) vc_op_ftemp(o, vc_n_sample(c->x_ps), dt); /* x = input.transpose(0, 1).contiguous() */
    vc_op_save(o, x);
    vc_op_save(o, h0);
    vc_op_save(o, c0);
    vc_op_save(o, y0);
    vc_op_save(o, flat); /* autocast: the fp16 weight list and weight_buf */
    vc_op_save(o, reserve);
    vc_op_save(o, dstate);
    if (w_grad) vc_op_btemp(o, vc_n_sample(both), dt);
    vc_op_end(o);

    /* the input part: output.transpose_(0, 1) is a view of the T-major output */
    o = vc_op_begin(b, "_cudnn_rnn_backward_input");
    int iy = vc_op_in(o, y0);
    vc_op_grad(o, iy, VC_GRAD_PASS);
    vc_op_in(o, x); /* dx = empty(input.sizes()) */
    vc_t y = vc_op_out_view(o, iy, vc_n_sample(c->y_ps), false);
    /* An alias the first node keeps anyway. It makes this node the region's
     * last saving op, so a checkpoint recompute also runs it and releases the
     * recomputed output (engine.c recompute() stops at the last saving op). */
    vc_op_save(o, y0);
    vc_op_btemp(o, vc_n_sample(in_part), dt);
    vc_op_end(o);
    vc_set_output(b, y);
}

#define RNN_KIND(NAME, PARSE, SUMMARY)                                                                  \
    const vc_kind vc_kind_##NAME = {                                                                   \
        .name = #NAME, .summary = SUMMARY, .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(rnn_cfg), \
        .parse = PARSE, .setup = rnn_setup, .emit = rnn_emit,                                           \
        .ops = 8,                                                                                       \
    };

RNN_KIND(RNN, rnn_parse, "Elman RNN (tanh/relu), cuDNN; batch_first [L, input_size] -> [L, D*hidden_size]")
RNN_KIND(LSTM, lstm_parse, "LSTM (proj_size), cuDNN; batch_first [L, input_size] -> [L, D*H_out]")
RNN_KIND(GRU, gru_parse, "GRU, cuDNN; batch_first [L, input_size] -> [L, D*hidden_size]")
