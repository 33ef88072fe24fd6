"""cudameasure.py -- measure.py's CUDA path: PyTorch's own numbers on a real GPU.

    python3 bench/accuracy/measure.py MODEL.json --device cuda --batch N \
        --optim sgd|momentum|adam|adamw|none --mode train|infer \
        --precision fp32|bf16|fp16|amp-bf16|amp-fp16 [--attention auto|math|flash|efficient] --json

Run with a Python whose torch is a CUDA build of PyTorch 2.x (not Debian's 1.13 CPU
build, which has no CUDA: measure.py then exits 2).  SPEC.md section 4, "On a GPU":

  * the model file is built with tools/vctorch.py as on the CPU, but with
    compat="stock" (PyTorch's own modules: on 2.x they *are* what the CPU path
    replicates) plus the few kinds vctorch only has as 1.13 replicas, mapped to 2.x's
    native ones when the running torch has them: ScaledDotProductAttention ->
    F.scaled_dot_product_attention, RMSNorm -> nn.RMSNorm, Transformer layers with
    bias=False -> the native bias argument;
  * model.to(dtype) for bf16/fp16, then model and input batch moved to the GPU;
  * the real optimizer, torch.optim.Adam/AdamW/SGD(foreach=True) (Adafactor: its defaults) with the CPU
    path's settings (lr 1e-3; AdamW weight decay 1e-2; momentum 0.9), zero_grad
    (set_to_none=True);
  * amp-bf16 / amp-fp16: fp32 model and input, forward and loss under
    torch.autocast("cuda", dtype); amp-fp16 with a GradScaler;
  * step 1 (infer: forward pass 1) is the warm-up; then torch.cuda.synchronize()
    and torch.cuda.reset_peak_memory_stats(); the peak is max_memory_allocated()
    over steps 2..N (infer: forward pass 2), relative to memory_allocated() before
    the model was moved to the GPU; `reserved` is max_memory_reserved() over the
    same steps;
  * after the last step: memory_allocated()/memory_reserved() at rest, and the
    process's total from `nvidia-smi --query-compute-apps=pid,used_memory`;
    cuda_context = that total - memory_reserved() at the same moment (the CUDA
    context, cuBLAS/cuDNN handles and anything else outside the caching allocator).

Where the peak happens: between layers (vctorch's HOOKS.layer) and between phases
the harness reads max_memory_allocated() and resets the peak statistics, so each
interval has its own high-water mark; their maximum is the step's peak, and the
interval holding it is `peak_where` ("s2.bwd", "s3.fwd layers[4]").  The caching
allocator updates these counters when the host calls allocate/free, so no
synchronisation is needed for them.

VRAMCALC_CUDA_DRYRUN=1 runs this code path on the CPU with no memory statistics
(every figure null): it checks the code without a GPU, it measures nothing.
"""

import contextlib
import gc
import inspect
import json
import os
import shutil
import subprocess
import sys

PRECISIONS = ("fp32", "bf16", "fp16", "amp-bf16", "amp-fp16")
ATTENTION = ("auto", "math", "flash", "efficient")


class Unavailable(Exception):
    """No CUDA device: measure.py prints the message and exits 2."""


