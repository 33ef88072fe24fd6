"""packing_replica.py -- packed sequences (padding-free) as TRL's collator and transformers' sdpa path run them,
for measure_llm.py --packing.

Written from:
  huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8, trl/trainer/sft_trainer.py
      DataCollatorForLanguageModeling.torch_call with padding_free=True (what packing with the "bfd"
      strategies turns on): the examples' input_ids and labels concatenated into one row [1, B*L],
      position_ids restarting at 0 for each example (torch.arange(len(ids)) per example, concatenated),
      labels[position_ids == 0] = -100, and no attention_mask.
  huggingface/transformers @ 00c4411cbe15d4c56d54d3b56d4d171e9c289dac, src/transformers/masking_utils.py
      find_packed_sequence_indices, _preprocess_mask_arguments (position_ids given, no attention_mask, no
      cache: the packed-sequence check), create_causal_mask (and_masks(causal_mask_function,
      packed_sequence_mask_function(...)), allow_is_causal_skip=False), sdpa_mask (use_vmap=False:
      _non_vmap_expansion_sdpa's broadcast index views, torch >= 2.5: no allow_torch_fix), and_masks.
  pytorch attention.cpp scaled_dot_product_attention (cyyever/pytorch @ 0d188885a9a2a7bf3e73e414d541f43102429260):
      convert_boolean_attn_mask = at::where(mask, 0.0, at::scalar_tensor(-inf, query dtype)) before the
      backend (reference.sdpa_attention_forward calls bool_to_additive).
The flash_attention_2 varlen path needs CUDA and flash-attn: not replicated (docs/llm.md derives it).
"""
import torch


def collate_padding_free(batch, seq, vocab):
    """DataCollatorForLanguageModeling(padding_free=True).torch_call on `batch` examples of `seq` tokens:
    returns input_ids, labels and position_ids, each int64 [1, batch * seq] (pad() of one row: a copy)."""
    examples = [torch.randint(0, vocab, (seq,), dtype=torch.int64) for _ in range(batch)]
    input_ids = [torch.cat(examples, dim=0)]
    labels = [torch.cat([e.clone() for e in examples], dim=0)]
    position_ids = [torch.cat([torch.arange(len(e)) for e in examples], dim=0)]
    out = {"input_ids": torch.stack(input_ids), "labels": torch.stack(labels), "position_ids": torch.stack(position_ids)}
    out["labels"][out["position_ids"] == 0] = -100
    return out


def and_masks(*mask_functions):
    def and_mask(batch_idx, head_idx, q_idx, kv_idx):
        result = q_idx.new_ones((), dtype=torch.bool)
        for mask in mask_functions:
            result = result & mask(batch_idx, head_idx, q_idx, kv_idx).to(result.device)
        return result
    return and_mask


def causal_mask_function(batch_idx, head_idx, q_idx, kv_idx):
    return kv_idx <= q_idx


def packed_sequence_mask_function(packed_sequence_mask):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return packed_sequence_mask[batch_idx, q_idx] == packed_sequence_mask[batch_idx, kv_idx]
    return inner_mask


def find_packed_sequence_indices(position_ids):
    first_dummy_value = position_ids[:, :1] - 1
    position_diff = torch.diff(position_ids, prepend=first_dummy_value, dim=-1)
    packed_sequence_mask = (position_diff != 1).cumsum(-1)
    if (packed_sequence_mask[:, -1] == 0).all():
        return None
    return packed_sequence_mask


def _non_vmap_expansion_sdpa(batch_indices, head_indices, q_indices, kv_indices):
    batch_indices = batch_indices[:, None, None, None]
    head_indices = head_indices[None, :, None, None]
    q_indices = q_indices[None, None, :, None]
    kv_indices = kv_indices[None, None, None, :]
    return batch_indices, head_indices, q_indices, kv_indices


def sdpa_mask(batch_size, q_length, kv_length, mask_function):
    batch_arange = torch.arange(batch_size)
    head_arange = torch.arange(1)
    q_arange = torch.arange(q_length) + 0
    kv_arange = torch.arange(kv_length) + 0
    attention_mask = mask_function(*_non_vmap_expansion_sdpa(batch_arange, head_arange, q_arange, kv_arange))
    attention_mask = attention_mask.expand(batch_size, -1, q_length, kv_length)
    return attention_mask


def create_causal_mask(inputs_embeds, position_ids):
    """create_causal_mask(config, inputs_embeds, attention_mask=None, past_key_values=None, position_ids)
    for attn_implementation "sdpa": None when the row is one sequence (then is_causal), else the bool
    [B, 1, T, T] block-causal mask."""
    batch_size = inputs_embeds.shape[0]
    if batch_size != position_ids.shape[0]:
        position_ids = position_ids.expand(batch_size, -1)
    packed_sequence_mask = find_packed_sequence_indices(position_ids)
    if packed_sequence_mask is None:
        return None  # sdpa_mask's _ignore_causal_mask_sdpa: no mask, is_causal
    q_length = kv_length = inputs_embeds.shape[1]
    mask_factory_function = and_masks(causal_mask_function, packed_sequence_mask_function(packed_sequence_mask))
    return sdpa_mask(batch_size, q_length, kv_length, mask_factory_function)


def bool_to_additive(attn_mask, dtype):
    """attention.cpp convert_boolean_attn_mask at the pinned commit."""
    return torch.where(attn_mask, 0.0, torch.scalar_tensor(float("-inf"), dtype=dtype))
