/*
 * sweep.c — many batch sizes from few plans (issue 4, issue 16): the
 * estimator behind --sweep and --max-batch.
 *
 * vc_estimate() builds the step's plan (loader output -> autograd ops ->
 * alloc/free events) and replays it once. Almost all of that is independent
 * of the batch: a plan holds for the batches its layers declared
 * (vc_batch_range: an attention kernel chosen by the batch, a transpose
 * that is contiguous only for batch 1), and within them it is the plan
 * vc_estimate() would build, its sizes per sample times the batch. The
 * estimator keeps the last few plans it built (EST_PLANS), replays
 * (vc_plan_simulate) the one whose batches hold the batch asked for, and
 * builds a new one only outside them. The allocator model's grid values do
 * not depend on which plan asks (simulate.c, grid_replay): the plans share
 * them, and a grid batch outside the asking plan's batches takes its plan
 * from the same cache. Results are identical to vc_estimate() with o->batch
 * set to the batch asked for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "pipeline.h"
#include "policy.h"
#include "util.h"

/* Plans kept: a model that depends on the batch in a few ranges (batch 1,
 * a kernel's split count) keeps each; one decided per batch (a layer that
 * calls vc_batch_dependent) is rebuilt when it comes back. The plans kept
 * hold at most EST_KEEP_EVENTS events in all, unless the newest and the
 * one being replayed alone pass it (a large model then keeps those two, as
 * when it was rebuilt per batch); the least recently used go before a new
 * one is built when it would pass that (taken as large as the last), so the
 * old plans and the new one are not held together. About 100 bytes an event
 * a plan, and as much again for its replays: TransformerEncoderLayer x
 * 10,000 (1.7 and 1.9 M events) swept over batches 1..40 keeps the plan of
 * batches 2 and above, not also batch 1's (745 MiB resident before, 416 MiB
 * after, 437 MB; issue 28's bound 512 MB). */
#define EST_PLANS 4
#define EST_KEEP_EVENTS (VC_MAX_PLAN_EVENTS / 10)

typedef struct {
    vc_plan *p;          /* NULL: free slot */
    int64_t lo, hi;      /* the batches it holds for */
    unsigned uses;       /* what its ops run (VC_USES_*), for the CUDA context */
    int8_t conv;         /* it runs a convolution (vc__plan_has_conv, a scan of its ops' names, once per
                          * plan and only when asked): 0 not known yet, 1 no, 2 yes */
    uint64_t used;       /* last use, for eviction */
    bool told;           /* its replays a sweep is to make were passed on (vc_estimator_run) */
} est_plan;

struct vc_estimator {
    const vc_model *m;    /* NULL: counts-only */
    vc_options o;
    unsigned flags;
    est_plan cache[EST_PLANS];
    vc_plan *plan;        /* the plan of the batch being estimated (one of cache[]) */
    est_plan *cur;        /* its slot in cache[] */
    uint64_t clock;
    vc_grid *grid;        /* the allocator model's grid values, shared by the plans */
    int64_t context;      /* cuda_context of the plan being estimated (src/engine/context.c) */
    vc_context_parts parts; /* ... and its parts */
    int64_t nccl;         /* NCCL's buffers of the layout (src/engine/nccl.c): the same for every batch */
    int64_t params, acts; /* counts-only */
    int64_t *act;         /* per-instance scratch */
    size_t rebuilt;       /* events of the plans built so far (VC_MAX_REBUILT_EVENTS) */
    vc_pipeline *pipe;    /* --pp: an estimator per stage (pipeline.c), used instead of plan */
    size_t builds;        /* plans built (vc_estimator_plans_built) */
    const int64_t *ahead; /* the sweep's batches from this run's on (vc__estimator_expect), NULL none */
    size_t nahead;
};

void vc__estimator_expect(vc_estimator *e, const int64_t *batches, size_t n)
{
    e->ahead = batches;
    e->nahead = n;
}

void vc_estimator_free(vc_estimator *e)
{
    if (!e) return;
    for (int i = 0; i < EST_PLANS; i++) vc_plan_free(e->cache[i].p);
    vc__pp_free(e->pipe);
    vc_grid_free(e->grid);
    free(e->act);
    free(e);
}

size_t vc_estimator_plans_built(const vc_estimator *e) { return e ? e->builds : 0; }

