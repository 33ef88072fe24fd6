/*
 * bart.c — the piece of BartForConditionalGeneration (issue 31 item 4: bart) that no other kind has:
 * the final_logits_bias buffer added to lm_head's logits (BartLogitsBias). src/hf/hf_bart.c writes a
 * config.json's model with it, layers/whisper.c's WhisperAttention (BartSdpaAttention's core, op for op)
 * and layers/t5.c's T5DecoderIds (shift_tokens_right) and T5Return.
 *
 * Source: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e,
 * src/transformers/models/bart/modeling_bart.py:
 *   BartForConditionalGeneration.__init__: self.register_buffer("final_logits_bias", torch.zeros((1,
 *       self.model.shared.num_embeddings))): a buffer (no parameter, no gradient), cast with the model;
 *   forward: lm_logits = self.lm_head(outputs[0]); lm_logits = lm_logits + self.final_logits_bias.to(
 *       lm_logits.device): a new [B, T, V] tensor (add saves nothing; lm_head's output dies with the
 *       rebinding unless its backward keeps it, which a Linear's does not).
 */
#include "layer.h"
#include "ops.h"

typedef struct {
    int64_t vocab;
} lb_cfg;

static int lb_parse(vc_args *a, void *p) { return vc_arg_int(a, "vocab_size", VC_REQUIRED, 1, &((lb_cfg *)p)->vocab); }

static int lb_setup(vc_setup *s, void *p)
{
    const lb_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->d[x->nd - 1] != c->vocab)
        return vc_fail(s, "vocab_size", "vocab_size is %lld but the logits have %lld (last dimension)", (long long)c->vocab,
                       (long long)x->d[x->nd - 1]);
    s->out = *x;
    return vc_buffer(s, "final_logits_bias", c->vocab, VC_DT_FLOAT);
}

static void lb_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0);
    vc_set_output(b, vc__op_add(b, x, vc_buf(b, 0), vc_numel_of(b, x), false));
}

const vc_kind vc_kind_BartLogitsBias = {
    .ops = 1,
    .name = "BartLogitsBias", .summary = "BART's final_logits_bias buffer [V] added to the logits: a new tensor",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(lb_cfg),
    .parse = lb_parse, .setup = lb_setup, .emit = lb_emit,
};

/* ---- M2M100Positions: M2M100SinusoidalPositionalEmbedding (model_type m2m_100, src/hf/hf_bart.c) ----
 * Source: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e,
 * src/transformers/models/m2m_100/modeling_m2m_100.py:
 *   __init__: offset = 2; make_weights(num_positions + offset, embedding_dim, padding_idx):
 *       emb_weights = get_embedding(...) (a [num_positions + 2, embedding_dim] table, row padding_idx zeroed,
 *       .to(torch.get_default_dtype())); self.register_buffer("weights", emb_weights, persistent=False): a buffer,
 *       no parameter (not in named_parameters(), not in the state dict), cast with the model;
 *   forward (@torch.no_grad()): position_ids = create_position_ids_from_input_ids(input_ids, padding_idx, past):
 *       mask = input_ids.ne(padding_idx).int(); incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) +
 *       past_key_values_length) * mask; return incremental_indices.long() + padding_idx ([B, L] per sample);
 *       max_pos = padding_idx + 1 + seq_len + past: past weights.size(0) make_weights rebuilds the buffer
 *       (max_pos + 2 rows; refused before it is reached: src/hf/hf.c);
 *       self.weights.index_select(0, position_ids.view(-1)).view(bsz, seq_len, -1).detach(): a new [B, L, dim]
 *       tensor of the buffer's dtype, no gradient. position_ids dies when forward returns. */
typedef struct {
    int64_t num, dim, pad;
} mp_cfg;

static int mp_parse(vc_args *a, void *p)
{
    mp_cfg *c = p;
    return vc_arg_int(a, "num_embeddings", VC_REQUIRED, 1, &c->num) || vc_arg_int(a, "embedding_dim", VC_REQUIRED, 1, &c->dim) ||
           vc_arg_int(a, "padding_idx", VC_REQUIRED, 0, &c->pad);
}

/* The most positions (seq_len + past) forward looks up without rebuilding the buffer: padding_idx + 1 + seq_len +
 * past <= num_embeddings */
int64_t vc__m2m_positions_limit(const void *cfg)
{
    const mp_cfg *c = cfg;
    return c->num - 1 - c->pad;
}

static int mp_setup(vc_setup *s, void *p)
{
    const mp_cfg *c = p;
    if (s->in[0].nd != 1) return vc_fail(s, "inputs", "M2M100Positions takes the token ids [L]");
    if (c->pad >= c->num) return vc_fail(s, "padding_idx", "get_embedding zeroes row padding_idx: past the table's rows");
    if (s->in[0].d[0] > c->num - 1 - c->pad)
        return vc_fail(s, "num_embeddings", "padding_idx + 1 + %lld positions pass the table's %lld rows: forward would "
                       "rebuild the buffer (make_weights), not modelled", (long long)s->in[0].d[0], (long long)c->num);
    int64_t d[2] = {s->in[0].d[0], c->dim}, n;
    s->out = vc_shape_make(2, d);
    return vc_mul(s, c->num, c->dim, &n) || vc_buffer(s, "weights", n, VC_DT_FLOAT);
}

static vc_t mp_ng(vc_build *b, const char *name, vc_t x, vc_t y, int64_t n, vc_dtype dt)
{
    return vc__op_nograd(b, name, x, y, vc_n_sample(n), dt);
}

static void mp_emit(vc_build *b, const void *p)
{
    const mp_cfg *c = p;
    const int64_t L = vc_input_shape(b, 0)->d[0];
    vc_t mask = mp_ng(b, "int", mp_ng(b, "ne", vc_input(b, 0), -1, L, VC_DT_BOOL), -1, L, VC_DT_I32);
    vc_t t = mp_ng(b, "type_as", mp_ng(b, "cumsum", mask, -1, L, VC_DT_I64), -1, L, VC_DT_I32);
    t = mp_ng(b, "mul", mp_ng(b, "add", t, -1, L, VC_DT_I32), mask, L, VC_DT_I32); /* (... + past) * mask */
    t = mp_ng(b, "add", mp_ng(b, "long", t, -1, L, VC_DT_I64), -1, L, VC_DT_I64); /* .long() + padding_idx */
    vc_t w = vc_buf(b, 0);
    vc_set_output(b, mp_ng(b, "index_select", w, t, L * c->dim, vc_dt_of(b, w)));
}

const vc_kind vc_kind_M2M100Positions = {
    .ops = 9,
    .name = "M2M100Positions",
    .summary = "M2M100's sinusoidal positions: a [num_embeddings, dim] buffer indexed by ids from the padding mask",
    .min_inputs = 1, .max_inputs = 1, .flags = VC_KIND_INT_INPUT, .cfg_size = sizeof(mp_cfg),
    .parse = mp_parse, .setup = mp_setup, .emit = mp_emit,
};
