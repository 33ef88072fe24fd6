"""ac_replica.py -- torchtitan's op-level selective activation checkpointing on torch 1.13 CPU.

torchtitan (torchtitan/distributed/activation_checkpoint.py _apply_op_sac @ 1f029641b5ca) wraps
each transformer block in ptd_checkpoint_wrapper(context_fn=selective_checkpointing_context_fn,
early_stop=False), the context being torch.utils.checkpoint.create_selective_checkpoint_contexts
(torch 2.4+) of its _custom_policy:

    mode = "recompute" if ctx.is_recompute else "forward"
    if func in mm_ops: meta[mode + "_mm_count"] += 1        # mm_ops: aten.mm, aten.linear
    to_save = func in op_sac_save_list and not (func in mm_ops and meta[...] % 2 == 0)
    return MUST_SAVE if to_save else PREFER_RECOMPUTE

with meta a fresh defaultdict(int) per checkpoint call and op_sac_save_list
torchtitan/models/llama3/parallelize.py's _op_sac_save_list (aten.mm, aten.linear, the
_scaled_dot_product_{efficient,flash,cudnn,math,fused_attention_overrideable}_attention ops,
_c10d_functional.reduce_scatter_tensor, aten.max, flex_attention, ...).

torch 1.13 has neither create_selective_checkpoint_contexts nor early_stop; it has
TorchDispatchMode, which sees the same ops below autograd. This file replicates from
torch/utils/checkpoint.py (2.x): _CachingTorchDispatchMode (forward: the op runs; a MUST_SAVE
op's outputs, detached, appended to storage[func]), _CachedTorchDispatchMode (recompute: a
MUST_SAVE op does not run, storage[func].pop(0) is returned), and the non-reentrant checkpoint
without early stop (the recompute runs the whole block, each saved tensor stored under its
holder's handle until unpacked: vctorch._checkpoint2x's mechanism, early_stop=False).

Not measured here: the SDPA kernels (torch 1.13 CPU has no scaled_dot_product_attention; the
harness's attention is the math path, bmm and softmax, which the list does not save), the
communication ops, aten.max (no fp8 scaling in these models).
"""

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _pop_mode_temporarily
from torch.utils._pytree import tree_map

import vctorch

MM_OPS = {torch.ops.aten.mm.default}
SAVE_OPS = {torch.ops.aten.mm.default, torch.ops.aten.max.default}
for _name in ("_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
              "_scaled_dot_product_cudnn_attention"):
    if hasattr(torch.ops.aten, _name):  # not in torch 1.13
        SAVE_OPS.add(getattr(torch.ops.aten, _name).default)


def titan_policy():
    """torchtitan's _custom_policy with its own meta (one per checkpoint call)."""
    meta = {"forward": 0, "recompute": 0}

    def policy(is_recompute, func):
        mode = "recompute" if is_recompute else "forward"
        if func in MM_OPS:
            meta[mode] += 1
        return func in SAVE_OPS and not (func in MM_OPS and meta[mode] % 2 == 0)
    return policy


def _detach(x):
    return x.detach() if isinstance(x, torch.Tensor) else x


class _Caching(TorchDispatchMode):
    """2.x _CachingTorchDispatchMode: the forward's outputs of MUST_SAVE ops kept."""

    def __init__(self, policy, storage):
        super().__init__()
        self.policy, self.storage = policy, storage

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.policy(False, func):
            self.storage.setdefault(func, []).append(tree_map(_detach, out))
        return out


class _Cached(TorchDispatchMode):
    """2.x _CachedTorchDispatchMode: in the recompute a MUST_SAVE op is not run."""

    def __init__(self, policy, storage):
        super().__init__()
        self.policy, self.storage = policy, storage

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.policy(True, func):
            return self.storage[func].pop(0)
        return func(*args, **(kwargs or {}))


def checkpoint_sac(fn, *args):
    """torch.utils.checkpoint(fn, *args, use_reentrant=False, early_stop=False,
    context_fn=lambda: create_selective_checkpoint_contexts(titan_policy())) as 2.x runs it:
    forward under the caching mode with every saved tensor a holder; the first unpack in
    backward re-runs fn, to its end, under the cached mode, storing each recomputed saved
    tensor (detached) under its holder's handle; unpacking drops the handle."""
    policy = titan_policy()
    storage = {}
    holders = []
    recomputed = weakref.WeakKeyDictionary()
    done = [False]

    def pack(x):
        if vctorch._wrapped_number(x):  # 2.x saves a wrapped number without the hooks
            return x
        h = vctorch._Holder()
        holders.append(weakref.ref(h))
        return h

    def recompute():
        count = [0]

        def rpack(x):
            if vctorch._wrapped_number(x):
                return x
            h = holders[count[0]]() if count[0] < len(holders) else None
            count[0] += 1
            with _pop_mode_temporarily():  # detach outside the cached mode (torch 1.13 hands a
                d = x.detach()              # wrapped number to a mode as a Python float)
            if h is not None:
                h.handle = vctorch._Handle()
                recomputed[h.handle] = d
            return d

        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(rpack, lambda x: x), \
                _Cached(policy, storage):
            fn(*args)
        done[0] = True

    def unpack(h):
        if isinstance(h, torch.Tensor):  # a wrapped number, kept as it is
            return h
        if not done[0]:
            recompute()
        ret = recomputed[h.handle]
        h.handle = None
        return ret

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack), _Caching(policy, storage):
        return fn(*args)


