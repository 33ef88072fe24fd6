/*
 * hf_clip.c — CLIP (model_type "clip", issue 31, towers: CLIPModel, e.g. openai/clip-vit-base-patch32 and
 * openai/clip-vit-large-patch14). CLIPConfig's keys that shape the parameters are read and checked (an error names
 * text_config.KEY / vision_config.KEY) and CLIPModel's parameters counted exactly, as sum(p.numel() for p in
 * model.parameters()) gives them, before vc_hf_build (hf.c) reads the towers with the clip row and
 * vc__hf_clip_vision and writes the layers on SigLIP's two-tower path (hf_layers.c build_siglip / build_clip_vision,
 * layers/vision.c SiglipLogits' clip variant, src/engine/loss.c's clip row).
 *
 * Sources (huggingface/transformers, read at these commits):
 *  - models/clip/configuration_clip.py @ 01841b341b64ab547cd2e30f09cb9c74929f50f2: CLIPTextConfig (vocab_size 49408,
 *    hidden_size 512, intermediate_size 2048, num_hidden_layers 12, num_attention_heads 8, max_position_embeddings 77,
 *    hidden_act quick_gelu, layer_norm_eps 1e-5), CLIPVisionConfig (hidden_size 768, intermediate_size 3072,
 *    num_hidden_layers 12, num_attention_heads 12, num_channels 3, image_size 224, patch_size 32), CLIPConfig
 *    (text_config / vision_config None -> {} (the classes' defaults), projection_dim 512, logit_scale_init_value
 *    2.6592; the legacy text_config_dict / vision_config_dict, which update text_config / vision_config, are not
 *    read here: a non-null one is refused naming it).
 *  - models/clip/modeling_clip.py @ 000f1ffdbf1ce6190cc8863af9a2fff817590937, the __init__s (buffers such as
 *    position_ids are not parameters):
 *      CLIPModel: text_model (CLIPTextTransformer), vision_model (CLIPVisionTransformer), visual_projection
 *        Linear(vision hidden, projection_dim, bias=False), text_projection Linear(text hidden, projection_dim,
 *        bias=False), logit_scale a 0-d Parameter (1 element; no logit bias, unlike SigLIP).
 *      CLIPTextTransformer: embeddings (token_embedding Embedding(V, H), position_embedding
 *        Embedding(max_position_embeddings, H)), encoder (num_hidden_layers CLIPEncoderLayers), final_layer_norm.
 *      CLIPVisionTransformer: embeddings (class_embedding [H], patch_embedding Conv2d(num_channels, H, patch_size,
 *        stride patch_size, bias=False), position_embedding Embedding((image_size // patch_size)^2 + 1, H)),
 *        pre_layrnorm, encoder, post_layernorm.
 *      CLIPEncoderLayer: self_attn (q_proj, k_proj, v_proj, out_proj: Linear(H, H) with bias; head_dim = H // heads,
 *        a ValueError unless heads divide H), layer_norm1, mlp (fc1 Linear(H, I), fc2 Linear(I, H)), layer_norm2;
 *        every LayerNorm a weight and a bias.
 *    What the forward does (modelled in hf_layers.c): the text tower's causal mask (create_causal_mask at that commit,
 *    not _create_4d_causal_attention_mask: None under sdpa without a padding mask, masking_utils.py's
 *    _ignore_causal_mask_sdpa, read in a stored copy whose commit the index did not name; the encoder's is_causal=True
 *    reaches sdpa), pooled output = last_hidden_state at input_ids.argmax(-1) (when every row's maximum is 49407) or
 *    at the first eos_token_id, written as a Select view (below), quick_gelu, the vision tower's pooled CLS token
 *    through post_layernorm, visual_projection then text_projection (CLIPModel.forward runs both towers first: the
 *    order autograd's sequence numbers keep, visual_projection's backward before the text tower's), the normalized
 *    embeddings (_get_vector_norm), logits_per_text = matmul x logit_scale.exp(), clip_loss = (cross_entropy(logits,
 *    arange) + cross_entropy(logits.t(), arange)) / 2.
 *    The eos row (CLIPTextTransformer.forward @ 000f1ffd) allocates, not modelled (a Select view and the Linear's
 *    contiguous copy of it stand for it): torch.all(input_ids.max(dim=-1).values == 49407).item() (max's values and
 *    indices, int64 [B]; a bool [B]; a bool scalar: freed at the .item()); torch.arange(B) (int64 [B]); input_ids
 *    .to(torch.int) (int32 [B, L]), == eos_token_id (bool [B, L]), .int() (int32 [B, L]), .argmax(-1) (int64 [B]),
 *    the first two freed as the next is made; the indexing's gathered copy [B, H] (IndexBackward0 saves the two index
 *    tensors, not last_hidden_state, to its backward: index_backward's new_zeros [B, L, H] and index_put_). Per
 *    sample that is 16 B kept to backward and 9 x L B of transients, a few hundred bytes in all at the batch sizes
 *    CLIP trains with; the measured clip_small cases are exact without them.
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"

/* The parameters of one tower's CLIPEncoder: L CLIPEncoderLayers of width H and MLP width I */
#define CLIP_ENCODER(T, L, H, I) ((T)(L) * ((T)4 * (H) * (H) + (T)2 * (H) * (I) + (T)9 * (H) + (I)))

