/*
 * vision.c — what a vision-language model's tower reads (issue 31 item 4):
 * PixelValues, the processor's pixel_values (or the tower's 2-D position ids)
 * made inside the model, so that a config.json's model keeps its one input,
 * the token ids (src/hf/hf_vision.c writes the tower after it); and
 * VisionWeights, a module's weights loaded and not run (the tower of a run
 * without images).
 */
#include "layer.h"
#include "ops.h"

typedef struct {
    int64_t n, dim; /* patches per sample, values per patch */
    bool positions; /* the int64 position ids [n] instead */
    bool local_cast; /* the cast copy a temporary of the first layer's call (SigLIP), not kept to the forward's end */
    bool model_dtype; /* the batch in the model's dtype, its copy the first layer's argument (SmolVLM, below) */
} pix_cfg;

static int pix_parse(vc_args *a, void *p)
{
    pix_cfg *c = p;
    if (vc_arg_int(a, "num_patches", VC_REQUIRED, 1, &c->n) || vc_arg_bool(a, "positions", false, &c->positions) ||
        vc_arg_bool(a, "local_cast", false, &c->local_cast) || vc_arg_bool(a, "model_dtype", false, &c->model_dtype))
        return -1;
    if (c->model_dtype && (c->positions || c->local_cast))
        return vc_arg_fail(a, "model_dtype", "is the pixel values' own batch (no \"positions\" or \"local_cast\")");
    return vc_arg_int(a, "patch_dim", c->positions ? 1 : VC_REQUIRED, 1, &c->dim);
}

static int pix_setup(vc_setup *s, void *p)
{
    const pix_cfg *c = p;
    int64_t d[2] = {c->n, c->dim}, t;
    if (vc_mul(s, c->n, c->dim, &t)) return -1;
    if (t > (INT64_C(1) << 48)) return vc_fail(s, "num_patches", "the patches have more than 2^48 values per sample");
    s->out = vc_shape_make(c->positions ? 1 : 2, d);
    s->out_dt = c->positions ? VC_DT_I64 : VC_DT_FLOAT;
    return 0;
}

/* Qwen2VLImageProcessor returns pixel_values [patches, C * T * P * P] float32
 * (image_processing_qwen2_vl.py @ cb0fc56f _preprocess); Qwen2_5_VLModel
 * casts them to the tower's dtype (pixel_values.type(self.visual.dtype)), a
 * copy unless float32, held by the forward (rebinding its argument) until it
 * returns. The batch is made before the step and held by the
 * training loop through it (as the token ids are): held here, never released.
 * The position ids: rot_pos_emb's pos_ids, int64. */
static void pix_emit(vc_build *b, const void *p)
{
    const pix_cfg *c = p;
    if (c->positions) {
        vc_set_output(b, vc__op_new(b, "pos_ids", vc_n_sample(c->n), VC_DT_I64));
        return;
    }
    if (c->model_dtype) {
        /* model_dtype: SmolVLMModel.get_image_features (modeling_smolvlm.py @ b282e23b) has no cast: the caller passes
         * pixel_values in the model's dtype, held through the step; pixel_values[real_images_inds].contiguous() a
         * copy, the patch embedding's argument (dead when that layer's call returns: the function's local to the
         * tower's end is not modelled) */
        vc_t x = vc__op_new(b, "pixel_values", vc_n_sample(c->n * c->dim), vc_param_dt(b));
        vc_persist(b, x);
        vc_set_output(b, vc__op_fresh(b, "index", x, vc_n_sample(c->n * c->dim)));
        return;
    }
    vc_t x = vc__op_new(b, "pixel_values", vc_n_sample(c->n * c->dim), VC_DT_F32);
    vc_persist(b, x); /* the batch the loop holds (Trainer's inputs, like input_ids): alive through the step */
    vc_t y = vc__op_cast(b, x, vc_param_dt(b));
    /* Qwen2_5_VLForConditionalGeneration.forward rebinds its argument to the copy: alive until the
     * forward returns, after the language model and the loss */
    if (y != x && !c->local_cast) vc_keep_forward(b, y);
    /* local_cast: SiglipVisionEmbeddings.forward (modeling_siglip.py @ efa7189c) calls
     * self.patch_embedding(pixel_values.to(dtype=target_dtype)): the copy dies when the call returns */
    vc_set_output(b, y);
}

const vc_kind vc_kind_PixelValues = {
    .name = "PixelValues", .summary = "a VLM processor's pixel_values [patches, values] (or position ids [patches])",
    .min_inputs = 0, .max_inputs = 0, .flags = VC_KIND_NO_INPUT, .cfg_size = sizeof(pix_cfg),
    .parse = pix_parse, .setup = pix_setup, .emit = pix_emit,
};

/* ---- VisionWeights: a module's weight (and bias) loaded and never run: the
 * vision tower when no image is given (transformers loads every weight of the
 * checkpoint; the tower's forward only runs on pixel_values). An nn.Linear's
 * weight (2-D, "linear") is what a quantized storage format replaces
 * (bitsandbytes quantizes every nn.Linear but the output embeddings); the
 * output is an expand view of the weight, no memory. */

typedef struct {
    int64_t shape[2];
    int nd;
    bool bias, linear;
} vw_cfg;

static int vw_parse(vc_args *a, void *p)
{
    vw_cfg *c = p;
    if (vc_arg_list(a, "shape", true, 1, c->shape, &c->nd)) return -1;
    if (c->nd > 2) return vc_arg_fail(a, "shape", "expected [out, in] or [n], got %d dimensions", c->nd);
    return vc_arg_bool(a, "bias", false, &c->bias) || vc_arg_bool(a, "linear", c->nd == 2, &c->linear);
}

