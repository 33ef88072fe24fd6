/*
 * layout_fsdp1.c — the FSDP1 layouts (their descriptors end the file; layout.c
 * lists them):
 * fsdp (FULL_SHARD), shard-grad-op and hybrid, their units, flat
 * parameters and hooks (docs/parallel.md 1.6).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "util.h"

/* ---- fsdp, shard-grad-op: torch.distributed.fsdp.FullyShardedDataParallel
 * (FSDP1, PyTorch 2.x defaults: use_orig_params=False, backward_prefetch=
 * BACKWARD_PRE, forward_prefetch=False, no mixed precision), sharding_strategy
 * FULL_SHARD or SHARD_GRAD_OP; --offload params: CPUOffload(offload_params=True)
 * (fsdp_units, fsdp_unshard, the end of backward in fsdp_hook);
 * --fsdp-param-dtype / --fsdp-reduce-dtype: MixedPrecision(param_dtype,
 * reduce_dtype), buffer_dtype None (buffers keep their dtype),
 * keep_low_precision_grads False, cast_root_forward_inputs True (the layout
 * hooks' compute and cast_inputs; fsdp_unshard, fsdp_post_backward);
 * --fsdp-use-orig-params: use_orig_params=True (fsdp_units).
 * Sources, pytorch/pytorch: torch/distributed/fsdp/_flat_param.py
 * @01caf79e047fd15e1f75ba3825f789130efa476a (FP), _runtime_utils.py
 * @00ae0bc91ac2c1718d1baa193d9d299e2b82776c (RU).
 *
 * Units, as auto_wrap_policy=transformer_auto_wrap_policy wraps a decoder
 * stack: every copy of a repeated block (a top-level entry with `repeat`,
 * the decoder layers of a Hugging Face config) is one FSDP unit, its
 * parameter-free instances too; every other parameter (embedding, final
 * norm, head) is in the root's. A model
 * with no repeated entry wraps each top-level entry that holds parameters
 * (ModuleWrapPolicy over them), leaving the root none. Each unit's
 * parameters are one FlatParameter, flattened without padding between them
 * (torch/distributed/fsdp/_flat_param.py FlatParamHandle.flatten_tensors,
 * no alignment without use_orig_params; with it, aligned_pad). */

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
 * without parameters is the root's unless `span` (FSDP1 and FSDP2, whose
 * hooks are on the wrapped module: a layer's parameter-free instances run
 * inside it) and it has the key of the unit before it. */
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

/* MixedPrecision's dtypes of a flat parameter of dtype dt (FP FlatParamHandle.
 * _init_param_reduce_dtypes): the forward/backward dtype, param_dtype or the
 * parameters' own; the reduce dtype, reduce_dtype, else param_dtype when it
 * alone is given, else the parameters' own. */
static vc_dtype fwd_dt(const vc_build *b, uint8_t dt)
{
    return b->o.fsdp_param_dtype != VC_FSDP_DTYPE_NONE ? vc__fsdp_dtype(b->o.fsdp_param_dtype) : (vc_dtype)dt;
}

static vc_dtype red_dt(const vc_build *b, uint8_t dt)
{
    return b->o.fsdp_reduce_dtype != VC_FSDP_DTYPE_NONE ? vc__fsdp_dtype(b->o.fsdp_reduce_dtype) : fwd_dt(b, dt);
}

/* use_orig_params=True (FP FlatParamHandle.__init__: align_addresses =
 * use_orig_params; _init_flat_param_and_metadata): before each parameter
 * but the first, padding up to a multiple of _get_aligned_numel(the
 * forward/backward dtype) = 16 bytes / its element size; after the last,
 * padding up to a multiple of the world size ("to avoid a copy for the
 * post-backward reduce-scatter"). The padding is part of the flat parameter
 * (_unpadded_unsharded_size includes it), so of U. at: the elements so far;
 * returns them with the padding before one of n elements. */
static int64_t aligned_pad(int64_t at, int64_t align)
{
    int64_t pad = align - at % align;
    return pad > 0 && pad < align ? at + pad : at;
}

