"""modernbert_replica.py -- ModernBertForSequenceClassification as a PyTorch module, written from
the transformers source, measured by measure_llm.py (--mode train / infer, through
encoder_replica.build) and counted by `python3 modernbert_replica.py CONFIG...`.

Source read: models/modernbert/modeling_modernbert.py at huggingface/transformers
000c33fdfde12e1ffafbfcdb3c926df5727a00b6, the sdpa path (the default without flash-attn):
  - ModernBertForSequenceClassification.forward: attention_mask = torch.ones((B, L), bool) (held
    through the forward: the mean pooling reads it); self.model(...); pooling ("cls":
    last_hidden_state[:, 0]; "mean": (h * attention_mask.unsqueeze(-1)).sum(dim=1) /
    attention_mask.sum(dim=1, keepdim=True)); head (ModernBertPredictionHead: norm(act(dense(x))),
    dense with classifier_bias); drop (classifier_dropout); classifier; CrossEntropyLoss.
  - ModernBertModel.forward: position_ids = arange(L).unsqueeze(0); attention_mask,
    sliding_window_mask = self._update_attention_mask(attention_mask) (global_attention_mask =
    _prepare_4d_attention_mask(mask, self.dtype): modeling_attn_mask_utils.py _expand_mask,
    mask[:, None, None, :].expand(B, 1, L, L).to(dtype), 1.0 - it, masked_fill(inverted.to(bool),
    finfo.min); rows = arange(L).unsqueeze(0); distance = abs(rows - rows.T); window_mask =
    (distance <= local_attention // 2)[None, None]; sliding = global.masked_fill(
    window_mask.logical_not(), finfo.min)); hidden_states = self.embeddings(input_ids)
    (drop(norm(tok_embeddings(ids)))); position_embeddings[layer_type] = self.rotary_emb(
    hidden_states, position_ids, layer_type) for every entry of config.layer_types (the last of each
    type kept); the layers (GradientCheckpointingLayer: checkpointed in training with gradient
    checkpointing); final_norm.
  - ModernBertRotaryEmbedding.forward: inv_freq[None, :, None].float().expand(1, -1, 1) @
    position_ids[:, None, :].float(), transpose(1, 2), cat((freqs, freqs), -1), cos() *
    attention_scaling, sin() * attention_scaling, .to(x.dtype). rope_theta: rope_parameters of the
    layer type (global_rope_theta / local_rope_theta).
  - ModernBertEncoderLayer.forward: attn(attn_norm(h)) (attn_norm nn.Identity on layer 0), h + it;
    mlp(mlp_norm(h)), h + it. ModernBertAttention.forward: qkv = Wqkv(x).view(B, L, 3, heads, D);
    sdpa_attention_forward: query, key, value = qkv.transpose(3, 1).unbind(dim=2);
    apply_rotary_pos_emb (cos/sin unsqueeze(1); q * cos + rotate_half(q) * sin); attention_mask =
    sliding_window_mask when layer_id % global_attn_every_n_layers != 0;
    F.scaled_dot_product_attention(q, k, v, dropout_p, attn_mask).transpose(1, 2).contiguous()
    .view(B, -1, dim); Wo; out_drop (nn.Dropout(attention_dropout) if > 0 else nn.Identity).
    ModernBertMLP.forward: input, gate = Wi(h).chunk(2, dim=-1); Wo(drop(act(input) * gate)).
  - nn.LayerNorm(hidden_size, eps=norm_eps, bias=norm_bias) everywhere (torch 1.13 lacks the bias
    argument: the bias parameter is removed when norm_bias is false).
Linears, LayerNorms, dropout, SDPA's math backend and checkpointing as PyTorch 2.x runs them come
from the harness (tools/vctorch.py), as in encoder_replica.py.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import torch
import torch.nn as nn
import torch.nn.functional as F

import vctorch


def _get(c, k, d):
    v = c.get(k)
    return d if v is None else v


def _act(name):
    # activations.py ACT2FN: gelu -> GELUActivation (F.gelu), silu, relu
    return {"gelu": F.gelu, "silu": F.silu, "relu": F.relu,
            "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}[name]


def _norm(c):
    ln = vctorch._LayerNorm2x(_get(c, "hidden_size", 768), eps=_get(c, "norm_eps", 1e-5))
    if not _get(c, "norm_bias", False):
        ln.register_parameter("bias", None)  # nn.LayerNorm(..., bias=False)
    return ln


def _labels(c):
    return len(c["id2label"]) if c.get("id2label") else 2


def _local(c, i):
    return i % _get(c, "global_attn_every_n_layers", 3) != 0


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class Attention(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        H = _get(c, "hidden_size", 768)
        self.NH = _get(c, "num_attention_heads", 12)
        self.D = H // self.NH
        self.H = H
        bias = _get(c, "attention_bias", False)
        self.Wqkv = vctorch._Linear2x(H, 3 * H, bias=bias)
        self.Wo = vctorch._Linear2x(H, H, bias=bias)
        self.p = _get(c, "attention_dropout", 0.0)
        self.local = _local(c, i)

    def forward(self, x, global_mask, sliding_mask, pe):
        bs = x.shape[0]
        qkv = self.Wqkv(x)
        qkv = qkv.view(bs, -1, 3, self.NH, self.D)
        cos, sin = pe
        query, key, value = qkv.transpose(3, 1).unbind(dim=2)
        query, key = apply_rotary_pos_emb(query, key, cos, sin)
        mask = sliding_mask if self.local else global_mask
        o = vctorch._sdpa_math_2x(query, key, value, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        o = o.transpose(1, 2).contiguous()
        o = o.view(bs, -1, self.H)
        return vctorch.dropout2x(self.Wo(o), self.p, self.training)


class Layer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        H, I = _get(c, "hidden_size", 768), _get(c, "intermediate_size", 1152)
        self.attn_norm = _norm(c) if i > 0 else None  # nn.Identity on layer 0
        self.attn = Attention(c, i)
        self.mlp_norm = _norm(c)
        bias = _get(c, "mlp_bias", False)
        self.Wi = vctorch._Linear2x(H, 2 * I, bias=bias)
        self.Wo = vctorch._Linear2x(I, H, bias=bias)
        self.act = _act(_get(c, "hidden_activation", "gelu"))
        self.p = _get(c, "mlp_dropout", 0.0)
        self.attention_type = "sliding_attention" if _local(c, i) else "full_attention"

    def mlp(self, h):
        input, gate = self.Wi(h).chunk(2, dim=-1)
        return self.Wo(vctorch.dropout2x(self.act(input) * gate, self.p, self.training))

    def forward(self, h, global_mask, sliding_mask, pe):
        attn_out = self.attn(self.attn_norm(h) if self.attn_norm is not None else h, global_mask, sliding_mask, pe)
        h = h + attn_out
        del attn_out
        mlp_output = self.mlp(self.mlp_norm(h))
        h = h + mlp_output
        return h


class ModernBertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        H = _get(c, "hidden_size", 768)
        N = _get(c, "num_hidden_layers", 22)
        self.tok_embeddings = nn.Embedding(_get(c, "vocab_size", 50368), H, padding_idx=_get(c, "pad_token_id", 50283))
        self.norm = _norm(c)
        self.layers = nn.ModuleList(Layer(c, i) for i in range(N))
        self.final_norm = _norm(c)
        self.layer_types = c.get("layer_types") or [
            "sliding_attention" if _local(c, i) else "full_attention" for i in range(N)]
        D = H // _get(c, "num_attention_heads", 12)
        for lt, theta in (("full_attention", _get(c, "global_rope_theta", 160000.0)),
                          ("sliding_attention", _get(c, "local_rope_theta", 10000.0))):
            inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
            self.register_buffer(lt + "_inv_freq", inv, persistent=False)
        self.dense = vctorch._Linear2x(H, H, bias=_get(c, "classifier_bias", False))
        self.head_act = _act(_get(c, "classifier_activation", "gelu"))
        self.head_norm = _norm(c)
        self.classifier = vctorch._Linear2x(H, _labels(c))
        self.gradient_checkpointing = False

    def get_input_embeddings(self):  # PeftModel's enable_input_require_grads hook
        return self.tok_embeddings

    def rotary_emb(self, x, position_ids, layer_type):
        inv_freq = getattr(self, layer_type + "_inv_freq")
        inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * 1.0  # attention_scaling of the default rope
        sin = emb.sin() * 1.0
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

    def _update_attention_mask(self, attention_mask, dtype):
        B, L = attention_mask.shape
        expanded_mask = attention_mask[:, None, None, :].expand(B, 1, L, L).to(dtype)
        inverted_mask = 1.0 - expanded_mask
        global_attention_mask = inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)
        del expanded_mask, inverted_mask
        rows = torch.arange(global_attention_mask.shape[2]).unsqueeze(0)
        distance = torch.abs(rows - rows.T)
        window_mask = (distance <= _get(self.c, "local_attention", 128) // 2).unsqueeze(0).unsqueeze(0)
        sliding_window_mask = global_attention_mask.masked_fill(window_mask.logical_not(), torch.finfo(dtype).min)
        return global_attention_mask, sliding_window_mask

    def model(self, input_ids, attention_mask):
        c = self.c
        B, L = input_ids.shape
        position_ids = torch.arange(L).unsqueeze(0)
        dtype = self.tok_embeddings.weight.dtype  # self.dtype
        global_mask, sliding_mask = self._update_attention_mask(attention_mask, dtype)
        h = vctorch.dropout2x(self.norm(self.tok_embeddings(input_ids)), _get(c, "embedding_dropout", 0.0), self.training)
        position_embeddings = {}
        for lt in self.layer_types:
            position_embeddings[lt] = self.rotary_emb(h, position_ids, lt)
        for layer in self.layers:
            pe = position_embeddings[layer.attention_type]
            if self.gradient_checkpointing and self.training:
                h = vctorch._checkpoint2x(lambda x, layer=layer, pe=pe: layer(x, global_mask, sliding_mask, pe), h)
            else:
                h = layer(h, global_mask, sliding_mask, pe)
        return self.final_norm(h)

    def forward(self, input_ids, labels=None):
        B, L = input_ids.shape
        attention_mask = torch.ones((B, L), dtype=torch.bool)
        last_hidden_state = self.model(input_ids, attention_mask)
        if _get(self.c, "classifier_pooling", "cls") == "cls":
            last_hidden_state = last_hidden_state[:, 0]
        else:
            last_hidden_state = (last_hidden_state * attention_mask.unsqueeze(-1)).sum(dim=1) / attention_mask.sum(
                dim=1, keepdim=True)
        pooled_output = self.head_norm(self.head_act(self.dense(last_hidden_state)))
        pooled_output = vctorch.dropout2x(pooled_output, _get(self.c, "classifier_dropout", 0.0), self.training)
        logits = self.classifier(pooled_output)
        loss = None if labels is None else F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits


def counts(cfg):
    """{class: parameters}: ModernBertModel (the published counts: ModernBERT-base 149M, -large 395M)
    and the ModernBertForSequenceClassification built here, on the meta device."""
    from check_params import MetaMode
    with MetaMode():
        m = ModernBertForSequenceClassification(cfg)
    seqcls = sum(p.numel() for p in m.parameters())
    H, n = _get(cfg, "hidden_size", 768), _labels(cfg)
    head = H * H + (H if _get(cfg, "classifier_bias", False) else 0) + H * (2 if _get(cfg, "norm_bias", False) else 1)
    return {"ModernBertModel": seqcls - head - (H * n + n), "ModernBertForSequenceClassification": seqcls}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(json.load(open(p)))))
