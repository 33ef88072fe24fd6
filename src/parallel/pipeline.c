/*
 * pipeline.c — pipeline parallelism (--pp, --micro-batches, --pp-virtual;
 * docs/parallel.md 1.8 and 2.6): Megatron-LM's 1F1B schedule and its
 * interleaved one (their tables: pipeline_sched.c; the engine's part:
 * pipeline_hold.c). The
 * model is split into stages; each stage is a model of its own (the
 * instances it runs, the parameters they use) estimated with the engine as
 * any model is, with three differences the engine reads from m->stage: a
 * stage other than the first receives its inputs per micro-batch, a stage
 * other than the last has no loss (its backward starts from the gradient
 * the next stage sends), and a stage keeps the activations of the
 * micro-batches its schedule has in flight (vc__pp_hold). The report is per
 * GPU: the busiest stage, and a line per rank kind (first, middle, last).
 *
 * Sources (MEG in docs/parallel.md: NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553):
 *  - megatron/core/pipeline_parallel/schedules.py,
 *    forward_backward_pipelining_without_interleaving: num_warmup_microbatches =
 *    min(pp - rank - 1, num_microbatches) forwards, then 1F1B pairs (a forward,
 *    then the backward of the oldest micro-batch), then the cooldown backwards;
 *    input_tensors / output_tensors keep each forwarded micro-batch until its
 *    backward. So stage r has min(pp - r, M) micro-batches forwarded and not
 *    backwarded at the start of a steady-state backward.
 *  - the same file, deallocate_output_tensor (config.deallocate_pipeline_outputs,
 *    set True by megatron/training/argument_utils.py core_transformer_config_from_args):
 *    a stage's output is sent, then its storage replaced by a one-element tensor;
 *    only its grad_fn stays. So the output is not kept for the backward.
 *  - megatron/core/pipeline_parallel/p2p_communication.py, _communicate: each
 *    receive is a new torch.empty of the activation's shape (requires_grad=True
 *    for a forward receive); the received gradient is the backward's
 *    grad_tensors (backward_step: torch.autograd.backward(output_tensor,
 *    grad_tensors=output_tensor_grad)).
 *  - megatron/core/transformer/transformer_block.py, get_num_layers_to_build:
 *    num_layers // pp decoder layers per stage (asserted divisible), or, with
 *    num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage,
 *    the given counts on the first and last stage and the rest spread evenly
 *    over the middle ones (asserted divisible). The embedding is built on the
 *    first stage (pre_process), the final norm, output layer and loss on the
 *    last (post_process); with shared embeddings the last stage keeps its own
 *    copy of the word embedding as the output weight
 *    (LanguageModule.setup_embeddings_and_output_layer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "plan.h"
#include "util.h"

/* ---- the split. A model's layers for the split are its blocks: each copy
 * of a repeated top-level entry and each other top-level Sequential (a
 * config.json's decoder layers); what comes before the first block joins
 * the first stage (the embedding), what comes after a block joins that
 * block's stage (the final norm and the head join the last). A model with no
 * top-level Sequential splits over its top-level layers. */
static void path_key(const char *path, long *top, long *copy, bool *block)
{
    const char *s = path ? strchr(path, '[') : NULL;
    char *e;
    *top = *copy = -1;
    *block = path && strchr(path, '.');
    if (!s) return;
    *top = strtol(s + 1, &e, 10);
    if (e[0] == ']' && e[1] == '[') *copy = strtol(e + 2, &e, 10);
    *block |= *copy >= 0; /* a copy of a repeated layer */
}

/* The instance where each unit starts (start[0] = 0: the prefix joins the
 * first); returns the count. */
static size_t split_units(const vc_model *m, size_t *start)
{
    bool blocks = false;
    for (size_t i = 0; i < m->ninst; i++) {
        long t, c;
        bool blk;
        path_key(m->inst[i].path, &t, &c, &blk);
        blocks |= blk;
    }
    size_t n = 0;
    long kt = -2, kc = -2;
    for (size_t i = 0; i < m->ninst; i++) {
        long t, c;
        bool blk;
        path_key(m->inst[i].path, &t, &c, &blk);
        if (blocks && !blk) continue;
        if (t == kt && c == kc) continue;
        start[n++] = i;
        kt = t, kc = c;
    }
    if (n) start[0] = 0;
    return n;
}