static int vw_setup(vc_setup *s, void *p)
{
    const vw_cfg *c = p;
    int64_t n;
    if (c->nd == 2 && vc_mul(s, c->shape[0], c->shape[1], &n)) return -1;
    s->out = vc_shape_make(c->nd, c->shape);
    if (vc_param_shape(s, "weight", c->nd, c->shape, c->linear && c->nd == 2 ? VC_PARAM_LINEAR : 0)) return -1;
    return c->bias ? vc_param(s, "bias", c->shape[0]) : 0;
}

static void vw_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_op *o = vc_op_begin(b, "expand");
    int i = vc_op_in(o, vc_weight(b, 0));
    vc_t y = vc_op_out_view(o, i, vc_n_sample(vc_shape_numel(vc_output_shape(b))), false);
    vc_op_end(o);
    vc_set_output(b, y);
}

const vc_kind vc_kind_VisionWeights = {
    .ops = 1,
    .name = "VisionWeights", .summary = "a module's weight and bias loaded and not run (a VLM's tower without images)",
    .min_inputs = 0, .max_inputs = 0, .flags = VC_KIND_NO_INPUT, .cfg_size = sizeof(vw_cfg),
    .parse = vw_parse, .setup = vw_setup, .emit = vw_emit,
};

/* ---- The Qwen3-VL / Qwen3.5 vision tower's pieces (src/hf/hf_vision.c writes
 * them, frozen: the tower runs with no autograd graph). Read at
 * huggingface/transformers 00709b862bb8f14a5435bb7195592579168496e4 (Qwen3-VL)
 * and 68a7b7e272a36928120316249af3ee3cac595818 (the classes Qwen3.5's tower
 * inherits, modular_qwen3_5.py @ 8940358af7421e958995b05136ca14ce54bef39c),
 * models/qwen3_vl/modeling_qwen3_vl.py. Sizes are per sample: `images` images of
 * num_patches / images patches each (one size for every image). */

/* VisionPosEmbed: Qwen3VLVisionModel.fast_pos_embed_interpolate(grid_thw), the learned
 * pos_embed (nn.Embedding(num_position_embeddings, hidden)) read bilinearly on the
 * int(sqrt(num_position_embeddings)) grid at each image's grid_h x grid_w:
 *   idx_tensor = torch.tensor(idx_list) [4, n] int64, weight_tensor [4, n] in pos_embed's dtype;
 *   pos_embeds = self.pos_embed(idx_tensor) * weight_tensor[:, :, None]   ([4, n, C], the gather
 *     a temporary; the product a local until the function returns);
 *   patch_pos_embeds = pos_embeds[0] + pos_embeds[1] + pos_embeds[2] + pos_embeds[3]  (two
 *     temporaries, the sum [n, C]), .split(h * w per image) (views);
 *   per image: pos_embed.repeat(t, 1) (a copy, t = 1), .view(...).permute(0, 1, 3, 2, 4, 5)
 *     .flatten(0, 4) (a copy of the permuted view; the repeat freed as the loop variable rebinds),
 *     appended to patch_pos_embeds_permute (a local until the return, as the loop variable);
 *   torch.cat(patch_pos_embeds_permute) [n, C]: the result (the sum freed as the name rebinds). */
#define VPE_MAX_IMAGES 64 /* images per sample */
typedef struct {
    int64_t npos, dim, n, images;
} vpe_cfg;

static int vpe_parse(vc_args *a, void *p)
{
    vpe_cfg *c = p;
    return vc_arg_int(a, "num_embeddings", VC_REQUIRED, 1, &c->npos) ||
           vc_arg_int(a, "embedding_dim", VC_REQUIRED, 1, &c->dim) || vc_arg_int(a, "num_patches", VC_REQUIRED, 1, &c->n) ||
           vc_arg_int(a, "images", 1, 1, &c->images);
}

static int vpe_setup(vc_setup *s, void *p)
{
    const vpe_cfg *c = p;
    int64_t t, d[2] = {c->n, c->dim};
    if (c->images > VPE_MAX_IMAGES)
        return vc_fail(s, "images", "%lld images per sample: more than the %d modelled", (long long)c->images, VPE_MAX_IMAGES);
    if (c->n % c->images) return vc_fail(s, "num_patches", "%lld patches are not %lld images of one size", (long long)c->n,
                                         (long long)c->images);
    if (vc_mul(s, c->n, c->dim, &t) || vc_mul(s, t, 4, &t)) return -1;
    if (t > (INT64_C(1) << 48)) return vc_fail(s, "num_patches", "the interpolated embeddings have more than 2^48 values");
    int64_t w[2] = {c->npos, c->dim};
    if (vc_param_shape(s, "weight", 2, w, 0)) return -1;
    s->out = vc_shape_make(2, d);
    s->ops = (int)(8 + 2 * c->images); /* 2 tensors, embedding, mul, 3 adds, 2 per image, cat */
    return 0;
}

static void vpe_emit(vc_build *b, const void *p)
{
    const vpe_cfg *c = p;
    const vc_dtype dt = vc_dt_of(b, vc_weight(b, 0));
    const int64_t n = c->n, C = c->dim, ni = c->n / c->images;
    vc_t idx = vc__op_new(b, "tensor", vc_n_sample(4 * n), VC_DT_I64);
    vc_t wts = vc__op_new(b, "tensor", vc_n_sample(4 * n), dt);
    vc_t g = vc__op_nograd(b, "embedding", vc_weight(b, 0), idx, vc_n_sample(4 * n * C), dt);
    vc_t pe = vc__op_nograd(b, "mul", g, wts, vc_n_sample(4 * n * C), dt);
    vc_t s = vc__op_nograd(b, "add", pe, -1, vc_n_sample(n * C), dt);
    for (int i = 0; i < 2; i++) {
        vc_t s2 = vc__op_nograd(b, "add", s, pe, vc_n_sample(n * C), dt);
        vc_release(b, s);
        s = s2;
    }
    vc_hold(b, s);
    vc_t parts[VPE_MAX_IMAGES];
    for (int64_t i = 0; i < c->images; i++) {
        vc_t rep = vc__op_nograd(b, "repeat", s, -1, vc_n_sample(ni * C), dt);
        parts[i] = vc__op_nograd(b, "reshape", rep, -1, vc_n_sample(ni * C), dt);
        vc_hold(b, parts[i]); /* in patch_pos_embeds_permute until the return */
    }
    vc_t out = vc__op_nograd(b, "cat", s, -1, vc_n_sample(n * C), dt);
    vc_release(b, s);
    /* the function's locals, freed as it returns: the list's copies, the products, the index and weights */
    for (int64_t i = 0; i < c->images; i++) vc_release(b, parts[i]);
    vc_release(b, pe);
    vc_release(b, idx);
    vc_release(b, wts);
    vc_set_output(b, out);
}

