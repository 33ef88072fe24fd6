/*
 * hf_glm4v.c — glm4v (Glm4vForConditionalGeneration: GLM-4.1V-9B-Thinking / GLM-4.1V-9B-Base; issue 31, new
 * family): the language model's mrope keys and the vision tower of vision_config read and checked, the tower's
 * weights written as frozen VisionWeights layers before the language model (a Glm4vTextConfig read from
 * text_config by the family's row, src/hf/hf.c, whose decoder is glm4's: Glm4's four norms, fused gate_up_proj,
 * interleaved partial rotary).
 *
 * Read at huggingface/transformers:
 *  - models/glm4v/configuration_glm4v.py @ 68c08116ff67bbc0b9a72179d72da9dc2355a4dc: Glm4vVisionConfig (depth 24,
 *    hidden_size 1536, hidden_act "silu", attention_bias False, num_heads 12, in_channels 3, image_size 336,
 *    patch_size 14, rms_norm_eps 1e-5, spatial_merge_size 2, temporal_patch_size 2, out_hidden_size 4096,
 *    intermediate_size 13696); Glm4vTextConfig (vocab 151552, hidden 4096, intermediate 13696, 40 layers, 32 heads,
 *    2 kv heads, max_position_embeddings 32768, rms_norm_eps 1e-5, tie_word_embeddings False, rope_theta 10000,
 *    rope_scaling None, no partial_rotary_factor and no head_dim); Glm4vConfig (sub_configs vision_config and
 *    text_config; text_config None: Glm4vTextConfig(**kwargs), the config's own keys);
 *  - models/glm4v/modeling_glm4v.py @ 03eac6f6d2af7e8562113f0b78d3d2d59a7d843d:
 *    Glm4vVisionModel.__init__: embeddings (Glm4vVisionEmbeddings: position_embedding nn.Embedding((image_size //
 *    patch_size)^2, hidden_size)), patch_embed (Glm4vVisionPatchEmbed: nn.Conv3d(in_channels, hidden_size, kernel =
 *    stride = [temporal_patch_size, patch_size, patch_size]) with its bias), rotary_pos_emb (a buffer), blocks
 *    (Glm4vVisionBlock: norm1 / norm2 Glm4vRMSNorm(hidden_size), attn.qkv nn.Linear(hidden, 3 hidden,
 *    bias=attention_bias), attn.proj nn.Linear(hidden, hidden, bias=False), mlp Glm4VisionMlp(bias=False): gate_proj /
 *    up_proj nn.Linear(hidden, out_hidden_size), down_proj nn.Linear(out_hidden_size, hidden)), merger
 *    (Glm4vVisionPatchMerger(dim=out_hidden_size, context_dim=intermediate_size): proj nn.Linear(dim, dim, bias=False),
 *    post_projection_norm nn.LayerNorm(dim), gate_proj / up_proj nn.Linear(dim, context_dim, bias=False), down_proj
 *    nn.Linear(context_dim, dim, bias=False)), post_conv_layernorm Glm4vRMSNorm(hidden), downsample
 *    nn.Conv2d(hidden, out_hidden_size, kernel = stride = spatial_merge_size) with its bias, post_layernorm
 *    Glm4vRMSNorm(hidden). Glm4vTextAttention: q/k/v nn.Linear(bias=True) whatever attention_bias says, o_proj
 *    without, head_dim = hidden_size // num_attention_heads; apply_multimodal_rotary_pos_emb: cos / sin split by
 *    mrope_section * 2 along the last dimension (torch.split: the sections must sum to the cos width, the rotary
 *    dimensions), then Glm4's interleaved rotation of the first rotary_dim columns; self.rope_scaling["mrope_section"]
 *    is indexed in every forward (rope_scaling None: TypeError). Glm4vForConditionalGeneration: model (visual,
 *    language_model) and lm_head nn.Linear(text hidden, vocab, bias=False) (_tied_weights_keys ["lm_head.weight"]);
 *  - modeling_rope_utils.py @ 0044e3b3facff1a1ad60b235c69d5b45beae75a4 _compute_default_rope_parameters:
 *    partial_rotary_factor if the config has it, else 1.0; dim = int(hidden_size // num_attention_heads * factor).
 *
 * What is modelled: the parameters exactly (named_parameters(), module by module); without --image the tower loaded
 * and never run: a text-only step is the language model's (Glm4vModel.forward with no pixel_values: embed_tokens,
 * get_rope_index's 3-D positions, Glm4vTextModel, lm_head), the tower's weights resident and frozen (they get no
 * gradient, so an optimizer keeps no state for them). The decoder is written as glm4's (RotaryAttention rope_style
 * glm4 over the rotary dimensions) with mrope (layers/llm.c "mrope"): Glm4vTextRotaryEmbedding's cos / sin of the
 * three position rows, [3, B, S, rotary_dim] each (glm4's are [1, S, rotary_dim]), and each layer's cat of their
 * sections, [B, S, rotary_dim], before Glm4's repeat_interleave (then of the batch's size, saved for backward);
 * get_rope_index's int64 positions of the text (arange(S) expanded: a view; the attention mask's cumsum in
 * generation, B x S) are not written. bench/accuracy/llm/glm4v_replica.py measures it.
 * With --image WxH (--images N): Glm4vImageProcessor's smart_resize and the image tokens (glm4v_images below), the
 * tower run frozen on the patches (src/hf/hf_vision.c write_glm4v_tower, Glm4vVisionModel.forward; layers/vision.c
 * VisionPosInterp for Glm4vVisionEmbeddings' grid_sample), the image rows before --seq's text; bench/accuracy/llm/
 * glm4v_replica.py build_image measures it. Refused naming the option: --image under --mode generate (generate()'s
 * decoding steps: prepare_inputs_for_generation's pixel_values and the cached rope_deltas, not read further), --serve
 * (vLLM's glm4_1v.py not read), --tp; --packing in layers/llm.c (Glm4vTextModel expands
 * packed 2-D position_ids to three rows before create_causal_mask: not read further) and --liger in hf.c
 * (apply_liger_kernel_to_glm4v's patch set). Not read at a pinned commit: transformers 5's form of these configs (a
 * text config with rope_parameters and no rope_scaling is refused naming rope_scaling) and the release that added
 * models/glm4v (--transformers is not checked against it). The buffers (the tower's rotary inv_freq, the embeddings'
 * position_ids: (image_size / patch_size)^2 int64) are not counted.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

int vc__hf_glm4v_unmodelled(const char *fam, const vc_hf_options *o, vc_hf_split split, bool serve, bool generate,
                            vc_error *err)
{
    if (o && (o->image_w > 0 || o->images > 0) && generate)
        return vc_set_error(err, VC_ERR_USAGE, o->image_w > 0 ? O("image") : O("images"),
                            "%s's generate() with images (prepare_inputs_for_generation's pixel_values and the cached "
                            "rope_deltas of the decoding steps) is not modelled; training and " O("mode") " infer with "
                            "images are", fam);
    if (serve)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "%s under vLLM (its Glm4vForConditionalGeneration, whose "
                            "profiling runs the tower on dummy images) is not modelled", fam);
    if (split.tp > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s on tensor-parallel ranks is not modelled", fam);
    return 0;
}

/* The language model's rope_scaling (r reads text_config, or the config itself without one): mrope_section, a list
 * of three positive integers summing to half the rotary dimensions (a->R, hf_glm4.c), which
 * apply_multimodal_rotary_pos_emb's torch.split of the cos / sin width by mrope_section * 2 needs. */