vc_status vc__pp_split(size_t units, int64_t pp, int64_t *count, vc_error *err)
{
    if ((int64_t)units < pp)
        return vc_set_error(err, VC_ERR_USAGE, O("pp"), "%lld stages for %zu layers: more stages than layers", (long long)pp, units);
    int64_t l = (int64_t)units, c = l / pp;
    if (l % pp) { /* the middle stages ceil(l / pp) each, the first and the last the rest, halved */
        c = l / pp + 1;
        int64_t rest = l - (pp - 2) * c;
        count[0] = rest / 2;
        count[pp - 1] = rest - rest / 2;
        if (count[0] < 1)
            return vc_set_error(err, VC_ERR_USAGE, O("pp"), "%zu layers do not split into %lld stages (%lld on each middle "
                                "stage leaves %lld for the first and last)", units, (long long)pp, (long long)c, (long long)rest);
        for (int64_t r = 1; r < pp - 1; r++) count[r] = c;
        return VC_OK;
    }
    for (int64_t r = 0; r < pp; r++) count[r] = c;
    return VC_OK;
}

/* The interleaved split (transformer_block.py get_num_layers_to_build: with
 * virtual_pipeline_model_parallel_size, num_layers // pp per rank, asserted
 * divisible, and that // vp_size per model chunk, asserted divisible; no
 * uneven first and last stage here): rank r's chunk c runs virtual stage
 * c x pp + r, k = L / (pp v) blocks from block (c x pp + r) x k. The engine
 * runs rank r as the contiguous stage of the 1F1B split (blocks r x L/pp
 * on, the same prefix on rank 0 and suffix on the last), whose chunk c holds
 * the same number of blocks; so every block there must equal (unit_same) the
 * block its chunk really runs, else the layout is refused. */
static bool unit_same(const vc_model *m, const size_t *ustart, size_t nunits, size_t a, size_t b)
{
    size_t a1 = a + 1 < nunits ? ustart[a + 1] : m->ninst, b1 = b + 1 < nunits ? ustart[b + 1] : m->ninst;
    if (a1 - ustart[a] != b1 - ustart[b]) return false;
    for (size_t i = 0; i < a1 - ustart[a]; i++) {
        const vc_inst *x = &m->inst[ustart[a] + i], *y = &m->inst[ustart[b] + i];
        if (x->kind != y->kind || x->np != y->np || x->nin != y->nin || x->nb != y->nb || (x->ckpt >= 0) != (y->ckpt >= 0) ||
            x->frozen != y->frozen || (x->cfg != y->cfg && (!x->cfg || !y->cfg || memcmp(x->cfg, y->cfg, x->kind->cfg_size))) ||
            !vc_shape_eq(&m->val[x->out].shape, &m->val[y->out].shape) || m->val[x->out].dt != m->val[y->out].dt)
            return false;
        for (int k = 0; k < x->np; k++) {
            const vc_param_entry *p = &m->par[x->params[k]], *q = &m->par[y->params[k]];
            if (p->numel != q->numel || p->trainable != q->trainable || p->fmt != q->fmt || p->flags != q->flags) return false;
        }
    }
    return true;
}

static vc_status interleaved_split(const vc_model *m, const size_t *ustart, size_t nunits, int64_t pp, int64_t v,
                                   int64_t *count, vc_error *err)
{
    int64_t l = (int64_t)nunits;
    if (l % (pp * v))
        return vc_set_error(err, VC_ERR_USAGE, O("pp_virtual"), "%zu layers do not split into %lld stages x %lld model chunks "
                            "(Megatron asserts num_layers divisible by pp, and that quotient by the virtual size)",
                            nunits, (long long)pp, (long long)v);
    int64_t per = l / pp, k = per / v;
    for (int64_t r = 0; r < pp; r++) {
        count[r] = per;
        for (int64_t i = 0; i < per; i++) {
            int64_t runs = ((i / k) * pp + r) * k + i % k, stands = r * per + i;
            if (runs != stands && !unit_same(m, ustart, nunits, (size_t)runs, (size_t)stands))
                return vc_set_error(err, VC_ERR_USAGE, O("pp_virtual"), "rank %lld's chunks run layer %lld where its contiguous "
                                    "stage has layer %lld, and the two differ: not modelled (the layers must repeat)",
                                    (long long)r, (long long)runs, (long long)stands);
        }
    }
    return VC_OK;
}

