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
} pix_cfg;

static int pix_parse(vc_args *a, void *p)
{
    pix_cfg *c = p;
    if (vc_arg_int(a, "num_patches", VC_REQUIRED, 1, &c->n) || vc_arg_bool(a, "positions", false, &c->positions) ||
        vc_arg_bool(a, "local_cast", false, &c->local_cast))
        return -1;
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
