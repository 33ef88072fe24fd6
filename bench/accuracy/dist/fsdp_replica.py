#!/usr/bin/python3
"""fsdp_replica.py -- one rank of FSDP1 (PyTorch 2.x FullyShardedDataParallel), replicated in
torch 1.13 CPU and measured with the accuracy harness's counter.

    LD_PRELOAD=bench/accuracy/libmemtrack.so /usr/bin/python3 bench/accuracy/dist/fsdp_replica.py \
        --model M --batch B --optim adam --world N --strategy full_shard|shard_grad_op|hybrid_shard
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


ENGINE = {"full_shard": "fsdp", "shard_grad_op": "sgo", "hybrid_shard": "hsdp"}


def case_id(short, batch, optim, world, strategy):
    return "%s-b%d-%s-%s-w%d" % (short, batch, optim, ENGINE[strategy], world)


class Unit:
    """One FlatParameter and its handle (flat_param.py FlatParamHandle) on rank 0."""

    def __init__(self, torch, name, module, entries, world, shared=(), offload=False):
        self.torch, self.name, self.module, self.world, self.offload = torch, name, module, world, offload
        self.entries = [(mod, pname, tuple(p.shape), p.numel()) for mod, pname, p in entries]
        # shared (tied) parameters: (module, name, index of the entry it shares), set to the same
        # view (FlatParamHandle._use_unsharded_views, the _shared_param_infos loop)
        self.shared = [(mod, pname, [id(p) for _, _, p in entries].index(id(q))) for mod, pname, q in shared]
        self.numels = [e[3] for e in self.entries]
        self.U = sum(self.numels)
        with torch.no_grad():
            # FlatParamHandle.flatten_tensors (no alignment padding without use_orig_params),
            # then FlatParamHandle.shard: _get_shard(flat, rank, world) = flat.chunk(world)[rank],
            # F.pad'ed to chunks[0].numel(): ceil(U / N) elements; the unsharded flat
            # parameter's storage is freed (flat_param._typed_storage()._resize_(0) in shard()).
            flat = torch.cat([p.detach().reshape(-1) for _, _, p in entries])
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
        # init_flat_param_attributes: _full_param_padded = torch.empty(padded_unsharded_numel),
        # then _free_storage(_full_param_padded): allocated again at each unshard.
        self.padded = torch.empty(world * self.S)
        self.padded.storage().resize_(0)
        for mod, pname, _, _ in self.entries:
            del mod._parameters[pname]
            setattr(mod, pname, None)
        for mod, pname, _ in self.shared:
            del mod._parameters[pname]
            setattr(mod, pname, None)
        self.saved_grad_shard = None
        self.acc = None

    def unsharded(self):
        return self.padded.storage().size() > 0

    def unshard(self):
        """FlatParamHandle.unshard: _alloc_padded_unsharded_flat_param (_alloc_storage to world x
        shard), the all-gather into it (here: this rank's part copied in place), then
        _use_unsharded_flat_param: flat_param.data = padded[:U] and the module's parameters
        set to views of it (_use_unsharded_views: split(numels), view(shape); with grad mode on,
        these are autograd views of flat_param)."""
        torch = self.torch
        if not self.unsharded():
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
        self.flat_param.data = self.padded[:self.U]
        views = [v.view(shape) for (_, _, shape, _), v in zip(self.entries, self.flat_param.split(self.numels))]
        for (mod, pname, _, _), v in zip(self.entries, views):
            setattr(mod, pname, v)
        for mod, pname, i in self.shared:
            setattr(mod, pname, views[i])

    def reshard(self):
        """FlatParamHandle.reshard(free_unsharded_flat_param=True): _use_sharded_flat_param
        (flat_param.data = _local_shard) and _free_unsharded_flat_param (_free_storage)."""
        self.flat_param.data = self.local_shard
        self.padded.storage().resize_(0)


class Replica:
    """FSDP's runtime hooks for a root and its units (_runtime_utils.py)."""

    def __init__(self, torch, model, units, root, reshard_after_forward):
        self.torch, self.model, self.units, self.root = torch, model, units, root
        self.raf = reshard_after_forward
        self.post_forward_order = []
        self.ran_pre_backward = set()
        for u in units:
            u.module.register_forward_pre_hook(self._pre_forward_hook(u))
            u.module.register_forward_hook(self._post_forward_hook(u))
        model.register_forward_pre_hook(self._pre_forward_hook(root))
        model.register_forward_hook(self._post_forward_hook(root))

    def _pre_forward_hook(self, u):
        def hook(_mod, _inp):
            # _root_pre_forward / _pre_forward -> _pre_forward_unshard -> _unshard; then
            # _register_post_backward_hooks: a post hook on the FlatParameter's AccumulateGrad,
            # registered once (flat_param._post_backward_hook_state keeps it)
            if u is None:
                return
            u.unshard()
            if u.acc is None and u.flat_param.requires_grad:
                u.acc = u.flat_param.expand_as(u.flat_param).grad_fn.next_functions[0][0]
                u.acc.register_hook(lambda *_: self._post_backward(u))
        return hook

    def _post_forward_hook(self, u):
        def hook(_mod, _inp, out):
            # _post_forward: record_post_forward, _post_forward_reshard (not the root's; only
            # RESHARD_AFTER_FORWARD strategies), _register_pre_backward_hooks on the outputs
            if u is None:
                return out
            if u not in self.post_forward_order:
                self.post_forward_order.append(u)
            if u is not self.root and self.raf:
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
        with torch.no_grad():
            u.reshard()
            unsharded_grad = u.flat_param.grad.data
            u.flat_param.grad = None
            chunks = list(unsharded_grad.chunk(u.world))
            numel_to_pad = u.world * chunks[0].numel() - unsharded_grad.numel()
            padded_unsharded_grad = F.pad(unsharded_grad, [0, numel_to_pad]) if numel_to_pad > 0 else unsharded_grad
            new_sharded_grad = torch.empty_like(chunks[0])
            new_sharded_grad.copy_(padded_unsharded_grad[:new_sharded_grad.numel()])  # reduce_scatter_tensor
            if u.saved_grad_shard is not None:
                u.saved_grad_shard += new_sharded_grad
            else:
                u.saved_grad_shard = new_sharded_grad
            if u.offload:
                # handle._offload_params: _cpu_grad.copy_(grad_to_offload) (D2H into host memory);
                # _saved_grad_shard stays (_runtime_utils.py@00ae0bc9 _post_backward_hook)
                u.cpu_grad.copy_(u.saved_grad_shard)

    def final_callback(self):
        """_post_backward_final_callback -> _finalize_params -> prepare_gradient_for_optim:
        .grad = _saved_grad_shard, or with CPU offload .grad = _cpu_grad (and _saved_grad_shard
        deleted)."""
        for u in self.units + ([self.root] if self.root else []):
            if u.saved_grad_shard is not None:
                u.flat_param.grad = u.cpu_grad if u.offload else u.saved_grad_shard
                u.saved_grad_shard = None
        self.ran_pre_backward = set()


def wrap(torch, module, world, offload=False):
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
        units.append(Unit(torch, name, m, entries, world, shared, offload))
    rest, shared = split(module)
    root = Unit(torch, "root", module, rest, world, shared, offload) if rest else None
    return units, root


def run_case(model, batch, optim, world, strategy, offload=False):
    import torch
    import optim2x
    import vctorch

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
    units, root = wrap(torch, module, shard_world, offload)
    rep = Replica(torch, module, units, root, strategy != "shard_grad_op")
    gc.collect()
    phase_end(p)
    p = phase_begin("optim")
    flat = [u.flat_param for u in units + ([root] if root else []) if u.flat_param.requires_grad]
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
    a = ap.parse_args(argv)
    if not a.all:
        print(json.dumps(run_case(a.model, a.batch, a.optim, a.world, a.strategy, a.offload)))
        return 0
    recs = tracking.load_records(OUT, a.redo)
    have = {r["case"] for r in recs}
    for model, short, batch, optim, world, strategy, held in CASES:
        if case_id(short, batch, optim, world, strategy) in have:
            continue
        r = tracking.run_preloaded([sys.executable, os.path.abspath(__file__), "--model", model, "--batch", str(batch),
                                    "--optim", optim, "--world", str(world), "--strategy", strategy])
        r.update({"case": case_id(short, batch, optim, world, strategy), "held_out": held,
                  "config": {"model": model, "batch": batch, "optim": optim, "world_size": world,
                             "strategy": strategy}})
        recs.append(r)
        print("%s %s %d" % (r["case"], r["peak_phase"], r["peak_allocated"]), file=sys.stderr)
    with open(OUT, "w") as f:
        json.dump({"records": recs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
