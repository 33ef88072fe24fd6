#!/usr/bin/python3
"""measure.py -- measure a vramcalc model's peak memory with torch 1.13 on CPU (or on a CUDA GPU).

    /usr/bin/python3 bench/accuracy/measure.py MODEL.json --batch N \
        --optim sgd|momentum|adam|adamw|none --mode train|infer \
        --precision fp32|bf16 [--json] [--per-op] [--per-op-file F]
    python3 bench/accuracy/measure.py MODEL.json --device cuda ... --json   # cudameasure.py

--device cpu (the default) is the CPU harness described below; --device cuda runs
the same configuration with PyTorch's own numbers on a GPU (cudameasure.py);
--device auto picks cuda when torch.cuda.is_available().

SPEC.md section 4 (the protocol) and bench/accuracy/README.md (how, and what is
compensated).  In short: LD_PRELOAD=libmemtrack.so keeps the running total of
c10's CPU allocations (each rounded up to 512 bytes); libopobserver.so reads it
after every aten operator (forward, backward, optimizer); the result is the
highest reading over steps 2 and 3 (train) or the second forward (infer), minus
the total before the model was built.
"""

import argparse
import contextlib
import ctypes
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ next to tools/vctorch.py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MEMTRACK = os.path.join(HERE, "libmemtrack.so")
OBSERVER = os.path.join(HERE, "libopobserver.so")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="vramcalc model JSON (SPEC.md section 1)")
    ap.add_argument("-b", "--batch", type=int, default=1)
    ap.add_argument("-o", "--optim", default="adam", choices=["sgd", "momentum", "adam", "adamw", "none", "adafactor", "adafactor-foreach"],
                    help="adafactor: torch.optim.Adafactor's default forloop step; adafactor-foreach: "
                         "foreach=True (optim2x.Adafactor2x)")
    ap.add_argument("-m", "--mode", default="train", choices=["train", "infer"])
    ap.add_argument("-p", "--precision", default="fp32",
                    choices=["fp32", "bf16", "fp16", "amp-bf16", "amp-fp16"],
                    help="fp32 or bf16; fp16, amp-bf16, amp-fp16 with --device cuda only")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"],
                    help="cpu: torch 1.13 CPU harness (default); cuda: torch.cuda's allocator "
                         "statistics and nvidia-smi (cudameasure.py); auto: cuda when available")
    ap.add_argument("--attention", choices=["auto", "math", "flash", "efficient"],
                    help="cuda: scaled_dot_product_attention backend (default auto, PyTorch's choice); "
                         "the CPU path always runs the math path")
    ap.add_argument("--mha-fastpath", choices=["on", "off"],
                    help="PyTorch 2.x's MultiheadAttention/TransformerEncoderLayer inference fast path "
                         "where its conditions hold (default on, as PyTorch runs it; off = "
                         "torch.backends.mha.set_fastpath_enabled(False), for diagnosis only)")
    ap.add_argument("--autograd-threads", choices=["on", "off"], default="on",
                    help="cuda: off = torch.autograd.set_multithreading_enabled(False), backward on the "
                         "calling thread instead of autograd's device thread (what tells the CUDA "
                         "context's training term apart: docs/context.md)")
    ap.add_argument("--conv-workspace", action="store_true",
                    help="cuda: record each convolution's transient bytes above its results, forward and "
                         "backward, in step 2 (cuDNN's workspace; the step's own peak is then not measured)")
    ap.add_argument("--torch", dest="torch_release", default="2.15",
                    help="CPU harness: the PyTorch 2.x release replicated where releases differ "
                         "(vramcalc --torch; default 2.15)")
    ap.add_argument("--input", help="override the (single) input's per-sample shape, e.g. 3,224,224")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--per-op", action="store_true",
                    help="print the running total after each op (steps in --per-op-steps)")
    ap.add_argument("--per-op-file", help="write the per-op timeline to this file instead")
    ap.add_argument("--per-op-steps", default="2",
                    help="comma list of steps to log (default 2; infer: forward pass numbers)")
    ap.add_argument("--compat", choices=["2x", "stock"],
                    help="2x: replicate PyTorch 2.x where 1.13 differs (default); stock: 1.13 as is")
    ap.add_argument("--hook", default="record", choices=["record", "dispatch"],
                    help="record: RecordFunction observer (default); dispatch: TorchDispatchMode "
                         "(perturbs 1.13's composite ops, see README)")
    ap.add_argument("--steps", type=int, default=3, help="training steps (peak over steps >= 2)")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def ensure_built():
    if not (os.path.exists(MEMTRACK) and os.path.exists(OBSERVER)) or any(
            os.path.getmtime(os.path.join(HERE, s)) > os.path.getmtime(o)
            for s, o in (("memtrack.c", MEMTRACK), ("opobserver.cpp", OBSERVER))):
        subprocess.run(["make", "-s", "-C", HERE], check=True, stdout=sys.stderr)


