#!/usr/bin/python3
"""zero1_replica.py -- one rank of DeepSpeed ZeRO stage 1 (with and without offload_optimizer),
replicated in torch 1.13 CPU and measured with the accuracy harness's counter; and the cases
against vramcalc's --parallel zero1.

    LD_PRELOAD=bench/accuracy/libmemtrack.so /usr/bin/python3 bench/accuracy/dist/zero1_replica.py \
        --model M --batch B --optim adam --world N --rank R [--offload]
    /usr/bin/python3 bench/accuracy/dist/zero1_replica.py --all [--redo]   # every case -> zero1_replica.json
    /usr/bin/python3 bench/accuracy/dist/zero1_replica.py --compare --cli build/vramcalc

DeepSpeed cannot run here (no GPU, not installable), so this script re-implements what
DeepSpeedZeroOptimizer with partition_grads=False (engine.py _configure_zero_optimizer:
partition_grads=zero_stage == ZeroStageEnum.gradients) allocates on one rank's GPU, from the
source (deepspeed/runtime/zero/stage_1_and_2.py and engine.py at deepspeedai/DeepSpeed@
edaa7221267243c7be7fb49c5d5f5c4fb97b4641; functions named below), not from vramcalc. GPU tensors
are c10 tensors (counted); with --offload the CPU side (the fp32 partition, its gradient, the
bit16 staging buffer, the optimizer) is host memory (host.py, not counted). The collectives are
not run: with reduce_scatter and use_multi_rank_bucket_allreduce (the defaults) the reduction goes
through allreduce_bucket's flatten (a copy) and copies back in place; NCCL allocates nothing
through PyTorch; the all-gather of the step is in place (all_gather_into_tensor_dp_groups).

Replicated (the stage-1 defaults: contiguous_gradients True, overlap_comm False, reduce_scatter,
reduce_bucket_size 5e8, one parameter group, gradient_accumulation_dtype = the model's (fp32),
clip_grad 0, loss scale 1; fp32 model, so check_grad_overflow is off):
- __init__: the trainable parameters flattened, padded to 2 x world (flatten_dense_tensors_aligned),
  the parameters made views of it (_update_model_bit16_weights); this rank's partition and the
  parameters touching it (get_partition_info); the fp32 partition (partition.clone().to(fp32)) on
  the GPU, or on the host with offload (with temp_grad_buffer_for_gpu_offload on the GPU);
  initialize_optimizer_states (the zero gradient, dropped unless offload).
- the gradient hooks (create_gradient_handling_hooks, installed since contiguous_gradients): at the
  first, process_gradients -> setup_buckets makes the IPG buffer (empty(reduce_bucket_size));
  nothing else, since process_gradients reduces only `if partition_gradients or overlap_comm`: the
  gradients stay whole .grad tensors.
- after backward, at the boundary (engine.py _backward_epilogue -> allreduce_gradients ->
  optimizer.reduce_gradients): each parameter with a gradient, in the group's order,
  reduce_independent_p_g_buckets_and_remove_grads (a full bucket reduced first; the gradient copied
  into the bucket and .grad re-pointed at the copy); then overlapping_partition_gradients_reduce_
  epilogue -> independent_gradient_partition_epilogue: reduce_ipg_grads (average_tensor, then the
  stage-1 branch: this partition's parameters to copy_grads_in_partition: grads_in_partition, or
  with offload its cpu_offload branch), the averaged_gradients views (get_flat_partition),
  _release_ipg_buffers, _clear_param_grad_only.
- step: without offload, scaled_global_norm -> get_grad_norm_direct (a float64 copy of each
  gradient slice of the partition, its norm), flatten(averaged_gradients) and .to(fp32), the
  gradients freed, the wrapped optimizer (optim2x, PyTorch 2.x's foreach) on the fp32 partition,
  its copy into the flat buffer in place; with offload, zero2's (offload_replica.py).
Every rank is measured; vramcalc is compared with the largest. Peak = the highest between-op
reading in steps 2-3.
"""

