/*
 * pipeline_hold.c — the engine's part of a pipeline stage (pipeline.c,
 * pipeline_sched.c; docs/parallel.md 1.8): the micro-batches its schedule
 * has in flight, at every backward of the schedule.
 *
 * Forwarded micro-batches stay referenced by the schedule's input_tensors
 * and output_tensors lists (their graphs, and so their saved tensors, and
 * the received input) until their backward (Megatron-LM schedules.py,
 * MEG in docs/parallel.md). The first micro-batch's forward runs for real;
 * each further micro-batch in flight holds what it left alive: its
 * activations (every ACT storage made since s0 still referenced), as fresh
 * storages of the same sizes. Under the interleaved schedule the stage is
 * its rank's model chunks run one after the other (pipeline.c
 * interleaved_split), and each chunk's part is held its own number of
 * times: a storage is its maker's chunk's, but the output of a chunk's last
 * layer, which is the next chunk's input (received there, kept in its
 * input_tensors), and the stage's received inputs, the first chunk's. The
 * one-element tensor a sent output leaves is the last chunk's.
 *
 * The engine runs one micro-batch through every chunk, then its backward
 * from the last chunk to the first: while that backward is in chunk c it
 * stands for a backward of chunk c in the schedule (vc__pp_segment). The
 * first backward makes the gradients, as each chunk's first backward in the
 * schedule does (the later chunks' made before, the earlier ones' not yet):
 * in chunk c it holds what chunk c's first backward holds. The second adds
 * into existing gradients: in chunk c it holds what the other backwards of
 * chunk c hold, the one of them with the most bytes (a backward of the
 * table's first pp x v has no gradients of the earlier chunks yet: they are
 * set aside while the engine is in chunk c, and brought back before it
 * reaches the chunk that adds into them).
 */
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "plan.h"
#include "util.h"

/* b->pp_live: per chunk the copies held now and made, the extras' held and
 * made, then the chunk the backward is in, the pass, the entries' capacity,
 * per chunk the second backward's state, per chunk the chunks up to it whose
 * input the engine's run does not keep (below), the gradient held for the
 * chunk the backward is in (+ 1; 0 none), per parameter the storage of a
 * gradient set aside (+ 1; 0 none) and its chunk (the last that uses it:
 * the first whose backward makes its gradient). */
#define LIVE(nc) 0
#define MADE(nc) (nc)
#define XLIVE(nc) (2 * (nc))
#define XMADE(nc) (2 * (nc) + 2)
#define CUR(nc) (2 * (nc) + 4)
#define PASS(nc) (2 * (nc) + 5)
#define CAP(nc) (2 * (nc) + 6)
#define PICK(nc) (2 * (nc) + 7)
#define DEAD(nc) (3 * (nc) + 7)
#define FLOW(nc) (4 * (nc) + 7)
#define HID(nc) (4 * (nc) + 8)
#define PCH(nc, np) (4 * (nc) + 8 + (np))

static const int64_t *first_state(const vc_model *m, int32_t c)
{
    return m->stage.hold + 1 + m->stage.nchunks + c * VC_PP_S(m->stage.nchunks);
}

/* Chunk c's list of second-backward states: its count at [0]. */
static const int64_t *cand_list(const vc_model *m, int32_t c) { return m->stage.hold + m->stage.hold[1 + c]; }

bool vc__pp_holds(const vc_model *m)
{
    if (!m->stage.on || !m->stage.hold) return false;
    const int32_t nc = m->stage.nchunks;
    for (int32_t c = 0; c < nc; c++) {
        const int64_t *l = cand_list(m, c);
        for (int64_t k = -1; k < l[0]; k++) {
            const int64_t *s = k < 0 ? first_state(m, c) : l + 1 + k * VC_PP_S(nc);
            for (int32_t i = 0; i < nc + 2; i++)
                if (s[i] > 0) return true;
        }
    }
    return false;
}

