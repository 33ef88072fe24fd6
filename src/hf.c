/*
 * hf.c — a Hugging Face config.json as a vramcalc model (issue 12).
 *
 * vc_hf_build() reads the config (a JSON object with "model_type" and no
 * "layers") and writes the equivalent vramcalc model as a cJSON tree: the
 * same format a user could write by hand (vramcalc --emit-model prints it),
 * which the normal loader then loads. Layers are named as the HF modules
 * are (model.embed_tokens, model.layers > self_attn.q_proj, mlp.down_proj,
 * lm_head, ...), projections are Linear layers, and the new kinds of
 * layers/llm.c do the rest. Every architecture follows its modeling_*.py at
 * huggingface/transformers 5dd4a63548857797727ae73eeb6a6e886ea02a3e; the
 * module each layer stands for is named in the code below.
 *
 * Errors name the config key (err->path) and exit 2 in the CLI; nothing is
 * guessed: a key the family needs and the config lacks is an error, a key
 * with a PretrainedConfig default takes that default.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf.h"
#include "hf_arch.h"
#include "policy.h"
#include "util.h"

static const char *const fam_names[F_COUNT] = {"llama", "mistral", "qwen2",    "qwen3", "gemma",    "gemma2", "phi3",
                                               "mixtral", "qwen2_moe", "gpt2", "gpt_neox", "bert", "roberta"};
#define FAMILIES "llama, mistral, qwen2, qwen3, gemma, gemma2, phi3, mixtral, qwen2_moe, gpt2, gpt_neox, bert, roberta"

const char *vc_hf_families(void) { return FAMILIES; }

/* PEFT's default target_modules per model_type (peft/utils/constants.py
 * TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), as the layers here
 * are named. */
static const char *const lora_targets[F_COUNT] = {
    [F_LLAMA] = "q_proj,v_proj",     [F_MISTRAL] = "q_proj,v_proj",   [F_QWEN2] = "q_proj,v_proj",
    [F_QWEN3] = "q_proj,v_proj",     [F_GEMMA] = "q_proj,v_proj",     [F_GEMMA2] = "q_proj,v_proj",
    [F_PHI3] = "qkv_proj,o_proj,gate_up_proj,down_proj",              [F_MIXTRAL] = "q_proj,v_proj",
    [F_QWEN2_MOE] = "q_proj,v_proj", [F_GPT2] = "c_attn",             [F_GPT_NEOX] = "query_key_value",
    [F_BERT] = "query,value",        [F_ROBERTA] = "query,value",
};

const char *vc_hf_lora_targets(const cJSON *cfg)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    for (int i = 0; i < F_COUNT && cJSON_IsString(mt); i++)
        if (!strcmp(mt->valuestring, fam_names[i])) return lora_targets[i];
    return "";
}

/* vllm/config/model.py (vllm-project/vllm @ 18ec6629): _find_dtype reads
 * config.dtype (transformers turns a config.json's "torch_dtype" into it);
 * _STR_DTYPE_TO_TORCH_DTYPE names; _FLOAT16_NOT_SUPPORTED_MODELS. */
int vc_hf_dtype(const cJSON *cfg, bool *no_fp16)
{
    static const struct { const char *name; int dt; } names[] = {
        {"float32", VC_DT_F32}, {"float", VC_DT_F32}, {"float16", VC_DT_F16}, {"half", VC_DT_F16},
        {"bfloat16", VC_DT_BF16},
    };
    static const char *const no16[] = {"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"};
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    *no_fp16 = false;
    for (size_t i = 0; i < sizeof no16 / sizeof *no16 && cJSON_IsString(mt); i++)
        *no_fp16 |= !strcmp(mt->valuestring, no16[i]);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(cfg, "dtype");
    if (!cJSON_IsString(d)) d = cJSON_GetObjectItemCaseSensitive(cfg, "torch_dtype");
    for (size_t i = 0; i < sizeof names / sizeof *names && cJSON_IsString(d); i++)
        if (!strcmp(d->valuestring, names[i].name)) return names[i].dt;
    return -1;
}

bool vc_hf_is_config(const cJSON *root)
{
    return cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "model_type") &&
           !cJSON_GetObjectItemCaseSensitive(root, "layers");
}

void vc_hf_options_init(vc_hf_options *o)
{
    o->seq = 0; /* 0: VC_HF_DEFAULT_SEQ, or the learned-position limit when smaller */
    o->moe_imbalance = 1.0;
    o->checkpoint = 0;
    o->loss = VC_LOSS_IMPL_HF;
    o->tp = 1;
    o->sp = 0;
}

