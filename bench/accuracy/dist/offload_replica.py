#!/usr/bin/python3
"""offload_replica.py -- one rank of DeepSpeed ZeRO-2 with offload_optimizer (device cpu), replicated
in torch 1.13 CPU and measured with the accuracy harness's counter; and the offload cases of both
replicas (this one and fsdp_replica.py --offload) against vramcalc's --offload.

    LD_PRELOAD=bench/accuracy/libmemtrack.so /usr/bin/python3 bench/accuracy/dist/offload_replica.py \
        --model M --batch B --optim adam --world N --rank R
    /usr/bin/python3 bench/accuracy/dist/offload_replica.py --all [--redo]   # every case -> offload_replica.json
    /usr/bin/python3 bench/accuracy/dist/offload_replica.py --compare --cli build/vramcalc

DeepSpeed cannot run here (no GPU, not installable), so this script re-implements what
DeepSpeedZeroOptimizer (deepspeed/runtime/zero/stage_1_and_2.py at deepspeedai/DeepSpeed@
edaa7221267243c7be7fb49c5d5f5c4fb97b4641) allocates on one rank's GPU with cpu_offload, from that
source (functions named below), not from vramcalc. GPU tensors are c10 tensors (counted); the CPU
side (the fp32 partition, its gradient, the bit16 staging buffer, the optimizer's state and step)
is host memory (host.py, not counted). The collectives are not run: with reduce_scatter and
use_multi_rank_bucket_allreduce (the defaults) the reduction goes through allreduce_bucket's
flatten (a copy) and copies back into the bucket in place; NCCL allocates nothing through PyTorch.

Replicated (ZeRO stage 2 defaults: contiguous_gradients, overlap_comm off, reduce_bucket_size 5e8,
one parameter group; fp32 model, so no check_grad_overflow and no loss scaling):
- __init__: the trainable parameters flattened, padded to 2 x world (flatten_dense_tensors_aligned),
  the parameters made views of it (_update_model_bit16_weights); this rank's partition and the
  parameters touching it with their offsets (get_partition_info, get_grad_position);
  temp_grad_buffer_for_gpu_offload = zeros(largest parameter) on the GPU.
- the gradient hook (reduce_independent_p_g_buckets_and_remove_grads): at the first, setup_buckets
  (the IPG buffer, empty(reduce_bucket_size)); each gradient copied into the bucket and .grad
  re-pointed at the copy; the epilogue queued to the end of backward
  (queue_post_backward_callback).
- independent_gradient_partition_epilogue -> reduce_ipg_grads: average_tensor (div_, then
  allreduce_and_scatter -> allreduce_bucket: tensor = flatten(slices), the copies back), then per
  bucket parameter: of this partition, copy_grads_in_partition's cpu_offload branch
  (set_norm_for_param_grad_in_gpu: .double().norm(2) of this rank's part, the norm kept;
  update_offload_overflow_tracker -> _has_inf_or_nan on the whole gradient; async_inplace_copy_
  grad_to_fp32_buffer_from_gpu: the part copied into the CPU fp32 gradient; clear_grad_attribute);
  of others, clear_grad_attribute; then _release_ipg_buffers.
- step (cpu_offload): complete_grad_norm_calculation_for_cpu_offload (total_dev_norm, a 1-element
  GPU tensor), the optimizer on the CPU partition, the bit16 buffer and its copy into this rank's
  part of the flat buffer (in place); reset_cpu_buffers (the norms go).
Every rank is measured (ranks differ by the parameters touching their partition); vramcalc is
compared with the largest. Peak = the highest between-op reading in steps 2-3.
"""

import functools
import gc
import os
import sys

sys.dont_write_bytecode = True
import tracking  # noqa: E402  the counter's phases, the training steps, the command line's pieces
from tracking import HERE  # noqa: E402
tracking.add_paths()
OUT = os.path.join(HERE, "offload_replica.json")

