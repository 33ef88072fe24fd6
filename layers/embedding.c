/*
 * embedding.c — Embedding (torch.nn.Embedding, F.embedding).
 *
 * Forward: embedding(weight, indices) -> [*, D] in the weight's dtype
 * (autocast leaves it alone). The node keeps only the indices (the int64
 * model input: an alias). Backward (embedding_dense_backward_cuda,
 * docs/autograd.md §3.12) depends on num_indices = batch x ids per sample:
 *  - num_indices <= 3072 and not scale_grad_by_freq: one weight-sized
 *    zeros() gradient;
 *  - otherwise a radix sort of the indices and the segment reduction of
 *    embedding_backward_cuda_kernel, whose int64 and fp32 temporaries are
 *    modelled below. The plan is therefore batch-dependent.
 * sequence_scatter t > 1 (src/hf.c, --tp --sp): Megatron's VocabParallelEmbedding
 * with reduce_scatter_embeddings: the lookup, then reduce_scatter_to_sequence_
 * parallel_region to the rank's 1/t of the ids (the dim before the features;
 * MEG tensor_parallel/layers.py VocabParallelEmbedding.forward).
 * max_norm: F.embedding first runs embedding_renorm_ on the weight under
 * no_grad (in place), which sorts and de-duplicates the indices.
 */
#include "ops.h"

typedef struct {
    int64_t num, dim, padding_idx;
    bool has_padding, has_max_norm, scale_grad, sparse;
    double max_norm, norm_type;
    int64_t scatter;
} emb_cfg;

static int emb_parse(vc_args *a, void *p)
{
    emb_cfg *c = p;
    if (vc_arg_int(a, "num_embeddings", VC_REQUIRED, 1, &c->num) ||
        vc_arg_int(a, "embedding_dim", VC_REQUIRED, 1, &c->dim) || vc_arg_int(a, "sequence_scatter", 1, 1, &c->scatter))
        return -1;
    c->has_padding = false;
    int t = vc_arg_type(a, "padding_idx");
    if (t != 0 && t != 5) {
        if (vc_arg_int(a, "padding_idx", 0, INT64_MIN + 1, &c->padding_idx)) return -1;
        /* nn.Embedding: "Padding_idx must be within num_embeddings" */
        if (c->padding_idx >= c->num || c->padding_idx < -c->num)
            return vc_arg_fail(a, "padding_idx", "padding_idx %lld must be within num_embeddings (%lld to %lld)",
                               (long long)c->padding_idx, (long long)-c->num, (long long)(c->num - 1));
        c->has_padding = true;
    }
    c->has_max_norm = false;
    t = vc_arg_type(a, "max_norm");
    if (t != 0 && t != 5) {
        if (vc_arg_float(a, "max_norm", 0.0, -1e308, 1e308, &c->max_norm)) return -1;
        c->has_max_norm = true;
    }
    if (vc_arg_float(a, "norm_type", 2.0, -1e308, 1e308, &c->norm_type) ||
        vc_arg_bool(a, "scale_grad_by_freq", false, &c->scale_grad) || vc_arg_bool(a, "sparse", false, &c->sparse))
        return -1;
    if (c->sparse)
        return vc_arg_fail(a, "sparse", "sparse gradients are not supported (use sparse: false)");
    return 0;
}

static int emb_setup(vc_setup *s, void *p)
{
    const emb_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->nd + 1 > VC_MAX_DIMS)
        return vc_fail(s, NULL, "the output would have more than %d dimensions per sample", VC_MAX_DIMS);
    s->out = *x;
    s->out.d[s->out.nd++] = c->dim;
    s->out_dt = VC_DT_FLOAT;
    if (c->scatter > 1) {
        int64_t *d = &s->out.d[s->out.nd - 2];
        if (s->out.nd < 2 || *d % c->scatter)
            return vc_fail(s, "sequence_scatter", "the ids per sample (%lld) are not divisible by %lld ranks",
                           (long long)(s->out.nd < 2 ? 1 : *d), (long long)c->scatter);
        *d /= c->scatter;
    }
    int64_t w;
    return vc_mul(s, c->num, c->dim, &w) || vc_param2(s, "weight", c->num, c->dim);
}

