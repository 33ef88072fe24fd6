/*
 * hf_pixtral.c — mistral3 (Mistral3ForConditionalGeneration: Mistral-Small-3.1-24B-Instruct-2503,
 * 3.2-24B-Instruct-2506, and the Magistral / Devstral checkpoints shipped with it; issue 31 item 4):
 * the Pixtral vision tower of vision_config and the Mistral3MultiModalProjector, read and checked,
 * their weights written as frozen VisionWeights layers before the language model (a MistralConfig
 * read from text_config by the family's row, src/hf/hf.c).
 *
 * Read at huggingface/transformers:
 *  - models/mistral3/configuration_mistral3.py @ 0db25542f2190e3dd1e402c477fa713ed516d655 Mistral3Config:
 *    image_token_index 10, projector_hidden_act "gelu", vision_feature_layer -1, multimodal_projector_bias
 *    False, spatial_merge_size 2; text_config through CONFIG_MAPPING[text_config.get("model_type",
 *    "mistral")], vision_config through CONFIG_MAPPING[vision_config.get("model_type", "pixtral")], None
 *    giving PixtralVisionConfig(intermediate_size 4096, hidden_size 1024, patch_size 14, image_size 1540,
 *    num_hidden_layers 24, num_attention_heads 16, head_dim 64, hidden_act "gelu") (the vision_config
 *    absent case: those values, not PixtralVisionConfig's own defaults);
 *  - models/pixtral/configuration_pixtral.py @ 05cd1ec14dbe16127778060fb68c34105873015c PixtralVisionConfig:
 *    hidden_size 1024, intermediate_size 4096, num_hidden_layers 24, num_attention_heads 16, num_channels 3,
 *    image_size 1024, patch_size 16, hidden_act "gelu", head_dim = hidden_size // num_attention_heads;
 *  - models/pixtral/modeling_pixtral.py @ 0233e509531ace915c8241b4c16c8032a583279c PixtralVisionModel:
 *    patch_conv nn.Conv2d(num_channels, hidden_size, patch_size, stride patch_size, bias=False), ln_pre
 *    PixtralRMSNorm(hidden_size) (a weight), transformer.layers.N = PixtralAttentionLayer: attention_norm
 *    and ffn_norm PixtralRMSNorm(hidden_size), attention.{q,k,v,o}_proj nn.Linear(hidden, hidden,
 *    bias=False), feed_forward.{gate,up}_proj nn.Linear(hidden, intermediate, bias=False) and down_proj
 *    nn.Linear(intermediate, hidden, bias=False); patch_positional_embedding (PixtralRotaryEmbedding) holds
 *    buffers only (inv_freq and original_inv_freq, non-persistent, float32 [(image_size / patch_size)^2,
 *    head_dim] each: 3,097,600 B apiece for Mistral-Small, in the weights);
 *  - models/mistral3/modeling_mistral3.py @ 00dcc6dda6f6d8e69541a6b51f97986a80242367
 *    Mistral3MultiModalProjector: norm Mistral3RMSNorm(vision hidden_size) (a weight), patch_merger
 *    (Mistral3PatchMerger: merging_layer nn.Linear(hidden_size x spatial_merge_size^2, hidden_size,
 *    bias=False)), linear_1 nn.Linear(vision hidden_size x num_feature_layers, text hidden_size,
 *    bias=multimodal_projector_bias), act ACT2FN[projector_hidden_act], linear_2 nn.Linear(text hidden,
 *    text hidden, bias=multimodal_projector_bias); num_feature_layers 1 for an int vision_feature_layer,
 *    else its length. Mistral3ForConditionalGeneration: model (vision_tower, multi_modal_projector,
 *    language_model) and lm_head nn.Linear(text hidden, vocab, bias=False), tied as the text config's
 *    tie_word_embeddings says (_tied_weights_keys ["lm_head.weight"]; MistralConfig's default False: the
 *    published checkpoints ship lm_head, 24.0B parameters). Mistral3Config @ 0db25542 also takes a top-level
 *    tie_word_embeddings (default True) that this row does not read.
 *
 * What is modelled: the parameters, exactly (named_parameters(), module by module), the tower and projector
 * loaded frozen (never run: a text-only run costs their weights); under --serve --tp, a rank's shards as vLLM
 * splits them (vllm-project/vllm @ 02677fd9 mistral3.py, pixtral.py: below). vLLM builds the tower only up to
 * the deepest vision_feature_layer (init_vision_tower_for_mistral3); the published checkpoints' -1 is every
 * layer, which is what is written here for any value. With --image / --images the tower and projector run
 * (frozen: no autograd graph unless --lora-targets adapts a Linear inside) as get_image_features runs them (write_run below: the block-diagonal float mask
 * over the sample's patches, the 2-D rotary cos / sin in the model's dtype, output_hidden_states=True keeping
 * every layer's hidden state until the projector has run; layers/pixtral.c), at batch 1 (the batch's images
 * are one sequence: src/api/request.c refuses more), for vision_feature_layer -1;
 * bench/accuracy/llm/mistral3_replica.py build_image measures it (training, -m infer, generate).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

/* vision_config.KEY as the error's path (r reads the config's root) */
static int pbad(rd *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pbad(rd *r, const char *key, const char *fmt, ...)
{
    char path[160];
    snprintf(path, sizeof path, "vision_config%s%s", key ? "." : "", key ? key : "");
    va_list ap;
    va_start(ap, fmt);
    vc_set_errorv(r->err, VC_ERR_MODEL, path, fmt, ap);
    va_end(ap);
    return -1;
}

/* An integer in [min, 2^40] at x, def when absent or null; bad() names path. */
static int pint(rd *r, const cJSON *obj, const char *key, bool vision, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *x = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!x || cJSON_IsNull(x)) {
        *out = def;
        return 0;
    }
    double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    char msg[96] = "";
    if (!isfinite(d) || d != floor(d)) snprintf(msg, sizeof msg, "expected an integer");
    else if (d < (double)min) snprintf(msg, sizeof msg, "expected an integer of at least %lld", (long long)min);
    else if (d > (double)MAX_SIZE) snprintf(msg, sizeof msg, "%.17g is larger than the limit of 2^40", d);
    if (!msg[0]) {
        *out = (int64_t)d;
        return 0;
    }
    if (vision) return pbad(r, key, "%s", msg);
    vc_set_error(r->err, VC_ERR_MODEL, key, "%s", msg);
    return -1;
}

