/*
 * hf_internvl.c — internvl (InternVLForConditionalGeneration: OpenGVLab/InternVL3-*-hf, InternVL3_5-*-HF), issue 31
 * (towers): the vision tower and the projector of vision_config / downsample_ratio read and checked, their weights
 * written as frozen VisionWeights layers before the language model (Qwen2Config or Qwen3Config read from text_config
 * by the two rows, src/hf/hf.c).
 *
 * Read at huggingface/transformers:
 *  - models/internvl/configuration_internvl.py @ 04ea98d573ce9f3928c226b9e792e5f2c0070ef7: InternVLVisionConfig
 *    (hidden_size 1024, num_hidden_layers 24, num_attention_heads 16, attention_bias False, use_qk_norm False,
 *    intermediate_size 4096, hidden_act "gelu", norm_type "layer_norm", layer_norm_eps 1e-6, image_size (448, 448),
 *    patch_size (14, 14) (an int x becomes (x, x) in __post_init__), num_channels 3, use_mask_token False,
 *    use_absolute_position_embeddings True, layer_scale_init_value 0.1, use_mean_pooling True); InternVLConfig
 *    (image_token_id 151667, image_seq_length 256, downsample_ratio 0.5, projector_hidden_act "gelu",
 *    vision_feature_layer -1, vision_feature_select_strategy "default"; vision_config None -> InternVLVisionConfig();
 *    text_config a dict -> CONFIG_MAPPING[text_config.get("model_type", "qwen2")](**text_config), None ->
 *    Qwen2Config()). The older configuration_internvl.py @ 72a5482e gave text_config None another Qwen2Config (896
 *    wide): a config without text_config is refused here (the generic reader names text_config), not guessed;
 *  - models/internvl/modeling_internvl.py @ 2fd445481b4354436be1071db98ee96d57ea3591: InternVLVisionEmbeddings
 *    (cls_token [1, 1, hidden]; mask_token [1, 1, hidden] when use_mask_token; patch_embeddings.projection
 *    nn.Conv2d(num_channels, hidden, patch, stride patch) with its bias; position_embeddings [1, patches + 1, hidden]
 *    when use_absolute_position_embeddings), InternVLVisionEncoder.layer.N = InternVLVisionLayer (attention:
 *    q_proj / k_proj / v_proj nn.Linear(hidden, hidden, bias=attention_bias), projection_layer nn.Linear(hidden,
 *    hidden) with its bias, q_norm / k_norm InternVLVisionRMSNorm(hidden) (a weight) when use_qk_norm; mlp.fc1 /
 *    fc2 with biases; layernorm_before / layernorm_after NORM2FN[norm_type]: nn.LayerNorm (weight and bias) or
 *    InternVLVisionRMSNorm (a weight); lambda_1, lambda_2 [hidden]), InternVLVisionModel.layernorm (nn.Identity when
 *    use_mean_pooling, else nn.LayerNorm(hidden)); InternVLMultiModalProjector (layer_norm nn.LayerNorm(hidden x
 *    int(1 / downsample_ratio) ** 2), linear_1 to the text hidden size, act ACT2FN[projector_hidden_act], linear_2
 *    text hidden square, both with biases); InternVLModel (vision_tower, multi_modal_projector, language_model =
 *    AutoModel.from_config(text_config)); InternVLForConditionalGeneration (model, lm_head nn.Linear(text hidden,
 *    vocab, bias=False), _tied_weights_keys ["lm_head.weight"]: tied as the text config's tie_word_embeddings says).
 *    InternVLModel.forward without pixel_values: inputs_embeds = get_input_embeddings()(input_ids), no
 *    get_image_features, no masked_scatter; language_model(inputs_embeds=...) (Qwen2Model / Qwen3Model); the head:
 *    lm_head(hidden_states[:, slice(-0, None), :]) and self.loss_function (ForCausalLMLoss).
 *
 * What is modelled: the parameters, exactly (named_parameters(), module by module); without an image the tower and
 * projector are loaded and never run: a text-only step is Qwen2ForCausalLM's / Qwen3ForCausalLM's with their weights
 * resident (frozen here: with no image they get no gradient, so an optimizer keeps no state for them; the replica,
 * bench/accuracy/llm/internvl_replica.py, builds them trainable as TRL's SFTTrainer does). Refused naming the key:
 * what InternVLModel.get_image_features cannot run or reads otherwise (vision_feature_layer other than -1: it reads
 * self.vision_model, which InternVLModel @ 2fd44548 lacks; vision_feature_select_strategy "full": the CLS row makes
 * patches + 1 rows, which reshape(batch, side, side, -1) cannot view), a non-square image_size / patch_size, a
 * downsample_ratio whose inverse is not an integer (pixel_shuffle's channels / ratio^2 would not be the projector's
 * hidden x int(1 / ratio)^2). Refused naming the option: --serve (vLLM's internvl.py not read), --tp.
 *
 * With --image WxH [--images N] (images_of below), read at huggingface/transformers:
 *  - models/got_ocr2/image_processing_got_ocr2.py @ 0b97ca8d385723d268f5566778e458d0c51213d5:
 *    get_all_supported_aspect_ratios, get_optimal_tiled_canvas, GotOcr2ImageProcessor.crop_image_to_patches (columns x
 *    rows tiles of size, and the thumbnail when more than one), min_patches 1, max_patches 12 (the class's defaults).
 *    The checkpoints' preprocessor_config.json is not read (vramcalc reads config.json only): its size is taken as
 *    vision_config.image_size square (448 for the published InternVL3 / InternVL3.5 processors, as remembered);
 *  - models/internvl/processing_internvl.py @ 024fd4ce2d70431f862b944832c3fde9f8303164: InternVLProcessorKwargs'
 *    crop_to_patches True; _insert_media_placeholders: per image <img>, image_seq_length x tiles <IMG_CONTEXT>, </img>
 *    (image_seq_length the processor's, taken as the config's image_seq_length, which must be a tile's features);
 *  - modeling_internvl.py @ 2fd44548 (above): InternVLModel.forward: inputs_embeds = embed_tokens(input_ids) first,
 *    get_image_features (the tiles one batch through InternVLVisionModel, [:, 1:], pixel_shuffle, the projector:
 *    hf_vision.c write_internvl), then special_image_mask and masked_scatter (written as the Cat of the image rows and
 *    the text's, one new tensor: hf_layers.c); generate(): pixel_values in the prefill only.
 * The tower and projector run frozen, without an autograd graph (LLaMA-Factory's defaults, as the other VLM rows:
 * hf_vision.c). What is not modelled: special_image_mask ([B, L] bool) and the boolean-index check's temporary
 * (inputs_embeds[special_image_mask], the image rows' size), image_features kept in the output (image_hidden_states)
 * to the forward's end, the reshape after [:, 1:] being a view for one tile (written as a copy, as for several);
 * the tower's dropouts in training (refused unless 0), an image of more than 127 tiles per sample.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

int vc__hf_internvl_unmodelled(vc_hf_split split, bool serve, vc_error *err)
{
    if (serve)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "internvl under vLLM (its InternVLChatModel, internvl.py) is "
                            "not modelled");
    if (split.tp > 1) return vc_set_error(err, VC_ERR_USAGE, O("tp"), "internvl on tensor-parallel ranks is not modelled");
    return 0;
}

/* vision_config's image_size / patch_size: an int or a [height, width] pair (InternVLVisionConfig.__post_init__),
 * square here */
