/*
 * tensor.c — the tensor ops between modules: Reshape, Permute, Transpose,
 * Select, Slice, Mean, Matmul, Parameter, TopK, Gather, Cast.
 *
 * View ops allocate nothing; they make a tensor non-contiguous where
 * PyTorch would, and the next op that needs contiguous memory copies
 * (ops.h: vc__op_contiguous). Select/Slice backward builds a zero tensor of
 * the input's full size (select_backward/slice_backward).
 */
#include <string.h>

#include "ops.h"

typedef struct {
    int64_t shape[VC_MAX_DIMS];
    int nd;
    int64_t dims[VC_MAX_DIMS + 1];
    int ndims;
    int64_t dim0, dim1, dim, index, start, end, step;
    bool has_end, keepdim, contiguous;
    int sel; /* per-sample dim index, set by setup */
    int output; /* TopK: 0 values, 1 indices; Cast: its dtype */
    int mode;   /* Parameter: PARAM_EXPAND, PARAM_LOOKUP or PARAM_REPEAT */
    int64_t grid; /* Parameter: bicubic_from (0: none) */
    int64_t table; /* Parameter lookup: table_rows, the stored rows when more than shape's (0: shape[0]) */
    bool reduce[VC_MAX_DIMS];
} tensor_cfg;

static vc_numel out_numel(vc_build *b) { return vc_n_sample(vc_shape_numel(vc_output_shape(b))); }

static int bad_dim(vc_setup *s, const char *key, int64_t dim, int nd)
{
    if (vc_dim_index(dim, nd) == -2) return vc_fail(s, key, "dim 0 is the batch dimension, which this op may not change");
    return vc_fail(s, key, "dim %lld is out of range for a %d-dimensional input (with the batch)", (long long)dim, nd + 1);
}

/* ---- Reshape: per-sample shape, one -1 allowed */

static int reshape_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    return vc_arg_list(a, "shape", true, -1, c->shape, &c->nd);
}

static int reshape_setup(vc_setup *s, void *p)
{
    const tensor_cfg *c = p;
    int64_t n = vc_shape_numel(&s->in[0]), known = 1;
    int infer = -1;
    for (int i = 0; i < c->nd; i++) {
        if (c->shape[i] == -1) {
            if (infer >= 0) return vc_fail(s, "shape", "only one dimension may be -1");
            infer = i;
        } else if (c->shape[i] == 0) {
            return vc_fail(s, "shape", "dimension %d is 0", i);
        } else if (vc_mul(s, known, c->shape[i], &known)) {
            return -1;
        }
    }
    s->out = vc_shape_make(c->nd, c->shape);
    if (infer >= 0) {
        if (n % known) return vc_fail(s, "shape", "cannot reshape %lld elements per sample into a multiple of %lld", (long long)n, (long long)known);
        s->out.d[infer] = n / known;
    } else if (known != n) {
        return vc_fail(s, "shape", "the shape has %lld elements but the input has %lld per sample", (long long)known, (long long)n);
    }
    return 0;
}

static void reshape_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc__op_contiguous(b, vc_input(b, 0)); /* reshape copies what it cannot view */
    vc_set_output(b, vc__op_view(b, x, vc_numel_of(b, x), true));
}

const vc_kind vc_kind_Reshape = {
    .ops = 2,
    .name = "Reshape", .summary = "reshape to a per-sample shape (a view; copies non-contiguous input)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tensor_cfg),
    .parse = reshape_parse, .setup = reshape_setup, .emit = reshape_emit,
};

/* ---- Permute: dims include the batch dim, which must stay first */

static int permute_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    int n;
    if (vc_arg_list(a, "dims", true, INT64_MIN + 1, c->dims, &n)) return -1;
    c->ndims = n;
    return 0;
}

static int permute_setup(vc_setup *s, void *p)
{
    tensor_cfg *c = p;
    int nd = s->in[0].nd;
    if (c->ndims != nd + 1)
        return vc_fail(s, "dims", "expected %d dims (the input has %d dimensions with the batch), got %d", nd + 1, nd + 1, c->ndims);
    bool seen[VC_MAX_DIMS + 1] = {false};
    c->contiguous = true;
    for (int i = 0; i < c->ndims; i++) {
        int64_t d = c->dims[i] < 0 ? c->dims[i] + nd + 1 : c->dims[i];
        if (d < 0 || d > nd) return vc_fail(s, "dims", "dim %lld is out of range", (long long)c->dims[i]);
        if (seen[d]) return vc_fail(s, "dims", "dim %lld appears twice", (long long)d);
        seen[d] = true;
        if (i == 0 && d != 0) return vc_fail(s, "dims", "the batch dimension must stay first (dims[0] must be 0)");
        if (i > 0) s->out.d[i - 1] = s->in[0].d[d - 1];
        if (d != i && s->in[0].d[d - 1] != 1) c->contiguous = false;
    }
    s->out.nd = nd;
    return 0;
}