class OffloadActivations(torch.autograd.graph.saved_tensors_hooks):
    """torchtune's OffloadActivations with use_streams=False (torchtune/training/
    _activation_offloading.py @ bd2a0fc7: pack_tensor, unpack_tensor_single_stream), on the CPU.
    pack: every saved tensor gets the next id; one of at least min_offload_size (1,024) bytes that
    is not a Parameter is copied out (empty_like(pin_memory=True) + copy_) and only the id is
    kept; else the tensor itself. unpack: the copy brought back (`.to(device, non_blocking=True)`,
    a new tensor), the tracker entry dropped. Here "the device" is c10's CPU allocator, which the
    harness counts, and "the CPU" a NumPy array, which it does not (bf16 kept as int16 bits): the
    counted bytes are the GPU's. torch 1.13 has no torch.nn.Buffer, so no buffer is singled out
    (torchtune's hasattr test), as in a release without it."""

    def __init__(self, min_offload_size=1024):
        self.tracker = {}
        self.tensor_id = 0
        self.min_bytes = min_offload_size

        def pack(activation):
            self.tensor_id += 1
            tid = self.tensor_id
            num_bytes = activation.element_size() * activation.nelement()
            if num_bytes >= self.min_bytes and not isinstance(activation, torch.nn.Parameter):
                x = activation.detach()
                bits = x.view(torch.int16) if x.dtype == torch.bfloat16 else x
                self.tracker[tid] = (bits.numpy().copy(), x.dtype, tuple(x.shape), True)
            else:
                self.tracker[tid] = (activation, None, None, False)
            return tid

        def unpack(tid):
            held, dtype, shape, modified = self.tracker.pop(tid)
            if not modified:
                return held
            t = torch.from_numpy(held)
            if dtype == torch.bfloat16:
                t = t.view(torch.bfloat16)
            return t.reshape(shape).clone()  # the copy brought back: one new tensor of the same bytes

        super().__init__(pack, unpack)


class NoOpManager(torch.autograd.graph.saved_tensors_hooks):
    """torchtune's NoOpManager: identity hooks, so an outer OffloadActivations sees nothing."""

    def __init__(self):
        super().__init__(lambda t: t, lambda t: t)


class _NoopSaveInputs(torch.autograd.Function):
    """2.x torch/utils/checkpoint.py _NoopSaveInputs: saves the block's positional tensors
    (with the dummy) under whatever saved-tensor hooks are active outside the checkpoint."""

    @staticmethod
    def forward(ctx, dummy, x):
        ctx.save_for_backward(dummy, x)
        return torch.empty((0,))

    @staticmethod
    def backward(ctx, *grads):
        raise AssertionError("Did not expect to backward on this graph")


def checkpoint_saving_inputs(fn, x, *rest):
    """vctorch._checkpoint2x (2.x non-reentrant checkpoint, early stop) with its inputs kept as
    2.x keeps them: `input_saver = _NoopSaveInputs.apply(dummy, kwargs, *args)` before the
    checkpoint's own hooks, so an outer OffloadActivations packs them; the recompute's
    `args = ctx.get_args(ctx.saved_tensors)` unpacks them and drops them when it returns. x is
    the decoder layer's hidden states, the one positional tensor of transformers'
    GradientCheckpointingLayer (the rest are keyword arguments bound in a partial, which the
    frame keeps as they are: `rest` here)."""
    dummy = torch.empty((0,), requires_grad=True)
    saver = _NoopSaveInputs.apply(dummy, x)
    holders = []
    recomputed = weakref.WeakKeyDictionary()
    done = [False]

    def pack(t):
        if vctorch._wrapped_number(t):  # 2.x saves a wrapped number without the hooks
            return t
        h = vctorch._Holder()
        holders.append(weakref.ref(h))
        return h

    def recompute():
        count = [0]
        _, xr = saver.grad_fn.saved_tensors

        def rpack(t):
            if vctorch._wrapped_number(t):
                return t
            h = holders[count[0]]()
            count[0] += 1
            if h is not None:
                h.handle = vctorch._Handle()
                recomputed[h.handle] = t.detach()
            if count[0] == len(holders):
                vctorch.HOOKS.read("checkpoint-early-stop")
                raise vctorch._StopRecomputation()
            return t.detach()

        try:
            with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(rpack, lambda t: t):
                fn(xr, *rest)
        except RuntimeError as e:  # 1.13 re-raises a hook's exception as RuntimeError
            if "_StopRecomputation" not in str(e):
                raise
        except vctorch._StopRecomputation:
            pass
        done[0] = True

    def unpack(h):
        if isinstance(h, torch.Tensor):  # a wrapped number, kept as it is
            return h
        if not done[0]:
            recompute()
        ret = recomputed[h.handle]
        h.handle = None
        return ret

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return fn(x, *rest)
