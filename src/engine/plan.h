/*
 * plan.h — the engine's private data: the op graph the layers record
 * (graph.c), the storages and alloc/free events its symbolic execution
 * makes (autograd.c), and what replays keep between batches (replay.c,
 * simulate.c). A plan is a vc_build once built (plan.c).
 *
 * Semantics follow PyTorch's eager autograd (docs/autograd.md):
 *  - forward: each op allocates its outputs; a tensor's Python reference is
 *    dropped after its last use; ops keep their saved tensors until their
 *    backward has run;
 *  - backward: ops run in reverse creation order; gradients of inputs are
 *    allocated by the consumer and accumulated at forks; AccumulateGrad
 *    steals a fresh parameter gradient (set_to_none=True);
 *  - checkpoint regions save nothing in forward, keep their inputs, and are
 *    recomputed (up to their last saving op) before their backward;
 *  - the optimizer step allocates its temporaries, then zero_grad frees
 *    every gradient.
 */
#ifndef VC_PLAN_H
#define VC_PLAN_H

#include <stdlib.h>

#include "engine.h"
#include "policy.h"

/* IT_FFREE: frees the kept forward transient whose item index in the op is `t`
 * (vc_op_ftemp_free); an IT_FTEMP with `in` 2 is such a kept one; an IT_EXTRA with
 * `in` >= 0 is input `in`'s gradient (vc_op_extra_grad) */
enum { IT_IN, IT_OUT, IT_EXTRA, IT_SAVE, IT_FTEMP, IT_BTEMP, IT_FFREE };
enum { EV_ALLOC, EV_FREE, EV_FWD_END };

typedef struct {
    uint8_t type, dt, how, diff, gview;
    int16_t in;    /* IT_SAVE: condition input (-1 always); IT_IN: grad size set */
    int32_t t;     /* tensor (IT_IN, IT_OUT, IT_SAVE) */
    int32_t comp;  /* IT_FTEMP/IT_BTEMP: a merged transient (comp_t), -1 none: sized by n */
    vc_numel n;    /* IT_EXTRA/TEMP sizes; IT_IN: grad size when `in` is 1 */
} item_t;

typedef struct {
    vc_numel n;
    uint8_t dt;
    bool rg, contig, persistent, held;
    bool ugrad;      /* backward: an undefined gradient arrived for it (VC_GRAD_UNDEF), none defined yet */
    int32_t op;      /* producer op, -1 for leaves */
    int32_t base;    /* tensor whose storage this view shares, -1 none */
    int32_t param;   /* parameter index, -1 */
    int32_t release; /* explicit release point (vc_release), -1 */
    int32_t rrelease; /* the latest explicit release point inside the producer's checkpoint region, -1: what
                       * the recompute holds when a later one is outside it (a checkpointed block's
                       * returned value, autograd.c build_liveness) */
    int32_t with;    /* vc_keep_with: an earlier tensor whose Python reference this one outlives not, -1 */
    int32_t last;    /* liveness: op after which the reference is dropped */
    int32_t stor, grad;
} tens_t;

typedef struct {
    const char *name;
    int32_t inst, region;
    int32_t it0, nit;
    bool rg, gemm, lt; /* lt: a GEMM through cuBLASLt (vc_op_gemm_lt) */
    bool sac;         /* --grad-ckpt-ops: in a region, its outputs kept from forward (MUST_SAVE) */
    int32_t sv0, nsv; /* saved storages (execution) */
    int32_t sac0, nsac; /* --grad-ckpt-ops: its outputs kept from forward, in b->sac */
    bool dead;        /* no gradient reaches the loss from it (free_unreached): a loss region's recompute
                       * keeps nothing it saves (its checkpoint holder is gone) */
    bool leaf;        /* its output a leaf made to require grad (vc_op_leaf_grad): kept, with its .grad, by
                       * the AccumulateGrad node until the graph is freed after backward */
    bool kvd;         /* checkpointed, an ancestor of the keys or values its region's layer stores in Gemma 4's
                       * shared_kv_states: what it saves in the recompute the dict keeps (autograd.c kvd_*) */
} op_t;

typedef struct {
    vc_numel n;
    uint8_t dt, cat;
    bool gview; /* a gradient that is a view keeping its base (vc_op_grad_view) */
    bool resident; /* allocated with the persistent state, kept for the whole run */
    bool transient; /* a layout's passing copy of weights (FSDP's gathered flat parameters): not persistent */
    int32_t inst;
    int32_t refs;
    int32_t ev; /* alloc event index */
    int32_t comp; /* a merged transient (comp_t): its bytes are vc__comp_bytes, not n's; -1 none */
} stor_t;

/* A merged transient (vc_op_ftemp_parts): several tensors that live together
 * inside one kernel call, allocated as one block. Its bytes at a batch are,
 * over the alternatives, the largest sum of its parts' 512-rounded sizes
 * (each part saturated at 2^60 bytes), capped at 2^60 when `cap`. */
