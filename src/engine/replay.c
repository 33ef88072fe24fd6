/*
 * replay.c — a plan's events replayed for one batch size: every storage's
 * bytes at that batch, the allocated peak and its breakdown (one pass over
 * the batch-dependent events, the others folded in), the per-layer saved
 * bytes, the caching allocator model's reserve (alloc.c) per pool, and the
 * --trace listing.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "util.h"

void vc__memo_free(res_memo *M)
{
    if (!M) return;
    free(M->a); free(M->c); free(M->cat); free(M->dep);
    free(M->grp); free(M->grp_rep); free(M->pers_cnt); free(M->pk_cnt); free(M->mk_cnt); free(M->mk_acnt); free(M->grp_val);
    for (int q = 0; q < 3; q++) {
        free(M->cand[q].fixed); free(M->cand[q].pos); free(M->cand[q].cnt);
    }
    free(M->lin); free(M->frm); free(M->frm_id); free(M->form_rep); free(M->form_comp); free(M->form_val); free(M->code); free(M->orig); free(M->fold);
    for (int q = 0; q < 2; q++) {
        vc_alloc_scratch_free(&M->pool[q].scratch);
        free(M->pool[q].ev);
    }
    free(M->sz); free(M->evidx); free(M->last_sz); free(M->size_rep); free(M->own.pt); free(M->pk_dep);
    free(M);
}

/* The allocator model's replay state (the pools' streams and the allocator's
 * blocks, tens of bytes an event) let go: a plan the estimator no longer
 * replays keeps only what its allocated pass reads; its next reserve, if
 * any, starts again from the first event (the same values: the streams kept
 * and the prefix state only save work). */
void vc__plan_release_replay(const vc_plan *p)
{
    res_memo *M = p ? p->memo : NULL;
    if (!M || !M->streams_ready) return;
    for (int q = 0; q < 2; q++) {
        vc_alloc_scratch_free(&M->pool[q].scratch);
        free(M->pool[q].ev);
        M->pool[q].ev = NULL;
        M->pool[q].n = 0;
        M->pool[q].pre = 0;
        M->pool[q].last = -1;
    }
    free(M->last_sz);
    free(M->size_rep);
    M->last_sz = NULL;
    M->size_rep = NULL;
    M->nsize_rep = M->nsize_lin = 0;
    M->streams_ready = false;
}

#define VC_MAX_BLOCK (INT64_C(1) << 61)

void vc__plan_expect_replays(const vc_plan *p, size_t n)
{
    res_memo *M = p ? p->memo : NULL;
    if (M) M->expect = n > INT32_MAX ? INT32_MAX : (int)n;
}

/* The fold (prepare): the batch-dependent events, each with the fixed-size
 * ones before it summed; the end-of-forward marker ends a fold. -1 out of memory. */
static int build_folds(const vc_build *b)
{
    res_memo *M = b->memo;
    const size_t n = M->ncode;
    M->fold = malloc((n + 1) * sizeof *M->fold);
    if (!M->fold) return -1;
    fold_t f = {INT32_MIN, -1, -1, 0, INT64_MIN, 0, INT64_MIN}, *fold = M->fold;
    size_t nfold = M->nfold; /* a local: the folds' stores cannot change it, so it is not read again each time */
    const int32_t *code = M->code;
    const int64_t *cs = M->c, *sz = M->sz;
    const uint8_t *cat = M->cat;
    M->fwd_fold = (size_t)-1;
    for (size_t i = 0; i <= n; i++) {
        if (i == M->fwd_end) { /* the marker ends a fold: the peaks before and after it stay apart */
            if (f.fmax != INT64_MIN || f.fdelta || f.adelta) {
                f.pos = (int32_t)i;
                fold[nfold++] = f;
                f = (fold_t){INT32_MIN, -1, -1, 0, INT64_MIN, 0, INT64_MIN};
            }
            M->fwd_fold = nfold;
            M->fwd_aoff = 0;
        }
        int32_t c = i < n ? code[i] : INT32_MIN, st = c >= 0 ? c : ~c;
        if (c == INT32_MIN || cs[st] > 0) {
            f.code = c;
            f.pos = (int32_t)i;
            fold[nfold++] = f;
            f = (fold_t){INT32_MIN, -1, -1, 0, INT64_MIN, 0, INT64_MIN};
            continue;
        }
        int64_t v = sz[st];
        bool act = cat[st] == CAT_ACT;
        if (c < 0) {
            f.fdelta -= v;
            if (act) f.adelta -= v;
            continue;
        }
        /* a running sum past 2^63 here is one past 2^63 in the replay (sums before are >= 0) */
        if (__builtin_add_overflow(f.fdelta, v, &f.fdelta) || (act && __builtin_add_overflow(f.adelta, v, &f.adelta)))
            M->fold_overflow = true;
        if (f.fdelta > f.fmax) {
            f.fmax = f.fdelta;
            f.fmax_pos = (int32_t)i;
        }
        if (act && f.adelta > f.amax) f.amax = f.adelta;
    }
    M->nfold = nfold;
    return 0;
}

/* A merged transient's bytes are at most a + c x batch: the sum of its parts'
 * (each rounded up by at most 511 bytes), saturated at 2^62 (c > 0 marks it
 * as depending on the batch, as for any storage). */
static void comp_bounds(const vc_build *b, int32_t k, int64_t *a, int64_t *c)
{
    const int64_t cap = INT64_C(1) << 62;
    const comp_t *q = &b->comp[k];
    *a = *c = 0;
    if (q->red_in > 0) {
        vc_reduce_scratch_bounds(q->rout, q->rps, q->rfx, 4, a, c);
        return;
    }
    for (int32_t i = 0; i < q->np; i++) {
        const part_t *p = &b->part[q->p0 + i];
        int64_t x, y;
        int64_t m = p->dts * p->mul / p->div + 1; /* bytes per element counted, at least (div rounds down) */
        if (p->mul > cap / p->dts || __builtin_mul_overflow(p->fx, m, &x) || __builtin_add_overflow(x, 511, &x) ||
            x > cap)
            x = cap;
        if (p->mul > cap / p->dts || __builtin_mul_overflow(p->ps, m, &y) || y > cap) y = cap;
        *a = *a + x > cap ? cap : *a + x;
        *c = *c + y > cap ? cap : *c + y;
    }
}

/* A floor count's bytes (vc_numel div > 1: floor((ps x B + fx) / div) x mul
 * elements of d bytes) are at most a + c x batch, as comp_bounds bounds a part */
static void floor_bounds(const vc_numel *n, int64_t d, int64_t *a, int64_t *c)
{
    const int64_t cap = INT64_C(1) << 62;
    int64_t mul = n->mul > 0 ? n->mul : 1, m = d * mul / n->div + 1; /* bytes per element counted, at least */
    if (__builtin_mul_overflow(n->fx, m, a) || __builtin_add_overflow(*a, 511, a) || *a > cap) *a = cap;
    if (__builtin_mul_overflow(n->ps, m, c) || *c > cap) *c = cap;
}

/* A hash of storage s's size formula (its vc_numel and dtype, or its merged
 * transient's fields and parts), for group_formulas. */
static uint64_t mix(uint64_t h, int64_t v) { return (h ^ (uint64_t)v) * UINT64_C(0x100000001b3); }

static uint64_t formula_hash(const vc_build *b, int32_t s)
{
    const stor_t *t = &b->s[s];
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    if (t->comp < 0) return mix(mix(mix(mix(mix(h, t->n.ps), t->n.fx), t->n.div), t->n.mul), t->dt);
    const comp_t *k = &b->comp[t->comp];
    h = mix(mix(mix(mix(mix(mix(h, k->np), k->cap), k->red_in), k->rps), k->rfx), k->rout);
    for (int32_t i = 0; i < k->np; i++) {
        const part_t *p = &b->part[k->p0 + i];
        h = mix(mix(mix(mix(mix(mix(h, p->ps), p->fx), p->div), p->mul), p->dts), p->alt);
    }
    return h;
}

/* true when storages s and r have the same size formula: the same bytes at every batch
 * (vc__stor_bytes and vc__comp_bytes read nothing else) */
