/*
 * merge.c — Add, Mul, Cat: layers with several inputs.
 *
 * Add and Mul broadcast as PyTorch does, right-aligned with the batch dim
 * included; since every input carries the batch dim, per-sample shapes
 * must have the same rank (a rank difference would align the batch dim
 * against a data dim). `inplace: true` writes into the first input
 * (`out += identity`), whose shape must then be the result's.
 */
#include <stdio.h>

#include "ops.h"

typedef struct {
    bool inplace;
    int64_t dim;
    int d; /* per-sample cat dim, set by setup */
    bool keep; /* Cat: keep_forward, the output a local of the model's forward until it returns, loss included */
} merge_cfg;

static int eltwise_parse(vc_args *a, void *p) { return vc_arg_bool(a, "inplace", false, &((merge_cfg *)p)->inplace); }

static int broadcast_setup(vc_setup *s, void *p)
{
    const merge_cfg *c = p;
    char a[96], b[96];
    s->out = s->in[0];
    for (int i = 1; i < s->nin; i++) {
        const vc_shape *x = &s->in[i];
        vc_shape was = s->out; /* the shapes in a message are formatted only when there is one */
        if (x->nd != s->out.nd) {
            vc_shape_str(&was, a, sizeof a);
            vc_shape_str(x, b, sizeof b);
            return vc_fail(s, "inputs", "inputs must have the same number of dimensions per sample to broadcast, got %s and %s", a, b);
        }
        for (int d = 0; d < x->nd; d++) {
            if (x->d[d] == s->out.d[d] || x->d[d] == 1) continue;
            if (s->out.d[d] == 1) {
                s->out.d[d] = x->d[d];
                continue;
            }
            vc_shape_str(&was, a, sizeof a);
            vc_shape_str(x, b, sizeof b);
            return vc_fail(s, "inputs", "shapes %s and %s do not broadcast (dimension %d: %lld vs %lld)", a, b, d + 1,
                           (long long)s->out.d[d], (long long)x->d[d]);
        }
    }
    if (c->inplace && !vc_shape_eq(&s->out, &s->in[0])) {
        vc_shape_str(&s->in[0], a, sizeof a);
        vc_shape_str(&s->out, b, sizeof b);
        return vc_fail(s, "inplace", "an in-place result must keep the first input's shape %s, but broadcasting gives %s", a, b);
    }
    return 0;
}

static void eltwise_emit(vc_build *b, const merge_cfg *c, bool mul)
{
    vc_numel out = vc_n_sample(vc_shape_numel(vc_output_shape(b)));
    vc_t y = vc_input(b, 0);
    for (int i = 1; vc_input(b, i) >= 0; i++) {
        bool inplace = c->inplace && i == 1;
        y = mul ? vc__op_mul(b, y, vc_input(b, i), out, inplace) : vc__op_add(b, y, vc_input(b, i), out, inplace || (c->inplace && i > 1));
    }
    vc_set_output(b, y);
}

static void add_emit(vc_build *b, const void *p) { eltwise_emit(b, p, false); }
static void mul_emit(vc_build *b, const void *p) { eltwise_emit(b, p, true); }

const vc_kind vc_kind_Add = {
    .ops = 2,
    .name = "Add", .summary = "sum of 2+ inputs with broadcasting; inplace: out += other",
    .min_inputs = 2, .max_inputs = VC_MAX_INPUTS, .cfg_size = sizeof(merge_cfg),
    .parse = eltwise_parse, .setup = broadcast_setup, .emit = add_emit,
};

const vc_kind vc_kind_Mul = {
    .ops = 1,
    .name = "Mul", .summary = "product of 2 inputs with broadcasting (gates); saves each for the other's grad",
    .min_inputs = 2, .max_inputs = 2, .cfg_size = sizeof(merge_cfg),
    .parse = eltwise_parse, .setup = broadcast_setup, .emit = mul_emit,
};

/* ---- Cat: saves nothing; backward hands each input a narrow view of the grad */

static int cat_parse(vc_args *a, void *p)
{
    return vc_arg_int(a, "dim", VC_REQUIRED, INT64_MIN + 1, &((merge_cfg *)p)->dim) ||
           vc_arg_bool(a, "keep_forward", false, &((merge_cfg *)p)->keep);
}

static int cat_setup(vc_setup *s, void *p)
{
    merge_cfg *c = p;
    const vc_shape *x0 = &s->in[0];
    int d = vc_dim_index(c->dim, x0->nd);
    if (d == -2) return vc_fail(s, "dim", "Cat along the batch dimension (dim 0) is not supported");
    if (d < 0) return vc_fail(s, "dim", "dim %lld is out of range for %d-dimensional inputs (with the batch)", (long long)c->dim, x0->nd + 1);
    c->d = d;
    s->out = *x0;
    for (int i = 1; i < s->nin; i++) {
        const vc_shape *x = &s->in[i];
        char a[96], b[96];
        vc_shape_str(x0, a, sizeof a);
        vc_shape_str(x, b, sizeof b);
        if (x->nd != x0->nd)
            return vc_fail(s, "inputs", "Cat needs inputs of the same rank, got %s and %s", a, b);
        for (int k = 0; k < x->nd; k++)
            if (k != d && x->d[k] != x0->d[k])
                return vc_fail(s, "inputs", "Cat needs equal shapes except along dim %lld, got %s and %s", (long long)c->dim, a, b);
        if (vc_add(s, s->out.d[d], x->d[d], &s->out.d[d])) return -1;
    }
    return 0;
}

static void cat_emit(vc_build *b, const void *p)
{
    vc_op *o = vc_op_begin(b, "cat");
    for (int i = 0; vc_input(b, i) >= 0; i++) {
        int k = vc_op_in(o, vc_input(b, i));
        vc_op_grad(o, k, VC_GRAD_PASS);
    }
    vc_t y = vc_op_out(o, vc_n_sample(vc_shape_numel(vc_output_shape(b))), vc_dt_of(b, vc_input(b, 0)));
    vc_op_end(o);
    if (((const merge_cfg *)p)->keep) vc_keep_forward(b, y); /* e.g. PaliGemma's merged inputs_embeds */
    vc_set_output(b, y);
}

const vc_kind vc_kind_Cat = {
    .ops = 1,
    .name = "Cat", .summary = "concatenation along dim (required); saves nothing",
    .min_inputs = 1, /* torch.cat([x], 1) is a copy (DenseNet's first dense layer) */ .max_inputs = VC_MAX_INPUTS, .cfg_size = sizeof(merge_cfg),
    .parse = cat_parse, .setup = cat_setup, .emit = cat_emit,
};