typedef struct {
    int64_t ps, fx;  /* elements per sample, fixed elements */
    int64_t div, mul; /* elements: floor((ps x batch + fx) / div) x mul */
    int32_t dts;     /* bytes per element */
    int32_t alt;     /* the alternative it belongs to */
} part_t;

typedef struct {
    int32_t p0, np;
    bool cap;
    /* red_in > 0: instead of parts, a CUDA reduction's scratch (src/engine/scratch.c)
     * while it sums a contiguous [rows, rout] gradient of red_in-byte elements
     * over its rows, rows = rps x batch + rfx (vc_op_grad_reduce_rows), in
     * float accumulators (acc_type of float, half and bfloat16) */
    int8_t red_in;
    int64_t rps, rfx, rout;
} comp_t;

typedef struct {
    int32_t stor;
    uint8_t kind, phase;
    int32_t inst;
    int32_t op; /* op being executed, -1 */
} ev_t;

typedef struct {
    int32_t first, last, last_save;
    int32_t stop;    /* the recompute's last op: last_save (early stop), or last (--grad-ckpt-ops) */
    int32_t h0, nh;  /* external input tensors held (in rel pool) */
    int32_t off_t, off_s; /* --act-offload: its first input (tensor, storage) offloaded, -1 none */
    int32_t o0;      /* --grad-ckpt-kind reentrant: where its held recomputed outputs and output gradients begin in
                      * b->rhold (autograd.c reentrant_hold), -1 none */
    int32_t bfirst;  /* the last of its nodes backward runs (the lowest op autograd recorded), -1 none: where its
                      * held inputs go (autograd.c backward) */
    bool recomputed;
} region_t;

/* One event whose size depends on the batch, with the batch-independent
 * events before it folded into sums (vc_plan_simulate's first pass). */
typedef struct {
    int32_t code;            /* storage (alloc), ~storage (free); INT32_MIN: none (the tail) */
    int32_t pos, fmax_pos;   /* index in code[] of this event, of the folded events' highest point */
    int64_t fdelta, fmax;    /* folded events: net bytes; highest running sum after an alloc (INT64_MIN none) */
    int64_t adelta, amax;    /* the same for activations */
} fold_t;

typedef struct {
    int64_t cum; /* the model's most reserved over grid batches 0..k, -1 not known */
    int64_t val; /* the model's reserve at grid batch k, -1 not known */
    int64_t ub;  /* val not known: at most this (a replay stopped by its bound), INT64_MAX */
} vc_grid_pt;

struct vc_grid {
    vc_grid_pt *pt; /* per grid batch k < n */
    size_t n, cap;
    vc_grid_plan_fn source; /* the plan for a grid batch outside the asking plan's batches; NULL: build one */
    void *source_ctx;
};

/* What a replay at one batch needs, in compact arrays built on first use
 * (kept with the plan, which is otherwise read-only), and the allocator
 * model's results at the grid batches (see reserved_envelope). */