static bool same_formula(const vc_build *b, int32_t s, int32_t r)
{
    const stor_t *t = &b->s[s], *u = &b->s[r];
    if ((t->comp < 0) != (u->comp < 0)) return false;
    if (t->comp < 0)
        return t->n.ps == u->n.ps && t->n.fx == u->n.fx && t->n.div == u->n.div && t->n.mul == u->n.mul && t->dt == u->dt;
    if (t->comp == u->comp) return true;
    const comp_t *k = &b->comp[t->comp], *q = &b->comp[u->comp];
    if (k->np != q->np || k->cap != q->cap || k->red_in != q->red_in || k->rps != q->rps || k->rfx != q->rfx ||
        k->rout != q->rout)
        return false;
    for (int32_t i = 0; i < k->np; i++) {
        const part_t *p = &b->part[k->p0 + i], *o = &b->part[q->p0 + i];
        if (p->ps != o->ps || p->fx != o->fx || p->div != o->div || p->mul != o->mul || p->dts != o->dts ||
            p->alt != o->alt)
            return false;
    }
    return true;
}

/* The batch-dependent storages split into lin[] (bytes a + c x batch) and
 * frm[] (a floor count or a merged transient), the latter grouped by size
 * formula: a MoE model's thousands of expert buffers have a few dozen
 * distinct formulas, each evaluated once per batch. -1 out of memory. */
static int group_formulas(const vc_build *b)
{
    res_memo *M = b->memo;
    size_t nf = 0;
    for (size_t i = 0; i < M->ndep; i++) {
        const stor_t *t = &b->s[M->dep[i]];
        nf += t->comp >= 0 || t->n.div > 1;
    }
    size_t cap = 16;
    while (cap < 2 * nf) cap *= 2;
    int32_t *slot = malloc(cap * sizeof *slot);
    M->lin = malloc((M->ndep - nf + 1) * sizeof *M->lin);
    M->frm = malloc((nf + 1) * sizeof *M->frm);
    M->frm_id = malloc((nf + 1) * sizeof *M->frm_id);
    M->form_rep = malloc((nf + 1) * sizeof *M->form_rep);
    M->form_comp = malloc((nf + 1) * sizeof *M->form_comp);
    M->form_val = malloc((nf + 1) * sizeof *M->form_val);
    if (!slot || !M->lin || !M->frm || !M->frm_id || !M->form_rep || !M->form_comp || !M->form_val) {
        free(slot);
        return -1;
    }
    for (size_t i = 0; i < cap; i++) slot[i] = -1;
    for (size_t i = 0; i < M->ndep; i++) {
        int32_t s = M->dep[i];
        const stor_t *t = &b->s[s];
        if (t->comp < 0 && t->n.div <= 1) {
            M->lin[M->nlin++] = s;
            continue;
        }
        size_t h = (size_t)formula_hash(b, s) & (cap - 1);
        while (slot[h] >= 0 && !same_formula(b, s, M->form_rep[slot[h]])) h = (h + 1) & (cap - 1);
        if (slot[h] < 0) {
            slot[h] = (int32_t)M->nform;
            M->form_rep[M->nform] = s;
            M->form_comp[M->nform++] = t->comp >= 0;
        }
        M->frm_id[M->nfrm] = slot[h];
        M->frm[M->nfrm++] = s;
    }
    free(slot);
    return 0;
}

static int prepare(const vc_build *b)
{
    res_memo *M = b->memo;
    if (M->ready) return 0;
    if (M->a) return -1; /* an earlier call ran out of memory: do not allocate (and leak) again */
    M->a = malloc((b->ns + 1) * sizeof *M->a);
    M->c = malloc((b->ns + 1) * sizeof *M->c);
    M->cat = malloc(b->ns + 1);
    M->pk = (size_t)-1;
    M->sz = malloc((b->ns + 1) * sizeof *M->sz);
    M->evidx = malloc((b->ns + 1) * sizeof *M->evidx);
    M->code = malloc((b->nev + 1) * sizeof *M->code);
    M->orig = malloc((b->nev + 1) * sizeof *M->orig);
    M->pool[0].last = M->pool[1].last = -1;
    if (!M->a || !M->c || !M->cat || !M->sz || !M->evidx || !M->code || !M->orig) return -1;
    int8_t dsz[256] = {0}; /* vc_dtype_size per dtype, looked up once each */
    for (size_t s = 0; s < b->ns; s++) {
        uint8_t dt = b->s[s].dt;
        if (!dsz[dt]) dsz[dt] = (int8_t)vc_dtype_size((vc_dtype)dt);
        int64_t d = dsz[dt];
        /* the loader keeps element counts under 2^56: no overflow */
        M->a[s] = b->s[s].n.fx * d;
        M->c[s] = b->s[s].n.ps * d;
        if (b->s[s].comp >= 0) comp_bounds(b, b->s[s].comp, &M->a[s], &M->c[s]);
        else if (b->s[s].n.div > 1) floor_bounds(&b->s[s].n, d, &M->a[s], &M->c[s]);
        M->cat[s] = b->s[s].cat;
        if (M->a[s] > M->amax) M->amax = M->a[s];
        if (M->c[s] > M->cmax) M->cmax = M->c[s];
    }
    M->dep = malloc((b->ns + 1) * sizeof *M->dep);
    if (!M->dep) return -1;
    for (size_t s = 0; s < b->ns; s++) {
        uint8_t c = M->cat[s];
        if (M->c[s] > 0) {
            M->dep[M->ndep++] = (int32_t)s;
            continue;
        }
        const stor_t *t = &b->s[s];
        /* a plain count of fixed elements (a = fx x its dtype's size, the loader's counts under 2^56): vc_bytes at
         * batch 1 without the call */
        int64_t v = M->sz[s] = t->comp < 0 && t->n.div <= 1 && t->n.ps == 0 && t->n.fx >= 0 && t->n.fx < INT64_C(1) << 56
                                   ? (M->a[s] + 511) & ~INT64_C(511)
                                   : vc__stor_bytes(b, (int32_t)s, 1);
        /* resident gradients: a parallel layout's buffers (DDP's buckets) */
        if (((c == CAT_WEIGHT && !b->s[s].transient) || c == CAT_OPT || c == CAT_WS || (c == CAT_GRAD && b->s[s].resident)) &&
            M->fixed_persistent[c] >= 0 &&
            (v < 0 || __builtin_add_overflow(M->fixed_persistent[c], v, &M->fixed_persistent[c])))
            M->fixed_persistent[c] = -1;
        if (c == CAT_GRAD && b->s[s].resident && M->fixed_resident_grad >= 0 &&
            (v < 0 || __builtin_add_overflow(M->fixed_resident_grad, v, &M->fixed_resident_grad)))
            M->fixed_resident_grad = -1;
    }
    /* gradients: one per trainable parameter, as AccumulateGrad keeps it (parameters do not depend on the batch),
     * none where they are views into the layout's resident buckets (counted above) */
    for (size_t q = 0; q < b->nflat && b->train; q++) /* ... or the layout's sharded ones (FSDP) */
        if (b->flat[q].e.trainable && M->fixed_persistent[CAT_GRAD] >= 0) {
            int64_t v = vc_bytes(b->flat[q].held.n, (vc_dtype)b->flat[q].held.dt, 1);
            if (v < 0 || __builtin_add_overflow(M->fixed_persistent[CAT_GRAD], v, &M->fixed_persistent[CAT_GRAD]))
                M->fixed_persistent[CAT_GRAD] = -1;
        }
    for (size_t q = 0; q < b->m->npar && b->train && !b->flat && !b->layout->grad_views; q++)
        if (b->m->par[q].trainable && M->fixed_persistent[CAT_GRAD] >= 0) {
            const tens_t *t = &b->t[b->par_t[q]];
            int64_t v = vc_bytes(t->n, (vc_dtype)t->dt, 1);
            if (v < 0 || __builtin_add_overflow(M->fixed_persistent[CAT_GRAD], v, &M->fixed_persistent[CAT_GRAD]))
                M->fixed_persistent[CAT_GRAD] = -1;
        }
    size_t n = 0;
    M->fwd_end = (size_t)-1;
    for (size_t i = 0; i < b->nev; i++) {
        const ev_t *e = &b->ev[i];
        if (e->kind == EV_FWD_END) {
            M->fwd_end = n;
            continue;
        }
        M->orig[n] = (int32_t)i;
        M->code[n++] = e->kind == EV_ALLOC ? e->stor : ~e->stor;
    }
    M->ncode = n;
    for (M->first_dep = 0; M->first_dep < n; M->first_dep++) {
        int32_t c = M->code[M->first_dep];
        if (M->c[c >= 0 ? c : ~c] > 0) break;
    }
    if (build_folds(b) || group_formulas(b)) return -1;
    M->ready = true;
    return 0;
}