/* An activation name ACT2FN has, among those the other towers read (hf_vision.c read_siglip):
 * gelu (nn.GELU), gelu_pytorch_tanh, silu, relu. */
static int pact(rd *r, const cJSON *obj, const char *key, bool vision, int *out)
{
    const cJSON *x = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    const char *name = "gelu"; /* PixtralVisionConfig.hidden_act, Mistral3Config.projector_hidden_act */
    if (x && !cJSON_IsNull(x)) {
        if (!cJSON_IsString(x)) {
            if (vision) return pbad(r, key, "expected a string");
            vc_set_error(r->err, VC_ERR_MODEL, key, "expected a string");
            return -1;
        }
        name = x->valuestring;
    }
    static const char *const names[] = {"gelu", "gelu_pytorch_tanh", "silu", "relu"};
    static const int acts[] = {A_GELU, A_GELU_TANH, A_SILU, A_RELU};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, names[i])) {
            *out = acts[i];
            return 0;
        }
    char e[64];
    vc_escape(e, sizeof e, name);
    if (vision) return pbad(r, key, "activation \"%s\" is not modelled (gelu, gelu_pytorch_tanh, silu or relu)", e);
    vc_set_error(r->err, VC_ERR_MODEL, key, "activation \"%s\" is not modelled (gelu, gelu_pytorch_tanh, silu or relu)", e);
    return -1;
}

/* The sub-config's model_type: absent, or the one Mistral3Config maps to the class read here. */
static int sub_type(rd *r, const cJSON *obj, const char *path, const char *want, const char *what)
{
    const cJSON *mt = obj ? cJSON_GetObjectItemCaseSensitive(obj, "model_type") : NULL;
    if (!mt || cJSON_IsNull(mt)) return 0;
    if (cJSON_IsString(mt) && !strcmp(mt->valuestring, want)) return 0;
    char e[64] = "";
    if (cJSON_IsString(mt)) vc_escape(e, sizeof e, mt->valuestring);
    vc_set_error(r->err, VC_ERR_MODEL, path, "%s%s%s: mistral3 reads %s as %s (\"%s\"); another class there is not "
                 "modelled", cJSON_IsString(mt) ? "\"" : "expected a string", e, cJSON_IsString(mt) ? "\"" : "",
                 strchr(path, '.') ? "it" : path, what, want);
    return -1;
}

/* --image WxH / --images N: PixtralProcessor (processing_pixtral.py) calls the PixtralImageProcessor with
 * patch_size x spatial_merge_size, whose get_resize_output_image_size (image_processing_pixtral.py @ 015b6b8c)
 * scales the image down to longest_edge (the checkpoints' preprocessor_config.json: vision_config.image_size,
 * 1540), floor, when it is larger, then rounds each side up to a multiple of the merged patch; the processor
 * replaces the image's [IMG] by rows x ([IMG] x cols + [IMG_BREAK]) tokens, the last break [IMG_END]: rows x
 * (cols + 1) tokens, rows x cols of them the projector's embeddings (masked_scatter). The tower
 * (PixtralVisionModel.forward) runs a sample's images as one sequence of (h / patch) x (w / patch) patches each
 * under a block mask; images of one size (--image) here. --seq is the text without the image's tokens. */
