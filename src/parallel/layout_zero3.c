/*
 * layout_zero3.c — the zero3 layout (its descriptor ends the file):
 * DeepSpeed ZeRO stage 3 with its defaults, from its source only (DeepSpeed
 * does not run here; docs/parallel.md 1.9). Sources, microsoft/DeepSpeed@
 * 38327e07f6cd39b63418f60cedd1651b0be3e7c3, deepspeed/runtime/zero/:
 * stage3.py (DeepSpeedZeroOptimizer_Stage3), partition_parameters.py (Init,
 * all_gather_coalesced), partitioned_param_coordinator.py
 * (PartitionedParameterCoordinator), parameter_offload.py
 * (DeepSpeedZeRoOffload), config.py (the defaults), runtime/comm/
 * coalesced_collectives.py (reduce_scatter_coalesced), runtime/engine.py
 * (get_data_types: under ZeRO the gradient accumulation dtype is the model's).
 *
 * Defaults (config.py DeepSpeedZeroConfig): contiguous_gradients,
 * reduce_scatter, reduce_bucket_size 5e8, stage3_prefetch_bucket_size 5e7,
 * stage3_max_live_parameters 1e9, stage3_max_reuse_distance 1e9,
 * stage3_param_persistence_threshold 1e5, model_persistence_threshold
 * sys.maxsize, sub_group_size 1e9, no offload, communication dtype = the
 * model's (engine.py communication_data_type).
 *
 * Every rank holds the same partition sizes (each parameter is padded to a
 * multiple of the world size and split evenly), so rank 0 stands for all.
 *
 * --offload-device nvme (ZeRO-Infinity), from deepspeedai/DeepSpeed@edaa7221:
 * which partitions stay on NVMe (z3_nvme), the swap buffers on the GPU with
 * --nvme-gds (zero3_resident), the gathers' swap-ins and the prefetch that
 * stops at a partition on NVMe (z3_swap_in, z3_prefetch, z3_nvme_prefetch);
 * docs/parallel.md 1.9, tests/test_nvme.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define Z3_BUCKET INT64_C(500000000)   /* reduce_bucket_size */
#define Z3_PREFETCH INT64_C(50000000)  /* stage3_prefetch_bucket_size */
#define Z3_MAX_LIVE INT64_C(1000000000) /* stage3_max_live_parameters */
#define Z3_REUSE INT64_C(1000000000)   /* stage3_max_reuse_distance */
#define Z3_PERSIST INT64_C(100000)     /* stage3_param_persistence_threshold */
#define Z3_SUBGROUP INT64_C(1000000000) /* sub_group_size */
#define Z3_NORM_PIECE INT64_C(250000000) /* _constant_buffered_norm2's buffer_size */
#define Z3_F64 VC_DT_I64 /* float64 (the dtype table has none): int64, the same 8 bytes */
/* ZeRO-Infinity (--offload-device nvme): zero/offload_config.py DeepSpeedZeroOffloadParamConfig's
 * defaults buffer_count 5, buffer_size 1e8, max_in_cpu 1e9; swap_tensor/utils.py MIN_AIO_BYTES
 * (1 MiB) and AIO_ALIGNED_BYTES (1024), constants.py's aio block_size 1 MiB, intra_op_parallelism 1 */
#define Z3_NVME_BUFFERS 5
#define Z3_NVME_BUFFER INT64_C(100000000)
#define Z3_NVME_IN_CPU INT64_C(1000000000)
#define Z3_NVME_MIN_BYTES INT64_C(1048576)
#define Z3_NVME_ALIGN_BYTES 1024

enum { Z3_NOT_AVAILABLE, Z3_INFLIGHT, Z3_AVAILABLE }; /* ZeroParamStatus */

typedef struct {
    int32_t flat;  /* the coalesced all-gather's flat output, -1 none */
    int32_t left;  /* its parameters still in the in-flight registry */
    bool multi, done;
} z3_handle;

typedef struct {
    int64_t world;
    uint8_t dt;          /* the trainable parameters' dtype (the model's: DeepSpeed's self.dtype) */
    int64_t part;        /* elements of this rank's partitions of the trainable parameters */
    int64_t ntrain, npersist;
    /* per parameter */
    int8_t *status;
    bool *persist, *chosen;
    int32_t *stor, *handle;
    int64_t *recent;     /* most_recent_step_id_param_fetched_for */
    /* parameters by owning instance: plist[pstart[i] .. pstart[i + 1]) */
    int32_t *pstart, *plist;
    /* the module trace (instances holding parameters, forward then backward) and
     * the parameter trace made from it (__param_order: parameter, step) */
    int32_t *trace, *qpar, *qstep;
    int64_t *tnumel;     /* each trace entry's parameter elements */
    size_t ntrace, nq, qhead;
    int64_t step, avail; /* __step_id, __n_available_params */
    int64_t pos;         /* the trace position of the module last fetched, -1 not in the trace */
    z3_handle *h;
    size_t nh, ch;
    int32_t *bucket;     /* params_in_ipg_bucket */
    size_t nbucket;
    int64_t elems;       /* elements_in_ipg_bucket */
    int32_t g32;         /* the step's fp32 gradient partition (of the sub-group being stepped) */
    int32_t *gcnt;       /* the trainable parameters of each sub-group */
    bool off_opt, off_par; /* offload_optimizer, offload_param (device cpu): --offload */
    bool gds;            /* offload_param device nvme with aio use_gds: the swap buffers on the GPU */
    bool *on_nvme;       /* the partition's final_location is nvme (offload_param device nvme) */
    bool *held;          /* ... and it holds a swap buffer (swapped in: INFLIGHT or AVAILABLE) */
    int64_t nheld;       /* swap buffers held, of Z3_NVME_BUFFERS */
    int32_t *psg;        /* offload_optimizer device nvme: each trainable parameter's sub-group, -1 none */
    int32_t *kept;       /* ... its fp32 gradient kept on the GPU until that sub-group's step, -1 none */
} z3_state;

