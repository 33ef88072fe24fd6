#!/usr/bin/python3
"""reference.py -- DeepSpeed's and Megatron-LM's own memory formulas, transcribed, and
Korthikanti et al.'s per-layer activation formula, evaluated on fixed configurations.

    /usr/bin/python3 bench/accuracy/dist/reference.py            # print the tables
    /usr/bin/python3 bench/accuracy/dist/reference.py --json F   # also write the numbers to F
    /usr/bin/python3 bench/accuracy/dist/reference.py --check    # the transcriptions against the
                                                                 # numbers their own docs/tests print

These are the references vramcalc's parallel layouts are compared with where nothing can be
measured here (ZeRO-2/3, TP, SP, PP: no GPUs, no DeepSpeed, no Megatron).  Every function is a
transcription of the named source; arithmetic is kept as written there (float division, int()
where the source has it), so that the numbers are the ones the source prints.

Sources read (see docs/parallel.md for what each allocates):
  DS  = github.com/microsoft/DeepSpeed @ 38327e07f6cd39b63418f60cedd1651b0be3e7c3 (2025-02-21)
        deepspeed/runtime/zero/stage_1_and_2.py  estimate_zero2_model_states_mem_needs,
                                                 estimate_zero2_model_states_mem_needs_all_cold
        deepspeed/runtime/zero/stage3.py         estimate_zero3_model_states_mem_needs,
                                                 estimate_zero3_model_states_mem_needs_all_cold
        docs/code-docs/source/memory.rst         the worked examples (2851M params, 8 GPUs)
  MEG = github.com/NVIDIA/Megatron-LM @ d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22)
        megatron/training/theoretical_memory_usage.py  compute_weight_and_optimizer_memory,
              compute_activation_memory, compute_activation_memory_without_sp,
              report_theoretical_memory
        megatron/training/vocab_utils.py  _calculate_padded_vocab_size_cached
  K   = Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
        arXiv:2205.05198, section 4 and Table 2 (per-layer activation bytes, 16-bit activations).
"""

import argparse
import json
import math
import sys
import types

GiB = 2 ** 30
MiB = 1024 * 1024  # MEG NUM_BYTES_IN_MEGABYTE


# ----------------------------------------------------------------------------------------------
# DeepSpeed (DS), transcribed
# ----------------------------------------------------------------------------------------------

def ds_estimate_zero2_model_states_mem_needs(total_params, num_gpus_per_node=1, num_nodes=1,
                                             cpu_offload=True, additional_buffer_factor=1.5):
    """DS stage_1_and_2.py estimate_zero2_model_states_mem_needs -> (cpu_mem, gpu_mem) bytes."""
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu_mem = 2 * total_params
        cpu_mem = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        # GPU's total_params multipliers: 2 = params_16bit,
        # 18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit
        gpu_mem = 2 * total_params + int(18 * total_params / total_gpus)
        cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem)


def ds_estimate_zero3_model_states_mem_needs(total_params, largest_layer_params, num_gpus_per_node=1,
                                             num_nodes=1, cpu_offload=True, cpu_offload_params=True,
                                             zero_init=True, additional_buffer_factor=1.5):
    """DS stage3.py estimate_zero3_model_states_mem_needs -> (cpu_mem, gpu_mem, largest_layer_memory)."""
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    largest_layer_memory = (4 * largest_layer_params)
    if cpu_offload:
        if cpu_offload_params:
            gpu_mem = largest_layer_memory
            if zero_init:
                cpu_mem = total_params * 18 * gpus_factor * additional_buffer_factor
            else:
                cpu_mem = total_params * max(4 * num_gpus_per_node, 18 * gpus_factor) * additional_buffer_factor
        else:
            gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)
            if zero_init:
                cpu_mem = total_params * 16 * gpus_factor * additional_buffer_factor
            else:
                cpu_mem = total_params * max(4 * num_gpus_per_node, 16 * gpus_factor) * additional_buffer_factor
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        if zero_init:
            cpu_mem = largest_layer_params * 4 * num_gpus_per_node * additional_buffer_factor
        else:
            cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