/* ---- a stage as a model. */

/* Per value: whether autograd would give it a grad_fn in the whole model (a
 * float output of a layer with a trainable parameter or such an input). */
static bool *values_rg(const vc_model *m)
{
    bool *rg = calloc(m->nval + 1, sizeof *rg);
    for (size_t i = 0; rg && i < m->ninst; i++) {
        const vc_inst *in = &m->inst[i];
        bool g = false;
        for (int k = 0; k < in->np; k++) g |= m->par[in->params[k]].trainable;
        for (int k = 0; k < in->nin; k++) g |= rg[in->in[k]];
        rg[in->out] = g && m->val[in->out].dt != VC_DT_I64;
    }
    return rg;
}

typedef struct {
    const vc_model *m;
    vc_model *s;
    int *vmap, *pmap, *bmap;
} stage_build;

static int add_value(stage_build *S, int v, int producer)
{
    if (S->vmap[v] >= 0) return S->vmap[v];
    vc_model *s = S->s;
    s->val[s->nval] = S->m->val[v];
    s->val[s->nval].producer = producer;
    return S->vmap[v] = (int)s->nval++;
}

/* Instance i of the whole model into the stage (its inputs, parameters,
 * buffers and output remapped; the strings and configs shared). A
 * parameter declared on another stage (a tied weight) is the stage's own
 * copy, owned by the first of its instances that uses it. */
static bool add_inst(stage_build *S, size_t i, size_t i0)
{
    const vc_model *m = S->m;
    vc_model *s = S->s;
    vc_inst *d = &s->inst[s->ninst];
    *d = m->inst[i];
    d->in = vc_arena_alloc(s->arena, (size_t)(d->nin + 1) * sizeof *d->in);
    d->params = vc_arena_alloc(s->arena, (size_t)(d->np + 1) * sizeof *d->params);
    d->bufs = vc_arena_alloc(s->arena, (size_t)(d->nb + 1) * sizeof *d->bufs);
    if (!d->in || !d->params || !d->bufs) return false;
    for (int k = 0; k < d->nin; k++) d->in[k] = S->vmap[m->inst[i].in[k]];
    for (int k = 0; k < d->np; k++) {
        int p = m->inst[i].params[k];
        if (S->pmap[p] < 0) {
            vc_param_entry *e = &s->par[s->npar];
            *e = m->par[p];
            e->owner = e->owner >= (int)i0 && e->owner <= (int)i ? e->owner - (int)i0 : (int)s->ninst;
            s->nparams += e->numel;
            if (e->trainable) s->ntrainable += e->numel;
            S->pmap[p] = (int)s->npar++;
        }
        d->params[k] = S->pmap[p];
    }
    for (int k = 0; k < d->nb; k++) {
        int q = m->inst[i].bufs[k];
        if (S->bmap[q] < 0) {
            s->buf[s->nbuf] = m->buf[q];
            S->bmap[q] = (int)s->nbuf++;
        }
        d->bufs[k] = S->bmap[q];
    }
    d->out = add_value(S, m->inst[i].out, (int)s->ninst);
    s->ninst++;
    return true;
}

static vc_status stage_fill(stage_build *S, size_t i0, size_t i1, const bool *vrg)
{
    const vc_model *m = S->m;
    vc_model *s = S->s;
    if (i0 == 0)
        for (int v = 0; v < m->ninputs; v++) add_value(S, v, -1);
    else
        for (size_t i = i0; i < i1; i++)
            for (int k = 0; k < m->inst[i].nin; k++)
                if (m->val[m->inst[i].in[k]].producer < (int)i0) add_value(S, m->inst[i].in[k], -1);
    s->ninputs = (int)s->nval;
    s->stage.input_rg = vc_arena_alloc(s->arena, (size_t)s->ninputs + 1);
    if (!s->stage.input_rg) return VC_ERR_NOMEM;
    for (size_t v = 0; v < m->nval; v++)
        if (S->vmap[v] >= 0 && i0 > 0) s->stage.input_rg[S->vmap[v]] = vrg[v];
    for (size_t i = i0; i < i1; i++)
        if (!add_inst(S, i, i0)) return VC_ERR_NOMEM;
    for (size_t k = 0; k < m->nblk; k++) {
        int v = m->blk_val[k];
        if (m->blk_last[k] < (int)i0 || m->blk_last[k] >= (int)i1 || S->vmap[v] < 0) continue;
        s->blk_val[s->nblk] = S->vmap[v];
        s->blk_last[s->nblk++] = m->blk_last[k] - (int)i0;
    }
    for (size_t k = 0; k < m->nhold; k++) { /* "held_until" holds within the stage */
        int v = m->hold_val[k];
        if (m->hold_last[k] < (int)i0 || m->hold_last[k] >= (int)i1 || S->vmap[v] < 0) continue;
        s->hold_val[s->nhold] = S->vmap[v];
        s->hold_last[s->nhold++] = m->hold_last[k] - (int)i0;
    }
    s->output = S->vmap[m->inst[i1 - 1].out];
    return VC_OK;
}

