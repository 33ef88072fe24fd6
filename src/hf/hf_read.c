/*
 * hf_read.c — the keys of a Hugging Face config.json, read into an arch
 * (src/hf/hf_arch.h) and checked.
 *
 * What a family reads is its row of vc__hf_families (src/hf/hf.c): each key
 * role (K_*) names the config key and its default as the family's
 * configuration_*.py sets it; this file reads every row the same way, in the
 * order of the roles. A key the family needs and the config lacks is an
 * error naming the key (err->path); a key with a default takes that default;
 * the products that become tensor sizes are checked here so that the error
 * names a key.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

/* ------------------------------------------------------------ reading keys */

int vc__hf_bad(rd *r, const char *key, const char *fmt, ...)
{
    va_list ap;
    char path[160];
    if (r->nested && key) { /* gemma3: the key of text_config */
        snprintf(path, sizeof path, "%s.%s", r->nested, key);
        key = path;
    }
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

/* The config key an error about role's value names: the family's own key when
 * the config has it (gpt2's n_layer, not num_hidden_layers), else the key of
 * the role it defaults from (kv heads from heads, GPT-2's n_inner from
 * n_embd), else the family's key or `dflt`. */
static const char *role_key(rd *r, const arch *a, int role, int from, const char *dflt)
{
    const char *k = a->f->keys[role].key;
    if (k && key_of(r, k)) return k;
    const char *f = from >= 0 ? a->f->keys[from].key : NULL;
    if (f && key_of(r, f)) return f;
    return k ? k : dflt;
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
        return vc__hf_bad(r, key, "missing: model_type \"%s\" needs \"%s\" (supported families: " FAMILIES ")", r->fam, key);
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d))
        return vc__hf_bad(r, key, "expected an integer");
    if (d < (double)min) return vc__hf_bad(r, key, "expected an integer of at least %lld, got %.17g", (long long)min, d);
    if (d > (double)MAX_SIZE) return vc__hf_bad(r, key, "%.17g is larger than the limit of 2^40", d);
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
        return vc__hf_bad(r, key, "expected a number from %g to %g", min, max);
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
    if (!cJSON_IsBool(v)) return vc__hf_bad(r, key, "expected true or false");
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
    if (!cJSON_IsString(v)) return vc__hf_bad(r, key, "expected a string");
    *out = v->valuestring;
    return 0;
}

/* ------------------------------------------------------------ the architecture */

static int read_act(rd *r, const char *key, const char *def, bool gated, int *out)
{
    const char *s = NULL;
    if (get_str(r, key, def, &s)) return -1;
    /* relu2: ACT2FN's ReLUSquaredActivation, xielu: its XIELUActivation (a non-gated MLP's only: arcee, nemotron,
     * apertus) */
    static const char *const names[] = {"silu", "swish", "gelu", "gelu_pytorch_tanh", "relu", "gelu_new", "gelu_fast", "relu2",
                                        "xielu"};
    static const int acts[] = {A_SILU, A_SILU, A_GELU, A_GELU_TANH, A_RELU, A_GELU_NEW, A_GELU_FAST, A_RELU2, A_XIELU};
    for (int i = 0; i < 9; i++)
        if (!strcmp(s, names[i]) && (!gated || acts[i] <= A_RELU)) {
            *out = acts[i];
            return 0;
        }
    /* quick_gelu (ACT2FN's QuickGELUActivation) where it is the class's default (CLIPTextConfig, CLIPVisionConfig) */
    const bool quick = def && !strcmp(def, "quick_gelu");
    if (quick && !strcmp(s, "quick_gelu")) {
        *out = A_GELU_QUICK;
        return 0;
    }
    char e[64];
    vc_escape(e, sizeof e, s);
    return vc__hf_bad(r, key, "activation \"%s\" is not modelled (%s)", e,
               gated ? "silu, swish, gelu, gelu_pytorch_tanh or relu"
               : quick ? "gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu, relu2, xielu, silu or quick_gelu"
                       : "gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu, relu2, xielu or silu");
}

/* rope_scaling: null or an object whose rope_type (or type) is known. The
 * scaling changes inv_freq and a scalar factor, not any tensor's size. */
static int read_rope_scaling(rd *r)
{
    const cJSON *v = key_of(r, "rope_scaling");
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return vc__hf_bad(r, "rope_scaling", "expected an object or null");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "rope_type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(v, "type");
    if (!cJSON_IsString(t)) return vc__hf_bad(r, "rope_scaling.rope_type", "missing: the scaling type (a string)");
    static const char *const ok[] = {"default", "linear", "dynamic", "yarn", "longrope", "llama3", "su", "mrope"};
    for (int i = 0; i < 8; i++)
        if (!strcmp(t->valuestring, ok[i])) return 0;
    char e[64];
    vc_escape(e, sizeof e, t->valuestring);
    return vc__hf_bad(r, "rope_scaling.rope_type", "unknown rope scaling \"%s\" (default, linear, dynamic, yarn, longrope, llama3)", e);
}

/* Ministral3Attention.forward (models/ministral3/modular_ministral3.py @ 00b364c707dac287e81ab6a952c386246a1025f3):
 * query_states * _get_llama_4_attn_scale(cache_position, rope_parameters.get("llama_4_scaling_beta"),
 * rope_parameters.get("original_max_position_embeddings")), 1 + beta * log(1 + floor(positions / original)).
 * Ministral3Config.__post_init__ (configuration_ministral3.py @ 008e574391258935f3ecc3035c882e73bbcac419) sets
 * rope_parameters (yarn, beta 0.1, 16384) only when the config has none: a config's own rope_parameters without
 * either key hands None to the forward (TypeError on None * tensor, tensor / None). The values size no tensor. */
static int read_l4_scale(rd *r, arch *a)
{
    const cJSON *p = key_of(r, "rope_parameters");
    a->l4_beta = 0.1;
    a->l4_orig = 16384;
    if (!p) return 0;
    if (!cJSON_IsObject(p)) return vc__hf_bad(r, "rope_parameters", "expected an object or null");
    char path[96];
    snprintf(path, sizeof path, "%s%srope_parameters", r->nested ? r->nested : "", r->nested ? "." : "");
    rd s = *r;
    s.cfg = p;
    s.nested = path;
    if (!key_of(&s, "llama_4_scaling_beta"))
        return vc__hf_bad(&s, "llama_4_scaling_beta", "missing: Ministral3Attention scales q by 1 + beta * log(1 + "
                          "floor(position / original_max_position_embeddings)) and raises TypeError on None");
    if (!key_of(&s, "original_max_position_embeddings"))
        return vc__hf_bad(&s, "original_max_position_embeddings", "missing: Ministral3Attention divides the positions "
                          "by it (llama_4_scaling_beta's scale) and raises TypeError on None");
    return get_num(&s, "llama_4_scaling_beta", 0.1, 0, 1e6, &a->l4_beta) ||
           get_int(&s, "original_max_position_embeddings", 16384, 1, &a->l4_orig);
}

/* ------------------------------------------------------------ the family's keys */