from fsdp_replica import MLP, TSTACK, GPTSTACK  # noqa: E402  the FSDP1 replica's model files
WIDE = "bench/accuracy/dist/models/wide.json"  # one Linear is most of the model: the peak is _has_inf_or_nan's
BUCKET = 500000000  # reduce_bucket_size (config.py DeepSpeedZeroConfig default 5e8)
CASES = [
    # engine, model, short, batch, optim, world, held_out
    ("zero2", MLP, "mlp", 64, "adam", 2, False),
    ("zero2", MLP, "mlp", 64, "sgd", 3, True),
    ("zero2", TSTACK, "tstack", 4, "adam", 2, False),
    ("zero2", GPTSTACK, "gptstack", 4, "momentum", 2, True),
    ("zero2", WIDE, "wide", 16, "adam", 2, False),
    ("fsdp", MLP, "mlp", 64, "adam", 4, False),
    ("fsdp", MLP, "mlp", 64, "adam", 3, False),
    ("fsdp", TSTACK, "tstack", 4, "adam", 4, False),
    ("fsdp", GPTSTACK, "gptstack", 8, "sgd", 2, True),
    ("sgo", TSTACK, "tstack", 4, "momentum", 4, True),
]
STRATEGY = {"fsdp": "full_shard", "sgo": "shard_grad_op"}
LAYOUT = {"zero2": ["--parallel", "zero2", "--offload", "optimizer"],
          "fsdp": ["--parallel", "fsdp", "--offload", "params"],
          "sgo": ["--parallel", "shard-grad-op", "--offload", "params"]}


def case_id(engine, short, batch, optim, world):
    return "%s-b%d-%s-%s-offload-w%d" % (short, batch, optim, engine, world)


