"""mllama_replica.py -- MllamaForConditionalGeneration (Llama 3.2 Vision) on text alone, written from the transformers
source, measured by measure_llm.py and counted by `python3 mllama_replica.py [--check] CONFIG...`.

Sources read (huggingface/transformers):
  CM = models/mllama/configuration_mllama.py @032b32abfb07ba36e8fc1a8e5251514523edce34: MllamaTextConfig.__init__'s
       defaults (vocab_size 128256, hidden_size 4096, hidden_act silu, num_hidden_layers 40, num_attention_heads 32,
       num_key_value_heads 8, intermediate_size 14336, rope_theta 500000, rms_norm_eps 1e-5, max_position_embeddings
       131072, tie_word_embeddings False, cross_attention_layers None -> [3, 8, 13, 18, 23, 28, 33, 38], dropout 0,
       pad_token_id 128004) and MllamaVisionConfig.__init__'s (hidden_size 1280, num_hidden_layers 32,
       num_global_layers 8, num_attention_heads 16 stored as attention_heads, num_channels 3, intermediate_size 5120,
       vision_output_dim 7680, image_size 448, patch_size 14, max_num_tiles 4, supported_aspect_ratios None -> eight).
  MM = models/mllama/modeling_mllama.py @befb7955722ef3a9c152cb47efa0d87616709ec1:
       MllamaVisionModel.__init__ (patch_embedding Conv2d without bias, class_embedding, gated_positional_embedding,
       pre_/post_tile_positional_embedding, layernorm_pre / _post, transformer and global_transformer of
       MllamaVisionEncoderLayers: self_attn q/k/v/o_proj without bias, mlp fc1 / fc2 with biases, two LayerNorms,
       gate_attn / gate_ffn when gated); MllamaForConditionalGeneration.multi_modal_projector nn.Linear(
       vision_output_dim, hidden, bias=True); MllamaTextModel.__init__: embed_tokens nn.Embedding(vocab_size + 8,
       hidden, pad_token_id), MllamaCrossAttentionDecoderLayer at cross_attention_layers (cross_attn q/k/v/o_proj,
       q_norm / k_norm MllamaTextRMSNorm(head_dim), input_layernorm, cross_attn_attn_gate, mlp, post_attention_layernorm,
       cross_attn_mlp_gate), MllamaSelfAttentionDecoderLayer elsewhere (LlamaDecoderLayer's modules: self_attn
       q/k/v/o_proj, MllamaTextMLP gate/up/down_proj, input_layernorm, post_attention_layernorm), norm,
       MllamaRotaryEmbedding (the llama3 rope_scaling of ROPE_INIT_FUNCTIONS); MllamaForCausalLM.lm_head.
       MllamaTextModel.forward: "For text-only path we should skip cross attention layers": with no
       cross_attention_states and an empty cache the cross-attention layer is `continue`d. MllamaForConditionalGeneration
       .forward without pixel_values and cross_attention_mask runs language_model(input_ids, ...) alone.
So the text-only model is reference.py's LlamaForCausalLM over the self-attention layers, its embed_tokens vocab_size
+ 8 rows; the tower, the projector and the cross-attention layers are built (their parameters trainable, as
from_pretrained leaves them) and never run: no gradient, no optimizer state.

With images (measure_llm.py --image WxH --images N, train; set_images below), from MM as read at befb7955:
  MllamaForConditionalGeneration.forward: vision_outputs = vision_model(pixel_values, aspect_ratio_ids,
       aspect_ratio_mask) (a BaseModelOutput held until forward returns: its last_hidden_state, the cat of the final
       and the intermediate states, stays alive through the language model); cross_attention_states =
       multi_modal_projector(vision_outputs[0]).reshape(-1, num_patches, hidden); _prepare_cross_attention_mask
       (repeat_interleave(num_patches, dim=3) of the int64 mask, view, unsqueeze(1), (1.0 - mask).to(dtype),
       masked_fill(.to(bool), finfo.min), full_text_row_masked_out_mask = (mask != min).any(-1).type_as(mask)[..., None],
       mask *= it); cache_position None in training: no slicing; language_model(...) with them.
  MllamaVisionModel.forward: pixel_values.reshape(B * N * T, C, S, S), patch_embedding(pixel_values.to(dtype)),
       flatten(2).transpose(1, 2), reshape(B * N, T, -1, dim) (a copy of the transposed view),
       pre_tile_positional_embedding, reshape, apply_class_embedding (expand + cat), reshape,
       gated_positional_embedding ((1 - gate.tanh()) * embedding added; tile_embedding(ids) reshaped, * gate.tanh(),
       added), layernorm_pre, F.pad to a multiple of 8 patches, _prepare_aspect_ratio_attention_mask (the
       [B * N, 1, T * P8, T * P8] additive mask of the model's dtype: repeat, fill, 1 - m, m @ m.T * min, unsqueeze),
       view, transformer(output_hidden_states=True: MllamaVisionEncoder keeps every layer's input and the final
       state, num_hidden_layers + 1 tensors, until the forward returns), layernorm_post, reshape,
       post_tile_positional_embedding, reshape, global_transformer (output_hidden_states None: nothing kept),
       reshape, [:, :, :slice_index], reshape (a copy when padded), torch.stack of the intermediate_layers_indices
       states (dim -1), reshape, slice, reshape (a copy when padded), torch.cat([final, intermediate], -1).
  MllamaVisionEncoderLayer.forward (residual, input_layernorm, MllamaVisionSdpaAttention: q/k/v_proj, view,
       transpose, F.scaled_dot_product_attention(attn_mask=the aspect-ratio mask), transpose(1, 2).contiguous(),
       reshape, o_proj; gate_attn.tanh() * h when gated; residual add; post_attention_layernorm, MllamaVisionMLP
       fc1 / gelu / fc2, gate_ffn.tanh() * h when gated, residual add).
  MllamaTextModel.forward: the cross-attention layers run (cross_attention_states given); the sdpa causal mask is
       None as for Llama (reference.py).
  MllamaCrossAttentionDecoderLayer.forward / MllamaTextCrossSdpaAttention.forward: input_layernorm, q_proj, view,
       transpose, q_norm; k_proj / v_proj of cross_attention_states, view, transpose; repeat_kv both; k_norm;
       (on CUDA with a mask) q / k / v .contiguous(); sdpa(attn_mask=cross_attention_mask, is_causal False),
       transpose(1, 2).contiguous(), reshape, o_proj; residual + cross_attn_attn_gate.tanh() * h;
       post_attention_layernorm, mlp, full_text_row_masked_out_mask[:, 0] * h, residual + cross_attn_mlp_gate.tanh() * h.
  MllamaForCausalLM.forward: logits = lm_head(hidden_states[:, -num_logits_to_keep:, :]).float(), loss_function.
  The processor: PI = models/mllama/image_processing_mllama.py @0350540de3d2a016f85b83ea804ef3f07e8e4f67
       (get_all_supported_aspect_ratios, get_optimal_tiled_canvas, build_aspect_ratio_mask, pack_images: pixel_values
       [B, max_num_images, max_image_tiles, C, tile, tile] float32 zero-padded to max_image_tiles whatever the
       image's tiles, convert_aspect_ratios_to_ids); MllamaProcessor's cross_attention_mask
       (processing_mllama.py get_cross_attention_token_mask / convert_sparse_cross_attention_mask_to_dense: [B, L,
       max_num_images, max_image_tiles] int64, 1 from an image's <|image|> token to the end over its tiles) is
       written from memory, not read at a pinned commit. One <|image|> token per image first, then the text: --seq
       counts both; the labels of the <|image|> tokens -100 (its id, vocab_size or above, is past lm_head's classes).
  The tower and the projector frozen (LLaMA-Factory's freeze_vision_tower / freeze_multi_modal_projector defaults,
       as the other VLM replicas): no graph through them. The cross-attention layers train with the language model.
  generate() (measure_llm.py --mode generate --image): MllamaForConditionalGeneration.prepare_inputs_for_generation
       passes pixel_values / aspect_ratio_ids / aspect_ratio_mask while cache_position[0] == 0 and the
       cross_attention_mask every step; _update_model_kwargs_for_generation cats its last row each step; forward slices
       the prepared masks with [:, :, cache_position]. A cross-attention layer's keys / values go through
       past_key_value.update in the prefill and are read back (key_cache[layer_idx]) in the decoding steps, repeat_kv
       and k_norm applied each time. The cache is reference.py's DynamicCache (the harness's, newer DynamicLayer: the
       update's cat copies the prefill's keys / values), the cross-attention layers in slots after the self-attention
       layers' (the memory does not depend on the index); the DynamicCache of befb7955's time stored the first update's
       tensors without a copy (cache_utils.py not read at a pinned commit here), a difference of one copy of the
       cross-attention keys / values per layer.
"""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import reference as R
import siglip_replica
import vctorch
from vision_encoder_replica import Conv2d
import torch.nn.functional as F