/* ------------------------------------------------------------ reading keys */

typedef struct {
    const cJSON *cfg;
    vc_error *err;
    const char *fam;
    bool oom;
    int64_t sp; /* arch.sp: Linears and embeddings get their sequence-parallel keys */
} rd;

#define MAX_SIZE (INT64_C(1) << 40)

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

static const char *const act_json[] = {"silu", "gelu", "gelu_tanh", "relu", "new", "fast"};

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
    } else {
        if (a->H % a->NH)
            return bad(r, "num_attention_heads", "hidden_size (%lld) must be divisible by num_attention_heads (%lld)",
                       (long long)a->H, (long long)a->NH);
        a->D = a->H / a->NH;
    }
    a->R = a->D;
    return 0;
}

/* LlamaConfig and the configs derived from it (Mistral, Qwen2, Qwen3, Phi3,
 * Mixtral, Qwen2Moe): their defaults as the configuration_*.py files set them. */
static int read_llama_like(rd *r, arch *a)
{
    double p;
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
        bool use;
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
    if (a->H % a->NH)
        return bad(r, "num_attention_heads", "hidden_size (%lld) must be divisible by num_attention_heads (%lld)",
                   (long long)a->H, (long long)a->NH);
    a->KV = a->NH;
    a->D = a->H / a->NH;
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
    double p;
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
        if (a->H % a->NH)
            return bad(r, "n_head", "n_embd (%lld) must be divisible by n_head (%lld)", (long long)a->H, (long long)a->NH);
        if (get_int(r, "n_inner", 4 * a->H, 1, &a->I)) return -1;
        a->KV = a->NH;
        a->D = a->H / a->NH;
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
        if (a->H % a->NH)
            return bad(r, "num_attention_heads", "hidden_size (%lld) must be divisible by num_attention_heads (%lld)",
                       (long long)a->H, (long long)a->NH);
        a->KV = a->NH;
        a->D = a->H / a->NH;
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

/* ------------------------------------------------------------ writing the model */

typedef struct {
    rd *r;
    cJSON *arr;       /* the list being written */
    const char *last; /* the name of the last layer written */
} wr;

static cJSON *add_layer(wr *w, const char *type, const char *name)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(w->arr, o)) {
        cJSON_Delete(o);
        w->r->oom = true;
        return NULL;
    }
    if (!cJSON_AddStringToObject(o, "type", type) || (name && !cJSON_AddStringToObject(o, "name", name))) w->r->oom = true;
    w->last = name;
    return o;
}

static void num(wr *w, cJSON *o, const char *k, double v)
{
    if (o && !cJSON_AddNumberToObject(o, k, v)) w->r->oom = true;
}
static void flag(wr *w, cJSON *o, const char *k, bool v)
{
    if (o && !cJSON_AddBoolToObject(o, k, v)) w->r->oom = true;
}
static void str(wr *w, cJSON *o, const char *k, const char *v)
{
    if (o && !cJSON_AddStringToObject(o, k, v)) w->r->oom = true;
}
/* "inputs": [a, b, ...] (NULL-terminated) */
static void ins(wr *w, cJSON *o, const char *a, const char *b, const char *c, const char *d)
{
    if (!o) return;
    const char *v[4] = {a, b, c, d};
    int n = 0;
    while (n < 4 && v[n]) n++;
    cJSON *arr = cJSON_CreateStringArray(v, n);
    if (!arr || !cJSON_AddItemToObject(o, "inputs", arr)) {
        cJSON_Delete(arr);
        w->r->oom = true;
    }
}

static cJSON *linear(wr *w, const char *name, const char *in, int64_t nin, int64_t nout, bool bias)
{
    cJSON *o = add_layer(w, "Linear", name);
    if (in) ins(w, o, in, NULL, NULL, NULL);
    num(w, o, "in_features", (double)nin);
    num(w, o, "out_features", (double)nout);
    flag(w, o, "bias", bias);
    const char *role = w->r->sp > 1 ? vc__hf_sp_role(name) : NULL; /* hf_tp.c */
    if (role) num(w, o, role, (double)w->r->sp);
    return o;
}

static void rmsnorm(wr *w, const arch *a, const char *name, const char *in)
{
    cJSON *o = add_layer(w, "HFRMSNorm", name);
    if (in) ins(w, o, in, NULL, NULL, NULL);
    num(w, o, "hidden_size", (double)a->H);
    num(w, o, "eps", a->eps);
    if (a->fam == F_GEMMA || a->fam == F_GEMMA2) str(w, o, "variant", "gemma");
}

