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
 * Qwen3.5 / Qwen3.6 (qwen3_5, qwen3_5_moe) and Qwen3-VL (qwen3_vl): write_qwen3_tower below
 * (modular_qwen3_5.py @ 8940358a, modeling_qwen3_vl.py @ 00709b86 / 68a7b7e2), smart_resize with the
 * checkpoints' 65536 / 16777216 pixels; Qwen3-VL's deepstack features added after the first decoder
 * layers by src/hf/hf_layers.c deepstack_add.
 *
 * Gemma 3 (model_type gemma3): SiglipVisionModel and Gemma3MultiModalProjector, read_siglip,
 * siglip_images, write_siglip_weights and write_siglip below (modeling_siglip.py @ efa7189c,
 * modeling_gemma3.py and processing_gemma3.py @ 0018aa64 / 0068e970).
 * SmolVLM / Idefics3 (smolvlm, idefics3) with images: write_siglip below on the processor's frames, read by
 * src/hf/hf_idefics3.c (modeling_smolvlm.py @ b282e23b, image_processing_smolvlm.py @ 72486fb4).
 *
 * What is modelled and what is not (docs/llm.md "Vision-language models"):
 *  - the tower is frozen, as LLaMA-Factory's defaults train a VLM (hparams/finetuning_args.py
 *    FinetuningArguments: freeze_vision_tower and freeze_multi_modal_projector default True, the
 *    language model trained): its weights are resident, it runs forward with no
 *    autograd graph (nothing it computes needs a gradient), the language model trains;
 *  - Qwen2.5-VL: every block attends over the sample's whole patch sequence with the [1, n, n] bool
 *    mask the sdpa class builds (and sdpa's float copy of it): the scores of the window blocks are
 *    those of the whole sequence, as the class computes them; transformers runs the whole batch's
 *    patches as one sequence ([1, B n, B n]), one sample's here (exact at batch 1); Qwen3-VL and
 *    Qwen3.5 run sdpa on one image after another (exact at batch 1 too);
 *  - the window reordering copies (hidden_states[window_index], argsort back) are not modelled;
 *    the Conv3d over the 5-D view is written as one Linear over the patches (the same weights
 *    and output);
 *  - --mode generate: the Qwen2.5-VL, Qwen3-VL, Qwen3.5 and Gemma 3 towers run on the images in the prefill
 *    only (src/engine/generate.c "Images"; the decoding steps' model: decode, written by
 *    vc_hf_split.image_decode); --serve with images is refused;
 *    a config without --image
 *    loads the tower's weights (VisionWeights layers that cost nothing to run), under --serve --tp a
 *    rank's shards of the Qwen towers' and Gemma 3's and PaliGemma's SigLIP as vLLM splits them (vision_tp).
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
/* The Qwen3-VL and Qwen3.5 / 3.6 checkpoints' preprocessor_config.json (Qwen2VLImageProcessorFast,
 * Qwen3VLProcessor): size {"shortest_edge": 65536, "longest_edge": 16777216} (smart_resize's
 * min_pixels and max_pixels), patch_size 16, merge_size 2 (vision_config's patch_size and
 * spatial_merge_size), temporal_patch_size 2 */
#define QWEN3_MIN_PIXELS INT64_C(65536)
#define QWEN3_MAX_PIXELS INT64_C(16777216)

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

static int tower_act_sizes(rd *r, hf_vision *t, const cJSON *v, const char *def);

/* The key naming the tower's width (Qwen2VLVisionConfig: embed_dim, its hidden_size the merger's output) and
 * the one naming the merger's output width */
static const char *width_key(const arch *a) { return a->f->vision == VIS_QWEN2 ? "embed_dim" : "hidden_size"; }
static const char *out_key(const arch *a) { return a->f->vision == VIS_QWEN2 ? "hidden_size" : "out_hidden_size"; }

/* The Qwen towers' blocks: at most 1024, and heads dividing the width */
static int tower_blocks_ok(rd *r, const arch *a)
{
    const hf_vision *t = &a->vis;
    if (t->depth > 1024) return vbad(r, "depth", "%lld blocks: more than the limit of 1024", (long long)t->depth);
    if (t->C % t->NH)
        return vbad(r, "num_heads", "%s (%lld) must be divisible by num_heads (%lld)", width_key(a), (long long)t->C,
                    (long long)t->NH);
    return 0;
}

/* The merger's output width: the merged embeddings are scattered into inputs_embeds, so it is the
 * language model's */
static int tower_out_ok(rd *r, const arch *a)
{
    const hf_vision *t = &a->vis;
    if (t->out != a->H)
        return vbad(r, out_key(a), "%lld: the merger's output must be the language model's hidden_size (%lld), "
                    "which its image tokens replace", (long long)t->out, (long long)a->H);
    return 0;
}

/* rot_pos_emb: VisionRotaryEmbedding(head_dim // 2) gives head_dim / 4 frequencies per axis, h and w cat'ed and
 * doubled back to head_dim: head_dim must be a multiple of 4 */
static int tower_head_ok(rd *r, const arch *a)
{
    const hf_vision *t = &a->vis;
    if ((t->C / t->NH) % 4)
        return vbad(r, "num_heads", "head_dim %lld (%s / num_heads) must be a multiple of 4 (2-D rotary: a quarter per "
                    "axis, twice)", (long long)(t->C / t->NH), width_key(a));
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
    if (tower_blocks_ok(r, a) || tower_head_ok(r, a)) return -1;
    /* get_window_index: vit_merger_window_size = window_size // spatial_merge_size // patch_size divides */
    if (t->window / t->M / t->P < 1)
        return vbad(r, "window_size", "%lld pixels: less than one merged patch (spatial_merge_size %lld x patch_size "
                    "%lld); get_window_index would divide by zero", (long long)t->window, (long long)t->M, (long long)t->P);
    if (tower_out_ok(r, a)) return -1;
    const cJSON *fb = v ? cJSON_GetObjectItemCaseSensitive(v, "fullatt_block_indexes") : NULL;
    if (fb && !cJSON_IsNull(fb)) {
        if (!cJSON_IsArray(fb)) return vbad(r, "fullatt_block_indexes", "expected a list of block indices");
        for (const cJSON *e = fb->child; e; e = e->next)
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
                e->valuedouble >= (double)t->depth)
                return vbad(r, "fullatt_block_indexes", "expected block indices from 0 to depth - 1 (%lld)", (long long)t->depth - 1);
    }
    return tower_act_sizes(r, t, v, "silu");
}

/* Qwen2-VL (model_type qwen2_vl): Qwen2VLVisionConfig's defaults (configuration_qwen2_vl.py @ 018c8e03: depth 32,
 * embed_dim 1280, hidden_size 3584, hidden_act quick_gelu, mlp_ratio 4, num_heads 16, in_channels 3, patch_size 14,
 * spatial_merge_size 2, temporal_patch_size 2). Qwen2VisionTransformerPretrainedModel (modeling_qwen2_vl.py
 * @ efa7189c): blocks of width embed_dim, Qwen2VLVisionBlock's mlp_hidden_dim = int(embed_dim * mlp_ratio),
 * PatchMerger(dim=hidden_size, context_dim=embed_dim): hidden_size is the merger's output, the language model's
 * width. The checkpoints' config.json also carries in_chans and spatial_patch_size, which the class ignores
 * (in_channels stays 3, patch_size is read). */
static int read_qwen2(rd *r, arch *a, const cJSON *v)
{
    hf_vision *t = &a->vis;
    if (vint(r, v, "depth", 32, 1, &t->depth) || vint(r, v, "embed_dim", 1280, 1, &t->C) ||
        vint(r, v, "hidden_size", 3584, 1, &t->out) || vint(r, v, "num_heads", 16, 1, &t->NH) ||
        vint(r, v, "in_channels", 3, 1, &t->cin) || vint(r, v, "patch_size", 14, 1, &t->P) ||
        vint(r, v, "spatial_merge_size", 2, 1, &t->M) || vint(r, v, "temporal_patch_size", 2, 1, &t->T))
        return -1;
    const cJSON *mr = v ? cJSON_GetObjectItemCaseSensitive(v, "mlp_ratio") : NULL;
    double ratio = 4;
    if (mr && !cJSON_IsNull(mr)) {
        ratio = cJSON_IsNumber(mr) ? mr->valuedouble : NAN;
        if (!isfinite(ratio) || ratio <= 0 || ratio > 1e6) return vbad(r, "mlp_ratio", "expected a positive number");
    }
    const double I = floor((double)t->C * ratio); /* int(embed_dim * mlp_ratio): a float product truncated */
    if (I < 1) return vbad(r, "mlp_ratio", "%.17g: int(embed_dim %lld x mlp_ratio) is no MLP width", ratio, (long long)t->C);
    if (I > (double)MAX_SIZE) return vbad(r, "mlp_ratio", "%.17g: the MLP (embed_dim %lld x mlp_ratio) is wider than 2^40", ratio, (long long)t->C);
    t->I = (int64_t)I;
    if (tower_blocks_ok(r, a) || tower_head_ok(r, a) || tower_out_ok(r, a)) return -1;
    return tower_act_sizes(r, t, v, "quick_gelu");
}

/* hidden_act (def when absent) and the products that become the tower's tensor sizes, checked so
 * that the error names the key (Qwen2.5-VL's and Qwen3-VL's towers alike) */
static int tower_act_sizes(rd *r, hf_vision *t, const cJSON *v, const char *def)
{
    const cJSON *act = v ? cJSON_GetObjectItemCaseSensitive(v, "hidden_act") : NULL;
    const char *an = def;
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act)) return vbad(r, "hidden_act", "expected a string");
        an = act->valuestring;
    }
    /* quick_gelu (ACT2FN's QuickGELUActivation) only where it is the class's default (Qwen2VLVisionConfig) */
    static const char *const names[] = {"silu", "swish", "gelu", "gelu_pytorch_tanh", "relu", "quick_gelu"};
    static const int acts[] = {A_SILU, A_SILU, A_GELU, A_GELU_TANH, A_RELU, A_GELU_QUICK};
    const bool quick = !strcmp(def, "quick_gelu");
    t->act = -1;
    for (int i = 0; i < (quick ? 6 : 5); i++)
        if (!strcmp(an, names[i])) t->act = acts[i];
    if (t->act < 0) {
        char e[64];
        vc_escape(e, sizeof e, an);
        return vbad(r, "hidden_act", "activation \"%s\" is not modelled (silu, swish, gelu, gelu_pytorch_tanh%s relu%s)", e,
                    quick ? "," : " or", quick ? " or quick_gelu" : "");
    }
    /* the largest weights: qkv (3 C x C), the MLP (I x C), the merger (C m^2 squared); the patches' width */
    const int64_t lim = INT64_C(1) << 48;
    int64_t x, m2, pd;
    if (__builtin_mul_overflow(t->C, t->C, &x) || __builtin_mul_overflow(x, 3, &x) || x > lim ||
        __builtin_mul_overflow(t->I, t->C, &x) || x > lim)
        return vbad(r, quick ? "embed_dim" : "hidden_size", "the blocks' weights (%lld wide, %s %lld) are more than "
                    "2^48 elements", (long long)t->C, quick ? "MLP width" : "intermediate_size", (long long)t->I);
    if (__builtin_mul_overflow(t->M, t->M, &m2) || __builtin_mul_overflow(t->C, m2, &x) || x > MAX_SIZE ||
        __builtin_mul_overflow(x, x > t->out ? x : t->out, &x) || x > lim)
        return vbad(r, "spatial_merge_size", "the merger's weights (%s %lld x %lld merged patches) are more "
                    "than 2^48 elements", quick ? "embed_dim" : "hidden_size", (long long)t->C, (long long)m2);
    if (__builtin_mul_overflow(t->cin, t->T, &pd) || __builtin_mul_overflow(pd, t->P, &pd) ||
        __builtin_mul_overflow(pd, t->P, &pd) || pd > MAX_SIZE || __builtin_mul_overflow(pd, t->C, &x) || x > lim)
        return vbad(r, "patch_size", "a patch (%lld channels x %lld frames x %lld x %lld) is too large",
                    (long long)t->cin, (long long)t->T, (long long)t->P, (long long)t->P);
    return 0;
}

/* The keys Qwen3VLVisionConfig and Qwen3_5VisionConfig share, with the same defaults (below), and
 * their checks: the tower's size, its heads, and the merger's width, which must be the language
 * model's: the merged embeddings replace the image tokens' rows (Qwen3VLModel / Qwen3_5Model.forward:
 * inputs_embeds.masked_scatter(image_mask, image_embeds)), and Qwen3-VL's deepstack adds to them. */
static int read_qwen3_keys(rd *r, arch *a, const cJSON *v)
{
    hf_vision *t = &a->vis;
    if (vint(r, v, "depth", 27, 1, &t->depth) || vint(r, v, "hidden_size", 1152, 1, &t->C) ||
        vint(r, v, "intermediate_size", 4304, 1, &t->I) || vint(r, v, "num_heads", 16, 1, &t->NH) ||
        vint(r, v, "in_channels", 3, 1, &t->cin) || vint(r, v, "patch_size", 16, 1, &t->P) ||
        vint(r, v, "spatial_merge_size", 2, 1, &t->M) || vint(r, v, "temporal_patch_size", 2, 1, &t->T) ||
        vint(r, v, "out_hidden_size", 3584, 1, &t->out) || vint(r, v, "num_position_embeddings", 2304, 1, &t->npos))
        return -1;
    if (tower_blocks_ok(r, a)) return -1;
    if (tower_out_ok(r, a)) return -1;
    return 0;
}