/* The gradient of each parameter is padded to world x ceil(numel / world)
 * (Init._aligned_size / _padding_size); each rank holds ceil(numel / world). */
static int64_t z3_part(int64_t n, int64_t world) { return n / world + (n % world != 0); }

static z3_state *Z(vc_build *b) { return b->lay_state; }

static void zero3_free(void *state)
{
    z3_state *z = state;
    if (!z) return;
    free(z->status); free(z->persist); free(z->chosen); free(z->stor); free(z->handle); free(z->recent);
    free(z->pstart); free(z->plist); free(z->trace); free(z->qpar); free(z->qstep); free(z->tnumel);
    free(z->h); free(z->bucket); free(z->gcnt); free(z->on_nvme); free(z->held); free(z->psg); free(z->kept); free(z);
}

/* The module trace DeepSpeed records in its first steps (record_module at
 * every sub-module's pre-forward and pre-backward hook, with or without
 * parameters) and replays after (is_complete_trace): here the layer
 * instances as the recorded ops run them, forward, then backward in reverse
 * op order (the ops that need a gradient). A container module of PyTorch
 * (a decoder layer, an attention block) has no instance of its own: its
 * hooks' fetches, which prefetch too, are not in the trace. */
static bool z3_trace(vc_build *b, z3_state *z)
{
    size_t cap = 2 * b->nop + 2, n = 0;
    z->trace = malloc(cap * sizeof *z->trace);
    if (!z->trace) return false;
    for (int pass = 0; pass < 2; pass++) {
        int32_t last = -1;
        for (size_t j = 0; j < b->nop; j++) {
            size_t k = pass ? b->nop - 1 - j : j;
            int32_t i = b->op[k].inst;
            if (pass && !b->op[k].rg) continue;
            if (i < 0 || i == last) continue;
            last = i;
            z->trace[n++] = i;
        }
    }
    z->ntrace = n;
    z->tnumel = calloc(n + 1, sizeof *z->tnumel);
    z->qpar = malloc((b->m->npar * 2 + 1) * sizeof *z->qpar);
    z->qstep = malloc((b->m->npar * 2 + 1) * sizeof *z->qstep);
    size_t nq = 0, qcap = b->m->npar * 2 + 1;
    if (!z->tnumel || !z->qpar || !z->qstep) return false;
    for (size_t t = 0; t < n; t++) { /* record_parameters: a module's own parameters, by ds_id */
        for (int32_t j = z->pstart[z->trace[t]]; j < z->pstart[z->trace[t] + 1]; j++) {
            int32_t p = z->plist[j];
            z->tnumel[t] += b->m->par[p].numel;
            if (nq == qcap) {
                qcap *= 2;
                int32_t *a = realloc(z->qpar, qcap * sizeof *a), *s = a ? realloc(z->qstep, qcap * sizeof *s) : NULL;
                if (a) z->qpar = a;
                if (!a || !s) return false;
                z->qstep = s;
            }
            z->qpar[nq] = p;
            z->qstep[nq++] = (int32_t)t;
        }
    }
    z->nq = nq;
    return true;
}

/* The optimizer's flat parameters: this rank's fp32 partition of each
 * sub-group (_create_fp16_sub_groups: the trainable parameters in order, a
 * sub-group closed once its partitions hold sub_group_size = 1e9 elements or
 * more, and at the last; _create_fp32_partitions: each sub-group's
 * fp16_partitioned_groups_flat.clone().float(), a tensor of its own), each
 * stepped by an optimizer.step() call of its own (step: one sub-group after
 * another). At most one per layer instance (the room there is): a model with
 * more sub-groups than instances has its last ones merged. */
static void z3_subgroups(vc_build *b, z3_state *z)
{
    const vc_model *m = b->m;
    size_t g = 0, cnt = 0, left = (size_t)z->ntrain;
    int64_t local = 0;
    z->gcnt = calloc(m->ninst + 2, sizeof *z->gcnt);
    if (!z->gcnt) { b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p < m->npar && b->train; p++) {
        if (!m->par[p].trainable) continue;
        local += z3_part(m->par[p].numel, z->world);
        cnt++;
        bool last = --left == 0;
        if (!last && (local < Z3_SUBGROUP || g == m->ninst)) continue;
        /* offload_optimizer: the fp32 partition, its state and the step on the CPU */
        int64_t here = z->off_opt ? 0 : local;
        b->flat[g] = (vc_flat_param){{here, here > 0, 0, 0, -1, NULL, NULL}, VC_DT_F32, local, local, -1, -1,
                                     {vc_n_fixed(0), z->dt, 0}, true};
        z->gcnt[g++] = (int32_t)cnt;
        local = 0, cnt = 0;
    }
    b->nflat = g ? g : 1; /* inference builds no ZeRO optimizer: no fp32 partition */
    if (!g) b->flat[0] = (vc_flat_param){{0, false, 0, 0, -1, NULL, NULL}, VC_DT_F32, 0, 0, -1, -1, {vc_n_fixed(0), z->dt, 0}, false};
}

/* offload_param {device: nvme} (deepspeedai/DeepSpeed@edaa7221). Init._partition_param
 * gives a partition of at least MIN_AIO_BYTES (AsyncPartitionedParameterSwapper.
 * swappable_tensor) a swap buffer (get_buffer, which asserts numel <= buffer_size:
 * refused here) and writes it to NVMe (final_location nvme); a smaller one goes to
 * pinned CPU memory, a persistent one stays on the GPU. Then stage3.py
 * _create_fp16_partitions_with_defragmentation -> _create_param_groups_fp16_flat_cpu_memory:
 * one pinned CPU buffer of min(the group's partition elements, max_in_cpu), and
 * _move_to_flat_buffer brings each sub-group that fits in it (flat_offset + its elements
 * <= the buffer) back from NVMe "permanently to CPU" (final_location 'not-nvme'). The
 * trainable parameters are one group and the sub-groups z3_subgroups' (one flat per
 * sub-group); a frozen parameter stays where Init put it. */
