/*
 * grpo.c — --loss grpo: one step of TRL's GRPOTrainer with its defaults (issue 26 item 5; docs/llm.md, the
 * section "Reinforcement learning with generation inside the step: --loss grpo").
 *
 * Followed: huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8 (TRL below), trl/trainer/grpo_trainer.py
 * and grpo_config.py (use_vllm False, num_iterations 1, steps_per_generation = gradient_accumulation_steps = 1,
 * temperature 1.0, loss_type "dapo", epsilon 0.2, importance_sampling_level "token", entropy_coef 0.0,
 * beta the user's, 0.0 by default: no reference model). A step, in Trainer.training_step -> _prepare_inputs:
 *  1. _generate_and_score_completions -> _generate_single_turn: unwrap_model_for_generation + torch.no_grad():
 *     model.generate(prompt ids [B, P], GenerationConfig(max_new_tokens=max_completion_length, do_sample=True)):
 *     transformers' _sample with the DynamicCache growing by concatenation, as --mode generate models it
 *     (src/engine/generate.c; do_sample's softmax and multinomial there). The training state stays resident:
 *     weights, the optimizer's state, and the previous step's buffered batch (self._buffered_inputs is only
 *     replaced after this generation); no gradients (zero_grad(set_to_none=True) after the last step).
 *     vc__grpo_phases runs it as its own generate plan with those bytes added.
 *  2. with beta != 0, under torch.no_grad() and disable_gradient_checkpointing:
 *     _get_per_token_logps_and_entropies(ref_model or the PEFT model with its adapters disabled,
 *     prompt_completion_ids, attention_mask, logits_to_keep=C, batch_size=per_device_train_batch_size):
 *     model(..., logits_to_keep=C + 1, use_cache=False) (the LM head on the last C + 1 positions),
 *     logits[:, :-1, :], logits[:, -C:, :], logits.div_(temperature), selective_log_softmax; the generation's
 *     padded ids and masks and their concatenations alive beside it. (vc__grpo_emit, first)
 *  3. shuffle_sequence_dict / split_tensor_dict: the batch's prompt_ids, prompt_mask, completion_ids,
 *     completion_mask [B, P] / [B, C] int64, advantages [B] fp32, num_items_in_batch (0-d int64) and
 *     ref_per_token_logps [B, C] kept in self._buffered_inputs through the step (one resident block here:
 *     the target of the plan, state.c);
 *  4. _compute_loss: input_ids = cat (the plan's input, [B, P + C]), attention_mask = cat; the policy's forward
 *     with grad and logits_to_keep = C + 1; logits[:, :-1, :] and logits.div_(temperature) (in place on a view:
 *     the base's grad_fn becomes CopySlices(DivBackward0), the view's a slice of the base:
 *     torch/csrc/autograd/functions/tensor.cpp CopySlices::apply allocates a base-sized result, a contiguous
 *     clone of the view's gradient and DivBackward0's grad / other); selective_log_softmax (DPO's, loss.c);
 *     entropy_from_logits under no_grad (DPO's metric, loss.c); torch.cat of the one chunk's log-probs and
 *     entropies (copies); the dapo loss on [B, C] tensors: log_ratio, coef_1 = exp, (beta) per_token_kl,
 *     coef_2 = clamp, * advantages (fp32: type promotion), minimum, neg, (beta) + beta * kl, * mask, sum,
 *     / num_items_in_batch.clamp(min=1.0). The logging metrics after it ([B, C] bools and fp32 products made and
 *     freed while the saved activations alone are alive) are not counted.
 * With --grad-ckpt (GRPOConfig's default gradient_checkpointing=True) the model is in training mode, but
 * unwrap_model_for_generation turns checkpointing off around generate() and back on after it
 * (trl/models/utils.py _unwrap_model_for_generation @ f2cd5771 l.133-136, 151-152; since PR #3882, 65d7894b, v0.22.0):
 * transformers' GradientCheckpointingLayer.__call__ keeps past_key_values, so 1. is the same generate plan with
 * its DynamicCache as without checkpointing (before v0.22.0 the cache went unwritten: not modelled, no TRL release
 * option). The policy's forward here is checkpointed per decoder layer, the reference's not
 * (disable_gradient_checkpointing, PR #4636: no_regions).
 * --accumulate N (gradient_accumulation_steps; steps_per_generation left None, so GRPOConfig.__post_init__ sets it
 * to N and generation_batch_size = per_device_train_batch_size x N on one process): GRPOTrainer._prepare_inputs
 * generates every steps_per_generation x num_iterations micro-steps, once for the N micro-steps of an optimizer step
 * (get_train_dataloader's batch_size = _train_batch_size x steps_per_generation, RepeatSampler repeat_count
 * num_iterations x steps_per_generation), and returns self._buffered_inputs[self._step % N]. So 1. samples B x N
 * sequences in one generate() call, the previous step's N slices resident; 3.'s buffer holds all N slices through
 * every micro-step (shuffle_sequence_dict copies the generation batch, split_tensor_dict's chunks are views of it);
 * the plan's accumulation passes (autograd.c train_step: the first without gradients, the second into the first's)
 * are micro-step 1 and micro-steps 2..N. old_per_token_logps stays None (gradient_accumulation_steps %
 * generate_every == 0). With --beta > 0 the reference pass (2.) runs in micro-step 1 only, over the B x N batch in
 * chunks of B: its ops are the plan's once_from..once_to, which autograd.c runs in the first accumulation pass only.
 * --use-vllm (use_vllm=True, vllm_mode "colocate"; trl/generation/vllm_generation.py): no generation phase here (the
 * completions are vLLM's; its engine's bytes beside the step: src/api/request.c vllm_beside); with
 * vllm_importance_sampling_correction (default True, "sequence_mask") _generate_and_score_completions first runs the
 * policy's own no-grad log-probs (old_per_token_logps, chunked as the reference's, before it) beside vLLM's
 * sampling_per_token_logps, makes importance_sampling_ratio [B, 1], and buffers the three; _compute_loss multiplies
 * the ratio in before the KL term.
 * --use-vllm over LoRA (rsLoRA, PiSSA): that pass runs with the adapters on; vc__grpo_phases gives the trainer's
 * resident state between steps and sync_weights' merge temporaries (merge_temp) for request.c's sync and vllm phases;
 * with --trace, vc__grpo_trace_head / vc__grpo_trace_tail write the engine's rows and those phases' around the step's.
 * --use-vllm under --parallel ddp: every process its own engine (or its rank of one, --vllm-tensor-parallel-size:
 * request.c vllm_beside), the policy in DistributedDataParallel (the plan's ddp layout), the no-grad passes on the
 * unwrapped model; DDP's buckets resident between steps (vc__grpo_resident_grads).
 * --parallel ddp, zero2, zero3, fsdp, fsdp2: the step is the layout's plan; the generation, sync and vLLM phases read
 * the layout's resident state (vc__grpo_layout_why, vc__grpo_phases; tests/test_grpo_layouts.c); under fsdp and fsdp2
 * the generation is the generate plan under the layout's own hooks.
 * Refused (src/api/request.c and below): autocast, the other parallel layouts, vLLM over DoRA,
 * IA3 or LN tuning adapters or quantized weights, --grad-ckpt-every / --grad-ckpt-ops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "ops.h"
#include "plan.h"
#include "util.h"

/* The bytes of the buffered batch per sample of a micro-step and fixed (3.): ids and masks, advantages, ref
 * log-probs, for the steps_per_generation (spg) micro-steps' slices at once (shuffle_sequence_dict's v[permutation]
 * copies the whole generation batch; split_tensor_dict's chunks are slices of it, views). */
