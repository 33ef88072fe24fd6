/*
 * layout_zero12.c — the DeepSpeed ZeRO stage 1 and 2 layouts (their
 * descriptors end the file): the flat buffer, the partition, the IPG
 * bucket and the step, with offload_optimizer (docs/parallel.md 1.7, 1.10).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "util.h"

/* ---- zero2: DeepSpeed ZeRO stage 2 (deepspeed/runtime/zero/stage_1_and_2.py,
 * DeepSpeedZeroOptimizer with partition_grads=True; deepspeedai/DeepSpeed@
 * edaa7221), its defaults: contiguous_gradients, overlap_comm off (stage 2),
 * reduce_scatter, reduce_bucket_size 5e8 elements (config.py
 * DeepSpeedZeroConfig), one parameter group; --offload optimizer:
 * offload_optimizer {device: cpu} (z2_off); --ds-overlap-comm true:
 * overlap_comm (zero_overlap). Modelled from the source only (DeepSpeed does
 * not run here; docs/parallel.md 2.3); checked against
 * bench/accuracy/dist/offload_replica.py and zero1_replica.py. */
#define ZERO_BUCKET INT64_C(500000000)
enum { Z_IPG, Z_GIP, Z_G32, Z_IPG1 };  /* lay_s: the IPG buffer, grads_in_partition, the step's fp32 gradient,
                                        * overlap_comm's second IPG buffer */
enum { Z_ELEMS, Z_XL, Z_PART, Z_GIPN, Z_BWDS, Z_RANK }; /* lay_n: bucket elements, extra-large parameter + 1,
                                                         * bucket holds a parameter of this rank's partition,
                                                         * grads_in_partition elements, backward passes ended
                                                         * (zero1), the rank modelled */

/* offload_optimizer (device cpu, pin_memory; --offload optimizer): the GPU
 * side of DeepSpeedZeroOptimizer's cpu_offload branches (stage_1_and_2.py at
 * deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641). __init__:
 * the fp32 partition single_partition_of_fp32_groups is made on self.device =
 * 'cpu' (pinned), with param_buffer_of_bit16_for_cpu_offload_groups (pinned
 * CPU), the CPU gradient partition (initialize_optimizer_states: torch.zeros on
 * self.device, pinned, kept as the fp32 partition's .grad), and so the wrapped
 * optimizer's state is on the CPU; temp_grad_buffer_for_cpu_offload is on the
 * CPU too, but temp_grad_buffer_for_gpu_offload = torch.zeros(
 * largest_param_numel) of the model's dtype is on the GPU for the whole run.
 * What stays on the GPU: the 16-bit flat buffer (bit16_groups_flat), the IPG
 * bucket (setup_buckets; contiguous_gradients is forced on), and what
 * copy_grads_in_partition makes per parameter of the partition (z2 below).
 * grads_in_partition is never made (copy_grads_in_partition returns first). */
typedef struct {
    int64_t *inpart;  /* each parameter's elements in this rank's partition (grad_position's num_elements) */
    int32_t *bucket;  /* bucket.params: the parameters in the IPG bucket */
    size_t nbucket;
    int32_t *norms;   /* norm_for_param_grads[p]: the float64 norm kept per parameter of the partition, -1 */
} z2_off;

static void z2_off_free(void *state)
{
    z2_off *z = state;
    if (z) free(z->inpart), free(z->bucket), free(z->norms);
    free(z);
}

#define Z2_F64 VC_DT_I64 /* float64 (the dtype table has none): int64, the same 8 bytes */

/* The trainable parameters flattened into one buffer of the model's dtype,
 * padded to a multiple of 2 x world (__init__: flatten_dense_tensors_aligned
 * with alignment nccl_start_alignment_factor x world); the parameters are
 * views into it. */
static int64_t zero2_flat_numel(const vc_build *b, uint8_t *dt)
{
    int64_t n = 0, a = 2 * vc_dp_world(&b->o);
    *dt = VC_DT_F32;
    for (size_t p = b->m->npar; p-- > 0;)
        if (b->m->par[p].trainable) n += b->m->par[p].numel, *dt = b->t[b->par_t[p]].dt;
    return (n + a - 1) / a * a;
}

