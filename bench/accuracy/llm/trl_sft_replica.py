"""trl_sft_replica.py -- TRL SFTTrainer's default loss, loss_type="chunked_nll", for
measure_llm.py --loss chunked-nll.

Written from huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8, statement by statement
(nothing from vramcalc's engine was read):

  trl/trainer/sft_config.py SFTConfig.__post_init__: loss_type None -> "chunked_nll" (unless
    use_liger_kernel).
  trl/trainer/sft_trainer.py
    _CHUNKED_LM_HEAD_CHUNK_SIZE = 256 (l.86)
    _chunk (l.99-114)                          -> _chunk below
    _chunked_cross_entropy_loss (l.117-234)    -> chunked_cross_entropy_loss below
    _patch_chunked_ce_lm_head (l.237-378): with labels, the backbone's last_hidden_state and
      lm_head.weight (no bias for these models) go to _chunked_cross_entropy_loss with the
      Trainer's num_items_in_batch; logits=None is returned, `outputs` (the hidden states) kept
      until the patched forward returns -> measure_llm.py replaces the model's head call.
    SFTTrainer.__init__ (l.1298-1319) installs the patch; compute_loss (l.1700-1830) logs the
      metrics (entropy_sum / num_valid_tokens, num_correct_tokens) and returns the loss.
  DataCollatorForLanguageModeling (padding_free False): input_ids, attention_mask (all ones, no
    padding here) and labels (= input_ids, no -100), int64 [B, L] each, resident.

torch.utils.checkpoint(..., use_reentrant=False) is 2.x's non-reentrant checkpoint with early stop:
vctorch._checkpoint2x (torch 1.13 re-runs the whole block). Not replicated: the n_valid == 0 branch
(never taken: every label counts), maybe_gather_lm_head_ctx (a no-op without DeepSpeed ZeRO-3), a
DTensor head (FSDP2's full_tensor()), logit_scale / final_logit_softcapping (1.0 / None for the
Llama-style models measured).
"""
import torch
import torch.nn.functional as F

import vctorch

CHUNK_SIZE = 256  # _CHUNKED_LM_HEAD_CHUNK_SIZE


def _chunk(h, w, b, lbl, logit_scale, final_logit_softcapping):
    logits = h.float() @ w.float().t()
    if b is not None:
        logits = logits + b.float()
    if logit_scale != 1.0:
        logits = logits * logit_scale
    if final_logit_softcapping is not None:
        logits = final_logit_softcapping * torch.tanh(logits / final_logit_softcapping)
    log_p = F.log_softmax(logits, dim=-1)
    chunk_loss = F.nll_loss(log_p, lbl, ignore_index=-100, reduction="sum")
    valid = lbl != -100
    chunk_correct = ((logits.argmax(dim=-1) == lbl) & valid).sum().float()
    chunk_entropy = (-(log_p.exp() * log_p).sum(dim=-1) * valid).sum()
    return chunk_loss, chunk_correct, chunk_entropy


def chunked_cross_entropy_loss(hidden_states, lm_head_weight, chunk_size, labels=None, shift_labels=None,
                               num_items_in_batch=None, logit_scale=1.0, final_logit_softcapping=None,
                               lm_head_bias=None):
    if labels is None and shift_labels is None:
        raise ValueError("At least one of `labels` or `shift_labels` must be provided.")
    if shift_labels is not None:
        hidden = hidden_states.reshape(-1, hidden_states.size(-1))
        labels = shift_labels.reshape(-1)
    else:
        hidden = hidden_states[..., :-1, :].reshape(-1, hidden_states.size(-1))
        labels = labels[..., 1:].reshape(-1)

    valid = labels != -100
    n_valid_tensor = valid.sum()

    correct = hidden.new_zeros((), dtype=torch.float32)
    entropy_sum = hidden.new_zeros((), dtype=torch.float32)
    if n_valid_tensor == 0:
        raise ValueError("trl_sft_replica: the whole batch masked is not replicated")

    order = valid.to(torch.int8).argsort(descending=True, stable=True)
    hidden = hidden[order]
    labels = labels[order]

    n_padded = (n_valid_tensor / chunk_size).ceil().to(torch.int64) * chunk_size

    loss = hidden.new_zeros((), dtype=torch.float32)

    for start in range(0, n_padded, chunk_size):
        h_chunk = hidden[start : start + chunk_size]
        lbl_chunk = labels[start : start + chunk_size]
        chunk_loss, chunk_correct, chunk_entropy = vctorch._checkpoint2x(
            _chunk,
            h_chunk,
            lm_head_weight,
            lm_head_bias,
            lbl_chunk,
            logit_scale,
            final_logit_softcapping,
        )
        loss = loss + chunk_loss
        correct = correct + chunk_correct
        entropy_sum = entropy_sum + chunk_entropy

    if num_items_in_batch is None:
        loss = loss / n_valid_tensor
    else:
        loss = loss / num_items_in_batch
    return loss, correct, entropy_sum, n_valid_tensor
