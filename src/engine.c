/*
 * engine.c — records the layers' autograd ops, executes them symbolically
 * with storage reference counts, and replays the resulting alloc/free events.
 *
 * Semantics follow PyTorch's eager autograd (see AUTOGRAD.md in the design
 * notes and README "How the estimate works"):
 *  - forward: each op allocates its outputs; a tensor's Python reference is
 *    dropped after its last use; ops keep their saved tensors until their
 *    backward has run;
 *  - backward: ops run in reverse creation order; gradients of inputs are
 *    allocated by the consumer and accumulated at forks; AccumulateGrad
 *    steals a fresh parameter gradient (set_to_none=True);
 *  - checkpoint regions save nothing in forward, keep their inputs, and are
 *    recomputed (up to their last saving op) before their backward;
 *  - the optimizer step allocates its foreach temporaries, then zero_grad
 *    frees every gradient.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "util.h"

enum { IT_IN, IT_OUT, IT_EXTRA, IT_SAVE, IT_FTEMP, IT_BTEMP };
enum { EV_ALLOC, EV_FREE, EV_FWD_END };

typedef struct {
    uint8_t type, dt, how, diff, gview;
    int16_t in;    /* IT_SAVE: condition input (-1 always); IT_IN: grad size set */
    int32_t t;     /* tensor (IT_IN, IT_OUT, IT_SAVE) */
    vc_numel n;    /* IT_EXTRA/TEMP sizes; IT_IN: grad size when `in` is 1 */
} item_t;

typedef struct {
    vc_numel n;
    uint8_t dt;
    bool rg, contig, persistent, held;
    int32_t op;      /* producer op, -1 for leaves */
    int32_t base;    /* tensor whose storage this view shares, -1 none */
    int32_t param;   /* parameter index, -1 */
    int32_t release; /* explicit release point (vc_release), -1 */
    int32_t last;    /* liveness: op after which the reference is dropped */
    int32_t stor, grad;
} tens_t;

typedef struct {
    const char *name;
    int32_t inst, region;
    int32_t it0, nit;
    bool rg, gemm;
    int32_t sv0, nsv; /* saved storages (execution) */
} op_t;

typedef struct {
    vc_numel n;
    uint8_t dt, cat;
    bool gview; /* a gradient that is a view keeping its base (vc_op_grad_view) */
    int32_t inst;
    int32_t refs;
    int32_t ev; /* alloc event index */
} stor_t;

typedef struct {
    int32_t stor;
    uint8_t kind, phase;
    int32_t inst;
    int32_t op; /* op being executed, -1 */
} ev_t;

typedef struct {
    int32_t first, last, last_save;
    int32_t h0, nh;  /* external input tensors held (in rel pool) */
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

struct vc_grid {
    int64_t *cum; /* cum[k]: the model's most reserved over grid batches 0..k */
    size_t n, cap;
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
    int64_t fixed_persistent[CAT__N]; /* batch-independent part of vc_sim.persistent, -1 overflow */
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
     * replay_reserved): this replay's and the last replay's requests */
    struct {
        vc_alloc_event *ev[2];
        size_t n[2];
        int cur;      /* the stream this replay writes; the other is the last one's */
        size_t pre;   /* requests before the first batch-dependent event: written once in both streams */
        int64_t last; /* the last replay's reserve, -1 none */
        vc_alloc_scratch scratch;
    } pool[2];
    bool streams_ready; /* pool[].ev allocated, the prefix written */
    int32_t *evidx;   /* scratch: per storage, its malloc's event index in its pool's stream */
    vc_grid own, *grid; /* the grid values: this plan's own, or an estimator's shared one */
    /* what is live at one peak event, for the breakdown of the next batch
     * that peaks there: the fixed-size part by category, and the live
     * batch-dependent storages grouped by category (pk_dep[pk_off[c] ..
     * pk_off[c + 1])) */
    size_t pk;        /* (size_t)-1: none yet */
    int64_t pk_fixed[CAT__N];
    int32_t *pk_dep;
    int32_t pk_off[CAT__N + 1];
} res_memo;

struct vc_build {
    const vc_model *m;
    vc_options o;
    int64_t batch;
    vc_dtype act_dt, param_dt, amp_dt, state_dt;
    bool train;
    vc_status st;
    bool batch_dep;

    tens_t *t;   size_t nt, ct;
    op_t *op;    size_t nop, cop;
    item_t *it;  size_t nit, cit;
    int32_t *val_t;     /* model value -> tensor */
    int32_t *par_t;     /* parameter -> tensor */
    int32_t *buf_t;     /* buffer -> tensor */
    int32_t *amp_cache; /* parameter -> autocast copy tensor, -1 */
    int cur_inst, cur_region;
    int32_t out_t;

    /* execution */
    stor_t *s;   size_t ns, cs;
    ev_t *ev;    size_t nev, cev;
    int32_t *sv; size_t nsv, csv;     /* saved storages pool */
    int32_t *rel_off, *rel;           /* per-op release lists (forward) */
    int32_t *rrel_off, *rrel;         /* per-op release lists (recompute) */
    region_t *reg; int nreg;
    int32_t *hold; size_t nhold;
    int32_t *pgrad;                   /* parameter -> grad storage (.grad) */
    int32_t *pedges;                  /* parameter -> gradient edges into its AccumulateGrad */
    int32_t *parrived;                /* parameter -> gradients arrived in this backward */
    int32_t *ppending;                /* parameter -> its InputBuffer's gradient, -1 */
    int32_t *fwd_live; size_t nfwd_live; /* ACT storages live at end of forward */
    int32_t loss_t;
    int32_t target_t; /* cross-entropy targets: resident like the input batch, -1 */
    uint8_t phase;
    int32_t cur_op;
    res_memo *memo; /* filled lazily by vc_plan_simulate (the plan is otherwise read-only) */
    char note[192]; /* vc_note: the first attention layer's kernel choice */
};

struct vc_op {
    vc_build *b;
    int32_t idx;
};


/* ---------------------------------------------------------------- helpers */

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

int vc_dtype_size(vc_dtype dt)
{
    switch (dt) {
    case VC_DT_FLOAT: case VC_DT_F32: return 4;
    case VC_DT_F16: case VC_DT_BF16: return 2;
    case VC_DT_I64: return 8;
    case VC_DT_BOOL: case VC_DT_U8: return 1;
    }
    return 4;
}

vc_numel vc_n_sample(int64_t per_sample) { return (vc_numel){per_sample, 0}; }
vc_numel vc_n_fixed(int64_t n) { return (vc_numel){0, n}; }
vc_numel vc_n_scale(vc_numel n, int64_t k)
{
    vc_numel r;
    if (__builtin_mul_overflow(n.ps, k, &r.ps) || __builtin_mul_overflow(n.fx, k, &r.fx))
        return (vc_numel){INT64_MAX, 0};
    return r;
}

int64_t vc_bytes(vc_numel n, vc_dtype dt, int64_t batch)
{
    int64_t e, b;
    if (__builtin_mul_overflow(n.ps, batch, &e) || __builtin_add_overflow(e, n.fx, &e) ||
        __builtin_mul_overflow(e, (int64_t)vc_dtype_size(dt), &b) || b > INT64_MAX - 511)
        return -1;
    if (b == 0) return 0; /* zero-element tensors take no block */
    return (b + 511) / 512 * 512;
}

static vc_dtype resolve(const vc_build *b, vc_dtype dt)
{
    return dt == VC_DT_FLOAT ? b->act_dt : dt;
}

/* ------------------------------------------------------------ builder API */

const vc_options *vc_opts(const vc_build *b) { return &b->o; }
int64_t vc_batch(const vc_build *b) { return b->batch; }
vc_dtype vc_act_dt(const vc_build *b) { return b->act_dt; }
vc_dtype vc_param_dt(const vc_build *b) { return b->param_dt; }
vc_dtype vc_autocast_dt(const vc_build *b) { return b->amp_dt; }
bool vc_training(const vc_build *b) { return b->train; }