/* Qwen3-VL (model_type qwen3_vl): Qwen3VLVisionConfig's defaults (configuration_qwen3_vl.py @ 000c33fd:
 * depth 27, hidden_size 1152, hidden_act gelu_pytorch_tanh, intermediate_size 4304, num_heads 16,
 * in_channels 3, patch_size 16, spatial_merge_size 2, temporal_patch_size 2, out_hidden_size 3584,
 * num_position_embeddings 2304, deepstack_visual_indexes [8, 16, 24]). Qwen3VLVisionModel
 * (modeling_qwen3_vl.py @ 00709b86): pos_embed nn.Embedding(num_position_embeddings, hidden), read
 * on an int(sqrt(num_position_embeddings)) grid; a deepstack merger per index, run after that block. */
static int read_qwen3(rd *r, arch *a, const cJSON *v)
{
    hf_vision *t = &a->vis;
    if (read_qwen3_keys(r, a, v)) return -1;
    const cJSON *ds = v ? cJSON_GetObjectItemCaseSensitive(v, "deepstack_visual_indexes") : NULL;
    t->ndeep = 3;
    if ((!ds || cJSON_IsNull(ds)) && t->depth <= 24) /* a merger per index, run after that block */
        return vbad(r, "deepstack_visual_indexes", "absent: Qwen3VLVisionConfig's default [8, 16, 24] names blocks past "
                    "depth %lld", (long long)t->depth);
    if (ds && !cJSON_IsNull(ds)) {
        if (!cJSON_IsArray(ds)) return vbad(r, "deepstack_visual_indexes", "expected a list of block indices");
        t->ndeep = cJSON_GetArraySize(ds);
        for (const cJSON *e = ds->child; e; e = e->next)
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
                e->valuedouble >= (double)t->depth)
                return vbad(r, "deepstack_visual_indexes", "expected block indices from 0 to depth - 1 (%lld)",
                            (long long)t->depth - 1);
        /* Qwen3VLTextModel adds deepstack feature k to decoder layer k's output */
        if (t->ndeep > a->N)
            return vbad(r, "deepstack_visual_indexes", "%lld features for %lld decoder layers", (long long)t->ndeep,
                        (long long)a->N);
    }
    /* lm_head's tie: Qwen3VLConfig and its Qwen3VLTextConfig each take a tie_word_embeddings (both false by
     * default); text_config's is read (the decoder's config, get_text_config); a top-level value that
     * disagrees with it is refused rather than one of them guessed */
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(r->cfg, "tie_word_embeddings");
    if (cJSON_IsBool(tie) && cJSON_IsTrue(tie) != a->tie) {
        vc_set_error(r->err, VC_ERR_MODEL, "tie_word_embeddings", "%s, but text_config's is %s: which one ties lm_head "
                     "is not settled here; give both the same value", cJSON_IsTrue(tie) ? "true" : "false",
                     a->tie ? "true" : "false");
        return -1;
    }
    int64_t x;
    if (__builtin_mul_overflow(t->npos, t->C, &x) || x > (INT64_C(1) << 48))
        return vbad(r, "num_position_embeddings", "pos_embed (%lld x %lld) is more than 2^48 elements", (long long)t->npos,
                    (long long)t->C);
    return tower_act_sizes(r, t, v, "gelu_pytorch_tanh");
}

/* PaliGemma's own keys (configuration_paligemma.py @ 04d596e6, modeling_paligemma.py @ efa7189c): text_config's
 * model_type ("gemma" when absent; "gemma2", PaliGemma 2, the text_type row's), projection_dim (2048; written into
 * vision_config.projection_dim, PaliGemmaMultiModalProjector's Linear(vision hidden_size, projection_dim)), which must
 * be the language model's hidden_size: forward's inputs_embeds[special_image_mask].numel() != image_features.numel()
 * raises ValueError otherwise. */
static int paligemma_keys(rd *r, arch *a)
{
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(r->cfg, "text_config");
    const cJSON *mt = tc ? cJSON_GetObjectItemCaseSensitive(tc, "model_type") : NULL;
    /* the row's language model: "gemma" (PaliGemma), or the text_type row's "gemma2" (PaliGemma 2, hf.c) */
    if (mt && !(cJSON_IsString(mt) && !strcmp(mt->valuestring, a->f->text_type ? a->f->text_type : "gemma"))) {
        char e[64];
        vc_escape(e, sizeof e, cJSON_IsString(mt) ? mt->valuestring : "(not a string)");
        vc_set_error(r->err, VC_ERR_MODEL, "text_config.model_type", "\"%s\": paligemma is modelled with a Gemma (\"gemma\") "
                     "or, PaliGemma 2, a Gemma 2 (\"gemma2\") language model; others are not", e);
        return -1;
    }
    const cJSON *pd = cJSON_GetObjectItemCaseSensitive(r->cfg, "projection_dim");
    int64_t p = 2048;
    if (pd && !cJSON_IsNull(pd)) {
        double d = cJSON_IsNumber(pd) ? pd->valuedouble : NAN;
        if (!isfinite(d) || d != floor(d) || d < 1 || d > (double)MAX_SIZE) {
            vc_set_error(r->err, VC_ERR_MODEL, "projection_dim", "expected a positive integer");
            return -1;
        }
        p = (int64_t)d;
    }
    if (p != a->H) {
        vc_set_error(r->err, VC_ERR_MODEL, "projection_dim", "%lld: the projector's image features must be "
                     "text_config.hidden_size (%lld) wide to replace the image tokens' embeddings (PaliGemma's forward "
                     "raises ValueError)", (long long)p, (long long)a->H);
        return -1;
    }
    a->vis.out = p;
    return 0;
}

/* Gemma3 (model_type gemma3): SiglipVisionConfig (configuration_siglip.py: hidden_size 768,
 * intermediate_size 3072, num_hidden_layers 12, num_attention_heads 12, num_channels 3, image_size 224,
 * patch_size 16, hidden_act gelu_pytorch_tanh, layer_norm_eps 1e-6: the class's defaults, what
 * Gemma3Config builds when vision_config is None) and Gemma3Config.mm_tokens_per_image (256).
 * modeling_siglip.py @ efa7189c: SiglipVisionTransformer builds its pooling head
 * (SiglipMultiheadAttentionPoolingHead) unless the config has vision_use_head false (hasattr: a
 * config.json without the key gets the head); Gemma3MultiModalProjector (modeling_gemma3.py @ 0018aa64):
 * patches_per_image = image_size // patch_size, tokens_per_side = int(mm_tokens_per_image ** 0.5),
 * kernel_size = patches_per_image // tokens_per_side, AvgPool2d(kernel_size, stride=kernel_size). */
static int read_siglip(rd *r, arch *a, const cJSON *v)
{
    hf_vision *t = &a->vis;
    /* PaliGemmaConfig (configuration_paligemma.py @ 04d596e6) with vision_config None builds SiglipVisionConfig(
     * intermediate_size=4096, hidden_size=1152, patch_size=14, image_size=224, num_hidden_layers=27,
     * num_attention_heads=16, vision_use_head=False); a dict gets SiglipVisionConfig's own defaults */
    const bool pali = a->f->vision == VIS_PALIGEMMA, pd = pali && !v;
    if (vint(r, v, "num_hidden_layers", pd ? 27 : 12, 1, &t->depth) || vint(r, v, "hidden_size", pd ? 1152 : 768, 1, &t->C) ||
        vint(r, v, "intermediate_size", pd ? 4096 : 3072, 1, &t->I) ||
        vint(r, v, "num_attention_heads", pd ? 16 : 12, 1, &t->NH) || vint(r, v, "num_channels", 3, 1, &t->cin) ||
        vint(r, v, "image_size", 224, 1, &t->img) || vint(r, v, "patch_size", pd ? 14 : 16, 1, &t->P))
        return -1;
    t->M = t->T = 1;
    t->out = a->H; /* mm_input_projection_weight [vision hidden_size, text hidden_size] */
    if (pali && paligemma_keys(r, a)) return -1;
    if (t->depth > 1024) return vbad(r, "num_hidden_layers", "%lld layers: more than the limit of 1024", (long long)t->depth);
    if (t->C % t->NH)
        return vbad(r, "num_attention_heads", "hidden_size (%lld) must be divisible by num_attention_heads (%lld) "
                    "(SiglipAttention)", (long long)t->C, (long long)t->NH);
    if (t->P > t->img)
        return vbad(r, "patch_size", "%lld: larger than image_size (%lld), no patch", (long long)t->P, (long long)t->img);
    const cJSON *eps = v ? cJSON_GetObjectItemCaseSensitive(v, "layer_norm_eps") : NULL;
    if (eps && !cJSON_IsNull(eps) && (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || !(eps->valuedouble < 1)))
        return vbad(r, "layer_norm_eps", "expected a number between 0 and 1");
    const cJSON *head = v ? cJSON_GetObjectItemCaseSensitive(v, "vision_use_head") : NULL;
    if (head && !cJSON_IsBool(head)) return vbad(r, "vision_use_head", "expected true or false");
    t->use_head = pd ? false : !head || cJSON_IsTrue(head);
    const cJSON *act = v ? cJSON_GetObjectItemCaseSensitive(v, "hidden_act") : NULL;
    const char *an = "gelu_pytorch_tanh";
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act)) return vbad(r, "hidden_act", "expected a string");
        an = act->valuestring;
    }
    /* ACT2FN: nn.GELU(approximate="tanh"), nn.GELU(), SiLU, ReLU (gelu_new / quick_gelu are Python
     * expressions with their own temporaries: not modelled) */
    static const char *const names[] = {"gelu_pytorch_tanh", "gelu", "silu", "relu"};
    static const int acts[] = {A_GELU_TANH, A_GELU, A_SILU, A_RELU};
    t->act = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(an, names[i])) t->act = acts[i];
    if (t->act < 0) {
        char e[64];
        vc_escape(e, sizeof e, an);
        return vbad(r, "hidden_act", "activation \"%s\" is not modelled (gelu_pytorch_tanh, gelu, silu or relu)", e);
    }
    /* mm_tokens_per_image: a key of Gemma3Config itself; PaliGemma's image tokens are the patches
     * (PaliGemmaConfig: text_config.num_image_tokens = (image_size // patch_size) ** 2) */
    const cJSON *mm = pali ? NULL : cJSON_GetObjectItemCaseSensitive(r->cfg, "mm_tokens_per_image");
    t->mm = pali ? (t->img / t->P) * (t->img / t->P) : 256;
    if (mm && !cJSON_IsNull(mm)) {
        double d = cJSON_IsNumber(mm) ? mm->valuedouble : NAN;
        if (!isfinite(d) || d != floor(d) || d < 1 || d > (double)MAX_SIZE) {
            vc_set_error(r->err, VC_ERR_MODEL, "mm_tokens_per_image", "expected a positive integer");
            return -1;
        }
        t->mm = (int64_t)d;
    }
    const int64_t side = t->img / t->P;           /* patches_per_image (Conv2d, padding "valid") */
    const int64_t tps = (int64_t)sqrt((double)t->mm); /* int(mm_tokens_per_image ** 0.5) */
    const int64_t k = tps > 0 ? side / tps : 0;    /* the AvgPool2d's kernel and stride */
    /* the pooled grid (side // k)^2 must be the processor's mm_tokens_per_image image tokens
     * (Gemma3Model.get_placeholder_mask raises otherwise) */
    if (k < 1 || (side / k) * (side / k) != t->mm) {
        vc_set_error(r->err, VC_ERR_MODEL, "mm_tokens_per_image", "%lld: the projector pools the %lld x %lld patch grid "
                     "(vision_config.image_size %lld / patch_size %lld) with a kernel of %lld, giving %lld tokens, not "
                     "%lld", (long long)t->mm, (long long)side, (long long)side, (long long)t->img, (long long)t->P,
                     (long long)k, (long long)(k ? (side / k) * (side / k) : 0), (long long)t->mm);
        return -1;
    }
    const int64_t lim = INT64_C(1) << 48;
    int64_t x;
    if (__builtin_mul_overflow(t->C, t->C, &x) || x > lim || __builtin_mul_overflow(t->I, t->C, &x) || x > lim ||
        __builtin_mul_overflow(t->C, a->H, &x) || x > lim)
        return vbad(r, "hidden_size", "the layers' weights (%lld wide, intermediate_size %lld) are more than 2^48 "
                    "elements", (long long)t->C, (long long)t->I);
    if (__builtin_mul_overflow(side, side, &x) || __builtin_mul_overflow(x, t->C, &x) || x > lim)
        return vbad(r, "image_size", "%lld / patch_size %lld: the position embedding (%lld^2 x %lld) is more than 2^48 "
                    "elements", (long long)t->img, (long long)t->P, (long long)side, (long long)t->C);
    if (__builtin_mul_overflow(t->cin, t->P, &x) || __builtin_mul_overflow(x, t->P, &x) ||
        __builtin_mul_overflow(x, t->C, &x) || x > lim)
        return vbad(r, "patch_size", "a patch (%lld channels x %lld x %lld) is too large", (long long)t->cin,
                    (long long)t->P, (long long)t->P);
    return 0;
}

