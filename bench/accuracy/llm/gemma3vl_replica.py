"""Gemma 3's vision part (SiglipVisionModel + Gemma3MultiModalProjector) written from the transformers
source (issue 31 item 4), for the exact parameter counts of the Gemma 3 checkpoints.

Source: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e,
src/transformers/models/siglip/modeling_siglip.py:
  SiglipVisionEmbeddings   patch_embedding = nn.Conv2d(num_channels, hidden, kernel_size=patch_size,
                           stride=patch_size, padding="valid") (bias: nn.Conv2d's default True);
                           position_embedding = nn.Embedding((image_size // patch_size) ** 2, hidden)
  SiglipAttention          k_proj, v_proj, q_proj, out_proj = nn.Linear(hidden, hidden) (biases)
  SiglipMLP                fc1 = nn.Linear(hidden, intermediate), fc2 = nn.Linear(intermediate, hidden)
  SiglipEncoderLayer       layer_norm1, self_attn, layer_norm2, mlp (nn.LayerNorm: weight and bias)
  SiglipVisionTransformer  embeddings, encoder (num_hidden_layers layers), post_layernorm; the head
                           (SiglipMultiheadAttentionPoolingHead: probe [1, 1, hidden], nn.MultiheadAttention,
                           layernorm, mlp) unless the config has vision_use_head false
models/gemma3/modeling_gemma3.py @ 0018aa647bb13801f061e2d1027c326f531b59fb:
  Gemma3MultiModalProjector mm_input_projection_weight = nn.Parameter([vision hidden, text hidden]),
                           mm_soft_emb_norm = Gemma3RMSNorm(vision hidden) (weight only)
The language model: gptoss_replica.gemma3_text_params (Gemma3TextModel, lm_head tied).

python3 gemma3vl_replica.py --check builds every module above on the meta device with torch and
asserts the totals tests/test_hf.c uses (gemma-3-4b-it 4,300,079,472, gemma-3-27b-it 27,432,406,640).
"""

import json
import os
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
M = dict(device="meta")  # shapes only: every module built on the meta device


def siglip_keys(v):
    g = lambda k, d: v[k] if v.get(k) is not None else d  # noqa: E731  (SiglipVisionConfig defaults)
    return dict(C=g("hidden_size", 768), I=g("intermediate_size", 3072), N=g("num_hidden_layers", 12),
                NH=g("num_attention_heads", 12), cin=g("num_channels", 3), img=g("image_size", 224),
                P=g("patch_size", 16), eps=g("layer_norm_eps", 1e-6), head=v.get("vision_use_head", True))


