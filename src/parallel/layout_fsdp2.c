/*
 * layout_fsdp2.c — the fsdp2 layout (its descriptor ends the file; layout.c
 * lists it):
 * PyTorch FSDP2, torch.distributed.fsdp.fully_shard, by default with its
 * defaults (reshard_after_forward None: True but the root's False, implicit
 * prefetching, no offload), one fully_shard per repeated block (the decoder
 * layers) and one on the root, as the fsdp layout wraps (vc__fsdp_units);
 * --fsdp-reshard-after-forward (every call's value), --offload params
 * (CPUOffloadPolicy) and --fsdp-replicate (HSDP) change that. From the
 * source only (FSDP2 is not in torch 1.13; docs/parallel.md 2.5). Sources,
 * pytorch/pytorch, torch/distributed/fsdp/_fully_shard/:
 *   _fsdp_param.py        @010ae4a89516fa3be548ab16dff711414ec12d0b (F2P)
 *   _fsdp_param_group.py  @010ae4a89516fa3be548ab16dff711414ec12d0b (F2G)
 *   _fsdp_collectives.py  @010ae4a89516fa3be548ab16dff711414ec12d0b (F2C)
 *   _fsdp_state.py        @01c9f4fcc3ffa856d3d1b038998b8ad90db4ec02 (F2S)
 *   _fully_shard.py       @0257dd1c405a7e3a8779e6c88eef5c8c9cea1620
 *   _fsdp_init.py         @0140b62d8bab203e4699faeba802b5204fa51d26
 *
 * Each parameter is sharded on its own (F2P FSDPParam._init_sharded_param):
 * chunk(world, dim 0); every rank keeps a tensor of chunks[0]'s size,
 * ceil(dim0 / world) x the other dims, zero-padded (padded_sharded_param);
 * rank 0 holds a full chunk, so it stands for the busiest rank. The
 * optimizer is built on these sharded parameters, one state per parameter.
 * MixedPrecisionPolicy (--fsdp-param-dtype, --fsdp-reduce-dtype): the
 * sharded parameters, their gradients and the optimizer keep the model's
 * dtype (orig_dtype); the all-gather and the compute run in param_dtype;
 * gradients are reduced in reduce_dtype (F2P init_dtype_attrs: a
 * reduce_dtype equal to param_dtype is no reduce_dtype; F2C foreach_reduce:
 * reduce_dtype or the gradients' dtype).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "util.h"

typedef struct {
    int64_t world;
    int32_t ngroup;       /* groups: [0] the root's (fully_shard(model)), then one per unit */
    int32_t *gstart, *glist; /* parameters by group: glist[gstart[g] .. gstart[g + 1]) */
    int64_t *shard;       /* per parameter: padded_sharded_param_size's numel */
    int32_t *unsh;        /* per parameter: its all_gather_outputs[0] (the unsharded parameter), -1 */
    int32_t *ag;          /* per group: _all_gather_result's all_gather_output, -1 */
    bool *pending;        /* per group: an unshard() waits for its wait_for_unshard() */
    bool *unsharded;      /* per group: ShardedState.UNSHARDED */
    bool *pre_bwd, *post_bwd; /* per group, this backward: pre_backward / post_backward ran */
    int32_t *first, *last; /* per group: its first and last instance (in execution order) */
    int32_t *order;       /* comm_ctx.post_forward_order (groups) */
    int32_t norder, corder; /* its length and room: every forward before a backward adds its groups (GRPO's no-grad
                             * log-prob passes before the step's forward: _record_post_forward, with multiplicity) */
    int32_t *pfi;         /* per group: its index in post_forward_order (_post_forward_indices), -1 */
    int32_t saved;        /* comm_ctx.all_gather_state's all_gather_output, -1 */
    int32_t *rs;          /* comm_ctx.reduce_scatter_states' reduce_scatter_input */
    int32_t nrs;
    bool root_pre_bwd, root_post_fwd;
    bool causal;          /* the root module returns the loss (a transformers *ForCausalLM with labels) */
    int32_t last_inst;    /* the model's last instance */
    int64_t *post;        /* per group: the world after forward (post_forward_mesh_info): 0 none (kept
                           * unsharded), world (resharded), else the smaller mesh's size */
    int32_t *pfd;         /* per parameter: _sharded_post_forward_param_data, -1 */
    bool *pfs;            /* per group: ShardedState.SHARDED_POST_FORWARD */
    uint8_t orig_dt, param_dt, reduce_dt; /* param_dt: the unsharded parameters' (the compute dtype) */
    bool mp;              /* param_dt differs from orig_dt: a cast copy feeds the all-gather */
    bool off;             /* CPUOffloadPolicy (--offload params): shards, gradients, step on the CPU */
    bool hsdp;            /* --fsdp-replicate > 1: each reduce-scatter output is all-reduced over the replicas */
    int32_t *ar;          /* per group: _all_reduce_state's all_reduce_input (HSDP), -1 */
} f2_state;

static f2_state *F(vc_build *b) { return b->lay_state; }

static void f2_free(void *state)
{
    f2_state *z = state;
    if (!z) return;
    free(z->gstart); free(z->glist); free(z->shard); free(z->unsh); free(z->ag); free(z->pending);
    free(z->unsharded); free(z->pre_bwd); free(z->post_bwd); free(z->first); free(z->last); free(z->order);
    free(z->pfi); free(z->rs); free(z->post); free(z->pfd); free(z->pfs); free(z->ar); free(z);
}

