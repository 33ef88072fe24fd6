/*
 * loss.c — the losses a training step computes after the model's forward, one
 * row each (the model JSON's "loss" key; a config.json's --loss): what each
 * allocates, saves and hands to backward. A fused row (Liger's fused linear
 * cross-entropy) computes the LM head itself: the model's forward stops
 * before the head (vc__loss_forward_end) and the row's op takes the head's
 * input and weight.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h" /* vc__op_nograd */
#include "plan.h"

/* The model's output as fp32: output.float() (_to_copy, saves nothing) when it is not. */
static vc_t output_f32(vc_build *b)
{
    vc_t y = b->val_t[b->m->output];
    if (b->t[y].dt == VC_DT_F32) return y;
    vc_op *o = vc_op_begin(b, "_to_copy");
    vc_op_in(o, y);
    vc_t f = vc_op_out(o, b->t[y].n, VC_DT_F32);
    vc_op_end(o);
    return f;
}

static void emit_mean(vc_build *b)
{
    vc_t y = output_f32(b);
    vc_op *o = vc_op_begin(b, "mean");
    vc_op_in(o, y);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_end(o);
}

/* --loss mean: the simplest loop's loss = model(ids).logits.mean() (transformers' causal LMs
 * return lm_head's output without labels, in the model's dtype: no .float()). mean keeps
 * the dtype; MeanBackward0 (derivatives.yaml: grad.expand(self.sizes()) / self.numel())
 * makes a new logits-sized gradient in it; nothing saved. */
static void emit_logits_mean(vc_build *b)
{
    vc_t y = b->val_t[b->m->output];
    vc_op *o = vc_op_begin(b, "mean");
    vc_op_in(o, y);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), (vc_dtype)b->t[y].dt);
    vc_op_end(o);
}

bool vc_head_grad_expanded(const vc_build *b, vc_t w)
{
    /* The head's backward mm receives SumBackward0's stride-0 gradient [B x L, V] (matmul's fold of the 3-D
     * logits: UnsafeViewBackward0's reshape of the expanded gradient stays a view, strides (0, 0)). MmBackward0
     * (derivatives.yaml mm: mm_mat1_backward / mm_mat2_backward, torch/csrc/autograd/FunctionsManual.cpp: their
     * column-major branch read in a stored copy, not at a pinned commit; the order as torch 1.13's profiler shows it)
     * runs grad.t().mm(self) for the column-major weight.t(), then grad.mm(mat2.t()); each mm on CUDA goes through
     * addmm_out_cuda_impl's cublasCommonArgs (aten/src/ATen/native/cuda/Blas.cpp @ 960a68465f6172d22bff1a58a61f942363ff0931),
     * whose prepare_matrix_for_cublas finds the stride-0 operand neither non-overlapping-and-dense nor
     * (transposed-)contiguous (a stride 0 is not 1) and takes tensor.clone(at::MemoryFormat::Contiguous): a
     * [B x L, V] copy in the logits' dtype, alive for that mm call only (the two calls' copies one after the
     * other). torch 1.13's CPU addmm_impl_cpu_ (aten/src/ATen/native/LinearAlgebra.cpp) clones it the same way
     * (seen with torch.profiler: aten::clone [V, B x L] and [B x L, V] inside each aten::mm), inside the mm kernel,
     * where the CPU harness reads nothing (bench/accuracy/README.md "The readings"): like the CUDA kernels'
     * scratch, the copy is left out with --workspace 0. w: the mm's weight, the head's own (not its adapters'). */
    const vc_model *m = b->m;
    if (!b->train || m->loss != VC_LOSS_LOGITS_SUM || b->o.workspace == 0 || b->cur_inst < 0) return false;
    int h = vc__loss_head(m);
    if (h < 0 || h != b->cur_inst) return false;
    const vc_inst *head = &m->inst[h];
    return head->out == m->output && head->np > 0 && b->par_t[head->params[0]] == w;
}

/* The int64 targets [rows] per sample, made once before the steps and resident like
 * the input batch (docs/contract.md §6); with `shift`, transformers' causal-LM label
 * shift after them (ForCausalLMLoss in loss/loss_utils.py, and LigerForCausalLMLoss in
 * Liger-Kernel's transformers/model/loss_utils.py, the same two lines):
 * labels = pad(labels, (0, 1), value=-100) and shift_labels = labels[..., 1:].contiguous():
 * int64 [B, L+1] and [B, L], locals until the loss returns (*padded: the first). */
static vc_t targets(vc_build *b, int64_t rows, bool shift, vc_t *padded)
{
    vc_t tgt = vc__new_tensor(b, vc_n_sample(rows), VC_DT_I64);
    *padded = -1;
    if (tgt < 0) return -1;
    b->t[tgt].persistent = true;
    b->target_t = tgt;
    if (!shift) return tgt;
    vc_op *o = vc_op_begin(b, "constant_pad_nd");
    vc_op_in_nodiff(o, tgt);
    *padded = vc_op_out(o, vc_n_sample(rows + 1), VC_DT_I64);
    vc_op_end(o);
    /* labels[..., 1:] of [B, L+1] is contiguous at batch 1 (TensorImpl's contiguity skips size-1 dims), where
     * .contiguous() returns it: a view of the padded labels, no copy (the harness's ops: constant_pad_nd, slice,
     * view); a copy otherwise (as emit_paligemma's shift) */
    const bool one = vc_batch_is_one(b);
    o = vc_op_begin(b, one ? "slice" : "clone");
    int i = vc_op_in_nodiff(o, *padded);
    vc_t lab = one ? vc_op_out_view(o, i, vc_n_sample(rows), true) : vc_op_out(o, vc_n_sample(rows), VC_DT_I64);
    vc_op_end(o);
    return lab;
}

/* F.cross_entropy(x, lab) as ATen runs it: log_softmax of x (n elements in dt, saved for its
 * backward), then nll_loss on it with the labels (saved): the loss and its total_weight, 0-d in dt. */
static vc_t cross_entropy(vc_build *b, vc_t x, vc_t lab, vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, "log_softmax");
    vc_op_in(o, x);
    vc_t lp = vc_op_out(o, n, dt);
    vc_op_save(o, lp);
    vc_op_end(o);
    o = vc_op_begin(b, "nll_loss");
    vc_op_in(o, lp);
    vc_op_in_nodiff(o, lab);
    vc_t l = vc_op_out(o, vc_n_fixed(1), dt);
    vc_op_extra(o, vc_n_fixed(1), dt); /* total_weight */
    vc_op_save(o, lab);
    vc_op_end(o);
    return l;
}

/* F.cross_entropy(logits, targets): log_softmax over the class dim (saves result),
 * then nll_loss (saves target and total_weight); backward: nll grad zeros + log_softmax
 * grad. The logits are an argument of cross_entropy: alive until nll_loss has returned.
 * causal_lm: ForCausalLMLoss, logits.float() first (an fp32 copy under 16-bit) and the
 * label shift (issue 12, src/hf/hf.c). */
/* The fp32 output (*y) and the targets of its rows (the output over its last dimension), shifted with `shift`;
 * *rows: the rows per sample; -1 when the targets could not be made. */
static vc_t ce_inputs(vc_build *b, bool shift, vc_t *y, vc_t *padded, int64_t *rows)
{
    const vc_value *ov = &b->m->val[b->m->output];
    *y = output_f32(b);
    int64_t classes = ov->shape.d[ov->shape.nd - 1];
    *rows = classes ? b->t[*y].n.ps / classes : 0;
    return targets(b, *rows, shift, padded);
}

static void emit_ce(vc_build *b, bool shift)
{
    vc_t y0 = b->val_t[b->m->output], y, padded;
    int64_t rows;
    vc_t lab = ce_inputs(b, shift, &y, &padded, &rows);
    if (lab < 0) return;
    vc_t l = cross_entropy(b, y, lab, b->t[y].n, VC_DT_F32);
    vc__extend_life(b, y);
    vc__extend_life(b, padded);
    /* causal_lm: the model's own logits (16-bit: y0 is not y) stay alive through the loss, the caller's
     * local. LlamaForCausalLM.forward (and every *ForCausalLM on self.loss_function) binds
     * logits = self.lm_head(...) and passes it to ForCausalLMLoss, whose logits = logits.float()
     * rebinds only its own argument (loss/loss_utils.py @ d0fed636753eeb35d790126c4496d06847983d60):
     * the [B, L, V] copy in the model dtype, the fp32 one and the log-probabilities are live at once
     * at nll_loss (docs/llm.md "The loss": 2 + 4 + 4 bytes a logit under bf16). Not cross_entropy:
     * the loops that run it (bench/accuracy/dist/tracking.py loss_step: module(*inputs).float())
     * hold only the fp32 copy. */
    if (shift) vc__extend_life(b, y0);
    b->loss_t = l;
}

static void emit_cross_entropy(vc_build *b) { emit_ce(b, false); }

/* T5ForConditionalGeneration.forward (models/t5/modeling_t5.py @ 6b8b757d): loss_fct =
 * CrossEntropyLoss(ignore_index=-100); loss_fct(lm_logits.view(-1, V), labels.view(-1)): the logits
 * in the model's dtype (no .float()), the labels unshifted (the decoder's inputs are the shifted
 * ones, src/hf/hf_t5.c); log_softmax keeps its result in that dtype. */
static void emit_seq2seq(vc_build *b)
{
    const vc_value *ov = &b->m->val[b->m->output];
    vc_t y = b->val_t[b->m->output];
    vc_numel n = b->t[y].n;
    int64_t classes = ov->shape.d[ov->shape.nd - 1];
    vc_t padded;
    vc_t lab = targets(b, classes ? n.ps / classes : 0, false, &padded);
    if (lab < 0) return;
    vc_t l = cross_entropy(b, y, lab, n, (vc_dtype)b->t[y].dt);
    vc__extend_life(b, y);
    b->loss_t = l;
}
static void emit_causal_lm(vc_build *b) { emit_ce(b, true); }

/* PaliGemmaForConditionalGeneration.forward's own loss (models/paligemma/modeling_paligemma.py
 * @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e): the language model runs without labels (GemmaForCausalLM returns
 * its logits in the model's dtype, held by `outputs` until the forward returns); logits = outputs.logits.float()
 * (an fp32 copy under 16-bit); shift_logits = logits[..., :-1, :], shift_labels = labels[..., 1:]; no
 * attention_mask: shift_logits.contiguous() (an fp32 [L-1, V] copy at batch > 1) and shift_labels.contiguous();
 * nn.CrossEntropyLoss()(shift_logits.view(-1, V), shift_labels.view(-1)): log_softmax (saved) and nll_loss. The
 * labels themselves are the resident [L] targets. `self.pad_token_id in labels` ((labels == pad).any(), a bool
 * [B, L] temporary) is not counted. */
static void emit_paligemma(vc_build *b)
{
    const vc_value *ov = &b->m->val[b->m->output];
    vc_t y0 = b->val_t[b->m->output], y = output_f32(b);
    const int64_t V = ov->shape.d[ov->shape.nd - 1], rows = V ? b->t[y].n.ps / V : 0;
    vc_t padded;
    vc_t lab = targets(b, rows, false, &padded);
    if (lab < 0 || rows < 2) return;
    /* logits[..., :-1, :] of [B, L, V] is contiguous at batch 1, where .contiguous() returns it (SliceBackward's
     * logits-sized gradient in backward); a copy otherwise; labels[..., 1:] the same */
    const bool one = vc_batch_is_one(b);
    vc_op *o = vc_op_begin(b, one ? "slice" : "slice+contiguous");
    int i = vc_op_in(o, y);
    vc_t c = one ? vc_op_out_view(o, i, vc_n_sample((rows - 1) * V), true) : vc_op_out(o, vc_n_sample((rows - 1) * V), VC_DT_F32);
    vc_op_end(o);
    o = vc_op_begin(b, one ? "slice" : "contiguous");
    i = vc_op_in_nodiff(o, lab);
    vc_t tc = one ? vc_op_out_view(o, i, vc_n_sample(rows - 1), true) : vc_op_out(o, vc_n_sample(rows - 1), VC_DT_I64);
    vc_op_end(o);
    vc_t l = cross_entropy(b, c, tc, vc_n_sample((rows - 1) * V), VC_DT_F32);
    vc__extend_life(b, c); /* the forward's locals logits and shift_logits, and outputs.logits, until it returns */
    vc__extend_life(b, y);
    vc__extend_life(b, y0);
    vc__extend_life(b, tc);
    b->loss_t = l;
}

/* Megatron's vocab-parallel cross-entropy on a tensor-parallel rank's fp32
 * logits y (after output_f32's .float(); MEG = NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
 * as in src/hf/hf_tp.c: megatron/core/tensor_parallel/cross_entropy.py
 * _VocabParallelCrossEntropy, as LanguageModule.compute_language_model_loss
 * calls it without cross_entropy_loss_fusion). Forward: labels.transpose(0, 1)
 * .contiguous() (int64 [rows]); calculate_logits_max: torch.max(-1), values
 * and indices; calculate_predicted_logits: y -= max, target_mask (bool) and
 * masked_target (int64) [rows], arange and predicted_logits (index + clone,
 * fp32), exp in place, sum_exp_logits; the loss, and y.div_(sum): y becomes the
 * softmax and is saved with target_mask and masked_target_1d. Backward:
 * grad_input is the saved softmax updated in place; here it is a new fp32
 * tensor, so the loss's backward holds one more logits-sized fp32 tensor for
 * its duration than Megatron (docs/parallel.md 2.6). The per-token losses
 * then reduce to the scalar the step differentiates. The 16-bit logits stay
 * referenced by the caller until the loss returns. */
static void emit_vocab_parallel(vc_build *b)
{
    const vc_value *ov = &b->m->val[b->m->output];
    vc_t logits = b->val_t[b->m->output];
    vc_t y = output_f32(b);
    int64_t classes = ov->shape.d[ov->shape.nd - 1];
    vc_numel n = b->t[y].n;
    vc_numel rows = vc_n_sample(classes ? n.ps / classes : 0);
    vc_t tgt = vc__new_tensor(b, rows, VC_DT_I64);
    if (tgt < 0) return;
    b->t[tgt].persistent = true;
    b->target_t = tgt;
    vc_op *o = vc_op_begin(b, "contiguous"); /* labels [s, b] */
    vc_op_in_nodiff(o, tgt);
    vc_t lab = vc_op_out(o, rows, VC_DT_I64);
    vc_op_end(o);
    o = vc_op_begin(b, "vocab_parallel_cross_entropy");
    vc_op_in(o, y);
    vc_op_in_nodiff(o, lab);
    vc_op_ftemp(o, rows, VC_DT_F32); /* logits_max */
    vc_op_ftemp(o, rows, VC_DT_I64); /* its indices */
    vc_op_ftemp(o, rows, VC_DT_I64); /* arange_1d */
    vc_op_ftemp(o, rows, VC_DT_F32); /* logits_2d[arange_1d, masked_target_1d] before its clone */
    vc_op_ftemp(o, rows, VC_DT_F32); /* predicted_logits */
    vc_op_ftemp(o, rows, VC_DT_F32); /* sum_exp_logits */
    vc_t l = vc_op_out(o, rows, VC_DT_F32);
    vc_op_extra(o, rows, VC_DT_BOOL); /* target_mask */
    vc_op_extra(o, rows, VC_DT_I64);  /* masked_target_1d */
    vc_op_save(o, y);
    vc_op_end(o);
    vc__extend_life(b, logits); /* GPTModel.forward's `logits`, until the loss returns */
    o = vc_op_begin(b, "mean"); /* the per-token losses to the step's scalar */
    vc_op_in(o, l);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_end(o);
}

