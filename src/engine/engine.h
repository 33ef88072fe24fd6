/*
 * engine.h — the training-step timeline.
 *
 * A plan is built once per (model, options): the layers emit autograd ops,
 * the engine executes them symbolically (forward, backward, checkpoint
 * recompute, optimizer step) with storage reference counts, and records a
 * batch-independent list of alloc/free events. vc_plan_simulate replays the
 * events for one batch size.
 */
#ifndef VC_ENGINE_H
#define VC_ENGINE_H

#include "layer.h"
#include "model.h"

/* What a storage is, for the breakdown. */
typedef enum { CAT_WEIGHT, CAT_GRAD, CAT_OPT, CAT_ACT, CAT_TEMP, CAT_WS, CAT__N } vc_cat;

/* A plan is the builder once the graph is recorded and executed (plan.h). */
typedef struct vc_build vc_plan;

vc_status vc_plan_build(const vc_model *m, const vc_options *o, vc_plan **out, vc_error *err);
/* --first-step (estimate.c): the plan of the run's first `steps` steps (1: the first alone, 2: it
 * and the next), the optimizer state made lazily by the first step(); vc_plan_build's is the
 * steady step, the state made before it. */
vc_status vc__plan_build_first_step(const vc_model *m, const vc_options *o, int steps, vc_plan **out, vc_error *err);
/* --first-step: r->memory.first_step (the run's first step, the first two steps' reserve) from plans
 * of their own, when o asks for it in training with an optimizer that steps; else nothing. */
vc_status vc__first_step(const vc_model *m, const vc_options *o, vc_result *r, vc_error *err);
void vc_plan_free(vc_plan *p);

/* The batches the plan holds for, lo <= batch <= hi (hi INT64_MAX: no upper
 * end): what its layers declared with vc_batch_range. A plan replayed at a
 * batch outside them must be rebuilt for that batch. */
void vc_plan_batch_range(const vc_plan *p, int64_t *lo, int64_t *hi);
/* The plan's alloc/free events (at most VC_MAX_PLAN_EVENTS): what building it cost. */
size_t vc_plan_events(const vc_plan *p);
/* The first kernel note a layer recorded (vc_note, ops.h), "" when none. */
const char *vc_plan_note(const vc_plan *p);
/* context.c: the libraries the plan's ops run (VC_USES_*), for the CUDA context model */
unsigned vc__plan_uses(const vc_plan *p);
/* compile.c: --compile's saved activations (bytes, unrounded, at the plan's batch): eager's
 * saved tensors and the partitioner's saved values; 0 and 0 without --compile or training */
void vc__plan_compile_saved(const vc_plan *p, int64_t *eager, int64_t *compiled);
/* estimate.c: --compile's eager figures in r (the same step without it, at o->batch) and
 * the saved activations (vc__plan_compile_saved's); nothing without --compile */
vc_status vc__compile_eager(const vc_model *m, const vc_options *o, const int64_t saved[2], vc_result *r,
                            vc_error *err);
/* src/engine/cudnn.c: the plan runs a convolution */
bool vc__plan_has_conv(const vc_plan *p);
/* estimate.c: r's cuDNN workspace interval (vc_memory.cudnn) for options o at
 * o->batch, r's figures being o->bound's end: the other end replayed from a plan
 * built with the other --bound (conv: the plan runs a convolution) */
vc_status vc__cudnn_interval(const vc_model *m, const vc_options *o, bool conv, vc_result *r, vc_error *err);

/* The allocator model's values at the grid batches (see reserved_envelope
 * in simulate.c). A plan takes a grid batch outside its batches
 * (vc_plan_batch_range) from the plan built for that grid batch, so the
 * values do not depend on which plan asks: an estimator that keeps several
 * plans shares one vc_grid between them (vc_plan_use_grid; the grid must outlive the plans using it). */
typedef struct vc_grid vc_grid;
vc_grid *vc_grid_new(void);
void vc_grid_free(vc_grid *g);
void vc_plan_use_grid(vc_plan *p, vc_grid *g);
/* Where a plan sharing grid g finds the plan of a grid batch outside its own
 * batches (the estimator's cache, src/engine/sweep.c): fn returns a plan that holds
 * for that batch and lives at least until the next call, or NULL (the plan
 * is then built for the one replay). */
