/*
 * layout.c — the parallel-layout table (policy.h, vc_layout_row): how one
 * rank's training step differs from a single GPU's. Rows: a single GPU,
 * which changes nothing, and DDP. The other strategies (ZeRO, FSDP, tensor
 * and pipeline parallelism; docs/parallel.md says what each allocates) are
 * rows to come, each with its module hooks and its share of the state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "util.h"

/* ---- ddp: torch.nn.parallel.DistributedDataParallel, bucket_cap_mb=25,
 * gradient_as_bucket_view=False (its defaults). Every rank keeps the whole
 * model, its gradients and optimizer state, plus the reducer's gradient
 * buckets: one flat tensor per bucket of the gradients' dtype
 * (torch/csrc/distributed/c10d/reducer.cpp Reducer::initialize_buckets:
 * bucket.gradients = at::empty({offset}, options)), allocated when DDP is
 * built and kept for the whole run. The trainable parameters go into buckets
 * in the order their gradients become ready, the reverse of the model's
 * (Reducer::rebuild_buckets after the first step, which reuses
 * compute_bucket_assignment_by_size): a bucket closes once it holds at least
 * its limit, 1 MiB for the first one (dist._DEFAULT_FIRST_BUCKET_BYTES),
 * 25 MiB after. Measured with gloo on CPU at world sizes 1, 2 and 4
 * (bench/accuracy/dist/results.json): every rank's peak is the single
 * process's plus the buckets, each rounded to 512 bytes; the world size
 * changes nothing, so --gpus 1 --parallel ddp keeps the buckets too. */
static void ddp_buckets(vc_build *b)
{
    const vc_model *m = b->m;
    const int64_t first = INT64_C(1) << 20, cap = INT64_C(25) << 20;
    int64_t limit = first, bytes = 0, numel = 0;
    uint8_t dt = 0;
    for (size_t i = m->npar; i-- > 0;) {
        if (!m->par[i].trainable) continue;
        const tens_t *t = &b->t[b->par_t[i]];
        /* the reducer keeps an open bucket per dtype; the trainable parameters
         * of the layouts modelled share one, so a change of dtype closes it */
        if (numel && t->dt != dt) {
            vc__alloc(b, vc_n_fixed(numel), (vc_dtype)dt, CAT_GRAD, -1);
            bytes = numel = 0;
            limit = cap;
        }
        dt = t->dt;
        numel += t->n.fx;
        bytes += t->n.fx * vc_dtype_size((vc_dtype)dt);
        if (bytes >= limit) {
            vc__alloc(b, vc_n_fixed(numel), (vc_dtype)dt, CAT_GRAD, -1);
            bytes = numel = 0;
            limit = cap;
        }
    }
    if (numel) vc__alloc(b, vc_n_fixed(numel), (vc_dtype)dt, CAT_GRAD, -1);
}

/* ---- zero1-torch: torch.distributed.optim.ZeroRedundancyOptimizer over a
 * DDP model (its usual setting, and the one measured). Each rank keeps the
 * optimizer state of, and steps, its share of the parameters only; the
 * share is greedy by size (zero_redundancy_optimizer.py
 * _partition_parameters: the parameters sorted by numel, largest first,
 * a stable sort, each to the rank with the fewest elements so far, the
 * lowest such rank on a tie). The updated parameters are broadcast in
 * place. The estimate is the busiest rank's: the most elements. */
static void zero1_owns(const vc_build *b, bool *owned)
{
    const vc_model *m = b->m;
    int64_t world = vc_dp_world(&b->o), *sizes = calloc((size_t)world, sizeof *sizes);
    size_t *order = malloc((m->npar + 1) * sizeof *order);
    int *rank = malloc((m->npar + 1) * sizeof *rank);
    if (!sizes || !order || !rank) {
        for (size_t p = 0; p < m->npar; p++) owned[p] = true; /* out of memory: the unsharded estimate, an upper bound */
        free(sizes); free(order); free(rank);
        return;
    }
    size_t n = 0;
    for (size_t p = 0; p < m->npar; p++)
        if (m->par[p].trainable) order[n++] = p;
    for (size_t i = 1; i < n; i++) { /* insertion sort: stable, by numel descending */
        size_t v = order[i], j = i;
        for (; j > 0 && m->par[order[j - 1]].numel < m->par[v].numel; j--) order[j] = order[j - 1];
        order[j] = v;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t r = 0;
        for (int64_t k = 1; k < world; k++)
            if (sizes[k] < sizes[r]) r = k;
        rank[order[i]] = (int)r;
        sizes[r] += m->par[order[i]].numel;
    }
    int64_t busiest = 0;
    for (int64_t k = 1; k < world; k++)
        if (sizes[k] > sizes[busiest]) busiest = k;
    for (size_t i = 0; i < n; i++) owned[order[i]] = rank[order[i]] == busiest;
    free(sizes); free(order); free(rank);
}