static void view_emit(vc_build *b, const void *p)
{
    const tensor_cfg *c = p;
    vc_t x = vc_input(b, 0);
    vc_set_output(b, vc__op_view(b, x, vc_numel_of(b, x), c->contiguous && vc_contiguous(b, x)));
}

const vc_kind vc_kind_Permute = {
    .ops = 1,
    .name = "Permute", .summary = "reorders dims (a view; dims[0] must be 0)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tensor_cfg),
    .parse = permute_parse, .setup = permute_setup, .emit = view_emit,
};

/* ---- Transpose */

static int transpose_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    return vc_arg_int(a, "dim0", VC_REQUIRED, INT64_MIN + 1, &c->dim0) || vc_arg_int(a, "dim1", VC_REQUIRED, INT64_MIN + 1, &c->dim1);
}

static int transpose_setup(vc_setup *s, void *p)
{
    tensor_cfg *c = p;
    int nd = s->in[0].nd;
    int a = vc_dim_index(c->dim0, nd), b = vc_dim_index(c->dim1, nd);
    if (a < 0) return bad_dim(s, "dim0", c->dim0, nd);
    if (b < 0) return bad_dim(s, "dim1", c->dim1, nd);
    s->out = s->in[0];
    s->out.d[a] = s->in[0].d[b];
    s->out.d[b] = s->in[0].d[a];
    c->contiguous = a == b || s->in[0].d[a] == 1 || s->in[0].d[b] == 1;
    return 0;
}

const vc_kind vc_kind_Transpose = {
    .ops = 1,
    .name = "Transpose", .summary = "swaps two dims (a view)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tensor_cfg),
    .parse = transpose_parse, .setup = transpose_setup, .emit = view_emit,
};

/* ---- Select / Slice */

static int select_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    return vc_arg_int(a, "dim", VC_REQUIRED, INT64_MIN + 1, &c->dim) || vc_arg_int(a, "index", VC_REQUIRED, INT64_MIN + 1, &c->index);
}

static int select_setup(vc_setup *s, void *p)
{
    tensor_cfg *c = p;
    const vc_shape *x = &s->in[0];
    int d = vc_dim_index(c->dim, x->nd);
    if (d < 0) return bad_dim(s, "dim", c->dim, x->nd);
    if (c->index < -x->d[d] || c->index >= x->d[d])
        return vc_fail(s, "index", "index %lld is out of range for dimension %lld of size %lld", (long long)c->index, (long long)c->dim, (long long)x->d[d]);
    if (x->nd == 1) return vc_fail(s, "dim", "selecting from a 1-dimensional sample would leave only the batch dimension");
    c->sel = d;
    c->contiguous = x->d[d] == 1;
    s->out.nd = 0;
    for (int i = 0; i < x->nd; i++)
        if (i != d) s->out.d[s->out.nd++] = x->d[i];
    return 0;
}

static void select_emit(vc_build *b, const void *p)
{
    const tensor_cfg *c = p;
    vc_t x = vc_input(b, 0);
    vc_set_output(b, vc__op_select(b, x, out_numel(b), c->contiguous && vc_contiguous(b, x)));
}

const vc_kind vc_kind_Select = {
    .ops = 1,
    .name = "Select", .summary = "x.select(dim, index) (a view; backward builds a full-size grad)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tensor_cfg),
    .parse = select_parse, .setup = select_setup, .emit = select_emit,
};

static int slice_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    c->has_end = vc_arg_type(a, "end") != 0 && vc_arg_type(a, "end") != 5;
    return vc_arg_int(a, "dim", VC_REQUIRED, INT64_MIN + 1, &c->dim) || vc_arg_int(a, "start", 0, INT64_MIN + 1, &c->start) ||
           (c->has_end && vc_arg_int(a, "end", 0, INT64_MIN + 1, &c->end)) || vc_arg_int(a, "step", 1, 1, &c->step);
}