const vc_kind vc_kind_VisionPosEmbed = {
    .ops = 10, /* one image; setup counts more */
    .name = "VisionPosEmbed", .summary = "Qwen3-VL's pos_embed interpolated to each image's patch grid [patches, hidden]",
    .min_inputs = 0, .max_inputs = 0, .flags = VC_KIND_NO_INPUT, .cfg_size = sizeof(vpe_cfg),
    .parse = vpe_parse, .setup = vpe_setup, .emit = vpe_emit,
};

/* VisionPosInterp: Glm4vVisionEmbeddings.forward(embeddings, lengths, image_shapes, h_coords, w_coords)
 * (models/glm4v/modeling_glm4v.py @ 03eac6f6d2af7e8562113f0b78d3d2d59a7d843d), the learned
 * position_embedding (nn.Embedding((image_size / patch_size)^2, hidden)) read by a bicubic grid_sample at each
 * patch's position:
 *   pos_embed_2d = weight.view(s, s, C).permute(2, 0, 1).unsqueeze(0).to(float32)  ([1, C, s, s]: a copy unless
 *     float32);
 *   target_h = torch.cat([image_shapes[i, 1].repeat(lengths[i]) ...]).to(float32) (the int64 cat a temporary; target_w
 *     likewise), h_coords / w_coords .to(float32) (copies of rot_pos_emb's int64 pos_ids columns) [n] each;
 *   norm_w = ((w_coords + 0.5) / target_w) * 2 - 1 (three temporaries; norm_h likewise) [n] each;
 *   grid = torch.stack((norm_w, norm_h), -1) [n, 2] (unsqueezed: views);
 *   F.grid_sample(pos_embed_2d, grid, bicubic) [1, C, n, 1] float32, squeezed and permuted (views), .to(weight dtype)
 *     (a copy unless float32);
 *   embeddings + adapted_pos_embed [n, C]: the result; every local above freed as the function returns (after the
 *     add), the argument with the caller's rebinding. */
typedef struct {
    int64_t npos;
} vpi_cfg;

static int vpi_parse(vc_args *a, void *p) { return vc_arg_int(a, "num_embeddings", VC_REQUIRED, 1, &((vpi_cfg *)p)->npos); }

static int vpi_setup(vc_setup *s, void *p)
{
    const vpi_cfg *c = p;
    if (s->nin != 1 || s->in[0].nd != 2) return vc_fail(s, "inputs", "VisionPosInterp takes the patch embeddings [patches, hidden]");
    const int64_t n = s->in[0].d[0], C = s->in[0].d[1];
    int64_t t;
    if (vc_mul(s, n, C, &t) || vc_mul(s, c->npos, C, &t)) return -1;
    int64_t w[2] = {c->npos, C};
    if (vc_param_shape(s, "weight", 2, w, 0)) return -1;
    s->out = s->in[0];
    s->ops = 20;
    return 0;
}

static void vpi_emit(vc_build *b, const void *p)
{
    const vpi_cfg *c = p;
    (void)c;
    const int64_t n = vc_input_shape(b, 0)->d[0], C = vc_input_shape(b, 0)->d[1];
    const vc_t wt = vc_weight(b, 0), x = vc_input(b, 0);
    const vc_dtype wdt = vc_dt_of(b, wt);
    vc_t pe = wdt == VC_DT_F32 ? -1 : vc__op_nograd(b, "_to_copy", wt, -1, vc_numel_of(b, wt), VC_DT_F32);
    vc_t loc[8];
    int nl = 0;
    for (int i = 0; i < 2; i++) { /* target_h, target_w */
        vc_t cat = vc__op_new(b, "cat", vc_n_sample(n), VC_DT_I64);
        loc[nl++] = vc__op_nograd(b, "_to_copy", cat, -1, vc_n_sample(n), VC_DT_F32);
        vc_release(b, cat);
    }
    for (int i = 0; i < 2; i++) loc[nl++] = vc__op_new(b, "_to_copy", vc_n_sample(n), VC_DT_F32); /* the coordinates */
    for (int i = 0; i < 2; i++) { /* norm_w, norm_h */
        vc_t y = vc__op_nograd(b, "add", loc[2 + i], -1, vc_n_sample(n), VC_DT_F32);
        for (int k = 0; k < 3; k++) {
            vc_t z = vc__op_nograd(b, k == 0 ? "div" : k == 1 ? "mul" : "sub", y, -1, vc_n_sample(n), VC_DT_F32);
            vc_release(b, y);
            y = z;
        }
        loc[nl++] = y;
    }
    vc_t grid = vc__op_nograd(b, "stack", loc[4], loc[5], vc_n_sample(2 * n), VC_DT_F32);
    vc_t gs = vc__op_nograd(b, "grid_sampler_2d", pe >= 0 ? pe : wt, grid, vc_n_sample(n * C), VC_DT_F32);
    const vc_dtype dt = vc_dt_of(b, x);
    vc_t ad = wdt == VC_DT_F32 ? gs : vc__op_nograd(b, "_to_copy", gs, -1, vc_n_sample(n * C), wdt);
    vc_t ad2 = wdt == dt ? ad : vc__op_nograd(b, "_to_copy", ad, -1, vc_n_sample(n * C), dt);
    vc_t y = vc__op_add(b, x, ad2, vc_n_sample(n * C), false); /* embeddings + adapted_pos_embed: AddBackward0 */
    /* the function's locals, freed as it returns */
    if (ad2 != ad) vc_release(b, ad2);
    if (ad != gs) vc_release(b, ad);
    vc_release(b, gs);
    vc_release(b, grid);
    for (int i = 0; i < nl; i++) vc_release(b, loc[i]);
    if (pe >= 0) vc_release(b, pe);
    vc_set_output(b, y);
}

