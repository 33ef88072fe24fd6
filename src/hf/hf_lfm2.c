/*
 * hf_lfm2.c — LiquidAI LFM2 (model_type lfm2; issue 31): LFM2-350M, 700M, 1.2B, 2.6B: short-convolution and
 * attention layers. The keys of Lfm2Config the row's generic reading (hf_read.c) cannot check; the layers are
 * written by hf_layers.c (lfm2_layer), the short convolution by layers/shortconv.c.
 *
 * Sources, huggingface/transformers:
 *  - configuration_lfm2.py @ 05cd1ec1, Lfm2Config.__init__: vocab_size 65536, hidden_size 2560,
 *    intermediate_size 12288 (kwargs block_ff_dim first: `kwargs.get("block_ff_dim", intermediate_size)`),
 *    num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, max_position_embeddings 128000,
 *    norm_eps 1e-5, tie_word_embeddings True (kwargs tie_embedding first), conv_bias False, conv_L_cache 3,
 *    block_multiple_of 256, block_ffn_dim_multiplier 1.0, block_auto_adjust_ff_dim True, full_attn_idxs None,
 *    layer_types None (then "full_attention" at full_attn_idxs, default every layer, "conv" elsewhere);
 *    rope_theta (or theta) 1e6;
 *  - modeling_lfm2.py @ 0096ba4f: Lfm2MLP (intermediate_size = int(2 x intermediate_size / 3) under
 *    block_auto_adjust_ff_dim, then with block_ffn_dim_multiplier not None int(multiplier x it) rounded up to
 *    block_multiple_of; w1, w3 nn.Linear(hidden, it), w2 nn.Linear(it, hidden), no bias; w2(silu(w1(x)) x
 *    w3(x))); Lfm2Attention (head_dim getattr(config, "head_dim", hidden // heads), q/k/v_proj, out_proj no
 *    bias, q_layernorm / k_layernorm Lfm2RMSNorm(head_dim) per head before the rotary; dropout 0.0);
 *    Lfm2ShortConv (layers/shortconv.c); Lfm2DecoderLayer (operator_norm, self_attn or conv, + residual,
 *    ffn_norm, feed_forward, + residual); Lfm2Model (embed_tokens, layers, pos_emb Lfm2RotaryEmbedding,
 *    embedding_norm after the layers); Lfm2ForCausalLM (lm_head, tied by _tied_weights_keys).
 *
 * lfm2_moe (Lfm2MoeForCausalLM, LFM2-8B-A1B), huggingface/transformers:
 *  - configuration_lfm2_moe.py @ 06053b84, Lfm2MoeConfig.__init__: vocab_size 65536, hidden_size 2048,
 *    intermediate_size 7168, moe_intermediate_size 1792, num_hidden_layers 32, num_attention_heads 32,
 *    num_key_value_heads 8, norm_eps 1e-5, tie_word_embeddings True (kwargs tie_embedding first), conv_bias False,
 *    conv_L_cache 3, num_dense_layers 2, num_experts_per_tok 4, num_experts 32, use_expert_bias True,
 *    routed_scaling_factor 1.0, norm_topk_prob True, layer_types None (no full_attn_idxs and no block_* keys:
 *    Lfm2DecoderLayer's config.layer_types[layer_idx] needs the list, so it is required here);
 *  - modular_lfm2_moe.py @ 0c67e26d: Lfm2MoeMLP(config, intermediate_size=config.intermediate_size) (w1, w3, w2,
 *    no width adjustment) for layer_idx < num_dense_layers, else Lfm2MoeSparseMoeBlock (layers/llm.c
 *    moe_lfm2_emit); Lfm2MoeDecoderLayer.forward, Lfm2MoeModel and the cache are lfm2's.
 *
 * Refused in one line: --tp outside --serve (Megatron has no short convolution); under --serve, what vLLM builds
 * otherwise (lf_vllm below), and its --tp split (vc__hf_lfm2_unmodelled). --serve: layers/shortconv.c (vLLM's profiling run), src/engine/serve.c (its conv state pages).
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static int lf_int(rd *r, const char *key, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    *out = def;
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < (double)min || v->valuedouble > (double)MAX_SIZE)
        return vc__hf_bad(r, key, "expected an integer from %lld to 2^40", (long long)min);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int lf_bool(rd *r, const char *key, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    if (!v) return 0; /* *out keeps its default */
    if (!cJSON_IsBool(v)) return vc__hf_bad(r, key, "expected true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

bool vc__hf_lfm2_conv(const arch *a, int64_t i)
{
    if (a->lf.types) return strcmp(cJSON_GetArrayItem(a->lf.types, (int)i)->valuestring, "full_attention") != 0;
    if (!a->lf.idxs) return false; /* full_attn_idxs None: every layer attention */
    for (const cJSON *e = a->lf.idxs->child; e; e = e->next)
        if (e->valuedouble == (double)i) return false;
    return true;
}

/* Lfm2MLP's width: block_ff_dim (the original key) before intermediate_size, then its adjustment */
static int lf_width(rd *r, arch *a)
{
    int64_t I = a->I, mult = 256;
    if (cJSON_GetObjectItemCaseSensitive(r->cfg, "block_ff_dim") && lf_int(r, "block_ff_dim", 0, 1, &I)) return -1;
    bool adjust = true;
    if (lf_bool(r, "block_auto_adjust_ff_dim", &adjust) || lf_int(r, "block_multiple_of", 256, 1, &mult)) return -1;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r->cfg, "block_ffn_dim_multiplier");
    if (m && !cJSON_IsNull(m) && (!cJSON_IsNumber(m) || !isfinite(m->valuedouble) || m->valuedouble <= 0 || m->valuedouble > 1e6))
        return vc__hf_bad(r, "block_ffn_dim_multiplier", "expected a number above 0 (at most 1e6) or null");
    if (adjust) {
        I = (int64_t)(2.0 * (double)I / 3.0); /* int(2 * intermediate_size / 3) */
        if (!m || !cJSON_IsNull(m)) {           /* the multiplier's default 1.0 when absent */
            I = (int64_t)((m ? m->valuedouble : 1.0) * (double)I);
            if (I > MAX_SIZE) return vc__hf_bad(r, "block_ffn_dim_multiplier", "the MLP's width passes 2^40");
            I = mult * ((I + mult - 1) / mult);
        }
    }
    if (I < 1 || I > MAX_SIZE)
        return vc__hf_bad(r, cJSON_GetObjectItemCaseSensitive(r->cfg, "block_ff_dim") ? "block_ff_dim" : "intermediate_size",
                          "Lfm2MLP's width would be %lld (expected 1 to 2^40)", (long long)I);
    a->I = I;
    return 0;
}