/* ---- fsdp, shard-grad-op: torch.distributed.fsdp.FullyShardedDataParallel
 * (FSDP1, PyTorch 2.x defaults: use_orig_params=False, backward_prefetch=
 * BACKWARD_PRE, forward_prefetch=False, no mixed precision, no CPU offload),
 * sharding_strategy FULL_SHARD or SHARD_GRAD_OP.
 *
 * Units, as auto_wrap_policy=transformer_auto_wrap_policy wraps a decoder
 * stack: every copy of a repeated block (a top-level entry with `repeat`,
 * the decoder layers of a Hugging Face config) is one FSDP unit; every
 * other parameter (embedding, final norm, head) is in the root's. A model
 * with no repeated entry wraps each top-level entry that holds parameters
 * (ModuleWrapPolicy over them), leaving the root none. Each unit's
 * parameters are one FlatParameter, flattened without padding between them
 * (torch/distributed/fsdp/_flat_param.py FlatParamHandle.flatten_tensors,
 * no alignment without use_orig_params). */

/* The unit key of an instance path: its top-level index, and the copy for
 * a repeated entry ("layers[2][1].layers[0]": 2, 1; "layers[3]": 3, -1). */
static void path_key(const char *path, long *top, long *copy)
{
    const char *s = path ? strchr(path, '[') : NULL;
    char *e;
    *top = *copy = -1;
    if (!s) return;
    *top = strtol(s + 1, &e, 10);
    if (e[0] == ']' && e[1] == '[') *copy = strtol(e + 2, &e, 10);
}

/* Each rank's shard of a flat parameter of U elements: the flattened
 * tensor's chunk(world)[rank], the last ones padded to the first chunk's
 * size (_flat_param.py FlatParamHandle._get_shard / _get_unpadded_shard):
 * ceil(U / world) elements on every rank. */
static int64_t shard_numel(int64_t u, int64_t world) { return u / world + (u % world != 0); }

/* The units of the wrap above: unit_of[i] for every instance (0: the
 * root's), numbered from 1 as they run; returns their count. An instance
 * without parameters is the root's unless `span` (FSDP2, whose hooks are on
 * the wrapped module: a layer's parameter-free instances run inside it) and
 * it has the key of the unit before it. */
int32_t vc__fsdp_units(const vc_model *m, int32_t *unit_of, bool span)
{
    bool repeated = false;
    for (size_t i = 0; i < m->ninst; i++) {
        long top, copy;
        path_key(m->inst[i].path, &top, &copy);
        repeated |= copy >= 0;
    }
    long ktop = -2, kcopy = -2;
    int32_t unit = 0;
    for (size_t i = 0; i < m->ninst; i++) { /* instances in execution order: units numbered as they run */
        long top, copy;
        path_key(m->inst[i].path, &top, &copy);
        unit_of[i] = 0;
        if ((repeated && copy < 0) || top < 0) continue;
        if (m->inst[i].np == 0) {
            if (span && unit > 0 && top == ktop && copy == kcopy) unit_of[i] = unit;
            continue;
        }
        if (top != ktop || copy != kcopy) unit++;
        ktop = top, kcopy = copy;
        unit_of[i] = unit;
    }
    return unit;
}