static void fail(vc_build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(vc_build *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    b->st = VC_ERR_USAGE;
    b->why_opt = O("loss");
    vsnprintf(b->why, sizeof b->why, fmt, ap);
    va_end(ap);
}

/* The checks both fused rows make of the model's LM head (`what`: the row's --loss name,
 * `reads`: how its transformers integration reads the weight): false after a refusal. */
static bool head_ok(vc_build *b, const char *what, const char *reads)
{
    const vc_model *m = b->m;
    const vc_inst *head = &m->inst[m->loss_head];
    if (b->amp_dt != VC_DT_F32) {
        fail(b, "%s under autocast (%s) is not modelled: its matmuls run under the caller's autocast "
                "(custom_fwd); use fp32, bf16, fp16 or mixed-*", what, vc_precision_name(b->o.precision));
        return false;
    }
    for (int i = 0; i < head->np; i++) {
        const vc_param_entry *p = &m->par[head->params[i]];
        const char *why = p->flags & VC_PARAM_ADAPTER
                              ? "bypassing its LoRA adapters: leave the LM head out of " O("lora_targets")
                          : i == 1 ? "which takes no bias: the head has one"
                          : p->fmt != VC_WEIGHTS_DENSE ? "as a dense tensor: the head is quantized"
                              : NULL;
        if (why) {
            fail(b, "%s: %s %s, %s", what, head->name ? head->name : head->path, reads, why);
            return false;
        }
    }
    return true;
}

/* --loss sum: the simplest loop's loss = model(ids).logits.sum() (no labels: *ForCausalLM.forward returns
 * logits = self.lm_head(hidden_states[:, slice_indices, :]) in the model's dtype, the loss only `if labels is not
 * None`; transformers @ d0fed636, as emit_ce reads it). sum keeps the dtype and saves nothing. Its backward
 * (tools/autograd/derivatives.yaml, pytorch/pytorch @ d327a787: sum, self: grad.expand_symint(self.sym_sizes()))
 * is a stride-0 view of the 0-d root gradient, no allocation: the logits' gradient shares the root's storage
 * (VC_GRAD_PASS). What consumes it: soft-capping's ops (Gemma-2's tanh and scales) make new gradients as for any
 * loss; a plain LM head's matmul gets the view itself, and its mm copies it (vc_head_grad_expanded, layers/ops.c
 * vc__op_linear). Unlike MeanBackward0 (grad.expand(sizes) / numel: the division makes a new logits-sized
 * tensor, emit_logits_mean), nothing logits-sized exists between the loss and the head's backward.
 * Refused: autocast (aten/src/ATen/autocast_mode.cpp's fp32_set_opt_dtype ops, sum among them: sum(dtype=float32),
 * its fp32 gradient cast back to the logits' dtype by the engine's validate_outputs: not replicated) and a head with
 * adapters or quantized weights (what reaches their matmuls was not derived). */
static void emit_logits_sum(vc_build *b)
{
    const vc_model *m = b->m;
    if (b->amp_dt != VC_DT_F32) {
        fail(b, "sum under autocast (%s) is not modelled: autocast runs sum with dtype float32 (its fp32_set_opt_dtype "
                "ops), whose gradient autograd casts back to the logits' dtype; use fp32, bf16, fp16 or mixed-*",
             vc_precision_name(b->o.precision));
        return;
    }
    int h = vc__loss_head(m);
    for (int i = 0; h >= 0 && i < m->inst[h].np; i++) {
        const vc_param_entry *p = &m->par[m->inst[h].params[i]];
        if (p->flags & VC_PARAM_ADAPTER || p->fmt != VC_WEIGHTS_DENSE) {
            fail(b, "sum: the LM head %s %s: the expanded gradient's path through it is not modelled%s",
                 m->inst[h].name ? m->inst[h].name : m->inst[h].path,
                 p->flags & VC_PARAM_ADAPTER ? "has adapters" : "is quantized",
                 p->flags & VC_PARAM_ADAPTER ? "; leave it out of " O("lora_targets") : "");
            return;
        }
    }
    vc_t y = b->val_t[m->output];
    vc_op *o = vc_op_begin(b, "sum");
    vc_op_grad(o, vc_op_in(o, y), VC_GRAD_PASS);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), (vc_dtype)b->t[y].dt);
    vc_op_end(o);
}

/* Liger-Kernel's fused linear cross-entropy as its transformers integration runs it
 * (linkedin/Liger-Kernel @ ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c):
 * transformers/model/llama.py lce_forward (training with labels: skip_logits) ->
 * LigerForCausalLMLoss (model/loss_utils.py: the label shift, hidden_states.view(-1, H),
 * lm_head.weight; Gemma-2's final_logit_softcapping as the kernel's softcap) ->
 * LigerFusedLinearCrossEntropyFunction (ops/fused_linear_cross_entropy.py), whose
 * fused_linear_cross_entropy_forward computes the loss and both gradients in forward:
 *   l.68-70  inc_factor = cdiv(V, H); chunk_size = next_power_of_2(cdiv(BT, inc_factor));
 *            num_chunks = cdiv(BT, chunk_size)
 *   l.72     grad_input = zeros_like(_input)                [BT, H], the input's dtype
 *   l.77     grad_weight = zeros_like(weight)               [V, H], the weight's dtype
 *            (accum_dtype None, what LigerForCausalLMLoss passes), only when the input
 *            and the weight require grad
 *   l.86     loss_1d = zeros(BT, float32)
 *   l.92-93  target_mask = target != ignore_index (bool [BT], a local to the end);
 *            .sum().item()
 *   per chunk:
 *   l.114    logits_chunk = _input_chunk @ weight.t()       [chunk, V], the input's dtype;
 *            the previous chunk is still bound to grad_logits_chunk until l.212
 *   l.163    liger_cross_entropy_kernel writes the gradient into logits_chunk in place
 *   l.231    grad_input[rows] = grad_logits_chunk @ weight   an mm [chunk, H], copied in
 *   l.257    grad_weight += mm(grad_logits_chunk.t(), _input_chunk).float(): an mm [V, H]
 *            and, for a 16-bit input, its fp32 copy (the addmm(out_dtype=fp32) path of
 *            l.235-255 needs an fp32 grad_weight, i.e. accum_dtype=float32: not taken)
 *   l.278    loss = torch.sum(loss_1d); the last chunk, loss_1d and target_mask go when
 *            the function returns
 *   l.431    ctx.save_for_backward(grad_input, grad_weight): nothing else is kept
 *   backward (l.292-336): torch.equal(grad_output, torch.tensor(1.0)) (cuda_equal,
 *            aten/src/ATen/native/cuda/Equal.cpp: eq(...).all().item()); equal for a
 *            loss backpropagated from 1, so the saved gradients are returned as they
 *            are: grad_input is the hidden state's gradient, grad_weight the head's
 *            (AccumulateGrad steals it).
 * Only the steady pattern matters for the peak: the first chunk, one middle chunk
 * (every middle one holds the same) and the last (BT - (n-1) chunk rows). */
/* Liger's backward's torch.equal(grad_output, torch.tensor(1.0, device=...)) (cuda_equal: eq(...).all().item()):
 * the scalar made, eq's and all's results */
static void liger_equal_btemps(vc_op *o)
{
    vc_op_btemp(o, vc_n_fixed(1), VC_DT_F32);  /* torch.tensor(1.0) */
    vc_op_btemp(o, vc_n_fixed(1), VC_DT_BOOL); /* eq */
    vc_op_btemp(o, vc_n_fixed(1), VC_DT_BOOL); /* all */
}

static void emit_liger(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_inst *head = &m->inst[m->loss_head];
    if (!head_ok(b, "liger", "is read as LigerForCausalLMLoss(lm_head_weight=lm_head.weight)")) return;
    vc_batch_dependent(b); /* the chunk size follows B x T */
    b->cur_inst = m->loss_head; /* Liger runs it inside lm_head's forward under FSDP (_FSDPForwardRedirection) */
    b->cur_region = -1;
    const vc_param_entry *wp = &m->par[head->params[0]];
    int64_t V = wp->dims[0], H = wp->dims[1];
    vc_t x = b->val_t[head->in[0]], w = b->par_t[head->params[0]];
    int64_t L = H ? b->t[x].n.ps / H : 0, BT;
    vc_dtype xdt = (vc_dtype)b->t[x].dt, wdt = (vc_dtype)b->t[w].dt;
    if (__builtin_mul_overflow(L, b->batch, &BT) || BT < 1) {
        b->st = VC_ERR_OVERFLOW;
        return;
    }
    int64_t inc = (V + H - 1) / H, rows = (BT + inc - 1) / inc, chunk = 1;
    while (chunk < rows) chunk *= 2;
    int64_t nchunks = (BT + chunk - 1) / chunk, vh, cv, ch;
    if (__builtin_mul_overflow(V, H, &vh) || __builtin_mul_overflow(chunk, V, &cv) ||
        __builtin_mul_overflow(chunk, H, &ch)) {
        b->st = VC_ERR_OVERFLOW;
        return;
    }
    vc_t padded, lab = targets(b, L, true, &padded);
    if (lab < 0) return;
    bool xg = vc_requires_grad(b, x), wg = xg && vc_requires_grad(b, w);
    vc_op *o = vc_op_begin(b, "LigerFusedLinearCrossEntropyFunction");
    int ix = vc_op_in(o, x), iw = vc_op_in(o, w);
    vc_op_in_nodiff(o, lab);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_extra_grad(o, ix, b->t[x].n, xdt);
    if (wg) vc_op_extra_grad(o, iw, vc_n_fixed(vh), wdt);
    vc_op_ftemp_keep(o, vc_n_sample(L), VC_DT_F32);  /* loss_1d */
    vc_op_ftemp_keep(o, vc_n_sample(L), VC_DT_BOOL); /* target_mask */
    vc_op_ftemp(o, vc_n_fixed(1), VC_DT_I64);         /* target_mask.sum() */
    int64_t sizes[3] = {chunk, chunk, BT - (nchunks - 1) * chunk};
    int first = nchunks >= 3 ? 0 : nchunks == 2 ? 1 : 2;
    int prev = -1;
    for (int i = first; i < 3; i++) {
        int64_t c = sizes[i];
        int lg = vc_op_ftemp_keep(o, vc_n_fixed(c == chunk ? cv : c * V), xdt); /* logits_chunk */
        vc_op_ftemp_free(o, prev); /* the previous chunk (none before the first) */
        prev = lg;
        if (xg) vc_op_ftemp(o, vc_n_fixed(c == chunk ? ch : c * H), xdt); /* grad_logits @ weight */
        if (!wg) continue;
        int mm = vc_op_ftemp_keep(o, vc_n_fixed(vh), xdt);
        int f = xdt == VC_DT_F32 ? -1 : vc_op_ftemp_keep(o, vc_n_fixed(vh), VC_DT_F32); /* .float() */
        vc_op_ftemp_free(o, mm);
        vc_op_ftemp_free(o, f);
    }
    liger_equal_btemps(o);
    vc_op_gemm(o);
    vc_op_end(o);
    vc__extend_life(b, padded);
}

/* Liger-Kernel's plain cross-entropy, --liger with --liger-kernels naming cross_entropy
 * (fused_linear_cross_entropy False; linkedin/Liger-Kernel @ ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c):
 * apply_liger_kernel_to_llama (transformers/monkey_patch.py, its cross_entropy branch; every
 * apply_liger_kernel_to_* the same) sets transformers.loss.loss_utils' nn.functional.cross_entropy =
 * liger_cross_entropy (transformers/functional.py), so ForCausalLMLoss runs as the hf row (logits.float(),
 * the label shift, view) and fixed_cross_entropy's F.cross_entropy becomes LigerCrossEntropyFunction
 * (ops/cross_entropy.py):
 *   cross_entropy_forward (l.351-474): loss_1d = zeros(BT, the input's dtype: fp32) (l.378);
 *     target_mask = target != ignore_index (bool [BT], a local to the return); .sum().item();
 *     the asserts' (target * target_mask).max() and .min() (int64 [BT] each, one at a time);
 *     liger_cross_entropy_kernel writes the loss into loss_1d and the gradient into _input in place
 *     (HAS_GRADIENTS); loss = torch.sum(loss_1d)
 *   forward (l.545-569): ctx.save_for_backward(_input.detach()): the fp32 logits, the gradient in them
 *   backward (l.572-600): cross_entropy_backward (l.477-501): torch.equal(grad_output, torch.tensor(1.0))
 *     (a loss backpropagated from 1: nothing multiplied) and returns the saved tensor as the logits'
 *     gradient: nothing allocated (VC_GRAD_INTO_SAVED). No log_softmax output, no nll_loss gradient. */
static void emit_liger_ce(vc_build *b)
{
    vc_t y0 = b->val_t[b->m->output], y, padded;
    int64_t rows;
    vc_t lab = ce_inputs(b, true, &y, &padded, &rows);
    if (lab < 0) return;
    vc_op *o = vc_op_begin(b, "LigerCrossEntropyFunction");
    vc_op_grad(o, vc_op_in(o, y), VC_GRAD_INTO_SAVED);
    vc_op_in_nodiff(o, lab);
    vc_op_save(o, y);
    vc_op_ftemp_keep(o, vc_n_sample(rows), VC_DT_F32);  /* loss_1d */
    vc_op_ftemp_keep(o, vc_n_sample(rows), VC_DT_BOOL); /* target_mask */
    vc_op_ftemp(o, vc_n_fixed(1), VC_DT_I64);            /* target_mask.sum() */
    for (int i = 0; i < 2; i++) {                        /* (target * target_mask).max(), .min() */
        int t = vc_op_ftemp_keep(o, vc_n_sample(rows), VC_DT_I64);
        vc_op_ftemp(o, vc_n_fixed(1), VC_DT_I64);
        vc_op_ftemp_free(o, t);
    }
    b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32); /* torch.sum(loss_1d) */
    liger_equal_btemps(o);
    vc_op_end(o);
    vc__extend_life(b, padded);
    vc__extend_life(b, y0); /* the caller's 16-bit logits, as in emit_ce (ForCausalLMLoss) */
}

/* Apple's Cut Cross-Entropy as its transformers integration runs it (apple/ml-cross-entropy
 * @ d42911f9b1a1f98289bb601c35c8151562603d74; cce_patch's defaults: impl "cce",
 * reduction "mean", filter_eps "auto", no fp32 accumulation): cut_cross_entropy/transformers/
 * llama.py cce_forward -> utils.py apply_lce (the hidden states, lm_head.weight, the labels
 * unshifted, shift=True) -> cce.py cce_linear_cross_entropy:
 *   utils.py _build_flat_valids l.33-49: (targets[..., 1:] != -100) bool [B, L-1],
 *     .nonzero() int64 [N, 2] (N = B(L-1), every label valid), .to(int32), in-place row
 *     strides, .sum(1): valids int64 [N], kept in the CCEParams the function keeps
 *   cce.py LinearCrossEntropyFunction.forward:
 *     cce_lse_forward.py l.193-201: lse fp32 [N], locks uint32 [cdiv(N, 128)] (freed on
 *       return), logit_avg fp32 [V] (filter_eps set and a gradient needed); the kernel tiles
 *       the logits on chip: no [N, V] tensor
 *     indexed_dot.py l.123: neg_dot fp32 [N] (transformers/gemma2.py passes no softcap);
 *     nll = neg_dot.add_(lse); loss = nll.mean()
 *     l.141 save_for_backward(e, c, bias, lse, targets, valids, logit_avg): the hidden states
 *       stay until the backward, as the LM head's own linear would keep them
 *   backward: sort_logit_avg (argsort(logit_avg).to(int32), [V]); cce_backward.py
 *     l.391-394 de = zeros_like(e), dc = zeros_like(c) (the gradients, allocated in backward),
 *     l.457-464 de_locks, dc_locks int32 [cdiv(N or V, 128), cdiv(H, 64)]. */
