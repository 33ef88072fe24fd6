"""clip_replica.py -- CLIPModel (issue 31, towers) as a PyTorch module, written from the transformers source (not from
vramcalc's engine), measured by measure_llm.py (--mode train / infer) and counted by `python3 clip_replica.py CONFIG...`.

Sources read (huggingface/transformers):
  C = models/clip/modeling_clip.py @ 000f1ffdbf1ce6190cc8863af9a2fff817590937:
      CLIPAttention, CLIPMLP and CLIPEncoderLayer are SiglipAttention, SiglipMLP and SiglipEncoderLayer statement for
      statement (siglip_replica.py, modeling_siglip.py @ efa7189c: k/q/v/out_proj nn.Linear(H, H) with biases, the
      view + transpose, the attention interface with scaling head_dim ** -0.5 and dropout attention_dropout in
      training, reshape + contiguous, out_proj; fc1, ACT2FN[hidden_act], fc2; pre-LN residuals; GradientCheckpointing-
      Layer): reused from there, the text tower's attention with is_causal (below);
      CLIPVisionEmbeddings.forward (interpolate_pos_encoding False): target_dtype = patch_embedding.weight.dtype,
      patch_embedding(pixel_values.to(dtype=target_dtype)) (nn.Conv2d(num_channels, H, kernel_size=patch_size,
      stride=patch_size, bias=False)), .flatten(2).transpose(1, 2), class_embedding.expand(batch_size, 1, -1),
      torch.cat([class_embeds, patch_embeds], dim=1), + position_embedding(position_ids) (nn.Embedding(num_patches + 1,
      H) over the arange buffer);
      CLIPVisionTransformer.forward: embeddings, hidden_states = pre_layrnorm(hidden_states), the encoder,
      pooled_output = last_hidden_state[:, 0, :], post_layernorm(pooled_output);
      CLIPTextEmbeddings.forward: position_ids[:, :seq_length], token_embedding(input_ids) + position_embedding(...),
      SiglipTextEmbeddings.forward statement for statement (siglip_replica.SiglipTextTransformer._embeddings, reused);
      CLIPTextTransformer.forward: input_ids.view(-1, L), the embeddings, attention_mask = create_causal_mask(...)
      (None under sdpa without a padding mask: masking_utils' sdpa_mask lets sdpa's is_causal do it), the encoder
      with is_causal=True (sdpa_attention_forward: is_causal when the mask is None and the query is longer than 1),
      final_layer_norm, pooled_output = last_hidden_state[arange(B), input_ids.to(int).argmax(-1)] when every row's
      maximum is 49407, else at the first eos_token_id ((input_ids.to(int) == eos_token_id).int().argmax(-1));
      CLIPModel.__init__ (visual_projection, text_projection nn.Linear(.., projection_dim, bias=False), logit_scale
      nn.Parameter(tensor(logit_scale_init_value))) and CLIPModel.forward (the vision tower first, the projections,
      x / _get_vector_norm(x) (pow 2, sum(dim=-1, keepdim=True), pow 0.5), logits_per_text = matmul(text_embeds,
      image_embeds.t()) * logit_scale.exp(), logits_per_image = .t(), with return_loss clip_loss: (cross_entropy(
      logits, arange) + cross_entropy(logits.t(), arange)) / 2.0), copied statement by statement.
  configuration_clip.py @ 01841b341b64ab547cd2e30f09cb9c74929f50f2: CLIPTextConfig's and CLIPVisionConfig's defaults
      (TEXT_DEFAULTS, VISION_DEFAULTS), CLIPConfig's projection_dim 512 and logit_scale_init_value 2.6592.
Training is CLIPModel(input_ids, pixel_values, return_loss=True).loss.backward(); the text ids of --seq tokens
(max_position_embeddings, the processor's padding="max_length", unless less), random below vocab_size.
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import torch
import torch.nn as nn

import vctorch
from siglip_replica import SiglipEncoderLayer, SiglipTextTransformer, encoder
from vision_encoder_replica import Conv2d

TEXT_DEFAULTS = {  # CLIPTextConfig.__init__
    "vocab_size": 49408, "hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12,
    "num_attention_heads": 8, "max_position_embeddings": 77, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5,
    "attention_dropout": 0.0, "eos_token_id": 49407,
}
VISION_DEFAULTS = {  # CLIPVisionConfig.__init__
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
    "num_channels": 3, "image_size": 224, "patch_size": 32, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5,
    "attention_dropout": 0.0,
}


def _resolve(defaults, sub):
    d = dict(defaults)
    d.update({k: v for k, v in (sub or {}).items() if v is not None})
    return d


def resolve_text(raw):
    """CLIPConfig's text_config with CLIPTextConfig's defaults (None or absent: {})."""
    return _resolve(TEXT_DEFAULTS, raw.get("text_config"))


def resolve_vision(raw):
    """CLIPConfig's vision_config with CLIPVisionConfig's defaults (None or absent: {})."""
    return _resolve(VISION_DEFAULTS, raw.get("vision_config"))


class CLIPVisionTransformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, P, img = c["hidden_size"], c["patch_size"], c["image_size"]
        self.class_embedding = nn.Parameter(torch.randn(H))
        self.patch_embedding = Conv2d(c["num_channels"], H, kernel_size=P, stride=P, bias=False)
        n = (img // P) ** 2 + 1
        self.position_embedding = nn.Embedding(n, H)
        self.register_buffer("position_ids", torch.arange(n).expand((1, -1)), persistent=False)
        self.pre_layrnorm = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        self.layers = nn.ModuleList(SiglipEncoderLayer(c) for _ in range(c["num_hidden_layers"]))
        self.post_layernorm = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        self.gradient_checkpointing = False

    def _embeddings(self, pixel_values):  # CLIPVisionEmbeddings.forward
        batch_size = pixel_values.shape[0]
        target_dtype = self.patch_embedding.weight.dtype
        patch_embeds = self.patch_embedding(pixel_values.to(dtype=target_dtype))
        patch_embeds = patch_embeds.flatten(2).transpose(1, 2)
        class_embeds = self.class_embedding.expand(batch_size, 1, -1)
        embeddings = torch.cat([class_embeds, patch_embeds], dim=1)
        embeddings = embeddings + self.position_embedding(self.position_ids)
        return embeddings

    def forward(self, pixel_values):
        hidden_states = self._embeddings(pixel_values)
        hidden_states = self.pre_layrnorm(hidden_states)
        last_hidden_state = encoder(self.layers, hidden_states, self.gradient_checkpointing and self.training)
        pooled_output = last_hidden_state[:, 0, :]
        pooled_output = self.post_layernorm(pooled_output)
        return last_hidden_state, pooled_output


class CLIPTextTransformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, M = c["hidden_size"], c["max_position_embeddings"]
        self.token_embedding = nn.Embedding(c["vocab_size"], H)
        self.position_embedding = nn.Embedding(M, H)
        self.register_buffer("position_ids", torch.arange(M).expand((1, -1)), persistent=False)
        self.layers = nn.ModuleList(SiglipEncoderLayer(c) for _ in range(c["num_hidden_layers"]))
        for blk in self.layers:
            blk.self_attn.is_causal = True  # the encoder's is_causal=True reaching sdpa (no mask)
        self.final_layer_norm = vctorch._LayerNorm2x(H, eps=c["layer_norm_eps"])
        self.eos_token_id = c["eos_token_id"]
        self.gradient_checkpointing = False

    # CLIPTextEmbeddings.forward (position_ids None): SiglipTextEmbeddings.forward's statements on the same modules
    _embeddings = SiglipTextTransformer._embeddings

    def forward(self, input_ids):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        hidden_states = self._embeddings(input_ids)
        h = encoder(self.layers, hidden_states, self.gradient_checkpointing and self.training)
        last_hidden_state = self.final_layer_norm(h)
        del h
        if torch.all(input_ids.max(dim=-1).values == 49407).item():
            pooled_output = last_hidden_state[
                torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device),
                input_ids.to(dtype=torch.int, device=last_hidden_state.device).argmax(dim=-1),
            ]
        else:
            pooled_output = last_hidden_state[
                torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device),
                (input_ids.to(dtype=torch.int, device=last_hidden_state.device) == self.eos_token_id)
                .int()
                .argmax(dim=-1),
            ]
        return last_hidden_state, pooled_output


def _get_vector_norm(tensor):
    square_tensor = torch.pow(tensor, 2)
    sum_tensor = torch.sum(square_tensor, dim=-1, keepdim=True)
    normed_tensor = torch.pow(sum_tensor, 0.5)
    return normed_tensor


def contrastive_loss(logits):
    return nn.functional.cross_entropy(logits, torch.arange(len(logits), device=logits.device))


def clip_loss(similarity):
    caption_loss = contrastive_loss(similarity)
    image_loss = contrastive_loss(similarity.t())
    return (caption_loss + image_loss) / 2.0


class CLIPModel(nn.Module):
    def __init__(self, raw):
        super().__init__()
        self.c = resolve_text(raw)
        vc = resolve_vision(raw)
        P = raw.get("projection_dim", 512)
        self.vision_model = CLIPVisionTransformer(vc)
        self.text_model = CLIPTextTransformer(self.c)
        self.visual_projection = vctorch._Linear2x(vc["hidden_size"], P, bias=False)
        self.text_projection = vctorch._Linear2x(self.c["hidden_size"], P, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(raw.get("logit_scale_init_value", 2.6592)))
        self.gradient_checkpointing = False
        self.input_ids = None  # the batch's token ids, set by measure_llm.py (resident like pixel_values)

    def forward(self, pixel_values, labels=None):
        self.vision_model.gradient_checkpointing = self.text_model.gradient_checkpointing = self.gradient_checkpointing
        return_loss = self.training
        vision_outputs = self.vision_model(pixel_values)
        text_outputs = self.text_model(self.input_ids)
        image_embeds = vision_outputs[1]
        image_embeds = self.visual_projection(image_embeds)
        text_embeds = text_outputs[1]
        text_embeds = self.text_projection(text_embeds)
        image_embeds = image_embeds / _get_vector_norm(image_embeds)
        text_embeds = text_embeds / _get_vector_norm(text_embeds)
        logits_per_text = torch.matmul(text_embeds, image_embeds.t().to(text_embeds.device))
        logits_per_text = logits_per_text * self.logit_scale.exp().to(text_embeds.device)
        logits_per_image = logits_per_text.t()
        loss = None
        if return_loss:
            loss = clip_loss(logits_per_text)
        # CLIPOutput: the caller takes .loss (training) or the logits, the rest dropped with it
        del vision_outputs, text_outputs, image_embeds, text_embeds, logits_per_text
        return loss, logits_per_image


def build(cfg):
    return CLIPModel(cfg)


def counts(cfg):
    """{class: parameters}: CLIPModel built here (meta device)."""
    from check_params import MetaMode
    with MetaMode():
        m = build(cfg)
    return {"CLIPModel": sum(p.numel() for p in m.parameters())}


def main(paths):
    for p in paths:
        print(p, json.dumps(counts(json.load(open(p)))))


if __name__ == "__main__":
    main(sys.argv[1:])