static void fsdp_units(vc_build *b, int64_t group)
{
    const vc_model *m = b->m;
    b->nflat = (size_t)vc__fsdp_units(m, b->unit_of, false) + 1;
    for (size_t u = 0; u < b->nflat; u++) b->flat[u] = (vc_flat_param){{0, false, 0, 0, -1, NULL, NULL}, VC_DT_F32, 0, 0, -1, -1, {{0, 0}, 0}, false};
    for (size_t p = 0; p < m->npar; p++) {
        const vc_param_entry *e = &m->par[p];
        int32_t u = e->owner >= 0 ? b->unit_of[e->owner] : 0;
        vc_flat_param *f = &b->flat[u];
        uint8_t dt = b->t[b->par_t[p]].dt;
        /* FlatParamHandle._validate_tensors_to_flatten: one dtype, and (use_orig_params=False)
         * one requires_grad per FlatParameter, else ValueError("Must flatten tensors with
         * uniform ...") */
        if (f->numel > 0 && (dt != f->dt || e->trainable != f->e.trainable)) {
            b->st = VC_ERR_USAGE;
            b->why_opt = "--parallel";
            snprintf(b->why, sizeof b->why, "the FSDP unit of %s mixes %s parameters (%s): FSDP1 refuses that (use_orig_params=False)",
                     u == 0 ? "the root" : m->inst[e->owner].path, dt != f->dt ? "dtypes of" : "frozen and trainable",
                     e->name ? e->name : "?");
            return;
        }
        f->dt = dt;
        f->numel += e->numel;
        f->e.trainable = e->trainable;
    }
    for (size_t u = 0; u < b->nflat; u++) {
        vc_flat_param *f = &b->flat[u];
        f->e.numel = shard_numel(f->numel, group);
        f->padded = f->e.numel * group; /* at most numel + group - 1: the loader keeps counts under 2^56 */
        f->held = (vc_tspec){vc_n_fixed(f->e.numel), f->dt};
    }
}

/* FULL_SHARD and SHARD_GRAD_OP shard over every rank. */
static void fsdp_flat(vc_build *b) { fsdp_units(b, vc_dp_world(&b->o)); }

/* ---- hybrid: HYBRID_SHARD, FULL_SHARD inside each node and replicated
 * across nodes: the shard group is the node's devices
 * (_init_utils.py _init_process_group_state_for_hybrid_shard ->
 * _init_intra_and_inter_node_groups(default group, device_count())), 8
 * here (an 8-GPU node; options.c asks --gpus to be at most 8 or a multiple
 * of 8). The sharded gradient is then all-reduced over the inter-node
 * group in place (_post_backward_hook: default_hooks.allreduce_hook on
 * new_sharded_grad): nothing more is allocated. */
static void hybrid_flat(vc_build *b) { fsdp_units(b, vc_dp_world(&b->o) < 8 ? vc_dp_world(&b->o) : 8); }

/* FlatParamHandle.unshard (_flat_param.py): _alloc_padded_unsharded_flat_param
 * allocates the padded unsharded storage (world x shard elements), then the
 * all-gather fills it; in place on the gathered storage. */
static void fsdp_unshard(vc_build *b, int32_t u, int32_t at)
{
    vc_flat_param *f = &b->flat[u];
    if (u < 0 || (size_t)u >= b->nflat || f->full >= 0 || f->numel == 0) return;
    f->full = vc__alloc(b, vc_n_fixed(f->padded), (vc_dtype)f->dt, CAT_WEIGHT, at);
    if (f->full >= 0) b->s[f->full].transient = true;
}

/* FlatParamHandle.reshard -> _free_unsharded_flat_param: the storage
 * freed (_free_storage, resize_(0)); the shard stays. */
static void fsdp_reshard(vc_build *b, int32_t u, int32_t at)
{
    vc_flat_param *f = &b->flat[u];
    if (f->full >= 0) vc__free(b, f->full, at);
    f->full = -1;
}

/* A unit's backward has ended: its post-backward hook, a post hook on the
 * FlatParameter's AccumulateGrad (_runtime_utils.py
 * _register_post_backward_hooks). Before it, SplitWithSizesBackward (the
 * parameters are split() views of the flat parameter, _flat_param.py
 * _get_unflat_views) cats the views' gradients into one unsharded flat
 * gradient of U elements, and the views' gradients go. Then
 * _post_backward_hook: _reshard (_should_free_in_backward: true for both
 * strategies); the gradient padded to world x shard (F.pad, a copy, only
 * when U is not a multiple of the world size) and new_sharded_grad =
 * empty_like(chunks[0]) for the reduce-scatter; the new shard becomes
 * _saved_grad_shard (or is added to it in place: gradient accumulation);
 * the unsharded gradient and its padded copy go when the hook returns.
 * _saved_grad_shard becomes .grad in _post_backward_final_callback and
 * lives until zero_grad. */
