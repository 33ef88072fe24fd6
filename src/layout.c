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
 * BACKWARD_PRE, forward_prefetch=False, no mixed precision), sharding_strategy
 * FULL_SHARD or SHARD_GRAD_OP; --offload params: CPUOffload(offload_params=True)
 * (fsdp_units, fsdp_unshard, the end of backward in fsdp_hook).
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
    bool off = b->o.offload == VC_OFFLOAD_PARAMS;
    for (size_t u = 0; u < b->nflat; u++) {
        vc_flat_param *f = &b->flat[u];
        int64_t shard = shard_numel(f->numel, group);
        f->padded = shard * group; /* at most numel + group - 1: the loader keeps counts under 2^56 */
        f->held = (vc_tspec){vc_n_fixed(shard), f->dt};
        /* CPUOffload(offload_params=True): the shard (_local_shard, pinned), its
         * gradient (_cpu_grad, pinned) and the optimizer's state and step are the CPU's
         * (_flat_param.py FlatParamHandle.init_flat_param_attributes): none on the GPU */
        f->e.numel = off ? 0 : shard;
        if (off) f->e.trainable = false;
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
    /* CPUOffload: FlatParamHandle.pre_unshard first copies the CPU shard to the GPU
     * (flat_param_to(self.device): flat_param.data a new tensor of the shard's size);
     * _all_gather_flat_param reads it, and it goes once _use_unsharded_flat_param
     * points flat_param.data at the gathered storage (_flat_param.py, pytorch/pytorch@
     * 01caf79e047fd15e1f75ba3825f789130efa476a) */
    int32_t h2d = b->o.offload == VC_OFFLOAD_PARAMS ? vc__alloc(b, f->held.n, (vc_dtype)f->dt, CAT_TEMP, at) : -1;
    f->full = vc__alloc(b, vc_n_fixed(f->padded), (vc_dtype)f->dt, CAT_WEIGHT, at);
    if (f->full >= 0) b->s[f->full].transient = true;
    if (h2d >= 0) vc__free(b, h2d, at);
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
    int32_t shard = vc__alloc(b, f->held.n, (vc_dtype)f->dt, CAT_GRAD, at);
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
        /* CPUOffload: each post-backward copied its _saved_grad_shard into _cpu_grad (D2H,
         * nothing new on the GPU) but keeps it; _post_backward_final_callback ->
         * _finalize_params -> prepare_gradient_for_optim sets .grad = _cpu_grad and
         * deletes _saved_grad_shard: the GPU shards go at the end of backward
         * (_runtime_utils.py, pytorch/pytorch@00ae0bc91ac2c1718d1baa193d9d299e2b82776c) */
        for (size_t k = 0; k < b->nflat && b->o.offload == VC_OFFLOAD_PARAMS; k++) {
            if (b->flat[k].grad >= 0) vc__free(b, b->flat[k].grad, inst);
            b->flat[k].grad = -1;
        }
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
 * DeepSpeedZeroConfig), one parameter group; --offload optimizer:
 * offload_optimizer {device: cpu} (z2_off). Modelled from the source only
 * (DeepSpeed does not run here; docs/parallel.md 2.3); checked against
 * bench/accuracy/dist/offload_replica.py. */
#define ZERO_BUCKET INT64_C(500000000)
enum { Z_IPG, Z_GIP, Z_G32 };          /* lay_s: the IPG buffer, grads_in_partition, the step's fp32 gradient */
enum { Z_ELEMS, Z_XL, Z_PART, Z_GIPN, Z_BWDS, Z_RANK }; /* lay_n: bucket elements, extra-large parameter + 1,
                                                         * bucket holds a parameter of this rank's partition,
                                                         * grads_in_partition elements, backward passes ended
                                                         * (zero1), the rank modelled */

