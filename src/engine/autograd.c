/*
 * autograd.c — executes the recorded op graph symbolically with storage
 * reference counts: forward (with checkpoint regions) and backward as the
 * autograd engine runs it, between the persistent state and the optimizer
 * step (src/engine/state.c). The result is the plan's batch-independent list of
 * alloc/free events (sizes are per-sample plus fixed element counts).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "plan.h"

/* The event list's bound (VC_MAX_PLAN_EVENTS): past it the build stops. */
static bool events_full(vc_build *b)
{
    if (b->nev < VC_MAX_PLAN_EVENTS) return false;
    if (!b->st) b->st = VC_ERR_LIMIT;
    return true;
}

#define VC_KEPT_MAX 8 /* kept forward transients alive at once in one op */

static int32_t s_alloc(vc_build *b, vc_numel n, uint8_t dt, uint8_t cat, int32_t inst)
{
    if (events_full(b)) return -1;
    GROW(b->s, b->ns, b->cs, b);
    GROW(b->ev, b->nev, b->cev, b);
    if (b->st) return -1;
    stor_t *s = &b->s[b->ns];
    s->n = n;
    s->dt = dt;
    s->cat = cat;
    s->gview = false;
    s->resident = false;
    s->transient = false;
    s->inst = inst;
    s->refs = 1;
    s->ev = (int32_t)b->nev;
    s->comp = -1;
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
    if (events_full(b)) return;
    GROW(b->ev, b->nev, b->cev, b);
    if (b->st) return;
    b->ev[b->nev++] = (ev_t){s, EV_FREE, b->phase, inst, b->cur_op};
}

/* One more reference to s, dropped when backward ends (op_t.leaf) */
static void leaf_keep(vc_build *b, int32_t s)
{
    if (s < 0) return;
    GROW(b->leafkeep, b->nleafkeep, b->cleafkeep, b);
    if (b->st) return;
    s_ref(b, s);
    b->leafkeep[b->nleafkeep++] = s;
}

/* An op's transient allocations of one type (IT_FTEMP, IT_BTEMP), in
 * order: each is freed as soon as it is made, except the held ones (item
 * `in` 1: a quantized weight's dequantized copy, vc_op_weight_temps), which
 * stay until the op's last temporary is made. */
static void run_temps(vc_build *b, const item_t *its, int32_t nit, int type, int32_t inst)
{
    int32_t held[VC_QUANT_MAX];
    int32_t kept[VC_KEPT_MAX][2]; /* item index, storage: vc_op_ftemp_keep until its IT_FFREE */
    int nh = 0, nk = 0;
    for (int32_t i = 0; i < nit; i++) {
        if (type == IT_FTEMP && its[i].type == IT_FFREE) {
            for (int j = 0; j < nk; j++)
                if (kept[j][0] == its[i].t) {
                    s_unref(b, kept[j][1], inst);
                    kept[j][0] = kept[--nk][0];
                    kept[j][1] = kept[nk][1];
                    break;
                }
            continue;
        }
        if (its[i].type != type) continue;
        int32_t s = s_alloc(b, its[i].n, its[i].dt, CAT_TEMP, inst);
        if (s >= 0) b->s[s].comp = its[i].comp; /* a merged transient (vc_op_ftemp_parts) */
        if (its[i].in == 1 && nh < VC_QUANT_MAX) held[nh++] = s;
        else if (its[i].in == 2 && nk < VC_KEPT_MAX) {
            kept[nk][0] = i;
            kept[nk++][1] = s;
        } else s_unref(b, s, inst);
    }
    for (int j = 0; j < nh; j++) s_unref(b, held[j], inst);
    for (int j = 0; j < nk; j++) s_unref(b, kept[j][1], inst);
}

/* Op `op`'s next saved storage: op->nsv counts only the entries written, so a
 * build stopped by an error (b->st set, nothing pushed any more) unwinds only
 * what is there (its saved lists are freed after the error). */
static void push_saved(vc_build *b, op_t *op, int32_t s)
{
    GROW(b->sv, b->nsv, b->csv, b);
    if (b->st) return;
    b->sv[b->nsv++] = s;
    op->nsv++;
}

/* Op k's input number `in`: its tensor. */
static int32_t in_tensor(vc_build *b, int32_t k, int in)
{
    item_t *its = op_items(b, k);
    int idx = 0;
    for (int32_t i = 0; i < b->op[k].nit; i++)
        if (its[i].type == IT_IN && idx++ == in) return its[i].t;
    return -1;
}

/* The storage op k made in forward as input `in`'s gradient (vc_op_extra_grad), -1 none. */
static int32_t saved_grad(vc_build *b, int32_t k, int in)
{
    item_t *its = op_items(b, k);
    int32_t e = 0;
    for (int32_t i = 0; i < b->op[k].nit; i++) {
        if (its[i].type != IT_EXTRA) continue;
        if (its[i].in == in) return e < b->op[k].nsv ? b->sv[b->op[k].sv0 + e] : -1;
        e++;
    }
    return -1;
}

/* Storage s when node op holds it among its saved storages (VC_GRAD_INTO_SAVED), -1 otherwise. */
static int32_t saved_input(vc_build *b, const op_t *op, int32_t s)
{
    for (int32_t j = 0; s >= 0 && j < op->nsv; j++)
        if (b->sv[op->sv0 + j] == s) return s;
    return -1;
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

/* --grad-ckpt-ops applies to region r: one of the model's layers (the loss's checkpoints,
 * loss.c emit_chunked_nll, are plain torch.utils.checkpoint calls) */
static bool sac_region(const vc_build *b, int r) { return b->o.ckpt_ops && r < b->m->nregions; }

/* --grad-ckpt-kind reentrant applies to region r: one of the model's checkpointed layers (the loss's
 * checkpoints, loss.c emit_chunked_nll, pass use_reentrant=False themselves) */
static bool reent(const vc_build *b, int r) { return b->o.ckpt_reentrant && b->train && r >= 0 && r < b->m->nregions; }

/* --grad-ckpt-ops: op k's output storage s kept from forward for its recompute
 * (torch/utils/checkpoint.py _CachingTorchDispatchMode: a MUST_SAVE op's outputs, each
 * detached, appended to storage[func]) */
static void sac_keep(vc_build *b, int32_t k, int32_t s)
{
    GROW(b->sac, b->nsac, b->csac, b);
    if (b->st) return;
    s_ref(b, s);
    if (!b->op[k].nsac) b->op[k].sac0 = (int32_t)b->nsac;
    b->sac[b->nsac++] = s;
    b->op[k].nsac++;
}

/* ... and handed back to the recompute in the same order, the reference moving to
 * the recomputed tensor (_CachedTorchDispatchMode: storage[func].pop(0), the op not run) */
static int32_t sac_take(vc_build *b, int32_t k, int *j)
{
    op_t *op = &b->op[k];
    if (*j >= op->nsac) return -1;
    int32_t s = b->sac[op->sac0 + *j];
    b->sac[op->sac0 + (*j)++] = -1;
    return s;
}

/* The outputs kept for a recompute that never ran go with the graph (the
 * checkpoint frame's storage). */
static void sac_drop(vc_build *b)
{
    for (size_t j = 0; j < b->nsac; j++) s_unref(b, b->sac[j], -1);
    for (size_t k = 0; b->nsac && k < b->nop; k++) b->op[k].nsac = 0;
    b->nsac = 0;
}

/* --act-offload: torchtune's OffloadActivations (torchtune/training/_activation_offloading.py
 * @ bd2a0fc7), a saved_tensors_hooks pair around the model's forward (the recipes'
 * `with self.activations_handling_ctx: outputs = self._model(**batch)`; the loss outside it;
 * get_act_offloading_ctx_manager puts the output head under a NoOpManager).
 *
 * pack_tensor: every saved tensor gets the next id; one on the GPU of at least
 * min_offload_size (1,024) bytes that is not a Parameter or buffer is copied into a pinned
 * CPU tensor (empty_like(pin_memory=True), copy_(non_blocking=True)), and autograd keeps
 * only the id: its GPU storage goes with the forward's own references. use_streams (the
 * default): the copy runs on a second stream and the activation is kept in fwd_stash until
 * a later offloaded pack whose id is max_fwd_stash_size (5) past it (`id <= tensor_id -
 * max_fwd_stash_size`); what is left there at the end of forward goes in backward, after the
 * first node that unpacks, and an id still there is unpacked from it, not from the CPU.
 *
 * unpack: the CPU copy brought back, `.to(device, non_blocking=True)`, a new GPU tensor.
 * Without streams it is the node's until its apply returns; with streams it is kept in
 * bwd_tensor_stash until the hook of the next node that unpacks an offloaded tensor has run
 * (`prev_node_ids`, freed in that node's post hook), the last ones at backward's end
 * (queue_callback). The GPU bytes are derived from this source; the copies' CPU side, the
 * events and the streams' timing are not modelled (the stream's frees are taken at the
 * hooks, where the code waits on the events). The 1,024-byte test is made at this plan's
 * batch, the plan's batch range narrowed to where it holds (vc_batch_range). */
#define OFF_MIN_BYTES 1024
#define OFF_STASH 5

static bool off_streams(const vc_build *b) { return b->o.act_offload == VC_ACT_OFFLOAD_STREAMS; }

/* numel(n) x dts at batch B, saturated at 2^62 */
static int64_t off_bytes(const vc_numel *n, int64_t B, int64_t dts)
{
    const int64_t cap = INT64_C(1) << 62;
    int64_t e;
    if (__builtin_mul_overflow(n->ps, B, &e) || __builtin_add_overflow(e, n->fx, &e)) return cap;
    if (n->div > 1 && __builtin_mul_overflow(e / n->div, (int64_t)(n->mul > 0 ? n->mul : 1), &e)) return cap;
    if (__builtin_mul_overflow(e, dts, &e) || e > cap) return cap;
    return e;
}

/* Whether storage s (of a saved tensor) is big enough to offload at this plan's batch;
 * the plan's batch range narrowed to the batches where the answer is the same (the bytes
 * do not fall as the batch grows). */
static bool off_big(vc_build *b, int32_t s)
{
    const vc_numel *n = &b->s[s].n;
    int64_t d = (int64_t)vc_dtype_size((vc_dtype)b->s[s].dt), B = b->batch;
    bool big = off_bytes(n, B, d) >= OFF_MIN_BYTES;
    if (n->ps == 0) return big;
    int64_t lo = 1, hi = B; /* big: the first batch that is (in [1, B]); else the last that is not */
    if (big) {
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (off_bytes(n, mid, d) >= OFF_MIN_BYTES) hi = mid;
            else lo = mid + 1;
        }
        vc_batch_range(b, lo, VC_BATCH_ANY);
    } else {
        lo = B, hi = INT64_C(1) << 40;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo + 1) / 2;
            if (off_bytes(n, mid, d) < OFF_MIN_BYTES) lo = mid;
            else hi = mid - 1;
        }
        vc_batch_range(b, 1, lo);
    }
    return big;
}

