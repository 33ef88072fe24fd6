/*
 * moe_ep.c — a SparseMoE layer on one Megatron-Core expert-parallel rank
 * (--ep N; docs/parallel.md section 6).
 *
 * With --ep the layer is Megatron-Core's MoELayer, not Hugging Face's block:
 * TopKRouter (softmax after top-k, no aux loss: moe_aux_loss_coeff's default
 * 0), MoEAlltoAllTokenDispatcher (dropless, moe_permute_fusion off: the
 * unfused permute / sort_chunks_by_idxs / unpermute), SequentialMLP experts
 * (moe_grouped_gemm off) with a fused gate+up linear_fc1 and the fused
 * token-weighted SwiGLU (bias_swiglu_fusion's default), linear layers saving
 * their input and weight. Each rank holds num_experts / ep experts; routing is
 * the balanced one vramcalc assumes (every rank receives as many rows as it
 * sends, T x k), or with --moe-imbalance the busiest expert, expert 0, holds
 * min(ep T, ceil(F ep T k / E)) rows of the ep ranks' tokens, on rank 0.
 *
 * Sources, MC = NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553:
 *  - MC megatron/core/transformer/moe/moe_layer.py MoELayer.forward
 *    (custom_forward: route, preprocess, dispatch, routed_experts_compute,
 *    combine, postprocess; its locals hidden_states, dispatched_input and
 *    probs live until it returns);
 *  - MC moe/router.py TopKRouter.gating (router_gating_linear in the input's
 *    dtype) and moe/moe_utils.py topk_routing_with_score_function (topk,
 *    softmax(dtype=float32), type_as, the scatters into routing_probs and
 *    routing_map);
 *  - MC moe/token_dispatcher.py MoEAlltoAllTokenDispatcher.dispatch_preprocess,
 *    token_dispatch, dispatch_postprocess, combine_preprocess, token_combine,
 *    combine_postprocess (self.probs and self.routing_map are kept);
 *  - MC moe/moe_utils.py permute (argsort of the transposed map, index_select),
 *    unpermute (zeros + scatter_add_), sort_chunks_by_idxs (split + cat);
 *  - MC tensor_parallel/mappings.py _AllToAll (output new_empty of the received
 *    rows; backward is the reverse all-to-all into a new tensor);
 *  - MC moe/experts.py SequentialMLP.forward (torch.split, an MLP per local
 *    expert, torch.cat), transformer/mlp.py MLP.forward (per_token_scale),
 *    fusions/fused_bias_swiglu.py WeightedSwiGLUFunction (saves input and
 *    weights; jit_fuser = torch.compile);
 *  - MC training/arguments.py validate_args ("Number of experts should be a
 *    multiple of expert model parallel_size").
 */
#include <stdio.h>

#include "moe_ep.h"
#include "ops.h"

#define EP_MAX_LOCAL 127 /* local experts a rank's layer holds: router + 2 x 127 = 255 parameter tensors */

int vc__moe_ep_setup(vc_setup *s, const vc_moe_ep *c, bool silu, bool shared, bool renorm)
{
    if (c->E % c->ep)
        return vc_fail(s, "num_experts", O("ep") ": %lld expert-parallel ranks do not divide num_experts (%lld)", (long long)c->ep,
                       (long long)c->E);
    if (c->E / c->ep > EP_MAX_LOCAL)
        return vc_fail(s, "num_experts", O("ep") ": %lld experts on each of %lld expert-parallel ranks: more than the %d a rank's "
                       "layer holds (256 parameter tensors); give " OV("ep", "%lld") " or more", (long long)(c->E / c->ep),
                       (long long)c->ep, EP_MAX_LOCAL, (long long)((c->E + EP_MAX_LOCAL - 1) / EP_MAX_LOCAL));
    if (shared)
        return vc_fail(s, "shared_expert_intermediate_size", O("ep") ": a shared expert (Megatron's SharedExpertMLP) is not modelled");
    if (!silu) return vc_fail(s, "activation", O("ep") ": the experts' activation must be silu (Megatron's fused weighted SwiGLU)");
    if (!renorm)
        return vc_fail(s, "norm_topk_prob", O("ep") ": top-k probabilities without renormalisation (moe_router_pre_softmax) are not modelled");
    if (vc_param_shape(s, "router.weight", 2, (int64_t[2]){c->E, c->hidden}, 0)) return -1;
    char n[80];
    for (int64_t j = 0; j < c->E / c->ep; j++) {
        snprintf(n, sizeof n, "local_experts.%lld.linear_fc1.weight", (long long)j);
        if (vc_param_shape(s, n, 2, (int64_t[2]){2 * c->inter, c->hidden}, VC_PARAM_LINEAR)) return -1;
        snprintf(n, sizeof n, "local_experts.%lld.linear_fc2.weight", (long long)j);
        if (vc_param_shape(s, n, 2, (int64_t[2]){c->hidden, c->inter}, VC_PARAM_LINEAR)) return -1;
    }
    return 0;
}

