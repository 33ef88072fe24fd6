#!/usr/bin/python3
"""fsdp2_replica.py -- one rank of FSDP2 (PyTorch 2.x fully_shard), replicated in torch 1.13 CPU
and measured with the accuracy harness's counter.

    /usr/bin/python3 bench/accuracy/dist/fsdp2_replica.py --all [--redo]   # measure (fsdp2_replica.json)
    /usr/bin/python3 bench/accuracy/dist/fsdp2_replica.py --compare --cli build/vramcalc [--bound 8]
    LD_PRELOAD=bench/accuracy/libmemtrack.so /usr/bin/python3 bench/accuracy/dist/fsdp2_replica.py \
        --model M --batch B --optim adam --world N [--param-dtype bf16 --reduce-dtype fp32]

Why a replica: torch 1.13 has no FSDP2 (torch.distributed.fsdp.fully_shard came with 2.x), and
its FSDP does not run on a CPU build anyway (fsdp_check.py).  So this script re-implements, in
plain torch, what FSDP2's own code allocates and frees on one rank, transcribed from the source
(not from vramcalc), pytorch/pytorch, torch/distributed/fsdp/_fully_shard/:
  F2P _fsdp_param.py        @010ae4a89516fa3be548ab16dff711414ec12d0b
  F2G _fsdp_param_group.py  @010ae4a89516fa3be548ab16dff711414ec12d0b
  F2C _fsdp_collectives.py  @010ae4a89516fa3be548ab16dff711414ec12d0b
  F2S _fsdp_state.py        @01c9f4fcc3ffa856d3d1b038998b8ad90db4ec02
cited per function below.  The model's forward, autograd and the optimizer (optim2x's 2.x foreach
step, over the sharded parameters) are real torch, measured as measure.py measures one process.
The collectives are not run: NCCL's all_gather_into_tensor and reduce_scatter_tensor write into the
tensors FSDP2 gives them and allocate nothing through PyTorch's allocator, so each is replaced by an
in-place copy of this rank's part.  Ops 2.x has and 1.13 lacks (_foreach_copy_, _chunk_cat,
split_with_sizes_copy with out=) are done by in-place copies into the same destinations.  Rank 0
holds chunks[0] of every parameter, the largest shard, so it stands for the busiest rank.

Wrap, as vramcalc's fsdp rows wrap (and as torchtitan does): fully_shard on every copy of a repeated
top-level entry (vctorch's module.body.items[i].copies; the decoder layers of an HF model), or,
without one, on every top-level entry with parameters; then fully_shard(model), whose group holds the
rest.  Defaults: reshard_after_forward=True (the root's is turned off by F2S _lazy_init), implicit
prefetching, no offload; MixedPrecisionPolicy(param_dtype, reduce_dtype) when given, with its
cast_forward_inputs=True.  --reshard-after-forward true|false|N gives every call that value (the root's
too: post_world); --replicate R an HSDP mesh (R, world / R): shards over world / R ranks, the
reduce-scatter output all-reduced (in place) and held in the group's _all_reduce_state.
CPUOffloadPolicy is not replicated: on a CPU-only build host and device memory are one.
"""

import gc
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
import tracking  # noqa: E402  the counter's phases, the training steps, the command line's pieces
from tracking import ACC, HERE, ROOT  # noqa: E402
tracking.add_paths()
OUT = os.path.join(HERE, "fsdp2_replica.json")