/* The field each key role fills, its type and range (hf_arch.h's K_*). */
enum { T_INT, T_NUM, T_BOOL, T_ACT, T_LIST, T_LABELS, T_TYPES, T_FLAGS, T_HYBRID };
static const struct {
    unsigned char type;
    size_t off;
    double min, max; /* T_INT: the least value (the most is 2^40); T_NUM: the range */
} key_roles[K_COUNT] = {
    [K_VOCAB] = {T_INT, offsetof(arch, V), 1, 0},          [K_HIDDEN] = {T_INT, offsetof(arch, H), 1, 0},
    [K_LAYERS] = {T_INT, offsetof(arch, N), 1, 0},         [K_HEADS] = {T_INT, offsetof(arch, NH), 1, 0},
    [K_KV_HEADS] = {T_INT, offsetof(arch, KV), 1, 0},      [K_EPS] = {T_NUM, offsetof(arch, eps), 0, 1},
    [K_MAXPOS] = {T_INT, offsetof(arch, maxpos), 1, 0},    [K_INTER] = {T_INT, offsetof(arch, I), 1, 0},
    [K_HEAD_DIM] = {T_INT, offsetof(arch, D), 1, 0},       [K_ACT] = {T_ACT, offsetof(arch, act), 0, 0},
    [K_TIE] = {T_BOOL, offsetof(arch, tie), 0, 0},         [K_QKV_BIAS] = {T_BOOL, offsetof(arch, qkv_bias), 0, 0},
    [K_O_BIAS] = {T_BOOL, offsetof(arch, o_bias), 0, 0},   [K_MLP_BIAS] = {T_BOOL, offsetof(arch, mlp_bias), 0, 0},
    [K_P_ATTN] = {T_NUM, offsetof(arch, p_attn), 0, 1},    [K_P_RESID] = {T_NUM, offsetof(arch, p_resid), 0, 1},
    [K_P_EMBD] = {T_NUM, offsetof(arch, p_embd), 0, 1},    [K_ROTARY] = {T_NUM, offsetof(arch, rotary), 0, 1},
    [K_PARALLEL] = {T_BOOL, offsetof(arch, parallel), 0, 0}, [K_USE_WINDOW] = {T_BOOL, offsetof(arch, use_window), 0, 0},
    [K_WINDOW] = {T_INT, offsetof(arch, window), 1, 0},    [K_FINAL_CAP] = {T_NUM, offsetof(arch, final_cap), 0, 1e9},
    [K_ATTN_CAP] = {T_NUM, offsetof(arch, attn_cap), 0, 1e9}, [K_EXPERTS] = {T_INT, offsetof(arch, E), 1, 0},
    [K_TOPK] = {T_INT, offsetof(arch, K), 1, 0},           [K_MOE_INTER] = {T_INT, offsetof(arch, moe_I), 1, 0},
    [K_SHARED_INTER] = {T_INT, offsetof(arch, shared_I), 0, 0}, [K_SPARSE_STEP] = {T_INT, offsetof(arch, sparse_step), 1, 0},
    [K_NORM_TOPK] = {T_BOOL, offsetof(arch, norm_topk), 0, 0}, [K_MLP_ONLY] = {T_LIST, offsetof(arch, mlp_only), 0, 0},
    [K_TYPES] = {T_INT, offsetof(arch, types), 1, 0},      [K_LABELS] = {T_LABELS, offsetof(arch, labels), 0, 0},
    [K_P_CLS] = {T_NUM, offsetof(arch, p_cls), 0, 1},      [K_PAD] = {T_INT, offsetof(arch, pos_off), 0, 0},
    [K_WINDOW_LAYERS] = {T_INT, offsetof(arch, window_layers), 0, 0}, [K_LAYER_TYPES] = {T_TYPES, offsetof(arch, layer_types), 0, 0},
    [K_NOPE_LAYERS] = {T_FLAGS, offsetof(arch, no_rope), 0, 0}, [K_NOPE_INTERVAL] = {T_INT, offsetof(arch, nope_interval), 1, 0},
    [K_EMB_MULT] = {T_NUM, offsetof(arch, emb_mult), 0, 1e9}, [K_RESID_MULT] = {T_NUM, offsetof(arch, resid_mult), 0, 1e9},
    [K_LOGITS_SCALE] = {T_NUM, offsetof(arch, logits_scale), 1e-9, 1e9}, [K_MULTI_QUERY] = {T_BOOL, offsetof(arch, mqa), 0, 0},
    [K_PROJ_DIM] = {T_INT, offsetof(arch, proj), 1, 0}, [K_NORM_BEFORE] = {T_BOOL, offsetof(arch, norm_before), 0, 0},
    [K_NORM_AFFINE] = {T_BOOL, offsetof(arch, norm_affine), 0, 0}, [K_QK_LAYERNORM] = {T_BOOL, offsetof(arch, qk_layernorm), 0, 0},
    [K_Q_LORA] = {T_INT, offsetof(arch, q_lora), 1, 0}, [K_KV_LORA] = {T_INT, offsetof(arch, kv_lora), 1, 0},
    [K_QK_NOPE] = {T_INT, offsetof(arch, qk_nope), 1, 0}, [K_V_HEAD] = {T_INT, offsetof(arch, v_head), 1, 0},
    [K_N_SHARED] = {T_INT, offsetof(arch, n_shared), 1, 0}, [K_N_GROUP] = {T_INT, offsetof(arch, n_group), 1, 0},
    [K_TOPK_GROUP] = {T_INT, offsetof(arch, topk_group), 1, 0}, [K_FIRST_DENSE] = {T_INT, offsetof(arch, first_dense), 0, 0},
    [K_NEXTN] = {T_INT, offsetof(arch, nextn), 0, 0}, [K_ROPE_INTERLEAVE] = {T_BOOL, offsetof(arch, rope_interleave), 0, 0},
    [K_ROUTED_SCALE] = {T_NUM, offsetof(arch, routed_scale), 0, 1e9},
    [K_USE_QK_NORM] = {T_BOOL, offsetof(arch, use_qk_norm), 0, 0},
    [K_WINDOW_PATTERN] = {T_INT, offsetof(arch, window_pattern), 1, 0}, [K_QUERY_SCALAR] = {T_NUM, offsetof(arch, query_scalar), 1e-9, 1e12},
    [K_ROPE_LOCAL] = {T_NUM, offsetof(arch, rope_local), 1e-9, 1e30}, [K_SWIGLU_ALPHA] = {T_NUM, offsetof(arch, swiglu_alpha), 1e-9, 1e9},
    [K_SWIGLU_LIMIT] = {T_NUM, offsetof(arch, swiglu_limit), 1e-9, 1e9},
    [K_SINUSOIDAL] = {T_BOOL, offsetof(arch, sinusoidal), 0, 0},
    [K_LIN_KH] = {T_INT, offsetof(arch, lin_kh), 1, 0}, [K_LIN_VH] = {T_INT, offsetof(arch, lin_vh), 1, 0},
    [K_LIN_KD] = {T_INT, offsetof(arch, lin_kd), 1, 0}, [K_LIN_VD] = {T_INT, offsetof(arch, lin_vd), 1, 0},
    [K_CONV_K] = {T_INT, offsetof(arch, conv_k), 1, 0}, [K_FULL_INTERVAL] = {T_INT, offsetof(arch, full_interval), 1, 0},
    [K_HYBRID_TYPES] = {T_HYBRID, offsetof(arch, hybrid_types), 0, 0},
    /* t5: num_decoder_layers absent or null reads 0 (the row's default), num_layers then (hf_t5.c) */
    [K_DEC_LAYERS] = {T_INT, offsetof(arch, dec_N), 1, 0}, [K_REL_BUCKETS] = {T_INT, offsetof(arch, rel_buckets), 1, 0},
    [K_REL_MAXDIST] = {T_INT, offsetof(arch, rel_maxdist), 1, 0},
    [K_NEW_ARCH] = {T_BOOL, offsetof(arch, new_arch), 0, 0}, [K_ALIBI] = {T_BOOL, offsetof(arch, alibi), 0, 0},
    [K_NUM_LN] = {T_INT, offsetof(arch, num_ln), 1, 0},
    [K_DEC_HEADS] = {T_INT, offsetof(arch, wh.dec_NH), 1, 0}, [K_DEC_INTER] = {T_INT, offsetof(arch, wh.dec_I), 1, 0},
    [K_MEL] = {T_INT, offsetof(arch, wh.mel), 1, 0},       [K_SRC_POS] = {T_INT, offsetof(arch, wh.src), 1, 0},
    [K_P_ACT] = {T_NUM, offsetof(arch, wh.p_act), 0, 1},
};

