/*
 * layout_megatron.c — Megatron-Core's own data parallelism as two parallel
 * layouts (their descriptors end the file): its DistributedDataParallel with the
 * contiguous parameter-and-gradient buffers, and its two mixed-precision
 * optimizers, Float16OptimizerWithFloat16Params (--parallel megatron) and
 * DistributedOptimizer (--parallel megatron-dist, Megatron's
 * --use-distributed-optimizer). docs/parallel.md section 7.
 *
 * Source: NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553 (MEG):
 *  - megatron/training/arguments.py validate_args: --bf16 sets params_dtype
 *    bfloat16 and accumulate_allreduce_grads_in_fp32 (main_grads_dtype fp32
 *    by default), so DDP's grad_reduce_in_fp32; --overlap-grad-reduce is off
 *    by default (store_true), --clip-grad 1.0, check_for_nan_in_loss_and_grad on.
 *  - megatron/core/distributed/distributed_data_parallel.py
 *    DistributedDataParallel.__init__: bucket_size = max(40M, 1M x dp), then
 *    None unless overlap_grad_reduce (one bucket per buffer); the trainable
 *    parameters grouped by (param dtype, grad dtype, is_expert_parallel)
 *    (param_and_grad_buffer.py group_params_for_buffers), one
 *    _ParamAndGradBuffer each, expert ones over the expert-data-parallel group;
 *    _make_backward_post_hook: `param.main_grad.add_(param.grad.data);
 *    param.grad = None` once AccumulateGrad has made .grad.
 *  - param_and_grad_buffer.py _ParamAndGradBuffer.__init__: grad_data =
 *    torch.zeros(numel, grad_dtype) always; param_data = torch.zeros(numel,
 *    param_dtype) only under the distributed optimizer, the parameters then
 *    re-pointed into it (their own storage goes). Layout: without the
 *    distributed optimizer _compute_default_per_buffer_param_layout (no
 *    padding, parameters in reverse order); with it
 *    distrib_optimizer.py DistributedOptimizer._compute_per_buffer_param_layout:
 *    each parameter's start padded to 64 elements (param_layout.py
 *    pad_param_start), each bucket's end to lcm(dp, 128) (pad_bucket_end,
 *    pad_buckets_for_high_nccl_busbw off). start_grad_sync: check_grads
 *    (grad_data.norm(p=2) per bucket), the scaling and the all-reduce or
 *    reduce-scatter in place.
 *  - megatron/core/optimizer/optimizer.py Float16OptimizerWithFloat16Params:
 *    main_param = param.detach().clone().float() for every 16-bit parameter,
 *    the inner Adam on the main params; _copy_model_grads_to_main_grads:
 *    main_param.grad = model_param.main_grad.float() (no copy: main_grad is fp32).
 *  - distrib_optimizer.py _build_model_gbuf_param_range_map: a rank's range of
 *    each bucket is bucket numel / dp elements; every parameter that meets it
 *    gets a piece; _build_model_and_main_param_groups: shard_main_param =
 *    shard_model_param.clone().float() per piece (shard_fp32_from_float16_groups),
 *    the inner optimizer's params; _copy_model_grads_to_main_grads:
 *    shard_main_param.grad = shard_model_grad.float() (a view of main_grad,
 *    fp32: no copy); _copy_main_params_to_model_params: copy_ into the
 *    param_data shard; start_param_sync: all_gather_into_tensor into param_data.
 *  - megatron/core/optimizer/__init__.py: Adam is Transformer Engine's or
 *    apex's FusedAdam (exp_avg, exp_avg_sq; a multi-tensor kernel, no
 *    temporaries), else torch.optim.AdamW / Adam (USING_PYTORCH_OPTIMIZER),
 *    which is vramcalc's adam/adamw row as it stands: --optim-impl foreach is
 *    that fallback exactly; fused is FusedAdam but for torch's per-tensor fp32
 *    `step` (512 B each).
 * Left out: the gradient clipping's and the NaN check's one-element tensors
 * beyond the norm itself (a few KiB); gradient_accumulation_fusion (TE's Linear
 * accumulates its weight gradient into main_grad, no .grad made: this model
 * makes each .grad and frees it at once, a transient of one gradient).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "util.h"

#define MG_NBUF 2 /* the dense parameters' buffer, the experts' (all bf16) */

