/*
 * hf_minimax_m2.c — MiniMax-M2 / M2.1 (model_type "minimax_m2", issue 31): the keys of the
 * checkpoint's config.json that MiniMaxM2Config does not declare, checked against what
 * MiniMaxM2ForCausalLM builds. The layers are the family row's (src/hf/hf.c: LlamaDecoderLayer's
 * template, q_norm / k_norm over all heads, the SparseMoE style minimax_m2 of layers/llm.c).
 *
 * Sources:
 *  - huggingface/transformers, models/minimax_m2/configuration_minimax_m2.py @ 3e108993dfb76b70428b374a3536e75465bb792c
 *    MiniMaxM2Config.convert_rope_params_to_dict: rope_parameters["partial_rotary_factor"] =
 *    kwargs.pop("rotary_dim", self.head_dim // 2) / self.head_dim (the config's rotary_dim, else half
 *    the head), overwriting any partial_rotary_factor; MiniMaxM2RotaryEmbedding
 *    .compute_default_rope_parameters: dim = int(head_dim * partial_rotary_factor);
 *  - models/minimax_m2/modeling_minimax_m2.py @ 0205eec1d869591488aa74eda3f2da23610c28d9:
 *    MiniMaxM2Attention (q/k/v/o nn.Linear bias=False whatever attention_bias says; q_norm =
 *    MiniMaxM2RMSNorm(num_attention_heads * head_dim), k_norm = MiniMaxM2RMSNorm(num_key_value_heads *
 *    head_dim) always), MiniMaxM2TopKRouter (sigmoid always, + e_score_correction_bias always),
 *    MiniMaxM2SparseMoeBlock (no shared expert; router_jitter_noise multiplies the hidden states in
 *    place in training), MiniMaxM2Model (every layer full attention: "No sliding window opposed to
 *    mixtral"; no MTP module), MiniMaxM2ForCausalLM (load_balancing_loss_func with output_router_logits);
 *    the family exists from transformers 5 on, its experts under @use_experts_implementation;
 *  - vllm-project/vllm, vllm/model_executor/models/minimax_m2.py @ 01d995867291dd13119ea66cd18e3c9c9b51c50e:
 *    MiniMaxM2MoE (FusedMoE(scoring_func=config.scoring_func, e_score_correction_bias when
 *    use_routing_bias, renormalize=True), no shared expert), MiniMaxM2Attention (QKVParallelLinear
 *    bias=attention_bias, MiniMaxText01RMSNormTP q_norm / k_norm), load_weights skipping the MTP layers
 *    (get_spec_layer_idx_from_weight_name: num_mtp_modules).
 * A key whose value would make transformers and vLLM build another model than the one written here
 * (or one of them fail) is refused naming it; the MTP modules are read and checked, not built: neither
 * transformers nor vLLM's main model loads them.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static const cJSON *mm_key(const rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

/* a boolean key the checkpoint sets; `want` is the only value the modeling code builds */
static int mm_bool(rd *r, const char *key, bool want, const char *why)
{
    const cJSON *v = mm_key(r, key);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return vc__hf_bad(r, key, "expected true or false");
    if (cJSON_IsTrue(v) != want) return vc__hf_bad(r, key, "%s: %s", want ? "false" : "true", why);
    return 0;
}

/* a string key; `want` its only value built */
static int mm_str(rd *r, const char *key, const char *want, const char *why)
{
    const cJSON *v = mm_key(r, key);
    if (!v) return 0;
    if (!cJSON_IsString(v)) return vc__hf_bad(r, key, "expected a string");
    if (strcmp(v->valuestring, want)) {
        char e[64];
        vc_escape(e, sizeof e, v->valuestring);
        return vc__hf_bad(r, key, "\"%s\": only \"%s\" is built (%s)", e, want, why);
    }
    return 0;
}

/* a non-negative integer key (absent: 0) */
static int mm_int(rd *r, const char *key, int64_t *out)
{
    const cJSON *v = mm_key(r, key);
    *out = 0;
    if (!v) return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d != floor(d) || d < 0 || d > (double)MAX_SIZE)
        return vc__hf_bad(r, key, "expected a non-negative integer");
    *out = (int64_t)d;
    return 0;
}

