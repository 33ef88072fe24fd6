/*
 * hf_deepseek_v4.c — DeepSeek-V4 (model_type "deepseek_v4", issue 31: DeepSeek-V4-Flash, DeepSeek-V4-Pro).
 * DeepseekV4Config's keys are read and checked (each bad or inconsistent one names its key) and
 * DeepseekV4ForCausalLM's parameters counted exactly, as sum(p.numel() for p in model.parameters()) gives them; its
 * memory under transformers is not modelled (the compressed attention's caches and block biases, the hyper-connections'
 * hc_mult residual streams, the hash-MoE), so vc_hf_build (hf.c) refuses -m train / infer / generate with the count in
 * its one line. vLLM's engine (--serve) is derived from vLLM's source: vc__hf_deepseek_v4_vllm below (the weights per
 * rank, the caches' pages, the buffers), served by src/engine/serve_dsv4.c.
 *
 * Sources:
 *  - huggingface/transformers models/deepseek_v4/configuration_deepseek_v4.py @ 015c078164151a049126942989817713e83a8f3e:
 *    DeepseekV4Config (the class's defaults are DeepSeek-V4-Flash-Base's: vocab_size 129280, hidden_size 4096,
 *    moe_intermediate_size 2048, num_hidden_layers 43, num_attention_heads 64, num_key_value_heads 1, head_dim 512,
 *    q_lora_rank 1024, n_routed_experts 256, n_shared_experts 1, num_experts_per_tok 6, hc_mult 4, o_groups 8,
 *    o_lora_rank 1024, index_n_heads 64, index_head_dim 128, index_topk 512, sliding_window 128, tie_word_embeddings
 *    False, mlp_bias False, attention_bias False, partial_rotary_factor None -> 64 / 512); __post_init__: compress_rates
 *    None -> {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}, the legacy compress_rate_csa /
 *    compress_rate_hca folded in; layer_types None -> the legacy compress_ratios (per layer 0 / 4 / 128 through
 *    _COMPRESS_RATIO_TO_LAYER_TYPE, any other ratio a KeyError) else two "heavily_compressed_attention" then
 *    "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"; both lists cut to num_hidden_layers
 *    (layer_types[:n]); mlp_layer_types None -> num_hash_layers (legacy, default 3) "hash_moe" then "moe";
 *    partial_rotary_factor None -> the legacy qk_rope_head_dim / head_dim, qk_rope_head_dim = int(head_dim * factor);
 *    validate_layer_type: len(layer_types) and len(mlp_layer_types) == num_hidden_layers, entries from
 *    DEEPSEEK_V4_LAYER_TYPES / DEEPSEEK_V4_MLP_LAYER_TYPES.
 *  - models/deepseek_v4/modeling_deepseek_v4.py @ 019760818965c71b0a4d38e95820ee0b6cee4240, the __init__s (parameters;
 *    buffers are not parameters):
 *      DeepseekV4ForCausalLM: model, lm_head Linear(H, V, no bias; tied to embed_tokens by tie_word_embeddings).
 *      DeepseekV4Model: embed_tokens Embedding(V, H), layers, norm RMSNorm(H), hc_head DeepseekV4HyperHead (hc_fn
 *        [n, n*H], hc_base [n], hc_scale [1]); rotary_emb's main / compress inv_freq are buffers (persistent=False).
 *      DeepseekV4DecoderLayer: self_attn, mlp, input_layernorm RMSNorm(H), post_attention_layernorm RMSNorm(H),
 *        attn_hc and ffn_hc DeepseekV4HyperConnection (fn [(2+n)*n, n*H], base [(2+n)*n], scale [3]).
 *      DeepseekV4Attention: q_a_proj Linear(H, q_lora_rank), q_a_norm RMSNorm(q_lora_rank), q_b_proj
 *        Linear(q_lora_rank, heads*head_dim), q_b_norm unweighted (no parameter), kv_proj Linear(H, head_dim) (one
 *        shared K=V head whatever num_key_value_heads), kv_norm RMSNorm(head_dim), o_a_proj DeepseekV4GroupedLinear
 *        (an nn.Linear(heads*head_dim // o_groups, o_groups*o_lora_rank): weight [o_groups*o_lora_rank,
 *        heads*head_dim / o_groups]), o_b_proj Linear(o_groups*o_lora_rank, H), sinks [heads]; all without bias
 *        (attention_bias is read by nothing); compressor by layer_types: none ("sliding_attention"),
 *        DeepseekV4CSACompressor ("compressed_sparse_attention"), DeepseekV4HCACompressor
 *        ("heavily_compressed_attention").
 *      DeepseekV4CSACompressor: kv_proj, gate_proj Linear(H, 2*head_dim), position_bias [compress_rates[csa],
 *        2*head_dim], kv_norm RMSNorm(head_dim), indexer DeepseekV4Indexer: kv_proj, gate_proj Linear(H,
 *        2*index_head_dim), position_bias [compress_rates[csa], 2*index_head_dim], kv_norm RMSNorm(index_head_dim),
 *        q_b_proj Linear(q_lora_rank, index_n_heads*index_head_dim), scorer.weights_proj Linear(H, index_n_heads);
 *        their rotary_emb inv_freq buffers.
 *      DeepseekV4HCACompressor: kv_proj, gate_proj Linear(H, head_dim), position_bias [compress_rates[hca], head_dim],
 *        kv_norm RMSNorm(head_dim); its rotary_emb's buffers.
 *      DeepseekV4SparseMoeBlock (every layer): gate DeepseekV4TopKRouter ("moe": weight [E, H]; e_score_correction_bias
 *        a buffer) or DeepseekV4HashRouter ("hash_moe": weight [E, H]; tid2eid [V, top_k] a buffer), experts
 *        DeepseekV4Experts (gate_up_proj [E, 2*I, H], down_proj [E, H, I]; I = moe_intermediate_size through
 *        attribute_map), shared_experts DeepseekV4MLP (gate_proj / up_proj Linear(H, I), down_proj Linear(I, H),
 *        biases with mlp_bias): one shared expert, n_shared_experts read by nothing.
 *    MTP layers (num_nextn_predict_layers) are not instantiated (_keys_to_ignore_on_load_unexpected "mtp.*").
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

enum { LT_SLIDING, LT_CSA, LT_HCA };

static const char *const layer_type_names[] = {"sliding_attention", "compressed_sparse_attention",
                                               "heavily_compressed_attention"};

int vc__hf_count_int(rd *r, const char *key, int64_t def, int64_t lo, const char *cls, int64_t *out)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    if (!j) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || j->valuedouble != floor(j->valuedouble))
        return vc__hf_bad(r, key, "expected an integer (%s)", cls);
    if (j->valuedouble < (double)lo || j->valuedouble > (double)MAX_SIZE)
        return vc__hf_bad(r, key, "%.17g: expected %lld to %lld", j->valuedouble, (long long)lo, (long long)MAX_SIZE);
    *out = (int64_t)j->valuedouble;
    return 0;
}

/* An int field of DeepseekV4Config (@strict: an int, null refused), def when absent, in [lo, MAX_SIZE]. */
static int int_key(rd *r, const char *key, int64_t def, int64_t lo, int64_t *out)
{
    return vc__hf_count_int(r, key, def, lo, "DeepseekV4Config", out);
}

