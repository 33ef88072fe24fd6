/*
 * hf_gemma4.c — Gemma 4 (model_type gemma4_text, and gemma4 through text_config; issue 31):
 * the keys of Gemma4TextConfig that the row's generic reading (hf_read.c) cannot check, the
 * towers of Gemma4ForConditionalGeneration (vision_config, audio_config), and the parameters.
 *
 * Sources, huggingface/transformers:
 *  - configuration_gemma4.py (v5.5: the release whose modeling file is below; its Gemma4TextConfig
 *    holds num_global_key_value_heads None and global_head_dim 512 as fields), Gemma4TextConfig:
 *    vocab_size 262144, hidden_size 2304, intermediate_size 9216, num_hidden_layers 30,
 *    num_attention_heads 8, num_key_value_heads 4, head_dim 256, hidden_activation
 *    gelu_pytorch_tanh, tie_word_embeddings True, attention_bias False, sliding_window 512,
 *    use_bidirectional_attention None ("all" / "vision"), vocab_size_per_layer_input 262144,
 *    hidden_size_per_layer_input 256, attention_k_eq_v False, num_kv_shared_layers 0,
 *    enable_moe_block False, use_double_wide_mlp False, num_experts / top_k_experts /
 *    moe_intermediate_size None; __post_init__: layer_types None -> "sliding_attention" if
 *    (i + 1) % 6 else "full_attention", and the last layer forced to "full_attention" whatever
 *    the config lists. Gemma4VisionConfig: hidden_size 768, intermediate_size 3072,
 *    num_hidden_layers 16, num_attention_heads 12, num_key_value_heads 12, head_dim 64,
 *    patch_size 16, position_embedding_size 10240. Gemma4AudioConfig: hidden_size 1024,
 *    num_hidden_layers 12, num_attention_heads 8, subsampling_conv_channels [128, 32],
 *    conv_kernel_size 5, output_proj_dims 1536. Gemma4Config: text_config None ->
 *    Gemma4TextConfig(), vision_config / audio_config None -> no tower.
 *  - modeling_gemma4.py @ 0246b4f3335464614ef1de66531f9131a44ec801:
 *    Gemma4TextAttention.__init__: is_sliding = layer_types[i] == "sliding_attention";
 *    head_dim = global_head_dim if not is_sliding and global_head_dim else head_dim;
 *    use_alternative_attention = attention_k_eq_v and not is_sliding, its kv heads
 *    num_global_key_value_heads (else num_key_value_heads); first_kv_shared_layer_idx =
 *    num_hidden_layers - num_kv_shared_layers, is_kv_shared_layer = layer_idx >= first >= 0;
 *    q_proj [heads x head_dim, H] and q_norm (head_dim) always; k_norm, v_norm (with_scale=False:
 *    no weight), k_proj and v_proj (None under use_alternative_attention: the keys are the values)
 *    only when the layer is not kv-shared; o_proj; every projection with attention_bias.
 *    forward: a kv-shared layer reads shared_kv_states[layer_type], stored by the last earlier
 *    layer of its type (store_full_length_kv): a type none of the first layers has fails.
 *    Gemma4TextMLP: intermediate_size x 2 when use_double_wide_mlp and layer_idx >= first > 0;
 *    gate_proj, up_proj, down_proj without bias. Gemma4TextRouter: norm (no weight), proj
 *    nn.Linear(H, num_experts, bias=False), scale [H], per_expert_scale [num_experts].
 *    Gemma4TextExperts: gate_up_proj [E, 2 moe_intermediate_size, H], down_proj
 *    [E, H, moe_intermediate_size]. Gemma4TextDecoderLayer: self_attn, mlp, input_layernorm,
 *    post_attention_layernorm, pre_feedforward_layernorm, post_feedforward_layernorm (Gemma4RMSNorm:
 *    a weight of H), layer_scalar (a buffer); with hidden_size_per_layer_input (truthy):
 *    per_layer_input_gate nn.Linear(H, P), per_layer_projection nn.Linear(P, H),
 *    post_per_layer_input_norm (H); with enable_moe_block: router, experts and
 *    post_feedforward_layernorm_1, post_feedforward_layernorm_2, pre_feedforward_layernorm_2 --
 *    the dense MLP runs beside the experts on every layer. Gemma4TextModel: embed_tokens [V, H],
 *    layers, norm (H); with hidden_size_per_layer_input: embed_tokens_per_layer
 *    [vocab_size_per_layer_input, N x P], per_layer_model_projection nn.Linear(H, N x P),
 *    per_layer_projection_norm (P). Gemma4ForCausalLM: lm_head [V, H], tied to embed_tokens
 *    (_tied_weights_keys) under its config's tie_word_embeddings (Gemma4ForConditionalGeneration: Gemma4Config's,
 *    True when absent, whatever text_config says). Gemma4VisionModel: patch_embedder (input_proj nn.Linear(3 x
 *    patch_size^2, H), position_embedding_table [2, position_embedding_size, H]), encoder.layers
 *    (Gemma4VisionAttention: q/k/v/o Gemma4ClippableLinear without bias -- the clip bounds are
 *    buffers --, q_norm and k_norm of head_dim, v_norm without weight; Gemma4VisionMLP gate/up/down;
 *    four norms of H). Gemma4AudioModel: subsample_conv_projection (layer0 nn.Conv2d(1, c0, 3x3,
 *    bias=False) + nn.LayerNorm(c0, bias=False), layer1 nn.Conv2d(c0, c1, 3x3) + LayerNorm(c1),
 *    input_proj_linear nn.Linear((c0 // 4) x c1, H)), layers (Gemma4AudioLayer: feed_forward1 and
 *    feed_forward2 = ffw_layer_1 H -> 4H, ffw_layer_2 4H -> H, pre_ and post_layer_norm; self_attn
 *    = q/k/v_proj H -> heads x (H // heads), post H -> H, relative_k_proj, per_dim_scale
 *    [H // heads]; lconv1d = linear_start H -> 2H, linear_end H -> H, depthwise_conv1d
 *    nn.Conv1d(H, H, conv_kernel_size, groups=H, bias=False), pre_layer_norm, conv_norm;
 *    norm_pre_attn, norm_post_attn, norm_out), output_proj nn.Linear(H, output_proj_dims,
 *    bias=True). Gemma4MultimodalEmbedder: embedding_projection nn.Linear(output_proj_dims (audio)
 *    or hidden_size (vision), text hidden_size, bias=False), its norm without weight.
 *
 * The layers (vc__hf_gemma4_write, below): the sliding and full layers with their own head widths,
 * kv heads and rotary pairs, keys that are the values (k_eq_v, v_norm), the MoE block beside the
 * dense MLP, the per-layer embeddings' [B, L, N, P] inputs, the kv-shared layers and the
 * shared_kv_states dict every model fills (with checkpointed layers living through backward:
 * src/engine/autograd.c kvd_*); the towers' weights loaded frozen, not run. --serve --tp: vLLM's split
 * (hf_tp.c), with the per-layer inputs' all-gather (below). Refused (vc__hf_gemma4_unmodelled): --tp in training.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static bool is_int(const cJSON *v) { return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble); }

/* An integer key in [min, 2^40] of obj: def when absent, *isnull set (and def) when null. */
static int g4_int(rd *r, const cJSON *obj, const char *prefix, const char *key, int64_t def, int64_t min, int64_t *out,
                  bool *isnull)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    char path[160];
    if (isnull) *isnull = cJSON_IsNull(v);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    if (!is_int(v) || v->valuedouble < (double)min || v->valuedouble > (double)MAX_SIZE) {
        if (prefix) {
            snprintf(path, sizeof path, "%s.%s", prefix, key);
            return vc_set_error(r->err, VC_ERR_MODEL, path, "expected an integer from %lld to 2^40", (long long)min), -1;
        }
        return vc__hf_bad(r, key, "expected an integer from %lld to 2^40", (long long)min);
    }
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int g4_bool(rd *r, const char *key, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    *out = false; /* Gemma4TextConfig: False */
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return vc__hf_bad(r, key, "expected true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

bool vc__hf_gemma4_sliding(const arch *a, int64_t i)
{
    if (i == a->N - 1) return false; /* __post_init__: the last layer forced to "full_attention" */
    if (a->g4.types) return !strcmp(cJSON_GetArrayItem(a->g4.types, (int)i)->valuestring, "sliding_attention");
    return (i + 1) % 6 != 0; /* sliding_window_pattern = 6 */
}

/* first_kv_shared_layer_idx = num_hidden_layers - num_kv_shared_layers */
static int64_t first_shared(const arch *a) { return a->N - a->g4.S; }
static bool kv_shared(const arch *a, int64_t i) { return first_shared(a) >= 0 && i >= first_shared(a); }

int vc__hf_gemma4_read(rd *r, arch *a)
{
    bool null = false;
    /* hf_read.c's check_sizes bounds the layers after this runs: the loops below need it first */
    if (a->N > 1024) return vc__hf_bad(r, "num_hidden_layers", "%lld layers: more than the limit of 1024", (long long)a->N);
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(r->cfg, "layer_types");
    if (lt && !cJSON_IsNull(lt)) {
        if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != a->N)
            return vc__hf_bad(r, "layer_types", "expected a list of %lld layer types (one per layer: \"sliding_attention\" or "
                          "\"full_attention\")", (long long)a->N);
        for (const cJSON *e = lt->child; e; e = e->next)
            if (!cJSON_IsString(e) || (strcmp(e->valuestring, "sliding_attention") && strcmp(e->valuestring, "full_attention")))
                return vc__hf_bad(r, "layer_types", "expected \"sliding_attention\" or \"full_attention\" for each layer "
                              "(Gemma4TextModel's masks and rotary embeddings have no other)");
        a->g4.types = lt;
    }
    if (g4_int(r, r->cfg, NULL, "global_head_dim", 512, 0, &a->g4.gD, NULL)) return -1;
    if (a->g4.gD == 0) a->g4.gD = a->D; /* `global_head_dim if ... and config.global_head_dim else head_dim` */
    if (g4_int(r, r->cfg, NULL, "num_global_key_value_heads", 0, 1, &a->g4.gKV, &null)) return -1;
    if (g4_bool(r, "attention_k_eq_v", &a->g4.keqv) || g4_bool(r, "enable_moe_block", &a->g4.moe) ||
        g4_bool(r, "use_double_wide_mlp", &a->g4.wide))
        return -1;
    if (g4_int(r, r->cfg, NULL, "num_kv_shared_layers", 0, 0, &a->g4.S, NULL)) return -1;
    if (g4_int(r, r->cfg, NULL, "hidden_size_per_layer_input", 256, 0, &a->g4.P, &null)) return -1;
    if (null) a->g4.P = 0; /* None: no per-layer embeddings (`if self.hidden_size_per_layer_input`) */
    if (g4_int(r, r->cfg, NULL, "vocab_size_per_layer_input", 262144, 1, &a->g4.Vp, NULL)) return -1;
    const cJSON *bi = cJSON_GetObjectItemCaseSensitive(r->cfg, "use_bidirectional_attention");
    if (bi && !cJSON_IsNull(bi) && !(cJSON_IsString(bi) && (!strcmp(bi->valuestring, "all") || !strcmp(bi->valuestring, "vision"))))
        return vc__hf_bad(r, "use_bidirectional_attention", "expected \"all\", \"vision\" or null");
    /* the full-attention layers' kv heads: num_global_key_value_heads under attention_k_eq_v */
    bool full = false;
    for (int64_t i = 0; i < a->N; i++) full |= !vc__hf_gemma4_sliding(a, i);
    if (a->g4.keqv && full) {
        if (a->g4.gKV == 0)
            return vc__hf_bad(r, "num_global_key_value_heads", "absent or null with attention_k_eq_v: Gemma4TextAttention divides "
                          "num_attention_heads by it on the full-attention layers");
        if (a->NH % a->g4.gKV)
            return vc__hf_bad(r, "num_global_key_value_heads", "num_attention_heads (%lld) must be divisible by it (%lld)",
                          (long long)a->NH, (long long)a->g4.gKV);
    }
    /* a kv-shared layer reads the keys and values the last earlier layer of its type stored */
    const int64_t first = first_shared(a);
    for (int64_t i = first < 0 ? a->N : first; i < a->N; i++) {
        bool found = false;
        for (int64_t j = 0; j < first && !found; j++) found = vc__hf_gemma4_sliding(a, j) == vc__hf_gemma4_sliding(a, i);
        if (!found)
            return vc__hf_bad(r, "num_kv_shared_layers", "%lld: layer %lld (%s) shares the keys and values of an earlier "
                          "layer of its type, and none of the first %lld layers is one (shared_kv_states has no entry)",
                          (long long)a->g4.S, (long long)i, vc__hf_gemma4_sliding(a, i) ? "sliding_attention" : "full_attention",
                          (long long)first);
    }
    if (a->g4.moe) {
        if (g4_int(r, r->cfg, NULL, "num_experts", 0, 1, &a->E, NULL) ||
            g4_int(r, r->cfg, NULL, "top_k_experts", 0, 1, &a->K, NULL) ||
            g4_int(r, r->cfg, NULL, "moe_intermediate_size", 0, 1, &a->moe_I, NULL))
            return -1;
        const char *miss = !a->E ? "num_experts" : !a->K ? "top_k_experts" : !a->moe_I ? "moe_intermediate_size" : NULL;
        if (miss) return vc__hf_bad(r, miss, "required with enable_moe_block (Gemma4TextConfig's None builds no experts)");
        if (a->K > a->E)
            return vc__hf_bad(r, "top_k_experts", "top-k (%lld) is more than the %lld experts", (long long)a->K, (long long)a->E);
    }
    /* every new weight below 2^48 elements, as hf_read.c bounds the others */
    const int64_t lim = INT64_C(1) << 48;
    const struct { int64_t x, y, z; const char *key; } prods[] = {
        {a->g4.Vp, a->N, a->g4.P, "vocab_size_per_layer_input"}, {a->H, a->N, a->g4.P, "hidden_size_per_layer_input"},
        {a->NH, a->g4.gD, a->H, "global_head_dim"}, {a->E, 3 * a->moe_I, a->H, "moe_intermediate_size"},
        {2 * a->I, a->H, 3, "intermediate_size"},
    };
    for (size_t i = 0; i < sizeof prods / sizeof *prods; i++) {
        int64_t t;
        if (__builtin_mul_overflow(prods[i].x, prods[i].y, &t) || __builtin_mul_overflow(t, prods[i].z, &t) || t > lim)
            return vc__hf_bad(r, prods[i].key, "a weight would have more than 2^48 elements");
    }
    return 0;
}

/* Every product is bounded above (2^48 elements a weight, at most 1024 layers): the sum stays below 2^62. */
int64_t vc__hf_gemma4_parameters(const arch *a, int64_t *active)
{
    const int64_t H = a->H, P = a->g4.P, first = first_shared(a);
    int64_t total = a->V * H * (a->tie ? 1 : 2) + H, idle = 0; /* embed_tokens, lm_head, norm */
    if (P) total += a->g4.Vp * a->N * P + H * a->N * P + P; /* embed_tokens_per_layer, per_layer_model_projection, norm */
    for (int64_t i = 0; i < a->N; i++) {
        const bool sliding = vc__hf_gemma4_sliding(a, i), alt = a->g4.keqv && !sliding;
        const int64_t d = sliding ? a->D : a->g4.gD, kv = (alt ? a->g4.gKV : a->KV) * d, q = a->NH * d;
        int64_t n = 2 * H * q + d + (a->qkv_bias ? q : 0) + (a->o_bias ? H : 0); /* q_proj, q_norm, o_proj */
        if (!kv_shared(a, i)) n += d + (alt ? 1 : 2) * (H * kv + (a->qkv_bias ? kv : 0)); /* k_norm, k_proj, v_proj */
        const int64_t inter = a->I * (a->g4.wide && i >= first && first > 0 ? 2 : 1);
        n += 3 * H * inter + 4 * H; /* mlp; the four norms */
        if (P) n += 2 * H * P + H; /* per_layer_input_gate, per_layer_projection, post_per_layer_input_norm */
        if (a->g4.moe) {
            n += H * a->E + H + a->E + 3 * a->E * H * a->moe_I + 3 * H; /* router; experts; three norms */
            idle += 3 * (a->E - a->K) * H * a->moe_I;
        }
        total += n;
    }
    *active = total - idle;
    return total;
}

int vc__hf_gemma4_unmodelled(const arch *a, const char *fam, vc_hf_split split, vc_error *err)
{
    /* --serve --tp: vLLM's split (hf_tp.c vc__hf_tp_split and its Gemma 4 block); a Megatron rank in training is
     * not written */
    if ((split.tp > 1 && !split.vllm) || split.sp > 1)
        return vc_set_error(err, VC_ERR_USAGE, split.sp > 1 ? O("sp") : O("tp"), "%s: Megatron's tensor-parallel split "
                            "of Gemma 4 (training, " O("mode") " infer / generate) is not modelled; vLLM's, under "
                            O("serve") ", is", fam);
    /* vLLM's per-layer inputs under --tp (gemma4.py @ 001cabc1 Gemma4Model.__init__): split by hf_tp.c, the
     * per_layer_model_projection's all-gather written by vc__hf_gemma4_write */
    /* --grad-ckpt: GradientCheckpointingLayer binds shared_kv_states in the partial each checkpointed layer hands to
     * checkpoint(), so the dict outlives the forward, holding the stored keys and values and, after their
     * recompute, the recomputed ones with their recomputed graph: written in the engine (src/engine/autograd.c
     * kvd_*; graph.c vc_kv_share_set records the stores) */
    if (a->g4.moe && a->experts_impl != EXPERTS_GROUPED_MM) /* Gemma4TextExperts: transformers 5 only */
        return vc_set_error(err, VC_ERR_USAGE, O("experts_implementation"), "%s: per_expert (transformers 4.x's "
                            "loop, which has no Gemma 4; the " O("transformers") " release's default before 5.0) is not "
                            "modelled: Gemma4TextExperts runs grouped_mm", fam);
    return 0;
}

/* A tower's weights (x * y * z elements each) within 2^48 elements, else an error naming cfg.key. */
typedef struct {
    int64_t x, y, z;
    const char *key;
} g4_prod;
static int g4_prods(rd *r, const char *cfg, const char *tower, const g4_prod *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t t;
        if (__builtin_mul_overflow(p[i].x, p[i].y, &t) || __builtin_mul_overflow(t, p[i].z, &t) || t > (INT64_C(1) << 48)) {
            char path[96];
            snprintf(path, sizeof path, "%s.%s", cfg, p[i].key);
            return vc_set_error(r->err, VC_ERR_MODEL, path, "a weight of the %s tower would have more than 2^48 elements",
                                tower), -1;
        }
    }
    return 0;
}

