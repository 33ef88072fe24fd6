/*
 * hf_vision.c — the vision tower and projector of a vision-language model's
 * config.json (issue 31 item 4): vision_config read and checked, the images
 * of --image / --images turned into patches and image tokens as the
 * processor does, and the tower written as layers before the language model.
 *
 * Qwen2.5-VL (model_type qwen2_5_vl), read at huggingface/transformers
 * efa7189c5546a94e8c1194b2ccc6669e0f7ad65e, models/qwen2_5_vl/modeling_qwen2_5_vl.py:
 *   Qwen2_5_VisionTransformerPretrainedModel.forward: patch_embed (Qwen2_5_VisionPatchEmbed:
 *     view(-1, C, T, P, P), a Conv3d with kernel = stride = (T, P, P), no bias, then
 *     view(-1, hidden): one Linear over each patch's C*T*P*P values), rot_pos_emb (2-D rope:
 *     Qwen2_5_VisionRotaryEmbedding(head_dim / 2) over the h and w positions, cat'ed to head_dim,
 *     cos and sin float32 shared by every block), the blocks (Qwen2_5_VLVisionBlock:
 *     x + attn(norm1(x)), x + mlp(norm2(x)); Qwen2RMSNorm eps 1e-6; attn: qkv Linear(dim, 3 dim,
 *     bias), rotary in float32 (apply_rotary_pos_emb_vision), attention within cu_seqlens (the
 *     windows of window_size pixels, or the whole image on fullatt_block_indexes), proj Linear;
 *     mlp: Qwen2_5_VLMLP(bias=True), down(act(gate(x)) * up(x))), then the merger
 *     (Qwen2_5_VLPatchMerger: ln_q RMSNorm, view(-1, dim * merge^2), Linear, GELU, Linear to
 *     out_hidden_size, the language model's width).
 *   Qwen2_5_VLForConditionalGeneration.forward: inputs_embeds = embed_tokens(input_ids),
 *     pixel_values = pixel_values.type(visual.dtype), image_embeds = visual(pixel_values, grid_thw),
 *     inputs_embeds.masked_scatter(mask, image_embeds): the image tokens are positions of the
 *     language model's sequence.
 * models/qwen2_vl/image_processing_qwen2_vl.py @ cb0fc56f3caccab77d00d44051a67d4b0980cbd2:
 *   smart_resize(height, width, factor = patch_size * merge_size, min_pixels, max_pixels);
 *   grid_t = 1 for an image (the frame repeated temporal_patch_size times), grid_h = h / patch,
 *   grid_w = w / patch; pixel_values [grid_t * grid_h * grid_w, C * T * P * P] float32;
 *   processing_qwen2_5_vl.py: each image is grid_t * grid_h * grid_w / merge_size^2 tokens.
 *
 * What is modelled and what is not (docs/llm.md "Vision-language models"):
 *  - the tower is frozen, as LLaMA-Factory's defaults train a VLM (hparams/finetuning_args.py
 *    FinetuningArguments: freeze_vision_tower and freeze_multi_modal_projector default True, the
 *    language model trained): its weights are resident, it runs forward with no
 *    autograd graph (nothing it computes needs a gradient), the language model trains;
 *  - every block attends over the sample's whole patch sequence with the [1, n, n] bool mask the
 *    sdpa class builds (and sdpa's float copy of it): the scores of the window blocks are those of
 *    the whole sequence, as the class computes them; transformers runs the whole batch's patches
 *    as one sequence ([1, B n, B n]), one sample's here (exact at batch 1);
 *  - the window reordering copies (hidden_states[window_index], argsort back) are not modelled;
 *    the Conv3d over the 5-D view is written as one Linear over the patches (the same weights
 *    and output);
 *  - --mode generate and --serve: the images are refused for now; a config without --image
 *    loads the tower's weights (VisionWeights layers that cost nothing to run).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

/* Qwen2VLImageProcessor's size as the Qwen2.5-VL checkpoints' preprocessor_config.json sets it
 * (min_pixels 3136, max_pixels 12845056, what AutoProcessor.from_pretrained loads; the class's own
 * default max_pixels is 28 * 28 * 1280) */
