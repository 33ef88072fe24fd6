/*
 * linear.c — Linear, Identity, Flatten.
 *
 * Linear's sequence_gather / sequence_scatter (t > 1) are a tensor-parallel
 * rank's Linear under Megatron's sequence parallelism (docs/parallel.md 2.6;
 * written by src/hf/hf.c for --tp --sp): gather, a ColumnParallelLinear whose
 * input [.., s/t, in] is all-gathered to [.., s, in] (ops.h vc__op_linear_gather);
 * scatter, a RowParallelLinear whose [.., s, out] result is reduce-scattered
 * to [.., s/t, out] (vc__op_seq_scatter). The dim before the features is the
 * sequence.
 */
#include "ops.h"

/* ---- Linear (torch/nn/modules/linear.py; aten/src/ATen/native/Linear.cpp) */

typedef struct {
    int64_t in, out;
    bool bias;
    int64_t gather, scatter; /* sequence parallelism: the TP degree, 1 none */
    bool ia3_ff;             /* --peft ia3: a feedforward module (set by setup) */
    bool adapted;            /* a PEFT target: its adapters follow its own parameters (set by setup) */
    bool quantizable;        /* false: a bare nn.Parameter used by matmul (Gemma3's mm_input_projection_weight),
                              * which weight quantizers (bitsandbytes: nn.Linear only) leave */
} linear_cfg;

static int linear_parse(vc_args *a, void *p)
{
    linear_cfg *c = p;
    return vc_arg_int(a, "in_features", VC_REQUIRED, 1, &c->in) ||
           vc_arg_int(a, "out_features", VC_REQUIRED, 1, &c->out) ||
           vc_arg_bool(a, "bias", true, &c->bias) || vc_arg_bool(a, "quantizable", true, &c->quantizable) ||
           vc_arg_int(a, "sequence_gather", 1, 1, &c->gather) ||
           vc_arg_int(a, "sequence_scatter", 1, 1, &c->scatter) ||
           (c->gather > 1 && c->scatter > 1 ? vc_arg_fail(a, "sequence_scatter", "a Linear gathers or scatters the sequence, not both") : 0);
}

/* The sequence dim (the one before the features) multiplied (gather) or
 * divided (scatter) by the TP degree. */
static int linear_seq(vc_setup *s, const linear_cfg *c)
{
    if (c->gather == 1 && c->scatter == 1) return 0;
    const char *key = c->gather > 1 ? "sequence_gather" : "sequence_scatter";
    if (s->out.nd < 2) return vc_fail(s, key, "the input has no sequence dimension before the features");
    int64_t *d = &s->out.d[s->out.nd - 2];
    if (c->gather > 1) return vc_mul(s, *d, c->gather, d);
    if (*d % c->scatter)
        return vc_fail(s, key, "the sequence (%lld) is not divisible by %lld ranks", (long long)*d, (long long)c->scatter);
    *d /= c->scatter;
    return 0;
}

