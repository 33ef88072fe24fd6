/*
 * hf_idefics3.c — smolvlm (SmolVLMForConditionalGeneration: SmolVLM-256M / 500M-Instruct, SmolVLM2-2.2B-Instruct)
 * and idefics3 (Idefics3ForConditionalGeneration: Idefics3-8B-Llama3), issue 31 (towers): the vision transformer
 * and the connector of vision_config / scale_factor read and checked, their weights written as frozen
 * VisionWeights layers before the language model (a LlamaConfig read from text_config by the rows, src/hf/hf.c).
 *
 * Read at huggingface/transformers:
 *  - models/smolvlm/configuration_smolvlm.py @ 9a3f708195b7eda02989d40fd03bb3714b3b37e5: SmolVLMVisionConfig
 *    (hidden_size 1152, intermediate_size 3072, num_hidden_layers 12, num_attention_heads 16, num_channels 3,
 *    image_size 224, patch_size 32, hidden_act gelu_pytorch_tanh, layer_norm_eps 1e-6); SmolVLMConfig
 *    (image_token_id 128257, tie_word_embeddings False, scale_factor 2; vision_config None -> the class's
 *    defaults; text_config a dict -> CONFIG_MAPPING[text_config.get("model_type", "llama")], None -> LlamaConfig(
 *    rms_norm_eps=1e-5, pad_token_id, tie_word_embeddings=False): LlamaConfig's sizes);
 *  - models/idefics3/configuration_idefics3.py @ 842a28d096bc356070aedfadab94bf9148a3f6ae: Idefics3VisionConfig
 *    (the same defaults); Idefics3Config (scale_factor 2, vocab_size 100000, which __init__ writes into
 *    text_config: text_config["vocab_size"] = vocab_size, and text_config.vocab_size = vocab_size);
 *  - models/smolvlm/modeling_smolvlm.py @ b282e23b453c142800d1a37a0912fcd4ec321d04 (and
 *    models/idefics3/modeling_idefics3.py @ 9a80143ca26066ee3266749a57c7b3850d8843be, the same modules):
 *    SmolVLMVisionTransformer: embeddings (patch_embedding nn.Conv2d(num_channels, hidden, patch, stride patch)
 *    with its bias; position_embedding nn.Embedding((image_size // patch_size)^2, hidden)), encoder.layers.N
 *    (self_attn.{k,v,q,out}_proj nn.Linear(hidden, hidden) with biases, layer_norm1, mlp.fc1 / fc2 with biases,
 *    layer_norm2: nn.LayerNorm weight and bias), post_layernorm; no pooling head. SmolVLMConnector:
 *    pixel_shuffle(x, scale_factor) (views, a permute and two reshapes: [B, seq / s^2, hidden s^2]), then
 *    modality_projection.proj nn.Linear(vision hidden x scale_factor^2, text hidden, bias=False).
 *    SmolVLMModel.__init__: vision_model, connector, text_model = AutoModel.from_config(text_config) (LlamaModel);
 *    SmolVLMForConditionalGeneration: model and lm_head nn.Linear(text hidden, vocab, bias=False), tied
 *    (_tied_weights_keys) as the text config's tie_word_embeddings says.
 *    SmolVLMModel.forward without pixel_values: inputs_embeds = text_model.get_input_embeddings()(input_ids)
 *    .to(input_ids.device) (no copy), image_hidden_states None, so neither get_image_features nor inputs_merger
 *    runs, and text_model(inputs_embeds=...) is LlamaModel's forward; the head: lm_head(hidden_states[:,
 *    slice(-0, None)]) and self.loss_function (ForCausalLMLoss), LlamaForCausalLM's loss.
 *
 * What is modelled: the parameters, exactly (named_parameters(), module by module), the tower and connector
 * loaded and never run: a text-only step is LlamaForCausalLM's with their weights resident (frozen here: with no
 * image they get no gradient, so an optimizer keeps no state for them whether or not they are trainable; TRL's
 * SFTTrainer trains every parameter by default, the replica does, bench/accuracy/llm/idefics3_replica.py).
 * Not modelled, refused naming the option: --image / --images (get_image_features runs the processor's tiles through
 * the tower as a batch dimension, [tiles, C, H, W], which a per-sample plan does not hold; SmolVLMModel.image_seq_len
 * = (image_size / patch_size)^2 / scale_factor^2 tokens per tile; the patch_attention_mask, pixel_shuffle's copies
 * and inputs_merger's zeros_like / where copies: none of it modelled. The processor's splitting (the longest edge
 * resized to a multiple of max_image_size, the tiles and the global image) was not read at a pinned commit:
 * image_processing_smolvlm.py / processing_smolvlm.py are named from the class layout only), --serve (vLLM's
 * idefics3.py / smolvlm.py not read), --tp.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

int vc__hf_idefics3_unmodelled(const char *fam, const vc_hf_options *o, vc_hf_split split, bool serve, vc_error *err)
{
    if (o && (o->image_w > 0 || o->images > 0))
        return vc_set_error(err, VC_ERR_USAGE, o->image_w > 0 ? O("image") : O("images"), "%s: the processor's tiles "
                            "(the longest edge resized to a multiple of max_image_size, its tiles and the global image, "
                            "run through the vision tower as a batch dimension) are not modelled; the text alone is",
                            fam);
    if (serve)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "%s under vLLM (its Idefics3ForConditionalGeneration) is not "
                            "modelled", fam);
    if (split.tp > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s on tensor-parallel ranks is not modelled", fam);
    return 0;
}

int vc__hf_idefics3_read(rd *r, arch *a)
{
    hf_vision *t = &a->vis;
    const cJSON *root = r->cfg;
    const bool idefics3 = !strcmp(a->f->model_type, "idefics3");
    const char *cls = idefics3 ? "Idefics3Config" : "SmolVLMConfig";
    /* text_config: LlamaModel's keys (AutoModel.from_config); another text model is not this row's */
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    const cJSON *mt = cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, "model_type") : NULL;
    /* Idefics3Config @ 842a28d0: text_config["model_type"] defaults to "llama3", a key CONFIG_MAPPING lacks (KeyError) */
    if (idefics3 && (!mt || cJSON_IsNull(mt)))
        return vc__hf_bad(r, "text_config.model_type", "absent: Idefics3Config maps it to \"llama3\", which CONFIG_MAPPING lacks "
                    "(KeyError); give \"llama\"");
    if (mt && !cJSON_IsNull(mt) && !(cJSON_IsString(mt) && !strcmp(mt->valuestring, "llama"))) {
        char e[64];
        vc_escape(e, sizeof e, cJSON_IsString(mt) ? mt->valuestring : "(not a string)");
        return vc__hf_bad(r, "text_config.model_type", "\"%s\": %s is modelled with a Llama language model (\"llama\")", e,
                    r->fam);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v))
        return vc__hf_bad(r, "vision_config", "expected an object (the vision tower's keys)");
    if (cJSON_IsNull(v)) v = NULL;
    /* SmolVLMVisionConfig's / Idefics3VisionConfig's defaults (the header) */
    if (vc__hf_vision_int(r, v, "hidden_size", 1152, 1, &t->C) || vc__hf_vision_int(r, v, "intermediate_size", 3072, 1, &t->I) ||
        vc__hf_vision_int(r, v, "num_hidden_layers", 12, 1, &t->depth) ||
        vc__hf_vision_int(r, v, "num_attention_heads", 16, 1, &t->NH) || vc__hf_vision_int(r, v, "num_channels", 3, 1, &t->cin) ||
        vc__hf_vision_int(r, v, "image_size", 224, 1, &t->img) || vc__hf_vision_int(r, v, "patch_size", 32, 1, &t->P))
        return -1;
    t->T = 1;
    t->out = a->H;
    char path[64];
    if (t->depth > 1024) {
        snprintf(path, sizeof path, "vision_config.num_hidden_layers");
        return vc__hf_bad(r, path, "%lld layers: more than the limit of 1024", (long long)t->depth);
    }
    if (t->C % t->NH) /* SmolVLMVisionAttention.__init__ raises ValueError */
        return vc__hf_bad(r, "vision_config.num_attention_heads", "hidden_size (%lld) must be divisible by num_attention_heads "
                    "(%lld) (the tower's attention raises ValueError)", (long long)t->C, (long long)t->NH);
    if (t->P > t->img)
        return vc__hf_bad(r, "vision_config.patch_size", "%lld: larger than image_size (%lld), no patch", (long long)t->P,
                    (long long)t->img);
    /* scale_factor: the modality projection's input is vision hidden x scale_factor^2. pixel_shuffle's views need
     * the side of image_size / patch_size patches to be a multiple of it only when an image runs (the classes'
     * own defaults, 224 / 32 = 7 a side with scale_factor 2, build the model) */
    if (vc__hf_count_int(r, "scale_factor", 2, 1, cls, &t->M)) return -1; /* None: the connector's int ** 2 raises */
    const int64_t side = t->img / t->P;
    /* Idefics3Config @ 842a28d0 writes its own vocab_size (100000 when absent) into text_config */
    if (idefics3) {
        int64_t vs;
        if (vc__hf_count_int(r, "vocab_size", 100000, 1, cls, &vs)) return -1;
        if (vs != a->V)
            return vc__hf_bad(r, "vocab_size", "%lld: Idefics3Config writes its vocab_size (100000 when absent) into "
                        "text_config, whose vocab_size is %lld; give both the same value", (long long)vs, (long long)a->V);
    }
    /* lm_head's tie: the config's own tie_word_embeddings (False by default) and text_config's (the decoder's
     * config, which transformers' tie_weights reads); one that disagrees with the other is refused rather than
     * one of them guessed (as the qwen3_vl row does) */
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie && !cJSON_IsNull(tie) && !cJSON_IsBool(tie)) return vc__hf_bad(r, "tie_word_embeddings", "expected true or false");
    if (cJSON_IsBool(tie) && cJSON_IsTrue(tie) != a->tie)
        return vc__hf_bad(r, "tie_word_embeddings", "%s, but text_config's is %s: which one ties lm_head is not settled here; "
                    "give both the same value", cJSON_IsTrue(tie) ? "true" : "false", a->tie ? "true" : "false");
    /* the weights within 2^48 elements, the tower's parameters and the language model's within 2^56 */
    const int64_t lim = INT64_C(1) << 48;
    int64_t x, blk, tot;
    if (__builtin_mul_overflow(t->C, t->C, &x) || x > lim || __builtin_mul_overflow(t->I, t->C, &x) || x > lim)
        return vc__hf_bad(r, "vision_config.hidden_size", "the layers' weights (%lld wide, intermediate_size %lld) are more than "
                    "2^48 elements", (long long)t->C, (long long)t->I);
    if (__builtin_mul_overflow(t->cin * t->P, t->P, &x) || __builtin_mul_overflow(x, t->C, &x) || x > lim ||
        __builtin_mul_overflow(side, side, &x) || __builtin_mul_overflow(x, t->C, &x) || x > lim)
        return vc__hf_bad(r, "vision_config.patch_size", "the patch embedding or the (image_size / patch_size)^2 position "
                    "embedding is more than 2^48 elements");
    if (__builtin_mul_overflow(t->C, t->M * t->M, &x) || x > MAX_SIZE || __builtin_mul_overflow(x, a->H, &x) || x > lim)
        return vc__hf_bad(r, "scale_factor", "%lld: the modality projection (vision hidden_size %lld x %lld^2, by %lld) is more "
                    "than 2^48 elements", (long long)t->M, (long long)t->C, (long long)t->M, (long long)a->H);
    if (__builtin_mul_overflow(4 * t->C + 2 * t->I, t->C, &blk) || __builtin_mul_overflow(blk, t->depth, &tot) ||
        __builtin_add_overflow(tot, 4 * lim, &tot) || __builtin_add_overflow(tot, a->param_bound, &tot) ||
        tot > (INT64_C(1) << 56))
        return vc__hf_bad(r, "vision_config.num_hidden_layers", "%lld layers beside the language model's are more than 2^56 "
                    "parameters: byte counts would overflow 64-bit arithmetic", (long long)t->depth);
    return 0;
}