/* smart_resize (image_processing_qwen2_vl.py @ cb0fc56f): Python's round() is
 * round-half-to-even, which nearbyint() is in the default rounding mode. */
static int smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_px, int64_t max_px, int64_t *oh,
                        int64_t *ow)
{
    double h = (double)height, w = (double)width, f = (double)factor;
    int64_t hb = (int64_t)nearbyint(h / f) * factor, wb = (int64_t)nearbyint(w / f) * factor;
    if ((double)hb * (double)wb > (double)max_px) {
        double beta = sqrt(h * w / (double)max_px);
        hb = (int64_t)floor(h / beta / f) * factor;
        wb = (int64_t)floor(w / beta / f) * factor;
    } else if ((double)hb * (double)wb < (double)min_px) {
        double beta = sqrt((double)min_px / (h * w));
        hb = (int64_t)ceil(h * beta / f) * factor;
        wb = (int64_t)ceil(w * beta / f) * factor;
    }
    *oh = hb;
    *ow = wb;
    return 0;
}

/* --image / --images for Gemma3. Gemma3ImageProcessor (image_processing_gemma3.py) resizes every
 * image to its size (the checkpoints' preprocessor_config.json: 896 x 896, vision_config.image_size;
 * do_pan_and_scan False by default, Gemma3ProcessorKwargs), whatever its size: pixel_values
 * [images, num_channels, image_size, image_size] float32. Gemma3Processor (processing_gemma3.py)
 * replaces each image's boi token in the prompt by full_image_sequence, "\n\n" boi, image_seq_length
 * (256) image tokens, eoi, "\n\n": as the Qwen2.5-VL rows count it (--seq: the text without the image's
 * placeholder), an image adds 260 tokens ("\n\n" is one token of Gemma's vocabulary; a newline next to
 * the placeholder merges with it, one token fewer: vLLM's gemma3_mm.py _apply_token_matches), of which
 * mm_tokens_per_image rows get the projector's embeddings (masked_scatter). One image per sample here:
 * SiglipVisionModel runs the images as a batch dimension ([B x images, C, H, W], attention within each
 * image), which a per-sample plan holds at one image a sample. */
static int siglip_images(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split)
{
    hf_vision *t = &a->vis;
    if (o->image_w <= 0) {
        vc_set_error(r->err, VC_ERR_USAGE, O("images"), "needs " O("image") " WxH (the images' size)");
        return -1;
    }
    if (o->images > 1) {
        vc_set_error(r->err, VC_ERR_USAGE, O("images"), "%lld: %s is modelled at one image per sample (the SigLIP "
                     "tower runs a sample's images as a batch dimension, which a per-sample plan holds at one)",
                     (long long)o->images, r->fam);
        return -1;
    }
    if (t->use_head) {
        vc_set_error(r->err, VC_ERR_USAGE, O("image"), "the SigLIP pooling head (vision_config.vision_use_head absent or "
                     "true: SiglipVisionTransformer runs it) is not modelled; the Gemma 3 and PaliGemma checkpoints set it "
                     "false");
        return -1;
    }
    const int64_t side = t->img / t->P;
    t->images = 1;
    t->h = t->w = t->img; /* the processor's resize */
    t->patches = side * side;
    int64_t sc;
    if (__builtin_mul_overflow(t->patches, t->patches, &sc) || __builtin_mul_overflow(sc, t->NH, &sc) ||
        sc > (INT64_C(1) << 56)) {
        vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%lld patches (vision_config.image_size %lld / patch_size %lld): "
                     "the tower's attention would have more than 2^56 elements", (long long)t->patches,
                     (long long)t->img, (long long)t->P);
        return -1;
    }
    t->embeds = t->mm;
    /* Gemma 3: "\n\n", boi, eoi, "\n\n" beside them; PaliGemmaProcessor (processing_paligemma.py @ 04fb9184
     * build_string_from_input: image_token * image_seq_length * num_images, then bos, the prompt and "\n", --seq's
     * text) the image tokens alone, at the start of the sequence (hf_layers.c's Cat puts the image rows first) */
    t->tokens = a->f->vision == VIS_PALIGEMMA ? t->mm : t->mm + 4;
    /* generate()'s decoding steps (src/engine/generate.c "Images"): Gemma3ForConditionalGeneration
     * .prepare_inputs_for_generation (modeling_gemma3.py @ 0018aa64) passes pixel_values only while
     * cache_position[0] == 0: the tower written as for the prefill and not run, the step's token text alone */
    t->decode = split.image_decode != 0;
    return 0;
}

/* Qwen3.5 / Qwen3.6 (model_type qwen3_5, qwen3_5_moe): Qwen3_5VisionConfig (configuration_qwen3_5.py
 * @ 8116e632: depth 27, hidden_size 1152, hidden_act gelu_pytorch_tanh, intermediate_size 4304,
 * num_heads 16, in_channels 3, patch_size 16, spatial_merge_size 2, temporal_patch_size 2,
 * out_hidden_size 3584, num_position_embeddings 2304) and Qwen3_5VisionModel (modular_qwen3_5.py
 * @ 8940358a: Qwen3VLVisionModel less deepstack_merger_list). Its weights are counted (write_qwen3_5
 * below); the tower's forward (learned position embeddings interpolated per image, LayerNorm blocks)
 * is not modelled: --image is refused. */
static int read_qwen3_5(rd *r, arch *a, const cJSON *v)
{
    hf_vision *t = &a->vis;
    if (read_qwen3_keys(r, a, v)) return -1;
    const int64_t lim = INT64_C(1) << 48;
    int64_t x, m2, pd;
    if (__builtin_mul_overflow(t->C, t->C, &x) || __builtin_mul_overflow(x, 3, &x) || x > lim ||
        __builtin_mul_overflow(t->I, t->C, &x) || x > lim || __builtin_mul_overflow(t->npos, t->C, &x) || x > lim)
        return vbad(r, "hidden_size", "the tower's weights (%lld wide, intermediate_size %lld, %lld positions) are more "
                    "than 2^48 elements", (long long)t->C, (long long)t->I, (long long)t->npos);
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

/* The tower's parameters bounded from above (its blocks: qkv and proj 4 hidden^2, the MLP up to three
 * intermediate x hidden matrices, norms and biases; the merger and deepstack mergers; the patch and
 * position embeddings), added to the language model's bound (hf_read.c check_total): past 2^56 the
 * engine's byte counts would overflow, so the config is refused naming the tower's depth. */
static int tower_total(rd *r, const arch *a)
{
    const hf_vision *t = &a->vis;
    const int64_t lim = INT64_C(1) << 56;
    int64_t blk, x, y, tot, H4;
    bool ovf = __builtin_mul_overflow(t->C, 4 * t->C, &blk) || __builtin_mul_overflow(t->I, 3 * t->C, &x) ||
               __builtin_add_overflow(blk, x, &blk) || __builtin_add_overflow(blk, 16 * (t->C + t->I), &blk) ||
               __builtin_mul_overflow(blk, t->depth, &tot);
    /* the mergers: H4^2 + H4 x out each, the final one and any deepstack ones */
    ovf = ovf || __builtin_mul_overflow(t->C, t->M * t->M, &H4) || __builtin_mul_overflow(H4, H4 + t->out + 4, &x) ||
          __builtin_mul_overflow(x, 1 + t->ndeep, &x) || __builtin_add_overflow(tot, x, &tot);
    /* patch_embed, pos_embed (or SigLIP's (image_size / patch_size)^2 positions), the projector */
    ovf = ovf || __builtin_mul_overflow(t->cin * t->T * t->P * t->P + t->npos + 1, t->C, &y) ||
          __builtin_add_overflow(tot, y, &tot) || __builtin_add_overflow(tot, a->param_bound, &tot);
    if (t->img && t->P) {
        const int64_t side = t->img / t->P;
        ovf = ovf || __builtin_mul_overflow(side * side + a->H, t->C, &y) || __builtin_add_overflow(tot, y, &tot);
    }
    if (ovf || tot > lim)
        return vbad(r, a->f->vision == VIS_SIGLIP ? "num_hidden_layers" : "depth", "%lld blocks of up to %lld parameters "
                    "each beside the language model's are more than 2^56 parameters: byte counts would overflow 64-bit "
                    "arithmetic", (long long)t->depth, (long long)blk);
    return 0;
}

/* Qwen3-VL with images: deepstack_visual_indexes as the tower runs them (Qwen3VLVisionModel.forward: after
 * each block in the list, in block order, deepstack_merger_list[list.index(block)]; Qwen3VLTextModel.forward
 * adds the k-th feature after decoder layer k), ascending in t->deep. A block listed twice would run one
 * merger and leave the other unused: refused, as more than HF_MAX_DEEPSTACK features are. */
static int qwen3_deep(rd *r, hf_vision *t, const cJSON *v)
{
    const cJSON *ds = v ? cJSON_GetObjectItemCaseSensitive(v, "deepstack_visual_indexes") : NULL;
    if (!ds || cJSON_IsNull(ds)) { /* Qwen3VLVisionConfig's default (read_qwen3 checked depth) */
        t->deep[0] = 8, t->deep[1] = 16, t->deep[2] = 24;
        return 0;
    }
    if (t->ndeep > HF_MAX_DEEPSTACK)
        return vbad(r, "deepstack_visual_indexes", "%lld features: more than the %d modelled with images", (long long)t->ndeep,
                    HF_MAX_DEEPSTACK);
    int64_t n = 0;
    for (const cJSON *e = ds->child; e; e = e->next) {
        int64_t x = (int64_t)e->valuedouble, j = n++;
        for (; j > 0 && t->deep[j - 1] > x; j--) t->deep[j] = t->deep[j - 1];
        if (j > 0 && t->deep[j - 1] == x)
            return vbad(r, "deepstack_visual_indexes", "block %lld is listed twice (one merger would run, the other not)",
                        (long long)x);
        t->deep[j] = x;
    }
    return 0;
}

/* Qwen3_5VisionConfig.hidden_act (gelu_pytorch_tanh by default), read when the tower runs */
static int read_qwen3_5_act(rd *r, hf_vision *t, const cJSON *v)
{
    const cJSON *act = v ? cJSON_GetObjectItemCaseSensitive(v, "hidden_act") : NULL;
    const char *an = "gelu_pytorch_tanh";
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act)) return vbad(r, "hidden_act", "expected a string");
        an = act->valuestring;
    }
    static const char *const names[] = {"gelu_pytorch_tanh", "gelu", "silu", "swish", "relu"};
    static const int acts[] = {A_GELU_TANH, A_GELU, A_SILU, A_SILU, A_RELU};
    for (int i = 0; i < 5; i++)
        if (!strcmp(an, names[i])) {
            t->act = acts[i];
            return 0;
        }
    char e[64];
    vc_escape(e, sizeof e, an);
    return vbad(r, "hidden_act", "activation \"%s\" is not modelled (gelu_pytorch_tanh, gelu, silu, swish or relu)", e);
}

/* vLLM's Qwen towers over tensor-parallel ranks (--serve --tp, split.vllm), as its default
 * mm_encoder_tp_mode "weights" builds them (vllm-project/vllm, vllm/config/multimodal.py @ 01230b40
 * MultiModalConfig.mm_encoder_tp_mode: "weights" by default, "split the weights of each layer across TP
 * ranks"; "data", the whole tower on every rank, is the per-model opt-in not modelled here):
 *  - vllm/model_executor/models/qwen2_5_vl.py @ 002d181a: Qwen2_5_VisionAttention.__init__
 *    num_attention_heads_per_partition = dist_utils.divide(num_heads, tp_size), qkv QKVParallelLinear(
 *    total_num_heads = total_num_kv_heads = num_heads, bias) and proj RowParallelLinear(projection_size,
 *    embed_dim); Qwen2_5_VisionMLP gate_up_proj MergedColumnParallelLinear([intermediate] x 2, bias) and
 *    down_proj RowParallelLinear; Qwen2_5_VisionPatchMerger mlp.0 ColumnParallelLinear(hidden x merge^2
 *    square, bias) and mlp.2 RowParallelLinear(to out_hidden_size, bias); patch_embed a ReplicatedLinear
 *    and the RMSNorms whole;
 *  - vllm/model_executor/models/qwen3_vl.py @ 002d7b93: Qwen3_VisionBlock's attn the same
 *    Qwen2_5_VisionAttention, Qwen3_VisionMLP linear_fc1 ColumnParallelLinear and linear_fc2
 *    RowParallelLinear, Qwen3_VisionPatchMerger (the merger and each deepstack merger) linear_fc1
 *    ColumnParallelLinear and linear_fc2 RowParallelLinear; patch_embed (nn.Conv3d), pos_embed
 *    (nn.Embedding) and the LayerNorms whole on every rank;
 *  - vllm/model_executor/models/qwen2_vl.py @ 002d181a: Qwen2VisionAttention qkv ColumnParallelLinear(embed_dim,
 *    3 embed_dim) (3 hidden / t rows, as QKVParallelLinear's) and proj RowParallelLinear, num_heads divided;
 *    Qwen2VisionMLP fc1 ColumnParallelLinear and fc2 RowParallelLinear; Qwen2VisionPatchMerger mlp.0
 *    ColumnParallelLinear and mlp.2 RowParallelLinear; Qwen2VisionPatchEmbed a ReplicatedLinear and the
 *    nn.LayerNorms whole;
 *  - vllm/model_executor/models/qwen3_5.py @ 00def4f8: Qwen3_5ForConditionalGeneration and
 *    Qwen3_5MoeForConditionalGeneration build the visual tower as Qwen3_VisionTransformer (the
 *    config's empty deepstack_visual_indexes: no deepstack merger).
 * vllm/model_executor/layers/linear.py: ColumnParallelLinear holds output_size / tp rows and as many
 * bias values, MergedColumnParallelLinear divides each output (output_partition_sizes = [divide(
 * output_size, tp_size) ...]: divide asserts divisibility), RowParallelLinear input_size / tp columns
 * and its whole bias. So a rank holds qkv [3 hidden / t, hidden], proj [hidden, hidden / t], the MLP's up
 * (and gate) [intermediate / t, hidden] and down [hidden, intermediate / t], the mergers' first Linear
 * [hidden m^2 / t, hidden m^2] and second [out, hidden m^2 / t], their column biases divided, the row
 * biases whole. A num_heads or intermediate_size the ranks do not divide is refused (vLLM's divide
 * asserts: Qwen2.5-VL-7B's 3,420 over 8). */
