/*
 * optim.c — the optimizer table: one row per --optim (the names come from
 * VC_OPTIM_MAP in vramcalc.h). A row says what state each trainable
 * parameter keeps on the GPU and what the step allocates, as functions of
 * the parameter (its shape and size) and of the implementation. The engine
 * (autograd.c: persistent, optimizer_step) only reads rows.
 */
#include "policy.h"
#include "release.h"

static vc_tspec like(const vc_param_entry *p, vc_dtype dt) { return (vc_tspec){.n = vc_n_fixed(p->numel), .dt = (uint8_t)dt}; }

/* ---- sgd: torch.optim.SGD(momentum=0): no state, no step temporaries */

/* ---- momentum: torch.optim.SGD(momentum=0.9): state["momentum_buffer"]
 * (torch/optim/sgd.py _single_tensor_sgd / _multi_tensor_sgd: a clone of
 * the gradient at the first step, then updated in place) */
static int momentum_state(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX])
{
    out[0] = like(p, c->state_dt);
    return 1;
}

/* ---- adam / adamw: torch.optim.Adam, AdamW (torch/optim/adam.py, 2.x).
 * State: exp_avg, exp_avg_sq (zeros_like(p, memory_format=preserve)); the
 * step count is a CPU tensor except for fused (and capturable), where it
 * is a float32 scalar on the device (_init_group). */
static int adam_state(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX])
{
    out[0] = like(p, c->state_dt);
    out[1] = like(p, c->state_dt);
    if (c->impl != VC_IMPL_FUSED) return 2;
    out[2] = (vc_tspec){.n = vc_n_fixed(1), .dt = VC_DT_F32};
    return 3;
}

/* _multi_tensor_adam: exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs),
 * one tensor per parameter, then updated in place and dropped at the end
 * of the group; _single_tensor_adam: denom = exp_avg_sq.sqrt()... one
 * parameter at a time. The fused kernel (_fused_adam_) allocates nothing. */
static int adam_step(const vc_param_entry *p, const vc_optim_ctx *c, vc_step_op out[VC_OPTIM_MAX])
{
    if (c->impl == VC_IMPL_FUSED) return 0;
    out[0] = (vc_step_op){.op = VC_STEP_ALLOC, .slot = 0, .t = like(p, c->state_dt)};
    out[1] = (vc_step_op){.op = VC_STEP_FREE, .slot = 0};
    return 2;
}

/* ---- lion: lucidrains/lion-pytorch (the Lion people install; torch has
 * none). State: exp_avg = zeros_like(p). The step, forloop
 * (lion_pytorch.py update_fn): `update = exp_avg.clone().mul_(beta1)
 * .add(grad, alpha=1-beta1).sign_()` makes the clone, then add's result
 * while the clone is alive; the clone goes when add returns, the update
 * when update_fn returns. foreach (foreach.py Lion.step): `updates =
 * [t.clone() for t in exp_avgs]`, then only in-place _foreach_ ops. */
static int lion_state(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX])
{
    out[0] = like(p, c->state_dt);
    return 1;
}

static int lion_step(const vc_param_entry *p, const vc_optim_ctx *c, vc_step_op out[VC_OPTIM_MAX])
{
    vc_tspec t = like(p, c->state_dt);
    out[0] = (vc_step_op){.op = VC_STEP_ALLOC, .slot = 0, .t = t};
    if (c->impl == VC_IMPL_FOREACH) {
        out[1] = (vc_step_op){.op = VC_STEP_FREE, .slot = 0, .t = t};
        return 2;
    }
    out[1] = (vc_step_op){.op = VC_STEP_ALLOC, .slot = 1, .t = t};
    out[2] = (vc_step_op){.op = VC_STEP_FREE, .slot = 0, .t = t};
    out[3] = (vc_step_op){.op = VC_STEP_FREE, .slot = 1, .t = t};
    return 4;
}

