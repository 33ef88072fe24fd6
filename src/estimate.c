/*
 * estimate.c — options, names, and turning a simulated plan into a result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "util.h"

static const char *const optim_names[] = {"sgd", "momentum", "adam", "adamw", "none", NULL};
static const char *const impl_names[] = {"foreach", "fused", "forloop", NULL};
static const char *const prec_names[] = {"fp32", "fp16", "bf16", "amp-fp16", "amp-bf16", "mixed-fp16", "mixed-bf16", NULL};
static const char *const mode_names[] = {"train", "infer", NULL};
static const char *const attn_names[] = {"auto", "flash", "efficient", "math", NULL};
static const char *const phase_names[] = {"forward", "backward", "optimizer", "idle"};

static int lookup(const char *const *names, const char *s)
{
    for (int i = 0; s && names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

int vc_optim_from_name(const char *s) { return lookup(optim_names, s); }
int vc_optim_impl_from_name(const char *s) { return lookup(impl_names, s); }
int vc_precision_from_name(const char *s) { return lookup(prec_names, s); }
int vc_mode_from_name(const char *s) { return lookup(mode_names, s); }
int vc_attention_from_name(const char *s) { return lookup(attn_names, s); }
const char *vc_optim_name(vc_optim o) { return (unsigned)o < 5 ? optim_names[o] : "?"; }
const char *vc_optim_impl_name(vc_optim_impl i) { return (unsigned)i < 3 ? impl_names[i] : "?"; }
const char *vc_precision_name(vc_precision p) { return (unsigned)p < 7 ? prec_names[p] : "?"; }
const char *vc_mode_name(vc_mode m) { return (unsigned)m < 2 ? mode_names[m] : "?"; }
const char *vc_attention_name(vc_attention a) { return (unsigned)a < 4 ? attn_names[a] : "?"; }
const char *vc_phase_name(vc_phase p) { return (unsigned)p < 4 ? phase_names[p] : "?"; }

/* "2.Y" with Y from VC_TORCH_OLDEST to VC_TORCH_DEFAULT's minor, digits only. */
int vc_torch_from_name(const char *s)
{
    if (!s || s[0] != '2' || s[1] != '.' || !s[2] || strlen(s) > 4) return -1;
    int minor = 0;
    for (const char *c = s + 2; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        minor = minor * 10 + (*c - '0');
    }
    if (s[2] == '0' && s[3]) return -1; /* "2.05" */
    int v = 200 + minor;
    return v >= VC_TORCH_OLDEST && v <= VC_TORCH_DEFAULT ? v : -1;
}

const char *vc_torch_name(int version, char *buf, size_t n)
{
    if (version == 0) version = VC_TORCH_DEFAULT;
    snprintf(buf, n, "%d.%d", version / 100, version % 100);
    return buf;
}

/* A typical CUDA 12 context with cuBLAS/cuDNN loaded lazily, as nvidia-smi
 * shows it for a PyTorch 2.x process on Ampere/Hopper. Not measured by this
 * project (no GPU was available): an estimate within seed 000's 300-800 MB
 * and seed 004's 0.5-2 GB ranges. Override with --context. */
#define VC_DEFAULT_CONTEXT (INT64_C(500) << 20)

void vc_options_init(vc_options *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 1;
    o->optim = VC_OPTIM_ADAM;
    o->optim_impl = VC_IMPL_FOREACH;
    o->accumulate = 1;
    o->precision = VC_PREC_FP32;
    o->mode = VC_MODE_TRAIN;
    o->attention = VC_ATTN_AUTO;
    o->workspace = -1;
    o->context = -1;
    o->torch_version = VC_TORCH_DEFAULT;
}

