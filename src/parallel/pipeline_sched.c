/*
 * pipeline_sched.c — the pipeline schedules' tables (--pp, --pp-virtual;
 * docs/parallel.md 1.8): for each rank, the state of every backward step of
 * its schedule, as the engine replays it (m->stage.hold, pipeline.h).
 *
 * Sources (NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
 * megatron/core/pipeline_parallel/schedules.py):
 *  - get_pp_rank_microbatches: the warm-up forwards, pp - rank - 1 for
 *    forward_backward_pipelining_without_interleaving, (pp - rank - 1) x 2 +
 *    (num_model_chunks - 1) x microbatch_group_size_per_vp_stage for
 *    forward_backward_pipelining_with_interleaving (the group size pp by
 *    default, model_parallel_config.py __post_init__), capped at the
 *    num_microbatches x num_model_chunks virtual micro-batches
 *    (are_all_microbatches_in_warmup); then 1F1B pairs (the forward of
 *    virtual micro-batch w + j, then the backward of virtual micro-batch j),
 *    then the cooldown backwards.
 *  - get_schedule_table (groups of pp micro-batches, M a multiple of pp:
 *    forward_backward_pipelining_with_interleaving raises "The remainder of
 *    M ..." otherwise, options.c refuses it), each group run on chunk 0, then
 *    chunk 1, ...; get_model_chunk_id(j, forward=False) = v - 1 - the table's
 *    chunk. So the first pp backwards are chunk v - 1's, the next pp chunk
 *    v - 2's, ...: a chunk's first backward (the one that makes its
 *    parameters' .grad, torch's AccumulateGrad; later ones add into it) comes
 *    after every later chunk's, and until the table's first pp x v backwards
 *    are done the earlier chunks have no gradients.
 */
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "util.h"

/* The warm-up forwards of rank r (of pp) with v model chunks, before the cap. */
static int64_t warmup_1f1b(int64_t r, int64_t pp, int64_t v) { (void)v; return pp - r - 1; }
/* the overlap_moe_expert_parallel_comm extra forward (off by default) is not modelled */
static int64_t warmup_interleaved(int64_t r, int64_t pp, int64_t v) { return (pp - r - 1) * 2 + (v - 1) * pp; }

static const vc_schedule_row schedules[] = {{"1f1b", warmup_1f1b, false}, {"interleaved", warmup_interleaved, true}};

const vc_schedule_row *vc__pp_row(int64_t v) { return &schedules[v > 1]; }

/* The chunk of the k-th forward and of the j-th backward. One chunk: 0. */
static int64_t fwd_chunk(int64_t k, int64_t pp, int64_t v) { return (k % (pp * v)) / pp; }
static int64_t bwd_chunk(int64_t j, int64_t pp, int64_t v) { return v - 1 - fwd_chunk(j, pp, v); }

/* recv_tensor_from_previous_stage(k, forward): whether rank r receives the
 * input of its forward k + 1 after forward k. */
static bool recv_fwd(int64_t r, int64_t pp, int64_t v, int64_t k)
{
    return r > 0 || (k >= pp - 1 && fwd_chunk(k - (pp - 1), pp, v) != v - 1);
}

typedef struct {
    int64_t r, pp, v, w, total;
    int64_t jw; /* the backward of the warm-up's last received input (stage_extras) */
} sched;

/* The j-th backward's other tensors under the interleaved schedule (its
 * default path, overlap_p2p_comm: arguments.py keeps it with a virtual
 * pipeline), beside the micro-batches in flight (n: per chunk, the one run
 * included): out[0] one-element tensors, out[1] tensors of the p2p shape.
 *  - Every micro-batch in flight of a chunk but the last keeps its sent
 *    output as the one-element tensor deallocate_output_tensor leaves (the
 *    engine runs the chunks as one stage, whose only sent output is the last
 *    chunk's, vc__pp_hold).
 *  - In a 1F1B pair the forward's output is deallocated only in the next
 *    pair's pp_pre_forward: it is whole during the backward (not the loss of
 *    the last rank's last chunk, which is not sent: output_tensor = None).
 *  - The warm-up's last receive (send_forward_recv_forward at k = w - 1, the
 *    input of forward w) stays in the local input_tensor, which the
 *    overlapped 1F1B loop and the cooldown never assign: after that micro-
 *    batch's backward it and its retained .grad (backward_step:
 *    input_tensor.retain_grad()) stay to the schedule's end.
 *  - The previous backward's input gradient stays in the loop's
 *    input_tensor_grad until this backward returns (None for the first
 *    rank's first chunk: pp_post_backward); right after the backward of the
 *    warm-up's last receive that is the same .grad.
 *  - A 1F1B pair's pp_post_forward receives the next forward's input before
 *    the pair's backward (recv_prev; not in the last pair). */
