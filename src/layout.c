/*
 * layout.c — the parallel-layout table (policy.h, vc_layout_row): how one
 * rank's training step differs from a single GPU's. This file holds the
 * table, the --offload checks and the rows with no module hooks: a single
 * GPU, which changes nothing, DDP and zero1-torch (with DDP's
 * gradient_as_bucket_view and ZeroRedundancyOptimizer's
 * parameters_as_bucket_view: their own rows, `views`). The others are in their
 * own files: layout_fsdp1.c (fsdp, shard-grad-op, hybrid), layout_fsdp2.c,
 * layout_zero12.c (DeepSpeed stages 1 and 2), layout_zero3.c; tensor and
 * pipeline parallelism are hf_tp.c and pipeline.c. docs/parallel.md says
 * what each allocates.
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
 * place. The estimate is the busiest rank's: the most elements.
 * zero1_ranks: rank[p] for each trainable parameter, sizes[r] the elements
 * of rank r's share, and the busiest rank; -1 when out of memory. */
static int64_t zero1_ranks(const vc_model *m, int64_t world, int *rank, int64_t *sizes)
{
    size_t *order = malloc((m->npar + 1) * sizeof *order);
    if (!order) return -1;
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
    free(order);
    return busiest;
}

static void zero1_owns(const vc_build *b, bool *owned)
{
    const vc_model *m = b->m;
    int64_t world = vc_dp_world(&b->o), *sizes = calloc((size_t)world, sizeof *sizes);
    int *rank = malloc((m->npar + 1) * sizeof *rank);
    int64_t busiest = sizes && rank ? zero1_ranks(m, world, rank, sizes) : -1;
    for (size_t p = 0; p < m->npar; p++) /* out of memory: the unsharded estimate, an upper bound */
        owned[p] = busiest < 0 || (m->par[p].trainable && rank[p] == busiest);
    free(sizes); free(rank);
}

/* ---- gradient_as_bucket_view=True (--gradient-as-bucket-view; ddp and
 * zero1-torch). The reducer's buckets are the same as without it
 * (ddp_buckets), but each parameter's .grad becomes a view into its bucket:
 * DDP's hook runs after AccumulateGrad (Reducer::Reducer:
 * grad_accumulator->add_post_hook(... autograd_hook ...)), and
 * Reducer::mark_variable_ready_dense, finding a .grad that is not an alias
 * of its bucket view, copies it in (at::mul_out(bucket_view, grad, 1/world))
 * and sets grad = bucket_view: AccumulateGrad's fresh gradient goes as soon
 * as it has been copied. zero_grad(set_to_none=True) (2.x's default, the one
 * modelled) drops the views, so every backward makes each gradient afresh,
 * one at a time; between steps the buckets are the only gradient storage
 * (finalize_bucket_dense leaves .grad = bucket_view_in, no copy back).
 * Sources: torch/csrc/distributed/c10d/reducer.cpp mark_variable_ready_dense,
 * initialize_bucket_views, finalize_bucket_dense at pytorch/pytorch@00413201
 * (the 1.13 era measured here) and @ad78a7b3 (2.x: the same view logic;
 * only DDP mixed precision's bucket dtype is new). The first iteration's
 * single bucket (rebuild_buckets at the second forward) is outside the
 * steady-state step, as without the views. */
static void ddp_view_grad(vc_build *b, size_t p, int32_t inst)
{
    vc__free(b, b->pgrad[p], inst);
    b->pgrad[p] = -1;
}

/* ---- parameters_as_bucket_view=True (--parameters-as-bucket-view;
 * zero1-torch). zero_redundancy_optimizer.py _build_param_buckets (T113
 * line 1208; the same text in 2.x, pytorch/pytorch@815ff44c): for each
 * rank's share (_device_to_params_per_rank, one device here) one flat
 * bucket, torch.empty(numel of its trainable parameters, dtype), the
 * parameters copied in and re-pointed (param.data = bucket[a:b].view_as(..)),
 * their own storages freed; a rank with no trainable parameter gets
 * torch.zeros(1) (fp32). Every rank keeps every rank's bucket: the
 * parameters are all still there, in world-size blocks instead of one
 * each. Done in the constructor, before the first step: the old storages
 * are freed here before the buckets are made (the constructor's moment of
 * both, one share at a time, is not in a step's peak). Frozen parameters
 * are cloned (param.data.detach().clone()): the same bytes, left as they
 * are. */