/* true when no storage passes 2^61 bytes at `batch` (every one's bounds are under it): sizes_at's fast path */
static bool fast_batch(const res_memo *M, int64_t batch)
{
    return !(M->amax > VC_MAX_BLOCK || (M->cmax > 0 && batch > (VC_MAX_BLOCK - M->amax) / M->cmax));
}

/* Every storage's bytes at `batch` into M->sz: -3 when one passes 2^63
 * (the rest unset), -2 when one passes 2^61. */
static int sizes_at(const vc_build *b, int64_t batch)
{
    res_memo *M = b->memo;
    int64_t *sz = M->sz;
    if (!fast_batch(M, batch)) {
        int r = 0;
        for (size_t s = 0; s < b->ns; s++) { /* the slow, exact check */
            if ((sz[s] = vc__stor_bytes(b, (int32_t)s, batch)) < 0) return -3;
            if (sz[s] > VC_MAX_BLOCK) r = -2;
        }
        return r;
    }
    /* the others were sized once, in prepare(); a size formula once per distinct one (group_formulas) */
    for (size_t u = 0; u < M->nform; u++) {
        int32_t s = M->form_rep[u];
        M->form_val[u] = M->form_comp[u] ? vc__comp_bytes(b, b->s[s].comp, batch) /* a merged transient: its parts rounded one by one */
                                         : vc__stor_bytes(b, s, batch); /* a floor count (below VC_MAX_BLOCK: its bounds are) */
    }
    for (size_t i = 0; i < M->nfrm; i++) sz[M->frm[i]] = M->form_val[M->frm_id[i]];
    for (size_t i = 0; i < M->nlin; i++) {
        int32_t s = M->lin[i];
        int64_t v = M->a[s] + M->c[s] * batch;
        sz[s] = (v + 511) & ~INT64_C(511); /* vc_bytes: 512-byte blocks, 0 stays 0 */
    }
    return 0;
}

/* What is live after event pk, into M->pk_*: the fixed-size storages'
 * bytes by category, and the batch-dependent storages by category (their
 * bytes change with the batch; the set does not). -1 out of memory. */
static int peak_breakdown(const vc_build *b, size_t pk)
{
    res_memo *M = b->memo;
    if (!M->pk_dep && !(M->pk_dep = malloc((M->ndep + 1) * sizeof *M->pk_dep))) return -1;
    int32_t *live = M->evidx; /* scratch, as in replay_reserved: 1 when a dependent storage is live */
    for (size_t i = 0; i < M->ndep; i++) live[M->dep[i]] = 0;
    int64_t fixed[CAT__N] = {0};
    for (size_t i = 0; i <= pk; i++) {
        int32_t c = M->code[i], s = c >= 0 ? c : ~c;
        if (M->c[s] > 0) live[s] = c >= 0;
        else fixed[M->cat[s]] += c >= 0 ? M->sz[s] : -M->sz[s];
    }
    int32_t n[CAT__N + 1] = {0};
    for (size_t i = 0; i < M->ndep; i++)
        if (live[M->dep[i]]) n[M->cat[M->dep[i]] + 1]++;
    for (int c = 0; c < CAT__N; c++) n[c + 1] += n[c];
    memcpy(M->pk_off, n, sizeof n);
    for (size_t i = 0; i < M->ndep; i++)
        if (live[M->dep[i]]) M->pk_dep[n[M->cat[M->dep[i]]]++] = M->dep[i];
    memcpy(M->pk_fixed, fixed, sizeof fixed);
    M->pk = pk;
    M->pk_cnt_ok = M->cand_state == 1;
    if (M->pk_cnt_ok) { /* the same, counted by size group (cand_maxima's replays) */
        memset(M->pk_cnt, 0, (size_t)CAT__N * (size_t)M->ngrp * sizeof *M->pk_cnt);
        for (size_t i = 0; i < M->ndep; i++)
            if (live[M->dep[i]]) M->pk_cnt[M->cat[M->dep[i]] * M->ngrp + M->grp[M->dep[i]]]++;
    }
    return 0;
}

/* the requests of events [from, to) into the pools' streams ev[], from j[] on: each a storage's index into
 * M->sz (vc_alloc_scratch.sizes), its bytes at the batch of the replay; a zero-byte storage takes no block */
static void write_requests(res_memo *M, size_t from, size_t to, vc_alloc_event *const ev[2], size_t j[2])
{
    /* locals: the streams' stores cannot change them, so they are not read again at every event */
    const int32_t *code = M->code;
    const int64_t *sz = M->sz;
    int32_t *evidx = M->evidx;
    vc_alloc_event *e0 = ev[0], *e1 = ev[1];
    size_t j0 = j[0], j1 = j[1];
    for (size_t i = from; i < to; i++) {
        int32_t s = code[i], st = s >= 0 ? s : ~s;
        int64_t v = sz[st];
        if (!v) continue; /* zero-element tensors take no block */
        int32_t blk = -1;
        if (vc_alloc_small(v)) {
            if (s >= 0) evidx[s] = (int32_t)j1;
            else blk = evidx[~s];
            e1[j1++] = (vc_alloc_event){st, blk};
        } else {
            if (s >= 0) evidx[s] = (int32_t)j0;
            else blk = evidx[~s];
            e0[j0++] = (vc_alloc_event){st, blk};
        }
    }
    j[0] = j0;
    j[1] = j1;
}

/* a request's place: 0 the large pool, 1 the small one, 2 none (zero bytes) */
static int pool_of(int64_t v) { return v ? vc_alloc_small(v) : 2; }

/* Size i of M->size_rep at `batch`, as sizes_at computes it there */
static int64_t rep_bytes(const vc_build *b, size_t i, int64_t batch)
{
    const res_memo *M = b->memo;
    int32_t s = M->size_rep[i];
    if (!fast_batch(M, batch)) return vc__stor_bytes(b, s, batch);
    if (i < M->nsize_lin) {
        int64_t v = M->a[s] + M->c[s] * batch;
        return (v + 511) & ~INT64_C(511);
    }
    return M->form_comp[i - M->nsize_lin] ? vc__comp_bytes(b, b->s[s].comp, batch) : vc__stor_bytes(b, s, batch);
}

/* One storage per distinct size at every batch, into M->size_rep: the
 * storages of lin[] by their line (a, c: bytes a + c x batch rounded up to
 * 512, sizes_at), then the representative of each formula of frm[]
 * (group_formulas, in order); M->last_sz, each one's bytes at `last`, the
 * batch of the replay before. What moves between two replays is then looked
 * at once per size, not per storage (a 2,000-layer MLP's ~10,000
 * batch-dependent storages have a handful). Made at a plan's second replay:
 * most plans of a pipeline are replayed once. -1 out of memory. */
static int size_reps(const vc_build *b, int64_t last)
{
    res_memo *M = b->memo;
    size_t cap = 16;
    while (cap < 2 * M->nlin) cap *= 2;
    int32_t *slot = malloc(cap * sizeof *slot);
    M->size_rep = malloc((M->nlin + M->nform + 1) * sizeof *M->size_rep);
    M->last_sz = malloc((M->nlin + M->nform + 1) * sizeof *M->last_sz);
    if (!slot || !M->size_rep || !M->last_sz) {
        free(slot);
        free(M->size_rep);
        free(M->last_sz);
        M->size_rep = NULL;
        M->last_sz = NULL;
        return -1;
    }
    for (size_t i = 0; i < cap; i++) slot[i] = -1;
    size_t n = 0;
    for (size_t i = 0; i < M->nlin; i++) {
        int32_t s = M->lin[i];
        size_t h = (size_t)(mix(mix(UINT64_C(0xcbf29ce484222325), M->a[s]), M->c[s]) >> 7) & (cap - 1);
        while (slot[h] >= 0 && (M->a[M->size_rep[slot[h]]] != M->a[s] || M->c[M->size_rep[slot[h]]] != M->c[s]))
            h = (h + 1) & (cap - 1);
        if (slot[h] < 0) {
            slot[h] = (int32_t)n;
            M->size_rep[n++] = s;
        }
    }
    free(slot);
    M->nsize_lin = n;
    for (size_t u = 0; u < M->nform; u++) M->size_rep[n++] = M->form_rep[u];
    M->nsize_rep = n;
    for (size_t i = 0; i < n; i++) M->last_sz[i] = rep_bytes(b, i, last);
    return 0;
}

