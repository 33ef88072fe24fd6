/*
 * hf_read.c — the keys of a Hugging Face config.json, read into an arch
 * (src/hf_arch.h) and checked (issue 12; split out of src/hf.c).
 *
 * Each family's keys and their PretrainedConfig defaults follow its
 * configuration_*.py at huggingface/transformers
 * 5dd4a63548857797727ae73eeb6a6e886ea02a3e. A key the family needs and the
 * config lacks is an error naming the key (err->path); a key with a default
 * takes that default; the products that become tensor sizes are checked here
 * so that the error names a key.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

/* ------------------------------------------------------------ reading keys */

static int bad(rd *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(rd *r, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vc_set_errorv(r->err, VC_ERR_MODEL, key, fmt, ap);
    va_end(ap);
    return -1;
}

static const cJSON *key_of(rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

/* An integer key in [min, 2^40]; def < 0 (-1): required. */
static int get_int(rd *r, const char *key, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = key_of(r, key);
    if (!v) {
        if (def >= 0) {
            *out = def;
            return 0;
        }
        return bad(r, key, "missing: model_type \"%s\" needs \"%s\" (supported families: " FAMILIES ")", r->fam, key);
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d))
        return bad(r, key, "expected an integer");
    if (d < (double)min) return bad(r, key, "expected an integer of at least %lld, got %.17g", (long long)min, d);
    if (d > (double)MAX_SIZE) return bad(r, key, "%.17g is larger than the limit of 2^40", d);
    *out = (int64_t)d;
    return 0;
}

static int get_num(rd *r, const char *key, double def, double min, double max, double *out)
{
    const cJSON *v = key_of(r, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < min || v->valuedouble > max)
        return bad(r, key, "expected a number from %g to %g", min, max);
    *out = v->valuedouble;
    return 0;
}

static int get_bool(rd *r, const char *key, bool def, bool *out)
{
    const cJSON *v = key_of(r, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return bad(r, key, "expected true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

static int get_str(rd *r, const char *key, const char *def, const char **out)
{
    const cJSON *v = key_of(r, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsString(v)) return bad(r, key, "expected a string");
    *out = v->valuestring;
    return 0;
}

/* ------------------------------------------------------------ the architecture */

static int read_act(rd *r, const char *key, const char *def, bool gated, int *out)
{
    const char *s = NULL;
    if (get_str(r, key, def, &s)) return -1;
    static const char *const names[] = {"silu", "swish", "gelu", "gelu_pytorch_tanh", "relu", "gelu_new", "gelu_fast"};
    static const int acts[] = {A_SILU, A_SILU, A_GELU, A_GELU_TANH, A_RELU, A_GELU_NEW, A_GELU_FAST};
    for (int i = 0; i < 7; i++)
        if (!strcmp(s, names[i]) && (!gated || acts[i] <= A_RELU)) {
            *out = acts[i];
            return 0;
        }
    char e[64];
    vc_escape(e, sizeof e, s);
    return bad(r, key, "activation \"%s\" is not modelled (%s)", e,
               gated ? "silu, swish, gelu, gelu_pytorch_tanh or relu" : "gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu or silu");
}

/* rope_scaling: null or an object whose rope_type (or type) is known. The
 * scaling changes inv_freq and a scalar factor, not any tensor's size. */
static int read_rope_scaling(rd *r)
{
    const cJSON *v = key_of(r, "rope_scaling");
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return bad(r, "rope_scaling", "expected an object or null");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "rope_type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(v, "type");
    if (!cJSON_IsString(t)) return bad(r, "rope_scaling.rope_type", "missing: the scaling type (a string)");
    static const char *const ok[] = {"default", "linear", "dynamic", "yarn", "longrope", "llama3", "su", "mrope"};
    for (int i = 0; i < 8; i++)
        if (!strcmp(t->valuestring, ok[i])) return 0;
    char e[64];
    vc_escape(e, sizeof e, t->valuestring);
    return bad(r, "rope_scaling.rope_type", "unknown rope scaling \"%s\" (default, linear, dynamic, yarn, longrope, llama3)", e);
}

/* head_dim = hidden size / heads, which must divide it (the error names
 * the heads' key). */
static int split_heads(rd *r, arch *a, const char *hidden, const char *heads)
{
    if (a->H % a->NH)
        return bad(r, heads, "%s (%lld) must be divisible by %s (%lld)", hidden, (long long)a->H, heads, (long long)a->NH);
    a->D = a->H / a->NH;
    return 0;
}

/* The decoder families' common keys (LlamaConfig and its relatives). */
static int read_decoder(rd *r, arch *a)
{
    bool explicit_hd = a->fam == F_GEMMA || a->fam == F_GEMMA2 || a->fam == F_QWEN3 || a->fam == F_LLAMA ||
                       a->fam == F_MISTRAL;
    if (get_int(r, "vocab_size", -1, 1, &a->V) || get_int(r, "hidden_size", -1, 1, &a->H) ||
        get_int(r, "num_hidden_layers", -1, 1, &a->N) || get_int(r, "num_attention_heads", -1, 1, &a->NH) ||
        get_int(r, "num_key_value_heads", a->NH, 1, &a->KV) || get_num(r, "rms_norm_eps", 1e-6, 0, 1, &a->eps) ||
        get_int(r, "max_position_embeddings", 0, 1, &a->maxpos) || read_rope_scaling(r))
        return -1;
    if (a->fam != F_MIXTRAL && a->fam != F_QWEN2_MOE && get_int(r, "intermediate_size", -1, 1, &a->I)) return -1;
    if (a->fam == F_QWEN2_MOE && get_int(r, "intermediate_size", 1, 1, &a->I)) return -1;
    if (a->fam == F_MIXTRAL && get_int(r, "intermediate_size", -1, 1, &a->I)) return -1;
    if (a->NH % a->KV)
        return bad(r, "num_key_value_heads", "num_attention_heads (%lld) must be divisible by num_key_value_heads (%lld)",
                   (long long)a->NH, (long long)a->KV);
    const cJSON *hd = key_of(r, "head_dim");
    if (explicit_hd && hd) {
        if (get_int(r, "head_dim", -1, 1, &a->D)) return -1;
    } else if (split_heads(r, a, "hidden_size", "num_attention_heads")) {
        return -1;
    }
    a->R = a->D;
    return 0;
}

/* LlamaConfig and the configs derived from it (Mistral, Qwen2, Qwen3, Phi3,
 * Mixtral, Qwen2Moe): their defaults as the configuration_*.py files set them. */
static int read_llama_like(rd *r, arch *a)
{
    double p = 0; /* set by get_num on success (-O3 cannot see it: -Wmaybe-uninitialized) */
    if (read_decoder(r, a) || read_act(r, "hidden_act", "silu", true, &a->act) ||
        get_bool(r, "tie_word_embeddings", false, &a->tie) || get_num(r, "attention_dropout", 0, 0, 1, &a->p_attn))
        return -1;
    if (a->fam == F_LLAMA || a->fam == F_QWEN3) {
        if (get_bool(r, "attention_bias", false, &a->qkv_bias)) return -1;
        a->o_bias = a->qkv_bias;
        if (a->fam == F_LLAMA && get_bool(r, "mlp_bias", false, &a->mlp_bias)) return -1;
    }
    if (a->fam == F_QWEN2 || a->fam == F_QWEN2_MOE) a->qkv_bias = true; /* Qwen2Attention: bias=True on q/k/v */
    a->qk_norm = a->fam == F_QWEN3;
    if (a->fam == F_MISTRAL || a->fam == F_MIXTRAL) {
        if (get_int(r, "sliding_window", 0, 1, &a->window)) return -1;
    }
    if (a->fam == F_QWEN2 || a->fam == F_QWEN3 || a->fam == F_QWEN2_MOE) {
        bool use = false; /* set by get_bool on success */
        if (get_bool(r, "use_sliding_window", false, &use)) return -1;
        if (use && get_int(r, "sliding_window", 0, 1, &a->window)) return -1;
    }
    if (a->fam == F_PHI3) {
        if (get_num(r, "partial_rotary_factor", 1.0, 0, 1, &p) || get_num(r, "resid_pdrop", 0, 0, 1, &a->p_resid) ||
            get_num(r, "embd_pdrop", 0, 0, 1, &a->p_embd) || get_int(r, "sliding_window", 0, 1, &a->window))
            return -1;
        a->R = (int64_t)((double)a->D * p) / 2 * 2;
    }
    if (a->fam == F_MIXTRAL) {
        a->moe_I = a->I;
        if (get_int(r, "num_local_experts", -1, 1, &a->E) || get_int(r, "num_experts_per_tok", 2, 1, &a->K)) return -1;
        a->norm_topk = true;
    }
    if (a->fam == F_QWEN2_MOE) {
        if (get_int(r, "num_experts", -1, 1, &a->E) || get_int(r, "num_experts_per_tok", 4, 1, &a->K) ||
            get_int(r, "moe_intermediate_size", -1, 1, &a->moe_I) ||
            get_int(r, "shared_expert_intermediate_size", 0, 0, &a->shared_I) ||
            get_int(r, "decoder_sparse_step", 1, 1, &a->sparse_step) || get_bool(r, "norm_topk_prob", false, &a->norm_topk))
            return -1;
        a->mlp_only = key_of(r, "mlp_only_layers");
        if (a->mlp_only && !cJSON_IsArray(a->mlp_only)) return bad(r, "mlp_only_layers", "expected a list of layer indices");
    }
    if ((a->fam == F_MIXTRAL || a->fam == F_QWEN2_MOE) && a->K > a->E)
        return bad(r, "num_experts_per_tok", "top-k (%lld) is more than the %lld experts", (long long)a->K, (long long)a->E);
    return 0;
}

/* BertConfig / RobertaConfig. */
static int read_encoder(rd *r, arch *a)
{
    if (get_int(r, "vocab_size", -1, 1, &a->V) || get_int(r, "hidden_size", -1, 1, &a->H) ||
        get_int(r, "num_hidden_layers", -1, 1, &a->N) || get_int(r, "num_attention_heads", -1, 1, &a->NH) ||
        get_int(r, "intermediate_size", -1, 1, &a->I) || get_int(r, "max_position_embeddings", -1, 1, &a->maxpos) ||
        get_int(r, "type_vocab_size", 2, 1, &a->types) || get_num(r, "layer_norm_eps", 1e-12, 0, 1, &a->eps) ||
        read_act(r, "hidden_act", "gelu", false, &a->act) || get_num(r, "hidden_dropout_prob", 0.1, 0, 1, &a->p_resid) ||
        get_num(r, "attention_probs_dropout_prob", 0.1, 0, 1, &a->p_attn))
        return -1;
    if (split_heads(r, a, "hidden_size", "num_attention_heads")) return -1;
    a->KV = a->NH;
    a->R = 0;
    /* num_labels: len(id2label) (PretrainedConfig), else 2 */
    const cJSON *ids = key_of(r, "id2label");
    a->labels = 2;
    if (ids) {
        if (!cJSON_IsObject(ids) || !ids->child) return bad(r, "id2label", "expected an object of labels");
        a->labels = cJSON_GetArraySize(ids);
    }
    if (get_num(r, "classifier_dropout", a->p_resid, 0, 1, &a->p_embd)) return -1;
    /* RoBERTa's positions start after padding_idx (pad_token_id, 1) */
    int64_t pad = 0;
    if (a->fam == F_ROBERTA && get_int(r, "pad_token_id", 1, 0, &pad)) return -1;
    a->window = a->fam == F_ROBERTA ? pad + 1 : 0; /* reused: the position offset */
    return 0;
}

static int read_family(rd *r, arch *a)
{
    double p = 0; /* set by get_num on success (-O3 cannot see it: -Wmaybe-uninitialized) */
    switch (a->fam) {
    case F_LLAMA:
    case F_MISTRAL:
    case F_QWEN2:
    case F_QWEN3:
    case F_MIXTRAL:
    case F_QWEN2_MOE:
    case F_PHI3:
        return read_llama_like(r, a);
    case F_GEMMA:
    case F_GEMMA2: {
        const char *act = NULL;
        if (read_decoder(r, a) || get_str(r, "hidden_activation", NULL, &act) ||
            read_act(r, act ? "hidden_activation" : "hidden_act", "gelu_pytorch_tanh", true, &a->act) ||
            get_bool(r, "tie_word_embeddings", true, &a->tie) || get_bool(r, "attention_bias", false, &a->qkv_bias) ||
            get_num(r, "attention_dropout", 0, 0, 1, &a->p_attn))
            return -1;
        a->o_bias = a->qkv_bias;
        if (a->fam == F_GEMMA2) {
            if (get_int(r, "sliding_window", 0, 1, &a->window) || get_num(r, "final_logit_softcapping", 0, 0, 1e9, &a->final_cap) ||
                get_num(r, "attn_logit_softcapping", 0, 0, 1e9, &a->attn_cap))
                return -1;
            a->window_alt = true;
            /* Gemma2PreTrainedModel._check_and_enable_sdpa swaps the default sdpa for eager
             * (softcapping): explicit attention weights */
            a->eager = true;
        }
        return 0;
    }
    case F_GPT2:
        if (get_int(r, "vocab_size", -1, 1, &a->V) || get_int(r, "n_embd", -1, 1, &a->H) || get_int(r, "n_layer", -1, 1, &a->N) ||
            get_int(r, "n_head", -1, 1, &a->NH) || get_int(r, "n_positions", -1, 1, &a->maxpos) ||
            get_num(r, "layer_norm_epsilon", 1e-5, 0, 1, &a->eps) || read_act(r, "activation_function", "gelu_new", false, &a->act) ||
            get_num(r, "embd_pdrop", 0.1, 0, 1, &a->p_embd) || get_num(r, "attn_pdrop", 0.1, 0, 1, &a->p_attn) ||
            get_num(r, "resid_pdrop", 0.1, 0, 1, &a->p_resid) || get_bool(r, "tie_word_embeddings", true, &a->tie))
            return -1;
        if (split_heads(r, a, "n_embd", "n_head") || get_int(r, "n_inner", 4 * a->H, 1, &a->I)) return -1;
        a->KV = a->NH;
        a->R = 0;
        return 0;
    case F_GPT_NEOX:
        if (get_int(r, "vocab_size", -1, 1, &a->V) || get_int(r, "hidden_size", -1, 1, &a->H) ||
            get_int(r, "num_hidden_layers", -1, 1, &a->N) || get_int(r, "num_attention_heads", -1, 1, &a->NH) ||
            get_int(r, "intermediate_size", -1, 1, &a->I) || get_num(r, "layer_norm_eps", 1e-5, 0, 1, &a->eps) ||
            read_act(r, "hidden_act", "gelu", false, &a->act) || get_num(r, "rotary_pct", 0.25, 0, 1, &p) ||
            get_bool(r, "use_parallel_residual", true, &a->parallel) || get_bool(r, "tie_word_embeddings", false, &a->tie) ||
            get_bool(r, "attention_bias", true, &a->qkv_bias) || get_num(r, "hidden_dropout", 0, 0, 1, &a->p_resid) ||
            get_num(r, "attention_dropout", 0, 0, 1, &a->p_attn) || read_rope_scaling(r))
            return -1;
        if (split_heads(r, a, "hidden_size", "num_attention_heads")) return -1;
        a->KV = a->NH;
        a->R = (int64_t)((double)a->D * p) / 2 * 2; /* rotary_ndims = int(head_size * rotary_pct) */
        a->o_bias = a->mlp_bias = a->qkv_bias;
        return 0;
    case F_BERT:
    case F_ROBERTA:
        return read_encoder(r, a);
    }
    return 0;
}

/* Products that become tensor sizes, checked here so the error names a key. */
static int check_sizes(rd *r, const arch *a)
{
    const int64_t lim = INT64_C(1) << 48; /* elements in one weight: 2^48 is 512 TiB in bf16 */
    int64_t t;
    if (__builtin_mul_overflow(a->V, a->H, &t) || t > lim)
        return bad(r, "vocab_size", "vocab_size x hidden size (%lld x %lld) is more than 2^48 elements: the embedding would not fit any memory", (long long)a->V, (long long)a->H);
    int64_t w = a->I > a->moe_I ? a->I : a->moe_I;
    if (__builtin_mul_overflow(w, a->H, &t) || __builtin_mul_overflow(t, 3 * (a->E > 0 ? a->E : 1), &t) || t > lim)
        return bad(r, "intermediate_size", "the MLP weights (%lld x %lld) are more than 2^48 elements", (long long)w, (long long)a->H);
    int64_t qk = (a->NH + 2 * a->KV);
    if (__builtin_mul_overflow(qk, a->D, &t) || __builtin_mul_overflow(t, a->H, &t) || t > lim)
        return bad(r, "num_attention_heads", "the attention projections are more than 2^48 elements");
    if (__builtin_mul_overflow(a->N, t, &t) || t > lim) return bad(r, "num_hidden_layers", "the model has more than 2^48 parameters");
    if (a->R % 2)
        return bad(r, a->D == a->H / a->NH ? "num_attention_heads" : "head_dim",
                   "the rotary part of each head (%lld of head_dim %lld) must be even", (long long)a->R, (long long)a->D);
    if (a->N > 1024) return bad(r, "num_hidden_layers", "%lld layers: more than the limit of 1024", (long long)a->N);
    if ((a->fam == F_MIXTRAL || a->fam == F_QWEN2_MOE) && a->E * 3 + 4 > 256)
        return bad(r, a->fam == F_MIXTRAL ? "num_local_experts" : "num_experts", "%lld experts: more than the 84 SparseMoE holds",
                   (long long)a->E);
    return 0;
}

int vc__hf_read(rd *r, arch *a)
{
    return read_family(r, a) || check_sizes(r, a) ? -1 : 0;
}
