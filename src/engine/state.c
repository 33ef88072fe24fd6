/*
 * state.c — what a training step keeps across steps and what its optimizer
 * step allocates (split from autograd.c): the parameters as their storage
 * formats keep them, master copies, the optimizer's state (its row,
 * src/policy/optim.c), buffers, the input batch and workspace, the parallel
 * layout's resident state; then the optimizer's step programs and
 * zero_grad. Storage goes through autograd.c's reference counts
 * (vc__alloc, vc__ref, vc__free).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "release.h"

/* The parameters the optimizer holds: the model's, or the layout's flat
 * ones (FSDP's shards) in their place. nopt: how many; opt_par: the i-th. */
static size_t nopt(const vc_build *b) { return b->flat ? b->nflat : b->m->npar; }
static const vc_param_entry *opt_par(const vc_build *b, size_t i) { return b->flat ? &b->flat[i].e : &b->m->par[i]; }
static vc_dtype opt_dt(const vc_build *b, size_t i)
{
    return (vc_dtype)(b->flat ? b->flat[i].dt : b->t[b->par_t[i]].dt);
}

/* The dtype of parameter i's optimizer state: its own (zeros_like(p)), or
 * fp32 where the optimizer works on fp32 master weights. */
static vc_dtype state_dt(const vc_build *b, size_t i) { return b->prec->master ? VC_DT_F32 : opt_dt(b, i); }

/* Whether parameter i's optimizer state and step are on this rank. */
static bool steps_here(const vc_build *b, size_t i)
{
    return opt_par(b, i)->trainable && opt_par(b, i)->numel > 0 && (!b->owned || b->owned[i]);
}

/* The optimizer's tensors: each parameter it holds, or, under FSDP1's
 * use_orig_params=True, each original parameter's slice of a flat shard
 * (the layout's slices hook, layout_fsdp1.c): one state tensor and one step per slice.
 * *src: the parameter (opt_par index) each comes from; NULL on no memory. */
static vc_param_entry *opt_tensors(const vc_build *b, size_t **src, size_t *n)
{
    size_t np = nopt(b), cap = np + (b->flat ? b->m->npar : 0), k = 0;
    vc_param_entry *e = malloc((cap + 1) * sizeof *e);
    int64_t *sl = malloc((b->m->npar + 1) * sizeof *sl);
    *src = malloc((cap + 1) * sizeof **src);
    if (!e || !sl || !*src) {
        free(e), free(sl), free(*src);
        *src = NULL;
        return NULL;
    }
    for (size_t i = 0; i < np; i++) {
        size_t ns = b->flat && b->layout->slices ? b->layout->slices(b, i, sl) : 0;
        for (size_t j = 0; j < (ns ? ns : 1) && k < cap; j++, k++) {
            e[k] = *opt_par(b, i);
            if (ns) e[k].numel = sl[j];
            (*src)[k] = i;
        }
    }
    free(sl);
    *n = k;
    return e;
}

/* The state tensors st[0..n) of a parameter owned by `owner`: in the caching
 * allocator, or managed memory (outside). */
static void alloc_state(vc_build *b, const vc_tspec *st, int n, int32_t owner)
{
    for (int k = 0; k < n; k++) {
        int64_t bytes;
        if (!st[k].outside) vc__alloc(b, st[k].n, st[k].dt, CAT_OPT, owner);
        else if (__builtin_mul_overflow(st[k].n.fx, (int64_t)vc_dtype_size((vc_dtype)st[k].dt), &bytes) ||
                 __builtin_add_overflow(b->outside, bytes, &b->outside))
            b->st = VC_ERR_OVERFLOW; /* managed memory: the bytes asked for, no 512-byte blocks */
    }
}

/* Parameter i's master copy and optimizer state (its row's), one per tensor
 * of ent[*j ..] that comes from it (opt_tensors, in parameter order; *j moves
 * past them). --first-step: the state is made by the first step() instead
 * (lazy_states). */
