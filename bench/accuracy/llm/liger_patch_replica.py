"""liger_patch_replica.py -- Liger-Kernel's patch set (use_liger_kernel=True) in plain torch (1.13, CPU), for the
accuracy harness (measure_llm.py --liger): the RMSNorm, SwiGLU and RoPE autograd Functions with the tensors their
Python wrappers allocate and save; the fused linear cross-entropy is liger_replica.py's.

Source: github.com/linkedin/Liger-Kernel @ ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c
  src/liger_kernel/transformers/monkey_patch.py  _apply_liger_kernel_to_instance, apply_liger_kernel_to_llama
                                                 (l.221-286; _mistral, _qwen2, _qwen3 the same instance patch):
                                                 rope, rms_norm, swiglu, fused_linear_cross_entropy True;
                                                 _patch_rms_norm_module (l.68: offset 0, casting_mode "llama",
                                                 in_place True) on base_model.norm and each layer's
                                                 input_layernorm / post_attention_layernorm;
                                                 _patch_swiglu_module(mlp, LigerSwiGLUMLP) (l.136)
  src/liger_kernel/ops/rms_norm.py               LigerRMSNormFunction, rms_norm_forward / rms_norm_backward
  src/liger_kernel/ops/swiglu.py                 LigerSiLUMulFunction, swiglu_forward / swiglu_backward
  src/liger_kernel/ops/rope.py                   LigerRopeFunction, rope_forward / rope_backward
  src/liger_kernel/ops/geglu.py                  LigerGELUMulFunction, geglu_forward / geglu_backward
  src/liger_kernel/transformers/geglu.py         LigerGEGLUMLP.forward
  monkey_patch.py apply_liger_kernel_to_gemma2 (l.990-1061), _gemma3_text (l.1064-1148), _mixtral (l.799-869),
                  _qwen3_moe (l.1722-1784); _apply_liger_kernel_to_instance (l.3623-3648: the kwargs the function
                  takes, liger_kernel_config's)
  src/liger_kernel/transformers/swiglu.py        LigerSwiGLUMLP.forward
  src/liger_kernel/transformers/rope.py          liger_rotary_pos_emb
  src/liger_kernel/ops/utils.py                  ensure_contiguous (x.contiguous() of each tensor argument)
  src/liger_kernel/ops/fused_moe.py              LigerFusedMoEFunction (l.160-434), compute_routing_metadata
                                                 (l.35-133), _token_aggregation (l.136-152)
  src/liger_kernel/transformers/swiglu.py        LigerExperts.forward (l.67-77)
  src/liger_kernel/ops/cross_entropy.py          LigerCrossEntropyFunction, cross_entropy_forward / _backward
  src/liger_kernel/transformers/functional.py    liger_cross_entropy

What is not the source's: the Triton kernels compute in registers and write only into the tensors the Python
allocates. Their replicas here are in-place torch ops on those tensors that allocate nothing; the values are not
the kernels' (the RMS is not taken, the rotation is a scaling): the memory is the same, the values are not used.
Written from the source, without reading vramcalc's engine.
"""
import torch

COMMIT = "ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c"


def _sm_count(x):
    """rms_norm_backward l.519-525: multi_processor_count on cuda, 1 on any other device (the CPU here)."""
    if x.device.type == "cuda":
        return torch.cuda.get_device_properties(x.device).multi_processor_count
    return 1