static int32_t new_tensor(vc_build *b, vc_numel n, vc_dtype dt)
{
    GROW(b->t, b->nt, b->ct, b);
    if (b->st) return -1;
    tens_t *t = &b->t[b->nt];
    memset(t, 0, sizeof *t);
    t->n = n;
    t->dt = (uint8_t)resolve(b, dt);
    t->contig = true;
    t->op = t->base = t->param = t->release = t->last = -1;
    t->stor = t->grad = -1;
    return (int32_t)b->nt++;
}

static const vc_inst *cur(const vc_build *b) { return &b->m->inst[b->cur_inst]; }

vc_t vc_input(vc_build *b, int i)
{
    const vc_inst *in = cur(b);
    return (i >= 0 && i < in->nin) ? b->val_t[in->in[i]] : -1;
}
const vc_shape *vc_input_shape(const vc_build *b, int i) { return &b->m->val[cur(b)->in[i]].shape; }
const vc_shape *vc_output_shape(const vc_build *b) { return &b->m->val[cur(b)->out].shape; }
bool vc_has_weight(const vc_build *b, int i) { return i >= 0 && i < cur(b)->np; }
vc_t vc_weight(vc_build *b, int i) { return vc_has_weight(b, i) ? b->par_t[cur(b)->params[i]] : -1; }
vc_t vc_buf(vc_build *b, int i) { return (i >= 0 && i < cur(b)->nb) ? b->buf_t[cur(b)->bufs[i]] : -1; }
void vc_set_output(vc_build *b, vc_t t) { b->out_t = t; }

vc_numel vc_numel_of(const vc_build *b, vc_t t) { return t >= 0 ? b->t[t].n : (vc_numel){0, 0}; }
vc_dtype vc_dt_of(const vc_build *b, vc_t t) { return t >= 0 ? (vc_dtype)b->t[t].dt : VC_DT_F32; }
bool vc_requires_grad(const vc_build *b, vc_t t) { return t >= 0 && b->t[t].rg; }
bool vc_contiguous(const vc_build *b, vc_t t) { return t < 0 || b->t[t].contig; }

void vc_hold(vc_build *b, vc_t t)
{
    if (t >= 0) b->t[t].held = true;
}
void vc_release(vc_build *b, vc_t t)
{
    if (t >= 0) b->t[t].release = (int32_t)b->nop - 1;
}

static item_t *add_item(vc_op *o, int type)
{
    vc_build *b = o->b;
    GROW(b->it, b->nit, b->cit, b);
    if (b->st) return NULL;
    item_t *it = &b->it[b->nit++];
    memset(it, 0, sizeof *it);
    it->type = (uint8_t)type;
    it->in = -1;
    it->t = -1;
    b->op[o->idx].nit++;
    return it;
}

static item_t *op_items(vc_build *b, int32_t k) { return &b->it[b->op[k].it0]; }

vc_op *vc_op_begin(vc_build *b, const char *name)
{
    static vc_op dead; /* returned after an allocation failure: all calls no-op */
    if (b->st) { dead.b = b; dead.idx = -1; return &dead; }
    GROW(b->op, b->nop, b->cop, b);
    if (b->st) { dead.b = b; dead.idx = -1; return &dead; }
    op_t *op = &b->op[b->nop];
    memset(op, 0, sizeof *op);
    op->name = name;
    op->inst = b->cur_inst;
    op->region = b->cur_region;
    op->it0 = (int32_t)b->nit;
    vc_op *o = malloc(sizeof *o);
    if (!o) { b->st = VC_ERR_NOMEM; dead.b = b; dead.idx = -1; return &dead; }
    o->b = b;
    o->idx = (int32_t)b->nop++;
    return o;
}

static bool live_op(vc_op *o) { return o->idx >= 0 && !o->b->st; }

static int op_input(vc_op *o, vc_t t, bool diff)
{
    if (!live_op(o) || t < 0) return -1;
    int idx = 0;
    for (int32_t i = 0; i < o->b->op[o->idx].nit; i++)
        if (op_items(o->b, o->idx)[i].type == IT_IN) idx++;
    item_t *it = add_item(o, IT_IN);
    if (!it) return -1;
    it->t = t;
    it->diff = diff;
    it->how = VC_GRAD_NEW;
    if (diff && o->b->t[t].rg && o->b->train) o->b->op[o->idx].rg = true;
    return idx;
}

int vc_op_in(vc_op *o, vc_t t) { return op_input(o, t, true); }
int vc_op_in_nodiff(vc_op *o, vc_t t) { return op_input(o, t, false); }

static item_t *find_in(vc_op *o, int in)
{
    if (!live_op(o)) return NULL;
    item_t *its = op_items(o->b, o->idx);
    int idx = 0;
    for (int32_t i = 0; i < o->b->op[o->idx].nit; i++)
        if (its[i].type == IT_IN && idx++ == in) return &its[i];
    return NULL;
}

void vc_op_grad(vc_op *o, int in, int how)
{
    item_t *it = find_in(o, in);
    if (it) it->how = (uint8_t)how;
}

void vc_op_grad_size(vc_op *o, int in, vc_numel n, vc_dtype dt)
{
    item_t *it = find_in(o, in);
    if (!it) return;
    it->in = 1;
    it->n = n;
    it->dt = (uint8_t)resolve(o->b, dt);
}

void vc_op_grad_view(vc_op *o, int in)
{
    item_t *it = find_in(o, in);
    if (it) it->gview = 1;
}

vc_t vc_op_out(vc_op *o, vc_numel n, vc_dtype dt)
{
    if (!live_op(o)) return -1;
    vc_build *b = o->b;
    int32_t t = new_tensor(b, n, dt);
    item_t *it = add_item(o, IT_OUT);
    if (t < 0 || !it) return -1;
    it->t = t;
    b->t[t].op = o->idx;
    b->t[t].rg = b->op[o->idx].rg;
    return t;
}

vc_t vc_op_out_view(vc_op *o, int in, vc_numel n, bool contiguous)
{
    item_t *src = find_in(o, in);
    if (!src) return -1;
    int32_t base = src->t;
    vc_t t = vc_op_out(o, n, (vc_dtype)o->b->t[base].dt);
    if (t < 0) return -1;
    o->b->t[t].base = base;
    o->b->t[t].contig = contiguous;
    return t;
}

static void sized_item(vc_op *o, int type, vc_numel n, vc_dtype dt)
{
    if (!live_op(o)) return;
    item_t *it = add_item(o, type);
    if (!it) return;
    it->n = n;
    it->dt = (uint8_t)resolve(o->b, dt);
}

void vc_op_extra(vc_op *o, vc_numel n, vc_dtype dt) { sized_item(o, IT_EXTRA, n, dt); }
void vc_op_ftemp(vc_op *o, vc_numel n, vc_dtype dt) { sized_item(o, IT_FTEMP, n, dt); }
void vc_op_btemp(vc_op *o, vc_numel n, vc_dtype dt) { sized_item(o, IT_BTEMP, n, dt); }

void vc_op_save_if(vc_op *o, vc_t t, int in)
{
    if (!live_op(o) || t < 0) return;
    item_t *it = add_item(o, IT_SAVE);
    if (!it) return;
    it->t = t;
    it->in = (int16_t)in;
}
void vc_op_save(vc_op *o, vc_t t) { vc_op_save_if(o, t, -1); }

void vc_op_gemm(vc_op *o)
{
    if (live_op(o)) o->b->op[o->idx].gemm = true;
}

void vc_op_end(vc_op *o)
{
    if (o->idx >= 0) free(o);
}

/* ------------------------------------------------------------- execution */

static int32_t s_alloc(vc_build *b, vc_numel n, uint8_t dt, uint8_t cat, int32_t inst)
{
    GROW(b->s, b->ns, b->cs, b);
    GROW(b->ev, b->nev, b->cev, b);
    if (b->st) return -1;
    stor_t *s = &b->s[b->ns];
    s->n = n;
    s->dt = dt;
    s->cat = cat;
    s->gview = false;
    s->inst = inst;
    s->refs = 1;
    s->ev = (int32_t)b->nev;
    b->ev[b->nev++] = (ev_t){(int32_t)b->ns, EV_ALLOC, b->phase, inst, b->cur_op};
    return (int32_t)b->ns++;
}

