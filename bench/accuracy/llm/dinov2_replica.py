"""dinov2_replica.py -- Dinov2ForImageClassification (issue 31, towers and encoders) as a PyTorch module, written
from the transformers source (not from vramcalc's engine), measured by measure_llm.py (--mode train / infer) and
counted by `python3 dinov2_replica.py CONFIG...`.

Sources read (huggingface/transformers):
  D = models/dinov2/modeling_dinov2.py @ 015e68769f9823df27f5f7372dc155277e6ff7e6:
      Dinov2PatchEmbeddings (projection nn.Conv2d(num_channels, hidden_size, kernel_size=patch_size,
      stride=patch_size); forward: projection(pixel_values).flatten(2).transpose(1, 2));
      Dinov2Embeddings (cls_token [1, 1, H], mask_token [1, H] when use_mask_token, position_embeddings
      [1, num_patches + 1, H], dropout hidden_dropout_prob; forward: pixel_values.to(projection.weight.dtype) straight
      into the patch embeddings, the mask_token's torch.where only with bool_masked_pos (None here),
      cls_token.expand(batch_size, -1, -1), torch.cat((cls_tokens, embeddings), dim=1), + interpolate_pos_encoding
      (the position_embeddings themselves when num_patches == num_positions and height == width; else
      position_embeddings[:, :1], [:, 1:].reshape(1, G, G, dim).permute(0, 3, 1, 2), nn.functional.interpolate of
      its .to(torch.float32) to (height // patch_size, width // patch_size), bicubic, align_corners False,
      .to(dtype=target_dtype), .permute(0, 2, 3, 1).view(1, -1, dim), torch.cat with the class position), dropout);
      Dinov2SelfAttention (ViT's: key, value, query -- nn.Linear(H, H, bias=qkv_bias) -- each .view(B, -1, NH, D)
      .transpose(1, 2), the sdpa interface (integrations/sdpa_attention.py: no mask, is_causal False, dropout
      attention_probs_dropout_prob in training, attn_output.transpose(1, 2).contiguous()), reshape(B, L, H));
      Dinov2SelfOutput (dense, dropout); Dinov2LayerScale (hidden_state * lambda1, lambda1 [H]);
      Dinov2DropPath / drop_path (nn.Identity when drop_path_rate is 0.0; else in training keep_prob +
      torch.rand((batch, 1, 1), dtype=input.dtype), floor_(), input.div(keep_prob) * random_tensor; the input in eval);
      Dinov2MLP (fc1 [H -> int(H * mlp_ratio)], ACT2FN[hidden_act], fc2); Dinov2SwiGLUFFN (hidden
      (int(int(H * mlp_ratio) * 2 / 3) + 7) // 8 * 8, weights_in [H -> 2 hidden], chunk(2, dim=-1),
      silu(x1) * x2, weights_out);
      Dinov2Layer.forward (hidden_states_norm = norm1(h), a local until it returns; attention; layer_scale1;
      drop_path(.) + h; norm2; mlp; layer_scale2; drop_path(.) + h); Dinov2Encoder (GradientCheckpointingLayer: with
      gradient checkpointing each layer's __call__ through the checkpoint function, non-reentrant as
      gradient_checkpointing_enable defaults); Dinov2Model.forward (embeddings, encoder, layernorm);
      Dinov2ForImageClassification (classifier nn.Linear(2 H, num_labels); forward: sequence_output =
      outputs.last_hidden_state, cls_token = sequence_output[:, 0], patch_tokens = sequence_output[:, 1:],
      torch.cat([cls_token, patch_tokens.mean(dim=1)], dim=1), classifier, the loss (ForImageClassification's
      cross-entropy for integer labels and num_labels > 1) -- sequence_output alive until it returns).
  configuration_dinov2.py: the defaults (DEFAULTS) as read in pypi-data/pypi-mirror-396's copy of transformers'
      Dinov2Config (huggingface/transformers' stored version, 02d3b01c, predates use_swiglu_ffn / use_mask_token).
Linears are vctorch._Linear2x, LayerNorms vctorch._LayerNorm2x, the Conv2d vctorch's 2.x convolution, SDPA
vctorch._sdpa_math_2x, dropout vctorch.dropout2x, as the harness's other replicas (vision_encoder_replica.py).
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import torch
import torch.nn as nn
import torch.nn.functional as F

import vctorch
from vision_encoder_replica import Conv2d, _act, _labels

DEFAULTS = {  # Dinov2Config.__init__
    "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "mlp_ratio": 4, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "layer_norm_eps": 1e-6, "image_size": 224,
    "patch_size": 14, "num_channels": 3, "qkv_bias": True, "layerscale_value": 1.0, "drop_path_rate": 0.0,
    "use_swiglu_ffn": False, "use_mask_token": True,
}


def resolve(raw):
    """config.json with Dinov2Config's defaults filled in."""
    d = dict(DEFAULTS)
    d.update({k: v for k, v in raw.items() if v is not None})
    return d