/* named_parameters() of model.vision_model and model.connector, module by module (the header), as frozen
 * VisionWeights layers: the nn.Conv2d's weight [hidden, channels x P x P] (not an nn.Linear: "linear" false) */
void vc__hf_idefics3_write(rd *r, cJSON *arr, const arch *a)
{
    const hf_vision *t = &a->vis;
    const int64_t C = t->C, I = t->I, side = t->img / t->P;
    vc__hf_frozen_weights(r, arr, "model.vision_model.embeddings.patch_embedding", C, t->cin * t->P * t->P, true, false);
    vc__hf_frozen_weights(r, arr, "model.vision_model.embeddings.position_embedding", side * side, C, false, false);
    static const struct { const char *n; int rows, cols; } ms[] = { /* 1 hidden, 2 intermediate, 0 none */
        {"self_attn.k_proj", 1, 1}, {"self_attn.v_proj", 1, 1}, {"self_attn.q_proj", 1, 1}, {"self_attn.out_proj", 1, 1},
        {"layer_norm1", 1, 0},      {"mlp.fc1", 2, 1},          {"mlp.fc2", 1, 2},          {"layer_norm2", 1, 0},
    };
    const int64_t w[3] = {0, C, I};
    char nm[128];
    for (int64_t b = 0; b < t->depth && !r->oom; b++)
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            snprintf(nm, sizeof nm, "model.vision_model.encoder.layers.%lld.%s", (long long)b, ms[i].n);
            vc__hf_frozen_weights(r, arr, nm, w[ms[i].rows], w[ms[i].cols], true, ms[i].cols != 0);
        }
    vc__hf_frozen_weights(r, arr, "model.vision_model.post_layernorm", C, 0, true, false);
    vc__hf_frozen_weights(r, arr, "model.connector.modality_projection.proj", t->out, C * t->M * t->M, false, true);
}
