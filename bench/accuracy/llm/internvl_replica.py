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