static int vside(rd *r, const cJSON *v, const char *key, int64_t def, int64_t *out)
{
    const cJSON *x = v ? cJSON_GetObjectItemCaseSensitive(v, key) : NULL;
    if (!cJSON_IsArray(x)) return vc__hf_vision_int(r, v, key, def, 1, out);
    char path[64];
    snprintf(path, sizeof path, "vision_config.%s", key);
    const cJSON *h = cJSON_GetArrayItem(x, 0), *w = cJSON_GetArrayItem(x, 1);
    if (cJSON_GetArraySize(x) != 2 || !cJSON_IsNumber(h) || !cJSON_IsNumber(w))
        return vc__hf_bad(r, path, "expected an integer or a [height, width] pair of integers");
    if (h->valuedouble != w->valuedouble)
        return vc__hf_bad(r, path, "[%.17g, %.17g]: a non-square %s is not modelled", h->valuedouble, w->valuedouble, key);
    const double d = h->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < 1 || d > (double)MAX_SIZE)
        return vc__hf_bad(r, path, "[%.17g, %.17g]: expected integers from 1 to 2^40", d, d);
    *out = (int64_t)d;
    return 0;
}

/* A string key of obj (path names it): def when absent or null, else one of names (its index in *out). */
static int pick(rd *r, const cJSON *obj, const char *key, const char *path, const char *const *names, int n, int *out)
{
    const cJSON *x = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    *out = 0;
    if (!x || cJSON_IsNull(x)) return 0;
    if (cJSON_IsString(x))
        for (int i = 0; i < n; i++)
            if (!strcmp(x->valuestring, names[i])) {
                *out = i;
                return 0;
            }
    char e[64] = "";
    if (cJSON_IsString(x)) vc_escape(e, sizeof e, x->valuestring);
    return vc__hf_bad(r, path, "%s%s%s: expected \"%s\"%s%s%s", cJSON_IsString(x) ? "\"" : "not a string", e,
                      cJSON_IsString(x) ? "\"" : "", names[0], n > 1 ? " or \"" : "", n > 1 ? names[1] : "",
                      n > 1 ? "\"" : "");
}