/* ---- gemma4: the towers of Gemma4ForConditionalGeneration, read from the config's root. */

int vc__hf_gemma4_towers_read(rd *r, arch *a, const vc_hf_options *o)
{
    if (o && (o->image_w > 0 || o->images > 0))
        return vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%s: Gemma4VisionModel's forward (the patches, the 2-D "
                            "rotary, the pooler) and the image tokens are not modelled: the tower's weights are counted, "
                            "no image is run", r->fam),
               -1;
    /* the lm_head is tied by the model's own config: PreTrainedModel.get_expanded_tied_weights_keys (transformers 5,
     * modeling_utils.py) returns no tie unless self.config.tie_word_embeddings -- Gemma4Config's (True when absent),
     * not text_config's */
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(r->cfg, "tie_word_embeddings");
    if (tie && !cJSON_IsNull(tie) && !cJSON_IsBool(tie))
        return vc_set_error(r->err, VC_ERR_MODEL, "tie_word_embeddings", "expected true or false"), -1;
    a->tie = !cJSON_IsBool(tie) || cJSON_IsTrue(tie);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, "vision_config");
    const cJSON *au = cJSON_GetObjectItemCaseSensitive(r->cfg, "audio_config");
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v))
        return vc_set_error(r->err, VC_ERR_MODEL, "vision_config", "expected an object (Gemma4VisionConfig's keys) or null"), -1;
    if (au && !cJSON_IsNull(au) && !cJSON_IsObject(au))
        return vc_set_error(r->err, VC_ERR_MODEL, "audio_config", "expected an object (Gemma4AudioConfig's keys) or null"), -1;
    if (cJSON_IsObject(v)) { /* Gemma4Config: None -> no vision tower */
        int64_t H, I, N, NH, KV, D, p, pe;
        const char *x = "vision_config";
        if (g4_int(r, v, x, "hidden_size", 768, 1, &H, NULL) || g4_int(r, v, x, "intermediate_size", 3072, 1, &I, NULL) ||
            g4_int(r, v, x, "num_hidden_layers", 16, 0, &N, NULL) ||
            g4_int(r, v, x, "num_attention_heads", 12, 1, &NH, NULL) ||
            g4_int(r, v, x, "num_key_value_heads", 12, 1, &KV, NULL) || g4_int(r, v, x, "head_dim", 64, 1, &D, NULL) ||
            g4_int(r, v, x, "patch_size", 16, 1, &p, NULL) ||
            g4_int(r, v, x, "position_embedding_size", 10240, 1, &pe, NULL))
            return -1;
        if (NH % KV)
            return vc_set_error(r->err, VC_ERR_MODEL, "vision_config.num_key_value_heads", "num_attention_heads (%lld) "
                                "must be divisible by it (%lld)", (long long)NH, (long long)KV), -1;
        if (N > 1024)
            return vc_set_error(r->err, VC_ERR_MODEL, "vision_config.num_hidden_layers", "%lld: more than 1024 layers",
                                (long long)N), -1;
        const g4_prod prods[] = {
            {NH, D, H, "head_dim"}, {I, H, 1, "intermediate_size"}, {3 * p, p, H, "patch_size"},
            {2, pe, H, "position_embedding_size"}, {H, a->H, 1, "hidden_size"},
        };
        if (g4_prods(r, "vision_config", "vision", prods, sizeof prods / sizeof *prods)) return -1;
        /* patch_embedder; per layer q/k/v/o, q_norm, k_norm, gate/up/down, four norms; embed_vision */
        a->g4.vision = 3 * p * p * H + 2 * pe * H +
                       N * (2 * H * NH * D + 2 * H * KV * D + 2 * D + 3 * H * I + 4 * H) + H * a->H;
    }
    if (cJSON_IsObject(au)) { /* Gemma4Config: None -> no audio tower */
        int64_t H, N, NH, k, od, c[2] = {128, 32};
        const char *x = "audio_config";
        if (g4_int(r, au, x, "hidden_size", 1024, 1, &H, NULL) || g4_int(r, au, x, "num_hidden_layers", 12, 0, &N, NULL) ||
            g4_int(r, au, x, "num_attention_heads", 8, 1, &NH, NULL) ||
            g4_int(r, au, x, "conv_kernel_size", 5, 1, &k, NULL) || g4_int(r, au, x, "output_proj_dims", 1536, 1, &od, NULL))
            return -1;
        const cJSON *ch = cJSON_GetObjectItemCaseSensitive(au, "subsampling_conv_channels");
        if (ch && !cJSON_IsNull(ch)) {
            if (!cJSON_IsArray(ch) || cJSON_GetArraySize(ch) != 2)
                return vc_set_error(r->err, VC_ERR_MODEL, "audio_config.subsampling_conv_channels", "expected a list of "
                                    "two channel counts"), -1;
            for (int i = 0; i < 2; i++) {
                const cJSON *e = cJSON_GetArrayItem(ch, i);
                if (!is_int(e) || e->valuedouble < 1 || e->valuedouble > (double)MAX_SIZE)
                    return vc_set_error(r->err, VC_ERR_MODEL, "audio_config.subsampling_conv_channels", "expected "
                                        "positive integers (at most 2^40)"), -1;
                c[i] = (int64_t)e->valuedouble;
            }
        }
        if (H % NH) /* head_dim = hidden_size // num_attention_heads; post reads hidden_size values */
            return vc_set_error(r->err, VC_ERR_MODEL, "audio_config.num_attention_heads", "%lld must divide hidden_size "
                                "(%lld): Gemma4AudioAttention's post projection reads heads x head_dim values",
                                (long long)NH, (long long)H), -1;
        if (N > 1024)
            return vc_set_error(r->err, VC_ERR_MODEL, "audio_config.num_hidden_layers", "%lld: more than 1024 layers",
                                (long long)N), -1;
        const g4_prod prods[] = {
            {4 * H, H, 1, "hidden_size"}, {c[0], c[1], 9, "subsampling_conv_channels"},
            {c[0] / 4 * c[1], H, 1, "subsampling_conv_channels"}, {H, k, 1, "conv_kernel_size"},
            {od, H > a->H ? H : a->H, 1, "output_proj_dims"},
        };
        if (g4_prods(r, "audio_config", "audio", prods, sizeof prods / sizeof *prods)) return -1;
        const int64_t hd = H / NH;
        const int64_t ff = 8 * H * H + 2 * H;                         /* one Gemma4AudioFeedForward */
        const int64_t attn = 4 * H * NH * hd + H * H + hd;            /* q, k, v, relative_k; post; per_dim_scale */
        const int64_t conv = 2 * H * H + H * H + H * k + 2 * H;        /* linear_start, linear_end, depthwise, norms */
        a->g4.audio = 9 * c[0] + c[0] + 9 * c[0] * c[1] + c[1] + c[0] / 4 * c[1] * H /* subsample_conv_projection */
                      + N * (2 * ff + attn + conv + 3 * H) + H * od + od  /* layers, output_proj */
                      + od * a->H;                                       /* embed_audio */
    }
    return 0;
}

