/*
 * hf_modernbert.c — ModernBERT (model_type "modernbert", issue 31 item 4): the keys its
 * family row does not read, and ModernBertForSequenceClassification written as layers.
 *
 * Source: models/modernbert/modeling_modernbert.py at huggingface/transformers
 * 000c33fdfde12e1ffafbfcdb3c926df5727a00b6 (sdpa, the default without flash-attn; the
 * unpadding path runs only under flash_attention_2 and is not modelled):
 *  - ModernBertEmbeddings: tok_embeddings, norm (nn.LayerNorm(bias=norm_bias)), drop;
 *  - ModernBertModel.forward: _update_attention_mask makes the global [B, 1, L, L] mask and the
 *    sliding-window one (layers/llm.c bidir_masks), held until it returns; the rotary cos/sin of
 *    each layer type (ModernBertRotaryEmbedding: rope_theta of "full_attention" and
 *    "sliding_attention"); the layers; final_norm;
 *  - ModernBertEncoderLayer: attn_norm (nn.Identity on layer 0), attn (Wqkv [3H, H] with
 *    attention_bias, qkv.view(B, L, 3, heads, D).transpose(3, 1).unbind(2): strided views,
 *    apply_rotary_pos_emb, F.scaled_dot_product_attention(q, k, v, dropout_p, attn_mask) with the
 *    sliding-window mask on layers with layer_id % global_attn_every_n_layers != 0, else the
 *    global one; transpose(1, 2).contiguous(); Wo, out_drop), + residual; mlp_norm, mlp (Wi [2I,
 *    H], chunk(2): act(input) * gate, drop, Wo), + residual;
 *  - ModernBertForSequenceClassification: classifier_pooling "cls" (last_hidden_state[:, 0]) or
 *    "mean" ((h * attention_mask.unsqueeze(-1)).sum(1) / attention_mask.sum(1, keepdim=True)),
 *    head (ModernBertPredictionHead: dense with classifier_bias, classifier_activation, norm),
 *    drop (classifier_dropout), classifier; CrossEntropyLoss.
 * What is not modelled is refused naming its key: reference_compile true (torch.compile of the
 * MLP, embeddings and head), layer_types that disagree with global_attn_every_n_layers.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

/* ------------------------------------------------------------ reading */

