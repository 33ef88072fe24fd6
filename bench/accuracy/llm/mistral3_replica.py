"""mistral3_replica.py -- Mistral3ForConditionalGeneration on text alone, written from the transformers
source, measured by measure_llm.py and counted by `python3 mistral3_replica.py [--check] CONFIG...`.

Sources read (huggingface/transformers):
  C3 = models/mistral3/configuration_mistral3.py @0db25542f2190e3dd1e402c477fa713ed516d655: Mistral3Config
       (image_token_index 10, projector_hidden_act "gelu", vision_feature_layer -1, multimodal_projector_bias
       False, spatial_merge_size 2; text_config MistralConfig, vision_config PixtralVisionConfig, or when absent
       PixtralVisionConfig(intermediate_size 4096, hidden_size 1024, patch_size 14, image_size 1540,
       num_hidden_layers 24, num_attention_heads 16, head_dim 64, hidden_act "gelu"));
  CP = models/pixtral/configuration_pixtral.py @05cd1ec14dbe16127778060fb68c34105873015c: PixtralVisionConfig's
       defaults (hidden_size 1024, intermediate_size 4096, num_hidden_layers 24, num_attention_heads 16,
       num_channels 3, image_size 1024, patch_size 16);
  MP = models/pixtral/modeling_pixtral.py @0233e509531ace915c8241b4c16c8032a583279c: PixtralVisionModel
       (patch_conv nn.Conv2d(num_channels, hidden, patch, stride=patch, bias=False), ln_pre PixtralRMSNorm,
       transformer.layers: PixtralAttentionLayer (attention_norm, attention.{k,v,q,o}_proj nn.Linear without
       bias, ffn_norm, feed_forward.{gate,up,down}_proj without bias)); PixtralRotaryEmbedding holds buffers;
  M3 = models/mistral3/modeling_mistral3.py @00dcc6dda6f6d8e69541a6b51f97986a80242367:
       Mistral3MultiModalProjector (norm Mistral3RMSNorm(vision hidden), patch_merger.merging_layer
       nn.Linear(hidden * merge^2, hidden, bias=False), linear_1 nn.Linear(hidden * num_feature_layers, text
       hidden, bias=multimodal_projector_bias), linear_2 nn.Linear(text hidden, text hidden, same bias));
       Mistral3Model.forward: with pixel_values None no get_image_features: the language model runs
       inputs_embeds = embed_tokens(input_ids) alone; Mistral3ForConditionalGeneration's lm_head.
The language model is MistralForCausalLM's (reference.py's mistral row, model_type "mistral"). The tower and
projector are loaded and frozen (LLaMA-Factory's freeze_vision_tower / freeze_multi_modal_projector
defaults, as qwen3vl_replica.py), never run on text.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import torch
import torch.nn as nn

import reference as R


def vision_keys(v, absent):
    """CP's defaults, or C3's substitute config when vision_config is absent."""
    base = dict(C=1024, I=4096, N=24, NH=16, cin=3, img=1540 if absent else 1024, P=14 if absent else 16)
    names = dict(C="hidden_size", I="intermediate_size", N="num_hidden_layers", NH="num_attention_heads",
                 cin="num_channels", img="image_size", P="patch_size")
    return {k: (base[k] if v.get(n) is None else v[n]) for k, n in names.items()}


class RMSNorm(nn.Module):
    """MP PixtralRMSNorm / M3 Mistral3RMSNorm: a weight of hidden_size."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))


class PixtralVisionModel(nn.Module):
    """MP: the parameters, module by module (never run here)."""

    def __init__(self, k, theta=10000.0):
        super().__init__()
        C, I = k["C"], k["I"]
        self.patch_conv = nn.Conv2d(k["cin"], C, kernel_size=k["P"], stride=k["P"], bias=False)
        self.ln_pre = RMSNorm(C)

        def layer():
            lay = nn.Module()
            lay.attention_norm, lay.ffn_norm = RMSNorm(C), RMSNorm(C)
            lay.attention = nn.Module()
            for n in ("k_proj", "v_proj", "q_proj", "o_proj"):
                setattr(lay.attention, n, nn.Linear(C, C, bias=False))
            lay.feed_forward = nn.Module()
            lay.feed_forward.gate_proj = nn.Linear(C, I, bias=False)
            lay.feed_forward.up_proj = nn.Linear(C, I, bias=False)
            lay.feed_forward.down_proj = nn.Linear(I, C, bias=False)
            return lay

        self.transformer = nn.Module()
        self.transformer.layers = nn.ModuleList(layer() for _ in range(k["N"]))
        self.patch_positional_embedding = PixtralRotaryEmbedding(k, theta)