/* The optimizer sees one parameter, this rank's fp32 partition of the flat
 * buffer: flat / world elements (single_partition_of_fp32_groups, a
 * clone().float() even of fp32, given to the wrapped optimizer as its group's
 * params). A rank's gradient partition (copy_grads_in_partition:
 * grads_in_partition = torch.empty(total_size)) holds the whole of every
 * parameter that touches its partition (get_partition_info): ranks differ by
 * that, so the estimate is the rank with the most. */
static void zero2_flat(vc_build *b)
{
    const vc_model *m = b->m;
    uint8_t dt;
    int64_t world = vc_dp_world(&b->o), flat = zero2_flat_numel(b, &dt), part = flat / world, off = 0, busiest = 0;
    int64_t *tot = calloc((size_t)world + 1, sizeof *tot);
    b->lay_mask = calloc(m->npar + 1, sizeof *b->lay_mask);
    if (!tot || !b->lay_mask) { free(tot); b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p < m->npar && part > 0; p++) { /* tot: a difference array over the ranks */
        if (!m->par[p].trainable || m->par[p].numel == 0) continue;
        tot[off / part] += m->par[p].numel;
        tot[(off + m->par[p].numel - 1) / part + 1] -= m->par[p].numel;
        off += m->par[p].numel;
    }
    for (int64_t r = 1; r <= world; r++) tot[r] += tot[r - 1];
    for (int64_t r = 1; r < world; r++)
        if (tot[r] > tot[busiest]) busiest = r;
    z2_off *z = NULL;
    if (b->o.offload == VC_OFFLOAD_OPTIMIZER && b->train) {
        z = calloc(1, sizeof *z);
        b->lay_state = z;
        b->lay_free = z2_off_free;
        if (z) {
            z->inpart = calloc(m->npar + 1, sizeof *z->inpart);
            z->bucket = malloc((m->npar + 1) * sizeof *z->bucket);
            z->norms = malloc((m->npar + 1) * sizeof *z->norms);
        }
        if (!z || !z->inpart || !z->bucket || !z->norms) { free(tot); b->st = VC_ERR_NOMEM; return; }
        for (size_t p = 0; p <= m->npar; p++) z->norms[p] = -1;
    }
    off = 0;
    for (size_t p = 0; p < m->npar && part > 0; p++) {
        if (!m->par[p].trainable || m->par[p].numel == 0) continue;
        int64_t lo = busiest * part, hi = lo + part, end = off + m->par[p].numel;
        b->lay_mask[p] = off / part <= busiest && (end - 1) / part >= busiest;
        if (z && b->lay_mask[p]) z->inpart[p] = (end < hi ? end : hi) - (off > lo ? off : lo);
        off = end;
    }
    b->nflat = 1; /* inference builds no ZeRO optimizer: no partition */
    int64_t here = b->train && !z ? part : 0; /* offload: the fp32 partition and its state on the CPU */
    b->flat[0] = (vc_flat_param){{here, here > 0, 0, 0, -1, NULL, NULL}, VC_DT_F32, flat, flat,
                                 -1, -1, {vc_n_fixed(z ? 0 : tot[busiest]), dt}, false};
    b->lay_n[Z_GIPN] = tot[busiest];
    b->lay_n[Z_RANK] = busiest;
    free(tot);
}

/* Resident besides the fp32 partition and its optimizer state: the flat
 * buffer of the model's dtype, and the frozen parameters as they are. */
static void zero2_resident(vc_build *b)
{
    uint8_t dt;
    int64_t flat = zero2_flat_numel(b, &dt);
    if (flat > 0) vc__alloc(b, vc_n_fixed(flat), (vc_dtype)dt, CAT_WEIGHT, -1);
    for (size_t p = 0; p < b->m->npar; p++)
        if (!b->m->par[p].trainable) vc__alloc(b, b->t[b->par_t[p]].n, (vc_dtype)b->t[b->par_t[p]].dt, CAT_WEIGHT, b->m->par[p].owner);
    for (int k = 0; k < 4; k++) b->lay_s[k] = -1;
    b->lay_n[Z_ELEMS] = b->lay_n[Z_XL] = b->lay_n[Z_PART] = b->lay_n[Z_BWDS] = 0;
    int64_t largest = 0; /* offload: temp_grad_buffer_for_gpu_offload, the largest parameter of bit16_groups */
    for (size_t p = 0; p < b->m->npar && b->lay_state; p++)
        if (b->m->par[p].trainable && b->m->par[p].numel > largest) largest = b->m->par[p].numel;
    if (largest > 0) vc__alloc(b, vc_n_fixed(largest), (vc_dtype)dt, CAT_GRAD, -1);
}

