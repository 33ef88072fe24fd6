/*
 * hf_bart.c — bart (model_type bart; issue 31, item 4): facebook/bart-large, bart-large-cnn,
 * bart-large-mnli, distilbart. The keys of BartConfig that the row's reading cannot check, and
 * BartForConditionalGeneration's layers for training and inference.
 *
 * Sources, huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e (the commit hf_whisper.c and
 * layers/whisper.c follow), src/transformers/models/bart/modeling_bart.py:
 *  - BartLearnedPositionalEmbedding: nn.Embedding(num_embeddings + 2, dim) (offset 2); forward: positions =
 *    torch.arange(past, past + seq_len).expand(bsz, -1), super().forward(positions + self.offset) (per sample);
 *  - BartScaledWordEmbedding.forward: super().forward(input_ids) * self.embed_scale (sqrt(d_model) under
 *    scale_embedding, else 1.0: a new tensor either way);
 *  - BartSdpaAttention (BART_ATTENTION_CLASSES["sdpa"], the default): q_proj, k_proj / v_proj through _shape
 *    (view, transpose(1, 2), contiguous), q's _shape after them, F.scaled_dot_product_attention(q, k, v,
 *    attn_mask, dropout_p, is_causal = self.is_causal and attention_mask is None and tgt_len > 1),
 *    transpose(1, 2).reshape, out_proj: layers/whisper.c's WhisperAttention op for op (its cache flag:
 *    past_key_value = (key_states, value_states) kept by the decoder's next_decoder_cache when use_cache);
 *  - BartEncoderLayer.forward (post-LN): residual = h; self_attn; dropout; residual + h; self_attn_layer_norm;
 *    residual = h; fc1, activation_fn, dropout(activation_dropout), fc2, dropout; residual + h;
 *    final_layer_norm (the fp16 isinf / isnan clamp: fp16 refused, vc__whisper_check);
 *    BartDecoderLayer.forward: the same with encoder_attn (k_proj / v_proj on the encoder's output) and
 *    encoder_attn_layer_norm between;
 *  - BartEncoder.forward: inputs_embeds = embed_tokens(input_ids); embed_pos = embed_positions(input);
 *    hidden_states = inputs_embeds + embed_pos; layernorm_embedding; dropout; no mask without an
 *    attention_mask; the layers (LayerDrop: torch.rand([]) per layer in training); inputs_embeds and
 *    embed_pos are its locals until it returns. BartDecoder.forward: the same over decoder_input_ids;
 *    _prepare_4d_causal_attention_mask_for_sdpa gives None without a mask (AttentionMaskConverter.
 *    _ignore_causal_mask_sdpa): sdpa's is_causal; next_decoder_cache when use_cache;
 *  - BartModel.__init__: shared BartScaledWordEmbedding, the encoder's and decoder's embed_tokens its weight;
 *    get_input_embeddings() is shared, a module neither stack calls (PEFT's enable_input_require_grads hook
 *    never fires: no "input_embeddings" here);
 *  - BartForConditionalGeneration: final_logits_bias a buffer [1, V] (layers/bart.c), lm_head nn.Linear(d_model,
 *    V, bias=False) tied to shared under tie_word_embeddings; forward with labels: use_cache = False,
 *    decoder_input_ids = shift_tokens_right(labels, pad, decoder_start) (T5DecoderIds: T5's _shift_right op for
 *    op); lm_logits = lm_head(outputs[0]) + final_logits_bias; CrossEntropyLoss on lm_logits.view(-1, V)
 *    (src/engine/loss.c "seq2seq_lm"); outputs (the encoder's and decoder's last hidden states) held to the end.
 *  - BartPreTrainedModel.supports_gradient_checkpointing: every layer of both stacks through
 *    self._gradient_checkpointing_func(layer.__call__, ...), the decoder's use_cache off.
 * configuration_bart.py BartConfig.__init__: the defaults (facebook/bart-large's sizes).
 * The rows marian, pegasus, mbart and m2m_100 are variants (vc__hf_bart_read). m2m_100 (modeling_m2m_100.py @efa7189c,
 * M2M100ForConditionalGeneration: m2m100_418M / 1.2B and the NLLB-200 checkpoints): M2M100SinusoidalPositionalEmbedding
 * is a non-persistent buffer of max_position_embeddings + 2 rows indexed by create_position_ids_from_input_ids from
 * padding_idx (pad_token_id; layers/bart.c M2M100Positions; the lengths past which forward rebuilds it are refused:
 * src/hf/hf.c, hf_whisper.c bart_check), no layernorm_embedding, MBart's pre-LN layers with each stack's final
 * layer_norm, bart's shift_tokens_right, no final_logits_bias (lm_logits = lm_head(outputs[0])).
 * What is not modelled is refused: every N-th layer checkpointed, --loss, --tp (src/hf/hf.c); fp16, autocast,
 * quantized weights, --pp, op-level checkpointing, activation offloading, --mode generate and --serve
 * (vc__whisper_check, src/hf/hf_whisper.c; vLLM has no BartForConditionalGeneration: its registry's one
 * encoder-decoder is Whisper, vllm/model_executor/models/registry.py @0002bff0).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "hf_encdec_writer.h"
#include "model.h"
#include "util.h"

static const cJSON *bt_key(rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static int bt_bool(rd *r, const char *key, bool def, bool *out)
{
    const cJSON *v = bt_key(r, key);
    if (v && !cJSON_IsBool(v)) return vc__hf_bad(r, key, "expected true or false");
    *out = v ? cJSON_IsTrue(v) : def;
    return 0;
}

static int bt_prob(rd *r, const char *key, double *out)
{
    const cJSON *v = bt_key(r, key);
    if (v && (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1)))
        return vc__hf_bad(r, key, "expected a probability from 0 to 1");
    *out = v ? v->valuedouble : 0.0; /* BartConfig: 0.0 */
    return 0;
}