/* ---- adam8bit / adamw8bit: bitsandbytes' Adam8bit / AdamW8bit
 * (bitsandbytes/optim/optimizer.py Optimizer2State.init_state, at
 * 06029dd6edcc719e5831443179bcb206c6355093: optim_bits=8, block_wise=True,
 * min_8bit_size=4096). A parameter of at least 4,096 elements keeps state1
 * and state2 as uint8 tensors of its size and absmax1, absmax2 as float32
 * [ceil(n / 2048)]; a smaller one keeps two float32 states of its size
 * (whatever the parameter's dtype). The quantization maps (name2qmap
 * "dynamic", "udynamic": 256 floats each) are shared by every parameter.
 * The step is one in-place CUDA kernel per parameter (update_step ->
 * optimizer_update_8bit_blockwise): no temporaries, --optim-impl does not
 * apply. */
static int adam8bit_state(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX])
{
    (void)c;
    if (p->numel < 4096) {
        out[0] = out[1] = like(p, VC_DT_F32);
        return 2;
    }
    vc_tspec blocks = {.n = vc_n_fixed((p->numel + 2047) / 2048), .dt = VC_DT_F32};
    out[0] = out[1] = like(p, VC_DT_U8);
    out[2] = out[3] = blocks;
    return 4;
}

/* ---- paged_adam8bit / paged_adamw8bit: bitsandbytes' PagedAdam8bit /
 * PagedAdamW8bit (bitsandbytes/optim/adam.py, adamw.py at 06029dd6:
 * Optimizer2State(..., optim_bits=8, ..., is_paged=True)): the state of
 * adam8bit, but state1 and state2 come from Optimizer8bit.get_state_buffer,
 * which for is_paged and p.numel() >= 1e5 returns F.get_paged(...)
 * (bitsandbytes/functional.py: lib.cget_managed_ptr, csrc/pythonInterface.cpp:
 * cudaMallocManaged(&ptr, bytes, cudaMemAttachHost)): unified memory, outside
 * PyTorch's caching allocator, registered with the GlobalPageManager. Smaller
 * ones, absmax1/absmax2 (torch.zeros on the device) and the qmaps (.to(device))
 * are ordinary allocator memory. step() prefetches a parameter's paged state
 * to the GPU (prefetch_state -> cudaMemPrefetchAsync) before its update; the
 * driver evicts it to the host under memory pressure. */
static int paged_adam8bit_state(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX])
{
    int n = adam8bit_state(p, c, out);
    if (n == 4 && p->numel >= 100000) out[0].outside = out[1].outside = 1; /* get_state_buffer: numel < 1e5 stays */
    return n;
}

static int adam8bit_shared(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX])
{
    (void)c;
    if (p->numel < 4096) return 0;
    out[0] = out[1] = (vc_tspec){.n = vc_n_fixed(256), .dt = VC_DT_F32}; /* qmap1, qmap2 */
    return 2;
}

/* ---- adafactor: torch.optim.Adafactor (PyTorch >= 2.5), as
 * torch/optim/_adafactor.py has it at pytorch/pytorch commit
 * 051d6a09bb159a48ac11006c454c0c979511d0f3.
 * State (Adafactor._init_group): "step" = torch.tensor(0.0) on the CPU
 * (no device memory); a parameter whose grad has dim() > 1 keeps
 * "row_var" = grad.new_zeros(shape with shape[-1] = 1) and "col_var" =
 * grad.new_zeros(shape with shape[-2] = 1): the factored second moment,
 * numel / shape[-1] and numel / shape[-2] elements; any other keeps
 * "variance" = zeros_like(grad). All in the gradient's dtype (the
 * parameter's; fp32 for master weights). */
static int adafactor_state(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX])
{
    if (p->nd < 2) {
        out[0] = like(p, c->state_dt); /* variance */
        return 1;
    }
    int64_t rows = 1, cols = p->dims[p->nd - 1];
    for (int d = 0; d < p->nd - 1; d++) rows *= p->dims[d]; /* products of a parameter's dims: at most numel */
    for (int d = 0; d < p->nd - 2; d++) cols *= p->dims[d];
    out[0] = (vc_tspec){.n = vc_n_fixed(rows), .dt = (uint8_t)c->state_dt}; /* row_var */
    out[1] = (vc_tspec){.n = vc_n_fixed(cols), .dt = (uint8_t)c->state_dt}; /* col_var */
    return 2;
}