/* The caching allocator model's reserved bytes for a replay at `batch`:
 * -1 out of memory, -2 a tensor beyond 2^61 bytes or a reserve beyond 2^63.
 *
 * The two pools never share a block (a request's size picks its pool, and a
 * freed block merges only within its segment), so each is replayed on its
 * own requests. A stream names each request's storage, whose bytes the
 * replay reads in M->sz, so it is written again only when a request changes
 * pool (or appears or goes at zero bytes): from one grid batch to the next
 * the streams stay, and only the sizes move. A pool none of whose
 * batch-dependent storages changed bytes since its last replay is not
 * replayed again (the same requests): below a model's first activation of
 * 1 MiB the large pool sees only the weights, gradients and optimizer
 * state, and above it the small pool sees only the biases and the like (a
 * 2,000-layer MLP: the large pool is replayed once for the grid batches
 * 1-256). M->last_sz holds the batch-dependent sizes (size_reps) at the
 * last replay, M->last_batch (vc__replay_allocated writes M->sz at other
 * batches between two). */
int64_t vc__replay_reserved(const vc_build *b, int64_t batch, int64_t limit)
{
    res_memo *M = b->memo;
    if (prepare(b)) return -1;
    if (sizes_at(b, batch)) return -2;
    bool relayout = false, dirty[2] = {false, false};
    if (!M->streams_ready) {
        /* the events before the first batch-dependent one are the same at
         * every batch: their requests go into each pool's stream once
         * (their evidx entries stay: peak_breakdown writes only dependent
         * storages' entries) */
        for (int p = 0; p < 2; p++)
            if (!M->pool[p].ev && !(M->pool[p].ev = malloc((M->ncode + 1) * sizeof *M->pool[p].ev))) return -1;
        size_t j[2] = {0, 0};
        vc_alloc_event *ev[2] = {M->pool[0].ev, M->pool[1].ev};
        write_requests(M, 0, M->first_dep, ev, j);
        M->pool[0].scratch.gen++; /* other events: bounded()'s counts are not these streams' */
        M->pool[1].scratch.gen++;
        M->pool[0].pre = j[0];
        M->pool[1].pre = j[1];
        M->pool[0].last = M->pool[1].last = -1;
        M->streams_ready = true;
        relayout = true;
    } else if (!M->size_rep && size_reps(b, M->last_batch)) {
        return -1;
    }
    const int64_t *sz = M->sz;
    int64_t *last = M->last_sz;
    size_t nrep = M->size_rep ? M->nsize_rep : 0; /* none at the first replay */
    for (size_t i = 0; i < nrep && !relayout; i++) { /* what changed since the last replay, once per size */
        int64_t v = sz[M->size_rep[i]], o = last[i];
        if (v == o) continue;
        int q = pool_of(v);
        if (q != pool_of(o)) relayout = true;
        else dirty[q] = true; /* q < 2: v != o, so not both zero */
    }
    for (size_t i = 0; i < nrep; i++) last[i] = sz[M->size_rep[i]];
    M->last_batch = batch; /* the streams' and last_sz's batch (and the pools', once replayed) */
    if (relayout) {
        size_t j[2] = {M->pool[0].pre, M->pool[1].pre};
        vc_alloc_event *ev[2] = {M->pool[0].ev, M->pool[1].ev};
        write_requests(M, M->first_dep, M->ncode, ev, j);
        for (int p = 0; p < 2; p++) {
            M->pool[p].n = j[p];
            M->pool[p].last = -1;
            M->pool[p].scratch.gen++;
        }
    }
    /* With a limit, the pool with more events after its prefix is replayed last and may stop once the
     * reserve is proven at most the limit less the other pool's (alloc.c bounded): -3. The other, replayed
     * first, may stop too once proven at most the limit less an upper bound of the last one's made without
     * replaying it (alloc.c vc_alloc_bound): -3 then without the last one's replay. */
    bool redo[2] = {M->pool[0].last < 0 || dirty[0], M->pool[1].last < 0 || dirty[1]};
    int lastp = redo[0] && (!redo[1] || M->pool[0].n - M->pool[0].pre > M->pool[1].n - M->pool[1].pre) ? 0 : 1;
    for (int p = 0; p < 2; p++) {
        vc_alloc_scratch *sc = &M->pool[p].scratch;
        sc->expandable = b->o.alloc_conf.expandable_segments; /* --alloc-conf (alloc_conf.c) */
        sc->max_split = b->o.alloc_conf.max_split_size;
        sc->pool = p ? VC_POOL_SMALL : VC_POOL_LARGE; /* the stream's requests are all of pool p */
        /* the prefix's storages are of fixed size (the events before the first batch-dependent one): the
         * same of them are freed, and in this pool, at every batch */
        sc->fixed_frees = true;
        sc->sizes = sz;
    }
    int64_t first_limit = 0;
    if (limit > 0 && redo[0] && redo[1]) {
        int64_t u = vc_alloc_bound(M->pool[lastp].ev, M->pool[lastp].n, M->pool[lastp].pre, &M->pool[lastp].scratch);
        if (u >= 0 && u < limit) first_limit = limit - u;
    }
    int64_t total = 0;
    for (int k = 0; k < 2; k++) {
        int p = k ? lastp : 1 - lastp;
        int64_t r = M->pool[p].last;
        if (redo[p]) {
            vc_alloc_scratch *sc = &M->pool[p].scratch;
            sc->limit = k ? (limit > total ? limit - total : 0) : first_limit;
            if ((r = vc_alloc_replay(M->pool[p].ev, M->pool[p].n, M->pool[p].pre, sc)) == -3) {
                M->pool[p].last = -1; /* stopped: replayed again next time */
                if (!k) M->pool[lastp].last = -1; /* not replayed at this batch */
                return -3;
            }
            if (r < 0) {
                M->pool[0].last = M->pool[1].last = -1; /* last_sz is this batch's: replay both next time */
                return r;
            }
            M->pool[p].last = r;
        }
        if (__builtin_add_overflow(total, r, &total)) return -2;
    }
    return total;
}


/* Candidates for the maxima of a replay (vc__replay_allocated), so that
 * the many replays of a sweep or a search evaluate a few events instead of
 * passing over all of them.
 *
 * After event e the running total is T_e(B) = F_e + the bytes at batch B of
 * the batch-dependent storages live, each of which lies between two lines
 * valid at every batch the candidates serve (sizes_at's fast path: no size
 * saturates): a + c x B and a + 511 + c x B for a + c x B rounded up to
 * 512 (both a + c x B when a and c are multiples of 512); for a floor
 * count floor((ps x B + fx) / div) x m x d (m the mul, d the element
 * bytes), floor(ps m d / div) x B + floor((fx - div + 1) m d / div) below
 * and floor_bounds above; for a merged transient comp_lower below and
 * comp_bounds above. So L_e(B) <= T_e(B) <= U_e(B), two lines summed along
 * the events. The exact argument: where U_e(B) < max_d L_d(B) at every real
 * B >= 1, T_e(B) < max_d T_d(B) at every batch, and e is never a maximum,
 * not even an equal one; the events left (the candidates) hold every
 * maximum, so the first of them to reach it is the full pass's. max_d L_d
 * is the upper hull of the lower lines, and U_e - hull is concave: it is
 * checked at B = 1 and where the hull's slope passes U_e's. Where U_e only
 * touches the hull (equal at a point or along a segment of one hull line,
 * below elsewhere), e can only equal the maximum there; if every point
 * touched lies on the lower line of an earlier event d whose lines are
 * one (L_d = T_d = U_d: no merged transient or floor count live, every
 * other size a multiple of 512), T_d is the maximum there too and comes
 * first, so e is not the first maximum: dropped. (A layer stack whose
 * weight gradients grow the total as fast as freed activations shrink it,
 * such as 1,024 x 1,024 Linear layers at batch 1,024, ties every backward
 * event at that batch.)
 *
 * The maxima kept: the peak before the end-of-forward marker and after it
 * (the peak is the first of the two; peak_post the second from the total
 * at the marker), each segment with its own hull, and the running
 * activation total (inference's activations) over the whole step. A
 * candidate is kept as its fixed bytes and its count of live storages per
 * size group (storages with equal a + c x batch, or one size formula:
 * group_formulas), so a replay sums a few groups per candidate. Built once a
 * plan has been replayed a few times (a sweep, a search); given up (the
 * full pass stays) for too many groups or candidates, or lines past 2^62. */
