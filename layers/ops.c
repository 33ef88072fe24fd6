/*
 * ops.c — aten ops as autograd nodes (see ops.h).
 */
#include "ops.h"

static bool same_numel(vc_numel a, vc_numel b) { return vc_n_same(a, b); }

vc_t vc__op_unary(vc_build *b, const char *name, vc_t x, int save, bool inplace)
{
    vc_op *o = vc_op_begin(b, name);
    int i = vc_op_in(o, x);
    vc_t y = inplace ? vc_op_out_view(o, i, vc_numel_of(b, x), vc_contiguous(b, x))
                     : vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    if (save == VC_SAVE_IN) vc_op_save(o, x);
    if (save == VC_SAVE_OUT) vc_op_save(o, y);
    vc_op_end(o);
    return y;
}

vc_t vc__op_view(vc_build *b, vc_t x, vc_numel n, bool contiguous)
{
    vc_op *o = vc_op_begin(b, "view");
    int i = vc_op_in(o, x);
    vc_t y = vc_op_out_view(o, i, n, contiguous);
    vc_op_grad(o, i, VC_GRAD_PASS);
    vc_op_end(o);
    return y;
}

vc_t vc__op_contiguous(vc_build *b, vc_t x) { return vc_contiguous(b, x) ? x : vc__op_clone(b, x); }

vc_t vc__op_clone(vc_build *b, vc_t x)
{
    vc_op *o = vc_op_begin(b, "clone");
    int i = vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_grad(o, i, VC_GRAD_PASS);
    vc_op_end(o);
    return y;
}

vc_t vc__op_select(vc_build *b, vc_t x, vc_numel n, bool contiguous)
{
    /* select_backward / slice_backward: zeros(input sizes) + copy of grad */
    vc_op *o = vc_op_begin(b, "select");
    int i = vc_op_in(o, x);
    vc_t y = vc_op_out_view(o, i, n, contiguous);
    vc_op_end(o);
    return y;
}

vc_t vc__op_copy_into(vc_build *b, vc_t dst, vc_t src)
{
    vc_op *o = vc_op_begin(b, "copy_");
    int id = vc_op_in(o, dst);
    vc_op_in(o, src);
    vc_t r = vc_op_out_view(o, id, vc_numel_of(b, dst), vc_contiguous(b, dst));
    vc_op_end(o);
    return r;
}

vc_t vc__op_cast(vc_build *b, vc_t x, vc_dtype dt)
{
    if (x < 0 || vc_dt_of(b, x) == dt) return x;
    vc_op *o = vc_op_begin(b, "_to_copy");
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), dt);
    vc_op_end(o);
    return y;
}

vc_t vc__op_autocast(vc_build *b, vc_t x)
{
    vc_dtype lp = vc_autocast_dt(b);
    if (lp == VC_DT_F32 || x < 0 || vc_dt_of(b, x) != VC_DT_F32) return x;
    return vc__op_cast(b, x, lp);
}

vc_t vc__op_autocast_f32(vc_build *b, vc_t x)
{
    if (vc_autocast_dt(b) == VC_DT_F32 || x < 0) return x;
    vc_dtype dt = vc_dt_of(b, x);
    return (dt == VC_DT_F16 || dt == VC_DT_BF16) ? vc__op_cast(b, x, VC_DT_F32) : x;
}

vc_t vc__op_autocast_weight(vc_build *b, vc_t w)
{
    vc_dtype lp = vc_autocast_dt(b);
    if (lp == VC_DT_F32 || w < 0 || vc_dt_of(b, w) != VC_DT_F32) return w;
    /* cached_cast: trainable fp32 leaves are cast once per autocast region */
    int32_t *slot = vc_requires_grad(b, w) ? vc__amp_cache(b, w) : NULL;
    if (slot && *slot >= 0) return *slot;
    vc_t c = vc__op_cast(b, w, lp);
    if (slot) {
        *slot = c;
        vc_hold(b, c);
    }
    return c;
}