static const cJSON *mb_key(const rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static int mb_bool(rd *r, const char *key, bool def, bool *out)
{
    const cJSON *v = mb_key(r, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return vc__hf_bad(r, key, "expected true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* ACT2FN's names that ModernBertPredictionHead's activation may take here (activations.py) */
static int mb_act(rd *r, const char *key, int *out)
{
    static const char *const names[] = {"gelu", "gelu_pytorch_tanh", "silu", "swish", "relu"};
    static const int acts[] = {A_GELU, A_GELU_TANH, A_SILU, A_SILU, A_RELU};
    const cJSON *v = mb_key(r, key);
    const char *s = v ? (cJSON_IsString(v) ? v->valuestring : NULL) : "gelu"; /* ModernBertConfig: "gelu" */
    if (!s) return vc__hf_bad(r, key, "expected a string naming an activation");
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i])) {
            *out = acts[i];
            return 0;
        }
    char e[64];
    vc_escape(e, sizeof e, s);
    return vc__hf_bad(r, key, "activation \"%s\" is not modelled (gelu, gelu_pytorch_tanh, silu, swish or relu)", e);
}

bool vc__hf_modernbert_local(const arch *a, int64_t i)
{
    return i % a->window_pattern != 0; /* ModernBertAttention.__init__: layer_id % global_attn_every_n_layers */
}

int vc__hf_modernbert_read(rd *r, arch *a)
{
    if (mb_bool(r, "norm_bias", false, &a->mb.norm_bias) || mb_bool(r, "classifier_bias", false, &a->mb.cls_bias) ||
        mb_act(r, "classifier_activation", &a->mb.cls_act))
        return -1;
    const cJSON *p = mb_key(r, "classifier_pooling"); /* ModernBertConfig.__init__ raises on any other value */
    if (p && (!cJSON_IsString(p) || (strcmp(p->valuestring, "cls") && strcmp(p->valuestring, "mean"))))
        return vc__hf_bad(r, "classifier_pooling", "expected \"cls\" or \"mean\"");
    a->mb.pool_mean = p && !strcmp(p->valuestring, "mean");
    /* the rotary bases change cos / sin values, no tensor's size: checked, not used */
    for (int i = 0; i < 2; i++) {
        const char *k = i ? "local_rope_theta" : "global_rope_theta";
        const cJSON *v = mb_key(r, k);
        if (v && (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0))
            return vc__hf_bad(r, k, "expected a positive number");
    }
    /* ModernBertPreTrainedModel._maybe_set_compile: reference_compile true compiles the MLP, the
     * embeddings and the MaskedLM head with torch.compile (Inductor's fused kernels): not modelled.
     * None compiles on a GPU when triton is installed: the estimate is the eager module's. */
    bool compile = false;
    if (mb_bool(r, "reference_compile", false, &compile)) return -1;
    if (compile)
        return vc__hf_bad(r, "reference_compile", "true (torch.compile of the MLP, embeddings and head) is not modelled; "
                      "false or null gives the eager modules modelled here");
    /* layer_types picks each layer's rotary (ModernBertEncoderLayer.attention_type), the pattern its
     * window (ModernBertAttention): a list that disagrees mixes them, not modelled */
    for (int64_t i = 0; a->layer_types && i < a->N; i++) {
        const cJSON *t = cJSON_GetArrayItem(a->layer_types, (int)i);
        bool sliding = !strcmp(t->valuestring, "sliding_attention");
        if (sliding != vc__hf_modernbert_local(a, i))
            return vc__hf_bad(r, "layer_types", "layer %lld is \"%s\" but global_attn_every_n_layers (%lld) makes it %s: "
                          "ModernBertAttention takes the window from the pattern and the rotary from layer_types, a mix "
                          "not modelled", (long long)i, t->valuestring, (long long)a->window_pattern,
                          sliding ? "global" : "local");
    }
    return 0;
}

/* ------------------------------------------------------------ writing */

typedef struct {
    rd *r;
    cJSON *arr;
    const char *last;
} mw;

static cJSON *mb_layer(mw *w, const char *type, const char *name)
{
    w->last = name;
    return vc__hf_layer(w->r, w->arr, type, name);
}
static void mb_num(mw *w, cJSON *o, const char *k, double v) { vc__hf_num(w->r, o, k, v); }
static void mb_flag(mw *w, cJSON *o, const char *k, bool v) { vc__hf_flag(w->r, o, k, v); }
static void mb_str(mw *w, cJSON *o, const char *k, const char *v) { vc__hf_str(w->r, o, k, v); }
static void mb_ins(mw *w, cJSON *o, const char *a, const char *b) { vc__hf_ins(w->r, o, a, b, NULL, NULL); }

static void mb_linear(mw *w, const char *name, int64_t in, int64_t out, bool bias)
{
    cJSON *o = mb_layer(w, "Linear", name);
    mb_num(w, o, "in_features", (double)in);
    mb_num(w, o, "out_features", (double)out);
    mb_flag(w, o, "bias", bias);
}

/* nn.LayerNorm(hidden_size, eps=norm_eps, bias=norm_bias) */
static void mb_norm(mw *w, const arch *a, const char *name)
{
    cJSON *o = mb_layer(w, "LayerNorm", name);
    mb_num(w, o, "normalized_shape", (double)a->H);
    mb_num(w, o, "eps", a->eps);
    mb_flag(w, o, "bias", a->mb.norm_bias);
}

static void mb_dropout(mw *w, const char *name, double p)
{
    if (p <= 0) return; /* nn.Dropout(0.0) / nn.Identity: the input itself */
    cJSON *o = mb_layer(w, "Dropout", name);
    mb_num(w, o, "p", p);
}

static void mb_act_layer(mw *w, int act, const char *name)
{
    if (act == A_SILU) {
        mb_layer(w, "SiLU", name);
    } else if (act == A_RELU) {
        mb_layer(w, "ReLU", name);
    } else {
        cJSON *o = mb_layer(w, "GELU", name);
        mb_str(w, o, "approximate", act == A_GELU_TANH ? "tanh" : "none");
    }
}

/* A Sequential of its own inside w: the block's input is held until its last layer returns, as a
 * module's argument is through its forward (src/engine/plan.c vc__emit_instances). */
static cJSON *mb_block(mw *w, const char *name, const char *in, mw *inner)
{
    cJSON *seq = mb_layer(w, "Sequential", name);
    if (in) mb_ins(w, seq, in, NULL);
    cJSON *arr = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (seq && !arr) w->r->oom = true;
    *inner = (mw){w->r, arr, NULL};
    return arr;
}

/* ModernBertEncoderLayer.forward (layer i): self.attn(self.attn_norm(h)) -- the normed input is
 * ModernBertAttention.forward's hidden_states, alive until it returns --, h + it;
 * self.mlp(self.mlp_norm(h)) -- ModernBertMLP.forward's argument, and Wi's output, whose chunks
 * input and gate are its locals until it returns --, h + it. */
static void mb_encoder_layer(mw *w, const arch *a, int64_t i)
{
    const bool local = vc__hf_modernbert_local(a, i);
    if (i > 0) mb_norm(w, a, "attn_norm"); /* layer 0: nn.Identity */
    mw at, ml, mi;
    if (!mb_block(w, "attn", i > 0 ? "attn_norm" : "input", &at)) return;
    mb_linear(&at, "attn.Wqkv", a->H, 3 * a->H, a->qkv_bias);
    cJSON *o = mb_layer(&at, "RotaryAttention", "attn.attention");
    mb_ins(&at, o, "attn.Wqkv", local ? "model.rotary_emb_local" : "model.rotary_emb");
    mb_num(&at, o, "num_heads", (double)a->NH);
    mb_num(&at, o, "head_dim", (double)a->D);
    mb_flag(&at, o, "fused_qkv", true);
    mb_flag(&at, o, "causal", false);
    mb_num(&at, o, "bidir_masks", (double)a->window);
    if (local) mb_flag(&at, o, "local_mask", true);
    if (a->p_attn > 0) mb_num(&at, o, "dropout", a->p_attn);
    mb_linear(&at, "attn.Wo", a->H, a->H, a->o_bias);
    mb_dropout(&at, "attn.out_drop", a->p_attn);
    mb_ins(w, mb_layer(w, "Add", "attn_residual"), "input", "attn");
    mb_norm(w, a, "mlp_norm");
    if (!mb_block(w, "mlp", "mlp_norm", &ml)) return;
    mb_linear(&ml, "mlp.Wi", a->H, 2 * a->I, a->mlp_bias);
    if (!mb_block(&ml, "mlp.glu", "mlp.Wi", &mi)) return;
    o = mb_layer(&mi, "GatedActivation", "mlp.act"); /* input, gate = chunk(2); act(input) * gate */
    mb_flag(&mi, o, "fused", true);
    mb_str(&mi, o, "activation", a->act == A_SILU ? "silu" : a->act == A_RELU ? "relu" : a->act == A_GELU_TANH ? "gelu_tanh" : "gelu");
    mb_dropout(&mi, "mlp.drop", a->p_resid);
    mb_linear(&mi, "mlp.Wo", a->I, a->H, a->mlp_bias);
    mb_ins(w, mb_layer(w, "Add", "mlp_residual"), "attn_residual", "mlp");
}

static bool mb_ckpt(const arch *a, int64_t i) { return a->ckpt && (i + 1) % a->ckpt_every == 0; }

void vc__hf_modernbert_write(rd *r, cJSON *arr, const arch *a)
{
    mw w = {r, arr, NULL};
    /* ModernBertModel.forward: _update_attention_mask's two masks first (made by the first rotary layer,
     * outside every decoder layer and checkpoint), the embeddings, then position_embeddings[layer_type] =
     * self.rotary_emb(hidden_states, position_ids, layer_type) for each type, both alive through the layers
     * (the rotary tables are written before the embeddings here: a few L x head_dim tensors) */
    bool any_local = false;
    for (int64_t i = 0; i < a->N; i++) any_local |= vc__hf_modernbert_local(a, i);
    cJSON *o;
    for (int k = 0; k < 1 + any_local; k++) {
        o = mb_layer(&w, "RotaryEmbedding", k ? "model.rotary_emb_local" : "model.rotary_emb");
        mb_ins(&w, o, "input", NULL);
        mb_num(&w, o, "head_dim", (double)a->D);
        if (!k) mb_num(&w, o, "bidir_masks", (double)a->window);
    }
    o = mb_layer(&w, "Embedding", "model.embeddings.tok_embeddings");
    mb_ins(&w, o, "input", NULL);
    mb_num(&w, o, "num_embeddings", (double)a->V);
    mb_num(&w, o, "embedding_dim", (double)a->H);
    mb_norm(&w, a, "model.embeddings.norm");
    mb_dropout(&w, "model.embeddings.drop", a->p_embd);
    const char *first = w.last;
    /* one Sequential per layer, no runs with `repeat`: a run keeps its input (the previous layer's
     * output) until its last layer returns, which ModernBertModel.forward's loop does not (hidden_states
     * rebound to each layer's output): one [B, L, H] too many through an inference run */
    for (int64_t i = 0; i < a->N && !r->oom; i++) {
        cJSON *seq = mb_layer(&w, "Sequential", NULL);
        if (!seq) return;
        if (i == 0) mb_ins(&w, seq, first, NULL);
        if (mb_ckpt(a, i)) mb_flag(&w, seq, "checkpoint", true);
        cJSON *inner = cJSON_AddArrayToObject(seq, "layers");
        if (!inner) {
            r->oom = true;
            return;
        }
        mw iw = {r, inner, NULL};
        mb_encoder_layer(&iw, a, i);
    }
    cJSON *lastl = cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1);
    if (lastl && !cJSON_AddStringToObject(lastl, "name", "model.layers")) r->oom = true;
    mb_norm(&w, a, "model.final_norm");
    if (a->mb.pool_mean) { /* (h * attention_mask.unsqueeze(-1)).sum(dim=1) / attention_mask.sum(dim=1, keepdim=True) */
        o = mb_layer(&w, "Scale", "pool.mask_mul");
        mb_num(&w, o, "factor", 1.0);
        o = mb_layer(&w, "Mean", "pool.mean");
        mb_num(&w, o, "dim", 1);
    } else { /* last_hidden_state[:, 0] */
        o = mb_layer(&w, "Select", "first_token");
        mb_num(&w, o, "dim", 1);
        mb_num(&w, o, "index", 0);
    }
    mb_linear(&w, "head.dense", a->H, a->H, a->mb.cls_bias);
    mb_act_layer(&w, a->mb.cls_act, "head.act");
    mb_norm(&w, a, "head.norm");
    mb_dropout(&w, "drop", a->p_cls);
    mb_linear(&w, "classifier", a->H, a->labels, true);
}