/* ---- the language model's layers (Gemma4ForCausalLM; gemma4's towers loaded, not run).
 *
 * modeling_gemma4.py @ 0246b4f3:
 *  - Gemma4TextModel.forward: inputs_embeds = embed_tokens(input_ids) (Gemma4TextScaledWordEmbedding:
 *    super().forward(input_ids) * embed_scale), position_embeddings[layer_type] = rotary_emb(hidden_states,
 *    position_ids, layer_type) for each type the layers have (Gemma4TextRotaryEmbedding: cos / sin of the
 *    type's head_dim -- "proportional" rope (modeling_rope_utils.py _compute_proportional_rope_parameters)
 *    returns inv_freq of head_dim // 2 whatever partial_rotary_factor, zeros past the rotated angles), the
 *    layers, norm; Gemma4ForCausalLM: lm_head, final_logit_softcapping (/ cap, tanh, * cap), loss.
 *  - Gemma4TextDecoderLayer.forward: input_layernorm, self_attn, post_attention_layernorm, + residual;
 *    pre_feedforward_layernorm, mlp (down_proj(act_fn(gate_proj(x)) * up_proj(x))),
 *    post_feedforward_layernorm, + residual; hidden_states *= self.layer_scalar (in place, a [1] buffer:
 *    nothing allocated; MulBackward0 saves the buffer, so a checkpointed layer's recompute runs up to it
 *    and its node is the layer's first to unpack: LayerScalar, layers/llm.c).
 *  - Gemma4TextAttention.forward: q_proj(x).view, q_norm, apply_rotary_pos_emb; k_proj(x).view and
 *    v_proj(x).view (under attention_k_eq_v on a full layer: value_states = key_states, k_proj's output
 *    itself), k_norm, rotary, v_norm (Gemma4RMSNorm without weight); past_key_values.update; the
 *    attention interface with scaling 1.0 and the layer's sliding_window; o_proj. The full layers have
 *    global_head_dim and (k_eq_v) num_global_key_value_heads.
 * Every Gemma4RMSNorm is x.float() * pow(mean(x^2) + eps, -0.5) (* weight.float()), type_as(x): HFRMSNorm's
 * "gemma4" variant (layers/llm.c). */

