"""internvl_replica.py -- InternVLForConditionalGeneration on text alone (issue 31, towers), written from the
transformers source, not from vramcalc's engine; measured by measure_llm.py and counted by
`python3 internvl_replica.py [--check] CONFIG...`.

Sources read (huggingface/transformers):
  C = models/internvl/configuration_internvl.py @ 04ea98d573ce9f3928c226b9e792e5f2c0070ef7: InternVLVisionConfig's
      defaults (hidden_size 1024, num_hidden_layers 24, num_attention_heads 16, attention_bias False, use_qk_norm
      False, intermediate_size 4096, hidden_act "gelu", norm_type "layer_norm", layer_norm_eps 1e-6, image_size
      (448, 448), patch_size (14, 14), num_channels 3, use_mask_token False, use_absolute_position_embeddings True,
      layer_scale_init_value 0.1, use_mean_pooling True); InternVLConfig (image_token_id 151667, downsample_ratio 0.5,
      projector_hidden_act "gelu"; text_config a dict: CONFIG_MAPPING[text_config.get("model_type", "qwen2")]).
  IP = models/got_ocr2/image_processing_got_ocr2.py @ 0b97ca8d385723d268f5566778e458d0c51213d5
      get_all_supported_aspect_ratios, get_optimal_tiled_canvas, GotOcr2ImageProcessor.crop_image_to_patches (the
      grid's tiles, the thumbnail when more than one), get_number_of_image_patches; min_patches 1, max_patches 12.
      The checkpoints' preprocessor_config.json is not read here (no network): size vision_config.image_size square.
  P = models/internvl/processing_internvl.py @ 024fd4ce2d70431f862b944832c3fde9f8303164: InternVLProcessorKwargs
      (crop_to_patches True), _insert_media_placeholders (<img>, image_seq_length x tiles image tokens, </img>).
  M = models/internvl/modeling_internvl.py @ 2fd445481b4354436be1071db98ee96d57ea3591:
      InternVLVisionEmbeddings.__init__ (cls_token, mask_token when use_mask_token, patch_embeddings.projection
      nn.Conv2d(num_channels, hidden, patch, stride patch), position_embeddings [1, patches + 1, hidden] when
      use_absolute_position_embeddings); InternVLVisionAttention (q_proj / k_proj / v_proj nn.Linear(hidden, hidden,
      bias=attention_bias), projection_layer nn.Linear(hidden, hidden), q_norm / k_norm InternVLVisionRMSNorm(hidden)
      when use_qk_norm); InternVLVisionMLP (fc1, fc2); InternVLVisionLayer (attention, mlp, layernorm_before /
      layernorm_after NORM2FN[norm_type], lambda_1 / lambda_2 [hidden]); InternVLVisionEncoder (layer: ModuleList);
      InternVLVisionModel (embeddings, encoder, layernorm: nn.Identity when use_mean_pooling else nn.LayerNorm);
      InternVLMultiModalProjector (layer_norm nn.LayerNorm(hidden * int(1 / downsample_ratio) ** 2), linear_1 to the
      text hidden size, act, linear_2); InternVLModel (vision_tower, multi_modal_projector, language_model =
      AutoModel.from_config(text_config): Qwen2Model / Qwen3Model); InternVLForConditionalGeneration (model, lm_head
      nn.Linear(text hidden, vocab, bias=False), _tied_weights_keys ["lm_head.weight"]).
      InternVLModel.forward without pixel_values: inputs_embeds = self.get_input_embeddings()(input_ids); no
      get_image_features, no masked_scatter; self.language_model(inputs_embeds=...) (its locals freed when it
      returns); InternVLForConditionalGeneration.forward: logits = lm_head(hidden_states[:, slice(-0, None), :]) (the
      whole sequence, a view), loss = self.loss_function(logits, labels, vocab_size) (ForCausalLMLoss).
With images (build_image, measure_llm.py --image WxH [--images N]): M InternVLModel.get_image_features (the tower
on the tiles as one batch, [:, 1:], reshape, pixel_shuffle's views and two contiguous copies, the projector),
InternVLModel.forward's special_image_mask, the boolean-index check and masked_scatter; the tower and projector frozen
(the other VLM replicas' LLaMA-Factory defaults), pixel_values given in the model's dtype (get_image_features has no
cast); image_features kept in the output (image_hidden_states) until the forward returns; generate: pixel_values in
the prefill only (InternVLForConditionalGeneration.prepare_inputs_for_generation).
So the text-only model is reference.py's Qwen2ForCausalLM / Qwen3ForCausalLM (embed_tokens, the layers, norm, lm_head,
ForCausalLMLoss) with the tower and projector built (trainable, as from_pretrained leaves them and TRL's SFTTrainer
trains them) and never run: no gradient, no optimizer state.
"""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import reference as R

