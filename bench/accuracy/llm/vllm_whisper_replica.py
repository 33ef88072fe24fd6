"""vllm_whisper_replica.py -- vLLM's Whisper encoder as its profiling run calls it (the encoder phase of --serve,
src/engine/serve_encdec.c encoder_phase), in plain torch (1.13, CPU), with the accuracy harness's allocator counter
(bench/accuracy/measure.py: memtrack preloaded, opobserver's between-op readings), under torch.inference_mode.

Source, statement by statement (the same statements, so that Python keeps the same names alive):
  vllm-project/vllm @ 00a23257a13090193fb098c7573598c5fdb4b15e vllm/model_executor/models/whisper.py
    WhisperForConditionalGeneration.embed_multimodal (_parse_and_validate_audio_input: json_map_leaves(x.to(
      self.dtype)), itself here: the dummy batch is already in the model's dtype, vllm/inputs/registry.py @ f06ae651
      call_hf_processor; get_encoder_outputs; unbind), WhisperEncoder.forward (for features in input_features:
      gelu(conv1), gelu(conv2), transpose, + embed_positions.weight[:T], .to(embeds.dtype); torch.stack; the
      layers; layer_norm), WhisperEncoderLayer.forward (self_attn_layer_norm, self_attn, residual + ..,
      final_layer_norm, mlp, residual + .., cast_overflow_tensors), WhisperAttention.forward (qkv_proj, split,
      attn, out_proj), WhisperEncoderAttention.forward (3-D input: no unsqueeze), WhisperMLP.forward (fc1,
      activation_fn nn.GELU, fc2)
  vllm/model_executor/layers/attention/mm_encoder_attention.py @ 03037b4293e340b034d36786f002bbcb3e526236
    MMEncoderAttention._forward_fa (maybe_reshape_qkv_to_4d: views; output.reshape(bsz, q_len, -1))
  vllm/v1/attention/ops/vit_attn_wrappers.py @ 03037b42 flash_attn_maxseqlen_wrapper (cu_seqlens arange int32,
    the (b s) rearranges, flash_attn_varlen_func, the rearrange back)
  vllm/model_executor/models/utils.py cast_overflow_tensors (isinf().any() or isnan().any())

What is not the source's: flash_attn_varlen_func (its output and its float32 softmax_lse [heads, rows]) is replaced
by those two tensors filled one query row at a time with the math of its clip; the fill's temporaries (one row's
scores) are counted by the harness (below the worst op, the MLP's). The convolutions run as torch's CPU
nn.functional.conv1d (cuDNN's workspace is not vramcalc's either).

Prints one JSON object: peak, the highest between-op reading over embed_multimodal less what was allocated before
the dummy input features (the weights): what serve_encdec.c's encoder phase gives above the weights (the features
and encoder_phase's bytes).
"""
import argparse
import json
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(_here))), "tools"),
                os.path.dirname(_here), _here]
