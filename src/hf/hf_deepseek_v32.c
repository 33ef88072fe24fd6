/*
 * hf_deepseek_v32.c — DeepSeek-V3.2 (model_type deepseek_v32: DeepSeek-V3.2-Exp, DeepSeek-V3.2;
 * issue 31): DeepSeek-V3's modules plus DeepSeek Sparse Attention's indexer in every layer. The
 * keys the row's reading (hf_read.c) cannot check; the indexer's parameters and its forward under transformers
 * are layers/mla.c's (MLAttention with index_n_heads), its memory under vLLM src/engine/serve.c's.
 *
 * Sources:
 *  - huggingface/transformers configuration_deepseek_v32.py @ 008e574391258935f3ecc3035c882e73bbcac419,
 *    DeepseekV32Config: DeepSeek-V3's keys with index_topk 2048, index_head_dim 128, index_n_heads 64;
 *    __post_init__: head_dim = qk_rope_head_dim, mlp_layer_types None -> first_k_dense_replace
 *    "dense" then "sparse", layer_types None -> "deepseek_sparse_attention" everywhere.
 *  - modeling_deepseek_v32.py @ 01f8fa55d98fbd77fb6461c47ae14fc6206f2f87: DeepseekV32Attention is
 *    DeepseekV3Attention's modules with q_a_proj / q_a_layernorm / q_b_proj always used
 *    (q_resid = q_a_layernorm(q_a_proj(x)) feeds the indexer) and self.indexer =
 *    DeepseekV32Indexer: wq_b nn.Linear(q_lora_rank, index_n_heads x index_head_dim, bias=False),
 *    wk nn.Linear(hidden, index_head_dim, bias=False), k_norm nn.LayerNorm(index_head_dim) (weight
 *    and bias), weights_proj nn.Linear(hidden, index_n_heads, bias=False); its no_grad forward
 *    splits q and k into [qk_rope_head_dim, index_head_dim - qk_rope_head_dim], computes float32
 *    scores [B, S, index_n_heads, T], relu, the weighted head sum [B, S, T], topk(index_topk) ->
 *    an int32 [B, S, topk]; under sdpa/eager a bool [B, 1, S, T] index mask joins the causal mask;
 *    DeepseekV32Cache keeps the indexer keys beside the full per-head K/V (update_indexer).
 *    DeepseekV32MoE, DeepseekV32TopkRouter (e_score_correction_bias a buffer), DeepseekV32Experts
 *    (stacked) are DeepSeek-V3's; _keys_to_ignore_on_load_unexpected drops model.layers.61 (MTP).
 *  - vllm-project/vllm vllm/model_executor/models/deepseek_v2.py @ 002d6073aa034d4f5545d45021b0e56d1f3c3593
 *    (it serves deepseek_v32): Indexer (wq_b ReplicatedLinear, wk + weights_proj fused into
 *    wk_weights_proj, k_norm LayerNorm), DeepseekV32IndexerCache: MLAAttentionSpec of one head of
 *    index_head_dim + index_head_dim // 128 x 4 bytes (fp8 values and a float32 scale per 128), dtype
 *    uint8: 132 bytes per token and layer beside the MLA latent; the sparse indexer's buffers
 *    (topk_indices_buffer, the prefill logits).
 * The model is DeepSeek-V3's MLA and MoE layers with the indexer's four parameter tensors in every layer
 * (wq_b reading q_a_layernorm, wk and weights_proj the normed input, k_norm): the exact count. Its memory
 * is modelled under vLLM (--serve: src/engine/serve.c adds the top-k buffer, the profiling workspace and
 * the key cache from the sizes vc__hf_dsa_vllm reads; wk and weights_proj in the model dtype as vLLM's
 * wk_weights_proj, quant_config None); transformers' indexer (--mode train / infer / generate) is layers/mla.c's
 * (dsa_mask: DeepseekV32Indexer.forward, the index mask, DynamicIndexedLayer's key cache), in fp32 and bf16
 * (vc__dsa_check refuses the other precisions, naming --precision).
 * GLM-4.7-Flash's glm4_moe_lite reads its dense layers from mlp_layer_types as DeepSeek-V3.2 does (the check below).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "model.h"
#include "util.h"

static const cJSON *v32_raw(rd *r, const char *key) { return cJSON_GetObjectItemCaseSensitive(r->cfg, key); }

/* An integer key in [min, 2^40], def when absent or null. */
static int v32_int(rd *r, const char *key, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = v32_raw(r, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)MAX_SIZE)
        return vc__hf_bad(r, key, "expected an integer from %lld to 2^40", (long long)min);
    *out = (int64_t)d;
    return 0;
}

