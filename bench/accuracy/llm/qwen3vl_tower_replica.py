"""qwen3vl_tower_replica.py -- the Qwen3.5 / Qwen3-VL vision tower run on images, written from the transformers
source (issue 31 item 4), measured by measure_llm.py --image.

Sources read (huggingface/transformers):
  QVL = models/qwen3_vl/modeling_qwen3_vl.py @68a7b7e272a36928120316249af3ee3cac595818 (the classes
        Qwen3_5VisionModel inherits; the same code at 00709b862bb8f14a5435bb7195592579168496e4):
    - Qwen3VLVisionPatchEmbed.forward: view(-1, C, T, P, P), proj (Conv3d, kernel = stride, bias) on
      .to(proj.weight.dtype), view(-1, hidden);
    - Qwen3VLVisionRotaryEmbedding(head_dim // 2): outer(arange(seqlen) float32, inv_freq);
    - Qwen3VLVisionModel.rot_pos_emb: freq_table(max_hw), pos_ids = torch.empty((total, 2), long) filled
      per image (block rows / cols in merge order), freq_table[pos_ids].flatten(1);
    - Qwen3VLVisionModel.fast_pos_embed_interpolate: linspace grids, the four corners' indices and
      weights as Python lists, torch.tensor of each ([4, n] long, [4, n] pos_embed's dtype),
      pos_embed(idx) * weight[:, :, None], the sum of the four, split per image, repeat(t, 1),
      view(t, h/m, m, w/m, m, -1).permute(0, 1, 3, 2, 4, 5).flatten(0, 4), cat;
    - Qwen3VLVisionAttention.forward (sdpa): qkv(x).reshape(n, 3, heads, -1).permute(1, 0, 2, 3).unbind(0),
      apply_rotary_pos_emb_vision (q.float(), k.float(), cos/sin.unsqueeze(-2).float(), rotate_half,
      .to(orig dtype)), transpose(0, 1).unsqueeze(0), torch.split per cu_seqlens length, one
      sdpa_attention_forward per image (integrations/sdpa_attention.py: F.scaled_dot_product_attention(q,
      k, v, attn_mask=None, dropout_p=0, scale=head_dim**-0.5, is_causal=False), then
      .transpose(1, 2).contiguous()), torch.cat(attn_outputs, dim=1), reshape(n, -1).contiguous(), proj;
    - Qwen3VLVisionBlock: x + attn(norm1(x)), x + mlp(norm2(x)) (nn.LayerNorm(hidden, eps=1e-6);
      Qwen3VLVisionMLP: linear_fc2(act(linear_fc1(x))));
    - Qwen3VLVisionPatchMerger: norm(x.view(-1, 4 hidden) if use_postshuffle_norm else x).view(-1, 4 hidden),
      linear_fc2(GELU(linear_fc1(x)));
    - Qwen3VLVisionModel.forward: patch_embed, + fast_pos_embed_interpolate, rot_pos_emb, emb = cat((r, r), -1),
      (emb.cos(), emb.sin()), cu_seqlens, the blocks (a deepstack merger after each block of
      deepstack_visual_indexes), merger.
  Q35 = models/qwen3_5/modular_qwen3_5.py @8940358af7421e958995b05136ca14ce54bef39c:
    - Qwen3_5VisionModel: Qwen3VLVisionModel less deepstack; returns BaseModelOutputWithPooling(
      last_hidden_state=hidden_states, pooler_output=merged_hidden_states);
    - Qwen3_5Model.get_image_features: pixel_values.type(self.visual.dtype) (a local), visual(...),
      pooler_output = torch.split(pooler_output, split_sizes);
    - Qwen3_5Model.forward: inputs_embeds = embed_tokens(input_ids); image_outputs = get_image_features
      (a local until the return); image_embeds = torch.cat(pooler_output).to(dtype); get_placeholder_mask
      (input_ids == image_token_id, unsqueeze(-1).expand_as, the check inputs_embeds[mask].numel());
      inputs_embeds.masked_scatter(image_mask, image_embeds); position_ids = compute_3d_position_ids
      (get_rope_index: [3, B, L] int64); language_model(...); return.
  Qwen2VLImageProcessor (image_processing_qwen2_vl.py @cb0fc56f) smart_resize with the Qwen3.5 / Qwen3-VL
  checkpoints' preprocessor_config.json: size {"shortest_edge": 65536, "longest_edge": 16777216}, factor
  patch_size 16 x merge_size 2; pixel_values [patches, C * T * P * P] float32, image_grid_thw [1, h/P, w/P].
"""