static int pixtral_images(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split)
{
    hf_vision *t = &a->vis;
    if (o->image_w <= 0)
        return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "needs " O("image") " WxH (the images' size)");
    if (t->px.nfl != 1 || (t->px.layer != -1 && t->px.layer != t->depth))
        return vc_set_error(r->err, VC_ERR_USAGE, O("image"), "mistral3 with images is modelled for vision_feature_layer -1 "
                            "(the last hidden state, the published checkpoints'); this config selects another");
    if (split.tp > 1)
        return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "the vision tower of mistral3 on tensor-parallel ranks is not "
                            "modelled with images");
    const int64_t unit = t->P * t->M;
    double W = (double)o->image_w, H = (double)o->image_h;
    const double ratio = fmax(H / (double)t->img, W / (double)t->img);
    if (ratio > 1) {
        H = floor(H / ratio);
        W = floor(W / ratio);
    }
    if (H < 1 || W < 1)
        return vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%lldx%lld: a side is less than a pixel at longest_edge %lld",
                            (long long)o->image_w, (long long)o->image_h, (long long)t->img);
    t->h = (((int64_t)H - 1) / unit + 1) * unit;
    t->w = (((int64_t)W - 1) / unit + 1) * unit;
    t->images = o->images > 0 ? o->images : 1;
    const int64_t rows = t->h / unit, cols = t->w / unit;
    if (t->images > 64)
        return vc_set_error(r->err, VC_ERR_USAGE, O("images"), "%lld images per sample: modelled with at most 64",
                            (long long)t->images);
    int64_t per, sc;
    if (__builtin_mul_overflow(t->h / t->P, t->w / t->P, &per) || __builtin_mul_overflow(per, t->images, &t->patches) ||
        __builtin_mul_overflow(t->patches, t->patches, &sc) || __builtin_mul_overflow(sc, t->NH, &sc) ||
        sc > (INT64_C(1) << 56))
        return vc_set_error(r->err, VC_ERR_USAGE, o->images > 1 ? O("images") : O("image"), "%lld patches per sample: the "
                            "tower's mask and attention (%lld heads x %lld x %lld) would have more than 2^56 elements",
                            (long long)t->patches, (long long)t->NH, (long long)t->patches, (long long)t->patches);
    t->embeds = t->images * rows * cols;
    t->tokens = t->images * rows * (cols + 1);
    /* generate()'s decoding steps: Mistral3ForConditionalGeneration.prepare_inputs_for_generation passes
     * pixel_values only while cache_position[0] == 0 (the tower written, not run, after the prefill) */
    t->decode = split.image_decode != 0;
    return 0;
}