static vc_numel buffer_numel(int64_t P, int64_t C, bool beta, bool vllm, vc_dtype dt, int64_t spg)
{
    /* --use-vllm: old_per_token_logps [B, C] in the logits' dtype, sampling_per_token_logps [B, C] fp32 (torch.tensor
     * of vLLM's Python floats) and importance_sampling_ratio [B, 1] fp32 ("sequence_mask") */
    vc_numel n = vc_n_sample((8 * (2 * P + 2 * C) + 4 + (beta ? C * vc_dtype_size(dt) : 0) +
                              (vllm ? C * vc_dtype_size(dt) + 4 * C + 4 : 0)) * spg);
    n.fx = 512; /* num_items_in_batch, a 0-d int64 */
    return n;
}

static bool peft_on(const vc_model *m)
{
    return m->lora.r > 0 || m->lora.method == VC_PEFT_IA3 || m->lora.method == VC_PEFT_LN_TUNING;
}

/* The layouts grpo is modelled under (issue 26; src/engine/grpo.c's top and vc__grpo_phases), NULL for o's, else
 * why not, one line. TRL @f2cd5771 runs GRPO's generation through unwrap_model_for_generation
 * (trl/models/utils.py _unwrap_model_for_generation) and its sync through VLLMGeneration.sync_weights
 * (trl/generation/vllm_generation.py), each switching on trl/distributed.py DistributedBackend (is_zero3, fsdp_version):
 *  - ddp: DistributedDataParallel unwrapped (accelerator.unwrap_model), generate() on the whole model as on one GPU,
 *    DDP's gradient buckets kept (vc__grpo_resident_grads); the reference copy prepare_model(evaluation_mode=True)
 *    leaves unwrapped, whole on every rank;
 *  - zero2: the DeepSpeed engine unwrapped, every rank holding the whole 16-bit model (bit16_groups_flat): generate()
 *    and sync as on one GPU (gather_params is a no-op below stage 3); the reference copy prepare_deepspeed makes is
 *    initialized with stage 0 (utils.py prepare_deepspeed: "if stage != 3: stage = 0"), whole on every rank as on one;
 *  - zero3: ds3_gather_for_generation (default True): deepspeed.zero.GatheredParameters(model.parameters()) around
 *    generate(), every parameter gathered at once; sync_weights gathers one parameter at a time (a full fine-tune) or
 *    all at once around merge_adapter (PEFT). The reference copy is partitioned by its own DeepSpeed engine
 *    (prepare_deepspeed at stage 3): not modelled (a DPO reference under a layout is not either, loss.c);
 *  - fsdp (FSDP1): the sync's _sync_fsdp1_params_to_vllm summoning each unit whole in turn (--use-vllm). Without vLLM
 *    _generate_single_turn enters unwrap_model_for_generation, torch.no_grad() and
 *    self._dist.summon_full_params(self.model_wrapped, recurse=False) around generate() (grpo_trainer.py @f2cd5771,
 *    the same lines in v1.9.0 @35def3ee000a87f6839e66f4b7749b06274ed1b3, the newest release, l.1850-1862;
 *    trl/distributed.py DistributedBackend.summon_full_params: FSDP.summon_full_params at fsdp_version 1): only the
 *    root's flat parameter is unsharded for the whole generate() (pytorch @0ac83aeb35494c139d2634d868b81b5cff666ec9
 *    torch/distributed/fsdp/_unshard_param_utils.py _unshard_params with recurse=False: the module's own state;
 *    _unshard_fsdp_state_params: _unshard, then _reshard on exit); each decoder unit keeps its own FSDP forward, which
 *    all-gathers its flat parameter in the pre-forward and frees it in the post-forward (pytorch @00ae0bc9
 *    _runtime_utils.py _pre_forward_unshard, _post_forward_reshard: not the root and FULL_SHARD), in every model call:
 *    the generate plan under the layout's hooks (vc__grpo_phases; the root's gathered by the first call's root
 *    pre-forward hook, kept as FULL_SHARD keeps the root's, where the summon gathers it as generate() begins);
 *  - fsdp2 (accelerate's fsdp_version 2, fully_shard): --use-vllm's _sync_fsdp2_params_to_vllm taking
 *    module.state_dict()'s sharded DTensors one at a time, param.full_tensor() each (vc__fsdp2_param_max_bytes);
 *    MixedPrecisionPolicy, reshard_after_forward and HSDP leave that as it is (the state dict's parameters are the
 *    orig_dtype shards). Without vLLM, generate() runs on the fully_shard'd model itself (TRL's
 *    DistributedBackend.summon_full_params is a no-op for FSDP v2; fully_shard subclasses the module in place, so the
 *    unwrapped model keeps its hooks): every model call is a root forward through each group's pre_forward (unshard,
 *    wait_for_unshard) and post_forward (reshard; the root's kept by default), under no_grad as with it (pytorch
 *    @010ae4a89516fa3be548ab16dff711414ec12d0b _fsdp_param_group.py pre_forward / post_forward / wait_for_unshard:
 *    the all_gather_state kept to the next group's wait_for_unshard; @01c9f4fc _fsdp_state.py _post_forward: the last
 *    one freed as the root's forward returns): the generate plan under the layout's hooks, as for fsdp. */
