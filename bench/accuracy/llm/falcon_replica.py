"""Falcon as transformers runs it (FalconForCausalLM, attn_implementation "sdpa", rotary, no alibi),
for torch 1.13 on CPU (measure_llm.py on a config whose model_type is falcon), and the exact
parameter counts of tests/data/hf/falcon-7b.json and falcon-40b.json (`python3 falcon_replica.py
--check`, no torch needed).

Written from huggingface/transformers models/falcon/modeling_falcon.py @00dcc6dd (the stored
revision read) and configuration_falcon.py (FalconConfig: num_kv_heads defaults to
num_attention_heads, ffn_hidden_size to 4 x hidden_size, activation "gelu"):
  FalconLinear.forward: input @ self.weight.T (+ bias apart; bias is false in every config here);
  FalconAttention.__init__: qkv_out_dim (num_kv_heads * 2 + num_heads) * head_dim with
    new_decoder_architecture, hidden + 2 * head_dim with multi_query, else 3 * hidden;
    num_kv_heads = config.num_kv_heads if (new_decoder_architecture or not multi_query) else 1;
  FalconAttention._split_heads (the three layouts, statement by statement: advanced indexing
    [..., [-2], :], broadcast_to, flatten(2, 3));
  FalconAttention.forward, the sdpa branch of `alibi is None`: transpose(1, 2).reshape,
    apply_rotary_pos_emb, layer_past.update, F.scaled_dot_product_attention(query, key, value,
    attn_mask, dropout_p=0.0, is_causal) without enable_gqa (SDPA's math backend here, the
    harness's port vctorch._sdpa_math_2x, which broadcasts k and v in its matmuls as ATen does),
    attn_output.transpose(1, 2).reshape(B, L, H * D), dense;
  FalconMLP.forward: dense_4h_to_h(act(dense_h_to_4h(x))) (act: get_activation("gelu") = F.gelu);
  FalconDecoderLayer.__init__ / forward: ln_attn + ln_mlp (new_decoder_architecture,
    num_ln_in_parallel_attn None -> 2) or input_layernorm (+ post_attention_layernorm without
    parallel_attn); mlp_output += attention_output; dropout_add(mlp_output, residual, hidden_dropout);
  FalconModel.forward: word_embeddings, the causal mask (None: _update_causal_mask's sdpa branch,
    AttentionMaskConverter._ignore_causal_mask_sdpa with no padding), rotary_emb once, the layers,
    ln_f; FalconForCausalLM: lm_head tied to word_embeddings (_tied_weights_keys, tie_word_embeddings
    True by default), the loss (reference.for_causal_lm_loss, transformers' ForCausalLMLoss).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------
# exact parameter counts from the module definitions (no torch): every parameter's shape
# ---------------------------------------------------------------------------------------------

def falcon_shape(c):
    """FalconConfig's values as FalconAttention / FalconDecoderLayer read them."""
    H = c.get("hidden_size", 4544)
    nh = c.get("num_attention_heads", 71)
    new = c.get("new_decoder_architecture", False)
    mq = c.get("multi_query", True)
    kv = c.get("num_kv_heads") or nh
    kv = kv if (new or not mq) else 1
    num_ln = c.get("num_ln_in_parallel_attn")
    if num_ln is None and new:
        num_ln = 2
    return H, nh, kv, new, num_ln


def falcon_params(c):
    H, nh, kv, new, num_ln = falcon_shape(c)
    V, N = c.get("vocab_size", 65024), c.get("num_hidden_layers", 32)
    D = H // nh
    ffn = c.get("ffn_hidden_size") or 4 * H
    b = 1 if c.get("bias", False) else 0
    qkv = (kv * 2 + nh) * D if new else (H + 2 * D if c.get("multi_query", True) else 3 * H)
    attn = H * qkv + b * qkv + H * H + b * H                    # query_key_value, dense
    mlp = H * ffn + b * ffn + ffn * H + b * H                   # dense_h_to_4h, dense_4h_to_h
    if not c.get("parallel_attn", True):
        norms = 2                                               # input_layernorm, post_attention_layernorm
    else:
        norms = 2 if num_ln == 2 else 1                         # ln_attn + ln_mlp, or input_layernorm
    layer = attn + mlp + norms * 2 * H
    head = 0 if c.get("tie_word_embeddings", True) else V * H
    return V * H + N * layer + 2 * H + head


def check():
    expected = {"falcon-7b.json": 6921720704, "falcon-40b.json": 41303293952}
    ok = True
    for f, want in expected.items():
        with open(os.path.join(HERE, "..", "..", "..", "tests", "data", "hf", f)) as fh:
            n = falcon_params(json.load(fh))
        print("%-16s %15d %s" % (f, n, "ok" if n == want else "MISMATCH (test_hf: %d)" % want))
        ok &= n == want
    return 0 if ok else 1