import functools
import gc
import os
import sys

sys.dont_write_bytecode = True
import tracking  # noqa: E402  the counter's phases, the training steps, the command line's pieces
from tracking import HERE  # noqa: E402
tracking.add_paths()
OUT = os.path.join(HERE, "zero1_replica.json")

from fsdp_replica import MLP, TSTACK, GPTSTACK  # noqa: E402  the FSDP1 replica's model files
# the zero2-offload replica: WIDE (its model file), BUCKET (reduce_bucket_size, config.py
# DeepSpeedZeroConfig default 5e8), Zero2Offload (whose cpu_offload gradient copy and step stage 1
# shares: the same stage_1_and_2.py code)
from offload_replica import WIDE, BUCKET, Zero2Offload  # noqa: E402
CASES = [
    # model, short, batch, optim, world, offload, held_out
    (MLP, "mlp", 64, "adam", 2, False, False),
    (MLP, "mlp", 64, "adam", 4, False, False),
    (MLP, "mlp", 64, "sgd", 3, False, True),
    (TSTACK, "tstack", 4, "adam", 2, False, False),
    (TSTACK, "tstack", 4, "adam", 4, False, False),
    (GPTSTACK, "gptstack", 4, "momentum", 2, False, True),
    (WIDE, "wide", 16, "adam", 2, False, False),
    (WIDE, "wide", 16, "adam", 4, False, False),
    (MLP, "mlp", 64, "adam", 2, True, False),
    (TSTACK, "tstack", 4, "adam", 4, True, False),
    (GPTSTACK, "gptstack", 4, "momentum", 2, True, True),
    (WIDE, "wide", 16, "adam", 2, True, False),
    (WIDE, "wide", 16, "adam", 4, True, False),
]


def case_id(short, batch, optim, world, offload):
    return "%s-b%d-%s-zero1%s-w%d" % (short, batch, optim, "-offload" if offload else "", world)


