#!/usr/bin/python3
"""measure_quant.py -- bitsandbytes' allocations replayed with plain torch ops, measured on CPU.

    /usr/bin/python3 bench/accuracy/quant/measure_quant.py [--cli build/vramcalc] [--json] [--write]
    /usr/bin/python3 bench/accuracy/quant/measure_quant.py --compare --cli build/vramcalc

The first measures (torch), the bench command: exit 1 when a measurement differs from the
CLI's figure or from measured.json beside this script (--write stores them there: the file
to commit after a change to the replay). --compare (CTest quant_measured) reads
measured.json instead and only runs the CLI: no torch, under a second.

No bitsandbytes kernel runs on this machine (torch 1.13, CPU only), so this harness
replays, tensor by tensor, what bitsandbytes 0.50.1 allocates (github
bitsandbytes-foundation/bitsandbytes, tag 0.50.1) with torch ops of the same shapes and
dtypes, in the source's order, and measures the result with the accuracy harness's
allocation tracker (bench/accuracy/memtrack.c: c10's CPU allocations, each rounded up to
512 bytes as the CUDA caching allocator does). The kernels' arithmetic is not replayed
(the values are whatever torch.empty holds): only what is allocated, when, and for how long.

Cases (each is a vramcalc model: `proj` [F, F] quantized, `lm_head` [64, F] left in bf16,
input [R, F] bf16, inference; peaks are the accuracy harness's highest between-op reading,
libopobserver.so, as measure.py reports them):
  nf4-storage  Params4bit._quantize -> quantize_4bit(compress_statistics=True, blocksize 64):
               the bytes kept after loading (vramcalc: memory.weights)
  nf4-forward  + Linear4bit.forward -> matmul_4bit -> gemm_4bit -> _dequant_linear_fallback
               (R > 1536 rows, so the fallback on every GPU), then lm_head: the peak
               (vramcalc: memory.peak_allocated)
  nf4-single   the same without double quantization (compress_statistics=False)
  int8-storage Int8Params._quantize -> int8_vectorwise_quant: the bytes kept
  ct-forward   compressed-tensors' CompressedLinear (github neuralmagic/compressed-tensors @52792be0),
               FP8_DYNAMIC: from_linear registers weight_scale bf16 [F, 1] (initialize_qparams) and
               the float8_e4m3fn weight [F, F] (naive_quantized.py compression_param_info; replayed
               as uint8, the same bytes: torch 1.13 has no float8); the first forward decompresses
               (dequantize -> _dequantize: x_q.to(bf16) * scale) and registers the product as
               `weight`, the fp8 one dropped; then the harness's second forward, linear + lm_head
               (vramcalc --weights compressed-tensors: weights after the first forward, the peak)
  qlora-train  q (nf4 + LoRA r 8 as peft's lora.bnb.Linear4bit.forward), proj2 (nf4, through
               MatMul4Bit: its backward dequantizes), lm_head bf16; output.float().mean();
               SGD (foreach), zero_grad(set_to_none); steps 2-3
               (vramcalc --qlora --lora-targets q -o sgd)
With --cli, each case is compared with `vramcalc MODEL -m infer -p bf16 --weights W
--workspace 0 -f json` and the exit status is 1 when one differs.
"""

import argparse
import json
import os
import shutil
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


def dequantize_4bit(torch, B, qs):
    """functional.dequantize_4bit with a nested state: absmax = dequantize_blockwise(absmax, state2)
    (kernel: out = torch.empty_like(A, dtype=float32)); absmax += offset; out = the
    dequantize_4bit kernel's torch.empty(shape, dtype); absmax goes on return."""
    absmax = torch.empty_like(qs["absmax"], dtype=torch.float32)
    absmax += qs["offset"]
    return torch.empty(qs["shape"], dtype=qs["dtype"])


def matmul4bit_class(torch):
    class MatMul4Bit(torch.autograd.Function):
        """autograd/_functions.py MatMul4Bit (0.50.1): forward through gemm_4bit; ctx.tensors =
        (None, B) when an input needs grad; backward: grad_A = matmul(grad_output,
        dequantize_4bit(B, state).to(grad_output.dtype))."""

        @staticmethod
        def forward(ctx, A, B, qs):
            output = gemm_4bit(torch, A, B, qs)
            ctx.state = qs
            ctx.tensors = (None, B)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            _, B = ctx.tensors
            grad_A = torch.matmul(grad_output, dequantize_4bit(torch, B, ctx.state).to(grad_output.dtype))
            return grad_A, None, None
    return MatMul4Bit


