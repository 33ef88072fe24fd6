/*
 * mamba2.c — Mamba2Mixer: the Mamba2 token mixer of IBM Granite 4.0-H (model_type granitemoehybrid),
 * between its in_proj Linear (src/hf/hf_granite4.c writes it) and the layer's output, out_proj
 * included, as transformers runs it on a GPU with the mamba_ssm and causal_conv1d kernels. NVIDIA Nemotron-H
 * (nemotron_h, src/hf/hf_granite4.c) writes the same kind for NemotronHMamba2Mixer, whose cuda_kernels_forward
 * (modeling_nemotron_h.py @ 008d9e95) runs the same statements, with norm_groups = n_groups (its
 * Zamba2RMSNormGated's group_size = intermediate // n_groups; gated_norm below). TII Falcon-H1 (falcon_h1) writes it for
 * FalconH1Mixer with rms_norm false (mamba_rms_norm false, modeling_falcon_h1.py @ 68c08116 cuda_kernels_forward:
 * no norm module, mamba_split_conv1d_scan_combined(..., rmsnorm_weight=None) in training, scan_output *
 * silu(gate) otherwise, selective_state_update(..., z=gate) on a decoding step).
 *
 * Source: huggingface/transformers 00511f5df3b63c48b31496072ec35d6ff3ffa6c6,
 * src/transformers/models/granitemoehybrid/modeling_granitemoehybrid.py:
 *  - GraniteMoeHybridMambaLayer.__init__: intermediate_size = mamba_expand x hidden_size (= heads x
 *    head_dim), conv_dim = intermediate_size + 2 n_groups x ssm_state_size, conv1d (depthwise, groups
 *    conv_dim, bias mamba_conv_bias) weight [conv_dim, 1, d_conv], in_proj nn.Linear(hidden, intermediate
 *    + conv_dim + heads, bias mamba_proj_bias), dt_bias [heads], A_log [heads], norm
 *    (GraniteMoeHybridRMSNormGated) weight [intermediate], D [heads], out_proj nn.Linear(intermediate,
 *    hidden, bias mamba_proj_bias); registration order: conv1d, in_proj, dt_bias, A_log, norm, D, out_proj;
 *  - forward: cuda_kernels_forward when is_fast_path_available (selective_state_update, causal_conv1d_fn
 *    and causal_conv1d_update loaded: the mamba-ssm and causal-conv1d kernels) and the weights are on a
 *    GPU, torch_forward otherwise. A GPU user with the kernels installed runs cuda_kernels_forward, the
 *    path modelled here; torch_forward (the chunked scan written in torch ops, with its
 *    [B, chunks, chunk, chunk, heads, state] products) is refused (forward "torch");
 *  - cuda_kernels_forward, training without a cache: A = -exp(A_log.float()), then
 *    mamba_split_conv1d_scan_combined(projected_states, conv1d.weight, conv1d.bias, dt_bias, A, D,
 *    chunk_size, rmsnorm_weight = norm.weight, outproj_weight = out_proj.weight, norm_before_gate False):
 *    one autograd.Function from in_proj's output to out_proj's;
 *  - cuda_kernels_forward otherwise (inference, generate()'s prefill): the split views, causal_conv1d_fn
 *    (a new [B, conv_dim, L]), mamba_chunk_scan_combined(..., z=None, return_final_states=True) -> the
 *    scan's output [B, L, heads, head_dim] and the final state (fp32), with a cache conv_states.copy_(
 *    F.pad(xBC^T, (d_conv - L, 0))) and ssm_states.copy_(final state); self.norm(scan_output, gate)
 *    (GraniteMoeHybridRMSNormGated.forward: fp32 x * silu(fp32 gate), its RMS, .to(dtype), * weight),
 *    out_proj;
 *  - a decoding step (use_precomputed_states): causal_conv1d_update (a new [B, conv_dim], the conv
 *    state updated in place), selective_state_update (a new [B, heads, head_dim], the ssm state updated
 *    in place), the norm, out_proj;
 *  - HybridMambaAttentionDynamicCache.__init__: conv_states [B, conv_dim, d_conv] and ssm_states
 *    [B, heads, head_dim, state] zeros in the model's dtype per mamba layer, made by
 *    GraniteMoeHybridForCausalLM.prepare_inputs_for_generation before the prefill.
 * state-spaces/mamba (mamba_ssm 2.x) mamba_ssm/ops/triton/ssd_combined.py:
 *  - MambaSplitConv1dScanCombinedFn.forward: xBC_conv = causal_conv1d_fwd(xBC) [B, L, conv_dim];
 *    _mamba_chunk_scan_combined_fwd (its _chunk_cumsum_fwd: dA_cumsum and dt [B, heads, chunks, chunk]
 *    fp32; _chunk_state_fwd: states [B, chunks, heads, head_dim, state] fp32; _state_passing_fwd: the
 *    passed states in C's dtype and the final states [B, heads, head_dim x state] fp32; _bmm_chunk_fwd:
 *    CB [B, chunks, groups, chunk, chunk] fp32, freed at its return; _chunk_scan_fwd: out_x
 *    [B, L, heads, head_dim]); _layer_norm_fwd (layernorm_gated.py: out [B L, intermediate], rstd fp32
 *    [groups x B L]); F.linear(out, outproj_weight); save_for_backward(zxbcdt, ..., out_x, A, ..., rstd,
 *    ...): the input, out_x, A (cuda_kernels_forward's -exp(A_log.float())) and rstd kept for backward;
 *  - its backward: out_recompute [B, L, intermediate], xBC_conv recomputed, dzxbcdt (the input's
 *    gradient), dxBC [B, L, conv_dim], dout = F.linear(dout, outproj_weight.t()), _layer_norm_bwd's dx,
 *    then _mamba_chunk_scan_combined_bwd (dt's clone, dA_cumsum and dt fp32, CB fp32, the states fp32
 *    and their passed copy, dstates, ddt fp32) and causal_conv1d_bwd writing into dzxbcdt. These
 *    backward transients are derived from that source, not measured (no GPU replica ran them); the
 *    Triton kernels' per-SM partial sums (dw [sm_count, intermediate]) are left out.
 */