/* offload: copy_grads_in_partition's cpu_offload branch for a parameter of
 * the partition, at the accumulation boundary (one micro-step: micro_step_id
 * 0, so async_accumulate_grad_in_cpu_via_gpu does not run): 
 * set_norm_for_param_grad_in_gpu, the partition's part .double().norm(2) (a
 * float64 copy, and the norm kept in norm_for_param_grads until the step);
 * update_offload_overflow_tracker -> _has_inf_or_nan(grad) on the whole
 * gradient: x.float() (a copy unless fp32), isnan, isinf, logical_or (bool
 * each), .float(), .max(), all gone when it returns; then
 * async_inplace_copy_grad_to_fp32_buffer_from_gpu: the part .to(float32) (a
 * copy unless fp32) copied into the pinned CPU fp32 gradient, and
 * clear_grad_attribute. */
static void z2_off_copy(vc_build *b, z2_off *z, int32_t p, uint8_t dt, int32_t inst)
{
    int64_t n = b->m->par[p].numel, part = z->inpart[p];
    int32_t d = vc__alloc(b, vc_n_fixed(part), Z2_F64, CAT_TEMP, inst), old = z->norms[p];
    z->norms[p] = vc__alloc(b, vc_n_fixed(1), Z2_F64, CAT_TEMP, inst);
    if (old >= 0) vc__free(b, old, inst); /* the dict entry replaced (another micro-batch's backward) */
    vc__free(b, d, inst);
    int32_t t[6], nt = 0;
    if (dt != VC_DT_F32) t[nt++] = vc__alloc(b, vc_n_fixed(n), VC_DT_F32, CAT_TEMP, inst);
    for (int k = 0; k < 3; k++) t[nt++] = vc__alloc(b, vc_n_fixed(n), VC_DT_BOOL, CAT_TEMP, inst);
    t[nt++] = vc__alloc(b, vc_n_fixed(n), VC_DT_F32, CAT_TEMP, inst);
    t[nt++] = vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, inst);
    while (nt > 0) vc__free(b, t[--nt], inst);
    if (dt != VC_DT_F32) vc__free(b, vc__alloc(b, vc_n_fixed(part), VC_DT_F32, CAT_TEMP, inst), inst);
}

/* reduce_ipg_grads: average_tensor -> allreduce_and_scatter ->
 * allreduce_bucket, which starts with tensor = self.flatten(bucket), a copy
 * of the bucket's contents freed on return; then the bucket's parameters of
 * this rank's partition are copied into grads_in_partition (allocated at the
 * first), the others' .grad cleared (clear_grad_attribute). An extra-large
 * parameter (more than the bucket) is reduced from its own gradient, which
 * goes then. Stage 1 (`stage1`, partition_gradients False) clears nothing:
 * reduce_ipg_grads' `else:  # zero stage 1` branch only copies this rank's
 * parameters (copy_grads_in_partition), so an extra-large gradient of another
 * partition stays until the epilogue's _clear_param_grad_only (zero1_hook). */