const vc_kind vc_kind_VisionPosInterp = {
    .ops = 20,
    .name = "VisionPosInterp", .summary = "GLM-4.1V's position table grid_sample'd (bicubic) to each patch, added [patches, hidden]",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(vpi_cfg),
    .parse = vpi_parse, .setup = vpi_setup, .emit = vpi_emit,
};

/* VisionRotary: Qwen3VLVisionModel.rot_pos_emb(grid_thw) and what forward makes of it:
 *   freq_table = self.rotary_pos_emb(max_hw): Qwen3VLVisionRotaryEmbedding(head_dim // 2),
 *     torch.outer(arange(max_hw) float32, inv_freq [head_dim / 4]) -> [max_hw, head_dim / 4] float32;
 *   pos_ids = torch.empty((total_tokens, 2), dtype=torch.long) (its per-image aranges: a few
 *     rows' worth, not counted); embeddings = freq_table[pos_ids] [n, 2, head_dim / 4] float32,
 *     .flatten(1): rotary_pos_emb [n, head_dim / 2], a local of forward until it returns;
 *   emb = torch.cat((rotary_pos_emb, rotary_pos_emb), -1) [n, head_dim] (a local, likewise);
 *   position_embeddings = (emb.cos(), emb.sin()): float32 whatever the tower's dtype, read by
 *     every block. Output: cos and sin [2, n, head_dim] float32. */
typedef struct {
    int64_t n, D, max_hw;
} vro_cfg;

static int vro_parse(vc_args *a, void *p)
{
    vro_cfg *c = p;
    if (vc_arg_int(a, "num_patches", VC_REQUIRED, 1, &c->n) || vc_arg_int(a, "head_dim", VC_REQUIRED, 4, &c->D) ||
        vc_arg_int(a, "max_grid", VC_REQUIRED, 1, &c->max_hw))
        return -1;
    if (c->D % 4) return vc_arg_fail(a, "head_dim", "must be a multiple of 4 (a quarter per axis, twice), got %lld", (long long)c->D);
    return 0;
}

static int vro_setup(vc_setup *s, void *p)
{
    const vro_cfg *c = p;
    int64_t t, d[3] = {2, c->n, c->D};
    if (vc_mul(s, c->n, c->D, &t) || vc_mul(s, t, 2, &t) || vc_mul(s, c->max_hw, c->D, &t)) return -1;
    s->out = vc_shape_make(3, d);
    return vc_buffer(s, "inv_freq", c->D / 4, VC_DT_F32);
}

static void vro_emit(vc_build *b, const void *p)
{
    const vro_cfg *c = p;
    const int64_t n = c->n, D = c->D;
    /* position_embeddings' storage is made first and written last (the cos and sin are the last
     * allocations either way: the same peak), so that rotary_pos_emb and emb, forward's locals, live as
     * long as it (vc_keep_with takes an earlier owner): until the tower returns ("held_until" on this
     * layer, src/hf/hf_vision.c) */
    vc_t cs = vc__op_new(b, "empty", vc_n_sample(2 * n * D), VC_DT_F32);
    vc_t seq = vc__op_new(b, "arange", vc_n_fixed(c->max_hw), VC_DT_F32);
    vc_t ft = vc__op_nograd(b, "outer", seq, vc_buf(b, 0), vc_n_fixed(c->max_hw * (D / 4)), VC_DT_F32);
    vc_release(b, seq);
    vc_t pos = vc__op_new(b, "empty", vc_n_sample(2 * n), VC_DT_I64);
    vc_t r = vc__op_nograd(b, "index", ft, pos, vc_n_sample(n * (D / 2)), VC_DT_F32);
    vc_release(b, ft);
    vc_release(b, pos);
    vc_t emb = vc__op_nograd(b, "cat", r, -1, vc_n_sample(n * D), VC_DT_F32);
    vc_op *o = vc_op_begin(b, "cos+sin"); /* (emb.cos(), emb.sin()) into the storage made above */
    vc_op_in_nodiff(o, emb);
    vc_op_in_nodiff(o, cs);
    vc_op_end(o);
    vc_keep_with(b, r, cs); /* forward's locals, alive as long as position_embeddings */
    vc_keep_with(b, emb, cs);
    vc_set_output(b, cs);
}

const vc_kind vc_kind_VisionRotary = {
    .ops = 7,
    .name = "VisionRotary", .summary = "Qwen3-VL's 2-D vision rotary cos/sin [2, patches, head_dim] float32",
    .min_inputs = 0, .max_inputs = 0, .flags = VC_KIND_NO_INPUT, .cfg_size = sizeof(vro_cfg),
    .parse = vro_parse, .setup = vro_setup, .emit = vro_emit,
};