/* ": absent, the default of <class>" where the config lacks the role's key (and its alternative) and the row
 * gave the class's default, else "" */
static const char *class_default(rd *r, const hf_family *f, int role, char *buf, size_t n)
{
    const hf_key *k = &f->keys[role];
    *buf = 0;
    if (k->key && k->how == D_VALUE && !cJSON_GetObjectItemCaseSensitive(r->cfg, k->key) &&
        !(k->alt && cJSON_GetObjectItemCaseSensitive(r->cfg, k->alt)))
        snprintf(buf, n, ": absent, the default of %s", f->config_class);
    return buf;
}

/* head_dim = hidden size / heads, which must divide it (the error names
 * the heads' key, and a class default among the two as such). */
static int split_heads(rd *r, const hf_family *f, int64_t H, int64_t NH, int64_t *out)
{
    char dh[160], dn[160];
    if (H % NH)
        return vc__hf_bad(r, f->keys[K_HEADS].key, "%s (%lld%s) must be divisible by %s (%lld%s)", f->keys[K_HIDDEN].key,
                          (long long)H, class_default(r, f, K_HIDDEN, dh, sizeof dh), f->keys[K_HEADS].key, (long long)NH,
                          class_default(r, f, K_HEADS, dn, sizeof dn));
    *out = H / NH;
    return 0;
}

/* One key of the row: its value from the config, else its default. */
static int read_key(rd *r, arch *a, int role)
{
    const hf_family *f = a->f;
    const hf_key *k = &f->keys[role];
    void *field = (char *)a + key_roles[role].off;
    int type = key_roles[role].type;
    const char *key = k->key;
    if (type == T_ACT && !key && !k->sdef) return 0; /* a row without an activation */
    /* null where the class takes None for "off" (a sliding window, a softcap) */
    bool none = key && k->null_none && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r->cfg, key));
    if (key && k->alt && !key_of(r, key)) key = k->alt;
    if (none || !key || !key_of(r, key)) {
        switch (k->how) {
        case D_REQUIRED: break; /* get_int's error below names the key */
        case D_HEADS: *(int64_t *)field = a->NH; return 0;
        case D_KV_NULL:
            *(int64_t *)field = cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r->cfg, key)) ? a->NH : (int64_t)k->def;
            return 0;
        case D_SPLIT: return split_heads(r, f, a->H, a->NH, field);
        case D_SPLIT_NULL:
            if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r->cfg, key))) return split_heads(r, f, a->H, a->NH, field);
            *(int64_t *)field = (int64_t)k->def;
            return 0;
        case D_4H: *(int64_t *)field = 4 * a->H; return 0;
        case D_HIDDEN: *(int64_t *)field = a->H; return 0;
        case D_RESID: *(double *)field = a->p_resid; return 0;
        default:
            switch (type) {
            case T_INT: *(int64_t *)field = none ? 0 : (int64_t)k->def; return 0;
            case T_NUM: *(double *)field = none ? 0 : k->def; return 0;
            case T_BOOL: *(bool *)field = !none && k->def != 0; return 0;
            case T_ACT: break; /* read_act checks the default's name */
            case T_LIST: case T_TYPES: case T_FLAGS: case T_HYBRID: *(const cJSON **)field = NULL; return 0;
            case T_LABELS: *(int64_t *)field = 2; return 0; /* num_labels without id2label */
            }
        }
    }
    switch (type) {
    case T_INT:
        return get_int(r, key, k->how == D_REQUIRED ? -1 : (int64_t)k->def, (int64_t)key_roles[role].min, field);
    case T_NUM: return get_num(r, key, k->def, key_roles[role].min, key_roles[role].max, field);
    case T_BOOL: return get_bool(r, key, k->def != 0, field);
    case T_ACT: return read_act(r, key ? key : "hidden_act", k->sdef, f->mlp != MLP_PLAIN, field);
    case T_LIST: {
        const cJSON *v = key_of(r, key);
        if (!cJSON_IsArray(v)) return vc__hf_bad(r, key, "expected a list of layer indices");
        *(const cJSON **)field = v;
        return 0;
    }
    case T_TYPES: { /* layer_types: one "full_attention" or "sliding_attention" per layer */
        const cJSON *v = key_of(r, key);
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != a->N)
            return vc__hf_bad(r, key, "expected a list of %lld layer types (\"full_attention\" or \"sliding_attention\")",
                       (long long)a->N);
        for (const cJSON *e = v->child; e; e = e->next)
            if (!cJSON_IsString(e) || (strcmp(e->valuestring, "full_attention") && strcmp(e->valuestring, "sliding_attention")))
                return vc__hf_bad(r, key, "expected \"full_attention\" or \"sliding_attention\" for each layer");
        *(const cJSON **)field = v;
        return 0;
    }
    case T_HYBRID: { /* Qwen3NextConfig.layer_types: "linear_attention" or "full_attention" per layer */
        const cJSON *v = key_of(r, key);
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != a->N)
            return vc__hf_bad(r, key, "expected a list of %lld layer types (\"linear_attention\" or \"full_attention\")",
                       (long long)a->N);
        for (const cJSON *e = v->child; e; e = e->next)
            if (!cJSON_IsString(e) || (strcmp(e->valuestring, "full_attention") && strcmp(e->valuestring, "linear_attention")))
                return vc__hf_bad(r, key, "expected \"linear_attention\" or \"full_attention\" for each layer");
        *(const cJSON **)field = v;
        return 0;
    }
    case T_FLAGS: { /* no_rope_layers: 1 (rotary) or 0 (NoPE) for at least every layer */
        const cJSON *v = key_of(r, key);
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < a->N)
            return vc__hf_bad(r, key, "expected a list of 0 or 1 for each of the %lld layers", (long long)a->N);
        for (const cJSON *e = v->child; e; e = e->next)
            if (!cJSON_IsNumber(e) || (e->valuedouble != 0 && e->valuedouble != 1))
                return vc__hf_bad(r, key, "expected 1 (rotary) or 0 (no rotary) for each layer");
        *(const cJSON **)field = v;
        return 0;
    }
    case T_LABELS: { /* num_labels: len(id2label) (PretrainedConfig) */
        const cJSON *ids = key_of(r, key);
        if (!cJSON_IsObject(ids) || !ids->child) return vc__hf_bad(r, key, "expected an object of labels");
        *(int64_t *)field = cJSON_GetArraySize(ids);
        return 0;
    }
    }
    return 0;
}

