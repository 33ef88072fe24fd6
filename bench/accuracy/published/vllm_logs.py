#!/usr/bin/env python3
"""vramcalc --serve against vLLM start-up logs that people published (issue 13,
item 4 "serving capacity" and its "Truth" item; docs/inference.md, "Published
vLLM logs").

vLLM prints at start-up what its memory profiling found: the weights ("Loading
model weights took X GB" in V0, "Model loading took X GiB" in V1; both are
GiB: V0's model_runner.py divides by float(2**30) and calls it GB), the KV cache
pool (V0 "kv_cache_size=", "available_kv_cache_memory"; V1 "Available KV cache
memory: X GiB"), its blocks or tokens (V0 "# GPU blocks: N", V1 "GPU KV cache
size: N tokens") and "Maximum concurrency for L tokens per request: Xx". Each row
below is one such log, quoted verbatim, with the URL (issue or PR comment, or the
repository file) it comes from and the setting it states or implies. Rows are
kept only where the model, the card, gpu_memory_utilization, max_model_len and
the version (V0 or V1) are stated; what the row takes from vLLM's defaults is
said in its "defaults" field with the source line that sets it.

The card's total: vLLM multiplies torch.cuda.mem_get_info()'s total (what the
CUDA driver reports, less than nvidia-smi's) by gpu_memory_utilization. Where the
log prints that total (V0's "total_gpu_memory=", PR 10511's table), vramcalc is
given it as --gpu SIZE; otherwise the preset (--list-gpus), and the row says so.

How vLLM prints the concurrency (so vramcalc's blocks are compared the same way):
  V0 (vllm/executor/executor_base.py initialize_cache, v0.6.4):
      num_gpu_blocks * block_size / max_model_len
  V1 (vllm/v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config):
      num_blocks / cdiv(max_model_len, block_size)

Usage: vllm_logs.py --cli build/vramcalc [--markdown] [--bound PCT]
Exit 1 when a row's KV cache pool (the rows with "bound": True) is off by more
than --bound percent, or a parameter count differs from the model card's.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
GIB = 2 ** 30

# config -> parameters on the model card (sum of p.numel() of the checkpoint)
CONFIGS = {
    "tests/data/hf/llama-3.1-8b.json": 8030261248,  # meta-llama/Llama-3.1-8B: 8.03B
    "bench/accuracy/published/configs/meta-llama-3-8b.json": 8030261248,  # meta-llama/Meta-Llama-3-8B: 8.03B
}

ROWS = [
    {
        "name": "Llama-3.1-8B-Instruct, RTX 3090, max_model_len 20000",
        "url": "https://github.com/vllm-project/vllm/issues/10517 (comment by kaspersiminski, 2024-12-02, \"20k - OK\")",
        "quote": [
            "Loading model weights took 14.9888 GB",
            "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB "
            "peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB "
            "kv_cache_size=3.81GiB gpu_memory_utilization=0.90",
            "GPU blocks: 1952, # CPU blocks: 2048",
            "Maximum concurrency for 20000 tokens per request: 1.56x",
        ],
        "engine": "V0", "version": "V0, v0.6.4 (that release's \"Memory profiling results:\" line; the comment does not name it)",
        "config": "tests/data/hf/llama-3.1-8b.json", "gpu": "23.58GiB", "preset": "rtx3090",
        "util": 0.90, "max_model_len": 20000, "mnbt": 20000, "mns": 256, "tp": 1, "args": [],
        "defaults": "max_num_batched_tokens = max(max_model_len, 2048) without chunked prefill (V0 vllm/config.py "
                    "SchedulerConfig.__post_init__; chunked prefill is on by default only past 32k), max_num_seqs 256 "
                    "(V0 EngineArgs); dtype auto = the config's bfloat16",
        "act": 17.06 - 14.9888, "weights": 14.9888, "kv": 3.81, "blocks": 1952, "concurrency": 1.56, "non_torch": 0.35, "bound": True,
    },
    {
        "name": "Llama-3.1-8B-Instruct, RTX 3090, max_model_len 29000",
        "url": "https://github.com/vllm-project/vllm/issues/10517 (comment by kaspersiminski, 2024-12-02, \"29k - BAD\")",
        "quote": [
            "Loading model weights took 14.9888 GB",
            "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB "
            "peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB "
            "kv_cache_size=2.89GiB gpu_memory_utilization=0.90",
            "# GPU blocks: 1478, # CPU blocks: 2048",
            "Maximum concurrency for 29000 tokens per request: 0.82x",
            "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in "
            "KV cache (23648).",
        ],
        "engine": "V0", "version": "V0, v0.6.4 (as above)",
        "config": "tests/data/hf/llama-3.1-8b.json", "gpu": "23.58GiB", "preset": "rtx3090",
        "util": 0.90, "max_model_len": 29000, "mnbt": 29000, "mns": 256, "tp": 1, "args": [],
        "defaults": "as the row above",
        "act": 17.98 - 14.9888, "weights": 14.9888, "kv": 2.89, "blocks": 1478, "concurrency": 0.82, "non_torch": 0.35, "bound": True,
    },
    {
        "name": "Meta-Llama-3-8B, H100 80GB, max_model_len 8192 (default)",
        "url": "https://github.com/vllm-project/vllm/pull/10511 (comment by youkaichao, 2024-12-14, "
               "\"$ vllm serve meta-llama/Meta-Llama-3-8B\")",
        "quote": [
            "total_gpu_memory     79.22GiB",
            "gpu_memory_utilization       0.90",
            "the current vLLM instance can use    71.29GiB",
            "model weights take   14.96GiB",
            "non_torch_memory     1.79GiB",
            "PyTorch activation peak memory       1.26GiB",
            "available_kv_cache_memory    53.29GiB",
        ],
        "engine": "V0", "version": "V0, the PR's branch (v0.6.4.post2 + the overhaul; v0.6.5)",
        "config": "bench/accuracy/published/configs/meta-llama-3-8b.json", "gpu": "79.22GiB", "preset": "h100-80gb",
        "util": 0.90, "max_model_len": 8192, "mnbt": 8192, "mns": 256, "tp": 1, "args": [],
        "defaults": "max_model_len = the config's max_position_embeddings 8192; max_num_batched_tokens = "
                    "max(8192, 2048) (V0 SchedulerConfig.__post_init__), max_num_seqs 256",
        "act": 1.26, "weights": 14.96, "kv": 53.29, "blocks": None, "concurrency": None, "non_torch": 1.79, "bound": True,
    },
    {
        "name": "Meta-Llama-3-8B, 2 x H100 80GB, tensor_parallel_size 2",
        "url": "https://github.com/vllm-project/vllm/pull/10511 (same comment, \"$ vllm serve meta-llama/Meta-Llama-3-8B -tp 2\")",
        "quote": [
            "total_gpu_memory     79.22GiB",
            "the current vLLM instance can use    71.29GiB",
            "model weights take   7.48GiB",
            "non_torch_memory     3.58GiB",
            "PyTorch activation peak memory       1.26GiB",
        ],
        "engine": "V0", "version": "as above",
        "config": "bench/accuracy/published/configs/meta-llama-3-8b.json", "gpu": "79.22GiB", "preset": "h100-80gb",
        "util": 0.90, "max_model_len": 8192, "mnbt": 8192, "mns": 256, "tp": 2, "args": [],
        "defaults": "as above",
        "act": 1.26, "weights": 7.48, "kv": None, "blocks": None, "concurrency": None, "non_torch": 3.58, "bound": False,
        "outside": "the available_kv_cache_memory line is not in the stored text of the comment (cut); the weights "
                   "per GPU only",
    },
    {
        "name": "Llama-3.1-8B, 22.07 GiB card (OCI AI Quick Actions), max_model_len 131072",
        "url": "https://github.com/oracle-samples/oci-data-science-ai-samples/blob/main/ai-quick-actions/"
               "troubleshooting-tips.md (\"The model supports large context length and there is not enough room "
               "for creating KV cache\")",
        "quote": [
            "Loading model weights took 14.9888 GB",
            "the current vLLM instance can use total_gpu_memory (22.07GiB) x gpu_memory_utilization (0.90) = 19.86GiB",
            "model weights take 14.99GiB; non_torch_memory takes 0.05GiB; PyTorch activation peak memory takes "
            "0.22GiB; the rest of the memory reserved for KV Cache is 4.60GiB.",
            "# CUDA blocks: 2356, # CPU blocks: 2048",
            "Maximum concurrency for 131072 tokens per request: 0.29x",
        ],
        "engine": "V0", "version": "V0, v0.7 (worker.py and executor_base.py lines of that format; not named)",
        "config": "tests/data/hf/llama-3.1-8b.json", "gpu": "22.07GiB", "preset": None,
        "util": 0.90, "max_model_len": 131072, "mnbt": 2048, "mns": 256, "tp": 1, "args": [],
        "defaults": "the page does not name the model: 14.9888 GiB of weights and 131072 positions are "
                    "Llama-3.1-8B's (the rotary table above included); past 32k tokens V0 turns chunked prefill on "
                    "(EngineArgs), and then max_num_batched_tokens is 2048 (SchedulerConfig.__post_init__); "
                    "max_num_seqs 256",
        "act": 0.22, "weights": 14.9888, "kv": 4.60, "blocks": 2356, "concurrency": 0.29, "non_torch": 0.05,
        "bound": True,
    },
    {
        "name": "Llama-3.1-8B-Instruct, A100 40GB (GCE a2-highgpu-1g), max_model_len 131072, enforce_eager",
        "url": "https://github.com/ilseokoh/vllm-gce/blob/main/README.md (\"출력 예시\", the output of test.py: "
               "LLM(model, gpu_memory_utilization=0.9), enforce_eager=True)",
        "quote": [
            "Initializing a V1 LLM engine (v0.15.1) with config: ... dtype=torch.bfloat16, max_seq_len=131072, ... "
            "tensor_parallel_size=1, ... quantization=None, enforce_eager=True, ... kv_cache_dtype=auto",
            "Chunked prefill is enabled with max_num_batched_tokens=8192.",
            "Model loading took 14.99 GiB memory and 6.720924 seconds",
            "Available KV cache memory: 19.28 GiB",
            "GPU KV cache size: 157,936 tokens",
            "Maximum concurrency for 131,072 tokens per request: 1.20x",
        ],
        "engine": "V1", "version": "V1, v0.15.1 (stated), eager: no CUDA graphs",
        "config": "tests/data/hf/llama-3.1-8b.json", "gpu": "39.39GiB", "preset": "a100-40gb",
        "util": 0.90, "max_model_len": 131072, "mnbt": 8192, "mns": 256, "tp": 1, "args": ["-p", "bf16", "--enforce-eager"],
        "defaults": "max_num_seqs 256: vllm/engine/arg_utils.py EngineArgs.get_batch_defaults, LLM_CLASS on a card "
                    "under 70 GiB. The log does not print the card's CUDA total: 39.39 GiB is what PyTorch reports "
                    "for an A100 40GB (\"GPU 0; 39.39 GiB total capacity\" in its out-of-memory messages, the same "
                    "cudaMemGetInfo total that vLLM's mem_get_info reads); the a100-40gb preset is nvidia-smi's 40 GiB",
        "weights": 14.99, "kv": 19.28, "tokens": 157936, "concurrency": 1.20, "non_torch": None, "bound": True,
    },
]


def run(cli, args):
    p = subprocess.run([cli] + args + ["-f", "json"], capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        raise SystemExit("vramcalc %s: %s" % (" ".join(args), p.stderr.strip()))
    return json.loads(p.stdout)


def vramcalc(cli, row):
    args = [row["config"], "--serve", "--gpu", row["gpu"], "--gpu-memory-utilization", str(row["util"]),
            "--max-num-batched-tokens", str(row["mnbt"]), "--max-num-seqs", str(row["mns"]),
            # the request only sets vramcalc's concurrency, recomputed below as the version prints it
            "--prompt", "8", "--new-tokens", "8"] + row["args"]
    if row["tp"] > 1:
        args += ["--tp", str(row["tp"]), "--gpus", str(row["tp"])]
    # every row's version predates v0.21.0, whose default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1) takes the CUDA
    # graphs' measure off the pool, vramcalc's default too (src/engine/serve.c): V0 captures its graphs after sizing
    # the cache and subtracts nothing for them, V1 before v0.21.0 only when opted in; the eager row has none
    if "--enforce-eager" not in row["args"]:
        args += ["--cuda-graph-memory", "0"]
    return run(cli, args)["serve"]


def concurrency(row, blocks):
    if row["engine"] == "V0":
        return blocks * 16 / row["max_model_len"]
    return blocks / -(-row["max_model_len"] // 16)


def pct(est, pub):
    return None if pub is None else 100.0 * (est - pub) / pub


def fmt(v, f="%.2f"):
    return "-" if v is None else f % v


def compare(cli, row):
    """vramcalc's figures for one row and their errors against the log."""
    r = vramcalc(cli, row)
    c = {"weights": r["weights"] / GIB, "act": (r["profile_peak"] - r["weights"]) / GIB, "kv": r["kv_cache"] / GIB,
         "blocks": r["blocks"]}
    c["conc"] = concurrency(row, r["blocks"])
    c["pub_blocks"] = row.get("blocks")
    if c["pub_blocks"] is None and row.get("tokens") is not None:
        c["pub_blocks"] = row["tokens"] // 16  # GPU KV cache size = num_blocks x block_size (16)
    c["e_w"] = pct(c["weights"], row["weights"])
    c["e_kv"] = pct(c["kv"], row["kv"])
    # the pool less the non-torch memory the log prints, in place of vramcalc's (V1's non_torch_increase,
    # serve.non_torch_increase): those V0 versions count the whole non-torch memory, CUDA context included
    nt = row.get("non_torch")
    c["non_torch"] = r["non_torch_increase"] / GIB
    c["kv_nt"] = None if nt is None else c["kv"] + c["non_torch"] - nt
    c["e_kv_nt"] = None if nt is None or row["kv"] is None else pct(c["kv_nt"], row["kv"])
    # the bound applies to the error left once what is known to be unmodelled is taken out
    c["e_bound"] = c["e_kv_nt"] if c["e_kv_nt"] is not None else c["e_kv"]
    return c