class Dinov2SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, b = c["hidden_size"], c["qkv_bias"]
        self.NH, self.D = c["num_attention_heads"], H // c["num_attention_heads"]
        self.p_attn = c["attention_probs_dropout_prob"]
        self.query = vctorch._Linear2x(H, H, bias=b)
        self.key = vctorch._Linear2x(H, H, bias=b)
        self.value = vctorch._Linear2x(H, H, bias=b)

    def forward(self, hidden_states):
        batch_size = hidden_states.shape[0]
        new_shape = batch_size, -1, self.NH, self.D
        key_layer = self.key(hidden_states).view(*new_shape).transpose(1, 2)
        value_layer = self.value(hidden_states).view(*new_shape).transpose(1, 2)
        query_layer = self.query(hidden_states).view(*new_shape).transpose(1, 2)
        o = vctorch._sdpa_math_2x(query_layer, key_layer, value_layer, attn_mask=None,
                                  dropout_p=self.p_attn if self.training else 0.0, is_causal=False, scale=self.D ** -0.5)
        context_layer = o.transpose(1, 2).contiguous()  # sdpa_attention_forward's return
        del o, key_layer, value_layer, query_layer
        return context_layer.reshape(context_layer.size()[:-2] + (self.NH * self.D,))


class Dinov2Attention(nn.Module):  # Dinov2SelfAttention + Dinov2SelfOutput
    def __init__(self, c):
        super().__init__()
        self.attention = Dinov2SelfAttention(c)
        self.dense = vctorch._Linear2x(c["hidden_size"], c["hidden_size"])
        self.p = c["hidden_dropout_prob"]

    def forward(self, hidden_states):
        self_attn_output = self.attention(hidden_states)
        return vctorch.dropout2x(self.dense(self_attn_output), self.p, self.training)


