/*
 * hf_mllama.c — Llama 3.2 Vision (model_type mllama, MllamaForConditionalGeneration; issue 31): the keys of
 * MllamaConfig the row's generic reading (hf_read.c, text_config's LlamaConfig-like keys) cannot check, and the
 * modules a text-only forward loads but never runs.
 *
 * Sources, huggingface/transformers:
 *  - configuration_mllama.py @ 032b32abfb07ba36e8fc1a8e5251514523edce34: MllamaVisionConfig.__init__ (hidden_size
 *    1280, hidden_act "gelu", num_hidden_layers 32, num_global_layers 8, num_attention_heads 16 stored as
 *    attention_heads, num_channels 3, intermediate_size 5120, vision_output_dim 7680, image_size 448, patch_size 14,
 *    norm_eps 1e-5, max_num_tiles 4, intermediate_layers_indices None -> [3, 7, 15, 23, 30],
 *    supported_aspect_ratios None -> the eight of max_num_tiles 4, ValueError "max_num_tiles must be 4 for default
 *    supported aspect ratios" otherwise; max_aspect_ratio_id = len(supported_aspect_ratios));
 *    MllamaTextConfig.__init__ (vocab_size 128256, hidden_size 4096, silu, num_hidden_layers 40, 32 heads, 8 kv
 *    heads, intermediate_size 14336, rope_theta 500000, rms_norm_eps 1e-5, max_position_embeddings 131072,
 *    tie_word_embeddings False, cross_attention_layers None -> [3, 8, 13, 18, 23, 28, 33, 38], dropout 0).
 *  - modeling_mllama.py @ befb7955722ef3a9c152cb47efa0d87616709ec1:
 *    MllamaVisionModel.__init__: patch_embedding nn.Conv2d(num_channels, hidden, patch, stride patch, bias=False),
 *    class_embedding nn.Parameter(hidden), gated_positional_embedding (MllamaPrecomputedPositionEmbedding: gate [1],
 *    embedding [num_patches, hidden], tile_embedding nn.Embedding(max_aspect_ratio_id + 1, max_num_tiles x num_patches
 *    x hidden); num_patches = (image_size // patch_size)^2 + 1), pre_ and post_tile_positional_embedding
 *    (MllamaPrecomputedAspectRatioEmbedding(is_gated=True): embedding nn.Embedding(max_aspect_ratio_id + 1,
 *    max_num_tiles x hidden), gate [1]), layernorm_pre / layernorm_post nn.LayerNorm(hidden), transformer
 *    (num_hidden_layers MllamaVisionEncoderLayers) and global_transformer (num_global_layers, is_gated: gate_attn and
 *    gate_ffn [1] each); MllamaVisionEncoderLayer: self_attn q/k/v/o_proj nn.Linear(hidden, heads x head_dim,
 *    bias=False), head_dim = hidden // attention_heads, mlp fc1 / fc2 with biases, input_layernorm and
 *    post_attention_layernorm nn.LayerNorm; MllamaForConditionalGeneration.__init__: multi_modal_projector
 *    nn.Linear(vision_output_dim, text hidden, bias=True); MllamaTextModel.__init__: embed_tokens
 *    nn.Embedding(vocab_size + 8, hidden, padding_idx), MllamaCrossAttentionDecoderLayer at the layer indices in
 *    cross_attention_layers (cross_attn q/k/v/o_proj as the self-attention's, q_norm / k_norm MllamaTextRMSNorm
 *    (head_dim), input_layernorm, cross_attn_attn_gate [1], mlp MllamaTextMLP, post_attention_layernorm,
 *    cross_attn_mlp_gate [1]), MllamaSelfAttentionDecoderLayer (LlamaDecoderLayer's modules) elsewhere, norm;
 *    MllamaForCausalLM.lm_head nn.Linear(hidden, vocab_size, bias=False).
 *    MllamaTextModel.forward: "For text-only path we should skip cross attention layers": a cross-attention layer
 *    with no cross_attention_states and an empty cache is `continue`d. So without an image the model runs
 *    LlamaForCausalLM's layers (the self-attention ones) on an embedding of vocab_size + 8 rows; the tower, the
 *    projector and the cross-attention layers are loaded and never run (VisionWeights, layers/vision.c). Their
 *    parameters get no gradient, so an optimizer keeps no state for them.
 *
 * With --image / --images (training and --mode infer) the tower, the projector and the cross-attention layers run
 * (vc__hf_mllama_write, vc__hf_mllama_cross_write; layers/mllama.c): MllamaForConditionalGeneration.forward with
 * pixel_values as modeling_mllama.py @ befb7955 runs it (MllamaVisionModel.forward, _prepare_cross_attention_mask,
 * MllamaCrossAttentionDecoderLayer.forward, MllamaTextCrossSdpaAttention.forward), the processor's tensors from
 * image_processing_mllama.py @ 0350540de3d2a016f85b83ea804ef3f07e8e4f67 (get_optimal_tiled_canvas: ml_canvas;
 * pack_images pads pixel_values to max_image_tiles whatever the canvas, so the canvas moves no byte). The tower and
 * the projector are frozen (LLaMA-Factory's freeze_vision_tower / freeze_multi_modal_projector defaults, as the other
 * VLM rows); the cross-attention layers train with the language model.
 *
 * generate() with images runs the same modules (src/engine/generate.c "Images": the tower and the cross-attention
 * layers' k_proj / v_proj in the prefill alone, their keys / values cached and read back each step).
 * What is not modelled is refused naming the option: --tp (no Megatron plan of these modules is
 * read), --serve (vLLM dropped
 * MllamaForConditionalGeneration: vllm-project/vllm vllm/model_executor/models/registry.py @
 * 0002bff0b6cb36a3c8a17364de3303664463c412 lists it in _PREVIOUSLY_SUPPORTED_MODELS, "0.10.2", "encoder-decoder
 * models except whisper have been removed for V0 deprecation"); and tie_word_embeddings true (lm_head's vocab_size
 * rows tied to embed_tokens' vocab_size + 8).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static bool ml_int(const cJSON *v) { return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble); }

/* vision_config.KEY as the error's path (r reads the config's root) */
static int ml_vbad(rd *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ml_vbad(rd *r, const char *key, const char *fmt, ...)
{
    char path[96], msg[400];
    snprintf(path, sizeof path, "vision_config.%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vc_set_error(r->err, VC_ERR_MODEL, path, "%s", msg);
    return -1;
}

/* text_config.cross_attention_layers: layer indices below num_hidden_layers (None: the class's eight) */
static int read_cross(rd *r, const cJSON *tc, arch *a)
{
    static const int def[] = {3, 8, 13, 18, 23, 28, 33, 38};
    const cJSON *cl = tc ? cJSON_GetObjectItemCaseSensitive(tc, "cross_attention_layers") : NULL;
    if (cJSON_IsNull(cl)) cl = NULL;
    a->ml.cross = cl;
    a->ml.ncross = 0;
    if (!cl) {
        for (size_t i = 0; i < sizeof def / sizeof *def; i++)
            if (def[i] >= a->N)
                return vc__hf_bad(r, "num_hidden_layers", "%lld: cross_attention_layers (absent: [3, 8, ..., 38]) "
                                  "names layer %d, past the last layer", (long long)a->N, def[i]);
        a->ml.ncross = (int64_t)(sizeof def / sizeof *def);
        return 0;
    }
    if (!cJSON_IsArray(cl)) return vc__hf_bad(r, "cross_attention_layers", "expected a list of layer indices");
    for (const cJSON *e = cl->child; e; e = e->next) {
        if (!ml_int(e) || e->valuedouble < 0 || e->valuedouble >= (double)a->N)
            return vc__hf_bad(r, "cross_attention_layers", "expected layer indices from 0 to %lld (num_hidden_layers - 1)",
                              (long long)(a->N - 1));
        for (const cJSON *f = cl->child; f != e; f = f->next)
            if (f->valuedouble == e->valuedouble)
                return vc__hf_bad(r, "cross_attention_layers", "layer %lld is listed twice", (long long)e->valuedouble);
        a->ml.ncross++;
    }
    return 0;
}

bool vc__hf_mllama_cross(const arch *a, int64_t i)
{
    if (!a->ml.cross) {
        static const int def[] = {3, 8, 13, 18, 23, 28, 33, 38};
        for (size_t k = 0; k < sizeof def / sizeof *def; k++)
            if (def[k] == i) return true;
        return false;
    }
    for (const cJSON *e = a->ml.cross->child; e; e = e->next)
        if ((int64_t)e->valuedouble == i) return true;
    return false;
}

/* vision_config.supported_aspect_ratios: [[w, h], ...] with w x h tiles at most max_num_tiles (None: the eight of
 * max_num_tiles 4); the count sets max_aspect_ratio_id */
static int read_ratios(rd *r, const cJSON *v, arch *a)
{
    const cJSON *sr = v ? cJSON_GetObjectItemCaseSensitive(v, "supported_aspect_ratios") : NULL;
    if (!sr || cJSON_IsNull(sr)) {
        if (a->ml.tiles != 4)
            return ml_vbad(r, "max_num_tiles", "%lld: MllamaVisionConfig raises ValueError (\"max_num_tiles must be 4 for "
                           "default supported aspect ratios\") without supported_aspect_ratios", (long long)a->ml.tiles);
        a->ml.ratios = 8;
        return 0;
    }
    if (!cJSON_IsArray(sr) || cJSON_GetArraySize(sr) < 1)
        return ml_vbad(r, "supported_aspect_ratios", "expected a list of [width, height] tile counts");
    a->ml.ratios = 0;
    for (const cJSON *e = sr->child; e; e = e->next) {
        const cJSON *w = cJSON_GetArrayItem(e, 0), *h = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !ml_int(w) || !ml_int(h) || w->valuedouble < 1 ||
            h->valuedouble < 1 || w->valuedouble * h->valuedouble > (double)a->ml.tiles)
            return ml_vbad(r, "supported_aspect_ratios", "expected [width, height] pairs of positive tile counts, at most "
                           "max_num_tiles (%lld) tiles each", (long long)a->ml.tiles);
        a->ml.ratios++;
    }
    return 0;
}

/* vision_config.intermediate_layers_indices: indices of the local transformer's hidden states (num_hidden_layers + 1
 * of them), concatenated after the final state: the tower's output is hidden_size x (1 + their number) wide */
static int read_intermediate(rd *r, const cJSON *v, arch *a, int64_t *n)
{
    const cJSON *il = v ? cJSON_GetObjectItemCaseSensitive(v, "intermediate_layers_indices") : NULL;
    if (!il || cJSON_IsNull(il)) {
        if (a->ml.N < 31)
            return ml_vbad(r, "num_hidden_layers", "%lld: intermediate_layers_indices (absent: [3, 7, 15, 23, 30]) index "
                           "hidden states past the last layer", (long long)a->ml.N);
        *n = 5;
        return 0;
    }
    if (!cJSON_IsArray(il)) return ml_vbad(r, "intermediate_layers_indices", "expected a list of layer indices");
    *n = 0;
    for (const cJSON *e = il->child; e; e = e->next, (*n)++)
        if (!ml_int(e) || e->valuedouble < 0 || e->valuedouble > (double)a->ml.N)
            return ml_vbad(r, "intermediate_layers_indices", "expected indices from 0 to %lld (the local transformer's "
                           "hidden states: num_hidden_layers + 1)", (long long)a->ml.N);
    return 0;
}

/* MllamaImageProcessor (image_processing_mllama.py @ 0350540d): get_all_supported_aspect_ratios(max_image_tiles) (every
 * (width, height) tile count pair of at most max_image_tiles tiles, width outer) and get_optimal_tiled_canvas: the
 * canvases np.array(arrangements) * tile_size read as (height, width), each one's scale min(height / image_height,
 * width / image_width); the smallest scale of at least 1 (upscaling), else the largest below 1; among the canvases of
 * that scale the smallest area. The image's tiles: (canvas height / tile) x (canvas width / tile). */
static void ml_canvas(int64_t w, int64_t h, int64_t tile, int64_t tiles, int64_t *th, int64_t *tw)
{
    double best = -1;
    bool up = false; /* a canvas of scale >= 1 exists */
    for (int64_t x = 1; x <= tiles; x++)
        for (int64_t y = 1; x * y <= tiles; y++)
            up |= fmin((double)(x * tile) / (double)h, (double)(y * tile) / (double)w) >= 1;
    for (int64_t x = 1; x <= tiles; x++)
        for (int64_t y = 1; x * y <= tiles; y++) {
            const double sc = fmin((double)(x * tile) / (double)h, (double)(y * tile) / (double)w);
            if (up ? sc < 1 : sc >= 1) continue;
            if (best < 0 || (up ? sc < best : sc > best) || (sc == best && x * y < *th * *tw)) {
                best = sc;
                *th = x;
                *tw = y;
            }
        }
}

int vc__hf_mllama_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split, bool serve, bool generate)
{
    (void)generate; /* generate() with images: src/engine/generate.c "Images" (the tower and the cross-attention caches) */
    const cJSON *root = r->cfg;
    if (serve)
        return vc_set_error(r->err, VC_ERR_USAGE, O("serve"), "vLLM no longer serves MllamaForConditionalGeneration "
                            "(vllm/model_executor/models/registry.py @0002bff0: _PREVIOUSLY_SUPPORTED_MODELS, 0.10.2, "
                            "\"encoder-decoder models except whisper have been removed for V0 deprecation\")"), -1;
    if (split.tp > 1)
        return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "mllama: tensor parallelism is not modelled (no split of its "
                            "tower and cross-attention layers is read)"), -1;
    rd tr = {root, r->err, r->fam, false, 1, "text_config"};
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    tr.cfg = tc;
    if (a->tie)
        return vc__hf_bad(&tr, "tie_word_embeddings", "true: lm_head (vocab_size rows) tied to embed_tokens (vocab_size + 8 "
                          "rows) is not modelled");
    if (read_cross(&tr, tc, a)) return -1;
    if (a->ml.ncross >= a->N)
        return vc__hf_bad(&tr, "cross_attention_layers", "every layer is a cross-attention layer: a text-only forward "
                          "would run none");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    if (cJSON_IsNull(v)) v = NULL; /* MllamaConfig: None is MllamaVisionConfig() */
    if (v && !cJSON_IsObject(v))
        return vc_set_error(r->err, VC_ERR_MODEL, "vision_config", "expected an object (the vision tower's keys)"), -1;
    /* attention_heads: the attribute MllamaVisionConfig stores (config.json's key); num_attention_heads its
     * __init__ argument */
    const char *heads = v && cJSON_GetObjectItemCaseSensitive(v, "attention_heads") ? "attention_heads" : "num_attention_heads";
    int act;
    if (vc__hf_vision_int(r, v, "hidden_size", 1280, 1, &a->ml.H) ||
        vc__hf_vision_int(r, v, "intermediate_size", 5120, 1, &a->ml.I) ||
        vc__hf_vision_int(r, v, "num_hidden_layers", 32, 1, &a->ml.N) ||
        vc__hf_vision_int(r, v, "num_global_layers", 8, 0, &a->ml.G) || vc__hf_vision_int(r, v, heads, 16, 1, &a->ml.NH) ||
        vc__hf_vision_int(r, v, "num_channels", 3, 1, &a->ml.cin) ||
        vc__hf_vision_int(r, v, "vision_output_dim", 7680, 1, &a->ml.vout) ||
        vc__hf_vision_int(r, v, "image_size", 448, 1, &a->ml.img) || vc__hf_vision_int(r, v, "patch_size", 14, 1, &a->ml.P) ||
        vc__hf_vision_int(r, v, "max_num_tiles", 4, 1, &a->ml.tiles) || vc__hf_vision_act(r, v, "hidden_act", &act))
        return -1;
    if (a->ml.N > 1024 || a->ml.G > 1024)
        return ml_vbad(r, a->ml.N > 1024 ? "num_hidden_layers" : "num_global_layers", "more than 1024 layers");
    if (a->ml.H % a->ml.NH)
        return ml_vbad(r, heads, "%lld must divide hidden_size (%lld): MllamaVisionAttention's q/k/v_proj are heads x "
                       "(hidden_size // heads) wide", (long long)a->ml.NH, (long long)a->ml.H);
    if (a->ml.P > a->ml.img)
        return ml_vbad(r, "patch_size", "%lld: larger than image_size (%lld), no patch", (long long)a->ml.P,
                       (long long)a->ml.img);
    if (a->ml.tiles > 64) return ml_vbad(r, "max_num_tiles", "%lld: more than 64 tiles", (long long)a->ml.tiles);
    const cJSON *eps = v ? cJSON_GetObjectItemCaseSensitive(v, "norm_eps") : NULL;
    if (eps && !cJSON_IsNull(eps) && (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || !isfinite(eps->valuedouble)))
        return ml_vbad(r, "norm_eps", "expected a positive number");
    int64_t nint = 0;
    if (read_ratios(r, v, a) || read_intermediate(r, v, a, &nint)) return -1;
    /* MllamaVisionModel.forward cats the final state and the intermediate ones: hidden_size x (1 + n) features,
     * the multi_modal_projector's input (vision_output_dim) */
    if (a->ml.vout != a->ml.H * (1 + nint))
        return ml_vbad(r, "vision_output_dim", "%lld: the tower's output is hidden_size x (1 + len(intermediate_layers_"
                       "indices)) = %lld x %lld wide, the multi_modal_projector's input", (long long)a->ml.vout,
                       (long long)a->ml.H, (long long)(1 + nint));
    /* every weight below 2^48 elements, as hf_read.c bounds the language model's */
    const int64_t lim = INT64_C(1) << 48, side = a->ml.img / a->ml.P;
    const struct { int64_t x, y, z; const char *key; } prods[] = {
        {a->ml.H, a->ml.H, 1, "hidden_size"}, {a->ml.H, a->ml.I, 1, "intermediate_size"},
        {a->ml.cin * a->ml.P, a->ml.P * a->ml.H, 1, "patch_size"},
        {side * side + 1, a->ml.H, (a->ml.ratios + 1) * a->ml.tiles, "image_size"}, {a->ml.vout, a->H, 1, "vision_output_dim"},
    };
    for (size_t i = 0; i < sizeof prods / sizeof *prods; i++) {
        int64_t t;
        if (__builtin_mul_overflow(prods[i].x, prods[i].y, &t) || __builtin_mul_overflow(t, prods[i].z, &t) || t > lim)
            return ml_vbad(r, prods[i].key, "a weight of the vision tower would have more than 2^48 elements");
    }
    a->ml.nint = nint;
    a->ml.images = 0;
    if (o && (o->image_w > 0 || o->images > 0)) {
        if (o->image_w <= 0)
            return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "needs " O("image") " WxH (the images' size)"), -1;
        if (a->act != A_SILU)
            return vc__hf_bad(&tr, "hidden_act", "with images: the cross-attention layers' MLP is modelled with silu "
                              "(MllamaTextConfig's default) only");
        a->ml.images = o->images > 0 ? o->images : 1;
        ml_canvas(o->image_w, o->image_h, a->ml.img, a->ml.tiles, &a->ml.th, &a->ml.tw);
        /* every tile's tensors (pixel_values are padded to max_num_tiles) below 2^48 elements a sample */
        const int64_t p8 = (side * side + 1 + 7) / 8 * 8;
        int64_t t, u;
        if (__builtin_mul_overflow(a->ml.images, a->ml.tiles * p8, &t) || __builtin_mul_overflow(t, a->ml.tiles * p8, &u) ||
            __builtin_mul_overflow(u, a->ml.NH, &u) || u > lim || __builtin_mul_overflow(t, a->ml.I + a->ml.vout + a->H, &u) ||
            u > lim || __builtin_mul_overflow(t, a->ml.cin * a->ml.P * a->ml.P, &u) || u > lim)
            return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "%lld images of %lld tiles: the tower's tensors would "
                                "have more than 2^48 elements a sample", (long long)a->ml.images,
                                (long long)a->ml.tiles), -1;
    }
    a->ml.nall = a->N;
    a->N -= a->ml.ncross; /* the MllamaSelfAttentionDecoderLayers: what a text-only forward runs */
    a->ml.vextra = 8;     /* nn.Embedding(config.vocab_size + 8, ...) */
    a->ml.on = true;
    return 0;
}

