/*
 * conv.c — Conv1d/2d/3d, ConvTranspose1d/2d/3d.
 *
 * Follows torch/nn/modules/conv.py: a non-"zeros" padding_mode pads the
 * input explicitly with F.pad (reflection_pad / replication_pad /
 * _pad_circular: a padded copy, which the convolution then saves instead of
 * the input), then convolves with padding 0. padding="same" with zeros
 * padding goes through aten's _convolution_mode: symmetric padding is passed
 * to the convolution, an odd total padding (even effective kernel) first
 * makes a constant_pad_nd copy one element larger on the right of that dim
 * (docs/autograd.md §3.1, unverified there). The convolution itself is vc__op_conv
 * (saves input and weight; docs/autograd.md §3.1).
 */
#include <stdio.h>

#include "ops.h"

enum { PAD_INTS, PAD_SAME, PAD_VALID };
enum { MODE_ZEROS, MODE_REFLECT, MODE_REPLICATE, MODE_CIRCULAR };

typedef struct {
    int nd; /* spatial dims: 1, 2, 3 */
    bool transposed;
    int64_t in, out, groups;
    int64_t k[3], stride[3], pad[3], opad[3], dil[3];
    int padstr; /* PAD_* */
    int mode;   /* MODE_* (padding_mode) */
    bool bias;
} conv_cfg;

static const char *const kind_names[2][3] = {{"Conv1d", "Conv2d", "Conv3d"},
                                             {"ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"}};

static int conv_parse(vc_args *a, conv_cfg *c, int nd, bool transposed)
{
    static const char *const pad_strings[] = {"same", "valid", NULL};
    static const char *const modes[] = {"zeros", "reflect", "replicate", "circular", NULL};
    const char *kind = kind_names[transposed][nd - 1];
    c->nd = nd;
    c->transposed = transposed;
    if (vc_arg_int(a, "in_channels", VC_REQUIRED, 1, &c->in) || vc_arg_int(a, "out_channels", VC_REQUIRED, 1, &c->out) ||
        vc_arg_ints(a, "kernel_size", nd, VC_REQUIRED, 1, c->k) || vc_arg_ints(a, "stride", nd, 1, 1, c->stride) ||
        vc_arg_ints(a, "dilation", nd, 1, 1, c->dil) || vc_arg_int(a, "groups", 1, 1, &c->groups) ||
        vc_arg_bool(a, "bias", true, &c->bias) || vc_arg_enum(a, "padding_mode", modes, MODE_ZEROS, &c->mode))
        return -1;
    c->padstr = PAD_INTS;
    if (vc_arg_type(a, "padding") == 2) {
        int which;
        if (vc_arg_enum(a, "padding", pad_strings, 0, &which)) return -1;
        if (transposed)
            return vc_arg_fail(a, "padding", "%s takes an integer padding (\"same\"/\"valid\" are for Conv only)", kind);
        c->padstr = which == 0 ? PAD_SAME : PAD_VALID;
        for (int i = 0; i < nd; i++) c->pad[i] = 0;
    } else if (vc_arg_ints(a, "padding", nd, 0, 0, c->pad)) {
        return -1;
    }
    for (int i = 0; i < nd; i++) c->opad[i] = 0;
    if (transposed && vc_arg_ints(a, "output_padding", nd, 0, 0, c->opad)) return -1;
    if (c->in % c->groups)
        return vc_arg_fail(a, "groups", "in_channels (%lld) must be divisible by groups (%lld)", (long long)c->in,
                           (long long)c->groups);
    if (c->out % c->groups)
        return vc_arg_fail(a, "groups", "out_channels (%lld) must be divisible by groups (%lld)", (long long)c->out,
                           (long long)c->groups);
    if (c->padstr == PAD_SAME)
        for (int i = 0; i < nd; i++)
            if (c->stride[i] != 1)
                return vc_arg_fail(a, "padding", "padding=\"same\" is not supported for strided convolutions (stride %lld)",
                                   (long long)c->stride[i]);
    if (transposed && c->mode != MODE_ZEROS)
        return vc_arg_fail(a, "padding_mode", "only \"zeros\" padding mode is supported for %s", kind);
    for (int i = 0; i < nd; i++)
        if (c->opad[i] >= c->stride[i] && c->opad[i] >= c->dil[i])
            return vc_arg_fail(a, "output_padding",
                               "output_padding (%lld) must be smaller than either stride (%lld) or dilation (%lld)",
                               (long long)c->opad[i], (long long)c->stride[i], (long long)c->dil[i]);
    return 0;
}