static int bool_key(rd *r, const char *key, bool *out)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    *out = false;
    if (!j) return 0;
    if (!cJSON_IsBool(j)) return vc__hf_bad(r, key, "expected true or false (DeepseekV4Config)");
    *out = cJSON_IsTrue(j);
    return 0;
}

/* compress_rates (a dict keyed by the compressed layer types) with the legacy compress_rate_csa / compress_rate_hca
 * folded in: rate[LT_CSA], rate[LT_HCA] (position_bias's rows, so at least 1), 0 where a given dict lacks the key
 * (the compressor of such a layer raises KeyError: refused by the caller once the layers are known). */
static int compress_rates(rd *r, int64_t rate[3])
{
    rate[LT_CSA] = 4;
    rate[LT_HCA] = 128;
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(r->cfg, "compress_rates");
    if (cr && !cJSON_IsNull(cr)) {
        rate[LT_CSA] = rate[LT_HCA] = 0;
        if (!cJSON_IsObject(cr))
            return vc__hf_bad(r, "compress_rates", "expected an object {\"compressed_sparse_attention\": m, "
                              "\"heavily_compressed_attention\": m'}");
        const cJSON *e;
        cJSON_ArrayForEach(e, cr)
        {
            int t = !strcmp(e->string, layer_type_names[LT_CSA]) ? LT_CSA
                    : !strcmp(e->string, layer_type_names[LT_HCA]) ? LT_HCA : -1;
            char k[96];
            char esc[48];
            vc_escape(esc, sizeof esc, e->string);
            snprintf(k, sizeof k, "compress_rates.%s", esc);
            if (t < 0)
                return vc__hf_bad(r, k, "not a compressed layer type (compressed_sparse_attention, "
                                  "heavily_compressed_attention): no compressor reads it");
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 1 ||
                e->valuedouble > (double)MAX_SIZE)
                return vc__hf_bad(r, k, "expected a positive integer (the compressor's window, position_bias's rows)");
            rate[t] = (int64_t)e->valuedouble;
        }
    }
    static const char *const legacy[3] = {NULL, "compress_rate_csa", "compress_rate_hca"};
    for (int t = LT_CSA; t <= LT_HCA; t++)
        if (cJSON_GetObjectItemCaseSensitive(r->cfg, legacy[t]) && int_key(r, legacy[t], 0, 1, &rate[t])) return -1;
    return 0;
}

/* A per-layer list key (layer_types, mlp_layer_types; validate_layer_type): absent or null (*found false), else a list
 * of num_hidden_layers entries (what: the entries' name in the error), each one of names[0..n) (expect: the error's
 * text), counted into count[]. */
