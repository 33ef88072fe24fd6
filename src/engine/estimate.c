/*
 * estimate.c — one estimate (vc_estimate), seed 003's counts-only
 * calculator (vc_estimate_counts), a simulated plan as a result, and the
 * --trace listing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "pipeline.h"
#include "policy.h"
#include "release.h"
#include "util.h"

/* The CUDA context from what the step runs (`uses`, VC_USES_*): src/engine/context.c;
 * --context overrides it. NCCL's buffers join the total (src/engine/nccl.c). */
static vc_status finish(vc_result *r, const vc_options *o, unsigned uses, vc_error *err)
{
    vc_memory *mm = &r->memory;
    vc_status st = vc_context_estimate(o, uses, &mm->context_parts, &mm->cuda_context, err);
    if (st) return st;
    vc_nccl_info n; /* NCCL's buffers, outside the allocator (src/engine/nccl.c) */
    vc_nccl_per_gpu(o, &n);
    mm->nccl = n.bytes;
    if (__builtin_add_overflow(mm->reserved, mm->cuda_context, &mm->total) ||
        __builtin_add_overflow(mm->total, mm->nccl, &mm->total))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    return VC_OK;
}

vc_status vc__simulate_as(const vc_model *m, const vc_options *o, vc_sim *s, vc_error *err)
{
    vc_plan *p = NULL;
    vc_status st = vc_plan_build(m, o, &p, err);
    if (st) return st;
    st = vc_plan_simulate(p, o->batch, s, NULL, err);
    vc_plan_free(p);
    return st;
}

/* cuDNN's convolution workspaces (src/engine/cudnn.c): the interval's other
 * end, from the same options with the other --bound; a --cudnn-table's
 * workspaces are exact, the one figure both ends. */
vc_status vc__cudnn_interval(const vc_model *m, const vc_options *o, bool conv, vc_result *r, vc_error *err)
{
    vc_memory *mm = &r->memory;
    mm->cudnn.source = !conv ? VC_CUDNN_NONE : o->cudnn_table ? VC_CUDNN_TABLE : VC_CUDNN_BOUND;
    mm->cudnn.peak_allocated_low = mm->cudnn.peak_allocated_high = mm->peak_allocated;
    mm->cudnn.reserved_low = mm->cudnn.reserved_high = mm->reserved;
    mm->cudnn.total_low = mm->cudnn.total_high = mm->total;
    if (mm->cudnn.source != VC_CUDNN_BOUND) return VC_OK;
    vc_options other = *o;
    other.bound = o->bound == VC_BOUND_HIGH ? VC_BOUND_LOW : VC_BOUND_HIGH;
    vc_sim s;
    vc_status st = vc__simulate_as(m, &other, &s, err);
    if (st) return st;
    int64_t total;
    if (__builtin_add_overflow(s.reserved, mm->cuda_context, &total) || __builtin_add_overflow(total, mm->nccl, &total))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    if (other.bound == VC_BOUND_HIGH) {
        mm->cudnn.peak_allocated_high = s.peak;
        mm->cudnn.reserved_high = s.reserved;
        mm->cudnn.total_high = total;
    } else {
        mm->cudnn.peak_allocated_low = s.peak;
        mm->cudnn.reserved_low = s.reserved;
        mm->cudnn.total_low = total;
    }
    return VC_OK;
}

/* --first-step: the run's first step (its peak allocated) and the first two steps (their
 * reserve), each a plan of its own (vc__plan_build_first_step); the result's other figures
 * are the steady step's. */