/* MarianConfig (configuration_marian.py MarianConfig.__init__, the form with decoder_vocab_size and
 * share_encoder_decoder_embeddings: read through the code index, its commit not given):
 * `self.decoder_vocab_size = decoder_vocab_size or vocab_size`, share_encoder_decoder_embeddings True. MarianModel
 * (modeling_marian.py @00b676f8): `self.shared = nn.Embedding(vocab_size, d_model, padding_idx)`, both stacks' embed_tokens
 * when shared, else deep copies of it (MarianDecoder's own: nn.Embedding(config.decoder_vocab_size, ...) only when none is
 * passed; the copy has vocab_size rows); MarianMTModel: target_vocab_size = vocab_size if shared else
 * decoder_vocab_size (lm_head, final_logits_bias), the loss over lm_logits.view(-1, decoder_vocab_size). */
static int marian_read(rd *r, arch *a)
{
    if (bt_bool(r, "share_encoder_decoder_embeddings", true, &a->bt.share)) return -1;
    const cJSON *v = bt_key(r, "decoder_vocab_size");
    if (v && (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
              v->valuedouble > (double)MAX_SIZE))
        return vc__hf_bad(r, "decoder_vocab_size", "expected a whole number from 0 (vocab_size) to 2^40");
    int64_t dv = v && v->valuedouble > 0 ? (int64_t)v->valuedouble : a->V, t;
    if (__builtin_mul_overflow(dv, a->H, &t) || t > (INT64_C(1) << 48))
        return vc__hf_bad(r, "decoder_vocab_size", "%lld: lm_head (d_model x decoder_vocab_size) is more than 2^48 elements",
                          (long long)dv);
    /* shared: lm_head has vocab_size rows, the loss views its logits as (-1, decoder_vocab_size): a RuntimeError or
     * a mismatch with the labels unless they are equal */
    if (a->bt.share && dv != a->V)
        return vc__hf_bad(r, "decoder_vocab_size", "%lld with share_encoder_decoder_embeddings: MarianMTModel's lm_head has "
                          "vocab_size (%lld) rows and its loss views the logits as (-1, decoder_vocab_size)",
                          (long long)dv, (long long)a->V);
    /* not shared: the decoder's embed_tokens is a deep copy of shared (vocab_size rows), lm_head has
     * decoder_vocab_size; tie_weights (tie_word_embeddings) makes lm_head's weight the decoder's embed_tokens'
     * (vocab_size rows) and the loss's view(-1, decoder_vocab_size) then fails unless they are equal */
    if (!a->bt.share && a->tie && dv != a->V)
        return vc__hf_bad(r, "decoder_vocab_size", "%lld beside vocab_size %lld with tie_word_embeddings: tie_weights gives "
                          "lm_head the decoder's embed_tokens (a deep copy of shared, vocab_size rows)",
                          (long long)dv, (long long)a->V);
    a->bt.dec_V = dv;
    return 0;
}