static void layernorm(wr *w, const arch *a, const char *name, const char *in)
{
    cJSON *o = add_layer(w, "LayerNorm", name);
    if (in) ins(w, o, in, NULL, NULL, NULL);
    num(w, o, "normalized_shape", (double)a->H);
    num(w, o, "eps", a->eps);
}

/* The token embedding; with --sp, VocabParallelEmbedding's reduce-scatter
 * to the rank's part of the sequence (layers/embedding.c). */
static void embedding(wr *w, const arch *a, const char *name)
{
    cJSON *o = add_layer(w, "Embedding", name);
    num(w, o, "num_embeddings", (double)a->V);
    num(w, o, "embedding_dim", (double)a->H);
    if (a->sp > 1) num(w, o, "sequence_scatter", (double)a->sp);
}

static void dropout(wr *w, const char *name, double p)
{
    if (p <= 0) return; /* nn.Dropout(0.0) returns its input (F.dropout: p == 0) */
    cJSON *o = add_layer(w, "Dropout", name);
    num(w, o, "p", p);
}

static void act_layer(wr *w, const arch *a, const char *name)
{
    if (a->act == A_GELU_NEW || a->act == A_GELU_FAST) {
        cJSON *o = add_layer(w, "NewGELU", name);
        str(w, o, "variant", a->act == A_GELU_NEW ? "new" : "fast");
    } else if (a->act == A_SILU) {
        add_layer(w, "SiLU", name);
    } else if (a->act == A_RELU) {
        add_layer(w, "ReLU", name);
    } else {
        cJSON *o = add_layer(w, "GELU", name);
        str(w, o, "approximate", a->act == A_GELU_TANH ? "tanh" : "none");
    }
}

/* The attention core: LlamaAttention.forward from the projections to o_proj. */
static void attn_core(wr *w, const arch *a, const char *name, bool fused, const char *q, const char *k, const char *v,
                      const char *rope, bool causal, int64_t window)
{
    cJSON *o = add_layer(w, "RotaryAttention", name);
    if (a->R == 0) rope = NULL; /* rotary_pct / partial_rotary_factor 0: no rotary embedding */
    if (fused) ins(w, o, q, rope, NULL, NULL);
    else ins(w, o, q, k, v, rope);
    num(w, o, "num_heads", (double)a->NH);
    num(w, o, "num_kv_heads", (double)a->KV);
    num(w, o, "head_dim", (double)a->D);
    num(w, o, "rotary_dim", (double)a->R);
    if (fused) flag(w, o, "fused_qkv", true);
    flag(w, o, "causal", causal);
    if (a->qk_norm) {
        flag(w, o, "qk_norm", true);
        num(w, o, "qk_norm_eps", a->eps);
    }
    if (window > 0) num(w, o, "sliding_window", (double)window);
    if (a->eager) flag(w, o, "eager", true);
    if (a->eager && a->attn_cap > 0) num(w, o, "softcap", a->attn_cap);
    if (a->p_attn > 0) num(w, o, "dropout", a->p_attn);
}

static bool layer_is_moe(const arch *a, int64_t i)
{
    if (a->fam == F_MIXTRAL) return true;
    if (a->fam != F_QWEN2_MOE || a->E < 1 || (i + 1) % a->sparse_step) return false;
    for (const cJSON *e = a->mlp_only ? a->mlp_only->child : NULL; e; e = e->next)
        if (cJSON_IsNumber(e) && e->valuedouble == (double)i) return false;
    return true;
}

/* One LlamaDecoderLayer (and its relatives: MistralDecoderLayer,
 * Qwen2/Qwen3DecoderLayer, GemmaDecoderLayer, Gemma2DecoderLayer with its
 * four norms, Phi3DecoderLayer with fused projections and residual
 * dropouts, MixtralDecoderLayer / Qwen2MoeDecoderLayer with the sparse MoE
 * block) inside the Sequential w->arr. */