static int slice_setup(vc_setup *s, void *p)
{
    tensor_cfg *c = p;
    const vc_shape *x = &s->in[0];
    int d = vc_dim_index(c->dim, x->nd);
    if (d < 0) return bad_dim(s, "dim", c->dim, x->nd);
    int64_t n = x->d[d];
    int64_t st = c->start < 0 ? c->start + n : c->start, en = c->has_end ? (c->end < 0 ? c->end + n : c->end) : n;
    st = st < 0 ? 0 : st > n ? n : st; /* Python slice clamping */
    en = en < st ? st : en > n ? n : en;
    int64_t len = (en - st + c->step - 1) / c->step;
    if (len == 0) return vc_fail(s, "start", "the slice [%lld:%lld:%lld] of a dimension of size %lld is empty",
                                 (long long)c->start, (long long)(c->has_end ? c->end : n), (long long)c->step, (long long)n);
    s->out = *x;
    s->out.d[d] = len;
    c->contiguous = len == n;
    return 0;
}

const vc_kind vc_kind_Slice = {
    .ops = 1,
    .name = "Slice", .summary = "x[..., start:end:step] along dim (a view; backward builds a full-size grad)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tensor_cfg),
    .parse = slice_parse, .setup = slice_setup, .emit = select_emit,
};

/* ---- Mean over dims (never the batch) */

static int mean_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    int t = vc_arg_type(a, "dim");
    if (t == 1) {
        c->ndims = 1;
        if (vc_arg_int(a, "dim", 0, INT64_MIN + 1, &c->dims[0])) return -1;
    } else if (t == 0) {
        return vc_arg_fail(a, "dim", "missing: Mean needs dim (an int or a list; dim 0 is the batch and cannot be reduced)");
    } else if (vc_arg_list(a, "dim", true, INT64_MIN + 1, c->dims, &c->ndims)) {
        return -1;
    }
    return vc_arg_bool(a, "keepdim", false, &c->keepdim);
}

static int mean_setup(vc_setup *s, void *p)
{
    tensor_cfg *c = p;
    const vc_shape *x = &s->in[0];
    memset(c->reduce, 0, sizeof c->reduce);
    for (int i = 0; i < c->ndims; i++) {
        int d = vc_dim_index(c->dims[i], x->nd);
        if (d < 0) return bad_dim(s, "dim", c->dims[i], x->nd);
        if (c->reduce[d]) return vc_fail(s, "dim", "dim %lld appears twice", (long long)c->dims[i]);
        c->reduce[d] = true;
    }
    s->out.nd = 0;
    for (int i = 0; i < x->nd; i++) {
        if (!c->reduce[i]) s->out.d[s->out.nd++] = x->d[i];
        else if (c->keepdim) s->out.d[s->out.nd++] = 1;
    }
    if (s->out.nd == 0) { /* every per-sample dim reduced: [N] */
        s->out.nd = 1;
        s->out.d[0] = 1;
        return vc_fail(s, "dim", "reducing every per-sample dim without keepdim leaves only the batch dimension; use keepdim or Flatten after");
    }
    return 0;
}

static void mean_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_set_output(b, vc__op_mean(b, vc_input(b, 0), out_numel(b)));
}

const vc_kind vc_kind_Mean = {
    .ops = 1,
    .name = "Mean", .summary = "mean over dim(s); saves nothing",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tensor_cfg),
    .parse = mean_parse, .setup = mean_setup, .emit = mean_emit,
};

/* ---- Matmul: torch.matmul of two per-sample [..., n, m] x [..., m, p] */

static int matmul_parse(vc_args *a, void *p)
{
    (void)a;
    (void)p;
    return 0;
}