static void emit_cce(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_inst *head = &m->inst[m->loss_head];
    if (!head_ok(b, "cce", "is read as apply_lce(hidden_states, self.lm_head.weight, ...)")) return;
    b->cur_inst = m->loss_head;
    b->cur_region = -1;
    const vc_param_entry *wp = &m->par[head->params[0]];
    int64_t V = wp->dims[0], H = wp->dims[1];
    vc_t x = b->val_t[head->in[0]], w = b->par_t[head->params[0]];
    int64_t L = H ? b->t[x].n.ps / H : 0, N;
    if (L < 1 || __builtin_mul_overflow(L - 1, b->batch, &N)) {
        b->st = VC_ERR_OVERFLOW;
        return;
    }
    vc_t padded, tgt = targets(b, L, false, &padded);
    if (tgt < 0) return;
    vc_op *o = vc_op_begin(b, "nonzero"); /* _build_flat_valids */
    vc_op_in_nodiff(o, tgt);
    vc_t valids = vc_op_out(o, vc_n_sample(L - 1), VC_DT_I64);
    int ne = vc_op_ftemp_keep(o, vc_n_sample(L - 1), VC_DT_BOOL);
    int nz = vc_op_ftemp_keep(o, vc_n_sample(2 * (L - 1)), VC_DT_I64);
    vc_op_ftemp_free(o, ne);
    vc_op_ftemp_keep(o, vc_n_sample(2 * (L - 1)), VC_DT_I32);
    vc_op_ftemp_free(o, nz);
    vc_op_end(o);
    o = vc_op_begin(b, "LinearCrossEntropyFunction");
    vc_op_in(o, x);
    vc_op_in(o, w);
    vc_op_in_nodiff(o, tgt);
    vc_op_in_nodiff(o, valids);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_extra(o, vc_n_sample(L - 1), VC_DT_F32); /* lse */
    vc_op_extra(o, vc_n_fixed(V), VC_DT_F32);      /* logit_avg */
    /* the lock tables follow N = (L - 1) x B: cdiv(N, 128) = floor(((L - 1) B + 127) / 128), a
     * floor count, so the plan holds for every batch (issue 16) */
    vc_numel locks = vc_n_floor(L - 1, 127, 128);
    vc_op_ftemp(o, locks, VC_DT_I32); /* locks */
    int nd = vc_op_ftemp_keep(o, vc_n_sample(L - 1), VC_DT_F32); /* neg_dot, nll */
    vc_op_ftemp_free(o, nd);
    vc_op_save(o, x);
    vc_op_save(o, tgt);
    vc_op_save(o, valids);
    vc_op_btemp(o, vc_n_fixed(V), VC_DT_F32); /* argsort: sort's values */
    vc_op_btemp(o, vc_n_fixed(V), VC_DT_I64); /* and indices */
    vc_op_btemp(o, vc_n_fixed(V), VC_DT_I32); /* vocab_ordering */
    int64_t nd64 = (H + 63) / 64;
    vc_op_btemp(o, vc_n_scale(locks, nd64), VC_DT_I32); /* de_locks */
    vc_op_btemp(o, vc_n_fixed((V + 127) / 128 * nd64), VC_DT_I32); /* dc_locks */
    vc_op_gemm(o);
    vc_op_end(o);
}

/* The fused chunked losses (torchtune's chunked, TRL's chunked-nll) read the LM head's weight
 * alone: a head with adapters (`adapters`), a bias (`bias`) or quantized weights is refused,
 * "<loss>: the LM head <name> <why>". Returns true when refused (b's error set). */
static bool head_refused(vc_build *b, const vc_inst *head, const char *loss, const char *adapters, const char *bias)
{
    const vc_model *m = b->m;
    const char *hn = head->name ? head->name : head->path;
    for (int i = 0; i < head->np; i++) {
        const vc_param_entry *p = &m->par[head->params[i]];
        const char *why = p->flags & VC_PARAM_ADAPTER ? adapters
                          : i == 1 ? bias
                          : p->fmt != VC_WEIGHTS_DENSE ? "is quantized" : NULL;
        if (why) {
            fail(b, "%s: the LM head %s %s", loss, hn, why);
            return true;
        }
    }
    return false;
}

/* torchtune's chunked output projection and CEWithChunkedOutputLoss as its recipes run them
 * (pytorch/torchtune @ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1; the loss file last changed
 * at 0a08c2f5): CEWithChunkedOutputLoss.set_model_output calls
 * TransformerDecoder.set_num_output_chunks(n) (modules/transformer.py), so unembed returns
 * chunked_output(h) = [self.output(chunk) for chunk in h.tensor_split(n, dim=1)]: per chunk a
 * slice of the final norm's output (slice_backward: a zero tensor of h's size and a copy),
 * the matmul's fold (t1.reshape(): a copy when the slice is not contiguous, B > 1) and an mm,
 * [B, L/n, V] logits in the model's dtype, all held in `outputs` until the loss returns
 * (recipes/lora_finetune_single_device.py _loss_step: loss = self._loss_fn(outputs, labels);
 * del outputs). modules/loss/ce_chunked_output_loss.py forward: total_elements =
 * (labels != ignore_index).sum() (a bool [B, L], an int64 scalar kept for the division);
 * labels = [t.reshape(-1) for t in labels.tensor_split(n, dim=1)] (int64 copies when B > 1,
 * kept by the list and saved by nll_loss); per chunk compute_cross_entropy:
 * F.cross_entropy(logits.float(), labels, reduction="sum"): the fp32 copy (none for fp32
 * logits), log_softmax saving its fp32 result, nll_loss; total_loss += (an add each);
 * return total_loss / total_elements. tensor_split's sections: L // n tokens, the first
 * L % n one more; empty ones (n > L) make no tensor worth a block and are left out. */
static void emit_chunked(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_inst *head = &m->inst[m->loss_head];
    const char *hn = head->name ? head->name : head->path;
    if (b->amp_dt != VC_DT_F32) {
        fail(b, "chunked under autocast (%s) is not modelled: torchtune's recipes run the model in its dtype; use fp32, "
                "bf16, fp16 or mixed-*", vc_precision_name(b->o.precision));
        return;
    }
    if (head->out != m->output) {
        fail(b, "chunked: torchtune's chunked_output returns the output projection's chunks; %s is followed by "
                "soft-capping, not modelled", hn);
        return;
    }
    if (head_refused(b, head, "chunked", "has LoRA adapters (torchtune's apply_lora_to_output), not modelled: "
                     "leave the LM head out of " O("lora_targets"), "has a bias, which torchtune's output projection has not"))
        return;
    const vc_param_entry *wp = &m->par[head->params[0]];
    int64_t V = wp->dims[0], H = wp->dims[1], n = m->loss_chunks;
    vc_t x = b->val_t[head->in[0]], w = b->par_t[head->params[0]];
    int64_t L = H ? b->t[x].n.ps / H : 0;
    if (L < 1 || n < 1) {
        b->st = VC_ERR_OVERFLOW;
        return;
    }
    int64_t nc = n < L ? n : L; /* the non-empty chunks */
    vc_dtype xdt = (vc_dtype)b->t[x].dt;
    /* a slice of dim 1 of [B, L, H] (or [B, L]) is contiguous for B == 1 or one chunk */
    bool contig = nc == 1 || vc_batch_is_one(b);
    vc_t *lg = malloc((size_t)nc * 2 * sizeof *lg);
    if (!lg) {
        b->st = VC_ERR_NOMEM;
        return;
    }
    vc_t *lab = lg + nc;
    b->cur_inst = m->loss_head; /* self.output(chunk): the head's forward, once per chunk */
    b->cur_region = -1;
    for (int64_t c = 0; c < nc && !b->st; c++) {
        int64_t tc = L / n + (c < L % n);
        vc_op *o = vc_op_begin(b, "slice"); /* tensor_split: slice_backward makes a zero h-sized grad */
        int i = vc_op_in(o, x);
        vc_t xc = vc_op_out_view(o, i, vc_n_sample(tc * H), contig);
        vc_op_end(o);
        if (!contig) { /* matmul's fold: t1.reshape({B * L/n, H}) copies */
            o = vc_op_begin(b, "clone");
            i = vc_op_in(o, xc);
            xc = vc_op_out(o, vc_n_sample(tc * H), xdt);
            vc_op_grad(o, i, VC_GRAD_PASS);
            vc_op_end(o);
        }
        o = vc_op_begin(b, "mm");
        int ix = vc_op_in(o, xc), iw = vc_op_in(o, w);
        lg[c] = vc_op_out(o, vc_n_sample(tc * V), xdt);
        vc_op_save_if(o, xc, iw);
        vc_op_save_if(o, w, ix);
        vc_op_grad_view(o, iw);
        vc_op_gemm(o);
        vc_op_end(o);
    }
    b->cur_inst = -1;
    vc_t padded, tgt = targets(b, L, false, &padded);
    if (tgt < 0 || b->st) {
        free(lg);
        return;
    }
    vc_op *o = vc_op_begin(b, "ne"); /* total_elements = (labels != ignore_index).sum() */
    vc_op_in_nodiff(o, tgt);
    vc_t ne = vc_op_out(o, vc_n_sample(L), VC_DT_BOOL);
    vc_op_end(o);
    o = vc_op_begin(b, "sum");
    vc_op_in_nodiff(o, ne);
    vc_t tot = vc_op_out(o, vc_n_fixed(1), VC_DT_I64);
    vc_op_end(o);
    for (int64_t c = 0; c < nc; c++) { /* labels.tensor_split(n, dim=1), each .reshape(-1) */
        int64_t tc = L / n + (c < L % n);
        o = vc_op_begin(b, "slice");
        int i = vc_op_in_nodiff(o, tgt);
        lab[c] = vc_op_out_view(o, i, vc_n_sample(tc), contig);
        vc_op_end(o);
        if (contig) continue;
        o = vc_op_begin(b, "clone");
        vc_op_in_nodiff(o, lab[c]);
        lab[c] = vc_op_out(o, vc_n_sample(tc), VC_DT_I64);
        vc_op_end(o);
    }
    vc_t total = -1;
    for (int64_t c = 0; c < nc && !b->st; c++) {
        int64_t tc = L / n + (c < L % n);
        vc_t f = lg[c]; /* logit_chunk.reshape(-1, V): a view; .float() */
        if (xdt != VC_DT_F32) {
            o = vc_op_begin(b, "_to_copy");
            vc_op_in(o, lg[c]);
            f = vc_op_out(o, vc_n_sample(tc * V), VC_DT_F32);
            vc_op_end(o);
        }
        vc_t l = cross_entropy(b, f, lab[c], vc_n_sample(tc * V), VC_DT_F32);
        vc__extend_life(b, f); /* cross_entropy's argument until it returns */
        o = vc_op_begin(b, "add"); /* total_loss += ...: 0.0 + the first, then a sum each */
        if (total >= 0) vc_op_grad(o, vc_op_in(o, total), VC_GRAD_PASS);
        vc_op_grad(o, vc_op_in(o, l), VC_GRAD_PASS);
        total = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_end(o);
    }
    if (!b->st) {
        o = vc_op_begin(b, "div"); /* total_loss / total_elements: DivBackward0 saves other */
        vc_op_in(o, total);
        vc_op_in_nodiff(o, tot);
        b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_save(o, tot);
        vc_op_end(o);
        for (int64_t c = 0; c < nc; c++) { /* `outputs` and the `labels` list, until the loss returns */
            vc__extend_life(b, lg[c]);
            vc__extend_life(b, lab[c]);
        }
    }
    free(lg);
}

/* ---- TRL SFTTrainer's default loss, loss_type "chunked_nll" (huggingface/trl @
 * f2cd57710ae345ea6428ae95363267fcf38a3dc8, trl/trainer/sft_trainer.py; SFTConfig.__post_init__,
 * trl/trainer/sft_config.py: an unset loss_type becomes "chunked_nll" unless use_liger_kernel).
 * SFTTrainer.__init__ (l.1298-1319) patches the model's forward with _patch_chunked_ce_lm_head
 * (l.237-378): with labels, the backbone runs without lm_head (outputs.last_hidden_state kept by
 * `outputs` until the patched forward returns) and _chunked_cross_entropy_loss (l.117-234) takes
 * the hidden states and lm_head.weight (a PEFT adapter on the head is refused, l.1309-1318):
 *   l.182-183  hidden = hidden_states[..., :-1, :].reshape(-1, H): [N, H], N = B (L - 1), a copy
 *              unless B == 1 (SliceBackward: zeros of the hidden states' size); labels[..., 1:]
 *              .reshape(-1) the same, int64
 *   l.185-186  valid = labels != -100 (bool [N]), n_valid_tensor = valid.sum()
 *   l.188-189  correct, entropy_sum = new_zeros((), float32)
 *   l.190      n_valid_tensor == 0: a bool scalar (no label is -100 here: every token counts)
 *   l.202-204  order = valid.to(int8).argsort(descending=True, stable=True) (int8 [N], sort's
 *              values int8 and indices int64 [N]); hidden = hidden[order] (index: a new [N, H];
 *              IndexBackward saves the indices, its backward zeros_like(self).index_put_),
 *              labels = labels[order] (int64 [N]); the first hidden and labels freed
 *   l.207      n_padded = (n_valid_tensor / 256).ceil().to(int64) * 256: ceil(N / 256) chunks,
 *              the last N - (n - 1) 256 rows (the slice stops at N)
 *   l.211-226  per chunk h_chunk = hidden[start:start + 256] (a view; SliceBackward: zeros [N, H]
 *              and a copy, summed in place in the index node's input buffer), lbl_chunk a view,
 *              torch.utils.checkpoint.checkpoint(_chunk, ..., use_reentrant=False): the chunk's
 *              forward saves nothing; backward recomputes it up to the last saved tensor (2.x
 *              early stop; autograd.c recompute). _chunk (l.99-114): h.float() and w.float()
 *              (fp32 copies of a 16-bit h [256, H] and of the whole head weight [V, H]; none in
 *              fp32), logits = h @ w.t() (MmBackward saves the fp32 weight for h's gradient, the
 *              fp32 h for the weight's), log_softmax (saved), nll_loss (reduction "sum"), valid,
 *              the accuracy (argmax, ==, &, sum, float: no grad) and the entropy ((-(log_p.exp()
 *              * log_p).sum(-1) * valid).sum(): exp saved, the product saving both, `* valid`
 *              saving valid, the last tensor saved); `logits` and `log_p` are locals to the
 *              return. No gradient reaches the entropy from the loss: its nodes go with
 *              entropy_sum when compute_loss returns, and the recompute keeps none of their saved
 *              tensors (checkpoint.py _recomputation_hook: the holder is gone) though it runs
 *              through them to `* valid`. Backward: the fp32 weight gradient [V, H] (mm, then
 *              .t()) and its ToCopyBackward copy in the weight's dtype, each chunk's summed in
 *              lm_head.weight's AccumulateGrad input buffer.
 *   l.224-233  loss = loss + chunk_loss (and the metrics), then loss / num_items_in_batch (the
 *              Trainer's count of the batch's labels, a scalar like n_valid_tensor)
 * DataCollatorForLanguageModeling (padding_free False) makes input_ids, attention_mask and labels,
 * int64 [B, L] each: the mask and the labels resident beside the input batch. Only the steady
 * pattern matters for the peak, as in emit_liger: the first chunk, one middle one (each holds the
 * same) and the last; the chunk count follows B x (L - 1), so the plan is this batch's.
 * Not modelled: CUDA sort's and index_put_'s int64 [N] scratch (argsort, IndexBackward's
 * index_put_ with accumulate sorts its indices), under 8 N bytes each. */