static vc_status stage_model(const vc_model *m, size_t i0, size_t i1, const bool *vrg, vc_model **out, vc_error *err)
{
    vc_model *s = calloc(1, sizeof *s);
    stage_build S = {m, s, malloc((m->nval + 1) * sizeof(int)), malloc((m->npar + 1) * sizeof(int)),
                     malloc((m->nbuf + 1) * sizeof(int))};
    vc_status st = VC_ERR_NOMEM;
    if (!s || !S.vmap || !S.pmap || !S.bmap) goto done;
    for (size_t v = 0; v < m->nval; v++) S.vmap[v] = -1;
    for (size_t p = 0; p < m->npar; p++) S.pmap[p] = -1;
    for (size_t q = 0; q < m->nbuf; q++) S.bmap[q] = -1;
    s->name = m->name;
    s->file = m->file;
    s->loss = m->loss;
    s->max_positions = m->max_positions;
    s->nregions = m->nregions;
    s->lora = m->lora;
    s->nlora = m->nlora;
    s->quant = m->quant;
    s->has_quant = m->has_quant;
    s->cfg_quant = m->cfg_quant;
    s->hf = m->hf;
    s->tf = m->tf;
    s->hf_part = m->gen_json || m->hf_part; /* made from a config.json's model (vc_peft_input_grads) */
    s->ep = m->ep; /* the split it was built for (vc__model_at) */
    s->tp = m->tp;
    s->sp = m->sp;
    s->arena = vc_arena_new();
    s->inst = malloc((i1 - i0 + 1) * sizeof *s->inst);
    s->val = malloc((m->nval + 1) * sizeof *s->val);
    s->par = malloc((m->npar + 1) * sizeof *s->par);
    s->buf = malloc((m->nbuf + 1) * sizeof *s->buf);
    s->blk_val = malloc((m->nblk + 1) * sizeof *s->blk_val);
    s->blk_last = malloc((m->nblk + 1) * sizeof *s->blk_last);
    s->hold_val = malloc((m->nhold + 1) * sizeof *s->hold_val);
    s->hold_last = malloc((m->nhold + 1) * sizeof *s->hold_last);
    if (!s->arena || !s->inst || !s->val || !s->par || !s->buf || !s->blk_val || !s->blk_last || !s->hold_val || !s->hold_last)
        goto done;
    s->cap_inst = i1 - i0 + 1;
    s->cap_val = m->nval + 1;
    s->cap_par = m->npar + 1;
    s->cap_buf = m->nbuf + 1;
    s->cap_blk = m->nblk + 1;
    s->cap_hold = m->nhold + 1;
    st = stage_fill(&S, i0, i1, vrg);
done:
    free(S.vmap);
    free(S.pmap);
    free(S.bmap);
    if (st) {
        vc_model_free(s);
        return vc_set_error(err, st, NULL, "out of memory");
    }
    *out = s;
    return VC_OK;
}

/* ---- the stages' estimates. */
struct vc_pipeline {
    const vc_model *m;
    vc_options o;
    int64_t pp, micro, v; /* v: model chunks per rank (--pp-virtual), 1 for 1F1B */
    const vc_schedule_row *row;
    vc_model **sm;
    vc_estimator **se;
    size_t *i0;           /* each stage's first instance in m */
};

/* Whether stages a and b run the same layers: the same kinds with the same
 * configuration (the copies of a repeated block share theirs), parameters
 * and inputs (each copy of a repeated block parses its own configuration:
 * compared byte for byte). Such a stage with fewer micro-batches in flight holds a
 * subset of what the other holds at every point of its step (the held
 * micro-batches are the only difference), so it is never the busier one and
 * is not estimated: its per-layer rows are the other's scaled to its
 * micro-batches (each row is in_flight copies of one micro-batch's). */
