/*
 * hf_glm4.c — GLM-4's keys the family row cannot check (issue 31): the rotary part of each head.
 *
 * Glm4Config (models/glm4/configuration_glm4.py @ 008e5743) sets partial_rotary_factor 0.5 in
 * __post_init__ when the config lacks it; transformers 5 keeps it in rope_parameters too
 * (RopeParameters' partial_rotary_factor). Glm4RotaryEmbedding's default rope
 * (_compute_default_rope_parameters: dim = int(head_dim * partial_rotary_factor), inv_freq over
 * arange(0, dim, 2)) and Glm4's apply_rotary_pos_emb (modeling_glm4.py @ 00d01786: cos / sin[..., :
 * cos.shape[-1] // 2].repeat_interleave(2), q[..., :rotary_dim] rotated, the rest passed through and
 * concatenated) are written for an even dim above 0 (RotaryAttention rope_style glm4): an odd dim makes
 * cos / sin one column wider than dim, none leaves torch.cat's copy of the whole query and key, neither
 * is modelled.
 */
#include <math.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"

int vc__hf_glm4_read(rd *r, arch *a)
{
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(r->cfg, "partial_rotary_factor");
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(r->cfg, "rope_parameters");
    const cJSON *inner = cJSON_IsObject(rp) ? cJSON_GetObjectItemCaseSensitive(rp, "partial_rotary_factor") : NULL;
    if (inner && !cJSON_IsNull(inner)) {
        if (!cJSON_IsNumber(inner) || !(inner->valuedouble > 0 && inner->valuedouble <= 1))
            return vc__hf_bad(r, "rope_parameters.partial_rotary_factor", "expected a number above 0, at most 1");
        if (top && !cJSON_IsNull(top) && fabs(top->valuedouble - inner->valuedouble) > 0)
            return vc__hf_bad(r, "rope_parameters.partial_rotary_factor", "%g differs from partial_rotary_factor (%g)",
                              inner->valuedouble, top->valuedouble);
        if (!top || cJSON_IsNull(top)) a->rotary = inner->valuedouble; /* the only one given */
    }
    const int64_t dim = (int64_t)((double)a->D * a->rotary); /* int(head_dim * partial_rotary_factor) */
    if (dim <= 0 || dim % 2)
        return vc__hf_bad(r, inner && (!top || cJSON_IsNull(top)) ? "rope_parameters.partial_rotary_factor"
                                                                  : "partial_rotary_factor",
                          "%g x head_dim %lld gives %lld rotary dimensions: Glm4's interleaved rotation is modelled for "
                          "an even number above 0", a->rotary, (long long)a->D, (long long)dim);
    a->R = dim;
    return 0;
}
