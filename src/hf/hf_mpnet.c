/*
 * hf_mpnet.c — mpnet (model_type mpnet; issue 31, item 4): sentence-transformers/all-mpnet-base-v2,
 * microsoft/mpnet-base. The keys of MPNetConfig the row's reading cannot check, and
 * MPNetForSequenceClassification's layers.
 *
 * Sources, huggingface/transformers:
 *  - models/mpnet/configuration_mpnet.py @ 06053b84: MPNetConfig.__init__'s defaults (vocab_size 30527,
 *    hidden_size 768, 12 layers of 12 heads, intermediate_size 3072, gelu, dropouts 0.1,
 *    max_position_embeddings 512, layer_norm_eps 1e-12, relative_attention_num_buckets 32, pad_token_id 1).
 *  - models/mpnet/modeling_mpnet.py @ 00099b9f:
 *    MPNetEmbeddings (padding_idx = 1, fixed: word_embeddings and position_embeddings nn.Embedding with
 *      padding_idx 1; LayerNorm; dropout(hidden_dropout_prob); no token types): position_ids =
 *      create_position_ids_from_input_ids(input_ids, 1), per sample, from 2 up (RoBERTa's); embeddings =
 *      inputs_embeds + position_embeddings, LayerNorm, dropout.
 *    MPNetSelfAttention (q, k, v, o nn.Linear with biases; no attention interface, always eager): matmul,
 *      / sqrt(head size), += position_bias (in place), + attention_mask, softmax in the scores' dtype,
 *      dropout(attention_probs_dropout_prob), matmul, permute, contiguous, o (layers/t5.c T5Attention's
 *      "scale" core); MPNetAttention: LayerNorm(dropout(o) + hidden_states), the tuple self_outputs
 *      holding o until it returns; MPNetIntermediate (dense, act), MPNetOutput (dense, dropout,
 *      LayerNorm(h + input)), MPNetLayer (intermediate_output a local until the layer returns).
 *    MPNetEncoder: relative_attention_bias nn.Embedding(relative_attention_num_buckets, heads), ONE for
 *      every layer; forward: position_bias = self.compute_position_bias(hidden_states) before the layers
 *      (num_buckets=32, its default: the config's value sizes the table only), each layer adds it;
 *      relative_position_bucket: ret = 0, n = -relative_position, num_buckets //= 2, ret += (n < 0) *
 *      num_buckets, n = abs(n), max_exact = num_buckets // 2, log-spaced buckets up to max_distance 128,
 *      min(num_buckets - 1): indices 0..31 (layers/t5.c T5PositionBias "expand").
 *    MPNetModel.forward: attention_mask = torch.ones(input_shape) when none is given,
 *      get_extended_attention_mask ((1.0 - m[:, None, None, :].to(dtype)) * finfo.min: layers/t5.c
 *      T5StackMask "padding"), the embeddings, the encoder; no pooler under the task heads
 *      (add_pooling_layer=False). MPNetModel itself (the checkpoints' MPNetForMaskedLM base, the
 *      sentence-transformers model) has MPNetPooler (dense H x H, tanh).
 *    MPNetForSequenceClassification: MPNetClassificationHead (features[:, 0, :], dropout, dense,
 *      torch.tanh, dropout, out_proj; its dropouts hidden_dropout_prob), CrossEntropyLoss.
 *    MPNetPreTrainedModel sets no supports_gradient_checkpointing (PreTrainedModel's False):
 *      gradient_checkpointing_enable raises ValueError; MPNetLayer is a plain nn.Module.
 * Refused: gradient checkpointing (above), --tp (src/hf/hf.c), autocast and pipeline stages
 * (vc__mpnet_check), relative_attention_num_buckets below 32 (compute_position_bias indexes 32).
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "model.h"
#include "util.h"

int vc__hf_mpnet_read(rd *r, arch *a)
{
    /* compute_position_bias(x) keeps num_buckets=32: its buckets run 0..31 whatever the table holds */
    if (a->rel_buckets < 32)
        return vc__hf_bad(r, "relative_attention_num_buckets", "%lld: MPNetEncoder.compute_position_bias always "
                          "makes 32 buckets (indices up to 31 into relative_attention_bias): at least 32 rows are needed",
                          (long long)a->rel_buckets);
    if (a->rel_buckets > (INT64_C(1) << 24))
        return vc__hf_bad(r, "relative_attention_num_buckets", "%lld: more than the limit of 2^24 rows",
                          (long long)a->rel_buckets);
    if (a->ckpt) {
        vc_set_error(r->err, VC_ERR_USAGE, O("grad_ckpt"), "mpnet: MPNetPreTrainedModel does not support gradient "
                     "checkpointing (supports_gradient_checkpointing False: gradient_checkpointing_enable raises ValueError)");
        return -1;
    }
    return 0;
}

