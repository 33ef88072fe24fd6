/*
 * hf_qwen3_vl_moe.c — what the qwen3_vl_moe row of the family table (src/hf/hf.c) cannot say
 * (issue 31): Qwen3-VL-30B-A3B and Qwen3-VL-235B-A22B (Qwen3VLMoeForConditionalGeneration).
 *
 * The language model, the MoE block and the vision tower are the row's (qwen3_moe's stacked experts,
 * Qwen3-VL's tower and deepstack). mlp_only_layers is checked here (integers naming layers); two
 * things are the family's own:
 *
 *  - lm_head's tie. Qwen3VLMoeConfig.tie_word_embeddings defaults to False, Qwen3VLMoeTextConfig's to
 *    True (configuration_qwen3_vl_moe.py @ 008e5743). Qwen3VLMoeForConditionalGeneration ties lm_head to
 *    model.language_model.embed_tokens by its own config, the top-level one (transformers 5
 *    PreTrainedModel.get_expanded_tied_weights_keys: getattr(self.config, "tie_word_embeddings")). The
 *    published checkpoints set the top-level key false and leave text_config without one; their
 *    safetensors hold lm_head.weight and the model cards' 31.1B / 236B count it (tests/test_fam_qwen3_vl_moe.c).
 *    text_config's value is read (a bool) and not used: from transformers 5.5 the text config's True beside the
 *    outer False is the published configs' normal state, and the outer one gates the tie
 *    (NVIDIA-NeMo/Automodel pull request 2268, "Fix Qwen3-VL-MoE lm_head checkpoint loading").
 *
 *  - the experts of the releases before 5. Qwen3VLMoeTextExperts holds stacked nn.Parameters in every
 *    release that has the model (4.57 on): transformers 4.57's gate_up_proj [E, H, 2 moe_I] and down_proj
 *    [E, moe_I, H], looped over one select()ed expert at a time in training and run as a bmm over every
 *    expert on num_experts repeated copies of the tokens in inference (modeling_qwen3_vl_moe.py,
 *    Qwen3VLMoeTextExperts.forward at v4.57.0); transformers 5's gate_up_proj [E, 2 moe_I, H] under
 *    @use_experts_implementation (modeling_qwen3_vl_moe.py @ 0142cff2: grouped_mm by default). Neither 4.x
 *    path is the per-expert nn.ModuleList that per_expert models (src/policy/release.c VC_TF_EXPERTS):
 *    per_expert, named or the release's default, is refused, as gpt_oss's is.
 */
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

int vc__hf_qwen3_vl_moe_experts(const arch *a, int release, bool from_release, vc_error *err)
{
    /* models/qwen3_vl_moe came with transformers v4.57.0 (its release notes: Qwen3-VL) */
    if (release > 0 && release < 457) {
        vc_set_error(err, VC_ERR_USAGE, O("transformers"), "%d.%d has no qwen3_vl_moe: "
                     "Qwen3VLMoeForConditionalGeneration came with transformers 4.57", release / 100, release % 100);
        return -1;
    }
    if (a->experts_impl != EXPERTS_PER_EXPERT) return 0;
    vc_set_error(err, VC_ERR_USAGE, from_release ? O("transformers") : O("experts_implementation"),
                 "%sper_expert is not modelled for qwen3_vl_moe: Qwen3VLMoeTextExperts has stacked weights in every "
                 "release (transformers 4.x looped over them in training and ran every expert on every token in "
                 "inference); grouped_mm (transformers 5's default) is",
                 from_release ? "a release before 5.0 runs the experts as 4.x did; " : "");
    return -1;
}

int vc__hf_qwen3_vl_moe_read(const cJSON *root, arch *a, vc_error *err)
{
    /* mlp_only_layers: list[int] | None (Qwen3VLMoeTextConfig is @strict; the row read it as a list), each index
     * a layer that Qwen3VLMoeTextDecoderLayer builds dense: one that names no layer is refused as a mistake
     * (transformers would ignore it) */
    for (const cJSON *e = a->mlp_only ? a->mlp_only->child : NULL; e; e = e->next)
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= (double)a->N || /* in range: then cast */
            e->valuedouble != (double)(int64_t)e->valuedouble) {
            vc_set_error(err, VC_ERR_MODEL, "text_config.mlp_only_layers", "expected layer indices from 0 to "
                         "num_hidden_layers - 1 (%lld): the layers built with Qwen3VLMoeTextMLP", (long long)a->N - 1);
            return -1;
        }
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (top && !cJSON_IsNull(top) && !cJSON_IsBool(top)) {
        vc_set_error(err, VC_ERR_MODEL, "tie_word_embeddings", "expected true or false (Qwen3VLMoeConfig: whether "
                     "lm_head is embed_tokens)");
        return -1;
    }
    const bool tie = cJSON_IsTrue(top); /* absent or null: Qwen3VLMoeConfig's False; text_config's not used */
    a->tie = tie;
    return 0;
}
