/*
 * mllama.c — the pieces of MllamaForConditionalGeneration (Llama 3.2 Vision, issue 31) run on images that no other
 * kind has: MllamaVision (the frozen MllamaVisionModel and multi_modal_projector on the processor's tiles, run without
 * autograd), MllamaCrossMask (_prepare_cross_attention_mask) and MllamaCrossAttention (MllamaTextCrossSdpaAttention's
 * core from the projections to o_proj) and MllamaGate (a tanh gate times its input). src/hf/hf_mllama.c writes them.
 *
 * Source: huggingface/transformers @ befb7955722ef3a9c152cb47efa0d87616709ec1,
 * src/transformers/models/mllama/modeling_mllama.py (each piece names the function it follows); the processor's
 * tensors from image_processing_mllama.py @ 0350540de3d2a016f85b83ea804ef3f07e8e4f67 (pixel_values
 * [B, N, max_image_tiles, C, tile, tile] float32, zero-padded to max_image_tiles whatever the image).
 */
#include "layer.h"
#include "ops.h"

/* ---- MllamaVision: MllamaVisionModel.forward and multi_modal_projector, frozen: no autograd graph, each tensor
 * dies at its last use unless a local keeps it ----
 *   pixel_values.reshape(B N T, C, S, S); patch_embedding(pixel_values.to(dtype)) (Conv2d, kernel = stride = patch);
 *   flatten(2).transpose(1, 2), reshape(B N, T, -1, dim): a copy of the transposed view;
 *   pre_tile_positional_embedding: hidden + embedding(ids).reshape(..) * gate.tanh(): a new tensor;
 *   apply_class_embedding: torch.cat([class_embedding.expand, hidden], 1): a new tensor of np = p + 1 patches;
 *   gated_positional_embedding: hidden + (1 - gate.tanh()) * embedding, then tile_embedding(ids) (a tensor of the
 *       hidden's size), * gate.tanh() (another), hidden + it;
 *   layernorm_pre; F.pad to P8 = a multiple of 8 patches (a new tensor);
 *   _prepare_aspect_ratio_attention_mask: [B N, T P8, 1] (repeat, 1 - m), m @ m.T, * finfo.min: [B N, 1, T P8, T P8]
 *       of dtype, alive until forward returns;
 *   transformer (output_hidden_states=True): MllamaVisionEncoder keeps each layer's input and the final state,
 *       num_hidden_layers + 1 tensors, until MllamaVisionModel.forward returns;
 *   MllamaVisionEncoderLayer: input_layernorm, q/k/v_proj, sdpa(attn_mask), transpose(1, 2).contiguous(), o_proj,
 *       (gate_attn.tanh() * h when gated), + residual; post_attention_layernorm, fc1, gelu, fc2, (gate_ffn), + residual;
 *   layernorm_post, post_tile_positional_embedding, global_transformer (gated, nothing kept);
 *   [:, :, :slice_index] and reshape: a copy when padded; torch.stack of the intermediate states (dim -1), reshape,
 *       slice, reshape (a copy when padded); torch.cat([final, intermediate], -1): vision_outputs[0], held by
 *       MllamaForConditionalGeneration.forward until it returns;
 *   multi_modal_projector (nn.Linear with bias) .reshape: cross_attention_states, the output. */
typedef struct {
    int64_t images, tiles, patches, width, inter, heads, layers, global, nint, out, values;
} mv_cfg;

static int mv_parse(vc_args *a, void *p)
{
    mv_cfg *c = p;
    return vc_arg_int(a, "images", VC_REQUIRED, 1, &c->images) || vc_arg_int(a, "tiles", VC_REQUIRED, 1, &c->tiles) ||
           vc_arg_int(a, "patches", VC_REQUIRED, 1, &c->patches) || vc_arg_int(a, "hidden_size", VC_REQUIRED, 1, &c->width) ||
           vc_arg_int(a, "intermediate_size", VC_REQUIRED, 1, &c->inter) ||
           vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) || vc_arg_int(a, "num_layers", VC_REQUIRED, 1, &c->layers) ||
           vc_arg_int(a, "num_global_layers", 0, 0, &c->global) || vc_arg_int(a, "intermediates", 0, 0, &c->nint) ||
           vc_arg_int(a, "out_features", VC_REQUIRED, 1, &c->out) || vc_arg_int(a, "patch_values", VC_REQUIRED, 1, &c->values);
}