def ds_zero2_all_cold(total_params, num_gpus_per_node=1, num_nodes=1, additional_buffer_factor=1.5):
    """DS estimate_zero2_model_states_mem_needs_all_cold: the rows it prints (GiB, as '%.2fGB')."""
    rows = []
    for cpu_offload in [True, False]:
        cpu_mem, gpu_mem = ds_estimate_zero2_model_states_mem_needs(
            total_params, num_gpus_per_node, num_nodes, cpu_offload, additional_buffer_factor)
        rows.append({"offload_optimizer": "cpu" if cpu_offload else "none",
                     "cpu_bytes": cpu_mem, "gpu_bytes": gpu_mem,
                     "line": " %7.2fGB | %6.2fGB | offload_optimizer=%s" % (
                         cpu_mem / GiB, gpu_mem / GiB, "cpu " if cpu_offload else "none")})
    return rows


def ds_zero3_all_cold(total_params, largest_layer_params, num_gpus_per_node=1, num_nodes=1,
                      additional_buffer_factor=1.5):
    """DS estimate_zero3_model_states_mem_needs_all_cold: the rows it prints."""
    rows = []
    for cpu_offload in [True, False]:
        for cpu_offload_params in [True, False]:
            if not cpu_offload and cpu_offload_params:
                continue
            for zero_init in [True, False]:
                cpu_mem, gpu_mem, _ = ds_estimate_zero3_model_states_mem_needs(
                    total_params, largest_layer_params, num_gpus_per_node, num_nodes, cpu_offload,
                    cpu_offload_params, zero_init, additional_buffer_factor)
                rows.append({"offload_param": "cpu" if cpu_offload_params else "none",
                             "offload_optimizer": "cpu" if cpu_offload else "none",
                             "zero_init": int(zero_init), "cpu_bytes": cpu_mem, "gpu_bytes": gpu_mem,
                             "line": " %7.2fGB | %6.2fGB | offload_param=%s, offload_optimizer=%s, zero_init=%d" % (
                                 cpu_mem / GiB, gpu_mem / GiB, "cpu " if cpu_offload_params else "none",
                                 "cpu " if cpu_offload else "none", int(zero_init))})
    return rows


def ds_zero2_docs_formula(total_params, total_gpus):
    """What DS docs/code-docs/source/memory.rst's stage-2 example prints for offload_optimizer=none
    (15.93GB for 2851M params on 8 GPUs): 4*P + 16*P/N, an older formula than the code's
    2*P + 18*P/N (11.29GB for the same call).  Reconstructed from the printed numbers, not from
    code in the current tree: see the --check output."""
    return 4 * total_params + int(16 * total_params / total_gpus)


# ----------------------------------------------------------------------------------------------
# Megatron-LM (MEG), transcribed
# ----------------------------------------------------------------------------------------------

def meg_padded_vocab_size(vocab_size, make_vocab_size_divisible_by, tensor_model_parallel_size):
    """MEG vocab_utils.py _calculate_padded_vocab_size_cached."""
    multiple = make_vocab_size_divisible_by * tensor_model_parallel_size
    return int(math.ceil(vocab_size / multiple) * multiple)


def meg_args(**kw):
    """An argparse-like namespace with the fields theoretical_memory_usage.py reads and
    Megatron's argument defaults (megatron/training/arguments.py) for those not given."""
    a = dict(kv_channels=None, group_query_attention=False, num_query_groups=None, num_experts=None,
             swiglu=False, moe_shared_expert_intermediate_size=None, moe_layer_freq=1, moe_ffn_hidden_size=None,
             mtp_num_layers=None, normalization="LayerNorm", multi_latent_attention=False,
             untie_embeddings_and_output_weights=False, moe_latent_size=None, moe_router_topk=2,
             add_bias_linear=True, expert_tensor_parallel_size=None, expert_model_parallel_size=1,
             pipeline_model_parallel_size=1, tensor_model_parallel_size=1, use_distributed_optimizer=False,
             virtual_pipeline_model_parallel_size=None, sequence_parallel=False, recompute_granularity=None,
             make_vocab_size_divisible_by=128, micro_batch_size=1)
    a.update(kw)
    if a["kv_channels"] is None:  # arguments.py: kv_channels = hidden_size // num_attention_heads
        a["kv_channels"] = a["hidden_size"] // a["num_attention_heads"]
    if a["expert_tensor_parallel_size"] is None:  # arguments.py: defaults to the TP size
        a["expert_tensor_parallel_size"] = a["tensor_model_parallel_size"]
    if "padded_vocab_size" not in a:
        a["padded_vocab_size"] = meg_padded_vocab_size(a["vocab_size"], a["make_vocab_size_divisible_by"],
                                                       a["tensor_model_parallel_size"])
    mp = a["tensor_model_parallel_size"] * a["pipeline_model_parallel_size"]
    a["data_parallel_size"] = a["world_size"] // mp
    return types.SimpleNamespace(**a)


