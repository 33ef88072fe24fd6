/*
 * shortconv.c — ShortConv: LFM2's short convolution (Lfm2ShortConv, model_type lfm2) between its in_proj
 * Linear and its out_proj Linear (src/hf/hf_lfm2.c writes both), as transformers runs it without the
 * causal-conv1d package.
 *
 * Source: huggingface/transformers 0096ba4f66d4f5f7b1d4e162f8a75d0894b40ea8,
 * src/transformers/models/lfm2/modeling_lfm2.py:
 *  - Lfm2ShortConv.__init__: conv = nn.Conv1d(hidden, hidden, kernel_size=conv_L_cache, groups=hidden,
 *    bias=conv_bias, padding=conv_L_cache - 1) (weight [hidden, 1, L_cache]); in_proj nn.Linear(hidden,
 *    3 hidden, bias=conv_bias); out_proj nn.Linear(hidden, hidden, bias=conv_bias); registration order conv,
 *    in_proj, out_proj;
 *  - forward: cuda_kernels_forward when is_fast_path_available (causal_conv1d_fn and causal_conv1d_update
 *    imported: the causal-conv1d package installed) and the input is on a GPU, slow_forward otherwise.
 *    slow_forward is modelled (transformers does not require causal-conv1d; forward "cuda_kernels" is
 *    refused in one line);
 *  - slow_forward without a cache (training, inference): BCx = in_proj(x).transpose(-1, -2) (a view);
 *    B, C, x = BCx.chunk(3, dim=-2) (views); Bx = B * x (a new [B, hidden, L], its memory in the views'
 *    [L, hidden] order); conv_out = self.conv(Bx)[..., :seqlen] (aten's convolution over the padded length:
 *    a new [hidden, L + L_cache - 1], sliced; depthwise on CUDA it takes cudnn in the input's channels-last
 *    order, so no contiguous copy); y = C * conv_out (new, [L, hidden] in memory); y.transpose(-1, -2)
 *    .contiguous() (already contiguous: no copy); out_proj(y). Autograd keeps B and x (of BCx), Bx and the
 *    conv weight, C and the conv's whole output. BCx, Bx and the conv's output are locals until the
 *    function returns, after out_proj;
 *  - with a Lfm2HybridConvCache, the prefill (cache_position[0] == 0): conv_state = F.pad(Bx, (L_cache - L,
 *    0)) (a new [hidden, L_cache], a local to the return) copied into the layer's conv_cache, then as
 *    above; a decoding step: conv_state = conv_cache.roll(-1, -1) (new), conv_state[:, :, cache_position]
 *    = Bx (in place), conv_cache.copy_(conv_state), torch.sum(conv_state * conv.weight[:, 0, :], dim=-1)
 *    (the product a temporary, the sum new [hidden]), += conv.bias in place, unsqueeze; y = C * conv_out.
 *  - Lfm2HybridConvCache.__init__: conv_cache zeros [B, hidden, L_cache] in the model's dtype for each of
 *    num_hidden_layers layers (src/engine/generate.c makes them before the prefill).
 * Under --serve, vLLM's layer instead (sc_emit_vllm_profile below; its conv state pages: src/engine/serve.c).
 */
#include "ops.h"

enum { SC_TORCH, SC_KERNELS };
static const char *const sc_paths[] = {"torch", "cuda_kernels", NULL};

typedef struct {
    int64_t hidden, kernel, tp; /* tp: vLLM's tensor-parallel ranks (--serve --tp), hidden one rank's share */
    bool bias;
    int path;
} sc_cfg;

static int sc_parse(vc_args *a, void *p)
{
    sc_cfg *c = p;
    if (vc_arg_int(a, "hidden_size", VC_REQUIRED, 1, &c->hidden) || vc_arg_int(a, "L_cache", 3, 1, &c->kernel) ||
        vc_arg_bool(a, "bias", false, &c->bias) || vc_arg_enum(a, "forward", sc_paths, SC_TORCH, &c->path) ||
        vc_arg_int(a, "tp", 1, 1, &c->tp))
        return -1;
    if (c->path == SC_KERNELS)
        return vc_arg_fail(a, "forward", "cuda_kernels (Lfm2ShortConv.cuda_kernels_forward, the causal-conv1d package's "
                           "causal_conv1d_fn) is not modelled; torch (slow_forward) is");
    return 0;
}