static int layer_list(rd *r, const char *key, int64_t L, const char *what, const char *const *names, int n,
                      const char *expect, int64_t *count, bool *found)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    *found = v && !cJSON_IsNull(v);
    if (!*found) return 0;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != L)
        return vc__hf_bad(r, key, "expected a list of num_hidden_layers (%lld) %s (validate_layer_type)", (long long)L,
                          what);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        int t = -1;
        for (int k = 0; k < n && cJSON_IsString(e); k++)
            if (!strcmp(e->valuestring, names[k])) t = k;
        if (t < 0) {
            char at[48];
            snprintf(at, sizeof at, "%s[%d]", key, i);
            return vc__hf_bad(r, at, "expected %s", expect);
        }
        count[t]++;
        i++;
    }
    return 0;
}

/* The legacy per-layer compress_ratios (0 sliding, 4 CSA, 128 HCA), cut to num_hidden_layers, counted into n[LT_*]
 * (n zeroed by the caller). */
static int ratio_layers(rd *r, const cJSON *ratios, int64_t L, int64_t n[3])
{
    /* the checkpoints ship num_hidden_layers + 1 (the MTP layer's last), cut to num_hidden_layers */
    if (!cJSON_IsArray(ratios) || cJSON_GetArraySize(ratios) < L)
        return vc__hf_bad(r, "compress_ratios", "expected a list of at least num_hidden_layers (%lld) ratios",
                          (long long)L);
    for (int i = 0; i < L; i++) {
        const cJSON *e = cJSON_GetArrayItem(ratios, i);
        int t = !cJSON_IsNumber(e) ? -1 : e->valuedouble == 0 ? LT_SLIDING : e->valuedouble == 4 ? LT_CSA
                                             : e->valuedouble == 128 ? LT_HCA : -1;
        if (t < 0) {
            char key[48];
            snprintf(key, sizeof key, "compress_ratios[%d]", i);
            return vc__hf_bad(r, key, "expected 0, 4 or 128 (_COMPRESS_RATIO_TO_LAYER_TYPE: another ratio is a "
                              "KeyError)");
        }
        n[t]++;
    }
    return 0;
}

/* layer_types (else the legacy compress_ratios, else the default schedule), counted into n[LT_*]. */
static int layer_types(rd *r, int64_t L, int64_t n[3])
{
    n[LT_SLIDING] = n[LT_CSA] = n[LT_HCA] = 0;
    bool found;
    if (layer_list(r, "layer_types", L, "layer types", layer_type_names, 3, "sliding_attention, "
                   "compressed_sparse_attention or heavily_compressed_attention (DEEPSEEK_V4_LAYER_TYPES)", n, &found))
        return -1;
    if (found) return 0;
    const cJSON *ratios = cJSON_GetObjectItemCaseSensitive(r->cfg, "compress_ratios");
    if (ratios && !cJSON_IsNull(ratios)) return ratio_layers(r, ratios, L, n);
    /* the default: two HCA layers, then for i < L - 2 CSA where i is odd, HCA where even */
    const int64_t rest = L > 2 ? L - 2 : 0;
    n[LT_CSA] = rest / 2;
    n[LT_HCA] = (L < 2 ? L : 2) + (rest + 1) / 2;
    return 0;
}

/* mlp_layer_types: checked only (a hash_moe layer's HashRouter has the TopKRouter's weight; tid2eid is a buffer). */
static int mlp_layer_types(rd *r, int64_t L)
{
    static const char *const names[] = {"hash_moe", "moe"};
    int64_t count[2] = {0, 0};
    bool found;
    if (layer_list(r, "mlp_layer_types", L, "MoE types", names, 2, "hash_moe or moe (DEEPSEEK_V4_MLP_LAYER_TYPES)",
                   count, &found))
        return -1;
    if (found) return 0;
    int64_t hash;
    return int_key(r, "num_hash_layers", 3, 0, &hash);
}

/* partial_rotary_factor (else the legacy qk_rope_head_dim / head_dim, else 64 / 512): the rotary slice
 * int(head_dim * factor) must be an even number of channels within head_dim (apply_rotary_pos_emb rotates the trailing
 * 2 * len(inv_freq) of them). */
static int rotary(rd *r, int64_t D)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(r->cfg, "partial_rotary_factor");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(r->cfg, "qk_rope_head_dim");
    const char *key = p && !cJSON_IsNull(p) ? "partial_rotary_factor" : q ? "qk_rope_head_dim" : NULL;
    double rope = floor(64.0 / 512.0 * (double)D);
    if (key && !strcmp(key, "partial_rotary_factor")) {
        if (!cJSON_IsNumber(p) || !isfinite(p->valuedouble) || p->valuedouble <= 0 || p->valuedouble > 1)
            return vc__hf_bad(r, key, "expected a number in (0, 1] (the fraction of head_dim rotated)");
        rope = floor((double)D * p->valuedouble);
    } else if (key) {
        int64_t v;
        if (int_key(r, key, 0, 1, &v)) return -1;
        rope = (double)v;
    }
    if (rope < 2 || rope > (double)D || fmod(rope, 2) != 0)
        return vc__hf_bad(r, key ? key : "head_dim", "the rotary slice int(head_dim * partial_rotary_factor) = %.0f "
                          "of head_dim %lld: expected an even number from 2 to head_dim", rope, (long long)D);
    return 0;
}