typedef struct {
    bool ready;
    int64_t *a, *c;   /* per storage: bytes = round512(a + c * batch) */
    uint8_t *cat;     /* per storage */
    int64_t amax, cmax;
    int32_t *dep;     /* the storages whose size depends on the batch */
    size_t ndep;
    /* dep split by how sizes_at sizes them: lin[] by a + c x batch; frm[]
     * through a size formula (a floor count or a merged transient), frm_id[]
     * naming one of the distinct formulas, each evaluated once per batch from
     * its first storage, form_rep[] (form_comp: a merged transient's) into
     * form_val[] */
    int32_t *lin, *frm, *frm_id, *form_rep;
    size_t nlin, nfrm, nform;
    bool *form_comp;
    int64_t *form_val;
    int64_t fixed_persistent[CAT__N]; /* batch-independent part of vc_sim.persistent, -1 overflow */
    int64_t fixed_resident_grad;      /* vc_sim.resident_grad, -1 overflow */
    int32_t *code;    /* per event: storage (alloc), ~storage (free) */
    int32_t *orig;    /* per event: index in the plan's events */
    size_t ncode, fwd_end; /* events before the end-of-forward marker */
    size_t first_dep;      /* the first event whose size depends on the batch */
    fold_t *fold;
    size_t nfold, fwd_fold; /* the fold item whose folded events hold the marker */
    int64_t fwd_aoff;       /* activation bytes of those folded events before the marker */
    bool fold_overflow;
    int64_t *sz;      /* scratch: per storage */
    /* the allocator model per pool (0 large, 1 small: independent, see
     * replay_reserved): its requests, each a storage's index into sz */
    struct {
        vc_alloc_event *ev; /* the stream */
        size_t n;           /* its requests */
        size_t pre;   /* requests before the first batch-dependent event: written once */
        int64_t last; /* the last replay's reserve, -1 none */
        vc_alloc_scratch scratch;
    } pool[2];
    bool streams_ready; /* pool[].ev allocated, the prefix written, last_sz set */
    int32_t *size_rep;  /* one batch-dependent storage per distinct size function (replay.c size_reps), or NULL */
    size_t nsize_rep, nsize_lin; /* the first nsize_lin are lin[]'s */
    int64_t *last_sz;   /* per size_rep: its bytes at last_batch */
    int64_t last_batch; /* the batch of the last reserve replay */
    int32_t *evidx;   /* scratch: per storage, its malloc's event index in its pool's stream */
    vc_grid own, *grid; /* the grid values: this plan's own, or an estimator's shared one */
    /* the events that can hold a maximum (replay.c, build_candidates): per
     * segment (0: before the end-of-forward marker, 1: after it, 2: the
     * running activation total over the whole step), the events whose
     * upper line reaches the hull of all events' lower lines, each as its
     * fixed bytes and its count of live batch-dependent storages per size
     * group (ngrp groups; grp[s] the group of storage s, -1 fixed;
     * grp_rep[g] one storage of the group) */
    int nsim;         /* vc__replay_allocated calls so far */
    int expect;       /* replays its caller still means to make (vc__plan_expect_replays), 0 not known */
    int cand_state;   /* 0 not tried, 1 built, -1 not worth it (too many groups or candidates) */
    int32_t ngrp, *grp, *grp_rep;
    struct {
        size_t n;
        int64_t *fixed;
        int32_t *pos, *cnt; /* cnt: n x ngrp */
    } cand[3];
    int64_t mk_fixed, mk_afixed; /* at the marker: total and activation fixed bytes */
    int32_t *mk_cnt, *mk_acnt;   /* and counts per group */
    int64_t *grp_val;            /* scratch: per group, its bytes at the batch */
    int32_t ngrp_lin;            /* groups 0..ngrp_lin-1: a + c x batch; the others size formulas */
    int32_t *pers_cnt;           /* per category x group: batch-dependent persistent storages */
    int32_t *pk_cnt;             /* per category x group: the batch-dependent storages live at pk */
    bool pk_cnt_ok;              /* pk_cnt is pk's */
    /* what is live at one peak event, for the breakdown of the next batch
     * that peaks there: the fixed-size part by category, and the live
     * batch-dependent storages grouped by category (pk_dep[pk_off[c] ..
     * pk_off[c + 1])) */
    size_t pk;        /* (size_t)-1: none yet */
    int64_t pk_fixed[CAT__N];
    int32_t *pk_dep;
    int32_t pk_off[CAT__N + 1];
} res_memo;

/* --mode generate (generate.c): the passes, each attention layer's KV cache
 * (its tensors carried from one pass to the next) and the decoding loop's
 * own tensors. */
typedef struct {
    int32_t k, v;     /* the cache tensors (storage length `len` tokens) */
    int64_t window;   /* sliding_window (DynamicSlidingWindowLayer), 0 none */
    int64_t len;      /* tokens in the storage (a sliding layer keeps a view of its last w - 1) */
    /* --cache offloaded: k and v are the last update's results (their sizes; the
     * cache itself is in host memory), gk and gv the copy prefetched to the
     * GPU for the next update, -1 none; kpt, vpt elements per token and sample */
    int32_t gk, gv;
    int64_t kpt, vpt;
    /* --cache quantized (kvquant.c): k and v are the residual (len tokens, -1
     * when empty); q the quantized keys and values (quanto's packed data,
     * scale, shift each; -1 none), qlen their tokens */
    int32_t q[6];
    int64_t qlen;
    /* --serve: elements per token vLLM's cache keeps for the layer instead of its
     * keys and values (MLA's compressed latent, MLAAttentionSpec); 0: K and V */
    int64_t latent;
    /* --serve: K and V elements per token vLLM's cache keeps when they differ from the states
     * transformers caches (falcon's new_decoder_architecture: num_kv_heads, not the broadcast
     * heads; vllm/model_executor/models/falcon.py); 0: as cached */
    int64_t paged;
    /* an encoder-decoder's cross-attention (generate.c vc_kv_cross): k and v the keys and values of
     * the encoder's output (len: its tokens), kept from the first decoding step to the end */
    bool cross;
} vc_kv_slot;

