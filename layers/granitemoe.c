/*
 * granitemoe.c — GraniteMoE: the routed experts of IBM Granite 4.0-H (model_type granitemoehybrid,
 * block_sparse_moe), as transformers runs them in every release: a top-k router, the tokens sorted by
 * expert, and a Python loop of F.linear over the experts' slices of two stacked weights.
 *
 * Source: huggingface/transformers 00511f5df3b63c48b31496072ec35d6ff3ffa6c6,
 * src/transformers/models/granitemoehybrid/modeling_granitemoehybrid.py:
 *  - GraniteMoeHybridParallelExperts: weight [num_experts, output_size, input_size]; forward(inputs,
 *    expert_size): inputs.split(expert_size) (views), output_list of F.linear(input_list[i], weight[i])
 *    (weight[i] a select of the parameter: its backward, SelectBackward, makes a zero tensor of the whole
 *    weight for each expert's gradient), torch.cat(output_list) (the list alive to the return);
 *  - GraniteMoeHybridTopKGating.forward: logits = self.layer(x).float(); logits.topk(top_k, dim=1);
 *    softmax(top_k_logits, dim=1).type_as(x); zeros [T, E] .scatter(1, indices, 1) -> gates,
 *    gates.long().sum(0).tolist(); top_k_indices.flatten().sort(0) (values and indices, `_` kept to the
 *    return); batch_index = index_sorted_experts.div(top_k, "trunc"); batch_gates =
 *    top_k_gates.flatten()[index_sorted_experts];
 *  - GraniteMoeHybridMoE.__init__: input_linear (E, H -> 2 intermediate), output_linear (E, intermediate
 *    -> H), router (registration order); forward: layer_input.reshape(-1, H); the router (its logits bound
 *    to `_`, alive to the return); expert_inputs = layer_input[batch_index]; input_linear; chunk(2);
 *    act(first) * second; output_linear; * batch_gates[:, None]; zeros [T, H] .index_add(0, batch_index,
 *    expert_outputs) (out of place; derivatives.yaml's index_add keeps the source for
 *    its expand_as); .view(B, L, H).
 * The tokens each expert gets are spread evenly (floor(T k / E), one more for the first T k mod E
 * experts), as SparseMoE spreads them (layers/llm.c moe_rows).
 */
#include "ops.h"
#include "moe_ep.h" /* vc__lin_rows */

static const char *const gm_acts[] = {"silu", "gelu", NULL};

typedef struct {
    int64_t hidden, inter, E, k;
    int act;
} gm_cfg;

static int gm_parse(vc_args *a, void *p)
{
    gm_cfg *c = p;
    if (vc_arg_int(a, "hidden_size", VC_REQUIRED, 1, &c->hidden) || vc_arg_int(a, "intermediate_size", VC_REQUIRED, 1, &c->inter) ||
        vc_arg_int(a, "num_experts", VC_REQUIRED, 1, &c->E) || vc_arg_int(a, "top_k", 2, 1, &c->k) ||
        vc_arg_enum(a, "activation", gm_acts, 0, &c->act))
        return -1;
    if (c->k > c->E)
        return vc_arg_fail(a, "top_k", "top_k (%lld) is more than num_experts (%lld)", (long long)c->k, (long long)c->E);
    if (c->E > 4096) return vc_arg_fail(a, "num_experts", "%lld experts: more than the 4096 modelled", (long long)c->E);
    return 0;
}

