/*
 * norm.c — BatchNorm1d/2d/3d, InstanceNorm1d/2d, LayerNorm, GroupNorm, RMSNorm.
 *
 * What each keeps follows docs/autograd.md §3.7-3.10:
 *  - BatchNorm: cudnn_batch_norm or native_batch_norm (backend choice of
 *    _select_batch_norm_backend); both keep the input (alias) and two [C]
 *    statistics (save_mean/save_var or save_mean/save_invstd). The cuDNN
 *    path first makes the input contiguous (a copy that is then saved).
 *  - InstanceNorm: at::instance_norm views the input as [1, N*C, ...] and
 *    runs batch_norm on it, with weight/bias/running stats repeat()ed N
 *    times; the repeated weight and running stats are saved, stats [N*C].
 *  - LayerNorm: native_layer_norm keeps its input (the fp32 copy under
 *    autocast: layer_norm is an fp32 op) and mean/rstd [M] in fp32.
 *  - GroupNorm: native_group_norm on input.contiguous(); keeps it and
 *    mean/rstd [N, G]; backward has [N, C] accumulation temporaries.
 *  - RMSNorm: _fused_rms_norm (input, weight, rstd [M] kept) when the
 *    weight's dtype is the input's; the composite rms_norm (upcast, pow,
 *    mean, rsqrt, mul, mul(weight), type_as) otherwise. See rmsnorm_emit.
 */
#include <string.h>

#include "ops.h"

/* ------------------------------------------------------------ helpers */

/* eps-like floats: PyTorch accepts any number. */
static int arg_number(vc_args *a, const char *key, double def, double *out)
{
    return vc_arg_float(a, key, def, -1e308, 1e308, out);
}

/* A float that may be null (momentum=None, eps=None). */
static int arg_number_or_null(vc_args *a, const char *key, double def, double *out, bool *is_null)
{
    *is_null = vc_arg_type(a, key) == 5;
    if (*is_null) {
        *out = def;
        return 0;
    }
    return arg_number(a, key, def, out);
}

/* normalized_shape: an int or a list of ints (LayerNorm, RMSNorm). */
static int arg_shape(vc_args *a, const char *key, int64_t *out, int *n)
{
    int t = vc_arg_type(a, key);
    if (t == 0) return vc_arg_fail(a, key, "missing (an integer or a list of integers is required)");
    if (t == 1) {
        *n = 1;
        return vc_arg_int(a, key, VC_REQUIRED, 1, &out[0]);
    }
    if (t != 3) return vc_arg_fail(a, key, "expected an integer or a list of integers");
    return vc_arg_list(a, key, true, 1, out, n);
}

static void shape_list_str(const int64_t *d, int n, char *buf, size_t len)
{
    vc_shape s = vc_shape_make(n, d);
    vc_shape_str(&s, buf, len);
}

/* Checks that the input's trailing dims equal normalized_shape; sets
 * *norm to its product. */
static int check_normalized(vc_setup *s, const int64_t *ns, int nns, int64_t *norm)
{
    const vc_shape *x = &s->in[0];
    char want[160], got[160];
    /* the shapes' text only for a message (formatting them at every LayerNorm's setup was
     * 2.2 M of the 2,000-layer sequence MLP's 87 M instructions, bench/speed) */
    if (nns > x->nd) {
        shape_list_str(ns, nns, want, sizeof want);
        vc_shape_str(x, got, sizeof got);
        return vc_fail(s, "normalized_shape",
                       "normalized_shape %s has %d dims but the input %s has %d per sample "
                       "(normalizing over the batch dimension is not supported)",
                       want, nns, got, x->nd);
    }
    for (int i = 0; i < nns; i++)
        if (x->d[x->nd - nns + i] != ns[i]) {
            shape_list_str(ns, nns, want, sizeof want);
            vc_shape_str(x, got, sizeof got);
            return vc_fail(s, "normalized_shape",
                           "normalized_shape is %s but the input %s ends with %lld where %lld is expected",
                           want, got, (long long)x->d[x->nd - nns + i], (long long)ns[i]);
        }
    *norm = 1;
    for (int i = 0; i < nns; i++)
        if (vc_mul(s, *norm, ns[i], norm)) return -1;
    return 0;
}