typedef struct {
    bool on;
    bool profile;             /* --serve: vLLM's profiling run (one forward, no cache, the sampler's logits) */
    bool capture;             /* --serve, with profile: a CUDA graph capture's forward, the model's body
                               * without the LM head and the sampler (src/engine/serve_graphs.c) */
    int pass;                 /* 0 the prefill, 1 and 2 the decoding steps emitted */
    int64_t dstep[2];         /* the decoding steps emitted (1 .. steps - 1): the last, or (--cache
                               * quantized) the last that requantizes and the last, or (a sliding
                               * layer's prompt past its window) the first and the last; 0 none */
    int64_t prompt, steps;    /* prompt tokens, new tokens (forward passes) */
    int64_t past, seq;        /* this pass: tokens cached before it, tokens it feeds */
    int nslot, cslot, cur;    /* cache slots (attention layers), capacity, the next this pass */
    int nkv;                  /* attention layers with a cache (the model's RotaryAttention / MLAttention instances) */
    vc_kv_slot *slot;
    int32_t split_op;         /* the first op of the decoding pass: the phase marker; -1 none */
    int32_t split2_op;        /* the first op of the second decoding step emitted, -1 none */
    int32_t ret[2];           /* states an update returned that the cache does not hold (vc_kv_end), -1 */
    int32_t mask;             /* StaticCache: this pass's 4-D attention mask, -1 */
    /* Gated DeltaNet layers (layers/deltanet.c, vc_ssm_state): each one's {conv, recurrent}
     * state in Qwen3NextDynamicCache, their number, capacity, the next this pass */
    int32_t (*ssm)[2];
    int nssm, cssm, cur_ssm;
    int nmamba;               /* of them, the first nmamba: Mamba2 layers' (HybridMambaAttentionDynamicCache, layers/mamba2.c) */
    int nconv;                /* or LFM2's conv_cache entries, one per decoder layer (Lfm2HybridConvCache, layers/shortconv.c) */
    bool hybrid;              /* the model has them: the cache is Qwen3NextDynamicCache */
    bool indexer;             /* the slots are DeepSeek-V3.2's indexer key caches (vc_kv_indexer, layers/mla.c): kv_cache's */
    const vc_model *twin[2];  /* the model at the prompt's length and at the head's rows (one token; --serve: the requests) (owned) */
    int64_t head_rows;        /* rows of the LM head's input: 1 (logits_to_keep=1), --serve: the requests */
    /* an encoder-decoder (generate.c "Encoder-decoders"): instances [0, enc_end) the encoder, run once;
     * enc_val its output value (encoder_outputs.last_hidden_state), enc_t its tensor; ids_inst the
     * decoder's input-ids instance (the loop's ids instead); enc_len the encoder's tokens */
    bool encdec;
    bool features; /* the encoder reads features (whisper's input_features), not token ids: no attention mask */
    size_t enc_end;
    int enc_val, ids_inst;
    int32_t enc_t;
    int64_t enc_len;
    int32_t lp_bias; /* NoBadWordsLogitsProcessor's length_1_bias [V] float32, made at its first call and held by
                      * the processor list to generate()'s end (generate.c logits_processors), -1 none */
    /* a config.json run with --image (generate.c "Images"): the image tokens of the prompt, and the
     * tower's instances [tower_first, tower_end), run in the prefill only; 0 none */
    int64_t image_tokens;
    size_t tower_first, tower_end;
    /* mllama with --image (generate.c "Images"): the tower's output (cross_attention_states), whose projections (the
     * cross-attention layers' k_proj / v_proj) run in the prefill only, their keys / values cached (vc_kv_cross);
     * -1 none */
    int xval;
    /* --num-beams (generate.c "Beam search"): generate()'s num_beams, 1 greedy; the plan's rows are then
     * batch x beams (vc_plan_simulate multiplies the batch by it) */
    int64_t beams;
    /* 1: transformers' GenerationMixin._prefill (--transformers 5.0, VC_TF_PREFILL_BUT_LAST) runs the first pass over
     * prompt - 1 tokens and the loop's first step over the last one (generate.c "The prefill"); 0: the first pass
     * over the whole prompt */
    int shift;
    /* the model's forward calls (forward_pass: the prefill's, each decoding step's): their first op and the op after
     * their last, so that a parallel layout's root hooks run around each (autograd.c forward: --loss grpo's generation
     * under fsdp and fsdp2, src/engine/grpo.c); npass of VC_GEN_PASSES recorded */
#define VC_GEN_PASSES 8
    int32_t pass_from[VC_GEN_PASSES], pass_to[VC_GEN_PASSES];
    int npass;
} vc_gen;

/* --compile (compile.c): the partition and inductor's fusion, decided per op
 * and per tensor before the graph runs */
typedef struct {
    uint8_t *cls;          /* per op: its class (compile.c op_class) */
    bool *fused;           /* per tensor: a fused kernel's local, never allocated (forward) */
    bool *gfused;          /* per tensor: its gradient never allocated (between fusible backwards) */
    int32_t *sv_off, *sv;  /* per op k, sv[sv_off[k] .. sv_off[k + 1]): t saved for its backward,
                            * ~t recomputed and materialized by its (not fusible) backward */
    int64_t saved_eager, saved_compiled; /* bytes (unrounded) of the saved activations at the plan's batch */
} vc_compile;

