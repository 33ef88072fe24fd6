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
"""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import reference as R

TEXT = dict(vocab_size=128256, hidden_size=4096, hidden_act="silu", num_hidden_layers=40, num_attention_heads=32,
            num_key_value_heads=8, intermediate_size=14336, rope_theta=500000.0, rms_norm_eps=1e-5,
            max_position_embeddings=131072, tie_word_embeddings=False, dropout=0.0, pad_token_id=128004)
CROSS = [3, 8, 13, 18, 23, 28, 33, 38]
VISION = dict(hidden_size=1280, num_hidden_layers=32, num_global_layers=8, attention_heads=16, num_channels=3,
              intermediate_size=5120, vision_output_dim=7680, image_size=448, patch_size=14, max_num_tiles=4)


def flatten(raw):
    """measure_llm.py's view of an mllama config.json: text_config's keys with CM's defaults, model_type mllama, the
    vision_config beside them."""
    t = dict(TEXT)
    t.update({k: v for k, v in (raw.get("text_config") or {}).items() if v is not None})
    t["cross_attention_layers"] = (raw.get("text_config") or {}).get("cross_attention_layers") or CROSS
    return dict(t, model_type="mllama", vision_config=raw.get("vision_config") or {})


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


class MllamaVisionModel(nn.Module):
    """MM MllamaVisionModel.__init__: the parameters, module by module (never run here)."""

    def __init__(self, k):
        super().__init__()
        H, I, T, ids = k["hidden_size"], k["intermediate_size"], k["max_num_tiles"], k["ratios"] + 1
        P = k["patch_size"]
        npat = (k["image_size"] // P) ** 2 + 1
        self.patch_embedding = nn.Conv2d(k["num_channels"], H, kernel_size=P, stride=P, padding="valid", bias=False)
        self.class_embedding = nn.Parameter(torch.zeros(H))
        g = self.gated_positional_embedding = nn.Module()
        g.gate = nn.Parameter(torch.zeros(1))
        g.embedding = nn.Parameter(torch.zeros(npat, H))
        g.tile_embedding = nn.Embedding(ids, T * npat * H)
        for n in ("pre_tile_positional_embedding", "post_tile_positional_embedding"):
            e = nn.Module()
            e.embedding = nn.Embedding(ids, T * H)
            e.gate = nn.Parameter(torch.zeros(1))
            setattr(self, n, e)
        self.layernorm_pre = nn.LayerNorm(H)
        self.layernorm_post = nn.LayerNorm(H)

        def layer(gated):
            lay = nn.Module()
            lay.self_attn = nn.Module()
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                setattr(lay.self_attn, n, nn.Linear(H, H, bias=False))
            lay.mlp = nn.Module()
            lay.mlp.fc1 = nn.Linear(H, I)
            lay.mlp.fc2 = nn.Linear(I, H)
            lay.input_layernorm = nn.LayerNorm(H)
            lay.post_attention_layernorm = nn.LayerNorm(H)
            if gated:
                lay.gate_attn = nn.Parameter(torch.zeros(1))
                lay.gate_ffn = nn.Parameter(torch.zeros(1))
            return lay

        self.transformer = nn.Module()
        self.transformer.layers = nn.ModuleList(layer(False) for _ in range(k["num_hidden_layers"]))
        self.global_transformer = nn.Module()
        self.global_transformer.layers = nn.ModuleList(layer(True) for _ in range(k["num_global_layers"]))


def cross_layer(cfg):
    """MM MllamaCrossAttentionDecoderLayer.__init__'s parameters (never run on text)."""
    H, NH, KV, I = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.intermediate_size
    D = H // NH
    lay = nn.Module()
    lay.cross_attn = nn.Module()
    lay.cross_attn.q_proj = nn.Linear(H, NH * D, bias=False)
    lay.cross_attn.k_proj = nn.Linear(H, KV * D, bias=False)
    lay.cross_attn.v_proj = nn.Linear(H, KV * D, bias=False)
    lay.cross_attn.o_proj = nn.Linear(NH * D, H, bias=False)
    lay.cross_attn.q_norm = RMSNorm(D)
    lay.cross_attn.k_norm = RMSNorm(D)
    lay.input_layernorm = RMSNorm(H)
    lay.cross_attn_attn_gate = nn.Parameter(torch.zeros(1))
    lay.mlp = nn.Module()
    lay.mlp.gate_proj = nn.Linear(H, I, bias=False)
    lay.mlp.up_proj = nn.Linear(H, I, bias=False)
    lay.mlp.down_proj = nn.Linear(I, H, bias=False)
    lay.post_attention_layernorm = RMSNorm(H)
    lay.cross_attn_mlp_gate = nn.Parameter(torch.zeros(1))
    return lay


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of flatten()'s keys."""
    d = cfg.d
    cross = list(d["cross_attention_layers"])
    text = R.Config(dict(d, model_type="llama", num_hidden_layers=d["num_hidden_layers"] - len(cross),
                         attention_dropout=d.get("dropout", 0.0)))
    model = R.CausalLM(text, attn_impl)
    H, V = text.hidden_size, text.vocab_size
    model.embed_tokens = nn.Embedding(V + 8, H, text.pad_token_id)  # MllamaTextModel: vocab_size + 8 rows
    model.cross_layers = nn.ModuleList(cross_layer(text) for _ in cross)
    k = vision_keys(d.get("vision_config") or {})
    model.vision_model = MllamaVisionModel(k)
    model.multi_modal_projector = nn.Linear(k["vision_output_dim"], H, bias=True)
    return model


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