static void param_state(vc_build *b, size_t i, bool *shared, const vc_param_entry *ent, const size_t *src, size_t ne,
                        size_t *j)
{
    const vc_param_entry *p = opt_par(b, i);
    const vc_optim_row *opt = b->train && b->optim->steps ? b->optim : NULL;
    if (!p->trainable) return;
    /* mixed precision: an fp32 master copy of a 16-bit parameter */
    if (b->prec->master && b->train && opt_dt(b, i) != VC_DT_F32) vc__alloc(b, vc_n_fixed(p->numel), VC_DT_F32, CAT_WEIGHT, p->owner);
    if (!steps_here(b, i)) return;
    vc_optim_ctx ctx = {b->o.optim_impl, state_dt(b, i), &b->o};
    vc_tspec st[VC_OPTIM_MAX];
    int n = opt && opt->shared && !*shared ? opt->shared(p, &ctx, st) : 0;
    for (int k = 0; k < n; k++) vc__alloc(b, st[k].n, st[k].dt, CAT_OPT, -1);
    *shared |= n > 0;
    for (; *j < ne && src[*j] < i; (*j)++) {}
    for (; *j < ne && src[*j] == i; (*j)++) {
        n = opt && opt->state && !b->lazy_pass ? opt->state(&ent[*j], &ctx, st) : 0;
        alloc_state(b, st, n, p->owner);
    }
}

/* --first-step: the optimizer's per-parameter state made inside the first
 * step() (parameter `only`'s, or every one's for SIZE_MAX), before its
 * arithmetic: torch/optim/adam.py Adam.step's "Lazy state initialization"
 * (@ 005941eb; Adam._init_group in 2.x): `if len(state) == 0`: state["step"],
 * then exp_avg and exp_avg_sq = torch.zeros_like(p, memory_format=
 * torch.preserve_format), parameter after parameter, for the whole group
 * before _single_tensor_adam / _multi_tensor_adam run; adamw.py alike.
 * In the state row's order, as param_state makes it in the steady state. */
static void lazy_states(vc_build *b, size_t only)
{
    const vc_optim_row *opt = b->optim;
    size_t *src, ne;
    vc_param_entry *ent = opt_tensors(b, &src, &ne);
    if (!ent) { b->st = VC_ERR_NOMEM; return; }
    for (size_t j = 0; j < ne && opt->state; j++) {
        size_t i = src[j];
        if (!steps_here(b, i) || (only != SIZE_MAX && i != only)) continue;
        vc_optim_ctx ctx = {b->o.optim_impl, state_dt(b, i), &b->o};
        vc_tspec st[VC_OPTIM_MAX];
        alloc_state(b, st, opt->state(&ent[j], &ctx, st), opt_par(b, i)->owner);
    }
    free(ent), free(src);
}

/* The model's weights of storage format fmt at their largest ([out, in]). */
static vc_quant_extent quant_extent(const vc_model *m, uint8_t fmt)
{
    vc_quant_extent x = {0, 0, 0};
    for (size_t i = 0; i < m->npar; i++) {
        const vc_param_entry *p = &m->par[i];
        if (p->fmt != fmt || p->nd != 2) continue;
        if (p->dims[1] > x.max_in) x.max_in = p->dims[1];
        if (p->dims[0] > x.max_out) x.max_out = p->dims[0];
        if (p->numel > x.max_numel) x.max_numel = p->numel;
    }
    return x;
}

/* cuBLAS's workspaces, allocated through the caching allocator on a handle's
 * first GEMM and kept (aten/src/ATen/cuda/CublasHandlePool.cpp @ 26a39059):
 * setWorkspaceForHandle, one per (handle, stream), of getChosenWorkspaceSize
 * (CUBLAS_WORKSPACE_CONFIG's default: 4096 x 8 KiB on sm90, else
 * 4096 KiB x 2 + 16 KiB x 8; --workspace sets it); getCUDABlasLtWorkspace,
 * one per (handle, stream) for the cuBLASLt GEMMs (addmm with a bias), of
 * getCUDABlasLtWorkspaceSize: CUBLASLT_WORKSPACE_SIZE's 1024 KiB, capped at
 * the cuBLAS size, and separate unless TORCH_CUBLASLT_UNIFIED_WORKSPACE is
 * set. Handles come from a thread-local pool window (getCurrentCUDABlasHandle),
 * and the autograd engine runs a CUDA backward on its own device thread
 * (torch/csrc/autograd/engine.cpp, a thread per device): so training keeps a
 * second cuBLAS workspace, the backward thread's, once a GEMM's backward runs
 * (mm: no cuBLASLt there), and its own cuBLASLt workspace when a checkpointed
 * region's forward, re-run there, has a biased Linear. Measured on an H200
 * with torch 2.11 (docs/accuracy.md, "GPU measurements"): inference 1 MiB above
 * the one workspace, training 33 MiB, checkpointed training 34 MiB. */