/* GotOcr2ImageProcessor's tiles of one W x H image, S x S each (image_processing_got_ocr2.py @ 0b97ca8d:
 * get_optimal_tiled_canvas over get_all_supported_aspect_ratios(1, 12), sorted by columns x rows (a stable sort of the
 * columns-then-rows loops); crop_image_to_patches: columns x rows tiles and the thumbnail when more than one) */
static int64_t tiles_of(int64_t W, int64_t H, int64_t S)
{
    const double aspect = (double)W / (double)H, area = (double)W * (double)H;
    double best = INFINITY;
    int64_t cells = 1;
    for (int64_t n = 1; n <= 12; n++)
        for (int64_t gw = 1; gw <= n; gw++) {
            if (n % gw) continue;
            const int64_t gh = n / gw;
            const double diff = fabs(aspect - (double)gw / (double)gh);
            if (diff < best) {
                best = diff;
                cells = n;
            } else if (diff == best && area > 0.5 * (double)S * (double)S * (double)n) {
                cells = n; /* the tie favours more tiles until they cover twice the image's area */
            }
        }
    return cells > 1 ? cells + 1 : 1;
}

/* a vision_config dropout the tower's run would apply in training: 0 (absent or null) only */
static int no_dropout(rd *r, const cJSON *v, const char *key)
{
    const cJSON *x = v ? cJSON_GetObjectItemCaseSensitive(v, key) : NULL;
    if (!x || cJSON_IsNull(x) || (cJSON_IsNumber(x) && x->valuedouble == 0)) return 0;
    char path[64];
    snprintf(path, sizeof path, "vision_config.%s", key);
    return vc__hf_bad(r, path, "with " O("image") ": only 0 is modelled (the frozen tower's dropout in training is not)");
}

/* --image WxH / --images N: each image's tiles (tiles_of) run through the tower as one batch; per tile
 * (side x downsample_ratio)^2 image features, and per image <img>, image_seq_length x tiles <IMG_CONTEXT>, </img>
 * (processing_internvl.py @ 024fd4ce _insert_media_placeholders, crop_to_patches True by InternVLProcessorKwargs) */
static int images_of(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split, int64_t seq_len, const cJSON *v)
{
    hf_vision *t = &a->vis;
    if (o->image_w <= 0) return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "needs " O("image") " WxH (the images' size)");
    const int64_t side = t->img / t->P, k = t->M;
    if (side % k) /* pixel_shuffle's view(batch, width, int(height * ratio), ...) raises */
        return vc__hf_bad(r, "downsample_ratio", "%.17g: the tower's %lld x %lld patches (vision_config.image_size %lld / "
                          "patch_size %lld) are not a multiple of 1 / ratio: pixel_shuffle cannot view them", 1.0 / (double)k,
                          (long long)side, (long long)side, (long long)t->img, (long long)t->P);
    const int64_t per = (side / k) * (side / k);
    if (seq_len != per) /* the processor's image_seq_length, as the config gives it */
        return vc__hf_bad(r, "image_seq_length", "%lld: a tile gives (%lld / %lld)^2 = %lld image features, and "
                          "InternVLModel.forward raises ValueError (image features and image tokens do not match) unless "
                          "the processor puts as many image tokens a tile", (long long)seq_len, (long long)side,
                          (long long)k, (long long)per);
    if (no_dropout(r, v, "hidden_dropout_prob") || no_dropout(r, v, "attention_dropout") ||
        no_dropout(r, v, "projection_dropout"))
        return -1;
    const cJSON *act = v ? cJSON_GetObjectItemCaseSensitive(v, "hidden_act") : NULL;
    t->act = A_GELU; /* InternVLVisionConfig.hidden_act "gelu" */
    if (act && !cJSON_IsNull(act) && vc__hf_vision_act(r, v, "hidden_act", &t->act)) return -1;
    t->images = o->images > 0 ? o->images : 1;
    const int64_t each = tiles_of(o->image_w, o->image_h, t->img);
    if (t->images > 127 || each * t->images > 127) /* the class rows' Cat (layers/layer.h VC_MAX_INPUTS) */
        return vc_set_error(r->err, VC_ERR_USAGE, o->images > 1 ? O("images") : O("image"), "%lld image(s) of %lld tiles: "
                            "more than 127 tiles per sample are not modelled", (long long)t->images, (long long)each);
    t->tiles = each * t->images;
    int64_t sc;
    if (__builtin_mul_overflow(side * side + 1, side * side + 1, &sc) || __builtin_mul_overflow(sc, t->NH * t->tiles, &sc) ||
        sc > (INT64_C(1) << 56))
        return vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%lld tiles of %lld patches: the tower's attention would have "
                            "more than 2^56 elements per sample", (long long)t->tiles, (long long)(side * side + 1));
    t->patches = t->tiles * side * side;
    t->h = t->w = t->img;
    t->embeds = t->tiles * per;
    t->tokens = t->embeds + 2 * t->images;
    /* generate()'s decoding steps: prepare_inputs_for_generation passes pixel_values when cache_position[0] == 0 only
     * (modeling_internvl.py @ 2fd44548): the tower written as for the prefill and not run (src/engine/generate.c) */
    t->decode = split.image_decode != 0;
    return 0;
}