#include "ops.h"

enum { M2_KERNELS, M2_TORCH };
static const char *const m2_paths[] = {"cuda_kernels", "torch", NULL};

typedef struct {
    int64_t heads, head_dim, groups, state, kernel, chunk, hidden;
    bool conv_bias, bias;
    double eps;
    int path;
    int64_t norm_groups; /* the gated RMSNorm's groups (Zamba2RMSNormGated group_size = intermediate // norm_groups) */
    bool rms_norm;       /* false: no gated RMSNorm, scan_output x silu(gate) (falcon_h1's mamba_rms_norm false) */
    int64_t tp;          /* vLLM's tensor-parallel ranks this layer is one rank's share of (src/hf/hf_tp.c) */
} m2_cfg;

static int m2_parse(vc_args *a, void *p)
{
    m2_cfg *c = p;
    if (vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) || vc_arg_int(a, "head_dim", VC_REQUIRED, 1, &c->head_dim) ||
        vc_arg_int(a, "n_groups", 1, 1, &c->groups) || vc_arg_int(a, "state_size", VC_REQUIRED, 1, &c->state) ||
        vc_arg_int(a, "conv_kernel", 4, 1, &c->kernel) || vc_arg_int(a, "chunk_size", 256, 1, &c->chunk) ||
        vc_arg_int(a, "hidden_size", VC_REQUIRED, 1, &c->hidden) || vc_arg_bool(a, "conv_bias", true, &c->conv_bias) ||
        vc_arg_bool(a, "bias", false, &c->bias) || vc_arg_float(a, "eps", 1e-6, 0.0, 1.0, &c->eps) ||
        vc_arg_enum(a, "forward", m2_paths, M2_KERNELS, &c->path) || vc_arg_int(a, "norm_groups", 1, 1, &c->norm_groups) ||
        vc_arg_bool(a, "rms_norm", true, &c->rms_norm) || vc_arg_int(a, "tp", 1, 1, &c->tp))
        return -1;
    if ((c->heads * c->head_dim) % c->norm_groups)
        return vc_arg_fail(a, "norm_groups", "must divide num_heads x head_dim (%lld), got %lld",
                           (long long)(c->heads * c->head_dim), (long long)c->norm_groups);
    if (c->heads % c->groups)
        return vc_arg_fail(a, "n_groups", "must divide num_heads (%lld), got %lld", (long long)c->heads, (long long)c->groups);
    if (c->path == M2_TORCH)
        return vc_arg_fail(a, "forward", "torch (GraniteMoeHybridMambaLayer.torch_forward, the chunked scan in torch ops "
                           "that runs without the mamba_ssm and causal_conv1d kernels) is not modelled; cuda_kernels is");
    return 0;
}

/* the sizes of one sample: intermediate, conv_dim, in_proj's width, chunks */
typedef struct {
    int64_t L, Di, CD, PR, nc, st;
} m2_dims;

static m2_dims dims_of(const m2_cfg *c, int64_t L)
{
    m2_dims d;
    d.L = L;
    d.Di = c->heads * c->head_dim;
    d.CD = d.Di + 2 * c->groups * c->state;
    d.PR = d.Di + d.CD + c->heads;
    d.nc = (L + c->chunk - 1) / c->chunk;
    d.st = c->heads * c->head_dim * c->state;
    return d;
}