/* The step's tensors for one parameter (slots: the step function's locals). */
enum { AF_ROW_MEAN, AF_COL_MEAN, AF_VAR_EST, AF_UPDATE, AF_GRAD_SQ, AF_ROW_VAR_MEAN };
#define AF_OP(o_, s_, n_) ((vc_step_op){.op = (o_), .slot = (s_), .t = {.n = vc_n_fixed(n_), .dt = (uint8_t)c->state_dt}})
/* the same with a reduction's scratch (src/engine/scratch.c): nout outputs of nin values each */
#define AF_RED(o_, s_, n_, nout, nin, fastest) ((vc_step_op){.op = (o_), .slot = (s_), \
                                                             .t = {.n = vc_n_fixed(n_), .dt = (uint8_t)c->state_dt}, \
                                                             .scratch = af_scratch(c, (nout), (nin), (fastest))})

static int64_t af_scratch(const vc_optim_ctx *c, int64_t nout, int64_t nin, bool fastest)
{
    return c->o ? vc_reduce_scratch(c->o, nout, nin, fastest, vc_dtype_size(c->state_dt), 4) : 0;
}
#define AF_NOPS 11 /* foreach: the ops of a >= 2-D parameter's group; the 1-D group's start after them */

/* _single_tensor_adafactor (the default: foreach=None runs it), per
 * parameter, the device allocations in program order; `grad` aliases
 * p.grad, in-place ops (square_, div_, lerp_, clamp_, rsqrt_, mul_, add_)
 * allocate nothing, step_t is on the CPU:
 *   alpha = max(eps2, param.norm(2).item() / ...)   a 0-d temporary
 * grad.dim() > 1:
 *   row_mean = torch.linalg.vector_norm(grad, dim=-1, keepdim=True)...  [..., m, 1]
 *   col_mean = torch.linalg.vector_norm(grad, dim=-2, keepdim=True)...  [..., 1, n]
 *   var_estimate = row_var @ col_var                                    [..., m, n]
 *   var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(...))   a [..., 1, 1] temporary
 * else:
 *   grad_squared = grad * grad;  var_estimate = variance.clone()
 * then update = var_estimate.clamp_(...).rsqrt_() (the same tensor), and
 * update.norm(2).item() (a 0-d temporary). On CUDA the reductions (the
 * norms and the mean) may take a global-reduction scratch while they run
 * (gpu_reduce_kernel, src/engine/scratch.c): the column norm of a large weight
 * does (8 MiB for 1024 x 1024 on an H200, measured). These are locals of the loop
 * over parameters: each lives until the next parameter's program rebinds
 * its name (a >= 2-D parameter's row_mean until the next >= 2-D one's), so
 * var_estimate/update of parameter i is alive while parameter i + 1's
 * var_estimate is made.
 * _multi_tensor_adafactor (foreach=True): per (device, dtype, dim() > 1)
 * group (_group_tensors_by_device_dtype_and_is_multidim), each list made for
 * every parameter of the group before the next op: row_means, then `del`;
 * col_means, `del`; var_estimates; row_var_means, `del`; updates =
 * var_estimates; the norms one at a time. 1-D groups: grads_squared =
 * _foreach_mul(grads, grads), `del`; var_estimates = [v.clone() ...]. The
 * group of >= 2-D parameters is taken to run first (the first parameter is
 * a weight; its ops are the first AF_NOPS positions, the 1-D group's come
 * after). Its updates (= var_estimates) stay alive until the 1-D group
 * rebinds `updates`: the >= 2-D programs drop them at that position. */