/* A per-layer list key's value: NULL where absent or null (*bad 0), else a list of one entry per layer (else an
 * error naming key, *bad -1). */
static const cJSON *v32_layers(rd *r, const char *key, const arch *a, int *bad)
{
    const cJSON *v = v32_raw(r, key);
    *bad = 0;
    if (!v || cJSON_IsNull(v)) return NULL;
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == a->N) return v;
    *bad = vc__hf_bad(r, key, "expected a list of %lld strings (one per layer)", (long long)a->N);
    return NULL;
}

/* A list key: absent or null, or n strings each of which is(i) accepts. */
static int v32_list(rd *r, const char *key, const arch *a, const char *want)
{
    int bad;
    const cJSON *v = v32_layers(r, key, a, &bad);
    if (!v) return bad;
    int64_t i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        const char *ok = want ? want : i < a->first_dense ? "dense" : "sparse";
        if (!cJSON_IsString(e) || strcmp(e->valuestring, ok))
            return vc__hf_bad(r, key, "layer %lld: expected \"%s\" (%s)", (long long)i, ok,
                              want ? "every layer runs DeepSeek Sparse Attention" : "only first_k_dense_replace dense "
                              "layers, then MoE layers, are modelled");
    }
    return 0;
}

/* An integer key of the config (vc_hf_build checked it), def when absent or null. */
static int64_t dsa_key(const cJSON *cfg, const char *key, int64_t def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : def;
}

/* GlmMoeDsaConfig.__post_init__ (configuration_glm_moe_dsa.py @ 008e5743): indexer_types, else from the kwargs
 * index_topk_pattern ("F" full, "S" shared per layer, or a list of the words), else index_topk_freq (default 1, at least
 * 1) and index_skip_topk_offset (default 2): layer i "full" if max(i - offset + 1, 0) % freq == 0. The key that decides
 * (NULL: none, every layer full) and, for layer i, whether it is "shared": GlmMoeDsaAttention (modular_glm_moe_dsa.py
 * @ 01f8fa55) builds no indexer there (self.indexer None) and uses prev_topk_indices, the previous full layer's top-k.
 * The config is one glm_indexers checked. */
static const char *glm_key(const cJSON *cfg)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, "indexer_types"), *p = cJSON_GetObjectItemCaseSensitive(cfg, "index_topk_pattern");
    return t && !cJSON_IsNull(t) ? "indexer_types" : p && !cJSON_IsNull(p) ? "index_topk_pattern" : NULL;
}

bool vc__hf_glm_shared(const cJSON *cfg, int64_t i)
{
    const char *key = glm_key(cfg);
    if (key) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
        if (cJSON_IsString(v)) return (size_t)i < strlen(v->valuestring) && v->valuestring[i] == 'S';
        const cJSON *e = cJSON_GetArrayItem(v, (int)i);
        return cJSON_IsString(e) && !strcmp(e->valuestring, "shared");
    }
    const int64_t freq = dsa_key(cfg, "index_topk_freq", 1), off = dsa_key(cfg, "index_skip_topk_offset", 2);
    return (i - off + 1 > 0 ? i - off + 1 : 0) % (freq > 1 ? freq : 1) != 0;
}

