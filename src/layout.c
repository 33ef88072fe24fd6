/*
 * layout.c — the parallel-layout table (policy.h, vc_layout_row): how one
 * rank's training step differs from a single GPU's. Rows: a single GPU,
 * which changes nothing, and DDP. The other strategies (ZeRO, FSDP, tensor
 * and pipeline parallelism; docs/parallel.md says what each allocates) are
 * rows to come, each with its module hooks and its share of the state.
 */
#include "plan.h"

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
    int64_t world = b->o.gpus, *sizes = calloc((size_t)world, sizeof *sizes);
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
    [VC_PARALLEL_NONE] = {"single", NULL, NULL, NULL},
    [VC_PARALLEL_DDP] = {"ddp", NULL, ddp_buckets, NULL},
    [VC_PARALLEL_ZERO1_TORCH] = {"zero1-torch", NULL, ddp_buckets, zero1_owns},
};

const vc_layout_row *vc_layout_row_get(const vc_options *o)
{
    return !o ? &rows[VC_PARALLEL_NONE] : (unsigned)o->parallel < VC_PARALLEL__N ? &rows[o->parallel] : NULL;
}