static int matmul_setup(vc_setup *s, void *p)
{
    (void)p;
    const vc_shape *a = &s->in[0], *b = &s->in[1];
    char sa[96], sb[96];
    vc_shape_str(a, sa, sizeof sa);
    vc_shape_str(b, sb, sizeof sb);
    if (a->nd < 2 || b->nd < 2) return vc_fail(s, "inputs", "Matmul needs at least 2 dims per sample, got %s and %s", sa, sb);
    if (a->nd != b->nd) return vc_fail(s, "inputs", "Matmul needs inputs of the same rank per sample, got %s and %s", sa, sb);
    int nd = a->nd;
    if (a->d[nd - 1] != b->d[nd - 2])
        return vc_fail(s, "inputs", "cannot multiply %s by %s: %lld columns vs %lld rows", sa, sb, (long long)a->d[nd - 1], (long long)b->d[nd - 2]);
    s->out = *a;
    for (int i = 0; i < nd - 2; i++) {
        if (a->d[i] != b->d[i] && a->d[i] != 1 && b->d[i] != 1)
            return vc_fail(s, "inputs", "batch dims of %s and %s do not broadcast", sa, sb);
        s->out.d[i] = a->d[i] > b->d[i] ? a->d[i] : b->d[i];
    }
    s->out.d[nd - 1] = b->d[nd - 1];
    return 0;
}

/* matmul expands a broadcast operand and reshapes it for bmm: a copy. */
static vc_t expand_for_bmm(vc_build *b, vc_t x, const vc_shape *xs, const vc_shape *out)
{
    int64_t n = 1;
    for (int i = 0; i < xs->nd - 2; i++) n *= out->d[i];
    n *= xs->d[xs->nd - 2] * xs->d[xs->nd - 1];
    if (n == vc_shape_numel(xs)) return x;
    return vc__op_fresh(b, "expand_reshape", x, vc_n_sample(n)); /* backward: sum_to the operand's shape (a new tensor) */
}

static void matmul_emit(vc_build *b, const void *p)
{
    (void)p;
    const vc_shape *out = vc_output_shape(b);
    vc_t a = expand_for_bmm(b, vc_input(b, 0), vc_input_shape(b, 0), out);
    vc_t c = expand_for_bmm(b, vc_input(b, 1), vc_input_shape(b, 1), out);
    vc_set_output(b, vc__op_bmm(b, a, c, out_numel(b)));
}

const vc_kind vc_kind_Matmul = {
    .ops = 4,
    .name = "Matmul", .summary = "torch.matmul of two inputs (bmm; saves both)",
    .min_inputs = 2, .max_inputs = 2, .cfg_size = 0,
    .parse = matmul_parse, .setup = matmul_setup, .emit = matmul_emit,
};

/* ---- Parameter: a learned tensor of per-sample shape, expanded over the batch */

/* bicubic_from G: the stored parameter is [1 + G^2, dim], its first row a class position and the rest a G x G grid,
 * and the output [1 + n, dim] (shape) its grid resized to the image's n patches as
 * Dinov2Embeddings.interpolate_pos_encoding does it (modeling_dinov2.py @ 015e68769f9823df27f5f7372dc155277e6ff7e6):
 * class_pos_embed = position_embeddings[:, :1] and patch_pos_embed = position_embeddings[:, 1:] (slices: their
 * backward a zero tensor of the parameter's size each), .reshape(1, G, G, dim).permute(0, 3, 1, 2) (views),
 * nn.functional.interpolate(patch_pos_embed.to(torch.float32), size=(new_height, new_width), mode="bicubic",
 * align_corners=False) (the cast a copy unless float32; upsample_bicubic2d saves nothing, its backward a new
 * float32 gradient of its input's size), .to(dtype=target_dtype) (a copy unless float32), .permute(0, 2, 3, 1)
 * .view(1, -1, dim) (views), torch.cat((class_pos_embed, patch_pos_embed), dim=1) (a new tensor, saves nothing):
 * all once per forward, not per sample; the sum with the embeddings broadcasts it over the batch. */
/* mode: "expand" (above); "lookup", an nn.Embedding over a fixed [1, n] position_ids buffer (SiglipVisionEmbeddings:
 * self.position_embedding(self.position_ids), modeling_siglip.py @ efa7189c): a new [shape] tensor once per forward
 * (embedding; the ids a buffer of the layer's, int64, saved without a copy), its backward embedding_dense_backward's new parameter-sized
 * gradient, broadcast over the batch by its sum; "repeat", p.repeat(batch_size, 1, ...) (SiglipMultiheadAttention-
 * PoolingHead's probe): a new tensor per sample, its backward the sum over the repeats (a new parameter-sized one). */
static const char *const parameter_modes[] = {"expand", "lookup", "repeat", NULL};
enum { PARAM_EXPAND, PARAM_LOOKUP, PARAM_REPEAT };