/* offload_optimizer (device cpu, pin_memory; --offload optimizer): the GPU
 * side of DeepSpeedZeroOptimizer's cpu_offload branches (stage_1_and_2.py at
 * deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641). __init__:
 * the fp32 partition single_partition_of_fp32_groups is made on self.device =
 * 'cpu' (pinned), with param_buffer_of_bit16_for_cpu_offload_groups (pinned
 * CPU), the CPU gradient partition (initialize_optimizer_states: torch.zeros on
 * self.device, pinned, kept as the fp32 partition's .grad), and so the wrapped
 * optimizer's state is on the CPU; temp_grad_buffer_for_cpu_offload is on the
 * CPU too, but temp_grad_buffer_for_gpu_offload = torch.zeros(
 * largest_param_numel) of the model's dtype is on the GPU for the whole run.
 * What stays on the GPU: the 16-bit flat buffer (bit16_groups_flat), the IPG
 * bucket (setup_buckets; contiguous_gradients is forced on), and what
 * copy_grads_in_partition makes per parameter of the partition (z2 below).
 * grads_in_partition is never made (copy_grads_in_partition returns first). */
typedef struct {
    int64_t *inpart;  /* each parameter's elements in this rank's partition (grad_position's num_elements) */
    int32_t *bucket;  /* bucket.params: the parameters in the IPG bucket */
    size_t nbucket;
    int32_t *norms;   /* norm_for_param_grads[p]: the float64 norm kept per parameter of the partition, -1 */
} z2_off;

static void z2_off_free(void *state)
{
    z2_off *z = state;
    if (z) free(z->inpart), free(z->bucket), free(z->norms);
    free(z);
}

#define Z2_F64 VC_DT_I64 /* float64 (the dtype table has none): int64, the same 8 bytes */

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
    z2_off *z = NULL;
    if (b->o.offload == VC_OFFLOAD_OPTIMIZER && b->train) {
        z = calloc(1, sizeof *z);
        b->lay_state = z;
        b->lay_free = z2_off_free;
        if (z) {
            z->inpart = calloc(m->npar + 1, sizeof *z->inpart);
            z->bucket = malloc((m->npar + 1) * sizeof *z->bucket);
            z->norms = malloc((m->npar + 1) * sizeof *z->norms);
        }
        if (!z || !z->inpart || !z->bucket || !z->norms) { free(tot); b->st = VC_ERR_NOMEM; return; }
        for (size_t p = 0; p <= m->npar; p++) z->norms[p] = -1;
    }
    off = 0;
    for (size_t p = 0; p < m->npar && part > 0; p++) {
        if (!m->par[p].trainable || m->par[p].numel == 0) continue;
        int64_t lo = busiest * part, hi = lo + part, end = off + m->par[p].numel;
        b->lay_mask[p] = off / part <= busiest && (end - 1) / part >= busiest;
        if (z && b->lay_mask[p]) z->inpart[p] = (end < hi ? end : hi) - (off > lo ? off : lo);
        off = end;
    }
    b->nflat = 1; /* inference builds no ZeRO optimizer: no partition */
    int64_t here = b->train && !z ? part : 0; /* offload: the fp32 partition and its state on the CPU */
    b->flat[0] = (vc_flat_param){{here, here > 0, 0, 0, -1, NULL, NULL}, VC_DT_F32, flat, flat,
                                 -1, -1, {vc_n_fixed(z ? 0 : tot[busiest]), dt}, false};
    b->lay_n[Z_GIPN] = tot[busiest];
    b->lay_n[Z_RANK] = busiest;
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
    b->lay_n[Z_ELEMS] = b->lay_n[Z_XL] = b->lay_n[Z_PART] = b->lay_n[Z_BWDS] = 0;
    int64_t largest = 0; /* offload: temp_grad_buffer_for_gpu_offload, the largest parameter of bit16_groups */
    for (size_t p = 0; p < b->m->npar && b->lay_state; p++)
        if (b->m->par[p].trainable && b->m->par[p].numel > largest) largest = b->m->par[p].numel;
    if (largest > 0) vc__alloc(b, vc_n_fixed(largest), (vc_dtype)dt, CAT_GRAD, -1);
}