/* One of CLIPConfig's sub-configs (`name`): absent or null -> {} (the class's defaults), else an object */
static int sub_config(rd *r, const char *name, rd *sub)
{
    static const cJSON no_keys = {.type = cJSON_Object};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, name);
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v))
        return vc__hf_bad(r, name, "expected an object: CLIPConfig builds its sub-config from it");
    *sub = *r;
    sub->cfg = v && cJSON_IsObject(v) ? v : &no_keys;
    sub->nested = name;
    return 0;
}

/* hidden_size, num_attention_heads: CLIPAttention's head_dim * num_heads must equal embed_dim */
static int heads_divide(rd *r, int64_t H, int64_t NH)
{
    if (H % NH)
        return vc__hf_bad(r, "num_attention_heads", "%lld does not divide hidden_size (%lld): CLIPAttention raises "
                          "ValueError (embed_dim must be divisible by num_heads)", (long long)NH, (long long)H);
    return 0;
}

int vc__hf_clip_count(rd *r, int64_t *params, int64_t *proj)
{
    static const char *const legacy[] = {"text_config_dict", "vision_config_dict"};
    for (int i = 0; i < 2; i++) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(r->cfg, legacy[i]);
        if (d && !cJSON_IsNull(d))
            return vc__hf_bad(r, legacy[i], "not read: CLIPConfig folds it into %.*s (the legacy form); give the "
                              "keys in %.*s", (int)strlen(legacy[i]) - 5, legacy[i], (int)strlen(legacy[i]) - 5,
                              legacy[i]);
    }
    int64_t P;
    rd t, v;
    if (vc__hf_count_int(r, "projection_dim", 512, 1, "CLIPConfig", &P) || sub_config(r, "text_config", &t) ||
        sub_config(r, "vision_config", &v))
        return -1;
    int64_t V, H, I, L, NH, MP, VH, VI, VL, VNH, C, IMG, PS;
    if (vc__hf_count_int(&t, "vocab_size", 49408, 1, "CLIPTextConfig", &V) ||
        vc__hf_count_int(&t, "hidden_size", 512, 1, "CLIPTextConfig", &H) ||
        vc__hf_count_int(&t, "intermediate_size", 2048, 1, "CLIPTextConfig", &I) ||
        vc__hf_count_int(&t, "num_hidden_layers", 12, 1, "CLIPTextConfig", &L) ||
        vc__hf_count_int(&t, "num_attention_heads", 8, 1, "CLIPTextConfig", &NH) ||
        vc__hf_count_int(&t, "max_position_embeddings", 77, 1, "CLIPTextConfig", &MP) || heads_divide(&t, H, NH) ||
        vc__hf_count_int(&v, "hidden_size", 768, 1, "CLIPVisionConfig", &VH) ||
        vc__hf_count_int(&v, "intermediate_size", 3072, 1, "CLIPVisionConfig", &VI) ||
        vc__hf_count_int(&v, "num_hidden_layers", 12, 1, "CLIPVisionConfig", &VL) ||
        vc__hf_count_int(&v, "num_attention_heads", 12, 1, "CLIPVisionConfig", &VNH) ||
        vc__hf_count_int(&v, "num_channels", 3, 1, "CLIPVisionConfig", &C) ||
        vc__hf_count_int(&v, "image_size", 224, 1, "CLIPVisionConfig", &IMG) ||
        vc__hf_count_int(&v, "patch_size", 32, 1, "CLIPVisionConfig", &PS) || heads_divide(&v, VH, VNH))
        return -1;
    if (PS > IMG)
        return vc__hf_bad(&v, "patch_size", "%lld: larger than image_size (%lld): CLIPVisionEmbeddings would have no "
                          "patches", (long long)PS, (long long)IMG);
    const int64_t side = IMG / PS; /* num_patches = side^2, and the class position */
    /* text: token and position embeddings, the encoder, final_layer_norm, text_projection; vision: class_embedding,
     * patch_embedding (no bias), position_embedding, pre_layrnorm, the encoder, post_layernorm, visual_projection;
     * logit_scale. Summed once in long double (past 2^62 refused naming text_config.hidden_size), then in int64_t. */
#define CLIP_COUNT(T)                                                                                                 \
    ((T)V * H + (T)MP * H + CLIP_ENCODER(T, L, H, I) + (T)2 * H + (T)H * P + (T)VH + (T)C * VH * PS * PS +             \
     ((T)side * side + 1) * VH + (T)4 * VH + CLIP_ENCODER(T, VL, VH, VI) + (T)VH * P + 1)
    const long double total = CLIP_COUNT(long double);
    if (total > 0x1p62L) return vc__hf_bad(&t, "hidden_size", "the parameters (%.3Le) pass 2^62", total);
    *params = CLIP_COUNT(int64_t);
    *proj = P;
#undef CLIP_COUNT
    return 0;
}