def meg_compute_weight_and_optimizer_memory(args, verbose=False):
    """MEG compute_weight_and_optimizer_memory (bytes on the most loaded model shard)."""
    query_projection_size = args.kv_channels * args.num_attention_heads
    query_projection_to_hidden_size_ratio = query_projection_size / args.hidden_size
    if not args.group_query_attention:
        args.num_query_groups = args.num_attention_heads
    num_experts = 1 if args.num_experts is None else args.num_experts
    gated_linear_multiplier = 3 / 2 if args.swiglu else 1
    shared_expert_ffn_hidden_size = (0 if args.moe_shared_expert_intermediate_size is None
                                     else args.moe_shared_expert_intermediate_size)
    if args.num_experts is not None:
        if isinstance(args.moe_layer_freq, int):
            moe_layer_pattern = [1 if (i % args.moe_layer_freq == 0) else 0 for i in range(args.num_layers)]
        else:
            moe_layer_pattern = args.moe_layer_freq
        num_dense_layers = args.num_layers - sum(moe_layer_pattern)
        num_moe_layers = sum(moe_layer_pattern)
        moe_ffn_hidden_size = args.moe_ffn_hidden_size
    else:
        moe_layer_pattern = [0] * args.num_layers
        num_dense_layers = args.num_layers
        num_moe_layers = 0
        moe_ffn_hidden_size = 0
    if args.mtp_num_layers is not None:
        mtp_layer_is_moe = moe_layer_pattern[-1]
        mtp_num_moe_layers = mtp_layer_is_moe * args.mtp_num_layers
        mtp_num_dense_layers = (1 - mtp_layer_is_moe) * args.mtp_num_layers
    else:
        mtp_num_moe_layers = 0
        mtp_num_dense_layers = 0
    norm_size = 1 if args.normalization == "RMSNorm" else 2
    if args.multi_latent_attention:
        raise NotImplementedError("MLA not transcribed here")
    self_attn_term = (2 * args.hidden_size * args.hidden_size
                      * ((1 + (args.num_query_groups / args.num_attention_heads))
                         * query_projection_to_hidden_size_ratio))
    embedding_size = args.hidden_size * args.padded_vocab_size
    final_layernorm = norm_size * args.hidden_size
    attention_params = self_attn_term
    dense_mlp_params = 2 * args.hidden_size * args.ffn_hidden_size * gated_linear_multiplier
    shared_expert_params = 2 * args.hidden_size * shared_expert_ffn_hidden_size * gated_linear_multiplier
    routed_expert_hidden_size = args.moe_latent_size if args.moe_latent_size is not None else args.hidden_size
    routed_expert_params = 2 * routed_expert_hidden_size * moe_ffn_hidden_size * num_experts * gated_linear_multiplier
    latent_projection_params = (2 * args.hidden_size * args.moe_latent_size
                                if args.num_experts is not None and args.moe_latent_size is not None else 0)
    layernorm_params = 2 * args.hidden_size * norm_size
    router_params = ((args.hidden_size * num_experts) + (num_experts if args.add_bias_linear else 0)
                     if args.num_experts is not None else 0)
    shared_expert_gate_params = 0  # moe_shared_expert_gate not used in these configs
    num_parameters_in_transformer_layer_dense = attention_params + dense_mlp_params + layernorm_params
    num_parameters_in_transformer_layer_moe = (attention_params + shared_expert_params + routed_expert_params
                                               + latent_projection_params + layernorm_params + router_params
                                               + shared_expert_gate_params)
    num_parameters_in_transformer_block = (num_parameters_in_transformer_layer_dense * num_dense_layers
                                           + num_parameters_in_transformer_layer_moe * num_moe_layers
                                           + final_layernorm)
    num_parameters_in_mtp_block = (num_parameters_in_transformer_layer_dense * mtp_num_dense_layers
                                   + num_parameters_in_transformer_layer_moe * mtp_num_moe_layers)
    num_parameters_in_embedding_layers = (2 * embedding_size if args.untie_embeddings_and_output_weights
                                          else embedding_size)
    num_total_parameters = (num_parameters_in_transformer_block + num_parameters_in_mtp_block
                            + num_parameters_in_embedding_layers)
    expert_tensor_parallel_size = args.expert_tensor_parallel_size
    expert_model_parallel_size = args.expert_model_parallel_size
    expert_tensor_model_pipeline_parallel_size = (expert_tensor_parallel_size * expert_model_parallel_size
                                                  * args.pipeline_model_parallel_size)
    expert_data_parallel_size = args.world_size // expert_tensor_model_pipeline_parallel_size
    tp_sharded_params_in_transformer_block = ((attention_params + dense_mlp_params) * num_dense_layers
                                              + (attention_params + shared_expert_params) * num_moe_layers)
    replicated_params_in_transformer_block = (layernorm_params * num_dense_layers
                                              + (layernorm_params + latent_projection_params + router_params
                                                 + shared_expert_gate_params) * num_moe_layers
                                              + final_layernorm)
    expert_sharded_params_in_transformer_block = routed_expert_params * num_moe_layers
    tp_sharded_params_in_mtp_block = ((attention_params + dense_mlp_params) * mtp_num_dense_layers
                                      + (attention_params + shared_expert_params) * mtp_num_moe_layers)
    replicated_params_in_mtp_block = (layernorm_params * mtp_num_dense_layers
                                      + (layernorm_params + latent_projection_params + router_params
                                         + shared_expert_gate_params) * mtp_num_moe_layers)
    expert_sharded_params_in_mtp_block = routed_expert_params * mtp_num_moe_layers
    # Most loaded model shard has 1/pp_size transformer layers, 1 mtp block, and 1 embedding layer.
    tp_sharded_params_on_most_loaded_shard = ((tp_sharded_params_in_transformer_block
                                               / args.pipeline_model_parallel_size)
                                              + tp_sharded_params_in_mtp_block + embedding_size
                                              ) / args.tensor_model_parallel_size
    replicated_params_on_most_loaded_shard = ((replicated_params_in_transformer_block
                                               / args.pipeline_model_parallel_size)
                                              + replicated_params_in_mtp_block)
    expert_sharded_params_on_most_loaded_shard = ((expert_sharded_params_in_transformer_block
                                                   / args.pipeline_model_parallel_size)
                                                  + expert_sharded_params_in_mtp_block
                                                  ) / (expert_tensor_parallel_size * expert_model_parallel_size)
    num_parameters_on_most_loaded_model_shard = (tp_sharded_params_on_most_loaded_shard
                                                 + replicated_params_on_most_loaded_shard
                                                 + expert_sharded_params_on_most_loaded_shard)
    if args.untie_embeddings_and_output_weights and args.pipeline_model_parallel_size == 1:
        tp_sharded_params_on_most_loaded_shard += embedding_size / args.tensor_model_parallel_size
        num_parameters_on_most_loaded_model_shard += embedding_size / args.tensor_model_parallel_size
    num_parameters_on_other_model_shards = None
    if args.pipeline_model_parallel_size > 1:
        num_parameters_on_other_model_shards = (
            tp_sharded_params_in_transformer_block
            / (args.pipeline_model_parallel_size * args.tensor_model_parallel_size)
            + replicated_params_in_transformer_block / args.pipeline_model_parallel_size
            + expert_sharded_params_in_transformer_block
            / (args.pipeline_model_parallel_size * expert_tensor_parallel_size * expert_model_parallel_size))

    def num_bytes_per_parameter(data_parallel_size):
        # bf16 params, fp32 main grads, fp32 main params, fp32 Adam states
        return 18 if not args.use_distributed_optimizer else 6 + (12 / data_parallel_size)

    weight_and_optimizer_memory = ((tp_sharded_params_on_most_loaded_shard + replicated_params_on_most_loaded_shard)
                                   * num_bytes_per_parameter(args.data_parallel_size)
                                   + expert_sharded_params_on_most_loaded_shard
                                   * num_bytes_per_parameter(expert_data_parallel_size))
    detail = {"total_parameters": num_total_parameters,
              "parameters_in_transformer_block": num_parameters_in_transformer_block,
              "parameters_in_embedding_layers": num_parameters_in_embedding_layers,
              "parameters_on_most_loaded_shard": num_parameters_on_most_loaded_model_shard,
              "parameters_on_other_shards": num_parameters_on_other_model_shards,
              "bytes_per_parameter": num_bytes_per_parameter(args.data_parallel_size)}
    return weight_and_optimizer_memory, detail


