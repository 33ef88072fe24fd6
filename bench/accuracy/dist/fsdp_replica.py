#!/usr/bin/python3
"""fsdp_replica.py -- one rank of FSDP1 (PyTorch 2.x FullyShardedDataParallel), replicated in
torch 1.13 CPU and measured with the accuracy harness's counter.

    LD_PRELOAD=bench/accuracy/libmemtrack.so /usr/bin/python3 bench/accuracy/dist/fsdp_replica.py \
        --model M --batch B --optim adam --world N --strategy full_shard|shard_grad_op|hybrid_shard \
        [--param-dtype bf16] [--reduce-dtype bf16|fp32] [--use-orig-params]
    /usr/bin/python3 bench/accuracy/dist/fsdp_replica.py --all      # the cases not yet in fsdp_replica.json
    /usr/bin/python3 bench/accuracy/dist/fsdp_replica.py --all --redo   # every case

Why a replica: torch 1.13's FSDP does not run on a CPU-only build (fsdp_check.py, docs/parallel.md
section 1.4). So this script re-implements, in plain torch, what FSDP's own code allocates and frees
on one rank, transcribed from the PyTorch 2.x sources (pytorch/pytorch@00ae0bc9,
torch/distributed/fsdp/_runtime_utils.py and flat_param.py; cited per function below), not from
vramcalc.  The model's forward, autograd and the optimizer are real torch, measured as
measure.py measures one process.  The collectives are not run: NCCL's all_gather_into_tensor and
reduce_scatter_tensor write into the tensors FSDP gives them and allocate nothing through PyTorch's
allocator, so each is replaced by an in-place copy of this rank's part into the same output
tensor.  Every rank holds the same shard sizes (ceil(U / N) per unit), so rank 0 stands for all.

Defaults replicated: use_orig_params=False, backward_prefetch=BACKWARD_PRE, forward_prefetch=False,
no mixed precision, sync_module_states=False, and no CPU offload unless --offload:
CPUOffload(offload_params=True) (see Unit and Replica; host tensors are host.py's, outside the counter); the wrap: every copy of a repeated
top-level entry is a unit (transformer_auto_wrap_policy on the block class), or, without one, every
top-level entry with parameters; everything else is the root's FlatParameter.

MixedPrecision (--param-dtype, --reduce-dtype; buffer_dtype None, keep_low_precision_grads False,
cast_forward_inputs False, cast_root_forward_inputs True) and use_orig_params=True (--use-orig-params)
are transcribed from pytorch/pytorch@01caf79e047fd15e1f75ba3825f789130efa476a _flat_param.py
(_init_param_reduce_dtypes, _init_flat_param_and_metadata, init_flat_param_attributes, pre_unshard,
_use_low_precision_shard, post_unshard, _use_sharded_views, _use_sharded_grad_views) and
@00ae0bc91ac2c1718d1baa193d9d299e2b82776c _runtime_utils.py (_root_pre_forward, _cast_forward_inputs,
_post_backward_hook, _cast_grad_to_param_dtype, _clear_grads_if_needed). fp16 is not measured: torch
1.13's CPU matmul has no Half kernel ("addmm_impl_cpu_" not implemented for 'Half').

--world 1: NO_SHARD, to which _init_core_state clamps every strategy on one rank
(pytorch/pytorch@39ec502db40696605fd91001e5a0afa23ed62f20 _init_utils.py); its branches of
pre_unshard, unshard, needs_unshard, post_unshard, post_reshard (_flat_param.py@01caf79e) and of
_post_forward_reshard, _pre_backward_hook, _post_backward_hook (_runtime_utils.py@00ae0bc9):
Unit.unshard_no_shard, Unit.reshard, Replica._post_backward_no_shard.
"""

import argparse
import gc
import json
import os
import sys

sys.dont_write_bytecode = True
import tracking  # noqa: E402  the counter's phases, the training steps, the preloaded child run
from tracking import HERE  # noqa: E402
tracking.add_paths()
import host  # noqa: E402  (host memory for --offload)
OUT = os.path.join(HERE, "fsdp_replica.json")