static void s_ref(vc_build *b, int32_t s)
{
    if (s >= 0) b->s[s].refs++;
}

static void s_unref(vc_build *b, int32_t s, int32_t inst)
{
    if (s < 0 || --b->s[s].refs > 0) return;
    GROW(b->ev, b->nev, b->cev, b);
    if (b->st) return;
    b->ev[b->nev++] = (ev_t){s, EV_FREE, b->phase, inst, b->cur_op};
}

static void push_saved(vc_build *b, int32_t s)
{
    GROW(b->sv, b->nsv, b->csv, b);
    if (!b->st) b->sv[b->nsv++] = s;
}

static bool in_rg(vc_build *b, int32_t k, int in)
{
    item_t *its = op_items(b, k);
    int idx = 0;
    for (int32_t i = 0; i < b->op[k].nit; i++)
        if (its[i].type == IT_IN && idx++ == in) return its[i].diff && b->t[its[i].t].rg;
    return false;
}

/* What op k saves for backward when it runs with grad: 0 nothing, 1 only
 * its inputs (autograd packs those before the kernel runs), 2 something it
 * produces (an output or an extra: packed after the kernel ran). */
static int op_packs(vc_build *b, int32_t k)
{
    op_t *op = &b->op[k];
    if (!op->rg) return 0;
    item_t *its = op_items(b, k);
    int r = 0;
    for (int32_t i = 0; i < op->nit; i++) {
        const item_t *it = &its[i];
        if (it->type == IT_EXTRA) return 2;
        if (it->type != IT_SAVE || (it->in >= 0 && !in_rg(b, k, it->in))) continue;
        if (b->t[it->t].op == k) return 2;
        r = 1;
    }
    return r;
}

/* Runs op k's forward: outputs, extras, temporaries, saves. */
static void fwd_op(vc_build *b, int32_t k, bool save)
{
    b->cur_op = k;
    op_t *op = &b->op[k];
    item_t *its = op_items(b, k);
    int32_t inst = op->inst;
    bool keep = op->rg && save;
    op->sv0 = (int32_t)b->nsv;
    op->nsv = 0;
    for (int32_t i = 0; i < op->nit; i++) {
        item_t *it = &its[i];
        if (it->type == IT_OUT) {
            tens_t *t = &b->t[it->t];
            if (t->base >= 0) {
                t->stor = b->t[t->base].stor;
                s_ref(b, t->stor);
            } else {
                t->stor = s_alloc(b, t->n, t->dt, it->t == b->loss_t ? CAT_TEMP : CAT_ACT, inst);
            }
        } else if (it->type == IT_EXTRA) {
            push_saved(b, s_alloc(b, it->n, it->dt, CAT_ACT, inst));
            op->nsv++;
        }
    }
    for (int32_t i = 0; i < op->nit; i++) {
        if (its[i].type != IT_FTEMP) continue;
        int32_t s = s_alloc(b, its[i].n, its[i].dt, CAT_TEMP, inst);
        s_unref(b, s, inst);
    }
    if (!keep) { /* no grad_fn (or a checkpointed forward): extras were transient */
        for (int32_t j = 0; j < op->nsv; j++) s_unref(b, b->sv[op->sv0 + j], inst);
        b->nsv -= (size_t)op->nsv;
        op->nsv = 0;
        return;
    }
    for (int32_t i = 0; i < op->nit; i++) {
        item_t *it = &its[i];
        if (it->type != IT_SAVE || (it->in >= 0 && !in_rg(b, k, it->in))) continue;
        int32_t s = b->t[it->t].stor;
        s_ref(b, s);
        push_saved(b, s);
        op->nsv++;
    }
}

static void drop_ref(vc_build *b, int32_t t, int32_t inst)
{
    if (b->t[t].persistent || b->t[t].stor < 0) return;
    s_unref(b, b->t[t].stor, inst);
}

/* Liveness: per-op release lists for the forward (rel) and the checkpoint
 * recompute (rrel: region-local last uses). */
static int build_liveness(vc_build *b)
{
    size_t nop = b->nop, nt = b->nt;
    int32_t *last = malloc(nt * sizeof *last);
    int32_t *rlast = malloc(nt * sizeof *rlast);
    b->rel_off = calloc(nop + 2, sizeof *b->rel_off);
    b->rrel_off = calloc(nop + 2, sizeof *b->rrel_off);
    if (!last || !rlast || !b->rel_off || !b->rrel_off) {
        free(last);
        free(rlast);
        return b->st = VC_ERR_NOMEM;
    }
    /* checkpoint regions */
    b->nreg = b->m->nregions;
    if (b->nreg > 0) {
        b->reg = calloc((size_t)b->nreg, sizeof *b->reg);
        if (!b->reg) { free(last); free(rlast); return b->st = VC_ERR_NOMEM; }
        for (int r = 0; r < b->nreg; r++) b->reg[r].first = b->reg[r].last = b->reg[r].last_save = -1;
        for (size_t k = 0; k < nop; k++) {
            int r = b->op[k].region;
            if (r < 0) continue;
            region_t *R = &b->reg[r];
            if (R->first < 0) R->first = (int32_t)k;
            R->last = (int32_t)k;
            if (op_packs(b, (int32_t)k)) R->last_save = (int32_t)k;
        }
    }
    for (size_t i = 0; i < nt; i++) {
        last[i] = b->t[i].op;
        rlast[i] = b->t[i].op;
    }
    for (size_t k = 0; k < nop; k++) {
        item_t *its = op_items(b, (int32_t)k);
        for (int32_t i = 0; i < b->op[k].nit; i++) {
            if (its[i].type != IT_IN) continue;
            int32_t t = its[i].t;
            if ((int32_t)k > last[t]) last[t] = (int32_t)k;
            int32_t pr = b->t[t].op;
            if (pr >= 0 && b->op[k].region >= 0 && b->op[pr].region == b->op[k].region &&
                (int32_t)k > rlast[t])
                rlast[t] = (int32_t)k;
        }
    }
    int32_t end = (int32_t)nop - 1;
    for (size_t i = 0; i < nt; i++) {
        tens_t *t = &b->t[i];
        /* `loss` is a Python variable alive until loss.backward() returns */
        if (t->persistent || (int32_t)i == b->loss_t) { last[i] = rlast[i] = -1; continue; }
        if (t->release > last[i]) last[i] = t->release;
        if (t->held && t->release < 0) last[i] = end;
        t->last = last[i];
        /* recompute replays a region up to its last saving op: tensors made
         * later are never recomputed, earlier ones are dropped by then */
        int r = t->op >= 0 ? b->op[t->op].region : -1;
        if (r < 0 || t->op > b->reg[r].last_save) rlast[i] = -1;
        else if (rlast[i] > b->reg[r].last_save) rlast[i] = b->reg[r].last_save;
    }
    for (size_t i = 0; i < nt; i++) {
        if (last[i] >= 0) b->rel_off[last[i] + 1]++;
        if (rlast[i] >= 0) b->rrel_off[rlast[i] + 1]++;
    }
    for (size_t k = 0; k < nop; k++) {
        b->rel_off[k + 1] += b->rel_off[k];
        b->rrel_off[k + 1] += b->rrel_off[k];
    }
    b->rel = malloc((b->rel_off[nop] + 1) * sizeof *b->rel);
    b->rrel = malloc((b->rrel_off[nop] + 1) * sizeof *b->rrel);
    int32_t *fill = calloc(nop + 1, sizeof *fill), *rfill = calloc(nop + 1, sizeof *rfill);
    if (!b->rel || !b->rrel || !fill || !rfill) {
        free(last); free(rlast); free(fill); free(rfill);
        return b->st = VC_ERR_NOMEM;
    }
    for (size_t i = 0; i < nt; i++) {
        if (last[i] >= 0) b->rel[b->rel_off[last[i]] + fill[last[i]]++] = (int32_t)i;
        if (rlast[i] >= 0) b->rrel[b->rrel_off[rlast[i]] + rfill[rlast[i]]++] = (int32_t)i;
    }
    free(last); free(rlast); free(fill); free(rfill);

    return 0;
}

