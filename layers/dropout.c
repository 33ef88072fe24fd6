/*
 * dropout.c — Dropout, Dropout2d, StochasticDepth (docs/autograd.md §3.6).
 *
 * All are the identity in eval mode and for p == 0 (the output is the
 * input tensor: no node, no allocation).
 *  - Dropout: at::dropout -> native_dropout (output + bool mask; the mask
 *    is kept). inplace=True runs at::dropout_, which never takes the fused
 *    kernel: noise = empty_like(input) (input dtype), bernoulli_, div_,
 *    input.mul_(noise) — the float noise is kept by the mul.
 *  - Dropout2d: feature_dropout: noise [N, C, 1, ...] in the input dtype,
 *    input.mul(noise) (or mul_), the noise kept.
 *  - StochasticDepth (torchvision.ops.stochastic_depth): noise [N, 1, ...]
 *    ("row") or [1, 1, ...] ("batch"), bernoulli_, div_, input * noise.
 * p == 1 in Dropout/Dropout2d: input * zeros({}) (the scalar is kept).
 */
#include "ops.h"

typedef struct {
    double p;
    bool inplace;
    int mode; /* StochasticDepth: 0 row, 1 batch */
} drop_cfg;

static int drop_parse(vc_args *a, void *p)
{
    drop_cfg *c = p;
    return vc_arg_float(a, "p", 0.5, 0.0, 1.0, &c->p) || vc_arg_bool(a, "inplace", false, &c->inplace);
}

static int drop_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    s->out_dt = s->in_dt[0];
    return 0;
}

/* input * noise (mul or mul_): saves the noise, which needs no grad */
static vc_t mul_noise(vc_build *b, vc_t x, vc_t noise, bool inplace)
{
    return vc__op_mul(b, x, noise, vc_numel_of(b, x), inplace);
}

/* The non-fused _dropout_impl: noise of noise_n elements (input dtype). */
static vc_t noise_dropout(vc_build *b, vc_t x, double p, vc_numel noise_n, bool inplace)
{
    if (p >= 1.0) /* multiply<inplace>(input, at::zeros({}, input.options())) */
        return mul_noise(b, x, vc__op_new(b, "zeros", vc_n_fixed(1), vc_dt_of(b, x)), inplace);
    vc_t noise = vc__op_new(b, "empty", noise_n, vc_dt_of(b, x)); /* bernoulli_, div_ in place */
    return mul_noise(b, x, noise, inplace);
}

static void dropout_emit(vc_build *b, const void *p)
{
    const drop_cfg *c = p;
    vc_t x = vc_input(b, 0);
    if (!vc_training(b) || c->p <= 0.0) {
        vc_set_output(b, x);
        return;
    }
    if (c->inplace)
        vc_set_output(b, noise_dropout(b, x, c->p, vc_numel_of(b, x), true));
    else
        vc_set_output(b, vc__op_dropout(b, x, c->p));
}

static void dropout2d_emit(vc_build *b, const void *p)
{
    const drop_cfg *c = p;
    vc_t x = vc_input(b, 0);
    if (!vc_training(b) || c->p <= 0.0) {
        vc_set_output(b, x);
        return;
    }
    /* make_feature_noise: [N, C, 1, ...] */
    const vc_shape *s = vc_input_shape(b, 0);
    vc_numel noise = vc_n_sample(s->nd >= 1 ? s->d[0] : 1);
    vc_set_output(b, noise_dropout(b, x, c->p, noise, c->inplace));
}

/* ---- StochasticDepth (torchvision.ops.StochasticDepth(p, mode)) */

static int sd_parse(vc_args *a, void *p)
{
    static const char *const modes[] = {"row", "batch", NULL};
    drop_cfg *c = p;
    if (vc_arg_type(a, "p") == 0) return vc_arg_fail(a, "p", "missing (a number from 0 to 1 is required for StochasticDepth)");
    return vc_arg_float(a, "p", 0.0, 0.0, 1.0, &c->p) || vc_arg_enum(a, "mode", modes, -1, &c->mode);
}

static void sd_emit(vc_build *b, const void *p)
{
    const drop_cfg *c = p;
    vc_t x = vc_input(b, 0);
    if (!vc_training(b) || c->p <= 0.0) {
        vc_set_output(b, x);
        return;
    }
    /* noise = torch.empty(size); bernoulli_(1 - p); div_(1 - p) if > 0 */
    vc_t noise = vc__op_new(b, "empty", c->mode == 0 ? vc_n_sample(1) : vc_n_fixed(1), vc_dt_of(b, x));
    vc_set_output(b, mul_noise(b, x, noise, false));
}

const vc_kind vc_kind_Dropout = {
    .ops = 2,
    .name = "Dropout", .summary = "zeroes elements with probability p in training; keeps a bool mask",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(drop_cfg),
    .parse = drop_parse, .setup = drop_setup, .emit = dropout_emit,
};

const vc_kind vc_kind_Dropout2d = {
    .ops = 2,
    .name = "Dropout2d", .summary = "zeroes whole channels with probability p in training; keeps [N, C] noise",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(drop_cfg),
    .parse = drop_parse, .setup = drop_setup, .emit = dropout2d_emit,
};

const vc_kind vc_kind_StochasticDepth = {
    .ops = 2,
    .name = "StochasticDepth", .summary = "drops whole samples (row) or the batch with probability p; keeps the noise",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(drop_cfg),
    .parse = sd_parse, .setup = drop_setup, .emit = sd_emit,
};