static int m2_setup(vc_setup *s, void *p)
{
    const m2_cfg *c = p;
    int64_t Di, gn, CD, PR, t;
    if (vc_mul(s, c->heads, c->head_dim, &Di) || vc_mul(s, 2 * c->groups, c->state, &gn) || vc_add(s, Di, gn, &CD) ||
        vc_add(s, Di, CD, &PR) || vc_add(s, PR, c->heads, &PR) || vc_mul(s, CD, c->kernel, &t) ||
        vc_mul(s, Di, c->hidden, &t) || vc_mul(s, Di, c->state, &t))
        return -1;
    if (s->nin != 1) return vc_fail(s, "inputs", "Mamba2Mixer takes in_proj's output");
    const vc_shape *x = &s->in[0];
    if (x->nd != 2 || x->d[1] != PR)
        return vc_fail(s, "inputs", "in_proj's output must be [L, %lld] per sample (intermediate + conv_dim + heads)",
                       (long long)PR);
    /* the widest temporaries, each at most 2^56 elements per sample: the chunk scan's states
     * [chunks, heads, head_dim, state], CB [chunks, groups, chunk, chunk], xBC [L, conv_dim] */
    const int64_t lim = INT64_C(1) << 56, nc = (x->d[0] + c->chunk - 1) / c->chunk;
    int64_t a1, a2, a3;
    if (vc_mul(s, nc, Di, &a1) || vc_mul(s, a1, c->state, &a1) || vc_mul(s, nc, c->groups, &a2) || vc_mul(s, a2, c->chunk, &a2) ||
        vc_mul(s, a2, c->chunk, &a2) || vc_mul(s, x->d[0], PR, &a3))
        return -1;
    if (a1 > lim || a2 > lim || a3 > lim)
        return vc_fail(s, NULL, "a temporary of the chunked scan has more than 2^56 elements per sample");
    int64_t d[2] = {x->d[0], c->hidden};
    s->out = vc_shape_make(2, d);
    /* named_parameters() below the module, in registration order (in_proj is its own Linear) */
    if (vc_param_shape(s, "conv1d.weight", 3, (int64_t[3]){CD, 1, c->kernel}, 0) ||
        (c->conv_bias && vc_param(s, "conv1d.bias", CD)) || vc_param(s, "dt_bias", c->heads) ||
        vc_param(s, "A_log", c->heads) || (c->rms_norm && vc_param(s, "norm.weight", Di)) || vc_param(s, "D", c->heads) ||
        vc_param_shape(s, "out_proj.weight", 2, (int64_t[2]){c->hidden, Di}, VC_PARAM_LINEAR) || /* an nn.Linear's */
        (c->bias && vc_param(s, "out_proj.bias", c->hidden)))
        return -1;
    return 0;
}

/* the parameters' indices (conv1d.bias and out_proj.bias optional) */
typedef struct {
    int conv_w, conv_b, dt_bias, a_log, norm, d, out_w, out_b;
} m2_w;

static m2_w weights_of(const m2_cfg *c)
{
    m2_w w;
    int i = 0;
    w.conv_w = i++;
    w.conv_b = c->conv_bias ? i++ : -1;
    w.dt_bias = i++;
    w.a_log = i++;
    w.norm = c->rms_norm ? i++ : -1;
    w.d = i++;
    w.out_w = i++;
    w.out_b = c->bias ? i++ : -1;
    return w;
}

static vc_t weight(vc_build *b, int i) { return i >= 0 ? vc_weight(b, i) : -1; }

/* x * y broadcast to out (type promotion: fp32 when either is) */
static vc_t mul2(vc_build *b, vc_t x, vc_t y, vc_numel out)
{
    vc_dtype dt = vc_dt_of(b, x) == VC_DT_F32 || vc_dt_of(b, y) == VC_DT_F32 ? VC_DT_F32 : vc_dt_of(b, x);
    return vc__op_mul_dt(b, x, y, out, dt);
}

/* GraniteMoeHybridRMSNormGated.forward(x, gate) over rows of `width` (no_grad here: inference and
 * generate): x.to(fp32); x * silu(gate.to(fp32)); variance = pow(2).mean(-1); x * rsqrt(variance + eps);
 * weight * x.to(input_dtype). With `groups` > 1, nemotron_h's Zamba2RMSNormGated (huggingface/transformers
 * 008d9e9577b0eb0149aa6bb0c44da582b10e0b6e, models/zamba2/modeling_zamba2.py Zamba2RMSNormGated.forward, as
 * NemotronHMamba2Mixer builds it with group_size intermediate // n_groups): the same with x viewed as
 * [..., groups, group_size], variance [..., groups, 1] */