if __name__ == "__main__" and "--check" in sys.argv:
    sys.exit(check())

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import reference as R  # noqa: E402
import vctorch  # noqa: E402


class FalconLinear(nn.Linear):
    def forward(self, input):
        hidden_states = input @ self.weight.T
        if self.bias is None:
            return hidden_states
        return hidden_states + self.bias


def dropout_add(x, residual, prob, training):
    out = vctorch.dropout2x(x, prob, training)
    out = residual + out
    return out


class FalconAttention(nn.Module):
    def __init__(self, c, layer_idx):
        super().__init__()
        H, nh, kv, new, _ = falcon_shape(c)
        self.hidden_size, self.num_heads, self.head_dim = H, nh, H // nh
        self.layer_idx = layer_idx
        self.new_decoder_architecture = new
        self.multi_query = c.get("multi_query", True)
        if new:
            qkv_out_dim = (kv * 2 + nh) * self.head_dim
        elif self.multi_query:
            qkv_out_dim = H + 2 * self.head_dim
        else:
            qkv_out_dim = 3 * H
        bias = c.get("bias", False)
        self.query_key_value = FalconLinear(H, qkv_out_dim, bias=bias)
        self.dense = FalconLinear(H, H, bias=bias)
        self.num_kv_heads = kv

    def _split_heads(self, fused_qkv):
        if self.new_decoder_architecture:
            batch, seq_len, _ = fused_qkv.shape
            qkv = fused_qkv.view(batch, seq_len, -1, self.num_heads // self.num_kv_heads + 2, self.head_dim)
            query = qkv[:, :, :, :-2]
            key = qkv[:, :, :, [-2]]
            value = qkv[:, :, :, [-1]]
            key = torch.broadcast_to(key, query.shape)
            value = torch.broadcast_to(value, query.shape)
            query, key, value = [x.flatten(2, 3) for x in (query, key, value)]
            return query, key, value
        elif not self.multi_query:
            batch_size, seq_length, three_times_hidden_size = fused_qkv.shape
            fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads, 3, self.head_dim)
            return fused_qkv[..., 0, :], fused_qkv[..., 1, :], fused_qkv[..., 2, :]
        else:
            batch_size, seq_length, three_times_hidden_size = fused_qkv.shape
            fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads + 2, self.head_dim)
            return fused_qkv[..., :-2, :], fused_qkv[..., [-2], :], fused_qkv[..., [-1], :]

    def forward(self, hidden_states, position_embeddings, layer_past=None):
        fused_qkv = self.query_key_value(hidden_states)
        num_kv_heads = self.num_heads if self.new_decoder_architecture else self.num_kv_heads
        (query_layer, key_layer, value_layer) = self._split_heads(fused_qkv)
        batch_size, query_length, _, _ = query_layer.shape
        query_layer = query_layer.transpose(1, 2).reshape(batch_size, self.num_heads, query_length, self.head_dim)
        key_layer = key_layer.transpose(1, 2).reshape(batch_size, num_kv_heads, query_length, self.head_dim)
        value_layer = value_layer.transpose(1, 2).reshape(batch_size, num_kv_heads, query_length, self.head_dim)
        cos, sin = position_embeddings
        query_layer, key_layer = R.apply_rotary_pos_emb(query_layer, key_layer, cos, sin)
        if layer_past is not None:
            key_layer, value_layer = layer_past.update(key_layer, value_layer, self.layer_idx)
        # attention_mask is None here (no padding): is_causal = query_length > 1
        is_causal = query_length > 1
        attn_output = vctorch._sdpa_math_2x(query_layer, key_layer, value_layer, attn_mask=None, dropout_p=0.0,
                                            is_causal=is_causal)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(batch_size, query_length, self.num_heads * self.head_dim)
        attn_output = self.dense(attn_output)
        return attn_output


class FalconMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c.get("hidden_size", 4544)
        ffn = c.get("ffn_hidden_size") or 4 * H
        bias = c.get("bias", False)
        self.dense_h_to_4h = FalconLinear(H, ffn, bias=bias)
        self.act = R.act_fn(c.get("activation", "gelu"))
        self.dense_4h_to_h = FalconLinear(ffn, H, bias=bias)

    def forward(self, x):
        x = self.act(self.dense_h_to_4h(x))
        x = self.dense_4h_to_h(x)
        return x