static vc_t nll_small(vc_build *b, const char *name, vc_t x, vc_t y, vc_numel n, vc_dtype dt, bool diff)
{
    vc_op *o = vc_op_begin(b, name);
    if (diff) vc_op_grad(o, vc_op_in(o, x), VC_GRAD_PASS);
    else vc_op_in_nodiff(o, x);
    if (y >= 0) vc_op_in_nodiff(o, y);
    vc_t r = vc_op_out(o, n, dt);
    vc_op_end(o);
    return r;
}

static void emit_chunked_nll(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_inst *head = &m->inst[m->loss_head];
    const char *why = b->amp_dt != VC_DT_F32 ? "under autocast is not modelled: use fp32, bf16, fp16 or mixed-* (the "
                                               "model loaded in its dtype, SFTConfig's model_init_kwargs dtype)"
                      : b->o.parallel != VC_PARALLEL_NONE || m->stage.on ? "is modelled on one GPU (under FSDP2 the head "
                                               "weight's full_tensor() is not)"
                      : b->o.compile ? "with " O("compile") " is not modelled (checkpoints inside a compiled graph)"
                      : b->o.act_offload ? "with " O("act_offload") " is not modelled"
                      : head->out != m->output ? "with the head's soft-capping or logit scale is not modelled"
                                               : NULL;
    if (why) {
        fail(b, "chunked-nll %s", why);
        return;
    }
    if (b->o.hold_output) { /* the patched forward returns logits=None */
        fail(b, "chunked-nll returns no logits (logits=None): " O("hold_output") " does not apply");
        b->why_opt = O("hold_output");
        return;
    }
    if (head_refused(b, head, "chunked-nll", "has LoRA adapters, which SFTTrainer refuses with chunked_nll: leave "
                     "the LM head out of " O("lora_targets"), "has a bias (lm_head_bias), not modelled"))
        return;
    const vc_param_entry *wp = &m->par[head->params[0]];
    int64_t V = wp->dims[0], H = wp->dims[1];
    vc_t x = b->val_t[head->in[0]], w = b->par_t[head->params[0]];
    int64_t L = H ? b->t[x].n.ps / H : 0, N;
    if (L < 2) {
        fail(b, "chunked-nll needs at least 2 tokens per sequence (the shifted labels)");
        return;
    }
    if (__builtin_mul_overflow(L - 1, b->batch, &N)) {
        b->st = VC_ERR_OVERFLOW;
        return;
    }
    vc_batch_dependent(b); /* the chunks follow B x (L - 1) */
    const int64_t C = 256; /* _CHUNKED_LM_HEAD_CHUNK_SIZE */
    /* --packing (padding_free): one row of P sequences, and the collator's
     * output["labels"][output["position_ids"] == 0] = -100 (sft_trainer.py l.502): after the shift the
     * P - 1 later sequences' first labels are ignored, so n_valid is P (L / P - 1) of the row's L - 1
     * tokens; n_padded covers whole chunks of the valid ones, the last chunk's slice stops at L - 1 */
    int64_t P = b->o.packing > 1 ? b->o.packing : 1, nv = N;
    if (P > 1) {
        if (L % P || L / P < 2) {
            fail(b, "chunked-nll with " O("packing") " needs at least 2 tokens per packed sequence");
            return;
        }
        nv = P * (L / P - 1);
    }
    int64_t nc = (nv + C - 1) / C, vh, cv, chh;
    if (__builtin_mul_overflow(V, H, &vh) || __builtin_mul_overflow(C, V, &cv) || __builtin_mul_overflow(C, H, &chh)) {
        b->st = VC_ERR_OVERFLOW;
        return;
    }
    vc_dtype xdt = (vc_dtype)b->t[x].dt, wdt = (vc_dtype)b->t[w].dt;
    bool one = vc_batch_is_one(b);
    b->cur_inst = -1;
    b->cur_region = -1;
    /* the collator's labels and attention_mask, int64 [B, L] each, resident */
    vc_t res = vc__new_tensor(b, vc_n_sample(2 * L), VC_DT_I64);
    if (res < 0) return;
    b->t[res].persistent = true;
    b->target_t = res;
    const vc_numel tok = vc_n_sample(L - 1), rows = vc_n_sample((L - 1) * H);
    vc_op *o = vc_op_begin(b, "slice"); /* hidden_states[..., :-1, :]: SliceBackward, zeros of their size */
    int i = vc_op_in(o, x);
    vc_t hs = vc_op_out_view(o, i, rows, one);
    vc_op_end(o);
    if (!one) { /* .reshape(-1, H) of a non-contiguous slice: a copy */
        o = vc_op_begin(b, "clone");
        vc_op_grad(o, vc_op_in(o, hs), VC_GRAD_PASS);
        hs = vc_op_out(o, rows, xdt);
        vc_op_end(o);
    }
    o = vc_op_begin(b, "slice"); /* labels[..., 1:] */
    i = vc_op_in_nodiff(o, res);
    vc_t lab = vc_op_out_view(o, i, tok, one);
    vc_op_end(o);
    if (!one) lab = nll_small(b, "clone", lab, -1, tok, VC_DT_I64, false);
    vc_t valid = nll_small(b, "ne", lab, -1, tok, VC_DT_BOOL, false);
    vc_t nvalid = nll_small(b, "sum", valid, -1, vc_n_fixed(1), VC_DT_I64, false);
    vc_t correct = nll_small(b, "new_zeros", nvalid, -1, vc_n_fixed(1), VC_DT_F32, false);
    vc_t entropy = nll_small(b, "new_zeros", nvalid, -1, vc_n_fixed(1), VC_DT_F32, false);
    o = vc_op_begin(b, "eq"); /* n_valid_tensor == 0 */
    vc_op_in_nodiff(o, nvalid);
    vc_op_ftemp(o, vc_n_fixed(1), VC_DT_BOOL);
    vc_op_end(o);
    o = vc_op_begin(b, "argsort"); /* valid.to(int8).argsort(descending=True, stable=True) */
    vc_op_in_nodiff(o, valid);
    int i8 = vc_op_ftemp_keep(o, tok, VC_DT_I8);
    int sv = vc_op_ftemp_keep(o, tok, VC_DT_I8); /* sort's values */
    vc_t order = vc_op_out(o, tok, VC_DT_I64);
    vc_op_ftemp_free(o, sv);
    vc_op_ftemp_free(o, i8);
    vc_op_end(o);
    o = vc_op_begin(b, "index"); /* hidden[order] */
    vc_op_in(o, hs);
    vc_op_in_nodiff(o, order);
    vc_t g = vc_op_out(o, rows, xdt);
    vc_op_save(o, order);
    vc_op_end(o);
    vc_t glab = nll_small(b, "index", lab, order, tok, VC_DT_I64, false); /* labels[order] */
    o = vc_op_begin(b, "div+ceil+mul"); /* n_padded */
    vc_op_in_nodiff(o, nvalid);
    vc_op_ftemp(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_ftemp(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_ftemp(o, vc_n_fixed(1), VC_DT_I64);
    vc_t npad = vc_op_out(o, vc_n_fixed(1), VC_DT_I64);
    vc_op_end(o);
    vc_t loss = nll_small(b, "new_zeros", nvalid, -1, vc_n_fixed(1), VC_DT_F32, false);
    int64_t last = N - (nc - 1) * C; /* rows past n_valid (packing) are sliced too, up to N */
    int64_t sizes[3] = {C, C, last < C ? last : C};
    int first = nc >= 3 ? 0 : nc == 2 ? 1 : 2;
    for (int k = first; k < 3 && !b->st; k++) {
        int64_t c = sizes[k];
        vc_numel cH = vc_n_fixed(c == C ? chh : c * H), cV = vc_n_fixed(c == C ? cv : c * V), c1 = vc_n_fixed(c);
        o = vc_op_begin(b, "slice"); /* h_chunk: SliceBackward, zeros [N, H] */
        i = vc_op_in(o, g);
        vc_t hc = vc_op_out_view(o, i, cH, true);
        vc_op_end(o);
        o = vc_op_begin(b, "slice");
        i = vc_op_in_nodiff(o, glab);
        vc_t lc = vc_op_out_view(o, i, c1, true);
        vc_op_end(o);
        b->cur_region = m->nregions + b->nloss_reg++; /* checkpoint(_chunk, ...) */
        vc_t h32 = hc, w32 = w;
        if (xdt != VC_DT_F32) { /* h.float(): ToCopyBackward, a gradient in h's dtype */
            o = vc_op_begin(b, "_to_copy");
            vc_op_in(o, hc);
            h32 = vc_op_out(o, cH, VC_DT_F32);
            vc_op_end(o);
        }
        if (wdt != VC_DT_F32) {
            o = vc_op_begin(b, "_to_copy"); /* w.float() */
            vc_op_in(o, w);
            w32 = vc_op_out(o, vc_n_fixed(vh), VC_DT_F32);
            vc_op_end(o);
        }
        o = vc_op_begin(b, "mm");
        int ih = vc_op_in(o, h32), iw = vc_op_in(o, w32);
        vc_t logits = vc_op_out(o, cV, VC_DT_F32);
        vc_op_save_if(o, h32, iw);
        vc_op_save_if(o, w32, ih);
        vc_op_grad_view(o, iw); /* (h.t() @ grad).t() */
        vc_op_gemm(o);
        vc_op_end(o);
        o = vc_op_begin(b, "log_softmax");
        vc_op_in(o, logits);
        vc_t lp = vc_op_out(o, cV, VC_DT_F32);
        vc_op_save(o, lp);
        vc_op_end(o);
        o = vc_op_begin(b, "nll_loss"); /* reduction="sum": the loss and total_weight */
        vc_op_in(o, lp);
        vc_op_in_nodiff(o, lc);
        vc_t cl = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_extra(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_save(o, lc);
        vc_op_end(o);
        vc_t vc = nll_small(b, "ne", lc, -1, c1, VC_DT_BOOL, false);
        o = vc_op_begin(b, "argmax+eq+and+sum+float"); /* chunk_correct: no grad */
        vc_op_in_nodiff(o, logits);
        vc_op_in_nodiff(o, lc);
        vc_op_in_nodiff(o, vc);
        int am = vc_op_ftemp_keep(o, c1, VC_DT_I64);
        int eq = vc_op_ftemp_keep(o, c1, VC_DT_BOOL);
        vc_op_ftemp_free(o, am);
        int an = vc_op_ftemp_keep(o, c1, VC_DT_BOOL);
        vc_op_ftemp_free(o, eq);
        int su = vc_op_ftemp_keep(o, vc_n_fixed(1), VC_DT_I64);
        vc_op_ftemp_free(o, an);
        vc_t cc = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_ftemp_free(o, su);
        vc_op_end(o);
        o = vc_op_begin(b, "exp"); /* log_p.exp(): ExpBackward saves its result */
        vc_op_in(o, lp);
        vc_t ex = vc_op_out(o, cV, VC_DT_F32);
        vc_op_save(o, ex);
        vc_op_end(o);
        o = vc_op_begin(b, "mul"); /* * log_p: both saved */
        vc_op_in(o, ex);
        vc_op_in(o, lp);
        vc_t pr = vc_op_out(o, cV, VC_DT_F32);
        vc_op_save(o, ex);
        vc_op_save(o, lp);
        vc_op_end(o);
        vc_t s = nll_small(b, "sum", pr, -1, c1, VC_DT_F32, true);
        s = nll_small(b, "neg", s, -1, c1, VC_DT_F32, true);
        o = vc_op_begin(b, "mul"); /* * valid: saves valid (packed before the kernel: the recompute stops here) */
        vc_op_in(o, s);
        vc_op_in_nodiff(o, vc);
        vc_t mv = vc_op_out(o, c1, VC_DT_F32);
        vc_op_save(o, vc);
        vc_op_end(o);
        vc_t ce = nll_small(b, "sum", mv, -1, vc_n_fixed(1), VC_DT_F32, true);
        vc__extend_life(b, logits); /* _chunk's locals until it returns */
        vc__extend_life(b, lp);
        b->cur_region = -1;
        o = vc_op_begin(b, "add"); /* loss = loss + chunk_loss */
        vc_op_grad(o, vc_op_in(o, loss), VC_GRAD_PASS);
        vc_op_grad(o, vc_op_in(o, cl), VC_GRAD_PASS);
        loss = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_end(o);
        correct = nll_small(b, "add", correct, cc, vc_n_fixed(1), VC_DT_F32, false);
        o = vc_op_begin(b, "add"); /* entropy_sum + chunk_entropy: a graph nothing differentiates */
        vc_op_grad(o, vc_op_in(o, entropy), VC_GRAD_PASS);
        vc_op_grad(o, vc_op_in(o, ce), VC_GRAD_PASS);
        entropy = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_end(o);
    }
    if (b->st) return;
    o = vc_op_begin(b, "div"); /* loss / num_items_in_batch: DivBackward0 saves other */
    vc_op_grad(o, vc_op_in(o, loss), VC_GRAD_NEW);
    vc_op_in_nodiff(o, nvalid);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_save(o, nvalid);
    vc_op_end(o);
    /* _chunked_cross_entropy_loss's and the patched forward's locals until they return: the
     * hidden states (`outputs`), valid, order, the gathered hidden and labels, n_padded; the
     * returned metrics until compute_loss has logged them */
    const vc_t locals[] = {x, valid, nvalid, order, g, glab, npad, correct, entropy};
    for (size_t j = 0; j < sizeof locals / sizeof *locals; j++) vc__extend_life(b, locals[j]);
}

/* ---- TRL's DPO step (huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8; TRL below).
 * trl/trainer/dpo_trainer.py: DataCollatorForPreference.torch_call builds one batch of
 * prompt+chosen then prompt+rejected sequences (input_ids = prompt_chosen_ids +
 * prompt_rejected_ids): input_ids, attention_mask and completion_mask, int64 [2B, L] each
 * (B = per_device_train_batch_size pairs), made before the step like the input batch.
 * vramcalc's --batch counts those 2B sequences (request.c refuses an odd --batch; a plan built at
 * another batch, as the allocator model's grid does, is the same step over that many rows).
 * DPOTrainer._compute_loss: */

/* shift_logits = outputs.logits[..., :-1, :]: a view; SliceBackward (slice_backward: zeros of
 * the input's sizes, the gradient copied in) makes a logits-sized gradient. */
static vc_t dpo_shift(vc_build *b, vc_t y, int64_t L, int64_t V)
{
    vc_op *o = vc_op_begin(b, "slice");
    int i = vc_op_in(o, y);
    vc_t s = vc_op_out_view(o, i, vc_n_sample((L - 1) * V), false);
    vc_op_end(o);
    return s;
}

/* trl/trainer/utils.py selective_log_softmax(logits, index) on shift_logits [2B, L-1, V] and
 * shift_labels = input_ids[..., 1:] (a view of the resident input_ids: nothing allocated).
 * Both paths loop over the rows (`for ... in logits`: Tensor.__iter__ is unbind(0), whose
 * UnbindBackward stacks the rows' gradients into one new shift-sized tensor). The loop is
 * one op here, whatever the batch (a plan holds for every batch): each row's transients are
 * its exact [L-1, V] sizes (fixed), the rows' saved tensors and gradients the whole batch's.
 *   fp32/fp64 logits: selected_logits = torch.gather(logits, -1, index) [2B, L-1, 1];
 *     logsumexp per row (ReduceOps.cpp logsumexp_out_impl: amax, then
 *     at::sum_out(result, (self - maxes).exp_()): one [L-1, V] fp32 transient per row), the
 *     [L-1] results listed, then torch.stack; per_token_logps = selected - lse.unsqueeze(-1).
 *     LogsumexpBackward saves self (a row of the logits: their storage stays until backward)
 *     and result; its backward logsumexp_backward = grad * (self - result).exp(): two [L-1, V]
 *     temporaries of the row beside its [L-1, V] gradient. GatherBackward saves the index.
 *   16-bit logits: per row row_logps = F.log_softmax(row_logits) [L-1, V] (LogSoftmaxBackward
 *     saves it) and row_logps.gather(-1, row_labels) [L-1, 1]; torch.stack. Backward, a row at
 *     a time (the engine runs the highest sequence number first: a row's gather, then its
 *     log_softmax): gather_backward's zeros + scatter [L-1, V], then the row's
 *     _log_softmax_backward_data [L-1, V] into UnbindBackward's buffer.
 *   Without grad (the reference): nothing saved; the 16-bit loop's row_logps keeps the previous
 *     row until the next is assigned (two rows), the last until the function returns.
 * Returns per_token_logps [2B, L-1] in the logits' dtype. */
static vc_t dpo_logps(vc_build *b, vc_t s, int64_t L, int64_t V)
{
    vc_dtype dt = (vc_dtype)b->t[s].dt;
    vc_numel row = vc_n_fixed((L - 1) * V), tok = vc_n_sample(L - 1);
    vc_op *o = vc_op_begin(b, "unbind");
    int i = vc_op_in(o, s);
    vc_t u = vc_op_out_view(o, i, b->t[s].n, false);
    vc_op_end(o);
    vc_t lp;
    if (dt == VC_DT_F32) {
        o = vc_op_begin(b, "gather");
        vc_op_in(o, s);
        vc_t sel = vc_op_out(o, tok, VC_DT_F32);
        vc_op_end(o);
        o = vc_op_begin(b, "logsumexp"); /* the rows, one at a time */
        vc_op_in(o, u);
        vc_op_ftemp(o, row, VC_DT_F32); /* (self - maxes).exp_() */
        vc_t lse = vc_op_out(o, tok, VC_DT_F32);
        vc_op_save(o, u);
        vc_op_save(o, lse);
        vc_op_btemp(o, row, VC_DT_F32); /* self - result */
        vc_op_btemp(o, row, VC_DT_F32); /* its exp() */
        vc_op_end(o);
        o = vc_op_begin(b, "stack");
        vc_op_grad(o, vc_op_in(o, lse), VC_GRAD_PASS);
        vc_t st = vc_op_out(o, tok, VC_DT_F32);
        vc_op_end(o);
        vc__extend_life(b, lse); /* the list, until stack returns */
        o = vc_op_begin(b, "sub");
        vc_op_grad(o, vc_op_in(o, sel), VC_GRAD_PASS);
        vc_op_in(o, st);
        lp = vc_op_out(o, tok, VC_DT_F32);
        vc_op_end(o);
    } else {
        o = vc_op_begin(b, "log_softmax+gather"); /* the rows, one at a time */
        vc_op_in(o, u);
        if (b->train && vc_requires_grad(b, u)) {
            /* every row's row_logps, saved. Backward, row by row: the row's gather_backward zeros
             * and its log_softmax gradient, its saved row_logps freed as its node returns; at the
             * row r of R, R + 2 rows are alive (saved R - r + 1, gradients r + 1): never more than
             * the saved set and the gradients together (2R rows, R >= 2: the batch of pairs), which
             * is what this op holds, then UnbindBackward's stack beside the gradients (2R rows) */
            vc_op_extra(o, b->t[s].n, dt);
            (void)row;
        } else {
            int a = vc_op_ftemp_keep(o, row, dt); /* row_logps of the previous row */
            vc_op_ftemp_keep(o, row, dt);         /* and of this one */
            vc_op_ftemp_free(o, a);
        }
        vc_t sel = vc_op_out(o, tok, dt);
        vc_op_end(o);
        o = vc_op_begin(b, "stack");
        vc_op_grad(o, vc_op_in(o, sel), VC_GRAD_PASS);
        lp = vc_op_out(o, tok, dt);
        vc_op_end(o);
        vc__extend_life(b, sel);
    }
    return lp;
}

/* per_token_logps[shift_completion_mask == 0] = 0.0 (a bool [2B, L-1]; index_put_ in place: the
 * masked positions' indices are as many as the prompts' tokens, data the plan does not see:
 * none counted), logps = per_token_logps.sum(dim=1) [2B] (SumBackward: the gradient expanded, a view). */
static vc_t dpo_sum(vc_build *b, vc_t lp, vc_t mask)
{
    vc_op *o = vc_op_begin(b, "eq");
    vc_op_in_nodiff(o, mask);
    vc_op_ftemp(o, vc_n_sample(b->t[lp].n.ps), VC_DT_BOOL);
    vc_op_end(o);
    o = vc_op_begin(b, "sum");
    vc_op_grad(o, vc_op_in(o, lp), VC_GRAD_PASS); /* sum_backward: grad.unsqueeze(1).expand(sizes), a view */
    vc_t r = vc_op_out(o, vc_n_sample(1), (vc_dtype)b->t[lp].dt);
    vc_op_end(o);
    return r;
}

static vc_t dpo_binary(vc_build *b, const char *name, vc_t x, vc_t y, vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_grad(o, vc_op_in(o, x), VC_GRAD_PASS);
    if (y >= 0) vc_op_in(o, y);
    vc_t r = vc_op_out(o, n, dt);
    vc_op_end(o);
    return r;
}

/* trl's entropy_from_logits (utils.py) on the shift logits s [B, L-1, V] (detached): flat_logits =
 * logits.reshape(-1, V), a copy of the non-contiguous slice (with `copy`; none where the slice is
 * contiguous, a batch of one), then per chunk of 128 rows log_softmax, exp, their product (at most
 * three chunk-sized tensors); a batch of fewer than 128 rows is one chunk of every row. DPO's, KTO's
 * and SFT's (emit_trl_nll) metrics. */
static void trl_entropy(vc_build *b, vc_t s, int64_t L, int64_t V, vc_dtype dt, bool copy)
{
    int64_t rows = 128;
    if ((L - 1) * b->batch < 128) { /* one chunk of every row */
        vc_batch_range(b, 1, 127 / (L - 1));
        rows = -1;
    } else {
        vc_batch_range(b, (128 + L - 2) / (L - 1), VC_BATCH_ANY);
    }
    vc_numel chunk = rows > 0 ? vc_n_fixed(rows * V) : vc_n_sample((L - 1) * V);
    vc_op *o = vc_op_begin(b, "entropy_from_logits");
    vc_op_in_nodiff(o, s);
    int flat = copy ? vc_op_ftemp_keep(o, vc_n_sample((L - 1) * V), dt) : -1;
    for (int k = 0; k < 3; k++) vc_op_ftemp_keep(o, chunk, dt);
    if (flat >= 0) vc_op_ftemp_free(o, flat);
    vc_op_end(o);
}

static void dpo_entropy(vc_build *b, vc_t s, int64_t L, int64_t V, vc_dtype dt) { trl_entropy(b, s, L, V, dt, true); }

/* ---- TRL SFTTrainer's loss_type "nll" (huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8,
 * trl/trainer/sft_trainer.py SFTTrainer.compute_loss l.1700-1830; SFTConfig's default loss_type up to
 * TRL 1.6, sft_config.py @ v1.6.0 l.101 "defaults to nll", "chunked_nll" from 1.7 @ 06b42c7e l.107):
 *   (loss, outputs) = super().compute_loss(model, inputs, return_outputs=True): the model's own loss,
 *     ForCausalLMLoss (emit_ce), and `outputs`, a local of compute_loss until it returns, so the
 *     model's logits [B, L, V] in its dtype outlive the loss's fp32 copy (freed when ForCausalLMLoss
 *     returns) through the metrics;
 *   without use_liger_kernel, under torch.no_grad() (l.1763-1792): shift_logits = outputs.logits[...,
 *     :-1, :] and shift_labels = labels[..., 1:] (views); per_token_entropy = entropy_from_logits(
 *     shift_logits) (trl_entropy: the reshape copies the slice unless the batch is one, then 128-row
 *     chunks; the entropies cat'ed, [B, L-1] in the logits' dtype); predictions = shift_logits.argmax(-1)
 *     (int64 [B, L-1]); mask = shift_labels != -100 (bool); (per_token_entropy * mask).sum(),
 *     mask.sum(), (predictions == shift_labels) & mask and its sum: 0-d results, their [B, L-1]
 *     operands freed as each returns; the gathers (one process: the tensors themselves) and .item().
 * Then the Trainer's backward. The collator's attention_mask (int64 [B, L], all ones: sdpa drops it)
 * is resident beside the labels as for chunked-nll. TRL 1.0 to 1.5 computed the same metrics in
 * another order (entropy_from_logits over the whole logits, then outputs.logits[..., :-1, :]
 * .contiguous() and its argmax; sft_trainer.py @ v1.0.0 f3e9ac10): not modelled, docs/llm.md. */
static void emit_trl_nll(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_value *ov = &m->val[m->output];
    const int64_t V = ov->shape.d[ov->shape.nd - 1];
    vc_t y0 = b->val_t[m->output];
    if (b->o.packing || b->o.compile || b->o.act_offload || b->o.hold_output) {
        fail(b, "nll %s", b->o.packing ? "with " O("packing") " (the padding-free row's metrics) is not modelled"
                          : b->o.compile ? "with " O("compile") " is not modelled"
                          : b->o.act_offload ? "with " O("act_offload") " is not modelled"
                          : "is SFTTrainer's step, whose compute_loss drops the outputs when it returns: not with "
                            O("hold_output"));
        return;
    }
    const int64_t L = V ? b->t[y0].n.ps / V : 0;
    if (L < 2) {
        fail(b, "nll needs at least 2 tokens per sample (the shifted labels)");
        return;
    }
    vc_t mask_in = vc__new_tensor(b, vc_n_sample(L), VC_DT_I64); /* the collator's attention_mask, resident */
    if (mask_in < 0) return;
    b->t[mask_in].persistent = true;
    emit_ce(b, true);
    if (b->target_t < 0) return;
    const vc_dtype dt = (vc_dtype)b->t[y0].dt;
    const vc_numel n = vc_n_sample(L - 1);
    trl_entropy(b, y0, L, V, dt, !vc_batch_is_one(b));
    vc_t ent = nll_small(b, "cat", y0, -1, n, dt, false);                       /* per_token_entropy */
    vc_t pred = nll_small(b, "argmax", y0, -1, n, VC_DT_I64, false);          /* predictions */
    vc_t mask = nll_small(b, "ne", b->target_t, -1, n, VC_DT_BOOL, false);     /* shift_labels != -100 */
    vc_t em = nll_small(b, "mul", ent, mask, n, dt, false);                    /* per_token_entropy * mask */
    nll_small(b, "sum", em, -1, vc_n_fixed(1), dt, false);
    nll_small(b, "sum", mask, -1, vc_n_fixed(1), VC_DT_I64, false);            /* total_tokens */
    vc_t eq = nll_small(b, "eq", pred, b->target_t, n, VC_DT_BOOL, false);      /* predictions == shift_labels */
    vc_t cp = nll_small(b, "bitwise_and", eq, mask, n, VC_DT_BOOL, false);     /* & mask */
    nll_small(b, "sum", cp, -1, vc_n_fixed(1), VC_DT_I64, false);              /* correct_tokens */
    vc__extend_life(b, y0); /* outputs, to compute_loss's return */
}

static void emit_dpo(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_value *ov = &m->val[m->output];
    vc_t y = b->val_t[m->output];
    vc_dtype dt = (vc_dtype)b->t[y].dt;
    bool pre = m->loss == VC_LOSS_DPO_PRECOMPUTED;
    const char *what = pre ? "dpo-precomputed" : "dpo";
    int64_t V = ov->shape.d[ov->shape.nd - 1], L = V ? b->t[y].n.ps / V : 0;
    bool peft = m->lora.r > 0 || m->lora.method == VC_PEFT_IA3 || m->lora.method == VC_PEFT_LN_TUNING;
    if (b->amp_dt != VC_DT_F32) {
        fail(b, "%s under autocast (%s) is not modelled: use fp32, bf16, fp16 or mixed-* (the model loaded in its "
                "dtype, as TRL's model_init_kwargs dtype does)", what, vc_precision_name(b->o.precision));
        return;
    }
    if (b->o.parallel != VC_PARALLEL_NONE || m->stage.on) {
        fail(b, "%s is modelled on one GPU (the reference model under a parallel layout is not)", what);
        return;
    }
    if (b->o.hold_output) {
        fail(b, "%s: DPOTrainer.compute_loss returns the loss only; " O("hold_output") " does not apply", what);
        b->why_opt = O("hold_output");
        return;
    }
    if (peft && (m->lora.method == VC_PEFT_IA3 || m->lora.method == VC_PEFT_LN_TUNING || m->lora.modules_to_save[0])) {
        fail(b, "%s: the reference pass with %s disabled is not modelled (LoRA, rsLoRA, PiSSA and DoRA are)", what,
             m->lora.modules_to_save[0] ? O("modules_to_save") : vc_peft_row_get(m->lora.method)->name);
        return;
    }
    if (L < 2) {
        fail(b, "%s needs at least 2 tokens per sequence (the shifted labels)", what);
        return;
    }
    for (size_t p = 0; !peft && !pre && p < m->npar; p++)
        if (m->par[p].fmt != VC_WEIGHTS_DENSE) {
            fail(b, "%s: a full fine-tune's reference copy of quantized weights is not modelled", what);
            return;
        }
    /* the collator's attention_mask and completion_mask beside input_ids: int64 [2B, L] each,
     * one resident block here (the replica's are 512-byte multiples: the same bytes) */
    vc_t masks = vc__new_tensor(b, vc_n_sample(2 * L), VC_DT_I64);
    if (masks < 0) return;
    b->t[masks].persistent = true;
    b->target_t = masks;
    /* outputs = model(**model_kwargs) (use_cache=False; the collator's attention_mask is all ones
     * without padding, which the sdpa path drops): the policy's logits in the model's dtype (no
     * labels, so no .float()), then its log-probabilities */
    vc_t s = dpo_shift(b, y, L, V);
    vc_t logps = dpo_sum(b, dpo_logps(b, s, L, V), masks);
    vc_numel half = vc_n_floor(1, 0, 2); /* [B]: chosen_logps, rejected_logps = logps.chunk(2) */
    vc_t ry = -1, rs = -1, ref = -1;
    if (!pre && !b->st) { /* the reference forward (plan.c), then its log-probabilities without grad */
        ry = vc__emit_reference(b, !peft);
        if (ry < 0) return;
        b->cur_inst = -1;
        b->cur_region = -1;
        bool train = b->train;
        b->train = false;
        rs = dpo_shift(b, ry, L, V);
        ref = dpo_sum(b, dpo_logps(b, rs, L, V), masks);
        b->train = train;
    }
    /* chosen_logratios = chosen_logps - ref_chosen_logps (ref_*: the batch's precomputed fp32
     * values with precompute_ref_log_probs), the same for rejected; f_divergence_type
     * reverse_kl: the scores are the ratios; loss_type sigmoid:
     * -F.logsigmoid(beta * (chosen - rejected)); loss += per_sequence_loss.mean() * 1.0 */
    vc_dtype ldt = dt == VC_DT_F32 || pre ? VC_DT_F32 : dt;
    vc_t c = dpo_binary(b, "sub", logps, ref, half, ldt);
    vc_t r = dpo_binary(b, "sub", logps, ref, half, ldt);
    vc_t d = dpo_binary(b, "sub", c, r, half, ldt);
    d = dpo_binary(b, "mul", d, -1, half, ldt);
    vc_op *o = vc_op_begin(b, "log_sigmoid_forward");
    int i = vc_op_in(o, d);
    vc_t ls = vc_op_out(o, half, ldt);
    vc_op_save(o, d);
    vc_op_grad(o, i, VC_GRAD_NEW);
    vc_op_end(o);
    ls = dpo_binary(b, "neg", ls, -1, half, ldt);
    o = vc_op_begin(b, "mean");
    vc_op_in(o, ls);
    vc_t l = vc_op_out(o, vc_n_fixed(1), ldt);
    vc_op_end(o);
    l = dpo_binary(b, "mul", l, -1, vc_n_fixed(1), ldt); /* * loss_weight */
    b->loss_t = dpo_binary(b, "add", l, -1, vc_n_fixed(1), ldt); /* 0.0 + */
    /* the metrics, on shift_logits.detach() while outputs and ref_outputs are alive:
     * utils.py entropy_from_logits: flat_logits = logits.reshape(-1, V), a copy of the
     * non-contiguous slice [2B (L-1), V]; per chunk of 128 rows log_softmax, exp, their
     * product (logps of the previous chunk still bound while the next is made: at most
     * three chunk-sized tensors); then chosen_logits[chosen_mask.bool()] (a [B (L-1), V]
     * copy: every token a completion token) .mean(-1), the same for rejected, and
     * chosen_logits.argmax(-1), int64 [B, L-1] until the function returns. */
    dpo_entropy(b, s, L, V, dt);
    for (int k = 0; k < 2; k++) { /* chosen, rejected */
        o = vc_op_begin(b, "index");
        vc_op_in_nodiff(o, s);
        vc_op_ftemp(o, vc_n_floor((L - 1) * V, 0, 2), dt);
        vc_op_end(o);
    }
    o = vc_op_begin(b, "argmax");
    vc_op_in_nodiff(o, s);
    vc_t am = vc_op_out(o, vc_n_floor(L - 1, 0, 2), VC_DT_I64);
    vc_op_end(o);
    vc__extend_life(b, am);
    /* _compute_loss's locals until it returns: outputs, ref_outputs and the shifted views */
    vc__extend_life(b, y);
    vc__extend_life(b, s);
    vc__extend_life(b, logps);
    if (ry >= 0) {
        vc__extend_life(b, ry);
        vc__extend_life(b, rs);
        vc__extend_life(b, ref);
    }
}

/* ---- TRL's ORPO step (huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8,
 * trl/experimental/orpo/orpo_trainer.py ORPOTrainer, the default config: beta 0.1, no aux loss, a
 * decoder-only model). DPODataCollatorWithPadding's batch holds chosen_ and rejected_ input_ids,
 * attention_mask and labels, int64 [B, L] each, resident like the input batch; --batch counts the
 * 2B sequences concatenated_forward runs (request.c refuses an odd --batch).
 * concatenated_forward: concatenated_inputs cats them into concatenated_input_ids, _attention_mask
 * and _labels [2B, L] (locals until it returns); all_logits = model(...).logits in the model's
 * dtype (no labels, no .float()); labels = input_ids.clone(), where(attention_mask == 1, labels,
 * -100); chosen_nll_loss = cross_entropy_loss(all_logits[:B], labels[:B]): logits[..., :-1, :]
 * .contiguous() (a copy of the chosen half), labels[..., 1:].contiguous(), nn.CrossEntropyLoss
 * (log_softmax in the logits' dtype, saved; nll_loss); get_batch_logps(all_logits, labels,
 * average_log_prob=True): labels[:, 1:].clone(), loss_mask = labels != -100, where(labels == -100,
 * 0, labels), selective_log_softmax (as DPO's), (per_token_logps * loss_mask).sum(-1) /
 * loss_mask.sum(-1); odds_ratio_loss on the halves' log-probs .float(): log1mexp, logsigmoid;
 * loss = policy_nll_loss - losses.mean(). The halves' logits views keep all_logits until
 * compute_loss returns. No reference model. */
static vc_t orpo_small(vc_build *b, const char *name, vc_t x, int ntemp)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_grad(o, vc_op_in(o, x), VC_GRAD_NEW);
    for (int k = 0; k < ntemp; k++) vc_op_ftemp(o, b->t[x].n, (vc_dtype)b->t[x].dt);
    vc_t r = vc_op_out(o, b->t[x].n, (vc_dtype)b->t[x].dt);
    vc_op_save(o, x);
    vc_op_end(o);
    return r;
}

/* a tensor of odds_ratio_loss's or get_batch_loss_metrics' logging: a no-grad op on x (and y)
 * making n elements of dt, with a temporary of nt elements of tdt (nt NULL: none) freed when the
 * statement ends */
static vc_t orpo_metric(vc_build *b, const char *name, vc_t x, vc_t y, const vc_numel *nt, vc_dtype tdt,
                        vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_in_nodiff(o, x);
    if (y >= 0) vc_op_in_nodiff(o, y);
    if (nt) vc_op_ftemp(o, *nt, tdt);
    vc_t r = vc_op_out(o, n, dt);
    vc_op_end(o);
    return r;
}

static void emit_orpo(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_value *ov = &m->val[m->output];
    vc_t y = b->val_t[m->output];
    vc_dtype dt = (vc_dtype)b->t[y].dt;
    int64_t V = ov->shape.d[ov->shape.nd - 1], L = V ? b->t[y].n.ps / V : 0;
    if (b->amp_dt != VC_DT_F32) {
        fail(b, "orpo under autocast (%s) is not modelled: use fp32, bf16, fp16 or mixed-*", vc_precision_name(b->o.precision));
        return;
    }
    if (b->o.hold_output) {
        fail(b, "orpo: ORPOTrainer.compute_loss returns the loss only; " O("hold_output") " does not apply");
        b->why_opt = O("hold_output");
        return;
    }
    if (L < 2) {
        fail(b, "orpo needs at least 2 tokens per sequence (the shifted labels)");
        return;
    }
    /* the collator's attention masks and labels beside the ids (the input batch): resident */
    vc_t res = vc__new_tensor(b, vc_n_sample(2 * L), VC_DT_I64);
    if (res < 0) return;
    b->t[res].persistent = true;
    b->target_t = res;
    /* concatenated_inputs' three [2B, L] cats, until concatenated_forward returns */
    vc_op *o = vc_op_begin(b, "cat");
    vc_op_in_nodiff(o, res);
    vc_t cat = vc_op_out(o, vc_n_sample(3 * L), VC_DT_I64);
    vc_op_end(o);
    /* labels = input_ids.clone(); torch.where(attention_mask == 1, labels, -100) */
    o = vc_op_begin(b, "clone+eq+where");
    vc_op_in_nodiff(o, cat);
    int cl = vc_op_ftemp_keep(o, vc_n_sample(L), VC_DT_I64);
    vc_op_ftemp(o, vc_n_sample(L), VC_DT_BOOL);
    vc_t lab = vc_op_out(o, vc_n_sample(L), VC_DT_I64);
    vc_op_ftemp_free(o, cl);
    vc_op_end(o);
    /* cross_entropy_loss(all_logits[:B], labels[:B]) */
    const vc_numel half_lv = vc_n_floor((L - 1) * V, 0, 2), half_l = vc_n_floor(L - 1, 0, 2);
    o = vc_op_begin(b, "slice"); /* all_logits[:B]: SliceBackward makes a logits-sized gradient */
    int i = vc_op_in(o, y);
    vc_t h = vc_op_out_view(o, i, vc_n_floor(L * V, 0, 2), false);
    vc_op_end(o);
    o = vc_op_begin(b, "slice+contiguous"); /* logits[..., :-1, :].contiguous(): a copy */
    vc_op_in(o, h);
    vc_t c = vc_op_out(o, half_lv, dt);
    vc_op_end(o);
    o = vc_op_begin(b, "contiguous"); /* labels[..., 1:].contiguous() */
    vc_op_in_nodiff(o, lab);
    vc_t tc = vc_op_out(o, half_l, VC_DT_I64);
    vc_op_end(o);
    vc_t nll = cross_entropy(b, c, tc, half_lv, dt);
    vc__extend_life(b, c); /* cross_entropy_loss's local `logits`, until it returns */
    /* get_batch_logps(all_logits, concatenated_labels, average_log_prob=True) */
    o = vc_op_begin(b, "clone"); /* labels[:, 1:].clone() */
    vc_op_in_nodiff(o, cat);
    vc_t l1 = vc_op_out(o, vc_n_sample(L - 1), VC_DT_I64);
    vc_op_end(o);
    o = vc_op_begin(b, "ne"); /* loss_mask = labels != -100 */
    vc_op_in_nodiff(o, l1);
    vc_t mask = vc_op_out(o, vc_n_sample(L - 1), VC_DT_BOOL);
    vc_op_end(o);
    o = vc_op_begin(b, "eq+where"); /* labels = torch.where(labels == -100, 0, labels) */
    vc_op_in_nodiff(o, l1);
    vc_op_ftemp(o, vc_n_sample(L - 1), VC_DT_BOOL);
    vc_t l2 = vc_op_out(o, vc_n_sample(L - 1), VC_DT_I64);
    vc_op_end(o);
    vc_t s = dpo_shift(b, y, L, V);
    vc_t tok = dpo_logps(b, s, L, V);
    vc__extend_life(b, l2); /* the index selective_log_softmax gathers with */
    o = vc_op_begin(b, "mul"); /* per_token_logps * loss_mask: MulBackward saves the mask */
    vc_op_grad(o, vc_op_in(o, tok), VC_GRAD_NEW);
    vc_op_in_nodiff(o, mask);
    vc_t pm = vc_op_out(o, vc_n_sample(L - 1), (vc_dtype)b->t[tok].dt);
    vc_op_save(o, mask);
    vc_op_end(o);
    o = vc_op_begin(b, "sum");
    vc_op_grad(o, vc_op_in(o, pm), VC_GRAD_PASS);
    vc_t sm = vc_op_out(o, vc_n_sample(1), (vc_dtype)b->t[tok].dt);
    vc_op_end(o);
    o = vc_op_begin(b, "sum"); /* loss_mask.sum(-1): int64 */
    vc_op_in_nodiff(o, mask);
    vc_t cnt = vc_op_out(o, vc_n_sample(1), VC_DT_I64);
    vc_op_end(o);
    o = vc_op_begin(b, "div"); /* DivBackward saves the counts */
    vc_op_grad(o, vc_op_in(o, sm), VC_GRAD_NEW);
    vc_op_in_nodiff(o, cnt);
    vc_t logps = vc_op_out(o, vc_n_sample(1), (vc_dtype)b->t[tok].dt);
    vc_op_save(o, cnt);
    vc_op_end(o);
    vc__extend_life(b, cat); /* concatenated_forward returns */
    vc__extend_life(b, lab);
    /* odds_ratio_loss(chosen, rejected): .float() of each [B] half, log_odds = (c - r) -
     * (log1mexp(c) - log1mexp(r)) (log1mexp: where(x < t, log1p(-exp(x)), log(-expm1(x))), both
     * branches computed), ratio = logsigmoid(log_odds), losses = beta * ratio */
    const vc_numel half = vc_n_floor(1, 0, 2);
    vc_t side[2];
    for (int k = 0; k < 2; k++) { /* all_logps[:B], [B:]: views; .float() a copy of 16-bit ones */
        o = vc_op_begin(b, "select+float");
        int li = vc_op_in(o, logps);
        if (b->t[logps].dt == VC_DT_F32) {
            side[k] = vc_op_out_view(o, li, half, true);
            vc_op_grad(o, li, VC_GRAD_PASS);
        } else {
            vc_op_grad(o, li, VC_GRAD_NEW);
            side[k] = vc_op_out(o, half, VC_DT_F32);
        }
        vc_op_end(o);
    }
    vc_t d = dpo_binary(b, "sub", side[0], side[1], half, VC_DT_F32);
    vc_t e0 = orpo_small(b, "log1mexp", side[0], 4), e1 = orpo_small(b, "log1mexp", side[1], 4);
    vc_t de = dpo_binary(b, "sub", e0, e1, half, VC_DT_F32);
    vc_t lo = dpo_binary(b, "sub", d, de, half, VC_DT_F32);
    o = vc_op_begin(b, "log_sigmoid_forward");
    vc_op_grad(o, vc_op_in(o, lo), VC_GRAD_NEW);
    vc_t ratio = vc_op_out(o, half, VC_DT_F32);
    vc_op_extra(o, half, VC_DT_F32); /* buffer */
    vc_op_save(o, lo);
    vc_op_end(o);
    vc_t ls = dpo_binary(b, "mul", ratio, -1, half, VC_DT_F32);
    /* then chosen_rewards = beta * policy_chosen_logps.to(device).detach(), rejected_rewards the
     * same ([B] fp32 each, .to a no-op on one device), and it returns torch.mean(ratio),
     * torch.mean(log_odds) (0-d fp32): alive until get_batch_loss_metrics returns */
    const vc_numel one = vc_n_fixed(1);
    vc_t rw[2], ret[2];
    for (int k = 0; k < 2; k++) rw[k] = orpo_metric(b, "mul", side[k], -1, NULL, VC_DT_F32, half, VC_DT_F32);
    ret[0] = orpo_metric(b, "mean", ratio, -1, NULL, VC_DT_F32, one, VC_DT_F32);
    ret[1] = orpo_metric(b, "mean", lo, -1, NULL, VC_DT_F32, one, VC_DT_F32);
    o = vc_op_begin(b, "mean");
    vc_op_in(o, ls);
    vc_t mn = vc_op_out(o, one, VC_DT_F32);
    vc_op_end(o);
    /* loss = policy_nll_loss - losses.mean(): the model's dtype with fp32, promoted to fp32 */
    o = vc_op_begin(b, "sub");
    vc_op_grad(o, vc_op_in(o, nll), VC_GRAD_NEW);
    vc_op_grad(o, vc_op_in(o, mn), VC_GRAD_PASS);
    b->loss_t = vc_op_out(o, one, VC_DT_F32);
    vc_op_end(o);
    /* get_batch_loss_metrics (huggingface/trl @ f2cd5771, the file above; gather_for_metrics the
     * identity in one process): reward_accuracies = (chosen_rewards > rejected_rewards).float() ([B]
     * fp32, the bool [B] freed with the statement), then 11 metrics, each a 0-d tensor alive until
     * the `metrics[k] = v.item()` loop: the means of chosen_rewards, rejected_rewards,
     * reward_accuracies, (chosen_rewards - rejected_rewards) (a [B] temporary), the logps halves
     * .detach() (views: the log-probs' dtype), gather(policy_*_logits.detach().mean()).mean() (a
     * 0-d temporary each, the logits' dtype), policy_nll_loss.detach().mean(), and of the two
     * returned means. Each of them a 512-byte block (the smallest the allocator gives). */
    vc_t acc = orpo_metric(b, "gt+float", rw[0], rw[1], &half, VC_DT_BOOL, half, VC_DT_F32);
    vc_t met[11];
    met[0] = orpo_metric(b, "mean", rw[0], -1, NULL, VC_DT_F32, one, VC_DT_F32);
    met[1] = orpo_metric(b, "mean", rw[1], -1, NULL, VC_DT_F32, one, VC_DT_F32);
    met[2] = orpo_metric(b, "mean", acc, -1, NULL, VC_DT_F32, one, VC_DT_F32);
    met[3] = orpo_metric(b, "sub+mean", rw[0], rw[1], &half, VC_DT_F32, one, VC_DT_F32);
    vc_dtype ldt = (vc_dtype)b->t[logps].dt;
    met[4] = orpo_metric(b, "mean", logps, -1, NULL, ldt, one, ldt); /* rejected, then chosen */
    met[5] = orpo_metric(b, "mean", logps, -1, NULL, ldt, one, ldt);
    met[6] = orpo_metric(b, "mean+mean", y, -1, &one, dt, one, dt); /* rejected, then chosen */
    met[7] = orpo_metric(b, "mean+mean", y, -1, &one, dt, one, dt);
    met[8] = orpo_metric(b, "mean", nll, -1, NULL, (vc_dtype)b->t[nll].dt, one, (vc_dtype)b->t[nll].dt);
    met[9] = orpo_metric(b, "mean", ret[0], -1, NULL, VC_DT_F32, one, VC_DT_F32);
    met[10] = orpo_metric(b, "mean", ret[1], -1, NULL, VC_DT_F32, one, VC_DT_F32);
    for (int k = 0; k < 11; k++) vc__extend_life(b, met[k]);
    /* get_batch_loss_metrics' locals until it returns: chosen_logits / rejected_logits (views of
     * all_logits), the logps halves (views of all_logps), policy_nll_loss, losses (ratio's size),
     * log_odds, the rewards, reward_accuracies, the returned means */
    const vc_t locals[] = {y, logps, nll, ratio, lo, rw[0], rw[1], ret[0], ret[1], acc};
    for (size_t j = 0; j < sizeof locals / sizeof *locals; j++) vc__extend_life(b, locals[j]);
}

/* ---- TRL's KTO step (huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8, trl/trainer/kto_trainer.py
 * KTOTrainer._compute_loss with its defaults: loss_type "kto" (calculate_KL), beta 0.1, both weights 1,
 * no precomputed reference log-probs, no liger). DataCollatorForUnpairedPreference's batch: input_ids,
 * attention_mask, completion_mask and the KL_ ones (each example's prompt with the next example's
 * completion), int64 [B, L] each, and `label` [B], resident like the input batch; --batch counts the B
 * examples, the first half desirable (the labels are data: request.c refuses an odd --batch).
 *  1. KL_logps = _compute_kl_logps(model, batch): under no_grad the policy's forward on the KL
 *     sequences and their log-probs. It runs before the policy's forward, with less alive than the
 *     reference's own KL forward later (the same shapes, the step's activations absent): only its
 *     [B] result is counted here (the policy's forward is the plan's first).
 *  2. outputs = model(**model_kwargs); shift_logits = outputs.logits[:, :-1, :]; selective_log_softmax
 *     (DPO's), per_token_logps[completion_mask[:, 1:] == 0] = 0.0, .sum(-1);
 *  3. with no_grad and checkpointing disabled: the reference (LoRA: adapters disabled; else the
 *     frozen copy) on the KL sequences (_compute_kl_logps: its logits freed when it returns), then on
 *     the batch (ref_outputs kept until _compute_loss returns), their log-probs;
 *  4. the kl estimate, the losses ([B], sigmoid), losses.nanmean();
 *  5. the metrics: entropy_from_logits(shift_logits.detach()) (DPO's), shift_logits.detach()
 *     .index_select(0, chosen_idx) and (0, rejected_idx) (copies of the two halves, locals until the
 *     return), and each half's [mask.bool()] copy of its tokens' logits, one at a time. */
static void emit_kto(vc_build *b)
{
    const vc_model *m = b->m;
    const vc_value *ov = &m->val[m->output];
    vc_t y = b->val_t[m->output];
    vc_dtype dt = (vc_dtype)b->t[y].dt;
    int64_t V = ov->shape.d[ov->shape.nd - 1], L = V ? b->t[y].n.ps / V : 0;
    bool peft = m->lora.r > 0 || m->lora.method == VC_PEFT_IA3 || m->lora.method == VC_PEFT_LN_TUNING;
    if (b->amp_dt != VC_DT_F32) {
        fail(b, "kto under autocast (%s) is not modelled: use fp32, bf16, fp16 or mixed-*", vc_precision_name(b->o.precision));
        return;
    }
    if (b->o.parallel != VC_PARALLEL_NONE || m->stage.on) {
        fail(b, "kto is modelled on one GPU (the reference model under a parallel layout is not)");
        return;
    }
    if (b->o.hold_output) {
        fail(b, "kto: KTOTrainer.compute_loss returns the loss only; " O("hold_output") " does not apply");
        b->why_opt = O("hold_output");
        return;
    }
    if (peft && (m->lora.method == VC_PEFT_IA3 || m->lora.method == VC_PEFT_LN_TUNING || m->lora.modules_to_save[0])) {
        fail(b, "kto: the reference pass with %s disabled is not modelled (LoRA, rsLoRA, PiSSA and DoRA are)",
             m->lora.modules_to_save[0] ? O("modules_to_save") : vc_peft_row_get(m->lora.method)->name);
        return;
    }
    if (L < 2) {
        fail(b, "kto needs at least 2 tokens per sequence (the shifted labels)");
        return;
    }
    for (size_t p = 0; !peft && p < m->npar; p++)
        if (m->par[p].fmt != VC_WEIGHTS_DENSE) {
            fail(b, "kto: a full fine-tune's reference copy of quantized weights is not modelled");
            return;
        }
    /* the collator's tensors beside input_ids: five int64 [B, L] and the [B] labels, resident */
    vc_t res = vc__new_tensor(b, vc_n_sample(5 * L + 1), VC_DT_I64);
    if (res < 0) return;
    b->t[res].persistent = true;
    b->target_t = res;
    vc_t kl = vc__new_tensor(b, vc_n_sample(1), dt); /* 1. the policy's KL_logps [B], from before the forward */
    if (kl < 0) return;
    vc_t s = dpo_shift(b, y, L, V);
    vc_t logps = dpo_sum(b, dpo_logps(b, s, L, V), res);
    /* bool_labels, chosen_idx, rejected_idx (nonzero: int64 [B/2] each), completion_logps.index_select */
    vc_t sel[2];
    for (int k = 0; k < 2; k++) {
        vc_op *o = vc_op_begin(b, "index_select");
        vc_op_grad(o, vc_op_in(o, logps), VC_GRAD_NEW);
        vc_op_extra(o, vc_n_floor(1, 0, 2), VC_DT_I64); /* the index, saved */
        sel[k] = vc_op_out(o, vc_n_floor(1, 0, 2), (vc_dtype)b->t[logps].dt);
        vc_op_end(o);
    }
    /* 3. the reference: its KL forward and log-probs (logits freed on return), then the batch's */
    vc_t ry = -1, rs = -1, rkl = -1, ref = -1;
    if (!b->st) {
        bool train = b->train;
        for (int pass = 0; pass < 2 && !b->st; pass++) {
            vc_t out = vc__emit_reference(b, !peft);
            if (out < 0) return;
            b->cur_inst = -1;
            b->cur_region = -1;
            b->train = false;
            vc_t sh = dpo_shift(b, out, L, V);
            vc_t lp = dpo_sum(b, dpo_logps(b, sh, L, V), res);
            b->train = train;
            if (pass == 0) {
                rkl = lp;
            } else {
                ry = out;
                rs = sh;
                ref = lp;
            }
        }
        if (b->st) return;
    }
    /* 4. kl = (KL_logps - ref_KL_logps).mean().detach().clamp(min=0); the losses on each half:
     * 1 - sigmoid(beta * (logratios - kl)), cat, nanmean */
    vc_op *o = vc_op_begin(b, "sub+mean+clamp");
    vc_op_in_nodiff(o, kl);
    vc_op_in_nodiff(o, rkl);
    vc_op_ftemp(o, vc_n_sample(1), dt);
    vc_t klv = vc_op_out(o, vc_n_fixed(1), dt);
    vc_op_end(o);
    vc_t half[2];
    for (int k = 0; k < 2; k++) {
        vc_t r = dpo_binary(b, "index_select", ref, -1, vc_n_floor(1, 0, 2), (vc_dtype)b->t[ref].dt);
        vc_t lr = dpo_binary(b, "sub", sel[k], r, vc_n_floor(1, 0, 2), (vc_dtype)b->t[sel[k]].dt);
        lr = dpo_binary(b, "sub", lr, klv, vc_n_floor(1, 0, 2), (vc_dtype)b->t[lr].dt);
        lr = dpo_binary(b, "mul", lr, -1, vc_n_floor(1, 0, 2), (vc_dtype)b->t[lr].dt);
        o = vc_op_begin(b, "sigmoid"); /* SigmoidBackward saves its result */
        vc_op_grad(o, vc_op_in(o, lr), VC_GRAD_NEW);
        vc_t sg = vc_op_out(o, vc_n_floor(1, 0, 2), (vc_dtype)b->t[lr].dt);
        vc_op_save(o, sg);
        vc_op_end(o);
        half[k] = dpo_binary(b, "rsub", sg, -1, vc_n_floor(1, 0, 2), (vc_dtype)b->t[sg].dt);
        half[k] = dpo_binary(b, "mul", half[k], -1, vc_n_floor(1, 0, 2), (vc_dtype)b->t[sg].dt); /* * weight */
    }
    o = vc_op_begin(b, "cat");
    vc_op_grad(o, vc_op_in(o, half[0]), VC_GRAD_PASS);
    vc_op_grad(o, vc_op_in(o, half[1]), VC_GRAD_PASS);
    vc_t losses = vc_op_out(o, vc_n_sample(1), (vc_dtype)b->t[half[0]].dt);
    vc_op_end(o);
    o = vc_op_begin(b, "nanmean"); /* isnan, logical_not, sum, nansum, div */
    vc_op_grad(o, vc_op_in(o, losses), VC_GRAD_NEW);
    vc_op_ftemp(o, vc_n_sample(1), VC_DT_BOOL);
    vc_op_extra(o, vc_n_sample(1), VC_DT_BOOL);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), (vc_dtype)b->t[losses].dt);
    vc_op_end(o);
    /* 5. the metrics while outputs and ref_outputs are alive (as DPO's entropy, then the copies) */
    dpo_entropy(b, s, L, V, dt);
    vc_t cp[2];
    for (int k = 0; k < 2; k++) { /* shift_logits.detach().index_select(0, idx): [B/2, L-1, V] copies */
        o = vc_op_begin(b, "index_select");
        vc_op_in_nodiff(o, s);
        cp[k] = vc_op_out(o, vc_n_floor((L - 1) * V, 0, 2), dt);
        vc_op_end(o);
    }
    for (int k = 0; k < 2; k++) { /* the masks' index_select, then logits[mask.bool()].mean(-1).sum() */
        o = vc_op_begin(b, "index+mean");
        vc_op_in_nodiff(o, cp[k]);
        vc_op_ftemp(o, vc_n_floor(L - 1, 0, 2), VC_DT_I64);
        vc_op_ftemp(o, vc_n_floor(L - 1, 0, 2), VC_DT_BOOL);
        vc_op_ftemp(o, vc_n_floor((L - 1) * V, 0, 2), dt);
        vc_op_end(o);
    }
    vc__extend_life(b, cp[0]);
    vc__extend_life(b, cp[1]);
    vc__extend_life(b, y);
    vc__extend_life(b, s);
    vc__extend_life(b, ry);
    vc__extend_life(b, rs);
    vc__extend_life(b, kl);
}