/* A Parameter or a buffer, which pack_tensor never offloads (the model's inputs are
 * offloaded: the batch stays, and a copy is brought back). */
static bool off_kept(const vc_build *b, int32_t t)
{
    if (b->t[t].param >= 0) return true;
    for (size_t i = 0; b->t[t].persistent && i < b->m->nbuf; i++)
        if (b->buf_t[i] == t) return true;
    return false;
}

/* pack_tensor for a tensor op k saves, in storage s: true when it is offloaded (autograd
 * keeps no GPU reference; with streams the stash keeps one). */
static bool off_pack_in(vc_build *b, int32_t s, bool persistent, int32_t inst);
static bool off_pack(vc_build *b, int32_t k, int32_t s, bool persistent)
{
    const op_t *op = &b->op[k];
    if (!b->o.act_offload || s < 0 || k < b->npre || k >= b->loss_op0 || op->region >= 0) return false;
    return off_pack_in(b, s, persistent, op->inst);
}

/* ... the pack itself, in the offload context (instance inst) */
static bool off_pack_in(vc_build *b, int32_t s, bool persistent, int32_t inst)
{
    int32_t id = ++b->pack_id;
    /* (storage 0, the first parameter's, is never offloaded: ~0 would read as none) */
    if (persistent || s == 0 || b->s[s].cat == CAT_GRAD || b->s[s].cat == CAT_WEIGHT || !off_big(b, s)) return false;
    if (off_streams(b)) {
        size_t keep = 0; /* the stash's ids ascend: those at most id - 5 go */
        while (keep < b->nstash && b->stash[2 * keep] <= id - OFF_STASH) keep++;
        for (size_t j = 0; j < keep; j++) s_unref(b, b->stash[2 * j + 1], inst);
        if (keep) memmove(b->stash, b->stash + 2 * keep, (b->nstash - keep) * 2 * sizeof *b->stash);
        b->nstash -= keep;
        if (2 * b->nstash + 2 > b->cstash) {
            size_t nc = b->cstash ? 2 * b->cstash : 64;
            int32_t *ns = realloc(b->stash, nc * sizeof *ns);
            if (!ns) { b->st = VC_ERR_NOMEM; return false; }
            b->stash = ns;
            b->cstash = nc;
        }
        s_ref(b, s);
        b->stash[2 * b->nstash] = id;
        b->stash[2 * b->nstash++ + 1] = s;
    }
    return true;
}

/* The forward stash emptied (in backward, after the first unpacking node; or at its end). */
static void off_stash_clear(vc_build *b, int32_t inst)
{
    for (size_t j = 0; j < b->nstash; j++) s_unref(b, b->stash[2 * j + 1], inst);
    b->nstash = 0;
}

/* Node k's offloaded saved tensors unpacked before its apply: from the forward stash if
 * there, else brought back into a new GPU tensor. Returns whether any was offloaded (the
 * node registers the streams' hook). */
static bool off_unpack(vc_build *b, int32_t k, int32_t *brought, int *nb)
{
    op_t *op = &b->op[k];
    bool any = false;
    *nb = 0;
    for (int32_t j = 0; j < op->nsv; j++) {
        int32_t e = b->sv[op->sv0 + j];
        if (e >= 0 || e == -1) continue;
        int32_t s = ~e;
        any = true;
        bool stashed = false;
        for (size_t i = 0; i < b->nstash && !stashed; i++) stashed = b->stash[2 * i + 1] == s;
        if (stashed) {
            s_ref(b, s);
            b->sv[op->sv0 + j] = s;
            continue;
        }
        int32_t c = s_alloc(b, b->s[s].n, b->s[s].dt, CAT_ACT, op->inst);
        b->sv[op->sv0 + j] = c;
        if (*nb < VC_MAX_INPUTS * 4 - 1) brought[(*nb)++] = c; /* (one slot is the recompute's) */
    }
    return any;
}

