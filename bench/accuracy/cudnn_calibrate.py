#!/usr/bin/python3
"""cudnn_calibrate.py -- each convolution's cuDNN workspace on this GPU, as a table
vramcalc reads with --cudnn-table (docs/context.md "cuDNN workspaces", issue 27 item 2).

    python3 bench/accuracy/cudnn_calibrate.py MODEL.json --batch N [--batch M ...]
        [--precision fp32|bf16|fp16|amp-bf16|amp-fp16] [--cli build/vramcalc] -o TABLE.json
    python3 bench/accuracy/cudnn_calibrate.py MODEL.json --batch N --dry-run

Run once on a machine with the GPU, with a CUDA build of PyTorch 2.x. For each
convolution of the model (built with tools/vctorch.py, compat="stock": PyTorch's own
nn.Conv1d/2d/3d), at each batch, it asks cuDNN through PyTorch for the workspace of the
three calls a training step makes:

  fwd         the convolution's forward (torch.nn.functional.conv*d, no autograd);
  bwd_data    torch.ops.aten.convolution_backward with output_mask [True, False, False]:
              the input's gradient (raw_cudnn_convolution_backward_input_out);
  bwd_filter  the same with [False, True, False]: the weight's gradient
              (raw_cudnn_convolution_backward_weight_out).

PyTorch's v8 path (aten/src/ATen/native/cudnn/Conv_v8.cpp, run_conv_plan) allocates the
workspace from the caching allocator for the call and frees it after, so it is the
call's max_memory_allocated() above what was allocated before, less the call's result
(rounded to the allocator's 512-byte blocks). Each call runs twice and the second is
recorded: the first runs cuDNN's heuristics and caches the plan (benchmark_cache), the
steady state a training step sees. torch.backends.cudnn.benchmark stays False (vramcalc
models the heuristics' first engine).

Convolutions are matched to vramcalc's by their order in the forward: `vramcalc MODEL
--trace` lists the layer path of every convolution's output in forward order, and the
PyTorch model's conv modules are called in the same order (a forward pre-hook records
each input's shape). A different count stops the script (exit 2): the table would name
the wrong layers. A layer path that runs a convolution twice (a module called twice) gets
one row, the larger workspaces.

--dry-run: build the model on the CPU, match the convolutions and print them (path,
input shape); nothing is measured and no table is written (CTest cudnn_calibrate_dryrun).
"""

import argparse
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PRECISIONS = ("fp32", "bf16", "fp16", "amp-bf16", "amp-fp16")


def fail(msg):
    print("cudnn_calibrate.py: " + msg, file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="vramcalc model JSON")
    ap.add_argument("-b", "--batch", type=int, action="append", required=True, help="a batch (repeatable)")
    ap.add_argument("-p", "--precision", default="fp32", choices=PRECISIONS)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"))
    ap.add_argument("-o", "--output", help="the table to write (JSON)")
    ap.add_argument("--dry-run", action="store_true", help="CPU: match the convolutions, measure nothing")
    a = ap.parse_args(argv)
    if any(b < 1 for b in a.batch):
        fail("--batch: a positive integer")
    if not a.dry_run and not a.output:
        fail("-o TABLE.json is needed (or --dry-run)")
    return a


def vramcalc_convs(cli, model, batch, precision):
    """The layer paths of the model's convolutions in forward order (vramcalc --trace: the
    forward's `alloc` of each convolution's output)."""
    p = subprocess.run([cli, model, "--batch", str(batch), "--precision", precision, "--trace"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1):
        fail("vramcalc --trace failed: " + p.stderr.strip())
    paths = []
    for line in p.stdout.splitlines():
        if line.startswith("-- end of forward"):
            break
        f = line.split()
        # forward alloc act BYTES TOTAL PATH convolution (a contiguous copy is a temp, not act)
        if len(f) >= 7 and f[0] == "forward" and f[1] == "alloc" and f[2] == "act" and f[-1] == "convolution":
            paths.append(f[-2])
    return paths


def dtype_of(torch, precision):
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "amp-bf16": torch.bfloat16,
            "fp16": torch.float16, "amp-fp16": torch.float16}[precision]


