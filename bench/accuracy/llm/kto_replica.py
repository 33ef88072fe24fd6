"""kto_replica.py -- TRL's KTO training step, as KTOTrainer._compute_loss runs it, for measure_llm.py --loss kto.

Written from huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8 (TRL below), trl/trainer/kto_trainer.py:
  DataCollatorForUnpairedPreference.torch_call: input_ids, attention_mask, completion_mask and the KL_ ones
      (each example's prompt with the next example's completion: get_kl_completion_ids), int64 [B, L] each,
      and label [B] (bool);
  KTOTrainer._compute_kl_logps, _compute_loss (the defaults: loss_type "kto", so calculate_KL; beta 0.1,
      desirable and undesirable weights 1.0; no precomputed reference log-probs; no liger; no aux loss);
  a PEFT model with no ref_model uses the model with its adapters disabled (use_adapter(model, None));
  otherwise a frozen reference in eval mode (dpo_replica.py's, as DPOTrainer's).
selective_log_softmax and entropy_from_logits are TRL's (dpo_replica.py, trl/trainer/utils.py at the same
commit). The batch has no prompt and no padding (completion_mask all ones, attention_mask all ones: dropped by
transformers' sdpa path, as reference.py runs it); the first half of the labels desirable. gather_for_metrics
is the identity on one process.
"""
import torch
import torch.nn.functional as F

from dpo_replica import adapters_disabled, entropy_from_logits, no_checkpointing, selective_log_softmax
import reference as R


class KTO:
    def __init__(self, model, batch, seq, vocab, ref_model=None, beta=0.1):
        assert batch % 2 == 0, "the batch's first half desirable, the second not"
        self.model, self.ref_model, self.beta = model, ref_model, beta
        self.peft = any(isinstance(m, R.LoraLinear) for m in model.modules())
        self.desirable_weight = self.undesirable_weight = 1.0
        ids = torch.randint(0, vocab, (batch, seq), dtype=torch.int64)
        kl = torch.cat((ids[-1:], ids[:-1]), 0)  # completions cycled by one within the batch
        self.batch = {
            "input_ids": ids, "attention_mask": torch.ones(batch, seq, dtype=torch.int64),
            "completion_mask": torch.ones(batch, seq, dtype=torch.int64),
            "KL_input_ids": kl, "KL_attention_mask": torch.ones(batch, seq, dtype=torch.int64),
            "KL_completion_mask": torch.ones(batch, seq, dtype=torch.int64),
            "label": torch.tensor([True] * (batch // 2) + [False] * (batch // 2)),
        }

    def _compute_kl_logps(self, model, batch):
        with torch.no_grad():
            KL_logits = model(batch["KL_input_ids"])[1]  # model(**KL_model_kwargs).logits
        shift_KL_logits = KL_logits[:, :-1, :]
        KL_per_token_logps = selective_log_softmax(shift_KL_logits, batch["KL_input_ids"][:, 1:])
        KL_per_token_logps[batch["KL_completion_mask"][:, 1:] == 0] = 0.0
        KL_logps = KL_per_token_logps.sum(-1)
        return KL_logps

    def compute_loss(self):
        batch = self.batch
        labels = batch["label"]
        num_chosen = labels.sum()
        num_rejected = len(labels) - num_chosen
        KL_logps = self._compute_kl_logps(self.model, batch)
        outputs = self.model(batch["input_ids"])
        shift_logits = outputs[1][:, :-1, :]
        per_token_logps = selective_log_softmax(shift_logits, batch["input_ids"][:, 1:])
        per_token_logps[batch["completion_mask"][:, 1:] == 0] = 0.0
        completion_logps = per_token_logps.sum(-1)
        bool_labels = torch.as_tensor(batch["label"], dtype=torch.bool)
        chosen_idx = torch.nonzero(bool_labels, as_tuple=False).view(-1)
        rejected_idx = torch.nonzero(~bool_labels, as_tuple=False).view(-1)
        chosen_logps = completion_logps.index_select(0, chosen_idx)
        rejected_logps = completion_logps.index_select(0, rejected_idx)
        model = self.model
        with torch.no_grad(), no_checkpointing(model):
            if self.peft and self.ref_model is None:
                with adapters_disabled(model):
                    ref_KL_logps = self._compute_kl_logps(model, batch)
                    ref_outputs = model(batch["input_ids"])
            else:
                ref_KL_logps = self._compute_kl_logps(self.ref_model, batch)
                ref_outputs = self.ref_model(batch["input_ids"])
        ref_shift_logits = ref_outputs[1][:, :-1, :]
        ref_per_token_logps = selective_log_softmax(ref_shift_logits, batch["input_ids"][:, 1:])
        ref_per_token_logps[batch["completion_mask"][:, 1:] == 0] = 0.0
        ref_completion_logps = ref_per_token_logps.sum(-1)
        ref_chosen_logps = ref_completion_logps.index_select(0, chosen_idx)
        ref_rejected_logps = ref_completion_logps.index_select(0, rejected_idx)
        kl = (KL_logps - ref_KL_logps).mean().detach()
        kl = kl.mean().clamp(min=0)
        chosen_logratios = chosen_logps - ref_chosen_logps
        chosen_losses = 1 - F.sigmoid(self.beta * (chosen_logratios - kl))
        chosen_rewards = self.beta * chosen_logratios.detach()
        rejected_logratios = rejected_logps - ref_rejected_logps
        rejected_losses = 1 - F.sigmoid(self.beta * (kl - rejected_logratios))
        rejected_rewards = self.beta * rejected_logratios.detach()
        losses = torch.cat((self.desirable_weight * chosen_losses, self.undesirable_weight * rejected_losses), 0)
        _ = kl.item()
        per_token_entropy = entropy_from_logits(shift_logits.detach())
        mask = batch["completion_mask"][:, 1:]
        entropy_sum = (per_token_entropy * mask).sum()
        total_tokens = mask.sum()
        entropy_sum = entropy_sum.sum()
        total_tokens = total_tokens.sum()
        _ = (entropy_sum / total_tokens).item() if total_tokens > 0 else 0.0
        _ = batch["attention_mask"].sum().sum().item()
        shift_completion_mask = batch["completion_mask"][:, 1:]
        chosen_logits = shift_logits.detach().index_select(0, chosen_idx)
        rejected_logits = shift_logits.detach().index_select(0, rejected_idx)
        chosen_mask = shift_completion_mask.index_select(0, chosen_idx)
        rejected_mask = shift_completion_mask.index_select(0, rejected_idx)
        total_chosen_logits = chosen_logits[chosen_mask.bool()].mean(-1).sum()
        total_chosen_tokens = chosen_mask.sum()
        total_rejected_logits = rejected_logits[rejected_mask.bool()].mean(-1).sum()
        total_rejected_tokens = rejected_mask.sum()
        _ = total_chosen_logits.sum().item(), total_chosen_tokens.sum().item()
        _ = total_rejected_logits.sum().item(), total_rejected_tokens.sum().item()
        all_num_chosen = num_chosen.sum().item()
        all_num_rejected = num_rejected.sum().item()
        if all_num_chosen > 0:
            _ = chosen_rewards.nansum().nansum().item() / all_num_chosen
            _ = chosen_logps.nansum().nansum().item() / all_num_chosen
        if all_num_rejected > 0:
            _ = rejected_rewards.nansum().nansum().item() / all_num_rejected
            _ = rejected_logps.nansum().nansum().item() / all_num_rejected
        loss = losses.nanmean()
        return loss