int vc__hf_bart_read(rd *r, arch *a)
{
    /* the row's variant (hf.c): bart's learned positions (+ 2) and layernorm_embedding; marian's sinusoidal
     * positions, no layernorm_embedding, share_encoder_decoder_embeddings and decoder_vocab_size */
    const bool marian = !strcmp(a->f->model_type, "marian"), pegasus = !strcmp(a->f->model_type, "pegasus");
    const bool mbart = !strcmp(a->f->model_type, "mbart"), m2m = !strcmp(a->f->model_type, "m2m_100");
    a->bt.sinus = marian || pegasus; /* PegasusSinusoidalPositionalEmbedding: "Copied from" Marian's */
    a->bt.ln_emb = !marian && !pegasus && !m2m; /* M2M100Encoder / M2M100Decoder have no layernorm_embedding */
    /* MBartEncoderLayer / MBartDecoderLayer (pegasus's and m2m_100's "Copied from" them) */
    a->bt.pre = pegasus || mbart || m2m;
    a->bt.m2m = m2m;
    a->bt.mbart_shift = mbart;
    a->bt.share = true;
    a->bt.dec_V = a->V;
    if (marian && marian_read(r, a)) return -1;
    /* BartAttention.__init__ raises ValueError unless embed_dim is divisible by num_heads (the encoder's through
     * the row's head_dim split, naming encoder_attention_heads) */
    if (a->H % a->wh.dec_NH)
        return vc__hf_bad(r, "decoder_attention_heads", "d_model (%lld) must be divisible by decoder_attention_heads (%lld) "
                          "(BartAttention raises ValueError)", (long long)a->H, (long long)a->wh.dec_NH);
    if (a->dec_N > 1024)
        return vc__hf_bad(r, "decoder_layers", "%lld decoder layers: more than the limit of 1024", (long long)a->dec_N);
    /* LayerDrop skips a layer when torch.rand([]) < layerdrop in training: the estimate is the step that runs
     * every layer (the largest) */
    if (bt_prob(r, "encoder_layerdrop", &a->wh.enc_drop) || bt_prob(r, "decoder_layerdrop", &a->wh.dec_drop)) return -1;
    bool ed = true, scale = m2m; /* M2M100Config's scale_embedding defaults to True */
    if (bt_bool(r, "is_encoder_decoder", true, &ed) || bt_bool(r, "scale_embedding", m2m, &scale)) return -1;
    if (!ed)
        return vc__hf_bad(r, "is_encoder_decoder", "false: BartForConditionalGeneration is an encoder-decoder (false is "
                          "BartForCausalLM's decoder alone, not modelled)");
    a->emb_mult = scale ? sqrt((double)a->H) : 1.0; /* BartScaledWordEmbedding's embed_scale */
    const int64_t lim = INT64_C(1) << 48;
    int64_t t;
    if (__builtin_mul_overflow(a->wh.dec_I, a->H, &t) || t > lim)
        return vc__hf_bad(r, "decoder_ffn_dim", "fc1 / fc2 (%lld x %lld) are more than 2^48 elements", (long long)a->wh.dec_I,
                          (long long)a->H);
    /* the decoder's layers (self- and cross-attention, fc1 / fc2 of decoder_ffn_dim) within 2^56 parameters, as
     * hf_read.c's check_total bounds the encoder's (each product at most 2^51, at most 1024 layers: no overflow) */
    if (__builtin_mul_overflow(a->H, a->H, &t) || t > lim)
        return vc__hf_bad(r, "d_model", "%lld: the attention projections (d_model x d_model) are more than 2^48 elements",
                          (long long)a->H);
    if ((8 * t + 2 * a->wh.dec_I * a->H) * a->dec_N > (INT64_C(1) << 56))
        return vc__hf_bad(r, "decoder_layers", "%lld decoder layers of d_model %lld and decoder_ffn_dim %lld are more than "
                          "2^56 parameters: byte counts would overflow 64-bit arithmetic", (long long)a->dec_N,
                          (long long)a->H, (long long)a->wh.dec_I);
    /* generate()'s logits processors from the config's keys (vc_hf_logits_processors): no_repeat_ngram_size a count,
     * forced_bos_token_id / forced_eos_token_id token ids (scores_processed[:, id] = 0 indexes the vocabulary) */
    const cJSON *v = bt_key(r, "no_repeat_ngram_size");
    if (v && (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > 1e6))
        return vc__hf_bad(r, "no_repeat_ngram_size", "expected a whole number from 0 to 1000000");
    static const char *const forced[] = {"forced_bos_token_id", "forced_eos_token_id"};
    for (int i = 0; i < 2; i++)
        if ((v = bt_key(r, forced[i])) &&
            (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 || v->valuedouble >= (double)a->V))
            return vc__hf_bad(r, forced[i], "expected a token id from 0 to vocab_size - 1 (%lld)", (long long)a->V - 1);
    /* MBartConfig's forced_eos_token_id defaults to 2 (kept when the key is absent; null turns it off) */
    if (mbart && !cJSON_GetObjectItemCaseSensitive(r->cfg, "forced_eos_token_id") && a->V <= 2)
        return vc__hf_bad(r, "forced_eos_token_id", "MBartConfig's default 2 is not a token id of vocab_size %lld",
                          (long long)a->V);
    /* bad_words_ids: NoBadWordsLogitsProcessor._validate_arguments (a non-empty list of lists of token ids, else
     * ValueError) and _prepare_bias_variables (an id past the logits' vocabulary: ValueError) */
    if ((v = bt_key(r, "bad_words_ids"))) {
        bool ok = cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0;
        const cJSON *seq, *id;
        if (ok)
            cJSON_ArrayForEach(seq, v) {
                ok &= cJSON_IsArray(seq) && cJSON_GetArraySize(seq) > 0;
                if (cJSON_IsArray(seq))
                    cJSON_ArrayForEach(id, seq) ok &= cJSON_IsNumber(id) && id->valuedouble == floor(id->valuedouble) &&
                                                      id->valuedouble >= 0 && id->valuedouble < (double)a->bt.dec_V;
            }
        if (!ok)
            return vc__hf_bad(r, "bad_words_ids", "expected a non-empty list of non-empty lists of token ids from 0 to %lld "
                              "(NoBadWordsLogitsProcessor raises ValueError)", (long long)a->bt.dec_V - 1);
    }
    /* m2m_100: pad_token_id is the positions' padding_idx (M2M100Config's default 1): create_position_ids_from_input_ids
     * counts from it, get_embedding zeroes its row (emb[padding_idx, :] = 0: an IndexError past the table's
     * max_position_embeddings + 2 rows), and M2M100ScaledWordEmbedding's nn.Embedding asserts it is within vocab_size */
    a->bt.pad = 1;
    if (m2m && (v = bt_key(r, "pad_token_id"))) {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
            v->valuedouble >= (double)a->V || v->valuedouble > (double)a->maxpos)
            return vc__hf_bad(r, "pad_token_id", "expected a token id from 0 to %lld (the positions' padding_idx: below "
                              "vocab_size and within max_position_embeddings + 1)",
                              (long long)(a->V - 1 < a->maxpos ? a->V - 1 : a->maxpos));
        a->bt.pad = (int64_t)v->valuedouble;
    }
    /* BartLearnedPositionalEmbedding: max_position_embeddings + 2 rows (M2M100SinusoidalPositionalEmbedding's buffer
     * too) */
    if (a->maxpos > MAX_SIZE - 2 || __builtin_mul_overflow(a->maxpos + 2, a->H, &t) || t > lim)
        return vc__hf_bad(r, "max_position_embeddings", "%lld: embed_positions (its + 2 rows x d_model) is more than 2^48 "
                          "elements", (long long)a->maxpos);
    return 0;
}