/* The checks: a list (or for index_topk_pattern a string of F / S) of one entry per layer, each "full" or "shared"
 * (the dict lookup {"F": ..., "S": ...}[c] raises KeyError on another letter), and layer 0 full (a shared layer
 * without a previous full one raises ValueError "Shared DSA layers require top-k indices from a previous full indexer
 * layer"); from index_topk_freq and index_skip_topk_offset, layer 0 full. */
static int glm_indexers(rd *r, const arch *a)
{
    const char *key = glm_key(r->cfg);
    if (key) {
        const cJSON *v = v32_raw(r, key);
        if (cJSON_IsString(v) && !strcmp(key, "index_topk_pattern")) { /* a pattern string: one letter a layer */
            if ((int64_t)strlen(v->valuestring) != a->N)
                return vc__hf_bad(r, key, "%zu letters, expected one per layer (%lld)", strlen(v->valuestring), (long long)a->N);
            for (const char *c = v->valuestring; *c; c++)
                if (*c != 'F' && *c != 'S')
                    return vc__hf_bad(r, key, "layer %lld: expected 'F' (full) or 'S' (shared)", (long long)(c - v->valuestring));
        } else {
            if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != a->N)
                return vc__hf_bad(r, key, "expected a list of %lld \"full\" / \"shared\" (one per layer)", (long long)a->N);
            int64_t i = 0;
            for (const cJSON *e = v->child; e; e = e->next, i++)
                if (!cJSON_IsString(e) || (strcmp(e->valuestring, "full") && strcmp(e->valuestring, "shared")))
                    return vc__hf_bad(r, key, "layer %lld: expected \"full\" or \"shared\"", (long long)i);
        }
        if (vc__hf_glm_shared(r->cfg, 0))
            return vc__hf_bad(r, key, "layer 0 is \"shared\": a shared layer reuses the previous full layer's top-k "
                              "(GlmMoeDsaAttention raises ValueError without one)");
        return 0;
    }
    int64_t freq, off;
    if (v32_int(r, "index_topk_freq", 1, 0, &freq) || v32_int(r, "index_skip_topk_offset", 2, -MAX_SIZE, &off)) return -1;
    if (vc__hf_glm_shared(r->cfg, 0))
        return vc__hf_bad(r, "index_skip_topk_offset", "%lld with index_topk_freq %lld makes layer 0 \"shared\" (no previous "
                          "full layer's top-k: GlmMoeDsaAttention raises ValueError)", (long long)off, (long long)freq);
    return 0;
}

int vc__hf_deepseek_v32_read(rd *r, arch *a)
{
    if (a->q_lora == 0) /* the indexer's wq_b reads q_a_layernorm(q_a_proj(x)): DeepseekV32Attention always builds them */
        return vc__hf_bad(r, "q_lora_rank", "null: DeepseekV32Indexer's wq_b reads q_a_layernorm(q_a_proj(x)), which "
                          "needs q_lora_rank");
    /* index_n_heads: DeepseekV32Config's 64, GlmMoeDsaConfig's 32 */
    if (v32_int(r, "index_n_heads", a->f->dsa_glm ? 32 : 64, 1, &a->dsa.nh) || v32_int(r, "index_head_dim", 128, 1, &a->dsa.hd) ||
        v32_int(r, "index_topk", 2048, 1, &a->dsa.topk))
        return -1;
    if (a->dsa.hd < a->D) /* torch.split(q, [qk_rope_head_dim, index_head_dim - qk_rope_head_dim]) */
        return vc__hf_bad(r, "index_head_dim", "%lld is less than qk_rope_head_dim (%lld), the rotary part it splits off",
                          (long long)a->dsa.hd, (long long)a->D);
    int64_t t;
    if (__builtin_mul_overflow(a->dsa.nh, a->dsa.hd, &t) || t > MAX_SIZE || __builtin_mul_overflow(t, a->q_lora, &t) ||
        t > (INT64_C(1) << 48))
        return vc__hf_bad(r, a->dsa.nh >= a->dsa.hd ? "index_n_heads" : "index_head_dim", "wq_b (%lld heads x %lld, from %lld) is more than 2^40 wide or 2^48 elements",
                          (long long)a->dsa.nh, (long long)a->dsa.hd, (long long)a->q_lora);
    if (__builtin_mul_overflow(a->dsa.nh + a->dsa.hd, a->H, &t) || t > (INT64_C(1) << 48))
        return vc__hf_bad(r, "index_head_dim", "wk and weights_proj ((%lld + %lld) x %lld) are more than 2^48 elements",
                          (long long)a->dsa.hd, (long long)a->dsa.nh, (long long)a->H);
    if (a->f->dsa_glm && glm_indexers(r, a)) return -1;
    return v32_list(r, "mlp_layer_types", a, NULL) || v32_list(r, "layer_types", a, "deepseek_sparse_attention") ? -1 : 0;
}