class Zero2Offload:
    """DeepSpeedZeroOptimizer (partition_gradients, cpu_offload) on rank `rank` of `world`."""

    def __init__(self, torch, params, world, rank, kind):
        import host
        self.torch = torch
        self.params = [p for p in params if p.requires_grad]
        n = sum(p.numel() for p in self.params)
        align = 2 * world  # nccl_start_alignment_factor x world
        aligned = (n + align - 1) // align * align
        with torch.no_grad():
            # flatten_dense_tensors_aligned: align_dense_tensors appends a zero pad, then flatten (cat)
            pad = [torch.zeros(aligned - n)] if aligned > n else []
            self.flat = torch.cat([p.data.reshape(-1) for p in self.params] + pad)
            del pad
        off = 0
        for p in self.params:  # _update_model_bit16_weights: the parameters become views of the flat buffer
            p.data = self.flat[off:off + p.numel()].view_as(p)
            off += p.numel()
        self.part = aligned // world
        lo, hi = rank * self.part, (rank + 1) * self.part
        self.pos = {}  # get_grad_position: [source_offset, num_elements] of the parameters in this partition
        off = 0
        for p in self.params:
            end = off + p.numel()
            if off < hi and end > lo:
                src = max(lo - off, 0)
                self.pos[id(p)] = (src, min(end, hi) - max(off, lo))
            off = end
        # the CPU side (pinned host memory): the fp32 partition and its gradient, the bit16 buffer
        self.fp32 = torch.nn.Parameter(host.empty(torch, self.part, torch.float32))
        self.fp32.data.copy_(self.flat[lo:hi])
        self.fp32.grad = host.empty(torch, self.part, torch.float32)
        self.bit16_buffer = host.empty(torch, self.part, torch.float32)
        self.lo = lo
        self.opt = host.HostOptimizer([self.fp32], kind)
        # temp_grad_buffer_for_gpu_offload: on the GPU for the whole run
        self.temp_gpu = torch.zeros(max(p.numel() for p in self.params))
        self.norms = {}
        self.bucket = None
        self.elements = 0
        self.bucket_params = []
        self.extra_large = None
        self.world, self.rank = world, rank
        self.offsets = {}
        off = 0
        for p in self.params:
            self.offsets[id(p)] = off
            off += p.numel()
        # create_gradient_handling_hooks: a hook on each parameter's AccumulateGrad, kept alive
        self.accs = []
        for p in self.params:
            acc = p.expand_as(p).grad_fn.next_functions[0][0]
            acc.register_hook(lambda *_, p=p: self.grad_hook(p))
            self.accs.append(acc)

    def grad_hook(self, p):
        """process_gradients -> setup_buckets, reduce_independent_p_g_buckets_and_remove_grads."""
        torch = self.torch
        if self.bucket is None:  # setup_buckets: the IPG buffer, once per backward
            self.bucket = torch.empty(BUCKET)
            self.elements = 0
            # queue_post_backward_callback: the epilogue at the end of backward
            torch.autograd.Variable._execution_engine.queue_callback(self.epilogue)
        with torch.no_grad():
            if self.elements + p.numel() > BUCKET:
                self.reduce_ipg_grads()
            if p.numel() > BUCKET:
                self.extra_large = p
            else:
                new = self.bucket.narrow(0, self.elements, p.numel())
                new.copy_(p.grad.view(-1))
                p.grad.data = new.view_as(p.grad)
            self.elements += p.numel()
            self.bucket_params.append(p)

    def reduce_ipg_grads(self):
        if not self.bucket_params:
            return
        if self.extra_large is not None:
            t = self.extra_large.grad.view(-1)
        else:
            t = self.bucket.narrow(0, 0, self.elements)
        # average_tensor: div_ in place; rank_and_offsets, the bucket cut where the partition
        # changes (consecutive pieces of one partition merged); allreduce_and_scatter ->
        # allreduce_and_copy_with_multiple_ranks -> allreduce_bucket: tensor = self.flatten(slices)
        # (torch._utils._flatten_dense_tensors: a cat, a view when there is one slice), all-reduced,
        # then this rank's slices copied back from the unflattened views
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
        t.div_(1.0)
        ranks, cur = [], 0  # (partition, bucket offset, numel)
        params = [self.extra_large] if self.extra_large is not None else self.bucket_params
        for p in params:
            start, end = self.offsets[id(p)], self.offsets[id(p)] + p.numel()
            while start < end:
                pid = start // self.part
                n = min(end, (pid + 1) * self.part) - start
                if ranks and ranks[-1][0] == pid:
                    ranks[-1] = (pid, ranks[-1][1], ranks[-1][2] + n)
                else:
                    ranks.append((pid, cur, n))
                cur += n
                start += n
        slices = [t.narrow(0, o, n) for _, o, n in ranks]
        allreduced = _flatten_dense_tensors(slices)
        for (pid, _, _), buf, synced in zip(ranks, slices, _unflatten_dense_tensors(allreduced, slices)):
            if pid == self.rank:
                buf.copy_(synced)
        del allreduced, slices, buf, synced, t
        for p in self.bucket_params:
            if id(p) in self.pos:
                self.copy_grads_in_partition(p)
            else:
                p.grad = None  # clear_grad_attribute
        self.bucket_params = []
        self.extra_large = None
        self.elements = 0

    def copy_grads_in_partition(self, p):
        """The cpu_offload branch at the accumulation boundary (one micro-step)."""
        torch = self.torch
        src, num = self.pos[id(p)]
        g = p.grad
        # set_norm_for_param_grad_in_gpu
        self.norms[id(p)] = g.view(-1).narrow(0, src, num).data.double().norm(2)
        # update_offload_overflow_tracker -> _has_inf_or_nan(grad.data)
        float_x = g.data.float()
        nan = float_x.isnan()
        inf = float_x.isinf()
        inf_or_nan = nan.logical_or(inf)
        bad = bool(inf_or_nan.float().max())
        del float_x, nan, inf, inf_or_nan, bad
        # async_inplace_copy_grad_to_fp32_buffer_from_gpu: into the CPU fp32 gradient
        dest_off = self.pos_dest(p)
        s = g.view(-1).narrow(0, src, num)
        if s.dtype != torch.float32:
            s = s.to(torch.float32)
        self.fp32.grad.narrow(0, dest_off, num).copy_(s)
        del s, g
        p.grad = None  # clear_grad_attribute

    def pos_dest(self, p):
        off = 0
        for q in self.params:
            if q is p:
                return max(off - self.lo, 0)
            off += q.numel()
        raise KeyError

    def epilogue(self):
        """independent_gradient_partition_epilogue: reduce_ipg_grads, _release_ipg_buffers,
        _clear_param_grad_only."""
        with self.torch.no_grad():
            self.reduce_ipg_grads()
        self.bucket = None
        for p in self.params:
            p.grad = None

    def step(self):
        torch = self.torch
        # complete_grad_norm_calculation_for_cpu_offload: the kept norms summed on the host, then
        # total_dev_norm = FloatTensor([total]) on the GPU, all-reduced, .item()
        total = sum(float(v) ** 2 for v in self.norms.values())
        total_dev_norm = torch.tensor([total], dtype=torch.float32)
        total = total_dev_norm[0].item() ** 0.5
        del total_dev_norm
        self.opt.step()  # the wrapped optimizer on the CPU partition
        with torch.no_grad():
            self.bit16_buffer.copy_(self.fp32.data)
            self.flat.narrow(0, self.lo, self.part).copy_(self.bit16_buffer)
        self.norms = {}  # reset_cpu_buffers
        # all_gather_dp_groups: in place into the flat buffer (not run: one process)

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def run_case(model, batch, optim, world, rank):
    import torch
    import vctorch

    torch.set_num_threads(1)
    trk = tracking.Phases(model)
    phase_begin, phase_end = trk.begin, trk.end
    p = phase_begin("build")
    module, make_inputs = vctorch.build(trk.spec, compat="2x")
    inputs = make_inputs(batch, dtype=torch.float32)
    phase_end(p)
    p = phase_begin("wrap")
    zo = Zero2Offload(torch, list(module.parameters()), world, rank, optim)
    gc.collect()
    phase_end(p)
    module.train()
    tracking.train(trk, tracking.loss_step(torch, module, inputs), zo.step, zo.zero_grad)
    return trk.result(torch, partition=zo.part, params_in_partition=len(zo.pos))