def print_table(out, markdown):
    if markdown:
        print("| log | engine | weights GiB: published / vramcalc | activation GiB: published / vramcalc "
              "| KV pool GiB: published / vramcalc (error) | vramcalc less the log's non-torch (error) "
              "| blocks: published / vramcalc | concurrency: published / vramcalc |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for row, c in out:
            print("| %s | %s | %s / %.3f | %s / %.2f | %s / %.2f (%s) | %s | %s / %d | %s / %.2f |" % (
                row["name"], row["engine"], fmt(row["weights"], "%.4g"), c["weights"], fmt(row.get("act")), c["act"],
                fmt(row["kv"]), c["kv"], fmt(c["e_kv"], "%+.1f%%"),
                "-" if c["kv_nt"] is None else "%.2f (%s)" % (c["kv_nt"], fmt(c["e_kv_nt"], "%+.1f%%")),
                fmt(c["pub_blocks"], "%d"), c["blocks"], fmt(row.get("concurrency")), c["conc"]))
        return
    for row, c in out:
        print("%s [%s, --gpu %s]" % (row["name"], row["engine"], row["gpu"]))
        print("  weights GiB     %8s published  %8.3f vramcalc  %s" % (fmt(row["weights"], "%.4g"), c["weights"],
                                                                     fmt(c["e_w"], "%+.2f%%")))
        print("  activation GiB  %8s published  %8.2f vramcalc" % (fmt(row.get("act")), c["act"]))
        print("  KV pool GiB     %8s published  %8.2f vramcalc  %s" % (fmt(row["kv"]), c["kv"], fmt(c["e_kv"], "%+.1f%%")))
        if c["kv_nt"] is not None:
            print("    the log's non-torch %.2f GiB for vramcalc's %.2f: %.2f  %s" % (
                row["non_torch"], c["non_torch"], c["kv_nt"], fmt(c["e_kv_nt"], "%+.1f%%")))
        print("  blocks          %8s published  %8d vramcalc  %s" % (
            fmt(c["pub_blocks"], "%d"), c["blocks"], fmt(pct(c["blocks"], c["pub_blocks"]) if c["pub_blocks"] else None,
                                                         "%+.1f%%")))
        print("  concurrency     %8s published  %8.2f vramcalc" % (fmt(row.get("concurrency")), c["conc"]))
        if row.get("outside"):
            print("  not bound: " + row["outside"])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--bound", type=float, default=None,
                    help="percent: the KV pool of the bound rows, less the non-torch memory where the log prints it")
    ap.add_argument("--weights-bound", type=float, default=0.1, help="percent: the weights of every row")
    a = ap.parse_args(argv)
    bad = 0
    for cfg, params in CONFIGS.items():
        got = run(a.cli, [cfg])["parameters"]
        if got != params:
            print("FAIL: %s: %d parameters, the model card says %d" % (cfg, got, params))
            bad += 1
    out = [(row, compare(a.cli, row)) for row in ROWS]
    print_table(out, a.markdown)
    for row, c in out:
        if abs(c["e_w"]) > a.weights_bound:
            print("FAIL: %s: weights %+.2f%% (bound %.2f%%)" % (row["name"], c["e_w"], a.weights_bound))
            bad += 1
        if a.bound is not None and row["bound"] and abs(c["e_bound"]) > a.bound:
            print("FAIL: %s: KV pool %+.1f%% (bound %.1f%%)" % (row["name"], c["e_bound"], a.bound))
            bad += 1
    errs = [abs(c["e_kv"]) for _, c in out if c["e_kv"] is not None]
    left = [abs(c["e_bound"]) for _, c in out if c["e_bound"] is not None]
    print("%d logs: weights max |error| %.2f%%; KV pool max |error| %.1f%% as estimated, %.1f%% less the logged "
          "non-torch memory (%d rows with a published pool)" % (
              len(out), max(abs(c["e_w"]) for _, c in out), max(errs), max(left), len(errs)))
    if bad:
        print("%d failure(s)" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