class Dinov2LayerScale(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.lambda1 = nn.Parameter(c["layerscale_value"] * torch.ones(c["hidden_size"]))

    def forward(self, hidden_state):
        return hidden_state * self.lambda1


class Dinov2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        hidden = int(H * c["mlp_ratio"])
        self.fc1 = vctorch._Linear2x(H, hidden, bias=True)
        self.activation = _act(c["hidden_act"])
        self.fc2 = vctorch._Linear2x(hidden, H, bias=True)

    def forward(self, hidden_state):
        hidden_state = self.fc1(hidden_state)
        hidden_state = self.activation(hidden_state)
        hidden_state = self.fc2(hidden_state)
        return hidden_state


class Dinov2SwiGLUFFN(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        hidden = int(H * c["mlp_ratio"])
        hidden = (int(hidden * 2 / 3) + 7) // 8 * 8
        self.weights_in = vctorch._Linear2x(H, 2 * hidden, bias=True)
        self.weights_out = vctorch._Linear2x(hidden, H, bias=True)

    def forward(self, hidden_state):
        hidden_state = self.weights_in(hidden_state)
        x1, x2 = hidden_state.chunk(2, dim=-1)
        hidden = F.silu(x1) * x2
        return self.weights_out(hidden)


class Dinov2Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.drop_prob = c["drop_path_rate"]  # Dinov2DropPath(drop_path_rate) if > 0.0 else nn.Identity()
        H, eps = c["hidden_size"], c["layer_norm_eps"]
        self.norm1 = vctorch._LayerNorm2x(H, eps=eps)
        self.attention = Dinov2Attention(c)
        self.layer_scale1 = Dinov2LayerScale(c)
        self.norm2 = vctorch._LayerNorm2x(H, eps=eps)
        self.mlp = Dinov2SwiGLUFFN(c) if c["use_swiglu_ffn"] else Dinov2MLP(c)
        self.layer_scale2 = Dinov2LayerScale(c)

    def drop_path(self, input):  # drop_path(input, drop_prob, training); nn.Identity at 0.0
        if self.drop_prob == 0.0 or not self.training:
            return input
        keep_prob = 1 - self.drop_prob
        shape = (input.shape[0],) + (1,) * (input.ndim - 1)
        random_tensor = keep_prob + torch.rand(shape, dtype=input.dtype, device=input.device)
        random_tensor.floor_()  # binarize
        output = input.div(keep_prob) * random_tensor
        return output

    def forward(self, hidden_states):
        hidden_states_norm = self.norm1(hidden_states)
        self_attention_output = self.attention(hidden_states_norm)
        self_attention_output = self.layer_scale1(self_attention_output)
        hidden_states = self.drop_path(self_attention_output) + hidden_states
        layer_output = self.norm2(hidden_states)
        layer_output = self.mlp(layer_output)
        layer_output = self.layer_scale2(layer_output)
        layer_output = self.drop_path(layer_output) + hidden_states
        return layer_output


class Dinov2ForImageClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        c = resolve(c)
        self.c = c
        H, P, img = c["hidden_size"], c["patch_size"], c["image_size"]
        self.img = img
        self.cls_token = nn.Parameter(torch.randn(1, 1, H))
        if c["use_mask_token"]:
            self.mask_token = nn.Parameter(torch.zeros(1, H))
        self.projection = Conv2d(c["num_channels"], H, kernel_size=P, stride=P)
        n = (img // P) * (img // P)
        self.position_embeddings = nn.Parameter(torch.randn(1, n + 1, H))
        self.p = c["hidden_dropout_prob"]
        self.layer = nn.ModuleList(Dinov2Layer(c) for _ in range(c["num_hidden_layers"]))
        self.layernorm = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        n_labels = _labels(c)
        self.classifier = vctorch._Linear2x(2 * H, n_labels)
        self.gradient_checkpointing = False

    def get_input_embeddings(self):  # Dinov2Model.get_input_embeddings: the patch embeddings
        return self.projection

    def interpolate_pos_encoding(self, embeddings, height, width):  # Dinov2Embeddings.interpolate_pos_encoding
        num_patches = embeddings.shape[1] - 1
        num_positions = self.position_embeddings.shape[1] - 1
        if num_patches == num_positions and height == width:
            return self.position_embeddings
        class_pos_embed = self.position_embeddings[:, :1]
        patch_pos_embed = self.position_embeddings[:, 1:]
        dim = embeddings.shape[-1]
        P = self.c["patch_size"]
        new_height = height // P
        new_width = width // P
        sqrt_num_positions = int(num_positions ** 0.5)
        patch_pos_embed = patch_pos_embed.reshape(1, sqrt_num_positions, sqrt_num_positions, dim)
        patch_pos_embed = patch_pos_embed.permute(0, 3, 1, 2)
        target_dtype = patch_pos_embed.dtype
        patch_pos_embed = nn.functional.interpolate(
            patch_pos_embed.to(torch.float32),
            size=(new_height, new_width),
            mode="bicubic",
            align_corners=False,
        ).to(dtype=target_dtype)
        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((class_pos_embed, patch_pos_embed), dim=1)

    def _embeddings(self, pixel_values):  # Dinov2Embeddings.forward (bool_masked_pos None)
        batch_size, _, height, width = pixel_values.shape
        target_dtype = self.projection.weight.dtype
        embeddings = self.projection(pixel_values.to(dtype=target_dtype)).flatten(2).transpose(1, 2)
        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        embeddings = embeddings + self.interpolate_pos_encoding(embeddings, height, width)
        return vctorch.dropout2x(embeddings, self.p, self.training)

    def _dinov2(self, pixel_values):  # Dinov2Model.forward
        embedding_output = self._embeddings(pixel_values)
        hidden_states = embedding_output
        for blk in self.layer:  # Dinov2Encoder.forward
            if self.gradient_checkpointing and self.training:
                hidden_states = vctorch._checkpoint2x(blk.__call__, hidden_states)
            else:
                hidden_states = blk(hidden_states)
        return self.layernorm(hidden_states)

    def forward(self, pixel_values, labels=None):
        sequence_output = self._dinov2(pixel_values)
        cls_token = sequence_output[:, 0]
        patch_tokens = sequence_output[:, 1:]
        linear_input = torch.cat([cls_token, patch_tokens.mean(dim=1)], dim=1)
        logits = self.classifier(linear_input)
        loss = None if labels is None else F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits


def build(cfg):
    return Dinov2ForImageClassification(cfg)


def counts(cfg):
    """{class: parameters}: Dinov2ForImageClassification built here (meta device), Dinov2Model by the head's shape."""
    from check_params import MetaMode
    with MetaMode():
        m = build(cfg)
    c = resolve(cfg)
    cls = sum(p.numel() for p in m.parameters())
    H, n = c["hidden_size"], _labels(c)
    return {"Dinov2Model": cls - (2 * H * n + n), "Dinov2ForImageClassification": cls}


def main(paths):
    for p in paths:
        print(p, json.dumps(counts(json.load(open(p)))))


if __name__ == "__main__":
    main(sys.argv[1:])