/* Runs op k's forward: outputs, extras, temporaries, saves. */
static void fwd_op(vc_build *b, int32_t k, bool save)
{
    b->cur_op = k;
    op_t *op = &b->op[k];
    item_t *its = op_items(b, k);
    int32_t inst = op->inst;
    /* torch/utils/checkpoint.py (2.x) _recomputation_hook's pack_hook: a recomputed tensor whose
     * holder is gone (its node freed: nothing reached from the loss) is not stored. Only the
     * loss's regions (the model's keep their behaviour) */
    bool keep = op->rg && save && !(b->recomputing && op->dead && op->region >= b->m->nregions);
    /* --grad-ckpt-ops: a MUST_SAVE op of a region keeps its outputs in forward and
     * gives them back in the recompute, where it does not run */
    bool caching = op->sac && !save && b->train, cached = op->sac && b->recomputing && op->nsac > 0;
    int taken = 0;
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
                /* --compile: a fused kernel's local takes no storage (compile.c) */
                vc_numel n = b->cmp && b->cmp->fused[it->t] ? vc_n_fixed(0) : t->n;
                t->stor = cached ? sac_take(b, k, &taken) : s_alloc(b, n, t->dt, it->t == b->loss_t ? CAT_TEMP : CAT_ACT, inst);
                if (caching) sac_keep(b, k, t->stor);
            }
        } else if (it->type == IT_EXTRA) {
            /* a parameter's gradient made in forward (vc_op_extra_grad) is a gradient */
            int32_t gt = it->in >= 0 ? in_tensor(b, k, it->in) : -1;
            bool pgrad = gt >= 0 && b->t[gt].param >= 0;
            int32_t s = cached ? sac_take(b, k, &taken) : s_alloc(b, it->n, it->dt, pgrad ? CAT_GRAD : CAT_ACT, inst);
            if (caching) sac_keep(b, k, s);
            push_saved(b, op, s);
        }
    }
    if (cached) op->nsac = 0; /* all given back */
    else if (!vc__compile_fusible(b, k)) run_temps(b, its, op->nit, IT_FTEMP, inst);
    /* a leaf made to require grad inside a checkpointed block (vc_op_leaf_grad: T5Attention's zeros
     * bias under checkpointing, layers/t5.c): the forward's tensor is the one the original graph's
     * AccumulateGrad node holds until backward ends; the recompute's is a new leaf of a graph that
     * never runs backward, saved by nothing, held while that graph lives (build_liveness: to the stop) */
    if (op->leaf && op->region >= 0 && b->train) {
        if (!b->recomputing)
            for (int32_t i = 0; i < op->nit; i++)
                if (its[i].type == IT_OUT) leaf_keep(b, b->t[its[i].t].stor);
        keep = false;
    }
    if (!keep) { /* no grad_fn (or a checkpointed forward): extras were transient */
        for (int32_t j = 0; j < op->nsv; j++) s_unref(b, b->sv[op->sv0 + j], inst);
        b->nsv -= (size_t)op->nsv;
        op->nsv = 0;
        return;
    }
    for (int32_t j = 0; j < op->nsv && b->o.act_offload; j++) { /* --act-offload: the extras packed */
        int32_t s = b->sv[op->sv0 + j];
        if (off_pack(b, k, s, false)) {
            s_unref(b, s, inst);
            b->sv[op->sv0 + j] = ~s;
        }
    }
    if (b->cmp && b->cmp->sv) { /* --compile: the partitioner's saved values for this node (compile.c) */
        for (int32_t j = b->cmp->sv_off[k]; j < b->cmp->sv_off[k + 1]; j++) {
            int32_t t = b->cmp->sv[j];
            if (t < 0 || b->t[t].stor < 0) continue;
            s_ref(b, b->t[t].stor);
            push_saved(b, op, b->t[t].stor);
        }
        return;
    }
    for (int32_t i = 0; i < op->nit; i++) {
        item_t *it = &its[i];
        if (it->type != IT_SAVE || (it->in >= 0 && !in_rg(b, k, it->in))) continue;
        int32_t s = b->t[it->t].stor;
        if (off_pack(b, k, s, off_kept(b, it->t))) { /* --act-offload: only the id is kept */
            push_saved(b, op, ~s);
            continue;
        }
        s_ref(b, s);
        push_saved(b, op, s);
    }
}

static void drop_ref(vc_build *b, int32_t t, int32_t inst)
{
    if (b->t[t].persistent || b->t[t].stor < 0) return;
    s_unref(b, b->t[t].stor, inst);
}

/* --grad-ckpt-ops: torchtitan's op-level selective activation checkpointing, which
 * ops of each region keep their outputs (torchtitan/distributed/activation_checkpoint.py
 * _apply_op_sac @ 1f029641, with torchtitan/models/llama3/parallelize.py's _op_sac_save_list):
 * the policy returns MUST_SAVE for an op in the save list (aten.mm, aten.linear, the
 * _scaled_dot_product_{flash,efficient,cudnn}_attention kernels, aten.max, ...) except
 * every second mm or linear of the region's forward (a counter per checkpoint call,
 * `meta[mm_count_key] % 2 == 0`: the 2nd, 4th, ... recomputed), PREFER_RECOMPUTE for the
 * rest. The ops are those the dispatch mode sees, below autograd: a Linear without a bias
 * is aten.mm, with one (a 3-D contiguous input) aten.addmm, neither saved nor counted;
 * eager or math attention's bmm and softmax are not in the list. Not modelled: the
 * force-recompute list (per_op_sac_force_recompute_mm_shapes_by_fqns: torchtitan's
 * "moe.router.gate" names no module of a Hugging Face model) and the communication ops
 * (no _c10d_functional op in a one-GPU step). Refused without checkpoint regions. */