int vc__hf_deepseek_v4_count(rd *r, int64_t *params)
{
    int64_t V, H, I, L, NH, KV, D, QR, E, NS, K, HC, G, OR, INH, IHD, W, TOPK;
    if (int_key(r, "vocab_size", 129280, 1, &V) || int_key(r, "hidden_size", 4096, 1, &H) ||
        int_key(r, "moe_intermediate_size", 2048, 1, &I) || int_key(r, "num_hidden_layers", 43, 1, &L) ||
        int_key(r, "num_attention_heads", 64, 1, &NH) || int_key(r, "num_key_value_heads", 1, 1, &KV) ||
        int_key(r, "head_dim", 512, 1, &D) || int_key(r, "q_lora_rank", 1024, 1, &QR) ||
        int_key(r, "n_routed_experts", 256, 1, &E) || int_key(r, "n_shared_experts", 1, 0, &NS) ||
        int_key(r, "num_experts_per_tok", 6, 1, &K) || int_key(r, "hc_mult", 4, 1, &HC) ||
        int_key(r, "o_groups", 8, 1, &G) || int_key(r, "o_lora_rank", 1024, 1, &OR) ||
        int_key(r, "index_n_heads", 64, 1, &INH) || int_key(r, "index_head_dim", 128, 1, &IHD) ||
        int_key(r, "sliding_window", 128, 1, &W) || int_key(r, "index_topk", 512, 1, &TOPK))
        return -1;
    if (KV != 1)
        return vc__hf_bad(r, "num_key_value_heads", "%lld: DeepseekV4Attention is shared-KV MQA, kv_proj one head of "
                          "head_dim whatever the key (num_key_value_groups = num_attention_heads)", (long long)KV);
    if (NS != 1)
        return vc__hf_bad(r, "n_shared_experts", "%lld: DeepseekV4SparseMoeBlock builds one shared expert "
                          "(DeepseekV4MLP of moe_intermediate_size) whatever the key", (long long)NS);
    if (K > E)
        return vc__hf_bad(r, "num_experts_per_tok", "%lld: more than n_routed_experts (%lld) (the router's topk)",
                          (long long)K, (long long)E);
    if (HC > 64) /* hyper-connections: fn is [(2 + n) * n, n * hidden] */
        return vc__hf_bad(r, "hc_mult", "%lld: expected 1 to 64 residual streams", (long long)HC);
    bool tie, mlp_bias, attn_bias;
    if (bool_key(r, "tie_word_embeddings", &tie) || bool_key(r, "mlp_bias", &mlp_bias) ||
        bool_key(r, "attention_bias", &attn_bias))
        return -1;
    if (attn_bias)
        return vc__hf_bad(r, "attention_bias", "true: DeepseekV4Attention's projections have no bias whatever the key");
    const cJSON *sf = cJSON_GetObjectItemCaseSensitive(r->cfg, "scoring_func");
    if (sf && (!cJSON_IsString(sf) || (strcmp(sf->valuestring, "sqrtsoftplus") && strcmp(sf->valuestring, "softmax") &&
                                      strcmp(sf->valuestring, "sigmoid"))))
        return vc__hf_bad(r, "scoring_func", "expected sqrtsoftplus, softmax or sigmoid");
    int64_t rate[3], n[3];
    if (compress_rates(r, rate) || layer_types(r, L, n) || mlp_layer_types(r, L) || rotary(r, D)) return -1;
    for (int t = LT_CSA; t <= LT_HCA; t++)
        if (n[t] && !rate[t]) {
            char k[64];
            snprintf(k, sizeof k, "compress_rates.%s", layer_type_names[t]);
            return vc__hf_bad(r, k, "missing: the %s layers' compressor reads it (a KeyError)", layer_type_names[t]);
        }

    /* The sum, once in long double (a config whose count passes 2^62 is refused naming hidden_size), then exactly in
     * int64_t. Per layer: DeepseekV4Attention (q_a_proj, q_a_norm, q_b_proj, kv_proj, kv_norm, o_a_proj, o_b_proj,
     * sinks), DeepseekV4SparseMoeBlock (the router's weight, the experts' gate_up_proj and down_proj, the shared
     * DeepseekV4MLP), input_layernorm and post_attention_layernorm, attn_hc and ffn_hc; a CSA layer's compressor and
     * indexer, an HCA layer's compressor; the model's embed_tokens, lm_head (untied), norm and hc_head. */
#define V4_COUNT(T)                                                                                                    \
    ((T)V * H * (tie ? 1 : 2) + H + (T)HC * HC * H + HC + 1 +                                                          \
     (T)L * ((T)H * QR + QR + (T)QR * NH * D + (T)H * D + D + (T)OR * NH * D + (T)G * OR * H + NH +                    \
             (T)E * H + (T)3 * E * I * H + (T)3 * H * I + (mlp_bias ? (T)2 * I + H : 0) + (T)2 * H +                   \
             (T)2 * ((T)(2 + HC) * HC * HC * H + (2 + HC) * HC + 3)) +                                                 \
     (T)n[LT_CSA] * ((T)4 * H * D + (T)rate[LT_CSA] * 2 * D + D + (T)4 * H * IHD + (T)rate[LT_CSA] * 2 * IHD + IHD +  \
                     (T)QR * INH * IHD + (T)H * INH) +                                                                 \
     (T)n[LT_HCA] * ((T)2 * H * D + (T)rate[LT_HCA] * D + D))
    const long double total = V4_COUNT(long double);
    if (total > 0x1p62L) return vc__hf_bad(r, "hidden_size", "the parameters (%.3Le) pass 2^62", total);
    /* o_a_proj's in_features heads x head_dim // o_groups (no overflow: heads x head_dim x o_lora_rank is in the sum) */
    if ((NH * D) % G)
        return vc__hf_bad(r, "o_groups", "%lld does not divide num_attention_heads x head_dim (%lld): the grouped "
                          "output projection splits the heads' outputs into o_groups groups", (long long)G,
                          (long long)(NH * D));
    *params = V4_COUNT(int64_t);
#undef V4_COUNT
    return 0;
}