static int parameter_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    return vc_arg_list(a, "shape", true, 1, c->shape, &c->nd) || vc_arg_int(a, "bicubic_from", 0, 1, &c->grid) ||
           vc_arg_enum(a, "mode", parameter_modes, PARAM_EXPAND, &c->mode) || vc_arg_int(a, "table_rows", 0, 1, &c->table);
}

static int parameter_setup(vc_setup *s, void *p)
{
    const tensor_cfg *c = p;
    s->out = vc_shape_make(c->nd, c->shape);
    int64_t n = vc_shape_numel(&s->out);
    if (n < 0) return vc_fail(s, "shape", "the shape overflows 64-bit arithmetic");
    if (c->mode != PARAM_EXPAND && c->grid > 0)
        return vc_fail(s, "mode", "bicubic_from interpolates an expanded parameter only");
    if (c->grid > 0) {
        int64_t t, w[2];
        if (c->nd != 2 || c->shape[0] < 2)
            return vc_fail(s, "bicubic_from", "needs shape [1 + patches, dim] (a class position and the patches')");
        if (vc_mul(s, c->grid, c->grid, &t) || vc_mul(s, t + 1, c->shape[1], &w[0])) return -1;
        w[0] = t + 1;
        w[1] = c->shape[1];
        s->ops = 10; /* the autocast copy, 2 slices, 2 views, 2 casts, interpolate, cat, expand */
        return vc_param_shape(s, "weight", 2, w, 0);
    }
    /* table_rows T (lookup only): the table and its position_ids buffer hold T rows, the lookup the first shape[0]
     * (SiglipTextEmbeddings: position_ids[:, :seq_length], a view of the buffer, modeling_siglip.py @ efa7189c) */
    if (c->table > 0 && (c->mode != PARAM_LOOKUP || c->table < c->shape[0]))
        return vc_fail(s, "table_rows", "a lookup's stored rows, at least shape[0] (%lld)", (long long)c->shape[0]);
    int64_t w[VC_MAX_DIMS];
    memcpy(w, c->shape, sizeof w);
    if (c->table > 0) w[0] = c->table;
    if (vc_param_shape(s, "weight", c->nd, w, 0)) return -1;
    /* lookup: the position_ids buffer, int64 [1, rows] (register_buffer(..., persistent=False): model memory) */
    return c->mode == PARAM_LOOKUP ? vc_buffer(s, "position_ids", w[0], VC_DT_I64) : 0;
}

static void parameter_emit(vc_build *b, const void *p)
{
    const tensor_cfg *c = p;
    /* p.expand(N, ...): a view; its backward is sum_to (a parameter-sized grad) */
    vc_t w = vc__op_autocast_weight(b, vc_weight(b, 0));
    if (c->grid > 0) { /* interpolate_pos_encoding (above) */
        const vc_dtype dt = vc_dt_of(b, w);
        const int64_t dim = c->shape[1], n = (c->shape[0] - 1) * dim;
        vc_t cls = vc__op_select(b, w, vc_n_fixed(dim), true);
        vc_t grid = vc__op_view(b, vc__op_select(b, w, vc_n_fixed(c->grid * c->grid * dim), true),
                                vc_n_fixed(c->grid * c->grid * dim), false);
        vc_t up = vc__op_fresh(b, "upsample_bicubic2d", vc__op_cast(b, grid, VC_DT_F32), vc_n_fixed(n));
        vc_t pe = vc__op_view(b, vc__op_cast(b, up, dt), vc_n_fixed(n), false);
        vc_op *k = vc_op_begin(b, "cat");
        vc_op_grad(k, vc_op_in(k, cls), VC_GRAD_PASS);
        vc_op_grad(k, vc_op_in(k, pe), VC_GRAD_PASS);
        w = vc_op_out(k, vc_n_fixed(n + dim), dt);
        vc_op_end(k);
    }
    if (c->mode == PARAM_REPEAT) {
        vc_set_output(b, vc__op_fresh(b, "repeat", w, out_numel(b)));
        return;
    }
    if (c->mode == PARAM_LOOKUP)
        w = vc__op_fresh(b, "embedding", w, vc_n_fixed(vc_shape_numel(vc_output_shape(b))));
    vc_op *o = vc_op_begin(b, "expand");
    int i = vc_op_in(o, w);
    vc_t y = vc_op_out_view(o, i, out_numel(b), false);
    vc_op_end(o);
    vc_set_output(b, y);
}