def record_convs(torch, module, inputs):
    """(conv module, input shape) in the order the forward calls them."""
    seen = []
    hooks = [m.register_forward_pre_hook(lambda m, args: seen.append((m, tuple(args[0].shape))))
             for m in module.modules() if isinstance(m, torch.nn.modules.conv._ConvNd)]
    with torch.no_grad():
        module(*inputs)
    for h in hooks:
        h.remove()
    return seen


def rounded(t):
    n = t.numel() * t.element_size()
    return 0 if n == 0 else max(512, (n + 511) // 512 * 512)


def measure(torch, conv, shape, dtype):
    """fwd, bwd_data, bwd_filter workspace bytes of one convolution at one input shape."""
    dev = torch.device("cuda")
    if conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        raise RuntimeError("padding %r / mode %r: not measured (vramcalc's model files use numeric zero padding)"
                           % (conv.padding, conv.padding_mode))
    x = torch.randn(shape, device=dev, dtype=dtype)
    w = conv.weight.detach().to(device=dev, dtype=dtype)
    nd = w.dim() - 2
    args = (list(conv.stride), list(conv.padding), list(conv.dilation), bool(getattr(conv, "transposed", False)),
            list(conv.output_padding), conv.groups)

    def peak_above(fn):
        best = None
        for _ in range(2):  # the second call: cuDNN's plan cached (benchmark_cache)
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            out = fn()
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
            res = sum(rounded(t) for t in out if t is not None)
            best = max(0, peak - before - res)
            del out
        return best

    conv_fn = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}[nd]
    with torch.no_grad():
        fwd = peak_above(lambda: (conv_fn(x, w, None, conv.stride, conv.padding, conv.dilation, conv.groups),))
        y = conv_fn(x, w, None, conv.stride, conv.padding, conv.dilation, conv.groups)
        g = torch.randn_like(y)
        del y
        cb = torch.ops.aten.convolution_backward
        bd = peak_above(lambda: cb(g, x, w, None, *args, [True, False, False]))
        bf = peak_above(lambda: cb(g, x, w, None, *args, [False, True, False]))
    return fwd, bd, bf


def main(argv):
    a = parse_args(argv)
    try:
        import torch
    except ImportError as e:
        fail("cannot import torch (%s)" % e)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import vctorch
    if not a.dry_run and not torch.cuda.is_available():
        fail("no CUDA device (run it on the GPU the table is for; --dry-run checks the matching on the CPU)")
    with open(a.model) as f:
        spec = json.load(f)
    module, make_inputs = vctorch.build(spec, compat="stock")
    dtype = dtype_of(torch, a.precision)
    rows, meta = {}, {}
    for batch in a.batch:
        paths = vramcalc_convs(a.cli, a.model, batch, a.precision)
        inputs = make_inputs(batch)
        seen = record_convs(torch, module.eval(), inputs)
        if len(seen) != len(paths):
            fail("%s: vramcalc runs %d convolutions at batch %d, the PyTorch model %d: the layers cannot be matched"
                 % (a.model, len(paths), batch, len(seen)))
        for path, (conv, shape) in zip(paths, seen):
            if a.dry_run:
                print("%-40s batch %-5d input %s" % (path, batch, "x".join(str(d) for d in shape)))
                continue
            conv.to("cuda")
            ws = measure(torch, conv, shape, dtype)
            conv.to("cpu")
            key = (path, batch)
            old = rows.get(key, (0, 0, 0))
            rows[key] = tuple(max(p, q) for p, q in zip(old, ws))
            print("%-40s batch %-5d fwd %12d  bwd_data %12d  bwd_filter %12d" % ((path, batch) + rows[key]),
                  file=sys.stderr)
    if a.dry_run:
        return 0
    meta = {"gpu": torch.cuda.get_device_name(0), "cudnn": torch.backends.cudnn.version(), "torch": torch.__version__}
    table = {"format": "vramcalc-cudnn-table-1", "precision": a.precision, "gpu": meta["gpu"], "cudnn": meta["cudnn"],
             "torch": meta["torch"], "model": a.model, "command": " ".join(["cudnn_calibrate.py"] + argv),
             "convolutions": [{"layer": p, "batch": b, "fwd": w[0], "bwd_data": w[1], "bwd_filter": w[2]}
                              for (p, b), w in rows.items()]}
    with open(a.output, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    print("cudnn_calibrate.py: %d rows -> %s" % (len(rows), a.output), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
