/*
 * linear.c — Linear, Identity, Flatten.
 */
#include "ops.h"

/* ---- Linear (torch/nn/modules/linear.py; aten/src/ATen/native/Linear.cpp) */

typedef struct {
    int64_t in, out;
    bool bias;
} linear_cfg;

static int linear_parse(vc_args *a, void *p)
{
    linear_cfg *c = p;
    return vc_arg_int(a, "in_features", VC_REQUIRED, 1, &c->in) ||
           vc_arg_int(a, "out_features", VC_REQUIRED, 1, &c->out) ||
           vc_arg_bool(a, "bias", true, &c->bias);
}

static int linear_setup(vc_setup *s, void *p)
{
    const linear_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->d[x->nd - 1] != c->in)
        return vc_fail(s, "in_features", "in_features is %lld but the input has %lld features (last dimension)",
                       (long long)c->in, (long long)x->d[x->nd - 1]);
    s->out = *x;
    s->out.d[x->nd - 1] = c->out;
    int64_t w;
    return vc_mul(s, c->in, c->out, &w) || vc_param2(s, "weight", c->out, c->in) || (c->bias && vc_param(s, "bias", c->out));
}

static void linear_emit(vc_build *b, const void *p)
{
    const linear_cfg *c = p;
    int64_t rows = vc_shape_numel(vc_input_shape(b, 0)) / c->in;
    vc_set_output(b, op_linear(b, vc_input(b, 0), vc_weight(b, 0), c->bias ? vc_weight(b, 1) : -1, rows, c->in, c->out));
}

const vc_kind vc_kind_Linear = {
    .name = "Linear", .summary = "y = x W^T + b over the last dimension",
    .min_inputs = 1, .max_inputs = 1, .flags = VC_KIND_TIEABLE, .cfg_size = sizeof(linear_cfg),
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
    x = op_contiguous(b, x); /* reshape of a non-viewable tensor copies */
    vc_set_output(b, op_view(b, x, vc_numel_of(b, x), true));
}

const vc_kind vc_kind_Flatten = {
    .name = "Flatten", .summary = "merges dims start_dim..end_dim (a view)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(flatten_cfg),
    .parse = flatten_parse, .setup = flatten_setup, .emit = flatten_emit,
};
