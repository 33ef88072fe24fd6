"""zero_common.py -- DeepSpeed's ZeRO stage 1 and 2 optimizer (DeepSpeedZeroOptimizer) on one rank's
GPU, replicated in torch 1.13 CPU from its source; shared by zero1_replica.py (stage 1 and 2, with
and without offload_optimizer and overlap_comm) and offload_replica.py (stage 2 with offload).

Source: deepspeed/runtime/zero/stage_1_and_2.py and engine.py at deepspeedai/DeepSpeed@
edaa7221267243c7be7fb49c5d5f5c4fb97b4641 (functions named below), not vramcalc. GPU tensors are c10
tensors (counted by the harness's counter); with offload the CPU side (the fp32 partition, its
gradient, the bit16 staging buffer, the optimizer's state and step) is host memory (host.py, not
counted). The collectives are not run: with reduce_scatter and use_multi_rank_bucket_allreduce (the
defaults) the reduction goes through allreduce_bucket's flatten (a copy) and copies back in place;
NCCL allocates nothing through PyTorch; the all-gather of the step is in place
(all_gather_into_tensor_dp_groups). One CPU process has one stream: overlap_comm's reduction_stream
is the current one here (its record_stream delays are not replicated).

Replicated, with the defaults but those given (contiguous_gradients True, reduce_scatter,
reduce_bucket_size 5e8, one parameter group, gradient_accumulation_dtype = the model's (fp32), clip_grad
0, loss scale 1; fp32 model, so check_grad_overflow is off; one micro-step, so every backward is the
accumulation boundary):
- __init__: the trainable parameters flattened, padded to 2 x world (flatten_dense_tensors_aligned),
  the parameters made views of it (_update_model_bit16_weights); this rank's partition and the
  parameters touching it (get_partition_info, get_grad_position); the fp32 partition
  (partition.clone().to(fp32)) on the GPU, or on the host with offload (with
  temp_grad_buffer_for_gpu_offload = zeros(largest parameter) on the GPU); initialize_optimizer_states
  (the zero gradient, dropped unless offload); create_gradient_handling_hooks (installed since
  contiguous_gradients): a hook on each parameter's AccumulateGrad.
- the hook, process_gradients: setup_buckets at the first of a backward (buf_0 =
  empty(reduce_bucket_size); with overlap_comm buf_1 too, "double buffers to avoid data access conflict
  when overlap_comm is enabled"); then, `if self.partition_gradients or self.overlap_comm`,
  reduce_ready_partitions_and_remove_grads -> reduce_independent_p_g_buckets_and_remove_grads: a
  bucket that would overflow is reduced first (reduce_ipg_grads; with overlap_comm bucket.index swaps
  to the other buffer), the gradient copied into bucket.buffer[bucket.index] and .grad re-pointed at
  the copy (a parameter larger than the bucket is kept as extra_large_param_to_reduce).
- stage 2: the epilogue queued to the end of backward (queue_post_backward_callback; the torch-style
  path, as offload_replica.py measured it). Stage 1: after backward, at the boundary (engine.py
  _backward_epilogue -> allreduce_gradients -> optimizer.reduce_gradients): without overlap_comm
  each parameter with a gradient, in the group's order, through
  reduce_independent_p_g_buckets_and_remove_grads (`if not self.overlap_comm:`); then
  overlapping_partition_gradients_reduce_epilogue.
- reduce_ipg_grads: average_tensor (div_, the bucket cut where the partition changes,
  allreduce_and_scatter -> allreduce_and_copy_with_multiple_ranks -> allreduce_bucket: tensor =
  self.flatten(slices), this rank's slices copied back), then per bucket parameter: stage 2, of this
  partition copy_grads_in_partition, of others clear_grad_attribute (previous_reduced_grads only `if
  self.overlap_comm and self.contiguous_gradients is False`); stage 1 (`else:  # zero stage 1`), of
  this partition copy_grads_in_partition only. copy_grads_in_partition: grads_in_partition
  (empty(the whole numel of every parameter touching the partition) at the first) or, with offload,
  its cpu_offload branch (set_norm_for_param_grad_in_gpu, _has_inf_or_nan, the copy to the CPU fp32
  gradient, clear_grad_attribute).
- independent_gradient_partition_epilogue: reduce_ipg_grads, the averaged_gradients views
  (get_flat_partition, unless offload), _release_ipg_buffers (both buffers, grads_in_partition),
  _clear_param_grad_only.
- step: without offload, scaled_global_norm -> get_grad_norm_direct (a float64 copy of each gradient
  slice of the partition, its norm), flatten(averaged_gradients) and .to(fp32), the gradients freed,
  the wrapped optimizer (optim2x, PyTorch 2.x's foreach) on the fp32 partition, its copy into the flat
  buffer in place; with offload, complete_grad_norm_calculation_for_cpu_offload (a 1-element GPU
  tensor), the optimizer on the CPU partition, the bit16 buffer and its copy into this rank's part of
  the flat buffer, reset_cpu_buffers (the norms go).
"""