static vc_t gated_norm(vc_build *b, vc_t x, vc_t gate, vc_t w, int64_t rows, int64_t width, int64_t groups, bool native)
{
    const vc_dtype in_dt = vc_dt_of(b, x);
    const vc_numel full = vc_n_sample(rows * width), r = vc_n_sample(rows * groups);
    /* native: vLLM's Mixer2RMSNormGated.forward_native (emit_vllm_profile below): x is not cast first (x *
     * silu(gate.to(float32)) promotes to float32) and the gate view is cast as it is */
    vc_t h = native ? x : vc__op_cast(b, x, VC_DT_F32);
    vc_t gf = vc__op_cast(b, native ? gate : vc__op_contiguous(b, gate), VC_DT_F32);
    vc_t sg = vc__op_unary(b, "silu", gf, VC_SAVE_IN, false);
    h = mul2(b, h, sg, full);
    vc_t sq = mul2(b, h, h, full); /* pow(2) */
    vc_t var = vc__op_mean(b, sq, r);
    vc_t ve = vc__op_fresh(b, "add", var, r);
    vc_t rs = vc__op_unary(b, "rsqrt", ve, VC_SAVE_OUT, false);
    h = mul2(b, h, rs, full);
    h = vc__op_cast(b, h, in_dt);
    return mul2(b, w, h, full);
}

static vc_t hold(vc_build *b, vc_t t)
{
    vc_hold(b, t);
    return t;
}

/* A = -torch.exp(self.A_log.float()) */
static vc_t a_of(vc_build *b, vc_t a_log, int64_t heads)
{
    vc_t a = vc__op_cast(b, a_log, VC_DT_F32);
    a = vc__op_unary(b, "exp", a, VC_SAVE_OUT, false);
    return vc__op_fresh(b, "neg", a, vc_n_fixed(heads));
}

/* Training without a cache: mamba_split_conv1d_scan_combined, one autograd node from in_proj's
 * output to out_proj's (MambaSplitConv1dScanCombinedFn). Its forward's tensors in the order it makes
 * them, none of them recorded by autograd: xBC_conv, dA_cumsum and dt (fp32), the fp32 chunk states
 * (freed once passed), the passed states and the final ones, CB (freed at
 * _mamba_chunk_scan_combined_fwd's return), out_x, the norm's output and rstd, then F.linear's result;
 * the locals freed at the return but for the saved out_x and rstd (and A, saved too). */