import torch
import torch.nn as nn

import vctorch
import reference as R


def smart_resize(height, width, factor=32, min_pixels=65536, max_pixels=16777216):
    """image_processing_qwen2_vl.py's smart_resize (qwen25vl_replica.py) with the Qwen3.5 / Qwen3-VL
    checkpoints' shortest_edge / longest_edge."""
    import qwen25vl_replica
    return qwen25vl_replica.smart_resize(height, width, factor, min_pixels, max_pixels)


def vision_keys(v):
    g = lambda k, d: d if v.get(k) is None else v[k]  # noqa: E731
    return dict(depth=g("depth", 27), C=g("hidden_size", 1152), I=g("intermediate_size", 4304), NH=g("num_heads", 16),
                cin=g("in_channels", 3), P=g("patch_size", 16), M=g("spatial_merge_size", 2),
                T=g("temporal_patch_size", 2), out=g("out_hidden_size", 3584), npos=g("num_position_embeddings", 2304),
                act=g("hidden_act", "gelu_pytorch_tanh"), deep=list(g("deepstack_visual_indexes", [])))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb_vision(q, k, cos, sin):
    orig_q_dtype, orig_k_dtype = q.dtype, k.dtype
    q, k = q.float(), k.float()
    cos, sin = cos.unsqueeze(-2).float(), sin.unsqueeze(-2).float()
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    q_embed = q_embed.to(orig_q_dtype)
    k_embed = k_embed.to(orig_k_dtype)
    return q_embed, k_embed


