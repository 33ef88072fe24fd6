"""mpnet_replica.py -- MPNetForSequenceClassification as a PyTorch module, written from the
transformers source, measured by measure_llm.py (--mode train / infer, through encoder_replica.build)
and counted by `python3 mpnet_replica.py CONFIG...`.

Source read: models/mpnet/modeling_mpnet.py at huggingface/transformers
00099b9f15ad8bea330364709453fc49cbba90e5 (configuration_mpnet.py @ 06053b84 for the defaults):
  - MPNetEmbeddings: padding_idx = 1 (fixed); word_embeddings and position_embeddings nn.Embedding
    with padding_idx 1; forward: position_ids = create_position_ids_from_input_ids(input_ids, 1)
    (mask = ne(1).int(); cumsum(mask, 1).type_as(mask) * mask; .long() + 1), inputs_embeds =
    word_embeddings(input_ids), embeddings = inputs_embeds + position_embeddings(position_ids),
    LayerNorm, dropout(hidden_dropout_prob).
  - MPNetSelfAttention.forward: q/k/v = self.q(h).view(B, -1, heads, d).transpose(1, 2) (likewise);
    attention_scores = torch.matmul(q, k.transpose(-1, -2)); attention_scores = attention_scores /
    math.sqrt(d); attention_scores += position_bias; attention_scores = attention_scores +
    attention_mask; attention_probs = softmax(attention_scores, dim=-1); dropout; c = matmul(probs, v);
    c.permute(0, 2, 1, 3).contiguous().view(B, L, H); o = self.o(c); returns (o,).
  - MPNetAttention.forward: self_outputs = self.attn(...); LayerNorm(dropout(self_outputs[0]) +
    hidden_states); MPNetIntermediate (dense, ACT2FN), MPNetOutput (dense, dropout, LayerNorm(h +
    input)); MPNetLayer.forward (self_attention_outputs, intermediate_output, layer_output).
  - MPNetEncoder.forward: position_bias = self.compute_position_bias(hidden_states) (num_buckets=32:
    torch.arange without a device, relative_position_bucket, rp_bucket.to(x.device),
    relative_attention_bias(rp_bucket).permute([2, 0, 1]).unsqueeze(0).expand((B, -1, q, k))
    .contiguous()); every layer_module(hidden_states, attention_mask, position_bias).
  - MPNetModel.forward: attention_mask = torch.ones(input_shape) (float32) when none is given,
    extended_attention_mask = get_extended_attention_mask(attention_mask, input_shape)
    (modeling_utils.py ModuleUtilsMixin: attention_mask[:, None, None, :], .to(self.dtype),
    (1.0 - m) * torch.finfo(dtype).min); embedding_output = self.embeddings(...); encoder; no
    pooler under MPNetForSequenceClassification (add_pooling_layer=False).
  - MPNetClassificationHead: features[:, 0, :], dropout, dense, torch.tanh, dropout, out_proj (its
    dropout hidden_dropout_prob); CrossEntropyLoss over num_labels (2 without id2label).
  MPNetPreTrainedModel does not support gradient checkpointing (no --ckpt cases).
Linears, LayerNorms and dropout as PyTorch 2.x runs them come from the harness (tools/vctorch.py),
as in encoder_replica.py; matmul, softmax and the embedding lookups are torch's own.
"""
import json
import math
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
    # activations.py ACT2FN: gelu -> GELUActivation (F.gelu), relu
    return {"gelu": F.gelu, "relu": F.relu}[name]


def _labels(c):
    return len(c["id2label"]) if c.get("id2label") else 2


class MPNetSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = _get(c, "hidden_size", 768)
        self.heads = _get(c, "num_attention_heads", 12)
        self.d = H // self.heads
        self.q = vctorch._Linear2x(H, H)
        self.k = vctorch._Linear2x(H, H)
        self.v = vctorch._Linear2x(H, H)
        self.o = vctorch._Linear2x(H, H)
        self.p = _get(c, "attention_probs_dropout_prob", 0.1)

    def forward(self, hidden_states, attention_mask, position_bias):
        B, L, _ = hidden_states.shape
        q = self.q(hidden_states).view(B, -1, self.heads, self.d).transpose(1, 2)
        k = self.k(hidden_states).view(B, -1, self.heads, self.d).transpose(1, 2)
        v = self.v(hidden_states).view(B, -1, self.heads, self.d).transpose(1, 2)
        attention_scores = torch.matmul(q, k.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.d)
        attention_scores += position_bias
        attention_scores = attention_scores + attention_mask
        attention_probs = F.softmax(attention_scores, dim=-1)
        attention_probs = vctorch.dropout2x(attention_probs, self.p, self.training)
        c = torch.matmul(attention_probs, v)
        c = c.permute(0, 2, 1, 3).contiguous()
        c = c.view(*c.size()[:-2], self.heads * self.d)
        o = self.o(c)
        return (o,)


class MPNetLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, I = _get(c, "hidden_size", 768), _get(c, "intermediate_size", 3072)
        eps = _get(c, "layer_norm_eps", 1e-12)
        self.attn = MPNetSelfAttention(c)
        self.attn_ln = vctorch._LayerNorm2x(H, eps=eps)
        self.inter = vctorch._Linear2x(H, I)
        self.act = _act(_get(c, "hidden_act", "gelu"))
        self.out = vctorch._Linear2x(I, H)
        self.out_ln = vctorch._LayerNorm2x(H, eps=eps)
        self.p = _get(c, "hidden_dropout_prob", 0.1)

    def attention(self, hidden_states, attention_mask, position_bias):  # MPNetAttention.forward
        self_outputs = self.attn(hidden_states, attention_mask, position_bias)
        attention_output = self.attn_ln(vctorch.dropout2x(self_outputs[0], self.p, self.training) + hidden_states)
        return (attention_output,)

    def output(self, hidden_states, input_tensor):  # MPNetOutput.forward
        hidden_states = self.out(hidden_states)
        hidden_states = vctorch.dropout2x(hidden_states, self.p, self.training)
        return self.out_ln(hidden_states + input_tensor)

    def forward(self, hidden_states, attention_mask, position_bias):
        self_attention_outputs = self.attention(hidden_states, attention_mask, position_bias)
        attention_output = self_attention_outputs[0]
        intermediate_output = self.act(self.inter(attention_output))
        layer_output = self.output(intermediate_output, attention_output)
        return (layer_output,)


def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret += (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    ret += torch.where(is_small, n, val_if_large)
    return ret


class MPNetForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = _get(c, "hidden_size", 768)
        self.c = c
        self.heads = _get(c, "num_attention_heads", 12)
        self.word_embeddings = nn.Embedding(_get(c, "vocab_size", 30527), H, padding_idx=1)
        self.position_embeddings = nn.Embedding(_get(c, "max_position_embeddings", 512), H, padding_idx=1)
        self.LayerNorm = vctorch._LayerNorm2x(H, eps=_get(c, "layer_norm_eps", 1e-12))
        self.layer = nn.ModuleList(MPNetLayer(c) for _ in range(_get(c, "num_hidden_layers", 12)))
        self.relative_attention_bias = nn.Embedding(_get(c, "relative_attention_num_buckets", 32), self.heads)
        self.dense = vctorch._Linear2x(H, H)
        self.out_proj = vctorch._Linear2x(H, _labels(c))
        self.p = _get(c, "hidden_dropout_prob", 0.1)
        self.gradient_checkpointing = False

    def get_input_embeddings(self):  # PeftModel's enable_input_require_grads hook
        return self.word_embeddings

    def compute_position_bias(self, x, num_buckets=32):
        bsz, qlen, klen = x.size(0), x.size(1), x.size(1)
        context_position = torch.arange(qlen, dtype=torch.long)[:, None]
        memory_position = torch.arange(klen, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        rp_bucket = relative_position_bucket(relative_position, num_buckets=num_buckets)
        rp_bucket = rp_bucket.to(x.device)
        values = self.relative_attention_bias(rp_bucket)
        values = values.permute([2, 0, 1]).unsqueeze(0)
        values = values.expand((bsz, -1, qlen, klen)).contiguous()
        return values

    def encoder(self, hidden_states, attention_mask):  # MPNetEncoder.forward
        position_bias = self.compute_position_bias(hidden_states)
        for layer_module in self.layer:
            layer_outputs = layer_module(hidden_states, attention_mask, position_bias)
            hidden_states = layer_outputs[0]
        return (hidden_states,)

    def mpnet(self, input_ids):  # MPNetModel.forward (add_pooling_layer=False)
        attention_mask = torch.ones(input_ids.size(), device=input_ids.device)
        dtype = self.word_embeddings.weight.dtype  # PreTrainedModel.dtype
        extended_attention_mask = attention_mask[:, None, None, :].to(dtype=dtype)
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(dtype).min
        # MPNetEmbeddings.forward
        mask = input_ids.ne(1).int()
        incremental_indices = torch.cumsum(mask, dim=1).type_as(mask) * mask
        position_ids = incremental_indices.long() + 1
        del mask, incremental_indices
        inputs_embeds = self.word_embeddings(input_ids)
        position_embeddings = self.position_embeddings(position_ids)
        embeddings = inputs_embeds + position_embeddings
        embeddings = self.LayerNorm(embeddings)
        embeddings = vctorch.dropout2x(embeddings, self.p, self.training)
        # MPNetEmbeddings.forward returns: its locals (inputs_embeds, position_embeddings, position_ids) die
        embedding_output = embeddings
        del inputs_embeds, position_embeddings, position_ids, embeddings
        encoder_outputs = self.encoder(embedding_output, extended_attention_mask)
        return encoder_outputs

    def forward(self, input_ids, labels=None):
        outputs = self.mpnet(input_ids)
        sequence_output = outputs[0]
        x = sequence_output[:, 0, :]  # MPNetClassificationHead
        x = vctorch.dropout2x(x, self.p, self.training)
        x = self.dense(x)
        x = torch.tanh(x)
        x = vctorch.dropout2x(x, self.p, self.training)
        logits = self.out_proj(x)
        loss = None if labels is None else F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits


def counts(cfg):
    """{class name: parameters}: the replica on the meta device; MPNetModel (with its pooler, dense H x H)
    is the sequence classifier less out_proj (H x labels + labels) and with the pooler in place of
    the head's dense (the same shape); MPNetForMaskedLM has no pooler and MPNetLMHead (dense H x H + H,
    layer_norm 2 H, bias V; decoder.weight tied to word_embeddings, decoder.bias to bias:
    _tied_weights_keys)."""
    from check_params import MetaMode
    with MetaMode():
        m = MPNetForSequenceClassification(cfg)
    seqcls = sum(p.numel() for p in m.parameters())
    H, n = _get(cfg, "hidden_size", 768), _labels(cfg)
    base = seqcls - (H * n + n)
    return {"MPNetModel": base, "MPNetForMaskedLM": base + 2 * H + _get(cfg, "vocab_size", 30527),
            "MPNetForSequenceClassification": seqcls}


def main(paths):
    for p in paths:
        print(p, json.dumps(counts(json.load(open(p)))))


if __name__ == "__main__":
    main(sys.argv[1:])