class SiglipMLP(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.fc1 = nn.Linear(k["C"], k["I"], **M)
        self.fc2 = nn.Linear(k["I"], k["C"], **M)


class SiglipAttention(nn.Module):
    def __init__(self, k):
        super().__init__()
        C = k["C"]
        self.k_proj, self.v_proj, self.q_proj, self.out_proj = (nn.Linear(C, C, **M) for _ in range(4))


class SiglipEncoderLayer(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.self_attn = SiglipAttention(k)
        self.layer_norm1 = nn.LayerNorm(k["C"], eps=k["eps"], **M)
        self.mlp = SiglipMLP(k)
        self.layer_norm2 = nn.LayerNorm(k["C"], eps=k["eps"], **M)


class SiglipHead(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.probe = nn.Parameter(torch.empty(1, 1, k["C"], **M))
        self.attention = nn.MultiheadAttention(k["C"], k["NH"], batch_first=True, **M)
        self.layernorm = nn.LayerNorm(k["C"], eps=k["eps"], **M)
        self.mlp = SiglipMLP(k)


class SiglipVisionTransformer(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.patch_embedding = nn.Conv2d(k["cin"], k["C"], kernel_size=k["P"], stride=k["P"], padding="valid", **M)
        self.position_embedding = nn.Embedding((k["img"] // k["P"]) ** 2, k["C"], **M)
        self.layers = nn.ModuleList([SiglipEncoderLayer(k) for _ in range(k["N"])])
        self.post_layernorm = nn.LayerNorm(k["C"], eps=k["eps"], **M)
        if k["head"]:
            self.head = SiglipHead(k)


class Gemma3MultiModalProjector(nn.Module):
    def __init__(self, k, text_hidden):
        super().__init__()
        self.mm_input_projection_weight = nn.Parameter(torch.empty(k["C"], text_hidden, **M))
        self.mm_soft_emb_norm_weight = nn.Parameter(torch.empty(k["C"], **M))  # Gemma3RMSNorm.weight


def vision_count(cfg):
    k = siglip_keys(cfg.get("vision_config") or {})
    tower = SiglipVisionTransformer(k)
    proj = Gemma3MultiModalProjector(k, cfg["text_config"].get("hidden_size", 2304))
    return sum(p.numel() for p in tower.parameters()) + sum(p.numel() for p in proj.parameters())


def check():
    import gptoss_replica
    ok = True
    for f, want in (("gemma-3-4b-it.json", 4300079472), ("gemma-3-27b-it.json", 27432406640)):
        c = json.load(open(os.path.join(ROOT, "tests", "data", "hf", f)))
        text = gptoss_replica.gemma3_text_params(c["text_config"])
        vis = vision_count(c)
        print("%-22s text %16s  vision+projector %14s  total %16s  (want %s)" % (
            f, "{:,}".format(text), "{:,}".format(vis), "{:,}".format(text + vis), "{:,}".format(want)))
        ok &= text + vis == want
    return 0 if ok else 1


# --------------------------------------------------------------------------
# the reference modules (torch 1.13, CPU; measured by measure_llm.py --image)
# --------------------------------------------------------------------------

IMAGE_EXTRA = 4  # Gemma3Processor.full_image_sequence: "\n\n", boi, the image tokens, eoi, "\n\n"


def build(cfg, attn_impl=None):
    """Gemma3ForConditionalGeneration at small width: gptoss_replica's Gemma 3 language model and the
    SigLIP tower and projector, frozen (the Qwen2.5-VL replica's default: LLaMA-Factory's
    freeze_vision_tower and freeze_multi_modal_projector). cfg: the config.json's text_config keys with
    vision_config, mm_tokens_per_image and image_token_index beside them (measure_llm.py)."""
    import vctorch
    import reference as R
    import gptoss_replica

    k = siglip_keys(cfg.d.get("vision_config") or {})
    C, NH, I = k["C"], k["NH"], k["I"]
    D = C // NH
    side = k["img"] // k["P"]
    mm = cfg.d.get("mm_tokens_per_image", 256)
    image_token_id = cfg.d.get("image_token_index", 262144)

    class SdpaAttention(nn.Module):
        """SiglipSdpaAttention.forward @ efa7189c: q/k/v_proj, view(B, L, heads, D).transpose(1, 2) (no
        contiguous off CUDA or without a mask; Gemma3 passes none), F.scaled_dot_product_attention
        (attn_mask None, is_causal False: the harness's math backend), transpose(1, 2).contiguous(),
        view, out_proj."""

        def __init__(self):
            super().__init__()
            self.k_proj, self.v_proj, self.q_proj, self.out_proj = (R.Linear(C, C, bias=True) for _ in range(4))

        def forward(self, hidden_states):
            B, L, _ = hidden_states.size()
            q = self.q_proj(hidden_states).view(B, L, NH, D).transpose(1, 2)
            kk = self.k_proj(hidden_states).view(B, L, NH, D).transpose(1, 2)
            v = self.v_proj(hidden_states).view(B, L, NH, D).transpose(1, 2)
            out = vctorch._sdpa_math_2x(q, kk, v, attn_mask=None, dropout_p=0.0, is_causal=False)
            del q, kk, v
            out = out.transpose(1, 2).contiguous().view(B, L, C)
            return self.out_proj(out)

    class MLP(nn.Module):  # SiglipMLP
        def __init__(self):
            super().__init__()
            self.fc1 = R.Linear(C, I)
            self.fc2 = R.Linear(I, C)
            self.activation_fn = R.act_fn(cfg.d.get("vision_config", {}).get("hidden_act", "gelu_pytorch_tanh"))

        def forward(self, x):
            return self.fc2(self.activation_fn(self.fc1(x)))

    class EncoderLayer(nn.Module):  # SiglipEncoderLayer.forward
        def __init__(self):
            super().__init__()
            self.self_attn = SdpaAttention()
            self.layer_norm1 = nn.LayerNorm(C, eps=k["eps"])
            self.mlp = MLP()
            self.layer_norm2 = nn.LayerNorm(C, eps=k["eps"])

        def forward(self, hidden_states):
            residual = hidden_states
            hidden_states = self.self_attn(self.layer_norm1(hidden_states))
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.mlp(self.layer_norm2(hidden_states))
            return residual + hidden_states

    class Vision(nn.Module):  # SiglipVisionTransformer (vision_use_head false)
        def __init__(self):
            super().__init__()
            self.patch_embedding = nn.Conv2d(k["cin"], C, kernel_size=k["P"], stride=k["P"], padding="valid")
            self.position_embedding = nn.Embedding(side * side, C)
            self.register_buffer("position_ids", torch.arange(side * side).expand((1, -1)), persistent=False)
            self.layers = nn.ModuleList([EncoderLayer() for _ in range(k["N"])])
            self.post_layernorm = nn.LayerNorm(C, eps=k["eps"])

        def forward(self, pixel_values):
            # SiglipVisionEmbeddings.forward: patch_embedding(pixel_values.to(dtype)), flatten(2).transpose(1, 2),
            # + position_embedding(position_ids)
            patch_embeds = self.patch_embedding(pixel_values.to(dtype=self.patch_embedding.weight.dtype))
            embeddings = patch_embeds.flatten(2).transpose(1, 2)
            del patch_embeds
            hidden_states = embeddings + self.position_embedding(self.position_ids)
            del embeddings
            # SiglipVisionTransformer.forward @ efa7189c: hidden_states = self.embeddings(...), then
            # self.encoder(inputs_embeds=hidden_states): the caller's local holds the embeddings through the
            # encoder, whose loop rebinds its own hidden_states (each later layer's input dies)
            encoder_states = hidden_states
            for layer in self.layers:  # SiglipEncoder.forward
                encoder_states = layer(encoder_states)
            del hidden_states
            return self.post_layernorm(encoder_states)

    class Projector(nn.Module):  # Gemma3MultiModalProjector @ 0018aa64
        def __init__(self, text_hidden):
            super().__init__()
            self.mm_input_projection_weight = nn.Parameter(torch.zeros(C, text_hidden))
            self.mm_soft_emb_norm = R.Gemma2RMSNorm(C, eps=k["eps"])  # Gemma3RMSNorm: the same code
            self.tokens_per_side = int(mm ** 0.5)
            self.kernel_size = side // self.tokens_per_side
            self.avg_pool = nn.AvgPool2d(kernel_size=self.kernel_size, stride=self.kernel_size)

        def forward(self, vision_outputs):
            b, _, seq_length = vision_outputs.shape
            x = vision_outputs.transpose(1, 2).reshape(b, seq_length, side, side).contiguous()
            x = self.avg_pool(x).flatten(2).transpose(1, 2)
            x = self.mm_soft_emb_norm(x)
            return torch.matmul(x, self.mm_input_projection_weight).type_as(vision_outputs)

    text = R.Config(dict(cfg.d, model_type="gemma3_text"))

    class Gemma3VL(gptoss_replica.CausalLM):
        """Gemma3ForConditionalGeneration.forward -> Gemma3Model.forward @ 0018aa64: inputs_embeds =
        embed_tokens(input_ids) (scaled); image_features = get_image_features(pixel_values);
        get_placeholder_mask (input_ids == image_token_id, expand_as, inputs_embeds[mask].numel(): a
        boolean-indexed copy); inputs_embeds.masked_scatter(mask, image_features); in training
        create_causal_mask_mapping with token_type_ids (is_training requires them): an or_mask_function
        making each image block bidirectional, so masking_utils cannot skip the mask: a [B, 1, L, L] bool
        mask per layer type (full: causal or same image block; sliding: the same within the window),
        alive until the forward returns; the language model's sdpa then gets a mask (repeat_kv, no
        is_causal: reference.sdpa_attention_forward). The vmap's temporaries while the masks are made
        are not replicated, only the masks."""

        def __init__(self):
            super().__init__(text, attn_impl)
            self.vision_tower = Vision()
            self.multi_modal_projector = Projector(text.hidden_size)
            self.pixel_values = self.token_type_ids = None

        def _merge_image(self, input_ids, inputs_embeds):
            """Gemma3Model.forward @ 0018aa64 with pixel_values: get_image_features (the tower, then the
            projector), cast to the embeddings' dtype, masked_scatter into the image tokens' rows; the
            features and the token mask are freed when this returns, the caller's embeddings replaced."""
            image_features = self.multi_modal_projector(self.vision_tower(self.pixel_values))
            image_features = image_features.to(inputs_embeds.dtype)
            special = input_ids == image_token_id
            special = special.unsqueeze(-1).expand_as(inputs_embeds)
            if inputs_embeds[special].numel() != image_features.numel():
                raise ValueError("image features and image tokens do not match")
            return inputs_embeds.masked_scatter(special, image_features)

        def forward(self, input_ids, labels=None, past_key_values=None, **kw):
            if past_key_values is not None:
                return self._generate_step(input_ids, past_key_values, **kw)
            cfg_t = self.cfg
            inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale.to(self.embed_tokens.weight.dtype)
            masks = {"full_attention": None, "sliding_attention": None}
            if self.pixel_values is not None:
                inputs_embeds = self._merge_image(input_ids, inputs_embeds)
                if self.training:
                    L = input_ids.shape[1]
                    tt = self.token_type_ids == 1
                    prev = torch.nn.functional.pad(tt, (1, 0), value=0)[:, :-1]
                    group = torch.cumsum((tt & ~prev).int(), dim=1) - 1
                    group = torch.where(tt, group, -1)
                    q, kv = torch.arange(L)[:, None], torch.arange(L)[None, :]
                    block = (tt[:, :, None] & tt[:, None, :] & (group[:, :, None] == group[:, None, :]))[:, None]
                    w = cfg_t.sliding_window
                    masks = {"full_attention": (kv <= q)[None, None] | block,
                             "sliding_attention": ((kv <= q) & (kv > q - w))[None, None] | block}
                    del tt, prev, group, block
            position_ids = torch.arange(inputs_embeds.shape[1]).unsqueeze(0)
            hidden_states = inputs_embeds  # Gemma3Model.forward keeps its inputs_embeds local through language_model(...)
            pes = {"full_attention": self.rotary_emb(hidden_states, position_ids),
                   "sliding_attention": self.rotary_emb_local(hidden_states, position_ids)}
            for layer in self.layers:
                hidden_states = self._layer(layer, hidden_states, masks[layer.attention_type], pes[layer.attention_type])
            hidden_states = self.norm(hidden_states)
            del masks, inputs_embeds, pes  # Gemma3Model.forward returns before the head
            return self._head(hidden_states, labels, 0, self.lm_head)

        def _generate_step(self, input_ids, past_key_values, cache_position=None, attention_mask=None,
                           logits_to_keep=0):
            """One forward of generate() (GenerationMixin._sample with a DynamicCache) through
            Gemma3ForConditionalGeneration.forward -> Gemma3Model.forward @ 0018aa64:
            prepare_inputs_for_generation passes pixel_values only while cache_position[0] == 0 (the caller
            sets self.pixel_values for the prefill alone); the prefill runs get_image_features and
            masked_scatter as in training; create_causal_mask_mapping builds the token_type_ids or-mask when
            may_have_image_input (past_key_values not initialized or pixel_values given: the prefill), a
            [B, 1, q, kv] bool mask per layer type alive to the forward's end, and the language model's sdpa
            gets it (repeat_kv, the bool mask made additive: reference.sdpa_attention_forward); a decoding
            step has no image input, and within sliding_window without padding sdpa_mask returns None
            (allow_is_causal_skip). The language model then runs as Gemma3TextModel.forward with the cache
            (gptoss_replica.CausalLM.forward's decoder loop)."""
            cfg_t = self.cfg
            inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale.to(self.embed_tokens.weight.dtype)
            past_seen = past_key_values.get_seq_length()
            if cache_position is None:
                cache_position = torch.arange(past_seen, past_seen + inputs_embeds.shape[1])
            masks = {"full_attention": None, "sliding_attention": None}
            if self.pixel_values is not None:
                inputs_embeds = self._merge_image(input_ids, inputs_embeds)
                if self.token_type_ids is not None:  # may_have_image_input: the or-mask of the image blocks
                    L, kv_len = input_ids.shape[1], past_seen + input_ids.shape[1]
                    tt = self.token_type_ids == 1
                    prev = torch.nn.functional.pad(tt, (1, 0), value=0)[:, :-1]
                    group = torch.cumsum((tt & ~prev).int(), dim=1) - 1
                    group = torch.where(tt, group, -1)
                    q, kv = cache_position[:, None], torch.arange(kv_len)[None, :]
                    block = (tt[:, -L:, None] & tt[:, None, :kv_len]
                             & (group[:, -L:, None] == group[:, None, :kv_len]))[:, None]
                    w = cfg_t.sliding_window
                    masks = {"full_attention": (kv <= q)[None, None] | block,
                             "sliding_attention": ((kv <= q) & (kv > q - w))[None, None] | block}
                    del tt, prev, group, block, q, kv
            position_ids = cache_position.unsqueeze(0)
            hidden_states = inputs_embeds  # Gemma3Model.forward keeps its inputs_embeds local through language_model(...)
            pes = {"full_attention": self.rotary_emb(hidden_states, position_ids),
                   "sliding_attention": self.rotary_emb_local(hidden_states, position_ids)}
            for layer in self.layers:
                hidden_states = layer(hidden_states, masks[layer.attention_type], pes[layer.attention_type],
                                      past_key_values)
            hidden_states = self.norm(hidden_states)
            del masks, inputs_embeds, pes  # Gemma3Model.forward returns before the head
            return self._head(hidden_states, None, logits_to_keep, self.lm_head)

    model = Gemma3VL()
    for p in list(model.vision_tower.parameters()) + list(model.multi_modal_projector.parameters()):
        p.requires_grad_(False)
    return model


if __name__ == "__main__" and "--check" in sys.argv:
    sys.exit(check())
