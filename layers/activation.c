/*
 * activation.c — elementwise activations and Softmax/LogSoftmax.
 *
 * What each saves follows derivatives.yaml: relu/sigmoid/tanh keep their
 * result; hardtanh (ReLU6), leaky_relu, elu, gelu, silu, mish, hardswish,
 * hardsigmoid keep their input. In-place variants whose formula reads the
 * result (relu_, leaky_relu_, elu_) keep the shared buffer; the others
 * (hardtanh_ = ReLU6(inplace=True), silu_, mish_, hardswish_, hardsigmoid_)
 * have no in-place entry of their own in derivatives.yaml, use the
 * out-of-place formula that reads `self`, and so autograd keeps a copy of the
 * original input (HardtanhBackward0 saves `self`, a clone: measured, torch
 * 1.13; 2.x's derivatives.yaml has only the `hardtanh` entry). The clone is
 * made only when autograd records the op (grad mode on and the input
 * requires grad): none in inference or after a frozen prefix.
 */
#include <string.h>

#include "ops.h"

typedef struct {
    bool inplace;
    double slope, alpha;
    int approx;
    int64_t dim;
} act_cfg;

enum { SAVES_RESULT, SAVES_INPUT };

typedef struct {
    const char *op;
    int saves;
    bool inplace_keeps_result; /* in-place variant's formula reads the result */
} act_info;

static int act_parse_inplace(vc_args *a, void *p) { return vc_arg_bool(a, "inplace", false, &((act_cfg *)p)->inplace); }

static int act_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    return 0;
}

static void act_emit(vc_build *b, const act_info *info, const act_cfg *c)
{
    vc_t x = vc_input(b, 0);
    if (!c->inplace) {
        vc_set_output(b, vc__op_unary(b, info->op, x, info->saves == SAVES_RESULT ? VC_SAVE_OUT : VC_SAVE_IN, false));
        return;
    }
    if (info->saves == SAVES_RESULT || info->inplace_keeps_result) {
        vc_set_output(b, vc__op_unary(b, info->op, x, VC_SAVE_OUT, true));
        return;
    }
    /* saves original_self = self.clone(), made only when the node is built:
     * the generated VariableType kernel clones inside `if (grad_fn)`, i.e.
     * when grad mode is on and self requires grad (not under no_grad, not
     * after a frozen prefix) */
    vc_op *o = vc_op_begin(b, info->op);
    int i = vc_op_in(o, x);
    vc_t y = vc_op_out_view(o, i, vc_numel_of(b, x), vc_contiguous(b, x));
    if (vc_requires_grad(b, x)) vc_op_extra(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_end(o);
    vc_set_output(b, y);
}

#define SIMPLE_ACT(NAME, OP, SAVES, KEEPS_RESULT, PARSE, SUMMARY)                        \
    static void NAME##_emit(vc_build *b, const void *p)                                  \
    {                                                                                    \
        static const act_info info = {OP, SAVES, KEEPS_RESULT};                          \
        act_emit(b, &info, p);                                                           \
    }                                                                                    \
    const vc_kind vc_kind_##NAME = {                                                     \
        .ops = 1,                                                                        \
        .name = #NAME, .summary = SUMMARY, .min_inputs = 1, .max_inputs = 1,             \
        .cfg_size = sizeof(act_cfg), .parse = PARSE, .setup = act_setup, .emit = NAME##_emit, \
    };

static int no_fields(vc_args *a, void *p)
{
    (void)a;
    (void)p;
    return 0;
}

static int leaky_parse(vc_args *a, void *p)
{
    act_cfg *c = p;
    return vc_arg_float(a, "negative_slope", 0.01, -1e308, 1e308, &c->slope) || act_parse_inplace(a, p);
}

static int elu_parse(vc_args *a, void *p)
{
    act_cfg *c = p;
    return vc_arg_float(a, "alpha", 1.0, -1e308, 1e308, &c->alpha) || act_parse_inplace(a, p);
}

static int gelu_parse(vc_args *a, void *p)
{
    static const char *const approx[] = {"none", "tanh", NULL};
    return vc_arg_enum(a, "approximate", approx, 0, &((act_cfg *)p)->approx);
}

