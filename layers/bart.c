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
