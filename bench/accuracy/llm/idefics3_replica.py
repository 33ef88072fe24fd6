"""idefics3_replica.py -- SmolVLMForConditionalGeneration / Idefics3ForConditionalGeneration on text alone (issue 31,
towers), written from the transformers source, not from vramcalc's engine; measured by measure_llm.py and counted by
`python3 idefics3_replica.py [--check] CONFIG...`.

Sources read (huggingface/transformers):
  CS = models/smolvlm/configuration_smolvlm.py @ 9a3f708195b7eda02989d40fd03bb3714b3b37e5: SmolVLMVisionConfig's
       defaults (hidden_size 1152, intermediate_size 3072, num_hidden_layers 12, num_attention_heads 16, num_channels 3,
       image_size 224, patch_size 32); SmolVLMConfig (scale_factor 2, tie_word_embeddings False; text_config a dict:
       CONFIG_MAPPING[text_config.get("model_type", "llama")](**text_config); None: LlamaConfig(rms_norm_eps=1e-5,
       pad_token_id=128002, tie_word_embeddings=False)).
  CI = models/idefics3/configuration_idefics3.py @ 842a28d096bc356070aedfadab94bf9148a3f6ae: Idefics3VisionConfig (the
       same defaults), Idefics3Config (scale_factor 2; vocab_size 100000 written into text_config).
  MS = models/smolvlm/modeling_smolvlm.py @ b282e23b453c142800d1a37a0912fcd4ec321d04 (MI = models/idefics3/
       modeling_idefics3.py @ 9a80143ca26066ee3266749a57c7b3850d8843be, the same modules):
       SmolVLMVisionEmbeddings.__init__ (patch_embedding nn.Conv2d(num_channels, hidden, patch, stride patch,
       padding "valid"), position_embedding nn.Embedding((image_size // patch_size) ** 2, hidden));
       SmolVLMVisionAttention (k_proj, v_proj, q_proj, out_proj: nn.Linear(hidden, hidden)); SmolVLMVisionMLP (fc1
       nn.Linear(hidden, intermediate), fc2); SmolVLMEncoderLayer (self_attn, layer_norm1, mlp, layer_norm2:
       nn.LayerNorm(hidden)); SmolVLMVisionTransformer (embeddings, encoder.layers, post_layernorm; no head);
       SmolVLMConnector (modality_projection = SmolVLMSimpleMLP: proj nn.Linear(vision hidden * scale_factor ** 2,
       text hidden, bias=False)); SmolVLMModel (vision_model, connector, text_model = AutoModel.from_config(
       text_config): LlamaModel); SmolVLMForConditionalGeneration (model, lm_head nn.Linear(text hidden, vocab,
       bias=False), _tied_weights_keys ["lm_head.weight"]).
       SmolVLMModel.forward without pixel_values and image_hidden_states: inputs_embeds = text_model
       .get_input_embeddings()(input_ids).to(input_ids.device) (the same device: no copy); neither
       get_image_features nor inputs_merger runs; text_model(inputs_embeds=...) (LlamaModel.forward);
       SmolVLMForConditionalGeneration.forward: logits = lm_head(hidden_states[:, slice(-0, None), :]) (the whole
       sequence), loss = self.loss_function(logits, labels, vocab_size) (ForCausalLMLoss).
With images (build_image, measure_llm.py --image WxH [--images N]):
  IP = models/smolvlm/image_processing_smolvlm.py @ 72486fb4cafc48ea685280d06cc13c4d50da04a9
       SmolVLMImageProcessor.preprocess: resize (get_resize_output_image_size: _resize_output_size_rescale_to_max_len
       to size["longest_edge"], then _resize_output_size_scale_below_upper_bound to MAX_IMAGE_SIZE 4096),
       do_image_splitting: resize_for_vision_encoder (each edge up to a multiple of max_image_size["longest_edge"]),
       split_image (ceil(h / M) x ceil(w / M) crops of M x M and the global image resized to M x M, or the one image);
       pad to the batch's largest frame (every frame M x M here: pixel_attention_mask all ones). The checkpoints'
       preprocessor_config.json is not read here (no network): size {"longest_edge": 4 M}, max_image_size
       {"longest_edge": M} with M = vision_config.image_size, as the published SmolVLM / Idefics3 processors set them
       (the class defaults 4 x 364 and 364 are Idefics3's).
  PP = models/smolvlm/processing_smolvlm.py @ c82627a8d6e3ab9e020fd75755751ed81036e7a3 get_image_prompt_string
       (_prompt_split_image / _prompt_single_image): the image's text, image_seq_len <image> tokens per frame
       (int(((image_size // patch_size) ** 2) / (scale_factor ** 2)), SmolVLMModel.image_seq_len), a
       <fake_token_around_image> and <row_r_col_c> before each tile's, "\n" after each row, then "\n",
       <fake_token_around_image><global-img> and the global image's, <fake_token_around_image>; one token each here.
  MS SmolVLMModel.get_image_features (view(B * N, ...); real_images_inds = (pixel_values == 0.0).sum(dim=(-1, -2,
       -3)) != nb_values_per_image; pixel_values[real_images_inds].contiguous(); pixel_attention_mask None: torch.ones
       bool [frames, H, W]; two unfolds, .sum(dim=(-1, -2)) > 0), SmolVLMVisionTransformer.forward
       (SmolVLMVisionEmbeddings.forward: patch_embedding, flatten(2).transpose(1, 2), position_ids torch.full((B,
       n), 0) filled per frame by bucketize, + position_embedding(position_ids); patch_attention_mask.view(B, -1),
       all True: None; the encoder (SiglipEncoderLayer's statements: siglip_replica.py's layers, sdpa without a mask),
       post_layernorm), SmolVLMConnector.forward (pixel_shuffle: view, view, permute, reshape, permute, reshape;
       modality_projection.proj), inputs_merger (image_mask = input_ids == image_token_id, the block / local indices,
       torch.zeros_like(inputs_embeds), the indexed put, torch.where), image_hidden_states kept in the model's
       output (SmolVLMBaseModelOutputWithPast) until the forward returns; generate: pixel_values in the prefill only
       (prepare_inputs_for_generation), image_hidden_states passed to the decoding steps
       (_update_model_kwargs_for_generation), whose inputs_merger finds no image token.
  The tower and connector frozen (the other VLM replicas' LLaMA-Factory defaults); pixel_values given in the
  model's dtype (the caller's .to(dtype): the model has no cast).
So the text-only model is reference.py's LlamaForCausalLM (embed_tokens, the layers, norm, lm_head, ForCausalLMLoss)
with the tower and connector built (trainable, as from_pretrained leaves them and TRL's SFTTrainer trains them) and
never run: no gradient, no optimizer state.
"""
import json
import os
import sys