/* Padding of spatial dim i: lo/hi applied explicitly (F.pad / constant_pad_nd)
 * and sym passed to the convolution. Returns -1 on overflow (after vc_fail
 * when s is given). */
typedef struct {
    int64_t lo[3], hi[3], sym[3];
    bool explicit_pad; /* a padded copy is made before the convolution */
} conv_geom;

static int conv_geometry(vc_setup *s, const conv_cfg *c, conv_geom *g)
{
    g->explicit_pad = c->mode != MODE_ZEROS; /* F.pad runs even when all pads are 0 */
    for (int i = 0; i < c->nd; i++) {
        int64_t l = c->pad[i], r = c->pad[i];
        if (c->padstr == PAD_SAME) { /* _conv_same / pooling_same_mode_padding_lr */
            int64_t total;
            if (s ? vc_mul(s, c->dil[i], c->k[i] - 1, &total) : __builtin_mul_overflow(c->dil[i], c->k[i] - 1, &total))
                return -1;
            l = total / 2;
            r = total - l;
        }
        if (c->mode != MODE_ZEROS) {
            g->lo[i] = l;
            g->hi[i] = r;
            g->sym[i] = 0;
        } else if (l != r) { /* _convolution_mode: constant_pad_nd by the difference */
            g->lo[i] = 0;
            g->hi[i] = r - l;
            g->sym[i] = l;
            g->explicit_pad = true;
        } else {
            g->lo[i] = g->hi[i] = 0;
            g->sym[i] = l;
        }
    }
    return 0;
}

static int conv_setup(vc_setup *s, void *p)
{
    const conv_cfg *c = p;
    const vc_shape *x = &s->in[0];
    const char *kind = kind_names[c->transposed][c->nd - 1];
    char xs[160];
    if (x->nd != c->nd + 1) { /* the shape's text only for the message */
        vc_shape_str(x, xs, sizeof xs);
        return vc_fail(s, NULL, "%s expects a %d-dimensional input per sample ([C%s]), got %s", kind, c->nd + 1,
                       c->nd == 1 ? ", L" : c->nd == 2 ? ", H, W" : ", D, H, W", xs);
    }
    if (x->d[0] != c->in)
        return vc_fail(s, "in_channels", "in_channels is %lld but the input has %lld channels", (long long)c->in,
                       (long long)x->d[0]);
    conv_geom g;
    if (conv_geometry(s, c, &g)) return -1;
    s->out.nd = x->nd;
    s->out.d[0] = c->out;
    for (int i = 0; i < c->nd; i++) {
        int64_t n = x->d[i + 1], span, o;
        if (c->mode == MODE_REFLECT && (g.lo[i] >= n || g.hi[i] >= n))
            return vc_fail(s, "padding", "reflect padding (%lld, %lld) must be less than the input size %lld in dim %d",
                           (long long)g.lo[i], (long long)g.hi[i], (long long)n, i + 2);
        if (c->mode == MODE_CIRCULAR && (g.lo[i] > n || g.hi[i] > n))
            return vc_fail(s, "padding", "circular padding (%lld, %lld) wraps around more than once (input size %lld in dim %d)",
                           (long long)g.lo[i], (long long)g.hi[i], (long long)n, i + 2);
        if (vc_mul(s, c->dil[i], c->k[i] - 1, &span)) return -1; /* effective kernel - 1 */
        if (c->transposed) {
            /* (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1 */
            if (vc_mul(s, n - 1, c->stride[i], &o) || vc_add(s, o, span, &o) || vc_add(s, o, c->opad[i] + 1, &o)) return -1;
            o -= 2 * c->pad[i];
            if (o < 1)
                return vc_fail(s, "padding", "the output size in dim %d would be %lld (input %lld, padding %lld): too small",
                               i + 2, (long long)o, (long long)n, (long long)c->pad[i]);
        } else {
            int64_t padded;
            if (vc_add(s, n, g.lo[i] + g.hi[i], &padded) || vc_add(s, padded, 2 * g.sym[i], &padded)) return -1;
            if (padded <= span)
                return vc_fail(s, "kernel_size", "the kernel (%lld with dilation) is larger than the padded input (%lld) in dim %d",
                               (long long)(span + 1), (long long)padded, i + 2);
            o = (padded - span - 1) / c->stride[i] + 1;
        }
        s->out.d[i + 1] = o;
    }
    /* the explicitly padded copy must be representable */
    int64_t pn = x->d[0];
    for (int i = 0; i < c->nd; i++)
        if (vc_mul(s, pn, x->d[i + 1] + g.lo[i] + g.hi[i], &pn)) return -1;
    /* weight: [out, in/groups, *k] (conv), [in, out/groups, *k] (transposed) */
    int64_t w;
    if (vc_mul(s, c->transposed ? c->in : c->out, c->transposed ? c->out / c->groups : c->in / c->groups, &w)) return -1;
    for (int i = 0; i < c->nd; i++)
        if (vc_mul(s, w, c->k[i], &w)) return -1;
    int64_t dims[VC_MAX_DIMS] = {c->transposed ? c->in : c->out, c->transposed ? c->out / c->groups : c->in / c->groups};
    for (int i = 0; i < c->nd; i++) dims[2 + i] = c->k[i];
    return vc_param_shape(s, "weight", 2 + c->nd, dims, 0) || (c->bias && vc_param(s, "bias", c->out));
}