/* VisionAttention: Qwen3VLVisionAttention.forward between qkv and proj, on sdpa (its default):
 *   query, key, value = qkv(x).reshape(n, 3, heads, -1).permute(1, 0, 2, 3).unbind(0)  (views: the
 *     projection's output lives while value does, to the return);
 *   apply_rotary_pos_emb_vision: q.float(), k.float() (copies unless float32), cos / sin
 *     .unsqueeze(-2).float() (views: float32 already), q * cos + rotate_half(q) * sin (and k), then
 *     .to(orig dtype) (copies unless float32): its locals die as it returns; the results are the
 *     forward's query_states / key_states until it returns;
 *   transpose(0, 1).unsqueeze(0): [1, heads, n, D] views over [n, heads, D] storage;
 *   sdpa's path ("Other implementations: Process each chunk separately"): lengths = cu_seqlens
 *     differences (one image each), torch.split along the sequence (views), then for each image
 *     sdpa_attention_forward (integrations/sdpa_attention.py: F.scaled_dot_product_attention with no
 *     mask, is_causal False; attn_output.transpose(1, 2).contiguous() [1, n_i, heads, D]), kept in
 *     the list attn_outputs (a local until the return); torch.cat(attn_outputs, dim=1) [1, n, heads, D];
 *   .reshape(n, -1).contiguous() (a view), then proj (the next layer). The locals live until proj
 *     returns ("held_until" on the norm that made the argument). */
typedef struct {
    int64_t H, D, images;
} vat_cfg;

static int vat_parse(vc_args *a, void *p)
{
    vat_cfg *c = p;
    return vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->H) || vc_arg_int(a, "head_dim", VC_REQUIRED, 2, &c->D) ||
           vc_arg_int(a, "images", 1, 1, &c->images);
}

static int vat_setup(vc_setup *s, void *p)
{
    const vat_cfg *c = p;
    if (s->nin != 2) return vc_fail(s, "inputs", "VisionAttention takes [qkv, cos_sin]");
    const vc_shape *x = &s->in[0];
    int64_t C = c->H * c->D;
    if (x->nd != 2 || x->d[1] != 3 * C)
        return vc_fail(s, "inputs", "the fused qkv projection must be [patches, 3 x %lld]", (long long)C);
    if (x->d[0] % c->images)
        return vc_fail(s, "images", "%lld patches are not %lld images of one size", (long long)x->d[0], (long long)c->images);
    if (c->images > VPE_MAX_IMAGES)
        return vc_fail(s, "images", "%lld images per sample: more than the %d modelled", (long long)c->images, VPE_MAX_IMAGES);
    int64_t d[2] = {x->d[0], C};
    s->out = vc_shape_make(2, d);
    s->ops = (int)(20 + 40 * c->images); /* an upper bound: the views, casts and two ropes, per image the
                                           * views, the sdpa kernel's ops and the copy, the cat */
    return 0;
}

static void vat_emit(vc_build *b, const void *p)
{
    const vat_cfg *c = p;
    const int64_t n = vc_input_shape(b, 0)->d[0], H = c->H, D = c->D, C = H * D, ni = n / c->images;
    vc_t qkv = vc_input(b, 0), cs = vc_input(b, 1);
    const vc_dtype dt = vc_dt_of(b, qkv);
    const vc_t arg = vc_input_arg(b, 0);
    vc_t q = vc__op_view(b, qkv, vc_n_sample(n * C), false);
    vc_t k = vc__op_view(b, qkv, vc_n_sample(n * C), false);
    vc_t v = vc__op_view(b, qkv, vc_n_sample(n * C), false);
    vc_t qf = vc__op_cast(b, q, VC_DT_F32), kf = vc__op_cast(b, k, VC_DT_F32);
    vc_hold(b, qf);
    vc_hold(b, kf);
    vc_t qe = vc__rope_apply(b, qf, cs, H, n, D, D);
    vc_hold(b, qe);
    vc_t ke = vc__rope_apply(b, kf, cs, H, n, D, D);
    vc_hold(b, ke);
    vc_t qs = vc__op_cast(b, qe, dt), ks = vc__op_cast(b, ke, dt);
    vc_release(b, qf); /* apply_rotary_pos_emb_vision's locals */
    vc_release(b, kf);
    vc_release(b, qe);
    vc_release(b, ke);
    vc_t outs[VPE_MAX_IMAGES];
    for (int64_t i = 0; i < c->images; i++) {
        vc_t qi = vc__op_view(b, qs, vc_n_sample(ni * C), false);
        vc_t ki = vc__op_view(b, ks, vc_n_sample(ni * C), false);
        vc_t vi = vc__op_view(b, v, vc_n_sample(ni * C), false);
        vc_sdpa_args a = {H, H, ni, ni, D, true, true, true, false, 0.0, 0, false, false, -1, 0};
        bool blhd = false;
        vc_t o = vc__op_sdpa_gqa(b, qi, ki, vi, &a, &blhd);
        o = vc__op_view(b, o, vc_numel_of(b, o), blhd);
        outs[i] = vc__op_contiguous(b, o);
        vc_hold(b, outs[i]);
    }
    vc_op *op = vc_op_begin(b, "cat");
    for (int64_t i = 0; i < c->images; i++) vc_op_in_nodiff(op, outs[i]);
    vc_t y = vc_op_out(op, vc_n_sample(n * C), dt);
    vc_op_end(op);
    vc_set_output(b, y);
    /* the forward's locals until it returns (proj: the argument's "held_until") */
    const vc_t owner = vc_input_arg_held_next(b, 0) ? arg : -1;
    const vc_t locals[3] = {qkv, qs, ks};
    for (int i = 0; i < 3; i++) {
        vc_keep_to_here(b, locals[i]);
        vc_keep_with(b, locals[i], owner);
    }
    for (int64_t i = 0; i < c->images; i++) {
        vc_release(b, outs[i]);
        vc_keep_with(b, outs[i], owner);
    }
}

const vc_kind vc_kind_VisionAttention = {
    .ops = 60, /* one image; setup counts more */
    .name = "VisionAttention", .summary = "Qwen3-VL's vision attention core: fused qkv + float32 2-D rope -> sdpa per image -> [patches, hidden]",
    .min_inputs = 2, .max_inputs = 2, .cfg_size = sizeof(vat_cfg),
    .parse = vat_parse, .setup = vat_setup, .emit = vat_emit,
};