typedef struct {
    int8_t *buf;     /* per parameter: its buffer, -1 none (frozen, empty) */
    int64_t *start;  /* per parameter: its first element in the buffer */
    int64_t numel[MG_NBUF], world[MG_NBUF], rank[MG_NBUF]; /* elements (padded), dp group, the rank modelled */
    int32_t bwds;    /* backward passes ended (the boundary's runs the grad sync) */
    bool dist;
} mg_state;

static void mg_free(void *state)
{
    mg_state *s = state;
    if (s) free(s->buf), free(s->start);
    free(s);
}

static int64_t pad_to(int64_t v, int64_t d) { return (v + d - 1) / d * d; }
static int64_t gcd64(int64_t a, int64_t b) { return b ? gcd64(b, a % b) : a; }

/* An expert parameter of a --ep model: a local expert's (layers/moe_ep.c names them
 * local_experts.J.linear_fc1/2.weight), Megatron's allreduce=False parameters. */
static bool is_expert(const vc_model *m, const vc_param_entry *e)
{
    return m->ep > 1 && e->name && !strncmp(e->name, "local_experts.", 14);
}

/* The buffers: each trainable parameter's buffer and start, each buffer's padded size. */
static int mg_layout(vc_build *b, mg_state *s)
{
    const vc_model *m = b->m;
    const vc_options *o = &b->o;
    int64_t dp = vc_dp_world(o), edp = o->gpus / (o->tp * o->ep * o->pp);
    int64_t at[MG_NBUF] = {0};
    s->world[0] = dp;
    s->world[1] = edp > 0 ? edp : 1;
    for (size_t p = m->npar; p-- > 0;) { /* params[::-1]: the backward's order */
        const vc_param_entry *e = &m->par[p];
        s->buf[p] = -1;
        if (!e->trainable || e->numel == 0) continue;
        uint8_t dt = b->t[b->par_t[p]].dt;
        if (dt != VC_DT_BF16) {
            b->st = VC_ERR_USAGE;
            b->why_opt = O("parallel");
            snprintf(b->why, sizeof b->why, "Megatron's bf16 training keeps every trainable parameter in bfloat16; %s is not "
                     "(fp32 adapters are not modelled)", e->name ? e->name : "a parameter");
            return -1;
        }
        int k = is_expert(m, e);
        s->buf[p] = (int8_t)k;
        if (s->dist) at[k] = pad_to(at[k], 64); /* pad_param_start */
        s->start[p] = at[k];
        if (__builtin_add_overflow(at[k], e->numel, &at[k])) { b->st = VC_ERR_OVERFLOW; return -1; }
    }
    for (int k = 0; k < MG_NBUF; k++) { /* pad_bucket_end: lcm(dp, 128) */
        int64_t d = s->world[k] / gcd64(s->world[k], 128) * 128;
        s->numel[k] = s->dist && at[k] > 0 ? pad_to(at[k], d) : at[k];
    }
    return 0;
}

/* The distributed optimizer's busiest rank of buffer k: the most parameter
 * elements in its range (rank r holds [r x part, (r + 1) x part)), the lowest on a tie. */