class LigerRMSNormFunction(torch.autograd.Function):
    """ops/rms_norm.py LigerRMSNormFunction (row_mode None). casting_mode "llama" (offset 0) or "gemma" (offset 1.0:
    the kernels cast to float32 in registers; RSTD float32 in both, l.451-453); in_place False (gemma2, gemma3_text):
    dX = torch.zeros_like(dY) (l.543)."""

    @staticmethod
    def forward(ctx, X, W, eps, in_place=True):
        X = X.contiguous()                                             # ensure_contiguous
        shape = X.shape
        X2 = X.view(-1, shape[-1])                                     # rms_norm_forward: X.view(-1, dim)
        n_rows, n_cols = X2.shape
        Y = torch.empty((n_rows, n_cols), dtype=X.dtype, device=X.device)  # l.449
        RSTD = torch.empty(n_rows, dtype=torch.float32, device=X.device)   # l.452-453 (llama casting: fp32)
        Y.copy_(X2).mul_(W)                                            # _rms_norm_forward_kernel (in place)
        RSTD.fill_(1.0)
        ctx.save_for_backward(X, W, RSTD)                              # l.657
        ctx.in_place = in_place
        return Y.view(*shape)

    @staticmethod
    def backward(ctx, dY):
        X, W, RSTD = ctx.saved_tensors
        dY = dY.contiguous()                                           # ensure_contiguous
        shape = dY.shape
        dY = dY.view(-1, shape[-1])                                    # rms_norm_backward l.516
        n_cols = dY.shape[1]
        _dW = torch.empty((_sm_count(X), n_cols), dtype=torch.float32, device=W.device)  # l.529
        if ctx.in_place:
            dX = dY                                                    # in_place (l.541-542)
        else:
            dX = torch.zeros_like(dY)                                  # l.543
            dX.copy_(dY)                                               # the kernel writes dX (in place)
        _dW.fill_(0.0)                                                 # _rms_norm_backward_kernel (in place)
        dX.mul_(W)
        dX = dX.view(*shape)
        dW = _dW.sum(dim=0).to(W.dtype)                                # l.605
        return dX, dW, None, None


class LigerSiLUMulFunction(torch.autograd.Function):
    """ops/swiglu.py LigerSiLUMulFunction (gate_multiplier = down_multiplier = 1, no DTensor)."""

    @staticmethod
    def forward(ctx, a, b):
        a = a.contiguous()                                             # ensure_contiguous
        b = b.contiguous()
        c = torch.empty_like(a)                                        # swiglu_forward l.128
        c.copy_(a).sigmoid_().mul_(a).mul_(b)                          # _swiglu_forward_kernel: silu(a) * b
        ctx.save_for_backward(a, b)                                    # l.231
        return c

    @staticmethod
    def backward(ctx, dc):
        dc = dc.contiguous()                                           # ensure_contiguous
        a, b = ctx.saved_tensors
        # swiglu_backward: _swiglu_backward_kernel recomputes silu(a) and writes da into a, db into b
        b.mul_(dc)
        a.mul_(dc)
        return a, b


class LigerGELUMulFunction(torch.autograd.Function):
    """ops/geglu.py LigerGELUMulFunction: geglu_forward (l.87-108) c = torch.empty_like(a), save_for_backward(a, b)
    (l.138); geglu_backward (l.111-130) stores da into a and db into b (tl.store, l.83-84) and returns them."""

    @staticmethod
    def forward(ctx, a, b):
        a = a.contiguous()                                             # ensure_contiguous
        b = b.contiguous()
        c = torch.empty_like(a)                                        # l.93
        c.copy_(a).tanh_().mul_(b)                                     # _geglu_tanh_forward_kernel (in place)
        ctx.save_for_backward(a, b)                                    # l.138
        return c

    @staticmethod
    def backward(ctx, dc):
        dc = dc.contiguous()                                           # ensure_contiguous
        a, b = ctx.saved_tensors
        b.mul_(dc)                                                     # _geglu_tanh_backward_kernel: db into b,
        a.mul_(dc)                                                     # da into a
        return a, b


class LigerRopeFunction(torch.autograd.Function):
    """ops/rope.py LigerRopeFunction: q [B, H, L, D], k [B, KV, L, D] views of [B, L, heads, D] storages."""

    @staticmethod
    def forward(ctx, q, k, cos, sin):
        q = q.transpose(1, 2)                                          # rope_forward
        k = k.transpose(1, 2)
        q = q.contiguous()                                             # no-op: the projections' own storage
        k = k.contiguous()
        cos = cos.contiguous()
        sin = sin.contiguous()
        q.mul_(cos.unsqueeze(2))                                       # _triton_rope (in place)
        k.mul_(cos.unsqueeze(2))
        ctx.save_for_backward(cos, sin)
        return q.transpose(1, 2), k.transpose(1, 2)

    @staticmethod
    def backward(ctx, dq, dk):
        cos, sin = ctx.saved_tensors
        dq = dq.transpose(1, 2)                                        # rope_backward
        dk = dk.transpose(1, 2)
        dq = dq.contiguous()                                           # a copy when dq arrives [B, H, L, D]
        dk = dk.contiguous()
        dq.mul_(cos.unsqueeze(2))                                      # _triton_rope(BACKWARD_PASS=True)
        dk.mul_(cos.unsqueeze(2))
        return dq.transpose(1, 2), dk.transpose(1, 2), None, None