const char *vc__grpo_layout_why(const vc_model *m, const vc_options *o)
{
    const bool vllm = o->grpo_vllm != 0, peft = peft_on(m) || m->lora.modules_to_save[0];
    const vc_parallel p = o->parallel;
    if (m->stage.on || o->pp > 1) return "grpo under pipeline stages is not modelled (TRL generates on the whole model)";
    if (p == VC_PARALLEL_NONE || p == VC_PARALLEL_DDP) return NULL;
    if (p != VC_PARALLEL_ZERO2 && p != VC_PARALLEL_ZERO3 && p != VC_PARALLEL_FSDP && p != VC_PARALLEL_FSDP2)
        return "grpo is modelled on one GPU and under ddp, zero2, zero3, fsdp and fsdp2 (TRL's generation and weight "
               "sync under the others are not)";
    if (o->offload != VC_OFFLOAD_NONE)
        return "grpo with " O("offload") " is not modelled (the gathers of generate() and sync_weights from "
               "CPU-held partitions are not)";
    for (size_t q = 0; q < m->npar; q++)
        if (m->par[q].fmt != VC_WEIGHTS_DENSE)
            return "grpo over quantized weights under a sharded layout is not modelled (the gathers of generate() "
                   "and sync_weights are of dense 16- and 32-bit parameters here)";
    if ((p == VC_PARALLEL_FSDP || p == VC_PARALLEL_FSDP2) && peft)
        return vllm ? "grpo with adapters under fsdp or fsdp2 is not modelled: TRL's sync_weights merges them into the "
                      "sharded parameters (gather_params is a no-op under FSDP; its own comment: \"does this work with "
                      "FSDP?\")"
                    : "grpo with adapters under fsdp or fsdp2 is modelled with a full fine-tune only (the units' gathers "
                      "of frozen weights and adapters around generate() are not)";
    if (p == VC_PARALLEL_FSDP && (o->fsdp_param_dtype != VC_FSDP_DTYPE_NONE || o->fsdp_use_orig_params))
        return "grpo under fsdp is modelled without MixedPrecision or use_orig_params (summon_full_params' unsharded "
               "flat parameters under them are not)";
    if (o->grpo_beta != 0.0 && !peft && p != VC_PARALLEL_ZERO2)
        return "grpo with " O("beta") " under zero3, fsdp or fsdp2 is not modelled for a full fine-tune: the reference "
               "copy is sharded by its own engine (trl/models/utils.py prepare_deepspeed at stage 3, prepare_fsdp)";
    return NULL;
}

/* The model's forward with its LM head on the last `keep` positions (transformers' logits_to_keep:
 * hidden_states[:, -keep:, :], a view, then lm_head): the instances before the head at the full
 * length, the head and what follows from `tw`, the model at `keep` tokens. */
static vc_t forward_keep(vc_build *b, const vc_model *tw)
{
    const vc_model *m = b->m;
    size_t head = (size_t)m->loss_head;
    vc__emit_instances(b, 0, head);
    if (b->st) return -1;
    int hv = m->inst[head].in[0];
    b->val_t[hv] = vc__op_select(b, b->val_t[hv], vc_n_sample(vc_shape_numel(&tw->val[hv].shape)), false);
    b->m = tw;
    vc__emit_instances(b, head, m->ninst);
    b->m = m;
    vc__end_forward(b);
    return b->st ? -1 : b->val_t[m->output];
}

/* 2.: the reference's no-grad forward (the frozen copy's weights, or the policy's with its adapters
 * disabled), as plan.c's vc__emit_reference runs DPO's, with the head on C + 1 positions; then its
 * selective_log_softmax. own: the policy's own no-grad pass instead (--use-vllm's old_per_token_logps:
 * _get_per_token_logps_and_entropies(self.model, ...) under torch.no_grad(), its adapters on). Returns the
 * [B, C] log-probs, -1 after an error. */
static vc_t reference_logps(vc_build *b, const vc_model *tw, bool copy, bool own, int64_t C, int64_t V)
{
    vc_ref_scope sc;
    if (vc__reference_enter(b, copy, &sc)) return -1; /* copy: create_model_from_path, the model's dtypes */
    if (own) b->adapters_off = false;
    vc_t lp = -1;
    vc_t y = b->st ? -1 : forward_keep(b, tw);
    if (y >= 0) {
        b->cur_inst = b->cur_region = -1;
        vc_t s = vc__trl_shift(b, y, C + 1, V);
        vc_op *o = vc_op_begin(b, "div_"); /* logits.div_(temperature): in place */
        int i = vc_op_in(o, s);
        s = vc_op_out_view(o, i, b->t[s].n, false);
        vc_op_end(o);
        lp = vc__trl_logps(b, s, C + 1, V);
    }
    vc__reference_leave(b, &sc);
    return lp;
}

/* 2.: _get_per_token_logps_and_entropies under no_grad over the generation batch of B x spg in chunks of B: the
 * reference's (ref: the frozen copy, or the policy with its adapters disabled; see reference_logps) or the
 * policy's own (old_per_token_logps, !ref: adapters on): the spg - 1 earlier chunks' [B, C] log-probs alive in
 * all_logps while the last runs, then torch.cat of all (returned; -1 after an error). */
static vc_t chunked_logps(vc_build *b, const vc_model *tw, bool copy_or_off, bool own, int64_t C, int64_t V, int64_t spg,
                          vc_dtype dt)
{
    vc_t prev[64]; /* past 64 chunks, the last tensor holds the rest */
    int64_t np = spg - 1 < 64 ? spg - 1 : 64;
    for (int64_t k = 0; k < np; k++)
        prev[k] = vc__op_new(b, "selective_log_softmax", vc_n_sample(C * (k + 1 < np ? 1 : spg - np)), dt);
    vc_t lp = reference_logps(b, tw, copy_or_off, own, C, V);
    if (lp < 0 || b->st) return -1;
    b->cur_inst = b->cur_region = -1;
    vc_t cat = vc__op_nograd(b, "cat", lp, -1, vc_n_sample(C * spg), (vc_dtype)b->t[lp].dt); /* torch.cat(all_logps) */
    for (int64_t k = 0; k < np; k++) vc__extend_life(b, prev[k]);
    vc__extend_life(b, lp);
    vc__extend_life(b, cat);
    return cat;
}

/* A [B, C] op of the loss: x (and y, -1 none) in, a new tensor of dt out; save: 1 x, 2 y, 4 the result.
 * x's gradient as `grad`; y's new when y requires grad (a resident operand's does not). */
static vc_t small(vc_build *b, const char *name, vc_t x, vc_t y, vc_dtype dt, int grad, int save)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_grad(o, vc_op_in(o, x), grad);
    if (y >= 0 && vc_requires_grad(b, y)) vc_op_grad(o, vc_op_in(o, y), VC_GRAD_NEW);
    else if (y >= 0) vc_op_in_nodiff(o, y);
    vc_t r = vc_op_out(o, b->t[x].n, dt);
    if (save & 1) vc_op_save(o, x);
    if (save & 2) vc_op_save(o, y);
    if (save & 4) vc_op_save(o, r);
    vc_op_end(o);
    return r;
}