/* DeepseekV3TopkRouter.get_topk_indices (modeling_deepseek_v3.py @ 00b676f8):
 * scores viewed as [T, n_group, E / n_group], each group's top-2 summed,
 * topk(topk_group) groups kept, topk(top_k) experts among theirs. What the
 * view and the topks need, checked here so that the error names the key. */
static int read_deepseek(rd *r, const arch *a)
{
    const char *ng = role_key(r, a, K_N_GROUP, -1, "n_group"), *tg = role_key(r, a, K_TOPK_GROUP, -1, "topk_group");
    if (a->E % a->n_group || a->E / a->n_group < 2)
        return vc__hf_bad(r, ng, "%lld groups: n_routed_experts (%lld) must split into groups of at least 2 experts (each group's "
                   "score is its top-2 sum)", (long long)a->n_group, (long long)a->E);
    if (a->topk_group > a->n_group)
        return vc__hf_bad(r, tg, "%lld is more than n_group (%lld)", (long long)a->topk_group, (long long)a->n_group);
    if (a->K > a->E / a->n_group * a->topk_group)
        return vc__hf_bad(r, role_key(r, a, K_TOPK, -1, "num_experts_per_tok"), "top-k (%lld) is more than the %lld experts of "
                   "the %lld groups kept (topk_group)", (long long)a->K, (long long)(a->E / a->n_group * a->topk_group),
                   (long long)a->topk_group);
    if (a->f->attn == ATTN_MLA && a->D % 2)
        return vc__hf_bad(r, role_key(r, a, K_HEAD_DIM, -1, "qk_rope_head_dim"), "%lld: the rotary part must be even", (long long)a->D);
    if (a->experts_impl == EXPERTS_PER_EXPERT) {
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert: %s's routed experts are modelled with "
                     "transformers 5's stacked experts (grouped_mm)", r->fam);
        return -1;
    }
    return 0;
}

/* FalconConfig's switches as FalconAttention / FalconDecoderLayer read them (modeling_falcon.py
 * @00dcc6dd): what they build, and the combinations transformers fails on, refused naming the key. */
static int read_falcon(rd *r, arch *a)
{
    /* FalconModel.use_alibi: build_alibi_tensor, the scores upcast to fp32 with the bias, eager-style
     * attention in FalconAttention.forward's alibi branch: not modelled */
    if (a->alibi) return vc__hf_bad(r, "alibi", "true (ALiBi position biases instead of rotary) is not modelled");
    /* FalconLinear: input @ weight.T, then + bias as a separate op: not modelled */
    if (a->qkv_bias) return vc__hf_bad(r, "bias", "true (FalconLinear adds the bias after the matmul) is not modelled");
    const char *ln = "num_ln_in_parallel_attn";
    if (a->num_ln > 2) return vc__hf_bad(r, ln, "expected 1, 2 or null, got %lld", (long long)a->num_ln);
    if (a->new_arch && !a->parallel) /* __init__ builds input_layernorm, forward reads ln_attn / mlp_layernorm_out */
        return vc__hf_bad(r, "parallel_attn", "false with new_decoder_architecture: FalconDecoderLayer.forward fails on it");
    if (a->new_arch && a->num_ln == 0) a->num_ln = 2; /* FalconDecoderLayer.__init__: None -> 2 */
    if (!a->new_arch && a->num_ln == 2) /* __init__ builds ln_attn / ln_mlp, forward reads input_layernorm */
        return vc__hf_bad(r, ln, "2 (ln_attn and ln_mlp) needs new_decoder_architecture: FalconDecoderLayer.forward fails on it");
    if (a->new_arch) {
        a->mqa = false; /* FalconAttention: num_kv_heads from the config, multi_query unread */
    } else if (!a->mqa && a->KV != a->NH) /* _split_heads gives num_heads keys, reshaped to num_kv_heads */
        return vc__hf_bad(r, "num_kv_heads", "%lld: without new_decoder_architecture or multi_query FalconAttention has "
                   "num_attention_heads (%lld) kv heads", (long long)a->KV, (long long)a->NH);
    return 0;
}

/* ViTConfig's image keys (configuration_vit.py @ 04ae7571: image_size 224, patch_size 16, num_channels 3) as
 * ViTPatchEmbeddings (modeling_vit.py @ 005db820) reads them: a square image (an int; the iterable form, a
 * [height, width] pair, is not modelled), num_patches = (image_size // patch_size)^2 of the Conv2d with kernel =
 * stride = patch_size; ViTSelfAttention raises ValueError unless num_attention_heads divides hidden_size. (An empty
 * id2label -- num_labels 0, ViTForImageClassification's nn.Identity classifier -- is refused by the id2label role.) */
/* Dinov2Config (configuration_dinov2.py, the defaults as read in pypi-data/pypi-mirror-396's copy of transformers'
 * file -- huggingface/transformers' stored version, 02d3b01c, predates use_swiglu_ffn and use_mask_token: image_size
 * 224, patch_size 14, mlp_ratio 4, use_swiglu_ffn False, use_mask_token True, drop_path_rate 0.0) as
 * modeling_dinov2.py @ 015e6876 reads it: Dinov2MLP's fc1 int(hidden_size * mlp_ratio) wide; Dinov2SwiGLUFFN's
 * hidden (int(that * 2 / 3) + 7) // 8 * 8, weights_in twice that; mask_token only with use_mask_token. */
static int read_dinov2(rd *r, arch *a)
{
    double ratio = 4, dp = 0;
    if (get_num(r, "mlp_ratio", 4, 0, 1e15, &ratio) || get_bool(r, "use_swiglu_ffn", false, &a->vit.swiglu) ||
        get_bool(r, "use_mask_token", true, &a->vit.mask_token) || get_num(r, "drop_path_rate", 0, 0, 1, &dp))
        return -1;
    if (dp >= 1) /* drop_path's input.div(keep_prob): keep_prob 0 */
        return vc__hf_bad(r, "drop_path_rate", "%g: Dinov2DropPath divides by 1 - drop_path_rate, 0", dp);
    a->vit.drop_path = dp; /* Dinov2Layer: Dinov2DropPath(drop_path_rate) when > 0.0 (hf_layers.c dinov2_layer) */
    const double I = (double)a->H * ratio;
    if (!(I >= 1) || I > (double)(INT64_C(1) << 40))
        return vc__hf_bad(r, "mlp_ratio", "%g: int(hidden_size (%lld) * mlp_ratio) is %s", ratio, (long long)a->H,
                          I < 1 ? "0, no MLP" : "more than 2^40");
    a->I = (int64_t)I;
    if (a->vit.swiglu) a->I = ((int64_t)((double)(a->I * 2) / 3.0) + 7) / 8 * 8;
    if (a->I < 1) return vc__hf_bad(r, "mlp_ratio", "%g: Dinov2SwiGLUFFN's hidden width is 0", ratio);
    return 0;
}