static int mg_busiest(vc_build *b, mg_state *s, int k)
{
    const vc_model *m = b->m;
    int64_t w = s->world[k], part = s->numel[k] / w, best = 0;
    int64_t *cnt = calloc((size_t)w + 1, sizeof *cnt), *full = calloc((size_t)w + 1, sizeof *full);
    if (!cnt || !full) { free(cnt); free(full); b->st = VC_ERR_NOMEM; return -1; }
    for (size_t p = 0; p < m->npar && part > 0; p++) {
        if (s->buf[p] != k) continue;
        int64_t lo = s->start[p], hi = lo + m->par[p].numel, r0 = lo / part, r1 = (hi - 1) / part;
        if (r0 == r1) { cnt[r0] += hi - lo; continue; }
        cnt[r0] += (r0 + 1) * part - lo;
        cnt[r1] += hi - r1 * part;
        full[r0 + 1]++, full[r1]--; /* ranks r0 + 1 .. r1 - 1 wholly inside */
    }
    int64_t run = 0;
    for (int64_t r = 0; r < w; r++) {
        run += full[r];
        cnt[r] += run * part;
        if (cnt[r] > cnt[best]) best = r;
    }
    s->rank[k] = best;
    free(cnt); free(full);
    return 0;
}

/* The optimizer's parameters: the fp32 main params (flat entries of dtype
 * fp32, so no further master copy): one per trainable parameter
 * (Float16OptimizerWithFloat16Params), or one per piece of a parameter in the
 * modelled rank's range of its buffer (DistributedOptimizer). Their gradients
 * are views of main_grad: nothing held besides the buffers. */
static void mg_flat(vc_build *b, bool dist)
{
    const vc_model *m = b->m;
    mg_state *s = calloc(1, sizeof *s);
    b->lay_state = s;
    b->lay_free = mg_free;
    if (!s || !(s->buf = malloc((m->npar + 1) * sizeof *s->buf)) || !(s->start = calloc(m->npar + 1, sizeof *s->start))) {
        b->st = VC_ERR_NOMEM;
        return;
    }
    s->dist = dist;
    if (mg_layout(b, s)) return;
    for (int k = 0; k < MG_NBUF && dist; k++)
        if (s->numel[k] > 0 && mg_busiest(b, s, k)) return;
    size_t n = 0;
    for (size_t p = 0; p < m->npar; p++) {
        int k = s->buf[p];
        if (k < 0) continue;
        int64_t lo = s->start[p], hi = lo + m->par[p].numel;
        if (dist) {
            int64_t part = s->numel[k] / s->world[k], r0 = s->rank[k] * part, r1 = r0 + part;
            lo = lo > r0 ? lo : r0;
            hi = hi < r1 ? hi : r1;
        }
        if (hi <= lo) continue;
        b->flat[n++] = (vc_flat_param){{hi - lo, true, 0, 0, -1, NULL, NULL}, VC_DT_F32, hi - lo, hi - lo,
                                       -1, -1, {vc_n_fixed(0), VC_DT_F32}, false};
    }
    b->nflat = n;
}

static void megatron_flat(vc_build *b) { mg_flat(b, false); }
static void megatron_dist_flat(vc_build *b) { mg_flat(b, true); }

/* Resident: the model's bf16 parameters (their own tensors, or param_data under
 * the distributed optimizer), the frozen ones as they are, and each buffer's
 * grad_data (fp32, grad_reduce_in_fp32). */
static void megatron_resident(vc_build *b)
{
    const vc_model *m = b->m;
    mg_state *s = b->lay_state;
    for (size_t p = 0; p < m->npar; p++) {
        const tens_t *t = &b->t[b->par_t[p]];
        if (!s->dist || !m->par[p].trainable || m->par[p].numel == 0)
            vc__alloc(b, t->n, (vc_dtype)t->dt, CAT_WEIGHT, m->par[p].owner);
    }
    for (int k = 0; k < MG_NBUF; k++) {
        if (s->numel[k] == 0) continue;
        if (s->dist) vc__alloc(b, vc_n_fixed(s->numel[k]), VC_DT_BF16, CAT_WEIGHT, -1);
        vc__alloc(b, vc_n_fixed(s->numel[k]), VC_DT_F32, CAT_GRAD, -1);
    }
    s->bwds = 0;
}