VISION = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, attention_bias=False, use_qk_norm=False,
              intermediate_size=4096, norm_type="layer_norm", image_size=448, patch_size=14, num_channels=3,
              use_mask_token=False, use_absolute_position_embeddings=True, use_mean_pooling=True)  # C


def _side(x):
    """C InternVLVisionConfig.__post_init__: an int x is (x, x); the rows here are square."""
    return x[0] if isinstance(x, (list, tuple)) else x


def flatten(raw):
    """measure_llm.py's view of an internvl config.json: text_config's keys (Qwen2Config's or Qwen3Config's),
    text_model_type the language model's, the vision_config and the projector's keys beside them."""
    t = dict(raw["text_config"])
    text_type = t.pop("model_type", "qwen2")  # C: text_config.get("model_type", "qwen2")
    return dict(t, model_type="internvl", text_model_type=text_type, vision_config=raw.get("vision_config") or {},
                downsample_ratio=raw.get("downsample_ratio", 0.5),
                image_token_id=raw.get("image_token_id", 151667))  # C


class RMSNorm(nn.Module):
    """M InternVLVisionRMSNorm.__init__: weight [hidden]."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))


class VisionLayer(nn.Module):
    """M InternVLVisionLayer.__init__ (its attention and mlp inlined as submodules of the same names)."""

    def __init__(self, k):
        super().__init__()
        H, I = k["hidden_size"], k["intermediate_size"]
        self.attention = nn.Module()
        for n in ("q_proj", "k_proj", "v_proj"):
            setattr(self.attention, n, nn.Linear(H, H, bias=k["attention_bias"]))
        self.attention.projection_layer = nn.Linear(H, H)
        if k["use_qk_norm"]:
            self.attention.q_norm = RMSNorm(H)
            self.attention.k_norm = RMSNorm(H)
        self.mlp = nn.Module()
        self.mlp.fc1 = nn.Linear(H, I)
        self.mlp.fc2 = nn.Linear(I, H)
        norm = nn.LayerNorm if k["norm_type"] == "layer_norm" else RMSNorm  # M NORM2FN
        self.layernorm_before = norm(H)
        self.layernorm_after = norm(H)
        self.lambda_1 = nn.Parameter(torch.ones(H))
        self.lambda_2 = nn.Parameter(torch.ones(H))


class VisionModel(nn.Module):
    """M InternVLVisionModel.__init__'s parameters, module by module (never run on text)."""

    def __init__(self, k):
        super().__init__()
        H, P, side = k["hidden_size"], _side(k["patch_size"]), _side(k["image_size"]) // _side(k["patch_size"])
        self.embeddings = nn.Module()
        self.embeddings.cls_token = nn.Parameter(torch.zeros(1, 1, H))
        if k["use_mask_token"]:
            self.embeddings.mask_token = nn.Parameter(torch.zeros(1, 1, H))
        self.embeddings.patch_embeddings = nn.Module()
        self.embeddings.patch_embeddings.projection = nn.Conv2d(k["num_channels"], H, kernel_size=P, stride=P)
        if k["use_absolute_position_embeddings"]:
            self.embeddings.position_embeddings = nn.Parameter(torch.zeros(1, side * side + 1, H))
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(VisionLayer(k) for _ in range(k["num_hidden_layers"]))
        self.layernorm = nn.Identity() if k["use_mean_pooling"] else nn.LayerNorm(H)