static int gm_setup(vc_setup *s, void *p)
{
    const gm_cfg *c = p;
    if (s->nin != 1 || s->in[0].nd != 2 || s->in[0].d[1] != c->hidden)
        return vc_fail(s, "hidden_size", "GraniteMoE takes [L, %lld] per sample", (long long)c->hidden);
    if (s->ep > 1)
        return vc_fail(s, "ep", "expert parallelism is not modelled for granitemoehybrid's experts (GraniteMoeHybridMoE's "
                       "per-expert loop over stacked weights)");
    int64_t t;
    const int64_t L = s->in[0].d[0], w = 2 * c->inter > c->hidden ? 2 * c->inter : c->hidden;
    if (vc_mul(s, L, c->k, &t) || vc_mul(s, t, w, &t) || vc_mul(s, 2 * c->inter, c->hidden, &t) || vc_mul(s, t, c->E, &t) ||
        vc_mul(s, L, c->E, &t))
        return -1;
    if (t > (INT64_C(1) << 56)) return vc_fail(s, NULL, "the router's [L, experts] passes 2^56 elements per sample");
    s->out = s->in[0];
    s->ops = 40 + 6 * c->E;
    /* GraniteMoeHybridMoE's parameters in registration order: input_linear, output_linear, router.layer */
    return vc_param_shape(s, "input_linear.weight", 3, (int64_t[3]){c->E, 2 * c->inter, c->hidden}, 0) ||
           vc_param_shape(s, "output_linear.weight", 3, (int64_t[3]){c->E, c->hidden, c->inter}, 0) ||
           vc_param_shape(s, "router.layer.weight", 2, (int64_t[2]){c->E, c->hidden}, VC_PARAM_LINEAR);
}

/* x[idx] along dim 0 (aten::index): rows x width of x's dtype, the indices saved; backward scatters into
 * zeros of x's size */
static vc_t index_rows(vc_build *b, vc_t x, vc_t idx, vc_numel rows, int64_t width)
{
    vc_op *o = vc_op_begin(b, "index");
    vc_op_in(o, x);
    vc_op_in_nodiff(o, idx);
    vc_t r = vc_op_out(o, vc_n_scale(rows, width), vc_dt_of(b, x));
    vc_op_save(o, idx);
    vc_op_end(o);
    return r;
}

/* GraniteMoeHybridParallelExperts.forward over rows [T k, in] of the experts' sorted tokens: each expert's
 * F.linear on its slice with weight[e], the outputs (a list alive until the cat returns) cat'ed */
static vc_t parallel_experts(vc_build *b, const gm_cfg *c, vc_t x, vc_t W, int64_t L, int64_t in, int64_t out)
{
    vc_t outs[4096];
    const vc_numel all = vc_n_sample(L * c->k);
    for (int64_t e = 0; e < c->E; e++) {
        vc_numel rows = vc_n_floor(L * c->k, c->E - 1 - e, (int32_t)c->E);
        vc_t xe = vc__op_view(b, x, vc_n_scale(rows, in), true); /* inputs.split(expert_size)[e] */
        vc_t we = vc__op_select(b, W, vc_n_fixed(out * in), true);  /* self.weight[e] */
        outs[e] = vc__lin_rows(b, xe, we, rows, out);
        vc_hold(b, outs[e]);
    }
    vc_op *o = vc_op_begin(b, "cat");
    for (int64_t e = 0; e < c->E; e++) vc_op_grad(o, vc_op_in(o, outs[e]), VC_GRAD_PASS);
    vc_t r = vc_op_out(o, vc_n_scale(all, out), vc_dt_of(b, outs[0]));
    vc_op_end(o);
    for (int64_t e = 0; e < c->E; e++) vc_release(b, outs[e]);
    return r;
}

/* --serve's profiling run: vLLM's block_sparse_moe instead of transformers' loop (no autograd):
 *  - GraniteMoeHybridMambaDecoderLayer / GraniteMoeHybridAttentionDecoderLayer.forward (vllm-project/vllm @
 *    0195c9ec6ea9cda412d1c69034fc5926a2c29528, vllm/model_executor/models/granitemoehybrid.py), with a
 *    shared_mlp: moe_hidden_states = hidden_states.clone() ("block_sparse_moe modifies in-place"), rebound to
 *    block_sparse_moe's output (the clone freed at its return);
 *  - GraniteMoeMoE.forward (vllm/model_executor/models/granitemoe.py @ 5d4420da433893084e40e5ec8ead7ea37a9dfcc9):
 *    router_logits = self.gate(x) (ReplicatedLinear [T, E]), self.experts(x, router_logits) (FusedMoE,
 *    renormalize=True): fused_topk's topk_weights float32 [T, k], topk_ids int32 [T, k] and
 *    token_expert_indices int32 [T, k] (freed at its return), then fused_experts_impl as for Llama 4's
 *    experts (layers/llm.c moe_llama4_vllm_emit: out_hidden_states = torch.empty_like(hidden_states), its
 *    inplace path off under torch >= 2.9, fused_moe/utils.py disable_inplace; cache13 [M x k x max(2I, H)]
 *    and cache2 [M x k x I] while the kernels run). moe_align_block_size's int32 indices are not modelled. */