static void fsdp_post_backward(vc_build *b, int32_t u, int32_t at)
{
    const vc_model *m = b->m;
    vc_flat_param *f = &b->flat[u];
    int32_t g = -1;
    for (size_t p = 0; p < m->npar; p++) {
        int32_t pu = m->par[p].owner >= 0 ? b->unit_of[m->par[p].owner] : 0;
        if (pu != u || b->pgrad[p] < 0) continue;
        if (g < 0) g = vc__alloc(b, vc_n_fixed(f->numel), (vc_dtype)f->dt, CAT_GRAD, at);
    }
    for (size_t p = 0; p < m->npar && g >= 0; p++) {
        int32_t pu = m->par[p].owner >= 0 ? b->unit_of[m->par[p].owner] : 0;
        if (pu != u || b->pgrad[p] < 0) continue;
        vc__free(b, b->pgrad[p], at);
        b->pgrad[p] = -1;
    }
    fsdp_reshard(b, u, at);
    if (g < 0) return;
    int32_t pad = f->padded > f->numel ? vc__alloc(b, vc_n_fixed(f->padded), (vc_dtype)f->dt, CAT_GRAD, at) : -1;
    int32_t shard = vc__alloc(b, vc_n_fixed(f->e.numel), (vc_dtype)f->dt, CAT_GRAD, at);
    if (f->grad >= 0) vc__free(b, shard, at); /* _saved_grad_shard += new_sharded_grad */
    else f->grad = shard;
    if (pad >= 0) vc__free(b, pad, at);
    vc__free(b, g, at);
}

/* The module hooks (_runtime_utils.py). The root's pre-forward unshards
 * it (_root_pre_forward, _pre_forward_unshard) and, under FULL_SHARD, its
 * post-forward keeps it (_post_forward_reshard: not state._is_root), so the
 * root stays gathered until its post-backward at the end of backward. A
 * unit: _pre_forward_unshard as it begins; _post_forward_reshard as the
 * next unit (or root code) begins: freed for FULL_SHARD
 * (RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES), kept to its backward for
 * SHARD_GRAD_OP. Backward: _pre_backward_hook unshards the unit (unless
 * still gathered) and prefetches the next unit in backward order (
 * _prefetch_handles, BACKWARD_PRE: the unit before it in post-forward
 * order, _ExecOrderData.get_handle_to_backward_prefetch), so two units are
 * gathered during a unit's backward; the root's pre-backward prefetches
 * the last unit. A unit's post-backward runs before the next one's
 * pre-backward (AccumulateGrad runs first: its sequence number is the
 * highest). */
static void fsdp_hook(vc_build *b, int inst, vc_phase ph, bool begin, bool reshard_after_forward)
{
    int32_t u = inst >= 0 ? b->unit_of[inst] : 0, cur = b->lay_cur;
    if (ph == VC_PHASE_FORWARD) {
        if (inst < 0 && begin) fsdp_unshard(b, 0, inst);
        if (cur > 0 && cur != u && reshard_after_forward) fsdp_reshard(b, cur, inst);
        if (inst >= 0 && begin) fsdp_unshard(b, u, inst);
        b->lay_cur = inst < 0 && !begin ? -1 : u;
        return;
    }
    if (ph != VC_PHASE_BACKWARD) return;
    if (inst < 0) {
        if (begin && b->flat[0].numel > 0) fsdp_unshard(b, (int32_t)b->nflat - 1, inst);
        if (begin) { b->lay_cur = 0; return; }
        if (cur > 0) fsdp_post_backward(b, cur, inst);
        fsdp_post_backward(b, 0, inst);
        b->lay_cur = -1;
        return;
    }
    if (!begin || u == cur) return;
    if (cur > 0) fsdp_post_backward(b, cur, inst);
    if (u > 0) {
        fsdp_unshard(b, u, inst);
        if (u > 1) fsdp_unshard(b, u - 1, inst);
    }
    b->lay_cur = u;
}

static void fsdp_full_shard(vc_build *b, int inst, vc_phase ph, bool begin) { fsdp_hook(b, inst, ph, begin, true); }
static void fsdp_shard_grad_op(vc_build *b, int inst, vc_phase ph, bool begin) { fsdp_hook(b, inst, ph, begin, false); }

/* ---- zero2: DeepSpeed ZeRO stage 2 (deepspeed/runtime/zero/stage_1_and_2.py,
 * DeepSpeedZeroOptimizer with partition_grads=True; deepspeedai/DeepSpeed@
 * edaa7221), its defaults: contiguous_gradients, overlap_comm off (stage 2),
 * reduce_scatter, reduce_bucket_size 5e8 elements (config.py
 * DeepSpeedZeroConfig), one parameter group, no offload. Modelled from the
 * source only (DeepSpeed does not run here; docs/parallel.md 2.3). */
