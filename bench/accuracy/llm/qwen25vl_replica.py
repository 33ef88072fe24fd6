"""Qwen2.5-VL's vision tower and patch merger, and the exact parameter counts of the Qwen2.5-VL
checkpoints, written from the transformers source (issue 31 item 4).

Source: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e,
src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py:
  Qwen2_5_VisionPatchEmbed     proj = nn.Conv3d(in_channels, embed_dim, kernel_size=[temporal_patch_size,
                               patch_size, patch_size], stride=kernel_size, bias=False); forward: view(-1, C, T,
                               P, P), proj(x.to(weight dtype)).view(-1, embed_dim)
  Qwen2RMSNorm                 weight [hidden], eps 1e-6 in the tower
  Qwen2_5_VLVisionSdpaAttention qkv = Linear(dim, 3 dim, bias=True), proj = Linear(dim, dim); rotary in float32
                               (apply_rotary_pos_emb_vision), a [1, n, n] bool block mask, F.scaled_dot_product_attention
  Qwen2_5_VLMLP(bias=True)     gate_proj / up_proj [I, dim], down_proj [dim, I], all with biases
  Qwen2_5_VLVisionBlock        x + attn(norm1(x)); x + mlp(norm2(x))
  Qwen2_5_VLPatchMerger        ln_q = Qwen2RMSNorm(context_dim), mlp = Sequential(Linear(4 dim, 4 dim), GELU(),
                               Linear(4 dim, out_hidden_size))
  Qwen2_5_VisionTransformerPretrainedModel: patch_embed, rotary_pos_emb (a buffer only), blocks x depth, merger
  Qwen2_5_VLModel / ForConditionalGeneration: the language model is Qwen2's (q/k/v with biases, o without;
                               lm_head tied as tie_word_embeddings says)
configuration_qwen2_5_vl.py @ aa0dc95c (Qwen2_5_VLVisionConfig defaults: depth 32, hidden_size (embed width),
intermediate_size 3420, num_heads 16, in_channels 3, patch_size 14, spatial_merge_size 2, temporal_patch_size 2,
window_size 112, out_hidden_size 3584, fullatt_block_indexes [7, 15, 23, 31]); config.json files name the
tower's width hidden_size (1280) and carry in_chans, which the class ignores (in_channels stays 3).

Qwen2-VL (model_type qwen2_vl), the same file's build() and counts with what differs, read at
huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e, src/transformers/models/qwen2_vl/modeling_qwen2_vl.py:
  PatchEmbed                   the same Conv3d (bias=False) over view(-1, C, T, P, P), embed_dim wide
  Qwen2VLVisionBlock           norm1 / norm2 = nn.LayerNorm(embed_dim, eps=1e-6) (weight and bias);
                               attn = VisionSdpaAttention (qkv Linear(dim, 3 dim, bias), apply_rotary_pos_emb_vision
                               in float32, a [1, n, n] bool mask True within each image's cu_seqlens block,
                               F.scaled_dot_product_attention, proj); mlp = VisionMlp(dim, int(embed_dim * mlp_ratio),
                               hidden_act): fc2(act(fc1(x))), fc1 / fc2 with biases; x + attn(norm1(x)), x + mlp(norm2(x))
  PatchMerger                  ln_q = nn.LayerNorm(context_dim=embed_dim, eps=1e-6), mlp = Sequential(Linear(4 dim,
                               4 dim), GELU(), Linear(4 dim, hidden_size))
  Qwen2VisionTransformerPretrainedModel.forward: patch_embed, rot_pos_emb, emb = cat, (cos, sin), cu_seqlens of every
                               image, every block over cu_seqlens (no window index, no reordering), merger
  Qwen2VLForConditionalGeneration.forward: inputs_embeds = embed_tokens(input_ids); pixel_values.type(
                               visual.get_dtype()); visual(...); masked_scatter (as Qwen2.5-VL's)
configuration_qwen2_vl.py @ 018c8e03 Qwen2VLVisionConfig defaults: depth 32, embed_dim 1280, hidden_size 3584 (the
merger's output), hidden_act quick_gelu (ACT2FN's QuickGELUActivation: input * torch.sigmoid(1.702 * input)),
mlp_ratio 4, num_heads 16, in_channels 3, patch_size 14, spatial_merge_size 2, temporal_patch_size 2.

python3 qwen25vl_replica.py prints the counts; `--check` asserts the figures tests/test_hf.c and
tests/test_fam_qwen2_vl.c use.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def vision_keys(v, qwen2=False):
    g = lambda k, d: v[k] if v.get(k) is not None else d  # noqa: E731  (Qwen2_5_VLVisionConfig defaults)
    if qwen2:  # Qwen2VLVisionConfig: embed_dim the blocks' width, hidden_size the merger's output
        C = g("embed_dim", 1280)
        return dict(depth=g("depth", 32), C=C, I=int(C * g("mlp_ratio", 4)), NH=g("num_heads", 16),
                    cin=g("in_channels", 3), P=g("patch_size", 14), M=g("spatial_merge_size", 2),
                    T=g("temporal_patch_size", 2), out=g("hidden_size", 3584), act=g("hidden_act", "quick_gelu"))
    return dict(depth=g("depth", 32), C=g("hidden_size", 3584), I=g("intermediate_size", 3420), NH=g("num_heads", 16),
                cin=g("in_channels", 3), P=g("patch_size", 14), M=g("spatial_merge_size", 2),
                T=g("temporal_patch_size", 2), out=g("out_hidden_size", 3584), window=g("window_size", 112),
                act=g("hidden_act", "silu"))


def vision_count(v, qwen2=False):
    """named_parameters() of Qwen2_5_VisionTransformerPretrainedModel (or Qwen2-VL's
    Qwen2VisionTransformerPretrainedModel: LayerNorms with biases, the fc1 / fc2 MLP), by module."""
    k = vision_keys(v, qwen2)
    C, I = k["C"], k["I"]
    patch = C * k["cin"] * k["T"] * k["P"] * k["P"]
    if qwen2:
        block = 4 * C + (3 * C * C + 3 * C) + (C * C + C) + (I * C + I) + (C * I + C)
    else:
        block = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * (I * C + I) + (C * I + C)
    H4 = C * k["M"] ** 2
    merger = (2 if qwen2 else 1) * C + H4 * H4 + H4 + H4 * k["out"] + k["out"]
    return patch + k["depth"] * block + merger


def text_count(c):
    """Qwen2's decoder (Qwen2_5_VLModel's language model) and lm_head."""
    H, N, NH, KV, I, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"],
                          c["intermediate_size"], c["vocab_size"])
    D = H // NH
    attn = H * NH * D + NH * D + 2 * (H * KV * D + KV * D) + NH * D * H
    layer = attn + 3 * H * I + 2 * H
    return V * H + N * layer + H + (0 if c.get("tie_word_embeddings") else V * H)


def meta_count(c):
    """The same count from torch modules built as the source builds them (device='meta': no memory)."""
    import torch
    from torch import nn
    q2 = c["model_type"] == "qwen2_vl"
    k = vision_keys(c["vision_config"], q2)
    C, I = k["C"], k["I"]
    dev = "meta"
    n = 0
    n += sum(p.numel() for p in nn.Conv3d(k["cin"], C, (k["T"], k["P"], k["P"]), stride=(k["T"], k["P"], k["P"]),
                                          bias=False, device=dev).parameters())
    if q2:  # Qwen2VLVisionBlock: nn.LayerNorm norms, VisionMlp fc1 / fc2
        blk = nn.ModuleDict(dict(norm1=nn.LayerNorm(C, device=dev), norm2=nn.LayerNorm(C, device=dev),
                                 qkv=nn.Linear(C, 3 * C, device=dev), proj=nn.Linear(C, C, device=dev),
                                 fc1=nn.Linear(C, I, device=dev), fc2=nn.Linear(I, C, device=dev)))
        n += k["depth"] * sum(p.numel() for p in blk.parameters())
        H4 = C * k["M"] ** 2
        n += sum(p.numel() for p in nn.Sequential(nn.LayerNorm(C, device=dev), nn.Linear(H4, H4, device=dev), nn.GELU(),
                                                  nn.Linear(H4, k["out"], device=dev)).parameters())
        return n
    blk = nn.ModuleDict(dict(norm1=nn.Linear(1, C, bias=False, device=dev),  # Qwen2RMSNorm: a weight of C (as [C, 1] here)
                             norm2=nn.Linear(1, C, bias=False, device=dev),
                             qkv=nn.Linear(C, 3 * C, device=dev), proj=nn.Linear(C, C, device=dev),
                             gate=nn.Linear(C, I, device=dev), up=nn.Linear(C, I, device=dev), down=nn.Linear(I, C, device=dev)))
    n += k["depth"] * sum(p.numel() for p in blk.parameters())
    H4 = C * k["M"] ** 2
    n += C + sum(p.numel() for p in nn.Sequential(nn.Linear(H4, H4, device=dev), nn.GELU(),
                                                  nn.Linear(H4, k["out"], device=dev)).parameters())
    del torch
    return n


# --------------------------------------------------------------------------
# the reference modules (torch 1.13, CPU; measured by measure_llm.py --image)
# --------------------------------------------------------------------------

def smart_resize(height, width, factor=28, min_pixels=3136, max_pixels=12845056):
    """image_processing_qwen2_vl.py @ cb0fc56f smart_resize, with the Qwen2.5-VL checkpoints'
    preprocessor_config.json min_pixels / max_pixels."""
    import math
    if height < factor or width < factor:
        raise ValueError("height:%d or width:%d must be larger than factor:%d" % (height, width, factor))
    if max(height, width) / min(height, width) > 200:
        raise ValueError("absolute aspect ratio must be smaller than 200")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def build(cfg, attn_impl=None):
    """Qwen2_5_VLForConditionalGeneration at small width: the language model (reference.py's Qwen2
    CausalLM) and the vision tower, frozen (LLaMA-Factory's freeze_vision_tower and
    freeze_multi_modal_projector defaults)."""
    import torch
    from torch import nn
    import vctorch
    import reference as R

    q2 = cfg.d.get("model_type") == "qwen2_vl"
    v = vision_keys(cfg.d.get("vision_config") or {}, q2)
    C, NH, I = v["C"], v["NH"], v["I"]
    D = C // NH

    class VisionAttention(nn.Module):
        """Qwen2_5_VLVisionSdpaAttention.forward @ efa7189c: qkv, reshape/permute/unbind,
        apply_rotary_pos_emb_vision (float32), a [1, n, n] bool mask True within each cu_seqlens
        block, F.scaled_dot_product_attention (the harness's math backend), transpose, reshape,
        proj."""

        def __init__(self):
            super().__init__()
            self.qkv = R.Linear(C, 3 * C, bias=True)
            self.proj = R.Linear(C, C, bias=True)

        def forward(self, hidden_states, cu_seqlens, position_embeddings):
            n = hidden_states.shape[0]
            q, k, val = self.qkv(hidden_states).reshape(n, 3, NH, -1).permute(1, 0, 2, 3).unbind(0)
            cos, sin = position_embeddings
            # apply_rotary_pos_emb_vision
            oq, ok = q.dtype, k.dtype
            q, k = q.float(), k.float()
            cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
            q_embed = (q * cos) + (R.rotate_half(q) * sin)
            k_embed = (k * cos) + (R.rotate_half(k) * sin)
            q, k = q_embed.to(oq), k_embed.to(ok)
            del q_embed, k_embed
            attention_mask = torch.zeros([1, n, n], dtype=torch.bool)
            for i in range(1, len(cu_seqlens)):
                attention_mask[..., cu_seqlens[i - 1]:cu_seqlens[i], cu_seqlens[i - 1]:cu_seqlens[i]] = True
            q, k, val = q.transpose(0, 1), k.transpose(0, 1), val.transpose(0, 1)
            # F.scaled_dot_product_attention (ATen attention.cpp scaled_dot_product_attention) first
            # converts a bool mask, convert_boolean_attn_mask: where(logical_not(mask), -inf, 0) in the
            # query's dtype, a C++ local alive through the backend's call
            am = torch.where(attention_mask.logical_not(), torch.tensor(float("-inf"), dtype=q.dtype),
                             torch.tensor(0.0, dtype=q.dtype))
            out = vctorch._sdpa_math_2x(q, k, val, attn_mask=am, dropout_p=0.0)
            del am
            # the locals (q, k, v, the bool mask) live until the forward returns
            out = out.transpose(0, 1).reshape(n, -1)
            return self.proj(out)

    class MLP(nn.Module):  # Qwen2_5_VLMLP(bias=True)
        def __init__(self):
            super().__init__()
            self.gate_proj = R.Linear(C, I, bias=True)
            self.up_proj = R.Linear(C, I, bias=True)
            self.down_proj = R.Linear(I, C, bias=True)
            self.act_fn = R.act_fn(v["act"])

        def forward(self, x):
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

    def quick_gelu(x):  # activations.py QuickGELUActivation.forward
        return x * torch.sigmoid(1.702 * x)

    class VisionMlp(nn.Module):  # Qwen2-VL's VisionMlp: fc2(act(fc1(x)))
        def __init__(self):
            super().__init__()
            self.fc1 = R.Linear(C, I, bias=True)
            self.act = quick_gelu if v["act"] == "quick_gelu" else R.act_fn(v["act"])
            self.fc2 = R.Linear(I, C, bias=True)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    def norm():  # Qwen2RMSNorm, or Qwen2-VL's nn.LayerNorm(embed_dim, eps=1e-6)
        return nn.LayerNorm(C, eps=1e-6) if q2 else R.LlamaRMSNorm(C, eps=1e-6)

    class Block(nn.Module):  # Qwen2_5_VLVisionBlock (Qwen2VLVisionBlock: LayerNorms, VisionMlp)
        def __init__(self):
            super().__init__()
            self.norm1 = norm()
            self.norm2 = norm()
            self.attn = VisionAttention()
            self.mlp = VisionMlp() if q2 else MLP()

        def forward(self, hidden_states, cu_seqlens, position_embeddings):
            hidden_states = hidden_states + self.attn(self.norm1(hidden_states), cu_seqlens, position_embeddings)
            return hidden_states + self.mlp(self.norm2(hidden_states))

    class Vision(nn.Module):  # Qwen2_5_VisionTransformerPretrainedModel @ efa7189c
        def __init__(self):
            super().__init__()
            k = (v["T"], v["P"], v["P"])
            self.patch_embed = nn.Conv3d(v["cin"], C, kernel_size=k, stride=k, bias=False)
            dim = D // 2  # Qwen2_5_VisionRotaryEmbedding(head_dim // 2)
            self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)),
                                 persistent=False)
            self.blocks = nn.ModuleList([Block() for _ in range(v["depth"])])
            H4 = C * v["M"] ** 2
            self.ln_q = norm()
            self.mlp = nn.Sequential(R.Linear(H4, H4), nn.GELU(), R.Linear(H4, v["out"]))
            self.H4 = H4

        def rot_pos_emb(self, grid_thw):
            m = v["M"]
            pos_ids = []
            for t, h, w in grid_thw.tolist():
                hpos = torch.arange(h).unsqueeze(1).expand(-1, w).reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
                wpos = torch.arange(w).unsqueeze(0).expand(h, -1).reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
                pos_ids.append(torch.stack([hpos, wpos], dim=-1).repeat(t, 1))
            pos_ids = torch.cat(pos_ids, dim=0)
            max_grid = int(grid_thw[:, 1:].max())
            full = torch.outer(torch.arange(max_grid, dtype=self.inv_freq.dtype), self.inv_freq)
            return full[pos_ids].flatten(1)

        def get_window_index(self, grid_thw):
            import torch.nn.functional as F
            window_index, cu_window_seqlens, wid = [], [0], 0
            ws = v["window"] // v["M"] // v["P"]
            unit = v["M"] ** 2
            for gt, gh, gw in grid_thw.tolist():
                lh, lw = gh // v["M"], gw // v["M"]
                index = torch.arange(gt * lh * lw).reshape(gt, lh, lw)
                ph, pw = ws - lh % ws, ws - lw % ws
                nh, nw = (lh + ph) // ws, (lw + pw) // ws
                ip = F.pad(index, (0, pw, 0, ph), "constant", -100)
                ip = ip.reshape(gt, nh, ws, nw, ws).permute(0, 1, 3, 2, 4).reshape(gt, nh * nw, ws, ws)
                seqlens = (ip != -100).sum([2, 3]).reshape(-1)
                ip = ip.reshape(-1)
                window_index.append(ip[ip != -100] + wid)
                cu_window_seqlens.extend((seqlens.cumsum(0) * unit + cu_window_seqlens[-1]).tolist())
                wid += gt * lh * lw
            return torch.cat(window_index, dim=0), cu_window_seqlens

        def forward(self, hidden_states, grid_thw):
            # Qwen2_5_VisionPatchEmbed.forward
            x = hidden_states.view(-1, v["cin"], v["T"], v["P"], v["P"])
            hidden_states = self.patch_embed(x.to(dtype=self.patch_embed.weight.dtype)).view(-1, C)
            del x
            rotary_pos_emb = self.rot_pos_emb(grid_thw)
            if q2:  # Qwen2VisionTransformerPretrainedModel.forward: no window, every block over cu_seqlens
                emb = torch.cat((rotary_pos_emb, rotary_pos_emb), dim=-1)
                del rotary_pos_emb
                position_embeddings = (emb.cos(), emb.sin())
                del emb
                cu_seqlens = torch.repeat_interleave(grid_thw[:, 1] * grid_thw[:, 2], grid_thw[:, 0]).cumsum(
                    dim=0, dtype=torch.int32)
                cu_seqlens = torch.nn.functional.pad(cu_seqlens, (1, 0), value=0)
                for blk in self.blocks:
                    hidden_states = blk(hidden_states, cu_seqlens, position_embeddings)
                del position_embeddings
                return self.mlp(self.ln_q(hidden_states).view(-1, self.H4))  # PatchMerger.forward
            window_index, cu_window_seqlens = self.get_window_index(grid_thw)
            cu_window_seqlens = torch.unique_consecutive(torch.tensor(cu_window_seqlens, dtype=torch.int32))
            n = hidden_states.shape[0]
            unit = v["M"] ** 2
            hidden_states = hidden_states.reshape(n // unit, unit, -1)[window_index, :, :].reshape(n, -1)
            rotary_pos_emb = rotary_pos_emb.reshape(n // unit, unit, -1)[window_index, :, :].reshape(n, -1)
            emb = torch.cat((rotary_pos_emb, rotary_pos_emb), dim=-1)
            del rotary_pos_emb
            position_embeddings = (emb.cos(), emb.sin())
            del emb
            cu_seqlens = torch.repeat_interleave(grid_thw[:, 1] * grid_thw[:, 2], grid_thw[:, 0]).cumsum(
                dim=0, dtype=torch.int32)
            cu_seqlens = torch.nn.functional.pad(cu_seqlens, (1, 0), value=0)
            full = cfg.d.get("vision_config", {}).get("fullatt_block_indexes", [7, 15, 23, 31])
            for i, blk in enumerate(self.blocks):
                hidden_states = blk(hidden_states, cu_seqlens if i in full else cu_window_seqlens, position_embeddings)
            del position_embeddings
            # Qwen2_5_VLPatchMerger.forward
            hidden_states = self.mlp(self.ln_q(hidden_states).view(-1, self.H4))
            reverse_indices = torch.argsort(window_index)
            return hidden_states[reverse_indices, :]

    class Embed(nn.Module):
        """Qwen2_5_VLForConditionalGeneration.forward @ efa7189c, its inputs_embeds: embed_tokens(
        input_ids); pixel_values.type(visual.dtype); image_embeds = visual(...); mask = input_ids ==
        image_token_id, unsqueeze, expand_as; inputs_embeds.masked_scatter(mask, image_embeds)."""

        def __init__(self, emb, visual):
            super().__init__()
            self.emb = emb
            self.visual = [visual]  # not a submodule here (the model holds it)
            self.weight = emb.weight
            self.pixel_values = self.grid_thw = self.pv = None

        def forward(self, input_ids):
            inputs_embeds = self.emb(input_ids)
            if self.pixel_values is None:
                return inputs_embeds
            vis = self.visual[0]
            # Qwen2_5_VLForConditionalGeneration.forward @ efa7189c: pixel_values = pixel_values.type(
            # self.visual.dtype) rebinds the argument: the copy (bf16; float32 returns the same tensor)
            # lives until that forward returns, after the language model and the loss (build's forward)
            self.pv = self.pixel_values.type(vis.patch_embed.weight.dtype)
            image_embeds = vis(self.pv, self.grid_thw)
            mask = (input_ids == cfg.d["image_token_id"]).unsqueeze(-1).expand_as(inputs_embeds)
            image_embeds = image_embeds.to(inputs_embeds.dtype)
            out = inputs_embeds.masked_scatter(mask, image_embeds)
            return out

    # Qwen2_5_VLConfig: rope_scaling {"type": "mrope"} becomes rope_type "default" (mrope's cos / sin
    # are the default rope's at 3-D positions); the LM here runs Qwen2's 1-D rope: the same inv_freq,
    # without apply_multimodal_rotary_pos_emb's per-layer cat of the t/h/w sections
    text = R.Config(dict(cfg.d, model_type="qwen2", rope_scaling=None))
    model = R.CausalLM(text, attn_impl)
    model.visual = Vision()
    emb = model.embed_tokens
    model.embed_tokens = Embed(emb, model.visual)
    for p in model.visual.parameters():
        p.requires_grad_(False)
    inner = model.forward

    def forward(*args, **kwargs):  # the forward's pixel_values copy dies as it returns
        try:
            return inner(*args, **kwargs)
        finally:
            model.embed_tokens.pv = None

    model.forward = forward
    return model


CASES = {  # config file -> (vision tower + merger, the whole checkpoint)
    "qwen2.5-vl-3b-instruct.json": (668684288, 3754622976),
    "qwen2.5-vl-7b-instruct.json": (676550144, 8292166656),
    # the Hub's safetensors totals of Qwen/Qwen2-VL-{2B,7B,72B}-Instruct
    "qwen2-vl-2b-instruct.json": (665271296, 2208985600),
    "qwen2-vl-7b-instruct.json": (675759104, 8291375616),
    "qwen2-vl-72b-instruct.json": (699356672, 73405560320),
}


def main():
    check = "--check" in sys.argv
    for name, (want_v, want_all) in CASES.items():
        with open(os.path.join(ROOT, "tests", "data", "hf", name)) as f:
            c = json.load(f)
        v = vision_count(c["vision_config"], c["model_type"] == "qwen2_vl")
        t = text_count(c)
        m = meta_count(c)
        print("%-30s vision %d (modules: %d)  text %d  total %d" % (name, v, m, t, v + t))
        if check:
            assert v == m == want_v, (name, v, m, want_v)
            assert v + t == want_all, (name, v + t, want_all)
    return 0


if __name__ == "__main__":
    sys.exit(main())