static void g4_norm(rd *r, cJSON *arr, const arch *a, const char *name, const char *held_until)
{
    cJSON *o = vc__hf_layer(r, arr, "HFRMSNorm", name);
    vc__hf_num(r, o, "hidden_size", (double)a->H);
    vc__hf_num(r, o, "eps", a->eps);
    vc__hf_str(r, o, "variant", "gemma4");
    if (held_until) vc__hf_str(r, o, "held_until", held_until);
}

static void g4_linear(rd *r, cJSON *arr, const char *name, const char *in, int64_t nin, int64_t nout, bool bias)
{
    cJSON *o = vc__hf_layer(r, arr, "Linear", name);
    if (in) vc__hf_ins(r, o, in, NULL, NULL, NULL);
    vc__hf_num(r, o, "in_features", (double)nin);
    vc__hf_num(r, o, "out_features", (double)nout);
    vc__hf_flag(r, o, "bias", bias);
}

/* Gemma4TextAttention.__init__: store_full_length_kv, the last layer of its type before the kv-shared ones
 * (computed for every model: the dense ones store too, in a dict nothing reads) */
static bool kv_store(const arch *a, int64_t i)
{
    if (kv_shared(a, i)) return false;
    const int64_t first = first_shared(a) < a->N ? first_shared(a) : a->N;
    for (int64_t j = i + 1; j < first; j++)
        if (vc__hf_gemma4_sliding(a, j) == vc__hf_gemma4_sliding(a, i)) return false;
    return true;
}

