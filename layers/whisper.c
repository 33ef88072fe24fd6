/*
 * whisper.c — the pieces of WhisperForConditionalGeneration (issue 31 item 4:
 * whisper) that no other kind has: WhisperSdpaAttention's core, from the
 * q / k / v projections to out_proj (WhisperAttention), and the encoder's
 * frozen position table added to the permuted convolution output
 * (WhisperEncoderPositions). src/hf/hf_whisper.c writes a config.json's model
 * with them, Conv1d, GELU, LayerNorm, Linear, Embedding, PositionEmbedding and
 * t5.c's T5DecoderIds (shift_tokens_right is T5's _shift_right op for op).
 *
 * Source: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e,
 * src/transformers/models/whisper/modeling_whisper.py (the function each piece
 * follows is named at it). sdpa is the default attn_implementation there
 * (WHISPER_ATTENTION_CLASSES["sdpa"] = WhisperSdpaAttention).
 */
#include "attention_int.h"

/* ---- WhisperAttention: WhisperSdpaAttention.forward from the projections to out_proj ----
 *   query_states = self._shape(self.q_proj(hidden_states), tgt_len, bsz)
 *   key_states = self._shape(self.k_proj(current_states), -1, bsz)      (likewise v; current_states
 *       the encoder's output for the cross-attention)
 *   _shape: tensor.view(bsz, seq_len, num_heads, head_dim).transpose(1, 2).contiguous(): a copy
 *       unless seq_len or num_heads is 1; the projection's output dies with the expression
 *   past_key_value.update(key_states, value_states, layer_idx) with use_cache (the decoder's
 *       EncoderDecoderCache: DynamicCache.update's first update keeps key_states itself): the
 *       cache holds them until the model's output is dropped ("cache")
 *   is_causal = self.is_causal and causal_mask is None and tgt_len > 1 (the decoder's
 *       self-attention: WhisperDecoder._update_causal_mask returns None for sdpa without an
 *       attention mask, AttentionMaskConverter._ignore_causal_mask_sdpa)
 *   F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=dropout if training,
 *       is_causal=is_causal)
 *   attn_output.transpose(1, 2).reshape(bsz, tgt_len, embed_dim): a copy unless viewable
 * query_states, key_states and value_states are locals until forward returns, after out_proj
 * (the next layer): kept with the argument the caller holds ("held_until" on the norm).
 * Under generate() (src/engine/generate.c "Encoder-decoders") the cache is EncoderDecoderCache's:
 * the cross-attention's _shape copies of the encoder's projections are made at the first step and
 * reused after it (vc_kv_cross: is_updated, k_proj and v_proj not run), the self-attention's are
 * DynamicCache's (vc_kv_update_self: the first update keeps the states, later ones torch.cat); with
 * the cache the decoding steps' queries are one token (is_causal False) over past + 1 keys. */
typedef struct {
    int64_t heads;
    double dropout;
    bool causal, cache;
    bool labels_no_cache; /* "labels_no_cache": the cache only without training (BartForConditionalGeneration.forward
                           * sets use_cache = False when labels are given: src/hf/hf_bart.c) */
} wa_cfg;

static int wa_parse(vc_args *a, void *p)
{
    wa_cfg *c = p;
    return vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) || vc_arg_float(a, "dropout", 0.0, 0.0, 1.0, &c->dropout) ||
           vc_arg_bool(a, "causal", false, &c->causal) || vc_arg_bool(a, "cache", false, &c->cache) ||
           vc_arg_bool(a, "labels_no_cache", false, &c->labels_no_cache);
}

static int wa_setup(vc_setup *s, void *p)
{
    const wa_cfg *c = p;
    for (int i = 0; i < 3; i++)
        if (s->in[i].nd != 2) return vc_fail(s, "inputs", "input %d: expected [seq, embed_dim] per sample", i);
    const int64_t E = s->in[0].d[1], L = s->in[0].d[0], S = s->in[1].d[0];
    if (s->in[1].d[1] != E || s->in[2].d[1] != E || s->in[2].d[0] != S)
        return vc_fail(s, "inputs", "the query is [%lld, %lld]: the key and value must be [S, %lld] with the same S",
                       (long long)L, (long long)E, (long long)E);
    if (E % c->heads)
        return vc_fail(s, "num_heads", "embed_dim (%lld) must be divisible by num_heads (%lld)", (long long)E, (long long)c->heads);
    if (c->causal && S != L) return vc_fail(s, "causal", "a causal self-attention's keys (%lld) must be its queries (%lld)",
                                            (long long)S, (long long)L);
    int64_t t;
    if (vc_mul(s, c->heads, L, &t) || vc_mul(s, t, S + 128, &t)) return -1;
    if (t > (INT64_C(1) << 56)) return vc_fail(s, NULL, "an attention matrix has more than 2^56 elements per sample");
    s->out = s->in[0];
    return 0;
}