static void z3_nvme(vc_build *b, z3_state *z)
{
    const vc_model *m = b->m;
    z->on_nvme = calloc(m->npar + 1, sizeof *z->on_nvme);
    z->held = calloc(m->npar + 1, sizeof *z->held);
    if (!z->on_nvme || !z->held) { b->st = VC_ERR_NOMEM; return; }
    z->gds = b->o.nvme_gds != 0;
    int64_t cpu = z->part < Z3_NVME_IN_CPU ? z->part : Z3_NVME_IN_CPU, offset = 0;
    size_t g = 0, k = 0;
    bool fits = false;
    for (size_t p = 0; p < m->npar; p++) {
        int64_t part = z3_part(m->par[p].numel, z->world);
        bool swappable = part * (int64_t)vc_dtype_size((vc_dtype)b->t[b->par_t[p]].dt) >= Z3_NVME_MIN_BYTES;
        if (swappable && part > Z3_NVME_BUFFER) {
            b->st = VC_ERR_USAGE;
            b->why_opt = O("offload_device");
            snprintf(b->why, sizeof b->why, "nvme: a parameter's partition of %lld elements is larger than "
                     "offload_param's buffer_size (1e8 elements; DeepSpeed's get_buffer asserts): use more GPUs",
                     (long long)part);
            return;
        }
        z->on_nvme[p] = swappable;
        if (!m->par[p].trainable || !b->train || g >= b->nflat) continue; /* no optimizer: no CPU flat buffer */
        if (k == 0) { /* a sub-group starts here: does it fit in the CPU buffer? */
            fits = offset + b->flat[g].numel <= cpu;
            offset += b->flat[g].numel;
        }
        if (fits) z->on_nvme[p] = false;
        if (++k == (size_t)z->gcnt[g]) k = 0, g++;
    }
}

/* offload_optimizer {device: nvme}: which sub-groups the optimizer swapper swaps
 * (stage3.py _swappable_optimizer_subgroup: is_swappable_tensor(numel=
 * fp16_partitioned_groups_flat_numel[i]), at least MIN_AIO_BYTES of fp32). */
static void z3_nvme_opt(vc_build *b, z3_state *z)
{
    const vc_model *m = b->m;
    z->psg = malloc((m->npar + 1) * sizeof *z->psg);
    z->kept = malloc((m->npar + 1) * sizeof *z->kept);
    if (!z->psg || !z->kept) { b->st = VC_ERR_NOMEM; return; }
    size_t g = 0, k = 0;
    for (size_t p = 0; p < m->npar; p++) {
        z->psg[p] = z->kept[p] = -1;
        if (!m->par[p].trainable || g >= b->nflat) continue;
        if (b->flat[g].numel * 4 >= Z3_NVME_MIN_BYTES) z->psg[p] = (int32_t)g;
        if (++k == (size_t)z->gcnt[g]) k = 0, g++;
    }
}

/* Sizes, persistence, the trace and the sub-groups. */
static void zero3_flat(vc_build *b)
{
    const vc_model *m = b->m;
    size_t np = m->npar + 1, ni = m->ninst + 2;
    z3_state *z = calloc(1, sizeof *z);
    b->lay_state = z;
    b->lay_free = zero3_free;
    if (!z) { b->st = VC_ERR_NOMEM; return; }
    z->world = vc_dp_world(&b->o); /* the data-parallel ranks: gpus / (tp x pp) */
    z->dt = VC_DT_F32;
    z->off_opt = b->o.offload != VC_OFFLOAD_NONE;
    z->off_par = b->o.offload == VC_OFFLOAD_PARAMS;
    z->status = calloc(np, 1);
    z->persist = calloc(np, sizeof *z->persist);
    z->chosen = calloc(np, sizeof *z->chosen);
    z->stor = malloc(np * sizeof *z->stor);
    z->handle = malloc(np * sizeof *z->handle);
    z->recent = malloc(np * sizeof *z->recent);
    z->bucket = malloc(4 * np * sizeof *z->bucket); /* the bucket's entries, then two scratch lists (the last 2 x np) */
    z->pstart = calloc(ni, sizeof *z->pstart);
    z->plist = malloc(np * sizeof *z->plist);
    if (!z->status || !z->persist || !z->chosen || !z->stor || !z->handle || !z->recent || !z->bucket || !z->pstart ||
        !z->plist) { b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p < m->npar; p++) {
        const vc_param_entry *e = &m->par[p];
        z->stor[p] = z->handle[p] = -1;
        z->recent[p] = INT64_MIN;
        if (e->owner >= 0) z->pstart[e->owner + 1]++;
        if (e->trainable) z->part += z3_part(e->numel, z->world), z->dt = b->t[b->par_t[p]].dt, z->ntrain++;
        /* parameter_offload.py mark_persistent_parameters: ds_numel <= the threshold,
         * while the running total stays within model_persistence_threshold (sys.maxsize) */
        if (e->numel <= Z3_PERSIST) z->persist[p] = true, z->npersist++;
    }
    for (size_t i = 0; i < m->ninst; i++) z->pstart[i + 1] += z->pstart[i];
    int32_t *fill = calloc(ni, sizeof *fill);
    if (!fill) { b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p < m->npar; p++)
        if (m->par[p].owner >= 0) z->plist[z->pstart[m->par[p].owner] + fill[m->par[p].owner]++] = (int32_t)p;
    free(fill);
    if (!z3_trace(b, z)) { b->st = VC_ERR_NOMEM; return; }
    z->g32 = -1;
    z->pos = -1;
    z3_subgroups(b, z);
    if (!b->st && z->off_par && b->o.offload_device == VC_OFFLOAD_DEVICE_NVME) z3_nvme(b, z);
    if (!b->st && z->off_opt && b->train && b->o.offload_device == VC_OFFLOAD_DEVICE_NVME) z3_nvme_opt(b, z);
}