struct vc_build {
    struct vc_op *op_pool; /* ended op handles, reused by vc_op_begin (graph.c): not a malloc and free per op */
    const vc_model *m;
    vc_options o;
    int64_t batch;
    vc_dtype act_dt, param_dt, amp_dt;
    const vc_precision_row *prec; /* o.precision's row */
    const vc_optim_row *optim;    /* o.optim's row */
    const vc_layout_row *layout;  /* the parallel layout's row */
    bool *owned;                  /* layout->owns: parameters whose optimizer state is here; NULL all */
    int32_t hook_inst;            /* the instance whose module hook last began, -1 */
    int32_t npre;                 /* the first ops, run before the layout's whole-model hook (the inputs' casts, cast_inputs), 0 */
    /* layout->flat: the flat parameters this rank holds in place of the
     * model's (FSDP's shards), one per wrapped unit, [0] the root's */
    vc_flat_param *flat; size_t nflat;
    int32_t *unit_of;             /* instance -> its unit in flat[] (0: the root) */
    int32_t lay_cur;              /* the unit whose forward or backward runs (the module hooks'), -1 */
    int64_t lay_n[6];             /* the layout hooks' counters (ZeRO-2: bucket elements, ...) */
    int32_t lay_s[4];             /* ... and storages, -1 none */
    bool *lay_mask;               /* ... and a per-parameter flag (ZeRO-2: in this rank's partition) */
    void *lay_state;              /* ... or a row's own state (ZeRO-3), freed with lay_free */
    void (*lay_free)(void *);
    const char *why_opt;          /* a layout's refusal (b->st = VC_ERR_USAGE): the option, and why */
    char why[200];
    bool train;
    vc_status st;
    int64_t blo, bhi;             /* the batches this plan is valid for (vc_batch_range): [1, INT64_MAX] unless a layer narrowed it */
    int64_t outside;              /* bytes of optimizer state outside the caching allocator (vc_tspec.outside) */
    bool lazy_pass;               /* --first-step: the first step runs, the optimizer state is not made yet */
    int first_steps;              /* vc__plan_build_first_step: the run's first steps simulated (1 or 2), 0: the steady step */
    /* --loss grpo --accumulate N with --beta (src/engine/grpo.c): the ops [once_from, once_to), micro-step 1's
     * reference pass, run in the first accumulation pass only; acc_pass: the pass train_step runs (0 the first) */
    int32_t once_from, once_to;
    int acc_pass;

    tens_t *t;   size_t nt, ct;
    op_t *op;    size_t nop, cop;
    item_t *it;  size_t nit, cit;
    part_t *part; size_t npart, cpart; /* merged transients' parts */
    comp_t *comp; size_t ncomp, ccomp; /* merged transients */
    int32_t *val_t;     /* model value -> tensor */
    int32_t *par_t;     /* parameter -> tensor */
    int32_t *buf_t;     /* buffer -> tensor */
    int32_t *amp_cache; /* parameter -> autocast copy tensor, -1 */
    int cur_inst, cur_region;
    int32_t out_t;
    uint32_t unheld; /* the current instance's inputs no caller holds (vc_input_unheld), bit i: input i */