SIMPLE_ACT(ReLU, "relu", SAVES_RESULT, true, act_parse_inplace, "max(x, 0); keeps its output")
SIMPLE_ACT(ReLU6, "hardtanh", SAVES_INPUT, false, act_parse_inplace, "min(max(x, 0), 6); keeps its input")
SIMPLE_ACT(LeakyReLU, "leaky_relu", SAVES_INPUT, true, leaky_parse, "leaky ReLU; keeps its input")
SIMPLE_ACT(ELU, "elu", SAVES_INPUT, true, elu_parse, "ELU; keeps its input")
SIMPLE_ACT(GELU, "gelu", SAVES_INPUT, false, gelu_parse, "GELU (approximate none/tanh); keeps its input")
SIMPLE_ACT(SiLU, "silu", SAVES_INPUT, false, act_parse_inplace, "x * sigmoid(x); keeps its input")
SIMPLE_ACT(Mish, "mish", SAVES_INPUT, false, act_parse_inplace, "x * tanh(softplus(x)); keeps its input")
SIMPLE_ACT(Hardswish, "hardswish", SAVES_INPUT, false, act_parse_inplace, "hard swish; keeps its input")
SIMPLE_ACT(Hardsigmoid, "hardsigmoid", SAVES_INPUT, false, act_parse_inplace, "hard sigmoid; keeps its input")
SIMPLE_ACT(Sigmoid, "sigmoid", SAVES_RESULT, true, no_fields, "logistic sigmoid; keeps its output")
SIMPLE_ACT(Tanh, "tanh", SAVES_RESULT, true, no_fields, "tanh; keeps its output")

/* ---- Square: torch.square(x) (no nn module; transformers' ReLUSquaredActivation, ACT2FN
 * "relu2", is ReLU then Square): ops.c vc__op_pow2, PowBackward0 keeps its input and its
 * backward makes two input-sized temporaries beside the gradient */

static void square_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_set_output(b, vc__op_pow2(b, vc_input(b, 0)));
}

const vc_kind vc_kind_Square = {
    .ops = 2, /* autocast's cast to fp32, pow */
    .name = "Square", .summary = "torch.square(x) = x.pow(2) (fp32 under autocast); keeps its input",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(act_cfg),
    .parse = no_fields, .setup = act_setup, .emit = square_emit,
};

/* ---- XIELU: transformers' XIELUActivation (src/transformers/activations.py, the Python path _xielu_python;
 * Apertus' ACT2FN["xielu"]): alpha_p and alpha_n Parameters of shape [1] and the 0-dim buffers beta and eps, all
 * created bfloat16 (dtype=torch.bfloat16 in __init__) whatever the model's dtype. forward:
 *   alpha_p = softplus(self.alpha_p); alpha_n = self.beta + softplus(self.alpha_n)
 *   where(x > 0, alpha_p * x * x + beta * x, (expm1(min(x, eps)) - x) * alpha_n + beta * x)
 * Each statement an aten op (derivatives.yaml): the [1]-sized alpha_p / alpha_n promote with x (a 1-dim tensor),
 * the 0-dim beta / eps do not. Saved: x > 0 (bool, where's condition), alpha_p * x (the second mul's self), x
 * (the muls', minimum's), expm1's result, expm1(...) - x (the mul by alpha_n's self). alpha_p's and alpha_n's
 * gradients are input-sized products reduced to [1]; minimum's backward is where(self == other, grad / 2, grad)
 * .masked_fill_(self > other, 0) (two bool masks, grad / 2, the where); expm1's is grad * (result + 1). */

static int xielu_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    return vc_param_shape(s, "alpha_p", 1, (int64_t[1]){1}, VC_PARAM_BF16) ||
           vc_param_shape(s, "alpha_n", 1, (int64_t[1]){1}, VC_PARAM_BF16) || vc_buffer(s, "beta", 1, VC_DT_BF16) ||
           vc_buffer(s, "eps", 1, VC_DT_BF16);
}

static vc_dtype xielu_promote(vc_dtype a, vc_dtype c) { return a == VC_DT_F32 || c == VC_DT_F32 ? VC_DT_F32 : a; }

/* x * y of x's size, y a [1] or 0-dim tensor: mul's saves; y's gradient the product reduced */
static vc_t xielu_mul(vc_build *b, vc_t x, vc_t y, vc_dtype dt) { return vc__op_mul_dt(b, x, y, vc_numel_of(b, x), dt); }