def reexec_with_preload():
    pre = os.environ.get("LD_PRELOAD", "")
    if MEMTRACK in pre.split(":") or MEMTRACK in pre.split():
        return
    ensure_built()
    env = dict(os.environ)
    env["LD_PRELOAD"] = MEMTRACK + ((":" + pre) if pre else "")
    env["VRAMCALC_MEASURE_CHILD"] = "1"
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


class Tracker:
    """ctypes front of memtrack (allocator totals) and opobserver (between-op readings)."""

    def __init__(self):
        self.M = ctypes.CDLL(None)  # libmemtrack.so is preloaded: global symbols
        for n in ("memtrack_current", "memtrack_peak", "memtrack_blocks", "memtrack_raw_current",
                  "memtrack_total_allocs"):
            getattr(self.M, n).restype = ctypes.c_longlong
        self.O = ctypes.CDLL(OBSERVER)
        for n in ("opobs_peak", "opobs_current", "opobs_reads", "opobs_forgotten",
                  "opobs_accum_inplace", "opobs_accum_copy"):
            getattr(self.O, n).restype = ctypes.c_longlong
        self.O.opobs_peak_where.restype = ctypes.c_char_p
        self.base_total = 0

    # allocator level
    def current(self):
        return self.M.memtrack_current()

    def peak(self):
        return self.M.memtrack_peak()

    def reset_peak(self):
        self.M.memtrack_reset_peak()

    # between-op level
    def start(self, install):
        if not self.M.memtrack_active():
            raise SystemExit("measure.py: memtrack does not see libc10.so (is it preloaded?)")
        if install and not self.O.opobs_install():
            raise SystemExit("measure.py: opobserver cannot reach memtrack_current")
        self.base_total = self.current()
        self.O.opobs_start()

    def tag(self, s):
        self.O.opobs_tag(s.encode())

    def read(self, what):
        self.O.opobs_read(what.encode())

    @contextlib.contextmanager
    def fused(self, name):
        self.O.opobs_suppress_push()
        try:
            yield
        finally:
            self.O.opobs_suppress_pop(name.encode())


def train_steps(tr, step_loss, opt, steps, tag=None, at_step=None, after_step=None):
    """SPEC.md section 4's measured training loop, shared by this harness and the LLM and
    expert-parallel ones: `steps` steps, the peak reset at step 2's start (step 1 warms up);
    each step's phases tagged sN.fwd (`step_loss()`), sN.bwd (backward with the op observer's
    backward flag on), sN.opt (`opt.step()`), sN.zero (`opt.zero_grad(set_to_none=True)`), with
    readings at the end of each of the last three. `tag(name)` sets a phase (default tr.tag);
    `at_step(step)` runs first in a step and `after_step(step)` last (the per-op log's file)."""
    tag = tag or tr.tag
    for step in range(1, steps + 1):
        if at_step is not None:
            at_step(step)
        if step == 2:
            tr.O.opobs_reset_peak()
            tr.reset_peak()
        tag("s%d.fwd" % step)
        loss = step_loss()
        tag("s%d.bwd" % step)
        tr.O.opobs_set_backward(1)
        loss.backward()
        tr.O.opobs_set_backward(0)
        del loss
        tr.read("backward-end")
        tag("s%d.opt" % step)
        opt.step()
        tr.read("step-end")
        tag("s%d.zero" % step)
        opt.zero_grad(set_to_none=True)
        tr.read("zero_grad-end")
        if after_step is not None:
            after_step(step)