/* The rows each local expert of the busiest rank (rank 0) gets, n[j], and
 * their sum, the rows the rank receives, *R. Balanced: the rank receives
 * T k rows (what it sends), spread over its El experts as the assignments
 * j mod El: floor((T k + El - 1 - j) / El), a floor count valid for every
 * batch up to the token cap. --moe-imbalance F: expert 0 gets
 * min(ep T, ceil(F ep T k / E)) of the ep T k assignments and the other
 * experts share the rest evenly (the SparseMoE rule over the EP group's
 * tokens), counted at this batch. */
static void ep_rows(vc_build *b, const vc_moe_ep *c, int64_t L, vc_numel *n, vc_numel *R)
{
    int64_t El = c->E / c->ep, H = c->hidden, wmax = 2 * c->inter > H ? 2 * c->inter : H, B = vc_batch(b), Lk;
    int64_t tcap = (INT64_C(1) << 53) / wmax / c->ep / c->k; /* tokens kept so that ep T k x width stays below 2^56 */
    if (tcap < 1) tcap = 1;
    bool capped = B > tcap / L;
    if (capped) vc_batch_range(b, tcap / L + 1, VC_BATCH_ANY);
    else vc_batch_range(b, 1, tcap / L);
    bool even = c->imbalance <= 1.0 || c->E == 1;
    if (even && !capped && !__builtin_mul_overflow(L, c->k, &Lk)) {
        for (int64_t j = 0; j < El; j++) n[j] = vc_n_floor(Lk, El - 1 - j, (int32_t)El);
        *R = vc_n_sample(Lk);
        return;
    }
    if (!capped && !even) vc_batch_dependent(b);
    int64_t T = capped ? tcap : B * L, total = c->ep * T * c->k, sum = 0;
    if (even) {
        for (int64_t j = 0; j < El; j++) sum += (n[j] = vc_n_fixed((T * c->k + El - 1 - j) / El)).fx;
        *R = vc_n_fixed(sum);
        return;
    }
    double want = c->imbalance * (double)total / (double)c->E;
    int64_t busy = want >= (double)(c->ep * T) ? c->ep * T : (int64_t)want + ((double)(int64_t)want < want ? 1 : 0);
    if (busy > total) busy = total;
    int64_t rest = total - busy, others = c->E - 1;
    for (int64_t j = 0; j < El; j++) {
        int64_t r = j == 0 ? busy : rest / others + (j - 1 < rest % others ? 1 : 0);
        n[j] = vc_n_fixed(r);
        sum += r;
    }
    *R = vc_n_fixed(sum);
}

/* _AllToAll.forward: the received rows in a new tensor (new_empty); its
 * backward is the reverse all-to-all, a new tensor of the input's size. */
static vc_t all_to_all(vc_build *b, vc_t x, vc_numel rows, int64_t width)
{
    vc_op *o = vc_op_begin(b, "all_to_all_single");
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_n_scale(rows, width), vc_dt_of(b, x));
    vc_op_end(o);
    return y;
}

/* sort_chunks_by_idxs: torch.cat of torch.split's views in another order, a
 * new tensor; backward: the cat's gradient slices (views), then split's
 * backward, one new tensor of the input's size. */
static vc_t sort_chunks(vc_build *b, vc_t x)
{
    vc_op *o = vc_op_begin(b, "cat");
    vc_op_in(o, x);
    vc_t y = vc_op_out(o, vc_numel_of(b, x), vc_dt_of(b, x));
    vc_op_end(o);
    return y;
}

/* torch.split of x's rows into the experts' views; backward: one new tensor
 * of x's size (the pieces' gradients concatenated). */
static void split_rows(vc_build *b, vc_t x, const vc_numel *n, int64_t El, int64_t width, vc_t *out)
{
    if (El == 1) {
        out[0] = x;
        return;
    }
    vc_op *o = vc_op_begin(b, "split");
    int i = vc_op_in(o, x);
    for (int64_t j = 0; j < El; j++) out[j] = vc_op_out_view(o, i, vc_n_scale(n[j], width), true);
    vc_op_end(o);
}

