"""sliding_replica.py -- transformers 5's sliding-window mask under sdpa, for the reference models
(reference.py: mistral, qwen2 / qwen3 with use_sliding_window, gemma2 at sdpa; gptoss_replica.py: gemma3_text).

Written from huggingface/transformers @ 00c4411cbe15d4c56d54d3b56d4d171e9c289dac,
src/transformers/masking_utils.py:
  create_sliding_window_causal_mask: layer_idx = past_key_values.is_sliding.index(True) (the first sliding
      layer's cache sizes), _preprocess_mask_arguments, mask_factory_function =
      sliding_window_causal_mask_function(sliding_window) = and_masks(sliding_window_overlay(w),
      causal_mask_function), allow_is_causal_skip = not is_compileable (True for DynamicCache or no cache),
      local_size = sliding_window;
  _preprocess_mask_arguments: a 2-D attention_mask made bool (.to(dtype=torch.bool): a copy, a local of the
      caller); q_length = inputs_embeds.shape[1]; with a cache q_offset = get_seq_length() and (kv_length,
      kv_offset) = get_mask_sizes of that layer, else kv_length = q_length (attention_mask None) or its
      length, kv_offset 0;
  sdpa_mask: prepare_padding_mask (no padding needed here), _ignore_causal_mask_sdpa (padding_mask sliced
      to the kv range by arange(kv_length) + kv_offset when longer; skip when (q_length == 1 or
      kv_length == q_length) and kv_length < local_size and padding_mask.all()), padding_mask_function
      and-ed on, the four aranges, _non_vmap_expansion_sdpa's views, the mask function, expand; torch >= 2.5:
      no allow_torch_fix;
and src/transformers/cache_utils.py DynamicSlidingWindowLayer.get_mask_sizes (kv_offset =
max(cumulative - window + 1, 0); kv_length = window - 1 + q_length once cumulative >= window, else
cumulative + q_length). Each model's forward makes the mask once (causal_mask_mapping["sliding_attention"],
MistralModel's single mask) and keeps it until it returns; the full layers' create_causal_mask returns None
here (kv_length == q_length or q_length == 1, no padding). F.scaled_dot_product_attention's bool conversion
is packing_replica.bool_to_additive (reference.sdpa_attention_forward calls it).
"""
import torch

from packing_replica import and_masks, causal_mask_function, _non_vmap_expansion_sdpa


def sliding_window_overlay(sliding_window):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx > q_idx - sliding_window
    return inner_mask


def sliding_window_causal_mask_function(sliding_window):
    return and_masks(sliding_window_overlay(sliding_window), causal_mask_function)


def padding_mask_function(padding_mask):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return padding_mask[batch_idx, kv_idx]
    return inner_mask


def _ignore_causal_mask_sdpa(padding_mask, query_length, kv_length, kv_offset, local_attention_size):
    if padding_mask is not None and padding_mask.shape[-1] > kv_length:
        mask_indices = torch.arange(kv_length)
        mask_indices += kv_offset
        padding_mask = padding_mask[:, mask_indices]
    return ((query_length == 1 or kv_length == query_length)
            and (local_attention_size is None or kv_length < local_attention_size)
            and (padding_mask is None or bool(padding_mask.all())))


def sdpa_mask(batch_size, q_length, kv_length, q_offset, kv_offset, mask_function, attention_mask, local_size):
    padding_mask = attention_mask  # prepare_padding_mask: kv_length + kv_offset == its length here
    if _ignore_causal_mask_sdpa(padding_mask, q_length, kv_length, kv_offset, local_size):
        return None
    if padding_mask is not None:
        mask_function = and_masks(mask_function, padding_mask_function(padding_mask))
    batch_arange = torch.arange(batch_size)
    head_arange = torch.arange(1)
    q_arange = torch.arange(q_length) + q_offset
    kv_arange = torch.arange(kv_length) + kv_offset
    attention_mask = mask_function(*_non_vmap_expansion_sdpa(batch_arange, head_arange, q_arange, kv_arange))
    attention_mask = attention_mask.expand(batch_size, -1, q_length, kv_length)
    return attention_mask


def mask_sizes(cache, layer_idx, q_length, sliding_window):
    """DynamicSlidingWindowLayer.get_mask_sizes on reference.DynamicCache's layer (cumulative tokens seen)."""
    cum = cache.cumulative[layer_idx] if layer_idx < len(cache.cumulative) else 0
    kv_offset = max(cum - sliding_window + 1, 0)
    kv_length = sliding_window - 1 + q_length if cum >= sliding_window else cum + q_length
    return kv_length, kv_offset


def create_sliding_window_causal_mask(inputs_embeds, attention_mask, past_key_values, sliding_window, layer_types):
    """The sdpa mask of the "sliding_attention" layers, or None (is_causal)."""
    if attention_mask is not None and attention_mask.ndim == 2:
        attention_mask = attention_mask.to(dtype=torch.bool)
    q_length = inputs_embeds.shape[1]
    if past_key_values is not None:
        layer_idx = layer_types.index("sliding_attention")
        q_offset = past_key_values.get_seq_length()
        kv_length, kv_offset = mask_sizes(past_key_values, layer_idx, q_length, sliding_window)
    else:
        q_offset, kv_offset = 0, 0
        kv_length = q_length if attention_mask is None else attention_mask.shape[-1]
    return sdpa_mask(inputs_embeds.shape[0], q_length, kv_length, q_offset, kv_offset,
                     sliding_window_causal_mask_function(sliding_window), attention_mask, sliding_window)


def layer_types(cfg):
    """The layer_types each config class writes (transformers 5): MistralConfig / MixtralConfig none (every
    layer sliding when sliding_window is set: MistralModel's one create_sliding_window_causal_mask);
    Qwen2Config / Qwen3Config "sliding_attention" if use_sliding_window and i >= max_window_layers;
    Gemma2Config "sliding_attention" if (i + 1) % 2 else "full_attention"; the config's own list first."""
    n, t = cfg.num_hidden_layers, cfg.model_type
    if cfg.d.get("layer_types"):
        return list(cfg.d["layer_types"])
    if t in ("qwen2", "qwen3"):
        on = cfg.d.get("use_sliding_window") and cfg.sliding_window
        mwl = cfg.d.get("max_window_layers", n)
        return ["sliding_attention" if on and i >= mwl else "full_attention" for i in range(n)]
    if t == "gemma2":
        return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    if t in ("mistral", "mixtral", "starcoder2") and cfg.sliding_window:
        return ["sliding_attention"] * n
    if t == "cohere2":  # Cohere2Config.__post_init__ (cohere_replica.py)
        import cohere_replica
        return cohere_replica.layer_types(cfg)
    if t == "olmo3":  # Olmo3Config.__post_init__ (near_llama_replica.py)
        import near_llama_replica
        return near_llama_replica.olmo3_layer_types(cfg)
    if t == "exaone4" and cfg.sliding_window is not None:  # Exaone4Config.__init__ (near_llama_replica.py)
        import near_llama_replica
        return near_llama_replica.exaone4_layer_types(cfg)
    return ["full_attention"] * n
