/*
 * pixtral.c — the pieces of mistral3's Pixtral tower and projector run on images (issue 31 item 4;
 * src/hf/hf_pixtral.c writes them, frozen: the tower records no autograd graph unless a LoRA adapter inside
 * it makes its stream need gradients, then each op here records as PyTorch's would), read at
 * huggingface/transformers 0233e509531ace915c8241b4c16c8032a583279c models/pixtral/modeling_pixtral.py
 * and 00dcc6dda6f6d8e69541a6b51f97986a80242367 models/mistral3/modeling_mistral3.py. Sizes are per
 * sample: one sequence of `num_patches` patches (the sample's images cat'ed, batch 1).
 */
#include "layer.h"
#include "ops.h"

/* PixtralRotary: PixtralVisionModel.forward's positions and PixtralRotaryEmbedding (the module's two
 * float32 buffers inv_freq and original_inv_freq, [(image_size / patch_size)^2, head_dim] each):
 *   kwargs["position_ids"] = position_ids.unsqueeze(0).to(device): int64 [n], passed to the transformer
 *     (alive until the tower returns, with the output here);
 *   freqs = self.inv_freq[position_ids]: the CPU index moved to the device for the call (a temporary), a
 *     [n, head_dim] float32 gather; cos = freqs.cos(), sin = freqs.sin() float32; cos.to(x.dtype),
 *     sin.to(x.dtype) (copies unless float32): the output [2, n, head_dim] in x's dtype, the float32
 *     locals dead as it returns. Input: x (ln_pre's output: its dtype). Without an image (num_patches 0, its
 *     input unread): the buffers alone, loaded (the module exists whether or not the tower runs). */
typedef struct {
    int64_t n, D, side;
} prot_cfg;

static int prot_parse(vc_args *a, void *p)
{
    prot_cfg *c = p;
    return vc_arg_int(a, "num_patches", 0, 0, &c->n) || vc_arg_int(a, "head_dim", VC_REQUIRED, 2, &c->D) ||
           vc_arg_int(a, "max_side", VC_REQUIRED, 1, &c->side);
}

static int prot_setup(vc_setup *s, void *p)
{
    const prot_cfg *c = p;
    int64_t t, d[3] = {2, c->n, c->D};
    if (vc_mul(s, c->n, c->D, &t) || vc_mul(s, t, 2, &t) || vc_mul(s, c->side, c->side, &t) || vc_mul(s, t, c->D, &t))
        return -1;
    if (c->n > 0 && s->nin != 1) return vc_fail(s, "inputs", "PixtralRotary with num_patches takes ln_pre's output");
    int64_t w[1] = {t};
    s->out = c->n ? vc_shape_make(3, d) : vc_shape_make(1, w);
    return vc_buffer(s, "inv_freq", t, VC_DT_F32) || vc_buffer(s, "original_inv_freq", t, VC_DT_F32);
}

/* A nodiff op reading x and writing into `into` (made earlier): no new tensor. */
static void write_into(vc_build *b, const char *name, vc_t x, vc_t into)
{
    vc_op *o = vc_op_begin(b, name);
    vc_op_in_nodiff(o, x);
    vc_op_in_nodiff(o, into);
    vc_op_end(o);
}