static int vision_tp(rd *r, hf_vision *t, int64_t tp, bool siglip)
{
    if (t->NH % tp)
        return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide vision_config.%s "
                            "(%lld): vLLM splits the vision tower's heads over the ranks (%s: "
                            "divide(num_heads, tp_size))", (long long)tp, siglip ? "num_attention_heads" : "num_heads",
                            (long long)t->NH, siglip ? "SiglipAttention" : "Qwen2_5_VisionAttention");
    if (t->I % tp)
        return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide "
                            "vision_config.intermediate_size (%lld): vLLM splits the vision tower's MLP over the ranks "
                            "(its column-parallel Linear: divide(intermediate_size, tp_size))", (long long)tp,
                            (long long)t->I);
    t->tp = tp; /* hidden_size = head_dim x num_heads: hidden and hidden x merge^2 divide too */
    return 0;
}

int vc__hf_vision_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split)
{
    const int64_t tp = split.tp;
    const bool want = o && (o->image_w > 0 || o->images > 0);
    if (!a->f->vision) {
        if (want)
            return vc_set_error(r->err, VC_ERR_USAGE, o->image_w > 0 ? O("image") : O("images"),
                                "model_type %s is a text-only model (no vision tower)", r->fam);
        return 0;
    }
    if (a->f->vision == VIS_PIXTRAL) return vc__hf_pixtral_read(r, a, o, split); /* mistral3 (hf_pixtral.c) */
    if (a->f->vision == VIS_IDEFICS3) return vc__hf_idefics3_read(r, a, o, split); /* smolvlm, idefics3 (hf_idefics3.c) */
    if (a->f->vision == VIS_GLM4V) return vc__hf_glm4v_read(r, a, o); /* glm4v (hf_glm4v.c) */
    if (a->f->vision == VIS_INTERNVL) return vc__hf_internvl_read(r, a, o, split); /* internvl (hf_internvl.c) */
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, "vision_config");
    if (cJSON_IsNull(v)) v = NULL; /* Qwen2_5_VLConfig: vision_config None is the class's defaults */
    if (v && !cJSON_IsObject(v)) {
        vc_set_error(r->err, VC_ERR_MODEL, "vision_config", "expected an object (the vision tower's keys)");
        return -1;
    }
    if (a->f->vision == VIS_SIGLIP || a->f->vision == VIS_PALIGEMMA ? read_siglip(r, a, v)
        : a->f->vision == VIS_QWEN3_5 ? read_qwen3_5(r, a, v)
        : a->f->vision == VIS_QWEN3   ? read_qwen3(r, a, v)
        : a->f->vision == VIS_QWEN2   ? read_qwen2(r, a, v)
                                      : read_qwen2_5(r, a, v))
        return -1;
    if (tower_total(r, a)) return -1;
    /* the towers without images under vLLM's split (--serve --tp): vision_tp above, and Gemma 3's SigLIP as
     * vLLM builds it (vllm-project/vllm vllm/model_executor/models/siglip.py @ 0c028ba4: SiglipAttention qkv_proj
     * QKVParallelLinear(total_num_heads = num_attention_heads, bias) and out_proj RowParallelLinear, num_heads_per_
     * partition = divide(num_heads, tp_size); SiglipMLP fc1 ColumnParallelLinear and fc2 RowParallelLinear, each
     * disable_tp only when multimodal_config.mm_encoder_tp_mode == "data", "weights" by default; the embeddings'
     * Conv2dLayer and nn.Embedding, the nn.LayerNorms whole; gemma3_mm.py @ e5fa9450 Gemma3ForConditionalGeneration
     * .__init__ builds SiglipVisionModel(config.vision_config, quant_config) and Gemma3MultiModalProjector, whose
     * mm_input_projection_weight (an nn.Parameter) and mm_soft_emb_norm are whole on every rank). Gemma3 without
     * images in training: the tower replicated on every rank (transformers' tp plans name the language model's
     * layers only) */
    if (tp > 1 && split.vllm && !want) { /* PaliGemma's SiglipVisionModel the same (vLLM's paligemma.py) */
        if (vision_tp(r, &a->vis, tp, a->f->vision == VIS_SIGLIP || a->f->vision == VIS_PALIGEMMA)) return -1;
    } else if (tp > 1 && (want || a->f->vision != VIS_SIGLIP)) {
        vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "the vision tower of %s on tensor-parallel ranks is not modelled", r->fam);
        return -1;
    }
    if (!want) return 0;
    if (a->f->vision == VIS_QWEN3_5 && read_qwen3_5_act(r, &a->vis, v)) return -1;
    /* rot_pos_emb: Qwen3VLVisionRotaryEmbedding(head_dim // 2), head_dim / 4 frequencies per axis, the h and
     * w ones cat'ed and doubled back to head_dim (modeling_qwen3_vl.py): head_dim must be a multiple of 4 */
    if ((a->f->vision == VIS_QWEN3_5 || a->f->vision == VIS_QWEN3) && (a->vis.C / a->vis.NH) % 4)
        return vbad(r, "num_heads", "head_dim %lld (hidden_size / num_heads) must be a multiple of 4 for the tower to run "
                    "(2-D rotary: a quarter per axis, twice)", (long long)(a->vis.C / a->vis.NH));
    if (a->f->vision == VIS_QWEN3 && qwen3_deep(r, &a->vis, v)) return -1;
    hf_vision *t = &a->vis;
    if (a->f->vision == VIS_SIGLIP || a->f->vision == VIS_PALIGEMMA) return siglip_images(r, a, o, split);
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
    const bool q3 = a->f->vision == VIS_QWEN3_5 || a->f->vision == VIS_QWEN3;
    smart_resize(H, W, factor, q3 ? QWEN3_MIN_PIXELS : QWEN_MIN_PIXELS, q3 ? QWEN3_MAX_PIXELS : QWEN_MAX_PIXELS, &t->h,
                 &t->w);
    t->images = o->images > 0 ? o->images : 1;
    if (q3 && t->images > 64) { /* layers/vision.c: the tower's per-image pieces (VPE_MAX_IMAGES) */
        vc_set_error(r->err, VC_ERR_USAGE, O("images"), "%lld images per sample: the Qwen3 towers are modelled with at most "
                     "64", (long long)t->images);
        return -1;
    }
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
    t->tokens = t->embeds = t->patches / (t->M * t->M);
    /* generate()'s decoding steps (src/engine/generate.c): prepare_inputs_for_generation sets pixel_values None
     * once cache_position[0] != 0 (Qwen3VLForConditionalGeneration @ 00709b86, Qwen3_5ForConditionalGeneration
     * inherits it): the tower written as for the prefill and not run, the step's tokens text alone */
    t->decode = split.image_decode != 0;
    return 0;
}

/* ------------------------------------------------------------ writing the tower */

typedef struct {
    rd *r;
    cJSON *arr;
} vw;