static void stage_extras(const sched *S, int64_t j, const int64_t *n, int64_t *out)
{
    const int64_t r = S->r, pp = S->pp, v = S->v, w = S->w, total = S->total;
    int64_t f = fwd_chunk(w + j, pp, v);
    bool steady = j < total - w, last = r == pp - 1;
    bool prev = j > 0 && !(r == 0 && bwd_chunk(j - 1, pp, v) == 0);
    out[0] = out[1] = 0;
    for (int64_t c = 0; c + 1 < v; c++) out[0] += n[c];
    if (steady && !(last && f == v - 1)) out[0]--, out[1]++;
    if (prev) out[1]++;
    if (steady && j < total - w - 1 && recv_fwd(r, pp, v, w + j)) out[1]++;
    if (out[0] < 0) out[0] = 0;
    if (w == 0 || w >= total) return; /* no receive before a 1F1B pair */
    /* right after that backward its input gradient is the previous one's, counted above */
    if (recv_fwd(r, pp, v, w - 1) && j > S->jw) out[1] += prev && j - 1 == S->jw ? 1 : 2;
}

/* The backward of the micro-batch the warm-up's last receive is for (forward w's). */
static int64_t warmup_recv_backward(const sched *S)
{
    const int64_t pp = S->pp, v = S->v, w = S->w, total = S->total;
    int64_t mbw = (w / (pp * v)) * pp + w % pp, jw = 0;
    while (jw < total && !(bwd_chunk(jw, pp, v) == fwd_chunk(w, pp, v) && (jw / (pp * v)) * pp + jw % pp == mbw)) jw++;
    return jw;
}

/* Whether state a holds no more than state b: no more copies of any chunk,
 * extras, nor gradients (flag bit 1: fewer gradients than without), and
 * the same bit 2. */
static bool below(const int64_t *a, const int64_t *b, int64_t v)
{
    for (int64_t c = 0; c < v + 2; c++)
        if (a[c] > b[c]) return false;
    return (a[v + 2] & 1) >= (b[v + 2] & 1) && (a[v + 2] & 2) == (b[v + 2] & 2);
}

/* Chunk c's candidates (list: count, then states of VC_PP_S(v)): s added
 * unless one holds at least as much; the ones it holds at least as much as go. */
static void add_candidate(int64_t *list, const int64_t *s, int64_t v)
{
    const int64_t S = VC_PP_S(v);
    int64_t n = list[0], k = 0;
    for (int64_t i = 0; i < n; i++)
        if (below(s, list + 1 + i * S, v)) return;
    for (int64_t i = 0; i < n; i++)
        if (!below(list + 1 + i * S, s, v)) {
            if (k != i) memmove(list + 1 + k * S, list + 1 + i * S, (size_t)S * sizeof *list);
            k++;
        }
    memcpy(list + 1 + k * S, s, (size_t)S * sizeof *list);
    list[0] = k + 1;
}

/* The engine's state for the j-th backward (on chunk c; n in flight per
 * chunk, the one run included). The engine runs one micro-batch through all
 * chunks and backward from the last chunk to the first: while its backward
 * is in chunk c it still has chunks < c of that micro-batch and no longer
 * the later ones, so the copies held are n - 1 for chunks <= c and n for the
 * later. Its extras there (the interleaved row's): stage_extras, less what
 * the engine's one run already has in a chunk before the last: the output
 * the last chunk sent, a one-element tensor (on the last rank the loss and
 * its one-element gradient instead), and, on a rank but the last, the root
 * gradient of the run's backward (the one the last chunk received): with it
 * gone from the p2p-shaped extras, the gradient the run passes to chunk c
 * stands for the one chunk c receives, kept until its backward returns
 * (backward_step_helper's output_tensor_grad; flag bit 2; on the last rank
 * always). Flag bit 1: the earlier chunks have no gradients yet (a backward
 * of the table's first pp x v but a chunk's first). */