static int mv_setup(vc_setup *s, void *p)
{
    const mv_cfg *c = p;
    if (c->width % c->heads) return vc_fail(s, "num_heads", "must divide hidden_size");
    if (c->layers > 1024 || c->global > 1024) return vc_fail(s, "num_layers", "more than 1024 layers");
    const int64_t np = c->patches + 1, p8 = (np + 7) / 8 * 8;
    int64_t t, u;
    if (vc_mul(s, c->images, c->tiles, &t) || vc_mul(s, t, p8, &t) || vc_mul(s, t, c->width + c->inter, &u) ||
        vc_mul(s, t, t, &u) || vc_mul(s, u, c->heads, &u) || vc_mul(s, t, c->values, &u) || vc_mul(s, t, c->out, &u) ||
        vc_mul(s, t, c->width * (2 + c->nint), &u))
        return -1;
    if (u > (INT64_C(1) << 48) || t > (INT64_C(1) << 40)) return vc_fail(s, "images", "the tiles' tensors are too large");
    int64_t d[2] = {c->images * c->tiles * np, c->out};
    s->out = vc_shape_make(2, d);
    return 0;
}

static vc_t mv_new(vc_build *b, const char *name, vc_t x, vc_t y, int64_t n)
{
    return vc__op_nograd(b, name, x, y, vc_n_sample(n), vc_param_dt(b));
}

/* MllamaVisionEncoderLayer.forward on h [n, L, W] (n = B N images), the aspect-ratio mask m */
static vc_t mv_layer(vc_build *b, const mv_cfg *c, vc_t h, vc_t m, int64_t n, int64_t L, bool gated)
{
    const int64_t W = c->width, D = W / c->heads, rows = n * L;
    vc_t x = mv_new(b, "input_layernorm", h, -1, rows * W);
    vc_hold(b, x); /* the argument of self_attn: alive until it returns */
    vc_t q = mv_new(b, "q_proj", x, -1, rows * W), k = mv_new(b, "k_proj", x, -1, rows * W);
    vc_t v = mv_new(b, "v_proj", x, -1, rows * W);
    vc_sdpa_args sa = {.H = n * c->heads, .Hkv = n * c->heads, .L = L, .S = L, .D = D, .q_blhd = true, .k_blhd = true,
                       .v_blhd = true, .masked = true, .mask = m};
    bool blhd = false;
    vc_hold(b, q); /* forward's locals query / key / value: until after the sdpa */
    vc_hold(b, k);
    vc_hold(b, v);
    vc_t o = vc__op_sdpa_gqa(b, q, k, v, &sa, &blhd);
    vc_release(b, q);
    vc_release(b, k);
    vc_release(b, v);
    if (!blhd) o = mv_new(b, "contiguous", o, -1, rows * W); /* transpose(1, 2).contiguous() */
    o = mv_new(b, "o_proj", o, -1, rows * W);
    vc_release(b, x);
    if (gated) o = mv_new(b, "gate_attn", o, -1, rows * W);
    h = mv_new(b, "add", h, o, rows * W);
    vc_t n2 = mv_new(b, "post_attention_layernorm", h, -1, rows * W);
    vc_hold(b, n2); /* the argument of mlp: alive until it returns */
    x = mv_new(b, "fc1", n2, -1, rows * c->inter);
    x = mv_new(b, "gelu", x, -1, rows * c->inter);
    x = mv_new(b, "fc2", x, -1, rows * W);
    vc_release(b, n2);
    if (gated) x = mv_new(b, "gate_ffn", x, -1, rows * W);
    return mv_new(b, "add", h, x, rows * W);
}