def linear4bit(torch, MM, x, data, qs):
    """Linear4bit.forward -> matmul_4bit: MatMul4Bit.apply when grad is enabled and A requires
    grad, else gemm_4bit directly."""
    if torch.is_grad_enabled() and x.requires_grad:
        return MM.apply(x, data, qs)
    return gemm_4bit(torch, x, data, qs)


def run_train(torch, tr):
    """QLoRA: q (nf4 + LoRA r 8, fp32 adapters, as PEFT's lora.bnb.Linear4bit.forward runs it),
    proj2 (nf4), lm_head (bf16); loss output.float().mean(); SGD (foreach), zero_grad(set_to_none)."""
    name2qmap.clear()
    MM = matmul4bit_class(torch)
    base = tr.current()
    q_w, q_qs = quantize_4bit(torch, torch.empty((F, F), dtype=torch.bfloat16))
    lora_A = torch.nn.Linear(F, 8, bias=False)   # LoraLayer.update_layer: fp32 (autocast_adapter_dtype)
    lora_B = torch.nn.Linear(8, F, bias=False)
    p_w, p_qs = quantize_4bit(torch, torch.empty((F, F), dtype=torch.bfloat16))
    head = torch.nn.Linear(F, HEAD, bias=False).to(torch.bfloat16).requires_grad_(False)
    opt = torch.optim.SGD(list(lora_A.parameters()) + list(lora_B.parameters()), lr=0.1, foreach=True)
    x = torch.empty((R, F), dtype=torch.bfloat16)
    base_obs = tr.O.opobs_current() - (tr.current() - base)  # the observer's reading before the model was built
    for step in range(3):
        if step == 1:  # the protocol: the highest between-op reading over steps 2 and 3
            tr.O.opobs_reset_peak()
        result = linear4bit(torch, MM, x, q_w, q_qs)
        result = result.clone()                      # lora.bnb.Linear4bit.forward
        xa = x.to(lora_A.weight.dtype)               # _cast_input_dtype
        output = lora_B(lora_A(xa)) * 1.0            # lora_dropout 0: nn.Identity; * scaling
        output = output.to(result.dtype)
        result = result + output
        del xa, output
        h = linear4bit(torch, MM, result, p_w, p_qs)
        del result
        out = torch.nn.functional.linear(h, head.weight)
        del h
        loss = out.float().mean()
        del out
        loss.backward()
        del loss
        opt.step()
        opt.zero_grad(set_to_none=True)
    return {"weights": None, "peak": tr.O.opobs_peak() - base_obs}


# ---- the cases


def run_case(torch, tr, case):
    name2qmap.clear()
    base = tr.current()
    head = torch.empty((HEAD, F), dtype=torch.bfloat16)  # lm_head, left in bf16
    w = torch.empty((F, F), dtype=torch.bfloat16)          # the checkpoint's weight
    if case == "ct-forward":
        scale = torch.empty((F, 1), dtype=torch.bfloat16)  # weight_scale: initialize_qparams, the Linear's dtype
        del w                                                # from_linear: delattr(module, "weight")
        qw = torch.empty((F, F), dtype=torch.uint8)          # "weight" float8_e4m3fn [F, F] (1 byte an element)
        with torch.no_grad():
            x = torch.empty((R, F), dtype=torch.bfloat16)
            cast = qw.to(scale.dtype)                        # _dequantize: dequant_value = x_q.to(scale.dtype)
            weight = cast * scale                            # dequant_value * scale
            del cast, qw                                     # register_parameter("weight", ...) drops the fp8 one
            y = torch.nn.functional.linear(x, weight, None)  # the first forward
            z = torch.nn.functional.linear(y, head, None)
            del y, z
            out = {"weights": tr.current() - base - x.numel() * 2}  # head, weight_scale, the bf16 weight
            base_obs = tr.O.opobs_current() - (tr.current() - base)  # x counted in the peak, as below
            for _ in range(2):  # the harness's protocol, as below
                tr.O.opobs_reset_peak()
                y = torch.nn.functional.linear(x, weight, None)
                z = torch.nn.functional.linear(y, head, None)
                del y, z
            out["peak"] = tr.O.opobs_peak() - base_obs
        return out
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
        base_obs = tr.O.opobs_current() - (tr.current() - base)
        for _ in range(2):  # the harness's protocol: the second forward's highest between-op reading
            tr.O.opobs_reset_peak()
            y = gemm_4bit(torch, x, data, qs)
            z = torch.nn.functional.linear(y, head, None)
            del y, z
        out["peak"] = tr.O.opobs_peak() - base_obs
    return out