static int32_t stor_chunk(const vc_build *b, int32_t s, const int32_t *bound)
{
    const vc_model *m = b->m;
    int32_t c = m->stage.nchunks - 1, inst = b->s[s].inst;
    if (c == 0) return 0;
    for (int32_t k = 1; k < m->stage.nchunks; k++)
        if (bound[k] == s) return k;
    for (int i = 0; m->stage.recv && i < m->ninputs; i++)
        if (b->t[b->val_t[i]].stor == s) return 0;
    if (inst < 0) return c;
    while (c > 0 && m->stage.chunk_first[c] > inst) c--;
    return c;
}

static void hold_add(vc_build *b, int32_t s, int32_t refs, int32_t chunk, int32_t copy)
{
    int64_t *cap = &b->pp_live[CAP(b->m->stage.nchunks)];
    if ((int64_t)b->npp >= *cap) {
        size_t n = (size_t)(*cap ? *cap * 2 : 64);
        int32_t *h = realloc(b->pp_held, n * sizeof *h), *r = h ? realloc(b->pp_refs, n * sizeof *r) : NULL;
        if (h) b->pp_held = h;
        if (r) b->pp_refs = r;
        int32_t *c = r ? realloc(b->pp_chunk, n * sizeof *c) : NULL;
        if (c) b->pp_chunk = c;
        int32_t *k = c ? realloc(b->pp_copy, n * sizeof *k) : NULL;
        if (!k) {
            b->st = VC_ERR_NOMEM;
            return;
        }
        b->pp_copy = k;
        *cap = (int64_t)n;
    }
    b->pp_held[b->npp] = s;
    b->pp_refs[b->npp] = refs;
    b->pp_chunk[b->npp] = chunk;
    b->pp_copy[b->npp++] = copy;
}

/* Chunk c's copies from `from` to `to` (exclusive), each of the first run's
 * storages of that chunk, in copy order. */
static void hold_copies(vc_build *b, int32_t c, int64_t from, int64_t to)
{
    for (int64_t k = from; k < to && !b->st; k++)
        for (size_t j = 0; j < b->npp_first && !b->st; j++) {
            if (b->pp_chunk[j] != c) continue;
            const stor_t *o = &b->s[b->pp_held[j]];
            hold_add(b, vc__alloc(b, o->n, (vc_dtype)o->dt, CAT_ACT, o->inst), 1, c, (int32_t)k);
        }
}

/* Drops chunk c's copies from `from` to `to` (exclusive), in the order held. */
static void hold_drop(vc_build *b, int32_t c, int64_t from, int64_t to)
{
    for (size_t j = 0; j < b->npp; j++) {
        if ((c >= 0 && b->pp_chunk[j] != c) || b->pp_copy[j] < from || b->pp_copy[j] >= to) continue;
        for (int32_t k = 0; k < b->pp_refs[j]; k++) vc__free(b, b->pp_held[j], -1);
        b->pp_refs[j] = 0;
    }
}

/* The schedule's other tensors (stage_extras), as chunk nc + kind's entries:
 * kind 0 one-element tensors, kind 1 tensors the size of `like` (the first
 * chunk boundary's: the p2p shape), brought to `want`, the oldest dropped. */
static void hold_extra(vc_build *b, int kind, int64_t want, int32_t like)
{
    const int32_t nc = b->m->stage.nchunks;
    int64_t *live = &b->pp_live[2 * nc + kind], *made = &b->pp_live[2 * nc + 2 + kind];
    if (want < 0) want = 0;
    if (want < *live) hold_drop(b, nc + kind, *made - *live, *made - want);
    for (; *live < want && !b->st; ++*live) {
        const stor_t *o = &b->s[like];
        hold_add(b, vc__alloc(b, kind ? o->n : vc_n_fixed(1), (vc_dtype)o->dt, CAT_ACT, -1), 1, nc + kind, (int32_t)(*made)++);
    }
    *live = want;
}