static int adafactor_step(const vc_param_entry *p, const vc_optim_ctx *c, vc_step_op out[VC_OPTIM_MAX])
{
    int n = 0;
    bool each = c->impl == VC_IMPL_FOREACH;
    if (p->nd >= 2) {
        int64_t lead = 1, m = p->dims[p->nd - 2], cols = p->dims[p->nd - 1];
        for (int d = 0; d < p->nd - 2; d++) lead *= p->dims[d];
        out[n++] = AF_RED(VC_STEP_TEMP, 0, 1, 1, p->numel, true);    /* param.norm(2) */
        out[n++] = AF_RED(VC_STEP_BIND, AF_ROW_MEAN, lead * m, lead * m, cols, true); /* row_mean(s): dim=-1 */
        if (each) out[n++] = AF_OP(VC_STEP_FREE, AF_ROW_MEAN, 0);    /* del row_means */
        out[n++] = AF_RED(VC_STEP_BIND, AF_COL_MEAN, lead * cols, lead * cols, m, false); /* col_mean(s): dim=-2 */
        if (each) out[n++] = AF_OP(VC_STEP_FREE, AF_COL_MEAN, 0);    /* del col_means */
        out[n++] = AF_OP(VC_STEP_BIND, AF_VAR_EST, p->numel);        /* row_var @ col_var */
        if (!each) {
            out[n++] = AF_RED(VC_STEP_TEMP, 0, lead, lead, m, true); /* row_var.mean(dim=-2, keepdim=True) */
        } else {
            out[n++] = AF_RED(VC_STEP_ALLOC, AF_ROW_VAR_MEAN, lead, lead, m, true); /* row_var_means */
            out[n++] = AF_OP(VC_STEP_FREE, AF_ROW_VAR_MEAN, 0);      /* del row_var_means */
            out[n] = AF_OP(VC_STEP_ALIAS, AF_UPDATE, 0);             /* updates = var_estimates */
            out[n++].src = AF_VAR_EST;
            out[n++] = AF_OP(VC_STEP_FREE, AF_VAR_EST, 0);           /* (the same tensors: `updates` keeps them) */
            out[n++] = AF_RED(VC_STEP_TEMP, 0, 1, 1, p->numel, true); /* update.norm(2) */
            while (n < AF_NOPS + 4) out[n++] = AF_OP(VC_STEP_NOP, 0, 0);
            out[n++] = AF_OP(VC_STEP_FREE, AF_UPDATE, 0);            /* the 1-D group's `updates = ...` */
            return n;
        }
    } else {
        for (; each && n < AF_NOPS; n++) out[n] = AF_OP(VC_STEP_NOP, 0, 0);
        out[n++] = AF_RED(VC_STEP_TEMP, 0, 1, 1, p->numel, true);    /* param.norm(2) */
        out[n++] = AF_OP(VC_STEP_BIND, AF_GRAD_SQ, p->numel);        /* grad * grad */
        if (each) out[n++] = AF_OP(VC_STEP_FREE, AF_GRAD_SQ, 0);     /* del grads_squared */
        out[n++] = AF_OP(VC_STEP_BIND, AF_VAR_EST, p->numel);        /* variance.clone() */
    }
    out[n] = AF_OP(VC_STEP_ALIAS, AF_UPDATE, 0);                     /* update = var_estimate */
    out[n++].src = AF_VAR_EST;
    out[n++] = AF_RED(VC_STEP_TEMP, 0, 1, 1, p->numel, true);        /* update.norm(2) */
    return n;
}

#define ALL_IMPLS ((1u << VC_IMPL_FOREACH) | (1u << VC_IMPL_FUSED) | (1u << VC_IMPL_FORLOOP))