static void wa_emit(vc_build *b, const void *p)
{
    const wa_cfg *c = p;
    const int64_t L = vc_input_shape(b, 0)->d[0], E = vc_input_shape(b, 0)->d[1];
    int64_t S = vc_input_shape(b, 1)->d[0], past;
    const int64_t H = c->heads, D = E / H;
    const vc_t arg = vc_input_arg(b, 0); /* hidden_states: the normed input q_proj read */
    vc_t st[3] = {-1, -1, -1};
    const bool gen = vc_gen_seq2seq(b, &past);
    /* a later step's cross-attention: the projections were not run, the cache holds their copies */
    const bool reuse = gen && vc_input(b, 1) < 0 && vc_kv_cross(b, 1, &st[1], &st[2]);
    for (int i = 0; i < 3; i++) {
        if (i > 0 && reuse) continue;
        /* self.q_proj(hidden_states) etc.: temporaries of the expression, no caller holds them */
        vc_input_unheld(b, i);
        vc_t x = vc_input(b, i);
        const int64_t len = i == 0 ? L : S;
        x = vc__op_view(b, x, vc_numel_of(b, x), len == 1 || H == 1); /* .view(...).transpose(1, 2) */
        st[i] = vc__op_contiguous(b, x);                               /* .contiguous() */
    }
    if (gen) { /* use_cache: the decoder's attention is always cached under generate() */
        if (!reuse && !vc_kv_cross(b, 1, &st[1], &st[2]) && c->cache) vc_kv_update_self(b, &st[1], &st[2], &S);
    } else if (c->cache && !(c->labels_no_cache && vc_training(b))) { /* the cache: the states until the output is dropped */
        vc_keep_forward(b, st[1]);
        vc_keep_forward(b, st[2]);
    }
    sdpa_t g = {vc_batch(b), H, L, S, D, D, true, LAY_BHLD, LAY_BHLD, LAY_BHLD, -1, false, false, false,
                vc_training(b) ? c->dropout : 0.0, c->causal && L > 1, BK_MATH, LAY_BHLD};
    g.backend = vc_sdpa_pick(b, &g, vc_dt_of(b, st[0]));
    vc_t o = vc_sdpa_run(b, st[0], st[1], st[2], &g);
    /* attn_output.transpose(1, 2).reshape(bsz, tgt_len, embed_dim) */
    const int64_t sz[4] = {vc_batch(b), H, L, D};
    o = vc__op_view(b, o, vc_numel_of(b, o), lay_contig(g.lout, sz, ORD_BLHD));
    o = vc__op_contiguous(b, o);
    vc_set_output(b, vc__op_view(b, o, vc_numel_of(b, o), true));
    /* the forward's locals, until it returns (after out_proj) */
    const vc_t owner = vc_input_arg_held_next(b, 0) ? arg : -1;
    for (int i = 0; i < 3; i++) {
        vc_keep_to_here(b, st[i]);
        vc_keep_with(b, st[i], owner);
    }
}

const vc_kind vc_kind_WhisperAttention = {
    .ops = 24,
    .name = "WhisperAttention", .summary = "WhisperSdpaAttention's core: _shape copies of q, k, v, sdpa, the reshape copy",
    .min_inputs = 3, .max_inputs = 3, .cfg_size = sizeof(wa_cfg),
    .parse = wa_parse, .setup = wa_setup, .emit = wa_emit,
};

/* ---- WhisperEncoderPositions: WhisperEncoder.forward after conv2's GELU ----
 *   inputs_embeds = inputs_embeds.permute(0, 2, 1)       ([B, d_model, frames / 2] -> [B, frames / 2, d_model], a view)
 *   embed_pos = self.embed_positions.weight              (nn.Embedding(max_source_positions, d_model),
 *                                                         requires_grad_(False): the layer is "frozen")
 *   hidden_states = inputs_embeds + embed_pos            (a new tensor; add saves nothing)
 * The input's length must be max_source_positions (WhisperEncoder.forward raises ValueError
 * unless input_features.shape[-1] == max_source_positions * conv1.stride * conv2.stride). */
typedef struct {
    int64_t num, dim;
} wp_cfg;

static int wp_parse(vc_args *a, void *p)
{
    wp_cfg *c = p;
    return vc_arg_int(a, "num_positions", VC_REQUIRED, 1, &c->num) || vc_arg_int(a, "embedding_dim", VC_REQUIRED, 1, &c->dim);
}

static int wp_setup(vc_setup *s, void *p)
{
    const wp_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->nd != 2 || x->d[0] != c->dim || x->d[1] != c->num)
        return vc_fail(s, "inputs", "expected conv2's output [%lld, %lld] (embedding_dim, num_positions)", (long long)c->dim,
                       (long long)c->num);
    int64_t d[2] = {c->num, c->dim}, t;
    if (vc_mul(s, c->num, c->dim, &t)) return -1;
    s->out = vc_shape_make(2, d);
    return vc_param2(s, "weight", c->num, c->dim);
}

static void wp_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0);
    x = vc__op_view(b, x, vc_numel_of(b, x), false); /* permute(0, 2, 1) */
    vc_set_output(b, vc__op_add(b, x, vc_weight(b, 0), vc_numel_of(b, x), false));
}

const vc_kind vc_kind_WhisperEncoderPositions = {
    .ops = 2,
    .name = "WhisperEncoderPositions",
    .summary = "Whisper's encoder: conv output permuted to [frames, d_model] plus the embed_positions table",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(wp_cfg),
    .parse = wp_parse, .setup = wp_setup, .emit = wp_emit,
};