vc_t vc__op_linear(vc_build *b, vc_t x, vc_t w, vc_t bias, int64_t rows, int64_t in, int64_t out)
{
    vc_t w0 = w; /* the parameter: its storage format's temporaries (vc_op_weight_temps) */
    x = vc__op_autocast(b, x);
    w = vc__op_autocast_weight(b, w);
    bias = vc__op_autocast_weight(b, bias);
    vc_numel yn = vc_n_scale(vc_n_sample(rows), out);
    bool fold_copy = !vc_contiguous(b, x);
    if (fold_copy) x = vc__op_contiguous(b, x); /* matmul: t1.reshape() copies, mm saves the copy */
    (void)in;
    vc_op *o = vc_op_begin(b, bias >= 0 && !fold_copy ? "addmm" : "mm");
    int ix = vc_op_in(o, x);
    int iw = vc_op_in(o, w);
    vc_op_weight_temps(o, w0, vc_n_sample(rows));
    int ib = -1;
    if (bias >= 0 && !fold_copy) ib = vc_op_in(o, bias);
    vc_t y = vc_op_out(o, yn, vc_dt_of(b, x));
    vc_op_save_if(o, x, iw);
    vc_op_save_if(o, w, ix);
    /* weight.t() is column-major, so mm_mat2_backward returns
     * grad.t().mm(x).t() and TBackward0 .t() again: a view of the mm result */
    vc_op_grad_view(o, iw);
    /* AddmmBackward0 returns the incoming gradient for the 1-D bias
     * (maybe_multiply(grad, beta)); the engine sum_to's it to [out] */
    if (ib >= 0 && !same_numel(vc_numel_of(b, bias), yn)) vc_op_grad_reduce_rows(o, ib, vc_n_sample(rows), out);
    if (ib >= 0) vc_op_gemm_lt(o); /* addmm with the 1-D bias: the cuBLASLt epilogue */
    else vc_op_gemm(o);
    /* --loss sum: prepare_matrix_for_cublas's contiguous copy of the stride-0 gradient in each backward mm */
    if (vc_head_grad_expanded(b, w0)) vc_op_btemp(o, yn, vc_dt_of(b, y));
    vc_op_end(o);
    if (bias >= 0 && fold_copy) { /* output.add_(bias): grad of bias via sum_to */
        o = vc_op_begin(b, "add_");
        int iy = vc_op_in(o, y);
        int ibb = vc_op_in(o, bias);
        y = vc_op_out_view(o, iy, yn, true);
        vc_op_grad(o, iy, VC_GRAD_PASS);
        if (!same_numel(vc_numel_of(b, bias), yn)) vc_op_grad_reduce_rows(o, ibb, vc_n_sample(rows), out);
        vc_op_end(o);
    }
    return y;
}

/* MEG megatron/core/tensor_parallel/layers.py
 * LinearWithGradAccumulationAndAsyncCommunication.forward (sequence_parallel):
 * ctx.save_for_backward(input, weight) saves the shard; total_input is the
 * all-gather into get_global_memory_buffer().get_tensor(dim_size, "mpu"); the
 * matmul runs on it. backward: the same buffer re-gathered, grad_input =
 * grad_output.matmul(weight) full-size, then sub_grad_input = torch.empty(shard)
 * reduce-scattered from it. The global buffer is kept by Megatron between uses;
 * here it is a temporary of each use (docs/parallel.md says the difference). */
vc_t vc__op_linear_gather(vc_build *b, vc_t x, vc_t w, vc_t bias, int64_t rows, int64_t in, int64_t out, int64_t t)
{
    vc_t w0 = w;
    x = vc__op_autocast(b, x);
    w = vc__op_autocast_weight(b, w);
    bias = vc__op_autocast_weight(b, bias);
    x = vc__op_contiguous(b, x);
    vc_numel full = vc_n_scale(vc_n_sample(rows), in * t);
    vc_op *o = vc_op_begin(b, bias >= 0 ? "addmm" : "mm");
    int ix = vc_op_in(o, x);
    int iw = vc_op_in(o, w);
    vc_op_ftemp(o, full, vc_dt_of(b, x)); /* the all-gather buffer */
    vc_op_weight_temps(o, w0, vc_n_sample(rows * t));
    int ib = bias >= 0 ? vc_op_in(o, bias) : -1;
    vc_t y = vc_op_out(o, vc_n_scale(vc_n_sample(rows * t), out), vc_dt_of(b, x));
    vc_op_save_if(o, x, iw);
    vc_op_save_if(o, w, ix);
    vc_op_grad_view(o, iw);
    if (ib >= 0) vc_op_grad_reduce_rows(o, ib, vc_n_sample(rows * t), out);
    vc_op_btemp(o, full, vc_dt_of(b, x)); /* the input gathered again */
    vc_op_btemp(o, full, vc_dt_of(b, x)); /* grad_input before its reduce-scatter */
    vc_op_gemm(o);
    vc_op_end(o);
    return y;
}