#define CAND_AFTER 24  /* replays of a plan before building: about what building costs, in full passes */
#define CAND_MAX_GROUPS 2048 /* size groups: a row costs one formula each */
#define CAND_MAX 256   /* candidates per segment, at least (build_candidates) */
#define LINE_MAX (INT64_C(1) << 62)
__extension__ typedef __int128 i128;

typedef struct {
    int64_t a, b;
    int32_t pos;  /* the event whose lower line it is */
    bool exact;   /* that event's lower and upper lines are the same: its total at every batch */
} hline;

/* by slope, then intercept; among equal lines an exact one, then the earliest, last */
static int cmp_slope(const void *x, const void *y)
{
    const hline *p = x, *q = y;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->exact != q->exact) return p->exact ? 1 : -1;
    return p->pos > q->pos ? -1 : p->pos < q->pos;
}

/* the upper hull of lines, by slope ascending, into h (sorted in place); its size */
static size_t upper_hull(hline *h, size_t n)
{
    qsort(h, n, sizeof *h, cmp_slope);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && h[i + 1].b == h[i].b) continue; /* the highest of equal slopes (sorted last) */
        hline l = h[i];
        while (m >= 2) {
            /* h[m-1] is useless when l meets h[m-2] no later than h[m-1] does:
             * (a2 - a0) / (b0 - b2) <= (a1 - a0) / (b0 - b1), slopes b0 < b1 < b2 */
            hline p = h[m - 2], q = h[m - 1];
            if ((i128)(l.a - p.a) * (q.b - p.b) < (i128)(q.a - p.a) * (l.b - p.b)) break;
            m--;
        }
        h[m++] = l;
    }
    return m;
}

/* Where U(x) = ua + ub x meets the hull at x >= 1: 2 above it somewhere; 0
 * never reaches it; 1 only touches it, every point touched on each of the
 * hull lines cov[0..*ncov) */
static int reaches(const hline *h, size_t m, size_t k1, int64_t ua, int64_t ub, size_t cov[2], int *ncov)
{
    /* at x = 1: the hull is h[k1] there (and just after) */
    i128 d1 = (i128)ua + ub - ((i128)h[k1].a + h[k1].b);
    if (d1 > 0 || (d1 == 0 && ub > h[k1].b)) return 2;
    if (d1 == 0) { /* on h[k1] at 1, under the hull after its segment (or at once) */
        cov[0] = k1;
        *ncov = 1;
        return 1;
    }
    if (ub <= h[k1].b) return 0; /* U - hull falls from x = 1 on */
    size_t lo = k1 + 1, hi = m; /* the first hull line from k1 on with slope >= ub */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h[mid].b >= ub) hi = mid;
        else lo = mid + 1;
    }
    if (lo == m) return 2; /* U climbs faster than every hull line */
    /* U - hull is highest at x = num / den, where h[lo - 1] and h[lo] meet (> 1) */
    i128 num = (i128)h[lo - 1].a - h[lo].a, den = (i128)h[lo].b - h[lo - 1].b;
    i128 v = ((i128)ua - h[lo].a) * den + ((i128)ub - h[lo].b) * num;
    if (v != 0) return v > 0 ? 2 : 0;
    if (ub == h[lo].b) { /* U is h[lo] along its segment */
        cov[0] = lo;
        *ncov = 1;
    } else { /* one point, where both meet */
        cov[0] = lo - 1;
        cov[1] = lo;
        *ncov = 2;
    }
    return 1;
}

/* the hull line at x = 1 and just after: the last whose start is <= 1 */
static size_t hull_at_one(const hline *h, size_t m)
{
    size_t k1 = 0;
    while (k1 + 1 < m) {
        i128 num = (i128)h[k1].a - h[k1 + 1].a, den = (i128)h[k1 + 1].b - h[k1].b; /* they meet at num / den */
        if (num > den) break;
        k1++;
    }
    return k1;
}

static bool line_ok(i128 a, i128 b) { return a <= LINE_MAX && a >= -LINE_MAX && b <= LINE_MAX && b >= 0; }

/* A merged transient's lower line: one alternative's parts, each
 * floor((ps B + fx) / div) x mul x dts (rounding up to 512 only adds), the
 * alternative of the steepest such line (vc__comp_bytes takes the largest
 * alternative). Valid where nothing saturates at PART_BIG (2^60, graph.c):
 * checked at bmax, the largest batch of sizes_at's fast path (every part
 * grows with the batch); 0 otherwise, and for a reduction's scratch. */
static void comp_lower(const vc_build *b, int32_t s, int64_t bmax, i128 l[2])
{
    const i128 big = (i128)1 << 60;
    const comp_t *q = &b->comp[b->s[s].comp];
    i128 la[VC_MAX_PARTS] = {0}, lb[VC_MAX_PARTS] = {0};
    l[0] = l[1] = 0;
    if (q->red_in > 0 || b->memo->a[s] + (i128)b->memo->c[s] * bmax > big) return; /* the cap cannot apply below big */
    for (int32_t i = 0; i < q->np; i++) {
        const part_t *p = &b->part[q->p0 + i];
        if (p->div < 1 || p->mul < 0 || p->dts < 0 || p->ps < 0 || p->fx < 0 || p->alt < 0 || p->alt >= VC_MAX_PARTS) return;
        i128 e = (i128)p->ps * bmax + p->fx, by;
        if (e > big || (by = e / p->div * p->mul) > big || (by *= p->dts) > big || (by + 511) / 512 * 512 > big) return;
        i128 md = (i128)p->mul * p->dts, x = (i128)p->ps * md, y = ((i128)p->fx - p->div + 1) * md;
        lb[p->alt] += x / p->div;
        la[p->alt] += y >= 0 ? y / p->div : -((-y + p->div - 1) / p->div);
    }
    for (int j = 0; j < VC_MAX_PARTS; j++)
        if (lb[j] > l[1] || (lb[j] == l[1] && la[j] > l[0])) l[0] = la[j], l[1] = lb[j];
}

/* storage s's lines (lo: at most its bytes; hi: at least), at every batch of sizes_at's fast path (up to bmax) */
static void stor_lines(const vc_build *b, int32_t s, int64_t bmax, i128 l[2], i128 u[2])
{
    const res_memo *M = b->memo;
    const stor_t *t = &b->s[s];
    u[0] = M->a[s];
    u[1] = M->c[s];
    l[0] = l[1] = 0;
    if (t->comp >= 0) { /* a merged transient: comp_bounds above */
        comp_lower(b, s, bmax, l);
        return;
    }
    if (t->n.div <= 1) { /* round512(a + c B): a + c B itself when both are multiples of 512 */
        l[0] = M->a[s];
        l[1] = M->c[s];
        if (M->a[s] % 512 || M->c[s] % 512) u[0] += 511;
        return;
    }
    /* floor((ps B + fx) / div) x m x d, floor_bounds above */
    i128 md = (i128)(t->n.mul > 0 ? t->n.mul : 1) * vc_dtype_size((vc_dtype)t->dt), d = t->n.div;
    i128 x = (i128)t->n.ps * md, y = ((i128)t->n.fx - d + 1) * md;
    l[1] = x / d; /* x >= 0 */
    l[0] = y >= 0 ? y / d : -((-y + d - 1) / d);
}

typedef struct {
    int64_t la, lb, ua, ub;
} glines;