int vc__hf_pixtral_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split)
{
    hf_vision *t = &a->vis;
    const cJSON *root = r->cfg;
    /* Mistral3Config builds the language model from text_config's model_type ("mistral" when absent): the
     * mistral3 row reads MistralConfig's keys, its ministral3 row (hf.c family_of) Ministral3Config's; another text
     * model (mistral4) is refused here */
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    if (!a->f->text_type && sub_type(r, tc, "text_config.model_type", "mistral", "MistralConfig (MistralForCausalLM's "
                                     "decoder; \"ministral3\" is read as Ministral3Config)"))
        return -1;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    const bool absent = !v || cJSON_IsNull(v);
    if (!absent && !cJSON_IsObject(v)) {
        vc_set_error(r->err, VC_ERR_MODEL, "vision_config", "expected an object (the vision tower's keys)");
        return -1;
    }
    if (absent) v = NULL;
    if (sub_type(r, v, "vision_config.model_type", "pixtral", "PixtralVisionConfig (PixtralVisionModel)")) return -1;
    /* PixtralVisionConfig's defaults, or Mistral3Config's when vision_config is absent (the header) */
    if (pint(r, v, "hidden_size", true, 1024, 1, &t->C) || pint(r, v, "intermediate_size", true, 4096, 1, &t->I) ||
        pint(r, v, "num_hidden_layers", true, 24, 1, &t->depth) ||
        pint(r, v, "num_attention_heads", true, 16, 1, &t->NH) || pint(r, v, "num_channels", true, 3, 1, &t->cin) ||
        pint(r, v, "image_size", true, absent ? 1540 : 1024, 1, &t->img) ||
        pint(r, v, "patch_size", true, absent ? 14 : 16, 1, &t->P) || pact(r, v, "hidden_act", true, &t->act))
        return -1;
    t->T = 1;
    t->out = a->H;
    if (t->depth > 1024) return pbad(r, "num_hidden_layers", "%lld layers: more than the limit of 1024", (long long)t->depth);
    if (t->C % t->NH)
        return pbad(r, "num_attention_heads", "hidden_size (%lld) must be divisible by num_attention_heads (%lld) "
                    "(PixtralAttention: head_dim = hidden_size // num_heads)", (long long)t->C, (long long)t->NH);
    /* head_dim: PixtralVisionConfig sets it to hidden_size // num_attention_heads, which PixtralAttention and
     * PixtralRotaryEmbedding use; a config giving another value is inconsistent */
    int64_t hd;
    if (pint(r, v, "head_dim", true, t->C / t->NH, 1, &hd)) return -1;
    if (hd != t->C / t->NH)
        return pbad(r, "head_dim", "%lld: PixtralAttention's head_dim is hidden_size / num_attention_heads (%lld / %lld "
                    "= %lld)", (long long)hd, (long long)t->C, (long long)t->NH, (long long)(t->C / t->NH));
    /* PixtralRotaryEmbedding: a frequency per pair of each head's dimensions, half on the rows, half on the
     * columns (freqs[::2], freqs[1::2]): head_dim even */
    if ((t->C / t->NH) % 2)
        return pbad(r, "num_attention_heads", "head_dim %lld (hidden_size / num_attention_heads) must be even for the "
                    "2-D rotary embedding", (long long)(t->C / t->NH));
    if (t->P > t->img)
        return pbad(r, "patch_size", "%lld: larger than image_size (%lld), no patch", (long long)t->P, (long long)t->img);
    const cJSON *rt = v ? cJSON_GetObjectItemCaseSensitive(v, "rope_theta") : NULL;
    if (rt && !cJSON_IsNull(rt) && (!cJSON_IsNumber(rt) || !(rt->valuedouble > 0) || !isfinite(rt->valuedouble)))
        return pbad(r, "rope_theta", "expected a positive number");
    /* Mistral3Config's own keys */
    if (pint(r, root, "spatial_merge_size", false, 2, 1, &t->M) || pact(r, root, "projector_hidden_act", false, &t->px.act))
        return -1;
    if (t->M > t->img / t->P) {
        vc_set_error(r->err, VC_ERR_MODEL, "spatial_merge_size", "%lld: more than the %lld patches a side of the largest "
                     "image (vision_config.image_size %lld / patch_size %lld): Mistral3PatchMerger's unfold would have no "
                     "block", (long long)t->M, (long long)(t->img / t->P), (long long)t->img, (long long)t->P);
        return -1;
    }
    const cJSON *pb = cJSON_GetObjectItemCaseSensitive(root, "multimodal_projector_bias");
    if (pb && !cJSON_IsNull(pb) && !cJSON_IsBool(pb)) {
        vc_set_error(r->err, VC_ERR_MODEL, "multimodal_projector_bias", "expected true or false");
        return -1;
    }
    t->px.bias = cJSON_IsTrue(pb);
    /* image_token_index (image_token_id): a token of the language model's vocabulary */
    const char *itk = cJSON_GetObjectItemCaseSensitive(root, "image_token_index") ? "image_token_index" : "image_token_id";
    int64_t itok;
    if (pint(r, root, itk, false, 10, 0, &itok)) return -1;
    if (itok >= a->V) {
        vc_set_error(r->err, VC_ERR_MODEL, itk, "%lld: not a token of the language model's vocabulary (text_config."
                     "vocab_size %lld)", (long long)itok, (long long)a->V);
        return -1;
    }
    /* vision_feature_layer: an index into the tower's hidden_states (num_hidden_layers + 1 of them), or a list
     * of them cat'ed on the last dimension (linear_1's input: hidden_size x their number) */
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(root, "vision_feature_layer");
    const int64_t nh = t->depth + 1;
    t->px.nfl = 1;
    t->px.layer = -1;
    if (fl && !cJSON_IsNull(fl)) {
        const bool list = cJSON_IsArray(fl);
        const int n = list ? cJSON_GetArraySize(fl) : 1;
        if (list && (n < 1 || n > 1024)) {
            vc_set_error(r->err, VC_ERR_MODEL, "vision_feature_layer", "expected an integer or a list of 1 to 1024 "
                         "integers (the tower's hidden states cat'ed for the projector)");
            return -1;
        }
        for (int i = 0; i < n; i++) {
            const cJSON *x = list ? cJSON_GetArrayItem(fl, i) : fl;
            const double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
            if (!isfinite(d) || d != floor(d) || d < (double)-nh || d >= (double)nh) {
                vc_set_error(r->err, VC_ERR_MODEL, "vision_feature_layer", "expected %san integer index into the tower's "
                             "%lld hidden states (vision_config.num_hidden_layers + 1), from -%lld to %lld",
                             list ? "a list of " : "", (long long)nh, (long long)nh, (long long)(nh - 1));
                return -1;
            }
        }
        t->px.nfl = n;
        t->px.layer = (int64_t)(list ? cJSON_GetArrayItem(fl, 0) : fl)->valuedouble;
    }
    /* the weights' sizes within 2^48 elements, the tower's parameters and the language model's within 2^56 */
    const int64_t lim = INT64_C(1) << 48, M2 = t->M * t->M;
    int64_t x, blk, tot;
    if (__builtin_mul_overflow(t->C, t->C, &x) || x > lim || __builtin_mul_overflow(t->I, t->C, &x) || x > lim)
        return pbad(r, "hidden_size", "the layers' weights (%lld wide, intermediate_size %lld) are more than 2^48 "
                    "elements", (long long)t->C, (long long)t->I);
    if (__builtin_mul_overflow(t->cin, t->P, &x) || __builtin_mul_overflow(x, t->P, &x) ||
        __builtin_mul_overflow(x, t->C, &x) || x > lim)
        return pbad(r, "patch_size", "patch_conv's weight (%lld x %lld channels x %lld x %lld) is more than 2^48 "
                    "elements", (long long)t->C, (long long)t->cin, (long long)t->P, (long long)t->P);
    if (__builtin_mul_overflow(t->C, M2, &x) || x > MAX_SIZE || __builtin_mul_overflow(x, t->C, &x) || x > lim) {
        vc_set_error(r->err, VC_ERR_MODEL, "spatial_merge_size", "%lld: the patch merger's weight (hidden_size %lld x "
                     "%lld^2, by %lld) is more than 2^48 elements", (long long)t->M, (long long)t->C, (long long)t->M,
                     (long long)t->C);
        return -1;
    }
    if (__builtin_mul_overflow(t->C, t->px.nfl, &x) || __builtin_mul_overflow(x, a->H, &x) || x > lim ||
        __builtin_mul_overflow(a->H, a->H, &x) || x > lim) {
        vc_set_error(r->err, VC_ERR_MODEL, "vision_feature_layer", "the projector's linear_1 (%lld hidden states x %lld, "
                     "by the text hidden_size %lld) or linear_2 is more than 2^48 elements", (long long)t->px.nfl,
                     (long long)t->C, (long long)a->H);
        return -1;
    }
    /* a block: q/k/v/o 4 C^2, the MLP 3 I C, two norms; the projector and patch_conv (each within 2^48) */
    if (__builtin_mul_overflow(4 * t->C, t->C, &blk) || __builtin_mul_overflow(3 * t->I, t->C, &x) ||
        __builtin_add_overflow(blk, x + 2 * t->C, &blk) || __builtin_mul_overflow(blk, t->depth, &tot) ||
        __builtin_add_overflow(tot, 8 * lim, &tot) || __builtin_add_overflow(tot, a->param_bound, &tot) ||
        tot > (INT64_C(1) << 56))
        return pbad(r, "num_hidden_layers", "%lld layers of %lld parameters each beside the language model's are more "
                    "than 2^56 parameters: byte counts would overflow 64-bit arithmetic", (long long)t->depth,
                    (long long)blk);
    /* PixtralRotaryEmbedding's table: (image_size / patch_size)^2 rows of head_dim (twice, float32) */
    int64_t tab;
    if (__builtin_mul_overflow(t->img / t->P, t->img / t->P, &tab) || __builtin_mul_overflow(tab, t->C / t->NH, &tab) ||
        tab > (INT64_C(1) << 40))
        return pbad(r, "image_size", "%lld / patch_size %lld: PixtralRotaryEmbedding's table ((image_size / patch_size)^2 "
                    "x head_dim %lld) is more than 2^40 elements", (long long)t->img, (long long)t->P,
                    (long long)(t->C / t->NH));
    if (o && (o->image_w > 0 || o->images > 0) && pixtral_images(r, a, o, split)) return -1;
    if (split.tp > 1 && !split.vllm)
        return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "the vision tower of mistral3 on Megatron tensor-parallel ranks is "
                            "not modelled (vLLM's split under " O("serve") " is)");
    if (split.tp > 1) { /* vLLM's split (the header): heads, the MLP and the projector's text width divided */
        const int64_t tp = split.tp;
        if (t->NH % tp || t->I % tp)
            return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide "
                                "vision_config.%s (%lld): vLLM splits the Pixtral tower's %s over the ranks "
                                "(PixtralHFAttention: divide(num_attention_heads, tp_size); PixtralHFMLP's "
                                "MergedColumnParallelLinear)", (long long)tp, t->NH % tp ? "num_attention_heads" :
                                "intermediate_size", (long long)(t->NH % tp ? t->NH : t->I), t->NH % tp ? "heads" : "MLP");
        if (a->H % tp)
            return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide text_config."
                                "hidden_size (%lld): vLLM splits the projector's linear_1 / linear_2 over them",
                                (long long)tp, (long long)a->H);
        if (t->px.nfl > 1)
            return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "a vision_feature_layer list under vLLM is not modelled "
                                "(vLLM's Mistral3MultiModalProjector reads linear_1 of vision_config.hidden_size)");
        t->tp = tp;
    }
    return 0;
}