static void zero1_param_buckets(vc_build *b)
{
    const vc_model *m = b->m;
    int64_t world = vc_dp_world(&b->o), *sizes = calloc((size_t)world, sizeof *sizes), empty = 0;
    int *rank = malloc((m->npar + 1) * sizeof *rank);
    int32_t *bucket = malloc((size_t)world * sizeof *bucket);
    if (!sizes || !rank || !bucket || zero1_ranks(m, world, rank, sizes) < 0) {
        free(sizes); free(rank); free(bucket); /* out of memory: the parameters as they are (the same bytes but rounding) */
        return;
    }
    for (size_t p = 0; p < m->npar; p++) {
        tens_t *t = &b->t[b->par_t[p]];
        if (!m->par[p].trainable || t->stor < 0) continue;
        b->s[t->stor].transient = true; /* not persistent: the bucket takes its place */
        vc__free(b, t->stor, -1);
    }
    for (int64_t k = 0; k < world; k++) {
        bucket[k] = -1;
        empty += sizes[k] == 0;
    }
    for (size_t p = 0; p < m->npar; p++) { /* rank by rank as the parameters come: one block each */
        if (!m->par[p].trainable) continue;
        tens_t *t = &b->t[b->par_t[p]];
        if (bucket[rank[p]] < 0) bucket[rank[p]] = vc__alloc(b, vc_n_fixed(sizes[rank[p]]), (vc_dtype)t->dt, CAT_WEIGHT, -1);
        t->stor = bucket[rank[p]];
    }
    /* torch.zeros(1) per rank without a trainable parameter: a 512-byte block each */
    if (empty) vc__alloc(b, vc_n_fixed(empty * 128), VC_DT_F32, CAT_WEIGHT, -1);
    free(sizes); free(rank); free(bucket);
}

static void zero1_resident_pview(vc_build *b)
{
    ddp_buckets(b);
    zero1_param_buckets(b);
}

static const vc_layout_row rows[VC_PARALLEL__N] = {
    [VC_PARALLEL_NONE] = {"single", NULL, NULL, NULL, NULL, NULL},
    [VC_PARALLEL_DDP] = {"ddp", NULL, ddp_buckets, NULL, NULL, NULL},
    [VC_PARALLEL_ZERO1_TORCH] = {"zero1-torch", NULL, ddp_buckets, zero1_owns, NULL, NULL},
    [VC_PARALLEL_FSDP] = {"fsdp", vc__fsdp_full_shard, NULL, NULL, vc__fsdp_flat, NULL, vc__fsdp2_compute, true},
    [VC_PARALLEL_FSDP_GRAD_OP] = {"shard-grad-op", vc__fsdp_shard_grad_op, NULL, NULL, vc__fsdp_flat, NULL, vc__fsdp2_compute, true},
    [VC_PARALLEL_FSDP_HYBRID] = {"hybrid", vc__fsdp_full_shard, NULL, NULL, vc__hybrid_flat, NULL, vc__fsdp2_compute, true},
    [VC_PARALLEL_ZERO2] = {"zero2", vc__zero2_hook, vc__zero2_resident, NULL, vc__zero2_flat, vc__zero2_grad},
    [VC_PARALLEL_ZERO3] = {"zero3", vc__zero3_hook, vc__zero3_resident, NULL, vc__zero3_flat, vc__zero3_grad},
    [VC_PARALLEL_FSDP2] = {"fsdp2", vc__fsdp2_hook, NULL, NULL, vc__fsdp2_flat, NULL, vc__fsdp2_compute, true},
    [VC_PARALLEL_ZERO1] = {"zero1", vc__zero1_hook, vc__zero2_resident, NULL, vc__zero2_flat, vc__zero1_grad},
    [VC_PARALLEL_MEGATRON] = {"megatron", vc__megatron_hook, vc__megatron_resident, NULL, vc__megatron_flat, vc__megatron_grad},
    [VC_PARALLEL_MEGATRON_DIST] = {"megatron-dist", vc__megatron_hook, vc__megatron_resident, NULL, vc__megatron_dist_flat,
                                   vc__megatron_grad},
};