static int linear_setup(vc_setup *s, void *p)
{
    linear_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->d[x->nd - 1] != c->in)
        return vc_fail(s, "in_features", "in_features is %lld but the input has %lld features (last dimension)",
                       (long long)c->in, (long long)x->d[x->nd - 1]);
    s->out = *x;
    s->out.d[x->nd - 1] = c->out;
    if (linear_seq(s, c)) return -1;
    if ((c->gather > 1 || c->scatter > 1) && s->lora)
        return vc_fail(s, c->gather > 1 ? "sequence_gather" : "sequence_scatter", "LoRA adapters on a sequence-parallel Linear are not modelled");
    int64_t w;
    int64_t wd[2] = {c->out, c->in};
    if (vc_mul(s, c->in, c->out, &w) || vc_param_shape(s, "weight", 2, wd, c->quantizable ? VC_PARAM_LINEAR : 0) || (c->bias && vc_param(s, "bias", c->out)))
        return -1;
    c->adapted = s->lora != NULL; /* (modules_to_save's frozen original may follow the parameters too) */
    if (!s->lora) return 0;
    /* peft/tuners/lora/layer.py LoraLayer.update_layer: lora_A = nn.Linear(in, r,
     * bias=False), lora_B = nn.Linear(r, out, bias=False), then
     * _move_adapter_to_device_of_base_layer casts them to the base weight's
     * float dtype (tuners_utils.py; bnb's compute_dtype), and get_peft_model's
     * autocast_adapter_dtype=True upcasts fp16/bf16 ones to float32
     * (tuners_utils.py cast_adapter_dtype; peft 5d602fdb): auto and fp32
     * pinned to fp32; model follows the precision's parameter dtype (PEFT with
     * autocast_adapter_dtype=False; torchtune's LoRALinear, built under
     * set_default_dtype(dtype) in recipes/lora_finetune_single_device.py
     * _setup_model, torchtune bd2a0fc7) */
    int64_t ar[2] = {s->lora->r, c->in}, br[2] = {c->out, s->lora->r};
    vc_lora_dtype ld = s->lora->dtype;
    unsigned fl = VC_PARAM_ADAPTER | (ld == VC_LORA_DTYPE_BF16 ? VC_PARAM_BF16 : ld == VC_LORA_DTYPE_FP16 ? VC_PARAM_F16
                                      : ld == VC_LORA_DTYPE_MODEL ? 0u : VC_PARAM_F32);
    const vc_peft_row *pr = vc_peft_row_get(s->lora->method);
    c->ia3_ff = s->ia3_feedforward;
    if (pr->ia3) { /* peft/tuners/ia3/layer.py IA3Layer.update_layer: (1, in) feedforward, (out, 1) otherwise;
                    * in adapter_layer_names ("ia3_l",), so cast as the LoRA adapters are */
        int64_t d[2] = {c->ia3_ff ? 1 : c->out, c->ia3_ff ? c->in : 1};
        return vc_param_shape(s, "ia3_l.default", 2, d, fl);
    }
    int64_t sq;
    if (pr->magnitude && vc_mul(s, c->in, c->in, &sq)) return -1; /* DoRA's torch.eye(in_features) */
    /* DoRA: variants.py DoraLinearVariant.init, lora_magnitude_vector[adapter] = DoraLinearLayer whose
     * weight is nn.Parameter(weight_norm) of out_features (dora.py update_layer), after lora_A and lora_B */
    return vc_param_shape(s, "lora_A.default.weight", 2, ar, fl) || vc_param_shape(s, "lora_B.default.weight", 2, br, fl) ||
           (pr->magnitude && vc_param_shape(s, "lora_magnitude_vector.default.weight", 1, &c->out, fl));
}

/* result + delta where the two may differ in dtype (a 16-bit model's output
 * and an fp32 adapter's): add's output takes the promoted dtype; AddBackward0
 * hands its gradient to both, and the engine casts it to an input of
 * another dtype (validate_outputs: a new tensor). */
static vc_t add_promoted(vc_build *b, vc_t y, vc_t d)
{
    vc_dtype dy = vc_dt_of(b, y), dd = vc_dt_of(b, d);
    if (dy == dd) return vc__op_add(b, y, d, vc_numel_of(b, y), false);
    vc_op *o = vc_op_begin(b, "add");
    int iy = vc_op_in(o, y), id = vc_op_in(o, d);
    vc_t out = vc_op_out(o, vc_numel_of(b, y), VC_DT_F32);
    vc_op_grad(o, iy, dy == VC_DT_F32 ? VC_GRAD_PASS : VC_GRAD_NEW);
    vc_op_grad(o, id, dd == VC_DT_F32 ? VC_GRAD_PASS : VC_GRAD_NEW);
    vc_op_end(o);
    return out;
}

/* x * y broadcast to `out` elements (y the smaller, or both the same size) where the two may
 * differ in dtype: mul's output takes the promoted dtype (fp32 for a 16-bit and an fp32
 * operand); vc__op_mul_dt models MulBackward0's products and the engine's reduction and cast. */
static vc_t mul_promoted(vc_build *b, vc_t x, vc_t y, vc_numel out)
{
    vc_dtype dx = vc_dt_of(b, x), dy = vc_dt_of(b, y);
    return vc__op_mul_dt(b, x, y, out, dx == dy ? dx : VC_DT_F32);
}

/* --peft ia3: peft/tuners/ia3/layer.py Linear.forward (peft 5d602fdb). ia3_scaling = 1;
 * ia3_scaling *= ia3_l.flatten() (int * tensor: a new tensor, MulBackward0 with a scalar saves
 * nothing). Feedforward: x = x.to(ia3_l.dtype); interm = (x * ia3_scaling).to(previous_dtype);
 * result = base_layer(interm). Otherwise: result = base_layer(x); result = (result *
 * ia3_scaling).to(result.dtype). */