def rounded(t):
    n = t.numel() * t.element_size()
    return 0 if n == 0 else max(512, (n + 511) // 512 * 512)


# ---------------------------------------------------------------------------
# the device: torch.cuda, or (VRAMCALC_CUDA_DRYRUN=1) the CPU without statistics
# ---------------------------------------------------------------------------

class _Cuda:
    dry = False
    type = "cuda"

    def __init__(self, torch):
        self.t = torch
        self.c = torch.cuda

    def sync(self):
        self.c.synchronize()

    def reset_peak(self):
        self.c.reset_peak_memory_stats()

    def max_allocated(self):
        return self.c.max_memory_allocated()

    def max_reserved(self):
        return self.c.max_memory_reserved()

    def allocated(self):
        return self.c.memory_allocated()

    def reserved(self):
        return self.c.memory_reserved()

    def stats(self):
        return self.c.memory_stats()

    def used_on_device(self):
        free, total = self.c.mem_get_info()
        return total - free

    def info(self):
        t = self.t
        p = self.c.get_device_properties(self.c.current_device())
        cudnn = None
        try:
            cudnn = t.backends.cudnn.version()
        except Exception:  # noqa: BLE001 - no cuDNN in this build
            pass
        return {
            "name": p.name,
            "capacity": int(p.total_memory),
            "compute_capability": "%d.%d" % (p.major, p.minor),
            "multiprocessors": int(p.multi_processor_count),
            "index": int(self.c.current_device()),
        }, t.version.cuda, cudnn


class _DryRun(_Cuda):
    dry = True
    type = "cpu"

    def __init__(self, torch):
        self.t = torch

    def sync(self):
        pass

    def reset_peak(self):
        pass

    def max_allocated(self):
        return None

    max_reserved = allocated = reserved = used_on_device = max_allocated

    def stats(self):
        return {}

    def info(self):
        return {"name": None, "capacity": None, "compute_capability": None, "multiprocessors": None,
                "index": None}, None, None


def open_device(torch):
    """The device object, or Unavailable with a one-line reason."""
    if os.environ.get("VRAMCALC_CUDA_DRYRUN") == "1":
        return _DryRun(torch)
    if not torch.cuda.is_available():
        why = ("this torch (%s) is built without CUDA" % torch.__version__ if torch.version.cuda is None
               else "torch %s (CUDA %s) sees no GPU" % (torch.__version__, torch.version.cuda))
        raise Unavailable("measure.py: --device cuda: CUDA is not available: %s; run it with a CUDA build "
                          "of PyTorch 2.x on a machine with an NVIDIA GPU" % why)
    return _Cuda(torch)


# ---------------------------------------------------------------------------
# nvidia-smi
# ---------------------------------------------------------------------------

def _smi(args):
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, "nvidia-smi not found on PATH"
    try:
        p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "nvidia-smi failed: %s" % e
    if p.returncode != 0:
        return None, "nvidia-smi exited %d: %s" % (p.returncode, (p.stderr or p.stdout).strip()[:200])
    return p.stdout, None


def smi_process_total(pid):
    """Bytes nvidia-smi lists for this process (summed over GPUs), or (None, why)."""
    out, why = _smi(["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])
    if out is None:
        return None, why
    total, seen = 0, False
    for line in out.splitlines():
        parts = [s.strip() for s in line.split(",")]
        if len(parts) < 2 or not parts[0].isdigit() or int(parts[0]) != pid:
            continue
        try:
            total += int(parts[1]) * 1048576  # MiB (nounits)
            seen = True
        except ValueError:
            return None, "nvidia-smi gives no number for this process (%r)" % parts[1]
    if not seen:
        return None, ("pid %d not in nvidia-smi --query-compute-apps (a container's own PID namespace?)" % pid)
    return total, None


def stack_limit(dev):
    """The current context's per-thread stack size (cuCtxGetLimit(CU_LIMIT_STACK_SIZE), the
    driver API of the process), bytes, or None. The driver keeps local memory for every
    thread the device can hold at this size, and grows it when a kernel needs more: one
    reading of what the CUDA context's training term is (docs/context.md)."""
    if dev.dry:
        return None
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_size_t(0)
        if cuda.cuCtxGetLimit(ctypes.byref(v), 0) != 0:  # CU_LIMIT_STACK_SIZE = 0x00
            return None
        return int(v.value)
    except (OSError, AttributeError):
        return None


class ConvWorkspace:
    """--conv-workspace: around each convolution module's forward and backward (module
    hooks), the peak above what was allocated before it, less its results (forward: the
    output; backward: the input, weight and bias gradients): the transient the kernel took
    from the caching allocator, cuDNN's workspace (and any contiguous copy of the input).
    Resets the peak statistics at every hook, so the step's own peak is not measured."""

    def __init__(self, torch, dev, module):
        self.t, self.dev, self.rows, self.on = torch, dev, [], False
        self.handles = []
        # register_full_backward_pre_hook is new in torch 2.0: before it, forward only
        self.backward = hasattr(torch.nn.Module, "register_full_backward_pre_hook")
        for name, m in module.named_modules():
            if isinstance(m, torch.nn.modules.conv._ConvNd):
                self.handles += [m.register_forward_pre_hook(self._pre(name, "forward")),
                                 m.register_forward_hook(self._post(name, "forward"))]
                if self.backward:
                    self.handles += [m.register_full_backward_pre_hook(self._pre(name, "backward")),
                                     m.register_full_backward_hook(self._post(name, "backward"))]

    def _pre(self, name, direction):
        def hook(*_):
            if self.on:
                self.dev.reset_peak()
                self.start = self.dev.allocated()
        return hook

    def _post(self, name, direction):
        def hook(m, a, b):
            if not self.on or self.dev.dry:
                return
            peak = self.dev.max_allocated()
            if direction == "forward":
                results = rounded(b) if self.t.is_tensor(b) else 0
            else:  # a: grad_input; the parameters' gradients are made in the same call
                results = sum(rounded(g) for g in a if g is not None)
                results += sum(rounded(p) for p in m.parameters() if p.requires_grad)
            self.rows.append({"module": name, "direction": direction, "kind": type(m).__name__,
                              "transient": int(peak - self.start - results)})
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


def smi_driver():
    out, _ = _smi(["--query-gpu=driver_version", "--format=csv,noheader"])
    return out.splitlines()[0].strip() if out and out.strip() else None


# ---------------------------------------------------------------------------
# the model: vctorch's stock modules, native 2.x ones where vctorch has a replica
# ---------------------------------------------------------------------------

@contextlib.contextmanager
def native_kinds(vctorch, torch, notes):
    """Temporarily map the kinds that vctorch builds as 1.13 replicas even with
    compat="stock" to PyTorch's native modules, when the running torch has them."""
    nn, F = torch.nn, torch.nn.functional
    saved = dict(vctorch._KINDS)
    try:
        if hasattr(F, "scaled_dot_product_attention"):
            has_scale = _version(torch) >= (2, 1)  # F.scaled_dot_product_attention(scale=) is 2.1+

            class SDPA(nn.Module):
                def __init__(self, dropout_p=0.0, is_causal=False, scale=None):
                    super().__init__()
                    if scale is not None and not has_scale:
                        raise vctorch.ModelError("scale needs PyTorch >= 2.1")
                    self.dropout_p, self.is_causal, self.scale = dropout_p, is_causal, scale

                def forward(self, q, k, v):
                    kw = {"scale": self.scale} if self.scale is not None else {}
                    return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout_p if self.training else 0.0,
                                                          is_causal=self.is_causal, **kw)
            _, nin, extra = saved["ScaledDotProductAttention"]
            vctorch._KINDS["ScaledDotProductAttention"] = (lambda kw, c: SDPA(**kw), nin, extra)
        else:
            notes.append("no F.scaled_dot_product_attention in this torch: vctorch's port of 2.x's math "
                         "path runs instead")
        if hasattr(nn, "RMSNorm"):
            _, nin, extra = saved["RMSNorm"]
            vctorch._KINDS["RMSNorm"] = (lambda kw, c: nn.RMSNorm(**kw), nin, extra)
        else:
            notes.append("no nn.RMSNorm in this torch: vctorch's composite rms_norm runs instead")
        native_bias = "bias" in inspect.signature(nn.TransformerEncoderLayer.__init__).parameters

        def transformer(cls):
            def f(kw, compat):
                if "batch_first" in kw:
                    raise vctorch.ModelError("batch_first is implied (sequence modules are always batch_first)")
                bias = kw.pop("bias", True)
                if native_bias:
                    kw["bias"] = bias
                elif not bias:
                    raise vctorch.ModelError("bias=False needs PyTorch >= 2.1")
                return cls(batch_first=True, **kw)
            return f
        for kind, cls in (("TransformerEncoderLayer", vctorch._EncoderLayerStock),
                          ("TransformerDecoderLayer", vctorch._DecoderLayerStock)):
            _, nin, extra = saved[kind]
            vctorch._KINDS[kind] = (transformer(cls), nin, extra)
        yield
    finally:
        vctorch._KINDS.clear()
        vctorch._KINDS.update(saved)


def _version(torch):
    out = []
    for part in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def attention_context(torch, backend, notes):
    """A context that restricts scaled_dot_product_attention to one backend."""
    if backend == "auto":
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # PyTorch >= 2.3
        which = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION,
                 "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]
        return sdpa_kernel(which)
    except ImportError:
        pass
    sdp_kernel = getattr(getattr(torch.backends, "cuda", None), "sdp_kernel", None)  # 2.0 - 2.2
    if sdp_kernel is not None and hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        return sdp_kernel(enable_math=backend == "math", enable_flash=backend == "flash",
                          enable_mem_efficient=backend == "efficient")
    notes.append("--attention %s: this torch cannot select an SDPA backend; left as it is" % backend)
    return contextlib.nullcontext()


def set_mha_fastpath(torch, on, notes):
    """PyTorch 2.x runs MultiheadAttention / TransformerEncoderLayer in eval under
    no_grad through its native kernels (_native_multi_head_attention,
    _transformer_encoder_layer_fwd) where their conditions hold; vramcalc models
    them (issue 17). On by default: the measurement is PyTorch as it runs;
    `off` exists for diagnosis only and is never what an estimate is compared with."""
    mha = getattr(torch.backends, "mha", None)
    if mha is not None and hasattr(mha, "set_fastpath_enabled"):
        mha.set_fastpath_enabled(bool(on))
        return bool(on)
    if not on:
        notes.append("this torch cannot turn off the MultiheadAttention/TransformerEncoderLayer inference "
                     "fast path (torch.backends.mha.set_fastpath_enabled, 2.3+): it stays on")
    return None


def make_optimizer(torch, params, kind):
    """The CPU path's optimizer settings (optim2x.py), as PyTorch's own foreach optimizer."""
    params = [p for p in params if p.requires_grad]
    if kind == "none" or not params:
        return None, "none"
    O = torch.optim
    if kind == "adam":
        return O.Adam(params, lr=1e-3, foreach=True), "torch.optim.Adam(lr=1e-3, foreach=True)"
    if kind == "adamw":
        return (O.AdamW(params, lr=1e-3, weight_decay=1e-2, foreach=True),
                "torch.optim.AdamW(lr=1e-3, weight_decay=1e-2, foreach=True)")
    if kind == "sgd":
        return O.SGD(params, lr=1e-3, foreach=True), "torch.optim.SGD(lr=1e-3, foreach=True)"
    if kind == "momentum":
        return (O.SGD(params, lr=1e-3, momentum=0.9, foreach=True),
                "torch.optim.SGD(lr=1e-3, momentum=0.9, foreach=True)")
    if kind in ("adafactor", "adafactor-foreach") and hasattr(O, "Adafactor"):
        # torch/optim/_adafactor.py (2.5+): its defaults, as optim2x.Adafactor2x has them;
        # foreach=None runs _single_tensor_adafactor, foreach=True _multi_tensor_adafactor
        fe = True if kind == "adafactor-foreach" else None
        return O.Adafactor(params, foreach=fe), "torch.optim.Adafactor(foreach=%s)" % fe
    raise ValueError(kind)


def make_scaler(torch, dev):
    amp = getattr(torch, "amp", None)
    if dev.dry:
        return torch.cuda.amp.GradScaler(enabled=False)
    if amp is not None and hasattr(amp, "GradScaler"):
        try:
            return amp.GradScaler("cuda")  # 2.3+
        except TypeError:
            pass
    return torch.cuda.amp.GradScaler()


class Peaks:
    """Per-interval high-water marks of the caching allocator (see the module doc)."""

    def __init__(self, dev):
        self.dev = dev
        self.on = False
        self.label = "start"
        self.best = None
        self.where = None
        self.reserved = None
        self.reads = 0

    def start(self, label):
        self.dev.sync()
        self.dev.reset_peak()
        self.on = True
        self.label = label

    def mark(self, label):
        if self.on:
            a, r = self.dev.max_allocated(), self.dev.max_reserved()
            self.reads += 1
            if a is not None and (self.best is None or a > self.best):
                self.best, self.where = a, self.label
            if r is not None and (self.reserved is None or r > self.reserved):
                self.reserved = r
            self.dev.reset_peak()
        self.label = label

    def stop(self):
        self.dev.sync()
        self.mark("end")
        self.on = False


def measure(args, model_path):
    """The CUDA measurement; returns (exit status, result dict or None)."""
    import torch
    import torch.nn.functional as F
    dev = open_device(torch)  # raises Unavailable
    import vctorch

    if args.precision not in PRECISIONS:
        raise Unavailable("measure.py: --precision %s is not one of %s" % (args.precision, ", ".join(PRECISIONS)))
    notes = []
    if _version(torch) < (2, 0):
        notes.append("torch %s is older than the PyTorch 2.x that SPEC.md section 4 measures" % torch.__version__)
    torch.manual_seed(args.seed)
    with open(model_path) as f:
        spec = json.load(f)
    pure = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    amp = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(args.precision)
    fastpath = set_mha_fastpath(torch, args.mha_fastpath == "on", notes)

    phase = ["build"]
    peaks = Peaks(dev)
    hist_path = None if dev.dry else os.environ.get("VRAMCALC_CUDA_HISTORY")
    hist_start = None

    def history_start():
        # diagnosis only (cudahistory.py): the allocator's history over the measured step
        if not hist_path:
            return None
        import cudahistory
        return cudahistory.start(torch)

    def history_stop(start_bytes):
        if hist_path:
            import cudahistory
            try:
                cudahistory.stop(torch, start_bytes - base, hist_path, "%s batch %d %s %s %s" % (
                    os.path.basename(model_path), args.batch, args.optim, args.mode, args.precision))
            except Exception as e:  # noqa: BLE001 - a diagnosis must not lose the measurement
                print("cudahistory: %s: %s" % (type(e).__name__, e), file=sys.stderr)
    vctorch.HOOKS.layer = lambda path: peaks.mark("%s %s" % (phase[0], path))

    def set_phase(p):
        phase[0] = p
        peaks.mark(p)

    gc.collect()
    # touch the device so that the baseline is taken with the context up
    if not dev.dry:
        torch.empty(0, device="cuda")
        dev.sync()
    base = dev.allocated()
    stack_before = stack_limit(dev)
    threads = getattr(args, "autograd_threads", "on")
    if threads == "off":
        # torch/autograd/grad_mode.py set_multithreading_enabled (torch 2.0+): the engine runs
        # backward on the calling thread instead of its device threads (torch/csrc/autograd/engine.cpp)
        if hasattr(torch._C, "_set_multithreading_enabled"):
            torch._C._set_multithreading_enabled(False)
            notes.append("torch.autograd.set_multithreading_enabled(False): backward on the calling thread")
        else:
            threads = "on (set_multithreading_enabled is not in torch %s)" % torch.__version__
            notes.append("--autograd-threads off: not applied, torch %s has no set_multithreading_enabled"
                         % torch.__version__)
    try:
        with native_kinds(vctorch, torch, notes):
            module, make_inputs = vctorch.build(spec, compat="stock")
    except vctorch.ModelError as e:
        print("measure.py: %s: %s" % (model_path, e), file=sys.stderr)
        return 2, None
    if pure is not None:
        module.to(pure)
    module.to(dev.type)
    shapes = None
    if args.input:
        if len(module.input_names) != 1:
            raise SystemExit("measure.py: --input needs a single-input model")
        shapes = {module.input_names[0]: [int(s) for s in args.input.replace("x", ",").split(",")]}
    inputs = tuple(x.to(dev.type) for x in make_inputs(args.batch, dtype=pure or torch.float32, shapes=shapes))
    params = list(module.parameters())
    n_params = sum(p.numel() for p in params)
    n_train = sum(p.numel() for p in params if p.requires_grad)
    weights_bytes = sum(rounded(p) for p in params) + sum(rounded(b) for b in module.buffers())
    inputs_bytes = sum(rounded(x) for x in inputs)
    dev.sync()
    after_build = dev.allocated()

    autocast = (lambda: torch.autocast(dev.type, dtype=amp)) if amp is not None else contextlib.nullcontext
    targets = []
    convws = ConvWorkspace(torch, dev, module) if getattr(args, "conv_workspace", False) else None

    def loss_step():
        # the CPU path's loop (measure.py): the model's output is a temporary
        with autocast():
            if module.loss_kind == "cross_entropy":
                if not targets:
                    logits = module(*inputs).float()
                    targets.append(torch.randint(0, logits.shape[-1], tuple(logits.shape[:-1]),
                                                 dtype=torch.int64, device=dev.type))
                    targets.append(logits.shape[-1])
                    return F.cross_entropy(logits.reshape(-1, targets[1]), targets[0].reshape(-1))
                return F.cross_entropy(module(*inputs).float().reshape(-1, targets[1]), targets[0].reshape(-1))
            return module(*inputs).float().mean()

    opt, opt_desc = None, "none"
    scaler = None
    after_warmup = None
    with attention_context(torch, args.attention, notes):
        if args.mode == "train":
            module.train()
            opt, opt_desc = make_optimizer(torch, module.parameters(), args.optim)
            if args.precision == "amp-fp16":
                scaler = make_scaler(torch, dev)
            for step in range(1, args.steps + 1):
                if step == 2:
                    dev.sync()
                    after_warmup = dev.allocated()
                    peaks.start("s2.fwd")
                    hist_start = history_start()
                if convws is not None:
                    convws.on = step == 2
                set_phase("s%d.fwd" % step)
                loss = loss_step()
                set_phase("s%d.bwd" % step)
                (scaler.scale(loss) if scaler is not None else loss).backward()
                del loss
                set_phase("s%d.opt" % step)
                if opt is not None:
                    if scaler is not None:
                        scaler.step(opt)
                        scaler.update()
                    else:
                        opt.step()
                set_phase("s%d.zero" % step)
                if opt is not None:
                    opt.zero_grad(set_to_none=True)
                else:
                    for p in params:
                        p.grad = None
            peaks.stop()
            history_stop(hist_start)
        else:
            module.eval()
            with torch.no_grad():
                for step in (1, 2):
                    if step == 2:
                        dev.sync()
                        after_warmup = dev.allocated()
                        peaks.start("f2.fwd")
                        hist_start = history_start()
                    if convws is not None:
                        convws.on = step == 2
                    set_phase("f%d.fwd" % step)
                    with autocast():
                        out = module(*inputs)
                    del out
                peaks.stop()
                history_stop(hist_start)
    vctorch.HOOKS.layer = None

    dev.sync()
    at_rest = dev.allocated()
    reserved_at_rest = dev.reserved()
    smi_total, smi_why = smi_process_total(os.getpid())
    used_on_device = dev.used_on_device()
    stats = dev.stats()
    gpu, cuda_version, cudnn_version = dev.info()
    gpu["driver"] = smi_driver()

    def rel(v):
        return None if v is None or base is None else int(v - base)

    reserved = peaks.reserved
    context = (smi_total - reserved_at_rest) if smi_total is not None and reserved_at_rest is not None else None
    if smi_total is None:
        notes.append("nvidia_smi_total, cuda_context: not measured (%s)" % smi_why)
    if reserved is not None and reserved_at_rest is not None and reserved_at_rest != reserved:
        notes.append("memory_reserved() at rest (%d) differs from max_memory_reserved() over the measured steps "
                     "(%d): cuda_context = nvidia-smi total - reserved at rest" % (reserved_at_rest, reserved))
    retries = int(stats.get("num_alloc_retries", 0) or 0)
    if retries:
        notes.append("the caching allocator freed its cache and retried %d time(s) (near out of memory): "
                     "reserved and the peak are not the steady state" % retries)
    if dev.dry:
        notes.append("DRY RUN (VRAMCALC_CUDA_DRYRUN=1): the CUDA path ran on the CPU; nothing was measured")
    notes.append("CUDA: torch.cuda.max_memory_allocated()/max_memory_reserved() after synchronize() and "
                 "reset_peak_memory_stats() following the warm-up step; PyTorch's own modules (vctorch "
                 "compat stock, native SDPA/RMSNorm where available) and optimizer (%s)" % opt_desc)
    notes.append("peak_allocated includes what CUDA kernels take from the caching allocator (cuBLAS "
                 "workspaces, cuDNN workspaces, reduction scratch); compare with vramcalc without --workspace 0")
    result = {
        "model": module.name,
        "batch": args.batch,
        "optim": args.optim if args.mode == "train" else "none",
        "mode": args.mode,
        "precision": args.precision,
        "peak_allocated": rel(peaks.best),
        "peak_where": peaks.where,
        "peak_allocator": rel(peaks.best),
        "params": int(n_params),
        "trainable_params": int(n_train),
        "weights_bytes": int(weights_bytes),
        "inputs_bytes": int(inputs_bytes),
        "after_build_bytes": rel(after_build),
        "steady_bytes": rel(at_rest),
        "optimizer_state_bytes": int(sum(rounded(v) for st in opt.state.values() for v in st.values()
                                         if torch.is_tensor(v) and v.device.type == dev.type
                                         and v.dim() > 0)) if opt else 0,
        "reads": int(peaks.reads),
        "wrapped_scalar_bytes_ignored": 0,
        "grad_accumulations": None,
        "compat": "native",
        "torch": torch.__version__,
        "notes": notes,
        "device": "cpu (dry run)" if dev.dry else "cuda",
        "reserved": reserved,
        "reserved_at_rest": reserved_at_rest,
        "after_warmup_bytes": rel(after_warmup),
        "nvidia_smi_total": smi_total,
        "cuda_context": context,
        "device_used": used_on_device,
        "alloc_retries": retries,
        "gpu": gpu,
        "torch_cuda": cuda_version,
        "cudnn": cudnn_version,
        "attention": args.attention,
        "mha_fastpath": fastpath,
        "optimizer": opt_desc,
        "steps": args.steps,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "stack_limit_before": stack_before,
        "stack_limit_after": stack_limit(dev),
        "autograd_threads": threads,
    }
    if convws is not None:
        convws.remove()
        result["conv_workspace"] = convws.rows
        notes.append("--conv-workspace: peak statistics reset around every convolution; peak_allocated and "
                     "reserved are not the step's%s" % ("" if convws.backward else
                                                       "; forward only (no register_full_backward_pre_hook)"))
    return 0, result