class VisionAttention(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.num_heads, self.head_dim = NH, C // NH
        self.qkv = R.Linear(C, 3 * C, bias=True)
        self.proj = R.Linear(C, C)
        self.scaling = self.head_dim ** -0.5

    def forward(self, hidden_states, cu_seqlens, position_embeddings):
        seq_length = hidden_states.shape[0]
        query_states, key_states, value_states = (
            self.qkv(hidden_states).reshape(seq_length, 3, self.num_heads, -1).permute(1, 0, 2, 3).unbind(0))
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb_vision(query_states, key_states, cos, sin)
        query_states = query_states.transpose(0, 1).unsqueeze(0)
        key_states = key_states.transpose(0, 1).unsqueeze(0)
        value_states = value_states.transpose(0, 1).unsqueeze(0)
        lengths = cu_seqlens[1:] - cu_seqlens[:-1]
        splits = [torch.split(t, lengths.tolist(), dim=2) for t in (query_states, key_states, value_states)]
        attn_outputs = [
            vctorch._sdpa_math_2x(q, k, v, attn_mask=None, dropout_p=0.0, scale=self.scaling,
                                  is_causal=False).transpose(1, 2).contiguous()
            for q, k, v in zip(*splits)]
        attn_output = torch.cat(attn_outputs, dim=1)
        attn_output = attn_output.reshape(seq_length, -1).contiguous()
        attn_output = self.proj(attn_output)
        return attn_output


class MLP(nn.Module):
    def __init__(self, C, I, act):
        super().__init__()
        self.linear_fc1 = R.Linear(C, I, bias=True)
        self.linear_fc2 = R.Linear(I, C, bias=True)
        self.act_fn = R.act_fn(act)

    def forward(self, x):
        return self.linear_fc2(self.act_fn(self.linear_fc1(x)))


class Block(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.norm1 = vctorch._LayerNorm2x(k["C"], eps=1e-6)
        self.norm2 = vctorch._LayerNorm2x(k["C"], eps=1e-6)
        self.attn = VisionAttention(k["C"], k["NH"])
        self.mlp = MLP(k["C"], k["I"], k["act"])

    def forward(self, hidden_states, cu_seqlens, position_embeddings):
        hidden_states = hidden_states + self.attn(self.norm1(hidden_states), cu_seqlens, position_embeddings)
        hidden_states = hidden_states + self.mlp(self.norm2(hidden_states))
        return hidden_states


class PatchMerger(nn.Module):
    def __init__(self, k, use_postshuffle_norm=False):
        super().__init__()
        self.hidden_size = k["C"] * k["M"] ** 2
        self.use_postshuffle_norm = use_postshuffle_norm
        self.norm = vctorch._LayerNorm2x(self.hidden_size if use_postshuffle_norm else k["C"], eps=1e-6)
        self.linear_fc1 = R.Linear(self.hidden_size, self.hidden_size)
        self.act_fn = nn.GELU()
        self.linear_fc2 = R.Linear(self.hidden_size, k["out"])

    def forward(self, x):
        x = self.norm(x.view(-1, self.hidden_size) if self.use_postshuffle_norm else x).view(-1, self.hidden_size)
        return self.linear_fc2(self.act_fn(self.linear_fc1(x)))


class VisionModel(nn.Module):
    """QVL Qwen3VLVisionModel (deepstack=True) or Q35 Qwen3_5VisionModel (deepstack=False)."""

    def __init__(self, v, deepstack):
        super().__init__()
        k = self.k = vision_keys(v)
        C = k["C"]
        self.spatial_merge_size = k["M"]
        self.patch_embed = nn.Module()
        kern = (k["T"], k["P"], k["P"])
        self.patch_embed.proj = nn.Conv3d(k["cin"], C, kernel_size=kern, stride=kern, bias=True)
        self.pos_embed = nn.Embedding(k["npos"], C)
        self.num_grid_per_side = int(k["npos"] ** 0.5)
        dim = (C // k["NH"]) // 2
        self.rotary_pos_emb = nn.Module()
        self.rotary_pos_emb.register_buffer(
            "inv_freq", 1.0 / (10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)), persistent=False)
        self.blocks = nn.ModuleList(Block(k) for _ in range(k["depth"]))
        self.merger = PatchMerger(k, False)
        self.deepstack_visual_indexes = k["deep"] if deepstack else []
        if deepstack:
            self.deepstack_merger_list = nn.ModuleList(PatchMerger(k, True) for _ in k["deep"])
        self.requires_grad_(False)

    def rot_pos_emb(self, grid_thw):
        m = self.spatial_merge_size
        max_hw = int(grid_thw[:, 1:].max().item())
        seq = torch.arange(max_hw, dtype=self.rotary_pos_emb.inv_freq.dtype)
        freq_table = torch.outer(seq, self.rotary_pos_emb.inv_freq)
        total_tokens = int(torch.prod(grid_thw, dim=1).sum().item())
        pos_ids = torch.empty((total_tokens, 2), dtype=torch.long)
        offset = 0
        for num_frames, height, width in grid_thw:
            mh, mw = height // m, width // m
            block_rows, block_cols = torch.arange(mh), torch.arange(mw)
            intra_row, intra_col = torch.arange(m), torch.arange(m)
            row_idx = block_rows[:, None, None, None] * m + intra_row[None, None, :, None]
            col_idx = block_cols[None, :, None, None] * m + intra_col[None, None, None, :]
            row_idx = row_idx.expand(mh, mw, m, m).reshape(-1)
            col_idx = col_idx.expand(mh, mw, m, m).reshape(-1)
            coords = torch.stack((row_idx, col_idx), dim=-1)
            if num_frames > 1:
                coords = coords.repeat(num_frames, 1)
            num_tokens = coords.shape[0]
            pos_ids[offset: offset + num_tokens] = coords
            offset += num_tokens
        embeddings = freq_table[pos_ids]
        return embeddings.flatten(1)

    def fast_pos_embed_interpolate(self, grid_thw):
        grid_ts, grid_hs, grid_ws = grid_thw[:, 0], grid_thw[:, 1], grid_thw[:, 2]
        g = self.num_grid_per_side
        idx_list = [[] for _ in range(4)]
        weight_list = [[] for _ in range(4)]
        for t, h, w in zip(grid_ts, grid_hs, grid_ws):
            h_idxs = torch.linspace(0, g - 1, h)
            w_idxs = torch.linspace(0, g - 1, w)
            h_idxs_floor, w_idxs_floor = h_idxs.int(), w_idxs.int()
            h_idxs_ceil = (h_idxs.int() + 1).clip(max=g - 1)
            w_idxs_ceil = (w_idxs.int() + 1).clip(max=g - 1)
            dh, dw = h_idxs - h_idxs_floor, w_idxs - w_idxs_floor
            base_h, base_h_ceil = h_idxs_floor * g, h_idxs_ceil * g
            indices = [(base_h[None].T + w_idxs_floor[None]).flatten(), (base_h[None].T + w_idxs_ceil[None]).flatten(),
                       (base_h_ceil[None].T + w_idxs_floor[None]).flatten(),
                       (base_h_ceil[None].T + w_idxs_ceil[None]).flatten()]
            weights = [((1 - dh)[None].T * (1 - dw)[None]).flatten(), ((1 - dh)[None].T * dw[None]).flatten(),
                       (dh[None].T * (1 - dw)[None]).flatten(), (dh[None].T * dw[None]).flatten()]
            for i in range(4):
                idx_list[i].extend(indices[i].tolist())
                weight_list[i].extend(weights[i].tolist())
        idx_tensor = torch.tensor(idx_list, dtype=torch.long)
        weight_tensor = torch.tensor(weight_list, dtype=self.pos_embed.weight.dtype)
        pos_embeds = self.pos_embed(idx_tensor) * weight_tensor[:, :, None]
        patch_pos_embeds = pos_embeds[0] + pos_embeds[1] + pos_embeds[2] + pos_embeds[3]
        patch_pos_embeds = patch_pos_embeds.split([int(h * w) for h, w in zip(grid_hs, grid_ws)])
        patch_pos_embeds_permute = []
        m = self.spatial_merge_size
        for pos_embed, t, h, w in zip(patch_pos_embeds, grid_ts, grid_hs, grid_ws):
            t, h, w = int(t), int(h), int(w)
            pos_embed = pos_embed.repeat(t, 1)
            pos_embed = pos_embed.view(t, h // m, m, w // m, m, -1).permute(0, 1, 3, 2, 4, 5).flatten(0, 4)
            patch_pos_embeds_permute.append(pos_embed)
        patch_pos_embeds = torch.cat(patch_pos_embeds_permute)
        return patch_pos_embeds

    def forward(self, hidden_states, grid_thw):
        k = self.k
        input_dtype = hidden_states.dtype
        x = hidden_states.view(-1, k["cin"], k["T"], k["P"], k["P"])
        hidden_states = self.patch_embed.proj(x.to(dtype=self.patch_embed.proj.weight.dtype)).view(-1, k["C"])
        del x
        pos_embeds = self.fast_pos_embed_interpolate(grid_thw)
        hidden_states = hidden_states + pos_embeds
        if self.deepstack_visual_indexes:  # QVL: (hidden_states + pos_embeds).to(input_dtype)
            hidden_states = hidden_states.to(input_dtype)
        rotary_pos_emb = self.rot_pos_emb(grid_thw)
        seq_len, _ = hidden_states.size()
        hidden_states = hidden_states.reshape(seq_len, -1)
        rotary_pos_emb = rotary_pos_emb.reshape(seq_len, -1)
        emb = torch.cat((rotary_pos_emb, rotary_pos_emb), dim=-1)
        position_embeddings = (emb.cos(), emb.sin())
        cu_seqlens = torch.repeat_interleave(grid_thw[:, 1] * grid_thw[:, 2], grid_thw[:, 0]).cumsum(dim=0, dtype=torch.int32)
        cu_seqlens = torch.nn.functional.pad(cu_seqlens, (1, 0), value=0)
        deepstack_feature_lists = []
        for layer_num, blk in enumerate(self.blocks):
            hidden_states = blk(hidden_states, cu_seqlens, position_embeddings)
            if layer_num in self.deepstack_visual_indexes:
                deepstack_feature_lists.append(
                    self.deepstack_merger_list[self.deepstack_visual_indexes.index(layer_num)](hidden_states))
        merged = self.merger(hidden_states)
        return hidden_states, merged, deepstack_feature_lists


def get_rope_index(input_ids, grid_thw_list, image_token_id, m):
    """Qwen3VLModel.get_rope_index (QVL @00709b86) for images before the text, no attention mask:
    position_ids = torch.ones(3, B, L, long); per sample the image tokens' (t, h, w) grid positions,
    then the text's arange, cat, written into position_ids."""
    attention_mask = torch.ones_like(input_ids)
    position_ids = torch.ones(3, input_ids.shape[0], input_ids.shape[1], dtype=input_ids.dtype)
    for i in range(input_ids.shape[0]):
        ids = input_ids[i][attention_mask[i] == 1]
        llm_pos_ids_list, st_idx = [], 0
        for (t, h, w) in grid_thw_list[i]:
            gh, gw = h // m, w // m
            t_index = torch.arange(t).view(-1, 1).expand(-1, gh * gw).flatten()
            h_index = torch.arange(gh).view(1, -1, 1).expand(t, -1, gw).flatten()
            w_index = torch.arange(gw).view(1, 1, -1).expand(t, gh, -1).flatten()
            llm_pos_ids_list.append(torch.stack([t_index, h_index, w_index]) + st_idx)
            st_idx = llm_pos_ids_list[-1].max() + 1
        n_img = sum(t * (h // m) * (w // m) for t, h, w in grid_thw_list[i])
        text_len = ids.shape[0] - n_img
        llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
        llm_positions = torch.cat(llm_pos_ids_list, dim=1).reshape(3, -1)
        position_ids[..., i, attention_mask[i] == 1] = llm_positions
    return position_ids


class Embed(nn.Module):
    """Q35 Qwen3_5Model.forward up to the language model, as the embedding step of reference.py's CausalLM:
    what that forward keeps to its return is stashed and dropped when the final norm (the language
    model's last module) has run, as Qwen3_5Model.forward returns before lm_head and the loss."""

    def __init__(self, emb, visual, image_token_id):
        super().__init__()
        self.emb = emb
        self.visual = [visual]
        self.weight = emb.weight
        self.image_token_id = image_token_id
        self.pixel_values = self.grid_thw = None
        self.stash = None

    def forward(self, input_ids):
        inputs_embeds = self.emb(input_ids)
        if self.pixel_values is None:
            return inputs_embeds
        vis = self.visual[0]
        pv = self.pixel_values.type(vis.patch_embed.proj.weight.dtype)  # get_image_features' local
        last, merged, deep = vis(pv, self.grid_thw)
        del pv
        split_sizes = (self.grid_thw.prod(-1) // vis.spatial_merge_size ** 2).tolist()
        pooler = torch.split(merged, split_sizes)
        image_embeds = torch.cat(pooler, dim=0).to(inputs_embeds.dtype)
        special_image_mask = input_ids == self.image_token_id
        special_image_mask = special_image_mask.unsqueeze(-1).expand_as(inputs_embeds)
        if inputs_embeds[special_image_mask].numel() != image_embeds.numel():
            raise ValueError("image features and image tokens do not match")
        inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_embeds)
        per = self.grid_thw.shape[0] // input_ids.shape[0]
        grids = [[tuple(int(x) for x in g) for g in self.grid_thw[i * per:(i + 1) * per]] for i in range(input_ids.shape[0])]
        position_ids = get_rope_index(input_ids, grids, self.image_token_id, vis.spatial_merge_size)
        self.stash = [last, merged, pooler, image_embeds, special_image_mask, position_ids, deep]
        return inputs_embeds


def build_qwen3_5(cfg, attn_impl=None):
    model = R.CausalLM(cfg, attn_impl)
    model.visual = VisionModel(cfg.d.get("vision_config") or {}, deepstack=False)
    emb = model.embed_tokens
    model.embed_tokens = Embed(emb, model.visual, cfg.d["image_token_id"])

    def drop(*_):
        model.embed_tokens.stash = None
    model.norm.register_forward_hook(drop)
    return model


def deepstack_process(hidden_states, visual_pos_masks, visual_embeds):
    """QVL Qwen3VLTextModel._deepstack_process @00709b86."""
    visual_pos_masks = visual_pos_masks.to(hidden_states.device)
    visual_embeds = visual_embeds.to(hidden_states.device, hidden_states.dtype)
    hidden_states = hidden_states.clone()
    local_this = hidden_states[visual_pos_masks, :] + visual_embeds
    hidden_states[visual_pos_masks, :] = local_this
    return hidden_states


class EmbedVL(Embed):
    """QVL Qwen3VLModel.forward @00709b86 up to the language model: get_image_features (pixel_values.type,
    a local; visual returns the merger's output and the deepstack list; torch.split), image_embeds =
    torch.cat(...).to(dtype) rebinding the name (the split views and the merger's output die),
    get_placeholder_mask, masked_scatter, visual_pos_masks = image_mask[..., 0], deepstack_visual_embeds,
    get_rope_index's [3, B, L] positions: kept until the forward returns (stash, dropped after the final
    norm as in Embed)."""

    def forward(self, input_ids):
        inputs_embeds = self.emb(input_ids)
        if self.pixel_values is None:
            return inputs_embeds
        vis = self.visual[0]
        pv = self.pixel_values.type(vis.patch_embed.proj.weight.dtype)  # get_image_features' local
        last, merged, deep = vis(pv, self.grid_thw)
        del pv, last  # Qwen3VLVisionModel.forward returns (hidden_states after the merger, deepstack_feature_lists)
        split_sizes = (self.grid_thw.prod(-1) // vis.spatial_merge_size ** 2).tolist()
        image_embeds = torch.split(merged, split_sizes)
        del merged
        image_embeds = torch.cat(image_embeds, dim=0).to(inputs_embeds.dtype)
        special_image_mask = input_ids == self.image_token_id
        special_image_mask = special_image_mask.unsqueeze(-1).expand_as(inputs_embeds)
        if inputs_embeds[special_image_mask].numel() != image_embeds.numel():
            raise ValueError("image features and image tokens do not match")
        inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_embeds)
        visual_pos_masks = special_image_mask[..., 0]
        per = self.grid_thw.shape[0] // input_ids.shape[0]
        grids = [[tuple(int(x) for x in g) for g in self.grid_thw[i * per:(i + 1) * per]] for i in range(input_ids.shape[0])]
        position_ids = get_rope_index(input_ids, grids, self.image_token_id, vis.spatial_merge_size)
        self.stash = [image_embeds, special_image_mask, visual_pos_masks, position_ids, deep]
        return inputs_embeds


def build_qwen3_vl(cfg, attn_impl=None):
    """Qwen3VLForConditionalGeneration at small width (qwen3vl_replica.build: Qwen3's language model with
    MRoPE), its tower run on images (VisionModel with the deepstack mergers, frozen) and
    Qwen3VLTextModel.forward's deepstack: after decoder layer k < len(deepstack_visual_embeds),
    _deepstack_process; the loop's layer_outputs keeps each layer's own output until the next layer
    returns (model._layer_outputs)."""
    import qwen3vl_replica
    model = qwen3vl_replica.build(cfg, attn_impl)
    model.visual = VisionModel(cfg.d.get("vision_config") or {}, deepstack=True)
    emb = model.embed_tokens
    model.embed_tokens = EmbedVL(emb, model.visual, cfg.d["image_token_id"])
    index = {id(m): i for i, m in enumerate(model.layers)}
    inner = model._layer
    model._layer_outputs = None

    def _layer(layer, *args):
        out = inner(layer, *args)
        model._layer_outputs = out  # layer_outputs = decoder_layer(...): the previous layer's output dies now
        st = model.embed_tokens.stash
        i = index[id(layer)]
        if st is not None and i < len(st[4]):
            out = deepstack_process(out, st[2], st[4][i])
        return out
    model._layer = _layer

    def drop(*_):
        model.embed_tokens.stash = None
        model._layer_outputs = None
    model.norm.register_forward_hook(drop)
    return model