static vc_status check_options(const vc_options *o, vc_error *err)
{
    if (o->batch < 1) return vc_set_error(err, VC_ERR_USAGE, "--batch", "must be a positive integer");
    if (o->accumulate < 1) return vc_set_error(err, VC_ERR_USAGE, "--accumulate", "must be a positive integer");
    if ((unsigned)o->optim > VC_OPTIM_NONE || (unsigned)o->optim_impl > VC_IMPL_FORLOOP ||
        (unsigned)o->precision > VC_PREC_MIXED_BF16 || (unsigned)o->mode > VC_MODE_INFER ||
        (unsigned)o->attention > VC_ATTN_MATH)
        return vc_set_error(err, VC_ERR_USAGE, NULL, "invalid option value");
    if (o->torch_version && (o->torch_version < VC_TORCH_OLDEST || o->torch_version > VC_TORCH_DEFAULT))
        return vc_set_error(err, VC_ERR_USAGE, "--torch", "unsupported PyTorch release");
    return VC_OK;
}

static vc_status finish(vc_result *r, const vc_options *o, vc_error *err)
{
    vc_memory *mm = &r->memory;
    mm->cuda_context = o->context >= 0 ? o->context : VC_DEFAULT_CONTEXT;
    if (__builtin_add_overflow(mm->reserved, mm->cuda_context, &mm->total))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    return VC_OK;
}

/* A simulation's figures as a result (everything but cuda_context and
 * total); the per-layer table too when inst_act is given. Shared by
 * vc_estimate and the estimator (sweep.c). */
vc_status vc_result_from_sim(const vc_model *m, vc_optim optim, const vc_sim *s, const int64_t *inst_act,
                             vc_result *r, vc_error *err)
{
    r->parameters = m->nparams;
    r->trainable_parameters = m->ntrainable;
    vc_memory *mm = &r->memory;
    mm->weights = s->persistent[CAT_WEIGHT];
    mm->gradients = s->persistent[CAT_GRAD];
    mm->optimizer_states = s->persistent[CAT_OPT];
    mm->workspace = s->persistent[CAT_WS];
    mm->activations = s->activations;
    mm->peak_allocated = s->peak;
    mm->reserved = s->reserved;
    vc_peak *pk = &r->peak;
    pk->phase = s->phase;
    pk->weights = s->at_peak[CAT_WEIGHT];
    pk->gradients = s->at_peak[CAT_GRAD];
    pk->optimizer_states = s->at_peak[CAT_OPT];
    pk->activations = s->at_peak[CAT_ACT];
    pk->temporaries = s->at_peak[CAT_TEMP];
    pk->workspace = s->at_peak[CAT_WS];
    if (s->peak_inst >= 0) {
        vc_cat3(pk->layer, sizeof pk->layer, m->inst[s->peak_inst].path, "", "");
        vc_cat3(pk->kind, sizeof pk->kind, m->inst[s->peak_inst].kind->name, "", "");
    } else if (s->phase == VC_PHASE_OPTIMIZER) {
        snprintf(pk->kind, sizeof pk->kind, "%s", vc_optim_name(optim));
    } else if (s->phase != VC_PHASE_IDLE) {
        snprintf(pk->kind, sizeof pk->kind, "loss");
    }
    if (!inst_act) return VC_OK;
    r->layers = calloc(m->ninst + 1, sizeof *r->layers);
    if (!r->layers) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    r->nlayers = m->ninst;
    for (size_t i = 0; i < m->ninst; i++) {
        vc_layer_info *li = &r->layers[i];
        const vc_inst *in = &m->inst[i];
        vc_cat3(li->name, sizeof li->name, in->path, "", "");
        vc_cat3(li->kind, sizeof li->kind, in->kind->name, "", "");
        const vc_shape *sh = &m->val[in->out].shape;
        li->ndim = sh->nd;
        memcpy(li->output_shape, sh->d, sizeof sh->d);
        li->parameters = in->nparams;
        li->activations = inst_act[i];
    }
    return VC_OK;
}