/* GenerationConfig.from_model_config (a config.json without generation_config.json: its generation keys become the
 * generation config's) and GenerationMixin._get_logits_processor (generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f),
 * for bart: NoRepeatNGramLogitsProcessor when no_repeat_ngram_size > 0, ForcedBOSTokenLogitsProcessor when
 * forced_bos_token_id is set, ForcedEOSTokenLogitsProcessor when forced_eos_token_id is (in that order, the list's);
 * the other processors' keys set to other than GenerationConfig's defaults are named in lp->other (generate refuses
 * them: vc__whisper_check). The keys' values were checked by vc__hf_bart_read. facebook/bart-large's config.json also
 * has num_beams 4 and early_stopping true: vramcalc's generate runs --num-beams (default 1, GenerationConfig's, as for
 * every family): --num-beams 4 is generate()'s default for it (docs/llm.md). */
void vc_hf_logits_processors(const cJSON *cfg, vc_hf_logits *lp)
{
    memset(lp, 0, sizeof *lp);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    if (!cJSON_IsString(mt) || (strcmp(mt->valuestring, "bart") && strcmp(mt->valuestring, "marian") &&
                                strcmp(mt->valuestring, "pegasus") && strcmp(mt->valuestring, "mbart") &&
                                strcmp(mt->valuestring, "m2m_100")))
        return;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "no_repeat_ngram_size");
    if (cJSON_IsNumber(v) && v->valuedouble > 0) lp->ngram = (int64_t)v->valuedouble;
    lp->bos = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cfg, "forced_bos_token_id"));
    /* NoBadWordsLogitsProcessor(bad_words_ids, eos_token_id): the sequences but those equal to [eos] (its
     * __init__'s filter) become SequenceBiasLogitsProcessor's -inf biases; those of one token are length_1_bias
     * alone (modelled: generate.c logits_processors), a longer one adds its per-step matching (eq, prod, where over
     * the rows: not modelled, generate refuses it as another processor's key); none left: its _validate_arguments'
     * ValueError (refused too). The values were checked by vc__hf_bart_read. */
    v = cJSON_GetObjectItemCaseSensitive(cfg, "bad_words_ids");
    if (cJSON_IsArray(v)) {
        const cJSON *eos = cJSON_GetObjectItemCaseSensitive(cfg, "eos_token_id"), *seq, *e;
        bool longer = false, kept = false;
        cJSON_ArrayForEach(seq, v) {
            const int n = cJSON_GetArraySize(seq);
            const cJSON *t0 = cJSON_GetArrayItem(seq, 0);
            bool is_eos = false;
            if (n == 1 && cJSON_IsNumber(eos)) is_eos = t0->valuedouble == eos->valuedouble;
            if (n == 1 && cJSON_IsArray(eos))
                cJSON_ArrayForEach(e, eos) is_eos |= cJSON_IsNumber(e) && t0->valuedouble == e->valuedouble;
            longer |= n > 1;
            kept |= !is_eos;
        }
        lp->bad = kept && !longer;
        if (!lp->bad) lp->other = "bad_words_ids";
    }
    v = cJSON_GetObjectItemCaseSensitive(cfg, "forced_eos_token_id");
    lp->eos = cJSON_IsNumber(v) || (!v && !strcmp(mt->valuestring, "mbart")); /* MBartConfig's default 2 */
    /* _get_logits_processor's other processors: the key and the GenerationConfig default that adds none (NAN: null,
     * false or an empty list) */
    static const struct { const char *key; double none; } others[] = {
        {"min_length", 0}, {"min_new_tokens", 0}, {"repetition_penalty", 1}, {"encoder_repetition_penalty", 1},
        {"encoder_no_repeat_ngram_size", 0}, {"sequence_bias", NAN}, {"suppress_tokens", NAN},
        {"begin_suppress_tokens", NAN}, {"forced_decoder_ids", NAN}, {"exponential_decay_length_penalty", NAN},
        {"remove_invalid_values", NAN}, {"renormalize_logits", NAN}, {"do_sample", NAN},
    };
    for (size_t i = 0; i < sizeof others / sizeof *others && !lp->other; i++) {
        v = cJSON_GetObjectItemCaseSensitive(cfg, others[i].key);
        bool none = !v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsArray(v) && !cJSON_GetArraySize(v)) ||
                    (cJSON_IsNumber(v) && v->valuedouble == others[i].none);
        if (!none) lp->other = others[i].key;
    }
}

