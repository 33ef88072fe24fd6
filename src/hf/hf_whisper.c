/*
 * hf_whisper.c — whisper (model_type whisper; issue 31, item 4): the keys of
 * WhisperConfig that the row's generic reading (hf_read.c) cannot check,
 * WhisperForConditionalGeneration's parameters and its layers for training
 * and inference.
 *
 * Sources, huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e,
 * src/transformers/models/whisper/modeling_whisper.py:
 *  - WhisperEncoder.__init__: conv1 nn.Conv1d(num_mel_bins, d_model, kernel_size=3, padding=1),
 *    conv2 nn.Conv1d(d_model, d_model, kernel_size=3, stride=2, padding=1), embed_positions
 *    nn.Embedding(max_source_positions, d_model) with requires_grad_(False) (filled with
 *    sinusoids() by WhisperPreTrainedModel._init_weights), layers, layer_norm nn.LayerNorm(d_model);
 *  - WhisperEncoderLayer.__init__: self_attn (WhisperAttention: k_proj nn.Linear(bias=False), v_proj,
 *    q_proj, out_proj with biases), self_attn_layer_norm, fc1 (d_model -> encoder_ffn_dim), fc2,
 *    final_layer_norm; WhisperDecoderLayer.__init__: self_attn, self_attn_layer_norm, encoder_attn,
 *    encoder_attn_layer_norm, fc1 (decoder_ffn_dim), fc2, final_layer_norm; WhisperAttention.__init__
 *    raises ValueError unless embed_dim is divisible by num_heads;
 *  - WhisperDecoder.__init__: embed_tokens nn.Embedding(vocab_size, d_model, padding_idx),
 *    embed_positions WhisperPositionalEmbedding(max_target_positions, d_model) (an nn.Embedding),
 *    layers, layer_norm;
 *  - WhisperForConditionalGeneration.__init__: model (WhisperModel: encoder, decoder), proj_out
 *    nn.Linear(d_model, vocab_size, bias=False), _tied_weights_keys ["proj_out.weight"]: tied to
 *    embed_tokens under tie_word_embeddings (named_parameters() counts the tensor once).
 * configuration_whisper.py WhisperConfig.__init__: the defaults (whisper-tiny's sizes, dropouts 0,
 * layerdrops 0, apply_spec_augment False), attribute_map hidden_size -> d_model.
 * feature_extraction_whisper.py (@ 017010ff550f4da0f2d3f6ab1d1ad8390806d5b8) WhisperFeatureExtractor:
 * __init__ n_samples = chunk_length (30) x sampling_rate (16000), nb_max_frame = n_samples // hop_length
 * (160) = 3000; __call__ pads (padding "max_length", max_length n_samples) or truncates every clip to
 * 30 s and returns float32 input_features [feature_size (num_mel_bins), 3000].
 *
 * The forward (vc__hf_whisper_write below): WhisperForConditionalGeneration.forward with labels
 * (training) or decoder_input_ids (inference); --grad-ckpt: every layer of both stacks checkpointed,
 * the decoder's cache off; --mode generate: src/engine/generate.c's encoder-decoder path (the layer named
 * "encoder" once, the decoder from "decoder_input_ids", --prompt of them, a token a step; layers/whisper.c's
 * cached attention). What is not modelled is refused: every N-th layer checkpointed, --loss
 * and --tp outside --serve (vc_hf_build, src/hf/hf.c), fp16 outside --serve, autocast,
 * mixed precision, quantized weights, --pp, op-level checkpointing and activation offloading
 * (vc__whisper_check below), apply_spec_augment (vc__hf_whisper_read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "hf_encdec_writer.h"
#include "load.h"
#include "model.h"
#include "util.h"

/* A key's value, null read as absent (as hf_read.c's key_of). */
static const cJSON *wh_key(rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static int wh_bool(rd *r, const char *key, bool def, bool *out)
{
    const cJSON *v = wh_key(r, key);
    if (v && !cJSON_IsBool(v)) return vc__hf_bad(r, key, "expected true or false");
    *out = v ? cJSON_IsTrue(v) : def;
    return 0;
}

static int wh_prob(rd *r, const char *key, double *out)
{
    const cJSON *v = wh_key(r, key);
    if (v && (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1)))
        return vc__hf_bad(r, key, "expected a probability from 0 to 1");
    *out = v ? v->valuedouble : 0.0; /* WhisperConfig: 0.0 */
    return 0;
}

int vc__hf_whisper_read(rd *r, arch *a)
{
    /* WhisperAttention.__init__: embed_dim must be divisible by num_heads (the encoder's through the row's
     * head_dim split, naming encoder_attention_heads) */
    if (a->H % a->wh.dec_NH)
        return vc__hf_bad(r, "decoder_attention_heads", "d_model (%lld) must be divisible by decoder_attention_heads (%lld) "
                          "(WhisperAttention raises ValueError)", (long long)a->H, (long long)a->wh.dec_NH);
    if (a->dec_N > 1024)
        return vc__hf_bad(r, "decoder_layers", "%lld decoder layers: more than the limit of 1024", (long long)a->dec_N);
    /* WhisperEncoder.forward / WhisperDecoder.forward: LayerDrop skips a layer when torch.rand([]) <
     * layerdrop in training; the estimate is the step that runs every layer (the largest) */
    if (wh_prob(r, "encoder_layerdrop", &a->wh.enc_drop) || wh_prob(r, "decoder_layerdrop", &a->wh.dec_drop)) return -1;
    bool spec = false, ed = true, scale = false;
    if (wh_bool(r, "apply_spec_augment", false, &spec) || wh_bool(r, "is_encoder_decoder", true, &ed) ||
        wh_bool(r, "scale_embedding", false, &scale))
        return -1;
    /* WhisperModel._mask_input_features: SpecAugment's masks (numpy spans, input_features[mask] = 0) in training */
    if (spec) return vc__hf_bad(r, "apply_spec_augment", "true: SpecAugment's masking of input_features is not modelled");
    if (!ed)
        return vc__hf_bad(r, "is_encoder_decoder", "false: WhisperForConditionalGeneration is an encoder-decoder (false "
                          "is WhisperForCausalLM's decoder alone, not modelled)");
    /* the sizes each key makes, bounded so that the error names the key (2^48 elements in a weight) */
    const int64_t lim = INT64_C(1) << 48;
    int64_t t;
    if (__builtin_mul_overflow(a->wh.dec_I, a->H, &t) || t > lim)
        return vc__hf_bad(r, "decoder_ffn_dim", "fc1 / fc2 (%lld x %lld) are more than 2^48 elements", (long long)a->wh.dec_I,
                          (long long)a->H);
    if (__builtin_mul_overflow(a->wh.mel, 3 * a->H, &t) || t > lim)
        return vc__hf_bad(r, "num_mel_bins", "conv1's weight (%lld x %lld x 3) is more than 2^48 elements", (long long)a->H,
                          (long long)a->wh.mel);
    if (__builtin_mul_overflow(a->wh.mel, 2 * a->wh.src, &t) || t > lim)
        return vc__hf_bad(r, "num_mel_bins", "input_features (%lld x %lld frames) are more than 2^48 values per sample",
                          (long long)a->wh.mel, (long long)(2 * a->wh.src));
    /* the encoder's attention over max_source_positions frames: heads x frames x frames scores */
    if (__builtin_mul_overflow(a->wh.src, 2 * a->H, &t) || t > lim || __builtin_mul_overflow(a->NH, a->wh.src, &t) ||
        __builtin_mul_overflow(t, a->wh.src + 128, &t) || t > (INT64_C(1) << 56))
        return vc__hf_bad(r, "max_source_positions", "%lld: the encoder's positions (x d_model) or attention scores (x %lld "
                          "heads x itself) are too large", (long long)a->wh.src, (long long)a->NH);
    if (__builtin_mul_overflow(a->maxpos, a->H, &t) || t > lim)
        return vc__hf_bad(r, "max_target_positions", "embed_positions (%lld x %lld) is more than 2^48 elements",
                          (long long)a->maxpos, (long long)a->H);
    return 0;
}

