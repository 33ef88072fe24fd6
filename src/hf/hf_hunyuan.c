/*
 * hf_hunyuan.c — Tencent HunYuan (model_types "hunyuan_v1_dense" and "hunyuan_v1_moe", issue 31): the keys of the
 * HunYuan checkpoints' config.json that the two family rows of src/hf/hf.c do not read, checked against what
 * HunYuanDenseV1ForCausalLM / HunYuanMoEV1ForCausalLM build. The layers are the rows' (LlamaDecoderLayer's template,
 * query_layernorm / key_layernorm after the rotation, HunYuanMoEV1Moe as SparseMoE style hunyuan_v1_moe).
 *
 * Sources:
 *  - huggingface/transformers models/hunyuan_v1_moe/configuration_hunyuan_v1_moe.py @
 *    6e4054ae4d2748051a0080ccb6eebfbcc0848d88 and models/hunyuan_v1_dense/configuration_hunyuan_v1_dense.py @
 *    28ca27cb2b78dae855b6e9ce1461fed18a9a9594: num_experts (int or list) 1, moe_topk (int or list) 1; the classes
 *    declare no moe_intermediate_size, num_shared_expert, use_mixed_mlp_moe, use_qk_norm, use_cla or mlp_bias (the
 *    checkpoints' config.json carries them: PretrainedConfig keeps them as attributes nobody reads). The
 *    configuration files were not readable at 0233e509 (the modeling files' commit); HunYuanMoEV1Experts reads
 *    config.num_local_experts there, taken here as num_experts (an alias not read at a pinned commit).
 *  - models/hunyuan_v1_moe/modeling_hunyuan_v1_moe.py and models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py @
 *    0233e509531ace915c8241b4c16c8032a583279c: HunYuanMoEV1Attention builds query_layernorm / key_layernorm
 *    unconditionally; HunYuanMoEV1Moe builds gate (num_experts, or num_experts[layer_idx] for a list), experts
 *    (HunYuanMoEV1Experts of config.intermediate_size), shared_mlp (HunYuanMoEV1MLP of intermediate_size)
 *    unconditionally, top_k = moe_topk or moe_topk[layer_idx]; HunYuan*MLP's projections bias=False;
 *    HunYuan*RotaryEmbedding: rope_type "dynamic" with rope_parameters["alpha"]: base = rope_theta * alpha **
 *    (head_dim / (head_dim - 2)), inv_freq and original_inv_freq non-persistent buffers of head_dim / 2 floats
 *    (the alpha changes their values, no size).
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static const cJSON *item(const rd *r, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, k);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* a whole number from lo to hi, or a list of num_hidden_layers of them all equal: *out; 1 when absent */
static int per_layer(rd *r, const arch *a, const char *k, int64_t lo, int64_t hi, int64_t *out, bool *absent)
{
    const cJSON *v = item(r, k);
    *absent = !v;
    if (!v) return 0;
    const cJSON *first = cJSON_IsArray(v) ? v->child : v;
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) != a->N)
        return vc__hf_bad(r, k, "a list of %d: expected one value per layer (num_hidden_layers %lld)", cJSON_GetArraySize(v),
                          (long long)a->N);
    for (const cJSON *e = first; e; e = cJSON_IsArray(v) ? e->next : NULL) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < (double)lo ||
            e->valuedouble > (double)hi)
            return vc__hf_bad(r, k, "expected a whole number from %lld to %lld, or a list of them per layer", (long long)lo,
                              (long long)hi);
        if (e->valuedouble != first->valuedouble)
            return vc__hf_bad(r, k, "differs between layers: per-layer values are not modelled");
        if (!cJSON_IsArray(v)) break;
    }
    *out = (int64_t)first->valuedouble;
    return 0;
}

static bool truthy(const cJSON *v) { return cJSON_IsTrue(v) || (cJSON_IsNumber(v) && v->valuedouble != 0); }
static bool falsy(const cJSON *v) { return cJSON_IsFalse(v) || (cJSON_IsNumber(v) && v->valuedouble == 0); }

int vc__hf_hunyuan_read(rd *r, arch *a)
{
    const cJSON *v;
    if ((v = item(r, "use_qk_norm")) && !cJSON_IsBool(v) && !cJSON_IsNumber(v))
        return vc__hf_bad(r, "use_qk_norm", "expected a bool");
    if (v && falsy(v))
        return vc__hf_bad(r, "use_qk_norm", "false: HunYuan's attention builds query_layernorm / key_layernorm whatever the "
                          "key says (the modeling file does not read it)");
    if ((v = item(r, "use_cla")) && !cJSON_IsBool(v) && !cJSON_IsNumber(v)) return vc__hf_bad(r, "use_cla", "expected a bool");
    if (v && truthy(v))
        return vc__hf_bad(r, "use_cla", "true: cross-layer attention (shared keys and values) is not in transformers' "
                          "HunYuan modeling files, so it is not modelled");
    if ((v = item(r, "mlp_bias")) && !cJSON_IsBool(v) && !cJSON_IsNumber(v)) return vc__hf_bad(r, "mlp_bias", "expected a bool");
    if (v && truthy(v))
        return vc__hf_bad(r, "mlp_bias", "true: HunYuan's MLPs are built with bias=False whatever the key says");
    const cJSON *rs = item(r, "rope_scaling");
    if (rs && cJSON_IsObject(rs) && (v = cJSON_GetObjectItemCaseSensitive(rs, "alpha")) && !cJSON_IsNull(v) &&
        (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0))
        return vc__hf_bad(r, "rope_scaling.alpha", "expected a positive number (the dynamic-NTK base rope_theta * alpha ** "
                          "(head_dim / (head_dim - 2)))");
    if (a->f->moe != MOE_HUNYUAN) return 0;
    if (a->experts_impl == EXPERTS_PER_EXPERT) {
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert: %s's experts are modelled with "
                     "transformers 5's stacked HunYuanMoEV1Experts (grouped_mm); transformers 4.x's nn.ModuleList of "
                     "HunYuanMoEV1MLP is not written", r->fam);
        return -1;
    }
    bool absent;
    a->K = 1; /* HunYuanMoEV1Config's moe_topk default */
    if (per_layer(r, a, "moe_topk", 1, a->E, &a->K, &absent)) return -1;
    int64_t mi = a->I, ns = 1;
    if (per_layer(r, a, "moe_intermediate_size", 1, INT64_C(1) << 40, &mi, &absent)) return -1;
    if (mi != a->I)
        return vc__hf_bad(r, "moe_intermediate_size", "%lld: transformers' HunYuanMoEV1Experts are intermediate_size (%lld) "
                          "wide and do not read this key", (long long)mi, (long long)a->I);
    if (per_layer(r, a, "num_shared_expert", 0, 1024, &ns, &absent)) return -1;
    if (ns != 1)
        return vc__hf_bad(r, "num_shared_expert", "%lld: HunYuanMoEV1Moe builds one shared_mlp of intermediate_size and "
                          "does not read this key", (long long)ns);
    if ((v = item(r, "use_mixed_mlp_moe")) && !cJSON_IsBool(v) && !cJSON_IsNumber(v))
        return vc__hf_bad(r, "use_mixed_mlp_moe", "expected a bool");
    if (v && falsy(v))
        return vc__hf_bad(r, "use_mixed_mlp_moe", "false: HunYuanMoEV1Moe builds its shared_mlp whatever the key says");
    a->moe_I = a->I;    /* HunYuanMoEV1Experts: config.intermediate_size */
    a->shared_I = a->I; /* shared_mlp = HunYuanMoEV1MLP(config) */
    a->norm_topk = true;
    return 0;
}