/* named_parameters() of the tower and projector, module by module (the header), as frozen VisionWeights
 * layers (layers/vision.c: the weight [out, in] or [n]; "linear": false for the Conv2d, which bitsandbytes
 * leaves unquantized) */
static void pweights(rd *r, cJSON *arr, const char *name, int64_t d0, int64_t d1, bool bias, bool linear)
{
    cJSON *o = vc__hf_layer(r, arr, "VisionWeights", name);
    vc__hf_flag(r, o, "frozen", true);
    if (!o) return;
    cJSON *sh = cJSON_CreateArray();
    const int64_t d[2] = {d0, d1};
    for (int i = 0; sh && i < (d1 ? 2 : 1); i++) {
        cJSON *x = cJSON_CreateNumber((double)d[i]);
        if (!x || !cJSON_AddItemToArray(sh, x)) {
            cJSON_Delete(x);
            r->oom = true;
        }
    }
    if (!sh || !cJSON_AddItemToObject(o, "shape", sh)) {
        cJSON_Delete(sh);
        r->oom = true;
    }
    if (bias) vc__hf_flag(r, o, "bias", true);
    if (d1 && !linear) vc__hf_flag(r, o, "linear", false);
}

int vc__hf_vision_int(rd *r, const cJSON *v, const char *key, int64_t def, int64_t min, int64_t *out)
{
    return pint(r, v, key, true, def, min, out);
}