#define QWEN_MIN_PIXELS INT64_C(3136)
#define QWEN_MAX_PIXELS INT64_C(12845056)

static int vbad(rd *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int vbad(rd *r, const char *key, const char *fmt, ...)
{
    char path[160];
    snprintf(path, sizeof path, "vision_config%s%s", key ? "." : "", key ? key : "");
    va_list ap;
    va_start(ap, fmt);
    vc_set_errorv(r->err, VC_ERR_MODEL, path, fmt, ap);
    va_end(ap);
    return -1;
}

/* An integer key of vision_config in [min, 2^40], def when absent or null. */
static int vint(rd *r, const cJSON *v, const char *key, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *x = v ? cJSON_GetObjectItemCaseSensitive(v, key) : NULL;
    if (!x || cJSON_IsNull(x)) {
        *out = def;
        return 0;
    }
    double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    if (!isfinite(d) || d != floor(d)) return vbad(r, key, "expected an integer");
    if (d < (double)min) return vbad(r, key, "expected an integer of at least %lld, got %.17g", (long long)min, d);
    if (d > (double)MAX_SIZE) return vbad(r, key, "%.17g is larger than the limit of 2^40", d);
    *out = (int64_t)d;
    return 0;
}

static int read_qwen2_5(rd *r, arch *a, const cJSON *v)
{
    hf_vision *t = &a->vis;
    /* Qwen2_5_VLVisionConfig's defaults (configuration_qwen2_5_vl.py) */
    if (vint(r, v, "depth", 32, 1, &t->depth) || vint(r, v, "hidden_size", 3584, 1, &t->C) ||
        vint(r, v, "intermediate_size", 3420, 1, &t->I) || vint(r, v, "num_heads", 16, 1, &t->NH) ||
        vint(r, v, "in_channels", 3, 1, &t->cin) || vint(r, v, "patch_size", 14, 1, &t->P) ||
        vint(r, v, "spatial_merge_size", 2, 1, &t->M) || vint(r, v, "temporal_patch_size", 2, 1, &t->T) ||
        vint(r, v, "out_hidden_size", 3584, 1, &t->out) || vint(r, v, "window_size", 112, 1, &t->window))
        return -1;
    int64_t tps;
    if (vint(r, v, "tokens_per_second", 4, 0, &tps)) return -1; /* videos' temporal positions: read to be checked */
    if (t->depth > 1024) return vbad(r, "depth", "%lld blocks: more than the limit of 1024", (long long)t->depth);
    if (t->C % t->NH)
        return vbad(r, "num_heads", "hidden_size (%lld) must be divisible by num_heads (%lld)", (long long)t->C, (long long)t->NH);
    /* rot_pos_emb: Qwen2_5_VisionRotaryEmbedding(head_dim // 2) gives head_dim / 4 frequencies per axis,
     * h and w cat'ed and doubled back to head_dim: head_dim must be a multiple of 4 */
    if ((t->C / t->NH) % 4)
        return vbad(r, "num_heads", "head_dim %lld (hidden_size / num_heads) must be a multiple of 4 (2-D rotary: a "
                    "quarter per axis, twice)", (long long)(t->C / t->NH));
    /* get_window_index: vit_merger_window_size = window_size // spatial_merge_size // patch_size divides */
    if (t->window / t->M / t->P < 1)
        return vbad(r, "window_size", "%lld pixels: less than one merged patch (spatial_merge_size %lld x patch_size "
                    "%lld); get_window_index would divide by zero", (long long)t->window, (long long)t->M, (long long)t->P);
    /* the merged embeddings are scattered into inputs_embeds: the language model's width */
    if (t->out != a->H)
        return vbad(r, "out_hidden_size", "%lld: the merger's output must be the language model's hidden_size (%lld), "
                    "which its image tokens replace", (long long)t->out, (long long)a->H);
    const cJSON *fb = v ? cJSON_GetObjectItemCaseSensitive(v, "fullatt_block_indexes") : NULL;
    if (fb && !cJSON_IsNull(fb)) {
        if (!cJSON_IsArray(fb)) return vbad(r, "fullatt_block_indexes", "expected a list of block indices");
        for (const cJSON *e = fb->child; e; e = e->next)
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
                e->valuedouble >= (double)t->depth)
                return vbad(r, "fullatt_block_indexes", "expected block indices from 0 to depth - 1 (%lld)", (long long)t->depth - 1);
    }
    const cJSON *act = v ? cJSON_GetObjectItemCaseSensitive(v, "hidden_act") : NULL;
    const char *an = "silu";
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act)) return vbad(r, "hidden_act", "expected a string");
        an = act->valuestring;
    }
    static const char *const names[] = {"silu", "swish", "gelu", "gelu_pytorch_tanh", "relu"};
    static const int acts[] = {A_SILU, A_SILU, A_GELU, A_GELU_TANH, A_RELU};
    t->act = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(an, names[i])) t->act = acts[i];
    if (t->act < 0) {
        char e[64];
        vc_escape(e, sizeof e, an);
        return vbad(r, "hidden_act", "activation \"%s\" is not modelled (silu, swish, gelu, gelu_pytorch_tanh or relu)", e);
    }
    /* the largest weights: qkv (3 C x C), the MLP (I x C), the merger (C m^2 squared); the patches' width */
    const int64_t lim = INT64_C(1) << 48;
    int64_t x, m2, pd;
    if (__builtin_mul_overflow(t->C, t->C, &x) || __builtin_mul_overflow(x, 3, &x) || x > lim ||
        __builtin_mul_overflow(t->I, t->C, &x) || x > lim)
        return vbad(r, "hidden_size", "the blocks' weights (%lld wide, intermediate_size %lld) are more than 2^48 "
                    "elements", (long long)t->C, (long long)t->I);
    if (__builtin_mul_overflow(t->M, t->M, &m2) || __builtin_mul_overflow(t->C, m2, &x) || x > MAX_SIZE ||
        __builtin_mul_overflow(x, x > t->out ? x : t->out, &x) || x > lim)
        return vbad(r, "spatial_merge_size", "the merger's weights (hidden_size %lld x %lld merged patches) are more "
                    "than 2^48 elements", (long long)t->C, (long long)m2);
    if (__builtin_mul_overflow(t->cin, t->T, &pd) || __builtin_mul_overflow(pd, t->P, &pd) ||
        __builtin_mul_overflow(pd, t->P, &pd) || pd > MAX_SIZE || __builtin_mul_overflow(pd, t->C, &x) || x > lim)
        return vbad(r, "patch_size", "a patch (%lld channels x %lld frames x %lld x %lld) is too large",
                    (long long)t->cin, (long long)t->T, (long long)t->P, (long long)t->P);
    return 0;
}