static void decoder_layer(wr *w, const arch *a, int64_t i)
{
    bool fused = a->fam == F_PHI3, g2 = a->fam == F_GEMMA2;
    int64_t q = a->NH * a->D, kv = a->KV * a->D;
    rmsnorm(w, a, "input_layernorm", NULL);
    if (fused) {
        linear(w, "self_attn.qkv_proj", NULL, a->H, q + 2 * kv, false);
        attn_core(w, a, "self_attn.attention", true, "self_attn.qkv_proj", NULL, NULL, "model.rotary_emb", true, a->window);
    } else {
        linear(w, "self_attn.q_proj", NULL, a->H, q, a->qkv_bias);
        linear(w, "self_attn.k_proj", "input_layernorm", a->H, kv, a->qkv_bias);
        linear(w, "self_attn.v_proj", "input_layernorm", a->H, kv, a->qkv_bias);
        int64_t win = a->window_alt && i % 2 ? 0 : a->window; /* Gemma2: layer_idx % 2 == 0 slides */
        attn_core(w, a, "self_attn.attention", false, "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                  "model.rotary_emb", true, win);
    }
    linear(w, "self_attn.o_proj", NULL, q, a->H, a->o_bias);
    if (g2) rmsnorm(w, a, "post_attention_layernorm", NULL);
    dropout(w, "resid_attn_dropout", a->p_resid);
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", "attn_residual"), "input", prev, NULL, NULL); /* residual + hidden_states */
    rmsnorm(w, a, g2 ? "pre_feedforward_layernorm" : "post_attention_layernorm", NULL);
    const char *norm = g2 ? "pre_feedforward_layernorm" : "post_attention_layernorm";
    if (layer_is_moe(a, i)) {
        bool mx = a->fam == F_MIXTRAL;
        cJSON *o = add_layer(w, "SparseMoE", mx ? "block_sparse_moe" : "mlp");
        num(w, o, "hidden_size", (double)a->H);
        num(w, o, "intermediate_size", (double)a->moe_I);
        num(w, o, "num_experts", (double)a->E);
        num(w, o, "top_k", (double)a->K);
        str(w, o, "style", mx ? "mixtral" : "qwen2_moe");
        flag(w, o, "norm_topk_prob", a->norm_topk);
        if (a->shared_I) num(w, o, "shared_expert_intermediate_size", (double)a->shared_I);
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
    } else if (fused) {
        linear(w, "mlp.gate_up_proj", NULL, a->H, 2 * a->I, false);
        cJSON *o = add_layer(w, "GatedActivation", "mlp.act_fn");
        flag(w, o, "fused", true);
        str(w, o, "activation", act_json[a->act]);
        linear(w, "mlp.down_proj", NULL, a->I, a->H, false);
    } else {
        /* LlamaMLP.forward / Qwen2MLP.forward (modeling_llama.py,
         * modeling_qwen2.py; Mistral, Gemma, Qwen3 alike):
         * down_proj(act_fn(gate_proj(x)) * up_proj(x)) in Python's order:
         * gate_proj, act_fn (the gate is a temporary: freed here under
         * no_grad), up_proj, the product. */
        linear(w, "mlp.gate_proj", NULL, a->H, a->I, a->mlp_bias);
        act_layer(w, a, "mlp.act_fn");
        linear(w, "mlp.up_proj", norm, a->H, a->I, a->mlp_bias);
        ins(w, add_layer(w, "Mul", "mlp.mul"), "mlp.act_fn", "mlp.up_proj", NULL, NULL);
        linear(w, "mlp.down_proj", NULL, a->I, a->H, a->mlp_bias);
    }
    if (g2) rmsnorm(w, a, "post_feedforward_layernorm", NULL);
    dropout(w, "resid_mlp_dropout", a->p_resid);
    prev = w->last;
    ins(w, add_layer(w, "Add", "mlp_residual"), "attn_residual", prev, NULL, NULL);
}

/* GPT2Block.forward: ln_1, attn (c_attn split into q, k, v; sdpa with
 * attn_pdrop; c_proj; resid_dropout), + residual, ln_2, mlp (c_fc, act,
 * c_proj, dropout), + residual. GPT-2's Conv1D keeps its weight as
 * [in, out] and computes addmm(bias, x, weight): the same tensors as a
 * Linear (the weight's shape is transposed, its size the same). */
static void gpt2_block(wr *w, const arch *a)
{
    layernorm(w, a, "ln_1", NULL);
    int64_t q = a->NH * a->D; /* H, or its 1/t on a tensor-parallel rank */
    linear(w, "attn.c_attn", NULL, a->H, 3 * q, true);
    attn_core(w, a, "attn.attention", true, "attn.c_attn", NULL, NULL, NULL, true, 0);
    linear(w, "attn.c_proj", NULL, q, a->H, true);
    dropout(w, "attn.resid_dropout", a->p_resid);
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", "attn_residual"), prev, "input", NULL, NULL);
    layernorm(w, a, "ln_2", NULL);
    linear(w, "mlp.c_fc", NULL, a->H, a->I, true);
    act_layer(w, a, "mlp.act");
    linear(w, "mlp.c_proj", NULL, a->I, a->H, true);
    dropout(w, "mlp.dropout", a->p_resid);
    prev = w->last;
    ins(w, add_layer(w, "Add", "mlp_residual"), "attn_residual", prev, NULL, NULL);
}

/* GPTNeoXLayer.forward: attention on input_layernorm(x) (one fused
 * query_key_value projection, partial rotary), post_attention_dropout;
 * parallel residual: mlp(post_attention_layernorm(x)) + attn + x, else
 * sequential. */
static void neox_layer(wr *w, const arch *a)
{
    layernorm(w, a, "input_layernorm", NULL);
    int64_t q = a->NH * a->D; /* H, or its 1/t on a tensor-parallel rank */
    linear(w, "attention.query_key_value", NULL, a->H, 3 * q, a->qkv_bias);
    attn_core(w, a, "attention.attention", true, "attention.query_key_value", NULL, NULL, "gpt_neox.rotary_emb", true, 0);
    linear(w, "attention.dense", NULL, q, a->H, a->o_bias);
    dropout(w, "post_attention_dropout", a->p_resid);
    const char *attn = w->last;
    if (!a->parallel) ins(w, add_layer(w, "Add", "attn_residual"), attn, "input", NULL, NULL);
    layernorm(w, a, "post_attention_layernorm", a->parallel ? "input" : "attn_residual");
    linear(w, "mlp.dense_h_to_4h", NULL, a->H, a->I, a->mlp_bias);
    act_layer(w, a, "mlp.act");
    linear(w, "mlp.dense_4h_to_h", NULL, a->I, a->H, a->mlp_bias);
    dropout(w, "post_mlp_dropout", a->p_resid);
    const char *mlp = w->last;
    cJSON *o = add_layer(w, "Add", "residual");
    if (a->parallel) ins(w, o, mlp, attn, "input", NULL); /* mlp_output + attn_output + hidden_states */
    else ins(w, o, mlp, "attn_residual", NULL, NULL);
}

/* BertLayer.forward: BertSdpaSelfAttention (bidirectional, dropout on the
 * probabilities), BertSelfOutput (dense, dropout, LayerNorm(x + input)),
 * BertIntermediate (dense, gelu), BertOutput (dense, dropout, LayerNorm). */
static void bert_layer(wr *w, const arch *a)
{
    int64_t q = a->NH * a->D; /* H, or its 1/t on a tensor-parallel rank */
    linear(w, "attention.self.query", NULL, a->H, q, true);
    linear(w, "attention.self.key", "input", a->H, q, true);
    linear(w, "attention.self.value", "input", a->H, q, true);
    attn_core(w, a, "attention.self.attention", false, "attention.self.query", "attention.self.key", "attention.self.value",
              NULL, false, 0);
    linear(w, "attention.output.dense", NULL, q, a->H, true);
    dropout(w, "attention.output.dropout", a->p_resid);
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", "attention.output.residual"), prev, "input", NULL, NULL);
    layernorm(w, a, "attention.output.LayerNorm", NULL);
    linear(w, "intermediate.dense", NULL, a->H, a->I, true);
    act_layer(w, a, "intermediate.intermediate_act_fn");
    linear(w, "output.dense", NULL, a->I, a->H, true);
    dropout(w, "output.dropout", a->p_resid);
    prev = w->last;
    ins(w, add_layer(w, "Add", "output.residual"), prev, "attention.output.LayerNorm", NULL, NULL);
    layernorm(w, a, "output.LayerNorm", NULL);
}

/* Decoder layers in runs of identical ones: one Sequential with `repeat`
 * per run (Gemma2 alternates sliding and global layers, Qwen2-MoE may mix
 * dense and sparse ones). */
static void layer_stack(wr *w, const arch *a, const char *name, const char *in)
{
    for (int64_t i = 0; i < a->N && !w->r->oom;) {
        int64_t j = i + 1;
        while (j < a->N && layer_is_moe(a, j) == layer_is_moe(a, i) && !a->window_alt) j++;
        cJSON *seq = add_layer(w, "Sequential", NULL);
        if (!seq) return;
        if (i == 0) ins(w, seq, in, NULL, NULL, NULL);
        if (j - i > 1) num(w, seq, "repeat", (double)(j - i));
        /* model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=
         * {"use_reentrant": False}): each decoder layer's __call__ through
         * torch.utils.checkpoint, non-reentrant (GradientCheckpointingLayer) */
        if (a->ckpt) flag(w, seq, "checkpoint", true);
        cJSON *arr = cJSON_AddArrayToObject(seq, "layers");
        if (!arr) {
            w->r->oom = true;
            return;
        }
        wr inner = {w->r, arr, NULL};
        switch (a->fam) {
        case F_GPT2: gpt2_block(&inner, a); break;
        case F_GPT_NEOX: neox_layer(&inner, a); break;
        case F_BERT: case F_ROBERTA: bert_layer(&inner, a); break;
        default: decoder_layer(&inner, a, i); break;
        }
        i = j;
    }
    /* name the stack's output for what follows */
    cJSON *last = cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1);
    if (last && !cJSON_AddStringToObject(last, "name", name)) w->r->oom = true;
    w->last = name;
}