/* The parameters' chunks: the last chunk that uses each. */
static void param_chunks(vc_build *b)
{
    const vc_model *m = b->m;
    const int32_t nc = m->stage.nchunks;
    int64_t *pch = &b->pp_live[PCH(nc, m->npar)];
    int32_t c = 0;
    for (size_t i = 0; i < m->ninst; i++) {
        while (c + 1 < nc && m->stage.chunk_first[c + 1] <= (int32_t)i) c++;
        for (int k = 0; k < m->inst[i].np; k++) pch[m->inst[i].params[k]] = c;
    }
}

/* Gradients set aside or brought back for chunk c's state (flag: the chunks
 * before c have none yet); drop: the setting aside, else the bringing back. */
static void grads_for(vc_build *b, int32_t c, bool flag, bool drop)
{
    const vc_model *m = b->m;
    const int32_t nc = m->stage.nchunks;
    int64_t *hid = &b->pp_live[HID(nc)], *pch = &b->pp_live[PCH(nc, m->npar)];
    for (size_t p = 0; p < m->npar && !b->st; p++) {
        bool want = !flag || pch[p] >= c;
        if (drop && !want && b->pgrad[p] >= 0) {
            hid[p] = b->pgrad[p] + 1;
            vc__free(b, b->pgrad[p], -1);
            b->pgrad[p] = -1;
        } else if (!drop && want && hid[p]) {
            const stor_t *o = &b->s[hid[p] - 1];
            b->pgrad[p] = vc__alloc(b, o->n, (vc_dtype)o->dt, CAT_GRAD, -1);
            hid[p] = 0;
        }
    }
}

/* The engine brought to state s (pipeline.h) for chunk c: what goes first
 * (the oldest copies, then the extras, then the gradients set aside), then
 * what comes (gradients brought back, copies, extras). grads: the second
 * pass, whose flag sets gradients aside. */
static void apply_counts(vc_build *b, const int64_t *s, int32_t c, bool grads, int64_t *live, int64_t *made)
{
    const int32_t nc = b->m->stage.nchunks;
    for (int32_t k = 0; k < nc && !b->st; k++)
        if (s[k] < live[k]) { /* the oldest go: the first run's part first */
            hold_drop(b, k, made[k] - live[k], made[k] - s[k]);
            live[k] = s[k];
        }
    for (int k = 0; k < 2 && b->pp_like >= 0; k++)
        if (s[nc + k] < b->pp_live[XLIVE(nc) + k]) hold_extra(b, k, s[nc + k], b->pp_like);
    if (grads) grads_for(b, c, s[nc + 2] & 1, true);
    if (grads) grads_for(b, c, s[nc + 2] & 1, false);
    for (int32_t k = 0; k < nc && !b->st; k++)
        if (s[k] > live[k]) {
            hold_copies(b, k, made[k], made[k] + s[k] - live[k]);
            made[k] += s[k] - live[k];
            live[k] = s[k];
        }
    for (int k = 0; k < 2 && b->pp_like >= 0; k++)
        if (s[nc + k] > b->pp_live[XLIVE(nc) + k]) hold_extra(b, k, s[nc + k], b->pp_like);
}

static void apply_state(vc_build *b, const int64_t *st, int32_t c, bool grads)
{
    const int32_t nc = b->m->stage.nchunks;
    int64_t *live = &b->pp_live[LIVE(nc)], *made = &b->pp_live[MADE(nc)], s[64 + 3];
    int64_t *sv = nc <= 64 ? s : malloc(((size_t)nc + 3) * sizeof *sv);
    if (!sv) {
        b->st = VC_ERR_NOMEM;
        return;
    }
    memcpy(sv, st, ((size_t)nc + 3) * sizeof *sv);
    sv[nc + 1] += b->pp_live[DEAD(nc) + c];
    apply_counts(b, sv, c, grads, live, made);
    if (sv != s) free(sv);
}

