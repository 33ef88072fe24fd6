"""siglip_replica.py -- SiglipVisionModel and SiglipModel (issue 31, towers) as PyTorch modules, written from the transformers
source (not from vramcalc's engine), measured by measure_llm.py (--mode train / infer) and counted by
`python3 siglip_replica.py CONFIG...`.

Sources read (huggingface/transformers):
  S = models/siglip/modeling_siglip.py @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e (the version gemma3vl_replica.py
      cites; the shapes checked against @ 1c51a62f5861390e994db1464e8a51f6d7fbacbc's __init__s):
      SiglipVisionEmbeddings (patch_embedding nn.Conv2d(num_channels, hidden_size, kernel_size=patch_size,
      stride=patch_size, padding="valid"); position_embedding nn.Embedding(num_patches, hidden_size) over the
      position_ids buffer torch.arange(num_patches).expand((1, -1)); forward: target_dtype =
      patch_embedding.weight.dtype, patch_embedding(pixel_values.to(dtype=target_dtype)), .flatten(2).transpose(1, 2),
      + position_embedding(position_ids); no CLS token);
      SiglipAttention (q_proj, k_proj, v_proj, out_proj nn.Linear(H, H) with biases; forward: q, k, v each
      .view(B, L, -1, head_dim).transpose(1, 2), the sdpa interface (no mask, is_causal False, dropout
      attention_dropout in training, scaling head_dim ** -0.5; attn_output.transpose(1, 2).contiguous()),
      .reshape(B, L, H).contiguous(), out_proj);
      SiglipMLP (fc1, ACT2FN[hidden_act] -- gelu_pytorch_tanh: gelu(approximate="tanh") -- fc2);
      SiglipEncoderLayer.forward (residual; layer_norm1; self_attn; + residual; residual; layer_norm2; mlp; + residual;
      a GradientCheckpointingLayer: with gradient checkpointing each layer's __call__ through the checkpoint
      function, non-reentrant);
      SiglipVisionTransformer.forward (embeddings, encoder, post_layernorm, pooler_output = head(last_hidden_state)
      if use_head, use_head = True unless the config has vision_use_head);
      SiglipMultiheadAttentionPoolingHead (probe nn.Parameter [1, 1, H]; attention torch.nn.MultiheadAttention(H,
      num_attention_heads, batch_first=True); layernorm; mlp SiglipMLP; forward: probe.repeat(batch_size, 1, 1),
      attention(probe, h, h)[0], residual, layernorm, residual + mlp(.), [:, 0]).
  configuration_siglip.py @ d5ab4d58c4e44f1a6463fd4037fcdefb355ea468: SiglipVisionConfig's defaults (DEFAULTS).
  SiglipModel (model_type siglip, S above): SiglipTextEmbeddings (token_embedding nn.Embedding(vocab_size, H),
      position_embedding nn.Embedding(max_position_embeddings, H) over position_ids[:, :seq_length] of its buffer),
      SiglipTextTransformer.forward (input_ids.view(-1, L), the embeddings, SiglipEncoder without an attention mask,
      final_layer_norm, last_hidden_state[:, -1, :], head nn.Linear(H, H)), SiglipModel.__init__ (logit_scale,
      logit_bias nn.Parameter(torch.randn(1))) and SiglipModel.forward (vision tower first; the normalized embeddings;
      logits_per_text = matmul(text_embeds, image_embeds.t()) * logit_scale.exp() + logit_bias; with return_loss the
      eye-based labels, logsigmoid, -sum(dim=-1), mean), copied statement by statement; SiglipTextConfig's defaults
      (TEXT_DEFAULTS, configuration_siglip.py @ d5ab4d58). Training is SiglipModel(input_ids, pixel_values,
      return_loss=True).loss.backward(); the text ids padded to max_position_embeddings as the processor's
      padding="max_length" (the model's docstring) -- --seq gives their length.
SiglipVisionModel returns no loss: a training step here is loss = outputs.pooler_output.mean() (last_hidden_state's
mean without the head), in the output's dtype, as vramcalc models it (loss logits_mean).
Linears are vctorch._Linear2x, LayerNorms vctorch._LayerNorm2x, the Conv2d vctorch's 2.x convolution, SDPA
vctorch._sdpa_math_2x, nn.MultiheadAttention vctorch._MHA2x (2.x's F.multi_head_attention_forward), dropout
vctorch.dropout2x, as the harness's other replicas (dinov2_replica.py).
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
from vision_encoder_replica import Conv2d

DEFAULTS = {  # SiglipVisionConfig.__init__
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
    "num_channels": 3, "image_size": 224, "patch_size": 16, "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": 1e-6,
    "attention_dropout": 0.0,
}


def resolve(raw):
    """config.json with SiglipVisionConfig's defaults filled in."""
    d = dict(DEFAULTS)
    d.update({k: v for k, v in raw.items() if v is not None})
    return d