def _meg_pp_schedule_factor(args, num_microbatches, activation_memory):
    """The two schedule blocks shared by MEG's two activation functions (written out twice there)."""
    if args.virtual_pipeline_model_parallel_size is not None:
        interleaved_schedule_memory_penalty = 1 + ((args.pipeline_model_parallel_size - 1)
                                                   / (args.pipeline_model_parallel_size
                                                      * args.virtual_pipeline_model_parallel_size))
        activation_memory *= interleaved_schedule_memory_penalty
    if args.virtual_pipeline_model_parallel_size is None and args.pipeline_model_parallel_size > 1:
        if num_microbatches is not None:
            activation_memory *= min(1, num_microbatches / args.pipeline_model_parallel_size)
    return activation_memory


def meg_compute_activation_memory(args, num_microbatches):
    """MEG compute_activation_memory (Table 2 of K with SP + selective recompute; first stage)."""
    activation_memory = (args.seq_length * args.micro_batch_size * args.hidden_size) * (
        18 + (4 * (args.ffn_hidden_size / args.hidden_size)))
    activation_memory *= args.num_layers
    activation_memory += 8 * args.seq_length * args.micro_batch_size * args.pipeline_model_parallel_size
    activation_memory += (args.seq_length * args.micro_batch_size * args.hidden_size
                          * args.pipeline_model_parallel_size)
    activation_memory = _meg_pp_schedule_factor(args, num_microbatches, activation_memory)
    if args.pipeline_model_parallel_size == 1:
        activation_memory += (args.seq_length * args.micro_batch_size * args.hidden_size * 4
                              * (1 + (args.padded_vocab_size / args.hidden_size)))
    return activation_memory / args.tensor_model_parallel_size