int vc__hf_glm4v_text_read(rd *r, const arch *a)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(r->cfg, "rope_scaling");
    if (!rs || cJSON_IsNull(rs))
        return vc__hf_bad(r, "rope_scaling", "absent: Glm4vTextAttention reads rope_scaling[\"mrope_section\"] in every "
                          "forward (TypeError on None); give {\"rope_type\": \"default\", \"mrope_section\": [...]}");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (cJSON_IsString(t) && (!strcmp(t->valuestring, "mrope") || !strcmp(t->valuestring, "su")))
        return vc__hf_bad(r, "rope_scaling.rope_type", "\"%s\": Glm4vTextRotaryEmbedding looks it up in "
                          "ROPE_INIT_FUNCTIONS, which has no such entry (KeyError); \"default\" is GLM-4.1V's",
                          t->valuestring);
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(rs, "mrope_section");
    if (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) != 3)
        return vc__hf_bad(r, "rope_scaling.mrope_section", "expected a list of three integers (the temporal, height and "
                          "width sections of the rotary frequencies)");
    int64_t sum = 0;
    for (int i = 0; i < 3; i++) {
        const cJSON *x = cJSON_GetArrayItem(ms, i);
        const double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
        if (!isfinite(d) || d != floor(d) || d < 1 || d > (double)MAX_SIZE)
            return vc__hf_bad(r, "rope_scaling.mrope_section", "expected a list of three positive integers");
        sum += (int64_t)d;
    }
    if (2 * sum != a->R)
        return vc__hf_bad(r, "rope_scaling.mrope_section", "sums to %lld; twice that must be the %lld rotary dimensions "
                          "(head_dim %lld x partial_rotary_factor %g): apply_multimodal_rotary_pos_emb splits cos / sin "
                          "by mrope_section * 2", (long long)sum, (long long)a->R, (long long)a->D, a->rotary);
    return 0;
}