#define ZERO_BUCKET INT64_C(500000000)
enum { Z_IPG, Z_GIP, Z_G32 };          /* lay_s: the IPG buffer, grads_in_partition, the step's fp32 gradient */
enum { Z_ELEMS, Z_XL, Z_PART, Z_GIPN }; /* lay_n: bucket elements, extra-large parameter + 1, bucket holds a
                                         * parameter of this rank's partition, grads_in_partition elements */

/* The trainable parameters flattened into one buffer of the model's dtype,
 * padded to a multiple of 2 x world (__init__: flatten_dense_tensors_aligned
 * with alignment nccl_start_alignment_factor x world); the parameters are
 * views into it. */
static int64_t zero2_flat_numel(const vc_build *b, uint8_t *dt)
{
    int64_t n = 0, a = 2 * vc_dp_world(&b->o);
    *dt = VC_DT_F32;
    for (size_t p = b->m->npar; p-- > 0;)
        if (b->m->par[p].trainable) n += b->m->par[p].numel, *dt = b->t[b->par_t[p]].dt;
    return (n + a - 1) / a * a;
}

/* The optimizer sees one parameter, this rank's fp32 partition of the flat
 * buffer: flat / world elements (single_partition_of_fp32_groups, a
 * clone().float() even of fp32, given to the wrapped optimizer as its group's
 * params). A rank's gradient partition (copy_grads_in_partition:
 * grads_in_partition = torch.empty(total_size)) holds the whole of every
 * parameter that touches its partition (get_partition_info): ranks differ by
 * that, so the estimate is the rank with the most. */
static void zero2_flat(vc_build *b)
{
    const vc_model *m = b->m;
    uint8_t dt;
    int64_t world = vc_dp_world(&b->o), flat = zero2_flat_numel(b, &dt), part = flat / world, off = 0, busiest = 0;
    int64_t *tot = calloc((size_t)world + 1, sizeof *tot);
    b->lay_mask = calloc(m->npar + 1, sizeof *b->lay_mask);
    if (!tot || !b->lay_mask) { free(tot); b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p < m->npar && part > 0; p++) { /* tot: a difference array over the ranks */
        if (!m->par[p].trainable || m->par[p].numel == 0) continue;
        tot[off / part] += m->par[p].numel;
        tot[(off + m->par[p].numel - 1) / part + 1] -= m->par[p].numel;
        off += m->par[p].numel;
    }
    for (int64_t r = 1; r <= world; r++) tot[r] += tot[r - 1];
    for (int64_t r = 1; r < world; r++)
        if (tot[r] > tot[busiest]) busiest = r;
    off = 0;
    for (size_t p = 0; p < m->npar && part > 0; p++) {
        if (!m->par[p].trainable || m->par[p].numel == 0) continue;
        b->lay_mask[p] = off / part <= busiest && (off + m->par[p].numel - 1) / part >= busiest;
        off += m->par[p].numel;
    }
    b->nflat = 1; /* inference builds no ZeRO optimizer: no partition */
    b->flat[0] = (vc_flat_param){{b->train ? part : 0, b->train && part > 0, 0, 0, -1, NULL, NULL}, VC_DT_F32, flat, flat,
                                 -1, -1, {vc_n_fixed(tot[busiest]), dt}, false};
    b->lay_n[Z_GIPN] = tot[busiest];
    free(tot);
}

/* Resident besides the fp32 partition and its optimizer state: the flat
 * buffer of the model's dtype, and the frozen parameters as they are. */
static void zero2_resident(vc_build *b)
{
    uint8_t dt;
    int64_t flat = zero2_flat_numel(b, &dt);
    if (flat > 0) vc__alloc(b, vc_n_fixed(flat), (vc_dtype)dt, CAT_WEIGHT, -1);
    for (size_t p = 0; p < b->m->npar; p++)
        if (!b->m->par[p].trainable) vc__alloc(b, b->t[b->par_t[p]].n, (vc_dtype)b->t[b->par_t[p]].dt, CAT_WEIGHT, b->m->par[p].owner);
    for (int k = 0; k < 3; k++) b->lay_s[k] = -1;
    b->lay_n[Z_ELEMS] = b->lay_n[Z_XL] = b->lay_n[Z_PART] = 0;
}