static void step_state(const vc_schedule_row *row, const sched *S, int64_t j, const int64_t *n, int64_t *s)
{
    const int64_t v = S->v, c = bwd_chunk(j, S->pp, v);
    for (int64_t k = 0; k < v; k++) s[k] = n[k] - (k <= c);
    s[v] = s[v + 1] = 0;
    s[v + 2] = c > 0 && j < S->pp * v;
    if (row->extras) stage_extras(S, j, n, s + v);
    if (c < v - 1 && row->extras) {
        bool last = S->r == S->pp - 1;
        s[v] -= last ? 2 : 1;
        if (s[v] < 0) s[v] = 0;
        if (last || s[v + 1] > 0) s[v + 2] |= 2;
        if (!last && s[v + 1] > 0) s[v + 1]--;
    }
}

int64_t *vc__pp_schedule(vc_arena *a, const vc_schedule_row *row, int64_t r, int64_t pp, int64_t v, int64_t micro,
                         int64_t *in_flight)
{
    sched S = {r, pp, v, row->warmup(r, pp, v), micro * v, 0};
    if (S.w > S.total) S.w = S.total;
    S.jw = warmup_recv_backward(&S);
    /* Past the first pp x v backwards and the warm-up's last receive's, and
     * before the last forward, a backward's state is the one pp x v backwards
     * before (the tables repeat, every count and extra with them): from lo to
     * hi only the first pp x v are looked at. */
    const int64_t per = pp * v, lo = (S.jw + 1 > per ? S.jw + 1 : per) + per, hi = S.total - S.w - 1;
    const int64_t steps = hi - lo > per ? lo + S.total - hi + per : S.total;
    const int64_t SZ = VC_PP_S(v), L = 1 + steps * SZ; /* a list: its count, then up to `steps` states */
    if (v > (INT64_C(1) << 24) / L) return NULL; /* more than 128 MiB of scratch */
    /* scratch: n, a state, each chunk's first-backward state, each chunk's candidate list */
    int64_t *n = calloc((size_t)(v + SZ + v * SZ + v * L), sizeof *n);
    if (!n) return NULL;
    int64_t *st = n + v, *first = st + SZ, *lists = first + v * SZ, fdone = 0, cand = 0;
    *in_flight = 0;
    for (int64_t j = 0; j < S.total; j++) {
        if (j == lo && hi - lo > per) {
            int64_t skip = (hi - lo) / per * per;
            j += skip;
            fdone += skip;
        }
        int64_t f = S.w + 1 + j < S.total ? S.w + 1 + j : S.total; /* forwards before the j-th backward */
        for (; fdone < f; fdone++) n[fwd_chunk(fdone, pp, v)]++;
        if (j > 0) n[bwd_chunk(j - 1, pp, v)]--;
        if (j == 0)
            for (int64_t c = 0; c < v; c++) *in_flight += n[c];
        int64_t c = bwd_chunk(j, pp, v);
        step_state(row, &S, j, n, j == (v - 1 - c) * pp ? first + c * SZ : st);
        if (j != (v - 1 - c) * pp) add_candidate(lists + c * L, st, v); /* not the chunk's first backward */
    }
    for (int64_t c = 0; c < v; c++) cand += lists[c * L];
    /* m->stage.hold (pipeline.h): v, the lists' offsets, the first-backward states, the lists */
    int64_t *hold = vc_arena_alloc(a, (size_t)(1 + 2 * v + v * SZ + cand * SZ) * sizeof *hold);
    if (hold) {
        int64_t at = 1 + v + v * SZ;
        hold[0] = v;
        memcpy(hold + 1 + v, first, (size_t)(v * SZ) * sizeof *hold);
        for (int64_t c = 0; c < v; c++) {
            const int64_t *l = lists + c * L;
            hold[1 + c] = at;
            memcpy(hold + at, l, (size_t)(1 + l[0] * SZ) * sizeof *hold);
            at += 1 + l[0] * SZ;
        }
    }
    free(n);
    return hold;
}

/* Whether every state of table a (vc__pp_schedule) holds no more than one of
 * table b's of the same kind: each chunk's first
 * backward's below b's, each of a chunk's other states below one of b's for
 * that chunk. */
bool vc__pp_below(const int64_t *a, const int64_t *b)
{
    const int64_t v = a[0], S = VC_PP_S(v);
    if (b[0] != v) return false;
    for (int64_t c = 0; c < v; c++) {
        if (!below(a + 1 + v + c * S, b + 1 + v + c * S, v)) return false;
        const int64_t *la = a + a[1 + c], *lb = b + b[1 + c];
        for (int64_t i = 0; i < la[0]; i++) {
            bool any = false;
            for (int64_t k = 0; k < lb[0] && !any; k++) any = below(la + 1 + i * S, lb + 1 + k * S, v);
            if (!any) return false;
        }
    }
    return true;
}
