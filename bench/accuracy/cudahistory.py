"""cudahistory.py -- what the caching allocator held at the peak of a CUDA measurement.

For diagnosis only: when VRAMCALC_CUDA_HISTORY=FILE is set, cudameasure.py records the
caching allocator's history over the measured step (torch.cuda.memory._record_memory_history,
PyTorch 2.1+, with Python and C++ stacks) and this module writes FILE: the live blocks at the
step's peak, largest first, each with its size and the innermost frames that allocated it
(the C++ frames name the kernel's own scratch: cuDNN's workspace, a reduction's global
buffer, a cuBLAS workspace), and the events just before the peak.

The running total follows the allocator's allocated_bytes statistic: it goes up at an
"alloc" trace entry and down at "free_requested" (CUDACachingAllocator.cpp, free(): the
statistic is decreased before any stream-use events are waited for), sizes being the
blocks' rounded sizes. Blocks allocated before recording began are counted in the
starting total (memory_allocated() at the start), not listed.
"""

import sys

KEEP_FRAMES = 8
# frames every allocation shares (the unwinder, the allocator, empty_* and the dispatcher's
# wrappers): skipped, so that the ones kept name the operator and the Python line
BOILERPLATE = ("unwind", "CapturedTraceback", "gather_with_cpp", "CachingAllocator", "empty_generic",
               "empty_strided_generic", "empty_cuda", "empty_strided_cuda", "empty_like", "create_out",
               "wrap_kernel", "RegisterCUDA", "_ops::", "call_functor", "boxed", "redispatch",
               "ADInplaceOrView", "TraceType", "VariableType", "Dispatcher", "callUnboxed")


def start(torch):
    """Begin recording; returns the allocated bytes at the start."""
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="all")
    return torch.cuda.memory_allocated()


def _frames(entry):
    out = []
    for fr in entry.get("frames") or []:
        name = fr.get("name", "?")
        fn = fr.get("filename", "?")
        if fn.endswith("cudahistory.py") or "CUDACachingAllocator" in fn or any(b in name for b in BOILERPLATE):
            continue
        if fn.startswith("??") and name.startswith("??"):
            continue
        out.append("%s:%s %s" % (fn.rsplit("/", 1)[-1], fr.get("line", "?"), name[:120]))
        if len(out) >= KEEP_FRAMES:
            break
    return out


def stop(torch, start_bytes, path, label):
    """Stop recording and write the summary to path."""
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    dev = torch.cuda.current_device()
    trace = snap["device_traces"][dev]
    cur, best, best_i = start_bytes, start_bytes, -1
    live = {}
    best_live = {}
    for i, e in enumerate(trace):
        act = e.get("action")
        if act == "alloc":
            cur += e["size"]
            live[e["addr"]] = e
            if cur > best:
                best, best_i = cur, i
                best_live = dict(live)
        elif act == "free_requested":
            cur -= e["size"]
            live.pop(e["addr"], None)
    with open(path, "a") as f:
        w = f.write
        w("=== %s\n" % label)
        w("allocated at the start %d; peak %d at event %d of %d; %d blocks allocated in the step live there\n"
          % (start_bytes, best, best_i, len(trace), len(best_live)))
        for e in sorted(best_live.values(), key=lambda e: -e["size"])[:30]:
            w("  live %12d  %s\n" % (e["size"], " | ".join(_frames(e))))
        w("-- the 40 events before the peak\n")
        for e in trace[max(0, best_i - 39):best_i + 1]:
            fr = _frames(e)
            w("  %-15s %12d  %s\n" % (e.get("action"), e.get("size", 0), " | ".join(fr[:5])))
    print("cudahistory: wrote %s (%s)" % (path, label), file=sys.stderr)