static int32_t z3_alloc_w(vc_build *b, int64_t n, uint8_t dt, int32_t inst, bool transient)
{
    int32_t s = vc__alloc(b, vc_n_fixed(n), (vc_dtype)dt, CAT_WEIGHT, inst);
    if (s >= 0) b->s[s].transient = transient;
    return s;
}

/* The persistent parameters gathered whole (_post_step: persistent_parameters[0]
 * .all_gather(...) -> Init._all_gather -> _allgather_params_coalesced: one
 * world x partition tensor per parameter, param.data a view of it; a single
 * one goes through _allgather_params, which copies it out into a tensor of
 * its own size). At world size 1 no gather (num_partitions == 1). */
static void z3_gather_persistent(vc_build *b, bool transient)
{
    z3_state *z = Z(b);
    int32_t *copy = z->bucket + 2 * (b->m->npar + 1), nc = 0;
    if (z->world == 1) return;
    for (size_t p = 0; p < b->m->npar && z->off_par; p++) /* offload_param: local_tensors, ds_tensor.to(device) */
        if (z->persist[p] && b->m->par[p].numel > 0 && z->npersist > 1)
            copy[nc++] = vc__alloc(b, vc_n_fixed(z3_part(b->m->par[p].numel, z->world)), (vc_dtype)b->t[b->par_t[p]].dt,
                                   CAT_TEMP, -1);
    for (size_t p = 0; p < b->m->npar; p++) {
        if (!z->persist[p] || b->m->par[p].numel == 0) continue;
        int64_t n = z->npersist == 1 ? b->m->par[p].numel : z3_part(b->m->par[p].numel, z->world) * z->world;
        z->stor[p] = z3_alloc_w(b, n, b->t[b->par_t[p]].dt, -1, transient);
        z->status[p] = Z3_AVAILABLE;
    }
    for (int32_t k = 0; k < nc; k++) vc__free(b, copy[k], -1);
}

/* Resident besides the fp32 partition and its optimizer state: the 16-bit
 * partitions of the trainable parameters defragmented into one buffer
 * (_create_fp16_partitions_with_defragmentation: lp_param_buffer); the
 * frozen parameters' partitions, each its own (Init._partition_param:
 * torch.empty(partition_size)); training: the gradient partitions
 * (_setup_for_real_optimizer: grad_partitions_flat_buffer = torch.zeros(
 * sum of partition_numel), gradient_accumulation_dtype = the model's under
 * ZeRO) and the IPG bucket (__ipg_bucket_flat_buffer = torch.empty(
 * reduce_bucket_size), contiguous_gradients), both allocated once; and the
 * persistent parameters, gathered after every step. */
static void zero3_resident(vc_build *b)
{
    z3_state *z = Z(b);
    const vc_model *m = b->m;
    if (z->part > 0 && !z->off_par) vc__alloc(b, vc_n_fixed(z->part), (vc_dtype)z->dt, CAT_WEIGHT, -1);
    for (size_t p = 0; p < m->npar; p++) /* offload_param: on the CPU but the persistent ones (local_device) */
        if (!m->par[p].trainable && m->par[p].numel > 0 && (!z->off_par || z->persist[p]))
            vc__alloc(b, vc_n_fixed(z3_part(m->par[p].numel, z->world)), (vc_dtype)b->t[b->par_t[p]].dt, CAT_WEIGHT,
                      m->par[p].owner);
    if (b->train && z->part > 0) {
        if (!z->off_opt) vc__alloc(b, vc_n_fixed(z->part), (vc_dtype)z->dt, CAT_GRAD, -1); /* else self.device: cpu */
        vc__alloc(b, vc_n_fixed(Z3_BUCKET), (vc_dtype)z->dt, CAT_GRAD, -1);
    }
    /* offload_param nvme with aio use_gds: AsyncPartitionedParameterSwapper._configure_aio's
     * self.buffers, torch.empty(buffer_count x io-aligned buffer_size) of the model's dtype on
     * get_accelerator().device_name() (pinned CPU memory without GDS), made at Init and kept;
     * _io_aligned_numel rounds buffer_size up to AIO_ALIGNED_BYTES / element size elements */
    if (z->gds) {
        int64_t align = Z3_NVME_ALIGN_BYTES / (int64_t)vc_dtype_size((vc_dtype)z->dt);
        int64_t per = (Z3_NVME_BUFFER + align - 1) / align * align;
        vc__alloc(b, vc_n_fixed(per * Z3_NVME_BUFFERS), (vc_dtype)z->dt, CAT_WEIGHT, -1);
    }
    z3_gather_persistent(b, false);
}

/* PartitionedParameterCoordinator.__release_param -> param.partition() ->
 * free_param: the gathered storage goes, the partition stays. */
static void z3_release_param(vc_build *b, int32_t p, int32_t inst)
{
    z3_state *z = Z(b);
    if (z->status[p] != Z3_AVAILABLE) return;
    if (z->stor[p] >= 0) vc__free(b, z->stor[p], inst);
    z->stor[p] = -1;
    z->status[p] = Z3_NOT_AVAILABLE;
    /* nvme: _partition_param -> nvme_swapper.remove_partition_and_release_buffers (the
     * partition was written at init or by the step; the buffer goes back to the pool) */
    if (z->held && z->held[p]) z->held[p] = false, z->nheld--;
    if (!z->persist[p]) z->avail -= b->m->par[p].numel;
}

/* nvme: all_gather_coalesced -> _ensure_availability_of_partitioned_params: the
 * listed partitions still on NVMe swapped in at once (AsyncPartitionedParameterSwapper
 * .swap_in, which asserts a free buffer for each: refused here), each holding its
 * buffer until the parameter is released. False: refused. */