MLP = "bench/accuracy/models/mlp.json"
TSTACK = "bench/accuracy/dist/models/tstack.json"
GPTSTACK = "bench/accuracy/dist/models/gptstack.json"  # the root holds embedding, final norm, head
GPT = "bench/accuracy/models/gpt2_headsplit.json"      # tied embedding/head: one root parameter
CASES = [
    # model, short, batch, optim, world, strategy, held_out
    (MLP, "mlp", 64, "adam", 2, "full_shard", False),
    (MLP, "mlp", 64, "adam", 4, "full_shard", False),
    (MLP, "mlp", 64, "adam", 3, "full_shard", False),  # 3 does not divide the units: padding
    (MLP, "mlp", 64, "sgd", 4, "full_shard", True),
    (MLP, "mlp", 64, "adam", 4, "shard_grad_op", False),
    (TSTACK, "tstack", 4, "adam", 2, "full_shard", False),
    (TSTACK, "tstack", 4, "adam", 4, "full_shard", False),
    (TSTACK, "tstack", 4, "adam", 3, "full_shard", True),
    (TSTACK, "tstack", 8, "sgd", 4, "full_shard", False),
    (TSTACK, "tstack", 4, "adam", 4, "shard_grad_op", False),
    (TSTACK, "tstack", 4, "momentum", 4, "shard_grad_op", True),
    (GPTSTACK, "gptstack", 4, "adam", 4, "full_shard", False),
    (GPTSTACK, "gptstack", 4, "adam", 3, "full_shard", False),
    (GPTSTACK, "gptstack", 8, "sgd", 2, "full_shard", True),
    (GPTSTACK, "gptstack", 4, "adam", 4, "shard_grad_op", False),
    (GPT, "gpt", 4, "adam", 4, "full_shard", False),
    (GPT, "gpt", 4, "adam", 2, "shard_grad_op", True),
    (MLP, "mlp", 64, "adam", 16, "hybrid_shard", False),  # shards within 8-GPU nodes
    (GPTSTACK, "gptstack", 4, "adam", 16, "hybrid_shard", True),
]
# MixedPrecision(param_dtype, reduce_dtype) and use_orig_params=True: the same fields, then
# param_dtype, reduce_dtype (None: MixedPrecision's default), use_orig_params
MP_CASES = [
    (MLP, "mlp", 64, "adam", 2, "full_shard", False, "bf16", "bf16", False),
    (MLP, "mlp", 64, "adam", 4, "full_shard", False, "bf16", "fp32", False),
    (MLP, "mlp", 64, "adam", 3, "full_shard", True, "bf16", None, False),   # padding: the pad copy in bf16
    (MLP, "mlp", 64, "adam", 4, "shard_grad_op", False, "bf16", "bf16", False),
    (MLP, "mlp", 64, "adam", 4, "full_shard", False, None, None, True),
    (MLP, "mlp", 64, "adam", 3, "full_shard", False, None, None, True),     # 3: padded to the world size, no pad copy
    (TSTACK, "tstack", 4, "adam", 2, "full_shard", False, "bf16", "fp32", False),
    (TSTACK, "tstack", 4, "adam", 4, "full_shard", True, "bf16", "bf16", False),
    (TSTACK, "tstack", 4, "adam", 3, "full_shard", False, None, None, True),
    (GPTSTACK, "gptstack", 4, "adam", 4, "full_shard", False, "bf16", "bf16", False),
    (GPTSTACK, "gptstack", 4, "adam", 2, "full_shard", True, "bf16", "fp32", False),
    (GPTSTACK, "gptstack", 4, "adam", 3, "full_shard", False, "bf16", "fp32", True),
    (GPT, "gpt", 4, "adam", 4, "full_shard", False, "bf16", "fp32", False),
    (GPT, "gpt", 4, "adam", 3, "full_shard", True, None, None, True),
    (MLP, "mlp", 64, "adam", 16, "hybrid_shard", False, "bf16", "fp32", False),
    # world size 1: _init_core_state clamps every strategy to NO_SHARD (see Unit.unshard_no_shard)
    (MLP, "mlp", 64, "adam", 1, "full_shard", False, None, None, False),
    (TSTACK, "tstack", 4, "adam", 1, "full_shard", True, None, None, False),
    (GPTSTACK, "gptstack", 4, "adam", 1, "shard_grad_op", False, None, None, False),
    (GPT, "gpt", 4, "adam", 1, "full_shard", False, None, None, False),
    (MLP, "mlp", 64, "adam", 1, "full_shard", False, "bf16", "fp32", False),
    (TSTACK, "tstack", 4, "adam", 1, "full_shard", False, "bf16", "bf16", False),
    (GPTSTACK, "gptstack", 4, "adam", 1, "full_shard", True, "bf16", "fp32", False),
    (MLP, "mlp", 64, "adam", 1, "full_shard", False, None, None, True),
    (GPT, "gpt", 4, "adam", 1, "full_shard", False, None, None, True),
    (GPTSTACK, "gptstack", 4, "adam", 1, "full_shard", False, "bf16", "fp32", True),
    # peaks in backward at world size 1 (the ones above peak in Adam's step): _mp_shard, the casts
    (GPT, "gpt", 4, "adam", 1, "full_shard", False, "bf16", "fp32", False),
    (GPT, "gpt", 4, "adam", 1, "full_shard", True, "bf16", "bf16", False),
    (TSTACK, "tstack", 8, "sgd", 1, "full_shard", False, "bf16", "bf16", False),
    (GPTSTACK, "gptstack", 8, "sgd", 1, "full_shard", False, "bf16", "fp32", False),
]