static void emit_fused(vc_build *b, const m2_cfg *c, const m2_dims *d, const m2_w *iw)
{
    const vc_t zx = vc_input(b, 0);
    const vc_dtype dt = vc_dt_of(b, zx), amp = vc_autocast_dt(b);
    const int64_t H = c->heads, C = c->chunk, G = c->groups, L = d->L, Di = d->Di, CD = d->CD, nc = d->nc;
    vc_t A = a_of(b, vc_weight(b, iw->a_log), H);
    const vc_numel hc = vc_n_sample(H * nc * C), sts = vc_n_sample(nc * d->st);
    vc_t xc = hold(b, vc__op_nograd(b, "causal_conv1d_fwd", zx, -1, vc_n_sample(L * CD), dt));
    vc_t da = hold(b, vc__op_nograd(b, "_chunk_cumsum_fwd", zx, -1, hc, VC_DT_F32));
    vc_t dto = hold(b, vc__op_nograd(b, "_chunk_cumsum_fwd", zx, -1, hc, VC_DT_F32));
    vc_t s32 = vc__op_nograd(b, "_chunk_state_fwd", xc, da, sts, VC_DT_F32);
    vc_t sp = hold(b, vc__op_nograd(b, "_state_passing_fwd", s32, da, sts, dt));
    vc_t fin = hold(b, vc__op_nograd(b, "_state_passing_fwd", s32, da, vc_n_sample(d->st), VC_DT_F32));
    vc_t cb = vc__op_nograd(b, "_bmm_chunk_fwd", xc, -1, vc_n_sample(nc * G * C * C), VC_DT_F32);
    vc_t outx = vc__op_nograd(b, "_chunk_scan_fwd", cb, sp, vc_n_sample(L * Di), dt);
    /* rmsnorm_weight None (falcon_h1's mamba_rms_norm false): _mamba_chunk_scan_combined_fwd(..., z=z) returns out
     * (out_x x silu(z), _chunk_scan_fwd's second output) beside out_x, rstd None; else _layer_norm_fwd's out and rstd */
    vc_t nrm = c->rms_norm ? vc__op_nograd(b, "_layer_norm_fwd", outx, zx, vc_n_sample(L * Di), dt)
                           : vc__op_nograd(b, "_chunk_scan_fwd", cb, sp, vc_n_sample(L * Di), dt);
    vc_t rstd = c->rms_norm ? vc__op_nograd(b, "_layer_norm_fwd", outx, zx, vc_n_sample(G * L), VC_DT_F32) : -1;
    vc_op *o = vc_op_begin(b, "mamba_split_conv1d_scan_combined");
    int i0 = vc_op_in(o, zx);
    vc_op_grad(o, i0, VC_GRAD_NEW); /* dzxbcdt = torch.empty_like(zxbcdt) */
    /* The weights' gradients where state-spaces/mamba @ e9594ce1 (mamba_ssm/ops/triton/ssd_combined.py
     * MambaSplitConv1dScanCombinedFn.backward) makes them: drmsnorm_weight in _layer_norm_bwd (layernorm_gated.py,
     * _dw.sum(0)), before _mamba_chunk_scan_combined_bwd; dD (_chunk_scan_chunk_state_bwd_dx), dA and ddt_bias
     * (_chunk_cumsum_bwd, its last call) inside it, its locals alive: all beside the backward's transients below
     * (VC_GRAD_NEW). doutproj_weight (torch.einsum) and doutproj_bias (dout_og.sum) once it returned, then
     * causal_conv1d_bwd_function's dweight and dbias: after the transients are freed, made once the node's
     * backward ran (VC_GRAD_REDUCE's place; nothing is reduced here) */
    const int ws[] = {iw->conv_w, iw->conv_b, iw->dt_bias, -2, iw->d, iw->norm, iw->out_w, iw->out_b};
    for (size_t k = 0; k < sizeof ws / sizeof *ws; k++) {
        if (ws[k] == -1) continue;
        int ik = vc_op_in(o, ws[k] == -2 ? A : vc_weight(b, ws[k]));
        bool late = ws[k] == iw->conv_w || ws[k] == iw->conv_b || ws[k] == iw->out_w || ws[k] == iw->out_b;
        vc_op_grad(o, ik, late ? VC_GRAD_REDUCE : VC_GRAD_NEW);
    }
    vc_op_in_nodiff(o, outx);
    if (rstd >= 0) vc_op_in_nodiff(o, rstd);
    vc_op_in_nodiff(o, nrm);
    vc_op_save(o, zx);
    vc_op_save(o, A); /* save_for_backward(zxbcdt, ..., out_x, A, ...): -exp(A_log.float()), a new [heads] fp32 */
    vc_op_save(o, outx);
    if (rstd >= 0) vc_op_save(o, rstd);
    if (amp != VC_DT_F32) vc_op_ftemp(o, vc_n_fixed(c->hidden * Di), amp); /* outproj_weight.to(dtype) */
    vc_t out = vc_op_out(o, vc_n_sample(L * c->hidden), amp != VC_DT_F32 ? amp : dt);
    /* backward: the Function's tensors (phase 0: out_recompute, xBC_conv, dxBC, dout, the norm's dx), then
     * those of _mamba_chunk_scan_combined_bwd beside them (phase 1: dt's clone; dA_cumsum, dt, ddt, CB, the
     * states and dstates in fp32), at most VC_MAX_PARTS parts */
    vc_part q[VC_MAX_PARTS];
    int nq = 0;
    const vc_numel top[5] = {vc_n_sample(L * Di), vc_n_sample(L * CD), vc_n_sample(L * CD), vc_n_sample(L * Di),
                             vc_n_sample(L * Di)};
    for (int k = 0; k < (c->rms_norm ? 5 : 4); k++) q[nq++] = (vc_part){top[k], dt, 0, 0, 0}; /* no norm: no dx */
    q[nq++] = (vc_part){vc_n_sample(3 * L * Di + 2 * L * CD), dt, 1, 0, 0};
    q[nq++] = (vc_part){vc_n_sample(L * H), dt, 1, 0, 0};
    q[nq++] = (vc_part){vc_n_sample(3 * H * nc * C + nc * G * C * C + 2 * nc * d->st), VC_DT_F32, 1, 0, 0};
    /* The backward computes every gradient whatever ctx.needs_input_grad says (ssd_combined.py @ e9594ce1
     * MambaSplitConv1dScanCombinedFn.backward: no needs_input_grad test): drmsnorm_weight, dD, dA and ddt_bias of a
     * frozen parameter (LoRA) are made all the same, beside the scan's transients, and dropped when it returns. The
     * late ones of a frozen weight (doutproj_weight's einsum, the conv's dweight and dbias, once the scan's fp32
     * locals are gone) are left out. */
    const vc_t early[] = {weight(b, iw->norm), vc_weight(b, iw->d), A, vc_weight(b, iw->dt_bias)};
    for (size_t k = 0; k < sizeof early / sizeof *early; k++)
        if (early[k] >= 0 && !vc_requires_grad(b, early[k]))
            q[nq++] = (vc_part){vc_numel_of(b, early[k]), vc_dt_of(b, early[k]), 1, 0, 0};
    vc_op_btemp_parts(o, q, nq, true);
    vc_op_gemm(o);
    vc_op_end(o);
    const vc_t locals[] = {xc, da, dto, sp, fin};
    for (size_t k = 0; k < sizeof locals / sizeof *locals; k++) vc_release(b, locals[k]);
    vc_set_output(b, out);
}

