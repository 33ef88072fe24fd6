"""Granite 3.x MoE (model_type granitemoe) as transformers runs it, for the harness (reference.py builds its MoE
block from here and applies granite's multipliers: embedding_multiplier, residual_multiplier, logits_scaling, and
attention_multiplier as the attention's scale).

Written from huggingface/transformers:
  models/granitemoe/modular_granitemoe.py @ 94cb76e8b28f69cd844073ae246c3bd1375d2e0b
    GraniteMoeMoE.forward         reshape(-1, H); `_, batch_index, batch_gates, expert_size, _ = self.router(x)`;
                                  x[batch_index]; input_linear; chunk(2); activation(chunk 0) * chunk 1; output_linear;
                                  * batch_gates[:, None]; zeros((T, H)).index_add(0, batch_index, ...); view
    GraniteMoeAttention           LlamaAttention with scaling = config.attention_multiplier
    GraniteMoeDecoderLayer        residual + hidden_states * residual_multiplier (twice)
    GraniteMoeModel.forward       inputs_embeds * embedding_multiplier
    GraniteMoeForCausalLM         logits / logits_scaling
  models/granitemoeshared/modular_granitemoeshared.py @ a878fc03b04a74d387e5132eb8cfc0fbf7055047
    GraniteMoeSharedMLP           input_linear nn.Linear(H, 2 shared), chunk(2), activation(chunk 0) * chunk 1,
                                  output_linear; the decoder layer adds it to the experts' output
  models/jetmoe/modeling_jetmoe.py (GraniteMoeParallelExperts and GraniteMoeTopKGating are JetMoe's)
    JetMoeParallelExperts         weight [E, out, in]; forward: inputs.split(expert_size), F.linear(input_list[i],
                                  self.weight[i]) per expert, torch.cat
    JetMoeTopKGating              layer nn.Linear(H, E, bias=False); forward: logits.float(), topk, softmax(dim=1)
                                  .type_as(x), zeros.scatter(1, top_k_indices, 1), .long().sum(0).tolist(),
                                  flatten().sort(0), div(top_k, rounding_mode="trunc"), top_k_gates.flatten()[...]
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import reference as R


class ParallelExperts(nn.Module):
    def __init__(self, num_experts, input_size, output_size):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_experts, output_size, input_size))
        nn.init.normal_(self.weight, std=0.02)
        self.num_experts = num_experts

    def forward(self, inputs, expert_size):
        input_list = inputs.split(expert_size, dim=0)
        output_list = []
        for i in range(self.num_experts):
            output_list.append(F.linear(input_list[i], self.weight[i]))
        results = torch.cat(output_list, dim=0)
        return results


class TopKGating(nn.Module):
    def __init__(self, input_size, num_experts, top_k):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.layer = R.Linear(input_size, num_experts, bias=False)

    def forward(self, hidden_states):
        logits = self.layer(hidden_states).float()
        top_k_logits, top_k_indices = logits.topk(self.top_k, dim=1)
        top_k_gates = torch.softmax(top_k_logits, dim=1).type_as(hidden_states)
        zeros = torch.zeros([top_k_gates.size(0), self.num_experts], dtype=top_k_gates.dtype, device=top_k_gates.device)
        gates = zeros.scatter(1, top_k_indices, 1)
        expert_size = gates.long().sum(0)
        expert_size = expert_size.tolist()
        top_k_experts = top_k_indices.flatten()
        _, index_sorted_experts = top_k_experts.sort(0)
        batch_index = index_sorted_experts.div(self.top_k, rounding_mode="trunc")
        top_k_gates = top_k_gates.flatten()
        batch_gates = top_k_gates[index_sorted_experts]
        return index_sorted_experts, batch_index, batch_gates, expert_size, logits


class GraniteMoeMoE(nn.Module):
    def __init__(self, cfg, act):
        super().__init__()
        self.input_size = cfg.hidden_size
        self.hidden_size = cfg.intermediate_size
        self.activation = act
        self.input_linear = ParallelExperts(cfg.num_local_experts, self.input_size, self.hidden_size * 2)
        self.output_linear = ParallelExperts(cfg.num_local_experts, self.hidden_size, self.input_size)
        self.router = TopKGating(self.input_size, cfg.num_local_experts, cfg.num_experts_per_tok)

    def forward(self, layer_input):
        bsz, length, emb_size = layer_input.size()
        layer_input = layer_input.reshape(-1, emb_size)
        _, batch_index, batch_gates, expert_size, _ = self.router(layer_input)
        expert_inputs = layer_input[batch_index]
        hidden_states = self.input_linear(expert_inputs, expert_size)
        chunked_hidden_states = hidden_states.chunk(2, dim=-1)
        hidden_states = self.activation(chunked_hidden_states[0]) * chunked_hidden_states[1]
        expert_outputs = self.output_linear(hidden_states, expert_size)
        expert_outputs = expert_outputs * batch_gates[:, None]
        zeros = torch.zeros((bsz * length, self.input_size), dtype=expert_outputs.dtype, device=expert_outputs.device)
        layer_output = zeros.index_add(0, batch_index, expert_outputs)
        layer_output = layer_output.view(bsz, length, self.input_size)
        return layer_output


class GraniteMoeSharedMLP(nn.Module):
    def __init__(self, cfg, act):
        super().__init__()
        self.input_size = cfg.hidden_size
        self.hidden_size = cfg.d["shared_intermediate_size"]
        self.activation = act
        self.input_linear = R.Linear(self.input_size, self.hidden_size * 2, bias=False)
        self.output_linear = R.Linear(self.hidden_size, self.input_size, bias=False)

    def forward(self, hidden_states):
        hidden_states = self.input_linear(hidden_states)
        chunked_hidden_states = hidden_states.chunk(2, dim=-1)
        hidden_states = self.activation(chunked_hidden_states[0]) * chunked_hidden_states[1]
        hidden_states = self.output_linear(hidden_states)
        return hidden_states