/* F.pad / constant_pad_nd: a padded copy of x. reflection_pad and
 * replication_pad save their input (derivatives.yaml: *_pad*d_backward(grad,
 * self, padding)); constant_pad_nd saves nothing (its backward narrows and
 * clones the gradient: a new x-sized tensor). _pad_circular is composite
 * (new_empty + slice copy_s): nothing saved; its CopySlices backward makes a
 * padded-size copy of the gradient (guess: one such temporary). */
static vc_t pad_op(vc_build *b, vc_t x, int mode, int64_t padded)
{
    static const char *const names[] = {"constant_pad_nd", "reflection_pad", "replication_pad", "_pad_circular"};
    vc_op *o = vc_op_begin(b, names[mode]);
    vc_op_in(o, x);
    if (!vc_contiguous(b, x) && (mode == MODE_REFLECT || mode == MODE_REPLICATE))
        vc_op_ftemp(o, vc_numel_of(b, x), vc_dt_of(b, x)); /* kernels read input.contiguous() */
    vc_t y = vc_op_out(o, vc_n_sample(padded), vc_dt_of(b, x));
    if (mode == MODE_REFLECT || mode == MODE_REPLICATE) vc_op_save(o, x);
    if (mode == MODE_CIRCULAR) vc_op_btemp(o, vc_n_sample(padded), vc_dt_of(b, x));
    vc_op_end(o);
    return y;
}

static void conv_emit(vc_build *b, const void *p)
{
    const conv_cfg *c = p;
    const vc_shape *xs = vc_input_shape(b, 0);
    vc_t x = vc_input(b, 0);
    conv_geom g;
    conv_geometry(NULL, c, &g); /* checked by setup */
    if (g.explicit_pad) {
        int64_t padded = xs->d[0];
        for (int i = 0; i < c->nd; i++) padded *= xs->d[i + 1] + g.lo[i] + g.hi[i];
        x = pad_op(b, x, c->mode, padded);
    }
    vc_numel yn = vc_n_sample(vc_shape_numel(vc_output_shape(b)));
    vc_set_output(b, vc__op_conv(b, x, vc_weight(b, 0), c->bias ? vc_weight(b, 1) : -1, yn));
}

#define CONV_KIND(NAME, ND, TR, SUMMARY)                                                   \
    static int NAME##_parse(vc_args *a, void *p) { return conv_parse(a, p, ND, TR); }    \
    const vc_kind vc_kind_##NAME = {                                                     \
        .ops = 5,                                                                        \
        .name = #NAME, .summary = SUMMARY, .min_inputs = 1, .max_inputs = 1,             \
        .cfg_size = sizeof(conv_cfg), .parse = NAME##_parse, .setup = conv_setup, .emit = conv_emit, \
    };

CONV_KIND(Conv1d, 1, false, "1-d convolution over [C, L]; keeps its input")
CONV_KIND(Conv2d, 2, false, "2-d convolution over [C, H, W]; keeps its input")
CONV_KIND(Conv3d, 3, false, "3-d convolution over [C, D, H, W]; keeps its input")
CONV_KIND(ConvTranspose1d, 1, true, "1-d transposed convolution over [C, L]; keeps its input")
CONV_KIND(ConvTranspose2d, 2, true, "2-d transposed convolution over [C, H, W]; keeps its input")
CONV_KIND(ConvTranspose3d, 3, true, "3-d transposed convolution over [C, D, H, W]; keeps its input")