static void ia3_emit(vc_build *b, const linear_cfg *c, vc_t x, vc_t bias, int64_t rows)
{
    vc_t w = vc_weight(b, 0), v = vc_weight(b, c->bias ? 2 : 1);
    vc_t sc = vc__op_fresh(b, "mul", v, vc_numel_of(b, v));
    if (c->ia3_ff) {
        vc_dtype prev = vc_dt_of(b, x);
        vc_t xc = vc__op_cast(b, x, vc_dt_of(b, v));
        vc_t im = vc__op_cast(b, mul_promoted(b, xc, sc, vc_numel_of(b, xc)), prev);
        vc_set_output(b, vc__op_linear(b, im, w, bias, rows, c->in, c->out));
        return;
    }
    vc_t y = vc__op_linear(b, x, w, bias, rows, c->in, c->out);
    vc_set_output(b, vc__op_cast(b, mul_promoted(b, y, sc, vc_numel_of(b, y)), vc_dt_of(b, y)));
}

/* --peft dora: the delta DoraLinearVariant.forward adds to the base result y (tuners/lora/
 * variants.py; tuners/lora/dora.py DoraLinearLayer.forward, get_lora_weight, get_weight_norm;
 * peft 5d602fdb), x already cast to the adapters' dtype by Linear.forward. Every forward:
 *   lora_weight = lora_B(lora_A(torch.eye(in))).T   [out, in]: the eye [in, in] and lora_A's
 *       output [in, r] saved by its graph, all alive while the local lora_weight is (to the
 *       end of forward); it takes no gradient (only its .detach() is used below)
 *   weight = dequantize_module_weight(base_layer).to(x.dtype)   the weight itself (dense,
 *       same dtype), else a new [out, in]: bnb's dequantized copy, cast to the adapters' dtype
 *   weight_norm = linalg.norm(weight + scaling * lora_weight.detach(), dim=1).detach()
 *       two [out, in] temporaries (the product, then the sum), an [out] result
 *   mag_norm_scale = (magnitude / weight_norm).view(1, -1)
 *   lora_result = lora_B(lora_A(x))   (x dropped out when lora_dropout > 0)
 *   base_result = y (no dropout; minus the bias when there is one), else F.linear(x, weight):
 *       with dropout the weight copy is saved for backward
 *   result_dora = (mag_norm_scale - 1) * base_result + mag_norm_scale * lora_result * scaling
 *       the muls save base_result and lora_result (the magnitude's gradient) */
static vc_t dora_delta(vc_build *b, const linear_cfg *c, vc_t x, vc_t y, int64_t rows, int style)
{
    const vc_lora *l = vc_lora_of(b);
    int ia = c->bias ? 2 : 1;
    vc_t w = vc_weight(b, 0), wa = vc_weight(b, ia), wb = vc_weight(b, ia + 1), mag = vc_weight(b, ia + 2);
    vc_dtype da = vc_dt_of(b, wa);
    vc_numel io = vc_n_fixed(c->in * c->out), nout = vc_n_fixed(c->out); /* in x out: checked by setup */
    /* under autocast lora_A and lora_B run in its dtype: the eye cast for the mm (the one its graph
     * keeps; the fp32 eye dies with get_lora_weight's local), lora_weight made in it, then
     * lora_weight.to(x.dtype) a new [out, in] (the 16-bit one freed) */
    vc_dtype ac = vc_autocast_dt(b), dl = ac != VC_DT_F32 ? ac : da;
    /* DoraLinearVariant.forward: x = dropout(x) first, its own local: Linear.forward's x (the cast
     * input) stays referenced until the delta is back */
    vc_hold(b, x);
    vc_t xd = vc__op_dropout(b, x, l->dropout);
    vc_t eye = vc__op_new(b, "eye", vc_n_fixed(c->in * c->in), da);
    vc_hold(b, eye);
    vc_t ei = dl != da ? vc__op_nograd(b, "to", eye, -1, vc_n_fixed(c->in * c->in), dl) : eye;
    if (ei != eye) vc_hold(b, ei);
    vc_t ea = vc__op_nograd(b, "lora_A(x_eye)", ei, -1, vc_n_fixed(c->in * l->r), dl);
    vc_hold(b, ea);
    vc_t lw = vc__op_nograd(b, "lora_B(...).T", ea, -1, io, dl);
    if (ei != eye) {
        vc_release(b, eye);
        lw = vc__op_nograd(b, "to", lw, -1, io, da);
    }
    vc_hold(b, lw);
    vc_t wt = w;
    if (style == VC_LORA_BNB4) { /* bnb.functional.dequantize_4bit: quant_state.dtype, the model's */
        wt = vc__op_nograd(b, "dequantize_4bit", w, -1, io, vc_dt_of(b, y));
    } else if (style == VC_LORA_BNB8) { /* int8_vectorwise_dequant: A * stats.view(-1, 1) * (1 / 127), fp32 */
        vc_op *o = vc_op_begin(b, "int8_vectorwise_dequant");
        vc_op_in_nodiff(o, w);
        vc_op_ftemp(o, io, VC_DT_F32);
        wt = vc_op_out(o, io, VC_DT_F32);
        vc_op_end(o);
    }
    if (vc_dt_of(b, wt) != da) wt = vc__op_nograd(b, "to", wt, -1, io, da);
    if (wt != w) vc_hold(b, wt);
    vc_t sl = vc__op_nograd(b, "mul", lw, -1, io, da);
    vc_t wn = vc__op_nograd(b, "linalg_vector_norm", vc__op_nograd(b, "add", wt, sl, io, da), -1, nout, da);
    vc_op *o = vc_op_begin(b, "div");
    int im = vc_op_in(o, mag);
    vc_op_in_nodiff(o, wn);
    vc_op_save_if(o, wn, im);
    vc_t mns = vc_op_out(o, nout, da);
    vc_op_end(o);
    vc_t lr = vc__op_linear(b, vc__op_linear(b, xd, wa, -1, rows, c->in, l->r), wb, -1, rows, l->r, c->out);
    vc_t br = y;
    if (xd != x) br = vc__op_linear(b, xd, wt, -1, rows, c->in, c->out);
    else if (c->bias) br = vc__op_add(b, y, vc_weight(b, 1), vc_numel_of(b, y), false); /* base_result - bias: sub, the gradient passes */
    vc_t t1 = mul_promoted(b, br, vc__op_fresh(b, "sub", mns, nout), vc_numel_of(b, br));
    vc_t t3 = vc__op_fresh(b, "mul", mul_promoted(b, lr, mns, vc_numel_of(b, lr)), vc_numel_of(b, lr)); /* * scaling */
    vc_t d = add_promoted(b, t1, t3);
    vc_release(b, ei);
    vc_release(b, ea);
    vc_release(b, lw);
    if (wt != w) vc_release(b, wt);
    vc_release(b, x);
    return d;
}