/* MEG tensor_parallel/mappings.py _ReduceScatterToSequenceParallelRegion:
 * forward _reduce_scatter_along_first_dim (torch.empty(dim_size / t) and the
 * collective), backward _gather_along_first_dim (torch.empty(dim_size * t)). */
vc_t vc__op_seq_scatter(vc_build *b, vc_t x, int64_t t)
{
    vc_numel n = vc_numel_of(b, x);
    n.ps /= t;
    n.fx /= t;
    return vc__op_fresh(b, "reduce_scatter", x, n);
}

vc_t vc__op_bmm(vc_build *b, vc_t a, vc_t c, vc_numel out)
{
    return vc__op_bmm_raw(b, vc__op_autocast(b, a), vc__op_autocast(b, c), out);
}

vc_t vc__op_bmm_raw(vc_build *b, vc_t a, vc_t c, vc_numel out)
{
    vc_op *o = vc_op_begin(b, "bmm");
    int ia = vc_op_in(o, a);
    int ic = vc_op_in(o, c);
    vc_t y = vc_op_out(o, out, vc_dt_of(b, a));
    vc_op_save_if(o, a, ic);
    vc_op_save_if(o, c, ia);
    vc_op_gemm(o);
    vc_op_end(o);
    return y;
}

vc_t vc__op_conv(vc_build *b, vc_t x, vc_t w, vc_t bias, vc_numel out)
{
    x = vc__op_autocast(b, x);
    w = vc__op_autocast_weight(b, w);
    bias = vc__op_autocast_weight(b, bias);
    vc_op *o = vc_op_begin(b, "convolution");
    vc_op_in(o, x);
    vc_op_in(o, w);
    if (bias >= 0) vc_op_in(o, bias);
    /* at::_convolution hands cuDNN input.contiguous(backend_memory_format), and
     * convolution_backward does the same with the saved (non-contiguous)
     * input: an input-sized copy alive with the output / the gradients */
    if (!vc_contiguous(b, x)) {
        vc_op_ftemp(o, vc_numel_of(b, x), vc_dt_of(b, x));
        vc_op_btemp(o, vc_numel_of(b, x), vc_dt_of(b, x));
    }
    vc_t y = vc_op_out(o, out, vc_dt_of(b, x));
    /* cuDNN's workspaces (src/engine/cudnn.c, Conv_v8.cpp run_conv_plan): one
     * transient per call, allocated after the output and freed when the call
     * returns; in backward the data and filter calls run one after the other,
     * so the larger of the two needed is the transient */
    vc_conv_ws ws;
    vc_conv_workspace(b, &ws);
    bool gx = vc_requires_grad(b, x), gw = vc_requires_grad(b, w);
    if (ws.how == VC_CONV_WS_BYTES) {
        int64_t bd = gx ? ws.bwd_data : 0, bf = gw ? ws.bwd_filter : 0, bw = bd > bf ? bd : bf;
        if (ws.fwd) vc_op_ftemp(o, vc_n_fixed(ws.fwd), VC_DT_U8);
        if (bw) vc_op_btemp(o, vc_n_fixed(bw), VC_DT_U8);
    } else if (ws.how == VC_CONV_WS_FACTORS) {
        /* the bound: a multiple of the larger of input and output */
        vc_dtype dt = vc_dt_of(b, x);
        vc_part f[2] = {{vc_n_scale(vc_numel_of(b, x), ws.fwd), dt, 0, 0, 0}, {vc_n_scale(out, ws.fwd), dt, 1, 0, 0}};
        vc_op_ftemp_parts(o, f, 2, true);
        if (gx || gw) {
            int64_t k = gx && ws.bwd_data > ws.bwd_filter ? ws.bwd_data : ws.bwd_filter;
            vc_part g[2] = {{vc_n_scale(vc_numel_of(b, x), k), dt, 0, 0, 0}, {vc_n_scale(out, k), dt, 1, 0, 0}};
            vc_op_btemp_parts(o, g, 2, true);
        }
    }
    vc_op_save(o, x);
    vc_op_save(o, w);
    vc_op_end(o);
    return y;
}