/* mul with a broadcast second operand (a [*, full] * c [stat or weight]):
 * saves c when a needs grad and a when c needs grad; c's gradient is
 * (grad * a) reduced by sum_to, so backward holds one full-size temporary
 * besides c's gradient. */
static vc_t mul_bcast(vc_build *b, vc_t a, vc_t c, vc_numel out, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, "mul");
    int ia = vc_op_in(o, a);
    int ic = vc_op_in(o, c);
    vc_t y = vc_op_out(o, out, dt);
    vc_op_save_if(o, c, ia);
    vc_op_save_if(o, a, ic);
    if (vc_requires_grad(b, c)) vc_op_btemp(o, out, dt);
    vc_op_end(o);
    return y;
}

/* t.repeat(N) for a [C] tensor: a new [N*C] tensor. Backward
 * (repeat_backward) sums the gradient back to [C]. */
static vc_t op_repeat(vc_build *b, vc_t t, vc_numel n) { return vc__op_fresh(b, "repeat", t, n); }

/* at::batch_norm (_batch_norm_impl_index) on x of `ndim` dims (batch
 * included), with stats of `stats` elements. training: use batch
 * statistics (module.training, or no running stats). */
static vc_t batch_norm(vc_build *b, vc_t x, vc_t w, vc_t bias, vc_t rm, vc_t rv, bool training, double eps,
                       int ndim, vc_numel stats)
{
    vc_dtype xdt = vc_dt_of(b, x), wdt = w >= 0 ? vc_dt_of(b, w) : xdt;
    /* _select_batch_norm_backend; CUDNN_BN_MIN_EPSILON is 0 in cuDNN 8/9 */
    bool cudnn = ndim >= 3 && w >= 0 && bias >= 0 && xdt != VC_DT_BF16 && wdt != VC_DT_BF16 &&
                 (xdt != VC_DT_F16 || wdt == VC_DT_F32) &&
                 ((rm >= 0 && rv >= 0) || (rm < 0 && rv < 0 && training)) && eps >= 0.0;
    if (cudnn && training && !vc_contiguous(b, x)) {
        /* The batch limits of the cuDNN path (N <= 880801, numel < 2^31-1)
         * only change memory where they decide whether the input is copied
         * and saved (cuDNN) or read in place (native). */
        /* cuDNN for batches 1 .. nmax (N * per-sample + fixed elements below
         * 2^31 - 1), native above: the range this batch is in is declared */
        vc_numel xn = vc_numel_of(b, x);
        int64_t nmax = xn.fx >= INT32_MAX ? 0 : xn.ps > 0 ? (INT32_MAX - 1 - xn.fx) / xn.ps : VC_BATCH_ANY;
        if (nmax > 880801) nmax = 880801;
        if (vc_batch(b) > nmax) {
            cudnn = false;
            vc_batch_range(b, nmax + 1, VC_BATCH_ANY);
        } else {
            vc_batch_range(b, 1, nmax);
        }
    }
    if (cudnn) x = vc__op_contiguous(b, x); /* input.contiguous(suggest_memory_format) */
    vc_op *o = vc_op_begin(b, cudnn ? "cudnn_batch_norm" : "native_batch_norm");
    vc_op_in(o, x);
    if (w >= 0) vc_op_in(o, w);
    if (bias >= 0) vc_op_in(o, bias);
    if (rm >= 0) vc_op_in_nodiff(o, rm);
    if (rv >= 0) vc_op_in_nodiff(o, rv);
    /* native: the statistics kernel reshapes a non-viewable input (a copy) */
    if (!cudnn && !vc_contiguous(b, x)) vc_op_ftemp(o, vc_numel_of(b, x), xdt);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), xdt);
    if (training) { /* save_mean, save_var/invstd (cuDNN: weight dtype; native: acc) */
        vc_dtype sdt = cudnn ? wdt : VC_DT_F32;
        vc_op_extra(o, stats, sdt);
        vc_op_extra(o, stats, sdt);
        /* cuDNN's reserve space for plain BN is 0 bytes (docs/autograd.md §10) */
    }
    vc_op_save(o, x);
    if (w >= 0) vc_op_save(o, w);
    if (rm >= 0) vc_op_save(o, rm);
    if (rv >= 0) vc_op_save(o, rv);
    vc_op_end(o);
    return y;
}