/* Every product is bounded by hf_read.c's check_sizes and the checks above (each weight at most 2^48
 * elements, at most 1024 layers per stack): the sum stays below 2^62. */
int64_t vc__hf_whisper_parameters(const arch *a)
{
    const int64_t d = a->H;
    const int64_t attn = 4 * d * d + 3 * d; /* q, v, out_proj with biases, k_proj without */
    const int64_t ln = 2 * d;               /* nn.LayerNorm: weight and bias */
    const int64_t enc_layer = attn + ln + (d * a->I + a->I) + (a->I * d + d) + ln;
    const int64_t dec_layer = attn + ln + attn + ln + (d * a->wh.dec_I + a->wh.dec_I) + (a->wh.dec_I * d + d) + ln;
    const int64_t conv = (a->wh.mel * d * 3 + d) + (d * d * 3 + d);
    const int64_t encoder = conv + a->wh.src * d + a->N * enc_layer + ln; /* embed_positions: frozen, counted */
    const int64_t decoder = a->V * d + a->maxpos * d + a->dec_N * dec_layer + ln;
    return encoder + decoder + (a->tie ? 0 : a->V * d); /* proj_out: its own weight when untied */
}

/* ---- the layers ----
 *
 * WhisperForConditionalGeneration.forward as modeling_whisper.py @ efa7189c runs it:
 *  - labels given (training): decoder_input_ids = shift_tokens_right(labels, pad, decoder_start):
 *    new_zeros, [:, 1:] = labels[:, :-1].clone(), [:, 0] = start, masked_fill_(== -100, pad) (t5.c's
 *    T5DecoderIds: _shift_right is the same ops); inference: the batch's decoder_input_ids;
 *  - WhisperModel.forward: _mask_input_features (a no-op: apply_spec_augment False), the encoder:
 *    gelu(conv1(input_features)), gelu(conv2(.)), permute(0, 2, 1) + embed_positions.weight
 *    (WhisperEncoderPositions), dropout, the layers (WhisperEncoderLayer.forward: residual +
 *    dropout(self_attn(self_attn_layer_norm(h))); residual + dropout(fc2(dropout(act(fc1(
 *    final_layer_norm(h)))), activation_dropout)), layer_norm: encoder_outputs, whose
 *    last_hidden_state lives until the output is dropped (Seq2SeqLMOutput.encoder_last_hidden_state);
 *  - the decoder (WhisperDecoder.forward): embed_tokens(input_ids) + embed_positions(input_ids,
 *    position_ids = cache_position.unsqueeze(0).repeat(B, 1)) (WhisperPositionalEmbedding:
 *    self.weight[position_ids], per sample), dropout, no mask for sdpa (_update_causal_mask: None,
 *    is_causal in the self-attention), use_cache = config.use_cache (True): an EncoderDecoderCache whose
 *    DynamicCaches keep each layer's self- and cross-attention key and value states until the output
 *    is dropped; WhisperDecoderLayer.forward: self_attn, encoder_attn (k_proj / v_proj on the encoder's
 *    last_hidden_state), the MLP, each pre-LN with its residual; layer_norm;
 *  - lm_logits = self.proj_out(outputs[0]); CrossEntropyLoss()(lm_logits.view(-1, V), labels.reshape(-1)):
 *    the logits in the model's dtype (src/engine/loss.c "seq2seq_lm").
 * The input_features are the model's input, [num_mel_bins, 2 x max_source_positions] (WhisperFeatureExtractor
 * pads every clip to 30 s, 3000 frames; WhisperEncoder.forward raises ValueError on any other length) in the
 * model's dtype: the caller casts the extractor's float32 features before the call. */
/* One attention sub-layer of a Whisper layer: `pre`_layer_norm, q/k/v_proj, the core, out_proj,
 * dropout, the residual add (named res). kv: the encoder's output for the cross-attention. */
static void attention(edw *w, const arch *a, const char *mod, const char *ln, const char *residual, const char *kv,
                      int64_t heads, bool causal, bool cache, const char *res)
{
    char q[64], k[64], v[64], core[64], out[64], dr[64];
    snprintf(q, sizeof q, "%s.q_proj", mod);
    snprintf(k, sizeof k, "%s.k_proj", mod);
    snprintf(v, sizeof v, "%s.v_proj", mod);
    snprintf(core, sizeof core, "%s.attention", mod);
    snprintf(out, sizeof out, "%s.out_proj", mod);
    snprintf(dr, sizeof dr, "%s.dropout", mod);
    /* a tensor-parallel rank's q / k / v: heads / tp of them (vLLM's column-parallel shards, hf_tp.c) */
    const int64_t hw = a->H / (a->wh.tp > 1 ? a->wh.tp : 1);
    /* the normed states: an argument of the attention until it returns (after out_proj) */
    layer_norm(w, a, ln, residual, out);
    linear(w, q, ln, a->H, hw, true);
    linear(w, k, kv ? kv : ln, a->H, hw, false); /* "no bias in the k_proj in original code" */
    linear(w, v, kv ? kv : ln, a->H, hw, true);
    cJSON *o = lay(w, "WhisperAttention", core);
    ins(w, o, q, k, v);
    num(w, o, "num_heads", (double)heads);
    if (a->p_attn > 0) num(w, o, "dropout", a->p_attn);
    if (causal) flag(w, o, "causal", true);
    if (cache) flag(w, o, "cache", true);
    linear(w, out, core, hw, a->H, true); /* a row-parallel shard: its bias whole */
    const char *d = dropout(w, dr, out, a->p_resid); /* before the Add: C leaves the order of arguments open */
    ins(w, lay(w, "Add", res), residual ? residual : "input", d, NULL);
}

