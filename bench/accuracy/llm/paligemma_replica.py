"""paligemma_replica.py -- PaliGemmaForConditionalGeneration (issue 31, vision towers of VLMs) written from the
transformers source, not from vramcalc's engine; measured by measure_llm.py (train with --image or without, --mode
infer) and counted by `python3 paligemma_replica.py CONFIG...`.

Sources read (huggingface/transformers):
  P = models/paligemma/modeling_paligemma.py @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e:
      PaliGemmaMultiModalProjector (linear = nn.Linear(vision_config.hidden_size, vision_config.projection_dim,
      bias=True)); PaliGemmaForConditionalGeneration.__init__ (vision_tower = AutoModel.from_config(vision_config):
      SiglipVisionModel; multi_modal_projector; language_model = AutoModelForCausalLM.from_config(text_config):
      GemmaForCausalLM, lm_head tied); get_image_features (vision_tower(pixel_values).last_hidden_state,
      multi_modal_projector, / text_config.hidden_size ** 0.5); forward (is_training = token_type_ids is not None and
      labels is not None; inputs_embeds = embed_tokens(input_ids); cache_position = arange(L); position_ids =
      cache_position.unsqueeze(0) + 1; with pixel_values: special_image_mask = (input_ids == image_token_index)
      .unsqueeze(-1).expand_as(inputs_embeds), the inputs_embeds[special_image_mask].numel() check (a boolean-indexed
      copy), image_features.to(dtype), inputs_embeds.masked_scatter(...); causal_mask = _update_causal_mask(...);
      outputs = language_model(attention_mask=causal_mask, position_ids, inputs_embeds, ...) without labels; the loss:
      logits = outputs.logits.float(), shift_logits = logits[..., :-1, :], shift_labels = labels[..., 1:], no
      attention_mask: both .contiguous(), nn.CrossEntropyLoss() on the views; returns logits (the fp32 ones) and
      image_hidden_states = image_features);
      _update_causal_mask (attention_mask None, no cache: target_length = cache_position[0] + L + 1; causal_mask =
      torch.full((L, T), min_dtype, dtype=self.dtype); training: torch.triu(causal_mask, diagonal=1), else
      causal_mask[:, :L] = 0.0; causal_mask *= torch.arange(T) > cache_position.reshape(-1, 1);
      causal_mask[None, None].expand(B, 1, -1, -1)).
  The language model: GemmaModel.forward as transformers 4.4x runs a 4-D mask (returned as it is by its
      _update_causal_mask; hidden_states = inputs_embeds, the rotary embedding, * normalizer, the layers, norm), the
      harness's Gemma layers (reference.py DecoderLayer / Attention, sdpa_attention_forward: repeat_kv with a mask,
      is_causal False), the mask sliced attention_mask[:, :, :, :S] by sdpa_attention_forward (a view).
  PaliGemma 2 (text_config model_type "gemma2"; PaliGemmaConfig @ 04d596e6: CONFIG_MAPPING["gemma2"](**text_config),
      Gemma2Config's defaults: sliding_window 4096, final_logit_softcapping 30.0, attn_logit_softcapping 50.0,
      query_pre_attn_scalar 256): the language model Gemma2ForCausalLM as
  G2 = models/gemma2/modeling_gemma2.py @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e runs it with PaliGemma's 4-D mask:
      Gemma2Model.forward (training: no HybridCache; last_cache_position = cache_position[-1].item() for a 4-D mask;
      _update_causal_mask returns the 4-D mask as it is; inputs_embeds * normalizer); Gemma2DecoderLayer.forward
      (is_sliding = not layer_idx % 2: effective_seq_len = max(cache_position.shape[0], sliding_window),
      torch.where(torch.tril(torch.ones_like(mask, dtype=torch.bool), diagonal=-sliding_window), min_dtype, mask),
      sliced [offset : offset + effective_seq_len], the layer's local until it returns; the four RMSNorms);
      Gemma2Attention on sdpa_attention_forward (no soft-capping there, the mask sliced [:, :, :, :S]);
      Gemma2ForCausalLM.forward (lm_head, then logits / final_logit_softcapping, tanh, * final_logit_softcapping).
  The tower: siglip_replica.SiglipVisionModel (modeling_siglip.py @ efa7189c), imported, vision_use_head false.
Frozen tower and projector, as the Gemma 3 replica runs them (LLaMA-Factory's freeze_vision_tower and
freeze_multi_modal_projector defaults): their forward builds no graph.
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch
import torch.nn as nn

import siglip_replica

# PaliGemmaConfig (configuration_paligemma.py @ 04d596e6) with vision_config None
PALI_VISION_DEFAULTS = {"intermediate_size": 4096, "hidden_size": 1152, "patch_size": 14, "image_size": 224,
                        "num_hidden_layers": 27, "num_attention_heads": 16, "vision_use_head": False}


def vision_keys(vision_config):
    """SiglipVisionConfig as PaliGemmaConfig builds it: the dict's keys over SiglipVisionConfig's defaults (or
    PaliGemmaConfig's tower without one)."""
    if not vision_config:
        return siglip_replica.resolve(PALI_VISION_DEFAULTS)
    return siglip_replica.resolve(vision_config)


def image_tokens(vision_config):
    """PaliGemmaConfig: text_config.num_image_tokens = (image_size // patch_size) ** 2; PaliGemmaProcessor puts that
    many image tokens first, then bos, the prompt and "\\n" (the text --seq counts)."""
    v = vision_keys(vision_config)
    return (v["image_size"] // v["patch_size"]) ** 2


def flatten(raw):
    """config.json -> the language model's keys (text_config's, GemmaConfig's model_type) with the tower's and
    PaliGemma's own beside them (measure_llm.py)."""
    return dict(raw["text_config"], model_type="paligemma", vision_config=raw.get("vision_config") or {},
                image_token_index=raw.get("image_token_index", 256000), projection_dim=raw.get("projection_dim", 2048),
                text_model_type=raw["text_config"].get("model_type", "gemma"))


# Gemma2Config's defaults (configuration_gemma2.py, the keys PaliGemma 2's text_config may omit)
GEMMA2_DEFAULTS = {"sliding_window": 4096, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
                   "query_pre_attn_scalar": 256}


def sdpa_mask_slice(attn):
    """sdpa_attention_forward's attention_mask[:, :, :, :key.shape[-2]] (a view) before reference.py's Attention, which
    takes the mask as it is: Gemma2DecoderLayer.forward itself is reference.py's (_gemma_forward: G2's
    ones_like / tril / where on the float mask and its slice, sliding_window_mask a local until the layer returns)."""
    inner = attn.forward

    def forward(hidden_states, position_embeddings, attention_mask, past_key_value=None):
        return inner(hidden_states, position_embeddings, attention_mask[:, :, :, :hidden_states.shape[1]], past_key_value)
    return forward


class HybridCache:
    """Gemma2Model.forward @ efa7189c (G2): `if use_cache and past_key_values is None and not self.training:
    past_key_values = HybridCache(self.config, max_batch_size=batch_size, max_cache_len=seq_len,
    dtype=inputs_embeds.dtype)`, no device. HybridCache itself could not be read at a pinned commit: cache_utils.py
    is stored @ 67dd5524 only (the layered caches of a later release); what follows is the stored, unattributed
    cache_utils.py of the same release line (HybridCache.__init__ with the deprecated layer_device_map, device None ->
    "meta"): each layer's zeros of [B, kv, max_cache_len (global) or min(sliding_window, max_cache_len) (sliding), D]
    made on the meta device, then in update() zeros_like on the key's device (the layer's first update: allocated
    then, K then V, kept by the cache); _static_update (global): k_out[:, :, cache_position] = key_states in place,
    returns the cache's tensors; _sliding_update: past max_cache_len tokens k_out = key_states[:, :, -max:], cache +=
    k_out in place, returns the whole key_states / value_states; else slicing = ones(max).cumsum(0), the clamped
    positions, to_shift, indices, k_out = k_out[:, :, indices] (new tensors), k_out[:, :, cache_position] = key_states,
    cache.zero_(), cache += k_out, returns the new k_out / v_out."""

    def __init__(self, is_sliding, cache_position):
        self.is_sliding = is_sliding
        self.cache_position = cache_position
        self.key_cache = [None] * len(is_sliding)
        self.value_cache = [None] * len(is_sliding)

    def update(self, key_states, value_states, layer_idx):
        B, kv, L, D = key_states.shape
        n = min(self.sliding_window, L) if self.is_sliding[layer_idx] else L
        if self.key_cache[layer_idx] is None:  # zeros_like of the meta tensor, on the key's device
            self.key_cache[layer_idx] = torch.zeros((B, kv, n, D), dtype=key_states.dtype)
            self.value_cache[layer_idx] = torch.zeros((B, kv, n, D), dtype=value_states.dtype)
        k_out, v_out = self.key_cache[layer_idx], self.value_cache[layer_idx]
        cache_position = self.cache_position
        if not self.is_sliding[layer_idx]:  # _static_update
            k_out[:, :, cache_position] = key_states
            v_out[:, :, cache_position] = value_states
            return k_out, v_out
        max_cache_len = k_out.shape[2]
        if cache_position.shape[0] > max_cache_len:
            k_out = key_states[:, :, -max_cache_len:, :]
            v_out = value_states[:, :, -max_cache_len:, :]
            self.key_cache[layer_idx] += k_out
            self.value_cache[layer_idx] += v_out
            return key_states, value_states
        slicing = torch.ones(max_cache_len, dtype=torch.long).cumsum(0)
        cache_position = cache_position.clamp(0, max_cache_len - 1)
        to_shift = cache_position >= max_cache_len - 1
        indices = (slicing + to_shift[-1].int() - 1) % max_cache_len
        k_out = k_out[:, :, indices]
        v_out = v_out[:, :, indices]
        k_out[:, :, cache_position] = key_states
        v_out[:, :, cache_position] = value_states
        self.key_cache[layer_idx].zero_()
        self.value_cache[layer_idx].zero_()
        self.key_cache[layer_idx] += k_out
        self.value_cache[layer_idx] += v_out
        return k_out, v_out


class PaliGemmaMultiModalProjector(nn.Module):
    def __init__(self, vision_hidden, projection_dim):
        super().__init__()
        import vctorch
        self.linear = vctorch._Linear2x(vision_hidden, projection_dim)

    def forward(self, image_features):
        return self.linear(image_features)


def update_causal_mask(cache_position, input_tensor, is_training, dtype, attention_mask=None):
    """P: _update_causal_mask (flash not replicated): no cache and attention_mask None (training, --mode infer), or
    generate()'s DynamicCache (neither StaticCache nor HybridCache) and its 2-D attention_mask: target_length =
    attention_mask.shape[-1], then the clone, the padding sum, its == 0 and the masked_fill copied back."""
    min_dtype = torch.finfo(dtype).min
    inputs_lead_dim, sequence_length = input_tensor.shape[:2]
    if isinstance(attention_mask, torch.Tensor):
        target_length = attention_mask.shape[-1]
    else:
        target_length = int(cache_position[0]) + sequence_length + 1
    causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype)
    if sequence_length != 1:
        if is_training:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        else:
            causal_mask[:, :sequence_length] = 0.0
    causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
    causal_mask = causal_mask[None, None, :, :].expand(inputs_lead_dim, 1, -1, -1)
    if attention_mask is not None:
        if is_training:
            raise ValueError("paligemma_replica.py: training with a 2-D attention_mask is not replicated")
        causal_mask = causal_mask.clone()  # copy to contiguous memory for in-place edit
        mask_length = attention_mask.shape[-1]
        padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :]
        padding_mask = padding_mask == 0
        causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(padding_mask, min_dtype)
    return causal_mask


