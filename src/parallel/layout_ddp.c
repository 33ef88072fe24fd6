/*
 * layout_ddp.c — the parallel layouts built on DistributedDataParallel: ddp
 * (its gradient buckets) and zero1-torch (ZeroRedundancyOptimizer over a DDP
 * model), with DDP's gradient_as_bucket_view and ZeroRedundancyOptimizer's
 * parameters_as_bucket_view (their own hooks: the descriptors' views).
 * Neither has module hooks: every rank keeps the whole model.
 * docs/parallel.md says what each allocates.
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

/* The hooks under the bucket views (vc_layout_desc.views). */
static const vc_layout_row ddp_grad_view = {.resident = ddp_buckets, .grad = ddp_view_grad, .grad_views = true};
static const vc_layout_row zero1_param_view = {.resident = zero1_resident_pview, .owns = zero1_owns};
static const vc_layout_row zero1_grad_view = {.resident = ddp_buckets, .owns = zero1_owns, .grad = ddp_view_grad,
                                              .grad_views = true};
static const vc_layout_row zero1_both_views = {.resident = zero1_resident_pview, .owns = zero1_owns,
                                               .grad = ddp_view_grad, .grad_views = true};

const vc_layout_desc vc_layout_ddp = {
    .id = VC_PARALLEL_DDP,
    .hooks = {.resident = ddp_buckets},
    .views = {[1][0] = &ddp_grad_view},
    .caps = VC_LAYOUT_PP | VC_LAYOUT_EP | VC_LAYOUT_GRAD_VIEW,
};

const vc_layout_desc vc_layout_zero1_torch = {
    .id = VC_PARALLEL_ZERO1_TORCH,
    .hooks = {.resident = ddp_buckets, .owns = zero1_owns},
    .views = {[0][1] = &zero1_param_view, [1][0] = &zero1_grad_view, [1][1] = &zero1_both_views},
    .caps = VC_LAYOUT_PP | VC_LAYOUT_GRAD_VIEW | VC_LAYOUT_PARAM_VIEW,
};