/* fc1, act, dropout(activation_dropout), fc2, dropout, the residual */
static void mlp(edw *w, const arch *a, const char *residual, int64_t inter)
{
    layer_norm(w, a, "final_layer_norm", residual, NULL);
    linear(w, "fc1", "final_layer_norm", a->H, inter, true);
    act_layer(w, a, "activation_fn");
    const char *h = dropout(w, "activation_dropout", "activation_fn", a->wh.p_act);
    linear(w, "fc2", h, inter, a->H, true);
    const char *d = dropout(w, "fc2.dropout", "fc2", a->p_resid); /* before the Add (argument order is unspecified) */
    ins(w, lay(w, "Add", "residual"), residual, d, NULL);
}

/* a module's output kept until the model's forward returns (t5.c's T5Return with keep_forward) */
static void keep(edw *w, const char *name, const char *in, const char *local1, const char *local2)
{
    cJSON *o = lay(w, "T5Return", name);
    ins(w, o, in, local1, local2);
    flag(w, o, "keep_forward", true);
}

/* A stack's layers: a Sequential repeated n times; with gradient checkpointing every layer through
 * self._gradient_checkpointing_func(layer.__call__, ...) (WhisperEncoder.forward, WhisperDecoder.forward) */
static cJSON *blocks(edw *w, const arch *a, const char *name, const char *in, int64_t n)
{
    cJSON *seq = lay(w, "Sequential", name);
    ins(w, seq, in, NULL, NULL);
    if (n > 1) num(w, seq, "repeat", (double)n);
    if (a->ckpt) flag(w, seq, "checkpoint", true);
    cJSON *arr = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!arr) w->r->oom = true;
    return arr;
}

/* ---- --serve's profiling parts (vc_hf_split.whisper_part; src/engine/serve_encdec.c) ----
 *
 * vLLM's WhisperForConditionalGeneration (vllm-project/vllm @ 00a23257a13090193fb098c7573598c5fdb4b15e,
 * vllm/model_executor/models/whisper.py) in its profiling run (vllm/v1/worker/gpu_model_runner.py @
 * 000fc94b754f66aeb60ef5acf1ea2e94cdc65164 profile_run):
 *  - the encoder alone (embed_multimodal -> WhisperModel.get_encoder_outputs -> WhisperEncoder.forward over the
 *    dummy clips) is not a part: src/engine/serve_encdec.c encoder_phase models vLLM's own modules op by op;
 *  - part 2, the decoder's dummy run (_dummy_run(max_num_tokens, is_profile=True)): _init_model_kwargs
 *    returns {} for a generating model, so WhisperForConditionalGeneration.forward gets no encoder_outputs:
 *    WhisperModel.forward's enc_states is None and WhisperCrossAttention.forward skips kv_proj (k = v =
 *    None); the run is eager with no attention metadata (force_attention False under CUDAGraphMode.NONE),
 *    and the attention backends' forward returns its output buffer zeroed for a profiling run
 *    (vllm/v1/attention/backends/flash_attn.py FlashAttentionImpl.forward, triton_attn.py
 *    TritonAttentionImpl.forward: "if attn_metadata is None: # Profiling run. return output.fill_(0)"), the
 *    buffer [T, num_heads x head_size] that Attention.forward allocates (torch.empty). So each decoder
 *    layer is: self_attn_layer_norm, qkv_proj [T, 3 d_model] (q, k, v: views, locals until
 *    WhisperAttention.forward returns), the zeroed output (a new [T, d_model]: a Slice of qkv scaled by 0
 *    here), out_proj, the residual; encoder_attn_layer_norm, q_proj (a local until forward returns), the
 *    zeroed output, out_proj, the residual; final_layer_norm, fc1, the activation, fc2, the residual. The
 *    locals that Python keeps until a sub-layer returns (its normed input, qkv or q) are not held past their
 *    last use here: vramcalc's profiling plan does not apply "held_until" (src/model/model.h hold_val), at
 *    most two [T, d_model] tensors more at a sub-layer's out_proj in vLLM. The tokens
 *    are the model's input (int64 [seq]); embed_tokens + embed_positions (WhisperDecoder.forward), the final
 *    layer_norm, proj_out tied to embed_tokens (ParallelLMHead.tie_weights). */