class Zero1:
    """DeepSpeedZeroOptimizer (partition_gradients False; cpu_offload if `offload`) on rank `rank`."""

    def __init__(self, torch, params, world, rank, kind, offload):
        import host
        import optim2x
        self.torch, self.offload = torch, offload
        self.params = [p for p in params if p.requires_grad]
        n = sum(p.numel() for p in self.params)
        align = 2 * world  # nccl_start_alignment_factor x world
        aligned = (n + align - 1) // align * align
        with torch.no_grad():
            pad = [torch.zeros(aligned - n)] if aligned > n else []
            self.flat = torch.cat([p.data.reshape(-1) for p in self.params] + pad)
            del pad
        off = 0
        self.offsets = {}
        for p in self.params:  # _update_model_bit16_weights
            p.data = self.flat[off:off + p.numel()].view_as(p)
            self.offsets[id(p)] = off
            off += p.numel()
        self.part = aligned // world
        self.world, self.rank = world, rank
        self.lo = lo = rank * self.part
        hi = lo + self.part
        # get_partition_info: params_in_partition in order, first_offset; get_grad_position
        self.in_part, self.pos, self.first_offset = [], {}, 0
        for p in self.params:
            s, e = self.offsets[id(p)], self.offsets[id(p)] + p.numel()
            if s < hi and e > lo:
                if not self.in_part and s < lo:
                    self.first_offset = lo - s
                self.in_part.append(p)
                self.pos[id(p)] = (max(lo - s, 0), min(e, hi) - max(s, lo))
        if offload:
            self.fp32 = torch.nn.Parameter(host.empty(torch, self.part, torch.float32))
            self.fp32.data.copy_(self.flat[lo:hi])
            self.fp32.grad = host.empty(torch, self.part, torch.float32)  # initialize_optimizer_states
            self.bit16_buffer = host.empty(torch, self.part, torch.float32)
            self.opt = host.HostOptimizer([self.fp32], kind)
            self.temp_gpu = torch.zeros(max(p.numel() for p in self.params))  # temp_grad_buffer_for_gpu_offload
        else:
            # weights_partition = partition.detach().clone().to(device, fp32)
            self.fp32 = self.flat.narrow(0, lo, self.part).detach().clone().to(dtype=torch.float32)
            self.fp32.requires_grad = True
            self.opt = optim2x.make([self.fp32], kind)
            # initialize_optimizer_states: a zero gradient, then .grad = None without offload
            self.fp32.grad = torch.zeros(self.part)
            self.fp32.grad = None
        self.norms = {}
        self.bucket = None  # the IPG buffer; ready_for_gradients is `bucket is not None`
        self.elements, self.bucket_params, self.extra_large = 0, [], None
        self.gip, self.gip_off = None, 0  # grads_in_partition
        self.averaged = None
        self.accs = []  # create_gradient_handling_hooks
        for p in self.params:
            acc = p.expand_as(p).grad_fn.next_functions[0][0]
            acc.register_hook(lambda *_: self.setup_buckets())
            self.accs.append(acc)

    def setup_buckets(self):
        """process_gradients at stage 1: setup_buckets only."""
        if self.bucket is None:
            self.bucket = self.torch.empty(BUCKET)
            self.elements = 0

    def reduce_gradients(self):
        """engine.allreduce_gradients at the boundary -> optimizer.reduce_gradients."""
        with self.torch.no_grad():
            for p in self.params:
                if p.grad is not None:
                    self.bucket_add(p)
            self.epilogue()

    def bucket_add(self, p):
        """reduce_independent_p_g_buckets_and_remove_grads."""
        if p.numel() == 0:
            return
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
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
        t = self.extra_large.grad.view(-1) if self.extra_large is not None else self.bucket.narrow(0, 0, self.elements)
        t.div_(float(self.world))  # average_tensor: gradient_average
        ranks, cur = [], 0
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
        allreduced = _flatten_dense_tensors(slices)  # allreduce_bucket: tensor = self.flatten(small_bucket)
        for (pid, _, _), buf, synced in zip(ranks, slices, _unflatten_dense_tensors(allreduced, slices)):
            if pid == self.rank:
                buf.copy_(synced)
        del allreduced, slices, buf, synced, t
        for p in self.bucket_params:  # the `else:  # zero stage 1` branch
            if id(p) in self.pos:
                self.copy_grads_in_partition(p)
        self.bucket_params, self.extra_large, self.elements = [], None, 0

    pos_dest = Zero2Offload.pos_dest  # this rank's offset of a parameter's part (for the offload copy)

    def copy_grads_in_partition(self, p):
        torch = self.torch
        if self.offload:  # the cpu_offload branch at the boundary (micro_step_id 0): zero2's
            Zero2Offload.copy_grads_in_partition(self, p)
            return
        if self.gip is None:
            self.gip = torch.empty(sum(q.numel() for q in self.in_part))
            self.gip_off = 0
        new = self.gip.view(-1).narrow(0, self.gip_off, p.numel())
        new.copy_(p.grad.view(-1))
        p.grad.data = new.view_as(p.grad)
        self.gip_off += p.numel()

    def epilogue(self):
        """independent_gradient_partition_epilogue."""
        torch = self.torch
        self.reduce_ipg_grads()
        if not self.offload:
            tensors = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.in_part]
            flat, cur = [], 0  # get_flat_partition(return_tensor_list=True)
            for i, t in enumerate(tensors):
                off = self.first_offset if i == 0 else 0
                num = min(t.numel() - off, self.part - cur)
                flat.append(t.contiguous().view(-1).narrow(0, off, num) if off or num < t.numel() else t)
                cur += num
            if cur < self.part:
                flat.append(torch.zeros(self.part - cur))
            self.averaged = flat
            del tensors
        self.bucket = None  # _release_ipg_buffers
        self.gip = None
        for p in self.params:  # _clear_param_grad_only
            p.grad = None

    def step(self):
        torch = self.torch
        if self.offload:  # as zero2's (offload_replica.py Zero2Offload.step)
            Zero2Offload.step(self)
            return
        with torch.no_grad():
            # scaled_global_norm -> get_grad_norm_direct
            norms = [torch.linalg.vector_norm(g.data.double().detach(), ord=2.0) for g in self.averaged]
            total = torch.stack(norms).square().sum().float()
            del norms
            total = total.pow(1. / 2)
            bad = total.isinf()  # mask_nan_or_inf_with_val_inplace
            nan = total.isnan()
            either = nan.logical_or(bad)
            err = torch.tensor(-1.0, dtype=torch.float)
            total.masked_fill_(either, err)
            del bad, nan, either, err
            gnorm = torch.linalg.vector_norm(torch.stack([total]), ord=2)
            del total, gnorm
            if self.rank == self.world - 1:  # flatten_dense_tensors_aligned(averaged, partition_size)
                flat = torch.cat([t.reshape(-1) for t in self.averaged])
            else:
                flat = torch.cat([t.reshape(-1) for t in self.averaged])
            single = flat.to(torch.float32)
            del flat
            self.fp32.grad = single
            self.averaged = None  # free_grad_in_param_list, averaged_gradients[i] = None
            single.mul_(1.0)  # unscale_and_clip_grads (loss scale 1, no clipping)
            del single
        self.opt.step()
        with torch.no_grad():
            self.fp32.grad = None
            self.flat.narrow(0, self.lo, self.part).copy_(self.fp32.data)

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def run_case(model, batch, optim, world, rank, offload):
    import torch
    import vctorch

    torch.set_num_threads(1)
    trk = tracking.Phases(model)
    p = trk.begin("build")
    module, make_inputs = vctorch.build(trk.spec, compat="2x")
    inputs = make_inputs(batch, dtype=torch.float32)
    trk.end(p)
    p = trk.begin("wrap")
    zo = Zero1(torch, list(module.parameters()), world, rank, optim, offload)
    gc.collect()
    trk.end(p)
    module.train()
    # engine.backward(loss) -> _backward_epilogue -> reduce_gradients, after autograd's backward
    # returned (its root gradient gone) while the caller still holds the loss
    tracking.train(trk, tracking.loss_step(torch, module, inputs), zo.step, zo.zero_grad,
                   after_backward=zo.reduce_gradients)
    return trk.result(torch, partition=zo.part, params_in_partition=len(zo.in_part))