/* ---------------------------------------------- BatchNorm, InstanceNorm */

typedef struct {
    int64_t nf;
    double eps, momentum;
    bool momentum_none, affine, track;
} bn_cfg;

static int bn_parse_common(vc_args *a, bn_cfg *c, bool affine_def, bool track_def)
{
    return vc_arg_int(a, "num_features", VC_REQUIRED, 1, &c->nf) || arg_number(a, "eps", 1e-5, &c->eps) ||
           arg_number_or_null(a, "momentum", 0.1, &c->momentum, &c->momentum_none) ||
           vc_arg_bool(a, "affine", affine_def, &c->affine) ||
           vc_arg_bool(a, "track_running_stats", track_def, &c->track);
}

static int bn_parse(vc_args *a, void *p) { return bn_parse_common(a, p, true, true); }
static int in_parse(vc_args *a, void *p) { return bn_parse_common(a, p, false, false); }

/* weight/bias and the running-stat buffers, in named_parameters() /
 * named_buffers() order */
static int bn_declare(vc_setup *s, const bn_cfg *c)
{
    if (c->affine && (vc_param(s, "weight", c->nf) || vc_param(s, "bias", c->nf))) return -1;
    if (c->track && (vc_buffer(s, "running_mean", c->nf, VC_DT_FLOAT) || vc_buffer(s, "running_var", c->nf, VC_DT_FLOAT) ||
                     vc_buffer(s, "num_batches_tracked", 1, VC_DT_I64)))
        return -1;
    return 0;
}

static int bn_setup_nd(vc_setup *s, const bn_cfg *c, const char *kind, int nd_lo, int nd_hi, const char *layout)
{
    const vc_shape *x = &s->in[0];
    if (x->nd < nd_lo || x->nd > nd_hi) {
        char got[160];
        vc_shape_str(x, got, sizeof got);
        return vc_fail(s, NULL, "%s expects a per-sample input %s, got %s", kind, layout, got);
    }
    /* batch_norm checks weight and running stats against the channels;
     * with neither, any channel count works */
    if ((c->affine || c->track) && x->d[0] != c->nf)
        return vc_fail(s, "num_features", "num_features is %lld but the input has %lld channels", (long long)c->nf,
                       (long long)x->d[0]);
    s->out = *x;
    return bn_declare(s, c);
}

static int bn1d_setup(vc_setup *s, void *p) { return bn_setup_nd(s, p, "BatchNorm1d", 1, 2, "[C] or [C, L]"); }
static int bn2d_setup(vc_setup *s, void *p) { return bn_setup_nd(s, p, "BatchNorm2d", 3, 3, "[C, H, W]"); }
static int bn3d_setup(vc_setup *s, void *p) { return bn_setup_nd(s, p, "BatchNorm3d", 4, 4, "[C, D, H, W]"); }

static void bn_emit(vc_build *b, const void *p)
{
    const bn_cfg *c = p;
    vc_t x = vc_input(b, 0);
    const vc_shape *s = vc_input_shape(b, 0);
    vc_t w = c->affine ? vc_weight(b, 0) : -1, bias = c->affine ? vc_weight(b, 1) : -1;
    vc_t rm = c->track ? vc_buf(b, 0) : -1, rv = c->track ? vc_buf(b, 1) : -1;
    /* bn_training = training or no running stats; running stats and
     * num_batches_tracked are updated in place (no allocation) */
    bool batch_stats = vc_training(b) || !c->track;
    vc_set_output(b, batch_norm(b, x, w, bias, rm, rv, batch_stats, c->eps, s->nd + 1, vc_n_fixed(s->d[0])));
}