static cJSON *lay(vw *w, const char *type, const char *name)
{
    cJSON *o = vc__hf_layer(w->r, w->arr, type, name);
    vc__hf_flag(w->r, o, "frozen", true); /* the tower is frozen (the file's comment) */
    return o;
}
static void vnum(vw *w, cJSON *o, const char *k, double v) { vc__hf_num(w->r, o, k, v); }
static void vflag(vw *w, cJSON *o, const char *k, bool v) { vc__hf_flag(w->r, o, k, v); }
static void vstr(vw *w, cJSON *o, const char *k, const char *v) { vc__hf_str(w->r, o, k, v); }
static void vins(vw *w, cJSON *o, const char *a, const char *b) { vc__hf_ins(w->r, o, a, b, NULL, NULL); }
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
/* Qwen2.5-VL's Qwen2RMSNorm or Qwen2-VL's nn.LayerNorm(width, eps=1e-6) (weight and bias) */
static void vnorm(vw *w, bool layer, const char *name, int64_t width)
{
    if (!layer) {
        vrms(w, name, NULL, width);
        return;
    }
    cJSON *o = lay(w, "LayerNorm", name);
    int64_t d[1] = {width};
    vshape(w, o, "normalized_shape", 1, d);
    vnum(w, o, "eps", 1e-6);
}
static void vact(vw *w, int act, const char *name)
{
    if (act == A_GELU_QUICK) { /* ACT2FN's QuickGELUActivation: input * torch.sigmoid(1.702 * input) */
        cJSON *o = lay(w, "NewGELU", name);
        vstr(w, o, "variant", "quick");
    } else if (act == A_SILU) {
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

/* The towers' blocks, module by module: depth blocks named <prefix>.<b>.<module>, each module a
 * norm of the hidden size (with its bias when norm_bias) or an nn.Linear with its bias: V_QKV
 * [3 hidden, hidden], V_SQUARE [hidden, hidden], V_UP [intermediate, hidden], V_DOWN [hidden,
 * intermediate]; a rank's shards of them under vLLM's split (t->tp, vision_tp: V_SQUARE is then the
 * row-parallel attn.proj, the Qwen towers' only one, and SigLIP's out_proj); V_COL [hidden / t, hidden]: one
 * of SigLIP's q/k/v, a third of vLLM's QKVParallelLinear, its bias divided. */
enum { V_NORM, V_QKV, V_SQUARE, V_UP, V_DOWN, V_COL };
typedef struct {
    const char *n;
    int which;
} vmodule;
static void vblock_weights(vw *w, const hf_vision *t, const char *prefix, const vmodule *ms, size_t n, bool norm_bias)
{
    char nm[120];
    const int64_t C = t->C, I = t->I, k = t->tp > 1 ? t->tp : 1; /* vLLM's ranks (vision_tp) */
    for (int64_t b = 0; b < t->depth && !w->r->oom; b++) {
        for (size_t i = 0; i < n; i++) {
            snprintf(nm, sizeof nm, "%s.%lld.%s", prefix, (long long)b, ms[i].n);
            switch (ms[i].which) {
            case V_NORM: vweights(w, nm, C, 0, norm_bias, false); break;
            case V_QKV: vweights(w, nm, 3 * C / k, C, true, true); break;
            case V_SQUARE: vweights(w, nm, C, C / k, true, true); break; /* row-parallel: its bias whole */
            case V_UP: vweights(w, nm, I / k, C, true, true); break;
            case V_COL: vweights(w, nm, C / k, C, true, true); break;
            default: vweights(w, nm, C, I / k, true, true); break;
            }
        }
    }
}

/* The tower's weights only (no image): named_parameters() of
 * Qwen2_5_VisionTransformerPretrainedModel, module by module. */
static void write_weights(vw *w, const hf_vision *t)
{
    const int64_t C = t->C, H4 = t->C * t->M * t->M, k = t->tp > 1 ? t->tp : 1;
    /* the Conv3d weight [C, cin, T, P, P] (not an nn.Linear: bitsandbytes leaves it) */
    vweights(w, "visual.patch_embed.proj", C, t->cin * t->T * t->P * t->P, false, false);
    static const vmodule ms[] = {
        {"norm1", V_NORM}, {"attn.qkv", V_QKV}, {"attn.proj", V_SQUARE}, {"norm2", V_NORM},
        {"mlp.gate_proj", V_UP}, {"mlp.up_proj", V_UP}, {"mlp.down_proj", V_DOWN},
    };
    vblock_weights(w, t, "visual.blocks", ms, sizeof ms / sizeof *ms, false);
    vweights(w, "visual.merger.ln_q", C, 0, false, false);
    vweights(w, "visual.merger.mlp.0", H4 / k, H4, true, true); /* vision_tp: column- then row-parallel */
    vweights(w, "visual.merger.mlp.2", t->out, H4 / k, true, true);
}

/* named_parameters() of Qwen2VisionTransformerPretrainedModel (modeling_qwen2_vl.py @ efa7189c), module by module:
 * PatchEmbed.proj (nn.Conv3d without bias), Qwen2VLVisionBlock (norm1, norm2: nn.LayerNorm(embed_dim) with weight and
 * bias; attn.qkv, attn.proj; mlp.fc1 [int(embed_dim mlp_ratio), embed_dim], mlp.fc2: nn.Linear with biases), merger
 * (PatchMerger: ln_q nn.LayerNorm(embed_dim), mlp.0 [embed_dim m^2 square], mlp.2 to hidden_size, with biases). */
static void write_qwen2_weights(vw *w, const hf_vision *t)
{
    const int64_t C = t->C, H4 = t->C * t->M * t->M, k = t->tp > 1 ? t->tp : 1;
    vweights(w, "visual.patch_embed.proj", C, t->cin * t->T * t->P * t->P, false, false);
    static const vmodule ms[] = {
        {"norm1", V_NORM}, {"norm2", V_NORM}, {"attn.qkv", V_QKV}, {"attn.proj", V_SQUARE}, {"mlp.fc1", V_UP}, {"mlp.fc2", V_DOWN},
    };
    vblock_weights(w, t, "visual.blocks", ms, sizeof ms / sizeof *ms, true);
    vweights(w, "visual.merger.ln_q", C, 0, true, false);
    vweights(w, "visual.merger.mlp.0", H4 / k, H4, true, true); /* vision_tp: column- then row-parallel */
    vweights(w, "visual.merger.mlp.2", t->out, H4 / k, true, true);
}

/* named_parameters() of Qwen3VLVisionModel (modeling_qwen3_vl.py @ 00709b86), module by module:
 * patch_embed.proj (nn.Conv3d with bias), pos_embed (nn.Embedding), the blocks (norm1 / norm2
 * nn.LayerNorm with bias, attn.qkv and attn.proj, mlp.linear_fc1 / linear_fc2, all with biases), merger
 * (Qwen3VLVisionPatchMerger: norm LayerNorm(hidden), linear_fc1 [4 hidden, 4 hidden], linear_fc2 to
 * out_hidden_size) and the deepstack mergers (use_postshuffle_norm: norm LayerNorm(4 hidden)). */
static void write_qwen3_weights(vw *w, const hf_vision *t)
{
    char nm[120];
    const int64_t C = t->C, H4 = t->C * t->M * t->M, tp = t->tp > 1 ? t->tp : 1;
    vweights(w, "visual.patch_embed.proj", C, t->cin * t->T * t->P * t->P, true, false);
    vweights(w, "visual.pos_embed", t->npos, C, false, false);
    static const vmodule ms[] = {
        {"norm1", V_NORM}, {"attn.qkv", V_QKV}, {"attn.proj", V_SQUARE}, {"norm2", V_NORM}, {"mlp.linear_fc1", V_UP}, {"mlp.linear_fc2", V_DOWN},
    };
    vblock_weights(w, t, "visual.blocks", ms, sizeof ms / sizeof *ms, true);
    for (int64_t k = -1; k < t->ndeep && !w->r->oom; k++) {
        char pre[64];
        if (k < 0) snprintf(pre, sizeof pre, "visual.merger");
        else snprintf(pre, sizeof pre, "visual.deepstack_merger_list.%lld", (long long)k);
        snprintf(nm, sizeof nm, "%s.norm", pre);
        vweights(w, nm, k < 0 ? C : H4, 0, true, false);
        snprintf(nm, sizeof nm, "%s.linear_fc1", pre); /* vision_tp: column- then row-parallel */
        vweights(w, nm, H4 / tp, H4, true, true);
        snprintf(nm, sizeof nm, "%s.linear_fc2", pre);
        vweights(w, nm, t->out, H4 / tp, true, true);
    }
}

/* named_parameters() of Gemma3ForConditionalGeneration's vision_tower (SiglipVisionModel) and
 * multi_modal_projector, module by module (modeling_siglip.py @ efa7189c, modeling_gemma3.py @ 0018aa64):
 * nn.Conv2d(num_channels, hidden, patch, stride patch) with its bias; nn.Embedding(num_positions, hidden);
 * SiglipEncoderLayer: layer_norm1, self_attn.{q,k,v,out}_proj (nn.Linear with biases), layer_norm2,
 * mlp.fc1 / fc2 (nn.Linear with biases); post_layernorm (nn.LayerNorm: weight and bias); the pooling
 * head when built (probe [1, 1, hidden], nn.MultiheadAttention: in_proj_weight [3 hidden, hidden] and its
 * bias, out_proj an nn.Linear; layernorm; mlp); the projector's mm_soft_emb_norm (Gemma3RMSNorm: weight
 * only) and mm_input_projection_weight [vision hidden, text hidden] (an nn.Parameter, not an nn.Linear). */
static void write_siglip_weights(vw *w, const hf_vision *t, bool pali)
{
    const int64_t C = t->C, I = t->I, side = t->img / t->P, k = t->tp > 1 ? t->tp : 1; /* vLLM's ranks (vision_tp) */
    vweights(w, "vision_tower.vision_model.embeddings.patch_embedding", C, t->cin * t->P * t->P, true, false);
    vweights(w, "vision_tower.vision_model.embeddings.position_embedding", side * side, C, false, false);
    static const vmodule ms[] = {
        {"layer_norm1", V_NORM}, {"self_attn.q_proj", V_COL}, {"self_attn.k_proj", V_COL}, {"self_attn.v_proj", V_COL},
        {"self_attn.out_proj", V_SQUARE}, {"layer_norm2", V_NORM}, {"mlp.fc1", V_UP}, {"mlp.fc2", V_DOWN},
    };
    vblock_weights(w, t, "vision_tower.vision_model.encoder.layers", ms, sizeof ms / sizeof *ms, true);
    vweights(w, "vision_tower.vision_model.post_layernorm", C, 0, true, false);
    if (t->use_head) {
        vweights(w, "vision_tower.vision_model.head.probe", C, 0, false, false);
        vweights(w, "vision_tower.vision_model.head.attention.in_proj", 3 * C, C, true, false);
        vweights(w, "vision_tower.vision_model.head.attention.out_proj", C, C, true, true);
        vweights(w, "vision_tower.vision_model.head.layernorm", C, 0, true, false);
        /* vLLM: the head's torch.nn.MultiheadAttention whole, its SiglipMLP split as the layers' */
        vweights(w, "vision_tower.vision_model.head.mlp.fc1", I / k, C, true, true);
        vweights(w, "vision_tower.vision_model.head.mlp.fc2", C, I / k, true, true);
    }
    if (pali) { /* PaliGemmaMultiModalProjector (modeling_paligemma.py @ efa7189c): nn.Linear(hidden, projection_dim) */
        vweights(w, "multi_modal_projector.linear", t->out, C, true, true);
        return;
    }
    vweights(w, "multi_modal_projector.mm_soft_emb_norm", C, 0, false, false);
    vweights(w, "multi_modal_projector.mm_input_projection_weight", C, t->out, false, false);
}

/* named_parameters() of Qwen3_5VisionModel (modeling_qwen3_vl.py @ 68a7b7e2, the classes it inherits):
 * Qwen3VLVisionPatchEmbed.proj (nn.Conv3d(in_channels, hidden, [T, P, P]) with its bias), pos_embed
 * (nn.Embedding(num_position_embeddings, hidden)), Qwen3VLVisionBlock (norm1, norm2: nn.LayerNorm with
 * weight and bias; attn.qkv, attn.proj, mlp.linear_fc1, mlp.linear_fc2: nn.Linear with biases), merger
 * (Qwen3VLVisionPatchMerger without the post-shuffle norm: norm nn.LayerNorm(hidden), linear_fc1
 * (hidden x merge^2 square), linear_fc2 to out_hidden_size, both with biases). */
static void write_qwen3_5_weights(vw *w, const hf_vision *t)
{
    const int64_t C = t->C, H4 = t->C * t->M * t->M, k = t->tp > 1 ? t->tp : 1;
    vweights(w, "visual.patch_embed.proj", C, t->cin * t->T * t->P * t->P, true, false);
    vweights(w, "visual.pos_embed", t->npos, C, false, false);
    static const vmodule ms[] = {
        {"norm1", V_NORM}, {"norm2", V_NORM}, {"attn.qkv", V_QKV}, {"attn.proj", V_SQUARE}, {"mlp.linear_fc1", V_UP}, {"mlp.linear_fc2", V_DOWN},
    };
    vblock_weights(w, t, "visual.blocks", ms, sizeof ms / sizeof *ms, true);
    vweights(w, "visual.merger.norm", C, 0, true, false);
    vweights(w, "visual.merger.linear_fc1", H4 / k, H4, true, true); /* vision_tp: column- then row-parallel */
    vweights(w, "visual.merger.linear_fc2", t->out, H4 / k, true, true);
}

/* write_siglip's towers: Gemma 3's (SiglipVisionModel + Gemma3MultiModalProjector), PaliGemma's, SmolVLM's / Idefics3's */
enum { SIG_GEMMA3, SIG_PALI, SIG_IDEFICS3 };

static void vln(vw *w, const char *name, const char *in, int64_t width)
{
    cJSON *o = lay(w, "LayerNorm", name);
    if (in) vins(w, o, in, NULL);
    int64_t d[1] = {width};
    vshape(w, o, "normalized_shape", 1, d);
    vnum(w, o, "eps", 1e-6); /* SiglipVisionConfig.layer_norm_eps (the memory does not depend on it) */
}

/* A tower's non-causal sdpa over q / k / v [n, NH x D] (the names in qkv) written as pre.attention: with tiles > 1
 * the tiles run as sdpa's batch ([tiles, heads, patches, D]), written as one sample's tiles x heads heads over a
 * tile's n / tiles rows, the same scores and outputs (pre.q_tiles ...: [n / tiles, tiles x hidden] views of the
 * projections), then attn_output.reshape(batch_size, seq_length, embed_dim) (pre.reshape). write_siglip,
 * write_internvl. */
static void tiled_sdpa(vw *b, const char *pre, const char *const in[3], int64_t n, int64_t tiles, int64_t NH, int64_t D)
{
    char tv[3][64], att[64], re[64];
    const char *qkv[3] = {in[0], in[1], in[2]};
    cJSON *o;
    if (tiles > 1) {
        int64_t d2[2] = {n / tiles, tiles * NH * D};
        for (int i = 0; i < 3; i++) {
            snprintf(tv[i], sizeof tv[i], "%s.%c_tiles", pre, "qkv"[i]);
            o = lay(b, "Reshape", tv[i]);
            vins(b, o, qkv[i], NULL);
            vshape(b, o, "shape", 2, d2);
            qkv[i] = tv[i];
        }
    }
    snprintf(att, sizeof att, "%s.attention", pre);
    o = lay(b, "RotaryAttention", att);
    if (o) {
        cJSON *arr = cJSON_CreateStringArray(qkv, 3);
        if (!arr || !cJSON_AddItemToObject(o, "inputs", arr)) {
            cJSON_Delete(arr);
            b->r->oom = true;
        }
    }
    vnum(b, o, "num_heads", (double)(NH * tiles));
    vnum(b, o, "num_kv_heads", (double)(NH * tiles));
    vnum(b, o, "head_dim", (double)D);
    vnum(b, o, "rotary_dim", 0);
    vflag(b, o, "causal", false);
    if (tiles > 1) {
        int64_t d2[2] = {n, NH * D};
        snprintf(re, sizeof re, "%s.reshape", pre);
        vshape(b, lay(b, "Reshape", re), "shape", 2, d2);
    }
}

/* Gemma3Model.get_image_features (modeling_gemma3.py @ 0018aa64): vision_tower(pixel_values)
 * .last_hidden_state, then multi_modal_projector; one image of the sample (siglip_images).
 *  - SiglipVisionEmbeddings.forward: patch_embedding(pixel_values.to(dtype)) (a Conv2d with kernel =
 *    stride = patch_size: written as one Linear over each patch's num_channels x P x P values, the same
 *    weights and output), flatten(2).transpose(1, 2), + position_embedding(position_ids);
 *  - SiglipEncoderLayer x num_hidden_layers: x + self_attn(layer_norm1(x)), x + mlp(layer_norm2(x));
 *    SiglipSdpaAttention (sdpa, transformers' default): q/k/v_proj, view + transpose, no mask (Gemma3
 *    passes none), F.scaled_dot_product_attention non-causal, transpose(1, 2).contiguous(), out_proj;
 *    SiglipMLP: fc1, the activation, fc2;
 *  - post_layernorm;
 *  - Gemma3MultiModalProjector.forward: transpose(1, 2).reshape(b, C, side, side) (a copy of the
 *    transposed view), AvgPool2d(kernel), flatten(2).transpose(1, 2), mm_soft_emb_norm (Gemma3RMSNorm:
 *    x.float() ... * (1 + weight.float()), type_as), matmul(mm_input_projection_weight).
 * Frozen and run without autograd (the Qwen2.5-VL rows' default): nothing is saved. */
static const char *write_siglip(vw *w, const hf_vision *t, int kind)
{
    const bool pali = kind == SIG_PALI, i3 = kind == SIG_IDEFICS3;
    const int64_t C = t->C, NH = t->NH, D = t->C / t->NH, side = t->img / t->P, n = t->patches;
    const int64_t pd = t->cin * t->P * t->P, k = i3 ? 1 : side / (int64_t)sqrt((double)t->mm), ps = side / k;
    /* SmolVLM / Idefics3 (vc__hf_idefics3_run_tower, hf_idefics3.c): model.vision_model, its tiles one batch */
    const char *pre = i3 ? "model.vision_model" : "vision_tower.vision_model", *ids = i3 ? "model.vision_model.position_ids" : "vision_tower.position_ids";
    const int64_t tiles = i3 && t->tiles > 1 ? t->tiles : 1;
    char pe[96], pos[96], emb[96];
    snprintf(pe, sizeof pe, "%s.embeddings.patch_embedding", pre);
    snprintf(pos, sizeof pos, "%s.embeddings.position_embedding", pre);
    snprintf(emb, sizeof emb, "%s.embeddings", pre);
    cJSON *o = lay(w, "PixelValues", "pixel_values");
    vnum(w, o, "num_patches", (double)n);
    vnum(w, o, "patch_dim", (double)pd);
    vflag(w, o, i3 ? "model_dtype" : "local_cast", true); /* SmolVLM: no cast (layers/vision.c PixelValues) */
    o = vlinear(w, pe, "pixel_values", pd, C, true);
    vflag(w, o, "quantizable", false); /* an nn.Conv2d: bitsandbytes leaves it */
    o = lay(w, "PixelValues", ids);
    vnum(w, o, "num_patches", (double)n);
    vflag(w, o, "positions", true);
    o = lay(w, "PositionEmbedding", pos);
    vins(w, o, ids, NULL);
    vnum(w, o, "num_embeddings", (double)(side * side));
    vnum(w, o, "embedding_dim", (double)C);
    if (i3) vflag(w, o, "per_sample", true); /* SmolVLMVisionEmbeddings: position_ids [tiles, patches], per tile */
    o = lay(w, "Add", emb);
    vins(w, o, pe, pos);
    char enc[96];
    snprintf(enc, sizeof enc, "%s.encoder.layers", pre);
    cJSON *seq = lay(w, "Sequential", enc);
    vins(w, seq, emb, NULL);
    if (t->depth > 1) vnum(w, seq, "repeat", (double)t->depth);
    cJSON *inner = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!inner) {
        w->r->oom = true;
        return NULL;
    }
    vw b = {w->r, inner};
    vln(&b, "layer_norm1", NULL, C);
    vlinear(&b, "self_attn.q_proj", "layer_norm1", C, C, true);
    vlinear(&b, "self_attn.k_proj", "layer_norm1", C, C, true);
    vlinear(&b, "self_attn.v_proj", "layer_norm1", C, C, true);
    const char *qkv[3] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"};
    tiled_sdpa(&b, "self_attn", qkv, n, tiles, NH, D);
    vlinear(&b, "self_attn.out_proj", NULL, C, C, true);
    vins(&b, lay(&b, "Add", "attn_residual"), "input", "self_attn.out_proj");
    vln(&b, "layer_norm2", NULL, C);
    vlinear(&b, "mlp.fc1", NULL, C, t->I, true);
    vact(&b, t->act, "mlp.activation_fn");
    vlinear(&b, "mlp.fc2", NULL, t->I, C, true);
    vins(&b, lay(&b, "Add", "mlp_residual"), "attn_residual", "mlp.fc2");
    char pl[96];
    snprintf(pl, sizeof pl, "%s.post_layernorm", pre);
    vln(w, pl, NULL, C);
    if (i3) { /* SmolVLMConnector.forward (hf_idefics3.c): pixel_shuffle's views and two copies, modality_projection */
        const int64_t s = t->M, per = n / tiles;
        o = lay(w, "Reshape", "model.connector.view"); /* x.view(bsz, h, w, C); x.view(bsz, h, w / s, C s) */
        int64_t d4[4] = {tiles, side, side / s, C * s};
        vshape(w, o, "shape", 4, d4);
        o = lay(w, "Permute", "model.connector.permute"); /* permute(0, 2, 1, 3) */
        int64_t p5[5] = {0, 1, 3, 2, 4};
        vshape(w, o, "dims", 5, p5);
        o = lay(w, "Reshape", "model.connector.reshape"); /* reshape(bsz, w / s, h / s, C s^2): a copy */
        int64_t r4[4] = {tiles, side / s, side / s, C * s * s};
        vshape(w, o, "shape", 4, r4);
        o = lay(w, "Permute", "model.connector.permute2");
        vshape(w, o, "dims", 5, p5);
        o = lay(w, "Reshape", "model.connector.reshape2"); /* reshape(bsz, seq / s^2, C s^2): a copy */
        int64_t r2[2] = {tiles * (per / (s * s)), C * s * s};
        vshape(w, o, "shape", 2, r2);
        vlinear(w, "model.connector.modality_projection.proj", NULL, C * s * s, t->out, false);
        return "model.connector.modality_projection.proj";
    }
    if (pali) { /* PaliGemmaForConditionalGeneration.get_image_features (modeling_paligemma.py @ efa7189c):
                 * multi_modal_projector (self.linear), then image_features / (text_config.hidden_size ** 0.5), a new
                 * tensor; .to(inputs_embeds.dtype) in forward: the same dtype */
        vlinear(w, "multi_modal_projector.linear", NULL, C, t->out, true);
        o = lay(w, "Scale", "multi_modal_projector.scale");
        vnum(w, o, "factor", 1.0 / sqrt((double)t->out));
        vflag(w, o, "keep_forward", true); /* forward's image_features: alive until it returns (image_hidden_states) */
        return "multi_modal_projector.scale";
    }
    /* the projector */
    o = lay(w, "Transpose", "multi_modal_projector.transpose");
    vnum(w, o, "dim0", 1); /* dims count the batch (Transpose, layers/tensor.c) */
    vnum(w, o, "dim1", 2);
    o = lay(w, "Reshape", "multi_modal_projector.reshape");
    int64_t d3[3] = {C, side, side};
    vshape(w, o, "shape", 3, d3);
    o = lay(w, "AvgPool2d", "multi_modal_projector.avg_pool");
    vnum(w, o, "kernel_size", (double)k);
    vnum(w, o, "stride", (double)k);
    o = lay(w, "Reshape", "multi_modal_projector.flatten");
    int64_t d2[2] = {C, ps * ps};
    vshape(w, o, "shape", 2, d2);
    o = lay(w, "Transpose", "multi_modal_projector.transpose2");
    vnum(w, o, "dim0", 1); /* dims count the batch (Transpose, layers/tensor.c) */
    vnum(w, o, "dim1", 2);
    o = lay(w, "HFRMSNorm", "multi_modal_projector.mm_soft_emb_norm");
    vnum(w, o, "hidden_size", (double)C);
    vnum(w, o, "eps", 1e-6);
    vstr(w, o, "variant", "gemma");
    /* torch.matmul(x, mm_input_projection_weight [C, H]): a Linear's memory without bias, its weight an
     * nn.Parameter that quantizers leave */
    o = vlinear(w, "multi_modal_projector.mm_input_projection_weight", NULL, C, t->out, false);
    vflag(w, o, "quantizable", false);
    return "multi_modal_projector.mm_input_projection_weight";
}

/* Qwen3VLVisionModel.forward (modeling_qwen3_vl.py @ 00709b86) and Qwen3_5VisionModel.forward
 * (modular_qwen3_5.py @ 8940358a, the blocks and merger of modeling_qwen3_vl.py @ 68a7b7e2) on the
 * processor's pixel_values, frozen and run without autograd (nothing saved):
 *  - get_image_features: pixel_values.type(self.visual.dtype), a local of that function (a copy
 *    unless float32), dead once the tower returns (written as the first layer's temporary);
 *  - patch_embed (Qwen3VLVisionPatchEmbed: view(-1, C, T, P, P), Conv3d with kernel = stride and a
 *    bias, view(-1, hidden): one Linear over each patch's values, the same weights and output);
 *  - pos_embeds = fast_pos_embed_interpolate(grid_thw) (VisionPosEmbed, layers/vision.c);
 *    hidden_states = hidden_states + pos_embeds (.to(input_dtype): the same dtype);
 *  - rot_pos_emb, emb = cat, (emb.cos(), emb.sin()) float32 (VisionRotary);
 *  - the blocks (Qwen3VLVisionBlock): x + attn(norm1(x)), x + mlp(norm2(x)); nn.LayerNorm eps 1e-6
 *    with bias; attn: qkv, VisionAttention (float32 rope, sdpa per image), proj; mlp: linear_fc1,
 *    hidden_act, linear_fc2;
 *  - Qwen3-VL: after each block of deepstack_visual_indexes, its deepstack merger
 *    (Qwen3VLVisionPatchMerger(use_postshuffle_norm=True): x.view(-1, hidden * merge^2), norm
 *    LayerNorm(hidden * merge^2), linear_fc1, GELU, linear_fc2);
 *  - merger (use_postshuffle_norm False): norm LayerNorm(hidden), view(-1, hidden * merge^2),
 *    linear_fc1, nn.GELU(), linear_fc2 to out_hidden_size;
 *  - what the model's forward keeps (VisionOutputs): the cat copy of the image embeddings, and
 *    Qwen3.5's last_hidden_state and pooler_output, Qwen3-VL's deepstack features; the 3-D mrope
 *    positions [3, L] int64 per sample. */
static const char *write_qwen3_tower(vw *w, const hf_vision *t, bool keep_last)
{
    const int64_t C = t->C, NH = t->NH, D = t->C / t->NH, n = t->patches, pd = t->cin * t->T * t->P * t->P;
    const int64_t H4 = C * t->M * t->M, gh = t->h / t->P, gw = t->w / t->P;
    cJSON *o = lay(w, "PixelValues", "pixel_values");
    vnum(w, o, "num_patches", (double)n);
    vnum(w, o, "patch_dim", (double)pd);
    vflag(w, o, "local_cast", true); /* get_image_features' local: read by VisionOutputs, dead after the tower */
    o = vlinear(w, "visual.patch_embed.proj", "pixel_values", pd, C, true);
    vflag(w, o, "quantizable", false); /* an nn.Conv3d: bitsandbytes leaves it */
    o = lay(w, "VisionPosEmbed", "visual.pos_embed");
    vnum(w, o, "num_embeddings", (double)t->npos);
    vnum(w, o, "embedding_dim", (double)C);
    vnum(w, o, "num_patches", (double)n);
    vnum(w, o, "images", (double)t->images);
    /* pos_embeds: a local of Qwen3VLVisionModel.forward, alive until it returns (after the merger) */
    vstr(w, o, "held_until", "visual.merger.linear_fc2");
    o = lay(w, "Add", "visual.embeds");
    vins(w, o, "visual.patch_embed.proj", "visual.pos_embed");
    o = lay(w, "VisionRotary", "visual.rotary_pos_emb");
    vnum(w, o, "num_patches", (double)n);
    vnum(w, o, "head_dim", (double)D);
    vnum(w, o, "max_grid", (double)(gh > gw ? gh : gw));
    vstr(w, o, "held_until", "visual.merger.linear_fc2"); /* position_embeddings: a local of forward, likewise */
    /* the blocks: one Sequential per run between deepstack taps */
    const char *prev = "visual.embeds";
    char nm[64], dn[64];
    int64_t b0 = 0;
    for (int64_t k = 0; k <= t->ndeep && !w->r->oom; k++) {
        const int64_t end = k < t->ndeep ? t->deep[k] + 1 : t->depth;
        if (end > b0) {
            /* one run: "visual.blocks" (transformers' own name); runs between deepstack taps: their ranges */
            if (t->ndeep == 0) snprintf(nm, sizeof nm, "visual.blocks");
            else snprintf(nm, sizeof nm, "visual.blocks.%lld-%lld", (long long)b0, (long long)(end - 1));
            cJSON *seq = lay(w, "Sequential", nm);
            vins(w, seq, prev, NULL);
            if (end - b0 > 1) vnum(w, seq, "repeat", (double)(end - b0));
            /* for blk in self.blocks: hidden_states = blk(...): each block's input dies as the name rebinds */
            if (end - b0 > 1) vflag(w, seq, "loop", true);
            cJSON *inner = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
            if (!inner) {
                w->r->oom = true;
                return NULL;
            }
            vw b = {w->r, inner};
            o = lay(&b, "LayerNorm", "norm1");
            int64_t ns[1] = {C};
            vshape(&b, o, "normalized_shape", 1, ns);
            vnum(&b, o, "eps", 1e-6);
            vstr(&b, o, "held_until", "attn.proj"); /* the attention's argument until its forward returns */
            vlinear(&b, "attn.qkv", NULL, C, 3 * C, true);
            o = lay(&b, "VisionAttention", "attn.attention");
            vins(&b, o, "attn.qkv", "visual.rotary_pos_emb");
            vnum(&b, o, "num_heads", (double)NH);
            vnum(&b, o, "head_dim", (double)D);
            vnum(&b, o, "images", (double)t->images);
            vlinear(&b, "attn.proj", NULL, C, C, true);
            vins(&b, lay(&b, "Add", "attn_residual"), "input", "attn.proj");
            o = lay(&b, "LayerNorm", "norm2");
            vshape(&b, o, "normalized_shape", 1, ns);
            vnum(&b, o, "eps", 1e-6);
            vlinear(&b, "mlp.linear_fc1", NULL, C, t->I, true);
            vact(&b, t->act, "mlp.act_fn");
            vlinear(&b, "mlp.linear_fc2", NULL, t->I, C, true);
            vins(&b, lay(&b, "Add", "mlp_residual"), "attn_residual", "mlp.linear_fc2");
            snprintf(dn, sizeof dn, "%s", nm);
            b0 = end;
            prev = dn;
        }
        if (k == t->ndeep) break;
        /* deepstack_merger_list[k] on the block's output: view, norm, linear_fc1, GELU, linear_fc2 */
        char pre[64], vn[96], nn_[96], f1[96], ga[96], f2[96];
        snprintf(pre, sizeof pre, "visual.deepstack_merger_list.%lld", (long long)k);
        snprintf(vn, sizeof vn, "%s.view", pre);
        snprintf(nn_, sizeof nn_, "%s.norm", pre);
        snprintf(f1, sizeof f1, "%s.linear_fc1", pre);
        snprintf(ga, sizeof ga, "%s.act_fn", pre);
        snprintf(f2, sizeof f2, "%s.linear_fc2", pre);
        o = lay(w, "Reshape", vn);
        vins(w, o, prev, NULL);
        int64_t d[2] = {n / (t->M * t->M), H4};
        vshape(w, o, "shape", 2, d);
        o = lay(w, "LayerNorm", nn_);
        int64_t ns4[1] = {H4};
        vshape(w, o, "normalized_shape", 1, ns4);
        vnum(w, o, "eps", 1e-6);
        vlinear(w, f1, NULL, H4, H4, true);
        o = lay(w, "GELU", ga);
        vstr(w, o, "approximate", "none");
        vlinear(w, f2, NULL, H4, t->out, true);
    }
    /* the merger */
    o = lay(w, "LayerNorm", "visual.merger.norm");
    vins(w, o, prev, NULL);
    int64_t ns[1] = {C};
    vshape(w, o, "normalized_shape", 1, ns);
    vnum(w, o, "eps", 1e-6);
    o = lay(w, "Reshape", "visual.merger.view");
    int64_t d[2] = {n / (t->M * t->M), H4};
    vshape(w, o, "shape", 2, d);
    vlinear(w, "visual.merger.linear_fc1", NULL, H4, H4, true);
    o = lay(w, "GELU", "visual.merger.act_fn");
    vstr(w, o, "approximate", "none");
    vlinear(w, "visual.merger.linear_fc2", NULL, H4, t->out, true);
    o = lay(w, "VisionOutputs", "visual.outputs");
    if (o) {
        cJSON *arr = cJSON_CreateArray();
        char f2[96];
        bool ok = arr && cJSON_AddItemToArray(arr, cJSON_CreateString("pixel_values")) &&
                  cJSON_AddItemToArray(arr, cJSON_CreateString(prev)) &&
                  cJSON_AddItemToArray(arr, cJSON_CreateString("visual.merger.linear_fc2"));
        for (int64_t k = 0; ok && k < t->ndeep; k++) {
            snprintf(f2, sizeof f2, "visual.deepstack_merger_list.%lld.linear_fc2", (long long)k);
            ok = cJSON_AddItemToArray(arr, cJSON_CreateString(f2));
        }
        ok = ok && cJSON_AddItemToArray(arr, cJSON_CreateString("input")); /* the token ids: the 3-D positions' length */
        if (!ok || !cJSON_AddItemToObject(o, "inputs", arr)) { /* not attached: ours to free */
            cJSON_Delete(arr);
            w->r->oom = true;
        }
    }
    if (keep_last) vflag(w, o, "keep_last", true); /* Qwen3_5Model.forward's image_outputs */
    return "visual.outputs";
}

/* vision_config.KEY, a bool: def when absent or null, else true or false (hf_glm4v.c, hf_internvl.c) */
int vc__hf_vision_bool(rd *r, const cJSON *v, const char *key, bool def, bool *out)
{
    const cJSON *x = v ? cJSON_GetObjectItemCaseSensitive(v, key) : NULL;
    *out = def;
    if (!x || cJSON_IsNull(x)) return 0;
    char path[64];
    snprintf(path, sizeof path, "vision_config.%.40s", key);
    if (!cJSON_IsBool(x)) return vc__hf_bad(r, path, "expected true or false");
    *out = cJSON_IsTrue(x);
    return 0;
}

/* InternVL (internvl, hf_internvl.c) with images: InternVLModel.get_image_features (modeling_internvl.py @ 2fd44548) on
 * the processor's tiles, one batch ([tiles, C, S, S] in the model's dtype: get_image_features has no cast), frozen and
 * run without autograd:
 *  - InternVLVisionEmbeddings.forward: patch_embeddings.projection (an nn.Conv2d with kernel = stride = patch: one
 *    Linear over each patch's values, the same weights and output), flatten(2).transpose(1, 2) (views),
 *    cls_token.expand(tiles, -1, -1) and torch.cat((cls_tokens, embeddings), dim=1) (a new tensor: the Cat of tiles
 *    class rows and the patches' rows, the same size), + position_embeddings (interpolate_pos_encoding returns the
 *    parameter itself at the config's square size; broadcast over the tiles), dropout p 0 (the identity);
 *  - InternVLVisionLayer x num_hidden_layers: layernorm_before (nn.LayerNorm, or InternVLVisionRMSNorm), attention
 *    (q_proj / k_proj / v_proj, q_norm / k_norm InternVLVisionRMSNorm over the hidden size with use_qk_norm, reshape +
 *    transpose, sdpa without a mask, not causal, its transpose + contiguous, reshape, projection_layer), lambda_1 *
 *    (a new tensor), + hidden_states, layernorm_after, mlp (fc1, ACT2FN[hidden_act], fc2), lambda_2 *, + the first
 *    sum; the tiles are sdpa's batch: one sample's tiles x heads heads over a tile's patches + 1 rows, as write_siglip;
 *  - InternVLVisionModel.layernorm (nn.Identity with use_mean_pooling);
 *  - vision_features[:, 1:, :] (a view), reshape(tiles, side, side, C) (a copy: written as one for one tile too,
 *    where it is a view: side^2 x C elements), pixel_shuffle (view, permute + contiguous, view, permute +
 *    contiguous: two copies), reshape (a view); InternVLMultiModalProjector (layer_norm, linear_1, GELU, linear_2). */
static const char *write_internvl(vw *w, const hf_vision *t)
{
    const int64_t C = t->C, NH = t->NH, D = t->C / t->NH, side = t->img / t->P, np = side * side, tiles = t->tiles;
    const int64_t n = tiles * (np + 1), pd = t->cin * t->P * t->P, k = t->M, q = side / k;
    cJSON *o = lay(w, "PixelValues", "pixel_values");
    vnum(w, o, "num_patches", (double)(tiles * np));
    vnum(w, o, "patch_dim", (double)pd);
    vflag(w, o, "model_dtype", true);
    o = vlinear(w, "model.vision_tower.embeddings.patch_embeddings.projection", "pixel_values", pd, C, true);
    vflag(w, o, "quantizable", false); /* an nn.Conv2d: bitsandbytes leaves it */
    int64_t d2[2] = {1, C}, d3[3] = {1, np + 1, C};
    vshape(w, lay(w, "Parameter", "model.vision_tower.embeddings.cls_token"), "shape", 2, d2);
    if (t->iv.mask) vweights(w, "model.vision_tower.embeddings.mask_token", C, 0, false, false); /* unused without bool_masked_pos */
    o = lay(w, "Cat", "model.vision_tower.embeddings.cat");
    cJSON *in = o ? cJSON_AddArrayToObject(o, "inputs") : NULL;
    for (int64_t i = 0; in && i <= tiles; i++) {
        cJSON *x = cJSON_CreateString(i < tiles ? "model.vision_tower.embeddings.cls_token"
                                                : "model.vision_tower.embeddings.patch_embeddings.projection");
        if (!x || !cJSON_AddItemToArray(in, x)) {
            cJSON_Delete(x);
            w->r->oom = true;
        }
    }
    if (o && !in) w->r->oom = true;
    vnum(w, o, "dim", 1);
    const char *emb = "model.vision_tower.embeddings.cat";
    if (t->iv.abs_pos) { /* [tiles, patches + 1, C] + position_embeddings [1, patches + 1, C] */
        int64_t t3[3] = {tiles, np + 1, C};
        vshape(w, lay(w, "Reshape", "model.vision_tower.embeddings.tiles"), "shape", 3, t3);
        vshape(w, lay(w, "Parameter", "model.vision_tower.embeddings.position_embeddings"), "shape", 3, d3);
        vins(w, lay(w, "Add", "model.vision_tower.embeddings.add"), "model.vision_tower.embeddings.tiles",
             "model.vision_tower.embeddings.position_embeddings");
        int64_t f2[2] = {n, C};
        vshape(w, lay(w, "Reshape", "model.vision_tower.embeddings"), "shape", 2, f2);
        emb = "model.vision_tower.embeddings";
    }
    cJSON *seq = lay(w, "Sequential", "model.vision_tower.encoder.layer");
    vins(w, seq, emb, NULL);
    if (t->depth > 1) vnum(w, seq, "repeat", (double)t->depth);
    cJSON *inner = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!inner) {
        w->r->oom = true;
        return NULL;
    }
    vw b = {w->r, inner};
    if (t->iv.rms) vrms(&b, "layernorm_before", NULL, C);
    else vln(&b, "layernorm_before", NULL, C);
    const char *qkv[3] = {"attention.q_proj", "attention.k_proj", "attention.v_proj"};
    for (int i = 0; i < 3; i++) vlinear(&b, qkv[i], "layernorm_before", C, C, t->iv.bias);
    if (t->iv.qk) {
        vrms(&b, "attention.q_norm", "attention.q_proj", C);
        vrms(&b, "attention.k_norm", "attention.k_proj", C);
        qkv[0] = "attention.q_norm";
        qkv[1] = "attention.k_norm";
    }
    tiled_sdpa(&b, "attention", qkv, n, tiles, NH, D); /* n = tiles x (patches + 1) */
    vlinear(&b, "attention.projection_layer", NULL, C, C, true);
    vshape(&b, lay(&b, "Parameter", "lambda_1"), "shape", 2, d2);
    vins(&b, lay(&b, "Mul", "lambda_1.mul"), "attention.projection_layer", "lambda_1");
    vins(&b, lay(&b, "Add", "attention_residual"), "lambda_1.mul", "input");
    if (t->iv.rms) vrms(&b, "layernorm_after", NULL, C);
    else vln(&b, "layernorm_after", NULL, C);
    vlinear(&b, "mlp.fc1", NULL, C, t->I, true);
    vact(&b, t->act, "mlp.activation_fn");
    vlinear(&b, "mlp.fc2", NULL, t->I, C, true);
    vshape(&b, lay(&b, "Parameter", "lambda_2"), "shape", 2, d2);
    vins(&b, lay(&b, "Mul", "lambda_2.mul"), "mlp.fc2", "lambda_2");
    vins(&b, lay(&b, "Add", "output_residual"), "lambda_2.mul", "attention_residual");
    if (t->iv.final_ln) vln(w, "model.vision_tower.layernorm", NULL, C);
    o = lay(w, "Slice", "model.vision_features"); /* vision_features[:, 1:, :]: the tiles' patch rows */
    vnum(w, o, "dim", 1);
    vnum(w, o, "start", (double)tiles);
    /* reshape(tiles, side, side, C), pixel_shuffle's view(tiles, side, side / k, C k) */
    int64_t d4[4] = {tiles, side, q, C * k}, p5[5] = {0, 1, 3, 2, 4}, r4[4] = {tiles, q, q, C * k * k};
    vshape(w, lay(w, "Reshape", "model.pixel_shuffle.view"), "shape", 4, d4);
    vshape(w, lay(w, "Permute", "model.pixel_shuffle.permute"), "dims", 5, p5);
    vshape(w, lay(w, "Reshape", "model.pixel_shuffle.view2"), "shape", 4, r4); /* .contiguous().view(...): a copy */
    vshape(w, lay(w, "Permute", "model.pixel_shuffle.permute2"), "dims", 5, p5);
    int64_t f2[2] = {tiles * q * q, C * k * k};
    vshape(w, lay(w, "Reshape", "model.pixel_shuffle.reshape"), "shape", 2, f2); /* .contiguous(), reshape: a copy */
    vln(w, "model.multi_modal_projector.layer_norm", NULL, C * k * k);
    vlinear(w, "model.multi_modal_projector.linear_1", NULL, C * k * k, t->out, true);
    o = lay(w, "GELU", "model.multi_modal_projector.act");
    vstr(w, o, "approximate", "none");
    vlinear(w, "model.multi_modal_projector.linear_2", NULL, t->out, t->out, true);
    return "model.multi_modal_projector.linear_2";
}