static void g4_layer(rd *r, cJSON *arr, const arch *a, int64_t i)
{
    const bool sliding = vc__hf_gemma4_sliding(a, i), alt = a->g4.keqv && !sliding, shared = kv_shared(a, i);
    const int64_t d = sliding ? a->D : a->g4.gD, kv = alt ? a->g4.gKV : a->KV;
    const int64_t first = first_shared(a); /* Gemma4TextMLP: double-wide on the kv-shared layers (first > 0) */
    const int64_t inter = a->I * (a->g4.wide && i >= first && first > 0 ? 2 : 1);
    g4_norm(r, arr, a, "input_layernorm", "self_attn.o_proj");
    g4_linear(r, arr, "self_attn.q_proj", NULL, a->H, a->NH * d, a->qkv_bias);
    if (!shared) g4_linear(r, arr, "self_attn.k_proj", "input_layernorm", a->H, kv * d, a->qkv_bias);
    if (!shared && !alt) g4_linear(r, arr, "self_attn.v_proj", "input_layernorm", a->H, kv * d, a->qkv_bias);
    cJSON *o = vc__hf_layer(r, arr, "RotaryAttention", "self_attn.attention");
    const char *rope = sliding ? "model.rotary_emb_local" : "model.rotary_emb";
    if (shared) vc__hf_ins(r, o, "self_attn.q_proj", rope, NULL, NULL);
    else vc__hf_ins(r, o, "self_attn.q_proj", "self_attn.k_proj", alt ? "self_attn.k_proj" : "self_attn.v_proj", rope);
    vc__hf_num(r, o, "num_heads", (double)a->NH);
    vc__hf_num(r, o, "num_kv_heads", (double)kv);
    vc__hf_num(r, o, "head_dim", (double)d);
    vc__hf_num(r, o, "rotary_dim", (double)d);
    vc__hf_flag(r, o, "causal", true);
    vc__hf_flag(r, o, "qk_norm", true);
    vc__hf_num(r, o, "qk_norm_eps", a->eps);
    vc__hf_str(r, o, "qk_norm_variant", "gemma4");
    vc__hf_flag(r, o, "v_norm", true);
    if (kv_store(a, i)) vc__hf_flag(r, o, "kv_store", true);
    if (shared) vc__hf_flag(r, o, "kv_shared", true);
    if (kv_store(a, i) || shared) vc__hf_num(r, o, "kv_type", sliding ? 0 : 1);
    if (i == a->N - 1) vc__hf_flag(r, o, "kv_last", true);
    if (sliding) vc__hf_num(r, o, "sliding_window", (double)a->window);
    if (a->p_attn > 0) vc__hf_num(r, o, "dropout", a->p_attn);
    g4_linear(r, arr, "self_attn.o_proj", NULL, a->NH * d, a->H, a->o_bias);
    g4_norm(r, arr, a, "post_attention_layernorm", NULL);
    vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "attn_residual"), "input", "post_attention_layernorm", NULL, NULL);
    g4_norm(r, arr, a, "pre_feedforward_layernorm", "mlp.down_proj");
    g4_linear(r, arr, "mlp.gate_proj", NULL, a->H, inter, false);
    o = vc__hf_layer(r, arr, "GELU", "mlp.act_fn"); /* hidden_activation gelu_pytorch_tanh (checked by hf.c) */
    vc__hf_str(r, o, "approximate", a->act == A_GELU_TANH ? "tanh" : "none");
    g4_linear(r, arr, "mlp.up_proj", "pre_feedforward_layernorm", a->H, inter, false);
    vc__hf_ins(r, vc__hf_layer(r, arr, "Mul", "mlp.mul"), "mlp.act_fn", "mlp.up_proj", NULL, NULL);
    g4_linear(r, arr, "mlp.down_proj", NULL, inter, a->H, false);
    /* with the MoE block, hidden_states (the MLP's output) stays bound until `hidden_states = hidden_states_1 +
     * hidden_states_2` rebinds it */
    if (a->g4.moe) vc__hf_str(r, cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1), "held_until", "moe_sum");
    if (a->g4.moe) { /* enable_moe_block: the experts beside the MLP, routed from the residual (layers/llm.c
                      * SparseMoE style gemma4: the router, pre_feedforward_layernorm_2 and the experts) */
        g4_norm(r, arr, a, "post_feedforward_layernorm_1", NULL);
        o = vc__hf_layer(r, arr, "SparseMoE", "moe");
        vc__hf_ins(r, o, "attn_residual", NULL, NULL, NULL);
        vc__hf_num(r, o, "hidden_size", (double)a->H);
        vc__hf_num(r, o, "intermediate_size", (double)a->moe_I);
        vc__hf_num(r, o, "num_experts", (double)a->E);
        vc__hf_num(r, o, "top_k", (double)a->K);
        vc__hf_str(r, o, "style", "gemma4");
        vc__hf_str(r, o, "activation", a->act == A_GELU_TANH ? "gelu_tanh" : "gelu");
        vc__hf_str(r, o, "experts_implementation", "grouped_mm");
        if (a->imbalance > 1.0) vc__hf_num(r, o, "moe_imbalance", a->imbalance);
        g4_norm(r, arr, a, "post_feedforward_layernorm_2", NULL);
        vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "moe_sum"), "post_feedforward_layernorm_1", "post_feedforward_layernorm_2",
                   NULL, NULL); /* hidden_states_1 + hidden_states_2 */
    }
    g4_norm(r, arr, a, "post_feedforward_layernorm", NULL);
    vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "mlp_residual"), "attn_residual", "post_feedforward_layernorm", NULL, NULL);
    if (a->g4.P) { /* hidden_size_per_layer_input: residual + post_per_layer_input_norm(per_layer_projection(
                    * act_fn(per_layer_input_gate(h)) * per_layer_input)), per_layer_input = per_layer_inputs[:, :, i, :] */
        g4_linear(r, arr, "per_layer_input_gate", NULL, a->H, a->g4.P, false);
        o = vc__hf_layer(r, arr, "GELU", "act_fn");
        vc__hf_str(r, o, "approximate", a->act == A_GELU_TANH ? "tanh" : "none");
        o = vc__hf_layer(r, arr, "Select", "per_layer_input");
        vc__hf_ins(r, o, "model.per_layer_inputs", NULL, NULL, NULL);
        vc__hf_num(r, o, "dim", 2);
        vc__hf_num(r, o, "index", (double)i);
        vc__hf_ins(r, vc__hf_layer(r, arr, "Mul", "per_layer_mul"), "act_fn", "per_layer_input", NULL, NULL);
        g4_linear(r, arr, "per_layer_projection", NULL, a->g4.P, a->H, false);
        g4_norm(r, arr, a, "post_per_layer_input_norm", NULL);
        vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "per_layer_residual"), "mlp_residual", "post_per_layer_input_norm", NULL,
                   NULL);
    }
    /* hidden_states *= self.layer_scalar (transformers; vLLM's Gemma4 layer, --serve, not read for it: left out) */
    if (!a->vllm) vc__hf_layer(r, arr, "LayerScalar", "layer_scalar");
}