int vc__hf_internvl_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split)
{
    hf_vision *t = &a->vis;
    const cJSON *root = r->cfg;
    const bool q3 = a->f->text_type != NULL; /* the qwen3 row (InternVL3.5) */
    /* text_config: the row's language model (CONFIG_MAPPING[text_config.get("model_type", "qwen2")]) */
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    const cJSON *mt = cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, "model_type") : NULL;
    if (!q3 && mt && !(cJSON_IsString(mt) && !strcmp(mt->valuestring, "qwen2"))) {
        char e[64];
        vc_escape(e, sizeof e, cJSON_IsString(mt) ? mt->valuestring : "(not a string)");
        return vc__hf_bad(r, "text_config.model_type", "\"%s\": internvl is modelled with a Qwen2 (\"qwen2\", InternVL3) or "
                          "Qwen3 (\"qwen3\", InternVL3.5) language model", e);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v))
        return vc__hf_bad(r, "vision_config", "expected an object (the vision tower's keys)");
    if (cJSON_IsNull(v)) v = NULL;
    /* InternVLVisionConfig's defaults (the header) */
    int norm;
    static const char *const norms[] = {"layer_norm", "rms_norm"};
    if (vc__hf_vision_int(r, v, "hidden_size", 1024, 1, &t->C) || vc__hf_vision_int(r, v, "intermediate_size", 4096, 1, &t->I) ||
        vc__hf_vision_int(r, v, "num_hidden_layers", 24, 1, &t->depth) ||
        vc__hf_vision_int(r, v, "num_attention_heads", 16, 1, &t->NH) || vc__hf_vision_int(r, v, "num_channels", 3, 1, &t->cin) ||
        vside(r, v, "image_size", 448, &t->img) || vside(r, v, "patch_size", 14, &t->P) ||
        vc__hf_vision_bool(r, v, "attention_bias", false, &t->iv.bias) || vc__hf_vision_bool(r, v, "use_qk_norm", false, &t->iv.qk) ||
        vc__hf_vision_bool(r, v, "use_mask_token", false, &t->iv.mask) ||
        vc__hf_vision_bool(r, v, "use_absolute_position_embeddings", true, &t->iv.abs_pos) ||
        vc__hf_vision_bool(r, v, "use_mean_pooling", true, &t->iv.final_ln) ||
        pick(r, v, "norm_type", "vision_config.norm_type", norms, 2, &norm)) /* NORM2FN's keys; another: KeyError */
        return -1;
    t->iv.final_ln = !t->iv.final_ln; /* InternVLVisionModel.layernorm: nn.Identity when use_mean_pooling */
    t->iv.rms = norm == 1;
    t->T = 1;
    t->out = a->H;
    if (t->depth > 1024)
        return vc__hf_bad(r, "vision_config.num_hidden_layers", "%lld layers: more than the limit of 1024", (long long)t->depth);
    if (t->C % t->NH) /* InternVLVisionAttention.__init__ raises ValueError */
        return vc__hf_bad(r, "vision_config.num_attention_heads", "hidden_size (%lld) must be divisible by num_attention_heads "
                          "(%lld) (the tower's attention raises ValueError)", (long long)t->C, (long long)t->NH);
    if (t->P > t->img)
        return vc__hf_bad(r, "vision_config.patch_size", "%lld: larger than image_size (%lld), no patch", (long long)t->P,
                          (long long)t->img);
    /* downsample_ratio: the projector's input is hidden x int(1 / downsample_ratio) ** 2, pixel_shuffle's output
     * int(channels / ratio ** 2) wide: the same only where 1 / ratio is an integer */
    const cJSON *dr = cJSON_GetObjectItemCaseSensitive(root, "downsample_ratio");
    double ratio = 0.5;
    if (dr && !cJSON_IsNull(dr)) {
        if (!cJSON_IsNumber(dr) || !isfinite(dr->valuedouble) || dr->valuedouble <= 0 || dr->valuedouble > 1)
            return vc__hf_bad(r, "downsample_ratio", "expected a number in (0, 1] (InternVLConfig: 0.5)");
        ratio = dr->valuedouble;
    }
    const double inv = 1.0 / ratio;
    if (fabs(inv - round(inv)) > 1e-9 || inv > 64)
        return vc__hf_bad(r, "downsample_ratio", "%.17g: pixel_shuffle's int(channels / ratio ** 2) is the projector's "
                          "hidden x int(1 / ratio) ** 2 only where 1 / ratio is an integer (at most 64 here)", ratio);
    t->M = (int64_t)round(inv);
    int act, strategy;
    static const char *const acts[] = {"gelu"}, *const strategies[] = {"default", "full"};
    if (pick(r, root, "projector_hidden_act", "projector_hidden_act", acts, 1, &act) ||
        pick(r, root, "vision_feature_select_strategy", "vision_feature_select_strategy", strategies, 2, &strategy))
        return -1;
    if (strategy == 1) /* get_image_features: vision_features.reshape(batch, int(sqrt(patches + 1)), ...) raises */
        return vc__hf_bad(r, "vision_feature_select_strategy", "\"full\": get_image_features keeps the CLS row, whose "
                          "patches + 1 rows reshape(batch, feature_size, feature_size, -1) cannot view; give \"default\"");
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(root, "vision_feature_layer");
    if (fl && !cJSON_IsNull(fl) && !(cJSON_IsNumber(fl) && fl->valuedouble == -1))
        return vc__hf_bad(r, "vision_feature_layer", "only -1 (the tower's last_hidden_state) is modelled: another value "
                          "reads self.vision_model, which InternVLModel (modeling_internvl.py @ 2fd44548) lacks");
    int64_t seq_len;
    if (vc__hf_count_int(r, "image_seq_length", 256, 1, "InternVLConfig", &seq_len)) return -1;
    /* lm_head's tie: the config's own tie_word_embeddings and text_config's (what tie_weights reads); one that
     * disagrees with the other is refused rather than one of them guessed (as the smolvlm row does) */
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie && !cJSON_IsNull(tie) && !cJSON_IsBool(tie)) return vc__hf_bad(r, "tie_word_embeddings", "expected true or false");
    if (cJSON_IsBool(tie) && cJSON_IsTrue(tie) != a->tie)
        return vc__hf_bad(r, "tie_word_embeddings", "%s, but text_config's is %s: which one ties lm_head is not settled here; "
                          "give both the same value", cJSON_IsTrue(tie) ? "true" : "false", a->tie ? "true" : "false");
    /* the weights within 2^48 elements, the tower's parameters and the language model's within 2^56 */
    const int64_t lim = INT64_C(1) << 48, side = t->img / t->P;
    int64_t x, blk, tot;
    if (__builtin_mul_overflow(t->C, t->C, &x) || x > lim || __builtin_mul_overflow(t->I, t->C, &x) || x > lim)
        return vc__hf_bad(r, "vision_config.hidden_size", "the layers' weights (%lld wide, intermediate_size %lld) are more than "
                          "2^48 elements", (long long)t->C, (long long)t->I);
    if (__builtin_mul_overflow(t->cin * t->P, t->P, &x) || __builtin_mul_overflow(x, t->C, &x) || x > lim ||
        __builtin_mul_overflow(side, side, &x) || __builtin_mul_overflow(x + 1, t->C, &x) || x > lim)
        return vc__hf_bad(r, "vision_config.patch_size", "the patch embedding or the (image_size / patch_size)^2 + 1 position "
                          "embeddings are more than 2^48 elements");
    if (__builtin_mul_overflow(t->C, t->M * t->M, &x) || x > MAX_SIZE || __builtin_mul_overflow(x, a->H, &x) || x > lim)
        return vc__hf_bad(r, "downsample_ratio", "%.17g: the projector's linear_1 (vision hidden_size %lld x %lld^2, by %lld) "
                          "is more than 2^48 elements", ratio, (long long)t->C, (long long)t->M, (long long)a->H);
    if (__builtin_mul_overflow(4 * t->C + 2 * t->I, t->C, &blk) || __builtin_mul_overflow(blk, t->depth, &tot) ||
        __builtin_add_overflow(tot, 4 * lim, &tot) || __builtin_add_overflow(tot, a->param_bound, &tot) ||
        tot > (INT64_C(1) << 56))
        return vc__hf_bad(r, "vision_config.num_hidden_layers", "%lld layers beside the language model's are more than 2^56 "
                          "parameters: byte counts would overflow 64-bit arithmetic", (long long)t->depth);
    if (o && (o->image_w > 0 || o->images > 0)) return images_of(r, a, o, split, seq_len, v);
    return 0;
}