/* The rows (policy.h vc_optim_row); NULL members: none, default_impl 0: foreach. */
static const vc_optim_row rows[VC_OPTIM__N] = {
    [VC_OPTIM_SGD] = {
        .summary = "torch.optim.SGD(momentum=0): no state",
        .impls = ALL_IMPLS, .steps = true, .default_impl = VC_IMPL_FOREACH, .torch_default = true,
    },
    [VC_OPTIM_MOMENTUM] = {
        .summary = "torch.optim.SGD(momentum=0.9): a momentum buffer per parameter",
        .impls = ALL_IMPLS, .steps = true, .state = momentum_state, .default_impl = VC_IMPL_FOREACH, .torch_default = true,
    },
    [VC_OPTIM_ADAM] = {
        .summary = "torch.optim.Adam: exp_avg, exp_avg_sq; foreach/forloop steps make sqrt(exp_avg_sq)",
        .impls = ALL_IMPLS, .steps = true, .state = adam_state, .step = adam_step, .default_impl = VC_IMPL_FOREACH,
        .torch_default = true,
    },
    [VC_OPTIM_ADAMW] = {
        .summary = "torch.optim.AdamW: as Adam (decoupled weight decay is in place)",
        .impls = ALL_IMPLS, .steps = true, .state = adam_state, .step = adam_step, .default_impl = VC_IMPL_FOREACH,
        .torch_default = true,
    },
    [VC_OPTIM_NONE] = {
        .summary = "no optimizer step: forward, backward, gradients freed",
        .impls = ALL_IMPLS, .steps = false,
    },
    [VC_OPTIM_LION] = {
        .summary = "lion-pytorch Lion: exp_avg; the step clones it (foreach, forloop)",
        .impls = (1u << VC_IMPL_FOREACH) | (1u << VC_IMPL_FORLOOP), .steps = true, .state = lion_state, .step = lion_step,
    },
    [VC_OPTIM_ADAM8BIT] = {
        .summary = "bitsandbytes Adam8bit: uint8 states + per-2048 absmax (fp32 under 4,096 elements); "
                   "in-place kernel, " O("optim_impl") " does not apply",
        .impls = ALL_IMPLS, .steps = true, .state = adam8bit_state, .shared = adam8bit_shared,
    },
    [VC_OPTIM_ADAMW8BIT] = {
        .summary = "bitsandbytes AdamW8bit: as adam8bit",
        .impls = ALL_IMPLS, .steps = true, .state = adam8bit_state, .shared = adam8bit_shared,
    },
    [VC_OPTIM_PAGED_ADAM8BIT] = {
        .summary = "bitsandbytes PagedAdam8bit: as adam8bit, but the uint8 states of parameters from "
                   "100,000 elements are paged (cudaMallocManaged, outside PyTorch's allocator)",
        .impls = ALL_IMPLS, .steps = true, .state = paged_adam8bit_state, .shared = adam8bit_shared,
    },
    [VC_OPTIM_PAGED_ADAMW8BIT] = {
        .summary = "bitsandbytes PagedAdamW8bit: as paged_adam8bit",
        .impls = ALL_IMPLS, .steps = true, .state = paged_adam8bit_state, .shared = adam8bit_shared,
    },
    [VC_OPTIM_ADAFACTOR] = {
        .summary = "torch.optim.Adafactor: row_var, col_var (factored; variance for 1-D); forloop by default",
        .impls = (1u << VC_IMPL_FOREACH) | (1u << VC_IMPL_FORLOOP), .steps = true, .state = adafactor_state,
        .step = adafactor_step, .default_impl = VC_IMPL_FORLOOP,
    },
};

const vc_optim_row *vc_optim_row_get(vc_optim o) { return (unsigned)o < VC_OPTIM__N ? &rows[o] : NULL; }

vc_optim_impl vc_optim_default_impl(vc_optim o) { return vc_optim_default_impl_at(o, VC_TORCH_DEFAULT); }

/* torch.optim's classes take foreach=None, fused=None to mean what
 * _default_to_fused_or_foreach picks at that release (release.c,
 * VC_REL_OPTIM_DEFAULT); the others keep their row's default. */
vc_optim_impl vc_optim_default_impl_at(vc_optim o, int torch_version)
{
    if ((unsigned)o >= VC_OPTIM__N) return VC_IMPL_FOREACH;
    if (rows[o].torch_default) return (vc_optim_impl)vc_release_value(torch_version, VC_REL_OPTIM_DEFAULT);
    return rows[o].default_impl;
}