/* A tower loaded and not run: its parameters as one frozen weight (VisionWeights, layers/vision.c). */
static void g4_tower(rd *r, cJSON *arr, const char *name, int64_t n)
{
    if (n <= 0) return;
    cJSON *o = vc__hf_layer(r, arr, "VisionWeights", name);
    cJSON *shape = o ? cJSON_AddArrayToObject(o, "shape") : NULL;
    cJSON *v = cJSON_CreateNumber((double)n);
    if (!shape || !v || !cJSON_AddItemToArray(shape, v)) {
        cJSON_Delete(v);
        r->oom = true;
    }
    vc__hf_flag(r, o, "frozen", true);
}

/* vLLM's ColumnParallelLinear(gather_output=True) on a rank of t (vllm/model_executor/layers/linear.py @ 001cabc1
 * ColumnParallelLinear.forward: output_parallel = quant_method.apply(...), then output =
 * tensor_model_parallel_all_gather(output_parallel), both locals until forward returns), the all-gather as
 * vllm/distributed/device_communicators/base_device_communicator.py DeviceCommunicatorBase.all_gather (which
 * CudaCommunicator does not override) runs it for the last dim of a [tokens, n] shard: output_tensor =
 * torch.empty((t x tokens, n)), all_gather_into_tensor, reshape((t, tokens, n)) (a view), movedim(0, 1) (a
 * non-contiguous view), reshape((tokens, t x n)): a copy. Written as a Cat of t shards along the features (a new
 * tensor of the buffer's elements), its view [t, L, n], the permute to [L, t, n] and the reshape that copies;
 * the shard held until the copy is made. The preceding Linear is the shard. */