static void zero2_reduce(vc_build *b, int32_t inst, bool stage1)
{
    uint8_t dt;
    zero2_flat_numel(b, &dt);
    if (b->lay_n[Z_ELEMS] == 0) return;
    int32_t c = vc__alloc(b, vc_n_fixed(b->lay_n[Z_ELEMS]), (vc_dtype)dt, CAT_TEMP, inst);
    vc__free(b, c, inst);
    z2_off *z = b->lay_state;
    for (size_t k = 0; z && k < z->nbucket; k++)
        if (b->lay_mask[z->bucket[k]]) z2_off_copy(b, z, z->bucket[k], dt, inst);
    if (z) z->nbucket = 0;
    else if (b->lay_n[Z_PART] && b->lay_s[Z_GIP] < 0)
        b->lay_s[Z_GIP] = vc__alloc(b, vc_n_fixed(b->lay_n[Z_GIPN]), (vc_dtype)dt, CAT_GRAD, inst);
    if (b->lay_n[Z_XL] && (!stage1 || b->lay_mask[b->lay_n[Z_XL] - 1])) {
        size_t x = (size_t)b->lay_n[Z_XL] - 1;
        if (b->pgrad[x] >= 0) vc__free(b, b->pgrad[x], inst);
        b->pgrad[x] = -1;
    }
    b->lay_n[Z_ELEMS] = b->lay_n[Z_XL] = b->lay_n[Z_PART] = 0;
}

/* overlap_comm (--ds-overlap-comm true; DeepSpeedZeroConfig's default, the
 * validator overlap_comm_valid, is False for stages 1 and 2), from
 * stage_1_and_2.py at deepspeedai/DeepSpeed@edaa7221. What it changes in what
 * is allocated, on one stream:
 * - setup_buckets: "Use double buffers to avoid data access conflict when
 *   overlap_comm is enabled": buf_1, a second torch.empty(reduce_bucket_size)
 *   of the model's dtype, made with buf_0 and dropped with it
 *   (_release_ipg_buffers: bucket.buffer.clear()); a full bucket's reduce
 *   (reduce_independent_p_g_buckets_and_remove_grads) swaps bucket.index, so
 *   the next gradients go into the other buffer: both are there either way;
 * - stage 1: process_gradients reduces in the hook (`if
 *   self.partition_gradients or self.overlap_comm`), at the accumulation
 *   boundary only (reduce_ready_partitions_and_remove_grads), and
 *   reduce_gradients skips its loop over the parameters (`if not
 *   self.overlap_comm`), leaving the epilogue (zero1_grad, zero1_hook).
 * Unchanged: average_tensor's and reduce_ipg_grads' copies run on
 * reduction_stream, the same allocations; other partitions' gradients go to
 * previous_reduced_grads only `if self.overlap_comm and
 * self.contiguous_gradients is False` (contiguous_gradients is on), so
 * clear_grad_attribute frees them at the reduce as without overlap_comm;
 * _clear_previous_reduced_grads has nothing to clear. Not modelled: the
 * record_stream delays of the reduction stream (docs/parallel.md 1.7). */
static bool zero_overlap(const vc_build *b) { return b->o.ds_overlap_comm == VC_DS_OVERLAP_ON; }

/* The gradient hook (process_gradients -> reduce_independent_p_g_buckets_
 * and_remove_grads): the first of a backward makes the IPG buffer
 * (setup_buckets: torch.empty(reduce_bucket_size) of the model's dtype,
 * whatever the model's size); a parameter that would overflow the bucket
 * reduces it first; then the gradient is copied into the bucket and .grad
 * re-pointed at the copy (autograd's gradient goes), or, larger than the
 * bucket, kept to be reduced directly. */
static void zero_setup_buckets(vc_build *b, int32_t inst)
{
    uint8_t dt;
    zero2_flat_numel(b, &dt);
    if (b->lay_s[Z_IPG] >= 0) return;
    b->lay_s[Z_IPG] = vc__alloc(b, vc_n_fixed(ZERO_BUCKET), (vc_dtype)dt, CAT_GRAD, inst);
    if (zero_overlap(b)) b->lay_s[Z_IPG1] = vc__alloc(b, vc_n_fixed(ZERO_BUCKET), (vc_dtype)dt, CAT_GRAD, inst);
}

static void zero_bucket_add(vc_build *b, size_t p, int32_t inst, bool stage1)
{
    int64_t n = b->m->par[p].numel;
    if (b->lay_n[Z_ELEMS] + n > ZERO_BUCKET) zero2_reduce(b, inst, stage1);
    if (n > ZERO_BUCKET) {
        b->lay_n[Z_XL] = (int64_t)p + 1;
    } else {
        vc__free(b, b->pgrad[p], inst);
        b->pgrad[p] = -1;
    }
    b->lay_n[Z_ELEMS] += n;
    b->lay_n[Z_PART] |= b->lay_mask[p];
    z2_off *z = b->lay_state;
    if (z) z->bucket[z->nbucket++] = (int32_t)p;
}