/* CLIPModel.forward's loss with return_loss=True (modeling_clip.py @ 000f1ffdbf1ce6190cc8863af9a2fff817590937):
 * clip_loss(logits_per_text), logits_per_text [B, B] in the model's dtype dt (layers/vision.c SiglipLogits, clip):
 *   caption_loss = contrastive_loss(similarity): nn.functional.cross_entropy(logits, torch.arange(len(logits))): the
 *     int64 [B] arange (a temporary of the call, saved by nll_loss), log_softmax (a new [B, B] in dt, saved) and
 *     nll_loss (the 0-d loss and total_weight); its backward nll_loss_backward's and _log_softmax_backward's [B, B];
 *   image_loss = contrastive_loss(similarity.t()): the same on the transposed view (log_softmax's output contiguous);
 *   (caption_loss + image_loss) / 2.0: 0-d tensors.
 * The two log-probabilities are saved until the backward; the logits' two gradients are summed by the engine. */
static void emit_clip(vc_build *b)
{
    const vc_t y = b->val_t[b->m->output];
    const int64_t B = b->batch < (INT64_C(1) << 26) ? b->batch : (INT64_C(1) << 26); /* SiglipLogits refuses more */
    vc_batch_dependent(b);
    const vc_numel bb = vc_n_fixed(B * B), nb = vc_n_fixed(B), one = vc_n_fixed(1);
    const vc_dtype dt = (vc_dtype)b->t[y].dt;
    vc_t cap = cross_entropy(b, y, vc__op_nograd(b, "arange", -1, -1, nb, VC_DT_I64), bb, dt);
    vc_t yt = vc__op_view(b, y, bb, false); /* similarity.t() */
    vc_t img = cross_entropy(b, yt, vc__op_nograd(b, "arange", -1, -1, nb, VC_DT_I64), bb, dt);
    vc_op *o = vc_op_begin(b, "add");
    vc_op_grad(o, vc_op_in(o, cap), VC_GRAD_PASS);
    vc_op_grad(o, vc_op_in(o, img), VC_GRAD_PASS);
    vc_t sum = vc_op_out(o, one, dt);
    vc_op_end(o);
    o = vc_op_begin(b, "div"); /* DivBackward1 (by a scalar): grad / 2.0, a new 0-d */
    vc_op_in(o, sum);
    b->loss_t = vc_op_out(o, one, dt);
    vc_op_end(o);
}

