"""dpo_replica.py -- TRL's DPO training step, as DPOTrainer._compute_loss runs it, for measure_llm.py --loss dpo.

Written from huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8 (TRL below):
  trl/trainer/dpo_trainer.py DataCollatorForPreference.torch_call: input_ids = prompt+chosen
      sequences then prompt+rejected ones, [2B, L]; attention_mask and completion_mask int64 [2B, L]
  trl/trainer/dpo_trainer.py DPOTrainer._compute_loss (the default: loss_type ["sigmoid"],
      f_divergence_type reverse_kl, ld_alpha None, use_weighting False, no liger, no aux loss)
  trl/trainer/utils.py selective_log_softmax, entropy_from_logits
  trl/trainer/dpo_trainer.py __init__: a PEFT model with no ref_model uses the model with its
      adapters disabled (use_adapter(model, adapter_name=None)); otherwise a frozen reference,
      create_model_from_path(...) in eval mode (prepare_model(evaluation_mode=True)); with
      precompute_ref_log_probs=True no reference is kept and the batch carries ref_*_logps.
The batch here has no padding and no prompt (every token a completion token: completion_mask
all ones), so attention_mask is all ones (reference.py's sdpa path takes no mask, as
transformers' _ignore_causal_mask_sdpa drops an all-ones one) and the masked index_put_ selects
nothing. The reference forward disables checkpointing (disable_gradient_checkpointing).
"""
import contextlib

import torch
import torch.nn.functional as F

import reference as R


def selective_log_softmax(logits, index):
    """trl/trainer/utils.py selective_log_softmax, as written at the pinned commit."""
    squeeze = index.ndim == logits.ndim - 1
    if squeeze:
        index = index.unsqueeze(-1)
    if logits.dtype in [torch.float32, torch.float64]:
        selected_logits = torch.gather(logits, dim=-1, index=index)
        # loop to reduce peak mem consumption
        logsumexp_values = torch.stack([torch.logsumexp(lg, dim=-1) for lg in logits])
        per_token_logps = selected_logits - logsumexp_values.unsqueeze(-1)
    else:
        per_token_logps = []
        for row_logits, row_labels in zip(logits, index):  # loop to reduce peak mem consumption
            row_logps = F.log_softmax(row_logits, dim=-1)
            row_per_token_logps = row_logps.gather(dim=-1, index=row_labels)
            per_token_logps.append(row_per_token_logps)
        per_token_logps = torch.stack(per_token_logps)
    if squeeze:
        per_token_logps = per_token_logps.squeeze(-1)
    return per_token_logps


def entropy_from_logits(logits, chunk_size=128):
    """trl/trainer/utils.py entropy_from_logits."""
    original_shape = logits.shape[:-1]
    num_classes = logits.shape[-1]
    flat_logits = logits.reshape(-1, num_classes)
    entropies = []
    for chunk in flat_logits.split(chunk_size, dim=0):
        logps = F.log_softmax(chunk, dim=-1)
        chunk_entropy = -(torch.exp(logps) * logps).sum(-1)
        entropies.append(chunk_entropy)
    entropies = torch.cat(entropies, dim=0)
    return entropies.reshape(original_shape)


@contextlib.contextmanager
def adapters_disabled(model):
    """peft PeftModel.disable_adapter (TRL's use_adapter(model, None)): each LoRA Linear's forward
    returns base_layer(x) (peft tuners/lora/layer.py Linear.forward, self.disable_adapters)."""
    mods = [m for m in model.modules() if isinstance(m, R.LoraLinear)]
    for m in mods:
        m.forward = m.base_layer.forward
    try:
        yield
    finally:
        for m in mods:
            del m.forward


@contextlib.contextmanager
def no_checkpointing(model):
    """TRL's disable_gradient_checkpointing(self.model, ...)."""
    was = model.gradient_checkpointing
    model.gradient_checkpointing = False
    try:
        yield
    finally:
        model.gradient_checkpointing = was


