"""encoder_replica.py -- the text encoders' sequence-classification models (distilbert, bert,
roberta, xlm-roberta) as PyTorch modules, written from the transformers source, measured by
measure_llm.py (--mode train / infer) and counted by `python3 encoder_replica.py CONFIG...`.

Sources read (huggingface/transformers):
  D  = models/distilbert/modeling_distilbert.py @00b326f4: Embeddings.forward (word + position
       embeddings, the positions a [1, L] slice of the position_ids buffer, LayerNorm eps 1e-12,
       dropout), MultiHeadSelfAttention (q_lin/k_lin/v_lin/out_lin with biases, dropout on the
       weights), FFN.ff_chunk (lin1, activation, lin2, dropout), TransformerBlock.forward
       (sa_layer_norm(sa_output + x); output_layer_norm(ffn_output + sa_output)),
       DistilBertForSequenceClassification (hidden_state[:, 0], pre_classifier, nn.ReLU(),
       dropout(seq_classif_dropout), classifier) and DistilBertForMaskedLM (vocab_transform,
       activation, vocab_layer_norm, vocab_projector tied to word_embeddings: the count only).
       transformers 5's DistilBertSelfAttention keeps the modules and runs the attention
       interface (sdpa by default) as BERT's does; here sdpa, as the bert row.
  B  = models/bert/modeling_bert.py and models/roberta/modeling_roberta.py @5dd4a63 (the
       commit src/hf/ reads): BertEmbeddings / RobertaEmbeddings (token types from the zero
       buffer expanded to [B, L]; RoBERTa's position ids create_position_ids_from_input_ids:
       (cumsum(mask) * mask).long() + padding_idx, per sample), BertSelfAttention through
       sdpa_attention_forward (is_causal False, no mask when every token attends), BertSelfOutput
       (dense, dropout, LayerNorm(h + input)), BertIntermediate, BertOutput, BertPooler,
       BertForSequenceClassification, RobertaClassificationHead (dropout, dense, tanh, dropout,
       out_proj); models/xlm_roberta/modeling_xlm_roberta.py: RoBERTa's modules ("Copied from").
  Loss: the *ForSequenceClassification single_label_classification branch,
       CrossEntropyLoss()(logits.view(-1, num_labels), labels.view(-1)).
Linears, LayerNorms, dropout and SDPA's math backend as PyTorch 2.x runs them come from the
harness (tools/vctorch.py), as in reference.py.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import torch
import torch.nn as nn
import torch.nn.functional as F

import vctorch

ENCODERS = ("distilbert", "bert", "roberta", "xlm-roberta", "modernbert", "mpnet", "vit", "dinov2",
            "siglip_vision_model", "siglip", "clip")  # modernbert_replica.py,
# mpnet_replica.py, vision_encoder_replica.py (vit: pixel_values in, measure_llm.py pixels()), dinov2_replica.py,
# siglip_replica.py (SiglipVisionModel: no labels, its loss pooler_output.mean())


def _act(name):
    # activations.py ACT2FN: gelu -> GELUActivation (F.gelu), relu -> nn.ReLU
    if name == "gelu":
        return F.gelu
    if name == "relu":
        return F.relu
    raise ValueError("activation %r" % name)


def _labels(cfg):
    return len(cfg["id2label"]) if cfg.get("id2label") else 2  # PretrainedConfig: num_labels 2


def _attention(q, k, v, p, training):
    # integrations/sdpa_attention.py sdpa_attention_forward: an encoder's module.is_causal is
    # False; no mask (every token attends); dropout=p if training else 0.0
    o = vctorch._sdpa_math_2x(q, k, v, attn_mask=None, dropout_p=p if training else 0.0, is_causal=False)
    return o.transpose(1, 2).contiguous()


def _run(model, blk, h):
    """Transformer.forward (D) / BertEncoder.forward (B): with gradient_checkpointing in training,
    self._gradient_checkpointing_func(layer_module.__call__, ...), non-reentrant
    (gradient_checkpointing_enable's default use_reentrant=False): the harness's port of 2.x's."""
    if model.gradient_checkpointing and model.training:
        return vctorch._checkpoint2x(blk.__call__, h)
    return blk(h)


def _input_embeddings(self):
    return self.word_embeddings


class _SelfAttention(nn.Module):
    def __init__(self, H, NH, p, names):
        super().__init__()
        self.NH, self.p, self.names = NH, p, names
        for n in names:
            setattr(self, n, vctorch._Linear2x(H, H))

    def forward(self, x):
        B, L, H = x.shape
        q, k, v = (getattr(self, n)(x).view(B, L, self.NH, H // self.NH).transpose(1, 2) for n in self.names)
        return _attention(q, k, v, self.p, self.training).reshape(B, L, H)


class DistilBlock(nn.Module):
    """D: TransformerBlock."""

    def __init__(self, c):
        super().__init__()
        H = c["dim"]
        self.attention = _SelfAttention(H, c["n_heads"], c["attention_dropout"], ("q_lin", "k_lin", "v_lin"))
        self.out_lin = vctorch._Linear2x(H, H)
        self.sa_layer_norm = vctorch._LayerNorm2x(H, eps=1e-12)
        self.lin1 = vctorch._Linear2x(H, c["hidden_dim"])
        self.lin2 = vctorch._Linear2x(c["hidden_dim"], H)
        self.act = _act(c["activation"])
        self.p = c["dropout"]
        self.output_layer_norm = vctorch._LayerNorm2x(H, eps=1e-12)

    def forward(self, x):
        sa = self.out_lin(self.attention(x))
        sa = self.sa_layer_norm(sa + x)
        f = vctorch.dropout2x(self.lin2(self.act(self.lin1(sa))), self.p, self.training)
        return self.output_layer_norm(f + sa)


class DistilBertForSequenceClassification(nn.Module):
    get_input_embeddings = _input_embeddings  # PeftModel's enable_input_require_grads hook
    def __init__(self, c):
        super().__init__()
        H = c["dim"]
        self.c = c
        self.word_embeddings = nn.Embedding(c["vocab_size"], H, padding_idx=c.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], H)
        self.LayerNorm = vctorch._LayerNorm2x(H, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)),
                             persistent=False)
        self.layer = nn.ModuleList(DistilBlock(c) for _ in range(c["n_layers"]))
        self.gradient_checkpointing = False
        self.pre_classifier = vctorch._Linear2x(H, H)
        self.classifier = vctorch._Linear2x(H, _labels(c))

    def forward(self, input_ids, labels=None):
        c = self.c
        L = input_ids.size(1)
        h = self.word_embeddings(input_ids) + self.position_embeddings(self.position_ids[:, :L])
        # DistilBertModel.forward: inputs_embeds = self.embeddings(input_ids), then
        # self.transformer(x=inputs_embeds): the embeddings stay referenced through every block
        inputs_embeds = vctorch.dropout2x(self.LayerNorm(h), c["dropout"], self.training)
        del h
        h = inputs_embeds
        for blk in self.layer:
            h = _run(self, blk, h)
        pooled = self.pre_classifier(h[:, 0])
        pooled = nn.ReLU()(pooled)
        pooled = vctorch.dropout2x(pooled, c["seq_classif_dropout"], self.training)
        logits = self.classifier(pooled)
        loss = None if labels is None else F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits


class BertLayer(nn.Module):
    """B: BertLayer (BertAttention, BertIntermediate, BertOutput)."""

    def __init__(self, c):
        super().__init__()
        H, I = c["hidden_size"], c["intermediate_size"]
        self.attention = _SelfAttention(H, c["num_attention_heads"], c.get("attention_probs_dropout_prob", 0.1),
                                        ("query", "key", "value"))
        self.dense = vctorch._Linear2x(H, H)
        self.ln1 = vctorch._LayerNorm2x(H, eps=c.get("layer_norm_eps", 1e-12))
        self.inter = vctorch._Linear2x(H, I)
        self.out = vctorch._Linear2x(I, H)
        self.ln2 = vctorch._LayerNorm2x(H, eps=c.get("layer_norm_eps", 1e-12))
        self.act = _act(c.get("hidden_act", "gelu"))
        self.p = c.get("hidden_dropout_prob", 0.1)

    def forward(self, x):
        a = vctorch.dropout2x(self.dense(self.attention(x)), self.p, self.training)
        a = self.ln1(a + x)
        o = vctorch.dropout2x(self.out(self.act(self.inter(a))), self.p, self.training)
        return self.ln2(o + a)


class BertForSequenceClassification(nn.Module):
    """B: BertForSequenceClassification (pooler) / RobertaForSequenceClassification and
    XLMRobertaForSequenceClassification (no pooler, the classification head)."""
    get_input_embeddings = _input_embeddings

    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.c = c
        self.roberta = c["model_type"] != "bert"
        self.pad = c.get("pad_token_id", 1 if self.roberta else 0)
        self.word_embeddings = nn.Embedding(c["vocab_size"], H, padding_idx=self.pad)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], H,
                                                padding_idx=self.pad if self.roberta else None)
        self.token_type_embeddings = nn.Embedding(c.get("type_vocab_size", 2), H)
        self.LayerNorm = vctorch._LayerNorm2x(H, eps=c.get("layer_norm_eps", 1e-12))
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros((1, c["max_position_embeddings"]), dtype=torch.long),
                             persistent=False)
        self.layer = nn.ModuleList(BertLayer(c) for _ in range(c["num_hidden_layers"]))
        self.gradient_checkpointing = False
        n = _labels(c)
        if self.roberta:
            self.dense = vctorch._Linear2x(H, H)
            self.out_proj = vctorch._Linear2x(H, n)
        else:
            self.pooler = vctorch._Linear2x(H, H)
            self.classifier = vctorch._Linear2x(H, n)
        self.p = c.get("hidden_dropout_prob", 0.1)
        cd = c.get("classifier_dropout")
        self.p_cls = cd if cd is not None else self.p

    def forward(self, input_ids, labels=None):
        B, L = input_ids.shape
        if self.roberta:  # create_position_ids_from_input_ids
            mask = input_ids.ne(self.pad).int()
            incremental = torch.cumsum(mask, dim=1).type_as(mask) * mask
            position_ids = incremental.long() + self.pad
            del mask, incremental
        else:
            position_ids = self.position_ids[:, :L]
        token_type_ids = self.token_type_ids[:, :L].expand(B, L)  # buffered_token_type_ids.expand
        h = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        h += self.position_embeddings(position_ids)
        # BertModel.forward / RobertaModel.forward: embedding_output = self.embeddings(...), then
        # self.encoder(embedding_output, ...): referenced through every layer
        embedding_output = vctorch.dropout2x(self.LayerNorm(h), self.p, self.training)
        del h
        h = embedding_output
        for blk in self.layer:
            h = _run(self, blk, h)
        x = h[:, 0]
        if self.roberta:  # RobertaClassificationHead
            x = vctorch.dropout2x(x, self.p_cls, self.training)
            x = torch.tanh(self.dense(x))
            x = vctorch.dropout2x(x, self.p_cls, self.training)
            logits = self.out_proj(x)
        else:  # BertPooler, dropout, classifier
            x = torch.tanh(self.pooler(x))
            logits = self.classifier(vctorch.dropout2x(x, self.p_cls, self.training))
        loss = None if labels is None else F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits


def build(cfg):
    if cfg["model_type"] in ("siglip_vision_model", "siglip"):
        import siglip_replica
        return siglip_replica.build(cfg)
    if cfg["model_type"] == "clip":  # CLIPModel (clip_replica.py)
        import clip_replica
        return clip_replica.build(cfg)
    if cfg["model_type"] == "dinov2":
        import dinov2_replica
        return dinov2_replica.build(cfg)
    if cfg["model_type"] == "vit":
        import vision_encoder_replica
        return vision_encoder_replica.build(cfg)
    if cfg["model_type"] == "modernbert":
        import modernbert_replica
        return modernbert_replica.ModernBertForSequenceClassification(cfg)
    if cfg["model_type"] == "mpnet":
        import mpnet_replica
        return mpnet_replica.MPNetForSequenceClassification(cfg)
    return (DistilBertForSequenceClassification if cfg["model_type"] == "distilbert" else BertForSequenceClassification)(cfg)


def counts(cfg):
    """{class name: parameters} for the base model, the *ForMaskedLM of the checkpoints and the
    *ForSequenceClassification built here: the replica on the meta device, the rest by the heads'
    shapes (D / B __init__s; the MLM decoders tied to word_embeddings, counted once)."""
    from check_params import MetaMode  # every factory call makes a meta tensor: no storage
    with MetaMode():
        m = build(cfg)
    seqcls = sum(p.numel() for p in m.parameters())
    t = cfg["model_type"]
    n = _labels(cfg)
    if t == "distilbert":
        H, V = cfg["dim"], cfg["vocab_size"]
        base = seqcls - (H * H + H) - (H * n + n)
        return {"DistilBertModel": base, "DistilBertForMaskedLM": base + (H * H + H) + 2 * H + V,
                "DistilBertForSequenceClassification": seqcls}
    H, V = cfg["hidden_size"], cfg["vocab_size"]
    pre = {"bert": "Bert", "roberta": "Roberta", "xlm-roberta": "XLMRoberta"}[t]
    enc = seqcls - (H * H + H) - (H * n + n)  # no pooler, no head
    mlm = enc + (H * H + H) + 2 * H + V  # BertLMPredictionHead transform + bias / RobertaLMHead
    return {pre + "Model": enc + H * H + H, pre + "ForMaskedLM": mlm, pre + "ForSequenceClassification": seqcls}


def main(paths):
    for p in paths:
        cfg = json.load(open(p))
        print(p, json.dumps(counts(cfg)))


if __name__ == "__main__":
    main(sys.argv[1:])