/* What vLLM allocates for DeepSeek-V4 beside the weights (vc_hf_v4_vllm in hf_arch.h), from vllm-project/vllm:
 *  - vllm/model_executor/models/deepseek_v4.py @ 023da1fc828eb07787cf0734a1ba32f0a0f11887: DeepseekV4Attention reads
 *    compress_ratio = max(1, config.compress_ratios[layer_id]) (the legacy list: required here) and
 *    config.quantization_config["scale_fmt"] (a KeyError without it: a bf16 config is refused); an indexer only where
 *    the ratio is 4. DeepseekV4Model.__init__: topk_indices_buffer = torch.empty(max_num_batched_tokens, index_topk,
 *    int32) and, on the last pipeline rank, _mtp_hidden_buffer = torch.empty(max_num_batched_tokens, hc_mult x
 *    hidden_size, model dtype) (bf16 here), both allocated with the model;
 *  - vllm/model_executor/layers/deepseek_v4_attention.py @ 0a291a2e1074b13971361df76245548a4ea4a77d:
 *    DeepseekV4MLAAttention asserts an fp8 cache ("DeepseekV4 only supports fp8 kv-cache format") and turns it into
 *    fp8_ds_mla; its get_kv_cache_spec is None for a sliding-only layer, else an MLAAttentionSpec(block_size,
 *    head_size head_dim, uint8, compress_ratio, fp8_ds_mla, alignment 576, model_version "deepseek_v4");
 *    DeepseekV4Indexer's k_cache (DeepseekV4IndexerCache): an MLAAttentionSpec of head_size index_head_dim +
 *    index_head_dim / 128 x 4 (132) uint8, compress_ratio 4, alignment 576; the profiling run (attention_impl, no
 *    metadata) reserves the workspace (PREFILL_CHUNK_SIZE 4, M, head_dim) bf16, M = cdiv(max_model_len, ratio) (0 for
 *    a sliding-only layer) + window_size + max_num_batched_tokens, the largest kept by the workspace manager;
 *  - vllm/v1/attention/backends/mla/sparse_swa.py @ 03dc564956172b5b2835be7a84ddde5de1d5dba6: every layer's
 *    DeepseekV4SWACache, a SlidingWindowMLASpec of block_size 64, sliding_window config.sliding_window, alignment 576
 *    under fp8_ds_mla; DeepseekSparseSWABackend.get_preferred_block_size: 256 (the "C4A KV block shape [256//4,
 *    head_dim]" its comment and deepseek_compressor.py's name: the block size of the compressed specs);
 *  - vllm/model_executor/layers/deepseek_compressor.py @ 0de10a276eced6036e9752a223cba53c996d31cd: each compressor
 *    (the CSA and HCA layers' own, the indexer's of head_dim index_head_dim) has a CompressorStateCache: a
 *    SlidingWindowMLASpec of block_size 4 (ratio 4) or 8 (ratio 128), head_size 2 x coff x head_dim float32 (coff 2
 *    where the ratio is 4, else 1), sliding_window coff x ratio, alignment 576;
 *  - vllm/v1/kv_cache_interface.py, a copy seen through the search tool (repository and commit not shown; the stored
 *    vllm-project/vllm copies @ 001cabc1 and @ bc8282e6 predate these fields): MLAAttentionSpec / SlidingWindowMLASpec
 *    .real_page_size_bytes = storage_block_size (block_size // compress_ratio) x 584 for deepseek_v4 under fp8_ds_mla,
 *    else storage_block_size x heads x head_size x dtype size; _apply_alignment_padding: the page rounded up to the
 *    alignment. */
#define V4_BLOCK 256
#define V4_SWA_BLOCK 64
#define V4_TOKEN_BYTES 584 /* 448 fp8 NoPE + 64 bf16 RoPE + 7 UE8M0 scales + 1 pad */
#define V4_ALIGN 576
#define V4_PREFILL_CHUNK 4

static int64_t v4_page(int64_t bytes) { return (bytes + V4_ALIGN - 1) / V4_ALIGN * V4_ALIGN; }