/* Glm4vVisionModel.forward (models/glm4v/modeling_glm4v.py @ 03eac6f6d2af7e8562113f0b78d3d2d59a7d843d) on the
 * processor's pixel_values (hf_glm4v.c glm4v_images), frozen and run without autograd (nothing saved). It shares
 * write_qwen3_tower's pieces where the statements are the same and differs in:
 *  - Glm4vModel.get_image_features: pixel_values.type(self.visual.dtype), its local (a copy unless float32);
 *    patch_embed (Glm4vVisionPatchEmbed: view(-1, C, T, P, P), .to(proj.weight.dtype), Conv3d kernel = stride with a
 *    bias, view(-1, hidden): one Linear over each patch's values), then post_conv_layernorm (Glm4vRMSNorm, eps
 *    rms_norm_eps 1e-5, Glm4vVisionConfig's default);
 *  - rot_pos_emb (Glm4vVisionRotaryEmbedding(head_dim // 2): the same tables as Qwen3-VL's, VisionRotary) and
 *    position_embeddings = (emb.cos(), emb.sin()), locals of forward until it returns (its pos_ids, image_type_ids,
 *    [n, 2] int64, not counted);
 *  - embeddings (Glm4vVisionEmbeddings: the bicubic grid_sample of the position table, VisionPosInterp,
 *    layers/vision.c);
 *  - the blocks (Glm4vVisionBlock): x + attn(norm1(x)), x + mlp(norm2(x)); Glm4vRMSNorm; attn: qkv
 *    (bias=attention_bias), the float32 rotary and sdpa per image (lengths from cu_seqlens, torch.split, cat: the
 *    statements VisionAttention models), proj without bias; mlp: Glm4VisionMlp(bias=False),
 *    down_proj(act_fn(gate_proj(x)) * up_proj(x)) of out_hidden_size;
 *  - post_layernorm, view(-1, merge, merge, hidden).permute(0, 3, 1, 2) (views), downsample (nn.Conv2d kernel =
 *    stride = merge with its bias: one Linear over each merged patch's hidden x merge^2 values), view(-1,
 *    out_hidden_size);
 *  - merger (Glm4vVisionPatchMerger): proj, act1 (nn.GELU) of post_projection_norm (nn.LayerNorm(dim), eps 1e-5),
 *    down_proj(act_fn(gate_proj(x)) * up_proj(x));
 *  - Glm4vModel.forward: torch.cat of get_image_features' split (a copy), masked_scatter into inputs_embeds, and
 *    get_rope_index's position_ids (torch.ones(3, B, L) int64) kept until it returns (VisionOutputs). */