static int sc_setup(vc_setup *s, void *p)
{
    const sc_cfg *c = p;
    int64_t w3, t;
    if (vc_mul(s, 3, c->hidden, &w3) || vc_mul(s, c->hidden, c->kernel, &t)) return -1;
    if (s->nin != 1) return vc_fail(s, "inputs", "ShortConv takes in_proj's output");
    const vc_shape *x = &s->in[0];
    if (x->nd != 2 || x->d[1] != w3)
        return vc_fail(s, "inputs", "in_proj's output must be [L, %lld] per sample (3 x hidden_size)", (long long)w3);
    if (vc_add(s, x->d[0], c->kernel, &t) || vc_mul(s, t, c->hidden, &t)) return -1; /* the conv's padded output */
    int64_t d[2] = {x->d[0], c->hidden};
    s->out = vc_shape_make(2, d);
    return vc_param_shape(s, "conv.weight", 3, (int64_t[3]){c->hidden, 1, c->kernel}, 0) ||
           (c->bias && vc_param(s, "conv.bias", c->hidden));
}

/* --serve's profiling run: vLLM's ShortConv (vllm-project/vllm @ 0123e1dc5c65f01d34ae4e405f2204e79aa68f09,
 * vllm/model_executor/layers/mamba/short_conv.py; the stored copies of the files below are each at their own
 * commit, none at serve.c's 2afe1e85), the layer of Lfm2ShortConvDecoderLayer (vllm/model_executor/models/lfm2.py
 * @ 055e47c28003156421365af985d676fc921cb075) and Lfm2MoeShortConvDecoderLayer (lfm2_moe.py @
 * 030ea52effcb05071543c8c42b8f0145e94cee43), from in_proj's output on:
 *  - the decoder layer's forward: output = torch.empty_like(hidden_states) ([tokens, hidden], a local of the
 *    layer's forward to its return), then self.short_conv(hidden_states, output): torch.ops.vllm.short_conv ->
 *    ShortConv.forward_cuda (made here, after in_proj, where vLLM makes it just before: the same bytes live);
 *  - forward_cuda's profile-run branch ("if attn_metadata is None: # V1 profile run"): BCx = in_proj(x), B, C, x =
 *    BCx.chunk(3, dim=-1) (views); Bx = (B * x).contiguous() (new [tokens, hidden], contiguous already);
 *    hidden_states = C * Bx (new); out_proj(hidden_states), returned (and dropped by the op's caller: the
 *    layer's output stays torch.empty_like's; here out_proj's result stands for it and the empty tensor lives
 *    to the block's end). The causal conv does not run and no conv state is read.
 * BCx and Bx are locals of forward_cuda until it returns, after out_proj; here they end with the ShortConv op
 * (the profiling run's "held_until" is off), one [tokens, hidden] short of vLLM's while out_proj runs.
 * Under --tp ("tp": src/hf/hf_lfm2.c vc__hf_lfm2_unmodelled) hidden is one rank's conv_dim / tp: BCx, B x and
 * C x Bx are the rank's, the decoder layer's empty output the whole [tokens, hidden x tp]. */
static void sc_emit_vllm_profile(vc_build *b, const sc_cfg *c)
{
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden;
    const vc_t bcx = vc_input(b, 0);
    const vc_numel n = vc_n_sample(L * H);
    vc_t out = vc__op_new(b, "empty_like", vc_n_sample(L * H * c->tp), vc_dt_of(b, bcx)); /* the decoder layer's output */
    vc_keep_through_block(b, out);
    vc_t bv = vc__op_view(b, bcx, n, false), cv = vc__op_view(b, bcx, n, false), xv = vc__op_view(b, bcx, n, false);
    vc_t bx = vc__op_mul(b, bv, xv, n, false);
    vc_t y = vc__op_mul(b, cv, bx, n, false);
    vc_keep_to_here(b, bx);
    vc_set_output(b, y);
}