static bool same_stage(const vc_model *a, const vc_model *b)
{
    if (a->ninst != b->ninst || a->ninputs != b->ninputs || a->npar != b->npar || a->nbuf != b->nbuf) return false;
    for (int v = 0; v < a->ninputs; v++)
        if (!vc_shape_eq(&a->val[v].shape, &b->val[v].shape) || a->val[v].dt != b->val[v].dt ||
            a->stage.input_rg[v] != b->stage.input_rg[v])
            return false;
    for (size_t i = 0; i < a->ninst; i++) {
        const vc_inst *x = &a->inst[i], *y = &b->inst[i];
        if (x->kind != y->kind || x->np != y->np || x->nin != y->nin || x->nb != y->nb ||
            (x->ckpt >= 0) != (y->ckpt >= 0) || x->frozen != y->frozen ||
            (x->cfg != y->cfg && (!x->cfg || !y->cfg || memcmp(x->cfg, y->cfg, x->kind->cfg_size))))
            return false; /* a configuration compared byte for byte: a difference only costs the estimate */
        for (int k = 0; k < x->nin; k++)
            if (x->in[k] != y->in[k]) return false;
    }
    for (size_t q = 0; q < a->npar; q++)
        if (a->par[q].numel != b->par[q].numel || a->par[q].trainable != b->par[q].trainable ||
            a->par[q].fmt != b->par[q].fmt || a->par[q].flags != b->par[q].flags)
            return false;
    return true;
}

void vc__pp_free(vc_pipeline *p)
{
    if (!p) return;
    for (int64_t r = 0; r < p->pp; r++) {
        if (p->se) vc_estimator_free(p->se[r]);
        if (p->sm) vc_model_free(p->sm[r]);
    }
    free(p->se);
    free(p->sm);
    free(p->i0);
    free(p);
}

/* The stage plans' options: one stage, the same data-parallel world. */
static vc_options stage_options(const vc_options *o)
{
    vc_options s = *o;
    s.gpus = o->gpus / o->pp;
    s.pp = 1;
    s.nccl_stages = o->pp; /* NCCL's P2P peers of the stage (src/engine/nccl.c) */
    s.micro_batches = 0;
    s.pp_virtual = 0;
    return s;
}

/* Stage a's NCCL buffers no more than stage b's (across nodes a middle
 * stage's neighbours may lie on its node or on others: src/engine/nccl.c). */
static bool nccl_below(const vc_options *so, int64_t a, int64_t b)
{
    vc_options x = *so;
    vc_nccl_info na, nb;
    x.nccl_stage = a;
    vc_nccl_per_gpu(&x, &na);
    x.nccl_stage = b;
    vc_nccl_per_gpu(&x, &nb);
    return na.bytes <= nb.bytes;
}

/* Whether middle stage r (the same layers as stage 1) is dominated by an earlier middle stage q of the same
 * layers (same_stage: a stage of other layers, under an uneven split, is no bound on r's activations): no more
 * micro-batches in flight, its holds below q's at every backward (vc__pp_below) and its NCCL buffers no
 * more than q's. q need not be estimated itself: each of these relations is an order, so a q dominated in
 * turn passes r on to the stage that dominates it (issue 28: under the interleaved schedule a stage's holds
 * are often below the one before it but not below stage 1's: llama-3.1-405b at pp 14 x 3 virtual, stage 12
 * under stage 11). Scanned from r - 1 down, stage 1 last. The busiest middle stage (fill_ranks: the first of
 * the largest) is then one that is estimated, as before. */
static bool dominated(const vc_pipeline *p, const vc_options *so, int64_t r)
{
    const vc_model *s = p->sm[r];
    for (int64_t q = r - 1; q >= 1; q--) {
        const vc_model *d = p->sm[q];
        if (s->stage.in_flight <= d->stage.in_flight && (q == 1 || same_stage(s, d)) &&
            vc__pp_below(s->stage.hold, d->stage.hold) &&
            nccl_below(so, r + 1, q + 1))
            return true;
    }
    return false;
}