static void grms(vw *w, const char *name, const char *in, int64_t width)
{
    cJSON *o = lay(w, "HFRMSNorm", name);
    if (in) vins(w, o, in, NULL);
    vnum(w, o, "hidden_size", (double)width);
    vnum(w, o, "eps", 1e-5); /* Glm4vRMSNorm(hidden_size, eps=config.rms_norm_eps) */
}
static void gswiglu(vw *w, const char *pre, const char *in, int64_t nin, int64_t mid, int act)
{
    char g[96], a[96], u[96], m[96], d[96];
    snprintf(g, sizeof g, "%sgate_proj", pre);
    snprintf(a, sizeof a, "%sact_fn", pre);
    snprintf(u, sizeof u, "%sup_proj", pre);
    snprintf(m, sizeof m, "%smul", pre);
    snprintf(d, sizeof d, "%sdown_proj", pre);
    vlinear(w, g, NULL, nin, mid, false);
    vact(w, act, a);
    vlinear(w, u, in, nin, mid, false);
    vins(w, lay(w, "Mul", m), a, u);
    vlinear(w, d, NULL, mid, nin, false);
}
static const char *write_glm4v_tower(vw *w, const hf_vision *t)
{
    const int64_t C = t->C, NH = t->NH, D = t->C / t->NH, n = t->patches, pd = t->cin * t->T * t->P * t->P;
    const int64_t gh = t->h / t->P, gw = t->w / t->P, side = t->img / t->P, O = t->out, M2 = t->M * t->M;
    cJSON *o = lay(w, "PixelValues", "pixel_values");
    vnum(w, o, "num_patches", (double)n);
    vnum(w, o, "patch_dim", (double)pd);
    vflag(w, o, "local_cast", true); /* get_image_features' local: read by VisionOutputs, dead after the tower */
    o = vlinear(w, "model.visual.patch_embed.proj", "pixel_values", pd, C, true);
    vflag(w, o, "quantizable", false); /* an nn.Conv3d: bitsandbytes leaves it */
    grms(w, "model.visual.post_conv_layernorm", NULL, C);
    o = lay(w, "VisionRotary", "model.visual.rotary_pos_emb");
    vnum(w, o, "num_patches", (double)n);
    vnum(w, o, "head_dim", (double)D);
    vnum(w, o, "max_grid", (double)(gh > gw ? gh : gw));
    vstr(w, o, "held_until", "model.visual.merger.down_proj"); /* position_embeddings: a local of forward */
    o = lay(w, "VisionPosInterp", "model.visual.embeddings");
    vins(w, o, "model.visual.post_conv_layernorm", NULL);
    vnum(w, o, "num_embeddings", (double)(side * side));
    cJSON *seq = lay(w, "Sequential", "model.visual.blocks");
    vins(w, seq, "model.visual.embeddings", NULL);
    if (t->depth > 1) {
        vnum(w, seq, "repeat", (double)t->depth);
        vflag(w, seq, "loop", true); /* for blk in self.blocks: hidden_states = blk(...) */
    }
    cJSON *inner = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!inner) {
        w->r->oom = true;
        return NULL;
    }
    vw b = {w->r, inner};
    grms(&b, "norm1", NULL, C);
    vstr(&b, cJSON_GetArrayItem(inner, cJSON_GetArraySize(inner) - 1), "held_until", "attn.proj");
    vlinear(&b, "attn.qkv", NULL, C, 3 * C, t->qkv_bias);
    o = lay(&b, "VisionAttention", "attn.attention");
    vins(&b, o, "attn.qkv", "model.visual.rotary_pos_emb");
    vnum(&b, o, "num_heads", (double)NH);
    vnum(&b, o, "head_dim", (double)D);
    vnum(&b, o, "images", (double)t->images);
    vlinear(&b, "attn.proj", NULL, C, C, false);
    vins(&b, lay(&b, "Add", "attn_residual"), "input", "attn.proj");
    grms(&b, "norm2", NULL, C);
    gswiglu(&b, "mlp.", "norm2", C, O, t->act);
    vins(&b, lay(&b, "Add", "mlp_residual"), "attn_residual", "mlp.down_proj");
    grms(w, "model.visual.post_layernorm", "model.visual.blocks", C);
    o = lay(w, "Reshape", "model.visual.downsample.view");
    int64_t d[2] = {n / M2, C * M2};
    vshape(w, o, "shape", 2, d);
    o = vlinear(w, "model.visual.downsample", NULL, C * M2, O, true);
    vflag(w, o, "quantizable", false); /* an nn.Conv2d */
    vlinear(w, "model.visual.merger.proj", NULL, O, O, false);
    o = lay(w, "LayerNorm", "model.visual.merger.post_projection_norm");
    int64_t ns[1] = {O};
    vshape(w, o, "normalized_shape", 1, ns);
    vnum(w, o, "eps", 1e-5);
    o = lay(w, "GELU", "model.visual.merger.act1");
    vstr(w, o, "approximate", "none");
    gswiglu(w, "model.visual.merger.", "model.visual.merger.act1", O, t->I, t->act);
    o = lay(w, "VisionOutputs", "model.visual.outputs");
    if (o) {
        const char *in[4] = {"pixel_values", "model.visual.blocks", "model.visual.merger.down_proj", "input"};
        cJSON *arr = cJSON_CreateStringArray(in, 4);
        if (!arr || !cJSON_AddItemToObject(o, "inputs", arr)) {
            cJSON_Delete(arr);
            w->r->oom = true;
        }
    }
    return "model.visual.outputs";
}