static void workspaces(vc_build *b)
{
    const vc_options *o = &b->o;
    bool gemm = false, lt = false, bwd = false, bwd_lt = false;
    for (size_t k = 0; k < b->nop; k++) {
        const op_t *op = &b->op[k];
        gemm |= op->gemm;
        lt |= op->lt;
        bwd |= b->train && op->gemm && op->rg;
        bwd_lt |= b->train && op->lt && op->region >= 0; /* checkpointed: re-run on the backward thread */
    }
    int64_t ws = o->workspace >= 0 ? o->workspace
                 : !gemm ? 0 : o->hopper ? 4096 * 8 * 1024 : 4096 * 1024 * 2 + 16 * 1024 * 8;
    int64_t lt_ws = ws < 1048576 ? ws : 1048576;
    if (ws <= 0) return;
    /* src/policy/release.c VC_REL_CUBLAS_WS_RETAINED: from 2.15 the handle's workspace is cuBLAS's own */
    bool keep = vc_release_value(o->torch_version, VC_REL_CUBLAS_WS_RETAINED);
    if (keep) vc__alloc(b, vc_n_fixed(ws), VC_DT_U8, CAT_WS, -1);
    if (lt) vc__alloc(b, vc_n_fixed(lt_ws), VC_DT_U8, CAT_WS, -1);
    if (bwd && keep) vc__alloc(b, vc_n_fixed(ws), VC_DT_U8, CAT_WS, -1);
    if (bwd_lt) vc__alloc(b, vc_n_fixed(lt_ws), VC_DT_U8, CAT_WS, -1);
}

/* The caller's input i: what the root pre-forward's cast read (plan.c
 * cast_inputs, the first b->npre ops), else the model's input value. */
static int32_t caller_input(const vc_build *b, int i)
{
    int32_t t = b->val_t[i], k = b->t[t].op;
    if (k < 0 || k >= b->npre) return t;
    const item_t *its = &b->it[b->op[k].it0];
    for (int32_t j = 0; j < b->op[k].nit; j++)
        if (its[j].type == IT_IN) return its[j].t;
    return t;
}

/* Persistent state in steady state: parameters, buffers, master copies,
 * optimizer states (the optimizer's row), the input batch, and the cuBLAS
 * workspaces. */