/* Region inputs: tensors read inside region r but produced outside it. */
static void hold_region_inputs(vc_build *b, int r)
{
    region_t *R = &b->reg[r];
    R->h0 = (int32_t)b->nhold;
    R->nh = 0;
    for (int32_t k = R->first; k <= R->last; k++) {
        item_t *its = op_items(b, k);
        for (int32_t i = 0; i < b->op[k].nit; i++) {
            if (its[i].type != IT_IN) continue;
            tens_t *t = &b->t[its[i].t];
            if (t->persistent || (t->op >= 0 && b->op[t->op].region == r)) continue;
            bool dup = false;
            for (int32_t j = 0; j < R->nh; j++) dup |= b->hold[R->h0 + j] == t->stor;
            if (dup) continue;
            int32_t *nh = realloc(b->hold, (b->nhold + 1) * sizeof *nh);
            if (!nh) { b->st = VC_ERR_NOMEM; return; }
            b->hold = nh;
            b->hold[b->nhold++] = t->stor;
            s_ref(b, t->stor);
            R->nh++;
        }
    }
}

static void release_list(vc_build *b, const int32_t *off, const int32_t *list, int32_t k)
{
    for (int32_t j = off[k]; j < off[k + 1]; j++) drop_ref(b, list[j], b->op[k].inst);
}

static void forward(vc_build *b)
{
    b->phase = VC_PHASE_FORWARD;
    for (int r = 0; r < b->nreg; r++) b->reg[r].recomputed = false;
    for (int32_t k = 0; k < (int32_t)b->nop && !b->st; k++) {
        int r = b->op[k].region;
        if (r >= 0 && b->reg[r].first == k && b->train) hold_region_inputs(b, r);
        fwd_op(b, k, r < 0);
        release_list(b, b->rel_off, b->rel, k);
    }
}

/* Op k saves (references) its saved inputs but never runs: its outputs are
 * not computed. */
static void save_inputs_only(vc_build *b, int32_t k)
{
    b->cur_op = k;
    op_t *op = &b->op[k];
    item_t *its = op_items(b, k);
    op->sv0 = (int32_t)b->nsv;
    op->nsv = 0;
    for (int32_t i = 0; i < op->nit; i++) {
        item_t *it = &its[i];
        if (it->type == IT_OUT) b->t[it->t].stor = -1;
        if (it->type != IT_SAVE || (it->in >= 0 && !in_rg(b, k, it->in))) continue;
        int32_t st = b->t[it->t].stor;
        s_ref(b, st);
        push_saved(b, st);
        op->nsv++;
    }
}

/* torch.utils.checkpoint (2.x, non-reentrant, early_stop=True): the block
 * is run again until the last tensor its forward saved has been saved again,
 * then stopped (_StopRecomputationError from the pack hook). Autograd packs an
 * op's saved inputs before its kernel runs and its saved outputs after, so
 * when the last saving op saves only inputs, it is stopped before it runs. */
static void recompute(vc_build *b, int r)
{
    region_t *R = &b->reg[r];
    R->recomputed = true;
    for (int32_t k = R->first; k <= R->last_save && !b->st; k++) {
        if (k == R->last_save && op_packs(b, k) == 1) save_inputs_only(b, k);
        else fwd_op(b, k, true);
        release_list(b, b->rrel_off, b->rrel, k);
    }
}

/* AccumulateGrad for parameter p runs once its InputBuffer has every
 * gradient: into an existing .grad (gradient accumulation) it adds in place;
 * otherwise it steals the gradient, or clones one it cannot steal. */
static void accumulate_grad(vc_build *b, size_t p, int32_t inst)
{
    int32_t g = b->ppending[p];
    b->ppending[p] = -1;
    if (g < 0) return;
    const tens_t *t = &b->t[b->par_t[p]];
    int32_t *pg = &b->pgrad[p];
    if (*pg >= 0) {                  /* .grad += new (in place) */
        s_unref(b, g, inst);
    } else if (b->s[g].cat == CAT_GRAD && b->s[g].refs == 1) {
        *pg = g;                     /* stolen */
    } else {                         /* shared or foreign layout: cloned */
        *pg = s_alloc(b, t->n, t->dt, CAT_GRAD, inst);
        s_unref(b, g, inst);
    }
}

static void deliver(vc_build *b, int32_t ti, int32_t g, int32_t inst)
{
    tens_t *t = &b->t[ti];
    if (t->param >= 0) {
        /* the parameter's AccumulateGrad node buffers its incoming gradients
         * (a tied weight gets two); a second one is added in place when the
         * buffer holds the only reference to a plain tensor, else into a new
         * tensor (input_buffer.cpp can_accumulate_inplace: Linear's weight
         * gradient is a view, mm(...).t().t(), that shares its storage) */
        size_t p = (size_t)t->param;
        int32_t *pend = &b->ppending[p];
        if (*pend < 0) {
            *pend = g;
        } else if (b->s[*pend].refs == 1 && !b->s[*pend].gview) {
            s_unref(b, g, inst);
        } else {
            int32_t sum = s_alloc(b, t->n, t->dt, CAT_GRAD, inst);
            s_unref(b, *pend, inst);
            s_unref(b, g, inst);
            *pend = sum;
        }
        if (++b->parrived[p] >= b->pedges[p]) accumulate_grad(b, p, inst);
        return;
    }
    if (t->grad < 0) {
        t->grad = g;
        return;
    }
    int32_t old = t->grad;
    if (b->s[old].refs == 1 && !b->s[old].gview) {
        s_unref(b, g, inst);
    } else if (b->s[g].refs == 1) {
        s_unref(b, old, inst);
        t->grad = g;
    } else {
        t->grad = s_alloc(b, t->n, t->dt, CAT_TEMP, inst);
        s_unref(b, old, inst);
        s_unref(b, g, inst);
    }
}

