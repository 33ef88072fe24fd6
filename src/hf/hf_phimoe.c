/*
 * hf_phimoe.c — Phi-3.5-MoE (model_type "phimoe", issue 31): the keys of PhimoeConfig the family row of
 * src/hf/hf.c does not read, checked against what PhimoeForCausalLM builds. The layers are the row's
 * (LlamaDecoderLayer's template with nn.LayerNorm norms, the SparseMoE style phimoe of layers/llm.c, the final
 * nn.LayerNorm, the biased lm_head).
 *
 * Sources:
 *  - huggingface/transformers models/phimoe/configuration_phimoe.py @ 23925e160765f64e73942fe794d73a753c4b5732:
 *    PhimoeConfig.__init__ (num_key_value_heads None -> num_attention_heads, router_jitter_noise 0.01,
 *    input_jitter_noise 0.0, attention_bias and lm_head_bias False by default; rope_scaling's short_mscale /
 *    long_mscale must be numbers);
 *  - models/phimoe/modeling_phimoe.py @ 0233e509531ace915c8241b4c16c8032a583279c (transformers 5):
 *    sparsemixer (two picks whatever num_experts_per_tok says: torch.concat of two [T, 1] choices; jitter_eps =
 *    router_jitter_noise only sets a threshold, no tensor), PhimoeTopKRouter / PhimoeSparseMoeBlock (the
 *    input_jitter_noise jitter in training), PhimoeForCausalLM (lm_head bias=config.lm_head_bias; the auxiliary
 *    loss with output_router_logits);
 *  - vllm-project/vllm vllm/model_executor/models/phimoe.py: its routing (phimoe_routing_function) asserts
 *    topk == 2.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static const cJSON *pm_key(const rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static int pm_num(rd *r, const char *key, double def, double max, double *out)
{
    const cJSON *v = pm_key(r, key);
    *out = def;
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > max)
        return vc__hf_bad(r, key, "expected a number from 0 to %g", max);
    *out = v->valuedouble;
    return 0;
}

int vc__hf_phimoe_read(rd *r, arch *a)
{
    if (a->experts_impl == EXPERTS_PER_EXPERT) { /* transformers 4.x's PhimoeBlockSparseTop2MLP loop: not written */
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert is not modelled for phimoe: "
                     "transformers 5's PhimoeExperts through grouped_mm (its default) is");
        return -1;
    }
    if (a->act > A_RELU) /* the SparseMoE layer's activations (layers/llm.c act_names) */
        return vc__hf_bad(r, "hidden_act", "the experts' activation is modelled for silu, gelu, gelu_pytorch_tanh and relu");
    /* PhimoeConfig.__init__: num_key_value_heads=8 by default, None -> num_attention_heads (the row reads null and a
     * given value so); absent, the default's 8 must divide the heads (num_key_value_groups) */
    if (!cJSON_GetObjectItemCaseSensitive(r->cfg, "num_key_value_heads")) {
        if (a->NH % 8)
            return vc__hf_bad(r, "num_key_value_heads", "absent: PhimoeConfig's default 8 must divide num_attention_heads "
                              "(%lld)", (long long)a->NH);
        a->KV = 8;
    }
    if (a->K != 2) /* sparsemixer picks two experts; vLLM's phimoe_routing_function asserts topk == 2 */
        return vc__hf_bad(r, "num_experts_per_tok", "%lld: sparsemixer routes every token to 2 experts (transformers runs "
                          "2 whatever it says, vLLM asserts 2)", (long long)a->K);
    const cJSON *lb = pm_key(r, "lm_head_bias");
    if (lb && !cJSON_IsBool(lb)) return vc__hf_bad(r, "lm_head_bias", "expected true or false");
    a->lm_bias = lb && cJSON_IsTrue(lb);
    double rj;
    if (pm_num(r, "input_jitter_noise", 0.0, 1.0, &a->jitter) || pm_num(r, "router_jitter_noise", 0.01, 1e6, &rj)) return -1;
    const cJSON *orl = pm_key(r, "output_router_logits");
    if (orl && !cJSON_IsBool(orl)) return vc__hf_bad(r, "output_router_logits", "expected true or false");
    if (orl && cJSON_IsTrue(orl))
        return vc__hf_bad(r, "output_router_logits", "true: the auxiliary load-balancing loss (load_balancing_loss_func) is "
                          "not modelled");
    /* PhimoeConfig.__init__: rope_scaling's short_mscale and long_mscale must be numbers (ValueError otherwise) */
    const cJSON *rs = pm_key(r, "rope_scaling");
    if (cJSON_IsObject(rs)) {
        static const char *const ms[] = {"short_mscale", "long_mscale"};
        for (int i = 0; i < 2; i++)
            if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(rs, ms[i]))) {
                char key[48];
                snprintf(key, sizeof key, "rope_scaling.%s", ms[i]);
                return vc__hf_bad(r, key, "expected a number (PhimoeConfig requires it with rope_scaling)");
            }
    }
    return 0;
}