/* _make_backward_post_hook: .grad is added into main_grad and dropped. */
static void megatron_grad(vc_build *b, size_t p, int32_t inst)
{
    if (!b->m->par[p].trainable || b->pgrad[p] < 0) return;
    vc__free(b, b->pgrad[p], inst);
    b->pgrad[p] = -1;
}

/* The backward's end at the accumulation boundary (finalize_model_grads ->
 * finish_grad_sync -> start_grad_sync; the earlier micro-batches run under
 * no_sync): check_grads' grad_data.norm(p=2) per bucket, a one-element fp32
 * result with the reduction's scratch; the collective itself is in place. */
static void megatron_hook(vc_build *b, int inst, vc_phase ph, bool begin)
{
    mg_state *s = b->lay_state;
    if (inst >= 0 || ph != VC_PHASE_BACKWARD || begin || !s) return;
    if (++s->bwds < (b->o.accumulate > 1 || b->m->stage.micro_batches > 1 ? 2 : 1)) return;
    for (int k = 0; k < MG_NBUF; k++) {
        if (s->numel[k] == 0) continue;
        int32_t n = vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1);
        int64_t scratch = vc_reduce_scratch(&b->o, 1, s->numel[k], true, 4, 4);
        if (scratch > 0) vc__free(b, vc__alloc(b, vc_n_fixed(scratch), VC_DT_U8, CAT_TEMP, -1), -1);
        vc__free(b, n, -1);
    }
}

/* The options these layouts take (vc_layout_desc.check, from vc__check_options):
 * Megatron's bf16 training, its Adam, the GPU only. */
static vc_status megatron_check(const vc_options *o, vc_error *err)
{
    const char *n = vc_parallel_name(o->parallel);
    if (o->mode != VC_MODE_TRAIN)
        return vc_set_error(err, VC_ERR_USAGE, O("parallel"), "%s is Megatron's training wrapper: " OV("mode", "train"), n);
    /* arguments.py: --bf16 keeps bf16 parameters with fp32 main grads and main params; --fp16's dynamic
     * loss scaling and fp16 main_grad (copied to fp32 by .float() each step), and fp32 training, are not modelled */
    if (o->precision != VC_PREC_MIXED_BF16)
        return vc_set_error(err, VC_ERR_USAGE, O("precision"), "%s with " OS("precision", "%s") ": Megatron's bf16 mode (bf16 parameters, fp32 "
                            "main_grad and main params) is " OS("precision", "mixed-bf16") ", the only precision modelled (--fp16's fp16 main_grad "
                            "and loss scaler are not)", n,
                            vc_precision_name(o->precision));
    if (o->optim != VC_OPTIM_ADAM && o->optim != VC_OPTIM_ADAMW)
        return vc_set_error(err, VC_ERR_USAGE, O("optim"), "%s with %s: Megatron's optimizer here is adam (FusedAdam, or "
                            "torch.optim.Adam/AdamW without TE and apex): " OV("optim", "adam") " or adamw", n, vc_optim_name(o->optim));
    return VC_OK;
}

/* Megatron's pipeline schedules (--pp, --pp-virtual) and expert parallelism (--ep: the expert
 * parameters' buffers over the expert-data-parallel group, mg_layout). */
const vc_layout_desc vc_layout_megatron = {
    .id = VC_PARALLEL_MEGATRON,
    .hooks = {.module = megatron_hook, .resident = megatron_resident, .flat = megatron_flat, .grad = megatron_grad},
    .caps = VC_LAYOUT_PP | VC_LAYOUT_EP,
    .check = megatron_check,
};

const vc_layout_desc vc_layout_megatron_dist = {
    .id = VC_PARALLEL_MEGATRON_DIST,
    .hooks = {.module = megatron_hook, .resident = megatron_resident, .flat = megatron_dist_flat, .grad = megatron_grad},
    .caps = VC_LAYOUT_PP | VC_LAYOUT_EP,
    .check = megatron_check,
};