static void mv_emit(vc_build *b, const void *p)
{
    const mv_cfg *c = p;
    const int64_t n = c->images, T = c->tiles, W = c->width, pt = c->patches, np = pt + 1, p8 = (np + 7) / 8 * 8;
    const int64_t L = T * p8, nt = n * T;
    /* the processor's pixel_values [N, T, C, S, S] float32 and cross_attention inputs: the batch the loop holds */
    vc_t px = vc__op_new(b, "pixel_values", vc_n_sample(nt * c->values), VC_DT_F32);
    vc_persist(b, px);
    vc_t x = vc__op_cast(b, px, vc_param_dt(b));
    x = mv_new(b, "patch_embedding", x, -1, nt * pt * W);
    x = mv_new(b, "reshape", x, -1, nt * pt * W); /* flatten(2).transpose(1, 2).reshape: a copy */
    x = mv_new(b, "pre_tile_positional_embedding", x, -1, nt * pt * W);
    x = mv_new(b, "cat", x, -1, nt * np * W); /* apply_class_embedding */
    x = mv_new(b, "add", x, -1, nt * np * W); /* + (1 - gate.tanh()) * embedding */
    vc_t te = mv_new(b, "tile_embedding", -1, -1, nt * np * W);
    te = mv_new(b, "mul", te, -1, nt * np * W); /* gate.tanh() * tile_position_embedding */
    x = mv_new(b, "add", x, te, nt * np * W);
    x = mv_new(b, "layernorm_pre", x, -1, nt * np * W);
    if (p8 != np) x = mv_new(b, "pad", x, -1, nt * p8 * W);
    /* _prepare_aspect_ratio_attention_mask: repeat, 1 - m ([B N, T P8]), m @ m.T, * finfo.min */
    vc_t m = mv_new(b, "repeat", -1, -1, n * L);
    m = mv_new(b, "rsub", m, -1, n * L);
    m = mv_new(b, "matmul", m, -1, n * L * L);
    m = mv_new(b, "mul", m, -1, n * L * L);
    vc_hold(b, m); /* forward's attention_mask: until it returns */
    vc_t kept[1026];
    int nk = 0;
    for (int64_t l = 0; l < c->layers; l++) {
        vc_hold(b, x); /* MllamaVisionEncoder's encoder_states */
        kept[nk++] = x;
        x = mv_layer(b, c, x, m, n, L, false);
    }
    vc_hold(b, x);
    kept[nk++] = x;
    x = mv_new(b, "layernorm_post", x, -1, n * L * W);
    x = mv_new(b, "post_tile_positional_embedding", x, -1, n * L * W);
    for (int64_t l = 0; l < c->global; l++) x = mv_layer(b, c, x, m, n, L, true);
    if (p8 != np) x = mv_new(b, "reshape", x, -1, nt * np * W); /* [:, :, :slice_index].reshape: a copy */
    vc_t st = c->nint ? mv_new(b, "stack", kept[0], -1, n * L * W * c->nint) : -1;
    if (st >= 0 && p8 != np) st = mv_new(b, "reshape", st, -1, nt * np * W * c->nint);
    vc_t out = mv_new(b, "cat", x, st, nt * np * W * (1 + c->nint));
    for (int i = 0; i < nk; i++) vc_release(b, kept[i]);
    vc_release(b, m);
    vc_keep_forward(b, out); /* vision_outputs: MllamaForConditionalGeneration.forward's local */
    vc_set_output(b, mv_new(b, "multi_modal_projector", out, -1, nt * np * c->out));
}