import measure  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--clips", type=int, default=3, help="the dummy clips in the batch")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    args = ap.parse_args(argv)
    measure.reexec_with_preload()
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    tr = measure.Tracker()
    tr.start(install=True)
    with open(args.config) as f:
        cfg = json.load(f)
    dt = torch.bfloat16 if args.precision == "bf16" else torch.float32
    C, H, I, depth = cfg["d_model"], cfg["encoder_attention_heads"], cfg["encoder_ffn_dim"], cfg["encoder_layers"]
    mel, T, B = cfg["num_mel_bins"], cfg["max_source_positions"], args.clips
    D = C // H

    def w(*s):
        return (torch.randn(*s) * 0.02).to(dt)

    def module(f):  # nn.Module._call_impl: the args tuple holds the inputs until forward returns
        def call(*a, **kw):
            return f(*a, **kw)
        return call

    W = {"conv1": w(C, mel, 3), "conv1b": w(C), "conv2": w(C, C, 3), "conv2b": w(C), "pos": w(T, C),
         "ln": w(C), "lnb": w(C)}
    layers = [{"ln1": w(C), "ln1b": w(C), "qkv": w(3 * C, C), "qkvb": w(3 * C), "o": w(C, C), "ob": w(C),
               "ln2": w(C), "ln2b": w(C), "fc1": w(I, C), "fc1b": w(I), "fc2": w(C, I), "fc2b": w(C)} for _ in range(depth)]

    conv1 = module(lambda x: F.conv1d(x, W["conv1"], W["conv1b"], padding=1))
    conv2 = module(lambda x: F.conv1d(x, W["conv2"], W["conv2b"], stride=2, padding=1))
    gelu = module(F.gelu)  # nn.GELU (get_act_fn("gelu")); nn.functional.gelu in WhisperEncoder.forward

    def flash_attn_varlen_func(q, k, v, cu_seqlens):  # output and softmax_lse, one query row at a time
        rows = q.shape[0]
        out = torch.empty(rows, H, D, dtype=q.dtype)
        lse = torch.empty(H, rows, dtype=torch.float32)
        for i in range(cu_seqlens.numel() - 1):
            a, b = int(cu_seqlens[i]), int(cu_seqlens[i + 1])
            for r in range(a, b):
                sc = torch.einsum("hd,thd->ht", q[r].float(), k[a:b].float()) * D ** -0.5
                lse[:, r] = torch.logsumexp(sc, dim=-1)
                out[r] = torch.einsum("ht,thd->hd", sc.softmax(-1), v[a:b].float()).to(q.dtype)
                del sc
        return out

    def flash_attn_maxseqlen_wrapper(q, k, v, batch_size):
        q_len = q.size(1)
        cu_seqlens = torch.arange(0, (batch_size + 1) * q_len, step=q_len, dtype=torch.int32)
        q, k, v = (x.reshape(-1, *x.shape[2:]) for x in [q, k, v])  # einops "b s ... -> (b s) ...": views
        output = flash_attn_varlen_func(q, k, v, cu_seqlens)
        context_layer = output.view(batch_size, q_len, *output.shape[1:])  # "(b s) h d -> b s h d"
        return context_layer

    @module
    def attn(query, key, value):  # WhisperEncoderAttention.forward -> MMEncoderAttention._forward_fa
        bsz, q_len = query.size()[:2]
        query = query.view(bsz, q_len, H, D)
        key = key.view(bsz, q_len, H, D)
        value = value.view(bsz, q_len, H, D)
        output = flash_attn_maxseqlen_wrapper(query, key, value, bsz)
        output = output.reshape(bsz, q_len, -1)
        return output

    @module
    def self_attn(hidden_states, L):  # WhisperAttention.forward
        qkv = F.linear(hidden_states, L["qkv"], L["qkvb"])
        q, k, v = qkv.split([C, C, C], dim=-1)
        attn_output = attn(q, k, v)
        output = F.linear(attn_output, L["o"], L["ob"])
        return output

    @module
    def mlp(hidden_states, L):  # WhisperMLP.forward
        hidden_states = F.linear(hidden_states, L["fc1"], L["fc1b"])
        hidden_states = gelu(hidden_states)
        hidden_states = F.linear(hidden_states, L["fc2"], L["fc2b"])
        return hidden_states

    def cast_overflow_tensors(tensors, offset=1000):
        if tensors.isinf().any() or tensors.isnan().any():
            clamp_value = torch.finfo(tensors.dtype).max - offset
            tensors = torch.clamp(tensors, min=-clamp_value, max=clamp_value)
        return tensors

    @module
    def layer(hidden_states, L):  # WhisperEncoderLayer.forward
        residual = hidden_states
        hidden_states = module(F.layer_norm)(hidden_states, (C,), L["ln1"], L["ln1b"])
        hidden_states = self_attn(hidden_states=hidden_states, L=L)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = module(F.layer_norm)(hidden_states, (C,), L["ln2"], L["ln2b"])
        hidden_states = mlp(hidden_states, L)
        hidden_states = residual + hidden_states
        hidden_states = cast_overflow_tensors(hidden_states)
        return hidden_states

    @module
    def encoder(input_features):  # WhisperEncoder.forward
        hidden_states = []
        input_is_batched = False
        for features in input_features:
            embeds = gelu(conv1(features))
            embeds = gelu(conv2(embeds))
            embeds = embeds.transpose(-1, -2)
            embeds = (embeds + W["pos"][: embeds.size(-2), :]).to(embeds.dtype)
            hidden_states.append(embeds)
            input_is_batched = embeds.ndim > 2
        if input_is_batched:
            hidden_states = torch.cat(hidden_states)
        else:
            hidden_states = torch.stack(hidden_states, dim=0)
        for L in layers:
            hidden_states = layer(hidden_states, L)
        hidden_states = module(F.layer_norm)(hidden_states, (C,), W["ln"], W["lnb"])
        return hidden_states

    def embed_multimodal(**kwargs):  # WhisperForConditionalGeneration.embed_multimodal
        input_features = kwargs.pop("input_features", None)  # _parse_and_validate_audio_input
        if input_features is not None:
            input_features = input_features.to(dt)
        feats = input_features
        enc_output = encoder(feats)  # get_encoder_outputs
        return enc_output.unbind(dim=0)

    with torch.inference_mode():
        before = tr.O.opobs_current()
        tr.O.opobs_reset_peak()
        batched = {"input_features": torch.randn(B, mel, 2 * T, dtype=dt)}  # the dummy batch, the model's dtype
        outputs = embed_multimodal(**batched)
        peak = tr.O.opobs_peak()
        where = tr.O.opobs_peak_where().decode()
    print(json.dumps({"config": os.path.basename(args.config), "precision": args.precision, "clips": B,
                      "allocated_before": before, "peak": peak - before, "where": where,
                      "outputs": sum(o.numel() * o.element_size() for o in outputs),
                      "vllm": "00a23257a13090193fb098c7573598c5fdb4b15e"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