def meg_compute_activation_memory_without_sp(args, num_microbatches):
    """MEG compute_activation_memory_without_sp."""
    per_layer_memory = (args.seq_length * args.micro_batch_size * args.hidden_size
                        * (10 + (24 / args.tensor_model_parallel_size)))
    total_activation_memory = per_layer_memory * args.num_layers
    total_activation_memory += 8 * args.seq_length * args.micro_batch_size * args.pipeline_model_parallel_size
    total_activation_memory += (args.seq_length * args.micro_batch_size * args.hidden_size
                                * args.pipeline_model_parallel_size)
    total_activation_memory = _meg_pp_schedule_factor(args, num_microbatches, total_activation_memory)
    if args.pipeline_model_parallel_size == 1:
        logits_size = args.seq_length * args.micro_batch_size * args.padded_vocab_size
        logits_size /= args.tensor_model_parallel_size
        final_ln_output = args.seq_length * args.micro_batch_size * args.hidden_size
        total_activation_memory += (logits_size + final_ln_output) * 2
    total_activation_memory *= 1.05
    return total_activation_memory


def meg_report_theoretical_memory(args, num_microbatches=None):
    """MEG report_theoretical_memory -> (weight_and_optimizer MB, activation MB, total MB, detail)."""
    w, detail = meg_compute_weight_and_optimizer_memory(args)
    weight_and_optimizer_memory = w / MiB
    if args.sequence_parallel and args.recompute_granularity == "selective":
        path = "compute_activation_memory (SP)"
        activation_memory = meg_compute_activation_memory(args, num_microbatches) / MiB
    else:
        path = "compute_activation_memory_without_sp"
        activation_memory = meg_compute_activation_memory_without_sp(args, num_microbatches) / MiB
    detail["activation_path"] = path
    return weight_and_optimizer_memory, activation_memory, weight_and_optimizer_memory + activation_memory, detail


# ----------------------------------------------------------------------------------------------
# Korthikanti et al. (K), Table 2: activation bytes per transformer layer, 16-bit activations,
# 1-byte dropout masks.  s sequence, b micro-batch, h hidden, a heads, t tensor-parallel size.
# ----------------------------------------------------------------------------------------------