/* ---- the layers ---- */
typedef struct {
    rd *r;
    cJSON *arr;
    char last[128]; /* the name of the layer written last */
} mpw;

static cJSON *mp_lay(mpw *w, const char *type, const char *name)
{
    snprintf(w->last, sizeof w->last, "%s", name ? name : "");
    return vc__hf_layer(w->r, w->arr, type, name);
}

static void mp_ins(mpw *w, cJSON *o, const char *const *v, int n)
{
    cJSON *arr = o ? cJSON_CreateStringArray(v, n) : NULL;
    if (o && (!arr || !cJSON_AddItemToObject(o, "inputs", arr))) {
        cJSON_Delete(arr);
        w->r->oom = true;
    }
}

static void mp_linear(mpw *w, const char *name, const char *in, int64_t nin, int64_t nout)
{
    cJSON *o = mp_lay(w, "Linear", name);
    if (in) vc__hf_ins(w->r, o, in, NULL, NULL, NULL);
    vc__hf_num(w->r, o, "in_features", (double)nin);
    vc__hf_num(w->r, o, "out_features", (double)nout);
    vc__hf_flag(w->r, o, "bias", true);
}

static void mp_norm(mpw *w, const arch *a, const char *name)
{
    cJSON *o = mp_lay(w, "LayerNorm", name);
    vc__hf_num(w->r, o, "normalized_shape", (double)a->H);
    vc__hf_num(w->r, o, "eps", a->eps);
}

/* nn.Dropout(p); p 0 returns its input: no layer, `in` is what follows reads */
static const char *mp_dropout(mpw *w, const char *name, double p, const char *in)
{
    if (p <= 0) return in;
    cJSON *o = mp_lay(w, "Dropout", name);
    vc__hf_num(w->r, o, "p", p);
    return name;
}

static void mp_act(mpw *w, const arch *a, const char *name)
{
    if (a->act == A_GELU_NEW || a->act == A_GELU_FAST) { /* ACT2FN's NewGELUActivation / FastGELUActivation */
        cJSON *o = mp_lay(w, "NewGELU", name);
        vc__hf_str(w->r, o, "variant", a->act == A_GELU_NEW ? "new" : "fast");
    } else if (a->act == A_SILU) {
        mp_lay(w, "SiLU", name);
    } else if (a->act == A_RELU) {
        mp_lay(w, "ReLU", name);
    } else {
        cJSON *o = mp_lay(w, "GELU", name);
        vc__hf_str(w->r, o, "approximate", a->act == A_GELU_TANH ? "tanh" : "none");
    }
}

/* a module's return (layers/t5.c T5Return): its output, the locals it held until then */
static void mp_return(mpw *w, const char *name, const char *const *v, int n) { mp_ins(w, mp_lay(w, "T5Return", name), v, n); }

/* MPNetLayer.forward, one copy of the encoder's Sequential; bias and mask: the encoder's position_bias and
 * the extended attention mask */