from fsdp_replica import MLP, GPTSTACK  # noqa: E402  the FSDP1 replica's model files
LLAMA = "tests/data/hf/llama-small-measured.json"  # a 2-layer Llama config (the llm suite's)
CASES = [
    # model, short, batch (or batch x seq for a config.json), optim, world, param_dtype, reduce_dtype, held_out
    (MLP, "mlp", 64, "adam", 2, None, None, False),
    (MLP, "mlp", 64, "adam", 4, None, None, False),
    (MLP, "mlp", 64, "adam", 1, None, None, False),   # world size 1: no all-gather, still a copy
    (MLP, "mlp", 64, "adam", 2, "bf16", "fp32", False),
    (MLP, "mlp", 64, "sgd", 4, "bf16", "fp32", True),
    (GPTSTACK, "gptstack", 4, "adam", 2, None, None, False),
    (GPTSTACK, "gptstack", 4, "adam", 4, None, None, True),
    (GPTSTACK, "gptstack", 4, "adam", 4, "bf16", "fp32", False),
    (LLAMA, "llama", 2, "adamw", 2, None, None, False),
    (LLAMA, "llama", 2, "adamw", 4, None, None, False),
    (LLAMA, "llama", 2, "adamw", 2, "bf16", "fp32", False),
    (LLAMA, "llama", 2, "adamw", 4, "bf16", "fp32", True),
    (LLAMA, "llama", 2, "adamw", 4, "bf16", None, True),   # reduce in bf16: a cast to fp32 after
    # reshard_after_forward given (every call's, the root's too): False, True, an int (a smaller mesh)
    (MLP, "mlp", 64, "adam", 2, None, None, False, False),
    (MLP, "mlp", 64, "adam", 4, None, None, False, 2),
    (GPTSTACK, "gptstack", 4, "adam", 4, None, None, False, False),
    (GPTSTACK, "gptstack", 4, "adam", 4, None, None, False, True),
    (GPTSTACK, "gptstack", 4, "adam", 4, None, None, True, 2),
    (GPTSTACK, "gptstack", 4, "adam", 4, "bf16", "fp32", True, 2),
    (LLAMA, "llama", 2, "adamw", 4, None, None, False, 2),
    # HSDP: world = replicas x shards, (replicas, shards) mesh; the last element the replicas
    (GPTSTACK, "gptstack", 4, "adam", 4, None, None, False, None, 2),
    (GPTSTACK, "gptstack", 4, "adam", 4, "bf16", "fp32", False, None, 2),
    (MLP, "mlp", 64, "adam", 4, "bf16", None, True, None, 2),
    (LLAMA, "llama", 2, "adamw", 4, "bf16", "fp32", True, None, 2),
    # LoRA (the last element its rank, on q_proj and v_proj; reference.py apply_lora, fp32 adapters in the
    # fp32 model): each layer's group holds its frozen weights and adapters, only the adapters get .grad
    (LLAMA, "llama", 2, "adamw", 2, None, None, False, None, None, 8),
    (LLAMA, "llama", 2, "adamw", 4, None, None, False, None, None, 8),
    (LLAMA, "llama", 2, "adamw", 4, None, None, True, None, None, 64),
]
SEQ = 64  # tokens per sample for a config.json (the llm suite's default)
DT = {None: None, "fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def case_id(short, batch, optim, world, pdt, rdt, raf=None, rep=None, lora=None):
    mp = "" if not pdt and not rdt else "-mp%s%s" % (pdt or "", "-r" + rdt if rdt else "")
    raf = "" if raf is None else "-raf%s" % str(raf).lower()
    rep = "" if not rep or rep == 1 else "-hsdp%d" % rep
    lora = "-lora%d" % lora if lora else ""
    return "%s-b%d-%s-fsdp2-w%d%s%s%s%s" % (short, batch, optim, world, mp, raf, rep, lora)


def post_world(raf, world, root):
    """A group's post_forward_mesh_info as a world size (None: no reshard after forward).
    _fully_shard.py fully_shard @0257dd1c405a7e3a8779e6c88eef5c8c9cea1620: reshard_after_forward None
    (auto) is True for every group, then F2S FSDPState._lazy_init sets the root's groups'
    post_forward_mesh_info = None when auto; a value given holds for the root too.
    _fsdp_init.py _get_post_forward_mesh_info @0140b62d8bab203e4699faeba802b5204fa51d26: True -> the
    mesh, False -> None, an int must divide the shard mesh size (ValueError), 1 -> False, the size ->
    True, else a (world / N, N) HSDPMeshInfo."""
    if raf is None:
        return None if root else world
    if raf is True:
        return world
    if raf is False:
        return None
    if raf < 1 or raf > world or world % raf:
        raise ValueError("reshard_after_forward %d is not a factor of %d" % (raf, world))
    return None if raf == 1 else raf


class Param:
    """FSDPParam (F2P) on rank 0, Shard(0), no extensions, no offload."""

    def __init__(self, torch, module, name, param, world, pdt, rdt):
        self.torch, self.module, self.name, self.world = torch, module, name, world
        self.orig_size, self.orig_dtype = param.size(), param.dtype
        self.requires_grad = param.requires_grad
        # _init_sharded_param: chunks = _chunk_with_empty(param, world, dim=0); padded_sharded_size =
        # chunks[0].size(); padded_sharded_param = param.new_zeros(padded size), this rank's chunk copied
        # in; sharded_param = nn.Parameter(padded.narrow(0, 0, rank's rows)); the original is freed when
        # fully_shard returns
        with torch.no_grad():
            chunk = torch.chunk(param.detach(), world, dim=0)[0]
            padded = param.new_zeros(chunk.size())
            padded.copy_(chunk)
            del chunk
        self.sharded_param_data = padded.view(-1)
        self.sharded_param = torch.nn.Parameter(padded, requires_grad=param.requires_grad)
        # init_dtype_attrs: reduce_dtype equal to param_dtype is None; param_dtype equal to orig is None
        self.param_dtype = pdt if pdt is not None and pdt != self.orig_dtype else None
        self.reduce_dtype = rdt if rdt is not None and rdt != pdt else None
        self.all_gather_outputs = []
        self.unsharded_param = None
        self.post_forward_data = None  # _sharded_post_forward_param_data
        self.set(self.sharded_param)

    def set(self, p):
        """_setattr_on_modules (unsafe_setattr_param)."""
        self.module._parameters[self.name] = p

    @property
    def shard_numel(self):
        return self.sharded_param_data.numel()

    def init_all_gather_outputs(self, numel, dtype):
        """init_all_gather_outputs: torch.empty(numel x world) the first time; alloc_all_gather_outputs
        (alloc_storage) after a free."""
        torch = self.torch
        if not self.all_gather_outputs:
            self.all_gather_outputs = [torch.empty(numel * self.world, dtype=dtype)]
        t = self.all_gather_outputs[0]
        if t.storage().size() == 0:
            t.storage().resize_(numel * self.world)
        return t

    def init_unsharded_param(self):
        """init_unsharded_param: nn.Parameter(as_strided(all_gather_outputs[0], orig size)), made once."""
        if self.unsharded_param is None:
            t = self.all_gather_outputs[0]
            stride = [1] * len(self.orig_size)
            for i in range(len(self.orig_size) - 2, -1, -1):
                stride[i] = stride[i + 1] * self.orig_size[i + 1]
            self.unsharded_param = self.torch.nn.Parameter(
                self.torch.as_strided(t, self.orig_size, stride, 0), requires_grad=self.requires_grad)

    def to_unsharded(self):
        """to_unsharded: from SHARDED_POST_FORWARD, _sharded_post_forward_param_data = None (freed)."""
        self.set(self.unsharded_param)
        self.post_forward_data = None

    def to_sharded_post_forward(self, post):
        """to_sharded_post_forward (F2P): this rank's (rank 0's) 1/post of all_gather_outputs[0],
        .clone()d so that the output can be freed; set on the module as a view; free_unsharded_param."""
        out = self.all_gather_outputs[0]
        k = out.numel() // post
        self.post_forward_data = out.narrow(0, 0, k).clone()
        self.module._parameters[self.name] = self.torch.nn.Parameter(
            self.post_forward_data.view(-1), requires_grad=self.requires_grad)
        for t in self.all_gather_outputs:
            t.storage().resize_(0)

    def to_sharded(self):
        """to_sharded: the sharded parameter back on the module, free_unsharded_param (free_storage)."""
        self.set(self.sharded_param)
        for t in self.all_gather_outputs:
            t.storage().resize_(0)


class Comm:
    """FSDPCommContext (F2G): state shared by every group."""

    def __init__(self):
        self.all_gather_state = None   # the kept all-gather output (implicit forward prefetch)
        self.reduce_scatter_states = []
        self.post_forward_order = []


class Group:
    """FSDPParamGroup (F2G) with its runtime."""

    def __init__(self, torch, name, params, world, comm, root, pdt, rdt, post, rep=1):
        self.torch, self.name, self.params, self.world, self.comm = torch, name, params, world, comm
        self.root, self.pdt, self.rdt, self.post, self.rep = root, pdt, rdt, post, rep
        self.all_reduce_state = None  # HSDP: _all_reduce_state's all_reduce_input
        self.state = "IDLE"
        self.unsharded = False
        self.all_gather_result = None  # (output or None,)
        self.post_forward_indices = []
        orig = {p.orig_dtype for p in params if p.requires_grad}
        self.orig_dtype = next(iter(orig)) if orig else None
        red = {p.reduce_dtype for p in params if p.requires_grad}
        self.reduce_dtype = next(iter(red)) if red else None

    def unshard(self):
        """unshard: at world size 1 no all-gather; else foreach_all_gather (F2C)."""
        torch = self.torch
        if self.all_gather_result is not None or self.unsharded:
            return
        if self.world == 1:
            self.all_gather_result = (None, 1)
            return
        with torch.no_grad():
            # _get_param_all_gather_inputs: with param_dtype, the foreach-copy path casts every shard into
            # one flat torch.empty(sum, param_dtype); otherwise the inputs are the shards themselves. From
            # SHARDED_POST_FORWARD the inputs are the _sharded_post_forward_param_data and the group is the
            # post-forward mesh's (_all_gather_process_group)
            pf = self.params[0].post_forward_data is not None
            ranks = self.post if pf else self.world
            src = [p.post_forward_data if pf else p.sharded_param_data for p in self.params]
            numels = [t.numel() for t in src]
            if self.params[0].param_dtype is not None:
                flat = torch.empty(sum(numels), dtype=self.params[0].param_dtype)
                inputs = list(torch.split(flat, numels))
                for d, t in zip(inputs, src):
                    d.copy_(t)  # torch._foreach_copy_(splits, inputs)
                dtype = flat.dtype
            else:
                inputs = src
                dtype = inputs[0].dtype
            del src
            n = sum(numels)
            # all_gather_output = torch.empty(n x world); all_gather_copy_in: the input is its rank slice
            out = torch.empty(n * ranks, dtype=dtype)
            off = 0
            for d, k in zip(inputs, numels):
                out.narrow(0, off, k).copy_(d)
                off += k
            # dist.all_gather_into_tensor(out, out.narrow(...)): fills the other ranks' slices in place
            del inputs
            flat = None
        self.all_gather_result = (out, ranks)

    def wait_for_unshard(self):
        """wait_for_unshard: frees the kept result in forward, copies out, keeps this one in forward."""
        torch = self.torch
        if self.all_gather_result is None:
            return
        if self.state == "FORWARD" and self.comm.all_gather_state is not None:
            self.comm.all_gather_state = None
        with torch.no_grad():
            if self.world == 1:
                for p in self.params:
                    all_gather_input = (p.sharded_param_data.to(p.param_dtype) if p.param_dtype is not None
                                        else p.sharded_param_data)  # all_gather_inputs[0]
                    t = p.init_all_gather_outputs(all_gather_input.numel(), all_gather_input.dtype)
                    t.data.copy_(all_gather_input)  # _unsafe_preserve_version_counter: .data here
            else:
                # foreach_all_gather_copy_out: each parameter's output made, then split_with_sizes_copy
                out, ranks = self.all_gather_result
                outs = [p.init_all_gather_outputs(p.shard_numel, out.dtype) for p in self.params]
                view = out.view(ranks, -1)
                off = 0
                for p, t in zip(self.params, outs):
                    k = t.numel() // ranks
                    t.data.view(ranks, -1).copy_(view[:, off:off + k])  # version counter kept
                    off += k
                del view, outs, out
        for p in self.params:
            p.init_unsharded_param()
            p.to_unsharded()
        self.unsharded = True
        if self.state == "FORWARD" and self.world > 1:
            self.comm.all_gather_state = self.all_gather_result
        self.all_gather_result = None

    def reshard(self):
        """reshard (F2G): in FORWARD nothing without a post_forward_mesh_info, _to_sharded_post_forward
        for a smaller mesh (_use_post_forward_mesh), else _to_sharded."""
        if self.state == "FORWARD" and self.post is None:
            return
        if self.state == "FORWARD" and self.post != self.world:
            for p in self.params:
                p.to_sharded_post_forward(self.post)
            self.unsharded = False
            return
        for p in self.params:
            p.to_sharded()
        self.unsharded = False

    def pre_forward(self):
        self.state = "FORWARD"
        self.unshard()
        self.wait_for_unshard()

    def post_forward(self):
        self.reshard()
        self.post_forward_indices.append(len(self.comm.post_forward_order))
        self.comm.post_forward_order.append(self)
        self.state = "IDLE"

    def pre_backward(self):
        """pre_backward (default_prefetch): unshard, wait, _backward_prefetch (_prefetch_unshard)."""
        if self.state == "PRE_BACKWARD":
            return
        self.state = "PRE_BACKWARD"
        self.unshard()
        self.wait_for_unshard()
        if self.post_forward_indices:
            i = self.post_forward_indices.pop()
            if i > 0:
                target = self.comm.post_forward_order[i - 1]
                old, target.state = target.state, "PRE_BACKWARD"
                target.unshard()
                target.state = old

    def post_backward(self):
        """post_backward: the gradients taken, reshard, the earlier reduce-scatter inputs dropped,
        foreach_reduce."""
        self.state = "POST_BACKWARD"
        with_grad, grads = [], []
        for p in self.params:
            if p.unsharded_param is not None and p.unsharded_param.grad is not None:
                with_grad.append(p)
                grads.append(p.unsharded_param.grad)
                p.unsharded_param.grad = None
        self.unsharded = True
        for p in self.params:
            p.to_sharded()
        self.unsharded = False
        self.comm.reduce_scatter_states.clear()
        if not with_grad:
            return
        rs_input = self.foreach_reduce(with_grad, grads)
        self.comm.reduce_scatter_states.append(rs_input)

    def foreach_reduce(self, params, grads):
        """foreach_reduce (F2C), Shard(0); HSDP (rep > 1): the all-reduce over the replicas."""
        torch, W = self.torch, self.world
        self.all_reduce_state = None  # post_backward: _wait_for_post_backward before foreach_reduce
        with torch.no_grad():
            grad_dtype = grads[0].dtype
            reduce_dtype = self.reduce_dtype or grad_dtype
            padded = [(-(-g.size(0) // W) * W) * (g.numel() // g.size(0) if g.size(0) else 0) for g in grads]
            rs_input = torch.empty(sum(padded), dtype=reduce_dtype)
            narrowing = grad_dtype != reduce_dtype and torch.promote_types(grad_dtype, reduce_dtype) != reduce_dtype
            buf = torch.empty_like(rs_input, dtype=grad_dtype) if narrowing else rs_input
            # foreach_reduce_scatter_copy_in: _chunk_cat(grads, dim 0, world chunks, out=buf.view(W, -1))
            view = buf.view(W, -1)
            off = 0
            for g, n in zip(grads, padded):
                rows = -(-g.size(0) // W)
                rest = g.numel() // g.size(0) if g.size(0) else 0
                flat = g.view(g.size(0), -1)
                for r in range(W):
                    dst = view[r, off:off + rows * rest]
                    lo, hi = min(r * rows, g.size(0)), min((r + 1) * rows, g.size(0))
                    dst[:(hi - lo) * rest].copy_(flat[lo:hi].reshape(-1))
                    dst[(hi - lo) * rest:].zero_()
                off += rows * rest
            del view, flat, g
            if narrowing:
                rs_input.copy_(buf)
            del buf
            grads.clear()  # unsharded_grads.clear(): the gradients go
            reduce_output = torch.empty(sum(padded) // W, dtype=reduce_dtype)
            reduce_output.copy_(rs_input.view(W, -1)[0])  # reduce_scatter_tensor / the world-1 copy
            if self.rep > 1:
                # dist.all_reduce(reduce_output, group=all_reduce_group) in place; all_reduce_input =
                # reduce_output, held by FSDPParamGroup._all_reduce_state (F2G post_backward)
                self.all_reduce_state = reduce_output
            target = self.orig_dtype
            grad_output = reduce_output.to(target) if reduce_output.dtype != target else reduce_output
            del reduce_output
            off = 0
            for p, n in zip(params, padded):
                k = n // W
                sp = p.sharded_param
                stride = [1] * sp.dim()
                for i in range(sp.dim() - 2, -1, -1):
                    stride[i] = stride[i + 1] * sp.size(i + 1)
                new = torch.as_strided(grad_output, sp.size(), stride, off)
                if sp.grad is not None:
                    sp.grad += new
                else:
                    sp.grad = new
                off += k
            del new, grad_output
        return rs_input


class PostBackward:
    """RegisterPostBackwardFunction (F2G): identity in forward; the group's post_backward in backward."""

    @staticmethod
    def make(torch):
        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, group, *inputs):
                ctx.group = group
                return tuple(x.view_as(x) for x in inputs)

            @staticmethod
            def backward(ctx, *grads):
                ctx.group.post_backward()
                return (None,) + grads
        return F


class State:
    """FSDPState (F2S): the module hooks of one fully_shard call."""

    def __init__(self, torch, module, group, ctx, root, pdt):
        self.torch, self.module, self.group, self.ctx, self.root, self.pdt = torch, module, group, ctx, root, pdt
        self.training_state = "IDLE"
        self.PB = PostBackward.make(torch)
        module.register_forward_pre_hook(self._pre_forward)
        module.register_forward_hook(self._post_forward)

    def _pre_forward(self, module, args):
        torch = self.torch
        if self.training_state == "PRE_BACKWARD":
            return None
        self.training_state = "FORWARD"
        if self.root and self.ctx["iter_forward_root"] is None:
            self.ctx["iter_forward_root"] = self
        if self.pdt is not None:
            # cast_forward_inputs (MixedPrecisionPolicy default True): _cast_fp_tensor on float inputs
            args = tuple(a.to(self.pdt) if torch.is_tensor(a) and a.is_floating_point() and a.dtype != self.pdt
                         else a for a in args)
        if self.group is not None:
            self.group.pre_forward()
            # _register_post_backward_hook: RegisterPostBackwardFunction over the inputs needing grad
            if torch.is_grad_enabled():
                idx = [i for i, a in enumerate(args) if torch.is_tensor(a) and a.requires_grad]
                if idx:
                    outs = self.PB.apply(self.group, *[args[i] for i in idx])
                    args = list(args)
                    for i, o in zip(idx, outs):
                        args[i] = o
                    args = tuple(args)
        return args

    def _post_forward(self, module, inp, output):
        torch = self.torch
        if self.training_state == "PRE_BACKWARD":
            return output
        if self.group is not None:
            self.group.post_forward()
        # _register_pre_backward_hook on the output tensors needing grad
        outs = output if isinstance(output, (tuple, list)) else (output,)
        for t in outs:
            if torch.is_tensor(t) and t.requires_grad:
                t.register_hook(self._pre_backward)
        self.training_state = "IDLE"
        if self.ctx["iter_forward_root"] is self:
            self.ctx["comm"].all_gather_state = None  # free the last all-gather result
            self.ctx["iter_forward_root"] = None
        return output

    def _pre_backward(self, grad):
        self.training_state = "PRE_BACKWARD"
        if not self.ctx["queued"]:
            self.ctx["queued"] = True
            self.torch.autograd.Variable._execution_engine.queue_callback(self.ctx["final"])
        if self.group is not None:
            self.group.pre_backward()
        return grad


def final_callback(states, comm, ctx):
    """_root_post_backward_final_callback (F2S): post_backward for the groups that did not run it (the
    root first, module order), finalize_backward, post_forward_order and the reduce-scatter states cleared."""
    for s in states:
        g = s.group
        if g is not None:
            if g.state != "POST_BACKWARD":
                g.post_backward()
            g.state = "IDLE"
            g.all_gather_result = None  # finalize_backward
            g.all_reduce_state = None   # finalize_backward: _wait_for_post_backward
            g.post_forward_indices.clear()
        s.training_state = "IDLE"
    comm.post_forward_order.clear()
    comm.reduce_scatter_states.clear()
    ctx["queued"] = False


def unit_modules(model):
    """The modules fully_shard wraps besides the root (the module docstring)."""
    if hasattr(model, "layers") and not hasattr(model, "body"):
        return list(model.layers)  # reference.CausalLM: the decoder layers
    items = list(model.body.items)
    repeated = any(len(b.copies) > 1 for b in items)
    return [m for b in items for m in b.copies
            if (len(b.copies) > 1 or not repeated) and any(True for _ in m.parameters())]


def fully_shard(torch, model, world, pdt, rdt, raf=None, rep=1):
    """fully_shard on each unit, then on the root (_fully_shard.py: the root's group is the parameters
    no earlier call took). Returns the states, root first (named_modules order), and the sharded params."""
    comm = Comm()
    ctx = {"iter_forward_root": None, "queued": False, "comm": comm}
    taken, states, sharded = set(), [], []

    def group_of(module, name, root):
        params = []
        for mod in module.modules():
            for pn, p in list(mod._parameters.items()):
                if p is None or id(p) in taken:
                    continue
                taken.add(id(p))
                params.append(Param(torch, mod, pn, p, world, pdt, rdt))
                taken.add(id(params[-1].sharded_param))
        sharded.extend(x.sharded_param for x in params)
        return Group(torch, name, params, world, comm, root, pdt, rdt, post_world(raf, world, root), rep) if params else None

    for i, m in enumerate(unit_modules(model)):
        states.append(State(torch, m, group_of(m, "unit%d" % i, False), ctx, False, pdt))
    root = State(torch, model, group_of(model, "root", True), ctx, True, pdt)
    states.insert(0, root)
    ctx["final"] = lambda: final_callback(states, comm, ctx)
    gc.collect()
    return states, sharded


def run_case(model, batch, optim, world, pdt, rdt, raf=None, rep=1, lora=0):
    import torch
    import optim2x
    import vctorch

    torch.set_num_threads(1)
    ph = tracking.Phases(model)  # for a config.json, ph.spec is that (unused: the model is built below)
    phase_begin, phase_end = ph.begin, ph.end

    p = phase_begin("build")
    hf = model.startswith("tests/data/hf/")
    if hf:
        import importlib.util  # bench/accuracy/llm/reference.py (dist/ has a reference.py of its own)
        spec_ = importlib.util.spec_from_file_location("llm_reference", os.path.join(ACC, "llm", "reference.py"))
        R = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(R)
        module = R.CausalLM(R.Config.load(os.path.join(ROOT, model)))
        if lora:  # get_peft_model(LoraConfig(r, target_modules q_proj, v_proj)): the base frozen, fp32 adapters
            R.apply_lora(module, r=lora, lora_alpha=2 * lora, targets=("q_proj", "v_proj"))
        ids = torch.randint(0, module.cfg.vocab_size, (batch, SEQ), dtype=torch.int64)
        labels = ids.clone()
    else:
        module, make_inputs = vctorch.build(ph.spec, compat="2x")
        inputs = make_inputs(batch, dtype=torch.float32)
    phase_end(p)
    p = phase_begin("wrap")
    dt = {k: getattr(torch, v) for k, v in DT.items() if v}
    # HSDP: each parameter sharded over the mesh's shard dimension, world / replicas ranks
    states, sharded = fully_shard(torch, module, world // rep, dt.get(pdt), dt.get(rdt), raf, rep)
    phase_end(p)
    opt = optim2x.make([q for q in sharded if q.requires_grad], optim)

    def hf_loss_step():  # Trainer.compute_loss: the loss from the model's forward (labels), the logits dropped
        loss, logits = module(ids, labels=labels)
        del logits
        return loss

    module.train()
    tracking.train(ph, hf_loss_step if hf else tracking.loss_step(torch, module, inputs),
                   opt.step, lambda: opt.zero_grad(set_to_none=True))
    groups = [s.group for s in states if s.group is not None]
    return ph.result(torch, groups=[{"name": g.name, "params": len(g.params),
                                     "shard": sum(q.shard_numel for q in g.params)} for g in groups])


def cli_args(c):
    """vramcalc's options for a case (the accuracy suite's: --workspace 0, --attention math)."""
    a = [os.path.join(ROOT, c["model"]), "--optim", c["optim"], "--workspace", "0", "--attention", "math",
         "--gpus", str(c["world_size"]), "--parallel", "fsdp2", "-f", "json"]
    a += ["--seq", str(SEQ), "--batch", str(c["batch"])] if c["model"].startswith("tests/data/hf/") else \
        ["--batch", str(c["batch"])]
    if c.get("param_dtype"):
        a += ["--fsdp-param-dtype", c["param_dtype"]]
    if c.get("reduce_dtype"):
        a += ["--fsdp-reduce-dtype", c["reduce_dtype"]]
    if c.get("replicate"):
        a += ["--fsdp-replicate", str(c["replicate"])]
    if c.get("reshard_after_forward") is not None:
        a += ["--fsdp-reshard-after-forward", str(c["reshard_after_forward"]).lower()]
    if c.get("lora"):
        a += ["--lora", str(c["lora"]), "--lora-alpha", str(2 * c["lora"]), "--lora-targets", "q_proj,v_proj"]
    return a


def compare(cli, bound):
    with open(OUT) as f:
        recs = json.load(f)["records"]
    bad = 0
    tracking.table_head(["case", "held out", "replica (B)", "vramcalc (B)", "error"])
    for r in recs:
        p = subprocess.run([cli] + cli_args(r["config"]), capture_output=True, text=True)
        if p.returncode != 0:
            print("| %s | | %s | exit %d: %s | |" % (r["case"], "{:,}".format(r["peak_allocated"]), p.returncode,
                                                   p.stderr.strip()[:100]))
            bad += 1
            continue
        est = json.loads(p.stdout)["memory"]["peak_allocated"]
        e = 100.0 * (est - r["peak_allocated"]) / r["peak_allocated"]
        err = "%+.2f%%" % e
        if abs(e) > bound:
            bad += 1
            err += " (out of bound)"
        print("| %s | %s | %s | %s | %s |" % (r["case"], "yes" if r["held_out"] else "",
                                          "{:,}".format(r["peak_allocated"]), "{:,}".format(est), err))
    print("%d of %d cases within %.1f%%" % (len(recs) - bad, len(recs), bound))
    return 1 if bad else 0


def main(argv):
    ap = tracking.arg_parser(__doc__)
    ap.add_argument("--param-dtype", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--reduce-dtype", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--reshard-after-forward", type=lambda v: {"true": True, "false": False}.get(v) if v in
                    ("true", "false") else int(v), default=None, help="true, false or N (default: None, auto)")
    ap.add_argument("--replicate", type=int, default=1, help="HSDP's replicas (default 1: none)")
    ap.add_argument("--lora", type=int, default=0, help="LoRA rank on q_proj, v_proj (a config.json model; default 0: none)")
    a = ap.parse_args(argv)
    rc = tracking.compare_or_one(a, compare, lambda: run_case(a.model, a.batch, a.optim, a.world, a.param_dtype,
                                                              a.reduce_dtype, a.reshard_after_forward, a.replicate,
                                                              a.lora))
    if rc is not None:
        return rc
    recs = tracking.load_records(OUT, a.redo)
    have = {r["case"] for r in recs}
    for model, short, batch, optim, world, pdt, rdt, held, *rest in CASES:
        raf = rest[0] if rest else None
        rep = rest[1] if len(rest) > 1 else None
        lora = rest[2] if len(rest) > 2 else None
        cid = case_id(short, batch, optim, world, pdt, rdt, raf, rep, lora)
        if cid in have:
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--model", model, "--batch", str(batch), "--optim", optim,
               "--world", str(world)]
        cmd += ["--param-dtype", pdt] if pdt else []
        cmd += ["--reduce-dtype", rdt] if rdt else []
        cmd += ["--reshard-after-forward", str(raf).lower()] if raf is not None else []
        cmd += ["--replicate", str(rep)] if rep else []
        cmd += ["--lora", str(lora)] if lora else []
        r = tracking.run_preloaded(cmd)
        cfg = {"model": model, "batch": batch, "optim": optim, "world_size": world, "param_dtype": pdt,
               "reduce_dtype": rdt}
        if raf is not None:
            cfg["reshard_after_forward"] = raf
        if rep:
            cfg["replicate"] = rep
        if lora:
            cfg["lora"] = lora
        r.update({"case": cid, "held_out": held, "config": cfg})
        recs.append(r)
        print("%s %s %d" % (cid, r["peak_phase"], r["peak_allocated"]), file=sys.stderr)
    with open(OUT, "w") as f:
        json.dump({"records": recs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
