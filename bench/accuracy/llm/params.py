#!/usr/bin/env python3
"""Exact parameter counts of Hugging Face config.json files, from shapes.

For each model_type, `hf_shapes(cfg)` lists every parameter (state-dict name as the
transformers modeling code names it -> shape) that the model class of the config's
`architectures` entry creates in __init__, tied weights once. Written from the
transformers modeling source (see README.md for the commit read):
  llama/mistral/qwen2/qwen3/phi3/mixtral/qwen2_moe/gemma2: models/<type>/modeling_<type>.py,
  the *Attention, *MLP / *SparseMoeBlock, *DecoderLayer, *Model and *ForCausalLM __init__s;
  gpt2: models/gpt2/modeling_gpt2.py (GPT2Attention c_attn/c_proj Conv1D, GPT2MLP, GPT2LMHeadModel);
  gpt_neox: models/gpt_neox/modeling_gpt_neox.py (query_key_value, dense, dense_h_to_4h, embed_out);
  bert/roberta: BertModel/RobertaModel (with pooler) and the *ForMaskedLM head;
  t5: models/t5/modeling_t5.py @6b8b757d T5ForConditionalGeneration (shared, encoder / decoder
  T5Stack of T5Block: SelfAttention q/k/v/o, relative_attention_bias in block 0, EncDecAttention in
  the decoder, DenseReluDense wi or wi_0/wi_1 and wo, T5LayerNorm weights; lm_head when untied).
No torch needed. `python3 params.py` checks every config in configs/real/ against index.json.
"""
import json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _decoder(cfg, *, qkv_bias=False, o_bias=False, qk_norm=False, fused=False,
             mlp=None, head_dim=None, norms=2):
    h = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = head_dim or cfg.get("head_dim") or h // nh
    L = cfg["num_hidden_layers"]
    V = cfg["vocab_size"]
    s = {"model.embed_tokens.weight": (V, h)}
    for i in range(L):
        p = f"model.layers.{i}."
        if fused:  # phi3: qkv_proj, gate_up_proj (Phi3Attention / Phi3MLP)
            s[p + "self_attn.qkv_proj.weight"] = ((nh + 2 * nkv) * hd, h)
        else:
            s[p + "self_attn.q_proj.weight"] = (nh * hd, h)
            s[p + "self_attn.k_proj.weight"] = (nkv * hd, h)
            s[p + "self_attn.v_proj.weight"] = (nkv * hd, h)
            if qkv_bias:
                s[p + "self_attn.q_proj.bias"] = (nh * hd,)
                s[p + "self_attn.k_proj.bias"] = (nkv * hd,)
                s[p + "self_attn.v_proj.bias"] = (nkv * hd,)
        s[p + "self_attn.o_proj.weight"] = (h, nh * hd)
        if o_bias:
            s[p + "self_attn.o_proj.bias"] = (h,)
        if qk_norm:  # Qwen3Attention: q_norm/k_norm = Qwen3RMSNorm(head_dim)
            s[p + "self_attn.q_norm.weight"] = (hd,)
            s[p + "self_attn.k_norm.weight"] = (hd,)
        s.update({p + k: v for k, v in mlp(cfg, h).items()})
        for n in ("input_layernorm", "post_attention_layernorm",
                  "pre_feedforward_layernorm", "post_feedforward_layernorm")[:norms]:
            s[p + n + ".weight"] = (h,)
    s["model.norm.weight"] = (h,)
    if not cfg.get("tie_word_embeddings", False):
        s["lm_head.weight"] = (V, h)
    return s


def _gated(cfg, h, inter=None, prefix="mlp.", bias=False):
    i = inter or cfg["intermediate_size"]
    s = {prefix + "gate_proj.weight": (i, h), prefix + "up_proj.weight": (i, h),
         prefix + "down_proj.weight": (h, i)}
    if bias:
        s.update({prefix + "gate_proj.bias": (i,), prefix + "up_proj.bias": (i,),
                  prefix + "down_proj.bias": (h,)})
    return s


def _phi3_mlp(cfg, h):
    i = cfg["intermediate_size"]
    return {"mlp.gate_up_proj.weight": (2 * i, h), "mlp.down_proj.weight": (h, i)}


def _mixtral_moe(cfg, h):
    # MixtralSparseMoeBlock: gate = Linear(hidden, num_local_experts, bias=False);
    # experts[j]: w1 (ffn, hidden), w2 (hidden, ffn), w3 (ffn, hidden)
    E, i = cfg["num_local_experts"], cfg["intermediate_size"]
    s = {"block_sparse_moe.gate.weight": (E, h)}
    for j in range(E):
        q = f"block_sparse_moe.experts.{j}."
        s.update({q + "w1.weight": (i, h), q + "w2.weight": (h, i), q + "w3.weight": (i, h)})
    return s