/* GLM-4.7-Flash (model_type glm4_moe_lite, the row in src/hf/hf.c): Glm4MoeLiteDecoderLayer builds Glm4MoeLiteMoE where
 * config.mlp_layer_types[layer_idx] == "sparse", else Glm4MoeLiteMLP (modular_glm4_moe_lite.py @ 008e5743); the class
 * has no first_k_dense_replace, and __post_init__ fills mlp_layer_types with ["dense"] + ["sparse"] *
 * (num_hidden_layers - 1). The leading dense layers are a->first_dense (the MoE test of hf_layers.c, DeepSeek-V3's).
 * vLLM's Glm4MoeLiteDecoderLayer (vllm/model_executor/models/glm4_moe_lite.py @ 055e47c2) reads first_k_dense_replace
 * instead (a MoE layer where layer_idx >= first_k_dense_replace): where the config has it (GLM-4.7-Flash's says 1) it
 * must give the same number, as vramcalc models one model for both. */
int vc__hf_glm4_moe_lite_read(rd *r, arch *a)
{
    int bad;
    const cJSON *v = v32_layers(r, "mlp_layer_types", a, &bad), *fk = v32_raw(r, "first_k_dense_replace");
    int64_t dense = 1, i = 0;
    if (bad) return bad;
    if (v) {
        dense = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++) {
            const bool is_dense = cJSON_IsString(e) && !strcmp(e->valuestring, "dense");
            if (is_dense && dense == i) dense++;
            else if (!cJSON_IsString(e) || strcmp(e->valuestring, "sparse"))
                return vc__hf_bad(r, "mlp_layer_types", "layer %lld: expected \"%s\" (dense layers first, then MoE "
                                  "layers; interleaved ones are not modelled)", (long long)i, dense == i ? "dense\" or \"sparse" : "sparse");
        }
    }
    if (fk && !cJSON_IsNull(fk) && a->first_dense != dense)
        return vc__hf_bad(r, "first_k_dense_replace", "%lld, but Glm4MoeLiteConfig builds %lld dense layer%s from "
                          "mlp_layer_types%s", (long long)a->first_dense, (long long)dense, dense == 1 ? "" : "s",
                          v ? "" : " (absent: one)");
    a->first_dense = dense;
    return 0;
}