static bool z3_swap_in(vc_build *b, const int32_t *list, size_t n)
{
    z3_state *z = Z(b);
    int64_t need = 0;
    for (size_t k = 0; k < n; k++) need += z->on_nvme[list[k]] && !z->held[list[k]];
    if (z->nheld + need > Z3_NVME_BUFFERS) {
        b->st = VC_ERR_USAGE;
        b->why_opt = O("offload_device");
        snprintf(b->why, sizeof b->why, "nvme: a gather needs %lld parameter swap buffers with %lld of offload_param's "
                 "buffer_count (5) in use (DeepSpeed's swap_in asserts 'Not enough buffers')", (long long)need,
                 (long long)z->nheld);
        return false;
    }
    for (size_t k = 0; k < n; k++)
        if (z->on_nvme[list[k]] && !z->held[list[k]]) z->held[list[k]] = true;
    z->nheld += need;
    return true;
}

/* all_gather_coalesced (partition_parameters.py) of the listed parameters
 * (sorted by ds_id): at world size 1 no gather (_no_gather_coalesced:
 * param.data = ds_tensor); one parameter: torch.empty(ceil(numel / world) x
 * world), param.data a view of it; several: per dtype one flat
 * torch.empty(sum of partitions x world) (_all_gather_dtype), each
 * parameter's data made at the wait. */
static void z3_gather(vc_build *b, const int32_t *list, size_t n, int32_t inst)
{
    z3_state *z = Z(b);
    if (n == 0) return;
    if (z->held && !z3_swap_in(b, list, n)) return;
    for (int dt = 0; dt <= VC_DT_F8; dt++) {
        int64_t flat = 0;
        size_t cnt = 0;
        for (size_t k = 0; k < n; k++)
            if (b->t[b->par_t[list[k]]].dt == dt) flat += z3_part(b->m->par[list[k]].numel, z->world) * z->world, cnt++;
        if (!cnt) continue;
        GROW(z->h, z->nh, z->ch, b);
        if (b->st) return;
        z3_handle *h = &z->h[z->nh];
        *h = (z3_handle){-1, (int32_t)cnt, n > 1 && z->world > 1, false};
        if (h->multi) h->flat = z3_alloc_w(b, flat, (uint8_t)dt, inst, true);
        int32_t *copy = z->bucket + 2 * (b->m->npar + 1), nc = 0;
        for (size_t k = 0; k < n; k++) {
            int32_t p = list[k];
            if (b->t[b->par_t[p]].dt != dt) continue;
            if (n == 1 && z->world > 1) z->stor[p] = z3_alloc_w(b, flat, (uint8_t)dt, inst, true);
            /* offload_param: the partition comes over as ds_tensor.to(device), a copy alive for
             * the gather's call (the cat's list, _dist_allgather_fn's input); at world size 1 that
             * copy is the parameter (NoGatherHandle: param.data = ds_tensor.data.to(device)) */
            /* nvme with use_gds: _ensure_availability_of_partitioned_params swapped the partition into
             * a GPU swap buffer (ds_tensor.data = a view of it), so .to(device) is that view, no copy */
            bool here = z->gds && z->on_nvme[p];
            if (z->off_par && z->world == 1 && !here) z->stor[p] = z3_alloc_w(b, b->m->par[p].numel, (uint8_t)dt, inst, true);
            else if (z->off_par && !here && z->world > 1)
                copy[nc++] = vc__alloc(b, vc_n_fixed(z3_part(b->m->par[p].numel, z->world)), (vc_dtype)dt, CAT_TEMP, inst);
            z->status[p] = Z3_INFLIGHT;
            z->handle[p] = (int32_t)z->nh;
            z->avail += b->m->par[p].numel;
        }
        for (int32_t k = 0; k < nc; k++) vc__free(b, copy[k], inst);
        z->nh++;
    }
}

/* handle.wait() then the registry's pop: AllGatherCoalescedHandle.wait makes
 * each parameter of the handle whole (torch.cat of its pieces of the flat
 * output: a tensor of its own numel); the flat output goes with the handle,
 * once the last of its parameters leaves the in-flight registry. */
static void z3_wait_pop(vc_build *b, int32_t p, int32_t inst)
{
    z3_state *z = Z(b);
    int32_t hi = z->handle[p];
    if (hi < 0) return;
    z3_handle *h = &z->h[hi];
    if (!h->done) {
        for (size_t q = 0; q < b->m->npar; q++) {
            if (z->handle[q] != hi || z->status[q] != Z3_INFLIGHT) continue;
            if (h->multi) z->stor[q] = z3_alloc_w(b, b->m->par[q].numel, b->t[b->par_t[q]].dt, inst, true);
            z->status[q] = Z3_AVAILABLE;
        }
        h->done = true;
    }
    z->handle[p] = -1;
    if (--h->left == 0 && h->flat >= 0) vc__free(b, h->flat, inst);
}

static int cmp_i32(const void *a, const void *c) { return *(const int32_t *)a - *(const int32_t *)c; }

/* nvme: PartitionedParameterCoordinator.__prefetch_nvme_param_partitions, after the
 * prefetch (prefetch_nvme = offload_param device nvme, parameter_offload.py): the
 * partitions on NVMe of the next parameters of the queue swapped in (async) while
 * no more than 2 x the in-flight registry's elements have been looked at and a
 * buffer is free for each. No GPU memory (the buffers exist); it decides what the
 * next prefetch may gather. */
static void z3_nvme_prefetch(vc_build *b)
{
    z3_state *z = Z(b);
    int64_t inflight = 0, seen = 0, nswap = 0;
    for (size_t p = 0; p < b->m->npar; p++)
        if (z->handle[p] >= 0) inflight += b->m->par[p].numel;
    for (size_t i = z->qhead; i < z->nq; i++) {
        int32_t p = z->qpar[i];
        if (seen > 2 * inflight || nswap >= Z3_NVME_BUFFERS - z->nheld) break;
        if (z->on_nvme[p] && !z->held[p]) z->held[p] = true, nswap++;
        seen += b->m->par[p].numel;
    }
    z->nheld += nswap;
}