class DPO:
    """The step's loss: compute_loss() as DPOTrainer._compute_loss returns it (the loss only)."""

    def __init__(self, model, batch, seq, vocab, ref_model=None, precompute=False, beta=0.1):
        assert batch % 2 == 0, "the batch counts the concatenated [chosen; rejected] sequences"
        self.model, self.ref_model, self.precompute, self.beta = model, ref_model, precompute, beta
        self.peft = any(isinstance(m, R.LoraLinear) for m in model.modules())
        assert self.peft or ref_model is not None or precompute, \
            "a reference: LoRA (its adapters disabled), a frozen copy, or precomputed log-probs"
        self.inputs = {
            "input_ids": torch.randint(0, vocab, (batch, seq), dtype=torch.int64),
            "attention_mask": torch.ones(batch, seq, dtype=torch.int64),
            "completion_mask": torch.ones(batch, seq, dtype=torch.int64),
        }
        if precompute:  # DataCollatorForPreference: torch.tensor of python floats
            self.inputs["ref_chosen_logps"] = torch.tensor([-1.0] * (batch // 2))
            self.inputs["ref_rejected_logps"] = torch.tensor([-1.0] * (batch // 2))

    def compute_loss(self):
        model, inputs = self.model, self.inputs
        outputs = model(inputs["input_ids"])  # model(**model_kwargs), use_cache=False: (None, logits)
        input_ids = inputs["input_ids"]
        completion_mask = inputs["completion_mask"]
        shift_logits = outputs[1][..., :-1, :]
        shift_labels = input_ids[..., 1:]
        shift_completion_mask = completion_mask[..., 1:]
        per_token_logps = selective_log_softmax(shift_logits, shift_labels)
        per_token_logps[shift_completion_mask == 0] = 0.0
        logps = per_token_logps.sum(dim=1)
        chosen_logps, rejected_logps = logps.chunk(2, dim=0)
        if self.precompute:
            ref_chosen_logps, ref_rejected_logps = inputs["ref_chosen_logps"], inputs["ref_rejected_logps"]
        else:
            with torch.no_grad(), no_checkpointing(model):
                if self.peft and self.ref_model is None:
                    with adapters_disabled(model):
                        ref_outputs = model(inputs["input_ids"])
                else:
                    ref_outputs = self.ref_model(inputs["input_ids"])
            ref_shift_logits = ref_outputs[1][..., :-1, :]
            ref_per_token_logps = selective_log_softmax(ref_shift_logits, shift_labels)
            ref_per_token_logps[shift_completion_mask == 0] = 0.0
            ref_logps = ref_per_token_logps.sum(dim=1)
            ref_chosen_logps, ref_rejected_logps = ref_logps.chunk(2, dim=0)
        chosen_logratios = chosen_logps - ref_chosen_logps
        rejected_logratios = rejected_logps - ref_rejected_logps
        chosen_scores, rejected_scores = chosen_logratios, rejected_logratios  # reverse_kl
        delta_score = chosen_scores - rejected_scores
        loss = 0.0
        per_sequence_loss = -F.logsigmoid(self.beta * delta_score)  # loss_type "sigmoid"
        loss += per_sequence_loss.mean() * 1.0
        # the metrics, before _compute_loss returns
        per_token_entropy = entropy_from_logits(shift_logits.detach())
        mask = shift_completion_mask
        entropy_sum = (per_token_entropy * mask).sum()
        total_tokens = mask.sum()
        _ = (entropy_sum / total_tokens).item() if total_tokens > 0 else 0.0
        chosen_logits, rejected_logits = shift_logits.detach().chunk(2, dim=0)
        chosen_mask, rejected_mask = shift_completion_mask.chunk(2, dim=0)
        total_chosen_logits = chosen_logits[chosen_mask.bool()].mean(-1).sum()
        total_rejected_logits = rejected_logits[rejected_mask.bool()].mean(-1).sum()
        _ = total_chosen_logits.item(), total_rejected_logits.item()
        predictions = chosen_logits.argmax(dim=-1)
        chosen_mask = shift_completion_mask[: len(shift_completion_mask) // 2].bool()
        chosen_labels = shift_labels[: len(shift_labels) // 2]
        correct_predictions = (predictions == chosen_labels) & chosen_mask
        _ = (correct_predictions.sum() / chosen_mask.sum()).item()
        chosen_rewards = self.beta * chosen_logratios.detach()
        rejected_rewards = self.beta * rejected_logratios.detach()
        _ = chosen_rewards.mean().item(), rejected_rewards.mean().item()
        _ = (chosen_rewards > rejected_rewards).float().mean().item()
        _ = (chosen_rewards - rejected_rewards).mean().item()
        _ = chosen_logps.mean().item(), rejected_logps.mean().item()
        return loss