def measure(model, batch, optim, world, offload):
    recs = []
    for rank in range(world):
        cmd = [sys.executable, os.path.abspath(__file__), "--model", model, "--batch", str(batch), "--optim",
               optim, "--world", str(world), "--rank", str(rank)] + (["--offload"] if offload else [])
        r = tracking.run_preloaded(cmd)
        r["rank"] = rank
        recs.append(r)
    return recs


def layout(offload):
    return ["--parallel", "zero1"] + (["--offload", "optimizer"] if offload else [])


def compare(cli, bound):
    """vramcalc against the busiest measured rank; 1 when one is off by more than `bound` percent."""
    return tracking.compare_busiest(OUT, [
        (case_id(short, batch, optim, world, offload), held,
         functools.partial(tracking.vramcalc_peak, cli, model, batch, optim, world, layout(offload)))
        for model, short, batch, optim, world, offload, held in CASES], bound)


def main(argv):
    ap = tracking.arg_parser(__doc__)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--offload", action="store_true")
    a = ap.parse_args(argv)
    rc = tracking.compare_or_one(a, compare, lambda: run_case(a.model, a.batch, a.optim, a.world, a.rank, a.offload))
    if rc is not None:
        return rc
    return tracking.measure_all(OUT, "bench/accuracy/dist/zero1_replica.py", a.redo, [
        (case_id(short, batch, optim, world, offload), held,
         {"engine": "zero1", "model": model, "batch": batch, "optim": optim, "world_size": world, "offload": offload},
         functools.partial(measure, model, batch, optim, world, offload))
        for model, short, batch, optim, world, offload, held in CASES])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
