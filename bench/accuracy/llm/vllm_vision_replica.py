"""vllm_vision_replica.py -- vLLM's Qwen2.5-VL vision encoder (and Gemma 3's SigLIP tower: siglip() below) as its profiling run calls it (the encoder phase of
--serve, src/engine/serve_mm.c), in plain torch (1.13, CPU), with the accuracy harness's allocator counter
(bench/accuracy/measure.py: memtrack preloaded, opobserver's between-op readings), under torch.inference_mode.

Source, statement by statement (the same statements, so that Python keeps the same names alive):
  vllm-project/vllm @ 002d181a55a03803d7d69547846630069d2378b8 vllm/model_executor/models/qwen2_5_vl.py
    Qwen2_5_VisionTransformer.forward: hidden_states = x.to(device, dtype) (itself: the dummy batch is already in
      the model's dtype, vllm/inputs/registry.py @ f06ae651 call_hf_processor); patch_embed (ReplicatedLinear, no
      bias); get_rope_by_thw (CPU: window_index, cu_window_seqlens, rotary_pos_emb_thw[window_index]);
      rotary_pos_emb, window_index, reverse_indices, cu_seqlens, cu_window_seqlens .to(device);
      hidden_states.reshape(...)[window_index, :, :].reshape(seq_len, -1).unsqueeze(1); the blocks (window
      attention except fullatt_block_indexes); the merger; hidden_states[reverse_indices, :]
    Qwen2_5_VisionBlock.forward, Qwen2_5_VisionAttention.forward (qkv, split_qkv views, einops rearranges (views
      at batch 1), qk_concat = cat([q, k], 0), apply_rotary_pos_emb_vision, flash, proj), Qwen2_5_VisionMLP,
      Qwen2_5_VisionPatchMerger (ln_q, view, nn.Sequential(Linear, GELU, Linear))
  vllm/model_executor/layers/rotary_embedding/common.py @ 002d181a apply_rotary_pos_emb_vision
  vllm/model_executor/layers/layernorm.py @ 00cba797 RMSNorm.forward_native; activation.py SiluAndMul.forward_native
    (vLLM's default compilation: custom_ops "none", VllmConfig.__post_init__)
  vllm/attention/ops/vit_attn_wrappers.py @ 03f9c143 flash_attn_maxseqlen_wrapper
  qwen3_vl.py @ 002d7b939754b844a3832dd7fbf9e5fd0c0e9f1b (qwen3_vl, qwen3_5 configs: forward3 below):
    Qwen3_VisionTransformer.forward (patch_embed, an nn.Conv3d here its output alone; fast_pos_embed_interpolate
    statement by statement; hidden_states + pos_embeds; rot_pos_emb (CPU-side here) .to(device); cu_seqlens;
    the blocks, each deepstack merger's output kept; the merger; torch.cat), Qwen3_VisionBlock.forward,
    Qwen3_VisionMLP, Qwen3_VisionPatchMerger (use_postshuffle_norm for the deepstack ones)

What is not the source's: the CUDA kernels. vllm_flash_attn's apply_rotary_emb (a Triton kernel writing a new
output) is replaced by torch.empty_like(x) filled one patch at a time; flash_attn_varlen_func (its output and
its float32 softmax_lse [heads, rows]) by those two tensors filled one query row at a time with the math of its
window. The fills' temporaries (one patch's, one query row's scores) are counted by the harness: they are what
the replica adds to vLLM's figure (below the worst op here). The CPU-side index work of get_rope_by_thw
(vLLM computes it on the CPU, then copies to the GPU) is done before the measurement; the copies are made
inside it.

Prints one JSON object: peak, the highest between-op reading over the tower's forward less what was allocated
before the dummy pixel values (the weights), and tokens, the merged tokens of the dummy image; per_token =
peak / tokens is what serve_mm.c's qwen_tower gives per merged token, plus the per-image tensors it does not
count: cu_seqlens (int32, a 512-byte block each here) and, where fast_pos_embed_interpolate is the worst op (Qwen3
in fp32), its eight [h] / [w] vectors (linspace, floor, ceil, fractions: a 512-byte block each).
"""
import argparse
import json
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(_here))), "tools"),
                os.path.dirname(_here), _here]
import measure  # noqa: E402