/* smart_resize (image_processing_qwen2_vl.py @ cb0fc56f): Python's round() is
 * round-half-to-even, which nearbyint() is in the default rounding mode. */
static int smart_resize(rd *r, int64_t height, int64_t width, int64_t factor, int64_t *oh, int64_t *ow)
{
    (void)r;
    double h = (double)height, w = (double)width, f = (double)factor;
    int64_t hb = (int64_t)nearbyint(h / f) * factor, wb = (int64_t)nearbyint(w / f) * factor;
    if ((double)hb * (double)wb > (double)QWEN_MAX_PIXELS) {
        double beta = sqrt(h * w / (double)QWEN_MAX_PIXELS);
        hb = (int64_t)floor(h / beta / f) * factor;
        wb = (int64_t)floor(w / beta / f) * factor;
    } else if ((double)hb * (double)wb < (double)QWEN_MIN_PIXELS) {
        double beta = sqrt((double)QWEN_MIN_PIXELS / (h * w));
        hb = (int64_t)ceil(h * beta / f) * factor;
        wb = (int64_t)ceil(w * beta / f) * factor;
    }
    *oh = hb;
    *ow = wb;
    return 0;
}

int vc__hf_vision_read(rd *r, arch *a, const vc_hf_options *o)
{
    const bool want = o && (o->image_w > 0 || o->images > 0);
    if (!a->f->vision) {
        if (want)
            return vc_set_error(r->err, VC_ERR_USAGE, o->image_w > 0 ? O("image") : O("images"),
                                "model_type %s is a text-only model (no vision tower)", r->fam);
        return 0;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, "vision_config");
    if (cJSON_IsNull(v)) v = NULL; /* Qwen2_5_VLConfig: vision_config None is the class's defaults */
    if (v && !cJSON_IsObject(v)) {
        vc_set_error(r->err, VC_ERR_MODEL, "vision_config", "expected an object (the vision tower's keys)");
        return -1;
    }
    if (read_qwen2_5(r, a, v)) return -1;
    if (o && o->tp > 1) {
        vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "the vision tower of %s on tensor-parallel ranks is not modelled", r->fam);
        return -1;
    }
    if (!want) return 0;
    hf_vision *t = &a->vis;
    if (o->image_w <= 0) {
        vc_set_error(r->err, VC_ERR_USAGE, O("images"), "needs " O("image") " WxH (the images' size)");
        return -1;
    }
    const int64_t factor = t->P * t->M, W = o->image_w, H = o->image_h;
    /* smart_resize's checks: each side at least the factor, the aspect ratio at most 200 */
    if (H < factor || W < factor) {
        vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%lldx%lld: height and width must be at least %lld "
                     "(patch_size x spatial_merge_size; Qwen2VLImageProcessor's smart_resize)", (long long)W, (long long)H,
                     (long long)factor);
        return -1;
    }
    if ((double)(W > H ? W : H) / (double)(W > H ? H : W) > 200) {
        vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%lldx%lld: the aspect ratio must be at most 200 (smart_resize)",
                     (long long)W, (long long)H);
        return -1;
    }
    smart_resize(r, H, W, factor, &t->h, &t->w);
    t->images = o->images > 0 ? o->images : 1;
    int64_t per = (t->h / t->P) * (t->w / t->P); /* grid_t (1) x grid_h x grid_w */
    if (__builtin_mul_overflow(per, t->images, &t->patches) || t->patches > (INT64_C(1) << 32)) {
        vc_set_error(r->err, VC_ERR_USAGE, O("images"), "%lld images of %lld patches: more than 2^32 patches per sample",
                     (long long)t->images, (long long)per);
        return -1;
    }
    /* each block's attention: heads x patches x patches scores and mask per sample (layers/llm.c's
     * bound, checked here so that the error names the option) */
    int64_t sc;
    if (__builtin_mul_overflow(t->patches, t->patches, &sc) || __builtin_mul_overflow(sc, t->NH, &sc) ||
        sc > (INT64_C(1) << 56)) {
        vc_set_error(r->err, VC_ERR_USAGE, o->images > 1 ? O("images") : O("image"), "%lld patches per sample (%lld "
                     "image(s) resized to %lldx%lld): the tower's attention (%lld heads x %lld x %lld) would have more "
                     "than 2^56 elements", (long long)t->patches, (long long)t->images, (long long)t->w,
                     (long long)t->h, (long long)t->NH, (long long)t->patches, (long long)t->patches);
        return -1;
    }
    t->tokens = t->patches / (t->M * t->M);
    return 0;
}