class Projector(nn.Module):
    """M InternVLMultiModalProjector.__init__."""

    def __init__(self, vision_hidden, ratio, text_hidden):
        super().__init__()
        n = vision_hidden * int(1 / ratio) ** 2
        self.layer_norm = nn.LayerNorm(n)
        self.linear_1 = nn.Linear(n, text_hidden)
        self.act = nn.GELU()
        self.linear_2 = nn.Linear(text_hidden, text_hidden)


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of flatten()'s keys."""
    d = cfg.d
    model = R.CausalLM(R.Config(dict(d, model_type=d.get("text_model_type", "qwen2"))), attn_impl)
    k = dict(VISION)
    k.update({n: x for n, x in (d.get("vision_config") or {}).items() if n in VISION and x is not None})
    model.vision_tower = VisionModel(k)
    model.multi_modal_projector = Projector(k["hidden_size"], d.get("downsample_ratio", 0.5),
                                            model.embed_tokens.weight.shape[1])
    return model


def tiles(W, H, S, min_patches=1, max_patches=12):
    """IP GotOcr2ImageProcessor.crop_image_to_patches (crop_to_patches True: InternVLProcessorKwargs' default) with the
    class's min_patches 1 / max_patches 12 and size S x S: get_optimal_tiled_canvas's grid over
    get_all_supported_aspect_ratios, its columns x rows tiles and the thumbnail when more than one; else one tile."""
    ratios = sorted(((w, h) for w in range(1, max_patches + 1) for h in range(1, max_patches + 1)
                     if min_patches <= w * h <= max_patches), key=lambda x: x[0] * x[1])
    aspect, area = W / H, W * H
    best_diff, best = float("inf"), (1, 1)
    for g in ratios:
        diff = abs(aspect - g[0] / g[1])
        if diff < best_diff:
            best_diff, best = diff, g
        elif diff == best_diff and area > 0.5 * S * S * g[0] * g[1]:
            best = g
    n = best[0] * best[1]
    return n + 1 if n > 1 else 1


def image_tokens(cfg, W, H, images):
    """(the prompt's tokens for the images, the image-context tokens among them, tiles per sample): P
    InternVLProcessor._insert_media_placeholders: <img>, image_seq_length x tiles <IMG_CONTEXT>, </img> per image,
    image_seq_length the features a tile gives (M get_image_features: (side x downsample_ratio)^2)."""
    k = dict(VISION)
    k.update({n: x for n, x in (cfg.d.get("vision_config") or {}).items() if n in VISION and x is not None})
    side = _side(k["image_size"]) // _side(k["patch_size"])
    per = int(side * cfg.d.get("downsample_ratio", 0.5)) ** 2
    n = tiles(W, H, _side(k["image_size"]))
    return images * (n * per + 2), images * n * per, images * n