static void vllm_decoder(edw *w, const arch *a)
{
    cJSON *o = lay(w, "Embedding", "model.decoder.embed_tokens");
    ins(w, o, "input", NULL, NULL);
    num(w, o, "num_embeddings", (double)a->V);
    num(w, o, "embedding_dim", (double)a->H);
    o = lay(w, "PositionEmbedding", "model.decoder.embed_positions");
    ins(w, o, "input", NULL, NULL);
    num(w, o, "num_embeddings", (double)a->maxpos);
    num(w, o, "embedding_dim", (double)a->H);
    flag(w, o, "per_sample", true);
    ins(w, lay(w, "Add", "model.decoder.inputs"), "model.decoder.embed_tokens", "model.decoder.embed_positions", NULL);
    cJSON *la = blocks(w, a, "model.decoder.layers", "model.decoder.inputs", a->dec_N);
    if (!la) return;
    edw b = {w->r, la};
    const int64_t hw = a->H / (a->wh.tp > 1 ? a->wh.tp : 1); /* a tensor-parallel rank's heads x head_dim */
    /* self_attn: qkv_proj, the zeroed output, out_proj */
    layer_norm(&b, a, "self_attn_layer_norm", NULL, NULL);
    linear(&b, "self_attn.qkv_proj", "self_attn_layer_norm", a->H, 3 * hw, true);
    o = lay(&b, "Slice", "self_attn.q");
    num(&b, o, "dim", -1);
    num(&b, o, "end", (double)hw);
    num(&b, lay(&b, "Scale", "self_attn.attn"), "factor", 0);
    linear(&b, "self_attn.out_proj", "self_attn.attn", hw, a->H, true);
    ins(&b, lay(&b, "Add", "self_attn.residual"), "input", "self_attn.out_proj", NULL);
    /* encoder_attn: q_proj, the zeroed output (no kv_proj without encoder states), out_proj */
    layer_norm(&b, a, "encoder_attn_layer_norm", "self_attn.residual", NULL);
    linear(&b, "encoder_attn.q_proj", "encoder_attn_layer_norm", a->H, hw, true);
    num(&b, lay(&b, "Scale", "encoder_attn.attn"), "factor", 0);
    linear(&b, "encoder_attn.out_proj", "encoder_attn.attn", hw, a->H, true);
    ins(&b, lay(&b, "Add", "encoder_attn.residual"), "self_attn.residual", "encoder_attn.out_proj", NULL);
    mlp(&b, a, "encoder_attn.residual", a->wh.dec_I);
    layer_norm(w, a, "model.decoder.layer_norm", NULL, NULL);
    o = lay(w, "Linear", "proj_out");
    num(w, o, "in_features", (double)a->H);
    num(w, o, "out_features", (double)a->V);
    flag(w, o, "bias", false);
    str(w, o, "tie", "model.decoder.embed_tokens"); /* vLLM ties proj_out whatever tie_word_embeddings says */
}

void vc__hf_whisper_write(rd *r, cJSON *arr, const arch *a)
{
    edw w = {r, arr};
    if (a->wh.part == 2) {
        vllm_decoder(&w, a);
        return;
    }
    /* the encoder: input_features [num_mel_bins, frames] (the model's input) */
    cJSON *o = lay(&w, "Conv1d", "model.encoder.conv1");
    num(&w, o, "in_channels", (double)a->wh.mel);
    num(&w, o, "out_channels", (double)a->H);
    num(&w, o, "kernel_size", 3);
    num(&w, o, "padding", 1);
    str(&w, lay(&w, "GELU", "model.encoder.conv1.gelu"), "approximate", "none"); /* nn.functional.gelu */
    o = lay(&w, "Conv1d", "model.encoder.conv2");
    num(&w, o, "in_channels", (double)a->H);
    num(&w, o, "out_channels", (double)a->H);
    num(&w, o, "kernel_size", 3);
    num(&w, o, "stride", 2);
    num(&w, o, "padding", 1);
    str(&w, lay(&w, "GELU", "model.encoder.conv2.gelu"), "approximate", "none");
    o = lay(&w, "WhisperEncoderPositions", "model.encoder.embed_positions");
    num(&w, o, "num_positions", (double)a->wh.src);
    num(&w, o, "embedding_dim", (double)a->H);
    flag(&w, o, "frozen", true); /* embed_positions.requires_grad_(False) */
    const char *h = dropout(&w, "model.encoder.dropout", "model.encoder.embed_positions", a->p_resid);
    cJSON *la = blocks(&w, a, "model.encoder.layers", h, a->N);
    if (!la) return;
    edw b = {r, la};
    attention(&b, a, "self_attn", "self_attn_layer_norm", NULL, NULL, a->NH, false, false, "self_attn.residual");
    mlp(&b, a, "self_attn.residual", a->I);
    layer_norm(&w, a, "model.encoder.layer_norm", NULL, NULL);
    /* encoder_outputs.last_hidden_state; named "encoder" and "decoder_input_ids" below for generate()
     * (src/engine/generate.c "Encoder-decoders") */
    keep(&w, "encoder", "model.encoder.layer_norm", NULL, NULL);
    /* the decoder */
    o = lay(&w, "T5DecoderIds", "decoder_input_ids"); /* shift_tokens_right(labels), or the batch's */
    num(&w, o, "length", (double)a->tgt);
    o = lay(&w, "Embedding", "model.decoder.embed_tokens");
    ins(&w, o, "decoder_input_ids", NULL, NULL);
    num(&w, o, "num_embeddings", (double)a->V);
    num(&w, o, "embedding_dim", (double)a->H);
    /* WhisperModel.get_input_embeddings: self.decoder.embed_tokens, the module PEFT's
     * enable_input_require_grads hooks (output.requires_grad_(True)) under gradient checkpointing */
    flag(&w, o, "input_embeddings", true);
    o = lay(&w, "PositionEmbedding", "model.decoder.embed_positions");
    ins(&w, o, "decoder_input_ids", NULL, NULL);
    num(&w, o, "num_embeddings", (double)a->maxpos);
    num(&w, o, "embedding_dim", (double)a->H);
    flag(&w, o, "per_sample", true); /* position_ids = cache_position.unsqueeze(0).repeat(B, 1) */
    ins(&w, lay(&w, "Add", "model.decoder.inputs"), "model.decoder.embed_tokens", "model.decoder.embed_positions", NULL);
    h = dropout(&w, "model.decoder.dropout", "model.decoder.inputs", a->p_resid);
    la = blocks(&w, a, "model.decoder.layers", h, a->dec_N);
    if (!la) return;
    b.arr = la;
    /* the cache: WhisperDecoder.forward sets use_cache False under gradient checkpointing in training */
    const bool cache = !a->ckpt;
    attention(&b, a, "self_attn", "self_attn_layer_norm", NULL, NULL, a->wh.dec_NH, true, cache, "self_attn.residual");
    attention(&b, a, "encoder_attn", "encoder_attn_layer_norm", "self_attn.residual", "encoder", a->wh.dec_NH, false,
              cache, "encoder_attn.residual");
    mlp(&b, a, "encoder_attn.residual", a->wh.dec_I);
    layer_norm(&w, a, "model.decoder.layer_norm", NULL, NULL);
    /* outputs[0], held by `outputs`; WhisperDecoder.forward's locals inputs_embeds and positions live until it
     * returns */
    keep(&w, "model.decoder", "model.decoder.layer_norm", "model.decoder.embed_tokens", "model.decoder.embed_positions");
    o = lay(&w, "Linear", "proj_out");
    num(&w, o, "in_features", (double)a->H);
    num(&w, o, "out_features", (double)a->V);
    flag(&w, o, "bias", false);
    if (a->tie) str(&w, o, "tie", "model.decoder.embed_tokens");
}