vc_status vc_estimate(const vc_model *m, const vc_options *o, vc_result *r, vc_error *err)
{
    memset(r, 0, sizeof *r);
    vc_status st = check_options(o, err);
    if (st) return st;
    vc_plan *p = NULL;
    st = vc_plan_build(m, o, &p, err);
    if (st) return st;
    int64_t *act = calloc(m->ninst + 1, sizeof *act);
    if (!act) {
        vc_plan_free(p);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    vc_sim s;
    char note[sizeof r->attention];
    st = vc_plan_simulate(p, o->batch, &s, act, err);
    vc_cat3(note, sizeof note, vc_plan_note(p), "", ""); /* the attention kernel chosen, and why */
    vc_plan_free(p);
    if (st) {
        free(act);
        return st;
    }
    st = vc_result_from_sim(m, o->optim, &s, act, r, err);
    free(act);
    if (st) return st;
    memcpy(r->attention, note, sizeof note);
    return finish(r, o, err);
}

static vc_status counts_term(int64_t a, int64_t b, int64_t *acc, vc_error *err)
{
    int64_t t;
    if (__builtin_mul_overflow(a, b, &t) || __builtin_add_overflow(*acc, t, acc))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "the estimate overflows 64-bit arithmetic");
    return VC_OK;
}

vc_status vc_estimate_counts(int64_t params, int64_t acts, const vc_options *o, vc_result *r, vc_error *err)
{
    memset(r, 0, sizeof *r);
    vc_status st = check_options(o, err);
    if (st) return st;
    if (params < 0) return vc_set_error(err, VC_ERR_USAGE, "--params", "must be a non-negative integer");
    if (acts < 0) return vc_set_error(err, VC_ERR_USAGE, "--activations", "must be a non-negative integer");
    bool train = o->mode == VC_MODE_TRAIN;
    int wsz, gsz, ssz, asz, master = 0;
    switch (o->precision) {
    case VC_PREC_FP16: case VC_PREC_BF16: wsz = gsz = ssz = asz = 2; break;
    case VC_PREC_MIXED_FP16: case VC_PREC_MIXED_BF16: wsz = gsz = asz = 2; ssz = 4; master = 4; break;
    case VC_PREC_AMP_FP16: case VC_PREC_AMP_BF16: wsz = gsz = ssz = 4; asz = 2; break;
    default: wsz = gsz = ssz = asz = 4; break;
    }
    int nstates = !train ? 0 : o->optim == VC_OPTIM_ADAM || o->optim == VC_OPTIM_ADAMW ? 2
                  : o->optim == VC_OPTIM_MOMENTUM ? 1 : 0;
    vc_memory *mm = &r->memory;
    r->parameters = r->trainable_parameters = params;
    /* Seed 003: plain element counts times bytes, no per-tensor rounding. */
    if (counts_term(params, wsz + (train ? master : 0), &mm->weights, err) ||
        (train && counts_term(params, gsz, &mm->gradients, err)) ||
        counts_term(params, (int64_t)ssz * nstates, &mm->optimizer_states, err))
        return err ? err->code : VC_ERR_OVERFLOW;
    int64_t per;
    if (__builtin_mul_overflow(acts, o->batch, &per) || counts_term(per, asz, &mm->activations, err))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "the estimate overflows 64-bit arithmetic");
    int64_t peak = 0;
    if (__builtin_add_overflow(mm->weights, mm->gradients, &peak) ||
        __builtin_add_overflow(peak, mm->optimizer_states, &peak) ||
        __builtin_add_overflow(peak, mm->activations, &peak))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "the estimate overflows 64-bit arithmetic");
    mm->peak_allocated = peak;
    mm->reserved = peak;
    r->peak.phase = train ? VC_PHASE_BACKWARD : VC_PHASE_FORWARD;
    r->peak.weights = mm->weights;
    r->peak.gradients = mm->gradients;
    r->peak.optimizer_states = mm->optimizer_states;
    r->peak.activations = mm->activations;
    return finish(r, o, err);
}

void vc_result_free(vc_result *r)
{
    if (!r) return;
    free(r->layers);
    r->layers = NULL;
    r->nlayers = 0;
}

vc_status vc_trace(const vc_model *m, const vc_options *o, void (*line)(void *, const char *), void *ctx, vc_error *err)
{
    vc_status st = check_options(o, err);
    if (st) return st;
    vc_plan *p = NULL;
    if ((st = vc_plan_build(m, o, &p, err))) return st;
    st = vc_plan_trace(p, o->batch, line, ctx);
    vc_plan_free(p);
    return st ? vc_set_error(err, st, NULL, "batch %lld overflows 64-bit arithmetic", (long long)o->batch) : VC_OK;
}