/* VisionOutputs: what the model's forward keeps of the tower's outputs until it returns.
 * Inputs: [the tower's input (the pixel_values' cast copy: get_image_features' local, alive until the
 * tower returns, read here), the last block's hidden states, the merger's output, the deepstack
 * mergers' outputs...].
 * Qwen3VLModel.forward (modeling_qwen3_vl.py @ 00709b86): get_image_features returns
 * torch.split(image_embeds) (views of the merger's output) and the deepstack list;
 * image_embeds = torch.cat(image_embeds, dim=0).to(dtype) (a copy: cat allocates even for one
 * piece) rebinds the name, the split views die (the merger's output with them); the deepstack list
 * (deepstack_visual_embeds) is passed to the language model: alive until forward returns.
 * Qwen3_5Model.forward (modular_qwen3_5.py @ 8940358a): image_outputs (BaseModelOutputWithPooling:
 * last_hidden_state, the last block's output, and pooler_output, the split merger output) is a
 * local until the return, as the cat copy image_embeds is ("keep_last"). The output: that copy,
 * which masked_scatter writes into inputs_embeds. The last input, the token ids [L], sizes the 3-D
 * mrope positions both forwards make for the language model (Qwen3VLModel.get_rope_index @ 00709b86,
 * Qwen3_5Model.compute_3d_position_ids @ 8940358a: position_ids = torch.ones(3, B, L, int64) filled
 * with each image's t / h / w grid and the text's positions), kept until the forward returns. */
typedef struct {
    bool keep_last;
    int nin; /* set by setup */
} vout_cfg;

static int vout_parse(vc_args *a, void *p)
{
    vout_cfg *c = p;
    return vc_arg_bool(a, "keep_last", false, &c->keep_last);
}

static int vout_setup(vc_setup *s, void *p)
{
    vout_cfg *c = p;
    c->nin = s->nin;
    if (s->nin < 4)
        return vc_fail(s, "inputs", "VisionOutputs takes [pixel values, last hidden states, merger output, deepstack "
                       "features..., token ids]");
    for (int i = 3; i < s->nin - 1; i++)
        if (vc_shape_numel(&s->in[i]) != vc_shape_numel(&s->in[2]))
            return vc_fail(s, "inputs", "a deepstack feature must be the merger output's size");
    if (s->in[s->nin - 1].nd != 1) return vc_fail(s, "inputs", "the last input must be the token ids [L]");
    s->out = s->in[2];
    return 0;
}

static void vout_emit(vc_build *b, const void *p)
{
    const vout_cfg *c = p;
    vc_t m = vc_input(b, 2);
    vc_keep_to_here(b, vc_input(b, 0)); /* the pixel values' copy: dead as get_image_features returns */
    /* torch.cat of the features: recorded (CatBackward0 keeps sizes) so that a LoRA adapter inside the tower gives
     * inputs_embeds a gradient, as in PyTorch; without one nothing needs it and nothing is saved */
    vc_t y = vc__op_fresh(b, "cat", m, vc_numel_of(b, m));
    vc_keep_forward(b, y);
    if (c->keep_last) {
        vc_keep_forward(b, vc_input(b, 1));
        vc_keep_forward(b, m);
    }
    for (int i = 3; i < c->nin - 1; i++) vc_keep_forward(b, vc_input(b, i));
    const int64_t L = vc_input_shape(b, c->nin - 1)->d[0];
    vc_keep_forward(b, vc__op_new(b, "position_ids", vc_n_sample(3 * L), VC_DT_I64));
    vc_set_output(b, y);
}

const vc_kind vc_kind_VisionOutputs = {
    .ops = 2,
    .name = "VisionOutputs", .summary = "a Qwen3-VL tower's outputs the model's forward keeps; the image embeddings' copy",
    .min_inputs = 4, .max_inputs = VC_MAX_INPUTS, .flags = VC_KIND_INDEX_INPUT, .cfg_size = sizeof(vout_cfg),
    .parse = vout_parse, .setup = vout_setup, .emit = vout_emit,
};

/* DeepstackAdd: Qwen3VLTextModel._deepstack_process (modeling_qwen3_vl.py @ 00709b86), run by
 * Qwen3VLTextModel.forward after decoder layer k for each of the tower's deepstack features:
 *   hidden_states = hidden_states.clone()                       (a copy; CloneBackward passes)
 *   local_this = hidden_states[visual_pos_masks, :] + visual_embeds
 *     (index with the bool mask: its nonzero() indices [K, 2] int64, saved by IndexBackward, whose
 *     backward makes a zero tensor of the hidden states' size; the gather [K, H] a temporary, the
 *     sum a local until the return; the feature needs no gradient: the tower is frozen)
 *   hidden_states[visual_pos_masks, :] = local_this
 *     (index_put_ in place on the copy: the indices made again and saved; backward makes the
 *     hidden states' gradient anew and the values' [K, H])
 * Inputs: [the decoder layer's output, the feature [K, H], the previous such output...]: the
 * forward's `layer_outputs` holds a layer's own output (the clone's source) until the next layer
 * returns, so the layer after a deepstack layer lists that output as a third input (read here, no
 * op). "pass": no feature (the layer after the last deepstack layer): the output is the input; a pass with the
 * hidden states alone: generate()'s decoding steps (src/hf/hf_layers.c deepstack_add), no feature and no
 * layer_outputs held. */
typedef struct {
    int64_t K; /* the image tokens per sample */
    bool pass;
    int nin; /* set by setup */
} dsa_cfg;

static int dsa_parse(vc_args *a, void *p)
{
    dsa_cfg *c = p;
    return vc_arg_bool(a, "pass", false, &c->pass) || vc_arg_int(a, "image_tokens", c->pass ? 1 : VC_REQUIRED, 1, &c->K);
}