static int sac_policy(vc_build *b)
{
    static const char *const saved[] = {"_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                                        "_scaled_dot_product_cudnn_attention", "max", NULL};
    int32_t *mm = calloc((size_t)b->nreg + 1, sizeof *mm);
    if (!mm) return b->st = VC_ERR_NOMEM;
    for (size_t k = 0; k < b->nop; k++) {
        op_t *op = &b->op[k];
        if (op->region < 0 || op->region >= b->m->nregions || !op->name) continue; /* the model's layers only */
        if (!strcmp(op->name, "mm")) {
            op->sac = ++mm[op->region] % 2 == 1;
            continue;
        }
        for (int i = 0; saved[i]; i++) op->sac |= !strcmp(op->name, saved[i]);
    }
    free(mm);
    return 0;
}

/* Gemma 4's shared_kv_states under gradient checkpointing (huggingface/transformers
 * modeling_gemma4.py @ 0246b4f3, Gemma4TextModel.forward and Gemma4TextAttention.forward;
 * modeling_layers.py GradientCheckpointingLayer.__call__; torch/utils/checkpoint.py 2.x
 * _checkpoint_without_reentrant_generator): the model passes one dict to every decoder layer, and
 * GradientCheckpointingLayer binds it in the partial it hands to checkpoint(), which keeps the partial
 * (the frame's recompute_fn) until the last node of the layer's region has run its backward. So the
 * dict outlives the forward: it lives until the first checkpointed layer's backward ends
 * (kvd_death). Meanwhile it holds
 *  - the keys and values each storing layer put there in the forward (store_full_length_kv), until
 *    that layer's recompute stores its recomputed ones in their place (kvd_fwd);
 *  - from then on the recomputed ones, which require grad: their recomputed graph (the recompute runs
 *    under enable_grad) keeps every tensor it saved -- the saved-tensor hooks' recomputed, detached
 *    copies (_recomputation_hook's pack_hook returns x.detach()) -- of the ops the keys and values came
 *    from in that layer (k_proj, k_norm, the rotation, v_proj, v_norm, input_layernorm; kvd_hold).
 * Active when the training forward stored keys and values and the model has checkpointed layers
 * (without, the dict goes when the forward returns: layers/llm.c kv_dict_end). */
static bool kvd_on(const vc_build *b) { return b->train && b->nkvd > 0 && b->m->nregions > 0; }

static int kvd_index(const vc_build *b, int32_t t)
{
    for (int i = 0; i < b->nkvd; i++)
        if (b->kvd_t[i] == t) return i;
    return -1;
}

/* the ancestors of the stored tensors inside their layer's region; the region that drops the dict */
static int kvd_setup(vc_build *b)
{
    b->kvd_death = -1;
    if (!kvd_on(b)) return 0;
    if (b->m->stage.on) { /* a stage's micro-batches in flight, each with its own dict: not written */
        b->why_opt = O("pp");
        snprintf(b->why, sizeof b->why, "Gemma 4's shared_kv_states under gradient checkpointing (kept through "
                 "backward) is not modelled on a pipeline stage");
        return b->st = VC_ERR_USAGE;
    }
    for (int r = 0; r < b->m->nregions; r++)
        if (b->reg[r].first >= 0 && (b->kvd_death < 0 || b->reg[r].first < b->reg[b->kvd_death].first)) b->kvd_death = r;
    int32_t *stack = malloc((b->nit + 1) * sizeof *stack); /* each op pushes its inputs once */
    if (!stack) return b->st = VC_ERR_NOMEM;
    for (int i = 0; i < b->nkvd; i++) {
        b->kvd_fwd[i] = -1;
        int32_t p = b->t[b->kvd_t[i]].op, r = p >= 0 ? b->op[p].region : -1, n = 0;
        if (r < 0 || r >= b->m->nregions) continue; /* a layer not checkpointed: the forward's graph */
        stack[n++] = b->kvd_t[i];
        while (n > 0) {
            int32_t q = b->t[stack[--n]].op;
            if (q < 0 || b->op[q].region != r || b->op[q].kvd) continue;
            b->op[q].kvd = true;
            const item_t *its = op_items(b, q);
            for (int32_t j = 0; j < b->op[q].nit && (size_t)n < b->nit; j++)
                if (its[j].type == IT_IN) stack[n++] = its[j].t;
        }
    }
    free(stack);
    return 0;
}

static void kvd_keep(vc_build *b, int32_t s)
{
    if (s < 0) return;
    GROW(b->kvd_hold, b->nkvd_hold, b->ckvd_hold, b);
    if (b->st) return;
    s_ref(b, s);
    b->kvd_hold[b->nkvd_hold++] = s;
}

/* the recompute of op k (kvd): what the recomputed graph saved; a stored tensor takes the place of the
 * forward's in the dict */
static void kvd_recomputed(vc_build *b, int32_t k)
{
    const op_t *op = &b->op[k];
    for (int32_t j = 0; j < op->nsv; j++) kvd_keep(b, b->sv[op->sv0 + j]);
    const item_t *its = op_items(b, k);
    for (int32_t j = 0; j < op->nit; j++) {
        int i = its[j].type == IT_OUT ? kvd_index(b, its[j].t) : -1;
        if (i < 0) continue;
        kvd_keep(b, b->t[its[j].t].stor);
        s_unref(b, b->kvd_fwd[i], op->inst);
        b->kvd_fwd[i] = -1;
    }
}

/* the dict dropped: the last checkpointed partial that bound it is gone */
static void kvd_drop(vc_build *b, int32_t inst)
{
    if (!kvd_on(b)) return;
    for (int i = 0; i < b->nkvd; i++) {
        s_unref(b, b->kvd_fwd[i], inst);
        b->kvd_fwd[i] = -1;
    }
    for (size_t j = 0; j < b->nkvd_hold; j++) s_unref(b, b->kvd_hold[j], inst);
    b->nkvd_hold = 0;
}

/* --grad-ckpt-kind reentrant (torch/utils/checkpoint.py @0008d771a4015b0b43165ea470653b52e92b2148
 * CheckpointFunction): what the modelled variant covers, else VC_ERR_USAGE naming the option.
 *  - The layer's output requires grad only when an input does: CheckpointFunction is an autograd.Function over
 *    the positional tensors (`*args`), not over the parameters, and its forward runs under no_grad; with no
 *    input requiring grad its parameters get no gradient (checkpoint.py warns "None of the inputs have
 *    requires_grad=True. Gradients will be None"), which is why PEFT and transformers hook the input
 *    embeddings (enable_input_require_grads, vc_peft_input_grads). A layer none of whose inputs requires grad
 *    while its parameters train is refused.
 *  - transformers' GradientCheckpointingLayer passes the hidden states positionally and the rest as keywords
 *    bound in a partial (modeling_layers.py): one input requiring grad. A keyword tensor that requires grad (an
 *    encoder-decoder's encoder states, Gemma 4's shared_kv_states, a block's leaf: T5's position bias) would
 *    keep the outer graph inside the recompute (the partial's tensors are not detached): not modelled. */
static int reent_check(vc_build *b)
{
    for (int r = 0; r < b->m->nregions && b->o.ckpt_reentrant && b->train; r++) {
        const region_t *R = &b->reg[r];
        int32_t rg_in[4] = {-1, -1, -1, -1}; /* the distinct tensors requiring grad it takes from outside */
        int nrg = 0;
        bool trains = false, leaf = false;
        for (int32_t k = R->first; k >= 0 && k <= R->last; k++) {
            const item_t *its = op_items(b, k);
            leaf |= b->op[k].region == r && b->op[k].leaf;
            for (int32_t i = 0; i < b->op[k].nit; i++) {
                if (its[i].type != IT_IN) continue;
                const tens_t *t = &b->t[its[i].t];
                trains |= t->param >= 0 && t->rg;
                if (t->persistent || (t->op >= 0 && b->op[t->op].region == r) || !t->rg) continue;
                int32_t id = t->base >= 0 ? t->base : its[i].t; /* a view: its base's tensor */
                bool seen = false;
                for (int j = 0; j < nrg && j < 4; j++) seen |= rg_in[j] == id;
                if (!seen && nrg < 4) rg_in[nrg] = id;
                if (!seen) nrg++;
            }
        }
        /* (b->why holds 200 bytes) */
        const char *why = leaf || b->nkvd > 0 || nrg > 1
                              ? "reentrant: a checkpointed layer takes more than its hidden states requiring grad (encoder "
                                "states, shared_kv_states, a leaf), not modelled; for use_reentrant=False: "
                                OV("grad_ckpt_kind", "non-reentrant")
                          : trains && nrg == 0
                              ? "reentrant: no input of a checkpointed layer requires grad, so its parameters get none "
                                "(\"None of the inputs have requires_grad=True\"); for use_reentrant=False: "
                                OV("grad_ckpt_kind", "non-reentrant")
                              : NULL;
        if (why) {
            b->why_opt = O("grad_ckpt_kind");
            snprintf(b->why, sizeof b->why, "%s", why);
            return b->st = VC_ERR_USAGE;
        }
    }
    return 0;
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
    b->nreg = b->m->nregions + b->nloss_reg; /* the model's, then the loss's (loss.c emit_chunked_nll) */
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
        /* the reentrant CheckpointFunction.backward runs ctx.run_function whole: no early stop */
        for (int r = 0; r < b->nreg; r++)
            b->reg[r].stop = sac_region(b, r) || reent(b, r) ? b->reg[r].last : b->reg[r].last_save;
        if (reent_check(b)) { free(last); free(rlast); return b->st; }
        if (b->o.ckpt_ops && sac_policy(b)) { free(last); free(rlast); return b->st; }
    }
    if (kvd_setup(b)) { free(last); free(rlast); return b->st; }
    if (b->o.ckpt_ops && (b->m->nregions == 0 || b->o.ckpt_ops != 1) && b->train) {
        free(last);
        free(rlast);
        b->why_opt = O("grad_ckpt_ops");
        snprintf(b->why, sizeof b->why, "%s", b->o.ckpt_ops != 1 ? "invalid value"
                 : "the model has no checkpointed layers: add " O("grad_ckpt") " (a config.json) or \"checkpoint\": true");
        return b->st = VC_ERR_USAGE;
    }
    for (size_t i = 0; i < nt; i++) {
        last[i] = b->t[i].op;
        rlast[i] = b->t[i].op;
    }
    for (size_t k = 0; k < nop; k++) {
        item_t *its = op_items(b, (int32_t)k);
        for (int32_t i = 0; i < b->op[k].nit; i++) {
            /* a saved tensor is used by the op that saves it: one it neither
             * takes nor makes (a kind saving an earlier tensor) stays alive
             * until then, as autograd's SavedVariable needs it */
            if (its[i].type != IT_IN && its[i].type != IT_SAVE) continue;
            int32_t t = its[i].t;
            if ((int32_t)k > last[t]) last[t] = (int32_t)k;
            int32_t pr = b->t[t].op;
            if (pr >= 0 && b->op[k].region >= 0 && b->op[pr].region == b->op[k].region &&
                (int32_t)k > rlast[t])
                rlast[t] = (int32_t)k;
        }
    }
    /* --compile: a saved value is held from its op on (compile.c) */
    for (size_t k = 0; b->cmp && b->cmp->sv && k < nop; k++)
        for (int32_t j = b->cmp->sv_off[k]; j < b->cmp->sv_off[k + 1]; j++)
            if (b->cmp->sv[j] >= 0 && (int32_t)k > last[b->cmp->sv[j]]) last[b->cmp->sv[j]] = (int32_t)k;
    int32_t end = (int32_t)nop - 1;
    for (size_t i = 0; i < nt; i++) {
        tens_t *t = &b->t[i];
        /* `loss` is a Python variable alive until loss.backward() returns */
        if (t->persistent || (int32_t)i == b->loss_t || (int32_t)i == b->held_out_t) { last[i] = rlast[i] = -1; continue; }
        if (t->release > last[i]) last[i] = t->release;
        if (t->held && t->release < 0) last[i] = end;
        /* vc_keep_with: alive as long as its owner (an earlier tensor, its life final by now) */
        int32_t wl = t->with >= 0 ? last[t->with] : -1;
        if (wl > last[i]) last[i] = wl;
        if (kvd_on(b) && kvd_index(b, (int32_t)i) >= 0) last[i] = -1; /* the dict's (kvd_fwd, kvd_drop) */
        t->last = last[i];
        /* recompute replays a region up to its last saving op: tensors made
         * later are never recomputed, earlier ones are dropped by then */
        int r = t->op >= 0 ? b->op[t->op].region : -1;
        /* an explicit release (a C++ local, a Python variable) holds in the recompute too */
        if (r >= 0 && t->release > rlast[i] && b->op[t->release].region == r) rlast[i] = t->release;
        /* ... and one inside the region when a later one is outside it: a value the block returns that the
         * blocks after it take (T5Block 0's position biases, src/hf/hf_t5.c), a local of the block's forward
         * until it returns, in the recompute as in the forward */
        if (r >= 0 && t->rrelease > rlast[i]) rlast[i] = t->rrelease;
        if (r >= 0 && wl > rlast[i] && b->op[wl].region == r) rlast[i] = wl;
        /* a leaf made to require grad in the region (fwd_op): the recompute's AccumulateGrad node holds it while
         * the recomputed graph lives, the recompute's outputs (T5Block's position biases) keeping that to its
         * stop */
        if (r >= 0 && b->op[t->op].leaf && b->train) rlast[i] = b->reg[r].stop;
        if (r < 0 || t->op > b->reg[r].stop) rlast[i] = -1;
        else if (reent(b, r) && (last[i] > b->reg[r].last || t->held)) rlast[i] = -1; /* an output: reentrant_hold */
        else if (rlast[i] > b->reg[r].stop) rlast[i] = b->reg[r].stop;
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
    R->off_t = R->off_s = -1;
    bool first = b->o.act_offload != 0 && r < b->m->nregions;
    if (first) b->pack_id++; /* _NoopSaveInputs' dummy: torch.empty((0,)), kept */
    for (int32_t k = R->first; k <= R->last; k++) {
        item_t *its = op_items(b, k);
        for (int32_t i = 0; i < b->op[k].nit; i++) {
            if (its[i].type != IT_IN) continue;
            tens_t *t = &b->t[its[i].t];
            if (t->persistent || (t->op >= 0 && b->op[t->op].region == r)) continue;
            bool dup = false;
            for (int32_t j = 0; j < R->nh; j++) dup |= b->hold[R->h0 + j] == t->stor;
            if (dup || t->stor == R->off_s) continue;
            /* --act-offload: torch.utils.checkpoint's _NoopSaveInputs saves the block's
             * positional tensors under the offload hooks (2.x _checkpoint_without_reentrant_
             * generator: `input_saver = _NoopSaveInputs.apply(dummy, kwargs, *args)` before
             * its own hooks): a Hugging Face decoder layer's hidden states, its first input
             * (GradientCheckpointingLayer passes the rest as keyword arguments, bound in a
             * partial, which the frame keeps) */
            if (first) {
                first = false;
                if (off_pack_in(b, t->stor, off_kept(b, its[i].t), b->op[k].inst)) {
                    R->off_t = its[i].t;
                    R->off_s = t->stor;
                    continue;
                }
            }
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

int32_t vc__alloc(vc_build *b, vc_numel n, vc_dtype dt, int cat, int32_t inst)
{
    return s_alloc(b, n, (uint8_t)dt, (uint8_t)cat, inst);
}
void vc__free(vc_build *b, int32_t s, int32_t inst) { s_unref(b, s, inst); }
void vc__ref(vc_build *b, int32_t s) { s_ref(b, s); }

/* The phase a layout's hooks see: generate()'s passes are forward calls of the model (its forward hooks run in
 * each, under no_grad as with it: --loss grpo's generation under fsdp and fsdp2, src/engine/grpo.c). */
static vc_phase hook_phase(const vc_build *b)
{
    return b->phase == VC_PHASE_PREFILL || b->phase == VC_PHASE_DECODE ? VC_PHASE_FORWARD : (vc_phase)b->phase;
}

/* The layout's module hooks as the running instance changes to `inst`
 * (-1: outside every layer, as at the loss and after the last layer). */
static void module_boundary(vc_build *b, int32_t inst)
{
    if (!b->layout->module || inst == b->hook_inst) return;
    int32_t prev = b->hook_inst;
    b->hook_inst = inst;
    b->cur_op = -1;
    if (prev >= 0) b->layout->module(b, prev, hook_phase(b), false);
    if (inst >= 0) b->layout->module(b, inst, hook_phase(b), true);
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

/* The layout's hook for the whole model (inst -1) as a pass begins or ends. */
void vc__model_hook(vc_build *b, bool begin)
{
    b->cur_op = -1;
    if (b->layout->module) b->layout->module(b, -1, hook_phase(b), begin);
}

/* generate() under a layout: each model call (vc_gen's passes) is a root forward, its root pre-forward hook as it
 * begins and its post-forward as it returns (before _sample's own ops between the calls), at op k. */
static bool gen_passes(const vc_build *b) { return b->gen.on && b->gen.npass > 0 && b->layout->module; }

static void gen_pass_hooks(vc_build *b, int32_t k)
{
    for (int p = 0; p < b->gen.npass; p++)
        if (b->gen.pass_to[p] == k) {
            module_boundary(b, -1);
            vc__model_hook(b, false);
        }
    for (int p = 0; p < b->gen.npass; p++)
        if (b->gen.pass_from[p] == k) vc__model_hook(b, true);
}

static void forward(vc_build *b)
{
    b->phase = b->gen.on ? VC_PHASE_PREFILL : VC_PHASE_FORWARD;
    b->hook_inst = -1;
    b->pack_id = 0; /* --act-offload: a new forward's ids (the tracker is empty again) */
    for (int32_t k = 0; k < b->npre && !b->st; k++) { /* the root pre-forward's input casts (plan.c cast_inputs) */
        fwd_op(b, k, true);
        release_list(b, b->rel_off, b->rel, k);
    }
    const bool passes = gen_passes(b);
    if (!passes) vc__model_hook(b, true);
    for (int i = 0; b->m->stage.recv && i < b->m->ninputs; i++) { /* a pipeline stage's received inputs (pipeline.c) */
        tens_t *t = &b->t[b->val_t[i]];
        t->stor = s_alloc(b, t->n, t->dt, CAT_ACT, -1);
    }
    for (int r = 0; r < b->nreg; r++) {
        b->reg[r].recomputed = false;
        b->reg[r].o0 = -1;
    }
    for (int32_t k = b->npre; k < (int32_t)b->nop && !b->st; k++) {
        int r = b->op[k].region;
        if (b->acc_pass && k >= b->once_from && k < b->once_to) continue; /* grpo.c: micro-step 1's alone */
        if (k == b->gen.split_op) { /* generate: the prefill ends, the decoding step begins */
            mark_fwd_end(b);
            b->phase = VC_PHASE_DECODE;
        }
        if (passes) gen_pass_hooks(b, k);
        module_boundary(b, b->op[k].inst);
        if (r >= 0 && b->reg[r].first == k && b->train) hold_region_inputs(b, r);
        fwd_op(b, k, r < 0);
        release_list(b, b->rel_off, b->rel, k);
    }
    if (passes) gen_pass_hooks(b, (int32_t)b->nop);
    module_boundary(b, -1);
    if (!passes) vc__model_hook(b, false);
    for (int i = 0; kvd_on(b) && i < b->nkvd; i++) b->kvd_fwd[i] = b->t[b->kvd_t[i]].stor; /* the dict's entries */
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
        push_saved(b, op, st);
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
    b->recomputing = true;
    for (int32_t k = R->first; k <= R->stop && !b->st; k++) {
        /* --grad-ckpt-ops: torchtitan's early_stop=False, the region run to its end */
        if (k == R->last_save && !sac_region(b, r) && !reent(b, r) && op_packs(b, k) == 1) save_inputs_only(b, k);
        else fwd_op(b, k, true);
        if (b->op[k].kvd) kvd_recomputed(b, k);
        release_list(b, b->rrel_off, b->rrel, k);
    }
    b->recomputing = false;
}

/* --grad-ckpt-kind reentrant: storage s held by CheckpointFunction.backward until it returns (the reference
 * moves to b->rhold) */
static void reentrant_hold(vc_build *b, int32_t s)
{
    if (s < 0) return;
    GROW(b->rhold, b->nrhold, b->crhold, b);
    if (!b->st) b->rhold[b->nrhold++] = s;
}

/* ... and released when it returns: its `args` and `outputs` go */
static void reentrant_release(vc_build *b, region_t *R, int32_t inst)
{
    if (R->o0 < 0) return;
    for (size_t j = (size_t)R->o0; j < b->nrhold; j++) s_unref(b, b->rhold[j], inst);
    b->nrhold = (size_t)R->o0;
    R->o0 = -1;
}

/* torch.utils.checkpoint, use_reentrant=True (torch/utils/checkpoint.py @0008d771a4015b0b43165ea470653b52e92b2148
 * CheckpointFunction.backward), when the engine runs the layer's CheckpointFunctionBackward node, i.e. when its
 * output's gradient is complete: `args`, that gradient, is held until backward returns; the saved inputs are
 * detached (detach_variable: the same storage) and ctx.run_function runs on them whole under enable_grad (no
 * early stop), recording the layer's graph, its `outputs` held until it returns; then
 * torch.autograd.backward(outputs_with_grad, args_with_grad) runs the layer's nodes (autograd.c's loop goes on
 * through them: each frees its saved tensors after it runs, retain_graph False, and accumulates its parameters'
 * gradients), the inputs' gradients accumulating in the detached inputs' .grad, returned as the node's
 * gradients (deliver). Region r's first node ends it (run_node). */
static void reentrant_begin(vc_build *b, int r, int32_t inst)
{
    region_t *R = &b->reg[r];
    R->o0 = (int32_t)b->nrhold;
    for (int32_t k = R->first; k <= R->last; k++) { /* args: the outputs' gradients */
        const item_t *its = op_items(b, k);
        for (int32_t i = 0; i < b->op[k].nit; i++) {
            const tens_t *t = &b->t[its[i].t];
            if (its[i].type == IT_OUT && t->grad >= 0 && (t->last > R->last || t->held)) {
                s_ref(b, t->grad);
                reentrant_hold(b, t->grad);
            }
        }
    }
    recompute(b, r);
    for (int32_t k = R->first; k <= R->last; k++) { /* outputs: the recomputed ones (build_liveness: rlast -1) */
        const item_t *its = op_items(b, k);
        for (int32_t i = 0; i < b->op[k].nit; i++) {
            const tens_t *t = &b->t[its[i].t];
            if (its[i].type == IT_OUT && !t->persistent && (t->last > R->last || t->held)) reentrant_hold(b, t->stor);
        }
    }
    (void)inst;
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
    if (b->layout->grad && *pg == g) b->layout->grad(b, p, inst); /* its post-accumulate hook (ZeRO-2) */
    if (b->o.optim_in_bwd) vc__step_in_backward(b, p); /* --optim-in-bwd: the step in the hook (state.c) */
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

/* Node k's backward, as Engine::evaluate_function runs it: the checkpoint
 * recompute it triggers, its gradients and transients (apply), the saved
 * tensors released, broadcast gradients reduced (validate_outputs), the
 * gradients delivered to their consumers. gin: its incoming gradient. */
static void run_node(vc_build *b, int32_t k, int32_t gin)
{
    op_t *op = &b->op[k];
    item_t *its = op_items(b, k);
    int32_t newg[VC_MAX_INPUTS * 4];
    int32_t newt[VC_MAX_INPUTS * 4];
    module_boundary(b, op->inst);
    b->cur_op = k;
    int32_t brought[VC_MAX_INPUTS * 4];
    int nbrought = 0;
    bool unpacked = false;
    /* torch/utils/checkpoint.py (2.x, @0008d771) _checkpoint_hook.unpack_hook: the region is
     * recomputed (frame.recompute_fn, once per graph task: frame.is_recomputed[gid]) when backward
     * first unpacks one of its saved tensors (_Holder), i.e. in the first of its nodes that saved
     * something; the nodes before it (a sum, an add, a view: nothing saved) run without it */
    if (reent(b, op->region) && !b->reg[op->region].recomputed) {
        reentrant_begin(b, op->region, op->inst);
        b->cur_op = k;
        op = &b->op[k];
        its = op_items(b, k);
    } else if (op->region >= 0 && !b->reg[op->region].recomputed && op_packs(b, k) > 0) {
        /* --act-offload: the recompute's first unpack brings the block's offloaded input
         * back (its frame's `args`, from ctx.saved_tensors) for the recomputed forward to read;
         * this node is the current autograd node then */
        region_t *R = &b->reg[op->region];
        int32_t arg = -1;
        if (R->off_s >= 0) {
            unpacked = true;
            bool stashed = false;
            for (size_t i = 0; i < b->nstash && !stashed; i++) stashed = b->stash[2 * i + 1] == R->off_s;
            if (stashed) s_ref(b, arg = R->off_s);
            else arg = s_alloc(b, b->s[R->off_s].n, b->s[R->off_s].dt, CAT_ACT, op->inst);
            b->t[R->off_t].stor = arg;
        }
        recompute(b, op->region);
        b->cur_op = k;
        op = &b->op[k];
        its = op_items(b, k);
        /* `args` goes when the recompute returns; a copy brought back with streams stays in
         * bwd_tensor_stash (until the next unpacking node's hook) */
        if (arg >= 0 && arg != R->off_s && off_streams(b)) brought[nbrought++] = arg;
        else if (arg >= 0) s_unref(b, arg, op->inst);
        R->off_s = -1;
    }
    /* --act-offload: its offloaded saved tensors unpacked (off_unpack) */
    if (b->o.act_offload) {
        int nb = 0;
        unpacked |= off_unpack(b, k, brought + nbrought, &nb);
        nbrought += nb;
    }
    /* --compile: values the partitioner recomputes that this (not fusible) backward reads
     * materialized, alive while it runs (compile.c) */
    int32_t remat[VC_MAX_INPUTS * 4];
    int nremat = 0;
    for (int32_t j = b->cmp && b->cmp->sv ? b->cmp->sv_off[k] : 0; b->cmp && b->cmp->sv && j < b->cmp->sv_off[k + 1]; j++)
        if (b->cmp->sv[j] < 0 && nremat < (int)(sizeof remat / sizeof *remat)) {
            const tens_t *t = &b->t[~b->cmp->sv[j]];
            remat[nremat++] = s_alloc(b, t->n, t->dt, CAT_TEMP, op->inst);
        }
    /* The node's backward (apply): new gradients and its transients. */
    int ng = 0, nfull = 0;
    int32_t full[VC_MAX_INPUTS * 4];
    const tens_t *out0 = NULL; /* the op's (first) output: size of a NEW_REDUCE gradient */
    for (int32_t i = 0; i < op->nit && !out0; i++)
        if (its[i].type == IT_OUT) out0 = &b->t[its[i].t];
    for (int32_t i = 0; i < op->nit && ng < (int)(sizeof newg / sizeof *newg); i++) {
        item_t *it = &its[i];
        if (it->type == IT_IN && it->diff && it->how == VC_GRAD_UNDEF && b->t[it->t].rg)
            b->t[it->t].ugrad = true; /* None returned: its producer still runs (undef_node) */
        if (it->type != IT_IN || !it->diff || it->how == VC_GRAD_NONE || it->how == VC_GRAD_UNDEF ||
            it->how == VC_GRAD_REDUCE || !b->t[it->t].rg)
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
        } else if (it->how == VC_GRAD_INTO_SAVED && (g = saved_input(b, op, t->stor)) >= 0) {
            s_ref(b, g);
        } else if (it->how == VC_GRAD_SAVED) {
            int in = 0; /* this input's number */
            for (int32_t j = 0; j < i; j++) in += its[j].type == IT_IN;
            g = saved_grad(b, k, in);
            if (g < 0) continue;
            s_ref(b, g);
        } else {
            vc_numel n = it->in == 1 ? it->n : t->n;
            uint8_t dt = it->in == 1 ? it->dt : t->dt;
            if (b->cmp && b->cmp->gfused[it->t]) n = vc_n_fixed(0); /* --compile: inside a fused backward kernel */
            g = s_alloc(b, n, dt, t->param >= 0 ? CAT_GRAD : CAT_TEMP, op->inst);
            if (g >= 0) b->s[g].gview = it->gview;
        }
        newg[ng] = g;
        newt[ng++] = it->t;
    }
    if (!vc__compile_fusible(b, k)) run_temps(b, its, op->nit, IT_BTEMP, op->inst);
    for (int j = 0; j < nremat; j++) s_unref(b, remat[j], op->inst);
    /* A checkpointed node's saved tensors are recomputed ones that only
     * its backward holds (2.x checkpoint drops the handle on unpack):
     * they go when apply returns. Other nodes release theirs after the
     * engine's validate_outputs (Engine::evaluate_function). */
    bool early_release = op->region >= 0 && !reent(b, op->region); /* reentrant: an ordinary graph's nodes */
    if (early_release) {
        for (int32_t j = 0; j < op->nsv; j++) s_unref(b, b->sv[op->sv0 + j], op->inst);
        op->nsv = 0;
    }
    /* --act-offload: a tensor brought back is apply's own without streams (gone when it
     * returns); with streams bwd_tensor_stash keeps it (the reference moves there) */
    for (int j = 0; j < nbrought; j++)
        for (int32_t i = 0; i < op->nsv; i++)
            if (b->sv[op->sv0 + i] == brought[j]) {
                if (!off_streams(b)) s_unref(b, brought[j], op->inst);
                b->sv[op->sv0 + i] = -1;
            }
    /* validate_outputs: sum_to of gradients for broadcast inputs, the cast of one of another dtype */
    int jf = 0; /* the next NEW_REDUCE input's output-sized gradient in full[] */
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
        if (it->comp >= 0) { /* the reduction's scratch (vc_op_grad_reduce_rows), freed when it returns */
            int32_t s = s_alloc(b, vc_n_fixed(vc__comp_bytes(b, it->comp, b->batch)), VC_DT_U8, CAT_TEMP, op->inst);
            if (s >= 0) b->s[s].comp = it->comp;
            s_unref(b, s, op->inst);
        }
        /* grads[i] = at::sum_to(std::move(grad), ...) / grad.to(dtype): the node's output-sized one goes as
         * its reduction or cast replaces it, before the next input's (engine.cpp @ e1253a95 validate_outputs) */
        if (it->how == VC_GRAD_NEW_REDUCE && jf < nfull) s_unref(b, full[jf++], op->inst);
    }
    for (int j = jf; j < nfull; j++) s_unref(b, full[j], op->inst);
    /* a leaf made to require grad (PEFT's hooked input embeddings, vc_op_leaf_grad): its AccumulateGrad node
     * holds the leaf, whose .grad the gradient becomes, until the graph is freed when backward ends (the
     * node is not the last to run when other branches remain: whisper's encoder) */
    if (op->leaf) {
        for (int32_t j = 0; j < op->nsv; j++) leaf_keep(b, b->sv[op->sv0 + j]);
        for (int32_t i = 0; i < op->nit; i++)
            if (its[i].type == IT_OUT && b->t[its[i].t].grad >= 0) leaf_keep(b, b->t[its[i].t].grad);
    }
    for (int32_t j = 0; j < op->nsv; j++) s_unref(b, b->sv[op->sv0 + j], op->inst);
    op->nsv = 0;
    if (unpacked && off_streams(b)) { /* the node's post hook: the forward stash, then the previous node's */
        off_stash_clear(b, op->inst);
        for (size_t j = 0; j < b->nbwd; j++) s_unref(b, b->bwd[j], op->inst);
        b->nbwd = 0;
        for (int j = 0; j < nbrought; j++) {
            GROW(b->bwd, b->nbwd, b->cbwd, b);
            if (b->st) break;
            b->bwd[b->nbwd++] = brought[j];
        }
    }
    for (int32_t i = 0; i < op->nit; i++) {
        if (its[i].type != IT_OUT) continue;
        tens_t *t = &b->t[its[i].t];
        if (t->grad >= 0) s_unref(b, t->grad, op->inst);
        t->grad = -1;
    }
    for (int j = 0; j < ng; j++) deliver(b, newt[j], newg[j], op->inst);
    int r = op->region;
    if (r >= 0 && b->reg[r].bfirst == k) {
        for (int32_t j = 0; j < b->reg[r].nh; j++) s_unref(b, b->hold[b->reg[r].h0 + j], op->inst);
        b->reg[r].nh = 0;
    }
    if (r >= 0 && b->reg[r].first == k) {
        if (r == b->kvd_death) kvd_drop(b, op->inst);
        reentrant_release(b, &b->reg[r], op->inst);
    }
}

/* The model's outputs the loss does not use are dropped with its return value
 * before backward starts (the contract's loop is one expression: a dict's other
 * levels, unused branches): the nodes from which no gradient can reach the loss
 * are destroyed with the last reference to them, and their saved tensors freed
 * then (a Node's SavedVariables go with the Node, torch/csrc/autograd/
 * function.h), not when backward's graph is. */
static void free_unreached(vc_build *b, int32_t loss_t)
{
    bool *need = calloc(b->nt ? b->nt : 1, sizeof *need);
    if (!need) {
        b->st = VC_ERR_NOMEM;
        return;
    }
    need[loss_t] = true;
    for (int32_t k = (int32_t)b->nop - 1; k >= 0; k--) {
        op_t *op = &b->op[k];
        item_t *its = op_items(b, k);
        bool used = false;
        for (int32_t i = 0; i < op->nit && !used; i++)
            used = its[i].type == IT_OUT && need[its[i].t];
        if (used) {
            for (int32_t i = 0; i < op->nit; i++)
                if (its[i].type == IT_IN) need[its[i].t] = true;
            continue;
        }
        for (int32_t j = 0; j < op->nsv; j++) s_unref(b, b->sv[op->sv0 + j], -1);
        op->nsv = 0;
        op->dead = true;
    }
    free(need);
}

/* A node only undefined gradients reached (VC_GRAD_UNDEF: a custom Function's None for an input that
 * requires grad): autograd runs it all the same once its consumers have run (torch/csrc/autograd/engine.cpp
 * @ e1253a956f6866469eafd88cc3bfb4627f4b1efc Engine::evaluate_function queues every next edge whatever the
 * output; the generated apply unpacks its saved variables, computes nothing for an undefined gradient and
 * returns undefined ones; release_variables follows): its saved tensors are released now, not when the graph
 * is freed, and its inputs get undefined gradients in turn. Only where its checkpointed region (if any) has
 * been recomputed already (the nodes VC_GRAD_UNDEF reaches are in the block of the Function that returned
 * None). */
static void undef_node(vc_build *b, int32_t k)
{
    op_t *op = &b->op[k];
    item_t *its = op_items(b, k);
    bool undef = false;
    for (int32_t i = 0; i < op->nit && !undef; i++)
        undef = its[i].type == IT_OUT && b->t[its[i].t].ugrad;
    if (!undef || (op->region >= 0 && !b->reg[op->region].recomputed)) return;
    for (int32_t j = 0; j < op->nsv; j++) s_unref(b, b->sv[op->sv0 + j], op->inst);
    op->nsv = 0;
    for (int32_t i = 0; i < op->nit; i++) {
        const item_t *it = &its[i];
        if (it->type == IT_OUT) b->t[it->t].ugrad = false;
        else if (it->type == IT_IN && it->diff && it->how != VC_GRAD_NONE && b->t[it->t].rg)
            b->t[it->t].ugrad = true;
    }
}

static void backward(vc_build *b)
{
    b->cur_op = -1;
    b->phase = VC_PHASE_BACKWARD;
    /* the loss; a pipeline stage without one: its output, whose gradient the
     * next stage sends (pipeline.c) */
    int32_t root_t = b->loss_t >= 0 ? b->loss_t : b->m->stage.on ? b->val_t[b->m->output] : -1;
    if (root_t < 0) return;
    tens_t *L = &b->t[root_t];
    int32_t loss_stor = b->loss_t >= 0 ? L->stor : -1;
    int32_t held_stor = b->held_out_t >= 0 ? b->t[b->held_out_t].stor : -1; /* --hold-output */
    if (!L->rg) { /* nothing to differentiate (everything frozen) */
        sac_drop(b);
        kvd_drop(b, -1);
        off_stash_clear(b, -1);
        s_unref(b, loss_stor, -1);
        s_unref(b, held_stor, -1);
        return;
    }
    free_unreached(b, root_t);
    /* torch/utils/checkpoint.py (2.x, @0008d771) _checkpoint_without_reentrant_generator: the block's
     * arguments are saved by _NoopSaveInputs (frame.input_saver), a node no gradient reaches, alive with the
     * _CheckpointFrame, which the unpack_hook closures of its nodes' _Holders reference: the arguments go when
     * the last of those nodes has run (its SavedVariables released), the block's lowest recorded op, not its
     * first op when that one recorded no node (a frozen projection of an input needing no gradient: BART's
     * first decoder layer under LoRA, whose q_proj's base addmm is no node); with no node, when the graph is
     * freed. The reentrant CheckpointFunction is one node: its first op. */
    for (int r = 0; r < b->nreg; r++) {
        region_t *R = &b->reg[r];
        R->bfirst = R->first;
        if (R->first < 0 || reent(b, r)) continue; /* no op recorded here (another pipeline stage's block) */
        R->bfirst = -1;
        for (int32_t k = R->first; k <= R->last && R->bfirst < 0; k++)
            if (b->op[k].rg && !b->op[k].dead) R->bfirst = k;
    }
    for (size_t p = 0; p < b->m->npar; p++) {
        b->parrived[p] = 0;
        b->ppending[p] = -1;
    }
    /* the root gradient (ones_like(loss)) is held by the graph task throughout */
    int32_t root = L->grad = b->loss_t >= 0 ? s_alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1)
                                            : s_alloc(b, L->n, L->dt, CAT_TEMP, -1);
    s_ref(b, root);
    vc__model_hook(b, true);
    for (int32_t k = (int32_t)b->nop - 1; k >= 0 && !b->st; k--) {
        op_t *op = &b->op[k];
        if (!op->rg) continue;
        b->cur_op = k;
        item_t *its = op_items(b, k);
        int32_t gin = -1;
        for (int32_t i = 0; i < op->nit; i++)
            if (its[i].type == IT_OUT && b->t[its[i].t].grad >= 0) { gin = b->t[its[i].t].grad; break; }
        if (gin >= 0 && b->npp) vc__pp_segment(b, op->inst); /* a pipeline stage's chunk (pipeline_hold.c) */
        if (gin >= 0) run_node(b, k, gin);
        else undef_node(b, k);
    }
    module_boundary(b, -1);
    /* AccumulateGrad nodes some of whose gradients never came (their
     * producers got no gradient) run with what they have. */
    for (size_t p = 0; p < b->m->npar; p++) accumulate_grad(b, p, -1);
    vc__model_hook(b, false);
    /* Nodes that never ran (no gradient reached them) free their saved
     * tensors when the graph is destroyed. */
    for (size_t k = 0; k < b->nop; k++) {
        for (int32_t j = 0; j < b->op[k].nsv; j++) s_unref(b, b->sv[b->op[k].sv0 + j], -1);
        b->op[k].nsv = 0;
    }
    for (int r = b->nreg - 1; r >= 0; r--) {
        for (int32_t j = 0; j < b->reg[r].nh; j++) s_unref(b, b->hold[b->reg[r].h0 + j], -1);
        b->reg[r].nh = 0;
        reentrant_release(b, &b->reg[r], -1);
    }
    for (size_t j = 0; j < b->nleafkeep; j++) s_unref(b, b->leafkeep[j], -1);
    b->nleafkeep = 0;
    sac_drop(b);
    kvd_drop(b, -1); /* a dict no region's backward dropped */
    off_stash_clear(b, -1); /* --act-offload: queue_callback's wait_and_del_remaining_references */
    for (size_t j = 0; j < b->nbwd; j++) s_unref(b, b->bwd[j], -1);
    b->nbwd = 0;
    for (size_t i = 0; i < b->nt; i++) {
        if (b->t[i].grad >= 0) { s_unref(b, b->t[i].grad, -1); b->t[i].grad = -1; }
        b->t[i].ugrad = false;
    }
    s_unref(b, root, -1);
    s_unref(b, loss_stor, -1);
    s_unref(b, held_stor, -1); /* `del out` (or its rebinding) once backward has returned */
}

/* A pipeline stage other than the last sends its output, then
 * deallocate_output_tensor (Megatron schedules.py) replaces its storage by
 * torch.empty((1,)): output_tensors keeps that one-element tensor (and the
 * grad_fn) until the micro-batch's backward. -1 for other plans. */
static int32_t sent_output(vc_build *b)
{
    if (!b->m->stage.on || b->m->stage.last) return -1;
    return s_alloc(b, vc_n_fixed(1), b->t[b->val_t[b->m->output]].dt, CAT_ACT, -1);
}

static void reset_run(vc_build *b)
{
    for (size_t i = 0; i < b->nt; i++) {
        if (!b->t[i].persistent) b->t[i].stor = -1;
        b->t[i].grad = -1;
    }
}

/* One step: forward and backward (twice with accumulation or a pipeline
 * stage's micro-batches), then the optimizer step. `last`: the step whose
 * forward's end is marked (the steady one). */
static void train_step(vc_build *b, bool last)
{
    const int64_t micro = b->m->stage.micro_batches;
    int passes = b->train ? (b->o.accumulate > 1 || micro > 1 ? 2 : 1) : 1;
    for (int pass = 0; pass < passes && !b->st; pass++) {
        b->acc_pass = pass;
        if (pass) reset_run(b);
        /* a pipeline stage (pipeline.c): the second backward of a step, into
         * existing gradients, with the micro-batches its schedule then holds */
        if (pass && b->npp) vc__pp_second(b);
        if (pass == 0 && vc__pp_holds(b->m)) {
            size_t s0 = b->ns;
            forward(b);
            sent_output(b);
            vc__pp_hold(b, s0);
            reset_run(b);
        }
        forward(b);
        int32_t sent = sent_output(b);
        if (pass == 0 && last && b->gen.split_op < 0) mark_fwd_end(b);
        if (b->train) backward(b);
        for (int i = 0; b->m->stage.recv && i < b->m->ninputs; i++) /* input_tensors.pop(0): the received input goes */
            s_unref(b, b->t[b->val_t[i]].stor, -1);
        s_unref(b, sent, -1);
    }
    b->acc_pass = 0;
    if (b->npp) vc__pp_release(b);
    if (b->train && b->optim->steps) vc__optimizer_step(b);
    else if (b->train) {
        b->phase = VC_PHASE_IDLE;
        for (size_t p = 0; p < b->m->npar; p++)
            if (b->pgrad[p] >= 0) s_unref(b, b->pgrad[p], -1);
        for (size_t i = 0; i < b->nflat; i++)
            if (b->flat[i].grad >= 0) s_unref(b, b->flat[i].grad, -1);
    }
}

/* --act-offload: what it is modelled with, and the output head (torchtune's model.output, the
 * NoOpManager's): the instance named lm_head (embed_out for GPT-NeoX), else none, as
 * get_act_offloading_ctx_manager warns; the ops from its first on are not offloaded
 * (loss_op0 moved there: torchtune's head and the loss after the model; a soft-capping
 * between the two, which torchtune's Gemma-2 would offload, is not). 0, or VC_ERR_USAGE. */
static int off_setup(vc_build *b)
{
    const vc_model *m = b->m;
    b->head_inst = -1;
    if (!b->o.act_offload) return 0;
    const char *why = b->o.act_offload != VC_ACT_OFFLOAD_STREAMS && b->o.act_offload != VC_ACT_OFFLOAD_SYNC ? "invalid value"
                    : !b->train ? "it offloads what training saves"
                    : b->o.parallel != VC_PARALLEL_NONE || m->stage.on ? "modelled on one GPU (no parallel layout, no " O("pp") ")"
                    : NULL;
    if (why) {
        b->why_opt = O("act_offload");
        snprintf(b->why, sizeof b->why, "%s", why);
        return b->st = VC_ERR_USAGE;
    }
    for (size_t i = 0; i < m->ninst; i++)
        if (m->inst[i].name && (!strcmp(m->inst[i].name, "lm_head") || !strcmp(m->inst[i].name, "embed_out")))
            b->head_inst = (int32_t)i;
    /* the hooks see the ops before the head's first (after it: the head under the NoOpManager,
     * what follows it in the model's forward, the loss outside the context) */
    for (int32_t k = 0; k < b->loss_op0 && b->head_inst >= 0; k++)
        if (b->op[k].inst == b->head_inst) {
            b->loss_op0 = k;
            break;
        }
    return 0;
}

void vc__execute(vc_build *b)
{
    b->cur_op = -1;
    if (off_setup(b) || vc__compile_plan(b)) return;
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
            if (it->type != IT_IN || !it->diff || it->how == VC_GRAD_NONE || it->how == VC_GRAD_UNDEF) continue;
            const tens_t *t = &b->t[it->t];
            if (t->param >= 0 && t->rg) b->pedges[t->param]++;
        }
    }
    if (build_liveness(b)) return;
    if (b->layout->owns) {
        b->owned = calloc(np, sizeof *b->owned);
        if (!b->owned) { b->st = VC_ERR_NOMEM; return; }
        b->layout->owns(b, b->owned);
    }
    b->lay_cur = -1;
    if (b->layout->flat) {
        /* room for a flat parameter per unit, or per parameter (FSDP2) */
        b->flat = calloc((b->m->ninst > b->m->npar ? b->m->ninst : b->m->npar) + 1, sizeof *b->flat);
        b->unit_of = calloc(b->m->ninst + 1, sizeof *b->unit_of);
        if (!b->flat || !b->unit_of) { b->st = VC_ERR_NOMEM; return; }
        b->layout->flat(b);
        if (b->st) return;
    }
    /* --first-step (vc__plan_build_first_step): the first step, its optimizer state made by
     * step() (state.c lazy_states), then with 2 a steady one; otherwise the steady step alone */
    b->lazy_pass = b->first_steps > 0 && b->train && b->optim->steps;
    int nsteps = b->lazy_pass ? b->first_steps : 1;
    vc__persistent(b);
    for (int step = 0; step < nsteps && !b->st; step++) {
        if (step) reset_run(b);
        train_step(b, step == nsteps - 1);
    }
}
