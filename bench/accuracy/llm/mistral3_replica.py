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

    def __init__(self, k):
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
    model.vision_tower = PixtralVisionModel(k)
    model.multi_modal_projector = Mistral3MultiModalProjector(
        k["C"], text.hidden_size, d.get("spatial_merge_size", 2), len(fl) if isinstance(fl, list) else 1,
        bool(d.get("multimodal_projector_bias", False)))
    for p in list(model.vision_tower.parameters()) + list(model.multi_modal_projector.parameters()):
        p.requires_grad_(False)
    return model


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