/* Inference, or generate() (cache: the layer's {conv_states, ssm_states} slot, NULL without one;
 * decode: a step with the cached states). */
static void emit_kernels(vc_build *b, const m2_cfg *c, const m2_dims *d, const m2_w *iw, int32_t *cache, bool decode)
{
    const vc_t zx = vc_input(b, 0);
    const vc_dtype dt = vc_dt_of(b, zx);
    const int64_t H = c->heads, C = c->chunk, G = c->groups, L = d->L, Di = d->Di, CD = d->CD, nc = d->nc;
    vc_t gate = vc__op_view(b, zx, vc_n_sample(L * Di), false); /* projected_states.split(...) */
    vc_t xbc = vc__op_view(b, zx, vc_n_sample(L * CD), false);
    vc_t A = a_of(b, vc_weight(b, iw->a_log), H);
    vc_t y;
    if (decode) {
        /* causal_conv1d_update(hidden_states_B_C, conv_states, weight, bias, activation): a new [B, conv_dim],
         * the state updated in place */
        vc_t xc = hold(b, vc__op_nograd(b, "causal_conv1d_update", xbc, cache[0], vc_n_sample(CD), dt));
        cache[0] = vc__op_copy_into(b, cache[0], xc);
        /* selective_state_update(ssm_states, x, dt, A, B, C, D, dt_bias, dt_softplus): out = empty_like(x) */
        y = vc__op_nograd(b, "selective_state_update", xc, cache[1], vc_n_sample(Di), dt);
        cache[1] = vc__op_copy_into(b, cache[1], y);
        /* without the norm, selective_state_update(..., z=gate) gates inside the kernel: y is the output */
        vc_t out = c->rms_norm ? gated_norm(b, y, gate, vc_weight(b, iw->norm), L, Di, c->norm_groups, false) : y;
        out = vc__op_linear(b, out, vc_weight(b, iw->out_w), weight(b, iw->out_b), L, Di, c->hidden);
        vc_release(b, xc); /* hidden_states_B_C: a local to the return */
        vc_set_output(b, out);
        return;
    } else {
        if (cache) /* conv_states = F.pad(xBC.transpose(1, 2), (d_conv - L, 0)); cache.conv_states.copy_(it) */
            cache[0] = vc__op_copy_into(b, cache[0], vc__op_fresh(b, "constant_pad_nd", xbc, vc_n_sample(CD * c->kernel)));
        /* causal_conv1d_fn(x=xBC.transpose(1, 2), weight, bias, activation): a new [B, conv_dim, L] */
        vc_t xc = vc__op_nograd(b, "causal_conv1d_fwd", xbc, vc_weight(b, iw->conv_w), vc_n_sample(L * CD), dt);
        vc_hold(b, xc); /* hidden_states_B_C (and its split views): a local to the return */
        /* mamba_chunk_scan_combined (MambaChunkScanCombinedFn.forward under no_grad: its locals die at its
         * return but for the output and the final states): dA_cumsum, dt (fp32), the chunk states (fp32),
         * passed (C's dtype) and final (fp32), CB (fp32), then out */
        const vc_numel hc = vc_n_sample(H * nc * C), sts = vc_n_sample(nc * d->st);
        vc_t da = vc__op_nograd(b, "_chunk_cumsum_fwd", xc, A, hc, VC_DT_F32);
        vc_t dto = vc__op_nograd(b, "_chunk_cumsum_fwd", xc, A, hc, VC_DT_F32);
        vc_t s32 = vc__op_nograd(b, "_chunk_state_fwd", da, dto, sts, VC_DT_F32);
        vc_t sp = vc__op_nograd(b, "_state_passing_fwd", s32, da, sts, dt);
        vc_t fin = vc__op_nograd(b, "_state_passing_fwd", s32, da, vc_n_sample(d->st), VC_DT_F32);
        vc_t cb = vc__op_nograd(b, "_bmm_chunk_fwd", xc, -1, vc_n_sample(nc * G * C * C), VC_DT_F32);
        y = vc__op_nograd(b, "_chunk_scan_fwd", cb, sp, vc_n_sample(L * Di), dt);
        vc_hold(b, y);
        vc_release(b, da);
        vc_release(b, dto);
        vc_hold(b, fin); /* ssm_state: a local of cuda_kernels_forward to its return */
        if (cache) cache[1] = vc__op_copy_into(b, cache[1], fin); /* cache_params.ssm_states[i].copy_(ssm_state) */
        /* without the norm (FalconH1Mixer.cuda_kernels_forward, mamba_rms_norm false): scan_output *
         * torch.nn.functional.silu(gate), two new [L, intermediate] in the gate's dtype */
        vc_t out = c->rms_norm ? gated_norm(b, y, gate, vc_weight(b, iw->norm), L, Di, c->norm_groups, false)
                               : mul2(b, y, vc__op_unary(b, "silu", gate, VC_SAVE_IN, false), vc_n_sample(L * Di));
        vc_release(b, y);
        out = vc__op_linear(b, out, vc_weight(b, iw->out_w), weight(b, iw->out_b), L, Di, c->hidden);
        vc_release(b, fin);
        vc_release(b, xc);
        vc_set_output(b, out);
    }
}