def rotary_table(k, theta):
    """MP PixtralRotaryEmbedding.compute_default_rope_parameters: the [max_side^2, head_dim] float32 table."""
    D = k["C"] // k["NH"]
    side = k["img"] // k["P"]
    freqs = 1.0 / (theta ** (torch.arange(0, D, 2).float() / D))
    h, w = torch.arange(side), torch.arange(side)
    fh = torch.outer(h, freqs[::2]).float()
    fw = torch.outer(w, freqs[1::2]).float()
    inv = torch.cat([fh[:, None, :].repeat(1, side, 1), fw[None, :, :].repeat(side, 1, 1)], dim=-1).reshape(-1, D // 2)
    return torch.cat((inv, inv), dim=-1)


class PixtralRotaryEmbedding(nn.Module):
    """MP PixtralRotaryEmbedding: the table registered twice (inv_freq, original_inv_freq, non-persistent
    buffers, float32); forward: inv_freq[position_ids] (the CPU index copied to the device for the call: made
    here explicitly, the harness running on the CPU), cos, sin (float32), .to(x.dtype)."""

    def __init__(self, k, theta):
        super().__init__()
        inv = rotary_table(k, theta)
        self.register_buffer("inv_freq", inv, persistent=False)
        self.register_buffer("original_inv_freq", inv.clone(), persistent=False)

    def forward(self, x, positions):
        idx = torch.tensor(positions, dtype=torch.int64)
        freqs = self.inv_freq[idx]
        del idx
        cos, sin = freqs.cos(), freqs.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


class Mistral3MultiModalProjector(nn.Module):
    """M3: norm, patch_merger.merging_layer, linear_1, linear_2."""

    def __init__(self, C, H, merge, nfl, bias):
        super().__init__()
        self.norm = RMSNorm(C)
        self.patch_merger = nn.Module()
        self.patch_merger.merging_layer = nn.Linear(C * merge * merge, C, bias=False)
        self.linear_1 = nn.Linear(C * nfl, H, bias=bias)
        self.linear_2 = nn.Linear(H, H, bias=bias)


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of text_config's keys with Mistral3Config's own beside them (the
    vision_config, spatial_merge_size, vision_feature_layer, multimodal_projector_bias)."""
    d = cfg.d
    text = R.Config(dict(d, model_type="mistral"))
    model = R.CausalLM(text, attn_impl)
    v = d.get("vision_config")
    k = vision_keys(v or {}, v is None)
    fl = d.get("vision_feature_layer", -1)
    model.vision_tower = PixtralVisionModel(k, float((v or {}).get("rope_theta", 10000.0)))
    model.multi_modal_projector = Mistral3MultiModalProjector(
        k["C"], text.hidden_size, d.get("spatial_merge_size", 2), len(fl) if isinstance(fl, list) else 1,
        bool(d.get("multimodal_projector_bias", False)))
    for p in list(model.vision_tower.parameters()) + list(model.multi_modal_projector.parameters()):
        p.requires_grad_(False)
    return model


# --------------------------------------------------------------------------
# with images (measure_llm.py --image WxH): the tower and projector run, frozen
# --------------------------------------------------------------------------

def image_grid(k, merge, W, H):
    """PixtralImageProcessor (image_processing_pixtral.py @015b6b8c get_resize_output_image_size) as
    PixtralProcessor calls it (patch_size x spatial_merge_size, size longest_edge: the checkpoints'
    preprocessor_config.json has vision_config.image_size): the ratio to longest_edge, floor when above 1, then
    each side rounded up to a multiple of the merged patch. Returns (resized height, width)."""
    import math
    unit = k["P"] * merge
    ratio = max(H / k["img"], W / k["img"])
    if ratio > 1:
        H, W = int(math.floor(H / ratio)), int(math.floor(W / ratio))
    return ((H - 1) // unit + 1) * unit, ((W - 1) // unit + 1) * unit


def build_image(cfg, attn_impl=None):
    """Mistral3ForConditionalGeneration with pixel_values, at small width: reference.py's Mistral decoder,
    the Pixtral tower and projector run frozen (MP, M3 above; each class's forward statement by statement).
    The model's embed_tokens is wrapped (Embed) to run Mistral3Model.forward's image part; what that forward
    keeps as locals to its return (the image features' cat copy, special_image_mask) is released when the
    model's forward returns."""
    import vctorch
    d = cfg.d
    text = R.Config(dict(d, model_type="mistral"))
    model = R.CausalLM(text, attn_impl)
    v = d.get("vision_config")
    k = vision_keys(v or {}, v is None)
    C, NH, I = k["C"], k["NH"], k["I"]
    D = C // NH
    merge = d.get("spatial_merge_size", 2)
    act = R.act_fn((v or {}).get("hidden_act", "gelu"))
    theta = float((v or {}).get("rope_theta", 10000.0))
    H = text.hidden_size

    class RMS(nn.Module):
        """MP PixtralRMSNorm / M3 Mistral3RMSNorm (LlamaRMSNorm's code; eps 1e-5 in the tower)."""

        def __init__(self, n, eps):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):
            dt = x.dtype
            x = x.to(torch.float32)
            variance = vctorch.mean2x(x.pow(2), -1, keepdim=True)
            x = x * torch.rsqrt(variance + self.eps)
            return self.weight * x.to(dt)

    class Attention(nn.Module):
        """MP PixtralAttention.forward on sdpa (integrations/sdpa_attention.py: the module has no
        num_key_value_groups, no repeat; is_causal False; the float block mask passed): q/k/v_proj, view,
        transpose(1, 2), apply_rotary_pos_emb(unsqueeze_dim=0), sdpa, transpose(1, 2).contiguous(),
        reshape(...).contiguous(), o_proj."""

        def __init__(self):
            super().__init__()
            self.k_proj = R.Linear(C, C, bias=False)
            self.v_proj = R.Linear(C, C, bias=False)
            self.q_proj = R.Linear(C, C, bias=False)
            self.o_proj = R.Linear(C, C, bias=False)

        def forward(self, x, mask, position_embeddings):
            b, n, _ = x.size()
            q = self.q_proj(x).view(b, n, NH, D).transpose(1, 2)
            kk = self.k_proj(x).view(b, n, NH, D).transpose(1, 2)
            vv = self.v_proj(x).view(b, n, NH, D).transpose(1, 2)
            cos, sin = position_embeddings
            cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)
            q_embed = (q * cos) + (R.rotate_half(q) * sin)
            k_embed = (kk * cos) + (R.rotate_half(kk) * sin)
            q, kk = q_embed, k_embed
            del q_embed, k_embed
            out = vctorch._sdpa_math_2x(q, kk, vv, attn_mask=mask[:, :, :, : kk.shape[-2]], dropout_p=0.0,
                                        is_causal=False, scale=D ** -0.5)
            out = out.transpose(1, 2).contiguous()
            out = out.reshape(b, n, -1).contiguous()
            return self.o_proj(out)

    class MLP(nn.Module):  # MP PixtralMLP (MistralMLP's code)
        def __init__(self):
            super().__init__()
            self.gate_proj = R.Linear(C, I, bias=False)
            self.up_proj = R.Linear(C, I, bias=False)
            self.down_proj = R.Linear(I, C, bias=False)

        def forward(self, x):
            return self.down_proj(act(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):  # MP PixtralAttentionLayer
        def __init__(self):
            super().__init__()
            self.attention_norm = RMS(C, 1e-5)
            self.feed_forward = MLP()
            self.attention = Attention()
            self.ffn_norm = RMS(C, 1e-5)

        def forward(self, hidden_states, mask, position_embeddings):
            residual = hidden_states
            hidden_states = self.attention(self.attention_norm(hidden_states), mask, position_embeddings)
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.feed_forward(self.ffn_norm(hidden_states))
            return residual + hidden_states

    class Vision(nn.Module):
        """MP PixtralVisionModel.forward (sdpa: the block mask of generate_block_attention_mask) with
        output_hidden_states=True (get_image_features): PixtralTransformer keeps every layer's input and the
        last output in encoder_states."""

        def __init__(self):
            super().__init__()
            self.patch_conv = nn.Conv2d(k["cin"], C, kernel_size=k["P"], stride=k["P"], bias=False)
            self.ln_pre = RMS(C, 1e-5)
            self.transformer = nn.Module()
            self.transformer.layers = nn.ModuleList(Layer() for _ in range(k["N"]))
            self.patch_positional_embedding = PixtralRotaryEmbedding(k, theta)

        def forward(self, pixel_values, image_sizes):
            P = k["P"]
            patch_embeds = self.patch_conv(pixel_values.to(dtype=self.patch_conv.weight.dtype))
            patch_embeds_list = [embed[..., : (size[0] // P), : (size[1] // P)]
                                 for embed, size in zip(patch_embeds, image_sizes)]
            patch_embeds = torch.cat([p.flatten(1).T for p in patch_embeds_list], dim=0).unsqueeze(0)
            patch_embeds = self.ln_pre(patch_embeds)
            # position_ids_in_meshgrid: CPU tensors (torch.arange without a device), no GPU memory: computed here
            # in Python (the harness counts every tensor); kwargs["position_ids"] = position_ids.unsqueeze(0)
            # .to(device): the GPU copy, alive until the forward returns
            side = k["img"] // P
            positions = []
            for p in patch_embeds_list:
                hh, ww = p.shape[-2:]
                positions += [i * side + j for i in range(hh) for j in range(ww)]
            kw_position_ids = torch.tensor(positions, dtype=torch.int64).unsqueeze(0)
            position_embeddings = self.patch_positional_embedding(patch_embeds, positions)
            # generate_block_attention_mask
            n = patch_embeds.shape[1]
            mask = torch.full((n, n), torch.finfo(patch_embeds.dtype).min, dtype=patch_embeds.dtype)
            sizes = [p.shape[-2] * p.shape[-1] for p in patch_embeds_list]
            start = 0
            for sz in sizes:
                mask[start:start + sz, start:start + sz] = 0
                start += sz
            mask = mask[None, None, :, :].expand(patch_embeds.shape[0], 1, -1, -1)
            hidden_states = patch_embeds
            encoder_states = ()
            for layer in self.transformer.layers:
                encoder_states = encoder_states + (hidden_states,)
                hidden_states = layer(hidden_states, mask, position_embeddings)
            encoder_states = encoder_states + (hidden_states,)
            del kw_position_ids
            return encoder_states

    class Projector(nn.Module):
        """M3 Mistral3MultiModalProjector.forward (norm, Mistral3PatchMerger: per image view, permute,
        F.unfold, view, .t(), the list cat'ed, merging_layer; linear_1, act, linear_2)."""

        def __init__(self):
            super().__init__()
            self.norm = RMS(C, text.rms_norm_eps)
            self.patch_merger = nn.Module()
            self.patch_merger.merging_layer = R.Linear(C * merge * merge, C, bias=False)
            bias = bool(d.get("multimodal_projector_bias", False))
            self.linear_1 = R.Linear(C, H, bias=bias)
            self.act = R.act_fn(d.get("projector_hidden_act", "gelu"))
            self.linear_2 = R.Linear(H, H, bias=bias)

        def merger(self, image_features, image_sizes):
            P = k["P"]
            image_sizes = [(s[0] // P, s[1] // P) for s in image_sizes]
            tokens_per_image = [hh * ww for hh, ww in image_sizes]
            dd = image_features.shape[-1]
            permuted_tensor = []
            for i, image_tokens in enumerate(image_features.split(tokens_per_image)):
                hh, ww = image_sizes[i]
                image_grid_ = image_tokens.view(hh, ww, dd).permute(2, 0, 1).unsqueeze(0)
                grid = R.vctorch.unfold2x(image_grid_, merge, merge)  # 2.x's Im2ColBackward0: sizes only
                grid = grid.view(dd * merge ** 2, -1).t()
                permuted_tensor.append(grid)
            image_features = torch.cat(permuted_tensor, dim=0)
            image_features = self.patch_merger.merging_layer(image_features)
            return image_features

        def forward(self, image_features, image_sizes):
            image_features = self.norm(image_features)
            image_features = self.merger(image_features, image_sizes)
            hidden_states = self.linear_1(image_features)
            hidden_states = self.act(hidden_states)
            hidden_states = self.linear_2(hidden_states)
            return hidden_states

    image_token_id = d.get("image_token_index", 10)

    class Embed(nn.Module):
        """M3 Mistral3Model.forward's image part: inputs_embeds = embed_tokens(input_ids);
        get_image_features (vision_tower with output_hidden_states, hidden_states[vision_feature_layer],
        squeeze(0), the projector, torch.split per image); torch.cat; special_image_mask (input_ids ==
        image_token_id, unsqueeze, expand_as); the check inputs_embeds[special_image_mask].numel() (a copy);
        image_features.to(dtype); inputs_embeds.masked_scatter."""

        def __init__(self, emb):
            super().__init__()
            self.emb = emb
            self.weight = emb.weight
            self.pixel_values = self.image_sizes = None
            self.keep = None

        def forward(self, input_ids):
            inputs_embeds = self.emb(input_ids)
            if self.pixel_values is None:
                return inputs_embeds
            image_outputs = model.vision_tower(self.pixel_values, self.image_sizes)
            selected = image_outputs[d.get("vision_feature_layer", -1)]
            image_features = model.multi_modal_projector(selected.squeeze(0), self.image_sizes)
            del image_outputs, selected
            ratio = k["P"] * merge
            split_sizes = [(hh // ratio) * (ww // ratio) for hh, ww in self.image_sizes]
            image_features = torch.split(image_features.squeeze(0), split_sizes)
            image_features = torch.cat(image_features, dim=0)
            special_image_mask = (input_ids == image_token_id).unsqueeze(-1)
            special_image_mask = special_image_mask.expand_as(inputs_embeds)
            if inputs_embeds[special_image_mask].numel() != image_features.numel():
                raise ValueError("image features and image tokens do not match")
            image_features = image_features.to(inputs_embeds.dtype)
            out = inputs_embeds.masked_scatter(special_image_mask, image_features)
            self.keep = (image_features, special_image_mask)  # Mistral3Model.forward's locals to its return
            return out

    model.vision_tower = Vision()
    model.multi_modal_projector = Projector()
    model.embed_tokens = Embed(model.embed_tokens)
    return R.frozen_image_parts(model, model.vision_tower, model.multi_modal_projector)


def flatten(raw):
    """measure_llm.py's view of a mistral3 config.json: text_config's keys, Mistral3Config's beside them."""
    return dict(raw["text_config"], model_type="mistral3", vision_config=raw.get("vision_config"),
                spatial_merge_size=raw.get("spatial_merge_size", 2), vision_feature_layer=raw.get("vision_feature_layer", -1),
                multimodal_projector_bias=raw.get("multimodal_projector_bias", False))


def counts(path):
    from check_params import MetaMode
    with MetaMode():
        m = build(R.Config(flatten(json.load(open(path)))))
    total = sum(p.numel() for p in m.parameters())
    frozen = sum(p.numel() for p in m.parameters() if not p.requires_grad)
    return {"Mistral3ForConditionalGeneration": total, "vision_tower + multi_modal_projector": frozen,
            "language_model + lm_head": total - frozen}


def check():
    """tests/test_fam_mistral3.c's totals, from the modules above on the meta device."""
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    c = counts(os.path.join(root, "tests", "data", "hf", "mistral-small-3.2-24b-instruct-2506.json"))
    print(json.dumps(c))
    assert c["Mistral3ForConditionalGeneration"] == 24011361280, c
    assert c["language_model + lm_head"] == 23572403200, c
    return 0


if __name__ == "__main__":
    if "--check" in sys.argv:
        sys.exit(check())
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(p)))