static void linear_emit(vc_build *b, const void *p)
{
    const linear_cfg *c = p;
    int64_t rows = vc_shape_numel(vc_input_shape(b, 0)) / c->in;
    vc_t x = vc_input(b, 0);
    if (c->gather > 1) {
        vc_set_output(b, vc__op_linear_gather(b, x, vc_weight(b, 0), c->bias ? vc_weight(b, 1) : -1, rows, c->in, c->out, c->gather));
        return;
    }
    int ia = c->bias ? 2 : 1; /* the adapters follow the layer's own parameters */
    const vc_lora *l = vc_lora_of(b);
    /* peft tuners/lora/layer.py Linear.forward: if self.disable_adapters: result = self.base_layer(x) */
    if (c->adapted && vc_adapters_disabled(b)) {
        vc_set_output(b, vc__op_linear(b, x, vc_weight(b, 0), c->bias ? vc_weight(b, 1) : -1, rows, c->in, c->out));
        return;
    }
    if (c->adapted && vc_peft_row_get(l->method)->ia3) {
        ia3_emit(b, c, x, c->bias ? vc_weight(b, 1) : -1, rows);
        return;
    }
    vc_t y = vc__op_linear(b, x, vc_weight(b, 0), c->bias ? vc_weight(b, 1) : -1, rows, c->in, c->out);
    /* RowParallelLinear.forward: reduce_scatter_to_sequence_parallel_region(output_parallel);
     * its bias is added after (output_ + bias), here inside the addmm (the same tensors
     * but for one [s/t, out] sum) */
    if (c->scatter > 1) y = vc__op_seq_scatter(b, y, c->scatter);
    if (!c->adapted) {
        vc_set_output(b, y);
        return;
    }
    /* peft/tuners/lora/layer.py Linear.forward: result = self.base_layer(x);
     * x = self._cast_input_dtype(x, lora_A.weight.dtype); result = result +
     * lora_B(lora_A(dropout(x))) * scaling; result = result.to(torch_result_dtype) */
    int style = vc_weight_lora_style(b, vc_weight(b, 0)); /* the PEFT class over this base layer */
    /* peft/tuners/lora/bnb.py Linear4bit.forward: result = result.clone() ("as per
     * Tim Dettmers, for 4bit, we need to defensively clone here") */
    if (style == VC_LORA_BNB4) y = vc__op_clone(b, y);
    vc_t wa = vc_weight(b, ia), wb = vc_weight(b, ia + 1);
    vc_t d;
    if (vc_peft_row_get(l->method)->magnitude) {
        /* variants.py DoraLinearVariant.forward: result = result + lora_magnitude_vector(x, ...); bnb.py
         * Linear4bit / Linear8bitLt: result = result.to(expected_dtype) after */
        d = dora_delta(b, c, vc__op_cast(b, x, vc_dt_of(b, wa)), y, rows, style);
        vc_set_output(b, vc__op_cast(b, add_promoted(b, y, d), vc_dt_of(b, y)));
        return;
    }
    vc_t xa = vc__op_dropout(b, vc__op_cast(b, x, vc_dt_of(b, wa)), l->dropout);
    vc_t a = vc__op_linear(b, xa, wa, -1, rows, c->in, l->r);
    d = vc__op_linear(b, a, wb, -1, rows, l->r, c->out);
    d = vc__op_fresh(b, "mul", d, vc_numel_of(b, d)); /* * scaling: a new tensor, nothing saved */
    if (style != VC_LORA_LINEAR) {
        /* bnb.py Linear4bit / Linear8bitLt.forward: output = output.to(expected_dtype);
         * result = result + output (both in the base layer's dtype) */
        d = vc__op_cast(b, d, vc_dt_of(b, y));
        vc_set_output(b, vc__op_add(b, y, d, vc_numel_of(b, y), false));
        return;
    }
    vc_set_output(b, vc__op_cast(b, add_promoted(b, y, d), vc_dt_of(b, y)));
}