/* fetch_sub_module's prefetch: with a complete trace, the parameters of the
 * next modules in the parameter trace, up to min(max_live_parameters -
 * available, prefetch_bucket_size) elements (the last one may pass it), those
 * not available, in one all_gather_coalesced. */
static void z3_prefetch(vc_build *b, int32_t inst)
{
    z3_state *z = Z(b);
    int64_t maxp = Z3_MAX_LIVE - z->avail < Z3_PREFETCH ? Z3_MAX_LIVE - z->avail : Z3_PREFETCH, numel = 0;
    size_t n = 0;
    int32_t *list = z->bucket + b->m->npar + 1; /* scratch after the bucket's entries */
    while (z->qhead < z->nq && numel < maxp) {
        int32_t p = z->qpar[z->qhead], s = z->qstep[z->qhead];
        if (z->held && z->on_nvme[p] && !z->held[p]) break; /* "nvme prefetch is handled elsewhere" */
        z->qhead++;
        if (s > z->recent[p]) z->recent[p] = s;
        if (z->status[p] != Z3_NOT_AVAILABLE || z->chosen[p]) continue;
        z->chosen[p] = true;
        list[n++] = p;
        numel += b->m->par[p].numel;
    }
    qsort(list, n, sizeof *list, cmp_i32);
    for (size_t k = 0; k < n; k++) z->chosen[list[k]] = false;
    z3_gather(b, list, n, inst);
}

/* pre_sub_module_forward_function / pre_sub_module_backward_function ->
 * fetch_sub_module: gather the module's parameters not available, wait for
 * those in flight, then (complete trace) pop them off the parameter queue and
 * prefetch. */
static void z3_fetch(vc_build *b, int32_t inst)
{
    z3_state *z = Z(b);
    int64_t pos = -1;
    for (size_t t = (size_t)z->step; t < z->ntrace; t++)
        if (z->trace[t] == inst) { pos = (int64_t)t; break; }
    int32_t *list = z->bucket + b->m->npar + 1;
    size_t n = 0;
    for (int32_t j = z->pstart[inst]; j < z->pstart[inst + 1]; j++)
        if (z->status[z->plist[j]] == Z3_NOT_AVAILABLE) list[n++] = z->plist[j];
    z3_gather(b, list, n, inst);
    for (int32_t j = z->pstart[inst]; j < z->pstart[inst + 1]; j++) z3_wait_pop(b, z->plist[j], inst);
    z->pos = pos;
    if (pos < 0) return;
    while (z->qhead < z->nq && z->qstep[z->qhead] < pos) z->qhead++; /* a module that did not run: its entries */
    size_t fresh = 0;
    for (int32_t j = z->pstart[inst]; j < z->pstart[inst + 1]; j++) fresh += z->recent[z->plist[j]] < pos;
    for (size_t k = 0; k < fresh && z->qhead < z->nq; k++, z->qhead++) z->recent[z->qpar[z->qhead]] = z->qstep[z->qhead];
    z3_prefetch(b, inst);
    if (z->held) z3_nvme_prefetch(b);
    z->step = pos + 1;
}

/* post_sub_module_*_function -> release_sub_module: the module's parameters,
 * but not the persistent ones, nor those whose later use was prefetched
 * already (most_recent_step_id_param_fetched_for > step_id), nor those the
 * trace uses again before max_reuse_distance elements of other modules'
 * parameters have passed (__params_to_release). */
static void z3_release(vc_build *b, int32_t inst)
{
    z3_state *z = Z(b);
    int64_t seen = 0;
    bool reused = false;
    for (size_t t = (size_t)z->step; t < z->ntrace && seen < Z3_REUSE && z->pos >= 0; t++) {
        if (z->trace[t] == inst) { reused = true; break; }
        seen += z->tnumel[t];
    }
    if (reused) return;
    for (int32_t j = z->pstart[inst]; j < z->pstart[inst + 1]; j++) {
        int32_t p = z->plist[j];
        if (z->persist[p] || (z->pos >= 0 && z->recent[p] > z->step)) continue;
        z3_release_param(b, p, inst);
    }
}

/* What is in flight waited for and let go (_clean_inflight_param_registry:
 * reset_step, at the start of each forward), or everything gathered too, the
 * persistent parameters included (all: release_and_reset_all, step()'s
 * _partition_all_parameters). */
static void z3_release_all(vc_build *b, bool all)
{
    z3_state *z = Z(b);
    for (size_t p = 0; p < b->m->npar; p++)
        if (z->status[p] == Z3_INFLIGHT) {
            z3_wait_pop(b, (int32_t)p, -1);
            if (!all) z3_release_param(b, (int32_t)p, -1);
        }
    for (size_t p = 0; p < b->m->npar && all; p++) z3_release_param(b, (int32_t)p, -1);
    z->nh = 0; /* no handle is in the registry any more */
    if (all) z->avail = 0;
}

/* __reduce_and_partition_ipg_grads with reduce_scatter: the bucket's
 * parameters by ds_id through reduce_scatter_coalesced, which (unless it is
 * one gradient whose numel the world size divides) pads each gradient's last
 * pieces (torch.empty(padding_sz) per short piece: counted here as one
 * allocation per gradient) and torch.cat's the interleaved pieces into one
 * flat tensor of sum ceil(numel / world) x world elements; partition_grads
 * copies this rank's pieces into the gradient partitions (in place) and sets
 * param.grad = None (a gradient too large for the bucket goes then); the
 * flat tensor goes when the function returns. */