/* padded_sharded_param_size (F2P _init_sharded_param): _chunk_with_empty(param,
 * world, dim=0)[0], ceil(dim0 / world) rows of the other dims. */
static int64_t f2_shard(const vc_param_entry *e, int64_t world)
{
    int64_t d0 = e->nd >= 1 && e->dims && e->dims[0] > 0 ? e->dims[0] : e->numel, rest = d0 > 0 ? e->numel / d0 : 0;
    return (d0 / world + (d0 % world != 0)) * rest; /* at most numel (ceil(d0 / world) <= d0) */
}

/* A group's post_forward_mesh_info as a world size (0: None). fully_shard
 * (_fully_shard.py @0257dd1c405a7e3a8779e6c88eef5c8c9cea1620): an unset
 * reshard_after_forward (None, auto) is True for every group, and the root's
 * lazy init (F2S FSDPState._lazy_init, `if self._auto_reshard_after_forward`)
 * sets the root's groups' post_forward_mesh_info = None; a value given is
 * every call's, the root's too. _fsdp_init.py
 * @0140b62d8bab203e4699faeba802b5204fa51d26 _get_post_forward_mesh_info:
 * True -> the mesh (reshard to the shards), False -> None, an int 1 -> False,
 * the shard mesh size -> True, else a (world / N) x N HSDPMeshInfo: after
 * forward each rank keeps 1/N of each parameter (vc__fsdp_mp_check refused
 * an N not dividing the world). */
static int64_t f2_post_world(const vc_options *o, int64_t world, bool root)
{
    int64_t r = o->fsdp_reshard;
    if (r == VC_FSDP_RESHARD_AUTO) return root ? 0 : world;
    if (r == VC_FSDP_RESHARD_TRUE) return world;
    if (r == VC_FSDP_RESHARD_FALSE || r == 1) return 0;
    return r;
}

/* The groups and the per-parameter flat entries the optimizer sees (the
 * sharded parameters). */
static bool f2_groups(vc_build *b, f2_state *z)
{
    const vc_model *m = b->m;
    size_t np = m->npar, ng = (size_t)z->ngroup;
    z->gstart = calloc(ng + 1, sizeof *z->gstart);
    z->glist = malloc((np + 1) * sizeof *z->glist);
    z->shard = calloc(np + 1, sizeof *z->shard);
    z->unsh = malloc((np + 1) * sizeof *z->unsh);
    z->ag = malloc(ng * sizeof *z->ag);
    z->pending = calloc(ng, sizeof *z->pending);
    z->unsharded = calloc(ng, sizeof *z->unsharded);
    z->pre_bwd = calloc(ng, sizeof *z->pre_bwd);
    z->post_bwd = calloc(ng, sizeof *z->post_bwd);
    z->first = malloc(ng * sizeof *z->first);
    z->last = malloc(ng * sizeof *z->last);
    z->order = malloc((ng + 1) * sizeof *z->order);
    z->corder = (int32_t)ng + 1;
    z->pfi = malloc(ng * sizeof *z->pfi);
    z->rs = malloc((ng + 1) * sizeof *z->rs);
    z->post = calloc(ng, sizeof *z->post);
    z->pfd = malloc((np + 1) * sizeof *z->pfd);
    z->pfs = calloc(ng, sizeof *z->pfs);
    z->ar = malloc(ng * sizeof *z->ar);
    if (!z->ar || !z->gstart || !z->glist || !z->shard || !z->unsh || !z->ag || !z->pending || !z->unsharded || !z->pre_bwd ||
        !z->post_bwd || !z->first || !z->last || !z->order || !z->pfi || !z->rs || !z->post || !z->pfd || !z->pfs)
        return false;
    for (size_t g = 0; g < ng; g++) z->post[g] = f2_post_world(&b->o, z->world, g == 0), z->ar[g] = -1;
    for (size_t g = 0; g < ng; g++) z->ag[g] = z->first[g] = z->last[g] = z->pfi[g] = -1;
    for (size_t i = 0; i < m->ninst; i++) {
        int32_t g = b->unit_of[i];
        if (z->first[g] < 0) z->first[g] = (int32_t)i;
        z->last[g] = (int32_t)i;
    }
    for (size_t p = 0; p < np; p++) z->gstart[(m->par[p].owner >= 0 ? b->unit_of[m->par[p].owner] : 0) + 1]++;
    for (size_t g = 0; g < ng; g++) z->gstart[g + 1] += z->gstart[g];
    int32_t *fill = z->rs; /* scratch: the next slot of each group */
    for (size_t g = 0; g < ng; g++) fill[g] = z->gstart[g];
    int64_t total = 0, padded; /* every all-gather and reduce-scatter is at most this: kept under 2^56 elements */
    for (size_t p = 0; p < np; p++) {
        const vc_param_entry *e = &m->par[p];
        z->glist[fill[e->owner >= 0 ? b->unit_of[e->owner] : 0]++] = (int32_t)p;
        z->shard[p] = f2_shard(e, z->world);
        if (__builtin_mul_overflow(z->shard[p], z->world, &padded) || __builtin_add_overflow(total, padded, &total) ||
            total > (INT64_C(1) << 56)) {
            b->st = VC_ERR_OVERFLOW;
            return true;
        }
        z->unsh[p] = z->pfd[p] = -1;
        /* the optimizer's parameter: the sharded DTensor (rank 0's local tensor, chunks[0]); under
         * CPUOffloadPolicy on the CPU (F2P _init_sharded_param: padded_sharded_param.cpu(),
         * pin_memory()), with its gradient (foreach_reduce: new_sharded_grad.to(cpu)) and the
         * optimizer's state and step: none of them on the GPU */
        int64_t here = z->off ? 0 : z->shard[p];
        b->flat[p] = (vc_flat_param){{here, e->trainable && !z->off, 0, 0, -1, NULL, NULL, 0}, z->orig_dt, e->numel,
                                     z->shard[p] * z->world, -1, -1, {vc_n_fixed(here), z->orig_dt, 0}, false};
    }
    b->nflat = np;
    return true;
}