static void prot_emit(vc_build *b, const void *p)
{
    const prot_cfg *c = p;
    if (c->n == 0) { /* the tower not run (no image): the module's buffers, loaded; an expand view, no memory */
        vc_op *o = vc_op_begin(b, "expand");
        int i = vc_op_in(o, vc_buf(b, 0));
        vc_t y = vc_op_out_view(o, i, vc_n_sample(vc_shape_numel(vc_output_shape(b))), false);
        vc_op_end(o);
        vc_set_output(b, y);
        return;
    }
    const int64_t n = c->n, D = c->D;
    const vc_dtype dt = vc_dt_of(b, vc_input(b, 0));
    /* the output's storage made first and written last (the same peak: it is alive with the float32 cos and
     * sin either way), so that the position ids, made after it, live as long as it (vc_keep_with's owner is
     * an earlier tensor) */
    vc_t out = vc__op_new(b, "empty", vc_n_sample(2 * n * D), dt);
    vc_t pos = vc__op_new(b, "position_ids", vc_n_sample(n), VC_DT_I64);
    vc_t idx = vc__op_new(b, "index_to_device", vc_n_sample(n), VC_DT_I64);
    vc_t fr = vc__op_nograd(b, "index", vc_buf(b, 0), idx, vc_n_sample(n * D), VC_DT_F32);
    vc_release(b, idx);
    if (dt == VC_DT_F32) { /* the float32 cos and sin are the output */
        write_into(b, "cos+sin", fr, out);
    } else {
        vc_t cs32 = vc__op_nograd(b, "cos+sin", fr, -1, vc_n_sample(2 * n * D), VC_DT_F32);
        write_into(b, "to", cs32, out);
        vc_release(b, cs32);
    }
    vc_release(b, fr);
    vc_keep_with(b, pos, out); /* forward's kwargs, alive as long as position_embeddings */
    vc_set_output(b, out);
}

const vc_kind vc_kind_PixtralRotary = {
    .ops = 6,
    .name = "PixtralRotary", .summary = "Pixtral's 2-D rotary cos/sin [2, patches, head_dim] (x's dtype) and position ids",
    .min_inputs = 0, .max_inputs = 1, .cfg_size = sizeof(prot_cfg),
    .parse = prot_parse, .setup = prot_setup, .emit = prot_emit,
};

typedef struct {
    int unused;
} none_cfg;

static int none_parse(vc_args *a, void *p)
{
    (void)a;
    (void)p;
    return 0;
}

/* PixtralMask: generate_block_attention_mask(patch_embeds_list, patch_embeds): torch.full((n, n),
 * finfo(dtype).min, dtype) [n, n] in x's dtype, each image's block zeroed in place, [None, None]
 * .expand(...) (a view). Input: x (ln_pre's output: its dtype and length). */
static int pmask_setup(vc_setup *s, void *p)
{
    (void)p;
    const vc_shape *x = &s->in[0];
    if (x->nd != 2) return vc_fail(s, "inputs", "PixtralMask takes the patches [n, hidden]");
    int64_t t, d[2] = {x->d[0], x->d[0]};
    if (vc_mul(s, x->d[0], x->d[0], &t)) return -1;
    s->out = vc_shape_make(2, d);
    return 0;
}

static void pmask_emit(vc_build *b, const void *p)
{
    (void)p;
    const int64_t n = vc_input_shape(b, 0)->d[0];
    vc_set_output(b, vc__op_new(b, "full", vc_n_sample(n * n), vc_dt_of(b, vc_input(b, 0))));
}

const vc_kind vc_kind_PixtralMask = {
    .ops = 1,
    .name = "PixtralMask", .summary = "Pixtral's block-diagonal float attention mask [patches, patches]",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(none_cfg),
    .parse = none_parse, .setup = pmask_setup, .emit = pmask_emit,
};

/* PixtralAttention: PixtralAttention.forward between the projections and o_proj, on sdpa:
 *   q / k / v_proj(x).view(b, n, heads, D).transpose(1, 2) (views);
 *   apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=0): q * cos + rotate_half(q) * sin in the model's
 *     dtype (the cos / sin are); query_states / key_states rebind to the results: the projections' outputs
 *     die, the results are the forward's locals until it returns, as the value's view is;
 *   sdpa_attention_forward (integrations/sdpa_attention.py): no num_key_value_groups (no repeat_kv),
 *     is_causal False, the mask sliced to the key length (a view): F.scaled_dot_product_attention with the
 *     float attn_mask; transpose(1, 2).contiguous(); reshape(b, n, -1).contiguous() (a view).
 * Inputs: q, k, v [n, hidden], the rotary cos/sin [2, n, D], the mask [n, n]. The locals live until o_proj
 * returns ("held_until" on the norm that made the argument). */