/* What a Whisper model's estimate does not model, refused before the plan (src/engine/plan.c):
 *  - --serve is modelled (src/engine/serve_encdec.c: vLLM's encoder over its dummy clips, its decoder's
 *    dummy run, the self- and cross-attention KV pool), on one GPU or as vLLM's tensor-parallel ranks (--tp:
 *    src/hf/hf_tp.c; vc_hf_build refuses transformers' tensor-parallel whisper), in fp32,
 *    bf16 and fp16 (which vLLM's --dtype auto keeps for a float16 checkpoint such as whisper-large-v3).
 *    vLLM's fp16 is its bf16 in memory terms (vllm-project/vllm @ 00a23257a13090193fb098c7573598c5fdb4b15e,
 *    vllm/model_executor/models/whisper.py WhisperEncoderLayer.forward ends with cast_overflow_tensors(
 *    hidden_states) in every dtype, where transformers' layer checks only under float16;
 *    vllm/model_executor/models/utils.py cast_overflow_tensors: `if tensors.isinf().any() or
 *    tensors.isnan().any(): tensors = torch.clamp(...)`): in either dtype a bool [clips, T, d_model] (one
 *    byte an element) for isinf() and, when it found none, another for isnan(), each freed at its .any()
 *    (a 0-d bool), while the layer's residual and its output (two bytes an element each) are held: 5 x
 *    d_model a position, under the 2 x encoder_ffn_dim x 2 B a position (fc1's output and the activation's,
 *    16 d_model at whisper's encoder_ffn_dim of 4 d_model) held earlier in the same layer (in fp32 9 d_model
 *    bytes against 32), so neither moves the encoder's peak and neither is planned;
 *    torch.clamp (a new [clips, T, d_model] in the model's dtype) runs only when an inf or a nan was found,
 *    which the profiling run's silent dummy clips (_get_dummy_audios: zeros) are not taken to produce.
 *    transformers' fp16 (below) stays refused;
 *    --mode generate is modelled (src/engine/generate.c "Encoder-decoders": the encoder once, then the
 *    decoder from the --prompt tokens of decoder_input_ids a token at a time with EncoderDecoderCache's
 *    growing self-attention and fixed cross-attention caches), up to max_target_positions tokens;
 *  - precisions other than fp32 and bf16 (the model cast whole): fp16 runs WhisperEncoderLayer's
 *    isinf / isnan check and clamp; autocast and mixed-* are not modelled for it;
 *  - quantized weights, pipeline stages, op-level checkpointing and activation offloading. */
/* The rows of the decoder's embed_positions weight, 0 none; *frozen: the weight needs no gradient (marian's sinusoidal
 * table, src/hf/hf_bart.c), when given. */
static int64_t decoder_positions(const vc_model *m, bool *frozen)
{
    for (size_t i = 0; i < m->ninst; i++)
        if (m->inst[i].name && !strcmp(m->inst[i].name, "model.decoder.embed_positions") && m->inst[i].np == 1 &&
            m->par[m->inst[i].params[0]].nd == 2) {
            if (frozen) *frozen = m->inst[i].frozen;
            return m->par[m->inst[i].params[0]].dims[0];
        }
    return 0;
}

/* BartForConditionalGeneration (src/hf/hf_bart.c): what its estimate does not model. The precisions: fp16 runs
 * BartEncoderLayer.forward's isinf / isnan clamp; autocast and fp32 master weights are not modelled. generate() is
 * (src/engine/generate.c "Encoder-decoders", the logits processors of the config's keys: vc_hf_logits_processors,
 * src/hf/hf_bart.c), except with a processor of another key (min_length, repetition_penalty, ...); vLLM has no
 * BartForConditionalGeneration
 * (vllm/model_executor/models/registry.py @0002bff0: its one encoder-decoder is WhisperForConditionalGeneration). */
static vc_status bart_check(const vc_model *m, const vc_options *o, bool serve, vc_error *err)
{
    /* the family and its class: the model's name begins with them (src/hf/hf.c) */
    const char *nm = m->name ? m->name : "bart BartForConditionalGeneration";
    char fam[32], cls[64];
    const size_t fl = strcspn(nm, " ");
    snprintf(fam, sizeof fam, "%.*s", (int)fl, nm);
    snprintf(cls, sizeof cls, "%.*s", (int)strcspn(nm + fl + (nm[fl] != 0), " "), nm + fl + (nm[fl] != 0));
    if (serve)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "vLLM has no %s "
                            "(vllm/model_executor/models/registry.py @0002bff0: its one encoder-decoder is "
                            "WhisperForConditionalGeneration, the others were removed with the V0 engine)", cls);
    /* generate(): the decoder's positions are the start token's and the new tokens' but the last, each looked up at
     * position + 2 in max_position_embeddings + 2 rows (BartLearnedPositionalEmbedding; marian's sinusoidal table:
     * at position in max_position_embeddings rows, the frozen weight): an IndexError past them */
    /* m2m_100: M2M100SinusoidalPositionalEmbedding rebuilds its buffer past padding_idx + 1 + the positions (the
     * start token and the new tokens but the last): not modelled (layers/bart.c M2M100Positions) */
    for (size_t i = 0; i < m->ninst && o->mode == VC_MODE_GENERATE; i++)
        if (!strcmp(m->inst[i].kind->name, "M2M100Positions") && o->new_tokens > vc__m2m_positions_limit(m->inst[i].cfg))
            return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "%lld: past max_position_embeddings + 1 - "
                                "pad_token_id (%lld) %s's decoder rebuilds its position buffer (make_weights), which is "
                                "not modelled", (long long)o->new_tokens,
                                (long long)vc__m2m_positions_limit(m->inst[i].cfg), fam);
    bool frozen = false;
    const int64_t rows = decoder_positions(m, &frozen), off = frozen ? 0 : 2;
    if (o->mode == VC_MODE_GENERATE && rows > off && o->new_tokens > rows - off)
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "%lld: %s's decoder has max_position_embeddings (%lld) "
                            "positions (the start token and the new tokens but the last; an IndexError past them)",
                            (long long)o->new_tokens, fam, (long long)(rows - off));
    if (o->mode == VC_MODE_GENERATE && m->gen_lp.other)
        return vc_set_error(err, VC_ERR_USAGE, m->gen_lp.other, "%s: generate()'s logits processor for this key is not "
                            "modelled (no_repeat_ngram_size, bad_words_ids of single tokens, forced_bos_token_id and "
                            "forced_eos_token_id are)", fam);
    if (o->precision != VC_PREC_FP32 && o->precision != VC_PREC_BF16)
        return vc_set_error(err, VC_ERR_USAGE, O("precision"), "%s is modelled in fp32 and bf16 (the model cast whole); %s", fam,
                            o->precision == VC_PREC_FP16 ? "fp16 adds BartEncoderLayer's isinf / isnan clamp, not modelled"
                                                         : "autocast and fp32 master weights are not modelled for it");
    if (m->has_quant || m->cfg_quant.format != VC_WEIGHTS_DENSE)
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config",
                            "%s: quantized weights are not modelled", fam);
    if (o->pp > 1 || m->stage.on)
        return vc_set_error(err, VC_ERR_USAGE, O("pp"), "%s: pipeline stages of an encoder-decoder are not modelled", fam);
    if (o->ckpt_ops)
        return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt_ops"), "%s: op-level selective checkpointing is not modelled", fam);
    if (o->act_offload != VC_ACT_OFFLOAD_NONE)
        return vc_set_error(err, VC_ERR_USAGE, O("act_offload"), "%s: offloading the saved activations is not modelled", fam);
    return VC_OK;
}

