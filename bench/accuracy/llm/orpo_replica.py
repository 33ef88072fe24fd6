"""orpo_replica.py -- TRL's ORPO training step, as ORPOTrainer.compute_loss runs it, for measure_llm.py --loss orpo.

Written from huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8 (TRL below),
trl/experimental/orpo/orpo_trainer.py:
  DPODataCollatorWithPadding's batch: chosen_/rejected_ input_ids, attention_mask, labels, int64 [B, L]
      each (the prompt_* keys, unused by a decoder-only model's step, left out);
  ORPOTrainer.concatenated_inputs, concatenated_forward (its cross_entropy_loss), get_batch_logps,
      odds_ratio_loss, log1mexp, get_batch_loss_metrics (the default: beta 0.1, no aux loss; its 11 metrics,
      accelerator.gather_for_metrics being the identity in one process, alive until the .item() loop),
      compute_loss (no autocast: _peft_has_been_casted_to_bf16 False).
selective_log_softmax is TRL's (dpo_replica.py, trl/trainer/utils.py at the same commit).
The batch has no padding and no prompt (every token a completion token: labels = input_ids), so
attention_mask is all ones (reference.py's sdpa path takes no mask, as transformers'
_ignore_causal_mask_sdpa drops an all-ones one).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from dpo_replica import selective_log_softmax


def pad_to_length(tensor, length, pad_value, dim=-1):
    """trl/trainer/utils.py pad_to_length."""
    if tensor.size(dim) >= length:
        return tensor
    pad_size = list(tensor.shape)
    pad_size[dim] = length - tensor.size(dim)
    return torch.cat([tensor, pad_value * torch.ones(*pad_size, dtype=tensor.dtype, device=tensor.device)], dim=dim)


def log1mexp(x):
    t = -0.6931471805599453
    return torch.where(x < t, torch.log1p(-torch.exp(x)), torch.log(-torch.expm1(x)))


class ORPO:
    def __init__(self, model, batch, seq, vocab, beta=0.1, padding_value=0):
        assert batch % 2 == 0, "the batch counts the concatenated [chosen; rejected] sequences"
        self.model, self.beta, self.padding_value = model, beta, padding_value
        B = batch // 2
        self.batch = {}
        for side in ("chosen", "rejected"):
            ids = torch.randint(0, vocab, (B, seq), dtype=torch.int64)
            self.batch[side + "_input_ids"] = ids
            self.batch[side + "_attention_mask"] = torch.ones(B, seq, dtype=torch.int64)
            self.batch[side + "_labels"] = ids.clone()

    @staticmethod
    def concatenated_inputs(batch, padding_value=0):
        concatenated_batch = {}
        max_length = max(batch["chosen_input_ids"].shape[1], batch["rejected_input_ids"].shape[1])
        for k in batch:
            if k.startswith("chosen") and isinstance(batch[k], torch.Tensor):
                if "labels" in k:
                    pad_value = -100
                elif k.endswith("_input_ids"):
                    pad_value = padding_value
                elif k.endswith("_attention_mask"):
                    pad_value = 0
                concatenated_key = k.replace("chosen", "concatenated")
                concatenated_batch[concatenated_key] = pad_to_length(batch[k], max_length, pad_value=pad_value)
        for k in batch:
            if k.startswith("rejected") and isinstance(batch[k], torch.Tensor):
                if "labels" in k:
                    pad_value = -100
                elif k.endswith("_input_ids"):
                    pad_value = padding_value
                elif k.endswith("_attention_mask"):
                    pad_value = 0
                concatenated_key = k.replace("rejected", "concatenated")
                concatenated_batch[concatenated_key] = torch.cat(
                    (concatenated_batch[concatenated_key], pad_to_length(batch[k], max_length, pad_value=pad_value)),
                    dim=0,
                )
        return concatenated_batch

    def odds_ratio_loss(self, policy_chosen_logps, policy_rejected_logps):
        policy_chosen_logps = policy_chosen_logps.float()
        policy_rejected_logps = policy_rejected_logps.float()
        log_odds = (policy_chosen_logps - policy_rejected_logps) - (
            log1mexp(policy_chosen_logps) - log1mexp(policy_rejected_logps)
        )
        ratio = F.logsigmoid(log_odds)
        losses = self.beta * ratio
        chosen_rewards = self.beta * (policy_chosen_logps).detach()
        rejected_rewards = self.beta * (policy_rejected_logps).detach()
        return losses, chosen_rewards, rejected_rewards, torch.mean(ratio), torch.mean(log_odds)

    @staticmethod
    def get_batch_logps(logits, labels, average_log_prob=False):
        if logits.shape[:-1] != labels.shape:
            raise ValueError("Logits (batch and sequence length dim) and labels must have the same shape.")
        labels = labels[:, 1:].clone()
        logits = logits[:, :-1, :]
        loss_mask = labels != -100
        labels = torch.where(labels == -100, 0, labels)
        per_token_logps = selective_log_softmax(logits, labels)
        if average_log_prob:
            return (per_token_logps * loss_mask).sum(-1) / loss_mask.sum(-1)
        return (per_token_logps * loss_mask).sum(-1)

    def concatenated_forward(self, model, batch):
        concatenated_batch = self.concatenated_inputs(batch, padding_value=self.padding_value)
        len_chosen = batch["chosen_labels"].shape[0]
        # model(input_ids, attention_mask=all ones, use_cache=False): the all-ones mask is dropped
        outputs = model(concatenated_batch["concatenated_input_ids"])
        all_logits = outputs[1]

        def cross_entropy_loss(logits, labels):
            logits = logits[..., :-1, :].contiguous()
            labels = labels[..., 1:].contiguous()
            loss_fct = nn.CrossEntropyLoss()
            logits = logits.view(-1, logits.shape[-1])
            labels = labels.view(-1)
            loss = loss_fct(logits, labels)
            return loss

        labels = concatenated_batch["concatenated_input_ids"].clone()
        attention_mask = concatenated_batch["concatenated_attention_mask"]
        labels = torch.where(attention_mask == 1, labels, -100)
        chosen_nll_loss = cross_entropy_loss(all_logits[:len_chosen], labels[:len_chosen])
        all_logps = self.get_batch_logps(all_logits, concatenated_batch["concatenated_labels"], average_log_prob=True)
        chosen_logps = all_logps[:len_chosen]
        rejected_logps = all_logps[len_chosen:]
        chosen_logits = all_logits[:len_chosen, :-1, :]
        rejected_logits = all_logits[len_chosen:, :-1, :]
        return (chosen_logps, rejected_logps, chosen_logits, rejected_logits, chosen_nll_loss)

    def compute_loss(self):
        metrics = {}
        (policy_chosen_logps, policy_rejected_logps, policy_chosen_logits, policy_rejected_logits,
         policy_nll_loss) = self.concatenated_forward(self.model, self.batch)
        losses, chosen_rewards, rejected_rewards, log_odds_ratio, log_odds_chosen = self.odds_ratio_loss(
            policy_chosen_logps, policy_rejected_logps)
        loss = policy_nll_loss - losses.mean()
        reward_accuracies = (chosen_rewards > rejected_rewards).float()
        metrics["rewards/chosen"] = chosen_rewards.mean()
        metrics["rewards/rejected"] = rejected_rewards.mean()
        metrics["rewards/accuracies"] = reward_accuracies.mean()
        metrics["rewards/margins"] = (chosen_rewards - rejected_rewards).mean()
        metrics["logps/rejected"] = policy_rejected_logps.detach().mean()
        metrics["logps/chosen"] = policy_chosen_logps.detach().mean()
        # gather_for_metrics(policy_*_logits.detach().mean()).mean(): a second mean of the 0-d mean
        metrics["logits/rejected"] = policy_rejected_logits.detach().mean().mean()
        metrics["logits/chosen"] = policy_chosen_logits.detach().mean().mean()
        metrics["nll_loss"] = policy_nll_loss.detach().mean()
        metrics["log_odds_ratio"] = log_odds_ratio.detach().mean()
        metrics["log_odds_chosen"] = log_odds_chosen.detach().mean()
        for k, v in metrics.items():
            metrics[k] = v.item()
        return loss