/* The parameters fully_shard is modelled over: dense ones (no quantized
 * weights), all of one dtype. A LoRA model is sharded as any other
 * (torchtune lora_finetune_distributed.py _setup_model: set_trainable_params
 * on the adapters, then training.shard_model's fully_shard per layer and on
 * the root, pytorch/torchtune @ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1):
 * each FSDPParamGroup holds the layer's frozen base weights and its
 * adapters. Its all-gather is one flat buffer of every parameter's shard,
 * the frozen ones included (F2C foreach_all_gather over the group's
 * fsdp_params); only parameters with a gradient are reduce-scattered (F2G
 * FSDPParamGroup.post_backward: fsdp_params_with_grad, the unsharded
 * parameters whose .grad is set; here b->pgrad), so the sharded gradients
 * and the optimizer's state are the adapters' shards (AdamW makes no state
 * for a parameter without .grad). Mixed dtypes in one group (fp32 adapters
 * in a 16-bit model, an fp32-pinned norm) make the all-gather a uint8 one
 * (F2C _get_all_gather_input_metadatas) and are not modelled; nor is a
 * pinned parameter under param_dtype (the layer computes in its pinned
 * dtype, fully_shard casts it). Refuses (b->st) and returns false then. */
static const char *f2_dt_name(vc_dtype d)
{
    return d == VC_DT_F32 ? "fp32" : d == VC_DT_BF16 ? "bf16" : d == VC_DT_F16 ? "fp16" : "?";
}

static bool f2_params_ok(vc_build *b, const f2_state *z)
{
    const vc_model *m = b->m;
    for (size_t p = 0; p < m->npar; p++) {
        const vc_param_entry *e = &m->par[p];
        vc_dtype dt = vc_param_pinned_dt(e->flags, (vc_dtype)z->orig_dt);
        if (e->fmt == VC_WEIGHTS_DENSE && dt == (vc_dtype)z->orig_dt && (!z->mp || !(e->flags & VC_PARAM_PINNED))) continue;
        b->st = VC_ERR_USAGE;
        b->why_opt = O("parallel");
        if (e->fmt != VC_WEIGHTS_DENSE)
            snprintf(b->why, sizeof b->why, "fsdp2 over quantized parameters (%s) is not modelled", e->name ? e->name : "?");
        else if (dt != (vc_dtype)z->orig_dt)
            snprintf(b->why, sizeof b->why, "fsdp2 over %s %s parameters (%s) in a %s model is not modelled (a uint8 all-gather)",
                     f2_dt_name(dt), e->flags & VC_PARAM_ADAPTER ? "LoRA adapter" : "pinned", e->name ? e->name : "?",
                     f2_dt_name((vc_dtype)z->orig_dt));
        else
            snprintf(b->why, sizeof b->why, "fsdp2's param_dtype over %s-pinned parameters (%s) is not modelled",
                     f2_dt_name(dt), e->name ? e->name : "?");
        return false;
    }
    return true;
}

/* The flat hook: the groups (one per unit, vc__fsdp_units, and the root's),
 * the dtypes, and one flat entry per parameter. */
static void fsdp2_flat(vc_build *b)
{
    const vc_model *m = b->m;
    f2_state *z = calloc(1, sizeof *z);
    if (!z) { b->st = VC_ERR_NOMEM; return; }
    b->lay_state = z;
    b->lay_free = f2_free;
    /* HSDP: the parameters are sharded over the mesh's shard dimension (F2P _init_sharded_param:
     * shard_world_size = mesh_info.shard_mesh_size), world / replicas ranks */
    z->hsdp = b->o.fsdp_replicate > 1;
    z->world = vc_dp_world(&b->o) / (z->hsdp ? b->o.fsdp_replicate : 1);
    z->ngroup = vc__fsdp_units(m, b->unit_of, true) + 1;
    z->orig_dt = (uint8_t)b->prec->param_dt;
    z->param_dt = (uint8_t)b->param_dt;
    z->mp = z->param_dt != z->orig_dt;
    z->off = b->o.offload == VC_OFFLOAD_PARAMS;
    /* foreach_reduce: reduce_dtype or grad_dtype (the unsharded gradients': param_dt) */
    z->reduce_dt = b->o.fsdp_reduce_dtype != VC_FSDP_DTYPE_NONE ? (uint8_t)vc__fsdp_dtype(b->o.fsdp_reduce_dtype) : z->param_dt;
    z->causal = vc_loss_row_get(m->loss)->causal;
    z->last_inst = (int32_t)m->ninst - 1;
    z->saved = -1;
    if (!f2_params_ok(b, z)) return;
    if (!f2_groups(b, z)) b->st = VC_ERR_NOMEM;
}