/* --serve's profiling run: vLLM's MambaMixer2 (vllm-project/vllm @ 2e0714afc079f2c76e0666f5089c42f231cfea62,
 * vllm/model_executor/layers/mamba/mamba2/mamba_mixer2.py), the layer of GraniteMoeHybridMambaDecoderLayer
 * (vllm/model_executor/models/granitemoehybrid.py @ 0195c9ec), from in_proj's output on:
 *  - MambaMixer2.forward: ssm_output = torch.empty([tokens, heads x head_dim]) in the hidden dtype, a local
 *    to the return; torch.ops.vllm.mamba_mixer2 -> conv_ssm_forward, whose profile-run branch ("if
 *    attn_metadata is None: # V1 profile run") makes hidden_states_B_C.transpose(0, 1).clone() (a new
 *    [conv_dim, tokens]: the split view is neither contiguous nor dense) and .transpose(0, 1).contiguous()
 *    of it (a second [tokens, conv_dim]), splits it and returns (the op's caller drops the result: both freed);
 *    the conv and the scan do not run, ssm_output stays as torch.empty left it;
 *  - gate = projected_states[..., :intermediate] (a view); self.norm(ssm_output, gate): Mixer2RMSNormGated
 *    .forward_cuda with n_groups 1 and one rank: rms_norm_gated (vllm/model_executor/layers/mamba/ops/
 *    layernorm_gated.py: x and z reshaped (views, stride(-1) 1), _layer_norm_fwd's out = torch.empty_like(x)
 *    and rstd float32 [tokens], freed at its return); then out_proj;
 *  - with n_groups > 1 (mamba2's Mamba-Codestral, nemotron_h: Mixer2RMSNormGated(intermediate, n_groups), the
 *    model's n_groups whatever the transformers norm groups) forward_cuda takes forward_native: x * silu(gate
 *    .to(float32)) (float32: x stays in the model's dtype and is promoted), x.view(..., groups, group_size)
 *    .pow(2).mean(-1), x_grouped * rsqrt(variance + eps), self.weight * x.to(input_dtype): gated_norm's order
 *    without its first cast (native), two float32 [tokens, intermediate] at a time;
 *  - with use_rms_norm False (falcon_h1's mamba_rms_norm false: FalconH1SSMDecoderLayer passes
 *    use_rms_norm=config.mamba_rms_norm) forward_cuda returns x * silu(gate.to(float32)).to(input_dtype): the
 *    float32 gate, its silu, that cast back, the product.
 *  - on a rank of tp_size > 1 (src/hf/hf_tp.c: the layer's heads and groups a rank's), Mixer2RMSNormGated.forward_cuda
 *    (mamba_mixer2.py @ 2e0714af: `if ((self.n_groups % self.tp_size) != 0) or self.n_groups != 1: return
 *    self.forward_native(x, gate)`) takes forward_native for n_groups 1 too: x * silu(gate.to(float32)), then the
 *    squares' sum over the rank's features all-reduced ([tokens, 1], counted as the mean's), x * rsqrt(variance +
 *    eps), self.weight * x.to(input_dtype): the grouped path's tensors with one group. With n_groups divisible by
 *    tp_size each rank normalizes its n_groups / tp_size groups without a collective (no all-gather: MambaMixer2
 *    asserts n_groups % tp_size == 0 or n_groups == 1, so the norm's redundant_tp case does not arise).
 * _warmup_ssd_kernels' one chunk of dummy inputs (chunk_size tokens, freed and torch.accelerator.empty_cache()
 * before the layer goes on) is not modelled. */
