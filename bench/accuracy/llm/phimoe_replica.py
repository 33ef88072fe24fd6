"""Phi-3.5-MoE (model_type phimoe) as transformers 5 runs it, for the harness (reference.py builds its MoE
block from here; its attention is reference.Attention with attention_bias on q/k/v/o, its decoder norms and the
final norm nn.LayerNorm (vctorch._LayerNorm2x) and the lm_head biased: reference.DecoderLayer / CausalLM).

Written from huggingface/transformers models/phimoe/modeling_phimoe.py @ 0233e509531ace915c8241b4c16c8032a583279c
(the sparsemixer, router and block code is the same at the earlier 4a4355307f5fa0bae5560b00f034248b4121eaef, whose
PhimoeDecoderLayer inherited MixtralDecoderLayer's RMSNorms; 0233e509 builds nn.LayerNorm ones):
  PhimoeMultiplier       save_for_backward(multiplier, selected_experts, masked_gates); multiplier * mask_for_one;
                         backward: grad * multiplier, masked_gates * grad.mul(-1), scatter_add_
  sparsemixer            the two picks (below, copied statement by statement)
  PhimoeExperts          [E, 2I, H], [E, H, I] under @use_experts_implementation: grouped_mm_experts_forward
                         (moe_v5_replica.MixtralExperts)
  PhimoeTopKRouter       nn.Linear(H, E, bias=False); the input jitter in training, the logits, sparsemixer
  PhimoeSparseMoeBlock   the input jitter in training, reshape(-1, H), router, experts, reshape
  PhimoeDecoderLayer     input / post-attention norms nn.LayerNorm(H, eps=rms_norm_eps, elementwise_affine=True)
  PhimoeModel            norm = nn.LayerNorm(H, eps=rms_norm_eps)
  PhimoeForCausalLM      lm_head bias=config.lm_head_bias
"""

import torch
import torch.nn as nn

import moe_v5_replica
import reference as R


class PhimoeMultiplier(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores, multiplier, selected_experts, masked_gates, mask_for_one):
        ctx.save_for_backward(multiplier, selected_experts, masked_gates)
        return multiplier * mask_for_one

    @staticmethod
    def backward(ctx, grad_at_output):
        multiplier, selected_experts, masked_gates = ctx.saved_tensors
        grad_at_output = grad_at_output * multiplier
        grad_at_scores_expanded = masked_gates * grad_at_output.mul(-1)
        grad_at_scores_expanded.scatter_add_(dim=-1, index=selected_experts, src=grad_at_output)
        return (grad_at_scores_expanded, None, None, None, None)


def sparsemixer(scores, jitter_eps, training, top_k=2):
    with torch.no_grad():
        mask_logits_threshold, max_ind = scores.max(dim=-1, keepdim=True)
        factor = scores.abs().clamp(min=mask_logits_threshold)
        mask_logits_threshold = ((mask_logits_threshold - scores) / factor) > (2 * jitter_eps)
    masked_gates = scores.masked_fill(mask_logits_threshold, float("-inf"))
    if training:
        selected_experts = (
            (masked_gates - torch.empty_like(masked_gates, memory_format=torch.legacy_contiguous_format).exponential_().log())
            .max(dim=-1)[1]
            .unsqueeze(-1)
        )
    else:
        selected_experts = max_ind
    masked_gates = torch.softmax(masked_gates, dim=-1)
    multiplier_o = masked_gates.gather(dim=-1, index=selected_experts)
    if training:
        max_scores, max_ind = masked_gates.max(dim=-1, keepdim=True)
        mask_for_one = torch.logical_or(selected_experts == max_ind, torch.rand_like(max_scores) > 0.75)
        mask_for_one = torch.add(0.3333, mask_for_one, alpha=0.6667).type_as(masked_gates)
        multiplier = PhimoeMultiplier.apply(scores, multiplier_o, selected_experts, masked_gates, mask_for_one)
    else:
        multiplier = multiplier_o
    masked_scores = torch.scatter(scores, -1, selected_experts, float("-inf"))
    with torch.no_grad():
        mask_logits_threshold, max_ind = masked_scores.max(dim=-1, keepdim=True)
        factor = scores.abs().clamp(min=mask_logits_threshold)
        mask_logits_threshold = ((mask_logits_threshold - scores) / factor) > (2 * jitter_eps)
    masked_gates_top2 = masked_scores.masked_fill(mask_logits_threshold, float("-inf"))
    if training:
        selected_experts_top2 = (
            (masked_gates_top2
             - torch.empty_like(masked_gates_top2, memory_format=torch.legacy_contiguous_format).exponential_().log())
            .max(dim=-1)[1]
            .unsqueeze(-1)
        )
    else:
        selected_experts_top2 = max_ind
    masked_gates_top2 = torch.softmax(masked_gates_top2, dim=-1)
    multiplier_top2_o = masked_gates_top2.gather(dim=-1, index=selected_experts_top2)
    if training:
        max_scores, max_ind = masked_gates_top2.max(dim=-1, keepdim=True)
        mask_for_one_top2 = torch.logical_or(selected_experts_top2 == max_ind,
                                             torch.rand_like(max_scores).uniform_() > 0.75)
        mask_for_one_top2 = torch.add(0.3333, mask_for_one_top2, alpha=0.6667).type_as(masked_gates_top2)
        multiplier_top2 = PhimoeMultiplier.apply(scores, multiplier_top2_o, selected_experts_top2, masked_gates_top2,
                                                 mask_for_one_top2)
    else:
        multiplier_top2 = multiplier_top2_o
    multiplier = torch.concat((multiplier, multiplier_top2), dim=-1)
    selected_experts = torch.concat((selected_experts, selected_experts_top2), dim=-1)
    return multiplier, selected_experts


class PhimoeTopKRouter(R.Linear):
    def __init__(self, cfg):
        super().__init__(cfg.hidden_size, cfg.num_local_experts, bias=False)
        self.router_jitter_noise = cfg.d.get("router_jitter_noise", 0.01)
        self.input_jitter_noise = cfg.d.get("input_jitter_noise", 0.0)
        self.top_k = cfg.num_experts_per_tok

    def forward(self, hidden_states):
        if self.training and self.input_jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(
                1.0 - self.input_jitter_noise, 1.0 + self.input_jitter_noise)
        router_logits = super().forward(hidden_states)
        routing_weights, selected_experts = sparsemixer(
            router_logits, jitter_eps=self.router_jitter_noise, training=self.training, top_k=self.top_k)
        return router_logits, routing_weights, selected_experts


class PhimoeSparseMoeBlock(nn.Module):
    def __init__(self, cfg, act):
        super().__init__()
        self.router = PhimoeTopKRouter(cfg)
        self.experts = moe_v5_replica.MixtralExperts(cfg, act)
        self.input_jitter_noise = cfg.d.get("input_jitter_noise", 0.0)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.input_jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(
                1.0 - self.input_jitter_noise, 1.0 + self.input_jitter_noise)
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_dim)
        _, routing_weights, selected_experts = self.router(hidden_states)
        final_hidden_states = self.experts(hidden_states, selected_experts, routing_weights)
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