/* offload: copy_grads_in_partition's cpu_offload branch for a parameter of
 * the partition, at the accumulation boundary (one micro-step: micro_step_id
 * 0, so async_accumulate_grad_in_cpu_via_gpu does not run): 
 * set_norm_for_param_grad_in_gpu, the partition's part .double().norm(2) (a
 * float64 copy, and the norm kept in norm_for_param_grads until the step);
 * update_offload_overflow_tracker -> _has_inf_or_nan(grad) on the whole
 * gradient: x.float() (a copy unless fp32), isnan, isinf, logical_or (bool
 * each), .float(), .max(), all gone when it returns; then
 * async_inplace_copy_grad_to_fp32_buffer_from_gpu: the part .to(float32) (a
 * copy unless fp32) copied into the pinned CPU fp32 gradient, and
 * clear_grad_attribute. */
static void z2_off_copy(vc_build *b, z2_off *z, int32_t p, uint8_t dt, int32_t inst)
{
    int64_t n = b->m->par[p].numel, part = z->inpart[p];
    int32_t d = vc__alloc(b, vc_n_fixed(part), Z2_F64, CAT_TEMP, inst), old = z->norms[p];
    z->norms[p] = vc__alloc(b, vc_n_fixed(1), Z2_F64, CAT_TEMP, inst);
    if (old >= 0) vc__free(b, old, inst); /* the dict entry replaced (another micro-batch's backward) */
    vc__free(b, d, inst);
    int32_t t[6], nt = 0;
    if (dt != VC_DT_F32) t[nt++] = vc__alloc(b, vc_n_fixed(n), VC_DT_F32, CAT_TEMP, inst);
    for (int k = 0; k < 3; k++) t[nt++] = vc__alloc(b, vc_n_fixed(n), VC_DT_BOOL, CAT_TEMP, inst);
    t[nt++] = vc__alloc(b, vc_n_fixed(n), VC_DT_F32, CAT_TEMP, inst);
    t[nt++] = vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, inst);
    while (nt > 0) vc__free(b, t[--nt], inst);
    if (dt != VC_DT_F32) vc__free(b, vc__alloc(b, vc_n_fixed(part), VC_DT_F32, CAT_TEMP, inst), inst);
}

/* reduce_ipg_grads: average_tensor -> allreduce_and_scatter ->
 * allreduce_bucket, which starts with tensor = self.flatten(bucket), a copy
 * of the bucket's contents freed on return; then the bucket's parameters of
 * this rank's partition are copied into grads_in_partition (allocated at the
 * first), the others' .grad cleared (clear_grad_attribute). An extra-large
 * parameter (more than the bucket) is reduced from its own gradient, which
 * goes then. Stage 1 (`stage1`, partition_gradients False) clears nothing:
 * reduce_ipg_grads' `else:  # zero stage 1` branch only copies this rank's
 * parameters (copy_grads_in_partition), so an extra-large gradient of another
 * partition stays until the epilogue's _clear_param_grad_only (zero1_hook). */