/* reduce_ipg_grads: average_tensor -> allreduce_and_scatter ->
 * allreduce_bucket, which starts with tensor = self.flatten(bucket), a copy
 * of the bucket's contents freed on return; then the bucket's parameters of
 * this rank's partition are copied into grads_in_partition (allocated at the
 * first), the others' .grad cleared (clear_grad_attribute). An extra-large
 * parameter (more than the bucket) is reduced from its own gradient, which
 * goes then. */
static void zero2_reduce(vc_build *b, int32_t inst)
{
    uint8_t dt;
    zero2_flat_numel(b, &dt);
    if (b->lay_n[Z_ELEMS] == 0) return;
    int32_t c = vc__alloc(b, vc_n_fixed(b->lay_n[Z_ELEMS]), (vc_dtype)dt, CAT_TEMP, inst);
    vc__free(b, c, inst);
    if (b->lay_n[Z_PART] && b->lay_s[Z_GIP] < 0)
        b->lay_s[Z_GIP] = vc__alloc(b, vc_n_fixed(b->lay_n[Z_GIPN]), (vc_dtype)dt, CAT_GRAD, inst);
    if (b->lay_n[Z_XL]) {
        size_t x = (size_t)b->lay_n[Z_XL] - 1;
        if (b->pgrad[x] >= 0) vc__free(b, b->pgrad[x], inst);
        b->pgrad[x] = -1;
    }
    b->lay_n[Z_ELEMS] = b->lay_n[Z_XL] = b->lay_n[Z_PART] = 0;
}

/* The gradient hook (process_gradients -> reduce_independent_p_g_buckets_
 * and_remove_grads): the first of a backward makes the IPG buffer
 * (setup_buckets: torch.empty(reduce_bucket_size) of the model's dtype,
 * whatever the model's size); a parameter that would overflow the bucket
 * reduces it first; then the gradient is copied into the bucket and .grad
 * re-pointed at the copy (autograd's gradient goes), or, larger than the
 * bucket, kept to be reduced directly. */
static void zero2_grad(vc_build *b, size_t p, int32_t inst)
{
    if (!b->m->par[p].trainable || b->m->par[p].numel == 0) return;
    uint8_t dt;
    zero2_flat_numel(b, &dt);
    int64_t n = b->m->par[p].numel;
    if (b->lay_s[Z_IPG] < 0) b->lay_s[Z_IPG] = vc__alloc(b, vc_n_fixed(ZERO_BUCKET), (vc_dtype)dt, CAT_GRAD, inst);
    if (b->lay_n[Z_ELEMS] + n > ZERO_BUCKET) zero2_reduce(b, inst);
    if (n > ZERO_BUCKET) {
        b->lay_n[Z_XL] = (int64_t)p + 1;
    } else {
        vc__free(b, b->pgrad[p], inst);
        b->pgrad[p] = -1;
    }
    b->lay_n[Z_ELEMS] += n;
    b->lay_n[Z_PART] |= b->lay_mask[p];
}

/* End of backward: independent_gradient_partition_epilogue reduces what
 * the bucket holds and frees the IPG buffer (_release_ipg_buffers). The
 * step: flat_grad_partition = flatten(averaged_gradients) (the partition,
 * model dtype), .to(fp32) (a copy unless fp32 already; the flat one is
 * deleted), the 16-bit gradients freed (free_grad_in_param_list) before
 * _optimizer_step, the fp32 gradient dropped after it. */
static void zero2_hook(vc_build *b, int inst, vc_phase ph, bool begin)
{
    if (inst >= 0) return;
    if (ph == VC_PHASE_BACKWARD && !begin) {
        zero2_reduce(b, -1);
        if (b->lay_s[Z_IPG] >= 0) vc__free(b, b->lay_s[Z_IPG], -1);
        b->lay_s[Z_IPG] = -1;
    } else if (ph == VC_PHASE_OPTIMIZER && begin && b->lay_s[Z_GIP] >= 0) {
        uint8_t dt;
        zero2_flat_numel(b, &dt);
        int32_t g = vc__alloc(b, vc_n_fixed(b->flat[0].e.numel), (vc_dtype)dt, CAT_GRAD, -1);
        if (dt != VC_DT_F32) {
            int32_t g32 = vc__alloc(b, vc_n_fixed(b->flat[0].e.numel), VC_DT_F32, CAT_GRAD, -1);
            vc__free(b, g, -1);
            g = g32;
        }
        vc__free(b, b->lay_s[Z_GIP], -1);
        b->lay_s[Z_GIP] = -1;
        b->lay_s[Z_G32] = g;
    } else if (ph == VC_PHASE_OPTIMIZER && !begin && b->lay_s[Z_G32] >= 0) {
        vc__free(b, b->lay_s[Z_G32], -1);
        b->lay_s[Z_G32] = -1;
    }
}