/* SiglipModel.forward's loss with return_loss=True (modeling_siglip.py @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e),
 * on the model's output logits_per_text [B, B] (layers/vision.c SiglipLogits) in the model's dtype dt:
 *   eye = torch.eye(logits_per_text.size(0)): float32 [B, B] (the default dtype);
 *   m1_diag1 = -torch.ones_like(logits_per_text) + 2 * eye: ones_like and its neg in dt, 2 * eye float32, their sum
 *     float32 (type promotion), each temporary freed as the expression ends;
 *   loglik = F.logsigmoid(m1_diag1 * logits_per_text): the product float32 (MulBackward0 saves m1_diag1 for the
 *     logits' gradient, grad * m1_diag1 in float32 cast to dt by the engine), log_sigmoid_forward's output float32
 *     (its CUDA buffer empty; saves self), its backward a new [B, B];
 *   nll = -torch.sum(loglik, dim=-1) ([B], the sum freed by neg), loss = nll.mean().
 * eye, m1_diag1, loglik and nll are locals of the forward, alive until it returns with the loss. */
static void emit_siglip(vc_build *b)
{
    const vc_t y = b->val_t[b->m->output];
    const int64_t B = b->batch < (INT64_C(1) << 26) ? b->batch : (INT64_C(1) << 26); /* SiglipLogits refuses more */
    vc_batch_dependent(b);
    const vc_numel bb = vc_n_fixed(B * B), nb = vc_n_fixed(B);
    const vc_dtype dt = (vc_dtype)b->t[y].dt;
    vc_t eye = vc__op_nograd(b, "eye", -1, -1, bb, VC_DT_F32);
    vc_t neg = vc__op_nograd(b, "neg", vc__op_nograd(b, "ones_like", -1, -1, bb, dt), -1, bb, dt);
    vc_t m1 = vc__op_nograd(b, "add", neg, vc__op_nograd(b, "mul", eye, -1, bb, VC_DT_F32), bb, VC_DT_F32);
    vc_op *o = vc_op_begin(b, "mul");
    vc_op_in_nodiff(o, m1);
    int iy = vc_op_in(o, y);
    vc_t prod = vc_op_out(o, bb, VC_DT_F32);
    vc_op_save(o, m1);
    vc_op_grad(o, iy, dt == VC_DT_F32 ? VC_GRAD_NEW : VC_GRAD_NEW_REDUCE);
    vc_op_end(o);
    o = vc_op_begin(b, "log_sigmoid_forward");
    int ip = vc_op_in(o, prod);
    vc_t ls = vc_op_out(o, bb, VC_DT_F32);
    vc_op_save(o, prod);
    vc_op_grad(o, ip, VC_GRAD_NEW);
    vc_op_end(o);
    o = vc_op_begin(b, "sum");
    vc_op_grad(o, vc_op_in(o, ls), VC_GRAD_PASS);
    vc_t sm = vc_op_out(o, nb, VC_DT_F32);
    vc_op_end(o);
    o = vc_op_begin(b, "neg");
    vc_op_in(o, sm);
    vc_t nll = vc_op_out(o, nb, VC_DT_F32);
    vc_op_end(o);
    o = vc_op_begin(b, "mean"); /* MeanBackward0: grad.expand(sizes) / numel, a new [B] */
    vc_op_in(o, nll);
    b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
    vc_op_end(o);
    vc__extend_life(b, eye);
    vc__extend_life(b, m1);
    vc__extend_life(b, ls);
    vc__extend_life(b, nll);
}