int vc__hf_minimax_m2_read(rd *r, arch *a)
{
    if (a->experts_impl == EXPERTS_PER_EXPERT) { /* MiniMaxM2Experts: stacked nn.Parameters, transformers 5 only */
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert: minimax_m2's experts are stacked "
                     "(MiniMaxM2Experts, transformers 5 only); grouped_mm, transformers 5's default, is modelled");
        return -1;
    }
    if (a->act > A_RELU) /* the SparseMoE layer's activations (layers/llm.c act_names) */
        return vc__hf_bad(r, "hidden_act", "the experts' activation is modelled for silu, gelu, gelu_pytorch_tanh and relu");
    /* rotary_dim: int(head_dim * (rotary_dim / head_dim)); absent: head_dim // 2. null is passed on as None
     * (kwargs.pop returns it) and fails in the division */
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(r->cfg, "rotary_dim");
    int64_t rot = a->D / 2;
    if (rv) {
        double d = cJSON_IsNumber(rv) ? rv->valuedouble : NAN;
        if (!isfinite(d) || d != floor(d) || d < 1 || d > (double)a->D)
            return vc__hf_bad(r, "rotary_dim", "expected an integer from 1 to head_dim (%lld)", (long long)a->D);
        rot = (int64_t)((double)a->D * (d / (double)a->D));
    }
    if (rot < 2 || rot % 2) /* inv_freq: arange(0, dim, 2); rotate_half splits the rotated part in two */
        return vc__hf_bad(r, rv ? "rotary_dim" : "head_dim", "%lld: the rotated part of each head must be even and at least 2",
                          (long long)rot);
    a->R = rot;
    if (mm_bool(r, "use_qk_norm", true, "MiniMaxM2Attention builds q_norm and k_norm whatever it says (transformers and vLLM)") ||
        mm_str(r, "qk_norm_type", "per_layer", "MiniMaxM2Attention's q_norm / k_norm span all heads") ||
        mm_str(r, "scoring_func", "sigmoid", "MiniMaxM2TopKRouter's routing; vLLM's FusedMoE would score otherwise") ||
        mm_bool(r, "use_routing_bias", true, "MiniMaxM2TopKRouter always adds e_score_correction_bias; vLLM would not") ||
        mm_bool(r, "attention_bias", false, "MiniMaxM2Attention's projections have no bias; vLLM's qkv_proj would") ||
        mm_bool(r, "output_router_logits", false, "the auxiliary load-balancing loss (load_balancing_loss_func) is not "
                "modelled"))
        return -1;
    int64_t shared = 0, mtp = 0, mtp_layers = 0;
    if (mm_int(r, "shared_intermediate_size", &shared)) return -1;
    if (shared) /* neither MiniMaxM2SparseMoeBlock nor vLLM's MiniMaxM2MoE builds a shared expert */
        return vc__hf_bad(r, "shared_intermediate_size", "%lld: MiniMaxM2SparseMoeBlock has no shared expert (transformers "
                          "and vLLM build none)", (long long)shared);
    const cJSON *jit = mm_key(r, "router_jitter_noise");
    if (jit && (!cJSON_IsNumber(jit) || !isfinite(jit->valuedouble) || jit->valuedouble < 0))
        return vc__hf_bad(r, "router_jitter_noise", "expected a non-negative number");
    if (jit && jit->valuedouble > 0) /* hidden_states *= torch.empty_like(hidden_states).uniform_(...) in training */
        return vc__hf_bad(r, "router_jitter_noise", "%.17g: the training jitter (an empty_like and an in-place product "
                          "per layer) is not modelled", jit->valuedouble);
    /* attn_type_list: MiniMax-Text-01's per-layer attention (0 lightning, 1 softmax); MiniMaxM2Model runs full
     * softmax attention on every layer */
    const cJSON *al = mm_key(r, "attn_type_list");
    if (al) {
        if (!cJSON_IsArray(al) || cJSON_GetArraySize(al) != a->N)
            return vc__hf_bad(r, "attn_type_list", "expected a list of %lld layer types (1: full attention)", (long long)a->N);
        for (const cJSON *e = al->child; e; e = e->next)
            if (!cJSON_IsNumber(e) || e->valuedouble != 1)
                return vc__hf_bad(r, "attn_type_list", "expected 1 (full softmax attention) for each layer: MiniMaxM2Model "
                                  "has no lightning (linear) attention layers");
    }
    /* the MTP modules: checked, not built (MiniMaxM2ForCausalLM has none; vLLM's load_weights skips them) */
    if (mm_key(r, "use_mtp") && !cJSON_IsBool(mm_key(r, "use_mtp"))) return vc__hf_bad(r, "use_mtp", "expected true or false");
    if (mm_int(r, "num_mtp_modules", &mtp) || mm_int(r, "mtp_transformer_layers", &mtp_layers)) return -1;
    a->nextn = mtp * (mtp_layers > 0 ? mtp_layers : 1);
    return 0;
}
