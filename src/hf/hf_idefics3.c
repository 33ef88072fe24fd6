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
 * What is modelled: the parameters, exactly (named_parameters(), module by module); without --image the tower and
 * connector loaded and never run: a text-only step is LlamaForCausalLM's with their weights resident (frozen here:
 * with no image they get no gradient, so an optimizer keeps no state for them whether or not they are trainable;
 * TRL's SFTTrainer trains every parameter by default, the replica does, bench/accuracy/llm/idefics3_replica.py).
 *
 * With --image WxH [--images N] (images_of below), read at huggingface/transformers:
 *  - models/smolvlm/image_processing_smolvlm.py @ 72486fb4cafc48ea685280d06cc13c4d50da04a9
 *    SmolVLMImageProcessor.preprocess (do_resize, do_image_splitting, do_pad True by default): resize
 *    (get_resize_output_image_size), resize_for_vision_encoder, split_image, pad (frames_of below). The size and
 *    max_image_size are the checkpoints' preprocessor_config.json, not read (vramcalc reads config.json only):
 *    max_image_size {"longest_edge": vision_config.image_size} and size {"longest_edge": 4 x that}, as the
 *    published SmolVLM / SmolVLM2 / Idefics3 processors set them (SmolVLM-256M: 512 and 2048; the class's own
 *    defaults, 364 and 4 x 364, are Idefics3-8B's). Every frame is then max_image_size square: pad adds nothing,
 *    pixel_attention_mask is all ones, SmolVLMVisionTransformer.forward passes no mask (torch.any(~mask) False);
 *  - models/smolvlm/processing_smolvlm.py @ c82627a8d6e3ab9e020fd75755751ed81036e7a3 get_image_prompt_string: the
 *    image's tokens (images_of below);
 *  - modeling_smolvlm.py @ b282e23b (above): SmolVLMModel.forward: inputs_embeds = embed_tokens(input_ids) first,
 *    get_image_features: pixel_values.view(B x N, C, H, W) (the frames one batch), SmolVLMVisionTransformer
 *    (SmolVLMVisionEmbeddings: the patch Conv2d, position_ids [frames, patches] int64, + position_embedding; the
 *    SiglipEncoderLayer-like layers on sdpa without a mask; post_layernorm), SmolVLMConnector (pixel_shuffle: two
 *    views, permute, reshape (a copy), permute, reshape (a copy); modality_projection.proj), inputs_merger (the
 *    image rows into inputs_embeds: a new [L, text hidden] tensor).
 * The tower and connector run frozen, without an autograd graph (LLaMA-Factory's defaults, as the other VLM rows:
 * hf_vision.c), written by hf_vision.c write_siglip (Gemma 3's SigLIP tower) with the frames as sdpa's batch: one
 * sample's frames x heads heads over a frame's patches, the same scores and outputs. What is not modelled:
 * get_image_features' (pixel_values == 0.0) test and its pixel_values[real_images_inds].contiguous() copy (the
 * pixel_values are PixelValues' float32 batch, cast to the model's dtype for the patch embedding), the position ids'
 * bucketize temporaries, inputs_merger's zeros_like and index temporaries (written as the Cat of the image rows and
 * the text's, one new tensor), image_hidden_states kept in the model's output to the step's end, and through
 * generate()'s decoding steps (where inputs_merger finds no image token); a padded frame (do_image_splitting off,
 * or the processor's size / max_image_size other than the above). Refused naming the option: --tp (under --serve
 * too: vLLM's split of the tower). --serve: src/engine/serve_mm.c (vLLM's dummy batch; its tower run not modelled).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