static int64_t f2_group_shard(const f2_state *z, int32_t g)
{
    int64_t n = 0;
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1]; j++) n += z->shard[z->glist[j]];
    return n;
}

/* Under CPUOffloadPolicy, FSDPParam.all_gather_inputs (F2P) of each of group
 * g's parameters, as F2C _get_param_all_gather_inputs takes them (its
 * foreach-copy path is not for offload_to_cpu): the shard copied to the GPU
 * (sharded_param_data.to(device, non_blocking=True), the model's dtype), then
 * _to_dtype_if_needed(param_dtype), a cast that lets the copy go. make: the
 * inputs, held in z->unsh (the group is sharded: its entries are free until
 * the copy-out); !make: their end, as foreach_all_gather returns. */
static void f2_offload_inputs(vc_build *b, int32_t g, int32_t at, bool make)
{
    f2_state *z = F(b);
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1]; j++) {
        int32_t p = z->glist[j];
        if (!make) {
            if (z->unsh[p] >= 0) vc__free(b, z->unsh[p], at);
            z->unsh[p] = -1;
            continue;
        }
        int32_t h = vc__alloc(b, vc_n_fixed(z->shard[p]), (vc_dtype)z->orig_dt, CAT_TEMP, at);
        if (z->mp) {
            z->unsh[p] = vc__alloc(b, vc_n_fixed(z->shard[p]), (vc_dtype)z->param_dt, CAT_TEMP, at);
            vc__free(b, h, at);
        } else {
            z->unsh[p] = h;
        }
    }
}

/* FSDPParamGroup.unshard (F2G): nothing if already unsharded or pending. At
 * world size 1 no all-gather (the result holds _all_gather_output, an empty
 * tensor). Otherwise foreach_all_gather (F2C): with param_dtype, the
 * foreach-copy fast path (_get_param_all_gather_inputs) first casts every
 * shard into one flat torch.empty(sum of shards, param_dtype); then
 * all_gather_output = torch.empty(sum of shards x world) (DefaultAllocMixin.
 * allocate), the copy-in (all_gather_copy_in: the input is a view of the
 * output); the cast copy is referenced by all_gather_inputs until
 * foreach_all_gather returns. Without param_dtype the input is the shard
 * itself (all_gather_inputs: _to_dtype_if_needed(x, None) is x). */
static void f2_unshard(vc_build *b, int32_t g, int32_t at)
{
    f2_state *z = F(b);
    if (z->pending[g] || z->unsharded[g] || z->gstart[g] == z->gstart[g + 1]) return;
    z->pending[g] = true;
    if (z->world == 1) return;
    /* resharded after forward to a smaller mesh (SHARDED_POST_FORWARD): F2G
     * _all_gather_process_group is the post-forward mesh's (size post), and
     * the inputs are the _sharded_post_forward_param_data (F2C
     * _get_param_all_gather_inputs, world / post shards each; with param_dtype
     * the foreach copy still copies them, already in that dtype) */
    int64_t ranks = z->pfs[g] ? z->post[g] : z->world, n = f2_group_shard(z, g) * (z->world / ranks);
    if (z->off && !z->pfs[g]) { /* no foreach copy under offload: each parameter's all_gather_inputs */
        f2_offload_inputs(b, g, at, true);
        z->ag[g] = vc__alloc(b, vc_n_fixed(n * ranks), (vc_dtype)z->param_dt, CAT_WEIGHT, at);
        b->s[z->ag[g]].transient = true;
        f2_offload_inputs(b, g, at, false);
        return;
    }
    int32_t c = z->mp && !z->off ? vc__alloc(b, vc_n_fixed(n), (vc_dtype)z->param_dt, CAT_TEMP, at) : -1;
    z->ag[g] = vc__alloc(b, vc_n_fixed(n * ranks), (vc_dtype)z->param_dt, CAT_WEIGHT, at);
    b->s[z->ag[g]].transient = true;
    if (c >= 0) vc__free(b, c, at);
}

/* FSDPParamGroup.wait_for_unshard (F2G). In forward (implicit prefetching)
 * the all-gather result kept from the group before (comm_ctx.all_gather_state)
 * is freed first. Then each parameter's unsharded tensor, in the group's
 * parameter order: F2P init_all_gather_outputs (torch.empty(shard x world),
 * the first time) / alloc_all_gather_outputs (alloc_storage after a
 * free_storage), filled by split_with_sizes_copy (F2C
 * foreach_all_gather_copy_out). At world size 1: the tensor is shard-sized
 * and copied from all_gather_inputs[0], a param_dtype cast of the shard
 * under mixed precision (bound to a loop variable: the previous one goes as
 * the next is made, the last when the method returns). Then this group's
 * all-gather output is kept in all_gather_state (forward, world > 1) or
 * dropped (_all_gather_result = None). */