int vc__hf_vision_act(rd *r, const cJSON *v, const char *key, int *out) { return pact(r, v, key, true, out); }

void vc__hf_frozen_weights(rd *r, cJSON *arr, const char *name, int64_t d0, int64_t d1, bool bias, bool linear)
{
    pweights(r, arr, name, d0, d1, bias, linear);
}

/* ---- with images: the tower and projector run (frozen), layer by layer */

static cJSON *play(rd *r, cJSON *arr, const char *type, const char *name)
{
    cJSON *o = vc__hf_layer(r, arr, type, name);
    vc__hf_flag(r, o, "frozen", true);
    return o;
}

static void pinputs(rd *r, cJSON *o, const char *const *in, int n)
{
    if (!o) return;
    cJSON *x = cJSON_CreateStringArray(in, n);
    if (!x || !cJSON_AddItemToObject(o, "inputs", x)) {
        cJSON_Delete(x);
        r->oom = true;
    }
}

static cJSON *plinear(rd *r, cJSON *arr, const char *name, const char *in, int64_t nin, int64_t nout, bool bias)
{
    cJSON *o = play(r, arr, "Linear", name);
    if (in) vc__hf_ins(r, o, in, NULL, NULL, NULL);
    vc__hf_num(r, o, "in_features", (double)nin);
    vc__hf_num(r, o, "out_features", (double)nout);
    vc__hf_flag(r, o, "bias", bias);
    return o;
}

static cJSON *prms(rd *r, cJSON *arr, const char *name, const char *in, int64_t width, double eps)
{
    cJSON *o = play(r, arr, "HFRMSNorm", name);
    if (in) vc__hf_ins(r, o, in, NULL, NULL, NULL);
    vc__hf_num(r, o, "hidden_size", (double)width);
    vc__hf_num(r, o, "eps", eps);
    return o;
}

static void pact_layer(rd *r, cJSON *arr, int act, const char *name)
{
    if (act == A_SILU) {
        play(r, arr, "SiLU", name);
    } else if (act == A_RELU) {
        play(r, arr, "ReLU", name);
    } else {
        cJSON *o = play(r, arr, "GELU", name);
        vc__hf_str(r, o, "approximate", act == A_GELU_TANH ? "tanh" : "none");
    }
}

/* Mistral3Model.get_image_features (modeling_mistral3.py @ 00dcc6dd) on the processor's pixel_values
 * [images, C, h, w] float32 (pixtral_images), the tower and projector frozen (no autograd graph, unless PEFT's
 * --lora-targets adapts their q_proj / v_proj / ...: from that projection on every op records, as in PyTorch):
 *  - PixtralVisionModel.forward (modeling_pixtral.py @ 0233e509): patch_conv(pixel_values.to(dtype)) (the cast a
 *    temporary of the call; the Conv2d with kernel = stride = patch_size written as one Linear over each patch's
 *    values, the same weights and output), alive until forward returns through patch_embeds_list's views;
 *    torch.cat of the flattened, transposed views (a copy), ln_pre (rebinding the name: the copy dies); the
 *    positions and PixtralRotaryEmbedding (PixtralRotary), generate_block_attention_mask (PixtralMask), both
 *    alive until forward returns; PixtralTransformer with output_hidden_states=True: each
 *    PixtralAttentionLayer's input appended to encoder_states, and the last output: every one of them alive
 *    until get_image_features returns (image_outputs), after the projector;
 *  - PixtralAttentionLayer: attention_norm, q/k/v_proj, PixtralAttention's core, o_proj, the residual add;
 *    ffn_norm, gate_proj, hidden_act, up_proj, mul, down_proj, the residual add;
 *  - hidden_states[-1].squeeze(0) (a view), Mistral3MultiModalProjector: norm (eps text_config.rms_norm_eps),
 *    the patch merger (PixtralMerge, merging_layer), linear_1, act, linear_2;
 *  - Mistral3Model.forward: the split's cat and the image-token mask (PixtralOutputs); masked_scatter is
 *    src/hf/hf_layers.c's Cat of the image rows and the text's. */