const vc_kind vc_kind_Parameter = {
    .ops = 3, /* the autocast copy, expand; lookup's embedding between them (bicubic_from: setup's 10) */
    .name = "Parameter", .summary = "a learned tensor of per-sample shape (class token, positional embedding)",
    .min_inputs = 0, .max_inputs = 0, .flags = VC_KIND_NO_INPUT, .cfg_size = sizeof(tensor_cfg),
    .parse = parameter_parse, .setup = parameter_setup, .emit = parameter_emit,
};

/* ---- TopK: torch.topk(x, k, dim, largest, sorted) -> (values, indices)
 *
 * Forward allocates both results, [.., k, ..] along dim: values in x's dtype
 * and int64 indices (aten/src/ATen/native/TensorCompare.cpp / Sorting.cpp
 * topk_out). derivatives.yaml: `topk: self: value_selecting_reduction_backward_symint(grad,
 * dim, indices, self.sym_sizes(), true)`, output_differentiability [True,
 * False]: TopkBackward0 keeps the indices (not the input) and its backward
 * (aten/src/ATen/native/ReduceOps.cpp value_selecting_reduction_backward_symint)
 * is zeros_symint(sizes).scatter_(dim, indices, grad): one new input-sized
 * gradient. `largest` and `sorted` change no size.
 *
 * A kind has one output, so the file says which result it is: "values" (the
 * layer's output; the indices kept for backward as the MoE router's topk in
 * llm.c) or "indices" (int64, no gradient; the values a transient: Python
 * drops the unused one when the statement ends). */
static const char *const topk_outputs[] = {"values", "indices", NULL};

static int topk_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    bool largest, sorted;
    return vc_arg_int(a, "k", VC_REQUIRED, 1, &c->index) || vc_arg_int(a, "dim", -1, INT64_MIN + 1, &c->dim) ||
           vc_arg_bool(a, "largest", true, &largest) || vc_arg_bool(a, "sorted", true, &sorted) ||
           vc_arg_enum(a, "output", topk_outputs, 0, &c->output);
}

static int topk_setup(vc_setup *s, void *p)
{
    tensor_cfg *c = p;
    const vc_shape *x = &s->in[0];
    int d = vc_dim_index(c->dim, x->nd);
    if (d < 0) return bad_dim(s, "dim", c->dim, x->nd);
    if (c->index > x->d[d])
        return vc_fail(s, "k", "k %lld is larger than dimension %lld (size %lld)", (long long)c->index, (long long)c->dim,
                       (long long)x->d[d]);
    c->sel = d;
    s->out = *x;
    s->out.d[d] = c->index;
    if (c->output == 1) s->out_dt = VC_DT_I64;
    return 0;
}

static void topk_emit(vc_build *b, const void *p)
{
    const tensor_cfg *c = p;
    vc_t x = vc_input(b, 0);
    vc_numel n = out_numel(b);
    vc_op *o = vc_op_begin(b, "topk");
    vc_t y;
    if (c->output == 0) {
        vc_op_in(o, x); /* VC_GRAD_NEW: zeros of the input's size, scattered into */
        y = vc_op_out(o, n, vc_dt_of(b, x));
        vc_op_extra(o, n, VC_DT_I64); /* indices: saved for backward */
    } else {
        vc_op_in_nodiff(o, x);
        vc_op_ftemp(o, n, vc_dt_of(b, x)); /* the values, unused */
        y = vc_op_out(o, n, VC_DT_I64);
    }
    vc_op_end(o);
    vc_set_output(b, y);
}

const vc_kind vc_kind_TopK = {
    .ops = 1,
    .name = "TopK", .summary = "torch.topk along dim: the values (indices kept for backward) or the int64 indices",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tensor_cfg),
    .parse = topk_parse, .setup = topk_setup, .emit = topk_emit,
};

/* ---- Gather: torch.gather(x, dim, index), index an int64 input
 *
 * The output has the index's shape (aten gather: result.resize_(index.sizes())),
 * in x's dtype. derivatives.yaml: `gather: self: gather_backward(grad, self, dim,
 * index, sparse_grad)`, `index: non_differentiable`: GatherBackward0 saves self
 * (the formula takes the tensor) and index; gather_backward
 * (aten/src/ATen/native/TensorAdvancedIndexing.cpp) is
 * grad.new_zeros(self.sizes()).scatter_add_(dim, index, grad): one new
 * input-sized gradient. `shape`: the per-sample shape gather sees the index
 * as, when the code made it with views of the index input (idx.unsqueeze(-1)
 * .expand(-1, -1, C): no memory); absent, the index input's own shape. */
