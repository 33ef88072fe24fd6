/*
 * pooling.c — MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d,
 * AdaptiveMaxPool1d/2d.
 *
 * aten ops on CUDA (docs/autograd.md §3.11): max_pool{2,3}d_with_indices (1d via
 * the 2d op on an unsqueezed view) save their input and keep int64 indices
 * shaped like the output; in inference the indices are still allocated and
 * dropped when the op returns. avg_pool{2,3}d (1d via 2d) and
 * _adaptive_avg_pool{2,3}d save their input; adaptive_max_pool2d saves its
 * input and its indices. Adaptive average pooling to an output of all ones
 * is input.mean(spatial dims, keepdim) and saves nothing. Pooling is on no
 * autocast list on CUDA: it runs in the input dtype. The CUDA kernels read
 * input.contiguous(): a non-contiguous input costs a transient copy.
 */
#include <stdio.h>

#include "ops.h"

enum { P_MAX, P_AVG, P_AMAX, P_AAVG };

typedef struct {
    int nd; /* spatial dims */
    int type;
    int64_t k[3], stride[3], pad[3], dil[3];
    int64_t osize[3]; /* adaptive: -1 keeps the input size */
    bool ceil, ret_idx, count_pad, has_div;
    int64_t divisor;
} pool_cfg;

static const char *const pool_names[4][3] = {{"MaxPool1d", "MaxPool2d", "MaxPool3d"},
                                             {"AvgPool1d", "AvgPool2d", "AvgPool3d"},
                                             {"AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"},
                                             {"AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d"}};

/* kernel_size, stride (None: kernel_size), padding; pad <= kernel / 2 as aten's pool*_shape_check */
static int parse_window(vc_args *a, pool_cfg *c)
{
    if (vc_arg_ints(a, "kernel_size", c->nd, VC_REQUIRED, 1, c->k)) return -1;
    int st = vc_arg_type(a, "stride");
    if (st == 0 || st == 5) { /* absent or null: stride = kernel_size */
        for (int i = 0; i < c->nd; i++) c->stride[i] = c->k[i];
    } else if (vc_arg_ints(a, "stride", c->nd, 0, 1, c->stride)) {
        return -1;
    }
    if (vc_arg_ints(a, "padding", c->nd, 0, 0, c->pad) || vc_arg_bool(a, "ceil_mode", false, &c->ceil)) return -1;
    for (int i = 0; i < c->nd; i++)
        if (c->pad[i] > c->k[i] / 2)
            return vc_arg_fail(a, "padding", "padding (%lld) must be at most half of kernel_size (%lld)", (long long)c->pad[i],
                               (long long)c->k[i]);
    return 0;
}

static int maxpool_parse(vc_args *a, pool_cfg *c, int nd)
{
    c->nd = nd;
    c->type = P_MAX;
    return parse_window(a, c) || vc_arg_ints(a, "dilation", nd, 1, 1, c->dil) ||
           vc_arg_bool(a, "return_indices", false, &c->ret_idx);
}

static int avgpool_parse(vc_args *a, pool_cfg *c, int nd)
{
    c->nd = nd;
    c->type = P_AVG;
    for (int i = 0; i < nd; i++) c->dil[i] = 1;
    if (parse_window(a, c) || vc_arg_bool(a, "count_include_pad", true, &c->count_pad)) return -1;
    c->has_div = false;
    if (nd > 1 && vc_arg_type(a, "divisor_override") != 0 && vc_arg_type(a, "divisor_override") != 5) {
        if (vc_arg_int(a, "divisor_override", 0, INT64_MIN + 1, &c->divisor)) return -1;
        if (c->divisor == 0) return vc_arg_fail(a, "divisor_override", "divisor must be not zero");
        c->has_div = true;
    }
    return 0;
}

/* output_size: an int, or a list of nd ints where (2d/3d only) null keeps the input size */
static int adaptive_parse(vc_args *a, pool_cfg *c, int nd, bool max)
{
    c->nd = nd;
    c->type = max ? P_AMAX : P_AAVG;
    if (max && vc_arg_bool(a, "return_indices", false, &c->ret_idx)) return -1;
    if (vc_arg_type(a, "output_size") != 3) return vc_arg_ints(a, "output_size", nd, VC_REQUIRED, 0, c->osize);
    int n = vc_arg_len(a, "output_size");
    if (n != nd) return vc_arg_fail(a, "output_size", "expected an integer or a list of %d, got a list of %d", nd, n);
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "output_size[%d]", i);
        double x = 0;
        int t = vc_arg_elem(a, "output_size", i, &x);
        if (t == 5 && nd > 1) {
            c->osize[i] = -1;
            continue;
        }
        if (t != 1 || !(x >= 0 && x <= (double)VC_MAX_DIM_SIZE) || x != (double)(int64_t)x)
            return vc_arg_fail(a, key, nd > 1 ? "expected a non-negative integer or null (null keeps the input size)"
                                              : "expected a non-negative integer (null entries are for 2d/3d adaptive pooling)");
        c->osize[i] = (int64_t)x;
    }
    return 0;
}

/* aten pooling_output_shape: floor (or ceil) of the window count, and in ceil
 * mode the last window must start inside the input or its left padding. */
static int window_count(vc_setup *s, int64_t n, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil,
                        int64_t *out)
{
    int64_t span, num;
    if (vc_mul(s, dil, k - 1, &span) || vc_add(s, n, 2 * pad, &num)) return -1;
    num = num - span - 1 + (ceil ? stride - 1 : 0);
    int64_t o = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1; /* div_rtn */
    if (ceil && (o - 1) * stride >= n + pad) o--;
    *out = o;
    return 0;
}