const vc_kind vc_kind_MllamaVision = {
    .ops = 8192,
    .name = "MllamaVision",
    .summary = "Llama 3.2 Vision's frozen tower and projector on the processor's tiles (no autograd)",
    .min_inputs = 0, .max_inputs = 0, .flags = VC_KIND_NO_INPUT, .cfg_size = sizeof(mv_cfg),
    .parse = mv_parse, .setup = mv_setup, .emit = mv_emit,
    /* MllamaVisionAttention's and MllamaVisionMLP's Linears (modeling_mllama.py @ befb7955): PEFT's target_modules
     * match them by name inside vision_model, whose adapters would then build a graph through the tower */
    .frozen_linears = "q_proj,k_proj,v_proj,o_proj,fc1,fc2",
};

/* ---- MllamaCrossMask: MllamaForConditionalGeneration.forward's _prepare_cross_attention_mask on the processor's
 * cross_attention_mask [B, L, N, T] int64 (the batch the loop holds) ----
 *   repeat_interleave(num_vision_tokens, dim=3) (int64 [B, L, N T np]), view, unsqueeze(1);
 *   inverted = (1.0 - mask).to(dtype) (float32, then a copy unless float32); masked_fill(inverted.to(bool), min);
 *   full_text_row_masked_out_mask = (mask != min).any(-1).type_as(mask)[..., None]; mask *= it (in place).
 * The output: cross_attention_mask [L, S] of dtype, a local of the forward until it returns. Input: the token ids. */
typedef struct {
    int64_t images, tiles, patches;
} cm_cfg;

static int cm_parse(vc_args *a, void *p)
{
    cm_cfg *c = p;
    return vc_arg_int(a, "images", VC_REQUIRED, 1, &c->images) || vc_arg_int(a, "tiles", VC_REQUIRED, 1, &c->tiles) ||
           vc_arg_int(a, "num_patches", VC_REQUIRED, 1, &c->patches);
}

static int cm_setup(vc_setup *s, void *p)
{
    const cm_cfg *c = p;
    if (s->in[0].nd != 1) return vc_fail(s, "inputs", "expected the token ids [seq]");
    int64_t S, t;
    if (vc_mul(s, c->images * c->tiles, c->patches, &S) || vc_mul(s, S, s->in[0].d[0], &t)) return -1;
    int64_t d[2] = {s->in[0].d[0], S};
    s->out = vc_shape_make(2, d);
    return 0;
}

static void cm_emit(vc_build *b, const void *p)
{
    const cm_cfg *c = p;
    const int64_t n = vc_input_shape(b, 0)->d[0], S = c->images * c->tiles * c->patches;
    const vc_dtype dt = vc_param_dt(b);
    /* generate(): model_kwargs' cross_attention_mask has a row for every token so far (prepare_inputs_for_generation
     * passes it whole each step, _update_model_kwargs_for_generation cats its last row after each): the mask is
     * prepared over past + n rows, then forward's cross_attention_mask[:, :, cache_position] and
     * full_text_row_masked_out_mask[:, :, cache_position] (advanced indexing: copies of the step's n rows) */
    int64_t past;
    const bool gen = vc_gen_decoder(b, &past);
    const int64_t L = past + n;
    /* the processor's mask, made before the prefill and held to generate()'s end; a decoding step reads it (the
     * rows the steps cat, 8 bytes x images x tiles each, and the cat's transient copy are not modelled) */
    vc_t cam = -1;
    if (past == 0) {
        cam = vc__op_new(b, "cross_attention_mask", vc_n_sample(L * c->images * c->tiles), VC_DT_I64);
        vc_persist(b, cam);
    }
    vc_t r = vc__op_nograd(b, "repeat_interleave", cam, -1, vc_n_sample(L * S), VC_DT_I64);
    vc_t inv = vc__op_nograd(b, "rsub", r, -1, vc_n_sample(L * S), VC_DT_F32);
    inv = vc__op_cast(b, inv, dt);
    vc_hold(b, inv);
    vc_t bm = vc__op_nograd(b, "to_bool", inv, -1, vc_n_sample(L * S), VC_DT_BOOL);
    vc_t m = vc__op_nograd(b, "masked_fill", inv, bm, vc_n_sample(L * S), dt);
    vc_release(b, inv);
    vc_t ne = vc__op_nograd(b, "ne", m, -1, vc_n_sample(L * S), VC_DT_BOOL);
    vc_t row = vc__op_nograd(b, "any", ne, -1, vc_n_sample(L), VC_DT_BOOL);
    row = vc__op_nograd(b, "type_as", row, -1, vc_n_sample(L), dt);
    vc_op *o = vc_op_begin(b, "mul_"); /* mask *= full_text_row_masked_out_mask */
    vc_op_in_nodiff(o, m);
    vc_op_in_nodiff(o, row);
    vc_op_end(o);
    if (gen) { /* [:, :, cache_position]: the step's rows copied, the prepared ones then free */
        m = vc__op_nograd(b, "index", m, -1, vc_n_sample(n * S), dt);
        vc_keep_forward(b, vc__op_nograd(b, "index", row, -1, vc_n_sample(n), dt));
    }
    vc_keep_forward(b, m);
    vc_set_output(b, m);
}