ENGINE = {"full_shard": "fsdp", "shard_grad_op": "sgo", "hybrid_shard": "hsdp"}
DT = {None: None, "fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def case_id(short, batch, optim, world, strategy, pdt=None, rdt=None, orig=False):
    return "%s-b%d-%s-%s-w%d%s%s%s" % (short, batch, optim, ENGINE[strategy], world, "-p" + pdt if pdt else "",
                                     "-r" + rdt if rdt else "", "-orig" if orig else "")


class Unit:
    """One FlatParameter and its handle (flat_param.py FlatParamHandle) on rank 0."""

    def __init__(self, torch, name, module, entries, world, shared=(), offload=False, pdt=None, rdt=None, orig=False):
        self.torch, self.name, self.module, self.world, self.offload = torch, name, module, world, offload
        # world size 1: NO_SHARD (pytorch/pytorch@39ec502d _init_utils.py _init_core_state: "if
        # state.world_size == 1: sharding_strategy = ShardingStrategy.NO_SHARD"); uses_sharded_strategy
        # is then False throughout _flat_param.py and _runtime_utils.py
        self.no_shard = world == 1
        self.gpu_flat = None
        self.entries = [(mod, pname, tuple(p.shape), p.numel()) for mod, pname, p in entries]
        # shared (tied) parameters: (module, name, index of the entry it shares), set to the same
        # view (FlatParamHandle._use_unsharded_views, the _shared_param_infos loop)
        self.shared = [(mod, pname, [id(p) for _, _, p in entries].index(id(q))) for mod, pname, q in shared]
        self.numels = [e[3] for e in self.entries]
        # _init_param_reduce_dtypes: param_dtype alone given -> reduce in it too; else each or the
        # parameters' own (_orig_param_dtype); _uses_param_mixed_precision: _fwd_bwd_param_dtype !=
        # _orig_param_dtype
        orig_dtype = entries[0][2].dtype
        self.fwd_dtype = pdt or orig_dtype
        self.reduce_dtype = (pdt if rdt is None else rdt) if pdt is not None else (rdt or orig_dtype)
        self.mp = self.fwd_dtype != orig_dtype
        # use_orig_params=True (_init_flat_param_and_metadata with aligned_numel = _get_aligned_numel(
        # _fwd_bwd_param_dtype) = 16 bytes / its element size): a padding tensor before each parameter
        # whose start is not aligned, and one at the end up to a multiple of the world size; the split
        # sizes (_numels_with_padding) and the padding mask. Without it: none.
        self.orig = orig
        self.with_pad, self.is_pad = [], []
        total = 0
        align = 16 // torch.empty((), dtype=self.fwd_dtype).element_size() if orig else 0
        for n in self.numels:
            if align:
                pad = align - total % align
                if 0 < pad < align:
                    self.with_pad.append(pad)
                    self.is_pad.append(True)
                    total += pad
            self.with_pad.append(n)
            self.is_pad.append(False)
            total += n
        if align:
            pad = world - total % world
            if 0 < pad < world:
                self.with_pad.append(pad)
                self.is_pad.append(True)
                total += pad
        self.U = total
        with torch.no_grad():
            # FlatParamHandle.flatten_tensors (padding tensors: _construct_padding_tensor), then
            # FlatParamHandle.shard: _get_shard(flat, rank, world) = flat.chunk(world)[rank],
            # F.pad'ed to chunks[0].numel(): ceil(U / N) elements; the unsharded flat
            # parameter's storage is freed (flat_param._typed_storage()._resize_(0) in shard()).
            parts, it = [], iter(entries)
            for n, pad in zip(self.with_pad, self.is_pad):
                parts.append(torch.zeros(n, dtype=orig_dtype) if pad else next(it)[2].detach().reshape(-1))
            flat = torch.cat(parts)
            del parts
            chunk = flat.chunk(world)[0]
            self.S = chunk.numel()
            shard = chunk.clone()
            if offload:
                # CPUOffload(offload_params=True): the flat parameter is made and sharded on the CPU
                # (the module stays there), and init_flat_param_attributes pins _local_shard and
                # makes _cpu_grad = zeros_like(_local_shard).pin_memory(): host memory
                # (pytorch/pytorch@01caf79e _flat_param.py)
                host_shard = host.empty(torch, self.S, shard.dtype)
                host_shard[:shard.numel()].copy_(shard)
                shard = host_shard
                self.cpu_grad = host.empty(torch, self.S, shard.dtype)
            del flat, chunk
        self.flat_param = torch.nn.Parameter(shard, requires_grad=all(p.requires_grad for _, _, p in entries))
        self.local_shard = self.flat_param.data
        # init_flat_param_attributes: _mp_shard = empty_like(_local_shard, dtype=_fwd_bwd_param_dtype)
        # (parameter mixed precision only) and _full_param_padded = torch.empty(padded_unsharded_numel,
        # dtype: the low precision under parameter mixed precision), each then _free_storage'd:
        # allocated again at each unshard.
        self.mp_shard = None
        if self.mp:
            self.mp_shard = torch.empty(self.S, dtype=self.fwd_dtype)
            self.mp_shard.storage().resize_(0)
        self.padded = None  # NO_SHARD: init_flat_param_attributes makes no _full_param_padded
        if not self.no_shard:
            self.padded = torch.empty(world * self.S, dtype=self.fwd_dtype)
            self.padded.storage().resize_(0)
        # use_orig_params=True: the original parameter variables are kept, and (shard() ->
        # _use_sharded_views) their data set to flattened views of this rank's shard
        # (flat_param[offset_in_shard : offset_in_shard + numel_in_shard], _get_shard_metadata) or a
        # size-0 tensor when none of them is here; the optimizer is built on them.
        self.params = [p for _, _, p in entries] if orig else None
        for mod, pname, _, _ in self.entries:
            del mod._parameters[pname]
            setattr(mod, pname, None)
        for mod, pname, _ in self.shared:
            del mod._parameters[pname]
            setattr(mod, pname, None)
        if orig:
            self.shard_info = []
            start = 0
            for n, pad in zip(self.with_pad, self.is_pad):
                if not pad:
                    lo, hi = max(start, 0), min(start + n, self.S)  # rank 0's shard: [0, S)
                    self.shard_info.append((lo, hi - lo) if hi > lo else None)
                start += n
            self.use_sharded_views()
        self.saved_grad_shard = None
        self.acc = None

    def use_sharded_views(self):
        """_use_sharded_views: each original parameter's data a view of the local shard, or empty."""
        empty = self.torch.empty(0, dtype=self.local_shard.dtype)
        for p, info in zip(self.params, self.shard_info):
            p.data = empty if info is None else self.local_shard[info[0]:info[0] + info[1]]

    def use_sharded_grad_views(self, grad):
        """_use_sharded_grad_views: each trainable original parameter's .grad a view of the sharded
        gradient (its dtype is the parameter's: no .data hack), or None."""
        for p, info in zip(self.params, self.shard_info):
            p.grad = None if info is None or not p.requires_grad else grad[info[0]:info[0] + info[1]]

    def unsharded(self):
        if self.no_shard:
            return (self.mp and self.mp_shard.storage().size() > 0) or self.gpu_flat is not None
        return self.padded.storage().size() > 0

    def unshard_no_shard(self):
        """NO_SHARD (pytorch/pytorch@01caf79e _flat_param.py): pre_unshard -> under parameter mixed
        precision _use_low_precision_shard (_alloc_storage(_mp_shard, _local_shard.size()): the whole
        unit in param_dtype, and _mp_shard.copy_(_local_shard.to(device)), flat_param.data = _mp_shard),
        else under CPUOffload flat_param_to(self.device) (a GPU copy, a new tensor); unshard:
        needs_unshard() is False without a sharded strategy, so _use_unsharded_flat_param(
        self.flat_param): flat_param.data[:U] and the views; post_unshard frees nothing (it frees
        _mp_shard only for sharded strategies; post_reshard does for NO_SHARD). A unit still unsharded
        (prefetched: _handles_prefetched) is not unsharded again."""
        torch = self.torch
        if self.mp:
            if self.mp_shard.storage().size() == 0:
                self.use_low_precision_shard()
            data = self.mp_shard
        elif self.offload:
            if self.gpu_flat is None:
                self.gpu_flat = torch.empty(self.S, dtype=self.local_shard.dtype)
                with torch.no_grad():
                    self.gpu_flat.copy_(self.local_shard)
            data = self.gpu_flat
        else:
            data = self.local_shard
        self.flat_param.data = data[:self.U]
        self.set_views()

    def use_low_precision_shard(self):
        """FP _use_low_precision_shard: _alloc_storage(_mp_shard), then
        _mp_shard.copy_(_local_shard.to(device)); under CPUOffload the .to() is an H2D copy of the
        full-precision shard, gone after the copy_."""
        torch = self.torch
        self.mp_shard.storage().resize_(self.S)
        with torch.no_grad():
            if self.offload:
                gpu_shard = torch.empty(self.S, dtype=self.local_shard.dtype)
                gpu_shard.copy_(self.local_shard)
                self.mp_shard.copy_(gpu_shard)
                del gpu_shard
            else:
                self.mp_shard.copy_(self.local_shard)

    def unshard(self):
        """FlatParamHandle.unshard: _alloc_padded_unsharded_flat_param (_alloc_storage to world x
        shard), the all-gather into it (here: this rank's part copied in place), then
        _use_unsharded_flat_param: flat_param.data = padded[:U] and the module's parameters
        set to views of it (_use_unsharded_views: split(numels), view(shape); with grad mode on,
        these are autograd views of flat_param). Under parameter mixed precision, first
        pre_unshard -> _use_low_precision_shard: _alloc_storage(_mp_shard) and
        _mp_shard.copy_(_local_shard.to(device)) (under CPUOffload the .to() is an H2D copy), the
        all-gather from _mp_shard, then post_unshard -> _free_low_precision_sharded_param."""
        torch = self.torch
        if self.no_shard:
            return self.unshard_no_shard()
        if not self.unsharded():
            if self.mp:
                self.use_low_precision_shard()
                gpu_shard = self.mp_shard
            else:
                gpu_shard = self.local_shard
                if self.offload:
                    # CPUOffload: pre_unshard -> flat_param_to(self.device): the shard copied to the
                    # GPU (a new tensor), all-gathered from, and dropped once flat_param.data points
                    # at the gathered storage (_all_gather_flat_param, _use_unsharded_flat_param)
                    gpu_shard = torch.empty(self.S, dtype=self.local_shard.dtype)
                    gpu_shard.copy_(self.local_shard)
            self.padded.storage().resize_(self.world * self.S)
            with torch.no_grad():
                self.padded[:self.S].copy_(gpu_shard)
            del gpu_shard
            if self.mp:
                self.mp_shard.storage().resize_(0)
        self.flat_param.data = self.padded[:self.U]
        self.set_views()

    def set_views(self):
        """_use_unsharded_views: split(numels) of flat_param, view(shape), set on the modules."""
        splits = self.flat_param.split(self.with_pad)
        views = [v.view(shape) for (_, _, shape, _), v in zip(self.entries, [v for v, pad in zip(splits, self.is_pad)
                                                                            if not pad])]
        for (mod, pname, _, _), v in zip(self.entries, views):
            setattr(mod, pname, v)
        for mod, pname, i in self.shared:
            setattr(mod, pname, views[i])

    def reshard(self):
        """FlatParamHandle.reshard(free_unsharded_flat_param=True): _use_sharded_flat_param
        (flat_param.data = _local_shard; use_orig_params: _use_sharded_views) and
        _free_unsharded_flat_param (_free_storage)."""
        self.flat_param.data = self.local_shard
        if self.orig:
            self.use_sharded_views()
        if self.no_shard:
            # reshard(free_unsharded_flat_param=False) then post_reshard: NO_SHARD under parameter
            # mixed precision frees _mp_shard; under CPUOffload the GPU copy goes with flat_param.data
            if self.mp:
                self.mp_shard.storage().resize_(0)
            self.gpu_flat = None
            return
        self.padded.storage().resize_(0)


class Replica:
    """FSDP's runtime hooks for a root and its units (_runtime_utils.py)."""

    def __init__(self, torch, model, units, root, reshard_after_forward, pdt=None):
        self.torch, self.model, self.units, self.root = torch, model, units, root
        self.raf = reshard_after_forward
        self.post_forward_order = []
        self.ran_pre_backward = set()
        for u in units:
            u.module.register_forward_pre_hook(self._pre_forward_hook(u))
            u.module.register_forward_hook(self._post_forward_hook(u))
        # _root_pre_forward runs before the root's _pre_forward (FullyShardedDataParallel.forward)
        model.register_forward_pre_hook(self._root_pre_forward(pdt))
        model.register_forward_pre_hook(self._pre_forward_hook(root))
        model.register_forward_hook(self._post_forward_hook(root))

    def _root_pre_forward(self, pdt):
        def hook(_mod, inp):
            # _clear_grads_if_needed(state._all_handles): use_orig_params=True, every original
            # parameter's .grad None (zero_grad(set_to_none=True)) -> flat_param.grad = None
            for u in self.units + ([self.root] if self.root else []):
                if u.orig and all(p.grad is None for p in u.params):
                    u.flat_param.grad = None
            # MixedPrecision.cast_root_forward_inputs (default True): _cast_forward_inputs(param_dtype,
            # *args) -> _cast_fp_inputs_to_dtype: x.to(dtype) for a floating-point tensor of another
            # dtype; the cast args are forward's arguments until it returns
            if pdt is None:
                return None
            torch = self.torch
            return tuple(x.to(pdt) if torch.is_tensor(x) and torch.is_floating_point(x) and x.dtype != pdt else x
                         for x in inp)
        return hook

    def _pre_forward_hook(self, u):
        def hook(_mod, _inp):
            # _root_pre_forward / _pre_forward -> _pre_forward_unshard -> _unshard; then
            # _register_post_backward_hooks: a post hook on the FlatParameter's AccumulateGrad,
            # registered once (flat_param._post_backward_hook_state keeps it)
            if u is None:
                return
            u.unshard()
            # (re-registered every iteration: _finalize_params removes it and deletes
            # _post_backward_hook_state; under mixed precision flat_param.data changes dtype, and
            # VariableHooks::set_data then resets the gradient accumulator)
            if u.acc is None and u.flat_param.requires_grad:
                u.acc = u.flat_param.expand_as(u.flat_param).grad_fn.next_functions[0][0]
                u.acc_handle = u.acc.register_hook(lambda *_: self._post_backward(u))
        return hook

    def _post_forward_hook(self, u):
        def hook(_mod, _inp, out):
            # _post_forward: record_post_forward, _post_forward_reshard (not the root's; only
            # RESHARD_AFTER_FORWARD strategies), _register_pre_backward_hooks on the outputs
            if u is None:
                return out
            if u not in self.post_forward_order:
                self.post_forward_order.append(u)
            # NO_SHARD: _reshard(free=False) still runs (_use_sharded_flat_param, post_reshard), root too
            if u.no_shard or (u is not self.root and self.raf):
                u.reshard()
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for t in outs:
                if self.torch.is_tensor(t) and t.requires_grad:
                    t.register_hook(lambda g, u=u: self._pre_backward(u))
            return out
        return hook

    def _pre_backward(self, u):
        """_pre_backward_hook: once per unit and backward; _unshard unless prefetched, then
        _prefetch_handles(BACKWARD): with BACKWARD_PRE the handle before this one in post-forward
        order (_ExecOrderData.get_handle_to_backward_prefetch), if it still needs its
        pre-backward unshard."""
        if u in self.ran_pre_backward:
            return None
        self.ran_pre_backward.add(u)
        u.unshard()
        i = self.post_forward_order.index(u)
        if i > 0:
            t = self.post_forward_order[i - 1]
            if t not in self.ran_pre_backward and not t.unsharded():
                t.unshard()
        return None

    def _post_backward(self, u):
        """_post_backward_hook (sharded strategies): _reshard (_should_free_in_backward), then the
        reduce-scatter of the padded unsharded gradient into new_sharded_grad = empty_like(
        chunks[0]), kept in _saved_grad_shard (or added to it)."""
        torch = self.torch
        F = torch.nn.functional
        if u.no_shard:
            return self._post_backward_no_shard(u)
        with torch.no_grad():
            u.reshard()
            # autograd_computed_grad is held to the hook's end; a gradient not in _reduce_dtype is
            # cast first (flat_param.grad.data = flat_param.grad.to(handle._reduce_dtype))
            autograd_computed_grad = u.flat_param.grad.data
            if u.flat_param.grad.dtype != u.reduce_dtype:
                u.flat_param.grad.data = u.flat_param.grad.to(u.reduce_dtype)
            unsharded_grad = u.flat_param.grad.data
            u.flat_param.grad = None
            chunks = list(unsharded_grad.chunk(u.world))
            numel_to_pad = u.world * chunks[0].numel() - unsharded_grad.numel()
            padded_unsharded_grad = F.pad(unsharded_grad, [0, numel_to_pad]) if numel_to_pad > 0 else unsharded_grad
            new_sharded_grad = torch.empty_like(chunks[0])
            new_sharded_grad.copy_(padded_unsharded_grad[:new_sharded_grad.numel()])  # reduce_scatter_tensor
            # _cast_grad_to_param_dtype: back to the flat parameter's (full-precision) dtype
            if new_sharded_grad.dtype != u.flat_param.dtype:
                low_prec_grad_data = new_sharded_grad.data
                new_sharded_grad.data = new_sharded_grad.data.to(dtype=u.flat_param.dtype)
                del low_prec_grad_data
            if u.saved_grad_shard is not None:
                u.saved_grad_shard += new_sharded_grad
            else:
                u.saved_grad_shard = new_sharded_grad
            if u.offload:
                # handle._offload_params: _cpu_grad.copy_(grad_to_offload) (D2H into host memory);
                # _saved_grad_shard stays (_runtime_utils.py@00ae0bc9 _post_backward_hook)
                u.cpu_grad.copy_(u.saved_grad_shard)
            if u.orig:
                # use_orig_params: _use_sharded_grad_views over the sharded gradient (self.sharded_grad:
                # _saved_grad_shard during backward)
                u.use_sharded_grad_views(u.saved_grad_shard)
            del autograd_computed_grad, unsharded_grad, padded_unsharded_grad, chunks, new_sharded_grad

    def _post_backward_no_shard(self, u):
        """_post_backward_hook, NO_SHARD (_runtime_utils.py@00ae0bc9): _reshard(free=False:
        _should_free_in_backward is False without a sharded strategy; post_reshard frees _mp_shard);
        autograd_computed_grad held to the end; the cast to _reduce_dtype; the communication hook
        (default_hooks.allreduce_hook, NO_SHARD's default: dist.all_reduce in place, nothing here at
        world size 1); _cast_grad_to_param_dtype(flat_param.grad); .grad stays the unit's gradient."""
        torch = self.torch
        with torch.no_grad():
            u.reshard()
            autograd_computed_grad = u.flat_param.grad.data
            if u.flat_param.grad.dtype != u.reduce_dtype:
                u.flat_param.grad.data = u.flat_param.grad.to(u.reduce_dtype)
            if u.flat_param.grad.dtype != u.flat_param.dtype:
                low_prec_grad_data = u.flat_param.grad.data
                u.flat_param.grad.data = u.flat_param.grad.data.to(dtype=u.flat_param.dtype)
                del low_prec_grad_data
            if u.offload:
                u.cpu_grad.copy_(u.flat_param.grad)
            if u.orig:
                u.use_sharded_grad_views(u.flat_param.grad)
            del autograd_computed_grad

    def final_callback(self):
        """_post_backward_final_callback -> _finalize_params -> prepare_gradient_for_optim:
        .grad = _saved_grad_shard, or with CPU offload .grad = _cpu_grad (and _saved_grad_shard
        deleted)."""
        for u in self.units + ([self.root] if self.root else []):
            if u.acc is not None:  # _post_backward_hook_state[1].remove(); delattr
                u.acc_handle.remove()
                u.acc = None
            if u.saved_grad_shard is not None:
                u.flat_param.grad = u.cpu_grad if u.offload else u.saved_grad_shard
                u.saved_grad_shard = None
            elif u.no_shard and u.offload and u.flat_param.grad is not None:
                u.flat_param.grad = u.cpu_grad  # prepare_gradient_for_optim: the _cpu_grad branch, NO_SHARD too
        self.ran_pre_backward = set()


def wrap(torch, module, world, offload=False, pdt=None, rdt=None, orig=False):
    """The units (see the module docstring) and the root, from vctorch's module tree:
    module.body.items[i] is top-level entry i, .copies its repeat copies."""
    items = list(module.body.items)
    repeated = any(len(b.copies) > 1 for b in items)
    unit_mods = []
    for i, b in enumerate(items):
        for c, m in enumerate(b.copies):
            if (len(b.copies) > 1 or not repeated) and any(True for _ in m.parameters()):
                unit_mods.append(("items[%d][%d]" % (i, c), m))
    seen = set()
    units = []

    def split(m):
        """m's parameters not yet in a unit, each once, and the other names of tied ones."""
        entries, shared, ids = [], [], set()
        for mod in m.modules():
            for pn, p in list(mod._parameters.items()):
                if p is None or id(p) in seen:
                    continue
                (shared if id(p) in ids else entries).append((mod, pn, p))
                ids.add(id(p))
        seen.update(ids)
        return entries, shared

    for name, m in unit_mods:
        entries, shared = split(m)
        units.append(Unit(torch, name, m, entries, world, shared, offload, pdt, rdt, orig))
    rest, shared = split(module)
    root = Unit(torch, "root", module, rest, world, shared, offload, pdt, rdt, orig) if rest else None
    return units, root


def run_case(model, batch, optim, world, strategy, offload=False, pdt=None, rdt=None, orig=False):
    import torch
    import optim2x
    import vctorch
    pdt, rdt = (getattr(torch, DT[d]) if d else None for d in (pdt, rdt))

    torch.set_num_threads(1)
    ph = tracking.Phases(model)
    phase_begin, phase_end = ph.begin, ph.end

    p = phase_begin("build")
    module, make_inputs = vctorch.build(ph.spec, compat="2x")
    inputs = make_inputs(batch, dtype=torch.float32)
    phase_end(p)
    p = phase_begin("wrap")
    # HYBRID_SHARD shards within a node (_init_process_group_state_for_hybrid_shard: the intra-node
    # group is device_count() ranks, 8 here) and all-reduces the sharded gradient across nodes in
    # place (default_hooks.allreduce_hook on new_sharded_grad): per rank, FULL_SHARD over 8
    shard_world = min(world, 8) if strategy == "hybrid_shard" else world
    units, root = wrap(torch, module, shard_world, offload, pdt, rdt, orig)
    rep = Replica(torch, module, units, root, strategy != "shard_grad_op", pdt)
    gc.collect()
    phase_end(p)
    p = phase_begin("optim")
    flat = [u.flat_param for u in units + ([root] if root else []) if u.flat_param.requires_grad]
    if orig:  # use_orig_params=True: the optimizer on the original parameters (views of the shards)
        flat = [q for u in units + ([root] if root else []) for q in u.params if q.requires_grad]
    # CPU offload: the optimizer steps the CPU flat parameters (host.py); else optim2x's 2.x step
    opt = host.HostOptimizer(flat, optim) if offload else optim2x.make(flat, optim)
    phase_end(p)
    module.train()
    # the end of backward: FSDP's _post_backward_final_callback (queued to autograd's engine),
    # after loss.backward() returned, outside any autograd node (the op observer's backward flag
    # only matters inside one)
    tracking.train(ph, tracking.loss_step(torch, module, inputs), opt.step,
                   lambda: opt.zero_grad(set_to_none=True), after_backward=rep.final_callback)
    return ph.result(torch, units=[{"name": u.name, "numel": u.U, "shard": u.S}
                                   for u in units + ([root] if root else [])])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--redo", action="store_true")
    ap.add_argument("--model")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--optim", default="adam")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--strategy", default="full_shard", choices=["full_shard", "shard_grad_op", "hybrid_shard"])
    ap.add_argument("--offload", action="store_true", help="CPUOffload(offload_params=True)")
    ap.add_argument("--param-dtype", choices=["bf16", "fp16", "fp32"], help="MixedPrecision(param_dtype)")
    ap.add_argument("--reduce-dtype", choices=["bf16", "fp16", "fp32"], help="MixedPrecision(reduce_dtype)")
    ap.add_argument("--use-orig-params", action="store_true", help="use_orig_params=True")
    a = ap.parse_args(argv)
    if not a.all:
        print(json.dumps(run_case(a.model, a.batch, a.optim, a.world, a.strategy, a.offload, a.param_dtype,
                                  a.reduce_dtype, a.use_orig_params)))
        return 0
    recs = tracking.load_records(OUT, a.redo)
    have = {r["case"] for r in recs}
    for model, short, batch, optim, world, strategy, held, pdt, rdt, orig in \
            [c + (None, None, False) for c in CASES] + MP_CASES:
        cid = case_id(short, batch, optim, world, strategy, pdt, rdt, orig)
        if cid in have:
            continue
        extra = (["--param-dtype", pdt] if pdt else []) + (["--reduce-dtype", rdt] if rdt else []) + \
            (["--use-orig-params"] if orig else [])
        r = tracking.run_preloaded([sys.executable, os.path.abspath(__file__), "--model", model, "--batch", str(batch),
                                    "--optim", optim, "--world", str(world), "--strategy", strategy] + extra)
        cfg = {"model": model, "batch": batch, "optim": optim, "world_size": world, "strategy": strategy}
        if pdt or rdt or orig:  # the existing records keep their config
            cfg.update({"param_dtype": pdt, "reduce_dtype": rdt, "use_orig_params": orig})
        r.update({"case": cid, "held_out": held, "config": cfg})
        recs.append(r)
        print("%s %s %d" % (r["case"], r["peak_phase"], r["peak_allocated"]), file=sys.stderr)
    with open(OUT, "w") as f:
        json.dump({"records": recs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