void vc__grpo_emit(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_value *ov = &m->val[m->output];
    const int64_t P = b->o.prompt, C = b->o.new_tokens, L = vc_shape_numel(&m->val[0].shape);
    const bool beta = b->o.grpo_beta != 0.0, peft = peft_on(m);
    const int64_t spg = b->o.accumulate; /* steps_per_generation = gradient_accumulation_steps (request.c) */
    const bool vllm = b->o.grpo_vllm != 0;
    if (b->amp_dt != VC_DT_F32) {
        /* under bf16/fp16 mixed precision accelerate's Accelerator.prepare_model wraps the policy's forward in
         * torch.autocast and convert_outputs_to_fp32: its 16-bit logits come back as an fp32 copy, so TRL's
         * selective_log_softmax (trl/trainer/utils.py @f2cd5771) takes its fp32 branch (gather, then a logsumexp
         * per sequence) outside autocast; no loss of this engine models that copy (DPO's, KTO's, ORPO's refuse it too) */
        vc_refuse(b, O("precision"), "grpo under autocast (%s) is not modelled (accelerate's convert_outputs_to_fp32 "
                  "copies the logits to fp32): use fp32, bf16 or fp16", vc_precision_name(b->o.precision));
        return;
    }
    const char *lay_why = vc__grpo_layout_why(m, &b->o);
    if (lay_why) {
        vc_refuse(b, O("parallel"), "%s", lay_why);
        return;
    }
    if (m->loss_head < 0 || ov->shape.nd < 1 || L != P + C) {
        vc_refuse(b, O("loss"), "grpo needs a causal LM config.json loaded at " O("prompt") " + " O("new_tokens")
                  " tokens");
        return;
    }
    if (vllm && peft && m->lora.method != VC_PEFT_LORA && m->lora.method != VC_PEFT_RSLORA && m->lora.method != VC_PEFT_PISSA) {
        /* sync_weights' merge_adapter runs the method's own merge: DoRA's lora_variant (tuners/lora/variants.py
         * DoraLinearVariant.merge_unsafe, the merged weight's norm), IA3's and LN tuning's layers */
        vc_refuse(b, O("use_vllm"), "grpo with vLLM over %s adapters is not modelled (sync_weights' merge_adapter runs its "
                  "own merge; LoRA's, rsLoRA's and PiSSA's are)", vc_peft_row_get(m->lora.method)->name);
        return;
    }
    if (beta && peft && (m->lora.method == VC_PEFT_IA3 || m->lora.method == VC_PEFT_LN_TUNING || m->lora.modules_to_save[0])) {
        vc_refuse(b, O("beta"), "the reference pass with %s disabled is not modelled (LoRA, rsLoRA, PiSSA and "
                  "DoRA are)", m->lora.modules_to_save[0] ? O("modules_to_save") : vc_peft_row_get(m->lora.method)->name);
        return;
    }
    for (size_t p = 0; beta && !peft && p < m->npar; p++)
        if (m->par[p].fmt != VC_WEIGHTS_DENSE) {
            vc_refuse(b, O("beta"), "a full fine-tune's reference copy of quantized weights is not modelled");
            return;
        }
    const int64_t V = ov->shape.d[ov->shape.nd - 1];
    vc_model *tw = NULL;
    vc_error e;
    memset(&e, 0, sizeof e);
    if (vc__model_twin(m, C + 1, &tw, &e)) {
        b->st = e.code ? e.code : VC_ERR_NOMEM;
        b->why_opt = O("new_tokens");
        snprintf(b->why, sizeof b->why, "%s", e.msg);
        return;
    }
    vc_dtype dt = b->param_dt; /* the logits' (no autocast), checked below */
    /* 3.: the buffered batch, resident through the step */
    vc_t buf = vc__new_tensor(b, buffer_numel(P, C, beta, vllm, dt, spg), VC_DT_U8);
    if (buf < 0) goto out;
    b->t[buf].persistent = true;
    b->target_t = buf;
    b->cur_inst = b->cur_region = -1;
    if (beta || vllm) { /* 2.: the generation's ids and masks ([B, P] and [B, C] x 2, their cats [B, P + C] x 2) beside it */
        /* with --accumulate N: micro-step 1's alone (the ops from once_from run in the first accumulation pass
         * only, autograd.c), over the generation batch of B x N in N chunks of B (_get_per_token_logps_and_entropies
         * with batch_size = per_device_train_batch_size): the last chunk's forward, the N - 1 chunks' [B, C]
         * log-probs before it alive in all_logps, then torch.cat of the N */
        if (spg > 1) b->once_from = (int32_t)b->nop;
        vc_t gen = vc__op_new(b, "pad", vc_n_sample((8 * (2 * P + 2 * C) + 16 * (P + C)) * spg), VC_DT_U8);
        vc_t keep[4] = {gen, -1, -1, -1};
        if (vllm) { /* sampling_per_token_logps (pad(...).to(device)), then old_per_token_logps: the policy's own
                     * no-grad pass (its adapters on), then the importance-sampling ratio, "sequence_mask":
                     * (old - sampling) * mask, .sum(-1, keepdim=True), exp, the two bounds' masks, masked_fill */
            keep[1] = vc__op_new(b, "pad", vc_n_sample(C * spg), VC_DT_F32);
            keep[2] = chunked_logps(b, tw, false, true, C, V, spg, dt);
            if (keep[2] < 0 || b->st) goto out;
            vc_t d = vc__op_nograd(b, "sub", keep[2], keep[1], vc_n_sample(C), VC_DT_F32);
            vc_t dm = vc__op_nograd(b, "mul", d, -1, vc_n_sample(C), VC_DT_F32);
            vc_t sq = vc__op_nograd(b, "sum", dm, -1, vc_n_sample(1), VC_DT_F32);
            vc_t ex = vc__op_nograd(b, "exp", sq, -1, vc_n_sample(1), VC_DT_F32);
            vc_t lo = vc__op_nograd(b, "lt", ex, -1, vc_n_sample(1), VC_DT_BOOL);
            vc_t hi = vc__op_nograd(b, "gt", ex, -1, vc_n_sample(1), VC_DT_BOOL);
            vc_t bad = vc__op_nograd(b, "bitwise_or", lo, hi, vc_n_sample(1), VC_DT_BOOL);
            vc__op_nograd(b, "masked_fill", ex, bad, vc_n_sample(1), VC_DT_F32);
        }
        if (beta && (keep[3] = chunked_logps(b, tw, !peft, false, C, V, spg, dt)) < 0) goto out;
        for (int k = 0; k < 4; k++) vc__extend_life(b, keep[k]);
        if (spg > 1) b->once_to = (int32_t)b->nop;
    }
    /* 4.: _compute_loss */
    vc_t am = vc__op_new(b, "cat", vc_n_sample(L), VC_DT_I64); /* attention_mask = cat([prompt_mask, completion_mask]) */
    vc_t y = forward_keep(b, tw);
    if (y < 0 || b->st) goto out;
    if ((vc_dtype)b->t[y].dt != dt) {
        vc_refuse(b, O("precision"), "grpo: the logits in another dtype than the weights are not modelled");
        goto out;
    }
    b->cur_inst = b->cur_region = -1;
    /* logits.div_(T) on logits[:, :-1, :]: CopySlices on the base, the view a slice of it (see the top) */
    vc_op *o = vc_op_begin(b, "div_");
    int i = vc_op_in(o, y);
    vc_op_grad(o, i, VC_GRAD_NEW);                   /* CopySlices' result: base-sized */
    /* grad_slice.clone() alive while DivBackward0 makes grad / other: together (one request here) */
    const vc_part cp[2] = {{vc_n_sample(C * V), dt, 0, 0, 0}, {vc_n_sample(C * V), dt, 0, 0, 0}};
    vc_op_btemp_parts(o, cp, 2, false);
    vc_t yd = vc_op_out_view(o, i, b->t[y].n, true);
    vc_op_end(o);
    vc_t s = vc__trl_shift(b, yd, C + 1, V);
    vc_t lp = vc__trl_logps(b, s, C + 1, V);
    vc__trl_entropy(b, s, C + 1, V, dt); /* under no_grad: entropies [B, C] */
    vc_t ent = vc__op_nograd(b, "entropy", s, -1, vc_n_sample(C), dt);
    vc_t entc = vc__op_nograd(b, "cat", ent, -1, vc_n_sample(C), dt); /* torch.cat(all_entropies) */
    o = vc_op_begin(b, "cat"); /* torch.cat(all_logps): a copy; CatBackward passes slices of its gradient */
    vc_op_grad(o, vc_op_in(o, lp), VC_GRAD_PASS);
    vc_t logps = vc_op_out(o, b->t[lp].n, dt);
    vc_op_end(o);
    /* the dapo loss (advantages [B, 1] fp32 and completion_mask int64 from the resident buffer: saved,
     * nothing kept for them); coef_1 * advantages promotes to fp32 */
    vc_t lr = small(b, "sub", logps, -1, dt, VC_GRAD_PASS, 0);        /* per_token_logps - old (detached) */
    vc_t c1 = small(b, "exp", lr, -1, dt, VC_GRAD_NEW, 4);            /* coef_1: ExpBackward saves the result */
    vc_t kl = -1;
    if (beta) { /* exp(ref - logps) - (ref - logps) - 1 */
        vc_t d1 = small(b, "rsub", logps, -1, dt, VC_GRAD_PASS, 0);
        vc_t e1 = small(b, "exp", d1, -1, dt, VC_GRAD_NEW, 4);
        vc_t d2 = small(b, "rsub", logps, -1, dt, VC_GRAD_PASS, 0);
        vc_t k1 = small(b, "sub", e1, d2, dt, VC_GRAD_PASS, 0);
        kl = small(b, "sub", k1, -1, dt, VC_GRAD_PASS, 0);
    }
    vc_t c2 = small(b, "clamp", c1, -1, dt, VC_GRAD_NEW, 1);          /* ClampBackward saves self */
    vc_t l1 = small(b, "mul", c1, -1, VC_DT_F32, VC_GRAD_NEW, 0);     /* coef_1 * advantages */
    vc_t l2 = small(b, "mul", c2, -1, VC_DT_F32, VC_GRAD_NEW, 0);
    vc_t pl = small(b, "minimum", l1, l2, VC_DT_F32, VC_GRAD_NEW, 3);
    pl = small(b, "neg", pl, -1, VC_DT_F32, VC_GRAD_NEW, 0);
    if (vllm) /* per_token_loss * importance_sampling_ratio ([B, 1], resident: MulBackward0 saves it) */
        pl = small(b, "mul", pl, -1, VC_DT_F32, VC_GRAD_NEW, 0);
    if (beta) {
        vc_t kb = small(b, "mul", kl, -1, dt, VC_GRAD_NEW, 0);        /* beta * per_token_kl */
        pl = small(b, "add", pl, kb, VC_DT_F32, VC_GRAD_PASS, 0);
    }
    vc_t pm = small(b, "mul", pl, -1, VC_DT_F32, VC_GRAD_NEW, 0);     /* * mask */
    o = vc_op_begin(b, "sum");
    vc_op_grad(o, vc_op_in(o, pm), VC_GRAD_NEW); /* sum_backward: grad.expand(sizes), materialized by mul's backward */
    vc_t sm = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_end(o);
    vc_t nrm = vc__op_nograd(b, "clamp", -1, -1, vc_n_fixed(1), VC_DT_F32); /* num_items_in_batch.clamp(min=1.0) / 1 */
    o = vc_op_begin(b, "div");
    vc_op_grad(o, vc_op_in(o, sm), VC_GRAD_NEW);
    vc_op_in_nodiff(o, nrm);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_save(o, nrm);
    vc_op_end(o);
    /* _compute_loss's locals until it returns */
    vc__extend_life(b, am);
    vc__extend_life(b, entc);
    vc__extend_life(b, logps);
    vc__extend_life(b, c1);
    vc__extend_life(b, c2);
    vc__extend_life(b, kl);
out:
    vc_model_free(tw);
}