static void f2_wait(vc_build *b, int32_t g, int32_t at, bool fwd)
{
    f2_state *z = F(b);
    if (!z->pending[g]) return;
    z->pending[g] = false;
    if (fwd && z->saved >= 0) {
        vc__free(b, z->saved, at);
        z->saved = -1;
    }
    int32_t cast = -1;
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1]; j++) {
        int32_t p = z->glist[j];
        if (z->world == 1 && (z->mp || z->off)) { /* all_gather_inputs[0]: under offload an H2D copy first */
            int32_t h = z->off ? vc__alloc(b, vc_n_fixed(z->shard[p]), (vc_dtype)z->orig_dt, CAT_TEMP, at) : -1;
            int32_t c = z->mp ? vc__alloc(b, vc_n_fixed(z->shard[p]), (vc_dtype)z->param_dt, CAT_TEMP, at) : h;
            if (z->mp && h >= 0) vc__free(b, h, at);
            if (cast >= 0) vc__free(b, cast, at);
            cast = c;
        }
        z->unsh[p] = vc__alloc(b, vc_n_fixed(z->shard[p] * z->world), (vc_dtype)z->param_dt, CAT_WEIGHT, at);
        b->s[z->unsh[p]].transient = true;
    }
    if (cast >= 0) vc__free(b, cast, at);
    /* _to_unsharded -> FSDPParam.to_unsharded (F2P): from SHARDED_POST_FORWARD,
     * _sharded_post_forward_param_data = None, after the copy-out */
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1] && z->pfs[g]; j++) {
        int32_t p = z->glist[j];
        if (z->pfd[p] >= 0) vc__free(b, z->pfd[p], at);
        z->pfd[p] = -1;
    }
    z->pfs[g] = false;
    z->unsharded[g] = true;
    if (z->ag[g] >= 0 && fwd) z->saved = z->ag[g];
    else if (z->ag[g] >= 0) vc__free(b, z->ag[g], at);
    z->ag[g] = -1;
}

/* FSDPParamGroup._to_sharded -> FSDPParam.to_sharded -> free_unsharded_param
 * (F2P): free_storage of each all-gather output. */
static void f2_reshard(vc_build *b, int32_t g, int32_t at)
{
    f2_state *z = F(b);
    if (!z->unsharded[g]) return;
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1]; j++) {
        int32_t p = z->glist[j];
        if (z->unsh[p] >= 0) vc__free(b, z->unsh[p], at);
        z->unsh[p] = -1;
    }
    z->unsharded[g] = false;
}

/* FSDPParamGroup._to_sharded_post_forward -> FSDPParam.to_sharded_post_forward
 * (F2P), parameter by parameter: _sharded_post_forward_param_data, this
 * rank's 1/post of all_gather_outputs[0] (world x shard elements of the
 * param dtype), .clone()d, then free_unsharded_param. */
static void f2_reshard_post(vc_build *b, int32_t g, int32_t at)
{
    f2_state *z = F(b);
    if (!z->unsharded[g]) return;
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1]; j++) {
        int32_t p = z->glist[j];
        z->pfd[p] = vc__alloc(b, vc_n_fixed(z->shard[p] * (z->world / z->post[g])), (vc_dtype)z->param_dt, CAT_WEIGHT, at);
        b->s[z->pfd[p]].transient = true;
        if (z->unsh[p] >= 0) vc__free(b, z->unsh[p], at);
        z->unsh[p] = -1;
    }
    z->unsharded[g] = false;
    z->pfs[g] = true;
}

/* FSDPParamGroup.post_forward (F2G): reshard(), in FORWARD: nothing without a
 * post_forward_mesh_info (reshard_after_forward False, or the root's by
 * default), _to_sharded_post_forward for a smaller mesh
 * (_use_post_forward_mesh), else _to_sharded; then _record_post_forward. */
static void f2_post_forward(vc_build *b, int32_t g, int32_t at)
{
    f2_state *z = F(b);
    if (z->gstart[g] == z->gstart[g + 1]) return;
    if (z->post[g] == z->world) f2_reshard(b, g, at);
    else if (z->post[g] > 0) f2_reshard_post(b, g, at);
    if (z->norder == z->corder) { /* grown by doubling (int32: the plan's instances bound the forwards) */
        int32_t *o = z->corder < INT32_MAX / 2 ? realloc(z->order, 2 * (size_t)z->corder * sizeof *o) : NULL;
        if (!o) {
            b->st = VC_ERR_NOMEM;
            return;
        }
        z->order = o;
        z->corder *= 2;
    }
    z->pfi[g] = z->norder;
    z->order[z->norder++] = g;
}

/* FSDPParamGroup.pre_backward (F2G), once per backward: unshard (a no-op if
 * prefetched), wait_for_unshard, then _backward_prefetch: the group before
 * it in post_forward_order (_prefetch_unshard: unshard() only; its
 * wait_for_unshard comes at its own pre_backward). */
static void f2_pre_backward(vc_build *b, int32_t g, int32_t at)
{
    f2_state *z = F(b);
    if (z->pre_bwd[g] || z->gstart[g] == z->gstart[g + 1]) return;
    z->pre_bwd[g] = true;
    f2_unshard(b, g, at);
    f2_wait(b, g, at, false);
    if (z->pfi[g] > 0) f2_unshard(b, z->order[z->pfi[g] - 1], at);
    z->pfi[g] = -1;
}