void vc__pp_hold(vc_build *b, size_t s0)
{
    const vc_model *m = b->m;
    const int32_t nc = m->stage.nchunks;
    const int64_t *h = first_state(m, nc - 1), *x = h + nc;
    int32_t bound[64 + 1], *bd = nc <= 64 ? bound : malloc(((size_t)nc + 1) * sizeof *bd);
    b->pp_live = calloc((size_t)PCH(nc, m->npar) + m->npar + 1, sizeof *b->pp_live);
    if (!bd || !b->pp_live) {
        b->st = VC_ERR_NOMEM;
        if (bd != bound) free(bd);
        return;
    }
    param_chunks(b);
    b->pp_live[CUR(nc)] = nc - 1;
    for (int32_t c = 1; c < nc; c++) /* each chunk's input: the output of the chunk before's last layer */
        bd[c] = b->t[b->val_t[m->inst[m->stage.chunk_first[c] - 1].out]].stor;
    size_t end = b->ns;
    for (size_t s = s0; s < end && !b->st; s++)
        if (b->s[s].refs > 0 && b->s[s].cat == CAT_ACT) hold_add(b, (int32_t)s, b->s[s].refs, stor_chunk(b, (int32_t)s, bd), 0);
    b->pp_like = nc > 1 ? bd[1] : -1;
    /* A chunk's input is kept in input_tensors until its backward (received
     * in Megatron, the previous chunk's output in the engine); when no
     * autograd node saves it the engine's run has freed it: the first run's
     * part gets a storage of its size, and while the run is in chunk c the
     * inputs of its chunks up to c are that many p2p-shaped tensors more. */
    for (int32_t c = 1; c < nc && !b->st; c++) {
        int64_t dead = b->s[bd[c]].refs <= 0;
        b->pp_live[DEAD(nc) + c] = b->pp_live[DEAD(nc) + c - 1] + dead;
        if (dead) hold_add(b, vc__alloc(b, b->s[bd[c]].n, (vc_dtype)b->s[bd[c]].dt, CAT_ACT, b->s[bd[c]].inst), 1, c, 0);
    }
    if (bd != bound) free(bd);
    if (b->st) return;
    b->npp_first = b->npp;
    int64_t most = 0;
    for (int32_t c = 0; c < nc; c++) {
        b->pp_live[LIVE(nc) + c] = h[c] > 0 ? h[c] : 0;
        b->pp_live[MADE(nc) + c] = h[c] > 0 ? h[c] : 1;
        if (h[c] <= 0) hold_drop(b, c, 0, 1); /* none held: the first run's part goes */
        if (h[c] > most) most = h[c];
    }
    for (int64_t k = 1; k < most && !b->st; k++) /* the copies, one micro-batch of every chunk after the other */
        for (int32_t c = 0; c < nc && !b->st; c++)
            if (h[c] > k) hold_copies(b, c, k, k + 1);
    for (int k = 0; k < 2 && b->pp_like >= 0; k++) hold_extra(b, k, x[k] + (k ? b->pp_live[DEAD(nc) + nc - 1] : 0), b->pp_like);
}

/* a x b + c, INT64_MAX past it */
static int64_t mul_add(int64_t a, int64_t b, int64_t c)
{
    int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r)) return INT64_MAX;
    return r;
}

/* Each chunk's second-backward state: of its list, the one holding the most
 * bytes at this batch (copies of the chunks' parts, extras, gradients; the
 * first on a tie). With two or more the choice can change with the batch:
 * the plan holds for this batch only. */
