/*
 * resample.c — Upsample, PixelShuffle.
 *
 * Upsample is F.interpolate (torch/nn/functional.py): upsample_nearest{1,2,3}d,
 * _upsample_nearest_exact{1,2,3}d, upsample_linear1d, upsample_bilinear2d,
 * upsample_bicubic2d, upsample_trilinear3d save nothing (sizes only); the
 * backward allocates a gradient of the input's size; all are on autocast's
 * fp32 list (docs/autograd.md §3.15, §9). mode="area" is adaptive_avg_pool{1,2,3}d
 * (saves its input; a mean when the output is all ones). The output size is
 * size, or floor(in * scale_factor).
 *
 * PixelShuffle is pixel_shuffle: its CUDA forward is the composite
 * reshape/permute/reshape, one output-sized copy; nothing saved; backward
 * pixel_unshuffle(grad), an input-sized tensor (docs/autograd.md §3.15).
 */
#include <math.h>
#include <stdio.h>

#include "ops.h"

/* ---- Upsample */

enum { M_NEAREST, M_LINEAR, M_BILINEAR, M_BICUBIC, M_TRILINEAR, M_NEAREST_EXACT, M_AREA };
static const char *const modes[] = {"nearest", "linear", "bilinear", "bicubic", "trilinear", "nearest-exact", "area", NULL};

typedef struct {
    int mode;
    int nsize, nscale;  /* 0 absent, else how many values given */
    bool size_list, scale_list; /* given as a list (its length must be the spatial dims) */
    int64_t size[3];
    double scale[3];
    int align;          /* -1 None, 0 false, 1 true */
    int recompute;      /* -1 None, 0 false, 1 true */
} upsample_cfg;

static int opt_bool(vc_args *a, const char *key, int *out)
{
    int t = vc_arg_type(a, key);
    if (t == 0 || t == 5) {
        *out = -1;
        return 0;
    }
    bool v;
    if (vc_arg_bool(a, key, false, &v)) return -1;
    *out = v;
    return 0;
}

static int upsample_parse(vc_args *a, void *p)
{
    upsample_cfg *c = p;
    if (vc_arg_enum(a, "mode", modes, M_NEAREST, &c->mode) || opt_bool(a, "align_corners", &c->align) ||
        opt_bool(a, "recompute_scale_factor", &c->recompute))
        return -1;
    int st = vc_arg_type(a, "size");
    c->nsize = 0;
    c->size_list = c->scale_list = false;
    if (st == 1) {
        if (vc_arg_int(a, "size", 0, 1, &c->size[0])) return -1;
        c->nsize = 1;
        c->size_list = false;
    } else if (st == 3) {
        int64_t l[VC_MAX_DIMS];
        int n;
        if (vc_arg_list(a, "size", false, 1, l, &n)) return -1;
        if (n > 3) return vc_arg_fail(a, "size", "expected 1 to 3 output sizes (one per spatial dim), got %d", n);
        for (int i = 0; i < n; i++) c->size[i] = l[i];
        c->nsize = n;
        c->size_list = true;
    } else if (st != 0 && st != 5) {
        int64_t dummy;
        return vc_arg_int(a, "size", 0, 1, &dummy); /* reports the wrong type */
    }
    int vt = vc_arg_type(a, "scale_factor");
    c->nscale = 0;
    if (vt == 1) {
        if (vc_arg_float(a, "scale_factor", 1.0, 0.0, 1e12, &c->scale[0])) return -1;
        if (c->scale[0] <= 0) return vc_arg_fail(a, "scale_factor", "expected a positive number, got %g", c->scale[0]);
        c->nscale = 1;
        c->scale_list = false;
    } else if (vt == 3) {
        int n = vc_arg_len(a, "scale_factor");
        if (n < 1 || n > 3) return vc_arg_fail(a, "scale_factor", "expected 1 to 3 scale factors (one per spatial dim), got %d", n);
        for (int i = 0; i < n; i++) {
            char key[32];
            snprintf(key, sizeof key, "scale_factor[%d]", i);
            double x = 0;
            if (vc_arg_elem(a, "scale_factor", i, &x) != 1 || !(x > 0 && x <= 1e12))
                return vc_arg_fail(a, key, "expected a positive number");
            c->scale[i] = x;
        }
        c->nscale = n;
        c->scale_list = true;
    } else if (vt != 0 && vt != 5) {
        return vc_arg_fail(a, "scale_factor", "expected a number or a list of numbers");
    }
    if (c->nsize && c->nscale) return vc_arg_fail(a, NULL, "only one of size or scale_factor should be defined");
    if (!c->nsize && !c->nscale) return vc_arg_fail(a, NULL, "either size or scale_factor should be defined");
    if (c->recompute == 1 && c->nsize)
        return vc_arg_fail(a, "recompute_scale_factor", "recompute_scale_factor is not meaningful with an explicit size");
    if (c->align >= 0 && (c->mode == M_NEAREST || c->mode == M_NEAREST_EXACT || c->mode == M_AREA))
        return vc_arg_fail(a, "align_corners",
                           "align_corners can only be set with the interpolating modes linear, bilinear, bicubic, trilinear");
    return 0;
}