/* smart_resize (models/glm4v/image_processing_glm4v.py @ 1505215df303467822c2ef407e277381f9d290f1), as
 * Glm4vImageProcessor._preprocess calls it for an image: num_frames = temporal_factor = temporal_patch_size, factor =
 * patch_size x merge_size, min_pixels / max_pixels the processor's size["shortest_edge"] / ["longest_edge"]
 * (GLM4V_MIN_PIXELS / GLM4V_MAX_PIXELS, the class's defaults: vramcalc reads config.json only). h_bar = round(height /
 * factor) * factor (w_bar likewise, Python's round: half to even, nearbyint), t_bar = round(num_frames /
 * temporal_factor) * temporal_factor; t_bar h_bar w_bar > max_pixels: beta = sqrt(num_frames h w / max_pixels), h_bar =
 * max(factor, floor(height / beta / factor) * factor); < min_pixels: beta = sqrt(min_pixels / (num_frames h w)), h_bar
 * = ceil(height * beta / factor) * factor. Its ValueErrors (a side under factor, an aspect ratio over 200) are the
 * caller's. */
#define GLM4V_MIN_PIXELS (112 * 112)
#define GLM4V_MAX_PIXELS (28 * 28 * 15000)
static void glm4v_resize(int64_t nf, int64_t tf, int64_t height, int64_t width, int64_t factor, int64_t *oh, int64_t *ow)
{
    const double h = (double)height, w = (double)width, f = (double)factor;
    int64_t hb = (int64_t)nearbyint(h / f) * factor, wb = (int64_t)nearbyint(w / f) * factor;
    const double tb = nearbyint((double)nf / (double)tf) * (double)tf;
    if (tb * (double)hb * (double)wb > (double)GLM4V_MAX_PIXELS) {
        const double beta = sqrt((double)nf * h * w / (double)GLM4V_MAX_PIXELS);
        hb = (int64_t)floor(h / beta / f) * factor;
        wb = (int64_t)floor(w / beta / f) * factor;
        if (hb < factor) hb = factor;
        if (wb < factor) wb = factor;
    } else if (tb * (double)hb * (double)wb < (double)GLM4V_MIN_PIXELS) {
        const double beta = sqrt((double)GLM4V_MIN_PIXELS / ((double)nf * h * w));
        hb = (int64_t)ceil(h * beta / f) * factor;
        wb = (int64_t)ceil(w * beta / f) * factor;
    }
    *oh = hb;
    *ow = wb;
}