def _qwen2_moe(cfg, h):
    # Qwen2MoeSparseMoeBlock: gate Linear(h, num_experts), experts Qwen2MoeMLP(moe_intermediate_size),
    # shared_expert Qwen2MoeMLP(shared_expert_intermediate_size), shared_expert_gate Linear(h, 1)
    # (every layer is sparse when decoder_sparse_step == 1 and mlp_only_layers is empty)
    E = cfg["num_experts"]
    s = {"mlp.gate.weight": (E, h)}
    for j in range(E):
        s.update(_gated(cfg, h, cfg["moe_intermediate_size"], f"mlp.experts.{j}."))
    s.update(_gated(cfg, h, cfg["shared_expert_intermediate_size"], "mlp.shared_expert."))
    s["mlp.shared_expert_gate.weight"] = (1, h)
    return s


def _qwen3_next(cfg):
    # models/qwen3_next/modeling_qwen3_next.py @7515843b (configuration_qwen3_next.py @008e5743 for the
    # defaults). Qwen3NextDecoderLayer: linear_attn = Qwen3NextGatedDeltaNet on "linear_attention"
    # layers (layer_types, else "linear_attention" if (i + 1) % full_attention_interval), else
    # self_attn = Qwen3NextAttention; mlp = Qwen3NextSparseMoeBlock unless i in mlp_only_layers or
    # num_experts == 0 or (i + 1) % decoder_sparse_step, else Qwen3NextMLP(intermediate_size);
    # input_layernorm / post_attention_layernorm Qwen3NextRMSNorm(hidden).
    c = dict(cfg)
    h, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    nh, nkv, hd = c.get("num_attention_heads", 16), c.get("num_key_value_heads", 2), c.get("head_dim", 256)
    hk, hv = c.get("linear_num_key_heads", 16), c.get("linear_num_value_heads", 32)
    dk, dv, K = c.get("linear_key_head_dim", 128), c.get("linear_value_head_dim", 128), c.get("linear_conv_kernel_dim", 4)
    E = c.get("num_experts", 512)
    interval = c.get("full_attention_interval", 4)
    types = c.get("layer_types") or ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(L)]
    kd, vd = hk * dk, hv * dv
    s = {"model.embed_tokens.weight": (V, h)}
    for i in range(L):
        p = f"model.layers.{i}."
        if types[i] == "linear_attention":
            # Qwen3NextGatedDeltaNet.__init__: dt_bias, A_log [num_v_heads]; conv1d depthwise
            # (conv_dim, 1, kernel), bias=False; in_proj_qkvz (2 key_dim + 2 value_dim, h);
            # in_proj_ba (2 num_v_heads, h); norm Qwen3NextRMSNormGated(head_v_dim); out_proj (h, value_dim)
            q = p + "linear_attn."
            s.update({q + "dt_bias": (hv,), q + "A_log": (hv,), q + "conv1d.weight": (2 * kd + vd, 1, K),
                      q + "in_proj_qkvz.weight": (2 * kd + 2 * vd, h), q + "in_proj_ba.weight": (2 * hv, h),
                      q + "norm.weight": (dv,), q + "out_proj.weight": (h, vd)})
        else:
            # Qwen3NextAttention.__init__: q_proj (num_heads * head_dim * 2, h) (query and gate);
            # k/v (nkv * head_dim, h); o_proj (h, num_heads * head_dim); bias=attention_bias;
            # q_norm / k_norm Qwen3NextRMSNorm(head_dim)
            q = p + "self_attn."
            b = c.get("attention_bias", False)
            s.update({q + "q_proj.weight": (nh * hd * 2, h), q + "k_proj.weight": (nkv * hd, h),
                      q + "v_proj.weight": (nkv * hd, h), q + "o_proj.weight": (h, nh * hd),
                      q + "q_norm.weight": (hd,), q + "k_norm.weight": (hd,)})
            if b:
                s.update({q + "q_proj.bias": (nh * hd * 2,), q + "k_proj.bias": (nkv * hd,),
                          q + "v_proj.bias": (nkv * hd,), q + "o_proj.bias": (h,)})
        sparse = i not in (c.get("mlp_only_layers") or []) and E > 0 and (i + 1) % c.get("decoder_sparse_step", 1) == 0
        if sparse:  # Qwen3NextSparseMoeBlock: gate, experts, shared_expert, shared_expert_gate
            s[p + "mlp.gate.weight"] = (E, h)
            for j in range(E):
                s.update({p + k: v for k, v in _gated(c, h, c.get("moe_intermediate_size", 512), f"mlp.experts.{j}.").items()})
            s.update({p + k: v for k, v in _gated(c, h, c.get("shared_expert_intermediate_size", 512), "mlp.shared_expert.").items()})
            s[p + "mlp.shared_expert_gate.weight"] = (1, h)
        else:
            s.update({p + k: v for k, v in _gated(c, h, c.get("intermediate_size", 5632)).items()})
        s[p + "input_layernorm.weight"] = (h,)
        s[p + "post_attention_layernorm.weight"] = (h,)
    s["model.norm.weight"] = (h,)
    if not c.get("tie_word_embeddings", False):
        s["lm_head.weight"] = (V, h)
    return s