static vc_status nomem(vc_error *err) { return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory"); }

static vc_status new_common(const vc_options *o, vc_estimator **out, vc_error *err)
{
    *out = NULL;
    if (!o) return vc_set_error(err, VC_ERR_USAGE, NULL, "no options");
    /* vc_estimate_counts validates the options the way vc_estimate does and
     * fills cuda_context the same way (the library's one default). */
    vc_result r;
    vc_options c = *o; /* --pp is refused by the counts-only calculator, not by an estimator over a model */
    vc_status st = vc__check_options(o, err);
    c.gpus = o->gpus / o->pp; /* the same data-parallel world (vc__check_options: pp divides it) */
    c.pp = 1;
    c.micro_batches = 0;
    c.pp_virtual = 0;
    if (st || (st = vc_estimate_counts(0, 0, &c, &r, err))) return st;
    vc_estimator *e = calloc(1, sizeof *e);
    if (!e) return nomem(err);
    e->o = *o;
    e->context = r.memory.cuda_context;
    e->parts = r.memory.context_parts;
    vc_nccl_info n; /* the full options: a pipeline stage's keep its stages in nccl_stages */
    vc_nccl_per_gpu(o, &n);
    e->nccl = n.bytes;
    vc_result_free(&r);
    *out = e;
    return VC_OK;
}

/* The cached plan that holds for `batch`, NULL none. */
static est_plan *cached(vc_estimator *e, int64_t batch)
{
    for (int i = 0; i < EST_PLANS; i++)
        if (e->cache[i].p && e->cache[i].lo <= batch && batch <= e->cache[i].hi) {
            e->cache[i].used = ++e->clock;
            return &e->cache[i];
        }
    return NULL;
}

/* Frees the least recently used plans, other than slot's and keep, while
 * the plans kept and `more` events pass EST_KEEP_EVENTS. */
static void evict(vc_estimator *e, size_t more, const est_plan *slot, const vc_plan *keep)
{
    for (;;) {
        size_t total = more;
        est_plan *lru = NULL;
        for (int i = 0; i < EST_PLANS; i++) {
            est_plan *c = &e->cache[i];
            if (!c->p) continue;
            total += vc_plan_events(c->p);
            if (c != slot && c->p != keep && (!lru || c->used < lru->used)) lru = c;
        }
        if (total <= EST_KEEP_EVENTS || !lru) break;
        if (lru->p == e->plan) { /* the plan last estimated: another is chosen before the next replay */
            e->plan = NULL;
            e->cur = NULL;
        }
        vc_plan_free(lru->p);
        lru->p = NULL;
    }
}

/* Builds the plan for `batch` into the cache, evicting the least recently
 * used plan other than `keep` (the plan being replayed). budget: refuse
 * (VC_ERR_LIMIT) when the events built so far plus about this plan's would
 * pass VC_MAX_REBUILT_EVENTS. */
static vc_status build_plan(vc_estimator *e, int64_t batch, const vc_plan *keep, bool budget, est_plan **out,
                            vc_error *err)
{
    size_t last = e->plan ? vc_plan_events(e->plan) : 0;
    est_plan *slot = NULL;
    for (int i = 0; i < EST_PLANS; i++) {
        est_plan *c = &e->cache[i];
        if (c->p == keep && keep) continue;
        if (!slot || !c->p || (slot->p && c->used < slot->used)) slot = c;
        if (!slot->p) break;
    }
    /* the next plan costs about what the last one did: refused before it is
     * built when that would pass the budget (many batch sizes over a large
     * model whose plan holds for few batches each) */
    if (budget && e->builds && e->rebuilt + last > VC_MAX_REBUILT_EVENTS)
        return vc_set_error(err, VC_ERR_LIMIT, NULL,
                            "this model's plan depends on the batch size (an attention kernel or a layer that "
                            "chooses by it) and is rebuilt for each one: more than %d events rebuilt in all, the "
                            "limit (docs/limits.md); ask for fewer batch sizes", VC_MAX_REBUILT_EVENTS);
    /* the plans that would go once this one is built (about as large as the last) go before:
     * the peak is not the old ones and the new one together */
    evict(e, last, NULL, keep);
    vc_options o = e->o;
    o.batch = batch;
    vc_plan *p = NULL;
    vc_status st = vc_plan_build(e->m, &o, &p, err);
    if (st) return st;
    vc_plan_use_grid(p, e->grid);
    vc_plan_free(slot->p);
    slot->p = p;
    vc_plan_batch_range(p, &slot->lo, &slot->hi);
    slot->uses = vc__plan_uses(p);
    slot->conv = 0;
    slot->told = false;
    slot->used = ++e->clock;
    e->rebuilt += vc_plan_events(p);
    e->builds++;
    /* memory: the plans kept hold at most EST_KEEP_EVENTS events in all,
     * unless this one and `keep` alone pass it */
    evict(e, 0, slot, keep);
    *out = slot;
    return VC_OK;
}

/* Memory: the allocator model's replay state (replay.c: the pools' request
 * streams and the allocator's blocks, tens of bytes an event) is kept only
 * by the plan being replayed and the one a grid batch was last taken from:
 * the others' is let go (vc__plan_release_replay) and built again if they
 * are replayed again. */
static void release_others(vc_estimator *e, const vc_plan *keep)
{
    for (int i = 0; i < EST_PLANS; i++)
        if (e->cache[i].p && e->cache[i].p != keep && e->cache[i].p != e->plan) vc__plan_release_replay(e->cache[i].p);
}

/* simulate.c's source of plans for grid batches outside the asking plan's:
 * the cache, or a plan built into it (NULL: the caller builds its own) */
static const vc_plan *grid_plan(void *ctx, int64_t batch)
{
    vc_estimator *e = ctx;
    est_plan *c = cached(e, batch);
    vc_error err;
    memset(&err, 0, sizeof err);
    if (!c && build_plan(e, batch, e->plan, false, &c, &err)) return NULL;
    release_others(e, c->p);
    return c->p;
}

/* e->plan := c's plan, and the CUDA context of what it runs (the options
 * were checked by new_common: vc_context_estimate does not fail here) */
static void use_plan(vc_estimator *e, est_plan *c)
{
    e->plan = c->p;
    release_others(e, c->p);
    e->cur = c;
    (void)vc_context_estimate(&e->o, c->uses, &e->parts, &e->context, NULL);
}

vc_status vc_estimator_new(const vc_model *m, const vc_options *o, unsigned flags, vc_estimator **out,
                           vc_error *err)
{
    vc_error_clear(err);
    if (!m) return vc_set_error(err, VC_ERR_USAGE, NULL, "no model");
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    if (in_st) return in_st;
    vc_estimator *e;
    vc_status st = new_common(o, &e, err);
    if (st) return st;
    if ((st = vc__model_at(m, o, &m, err))) { /* the model at the options' tp, sp and ep */
        vc_estimator_free(e);
        return st;
    }
    e->m = m;
    e->flags = flags;
    e->act = calloc(m->ninst + 1, sizeof *e->act);
    if (!e->act || !(e->grid = vc_grid_new())) {
        vc_estimator_free(e);
        return nomem(err);
    }
    if (o->pp > 1) {
        if ((st = vc__pp_new(m, o, flags, &e->pipe, err))) {
            vc_estimator_free(e);
            return st;
        }
        *out = e;
        return VC_OK;
    }
    vc_grid_set_source(e->grid, grid_plan, e);
    est_plan *c;
    if ((st = build_plan(e, e->o.batch, NULL, true, &c, err))) {
        vc_estimator_free(e);
        return st;
    }
    use_plan(e, c);
    *out = e;
    return VC_OK;
}

vc_status vc_estimator_new_counts(int64_t params, int64_t activations_per_sample, const vc_options *o,
                                  vc_estimator **out, vc_error *err)
{
    vc_error_clear(err);
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    if (in_st) return in_st;
    vc_estimator *e;
    vc_result r;
    /* validate the counts once, with the first batch */
    vc_status st = vc_estimate_counts(params, activations_per_sample, o, &r, err);
    if (st) return st;
    vc_result_free(&r);
    if ((st = new_common(o, &e, err))) return st;
    e->params = params;
    e->acts = activations_per_sample;
    *out = e;
    return VC_OK;
}

/* e->plan := the plan for `batch`: a cached one that holds for it, or a new one. */
static vc_status plan_for(vc_estimator *e, int64_t batch, vc_error *err)
{
    est_plan *c = cached(e, batch);
    if (!c) {
        vc_status st = build_plan(e, batch, NULL, true, &c, err);
        if (st) return st;
    }
    use_plan(e, c);
    return VC_OK;
}

static vc_status check_batch(int64_t batch, vc_error *err)
{
    if (batch < 1) return vc_set_error(err, VC_ERR_USAGE, O("batch"), "must be a positive integer");
    return VC_OK;
}

static vc_status sim_total(const vc_estimator *e, const vc_sim *s, int64_t *total, vc_error *err)
{
    if (__builtin_add_overflow(s->reserved, e->context, total) || __builtin_add_overflow(*total, e->nccl, total))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    return VC_OK;
}

vc_status vc_estimator_run(vc_estimator *e, int64_t batch, vc_result *r, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    memset(r, 0, sizeof *r);
    vc_status st = check_batch(batch, err);
    if (st) return st;
    if (!e->m) {
        vc_options o = e->o;
        o.batch = batch;
        return vc_estimate_counts(e->params, e->acts, &o, r, err);
    }
    if (e->pipe) return vc__pp_run(e->pipe, batch, r, err);
    if ((st = plan_for(e, batch, err))) return st;
    if (e->ahead && !e->cur->told) { /* the sweep's rows this plan holds for, for its replays' candidates (replay.c) */
        size_t n = 0;
        for (size_t i = 0; i < e->nahead; i++) n += e->ahead[i] >= e->cur->lo && e->ahead[i] <= e->cur->hi;
        vc__plan_expect_replays(e->plan, n);
        e->cur->told = true;
    }
    e->ahead = NULL;
    bool layers = !(e->flags & VC_EST_NO_LAYERS);
    vc_sim s;
    if ((st = vc_plan_simulate(e->plan, batch, &s, layers ? e->act : NULL, err))) return st;
    r->memory.cuda_context = e->context;
    r->memory.context_parts = e->parts;
    r->memory.nccl = e->nccl;
    if ((st = sim_total(e, &s, &r->memory.total, err))) return st;
    if ((st = vc_result_from_sim(e->m, e->o.optim, &s, layers ? e->act : NULL, r, err))) return st;
    vc_cat3(r->attention, sizeof r->attention, vc_plan_note(e->plan), "", ""); /* attention kernel chosen */
    vc_options o = e->o; /* cuDNN's workspace interval (src/engine/cudnn.c) */
    o.batch = batch;
    if (e->m->loss == VC_LOSS_GRPO && o.mode == VC_MODE_TRAIN) { /* --loss grpo: its generation phase too (grpo.c) */
        if ((st = vc__grpo_phases(e->m, &o, &s, r, err))) return st;
        if (__builtin_add_overflow(r->memory.reserved, r->memory.cuda_context, &r->memory.total) ||
            __builtin_add_overflow(r->memory.total, r->memory.nccl, &r->memory.total))
            return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    }
    if ((st = vc__first_step(e->m, &o, r, err))) return st; /* --first-step: the run's first steps too */
    if (!e->cur->conv) e->cur->conv = vc__plan_has_conv(e->plan) ? 2 : 1;
    if ((st = vc__cudnn_interval(e->m, &o, e->cur->conv == 2, r, err))) return st;
    int64_t saved[2]; /* --compile: the eager step beside it (src/engine/compile.c) */
    vc__plan_compile_saved(e->plan, &saved[0], &saved[1]);
    return vc__compile_eager(e->m, &o, saved, r, err);
}

/* total at `batch`; when the allocated peak plus the context is already
 * above `limit`, a lower bound (the allocator model is not replayed) */
static vc_status estimator_total(vc_estimator *e, int64_t batch, int64_t limit, int64_t *total, vc_error *err)
{
    vc_status st = check_batch(batch, err);
    if (st) return st;
    if (!e->m) {
        vc_result r;
        if ((st = vc_estimator_run(e, batch, &r, err))) return st;
        *total = r.memory.total;
        vc_result_free(&r);
        return VC_OK;
    }
    if (e->pipe) return vc__pp_total(e->pipe, batch, total, err);
    if ((st = plan_for(e, batch, err))) return st;
    vc_sim s;
    int64_t outside = e->context + e->nccl; /* the context < 2^40, NCCL's < 2^51: no overflow */
    int64_t peak_limit = limit == INT64_MAX ? INT64_MAX : limit - outside; /* limit >= 0 */
    if ((st = vc_plan_simulate_limit(e->plan, batch, peak_limit, &s, err))) return st;
    return sim_total(e, &s, total, err);
}

vc_status vc_estimator_total(vc_estimator *e, int64_t batch, int64_t *total, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    return estimator_total(e, batch, INT64_MAX, total, err);
}

int64_t vc__estimator_state_floor(const vc_estimator *e)
{
    return e->m && !e->pipe && e->plan ? vc__plan_state_floor(e->plan) : 0;
}

vc_status vc__estimator_total_limit(vc_estimator *e, int64_t batch, int64_t limit, int64_t *total, vc_error *err)
{
    return estimator_total(e, batch, limit, total, err);
}

/* The max-batch search. total(batch) is non-decreasing (docs/contract.md §5) and close
 * to linear, so the boundary is predicted from the points already known and
 * both sides of the prediction are tried; a bisection step follows any
 * prediction that did not halve the bracket, and while no batch is known
 * not to fit each new probe at least doubles the last fitting one. So the
 * count stays O(log N) (exponential search, then bisection) while a
 * near-linear model needs about 4 or 5 estimates. */
typedef struct {
    vc_estimator *e;
    int64_t cap;
    int n;
    vc_status st;
    vc_error *err;
    int64_t lo, tlo;   /* largest batch known to fit, its total */
    int64_t hi, thi;   /* smallest batch known not to fit (0: none yet); total, INT64_MAX on overflow */
    int64_t pb, pt;    /* another fitting point, for the slope (pb < lo), 0 none */
} search;

/* 1: fits, 0: does not (or overflows), -1: another error. Updates the bracket. */
static int probe(search *S, int64_t b)
{
    vc_error tmp;
    memset(&tmp, 0, sizeof tmp);
    int64_t t;
    S->n++;
    vc_status st = estimator_total(S->e, b, S->cap, &t, &tmp); /* t > cap is all that matters when it does not fit */
    if (st == VC_ERR_OVERFLOW) t = INT64_MAX;
    else if (st) {
        if (S->err && S->err->code == VC_OK) *S->err = tmp;
        S->st = st;
        return -1;
    }
    if (t <= S->cap) {
        if (b > S->lo) {
            S->pb = S->lo;
            S->pt = S->tlo;
            S->lo = b;
            S->tlo = t;
        }
        return 1;
    }
    if (!S->hi || b < S->hi) {
        S->hi = b;
        S->thi = t;
    }
    return 0;
}

__extension__ typedef __int128 i128;

/* floor(a * b / c) for non-negative a, b and positive c, saturating */
static int64_t muldiv(int64_t a, int64_t b, int64_t c)
{
    i128 v = (i128)a * b / c;
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The allocator model's coarsest step: totals wobble around a straight line
 * by about one 20 MiB segment (kLargeBuffer). */
#define NOISE (INT64_C(20) << 20)

vc_status vc_estimator_max_batch(vc_estimator *e, int64_t capacity, int64_t *max_batch, int *estimates,
                                 vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    search S = {e, capacity, 0, VC_OK, err, 0, 0, 0, 0, 0, 0};
    *max_batch = 0;
    if (estimates) *estimates = 0;
    if (capacity < 0) return vc_set_error(err, VC_ERR_USAGE, O("gpu"), "capacity must not be negative");
    int f = probe(&S, 1);
    if (f <= 0) goto out;
    const int64_t t1 = S.tlo;
    /* phase 1, no batch known not to fit: aim a segment's worth past the
     * boundary that the slope from batch 1 predicts; while the total has not
     * grown yet, or when the last aim fell short, multiply instead
     * (exponential search) */
    bool short_last = false;
    while (!S.hi && S.lo < VC_MAX_BATCH_LIMIT) {
        int64_t dt = S.tlo - t1, g = dt > 0 ? 2 * S.lo : 8 * S.lo;
        if (S.lo > 1 && dt > 0) {
            int64_t pred = S.lo + muldiv(S.cap - S.tlo, S.lo - 1, dt);
            int64_t aim = pred + muldiv(NOISE, S.lo - 1, dt) + 1;
            if (!short_last || aim > g) g = aim;
        }
        if (g > VC_MAX_BATCH_LIMIT) g = VC_MAX_BATCH_LIMIT;
        if ((f = probe(&S, g)) < 0) goto out;
        short_last = f;
    }
    /* phase 2, lo fits and hi does not: interpolate, and probe the other
     * side of the guess by the expected wobble so that both ends move;
     * bisect after a round that did not halve the bracket */
    bool halved = true;
    while (S.hi && S.hi - S.lo > 1) {
        int64_t width = S.hi - S.lo, g;
        if (halved && S.thi != INT64_MAX) {
            g = S.lo + muldiv(S.cap - S.tlo, width, S.thi - S.tlo);
            if (g <= S.lo) g = S.lo + 1;
            if (g >= S.hi) g = S.hi - 1;
            int64_t d = muldiv(NOISE, width, S.thi - S.tlo) / 2 + 1;
            if ((f = probe(&S, g)) < 0) goto out;
            int64_t other = f ? g + d : g - d;
            if (other > S.lo && other < S.hi && probe(&S, other) < 0) goto out;
        } else {
            g = S.lo + width / 2;
            if (probe(&S, g) < 0) goto out;
        }
        halved = S.hi - S.lo <= width / 2;
    }
    *max_batch = S.lo;
out:
    if (estimates) *estimates = S.n;
    return S.st;
}