static int read_vit(rd *r, arch *a)
{
    const bool dino = a->f->block == BLK_DINOV2;
    /* CLIPVisionConfig's patch_size 32 (configuration_clip.py @ 01841b34) */
    const int64_t pdef = dino ? 14 : a->f->block == BLK_CLIP_VISION ? 32 : 16;
    if (get_int(r, "image_size", 224, 1, &a->vit.img) || get_int(r, "patch_size", pdef, 1, &a->vit.P) ||
        get_int(r, "num_channels", 3, 1, &a->vit.cin) || (dino && read_dinov2(r, a)))
        return -1;
    /* siglip_vision_model: SiglipVisionTransformer's use_head, True unless the config has vision_use_head
     * (hasattr; modeling_siglip.py @ efa7189c) */
    if (a->f->block == BLK_SIGLIP_VISION && get_bool(r, "vision_use_head", true, &a->vit.head)) return -1;
    if (a->vit.P > a->vit.img)
        return vc__hf_bad(r, "patch_size", "%lld: larger than image_size (%lld), no patch", (long long)a->vit.P,
                          (long long)a->vit.img);
    if (a->H % a->NH)
        return vc__hf_bad(r, "num_attention_heads", "hidden_size (%lld) must be divisible by num_attention_heads (%lld) "
                          "(ViTSelfAttention raises ValueError)", (long long)a->H, (long long)a->NH);
    const int64_t side = a->vit.img / a->vit.P, lim = INT64_C(1) << 48;
    int64_t t;
    if (__builtin_mul_overflow(side, side, &t) || __builtin_add_overflow(t, 1, &t) || __builtin_mul_overflow(t, a->H, &t) ||
        t > lim)
        return vc__hf_bad(r, "image_size", "%lld / patch_size %lld: the position embeddings ((%lld^2 + 1) x %lld) are more "
                          "than 2^48 elements", (long long)a->vit.img, (long long)a->vit.P, (long long)side, (long long)a->H);
    if (__builtin_mul_overflow(a->vit.cin, a->vit.P, &t) || __builtin_mul_overflow(t, a->vit.P, &t) ||
        __builtin_mul_overflow(t, a->H, &t) || t > lim ||
        __builtin_mul_overflow(a->vit.cin, a->vit.img, &t) || __builtin_mul_overflow(t, a->vit.img, &t) || t > lim)
        return vc__hf_bad(r, "num_channels", "%lld channels of %lld x %lld pixels, patches of %lld: the image or the patch "
                          "Conv2d is more than 2^48 elements", (long long)a->vit.cin, (long long)a->vit.img,
                          (long long)a->vit.img, (long long)a->vit.P);
    a->vit.patches = side * side;
    a->vit.grid = side;
    a->vit.h = a->vit.w = a->vit.img; /* hf.c: dinov2's --image */
    return 0;
}

/* Every key of the family's row, in the order of hf_arch.h's K_*, with the
 * checks between them that need the keys read so far. */