def _gpt2(cfg):
    h, L, V, P = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], cfg["n_positions"]
    inner = cfg.get("n_inner") or 4 * h
    s = {"transformer.wte.weight": (V, h), "transformer.wpe.weight": (P, h)}
    for i in range(L):
        p = f"transformer.h.{i}."
        s.update({p + "ln_1.weight": (h,), p + "ln_1.bias": (h,),
                  p + "attn.c_attn.weight": (h, 3 * h), p + "attn.c_attn.bias": (3 * h,),
                  p + "attn.c_proj.weight": (h, h), p + "attn.c_proj.bias": (h,),
                  p + "ln_2.weight": (h,), p + "ln_2.bias": (h,),
                  p + "mlp.c_fc.weight": (h, inner), p + "mlp.c_fc.bias": (inner,),
                  p + "mlp.c_proj.weight": (inner, h), p + "mlp.c_proj.bias": (h,)})
    s.update({"transformer.ln_f.weight": (h,), "transformer.ln_f.bias": (h,)})
    # GPT2LMHeadModel.lm_head is tied to wte (tie_word_embeddings defaults to True)
    return s


def _gpt_neox(cfg):
    h, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    i = cfg["intermediate_size"]
    b = cfg.get("attention_bias", True)
    s = {"gpt_neox.embed_in.weight": (V, h)}
    for l in range(L):
        p = f"gpt_neox.layers.{l}."
        s.update({p + "input_layernorm.weight": (h,), p + "input_layernorm.bias": (h,),
                  p + "post_attention_layernorm.weight": (h,),
                  p + "post_attention_layernorm.bias": (h,),
                  p + "attention.query_key_value.weight": (3 * h, h),
                  p + "attention.dense.weight": (h, h),
                  p + "mlp.dense_h_to_4h.weight": (i, h), p + "mlp.dense_h_to_4h.bias": (i,),
                  p + "mlp.dense_4h_to_h.weight": (h, i), p + "mlp.dense_4h_to_h.bias": (h,)})
        if b:
            s[p + "attention.query_key_value.bias"] = (3 * h,)
            s[p + "attention.dense.bias"] = (h,)
    s.update({"gpt_neox.final_layer_norm.weight": (h,), "gpt_neox.final_layer_norm.bias": (h,)})
    if not cfg.get("tie_word_embeddings", False):
        s["embed_out.weight"] = (V, h)
    return s


def _bert(cfg, prefix):
    h, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    i = cfg["intermediate_size"]
    e = prefix + ".embeddings."
    s = {e + "word_embeddings.weight": (V, h),
         e + "position_embeddings.weight": (cfg["max_position_embeddings"], h),
         e + "token_type_embeddings.weight": (cfg["type_vocab_size"], h),
         e + "LayerNorm.weight": (h,), e + "LayerNorm.bias": (h,)}
    for l in range(L):
        p = f"{prefix}.encoder.layer.{l}."
        for n in ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense"):
            s[p + n + ".weight"] = (h, h)
            s[p + n + ".bias"] = (h,)
        s.update({p + "attention.output.LayerNorm.weight": (h,),
                  p + "attention.output.LayerNorm.bias": (h,),
                  p + "intermediate.dense.weight": (i, h), p + "intermediate.dense.bias": (i,),
                  p + "output.dense.weight": (h, i), p + "output.dense.bias": (h,),
                  p + "output.LayerNorm.weight": (h,), p + "output.LayerNorm.bias": (h,)})
    return s


def bert_variants(cfg, prefix):
    """(base model with pooler, *ForMaskedLM) shape dicts."""
    h = cfg["hidden_size"]
    enc = _bert(cfg, prefix)
    base = dict(enc)
    base.update({prefix + ".pooler.dense.weight": (h, h), prefix + ".pooler.dense.bias": (h,)})
    mlm = dict(enc)  # *ForMaskedLM builds the base model with add_pooling_layer=False
    if prefix == "bert":  # BertOnlyMLMHead -> BertLMPredictionHead (decoder tied to word_embeddings)
        mlm.update({"cls.predictions.transform.dense.weight": (h, h),
                    "cls.predictions.transform.dense.bias": (h,),
                    "cls.predictions.transform.LayerNorm.weight": (h,),
                    "cls.predictions.transform.LayerNorm.bias": (h,),
                    "cls.predictions.bias": (cfg["vocab_size"],)})
    else:  # RobertaLMHead: dense, layer_norm, decoder (tied), bias
        mlm.update({"lm_head.dense.weight": (h, h), "lm_head.dense.bias": (h,),
                    "lm_head.layer_norm.weight": (h,), "lm_head.layer_norm.bias": (h,),
                    "lm_head.bias": (cfg["vocab_size"],)})
    return base, mlm