/* ------------------------------------------------------------ writing the tower */

typedef struct {
    rd *r;
    cJSON *arr;
} vw;

static cJSON *lay(vw *w, const char *type, const char *name)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(w->arr, o)) {
        cJSON_Delete(o);
        w->r->oom = true;
        return NULL;
    }
    if (!cJSON_AddStringToObject(o, "type", type) || (name && !cJSON_AddStringToObject(o, "name", name)) ||
        !cJSON_AddBoolToObject(o, "frozen", true)) /* the tower is frozen (the file's comment) */
        w->r->oom = true;
    return o;
}
static void vnum(vw *w, cJSON *o, const char *k, double v)
{
    if (o && !cJSON_AddNumberToObject(o, k, v)) w->r->oom = true;
}
static void vflag(vw *w, cJSON *o, const char *k, bool v)
{
    if (o && !cJSON_AddBoolToObject(o, k, v)) w->r->oom = true;
}
static void vstr(vw *w, cJSON *o, const char *k, const char *v)
{
    if (o && !cJSON_AddStringToObject(o, k, v)) w->r->oom = true;
}
static void vins(vw *w, cJSON *o, const char *a, const char *b)
{
    if (!o) return;
    const char *v[2] = {a, b};
    cJSON *arr = cJSON_CreateStringArray(v, b ? 2 : 1);
    if (!arr || !cJSON_AddItemToObject(o, "inputs", arr)) {
        cJSON_Delete(arr);
        w->r->oom = true;
    }
}
static void vshape(vw *w, cJSON *o, const char *k, int n, const int64_t *d)
{
    if (!o) return;
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < n; i++) {
        cJSON *x = cJSON_CreateNumber((double)d[i]);
        if (!x || !cJSON_AddItemToArray(arr, x)) {
            cJSON_Delete(x);
            w->r->oom = true;
        }
    }
    if (!arr || !cJSON_AddItemToObject(o, k, arr)) {
        cJSON_Delete(arr);
        w->r->oom = true;
    }
}
static cJSON *vlinear(vw *w, const char *name, const char *in, int64_t nin, int64_t nout, bool bias)
{
    cJSON *o = lay(w, "Linear", name);
    if (in) vins(w, o, in, NULL);
    vnum(w, o, "in_features", (double)nin);
    vnum(w, o, "out_features", (double)nout);
    vflag(w, o, "bias", bias);
    return o;
}
static void vrms(vw *w, const char *name, const char *in, int64_t width)
{
    cJSON *o = lay(w, "HFRMSNorm", name);
    if (in) vins(w, o, in, NULL);
    vnum(w, o, "hidden_size", (double)width);
    vnum(w, o, "eps", 1e-6); /* Qwen2RMSNorm(config.hidden_size, eps=1e-6) */
}
static void vact(vw *w, int act, const char *name)
{
    if (act == A_SILU) {
        lay(w, "SiLU", name);
    } else if (act == A_RELU) {
        lay(w, "ReLU", name);
    } else {
        cJSON *o = lay(w, "GELU", name);
        vstr(w, o, "approximate", act == A_GELU_TANH ? "tanh" : "none");
    }
}
/* A frozen module the text-only run loads and never runs (VisionWeights, layers/vision.c: its
 * weight [out, in] or [n], its bias; an expand view, no memory). */