/* --image WxH / --images N: each image through Glm4vImageProcessor (glm4v_resize; _preprocess: the frame repeated to
 * temporal_patch_size, grid_t 1, grid_h = h / patch_size, grid_w = w / patch_size, pixel_values [grid_h grid_w,
 * in_channels T P P] float32), its image tokens grid_h grid_w / merge^2 (get_rope_index's llm_grid_h x llm_grid_w, the
 * rows Glm4vModel.forward's masked_scatter replaces); the tower's hidden_act (Glm4vVisionConfig: "silu") read. */
static int glm4v_images(rd *r, hf_vision *t, const cJSON *v, const vc_hf_options *o)
{
    const cJSON *act = v ? cJSON_GetObjectItemCaseSensitive(v, "hidden_act") : NULL;
    t->act = A_SILU;
    if (act && !cJSON_IsNull(act) && vc__hf_vision_act(r, v, "hidden_act", &t->act)) return -1;
    if (o->image_w <= 0)
        return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "needs " O("image") " WxH (the images' size)");
    if ((t->C / t->NH) % 4 || t->C % t->NH)
        return vc__hf_bad(r, "vision_config.num_heads", "head_dim %lld (hidden_size / num_heads) must divide hidden_size "
                          "and be a multiple of 4 for the tower to run (Glm4vVisionRotaryEmbedding(head_dim // 2): a "
                          "quarter per axis, twice)", (long long)(t->C / t->NH));
    const int64_t factor = t->P * t->M, W = o->image_w, H = o->image_h;
    if (H < factor || W < factor)
        return vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%lldx%lld: height and width must be at least %lld "
                            "(patch_size x spatial_merge_size; Glm4vImageProcessor's smart_resize raises ValueError)",
                            (long long)W, (long long)H, (long long)factor);
    if ((double)(W > H ? W : H) / (double)(W > H ? H : W) > 200)
        return vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%lldx%lld: the aspect ratio must be at most 200 "
                            "(smart_resize)", (long long)W, (long long)H);
    glm4v_resize(t->T, t->T, H, W, factor, &t->h, &t->w);
    t->images = o->images > 0 ? o->images : 1;
    if (t->images > 64) /* layers/vision.c: VisionAttention's per-image pieces */
        return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "%lld images per sample: %s's tower is modelled with at "
                            "most 64", (long long)t->images, r->fam);
    const int64_t per = (t->h / t->P) * (t->w / t->P);
    int64_t sc;
    if (__builtin_mul_overflow(per, t->images, &t->patches) || t->patches > (INT64_C(1) << 32) ||
        __builtin_mul_overflow(per, per, &sc) || __builtin_mul_overflow(sc, t->NH, &sc) || sc > (INT64_C(1) << 56))
        return vc_set_error(r->err, VC_ERR_USAGE, o->images > 1 ? O("images") : O("image"), "%lld images of %lld "
                            "patches (resized to %lldx%lld): the tower's attention would have more than 2^56 elements",
                            (long long)t->images, (long long)per, (long long)t->w, (long long)t->h);
    t->tokens = t->embeds = t->patches / (t->M * t->M);
    return 0;
}