static int in_setup_nd(vc_setup *s, const bn_cfg *c, const char *kind, int nd, const char *layout)
{
    const vc_shape *x = &s->in[0];
    if (x->nd != nd) {
        char got[160];
        vc_shape_str(x, got, sizeof got);
        return vc_fail(s, NULL, "%s expects a per-sample input %s, got %s", kind, layout, got);
    }
    /* _InstanceNorm.forward raises on a mismatch when affine (only warns
     * otherwise); repeated running stats of the wrong size fail in batch_norm */
    if ((c->affine || c->track) && x->d[0] != c->nf)
        return vc_fail(s, "num_features", "num_features is %lld but the input has %lld channels", (long long)c->nf,
                       (long long)x->d[0]);
    int64_t spatial = 1;
    for (int i = 1; i < x->nd; i++)
        if (vc_mul(s, spatial, x->d[i], &spatial)) return -1;
    if (spatial == 1 && !c->track) /* F.instance_norm: _verify_spatial_size */
        return vc_fail(s, NULL, "%s needs more than 1 spatial element per channel (the input is %lld x 1)", kind,
                       (long long)x->d[0]);
    s->out = *x;
    return bn_declare(s, c);
}

static int in1d_setup(vc_setup *s, void *p) { return in_setup_nd(s, p, "InstanceNorm1d", 2, "[C, L]"); }
static int in2d_setup(vc_setup *s, void *p) { return in_setup_nd(s, p, "InstanceNorm2d", 3, "[C, H, W]"); }

static void in_emit(vc_build *b, const void *p)
{
    const bn_cfg *c = p;
    vc_t x = vc_input(b, 0);
    const vc_shape *s = vc_input_shape(b, 0);
    int64_t C = s->d[0];
    vc_numel nc = vc_n_sample(C); /* [N*C] */
    /* at::instance_norm: repeat_if_defined(weight/bias/running stats, N) */
    vc_t w = c->affine ? op_repeat(b, vc_weight(b, 0), nc) : -1;
    vc_t bias = c->affine ? op_repeat(b, vc_weight(b, 1), nc) : -1;
    vc_t rm = c->track ? op_repeat(b, vc_buf(b, 0), nc) : -1;
    vc_t rv = c->track ? op_repeat(b, vc_buf(b, 1), nc) : -1;
    /* input.contiguous().view({1, N*C, ...}) */
    vc_t xc = vc__op_contiguous(b, x);
    vc_t xv = vc__op_view(b, xc, vc_numel_of(b, xc), true);
    bool use_input_stats = vc_training(b) || !c->track;
    vc_t y = batch_norm(b, xv, w, bias, rm, rv, use_input_stats, c->eps, s->nd + 1, nc);
    if (c->track) { /* running_mean.copy_(running_mean_.view({N, C}).mean(0)) */
        vc__op_mean(b, rm, vc_n_fixed(C));
        vc__op_mean(b, rv, vc_n_fixed(C));
    }
    vc_set_output(b, vc__op_view(b, y, vc_numel_of(b, y), true)); /* out.view(input sizes) */
}

/* ------------------------------------------------------------ LayerNorm */

typedef struct {
    int64_t ns[VC_MAX_DIMS];
    int nns;
    double eps;
    bool eps_none, affine, bias;
    bool one_plus; /* LayerNorm: F.layer_norm with weight + 1 (NemotronLayerNorm1P) */
} ln_cfg;

static int ln_parse(vc_args *a, void *p)
{
    ln_cfg *c = p;
    return arg_shape(a, "normalized_shape", c->ns, &c->nns) || arg_number(a, "eps", 1e-5, &c->eps) ||
           vc_arg_bool(a, "elementwise_affine", true, &c->affine) || vc_arg_bool(a, "bias", true, &c->bias) ||
           vc_arg_bool(a, "one_plus", false, &c->one_plus);
}

static int ln_setup(vc_setup *s, void *p)
{
    const ln_cfg *c = p;
    int64_t norm;
    if (check_normalized(s, c->ns, c->nns, &norm)) return -1;
    s->out = s->in[0];
    if (c->one_plus && !c->affine) return vc_fail(s, "one_plus", "needs elementwise_affine (a weight to add 1 to)");
    if (!c->affine) return 0;
    (void)norm; /* the weight and bias have normalized_shape */
    return vc_param_shape(s, "weight", c->nns, c->ns, 0) || (c->bias && vc_param_shape(s, "bias", c->nns, c->ns, 0));
}