static vc_t hold(vc_build *b, vc_t t)
{
    vc_hold(b, t);
    return t;
}

static void gm_vllm_emit(vc_build *b, const gm_cfg *c)
{
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, I = c->inter, E = c->E, k = c->k;
    const vc_t x = vc_input(b, 0);
    const vc_dtype dt = vc_dt_of(b, x);
    const vc_numel lk = vc_n_sample(L * k);
    vc_t xc = hold(b, vc__op_clone(b, x)); /* moe_hidden_states */
    vc_t logits = hold(b, vc__lin_rows(b, xc, vc_weight(b, 2), vc_n_sample(L), E));
    vc_t tw = hold(b, vc__op_nograd(b, "topk_softmax", logits, -1, lk, VC_DT_F32));
    vc_t ti = hold(b, vc__op_nograd(b, "topk_softmax", logits, -1, lk, VC_DT_I32));
    vc__op_nograd(b, "topk_softmax", logits, -1, lk, VC_DT_I32); /* token_expert_indices */
    vc_t out = hold(b, vc__op_nograd(b, "empty_like", xc, -1, vc_n_sample(L * H), dt));
    const int64_t w13 = 2 * I > H ? 2 * I : H;
    vc_t c13 = hold(b, vc__op_new(b, "empty", vc_n_sample(L * k * w13), dt));
    vc_t c2 = vc__op_new(b, "empty", vc_n_sample(L * k * I), dt);
    vc_release(b, c2);
    const vc_t locals[] = {c13, tw, ti, logits, xc};
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) vc_release(b, locals[i]);
    vc_release(b, out);
    vc_set_output(b, out);
}