class LigerCrossEntropyFunction(torch.autograd.Function):
    """ops/cross_entropy.py LigerCrossEntropyFunction (no weight, no z_loss / accuracy / predicted tokens, reduction
    "mean" as fixed_cross_entropy passes it without num_items_in_batch). forward (l.545-569) -> cross_entropy_forward
    (l.351-474): loss_1d = torch.zeros(n_rows, dtype=_input.dtype) (l.378); target_mask = target != ignore_index;
    n_non_ignore = target_mask.sum().item(); the asserts' (target * target_mask).max() / .min(); the kernel writes
    each row's loss into loss_1d and its gradient into _input (in place, HAS_GRADIENTS); loss = torch.sum(loss_1d);
    ctx.save_for_backward(_input.detach()). backward (l.572-600) -> cross_entropy_backward (l.477-501): grad_output
    equal to torch.tensor(1.0): the saved tensor returned as it is."""

    @staticmethod
    def forward(ctx, _input, target, ignore_index=-100):
        n_rows, V = _input.shape
        loss_1d = torch.zeros(n_rows, dtype=_input.dtype, device=_input.device)  # l.378
        target_mask = target != ignore_index
        n_non_ignore = target_mask.sum().item()
        assert (target * target_mask).max() < V
        assert (target * target_mask).min() >= 0
        if _input.stride(-1) != 1:
            _input = _input.contiguous()
        X = _input.detach()
        X.mul_(0.5)                                                    # liger_cross_entropy_kernel: dX into X
        loss_1d.fill_(1.0 / max(n_non_ignore, 1))                      # and the loss into loss_1d
        loss = torch.sum(loss_1d)
        ctx.save_for_backward(_input.detach())
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        (_input,) = ctx.saved_tensors
        if torch.equal(grad_output, torch.tensor(1.0, device=grad_output.device)):
            pass
        else:
            _input.mul_(grad_output)                                   # element_mul_kernel (in place)
        return _input, None, None


def liger_cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                        reduction="mean", label_smoothing=0.0):
    """transformers/functional.py liger_cross_entropy: what apply_liger_kernel_to_<family>(cross_entropy=True) sets
    as transformers.loss.loss_utils' nn.functional.cross_entropy (torch.nn.functional's attribute)."""
    assert weight is None and reduction == "mean" and label_smoothing == 0.0
    return LigerCrossEntropyFunction.apply(input, target, ignore_index)


def liger_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """transformers/rope.py liger_rotary_pos_emb."""
    return LigerRopeFunction.apply(q, k, cos, sin)


def _rms_forward(self, hidden_states):
    """transformers/rms_norm.py LigerRMSNorm.forward, bound by _patch_rms_norm_module."""
    return LigerRMSNormFunction.apply(hidden_states, self.weight, self.variance_epsilon, self.in_place)


BLOCK_M_TOKEN = 64  # ops/fused_moe.py l.27