def measure(engine, model, batch, optim, world):
    """One record per measured rank (zero2: every rank; fsdp: rank 0 of fsdp_replica.py, whose
    ranks hold the same shard sizes)."""
    recs = []
    for rank in range(world if engine == "zero2" else 1):
        if engine == "zero2":
            cmd = [sys.executable, os.path.abspath(__file__), "--model", model, "--batch", str(batch), "--optim",
                   optim, "--world", str(world), "--rank", str(rank)]
        else:
            cmd = [sys.executable, os.path.join(HERE, "fsdp_replica.py"), "--model", model, "--batch", str(batch),
                   "--optim", optim, "--world", str(world), "--strategy", STRATEGY[engine], "--offload"]
        r = tracking.run_preloaded(cmd)
        r["rank"] = rank
        recs.append(r)
    return recs


def compare(cli, bound):
    """vramcalc against the busiest measured rank; 1 when one is off by more than `bound` percent."""
    return tracking.compare_busiest(OUT, [
        (case_id(engine, short, batch, optim, world), held,
         functools.partial(tracking.vramcalc_peak, cli, model, batch, optim, world, LAYOUT[engine]))
        for engine, model, short, batch, optim, world, held in CASES], bound)


def main(argv):
    ap = tracking.arg_parser(__doc__)
    ap.add_argument("--rank", type=int, default=0)
    a = ap.parse_args(argv)
    rc = tracking.compare_or_one(a, compare, lambda: run_case(a.model, a.batch, a.optim, a.world, a.rank))
    if rc is not None:
        return rc
    return tracking.measure_all(OUT, "bench/accuracy/dist/offload_replica.py", a.redo, [
        (case_id(engine, short, batch, optim, world), held,
         {"engine": engine, "model": model, "batch": batch, "optim": optim, "world_size": world},
         functools.partial(measure, engine, model, batch, optim, world))
        for engine, model, short, batch, optim, world, held in CASES])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