/* The lm head (tied as tie_word_embeddings says) and final softcapping. */
static void lm_head(wr *w, const arch *a, const char *emb, const char *name)
{
    cJSON *o = linear(w, name, NULL, a->H, a->V, false);
    if (a->tie) str(w, o, "tie", emb);
    if (a->final_cap > 0) { /* Gemma2ForCausalLM: logits / cap; tanh; * cap */
        cJSON *s = add_layer(w, "Scale", "final_logit_softcapping.div");
        num(w, s, "factor", 1.0 / a->final_cap);
        add_layer(w, "Tanh", "final_logit_softcapping.tanh");
        s = add_layer(w, "Scale", "final_logit_softcapping.mul");
        num(w, s, "factor", a->final_cap);
    }
}

/* BertForSequenceClassification / RobertaForSequenceClassification:
 * BertEmbeddings (word + token type, += positions, LayerNorm, dropout), the
 * encoder, then the head. */
static void build_encoder(wr *w, const arch *a)
{
    cJSON *o;
    const char *pre = a->fam == F_BERT ? "bert" : "roberta";
    char we[64], pe[64], te[64], ln[64], enc[64];
    snprintf(we, sizeof we, "%s.embeddings.word_embeddings", pre);
    snprintf(pe, sizeof pe, "%s.embeddings.position_embeddings", pre);
    snprintf(te, sizeof te, "%s.embeddings.token_type_embeddings", pre);
    snprintf(ln, sizeof ln, "%s.embeddings.LayerNorm", pre);
    snprintf(enc, sizeof enc, "%s.encoder.layer", pre);
    o = add_layer(w, "Embedding", we);
    num(w, o, "num_embeddings", (double)a->V);
    num(w, o, "embedding_dim", (double)a->H);
    o = add_layer(w, "PositionEmbedding", te); /* buffered_token_type_ids.expand(B, L) */
    ins(w, o, "input", NULL, NULL, NULL);
    num(w, o, "num_embeddings", (double)a->types);
    num(w, o, "embedding_dim", (double)a->H);
    flag(w, o, "per_sample", true);
    o = add_layer(w, "PositionEmbedding", pe);
    ins(w, o, "input", NULL, NULL, NULL);
    num(w, o, "num_embeddings", (double)a->maxpos);
    num(w, o, "embedding_dim", (double)a->H);
    if (a->fam == F_ROBERTA) flag(w, o, "per_sample", true); /* create_position_ids_from_input_ids: [B, L] */
    ins(w, add_layer(w, "Add", "embeddings.sum"), we, te, NULL, NULL); /* inputs_embeds + token_type_embeddings */
    o = add_layer(w, "Add", "embeddings.add_positions");                 /* embeddings += position_embeddings */
    ins(w, o, "embeddings.sum", pe, NULL, NULL);
    flag(w, o, "inplace", true);
    layernorm(w, a, ln, NULL);
    dropout(w, "embeddings.dropout", a->p_resid);
    layer_stack(w, a, enc, w->last);
    o = add_layer(w, "Select", "first_token"); /* hidden_states[:, 0] */
    num(w, o, "dim", 1);
    num(w, o, "index", 0);
    if (a->fam == F_BERT) { /* BertPooler, then BertForSequenceClassification's dropout + classifier */
        linear(w, "bert.pooler.dense", NULL, a->H, a->H, true);
        add_layer(w, "Tanh", "bert.pooler.activation");
        dropout(w, "dropout", a->p_embd);
        linear(w, "classifier", NULL, a->H, a->labels, true);
    } else { /* RobertaClassificationHead (no pooler) */
        dropout(w, "classifier.dropout1", a->p_embd);
        linear(w, "classifier.dense", NULL, a->H, a->H, true);
        add_layer(w, "Tanh", "classifier.tanh");
        dropout(w, "classifier.dropout2", a->p_embd);
        linear(w, "classifier.out_proj", NULL, a->H, a->labels, true);
    }
}