const vc_kind vc_kind_MllamaCrossMask = {
    .ops = 12,
    .name = "MllamaCrossMask",
    .summary = "Llama 3.2 Vision's cross-attention mask [seq, image tokens] from the processor's (input: token ids)",
    .min_inputs = 1, .max_inputs = 1, .flags = VC_KIND_INT_INPUT, .cfg_size = sizeof(cm_cfg),
    .parse = cm_parse, .setup = cm_setup, .emit = cm_emit,
};

/* ---- MllamaCrossAttention: MllamaTextCrossSdpaAttention.forward from q_proj / k_proj / v_proj to o_proj ----
 *   query_states = q_proj(h).view(bsz, q_len, heads, D).transpose(1, 2); q_norm (MllamaTextRMSNorm over D);
 *   key_states / value_states = k_proj / v_proj(cross_attention_states).view(...).transpose(1, 2);
 *   repeat_kv both (expand + reshape: copies when heads > kv heads); k_norm(key_states);
 *   (on CUDA with a mask) query_states.contiguous() etc.: the normed query keeps the transposed layout, a copy;
 *   sdpa(attn_mask=cross_attention_mask, is_causal False), transpose(1, 2).contiguous(), reshape.
 * Inputs: q [L, heads D], k and v [S, kv D], the mask [L, S]; parameters q_norm.weight and k_norm.weight [D]. */
typedef struct {
    int64_t heads, kv, dim;
} ca_cfg;

static int ca_parse(vc_args *a, void *p)
{
    ca_cfg *c = p;
    return vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) || vc_arg_int(a, "num_kv_heads", VC_REQUIRED, 1, &c->kv) ||
           vc_arg_int(a, "head_dim", VC_REQUIRED, 1, &c->dim);
}

static int ca_setup(vc_setup *s, void *p)
{
    const ca_cfg *c = p;
    if (c->heads % c->kv) return vc_fail(s, "num_kv_heads", "must divide num_heads");
    for (int i = 0; i < 4; i++)
        if (s->in[i].nd != 2) return vc_fail(s, "inputs", "input %d: expected a 2-D tensor per sample", i);
    const int64_t L = s->in[0].d[0], S = s->in[1].d[0];
    if (s->in[0].d[1] != c->heads * c->dim || s->in[1].d[1] != c->kv * c->dim || s->in[2].d[1] != c->kv * c->dim ||
        s->in[2].d[0] != S || s->in[3].d[0] != L || s->in[3].d[1] != S)
        return vc_fail(s, "inputs", "expected q [L, heads x head_dim], k and v [S, kv x head_dim], the mask [L, S]");
    int64_t t;
    if (vc_mul(s, c->heads * L, S + c->dim, &t)) return -1;
    s->out = s->in[0];
    return vc_param(s, "q_norm.weight", c->dim) || vc_param(s, "k_norm.weight", c->dim);
}