/* named_parameters() of model.vision_tower and model.multi_modal_projector, module by module (the header), as frozen
 * VisionWeights layers: the nn.Conv2d's weight [hidden, channels x P x P] and the position embeddings are not
 * nn.Linears ("linear" false) */
void vc__hf_internvl_write(rd *r, cJSON *arr, const arch *a)
{
    const hf_vision *t = &a->vis;
    const int64_t C = t->C, I = t->I, side = t->img / t->P, k = t->M;
    const char *pre = "model.vision_tower.embeddings";
    char nm[128];
    snprintf(nm, sizeof nm, "%s.cls_token", pre);
    vc__hf_frozen_weights(r, arr, nm, C, 0, false, false);
    if (t->iv.mask) {
        snprintf(nm, sizeof nm, "%s.mask_token", pre);
        vc__hf_frozen_weights(r, arr, nm, C, 0, false, false);
    }
    snprintf(nm, sizeof nm, "%s.patch_embeddings.projection", pre);
    vc__hf_frozen_weights(r, arr, nm, C, t->cin * t->P * t->P, true, false);
    if (t->iv.abs_pos) {
        snprintf(nm, sizeof nm, "%s.position_embeddings", pre);
        vc__hf_frozen_weights(r, arr, nm, side * side + 1, C, false, false);
    }
    /* InternVLVisionLayer: its own lambda_1 / lambda_2, then attention, mlp, the two norms */
    static const struct { const char *n; int rows, cols, bias; } ms[] = { /* 1 hidden, 2 intermediate, 0 none; bias: 1
                                                                            * always, 2 attention_bias, 3 a LayerNorm's */
        {"lambda_1", 1, 0, 0},         {"lambda_2", 1, 0, 0},         {"attention.q_proj", 1, 1, 2},
        {"attention.k_proj", 1, 1, 2}, {"attention.v_proj", 1, 1, 2}, {"attention.projection_layer", 1, 1, 1},
        {"attention.q_norm", 1, 0, 0}, {"attention.k_norm", 1, 0, 0}, {"mlp.fc1", 2, 1, 1},
        {"mlp.fc2", 1, 2, 1},          {"layernorm_before", 1, 0, 3}, {"layernorm_after", 1, 0, 3},
    };
    const int64_t w[3] = {0, C, I};
    for (int64_t b = 0; b < t->depth && !r->oom; b++)
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            if (!t->iv.qk && strstr(ms[i].n, "_norm")) continue; /* nn.Identity without use_qk_norm */
            const bool bias = ms[i].bias == 1 || (ms[i].bias == 2 && t->iv.bias) || (ms[i].bias == 3 && !t->iv.rms);
            snprintf(nm, sizeof nm, "model.vision_tower.encoder.layer.%lld.%s", (long long)b, ms[i].n);
            vc__hf_frozen_weights(r, arr, nm, w[ms[i].rows], w[ms[i].cols], bias, ms[i].cols != 0);
        }
    if (t->iv.final_ln) vc__hf_frozen_weights(r, arr, "model.vision_tower.layernorm", C, 0, true, false);
    vc__hf_frozen_weights(r, arr, "model.multi_modal_projector.layer_norm", C * k * k, 0, true, false);
    vc__hf_frozen_weights(r, arr, "model.multi_modal_projector.linear_1", t->out, C * k * k, true, true);
    vc__hf_frozen_weights(r, arr, "model.multi_modal_projector.linear_2", t->out, t->out, true, true);
}