static void backward(vc_build *b)
{
    b->cur_op = -1;
    b->phase = VC_PHASE_BACKWARD;
    if (b->loss_t < 0) return;
    tens_t *L = &b->t[b->loss_t];
    int32_t loss_stor = L->stor;
    if (!L->rg) { /* nothing to differentiate (everything frozen) */
        s_unref(b, loss_stor, -1);
        return;
    }
    for (size_t p = 0; p < b->m->npar; p++) {
        b->parrived[p] = 0;
        b->ppending[p] = -1;
    }
    /* the root gradient (ones_like(loss)) is held by the graph task throughout */
    int32_t root = L->grad = s_alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1);
    s_ref(b, root);
    int32_t newg[VC_MAX_INPUTS * 4];
    int32_t newt[VC_MAX_INPUTS * 4];
    for (int32_t k = (int32_t)b->nop - 1; k >= 0 && !b->st; k--) {
        op_t *op = &b->op[k];
        if (!op->rg) continue;
        b->cur_op = k;
        item_t *its = op_items(b, k);
        int32_t gin = -1;
        for (int32_t i = 0; i < op->nit; i++)
            if (its[i].type == IT_OUT && b->t[its[i].t].grad >= 0) { gin = b->t[its[i].t].grad; break; }
        if (gin < 0) continue;
        if (op->region >= 0 && !b->reg[op->region].recomputed) {
            recompute(b, op->region);
            b->cur_op = k;
            op = &b->op[k];
            its = op_items(b, k);
        }
        /* The node's backward (apply): new gradients and its transients. */
        int ng = 0, nfull = 0;
        int32_t full[VC_MAX_INPUTS * 4];
        const tens_t *out0 = NULL; /* the op's (first) output: size of a NEW_REDUCE gradient */
        for (int32_t i = 0; i < op->nit && !out0; i++)
            if (its[i].type == IT_OUT) out0 = &b->t[its[i].t];
        for (int32_t i = 0; i < op->nit && ng < (int)(sizeof newg / sizeof *newg); i++) {
            item_t *it = &its[i];
            if (it->type != IT_IN || !it->diff || it->how == VC_GRAD_NONE || it->how == VC_GRAD_REDUCE ||
                !b->t[it->t].rg)
                continue;
            tens_t *t = &b->t[it->t];
            int32_t g;
            if (it->how == VC_GRAD_NEW_REDUCE) {
                if (out0 && nfull < (int)(sizeof full / sizeof *full))
                    full[nfull++] = s_alloc(b, out0->n, out0->dt, CAT_TEMP, op->inst);
                continue;
            }
            if (it->how == VC_GRAD_PASS) {
                g = gin;
                s_ref(b, g);
            } else {
                vc_numel n = it->in == 1 ? it->n : t->n;
                uint8_t dt = it->in == 1 ? it->dt : t->dt;
                g = s_alloc(b, n, dt, t->param >= 0 ? CAT_GRAD : CAT_TEMP, op->inst);
                if (g >= 0) b->s[g].gview = it->gview;
            }
            newg[ng] = g;
            newt[ng++] = it->t;
        }
        for (int32_t i = 0; i < op->nit; i++) {
            if (its[i].type != IT_BTEMP) continue;
            int32_t s = s_alloc(b, its[i].n, its[i].dt, CAT_TEMP, op->inst);
            s_unref(b, s, op->inst);
        }
        /* A checkpointed node's saved tensors are recomputed ones that only
         * its backward holds (2.x checkpoint drops the handle on unpack):
         * they go when apply returns. Other nodes release theirs after the
         * engine's validate_outputs (Engine::evaluate_function). */
        bool early_release = op->region >= 0;
        if (early_release) {
            for (int32_t j = 0; j < op->nsv; j++) s_unref(b, b->sv[op->sv0 + j], op->inst);
            op->nsv = 0;
        }
        /* validate_outputs: sum_to of gradients for broadcast inputs */
        for (int32_t i = 0; i < op->nit && ng < (int)(sizeof newg / sizeof *newg); i++) {
            item_t *it = &its[i];
            if (it->type != IT_IN || !it->diff || (it->how != VC_GRAD_REDUCE && it->how != VC_GRAD_NEW_REDUCE) ||
                !b->t[it->t].rg)
                continue;
            tens_t *t = &b->t[it->t];
            vc_numel n = it->in == 1 ? it->n : t->n;
            uint8_t dt = it->in == 1 ? it->dt : t->dt;
            newg[ng] = s_alloc(b, n, dt, t->param >= 0 ? CAT_GRAD : CAT_TEMP, op->inst);
            newt[ng++] = it->t;
        }
        for (int j = 0; j < nfull; j++) s_unref(b, full[j], op->inst);
        for (int32_t j = 0; j < op->nsv; j++) s_unref(b, b->sv[op->sv0 + j], op->inst);
        op->nsv = 0;
        for (int32_t i = 0; i < op->nit; i++) {
            if (its[i].type != IT_OUT) continue;
            tens_t *t = &b->t[its[i].t];
            if (t->grad >= 0) s_unref(b, t->grad, op->inst);
            t->grad = -1;
        }
        for (int j = 0; j < ng; j++) deliver(b, newt[j], newg[j], op->inst);
        int r = op->region;
        if (r >= 0 && b->reg[r].first == k) {
            for (int32_t j = 0; j < b->reg[r].nh; j++) s_unref(b, b->hold[b->reg[r].h0 + j], op->inst);
            b->reg[r].nh = 0;
        }
    }
    /* AccumulateGrad nodes some of whose gradients never came (their
     * producers got no gradient) run with what they have. */
    for (size_t p = 0; p < b->m->npar; p++) accumulate_grad(b, p, -1);
    /* Nodes that never ran (no gradient reached them) free their saved
     * tensors when the graph is destroyed. */
    for (size_t k = 0; k < b->nop; k++) {
        for (int32_t j = 0; j < b->op[k].nsv; j++) s_unref(b, b->sv[b->op[k].sv0 + j], -1);
        b->op[k].nsv = 0;
    }
    for (int r = 0; r < b->nreg; r++) {
        for (int32_t j = 0; j < b->reg[r].nh; j++) s_unref(b, b->hold[b->reg[r].h0 + j], -1);
        b->reg[r].nh = 0;
    }
    for (size_t i = 0; i < b->nt; i++)
        if (b->t[i].grad >= 0) { s_unref(b, b->t[i].grad, -1); b->t[i].grad = -1; }
    s_unref(b, root, -1);
    s_unref(b, loss_stor, -1);
}

/* Persistent state in steady state: parameters, buffers, master copies,
 * optimizer states, the input batch, and the cuBLAS workspace. */
static void persistent(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_options *o = &b->o;
    bool mixed = o->precision == VC_PREC_MIXED_FP16 || o->precision == VC_PREC_MIXED_BF16;
    bool opt = b->train && o->optim != VC_OPTIM_NONE;
    int nstates = !opt ? 0 : (o->optim == VC_OPTIM_ADAM || o->optim == VC_OPTIM_ADAMW) ? 2
                  : o->optim == VC_OPTIM_MOMENTUM ? 1 : 0;
    for (size_t p = 0; p < m->npar; p++) {
        tens_t *t = &b->t[b->par_t[p]];
        t->stor = s_alloc(b, t->n, t->dt, CAT_WEIGHT, m->par[p].owner);
        if (!m->par[p].trainable) continue;
        if (mixed && b->train) s_alloc(b, t->n, VC_DT_F32, CAT_WEIGHT, m->par[p].owner);
        for (int k = 0; k < nstates; k++) s_alloc(b, t->n, (uint8_t)b->state_dt, CAT_OPT, m->par[p].owner);
        if (opt && o->optim_impl == VC_IMPL_FUSED && nstates == 2)
            s_alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_OPT, m->par[p].owner); /* device step */
    }
    if (b->train && o->precision == VC_PREC_AMP_FP16) { /* GradScaler _scale, _growth_tracker */
        s_alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_OPT, -1);
        s_alloc(b, vc_n_fixed(1), VC_DT_I64, CAT_OPT, -1);
    }
    for (size_t i = 0; i < m->nbuf; i++) {
        tens_t *t = &b->t[b->buf_t[i]];
        t->stor = s_alloc(b, t->n, t->dt, CAT_WEIGHT, -1);
    }
    for (int i = 0; i < m->ninputs; i++) {
        tens_t *t = &b->t[b->val_t[i]];
        t->stor = s_alloc(b, t->n, t->dt, CAT_ACT, -1);
    }
    if (b->target_t >= 0) { /* the targets, made once like the input batch (SPEC §4) */
        tens_t *t = &b->t[b->target_t];
        t->stor = s_alloc(b, t->n, t->dt, CAT_ACT, -1);
    }
    bool gemm = false;
    for (size_t k = 0; k < b->nop; k++) gemm |= b->op[k].gemm;
    int64_t ws = o->workspace >= 0 ? o->workspace
                 : !gemm ? 0 : o->hopper ? 4096 * 8 * 1024 : 4096 * 1024 * 2 + 16 * 1024 * 8;
    if (ws > 0) s_alloc(b, vc_n_fixed(ws), VC_DT_U8, CAT_WS, -1);
}

static void optimizer_step(vc_build *b)
{
    b->cur_op = -1;
    const vc_options *o = &b->o;
    b->phase = VC_PHASE_OPTIMIZER;
    const vc_model *m = b->m;
    if (o->precision == VC_PREC_AMP_FP16) { /* unscale_: found_inf */
        int32_t s = s_alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1);
        s_unref(b, s, -1);
    }
    bool adam = o->optim == VC_OPTIM_ADAM || o->optim == VC_OPTIM_ADAMW;
    if (adam && o->optim_impl != VC_IMPL_FUSED) {
        /* foreach: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs), one tensor
         * per parameter, all alive together; forloop: one at a time. */
        size_t first = b->ns;
        for (size_t p = 0; p < m->npar; p++) {
            if (!m->par[p].trainable) continue;
            int32_t s = s_alloc(b, m->par[p].numel ? vc_n_fixed(m->par[p].numel) : vc_n_fixed(0),
                                (uint8_t)b->state_dt, CAT_TEMP, -1);
            if (o->optim_impl == VC_IMPL_FORLOOP) s_unref(b, s, -1);
        }
        if (o->optim_impl == VC_IMPL_FOREACH)
            for (size_t s = first; s < b->ns; s++) s_unref(b, (int32_t)s, -1);
    }
    b->phase = VC_PHASE_IDLE;
    for (size_t p = 0; p < m->npar; p++) { /* zero_grad(set_to_none=True) */
        if (b->pgrad[p] >= 0) s_unref(b, b->pgrad[p], -1);
        b->pgrad[p] = -1;
    }
}