void vc__hf_mllama_write(rd *r, cJSON *arr, const arch *a)
{
    if (!a->ml.on) return;
    const int64_t H = a->ml.H, I = a->ml.I, side = a->ml.img / a->ml.P, np = side * side + 1, ids = a->ml.ratios + 1;
    char nm[160];
    /* MllamaVisionModel (the header), module by module */
    vc__hf_frozen_weights(r, arr, "vision_model.patch_embedding", H, a->ml.cin * a->ml.P * a->ml.P, false, false);
    vc__hf_frozen_weights(r, arr, "vision_model.class_embedding", H, 0, false, false);
    vc__hf_frozen_weights(r, arr, "vision_model.gated_positional_embedding.gate", 1, 0, false, false);
    vc__hf_frozen_weights(r, arr, "vision_model.gated_positional_embedding.embedding", np, H, false, false);
    vc__hf_frozen_weights(r, arr, "vision_model.gated_positional_embedding.tile_embedding", ids, a->ml.tiles * np * H,
                          false, false);
    static const char *const tile[] = {"pre_tile_positional_embedding", "post_tile_positional_embedding"};
    for (int t = 0; t < 2; t++) {
        snprintf(nm, sizeof nm, "vision_model.%s.embedding", tile[t]);
        vc__hf_frozen_weights(r, arr, nm, ids, a->ml.tiles * H, false, false);
        snprintf(nm, sizeof nm, "vision_model.%s.gate", tile[t]);
        vc__hf_frozen_weights(r, arr, nm, 1, 0, false, false);
    }
    vc__hf_frozen_weights(r, arr, "vision_model.layernorm_pre", H, 0, true, false);
    vc__hf_frozen_weights(r, arr, "vision_model.layernorm_post", H, 0, true, false);
    static const char *const proj[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    for (int g = 0; g < 2; g++) {
        const char *enc = g ? "global_transformer" : "transformer";
        for (int64_t l = 0; l < (g ? a->ml.G : a->ml.N) && !r->oom; l++) {
            for (int j = 0; j < 4; j++) {
                snprintf(nm, sizeof nm, "vision_model.%s.layers.%lld.self_attn.%s", enc, (long long)l, proj[j]);
                vc__hf_frozen_weights(r, arr, nm, H, H, false, true);
            }
            snprintf(nm, sizeof nm, "vision_model.%s.layers.%lld.mlp.fc1", enc, (long long)l);
            vc__hf_frozen_weights(r, arr, nm, I, H, true, true);
            snprintf(nm, sizeof nm, "vision_model.%s.layers.%lld.mlp.fc2", enc, (long long)l);
            vc__hf_frozen_weights(r, arr, nm, H, I, true, true);
            snprintf(nm, sizeof nm, "vision_model.%s.layers.%lld.input_layernorm", enc, (long long)l);
            vc__hf_frozen_weights(r, arr, nm, H, 0, true, false);
            snprintf(nm, sizeof nm, "vision_model.%s.layers.%lld.post_attention_layernorm", enc, (long long)l);
            vc__hf_frozen_weights(r, arr, nm, H, 0, true, false);
            for (int k = 0; g && k < 2; k++) { /* is_gated: gate_attn, gate_ffn, each a tensor of its own */
                snprintf(nm, sizeof nm, "vision_model.%s.layers.%lld.%s", enc, (long long)l, k ? "gate_ffn" : "gate_attn");
                vc__hf_frozen_weights(r, arr, nm, 1, 0, false, false);
            }
        }
    }
    vc__hf_frozen_weights(r, arr, "multi_modal_projector", a->H, a->ml.vout, true, true);
    if (a->ml.images > 0) { /* the tower run on the tiles, the projector, the cross-attention mask (layers/mllama.c) */
        cJSON *o = vc__hf_layer(r, arr, "MllamaVision", "cross_attention_states");
        vc__hf_flag(r, o, "frozen", true);
        vc__hf_num(r, o, "images", (double)a->ml.images);
        vc__hf_num(r, o, "tiles", (double)a->ml.tiles);
        vc__hf_num(r, o, "patches", (double)(side * side));
        vc__hf_num(r, o, "hidden_size", (double)H);
        vc__hf_num(r, o, "intermediate_size", (double)I);
        vc__hf_num(r, o, "num_heads", (double)a->ml.NH);
        vc__hf_num(r, o, "num_layers", (double)a->ml.N);
        vc__hf_num(r, o, "num_global_layers", (double)a->ml.G);
        vc__hf_num(r, o, "intermediates", (double)a->ml.nint);
        vc__hf_num(r, o, "out_features", (double)a->H);
        vc__hf_num(r, o, "patch_values", (double)(a->ml.cin * a->ml.img * a->ml.img));
        o = vc__hf_layer(r, arr, "MllamaCrossMask", "cross_attention_mask");
        vc__hf_ins(r, o, "input", NULL, NULL, NULL);
        vc__hf_num(r, o, "images", (double)a->ml.images);
        vc__hf_num(r, o, "tiles", (double)a->ml.tiles);
        vc__hf_num(r, o, "num_patches", (double)np);
        return; /* the cross-attention layers run in the stack (vc__hf_mllama_cross_write) */
    }
    /* the MllamaCrossAttentionDecoderLayers, at their indices of language_model.model.layers */
    const int64_t q = a->NH * a->D, kv = a->KV * a->D;
    for (int64_t i = 0; i < a->ml.nall && !r->oom; i++) {
        if (!vc__hf_mllama_cross(a, i)) continue;
        static const char *const mods[] = {"cross_attn.q_proj", "cross_attn.k_proj", "cross_attn.v_proj",
                                           "cross_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
        const int64_t d0[] = {q, kv, kv, a->H, a->I, a->I, a->H}, d1[] = {a->H, a->H, a->H, q, a->H, a->H, a->I};
        for (int j = 0; j < 7; j++) {
            snprintf(nm, sizeof nm, "language_model.model.layers.%lld.%s", (long long)i, mods[j]);
            vc__hf_frozen_weights(r, arr, nm, d0[j], d1[j], false, true);
        }
        snprintf(nm, sizeof nm, "language_model.model.layers.%lld.cross_attn.q_norm", (long long)i);
        vc__hf_frozen_weights(r, arr, nm, a->D, 0, false, false);
        snprintf(nm, sizeof nm, "language_model.model.layers.%lld.cross_attn.k_norm", (long long)i);
        vc__hf_frozen_weights(r, arr, nm, a->D, 0, false, false);
        snprintf(nm, sizeof nm, "language_model.model.layers.%lld.input_layernorm", (long long)i);
        vc__hf_frozen_weights(r, arr, nm, a->H, 0, false, false);
        snprintf(nm, sizeof nm, "language_model.model.layers.%lld.post_attention_layernorm", (long long)i);
        vc__hf_frozen_weights(r, arr, nm, a->H, 0, false, false);
        snprintf(nm, sizeof nm, "language_model.model.layers.%lld.cross_attn_attn_gate", (long long)i);
        vc__hf_frozen_weights(r, arr, nm, 1, 0, false, false);
        snprintf(nm, sizeof nm, "language_model.model.layers.%lld.cross_attn_mlp_gate", (long long)i);
        vc__hf_frozen_weights(r, arr, nm, 1, 0, false, false);
    }
}

/* The self-attention layers before full layer index f (the text-only numbering of f's successor) */
static int64_t ml_self_before(const arch *a, int64_t f)
{
    int64_t n = 0;
    for (int64_t i = 0; i < f; i++) n += !vc__hf_mllama_cross(a, i);
    return n;
}

bool vc__hf_mllama_cross_before(const arch *a, int64_t s)
{
    if (a->ml.images <= 0) return false;
    for (int64_t f = 0; f < a->ml.nall; f++)
        if (vc__hf_mllama_cross(a, f) && ml_self_before(a, f) == s) return true;
    return false;
}

/* MllamaCrossAttentionDecoderLayer.forward (modeling_mllama.py @ befb7955): residual; input_layernorm; cross_attn
 * (q_proj, k_proj / v_proj of cross_attention_states, MllamaCrossAttention: q_norm, repeat_kv, k_norm, the masked
 * sdpa; o_proj); residual + cross_attn_attn_gate.tanh() * h; residual; post_attention_layernorm; mlp (gate_proj,
 * act, up_proj, the product, down_proj); full_text_row_masked_out_mask[:, 0] * h (a new tensor, written as a Scale:
 * a [B, L, 1] mask saved, negligible); residual + cross_attn_mlp_gate.tanh() * h. One Sequential a layer, named
 * language_model.model.layers.<index>, checkpointed as the stack is. */
const char *vc__hf_mllama_cross_write(rd *r, cJSON *arr, const arch *a, int64_t s, const char *in, char *buf, size_t n)
{
    const int64_t q = a->NH * a->D, kv = a->KV * a->D;
    for (int64_t f = 0; f < a->ml.nall && a->ml.images > 0 && !r->oom; f++) {
        if (!vc__hf_mllama_cross(a, f) || ml_self_before(a, f) != s + 1) continue;
        snprintf(buf, n, "language_model.model.layers.%lld", (long long)f);
        cJSON *seq = vc__hf_layer(r, arr, "Sequential", buf);
        if (!seq) return in;
        if (in) vc__hf_ins(r, seq, in, NULL, NULL, NULL);
        if (a->ckpt && (f + 1) % a->ckpt_every == 0) vc__hf_flag(r, seq, "checkpoint", true);
        cJSON *inner = cJSON_AddArrayToObject(seq, "layers");
        if (!inner) {
            r->oom = true;
            return in;
        }
        cJSON *o = vc__hf_layer(r, inner, "HFRMSNorm", "input_layernorm");
        vc__hf_num(r, o, "hidden_size", (double)a->H);
        vc__hf_num(r, o, "eps", a->eps);
        vc__hf_str(r, o, "held_until", "cross_attn.o_proj"); /* cross_attn's argument */
        static const struct { const char *n, *in; int dim; } lin[] = {
            {"cross_attn.q_proj", "input_layernorm", 0}, {"cross_attn.k_proj", "cross_attention_states", 1},
            {"cross_attn.v_proj", "cross_attention_states", 1}};
        for (int j = 0; j < 3; j++) {
            o = vc__hf_layer(r, inner, "Linear", lin[j].n);
            vc__hf_ins(r, o, lin[j].in, NULL, NULL, NULL);
            vc__hf_num(r, o, "in_features", (double)a->H);
            vc__hf_num(r, o, "out_features", (double)(lin[j].dim ? kv : q));
            vc__hf_flag(r, o, "bias", false);
        }
        o = vc__hf_layer(r, inner, "MllamaCrossAttention", "cross_attn");
        vc__hf_ins(r, o, "cross_attn.q_proj", "cross_attn.k_proj", "cross_attn.v_proj", "cross_attention_mask");
        vc__hf_num(r, o, "num_heads", (double)a->NH);
        vc__hf_num(r, o, "num_kv_heads", (double)a->KV);
        vc__hf_num(r, o, "head_dim", (double)a->D);
        o = vc__hf_layer(r, inner, "Linear", "cross_attn.o_proj");
        vc__hf_num(r, o, "in_features", (double)q);
        vc__hf_num(r, o, "out_features", (double)a->H);
        vc__hf_flag(r, o, "bias", false);
        vc__hf_layer(r, inner, "MllamaGate", "cross_attn_attn_gate");
        vc__hf_ins(r, vc__hf_layer(r, inner, "Add", "attn_residual"), "input", "cross_attn_attn_gate", NULL, NULL);
        o = vc__hf_layer(r, inner, "HFRMSNorm", "post_attention_layernorm");
        vc__hf_num(r, o, "hidden_size", (double)a->H);
        vc__hf_num(r, o, "eps", a->eps);
        vc__hf_str(r, o, "held_until", "mlp.down_proj");
        static const char *const mlp[] = {"mlp.gate_proj", "mlp.up_proj"};
        for (int j = 0; j < 2; j++) {
            if (j) vc__hf_layer(r, inner, "SiLU", "mlp.act_fn");
            o = vc__hf_layer(r, inner, "Linear", mlp[j]);
            vc__hf_ins(r, o, "post_attention_layernorm", NULL, NULL, NULL);
            vc__hf_num(r, o, "in_features", (double)a->H);
            vc__hf_num(r, o, "out_features", (double)a->I);
            vc__hf_flag(r, o, "bias", false);
        }
        vc__hf_ins(r, vc__hf_layer(r, inner, "Mul", "mlp.mul"), "mlp.act_fn", "mlp.up_proj", NULL, NULL);
        o = vc__hf_layer(r, inner, "Linear", "mlp.down_proj");
        vc__hf_num(r, o, "in_features", (double)a->I);
        vc__hf_num(r, o, "out_features", (double)a->H);
        vc__hf_flag(r, o, "bias", false);
        o = vc__hf_layer(r, inner, "Scale", "full_text_row_masked_out_mask");
        vc__hf_num(r, o, "factor", 1.0);
        vc__hf_layer(r, inner, "MllamaGate", "cross_attn_mlp_gate");
        vc__hf_ins(r, vc__hf_layer(r, inner, "Add", "mlp_residual"), "attn_residual", "cross_attn_mlp_gate", NULL, NULL);
        in = buf;
    }
    return in;
}