/* --use-vllm over LoRA: sync_weights' largest transient on the training GPU (trl @f2cd5771
 * trl/generation/vllm_generation.py VLLMGeneration.sync_weights: is_peft_model -> gather_params (nothing on one
 * GPU), model.merge_adapter(), every base parameter pushed (_push_param_to_vllm: load_weights([(name, param.data)])),
 * model.unmerge_adapter()). merge_adapter / unmerge_adapter call each LoRA layer's merge / unmerge in turn (peft
 * @5d602fdb src/peft/tuners/lora/layer.py Linear.merge with safe_merge=False, Linear.unmerge, get_delta_weight):
 *  - get_delta_weight: transpose(weight_B @ weight_A, fan_in_fan_out) * scaling: the product [out, in] in the
 *    adapters' dtype (lora_B's; cast_to_fp32 only on a CPU device), alive while `* scaling` makes the result of
 *    the same size (transpose is a view): 2 x out x in x the adapters' bytes; the product freed at the return;
 *  - merge: base_layer.weight.data += delta_weight: in place; an fp32 delta into a 16-bit weight is cast inside
 *    the CUDA kernel (ATen's TensorIteratorBase::compute_types makes cast temporaries on CPU only), nothing more;
 *  - unmerge: weight.data -= delta_weight.to(orig_dtype): a copy of the delta in the base weight's dtype beside
 *    it when the two differ (to() returns the tensor itself when they do not): out x in x (adapter + base bytes).
 * Each layer's delta is freed when its merge / unmerge returns, before the next layer's: the transient is the
 * largest layer's, max(2 x adapter, adapter + base where they differ) bytes per element of its weight, each
 * tensor in the caching allocator's 512-byte blocks. The pushes allocate nothing on one GPU (vLLM's weight
 * loaders narrow and copy_ in place, src/api/request.c vllm_beside). */