/* The rows, indexed by vc_loss (model.h). */
static const vc_loss_row rows[] = {
    [VC_LOSS_MEAN] = {"mean", NULL, "output.float().mean()", false, false, false, emit_mean, NULL},
    [VC_LOSS_CROSS_ENTROPY] = {"cross_entropy", NULL, "F.cross_entropy over the last dimension", true, false, false,
                               emit_cross_entropy, NULL},
    [VC_LOSS_CAUSAL_LM] = {"causal_lm", "hf", "transformers' ForCausalLMLoss: fp32 logits, shifted labels, "
                           "cross_entropy", true, true, false, emit_causal_lm, NULL},
    [VC_LOSS_VOCAB_PARALLEL] = {"vocab_parallel", NULL, "Megatron's vocab-parallel cross-entropy of one tensor-parallel "
                                "rank's logits (" O("tp") ")", true, true, false, emit_vocab_parallel, NULL},
    [VC_LOSS_LIGER] = {"liger_fused_linear_ce", "liger", "Liger-Kernel's LigerFusedLinearCrossEntropyFunction: the "
                       "LM head and cross-entropy in chunks, gradients in forward", true, true, true, emit_liger,
                       /* linkedin/Liger-Kernel @ ead96b6: ops/fused_linear_cross_entropy.py takes no process
                        * group; its Megatron support (megatron/cross_entropy.py, examples/megatron/README.md)
                        * is the unfused ops/vocab_parallel_cross_entropy.py, not this op */
                       "Liger's fused linear cross-entropy has no vocabulary-parallel mode (its softmax would "
                       "cover one rank's vocabulary shard); " O("tp") "'s loss is Megatron's vocab-parallel cross-entropy "
                       "(" OV("loss", "hf") ")"},
    [VC_LOSS_CCE] = {"cut_cross_entropy", "cce", "Apple's Cut Cross-Entropy (cut_cross_entropy.linear_cross_entropy): the "
                     "logits tiled on chip, the hidden states kept for its backward kernel", true, true, true, emit_cce,
                     /* apple/ml-cross-entropy @ d42911f: README "Vocabulary Parallelism" (VocabParallelOptions,
                      * linear_cross_entropy.py l.137) is a separate path the transformers integration (cce_patch,
                      * utils.py apply_lce) never takes, and it is not replicated here */
                     "Cut Cross-Entropy's vocabulary-parallel path (VocabParallelOptions) is not replicated and "
                     "its transformers integration does not use it; " O("tp") "'s loss is Megatron's vocab-parallel "
                     "cross-entropy (" OV("loss", "hf") ")"},
    [VC_LOSS_CHUNKED] = {"chunked_ce", "chunked", "torchtune's CEWithChunkedOutputLoss: the output projection in "
                         "\"loss_chunks\" chunks of the sequence, each upcast to fp32 for its cross-entropy", true, true,
                         true, emit_chunked,
                         /* torchtune @ bd2a0fc7: compute_cross_entropy calls logits.full_tensor() on a DTensor
                          * (its loss-parallel path), not replicated */
                         "torchtune's chunked loss gathers a DTensor's logits (full_tensor) and is not replicated "
                         "under tensor parallelism; " O("tp") "'s loss is Megatron's vocab-parallel cross-entropy (" OV("loss", "hf") ")"},
    [VC_LOSS_LOGITS_MEAN] = {"logits_mean", "mean", "outputs.logits.mean() in the logits' dtype, as the simplest training "
                             "loops take it", false, true, false, emit_logits_mean,
                             "a tensor-parallel rank holds a vocabulary shard of the logits; their mean over the whole "
                             "vocabulary is not modelled (" OV("loss", "hf") ")"},
    [VC_LOSS_DPO] = {"dpo", "dpo", "TRL's DPOTrainer step: the policy and a no-grad reference forward (LoRA: adapters "
                     "disabled; else a frozen copy) over [chosen; rejected], selective_log_softmax, the sigmoid loss",
                     true, true, false, emit_dpo,
                     "TRL's DPO under Megatron tensor parallelism is not modelled (" OV("loss", "hf") ")"},
    [VC_LOSS_DPO_PRECOMPUTED] = {"dpo_precomputed", "dpo-precomputed", "TRL's DPOTrainer step with "
                                 "precompute_ref_log_probs=True: the policy forward only, the reference log-probs "
                                 "read from the batch", true, true, false, emit_dpo,
                                 "TRL's DPO under Megatron tensor parallelism is not modelled (" OV("loss", "hf") ")"},
    [VC_LOSS_ORPO] = {"orpo", "orpo", "TRL's ORPOTrainer step: the policy over [chosen; rejected], the chosen half's "
                      "cross-entropy and the odds-ratio term on the average log-probs; no reference",
                      true, true, false, emit_orpo,
                      "TRL's ORPO under Megatron tensor parallelism is not modelled (" OV("loss", "hf") ")"},
    [VC_LOSS_KTO] = {"kto", "kto", "TRL's KTOTrainer step: the policy with grad, the reference's no-grad forwards on "
                     "the KL sequences and the batch (LoRA: adapters disabled; else a frozen copy), the kto loss",
                     true, true, false, emit_kto,
                     "TRL's KTO under Megatron tensor parallelism is not modelled (" OV("loss", "hf") ")"},
    [VC_LOSS_SEQ2SEQ_LM] = {"seq2seq_lm", NULL, "T5ForConditionalGeneration's CrossEntropyLoss on the decoder's logits "
                            "in their dtype, unshifted labels", true, false, false, emit_seq2seq, NULL},
    [VC_LOSS_CHUNKED_NLL] = {"chunked_nll", "chunked-nll", "TRL SFTTrainer's default loss_type chunked_nll: the LM head "
                             "and cross-entropy over 256-token chunks of the shifted hidden states, each chunk under a "
                             "non-reentrant checkpoint, in fp32 (a 16-bit head weight copied to fp32 per chunk)",
                             true, true, true, emit_chunked_nll,
                             "TRL's chunked_nll takes a DTensor head's full_tensor() (FSDP2), not a vocabulary shard; "
                             "under " O("tp") " it is not modelled (" OV("loss", "hf") ")"},
    [VC_LOSS_TRL_NLL] = {"trl_nll", "nll", "TRL SFTTrainer's loss_type nll (its default before TRL 1.7): the model's "
                         "ForCausalLMLoss, then compute_loss's no-grad entropy and token accuracy over outputs.logits, "
                         "held until it returns", true, true, false, emit_trl_nll,
                         "TRL's metrics over a tensor-parallel rank's vocabulary shard are not modelled (" OV("loss", "hf") ")"},
    [VC_LOSS_LOGITS_SUM] = {"logits_sum", "sum", "outputs.logits.sum() in the logits' dtype, as the simplest training "
                            "loops take it: a stride-0 gradient the LM head's matmuls copy", false, true, false,
                            emit_logits_sum,
                            "a tensor-parallel rank holds a vocabulary shard of the logits; their sum over the whole "
                            "vocabulary is not modelled (" OV("loss", "hf") ")"},
    /* src/engine/grpo.c: the row runs the whole forward itself (vc__loss_forward_end), the reference's before the
     * policy's, each with its LM head on the completion's positions (logits_to_keep) */
    [VC_LOSS_GRPO] = {"grpo", "grpo", "TRL's GRPOTrainer step: the completions generated with the KV cache, the "
                      "reference's no-grad log-probs when beta > 0, the policy's forward and backward on prompt + "
                      "completion, the dapo loss", true, true, true, vc__grpo_emit,
                      "TRL's GRPO under Megatron tensor parallelism is not modelled (" OV("loss", "hf") ")"},
    [VC_LOSS_LIGER_CE] = {"liger_cross_entropy", NULL, "transformers' ForCausalLMLoss with Liger-Kernel's "
                          "LigerCrossEntropyFunction as its cross_entropy (" O("liger_kernels") " cross_entropy): the "
                          "gradient written into the fp32 logits in forward", true, true, false, emit_liger_ce,
                          /* ops/cross_entropy.py's Function takes no process group (the vocab-parallel one is
                           * ops/vocab_parallel_cross_entropy.py, not what the cross_entropy switch patches in) */
                          "Liger's cross_entropy switch patches in LigerCrossEntropyFunction, which has no "
                          "vocabulary-parallel mode; " O("tp") "'s loss is Megatron's vocab-parallel cross-entropy"},
    [VC_LOSS_PALIGEMMA] = {"paligemma_lm", NULL, "PaliGemmaForConditionalGeneration's own CrossEntropyLoss: fp32 logits, "
                           "their shifted copy, the shifted labels", true, true, false, emit_paligemma,
                           "PaliGemma's loss on a tensor-parallel rank is not modelled"},
    [VC_LOSS_SIGLIP] = {"siglip", NULL, "SiglipModel's sigmoid loss with return_loss=True: -logsigmoid of the "
                        "eye-based labels x logits_per_text [B, B], summed per text, their mean", false, false, false,
                        emit_siglip, "SiglipModel under tensor parallelism is not modelled"},
    [VC_LOSS_CLIP] = {"clip", NULL, "CLIPModel's clip_loss with return_loss=True: the mean of cross_entropy over "
                      "logits_per_text [B, B] and over its transpose, each against arange(B)", false, false, false,
                      emit_clip, "CLIPModel under tensor parallelism is not modelled"},
};