typedef struct {
    int64_t H, D;
} patt_cfg;

static int patt_parse(vc_args *a, void *p)
{
    patt_cfg *c = p;
    return vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->H) || vc_arg_int(a, "head_dim", VC_REQUIRED, 2, &c->D);
}

static int patt_setup(vc_setup *s, void *p)
{
    const patt_cfg *c = p;
    if (s->nin != 5) return vc_fail(s, "inputs", "PixtralAttention takes [q, k, v, cos_sin, mask]");
    const int64_t C = c->H * c->D, n = s->in[0].d[0];
    for (int i = 0; i < 3; i++)
        if (s->in[i].nd != 2 || s->in[i].d[1] != C || s->in[i].d[0] != n)
            return vc_fail(s, "inputs", "q, k and v must be [patches, %lld]", (long long)C);
    if (s->in[4].nd != 2 || s->in[4].d[0] != n || s->in[4].d[1] != n)
        return vc_fail(s, "inputs", "the mask must be [patches, patches]");
    s->out = s->in[0];
    return 0;
}

static void patt_emit(vc_build *b, const void *p)
{
    const patt_cfg *c = p;
    const int64_t n = vc_input_shape(b, 0)->d[0], H = c->H, D = c->D, C = H * D;
    /* the projections are the forward's own temporaries (no caller holds them): q and k die once rotated */
    for (int i = 0; i < 3; i++) vc_input_unheld(b, i);
    vc_t q = vc_input(b, 0), k = vc_input(b, 1), v = vc_input(b, 2), cs = vc_input(b, 3), mask = vc_input(b, 4);
    const vc_t arg = vc_input_arg(b, 0);
    vc_t qv = vc__op_view(b, q, vc_n_sample(n * C), false);
    vc_t kv = vc__op_view(b, k, vc_n_sample(n * C), false);
    vc_t vv = vc__op_view(b, v, vc_n_sample(n * C), false);
    vc_t qe = vc__rope_apply(b, qv, cs, H, n, D, D);
    vc_hold(b, qe);
    vc_t ke = vc__rope_apply(b, kv, cs, H, n, D, D);
    vc_hold(b, ke);
    vc_sdpa_args a = {H, H, n, n, D, true, true, true, false, 0.0, 0, false, true, mask, 0, 0};
    bool blhd = false;
    vc_t o = vc__op_sdpa_gqa(b, qe, ke, vv, &a, &blhd);
    o = vc__op_view(b, o, vc_numel_of(b, o), blhd);
    o = vc__op_contiguous(b, o);
    o = vc__op_view(b, o, vc_numel_of(b, o), true);
    vc_set_output(b, o);
    vc_release(b, qe);
    vc_release(b, ke);
    const vc_t owner = vc_input_arg_held_next(b, 0) ? arg : -1;
    const vc_t locals[3] = {v, qe, ke};
    for (int i = 0; i < 3; i++) {
        vc_keep_to_here(b, locals[i]);
        vc_keep_with(b, locals[i], owner);
    }
}

const vc_kind vc_kind_PixtralAttention = {
    .ops = 40,
    .name = "PixtralAttention", .summary = "Pixtral's attention core: q/k/v + 2-D rope -> sdpa with the block mask -> [patches, hidden]",
    .min_inputs = 5, .max_inputs = 5, .cfg_size = sizeof(patt_cfg),
    .parse = patt_parse, .setup = patt_setup, .emit = patt_emit,
};