/* An fp8 block-quantized linear layer of vLLM (Fp8LinearMethod, weight_block_size [128, 128]: the fp8 weight [out, in]
 * and its float32 weight_scale_inv [cdiv(out, 128), cdiv(in, 128)], as src/engine/serve.c reads it for DeepSeek-V3.2's
 * indexer): bytes */
static int64_t fp8_linear(int64_t out, int64_t in) { return out * in + (out + 127) / 128 * ((in + 127) / 128) * 4; }

static int64_t rup(int64_t v, int64_t m) { return m > 1 ? (v + m - 1) / m * m : v; }

/* One compressor's parameters (deepseek_compressor.py @ 0de10a27 DeepseekCompressor.__init__): ape float32 [ratio, coff x
 * head_dim], fused_wkv_wgate MergedColumnParallelLinear(hidden, [coff x head_dim] x 2, quant_config=None, disable_tp):
 * the model's bf16 on every rank, norm RMSNorm(head_dim) bf16; coff 2 where the ratio is 4. Bytes. */
static int64_t compressor(int64_t ratio, int64_t d, int64_t H)
{
    const int64_t coff = ratio == 4 ? 2 : 1;
    return ratio * coff * d * 4 + 2 * coff * d * H * 2 + d * 2;
}

/* The weights per rank, from vllm-project/vllm vllm/model_executor/models/deepseek_v4.py @ 023da1fc (bytes; bf16 the
 * model dtype; T tensor_parallel_size):
 *  - DeepseekV4ForCausalLM.load_weights: AutoWeightsLoader(skip_substrs=["mtp."]): the checkpoint's MTP layer is not
 *    loaded (the draft model is built only with speculative decoding, which --serve does not model);
 *  - DeepseekV4Model: embed_tokens VocabParallelEmbedding and lm_head ParallelLMHead (vocab padded to 64,
 *    DEFAULT_VOCAB_PADDING_SIZE, split T ways; no quant_config on the head: bf16), norm RMSNorm(H), hc_head_fn float32
 *    [hc, hc x H], hc_head_base [hc], hc_head_scale [1];
 *  - DeepseekV4DecoderLayer: attn_norm RMSNorm(H); hc_{attn,ffn}_{fn,base,scale} float32 [(2 + hc) hc, hc x H],
 *    [(2 + hc) hc], [3];
 *  - DeepseekV4Attention: attn_sink float32 [max(heads / T, 64)]; fused_wqa_wkv MergedColumnParallelLinear(H, [q_lora_rank,
 *    head_dim], disable_tp) fp8 block; q_norm RMSNorm(q_lora_rank), kv_norm RMSNorm(head_dim); wq_b
 *    ColumnParallelLinear(q_lora_rank, heads x head_dim) fp8 block; wo_a ColumnParallelLinear(heads x head_dim / o_groups,
 *    o_groups x o_lora_rank) fp8 block; wo_b RowParallelLinear(o_groups x o_lora_rank, H) fp8 block; a compressor where
 *    the ratio is above 1 (deepseek_v4_attention.py @ 0a291a2e DeepseekV4MultiHeadLatentAttentionWrapper); the indexer
 *    where it is 4 (DeepseekV4Indexer: wq_b ReplicatedLinear(q_lora_rank, index_head_dim x index_n_heads) fp8 block,
 *    weights_proj ReplicatedLinear(H, index_n_heads, quant_config=None) bf16, k_norm LayerNorm(index_head_dim): weight
 *    and bias float32 (layernorm.py, as serve.c reads DeepSeek-V3.2's), its compressor of head_dim index_head_dim);
 *  - DeepseekV4MoE: norm_gate NormGateLinear(H, experts) (norm weight [H] and gate weight [experts, H]; norm_gate_linear.py
 *    not read: bf16 taken), tid2eid int32 [vocab, top-k] on the first num_hash_layers layers (hash_indices_dtype int32
 *    without MegaMoE) else e_score_correction_bias float32 [experts] (topk_method noaux_tc); shared_experts
 *    DeepseekV4MLP(H, moe_intermediate_size x n_shared_experts): gate_up_proj MergedColumnParallelLinear and down_proj
 *    RowParallelLinear, fp8 block; experts FusedMoE, every expert on every rank with moe_intermediate_size / T (no
 *    expert parallelism), by DeepseekV4FP8Config.get_quant_method: expert_dtype "fp4" (the default) Mxfp4MoEMethod
 *    (src/policy/quant.c mxfp4_vllm_tensors: w13 / w2 uint8 [E, 2 I_pad, H_pad / 2] and [E, H_pad, I_pad / 2], their
 *    scales one byte per 32, the biases [E, 2 I_pad] and [E, H_pad] of rank->bias_bytes), "fp8" Fp8MoEMethod (fp8 block
 *    weights and float32 block scales).
 * Not counted: the rotary embeddings' cos/sin caches (get_rope with DeepSeek-V4's deepseek_yarn parameters: that class
 * was not read). */