class FalconDecoderLayer(nn.Module):
    def __init__(self, c, layer_idx):
        super().__init__()
        H, _, _, new, num_ln = falcon_shape(c)
        eps = c.get("layer_norm_epsilon", 1e-5)
        self.self_attention = FalconAttention(c, layer_idx)
        self.mlp = FalconMLP(c)
        self.new_decoder_architecture, self.num_ln = new, num_ln
        self.parallel_attn = c.get("parallel_attn", True)
        self.hidden_dropout = c.get("hidden_dropout", 0.0)
        self.attention_dropout = c.get("attention_dropout", 0.0)
        if not self.parallel_attn:
            self.post_attention_layernorm = vctorch._LayerNorm2x(H, eps=eps)
            self.input_layernorm = vctorch._LayerNorm2x(H, eps=eps)
        elif num_ln == 2:
            self.ln_attn = vctorch._LayerNorm2x(H, eps=eps)
            self.ln_mlp = vctorch._LayerNorm2x(H, eps=eps)
        else:
            self.input_layernorm = vctorch._LayerNorm2x(H, eps=eps)

    def forward(self, hidden_states, position_embeddings, layer_past=None):
        residual = hidden_states
        if self.new_decoder_architecture and self.num_ln == 2:
            attention_layernorm_out = self.ln_attn(hidden_states)
            mlp_layernorm_out = self.ln_mlp(hidden_states)
        else:
            attention_layernorm_out = self.input_layernorm(hidden_states)
        attention_output = self.self_attention(attention_layernorm_out, position_embeddings, layer_past)
        if not self.new_decoder_architecture:
            if self.parallel_attn:
                mlp_layernorm_out = attention_layernorm_out
            else:
                residual = dropout_add(attention_output, residual, self.attention_dropout, training=self.training)
                mlp_layernorm_out = self.post_attention_layernorm(residual)
        if self.new_decoder_architecture and self.parallel_attn and self.num_ln == 1:
            mlp_layernorm_out = attention_layernorm_out
        mlp_output = self.mlp(mlp_layernorm_out)
        if self.new_decoder_architecture or self.parallel_attn:
            mlp_output += attention_output
        output = dropout_add(mlp_output, residual, self.hidden_dropout, training=self.training)
        return output


class CausalLM(R.CausalLM):
    """FalconForCausalLM: transformer (word_embeddings, h, ln_f, rotary_emb), lm_head; reference.CausalLM's
    _head (loss) and _layer (gradient checkpointing)."""

    def __init__(self, cfg, attn_impl=None):
        nn.Module.__init__(self)
        if attn_impl not in (None, "sdpa"):
            raise ValueError("falcon is replicated with transformers' default sdpa")
        if cfg.d.get("alibi", False):
            raise ValueError("falcon: alibi is not replicated")
        self.cfg = cfg
        self.attn_impl = "sdpa"
        self.neox = False
        self.gradient_checkpointing = False
        self.ckpt_every = 1
        self.ckpt_ops = False
        self.ckpt_save_inputs = False
        self.ckpt_reentrant = False  # reference.CausalLM._layer reads it (--ckpt-kind reentrant)
        c = cfg.d
        H, nh, _, _, _ = falcon_shape(c)
        V = c.get("vocab_size", 65024)
        self.word_embeddings = nn.Embedding(V, H)
        self.h = nn.ModuleList([FalconDecoderLayer(c, i) for i in range(c.get("num_hidden_layers", 32))])
        self.ln_f = vctorch._LayerNorm2x(H, eps=c.get("layer_norm_epsilon", 1e-5))
        self.rotary_emb = R.RotaryEmbedding(cfg, H // nh)
        self.lm_head = R.Linear(H, V, bias=False)
        if c.get("tie_word_embeddings", True):
            self.lm_head.weight = self.word_embeddings.weight
        self.layers = self.h  # reference.CausalLM._layer's name

    def get_input_embeddings(self):
        return self.word_embeddings

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None,
                attention_mask=None, logits_to_keep=0):
        """FalconForCausalLM.forward: `transformer_outputs = self.transformer(...)` (FalconModel.forward), then
        lm_head and the loss on `transformer_outputs[0]`: FalconModel.forward's locals (inputs_embeds, cache_position,
        position_ids, the position embeddings) are freed when it returns, before the head (modeling_falcon.py
        @00dcc6dda6f6d8e69541a6b51f97986a80242367, FalconForCausalLM.forward; issue 26: the replica kept them alive
        through the head and the loss)."""
        hidden_states = self._model_forward(input_ids, past_key_values, cache_position)
        return self._head(hidden_states, labels, logits_to_keep, self.lm_head)

    def _model_forward(self, input_ids, past_key_values, cache_position):
        """FalconModel.forward: ln_f's output."""
        inputs_embeds = self.word_embeddings(input_ids)
        past_seen = past_key_values.get_seq_length() if past_key_values is not None else 0
        if cache_position is None:
            cache_position = torch.arange(past_seen, past_seen + inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for block in self.h:
            if past_key_values is None:
                hidden_states = self._layer(block, hidden_states, position_embeddings)
            else:
                hidden_states = block(hidden_states, position_embeddings, past_key_values)
        return self.ln_f(hidden_states)