static int upsample_setup(vc_setup *s, void *p)
{
    const upsample_cfg *c = p;
    const vc_shape *x = &s->in[0];
    int dim = x->nd - 1; /* spatial dims: F.interpolate's input.dim() - 2 */
    char xs[160];
    vc_shape_str(x, xs, sizeof xs);
    if (dim < 1 || dim > 3)
        return vc_fail(s, NULL, "Upsample takes [C, L], [C, H, W] or [C, D, H, W] per sample, got %s", xs);
    static const int need[M_AREA + 1] = {[M_LINEAR] = 1, [M_BILINEAR] = 2, [M_BICUBIC] = 2, [M_TRILINEAR] = 3};
    if (need[c->mode] && need[c->mode] != dim)
        return vc_fail(s, "mode", "mode \"%s\" needs a %dD input (with the batch), got %dD %s", modes[c->mode],
                       need[c->mode] + 2, dim + 2, xs);
    if (c->size_list && c->nsize != dim)
        return vc_fail(s, "size", "the input has %d spatial dims but size has %d entries", dim, c->nsize);
    if (c->scale_list && c->nscale != dim)
        return vc_fail(s, "scale_factor", "the input has %d spatial dims but scale_factor has %d entries", dim, c->nscale);
    s->out = *x;
    for (int i = 0; i < dim; i++) {
        int64_t n = x->d[i + 1], o;
        if (c->nsize) {
            o = c->size[c->size_list ? i : 0];
        } else {
            double f = floor((double)n * c->scale[c->scale_list ? i : 0]);
            if (f > (double)VC_MAX_DIM_SIZE)
                return vc_fail(s, "scale_factor", "the output size %g in dim %d is larger than the limit 2^40", f, i + 2);
            o = (int64_t)f;
            if (o < 1)
                return vc_fail(s, "scale_factor", "the output size in dim %d would be %lld (input %lld): must be positive",
                               i + 2, (long long)o, (long long)n);
        }
        s->out.d[i + 1] = o;
    }
    return 0;
}

static void upsample_emit(vc_build *b, const void *p)
{
    const upsample_cfg *c = p;
    int dim = vc_input_shape(b, 0)->nd - 1;
    const vc_shape *ys = vc_output_shape(b);
    vc_numel yn = vc_n_sample(vc_shape_numel(ys));
    vc_t x = vc_input(b, 0);
    if (c->mode == M_AREA) { /* adaptive_avg_pool{1,2,3}d(input, output_size) */
        bool ones = true;
        for (int i = 0; i < dim; i++) ones &= ys->d[i + 1] == 1;
        if (ones) {
            vc_set_output(b, vc__op_mean(b, x, yn));
            return;
        }
        vc_op *o = vc_op_begin(b, dim == 3 ? "_adaptive_avg_pool3d" : "_adaptive_avg_pool2d");
        vc_op_in(o, x);
        if (!vc_contiguous(b, x)) vc_op_ftemp(o, vc_numel_of(b, x), vc_dt_of(b, x));
        vc_t y = vc_op_out(o, yn, vc_dt_of(b, x));
        vc_op_save(o, x);
        vc_op_end(o);
        vc_set_output(b, y);
        return;
    }
    static const char *const ops[][3] = {
        [M_NEAREST] = {"upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d"},
        [M_LINEAR] = {"upsample_linear1d", "", ""},
        [M_BILINEAR] = {"", "upsample_bilinear2d", ""},
        [M_BICUBIC] = {"", "upsample_bicubic2d", ""},
        [M_TRILINEAR] = {"", "", "upsample_trilinear3d"},
        [M_NEAREST_EXACT] = {"_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d"},
    };
    x = vc__op_autocast_f32(b, x); /* autocast's fp32 list */
    vc_op *o = vc_op_begin(b, ops[c->mode][dim - 1]);
    vc_op_in(o, x);
    if (!vc_contiguous(b, x)) vc_op_ftemp(o, vc_numel_of(b, x), vc_dt_of(b, x)); /* input.contiguous() */
    vc_t y = vc_op_out(o, yn, vc_dt_of(b, x));
    vc_op_end(o);
    vc_set_output(b, y);
}

const vc_kind vc_kind_Upsample = {
    .ops = 1,
    .name = "Upsample", .summary = "interpolation to size or scale_factor (nearest/linear/bilinear/bicubic/trilinear)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(upsample_cfg),
    .parse = upsample_parse, .setup = upsample_setup, .emit = upsample_emit,
};

/* ---- PixelShuffle: [*, C*r^2, H, W] -> [*, C, H*r, W*r] */

typedef struct {
    int64_t r;
} shuffle_cfg;

static int shuffle_parse(vc_args *a, void *p)
{
    return vc_arg_int(a, "upscale_factor", VC_REQUIRED, 1, &((shuffle_cfg *)p)->r);
}

static int shuffle_setup(vc_setup *s, void *p)
{
    const shuffle_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->nd < 3) {
        char xs[160];
        vc_shape_str(x, xs, sizeof xs);
        return vc_fail(s, NULL, "PixelShuffle takes [..., C, H, W] per sample (the batch may not be the channel dim), got %s", xs);
    }
    int64_t r2;
    if (vc_mul(s, c->r, c->r, &r2)) return -1;
    int ci = x->nd - 3;
    if (x->d[ci] % r2)
        return vc_fail(s, "upscale_factor", "the input's %lld channels are not divisible by upscale_factor^2 = %lld",
                       (long long)x->d[ci], (long long)r2);
    s->out = *x;
    s->out.d[ci] = x->d[ci] / r2;
    return vc_mul(s, x->d[ci + 1], c->r, &s->out.d[ci + 1]) || vc_mul(s, x->d[ci + 2], c->r, &s->out.d[ci + 2]);
}

static void shuffle_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0);
    vc_op *o = vc_op_begin(b, "pixel_shuffle");
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_end(o);
    vc_set_output(b, y);
}

const vc_kind vc_kind_PixelShuffle = {
    .ops = 1,
    .name = "PixelShuffle", .summary = "[C*r^2, H, W] -> [C, H*r, W*r] (one copy; keeps nothing)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(shuffle_cfg),
    .parse = shuffle_parse, .setup = shuffle_setup, .emit = shuffle_emit,
};