/* FSDPParamGroup.post_backward (F2G): the unsharded gradients taken
 * (unsharded_param.grad = None, the list keeps them), reshard(), the
 * reduce-scatter inputs kept from earlier groups dropped
 * (comm_ctx.reduce_scatter_states.clear(): one parameter group per state,
 * so _param_group_index == _num_param_groups - 1), then foreach_reduce
 * (F2C): reduce_scatter_input = torch.empty(sum of padded gradients) in
 * reduce_dtype, filled by _chunk_cat (a widening cast in the copy; a
 * narrowing one goes through grad_buffer = empty_like(input, grad dtype));
 * the unsharded gradients freed (unsharded_grads.clear()); reduce_output =
 * torch.empty(input / world) in reduce_dtype (at world size 1 a copy of the
 * input); cast to orig_dtype if it differs (_to_dtype_if_needed: a new
 * tensor, reduce_output goes when foreach_reduce returns); each sharded
 * gradient an as_strided view of it (kept as .grad), or added into the .grad
 * a gradient-accumulation step left (then the output goes). The input is
 * kept in reduce_scatter_states until the next group's post_backward or the
 * final callback. */
static void f2_post_backward(vc_build *b, int32_t g, int32_t at)
{
    f2_state *z = F(b);
    if (z->post_bwd[g] || z->gstart[g] == z->gstart[g + 1]) return;
    z->post_bwd[g] = true;
    int64_t in = 0, out = 0;
    int32_t first = -1;
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1]; j++) {
        int32_t p = z->glist[j];
        if (b->pgrad[p] < 0) continue;
        in += z->shard[p] * z->world;
        out += z->shard[p];
        if (first < 0) first = p;
    }
    f2_reshard(b, g, at);
    for (int32_t k = 0; k < z->nrs; k++) vc__free(b, z->rs[k], at);
    z->nrs = 0;
    if (first < 0) return;
    int32_t rsin = vc__alloc(b, vc_n_fixed(in), (vc_dtype)z->reduce_dt, CAT_GRAD, at);
    int gsz = vc_dtype_size((vc_dtype)z->param_dt), rsz = vc_dtype_size((vc_dtype)z->reduce_dt);
    if (z->param_dt != z->reduce_dt && gsz >= rsz) /* torch.promote_types(grad, reduce) != reduce */
        vc__free(b, vc__alloc(b, vc_n_fixed(in), (vc_dtype)z->param_dt, CAT_GRAD, at), at);
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1]; j++) {
        int32_t p = z->glist[j];
        if (b->pgrad[p] >= 0) vc__free(b, b->pgrad[p], at);
        b->pgrad[p] = -1;
    }
    int32_t rsout = vc__alloc(b, vc_n_fixed(out), (vc_dtype)z->reduce_dt, CAT_GRAD, at);
    /* HSDP (F2C foreach_reduce, all_reduce_group set): dist.all_reduce(reduce_output) in place, and
     * all_reduce_input = reduce_output is returned into the group's _all_reduce_state (F2G
     * post_backward), held until _wait_for_post_backward: this group's next post_backward or
     * finalize_backward (the final callback). With the reduce dtype the model's, that is the
     * tensor the .grads view; otherwise the reduce-dtype output outlives its cast. */
    if (z->hsdp) {
        if (z->ar[g] >= 0) vc__free(b, z->ar[g], at);
        z->ar[g] = rsout;
        vc__ref(b, rsout);
    }
    if (z->reduce_dt != z->orig_dt) {
        int32_t c = vc__alloc(b, vc_n_fixed(out), (vc_dtype)z->orig_dt, CAT_GRAD, at);
        vc__free(b, rsout, at);
        rsout = c;
    }
    int32_t *held = &b->flat[first].grad; /* the group's sharded gradients: views of one tensor */
    for (int32_t j = z->gstart[g]; j < z->gstart[g + 1] && *held < 0; j++) held = &b->flat[z->glist[j]].grad;
    /* sharded_param.grad._local_tensor += new_sharded_grad; under offload each view is copied to
     * the CPU (new_sharded_grad.to(cpu)) and the GPU output goes as foreach_reduce returns */
    if (*held >= 0 || z->off) vc__free(b, rsout, at);
    else *held = rsout;
    z->rs[z->nrs++] = rsin;
}

/* The root's post-backward final callback (F2S
 * _root_post_backward_final_callback): every group whose post_backward did
 * not run (the root's: its inputs need no gradient) runs it, the states in
 * module order (the root first); then the last reduce-scatter inputs go
 * (reduce_scatter_states.clear()), and an unshard never waited for
 * (finalize_backward: _all_gather_result = None). */
static void f2_final_callback(vc_build *b)
{
    f2_state *z = F(b);
    for (int32_t g = 0; g < z->ngroup; g++) {
        if (z->pre_bwd[g] || g == 0) f2_post_backward(b, g, -1);
        if (z->ar[g] >= 0) vc__free(b, z->ar[g], -1); /* finalize_backward: _wait_for_post_backward */
        z->ar[g] = -1;
    }
    for (int32_t k = 0; k < z->nrs; k++) vc__free(b, z->rs[k], -1);
    z->nrs = 0;
    for (int32_t g = 0; g < z->ngroup; g++) {
        if (z->ag[g] >= 0) vc__free(b, z->ag[g], -1);
        z->ag[g] = -1;
        z->pending[g] = z->pre_bwd[g] = z->post_bwd[g] = false;
        z->pfi[g] = -1;
    }
    z->norder = 0; /* post_forward_order.clear() */
    z->root_pre_bwd = false;
}