const vc_kind vc_kind_Linear = {
    .ops = 4,
    .name = "Linear", .summary = "y = x W^T + b over the last dimension",
    .min_inputs = 1, .max_inputs = 1, .flags = VC_KIND_TIEABLE | VC_KIND_LORA, .cfg_size = sizeof(linear_cfg),
    .parse = linear_parse, .setup = linear_setup, .emit = linear_emit,
};

/* ---- Identity */

static int identity_parse(vc_args *a, void *p)
{
    (void)a;
    (void)p;
    return 0;
}

static int identity_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    s->out_dt = s->in_dt[0];
    return 0;
}

static void identity_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_set_output(b, vc_input(b, 0));
}

const vc_kind vc_kind_Identity = {
    .name = "Identity", .summary = "returns its input (no allocation)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = 0,
    .parse = identity_parse, .setup = identity_setup, .emit = identity_emit,
};

/* ---- Flatten (start_dim=1, end_dim=-1; dims count the batch) */

typedef struct {
    int64_t start, end;
    int s, e; /* per-sample indices, set by setup */
} flatten_cfg;

static int flatten_parse(vc_args *a, void *p)
{
    flatten_cfg *c = p;
    return vc_arg_int(a, "start_dim", 1, INT64_MIN + 1, &c->start) || vc_arg_int(a, "end_dim", -1, INT64_MIN + 1, &c->end);
}

static int flatten_setup(vc_setup *s, void *p)
{
    flatten_cfg *c = p;
    const vc_shape *x = &s->in[0];
    int a = vc_dim_index(c->start, x->nd), e = vc_dim_index(c->end, x->nd);
    if (a == -2 || e == -2) return vc_fail(s, a == -2 ? "start_dim" : "end_dim", "Flatten may not merge the batch dimension (dim 0)");
    if (a < 0) return vc_fail(s, "start_dim", "dim %lld is out of range for a %d-dimensional input (with the batch)", (long long)c->start, x->nd + 1);
    if (e < 0) return vc_fail(s, "end_dim", "dim %lld is out of range for a %d-dimensional input (with the batch)", (long long)c->end, x->nd + 1);
    if (e < a) return vc_fail(s, "end_dim", "end_dim comes before start_dim");
    c->s = a;
    c->e = e;
    s->out.nd = 0;
    for (int i = 0; i < x->nd; i++) {
        if (i > a && i <= e) {
            if (vc_mul(s, s->out.d[s->out.nd - 1], x->d[i], &s->out.d[s->out.nd - 1])) return -1;
        } else {
            s->out.d[s->out.nd++] = x->d[i];
        }
    }
    return 0;
}

static void flatten_emit(vc_build *b, const void *p)
{
    const flatten_cfg *c = p;
    vc_t x = vc_input(b, 0);
    if (c->s == c->e) { /* flatten of one dim returns the input */
        vc_set_output(b, x);
        return;
    }
    x = vc__op_contiguous(b, x); /* reshape of a non-viewable tensor copies */
    vc_set_output(b, vc__op_view(b, x, vc_numel_of(b, x), true));
}

const vc_kind vc_kind_Flatten = {
    .ops = 2,
    .name = "Flatten", .summary = "merges dims start_dim..end_dim (a view)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(flatten_cfg),
    .parse = flatten_parse, .setup = flatten_setup, .emit = flatten_emit,
};
