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
 * sequence_scatter t > 1 (src/hf/hf.c, --tp --sp): Megatron's VocabParallelEmbedding
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
    bool input_embeddings; /* "input_embeddings": the model's get_input_embeddings() whose ids are not the model's
                            * input (WhisperModel's: decoder.embed_tokens over decoder_input_ids); false given
                            * explicitly: never it, even over the model's input (BartModel's is shared, a module
                            * neither stack calls: src/hf/hf_bart.c) */
    bool not_input_embeddings;
    double max_norm, norm_type;
    int64_t scatter;
    bool keep; /* keep_forward: the output a local of the model's forward until it returns, loss included (PaliGemma's
                * inputs_embeds without an image) */
} emb_cfg;

static int emb_parse(vc_args *a, void *p)
{
    emb_cfg *c = p;
    if (vc_arg_int(a, "num_embeddings", VC_REQUIRED, 1, &c->num) ||
        vc_arg_int(a, "embedding_dim", VC_REQUIRED, 1, &c->dim) || vc_arg_int(a, "sequence_scatter", 1, 1, &c->scatter) ||
        vc_arg_bool(a, "keep_forward", false, &c->keep))
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
        vc_arg_bool(a, "scale_grad_by_freq", false, &c->scale_grad) || vc_arg_bool(a, "sparse", false, &c->sparse) ||
        vc_arg_bool(a, "input_embeddings", false, &c->input_embeddings))
        return -1;
    t = vc_arg_type(a, "input_embeddings");
    c->not_input_embeddings = t != 0 && t != 5 && !c->input_embeddings;
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

/* One part of the sort path's merged temporaries: floor((ps x batch + fx) /
 * div) x mul elements of dt. */
static vc_part part(int64_t ps, int64_t fx, int64_t div, int64_t mul, vc_dtype dt)
{
    return (vc_part){{ps, fx}, dt, 0, div, mul};
}

/* embedding_dense_backward_cuda's sort path (num_indices = batch x per >
 * 3072, or scale_grad_by_freq): its temporaries as two merged transients
 * whose parts follow the batch. They are exact while no count reaches the
 * 2^57 cap of smul (a batch past that is sized for itself alone:
 * vc_batch_dependent) and while max_segments = min(num_indices,
 * num_embeddings) takes the same side: the batches declared. */
static void sort_path(vc_build *b, vc_op *o, const emb_cfg *c, int64_t per)
{
    const int64_t N = vc_batch(b), n = smul(N, per);
    /* the largest count is max_partial_segment x D x 4 bytes, max_partial_segment <= 2n (n >= num) or 1.1n */
    int64_t safe = per > 0 ? (INT64_C(1) << 57) / (4 * (c->dim > 4 ? c->dim : 4)) / (2 * per) : 0;
    if (N > safe || per <= 0 || c->num >= (INT64_C(1) << 53)) {
        vc_batch_dependent(b);
        int64_t i8 = r512(smul(n, 8));
        int64_t ms = n < c->num ? n : c->num; /* max_segments */
        int64_t mps = n / 10 + ms;             /* max_partial_segment (NROWS_PER_THREAD 10) */
        int64_t kern = 2 * i8 + (c->scale_grad ? i8 : 0) + i8 + 2 * 512 + 2 * r512(smul(ms, 8)) +
                       r512(smul(mps, 8)) + r512(smul(smul(mps, c->dim), 4));
        vc_op_btemp(o, vc_n_fixed(3 * i8 + r512(smul(n, 16))), VC_DT_U8);
        vc_op_btemp(o, vc_n_fixed(kern), VC_DT_U8);
        return;
    }
    int64_t lo = c->scale_grad ? 1 : 3072 / per + 1, hi = safe;
    bool few = n < c->num; /* max_segments = n, else num_embeddings */
    if (few) hi = hi < (c->num - 1) / per ? hi : (c->num - 1) / per;
    else lo = lo > (c->num + per - 1) / per ? lo : (c->num + per - 1) / per;
    vc_batch_range(b, lo, hi);
    /* sort phase: sorted_indices, orig_indices, range = arange(n), and
     * cub's radix-sort temp storage (alternate key and value buffers, ~2n
     * int64; estimate) */
    const vc_part i8 = part(per, 0, 1, 1, VC_DT_I64);
    vc_part sort[4] = {i8, i8, i8, part(per, 0, 1, 2, VC_DT_I64)};
    vc_op_btemp_parts(o, sort, 4, false);
    /* kernel phase: sorted + orig (+ count), segment_offsets [n], two
     * scalars, partials_per_segment(+_offset) [max_segments],
     * partial_segment_offset [max_partial_segment] int64, and
     * grad_weight_per_segment [max_partial_segment, D] (acc dtype);
     * max_partial_segment = n / 10 + max_segments, one floor over ps x batch + fx */
    vc_part k[VC_MAX_PARTS];
    int nk = 0;
    for (int i = 0; i < (c->scale_grad ? 4 : 3); i++) k[nk++] = i8;
    k[nk++] = part(0, 2 * 512, 1, 1, VC_DT_U8);
    vc_part ms = few ? i8 : part(0, c->num, 1, 1, VC_DT_I64);
    k[nk++] = ms;
    k[nk++] = ms;
    int64_t mps_ps = few ? 11 * per : per, mps_fx = few ? 0 : 10 * c->num;
    k[nk++] = part(mps_ps, mps_fx, 10, 1, VC_DT_I64);
    k[nk++] = part(mps_ps, mps_fx, 10, c->dim, VC_DT_F32);
    vc_op_btemp_parts(o, k, nk, false);
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
    /* PEFT with gradient checkpointing (vc_peft_input_grads): the input embeddings' output made
     * to require grad, a leaf whose AccumulateGrad node keeps it (and the gradient it gets) until
     * the graph is freed after backward: saved here, this node running last in backward; the
     * ops between it and the first checkpointed layer record their graph for it. The hooked module is
     * get_input_embeddings(): the embedding of the model's input ids, or the one a model names
     * ("input_embeddings": whisper's decoder.embed_tokens, over the decoder's ids) */
    bool leaf = !vc_requires_grad(b, w) && vc_peft_input_grads(b) && !c->not_input_embeddings &&
                (vc_input_is_model_input(b, 0) || c->input_embeddings);
    if (leaf) vc_op_leaf_grad(o);
    vc_t y = vc_op_out(o, vc_n_scale(vc_n_sample(per), c->dim), vc_dt_of(b, w));
    vc_op_save_if(o, idx, iw);
    if (leaf) vc_op_save(o, y);
    if (vc_training(b) && vc_requires_grad(b, w)) {
        int64_t n = smul(vc_batch(b), per);
        if (n > 3072 || c->scale_grad) sort_path(b, o, c, per);
        else vc_batch_range(b, 1, per > 0 ? 3072 / per : VC_BATCH_ANY); /* which backward path: num_indices = batch * per */
        /* both paths: grad_weight = zeros(weight sizes), stolen by AccumulateGrad */
    }
    vc_op_end(o);
    if (c->scatter > 1) y = vc__op_seq_scatter(b, y, c->scatter);
    if (c->keep) vc_keep_forward(b, y);
    vc_set_output(b, y);
}

const vc_kind vc_kind_Embedding = {
    .ops = 2,
    .name = "Embedding", .summary = "lookup table of num_embeddings x embedding_dim over int64 ids",
    .min_inputs = 1, .max_inputs = 1, .flags = VC_KIND_INT_INPUT | VC_KIND_TIEABLE, .cfg_size = sizeof(emb_cfg),
    .parse = emb_parse, .setup = emb_setup, .emit = emb_emit,
};