static int64_t rows_per_sample(const vc_shape *x, int nns)
{
    int64_t m = 1;
    for (int i = 0; i < x->nd - nns; i++) m *= x->d[i]; /* a factor of numel: no overflow */
    return m;
}

static void ln_emit(vc_build *b, const void *p)
{
    const ln_cfg *c = p;
    vc_t w = c->affine ? vc_weight(b, 0) : -1;
    vc_t bias = c->affine && c->bias ? vc_weight(b, 1) : -1;
    vc_numel stats = vc_n_sample(rows_per_sample(vc_input_shape(b, 0), c->nns));
    if (c->one_plus) {
        /* NemotronLayerNorm1P.forward (models/nemotron/modeling_nemotron.py @ 0233e509): args =
         * _cast_if_autocast_enabled(device_type, input, normalized_shape, self.weight + 1, self.bias, eps), then
         * F.layer_norm(*args) under autocast(enabled=False). weight + 1 is a fresh tensor (AddBackward0 with a
         * scalar saves nothing) that native_layer_norm saves; under autocast the input, weight + 1 and the bias are
         * cast to the autocast dtype (autocast_mode._cast: .to, no weight cache) and the norm runs there, not in
         * fp32 */
        vc_t w1 = vc__op_fresh(b, "add", w, vc_numel_of(b, w));
        vc_t x = vc__op_autocast(b, vc_input(b, 0));
        vc_set_output(b, vc__op_layer_norm_as_is(b, x, vc__op_autocast(b, w1), vc__op_autocast(b, bias), stats));
        return;
    }
    vc_set_output(b, vc__op_layer_norm(b, vc_input(b, 0), w, bias, stats));
}

/* ------------------------------------------------------------ GroupNorm */

typedef struct {
    int64_t groups, channels;
    double eps;
    bool affine;
} gn_cfg;

static int gn_parse(vc_args *a, void *p)
{
    gn_cfg *c = p;
    if (vc_arg_int(a, "num_groups", VC_REQUIRED, 1, &c->groups) ||
        vc_arg_int(a, "num_channels", VC_REQUIRED, 1, &c->channels) || arg_number(a, "eps", 1e-5, &c->eps) ||
        vc_arg_bool(a, "affine", true, &c->affine))
        return -1;
    if (c->channels % c->groups)
        return vc_arg_fail(a, "num_groups", "num_channels must be divisible by num_groups (%lld channels, %lld groups)",
                           (long long)c->channels, (long long)c->groups);
    return 0;
}

static int gn_setup(vc_setup *s, void *p)
{
    const gn_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->nd < 1) return vc_fail(s, NULL, "GroupNorm expects a per-sample input [C, *]");
    if (c->affine && x->d[0] != c->channels)
        return vc_fail(s, "num_channels", "num_channels is %lld but the input has %lld channels", (long long)c->channels,
                       (long long)x->d[0]);
    if (x->d[0] % c->groups)
        return vc_fail(s, "num_groups", "the input's %lld channels are not divisible by num_groups %lld",
                       (long long)x->d[0], (long long)c->groups);
    s->out = *x;
    if (!c->affine) return 0;
    return vc_param(s, "weight", c->channels) || vc_param(s, "bias", c->channels);
}