MODEL = {"name": "quant", "input": [R, F], "layers": [
    {"type": "Linear", "name": "proj", "in_features": F, "out_features": F, "bias": False},
    {"type": "Linear", "name": "lm_head", "in_features": F, "out_features": HEAD, "bias": False}]}

CASES = {"nf4-storage": "nf4", "nf4-forward": "nf4", "nf4-single": None, "int8-storage": "int8",
         "ct-forward": "compressed-tensors"}


def _cli_env():
    """The environment for the CLI: without this process's LD_PRELOAD (the allocator
    counter), which a sanitized vramcalc refuses (ASan must come first)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def vramcalc(cli, weights):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(MODEL, f)
    try:
        out = subprocess.run([cli, f.name, "-m", "infer", "-p", "bf16", "--weights", weights, "--workspace", "0",
                              "-f", "json"], check=True, capture_output=True, text=True, env=_cli_env()).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)["memory"]


def vramcalc_train(cli):
    layers = [{"type": "Linear", "name": "q", "in_features": F, "out_features": F, "bias": False},
              {**MODEL["layers"][0], "name": "proj2"}, MODEL["layers"][1]]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({**MODEL, "layers": layers}, f)
    try:
        out = subprocess.run([cli, f.name, "-p", "bf16", "--qlora", "--lora-targets", "q", "-o", "sgd", "--workspace", "0",
                              "-f", "json"], check=True, capture_output=True, text=True, env=_cli_env()).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)["memory"]


MEASURED = os.path.join(HERE, "measured.json")


def measure_all(torch, tr):
    """{case: {"weights": B, "peak": B}}: every case measured in this process."""
    out = {case: run_case(torch, tr, case) for case in CASES}
    out["qlora-train"] = {"peak": run_train(torch, tr)["peak"]}
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--cli", help="a vramcalc binary to compare with")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--compare", action="store_true",
                    help="compare the committed measurements (measured.json) instead of measuring")
    ap.add_argument("--write", action="store_true", help="store the measurements in measured.json")
    args = ap.parse_args(argv)
    if args.compare and (args.write or not args.cli):
        ap.error("--compare needs --cli and measures nothing (no --write)")
    if args.cli:  # a path, or a name on PATH (the docs check runs `--cli vramcalc`)
        args.cli = os.path.abspath(shutil.which(args.cli) or args.cli)
    if args.compare:
        with open(MEASURED) as f:
            measured = json.load(f)["cases"]
    else:
        measure.reexec_with_preload()
        import torch
        tr = measure.Tracker()
        tr.start(True)  # memtrack active, the between-op observer installed (measure.py's protocol)
        torch.set_num_threads(1)
        measured = measure_all(torch, tr)
        with open(MEASURED) as f:
            stale = json.load(f)["cases"] != measured
        if stale and not args.write:
            print("measure_quant.py: these measurements differ from measured.json (--write stores them)",
                  file=sys.stderr)
        if args.write:
            with open(MEASURED, "w") as f:
                json.dump({"source": "bench/accuracy/quant/measure_quant.py --write (torch %s, CPU)" % torch.__version__,
                           "cases": measured}, f, indent=1)
                f.write("\n")
    rows, bad = [], 0
    for case, fmt in CASES.items():
        m = measured[case]
        row = {"case": case, "measured": m}
        if args.cli and fmt:
            v = vramcalc(args.cli, fmt)
            row["vramcalc"] = {"weights": v["weights"], "peak": v["peak_allocated"]}
            for k in m:
                if m[k] != row["vramcalc"][k]:
                    bad += 1
        rows.append(row)
    row = {"case": "qlora-train", "measured": {"peak": measured["qlora-train"]["peak"]}}
    if args.cli:
        v = vramcalc_train(args.cli)
        row["vramcalc"] = {"peak": v["peak_allocated"]}
        bad += v["peak_allocated"] != row["measured"]["peak"]
    rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            for k, v in r["measured"].items():
                c = r.get("vramcalc", {}).get(k)
                print(f"{r['case']:14} {k:8} measured {v:>12,}" + (f"  vramcalc {c:>12,}  {'same' if c == v else 'DIFFERS'}"
                                                                 if c is not None else ""))
    return 1 if bad or (not args.compare and stale and not args.write) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
