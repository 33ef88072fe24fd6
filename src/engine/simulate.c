/*
 * simulate.c — one batch's figures: the allocated pass (replay.c), then
 * `reserved` from a monotone envelope of the allocator model's values at
 * grid batches (for a batch-dependent plan, each from the plan built for
 * that grid batch).
 */
#include <string.h>

#include "plan.h"
#include "util.h"

/* `total` must never decrease as the batch grows (docs/contract.md §5), but the caching
 * allocator's reserve can, as PyTorch's does: a request moving from the small
 * to the large pool, or best-fit packing that happens to be worse at one
 * batch than at the next (a 2,000-layer MLP's replay falls by 1 GB, 5%,
 * from batch 768 to 800). A monotone `reserved` that is cheap for any batch:
 *
 *  - the allocator model is replayed at the grid batches 1, 2, ..., 8, then
 *    VC_GRID_STEPS points per octave (12, 16, 24, 32, 48, ...);
 *  - at a grid batch, reserved is the model's maximum over the grid batches
 *    up to it (so it never falls from one grid batch to the next);
 *  - between two grid batches it is interpolated linearly and rounded up to
 *    the 2 MiB granularity of segments;
 *  - and never less than the peak of allocated blocks at the batch itself.
 *
 * Every piece is non-decreasing in the batch, so is the result. A sweep or a
 * max-batch search replays each grid batch once (memoized in the plan); a
 * batch asked first (one estimate, a search's probe) replays its grid batch
 * in full and those below it only until each is proven at most the most so
 * far (grid_cum, alloc.c bounded), which is all the maximum needs. */
#define VC_GRID_EXACT 8
#define VC_GRID_STEPS 2

static int64_t grid_batch(size_t k)
{
    if (k < VC_GRID_EXACT) return (int64_t)k + 1;
    size_t j = k - VC_GRID_EXACT, oct = j / VC_GRID_STEPS;
    if (oct > 52) return INT64_MAX;
    int64_t q = (int64_t)VC_GRID_EXACT << oct;
    return q + q * (int64_t)(j % VC_GRID_STEPS + 1) / VC_GRID_STEPS;
}

/* The allocator model at grid batch g: this plan's replay when it holds for
 * g (vc_plan_batch_range), or the replay of the plan built for g (the
 * grid's source's, an estimator's cache, or one built here). That plan's
 * sizes and choices are the model's at g; replaying this plan at g instead
 * mixes in sizes fixed for this plan's batch, so the grid values, and the
 * envelope, depended on which batch asked, and `total` could fall: with the
 * math attention, sweeps of 2,048 batches fell at 24 to 100 batches, by up
 * to 6.5% (whisper_base_encoder; BERT 2.9%, ViT-B/16 5.1%). limit > 0: -3
 * when the replay is proven at most limit before its end. */
static int64_t grid_replay(const vc_build *b, int64_t g, int64_t limit)
{
    if (g >= b->blo && g <= b->bhi) return vc__replay_reserved(b, g, limit); /* this plan holds for g */
    const vc_grid *G = b->memo->grid;
    const vc_plan *q = G->source ? G->source(G->source_ctx, g) : NULL;
    if (q) return vc__replay_reserved(q, g, limit);
    vc_options o = b->o;
    o.batch = g;
    vc_plan *p = NULL;
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_status st = vc_plan_build(b->m, &o, &p, &err);
    if (st) return st == VC_ERR_NOMEM ? -1 : -2;
    int64_t v = vc__replay_reserved(p, g, limit);
    vc_plan_free(p);
    return v;
}

/* grid batch k's replay: its reserve, -3 at most limit (> 0), -1 out of memory, -2 too large */
static int64_t grid_value(const vc_build *b, size_t k, int64_t limit)
{
    int64_t g = grid_batch(k);
    return g == INT64_MAX ? -2 : grid_replay(b, g, limit);
}