/* 0 built, -1 not worth it or out of memory (the full pass stays) */
static int build_candidates(const vc_build *b)
{
    res_memo *M = b->memo;
    if (M->fold_overflow) return -1;
    int32_t *grp = malloc((b->ns + 1) * sizeof *grp);
    int32_t *rep = malloc((CAND_MAX_GROUPS + 1) * sizeof *rep);
    int32_t *slot = NULL;
    hline *h[3] = {NULL, NULL, NULL};
    int32_t *pos[3] = {NULL, NULL, NULL};
    glines *gl = NULL;
    int32_t G = 0;
    int rc = -1;
    int32_t *cnt = NULL, *acnt = NULL;
    if (!grp || !rep) goto out;
    for (size_t s = 0; s < b->ns; s++) grp[s] = -1;
    /* the groups: equal (a, c) among the linear storages (found through a hash table), then one per size formula */
    size_t tcap = 16;
    while (tcap < 2 * CAND_MAX_GROUPS) tcap *= 2;
    if (!(slot = malloc(tcap * sizeof *slot))) goto out;
    for (size_t i = 0; i < tcap; i++) slot[i] = -1;
    for (size_t i = 0; i < M->nlin; i++) {
        int32_t s = M->lin[i];
        size_t x = (size_t)(mix(mix(UINT64_C(0xcbf29ce484222325), M->a[s]), M->c[s]) & (tcap - 1));
        while (slot[x] >= 0 && (M->a[rep[slot[x]]] != M->a[s] || M->c[rep[slot[x]]] != M->c[s])) x = (x + 1) & (tcap - 1);
        if (slot[x] < 0) {
            if (G == CAND_MAX_GROUPS) goto out;
            slot[x] = G;
            rep[G++] = s;
        }
        grp[s] = slot[x];
    }
    int32_t g0 = G;
    if (M->nform > (size_t)(CAND_MAX_GROUPS - G)) goto out;
    for (size_t u = 0; u < M->nform; u++) rep[G++] = M->form_rep[u];
    for (size_t i = 0; i < M->nfrm; i++) grp[M->frm[i]] = g0 + M->frm_id[i];
    cnt = calloc((size_t)G + 1, sizeof *cnt);
    acnt = calloc((size_t)G + 1, sizeof *acnt);
    M->mk_cnt = calloc((size_t)G + 1, sizeof *M->mk_cnt);
    M->mk_acnt = calloc((size_t)G + 1, sizeof *M->mk_acnt);
    M->grp_val = malloc(((size_t)G + 1) * sizeof *M->grp_val);
    if (!cnt || !acnt || !M->mk_cnt || !M->mk_acnt || !M->grp_val) goto out;
    const bool marker = M->fwd_end != (size_t)-1;
    if (M->amax > VC_MAX_BLOCK || M->cmax <= 0) goto out; /* no batch on the fast path, or nothing depends on it */
    const int64_t bmax = (VC_MAX_BLOCK - M->amax) / M->cmax; /* fast_batch's largest */
    /* candidates per segment: while summing them costs well under a pass over the folded events */
    const size_t cmax = M->nfold / ((size_t)G + 2) > CAND_MAX ? M->nfold / ((size_t)G + 2) : CAND_MAX;
    /* each group's lines (its storages have one size formula: the same lines) */
    if (!(gl = malloc(((size_t)G + 1) * sizeof *gl))) goto out;
    for (int32_t g = 0; g < G; g++) {
        i128 l[2], u[2];
        stor_lines(b, rep[g], bmax, l, u);
        if (!line_ok(l[0], l[1]) || !line_ok(u[0], u[1])) goto out;
        gl[g] = (glines){(int64_t)l[0], (int64_t)l[1], (int64_t)u[0], (int64_t)u[1]};
    }
    /* segments: 0 and 1 the events before and after the marker, 2 the activations' allocations (inference) */
    const int nseg = b->train ? 2 : 3;
    for (int q = 0; q < nseg; q++)
        if (!(pos[q] = malloc(cmax * sizeof *pos[q]))) goto out;
    size_t n[3] = {0, 0, 0}, cap[3] = {0, 0, 0}, m[3] = {0, 0, 0}, k1[3] = {0, 0, 0}, nk[3] = {0, 0, 0};
    /* pass 0: every allocation's lower line into its segment, then each segment's upper hull;
     * pass 1: the allocations whose upper line reaches their segment's hull */
    for (int pass = 0; pass < 2; pass++) {
        i128 t[4] = {0, 0, 0, 0}, ta[4] = {0, 0, 0, 0}; /* running lines: lower a, b, upper a, b; activations' */
        for (size_t i = 0; i < M->ncode; i++) {
            int32_t c = M->code[i], st = c >= 0 ? c : ~c, g = grp[st];
            int64_t d[4];
            if (g >= 0) d[0] = gl[g].la, d[1] = gl[g].lb, d[2] = gl[g].ua, d[3] = gl[g].ub;
            else d[0] = d[2] = M->sz[st], d[1] = d[3] = 0;
            bool act = M->cat[st] == CAT_ACT;
            for (int j = 0; j < 4; j++) {
                t[j] += c >= 0 ? d[j] : -d[j];
                if (act) ta[j] += c >= 0 ? d[j] : -d[j];
            }
            if (c < 0) continue;
            for (int q = marker && i >= M->fwd_end; q < nseg; q = q < 2 ? 2 : 3) {
                if (q == 2 && !act) break;
                const i128 *x = q < 2 ? t : ta;
                if (!pass) {
                    if (!line_ok(x[0], x[1]) || !line_ok(x[2], x[3])) goto out;
                    hline l = {(int64_t)x[0], (int64_t)x[1], (int32_t)i, x[0] == x[2] && x[1] == x[3]};
                    if (n[q]) { /* a line under another at every x >= 0 is never on the hull: against the last one kept */
                        hline *p = &h[q][n[q] - 1];
                        if (p->a >= l.a && p->b >= l.b && (p->a != l.a || p->b != l.b || p->exact || !l.exact)) continue;
                        if (l.a >= p->a && l.b >= p->b && (l.a != p->a || l.b != p->b)) {
                            *p = l;
                            continue;
                        }
                    }
                    if (n[q] == cap[q]) {
                        size_t nc = cap[q] ? 2 * cap[q] : 1024;
                        hline *nh = realloc(h[q], nc * sizeof *nh);
                        if (!nh) goto out;
                        h[q] = nh;
                        cap[q] = nc;
                    }
                    h[q][n[q]++] = l;
                } else {
                    size_t cov[2];
                    int ncov = 0, r = reaches(h[q], m[q], k1[q], (int64_t)x[2], (int64_t)x[3], cov, &ncov);
                    /* touching only: not a first maximum when a line it touches on is an earlier event's exact total */
                    for (int j = 0; j < ncov && r == 1; j++)
                        if (h[q][cov[j]].exact && h[q][cov[j]].pos < (int32_t)i) r = 0;
                    if (r) {
                        if (nk[q] == cmax) goto out;
                        pos[q][nk[q]++] = (int32_t)i;
                    }
                }
            }
        }
        for (int q = 0; q < nseg && !pass; q++)
            if (n[q]) {
                m[q] = upper_hull(h[q], n[q]);
                k1[q] = hull_at_one(h[q], m[q]);
            }
    }
    for (int q = 0; q < nseg; q++) {
        M->cand[q].fixed = malloc((nk[q] + 1) * sizeof *M->cand[q].fixed);
        M->cand[q].pos = malloc((nk[q] + 1) * sizeof *M->cand[q].pos);
        M->cand[q].cnt = malloc((nk[q] * (size_t)G + 1) * sizeof *M->cand[q].cnt);
        if (!M->cand[q].fixed || !M->cand[q].pos || !M->cand[q].cnt) goto out;
    }
    /* pass 2: the candidates' fixed bytes and counts per group, and the marker's */
    int64_t f = 0, fa = 0;
    size_t k[3] = {0, 0, 0};
    for (size_t i = 0; i <= M->ncode; i++) {
        if (marker && i == M->fwd_end) {
            M->mk_fixed = f;
            memcpy(M->mk_cnt, cnt, (size_t)G * sizeof *cnt);
            M->mk_afixed = fa;
            memcpy(M->mk_acnt, acnt, (size_t)G * sizeof *acnt);
        }
        if (i == M->ncode) break;
        int32_t c = M->code[i], st = c >= 0 ? c : ~c, g = grp[st];
        bool act = M->cat[st] == CAT_ACT;
        if (g >= 0) {
            cnt[g] += c >= 0 ? 1 : -1;
            if (act) acnt[g] += c >= 0 ? 1 : -1;
        } else if (c < 0) {
            f -= M->sz[st];
            if (act) fa -= M->sz[st];
        } else if (__builtin_add_overflow(f, M->sz[st], &f) || (act && __builtin_add_overflow(fa, M->sz[st], &fa))) {
            goto out;
        }
        if (c < 0) continue;
        for (int q = marker && i >= M->fwd_end; q < nseg; q = q < 2 ? 2 : 3) {
            if (q == 2 && !act) break;
            if (k[q] < nk[q] && pos[q][k[q]] == (int32_t)i) {
                M->cand[q].fixed[k[q]] = q < 2 ? f : fa;
                M->cand[q].pos[k[q]] = (int32_t)i;
                memcpy(M->cand[q].cnt + k[q] * (size_t)G, q < 2 ? cnt : acnt, (size_t)G * sizeof *cnt);
                k[q]++;
            }
        }
    }
    for (int q = 0; q < nseg; q++) M->cand[q].n = nk[q];
    M->pers_cnt = calloc((size_t)CAT__N * (size_t)G + 1, sizeof *M->pers_cnt);
    M->pk_cnt = malloc(((size_t)CAT__N * (size_t)G + 1) * sizeof *M->pk_cnt);
    if (!M->pers_cnt || !M->pk_cnt) goto out;
    for (size_t i = 0; i < M->ndep; i++) {
        int32_t s = M->dep[i];
        uint8_t c = M->cat[s];
        if (c == CAT_WEIGHT || c == CAT_OPT || c == CAT_WS) M->pers_cnt[c * G + grp[s]]++;
    }
    M->pk_cnt_ok = false;
    M->ngrp = G;
    M->ngrp_lin = g0;
    M->grp = grp;
    M->grp_rep = rep;
    grp = rep = NULL;
    rc = 0;
out:
    if (rc)
        for (int q = 0; q < 3; q++) M->cand[q].n = 0;
    free(grp);
    free(rep);
    for (int q = 0; q < 3; q++) {
        free(h[q]);
        free(pos[q]);
    }
    free(gl);
    free(slot);
    free(cnt);
    free(acnt);
    return rc;
}