static void reset_run(vc_build *b)
{
    for (size_t i = 0; i < b->nt; i++) {
        if (!b->t[i].persistent) b->t[i].stor = -1;
        b->t[i].grad = -1;
    }
}

static void mark_fwd_end(vc_build *b)
{
    GROW(b->ev, b->nev, b->cev, b);
    if (b->st) return;
    b->ev[b->nev++] = (ev_t){-1, EV_FWD_END, VC_PHASE_FORWARD, -1, -1};
    /* storages alive now that forward produced, for per-layer activations */
    b->nfwd_live = 0;
    free(b->fwd_live);
    b->fwd_live = malloc((b->ns + 1) * sizeof *b->fwd_live);
    if (!b->fwd_live) { b->st = VC_ERR_NOMEM; return; }
    for (size_t s = 0; s < b->ns; s++)
        if (b->s[s].refs > 0 && b->s[s].cat == CAT_ACT) b->fwd_live[b->nfwd_live++] = (int32_t)s;
}

static void execute(vc_build *b)
{
    b->cur_op = -1;
    size_t np = b->m->npar + 1;
    b->pgrad = malloc(np * sizeof *b->pgrad);
    b->pedges = calloc(np, sizeof *b->pedges);
    b->parrived = calloc(np, sizeof *b->parrived);
    b->ppending = malloc(np * sizeof *b->ppending);
    if (!b->pgrad || !b->pedges || !b->parrived || !b->ppending) { b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p < b->m->npar; p++) b->pgrad[p] = b->ppending[p] = -1;
    /* gradient edges into each parameter's AccumulateGrad */
    for (size_t k = 0; k < b->nop; k++) {
        if (!b->op[k].rg) continue;
        const item_t *its = op_items(b, (int32_t)k);
        for (int32_t i = 0; i < b->op[k].nit; i++) {
            const item_t *it = &its[i];
            if (it->type != IT_IN || !it->diff || it->how == VC_GRAD_NONE) continue;
            const tens_t *t = &b->t[it->t];
            if (t->param >= 0 && t->rg) b->pedges[t->param]++;
        }
    }
    if (build_liveness(b)) return;
    persistent(b);
    int passes = b->train ? (b->o.accumulate > 1 ? 2 : 1) : 1;
    for (int pass = 0; pass < passes && !b->st; pass++) {
        if (pass) reset_run(b);
        forward(b);
        if (pass == 0) mark_fwd_end(b);
        if (b->train) backward(b);
    }
    if (b->train && b->o.optim != VC_OPTIM_NONE) optimizer_step(b);
    else if (b->train) {
        b->phase = VC_PHASE_IDLE;
        for (size_t p = 0; p < b->m->npar; p++)
            if (b->pgrad[p] >= 0) s_unref(b, b->pgrad[p], -1);
    }
}

/* -------------------------------------------------------------- the loss */

static void extend_life(vc_build *b, vc_t t);

static void emit_loss(vc_build *b)
{
    int32_t y = b->val_t[b->m->output];
    const vc_value *ov = &b->m->val[b->m->output];
    b->cur_inst = -1;
    b->cur_region = -1;
    vc_numel n = b->t[y].n;
    if (b->t[y].dt != VC_DT_F32) { /* output.float(): _to_copy, saves nothing */
        vc_op *o = vc_op_begin(b, "_to_copy");
        vc_op_in(o, y);
        y = vc_op_out(o, n, VC_DT_F32);
        vc_op_end(o);
    }
    vc_op *o;
    if (b->m->loss == VC_LOSS_CROSS_ENTROPY && ov->shape.nd >= 1) {
        /* F.cross_entropy(logits, targets): log_softmax over the class dim
         * (saves result), then nll_loss (saves target and total_weight);
         * backward: nll grad zeros + log_softmax grad. The logits are an
         * argument of cross_entropy: alive until nll_loss has returned. The
         * int64 targets are made once, before the steps, and stay resident
         * like the input batch (SPEC §4). */
        int64_t classes = ov->shape.d[ov->shape.nd - 1];
        vc_numel rows = vc_n_sample(classes ? n.ps / classes : 0);
        vc_t tgt = new_tensor(b, rows, VC_DT_I64);
        if (tgt < 0) return;
        b->t[tgt].persistent = true;
        b->target_t = tgt;
        o = vc_op_begin(b, "log_softmax");
        vc_op_in(o, y);
        vc_t lp = vc_op_out(o, n, VC_DT_F32);
        vc_op_save(o, lp);
        vc_op_end(o);
        o = vc_op_begin(b, "nll_loss");
        vc_op_in(o, lp);
        vc_op_in_nodiff(o, tgt);
        vc_t l = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_extra(o, vc_n_fixed(1), VC_DT_F32); /* total_weight */
        vc_op_save(o, tgt);
        vc_op_end(o);
        extend_life(b, y);
        b->loss_t = l;
    } else {
        o = vc_op_begin(b, "mean");
        vc_op_in(o, y);
        b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_end(o);
    }
    if (b->o.precision == VC_PREC_AMP_FP16 && b->train) { /* scaler.scale(loss) */
        o = vc_op_begin(b, "mul");
        vc_op_in(o, b->loss_t);
        b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_end(o);
    }
}

/* ----------------------------------------------------------------- build */

/* Keeps t's Python reference until the last op recorded so far. */
static void extend_life(vc_build *b, vc_t t)
{
    if (t >= 0 && b->nop > 0 && b->t[t].release < (int32_t)b->nop - 1) b->t[t].release = (int32_t)b->nop - 1;
}

static bool is_mixed(vc_precision p) { return p == VC_PREC_MIXED_FP16 || p == VC_PREC_MIXED_BF16; }