int vc__hf_lfm2_read(rd *r, arch *a)
{
    /* layer_types, else full_attn_idxs (lfm2_moe: layer_types alone) */
    const bool moe = a->f->moe == MOE_LFM2;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r->cfg, "layer_types");
    a->lf.types = a->lf.idxs = NULL;
    if (moe && (!t || cJSON_IsNull(t)))
        return vc__hf_bad(r, "layer_types", "Lfm2MoeConfig has no default: Lfm2DecoderLayer reads config.layer_types[i] "
                          "(\"conv\" or \"full_attention\" for each of the %lld layers)", (long long)a->N);
    if (t && !cJSON_IsNull(t)) {
        if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) < a->N)
            return vc__hf_bad(r, "layer_types", "expected a list of at least %lld layer types (\"conv\" or \"full_attention\")",
                              (long long)a->N);
        for (const cJSON *e = t->child; e; e = e->next)
            if (!cJSON_IsString(e) || (strcmp(e->valuestring, "conv") && strcmp(e->valuestring, "full_attention")))
                return vc__hf_bad(r, "layer_types", "expected \"conv\" or \"full_attention\" for each layer");
        a->lf.types = t;
    } else if (!moe && (t = cJSON_GetObjectItemCaseSensitive(r->cfg, "full_attn_idxs")) && !cJSON_IsNull(t)) {
        if (!cJSON_IsArray(t)) return vc__hf_bad(r, "full_attn_idxs", "expected a list of layer indices");
        for (const cJSON *e = t->child; e; e = e->next)
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
                e->valuedouble >= (double)a->N)
                return vc__hf_bad(r, "full_attn_idxs", "expected layer indices from 0 to num_hidden_layers - 1 (%lld)",
                                  (long long)a->N - 1);
        a->lf.idxs = t;
    }
    if (lf_int(r, "conv_L_cache", 3, 1, &a->lf.k)) return -1;
    if (a->lf.k > 4096) return vc__hf_bad(r, "conv_L_cache", "%lld: more than the 4096 taps modelled", (long long)a->lf.k);
    a->lf.bias = false;
    if (lf_bool(r, "conv_bias", &a->lf.bias)) return -1;
    /* tie_embedding (the original key) before tie_word_embeddings */
    if (lf_bool(r, "tie_embedding", &a->tie)) return -1;
    a->lf.ebias = true;
    if (moe) {
        if (a->experts_impl == EXPERTS_PER_EXPERT) /* transformers 4.x's Lfm2MoeExperts (an nn.ModuleList) not read */
            return vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert: lfm2_moe is modelled as "
                                "transformers 5 runs it (Lfm2MoeExperts stacked, grouped_mm)");
        if (lf_bool(r, "use_expert_bias", &a->lf.ebias)) return -1;
        if (a->first_dense > a->N)
            return vc__hf_bad(r, "num_dense_layers", "%lld dense layers: more than the %lld layers", (long long)a->first_dense,
                              (long long)a->N);
    }
    /* the MLP's width (lfm2_moe: Lfm2MoeMLP takes intermediate_size as it is) */
    if (!moe && lf_width(r, a)) return -1;
    if (a->D % 2)
        return vc__hf_bad(r, cJSON_GetObjectItemCaseSensitive(r->cfg, "head_dim") ? "head_dim" : "num_attention_heads",
                          "head_dim %lld: the rotary embedding needs an even head_dim", (long long)a->D);
    /* the whole model within 2^56 parameters: per layer the MLP, and the larger of the attention and the
     * short convolution (4 H^2 + H L_cache) */
    int64_t per = 0, x, tot;
    const int64_t q = a->NH * a->D, kv = a->KV * a->D;
    bool ovf = __builtin_mul_overflow(3 * a->I, a->H, &per) || __builtin_mul_overflow(a->H, 4 * a->H + a->lf.k + 8, &x) ||
               __builtin_add_overflow(per, x, &per) || __builtin_mul_overflow(a->H, 2 * q + 2 * kv, &x) ||
               __builtin_add_overflow(per, x, &per) || __builtin_mul_overflow(per, a->N, &tot) ||
               __builtin_mul_overflow(a->V, 2 * a->H, &x) || __builtin_add_overflow(tot, x, &tot) ||
               (moe && (__builtin_mul_overflow(3 * a->moe_I + 1, a->H, &x) || __builtin_mul_overflow(x, a->E, &x) ||
                        __builtin_mul_overflow(x, a->N, &x) || __builtin_add_overflow(tot, x, &tot)));
    if (ovf || tot > (INT64_C(1) << 56))
        return vc__hf_bad(r, "num_hidden_layers", "%lld layers: more than 2^56 parameters, byte counts would overflow 64-bit "
                          "arithmetic", (long long)a->N);
    return 0;
}

