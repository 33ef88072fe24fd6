"""grpo_replica.py -- one GRPOTrainer training step, its generation included, for measure_llm.py --loss grpo.

Written from huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8 (TRL below), trl/trainer/grpo_trainer.py,
with GRPOConfig's defaults (trl/trainer/grpo_config.py: use_vllm False, num_iterations 1, steps_per_generation =
gradient_accumulation_steps = 1, temperature 1.0, top_p 1.0, top_k 0, repetition_penalty 1.0, loss_type "dapo",
epsilon 0.2, importance_sampling_level "token", scale_rewards "group", entropy_coef 0.0, top_entropy_quantile 1.0,
mask_truncated_completions False); beta is the caller's (GRPOConfig's default 0.0: no reference model):
  GRPOTrainer._prepare_inputs: every steps_per_generation * num_iterations steps, _generate_and_score_completions
      on the generation batch, shuffle_sequence_dict, split_tensor_dict(steps_per_generation), the chunks kept in
      self._buffered_inputs until the next generation replaces them (utils.py shuffle_sequence_dict: v[randperm]);
      with gradient_accumulation_steps N (steps_per_generation left None: GRPOConfig.__post_init__ sets it to N and
      generation_batch_size = per_device_train_batch_size * N on one process) the generation batch is batch * N
      (get_train_dataloader: batch_size = _train_batch_size * steps_per_generation; RepeatSampler
      repeat_count = num_iterations * steps_per_generation) and micro-step k trains on _buffered_inputs[k % N];
  _generate_single_turn (the regular transformers path): left-padded prompt ids and attention mask,
      unwrap_model_for_generation (gradient checkpointing off around it: trl/models/utils.py
      _unwrap_model_for_generation, since TRL PR #3882, v0.22.0) + torch.no_grad(): unwrapped_model.generate(...) with
      GenerationConfig(max_new_tokens=max_completion_length, do_sample=True, ...) -- no logits processor at these
      defaults, so transformers' _sample takes probs = softmax(next_token_scores) and torch.multinomial(probs, 1);
      then the eos mask (is_eos, eos_idx, sequence_indices, completion_mask);
  _generate_and_score_completions: the padded prompt/completion ids and masks, num_items_in_batch,
      prompt_completion_ids = cat, attention_mask = cat; with torch.no_grad() and disable_gradient_checkpointing:
      old_per_token_logps None (gradient_accumulation_steps % generate_every == 0), ref_per_token_logps when
      beta != 0 (the frozen ref_model, or a PEFT model with its adapters disabled: use_adapter(model, None)) by
      _get_per_token_logps_and_entropies in chunks of per_device_train_batch_size; the rewards (one reward
      function), group mean and std (nanstd), advantages, the output dict;
  _compute_loss: input_ids = cat, attention_mask = cat, _get_per_token_logps_and_entropies(compute_entropy=True):
      model(..., logits_to_keep=C + 1, use_cache=False), logits[:, :-1, :], logits[:, -C:, :], logits.div_(T),
      selective_log_softmax, entropy_from_logits under no_grad (entropy_coef 0), torch.cat of the one chunk's;
      old = per_token_logps.detach(), coef_1 = exp(log_ratio), per_token_kl (beta != 0), coef_2 = clamp, the
      two-sided min, "dapo": (per_token_loss * mask).sum() / num_items_in_batch.clamp(min=1.0); the metrics.
selective_log_softmax and entropy_from_logits are TRL's utils.py functions (dpo_replica.py, the same commit).

What the replica does not run: the prompts are random token ids of one length (no padding: attention masks all
ones, dropped by reference.py's sdpa path as transformers' _ignore_causal_mask_sdpa drops them); no completion
ends early (the eos id is never sampled: every completion is max_completion_length tokens, the longest step);
the host-side work (tokenizing, decoding, the reward function's Python, .tolist()) and the logging-only metric
tensors made between generation and the reference pass (prompt/completion lengths, the reward statistics) are
not made: they are a few [B] tensors, allocated and freed while less is alive than in the passes around them.
"""
import torch
import torch.nn.functional as F

from dpo_replica import adapters_disabled, entropy_from_logits, no_checkpointing, selective_log_softmax
import reference as R