static vc_status build_stages(vc_pipeline *p, unsigned flags, const int64_t *count, const size_t *ustart,
                              size_t nunits, vc_error *err)
{
    const vc_model *m = p->m;
    bool *vrg = values_rg(m);
    if (!vrg) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    vc_options so = stage_options(&p->o);
    size_t u = 0;
    vc_status st = VC_OK;
    for (int64_t r = 0; r < p->pp && !st; r++) {
        size_t i0 = ustart[u], i1 = u + (size_t)count[r] < nunits ? ustart[u + (size_t)count[r]] : m->ninst;
        p->i0[r] = i0;
        if ((st = stage_model(m, i0, i1, vrg, &p->sm[r], err))) break;
        vc_model *s = p->sm[r];
        s->stage.on = true;
        s->stage.last = r == p->pp - 1;
        s->stage.recv = r > 0;
        s->stage.index = r;
        s->stage.blocks = count[r];
        s->stage.micro_batches = p->micro;
        s->stage.nchunks = (int32_t)p->v;
        s->stage.chunk_first = vc_arena_alloc(s->arena, (size_t)p->v * sizeof *s->stage.chunk_first);
        s->stage.hold = vc__pp_schedule(s->arena, p->row, r, p->pp, p->v, p->micro, &s->stage.in_flight);
        if (!s->stage.chunk_first || !s->stage.hold) {
            st = vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
            break;
        }
        for (int64_t c = 0; c < p->v; c++) /* chunk c: the stage's blocks c x count / v on (the prefix joins chunk 0) */
            s->stage.chunk_first[c] = c ? (int32_t)(ustart[u + (size_t)(c * (count[r] / p->v))] - i0) : 0;
        so.nccl_stage = r + 1; /* its neighbours: one for the first and last stage (src/engine/nccl.c) */
        if (r > 1 && r < p->pp - 1 && same_stage(s, p->sm[1]) && dominated(p, &so, r)) {
            u += (size_t)count[r]; /* dominated by an earlier middle stage: not estimated (same_stage) */
            continue;
        }
        st = vc_estimator_new(s, &so, flags, &p->se[r], err);
        u += (size_t)count[r];
    }
    free(vrg);
    return st;
}