static void gn_emit(vc_build *b, const void *p)
{
    const gn_cfg *c = p;
    int64_t C = vc_input_shape(b, 0)->d[0];
    /* group_norm is an fp32 autocast op; at::group_norm: X = input.contiguous() */
    vc_t x = vc__op_contiguous(b, vc__op_autocast_f32(b, vc_input(b, 0)));
    vc_t w = c->affine ? vc_weight(b, 0) : -1, bias = c->affine ? vc_weight(b, 1) : -1;
    vc_dtype xdt = vc_dt_of(b, x);
    bool low = xdt == VC_DT_F16 || xdt == VC_DT_BF16;
    /* param_scalar_type: fp32 for a low-precision X with fp32 params */
    vc_dtype sdt = low && w >= 0 && vc_dt_of(b, w) == VC_DT_F32 ? VC_DT_F32 : xdt;
    vc_op *o = vc_op_begin(b, "native_group_norm");
    vc_op_in(o, x);
    if (w >= 0) vc_op_in(o, w);
    if (bias >= 0) vc_op_in(o, bias);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), xdt);
    vc_op_extra(o, vc_n_sample(c->groups), sdt); /* mean [N, G] */
    vc_op_extra(o, vc_n_sample(c->groups), sdt); /* rstd [N, G] */
    vc_op_save(o, x);
    if (w >= 0) vc_op_save(o, w);
    /* GroupNormBackwardKernelImplInternal: ds, db [N, C] (acc dtype); for
     * dX also c1 [N, C] (with gamma), c2, c3 [N, G] — all live together */
    int64_t acc = 2 * C;
    if (vc_requires_grad(b, x)) acc += (w >= 0 ? C : 0) + 2 * c->groups;
    vc_op_btemp(o, vc_n_sample(acc), low ? VC_DT_F32 : xdt);
    vc_op_end(o);
    vc_set_output(b, y);
}

/* -------------------------------------------------------------- RMSNorm */

static int rms_parse(vc_args *a, void *p)
{
    ln_cfg *c = p;
    return arg_shape(a, "normalized_shape", c->ns, &c->nns) ||
           arg_number_or_null(a, "eps", 0.0, &c->eps, &c->eps_none) ||
           vc_arg_bool(a, "elementwise_affine", true, &c->affine);
}

static int rms_setup(vc_setup *s, void *p)
{
    const ln_cfg *c = p;
    int64_t norm;
    if (check_normalized(s, c->ns, c->nns, &norm)) return -1;
    s->out = s->in[0];
    return c->affine ? vc_param_shape(s, "weight", c->nns, c->ns, 0) : 0;
}

/*
 * rms_norm (layer_norm.cpp, rms_norm_symint). Recent 2.x on CUDA calls
 * _fused_rms_norm unless the input is channels-last or complex or the
 * weight's dtype differs from the input's; it keeps input, weight and rstd
 * [M] (acc dtype), like native_layer_norm without the mean (docs/autograd.md
 * §3.10; tools/vctorch.py's _FusedRMSNorm replicates the same op for the
 * accuracy harness). With a dtype mismatch (autocast: an fp16/bf16
 * activation and an fp32 weight — rms_norm is on none of autocast's lists
 * in docs/autograd.md §9) it runs rms_norm_composite:
 *   upcasted = input.to(opmath)            fp32 copy for fp16/bf16 input
 *   rstd = rsqrt(pow(upcasted, 2).mean(dims, keepdim).add_(eps))
 *   out = upcasted.mul(rstd).mul(weight).contiguous().type_as(input)
 * (also the CUDA path of 2.4-2.7, where rms_norm was only the composite).
 */