TEXT = dict(vocab_size=128256, hidden_size=4096, hidden_act="silu", num_hidden_layers=40, num_attention_heads=32,
            num_key_value_heads=8, intermediate_size=14336, rope_theta=500000.0, rms_norm_eps=1e-5,
            max_position_embeddings=131072, tie_word_embeddings=False, dropout=0.0, pad_token_id=128004)
CROSS = [3, 8, 13, 18, 23, 28, 33, 38]
VISION = dict(hidden_size=1280, num_hidden_layers=32, num_global_layers=8, attention_heads=16, num_channels=3,
              intermediate_size=5120, vision_output_dim=7680, image_size=448, patch_size=14, max_num_tiles=4,
              norm_eps=1e-5, intermediate_layers_indices=[3, 7, 15, 23, 30], hidden_act="gelu")


def flatten(raw):
    """measure_llm.py's view of an mllama config.json: text_config's keys with CM's defaults, model_type mllama, the
    vision_config beside them."""
    t = dict(TEXT)
    t.update({k: v for k, v in (raw.get("text_config") or {}).items() if v is not None})
    t["cross_attention_layers"] = (raw.get("text_config") or {}).get("cross_attention_layers") or CROSS
    return dict(t, model_type="mllama", vision_config=raw.get("vision_config") or {},
                image_token_index=raw.get("image_token_index", 128256))