vc_status vc__pp_new(const vc_model *m, const vc_options *o, unsigned flags, vc_pipeline **out, vc_error *err)
{
    *out = NULL;
    /* a fused loss replaces the model's LM head (src/engine/loss.c, m->loss_head): which
     * instance that is on the last stage is not carried into the stage models */
    if (vc_loss_row_get(m->loss)->fused)
        return vc_set_error(err, VC_ERR_USAGE, O("loss"), "%s with " O("pp") " is not modelled (the fused loss replaces "
                            "the LM head, on the last stage): use " OV("loss", "hf"), vc_loss_row_get(m->loss)->option);
    vc_pipeline *p = calloc(1, sizeof *p);
    size_t *ustart = malloc((m->ninst + 1) * sizeof *ustart);
    int64_t *count = malloc(((size_t)o->pp + 1) * sizeof *count);
    if (!p || !ustart || !count) {
        free(p); free(ustart); free(count);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    p->m = m;
    p->o = *o;
    p->pp = o->pp;
    p->micro = o->micro_batches ? o->micro_batches : o->pp;
    p->v = o->pp_virtual > 1 ? o->pp_virtual : 1;
    p->row = vc__pp_row(p->v);
    size_t nunits = split_units(m, ustart);
    vc_status st = p->v > 1 ? interleaved_split(m, ustart, nunits, o->pp, p->v, count, err) : vc__pp_split(nunits, o->pp, count, err);
    if (!st) {
        p->sm = calloc((size_t)p->pp, sizeof *p->sm);
        p->se = calloc((size_t)p->pp, sizeof *p->se);
        p->i0 = calloc((size_t)p->pp, sizeof *p->i0);
        st = !p->sm || !p->se || !p->i0 ? vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory")
                                        : build_stages(p, flags, count, ustart, nunits, err);
    }
    free(ustart);
    free(count);
    if (st) {
        vc__pp_free(p);
        return st;
    }
    *out = p;
    return VC_OK;
}

vc_status vc__pp_total(vc_pipeline *p, int64_t batch, int64_t *total, vc_error *err)
{
    *total = 0;
    for (int64_t r = 0; r < p->pp; r++) {
        int64_t t;
        if (!p->se[r]) continue;
        vc_status st = vc_estimator_total(p->se[r], batch, &t, err);
        if (st) return st;
        if (t > *total) *total = t;
    }
    return VC_OK;
}

/* The busier of two stages: the larger total, then the larger allocated peak. */
static bool busier(const vc_result *a, const vc_result *b)
{
    return a->memory.total != b->memory.total ? a->memory.total > b->memory.total
                                              : a->memory.peak_allocated > b->memory.peak_allocated;
}

/* The rank kinds: the first stage, the middle ones (the figures of the
 * busiest), the last. Stage r's ranks are r x world/pp .. (r + 1) x
 * world/pp - 1: the pipeline rank is the outermost of Megatron's rank order
 * (megatron/core/parallel_state.py, initialize_model_parallel, order
 * "tp-cp-ep-dp-pp"). */
static void fill_ranks(const vc_pipeline *p, const vc_result *sr, vc_result *r)
{
    static const char *const kinds[3] = {"first", "middle", "last"};
    int64_t lo[3] = {0, 1, p->pp - 1}, hi[3] = {0, p->pp - 2, p->pp - 1}, per = p->o.gpus / p->pp;
    r->nranks = 0;
    for (int k = 0; k < 3; k++) {
        if (hi[k] < lo[k]) continue;
        int64_t best = lo[k];
        for (int64_t s = lo[k]; s <= hi[k]; s++)
            if (p->se[s] && busier(&sr[s], &sr[best])) best = s;
        vc_rank_info *ri = &r->ranks[r->nranks++];
        snprintf(ri->kind, sizeof ri->kind, "%s", kinds[k]);
        ri->stage_first = lo[k];
        ri->stage_last = hi[k];
        ri->rank_first = lo[k] * per;
        ri->rank_last = (hi[k] + 1) * per - 1;
        ri->stage = best;
        ri->layers = p->sm[best]->stage.blocks;
        ri->in_flight = p->sm[best]->stage.in_flight;
        ri->parameters = sr[best].parameters;
        ri->memory = sr[best].memory;
        ri->peak = sr[best].peak;
    }
}

/* Each instance's row from the stage that runs it. */
static vc_status merge_layers(const vc_pipeline *p, vc_result *sr, vc_result *r, vc_error *err)
{
    if (!sr[0].layers) return VC_OK;
    r->layers = calloc(p->m->ninst + 1, sizeof *r->layers);
    if (!r->layers) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    r->nlayers = p->m->ninst;
    for (int64_t s = 0; s < p->pp; s++) {
        const vc_result *from = p->se[s] ? &sr[s] : &sr[1]; /* a stage not estimated: stage 1's rows, scaled */
        int64_t kf = p->sm[from == &sr[s] ? s : 1]->stage.in_flight, ks = p->sm[s]->stage.in_flight;
        for (size_t i = 0; i < from->nlayers; i++) {
            vc_layer_info *li = &r->layers[p->i0[s] + i];
            const vc_inst *in = &p->m->inst[p->i0[s] + i];
            *li = from->layers[i];
            li->activations = from->layers[i].activations / kf * ks;
            vc_cat3(li->name, sizeof li->name, in->module ? in->module : in->path, "", ""); /* its own name */
        }
    }
    return VC_OK;
}

vc_status vc__pp_run(vc_pipeline *p, int64_t batch, vc_result *r, vc_error *err)
{
    memset(r, 0, sizeof *r);
    vc_result *sr = calloc((size_t)p->pp, sizeof *sr);
    vc_rank_info *ranks = calloc(3, sizeof *ranks);
    if (!sr || !ranks) {
        free(sr); free(ranks);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    vc_status st = VC_OK;
    int64_t busiest = 0;
    for (int64_t s = 0; s < p->pp && !st; s++) {
        if (!p->se[s]) continue;
        st = vc_estimator_run(p->se[s], batch, &sr[s], err);
        if (!st && busier(&sr[s], &sr[busiest])) busiest = s;
    }
    if (!st) {
        *r = sr[busiest];
        r->layers = NULL;
        r->nlayers = 0;
        r->parameters = p->m->nparams;
        r->trainable_parameters = p->m->ntrainable;
        r->ranks = ranks;
        ranks = NULL;
        fill_ranks(p, sr, r);
        st = merge_layers(p, sr, r, err);
    }
    for (int64_t s = 0; s < p->pp; s++) vc_result_free(&sr[s]);
    free(sr);
    free(ranks);
    if (st) vc_result_free(r);
    return st;
}