static void z3_reduce(vc_build *b, int32_t inst)
{
    z3_state *z = Z(b);
    if (z->nbucket == 0) return;
    int64_t cat = 0, world = z->world;
    int32_t pads[64];
    size_t npad = 0;
    qsort(z->bucket, z->nbucket, sizeof *z->bucket, cmp_i32);
    bool one = z->nbucket == 1 && b->m->par[z->bucket[0]].numel % world == 0;
    for (size_t k = 0; k < z->nbucket && !one; k++) {
        int64_t n = b->m->par[z->bucket[k]].numel, padded = z3_part(n, world) * world;
        cat += padded;
        if (padded > n && npad < 64) pads[npad++] = vc__alloc(b, vc_n_fixed(padded - n), (vc_dtype)z->dt, CAT_TEMP, inst);
    }
    int32_t c = one ? -1 : vc__alloc(b, vc_n_fixed(cat), (vc_dtype)z->dt, CAT_TEMP, inst);
    for (size_t k = 0; k < npad; k++) vc__free(b, pads[k], inst);
    int32_t *copy = z->bucket + 2 * (b->m->npar + 1), nc = 0;
    for (size_t k = 0; k < z->nbucket; k++) {
        int32_t p = z->bucket[k];
        int64_t part = z3_part(b->m->par[p].numel, world);
        /* offload_optimizer (partition_grads): the partition copied to the CPU buffer and back
         * (grad_buffer = grad_buffer.to(device): `buffers` keeps the CPU narrow, appended before
         * the rebinding, so this GPU copy goes when the next parameter's iteration rebinds
         * grad_buffer, after this one's param.grad = None), its norm (_constant_buffered_norm2:
         * .double() of 250M-element pieces), and .float() for the CPU fp32 gradient (a copy
         * unless fp32) */
        int32_t rebound = -1;
        if (z->off_opt && part > 0) {
            /* nvme (_offload_grad_partition_at_boundary, a swappable sub-group): the fp32
             * gradient goes into offload_fp32_gradients until _swap_out_offload_fp32_gradients
             * at the return; there OptimizerSwapper._swap_out_gradients copies it to pinned
             * memory only if it is MIN_AIO_BYTES or more, and a length that is not a multiple of
             * AIO_ALIGNED_BYTES / 4 leaves its remainder as a view (_adjust_for_misaligned_lengths):
             * the small ones and the remainders stay in swap_info.unswapped_gradients, on the GPU,
             * until the sub-group's step (_retrieve_unswapped_grad_partitions) */
            bool swap = z->psg && z->psg[p] >= 0;
            bool keep = swap && !(part * 4 >= Z3_NVME_MIN_BYTES && part % (Z3_NVME_ALIGN_BYTES / 4) == 0);
            bool f32in = z->dt == VC_DT_F32; /* grad_buffer.to(dtype=float32) is grad_buffer */
            int32_t gpu = vc__alloc(b, vc_n_fixed(part), (vc_dtype)z->dt, keep && f32in ? CAT_GRAD : CAT_TEMP, inst);
            vc__free(b, vc__alloc(b, vc_n_fixed(part < Z3_NORM_PIECE ? part : Z3_NORM_PIECE), Z3_F64, CAT_TEMP, inst), inst);
            int32_t f32 = f32in ? gpu : vc__alloc(b, vc_n_fixed(part), VC_DT_F32, keep ? CAT_GRAD : CAT_TEMP, inst);
            if (keep && z->kept[p] >= 0) vc__free(b, z->kept[p], inst); /* the dict's entry replaced */
            if (keep) z->kept[p] = f32;
            if (!f32in && !keep) {
                if (swap) copy[nc++] = f32;
                else vc__free(b, f32, inst);
            }
            if (f32in && swap && !keep) copy[nc++] = gpu; /* it is the fp32 gradient offload_fp32_gradients holds */
            else if (!(keep && f32in)) rebound = gpu;
        }
        if (b->pgrad[p] >= 0) vc__free(b, b->pgrad[p], inst);
        b->pgrad[p] = -1;
        if (rebound >= 0) vc__free(b, rebound, inst);
    }
    for (int32_t k = 0; k < nc; k++) vc__free(b, copy[k], inst);
    if (c >= 0) vc__free(b, c, inst);
    z->nbucket = 0;
    z->elems = 0;
}

/* The gradient hook (reduce_ready_partitions_and_remove_grads ->
 * reduce_independent_p_g_buckets_and_remove_grads): a gradient that would
 * overflow a non-empty bucket reduces it first; then (__add_grad_to_ipg_bucket)
 * one that fits is copied into the IPG bucket and param.grad re-pointed at
 * the copy (autograd's goes); a larger one stays as it is. */
static void zero3_grad(vc_build *b, size_t p, int32_t inst)
{
    z3_state *z = Z(b);
    int64_t n = b->m->par[p].numel;
    if (!b->m->par[p].trainable || n == 0) return;
    if (z->elems + n > Z3_BUCKET && z->elems > 0) z3_reduce(b, inst);
    if (z->elems + n <= Z3_BUCKET) {
        vc__free(b, b->pgrad[p], inst);
        b->pgrad[p] = -1;
    }
    z->bucket[z->nbucket++] = (int32_t)p;
    z->elems += n;
}

/* The step (stage3.py step): _partition_all_parameters; _get_norm_groups ->
 * get_grad_norm_direct, each gradient partition's g.double().norm(2) (a
 * float64 copy, one at a time; the norms kept until torch.stack); then the
 * sub-groups one by one (z3_substep); _post_step gathers the persistent
 * parameters again. */