/* A sum of counts per group times the groups' bytes into *v (added); false past 2^63 */
static bool add_groups(const res_memo *M, const int32_t *cnt, int64_t *v)
{
    int64_t x;
    for (int32_t g = 0; g < M->ngrp; g++)
        if (cnt[g] && (__builtin_mul_overflow((int64_t)cnt[g], M->grp_val[g], &x) || __builtin_add_overflow(*v, x, v)))
            return false;
    return true;
}

/* candidate k of segment q at this batch (M->grp_val): false past 2^63 */
static bool cand_total(const res_memo *M, int q, size_t k, int64_t *t)
{
    *t = M->cand[q].fixed[k];
    return add_groups(M, M->cand[q].cnt + k * (size_t)M->ngrp, t);
}

/* The maxima of the full pass in vc__replay_allocated, from the candidates:
 * false when a total passes 2^63 (the full pass then reports it). */
static bool cand_maxima(const vc_build *b, vc_sim *sim, int64_t *peak_out, size_t *pk_out, int64_t *post_out,
                        size_t *post_pk_out, int64_t *act_peak_out)
{
    res_memo *M = b->memo;
    int64_t peak = 0, post = -1, act_peak = 0, t;
    size_t pk = (size_t)-1, post_pk = (size_t)-1;
    for (size_t k = 0; k < M->cand[0].n; k++) {
        if (!cand_total(M, 0, k, &t)) return false;
        if (t > peak) {
            peak = t;
            pk = (size_t)M->cand[0].pos[k];
        }
    }
    if (M->fwd_end != (size_t)-1) {
        int64_t a;
        post = M->mk_fixed;
        a = M->mk_afixed;
        if (!add_groups(M, M->mk_cnt, &post) || !add_groups(M, M->mk_acnt, &a)) return false;
        if (b->train) sim->activations = a + M->fwd_aoff;
        sim->peak_pre = peak;
        for (size_t k = 0; k < M->cand[1].n; k++) {
            if (!cand_total(M, 1, k, &t)) return false;
            if (t > peak) {
                peak = t;
                pk = (size_t)M->cand[1].pos[k];
            }
            if (t > post) {
                post = t;
                post_pk = (size_t)M->cand[1].pos[k];
            }
        }
    }
    for (size_t k = 0; k < M->cand[2].n && !b->train; k++) {
        if (!cand_total(M, 2, k, &t)) return false;
        if (t > act_peak) act_peak = t;
    }
    *peak_out = peak;
    *pk_out = pk;
    *post_out = post;
    *post_pk_out = post_pk;
    *act_peak_out = act_peak;
    return true;
}

/* Each size group's bytes at `batch` into M->grp_val (sizes_at's fast path: the caller checked fast_batch) */
static void group_values(const vc_build *b, int64_t batch)
{
    res_memo *M = b->memo;
    for (int32_t g = 0; g < M->ngrp; g++) {
        int32_t s = M->grp_rep[g];
        if (g < M->ngrp_lin) {
            int64_t v = M->a[s] + M->c[s] * batch;
            M->grp_val[g] = (v + 511) & ~INT64_C(511);
        } else {
            M->grp_val[g] = M->form_comp[g - M->ngrp_lin] ? vc__comp_bytes(b, b->s[s].comp, batch) : vc__stor_bytes(b, s, batch);
        }
    }
}

/* --mode generate: the KV cache after the last step (layers x 2 x kv heads x
 * head_dim x tokens x dtype x batch), its tokens, the decoding peak's step.
 * -1 on overflow. */
static int gen_kv(const vc_build *b, int64_t batch, vc_sim *sim)
{
    const vc_gen *g = &b->gen;
    for (int i = 0; i < g->nslot; i++) {
        const vc_kv_slot *sl = &g->slot[i];
        const int32_t part[] = {sl->k, sl->v, sl->q[0], sl->q[1], sl->q[2], sl->q[3], sl->q[4], sl->q[5]};
        for (size_t j = 0; j < sizeof part / sizeof *part; j++) {
            if (part[j] < 0) continue;
            const tens_t *t = &b->t[part[j]];
            int64_t v;
            if (__builtin_mul_overflow(t->n.ps, batch, &v) || __builtin_mul_overflow(v, vc_dtype_size((vc_dtype)t->dt), &v) ||
                __builtin_add_overflow(sim->kv_cache, v, &sim->kv_cache))
                return -1;
        }
        /* the tokens are the decoder's: an encoder-decoder's cross-attention slots hold the encoder's */
        if (!sl->cross && sl->len + sl->qlen > sim->kv_tokens) sim->kv_tokens = sl->len + sl->qlen;
        if (sl->cross) {
            for (int j = 0; j < 2; j++) {
                const tens_t *t = &b->t[j ? sl->v : sl->k];
                int64_t v;
                if (__builtin_mul_overflow(t->n.ps, batch, &v) || __builtin_mul_overflow(v, vc_dtype_size((vc_dtype)t->dt), &v) ||
                    __builtin_add_overflow(sim->kv_cross, v, &sim->kv_cross))
                    return -1;
            }
            sim->kv_cross_tokens = sl->len;
            sim->kv_cross_images = g->xval >= 0;
        }
        if (sl->latent > 0) sim->kv_mla++;
    }
    /* Qwen3NextDynamicCache's conv_states and recurrent_states (layers/deltanet.c): a fixed size; DeepSeek-V3.2's
     * indexer keys (DynamicIndexedLayer.indexer_keys, vc_kv_indexer): the KV cache's */
    int64_t *into = g->indexer ? &sim->kv_cache : &sim->ssm_state;
    for (int i = 0; i < g->nssm; i++)
        for (int j = 0; j < 2; j++) {
            if (g->ssm[i][j] < 0) continue;
            const tens_t *t = &b->t[g->ssm[i][j]];
            int64_t v;
            if (__builtin_mul_overflow(t->n.ps, batch, &v) || __builtin_mul_overflow(v, vc_dtype_size((vc_dtype)t->dt), &v) ||
                __builtin_add_overflow(*into, v, into))
                return -1;
        }
    if (g->indexer) return 0;
    sim->ssm_layers = g->nssm;
    sim->ssm_mamba = g->nmamba;
    sim->ssm_conv = g->nconv;
    return 0;
}

