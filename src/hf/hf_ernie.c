/*
 * hf_ernie.c — ERNIE 4.5 MoE (model_type "ernie4_5_moe", issue 31): the keys of Ernie4_5_MoeConfig the family row of
 * src/hf/hf.c does not read, checked against what Ernie4_5_MoeForCausalLM builds. The layers are the row's
 * (LlamaDecoderLayer's template, Ernie4_5's interleaved float32 rotation, Ernie4_5_MoeSparseMoeBlock as SparseMoE
 * style ernie4_5_moe where layer_is_moe says).
 *
 * Sources:
 *  - huggingface/transformers models/ernie4_5_moe/configuration_ernie4_5_moe.py @
 *    001f85b38fb432858ace93f18622f07cec46d874: Ernie4_5_MoeConfig (moe_layer_end_index -1 -> num_hidden_layers - 1,
 *    moe_num_shared_experts 2, moe_norm_min 1e-12, use_bias False, output_router_logits False);
 *  - models/ernie4_5_moe/modeling_ernie4_5_moe.py @ 0233e509531ace915c8241b4c16c8032a583279c:
 *    Ernie4_5_MoeDecoderLayer (a layer is Ernie4_5_MoeSparseMoeBlock when (layer_idx + 1) % moe_layer_interval == 0 and
 *    moe_layer_start_index <= layer_idx <= moe_layer_end_index), Ernie4_5_MoeSparseMoeBlock (shared_experts =
 *    Ernie4_5_MoeMLP(config, moe_intermediate_size * moe_num_shared_experts) when > 0), Ernie4_5_MoeMLP and
 *    Ernie4_5_MoeForCausalLM.lm_head (bias=config.use_bias), load_balancing_loss_func (output_router_logits).
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

int vc__hf_ernie_moe_read(rd *r, arch *a)
{
    if (a->experts_impl == EXPERTS_PER_EXPERT) {
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert: %s's routed experts are modelled with "
                     "transformers 5's stacked experts (Ernie4_5_MoeExperts, grouped_mm); transformers 4.x's nn.ModuleList "
                     "of Ernie4_5_MoeMLP is not written", r->fam);
        return -1;
    }
    const cJSON *ub = cJSON_GetObjectItemCaseSensitive(r->cfg, "use_bias");
    if (cJSON_IsTrue(ub) || (cJSON_IsNumber(ub) && ub->valuedouble != 0))
        return vc__hf_bad(r, "use_bias", "true: the biases of lm_head and of the shared experts' Ernie4_5_MoeMLP are not "
                          "modelled (the ERNIE-4.5 MoE checkpoints have none)");
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(r->cfg, "moe_layer_end_index");
    a->moe_end = a->N - 1;
    if (end && !cJSON_IsNull(end)) {
        if (!cJSON_IsNumber(end) || end->valuedouble != floor(end->valuedouble) || end->valuedouble < -1 ||
            end->valuedouble > (double)(a->N - 1))
            return vc__hf_bad(r, "moe_layer_end_index", "expected -1 (the last layer) or a layer index from 0 to %lld",
                              (long long)(a->N - 1));
        if (end->valuedouble >= 0) a->moe_end = (int64_t)end->valuedouble;
    }
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(r->cfg, "moe_num_shared_experts");
    a->n_shared = 2; /* Ernie4_5_MoeConfig's default */
    if (ns && !cJSON_IsNull(ns)) {
        if (!cJSON_IsNumber(ns) || ns->valuedouble != floor(ns->valuedouble) || ns->valuedouble < 0 || ns->valuedouble > 1024)
            return vc__hf_bad(r, "moe_num_shared_experts", "expected a whole number from 0 to 1024");
        a->n_shared = (int64_t)ns->valuedouble;
    }
    a->shared_I = a->moe_I * a->n_shared; /* Ernie4_5_MoeMLP(config, moe_intermediate_size * moe_num_shared_experts) */
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(r->cfg, "moe_norm_min");
    if (nm && !cJSON_IsNull(nm) && (!cJSON_IsNumber(nm) || !isfinite(nm->valuedouble) || nm->valuedouble <= 0))
        return vc__hf_bad(r, "moe_norm_min", "expected a positive number (the clamp of the top-k weights' sum)");
    return vc__hf_no_router_logits(r); /* hf_olmoe.c */
}