def k_layer(s, b, h, a, t=1, sp=False, recompute="none"):
    """K Table 2.  recompute: 'none', 'selective' (attention core recomputed), 'full'."""
    if recompute == "full":
        return 2 * s * b * h if not sp else 2 * s * b * h / t
    core = 5 * a * s / h
    if t == 1:
        return s * b * h * (34 + (0 if recompute == "selective" else core))
    if sp:
        return s * b * h / t * (34 + (0 if recompute == "selective" else core))
    return s * b * h * (10 + 24 / t + (0 if recompute == "selective" else core / t))


def k_layer_terms(s, b, h, a, act_bytes=2):
    """K section 4.2's term list, per layer, without parallelism; act_bytes = bytes of a stored
    activation element (2 in the paper; 4 gives the same list for fp32 activations, masks stay
    1 byte).  With act_bytes=2 the total is s*b*h*(34 + 5*a*s/h).  (The act_bytes generalisation
    is this file's, the term list is the paper's.)"""
    sbh, as2b = s * b * h, a * s * s * b
    d = act_bytes
    terms = {
        "attention: QKV input (LayerNorm output)": d * sbh,
        "attention: Q and K for QK^T": 2 * d * sbh,
        "attention: softmax output": d * as2b,
        "attention: softmax dropout mask": as2b,
        "attention: softmax-dropout output (for xV)": d * as2b,
        "attention: V": d * sbh,
        "attention: output projection input": d * sbh,
        "attention: output dropout mask": sbh,
        "MLP: first linear input": d * sbh,
        "MLP: GELU input (4h)": 4 * d * sbh,
        "MLP: second linear input (4h)": 4 * d * sbh,
        "MLP: dropout mask": sbh,
        "LayerNorms: inputs (2)": 2 * d * sbh,
    }
    return terms


# ----------------------------------------------------------------------------------------------
# Configurations
# ----------------------------------------------------------------------------------------------

LLAMA = {
    # hidden, layers, heads, kv groups, ffn, vocab -- the models' published config.json values
    "llama2-7b": dict(hidden_size=4096, num_layers=32, num_attention_heads=32, num_query_groups=32,
                      ffn_hidden_size=11008, vocab_size=32000),
    "llama3.1-8b": dict(hidden_size=4096, num_layers=32, num_attention_heads=32, num_query_groups=8,
                        ffn_hidden_size=14336, vocab_size=128256),
    "llama3.1-70b": dict(hidden_size=8192, num_layers=80, num_attention_heads=64, num_query_groups=8,
                         ffn_hidden_size=28672, vocab_size=128256),
    "llama3.1-405b": dict(hidden_size=16384, num_layers=126, num_attention_heads=128, num_query_groups=8,
                          ffn_hidden_size=53248, vocab_size=128256),
}

MEG_CASES = [
    # name, model, layout
    ("llama2-7b dp8", "llama2-7b", dict(world_size=8, seq_length=4096)),
    ("llama2-7b dp8 distopt", "llama2-7b", dict(world_size=8, seq_length=4096, use_distributed_optimizer=True)),
    ("llama3.1-8b dp8 distopt s8k", "llama3.1-8b", dict(world_size=8, seq_length=8192, use_distributed_optimizer=True)),
    ("llama3.1-8b tp8 sp sel s8k", "llama3.1-8b", dict(world_size=8, seq_length=8192, tensor_model_parallel_size=8,
                                                        sequence_parallel=True, recompute_granularity="selective",
                                                        use_distributed_optimizer=True)),
    ("llama3.1-70b tp8 pp4 dp8 sp sel", "llama3.1-70b", dict(world_size=256, seq_length=8192,
                                                             tensor_model_parallel_size=8,
                                                             pipeline_model_parallel_size=4, sequence_parallel=True,
                                                             recompute_granularity="selective",
                                                             use_distributed_optimizer=True)),
    ("llama3.1-70b tp8 pp4 dp8 no-sp", "llama3.1-70b", dict(world_size=256, seq_length=8192,
                                                            tensor_model_parallel_size=8,
                                                            pipeline_model_parallel_size=4,
                                                            use_distributed_optimizer=True)),
    ("llama3.1-405b tp8 pp16 dp8 sp sel (1024 GPUs)", "llama3.1-405b", dict(
        world_size=1024, seq_length=8192, tensor_model_parallel_size=8, pipeline_model_parallel_size=16,
        sequence_parallel=True, recompute_granularity="selective", use_distributed_optimizer=True)),
    ("llama3.1-405b tp8 pp16 dp8 sp sel vpp8 (1024 GPUs)", "llama3.1-405b", dict(
        world_size=1024, seq_length=8192, tensor_model_parallel_size=8, pipeline_model_parallel_size=16,
        virtual_pipeline_model_parallel_size=8, sequence_parallel=True, recompute_granularity="selective",
        use_distributed_optimizer=True)),
]