def _next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def compute_routing_metadata(topk_indices, E, block_m_token=BLOCK_M_TOKEN):
    """ops/fused_moe.py compute_routing_metadata (l.35-133): the tensors it allocates, in its order. The three
    Triton kernels (histogram, prefix sum, scatter) only write into them: replaced by Python over the indices'
    values (a list, not torch memory) and element writes into those tensors (no allocation)."""
    T, K = topk_indices.shape
    TK = T * K
    dev = topk_indices.device
    n_tiles = -(-T // max(1, 1024 // _next_pow2(K)))                                   # l.58-61
    idx = topk_indices.tolist()
    tile_expert_counts = torch.empty(E, n_tiles, dtype=torch.int32, device=dev)       # l.64 (kernel 1 writes it)
    tile_expert_counts.zero_()
    counts = [0] * E
    for row in idx:
        for e in row:
            counts[e] += 1
    for e in range(E):
        tile_expert_counts[e, 0] = counts[e]                                         # kernel 1
    expert_token_count = tile_expert_counts.sum(dim=1, dtype=torch.int32)              # l.77: a real torch op
    expert_start_idx = torch.empty(E + 1, dtype=torch.int32, device=dev)               # l.80 (kernel 2)
    expert_tile_offset = torch.empty(E + 1, dtype=torch.int32, device=dev)             # l.81 (kernel 2)
    starts, tiles = [0], [0]
    for c in counts:
        starts.append(starts[-1] + c)
        tiles.append(tiles[-1] + -(-c // block_m_token))
    for i in range(E + 1):
        expert_start_idx[i] = starts[i]
        expert_tile_offset[i] = tiles[i]
    num_m_tiles = int(expert_tile_offset[-1].item())                                  # l.96
    tile_row_start = torch.empty(num_m_tiles, dtype=torch.int32, device=dev)          # l.98 (kernel 3)
    tile_expert = torch.empty(num_m_tiles, dtype=torch.int32, device=dev)             # l.99 (kernel 3)
    s_scatter_idx = torch.empty(TK, dtype=torch.int32, device=dev)                    # l.102 (kernel 3)
    s_reverse_scatter_idx = torch.empty(TK, dtype=torch.int32, device=dev)            # l.103 (kernel 3)
    x_gather_idx = torch.empty(TK, dtype=torch.int32, device=dev)                     # l.104 (kernel 3)
    for t in (tile_row_start, tile_expert, s_scatter_idx, s_reverse_scatter_idx, x_gather_idx):
        t.zero_()
    return (expert_token_count, expert_start_idx, x_gather_idx, s_scatter_idx, s_reverse_scatter_idx,
            tile_row_start, tile_expert)                                              # l.125-133


class LigerFusedMoEFunction(torch.autograd.Function):
    """ops/fused_moe.py LigerFusedMoEFunction (l.160-434), ensure_contiguous on both. Every torch.empty / zeros /
    zeros_like below is the Python wrapper's; the Triton kernels (_fused_up_proj_swiglu_kernel writes pre_act and
    post_act, _fused_down_proj_kernel Y, _token_gather_weighted_sum_kernel out / dx, _moe_bwd_down_proj_kernel
    d_pre_act, weighted_act and dS, _moe_bwd_dW2_kernel ddown_proj, _moe_bwd_dX_expanded_kernel dx_expanded,
    _moe_bwd_dW1_kernel dgate_up_proj) only write into those: replaced by in-place fills (the values are not
    the kernels')."""

    @staticmethod
    def forward(ctx, x, gate_up_proj, down_proj, top_k_index, top_k_weights):
        x, gate_up_proj, down_proj = x.contiguous(), gate_up_proj.contiguous(), down_proj.contiguous()
        top_k_index, top_k_weights = top_k_index.contiguous(), top_k_weights.contiguous()  # ensure_contiguous
        T, K = top_k_index.shape
        E = gate_up_proj.shape[0]
        H = x.shape[1]
        inter = gate_up_proj.shape[1] // 2
        TK = T * K
        with torch.no_grad():                                                           # l.193-202
            (_, expert_start_idx, x_gather_idx, s_scatter_idx, s_reverse_scatter_idx, tile_row_start,
             tile_expert) = compute_routing_metadata(top_k_index, E)
        pre_act = torch.empty(TK, 2 * inter, dtype=x.dtype, device=x.device)            # l.206
        post_act = torch.empty(TK, inter, dtype=x.dtype, device=x.device)               # l.207
        pre_act.fill_(0.01)                                                             # _fused_up_proj_swiglu_kernel
        post_act.fill_(0.01)
        Y = torch.empty(TK, H, dtype=x.dtype, device=x.device)                          # l.233
        Y.fill_(0.01)                                                                   # _fused_down_proj_kernel
        topk_weights_flat = top_k_weights.flatten().contiguous()                        # l.255 (a view)
        out = torch.empty(T, H, dtype=Y.dtype, device=Y.device)                         # l.138 _token_aggregation
        out.copy_(x)                                                                    # the gather-sum kernel
        # top_k_weights saved in topk_weights_flat's place (its storage; flattened again in backward): torch 1.13's
        # non-reentrant checkpoint cannot unpack a view made under forward's no_grad of a tensor that requires grad
        # ("No grad accumulator for a saved leaf")
        ctx.save_for_backward(x, gate_up_proj, down_proj, pre_act, top_k_weights, expert_start_idx,
                              x_gather_idx, s_scatter_idx, s_reverse_scatter_idx, tile_row_start,
                              tile_expert)                                              # l.258-270
        ctx.T, ctx.K = T, K
        ctx.mark_non_differentiable(top_k_index)
        ctx.set_materialize_grads(False)
        return out

    @staticmethod
    def backward(ctx, dO):
        if dO is None:
            return None, None, None, None, None
        dO = dO.contiguous()                                                            # ensure_contiguous
        x, gate_up_proj, down_proj, pre_act, top_k_weights = ctx.saved_tensors[:5]
        topk_weights_flat = top_k_weights.flatten()  # noqa: F841 (the kernels' input)
        T, K = ctx.T, ctx.K
        TK = T * K
        inter = pre_act.shape[1] // 2
        H = x.shape[1]
        d_pre_act = torch.empty(TK, 2 * inter, dtype=dO.dtype, device=dO.device)        # l.312
        weighted_act = torch.empty(TK, inter, dtype=dO.dtype, device=dO.device)         # l.313
        dS = torch.zeros(TK, dtype=dO.dtype, device=dO.device)                          # l.314
        d_pre_act.fill_(0.01)                                                           # _moe_bwd_down_proj_kernel
        weighted_act.fill_(0.01)
        ddown_proj = torch.zeros_like(down_proj)                                        # l.347 (_moe_bwd_dW2_kernel)
        dx_expanded = torch.empty(TK, H, dtype=dO.dtype, device=dO.device)              # l.371
        dx_expanded.fill_(0.01)                                                         # _moe_bwd_dX_expanded_kernel
        dx = torch.zeros(T, H, dtype=dO.dtype, device=dO.device)                        # l.394 (gather-sum kernel)
        dgate_up_proj = torch.zeros_like(gate_up_proj)                                  # l.411 (_moe_bwd_dW1_kernel)
        return dx, dgate_up_proj, ddown_proj, None, dS.view(T, K)                       # l.434


def _experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """transformers/swiglu.py LigerExperts.forward (l.67-77), bound to the stacked experts by _patch_swiglu_module
    at transformers >= 5 (monkey_patch.py l.862-863 mixtral, l.1777-1778 qwen3_moe)."""
    orig_shape = hidden_states.shape
    x = hidden_states.view(-1, self.hidden_dim)
    top_k_index_2d = top_k_index.view(-1, top_k_index.shape[-1]).to(torch.int32)
    top_k_weights_2d = top_k_weights.view(-1, top_k_weights.shape[-1])
    out = LigerFusedMoEFunction.apply(x, self.gate_up_proj, self.down_proj, top_k_index_2d, top_k_weights_2d)
    return out.view(orig_shape)


def _top2_forward(self, x):
    """transformers/swiglu.py LigerBlockSparseTop2MLP.forward (l.37-38), bound to each MixtralBlockSparseTop2MLP."""
    return self.w2(LigerSiLUMulFunction.apply(self.w1(x), self.w3(x)))


def _geglu_forward(self, x):
    """transformers/geglu.py LigerGEGLUMLP.forward, bound by _patch_geglu_module."""
    return self.down_proj(LigerGELUMulFunction.apply(self.gate_proj(x), self.up_proj(x)))


def _swiglu_forward(self, x):
    """transformers/swiglu.py LigerSwiGLUMLP.forward, bound by _patch_swiglu_module."""
    return self.down_proj(LigerSiLUMulFunction.apply(self.gate_proj(x), self.up_proj(x)))


SWIGLU = ("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe")
GEGLU = ("gemma", "gemma2", "gemma3_text")  # gemma: reference.py's GemmaForCausalLM (G1)
KERNELS = ("rope", "rms_norm", "swiglu", "geglu", "fused_linear_cross_entropy", "cross_entropy")


def _patch_rms(module, in_place):
    """monkey_patch.py _patch_rms_norm_module (l.68-100): attributes set, LigerRMSNorm.forward bound."""
    module.variance_epsilon = getattr(module, "variance_epsilon", None) or getattr(module, "eps", None) or 1e-6
    module.in_place = in_place
    import types
    module.forward = types.MethodType(_rms_forward, module)


def apply(model, reference, kernels=None):
    """apply_liger_kernel_to_<model_type>(model=model, **kwargs) on reference.py's CausalLM (gptoss_replica.py's for
    gemma3_text): kernels None -> its defaults (rope, rms_norm, swiglu / geglu, fused_linear_cross_entropy), else
    the set named True and every other keyword False (liger_kernel_config naming them all). The module's
    apply_rotary_pos_emb replaced, the norms' and MLPs' forwards rebound, the loss liger_replica.py's.
      llama / mistral / qwen2 / qwen3 (l.221-286 and alike): norm, input_layernorm, post_attention_layernorm
        (offset 0, "llama", in_place True); mlp -> LigerSwiGLUMLP.forward.
      mixtral (l.799-869), qwen3_moe (l.1722-1784): the same norms; swiglu at 4.x (reference.py's per-expert
        MixtralSparseMoeBlock): each expert's forward LigerBlockSparseTop2MLP's; at transformers 5 (moe_v5_replica.py's
        stacked experts) LigerExperts.forward bound to the experts (LigerFusedMoEFunction).
      gemma (l.921-987): offset 1.0, "gemma", in_place True on norm, input_layernorm, post_attention_layernorm;
        mlp -> LigerGEGLUMLP.forward.
      gemma2 (l.990-1061): offset 1.0, "gemma", in_place False on norm and the four layer norms; mlp ->
        LigerGEGLUMLP.forward.
      gemma3_text (l.1064-1148): geglu and the fused loss only (its norms run on a transposed view: not replicated).
      cross_entropy (l.259-262 and alike; False by default): torch.nn.functional.cross_entropy = liger_cross_entropy,
        which reference.py's for_causal_lm_loss (ForCausalLMLoss) then calls."""
    import types
    t = model.cfg.model_type
    if t not in SWIGLU + GEGLU:
        raise SystemExit("liger_patch_replica.py: --liger models " + ", ".join(SWIGLU + GEGLU))
    mlp = "swiglu" if t in SWIGLU else "geglu"
    on = set(kernels) if kernels is not None else {"rope", "rms_norm", mlp, "fused_linear_cross_entropy"}
    if on - set(KERNELS) or (on & {"swiglu", "geglu"}) - {mlp}:
        raise SystemExit("liger_patch_replica.py: kernels %s for %s" % (sorted(on), t))
    if "cross_entropy" in on and ("fused_linear_cross_entropy" in on or t == "mistral"):
        raise SystemExit("liger_patch_replica.py: cross_entropy with the fused loss, or on mistral (l.723-724: "
                         "modeling_mistral.CrossEntropyLoss, which no loss reads)")
    if t == "gemma3_text" and on & {"rope", "rms_norm"}:
        raise SystemExit("liger_patch_replica.py: gemma3_text's rope / rms_norm are not replicated")
    if "rope" in on:
        reference.apply_rotary_pos_emb = liger_rotary_pos_emb
    in_place = t not in ("gemma2", "gemma3_text")
    names = ("input_layernorm", "post_attention_layernorm") + (
        ("pre_feedforward_layernorm", "post_feedforward_layernorm") if t in ("gemma2", "gemma3_text") else ())
    if "rms_norm" in on:
        _patch_rms(model.norm, in_place)
    for layer in model.layers:
        moe = getattr(layer, "block_sparse_moe", None) or getattr(layer, "mlp", None)
        experts = getattr(moe, "experts", None)
        if mlp in on and t in ("mixtral", "qwen3_moe") and experts is not None and not isinstance(
                experts, torch.nn.ModuleList):  # transformers 5 (l.862-863, l.1777-1778): LigerExperts.forward
            experts.forward = types.MethodType(_experts_forward, experts)
        elif mlp in on and t == "mixtral":  # 4.x: each expert (l.858-862: LigerBlockSparseTop2MLP)
            for expert in layer.block_sparse_moe.experts:
                expert.forward = types.MethodType(_top2_forward, expert)
        elif mlp in on and t == "qwen3_moe":  # 4.x: each expert (l.1777-1781: LigerQwen3MoeSwiGLUMLP)
            for expert in layer.mlp.experts:
                expert.forward = types.MethodType(_swiglu_forward, expert)
        elif mlp in on:
            layer.mlp.forward = types.MethodType(_swiglu_forward if mlp == "swiglu" else _geglu_forward, layer.mlp)
        if "rms_norm" in on:
            for n in names:
                _patch_rms(getattr(layer, n), in_place)
    if "fused_linear_cross_entropy" in on:
        model.loss_impl = "liger"
    if "cross_entropy" in on:  # l.259-262 and alike: from transformers.loss.loss_utils import nn;
        torch.nn.functional.cross_entropy = liger_cross_entropy  # nn.functional.cross_entropy = liger_cross_entropy
