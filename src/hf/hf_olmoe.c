/*
 * hf_olmoe.c — OLMoE (model_type "olmoe", issue 31): the keys of OlmoeConfig the family row of src/hf/hf.c does not
 * read, checked against what OlmoeForCausalLM builds. The layers are the row's (LlamaDecoderLayer's template with
 * OlmoeRMSNorm, q_norm / k_norm over the whole projections, the SparseMoE style qwen2_moe without a shared expert).
 *
 * Sources:
 *  - huggingface/transformers models/olmoe/configuration_olmoe.py @ 008e574391258935f3ecc3035c882e73bbcac419:
 *    OlmoeConfig (clip_qkv None, output_router_logits False, num_key_value_heads None -> num_attention_heads; no
 *    head_dim attribute);
 *  - models/olmoe/modeling_olmoe.py @ 0233e509531ace915c8241b4c16c8032a583279c: OlmoeAttention (head_dim
 *    getattr(config, "head_dim", hidden_size // num_attention_heads), but q_norm = OlmoeRMSNorm(hidden_size) and
 *    k_norm = OlmoeRMSNorm(hidden_size // heads * kv_heads) on q_proj's and k_proj's outputs: another head_dim
 *    does not run; clip_qkv: query/key/value_states.clamp_ in place), OlmoeForCausalLM (the auxiliary
 *    load_balancing_loss_func with output_router_logits).
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

int vc__hf_olmoe_read(rd *r, arch *a)
{
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(r->cfg, "head_dim");
    if (hd && !cJSON_IsNull(hd) && (!cJSON_IsNumber(hd) || hd->valuedouble != (double)(a->H / a->NH)))
        return vc__hf_bad(r, "head_dim", "OlmoeAttention's q_norm is OlmoeRMSNorm(hidden_size): head_dim must be "
                          "hidden_size / num_attention_heads (%lld)", (long long)(a->H / a->NH));
    const cJSON *clip = cJSON_GetObjectItemCaseSensitive(r->cfg, "clip_qkv");
    if (clip && !cJSON_IsNull(clip)) {
        if (!cJSON_IsNumber(clip) || !isfinite(clip->valuedouble) || clip->valuedouble <= 0)
            return vc__hf_bad(r, "clip_qkv", "expected null or a positive number");
        return vc__hf_bad(r, "clip_qkv", "%g: OlmoeAttention's in-place clamp_ of the query, key and value states is "
                          "not modelled (OLMoE-1B-7B's is null)", clip->valuedouble);
    }
    return vc__hf_no_router_logits(r);
}

int vc__hf_no_router_logits(rd *r)
{
    const cJSON *orl = cJSON_GetObjectItemCaseSensitive(r->cfg, "output_router_logits");
    if (orl && !cJSON_IsNull(orl) && !cJSON_IsBool(orl)) return vc__hf_bad(r, "output_router_logits", "expected true or false");
    if (cJSON_IsTrue(orl))
        return vc__hf_bad(r, "output_router_logits", "true: the auxiliary load-balancing loss (load_balancing_loss_func) is "
                          "not modelled");
    return 0;
}