vc_status vc__first_step(const vc_model *m, const vc_options *o, vc_result *r, vc_error *err)
{
    vc_memory *mm = &r->memory;
    if (!o->first_step || o->mode != VC_MODE_TRAIN || !vc_optim_row_get(o->optim)->steps) return VC_OK;
    for (int steps = 1; steps <= 2; steps++) {
        vc_plan *p = NULL;
        vc_status st = vc__plan_build_first_step(m, o, steps, &p, err);
        if (st) return st;
        vc_sim s;
        st = vc_plan_simulate(p, o->batch, &s, NULL, err);
        vc_plan_free(p);
        if (st) return st;
        if (steps == 1) mm->first_step.peak_allocated = s.peak;
        else mm->first_step.reserved = s.reserved;
    }
    if (__builtin_add_overflow(mm->first_step.reserved, mm->cuda_context, &mm->first_step.total))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    mm->first_step.computed = 1;
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
    mm->optimizer_states_paged = s->outside;
    mm->workspace = s->persistent[CAT_WS];
    mm->activations = s->activations;
    mm->peak_allocated = s->peak;
    mm->reserved = s->reserved;
    if (s->kv_tokens > 0 || s->ssm_layers > 0) { /* a model of Mamba2 layers alone (mamba2): its states, no tokens */
        r->generate.prefill_peak = s->peak_pre;
        r->generate.decode_peak = s->decode_step ? s->peak_post : 0;
        r->generate.decode_step = s->decode_step;
        r->generate.kv_cache = s->kv_cache;
        r->generate.kv_tokens = s->kv_tokens;
        r->generate.kv_mla = s->kv_mla;
        r->generate.ssm_state = s->ssm_state;
        r->generate.ssm_layers = s->ssm_layers;
        r->generate.ssm_mamba = s->ssm_mamba;
        r->generate.ssm_conv = s->ssm_conv;
        r->generate.cross_cache = s->kv_cross;
        r->generate.cross_tokens = s->kv_cross_tokens;
        r->generate.cross_images = s->kv_cross_images;
    }
    vc_peak *pk = &r->peak;
    pk->phase = s->phase;
    pk->weights = s->at_peak[CAT_WEIGHT];
    pk->gradients = s->at_peak[CAT_GRAD];
    pk->optimizer_states = s->at_peak[CAT_OPT];
    pk->activations = s->at_peak[CAT_ACT];
    pk->temporaries = s->at_peak[CAT_TEMP];
    pk->workspace = s->at_peak[CAT_WS];
    if (s->peak_inst >= 0) {
        const vc_inst *pi = &m->inst[s->peak_inst]; /* the source's module name where the file gives one */
        vc_cat3(pk->layer, sizeof pk->layer, pi->module ? pi->module : pi->path, "", "");
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
        vc_cat3(li->name, sizeof li->name, in->module ? in->module : in->path, "", "");
        vc_cat3(li->kind, sizeof li->kind, in->kind->name, "", "");
        const vc_shape *sh = &m->val[in->out].shape;
        li->ndim = sh->nd;
        memcpy(li->output_shape, sh->d, sizeof sh->d);
        li->parameters = in->nparams;
        li->activations = inst_act[i];
    }
    return VC_OK;
}

/* --compile: the same step run eagerly, beside the compiled figures (src/engine/compile.c) */
vc_status vc__compile_eager(const vc_model *m, const vc_options *o, const int64_t saved[2], vc_result *r,
                            vc_error *err)
{
    if (!o->compile) return VC_OK;
    vc_memory *mm = &r->memory;
    vc_options eager = *o;
    eager.compile = 0;
    vc_sim s;
    vc_status st = vc__simulate_as(m, &eager, &s, err);
    if (st) return st;
    mm->compile.on = 1;
    mm->compile.reorder = vc_release_value(o->torch_version, VC_REL_INDUCTOR_REORDER);
    mm->compile.eager_activations = s.activations;
    mm->compile.eager_peak_allocated = s.peak;
    mm->compile.eager_reserved = s.reserved;
    mm->compile.saved_eager = saved[0];
    mm->compile.saved_compiled = saved[1];
    if (__builtin_add_overflow(s.reserved, mm->cuda_context, &mm->compile.eager_total))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    return VC_OK;
}