static void build_layers(wr *w, const arch *a)
{
    cJSON *o;
    switch (a->fam) {
    case F_GPT2:
        embedding(w, a, "transformer.wte");
        o = add_layer(w, "PositionEmbedding", "transformer.wpe");
        ins(w, o, "input", NULL, NULL, NULL);
        num(w, o, "num_embeddings", (double)a->maxpos);
        num(w, o, "embedding_dim", (double)a->H);
        if (a->sp > 1) num(w, o, "sequence_scatter", (double)a->sp);
        ins(w, add_layer(w, "Add", "embeds"), "transformer.wte", "transformer.wpe", NULL, NULL);
        dropout(w, "transformer.drop", a->p_embd);
        layer_stack(w, a, "transformer.h", w->last);
        layernorm(w, a, "transformer.ln_f", NULL);
        lm_head(w, a, "transformer.wte", "lm_head");
        return;
    case F_GPT_NEOX:
        embedding(w, a, "gpt_neox.embed_in");
        if (a->R > 0) {
            o = add_layer(w, "RotaryEmbedding", "gpt_neox.rotary_emb");
            ins(w, o, "input", NULL, NULL, NULL);
            num(w, o, "head_dim", (double)a->D);
            num(w, o, "rotary_dim", (double)a->R);
        }
        layer_stack(w, a, "gpt_neox.layers", "gpt_neox.embed_in");
        layernorm(w, a, "gpt_neox.final_layer_norm", NULL);
        lm_head(w, a, "gpt_neox.embed_in", "embed_out");
        return;
    case F_BERT:
    case F_ROBERTA:
        build_encoder(w, a);
        return;
    default:
        break;
    }
    embedding(w, a, "model.embed_tokens");
    const char *first = "model.embed_tokens";
    if (a->fam == F_GEMMA || a->fam == F_GEMMA2) { /* hidden_states * normalizer (sqrt(hidden_size)) */
        o = add_layer(w, "Scale", "model.embed_scale");
        num(w, o, "factor", sqrt((double)a->H));
        first = "model.embed_scale";
    }
    dropout(w, "model.embed_dropout", a->p_embd); /* Phi3Model.embed_dropout */
    if (a->p_embd > 0) first = "model.embed_dropout";
    if (a->R > 0) {
        o = add_layer(w, "RotaryEmbedding", "model.rotary_emb");
        ins(w, o, "input", NULL, NULL, NULL);
        num(w, o, "head_dim", (double)a->D);
        num(w, o, "rotary_dim", (double)a->R);
    }
    layer_stack(w, a, "model.layers", first);
    rmsnorm(w, a, "model.norm", NULL);
    lm_head(w, a, "model.embed_tokens", "lm_head");
}