/* TopKRouter.forward: gating and topk_routing_with_score_function; returns
 * routing_probs [T, E] (*map: routing_map [T, E] bool). */
static vc_t route(vc_build *b, const vc_moe_ep *c, vc_t x, int64_t L, vc_t *map)
{
    vc_dtype dt = vc_dt_of(b, x);
    vc_numel TE = vc_n_sample(L * c->E), TK = vc_n_sample(L * c->k);
    vc_t logits = vc__lin_rows(b, x, vc_weight(b, 0), vc_n_sample(L), c->E); /* router_gating_linear: saves input and weight */
    vc_hold(b, logits); /* router.forward's local until routing returns */
    vc_op *o = vc_op_begin(b, "topk"); /* scores, top_indices = torch.topk(logits, k): backward needs the indices */
    vc_op_in(o, logits);
    vc_t scores = vc_op_out(o, TK, dt);
    vc_t top = vc_op_out(o, TK, VC_DT_I64);
    vc_op_save(o, top);
    vc_op_end(o);
    vc_hold(b, scores);
    /* probs = torch.softmax(scores, dim=-1, dtype=torch.float32).type_as(logits) */
    vc_t probs = vc__op_unary(b, "_softmax", vc__op_cast(b, scores, VC_DT_F32), VC_SAVE_OUT, false);
    probs = vc__op_cast(b, probs, dt);
    /* routing_probs = torch.zeros_like(logits).scatter(1, top_indices, probs): its backward gathers (saves the index) */
    vc_t z = vc__op_new(b, "zeros_like", TE, dt);
    o = vc_op_begin(b, "scatter");
    vc_op_in_nodiff(o, z);
    vc_op_in(o, probs);
    vc_op_in_nodiff(o, top);
    vc_t rp = vc_op_out(o, TE, dt);
    vc_op_save(o, top);
    vc_op_save(o, rp); /* the dispatcher's self.probs, kept through the layer's backward */
    vc_op_end(o);
    /* routing_map = torch.zeros_like(logits).int().scatter(1, top_indices, 1).bool() */
    vc_t zi = vc__op_nograd(b, "_to_copy", vc__op_new(b, "zeros_like", TE, dt), -1, TE, VC_DT_I32);
    vc_t rm = vc__op_nograd(b, "_to_copy", vc__op_nograd(b, "scatter", zi, top, TE, VC_DT_I32), -1, TE, VC_DT_BOOL);
    vc_release(b, scores);
    vc_release(b, logits);
    *map = rm;
    return rp;
}

/* permute (unfused, dropless): the tokens each expert gets, in expert order:
 * returns permuted_input [T k, H]; *pp permuted_probs [T k], *si sorted_indices. */
static vc_t permute(vc_build *b, const vc_moe_ep *c, vc_t x, vc_t rp, vc_t rm, int64_t L, vc_t *pp, vc_t *si)
{
    vc_dtype dt = vc_dt_of(b, x);
    vc_numel TE = vc_n_sample(L * c->E), TK = vc_n_sample(L * c->k);
    vc_t rmt = vc__op_nograd(b, "clone", rm, -1, TE, VC_DT_BOOL); /* routing_map.bool().T.contiguous(): a local until permute returns */
    vc_hold(b, rmt);
    /* flat_sorted = routing_map.reshape(-1).argsort(descending=True, stable=True): sort's values are dropped */
    vc_op *o = vc_op_begin(b, "sort");
    vc_op_in_nodiff(o, rmt);
    vc_op_ftemp(o, TE, VC_DT_BOOL);
    vc_t fs = vc_op_out(o, TE, VC_DT_I64);
    vc_op_end(o);
    *si = vc__op_nograd(b, "remainder", fs, -1, TK, VC_DT_I64); /* flat_sorted[:num_out_tokens] % num_tokens */
    /* permuted_probs = probs.T.contiguous().reshape(-1)[flat_sorted]: index saves flat_sorted (a view of all E T) */
    vc_t pc = vc__op_clone(b, rp);
    o = vc_op_begin(b, "index");
    vc_op_in(o, pc);
    vc_op_in_nodiff(o, fs);
    *pp = vc_op_out(o, TK, dt);
    vc_op_save(o, fs);
    vc_op_in_nodiff(o, rm); /* the dispatcher's self.routing_map (not read here), kept through the layer's backward */
    vc_op_save(o, rm);
    vc_op_end(o);
    /* permuted_input = tokens.index_select(0, sorted_indices) */
    o = vc_op_begin(b, "index_select");
    vc_op_in(o, x);
    vc_op_in_nodiff(o, *si);
    vc_t pin = vc_op_out(o, vc_n_scale(TK, c->hidden), dt);
    vc_op_save(o, *si);
    vc_op_end(o);
    vc_release(b, rmt);
    return pin;
}