static const vc_layout_row rows[VC_PARALLEL__N] = {
    [VC_PARALLEL_NONE] = {"single", NULL, NULL, NULL, NULL, NULL},
    [VC_PARALLEL_DDP] = {"ddp", NULL, ddp_buckets, NULL, NULL, NULL},
    [VC_PARALLEL_ZERO1_TORCH] = {"zero1-torch", NULL, ddp_buckets, zero1_owns, NULL, NULL},
    [VC_PARALLEL_FSDP] = {"fsdp", fsdp_full_shard, NULL, NULL, fsdp_flat, NULL},
    [VC_PARALLEL_FSDP_GRAD_OP] = {"shard-grad-op", fsdp_shard_grad_op, NULL, NULL, fsdp_flat, NULL},
    [VC_PARALLEL_FSDP_HYBRID] = {"hybrid", fsdp_full_shard, NULL, NULL, hybrid_flat, NULL},
    [VC_PARALLEL_ZERO2] = {"zero2", zero2_hook, zero2_resident, NULL, zero2_flat, zero2_grad},
    [VC_PARALLEL_ZERO3] = {"zero3", vc__zero3_hook, vc__zero3_resident, NULL, vc__zero3_flat, vc__zero3_grad},
    [VC_PARALLEL_FSDP2] = {"fsdp2", vc__fsdp2_hook, NULL, NULL, vc__fsdp2_flat, NULL, vc__fsdp2_compute},
};

/* --offload: which layouts can keep what on the CPU, and why not (DeepSpeed's
 * offload_optimizer for stages 1-3, offload_param for stage 3 only, config.py
 * DeepSpeedZeroConfig; FSDP1's CPUOffload(offload_params=True) moves the
 * parameters and with them their gradients and optimizer state, there is
 * no optimizer-only setting). NULL: modelled. */
static const char *offload_refusal(vc_parallel p, vc_offload f)
{
    switch (p) {
    case VC_PARALLEL_ZERO3: return NULL;
    case VC_PARALLEL_ZERO2:
        return f == VC_OFFLOAD_PARAMS ? "ZeRO stage 2 cannot offload parameters (offload_param is stage 3's): use zero3"
                                      : "offload_optimizer under zero2 is not modelled yet (docs/parallel.md)";
    case VC_PARALLEL_FSDP: case VC_PARALLEL_FSDP_GRAD_OP: case VC_PARALLEL_FSDP_HYBRID:
        return f == VC_OFFLOAD_OPTIMIZER ? "FSDP1 has no optimizer-only offload (CPUOffload moves the parameters, their "
                                           "gradients and optimizer state): --offload params"
                                         : "FSDP1's CPUOffload(offload_params=True) is not modelled yet (docs/parallel.md)";
    case VC_PARALLEL_FSDP2: return "FSDP2's CPUOffloadPolicy is not modelled yet (docs/parallel.md 2.5)";
    case VC_PARALLEL_NONE: return "offload needs a sharded --parallel layout (zero3)";
    default: return "this layout keeps everything on the GPU (no CPU offload): zero3 offloads";
    }
}

vc_status vc__layout_offload_check(const vc_options *o, vc_error *err)
{
    if ((unsigned)o->offload >= VC_OFFLOAD__N) return vc_set_error(err, VC_ERR_USAGE, "--offload", "invalid value");
    const char *why = o->offload == VC_OFFLOAD_NONE ? NULL : offload_refusal(o->parallel, o->offload);
    return why ? vc_set_error(err, VC_ERR_USAGE, "--offload", "%s with --parallel %s: %s", vc_offload_name(o->offload),
                              vc_parallel_name(o->parallel), why)
               : VC_OK;
}

const vc_layout_row *vc_layout_row_get(const vc_options *o)
{
    return !o ? &rows[VC_PARALLEL_NONE] : (unsigned)o->parallel < VC_PARALLEL__N ? &rows[o->parallel] : NULL;
}