typedef const vc_plan *(*vc_grid_plan_fn)(void *ctx, int64_t batch);
void vc_grid_set_source(vc_grid *g, vc_grid_plan_fn fn, void *ctx);

typedef struct {
    int64_t peak;                 /* peak_allocated */
    int64_t at_peak[CAT__N];      /* what is live at the peak, by category */
    int64_t persistent[CAT__N];   /* weights, grads, states, workspace: full sizes */
    int64_t activations;          /* train: ACT live at end of forward; infer: ACT peak */
    int64_t reserved;             /* caching-allocator model */
    vc_phase phase;
    int64_t peak_pre, peak_post;  /* the highest before / after the plan's marker (generate: prefill / decode; -1 none) */
    int64_t kv_cache, kv_tokens;  /* generate: the KV cache's bytes after the last step, its tokens per sequence */
    int64_t kv_mla;               /* generate: the cache's MLA layers (full per-head K/V of layers/mla.c) */
    int64_t ssm_state;            /* generate: the Gated DeltaNet layers' conv + recurrent states (bytes, the batch) */
    int ssm_layers;               /* generate: those layers */
    int ssm_mamba;                /* generate: of them, Mamba2 layers (granitemoehybrid) */
    int ssm_conv;                 /* generate: or LFM2's conv_cache entries (lfm2: one per decoder layer) */
    int64_t kv_cross, kv_cross_tokens; /* generate: an encoder-decoder's cross-attention part of kv_cache, its tokens */
    bool kv_cross_images;              /* those of mllama's cross-attention layers (the images' tokens) */
    int64_t decode_step;          /* generate: the step peak_post is in (0: no decoding step) */
    int peak_inst;                /* instance index at the peak, -1 none */
    int64_t outside;              /* optimizer state outside the caching allocator (paged), bytes */
    int64_t resident_grad;        /* of persistent[CAT_GRAD], a layout's buffers allocated once and kept between
                                   * steps (its resident hook's: DDP's buckets, ZeRO-3's gradient partitions and IPG
                                   * bucket); --loss grpo's phases outside the step (grpo.c) */
} vc_sim;

/* Replays the plan for `batch` samples. Per-instance saved bytes go to
 * inst_act (may be NULL; m->ninst entries). */
vc_status vc_plan_simulate(const vc_plan *p, int64_t batch, vc_sim *s, int64_t *inst_act, vc_error *err);
/* The same, but when the allocated peak alone is above `limit`, reserved is
 * not modelled: it is set to the peak, a lower bound (for the max-batch
 * search, where such a batch does not fit whatever reserved is). */
vc_status vc_plan_simulate_limit(const vc_plan *p, int64_t batch, int64_t limit, vc_sim *s, vc_error *err);
/* estimate.c: the step under other options (the cuDNN interval's other bound, --compile's eager
 * step, --loss grpo's generation): its plan built, replayed for o->batch samples into s, freed. */
vc_status vc__simulate_as(const vc_model *m, const vc_options *o, vc_sim *s, vc_error *err);
/* estimate.c: a simulation as a result, all but cuda_context and total; layers when inst_act != NULL */
vc_status vc_result_from_sim(const vc_model *m, vc_optim optim, const vc_sim *s, const int64_t *inst_act,
                             vc_result *r, vc_error *err);
/* grpo.c: --loss grpo, the generation phase as its own plan beside the training state of st (the
 * step's other phases, the plan just simulated); r->grpo and the step's peak and reserve. */
vc_status vc__grpo_phases(const vc_model *m, const vc_options *o, const vc_sim *st, vc_result *r, vc_error *err);

/* --use-vllm's colocated engine in the trace (src/api/request.c vllm_beside): its weights, KV cache and CUDA graph
 * pool (--vllm-cuda-graph-memory, 0 not given), and sleep mode (--vllm-sleep). */
typedef struct vc_grpo_engine {
    int64_t weights, kv_cache, graph_memory;
    bool sleep;
    int64_t comm_allocated; /* its tensor-parallel group's buffer in the caching allocator (rank_data), 0 */
} vc_grpo_engine;
/* grpo.c: the trace's rows of that engine before the step's (head) and the phases outside the step after them
 * (tail: the next step's sync and vllm); *total the running total, carried. */
