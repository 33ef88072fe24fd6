#!/usr/bin/python3
"""measure_quant.py -- bitsandbytes' allocations replayed with plain torch ops, measured on CPU.

    /usr/bin/python3 bench/accuracy/quant/measure_quant.py [--cli build/vramcalc] [--json]

No bitsandbytes kernel runs on this machine (torch 1.13, CPU only), so this harness
replays, tensor by tensor, what bitsandbytes 0.50.1 allocates (github
bitsandbytes-foundation/bitsandbytes, tag 0.50.1) with torch ops of the same shapes and
dtypes, in the source's order, and measures the result with the accuracy harness's
allocation tracker (bench/accuracy/memtrack.c: c10's CPU allocations, each rounded up to
512 bytes as the CUDA caching allocator does). The kernels' arithmetic is not replayed
(the values are whatever torch.empty holds): only what is allocated, when, and for how long.

Cases (each is a vramcalc model: `proj` [F, F] quantized, `lm_head` [64, F] left in bf16,
input [R, F] bf16, inference):
  nf4-storage  Params4bit._quantize -> quantize_4bit(compress_statistics=True, blocksize 64):
               the bytes kept after loading (vramcalc: memory.weights)
  nf4-forward  + Linear4bit.forward -> matmul_4bit -> gemm_4bit -> _dequant_linear_fallback
               (R > 1536 rows, so the fallback on every GPU), then lm_head: the peak
               (vramcalc: memory.peak_allocated)
  nf4-single   the same without double quantization (compress_statistics=False)
  int8-storage Int8Params._quantize -> int8_vectorwise_quant: the bytes kept
With --cli, each case is compared with `vramcalc MODEL -m infer -p bf16 --weights W
--workspace 0 -f json` and the exit status is 1 when one differs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import measure  # noqa: E402  bench/accuracy/measure.py: Tracker, reexec_with_preload

F, R, HEAD = 1024, 2048, 64
name2qmap = {}  # functional.py's module-level cache


# ---- functional.py (0.50.1), shapes from backends/cuda/ops.py


def create_dynamic_map(torch):
    """create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): 256 values, a new tensor."""
    return torch.tensor([float(i) / 255 for i in range(256)])


def get_4bit_type(torch):
    """get_4bit_type('nf4'): torch.tensor(16 values) then data.div_(data.abs().max())."""
    data = torch.tensor([-1.0 + i / 7.5 for i in range(16)])
    data.div_(data.abs().max())
    return data


def quantize_blockwise(torch, A, blocksize):
    if "dynamic" not in name2qmap:
        name2qmap["dynamic"] = create_dynamic_map(torch)
    code = name2qmap["dynamic"]
    # kernel quantize_blockwise: A.contiguous(); absmax = empty((blocks,)); out = empty_like(A, uint8)
    A = A.contiguous()
    n = A.numel()
    blocks = -(n // -blocksize)
    absmax = torch.empty((blocks,), dtype=torch.float32)
    out = torch.empty_like(A, dtype=torch.uint8)
    # QuantState(absmax=_absmax, code=code.to(A.device, copy=True), ...)
    return out, {"absmax": absmax, "code": code.clone(), "blocksize": blocksize}


def quantize_4bit(torch, A, blocksize=64, compress_statistics=True):
    A = A.contiguous()
    n = A.numel()
    blocks = -(n // -blocksize)
    # kernel quantize_4bit: absmax = empty((blocks,)), out = empty(((n + 1) // (itemsize * 2), 1))
    _absmax = torch.empty((blocks,), dtype=torch.float32).uniform_(0.5, 1.0)
    _out = torch.empty(((n + 1) // 2, 1), dtype=torch.uint8)
    code = get_4bit_type(torch)
    if compress_statistics:
        offset = _absmax.mean()
        qabsmax, state2 = quantize_blockwise(torch, _absmax - offset, blocksize=256)
        del _absmax
        return _out, {"absmax": qabsmax, "code": code, "offset": offset, "state2": state2, "blocksize": blocksize,
                      "shape": A.shape, "dtype": A.dtype}
    return _out, {"absmax": _absmax, "code": code, "blocksize": blocksize, "shape": A.shape, "dtype": A.dtype}


def gemm_4bit(torch, A, B, qs):
    """Linear4bit.forward -> matmul_4bit (no grad) -> the gemm_4bit kernel: M > 1536 rows ->
    _dequant_linear_fallback(A, B, shapeB, absmax, blocksize, quant_type, bias,
    absmax_8bit, absmax_code, absmax_offset)."""
    nested = "state2" in qs
    absmax = qs["state2"]["absmax"] if nested else qs["absmax"]
    if nested:
        absmax_8bit, absmax_offset = qs["absmax"], qs["offset"]
        absmax_dq = torch.empty_like(absmax_8bit, dtype=torch.float32)  # filled by _dequantize_blockwise_impl(out=)
        absmax = absmax_dq + absmax_offset
    B_dq = torch.empty(qs["shape"], dtype=A.dtype)  # filled by _dequantize_4bit_impl(out=)
    return torch.nn.functional.linear(A, B_dq, None)


def int8_vectorwise_quant(torch, A):
    # kernel int8_vectorwise_quant: row_stats = empty(rows, fp32); out_row = empty(A.shape, int8)
    rows = A.numel() // A.shape[-1]
    row_stats = torch.empty(rows, dtype=torch.float32)
    out_row = torch.empty(A.shape, dtype=torch.int8)
    return out_row, row_stats, None


# ---- the cases


def run_case(torch, tr, case):
    name2qmap.clear()
    base = tr.current()
    head = torch.empty((HEAD, F), dtype=torch.bfloat16)  # lm_head, left in bf16
    w = torch.empty((F, F), dtype=torch.bfloat16)          # the checkpoint's weight
    if case.startswith("int8"):
        B = w.contiguous().to(dtype=torch.float16)           # Int8Params._quantize
        CB, SCB, _ = int8_vectorwise_quant(torch, B)
        del B, w
        return {"weights": tr.current() - base}  # CB, SCB and head live
    data, qs = quantize_4bit(torch, w, 64, compress_statistics=case != "nf4-single")  # Params4bit._quantize
    del w
    weights = tr.current() - base
    out = {"weights": weights}
    if case == "nf4-storage":
        return out
    with torch.no_grad():
        x = torch.empty((R, F), dtype=torch.bfloat16)
        for _ in range(2):  # the harness's protocol: the second forward's peak
            tr.reset_peak()
            y = gemm_4bit(torch, x, data, qs)
            z = torch.nn.functional.linear(y, head, None)
            del y, z
        out["peak"] = tr.peak() - base
    return out


MODEL = {"name": "quant", "input": [R, F], "layers": [
    {"type": "Linear", "name": "proj", "in_features": F, "out_features": F, "bias": False},
    {"type": "Linear", "name": "lm_head", "in_features": F, "out_features": HEAD, "bias": False}]}

CASES = {"nf4-storage": "nf4", "nf4-forward": "nf4", "nf4-single": None, "int8-storage": "int8"}


def vramcalc(cli, weights):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(MODEL, f)
    try:
        out = subprocess.run([cli, f.name, "-m", "infer", "-p", "bf16", "--weights", weights, "--workspace", "0",
                              "-f", "json"], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)["memory"]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--cli", help="a vramcalc binary to compare with")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.cli:
        args.cli = os.path.abspath(args.cli)
    measure.reexec_with_preload()
    import torch
    tr = measure.Tracker()
    if not tr.M.memtrack_active():
        raise SystemExit("measure_quant.py: memtrack does not see libc10.so")
    torch.set_num_threads(1)
    rows, bad = [], 0
    for case, fmt in CASES.items():
        m = run_case(torch, tr, case)
        row = {"case": case, "measured": m}
        if args.cli and fmt:
            v = vramcalc(args.cli, fmt)
            row["vramcalc"] = {"weights": v["weights"], "peak": v["peak_allocated"]}
            for k in m:
                if m[k] != row["vramcalc"][k]:
                    bad += 1
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            for k, v in r["measured"].items():
                c = r.get("vramcalc", {}).get(k)
                print(f"{r['case']:14} {k:8} measured {v:>12,}" + (f"  vramcalc {c:>12,}  {'same' if c == v else 'DIFFERS'}"
                                                                 if c is not None else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