/* The rows in place of a layout's under the bucket-view settings,
 * [layout][gradient_as_bucket_view][parameters_as_bucket_view]; a row with
 * no name: the layout's own (vc__layout_view_check refuses the others). */
static const vc_layout_row views[VC_PARALLEL__N][2][2] = {
    [VC_PARALLEL_DDP][1][0] = {.name = "ddp", .resident = ddp_buckets, .grad = ddp_view_grad, .grad_views = true},
    [VC_PARALLEL_ZERO1_TORCH][0][1] = {.name = "zero1-torch", .resident = zero1_resident_pview, .owns = zero1_owns},
    [VC_PARALLEL_ZERO1_TORCH][1][0] = {.name = "zero1-torch", .resident = ddp_buckets, .owns = zero1_owns,
                                       .grad = ddp_view_grad, .grad_views = true},
    [VC_PARALLEL_ZERO1_TORCH][1][1] = {.name = "zero1-torch", .resident = zero1_resident_pview, .owns = zero1_owns,
                                       .grad = ddp_view_grad, .grad_views = true},
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

/* --offload-device nvme (ZeRO-Infinity; docs/parallel.md 1.9, deepspeedai/DeepSpeed@edaa7221).
 * DeepSpeed's offload devices are none, cpu, nvme (zero/offload_config.py
 * OffloadDeviceEnum); no validator ties nvme to a stage: stages 1 and 2 take
 * any device but none as CPU offload (stage_1_and_2.py DeepSpeedZeroOptimizer
 * .__init__: cpu_offload = True), stage 3 swaps to NVMe (stage3.py
 * _configure_offloading: swap_optimizer, params_in_nvme_and_cpu). FSDP's
 * CPUOffload and CPUOffloadPolicy have no device: the CPU only. aio.use_gds
 * (swap_tensor/aio_config.py, default false) is read by the parameter swapper
 * (partitioned_param_swapper.py _configure_aio) and ignored by the optimizer
 * swappers (AsyncIOBuilder's handle always). NULL: modelled. */
static const char *nvme_refusal(const vc_options *o, const char **opt)
{
    *opt = "--offload-device";
    if (o->offload_device != VC_OFFLOAD_DEVICE_CPU && o->offload_device != VC_OFFLOAD_DEVICE_NVME) return "invalid value";
    if (o->offload_device == VC_OFFLOAD_DEVICE_NVME && o->offload == VC_OFFLOAD_NONE)
        return "nvme is where --offload optimizer or params puts what leaves the GPU: give --offload";
    if (o->offload_device == VC_OFFLOAD_DEVICE_NVME && o->parallel != VC_PARALLEL_ZERO1 &&
        o->parallel != VC_PARALLEL_ZERO2 && o->parallel != VC_PARALLEL_ZERO3)
        return "nvme is DeepSpeed ZeRO's (offload_optimizer / offload_param device): FSDP offloads to the CPU only";
    *opt = "--nvme-gds";
    if (o->nvme_gds != 0 && o->nvme_gds != 1) return "invalid value";
    if (o->nvme_gds && o->offload_device != VC_OFFLOAD_DEVICE_NVME)
        return "use_gds is the NVMe swapper's (aio section): give --offload-device nvme";
    return NULL;
}

vc_status vc__layout_offload_check(const vc_options *o, vc_error *err)
{
    if ((unsigned)o->offload >= VC_OFFLOAD__N) return vc_set_error(err, VC_ERR_USAGE, "--offload", "invalid value");
    const char *why = o->offload == VC_OFFLOAD_NONE ? NULL : offload_refusal(o->parallel, o->offload);
    if (why)
        return vc_set_error(err, VC_ERR_USAGE, "--offload", "%s with --parallel %s: %s", vc_offload_name(o->offload),
                            vc_parallel_name(o->parallel), why);
    const char *nopt, *nwhy = nvme_refusal(o, &nopt); /* the device of an offload the layout has */
    return nwhy ? vc_set_error(err, VC_ERR_USAGE, nopt, "%s", nwhy) : VC_OK;
}

/* The bucket views: which layouts have them (DistributedDataParallel's
 * gradient_as_bucket_view: ddp and zero1-torch, whose model is wrapped in it;
 * ZeroRedundancyOptimizer's parameters_as_bucket_view: zero1-torch), and
 * what is not modelled with them. */
vc_status vc__layout_view_check(const vc_options *o, vc_error *err)
{
    bool ddp = o->parallel == VC_PARALLEL_DDP || o->parallel == VC_PARALLEL_ZERO1_TORCH;
    if (o->gradient_as_bucket_view && !ddp)
        return vc_set_error(err, VC_ERR_USAGE, "--gradient-as-bucket-view", "a DistributedDataParallel setting: --parallel "
                            "ddp or zero1-torch, not %s", vc_parallel_name(o->parallel));
    if (o->parameters_as_bucket_view && o->parallel != VC_PARALLEL_ZERO1_TORCH)
        return vc_set_error(err, VC_ERR_USAGE, "--parameters-as-bucket-view", "a ZeroRedundancyOptimizer setting: --parallel "
                            "zero1-torch, not %s", vc_parallel_name(o->parallel));
    const char *opt = o->gradient_as_bucket_view ? "--gradient-as-bucket-view" : "--parameters-as-bucket-view";
    if ((o->gradient_as_bucket_view || o->parameters_as_bucket_view) && o->pp > 1)
        return vc_set_error(err, VC_ERR_USAGE, opt, "not modelled with --pp");
    /* under no_sync() DDP's hook returns early (autograd_hook: !expect_autograd_hooks_) and .grad stays
     * AccumulateGrad's own until the last micro-batch; without no_sync it is the view from the first */
    if (o->gradient_as_bucket_view && o->accumulate > 1)
        return vc_set_error(err, VC_ERR_USAGE, "--gradient-as-bucket-view", "not modelled with --accumulate (what "
                            ".grad is between micro-batches depends on no_sync())");
    return VC_OK;
}

/* For a layout that casts or reshards every parameter (FSDP1's MixedPrecision,
 * fsdp2): only dense parameters of the precision's dtype are modelled. The
 * first quantized, dtype-pinned or LoRA adapter one refuses the estimate (b->st, naming opt
 * and the parameter); false then. */
bool vc__layout_dense_only(vc_build *b, const char *opt, const char *what)
{
    const vc_model *m = b->m;
    for (size_t p = 0; p < m->npar; p++)
        if (m->par[p].fmt != VC_WEIGHTS_DENSE || (m->par[p].flags & (VC_PARAM_PINNED | VC_PARAM_ADAPTER))) {
            b->st = VC_ERR_USAGE;
            b->why_opt = opt;
            snprintf(b->why, sizeof b->why, "%s over %s parameters (%s) is not modelled", what,
                     m->par[p].fmt != VC_WEIGHTS_DENSE ? "quantized" : m->par[p].flags & VC_PARAM_F32 ? "fp32-pinned"
                     : m->par[p].flags & VC_PARAM_PINNED ? "16-bit-pinned" : "LoRA adapter", m->par[p].name ? m->par[p].name : "?");
            return false;
        }
    return true;
}

const vc_layout_row *vc_layout_row_get(const vc_options *o)
{
    if (!o) return &rows[VC_PARALLEL_NONE];
    if ((unsigned)o->parallel >= VC_PARALLEL__N) return NULL;
    const vc_layout_row *v = &views[o->parallel][o->gradient_as_bucket_view != 0][o->parameters_as_bucket_view != 0];
    return v->name ? v : &rows[o->parallel];
}