static int read_family(rd *r, arch *a)
{
    const hf_family *f = a->f;
    for (int role = 0; role < K_COUNT; role++) {
        /* Qwen2Config: sliding_window (and max_window_layers) only with use_sliding_window */
        if ((role == K_WINDOW || role == K_WINDOW_LAYERS) && !a->use_window) continue;
        /* Exaone4Config.__init__: sliding_window_pattern only computes layer_types when the config has none */
        if (role == K_WINDOW_PATTERN && f->nope_full && a->layer_types) continue;
        if (read_key(r, a, role)) return -1;
        /* a class default the config lacks (D_KV_NULL: MistralConfig's 8, Qwen2Config's 32; a plain default:
         * Gemma2Config's 4) is named as such */
        const bool kv_def = role == K_KV_HEADS && f->keys[K_KV_HEADS].key &&
                            (f->keys[K_KV_HEADS].how == D_KV_NULL || f->keys[K_KV_HEADS].how == D_VALUE) &&
                            !cJSON_GetObjectItemCaseSensitive(r->cfg, f->keys[K_KV_HEADS].key);
        /* the path is a key the config has: the heads' where the kv heads are the class's default */
        if (role == K_KV_HEADS && a->NH % a->KV)
            return vc__hf_bad(r, kv_def ? role_key(r, a, K_HEADS, -1, "num_attention_heads")
                                        : role_key(r, a, K_KV_HEADS, K_HEADS, "num_key_value_heads"),
                       "%s (%lld) must be divisible by %s (%lld%s%s)", role_key(r, a, K_HEADS, -1, "num_attention_heads"),
                       (long long)a->NH, kv_def ? f->keys[K_KV_HEADS].key : role_key(r, a, K_KV_HEADS, K_HEADS, "num_key_value_heads"),
                       (long long)a->KV, kv_def ? ": absent, the default of " : "", kv_def ? f->config_class : "");
        if (role == K_MAXPOS && f->rope_scaling && read_rope_scaling(r)) return -1;
    }
    /* CohereConfig's logit_scale and layer_norm_eps are `float | None`; None fails in CohereForCausalLM.forward
     * (logits * self.logit_scale) and CohereLayerNorm.forward (variance + self.variance_epsilon) */
    for (int i = 0; f->logit_mul && i < 2; i++) {
        const char *k = f->keys[i ? K_EPS : K_LOGITS_SCALE].key;
        if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r->cfg, k)))
            return vc__hf_bad(r, k, "null: %s fails on it (%s)", i ? "CohereLayerNorm.forward" : "the LM head's product",
                              i ? "variance + None" : "logits * None");
    }
    /* the rotary part of each head: all of it, none (learned positions), or
     * int(head_dim * partial_rotary_factor) rounded down to even (Phi3,
     * GPT-NeoX's rotary_ndims) */
    a->R = !f->keys[K_ROTARY].key ? (f->keys[K_ROTARY].def > 0 ? a->D : 0) : (int64_t)((double)a->D * a->rotary) / 2 * 2;
    if (f->keys[K_NORM_AFFINE].key && !a->norm_affine) /* OPTDecoderLayer: LayerNorm(elementwise_affine=...) */
        return vc__hf_bad(r, f->keys[K_NORM_AFFINE].key, "false (LayerNorms without weight and bias) is not modelled");
    if (a->qk_layernorm) /* PhiAttention: q_layernorm / k_layernorm, LayerNorms per head */
        return vc__hf_bad(r, f->keys[K_QK_LAYERNORM].key, "true (LayerNorm on q and k per head) is not modelled");
    /* distilbert's Embeddings: create_sinusoidal_embeddings fills position_embeddings and sets its
     * requires_grad False (modeling_distilbert.py @00b326f4): a frozen table is not modelled */
    if (a->sinusoidal)
        return vc__hf_bad(r, f->keys[K_SINUSOIDAL].key, "true (a fixed sinusoidal position table, requires_grad False) is not modelled");
    /* BertEmbeddings / BertSelfAttention (modeling_bert.py, RoBERTa's and XLM-R's copies):
     * "relative_key" / "relative_key_query" add distance_embedding and einsum scores, and any other
     * value (null included) skips `embeddings += position_embeddings`: only "absolute" is modelled */
    const cJSON *pet = f->block == BLK_BERT ? cJSON_GetObjectItemCaseSensitive(r->cfg, "position_embedding_type") : NULL;
    if (pet) {
        if (!cJSON_IsString(pet) || strcmp(pet->valuestring, "absolute"))
            return vc__hf_bad(r, "position_embedding_type", "only \"absolute\" (BertConfig's default) is modelled");
    }
    if (f->block == BLK_FALCON && read_falcon(r, a)) return -1;
    if (a->mqa) a->KV = 1; /* GPTBigCodeAttention: kv_heads = 1 if multi_query else num_heads */
    if (f->pos == POS_LEARNED_PAD) a->pos_off += 1; /* RoBERTa's positions start after padding_idx (pad_token_id) */
    /* Qwen3NextGatedDeltaNet.fix_query_key_value_ordering views the projections as
     * [.., num_k_heads, ...] groups of num_v_heads // num_k_heads value heads */
    if (f->hybrid && a->lin_vh % a->lin_kh)
        return vc__hf_bad(r, f->keys[K_LIN_VH].key, "%lld must be divisible by %s (%lld)", (long long)a->lin_vh,
                   f->keys[K_LIN_KH].key, (long long)a->lin_kh);
    if (f->moe && a->K > a->E)
        return vc__hf_bad(r, role_key(r, a, K_TOPK, -1, "num_experts_per_tok"), "top-k (%lld) is more than the %lld experts", (long long)a->K, (long long)a->E);
    if (f->moe == MOE_DEEPSEEK && !f->ds_v2 && read_deepseek(r, a)) return -1;
    if (f->ds_v2 && vc__hf_deepseek_v2_read(r, a)) return -1; /* topk_method and the rest (hf_deepseek_v2.c) */
    if (f->dsa && vc__hf_deepseek_v32_read(r, a)) return -1; /* the indexer's keys (hf_deepseek_v32.c) */
    if (!strcmp(f->model_type, "glm4_moe_lite") && vc__hf_glm4_moe_lite_read(r, a)) return -1; /* mlp_layer_types */
    if (f->block == BLK_T5 && vc__hf_t5_read(r, a)) return -1; /* feed_forward_proj and the rest (hf_t5.c) */
    if (f->block == BLK_WHISPER && vc__hf_whisper_read(r, a)) return -1; /* the decoder's heads and the rest (hf_whisper.c) */
    if (f->moe == MOE_LLAMA4 && vc__hf_llama4_read(r, a)) return -1; /* moe_layers and the rest (hf_llama4.c) */
    if (f->block == BLK_MODERNBERT && vc__hf_modernbert_read(r, a)) return -1; /* norm_bias and the rest (hf_modernbert.c) */
    if (f->block == BLK_GEMMA4 && vc__hf_gemma4_read(r, a)) return -1; /* layer_types and the rest (hf_gemma4.c) */
    /* the rotary dims (hf_glm4.c); Ernie4_5's rotation is the whole head (compute_default_rope_parameters: dim =
     * head_dim, no partial_rotary_factor) */
    if (f->interleaved_rope && !f->rope_f32 && vc__hf_glm4_read(r, a)) return -1;
    if (f->vision == VIS_GLM4V && vc__hf_glm4v_text_read(r, a)) return -1; /* mrope_section (hf_glm4v.c) */
    if (f->moe == MOE_ERNIE && vc__hf_ernie_moe_read(r, a)) return -1; /* moe_layer_end_index and the rest (hf_ernie.c) */
    if (f->block == BLK_MPNET && vc__hf_mpnet_read(r, a)) return -1; /* the buckets, checkpointing (hf_mpnet.c) */
    if (f->block == BLK_BART && vc__hf_bart_read(r, a)) return -1; /* the decoder's keys and the rest (hf_bart.c) */
    if (f->moe == MOE_MINIMAX && vc__hf_minimax_m2_read(r, a)) return -1; /* rotary_dim and the rest (hf_minimax_m2.c) */
    if (f->moe == MOE_PHIMOE && vc__hf_phimoe_read(r, a)) return -1; /* lm_head_bias and the rest (hf_phimoe.c) */
    if (!strcmp(f->model_type, "olmoe") && vc__hf_olmoe_read(r, a)) return -1; /* clip_qkv and the rest (hf_olmoe.c) */
    if (f->block == BLK_GRANITE4 && vc__hf_granite4_read(r, a)) return -1; /* the mamba_* keys and the rest (hf_granite4.c) */
    if (f->block == BLK_MAMBA2 && vc__hf_mamba2_read(r, a)) return -1; /* the mixer's keys (hf_granite4.c) */
    if (f->l4_scale && read_l4_scale(r, a)) return -1; /* ministral3: rope_parameters' llama-4 scale keys */
    /* Exaone4Config.__init__ (configuration_exaone4.py @ f503927d): sliding_window None sets the pattern to 0, and
     * without layer_types `(i + 1) % sliding_window_pattern` divides by it (ZeroDivisionError) */
    if (f->nope_full && !a->window && !a->layer_types)
        return vc__hf_bad(r, "sliding_window", "null without layer_types: Exaone4Config divides by the pattern it zeroes");
    if (f->block == BLK_LFM2 && vc__hf_lfm2_read(r, a)) return -1; /* layer_types, conv_L_cache and the rest (hf_lfm2.c) */
    if (f->block == BLK_NEMOTRON_H && vc__hf_nemotron_h_read(r, a)) return -1; /* the pattern and the rest (hf_granite4.c) */
    if ((f->block == BLK_VIT || f->block == BLK_DINOV2 || f->block == BLK_SIGLIP_VISION || f->block == BLK_CLIP_VISION) &&
        read_vit(r, a))
        return -1; /* image_size, patch_size, num_channels */
    if (f->block == BLK_FALCON_H1 && vc__hf_falcon_h1_read(r, a)) return -1; /* the mamba_* keys, the multipliers (hf_granite4.c) */
    if (f->qk_norm_rope && vc__hf_hunyuan_read(r, a)) return -1; /* moe_topk and the checkpoints' other keys (hf_hunyuan.c) */
    if (f->moe == MOE_HUNYUAN && a->K > a->E)
        return vc__hf_bad(r, "moe_topk", "top-k (%lld) is more than the %lld experts", (long long)a->K, (long long)a->E);
    if (f->local_rope) { /* Gemma3TextConfig.use_bidirectional_attention (EmbeddingGemma): not causal, window // 2 + 1 */
        bool bidi = false;
        if (get_bool(r, "use_bidirectional_attention", false, &bidi)) return -1;
        if (bidi) return vc__hf_bad(r, "use_bidirectional_attention", "true (bidirectional attention, an encoder) is not modelled");
    }
    return 0;
}

/* The whole model's parameters, bounded from above while the keys are read: every weight above is at
 * most 2^48 elements, but their sum over the layers can pass 2^56, where the engine's byte counts would
 * overflow (src/model/setup.c refuses such a model naming a path of the generated model, not the key).
 * An upper bound of one layer's parameters (attention projections with o_proj, each MLP or expert's
 * three matrices and the router, shared experts, MLA's low-rank projections, a Gated DeltaNet's, and a
 * slack for norms and biases) times num_hidden_layers, plus the input and output embeddings: above
 * 2^56 the config is refused naming the layer count (one layer alone stays far below: each of its
 * weights is at most 2^48). Every product is overflow-checked. */
static bool acc3(int64_t *sum, int64_t x, int64_t y, int64_t z)
{
    int64_t t;
    return __builtin_mul_overflow(x, y, &t) || __builtin_mul_overflow(t, z, &t) || __builtin_add_overflow(*sum, t, sum);
}