static vc_t binary(vc_build *b, const char *name, vc_t x, vc_t y, vc_numel out, bool inplace, bool mul)
{
    vc_op *o = vc_op_begin(b, name);
    int ix = vc_op_in(o, x);
    int iy = vc_op_in(o, y);
    vc_t r = inplace ? vc_op_out_view(o, ix, out, vc_contiguous(b, x)) : vc_op_out(o, out, vc_dt_of(b, x));
    if (mul) {
        /* mul: grad_self = grad * other (saved if self needs grad), and vice
         * versa; for a broadcast input that product is output-sized and the
         * engine reduces it (sum_to) */
        vc_op_save_if(o, y, ix);
        vc_op_save_if(o, x, iy);
        if (!same_numel(vc_numel_of(b, x), out)) vc_op_grad(o, ix, VC_GRAD_NEW_REDUCE);
        if (!same_numel(vc_numel_of(b, y), out)) vc_op_grad(o, iy, VC_GRAD_NEW_REDUCE);
    } else {
        /* add: the gradient passes through; the engine sum_to's it for a
         * broadcast input and casts it for an input of another dtype than the
         * result (engine.cpp @ e1253a95 validate_outputs: grad.to(metadata
         * dtype), a new tensor: a float32 residual + a bf16 branch, Mamba2Block
         * under residual_in_fp32, hands the branch a bf16 copy) */
        const vc_dtype rdt = vc_dt_of(b, r);
        vc_op_grad(o, ix, same_numel(vc_numel_of(b, x), out) && vc_dt_of(b, x) == rdt ? VC_GRAD_PASS : VC_GRAD_REDUCE);
        vc_op_grad(o, iy, same_numel(vc_numel_of(b, y), out) && vc_dt_of(b, y) == rdt ? VC_GRAD_PASS : VC_GRAD_REDUCE);
    }
    vc_op_end(o);
    return r;
}

vc_t vc__op_add(vc_build *b, vc_t x, vc_t y, vc_numel out, bool inplace)
{
    return binary(b, inplace ? "add_" : "add", x, y, out, inplace, false);
}

vc_t vc__op_mul(vc_build *b, vc_t x, vc_t y, vc_numel out, bool inplace)
{
    return binary(b, inplace ? "mul_" : "mul", x, y, out, inplace, true);
}

vc_t vc__op_mul_dt(vc_build *b, vc_t x, vc_t y, vc_numel out, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, "mul");
    int ix = vc_op_in(o, x);
    int iy = vc_op_in(o, y);
    vc_t r = vc_op_out(o, out, dt);
    vc_op_save_if(o, y, ix);
    vc_op_save_if(o, x, iy);
    /* MulBackward0 (derivatives.yaml mul.Tensor: self: mul_tensor_backward(grad, other, self.scalar_type()))
     * makes grad * other output-sized in the output's dtype: mul_tensor_backward returns it uncast
     * (FunctionsManual.cpp @ 002ca671: `grad * other.conj()`, handle_r_to_c only drops a complex part).
     * After apply returns the engine reduces it to a broadcast operand's shape and casts it to an
     * operand of another dtype (engine.cpp @ e1253a95 validate_outputs: sum_to, then
     * grad.to(metadata dtype)), each a new tensor replacing it: a bf16 operand times float32 routing
     * weights has a float32 product beside its bf16 gradient (HunYuan's experts) */
    if (!same_numel(vc_numel_of(b, x), out) || vc_dt_of(b, x) != dt) vc_op_grad(o, ix, VC_GRAD_NEW_REDUCE);
    if (!same_numel(vc_numel_of(b, y), out) || vc_dt_of(b, y) != dt) vc_op_grad(o, iy, VC_GRAD_NEW_REDUCE);
    vc_op_end(o);
    return r;
}

vc_t vc__op_dropout(vc_build *b, vc_t x, double p)
{
    if (!vc_training(b) || p <= 0.0) return x; /* _dropout_impl returns the input itself */
    if (p >= 1.0) {                             /* input * zeros({}) */
        vc_t z = vc__op_new(b, "zeros", vc_n_fixed(1), vc_dt_of(b, x));
        return vc__op_mul(b, x, z, vc_numel_of(b, x), false);
    }
    vc_op *o = vc_op_begin(b, "native_dropout");
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_extra(o, vc_numel_of(b, x), VC_DT_BOOL); /* result1: the mask */
    vc_op_end(o);
    return y;
}