bool vc__hf_dsa_vllm(const cJSON *cfg, vc_hf_dsa *d)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    const bool glm = cJSON_IsString(mt) && !strcmp(mt->valuestring, "glm_moe_dsa");
    if (!glm && (!cJSON_IsString(mt) || strcmp(mt->valuestring, "deepseek_v32"))) return false;
    /* DeepseekV32Config's defaults (configuration_deepseek_v32.py @ 008e5743) and GlmMoeDsaConfig's
     * (configuration_glm_moe_dsa.py @ 008e5743), as the family rows read them */
    d->layers = dsa_key(cfg, "num_hidden_layers", glm ? 78 : 61);
    d->nh = dsa_key(cfg, "index_n_heads", glm ? 32 : 64);
    d->hd = dsa_key(cfg, "index_head_dim", 128);
    d->topk = dsa_key(cfg, "index_topk", 2048);
    /* glm_moe_dsa's shared indexer layers. vLLM's DeepseekV2MLAAttention (deepseek_v2.py @ 002d6073, "IndexCache")
     * reads index_topk_pattern (layer i skips where pattern[i] == "S") or index_topk_freq / index_skip_topk_offset
     * (the same rule as GlmMoeDsaConfig's) and builds no Indexer, so no indexer key cache, in a skipping layer; it
     * does not read indexer_types (nor a list pattern): a config that says its shared layers that way is refused
     * under --serve (src/engine/serve.c), naming the key */
    d->shared = 0;
    for (int64_t i = 0; glm && i < d->layers; i++) d->shared += vc__hf_glm_shared(cfg, i);
    const char *key = glm ? glm_key(cfg) : NULL;
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(cfg, "index_topk_pattern");
    d->unread_key = d->shared && key && (strcmp(key, "index_topk_pattern") || !cJSON_IsString(pat)) ? key : NULL;
    return true;
}

vc_status vc__dsa_check(const vc_model *m, const vc_options *o, bool serve, vc_error *err)
{
    if (serve || !m->gen_json || !m->text) return VC_OK;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    vc_hf_dsa d;
    const bool v32 = root && vc__hf_dsa_vllm(root, &d);
    cJSON_Delete(root);
    if (!v32) return VC_OK;
    /* GLM-5.x's shared layers under gradient checkpointing: checkpoint() keeps each shared layer's prev_topk_indices
     * argument to its backward and the recompute reruns the full layers' indexers; not modelled (nor measured) */
    if (d.shared > 0 && o->mode == VC_MODE_TRAIN && m->nregions > 0)
        return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt"), "glm_moe_dsa: %lld \"shared\" indexer layers, whose "
                            "top-k (the previous full layer's) under gradient checkpointing is not modelled", (long long)d.shared);
    /* generate: DynamicIndexedLayer's key cache (cat per step) is modelled; StaticIndexedLayer (--cache static), the
     * other caches' handling of the indexer keys and beam search's reorder_cache (index_select) are not */
    if (o->mode == VC_MODE_GENERATE && o->cache != VC_CACHE_DYNAMIC)
        return vc_set_error(err, VC_ERR_USAGE, O("cache"), "DeepSeek Sparse Attention (deepseek_v32, glm_moe_dsa): the indexer's key cache is modelled as "
                            "DynamicIndexedLayer's (" OV("cache", "dynamic") "), not StaticIndexedLayer's or the other caches'");
    if (o->mode == VC_MODE_GENERATE && o->num_beams > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("num_beams"), "DeepSeek Sparse Attention (deepseek_v32, glm_moe_dsa): beam search's reorder of the indexer's "
                            "key cache (DynamicIndexedLayer.reorder_cache) is not modelled");
    if (o->precision == VC_PREC_FP32 || o->precision == VC_PREC_BF16) return VC_OK;
    /* DeepseekV32PreTrainedModel._keep_in_fp32_modules = ["indexer.weights_proj"] (float16 loads keep it float32) and
     * autocast's casts around the indexer's no_grad linears are not modelled (layers/mla.c dsa_mask) */
    return vc_set_error(err, VC_ERR_USAGE, O("precision"), "DeepSeek Sparse Attention (deepseek_v32, glm_moe_dsa): the indexer under "
                        "transformers is modelled in fp32 and bf16 (float16 keeps indexer.weights_proj float32, "
                        "_keep_in_fp32_modules; autocast's casts around it are not modelled)");
}