static int check_total(rd *r, arch *a)
{
    const int64_t lim = INT64_C(1) << 56;
    int64_t width = a->H > a->proj ? a->H : a->proj, w = a->I > a->moe_I ? a->I : a->moe_I, E = a->E > 0 ? a->E : 1;
    int64_t layer = 0, t = 0, emb = 0;
    bool ovf = false;
    ovf |= acc3(&layer, a->NH + 2 * a->KV, a->D, a->H); /* q, k, v */
    ovf |= acc3(&layer, a->NH, a->D > a->v_head ? a->D : a->v_head, a->H); /* o_proj (v_head_dim under MLA) */
    ovf |= acc3(&layer, w, a->H, 3 * E);                 /* gate, up, down of each expert (or the MLP) */
    ovf |= acc3(&layer, a->H, E, 1);                     /* the router */
    if (a->I > 0 && a->f->moe) ovf |= acc3(&layer, a->I, a->H, 3); /* a dense layer's MLP beside the experts' */
    ovf |= acc3(&layer, a->shared_I, a->H, 3);
    ovf |= acc3(&layer, a->moe_I, a->n_shared, 3 * a->H);
    if (a->f->attn == ATTN_MLA) {
        const int64_t in_q = a->q_lora ? a->q_lora : a->H;
        ovf |= acc3(&layer, a->q_lora, a->H, 1);
        ovf |= acc3(&layer, a->kv_lora + a->D, a->H, 1);
        ovf |= acc3(&layer, a->NH, a->qk_nope + a->D, in_q);
        ovf |= acc3(&layer, a->NH, a->qk_nope + a->v_head, a->kv_lora);
    }
    if (a->f->hybrid) {
        const int64_t kd = a->lin_kh * a->lin_kd, vd = a->lin_vh * a->lin_vd; /* each at most 2^48 (checked above) */
        ovf |= acc3(&layer, 2 * kd + 2 * vd, a->H, 1); /* in_proj_qkvz (or in_proj_qkv + in_proj_z) */
        ovf |= acc3(&layer, 2 * kd + vd, a->conv_k, 1); /* conv1d */
        ovf |= acc3(&layer, vd, a->H, 1);               /* out_proj */
        ovf |= acc3(&layer, 2 * a->lin_vh, a->H, 1);    /* in_proj_ba */
    }
    ovf |= acc3(&layer, 16, a->H + w + a->NH * a->D, 1); /* norms and biases */
    const char *key = role_key(r, a, K_LAYERS, -1, "num_hidden_layers");
    if (ovf || __builtin_mul_overflow(a->V, width, &emb) || __builtin_mul_overflow(emb, 2, &emb) ||
        __builtin_mul_overflow(layer, a->N > 0 ? a->N : 1, &t) || __builtin_add_overflow(t, emb, &t) || t > lim)
        return vc__hf_bad(r, key, "%lld layers of up to %lld parameters each (and %lld in the embeddings) are more than "
                   "2^56 parameters: byte counts would overflow 64-bit arithmetic", (long long)a->N, (long long)layer,
                   (long long)emb);
    if (a->f->block == BLK_T5 || a->f->block == BLK_BART) { /* T5Stack's decoder (BartDecoder's): its blocks add
                                                              * cross-attention (at most twice an encoder block's) */
        const char *dn = a->f->keys[K_DEC_LAYERS].key;
        const cJSON *dk = cJSON_GetObjectItemCaseSensitive(r->cfg, dn);
        int64_t d;
        if (__builtin_mul_overflow(layer, 2 * a->dec_N, &d) || __builtin_add_overflow(t, d, &t) || t > lim)
            return vc__hf_bad(r, (dk && !cJSON_IsNull(dk)) || a->f->block == BLK_BART ? dn : key, "%lld decoder layers of up to %lld "
                       "parameters each beside %lld encoder layers are more than 2^56 parameters: byte counts would overflow "
                       "64-bit arithmetic", (long long)a->dec_N, (long long)(2 * layer), (long long)a->N);
    }
    a->param_bound = t;
    return 0;
}

