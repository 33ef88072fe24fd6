/*
 * hf_deepseek_v2.c — DeepSeek-V2 (model_type deepseek_v2: DeepSeek-V2, V2-Lite, V2.5,
 * DeepSeek-Coder-V2; issue 31): the keys of DeepseekV2Config that the row's generic reading
 * (hf_read.c) cannot check. The row (src/hf/hf.c) reuses DeepSeek-V3's modules: MLA
 * (layers/mla.c MLAttention with complex_rope) and SparseMoE style deepseek_v2 (layers/llm.c).
 *
 * Sources, huggingface/transformers:
 *  - configuration_deepseek_v2.py @ 008e574391258935f3ecc3035c882e73bbcac419, DeepseekV2Config:
 *    n_group, topk_group and num_experts_per_tok None by default, topk_method "greedy",
 *    n_shared_experts 2, routed_scaling_factor 1.0, first_k_dense_replace 0, norm_topk_prob False,
 *    __post_init__: head_dim = qk_rope_head_dim, num_key_value_heads None -> num_attention_heads.
 *  - modeling_deepseek_v2.py @ 0233e509531ace915c8241b4c16c8032a583279c:
 *    DeepseekV2Moe.route_tokens_to_experts: softmax scores; "greedy": topk(k);
 *    "group_limited_greedy": view(T, num_group, -1).max(-1), topk(topk_group), the mask,
 *    topk(k) (any other topk_method leaves topk_weight unbound: UnboundLocalError);
 *    DeepseekV2Moe.forward adds self.shared_experts(residuals) unconditionally (the module
 *    exists only when n_shared_experts is not None: AttributeError otherwise);
 *    DeepseekV2MLP: gate/up/down with bias=config.mlp_bias (the shared experts too);
 *    DeepseekV2DecoderLayer: DeepseekV2Moe where layer_idx >= first_k_dense_replace (the
 *    checkpoint's remote code also asked layer_idx % moe_layer_freq == 0; transformers does not);
 *    apply_rotary_emb: view_as_complex(x.float().reshape(..., -1, 2)) (an even rope dim);
 *    DeepseekV2Attention: the key has num_attention_heads heads, repeat_kv by
 *    num_attention_heads // num_key_value_heads (sdpa_attention_forward) would not match the
 *    query unless they are equal.
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static const cJSON *ds2_raw(rd *r, const char *key) { return cJSON_GetObjectItemCaseSensitive(r->cfg, key); }

int vc__hf_deepseek_v2_read(rd *r, arch *a)
{
    if (a->experts_impl == EXPERTS_PER_EXPERT) {
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert: %s's routed experts are modelled with "
                     "transformers 5's stacked experts (DeepseekV2Experts, grouped_mm)", r->fam);
        return -1;
    }
    /* topk_method: "greedy" when absent; None (or another name) leaves topk_weight unbound */
    const cJSON *tm = ds2_raw(r, "topk_method");
    a->topk_method = 0;
    if (tm) {
        if (!cJSON_IsString(tm) || (strcmp(tm->valuestring, "greedy") && strcmp(tm->valuestring, "group_limited_greedy")))
            return vc__hf_bad(r, "topk_method", "expected \"greedy\" or \"group_limited_greedy\" (DeepseekV2Moe."
                              "route_tokens_to_experts has no other)");
        a->topk_method = !strcmp(tm->valuestring, "group_limited_greedy");
    }
    if (a->topk_method) { /* router_logits.view(T, self.num_group, -1), topk(group_scores, k=self.topk_group) */
        static const char *const gk[2] = {"n_group", "topk_group"};
        for (int i = 0; i < 2; i++) {
            const cJSON *v = ds2_raw(r, gk[i]);
            if (!v || cJSON_IsNull(v))
                return vc__hf_bad(r, gk[i], "missing: topk_method group_limited_greedy needs it (DeepseekV2Config's "
                                  "default is None)");
        }
        if (a->E % a->n_group)
            return vc__hf_bad(r, "n_group", "%lld groups: n_routed_experts (%lld) must split into them", (long long)a->n_group,
                              (long long)a->E);
        if (a->topk_group > a->n_group)
            return vc__hf_bad(r, "topk_group", "%lld is more than n_group (%lld)", (long long)a->topk_group,
                              (long long)a->n_group);
    }
    const cJSON *ns = ds2_raw(r, "n_shared_experts");
    if (cJSON_IsNull(ns))
        return vc__hf_bad(r, "n_shared_experts", "null: DeepseekV2Moe.forward adds self.shared_experts(residuals), which "
                          "then does not exist");
    const cJSON *freq = ds2_raw(r, "moe_layer_freq");
    if (freq && !(cJSON_IsNumber(freq) && freq->valuedouble == 1))
        return vc__hf_bad(r, "moe_layer_freq", "only 1 is modelled: transformers' DeepseekV2DecoderLayer makes every layer "
                          "from first_k_dense_replace on a MoE layer");
    const cJSON *sf = ds2_raw(r, "scoring_func");
    if (sf && !(cJSON_IsString(sf) && !strcmp(sf->valuestring, "softmax")))
        return vc__hf_bad(r, "scoring_func", "expected \"softmax\" (DeepseekV2Moe's routing)");
    if (a->mlp_bias)
        return vc__hf_bad(r, "mlp_bias", "true (biased DeepseekV2MLP shared experts) is not modelled");
    if (a->D % 2)
        return vc__hf_bad(r, "qk_rope_head_dim", "%lld: apply_rotary_emb pairs the rotary part's elements (it must be even)",
                          (long long)a->D);
    if (a->KV != a->NH)
        return vc__hf_bad(r, "num_key_value_heads", "%lld: MLA's keys have num_attention_heads (%lld) heads, and repeat_kv "
                          "by their ratio would not match the query", (long long)a->KV, (long long)a->NH);
    return 0;
}