/* The root state's post-forward (F2S _post_forward): the root group's
 * post_forward, then (iter_forward_root) the last all-gather result kept
 * for implicit prefetching freed. */
static void f2_root_post_forward(vc_build *b, int32_t at)
{
    f2_state *z = F(b);
    if (z->root_post_fwd) return;
    z->root_post_fwd = true;
    f2_post_forward(b, 0, at);
    if (z->saved >= 0) vc__free(b, z->saved, at);
    z->saved = -1;
}

/* The module hooks. Forward: the root's pre-forward as the model's forward
 * begins (F2S _pre_forward: the root group's pre_forward = unshard +
 * wait_for_unshard); a unit's as its first instance begins, its post-forward
 * (reshard) as its last instance ends. The root's post-forward runs as the
 * root module's forward returns: after the loss for a causal LM (its forward
 * computes the loss from labels), else after the last instance. Backward: a
 * group's pre_backward is a hook on its module's outputs (F2S
 * _register_pre_backward_hook): a unit's as its backward begins, the root's
 * as the gradient of the model's output arrives (at once for a causal LM,
 * whose output is the loss; else as the first instance's backward begins).
 * A unit's post_backward is RegisterPostBackwardFunction on its inputs
 * (F2G _register_post_backward_hook): as its first instance's backward
 * ends. The root's runs in the final callback as the backward ends. */
static void fsdp2_hook(vc_build *b, int inst, vc_phase ph, bool begin)
{
    f2_state *z = F(b);
    int32_t u = inst >= 0 ? b->unit_of[inst] : 0;
    if (ph == VC_PHASE_FORWARD) {
        if (inst < 0 && begin) {
            z->root_post_fwd = false;
            f2_unshard(b, 0, inst);
            f2_wait(b, 0, inst, true);
        } else if (inst >= 0 && begin && u > 0 && inst == z->first[u]) {
            f2_unshard(b, u, inst);
            f2_wait(b, u, inst, true);
        } else if (inst >= 0 && !begin) {
            if (u > 0 && inst == z->last[u]) f2_post_forward(b, u, inst);
            if (!z->causal && inst == z->last_inst) f2_root_post_forward(b, inst);
        } else if (inst < 0 && !begin) {
            f2_root_post_forward(b, inst);
        }
        return;
    }
    if (ph != VC_PHASE_BACKWARD) return;
    if (inst < 0) {
        if (begin && z->causal) {
            z->root_pre_bwd = true;
            f2_pre_backward(b, 0, inst);
        } else if (!begin) {
            f2_final_callback(b);
        }
        return;
    }
    if (begin) {
        if (!z->root_pre_bwd) {
            z->root_pre_bwd = true;
            f2_pre_backward(b, 0, inst);
        }
        if (u > 0) f2_pre_backward(b, u, inst);
    } else if (u > 0 && inst == z->first[u]) {
        f2_post_backward(b, u, inst);
    }
}

/* MixedPrecisionPolicy.param_dtype: the all-gather, the unsharded parameters
 * and so the forward and backward run in it (F2P all_gather_inputs:
 * _to_dtype_if_needed(sharded_param_data, param_dtype)). */
void vc__fsdp_compute(const vc_options *o, vc_dtype *dt)
{
    if (o->fsdp_param_dtype != VC_FSDP_DTYPE_NONE) *dt = vc__fsdp_dtype(o->fsdp_param_dtype);
}

/* The --fsdp-* options (vc__check_options): each is taken by the layouts with its
 * capability (VC_LAYOUT_FSDP1_OPTIONS, VC_LAYOUT_FSDP2_OPTIONS). The policy is
 * FSDP2's; it casts a model kept in one dtype (no autocast, no master copies: the
 * sharded parameters are the optimizer's). */