static void zero2_reduce(vc_build *b, int32_t inst, bool stage1)
{
    uint8_t dt;
    zero2_flat_numel(b, &dt);
    if (b->lay_n[Z_ELEMS] == 0) return;
    int32_t c = vc__alloc(b, vc_n_fixed(b->lay_n[Z_ELEMS]), (vc_dtype)dt, CAT_TEMP, inst);
    vc__free(b, c, inst);
    z2_off *z = b->lay_state;
    for (size_t k = 0; z && k < z->nbucket; k++)
        if (b->lay_mask[z->bucket[k]]) z2_off_copy(b, z, z->bucket[k], dt, inst);
    if (z) z->nbucket = 0;
    else if (b->lay_n[Z_PART] && b->lay_s[Z_GIP] < 0)
        b->lay_s[Z_GIP] = vc__alloc(b, vc_n_fixed(b->lay_n[Z_GIPN]), (vc_dtype)dt, CAT_GRAD, inst);
    if (b->lay_n[Z_XL] && (!stage1 || b->lay_mask[b->lay_n[Z_XL] - 1])) {
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
static void zero_setup_buckets(vc_build *b, int32_t inst)
{
    uint8_t dt;
    zero2_flat_numel(b, &dt);
    if (b->lay_s[Z_IPG] < 0) b->lay_s[Z_IPG] = vc__alloc(b, vc_n_fixed(ZERO_BUCKET), (vc_dtype)dt, CAT_GRAD, inst);
}

static void zero_bucket_add(vc_build *b, size_t p, int32_t inst, bool stage1)
{
    int64_t n = b->m->par[p].numel;
    if (b->lay_n[Z_ELEMS] + n > ZERO_BUCKET) zero2_reduce(b, inst, stage1);
    if (n > ZERO_BUCKET) {
        b->lay_n[Z_XL] = (int64_t)p + 1;
    } else {
        vc__free(b, b->pgrad[p], inst);
        b->pgrad[p] = -1;
    }
    b->lay_n[Z_ELEMS] += n;
    b->lay_n[Z_PART] |= b->lay_mask[p];
    z2_off *z = b->lay_state;
    if (z) z->bucket[z->nbucket++] = (int32_t)p;
}

static void zero2_grad(vc_build *b, size_t p, int32_t inst)
{
    if (!b->m->par[p].trainable || b->m->par[p].numel == 0) return;
    zero_setup_buckets(b, inst);
    zero_bucket_add(b, p, inst, false);
}

static void zero_epilogue(vc_build *b, bool stage1)
{
    zero2_reduce(b, -1, stage1);
    if (b->lay_s[Z_IPG] >= 0) vc__free(b, b->lay_s[Z_IPG], -1);
    b->lay_s[Z_IPG] = -1;
}

/* The step's scaled_global_norm -> get_grad_norm_direct over averaged_gradients
 * (the partition's slice of each of its parameters' gradients): per slice
 * torch.linalg.vector_norm(g.data.double()), a float64 copy of the slice gone
 * once its norm (a float64 scalar, kept in all_norms) is taken; then
 * torch.stack(all_norms).square().sum().float(). The scalar tail
 * (pow, mask_nan_or_inf_with_val_inplace, the norm of the group norms: a few
 * one-element tensors) is left out. */
static void zero_grad_norm(vc_build *b)
{
    const vc_model *m = b->m;
    int64_t part = b->flat[0].e.numel, lo = b->lay_n[Z_RANK] * part, hi = lo + part, off = 0, k = 0;
    int32_t *norms = malloc((m->npar + 1) * sizeof *norms);
    if (!norms) { b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p < m->npar; p++) {
        if (!m->par[p].trainable || m->par[p].numel == 0) continue;
        int64_t end = off + m->par[p].numel, n = (end < hi ? end : hi) - (off > lo ? off : lo);
        off = end;
        if (!b->lay_mask[p] || n <= 0) continue;
        vc__free(b, vc__alloc(b, vc_n_fixed(n), Z2_F64, CAT_TEMP, -1), -1);
        norms[k++] = vc__alloc(b, vc_n_fixed(1), Z2_F64, CAT_TEMP, -1);
    }
    if (k > 0) {
        int32_t st = vc__alloc(b, vc_n_fixed(k), Z2_F64, CAT_TEMP, -1);
        int32_t sq = vc__alloc(b, vc_n_fixed(k), Z2_F64, CAT_TEMP, -1);
        vc__free(b, st, -1);
        int32_t sum = vc__alloc(b, vc_n_fixed(1), Z2_F64, CAT_TEMP, -1);
        vc__free(b, sq, -1);
        vc__free(b, vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1), -1);
        vc__free(b, sum, -1);
    }
    while (k > 0) vc__free(b, norms[--k], -1);
    free(norms);
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
        zero_epilogue(b, false);
    } else if (ph == VC_PHASE_OPTIMIZER && begin && b->lay_s[Z_GIP] >= 0) {
        uint8_t dt;
        zero2_flat_numel(b, &dt);
        zero_grad_norm(b);
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
    z2_off *z = b->lay_state;
    if (!z || ph != VC_PHASE_OPTIMIZER) return;
    /* offload's step: complete_grad_norm_calculation_for_cpu_offload sums the kept
     * norms into total_dev_norm = FloatTensor([total]) on the GPU (gone after
     * .item()); the wrapped optimizer steps the CPU partition; the 16-bit result is
     * copied into the pinned bit16 buffer, then into this rank's part of the GPU
     * flat buffer in place; reset_cpu_buffers drops the norms. */
    if (begin) vc__free(b, vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1), -1);
    else {
        for (size_t p = 0; p < b->m->npar; p++) {
            if (z->norms[p] >= 0) vc__free(b, z->norms[p], -1);
            z->norms[p] = -1;
        }
    }
}