def _t5(cfg):
    """T5ForConditionalGeneration.__init__ (T5Config's defaults; num_decoder_layers None -> num_layers;
    is_gated_act from feed_forward_proj unless the file sets it; tie_word_embeddings default True)."""
    d, V = cfg.get("d_model", 512), cfg.get("vocab_size", 32128)
    inner = cfg.get("num_heads", 8) * cfg.get("d_kv", 64)
    ff, heads, nb = cfg.get("d_ff", 2048), cfg.get("num_heads", 8), cfg.get("relative_attention_num_buckets", 32)
    gated = cfg.get("is_gated_act", cfg.get("feed_forward_proj", "relu").split("-")[0] == "gated")
    ndl = cfg.get("num_decoder_layers")
    s = {"shared.weight": (V, d)}
    for stack, n in (("encoder", cfg.get("num_layers", 6)), ("decoder", ndl if ndl is not None else cfg.get("num_layers", 6))):
        for i in range(n):
            p = f"{stack}.block.{i}.layer."
            attn = ["0.SelfAttention."] + (["1.EncDecAttention."] if stack == "decoder" else [])
            for a in attn:
                for w in "qkv":
                    s[p + a + w + ".weight"] = (inner, d)
                s[p + a + "o.weight"] = (d, inner)
                s[p + a.split(".")[0] + ".layer_norm.weight"] = (d,)
            if i == 0:
                s[p + "0.SelfAttention.relative_attention_bias.weight"] = (nb, heads)
            f = p + ("2" if stack == "decoder" else "1") + "."
            for w in (("wi_0", "wi_1") if gated else ("wi",)):
                s[f + "DenseReluDense." + w + ".weight"] = (ff, d)
            s[f + "DenseReluDense.wo.weight"] = (d, ff)
            s[f + "layer_norm.weight"] = (d,)
        s[stack + ".final_layer_norm.weight"] = (d,)
    if not cfg.get("tie_word_embeddings", True):
        s["lm_head.weight"] = (V, d)
    return s


def hf_shapes(cfg):
    t = cfg["model_type"]
    if t in ("llama", "mistral"):
        b = cfg.get("attention_bias", False)
        return _decoder(cfg, qkv_bias=b, o_bias=b,
                        mlp=lambda c, h: _gated(c, h, bias=c.get("mlp_bias", False)))
    if t == "qwen2":  # Qwen2Attention: q/k/v bias=True, o_proj bias=False
        return _decoder(cfg, qkv_bias=True, mlp=_gated)
    if t == "qwen3":
        b = cfg.get("attention_bias", False)
        return _decoder(cfg, qkv_bias=b, o_bias=b, qk_norm=True, mlp=_gated)
    if t == "gemma2":  # four norms per layer; lm_head tied (tie_word_embeddings default True)
        cfg = dict(cfg)
        cfg.setdefault("tie_word_embeddings", True)
        return _decoder(cfg, mlp=_gated, norms=4)
    if t == "phi3":
        return _decoder(cfg, fused=True, mlp=_phi3_mlp)
    if t == "mixtral":
        return _decoder(cfg, mlp=_mixtral_moe)
    if t == "qwen2_moe":
        return _decoder(cfg, qkv_bias=True, mlp=_qwen2_moe)
    if t == "qwen3_next":
        return _qwen3_next(cfg)
    if t == "gpt2":
        return _gpt2(cfg)
    if t == "gpt_neox":
        return _gpt_neox(cfg)
    if t in ("bert", "roberta"):
        return bert_variants(cfg, t)[0]
    if t == "t5":
        return _t5(cfg)
    raise KeyError(f"model_type {t!r} not supported here")


def numel(shapes):
    n = 0
    for shp in shapes.values():
        k = 1
        for d in shp:
            k *= d
        n += k
    return n


def count(cfg):
    return numel(hf_shapes(cfg))


def main():
    idx = json.load(open(os.path.join(HERE, "configs", "real", "index.json")))
    bad = 0
    for e in idx["models"]:
        cfg = json.load(open(os.path.join(HERE, "configs", "real", e["file"])))
        n = count(cfg)
        ok = n == e["exact_params"]
        bad += not ok
        print(f"{e['file']:32s} {n:>15,d} index {e['exact_params']:>15,d} {'ok' if ok else 'MISMATCH'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