const char *vc__hf_vision_write(rd *r, cJSON *arr, const arch *a)
{
    const hf_vision *t = &a->vis;
    vw w = {r, arr};
    if (!a->f->vision) return NULL;
    if (a->f->vision == VIS_PIXTRAL) return vc__hf_pixtral_write(r, arr, a); /* mistral3 (hf_pixtral.c) */
    if (a->f->vision == VIS_INTERNVL) { /* internvl (hf_internvl.c): the weights, or the tower run on the tiles */
        if (t->patches > 0) return write_internvl(&w, t);
        vc__hf_internvl_write(r, arr, a);
        return NULL;
    }
    if (a->f->vision == VIS_IDEFICS3) { /* smolvlm, idefics3 (hf_idefics3.c): the weights, or the tower run on tiles */
        if (t->patches > 0) return write_siglip(&w, t, SIG_IDEFICS3);
        vc__hf_idefics3_write(r, arr, a);
        return NULL;
    }
    if (a->f->vision == VIS_GLM4V) { /* glm4v: the tower run on the images (above), or the weights only (hf_glm4v.c) */
        if (t->patches > 0) return write_glm4v_tower(&w, t);
        vc__hf_glm4v_write(r, arr, a);
        return NULL;
    }
    if (t->patches == 0) {
        if (a->f->vision == VIS_SIGLIP || a->f->vision == VIS_PALIGEMMA) write_siglip_weights(&w, t, a->f->vision == VIS_PALIGEMMA);
        else if (a->f->vision == VIS_QWEN3_5) write_qwen3_5_weights(&w, t);
        else if (a->f->vision == VIS_QWEN3) write_qwen3_weights(&w, t);
        else if (a->f->vision == VIS_QWEN2) write_qwen2_weights(&w, t);
        else write_weights(&w, t);
        return NULL;
    }
    if (a->f->vision == VIS_SIGLIP || a->f->vision == VIS_PALIGEMMA)
        return write_siglip(&w, t, a->f->vision == VIS_PALIGEMMA ? SIG_PALI : SIG_GEMMA3);
    if (a->f->vision == VIS_QWEN3 || a->f->vision == VIS_QWEN3_5) return write_qwen3_tower(&w, t, a->f->vision == VIS_QWEN3_5);
    /* Qwen2-VL (Qwen2VisionTransformerPretrainedModel.forward, modeling_qwen2_vl.py @ efa7189c) runs as Qwen2.5-VL's
     * tower below with every block attending within each image's cu_seqlens (no windows: the same sdpa bool mask
     * over the sample's patches), Qwen2VLVisionBlock's norms nn.LayerNorm(embed_dim, eps=1e-6), its VisionMlp
     * fc2(act(fc1(x))), and PatchMerger's ln_q an nn.LayerNorm */
    const bool q2 = a->f->vision == VIS_QWEN2;
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
    /* for layer_num, blk in enumerate(self.blocks): hidden_states = blk(...) (Qwen2_5_VisionTransformer
     * PretrainedModel.forward @ efa7189c): each block's input dies as the name rebinds */
    if (t->depth > 1) vflag(&w, seq, "loop", true);
    cJSON *inner = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!inner) {
        r->oom = true;
        return NULL;
    }
    vw b = {r, inner};
    vnorm(&b, q2, "norm1", C);
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
    vnorm(&b, q2, "norm2", C);
    if (q2) {
        vlinear(&b, "mlp.fc1", NULL, C, t->I, true);
        vact(&b, t->act, "mlp.act");
        vlinear(&b, "mlp.fc2", NULL, t->I, C, true);
    } else {
        vlinear(&b, "mlp.gate_proj", NULL, C, t->I, true);
        vact(&b, t->act, "mlp.act_fn");
        vlinear(&b, "mlp.up_proj", "norm2", C, t->I, true);
        vins(&b, lay(&b, "Mul", "mlp.mul"), "mlp.act_fn", "mlp.up_proj");
        vlinear(&b, "mlp.down_proj", NULL, t->I, C, true);
    }
    vins(&b, lay(&b, "Add", "mlp_residual"), "attn_residual", q2 ? "mlp.fc2" : "mlp.down_proj");
    /* the merger: ln_q, view(-1, C * merge^2), mlp */
    vnorm(&w, q2, "visual.merger.ln_q", C);
    o = lay(&w, "Reshape", "visual.merger.view");
    int64_t d[2] = {n / (t->M * t->M), H4};
    vshape(&w, o, "shape", 2, d);
    vlinear(&w, "visual.merger.mlp.0", NULL, H4, H4, true);
    o = lay(&w, "GELU", "visual.merger.mlp.1");
    vstr(&w, o, "approximate", "none");
    vlinear(&w, "visual.merger.mlp.2", NULL, H4, t->out, true);
    return "visual.merger.mlp.2";
}

/* --serve (src/engine/serve_mm.c vc__serve_mm): the largest image vLLM's dummy inputs give a Qwen tower
 * and its tokens. vllm-project/vllm @ 002d181a55a03803d7d69547846630069d2378b8,
 * vllm/model_executor/models/qwen2_vl.py Qwen2VLProcessingInfo.get_image_size_with_most_features:
 * _get_vision_info(image_width = image_height = 9999999, num_frames 1) through smart_resize(factor =
 * patch_size x spatial_merge_size, the image processor's min_pixels / max_pixels), grid_t 1, the tokens
 * grid_h x grid_w / merge^2 (get_max_image_tokens); Qwen3VLProcessingInfo (qwen3_vl.py @ 4f5768c7) the
 * same with the processor's size (shortest_edge, longest_edge). The processor's values are the published
 * checkpoints' preprocessor_config.json (the macros above): vramcalc reads config.json only. */
int64_t vc__hf_vision_max_image(bool qwen3, int64_t patch, int64_t merge, int64_t *w, int64_t *h)
{
    smart_resize(9999999, 9999999, patch * merge, qwen3 ? QWEN3_MIN_PIXELS : QWEN_MIN_PIXELS,
                 qwen3 ? QWEN3_MAX_PIXELS : QWEN_MAX_PIXELS, h, w);
    return (*h / patch) * (*w / patch) / (merge * merge);
}