static void zero2_grad(vc_build *b, size_t p, int32_t inst)
{
    if (!b->m->par[p].trainable || b->m->par[p].numel == 0) return;
    zero_setup_buckets(b, inst);
    zero_bucket_add(b, p, inst, false);
}

static void zero_epilogue(vc_build *b, bool stage1)
{
    zero2_reduce(b, -1, stage1);
    static const int ipg[2] = {Z_IPG, Z_IPG1}; /* _release_ipg_buffers: both buffers (overlap_comm) */
    for (int k = 0; k < 2; k++) {
        if (b->lay_s[ipg[k]] >= 0) vc__free(b, b->lay_s[ipg[k]], -1);
        b->lay_s[ipg[k]] = -1;
    }
}

/* The step's scaled_global_norm -> get_grad_norm_direct over averaged_gradients
 * (the partition's slice of each of its parameters' gradients): per slice
 * torch.linalg.vector_norm(g.data.double()), a float64 copy of the slice gone
 * once its norm (a float64 scalar, kept in all_norms) is taken; then
 * torch.stack(all_norms).square().sum().float(). The scalar tail
 * (pow, mask_nan_or_inf_with_val_inplace, the norm of the group norms: a few
 * one-element tensors) is left out. */
static void zero_grad_norm(vc_build *b)
{
    const vc_model *m = b->m;
    int64_t part = b->flat[0].e.numel, lo = b->lay_n[Z_RANK] * part, hi = lo + part, off = 0, k = 0;
    int32_t *norms = malloc((m->npar + 1) * sizeof *norms);
    if (!norms) { b->st = VC_ERR_NOMEM; return; }
    for (size_t p = 0; p < m->npar; p++) {
        if (!m->par[p].trainable || m->par[p].numel == 0) continue;
        int64_t end = off + m->par[p].numel, n = (end < hi ? end : hi) - (off > lo ? off : lo);
        off = end;
        if (!b->lay_mask[p] || n <= 0) continue;
        vc__free(b, vc__alloc(b, vc_n_fixed(n), Z2_F64, CAT_TEMP, -1), -1);
        norms[k++] = vc__alloc(b, vc_n_fixed(1), Z2_F64, CAT_TEMP, -1);
    }
    if (k > 0) {
        int32_t st = vc__alloc(b, vc_n_fixed(k), Z2_F64, CAT_TEMP, -1);
        int32_t sq = vc__alloc(b, vc_n_fixed(k), Z2_F64, CAT_TEMP, -1);
        vc__free(b, st, -1);
        int32_t sum = vc__alloc(b, vc_n_fixed(1), Z2_F64, CAT_TEMP, -1);
        vc__free(b, sq, -1);
        vc__free(b, vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1), -1);
        vc__free(b, sum, -1);
    }
    while (k > 0) vc__free(b, norms[--k], -1);
    free(norms);
}

/* End of backward: independent_gradient_partition_epilogue reduces what
 * the bucket holds and frees the IPG buffer (_release_ipg_buffers). The
 * step: flat_grad_partition = flatten(averaged_gradients) (the partition,
 * model dtype), .to(fp32) (a copy unless fp32 already; the flat one is
 * deleted), the 16-bit gradients freed (free_grad_in_param_list) before
 * _optimizer_step, the fp32 gradient dropped after it. */