def build(cfg, attn_impl=None):
    """PaliGemmaForConditionalGeneration at small width. cfg: flatten()'s keys (measure_llm.py)."""
    import reference as R

    if (attn_impl or "sdpa") != "sdpa":
        raise SystemExit("paligemma_replica.py: sdpa only (the 4-D float mask into sdpa_attention_forward)")
    vk = vision_keys(cfg.d.get("vision_config"))
    if vk.get("vision_use_head", True):
        raise SystemExit("paligemma_replica.py: vision_use_head false (the checkpoints')")
    tmt = cfg.d.get("text_model_type", "gemma")
    if tmt not in ("gemma", "gemma2"):
        raise SystemExit("paligemma_replica.py: text_config.model_type gemma or gemma2")
    gemma2 = tmt == "gemma2"
    td = dict(cfg.d, model_type=tmt)
    if gemma2:
        for k, v in GEMMA2_DEFAULTS.items():
            td.setdefault(k, v)
    text = R.Config(td)
    tid = cfg.d.get("image_token_index", 256000)
    if cfg.d.get("projection_dim", 2048) != text.hidden_size:
        raise SystemExit("paligemma_replica.py: projection_dim must be text_config.hidden_size")

    class PaliGemma(R.CausalLM):
        def __init__(self):
            super().__init__(text, "sdpa")  # GemmaForCausalLM (embed_tokens, layers, norm, rotary, tied lm_head)
            if gemma2:  # Gemma2ForCausalLM's layers as G2 runs them on the 4-D mask
                for layer in self.layers:
                    layer.self_attn.forward = sdpa_mask_slice(layer.self_attn)
            self.vision_tower = siglip_replica.SiglipVisionModel(vk)
            self.multi_modal_projector = PaliGemmaMultiModalProjector(vk["hidden_size"], text.hidden_size)
            self.pixel_values = None  # the processor's [images, C, S, S] float32, set by measure_llm.py
            self.token_type_ids = None  # the processor's token_type_ids (training: the suffix's 1s)

        def get_image_features(self, pixel_values):
            selected_image_feature = self.vision_tower._transformer(pixel_values)[0]  # .last_hidden_state
            image_features = self.multi_modal_projector(selected_image_feature)
            del selected_image_feature
            return image_features / (text.hidden_size ** 0.5)

        def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None, attention_mask=None,
                    logits_to_keep=0, **kw):
            if past_key_values is not None and gemma2:
                raise ValueError("paligemma_replica.py: PaliGemma 2's generate() (Gemma2's HybridCache) is not replicated")
            token_type_ids = self.token_type_ids if labels is not None else None
            is_training = token_type_ids is not None and labels is not None
            inputs_embeds = self.embed_tokens(input_ids)
            if cache_position is None:
                past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
                cache_position = torch.arange(past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1])
            # Paligemma positions are 1-indexed (generate(): prepare_inputs_for_generation's position_ids + 1 in
            # place; the [B, L] int64 from the 2-D attention_mask's cumsum is not replicated, as the harness's
            # generate loop makes none for the other families)
            position_ids = cache_position.unsqueeze(0) + 1
            image_features = None
            if self.pixel_values is not None:
                image_features = self.get_image_features(self.pixel_values)
                special_image_mask = (input_ids == tid).unsqueeze(-1)
                special_image_mask = special_image_mask.expand_as(inputs_embeds)
                if inputs_embeds[special_image_mask].numel() != image_features.numel():
                    raise ValueError("image features and image tokens do not match")
                image_features = image_features.to(inputs_embeds.dtype)
                inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)
            causal_mask = update_causal_mask(cache_position, inputs_embeds, is_training, self.embed_tokens.weight.dtype,
                                             attention_mask)
            # GemmaForCausalLM.forward -> GemmaModel.forward (its own locals; the caller's inputs_embeds, image_features
            # and causal_mask stay alive in this forward)
            hidden_states = inputs_embeds
            position_embeddings = self.rotary_emb(hidden_states, position_ids)
            normalizer = torch.tensor(text.hidden_size ** 0.5, dtype=hidden_states.dtype)
            hidden_states = hidden_states * normalizer
            # sdpa_attention_forward's slice to the key length (a view: the prompt's without a cache, the cache's
            # past + L in generate(), the whole mask); Gemma 2's layers slice after their sliding mask
            mask = causal_mask if gemma2 else causal_mask[:, :, :, :int(cache_position[-1]) + 1]
            last_cache_position = int(cache_position[-1].item()) if gemma2 else 0  # G2 Gemma2Model.forward, 4-D mask
            hybrid = None
            if gemma2 and past_key_values is None and not self.training:  # G2 Gemma2Model.forward: use_cache, eval
                hybrid = HybridCache([not i % 2 for i in range(len(self.layers))], cache_position)
                hybrid.sliding_window = text.sliding_window
            for layer in self.layers:
                if hybrid is not None:  # --mode infer: the HybridCache made inside the language model
                    hidden_states = layer(hidden_states, mask, position_embeddings, hybrid,
                                          cache_position.shape[0], last_cache_position)
                elif past_key_values is None:
                    hidden_states = self._layer(layer, hidden_states, mask, position_embeddings, None,
                                                cache_position.shape[0], last_cache_position)
                else:  # generate(): the layer's DynamicCache update (reference.DynamicCache)
                    hidden_states = layer(hidden_states, mask, position_embeddings, past_key_values,
                                          cache_position.shape[0], last_cache_position)
            del mask
            hidden_states = self.norm(hidden_states)
            # the HybridCache is returned in outputs.past_key_values: alive until the forward returns (below)
            del position_embeddings  # GemmaModel.forward returns (its locals go; last_hidden_state kept by outputs)
            # GemmaForCausalLM.forward: slice_indices = slice(-logits_to_keep, None) (generate(): 1), no labels
            lm_logits = self.lm_head(hidden_states[:, slice(-logits_to_keep, None), :])
            if gemma2 and text.final_logit_softcapping is not None:  # G2 Gemma2ForCausalLM.forward
                lm_logits = lm_logits / text.final_logit_softcapping
                lm_logits = torch.tanh(lm_logits)
                lm_logits = lm_logits * text.final_logit_softcapping
            del hidden_states  # GemmaForCausalLM.forward returns: outputs.logits (lm_logits) held by `outputs`
            logits = lm_logits
            loss = None
            if labels is not None:
                logits = logits.float()
                shift_logits = logits[..., :-1, :]
                shift_labels = labels[..., 1:]
                shift_logits = shift_logits.contiguous()
                shift_labels = shift_labels.contiguous()
                flat_logits = shift_logits.view(-1, text.vocab_size)
                flat_labels = shift_labels.view(-1)
                loss = nn.CrossEntropyLoss()(flat_logits, flat_labels)
                del shift_logits, shift_labels, flat_logits, flat_labels
            del causal_mask, inputs_embeds, image_features, lm_logits, hybrid  # forward returns (the fp32 logits returned)
            return loss, logits

    model = PaliGemma()
    for p in list(model.vision_tower.parameters()) + list(model.multi_modal_projector.parameters()):
        p.requires_grad_(False)
    return model


def counts(raw):
    """{class: parameters} of PaliGemmaForConditionalGeneration built here on the meta device."""
    import reference as R
    from check_params import MetaMode
    with MetaMode():
        m = build(R.Config(flatten(raw)))
    return {"PaliGemmaForConditionalGeneration": sum(p.numel() for p in m.parameters())}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(json.load(open(p)))))