vc_status vc__fsdp_mp_check(const vc_options *o, vc_error *err)
{
    const char *opt = o->fsdp_param_dtype != VC_FSDP_DTYPE_NONE ? O("fsdp_param_dtype") : O("fsdp_reduce_dtype");
    if ((unsigned)o->fsdp_param_dtype >= VC_FSDP_DTYPE__N || (unsigned)o->fsdp_reduce_dtype >= VC_FSDP_DTYPE__N)
        return vc_set_error(err, VC_ERR_USAGE, opt, "invalid dtype");
    unsigned caps = vc__layout_desc(o->parallel)->caps;
    bool fsdp2 = caps & VC_LAYOUT_FSDP2_OPTIONS;
    char names[128], names1[128];
    vc__layout_names(VC_LAYOUT_FSDP2_OPTIONS, " or ", names, sizeof names);
    if (o->fsdp_replicate > 1 && !fsdp2)
        return vc_set_error(err, VC_ERR_USAGE, O("fsdp_replicate"), "HSDP's mesh is fully_shard's here: give " OV("parallel", "%s") " "
                            "(FSDP1's is " OV("parallel", "hybrid") ")", names);
    if (o->fsdp_replicate > 1 && (o->fsdp_replicate > vc_dp_world(o) || vc_dp_world(o) % o->fsdp_replicate != 0))
        return vc_set_error(err, VC_ERR_USAGE, O("fsdp_replicate"), "%" PRId64 " replicas do not divide the data-parallel "
                            "world size %" PRId64 " (a (replicas, shards) DeviceMesh)", o->fsdp_replicate, vc_dp_world(o));
    if (o->fsdp_reshard != VC_FSDP_RESHARD_AUTO) {
        const char *opt_r = O("fsdp_reshard_after_forward");
        int64_t w = vc_dp_world(o) / (o->fsdp_replicate > 1 ? o->fsdp_replicate : 1), r = o->fsdp_reshard;
        if (!fsdp2)
            return vc_set_error(err, VC_ERR_USAGE, opt_r, "reshard_after_forward is fully_shard's: give " OV("parallel", "%s"), names);
        if (r != VC_FSDP_RESHARD_TRUE && r != VC_FSDP_RESHARD_FALSE && (r < 1 || r > w || w % r != 0))
            return vc_set_error(err, VC_ERR_USAGE, opt_r, "%" PRId64 " does not divide the data-parallel world size %" PRId64
                                " (_get_post_forward_mesh_info: an int must be a factor of the shard mesh size)", r, w);
    }
    /* FSDP1's MixedPrecision and use_orig_params (layout_fsdp1.c) */
    if (o->fsdp_use_orig_params || (caps & VC_LAYOUT_FSDP1_OPTIONS)) return vc__fsdp1_mp_check(o, err);
    if (o->fsdp_param_dtype == VC_FSDP_DTYPE_NONE && o->fsdp_reduce_dtype == VC_FSDP_DTYPE_NONE) return VC_OK;
    if (!fsdp2)
        return vc_set_error(err, VC_ERR_USAGE, opt, "mixed precision is FSDP's: give " OV("parallel", "%s") " (MixedPrecisionPolicy) "
                            "or %s (FSDP1's MixedPrecision)", names,
                            vc__layout_names(VC_LAYOUT_FSDP1_OPTIONS, ", ", names1, sizeof names1));
    const vc_precision_row *pr = vc_precision_row_get(o->precision);
    if (pr->master || pr->amp_dt != VC_DT_F32)
        return vc_set_error(err, VC_ERR_USAGE, opt, "FSDP2's mixed precision casts a model kept in one dtype: give " OS("precision", "fp32") " "
                            "(or fp16, bf16), not %s", vc_precision_name(o->precision));
    return VC_OK;
}

/* --loss grpo --use-vllm under fsdp2 (src/engine/grpo.c): TRL's _sync_fsdp2_params_to_vllm (huggingface/trl
 * @f2cd57710ae345ea6428ae95363267fcf38a3dc8 trl/generation/vllm_generation.py) walks module.state_dict(), whose
 * values are the sharded DTensor parameters (F2G _register_state_dict_hooks: to_sharded_hook, _to_sharded before
 * the state dict is taken), and for each `param = param.full_tensor()` then _push_param_to_vllm: one parameter whole
 * at a time, the previous one freed when the loop rebinds `param`. full_tensor() redistributes Shard(0) to Replicate
 * (pytorch/pytorch @00131b6bd4bedfa71eb27b407292be0ba45e5ee8 torch/distributed/tensor/placement_types.py
 * Shard._to_replicate_tensor): a dim-0 size not divisible by the shard world pads the local shard to the full chunk
 * (rank 0 holds a full chunk: no copy), funcol.all_gather_tensor makes a tensor of chunk x world rows, and
 * unpad_tensor narrows it (a view, the padded storage kept). So the largest parameter's ceil(dim0 / world) x world
 * rows (f2_shard x world) in the model's dtype (MixedPrecisionPolicy keeps the sharded parameters in orig_dtype),
 * in 512-byte blocks; under HSDP only the shard dimension is gathered (the replicate one is already whole). At a
 * shard world of 1 the all-gather still writes a new tensor of the whole parameter. -1 on overflow. */
int64_t vc__fsdp2_param_max_bytes(const vc_model *m, const vc_options *o)
{
    const int64_t world = vc_dp_world(o) / (o->fsdp_replicate > 1 ? o->fsdp_replicate : 1);
    const vc_dtype pdt = vc_precision_row_get(o->precision)->param_dt;
    int64_t max = 0;
    for (size_t p = 0; p < m->npar; p++) {
        int64_t el, v;
        if (__builtin_mul_overflow(f2_shard(&m->par[p], world), world, &el) ||
            (v = vc_bytes(vc_n_fixed(el), vc_param_pinned_dt(m->par[p].flags, pdt), 1)) < 0 || v > INT64_MAX - 511)
            return -1;
        v = (v + 511) / 512 * 512;
        if (v > max) max = v;
    }
    return max;
}

/* CPUOffloadPolicy moves the sharded parameters, their gradients and the step to the CPU. */
const vc_layout_desc vc_layout_fsdp2 = {
    .id = VC_PARALLEL_FSDP2,
    .hooks = {.module = fsdp2_hook, .flat = fsdp2_flat, .compute = vc__fsdp_compute, .cast_inputs = true},
    .caps = VC_LAYOUT_FSDP2_OPTIONS,
    .offload = 1u << VC_OFFLOAD_PARAMS,
    .offload_why = "FSDP2 has no optimizer-only offload (CPUOffloadPolicy moves the sharded parameters, their "
                   "gradients and the optimizer step): " OV("offload", "params"),
    .mp_class = "MixedPrecisionPolicy",
    .generate_why = "fsdp2 is modelled for " OV("mode", "train") " and infer",
};
