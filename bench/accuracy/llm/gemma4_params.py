#!/usr/bin/python3
"""gemma4_params.py -- Gemma 4 (Gemma4ForConditionalGeneration, Gemma4ForCausalLM) built on the meta
device from the module __init__s of transformers' models/gemma4/modeling_gemma4.py
(huggingface/transformers @ 0246b4f3335464614ef1de66531f9131a44ec801) and the defaults of
configuration_gemma4.py (transformers v5.5: Gemma4TextConfig with num_global_key_value_heads and
global_head_dim as fields; __post_init__'s default layer_types and the last layer forced to
"full_attention"; Gemma4VisionConfig, Gemma4AudioConfig), counting model.parameters(): the language
model in total and per token (the experts a token's top-k leaves out subtracted), the vision tower with
embed_vision, the audio tower with embed_audio. Asserts the counts tests/test_gemma4.c asserts for the
configs in tests/data/hf/gemma-4-*.json. Buffers (layer_scalar, the clip bounds, std_bias / std_scale,
the rotary tables) are not parameters and are not counted, as in transformers.

    /usr/bin/python3 bench/accuracy/llm/gemma4_params.py
"""
import json
import os
import sys

import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
META = "meta"

TEXT_DEFAULTS = dict(  # Gemma4TextConfig
    vocab_size=262144, hidden_size=2304, intermediate_size=9216, num_hidden_layers=30, num_attention_heads=8,
    num_key_value_heads=4, head_dim=256, tie_word_embeddings=True, attention_bias=False, layer_types=None,
    vocab_size_per_layer_input=262144, hidden_size_per_layer_input=256, num_global_key_value_heads=None,
    global_head_dim=512, attention_k_eq_v=False, num_kv_shared_layers=0, enable_moe_block=False,
    use_double_wide_mlp=False, num_experts=None, top_k_experts=None, moe_intermediate_size=None)
VISION_DEFAULTS = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=16, num_attention_heads=12,
                       num_key_value_heads=12, head_dim=64, patch_size=16, position_embedding_size=10240)
AUDIO_DEFAULTS = dict(hidden_size=1024, num_hidden_layers=12, num_attention_heads=8,
                      subsampling_conv_channels=[128, 32], conv_kernel_size=5, output_proj_dims=1536)


class Cfg:
    def __init__(self, d, defaults):
        for k, v in defaults.items():
            setattr(self, k, d.get(k, v) if k in d else v)
        for k, v in d.items():
            if not hasattr(self, k):
                setattr(self, k, v)


def text_cfg(d):
    c = Cfg(d, TEXT_DEFAULTS)
    if c.layer_types is None:  # __post_init__: sliding_window_pattern = 6
        c.layer_types = ["sliding_attention" if bool((i + 1) % 6) else "full_attention"
                         for i in range(c.num_hidden_layers)]
    c.layer_types = list(c.layer_types)
    if c.layer_types and c.layer_types[-1] != "full_attention":
        c.layer_types[-1] = "full_attention"
    return c


def Linear(i, o, bias=True):
    return nn.Linear(i, o, bias=bias, device=META)


def Param(*shape):
    return nn.Parameter(torch.empty(*shape, device=META))


class Gemma4RMSNorm(nn.Module):
    def __init__(self, dim, with_scale=True):
        super().__init__()
        if with_scale:
            self.weight = Param(dim)