/* PixtralMerge: Mistral3PatchMerger.forward before merging_layer: per image image_tokens.view(h, w, d)
 * .permute(2, 0, 1).unsqueeze(0) (views), F.unfold(kernel = stride = spatial_merge_size) (a new
 * [1, d x m^2, h w / m^2] tensor), .view(...).t() (views) appended to permuted_tensor, a local until the
 * merger returns; torch.cat(permuted_tensor) [n / m^2, d x m^2] (a copy), merging_layer's argument. The
 * unfold outputs live as long as the cat's result (until merging_layer returns). With a tower LoRA adapter
 * both record autograd and save no tensor: CatBackward0 keeps sizes, and 2.x's Im2ColBackward0 keeps the
 * input's last two sizes (tools/autograd/derivatives.yaml im2col: col2im_symint(grad, {self.sym_size(-2),
 * self.sym_size(-1)}, ...), load_derivatives.py saving sym_size(N) as a SymInt; torch 1.13 kept `self`). */
typedef struct {
    int64_t m;
} pmerge_cfg;

static int pmerge_parse(vc_args *a, void *p)
{
    return vc_arg_int(a, "merge", VC_REQUIRED, 1, &((pmerge_cfg *)p)->m);
}

static int pmerge_setup(vc_setup *s, void *p)
{
    const pmerge_cfg *c = p;
    const vc_shape *x = &s->in[0];
    int64_t m2;
    if (vc_mul(s, c->m, c->m, &m2)) return -1;
    if (x->nd != 2 || x->d[0] % m2) return vc_fail(s, "inputs", "the patches [n, hidden] must be blocks of merge^2");
    int64_t d[2] = {x->d[0] / m2, 0};
    if (vc_mul(s, x->d[1], m2, &d[1])) return -1;
    s->out = vc_shape_make(2, d);
    return 0;
}

static void pmerge_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0);
    vc_t u = vc__op_fresh(b, "unfold", x, vc_numel_of(b, x));
    vc_t y = vc__op_fresh(b, "cat", u, vc_numel_of(b, x));
    vc_keep_with(b, u, y);
    vc_set_output(b, y);
}

const vc_kind vc_kind_PixtralMerge = {
    .ops = 2,
    .name = "PixtralMerge", .summary = "Mistral3PatchMerger's unfold of merge x merge patches and cat [n / m^2, hidden x m^2]",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(pmerge_cfg),
    .parse = pmerge_parse, .setup = pmerge_setup, .emit = pmerge_emit,
};

/* PixtralOutputs: Mistral3Model.forward after get_image_features: torch.cat(image_features, dim=0) (a copy;
 * the split views of the projector's output die as the name rebinds); special_image_mask = (input_ids ==
 * image_token_id).unsqueeze(-1).expand_as(inputs_embeds) (a bool [L], then views); both locals of the forward
 * until it returns (after the language model); inputs_embeds[special_image_mask].numel() (a boolean-indexed
 * copy of the image rows, a temporary); .to(inputs_embeds' dtype) (the same tensor). Inputs: the projector's
 * output [T, hidden], the token ids [L]. Output: the copy, which masked_scatter writes into inputs_embeds. */
static int pout_setup(vc_setup *s, void *p)
{
    (void)p;
    if (s->nin != 2 || s->in[1].nd != 1) return vc_fail(s, "inputs", "PixtralOutputs takes [image features, token ids]");
    s->out = s->in[0];
    return 0;
}

static void pout_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t m = vc_input(b, 0);
    const vc_dtype dt = vc_dt_of(b, m);
    vc_t y = vc__op_fresh(b, "cat", m, vc_numel_of(b, m));
    vc_keep_forward(b, y);
    const int64_t L = vc_input_shape(b, 1)->d[0];
    vc_keep_forward(b, vc__op_new(b, "eq", vc_n_sample(L), VC_DT_BOOL));
    vc_release(b, vc__op_new(b, "index", vc_numel_of(b, m), dt));
    vc_set_output(b, y);
}

const vc_kind vc_kind_PixtralOutputs = {
    .ops = 3,
    .name = "PixtralOutputs", .summary = "Mistral3Model's image features copy and image-token mask, kept to the forward's end",
    .min_inputs = 2, .max_inputs = 2, .flags = VC_KIND_INDEX_INPUT, .cfg_size = sizeof(none_cfg),
    .parse = none_parse, .setup = pout_setup, .emit = pout_emit,
};