static void ca_emit(vc_build *b, const void *p)
{
    const ca_cfg *c = p;
    const int64_t L = vc_input_shape(b, 0)->d[0], S = vc_input_shape(b, 1)->d[0], H = c->heads, D = c->dim;
    vc_t q = vc_input(b, 0), k = vc_input(b, 1), v = vc_input(b, 2), m = vc_input(b, 3);
    /* generate(): the prefill's key_states / value_states into the layer's cache (past_key_value.update), read back
     * by the decoding steps (cross_attention_states None: past_key_value.key_cache[layer_idx]; k_proj and v_proj
     * not run there: src/engine/generate.c "Images") */
    vc_kv_cross(b, 1, &k, &v);
    q = vc__op_view(b, q, vc_numel_of(b, q), L == 1 || H == 1); /* view + transpose(1, 2) */
    q = vc__hf_rmsnorm(b, q, vc_weight(b, 0), vc_n_sample(H * L), 0);
    if (c->kv < H) { /* repeat_kv: expand + reshape, copies */
        k = vc__op_fresh(b, "repeat_kv", k, vc_n_sample(H * S * D));
        v = vc__op_fresh(b, "repeat_kv", v, vc_n_sample(H * S * D));
    } else {
        k = vc__op_view(b, k, vc_numel_of(b, k), S == 1 || H == 1);
        v = vc__op_view(b, v, vc_numel_of(b, v), S == 1 || H == 1);
    }
    k = vc__hf_rmsnorm(b, k, vc_weight(b, 1), vc_n_sample(H * S), 0);
    if (L > 1 && H > 1) q = vc__op_clone(b, q); /* the normed query in the transposed layout: .contiguous() copies */
    if (c->kv == H && S > 1 && H > 1) {
        k = vc__op_clone(b, k);
        v = vc__op_clone(b, v);
    }
    vc_sdpa_args sa = {.H = H, .Hkv = H, .L = L, .S = S, .D = D, .masked = true, .mask = m};
    bool blhd = false;
    vc_hold(b, q); /* forward's locals query_states / key_states / value_states: until after the sdpa */
    vc_hold(b, k);
    vc_hold(b, v);
    vc_t o = vc__op_sdpa_gqa(b, q, k, v, &sa, &blhd);
    vc_release(b, q);
    vc_release(b, k);
    vc_release(b, v);
    if (!blhd && L > 1 && H > 1) o = vc__op_contiguous(b, vc__op_view(b, o, vc_numel_of(b, o), false));
    vc_set_output(b, vc__op_view(b, o, vc_numel_of(b, o), true));
}

const vc_kind vc_kind_MllamaCrossAttention = {
    .ops = 40,
    .name = "MllamaCrossAttention",
    .summary = "Llama 3.2 Vision's cross-attention core: q_norm, repeat_kv, k_norm, masked sdpa (inputs q, k, v, mask)",
    .min_inputs = 4, .max_inputs = 4, .cfg_size = sizeof(ca_cfg),
    .parse = ca_parse, .setup = ca_setup, .emit = ca_emit,
};

/* ---- MllamaGate: gate.tanh() * x (MllamaCrossAttentionDecoderLayer's cross_attn_attn_gate and
 * cross_attn_mlp_gate, nn.Parameter [1]): a new tensor; the product saves x for the gate's gradient and the tanh
 * for x's ---- */
static int gate_parse(vc_args *a, void *p)
{
    (void)a;
    (void)p;
    return 0;
}

static int gate_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    return vc_param(s, "weight", 1);
}

static void gate_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0), t = vc__op_unary(b, "tanh", vc_weight(b, 0), VC_SAVE_OUT, false);
    vc_set_output(b, vc__op_mul(b, t, x, vc_numel_of(b, x), false));
}

const vc_kind vc_kind_MllamaGate = {
    .ops = 2,
    .name = "MllamaGate", .summary = "gate.tanh() * x with a [1] parameter (Llama 3.2 Vision's cross-attention gates)",
    .min_inputs = 1, .max_inputs = 1, .parse = gate_parse, .setup = gate_setup, .emit = gate_emit,
};