def build_image(cfg, attn_impl=None):
    """InternVLForConditionalGeneration with pixel_values (M, the header's forward): reference.py's Qwen2 / Qwen3
    decoder, InternVLVisionModel and the projector run frozen; embed_tokens wrapped (Embed) to run InternVLModel.forward's
    image part (get_image_features, masked_scatter)."""
    import torch.nn.functional as F
    import vctorch
    d = cfg.d
    model = build(cfg, attn_impl)
    k = dict(VISION)
    k.update({n: x for n, x in (d.get("vision_config") or {}).items() if n in VISION and x is not None})
    C, NH, ratio = k["hidden_size"], k["num_attention_heads"], d.get("downsample_ratio", 0.5)
    D = C // NH
    tid = d.get("image_token_id", 151667)
    eps = (d.get("vision_config") or {}).get("layer_norm_eps") or 1e-6
    import siglip_replica
    act = siglip_replica._act((d.get("vision_config") or {}).get("hidden_act") or "gelu")  # C: hidden_act "gelu"

    def norm(n):  # M NORM2FN: nn.LayerNorm or InternVLVisionRMSNorm (LlamaRMSNorm's statements)
        return vctorch._LayerNorm2x(n, eps=eps) if k["norm_type"] == "layer_norm" else R.LlamaRMSNorm(n, eps)

    class Attention(nn.Module):
        """M InternVLVisionAttention.forward (sdpa; transformers' sdpa_attention_forward's transpose + contiguous)."""

        def __init__(self):
            super().__init__()
            for n in ("q_proj", "k_proj", "v_proj"):
                setattr(self, n, vctorch._Linear2x(C, C, bias=k["attention_bias"]))
            self.projection_layer = vctorch._Linear2x(C, C)
            self.q_norm = R.LlamaRMSNorm(C) if k["use_qk_norm"] else nn.Identity()
            self.k_norm = R.LlamaRMSNorm(C) if k["use_qk_norm"] else nn.Identity()

        def forward(self, hidden_states):
            batch_size, seq_len, _ = hidden_states.size()
            query_states = self.q_proj(hidden_states)
            key_states = self.k_proj(hidden_states)
            value_states = self.v_proj(hidden_states)
            query_states = self.q_norm(query_states)
            key_states = self.k_norm(key_states)
            query_states = query_states.reshape(batch_size, seq_len, NH, D).transpose(1, 2)
            key_states = key_states.reshape(batch_size, seq_len, NH, D).transpose(1, 2)
            value_states = value_states.view(batch_size, seq_len, NH, D).transpose(1, 2)
            o = vctorch._sdpa_math_2x(query_states, key_states, value_states, attn_mask=None, dropout_p=0.0,
                                      is_causal=False, scale=D ** -0.5)
            attn_output = o.transpose(1, 2).contiguous()
            del o, query_states, key_states, value_states
            attn_output = attn_output.reshape(batch_size, seq_len, C)
            return self.projection_layer(attn_output)

    class Layer(nn.Module):
        """M InternVLVisionLayer.forward (dropout p 0: the identity)."""

        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.mlp = nn.Module()
            self.mlp.fc1 = vctorch._Linear2x(C, k["intermediate_size"])
            self.mlp.fc2 = vctorch._Linear2x(k["intermediate_size"], C)
            self.layernorm_before = norm(C)
            self.layernorm_after = norm(C)
            self.lambda_1 = nn.Parameter(torch.ones(C))
            self.lambda_2 = nn.Parameter(torch.ones(C))

        def forward(self, hidden_states):
            attention_output = self.attention(self.layernorm_before(hidden_states))
            attention_output = self.lambda_1 * attention_output
            hidden_states = attention_output + hidden_states
            del attention_output
            layer_output = self.layernorm_after(hidden_states)
            layer_output = self.mlp.fc2(act(self.mlp.fc1(layer_output)))  # ACT2FN[hidden_act]
            layer_output = self.lambda_2 * layer_output
            layer_output = layer_output + hidden_states
            return layer_output

    tower = model.vision_tower
    tower.encoder.layer = nn.ModuleList(Layer() for _ in range(k["num_hidden_layers"]))
    if not k["use_mean_pooling"]:
        tower.layernorm = vctorch._LayerNorm2x(C, eps=eps)
    proj = model.multi_modal_projector
    n_in = C * int(1 / ratio) ** 2
    proj.layer_norm = vctorch._LayerNorm2x(n_in)
    proj.linear_1 = vctorch._Linear2x(n_in, model.embed_tokens.weight.shape[1])
    proj.linear_2 = vctorch._Linear2x(model.embed_tokens.weight.shape[1], model.embed_tokens.weight.shape[1])

    def vision_tower(pixel_values):  # M InternVLVisionModel.forward: embeddings, encoder, layernorm
        emb = tower.embeddings
        embeddings = emb.patch_embeddings.projection(pixel_values)
        embeddings = embeddings.flatten(2).transpose(1, 2)
        batch_size = embeddings.shape[0]
        cls_tokens = emb.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        del cls_tokens
        if k["use_absolute_position_embeddings"]:  # interpolate_pos_encoding: the parameter itself (square, its size)
            embeddings = embeddings + emb.position_embeddings
        hidden_states = embeddings
        del embeddings
        for layer in tower.encoder.layer:
            hidden_states = layer(hidden_states)
        return tower.layernorm(hidden_states)

    def pixel_shuffle(vision_features, scale_factor):  # M InternVLModel.pixel_shuffle
        batch_size, width, height, channels = vision_features.size()
        vision_features = vision_features.view(batch_size, width, int(height * scale_factor),
                                               int(channels / scale_factor))
        vision_features = vision_features.permute(0, 2, 1, 3).contiguous()
        vision_features = vision_features.view(batch_size, int(height * scale_factor), int(width * scale_factor),
                                               int(channels / (scale_factor ** 2)))
        vision_features = vision_features.permute(0, 2, 1, 3).contiguous()
        return vision_features

    def get_image_features(pixel_values):  # M InternVLModel.get_image_features (vision_feature_layer -1, "default")
        vision_features = vision_tower(pixel_values)
        vision_features = vision_features[:, 1:, :]
        channels = vision_features.shape[1]
        feature_size = int(channels ** 0.5)
        batch_size = vision_features.shape[0]
        vision_features = vision_features.reshape(batch_size, feature_size, feature_size, -1)
        vision_features = pixel_shuffle(vision_features, scale_factor=ratio)
        vision_features = vision_features.reshape(batch_size, -1, vision_features.shape[-1])
        hidden_states = proj.layer_norm(vision_features)  # M InternVLMultiModalProjector.forward
        del vision_features
        hidden_states = proj.linear_1(hidden_states)
        hidden_states = F.gelu(hidden_states)
        return proj.linear_2(hidden_states)

    class Embed(nn.Module):
        """M InternVLModel.forward up to language_model: inputs_embeds = embed_tokens(input_ids); pixel_values ->
        get_image_features, the image-context rows masked_scatter'ed; image_features kept to the forward's return
        (image_hidden_states in its output)."""

        def __init__(self, emb):
            super().__init__()
            self.emb = emb
            self.weight = emb.weight
            self.pixel_values = self.grid_thw = self.keep = None

        def forward(self, input_ids):
            inputs_embeds = self.emb(input_ids)
            if self.pixel_values is None:
                return inputs_embeds
            image_features = get_image_features(self.pixel_values)
            special_image_mask = input_ids == tid
            n_image_tokens = special_image_mask.sum()
            special_image_mask = special_image_mask.unsqueeze(-1).expand_as(inputs_embeds)
            if inputs_embeds[special_image_mask].numel() != image_features.numel():
                raise ValueError("Image features and image tokens do not match: tokens: %d" % int(n_image_tokens))
            image_features = image_features.to(inputs_embeds.device, inputs_embeds.dtype)
            inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)
            self.keep = image_features
            return inputs_embeds

    model.embed_tokens = Embed(model.embed_tokens)
    return R.frozen_image_parts(model, tower, proj)


def counts(path):
    from check_params import MetaMode
    with MetaMode():
        m = build(R.Config(flatten(json.load(open(path)))))
    total = sum(p.numel() for p in m.parameters())
    unrun = sum(p.numel() for n in ("vision_tower", "multi_modal_projector") for p in getattr(m, n).parameters())
    return {"ForConditionalGeneration": total, "run on text": total - unrun}


def check():
    """tests/test_fam_internvl.c's totals, from the modules above on the meta device."""
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    want = {"internvl3-1b-hf.json": 938193024}
    for name, n in want.items():
        c = counts(os.path.join(root, "tests", "data", "hf", name))
        print(name, json.dumps(c))
        assert c["ForConditionalGeneration"] == n, (name, c)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        sys.exit(check())
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(p)))