class RMSNorm(nn.Module):
    """MM MllamaTextRMSNorm: a weight of its size."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))


def vision_keys(v):
    k = dict(VISION)
    k.update({n: x for n, x in v.items() if n in VISION and x is not None})
    if "attention_heads" not in v and v.get("num_attention_heads") is not None:
        k["attention_heads"] = v["num_attention_heads"]
    k["ratios"] = len(v.get("supported_aspect_ratios") or [None] * 8)
    return k


def prepare_aspect_ratio_attention_mask(aspect_ratio_mask, num_patches, target_length, dtype):
    """MM _prepare_aspect_ratio_attention_mask."""
    batch_size, max_num_tiles = aspect_ratio_mask.shape
    attention_mask = aspect_ratio_mask.view(batch_size, max_num_tiles, 1, 1).to(dtype)
    attention_mask = attention_mask.repeat(1, 1, target_length, 1)
    pad_patches = target_length - num_patches
    attention_mask[:, :, -pad_patches:] = 0
    attention_mask = 1 - attention_mask
    attention_mask = attention_mask.reshape(batch_size, max_num_tiles * target_length, 1)
    attention_mask = attention_mask @ attention_mask.transpose(-1, -2) * torch.finfo(dtype).min
    attention_mask = attention_mask.unsqueeze(1)
    return attention_mask


class VisionAttention(nn.Module):
    """MM MllamaVisionSdpaAttention (transformers' default sdpa)."""

    def __init__(self, H, NH):
        super().__init__()
        self.num_heads, self.head_dim = NH, H // NH
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            setattr(self, n, vctorch._Linear2x(H, H, bias=False))

    def forward(self, hidden_state, attention_mask):
        query = self.q_proj(hidden_state)
        key = self.k_proj(hidden_state)
        value = self.v_proj(hidden_state)
        batch_size, q_seq_len, _ = query.shape
        _, kv_seq_len, _ = key.shape
        query = query.view(batch_size, q_seq_len, self.num_heads, self.head_dim)
        key = key.view(batch_size, kv_seq_len, self.num_heads, self.head_dim)
        value = value.view(batch_size, kv_seq_len, self.num_heads, self.head_dim)
        query = query.transpose(1, 2)
        key = key.transpose(1, 2)
        value = value.transpose(1, 2)
        attn_output = vctorch._sdpa_math_2x(query, key, value, attn_mask=attention_mask)
        del query, key, value
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(batch_size, q_seq_len, -1)
        return self.o_proj(attn_output)


class VisionEncoderLayer(nn.Module):
    """MM MllamaVisionEncoderLayer."""

    def __init__(self, k, gated):
        super().__init__()
        H = k["hidden_size"]
        self.is_gated = gated
        self.self_attn = VisionAttention(H, k["attention_heads"])
        # MllamaVisionMLP is "Copied from transformers.models.clip.modeling_clip.CLIPMLP": siglip_replica's SiglipMLP
        # (the same fc1, ACT2FN[hidden_act], fc2)
        self.mlp = siglip_replica.SiglipMLP(dict(hidden_size=H, intermediate_size=k["intermediate_size"],
                                                 hidden_act=k.get("hidden_act", "gelu")))
        self.input_layernorm = vctorch._LayerNorm2x(H, eps=k["norm_eps"])
        self.post_attention_layernorm = vctorch._LayerNorm2x(H, eps=k["norm_eps"])
        if gated:
            self.gate_attn = nn.Parameter(torch.zeros(1))
            self.gate_ffn = nn.Parameter(torch.zeros(1))

    def forward(self, hidden_state, attention_mask):
        residual = hidden_state
        hidden_state = self.input_layernorm(hidden_state)
        hidden_state = self.self_attn(hidden_state, attention_mask)
        if self.is_gated:
            hidden_state = self.gate_attn.tanh() * hidden_state
        hidden_state = residual + hidden_state
        residual = hidden_state
        hidden_state = self.post_attention_layernorm(hidden_state)
        hidden_state = self.mlp(hidden_state)
        if self.is_gated:
            hidden_state = self.gate_ffn.tanh() * hidden_state
        hidden_state = residual + hidden_state
        return hidden_state


class VisionEncoder(nn.Module):
    """MM MllamaVisionEncoder.forward: encoder_states (each layer's input, then the final state) when
    output_hidden_states."""

    def __init__(self, k, n, gated):
        super().__init__()
        self.layers = nn.ModuleList(VisionEncoderLayer(k, gated) for _ in range(n))

    def forward(self, hidden_states, attention_mask, output_hidden_states):
        encoder_states = () if output_hidden_states else None
        for encoder_layer in self.layers:
            if output_hidden_states:
                encoder_states = encoder_states + (hidden_states,)
            hidden_states = encoder_layer(hidden_states, attention_mask)
        if output_hidden_states:
            encoder_states = encoder_states + (hidden_states,)
        return hidden_states, encoder_states


class AspectRatioEmbedding(nn.Module):
    """MM MllamaPrecomputedAspectRatioEmbedding(is_gated=True)."""

    def __init__(self, ids, T, H):
        super().__init__()
        self.max_num_tiles, self.hidden_size = T, H
        self.embedding = nn.Embedding(ids, T * H)
        self.gate = nn.Parameter(torch.zeros(1))

    def forward(self, hidden_state, aspect_ratio_ids):
        embeddings = self.embedding(aspect_ratio_ids)
        embeddings = embeddings.reshape(-1, self.max_num_tiles, 1, self.hidden_size)
        embeddings = embeddings * self.gate.tanh()
        hidden_state = hidden_state + embeddings
        return hidden_state


class PositionEmbedding(nn.Module):
    """MM MllamaPrecomputedPositionEmbedding."""

    def __init__(self, ids, T, npat, H):
        super().__init__()
        self.max_num_tiles, self.num_patches, self.hidden_size = T, npat, H
        self.gate = nn.Parameter(torch.zeros(1))
        self.embedding = nn.Parameter(torch.zeros(npat, H))
        self.tile_embedding = nn.Embedding(ids, T * npat * H)

    def forward(self, hidden_state, aspect_ratio_ids):
        gated_position_embedding = (1 - self.gate.tanh()) * self.embedding
        hidden_state = hidden_state + gated_position_embedding.view(1, 1, self.num_patches, self.hidden_size)
        del gated_position_embedding
        tile_position_embedding = self.tile_embedding(aspect_ratio_ids)
        batch_size = hidden_state.shape[0]
        tile_position_embedding = tile_position_embedding.reshape(batch_size, self.max_num_tiles, self.num_patches,
                                                                  self.hidden_size)
        gated_tile_position_embedding = self.gate.tanh() * tile_position_embedding
        del tile_position_embedding
        hidden_state = hidden_state + gated_tile_position_embedding
        return hidden_state


class MllamaVisionModel(nn.Module):
    """MM MllamaVisionModel: the parameters module by module (__init__) and forward (the header)."""

    def __init__(self, k):
        super().__init__()
        H, T, ids = k["hidden_size"], k["max_num_tiles"], k["ratios"] + 1
        P = k["patch_size"]
        self.k = k
        self.num_patches = npat = (k["image_size"] // P) ** 2 + 1
        self.patch_embedding = Conv2d(k["num_channels"], H, kernel_size=P, stride=P, padding="valid", bias=False)
        self.class_embedding = nn.Parameter(torch.zeros(H))
        self.gated_positional_embedding = PositionEmbedding(ids, T, npat, H)
        self.pre_tile_positional_embedding = AspectRatioEmbedding(ids, T, H)
        self.post_tile_positional_embedding = AspectRatioEmbedding(ids, T, H)
        self.layernorm_pre = vctorch._LayerNorm2x(H)
        self.layernorm_post = vctorch._LayerNorm2x(H)
        self.transformer = VisionEncoder(k, k["num_hidden_layers"], False)
        self.global_transformer = VisionEncoder(k, k["num_global_layers"], True)

    def apply_class_embedding(self, hidden_state):
        batch_size, _, hidden_size = hidden_state.shape
        class_embedding = self.class_embedding.expand(batch_size, 1, hidden_size)
        hidden_state = torch.cat([class_embedding, hidden_state], dim=1)
        return hidden_state

    def forward(self, pixel_values, aspect_ratio_ids, aspect_ratio_mask):
        dtype = self.class_embedding.dtype
        batch_size, num_concurrent_media, num_tiles, num_channels, height, width = pixel_values.shape
        pixel_values = pixel_values.reshape(batch_size * num_concurrent_media * num_tiles, num_channels, height, width)
        aspect_ratio_ids = aspect_ratio_ids.reshape(batch_size * num_concurrent_media, -1)
        patch_embeds = self.patch_embedding(pixel_values.to(dtype))
        hidden_state = patch_embeds.flatten(2).transpose(1, 2)
        del patch_embeds
        _, num_patches, dim = hidden_state.shape
        hidden_state = hidden_state.reshape(batch_size * num_concurrent_media, num_tiles, -1, dim)
        hidden_state = self.pre_tile_positional_embedding(hidden_state, aspect_ratio_ids)
        hidden_state = hidden_state.reshape(batch_size * num_concurrent_media * num_tiles, num_patches, dim)
        hidden_state = self.apply_class_embedding(hidden_state)
        num_patches += 1
        hidden_state = hidden_state.reshape(batch_size * num_concurrent_media, num_tiles, num_patches, dim)
        hidden_state = self.gated_positional_embedding(hidden_state, aspect_ratio_ids)
        hidden_state = self.layernorm_pre(hidden_state)
        num_padding_patches = (8 - (hidden_state.shape[-2] % 8)) % 8
        hidden_state = F.pad(hidden_state, (0, 0, 0, num_padding_patches), mode="constant", value=0)
        slice_index = -num_padding_patches if num_padding_patches > 0 else None
        attention_mask = aspect_ratio_mask.reshape(batch_size * num_concurrent_media, -1)
        attention_mask = prepare_aspect_ratio_attention_mask(attention_mask, self.num_patches, hidden_state.shape[2], dtype)
        hidden_state = hidden_state.view(batch_size * num_concurrent_media, -1, dim)
        output = self.transformer(hidden_state, attention_mask, True)
        hidden_state = output[0]
        hidden_state = self.layernorm_post(hidden_state)
        hidden_state = hidden_state.reshape(batch_size * num_concurrent_media, num_tiles, num_patches + num_padding_patches, dim)
        hidden_state = self.post_tile_positional_embedding(hidden_state, aspect_ratio_ids)
        hidden_state = hidden_state.reshape(batch_size * num_concurrent_media, num_tiles * (num_patches + num_padding_patches), dim)
        global_output = self.global_transformer(hidden_state, attention_mask, False)
        hidden_state = global_output[0]
        del global_output
        hidden_state = hidden_state.reshape(batch_size * num_concurrent_media, num_tiles, num_patches + num_padding_patches, dim)
        hidden_state = hidden_state[:, :, :slice_index]
        hidden_state = hidden_state.reshape(batch_size, num_concurrent_media, num_tiles, num_patches, dim)
        all_intermediate_hidden_states = [output[1][i] for i in self.k["intermediate_layers_indices"]]
        intermediate_hidden_states = torch.stack(all_intermediate_hidden_states, dim=-1)
        intermediate_hidden_states = intermediate_hidden_states.reshape(
            batch_size * num_concurrent_media, num_tiles, num_patches + num_padding_patches, -1)
        intermediate_hidden_states = intermediate_hidden_states[:, :, :slice_index]
        intermediate_hidden_states = intermediate_hidden_states.reshape(batch_size, num_concurrent_media, num_tiles,
                                                                        num_patches, -1)
        hidden_state = torch.cat([hidden_state, intermediate_hidden_states], dim=-1)
        return hidden_state  # BaseModelOutput(last_hidden_state=hidden_state), hidden_states None


class CrossAttention(nn.Module):
    """MM MllamaTextCrossSdpaAttention (training: no cache)."""

    def __init__(self, cfg):
        super().__init__()
        H, NH, KV = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
        D = H // NH
        self.num_heads, self.num_key_value_heads, self.head_dim = NH, KV, D
        self.num_key_value_groups = NH // KV
        self.dropout = cfg.d.get("dropout", 0.0)
        self.q_proj = R.Linear(H, NH * D, bias=False)
        self.k_proj = R.Linear(H, KV * D, bias=False)
        self.v_proj = R.Linear(H, KV * D, bias=False)
        self.o_proj = R.Linear(NH * D, H, bias=False)
        self.q_norm = R.LlamaRMSNorm(D, eps=cfg.rms_norm_eps)
        self.k_norm = R.LlamaRMSNorm(D, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, cross_attention_states, attention_mask, past_key_value=None, slot=None):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        query_states = self.q_norm(query_states)
        if cross_attention_states is not None:
            key_states = self.k_proj(cross_attention_states)
            value_states = self.v_proj(cross_attention_states)
            key_states = key_states.view(bsz, -1, self.num_key_value_heads, self.head_dim).transpose(1, 2)
            value_states = value_states.view(bsz, -1, self.num_key_value_heads, self.head_dim).transpose(1, 2)
            if past_key_value is not None:  # the prefill: the image's keys / values into the cache (this layer's)
                key_states, value_states = past_key_value.update(key_states, value_states, slot)
        else:  # cache_position[0] != 0: the cached ones
            key_states, value_states = past_key_value.keys[slot], past_key_value.values[slot]
        key_states = R.repeat_kv(key_states, self.num_key_value_groups)
        value_states = R.repeat_kv(value_states, self.num_key_value_groups)
        key_states = self.k_norm(key_states)
        if attention_mask is not None:  # query_states.device.type == "cuda": the contiguous copies (a no-op when already)
            query_states = query_states.contiguous()
            key_states = key_states.contiguous()
            value_states = value_states.contiguous()
        is_causal = attention_mask is None and q_len > 1
        attn_output = vctorch._sdpa_math_2x(query_states, key_states, value_states, attn_mask=attention_mask,
                                            dropout_p=self.dropout if self.training else 0.0, is_causal=is_causal)
        del query_states, key_states, value_states
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)


class CrossAttentionDecoderLayer(nn.Module):
    """MM MllamaCrossAttentionDecoderLayer."""

    def __init__(self, cfg):
        super().__init__()
        H = cfg.hidden_size
        self.cross_attn = CrossAttention(cfg)
        self.input_layernorm = R.LlamaRMSNorm(H, eps=cfg.rms_norm_eps)
        self.cross_attn_attn_gate = nn.Parameter(torch.zeros(1))
        self.mlp = R.GatedMLP(cfg, cfg.hidden_act)
        self.post_attention_layernorm = R.LlamaRMSNorm(H, eps=cfg.rms_norm_eps)
        self.cross_attn_mlp_gate = nn.Parameter(torch.zeros(1))

    def forward(self, hidden_states, cross_attention_states, cross_attention_mask, full_text_row_masked_out_mask,
                past_key_value=None, slot=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.cross_attn(hidden_states, cross_attention_states, cross_attention_mask, past_key_value, slot)
        hidden_states = residual + self.cross_attn_attn_gate.tanh() * hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        if full_text_row_masked_out_mask is not None:
            hidden_states = full_text_row_masked_out_mask[:, 0] * hidden_states
        hidden_states = residual + self.cross_attn_mlp_gate.tanh() * hidden_states
        return hidden_states


def prepare_cross_attention_mask(cross_attention_mask, num_vision_tokens, dtype):
    """MM _prepare_cross_attention_mask."""
    batch_size, text_total_length, *_ = cross_attention_mask.shape
    cross_attention_mask = cross_attention_mask.repeat_interleave(num_vision_tokens, dim=3)
    cross_attention_mask = cross_attention_mask.view(batch_size, text_total_length, -1)
    cross_attention_mask = cross_attention_mask.unsqueeze(1)
    inverted_cross_attn_mask = (1.0 - cross_attention_mask).to(dtype)
    cross_attention_mask = inverted_cross_attn_mask.masked_fill(inverted_cross_attn_mask.to(torch.bool),
                                                                torch.finfo(dtype).min)
    del inverted_cross_attn_mask
    negative_inf_value = torch.finfo(dtype).min
    full_text_row_masked_out_mask = (cross_attention_mask != negative_inf_value).any(dim=-1).type_as(
        cross_attention_mask)[..., None]
    cross_attention_mask *= full_text_row_masked_out_mask
    return cross_attention_mask, full_text_row_masked_out_mask


def tiles(width, height, tile, max_image_tiles=4):
    """PI get_optimal_tiled_canvas (the smallest upscale, else the least downscale; the smallest area among equals)
    -> (num_tiles_height, num_tiles_width) of the canvas."""
    ars = [(w, h) for w in range(1, max_image_tiles + 1) for h in range(1, max_image_tiles + 1) if w * h <= max_image_tiles]
    canv = [(a * tile, b * tile) for a, b in ars]  # np.array(possible_tile_arrangements) * tile_size: (height, width)
    scales = [min(th / height, tw / width) for th, tw in canv]
    up = [x for x in scales if x >= 1]
    sel = min(up) if up else max(x for x in scales if x < 1)
    chosen = [c for c, x in zip(canv, scales) if x == sel]
    ch, cw = min(chosen, key=lambda c: c[0] * c[1])
    return ch // tile, cw // tile


def set_images(model, input_ids, image, images):
    """MllamaProcessor's outputs for `images` WxH images per sample (the module docstring's PI): the <|image|>
    tokens first in input_ids (image_token_index), pixel_values [B, N, max_image_tiles, C, tile, tile] float32,
    aspect_ratio_ids [B, N], aspect_ratio_mask [B, N, T] and cross_attention_mask [B, L, N, T] int64, resident;
    returns the labels (input_ids' copy, -100 at the <|image|> tokens)."""
    k = model.vision_model.k
    T, tile = k["max_num_tiles"], k["image_size"]
    W, Hh = (int(x) for x in image.lower().split("x"))
    th, tw = tiles(W, Hh, tile, T)
    ars = [(w, h) for w in range(1, T + 1) for h in range(1, T + 1) if w * h <= T]
    B, L = input_ids.shape
    tid = model.image_token_index
    input_ids[:, :images] = tid
    model.pixel_values = torch.randn(B, images, T, k["num_channels"], tile, tile)
    model.aspect_ratio_ids = torch.full((B, images), ars.index((th, tw)) + 1, dtype=torch.int64)
    m = torch.zeros(B, images, T, dtype=torch.int64)
    m[:, :, 0] = 1
    m[:, :, :th * tw] = 1
    model.aspect_ratio_mask = m
    c = torch.zeros(B, L, images, T, dtype=torch.int64)
    for j in range(images):
        c[:, j:, j, :th * tw] = 1
    model.cross_attention_mask = c
    labels = input_ids.clone()
    labels[:, :images] = -100
    return labels


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of flatten()'s keys."""
    d = cfg.d
    cross = list(d["cross_attention_layers"])
    text = R.Config(dict(d, model_type="llama", num_hidden_layers=d["num_hidden_layers"] - len(cross),
                         attention_dropout=d.get("dropout", 0.0)))

    class Mllama(R.CausalLM):
        """MllamaForConditionalGeneration: without pixel_values the text-only path (R.CausalLM over the self-attention
        layers); with them the header's image path."""

        def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None, attention_mask=None,
                    logits_to_keep=0, **kw):
            if self.cross_attention_mask is None:  # no image given
                return super().forward(input_ids, labels, past_key_values, cache_position, attention_mask,
                                       logits_to_keep, **kw)
            if self.attn_impl != "sdpa" or kw.get("position_ids") is not None:
                raise ValueError("mllama_replica.py: images: sdpa, unpacked")
            vision_outputs = cross_attention_states = None
            if self.pixel_values is not None:  # prepare_inputs_for_generation: the prefill's (cache_position[0] == 0)
                vision_outputs = self.vision_model(self.pixel_values, self.aspect_ratio_ids, self.aspect_ratio_mask)
                cross_attention_states = vision_outputs
                cross_attention_states = self.multi_modal_projector(cross_attention_states).reshape(
                    -1, cross_attention_states.shape[-2], H)
            dtype = self.embed_tokens.weight.dtype
            cross_attention_mask, full_text_row_masked_out_mask = prepare_cross_attention_mask(
                self.cross_attention_mask, self.vision_model.num_patches, dtype)
            if cache_position is not None:  # generate(): the rows of this step's tokens (advanced indexing: copies)
                cross_attention_mask = cross_attention_mask[:, :, cache_position]
                full_text_row_masked_out_mask = full_text_row_masked_out_mask[:, :, cache_position]
            # MllamaTextModel.forward (sdpa: _update_causal_mask gives None for an all-ones mask, as for Llama)
            inputs_embeds = self.embed_tokens(input_ids)
            hidden_states = inputs_embeds
            if cache_position is None:
                cache_position = torch.arange(0, inputs_embeds.shape[1])
            position_ids = cache_position.unsqueeze(0)
            position_embeddings = self.rotary_emb(hidden_states, position_ids)
            ckpt = self.gradient_checkpointing and self.training
            si = 0
            for idx in range(n_all):
                if idx in cross:
                    j = cross.index(idx)
                    if cross_attention_states is None and (past_key_values is None or
                                                           past_key_values.get_seq_length(len(self.layers) + j) == 0):
                        continue  # the text-only skip
                    layer = self.cross_layers[j]
                    args = (hidden_states, cross_attention_states, cross_attention_mask, full_text_row_masked_out_mask,
                            past_key_values, len(self.layers) + j)
                    hidden_states = vctorch._checkpoint2x(layer.__call__, *args) if ckpt else layer(*args)
                    del args
                else:
                    hidden_states = self._layer(self.layers[si], hidden_states, None, position_embeddings,
                                                past_key_values, cache_position.shape[0], 0)
                    si += 1
            hidden_states = self.norm(hidden_states)
            del position_embeddings, inputs_embeds
            # MllamaForCausalLM.forward: lm_head(hidden_states[:, -num_logits_to_keep:, :]).float(), loss_function
            logits = self.lm_head(hidden_states[:, -logits_to_keep:, :]).float()
            del hidden_states
            loss = R.for_causal_lm_loss(logits, labels, text.vocab_size) if labels is not None else None
            del vision_outputs, cross_attention_states, cross_attention_mask, full_text_row_masked_out_mask
            return loss, logits

    n_all = d["num_hidden_layers"]
    model = Mllama(text, attn_impl)
    H, V = text.hidden_size, text.vocab_size
    model.embed_tokens = nn.Embedding(V + 8, H, text.pad_token_id)  # MllamaTextModel: vocab_size + 8 rows
    model.cross_layers = nn.ModuleList(CrossAttentionDecoderLayer(text) for _ in cross)
    k = vision_keys(d.get("vision_config") or {})
    model.vision_model = MllamaVisionModel(k)
    model.multi_modal_projector = vctorch._Linear2x(k["vision_output_dim"], H, bias=True)
    model.pixel_values = model.cross_attention_mask = None  # set_images (measure_llm.py --image)
    model.image_token_index = d.get("image_token_index", 128256)
    return model


def freeze_towers(model):
    """With images: the tower and the projector frozen (the module docstring)."""
    for p in list(model.vision_model.parameters()) + list(model.multi_modal_projector.parameters()):
        p.requires_grad_(False)


def counts(path):
    from check_params import MetaMode
    with MetaMode():
        m = build(R.Config(flatten(json.load(open(path)))))
    total = sum(p.numel() for p in m.parameters())
    unrun = sum(p.numel() for n in ("vision_model", "multi_modal_projector", "cross_layers")
                for p in getattr(m, n).parameters())
    return {"MllamaForConditionalGeneration": total, "run on text": total - unrun}


def check():
    """tests/test_fam_mllama.c's totals, from the modules above on the meta device."""
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    c = counts(os.path.join(root, "tests", "data", "hf", "llama-3.2-11b-vision.json"))
    print(json.dumps(c))
    assert c["MllamaForConditionalGeneration"] == 10670220835, c
    assert c["run on text"] == 8030294016, c
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        sys.exit(check())
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(p)))