static void sc_emit(vc_build *b, const void *p)
{
    const sc_cfg *c = p;
    bool decode = false;
    int32_t *cache = vc_ssm_state(b, &decode); /* Lfm2HybridConvCache's conv_cache slot, NULL without one */
    if (c->tp > 1 && (cache || vc_opts(b)->mode != VC_MODE_INFER)) { /* one rank's share: vLLM's layer alone */
        vc_refuse(b, "tp", "%lld: a ShortConv split over tensor-parallel ranks is modelled as vLLM's forward only (" O("serve")
                  ", the mode infer its plans run in)", (long long)c->tp);
        return;
    }
    /* the profiling run; under "tp" the allocator envelope's plans at other batches too (vLLM's layer) */
    if (vc_serve_profile(b) || c->tp > 1) {
        sc_emit_vllm_profile(b, c);
        return;
    }
    const int64_t L = vc_input_shape(b, 0)->d[0], H = c->hidden, K = c->kernel;
    const vc_t bcx = vc_input(b, 0), w = vc_weight(b, 0), bias = c->bias ? vc_weight(b, 1) : -1;
    const vc_dtype dt = vc_dt_of(b, bcx);
    decode = decode && L == 1;
    if (cache && cache[0] < 0) { /* src/engine/generate.c makes every layer's state first */
        vc_refuse(b, O("mode"), "a ShortConv layer's Lfm2HybridConvCache state was not made");
        return;
    }
    /* BCx.chunk(3, dim=-2): B, C, x views of in_proj's output; Bx = B * x */
    const vc_numel n = vc_n_sample(L * H);
    vc_t bv = vc__op_view(b, bcx, n, false), cv = vc__op_view(b, bcx, n, false), xv = vc__op_view(b, bcx, n, false);
    vc_t bx = vc__op_mul(b, bv, xv, n, false);
    vc_t conv, st = -1;
    if (decode) {
        /* roll (new), index_put_ of Bx (in place), conv_cache.copy_(conv_state); sum(conv_state * weight[:, 0, :]) */
        st = vc__op_fresh(b, "roll", cache[0], vc_n_sample(H * K));
        vc_op *o = vc_op_begin(b, "index_put_");
        int id = vc_op_in(o, st);
        vc_op_in(o, bx);
        st = vc_op_out_view(o, id, vc_n_sample(H * K), true);
        vc_op_end(o);
        cache[0] = vc__op_copy_into(b, cache[0], st);
        vc_t pr = vc__op_nograd(b, "mul", st, w, vc_n_sample(H * K), dt);
        conv = vc__op_nograd(b, "sum", pr, -1, vc_n_sample(H), dt);
        vc_release(b, pr);
    } else {
        if (cache) { /* conv_state = F.pad(Bx, (L_cache - L, 0)); conv_cache.copy_(conv_state) */
            st = vc__op_fresh(b, "constant_pad_nd", bx, vc_n_sample(H * K));
            cache[0] = vc__op_copy_into(b, cache[0], st);
        }
        /* self.conv(Bx) over L + L_cache - 1 positions, then [..., :seqlen] */
        vc_t full = vc__op_conv(b, bx, w, bias, vc_n_sample(H * (L + K - 1)));
        conv = vc__op_view(b, full, n, false);
    }
    vc_t y = vc__op_mul(b, cv, conv, n, false);
    y = vc__op_view(b, y, n, true); /* y.transpose(-1, -2).contiguous(): no copy */
    vc_set_output(b, y);
    /* the locals (BCx, Bx, the conv's output, conv_state) until slow_forward returns, after out_proj: tied
     * to its argument, which the decoder layer holds until then ("held_until" on operator_norm) */
    const vc_t owner = vc_input_arg_held_next(b, 0) ? vc_input_arg(b, 0) : -1;
    const vc_t locals[] = {bcx, bx, conv, st};
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++)
        if (locals[i] >= 0) {
            vc_keep_to_here(b, locals[i]);
            vc_keep_with(b, locals[i], owner);
        }
}

const vc_kind vc_kind_ShortConv = {
    .name = "ShortConv",
    .summary = "LFM2's short convolution (torch path): in_proj's [L, 3 hidden] -> B x, depthwise causal conv1d, C gating -> [L, hidden] (out_proj's input)",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(sc_cfg),
    .parse = sc_parse, .setup = sc_setup, .emit = sc_emit, .ops = 16,
};

/* Lfm2HybridConvCache's conv_cache entry per sample, in elements: [hidden, L_cache] */
int64_t vc__shortconv_state(const void *cfg)
{
    const sc_cfg *c = cfg;
    return c->hidden * c->kernel;
}

/* vLLM's per-request conv state of one ShortConv layer (src/engine/serve.c), in elements: vllm-project/vllm @
 * 2afe1e8573cf51b73569ae1d35f59078a2032a91, vllm/model_executor/layers/mamba/mamba_utils.py
 * MambaStateShapeCalculator.short_conv_state_shape (one rank, no speculative tokens): (conv_kernel - 1,
 * intermediate_size), conv_kernel conv_L_cache and intermediate_size the layer's dim (lfm2.py: config.conv_dim,
 * which src/hf/hf_lfm2.c requires to be hidden_size under --serve; lfm2_moe.py: hidden_size) */
int64_t vc__shortconv_vllm_state(const void *cfg)
{
    const sc_cfg *c = cfg;
    return (c->kernel - 1) * c->hidden;
}