vc_t vc__op_softmax(vc_build *b, vc_t x, bool log)
{
    x = vc__op_autocast_f32(b, x);
    x = vc__op_contiguous(b, x);
    return vc__op_unary(b, log ? "_log_softmax" : "_softmax", x, VC_SAVE_OUT, false);
}

vc_t vc__op_mean(vc_build *b, vc_t x, vc_numel out) { return vc__op_fresh(b, "mean", x, out); }

/* torch.square(x) is at::pow(x, 2) (UnaryOps.cpp square; CompositeImplicitAutograd), so the node is
 * PowBackward0: derivatives.yaml pow.Tensor_Scalar "self: pow_backward(grad, self, exponent)"
 * (cyyever/pytorch @ 021c4c1a) keeps self. pow is on autocast's fp32 list (autocast_mode.h
 * AT_FORALL_FP32 "_(pow, Tensor_Scalar)"): a 16-bit input is cast to fp32 first. pow_backward
 * (torch/csrc/autograd/FunctionsManual.cpp @ 002ca671) returns grad * (exp * self.pow(exp - 1)).conj():
 * self.pow(1.0) (pow_Tensor_Scalar_out copies the base: a new x-sized tensor), exp * that (a second),
 * .conj() (the tensor itself when real) and grad * ... (the gradient): the two temporaries of the
 * full-expression live until it ends, beside the gradient. */
vc_t vc__op_pow2(vc_build *b, vc_t x)
{
    x = vc__op_autocast_f32(b, x);
    vc_op *o = vc_op_begin(b, "pow");
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_save(o, x);
    vc_op_btemp_held(o, vc_numel_of(b, x), vc_dt_of(b, x)); /* self.pow(1.0) */
    vc_op_btemp_held(o, vc_numel_of(b, x), vc_dt_of(b, x)); /* 2.0 * it */
    vc_op_end(o);
    return y;
}

vc_t vc__op_layer_norm(vc_build *b, vc_t x, vc_t w, vc_t bias, vc_numel stats)
{
    return vc__op_layer_norm_as_is(b, vc__op_autocast_f32(b, x), w, bias, stats);
}

vc_t vc__op_layer_norm_as_is(vc_build *b, vc_t x, vc_t w, vc_t bias, vc_numel stats)
{
    bool contig = vc_contiguous(b, x);
    vc_op *o = vc_op_begin(b, "native_layer_norm");
    vc_op_in(o, x);
    if (w >= 0) vc_op_in(o, w);
    if (bias >= 0) vc_op_in(o, bias);
    if (!contig) vc_op_ftemp(o, vc_numel_of(b, x), vc_dt_of(b, x)); /* X = input.expect_contiguous() */
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_extra(o, stats, VC_DT_F32); /* mean (acc dtype) */
    vc_op_extra(o, stats, VC_DT_F32); /* rstd */
    vc_op_save(o, x);                 /* the argument itself (alias) */
    if (w >= 0) vc_op_save(o, w);
    if (bias >= 0) vc_op_save(o, bias);
    if (!contig) vc_op_btemp(o, vc_numel_of(b, x), vc_dt_of(b, x)); /* backward's expect_contiguous */
    vc_op_end(o);
    return y;
}

vc_t vc__op_fresh(vc_build *b, const char *name, vc_t x, vc_numel n)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, n, vc_dt_of(b, x));
    vc_op_end(o);
    return y;
}

vc_t vc__op_new(vc_build *b, const char *name, vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, name);
    vc_t y = vc_op_out(o, n, dt);
    vc_op_end(o);
    return y;
}

vc_t vc__op_nograd(vc_build *b, const char *name, vc_t x, vc_t y, vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, name);
    if (x >= 0) vc_op_in_nodiff(o, x);
    if (y >= 0) vc_op_in_nodiff(o, y);
    vc_t r = vc_op_out(o, n, dt);
    vc_op_end(o);
    return r;
}

int vc__op_torch(const vc_build *b)
{
    int v = vc_opts(b)->torch_version;
    return v ? v : VC_TORCH_DEFAULT;
}