vc_status vc__grpo_trace_head(const vc_grpo_engine *v, int64_t *total, void (*line)(void *, const char *), void *ctx);
vc_status vc__grpo_trace_tail(const vc_model *m, const vc_options *o, const vc_grpo_engine *v, int64_t *total,
                              void (*line)(void *, const char *), void *ctx, vc_error *err);
/* estimate.c: vc_trace with --use-vllm's engine (v, NULL without) */
vc_status vc__trace(const vc_model *m, const vc_options *o, const vc_grpo_engine *v, void (*line)(void *, const char *),
                    void *ctx, vc_error *err);

/* serve.c: why vLLM does or does not subtract its CUDA graphs from the KV pool (vc_serve_result.graphs_why,
 * VC_SERVE_GRAPHS_*): --use-vllm's engine (src/api/request.c vllm_beside) gives a measure to vc_serve only there */
int vc__serve_graphs_why(const vc_model *m, const vc_options *o, const vc_gpu_spec *gpu);
/* serve.c: the least max_num_seqs whose profiling-run requests fit the model's derived max_model_len,
 * cdiv(max_num_batched_tokens, max_model_len) (0: none derived); vc_serve's refusal and --use-vllm's (request.c) */
int64_t vc__vllm_min_num_seqs(const vc_model *m, int64_t max_num_batched_tokens);

/* grpo.c: --use-vllm, the gradients the trainer holds between steps, of the step's persistent `all` (DDP's
 * buckets; every one under --zero-grad zero); -1 on overflow */
int64_t vc__grpo_resident_grads(const vc_model *m, const vc_options *o, int64_t all);
/* grpo.c: the parallel layouts --loss grpo is modelled under: NULL for o's, else why not (one line) */
const char *vc__grpo_layout_why(const vc_model *m, const vc_options *o);

/* Writes one line per alloc/free event (phase, kind, category, bytes,
 * running total, layer, op) through `line`, the running total from *total (carried). */
vc_status vc_plan_trace(const vc_plan *p, int64_t batch, int64_t *total, void (*line)(void *, const char *), void *ctx);
/* One such line. */
void vc__trace_row(void (*line)(void *, const char *), void *ctx, vc_phase ph, bool alloc, const char *cat, int64_t bytes,
                   int64_t total, const char *where, const char *op);

/* Bytes of n elements of dt for `batch`, rounded up to 512; -1 on overflow. */
int64_t vc_bytes(vc_numel n, vc_dtype dt, int64_t batch);

/* The caching allocator model (alloc.c): replays mallocs and frees and
 * returns the bytes reserved at the end (segments are never released, so
 * that is the most it reserved); -1 out of memory (or a size that is not a
 * positive multiple of 512), -2 a request past 2^61 bytes or a reserve past
 * 2^63, -3 at most vc_alloc_scratch.limit (a replay stopped by its bound). `prefix` (0:
 * none) promises that ev[0..prefix) are the same events at every call with
 * this scratch that passes the same prefix: the state after them is kept and
 * the next such replay starts there. */
typedef struct {
    int64_t size;  /* rounded request, > 0 for malloc */
    int32_t block; /* for a free: the index of the malloc event; -1 for malloc */
} vc_alloc_event;
/* What a replay keeps for the next one (alloc.c); zero-initialise, free with vc_alloc_scratch_free. */
typedef struct {
    struct vc_alloc_state *st;
    /* --alloc-conf (src/engine/alloc_conf.c), set by the caller before each replay:
     * expandable_segments:True, and max_split_size_mb in bytes (0: unlimited) */
    int expandable;
    int64_t max_split;
    /* set by the caller: VC_POOL_SMALL or VC_POOL_LARGE when every request is of that pool (replay.c's
     * streams, one per pool), VC_POOL_EITHER (0, as zero-initialised) otherwise */
    int pool;
    /* set by the caller: every replay with this scratch and a prefix frees, after the prefix, the same
     * mallocs of the prefix (replay.c's streams: those are fixed-size storages' events); the kept state
     * then leaves out the prefix's blocks that are never freed (alloc.c compact_snapshot) */
    bool fixed_frees;
    /* set by the caller: NULL, or a malloc's `size` is an index into sizes[], which holds its bytes
     * (replay.c: a storage's, so a stream is rewritten only when a request changes pool, not at each batch) */
    const int64_t *sizes;
    /* set by the caller: > 0, the replay may stop as soon as its reserve at the end is proven at most
     * `limit` bytes, and returns -3 then (default settings, one pool's requests: alloc.c `bounded`); 0: it
     * runs to the end. `gen`: the stream's identity for the counts that bound keeps (the caller changes it
     * when it writes other events into a stream it replays again with this scratch) */
    int64_t limit;
    uint64_t gen;
} vc_alloc_scratch;
enum { VC_POOL_EITHER, VC_POOL_SMALL, VC_POOL_LARGE };
int64_t vc_alloc_replay(const vc_alloc_event *ev, size_t n, size_t prefix, vc_alloc_scratch *sc);
/* An upper bound of vc_alloc_replay's reserve for the same stream and scratch (default settings, sc->pool one
 * pool), without replaying past the prefix (alloc.c window_bounds): -1 none (other settings, requests out of the
 * bound's range, a prefix whose state is not kept, out of memory). */