    /* execution */
    stor_t *s;   size_t ns, cs;
    ev_t *ev;    size_t nev, cev;
    int32_t *sv; size_t nsv, csv;     /* saved storages pool */
    int32_t *rel_off, *rel;           /* per-op release lists (forward) */
    int32_t *rrel_off, *rrel;         /* per-op release lists (recompute) */
    region_t *reg; int nreg;
    int nloss_reg;                    /* checkpoint regions the loss opened (numbered after the model's) */
    int32_t *sac; size_t nsac, csac;  /* --grad-ckpt-ops: outputs kept from forward (op_t.sac0) */
    /* --act-offload (autograd.c off_*): the ops the offload hooks see end before loss_op0 (the
     * loss's first, or the output head's, head_inst, under torchtune's NoOpManager); pack_id counts the
     * forward's packs; stash: (pack id, storage) kept on the GPU until the copy stream is done
     * (fwd_stash); bwd: the tensors the last unpacking node brought back (bwd_tensor_stash) */
    int32_t loss_op0, head_inst, pack_id;
    int32_t *stash; size_t nstash, cstash; /* pairs */
    int32_t *bwd; size_t nbwd, cbwd;
    int32_t *leafkeep; size_t nleafkeep, cleafkeep; /* storages op_t.leaf keeps until backward ends */
    bool recomputing;                 /* a region's forward runs again */
    int32_t *hold; size_t nhold;
    /* --grad-ckpt-kind reentrant: what CheckpointFunction.backward holds until it returns (its `args`, the output
     * gradients; its recomputed `outputs`), region by region (region_t.o0) */
    int32_t *rhold; size_t nrhold, crhold;
    int32_t *pgrad;                   /* parameter -> grad storage (.grad) */
    int32_t *pedges;                  /* parameter -> gradient edges into its AccumulateGrad */
    int32_t *parrived;                /* parameter -> gradients arrived in this backward */
    int32_t *ppending;                /* parameter -> its InputBuffer's gradient, -1 */
    int32_t *fwd_live; size_t nfwd_live; /* ACT storages live at end of forward */
    int32_t loss_t;
    int32_t held_out_t; /* --hold-output: the model's output, kept until backward returns, -1 */
    int32_t target_t; /* cross-entropy targets: resident like the input batch, -1 */
    /* --loss dpo (loss.c emit_dpo, plan.c vc__emit_reference): TRL's reference forward.
     * ref_t: the frozen reference copy's weights and buffers, persistent like the
     * model's (state.c), nref of them; no_regions: instances emitted outside their
     * checkpoint regions; adapters_off: PEFT's disable_adapter (layers/linear.c) */
    int32_t *ref_t; size_t nref;
    bool no_regions, adapters_off;
    uint8_t phase;
    int32_t cur_op;
    res_memo *memo; /* filled lazily by vc_plan_simulate (the plan is otherwise read-only) */
    char note[192]; /* vc_note: the first attention layer's kernel choice */
    vc_gen gen;     /* --mode generate */
    int32_t fwd_local; /* vc_forward_local: kept until the forward returns, -1 */
    int32_t fwd_local2; /* vc_forward_local2: a second one (ModernBERT's sliding-window mask), -1 */
    int32_t dsa_topk;   /* vc_dsa_topk: GLM-MoE-DSA's topk_indices, kept until the forward returns, -1 */
    int32_t *fwd_keep; /* vc_keep_forward: more tensors kept until the forward returns */
    size_t nfwd_keep, cfwd_keep;
    int32_t mdl_keep[8]; /* vc_keep_model_forward: kept until the base model's forward returns (the head's start) */
    int nmdl_keep;
    int32_t blk_keep[16], blk_keep_at[16]; /* vc_keep_through_block: kept until instance blk_keep_at[i] returns */
    /* vc_kv_share_set: the keys and values a layer stores for later layers of its type (Gemma 4's
     * shared_kv_states, layers/llm.c), per type: k, v, their sequence length, [B, S, heads, D] storage */
    struct { int32_t k, v; int64_t S; bool blhd; } kv_share[2];
    /* ... and under training the tensors stored (k, v of each type, in order; autograd.c kvd_*): with
     * checkpointed layers the dict outlives the forward. kvd_fwd: their forward storages the dict holds;
     * kvd_hold: the recomputed storages it holds (the stored ones, their recomputed graph's saved ones);
     * kvd_death: the region whose backward's end drops the dict, -1 none */
    int32_t kvd_t[4], kvd_fwd[4];
    int nkvd;
    int32_t *kvd_hold;
    size_t nkvd_hold, ckvd_hold;
    int32_t kvd_death;
    int nblk_keep;
    /* a pipeline stage (m->stage, src/parallel/pipeline.c): the storages the other
     * micro-batches in flight keep, with the references each holds; the
     * first npp_first are the first micro-batch's */
    int32_t *pp_held, *pp_refs, *pp_chunk, *pp_copy; /* each: its model chunk, its copy (0: the first run's) */
    int64_t *pp_live;                                /* per chunk: copies held now, made; the extras' (pipeline.c) */
    int32_t pp_like;                                 /* the storage the schedule's p2p-shaped extras copy, -1 */
    size_t npp, npp_first;
    vc_compile *cmp; /* --compile: NULL without */
};

struct vc_op {
    vc_build *b;
    int32_t idx;
    struct vc_op *next; /* in b->op_pool, once ended */
};


#define GROW(arr, n, cap, b)                                                       \
    do {                                                                           \
        if ((n) == (cap)) {                                                        \
            size_t nc_ = (cap) ? (cap) * 2 : 64;                                   \
            void *np_ = realloc((arr), nc_ * sizeof *(arr));                       \
            if (!np_) { (b)->st = VC_ERR_NOMEM; break; }                           \
            (arr) = np_;                                                           \
            (cap) = nc_;                                                           \
        }                                                                          \
    } while (0)

static inline item_t *op_items(vc_build *b, int32_t k) { return &b->it[b->op[k].it0]; }

/* graph.c */
int32_t vc__new_tensor(vc_build *b, vc_numel n, vc_dtype dt);
/* Bytes of merged transient c at `batch` (a multiple of 512). */
int64_t vc__comp_bytes(const vc_build *b, int32_t c, int64_t batch);
/* Bytes of storage s at `batch` (vc_bytes, or the merged transient's): -1 past 2^63. */
int64_t vc__stor_bytes(const vc_build *b, int32_t s, int64_t batch);
/* Keeps t's Python reference until the last op recorded so far. */
void vc__extend_life(vc_build *b, vc_t t);
/* loss.c: the loss after the model's output (train), its row of the loss table; and the
 * instances the model's forward runs before it (all but a fused loss's LM head). */
void vc__emit_loss(vc_build *b);
size_t vc__loss_forward_end(const vc_build *b);