int vc__hf_glm4v_read(rd *r, arch *a, const vc_hf_options *o)
{
    hf_vision *t = &a->vis;
    const cJSON *root = r->cfg;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v))
        return vc__hf_bad(r, "vision_config", "expected an object (the vision tower's keys)");
    if (cJSON_IsNull(v)) v = NULL;
    /* Glm4vVisionConfig's defaults (the header); t->I the merger's context_dim (intermediate_size), t->out the blocks'
     * MLP width and the merger's (out_hidden_size) */
    if (vc__hf_vision_int(r, v, "hidden_size", 1536, 1, &t->C) || vc__hf_vision_int(r, v, "intermediate_size", 13696, 1, &t->I) ||
        vc__hf_vision_int(r, v, "depth", 24, 1, &t->depth) || vc__hf_vision_int(r, v, "num_heads", 12, 1, &t->NH) ||
        vc__hf_vision_int(r, v, "in_channels", 3, 1, &t->cin) || vc__hf_vision_int(r, v, "image_size", 336, 1, &t->img) ||
        vc__hf_vision_int(r, v, "patch_size", 14, 1, &t->P) || vc__hf_vision_int(r, v, "spatial_merge_size", 2, 1, &t->M) ||
        vc__hf_vision_int(r, v, "temporal_patch_size", 2, 1, &t->T) ||
        vc__hf_vision_int(r, v, "out_hidden_size", 4096, 1, &t->out) || vc__hf_vision_bool(r, v, "attention_bias", false, &t->qkv_bias))
        return -1;
    if (t->depth > 1024) return vc__hf_bad(r, "vision_config.depth", "%lld blocks: more than the limit of 1024", (long long)t->depth);
    if (t->P > t->img)
        return vc__hf_bad(r, "vision_config.patch_size", "%lld: larger than image_size (%lld), no position to embed",
                          (long long)t->P, (long long)t->img);
    /* the merger's output replaces the image tokens' rows of inputs_embeds (masked_scatter): the text width */
    if (t->out != a->H)
        return vc__hf_bad(r, "vision_config.out_hidden_size", "%lld: the merger's output must be text_config.hidden_size "
                          "(%lld), the rows it replaces in inputs_embeds", (long long)t->out, (long long)a->H);
    /* lm_head's tie: transformers ties it as the text config says (Glm4vTextConfig's False by default); a top-level
     * tie_word_embeddings beside a text_config that disagrees is refused rather than one of them guessed (as the
     * smolvlm row does) */
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (cJSON_IsObject(tc) && tie && !cJSON_IsNull(tie)) {
        if (!cJSON_IsBool(tie)) return vc__hf_bad(r, "tie_word_embeddings", "expected true or false");
        if (cJSON_IsTrue(tie) != a->tie)
            return vc__hf_bad(r, "tie_word_embeddings", "%s, but text_config's is %s: which one ties lm_head is not "
                              "settled here; give both the same value", cJSON_IsTrue(tie) ? "true" : "false",
                              a->tie ? "true" : "false");
    }
    /* the weights within 2^48 elements, the tower's parameters and the language model's within 2^56 */
    const int64_t lim = INT64_C(1) << 48, side = t->img / t->P;
    int64_t x, blk, tot;
    if (__builtin_mul_overflow(t->C, t->C, &x) || x > lim || __builtin_mul_overflow(t->out, t->C, &x) || x > lim ||
        __builtin_mul_overflow(t->out, t->out, &x) || x > lim || __builtin_mul_overflow(t->I, t->out, &x) || x > lim)
        return vc__hf_bad(r, "vision_config.hidden_size", "the tower's weights (%lld wide, out_hidden_size %lld, "
                          "intermediate_size %lld) are more than 2^48 elements", (long long)t->C, (long long)t->out,
                          (long long)t->I);
    if (__builtin_mul_overflow(t->cin * t->T, t->P * t->P, &x) || __builtin_mul_overflow(x, t->C, &x) || x > lim ||
        __builtin_mul_overflow(side, side, &x) || __builtin_mul_overflow(x, t->C, &x) || x > lim)
        return vc__hf_bad(r, "vision_config.patch_size", "the patch embedding or the (image_size / patch_size)^2 position "
                          "embedding is more than 2^48 elements");
    if (__builtin_mul_overflow(t->M, t->M, &x) || x > MAX_SIZE || __builtin_mul_overflow(x, t->C, &x) ||
        __builtin_mul_overflow(x, t->out, &x) || x > lim)
        return vc__hf_bad(r, "vision_config.spatial_merge_size", "%lld: the downsample Conv2d (hidden_size %lld x %lld^2, "
                          "by %lld) is more than 2^48 elements", (long long)t->M, (long long)t->C, (long long)t->M,
                          (long long)t->out);
    if (__builtin_mul_overflow(4 * t->C + 3 * t->out, t->C, &blk) || __builtin_mul_overflow(blk, t->depth, &tot) ||
        __builtin_add_overflow(tot, 8 * lim, &tot) || __builtin_add_overflow(tot, a->param_bound, &tot) ||
        tot > (INT64_C(1) << 56))
        return vc__hf_bad(r, "vision_config.depth", "%lld blocks beside the language model's are more than 2^56 "
                          "parameters: byte counts would overflow 64-bit arithmetic", (long long)t->depth);
    if (!o || (o->image_w <= 0 && o->images <= 0)) return 0;
    return glm4v_images(r, t, v, o);
}