static void vweights(vw *w, const char *name, int64_t d0, int64_t d1, bool bias, bool linear)
{
    cJSON *o = lay(w, "VisionWeights", name);
    int64_t d[2] = {d0, d1};
    vshape(w, o, "shape", d1 ? 2 : 1, d);
    if (bias) vflag(w, o, "bias", true);
    if (d1 && !linear) vflag(w, o, "linear", false);
}

/* The tower's weights only (no image): named_parameters() of
 * Qwen2_5_VisionTransformerPretrainedModel, module by module. */
static void write_weights(vw *w, const hf_vision *t)
{
    char nm[120];
    const int64_t C = t->C, I = t->I, H4 = t->C * t->M * t->M;
    /* the Conv3d weight [C, cin, T, P, P] (not an nn.Linear: bitsandbytes leaves it) */
    vweights(w, "visual.patch_embed.proj", C, t->cin * t->T * t->P * t->P, false, false);
    for (int64_t b = 0; b < t->depth && !w->r->oom; b++) {
        static const struct { const char *n; int which; } ms[] = {
            {"norm1", 0}, {"attn.qkv", 1}, {"attn.proj", 2}, {"norm2", 0},
            {"mlp.gate_proj", 3}, {"mlp.up_proj", 3}, {"mlp.down_proj", 4},
        };
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            snprintf(nm, sizeof nm, "visual.blocks.%lld.%s", (long long)b, ms[i].n);
            switch (ms[i].which) {
            case 0: vweights(w, nm, C, 0, false, false); break;
            case 1: vweights(w, nm, 3 * C, C, true, true); break;
            case 2: vweights(w, nm, C, C, true, true); break;
            case 3: vweights(w, nm, I, C, true, true); break;
            default: vweights(w, nm, C, I, true, true); break;
            }
        }
    }
    vweights(w, "visual.merger.ln_q", C, 0, false, false);
    vweights(w, "visual.merger.mlp.0", H4, H4, true, true);
    vweights(w, "visual.merger.mlp.2", t->out, H4, true, true);
}