vc_status vc__whisper_check(const vc_model *m, const vc_options *o, bool serve, vc_error *err)
{
    bool wh = false, bart = false; /* bart: BartSdpaAttention is WhisperAttention's core (src/hf/hf_bart.c) */
    for (size_t i = 0; i < m->ninst; i++) {
        wh |= !strcmp(m->inst[i].kind->name, "WhisperAttention");
        bart |= !strcmp(m->inst[i].kind->name, "BartLogitsBias") ||
                !strcmp(m->inst[i].kind->name, "M2M100Positions"); /* m2m_100: no final_logits_bias */
    }
    if (!wh) return VC_OK;
    if (bart) return bart_check(m, o, serve, err);
    /* vLLM serving (serve: vllm/model_executor/models/whisper.py @00a23257a13090193fb098c7573598c5fdb4b15e
     * WhisperForConditionalGeneration on the V1 engine) is modelled in src/engine/serve_encdec.c: its weights,
     * the profiling run's two phases (vLLM's encoder over the dummy 30 s clips, the decoder's dummy run), the
     * pool of decoder self-attention and CrossAttention layers; docs/llm.md "Whisper under vLLM". serve_encdec.c
     * runs this check on the whole model with serve true (its encoder part's plan runs it too, the decoder
     * part has no WhisperAttention); what follows holds for it as well */
    /* WhisperGenerationMixin._set_max_new_tokens_and_length (generation_whisper.py @000dccdb): ValueError when
     * max_new_tokens + decoder_input_ids.shape[-1] > max_target_positions */
    int64_t total, maxpos = decoder_positions(m, NULL); /* max_target_positions */
    if (o->mode == VC_MODE_GENERATE && maxpos > 0 &&
        (__builtin_add_overflow(o->prompt, o->new_tokens, &total) || total > maxpos))
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "%lld with a decoder prompt (" O("prompt") ") of %lld: "
                            "whisper's generate() allows at most max_target_positions (%lld) tokens in all (ValueError)",
                            (long long)o->new_tokens, (long long)o->prompt, (long long)maxpos);
    /* vLLM's fp16 (serve; m->whisper_part: serve_encdec.c's parts) runs the op sequence of bf16: its
     * WhisperEncoderLayer.forward calls cast_overflow_tensors in every dtype (above) */
    const bool vllm = serve || m->whisper_part;
    if (o->precision != VC_PREC_FP32 && o->precision != VC_PREC_BF16 && !(vllm && o->precision == VC_PREC_FP16))
        return vc_set_error(err, VC_ERR_USAGE, O("precision"), "whisper is modelled in fp32 and bf16 (the model cast whole)%s; %s",
                            vllm ? " and in fp16 under vLLM" : "",
                            o->precision == VC_PREC_FP16 ? "fp16 adds WhisperEncoderLayer's isinf / isnan clamp, not modelled"
                                                         : "autocast and fp32 master weights are not modelled for it");
    if (m->has_quant || m->cfg_quant.format != VC_WEIGHTS_DENSE)
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config",
                            "whisper: quantized weights are not modelled");
    if (o->pp > 1 || m->stage.on) /* a stage's options carry pp 1 (src/parallel/pipeline.c) */
        return vc_set_error(err, VC_ERR_USAGE, O("pp"), "whisper: pipeline stages of an encoder-decoder are not modelled");
    if (o->ckpt_ops)
        return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt_ops"), "whisper: op-level selective checkpointing is not modelled");
    if (o->act_offload != VC_ACT_OFFLOAD_NONE)
        return vc_set_error(err, VC_ERR_USAGE, O("act_offload"), "whisper: offloading the saved activations is not modelled");
    return VC_OK;
}

/* ---- generate()'s defaults: the forced decoder prompt and the length ----
 *
 * What model.generate(input_features) decodes when neither --prompt nor --new-tokens is given, as
 * transformers builds it (generation_whisper.py @000dccdb6476f364e7997578cb3e25b570b6e838):
 *  - the generation config: from_pretrained's generation_config.json beside config.json when there is one
 *    (a model directory or a Hugging Face id: read here as resolve.c reads hf_quant_config.json), every key
 *    an attribute; else GenerationConfig.from_model_config(config), which keeps only GenerationConfig's own
 *    attributes (generation/configuration_utils.py @008f5c8c GenerationConfig.__init__: max_length 20,
 *    max_new_tokens, forced_decoder_ids, decoder_start_token_id; "Additional attributes" not set under
 *    _from_model_config: no lang_to_id, task_to_id nor no_timestamps_token_id from a config.json);
 *  - WhisperGenerationMixin.generate: _set_return_timestamps leaves return_timestamps None (short-form);
 *    _retrieve_init_tokens: init_tokens = [decoder_start_token_id], then forced_decoder_ids' tokens at
 *    indices 1, 2, ... in order (the generation config's, else config.forced_decoder_ids; a gap raises
 *    ValueError; dropped when task or language is set); the language in slot 1 (given, or detect_language's
 *    when lang_to_id exists and slot 1 is missing or None: one more forward over the encoder and one decoder
 *    token, under no_grad, whose tensors are each no larger than the first step's that follows: not modelled
 *    apart); the task appended when given (transcribe when only the language is); no_timestamps_token_id
 *    appended unless it is already last; None tokens dropped. A published multilingual checkpoint's
 *    generation_config.json (forced_decoder_ids [[1, null], [2, <|transcribe|>]], lang_to_id,
 *    no_timestamps_token_id) gives 4: <|startoftranscript|> <|lang|> <|transcribe|> <|notimestamps|>;
 *  - the length: _set_max_new_tokens_and_length raises ValueError when max_new_tokens + the prompt pass
 *    max_target_positions, and otherwise leaves generation_config.max_length as it is (its local max_length is
 *    not written back); GenerationMixin._prepare_generated_length (generation/utils.py @000034a4) makes the
 *    default max_length of 20 (GenerationConfig().max_length) 20 + the prompt, and _validate_generated_length
 *    raises ValueError when the prompt is not shorter than max_length: the new tokens are max_new_tokens
 *    when set, else max_length - the prompt (the loop's MaxLengthCriteria). Past max_target_positions the
 *    decoder's embed_positions has no row (an IndexError mid-generation): refused, naming --new-tokens. */