static void gm_emit(vc_build *b, const void *p)
{
    const gm_cfg *c = p;
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, I = c->inter, E = c->E, k = c->k;
    vc_t x = vc_input(b, 0); /* layer_input.reshape(-1, emb_size) */
    const vc_dtype dt = vc_dt_of(b, x);
    const vc_numel lk = vc_n_sample(L * k);
    if (vc_serving(b)) { /* vLLM's GraniteMoeMoE is a FusedMoE (gm_vllm_emit) */
        gm_vllm_emit(b, c);
        return;
    }
    /* the tokens of the step capped so that T k x width x 8 bytes stays below 2^56 (as SparseMoE caps them) */
    const int64_t tcap = (INT64_C(1) << 53) / (2 * I > H ? 2 * I : H) / k;
    if (vc_batch(b) > tcap / L) {
        vc_refuse(b, O("batch"), "%lld sequences of %lld tokens: granitemoehybrid's experts are modelled up to %lld tokens "
                  "a step", (long long)vc_batch(b), (long long)L, (long long)tcap);
        return;
    }
    vc_batch_range(b, 1, tcap / L);
    /* the router: logits = self.layer(hidden_states).float() */
    vc_t logits = vc__lin_rows(b, x, vc_weight(b, 2), vc_n_sample(L), E);
    logits = vc__op_cast(b, logits, VC_DT_F32);
    vc_hold(b, logits); /* `_` of GraniteMoeHybridMoE.forward: alive to its return */
    /* logits.topk(top_k, dim=1): values, and int64 indices kept for backward */
    vc_op *o = vc_op_begin(b, "topk");
    vc_op_in(o, logits);
    vc_t tv = vc_op_out(o, lk, VC_DT_F32);
    vc_t ti = vc_op_out(o, lk, VC_DT_I64);
    vc_op_save(o, ti);
    vc_op_end(o);
    vc_hold(b, tv); /* the router's locals (top_k_logits, top_k_indices, zeros, gates, `_`) to its return */
    vc_hold(b, ti);
    vc_t gates = vc__op_unary(b, "_softmax", tv, VC_SAVE_OUT, false);
    gates = vc__op_cast(b, gates, dt); /* .type_as(hidden_states) */
    vc_hold(b, gates);
    /* zeros [T, E].scatter(1, top_k_indices, 1); gates.long().sum(0): no gradient */
    vc_t z = vc__op_new(b, "zeros", vc_n_sample(L * E), dt);
    vc_t sc = vc__op_nograd(b, "scatter", z, ti, vc_n_sample(L * E), dt);
    vc_hold(b, z);
    vc_hold(b, sc);
    vc_t lg = vc__op_nograd(b, "_to_copy", sc, -1, vc_n_sample(L * E), VC_DT_I64);
    vc__op_nograd(b, "sum", lg, -1, vc_n_fixed(E), VC_DT_I64);
    /* top_k_indices.flatten().sort(0): values (`_`) and indices; batch_index = div(top_k) */
    vc_t sv = vc__op_nograd(b, "sort", ti, -1, lk, VC_DT_I64);
    vc_t si = vc__op_nograd(b, "sort", ti, -1, lk, VC_DT_I64);
    vc_hold(b, sv);
    vc_t bi = vc__op_nograd(b, "div", si, -1, lk, VC_DT_I64);
    vc_hold(b, bi);
    /* batch_gates = top_k_gates.flatten()[index_sorted_experts] */
    vc_t bg = index_rows(b, vc__op_view(b, gates, lk, true), si, lk, 1);
    const vc_t router_locals[] = {sv, gates, tv, ti, z, sc};
    for (size_t i = 0; i < sizeof router_locals / sizeof *router_locals; i++) vc_release(b, router_locals[i]);
    /* expert_inputs = layer_input[batch_index] */
    /* GraniteMoeHybridMoE.forward's locals, alive to its return: expert_inputs, chunked_hidden_states (views
     * of input_linear's output), hidden_states (the product), zeros */
    vc_t xi = index_rows(b, x, bi, lk, H);
    vc_hold(b, xi);
    vc_t h = parallel_experts(b, c, xi, vc_weight(b, 0), L, H, 2 * I);
    vc_hold(b, h);
    /* chunk(2): act(first) * second */
    vc_t c0 = vc__op_view(b, h, vc_n_sample(L * k * I), false), c1 = vc__op_view(b, h, vc_n_sample(L * k * I), false);
    vc_t a = vc__op_unary(b, c->act == 0 ? "silu" : "gelu", c0, VC_SAVE_IN, false);
    vc_t m = vc__op_mul(b, a, c1, vc_n_sample(L * k * I), false);
    vc_hold(b, m);
    vc_t y = parallel_experts(b, c, m, vc_weight(b, 1), L, I, H);
    /* expert_outputs * batch_gates[:, None] */
    y = vc__op_mul_dt(b, y, bg, vc_numel_of(b, y), dt);
    /* zeros((T, H)).index_add(0, batch_index, expert_outputs): out of place; the source's gradient
     * grad.index_select(0, index) */
    vc_t zo = vc__op_new(b, "zeros", vc_n_sample(L * H), dt);
    vc_hold(b, zo);
    o = vc_op_begin(b, "index_add");
    int iz = vc_op_in(o, zo);
    int iy = vc_op_in(o, y);
    vc_op_in_nodiff(o, bi);
    vc_t out = vc_op_out(o, vc_n_sample(L * H), dt);
    vc_op_grad(o, iz, VC_GRAD_NONE);
    vc_op_grad(o, iy, VC_GRAD_NEW);
    vc_op_save(o, bi);
    /* derivatives.yaml index_add: source's gradient grad.index_select(dim, index).expand_as(source): source saved */
    vc_op_save_if(o, y, iy);
    vc_op_end(o);
    const vc_t moe_locals[] = {bi, logits, xi, h, m, zo};
    for (size_t i = 0; i < sizeof moe_locals / sizeof *moe_locals; i++) vc_release(b, moe_locals[i]);
    vc_set_output(b, vc__op_view(b, out, vc_n_sample(L * H), true));
}

const vc_kind vc_kind_GraniteMoE = {
    .name = "GraniteMoE",
    .summary = "Granite 4.0-H's routed experts (GraniteMoeHybridMoE): top-k router, sorted tokens, a loop of F.linear over stacked input_linear / output_linear",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(gm_cfg),
    .parse = gm_parse, .setup = gm_setup, .emit = gm_emit,
};