/* ---- the layers ---- */
/* a module's return (layers/t5.c T5Return): `out`, the locals it held until then; keep: to the model's end */
static void ret(edw *w, const char *name, const char *out, const char *l1, const char *l2, bool keep)
{
    cJSON *o = lay(w, "T5Return", name);
    ins(w, o, out, l1, l2);
    if (keep) flag(w, o, "keep_forward", true);
}

/* One BartSdpaAttention sub-layer (post-LN): q/k/v_proj on `in` (k and v on kv for the cross-attention), the
 * core, out_proj, dropout, residual + h (named res), the layer norm (named ln). `in`'s layer holds it until
 * out_proj returns (the attention's q / k / v states live to there, layers/whisper.c). */
static void attention(edw *w, const arch *a, const char *mod, const char *in, const char *kv, int64_t heads, bool causal,
                      bool cache, const char *res, const char *ln)
{
    char q[64], k[64], v[64], core[64], out[64], dr[64];
    const char *resid = in;
    if (a->bt.pre) { /* pegasus (MBart's layers): residual = h; h = ln(h), the attention's argument to out_proj */
        snprintf(out, sizeof out, "%s.out_proj", mod);
        layer_norm(w, a, ln, in, out);
        in = ln;
    }
    snprintf(q, sizeof q, "%s.q_proj", mod);
    snprintf(k, sizeof k, "%s.k_proj", mod);
    snprintf(v, sizeof v, "%s.v_proj", mod);
    snprintf(core, sizeof core, "%s.attention", mod);
    snprintf(out, sizeof out, "%s.out_proj", mod);
    snprintf(dr, sizeof dr, "%s.dropout", mod);
    linear(w, q, in, a->H, a->H, true);
    linear(w, k, kv ? kv : in, a->H, a->H, true);
    linear(w, v, kv ? kv : in, a->H, a->H, true);
    cJSON *o = lay(w, "WhisperAttention", core);
    ins(w, o, q, k, v);
    num(w, o, "num_heads", (double)heads);
    if (a->p_attn > 0) num(w, o, "dropout", a->p_attn);
    if (causal) flag(w, o, "causal", true);
    if (cache) flag(w, o, "cache", true);
    if (cache) flag(w, o, "labels_no_cache", true); /* with labels (training) use_cache is False */
    linear(w, out, core, a->H, a->H, true);
    const char *d = dropout(w, dr, out, a->p_resid); /* before the Add: C leaves the order of arguments open */
    ins(w, lay(w, "Add", res), resid, d, NULL); /* residual + hidden_states */
    if (!a->bt.pre) layer_norm(w, a, ln, res, NULL);
}

