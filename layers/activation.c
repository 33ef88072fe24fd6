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