/* SequentialMLP.forward on the rank's sorted rows: per local expert MLP.forward
 * (linear_fc1, WeightedSwiGLUFunction with the expert's probs, linear_fc2),
 * then torch.cat of the outputs. */
static vc_t experts(vc_build *b, const vc_moe_ep *c, vc_t din, vc_t dpr, const vc_numel *n, int64_t El)
{
    vc_t tok[EP_MAX_LOCAL], pr[EP_MAX_LOCAL], y[EP_MAX_LOCAL] = {-1};
    split_rows(b, din, n, El, c->hidden, tok);
    split_rows(b, dpr, n, El, 1, pr);
    for (int64_t j = 0; j < El; j++) {
        vc_t h = vc__lin_rows(b, tok[j], vc_weight(b, 1 + 2 * (int)j), n[j], 2 * c->inter);
        vc_op *o = vc_op_begin(b, "weighted_swiglu"); /* one fused kernel: its result only */
        vc_op_in(o, h);
        vc_op_in(o, pr[j]);
        vc_t a = vc_op_out(o, vc_n_scale(n[j], c->inter), vc_dt_of(b, h));
        vc_op_save(o, h);
        vc_op_save(o, pr[j]);
        vc_op_end(o);
        y[j] = vc__lin_rows(b, a, vc_weight(b, 2 + 2 * (int)j), n[j], c->hidden);
    }
    if (El == 1) return y[0];
    vc_op *o = vc_op_begin(b, "cat"); /* output_local = torch.cat(output_local_list): backward slices (views) */
    for (int64_t j = 0; j < El; j++) vc_op_grad(o, vc_op_in(o, y[j]), VC_GRAD_PASS);
    vc_t out = vc_op_out(o, vc_numel_of(b, din), vc_dt_of(b, y[0]));
    vc_op_end(o);
    return out;
}

void vc__moe_ep_emit(vc_build *b, const vc_moe_ep *c)
{
    int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, El = c->E / c->ep;
    vc_numel n[EP_MAX_LOCAL], R;
    ep_rows(b, c, L, n, &R);
    vc_t x = vc_input(b, 0), rm, pp, si;
    vc_t rp = route(b, c, x, L, &rm);
    vc_t pin = permute(b, c, x, rp, rm, L, &pp, &si);
    vc_hold(b, pin); /* custom_forward's hidden_states until the layer returns */
    vc_t din = all_to_all(b, pin, R, H); /* token_dispatch: the tokens, then the probs */
    vc_t dpr = all_to_all(b, pp, R, 1);
    vc_hold(b, din); /* custom_forward's dispatched_input and probs */
    vc_hold(b, dpr);
    vc_t sin = El > 1 ? sort_chunks(b, din) : din, spr = El > 1 ? sort_chunks(b, dpr) : dpr; /* dispatch_postprocess */
    vc_t out = experts(b, c, sin, spr, n, El);
    if (El > 1) out = sort_chunks(b, out); /* combine_preprocess: back to the ranks' order */
    vc_t back = all_to_all(b, out, vc_n_sample(L * c->k), H); /* token_combine */
    /* unpermute: zeros(restore_shape).scatter_add_(0, sorted_indices.unsqueeze(1).expand(-1, H), tokens) */
    vc_t z = vc__op_new(b, "zeros", vc_n_sample(L * H), vc_dt_of(b, back));
    vc_op *o = vc_op_begin(b, "scatter_add_");
    int iz = vc_op_in(o, z);
    vc_op_in(o, back);
    vc_op_in_nodiff(o, si);
    vc_t y = vc_op_out_view(o, iz, vc_n_sample(L * H), true);
    vc_op_grad(o, iz, VC_GRAD_PASS);
    vc_op_save(o, si);
    vc_op_end(o);
    vc_release(b, pin);
    vc_release(b, din);
    vc_release(b, dpr);
    vc_set_output(b, y);
}