/* plan.c: records instances i0 .. i1 - 1 of b->m (their emit functions), as a forward runs them. */
void vc__emit_instances(vc_build *b, size_t i0, size_t i1);
/* plan.c: the model's forward returns: its vc_forward_local tensor is let go. */
void vc__end_forward(vc_build *b);
/* plan.c: the base model's forward (LlamaModel.forward and the like) returns before the head
 * (*ForCausalLM.forward's lm_head): its vc_keep_model_forward tensors are let go. */
void vc__end_model_forward(vc_build *b);
/* plan.c: the instance of m's LM head (the last Linear, a Cast before it included; generate.c's
 * logits_to_keep split), from which the *ForCausalLM part of the forward runs. */
size_t vc__head_inst(const vc_model *m);
/* --loss dpo: TRL's reference forward of the whole model under torch.no_grad() (plan.c):
 * with `copy`, a frozen copy of the weights (ref_t), else the model's own with PEFT's
 * adapters disabled; returns its output (the reference logits), -1 after an error. */
vc_t vc__emit_reference(vc_build *b, bool copy);
/* plan.c: the reference forward's scope, shared by vc__emit_reference (DPO, KTO) and grpo.c's
 * reference_logps. enter: the policy's tensors (val_t, par_t, buf_t) saved, with `copy` the frozen
 * copy's tensors made (or, made already, reused) and put in par_t/buf_t, then no_grad (b->train off),
 * no checkpoint regions, the adapters off without `copy`; -1 after an error (b->st set, nothing
 * to leave). leave: all of it put back. */
typedef struct {
    int32_t *save;
    bool train;
} vc_ref_scope;
int vc__reference_enter(vc_build *b, bool copy, vc_ref_scope *sc);
void vc__reference_leave(vc_build *b, vc_ref_scope *sc);
/* grpo.c: --loss grpo's row (the reference's and the policy's forwards in the step's order, the
 * loss); loss.c: DPO's [.., :-1, :] view, selective_log_softmax and entropy_from_logits for it. */
void vc__grpo_emit(vc_build *b);
vc_t vc__trl_shift(vc_build *b, vc_t y, int64_t L, int64_t V);
vc_t vc__trl_logps(vc_build *b, vc_t s, int64_t L, int64_t V);
void vc__trl_entropy(vc_build *b, vc_t s, int64_t L, int64_t V, vc_dtype dt);

/* generate.c: --mode generate. vc__gen_begin loads the two models a generation
 * runs (the prompt's length, one token) before the plan's tensors are made;
 * vc__gen_emit records the prefill, the decoding loop's own ops and the last
 * decoding step; vc__gen_end frees what begin made. */
vc_status vc__gen_begin(vc_build *b, vc_error *err);
/* --serve (serve.c): a plan of vLLM's profiling run over `tokens` tokens with
 * `rows` sampled rows, built like a generation's prefill. */
vc_status vc__plan_build_profile(const vc_model *m, const vc_options *o, int64_t tokens, int64_t rows, vc_plan **out,
                                 vc_error *err);
/* serve.c: the config vLLM reads the language model's keys from (get_hf_text_config): root's text_config when it
 * is an object, else root */
struct cJSON;
const struct cJSON *vc__vllm_text_config(const struct cJSON *root);
/* serve.c, for a model served from its config alone (serve_dsv4.c): vLLM's derived max_model_len of a config's root
 * (0: none; *key the config key it came from, *scaled when a rope factor multiplied it); vc_serve's option checks and
 * batch defaults into r; and, with r's weights and profile_peak set, the pool (requested, snapshot, non-torch increase,
 * CUDA graphs: their 1 MiB-a-graph floor, not estimated, kv_cache) for activations of act and a model of width hidden */
double vc__vllm_max_model_len_cfg(const struct cJSON *root, const char **key, bool *scaled);
vc_status vc__serve_begin(const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu, vc_serve_result *r,
                          vc_error *err);
vc_status vc__serve_pool(vc_dtype act, const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu,
                         unsigned uses, int64_t hidden, vc_serve_result *r, vc_error *err);
/* --serve (serve_mm.c): a multimodal model's encoder profiling: r's mm_ fields from its config, the GPU and
 * the activations' dtype; r->max_num_batched_tokens and max_num_seqs set */
vc_status vc__serve_mm(const vc_model *m, const vc_options *o, const vc_gpu_spec *gpu, vc_dtype act, vc_serve_result *r,
                       vc_error *err);
/* --serve (serve_graphs.c): the same forward over `tokens` tokens a sequence, without the LM head and
 * the sampler: what vLLM's CUDA graph capture runs (the model's forward, hidden states out) */
vc_status vc__plan_build_capture(const vc_model *m, const vc_options *o, int64_t tokens, vc_plan **out, vc_error *err);
/* serve_graphs.c: r's graphs_activations, graphs_workspace and graphs_estimate, vLLM's CUDA graph
 * memory estimate, from r's graph counts and sizes (serve.c vllm_graphs) */
