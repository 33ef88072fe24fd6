/*
 * layout.c — the parallel-layout table (policy.h, vc_layout_row): how one
 * rank's training step differs from a single GPU's. This file holds the
 * table, the --offload checks and the rows with no module hooks: a single
 * GPU, which changes nothing, DDP and zero1-torch. The others are in their
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

static const vc_layout_row rows[VC_PARALLEL__N] = {
    [VC_PARALLEL_NONE] = {"single", NULL, NULL, NULL, NULL, NULL},
    [VC_PARALLEL_DDP] = {"ddp", NULL, ddp_buckets, NULL, NULL, NULL},
    [VC_PARALLEL_ZERO1_TORCH] = {"zero1-torch", NULL, ddp_buckets, zero1_owns, NULL, NULL},
    [VC_PARALLEL_FSDP] = {"fsdp", vc__fsdp_full_shard, NULL, NULL, vc__fsdp_flat, NULL},
    [VC_PARALLEL_FSDP_GRAD_OP] = {"shard-grad-op", vc__fsdp_shard_grad_op, NULL, NULL, vc__fsdp_flat, NULL},
    [VC_PARALLEL_FSDP_HYBRID] = {"hybrid", vc__fsdp_full_shard, NULL, NULL, vc__hybrid_flat, NULL},
    [VC_PARALLEL_ZERO2] = {"zero2", vc__zero2_hook, vc__zero2_resident, NULL, vc__zero2_flat, vc__zero2_grad},
    [VC_PARALLEL_ZERO3] = {"zero3", vc__zero3_hook, vc__zero3_resident, NULL, vc__zero3_flat, vc__zero3_grad},
    [VC_PARALLEL_FSDP2] = {"fsdp2", vc__fsdp2_hook, NULL, NULL, vc__fsdp2_flat, NULL, vc__fsdp2_compute, true},
    [VC_PARALLEL_ZERO1] = {"zero1", vc__zero1_hook, vc__zero2_resident, NULL, vc__zero2_flat, vc__zero1_grad},
    [VC_PARALLEL_MEGATRON] = {"megatron", vc__megatron_hook, vc__megatron_resident, NULL, vc__megatron_flat, vc__megatron_grad},
    [VC_PARALLEL_MEGATRON_DIST] = {"megatron-dist", vc__megatron_hook, vc__megatron_resident, NULL, vc__megatron_dist_flat,
                                   vc__megatron_grad},
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