int vc__hf_idefics3_unmodelled(const char *fam, vc_hf_split split, bool serve, vc_error *err)
{
    /* --serve: vLLM's Idefics3ForConditionalGeneration / SmolVLMForConditionalGeneration (src/engine/serve_mm.c), one
     * GPU: how vLLM's Idefics2VisionTransformer (idefics2_vision_model.py, not read here) shares the tower over
     * tensor-parallel ranks is not derived, so its weights per rank are not known */
    if (serve && split.tp > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s under vLLM on tensor-parallel ranks is not modelled: how vLLM "
                            "shares its vision tower (Idefics2VisionTransformer) over the ranks is not derived", fam);
    if (split.tp > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s on tensor-parallel ranks is not modelled", fam);
    return 0;
}

/* The image processor's frames of one W x H image (the header: SmolVLMImageProcessor.preprocess with the checkpoints'
 * size {"longest_edge": 4 x L} and max_image_size {"longest_edge": L}, L the tower's image_size): resize
 * (_resize_output_size_rescale_to_max_len: the longest edge to 4 L, the other int(edge / aspect) rounded up to even;
 * _resize_output_size_scale_below_upper_bound: MAX_IMAGE_SIZE 4096), resize_for_vision_encoder (each edge up to a
 * multiple of L, the shorter int(longer / aspect) first), split_image (ceil(h / L) x ceil(w / L) tiles of L x L and the
 * global image resized to L x L when an edge passes L, else the one L x L image). *rows, *cols: 0 for one frame.
 * Returns the frames, 0 when an edge would be resized to nothing (an aspect ratio beyond the processor). */
static int64_t frames_of(int64_t W, int64_t H, int64_t L, int64_t *rows, int64_t *cols)
{
    const int64_t top = 4 * L;
    double ar = (double)W / (double)H;
    int64_t w, h;
    if (W >= H) {
        w = top;
        h = (int64_t)((double)w / ar);
        if (h % 2) h++;
    } else {
        h = top;
        w = (int64_t)((double)h * ar);
        if (w % 2) w++;
    }
    h = h < 1 ? 1 : h;
    w = w < 1 ? 1 : w;
    ar = (double)w / (double)h;
    if (w >= h && w > 4096) {
        w = 4096;
        h = (int64_t)((double)w / ar);
    } else if (h > w && h > 4096) {
        h = 4096;
        w = (int64_t)((double)h * ar);
    }
    h = h < 1 ? 1 : h;
    w = w < 1 ? 1 : w;
    ar = (double)w / (double)h;
    if (w >= h) {
        w = (w + L - 1) / L * L;
        h = (int64_t)((double)w / ar);
        h = (h + L - 1) / L * L;
    } else {
        h = (h + L - 1) / L * L;
        w = (int64_t)((double)h * ar);
        w = (w + L - 1) / L * L;
    }
    if (h < 1 || w < 1) return 0;
    if (h > L || w > L) {
        *rows = h / L;
        *cols = w / L;
        return *rows * *cols + 1;
    }
    *rows = *cols = 0;
    return 1;
}

/* --image WxH / --images N: each image's frames run through the tower as one batch ([frames, C, L, L]:
 * SmolVLMModel.get_image_features), image_seq_len = (image_size / patch_size)^2 / scale_factor^2 embeddings a frame,
 * and the prompt's text around them (processing_smolvlm.py get_image_prompt_string: a split image's rows x cols
 * tiles each <fake_token_around_image><row_r_col_c> and its image tokens, a "\n" after each row, then "\n",
 * <fake_token_around_image><global-img>, the global image's tokens, <fake_token_around_image>; one frame:
 * <fake_token_around_image><global-img>, its tokens, <fake_token_around_image>), counted one token each (the added
 * special tokens, the newlines). */
static int images_of(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split)
{
    hf_vision *t = &a->vis;
    if (o->image_w <= 0) return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "needs " O("image") " WxH (the images' size)");
    const int64_t side = t->img / t->P, s = t->M;
    if (side % s) /* pixel_shuffle's x.view(bsz, height, width / scale_factor, ...) raises */
        return vc__hf_bad(r, "scale_factor", "%lld: the tower's %lld x %lld patches (vision_config.image_size %lld / patch_size "
                          "%lld) are not a multiple of it: the connector's pixel_shuffle cannot view them", (long long)s,
                          (long long)side, (long long)side, (long long)t->img, (long long)t->P);
    int64_t rows, cols;
    const int64_t per = frames_of(o->image_w, o->image_h, t->img, &rows, &cols);
    if (per == 0)
        return vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%lldx%lld: the processor would resize an edge to nothing "
                            "(the aspect ratio is too large)", (long long)o->image_w, (long long)o->image_h);
    t->images = o->images > 0 ? o->images : 1;
    const int64_t seq_len = side * side / (s * s);
    if (t->images > 4096 || __builtin_mul_overflow(per, t->images, &t->tiles) ||
        __builtin_mul_overflow(t->tiles, side * side, &t->patches) || t->patches > (INT64_C(1) << 32))
        return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "%lld images of %lld frames: more than 2^32 patches per sample",
                            (long long)t->images, (long long)per);
    int64_t sc;
    if (__builtin_mul_overflow(t->patches, side * side, &sc) || __builtin_mul_overflow(sc, t->NH, &sc) ||
        sc > (INT64_C(1) << 56))
        return vc_set_error(r->err, VC_ERR_USAGE, o->images > 1 ? O("images") : O("image"), "%lld frames of %lld patches: "
                            "the tower's attention would have more than 2^56 elements per sample", (long long)t->tiles,
                            (long long)(side * side));
    t->h = rows ? rows * t->img : t->img;
    t->w = cols ? cols * t->img : t->img;
    t->embeds = t->tiles * seq_len;
    t->tokens = t->embeds + t->images * (rows ? rows * cols * 2 + rows + 4 : 3);
    /* generate()'s decoding steps: prepare_inputs_for_generation passes pixel_values to the prefill only
     * (_update_model_kwargs_for_generation keeps image_hidden_states, which the steps' inputs_merger finds no image
     * token for): the tower written as for the prefill and not run (src/engine/generate.c "Images") */
    t->decode = split.image_decode != 0;
    return 0;
}

int vc__hf_idefics3_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split)
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
    if (o && (o->image_w > 0 || o->images > 0)) {
        /* the tower run: hidden_act, SmolVLMVisionConfig's gelu_pytorch_tanh when absent or null (the names ACT2FN
         * gives a module the tower's layers model: gelu, gelu_pytorch_tanh, silu, relu) */
        const cJSON *act = v ? cJSON_GetObjectItemCaseSensitive(v, "hidden_act") : NULL;
        t->act = A_GELU_TANH;
        if (act && !cJSON_IsNull(act) && vc__hf_vision_act(r, v, "hidden_act", &t->act)) return -1;
        return images_of(r, a, o, split);
    }
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