static void z3_step(vc_build *b, bool begin)
{
    z3_state *z = Z(b);
    const vc_model *m = b->m;
    if (!begin) {
        z3_gather_persistent(b, true);
        return;
    }
    z3_release_all(b, true);
    if (z->part == 0 || z->off_opt) return; /* offload: complete_grad_norm_calculation_for_cpu_offload's cached norms */
    int32_t *norms = z->bucket, nn = 0;
    for (size_t p = 0; p < m->npar; p++) {
        if (!m->par[p].trainable) continue;
        int32_t d = vc__alloc(b, vc_n_fixed(z3_part(m->par[p].numel, z->world)), Z3_F64, CAT_TEMP, -1);
        norms[nn++] = vc__alloc(b, vc_n_fixed(1), Z3_F64, CAT_TEMP, -1);
        vc__free(b, d, -1);
    }
    int32_t st = vc__alloc(b, vc_n_fixed(nn), Z3_F64, CAT_TEMP, -1);
    for (int32_t k = 0; k < nn; k++) vc__free(b, norms[k], -1);
    vc__free(b, st, -1);
}

/* Sub-group g's step: _prepare_fp32_grad_for_sub_group,
 * flatten(averaged_gradients[g]) (a copy of its gradient partitions, but a
 * view of a single one: flatten_dense_tensors) and .to(float32) (a copy
 * unless fp32 already), the flat one dropped; the wrapped optimizer's step on
 * the sub-group's fp32 partition (the engine's, between begin and end);
 * _release_sub_group drops the fp32 gradient. */
static void z3_substep(vc_build *b, int g, bool begin)
{
    z3_state *z = Z(b);
    if (!begin) {
        if (z->g32 >= 0) vc__free(b, z->g32, -1);
        z->g32 = -1;
        return;
    }
    int64_t n = b->flat[g].e.numel;
    for (size_t p = 0; z->kept && p < b->m->npar; p++) /* nvme: the unswapped gradients read and released */
        if (z->psg[p] == g && z->kept[p] >= 0) vc__free(b, z->kept[p], -1), z->kept[p] = -1;
    if (z->off_opt) return; /* the fp32 gradient is on the CPU (partition_grads wrote it) */
    int32_t flat = z->gcnt[g] > 1 ? vc__alloc(b, vc_n_fixed(n), (vc_dtype)z->dt, CAT_GRAD, -1) : -1;
    z->g32 = flat;
    if (z->dt != VC_DT_F32) {
        z->g32 = vc__alloc(b, vc_n_fixed(n), VC_DT_F32, CAT_GRAD, -1);
        if (flat >= 0) vc__free(b, flat, -1);
    }
}

/* The module hooks: a layer instance's forward and backward begin (fetch)
 * and end (release); the model's forward begins (reset_step, from the root's
 * forward pre-hook); backward ends (independent_gradient_partition_epilogue:
 * what the bucket holds is reduced); the optimizer step. */
static void zero3_hook(vc_build *b, int inst, vc_phase ph, bool begin)
{
    z3_state *z = Z(b);
    if (ph != VC_PHASE_FORWARD && ph != VC_PHASE_BACKWARD && ph != VC_PHASE_OPTIMIZER) return;
    if (ph == VC_PHASE_OPTIMIZER) {
        if (inst < 0) z3_step(b, begin);
        else z3_substep(b, inst, begin);
        return;
    }
    if (inst >= 0) {
        if (begin) z3_fetch(b, inst);
        else z3_release(b, inst);
        return;
    }
    if (ph == VC_PHASE_FORWARD && begin) {
        z3_release_all(b, false);
        z->qhead = 0;
        z->step = 0;
        z->pos = -1;
        for (size_t p = 0; p < b->m->npar; p++) z->recent[p] = INT64_MIN;
    } else if (ph == VC_PHASE_BACKWARD && !begin) {
        z3_reduce(b, -1);
    }
}

/* --loss grpo (src/engine/grpo.c): what deepspeed.zero.GatheredParameters allocates around TRL's generate() and
 * sync_weights. Its __enter__ calls params[0].all_gather(param_list) -> Init._all_gather (partition_parameters.py
 * @edaa7221): the parameters already AVAILABLE (the persistent ones, ds_numel <= stage3_param_persistence_threshold,
 * gathered whole after every step: z3_gather_persistent) are skipped; the others go through
 * _allgather_params_coalesced (several) or _allgather_params_sequential (one), both making one
 * torch.empty(ds_tensor.ds_numel x world) per parameter in ds_tensor's dtype, param.data a view of it; the partitions
 * stay. all: the bytes of every such tensor (each in the caching allocator's 512-byte blocks), else the largest
 * one's; 0 at one data-parallel rank (_no_gather_coalesced), -1 on overflow. */
int64_t vc__zero3_gather_bytes(const vc_model *m, const vc_options *o, bool all)
{
    const int64_t world = vc_dp_world(o);
    const vc_dtype dt = vc_precision_row_get(o->precision)->param_dt;
    int64_t sum = 0, max = 0;
    if (world <= 1) return 0;
    for (size_t p = 0; p < m->npar; p++) {
        const int64_t n = m->par[p].numel;
        if (n <= Z3_PERSIST) continue; /* persistent (and empty): AVAILABLE, not gathered */
        int64_t v, el;
        if (__builtin_mul_overflow(z3_part(n, world), world, &el) ||
            (v = vc_bytes(vc_n_fixed(el), vc_param_pinned_dt(m->par[p].flags, dt), 1)) < 0 || v > INT64_MAX - 511)
            return -1;
        v = (v + 511) / 512 * 512;
        if (v > max) max = v;
        if (__builtin_add_overflow(sum, v, &sum)) return -1;
    }
    return all ? sum : max;
}

/* offload_optimizer and offload_param (config.py DeepSpeedZeroConfig), to the CPU or NVMe. */
const vc_layout_desc vc_layout_zero3 = {
    .id = VC_PARALLEL_ZERO3,
    .hooks = {.module = zero3_hook, .resident = zero3_resident, .flat = zero3_flat, .grad = zero3_grad},
    .caps = VC_LAYOUT_ZERO_CONFIG,
    .offload = (1u << VC_OFFLOAD_OPTIMIZER) | (1u << VC_OFFLOAD_PARAMS),
};