vc_status vc_estimate(const vc_model *m, const vc_options *o, vc_result *r, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter, as the loaders' (model.c) */
    memset(r, 0, sizeof *r);
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    if (in_st) return in_st;
    vc_status st = vc__check_options(o, err);
    if (st) return st;
    if ((st = vc__model_at(m, o, &m, err))) return st; /* the model at the options' tp, sp and ep */
    if (o->pp > 1) { /* each pipeline stage, the busiest rank's figures (pipeline.c) */
        vc_pipeline *pl = NULL;
        if ((st = vc__pp_new(m, o, 0, &pl, err))) return st;
        st = vc__pp_run(pl, o->batch, r, err);
        vc__pp_free(pl);
        return st;
    }
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
    unsigned uses = vc__plan_uses(p);
    bool conv = vc__plan_has_conv(p);
    int64_t saved[2];
    vc__plan_compile_saved(p, &saved[0], &saved[1]);
    vc_plan_free(p);
    if (st) {
        free(act);
        return st;
    }
    st = vc_result_from_sim(m, o->optim, &s, act, r, err);
    free(act);
    if (st) return st;
    memcpy(r->attention, note, sizeof note);
    if (m->loss == VC_LOSS_GRPO && o->mode == VC_MODE_TRAIN && (st = vc__grpo_phases(m, o, &s, r, err))) return st;
    if ((st = finish(r, o, uses, err))) return st;
    if ((st = vc__first_step(m, o, r, err))) return st;
    if ((st = vc__cudnn_interval(m, o, conv, r, err))) return st;
    return vc__compile_eager(m, o, saved, r, err);
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
    vc_error_clear(err);
    memset(r, 0, sizeof *r);
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    if (in_st) return in_st;
    vc_status st = vc__check_options(o, err);
    if (st) return st;
    if (o->pp > 1) return vc_set_error(err, VC_ERR_USAGE, O("pp"), "needs a model: the counts-only estimate has no layers to split into stages");
    if (params < 0) return vc_set_error(err, VC_ERR_USAGE, O("params"), "must be a non-negative integer");
    if (acts < 0) return vc_set_error(err, VC_ERR_USAGE, O("activations"), "must be a non-negative integer");
    bool train = o->mode == VC_MODE_TRAIN;
    /* bytes per parameter from the precision's row: weights (+ the fp32
     * master copy in training), gradients, each optimizer state; and per
     * activation element (the autocast dtype where there is one) */
    const vc_precision_row *pr = vc_precision_row_get(o->precision);
    int wsz = vc_dtype_size(pr->param_dt), gsz = wsz;
    int asz = vc_dtype_size(pr->amp_dt != VC_DT_F32 ? pr->amp_dt : pr->act_dt), master = pr->master ? 4 : 0;
    vc_memory *mm = &r->memory;
    /* the optimizer's state for the whole model as one 1-D parameter of
     * `params` elements, from its row (seed 003 counts whole tensors, no
     * implementation, no 512-byte blocks) */
    const vc_optim_row *opt = vc_optim_row_get(o->optim);
    if (train && opt->steps && opt->state && params > 0) {
        vc_param_entry all = {params, true, 1, 0, -1, "p", &params};
        vc_optim_ctx ctx = {VC_IMPL_FOREACH, pr->master ? VC_DT_F32 : pr->param_dt, NULL};
        vc_tspec ts[2 * VC_OPTIM_MAX];
        int n = opt->state(&all, &ctx, ts);
        if (opt->shared) n += opt->shared(&all, &ctx, ts + n);
        for (int k = 0; k < n; k++)
            if (counts_term(ts[k].n.fx, vc_dtype_size((vc_dtype)ts[k].dt),
                            ts[k].outside ? &mm->optimizer_states_paged : &mm->optimizer_states, err))
                return err ? err->code : VC_ERR_OVERFLOW;
    }
    r->parameters = r->trainable_parameters = params;
    /* Seed 003: plain element counts times bytes, no per-tensor rounding. */
    if (counts_term(params, wsz + (train ? master : 0), &mm->weights, err) ||
        (train && counts_term(params, gsz, &mm->gradients, err)))
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
    return finish(r, o, VC_USES_GEMM, err); /* no layers: a model with Linear layers' cuBLAS */
}

void vc_result_free(vc_result *r)
{
    if (!r) return;
    free(r->layers);
    r->layers = NULL;
    r->nlayers = 0;
    free(r->ranks);
    r->ranks = NULL;
    r->nranks = 0;
}

vc_status vc_trace(const vc_model *m, const vc_options *o, void (*line)(void *, const char *), void *ctx, vc_error *err)
{
    vc_error_clear(err);
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    return in_st ? in_st : vc__trace(m, o, NULL, line, ctx, err);
}

vc_status vc__trace(const vc_model *m, const vc_options *o, const vc_grpo_engine *v, void (*line)(void *, const char *),
                    void *ctx, vc_error *err)
{
    vc_status st = vc__check_options(o, err);
    if (st) return st;
    if (o->pp > 1) return vc_set_error(err, VC_ERR_USAGE, O("trace"), "not available with " O("pp") ": trace one stage as its own model");
    if ((st = vc__model_at(m, o, &m, err))) return st; /* the model at the options' tp, sp and ep */
    vc_plan *p = NULL;
    if ((st = vc_plan_build(m, o, &p, err))) return st;
    int64_t total = 0;
    if (v && (st = vc__grpo_trace_head(v, &total, line, ctx))) {
        vc_plan_free(p);
        return vc_set_error(err, st, NULL, "total memory exceeds 2^63 bytes");
    }
    st = vc_plan_trace(p, o->batch, &total, line, ctx);
    vc_plan_free(p);
    if (st) return vc_set_error(err, st, NULL, "batch %lld overflows 64-bit arithmetic", (long long)o->batch);
    return v ? vc__grpo_trace_tail(m, o, v, &total, line, ctx, err) : VC_OK;
}