static void g4_gather(rd *r, cJSON *arr, int64_t t, int64_t n)
{
    const char *shard = "model.per_layer_model_projection", *names[HF_G4_MAX_TP];
    cJSON *prev = cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1);
    vc__hf_str(r, prev, "held_until", "model.per_layer_model_projection.gathered");
    if (t > HF_G4_MAX_TP) { /* refused by hf_tp.c */
        r->oom = true;
        return;
    }
    for (int64_t k = 0; k < t; k++) names[k] = shard;
    cJSON *o = vc__hf_layer(r, arr, "Cat", "model.per_layer_model_projection.all_gather");
    cJSON *ins = cJSON_CreateStringArray(names, (int)t);
    if (!o || !ins || !cJSON_AddItemToObject(o, "inputs", ins)) {
        cJSON_Delete(ins);
        r->oom = true;
    }
    vc__hf_num(r, o, "dim", -1);
    const double view[3] = {(double)t, -1, (double)n}, perm[4] = {0, 2, 1, 3}, out[2] = {-1, (double)(t * n)};
    const struct { const char *type, *name, *key; const double *v; int nv; } steps[] = {
        {"Reshape", "model.per_layer_model_projection.all_gather_view", "shape", view, 3},
        {"Permute", "model.per_layer_model_projection.movedim", "dims", perm, 4},
        {"Reshape", "model.per_layer_model_projection.gathered", "shape", out, 2},
    };
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        o = vc__hf_layer(r, arr, steps[i].type, steps[i].name);
        cJSON *l = o ? cJSON_AddArrayToObject(o, steps[i].key) : NULL;
        for (int j = 0; j < steps[i].nv; j++) {
            cJSON *v = cJSON_CreateNumber(steps[i].v[j]);
            if (!l || !v || !cJSON_AddItemToArray(l, v)) {
                cJSON_Delete(v);
                r->oom = true;
            }
        }
    }
}