const char *vc__hf_vision_write(rd *r, cJSON *arr, const arch *a)
{
    const hf_vision *t = &a->vis;
    vw w = {r, arr};
    if (!a->f->vision) return NULL;
    if (t->patches == 0) {
        write_weights(&w, t);
        return NULL;
    }
    const int64_t C = t->C, NH = t->NH, D = t->C / t->NH, n = t->patches, pd = t->cin * t->T * t->P * t->P;
    const int64_t H4 = C * t->M * t->M;
    cJSON *o = lay(&w, "PixelValues", "pixel_values"); /* the processor's pixel_values, .type(visual.dtype) */
    vnum(&w, o, "num_patches", (double)n);
    vnum(&w, o, "patch_dim", (double)pd);
    vlinear(&w, "visual.patch_embed.proj", "pixel_values", pd, C, false);
    o = lay(&w, "PixelValues", "visual.pos_ids"); /* rot_pos_emb's positions (int64) */
    vnum(&w, o, "num_patches", (double)n);
    vflag(&w, o, "positions", true);
    o = lay(&w, "RotaryEmbedding", "visual.rotary_pos_emb");
    vins(&w, o, "visual.pos_ids", NULL);
    vnum(&w, o, "head_dim", (double)D);
    vnum(&w, o, "rotary_dim", (double)D);
    /* the blocks, one Sequential repeated depth times */
    cJSON *seq = lay(&w, "Sequential", "visual.blocks");
    vins(&w, seq, "visual.patch_embed.proj", NULL);
    if (t->depth > 1) vnum(&w, seq, "repeat", (double)t->depth);
    cJSON *inner = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!inner) {
        r->oom = true;
        return NULL;
    }
    vw b = {r, inner};
    vrms(&b, "norm1", NULL, C);
    vlinear(&b, "attn.qkv", NULL, C, 3 * C, true);
    o = lay(&b, "RotaryAttention", "attn.attention");
    vins(&b, o, "attn.qkv", "visual.rotary_pos_emb");
    vnum(&b, o, "num_heads", (double)NH);
    vnum(&b, o, "num_kv_heads", (double)NH);
    vnum(&b, o, "head_dim", (double)D);
    vnum(&b, o, "rotary_dim", (double)D);
    vflag(&b, o, "fused_qkv", true);
    vflag(&b, o, "causal", false);
    vflag(&b, o, "block_mask", true); /* the sdpa class's [1, n, n] bool mask (RotaryAttention, layers/llm.c) */
    vlinear(&b, "attn.proj", NULL, C, C, true);
    vins(&b, lay(&b, "Add", "attn_residual"), "input", "attn.proj");
    vrms(&b, "norm2", NULL, C);
    vlinear(&b, "mlp.gate_proj", NULL, C, t->I, true);
    vact(&b, t->act, "mlp.act_fn");
    vlinear(&b, "mlp.up_proj", "norm2", C, t->I, true);
    vins(&b, lay(&b, "Mul", "mlp.mul"), "mlp.act_fn", "mlp.up_proj");
    vlinear(&b, "mlp.down_proj", NULL, t->I, C, true);
    vins(&b, lay(&b, "Add", "mlp_residual"), "attn_residual", "mlp.down_proj");
    /* the merger: ln_q, view(-1, C * merge^2), mlp */
    vrms(&w, "visual.merger.ln_q", NULL, C);
    o = lay(&w, "Reshape", "visual.merger.view");
    int64_t d[2] = {n / (t->M * t->M), H4};
    vshape(&w, o, "shape", 2, d);
    vlinear(&w, "visual.merger.mlp.0", NULL, H4, H4, true);
    o = lay(&w, "GELU", "visual.merger.mlp.1");
    vstr(&w, o, "approximate", "none");
    vlinear(&w, "visual.merger.mlp.2", NULL, H4, t->out, true);
    return "visual.merger.mlp.2";
}