vc_status vc__serve_graphs_estimate(const vc_model *m, const vc_options *o, vc_serve_result *r, vc_error *err);
void vc__gen_emit(vc_build *b);
/* kvquant.c: --cache quantized, QuantizedCache's quanto layers. vc__kvq_update is
 * the cache-format row's update (generate.c), vc__kvq_grow brings a slot to its
 * state before decoding step `step`, vc__kvq_cycle is the steps between two
 * requantizations, max(residual_length, 2). */
bool vc__kvq_update(vc_build *b, vc_kv_slot *s, vc_t *k, vc_t *v, int64_t *S, int64_t kpt, int64_t vpt, vc_dtype dt);
void vc__kvq_grow(vc_build *b, vc_kv_slot *s, int64_t step);
int64_t vc__kvq_cycle(const vc_options *o);
void vc__gen_end(vc_build *b);
/* The model whose input shapes the plan's input tensors take. */
const vc_model *vc__gen_input_model(const vc_build *b);

/* plan.c: a plan under a given parallel layout (vc_plan_build: the options' layout). */
vc_status vc__plan_build_layout(const vc_model *m, const vc_options *o, const vc_layout_row *layout, vc_plan **out,
                                vc_error *err);

/* autograd.c: a storage of n elements of dt in category cat (a vc_cat),
 * attributed to instance inst (-1 none), and dropping a reference to one;
 * for layout hooks. */
int32_t vc__alloc(vc_build *b, vc_numel n, vc_dtype dt, int cat, int32_t inst);
void vc__free(vc_build *b, int32_t s, int32_t inst);
void vc__ref(vc_build *b, int32_t s);
/* autograd.c: the layout's hook around the whole model (instance -1) */
void vc__model_hook(vc_build *b, bool begin);
/* state.c: the persistent state in steady state; the optimizer step and zero_grad */
void vc__persistent(vc_build *b);
void vc__optimizer_step(vc_build *b);
void vc__step_in_backward(vc_build *b, size_t p);

/* What the layout files share (each layout's own hooks are static in its file,
 * reached through its descriptor: policy.h vc_layout_desc, layout.c's registry).
 * layout.c: false (and b->st set, naming opt) when a parameter is quantized or fp32-pinned */
bool vc__layout_dense_only(vc_build *b, const char *opt, const char *what);
/* layout_fsdp1.c: the FSDP units (unit_of per instance, 0 the root's) and their count;
 * fsdp2 wraps the same units */
int32_t vc__fsdp_units(const vc_model *m, int32_t *unit_of, bool span);
/* layout_fsdp1.c: --loss grpo --use-vllm, the largest FSDP1 unit's unsharded flat parameter (TRL's
 * _sync_fsdp1_params_to_vllm, one unit summoned at a time), bytes; -1 on overflow or no memory */
int64_t vc__fsdp1_unit_max_bytes(const vc_model *m, const vc_options *o);
/* layout_fsdp2.c: --loss grpo --use-vllm, the largest parameter's full_tensor() (TRL's _sync_fsdp2_params_to_vllm,
 * one parameter at a time), bytes; -1 on overflow */
int64_t vc__fsdp2_param_max_bytes(const vc_model *m, const vc_options *o);
/* layout_zero3.c: --loss grpo, deepspeed.zero.GatheredParameters' gathered copies of the non-persistent
 * parameters, all of them (all) or the largest one, bytes; -1 on overflow */
int64_t vc__zero3_gather_bytes(const vc_model *m, const vc_options *o, bool all);
/* layout_fsdp1.c: --fsdp-param-dtype, --fsdp-reduce-dtype and --fsdp-use-orig-params
 * under FSDP1 (from vc__fsdp_mp_check) */
vc_status vc__fsdp1_mp_check(const vc_options *o, vc_error *err);
/* layout_fsdp2.c: the FSDP layouts' compute hook (--fsdp-param-dtype) */
void vc__fsdp_compute(const vc_options *o, vc_dtype *dt);

/* compile.c: --compile's decisions (b->cmp) from the recorded graph; b->st on an error */
int vc__compile_plan(vc_build *b);
void vc__compile_free(vc_compile *c);
/* op k runs inside an inductor kernel that fuses it (its eager transients are not made) */
bool vc__compile_fusible(const vc_build *b, int32_t k);

/* autograd.c: runs the recorded graph (forward, backward, optimizer step) into b->ev */
void vc__execute(vc_build *b);

/* replay.c */
void vc__memo_free(res_memo *M);
/* The allocated-memory pass of one batch: everything in *sim but reserved. */
vc_status vc__replay_allocated(const vc_build *b, int64_t batch, vc_sim *sim, int64_t *inst_act, vc_error *err);
/* The caching allocator model's reserve at `batch`: -1 out of memory, -2 too large. */
/* the allocator model's reserve at `batch`; limit > 0: -3 when it is proven at most limit before the
 * replay's end (alloc.c bounded) */
int64_t vc__replay_reserved(const vc_build *b, int64_t batch, int64_t limit);

#endif
