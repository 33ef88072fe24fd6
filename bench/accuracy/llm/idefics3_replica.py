"""idefics3_replica.py -- SmolVLMForConditionalGeneration / Idefics3ForConditionalGeneration on text alone (issue 31,
towers), written from the transformers source, not from vramcalc's engine; measured by measure_llm.py and counted by
`python3 idefics3_replica.py [--check] CONFIG...`.

Sources read (huggingface/transformers):
  CS = models/smolvlm/configuration_smolvlm.py @ 9a3f708195b7eda02989d40fd03bb3714b3b37e5: SmolVLMVisionConfig's
       defaults (hidden_size 1152, intermediate_size 3072, num_hidden_layers 12, num_attention_heads 16, num_channels 3,
       image_size 224, patch_size 32); SmolVLMConfig (scale_factor 2, tie_word_embeddings False; text_config a dict:
       CONFIG_MAPPING[text_config.get("model_type", "llama")](**text_config); None: LlamaConfig(rms_norm_eps=1e-5,
       pad_token_id=128002, tie_word_embeddings=False)).
  CI = models/idefics3/configuration_idefics3.py @ 842a28d096bc356070aedfadab94bf9148a3f6ae: Idefics3VisionConfig (the
       same defaults), Idefics3Config (scale_factor 2; vocab_size 100000 written into text_config).
  MS = models/smolvlm/modeling_smolvlm.py @ b282e23b453c142800d1a37a0912fcd4ec321d04 (MI = models/idefics3/
       modeling_idefics3.py @ 9a80143ca26066ee3266749a57c7b3850d8843be, the same modules):
       SmolVLMVisionEmbeddings.__init__ (patch_embedding nn.Conv2d(num_channels, hidden, patch, stride patch,
       padding "valid"), position_embedding nn.Embedding((image_size // patch_size) ** 2, hidden));
       SmolVLMVisionAttention (k_proj, v_proj, q_proj, out_proj: nn.Linear(hidden, hidden)); SmolVLMVisionMLP (fc1
       nn.Linear(hidden, intermediate), fc2); SmolVLMEncoderLayer (self_attn, layer_norm1, mlp, layer_norm2:
       nn.LayerNorm(hidden)); SmolVLMVisionTransformer (embeddings, encoder.layers, post_layernorm; no head);
       SmolVLMConnector (modality_projection = SmolVLMSimpleMLP: proj nn.Linear(vision hidden * scale_factor ** 2,
       text hidden, bias=False)); SmolVLMModel (vision_model, connector, text_model = AutoModel.from_config(
       text_config): LlamaModel); SmolVLMForConditionalGeneration (model, lm_head nn.Linear(text hidden, vocab,
       bias=False), _tied_weights_keys ["lm_head.weight"]).
       SmolVLMModel.forward without pixel_values and image_hidden_states: inputs_embeds = text_model
       .get_input_embeddings()(input_ids).to(input_ids.device) (the same device: no copy); neither
       get_image_features nor inputs_merger runs; text_model(inputs_embeds=...) (LlamaModel.forward);
       SmolVLMForConditionalGeneration.forward: logits = lm_head(hidden_states[:, slice(-0, None), :]) (the whole
       sequence), loss = self.loss_function(logits, labels, vocab_size) (ForCausalLMLoss).
So the text-only model is reference.py's LlamaForCausalLM (embed_tokens, the layers, norm, lm_head, ForCausalLMLoss)
with the tower and connector built (trainable, as from_pretrained leaves them and TRL's SFTTrainer trains them) and
never run: no gradient, no optimizer state.
"""
import json
import os
import sys

import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import reference as R

VISION = dict(hidden_size=1152, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=16, num_channels=3,
              image_size=224, patch_size=32)  # CS / CI


def flatten(raw):
    """measure_llm.py's view of a smolvlm / idefics3 config.json: text_config's keys (LlamaConfig's), model_type the
    row's, the vision_config and scale_factor beside them."""
    t = dict(raw.get("text_config") or {"rms_norm_eps": 1e-5, "pad_token_id": 128002, "tie_word_embeddings": False})
    t.pop("model_type", None)
    if raw["model_type"] == "idefics3":
        t["vocab_size"] = raw.get("vocab_size", 100000)  # CI: Idefics3Config's vocab_size written into text_config
    return dict(t, model_type=raw["model_type"], vision_config=raw.get("vision_config") or {},
                scale_factor=raw.get("scale_factor", 2))


class VisionTransformer(nn.Module):
    """MS SmolVLMVisionTransformer.__init__'s parameters, module by module (never run on text)."""

    def __init__(self, k):
        super().__init__()
        H, I, P = k["hidden_size"], k["intermediate_size"], k["patch_size"]
        self.embeddings = nn.Module()
        self.embeddings.patch_embedding = nn.Conv2d(k["num_channels"], H, kernel_size=P, stride=P, padding="valid")
        self.embeddings.position_embedding = nn.Embedding((k["image_size"] // P) ** 2, H)

        def layer():
            lay = nn.Module()
            lay.self_attn = nn.Module()
            for n in ("k_proj", "v_proj", "q_proj", "out_proj"):
                setattr(lay.self_attn, n, nn.Linear(H, H))
            lay.layer_norm1 = nn.LayerNorm(H)
            lay.mlp = nn.Module()
            lay.mlp.fc1 = nn.Linear(H, I)
            lay.mlp.fc2 = nn.Linear(I, H)
            lay.layer_norm2 = nn.LayerNorm(H)
            return lay

        self.encoder = nn.Module()
        self.encoder.layers = nn.ModuleList(layer() for _ in range(k["num_hidden_layers"]))
        self.post_layernorm = nn.LayerNorm(H)


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of flatten()'s keys."""
    d = cfg.d
    model = R.CausalLM(R.Config(dict(d, model_type="llama")), attn_impl)  # text_model (LlamaModel) and lm_head
    k = dict(VISION)
    k.update({n: x for n, x in (d.get("vision_config") or {}).items() if n in VISION and x is not None})
    model.vision_model = VisionTransformer(k)
    model.connector = nn.Module()
    model.connector.modality_projection = nn.Module()
    s = d.get("scale_factor", 2)
    model.connector.modality_projection.proj = nn.Linear(k["hidden_size"] * s * s, model.embed_tokens.weight.shape[1],
                                                         bias=False)
    return model


def counts(path):
    from check_params import MetaMode
    with MetaMode():
        m = build(R.Config(flatten(json.load(open(path)))))
    total = sum(p.numel() for p in m.parameters())
    unrun = sum(p.numel() for n in ("vision_model", "connector") for p in getattr(m, n).parameters())
    return {"ForConditionalGeneration": total, "run on text": total - unrun}


def check():
    """tests/test_fam_smolvlm.c's totals, from the modules above on the meta device."""
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    want = {"smolvlm-256m-instruct.json": 256484928, "smolvlm2-2.2b-instruct.json": 2246784880}
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