void vc__persistent(vc_build *b)
{
    const vc_model *m = b->m;
    bool shared = false; /* the optimizer's shared state is made */
    bool wshared[VC_WEIGHTS__N] = {false}; /* each storage format's state made once */
    size_t *src, ne = 0, cursor = 0;
    vc_param_entry *ent = opt_tensors(b, &src, &ne);
    if (!ent) { b->st = VC_ERR_NOMEM; return; }
    for (size_t i = 0; i < nopt(b); i++) {
        if (b->flat) { /* a layout's flat parameter: the rank's shard (the model's own are gathered by its hooks) */
            if (b->flat[i].e.numel > 0) vc__alloc(b, vc_n_fixed(b->flat[i].e.numel), (vc_dtype)b->flat[i].dt, CAT_WEIGHT, -1);
        } else {
            /* the parameter as its storage format keeps it (src/policy/quant.c): the
             * tensor itself, or packed data with its scales and code books */
            tens_t *t = &b->t[b->par_t[i]];
            const vc_weight_row *w = vc_weight_row_get((vc_weights)m->par[i].fmt);
            vc_tspec ws[VC_QUANT_MAX];
            int nw = 0;
            if (w->shared && !wshared[m->par[i].fmt]) {
                vc_quant_extent x = quant_extent(m, m->par[i].fmt);
                nw = w->shared(vc__model_quant(m), &x, ws);
            }
            for (int k = 0; k < nw; k++) vc__alloc(b, ws[k].n, ws[k].dt, CAT_WEIGHT, -1);
            wshared[m->par[i].fmt] = true;
            /* --serve: vLLM's storage where the format's differs (vc_weight_row.vllm_tensors) */
            nw = b->gen.profile && w->vllm_tensors ? w->vllm_tensors(m, i, vc__model_quant(m), (vc_dtype)t->dt, b->o.device, ws)
                                                   : w->tensors(&m->par[i], vc__model_quant(m), (vc_dtype)t->dt, ws);
            for (int k = 0; k < nw; k++) {
                int32_t s = vc__alloc(b, ws[k].n, ws[k].dt, CAT_WEIGHT, m->par[i].owner);
                if (k == 0) t->stor = s;
            }
        }
        param_state(b, i, &shared, ent, src, ne, &cursor);
    }
    free(ent);
    free(src);
    for (size_t p = 0; b->flat && p < m->npar; p++) b->t[b->par_t[p]].stor = -1;
    /* --zero-grad zero: optimizer.zero_grad(set_to_none=False) (torch/optim/optimizer.py
     * Optimizer.zero_grad: p.grad.detach_() or requires_grad_(False), then p.grad.zero_() or
     * torch._foreach_zero_(grads), in place) leaves every trainable parameter's .grad allocated
     * from the previous step, in the parameter's dtype; backward's AccumulateGrad then adds the
     * new gradient into it (accumulate_grad.h: variable_grad += new_grad) and frees it
     * (autograd.c accumulate_grad). One GPU only (request.c refuses the layouts). */
    if (b->o.keep_grads != 0 && (b->o.keep_grads != 1 || (b->train && (b->o.parallel != VC_PARALLEL_NONE || m->stage.on ||
                                                                        !b->optim->steps)))) {
        b->st = VC_ERR_USAGE;
        b->why_opt = O("zero_grad");
        snprintf(b->why, sizeof b->why, "%s", b->o.keep_grads != 1 ? "invalid value"
                 : "zero (gradients kept between steps) is modelled on one GPU with an optimizer");
        return;
    }
    /* --optim-in-bwd, --first-step: one GPU, an optimizer that steps, no GradScaler
     * (its unscale_ wants every gradient at once; torchtune trains in bf16 or fp32);
     * torchtune refuses optimizer_in_bwd with gradient accumulation
     * (recipes/full_finetune_single_device.py __init__ @ bd2a0fc7); --first-step:
     * not bitsandbytes' 8-bit rows (their shared state, made by their first step
     * too, is not modelled lazily) */
    const char *why_inbwd = !b->train ? NULL
                          : b->o.parallel != VC_PARALLEL_NONE || m->stage.on ? "a parallel layout or " O("pp")
                          : !b->optim->steps ? OV("optim", "none")
                          : b->prec->scaler ? "GradScaler (amp-fp16)"
                          : b->o.optim_in_bwd && (b->o.accumulate > 1 || b->o.keep_grads) ? "gradient accumulation or " OV("zero_grad", "zero")
                          : b->o.first_step && b->optim->shared ? "an 8-bit optimizer (its shared state)" : NULL;
    if ((b->o.optim_in_bwd || b->o.first_step) && why_inbwd) {
        b->st = VC_ERR_USAGE;
        b->why_opt = b->o.optim_in_bwd ? O("optim_in_bwd") : O("first_step");
        snprintf(b->why, sizeof b->why, "modelled on one GPU with an optimizer that steps: not with %s", why_inbwd);
        return;
    }
    for (size_t p = 0; b->train && b->o.keep_grads && p < m->npar; p++) {
        const tens_t *t = &b->t[b->par_t[p]];
        if (m->par[p].trainable && m->par[p].numel > 0 && t->rg && b->pgrad[p] < 0)
            b->pgrad[p] = vc__alloc(b, t->n, t->dt, CAT_GRAD, m->par[p].owner);
    }
    if (b->train && b->prec->scaler) { /* GradScaler _scale, _growth_tracker */
        vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_OPT, -1);
        vc__alloc(b, vc_n_fixed(1), VC_DT_I64, CAT_OPT, -1);
    }
    for (size_t i = 0; i < m->nbuf; i++) {
        tens_t *t = &b->t[b->buf_t[i]];
        t->stor = vc__alloc(b, t->n, t->dt, CAT_WEIGHT, -1);
    }
    for (size_t i = 0; i < b->nref; i++) { /* --loss dpo: the frozen reference copy (plan.c vc__emit_reference) */
        tens_t *t = &b->t[b->ref_t[i]];
        t->stor = vc__alloc(b, t->n, t->dt, CAT_WEIGHT, -1);
    }
    if (b->layout->resident) { /* the parallel layout's own state (DDP's buckets) */
        size_t first = b->ns;
        b->layout->resident(b);
        for (size_t s = first; s < b->ns; s++) b->s[s].resident = true;
    }
    for (int i = 0; i < m->ninputs && !m->stage.recv; i++) {
        tens_t *t = &b->t[caller_input(b, i)];
        t->stor = vc__alloc(b, t->n, t->dt, CAT_ACT, -1);
    }
    if (b->target_t >= 0) { /* the targets, made once like the input batch (docs/contract.md) */
        tens_t *t = &b->t[b->target_t];
        t->stor = vc__alloc(b, t->n, t->dt, CAT_ACT, -1);
    }
    workspaces(b);
}