static const char *write_run(rd *r, cJSON *arr, const arch *a)
{
    const hf_vision *t = &a->vis;
    const int64_t C = t->C, NH = t->NH, D = C / NH, I = t->I, H = t->out, n = t->patches, pd = t->cin * t->P * t->P;
    const int64_t M2 = t->M * t->M;
    char last[96], p[96], nm[160], nm2[160], nm3[160], prev[160];
    snprintf(last, sizeof last, "vision_tower.transformer.layers.%lld.mlp_residual", (long long)(t->depth - 1));
    const char *hold = "multi_modal_projector.linear_2"; /* image_outputs: until get_image_features returns */
    cJSON *o = play(r, arr, "PixelValues", "pixel_values");
    vc__hf_num(r, o, "num_patches", (double)n);
    vc__hf_num(r, o, "patch_dim", (double)pd);
    vc__hf_flag(r, o, "local_cast", true); /* patch_conv(pixel_values.to(dtype)): a temporary of the call */
    o = plinear(r, arr, "vision_tower.patch_conv", "pixel_values", pd, C, false);
    vc__hf_flag(r, o, "quantizable", false); /* an nn.Conv2d: bitsandbytes leaves it */
    vc__hf_str(r, o, "held_until", last);    /* patch_embeds_list's views, to the tower's return */
    o = play(r, arr, "Cat", "vision_tower.patch_embeds");
    vc__hf_num(r, o, "dim", 1);
    o = prms(r, arr, "vision_tower.ln_pre", NULL, C, 1e-5);
    vc__hf_str(r, o, "held_until", hold); /* hidden_states[0] */
    o = play(r, arr, "PixtralRotary", "vision_tower.patch_positional_embedding");
    vc__hf_num(r, o, "num_patches", (double)n);
    vc__hf_num(r, o, "head_dim", (double)D);
    vc__hf_num(r, o, "max_side", (double)(t->img / t->P));
    vc__hf_str(r, o, "held_until", last);
    o = play(r, arr, "PixtralMask", "vision_tower.attention_mask");
    vc__hf_ins(r, o, "vision_tower.ln_pre", NULL, NULL, NULL);
    vc__hf_str(r, o, "held_until", last);
    snprintf(prev, sizeof prev, "vision_tower.ln_pre");
    for (int64_t l = 0; l < t->depth && !r->oom; l++) {
        snprintf(p, sizeof p, "vision_tower.transformer.layers.%lld", (long long)l);
        snprintf(nm, sizeof nm, "%s.attention_norm", p);
        snprintf(nm2, sizeof nm2, "%s.attention.o_proj", p);
        o = prms(r, arr, nm, prev, C, 1e-5);
        vc__hf_str(r, o, "held_until", nm2); /* PixtralAttention.forward's argument, to its return */
        char q[160], k[160], v[160], core[160];
        snprintf(q, sizeof q, "%s.attention.q_proj", p);
        snprintf(k, sizeof k, "%s.attention.k_proj", p);
        snprintf(v, sizeof v, "%s.attention.v_proj", p);
        snprintf(core, sizeof core, "%s.attention.core", p);
        plinear(r, arr, q, nm, C, C, false); /* PixtralAttention.forward's order */
        plinear(r, arr, k, nm, C, C, false);
        plinear(r, arr, v, nm, C, C, false);
        o = play(r, arr, "PixtralAttention", core);
        const char *in[5] = {q, k, v, "vision_tower.patch_positional_embedding", "vision_tower.attention_mask"};
        pinputs(r, o, in, 5);
        vc__hf_num(r, o, "num_heads", (double)NH);
        vc__hf_num(r, o, "head_dim", (double)D);
        plinear(r, arr, nm2, core, C, C, false);
        snprintf(nm, sizeof nm, "%s.attn_residual", p);
        vc__hf_ins(r, play(r, arr, "Add", nm), prev, nm2, NULL, NULL);
        snprintf(nm3, sizeof nm3, "%s.ffn_norm", p);
        prms(r, arr, nm3, nm, C, 1e-5);
        char g[160], ac[160], u[160], mu[160], dn[160];
        snprintf(g, sizeof g, "%s.feed_forward.gate_proj", p);
        snprintf(ac, sizeof ac, "%s.feed_forward.act_fn", p);
        snprintf(u, sizeof u, "%s.feed_forward.up_proj", p);
        snprintf(mu, sizeof mu, "%s.feed_forward.mul", p);
        snprintf(dn, sizeof dn, "%s.feed_forward.down_proj", p);
        plinear(r, arr, g, nm3, C, I, false);
        pact_layer(r, arr, t->act, ac);
        plinear(r, arr, u, nm3, C, I, false);
        vc__hf_ins(r, play(r, arr, "Mul", mu), ac, u, NULL, NULL);
        plinear(r, arr, dn, mu, I, C, false);
        snprintf(nm2, sizeof nm2, "%s.mlp_residual", p);
        o = play(r, arr, "Add", nm2);
        vc__hf_ins(r, o, nm, dn, NULL, NULL);
        vc__hf_str(r, o, "held_until", hold); /* hidden_states[l + 1] */
        snprintf(prev, sizeof prev, "%s", nm2);
    }
    prms(r, arr, "multi_modal_projector.norm", prev, C, a->eps);
    o = play(r, arr, "PixtralMerge", "multi_modal_projector.patch_merger.unfold");
    vc__hf_num(r, o, "merge", (double)t->M);
    plinear(r, arr, "multi_modal_projector.patch_merger.merging_layer", NULL, C * M2, C, false);
    plinear(r, arr, "multi_modal_projector.linear_1", NULL, C, H, t->px.bias);
    pact_layer(r, arr, t->px.act, "multi_modal_projector.act");
    plinear(r, arr, "multi_modal_projector.linear_2", NULL, H, H, t->px.bias);
    o = play(r, arr, "PixtralOutputs", "model.image_features");
    vc__hf_ins(r, o, "multi_modal_projector.linear_2", "input", NULL, NULL);
    return "model.image_features";
}