def _act(name):  # activations.py ACT2FN
    return {"gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"), "gelu": F.gelu, "relu": F.relu,
            "silu": F.silu, "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x)}[name]  # QuickGELUActivation


class SiglipAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.NH, self.D = c["num_attention_heads"], H // c["num_attention_heads"]
        self.dropout = c["attention_dropout"]
        self.is_causal = False  # clip_replica.py's text tower sets it (CLIPTextTransformer's is_causal=True)
        self.k_proj = vctorch._Linear2x(H, H)
        self.v_proj = vctorch._Linear2x(H, H)
        self.q_proj = vctorch._Linear2x(H, H)
        self.out_proj = vctorch._Linear2x(H, H)

    def forward(self, hidden_states):
        batch_size, seq_length, embed_dim = hidden_states.shape
        queries = self.q_proj(hidden_states)
        keys = self.k_proj(hidden_states)
        values = self.v_proj(hidden_states)
        queries = queries.view(batch_size, seq_length, self.NH, self.D).transpose(1, 2)
        keys = keys.view(batch_size, seq_length, self.NH, self.D).transpose(1, 2)
        values = values.view(batch_size, seq_length, self.NH, self.D).transpose(1, 2)
        o = vctorch._sdpa_math_2x(queries, keys, values, attn_mask=None,
                                  dropout_p=self.dropout if self.training else 0.0, is_causal=self.is_causal,
                                  scale=self.D ** -0.5)
        attn_output = o.transpose(1, 2).contiguous()  # sdpa_attention_forward's return
        del o, queries, keys, values
        attn_output = attn_output.reshape(batch_size, seq_length, embed_dim).contiguous()
        return self.out_proj(attn_output)


class SiglipMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.activation_fn = _act(c["hidden_act"])
        self.fc1 = vctorch._Linear2x(c["hidden_size"], c["intermediate_size"])
        self.fc2 = vctorch._Linear2x(c["intermediate_size"], c["hidden_size"])

    def forward(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        hidden_states = self.fc2(hidden_states)
        return hidden_states


class SiglipEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, eps = c["hidden_size"], c["layer_norm_eps"]
        self.layer_norm1 = vctorch._LayerNorm2x(H, eps=eps)
        self.self_attn = SiglipAttention(c)
        self.layer_norm2 = vctorch._LayerNorm2x(H, eps=eps)
        self.mlp = SiglipMLP(c)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.layer_norm1(hidden_states)
        hidden_states = self.self_attn(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.layer_norm2(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


def encoder(layers, h, ckpt):
    """SiglipEncoder.forward: each SiglipEncoderLayer, through the checkpoint function (non-reentrant) with gradient
    checkpointing in training."""
    for blk in layers:
        h = vctorch._checkpoint2x(blk.__call__, h) if ckpt else blk(h)
    return h


class SiglipMultiheadAttentionPoolingHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.probe = nn.Parameter(torch.randn(1, 1, H))
        self.attention = vctorch._MHA2x(H, c["num_attention_heads"], batch_first=True)
        self.layernorm = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        self.mlp = SiglipMLP(c)

    def forward(self, hidden_state):
        batch_size = hidden_state.shape[0]
        probe = self.probe.repeat(batch_size, 1, 1)
        hidden_state = self.attention(probe, hidden_state, hidden_state)  # _MHA2x returns [0] itself
        residual = hidden_state
        hidden_state = self.layernorm(hidden_state)
        hidden_state = residual + self.mlp(hidden_state)
        return hidden_state[:, 0]


class SiglipVisionModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        c = resolve(c)
        self.c = c
        H, P, img = c["hidden_size"], c["patch_size"], c["image_size"]
        self.patch_embedding = Conv2d(c["num_channels"], H, kernel_size=P, stride=P, padding="valid")
        n = (img // P) ** 2
        self.position_embedding = nn.Embedding(n, H)
        self.register_buffer("position_ids", torch.arange(n).expand((1, -1)), persistent=False)
        self.layers = nn.ModuleList(SiglipEncoderLayer(c) for _ in range(c["num_hidden_layers"]))
        self.post_layernorm = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        self.use_head = c.get("vision_use_head", True)
        if self.use_head:
            self.head = SiglipMultiheadAttentionPoolingHead(c)
        self.gradient_checkpointing = False

    def get_input_embeddings(self):
        return self.patch_embedding

    def _embeddings(self, pixel_values):  # SiglipVisionEmbeddings.forward (interpolate_pos_encoding False)
        target_dtype = self.patch_embedding.weight.dtype
        patch_embeds = self.patch_embedding(pixel_values.to(dtype=target_dtype))
        embeddings = patch_embeds.flatten(2).transpose(1, 2)
        embeddings = embeddings + self.position_embedding(self.position_ids)
        return embeddings

    def _transformer(self, pixel_values):  # SiglipVisionTransformer.forward
        hidden_states = self._embeddings(pixel_values)
        encoder_outputs = encoder(self.layers, hidden_states, self.gradient_checkpointing and self.training)
        last_hidden_state = self.post_layernorm(encoder_outputs)
        pooler_output = self.head(last_hidden_state) if self.use_head else None
        return last_hidden_state, pooler_output

    def forward(self, pixel_values, labels=None):
        last_hidden_state, pooler_output = self._transformer(pixel_values)
        out = pooler_output if self.use_head else last_hidden_state
        del last_hidden_state, pooler_output  # the BaseModelOutputWithPooling dropped after .pooler_output
        loss = out.mean() if self.training else None  # the training step's loss (no loss of the model's own)
        return loss, out


TEXT_DEFAULTS = {  # SiglipTextConfig.__init__ (configuration_siglip.py @ d5ab4d58)
    "vocab_size": 32000, "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
    "num_attention_heads": 12, "max_position_embeddings": 64, "hidden_act": "gelu_pytorch_tanh",
    "layer_norm_eps": 1e-6, "attention_dropout": 0.0,
}


def resolve_text(raw):
    """SiglipConfig's text_config with SiglipTextConfig's defaults filled in (None or absent: {})."""
    d = dict(TEXT_DEFAULTS)
    d.update({k: v for k, v in (raw.get("text_config") or {}).items() if v is not None})
    return d


class SiglipTextTransformer(nn.Module):
    """SiglipTextEmbeddings, SiglipEncoder (no attention mask: none is passed), final_layer_norm, head (S @ efa7189c)."""

    def __init__(self, c):
        super().__init__()
        H, M = c["hidden_size"], c["max_position_embeddings"]
        self.token_embedding = nn.Embedding(c["vocab_size"], H)
        self.position_embedding = nn.Embedding(M, H)
        self.register_buffer("position_ids", torch.arange(M).expand((1, -1)), persistent=False)
        self.layers = nn.ModuleList(SiglipEncoderLayer(c) for _ in range(c["num_hidden_layers"]))
        self.final_layer_norm = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        self.head = vctorch._Linear2x(H, H)
        self.gradient_checkpointing = False

    def _embeddings(self, input_ids):  # SiglipTextEmbeddings.forward (position_ids None)
        seq_length = input_ids.shape[-1]
        position_ids = self.position_ids[:, :seq_length]
        inputs_embeds = self.token_embedding(input_ids)
        position_embeddings = self.position_embedding(position_ids)
        embeddings = inputs_embeds + position_embeddings
        return embeddings

    def forward(self, input_ids):  # SiglipTextTransformer.forward
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        hidden_states = self._embeddings(input_ids)  # a local until the return
        h = encoder(self.layers, hidden_states, self.gradient_checkpointing and self.training)
        last_hidden_state = self.final_layer_norm(h)
        del h
        pooled_output = last_hidden_state[:, -1, :]  # "sticky" EOS: the last token
        pooled_output = self.head(pooled_output)
        return last_hidden_state, pooled_output


class SiglipModel(nn.Module):
    """SiglipModel (S @ efa7189c): vision_model, text_model, logit_scale, logit_bias; forward(input_ids,
    pixel_values, return_loss=True) in training, the loss as SiglipModel.forward computes it."""

    def __init__(self, raw):
        super().__init__()
        self.c = resolve_text(raw)
        vc = dict(raw.get("vision_config") or {})
        self.vision_model = SiglipVisionModel(vc)
        self.text_model = SiglipTextTransformer(self.c)
        self.logit_scale = nn.Parameter(torch.randn(1))
        self.logit_bias = nn.Parameter(torch.randn(1))
        self.gradient_checkpointing = False
        self.input_ids = None  # the batch's token ids, set by measure_llm.py (resident like pixel_values)

    def forward(self, pixel_values, labels=None):
        self.vision_model.gradient_checkpointing = self.text_model.gradient_checkpointing = self.gradient_checkpointing
        return_loss = self.training
        vision_outputs = self.vision_model._transformer(pixel_values)  # (last_hidden_state, pooler_output)
        text_outputs = self.text_model(self.input_ids)
        image_embeds = vision_outputs[1]
        text_embeds = text_outputs[1]
        # normalized features
        image_embeds = image_embeds / image_embeds.norm(p=2, dim=-1, keepdim=True)
        text_embeds = text_embeds / text_embeds.norm(p=2, dim=-1, keepdim=True)
        # cosine similarity as logits
        logits_per_text = (
            torch.matmul(text_embeds, image_embeds.t().to(text_embeds.device)) * self.logit_scale.exp()
            + self.logit_bias
        )
        logits_per_image = logits_per_text.t()
        loss = None
        if return_loss:
            eye = torch.eye(logits_per_text.size(0), device=logits_per_text.device)
            m1_diag1 = -torch.ones_like(logits_per_text) + 2 * eye
            loglik = torch.nn.functional.logsigmoid(m1_diag1 * logits_per_text)
            nll = -torch.sum(loglik, dim=-1)
            loss = nll.mean()
            del eye, m1_diag1, loglik, nll
        # SiglipOutput(loss, logits_per_image, logits_per_text, text_embeds, image_embeds, text_model_output,
        # vision_model_output): the caller takes .loss (training) or the logits, the rest dropped with it
        del vision_outputs, text_outputs, image_embeds, text_embeds, logits_per_text
        return loss, logits_per_image


def build(cfg):
    if cfg.get("model_type") == "siglip":
        return SiglipModel(cfg)
    return SiglipVisionModel(cfg)


def counts(cfg):
    """{class: parameters}: SiglipVisionModel built here (meta device)."""
    from check_params import MetaMode
    with MetaMode():
        m = build(cfg)
    name = "SiglipModel" if cfg.get("model_type") == "siglip" else "SiglipVisionModel"
    return {name: sum(p.numel() for p in m.parameters())}


def main(paths):
    for p in paths:
        print(p, json.dumps(counts(json.load(open(p)))))


if __name__ == "__main__":
    main(sys.argv[1:])