const vc_loss_row *vc_loss_row_get(vc_loss l)
{
    return (unsigned)l < sizeof rows / sizeof *rows ? &rows[l] : &rows[VC_LOSS_MEAN];
}

int vc__loss_count(void) { return (int)(sizeof rows / sizeof *rows); }

int vc__loss_from_name(const char *name)
{
    for (size_t i = 0; name && i < sizeof rows / sizeof *rows; i++)
        if (!strcmp(rows[i].name, name)) return (int)i;
    return -1;
}

int vc_loss_impl_from_name(const char *s)
{
#define VC__LNAME(e, n) n,
    static const char *const names[] = {VC_LOSS_MAP(VC__LNAME) NULL};
#undef VC__LNAME
    for (int i = 0; s && names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

int vc__loss_from_option(const char *opt)
{
    for (size_t i = 0; opt && i < sizeof rows / sizeof *rows; i++)
        if (rows[i].option && !strcmp(rows[i].option, opt)) return (int)i;
    return -1;
}

int vc__loss_head(const vc_model *m)
{
    extern const vc_kind vc_kind_Linear, vc_kind_Scale, vc_kind_Tanh;
    int v = m->output;
    for (size_t i = m->ninst; i-- > 0;) {
        const vc_inst *in = &m->inst[i];
        if (in->out != v || in->nin != 1) return -1;
        if (in->kind == &vc_kind_Linear) return (int)i;
        if (in->kind != &vc_kind_Scale && in->kind != &vc_kind_Tanh) return -1; /* soft-capping: the kernel's softcap */
        v = in->in[0];
    }
    return -1;
}

size_t vc__loss_forward_end(const vc_build *b)
{
    const vc_loss_row *r = vc_loss_row_get(b->m->loss);
    if (b->train && b->m->loss == VC_LOSS_GRPO) return 0; /* grpo.c emits the forwards in the step's order */
    return b->train && r->fused && b->m->loss_head >= 0 ? (size_t)b->m->loss_head : b->m->ninst;
}

void vc__emit_loss(vc_build *b)
{
    b->cur_inst = -1;
    b->cur_region = -1;
    vc_loss_row_get(b->m->loss)->emit(b);
    if (b->st || b->loss_t < 0) return;
    if (b->prec->scaler && b->train) { /* scaler.scale(loss) */
        vc_op *o = vc_op_begin(b, "mul");
        vc_op_in(o, b->loss_t);
        b->loss_t = vc_op_out(o, vc_n_fixed(1), VC_DT_F32);
        vc_op_end(o);
    }
}

/* DPO's pieces that GRPO's loss (src/engine/grpo.c) runs on its own logits: the [.., :-1, :] view,
 * trl's selective_log_softmax and entropy_from_logits (the same utils.py functions) */
vc_t vc__trl_shift(vc_build *b, vc_t y, int64_t L, int64_t V) { return dpo_shift(b, y, L, V); }
vc_t vc__trl_logps(vc_build *b, vc_t s, int64_t L, int64_t V) { return dpo_logps(b, s, L, V); }
void vc__trl_entropy(vc_build *b, vc_t s, int64_t L, int64_t V, vc_dtype dt) { dpo_entropy(b, s, L, V, dt); }