/* ---- zero1: DeepSpeed ZeRO stage 1 (docs/parallel.md 1.10), the same
 * DeepSpeedZeroOptimizer with partition_grads=False (engine.py _configure_zero_optimizer: partition_grads=
 * zero_stage == ZeroStageEnum.gradients; deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641)
 * and the same defaults as zero2. Identical to zero2 (so its helpers): __init__'s
 * flat buffer, fp32 partition and the wrapped optimizer's state on it, the
 * partition and its grads_in_partition, the step (stage_1_and_2.py step: the
 * non-offload branch and the cpu_offload one do not look at
 * partition_gradients), and --offload optimizer (z2_off: the cpu_offload
 * branches of __init__ and copy_grads_in_partition are stage-independent).
 * What differs is the backward:
 * - the gradient hooks are installed all the same (__init__:
 *   create_gradient_handling_hooks `if partition_gradients or overlap_comm or
 *   use_grad_accum_attribute or contiguous_gradients`, the last True by
 *   default), and the first of a backward makes the IPG buffer (process_gradients
 *   -> setup_buckets, whatever the stage), but process_gradients reduces only
 *   `if self.partition_gradients or self.overlap_comm`: every gradient stays
 *   a full .grad of the model's dtype, as in plain PyTorch (zero1_grad);
 * - the reduction runs after backward, at the accumulation boundary only
 *   (engine.py _backward_epilogue -> allreduce_gradients: stage
 *   ZeroStageEnum.optimizer_states -> optimizer.reduce_gradients): for every
 *   parameter in the group's order (bit16_groups: the model's parameter
 *   order, round_robin_gradients off) with a gradient,
 *   reduce_ready_partitions_and_remove_grads -> reduce_independent_p_g_buckets_
 *   and_remove_grads, zero2's bucket step (zero_bucket_add: the gradient copied
 *   into the IPG buffer, its own storage gone); then
 *   overlapping_partition_gradients_reduce_epilogue ->
 *   independent_gradient_partition_epilogue as zero2's, whose
 *   _clear_param_grad_only drops what other partitions' extra-large
 *   gradients still hold (zero1_hook). setup_buckets' ready_for_gradients is
 *   reset only by that epilogue (_release_ipg_buffers), so under gradient
 *   accumulation the IPG buffer made in the first micro-batch's backward
 *   stays to the boundary's. */
static void zero1_grad(vc_build *b, size_t p, int32_t inst)
{
    if (b->m->par[p].trainable && b->m->par[p].numel > 0) zero_setup_buckets(b, inst);
}