static void zero2_hook(vc_build *b, int inst, vc_phase ph, bool begin)
{
    if (inst >= 0) return;
    if (ph == VC_PHASE_BACKWARD && !begin) {
        zero_epilogue(b, false);
    } else if (ph == VC_PHASE_OPTIMIZER && begin && b->lay_s[Z_GIP] >= 0) {
        uint8_t dt;
        zero2_flat_numel(b, &dt);
        zero_grad_norm(b);
        int32_t g = vc__alloc(b, vc_n_fixed(b->flat[0].e.numel), (vc_dtype)dt, CAT_GRAD, -1);
        if (dt != VC_DT_F32) {
            int32_t g32 = vc__alloc(b, vc_n_fixed(b->flat[0].e.numel), VC_DT_F32, CAT_GRAD, -1);
            vc__free(b, g, -1);
            g = g32;
        }
        vc__free(b, b->lay_s[Z_GIP], -1);
        b->lay_s[Z_GIP] = -1;
        b->lay_s[Z_G32] = g;
    } else if (ph == VC_PHASE_OPTIMIZER && !begin && b->lay_s[Z_G32] >= 0) {
        vc__free(b, b->lay_s[Z_G32], -1);
        b->lay_s[Z_G32] = -1;
    }
    z2_off *z = b->lay_state;
    if (!z || ph != VC_PHASE_OPTIMIZER) return;
    /* offload's step: complete_grad_norm_calculation_for_cpu_offload sums the kept
     * norms into total_dev_norm = FloatTensor([total]) on the GPU (gone after
     * .item()); the wrapped optimizer steps the CPU partition; the 16-bit result is
     * copied into the pinned bit16 buffer, then into this rank's part of the GPU
     * flat buffer in place; reset_cpu_buffers drops the norms. */
    if (begin) vc__free(b, vc__alloc(b, vc_n_fixed(1), VC_DT_F32, CAT_TEMP, -1), -1);
    else {
        for (size_t p = 0; p < b->m->npar; p++) {
            if (z->norms[p] >= 0) vc__free(b, z->norms[p], -1);
            z->norms[p] = -1;
        }
    }
}

/* ---- zero1: DeepSpeed ZeRO stage 1 (docs/parallel.md 1.10), the same
 * DeepSpeedZeroOptimizer with partition_grads=False (engine.py _configure_zero_optimizer: partition_grads=
 * zero_stage == ZeroStageEnum.gradients; deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641)
 * and the same defaults as zero2. Identical to zero2 (so its helpers): __init__'s
 * flat buffer, fp32 partition and the wrapped optimizer's state on it, the
 * partition and its grads_in_partition, the step (stage_1_and_2.py step: the
 * non-offload branch and the cpu_offload one do not look at
 * partition_gradients), and --offload optimizer (z2_off: the cpu_offload
 * branches of __init__ and copy_grads_in_partition are stage-independent).
 * What differs is the backward:
 * - the gradient hooks are installed all the same (__init__:
 *   create_gradient_handling_hooks `if partition_gradients or overlap_comm or
 *   use_grad_accum_attribute or contiguous_gradients`, the last True by
 *   default), and the first of a backward makes the IPG buffer (process_gradients
 *   -> setup_buckets, whatever the stage), but process_gradients reduces only
 *   `if self.partition_gradients or self.overlap_comm`: every gradient stays
 *   a full .grad of the model's dtype, as in plain PyTorch (zero1_grad);
 * - the reduction runs after backward, at the accumulation boundary only
 *   (engine.py _backward_epilogue -> allreduce_gradients: stage
 *   ZeroStageEnum.optimizer_states -> optimizer.reduce_gradients): for every
 *   parameter in the group's order (bit16_groups: the model's parameter
 *   order, round_robin_gradients off) with a gradient,
 *   reduce_ready_partitions_and_remove_grads -> reduce_independent_p_g_buckets_
 *   and_remove_grads, zero2's bucket step (zero_bucket_add: the gradient copied
 *   into the IPG buffer, its own storage gone); then
 *   overlapping_partition_gradients_reduce_epilogue ->
 *   independent_gradient_partition_epilogue as zero2's, whose
 *   _clear_param_grad_only drops what other partitions' extra-large
 *   gradients still hold (zero1_hook). setup_buckets' ready_for_gradients is
 *   reset only by that epilogue (_release_ipg_buffers), so under gradient
 *   accumulation the IPG buffer made in the first micro-batch's backward
 *   stays to the boundary's. */
/* The backward passes of a step (the engine runs two under accumulation or a
 * pipeline stage's micro-batches, autograd.c vc__execute), the last the
 * accumulation boundary's. */