const char *vc__hf_pixtral_write(rd *r, cJSON *arr, const arch *a)
{
    if (a->vis.patches > 0) return write_run(r, arr, a);
    const hf_vision *t = &a->vis;
    const int64_t k = t->tp > 1 ? t->tp : 1; /* vLLM's ranks (vc__hf_pixtral_read) */
    const int64_t C = t->C, I = t->I, H = t->out;
    char nm[128];
    pweights(r, arr, "vision_tower.patch_conv", C, t->cin * t->P * t->P, false, false);
    pweights(r, arr, "vision_tower.ln_pre", C, 0, false, false);
    /* PixtralRotaryEmbedding's buffers (the header): loaded with the module, whether or not it runs */
    cJSON *ro = vc__hf_layer(r, arr, "PixtralRotary", "vision_tower.patch_positional_embedding");
    vc__hf_flag(r, ro, "frozen", true);
    vc__hf_num(r, ro, "head_dim", (double)(C / t->NH));
    vc__hf_num(r, ro, "max_side", (double)(t->img / t->P));
    /* rows / cols: 0 none, 1 hidden_size, 2 intermediate_size, 3 hidden_size / ranks, 4 intermediate_size / ranks:
     * under vLLM's split (vllm-project/vllm vllm/model_executor/models/pixtral.py: PixtralHFAttention's
     * QKVParallelLinear and RowParallelLinear o_proj, PixtralHFMLP's MergedColumnParallelLinear gate_up_proj and
     * RowParallelLinear down_proj, the norms whole; is_vit_use_data_parallel off by default) a rank's shards */
    static const struct { const char *n; int rows, cols; } ms[] = {
        {"attention_norm", 1, 0},         {"attention.q_proj", 3, 1},     {"attention.k_proj", 3, 1},
        {"attention.v_proj", 3, 1},       {"attention.o_proj", 1, 3},     {"ffn_norm", 1, 0},
        {"feed_forward.gate_proj", 4, 1}, {"feed_forward.up_proj", 4, 1}, {"feed_forward.down_proj", 1, 4},
    };
    const int64_t w[5] = {0, C, I, C / k, I / k};
    for (int64_t b = 0; b < t->depth && !r->oom; b++)
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            snprintf(nm, sizeof nm, "vision_tower.transformer.layers.%lld.%s", (long long)b, ms[i].n);
            pweights(r, arr, nm, w[ms[i].rows], w[ms[i].cols], false, true);
        }
    /* vLLM's Mistral3MultiModalProjector (mistral3.py @ 02677fd9): norm RMSNorm and the patch merger's nn.Linear
     * whole, linear_1 ColumnParallelLinear, linear_2 RowParallelLinear (its bias whole) */
    pweights(r, arr, "multi_modal_projector.norm", C, 0, false, false);
    pweights(r, arr, "multi_modal_projector.patch_merger.merging_layer", C, C * t->M * t->M, false, true);
    pweights(r, arr, "multi_modal_projector.linear_1", H / k, C * t->px.nfl, t->px.bias, true);
    pweights(r, arr, "multi_modal_projector.linear_2", H, H / k, t->px.bias, true);
    return NULL; /* no image: the tower's weights only */
}