int vc__hf_deepseek_v4_vllm(rd *r, const vc_hf_v4_rank *rank, int64_t max_num_batched_tokens, int64_t max_model_len,
                            vc_hf_v4_vllm *out)
{
    memset(out, 0, sizeof *out);
    int64_t params, L, H, D, IHD, TOPK, HC, W, rope, V, I, NH, QR, E, K, G, OR, INH, NS, HASH;
    if (vc__hf_deepseek_v4_count(r, &params)) return -1;
    if (int_key(r, "num_hidden_layers", 43, 1, &L) || int_key(r, "hidden_size", 4096, 1, &H) ||
        int_key(r, "head_dim", 512, 1, &D) || int_key(r, "index_head_dim", 128, 1, &IHD) ||
        int_key(r, "index_topk", 512, 1, &TOPK) || int_key(r, "hc_mult", 4, 1, &HC) ||
        int_key(r, "sliding_window", 128, 1, &W) || int_key(r, "qk_rope_head_dim", 64, 1, &rope) ||
        int_key(r, "vocab_size", 129280, 1, &V) || int_key(r, "moe_intermediate_size", 2048, 1, &I) ||
        int_key(r, "num_attention_heads", 64, 1, &NH) || int_key(r, "q_lora_rank", 1024, 1, &QR) ||
        int_key(r, "n_routed_experts", 256, 1, &E) || int_key(r, "num_experts_per_tok", 6, 1, &K) ||
        int_key(r, "o_groups", 8, 1, &G) || int_key(r, "o_lora_rank", 1024, 1, &OR) ||
        int_key(r, "index_n_heads", 64, 1, &INH) || int_key(r, "n_shared_experts", 1, 0, &NS) ||
        int_key(r, "num_hash_layers", 3, 0, &HASH))
        return -1;
    const cJSON *qc = cJSON_GetObjectItemCaseSensitive(r->cfg, "quantization_config");
    if (!cJSON_IsObject(qc) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(qc, "scale_fmt")))
        return vc__hf_bad(r, "quantization_config", "vLLM's DeepseekV4Attention reads quantization_config[\"scale_fmt\"] "
                          "(deepseek_v4.py @ 023da1fc): an fp8 checkpoint's config is needed");
    /* DeepseekV4FP8Config.override_quantization_method: quant_method fp8 (or deepseek_v4_fp8) on a deepseek_v4 model */
    const cJSON *qm = cJSON_GetObjectItemCaseSensitive(qc, "quant_method");
    if (qm && (!cJSON_IsString(qm) || (strcmp(qm->valuestring, "fp8") && strcmp(qm->valuestring, "deepseek_v4_fp8"))))
        return vc__hf_bad(r, "quantization_config.quant_method", "expected \"fp8\" (vLLM's DeepseekV4FP8Config: "
                          "block-quantized fp8 linears)");
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(qc, "weight_block_size");
    if (bs && !(cJSON_IsArray(bs) && cJSON_GetArraySize(bs) == 2 && cJSON_IsNumber(cJSON_GetArrayItem(bs, 0)) &&
                cJSON_GetArrayItem(bs, 0)->valuedouble == 128 && cJSON_IsNumber(cJSON_GetArrayItem(bs, 1)) &&
                cJSON_GetArrayItem(bs, 1)->valuedouble == 128))
        return vc__hf_bad(r, "quantization_config.weight_block_size", "expected [128, 128] (DeepSeek-V4's fp8 blocks)");
    /* DeepseekV4FP8Config.expert_dtype: getattr(hf_config, "expert_dtype", "fp4"), else a ValueError */
    const cJSON *ed = cJSON_GetObjectItemCaseSensitive(r->cfg, "expert_dtype");
    if (ed && (!cJSON_IsString(ed) || (strcmp(ed->valuestring, "fp4") && strcmp(ed->valuestring, "fp8"))))
        return vc__hf_bad(r, "expert_dtype", "expected \"fp4\" or \"fp8\" (_DEEPSEEK_V4_EXPERT_DTYPES)");
    const bool fp4 = !ed || !strcmp(ed->valuestring, "fp4");
    const cJSON *ratios = cJSON_GetObjectItemCaseSensitive(r->cfg, "compress_ratios");
    if (!ratios || cJSON_IsNull(ratios))
        return vc__hf_bad(r, "compress_ratios", "missing: vLLM's DeepseekV4Attention reads compress_ratios[layer_id] "
                          "(deepseek_v4.py @ 023da1fc), not layer_types");
    if (ratio_layers(r, ratios, L, out->layers)) return -1;
    /* the fp8_ds_mla token of 584 bytes is FlashMLA's 448 + 64 layout; the compressors' fused kernels take head_dim
     * 512 (the attention's) and 128 (the indexer's) alone */
    if (D != 512 || rope != 64)
        return vc__hf_bad(r, D != 512 ? "head_dim" : "qk_rope_head_dim", "%lld: vLLM's fp8_ds_mla cache is laid out "
                          "for head_dim 512 with qk_rope_head_dim 64 (448 fp8 + 64 bf16 + 8 scale bytes)",
                          (long long)(D != 512 ? D : rope));
    if (IHD != 128)
        return vc__hf_bad(r, "index_head_dim", "%lld: vLLM's indexer compressor supports 128 alone "
                          "(DeepseekCompressor: \"Unsupported head_dim for fused quant+cache\")", (long long)IHD);
    if (NH > 128 * rank->tp)
        return vc__hf_bad(r, "num_attention_heads", "%lld: more than 128 a rank (DeepseekV4MultiHeadLatentAttention"
                          "Wrapper: FlashMLA's sparse kernel takes 64 or 128 heads)", (long long)NH);
    /* the split: DeepseekV4Attention asserts heads % tp == 0 and takes o_groups // tp groups; _init_fused_moe_experts
     * asserts n_routed_experts % tp == 0; the fp8 block linears need each rank's output slice in whole 128-blocks
     * (ColumnParallelLinear's and RowParallelLinear's partitions of wq_b, wo_a, wo_b and the shared expert) */
    const int64_t T = rank->tp;
    const char *why = NH % T ? "num_attention_heads" : G % T ? "o_groups" : E % T ? "n_routed_experts"
                      : (NH * D / T) % 128 || (G * OR / T) % 128 ? "o_lora_rank" : (I * NS / T) % 128 ? "moe_intermediate_size"
                      : NULL;
    if (why) {
        vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "%lld: vLLM cannot split DeepSeek-V4's %s that many ways (deepseek_v4.py "
                     "@ 023da1fc: heads, o_groups and experts divide by tensor_parallel_size, and each rank's fp8 block "
                     "linears whole 128-blocks)", (long long)T, why);
        return -1;
    }
    out->block_size = V4_BLOCK;
    out->page_swa = v4_page((int64_t)V4_SWA_BLOCK * V4_TOKEN_BYTES);
    out->window = W;
    out->page_compressed[LT_CSA] = v4_page(V4_BLOCK / 4 * V4_TOKEN_BYTES);
    out->page_compressed[LT_HCA] = v4_page(V4_BLOCK / 128 * V4_TOKEN_BYTES);
    out->page_indexer = v4_page(V4_BLOCK / 4 * (IHD + IHD / 128 * 4));
    out->page_state[LT_CSA] = v4_page(4 * 2 * 2 * D * 4);
    out->page_state[LT_HCA] = v4_page(8 * 2 * 1 * D * 4);
    out->page_indexer_state = v4_page(4 * 2 * 2 * IHD * 4);
    out->per_block = out->layers[LT_CSA] * (out->page_compressed[LT_CSA] + out->page_indexer) +
                     out->layers[LT_HCA] * out->page_compressed[LT_HCA];
    out->topk_buffer = max_num_batched_tokens * TOPK * 4;
    out->mtp_buffer = max_num_batched_tokens * HC * H * 2;
    /* the largest dummy-run workspace: the smallest ratio present (a sliding-only layer gathers no compressed keys) */
    const int64_t ratio = out->layers[LT_CSA] ? 4 : out->layers[LT_HCA] ? 128 : 0;
    const int64_t M = (ratio ? (max_model_len + ratio - 1) / ratio : 0) + W + max_num_batched_tokens;
    out->prefill_workspace = (int64_t)V4_PREFILL_CHUNK * M * D * 2;

    /* the weights (the sources above); the count has bounded every product by 2^62 */
    const int64_t Vr = rup(V, 64) / T, mix = (2 + HC) * HC, In = I * NS / T;
    const int64_t Ip = rup(I / T, rank->ipad), Hp = rup(H, rank->hpad);
    int64_t layer = (NH / T > 64 ? NH / T : 64) * 4 + fp8_linear(QR + D, H) + QR * 2 + D * 2 + fp8_linear(NH * D / T, QR) +
                    fp8_linear(G * OR / T, NH * D / G) + fp8_linear(H, G * OR / T) + H * 2 + 2 * (mix * HC * H + mix + 3) * 4 +
                    H * 2 + E * H * 2 + fp8_linear(2 * In, H) + fp8_linear(H, In);
    out->experts = fp4 ? E * (2 * Ip * (Hp / 2 + Hp / 32) + Hp * (Ip / 2 + Ip / 32) + (2 * Ip + Hp) * rank->bias_bytes)
                       : E * (fp8_linear(2 * (I / T), H) + fp8_linear(H, I / T));
    out->experts *= L;
    out->weights = 2 * Vr * H * 2 + H * 2 + (HC * HC * H + HC + 1) * 4 + L * layer + out->experts +
                   (HASH < L ? HASH : L) * V * K * 4 + (L - (HASH < L ? HASH : L)) * E * 4 +
                   out->layers[LT_CSA] * compressor(4, D, H) +
                   out->layers[LT_HCA] * compressor(128, D, H) +
                   out->layers[LT_CSA] * (fp8_linear(IHD * INH, QR) + INH * H * 2 + 2 * IHD * 4 + compressor(4, IHD, H));
    out->ihd = IHD, out->hidden = H, out->heads = NH, out->head_dim = D, out->q_lora = QR, out->o_groups = G;
    out->o_lora = OR, out->n_experts = E, out->topk = K, out->inter = I, out->vocab = V, out->hc = HC;
    return 0;
}
