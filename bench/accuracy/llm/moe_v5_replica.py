"""transformers 5's sparse MoE block with stacked experts, run through its default
experts implementation (grouped_mm), for torch 1.13 on CPU (measure_llm.py --experts grouped_mm).

Written from huggingface/transformers at 8b584a67b474f3dfdedcdda7acb96a33dcc3b5e3:
  integrations/moe.py   grouped_mm_experts_forward, _grouped_linear, _grouped_mm,
                        _default_apply_gate, use_experts_implementation (the dispatch:
                        ALL_EXPERTS_FUNCTIONS.get_interface(config._experts_implementation))
  modeling_utils.py     PreTrainedModel.get_correct_experts_implementation ("grouped_mm" when
                        none is requested and _grouped_mm_can_dispatch)
  models/mixtral/modeling_mixtral.py  MixtralTopKRouter (weight an nn.Parameter [E, H]; F.linear,
                        softmax(logits.float()), topk, in-place renormalisation, float32 scores
                        returned), MixtralExperts (gate_up_proj [E, 2I, H], down_proj [E, H, I]
                        nn.Parameters, act_fn), MixtralSparseMoeBlock.forward (view(-1, H),
                        `_, top_k_weights, top_k_index = self.gate(x)`, self.experts(...),
                        reshape).

torch 1.13 has no torch._grouped_mm (PyTorch 2.8+; transformers casts the input to the weight's
dtype itself, the op is not autocast-enabled). GroupedMM below stands for it with the
allocations of PyTorch's CUDA op: the output [S, out] in one empty tensor of the weight's dtype
(filled group by group with torch.mm(..., out=row slice), no further buffer); backward
(derivatives.yaml _grouped_mm: each operand saved for the other's gradient, so a frozen
weight's input is not kept) makes the input's gradient [S, in] and the
weight's gradient as one tensor in the layout of the operand it received (the transposed view of
the parameter, as FunctionsManual's mm_mat2_backward does for mm), so that after the transpose's
backward it is contiguous like the parameter and AccumulateGrad keeps it without a copy.
The CUDA path's histc input is expert_ids_g.int() ([S] int32); on the CPU transformers uses
.float() ([S] float32, histc then [E] float32): the same bytes. CUDA's sort scratch (cub) and
the grouped GEMM's workspace are not replicated (a CPU run has neither).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedMM(torch.autograd.Function):
    """torch._grouped_mm(input [S, K], weight [E, K, N], offs=int32 cumulative counts) -> [S, N]."""

    @staticmethod
    def forward(ctx, x, w, offs):
        out = torch.empty(x.shape[0], w.shape[2], dtype=w.dtype)
        start = 0
        for i, end in enumerate(offs.tolist()):
            if end > start:
                torch.mm(x[start:end], w[i], out=out[start:end])
            start = end
        # the generated autograd node saves an operand only for the other's gradient
        # (VariableType's should_compute_output guards, as for mm)
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None, w if ctx.needs_input_grad[0] else None)
        ctx.ends = offs.tolist()
        ctx.wshape, ctx.wtransposed, ctx.wdtype = tuple(w.shape), w.stride(1) == 1, w.dtype
        ctx.xshape, ctx.xdtype = tuple(x.shape), x.dtype
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        gx = gw = None
        if ctx.needs_input_grad[0]:
            gx = torch.empty(ctx.xshape, dtype=ctx.xdtype)
            start = 0
            for i, end in enumerate(ctx.ends):
                if end > start:
                    torch.mm(grad[start:end], w[i].t(), out=gx[start:end])
                start = end
        if ctx.needs_input_grad[1]:
            E, K, N = ctx.wshape
            # in the received operand's layout: w is parameter.transpose(-2, -1), so the
            # gradient is the transpose of a contiguous [E, N, K] tensor
            transposed = ctx.wtransposed
            base = torch.zeros(E, N, K, dtype=ctx.wdtype) if transposed else torch.zeros(E, K, N, dtype=ctx.wdtype)
            start = 0
            for i, end in enumerate(ctx.ends):
                if end > start:
                    if transposed:
                        torch.mm(grad[start:end].t(), x[start:end], out=base[i])
                    else:
                        torch.mm(x[start:end].t(), grad[start:end], out=base[i])
                start = end
            gw = base.transpose(1, 2) if transposed else base
        return gx, gw, None


def _grouped_mm(x, w, offs):
    """integrations/moe.py _grouped_mm: torch._grouped_mm(input.to(weight.dtype), weight, offs=offs)."""
    return GroupedMM.apply(x.to(w.dtype), w, offs)


def _grouped_linear(x, weight, offs):
    """_grouped_linear with is_transposed False and no bias: weight.transpose(-2, -1)."""
    return _grouped_mm(x, weight.transpose(-2, -1), offs)


class MixtralTopKRouter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.num_experts = cfg.num_local_experts
        self.hidden_dim = cfg.hidden_size
        self.weight = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = F.linear(hidden_states, self.weight)
        router_probs = torch.nn.functional.softmax(router_logits.float(), dim=-1)
        router_top_value, router_indices = torch.topk(router_probs, self.top_k, dim=-1)
        router_top_value /= router_top_value.sum(dim=-1, keepdim=True)
        router_scores = router_top_value
        return router_logits, router_scores, router_indices


class MixtralExperts(nn.Module):
    def __init__(self, cfg, act_fn):
        super().__init__()
        self.num_experts = cfg.num_local_experts
        self.hidden_dim = cfg.hidden_size
        self.intermediate_dim = cfg.intermediate_size
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * self.intermediate_dim, self.hidden_dim))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim, self.intermediate_dim))
        nn.init.normal_(self.gate_up_proj, std=0.02)
        nn.init.normal_(self.down_proj, std=0.02)
        self.act_fn = act_fn

    def _apply_gate(self, gate_up_out):
        """_default_apply_gate."""
        gate, up = gate_up_out.chunk(2, dim=-1)
        return self.act_fn(gate) * up

    def forward(self, hidden_states, top_k_index, top_k_weights):
        """grouped_mm_experts_forward (has_bias False, is_transposed False)."""
        device = hidden_states.device
        num_top_k = top_k_index.size(-1)
        num_tokens = hidden_states.size(0)
        hidden_dim = hidden_states.size(-1)
        token_idx = torch.arange(num_tokens, device=device).unsqueeze(1).expand(-1, num_top_k).reshape(-1)
        sample_weights = top_k_weights.reshape(-1)
        expert_ids = top_k_index.reshape(-1)
        selected_hidden_states = hidden_states[token_idx]
        perm = torch.argsort(expert_ids)
        inv_perm = torch.argsort(perm)
        expert_ids_g = expert_ids[perm]
        sample_weights_g = sample_weights[perm]
        selected_hidden_states_g = selected_hidden_states[perm]
        selected_gate_up = self.gate_up_proj
        selected_down = self.down_proj
        histc_input = expert_ids_g.float()  # CUDA: .int(), the same bytes
        num_tokens_per_expert = torch.histc(histc_input, bins=self.num_experts, min=0, max=self.num_experts - 1)
        offsets = torch.cumsum(num_tokens_per_expert, dim=0, dtype=torch.int32)
        gate_up_out = _grouped_linear(selected_hidden_states_g, selected_gate_up, offsets)
        gated_out = self._apply_gate(gate_up_out)
        out_per_sample_g = _grouped_linear(gated_out, selected_down, offsets)
        out_per_sample_g = out_per_sample_g * sample_weights_g.unsqueeze(-1)
        out_per_sample = out_per_sample_g[inv_perm]
        final_hidden_states = out_per_sample.view(num_tokens, num_top_k, hidden_dim).sum(dim=1)
        return final_hidden_states.to(hidden_states.dtype)


class MixtralSparseMoeBlock(nn.Module):
    def __init__(self, cfg, act_fn):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.jitter_noise = cfg.router_jitter_noise
        self.gate = MixtralTopKRouter(cfg)
        self.experts = MixtralExperts(cfg, act_fn)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        _, top_k_weights, top_k_index = self.gate(hidden_states)
        hidden_states = self.experts(hidden_states, top_k_index, top_k_weights)
        hidden_states = hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        # reference.DecoderLayer unpacks (hidden_states, router_logits) as 4.x's block returned;
        # transformers 5's returns the tensor alone (the router logits die in the block)
        return hidden_states, None


# ---------------------------------------------------------------------------
# Qwen2-MoE (models/qwen2_moe: modular_qwen2_moe.py of transformers 5): Qwen2MoeExperts is
# MixtralExperts with num_experts and moe_intermediate_size; Qwen2MoeTopKRouter returns the
# top-k probabilities cast to the logits' dtype; Qwen2MoeSparseMoeBlock runs the shared expert
# first, then the routed experts, then expert_output += sigmoid(shared_expert_gate(x)) * shared.
# ---------------------------------------------------------------------------
class Qwen2MoeTopKRouter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.num_experts = cfg.num_experts
        self.norm_topk_prob = cfg.norm_topk_prob
        self.hidden_dim = cfg.hidden_size
        self.weight = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = F.linear(hidden_states, self.weight)
        router_probs = torch.nn.functional.softmax(router_logits, dtype=torch.float, dim=-1)
        router_top_value, router_indices = torch.topk(router_probs, self.top_k, dim=-1)
        if self.norm_topk_prob:
            router_top_value /= router_top_value.sum(dim=-1, keepdim=True)
        router_top_value = router_top_value.to(router_logits.dtype)
        router_scores = router_top_value
        return router_logits, router_scores, router_indices


class Qwen2MoeExperts(MixtralExperts):
    def __init__(self, cfg, act_fn):
        nn.Module.__init__(self)
        self.num_experts = cfg.num_experts
        self.hidden_dim = cfg.hidden_size
        self.intermediate_dim = cfg.moe_intermediate_size
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * self.intermediate_dim, self.hidden_dim))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim, self.intermediate_dim))
        nn.init.normal_(self.gate_up_proj, std=0.02)
        nn.init.normal_(self.down_proj, std=0.02)
        self.act_fn = act_fn


class Qwen2MoeSparseMoeBlock(nn.Module):
    def __init__(self, cfg, act_fn, shared_mlp, linear):
        super().__init__()
        self.gate = Qwen2MoeTopKRouter(cfg)
        self.experts = Qwen2MoeExperts(cfg, act_fn)
        self.shared_expert = shared_mlp  # Qwen2MoeMLP(config, intermediate_size=shared_expert_intermediate_size)
        self.shared_expert_gate = linear(cfg.hidden_size, 1, bias=False)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states_reshaped = hidden_states.view(-1, hidden_dim)
        shared_expert_output = self.shared_expert(hidden_states_reshaped)
        _, routing_weights, selected_experts = self.gate(hidden_states_reshaped)
        expert_output = self.experts(hidden_states_reshaped, selected_experts, routing_weights)
        shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states_reshaped)) * shared_expert_output
        expert_output += shared_expert_output
        expert_output = expert_output.reshape(batch_size, sequence_length, hidden_dim)
        return expert_output