/* named_parameters() of model.visual, module by module (the header), as frozen VisionWeights layers: the Conv3d's
 * weight [hidden, in_channels x T x P x P] and the Conv2d's [out_hidden_size, hidden x M x M] (not nn.Linear:
 * "linear" false), the LayerNorm's weight and bias, the RMSNorms' weights */
void vc__hf_glm4v_write(rd *r, cJSON *arr, const arch *a)
{
    const hf_vision *t = &a->vis;
    const int64_t C = t->C, O = t->out, side = t->img / t->P;
    vc__hf_frozen_weights(r, arr, "model.visual.embeddings.position_embedding", side * side, C, false, false);
    vc__hf_frozen_weights(r, arr, "model.visual.patch_embed.proj", C, t->cin * t->T * t->P * t->P, true, false);
    static const struct { const char *n; int rows, cols; } ms[] = { /* 1 hidden, 2 out_hidden_size, 3 3 x hidden, 0 none */
        {"norm1", 1, 0},         {"norm2", 1, 0},       {"attn.qkv", 3, 1},      {"attn.proj", 1, 1},
        {"mlp.gate_proj", 2, 1}, {"mlp.up_proj", 2, 1}, {"mlp.down_proj", 1, 2},
    };
    const int64_t w[4] = {0, C, O, 3 * C};
    char nm[128];
    for (int64_t b = 0; b < t->depth && !r->oom; b++)
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            snprintf(nm, sizeof nm, "model.visual.blocks.%lld.%s", (long long)b, ms[i].n);
            /* attn.qkv's bias: vision_config.attention_bias; the rest have none */
            vc__hf_frozen_weights(r, arr, nm, w[ms[i].rows], w[ms[i].cols], i == 2 && t->qkv_bias, ms[i].cols != 0);
        }
    vc__hf_frozen_weights(r, arr, "model.visual.merger.proj", O, O, false, true);
    vc__hf_frozen_weights(r, arr, "model.visual.merger.post_projection_norm", O, 0, true, false);
    vc__hf_frozen_weights(r, arr, "model.visual.merger.gate_proj", t->I, O, false, true);
    vc__hf_frozen_weights(r, arr, "model.visual.merger.up_proj", t->I, O, false, true);
    vc__hf_frozen_weights(r, arr, "model.visual.merger.down_proj", O, t->I, false, true);
    vc__hf_frozen_weights(r, arr, "model.visual.post_conv_layernorm", C, 0, false, false);
    vc__hf_frozen_weights(r, arr, "model.visual.downsample", O, C * t->M * t->M, true, false);
    vc__hf_frozen_weights(r, arr, "model.visual.post_layernorm", C, 0, false, false);
}