static int pool_setup(vc_setup *s, void *p)
{
    const pool_cfg *c = p;
    const vc_shape *x = &s->in[0];
    const char *kind = pool_names[c->type][c->nd - 1];
    if (x->nd != c->nd && x->nd != c->nd + 1) {
        char xs[160];
        vc_shape_str(x, xs, sizeof xs);
        return vc_fail(s, NULL, "%s expects a %d- or %d-dimensional input per sample, got %s", kind, c->nd, c->nd + 1, xs);
    }
    int off = x->nd - c->nd; /* first pooled dim */
    s->out = *x;
    for (int i = 0; i < c->nd; i++) {
        int64_t n = x->d[off + i], o;
        if (c->type == P_AMAX || c->type == P_AAVG) {
            o = c->osize[i] < 0 ? n : c->osize[i];
        } else {
            if (window_count(s, n, c->k[i], c->pad[i], c->stride[i], c->dil[i], c->ceil, &o)) return -1;
            if (o < 1)
                return vc_fail(s, "kernel_size", "the output size in dim %d would be %lld (input %lld, kernel %lld, padding %lld): too small",
                               off + i + 1, (long long)o, (long long)n, (long long)c->k[i], (long long)c->pad[i]);
        }
        s->out.d[off + i] = o;
    }
    return 0;
}

/* One pooling op: saves x (save_x), keeps int64 indices shaped like y (indices). */
static vc_t pool_op(vc_build *b, const char *name, vc_t x, vc_numel yn, bool save_x, bool indices)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_in(o, x);
    if (!vc_contiguous(b, x)) vc_op_ftemp(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_t y = vc_op_out(o, yn, vc_dt_of(b, x));
    if (indices) vc_op_extra(o, yn, VC_DT_I64);
    if (save_x) vc_op_save(o, x);
    vc_op_end(o);
    return y;
}

static void pool_emit(vc_build *b, const void *p)
{
    const pool_cfg *c = p;
    static const char *const names[4][3] = {
        {"max_pool2d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices"},
        {"avg_pool2d", "avg_pool2d", "avg_pool3d"},
        {"adaptive_max_pool2d", "adaptive_max_pool2d", "adaptive_max_pool3d"},
        {"_adaptive_avg_pool2d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d"}};
    vc_t x = vc_input(b, 0);
    const vc_shape *ys = vc_output_shape(b);
    vc_numel yn = vc_n_sample(vc_shape_numel(ys));
    if (c->type == P_AAVG) { /* output all ones: input.mean(spatial, keepdim=True) (1d: via 2d, {1, 1}) */
        bool ones = true;
        for (int i = 0; i < c->nd; i++) ones &= ys->d[ys->nd - c->nd + i] == 1;
        if (ones) {
            vc_set_output(b, vc__op_mean(b, x, yn));
            return;
        }
    }
    bool idx = c->type == P_MAX || c->type == P_AMAX;
    vc_set_output(b, pool_op(b, names[c->type][c->nd - 1], x, yn, true, idx));
}

#define POOL_KIND(NAME, PARSE, SUMMARY)                                                       \
    const vc_kind vc_kind_##NAME = {                                                        \
        .ops = 1,                                                                           \
        .name = #NAME, .summary = SUMMARY, .min_inputs = 1, .max_inputs = 1,                \
        .cfg_size = sizeof(pool_cfg), .parse = PARSE, .setup = pool_setup, .emit = pool_emit, \
    };

static int mp1(vc_args *a, void *p) { return maxpool_parse(a, p, 1); }
static int mp2(vc_args *a, void *p) { return maxpool_parse(a, p, 2); }
static int mp3(vc_args *a, void *p) { return maxpool_parse(a, p, 3); }
static int ap1(vc_args *a, void *p) { return avgpool_parse(a, p, 1); }
static int ap2(vc_args *a, void *p) { return avgpool_parse(a, p, 2); }
static int ap3(vc_args *a, void *p) { return avgpool_parse(a, p, 3); }
static int aap1(vc_args *a, void *p) { return adaptive_parse(a, p, 1, false); }
static int aap2(vc_args *a, void *p) { return adaptive_parse(a, p, 2, false); }
static int aap3(vc_args *a, void *p) { return adaptive_parse(a, p, 3, false); }
static int amp1(vc_args *a, void *p) { return adaptive_parse(a, p, 1, true); }
static int amp2(vc_args *a, void *p) { return adaptive_parse(a, p, 2, true); }

POOL_KIND(MaxPool1d, mp1, "max pooling over [C, L]; keeps its input and int64 indices")
POOL_KIND(MaxPool2d, mp2, "max pooling over [C, H, W]; keeps its input and int64 indices")
POOL_KIND(MaxPool3d, mp3, "max pooling over [C, D, H, W]; keeps its input and int64 indices")
POOL_KIND(AvgPool1d, ap1, "average pooling over [C, L]; keeps its input")
POOL_KIND(AvgPool2d, ap2, "average pooling over [C, H, W]; keeps its input")
POOL_KIND(AvgPool3d, ap3, "average pooling over [C, D, H, W]; keeps its input")
POOL_KIND(AdaptiveAvgPool1d, aap1, "adaptive average pooling to output_size; output 1 is a mean (keeps nothing)")
POOL_KIND(AdaptiveAvgPool2d, aap2, "adaptive average pooling to output_size; output 1 is a mean (keeps nothing)")
POOL_KIND(AdaptiveAvgPool3d, aap3, "adaptive average pooling to output_size; output 1 is a mean (keeps nothing)")
POOL_KIND(AdaptiveMaxPool1d, amp1, "adaptive max pooling to output_size; keeps its input and int64 indices")
POOL_KIND(AdaptiveMaxPool2d, amp2, "adaptive max pooling to output_size; keeps its input and int64 indices")