vc_status vc_hf_build(const cJSON *cfg, const vc_hf_options *o, cJSON **model, vc_error *err)
{
    *model = NULL;
    rd r = {cfg, err, "", false, 1};
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    if (!cJSON_IsString(mt))
        return vc_set_error(err, VC_ERR_MODEL, "model_type", "expected a string naming the architecture (supported: " FAMILIES ")");
    arch a;
    memset(&a, 0, sizeof a);
    a.fam = -1;
    for (int i = 0; i < F_COUNT; i++)
        if (!strcmp(mt->valuestring, fam_names[i])) a.fam = i;
    if (a.fam < 0) {
        char e[80];
        vc_escape(e, sizeof e, mt->valuestring);
        return vc_set_error(err, VC_ERR_MODEL, "model_type", "unsupported model_type \"%s\" (supported: " FAMILIES ")", e);
    }
    r.fam = fam_names[a.fam];
    a.imbalance = o ? o->moe_imbalance : 1.0;
    a.ckpt = o && o->checkpoint;
    if (read_family(&r, &a) || check_sizes(&r, &a)) return err->code;
    /* the sequence: --seq, else 2048, or the learned positions when fewer */
    int64_t npos = a.fam == F_GPT2 ? a.maxpos : a.fam == F_BERT ? a.maxpos : a.fam == F_ROBERTA ? a.maxpos - a.window : 0;
    a.seq = o && o->seq > 0 ? o->seq : VC_HF_DEFAULT_SEQ;
    if (!(o && o->seq > 0) && npos > 0 && npos < a.seq) a.seq = npos;
    if (npos > 0 && a.seq > npos)
        return vc_set_error(err, VC_ERR_USAGE, "--seq", "%lld tokens: %s has %lld learned positions (%s)", (long long)a.seq,
                            r.fam, (long long)npos, a.fam == F_GPT2 ? "n_positions" : "max_position_embeddings");
    if (a.seq > MAX_SIZE) return vc_set_error(err, VC_ERR_USAGE, "--seq", "%lld tokens: more than 2^40", (long long)a.seq);
    /* --loss: the causal LM's loss, a row of src/loss.c's table by its option name */
    bool encoder = a.fam == F_BERT || a.fam == F_ROBERTA;
    unsigned li = o ? (unsigned)o->loss : VC_LOSS_IMPL_HF;
#define VC__LNAME(e, n) n,
    static const char *const loss_opts[] = {VC_LOSS_MAP(VC__LNAME) NULL};
#undef VC__LNAME
    if (li >= VC_LOSS_IMPL__N) return vc_set_error(err, VC_ERR_USAGE, "--loss", "unknown loss");
    int lrow = vc__loss_from_option(loss_opts[li]);
    if (encoder && li != VC_LOSS_IMPL_HF)
        return vc_set_error(err, VC_ERR_USAGE, "--loss", "%s is a causal-LM loss; %s is an encoder with a classification "
                            "head (cross_entropy)", loss_opts[li], r.fam);
    const vc_loss_row *lr = lrow >= 0 ? vc_loss_row_get((vc_loss)lrow) : NULL;
    if (lr && lr->tp_why && o && o->tp > 1) /* a row a tensor-parallel rank cannot run (src/loss.c) */
        return vc_set_error(err, VC_ERR_USAGE, "--loss", "%s with --tp is not modelled: %s", loss_opts[li], lr->tp_why);
    if (vc__hf_tp_split(&a, o, err)) return err->code; /* one tensor-parallel rank's share (hf_tp.c) */
    r.sp = a.sp;
    /* a decoder on a tensor-parallel rank: Megatron's vocab-parallel cross-entropy (hf_tp.c) */
    const char *loss_name = encoder ? "cross_entropy" : o && o->tp > 1 ? "vocab_parallel" : lr ? lr->name : "causal_lm";

    cJSON *m = cJSON_CreateObject();
    cJSON *layers = m ? cJSON_CreateArray() : NULL;
    if (!layers) {
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    char nm[160], src[120];
    const cJSON *arch_list = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
    const cJSON *a0 = cJSON_IsArray(arch_list) ? cJSON_GetArrayItem(arch_list, 0) : NULL;
    char an[80] = "";
    if (cJSON_IsString(a0)) vc_escape(an, sizeof an, a0->valuestring);
    if (a.fam == F_BERT || a.fam == F_ROBERTA) /* the task head built, whatever the checkpoint's class */
        snprintf(an, sizeof an, "%s", a.fam == F_BERT ? "BertForSequenceClassification" : "RobertaForSequenceClassification");
    snprintf(nm, sizeof nm, "%s%s%s (Hugging Face config, seq %lld)", r.fam, an[0] ? " " : "", an, (long long)a.seq);
    snprintf(src, sizeof src, "transformers modeling_%s.py (model_type %s)", r.fam, r.fam);
    cJSON *in = cJSON_AddStringToObject(m, "name", nm) && cJSON_AddStringToObject(m, "source", src)
                    ? cJSON_AddObjectToObject(m, "input") : NULL;
    cJSON *shape = in ? cJSON_AddArrayToObject(in, "shape") : NULL;
    bool ok = shape != NULL;
    if (ok) {
        cJSON *len = cJSON_CreateNumber((double)a.seq);
        ok = len && cJSON_AddItemToArray(shape, len);
        if (!ok) cJSON_Delete(len);
    }
    ok = ok && cJSON_AddStringToObject(in, "dtype", "int64") &&
         cJSON_AddStringToObject(m, "loss", loss_name);
    /* the positions a generation may reach: max_position_embeddings (n_positions), unless a
     * sliding window bounds what attention sees (generate.c refuses longer prompts) */
    if (ok && a.maxpos > 0 && a.window == 0 && a.fam != F_BERT && a.fam != F_ROBERTA)
        ok = cJSON_AddNumberToObject(m, "max_positions", (double)a.maxpos) != NULL;
    if (!ok || !cJSON_AddItemToObject(m, "layers", layers)) {
        cJSON_Delete(layers);
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    wr w = {&r, layers, NULL};
    build_layers(&w, &a);
    if (r.oom) {
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    *model = m;
    return VC_OK;
}