/* fc1, act, dropout(activation_dropout), fc2, dropout, residual + h, final_layer_norm (pre-LN: final_layer_norm
 * first, fc1 on it) */
static void mlp(edw *w, const arch *a, const char *residual, int64_t inter)
{
    if (a->bt.pre) layer_norm(w, a, "final_layer_norm", residual, NULL);
    linear(w, "fc1", a->bt.pre ? "final_layer_norm" : residual, a->H, inter, true);
    act_layer(w, a, "activation_fn");
    const char *h = dropout(w, "activation_dropout", "activation_fn", a->wh.p_act);
    linear(w, "fc2", h, inter, a->H, true);
    const char *d = dropout(w, "fc2.dropout", "fc2", a->p_resid); /* before the Add (argument order is unspecified) */
    ins(w, lay(w, "Add", "residual"), residual, d, NULL);
    if (!a->bt.pre) layer_norm(w, a, "final_layer_norm", "residual", NULL);
}

/* the layer's output: post-LN's final_layer_norm, pre-LN's last residual sum */
static const char *layer_out(const arch *a) { return a->bt.pre ? "residual" : "final_layer_norm"; }

/* pegasus: hidden_states = self.layer_norm(hidden_states) after a stack's layers; returns what the stack returns */
static const char *stack_norm(edw *w, const arch *a, const char *stack, char *buf, size_t n)
{
    snprintf(buf, n, "model.%s.layers", stack);
    if (!a->bt.pre) return buf;
    char ln[64];
    snprintf(ln, sizeof ln, "model.%s.layer_norm", stack);
    layer_norm(w, a, ln, buf, NULL);
    snprintf(buf, n, "%s", ln);
    return buf;
}

static cJSON *blocks(edw *w, const arch *a, const char *name, const char *in, int64_t n)
{
    cJSON *seq = lay(w, "Sequential", name);
    ins(w, seq, in, NULL, NULL);
    if (n > 1) num(w, seq, "repeat", (double)n);
    /* the stack's loop rebinds hidden_states (`hidden_states = layer_outputs[0]`): its first input dies once the
     * first layer returns (inputs_embeds and the positions are the stack's locals, held by its return) */
    flag(w, seq, "loop", true);
    if (a->ckpt) flag(w, seq, "checkpoint", true);
    cJSON *arr = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!arr) w->r->oom = true;
    return arr;
}