void vc__hf_gemma4_write(rd *r, cJSON *arr, const arch *a)
{
    g4_tower(r, arr, "model.vision_tower", a->g4.vision); /* with embed_vision */
    g4_tower(r, arr, "model.audio_tower", a->g4.audio);   /* with embed_audio */
    cJSON *o = vc__hf_layer(r, arr, "Embedding", "model.embed_tokens");
    if (a->g4.vision || a->g4.audio) vc__hf_ins(r, o, "input", NULL, NULL, NULL);
    vc__hf_num(r, o, "num_embeddings", (double)a->V);
    vc__hf_num(r, o, "embedding_dim", (double)a->H);
    o = vc__hf_layer(r, arr, "Scale", "model.embed_scale"); /* * embed_scale (hidden_size ** 0.5) */
    vc__hf_num(r, o, "factor", sqrt((double)a->H));
    if (a->g4.P) { /* Gemma4TextModel.forward's per-layer inputs [B, L, N, P], a local to the end of its layer loop */
        const int64_t N = a->N, P = a->g4.P;
        /* get_per_layer_inputs: embed_tokens_per_layer(input_ids) (a Gemma4TextScaledWordEmbedding: * P ** 0.5),
         * reshaped to [B, L, N, P]; project_per_layer_inputs' argument until it returns */
        o = vc__hf_layer(r, arr, "Embedding", "model.embed_tokens_per_layer");
        vc__hf_ins(r, o, "input", NULL, NULL, NULL);
        vc__hf_num(r, o, "num_embeddings", (double)a->g4.Vp);
        vc__hf_num(r, o, "embedding_dim", (double)(N * P));
        o = vc__hf_layer(r, arr, "Scale", "model.embed_scale_per_layer");
        vc__hf_num(r, o, "factor", sqrt((double)P));
        vc__hf_str(r, o, "held_until", "model.per_layer_inputs");
        cJSON *sh[2];
        o = vc__hf_layer(r, arr, "Reshape", "model.per_layer_identity");
        cJSON *shape = o ? cJSON_AddArrayToObject(o, "shape") : NULL;
        sh[0] = shape;
        /* project_per_layer_inputs: per_layer_model_projection(inputs_embeds) * hidden_size ** -0.5, reshaped,
         * per_layer_projection_norm; (projection + per_layer_inputs) * 2 ** -0.5 */
        const int64_t t = a->g4.tp > 1 ? a->g4.tp : 1;
        g4_linear(r, arr, "model.per_layer_model_projection", "model.embed_scale", a->H, N * P / t, false);
        if (t > 1) g4_gather(r, arr, t, N * P / t);
        o = vc__hf_layer(r, arr, "Scale", "model.per_layer_model_projection_scale");
        vc__hf_num(r, o, "factor", 1.0 / sqrt((double)a->H));
        o = vc__hf_layer(r, arr, "Reshape", "model.per_layer_projection_view");
        sh[1] = o ? cJSON_AddArrayToObject(o, "shape") : NULL;
        for (int k = 0; k < 2; k++) {
            const double dims[3] = {-1, (double)N, (double)P}; /* [B, L, N, P]: L the input's */
            for (int j = 0; j < 3; j++) {
                cJSON *v = cJSON_CreateNumber(dims[j]);
                if (!sh[k] || !v || !cJSON_AddItemToArray(sh[k], v)) {
                    cJSON_Delete(v);
                    r->oom = true;
                }
            }
        }
        o = vc__hf_layer(r, arr, "HFRMSNorm", "model.per_layer_projection_norm");
        vc__hf_num(r, o, "hidden_size", (double)P);
        vc__hf_num(r, o, "eps", a->eps);
        vc__hf_str(r, o, "variant", "gemma4");
        vc__hf_str(r, o, "held_until", "model.per_layer_inputs");
        vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "model.per_layer_sum"), "model.per_layer_projection_norm",
                   "model.per_layer_identity", NULL, NULL);
        o = vc__hf_layer(r, arr, "Scale", "model.per_layer_inputs");
        vc__hf_num(r, o, "factor", sqrt(0.5));
        vc__hf_str(r, o, "held_until", "model.norm");
    }
    bool types[2] = {false, false}; /* full, sliding */
    for (int64_t i = 0; i < a->N; i++) types[vc__hf_gemma4_sliding(a, i)] = true;
    for (int t = 1; t >= 0; t--) {
        if (!types[t]) continue;
        o = vc__hf_layer(r, arr, "RotaryEmbedding", t ? "model.rotary_emb_local" : "model.rotary_emb");
        vc__hf_ins(r, o, "input", NULL, NULL, NULL);
        vc__hf_num(r, o, "head_dim", (double)(t ? a->D : a->g4.gD));
        vc__hf_num(r, o, "rotary_dim", (double)(t ? a->D : a->g4.gD));
    }
    /* the layers in runs of one type (and one checkpointing), one Sequential with `repeat` each, as
     * hf_layers.c's layer_stack writes them: a run after the first is a loop, the first run's input
     * (the forward's inputs_embeds) alive to the loop's end */
    for (int64_t i = 0; i < a->N && !r->oom;) {
        const bool ck = a->ckpt && (i + 1) % a->ckpt_every == 0;
        int64_t j = i + 1;
        /* one run: the same type, checkpointing, kv sharing; not the last layer (kv_last), no per-layer inputs
         * (each layer selects its own slice) */
        while (j < a->N - 1 && !a->g4.P && vc__hf_gemma4_sliding(a, j) == vc__hf_gemma4_sliding(a, i) &&
               (a->ckpt && (j + 1) % a->ckpt_every == 0) == ck && kv_store(a, j) == kv_store(a, i) &&
               kv_shared(a, j) == kv_shared(a, i))
            j++;
        cJSON *seq = vc__hf_layer(r, arr, "Sequential", j == a->N ? "model.layers" : NULL);
        if (!seq) return;
        if (i == 0) vc__hf_ins(r, seq, "model.embed_scale", NULL, NULL, NULL);
        if (j - i > 1) vc__hf_num(r, seq, "repeat", (double)(j - i));
        if (i > 0 && j - i > 1) vc__hf_flag(r, seq, "loop", true);
        if (i > 0 && j == a->N) vc__hf_str(r, seq, "keep", "model.embed_scale");
        if (ck) vc__hf_flag(r, seq, "checkpoint", true);
        cJSON *layers = cJSON_AddArrayToObject(seq, "layers");
        if (!layers) {
            r->oom = true;
            return;
        }
        g4_layer(r, layers, a, i);
        i = j;
    }
    g4_norm(r, arr, a, "model.norm", NULL);
    o = vc__hf_layer(r, arr, "Linear", "lm_head");
    vc__hf_num(r, o, "in_features", (double)a->H);
    vc__hf_num(r, o, "out_features", (double)a->V);
    vc__hf_flag(r, o, "bias", false);
    if (a->tie) vc__hf_str(r, o, "tie", "model.embed_tokens");
    if (a->final_cap > 0) { /* Gemma4ForCausalLM.forward: logits / cap; tanh; * cap */
        o = vc__hf_layer(r, arr, "Scale", "final_logit_softcapping.div");
        vc__hf_num(r, o, "factor", 1.0 / a->final_cap);
        vc__hf_layer(r, arr, "Tanh", "final_logit_softcapping.tanh");
        o = vc__hf_layer(r, arr, "Scale", "final_logit_softcapping.mul");
        vc__hf_num(r, o, "factor", a->final_cap);
    }
}