def llama_meg_args(model, layout):
    m = dict(LLAMA[model])
    kw = dict(hidden_size=m["hidden_size"], num_layers=m["num_layers"], num_attention_heads=m["num_attention_heads"],
              group_query_attention=m["num_query_groups"] != m["num_attention_heads"],
              num_query_groups=m["num_query_groups"], ffn_hidden_size=m["ffn_hidden_size"],
              vocab_size=m["vocab_size"], swiglu=True, normalization="RMSNorm",
              untie_embeddings_and_output_weights=True, add_bias_linear=False, micro_batch_size=1)
    kw.update(layout)
    return meg_args(**kw)


# DS estimator cases: total params of the Llama models (exact, from their architecture: embeddings
# untied, RMSNorm, no biases), largest layer = the largest single module (the untied embedding or
# lm_head, vocab x hidden), as DS model_to_params (stage3.py) takes max over modules of their
# own (non-recursive) parameters.
def llama_params(model):
    m = LLAMA[model]
    h, L, a, g, f, v = (m["hidden_size"], m["num_layers"], m["num_attention_heads"], m["num_query_groups"],
                        m["ffn_hidden_size"], m["vocab_size"])
    d = h // a
    attn = h * (a * d) + 2 * h * (g * d) + (a * d) * h
    mlp = 3 * h * f
    norms = 2 * h
    total = L * (attn + mlp + norms) + h + 2 * v * h
    largest = v * h
    return total, largest


def korthikanti_cases():
    """K evaluated on the GPT-2 blocks that have vramcalc model files: examples/gpt2_small.json
    (s 1024, h 768, a 12, 12 blocks) and bench/accuracy/models/gpt2_headsplit.json (s 128, h 64,
    a 4, 3 blocks; measurable with bench/accuracy/measure.py)."""
    out = []
    for name, s, h, a, L in (("examples/gpt2_small.json", 1024, 768, 12, 12),
                             ("bench/accuracy/models/gpt2_headsplit.json", 128, 64, 4, 3)):
        for b in (1, 2, 8):
            row = {"model": name, "s": s, "h": h, "a": a, "layers": L, "b": b,
                   "per_layer_bytes": {}, "per_layer_terms_bf16": k_layer_terms(s, b, h, a, 2),
                   "per_layer_fp32_terms_total": sum(k_layer_terms(s, b, h, a, 4).values())}
            for t in (1, 2, 4):
                if a % t:
                    continue
                for sp in ((False,) if t == 1 else (False, True)):
                    for rc in ("none", "selective", "full"):
                        key = "t%d%s %s" % (t, " sp" if sp else "", rc)
                        row["per_layer_bytes"][key] = k_layer(s, b, h, a, t, sp, rc)
            row["all_layers_bytes_t1"] = L * k_layer(s, b, h, a)
            out.append(row)
    return out


# ----------------------------------------------------------------------------------------------