def rounded(t):
    n = t.numel() * t.element_size()
    return 0 if n == 0 else max(512, (n + 511) // 512 * 512)


def cuda_main(args):
    """--device cuda: cudameasure.py.  Exit 2 with one line when there is no CUDA."""
    bad = [o for o, v in (("--per-op", args.per_op), ("--per-op-file", args.per_op_file),
                          ("--compat", args.compat), ("--hook", args.hook != "record")) if v]
    if bad:
        print("measure.py: --device cuda: %s applies to the CPU harness only" % ", ".join(bad), file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    sys.path.insert(0, HERE)
    import cudameasure
    if args.attention is None:
        args.attention = "auto"
    if args.mha_fastpath is None:
        args.mha_fastpath = "on"
    try:
        rc, result = cudameasure.measure(args, args.model)
    except cudameasure.Unavailable as e:
        print(str(e), file=sys.stderr)
        return 2
    if result is None:
        return rc
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(result["peak_allocated"])
    return rc


def resolve_device(args):
    """'cpu' or 'cuda', or a one-line message (exit 2)."""
    if args.device == "cpu":
        return "cpu"
    try:
        import torch
    except ImportError as e:
        return "measure.py: --device %s: cannot import torch (%s)" % (args.device, e)
    if args.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda"


def main(argv):
    args = parse_args(argv)
    device = resolve_device(args)
    if device not in ("cpu", "cuda"):
        print(device, file=sys.stderr)
        return 2
    if device == "cuda":
        return cuda_main(args)
    if args.precision not in ("fp32", "bf16"):
        print("measure.py: --precision %s needs --device cuda (torch 1.13's CPU autocast and fp16 kernels are "
              "not CUDA's; SPEC.md section 4)" % args.precision, file=sys.stderr)
        return 2
    if args.autograd_threads != "on" or args.conv_workspace:
        print("measure.py: --autograd-threads and --conv-workspace need --device cuda", file=sys.stderr)
        return 2
    if args.attention not in (None, "math"):
        print("measure.py: the CPU harness runs the math attention path; "
              "--attention other than math needs --device cuda", file=sys.stderr)
        return 2
    if args.compat is None:
        args.compat = "2x"
    reexec_with_preload()
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    sys.path.insert(0, HERE)
    import torch
    import torch.nn.functional as F
    import vctorch
    import optim2x

    try:
        vctorch.set_torch_release(args.torch_release)
    except ValueError as e:
        print("measure.py: --torch: %s" % e, file=sys.stderr)
        return 2
    if args.optim.startswith("adafactor") and vctorch.TORCH_RELEASE < (2, 5):
        # torch/optim/_adafactor.py: torch.optim.Adafactor is new in 2.5 (vramcalc refuses it too)
        print("measure.py: --optim %s: torch.optim.Adafactor is new in PyTorch 2.5 (--torch 2.5 or later)"
              % args.optim, file=sys.stderr)
        return 2
    vctorch.FASTPATH = args.mha_fastpath != "off"
    torch.manual_seed(args.seed)
    tr = Tracker()
    with open(args.model) as f:
        spec = json.load(f)

    log_steps = set(int(s) for s in args.per_op_steps.split(",") if s.strip())
    log_path = args.per_op_file
    tmp_log = None
    if args.per_op and not log_path:
        import tempfile
        fd, tmp_log = tempfile.mkstemp(suffix=".tsv")
        os.close(fd)
        log_path = tmp_log
    logging = bool(log_path)

    phase = ["build"]
    if logging:
        vctorch.HOOKS.layer = lambda path: tr.tag("%s %s" % (phase[0], path))
    vctorch.HOOKS.fused = tr.fused
    vctorch.HOOKS.read = tr.read

    dispatch_mode = None
    if args.hook == "dispatch":
        from torch.utils._python_dispatch import TorchDispatchMode

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, a=(), kw=None):
                r = func(*a, **(kw or {}))
                tr.read(str(func.overloadpacket.__name__))
                return r
        dispatch_mode = _Mode

    def set_phase(p):
        phase[0] = p
        tr.tag(p)

    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    import gc
    gc.collect()
    tr.start(install=(args.hook == "record"))
    tr.O.opobs_set_compat_2x(1 if args.compat == "2x" else 0)
    ctx = dispatch_mode() if dispatch_mode else contextlib.nullcontext()
    notes = []
    with ctx:
        try:
            module, make_inputs = vctorch.build(spec, compat=args.compat)
        except vctorch.ModelError as e:
            print("measure.py: %s: %s" % (args.model, e), file=sys.stderr)
            return 2
        if args.precision == "bf16":
            module.to(torch.bfloat16)
        shapes = None
        if args.input:
            if len(module.input_names) != 1:
                raise SystemExit("measure.py: --input needs a single-input model")
            shapes = {module.input_names[0]: [int(s) for s in args.input.replace("x", ",").split(",")]}
        inputs = make_inputs(args.batch, dtype=dtype, shapes=shapes)
        params = list(module.parameters())
        n_params = sum(p.numel() for p in params)
        n_train = sum(p.numel() for p in params if p.requires_grad)
        weights_bytes = sum(rounded(p) for p in params) + sum(rounded(b) for b in module.buffers())
        inputs_bytes = sum(rounded(x) for x in inputs)
        after_build = tr.O.opobs_current()

        targets = []

        def loss_step():
            # SPEC.md section 4's loop, written as one expression so that the model's
            # output is a temporary: `model(x).float().mean()` drops a 16-bit output
            # once .float() returned; cross_entropy keeps its argument (the fp32
            # logits) until it returns.  The int64 targets are made at step 1 (from
            # the output's shape) and stay resident, like the input batch.
            if module.loss_kind == "cross_entropy":
                if not targets:
                    logits = module(*inputs).float()
                    targets.append(torch.randint(0, logits.shape[-1], tuple(logits.shape[:-1]),
                                                 dtype=torch.int64))
                    targets.append(logits.shape[-1])
                    return F.cross_entropy(logits.reshape(-1, targets[1]), targets[0].reshape(-1))
                return F.cross_entropy(module(*inputs).float().reshape(-1, targets[1]),
                                       targets[0].reshape(-1))
            return module(*inputs).float().mean()

        opt = None
        steady = None
        if args.mode == "train":
            module.train()
            opt = optim2x.make(module.parameters(), args.optim)
            def log_open(step):
                if logging and step == min(log_steps | {10 ** 9}):
                    tr.O.opobs_log_open(log_path.encode())
                    tr.O.opobs_log_line(("model %s batch %d optim %s mode %s precision %s compat %s; "
                                         "columns: seq, phase [layer], op, bytes since before the "
                                         "model was built, delta" % (
                                             module.name, args.batch, args.optim, args.mode,
                                             args.precision, args.compat)).encode())

            def log_close(step):
                if logging and step == max(log_steps or {0}):
                    tr.O.opobs_log_close()

            train_steps(tr, loss_step, opt, args.steps, tag=set_phase, at_step=log_open, after_step=log_close)
            steady = tr.O.opobs_current()
        else:
            module.eval()
            with torch.no_grad():
                for step in (1, 2):
                    if logging and step == min(log_steps | {10 ** 9}):
                        tr.O.opobs_log_open(log_path.encode())
                        tr.O.opobs_log_line(("model %s batch %d mode infer precision %s compat %s; "
                                             "columns: seq, phase [layer], op, bytes since before "
                                             "the model was built, delta" % (
                                                 module.name, args.batch, args.precision,
                                                 args.compat)).encode())
                    if step == 2:
                        tr.O.opobs_reset_peak()
                        tr.reset_peak()
                    set_phase("f%d.fwd" % step)
                    out = module(*inputs)
                    del out
                    tr.read("forward-end")
                    if logging and step == max(log_steps or {0}):
                        tr.O.opobs_log_close()
            steady = tr.O.opobs_current()
    tr.O.opobs_log_close()

    peak = tr.O.opobs_peak()
    peak_alloc = tr.peak() - tr.base_total
    where = tr.O.opobs_peak_where().decode(errors="replace")
    if args.compat == "2x":
        notes.append("optimizer: PyTorch 2.x foreach step replicated with torch._foreach_* "
                     "(bench/accuracy/optim2x.py); state['step'] kept as a Python number "
                     "(a CPU tensor in 2.x, no device memory)")
        notes.append("dropout: 2.x CUDA native_dropout replica (bool mask) instead of 1.13 CPU's "
                     "float noise")
        notes.append("MultiheadAttention/Transformer*Layer: 2.x forward ported; SDPA = 2.x math "
                     "backend with %s's softmax (compare with vramcalc --attention math --torch %s)"
                     % (args.torch_release, args.torch_release))
        notes.append("inference fast paths (%s): CUDA's _native_multi_head_attention / "
                     "transformer_encoder_layer_forward written op for op from the 2.x source where "
                     "activation.py/transformer.py's conditions hold" %
                     ("on" if vctorch.FASTPATH else "OFF: set_fastpath_enabled(False), diagnosis only"))
        notes.append("mean.dim / global AdaptiveAvgPool: 2.x's MeanBackward1 (sizes only; 1.13 keeps "
                     "the input); 16-bit LayerNorm keeps fp32 mean/rstd as on CUDA; a convolution's "
                     "contiguous copy of a non-contiguous input is counted as CUDA counts it")
        notes.append("checkpoint: 2.x non-reentrant checkpoint with early stop ported (1.13 "
                     "recomputes the whole block)")
    else:
        notes.append("compat stock: torch 1.13 modules as they are (float dropout noise, 1.13 MHA)")
    notes.append("between-op readings via %s; each block rounded up to 512 B; "
                 "kernel-internal temporaries not counted; wrapped Python/C++ scalars (CPU "
                 "tensors on CUDA too) not counted" % (
                     "RecordFunction observer" if args.hook == "record" else "TorchDispatchMode"))
    if args.compat == "2x" and args.hook == "record":
        notes.append("autograd InputBuffer: 2.x accumulates a second gradient in place when the "
                     "buffer holds the only reference (1.13 always allocates old+new); the "
                     "reading after such an add is skipped")
    if args.hook == "dispatch":
        notes.append("TorchDispatchMode makes 1.13 take composite-compliant (out-of-place) paths")
    result = {
        "model": module.name,
        "batch": args.batch,
        "optim": args.optim if args.mode == "train" else "none",
        "mode": args.mode,
        "precision": args.precision,
        "peak_allocated": int(peak),
        "peak_where": where,
        "peak_allocator": int(peak_alloc),
        "params": int(n_params),
        "trainable_params": int(n_train),
        "weights_bytes": int(weights_bytes),
        "inputs_bytes": int(inputs_bytes),
        "after_build_bytes": int(after_build),
        "steady_bytes": int(steady) if steady is not None else None,
        "optimizer_state_bytes": int(sum(rounded(v) for st in opt.state.values() for v in st.values()
                                         if torch.is_tensor(v))) if opt else 0,
        "reads": int(tr.O.opobs_reads()),
        "wrapped_scalar_bytes_ignored": int(tr.O.opobs_forgotten()),
        "grad_accumulations": {"in_place_as_2x": int(tr.O.opobs_accum_inplace()),
                               "new_tensor": int(tr.O.opobs_accum_copy())},
        "compat": args.compat,
        "torch": torch.__version__,
        "torch_release": args.torch_release,
        "mha_fastpath": args.mha_fastpath,
        "notes": notes,
    }
    if args.per_op and tmp_log:
        with open(tmp_log) as f:
            sys.stdout.write(f.read())
        os.unlink(tmp_log)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(peak)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