typedef struct {
    const cJSON *cfg, *gen; /* config.json; generation_config.json (NULL: from_model_config) */
    const char *file;       /* the generation config's file, for errors */
    const char *cfg_file;   /* config.json's */
    vc_error *err;
} whg;

static vc_status whg_bad(whg *g, const char *key, const char *msg, long long a, long long b)
{
    vc_status st = vc_set_error(g->err, VC_ERR_USAGE, key, msg, a, b);
    snprintf(g->err->file, sizeof g->err->file, "%s", g->file);
    return st;
}

/* the generation config's key (null read as absent); from a config.json only GenerationConfig's own */
static const cJSON *whg_key(const whg *g, const char *key, bool own)
{
    const cJSON *v = g->gen ? cJSON_GetObjectItemCaseSensitive(g->gen, key)
                            : own ? cJSON_GetObjectItemCaseSensitive(g->cfg, key) : NULL;
    return cJSON_IsNull(v) ? NULL : v;
}

static bool whg_int(const cJSON *v) { return cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble; }

#define WH_NONE INT64_MIN      /* a None token (dropped at the end) */
#define WH_LANG (INT64_MIN + 1) /* the language's id: given or detected, a token either way */

/* _retrieve_init_tokens for language=None, task=None, return_timestamps=None (generate's arguments) and the
 * generation config's own task and language when it has them: the tokens it builds, counted */
static vc_status whg_prompt(whg *g, int64_t *out)
{
    const cJSON *task = whg_key(g, "task", false), *lang = whg_key(g, "language", false);
    const cJSON *l2id = whg_key(g, "lang_to_id", false), *t2id = whg_key(g, "task_to_id", false);
    const cJSON *nts = whg_key(g, "no_timestamps_token_id", false), *start = whg_key(g, "decoder_start_token_id", true);
    const cJSON *forced = whg_key(g, "forced_decoder_ids", true);
    const char *ffile = g->file;
    if (!forced && g->gen) { /* elif hasattr(config, "forced_decoder_ids") and config.forced_decoder_ids is not None */
        forced = cJSON_GetObjectItemCaseSensitive(g->cfg, "forced_decoder_ids");
        if (cJSON_IsNull(forced)) forced = NULL;
        ffile = g->cfg_file;
    }
    const int nf = cJSON_GetArraySize(forced);
    if (forced && (!cJSON_IsArray(forced) || nf > 4096)) {
        g->file = ffile;
        return whg_bad(g, "forced_decoder_ids", "expected a list of [index, token id] pairs (at most 4096)", 0, 0);
    }
    if (task || lang) forced = NULL; /* "forced_decoder_ids will be ignored in favor of task= / language=" */
    int64_t tok[4096 + 8];
    int n = 0;
    tok[n++] = whg_int(start) ? (int64_t)start->valuedouble : WH_NONE; /* [generation_config.decoder_start_token_id] */
    const cJSON *e;
    int64_t i = 1;
    cJSON_ArrayForEach(e, forced)
    {
        const cJSON *ix = cJSON_GetArrayItem(e, 0), *t = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !whg_int(ix) || !(cJSON_IsNull(t) || whg_int(t))) {
            g->file = ffile;
            return whg_bad(g, "forced_decoder_ids", "expected a list of [index, token id] pairs", 0, 0);
        }
        if (i == 1 && (int64_t)ix->valuedouble != 1) break; /* forced_decoder_ids[0][0] != 1: none taken */
        if ((int64_t)ix->valuedouble != i) {
            g->file = ffile;
            return whg_bad(g, "forced_decoder_ids", "index %lld after %lld: generate() raises ValueError (it needs an entry for "
                           "every index from 1 on)", (long long)ix->valuedouble, (long long)(i - 1));
        }
        tok[n++] = cJSON_IsNull(t) ? WH_NONE : (int64_t)t->valuedouble;
        i++;
    }
    const bool lang_undefined = n <= 1 || tok[1] == WH_NONE;
    if (lang || (l2id && lang_undefined)) { /* language_to_id, or detect_language's */
        if (n > 1) tok[1] = WH_LANG;
        else tok[n++] = WH_LANG;
    }
    if (task) {
        tok[n++] = WH_LANG + 1; /* task_to_id[task], appended (replace_or_add's result is not kept) */
    } else if (lang && t2id) { /* "if language is defined, but no task id is in init_tokens, default to transcribe" */
        bool has = false;
        const cJSON *v;
        cJSON_ArrayForEach(v, t2id) for (int k = 0; k < n && !has; k++) has = whg_int(v) && tok[k] == (int64_t)v->valuedouble;
        if (!has) tok[n++] = WH_LANG + 1;
    }
    /* <|notimestamps|> unless it is the last token already */
    if (nts && !(whg_int(nts) && tok[n - 1] == (int64_t)nts->valuedouble)) tok[n++] = whg_int(nts) ? (int64_t)nts->valuedouble : 0;
    int64_t count = 0;
    for (int k = 0; k < n; k++) count += tok[k] != WH_NONE;
    if (!count) return whg_bad(g, "decoder_start_token_id", "null: generate() has no decoder start token", 0, 0);
    *out = count;
    return VC_OK;
}