static void zero1_hook(vc_build *b, int inst, vc_phase ph, bool begin)
{
    if (inst >= 0) return;
    if (ph != VC_PHASE_BACKWARD || begin) {
        zero2_hook(b, inst, ph, begin); /* the step: zero2's */
        return;
    }
    /* the engine runs two backward passes under accumulation or a pipeline
     * stage's micro-batches (autograd.c vc__execute), the second the boundary's */
    if (++b->lay_n[Z_BWDS] < (b->o.accumulate > 1 || b->m->stage.micro_batches > 1 ? 2 : 1)) return;
    /* a pipeline stage (DeepSpeed's PipelineEngine, --pp): reduce_gradients(pipeline_parallel=True)
     * first appends a second IPG buffer, torch.empty(reduce_bucket_size) of the bucket's dtype ("with PP
     * we must create ipg buffer, since backward is handled outside zero"), and resets bucket.index to 0:
     * the reduction uses setup_buckets' first one; _release_ipg_buffers' bucket.buffer.clear() drops both */
    int32_t pipe_ipg = -1;
    if (b->m->stage.on) {
        uint8_t dt;
        zero2_flat_numel(b, &dt);
        pipe_ipg = vc__alloc(b, vc_n_fixed(ZERO_BUCKET), (vc_dtype)dt, CAT_GRAD, -1);
    }
    for (size_t p = 0; p < b->m->npar; p++)
        if (b->m->par[p].trainable && b->m->par[p].numel > 0 && b->pgrad[p] >= 0) zero_bucket_add(b, p, -1, true);
    zero_epilogue(b, true);
    if (pipe_ipg >= 0) vc__free(b, pipe_ipg, -1);
    for (size_t p = 0; p < b->m->npar; p++) { /* _clear_param_grad_only */
        if (!b->m->par[p].trainable || b->pgrad[p] < 0) continue;
        vc__free(b, b->pgrad[p], -1);
        b->pgrad[p] = -1;
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
    [VC_PARALLEL_FSDP2] = {"fsdp2", vc__fsdp2_hook, NULL, NULL, vc__fsdp2_flat, NULL, vc__fsdp2_compute, true},
    [VC_PARALLEL_ZERO1] = {"zero1", zero1_hook, zero2_resident, NULL, zero2_flat, zero1_grad},
};

/* --offload: which layouts can keep what on the CPU, and why not (DeepSpeed's
 * offload_optimizer for stages 1-3, offload_param for stage 3 only, config.py
 * DeepSpeedZeroConfig; FSDP1's CPUOffload(offload_params=True) moves the
 * parameters and with them their gradients and optimizer state, there is
 * no optimizer-only setting). NULL: modelled (zero1 and zero2 optimizer, zero3 both,
 * fsdp / shard-grad-op / hybrid params). */
static const char *offload_refusal(vc_parallel p, vc_offload f)
{
    switch (p) {
    case VC_PARALLEL_ZERO3: return NULL;
    case VC_PARALLEL_ZERO2:
        return f == VC_OFFLOAD_PARAMS ? "ZeRO stage 2 cannot offload parameters (offload_param is stage 3's): use zero3"
                                      : NULL;
    case VC_PARALLEL_ZERO1:
        return f == VC_OFFLOAD_PARAMS ? "ZeRO stage 1 cannot offload parameters (offload_param is stage 3's): use zero3"
                                      : NULL;
    case VC_PARALLEL_FSDP: case VC_PARALLEL_FSDP_GRAD_OP: case VC_PARALLEL_FSDP_HYBRID:
        return f == VC_OFFLOAD_OPTIMIZER ? "FSDP1 has no optimizer-only offload (CPUOffload moves the parameters, their "
                                           "gradients and optimizer state): --offload params"
                                         : NULL;
    case VC_PARALLEL_FSDP2:
        return f == VC_OFFLOAD_OPTIMIZER ? "FSDP2 has no optimizer-only offload (CPUOffloadPolicy moves the sharded "
                                           "parameters, their gradients and the optimizer step): --offload params"
                                         : NULL;
    case VC_PARALLEL_NONE: return "offload needs a sharded --parallel layout (zero1, zero2, zero3, fsdp)";
    default: return "this layout keeps everything on the GPU (no CPU offload): zero1, zero2, zero3 and fsdp offload";
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
