"""vision_encoder_replica.py -- the standalone vision encoders (issue 31 item 4) as PyTorch modules, written from
the transformers source (not from vramcalc's engine), measured by measure_llm.py (--mode train / infer) and
counted by `python3 vision_encoder_replica.py CONFIG...`.

Sources read (huggingface/transformers):
  V  = models/vit/modeling_vit.py @ 005db8208dee358fe8fe63ae3cc49dd054aad48d:
       ViTPatchEmbeddings (projection nn.Conv2d(num_channels, hidden_size, kernel_size=patch_size,
       stride=patch_size); forward: projection(pixel_values).flatten(2).transpose(1, 2), a ValueError for
       another image size unless interpolate_pos_encoding);
       ViTEmbeddings (cls_token [1, 1, H], position_embeddings [1, num_patches + 1, H], dropout
       hidden_dropout_prob; forward: cls_token.expand(batch_size, -1, -1), torch.cat((cls_tokens, embeddings),
       dim=1), embeddings + self.position_embeddings, dropout);
       ViTSelfAttention (query / key / value nn.Linear(H, H, bias=qkv_bias); forward: key, value, query in that
       order through transpose_for_scores (view, permute(0, 2, 1, 3)), the attention interface -- sdpa,
       transformers' default (integrations/sdpa_attention.py sdpa_attention_forward: no mask, is_causal False,
       dropout attention_probs_dropout_prob in training, attn_output.transpose(1, 2).contiguous()) --, then
       view(B, L, H)); ViTSelfOutput (dense, dropout); ViTIntermediate (dense, ACT2FN[hidden_act]); ViTOutput
       (dense, dropout, + input_tensor); ViTLayer.forward (attention(layernorm_before(h)), + h,
       layernorm_after, intermediate, output(., h)); ViTEncoder (gradient checkpointing:
       self._gradient_checkpointing_func(layer_module.__call__, ...), non-reentrant as
       gradient_checkpointing_enable defaults); ViTModel.forward (pixel_values.to(projection.weight.dtype),
       embeddings, encoder, layernorm; the pooler only with add_pooling_layer); ViTForImageClassification
       (ViTModel(config, add_pooling_layer=False), classifier nn.Linear(H, num_labels) on
       sequence_output[:, 0, :], CrossEntropyLoss for integer labels and num_labels > 1).
  configuration_vit.py @ 04ae75715f2cca2d87bbaf07c1d8e9fb2ab20bfd: ViTConfig.__init__'s defaults (DEFAULTS).
Linears are vctorch._Linear2x, LayerNorms vctorch._LayerNorm2x, the Conv2d vctorch's 2.x convolution, SDPA
vctorch._sdpa_math_2x (torch 1.13 has no F.scaled_dot_product_attention: the port of 2.x's math backend), dropout
vctorch.dropout2x, as the harness's other replicas.
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

DEFAULTS = {  # ViTConfig.__init__ (configuration_vit.py @ 04ae7571)
    "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "layer_norm_eps": 1e-12,
    "image_size": 224, "patch_size": 16, "num_channels": 3, "qkv_bias": True,
}
Conv2d = vctorch._conv2x_class(nn.Conv2d)


def resolve(raw):
    """config.json with ViTConfig's defaults filled in."""
    d = dict(DEFAULTS)
    d.update({k: v for k, v in raw.items() if v is not None})
    return d


def _labels(c):
    return len(c["id2label"]) if c.get("id2label") else 2  # PretrainedConfig: num_labels 2


def _act(name):
    # activations.py ACT2FN: "gelu" -> GELUActivation (F.gelu), "relu" -> nn.ReLU
    if name == "gelu":
        return F.gelu
    if name == "relu":
        return F.relu
    raise ValueError("activation %r" % name)