vc_status vc__whisper_gen_defaults(const char *path, bool prompt_given, int64_t *prompt, bool new_given, int64_t *new_tokens,
                                   vc_error *err)
{
    if ((prompt_given && new_given) || !path[0] || !strcmp(path, "-")) return VC_OK; /* standard input is read once */
    char *resolved = NULL, *buf = NULL, *gbuf = NULL;
    size_t len;
    vc_error e;
    vc_error_clear(&e);
    /* not readable, not JSON, not whisper: nothing here (the loader says what it is) */
    if (vc__model_resolve(path, &resolved, &e) != VC_OK) return VC_OK;
    const char *cfg_path = resolved ? resolved : path;
    vc_status st = VC_OK;
    cJSON *cfg = NULL, *gen = NULL;
    if (vc_read_file(cfg_path, (size_t)VC_MAX_FILE_BYTES, &buf, &len, &e) != VC_OK) goto out;
    cfg = cJSON_ParseWithLength(buf, len);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    if (!cJSON_IsString(mt) || strcmp(mt->valuestring, "whisper")) goto out;
    /* generation_config.json beside a directory's (or a Hugging Face id's) config.json */
    char gpath[4096];
    const char *slash = resolved ? strrchr(resolved, '/') : NULL;
    if (slash && snprintf(gpath, sizeof gpath, "%.*s/generation_config.json", (int)(slash - resolved), resolved) <
                     (int)sizeof gpath &&
        vc_read_file(gpath, (size_t)VC_MAX_FILE_BYTES, &gbuf, &len, &e) == VC_OK) {
        gen = cJSON_ParseWithLength(gbuf, len);
        if (!cJSON_IsObject(gen)) {
            st = vc_set_error(err, VC_ERR_USAGE, NULL, "not a JSON object (GenerationConfig.from_pretrained reads it)");
            snprintf(err->file, sizeof err->file, "%s", gpath);
            goto out;
        }
    }
    whg g = {cfg, gen, gen ? gpath : cfg_path, cfg_path, err};
    int64_t p = *prompt;
    if (!prompt_given && (st = whg_prompt(&g, &p))) goto out;
    g.file = gen ? gpath : cfg_path;
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(cfg, "max_target_positions");
    const int64_t maxpos = whg_int(mp) ? (int64_t)mp->valuedouble : 448; /* WhisperConfig's default */
    int64_t n = *new_tokens;
    if (!new_given) {
        const cJSON *mnt = whg_key(&g, "max_new_tokens", true), *ml = whg_key(&g, "max_length", true);
        if ((mnt && (!whg_int(mnt) || mnt->valuedouble < 1)) || (ml && (!whg_int(ml) || ml->valuedouble < 1))) {
            st = whg_bad(&g, mnt && (!whg_int(mnt) || mnt->valuedouble < 1) ? "max_new_tokens" : "max_length",
                         "expected a positive integer", 0, 0);
            goto out;
        }
        if (mnt) {
            n = (int64_t)mnt->valuedouble;
            if (n > maxpos - p) { /* _set_max_new_tokens_and_length's ValueError */
                st = vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "not given: the generation config's max_new_tokens "
                                  "(%lld) and the %lld-token decoder prompt pass whisper's max_target_positions (%lld): "
                                  "generate() raises ValueError; give " O("new_tokens") " (at most %lld)",
                                  (long long)n, (long long)p, (long long)maxpos, (long long)(maxpos - p));
                goto out;
            }
        } else {
            int64_t L = ml ? (int64_t)ml->valuedouble : 20; /* GenerationConfig's max_length */
            if (L > MAX_SIZE) L = MAX_SIZE;
            if (L == 20) L += p; /* _prepare_generated_length: "by default let's always generate 20 new tokens" */
            if (p >= L) {
                st = vc_set_error(err, VC_ERR_USAGE, O("prompt"), "%lld decoder tokens: not fewer than the generation config's "
                                  "max_length (%lld): generate() raises ValueError (a shorter prompt, or " O("new_tokens")
                                  " given)",
                                  (long long)p, (long long)L);
                goto out;
            }
            n = L - p;
            if (L > maxpos) {
                st = vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "not given: the generation config's max_length (%lld) "
                                  "passes whisper's max_target_positions (%lld), where generate() runs out of the decoder's "
                                  "positions; give " O("new_tokens") " (at most %lld after %lld decoder prompt tokens)",
                                  (long long)L, (long long)maxpos, (long long)(maxpos - p), (long long)p);
                goto out;
            }
        }
    }
    *prompt = p;
    *new_tokens = n;
out:
    cJSON_Delete(cfg);
    cJSON_Delete(gen);
    free(buf);
    free(gbuf);
    free(resolved);
    return st;
}

/* --serve's request when neither --prompt nor --new-tokens is given (src/engine/serve_encdec.c): vLLM's
 * max_model_len for whisper is max_target_positions (vllm/config/model.py _get_and_verify_max_len, the
 * smallest length key: serve.c vllm_len_keys), and its transcription prompt is the 4 decoder tokens
 * "<|startoftranscript|><|{language}|><|{task_type}|><|notimestamps|>" (vllm-project/vllm @ 00a23257,
 * vllm/model_executor/models/whisper.py WhisperForConditionalGeneration.get_generation_prompt, no
 * <|prev|> request prompt): a request of the whole max_model_len, 4 of it the prompt; --prompt alone: the
 * rest of max_model_len its new tokens; --new-tokens alone: that 4-token prompt. */
vc_status vc__whisper_serve_defaults(const char *path, bool prompt_given, int64_t *prompt, bool new_given,
                                     int64_t *new_tokens, vc_error *err)
{
    (void)err;
    if ((prompt_given && new_given) || !path[0] || !strcmp(path, "-")) return VC_OK; /* standard input is read once */
    char *resolved = NULL, *buf = NULL;
    size_t len;
    vc_error e;
    vc_error_clear(&e);
    if (vc__model_resolve(path, &resolved, &e) != VC_OK) return VC_OK; /* the loader says what it is */
    if (vc_read_file(resolved ? resolved : path, (size_t)VC_MAX_FILE_BYTES, &buf, &len, &e) == VC_OK) {
        cJSON *cfg = cJSON_ParseWithLength(buf, len);
        const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
        const cJSON *mp = cJSON_GetObjectItemCaseSensitive(cfg, "max_target_positions");
        if (cJSON_IsString(mt) && !strcmp(mt->valuestring, "whisper")) {
            /* WhisperConfig's default 448; a bad value is the loader's to name */
            const int64_t maxpos = whg_int(mp) && mp->valuedouble >= 5 && mp->valuedouble <= (double)MAX_SIZE
                                       ? (int64_t)mp->valuedouble : 448;
            if (!prompt_given) *prompt = 4;
            if (!new_given && *prompt < maxpos) *new_tokens = maxpos - *prompt;
        }
        cJSON_Delete(cfg);
    }
    free(buf);
    free(resolved);
    return VC_OK;
}