/* BartScaledWordEmbedding + BartLearnedPositionalEmbedding + layernorm_embedding + dropout of one stack (marian:
 * embed_tokens(input_ids) * embed_scale, MarianSinusoidalPositionalEmbedding, no layernorm_embedding); returns the
 * name its layers read */
static const char *embeds(edw *w, const arch *a, const char *stack, const char *ids, char *buf, size_t n)
{
    char tok[64], sc[64], pos[64], sum[64], ln[64], dr[64];
    snprintf(tok, sizeof tok, "model.%s.embed_tokens", stack);
    snprintf(sc, sizeof sc, "model.%s.inputs_embeds", stack);
    snprintf(pos, sizeof pos, "model.%s.embed_positions", stack);
    snprintf(sum, sizeof sum, "model.%s.embeds", stack);
    snprintf(ln, sizeof ln, "model.%s.layernorm_embedding", stack);
    snprintf(dr, sizeof dr, "model.%s.dropout", stack);
    cJSON *o = lay(w, "Embedding", tok);
    if (ids) ins(w, o, ids, NULL, NULL);
    num(w, o, "num_embeddings", (double)a->V); /* marian's unshared decoder: a deep copy of shared, vocab_size rows */
    num(w, o, "embedding_dim", (double)a->H);
    if (ids && a->bt.share) str(w, o, "tie", "model.encoder.embed_tokens"); /* both stacks' embed_tokens are shared's weight */
    if (!a->bt.sinus) {
        flag(w, o, "input_embeddings", false); /* BartModel.get_input_embeddings() is shared: PEFT's hook never fires */
    } else if (ids) {
        /* MarianModel.get_input_embeddings() is the encoder's embed_tokens, shared itself when shared: its hook
         * fires on the decoder's call too */
        flag(w, o, "input_embeddings", a->bt.share);
    }
    num(w, lay(w, "Scale", sc), "factor", a->emb_mult); /* * embed_scale */
    /* M2M100SinusoidalPositionalEmbedding(max_position_embeddings, d_model, padding_idx): a buffer (layers/bart.c) */
    o = lay(w, a->bt.m2m ? "M2M100Positions" : "PositionEmbedding", pos);
    ins(w, o, ids ? ids : "input", NULL, NULL);
    num(w, o, "embedding_dim", (double)a->H);
    if (a->bt.sinus) {
        /* MarianSinusoidalPositionalEmbedding: nn.Embedding(max_position_embeddings, d_model), its weight an
         * nn.Parameter(requires_grad=False); forward under torch.no_grad(): arange(past, past + seq_len), [L, d_model] */
        num(w, o, "num_embeddings", (double)a->maxpos);
        flag(w, o, "frozen", true);
    } else {
        /* bart: arange(seq).expand(bsz, -1) + 2, ids per sample; m2m_100: make_weights(num_positions + offset) */
        num(w, o, "num_embeddings", (double)(a->maxpos + 2));
        if (!a->bt.m2m) flag(w, o, "per_sample", true);
        else num(w, o, "padding_idx", (double)a->bt.pad);
    }
    ins(w, lay(w, "Add", sum), sc, pos, NULL);
    const char *h = sum;
    if (a->bt.ln_emb) {
        layer_norm(w, a, ln, NULL, NULL);
        h = ln;
    }
    snprintf(buf, n, "%s", dropout(w, dr, h, a->p_resid));
    return buf;
}