def flash_rows(q, k_, v_, H, D, C):
    """A flash kernel over [b, s, C] queries, keys and values (H heads of D) per item: the two tensors it
    allocates, its output [b, s, C] in q's dtype and its float32 softmax_lse [H, b x s], filled one query row
    at a time (SigLIP's and Llama 4's MMEncoderAttention)."""
    import torch  # main's, imported after the harness's preload
    b, s_, _ = q.shape
    q, k_, v_ = (y.reshape(b, s_, H, D) for y in (q, k_, v_))
    output = torch.empty(b, s_, H, D, dtype=q.dtype)
    lse = torch.empty(H, b * s_, dtype=torch.float32)
    for i in range(b):
        for r in range(s_):
            sc = torch.einsum("hd,thd->ht", q[i, r].float(), k_[i].float()) * D ** -0.5
            lse[:, i * s_ + r] = torch.logsumexp(sc, dim=-1)
            output[i, r] = torch.einsum("ht,thd->hd", sc.softmax(-1), v_[i].float()).to(q.dtype)
            del sc
    return output.view(b, s_, C)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--grid", type=int, default=16, help="the dummy image's patches per side (a multiple of 8)")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    ap.add_argument("--items", type=int, default=2, help="siglip, llama4: the dummy images in the batch; gemma4: videos")
    ap.add_argument("--chunk", type=int, default=0, help="gemma4: frames a chunk (_encoder_chunk's; 0: all)")
    args = ap.parse_args(argv)
    measure.reexec_with_preload()
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    tr = measure.Tracker()
    tr.start(install=True)
    with open(args.config) as f:
        cfg = json.load(f)
    if cfg.get("model_type") in ("gemma3", "paligemma"):
        return siglip(args, cfg, tr, torch, F)
    if cfg.get("model_type") == "llama4":
        return llama4(args, cfg, tr, torch, F)
    if cfg.get("model_type") in ("smolvlm", "idefics3"):
        return idefics3(args, cfg, tr, torch, F)
    if cfg.get("model_type") == "gemma4":
        return gemma4(args, cfg, tr, torch, F)
    v = cfg["vision_config"]
    qwen3 = cfg.get("model_type") in ("qwen3_vl", "qwen3_5", "qwen3_5_moe")
    dt = torch.bfloat16 if args.precision == "bf16" else torch.float32
    C, H, I, depth = v["hidden_size"], v["num_heads"], v["intermediate_size"], v["depth"]
    P, T, M, window = v["patch_size"], v.get("temporal_patch_size", 2), v["spatial_merge_size"], v.get("window_size", 112)
    out_dim, full = v["out_hidden_size"], v.get("fullatt_block_indexes", [])
    deep_idx = v.get("deepstack_visual_indexes", []) if cfg.get("model_type") == "qwen3_vl" else []
    npos = v.get("num_position_embeddings", 2304)
    D, u, pd = C // H, M * M, 3 * T * P * P
    eps = 1e-6

    def w(*s):
        return (torch.randn(*s) * 0.02).to(dt)

    # the tower's weights (vLLM's fused qkv and gate_up), in the model's dtype
    W = {"patch": w(C, pd), "ln_q": w(C), "m0": w(4 * C, 4 * C), "m0b": w(4 * C), "m2": w(out_dim, 4 * C), "m2b": w(out_dim)}
    blocks = [{"n1": w(C), "qkv": w(3 * C, C), "qkvb": w(3 * C), "proj": w(C, C), "projb": w(C), "n2": w(C),
               "gu": w(2 * I, C), "gub": w(2 * I), "down": w(C, I), "downb": w(C),
               "n1b": w(C), "n2b": w(C), "fc1": w(I, C), "fc1b": w(I), "fc2": w(C, I), "fc2b": w(C)} for _ in range(depth)]
    if qwen3:  # Qwen3_VisionTransformer: Conv3d patch_embed (bias), pos_embed, LayerNorm mergers (+ deepstack)
        W["patchb"], W["pos"] = w(C), w(npos, C)
        W["mergers"] = [{"n": w(cn), "nb": w(cn), "f1": w(4 * C, 4 * C), "f1b": w(4 * C), "f2": w(out_dim, 4 * C),
                         "f2b": w(out_dim)} for cn in [C] + [4 * C] * len(deep_idx)]

    # get_rope_by_thw on the CPU (t 1, h = w = grid): get_window_index_thw, rotary_pos_emb_thw
    g = args.grid
    vw = window // M // P
    lh = lw = g // M
    index = torch.arange(lh * lw).reshape(1, lh, lw)
    pad_h, pad_w = vw - lh % vw, vw - lw % vw
    nwh, nww = (lh + pad_h) // vw, (lw + pad_w) // vw
    ip = F.pad(index, (0, pad_w, 0, pad_h), "constant", -100).reshape(1, nwh, vw, nww, vw)
    ip = ip.permute(0, 1, 3, 2, 4).reshape(1, nwh * nww, vw, vw)
    seqlens = (ip != -100).sum([2, 3]).reshape(-1)
    ip = ip.reshape(-1)
    window_index_cpu = ip[ip != -100]
    cu_window_cpu = torch.unique_consecutive(torch.cat([torch.tensor([0]), seqlens.cumsum(0) * u]).to(torch.int32))
    hpos = torch.arange(g).unsqueeze(1).expand(-1, g).reshape(lh, M, lw, M).permute(0, 2, 1, 3).flatten()
    wpos = torch.arange(g).unsqueeze(0).expand(g, -1).reshape(lh, M, lw, M).permute(0, 2, 1, 3).flatten()
    pos_ids = torch.stack([hpos, wpos], dim=-1)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, D // 2, 2, dtype=torch.float) / (D // 2)))
    freqs = torch.outer(torch.arange(g * 2, dtype=torch.float), inv_freq)
    rope_cpu = freqs[pos_ids].flatten(1).reshape(-1, u, D // 2)[window_index_cpu].flatten(0, 1)
    reverse_cpu = torch.empty_like(window_index_cpu)
    reverse_cpu[window_index_cpu] = torch.arange(window_index_cpu.numel())
    cu_full_cpu = F.pad(torch.tensor([g * g], dtype=torch.int32).cumsum(0, dtype=torch.int32), (1, 0), "constant", 0)

    def module(f):
        """An nn.Module's call: Module._call_impl runs forward_call(*args, **kwargs), so the tuple args keeps the
        arguments alive until forward returns even where forward rebinds their names (a plain Python call
        hands them to the callee's frame since 3.11: rebinding would free them)."""
        def call(*args, **kwargs):
            return f(*args, **kwargs)
        return call

    @module
    def rms_native(weight, x, residual=None):  # RMSNorm.forward_native
        orig_dtype = x.dtype
        x = x.to(torch.float32)
        if residual is not None:
            x = x + residual.to(torch.float32)
            residual = x.to(orig_dtype)
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + eps)
        x = x.to(orig_dtype)
        x = x * weight
        if residual is None:
            return x
        return x, residual

    def rotary_emb(x, cos, sin):  # vllm_flash_attn apply_rotary_emb (not in place): a new output
        out = torch.empty_like(x)
        h = x.shape[-1] // 2
        for s in range(x.shape[1]):  # one patch at a time
            x1, x2 = x[:, s, :, :h], x[:, s, :, h:]
            c, si = cos[s].unsqueeze(0), sin[s].unsqueeze(0)
            out[:, s, :, :h] = x1 * c - x2 * si
            out[:, s, :, h:] = x2 * c + x1 * si
        return out

    def apply_rotary_pos_emb_vision(t, freqs, rotary_emb_function):
        t_ = t.float()
        cos = freqs.cos()
        sin = freqs.sin()
        output = rotary_emb_function(t_, cos, sin).type_as(t)
        return output

    def flash(q, k, v, cu):  # flash_attn_maxseqlen_wrapper, batch 1
        q, k, v = (x.reshape(-1, H, D) for x in (q, k, v))  # rearrange "b s ... -> (b s) ...": views
        output = torch.empty_like(q)
        lse = torch.empty(H, q.shape[0], dtype=torch.float32)
        for i in range(1, len(cu)):
            a, b = int(cu[i - 1]), int(cu[i])
            for r in range(a, b):  # one query row at a time: flash keeps no [rows, rows] scores
                s = torch.einsum("hd,thd->ht", q[r].float(), k[a:b].float()) * D ** -0.5
                lse[:, r] = torch.logsumexp(s, dim=-1)
                output[r] = torch.einsum("ht,thd->hd", s.softmax(-1), v[a:b].float()).to(q.dtype)
                del s
        return output.reshape(-1, 1, H * D)  # rearrange "(b s) h d -> s b (h d)", contiguous: a view

    @module
    def attention(x, blk, cu_seqlens, rotary_pos_emb):  # Qwen2_5_VisionAttention.forward
        x = F.linear(x, blk["qkv"], blk["qkvb"])
        seq_len, bs, _ = x.shape
        q, k, v = x.chunk(3, dim=2)
        q, k, v = (y.view(seq_len, bs, H, D) for y in (q, k, v))
        q, k, v = (y.permute(1, 0, 2, 3) for y in (q, k, v))  # "s b ... -> b s ...": views
        qk_concat = torch.cat([q, k], dim=0)
        qk_rotated = apply_rotary_pos_emb_vision(qk_concat, rotary_pos_emb, rotary_emb)
        q, k = torch.chunk(qk_rotated, 2, dim=0)
        context_layer = flash(q, k, v, cu_seqlens)
        output = F.linear(context_layer, blk["proj"], blk["projb"])
        return output

    @module
    def silu_and_mul(x):  # SiluAndMul.forward_native
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]

    @module
    def mlp(x, blk):  # Qwen2_5_VisionMLP, SiluAndMul.forward_native
        gate_up = F.linear(x, blk["gu"], blk["gub"])
        x = silu_and_mul(gate_up)
        x_down = F.linear(x, blk["down"], blk["downb"])
        return x_down

    @module
    def block(x, blk, cu_seqlens, rotary_pos_emb):  # Qwen2_5_VisionBlock.forward
        x_attn = attention(rms_native(blk["n1"], x), blk, cu_seqlens, rotary_pos_emb)
        x_fused_norm, residual = rms_native(blk["n2"], x, residual=x_attn)
        x = residual + mlp(x_fused_norm, blk)
        return x

    @module
    def merger(x):  # Qwen2_5_VisionPatchMerger
        x = rms_native(W["ln_q"], x)
        x = x.view(-1, 4 * C)
        for f in (lambda y: F.linear(y, W["m0"], W["m0b"]), lambda y: F.gelu(y), lambda y: F.linear(y, W["m2"], W["m2b"])):
            x = module(f)(x)  # nn.Sequential.forward: input = module(input)
        return x

    def forward(x):  # Qwen2_5_VisionTransformer.forward
        seq_len, _ = x.size()
        hidden_states = x.to(dtype=dt)
        hidden_states = F.linear(hidden_states, W["patch"])
        cu_seqlens = cu_full_cpu.clone()  # .to(device)
        cu_window_seqlens = cu_window_cpu.clone()
        rotary_pos_emb = rope_cpu.clone()
        window_index = window_index_cpu.clone()
        reverse_indices = reverse_cpu.clone()
        hidden_states = hidden_states.reshape(seq_len // u, u, -1)
        hidden_states = hidden_states[window_index, :, :]
        hidden_states = hidden_states.reshape(seq_len, -1)
        hidden_states = hidden_states.unsqueeze(1)
        for layer_num in range(depth):
            cu = cu_seqlens if layer_num in full else cu_window_seqlens
            hidden_states = block(hidden_states, blocks[layer_num], cu, rotary_pos_emb)
        hidden_states = merger(hidden_states)
        hidden_states = hidden_states[reverse_indices, :]
        return hidden_states

    rope3_cpu = freqs[pos_ids].flatten(1)  # Qwen3_VisionTransformer.rot_pos_emb (no window reorder)
    cu3_cpu = F.pad(torch.tensor([g * g], dtype=torch.int32).cumsum(0, dtype=torch.int32), (1, 0), value=0)
    n_side = int(npos ** 0.5)

    def fast_pos_embed_interpolate():  # Qwen3_VisionTransformer.fast_pos_embed_interpolate, t 1, h = w = g
        outputs = []
        for t, h, w_ in [(1, g, g)]:
            h_idxs = torch.linspace(0, n_side - 1, h, dtype=torch.float32)
            w_idxs = torch.linspace(0, n_side - 1, w_, dtype=torch.float32)
            h_floor = h_idxs.to(torch.long)
            w_floor = w_idxs.to(torch.long)
            h_ceil = torch.clamp(h_floor + 1, max=n_side - 1)
            w_ceil = torch.clamp(w_floor + 1, max=n_side - 1)
            dh = h_idxs - h_floor
            dw = w_idxs - w_floor
            dh_grid, dw_grid = torch.meshgrid(dh, dw, indexing="ij")
            h_floor_grid, w_floor_grid = torch.meshgrid(h_floor, w_floor, indexing="ij")
            h_ceil_grid, w_ceil_grid = torch.meshgrid(h_ceil, w_ceil, indexing="ij")
            h_floor_grid_idx = h_floor_grid * n_side
            h_ceil_grid_idx = h_ceil_grid * n_side
            w11 = dh_grid * dw_grid
            w10 = dh_grid - w11
            w01 = dw_grid - w11
            w00 = 1 - dh_grid - dw_grid + w11
            idx00 = h_floor_grid_idx + w_floor_grid
            idx01 = h_floor_grid_idx + w_ceil_grid
            idx10 = h_ceil_grid_idx + w_floor_grid
            idx11 = h_ceil_grid_idx + w_ceil_grid
            indices = torch.stack([idx00, idx01, idx10, idx11], dim=0).reshape(4, -1)
            weights = torch.stack([w00, w01, w10, w11], dim=0).reshape(4, -1, 1)
            weights = weights.to(dtype=dt)
            embeds = module(F.embedding)(indices, W["pos"])
            weighted_embeds = embeds * weights
            p0, p1, p2, p3 = weighted_embeds.unbind(dim=0)
            combined = p0 + p1 + p2 + p3
            combined = combined.view(h * w_, C)
            repeated = combined.unsqueeze(0).expand(t, -1, -1).contiguous()
            repeated = repeated.view(t, h // M, M, w_ // M, M, C)
            repeated = repeated.permute(0, 1, 3, 2, 4, 5).reshape(-1, C)
            outputs.append(repeated)
        return torch.cat(outputs, dim=0)

    @module
    def mlp3(x, blk):  # Qwen3_VisionMLP.forward
        mlp_output = F.linear(module(lambda y: F.gelu(y, approximate="tanh"))(F.linear(x, blk["fc1"], blk["fc1b"])),
                              blk["fc2"], blk["fc2b"])
        return mlp_output

    @module
    def block3(x, blk, cu_seqlens, rotary_pos_emb):  # Qwen3_VisionBlock.forward
        x = x + attention(module(F.layer_norm)(x, (C,), blk["n1"], blk["n1b"], eps), blk, cu_seqlens, rotary_pos_emb)
        x = x + mlp3(module(F.layer_norm)(x, (C,), blk["n2"], blk["n2b"], eps), blk)
        return x

    @module
    def merger3(x, mw, postshuffle):  # Qwen3_VisionPatchMerger.forward
        if postshuffle:
            x = module(F.layer_norm)(x.view(-1, 4 * C), (4 * C,), mw["n"], mw["nb"], eps)
        else:
            x = module(F.layer_norm)(x, (C,), mw["n"], mw["nb"], eps).view(-1, 4 * C)
        x_parallel = F.linear(x, mw["f1"], mw["f1b"])
        x_parallel = module(F.gelu)(x_parallel)
        out = F.linear(x_parallel, mw["f2"], mw["f2b"])
        return out

    def forward3(x):  # Qwen3_VisionTransformer.forward
        hidden_states = x.to(dtype=dt)
        hidden_states = module(lambda y: F.linear(y, W["patch"], W["patchb"]))(hidden_states)  # Conv3d's output
        pos_embeds = fast_pos_embed_interpolate()
        hidden_states = hidden_states + pos_embeds
        rotary_pos_emb = rope3_cpu.clone()  # rot_pos_emb(...).to(device)
        cu_seqlens = cu3_cpu.clone()
        hidden_states = hidden_states.unsqueeze(1)
        deepstack_feature_lists = []
        for layer_num in range(depth):
            hidden_states = block3(hidden_states, blocks[layer_num], cu_seqlens, rotary_pos_emb)
            if layer_num in deep_idx:
                deepstack_feature = merger3(hidden_states, W["mergers"][1 + deep_idx.index(layer_num)], True)
                deepstack_feature_lists.append(deepstack_feature)
        hidden_states = merger3(hidden_states, W["mergers"][0], False)
        hidden_states = torch.cat([hidden_states] + deepstack_feature_lists, dim=1)
        return hidden_states

    with torch.inference_mode():
        before = tr.O.opobs_current()
        tr.O.opobs_reset_peak()
        pixel_values = torch.randn(g * g, pd, dtype=dt)  # the dummy batch, on the device in the model's dtype
        image_embeds = forward3(pixel_values) if qwen3 else forward(pixel_values)
        peak = tr.O.opobs_peak()
        where = tr.O.opobs_peak_where().decode()
    tokens = g * g // u
    print(json.dumps({"config": os.path.basename(args.config), "precision": args.precision, "grid": g,
                      "tokens": tokens, "allocated_before": before, "peak": peak - before,
                      "per_token": (peak - before) / tokens, "where": where, "outputs": image_embeds.numel() * image_embeds.element_size(),
                      "vllm": "002d181a55a03803d7d69547846630069d2378b8"}))
    return 0


def siglip(args, cfg, tr, torch, F):
    """Gemma 3's tower and projector, vllm-project/vllm @ 0c028ba489f560102a87a3e98b92caac5a6da8f1
    vllm/model_executor/models/siglip.py (SiglipVisionEmbeddings, SiglipEncoderLayer, SiglipAttention,
    SiglipMLP, SiglipVisionTransformer: post_layernorm), vllm/model_executor/layers/conv.py @ 045d7575
    Conv2dLayer._forward_mulmat (forward_native under custom_ops "none"), gemma3_mm.py @ e5fa9450
    Gemma3MultiModalProjector (GemmaRMSNorm.forward_static under forward_native) and _process_image_input;
    MMEncoderAttention's flash kernel replaced by its output and softmax_lse filled one query row at a time.
    PaliGemma (model_type paligemma): the same tower, then vllm/model_executor/models/paligemma.py as
    1CatAI/1Cat-vLLM @ 92a785cb21e2b2acbd4be1dfd87e799c9c632a37 holds it (upstream's V1 text):
    _process_image_input (_image_pixels_to_features, PaliGemmaMultiModalProjector's nn.Linear with bias) and
    embed_multimodal's vision_embeddings * hidden_size**-0.5."""
    v = cfg["vision_config"]
    dt = torch.bfloat16 if args.precision == "bf16" else torch.float32
    C, H, I, depth = v["hidden_size"], v["num_attention_heads"], v["intermediate_size"], v["num_hidden_layers"]
    P, img, cin = v["patch_size"], v["image_size"], v.get("num_channels", 3)
    pali = cfg.get("model_type") == "paligemma"
    Ht, mm = cfg["text_config"]["hidden_size"], cfg.get("mm_tokens_per_image", 256)
    D, side, B = C // H, img // P, args.items
    if pali:
        mm = side * side  # SiglipEncoderInfo.get_num_image_tokens: (image_size // patch_size)^2
    S, tps = side * side, int(mm ** 0.5)
    k = side // tps
    eps = v.get("layer_norm_eps", 1e-6)

    def w(*s):
        return (torch.randn(*s) * 0.02).to(dt)

    def module(f):  # nn.Module._call_impl: the args tuple holds the inputs until forward returns
        def call(*a, **kw):
            return f(*a, **kw)
        return call

    W = {"patch": w(C, cin, P, P), "patchb": w(C), "pos": w(S, C), "post": w(C), "postb": w(C),
         "soft": w(C), "proj": w(C, Ht), "lin": w(Ht, C), "linb": w(Ht)}
    position_ids = torch.arange(S).expand((1, -1))
    layers = [{"ln1": w(C), "ln1b": w(C), "qkv": w(3 * C, C), "qkvb": w(3 * C), "o": w(C, C), "ob": w(C),
               "ln2": w(C), "ln2b": w(C), "fc1": w(I, C), "fc1b": w(I), "fc2": w(C, I), "fc2b": w(C)} for _ in range(depth)]

    @module
    def patch_embedding(x):  # Conv2dLayer._forward_mulmat
        Bq, Cq, Hq, Wq = x.shape
        Hq, Wq = Hq // P, Wq // P
        x = x.unfold(2, P, P).unfold(3, P, P)
        x = x.permute(0, 2, 3, 1, 4, 5).reshape(-1, cin * P * P)
        x = F.linear(x, W["patch"].view(C, cin * P * P), W["patchb"])
        x = x.view(Bq, Hq, Wq, C).permute(0, 3, 1, 2)
        return x

    @module
    def embeddings(pixel_values):  # SiglipVisionEmbeddings.forward (interpolate_pos_encoding False)
        patch_embeds = patch_embedding(pixel_values.to(dtype=dt))
        emb = patch_embeds.flatten(2).transpose(1, 2)
        emb += F.embedding(position_ids, W["pos"])
        return emb

    def flash(q, k_, v_):  # output and softmax_lse over each image, one query row at a time
        return flash_rows(q, k_, v_, H, D, C)

    @module
    def self_attn(hidden_states, L):  # SiglipAttention.forward
        qkv_states = F.linear(hidden_states, L["qkv"], L["qkvb"])
        query_states, key_states, value_states = qkv_states.chunk(3, dim=-1)
        out = flash(query_states, key_states, value_states)
        attn_output = F.linear(out, L["o"], L["ob"])
        return attn_output, None

    @module
    def mlp(hidden_states, L):  # SiglipMLP.forward
        hidden_states = F.linear(hidden_states, L["fc1"], L["fc1b"])
        hidden_states = module(lambda y: F.gelu(y, approximate="tanh"))(hidden_states)
        hidden_states = F.linear(hidden_states, L["fc2"], L["fc2b"])
        return hidden_states

    @module
    def layer(hidden_states, L):  # SiglipEncoderLayer.forward
        residual = hidden_states
        hidden_states = module(F.layer_norm)(hidden_states, (C,), L["ln1"], L["ln1b"], eps)
        hidden_states, _ = self_attn(hidden_states=hidden_states, L=L)
        hidden_states += residual
        residual = hidden_states
        hidden_states = module(F.layer_norm)(hidden_states, (C,), L["ln2"], L["ln2b"], eps)
        hidden_states = mlp(hidden_states, L)
        hidden_states += residual
        return hidden_states, None

    @module
    def encoder(inputs_embeds):  # SiglipEncoder.forward: hidden_states_pool = [inputs_embeds] holds the embeddings
        hidden_states_pool = [inputs_embeds]
        hidden_states = inputs_embeds
        for L in layers:
            hidden_states, _ = layer(hidden_states, L)
        del hidden_states_pool
        return hidden_states

    @module
    def tower(pixel_values):  # SiglipVisionTransformer.forward: hidden_states (the embeddings) alive until it returns
        hidden_states = embeddings(pixel_values)
        encoder_outputs = encoder(hidden_states)
        encoder_outputs = module(F.layer_norm)(encoder_outputs, (C,), W["post"], W["postb"], eps)
        return encoder_outputs

    @module
    def gemma_rms(x):  # GemmaRMSNorm.forward_static
        orig_dtype = x.dtype
        x = x.float()
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + eps)
        x = x * (1.0 + W["soft"].float())
        x = x.to(orig_dtype)
        return x

    @module
    def projector(vision_outputs):  # Gemma3MultiModalProjector.forward
        batch_size, _, seq_length = vision_outputs.shape
        reshaped_vision_outputs = vision_outputs.transpose(1, 2)
        reshaped_vision_outputs = reshaped_vision_outputs.reshape(batch_size, seq_length, side, side)
        reshaped_vision_outputs = reshaped_vision_outputs.contiguous()
        pooled_vision_outputs = module(lambda y: F.avg_pool2d(y, k, stride=k))(reshaped_vision_outputs)
        pooled_vision_outputs = pooled_vision_outputs.flatten(2)
        pooled_vision_outputs = pooled_vision_outputs.transpose(1, 2)
        normed_vision_outputs = gemma_rms(pooled_vision_outputs)
        projected_vision_outputs = torch.matmul(normed_vision_outputs, W["proj"])
        return projected_vision_outputs.type_as(vision_outputs)

    with torch.inference_mode():
        before = tr.O.opobs_current()
        tr.O.opobs_reset_peak()
        pixel_values = torch.randn(B, cin, img, img, dtype=dt)  # the dummy batch, in the model's dtype
        if pali:
            def process_image_input(pv):  # PaliGemmaForConditionalGeneration._process_image_input
                image_features = tower(pv)  # _image_pixels_to_features: .to(dtype) a no-op
                return module(lambda x: F.linear(x, W["lin"], W["linb"]))(image_features)  # multi_modal_projector
            vision_embeddings = process_image_input(pixel_values)  # embed_multimodal
            image_embeds = vision_embeddings * (cfg.get("hidden_size", Ht) ** -0.5)
        else:
            image_features = tower(pixel_values)  # Gemma3ForConditionalGeneration._process_image_input
            image_embeds = projector(image_features)
        peak = tr.O.opobs_peak()
        where = tr.O.opobs_peak_where().decode()
    print(json.dumps({"config": os.path.basename(args.config), "precision": args.precision, "items": B,
                      "tokens": B * mm, "allocated_before": before, "peak": peak - before, "per_item": (peak - before) / B,
                      "where": where, "outputs": image_embeds.numel() * image_embeds.element_size(),
                      "vllm": "0c028ba489f560102a87a3e98b92caac5a6da8f1"}))
    return 0


def idefics3(args, cfg, tr, torch, F):
    """SmolVLM / Idefics3's encoder run on the dummy images (--items of them, 17 frames each: the processor's 4 x 4
    tiles and the global image of image_size squared): vllm/model_executor/models/idefics3.py as 1CatAI/1Cat-vLLM @
    92a785cb21e2b2acbd4be1dfd87e799c9c632a37 holds it (Idefics3ForConditionalGeneration._process_image_input,
    Idefics3Model.image_pixels_to_features, Idefics3Connector.pixel_shuffle / modality_projection) and
    idefics2_vision_model.py as AutoCONFIG/vllm @ 1b1063fa2e50b4d00808a980fd7be897e8e3eb6d holds it
    (Idefics2VisionEmbeddings with Conv2dLayer._forward_mulmat under forward_native, Idefics2Encoder,
    Idefics2EncoderLayer as SiglipEncoderLayer, post_layernorm); MMEncoderAttention's flash kernel replaced by its
    output and softmax_lse filled one query row at a time. The CPU-side position ids (built on the CPU in vLLM, moved
    to the GPU) are counted as the GPU copy is."""
    v = cfg["vision_config"]
    dt = torch.bfloat16 if args.precision == "bf16" else torch.float32
    C, H, I, depth = v["hidden_size"], v["num_attention_heads"], v["intermediate_size"], v["num_hidden_layers"]
    P, L, cin = v["patch_size"], v["image_size"], v.get("num_channels", 3)
    s, Ht = cfg.get("scale_factor", 2), cfg["text_config"]["hidden_size"]
    D, side, frames = C // H, L // P, 17 * args.items
    S = side * side
    eps = v.get("layer_norm_eps", 1e-6)

    def w(*sh):
        return (torch.randn(*sh) * 0.02).to(dt)

    def module(f):  # nn.Module._call_impl: the args tuple holds the inputs until forward returns
        def call(*a, **kw):
            return f(*a, **kw)
        return call

    W = {"patch": w(C, cin, P, P), "patchb": w(C), "pos": w(S, C), "post": w(C), "postb": w(C), "proj": w(Ht, C * s * s)}
    layers = [{"ln1": w(C), "ln1b": w(C), "qkv": w(3 * C, C), "qkvb": w(3 * C), "o": w(C, C), "ob": w(C),
               "ln2": w(C), "ln2b": w(C), "fc1": w(I, C), "fc1b": w(I), "fc2": w(C, I), "fc2b": w(C)} for _ in range(depth)]

    @module
    def patch_embedding(x):  # Conv2dLayer._forward_mulmat
        Bq, Cq, Hq, Wq = x.shape
        Hq, Wq = Hq // P, Wq // P
        x = x.unfold(2, P, P).unfold(3, P, P)
        x = x.permute(0, 2, 3, 1, 4, 5).reshape(-1, cin * P * P)
        x = F.linear(x, W["patch"].view(C, cin * P * P), W["patchb"])
        x = x.view(Bq, Hq, Wq, C).permute(0, 3, 1, 2)
        return x

    @module
    def embeddings(pixel_values, patch_attention_mask):  # Idefics2VisionEmbeddings.forward (tgt_sizes None)
        batch_size, _, max_im_h, max_im_w = pixel_values.shape
        patch_embeds = patch_embedding(pixel_values.to(dt))
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
            position_ids[batch_idx][p_attn_mask.view(-1).cpu()] = pos_ids
        # the loop's coordinates, buckets and pos_ids are CPU tensors in vLLM (boundaries, torch.arange, .cpu()), the
        # two patch counts GPU scalars: dropped here so that the harness counts what the GPU holds
        del p_attn_mask, nb_patches_h, nb_patches_w, fractional_coords_h, fractional_coords_w
        del bucket_coords_h, bucket_coords_w, pos_ids, boundaries
        embeddings += F.embedding(position_ids, W["pos"])
        return embeddings

    def flash(q, k_, v_):
        return flash_rows(q, k_, v_, H, D, C)

    @module
    def self_attn(hidden_states, Lw):  # Idefics2VisionAttention.forward
        qkv = F.linear(hidden_states, Lw["qkv"], Lw["qkvb"])
        query_states, key_states, value_states = qkv.chunk(3, dim=-1)
        out = flash(query_states, key_states, value_states)
        attn_output = F.linear(out, Lw["o"], Lw["ob"])
        return attn_output

    @module
    def mlp(hidden_states, Lw):  # Idefics2VisionMLP.forward
        hidden_states = F.linear(hidden_states, Lw["fc1"], Lw["fc1b"])
        hidden_states = module(lambda y: F.gelu(y, approximate="tanh"))(hidden_states)
        hidden_states = F.linear(hidden_states, Lw["fc2"], Lw["fc2b"])
        return hidden_states

    @module
    def layer(hidden_states, Lw):  # Idefics2EncoderLayer.forward
        residual = hidden_states
        hidden_states = module(F.layer_norm)(hidden_states, (C,), Lw["ln1"], Lw["ln1b"], eps)
        hidden_states = self_attn(hidden_states, Lw)
        hidden_states += residual
        residual = hidden_states
        hidden_states = module(F.layer_norm)(hidden_states, (C,), Lw["ln2"], Lw["ln2b"], eps)
        hidden_states = mlp(hidden_states, Lw)
        hidden_states += residual
        return hidden_states

    @module
    def encoder(inputs_embeds):  # Idefics2Encoder.forward
        hidden_states = inputs_embeds
        for Lw in layers:
            layer_outputs = layer(hidden_states, Lw)
            hidden_states = layer_outputs
        return hidden_states

    @module
    def vision_model(pixel_values, patch_attention_mask):  # Idefics2VisionTransformer.forward
        hidden_states = embeddings(pixel_values=pixel_values, patch_attention_mask=patch_attention_mask)
        encoder_outputs = encoder(hidden_states)
        last_hidden_state = module(F.layer_norm)(encoder_outputs, (C,), W["post"], W["postb"], eps)
        return last_hidden_state

    def image_pixels_to_features(pixel_values, pixel_attention_mask):  # Idefics3Model
        pixel_values = pixel_values.to(dtype=dt)
        nb_values_per_image = pixel_values.shape[1:].numel()
        real_images_inds = (pixel_values == 0.0).sum(dim=(-1, -2, -3)) != nb_values_per_image
        pixel_values = pixel_values[real_images_inds].contiguous()
        pixel_attention_mask = pixel_attention_mask[real_images_inds].contiguous()
        patches_subgrid = pixel_attention_mask.unfold(dimension=1, size=P, step=P)
        patches_subgrid = patches_subgrid.unfold(dimension=2, size=P, step=P)
        patch_attention_mask = (patches_subgrid.sum(dim=(-1, -2)) > 0).bool()
        image_hidden_states = vision_model(pixel_values=pixel_values, patch_attention_mask=patch_attention_mask)
        return image_hidden_states

    def pixel_shuffle(x, scale_factor=2):  # Idefics3Connector.pixel_shuffle
        bsz, seq, embed_dim = x.size()
        height = width = int(seq**0.5)
        x = x.view(bsz, height, width, embed_dim)
        x = x.view(bsz, height, int(width / scale_factor), embed_dim * scale_factor)
        x = x.permute(0, 2, 1, 3)
        x = x.reshape(bsz, int(width / scale_factor), int(height / scale_factor), embed_dim * (scale_factor**2))
        x = x.permute(0, 2, 1, 3)
        x = x.reshape(bsz, int(seq / (scale_factor**2)), embed_dim * (scale_factor**2))
        return x

    @module
    def connector(image_hidden_states):  # Idefics3Connector.forward
        image_hidden_states = pixel_shuffle(image_hidden_states, s)
        image_hidden_states = module(lambda y: F.linear(y, W["proj"]))(image_hidden_states)  # ReplicatedLinear
        return image_hidden_states

    with torch.inference_mode():
        before = tr.O.opobs_current()
        tr.O.opobs_reset_peak()
        # the dummy batch: pixel_values in the model's dtype, pixel_attention_mask all ones (every frame full)
        pixel_values = torch.randn(frames, cin, L, L, dtype=dt)
        pixel_attention_mask = torch.ones(frames, L, L, dtype=torch.bool)
        num_patches = torch.tensor([17] * args.items)
        image_features = image_pixels_to_features(pixel_values, pixel_attention_mask)  # _process_image_input
        image_features = connector(image_features)
        outputs = [e.flatten(0, 1) for e in image_features.split(num_patches.tolist())]
        peak = tr.O.opobs_peak()
        where = tr.O.opobs_peak_where().decode()
    print(json.dumps({"config": os.path.basename(args.config), "precision": args.precision, "items": args.items,
                      "frames": frames, "tokens": sum(o.shape[0] for o in outputs), "allocated_before": before,
                      "peak": peak - before, "where": where,
                      "outputs": image_features.numel() * image_features.element_size()}))
    return 0


def llama4(args, cfg, tr, torch, F):
    """Llama 4's tower and projector, vllm-project/vllm vllm/model_executor/models/mllama4.py (the newest stored
    text, embed_multimodal / MMEncoderAttention; the same modules at 00dd5493 and 60d375cb): Llama4VisionModel.forward
    (Llama4UnfoldConvolution: nn.Unfold, permute, linear; torch.cat with class_embedding; + positional_embedding_vlm;
    layernorm_pre; Llama4VisionEncoder; layernorm_post; [:, :-1, :]; Llama4VisionPixelShuffleMLP: pixel_shuffle,
    Llama4VisionMLP with output_activation), Llama4VisionEncoderLayer, Llama4VisionAttention (qkv_proj, split,
    rotary_emb, attn, reshape(...).contiguous(), o_proj), Llama4VisionMLP, Llama4MultiModalProjector and
    _process_image_input; vllm/model_executor/layers/rotary_embedding/llama4_vision_rope.py @ 10760a01
    Llama4VisionRotaryEmbedding.forward_native (forward_cuda calls it). MMEncoderAttention's flash kernel replaced
    by its output and softmax_lse filled one query row at a time. The dummy batch: --items images of 1 + 16 tiles
    (Mllama4ProcessingInfo.get_image_size_with_most_features, max_patches 16)."""
    v = cfg["vision_config"]
    dt = torch.bfloat16 if args.precision == "bf16" else torch.float32
    C, H, I, depth = v["hidden_size"], v["num_attention_heads"], v["intermediate_size"], v["num_hidden_layers"]
    P, img, cin = v["patch_size"], v["image_size"], v.get("num_channels", 3)
    ratio, pin, pout = v.get("pixel_shuffle_ratio", 0.5), v["projector_input_dim"], v["projector_output_dim"]
    Ht = cfg["text_config"]["hidden_size"]
    D, side = C // H, img // P
    S = side * side
    n = args.items * 17
    eps = 1e-5

    def w(*s):
        return (torch.randn(*s) * 0.02).to(dt)

    def module(f):  # nn.Module._call_impl: the args tuple holds the inputs until forward returns
        def call(*a, **kw):
            return f(*a, **kw)
        return call

    W = {"patch": w(C, cin * P * P), "cls": w(C), "pos": w(S + 1, C), "pre": w(C), "preb": w(C), "post": w(C),
         "postb": w(C), "a1": w(pin, I), "a2": w(pout, pin), "proj": w(Ht, v["vision_output_dim"])}
    layers = [{"ln1": w(C), "ln1b": w(C), "qkv": w(3 * C, C), "qkvb": w(3 * C), "o": w(C, C), "ob": w(C),
               "ln2": w(C), "ln2b": w(C), "fc1": w(I, C), "fc1b": w(I), "fc2": w(C, I), "fc2b": w(C)} for _ in range(depth)]
    # Llama4VisionRotaryEmbedding._compute_cos_sin_cache (rotary_dim = head_dim // 2): a buffer, with the weights
    rot = D // 2
    inv_freq = 1.0 / (v.get("rope_theta", 10000) ** (torch.arange(0, rot, 2, dtype=torch.float) / rot))
    inv_freq = inv_freq[: rot // 2]
    img_idx = torch.arange(S, dtype=torch.int32).reshape(S, 1)
    img_idx = torch.cat([img_idx, img_idx[:1]], dim=0)
    img_idx[-1, -1] = -2
    fx, fy = img_idx % side, img_idx // side
    freqs_x = ((fx + 1)[..., None] * inv_freq[None, None, :]).repeat_interleave(2, dim=-1)
    freqs_y = ((fy + 1)[..., None] * inv_freq[None, None, :]).repeat_interleave(2, dim=-1)
    freqs = torch.cat([freqs_x, freqs_y], dim=-1).float().contiguous()[..., ::2]
    freqs = freqs.masked_fill(img_idx.reshape(-1, 1, 1) < 0, 0)
    cos_sin_cache = torch.view_as_complex(torch.stack([torch.cos(freqs), torch.sin(freqs)], dim=-1))
    del inv_freq, img_idx, fx, fy, freqs_x, freqs_y, freqs

    @module
    def rotary_emb(query, key):  # Llama4VisionRotaryEmbedding.forward_native
        query_ = torch.view_as_complex(query.float().reshape(*query.shape[:-1], -1, 2))
        key_ = torch.view_as_complex(key.float().reshape(*key.shape[:-1], -1, 2))
        broadcast_shape = [d if i == 1 or i == (query_.ndim - 1) else 1 for i, d in enumerate(query_.shape)]
        freqs_ci = cos_sin_cache.view(*broadcast_shape)
        query_out = torch.view_as_real(query_ * freqs_ci).flatten(3)
        key_out = torch.view_as_real(key_ * freqs_ci).flatten(3)
        return query_out.type_as(query), key_out.type_as(key)

    @module
    def attn(q, k_, v_):  # MMEncoderAttention, flash: output and softmax_lse, one query row at a time
        return flash_rows(q, k_, v_, H, D, C)

    @module
    def self_attn(hidden_states, L):  # Llama4VisionAttention.forward
        input_shape = hidden_states.shape[:-1]
        qkv = F.linear(hidden_states, L["qkv"], L["qkvb"])
        q, k, v_ = qkv.split([C, C, C], dim=-1)
        q = q.view(q.shape[0], q.shape[1], H, D)
        k = k.view(k.shape[0], k.shape[1], H, D)
        q, k = rotary_emb(q, k)
        q = q.view(q.shape[0], q.shape[1], -1)
        k = k.view(k.shape[0], k.shape[1], -1)
        attn_output = attn(q, k, v_)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = F.linear(attn_output, L["o"], L["ob"])
        return attn_output

    @module
    def mlp(hidden_states, w1, b1, w2, b2, output_activation):  # Llama4VisionMLP.forward
        hidden_states = F.linear(hidden_states, w1, b1)
        hidden_states = module(F.gelu)(hidden_states)
        hidden_states = F.linear(hidden_states, w2, b2)
        if output_activation:
            return module(F.gelu)(hidden_states)
        return hidden_states

    @module
    def layer(hidden_state, L):  # Llama4VisionEncoderLayer.forward
        residual = hidden_state
        hidden_state = module(F.layer_norm)(hidden_state, (C,), L["ln1"], L["ln1b"], eps)
        hidden_state = self_attn(hidden_state, L)
        hidden_state = residual + hidden_state
        residual = hidden_state
        hidden_state = module(F.layer_norm)(hidden_state, (C,), L["ln2"], L["ln2b"], eps)
        hidden_state = mlp(hidden_state, L["fc1"], L["fc1b"], L["fc2"], L["fc2b"], False)
        hidden_state = residual + hidden_state
        outputs = (hidden_state,)
        return outputs

    @module
    def encoder(hidden_states):  # Llama4VisionEncoder.forward
        for L in layers:
            layer_outputs = layer(hidden_states, L)
            hidden_states = layer_outputs[0]
        return hidden_states

    @module
    def patch_embedding(hidden_states):  # Llama4UnfoldConvolution.forward
        hidden_states = module(lambda y: F.unfold(y, kernel_size=(P, P), stride=P))(hidden_states)
        hidden_states = hidden_states.permute(0, 2, 1)
        hidden_states = F.linear(hidden_states, W["patch"])
        return hidden_states

    def pixel_shuffle(input_tensor, shuffle_ratio):  # mllama4.py pixel_shuffle
        batch_size, num_patches, channels = input_tensor.shape
        patch_size = int(num_patches ** 0.5)
        input_tensor = input_tensor.view(batch_size, patch_size, patch_size, -1)
        batch_size, height, width, channels = input_tensor.size()
        reshaped_tensor = input_tensor.view(batch_size, height, int(width * shuffle_ratio), int(channels / shuffle_ratio))
        reshaped_tensor = reshaped_tensor.permute(0, 2, 1, 3).contiguous()
        reshaped_tensor = reshaped_tensor.view(batch_size, int(height * shuffle_ratio), int(width * shuffle_ratio),
                                               int(channels / (shuffle_ratio ** 2)))
        reshaped_tensor = reshaped_tensor.permute(0, 2, 1, 3).contiguous()
        output_tensor = reshaped_tensor.view(batch_size, -1, reshaped_tensor.shape[-1])
        return output_tensor

    @module
    def vision_adapter(encoded_patches):  # Llama4VisionPixelShuffleMLP.forward (multi_modal_projector_bias)
        encoded_patches = pixel_shuffle(encoded_patches, ratio)
        return mlp(encoded_patches, W["a1"], None, W["a2"], None, True)

    @module
    def vision_model(images_flattened):  # Llama4VisionModel.forward
        hidden_state = patch_embedding(images_flattened)
        num_tiles, num_patches, hidden_dim = hidden_state.shape
        class_embedding = W["cls"].expand(hidden_state.shape[0], 1, hidden_state.shape[-1])
        hidden_state = torch.cat([hidden_state, class_embedding], dim=1)
        num_patches += 1
        hidden_state = hidden_state.reshape(num_tiles, 1, num_patches, hidden_dim)
        positional_embedding = W["pos"].to(dtype=hidden_state.dtype)
        hidden_state = hidden_state + positional_embedding
        hidden_state = module(F.layer_norm)(hidden_state, (C,), W["pre"], W["preb"], eps)
        hidden_state = hidden_state.view(num_tiles, -1, hidden_dim)
        hidden_state = encoder(hidden_state)
        hidden_state = module(F.layer_norm)(hidden_state, (C,), W["post"], W["postb"], eps)
        hidden_state = hidden_state[:, :-1, :]
        hidden_state = vision_adapter(hidden_state)
        return hidden_state

    with torch.inference_mode():
        before = tr.O.opobs_current()
        tr.O.opobs_reset_peak()
        pixel_values = torch.randn(n, cin, img, img, dtype=dt)  # the dummy batch, in the model's dtype
        # Llama4ForConditionalGeneration._process_image_input
        vision_embeddings_flat = vision_model(pixel_values)
        vision_embeddings_flat = F.linear(vision_embeddings_flat, W["proj"])  # Llama4MultiModalProjector
        peak = tr.O.opobs_peak()
        where = tr.O.opobs_peak_where().decode()
    print(json.dumps({"config": os.path.basename(args.config), "precision": args.precision, "items": args.items,
                      "tiles": n, "allocated_before": before, "peak": peak - before,
                      "per_item": (peak - before) / args.items, "where": where,
                      "outputs": vision_embeddings_flat.numel() * vision_embeddings_flat.element_size()}))
    return 0


def gemma4(args, cfg, tr, torch, F):
    """Gemma 4's vision tower on the dummy videos, vllm-project/vllm @ 01bae2190e1c298115941f50bd6ed508216f24e7
    vllm/model_executor/models/gemma4_mm.py Gemma4ForConditionalGeneration._process_video_input (frames encoded in
    chunks of --chunk, _encoder_chunk's; each chunk's last_hidden_state kept in a list; torch.cat; the pooler per
    frame; one embed_vision call) over transformers @ 0246b4f3335464614ef1de66531f9131a44ec801
    src/transformers/models/gemma4/modeling_gemma4.py: Gemma4VisionPatchEmbedder (forward, _position_embeddings),
    Gemma4VisionEncoder / EncoderLayer / Attention / MLP, Gemma4RMSNorm, Gemma4VisionRotaryEmbedding,
    apply_multidimensional_rope, Gemma4VisionPooler. Not the source's: SDPA's kernel (torch 1.13 has none), replaced
    by its output and float32 logsumexp filled one query row at a time; the attention mask taken as an expand of
    the [b, N] padding mask (a view); Gemma4ClippableLinear's clamps (use_clipped_linears off). The dummy video
    (Gemma4DummyInputsBuilder): 32 frames of 224 x 224, each patchified at max_soft_tokens 70 (70 x k^2 patch
    slots, the image resized by _compute_num_soft_tokens' rule, the rest padding at position (-1, -1))."""
    import math
    v = cfg["vision_config"]
    dt = torch.bfloat16 if args.precision == "bf16" else torch.float32
    C, I, L = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"]
    H, D = v["num_attention_heads"], v.get("head_dim", v["hidden_size"] // v["num_attention_heads"])
    p, k, P = v["patch_size"], v["pooling_kernel_size"], v["position_embedding_size"]
    Ht = cfg["text_config"]["hidden_size"]
    eps = v.get("rms_norm_eps", 1e-6)
    N = 70 * k * k
    unit = p * k
    scale = math.sqrt(N / ((224 / p) * (224 / p)))
    side = max(unit, int(math.floor(224 * scale / unit)) * unit) // p
    frames = args.items * 32
    chunk = args.chunk or frames

    def w(*s):
        return (torch.randn(*s) * 0.02).to(dt)

    def module(f):  # nn.Module._call_impl: the args tuple holds the inputs until forward returns
        def call(*a, **kw):
            return f(*a, **kw)
        return call

    W = {"in": w(C, 3 * p * p), "table": w(2, P, C), "proj": w(Ht, C)}
    layers = [{"q": w(H * D, C), "k": w(H * D, C), "v": w(H * D, C), "o": w(C, H * D), "qn": w(D), "kn": w(D),
               "ln1": w(C), "ln2": w(C), "ln3": w(C), "ln4": w(C), "gate": w(I, C), "up": w(I, C), "down": w(C, I)}
              for _ in range(L)]
    theta = v.get("rope_parameters", {}).get("rope_theta", 100.0)
    spatial_dim = D // 2
    inv_freq = 1.0 / (theta ** (torch.arange(0, spatial_dim, 2, dtype=torch.int64).float() / spatial_dim))

    @module
    def rms(hidden_states, weight=None):  # Gemma4RMSNorm.forward
        def _norm(hs):
            mean_squared = hs.pow(2).mean(-1, keepdim=True) + eps
            return hs * torch.pow(mean_squared, -0.5)
        normed_output = _norm(hidden_states.float())
        if weight is not None:
            normed_output = normed_output * weight.float()
        return normed_output.type_as(hidden_states)

    def _position_embeddings(pixel_position_ids, padding_positions):
        clamped_positions = pixel_position_ids.clamp(min=0)
        one_hot = F.one_hot(clamped_positions, num_classes=P)
        one_hot = one_hot.permute(0, 2, 1, 3).to(W["table"])
        position_embeddings = one_hot @ W["table"]
        position_embeddings = position_embeddings.sum(dim=1)
        position_embeddings = torch.where(padding_positions.unsqueeze(-1), torch.zeros((), dtype=dt), position_embeddings)
        return position_embeddings

    @module
    def patch_embedder(pixel_values, pixel_position_ids, padding_positions):  # Gemma4VisionPatchEmbedder.forward
        pixel_values = 2 * (pixel_values - 0.5)
        hidden_states = F.linear(pixel_values.to(W["in"].dtype), W["in"])
        position_embeddings = _position_embeddings(pixel_position_ids, padding_positions)
        return hidden_states + position_embeddings

    @module
    def rotary_emb(x, position_ids):  # Gemma4VisionRotaryEmbedding.forward
        inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        all_cos, all_sin = [], []
        for i in range(2):
            dim_position_ids = position_ids[:, :, i]
            dim_position_ids_expanded = dim_position_ids[:, None, :].float()
            freqs = (inv_freq_expanded.float() @ dim_position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * 1.0
            sin = emb.sin() * 1.0
            all_cos.append(cos)
            all_sin.append(sin)
        cos = torch.cat(all_cos, dim=-1).to(dtype=x.dtype)
        sin = torch.cat(all_sin, dim=-1).to(dtype=x.dtype)
        return cos, sin

    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim):
        cos = cos.unsqueeze(unsqueeze_dim)
        sin = sin.unsqueeze(unsqueeze_dim)
        return (x * cos) + (rotate_half(x) * sin)

    def apply_multidimensional_rope(x, cos, sin, position_ids, unsqueeze_dim=2):
        ndim = position_ids.shape[-1]
        n = 2 * (x.shape[-1] // (2 * ndim))
        x_parts = torch.split(x, [n] * ndim, dim=-1)
        cos_parts = torch.split(cos, [n] * ndim, dim=-1)
        sin_parts = torch.split(sin, [n] * ndim, dim=-1)
        y_parts = [apply_rotary_pos_emb(x_parts[j], cos_parts[j], sin_parts[j], unsqueeze_dim) for j in range(ndim)]
        return torch.cat(y_parts, dim=-1)

    @module
    def sdpa(query, key, value, mask):  # the kernel: its output [b, H, N, D] and logsumexp [b, H, N] float32
        b, h, n, d = query.shape
        out = torch.empty(b, h, n, d, dtype=query.dtype)
        lse = torch.empty(b, h, n, dtype=torch.float32)
        for i in range(b):
            for r in range(n):
                sc = torch.einsum("hd,htd->ht", query[i, :, r].float(), key[i].float())
                sc = sc.masked_fill(~mask[i, 0, r][None, :], float("-inf"))
                lse[i, :, r] = torch.logsumexp(sc, dim=-1)
                out[i, :, r] = torch.einsum("ht,htd->hd", sc.softmax(-1), value[i].float()).to(query.dtype)
                del sc
        return out.transpose(1, 2).contiguous()  # sdpa_attention_forward

    @module
    def self_attn(hidden_states, position_embeddings, attention_mask, position_ids, Lw):  # Gemma4VisionAttention
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, D)
        cos, sin = position_embeddings
        query_states = F.linear(hidden_states, Lw["q"]).view(hidden_shape)
        query_states = rms(query_states, Lw["qn"])
        query_states = apply_multidimensional_rope(query_states, cos, sin, position_ids)
        query_states = query_states.transpose(1, 2)
        key_states = F.linear(hidden_states, Lw["k"]).view(hidden_shape)
        key_states = rms(key_states, Lw["kn"])
        key_states = apply_multidimensional_rope(key_states, cos, sin, position_ids)
        key_states = key_states.transpose(1, 2)
        value_states = F.linear(hidden_states, Lw["v"]).view(hidden_shape)
        value_states = rms(value_states)
        value_states = value_states.transpose(1, 2)
        attn_output = sdpa(query_states, key_states, value_states, attention_mask)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = F.linear(attn_output, Lw["o"])
        return attn_output

    @module
    def mlp(x, Lw):  # Gemma4VisionMLP.forward
        return F.linear(F.gelu(F.linear(x, Lw["gate"]), approximate="tanh") * F.linear(x, Lw["up"]), Lw["down"])

    @module
    def layer(hidden_states, position_embeddings, attention_mask, position_ids, Lw):  # Gemma4VisionEncoderLayer
        residual = hidden_states
        hidden_states = rms(hidden_states, Lw["ln1"])
        hidden_states = self_attn(hidden_states, position_embeddings, attention_mask, position_ids, Lw)
        hidden_states = rms(hidden_states, Lw["ln2"])
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = rms(hidden_states, Lw["ln3"])
        hidden_states = mlp(hidden_states, Lw)
        hidden_states = rms(hidden_states, Lw["ln4"])
        hidden_states = residual + hidden_states
        return hidden_states

    @module
    def encoder(inputs_embeds, attention_mask, pixel_position_ids):  # Gemma4VisionEncoder.forward
        b, n = attention_mask.shape
        attention_mask = attention_mask[:, None, None, :].expand(b, 1, n, n)
        hidden_states = inputs_embeds
        position_embeddings = rotary_emb(hidden_states, pixel_position_ids)
        for Lw in layers:
            hidden_states = layer(hidden_states, position_embeddings, attention_mask, pixel_position_ids, Lw)
        return hidden_states

    @module
    def pooler(hidden_states, pixel_position_ids, padding_positions, output_length):  # Gemma4VisionPooler
        hidden_states = hidden_states.masked_fill(padding_positions.unsqueeze(-1), 0.0)
        if hidden_states.shape[1] != output_length:
            input_seq_len = hidden_states.shape[1]
            kk = int((input_seq_len // output_length) ** 0.5)
            clamped_positions = pixel_position_ids.clamp(min=0)
            max_x = clamped_positions[..., 0].max(dim=-1, keepdim=True)[0] + 1
            kernel_idxs = torch.div(clamped_positions, kk, rounding_mode="floor")
            kernel_idxs = kernel_idxs[..., 0] + (max_x // kk) * kernel_idxs[..., 1]
            weights = F.one_hot(kernel_idxs.long(), output_length).float() / (kk * kk)
            output = weights.transpose(1, 2) @ hidden_states.float()
            mask = torch.logical_not((weights == 0).all(dim=1))
            hidden_states, padding_positions = output.to(hidden_states.dtype), mask
        hidden_states *= C ** 0.5
        return hidden_states, padding_positions

    # the processor's patch positions of one frame: side x side real patches, then padding
    ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    pos = torch.full((N, 2), -1, dtype=torch.int64)
    pos[: side * side, 0], pos[: side * side, 1] = xs.reshape(-1), ys.reshape(-1)
    with torch.inference_mode():
        before = tr.O.opobs_current()
        tr.O.opobs_reset_peak()
        pixel_values = torch.empty(frames, N, 3 * p * p, dtype=dt).uniform_()  # the dummy batch, in the model's dtype
        pixel_values[:, side * side:] = 0
        pixel_position_ids = pos.expand(frames, N, 2).clone()
        after_inputs = tr.O.opobs_current()
        # _process_video_input
        padding_positions = (pixel_position_ids == -1).all(dim=-1)
        last_hidden_states_list = []
        for i in range(0, frames, chunk):
            pv_chunk = pixel_values[i: i + chunk]
            pp_chunk = pixel_position_ids[i: i + chunk]
            pad_chunk = padding_positions[i: i + chunk]
            inputs_embeds = patch_embedder(pv_chunk, pp_chunk, pad_chunk).to(dt)
            last_hidden_state = encoder(inputs_embeds, ~pad_chunk, pp_chunk)
            last_hidden_states_list.append(last_hidden_state)
            del inputs_embeds, last_hidden_state
        last_hidden_states = torch.cat(last_hidden_states_list, dim=0)
        output_length = pixel_values.shape[1] // (k * k)
        all_frame_valid_states = []
        for i in range(frames):
            single_hidden = last_hidden_states[i].unsqueeze(0)
            single_pos_ids = pixel_position_ids[i].unsqueeze(0)
            single_pad_pos = padding_positions[i].unsqueeze(0)
            pooled_states, valid_mask = pooler(single_hidden, single_pos_ids, single_pad_pos, output_length)
            valid_states = pooled_states[valid_mask]
            all_frame_valid_states.append(valid_states)
            del pooled_states, valid_mask, valid_states
        flat_valid_states = torch.cat(all_frame_valid_states, dim=0).to(dt)
        flat_proj_embs = F.linear(rms(flat_valid_states.unsqueeze(0)), W["proj"]).squeeze(0)  # embed_vision
        peak = tr.O.opobs_peak()
        where = tr.O.opobs_peak_where().decode()
    print(json.dumps({"config": os.path.basename(args.config), "precision": args.precision, "videos": args.items,
                      "frames": frames, "chunk": chunk, "patches": N, "real_patches": side * side,
                      "allocated_before": before, "inputs": after_inputs - before, "peak": peak - before,
                      "where": where, "outputs": flat_proj_embs.numel() * flat_proj_embs.element_size()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