vc_status vc_plan_build(const vc_model *m, const vc_options *o, vc_plan **out, vc_error *err)
{
    vc_build *b = calloc(1, sizeof *b);
    if (!b) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    b->m = m;
    b->o = *o;
    b->batch = o->batch;
    b->memo = calloc(1, sizeof *b->memo);
    if (!b->memo) {
        free(b);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    b->memo->grid = &b->memo->own;
    b->train = o->mode == VC_MODE_TRAIN;
    b->loss_t = -1;
    b->target_t = -1;
    switch (o->precision) {
    case VC_PREC_FP16: case VC_PREC_MIXED_FP16: b->act_dt = b->param_dt = VC_DT_F16; break;
    case VC_PREC_BF16: case VC_PREC_MIXED_BF16: b->act_dt = b->param_dt = VC_DT_BF16; break;
    default: b->act_dt = b->param_dt = VC_DT_F32; break;
    }
    b->amp_dt = o->precision == VC_PREC_AMP_FP16 ? VC_DT_F16
                : o->precision == VC_PREC_AMP_BF16 ? VC_DT_BF16 : VC_DT_F32;
    b->state_dt = is_mixed(o->precision) ? VC_DT_F32 : b->param_dt;

    b->val_t = malloc((m->nval + 1) * sizeof *b->val_t);
    b->par_t = malloc((m->npar + 1) * sizeof *b->par_t);
    b->buf_t = malloc((m->nbuf + 1) * sizeof *b->buf_t);
    b->amp_cache = malloc((m->npar + 1) * sizeof *b->amp_cache);
    if (!b->val_t || !b->par_t || !b->buf_t || !b->amp_cache) {
        vc_plan_free((vc_plan *)b);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    for (size_t p = 0; p < m->npar; p++) {
        int32_t t = new_tensor(b, vc_n_fixed(m->par[p].numel), b->param_dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->t[t].param = (int32_t)p;
        b->t[t].rg = m->par[p].trainable && b->train;
        b->par_t[p] = t;
        b->amp_cache[p] = -1;
    }
    for (size_t i = 0; i < m->nbuf; i++) {
        vc_dtype dt = m->buf[i].dt == VC_DT_FLOAT ? b->param_dt : m->buf[i].dt;
        int32_t t = new_tensor(b, vc_n_fixed(m->buf[i].numel), dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->buf_t[i] = t;
    }
    for (int i = 0; i < m->ninputs; i++) {
        int64_t n = vc_shape_numel(&m->val[i].shape);
        int32_t t = new_tensor(b, vc_n_sample(n), m->val[i].dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->val_t[i] = t;
    }
    for (size_t i = 0; i < m->ninst && !b->st; i++) {
        const vc_inst *in = &m->inst[i];
        b->cur_inst = (int)i;
        b->cur_region = in->ckpt;
        b->out_t = -1;
        in->kind->emit(b, in->cfg);
        if (b->out_t < 0 && !b->st) {
            vc_plan_free((vc_plan *)b);
            return vc_set_error(err, VC_ERR_MODEL, in->path, "internal error: %s produced no output",
                                in->kind->name);
        }
        b->val_t[in->out] = b->out_t;
        /* the caller holds a module's inputs until it returns */
        for (int k = 0; k < in->nin; k++) extend_life(b, b->val_t[in->in[k]]);
        for (size_t k = 0; k < m->nblk; k++)
            if (m->blk_last[k] == (int)i) extend_life(b, b->val_t[m->blk_val[k]]);
    }
    /* autocast's weight cache is cleared when the forward's autocast region exits */
    for (size_t p = 0; p < m->npar && !b->st; p++)
        if (b->amp_cache[p] >= 0 && b->t[b->amp_cache[p]].release < 0) b->t[b->amp_cache[p]].release = (int32_t)b->nop - 1;
    if (!b->st && b->train) emit_loss(b); /* infer: model(x) only */
    if (!b->st) execute(b);
    if (b->st) {
        vc_status st = b->st;
        vc_plan_free((vc_plan *)b);
        return vc_set_error(err, st, NULL, "%s", vc_strerror(st));
    }
    *out = (vc_plan *)b;
    return VC_OK;
}

/* The autocast weight cache (ops.c): one cast copy per parameter per forward. */
int32_t *vc__amp_cache(vc_build *b, vc_t w)
{
    return (w >= 0 && b->t[w].param >= 0) ? &b->amp_cache[b->t[w].param] : NULL;
}

void vc_batch_dependent(vc_build *b) { b->batch_dep = true; }

bool vc_plan_batch_dependent(const vc_plan *p) { return ((const vc_build *)p)->batch_dep; }
const char *vc_plan_note(const vc_plan *p) { return ((const vc_build *)p)->note; }
void vc_note(vc_build *b, const char *s)
{
    if (!b->note[0]) snprintf(b->note, sizeof b->note, "%s: %s", cur(b)->path, s);
}

vc_grid *vc_grid_new(void) { return calloc(1, sizeof(vc_grid)); }

void vc_grid_free(vc_grid *g)
{
    if (!g) return;
    free(g->cum);
    free(g);
}

void vc_plan_use_grid(vc_plan *p, vc_grid *g) { ((vc_build *)p)->memo->grid = g ? g : &((vc_build *)p)->memo->own; }

void vc_plan_free(vc_plan *p)
{
    vc_build *b = (vc_build *)p;
    if (!b) return;
    free(b->t); free(b->op); free(b->it); free(b->val_t); free(b->par_t); free(b->buf_t);
    free(b->amp_cache); free(b->s); free(b->ev); free(b->sv); free(b->rel_off); free(b->rel);
    free(b->rrel_off); free(b->rrel); free(b->reg); free(b->hold); free(b->pgrad); free(b->fwd_live);
    free(b->pedges); free(b->parrived); free(b->ppending);
    if (b->memo) {
        res_memo *M = b->memo;
        free(M->a); free(M->c); free(M->cat); free(M->dep); free(M->code); free(M->orig); free(M->fold);
        for (int q = 0; q < 2; q++) {
            vc_alloc_scratch_free(&M->pool[q].scratch);
            free(M->pool[q].ev[0]); free(M->pool[q].ev[1]);
        }
        free(M->sz); free(M->evidx); free(M->own.cum); free(M->pk_dep);
        free(M);
    }
    free(b);
}

/* ------------------------------------------------------------- simulate */

#define VC_MAX_BLOCK (INT64_C(1) << 61)

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
    for (size_t s = 0; s < b->ns; s++) {
        int64_t d = vc_dtype_size((vc_dtype)b->s[s].dt);
        /* the loader keeps element counts under 2^56: no overflow */
        M->a[s] = b->s[s].n.fx * d;
        M->c[s] = b->s[s].n.ps * d;
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
        int64_t v = M->sz[s] = vc_bytes(b->s[s].n, (vc_dtype)b->s[s].dt, 1);
        if ((c == CAT_WEIGHT || c == CAT_OPT || c == CAT_WS) && M->fixed_persistent[c] >= 0 &&
            (v < 0 || __builtin_add_overflow(M->fixed_persistent[c], v, &M->fixed_persistent[c])))
            M->fixed_persistent[c] = -1;
    }
    /* gradients: one per trainable parameter, as AccumulateGrad keeps it (parameters do not depend on the batch) */
    for (size_t q = 0; q < b->m->npar && b->train; q++)
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
    /* the fold: batch-dependent events, each with the fixed-size ones before it */
    M->fold = malloc((n + 1) * sizeof *M->fold);
    if (!M->fold) return -1;
    fold_t f = {INT32_MIN, -1, -1, 0, INT64_MIN, 0, INT64_MIN};
    M->fwd_fold = (size_t)-1;
    for (size_t i = 0; i <= n; i++) {
        if (i == M->fwd_end) {
            M->fwd_fold = M->nfold;
            M->fwd_aoff = f.adelta;
        }
        int32_t c = i < n ? M->code[i] : INT32_MIN, st = c >= 0 ? c : ~c;
        if (c == INT32_MIN || M->c[st] > 0) {
            f.code = c;
            f.pos = (int32_t)i;
            M->fold[M->nfold++] = f;
            f = (fold_t){INT32_MIN, -1, -1, 0, INT64_MIN, 0, INT64_MIN};
            continue;
        }
        int64_t v = M->sz[st];
        bool act = M->cat[st] == CAT_ACT;
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
    M->ready = true;
    return 0;
}

/* Every storage's bytes at `batch` into M->sz: -3 when one passes 2^63
 * (the rest unset), -2 when one passes 2^61. */
static int sizes_at(const vc_build *b, int64_t batch)
{
    res_memo *M = b->memo;
    int64_t *sz = M->sz;
    if (M->amax > VC_MAX_BLOCK || (M->cmax > 0 && batch > (VC_MAX_BLOCK - M->amax) / M->cmax)) {
        int r = 0;
        for (size_t s = 0; s < b->ns; s++) { /* the slow, exact check */
            if ((sz[s] = vc_bytes(b->s[s].n, (vc_dtype)b->s[s].dt, batch)) < 0) return -3;
            if (sz[s] > VC_MAX_BLOCK) r = -2;
        }
        return r;
    }
    for (size_t i = 0; i < M->ndep; i++) { /* the others were sized once, in prepare() */
        int32_t s = M->dep[i];
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
    return 0;
}

static bool same_stream(const vc_alloc_event *a, const vc_alloc_event *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].size != c[i].size || a[i].block != c[i].block) return false;
    return true;
}

/* the requests of events [from, to) into the pools' streams ev[], from j[] on */
static void write_requests(res_memo *M, size_t from, size_t to, vc_alloc_event *const ev[2], size_t j[2])
{
    for (size_t i = from; i < to; i++) {
        int32_t s = M->code[i];
        int64_t v = M->sz[s >= 0 ? s : ~s];
        if (!v) continue; /* zero-element tensors take no block */
        int p = vc_alloc_small(v);
        if (s >= 0) {
            M->evidx[s] = (int32_t)j[p];
            ev[p][j[p]++] = (vc_alloc_event){v, -1};
        } else {
            ev[p][j[p]++] = (vc_alloc_event){v, M->evidx[~s]};
        }
    }
}

/* The caching allocator model's reserved bytes for a replay at `batch`:
 * -1 out of memory, -2 a tensor beyond 2^61 bytes or a reserve beyond 2^63.
 *
 * The two pools never share a block (a request's size picks its pool, and a
 * freed block merges only within its segment), so each is replayed on its
 * own requests, and a pool whose requests are the same as at the last
 * replay is not replayed again: below a model's first activation of 1 MiB
 * the large pool sees only the weights, gradients and optimizer state, and
 * above it the small pool sees only the biases and the like (a 2,000-layer
 * MLP: the large pool is replayed once for the grid batches 1-256). */
static int64_t replay_reserved(const vc_build *b, int64_t batch)
{
    res_memo *M = b->memo;
    if (prepare(b)) return -1;
    if (sizes_at(b, batch)) return -2;
    if (!M->streams_ready) {
        /* the events before the first batch-dependent one are the same at
         * every batch: their requests go into both streams of each pool once
         * (their evidx entries stay: peak_breakdown writes only dependent
         * storages' entries) */
        for (int p = 0; p < 2; p++)
            for (int c = 0; c < 2; c++)
                if (!M->pool[p].ev[c] && !(M->pool[p].ev[c] = malloc((M->ncode + 1) * sizeof *M->pool[p].ev[c])))
                    return -1;
        for (int c = 0; c < 2; c++) {
            size_t j[2] = {0, 0};
            vc_alloc_event *ev[2] = {M->pool[0].ev[c], M->pool[1].ev[c]};
            write_requests(M, 0, M->first_dep, ev, j);
            M->pool[0].pre = j[0];
            M->pool[1].pre = j[1];
        }
        M->streams_ready = true;
    }
    vc_alloc_event *ev[2] = {M->pool[0].ev[M->pool[0].cur], M->pool[1].ev[M->pool[1].cur]};
    size_t j[2] = {M->pool[0].pre, M->pool[1].pre};
    write_requests(M, M->first_dep, M->ncode, ev, j);
    int64_t total = 0;
    for (int p = 0; p < 2; p++) {
        int c = M->pool[p].cur, o = 1 - c;
        size_t pre = M->pool[p].pre;
        int64_t r = M->pool[p].last;
        M->pool[p].n[c] = j[p];
        if (r < 0 || M->pool[p].n[o] != j[p] || !same_stream(M->pool[p].ev[o] + pre, ev[p] + pre, j[p] - pre)) {
            if ((r = vc_alloc_replay(ev[p], j[p], pre, &M->pool[p].scratch)) < 0) return r;
            M->pool[p].last = r;
            M->pool[p].cur = o; /* this stream is now the last one */
        }
        if (__builtin_add_overflow(total, r, &total)) return -2;
    }
    return total;
}

/* `total` must never decrease as the batch grows (SPEC §3), but the caching
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
 * max-batch search replays each grid batch once (memoized in the plan). */
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

/* The allocator model at grid batch g: this plan's replay, or for a
 * batch-dependent plan, the replay of the plan built for g. That plan's
 * sizes and choices are the model's at g; replaying this plan at g instead
 * mixes in sizes fixed for this plan's batch, so the grid values, and the
 * envelope, depended on which batch asked, and `total` could fall: with the
 * math attention, sweeps of 2,048 batches fell at 24 to 100 batches, by up
 * to 6.5% (whisper_base_encoder; BERT 2.9%, ViT-B/16 5.1%). */
static int64_t grid_replay(const vc_build *b, int64_t g)
{
    if (!b->batch_dep || g == b->batch) return replay_reserved(b, g);
    vc_options o = b->o;
    o.batch = g;
    vc_plan *p = NULL;
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_status st = vc_plan_build(b->m, &o, &p, &err);
    if (st) return st == VC_ERR_NOMEM ? -1 : -2;
    int64_t v = replay_reserved((const vc_build *)p, g);
    vc_plan_free(p);
    return v;
}

/* cum[k], replaying grid batches up to k as needed: -1 out of memory, -2 too large */
static int64_t grid_cum(const vc_build *b, size_t k)
{
    vc_grid *G = b->memo->grid;
    if (k >= G->cap) {
        size_t nc = k + 16;
        int64_t *nv = realloc(G->cum, nc * sizeof *nv);
        if (!nv) return -1;
        G->cum = nv;
        G->cap = nc;
    }
    while (G->n <= k) {
        int64_t g = grid_batch(G->n);
        int64_t v = g == INT64_MAX ? -2 : grid_replay(b, g);
        if (v < 0) return v;
        if (G->n && G->cum[G->n - 1] > v) v = G->cum[G->n - 1];
        G->cum[G->n++] = v;
    }
    return G->cum[k];
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
    const vc_build *b = (const vc_build *)p;
    res_memo *M = b->memo;
    memset(sim, 0, sizeof *sim);
    sim->peak_inst = -1;
    if (prepare(b)) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    int big = sizes_at(b, batch);
    if (big == -3)
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "batch %lld makes a tensor larger than 2^63 bytes",
                            (long long)batch);
    const int64_t *sz = M->sz;
    /* one pass over the batch-dependent events (the others folded in) for
     * the peak and the activations, a second up to the peak for its
     * breakdown by category */
    int64_t total = 0, act = 0, act_peak = 0, peak = 0;
    size_t pk = (size_t)-1;
    bool overflow = M->fold_overflow;
    for (size_t k = 0; k < M->nfold && !overflow; k++) {
        const fold_t *f = &M->fold[k];
        if (k == M->fwd_fold && b->train) sim->activations = act + M->fwd_aoff;
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
            if (M->cat[s] == CAT_ACT && (act += v) > act_peak) act_peak = act;
        } else {
            total -= sz[~s];
            if (M->cat[~s] == CAT_ACT) act -= sz[~s];
        }
    }
    sim->peak = peak;
    if (pk != (size_t)-1 && !overflow) {
        if (M->pk != pk && peak_breakdown(b, pk)) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
        for (int c = 0; c < CAT__N; c++) {
            int64_t v = M->pk_fixed[c]; /* the parts are live together at the peak: no overflow */
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
    for (size_t i = 0; i < M->ndep; i++) {
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
    /* the envelope may replay the allocator model (into M->sz): sz is done with */
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

static const char *const cat_names[CAT__N] = {"weight", "grad", "state", "act", "temp", "workspace"};

vc_status vc_plan_trace(const vc_plan *p, int64_t batch, void (*line)(void *, const char *), void *ctx)
{
    const vc_build *b = (const vc_build *)p;
    int64_t total = 0;
    char buf[256];
    for (size_t i = 0; i < b->nev; i++) {
        const ev_t *e = &b->ev[i];
        if (e->kind == EV_FWD_END) {
            line(ctx, "-- end of forward");
            continue;
        }
        const stor_t *s = &b->s[e->stor];
        int64_t v = vc_bytes(s->n, (vc_dtype)s->dt, batch);
        if (v < 0) return VC_ERR_OVERFLOW;
        if (__builtin_add_overflow(total, e->kind == EV_ALLOC ? v : -v, &total)) return VC_ERR_OVERFLOW;
        const char *where = e->inst >= 0 ? b->m->inst[e->inst].path : "-";
        snprintf(buf, sizeof buf, "%-9s %-5s %-9s %12lld %14lld  %s %s", vc_phase_name((vc_phase)e->phase),
                 e->kind == EV_ALLOC ? "alloc" : "free", cat_names[s->cat], (long long)v, (long long)total, where,
                 e->op >= 0 ? b->op[e->op].name : "");
        line(ctx, buf);
    }
    return VC_OK;
}