BUCKET = 500000000  # reduce_bucket_size (config.py DeepSpeedZeroConfig default 5e8)


class DeepSpeedZero:
    """DeepSpeedZeroOptimizer on rank `rank` of `world`: partition_gradients = (stage == 2),
    cpu_offload = offload, overlap_comm = overlap."""

    def __init__(self, torch, params, world, rank, kind, stage, offload=False, overlap=False):
        import host
        import optim2x
        self.torch, self.stage, self.offload, self.overlap = torch, stage, offload, overlap
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
        self.offsets = {}
        for p in self.params:  # _update_model_bit16_weights: the parameters become views of the flat buffer
            p.data = self.flat[off:off + p.numel()].view_as(p)
            self.offsets[id(p)] = off
            off += p.numel()
        self.part = aligned // world
        self.world, self.rank = world, rank
        self.lo = lo = rank * self.part
        hi = lo + self.part
        # get_partition_info: params_in_partition in order, first_offset; get_grad_position
        # [source_offset, num_elements] of the parameters touching this partition
        self.in_part, self.pos, self.first_offset = [], {}, 0
        for p in self.params:
            s, e = self.offsets[id(p)], self.offsets[id(p)] + p.numel()
            if s < hi and e > lo:
                if not self.in_part and s < lo:
                    self.first_offset = lo - s
                self.in_part.append(p)
                self.pos[id(p)] = (max(lo - s, 0), min(e, hi) - max(s, lo))
        if offload:
            # the CPU side (pinned host memory): the fp32 partition and its gradient, the bit16 buffer
            self.fp32 = torch.nn.Parameter(host.empty(torch, self.part, torch.float32))
            self.fp32.data.copy_(self.flat[lo:hi])
            self.fp32.grad = host.empty(torch, self.part, torch.float32)  # initialize_optimizer_states
            self.bit16_buffer = host.empty(torch, self.part, torch.float32)
            self.opt = host.HostOptimizer([self.fp32], kind)
            # temp_grad_buffer_for_gpu_offload: on the GPU for the whole run
            self.temp_gpu = torch.zeros(max(p.numel() for p in self.params))
        else:
            # weights_partition = partition.detach().clone().to(device, fp32)
            self.fp32 = self.flat.narrow(0, lo, self.part).detach().clone().to(dtype=torch.float32)
            self.fp32.requires_grad = True
            self.opt = optim2x.make([self.fp32], kind)
            # initialize_optimizer_states: a zero gradient, then .grad = None without offload
            self.fp32.grad = torch.zeros(self.part)
            self.fp32.grad = None
        self.norms = {}
        self.buffers = None  # bucket.buffer; ready_for_gradients is `buffers is not None`
        self.index = 0       # bucket.index
        self.elements, self.bucket_params, self.extra_large = 0, [], None
        self.gip, self.gip_off = None, 0  # grads_in_partition
        self.averaged = None
        self.accs = []  # create_gradient_handling_hooks: a hook on each parameter's AccumulateGrad, kept alive
        for p in self.params:
            acc = p.expand_as(p).grad_fn.next_functions[0][0]
            acc.register_hook(lambda *_, p=p: self.process_gradients(p))
            self.accs.append(acc)

    def process_gradients(self, p):
        """The gradient hook: setup_buckets; the reduction `if partition_gradients or overlap_comm`."""
        self.setup_buckets()
        if self.stage == 2 or self.overlap:
            with self.torch.no_grad():
                self.bucket_add(p)

    def setup_buckets(self):
        if self.buffers is None:
            torch = self.torch
            self.buffers = [torch.empty(BUCKET)]  # buf_0
            self.index = 0
            if self.overlap:  # buf_1: double buffers when overlap_comm is enabled
                self.buffers.append(torch.empty(BUCKET))
            self.elements = 0
            if self.stage == 2:  # queue_post_backward_callback: the epilogue at the end of backward
                torch.autograd.Variable._execution_engine.queue_callback(self.epilogue)

    def reduce_gradients(self):
        """Stage 1: engine.allreduce_gradients at the boundary -> optimizer.reduce_gradients."""
        with self.torch.no_grad():
            if not self.overlap:
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
            if self.overlap:  # contiguous_gradients and overlap_comm: swap index between 0 and 1
                self.index = 1 - self.index
        if p.numel() > BUCKET:
            self.extra_large = p
        else:
            new = self.buffers[self.index].narrow(0, self.elements, p.numel())
            new.copy_(p.grad.view(-1))
            p.grad.data = new.view_as(p.grad)
        self.elements += p.numel()
        self.bucket_params.append(p)

    def reduce_ipg_grads(self):
        if not self.bucket_params:
            return
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
        if self.extra_large is not None:
            t = self.extra_large.grad.view(-1)
        else:
            t = self.buffers[self.index].narrow(0, 0, self.elements)
        # average_tensor: div_ in place; rank_and_offsets, the bucket cut where the partition
        # changes (consecutive pieces of one partition merged); allreduce_and_scatter ->
        # allreduce_and_copy_with_multiple_ranks -> allreduce_bucket: tensor = self.flatten(slices)
        # (torch._utils._flatten_dense_tensors: a cat, a view when there is one slice), all-reduced,
        # then this rank's slices copied back from the unflattened views
        t.div_(float(self.world))
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
            elif self.stage == 2:
                p.grad = None  # clear_grad_attribute (stage 1 leaves the others' gradients)
        self.bucket_params, self.extra_large, self.elements = [], None, 0

    def copy_grads_in_partition(self, p):
        torch = self.torch
        if self.offload:
            self.copy_grads_offload(p)
            return
        if self.gip is None:
            self.gip = torch.empty(sum(q.numel() for q in self.in_part))
            self.gip_off = 0
        new = self.gip.view(-1).narrow(0, self.gip_off, p.numel())
        new.copy_(p.grad.view(-1))
        p.grad.data = new.view_as(p.grad)
        self.gip_off += p.numel()

    def copy_grads_offload(self, p):
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
        """This rank's offset of a parameter's part (for the offload copy)."""
        return max(self.offsets[id(p)] - self.lo, 0)

    def epilogue(self):
        """independent_gradient_partition_epilogue."""
        torch = self.torch
        with torch.no_grad():
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
        self.buffers = None  # _release_ipg_buffers
        self.gip = None
        for p in self.params:  # _clear_param_grad_only
            p.grad = None

    def step(self):
        if self.offload:
            self.step_offload()
            return
        torch = self.torch
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
            flat = torch.cat([t.reshape(-1) for t in self.averaged])  # flatten(averaged_gradients[i])
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

    def step_offload(self):
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