def check():
    """The transcriptions against the numbers DS's docs print (memory.rst, 2851M params, 8 GPUs,
    1 node; zero3 with 32M largest layer).  Stage 3 and stage-2-offload rows match the code;
    the stage-2 offload_optimizer=none row in the docs (15.93GB) does not: 4P + 16P/N."""
    ok = True
    z2 = ds_zero2_all_cold(2851e6, 8, 1)
    z3 = ds_zero3_all_cold(2851e6, 32e6, 8, 1)
    want_z3 = ["71.69GB |   0.12GB", "127.45GB |   0.12GB", "63.72GB |   0.78GB", "127.45GB |   0.78GB",
               "1.43GB |   6.09GB", "127.45GB |   6.09GB"]
    for r, w in zip(z3, want_z3):
        good = w in r["line"]
        ok &= good
        print("%s zero3 %s   (docs: %s)" % ("ok  " if good else "FAIL", r["line"].strip(), w))
    good = "127.45GB |   5.31GB" in z2[0]["line"]
    ok &= good
    print("%s zero2 %s   (docs: 127.45GB |   5.31GB)" % ("ok  " if good else "FAIL", z2[0]["line"].strip()))
    docs_none = ds_zero2_docs_formula(2851e6, 8) / GiB
    print("diff  zero2 %s   (docs: 127.45GB |  15.93GB; 4P+16P/N gives %.2fGB: the docs predate the code)" % (
        z2[1]["line"].strip(), docs_none))
    ok &= abs(docs_none - 15.93) < 0.005
    # MEG: vocab padding of Llama 3's 128256 at TP 8 (128*8 = 1024 -> 129024)
    pv = meg_padded_vocab_size(128256, 128, 8)
    print("%s megatron padded vocab 128256 @ tp8 -> %d (128*8 multiple)" % ("ok  " if pv == 129024 else "FAIL", pv))
    ok &= pv == 129024
    # K: the 34 + 5as/h decomposition (section 4.2) sums to Table 2's first row
    s, b, h, a = 1024, 1, 768, 12
    tot = sum(k_layer_terms(s, b, h, a, 2).values())
    good = tot == k_layer(s, b, h, a)
    ok &= good
    print("%s korthikanti term list sums to sbh(34+5as/h) = %d" % ("ok  " if good else "FAIL", tot))
    return ok


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--json", help="write every number to this file")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if args.check:
        return 0 if check() else 1
    out = {"sources": {"deepspeed": "microsoft/DeepSpeed@38327e07f6cd39b63418f60cedd1651b0be3e7c3",
                       "megatron": "NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553",
                       "korthikanti": "arXiv:2205.05198 Table 2"},
           "deepspeed": [], "megatron": [], "korthikanti": korthikanti_cases()}

    print("== DeepSpeed estimators (bytes per GPU / per CPU; model states only) ==")
    for model in LLAMA:
        total, largest = llama_params(model)
        for gpus, nodes in ((8, 1), (8, 4), (8, 128)):
            z2 = ds_zero2_all_cold(total, gpus, nodes)
            z3 = ds_zero3_all_cold(total, largest, gpus, nodes)
            out["deepspeed"].append({"model": model, "total_params": total, "largest_layer_params": largest,
                                     "num_gpus_per_node": gpus, "num_nodes": nodes, "zero2": z2, "zero3": z3})
            print("%s: %d params, largest layer %d, %d node(s) x %d GPUs" % (model, total, largest, nodes, gpus))
            print("   per CPU  |  per GPU |   Options  (zero2)")
            for r in z2:
                print("  " + r["line"])
            print("   per CPU  |  per GPU |   Options  (zero3)")
            for r in z3:
                print("  " + r["line"])

    print("\n== Megatron-LM theoretical_memory_usage.py (MB = 2^20 bytes, most loaded shard, first stage) ==")
    for name, model, layout in MEG_CASES:
        for nmb in (None, 4):
            a = llama_meg_args(model, layout)
            w, act, tot, detail = meg_report_theoretical_memory(a, num_microbatches=nmb)
            rec = {"case": name, "model": model, "layout": layout, "num_microbatches": nmb,
                   "padded_vocab_size": a.padded_vocab_size, "data_parallel_size": a.data_parallel_size,
                   "weight_and_optimizer_MB": w, "activation_MB": act, "total_MB": tot, "detail": detail}
            out["megatron"].append(rec)
            print("%-52s mb=%-4s weight+optimizer=%10.2f MB  activation=%10.2f MB  total=%10.2f MB  [%s; %.3f B params, "
                  "%.4f B on the most loaded shard, %.4g bytes/param]" % (
                      name, nmb, w, act, tot, detail["activation_path"], detail["total_parameters"] / 1e9,
                      detail["parameters_on_most_loaded_shard"] / 1e9, detail["bytes_per_parameter"]))

    print("\n== Korthikanti et al. Table 2, bytes per transformer layer (16-bit activations) ==")
    for row in out["korthikanti"]:
        print("%s  s=%d h=%d a=%d b=%d: %s" % (row["model"], row["s"], row["h"], row["a"], row["b"],
                                             ", ".join("%s=%d" % (k, v) for k, v in row["per_layer_bytes"].items())))
        print("    fp32 activations (same term list, 4-byte elements, 1-byte masks): %d per layer" %
              row["per_layer_fp32_terms_total"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