static void mp_layer(mpw *w, const arch *a, const char *bias, const char *mask)
{
    const int64_t H = a->H, inner = a->NH * a->D;
    mp_linear(w, "attention.attn.q", "input", H, inner);
    mp_linear(w, "attention.attn.k", "input", H, inner);
    mp_linear(w, "attention.attn.v", "input", H, inner);
    cJSON *o = mp_lay(w, "T5Attention", "attention.attn.attention");
    const char *in[5] = {"attention.attn.q", "attention.attn.k", "attention.attn.v", bias, mask};
    mp_ins(w, o, in, 5);
    vc__hf_num(w->r, o, "num_heads", (double)a->NH);
    vc__hf_num(w->r, o, "head_dim", (double)a->D);
    if (a->p_attn > 0) vc__hf_num(w->r, o, "dropout", a->p_attn);
    vc__hf_flag(w->r, o, "scale", true);
    vc__hf_flag(w->r, o, "float_softmax", false);
    mp_linear(w, "attention.attn.o", NULL, inner, H);
    /* MPNetSelfAttention.forward returns after self.o: q, k, v (its locals) die then */
    static const char *const ret_attn[] = {"attention.attn.o", "attention.attn.q", "attention.attn.k", "attention.attn.v"};
    mp_return(w, "attention.attn.return", ret_attn, 4);
    /* MPNetAttention: LayerNorm(dropout(self_outputs[0]) + hidden_states); self_outputs keeps o to its return */
    const char *d = mp_dropout(w, "attention.dropout", a->p_resid, "attention.attn.return");
    const char *res[2] = {d, "input"};
    mp_ins(w, mp_lay(w, "Add", "attention.residual"), res, 2);
    mp_norm(w, a, "attention.LayerNorm");
    static const char *const ret_sa[] = {"attention.LayerNorm", "attention.attn.o"};
    mp_return(w, "attention.return", ret_sa, 2);
    mp_linear(w, "intermediate.dense", NULL, H, a->I);
    mp_act(w, a, "intermediate.intermediate_act_fn");
    mp_linear(w, "output.dense", NULL, a->I, H);
    d = mp_dropout(w, "output.dropout", a->p_resid, "output.dense");
    const char *res2[2] = {d, "attention.return"};
    mp_ins(w, mp_lay(w, "Add", "output.residual"), res2, 2);
    mp_norm(w, a, "output.LayerNorm");
    /* MPNetOutput.forward: hidden_states = self.LayerNorm(hidden_states + input_tensor): the dropout's output
     * (dense's when p is 0) stays bound through the LayerNorm. MPNetLayer.forward returns: its input (the
     * encoder's hidden_states until rebound), attention_output and intermediate_output die then */
    const char *ret_layer[5] = {"output.LayerNorm", "input", "attention.return", "intermediate.intermediate_act_fn", d};
    mp_return(w, "return", ret_layer, 5);
}