typedef struct merge_layer {
    const char *path; /* the LoRA layer's instance */
    int64_t delta;    /* its delta weight in the adapters' dtype, 512-byte blocks */
    int64_t cast;     /* delta_weight.to(orig_dtype) in the base's dtype, 0 where the dtypes agree */
} merge_layer;

/* The LoRA layers of m in merge_adapter's order, fn called on each (its non-zero return stops the walk). */
static vc_status merge_layers(const vc_model *m, vc_dtype base_dt, int (*fn)(void *, const merge_layer *), void *ctx,
                              vc_error *err)
{
    for (size_t p = 0; p < m->npar; p++) {
        const vc_param_entry *e = &m->par[p];
        if (!e->name || strcmp(e->name, "lora_B.default.weight") || e->owner < 0 || (size_t)e->owner >= m->ninst) continue;
        const vc_inst *in = &m->inst[e->owner];
        int64_t w = -1;
        for (int k = 0; k < in->np; k++)
            if (m->par[in->params[k]].name && !strcmp(m->par[in->params[k]].name, "weight")) w = m->par[in->params[k]].numel;
        if (w < 0) continue;
        const int64_t ad = (int64_t)vc_dtype_size(vc_param_pinned_dt(e->flags, base_dt)), bd = (int64_t)vc_dtype_size(base_dt);
        int64_t a, c;
        if (__builtin_mul_overflow(w, ad, &a) || __builtin_mul_overflow(w, bd, &c) || a > INT64_MAX / 2 - 1024 ||
            c > INT64_MAX / 2 - 1024)
            return vc_set_error(err, VC_ERR_OVERFLOW, O("lora"), "a LoRA layer's delta weight passes 2^62 bytes");
        merge_layer l = {in->path ? in->path : "-", (a + 511) / 512 * 512, ad != bd ? (c + 511) / 512 * 512 : 0};
        if (fn(ctx, &l)) break;
    }
    return VC_OK;
}

/* merge_temp's walk: the largest layer's transient */
static int merge_max(void *ctx, const merge_layer *l)
{
    int64_t *out = ctx, t = 2 * l->delta; /* get_delta_weight: weight_B @ weight_A and its product with scaling */
    if (l->delta + l->cast > t) t = l->delta + l->cast; /* unmerge: delta_weight and delta_weight.to(orig_dtype) */
    if (t > *out) *out = t;
    return 0;
}

static vc_status merge_temp(const vc_model *m, vc_dtype base_dt, int64_t *out, vc_error *err)
{
    *out = 0;
    return merge_layers(m, base_dt, merge_max, out, err);
}

/* --use-vllm: the gradient bytes the trainer holds between steps, of `all` (the step's persistent gradients: the
 * parameters' own and a layout's resident buffers): every one under --zero-grad zero (zero_grad(set_to_none=False));
 * else only the layout's, DDP's gradient buckets (layout_ddp.c: allocated when DDP wraps the model and kept, the
 * parameters' .grad freed by zero_grad(set_to_none=True)), 0 on one GPU. -1 on overflow. */
int64_t vc__grpo_resident_grads(const vc_model *m, const vc_options *o, int64_t all)
{
    if (o->keep_grads) return all;
    const vc_dtype dt = vc_precision_row_get(o->precision)->param_dt; /* plan.c: the gradients in the parameters' dtype */
    int64_t own = 0;
    for (size_t p = 0; p < m->npar; p++) {
        if (!m->par[p].trainable) continue;
        int64_t v = vc_bytes(vc_n_fixed(m->par[p].numel), vc_param_pinned_dt(m->par[p].flags, dt), 1);
        if (v < 0 || __builtin_add_overflow(own, v, &own)) return -1;
    }
    return all > own ? all - own : 0;
}

/* The sharded layouts whose phases outside the step vc__grpo_phases reads from the layout (vc__grpo_layout_why) */
static bool sharded(const vc_options *o)
{
    return o->parallel == VC_PARALLEL_ZERO2 || o->parallel == VC_PARALLEL_ZERO3 || o->parallel == VC_PARALLEL_FSDP ||
           o->parallel == VC_PARALLEL_FSDP2;
}

/* The gradient bytes the trainer holds between steps, of the step st: under zero2, zero3, fsdp and fsdp2 every one with
 * --zero-grad zero, else the layout's buffers allocated once and kept (st->resident_grad: ZeRO-3's
 * grad_partitions_flat_buffer and IPG bucket, layout_zero3.c zero3_resident; none for ZeRO-2, whose IPG buffer and
 * grads_in_partition the layout makes in the backward, nor FSDP1 and FSDP2, whose sharded gradients zero_grad frees);
 * elsewhere vc__grpo_resident_grads. -1 on overflow. */
static int64_t between_grads(const vc_model *m, const vc_options *o, const vc_sim *st)
{
    if (sharded(o)) return o->keep_grads ? st->persistent[CAT_GRAD] : st->resident_grad;
    return vc__grpo_resident_grads(m, o, st->persistent[CAT_GRAD]);
}

/* 1.: the generation as its own plan, with the training state resident beside it. Under a layout
 * (vc__grpo_layout_why) the plan is one GPU's generate() over the whole model, as TRL runs it on the unwrapped
 * model (trl/models/utils.py _unwrap_model_for_generation @f2cd5771): under ddp (DistributedDataParallel taken off)
 * and zero2 every rank holds the whole 16-bit model; under zero3 deepspeed.zero.GatheredParameters(model.parameters()) gathers every non-persistent parameter
 * whole beside its partition (vc__zero3_gather_bytes: r->grpo.gathered), then remove_hooks: the layout's weights, those
 * gathered copies and the generation's cache and activations; under fsdp and fsdp2 the generate plan is built under the
 * layout (its shards, its hooks' gathers in every model call: r->grpo.gathered, those alive at the generation's peak).
 * --use-vllm: the phases are request.c's (vllm_beside),
 * over r->grpo.resident and sync_weights' transient r->grpo.sync_temp (trl/generation/vllm_generation.py
 * sync_weights): over LoRA merge_adapter's deltas (merge_temp), under zero3 inside
 * gather_params(list(model.parameters())) (every non-persistent parameter whole at once); a full fine-tune under
 * zero3 gathers one parameter at a time around its push (gather_params([param]): the largest), under fsdp one unit
 * at a time (_sync_fsdp1_params_to_vllm: vc__fsdp1_unit_max_bytes), under fsdp2 one parameter's full_tensor() at a
 * time (_sync_fsdp2_params_to_vllm: vc__fsdp2_param_max_bytes); zero2's gather_params is a no-op. */