static void fsdp_units(vc_build *b, int64_t group)
{
    const vc_model *m = b->m;
    /* span: a block's parameter-free instances (an attention core, an activation, a residual
     * Add) are its unit's, as FSDP1's hooks are the wrapped block's (RU _register_pre_forward_hooks,
     * _register_post_forward_hooks on the fully sharded module; the post-backward hook on its
     * FlatParameter's AccumulateGrad): one gather per block and pass, not one per run of
     * parameterized instances (fsdp_replica.py's gpt-b4-adam-fsdp-w4-pbf16-rfp32 measured that) */
    b->nflat = (size_t)vc__fsdp_units(m, b->unit_of, true) + 1;
    for (size_t u = 0; u < b->nflat; u++) b->flat[u] = (vc_flat_param){{0, false, 0, 0, -1, NULL, NULL}, VC_DT_F32, 0, 0, -1, -1, {{0, 0}, 0}, false};
    for (size_t p = 0; p < m->npar; p++) {
        const vc_param_entry *e = &m->par[p];
        int32_t u = e->owner >= 0 ? b->unit_of[e->owner] : 0;
        vc_flat_param *f = &b->flat[u];
        /* the parameters as the model keeps them (b->t holds the compute dtype under MixedPrecision) */
        uint8_t dt = (uint8_t)vc_param_pinned_dt(e->flags, b->prec->param_dt);
        /* FlatParamHandle._validate_tensors_to_flatten: one dtype, and (use_orig_params=False)
         * one requires_grad per FlatParameter, else ValueError("Must flatten tensors with
         * uniform ..."). use_orig_params=True permits frozen and trainable together, but the
         * forward's views of a flat parameter that requires grad all require grad (FP
         * _use_unsharded_views: split() views of flat_param), so the frozen ones get gradients
         * too: not modelled */
        if (f->numel > 0 && (dt != f->dt || e->trainable != f->e.trainable)) {
            b->st = VC_ERR_USAGE;
            b->why_opt = O("parallel");
            if (dt == f->dt && b->o.fsdp_use_orig_params)
                snprintf(b->why, sizeof b->why, "the FSDP unit of %s mixes frozen and trainable parameters (%s): with "
                         "use_orig_params=True the frozen ones get gradients too, not modelled",
                         u == 0 ? "the root" : m->inst[e->owner].path, e->name ? e->name : "?");
            else
                snprintf(b->why, sizeof b->why, "the FSDP unit of %s mixes %s parameters (%s): FSDP1 refuses that (use_orig_params=False)",
                         u == 0 ? "the root" : m->inst[e->owner].path, dt != f->dt ? "dtypes of" : "frozen and trainable",
                         e->name ? e->name : "?");
            return;
        }
        f->dt = dt;
        if (b->o.fsdp_use_orig_params && f->numel > 0) f->numel = aligned_pad(f->numel, 16 / vc_dtype_size(fwd_dt(b, dt)));
        f->numel += e->numel;
        f->e.trainable = e->trainable;
    }
    for (size_t u = 0; u < b->nflat && b->o.fsdp_use_orig_params; u++)
        if (b->flat[u].numel > 0) b->flat[u].numel = aligned_pad(b->flat[u].numel, group);
    if (b->o.fsdp_param_dtype != VC_FSDP_DTYPE_NONE && !vc__layout_dense_only(b, O("fsdp_param_dtype"), "FSDP1's MixedPrecision"))
        return;
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

/* --loss grpo --use-vllm under fsdp (src/engine/grpo.c): TRL's _sync_fsdp1_params_to_vllm (trl @f2cd5771
 * trl/generation/vllm_generation.py) walks the modules post-order and holds each FSDP unit whole in turn,
 * FSDP.summon_full_params(module, recurse=False, writeback=False): the unit's padded unsharded flat parameter
 * (FlatParamHandle.unshard -> _alloc_padded_unsharded_flat_param, shard x world elements in the flat parameter's
 * dtype: no MixedPrecision, which grpo.c refuses), freed when the context exits, before the next unit's. The largest
 * one's bytes in 512-byte blocks (units and shards as fsdp_units makes them for FULL_SHARD; 0 at one rank, where
 * FSDP1 runs NO_SHARD and nothing is unsharded); -1 on overflow or no memory. */
int64_t vc__fsdp1_unit_max_bytes(const vc_model *m, const vc_options *o)
{
    const int64_t world = vc_dp_world(o);
    const vc_dtype pdt = vc_precision_row_get(o->precision)->param_dt;
    if (world <= 1) return 0; /* NO_SHARD at world size 1 (below): the flat parameter is the unit, whole */
    int32_t *unit_of = malloc((m->ninst + 1) * sizeof *unit_of);
    if (!unit_of) return -1;
    const int32_t nu = vc__fsdp_units(m, unit_of, true) + 1;
    int64_t *numel = calloc((size_t)nu, sizeof *numel), max = 0;
    vc_dtype *dt = malloc((size_t)nu * sizeof *dt);
    if (!numel || !dt) max = -1;
    for (size_t p = 0; max >= 0 && p < m->npar; p++) {
        int32_t u = m->par[p].owner >= 0 ? unit_of[m->par[p].owner] : 0;
        dt[u] = vc_param_pinned_dt(m->par[p].flags, pdt);
        if (__builtin_add_overflow(numel[u], m->par[p].numel, &numel[u])) max = -1;
    }
    for (int32_t u = 0; max >= 0 && u < nu; u++) {
        int64_t el, v;
        if (numel[u] == 0) continue;
        if (__builtin_mul_overflow(shard_numel(numel[u], world), world, &el) ||
            (v = vc_bytes(vc_n_fixed(el), dt[u], 1)) < 0 || v > INT64_MAX - 511) {
            max = -1;
            break;
        }
        v = (v + 511) / 512 * 512;
        if (v > max) max = v;
    }
    free(unit_of);
    free(numel);
    free(dt);
    return max;
}

/* FULL_SHARD and SHARD_GRAD_OP shard over every rank. */
static void fsdp_flat(vc_build *b) { fsdp_units(b, vc_dp_world(&b->o)); }

/* ---- hybrid: HYBRID_SHARD, FULL_SHARD inside each node and replicated
 * across nodes: the shard group is the node's devices
 * (_init_utils.py _init_process_group_state_for_hybrid_shard ->
 * _init_intra_and_inter_node_groups(default group, device_count())),
 * HYBRID_NODE here (an 8-GPU node; the descriptor's node_gpus, and so
 * vc__check_options, asks the data-parallel ranks to be at most that or a
 * multiple of it). The sharded gradient is then
 * all-reduced over the inter-node group in place (_post_backward_hook:
 * default_hooks.allreduce_hook on new_sharded_grad): nothing more is
 * allocated. */
#define HYBRID_NODE 8
static void hybrid_flat(vc_build *b)
{
    fsdp_units(b, vc_dp_world(&b->o) < HYBRID_NODE ? vc_dp_world(&b->o) : HYBRID_NODE);
}


/* World size 1: FSDP1 clamps every strategy to NO_SHARD (pytorch/pytorch@
 * 39ec502db40696605fd91001e5a0afa23ed62f20 torch/distributed/fsdp/_init_utils.py
 * _init_core_state: "if state.world_size == 1: sharding_strategy =
 * ShardingStrategy.NO_SHARD"; HYBRID_SHARD's world size is its intra-node
 * group's, 1 as well on one GPU). Then FlatParamHandle.uses_sharded_strategy
 * is false: the flat parameter is the whole unit, never gathered nor freed
 * (FP needs_unshard: False; unshard -> _use_unsharded_flat_param(self.flat_param));
 * no _full_param_padded (init_flat_param_attributes makes it only for sharded
 * strategies). */
static bool no_shard(const vc_build *b) { return vc_dp_world(&b->o) == 1; }

/* NO_SHARD's unshard (FP pre_unshard, unshard, post_unshard): under parameter
 * mixed precision, _use_low_precision_shard allocates _mp_shard (U elements of
 * param_dtype; under CPUOffload from an H2D copy of the shard, gone after the
 * copy_) and flat_param.data points at it; post_unshard keeps it ("for NO_SHARD,
 * _mp_shard is not freed in the post-unshard since it is also the low precision
 * *unsharded* flat parameter"), post_reshard frees it. Without mixed precision,
 * under CPUOffload, flat_param_to(self.device) copies the CPU flat parameter to
 * the GPU (a new tensor, flat_param.data until reshard's _use_sharded_flat_param
 * points it back at the CPU _local_shard). Otherwise nothing. */
static void no_shard_unshard(vc_build *b, vc_flat_param *f, vc_dtype lo, int32_t at)
{
    bool off = b->o.offload == VC_OFFLOAD_PARAMS;
    if (lo == (vc_dtype)f->dt && !off) return;
    if (lo != (vc_dtype)f->dt && off) vc__free(b, vc__alloc(b, f->held.n, (vc_dtype)f->dt, CAT_TEMP, at), at);
    f->full = vc__alloc(b, f->held.n, lo, CAT_WEIGHT, at);
    if (f->full >= 0) b->s[f->full].transient = true;
}

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
    vc_dtype lo = fwd_dt(b, f->dt);
    if (no_shard(b)) {
        no_shard_unshard(b, f, lo, at);
        return;
    }
    if (lo != (vc_dtype)f->dt) { /* parameter mixed precision: _uses_param_mixed_precision */
        /* FP pre_unshard -> _use_low_precision_shard: _alloc_storage(_mp_shard) (the shard's size,
         * param_dtype), then _mp_shard.copy_(_local_shard.to(device)): under CPUOffload the .to() is an
         * H2D copy of the full-precision shard, gone after the copy_ (the flat_param_to branch is not
         * taken: mixed precision comes first). FP unshard -> _alloc_padded_unsharded_flat_param:
         * _full_param_padded in param_dtype (init_flat_param_attributes), all-gathered from _mp_shard;
         * then post_unshard -> _free_low_precision_sharded_param frees _mp_shard */
        int32_t mp = vc__alloc(b, f->held.n, lo, CAT_TEMP, at);
        if (b->o.offload == VC_OFFLOAD_PARAMS)
            vc__free(b, vc__alloc(b, f->held.n, (vc_dtype)f->dt, CAT_TEMP, at), at);
        f->full = vc__alloc(b, vc_n_fixed(f->padded), lo, CAT_WEIGHT, at);
        if (f->full >= 0) b->s[f->full].transient = true;
        vc__free(b, mp, at);
        return;
    }
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
/* use_orig_params=True: the forward's views are split() by _numels_with_padding
 * (FP _get_unflat_views_aligned), and the padding splits get no gradient, so
 * SplitWithSizesBackward (torch/csrc/autograd/FunctionsManual.cpp
 * split_with_sizes_backward) makes at::zeros of each padding's size, in the
 * views' dtype, before its cat, and they go with it. make: allocated into
 * z[0 .. *n) (the paddings of fsdp_units, walked again); else freed. */
static void pad_zeros(vc_build *b, int32_t u, vc_dtype lo, int32_t at, int32_t **z, size_t *n, bool make)
{
    const vc_model *m = b->m;
    if (!make) {
        for (size_t k = 0; k < *n; k++) vc__free(b, (*z)[k], at);
        free(*z);
        *z = NULL, *n = 0;
        return;
    }
    const vc_flat_param *f = &b->flat[u];
    int64_t total = 0, align = 16 / vc_dtype_size(lo), world = f->held.n.fx > 0 ? f->padded / f->held.n.fx : 1;
    *z = malloc((m->npar + 2) * sizeof **z);
    *n = 0;
    if (!*z) { b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p <= m->npar; p++) {
        if (p < m->npar && (m->par[p].owner >= 0 ? b->unit_of[m->par[p].owner] : 0) != u) continue;
        int64_t next = aligned_pad(total, p < m->npar ? align : world);
        if (next > total) (*z)[(*n)++] = vc__alloc(b, vc_n_fixed(next - total), lo, CAT_GRAD, at);
        total = next + (p < m->npar ? m->par[p].numel : 0);
    }
}

/* NO_SHARD's half of RU _post_backward_hook, the unsharded flat gradient g (the
 * views' dtype lo) in hand: _reshard(free_unsharded_flat_param=False:
 * _should_free_in_backward is False without a sharded strategy) has run, its
 * post_reshard freeing _mp_shard. autograd_computed_grad = flat_param.grad.data
 * (g, held to the hook's end); a gradient not in the reduce dtype rd is cast,
 * flat_param.grad.data = flat_param.grad.to(rd); the communication hook
 * (default_hooks.allreduce_hook: NO_SHARD's, _init_utils.py _get_default_comm_hook)
 * all-reduces flat_param.grad in place; _cast_grad_to_param_dtype(flat_param.grad)
 * replaces it by a copy in the flat parameter's dtype when it differs (the rd
 * tensor, low_prec_grad_data, goes as that returns). What is left is .grad, the
 * whole unit's gradient, until zero_grad (FP prepare_gradient_for_optim: no
 * _saved_grad_shard, .grad stays; under CPUOffload it becomes _cpu_grad at the
 * end of backward, fsdp_hook). */
static void no_shard_grad(vc_build *b, vc_flat_param *f, int32_t g, vc_dtype lo, vc_dtype rd, int32_t at)
{
    int32_t cur = rd != lo ? vc__alloc(b, vc_n_fixed(f->numel), rd, CAT_GRAD, at) : g;
    if (rd != (vc_dtype)f->dt) {
        int32_t c = vc__alloc(b, vc_n_fixed(f->numel), (vc_dtype)f->dt, CAT_GRAD, at);
        if (cur != g) vc__free(b, cur, at);
        cur = c;
    }
    if (cur != g) vc__free(b, g, at);
    if (f->grad >= 0) vc__free(b, cur, at); /* AccumulateGrad adds into the .grad kept (no no_sync) */
    else f->grad = cur;
}

static void fsdp_post_backward(vc_build *b, int32_t u, int32_t at)
{
    const vc_model *m = b->m;
    vc_flat_param *f = &b->flat[u];
    vc_dtype lo = fwd_dt(b, f->dt), rd = red_dt(b, f->dt);
    int32_t g = -1, *zeros = NULL;
    size_t nz = 0;
    for (size_t p = 0; p < m->npar; p++) {
        int32_t pu = m->par[p].owner >= 0 ? b->unit_of[m->par[p].owner] : 0;
        if (pu != u || b->pgrad[p] < 0) continue;
        if (g >= 0) continue;
        if (b->o.fsdp_use_orig_params) pad_zeros(b, u, lo, at, &zeros, &nz, true);
        g = vc__alloc(b, vc_n_fixed(f->numel), lo, CAT_GRAD, at); /* the views' dtype: param_dtype */
        if (b->o.fsdp_use_orig_params) pad_zeros(b, u, lo, at, &zeros, &nz, false);
    }
    for (size_t p = 0; p < m->npar && g >= 0; p++) {
        int32_t pu = m->par[p].owner >= 0 ? b->unit_of[m->par[p].owner] : 0;
        if (pu != u || b->pgrad[p] < 0) continue;
        vc__free(b, b->pgrad[p], at);
        b->pgrad[p] = -1;
    }
    fsdp_reshard(b, u, at);
    if (g < 0) return;
    if (no_shard(b)) {
        no_shard_grad(b, f, g, lo, rd, at);
        return;
    }
    /* RU _post_backward_hook: autograd_computed_grad = flat_param.grad.data (kept to the hook's
     * end); a gradient not in the reduce dtype is cast first, flat_param.grad.data =
     * flat_param.grad.to(handle._reduce_dtype); the padding and new_sharded_grad are then in
     * that dtype; _cast_grad_to_param_dtype: sharded_grad.data = sharded_grad.data.to(param.dtype)
     * when it differs from the flat parameter's (the reduce-dtype shard goes as it returns) */
    int32_t gr = rd != lo ? vc__alloc(b, vc_n_fixed(f->numel), rd, CAT_GRAD, at) : -1;
    int32_t pad = f->padded > f->numel ? vc__alloc(b, vc_n_fixed(f->padded), rd, CAT_GRAD, at) : -1;
    int32_t shard = vc__alloc(b, f->held.n, rd, CAT_GRAD, at);
    if (rd != (vc_dtype)f->dt) {
        int32_t c = vc__alloc(b, f->held.n, (vc_dtype)f->dt, CAT_GRAD, at);
        vc__free(b, shard, at);
        shard = c;
    }
    if (f->grad >= 0) vc__free(b, shard, at); /* _saved_grad_shard += new_sharded_grad */
    else f->grad = shard;
    if (pad >= 0) vc__free(b, pad, at);
    if (gr >= 0) vc__free(b, gr, at);
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
        /* NO_SHARD: _post_forward_reshard -> _reshard(free=False) still runs post_reshard
         * (freeing _mp_shard) and _use_sharded_flat_param (CPUOffload: the GPU copy goes), the
         * root's too, at its post-forward */
        if (cur > 0 && cur != u && (reshard_after_forward || no_shard(b))) fsdp_reshard(b, cur, inst);
        if (inst < 0 && !begin && no_shard(b)) fsdp_reshard(b, 0, inst);
        if (inst >= 0 && begin) fsdp_unshard(b, u, inst);
        b->lay_cur = inst < 0 && !begin ? -1 : u;
        return;
    }
    if (ph != VC_PHASE_BACKWARD) return;
    /* The root's pre-backward (RU _pre_backward_hook, registered by _register_pre_backward_hooks on
     * the root's forward outputs) runs as their gradient arrives. A Hugging Face model given labels
     * (Trainer) returns its loss among them, so it runs as backward begins; a model whose loss is
     * computed outside the root (a model file: the harness's loss) has it run after the loss's
     * backward, at the first instance's (fsdp_replica.py's gptstack-b8-sgd-fsdp-w1-pbf16-rfp32
     * measured that timing). It unshards the root (kept gathered after forward by FULL_SHARD and
     * SHARD_GRAD_OP; NO_SHARD freed its _mp_shard or CPUOffload copy at the post-forward) and
     * prefetches the last unit. lay_n[0]: still to run. */
    bool loss_in_root = b->m->gen_json != NULL;
    if ((inst >= 0 && begin && b->lay_n[0]) || (inst < 0 && begin && loss_in_root)) {
        b->lay_n[0] = 0;
        fsdp_unshard(b, 0, inst);
        if (b->flat[0].numel > 0) fsdp_unshard(b, (int32_t)b->nflat - 1, inst);
    }
    if (inst < 0) {
        if (begin && !loss_in_root) b->lay_n[0] = 1;
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

/* use_orig_params=True: the optimizer is built on the original parameters, whose
 * data FP _use_sharded_views sets to their slices of this rank's shard
 * (flat_param[offset_in_shard : offset_in_shard + numel_in_shard], _get_shard_metadata),
 * or to an empty tensor when none of a parameter is here; _use_sharded_grad_views
 * gives those a None .grad, so the optimizer skips them (torch/optim/adam.py
 * _init_group: `if p.grad is not None`) and they get no state. So each of the
 * optimizer's tensors is one slice (the padding is no parameter's), and its
 * state one tensor per slice. out (room for every parameter): the numels of
 * flat parameter i's slices on rank 0, [0, shard); returns how many, 0 when
 * the optimizer holds the flat parameter itself (not use_orig_params,
 * CPUOffload: the CPU steps). The layouts' slices hook. */
static size_t fsdp1_slices(const vc_build *b, size_t i, int64_t *out)
{
    if (!b->o.fsdp_use_orig_params || !b->flat || i >= b->nflat || b->o.offload == VC_OFFLOAD_PARAMS) return 0;
    const vc_model *m = b->m;
    const vc_flat_param *f = &b->flat[i];
    int64_t at = 0, shard = f->held.n.fx, align = 16 / vc_dtype_size(fwd_dt(b, f->dt));
    size_t n = 0;
    for (size_t p = 0; p < m->npar; p++) { /* fsdp_units' walk: the parameters in order, aligned */
        if ((m->par[p].owner >= 0 ? b->unit_of[m->par[p].owner] : 0) != (int32_t)i) continue;
        at = aligned_pad(at, align);
        int64_t hi = at + m->par[p].numel < shard ? at + m->par[p].numel : shard;
        if (hi > at) out[n++] = hi - at;
        at += m->par[p].numel;
    }
    return n;
}

/* The fsdp, shard-grad-op and hybrid layouts' options (vc__fsdp_mp_check,
 * layout_fsdp2.c, hands them here): MixedPrecision(param_dtype,
 * reduce_dtype) casts a model kept in one dtype, as FSDP2's policy does; the
 * precision rows with autocast or fp32 master copies on top are not modelled. */
vc_status vc__fsdp1_mp_check(const vc_options *o, vc_error *err)
{
    char names[128];
    if (o->fsdp_use_orig_params && !(vc__layout_desc(o->parallel)->caps & VC_LAYOUT_FSDP1_OPTIONS))
        return vc_set_error(err, VC_ERR_USAGE, O("fsdp_use_orig_params"), "use_orig_params is FSDP1's: give " OV("parallel", "%s"),
                            vc__layout_names(VC_LAYOUT_FSDP1_OPTIONS, " or ", names, sizeof names));
    const char *opt = o->fsdp_param_dtype != VC_FSDP_DTYPE_NONE ? O("fsdp_param_dtype") : O("fsdp_reduce_dtype");
    if (o->fsdp_param_dtype == VC_FSDP_DTYPE_NONE && o->fsdp_reduce_dtype == VC_FSDP_DTYPE_NONE) return VC_OK;
    const vc_precision_row *pr = vc_precision_row_get(o->precision);
    if (pr->master || pr->amp_dt != VC_DT_F32)
        return vc_set_error(err, VC_ERR_USAGE, opt, "FSDP1's MixedPrecision with %s on top (%s) is not modelled: give -p "
                            "fp32 (or fp16, bf16)", pr->master ? "fp32 master weights" : "autocast",
                            vc_precision_name(o->precision));
    return VC_OK;
}

/* CPUOffload(offload_params=True) moves the parameters, and with them their gradients and the
 * optimizer step, to the CPU: there is no optimizer-only offload. */
#define FSDP1_OFFLOAD_WHY "FSDP1 has no optimizer-only offload (CPUOffload moves the parameters, their gradients " \
                          "and optimizer state): " OV("offload", "params")
#define FSDP1_HOOKS(module_, flat_) \
    {.module = module_, .flat = flat_, .compute = vc__fsdp_compute, .slices = fsdp1_slices, .cast_inputs = true}

const vc_layout_desc vc_layout_fsdp = {
    .id = VC_PARALLEL_FSDP,
    .aliases = {"full-shard"},
    .hooks = FSDP1_HOOKS(fsdp_full_shard, fsdp_flat),
    .caps = VC_LAYOUT_FSDP1_OPTIONS,
    .offload = 1u << VC_OFFLOAD_PARAMS,
    .offload_why = FSDP1_OFFLOAD_WHY,
    .mp_class = "MixedPrecision",
};

const vc_layout_desc vc_layout_shard_grad_op = {
    .id = VC_PARALLEL_FSDP_GRAD_OP,
    .hooks = FSDP1_HOOKS(fsdp_shard_grad_op, fsdp_flat),
    .caps = VC_LAYOUT_FSDP1_OPTIONS,
    .offload = 1u << VC_OFFLOAD_PARAMS,
    .offload_why = FSDP1_OFFLOAD_WHY,
    .mp_class = "MixedPrecision",
};

const vc_layout_desc vc_layout_hybrid = {
    .id = VC_PARALLEL_FSDP_HYBRID,
    .aliases = {"hybrid-shard", "hsdp"},
    .hooks = FSDP1_HOOKS(fsdp_full_shard, hybrid_flat),
    .caps = VC_LAYOUT_FSDP1_OPTIONS,
    .offload = 1u << VC_OFFLOAD_PARAMS,
    .offload_why = FSDP1_OFFLOAD_WHY,
    .mp_class = "MixedPrecision",
    .node_gpus = HYBRID_NODE,
};