import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import reference as R

VISION = dict(hidden_size=1152, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=16, num_channels=3,
              image_size=224, patch_size=32)  # CS / CI


def flatten(raw):
    """measure_llm.py's view of a smolvlm / idefics3 config.json: text_config's keys (LlamaConfig's), model_type the
    row's, the vision_config and scale_factor beside them."""
    t = dict(raw.get("text_config") or {"rms_norm_eps": 1e-5, "pad_token_id": 128002, "tie_word_embeddings": False})
    t.pop("model_type", None)
    if raw["model_type"] == "idefics3":
        t["vocab_size"] = raw.get("vocab_size", 100000)  # CI: Idefics3Config's vocab_size written into text_config
    return dict(t, model_type=raw["model_type"], vision_config=raw.get("vision_config") or {},
                scale_factor=raw.get("scale_factor", 2),
                image_token_id=raw.get("image_token_id", 128257))  # CS / CI: image_token_id 128257


class VisionTransformer(nn.Module):
    """MS SmolVLMVisionTransformer.__init__'s parameters, module by module (never run on text)."""

    def __init__(self, k):
        super().__init__()
        H, I, P = k["hidden_size"], k["intermediate_size"], k["patch_size"]
        self.embeddings = nn.Module()
        self.embeddings.patch_embedding = nn.Conv2d(k["num_channels"], H, kernel_size=P, stride=P, padding="valid")
        self.embeddings.position_embedding = nn.Embedding((k["image_size"] // P) ** 2, H)

        def layer():
            lay = nn.Module()
            lay.self_attn = nn.Module()
            for n in ("k_proj", "v_proj", "q_proj", "out_proj"):
                setattr(lay.self_attn, n, nn.Linear(H, H))
            lay.layer_norm1 = nn.LayerNorm(H)
            lay.mlp = nn.Module()
            lay.mlp.fc1 = nn.Linear(H, I)
            lay.mlp.fc2 = nn.Linear(I, H)
            lay.layer_norm2 = nn.LayerNorm(H)
            return lay

        self.encoder = nn.Module()
        self.encoder.layers = nn.ModuleList(layer() for _ in range(k["num_hidden_layers"]))
        self.post_layernorm = nn.LayerNorm(H)


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of flatten()'s keys."""
    d = cfg.d
    model = R.CausalLM(R.Config(dict(d, model_type="llama")), attn_impl)  # text_model (LlamaModel) and lm_head
    k = dict(VISION)
    k.update({n: x for n, x in (d.get("vision_config") or {}).items() if n in VISION and x is not None})
    model.vision_model = VisionTransformer(k)
    model.connector = nn.Module()
    model.connector.modality_projection = nn.Module()
    s = d.get("scale_factor", 2)
    model.connector.modality_projection.proj = nn.Linear(k["hidden_size"] * s * s, model.embed_tokens.weight.shape[1],
                                                         bias=False)
    return model


def frames(W, H, M):
    """IP: the frames of a W x H image with max_image_size M and size 4 M; (frames, rows, cols)."""
    import math
    L = 4 * M
    h, w = H, W
    aspect_ratio = w / h
    if w >= h:  # _resize_output_size_rescale_to_max_len
        w = L
        h = int(w / aspect_ratio)
        if h % 2 != 0:
            h += 1
    elif h > w:
        h = L
        w = int(h * aspect_ratio)
        if w % 2 != 0:
            w += 1
    h, w = max(h, 1), max(w, 1)
    aspect_ratio = w / h  # _resize_output_size_scale_below_upper_bound
    if w >= h and w > 4096:
        w = 4096
        h = int(w / aspect_ratio)
    elif h > w and h > 4096:
        h = 4096
        w = int(h * aspect_ratio)
    h, w = max(h, 1), max(w, 1)
    aspect_ratio = w / h  # resize_for_vision_encoder
    if w >= h:
        w = math.ceil(w / M) * M
        h = int(w / aspect_ratio)
        h = math.ceil(h / M) * M
    else:
        h = math.ceil(h / M) * M
        w = int(h * aspect_ratio)
        w = math.ceil(w / M) * M
    if h > M or w > M:  # split_image
        rows, cols = math.ceil(h / M), math.ceil(w / M)
        return rows * cols + 1, rows, cols
    return 1, 0, 0


def image_tokens(cfg, W, H, images):
    """(the prompt's tokens for the images, the <image> tokens among them, frames per sample) (PP, MS)."""
    k = dict(VISION)
    k.update({n: x for n, x in (cfg.d.get("vision_config") or {}).items() if n in VISION and x is not None})
    s = cfg.d.get("scale_factor", 2)
    seq_len = int(((k["image_size"] // k["patch_size"]) ** 2) / (s ** 2))
    n, rows, cols = frames(W, H, k["image_size"])
    text = rows * cols * 2 + rows + 4 if rows else 3
    return images * (n * seq_len + text), images * n * seq_len, images * n


def build_image(cfg, attn_impl=None):
    """SmolVLMForConditionalGeneration with pixel_values (MS, the header): reference.py's Llama decoder, the tower and
    connector run frozen; embed_tokens wrapped (Embed) to run SmolVLMModel.forward's image part."""
    import torch
    import siglip_replica
    import vctorch
    d = cfg.d
    model = build(cfg, attn_impl)
    k = dict(VISION)
    k.update({n: x for n, x in (d.get("vision_config") or {}).items() if n in VISION and x is not None})
    vc = siglip_replica.resolve(dict(d.get("vision_config") or {}, **k))
    C, P, img = k["hidden_size"], k["patch_size"], k["image_size"]
    side = img // P
    sf = d.get("scale_factor", 2)
    H = model.embed_tokens.weight.shape[1]
    tid = d.get("image_token_id", 128257)

    class Vision(torch.nn.Module):
        """MS SmolVLMVisionTransformer (the same parameters as VisionTransformer above)."""

        def __init__(self):
            super().__init__()
            self.embeddings = torch.nn.Module()
            self.embeddings.patch_embedding = siglip_replica.Conv2d(k["num_channels"], C, kernel_size=P, stride=P,
                                                                    padding="valid")
            self.embeddings.position_embedding = torch.nn.Embedding(side * side, C)
            self.encoder = torch.nn.Module()
            self.encoder.layers = torch.nn.ModuleList(siglip_replica.SiglipEncoderLayer(vc)
                                                      for _ in range(k["num_hidden_layers"]))
            self.post_layernorm = vctorch._LayerNorm2x(C, eps=vc["layer_norm_eps"])

        def forward(self, pixel_values, patch_attention_mask):
            batch_size = pixel_values.size(0)
            # SmolVLMVisionEmbeddings.forward
            _, _, max_im_h, max_im_w = pixel_values.shape
            patch_embeds = self.embeddings.patch_embedding(pixel_values)
            embeddings = patch_embeds.flatten(2).transpose(1, 2)
            max_nb_patches_h, max_nb_patches_w = max_im_h // P, max_im_w // P
            boundaries = torch.arange(1 / side, 1.0, 1 / side)
            position_ids = torch.full(size=(batch_size, max_nb_patches_h * max_nb_patches_w), fill_value=0)
            for batch_idx, p_attn_mask in enumerate(patch_attention_mask):
                nb_patches_h = p_attn_mask[:, 0].sum()
                nb_patches_w = p_attn_mask[0].sum()
                fractional_coords_h = torch.arange(0, 1 - 1e-6, 1 / nb_patches_h)
                fractional_coords_w = torch.arange(0, 1 - 1e-6, 1 / nb_patches_w)
                bucket_coords_h = torch.bucketize(fractional_coords_h, boundaries, right=True)
                bucket_coords_w = torch.bucketize(fractional_coords_w, boundaries, right=True)
                pos_ids = (bucket_coords_h[:, None] * side + bucket_coords_w).flatten()
                position_ids[batch_idx][p_attn_mask.view(-1)] = pos_ids
                del nb_patches_h, nb_patches_w, fractional_coords_h, fractional_coords_w, bucket_coords_h
                del bucket_coords_w, pos_ids, p_attn_mask
            embeddings = embeddings + self.embeddings.position_embedding(position_ids)
            del patch_embeds, position_ids, boundaries
            hidden_states = embeddings
            del embeddings
            patch_attention_mask = patch_attention_mask.view(batch_size, -1)
            if not torch.any(~patch_attention_mask):
                patch_attention_mask = None
            else:
                raise ValueError("idefics3_replica.py: padded frames are not replicated")
            hidden_states = siglip_replica.encoder(self.encoder.layers, hidden_states, False)
            return self.post_layernorm(hidden_states)

    class Connector(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.modality_projection = torch.nn.Module()
            self.modality_projection.proj = vctorch._Linear2x(C * sf * sf, H, bias=False)

        def forward(self, x):  # MS SmolVLMConnector.forward, pixel_shuffle
            bsz, seq, embed_dim = x.size()
            height = width = int(seq ** 0.5)
            x = x.view(bsz, height, width, embed_dim)
            x = x.view(bsz, height, int(width / sf), embed_dim * sf)
            x = x.permute(0, 2, 1, 3)
            x = x.reshape(bsz, int(width / sf), int(height / sf), embed_dim * (sf ** 2))
            x = x.permute(0, 2, 1, 3)
            x = x.reshape(bsz, int(seq / (sf ** 2)), embed_dim * (sf ** 2))
            return self.modality_projection.proj(x)

    def get_image_features(pixel_values):  # MS SmolVLMModel.get_image_features, pixel_attention_mask None
        batch_size, num_images, num_channels, height, width = pixel_values.shape
        pixel_values = pixel_values.view(batch_size * num_images, *pixel_values.shape[2:])
        nb_values_per_image = pixel_values.shape[1:].numel()
        real_images_inds = (pixel_values == 0.0).sum(dim=(-1, -2, -3)) != nb_values_per_image
        if not any(real_images_inds):
            real_images_inds[0] = True
        pixel_values = pixel_values[real_images_inds].contiguous()
        pixel_attention_mask = torch.ones(size=[pixel_values.shape[i] for i in (0, 2, 3)], dtype=torch.bool)
        patches_subgrid = pixel_attention_mask.unfold(dimension=1, size=P, step=P)
        patches_subgrid = patches_subgrid.unfold(dimension=2, size=P, step=P)
        patch_attention_mask = (patches_subgrid.sum(dim=(-1, -2)) > 0).bool()
        del patches_subgrid, pixel_attention_mask, real_images_inds
        image_hidden_states = model.vision_model(pixel_values=pixel_values, patch_attention_mask=patch_attention_mask)
        del pixel_values, patch_attention_mask
        return model.connector(image_hidden_states)

    def inputs_merger(input_ids, inputs_embeds, image_hidden_states):  # MS SmolVLMModel.inputs_merger
        _, patch_size, _ = image_hidden_states.shape
        image_mask = input_ids == tid
        num_image_tokens = image_mask.sum(dim=1)
        if not torch.all(num_image_tokens % patch_size == 0):
            raise ValueError("At least one sample has <image> tokens not divisible by patch_size.")
        blocks_per_sample = num_image_tokens // patch_size
        offsets = torch.nn.functional.pad(blocks_per_sample.cumsum(dim=0), (1, 0), value=0)
        block_offset = offsets[:-1]
        row_cum = image_mask.cumsum(dim=-1)
        chunk_idx = (row_cum - 1) // patch_size
        local_idx = (row_cum - 1) % patch_size
        block_idx = block_offset.unsqueeze(1) + chunk_idx
        del num_image_tokens, blocks_per_sample, offsets, block_offset, row_cum, chunk_idx
        image_embeds = torch.zeros_like(inputs_embeds)
        image_embeds[image_mask] = image_hidden_states[block_idx[image_mask], local_idx[image_mask], :]
        del block_idx, local_idx
        merged_embeds = torch.where(image_mask.unsqueeze(-1), image_embeds, inputs_embeds)
        return merged_embeds

    class Embed(torch.nn.Module):
        """MS SmolVLMModel.forward up to text_model: inputs_embeds = embed_tokens(input_ids); pixel_values ->
        get_image_features; image_hidden_states (from the prefill, generate) -> inputs_merger; image_hidden_states
        kept to the forward's return (its output)."""

        def __init__(self, emb):
            super().__init__()
            self.emb = emb
            self.weight = emb.weight
            self.pixel_values = self.image_hidden_states = None
            self.keep = None
            self.generating = False  # measure_llm.py's generate: the prefill's image_hidden_states kept

        def forward(self, input_ids):
            inputs_embeds = self.emb(input_ids)
            image_hidden_states = None
            if self.pixel_values is not None:
                image_hidden_states = get_image_features(self.pixel_values)
            elif self.image_hidden_states is not None:
                image_hidden_states = self.image_hidden_states
            if image_hidden_states is None:
                return inputs_embeds
            inputs_embeds = inputs_merger(input_ids, inputs_embeds, image_hidden_states)
            self.keep = image_hidden_states
            if self.generating:  # _update_model_kwargs_for_generation: outputs.image_hidden_states for the next steps
                self.image_hidden_states = image_hidden_states
            return inputs_embeds

    model.vision_model = Vision()
    model.connector = Connector()
    model.embed_tokens = Embed(model.embed_tokens)
    return R.frozen_image_parts(model, model.vision_model, model.connector)


def counts(path):
    from check_params import MetaMode
    with MetaMode():
        m = build(R.Config(flatten(json.load(open(path)))))
    total = sum(p.numel() for p in m.parameters())
    unrun = sum(p.numel() for n in ("vision_model", "connector") for p in getattr(m, n).parameters())
    return {"ForConditionalGeneration": total, "run on text": total - unrun}


def check():
    """tests/test_fam_smolvlm.c's totals, from the modules above on the meta device."""
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    want = {"smolvlm-256m-instruct.json": 256484928, "smolvlm2-2.2b-instruct.json": 2246784880}
    for name, n in want.items():
        c = counts(os.path.join(root, "tests", "data", "hf", name))
        print(name, json.dumps(c))
        assert c["ForConditionalGeneration"] == n, (name, c)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        sys.exit(check())
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(p)))