static int dsa_setup(vc_setup *s, void *p)
{
    dsa_cfg *c = p;
    c->nin = s->nin;
    const vc_shape *x = &s->in[0];
    if (x->nd != 2) return vc_fail(s, "inputs", "DeepstackAdd takes the hidden states [L, H]");
    if (c->pass) { /* [hidden states] alone: generate()'s decoding step, no feature and no layer_outputs held */
        if (s->nin > 2) return vc_fail(s, "inputs", "a pass DeepstackAdd takes [hidden states, the previous layer's output]");
    } else {
        if (s->nin < 2 || s->nin > 3)
            return vc_fail(s, "inputs", "DeepstackAdd takes [hidden states, feature] and the previous layer's output");
        if (c->K > x->d[0]) return vc_fail(s, "image_tokens", "%lld image tokens in %lld positions", (long long)c->K, (long long)x->d[0]);
        if (vc_shape_numel(&s->in[1]) != c->K * x->d[1])
            return vc_fail(s, "inputs", "the feature must be [image_tokens, %lld]", (long long)x->d[1]);
    }
    s->out = *x;
    return 0;
}

static void dsa_emit(vc_build *b, const void *p)
{
    const dsa_cfg *c = p;
    vc_t x = vc_input(b, 0);
    if (c->pass) {
        if (c->nin > 1) vc_keep_to_here(b, vc_input(b, 1));
        vc_set_output(b, x);
        return;
    }
    const vc_shape *sh = vc_input_shape(b, 0);
    const int64_t H = sh->d[1], K = c->K;
    if (c->nin > 2) vc_keep_to_here(b, vc_input(b, 2));
    vc_t y = vc__op_clone(b, x);
    vc_t nz = vc__op_new(b, "nonzero", vc_n_sample(2 * K), VC_DT_I64);
    vc_op *o = vc_op_begin(b, "index");
    int iy = vc_op_in(o, y);
    vc_op_grad(o, iy, VC_GRAD_NEW);
    vc_op_in_nodiff(o, nz);
    vc_op_save(o, nz);
    vc_t g = vc_op_out(o, vc_n_sample(K * H), vc_dt_of(b, y));
    vc_op_end(o);
    vc_t lt = vc__op_add(b, g, vc_input(b, 1), vc_n_sample(K * H), false);
    vc_t nz2 = vc__op_new(b, "nonzero", vc_n_sample(2 * K), VC_DT_I64);
    o = vc_op_begin(b, "index_put_");
    iy = vc_op_in(o, y);
    vc_op_grad(o, iy, VC_GRAD_NEW);
    int il = vc_op_in(o, lt);
    vc_op_grad(o, il, VC_GRAD_NEW);
    vc_op_in_nodiff(o, nz2);
    vc_op_save(o, nz2);
    vc_t out = vc_op_out_view(o, iy, vc_n_sample(sh->d[0] * H), true);
    vc_op_end(o);
    vc_set_output(b, out);
}

const vc_kind vc_kind_DeepstackAdd = {
    .ops = 6,
    .name = "DeepstackAdd", .summary = "Qwen3-VL's deepstack feature added at the image tokens after a decoder layer",
    .min_inputs = 1, .max_inputs = 3, .cfg_size = sizeof(dsa_cfg),
    .parse = dsa_parse, .setup = dsa_setup, .emit = dsa_emit,
};

/* ---- SiglipLogits: SiglipModel.forward after its two towers (modeling_siglip.py @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e),
 * on image_embeds = vision_outputs[1] and text_embeds = text_outputs[1] ([B, dim] each, inputs 0 and 1):
 *   image_embeds = image_embeds / image_embeds.norm(p=2, dim=-1, keepdim=True), the same for text_embeds: norm
 *     (norm.ScalarOpt_dim: a new [B, 1], saving self and result; its backward FunctionsManual.cpp norm_backward at
 *     p 2, grad * (self / norm).masked_fill_(norm == 0, 0): a [B, dim] and a bool [B, 1] temporary beside the new
 *     gradient), then div (DivBackward0 saves self and other: grad / other, a new [B, dim]; other's
 *     -grad * ((self / other) / other), three [B, dim] temporaries and a [B, dim] product the engine sums to [B, 1]);
 *   logits_per_text = torch.matmul(text_embeds, image_embeds.t()) * self.logit_scale.exp() + self.logit_bias: mm
 *     ([B, B], saving both), exp (a new [1], saving its result), mul (a new [B, B]: each operand saved when the
 *     other needs its gradient), add (a new [B, B]); logits_per_image = logits_per_text.t() (a view).
 * The [B, B] logits are a square of the batch: sizes exact for the batch planned (vc_batch_dependent); the
 * per-sample shape declared is [1]. The loss (return_loss=True) is the model's "siglip" row (src/engine/loss.c).
 * "clip": true, CLIPModel.forward after its towers and projections (modeling_clip.py @ 000f1ffd): the norms by
 * _get_vector_norm (clip_normalize), logits_per_text = matmul(text_embeds, image_embeds.t()) * logit_scale.exp(), no
 * logit_bias; the loss is the "clip" row. */
typedef struct {
    bool clip; /* CLIPModel.forward (modeling_clip.py @ 000f1ffd): _get_vector_norm, no logit_bias */
} sl_cfg;

static int sl_parse(vc_args *a, void *p) { return vc_arg_bool(a, "clip", false, &((sl_cfg *)p)->clip); }

static int sl_setup(vc_setup *s, void *p)
{
    const sl_cfg *c = p;
    if (s->in[0].nd != 1 || s->in[1].nd != 1 || s->in[0].d[0] != s->in[1].d[0])
        return vc_fail(s, "inputs", "expected image_embeds and text_embeds of one size [dim] each");
    int64_t one = 1;
    s->out = vc_shape_make(1, &one);
    return vc_param(s, "logit_scale", 1) || (!c->clip && vc_param(s, "logit_bias", 1));
}

