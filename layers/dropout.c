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
 *    scale_input: the drop_path of BEiT / DINOv2 (transformers' modeling_beit.py
 *    drop_path, copied into modeling_dinov2.py @ 015e68769f9823df27f5f7372dc155277e6ff7e6):
 *    random_tensor = keep_prob + torch.rand(shape, dtype=input.dtype) (rand a
 *    temporary, the sum binarized by floor_ in place), output =
 *    input.div(keep_prob) * random_tensor: the quotient an input-sized
 *    temporary that nothing saves (DivBackward0 by a scalar), the product keeps
 *    random_tensor; backward: grad * random_tensor, then its div (two new
 *    input-sized gradients).
 * p == 1 in Dropout/Dropout2d: input * zeros({}) (the scalar is kept).
 */
#include "ops.h"

typedef struct {
    double p;
    bool inplace;
    int mode; /* StochasticDepth: 0 row, 1 batch */
    bool scale_input; /* StochasticDepth: input.div(keep_prob) * noise (drop_path) */
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
    return vc_arg_float(a, "p", 0.0, 0.0, 1.0, &c->p) || vc_arg_enum(a, "mode", modes, -1, &c->mode) ||
           vc_arg_bool(a, "scale_input", false, &c->scale_input);
}

static int sd_setup(vc_setup *s, void *p)
{
    const drop_cfg *c = p;
    if (c->scale_input) {
        if (c->p >= 1.0) return vc_fail(s, "p", "1 with scale_input: input.div(keep_prob) divides by 0");
        s->ops = 4; /* rand, add, div, mul */
    }
    return drop_setup(s, p);
}

static void sd_emit(vc_build *b, const void *p)
{
    const drop_cfg *c = p;
    vc_t x = vc_input(b, 0);
    if (!vc_training(b) || c->p <= 0.0) {
        vc_set_output(b, x);
        return;
    }
    const vc_numel n = c->mode == 0 ? vc_n_sample(1) : vc_n_fixed(1);
    if (c->scale_input) { /* drop_path: keep_prob + rand, floor_; input.div(keep_prob) * random_tensor */
        vc_t r = vc__op_new(b, "rand", n, vc_dt_of(b, x));
        vc_t noise = vc__op_nograd(b, "add", r, -1, n, vc_dt_of(b, x));
        vc_set_output(b, mul_noise(b, vc__op_fresh(b, "div", x, vc_numel_of(b, x)), noise, false));
        return;
    }
    /* noise = torch.empty(size); bernoulli_(1 - p); div_(1 - p) if > 0 */
    vc_t noise = vc__op_new(b, "empty", n, vc_dt_of(b, x));
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
    .parse = sd_parse, .setup = sd_setup, .emit = sd_emit,
};