static void xielu_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0), beta = vc_buf(b, 0), eps = vc_buf(b, 1);
    vc_numel n = vc_numel_of(b, x);
    vc_dtype dt = vc_dt_of(b, x);
    /* softplus and expm1 are on autocast's fp32 list: their 16-bit inputs cast first, float32 results that promote
     * what follows */
    vc_t ap = vc__op_unary(b, "softplus", vc__op_autocast_f32(b, vc_weight(b, 0)), VC_SAVE_IN, false);
    vc_t an = vc__op_unary(b, "softplus", vc__op_autocast_f32(b, vc_weight(b, 1)), VC_SAVE_IN, false);
    an = vc__op_add(b, an, beta, vc_n_fixed(1), false);
    vc_dtype pdt = xielu_promote(dt, vc_dt_of(b, ap)); /* a [1] tensor takes part in type promotion */
    vc_t mask = vc__op_nograd(b, "gt", x, -1, n, VC_DT_BOOL);
    vc_t pos = xielu_mul(b, xielu_mul(b, x, ap, pdt), x, pdt); /* alpha_p * x * x */
    pos = vc__op_add(b, pos, xielu_mul(b, x, beta, dt), n, false);
    /* torch.min(x, eps): minimum, saves both; its backward's masks and grad / 2 */
    vc_op *o = vc_op_begin(b, "minimum");
    int ix = vc_op_in(o, x);
    vc_op_in_nodiff(o, eps);
    vc_t m = vc_op_out(o, n, dt);
    vc_op_save_if(o, x, ix);
    vc_op_btemp_held(o, n, VC_DT_BOOL); /* self == other */
    vc_op_btemp_held(o, n, dt);         /* grad / 2 */
    vc_op_btemp_held(o, n, VC_DT_BOOL); /* self > other */
    vc_op_end(o);
    /* expm1: saves its result; backward grad * (result + 1) */
    m = vc__op_autocast_f32(b, m);
    o = vc_op_begin(b, "expm1");
    vc_op_in(o, m);
    vc_t e = vc_op_out(o, n, vc_dt_of(b, m));
    vc_op_save(o, e);
    vc_op_btemp_held(o, n, vc_dt_of(b, m)); /* result + 1 */
    vc_op_end(o);
    o = vc_op_begin(b, "sub"); /* expm1(...) - x: nothing saved, x's gradient -grad */
    vc_op_grad(o, vc_op_in(o, e), VC_GRAD_PASS);
    vc_op_in(o, x);
    vc_t d = vc_op_out(o, n, xielu_promote(vc_dt_of(b, e), dt));
    vc_op_end(o);
    vc_t neg = xielu_mul(b, d, an, xielu_promote(vc_dt_of(b, d), vc_dt_of(b, an)));
    neg = vc__op_add(b, neg, xielu_mul(b, x, beta, dt), n, false); /* add keeps the first's dtype (neg's) */
    /* torch.where(cond, a, b): saves the condition; each gradient a masked copy of the incoming one */
    o = vc_op_begin(b, "where");
    vc_op_in_nodiff(o, mask);
    vc_op_in(o, pos);
    vc_op_in(o, neg);
    vc_t y = vc_op_out(o, n, xielu_promote(vc_dt_of(b, pos), vc_dt_of(b, neg)));
    vc_op_save(o, mask);
    vc_op_end(o);
    vc_set_output(b, y);
}

const vc_kind vc_kind_XIELU = {
    .ops = 19, /* 3 autocast casts, softplus x 2, add, gt, mul x 3, add, minimum, expm1, sub, mul x 2, add, where */
    .name = "XIELU", .summary = "transformers' xIELU (Apertus): bf16 alpha_p / alpha_n [1], beta / eps buffers; where of two branches",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(act_cfg),
    .parse = no_fields, .setup = xielu_setup, .emit = xielu_emit,
};

/* ---- Softmax / LogSoftmax: dim is required (counts the batch dim) */

static int softmax_parse(vc_args *a, void *p)
{
    return vc_arg_int(a, "dim", VC_REQUIRED, INT64_MIN + 1, &((act_cfg *)p)->dim);
}

static int softmax_setup(vc_setup *s, void *p)
{
    const act_cfg *c = p;
    int d = vc_dim_index(c->dim, s->in[0].nd);
    if (d == -2) return vc_fail(s, "dim", "softmax over the batch dimension (dim 0) is not supported");
    if (d < 0) return vc_fail(s, "dim", "dim %lld is out of range for a %d-dimensional input (with the batch)", (long long)c->dim, s->in[0].nd + 1);
    s->out = s->in[0];
    return 0;
}

static void softmax_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_set_output(b, vc__op_softmax(b, vc_input(b, 0), false));
}

static void log_softmax_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_set_output(b, vc__op_softmax(b, vc_input(b, 0), true));
}

const vc_kind vc_kind_Softmax = {
    .ops = 1,
    .name = "Softmax", .summary = "softmax along dim (required); keeps its output",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(act_cfg),
    .parse = softmax_parse, .setup = softmax_setup, .emit = softmax_emit,
};

const vc_kind vc_kind_LogSoftmax = {
    .ops = 1,
    .name = "LogSoftmax", .summary = "log-softmax along dim (required); keeps its output",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(act_cfg),
    .parse = softmax_parse, .setup = softmax_setup, .emit = log_softmax_emit,
};