vc_status vc__grpo_phases(const vc_model *m, const vc_options *o, const vc_sim *st, vc_result *r, vc_error *err)
{
    const int64_t grads = between_grads(m, o, st);
    if (grads < 0) return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    const bool z3 = o->parallel == VC_PARALLEL_ZERO3;
    if (o->grpo_vllm) { /* the completions are vLLM's (its engine beside: src/api/request.c vllm_beside) */
        r->grpo.on = 1;
        if (__builtin_mul_overflow(o->batch, o->accumulate, &r->grpo.generation_batch))
            return vc_set_error(err, VC_ERR_OVERFLOW, O("accumulate"), "the generation batch passes 2^63");
        r->grpo.train_peak = r->memory.peak_allocated;
        r->grpo.train_reserved = r->memory.reserved;
        /* what the trainer holds when sync_weights and vLLM's generate() run (_generate_single_turn, before the
         * step's forward): its weights (and a reference copy), the optimizer's state, the previous step's
         * buffered batch, gradients only under --zero-grad zero (set_to_none=True otherwise) or a layout's kept
         * buffers, and the workspaces the step made (cuBLAS's: PyTorch's CUDABlasHandlePool keeps each handle's
         * workspace from the caching allocator in cublas_handle_stream_to_workspace until the process ends;
         * persistent in the plan) */
        vc_dtype dt = vc_precision_row_get(o->precision)->param_dt;
        vc_numel bn = buffer_numel(o->prompt, o->new_tokens, o->grpo_beta != 0.0, true, dt, o->accumulate);
        int64_t bufb, res;
        if (__builtin_mul_overflow(bn.ps, o->batch, &bufb) || __builtin_add_overflow(bufb, bn.fx + 511, &bufb) ||
            __builtin_add_overflow(st->persistent[CAT_WEIGHT], st->persistent[CAT_OPT], &res) ||
            __builtin_add_overflow(res, bufb / 512 * 512, &res) || __builtin_add_overflow(res, st->persistent[CAT_WS], &res) ||
            __builtin_add_overflow(res, grads, &res))
            return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
        r->grpo.resident = res;
        r->grpo.resident_grads = grads;
        const bool peft = peft_on(m) || m->lora.modules_to_save[0];
        int64_t gathered = z3 ? vc__zero3_gather_bytes(m, o, peft)
                         : o->parallel == VC_PARALLEL_FSDP ? vc__fsdp1_unit_max_bytes(m, o)
                         : o->parallel == VC_PARALLEL_FSDP2 ? vc__fsdp2_param_max_bytes(m, o) : 0;
        if (gathered < 0) return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
        r->grpo.gathered = gathered;
        vc_status s = merge_temp(m, dt, &r->grpo.sync_temp, err);
        if (!s && __builtin_add_overflow(r->grpo.sync_temp, gathered, &r->grpo.sync_temp))
            return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
        return s;
    }
    vc_options g = *o;
    g.mode = VC_MODE_GENERATE;
    g.cache = VC_CACHE_DYNAMIC;
    g.accumulate = 1;
    /* fsdp, fsdp2: generate() under the layout's own hooks, each model call a forward (fsdp_gen) */
    const bool fsdp_gen = o->parallel == VC_PARALLEL_FSDP || o->parallel == VC_PARALLEL_FSDP2;
    if ((sharded(o) || o->parallel == VC_PARALLEL_DDP) && !fsdp_gen) { /* generate() on the unwrapped model, whole (above) */
        g.parallel = VC_PARALLEL_NONE;
        g.gpus = 1;
        g.ds_overlap_comm = VC_DS_OVERLAP_AUTO;
    }
    /* generation_batch_size = per_device_train_batch_size x steps_per_generation (GRPOConfig.__post_init__ with
     * steps_per_generation None: gradient_accumulation_steps), sampled in one generate() call
     * (_generate_single_turn) */
    if (__builtin_mul_overflow(o->batch, o->accumulate, &g.batch))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("accumulate"), "the generation batch passes 2^63");
    vc_sim sg;
    vc_status s = vc__simulate_as(m, &g, &sg, err);
    if (s) return s;
    const int64_t gathered = z3 ? vc__zero3_gather_bytes(m, o, true) : 0;
    if (gathered < 0) return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    /* fsdp, fsdp2: the unsharded parameters alive at the generation's peak, in the plan (its weights less the shards) */
    const int64_t unsharded = fsdp_gen ? sg.at_peak[CAT_WEIGHT] - sg.persistent[CAT_WEIGHT] : 0;
    /* beside the generation: the optimizer's state, the weights it does not load (the reference's copy; a
     * layout's own weights with zero3's gathered copies, less the whole model the plan loads), gradients kept by
     * --zero-grad zero or a layout, the previous step's buffered batch */
    vc_dtype dt = vc_precision_row_get(o->precision)->param_dt;
    vc_numel bn = buffer_numel(o->prompt, o->new_tokens, o->grpo_beta != 0.0, false, dt, o->accumulate);
    const int64_t gg = sharded(o) || o->parallel == VC_PARALLEL_DDP ? grads : o->keep_grads ? st->persistent[CAT_GRAD] : 0;
    int64_t bufb, extra_w, off, gpk, grs;
    if (__builtin_add_overflow(st->persistent[CAT_WEIGHT], gathered, &extra_w) ||
        __builtin_sub_overflow(extra_w, sg.persistent[CAT_WEIGHT], &extra_w) ||
        __builtin_mul_overflow(bn.ps, o->batch, &bufb) || __builtin_add_overflow(bufb, bn.fx + 511, &bufb) ||
        __builtin_add_overflow(st->persistent[CAT_OPT], extra_w, &off) ||
        __builtin_add_overflow(off, bufb / 512 * 512, &off) ||
        __builtin_add_overflow(off, gg, &off) ||
        __builtin_add_overflow(sg.peak, off, &gpk) || __builtin_add_overflow(sg.reserved, off, &grs))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    bufb = bufb / 512 * 512;
    r->grpo.on = 1;
    r->grpo.generation_batch = g.batch;
    r->grpo.generate_peak = gpk;
    r->grpo.generate_reserved = grs;
    r->grpo.kv_cache = sg.kv_cache;
    r->grpo.train_peak = r->memory.peak_allocated;
    r->grpo.train_reserved = r->memory.reserved;
    r->grpo.resident_grads = gg;
    r->grpo.gathered = fsdp_gen ? unsharded : gathered;
    if (grs > r->memory.reserved) r->memory.reserved = grs;
    if (gpk > r->memory.peak_allocated) { /* the generation sets the step's peak */
        vc_peak *pk = &r->peak;
        r->memory.peak_allocated = gpk;
        pk->phase = sg.phase;
        pk->weights = sg.at_peak[CAT_WEIGHT] + extra_w;
        pk->gradients = gg;
        pk->optimizer_states = st->persistent[CAT_OPT];
        pk->activations = sg.at_peak[CAT_ACT] + bufb;
        pk->temporaries = sg.at_peak[CAT_TEMP];
        pk->workspace = sg.at_peak[CAT_WS];
        pk->layer[0] = pk->kind[0] = 0;
        if (sg.peak_inst >= 0 && (size_t)sg.peak_inst < m->ninst) {
            const vc_inst *pi = &m->inst[sg.peak_inst];
            vc_cat3(pk->layer, sizeof pk->layer, pi->module ? pi->module : pi->path, "", "");
            vc_cat3(pk->kind, sizeof pk->kind, pi->kind->name, "", "");
        }
    }
    return VC_OK;
}