static int64_t zero1_passes(const vc_build *b)
{
    return b->o.accumulate > 1 || b->m->stage.micro_batches > 1 ? 2 : 1;
}

/* overlap_comm: the hook reduces too, in the boundary's backward (zero_overlap) */
static void zero1_grad(vc_build *b, size_t p, int32_t inst)
{
    if (!b->m->par[p].trainable || b->m->par[p].numel == 0) return;
    zero_setup_buckets(b, inst);
    if (zero_overlap(b) && b->lay_n[Z_BWDS] + 1 >= zero1_passes(b)) zero_bucket_add(b, p, inst, true);
}

static void zero1_hook(vc_build *b, int inst, vc_phase ph, bool begin)
{
    if (inst >= 0) return;
    if (ph != VC_PHASE_BACKWARD || begin) {
        zero2_hook(b, inst, ph, begin); /* the step: zero2's */
        return;
    }
    /* the engine runs two backward passes under accumulation or a pipeline
     * stage's micro-batches (autograd.c vc__execute), the second the boundary's */
    if (++b->lay_n[Z_BWDS] < zero1_passes(b)) return;
    /* a pipeline stage (DeepSpeed's PipelineEngine, --pp): reduce_gradients(pipeline_parallel=True)
     * first appends a second IPG buffer, torch.empty(reduce_bucket_size) of the bucket's dtype ("with PP
     * we must create ipg buffer, since backward is handled outside zero"), and resets bucket.index to 0:
     * the reduction uses setup_buckets' first one; _release_ipg_buffers' bucket.buffer.clear() drops both */
    int32_t pipe_ipg = -1;
    if (b->m->stage.on) {
        uint8_t dt;
        zero2_flat_numel(b, &dt);
        pipe_ipg = vc__alloc(b, vc_n_fixed(ZERO_BUCKET), (vc_dtype)dt, CAT_GRAD, -1);
    }
    for (size_t p = 0; p < b->m->npar && !zero_overlap(b); p++) /* overlap_comm: the hooks did it */
        if (b->m->par[p].trainable && b->m->par[p].numel > 0 && b->pgrad[p] >= 0) zero_bucket_add(b, p, -1, true);
    zero_epilogue(b, true);
    if (pipe_ipg >= 0) vc__free(b, pipe_ipg, -1);
    for (size_t p = 0; p < b->m->npar; p++) { /* _clear_param_grad_only */
        if (!b->m->par[p].trainable || b->pgrad[p] < 0) continue;
        vc__free(b, b->pgrad[p], -1);
        b->pgrad[p] = -1;
    }
}

/* DeepSpeed's PipelineEngine takes stage 1 (--pp; it refuses stages 2 and 3:
 * deepspeed/runtime/pipe/engine.py PipelineEngine.__init__, "ZeRO-2 and ZeRO-3
 * are incompatible with pipeline parallelism") and runs its own TrainSchedule,
 * not Megatron's interleaved one. offload_optimizer is stages 1-3's,
 * offload_param stage 3's (config.py DeepSpeedZeroConfig). */
const vc_layout_desc vc_layout_zero1 = {
    .id = VC_PARALLEL_ZERO1,
    .hooks = {.module = zero1_hook, .resident = zero2_resident, .flat = zero2_flat, .grad = zero1_grad},
    .caps = VC_LAYOUT_PP | VC_LAYOUT_ZERO_CONFIG,
    .offload = 1u << VC_OFFLOAD_OPTIMIZER,
    .offload_why = "ZeRO stage 1 cannot offload parameters (offload_param is stage 3's): use zero3",
    .interleaved_why = "zero1 is DeepSpeed's, whose PipelineEngine has no interleaved schedule",
};

const vc_layout_desc vc_layout_zero2 = {
    .id = VC_PARALLEL_ZERO2,
    .hooks = {.module = zero2_hook, .resident = zero2_resident, .flat = zero2_flat, .grad = zero2_grad},
    .caps = VC_LAYOUT_ZERO_CONFIG,
    .offload = 1u << VC_OFFLOAD_OPTIMIZER,
    .offload_why = "ZeRO stage 2 cannot offload parameters (offload_param is stage 3's): use zero3",
};