int64_t vc_alloc_bound(const vc_alloc_event *ev, size_t n, size_t prefix, vc_alloc_scratch *sc);
/* Requests of at most this many bytes come from the small pool (kSmallSize). */
#define VC_ALLOC_SMALL_SIZE (INT64_C(1) << 20)
/* 1 when a request of `size` bytes comes from the small pool, 0 the large one */
static inline int vc_alloc_small(int64_t size) { return size <= VC_ALLOC_SMALL_SIZE; }
void vc_alloc_scratch_free(vc_alloc_scratch *sc);
/* replay.c: frees what plan p keeps for its next allocator-model replays (its pools' request
 * streams and the allocator's state); the next one builds them again, to the same values */
void vc__plan_release_replay(const vc_plan *p);
/* replay.c: plan p is about to be replayed for n batches (a sweep's rows in its batch range, this one included):
 * the candidate events (build_candidates), which its replays past the first CAND_AFTER read instead of every
 * event, are built at the first of them when the plan would reach that many */
void vc__plan_expect_replays(const vc_plan *p, size_t n);
/* sweep.c: the batches a sweep asks after this one (and this one first): vc_estimator_run passes to the plan
 * it runs how many of them it holds for (vc__plan_expect_replays); forgotten after that run */
void vc__estimator_expect(vc_estimator *e, const int64_t *batches, size_t n);

/* vc_estimator_total for a caller that asks only whether the total is at most
 * `limit` (>= 0): a total over it may be any value over it (the allocator
 * model is not replayed past the limit by the allocated peak); at most the
 * limit, it is vc_estimator_total's (sweep.c). */
vc_status vc__estimator_total_limit(vc_estimator *e, int64_t batch, int64_t limit, int64_t *total, vc_error *err);
/* A floor under the allocated peak of e's plan (plan.c, sweep.c): the bytes of the weights and optimizer states
 * (CAT_WEIGHT, CAT_OPT) of a size that does not move with the batch that the plan allocates and never frees,
 * all live at its end. Their sizes follow from the model's parameters and buffers and the options (the
 * precision, the optimizer, the layout: src/engine/state.c, src/parallel/layout_*.c), not from its inputs'
 * shapes, so the floor holds for any model with the same parameters and buffers under the same options
 * (--max-seq's probes at other lengths, maxseq.c). 0 with no plan or a pipeline's stages; INT64_MAX past 2^63. */
int64_t vc__plan_state_floor(const vc_plan *p);
int64_t vc__estimator_state_floor(const vc_estimator *e);
/* maxseq.c: vc_model_max_seq, and, when the search ran over m itself (m at the options' split), the model the
 * answer is reported at (the longest length that fits, else 1 token) when the search made it: *at,
 * vc__seq_probe_load's, with the generated text its load has (it borrows m's names: free it before m), and
 * the search's estimator of it, *at_e (vc_estimator_new(*at, o, VC_EST_NO_LAYERS), replayed at o->batch by
 * vc__estimator_total_limit); else both NULL. at and at_e NULL: vc_model_max_seq. */
vc_status vc__model_max_seq_at(const vc_model *m, const vc_options *o, int64_t capacity, int64_t *max_seq, int *limited,
                               int *estimates, vc_model **at, vc_estimator **at_e, vc_error *err);

#endif