/* Products that become tensor sizes, checked here so the error names a key. */
static int check_sizes(rd *r, arch *a)
{
    const int64_t lim = INT64_C(1) << 48; /* elements in one weight: 2^48 is 512 TiB in bf16 */
    int64_t t;
    int64_t width = a->H > a->proj ? a->H : a->proj; /* OPT's embeddings are word_embed_proj_dim wide */
    if (__builtin_mul_overflow(a->V, width, &t) || t > lim)
        return vc__hf_bad(r, role_key(r, a, K_VOCAB, -1, "vocab_size"), "vocab_size x hidden size (%lld x %lld) is more than 2^48 elements: the embedding would not fit any memory", (long long)a->V, (long long)width);
    int64_t w = a->I > a->moe_I ? a->I : a->moe_I;
    if (__builtin_mul_overflow(w, a->H, &t) || __builtin_mul_overflow(t, 3 * (a->E > 0 ? a->E : 1), &t) || t > lim)
        return vc__hf_bad(r, role_key(r, a, a->I >= a->moe_I ? K_INTER : K_MOE_INTER, K_HIDDEN, "intermediate_size"), "the MLP weights (%lld x %lld) are more than 2^48 elements", (long long)w, (long long)a->H);
    if (__builtin_mul_overflow(a->shared_I, a->H, &t) || __builtin_mul_overflow(t, 3, &t) || t > lim)
        return vc__hf_bad(r, role_key(r, a, K_SHARED_INTER, K_HIDDEN, "shared_expert_intermediate_size"), "the shared expert's weights (%lld x %lld) are more than 2^48 elements",
                   (long long)a->shared_I, (long long)a->H);
    int64_t qk = (a->NH + 2 * a->KV);
    if (__builtin_mul_overflow(qk, a->D, &t) || __builtin_mul_overflow(t, a->H, &t) || t > lim)
        return vc__hf_bad(r, role_key(r, a, K_HEADS, K_HIDDEN, "num_attention_heads"), "the attention projections are more than 2^48 elements");
    if (__builtin_mul_overflow(a->N, t, &t) || t > lim) return vc__hf_bad(r, role_key(r, a, K_LAYERS, -1, "num_hidden_layers"), "the model has more than 2^48 parameters");
    if (a->R % 2)
        return vc__hf_bad(r, a->D == a->H / a->NH ? role_key(r, a, K_HEADS, -1, "num_attention_heads") : role_key(r, a, K_HEAD_DIM, -1, "head_dim"),
                   "the rotary part of each head (%lld of head_dim %lld) must be even", (long long)a->R, (long long)a->D);
    if (a->f->hybrid) { /* in_proj_qkvz [2 key_dim + 2 value_dim, hidden] */
        int64_t kd, vd;
        if (__builtin_mul_overflow(a->lin_kh, a->lin_kd, &kd) || __builtin_mul_overflow(a->lin_vh, a->lin_vd, &vd) ||
            kd > lim || vd > lim || __builtin_mul_overflow(2 * kd + 2 * vd, a->H, &t) || t > lim)
            return vc__hf_bad(r, a->f->keys[K_LIN_VH].key, "the linear attention's projections are more than 2^48 elements");
        /* in_proj_qkvz's width 2 key_dim + 2 value_dim, a Linear's out_features: at most 2^40 (Qwen3_5GatedDeltaNet's
         * in_proj_qkv, 2 key_dim + value_dim, and in_proj_z, value_dim, held to the same sum) */
        if (2 * kd + 2 * vd > MAX_SIZE)
            return vc__hf_bad(r, a->f->keys[kd >= vd ? K_LIN_KD : K_LIN_VD].key, "%s's width, 2 x %lld + 2 x %lld, is more "
                       "than the limit of 2^40", a->f->gdn_split ? "in_proj_qkv + in_proj_z" : "in_proj_qkvz", (long long)kd,
                       (long long)vd);
        if (__builtin_mul_overflow(2 * kd + vd, a->conv_k, &t) || t > lim) /* conv1d's weight [2 key_dim + value_dim, 1, K] */
            return vc__hf_bad(r, a->f->keys[K_CONV_K].key, "the short convolution's weight (%lld channels x %lld) is more "
                       "than 2^48 elements", (long long)(2 * kd + vd), (long long)a->conv_k);
        if (2 * a->NH * a->D > MAX_SIZE) /* Qwen3NextAttention's q_proj: the query and its gate */
            return vc__hf_bad(r, role_key(r, a, K_HEADS, -1, "num_attention_heads"), "q_proj's width, 2 x %lld heads x %lld, is "
                       "more than the limit of 2^40", (long long)a->NH, (long long)a->D);
    }
    if (a->N > 1024) return vc__hf_bad(r, role_key(r, a, K_LAYERS, -1, "num_hidden_layers"), "%lld layers: more than the limit of 1024", (long long)a->N);
    if (a->f->attn == ATTN_MLA) { /* q_b_proj (or q_proj), kv_b_proj: heads x head dims x their input */
        const int64_t in_q = a->q_lora ? a->q_lora : a->H;
        /* q_a_proj [q_lora_rank, hidden], kv_a_proj_with_mqa [kv_lora_rank + rope, hidden] */
        if (__builtin_mul_overflow(a->q_lora, a->H, &t) || t > lim)
            return vc__hf_bad(r, role_key(r, a, K_Q_LORA, -1, "q_lora_rank"), "q_a_proj (%lld x %lld) is more than 2^48 elements",
                       (long long)a->q_lora, (long long)a->H);
        if (a->kv_lora + a->D > MAX_SIZE || __builtin_mul_overflow(a->kv_lora + a->D, a->H, &t) || t > lim)
            return vc__hf_bad(r, role_key(r, a, K_KV_LORA, -1, "kv_lora_rank"), "kv_a_proj_with_mqa ((%lld + %lld) x %lld) is more than "
                       "2^40 wide or 2^48 elements", (long long)a->kv_lora, (long long)a->D, (long long)a->H);
        if (__builtin_mul_overflow(a->NH, a->qk_nope + a->D, &t) || t > MAX_SIZE || __builtin_mul_overflow(t, in_q, &t) || t > lim)
            return vc__hf_bad(r, role_key(r, a, K_QK_NOPE, -1, "qk_nope_head_dim"), "the query projection (%lld heads x (%lld + %lld) "
                       "x %lld) is more than 2^40 wide or 2^48 elements", (long long)a->NH, (long long)a->qk_nope, (long long)a->D, (long long)in_q);
        if (__builtin_mul_overflow(a->NH, a->qk_nope + a->v_head, &t) || t > MAX_SIZE || __builtin_mul_overflow(t, a->kv_lora, &t) || t > lim ||
            __builtin_mul_overflow(a->NH, a->v_head, &t) || __builtin_mul_overflow(t, a->H, &t) || t > lim)
            return vc__hf_bad(r, role_key(r, a, K_V_HEAD, -1, "v_head_dim"), "kv_b_proj or o_proj (%lld heads x (%lld + %lld) x %lld) "
                       "is more than 2^40 wide or 2^48 elements", (long long)a->NH, (long long)a->qk_nope, (long long)a->v_head,
                       (long long)a->kv_lora);
    }
    /* DeepseekV3MoE / Glm4MoeMoE: shared_experts, an MLP of moe_intermediate_size x n_shared_experts */
    if (a->f->moe == MOE_DEEPSEEK &&
        (__builtin_mul_overflow(a->moe_I, a->n_shared, &t) || t > MAX_SIZE || __builtin_mul_overflow(t, a->H, &t) ||
         __builtin_mul_overflow(t, 3, &t) || t > lim))
        return vc__hf_bad(r, role_key(r, a, K_N_SHARED, -1, "n_shared_experts"), "the shared experts (%lld x %lld wide, hidden %lld) "
                   "are more than 2^40 wide or 2^48 elements", (long long)a->moe_I, (long long)a->n_shared, (long long)a->H);
    if (a->f->moe == MOE_GPT_OSS && a->experts_impl == EXPERTS_PER_EXPERT) {
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert is not modelled for gpt_oss: "
                     "GptOssExperts has stacked weights in every release (transformers 4.x looped over them in training "
                     "and ran every expert on every token in inference); grouped_mm (transformers 5's default) is");
        return -1;
    }
    if (a->f->moe == MOE_GRANITE && (a->experts_impl == EXPERTS_PER_EXPERT || a->act > A_RELU)) {
        /* GraniteMoeParallelExperts: one per-expert loop in every release (the option does not apply) */
        if (a->act > A_RELU)
            return vc__hf_bad(r, "hidden_act", "the experts' activation is modelled for silu, gelu, gelu_pytorch_tanh and relu");
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "does not apply to %s: "
                     "GraniteMoeParallelExperts runs its per-expert loop in every transformers release", r->fam);
        return -1;
    }
    if (a->f->moe && a->experts_impl == EXPERTS_PER_EXPERT && a->E * 3 + 4 > 256)
        return vc__hf_bad(r, a->f->keys[K_EXPERTS].key, "%lld experts: more than the 84 the per-expert modules of transformers 4.x "
                   "hold here", (long long)a->E);
    return check_total(r, a);
}

/* "dtype" (transformers v5) and "torch_dtype": the names vc_hf_dtype (hf.c)
 * turns into the weights' dtype. Another name would be read as no dtype
 * (--serve's bf16); transformers itself fails on a name torch lacks
 * (getattr(torch, name) in PreTrainedModel._set_default_dtype). */
static int check_dtype(rd *r)
{
    static const char *const ok[] = {"float32", "float", "float16", "half", "bfloat16"};
    static const char *const keys[] = {"dtype", "torch_dtype"};
    for (int k = 0; k < 2; k++) {
        const cJSON *v = key_of(r, keys[k]);
        if (!v) continue;
        if (!cJSON_IsString(v)) return vc__hf_bad(r, keys[k], "expected a string such as \"bfloat16\"");
        bool known = false;
        for (int i = 0; i < 5; i++) known |= !strcmp(v->valuestring, ok[i]);
        if (!known) {
            char e[64];
            vc_escape(e, sizeof e, v->valuestring);
            return vc__hf_bad(r, keys[k], "\"%s\" is not a dtype modelled for a checkpoint's weights (float32, float16, bfloat16)", e);
        }
    }
    return 0;
}

int vc__hf_read(rd *r, arch *a)
{
    return read_family(r, a) || check_sizes(r, a) || check_dtype(r) ? -1 : 0;
}