static void rmsnorm_fused(vc_build *b, vc_t x, vc_t w, vc_numel stats)
{
    bool contig = vc_contiguous(b, x);
    vc_op *o = vc_op_begin(b, "_fused_rms_norm");
    vc_op_in(o, x);
    if (w >= 0) vc_op_in(o, w);
    if (!contig) vc_op_ftemp(o, vc_numel_of(b, x), vc_dt_of(b, x)); /* input.contiguous() */
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_extra(o, stats, VC_DT_F32); /* rstd */
    vc_op_save(o, x);
    if (w >= 0) vc_op_save(o, w);
    if (!contig) vc_op_btemp(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_end(o);
    vc_set_output(b, y);
}

static void rmsnorm_composite(vc_build *b, vc_t x0, vc_t w, vc_numel stats)
{
    vc_dtype dt0 = vc_dt_of(b, x0);
    vc_numel full = vc_numel_of(b, x0);
    vc_t xu = vc__op_cast(b, x0, VC_DT_F32);

    /* pow(x, 2): saves self; pow_backward = grad * (2 * self.pow(1)):
     * two full-size temporaries besides the result */
    vc_op *o = vc_op_begin(b, "pow");
    int i = vc_op_in(o, xu);
    vc_t sq = vc_op_out(o, full, VC_DT_F32);
    vc_op_save_if(o, xu, i);
    vc_op_btemp(o, vc_n_scale(full, 2), VC_DT_F32);
    vc_op_end(o);

    vc_t ms = vc__op_mean(b, sq, stats); /* .add_(eps) runs in place */
    vc_t rstd = vc__op_unary(b, "rsqrt", ms, VC_SAVE_OUT, false);
    vc_t y = mul_bcast(b, xu, rstd, full, VC_DT_F32);
    if (w >= 0) y = mul_bcast(b, y, w, full, VC_DT_F32); /* fp32 * weight -> fp32 */
    vc_set_output(b, vc__op_cast(b, y, dt0));                /* type_as(input) */
}

static void rmsnorm_emit(vc_build *b, const void *p)
{
    const ln_cfg *c = p;
    vc_t x = vc_input(b, 0);
    vc_t w = c->affine ? vc_weight(b, 0) : -1;
    vc_numel stats = vc_n_sample(rows_per_sample(vc_input_shape(b, 0), c->nns));
    if (w < 0 || vc_dt_of(b, w) == vc_dt_of(b, x))
        rmsnorm_fused(b, x, w, stats);
    else
        rmsnorm_composite(b, x, w, stats);
}

/* ------------------------------------------------------------ the kinds */

const vc_kind vc_kind_BatchNorm1d = {
    .ops = 1,
    .name = "BatchNorm1d", .summary = "batch norm over [C] or [C, L]; keeps its input and [C] stats",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(bn_cfg),
    .parse = bn_parse, .setup = bn1d_setup, .emit = bn_emit,
};

const vc_kind vc_kind_BatchNorm2d = {
    .ops = 1,
    .name = "BatchNorm2d", .summary = "batch norm over [C, H, W]; keeps its input and [C] stats",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(bn_cfg),
    .parse = bn_parse, .setup = bn2d_setup, .emit = bn_emit,
};

const vc_kind vc_kind_BatchNorm3d = {
    .ops = 1,
    .name = "BatchNorm3d", .summary = "batch norm over [C, D, H, W]; keeps its input and [C] stats",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(bn_cfg),
    .parse = bn_parse, .setup = bn3d_setup, .emit = bn_emit,
};

const vc_kind vc_kind_InstanceNorm1d = {
    .ops = 9,
    .name = "InstanceNorm1d", .summary = "instance norm over [C, L] (batch norm on [1, N*C, L])",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(bn_cfg),
    .parse = in_parse, .setup = in1d_setup, .emit = in_emit,
};

const vc_kind vc_kind_InstanceNorm2d = {
    .ops = 9,
    .name = "InstanceNorm2d", .summary = "instance norm over [C, H, W] (batch norm on [1, N*C, H, W])",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(bn_cfg),
    .parse = in_parse, .setup = in2d_setup, .emit = in_emit,
};

const vc_kind vc_kind_LayerNorm = {
    .ops = 5, /* autocast's cast, native_layer_norm; one_plus: weight + 1, three casts, native_layer_norm */
    .name = "LayerNorm", .summary = "layer norm over the trailing normalized_shape; keeps its input and fp32 stats",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(ln_cfg),
    .parse = ln_parse, .setup = ln_setup, .emit = ln_emit,
};

const vc_kind vc_kind_GroupNorm = {
    .ops = 2,
    .name = "GroupNorm", .summary = "group norm over [C, *]; keeps its input and [N, G] stats",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(gn_cfg),
    .parse = gn_parse, .setup = gn_setup, .emit = gn_emit,
};

const vc_kind vc_kind_RMSNorm = {
    .ops = 1,
    .name = "RMSNorm", .summary = "RMS norm over the trailing normalized_shape; keeps its input and fp32 rstd",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(ln_cfg),
    .parse = rms_parse, .setup = rms_setup, .emit = rmsnorm_emit,
};