/* x / nrm, x [B, n], nrm [B, 1] (DivBackward0 as described above) */
static vc_t sl_div(vc_build *b, vc_t x, vc_t nrm, int64_t n)
{
    const vc_dtype dt = vc_dt_of(b, x);
    vc_op *o = vc_op_begin(b, "div");
    int ix = vc_op_in(o, x), in = vc_op_in(o, nrm);
    vc_t y = vc_op_out(o, vc_n_sample(n), dt);
    vc_op_save_if(o, x, in);
    vc_op_save(o, nrm);
    vc_op_grad(o, in, VC_GRAD_NEW_REDUCE);
    vc_op_btemp_held(o, vc_n_sample(n), dt); /* self / other */
    vc_op_btemp_held(o, vc_n_sample(n), dt); /* (self / other) / other */
    vc_op_btemp_held(o, vc_n_sample(n), dt); /* -grad */
    (void)ix;
    vc_op_end(o);
    return y;
}

/* x / x.norm(p=2, dim=-1, keepdim=True), x [B, n] */
static vc_t sl_normalize(vc_build *b, vc_t x, int64_t n)
{
    const vc_dtype dt = vc_dt_of(b, x);
    vc_op *o = vc_op_begin(b, "norm");
    vc_op_in(o, x);
    vc_t nrm = vc_op_out(o, vc_n_sample(1), dt);
    vc_op_save(o, x);
    vc_op_save(o, nrm);
    vc_op_btemp_held(o, vc_n_sample(n), dt);             /* self / norm */
    vc_op_btemp_held(o, vc_n_sample(1), VC_DT_BOOL);     /* norm == 0 */
    vc_op_end(o);
    return sl_div(b, x, nrm, n);
}

/* CLIP's x / _get_vector_norm(x) (modeling_clip.py @ 000f1ffd): torch.pow(x, 2) (PowBackward0 saves self; its
 * backward two x-sized temporaries, vc__op_pow2), torch.sum(dim=-1, keepdim=True) (a new [B, 1], nothing saved),
 * torch.pow(sum, 0.5) (a new [B, 1], saving self; pow_backward's self.pow(-0.5) and 0.5 * it, [B, 1] each), then
 * the div (sl_div). */
static vc_t clip_normalize(vc_build *b, vc_t x, int64_t n)
{
    const vc_dtype dt = vc_dt_of(b, x);
    vc_t sm = vc__op_mean(b, vc__op_pow2(b, x), vc_n_sample(1));
    vc_op *o = vc_op_begin(b, "pow");
    vc_op_in(o, sm);
    vc_t nrm = vc_op_out(o, vc_n_sample(1), dt);
    vc_op_save(o, sm);
    vc_op_btemp_held(o, vc_n_sample(1), dt); /* self.pow(-0.5) */
    vc_op_btemp_held(o, vc_n_sample(1), dt); /* 0.5 * it */
    vc_op_end(o);
    return sl_div(b, x, nrm, n);
}

static void sl_emit(vc_build *b, const void *p)
{
    const bool clip = ((const sl_cfg *)p)->clip;
    const char *cls = clip ? "CLIPModel" : "SiglipModel";
    const int64_t B = vc_batch(b), n = vc_input_shape(b, 0)->d[0];
    vc_batch_dependent(b);
    if (B > (INT64_C(1) << 26)) { /* the [B, B] logits within 2^52 elements */
        vc_refuse(b, O("batch"), "%lld: %s's logits_per_text would be %lld x %lld", (long long)B, cls, (long long)B,
                  (long long)B);
        return;
    }
    if (vc_autocast_dt(b) != VC_DT_F32) {
        vc_refuse(b, O("precision"), "amp: %s's norm, div and logits under torch.autocast are not modelled "
                                     "(%s); fp32, bf16, fp16 and mixed-* are", cls,
                  clip ? "pow and sum are on autocast's float32 list" : "norm is on autocast's float32 list");
        return;
    }
    if (vc_peft_input_grads(b)) { /* PEFT with gradient checkpointing: enable_input_require_grads */
        vc_refuse(b, O("grad_ckpt"), "with " O("lora") ": PEFT's enable_input_require_grads hooks "
                  "get_input_embeddings(), which %s does not define (%s; what PreTrainedModel's default does for it "
                  "was not read): not modelled", cls, clip ? "modeling_clip.py @ 000f1ffd" : "modeling_siglip.py @ efa7189c");
        return;
    }
    vc_t img = clip ? clip_normalize(b, vc_input(b, 0), n) : sl_normalize(b, vc_input(b, 0), n);
    vc_t txt = clip ? clip_normalize(b, vc_input(b, 1), n) : sl_normalize(b, vc_input(b, 1), n);
    const vc_numel bb = vc_n_fixed(B * B);
    vc_t it = vc__op_view(b, img, vc_numel_of(b, img), false); /* image_embeds.t() */
    vc_t mm = vc__op_bmm_raw(b, txt, it, bb);
    vc_t sc = vc__op_unary(b, "exp", vc_weight(b, 0), VC_SAVE_OUT, false);
    vc_t y = vc__op_mul_dt(b, mm, sc, bb, vc_dt_of(b, mm));
    vc_set_output(b, clip ? y : vc__op_add(b, y, vc_weight(b, 1), bb, false));
}

const vc_kind vc_kind_SiglipLogits = {
    .ops = 12, /* clip: two 4-op normalizations, the matmul, exp and mul */
    .name = "SiglipLogits", .summary = "SiglipModel's normalized embeddings and logits_per_text [B, B] (matmul x logit_scale.exp() + logit_bias)",
    .min_inputs = 2, .max_inputs = 2, .cfg_size = sizeof(sl_cfg),
    .parse = sl_parse, .setup = sl_setup, .emit = sl_emit,
};