/* One op of a parameter's step program (policy.h); slot[] holds the
 * storages the program's locals refer to, -1 none. */
static void step_op(vc_build *b, const vc_step_op *op, int32_t *slot)
{
    int32_t old = slot[op->slot], made;
    switch (op->op) {
    case VC_STEP_FREE: slot[op->slot] = -1; vc__free(b, old, -1); return;
    case VC_STEP_ALIAS: vc__ref(b, slot[op->src]); slot[op->slot] = slot[op->src]; vc__free(b, old, -1); return;
    case VC_STEP_ALLOC: case VC_STEP_BIND: case VC_STEP_TEMP: break;
    default: return; /* VC_STEP_NOP */
    }
    made = vc__alloc(b, op->t.n, op->t.dt, CAT_TEMP, -1);
    if (op->scratch > 0) /* the kernel's own, while it runs */
        vc__free(b, vc__alloc(b, vc_n_fixed(op->scratch), VC_DT_U8, CAT_TEMP, -1), -1);
    if (op->op == VC_STEP_TEMP) {
        vc__free(b, made, -1);
        return;
    }
    slot[op->slot] = made;
    if (op->op == VC_STEP_BIND) vc__free(b, old, -1);
}

/* The step function returns: its locals' storages are dropped. */
static void drop_slots(vc_build *b, int32_t *slot, size_t n)
{
    for (size_t i = 0; i < n; i++) vc__free(b, slot[i], -1);
}

/* The optimizer's row: each trainable parameter's step program, run op by
 * op over all parameters for foreach (a _foreach_* call takes the whole
 * list), one parameter after another otherwise; only parameter `only` when
 * it is not SIZE_MAX (a flat parameter stepped alone). */
static void run_step_programs(vc_build *b, size_t only)
{
    const vc_optim_row *r = b->optim;
    vc_optim_ctx ctx = {b->o.optim_impl, VC_DT_F32, &b->o};
    vc_step_op prog[VC_OPTIM_MAX];
    size_t *src, np;
    if (!r->step) return;
    if (b->lazy_pass) lazy_states(b, only); /* --first-step: _init_group */
    vc_param_entry *ent = opt_tensors(b, &src, &np);
    if (!ent) { b->st = VC_ERR_NOMEM; return; }
    if (ctx.impl != VC_IMPL_FOREACH) {
        int32_t slot[VC_OPTIM_MAX];
        for (int k = 0; k < VC_OPTIM_MAX; k++) slot[k] = -1;
        for (size_t p = 0; p < np; p++) {
            if (!steps_here(b, src[p]) || (only != SIZE_MAX && src[p] != only) || ent[p].numel == 0) continue;
            ctx.state_dt = state_dt(b, src[p]);
            int n = r->step(&ent[p], &ctx, prog);
            for (int j = 0; j < n; j++) step_op(b, &prog[j], slot);
        }
        drop_slots(b, slot, VC_OPTIM_MAX);
        free(ent), free(src);
        return;
    }
    /* each parameter's program made once (all[off[p] .. off[p + 1])), then run op position by op position */
    int nslots = 1, nops = 0;
    size_t *off = malloc((np + 1) * sizeof *off), nall = 0, call = 0;
    vc_step_op *all = NULL;
    if (!off) { b->st = VC_ERR_NOMEM; free(ent), free(src); return; }
    for (size_t p = 0; p < np; p++) {
        off[p] = nall;
        if (!steps_here(b, src[p]) || (only != SIZE_MAX && src[p] != only) || ent[p].numel == 0) continue;
        ctx.state_dt = state_dt(b, src[p]);
        int n = r->step(&ent[p], &ctx, prog);
        if (n > nops) nops = n;
        for (int j = 0; j < n; j++) {
            if (prog[j].slot + 1 > nslots) nslots = prog[j].slot + 1;
            if (prog[j].op == VC_STEP_ALIAS && prog[j].src + 1 > nslots) nslots = prog[j].src + 1;
        }
        if (n > 0 && nall + (size_t)n > call) {
            size_t nc = call ? 2 * call : 64;
            while (nc < nall + (size_t)n) nc *= 2;
            vc_step_op *na = realloc(all, nc * sizeof *na);
            if (!na) { b->st = VC_ERR_NOMEM; free(all), free(off), free(ent), free(src); return; }
            all = na;
            call = nc;
        }
        if (n > 0) memcpy(all + nall, prog, (size_t)n * sizeof *prog);
        nall += n > 0 ? (size_t)n : 0;
    }
    off[np] = nall;
    int32_t *slot = malloc((np + 1) * (size_t)nslots * sizeof *slot);
    if (!slot) { b->st = VC_ERR_NOMEM; free(all), free(off), free(ent), free(src); return; }
    for (size_t k = 0; k < (np + 1) * (size_t)nslots; k++) slot[k] = -1;
    for (int j = 0; j < nops; j++)
        for (size_t p = 0; p < np; p++)
            if ((size_t)j < off[p + 1] - off[p]) step_op(b, &all[off[p] + (size_t)j], slot + p * (size_t)nslots);
    drop_slots(b, slot, np * (size_t)nslots);
    free(slot);
    free(all), free(off);
    free(ent), free(src);
}