void vc__hf_bart_write(rd *r, cJSON *arr, const arch *a)
{
    edw w = {r, arr};
    char h[64];
    /* the encoder */
    const char *e = embeds(&w, a, "encoder", NULL, h, sizeof h);
    cJSON *la = blocks(&w, a, "model.encoder.layers", e, a->N);
    if (!la) return;
    edw b = {r, la};
    /* BartSdpaAttention's states live until out_proj returns: its argument (the layer's input, the caller's
     * residual) is held to there */
    const bool pre = a->bt.pre;
    if (!pre) {
        ret(&b, "self_attn.hidden_states", "input", NULL, NULL, false);
        str(&b, cJSON_GetArrayItem(la, cJSON_GetArraySize(la) - 1), "held_until", "self_attn.out_proj");
    }
    attention(&b, a, "self_attn", pre ? "input" : "self_attn.hidden_states", NULL, a->NH, false, false, "self_attn.residual",
              "self_attn_layer_norm");
    mlp(&b, a, pre ? "self_attn.residual" : "self_attn_layer_norm", a->I);
    /* BartEncoderLayer.forward returns: its input (the loop's hidden_states) and residual die then */
    ret(&b, "return", layer_out(a), "input", pre ? "self_attn.residual" : "self_attn_layer_norm", false);
    /* BartEncoder.forward returns (inputs_embeds, embed_pos die); encoder_outputs held to the model's end */
    char so[64];
    ret(&w, "encoder", stack_norm(&w, a, "encoder", so, sizeof so), "model.encoder.inputs_embeds",
        "model.encoder.embed_positions", true);
    /* decoder_input_ids: shift_tokens_right(labels) in training, given in inference */
    cJSON *di = lay(&w, "T5DecoderIds", "decoder_input_ids");
    num(&w, di, "length", (double)a->tgt);
    if (a->bt.mbart_shift) flag(&w, di, "mbart", true); /* mbart's shift_tokens_right(labels, pad) */
    const char *d = embeds(&w, a, "decoder", "decoder_input_ids", h, sizeof h);
    la = blocks(&w, a, "model.decoder.layers", d, a->dec_N);
    if (!la) return;
    b.arr = la;
    const bool cache = !a->ckpt; /* use_cache: config.use_cache without labels (-m infer); the training step's labels
                                  * turn it off ("labels_no_cache"), as gradient checkpointing does */
    if (!pre) {
        ret(&b, "self_attn.hidden_states", "input", NULL, NULL, false);
        str(&b, cJSON_GetArrayItem(la, cJSON_GetArraySize(la) - 1), "held_until", "self_attn.out_proj");
    }
    attention(&b, a, "self_attn", pre ? "input" : "self_attn.hidden_states", NULL, a->wh.dec_NH, true, cache,
              "self_attn.residual", "self_attn_layer_norm");
    if (!pre) str(&b, cJSON_GetArrayItem(la, cJSON_GetArraySize(la) - 1), "held_until", "encoder_attn.out_proj");
    attention(&b, a, "encoder_attn", pre ? "self_attn.residual" : "self_attn_layer_norm", "encoder", a->wh.dec_NH, false,
              cache, "encoder_attn.residual", "encoder_attn_layer_norm");
    if (pre) { /* residual = the cross block's sum until return; the self-attention block's dies when rebound */
        mlp(&b, a, "encoder_attn.residual", a->wh.dec_I);
        ret(&b, "return", "residual", "input", "encoder_attn.residual", false);
    } else {
        /* the cross block's residual (self_attn_layer_norm's output) until it is rebound after encoder_attn_layer_norm */
        ret(&b, "encoder_attn.return", "encoder_attn_layer_norm", "self_attn_layer_norm", NULL, false);
        mlp(&b, a, "encoder_attn.return", a->wh.dec_I);
        ret(&b, "return", "final_layer_norm", "input", "encoder_attn.return", false);
    }
    ret(&w, "decoder", stack_norm(&w, a, "decoder", so, sizeof so), "model.decoder.inputs_embeds",
        "model.decoder.embed_positions", true);
    /* lm_logits = lm_head(outputs[0]) + final_logits_bias */
    cJSON *o = lay(&w, "Linear", "lm_head");
    num(&w, o, "in_features", (double)a->H);
    num(&w, o, "out_features", (double)a->bt.dec_V); /* marian: target_vocab_size */
    flag(&w, o, "bias", false);
    /* tie_weights: the decoder's get_input_embeddings() (shared's weight, or marian's unshared decoder's own) */
    if (a->tie) str(&w, o, "tie", a->bt.share ? "model.encoder.embed_tokens" : "model.decoder.embed_tokens");
    /* M2M100ForConditionalGeneration.forward: lm_logits = self.lm_head(outputs[0]), no final_logits_bias */
    if (!a->bt.m2m) num(&w, lay(&w, "BartLogitsBias", "final_logits_bias"), "vocab_size", (double)a->bt.dec_V);
}