/* cum[k], the most over grid batches 0..k: -1 out of memory, -2 too large.
 * Batch k is replayed first, then the ones below it not yet known, from k
 * down to one whose cum is known, each with the most so far as its limit: a
 * replay proven at most that before its end stops (alloc.c bounded) and
 * keeps the limit as its bound. Only cum[k] is then known: below it, a
 * grid batch's bound was against a maximum that counted k. */
static int64_t grid_cum(const vc_build *b, size_t k)
{
    vc_grid *G = b->memo->grid;
    if (k >= G->cap) {
        size_t nc = k + 16;
        vc_grid_pt *np = realloc(G->pt, nc * sizeof *np);
        if (!np) return -1;
        G->pt = np;
        G->cap = nc;
    }
    for (; G->n <= k; G->n++) G->pt[G->n] = (vc_grid_pt){-1, -1, INT64_MAX};
    if (G->pt[k].cum >= 0) return G->pt[k].cum;
    if (G->pt[k].val < 0) {
        int64_t v = grid_value(b, k, 0);
        if (v < 0) return v;
        G->pt[k].val = v;
    }
    int64_t m = G->pt[k].val;
    for (size_t j = k; j-- > 0;) {
        vc_grid_pt *P = &G->pt[j];
        if (P->cum >= 0) {
            if (P->cum > m) m = P->cum;
            break;
        }
        if (P->val < 0 && P->ub > m) {
            int64_t v = grid_value(b, j, m);
            P = &G->pt[j];
            if (v == -3) P->ub = m;
            else if (v < 0) return v;
            else P->val = v;
        }
        if (P->val > m) m = P->val;
    }
    G->pt[k].cum = m;
    return m;
}

static int64_t reserved_envelope(const vc_build *b, int64_t batch, int64_t peak)
{
    size_t k = 0;
    while (grid_batch(k + 1) <= batch) k++;
    int64_t lo = grid_cum(b, k), r = lo;
    if (lo < 0) return lo;
    int64_t g0 = grid_batch(k);
    if (g0 < batch) {
        int64_t hi = grid_cum(b, k + 1), g1 = grid_batch(k + 1);
        if (hi < 0) return hi;
        __extension__ __int128 d = (__int128)(hi - lo) * (batch - g0);
        int64_t seg = 2 * 1024 * 1024;
        r = lo + (int64_t)((d + (g1 - g0) - 1) / (g1 - g0));
        r = (r + seg - 1) / seg * seg;
        if (r > hi) r = hi;
    }
    return r > peak ? r : peak;
}

static vc_status simulate(const vc_plan *p, int64_t batch, int64_t limit, vc_sim *sim, int64_t *inst_act, vc_error *err)
{
    const vc_build *b = p;
    /* beam search: _expand_inputs_for_generation's batch x num_beams rows (generate.c "Beam search") */
    if (b->gen.on && b->gen.beams > 1 && __builtin_mul_overflow(batch, b->gen.beams, &batch))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "batch x beams overflows 64-bit arithmetic");
    vc_status st = vc__replay_allocated(b, batch, sim, inst_act, err);
    if (st) return st;
    sim->outside = b->outside;
    /* the envelope may replay the allocator model (into the memo's sizes): the pass is done with them */
    sim->reserved = sim->peak > limit ? sim->peak : reserved_envelope(b, batch, sim->peak);
    if (sim->reserved == -2)
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "batch %lld is beyond the allocator model (2^61 bytes)",
                            (long long)batch);
    if (sim->reserved < 0) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    return VC_OK;
}

vc_status vc_plan_simulate(const vc_plan *p, int64_t batch, vc_sim *sim, int64_t *inst_act, vc_error *err)
{
    return simulate(p, batch, INT64_MAX, sim, inst_act, err);
}

vc_status vc_plan_simulate_limit(const vc_plan *p, int64_t batch, int64_t limit, vc_sim *sim, vc_error *err)
{
    return simulate(p, batch, limit, sim, NULL, err);
}