void vc__optimizer_step(vc_build *b)
{
    b->cur_op = -1;
    b->phase = VC_PHASE_OPTIMIZER;
    const vc_model *m = b->m;
    if (b->prec->scaler) { /* unscale_: found_inf */
        int32_t s = vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1);
        vc__free(b, s, -1);
    }
    vc__model_hook(b, true);
    bool alone = false;
    for (size_t i = 0; i < b->nflat; i++) alone |= b->flat[i].alone;
    if (!alone && !b->o.optim_in_bwd) run_step_programs(b, SIZE_MAX); /* --optim-in-bwd: stepped in backward */
    for (size_t i = 0; i < b->nflat && alone && b->layout->module; i++) { /* one step() call each (ZeRO-3's sub-groups) */
        b->layout->module(b, (int)i, VC_PHASE_OPTIMIZER, true);
        run_step_programs(b, i);
        b->layout->module(b, (int)i, VC_PHASE_OPTIMIZER, false);
    }
    vc__model_hook(b, false);
    b->phase = VC_PHASE_IDLE;
    for (size_t p = 0; p < m->npar && !b->o.keep_grads; p++) { /* zero_grad(set_to_none=True) */
        if (b->pgrad[p] >= 0) vc__free(b, b->pgrad[p], -1);
        b->pgrad[p] = -1;
    }
    for (size_t i = 0; i < b->nflat; i++) { /* ... and the layout's sharded gradients */
        if (b->flat[i].grad >= 0) vc__free(b, b->flat[i].grad, -1);
        b->flat[i].grad = -1;
    }
    b->lazy_pass = false; /* --first-step: the state is made */
}

/* --optim-in-bwd: parameter p's post-accumulate-grad hook, as torchtune's
 * recipes register it (recipes/full_finetune_single_device.py _setup_optimizer
 * @ bd2a0fc7: optim_dict = {param: config.instantiate(cfg_optimizer, [param])};
 * training.register_optim_in_bwd_hooks -> torchtune/training/memory.py
 * register_optim_in_bwd_hooks: `optim_dict[param].step(); optim_dict[param].zero_grad()`,
 * on p.register_post_accumulate_grad_hook): AccumulateGrad has just made p.grad;
 * the one-parameter optimizer steps (its state made on its first step under
 * --first-step) and zero_grad(set_to_none=True) frees the gradient. So no full
 * set of gradients is ever alive, and the step after backward does nothing. */
void vc__step_in_backward(vc_build *b, size_t p)
{
    if (b->flat || p >= b->m->npar || b->pgrad[p] < 0 || !steps_here(b, p)) return;
    run_step_programs(b, p);
    vc__free(b, b->pgrad[p], -1);
    b->pgrad[p] = -1;
}