class ViTLayer(nn.Module):
    """V: ViTLayer (ViTAttention = ViTSelfAttention + ViTSelfOutput, ViTIntermediate, ViTOutput)."""

    def __init__(self, c):
        super().__init__()
        H, I, b = c["hidden_size"], c["intermediate_size"], c["qkv_bias"]
        self.NH, self.D = c["num_attention_heads"], H // c["num_attention_heads"]
        self.query = vctorch._Linear2x(H, H, bias=b)
        self.key = vctorch._Linear2x(H, H, bias=b)
        self.value = vctorch._Linear2x(H, H, bias=b)
        self.p_attn, self.p = c["attention_probs_dropout_prob"], c["hidden_dropout_prob"]
        self.attn_dense = vctorch._Linear2x(H, H)
        self.inter = vctorch._Linear2x(H, I)
        self.act = _act(c["hidden_act"])
        self.out = vctorch._Linear2x(I, H)
        self.layernorm_before = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        self.layernorm_after = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])

    def _scores(self, x):  # transpose_for_scores
        return x.view(x.size()[:-1] + (self.NH, self.D)).permute(0, 2, 1, 3)

    def _attention(self, hidden_states):  # ViTAttention.forward: the argument alive until it returns
        key_layer = self._scores(self.key(hidden_states))
        value_layer = self._scores(self.value(hidden_states))
        query_layer = self._scores(self.query(hidden_states))
        o = vctorch._sdpa_math_2x(query_layer, key_layer, value_layer, attn_mask=None,
                                  dropout_p=self.p_attn if self.training else 0.0, is_causal=False,
                                  scale=self.D ** -0.5)
        context = o.transpose(1, 2).contiguous()
        del o, key_layer, value_layer, query_layer
        context = context.view(context.size()[:-2] + (self.NH * self.D,))
        return vctorch.dropout2x(self.attn_dense(context), self.p, self.training)  # ViTSelfOutput

    def _intermediate(self, h):  # ViTIntermediate.forward: the argument alive until it returns
        return self.act(self.inter(h))

    def forward(self, hidden_states):
        attention_output = self._attention(self.layernorm_before(hidden_states))
        hidden_states = attention_output + hidden_states
        del attention_output
        layer_output = self._intermediate(self.layernorm_after(hidden_states))
        layer_output = vctorch.dropout2x(self.out(layer_output), self.p, self.training) + hidden_states  # ViTOutput
        return layer_output


class ViTForImageClassification(nn.Module):
    """V: ViTForImageClassification (ViTModel without the pooler, the classifier)."""

    def __init__(self, c):
        super().__init__()
        c = resolve(c)
        self.c = c
        H, P, img = c["hidden_size"], c["patch_size"], c["image_size"]
        self.img = img
        self.projection = Conv2d(c["num_channels"], H, kernel_size=P, stride=P)
        n = (img // P) * (img // P)
        self.cls_token = nn.Parameter(torch.randn(1, 1, H))
        self.position_embeddings = nn.Parameter(torch.randn(1, n + 1, H))
        self.p = c["hidden_dropout_prob"]
        self.layer = nn.ModuleList(ViTLayer(c) for _ in range(c["num_hidden_layers"]))
        self.layernorm = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        self.classifier = vctorch._Linear2x(H, _labels(c))
        self.gradient_checkpointing = False

    def get_input_embeddings(self):  # ViTModel.get_input_embeddings: the patch embeddings
        return self.projection

    def _embeddings(self, pixel_values):  # ViTEmbeddings.forward
        batch_size = pixel_values.shape[0]
        embeddings = self.projection(pixel_values).flatten(2).transpose(1, 2)
        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        embeddings = embeddings + self.position_embeddings
        return vctorch.dropout2x(embeddings, self.p, self.training)

    def _vit(self, pixel_values):  # ViTModel.forward
        if pixel_values.shape[-1] != self.img or pixel_values.shape[-2] != self.img:
            raise ValueError("Input image size doesn't match model")
        expected_dtype = self.projection.weight.dtype
        if pixel_values.dtype != expected_dtype:
            pixel_values = pixel_values.to(expected_dtype)
        embedding_output = self._embeddings(pixel_values)
        hidden_states = embedding_output
        for blk in self.layer:  # ViTEncoder.forward
            if self.gradient_checkpointing and self.training:
                hidden_states = vctorch._checkpoint2x(blk.__call__, hidden_states)
            else:
                hidden_states = blk(hidden_states)
        return self.layernorm(hidden_states)

    def forward(self, pixel_values, labels=None):
        sequence_output = self._vit(pixel_values)
        logits = self.classifier(sequence_output[:, 0, :])
        del sequence_output
        loss = None if labels is None else F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits


def build(cfg):
    return ViTForImageClassification(cfg)


def counts(cfg):
    """{class: parameters}: ViTForImageClassification built here (meta device), ViTModel with and without the
    pooler (ViTPooler: dense H x H + H) by the head's shapes."""
    from check_params import MetaMode
    with MetaMode():
        m = build(cfg)
    c = resolve(cfg)
    cls = sum(p.numel() for p in m.parameters())
    H, n = c["hidden_size"], _labels(c)
    base = cls - (H * n + n)
    return {"ViTModel": base + H * H + H, "ViTModel(add_pooling_layer=False)": base, "ViTForImageClassification": cls}


def main(paths):
    for p in paths:
        print(p, json.dumps(counts(json.load(open(p)))))


if __name__ == "__main__":
    main(sys.argv[1:])