class Gemma4TextAttention(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        is_sliding = c.layer_types[i] == "sliding_attention"
        self.head_dim = c.global_head_dim if not is_sliding and c.global_head_dim else c.head_dim
        alt = c.attention_k_eq_v and not is_sliding
        kvh = c.num_global_key_value_heads if alt else c.num_key_value_heads
        first = c.num_hidden_layers - c.num_kv_shared_layers
        self.is_kv_shared_layer = i >= first >= 0
        d, b = self.head_dim, c.attention_bias
        self.q_proj = Linear(c.hidden_size, c.num_attention_heads * d, b)
        self.q_norm = Gemma4RMSNorm(d)
        if not self.is_kv_shared_layer:
            self.k_norm = Gemma4RMSNorm(d)
            self.v_norm = Gemma4RMSNorm(d, with_scale=False)
            self.k_proj = Linear(c.hidden_size, kvh * d, b)
            self.v_proj = Linear(c.hidden_size, kvh * d, b) if not alt else None
        self.o_proj = Linear(c.num_attention_heads * d, c.hidden_size, b)


class Gemma4TextMLP(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        first = c.num_hidden_layers - c.num_kv_shared_layers
        wide = c.use_double_wide_mlp and i >= first > 0
        n = c.intermediate_size * (2 if wide else 1)
        self.gate_proj = Linear(c.hidden_size, n, False)
        self.up_proj = Linear(c.hidden_size, n, False)
        self.down_proj = Linear(n, c.hidden_size, False)


class Gemma4TextRouter(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = Gemma4RMSNorm(c.hidden_size, with_scale=False)
        self.proj = Linear(c.hidden_size, c.num_experts, False)
        self.scale = Param(c.hidden_size)
        self.per_expert_scale = Param(c.num_experts)


class Gemma4TextExperts(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_up_proj = Param(c.num_experts, 2 * c.moe_intermediate_size, c.hidden_size)
        self.down_proj = Param(c.num_experts, c.hidden_size, c.moe_intermediate_size)


class Gemma4TextDecoderLayer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        H = c.hidden_size
        self.self_attn = Gemma4TextAttention(c, i)
        self.mlp = Gemma4TextMLP(c, i)
        self.input_layernorm = Gemma4RMSNorm(H)
        self.post_attention_layernorm = Gemma4RMSNorm(H)
        self.pre_feedforward_layernorm = Gemma4RMSNorm(H)
        self.post_feedforward_layernorm = Gemma4RMSNorm(H)
        self.register_buffer("layer_scalar", torch.ones(1, device=META))
        if c.hidden_size_per_layer_input:
            self.per_layer_input_gate = Linear(H, c.hidden_size_per_layer_input, False)
            self.per_layer_projection = Linear(c.hidden_size_per_layer_input, H, False)
            self.post_per_layer_input_norm = Gemma4RMSNorm(H)
        if c.enable_moe_block:
            self.router = Gemma4TextRouter(c)
            self.experts = Gemma4TextExperts(c)
            self.post_feedforward_layernorm_1 = Gemma4RMSNorm(H)
            self.post_feedforward_layernorm_2 = Gemma4RMSNorm(H)
            self.pre_feedforward_layernorm_2 = Gemma4RMSNorm(H)


class Gemma4ForCausalLM(nn.Module):  # Gemma4TextModel's modules inlined, then lm_head
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size, device=META)
        self.layers = nn.ModuleList([Gemma4TextDecoderLayer(c, i) for i in range(c.num_hidden_layers)])
        self.norm = Gemma4RMSNorm(c.hidden_size)
        if c.hidden_size_per_layer_input:
            n = c.num_hidden_layers * c.hidden_size_per_layer_input
            self.embed_tokens_per_layer = nn.Embedding(c.vocab_size_per_layer_input, n, device=META)
            self.per_layer_model_projection = Linear(c.hidden_size, n, False)
            self.per_layer_projection_norm = Gemma4RMSNorm(c.hidden_size_per_layer_input)
        self.lm_head = Linear(c.hidden_size, c.vocab_size, False)
        if c.tie_word_embeddings:  # _tied_weights_keys
            self.lm_head.weight = self.embed_tokens.weight


class Gemma4VisionEncoderLayer(nn.Module):
    def __init__(self, v):
        super().__init__()
        H, d = v.hidden_size, v.head_dim
        self.q_proj = Linear(H, v.num_attention_heads * d, False)  # Gemma4ClippableLinear.linear
        self.k_proj = Linear(H, v.num_key_value_heads * d, False)
        self.v_proj = Linear(H, v.num_key_value_heads * d, False)
        self.o_proj = Linear(v.num_attention_heads * d, H, False)
        self.q_norm = Gemma4RMSNorm(d)
        self.k_norm = Gemma4RMSNorm(d)
        self.v_norm = Gemma4RMSNorm(d, with_scale=False)
        self.gate_proj = Linear(H, v.intermediate_size, False)
        self.up_proj = Linear(H, v.intermediate_size, False)
        self.down_proj = Linear(v.intermediate_size, H, False)
        self.norms = nn.ModuleList([Gemma4RMSNorm(H) for _ in range(4)])


class Gemma4VisionModel(nn.Module):
    def __init__(self, v, text_hidden):
        super().__init__()
        self.input_proj = Linear(3 * v.patch_size ** 2, v.hidden_size, False)  # Gemma4VisionPatchEmbedder
        self.position_embedding_table = Param(2, v.position_embedding_size, v.hidden_size)
        self.layers = nn.ModuleList([Gemma4VisionEncoderLayer(v) for _ in range(v.num_hidden_layers)])
        self.embed_vision = Linear(v.hidden_size, text_hidden, False)  # Gemma4MultimodalEmbedder
        self.embed_vision_norm = Gemma4RMSNorm(v.hidden_size, with_scale=False)


class Gemma4AudioFeedForward(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.ffw_layer_1 = Linear(a.hidden_size, a.hidden_size * 4, False)
        self.ffw_layer_2 = Linear(a.hidden_size * 4, a.hidden_size, False)
        self.pre_layer_norm = Gemma4RMSNorm(a.hidden_size)
        self.post_layer_norm = Gemma4RMSNorm(a.hidden_size)


class Gemma4AudioLayer(nn.Module):
    def __init__(self, a):
        super().__init__()
        H, nh = a.hidden_size, a.num_attention_heads
        hd = H // nh
        self.feed_forward1 = Gemma4AudioFeedForward(a)
        self.feed_forward2 = Gemma4AudioFeedForward(a)
        self.q_proj, self.k_proj, self.v_proj = (Linear(H, nh * hd, False) for _ in range(3))  # Gemma4AudioAttention
        self.post = Linear(H, H, False)
        self.relative_k_proj = Linear(H, nh * hd, False)
        self.per_dim_scale = Param(hd)
        self.linear_start = Linear(H, 2 * H, False)  # Gemma4AudioLightConv1d
        self.linear_end = Linear(H, H, False)
        self.depthwise_conv1d = nn.Conv1d(H, H, a.conv_kernel_size, groups=H, bias=False, device=META)
        self.lconv_pre_layer_norm = Gemma4RMSNorm(H)
        self.conv_norm = Gemma4RMSNorm(H)
        self.norm_pre_attn = Gemma4RMSNorm(H)
        self.norm_post_attn = Gemma4RMSNorm(H)
        self.norm_out = Gemma4RMSNorm(H)


class Gemma4AudioModel(nn.Module):
    def __init__(self, a, text_hidden):
        super().__init__()
        c0, c1 = a.subsampling_conv_channels
        self.conv0 = nn.Conv2d(1, c0, (3, 3), stride=(2, 2), padding=1, bias=False, device=META)
        # nn.LayerNorm(c, bias=False): a weight of c (torch 1.13's LayerNorm has no bias argument)
        self.norm0 = Gemma4RMSNorm(c0)
        self.conv1 = nn.Conv2d(c0, c1, (3, 3), stride=(2, 2), padding=1, bias=False, device=META)
        self.norm1 = Gemma4RMSNorm(c1)
        self.input_proj_linear = Linear((c0 // 4) * c1, a.hidden_size, False)
        self.layers = nn.ModuleList([Gemma4AudioLayer(a) for _ in range(a.num_hidden_layers)])
        self.output_proj = Linear(a.hidden_size, a.output_proj_dims, True)
        self.embed_audio = Linear(a.output_proj_dims, text_hidden, False)  # Gemma4MultimodalEmbedder


def n(m):
    return sum(p.numel() for p in m.parameters())


def counts(cfg):
    """(language model, active per token, vision tower + embedder, audio tower + embedder)"""
    nested = cfg.get("model_type") == "gemma4"
    t = text_cfg(cfg.get("text_config") or {} if nested else cfg)
    if nested:  # get_expanded_tied_weights_keys reads the model's own config: Gemma4Config's (True when absent)
        t.tie_word_embeddings = cfg.get("tie_word_embeddings", True)
    lm = Gemma4ForCausalLM(t)
    total = n(lm)
    idle = 0
    if t.enable_moe_block:
        idle = t.num_hidden_layers * 3 * (t.num_experts - t.top_k_experts) * t.hidden_size * t.moe_intermediate_size
    vis = aud = 0
    if nested and cfg.get("vision_config") is not None:
        vis = n(Gemma4VisionModel(Cfg(cfg["vision_config"], VISION_DEFAULTS), t.hidden_size))
    if nested and cfg.get("audio_config") is not None:
        aud = n(Gemma4AudioModel(Cfg(cfg["audio_config"], AUDIO_DEFAULTS), t.hidden_size))
    return total, total - idle, vis, aud


EXPECT = {  # tests/test_gemma4.c test_checkpoints
    "gemma-4-31b-it.json": (30697345280, 30697345280, 575741232, 0),
    "gemma-4-26b-a4b-it.json": (25233141760, 3822530560, 572792112, 0),
    "gemma-4-e2b-it.json": (4628569344, 4628569344, 168544256, 307183904),
    "gemma-4-e4b-it.json": (7463013376, 7463013376, 169330688, 308756768),
}

if __name__ == "__main__":
    bad = 0
    for f, want in EXPECT.items():
        got = counts(json.load(open(os.path.join(ROOT, "tests", "data", "hf", f))))
        print(f"{f}: language model {got[0]:,} ({got[1]:,} active), vision {got[2]:,}, audio {got[3]:,}, "
              f"all {got[0] + got[2] + got[3]:,}" + ("" if got == want else f"  MISMATCH, expected {want}"))
        bad += got != want
    sys.exit(1 if bad else 0)