static int64_t r512(int64_t bytes) { return bytes <= 0 ? 0 : (bytes + 511) / 512 * 512; }

/* Saturating a*b for byte counts (a plan for an absurd batch overflows in
 * the simulation anyway). */
static int64_t smul(int64_t a, int64_t b)
{
    int64_t r; /* capped at 2^57 so the sums below cannot overflow */
    return __builtin_mul_overflow(a, b, &r) || r > (INT64_C(1) << 57) ? (INT64_C(1) << 57) : r;
}

static void emb_emit(vc_build *b, const void *p)
{
    const emb_cfg *c = p;
    vc_t idx = vc_input(b, 0);
    vc_t w = vc_weight(b, 0);
    int64_t per = vc_shape_numel(vc_input_shape(b, 0)); /* ids per sample */

    if (c->has_max_norm) {
        /* embedding_renorm_cuda_: indices.sort() (values + int64 indices),
         * then unique_indices [n] and a scalar; weight updated in place */
        vc_op *o = vc_op_begin(b, "embedding_renorm_");
        vc_op_in_nodiff(o, idx);
        vc_op_ftemp(o, vc_n_sample(2 * per), VC_DT_I64);
        vc_op_end(o);
    }

    vc_op *o = vc_op_begin(b, "embedding");
    int iw = vc_op_in(o, w);
    vc_op_in_nodiff(o, idx);
    vc_t y = vc_op_out(o, vc_n_scale(vc_n_sample(per), c->dim), vc_dt_of(b, w));
    vc_op_save_if(o, idx, iw);
    if (vc_training(b) && vc_requires_grad(b, w)) {
        /* which backward path runs depends on num_indices = batch * per */
        vc_batch_dependent(b);
        int64_t n = smul(vc_batch(b), per);
        if (n > 3072 || c->scale_grad) {
            int64_t i8 = r512(smul(n, 8));
            int64_t ms = n < c->num ? n : c->num;            /* max_segments */
            int64_t mps = n / 10 + ms;                       /* max_partial_segment (NROWS_PER_THREAD 10) */
            /* sort phase: sorted_indices, orig_indices, range = arange(n),
             * and cub's radix-sort temp storage (alternate key and value
             * buffers, ~2n int64; estimate) */
            int64_t sort = 3 * i8 + r512(smul(n, 16));
            /* kernel phase: sorted + orig (+ count), segment_offsets [n],
             * two scalars, partials_per_segment(+_offset) [max_segments],
             * partial_segment_offset [max_partial_segment] int64, and
             * grad_weight_per_segment [max_partial_segment, D] (acc dtype) */
            int64_t kern = 2 * i8 + (c->scale_grad ? i8 : 0) + i8 + 2 * 512 + 2 * r512(smul(ms, 8)) +
                           r512(smul(mps, 8)) + r512(smul(smul(mps, c->dim), 4));
            vc_op_btemp(o, vc_n_fixed(sort), VC_DT_U8);
            vc_op_btemp(o, vc_n_fixed(kern), VC_DT_U8);
        }
        /* both paths: grad_weight = zeros(weight sizes), stolen by AccumulateGrad */
    }
    vc_op_end(o);
    if (c->scatter > 1) y = op_seq_scatter(b, y, c->scatter);
    vc_set_output(b, y);
}

const vc_kind vc_kind_Embedding = {
    .name = "Embedding", .summary = "lookup table of num_embeddings x embedding_dim over int64 ids",
    .min_inputs = 1, .max_inputs = 1, .flags = VC_KIND_INT_INPUT | VC_KIND_TIEABLE, .cfg_size = sizeof(emb_cfg),
    .parse = emb_parse, .setup = emb_setup, .emit = emb_emit,
};