/* What vLLM's Lfm2ForCausalLM / Lfm2MoeForCausalLM build otherwise than transformers (vllm-project/vllm,
 * vllm/model_executor/models/lfm2.py @ 055e47c28003156421365af985d676fc921cb075, lfm2_moe.py @
 * 030ea52effcb05071543c8c42b8f0145e94cee43): Lfm2Attention's head_dim = hidden_size // num_attention_heads (no
 * head_dim key); the lm_head always tied (ParallelLMHead.tie_weights(embed_tokens)); lfm2's
 * Lfm2ShortConvDecoderLayer builds ShortConv(dim=config.conv_dim) and Lfm2MLP(dim=config.block_dim), keys Lfm2Config
 * does not define (the checkpoints' config.json has them; without them vLLM fails): each must be hidden_size. A
 * model without a ShortConv layer is still IsHybrid there (HybridAttentionMambaModelConfig sizes the attention
 * block from the config's conv state): refused. */
static int lf_vllm(const arch *a, const cJSON *cfg, vc_error *err)
{
    const bool moe = a->f->moe == MOE_LFM2;
    if (a->D * a->NH != a->H)
        return vc_set_error(err, VC_ERR_MODEL, "head_dim", "%lld under %s: vLLM's Lfm2Attention takes head_dim = "
                            "hidden_size // num_attention_heads (%lld)", (long long)a->D, O("serve"),
                            (long long)(a->H / a->NH));
    if (!a->tie)
        return vc_set_error(err, VC_ERR_MODEL, cJSON_GetObjectItemCaseSensitive(cfg, "tie_embedding") ? "tie_embedding"
                                                                                                     : "tie_word_embeddings",
                            "false under %s: vLLM's %s ties lm_head to embed_tokens whatever the config says",
                            O("serve"), moe ? "Lfm2MoeForCausalLM" : "Lfm2ForCausalLM");
    bool conv = false;
    for (int64_t i = 0; i < a->N && !conv; i++) conv = vc__hf_lfm2_conv(a, i);
    /* unlike granitemoehybrid without Mamba layers (src/engine/serve.c): ModelConfig.is_hybrid's all-"attention"
     * check (vllm/config/model.py @ 0052a5b8) does not match lfm2's "full_attention", so vLLM stays hybrid */
    if (!conv)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "lfm2 without ShortConv layers under vLLM is not modelled: vLLM "
                            "still runs it as a hybrid model (IsHybrid), the attention block size raised to a conv state "
                            "page computed from the config");
    static const char *const keys[] = {"conv_dim", "block_dim"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys && !moe; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, keys[i]);
        if (!cJSON_IsNumber(v) || v->valuedouble != (double)a->H)
            return vc_set_error(err, VC_ERR_MODEL, keys[i], "%s under %s: vLLM's Lfm2ShortConvDecoderLayer reads "
                                "config.%s (which Lfm2Config does not define) as the layer's width: expected hidden_size, "
                                "%lld", v ? "not hidden_size" : "absent", O("serve"), keys[i], (long long)a->H);
    }
    return 0;
}