/* --use-vllm --trace: the colocated engine's allocations and the phases outside the step, as rows of the step's
 * timeline (vc__trace_row, the plan's format). The head, before the step's rows: what of vLLM stays allocated from
 * _init_vllm on (request.c vllm_beside): its weights and KV cache without sleep mode (LLM(...)), its CUDA graphs in
 * both modes (capture_model; the pool given by --vllm-cuda-graph-memory). The tail, after the step's rows (its end
 * state is the next step's start): _compute_loss's input_ids (torch.cat, the plan's input) gone, then the next
 * step's sync and vllm phases over the trainer's resident state (vc__grpo_phases: r->grpo.resident), so their
 * running totals are the report's sync_peak and generate_peak:
 *  - sync (sync_weights): under sleep mode wake_up(tags=["weights"]) allocates vLLM's weights; over LoRA each
 *    layer's merge (get_delta_weight: weight_B @ weight_A, its product with scaling, the first freed; the delta
 *    after base_layer.weight.data += delta_weight), the pushes (load_weights copies in place: no row), each layer's
 *    unmerge (the delta again, delta_weight.to(orig_dtype) where the dtypes differ, freed after weight.data -= it);
 *    peft @5d602fdb tuners/lora/layer.py Linear.merge / unmerge / get_delta_weight, as merge_temp reads them;
 *  - vllm (generate()): under sleep mode wake_up(tags=["kv_cache"]) allocates its KV cache, and sleep(level=2)
 *    after the generation releases the KV cache and the weights (trl @f2cd5771 vllm_generation.py generate). */
typedef struct trace_ctx {
    void (*line)(void *, const char *);
    void *ctx;
    int64_t total;
    bool unmerge;
    vc_status st;
} trace_ctx;

static void row(trace_ctx *t, vc_phase ph, bool alloc, const char *cat, int64_t bytes, const char *where, const char *op)
{
    if (t->st) return;
    if (__builtin_add_overflow(t->total, alloc ? bytes : -bytes, &t->total)) {
        t->st = VC_ERR_OVERFLOW;
        return;
    }
    vc__trace_row(t->line, t->ctx, ph, alloc, cat, bytes, t->total, where, op);
}

static int merge_rows(void *ctx, const merge_layer *l)
{
    trace_ctx *t = ctx;
    row(t, VC_PHASE_SYNC, true, "temp", l->delta, l->path, "mm");   /* weight_B @ weight_A */
    row(t, VC_PHASE_SYNC, true, "temp", l->delta, l->path, "mul");  /* * scaling: the delta */
    row(t, VC_PHASE_SYNC, false, "temp", l->delta, l->path, "mul"); /* the product, freed */
    if (t->unmerge && l->cast) {                                    /* delta_weight.to(orig_dtype) */
        row(t, VC_PHASE_SYNC, true, "temp", l->cast, l->path, "_to_copy");
        row(t, VC_PHASE_SYNC, false, "temp", l->cast, l->path, "sub_");
    }
    row(t, VC_PHASE_SYNC, false, "temp", l->delta, l->path, t->unmerge ? "sub_" : "add_");
    return t->st != VC_OK;
}

vc_status vc__grpo_trace_head(const vc_grpo_engine *v, int64_t *total, void (*line)(void *, const char *), void *ctx)
{
    trace_ctx t = {line, ctx, *total, false, VC_OK};
    line(ctx, v->sleep ? "-- vllm: LLM(...) in _init_vllm, its weights and KV cache released by sleep(level=2)"
                       : "-- vllm: LLM(...) in _init_vllm, its weights and KV cache allocated through training");
    if (!v->sleep) {
        row(&t, VC_PHASE_VLLM, true, "weight", v->weights, "-", "LLM");
        row(&t, VC_PHASE_VLLM, true, "act", v->kv_cache, "-", "LLM");
    }
    if (v->comm_allocated > 0) /* --vllm-tensor-parallel-size: the custom all-reduce's rank_data (init_device) */
        row(&t, VC_PHASE_VLLM, true, "act", v->comm_allocated, "-", "CustomAllreduce");
    if (v->graph_memory > 0) row(&t, VC_PHASE_VLLM, true, "act", v->graph_memory, "-", "capture_model");
    *total = t.total;
    return t.st;
}

vc_status vc__grpo_trace_tail(const vc_model *m, const vc_options *o, const vc_grpo_engine *v, int64_t *total,
                              void (*line)(void *, const char *), void *ctx, vc_error *err)
{
    trace_ctx t = {line, ctx, *total, false, VC_OK};
    for (int i = 0; i < m->ninputs; i++) { /* the step's input_ids [B, P + C] int64, the plan's input (state.c) */
        int64_t ids = vc_bytes(vc_n_sample(vc_shape_numel(&m->val[i].shape)), m->val[i].dt, o->batch);
        if (ids < 0) return vc_set_error(err, VC_ERR_OVERFLOW, O("batch"), "the step's input ids pass 2^63 bytes");
        row(&t, VC_PHASE_IDLE, false, "act", ids, "-", "input_ids");
    }
    line(ctx, "-- sync: sync_weights (the next step's, before its forward)");
    if (v->sleep) row(&t, VC_PHASE_SYNC, true, "weight", v->weights, "-", "wake_up");
    const vc_dtype dt = vc_precision_row_get(o->precision)->param_dt;
    vc_status s = merge_layers(m, dt, merge_rows, &t, err); /* merge_adapter */
    t.unmerge = true;
    if (!s && !t.st) s = merge_layers(m, dt, merge_rows, &t, err); /* unmerge_adapter */
    if (s) return s;
    line(ctx, "-- vllm: generate()");
    if (v->sleep) {
        row(&t, VC_PHASE_VLLM, true, "act", v->kv_cache, "-", "wake_up");
        row(&t, VC_PHASE_VLLM, false, "act", v->kv_cache, "-", "sleep");
        row(&t, VC_PHASE_VLLM, false, "weight", v->weights, "-", "sleep");
    }
    *total = t.total;
    return t.st ? vc_set_error(err, t.st, NULL, "total memory exceeds 2^63 bytes") : VC_OK;
}