static void emit_vllm_profile(vc_build *b, const m2_cfg *c, const m2_dims *d, const m2_w *iw)
{
    const vc_t zx = vc_input(b, 0);
    const vc_dtype dt = vc_dt_of(b, zx);
    const int64_t L = d->L, Di = d->Di, CD = d->CD;
    vc_t so = hold(b, vc__op_new(b, "empty", vc_n_sample(L * Di), dt)); /* ssm_output */
    vc_t xbc = vc__op_view(b, zx, vc_n_sample(L * CD), false);          /* hidden_states_B_C */
    vc_t t = vc__op_clone(b, xbc);                                      /* .transpose(0, 1).clone() */
    vc__op_clone(b, vc__op_view(b, t, vc_n_sample(L * CD), false));     /* .transpose(0, 1).contiguous() */
    vc_t gate = vc__op_view(b, zx, vc_n_sample(L * Di), false);
    vc_t y;
    if (!c->rms_norm) { /* forward_cuda without the norm: x * silu(gate.to(float32)).to(input_dtype) */
        vc_t sg = vc__op_unary(b, "silu", vc__op_cast(b, gate, VC_DT_F32), VC_SAVE_IN, false);
        y = mul2(b, so, vc__op_cast(b, sg, dt), vc_n_sample(L * Di));
    } else if (c->groups > 1 || c->tp > 1) { /* forward_native: float32 temporaries, the variance over the groups */
        y = gated_norm(b, so, gate, vc_weight(b, iw->norm), L, Di, c->groups, true);
    } else {
        vc_t rstd = vc__op_nograd(b, "_layer_norm_fwd", so, gate, vc_n_sample(L), VC_DT_F32);
        y = vc__op_nograd(b, "_layer_norm_fwd", so, gate, vc_n_sample(L * Di), dt);
        vc_release(b, rstd);
    }
    vc_t out = vc__op_linear(b, y, vc_weight(b, iw->out_w), weight(b, iw->out_b), L, Di, c->hidden);
    vc_release(b, so);
    vc_set_output(b, out);
}

static void m2_emit(vc_build *b, const void *p)
{
    const m2_cfg *c = p;
    const m2_w iw = weights_of(c);
    const m2_dims d = dims_of(c, vc_input_shape(b, 0)->d[0]);
    if (vc_serve_profile(b)) {
        emit_vllm_profile(b, c, &d, &iw);
        return;
    }
    bool decode = false;
    int32_t *cache = vc_ssm_state(b, &decode); /* HybridMambaAttentionDynamicCache's slot, NULL without one */
    decode = decode && d.L == 1;               /* use_precomputed_states */
    if (cache && (cache[0] < 0 || cache[1] < 0)) { /* src/engine/generate.c makes every layer's states first */
        vc_refuse(b, O("mode"), "a Mamba2 layer's HybridMambaAttentionDynamicCache states were not made");
        return;
    }
    if (vc_training(b) && !cache && vc_weight_format(b, vc_weight(b, iw.out_w)) != VC_WEIGHTS_DENSE) {
        /* bitsandbytes replaces out_proj (an nn.Linear); mamba_split_conv1d_scan_combined takes
         * self.out_proj.weight as a dense matrix for its F.linear */
        vc_refuse(b, O("qlora"), "a Mamba2 layer's out_proj quantized in training: mamba_split_conv1d_scan_combined "
                  "runs F.linear on out_proj.weight itself, which a quantized weight fails; not modelled");
        return;
    }
    if (vc_training(b) && !cache) emit_fused(b, c, &d, &iw);
    else emit_kernels(b, c, &d, &iw, cache, decode);
}

const vc_kind vc_kind_Mamba2Mixer = {
    .name = "Mamba2Mixer",
    .summary = "Granite 4.0-H's Mamba2 mixer (mamba_ssm kernels): in_proj's [L, intermediate + conv_dim + heads] -> conv1d, SSD chunk scan, gated RMSNorm, out_proj -> [L, hidden]",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(m2_cfg),
    .parse = m2_parse, .setup = m2_setup, .emit = m2_emit, .ops = 40,
};

/* HybridMambaAttentionDynamicCache.__init__: conv_states [B, conv_dim, d_conv], ssm_states [B, heads, head_dim,
 * state], per sample */
void vc__mamba2_state(const void *cfg, int64_t *conv, int64_t *ssm)
{
    const m2_cfg *c = cfg;
    *conv = (c->heads * c->head_dim + 2 * c->groups * c->state) * c->kernel;
    *ssm = c->heads * c->head_dim * c->state;
}

/* vLLM's per-request state of one MambaMixer2 layer (src/engine/serve.c), in elements: vllm-project/vllm @
 * 2afe1e8573cf51b73569ae1d35f59078a2032a91, vllm/model_executor/layers/mamba/mamba_utils.py
 * MambaStateShapeCalculator.mamba2_state_shape (one rank, no speculative tokens): conv state (conv_kernel - 1,
 * intermediate + 2 n_groups x state) and temporal state (num_heads, head_dim, state_size) */
void vc__mamba2_vllm_state(const void *cfg, int64_t *conv, int64_t *ssm)
{
    const m2_cfg *c = cfg;
    *conv = (c->kernel - 1) * (c->heads * c->head_dim + 2 * c->groups * c->state);
    *ssm = c->heads * c->head_dim * c->state;
}