/* --serve --tp N: vLLM's split of a ShortConv layer (vllm-project/vllm @ 0123e1dc5c65f01d34ae4e405f2204e79aa68f09,
 * vllm/model_executor/layers/mamba/short_conv.py ShortConv.__init__(dim = lfm2's config.conv_dim, lfm2_moe's
 * hidden_size): conv a ColumnParallelLinear(L_cache, dim) (weight [dim / tp, 1, L_cache], its bias dim / tp),
 * in_proj a MergedColumnParallelLinear(dim, [dim] x 3) ([dim, 3 dim / tp]), out_proj a RowParallelLinear(dim, dim)
 * ([dim / tp, dim], its bias whole); forward_cuda's profile run works on the rank's [tokens, 3 dim / tp] and
 * [tokens, dim / tp], the layer's output (torch.empty_like(hidden_states), lfm2.py Lfm2ShortConvDecoderLayer
 * .forward) whole; get_state_shape: short_conv_state_shape(tp_world_size, conv_dim, L_cache), mamba_utils.py
 * @ 02d710837549a368073552333f66d714477415d2: (conv_kernel - 1, divide(intermediate_size, tp_world_size)).
 * Each of these divide()s (linear.py's output_size_per_partition, mamba_utils' divide) asserts divisibility. The
 * attention layers (Lfm2Attention, lfm2.py @ 055e47c2: QKVParallelLinear, out_proj RowParallelLinear, the per-head
 * q_layernorm / k_layernorm whole), Lfm2MLP (w13 MergedColumnParallelLinear, w2 RowParallelLinear), lfm2_moe's
 * FusedMoE (moe_intermediate_size / tp per expert, its gate and expert_bias whole) are the generic split
 * (hf_tp.c). Megatron has no short convolution, torchtitan no LFM2 model, and transformers' Lfm2Config
 * (configuration_lfm2.py @ 05cd1ec1) declares no base_model_tp_plan (Lfm2MoeConfig was not read): --tp outside
 * --serve stays refused, the message says why (issue 31). */
int vc__hf_lfm2_unmodelled(arch *a, const cJSON *cfg, vc_hf_split split, bool vllm, vc_error *err)
{
    a->lf.tp = 0;
    if (split.tp > 1 && !split.vllm)
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s: tensor parallelism of the short convolution layers is "
                            "modelled only as vLLM splits it, under " O("serve") " (no trainer splits them: transformers' "
                            "Lfm2Config declares no base_model_tp_plan, Megatron and torchtitan have no short convolution)",
                            a->f->model_type);
    if (vllm && lf_vllm(a, cfg, err)) return -1;
    if (split.tp > 1) {
        if (a->H % split.tp)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide %s (%lld): vLLM's "
                                "ShortConv splits in_proj, conv and out_proj with divide(%s, tp_size)", (long long)split.tp,
                                a->f->moe == MOE_LFM2 ? "hidden_size" : "conv_dim", (long long)a->H,
                                a->f->moe == MOE_LFM2 ? "hidden_size" : "conv_dim");
        a->lf.tp = split.tp;
    }
    return 0;
}