static void choose(vc_build *b)
{
    const vc_model *m = b->m;
    const int32_t nc = m->stage.nchunks;
    int64_t *part = calloc(2 * (size_t)nc, sizeof *part), *grad = part ? part + nc : NULL, one = 0, p2p = 0;
    if (!part) {
        b->st = VC_ERR_NOMEM;
        return;
    }
    for (size_t j = 0; j < b->npp_first; j++)
        if (b->pp_chunk[j] < nc) part[b->pp_chunk[j]] = mul_add(1, part[b->pp_chunk[j]], vc__stor_bytes(b, b->pp_held[j], b->batch));
    for (size_t p = 0; p < m->npar; p++)
        if (b->pgrad[p] >= 0) {
            int64_t c = b->pp_live[PCH(nc, m->npar) + p];
            grad[c] = mul_add(1, grad[c], vc__stor_bytes(b, b->pgrad[p], b->batch));
        }
    if (b->pp_like >= 0) {
        p2p = vc__stor_bytes(b, b->pp_like, b->batch);
        one = vc_bytes(vc_n_fixed(1), (vc_dtype)b->s[b->pp_like].dt, b->batch);
    }
    for (int32_t c = 0; c < nc; c++) {
        const int64_t *l = cand_list(m, c);
        int64_t best = -1, pick = -1;
        for (int64_t k = 0; k < l[0]; k++) {
            const int64_t *s = l + 1 + k * VC_PP_S(nc);
            int64_t t = mul_add(s[nc], one, 0);
            t = mul_add(s[nc + 1], p2p, t);
            for (int32_t i = 0; i < nc; i++) t = mul_add(s[i], part[i], t);
            for (int32_t i = 0; i < nc; i++)
                if (!(s[nc + 2] & 1) || i >= c) t = mul_add(1, grad[i], t);
            if (s[nc + 2] & 2) t = mul_add(1, p2p, t);
            if (t > best) best = t, pick = k;
        }
        b->pp_live[PICK(nc) + c] = pick;
        if (l[0] > 1) vc_batch_dependent(b);
    }
    free(part);
}

/* Chunk c's state in the current pass. */
static const int64_t *state(const vc_build *b, int32_t c)
{
    const vc_model *m = b->m;
    const int32_t nc = m->stage.nchunks;
    int64_t k = b->pp_live[PICK(nc) + c];
    if (!b->pp_live[PASS(nc)] || k < 0) return first_state(m, c);
    return cand_list(m, c) + 1 + k * VC_PP_S(nc);
}

/* The gradient held for the chunk the backward was in goes. */
static void flow_release(vc_build *b)
{
    int64_t *f = &b->pp_live[FLOW(b->m->stage.nchunks)];
    if (*f) vc__free(b, (int32_t)(*f - 1), -1);
    *f = 0;
}

void vc__pp_second(vc_build *b)
{
    const int32_t nc = b->m->stage.nchunks;
    flow_release(b);
    b->pp_live[PASS(nc)] = 1;
    b->pp_live[CUR(nc)] = nc - 1;
    choose(b);
    if (!b->st) apply_state(b, state(b, nc - 1), nc - 1, true);
}

void vc__pp_segment(vc_build *b, int32_t inst)
{
    const vc_model *m = b->m;
    const int32_t nc = m->stage.nchunks;
    if (nc == 1 || inst < 0) return;
    int32_t c = (int32_t)b->pp_live[CUR(nc)];
    if (inst >= m->stage.chunk_first[c]) return;
    while (c > 0 && inst < m->stage.chunk_first[c]) c--;
    b->pp_live[CUR(nc)] = c;
    const int64_t *st = state(b, c);
    flow_release(b);
    apply_state(b, st, c, b->pp_live[PASS(nc)] != 0);
    if (st[nc + 2] & 2) { /* the gradient chunk c receives, kept through its backward (step_state) */
        int32_t g = b->t[b->val_t[m->inst[m->stage.chunk_first[c + 1] - 1].out]].grad;
        if (g >= 0) {
            vc__ref(b, g);
            b->pp_live[FLOW(nc)] = g + 1;
        }
    }
}

void vc__pp_release(vc_build *b)
{
    if (b->pp_live) flow_release(b);
    hold_drop(b, -1, 0, INT32_MAX);
    if (b->pp_live) grads_for(b, 0, false, false); /* a backward that never reached the first chunk */
}