void vc__hf_mpnet_write(rd *r, cJSON *arr, const arch *a)
{
    mpw w = {r, arr, ""};
    static const char we[] = "mpnet.embeddings.word_embeddings", pe[] = "mpnet.embeddings.position_embeddings",
                      mask[] = "mpnet.extended_attention_mask", bias[] = "mpnet.encoder.position_bias";
    cJSON *o = mp_lay(&w, "Embedding", we);
    vc__hf_num(r, o, "num_embeddings", (double)a->V);
    vc__hf_num(r, o, "embedding_dim", (double)a->H);
    /* MPNetModel.forward: torch.ones(input_shape), get_extended_attention_mask: [B, 1, 1, L] in the model's
     * dtype, a local until the forward returns (made before the embeddings there; written after the token
     * lookup here, whose rows give its length) */
    o = mp_lay(&w, "T5StackMask", mask);
    vc__hf_ins(r, o, we, NULL, NULL, NULL);
    vc__hf_str(r, o, "mask", "padding");
    vc__hf_flag(r, o, "keep_ones", true); /* attention_mask = torch.ones(input_shape): a local of the forward */
    o = mp_lay(&w, "PositionEmbedding", pe); /* create_position_ids_from_input_ids: [B, L] */
    vc__hf_ins(r, o, "input", NULL, NULL, NULL);
    vc__hf_num(r, o, "num_embeddings", (double)a->maxpos);
    vc__hf_num(r, o, "embedding_dim", (double)a->H);
    vc__hf_flag(r, o, "per_sample", true);
    const char *sum[2] = {we, pe};
    mp_ins(&w, mp_lay(&w, "Add", "mpnet.embeddings.sum"), sum, 2); /* inputs_embeds + position_embeddings */
    mp_norm(&w, a, "mpnet.embeddings.LayerNorm");
    const char *d = mp_dropout(&w, "mpnet.embeddings.dropout", a->p_resid, "mpnet.embeddings.LayerNorm");
    /* MPNetEmbeddings.forward returns: inputs_embeds and position_embeddings (its locals) die then */
    const char *eret[3] = {d, we, pe};
    mp_return(&w, "mpnet.embeddings", eret, 3);
    static const char emb[] = "mpnet.embeddings";
    /* MPNetEncoder.forward: compute_position_bias(hidden_states), a local to its return */
    o = mp_lay(&w, "T5PositionBias", bias);
    vc__hf_ins(r, o, emb, emb, NULL, NULL);
    vc__hf_num(r, o, "num_heads", (double)a->NH);
    vc__hf_num(r, o, "num_buckets", (double)a->rel_buckets);
    vc__hf_flag(r, o, "expand", true);
    cJSON *seq = mp_lay(&w, "Sequential", "mpnet.encoder.layer");
    vc__hf_ins(r, seq, emb, NULL, NULL, NULL);
    if (a->N > 1) vc__hf_num(r, seq, "repeat", (double)a->N);
    cJSON *layers = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!layers) {
        r->oom = true;
        return;
    }
    mpw inner = {r, layers, ""};
    mp_layer(&inner, a, bias, mask);
    /* the encoder returns (position_bias dies), then MPNetModel.forward (embedding_output and the extended
     * mask die: no pooler under the task head) */
    const char *ret[4] = {"mpnet.encoder.layer", bias, mask, emb};
    mp_return(&w, "mpnet", ret, 4);
    /* MPNetClassificationHead */
    o = mp_lay(&w, "Select", "classifier.first_token"); /* features[:, 0, :] */
    vc__hf_num(r, o, "dim", 1);
    vc__hf_num(r, o, "index", 0);
    mp_dropout(&w, "classifier.dropout1", a->p_cls, NULL);
    mp_linear(&w, "classifier.dense", NULL, a->H, a->H);
    mp_lay(&w, "Tanh", "classifier.tanh");
    mp_dropout(&w, "classifier.dropout2", a->p_cls, NULL);
    mp_linear(&w, "classifier.out_proj", NULL, a->H, a->labels);
}

/* What an MPNet model's estimate does not model, refused before the plan (src/engine/plan.c through
 * vc__t5_check, src/hf/hf_t5.c): autocast (the fp32 relative_attention_bias and the extended mask in the
 * model's float32 dtype promote MPNetSelfAttention's half-precision scores: scores + attention_mask is
 * float32, not what T5Attention's "scale" core writes) and pipeline stages (every layer reads the encoder's
 * position_bias and the mask). */
vc_status vc__mpnet_check(const vc_model *m, const vc_options *o, vc_error *err)
{
    (void)m;
    if (o->precision == VC_PREC_AMP_FP16 || o->precision == VC_PREC_AMP_BF16)
        return vc_set_error(err, VC_ERR_USAGE, O("precision"), "mpnet: under autocast the float32 position bias and mask "
                            "promote MPNetSelfAttention's scores to float32, not modelled; use fp32, bf16 or fp16 (the "
                            "model cast whole)");
    if (o->pp > 1 || m->stage.on)
        return vc_set_error(err, VC_ERR_USAGE, O("pp"), "mpnet: pipeline stages are not modelled (every layer reads the "
                            "encoder's position bias and mask)");
    return VC_OK;
}