static int gather_parse(vc_args *a, void *p)
{
    tensor_cfg *c = p;
    c->nd = 0;
    return vc_arg_int(a, "dim", VC_REQUIRED, INT64_MIN + 1, &c->dim) ||
           (vc_arg_type(a, "shape") != 0 && vc_arg_list(a, "shape", true, 1, c->shape, &c->nd));
}

static int gather_setup(vc_setup *s, void *p)
{
    tensor_cfg *c = p;
    const vc_shape *x = &s->in[0], *ix = &s->in[1];
    int d = vc_dim_index(c->dim, x->nd);
    if (d < 0) return bad_dim(s, "dim", c->dim, x->nd);
    vc_shape v = c->nd ? vc_shape_make(c->nd, c->shape) : *ix;
    if (v.nd != x->nd)
        return vc_fail(s, c->nd ? "shape" : "inputs", "the index has %d dims per sample and the input %d: gather needs the same rank",
                       v.nd, x->nd);
    for (int i = 0; i < v.nd; i++)
        if (i != d && v.d[i] > x->d[i])
            return vc_fail(s, c->nd ? "shape" : "inputs", "the index's dimension %d (%lld) is larger than the input's (%lld)", i + 1,
                           (long long)v.d[i], (long long)x->d[i]);
    int64_t nv = vc_shape_numel(&v), ni = vc_shape_numel(ix);
    if (nv < 0 || ni > nv || nv % ni)
        return vc_fail(s, "shape", "a view of the index input (%lld elements per sample) cannot have %lld", (long long)ni, (long long)nv);
    c->sel = d;
    s->out = v;
    return 0;
}

static void gather_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0), index = vc_input(b, 1);
    vc_op *o = vc_op_begin(b, "gather");
    int ix = vc_op_in(o, x); /* VC_GRAD_NEW: new_zeros(self.sizes()).scatter_add_ */
    vc_op_in_nodiff(o, index);
    vc_t y = vc_op_out(o, out_numel(b), vc_dt_of(b, x));
    vc_op_save_if(o, x, ix);
    vc_op_save_if(o, index, ix);
    vc_op_end(o);
    vc_set_output(b, y);
}

const vc_kind vc_kind_Gather = {
    .ops = 1,
    .name = "Gather", .summary = "torch.gather(x, dim, index) with an int64 index input (saves x and the index)",
    .min_inputs = 2, .max_inputs = 2, .flags = VC_KIND_INDEX_INPUT, .cfg_size = sizeof(tensor_cfg),
    .parse = gather_parse, .setup = gather_setup, .emit = gather_emit,
};

/* ---- Cast: x.to(dtype)
 *
 * Tensor.to(dtype) (aten _to_copy): a new tensor in the target dtype, x itself when it already has it;
 * ToCopyBackward0 saves nothing and casts the gradient back. dtype "float32" is x.float() /
 * x.to(torch.float32); "parameters" is x.to(module.weight.dtype), the dtype the parameters are stored in
 * (Mamba2Block.forward's hidden_states.to(dtype=self.norm.weight.dtype), Mamba2ForCausalLM.forward's
 * hidden_states.to(self.lm_head.weight.dtype): modeling_mamba2.py @ 020a37d2). */
enum { CAST_F32, CAST_PARAMS };
static const char *const cast_names[] = {"float32", "parameters", NULL};

static int cast_parse(vc_args *a, void *p)
{
    if (vc_arg_type(a, "dtype") == 0) return vc_arg_fail(a, "dtype", "missing (\"float32\" or \"parameters\")");
    return vc_arg_enum(a, "dtype", cast_names, CAST_F32, &((tensor_cfg *)p)->output);
}

static int cast_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    return 0;
}

static void cast_emit(vc_build *b, const void *p)
{
    const tensor_cfg *c = p;
    vc_set_output(b, vc__op_cast(b, vc_input(b, 0), c->output == CAST_F32 ? VC_DT_F32 : vc_param_dt(b)));
}

const vc_kind vc_kind_Cast = {
    .ops = 1,
    .name = "Cast", .summary = "x.to(dtype): float32 or the parameters' dtype; a new tensor unless x has it, saves nothing",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(tensor_cfg),
    .parse = cast_parse, .setup = cast_setup, .emit = cast_emit,
};