class GRPO:
    def __init__(self, model, batch, prompt, completion, vocab, ref_model=None, beta=0.0, num_generations=2,
                 temperature=1.0, epsilon=0.2, eos=None, steps_per_generation=1):
        self.S = steps_per_generation  # = gradient_accumulation_steps (GRPOConfig.__post_init__)
        self.GB = batch * self.S  # generation_batch_size
        assert self.GB % num_generations == 0, "generation_batch_size % num_generations == 0 (GRPOConfig)"
        self.model, self.ref_model, self.beta = model, ref_model, beta
        self.B, self.P, self.C, self.V, self.G = batch, prompt, completion, vocab, num_generations
        self._step = 0  # GRPOTrainer._step: micro-steps trained (training_step adds 1 after each)
        self.temperature, self.epsilon_low, self.epsilon_high = temperature, epsilon, epsilon
        self.peft = any(isinstance(m, R.LoraLinear) for m in model.modules())
        self.eos = eos if eos is not None else vocab - 1
        self._buffered_inputs = None
        self.calls, self.on_phase = 0, None  # measure_llm.py: on_phase(name, optimizer step) after the generation
        # the dataset's prompts: num_generations copies of batch / num_generations prompts (RepeatSampler)
        self.prompt_ids_list = [[int(x) for x in torch.randint(0, vocab - 1, (prompt,))]
                                for _ in range(self.GB // num_generations)]

    # ---- generation: transformers GenerationMixin._sample with do_sample=True (measure_llm.py's greedy loop,
    # the argmax replaced by softmax + multinomial) ----
    def _sample(self, input_ids, attention_mask):
        model, C = self.model, self.C
        B, P = input_ids.shape
        cache = R.DynamicCache(["full_attention"] * model.cfg.num_hidden_layers, None)
        cache_position = torch.arange(P, dtype=torch.int64)
        unfinished = torch.ones(B, dtype=torch.long)
        pad = torch.tensor(0, dtype=torch.long)
        # the model is in training mode here (Trainer.training_step calls model.train() before _prepare_inputs), but
        # unwrap_model_for_generation has turned gradient checkpointing off (_generate_single_turn below), so
        # transformers' GradientCheckpointingLayer.__call__ keeps past_key_values and the DynamicCache grows
        assert not model.gradient_checkpointing, "unwrap_model_for_generation turns checkpointing off"
        for _ in range(C):
            cur = input_ids[:, -cache_position.shape[0]:]
            _, logits = model(cur, past_key_values=cache, cache_position=cache_position,
                              attention_mask=attention_mask, logits_to_keep=1)
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((B, 1))], dim=-1)
            cache_position = cache_position[-1:] + 1
            next_token_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32)
            next_token_scores = next_token_logits  # LogitsProcessorList(): empty at TRL's defaults
            probs = F.softmax(next_token_scores, dim=-1)
            probs[:, self.eos] = 0.0  # (replica) no completion ends early: see the docstring
            next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
            next_tokens = next_tokens * unfinished + pad * (1 - unfinished)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            del logits
        del cache
        return input_ids

    def _generate_single_turn(self, prompt_ids):
        # pad(..., padding_side="left") of equal-length prompts, then super()._prepare_inputs (to the device)
        padded_ids = torch.tensor(prompt_ids, dtype=torch.int64)
        attention_mask = torch.ones_like(padded_ids)
        # unwrap_model_for_generation (trl/models/utils.py _unwrap_model_for_generation @ f2cd5771, l.133-136 and
        # 151-152): is_gradient_checkpointing -> gradient_checkpointing_disable() before the yield,
        # gradient_checkpointing_enable() after it; then torch.no_grad() around generate()
        with no_checkpointing(self.model), torch.no_grad():
            prompt_completion_ids = self._sample(padded_ids, attention_mask)
        prompt_length = padded_ids.size(1)
        completion_ids = prompt_completion_ids[:, prompt_length:]
        is_eos = completion_ids == self.eos
        eos_idx = torch.full((is_eos.size(0),), is_eos.size(1), dtype=torch.long)
        eos_idx[is_eos.any(dim=1)] = is_eos.int().argmax(dim=1)[is_eos.any(dim=1)]
        sequence_indices = torch.arange(is_eos.size(1)).expand(is_eos.size(0), -1)
        completion_mask = (sequence_indices <= eos_idx.unsqueeze(1)).int()
        lists = completion_ids.tolist(), completion_mask.tolist()  # (host side: c[m].tolist())
        return [[c for c, m in zip(cs, ms) if m] for cs, ms in zip(*lists)]

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False):
        batch_size = batch_size or input_ids.size(0)
        all_logps, all_entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            input_ids_batch = input_ids[start:start + batch_size]
            attention_mask_batch = attention_mask[start:start + batch_size]  # all ones: reference.py drops it
            _, logits = model(input_ids_batch, logits_to_keep=logits_to_keep + 1)
            logits = logits[:, :-1, :]
            logits = logits[:, -logits_to_keep:, :]
            logits.div_(self.temperature)
            completion_ids = input_ids_batch[:, -logits_to_keep:]
            logps = selective_log_softmax(logits, completion_ids)
            all_logps.append(logps)
            if compute_entropy:
                with torch.no_grad():  # _entropy_bonus_enabled is False at entropy_coef 0.0
                    entropies = entropy_from_logits(logits)
                all_entropies.append(entropies)
            del attention_mask_batch
        logps = torch.cat(all_logps, dim=0)
        entropies = torch.cat(all_entropies, dim=0) if compute_entropy else None
        return logps, entropies

    def _generate_and_score_completions(self):
        prompt_ids_list = [p for p in self.prompt_ids_list for _ in range(self.G)]  # RepeatSampler
        completion_ids_list = self._generate_single_turn(prompt_ids_list)
        if self.on_phase is not None:
            self.on_phase("generate", (self.calls - 1) // self.S + 1)
        prompt_ids = torch.tensor(prompt_ids_list, dtype=torch.int64)  # pad(..., "left"): equal lengths
        prompt_mask = torch.ones_like(prompt_ids)
        completion_ids = torch.tensor(completion_ids_list, dtype=torch.int64)  # pad(..., "right")
        completion_mask = torch.ones_like(completion_ids)
        loss_mask = completion_mask
        num_items_in_batch = loss_mask.sum()  # accelerator.gather(...).sum() on one process
        prompt_completion_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
        logits_to_keep = completion_ids.size(1)
        with torch.no_grad(), no_checkpointing(self.model):
            old_per_token_logps = None  # gradient_accumulation_steps % generate_every == 0, no vLLM
            ref_per_token_logps = None
            if self.beta != 0.0:
                if self.ref_model is not None:
                    ref_per_token_logps, _ = self._get_per_token_logps_and_entropies(
                        self.ref_model, prompt_completion_ids, attention_mask, logits_to_keep, batch_size=self.B)
                    # (batch_size: per_device_train_batch_size, chunks of the generation batch)
                else:
                    with adapters_disabled(self.model):
                        ref_per_token_logps, _ = self._get_per_token_logps_and_entropies(
                            self.model, prompt_completion_ids, attention_mask, logits_to_keep, batch_size=self.B)
        del prompt_completion_ids, attention_mask
        # _calculate_rewards: rewards_per_func = torch.zeros(len(prompts), len(reward_funcs)), gathered
        rewards_per_func = torch.zeros(self.GB, 1)
        rewards_per_func[:, 0] = torch.tensor([float(len(c)) for c in completion_ids_list])
        unscorable_mask = torch.isnan(rewards_per_func).all(dim=1)
        rewards = (rewards_per_func * torch.ones(1).unsqueeze(0)).nansum(dim=1)  # sum_then_normalize
        rewards[unscorable_mask] = torch.nan
        mean_grouped_rewards = torch.nanmean(rewards.view(-1, self.G), dim=1)
        mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(self.G, dim=0)
        grouped = rewards.view(-1, self.G)  # nanstd(rewards.view(-1, num_generations), dim=1)
        mean = torch.nanmean(grouped, dim=1, keepdim=True)
        variance = torch.nanmean((grouped - mean) ** 2, dim=1, keepdim=True)
        count = torch.sum(~torch.isnan(grouped), dim=1, keepdim=True)
        correction = count / (count - 1)
        correction = torch.where(count > 1, correction, torch.full_like(correction, float("nan")))
        variance *= correction
        std_rewards = torch.sqrt(variance).squeeze(1).repeat_interleave(self.G, dim=0)
        advantages = rewards - mean_grouped_rewards
        advantages = advantages / (std_rewards + 1e-4)
        advantages = torch.nan_to_num(advantages, nan=0.0)
        advantages = advantages[slice(0, self.GB)]
        del rewards_per_func, unscorable_mask, rewards, mean_grouped_rewards, grouped, mean, variance, count
        del correction, std_rewards
        output = {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
                  "completion_mask": completion_mask, "advantages": advantages,
                  "num_items_in_batch": num_items_in_batch}
        if ref_per_token_logps is not None:
            output["ref_per_token_logps"] = ref_per_token_logps
        return output

    def _prepare_inputs(self):
        generate_every = self.S  # steps_per_generation * num_iterations (1)
        if self._step % generate_every == 0 or self._buffered_inputs is None:
            generation_batch = self._generate_and_score_completions()
            # shuffle_sequence_dict: permutation = torch.randperm(batch_size); v[permutation] (0-d tensors kept)
            permutation = torch.randperm(self.GB)
            generation_batch = {k: (v if v.ndim == 0 else v[permutation]) for k, v in generation_batch.items()}
            del permutation
            # split_tensor_dict(generation_batch, steps_per_generation): chunk i is rows i*B:(i+1)*B (a slice view)
            self._buffered_inputs = [{k: (v if v.ndim == 0 else v[i * self.B:(i + 1) * self.B])
                                      for k, v in generation_batch.items()} for i in range(self.S)]
            del generation_batch
        return self._buffered_inputs[self._step % self.S]

    def compute_loss(self):
        """Trainer.training_step -> GRPOTrainer._prepare_inputs, compute_loss -> _compute_loss (the loss only;
        the caller runs the backward)."""
        self.calls += 1
        inputs = self._prepare_inputs()
        model = self.model
        prompt_ids, prompt_mask = inputs["prompt_ids"], inputs["prompt_mask"]
        completion_ids, completion_mask = inputs["completion_ids"], inputs["completion_mask"]
        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
        logits_to_keep = completion_ids.size(1)
        mask = completion_mask
        per_token_logps, entropies = self._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, logits_to_keep, compute_entropy=True)
        advantages = inputs["advantages"]
        if advantages.dim() == 1:
            advantages = advantages.unsqueeze(1)
        old_per_token_logps = per_token_logps.detach()
        log_ratio = per_token_logps - old_per_token_logps
        log_importance_weights = log_ratio  # importance_sampling_level "token"
        coef_1 = torch.exp(log_importance_weights)
        if self.beta != 0.0:
            ref_per_token_logps = inputs["ref_per_token_logps"]
            per_token_kl = (
                torch.exp(ref_per_token_logps - per_token_logps) - (ref_per_token_logps - per_token_logps) - 1
            )
        coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)
        per_token_loss1 = coef_1 * advantages
        per_token_loss2 = coef_2 * advantages
        per_token_loss = -torch.min(per_token_loss1, per_token_loss2)
        if self.beta != 0.0:
            per_token_loss = per_token_loss + self.beta * per_token_kl
        normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / 1  # / accelerator.num_processes
        loss = (per_token_loss * mask).sum() / normalizer
        policy_loss = loss.detach()
        del policy_loss

        # the metrics (global_masked_mean: (x * mask).sum(), mask.sum().float(), stack, reduce on one process)
        def global_masked_mean(x):
            local_sum, local_count = (x * mask).sum(), mask.sum().float()
            totals = torch.stack([local_sum, local_count])
            return (totals[0] / totals[1].clamp(min=1.0)).item()

        def masked_seq_mean(x):
            return (x * mask).sum(-1) / mask.sum(-1)

        if self.beta != 0.0:
            global_masked_mean(per_token_kl)
        global_masked_mean(entropies)
        is_low_clipped = (coef_1 < 1 - self.epsilon_low) & (advantages < 0)
        is_high_clipped = (coef_1 > 1 + self.epsilon_high) & (advantages > 0)
        is_region_clipped = is_low_clipped | is_high_clipped
        global_masked_mean(is_low_clipped.float())
        global_masked_mean(is_high_clipped.float())
        global_masked_mean(is_region_clipped.float())
        gathered_low_clip = masked_seq_mean(is_low_clipped.float())  # accelerator.gather: one process
        nanmin(gathered_low_clip).item()
        gathered_high_clip = masked_seq_mean(is_high_clipped.float())
        nanmax(gathered_high_clip).item()
        self._step += 1  # GRPOTrainer.training_step: after the backward; nothing here depends on the order
        return loss


def nanmin(tensor):
    """trl/trainer/utils.py nanmin."""
    if torch.isnan(tensor).all():
        return torch.tensor(float("nan"), dtype=tensor.dtype, device=tensor.device)
    return torch.min(tensor[~torch.isnan(tensor)])


def nanmax(tensor):
    """trl/trainer/utils.py nanmax."""
    if torch.isnan(tensor).all():
        return torch.tensor(float("nan"), dtype=tensor.dtype, device=tensor.device)
    return torch.max(tensor[~torch.isnan(tensor)])