vc_status vc__replay_allocated(const vc_build *b, int64_t batch, vc_sim *sim, int64_t *inst_act, vc_error *err)
{
    res_memo *M = b->memo;
    memset(sim, 0, sizeof *sim);
    sim->peak_inst = -1;
    if (prepare(b)) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    /* lean: with the candidates, only the size groups' bytes are computed, not every storage's */
    bool lean = M->cand_state == 1 && !M->fold_overflow && !inst_act && fast_batch(M, batch);
    int big = 0;
    if (lean) group_values(b, batch);
    else big = sizes_at(b, batch);
    if (big == -3)
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "batch %lld makes a tensor larger than 2^63 bytes",
                            (long long)batch);
    const int64_t *sz = M->sz;
    /* one pass over the batch-dependent events (the others folded in) for
     * the peak and the activations, a second up to the peak for its
     * breakdown by category */
    int64_t total = 0, act = 0, act_peak = 0, peak = 0, post = -1;
    size_t pk = (size_t)-1, post_pk = (size_t)-1;
    bool overflow = M->fold_overflow;
    sim->peak_pre = -1;
    /* built after CAND_AFTER full passes, or at once when the caller's replays are to pass that many (a sweep's
     * rows, vc__plan_expect_replays): the same candidates, the same figures, fewer full passes */
    if (!big && !overflow && M->cand_state == 0 && (++M->nsim > CAND_AFTER || M->nsim - 1 + M->expect > CAND_AFTER))
        M->cand_state = build_candidates(b) ? -1 : 1;
    M->expect = 0;
    if (!big && !overflow && M->cand_state == 1 && !lean)
        for (int32_t g = 0; g < M->ngrp; g++) M->grp_val[g] = sz[M->grp_rep[g]];
    bool done = !big && !overflow && M->cand_state == 1 && (lean || fast_batch(M, batch)) &&
                cand_maxima(b, sim, &peak, &pk, &post, &post_pk, &act_peak);
    if (!done) { /* the full pass; a partial candidate pass's figures are overwritten */
        sim->peak_pre = -1;
        sim->activations = 0;
        if (lean) { /* past 2^63 somewhere: the full pass finds where */
            lean = false;
            if ((big = sizes_at(b, batch)) == -3)
                return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "batch %lld makes a tensor larger than 2^63 bytes",
                                    (long long)batch);
        }
    }
    for (size_t k = 0; k < M->nfold && !overflow && !done; k++) {
        const fold_t *f = &M->fold[k];
        if (k == M->fwd_fold) {
            if (b->train) sim->activations = act + M->fwd_aoff;
            sim->peak_pre = peak;
            post = total;
        }
        if (f->fmax != INT64_MIN) {
            int64_t t;
            if (__builtin_add_overflow(total, f->fmax, &t)) {
                overflow = true;
                break;
            }
            if (t > peak) {
                peak = t;
                pk = (size_t)f->fmax_pos;
            }
            if (post >= 0 && t > post) {
                post = t;
                post_pk = (size_t)f->fmax_pos;
            }
        }
        if (f->amax != INT64_MIN && act + f->amax > act_peak) act_peak = act + f->amax;
        total += f->fdelta; /* at most the highest point, checked above */
        act += f->adelta;
        int32_t s = f->code;
        if (s == INT32_MIN) continue;
        if (s >= 0) {
            int64_t v = sz[s];
            if (__builtin_add_overflow(total, v, &total)) {
                overflow = true;
                break;
            }
            if (total > peak) {
                peak = total;
                pk = (size_t)f->pos;
            }
            if (post >= 0 && total > post) {
                post = total;
                post_pk = (size_t)f->pos;
            }
            if (M->cat[s] == CAT_ACT && (act += v) > act_peak) act_peak = act;
        } else {
            total -= sz[~s];
            if (M->cat[~s] == CAT_ACT) act -= sz[~s];
        }
    }
    sim->peak = peak;
    if (sim->peak_pre < 0) sim->peak_pre = peak;
    sim->peak_post = post;
    if (b->gen.on && gen_kv(b, batch, sim)) overflow = true;
    /* the decoding step of peak_post: the second one emitted when the peak is in its ops */
    sim->decode_step = b->gen.split_op >= 0 ? b->gen.dstep[0] : 0;
    if (b->gen.split2_op >= 0 && post_pk != (size_t)-1 && b->ev[M->orig[post_pk]].op >= b->gen.split2_op)
        sim->decode_step = b->gen.dstep[1];

    if (pk != (size_t)-1 && !overflow) {
        if ((M->pk != pk || (lean && !M->pk_cnt_ok)) && peak_breakdown(b, pk))
            return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
        for (int c = 0; c < CAT__N; c++) {
            int64_t v = M->pk_fixed[c]; /* the parts are live together at the peak: no overflow */
            if (lean) add_groups(M, M->pk_cnt + c * M->ngrp, &v);
            else
                for (int32_t i = M->pk_off[c]; i < M->pk_off[c + 1]; i++) v += sz[M->pk_dep[i]];
            sim->at_peak[c] = v;
        }
    }
    if (pk != (size_t)-1) {
        const ev_t *e = &b->ev[M->orig[pk]];
        sim->phase = (vc_phase)e->phase;
        sim->peak_inst = e->inst;
    }
    if (!b->train) sim->activations = act_peak;
    /* persistent sizes: weights, optimizer state, workspaces and gradients */
    for (int c = 0; c < CAT__N; c++) {
        if (M->fixed_persistent[c] < 0) overflow = true;
        else sim->persistent[c] = M->fixed_persistent[c];
    }
    if (M->fixed_resident_grad < 0) overflow = true;
    else sim->resident_grad = M->fixed_resident_grad;
    for (int c = 0; c < CAT__N && lean; c++) /* the same sums, by size group */
        if ((c == CAT_WEIGHT || c == CAT_OPT || c == CAT_WS) && !add_groups(M, M->pers_cnt + c * M->ngrp, &sim->persistent[c]))
            overflow = true;
    for (size_t i = 0; i < M->ndep && !lean; i++) {
        int32_t s = M->dep[i];
        uint8_t c = M->cat[s];
        if ((c == CAT_WEIGHT || c == CAT_OPT || c == CAT_WS) && __builtin_add_overflow(sim->persistent[c], sz[s], &sim->persistent[c]))
            overflow = true;
    }
    if (overflow) return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    if (big) return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "batch %lld needs more than 2^61 bytes", (long long)batch);
    if (inst_act) {
        memset(inst_act, 0, b->m->ninst * sizeof *inst_act);
        for (size_t j = 0; j < b->nfwd_live; j++) {
            int32_t s = b->fwd_live[j];
            if (b->s[s].inst >= 0) inst_act[b->s[s].inst] += sz[s];
        }
    }
    return VC_OK;
}

static const char *const cat_names[CAT__N] = {"weight", "grad", "state", "act", "temp", "workspace"};

void vc__trace_row(void (*line)(void *, const char *), void *ctx, vc_phase ph, bool alloc, const char *cat, int64_t bytes,
                   int64_t total, const char *where, const char *op)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%-9s %-5s %-9s %12lld %14lld  %s %s", vc_phase_name(ph), alloc ? "alloc" : "free", cat,
             (long long)bytes, (long long)total, where, op);
    line(ctx, buf);
}

vc_status vc_plan_trace(const vc_plan *p, int64_t batch, int64_t *total, void (*line)(void *, const char *), void *ctx)
{
    const vc_build *b = p;
    if (b->gen.on && b->gen.beams > 1 && __builtin_mul_overflow(batch, b->gen.beams, &batch)) return VC_ERR_OVERFLOW;
    for (size_t i = 0; i < b->nev; i++) {
        const ev_t *e = &b->ev[i];
        if (e->kind == EV_FWD_END) {
            line(ctx, "-- end of forward");
            continue;
        }
        const stor_t *s = &b->s[e->stor];
        int64_t v = vc__stor_bytes(b, e->stor, batch);
        if (v < 0) return VC_ERR_OVERFLOW;
        if (__builtin_add_overflow(*total, e->kind == EV_ALLOC ? v : -v, total)) return VC_ERR_OVERFLOW;
        vc__trace_row(line, ctx, (vc_phase)e->phase, e->kind == EV_ALLOC, cat_names[s->cat], v, *total,
                      e->inst >= 0 ? b->m->inst[e->inst].path : "-", e->op >= 0 ? b->op[e->op].name : "");
    }
    return VC_OK;
}

