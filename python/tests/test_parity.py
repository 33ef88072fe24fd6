#!/usr/bin/python3
"""Python and the CLI give the same answer for every option of the library's table.

    test_parity.py --lib build/libvramcalc.so --cli build/vramcalc [-v]

For every row of the option table (vc_option_at, read through vramcalc.options()), the test
builds calls from its type and choices (every choice of a closed set; a count, a real, a size,
a shape, a list or a string from SAMPLES), each on a model the option applies to and with
the options it needs (NEEDS), and runs it both ways: `vramcalc MODEL --flag VALUE ...` and
`vramcalc.estimate(MODEL, name=value, ...)`.  Either both answer, and the CLI's `-f json`,
table and `-f csv` equal the result's to_json(), table() and csv() byte for byte (and the exit
status its .status; `--plot`'s SVG file the one Python writes), or both refuse, and the CLI's
error line is the Python error's, spelt for the CLI (.cli_message), and the Python error names
no --flag, only keyword arguments (its .option among them).  Each option must have at
least one call that both answer.  Out-of-range counts (0, 2**64) are refused by both, in the
same words; the front end's own options (help, version, no_color, list_layers) are refused
by Python naming them.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FILE = os.path.join(ROOT, "examples", "tiny_resnet.json")
GPT = os.path.join(ROOT, "examples", "gpt2_small.json")
CFG = os.path.join(ROOT, "tests", "data", "hf", "llama-3.1-8b.json")
MOE = os.path.join(ROOT, "tests", "data", "hf", "mixtral-8x7b-v0.1.json")
VLM = os.path.join(ROOT, "tests", "data", "hf", "qwen2.5-vl-3b-instruct.json")
T5 = os.path.join(ROOT, "tests", "data", "hf", "t5-small.json")
FAILS = []

# values for the types without choices (a count, a real... : one that the option takes)
SAMPLES = {
    "batch": [3], "input": [(3, 48, 48)], "seq": [512], "moe_imbalance": [1.5], "accumulate": [4], "lora": [16],
    "lora_targets": ["q_proj,v_proj", ("q_proj", "k_proj")], "lora_alpha": [32.0], "lora_dropout": [0.1],
    "gpus": [8], "tp": [2], "ep": [4], "pp": [2], "micro_batches": [6], "pp_virtual": [2],
    "fsdp_reshard_after_forward": [True, False, 2], "fsdp_replicate": [2], "torch": ["2.5", "2.0"], "cuda": ["12.4", "11.8"],
    "transformers": ["4.57", "5.0"], "trl": ["1.6", "1.9"],
    "workspace": [0, "64MiB"], "context": ["300MiB", 1 << 29], "gpu": ["rtx4090", "24GiB", "h100-80gb:90%"],
    "prompt": [512], "new_tokens": [64], "kv_bits": [2], "kv_group_size": [32], "kv_residual_length": [64],
    "gpu_memory_utilization": [0.8], "max_num_batched_tokens": [4096], "max_num_seqs": [128], "block_size": [32],
    "sweep": ["1,2,4", (1, 8), "1:4096:x2"], "plot": ["PLOT"], "columns": ["batch,memory.total"],
    "params": [7_000_000_000], "activations": [1000], "loss_chunks": [16], "modules_to_save": ["lm_head"], "liger_kernels": ["rope,rms_norm", ("rope", "swiglu")], "grad_ckpt_every": [2], "act_offload": ["sync"],
    "recipe": ["torchtune:llama3_1/8B_lora_single_device", "torchtune:llama3_2/3B_full_single_device"],
    "image": ["640x480"], "images": [2], "compile": [True, False], "target_seq": [128],
    "cudnn_table": [os.path.join(ROOT, "tests", "data", "cudnn", "tiny_resnet_fixture.json")],
    "alloc_conf": ["expandable_segments:True", "max_split_size_mb:64,garbage_collection_threshold:0.8"],
    "nccl_channels": [8], "beta": [0.04], "num_generations": [4], "gpus_per_node": [4], "cuda_graph_memory": ["512MiB"],
    "vllm_gpu_memory_utilization": [0.25], "nccl_nvls": ["off"], "vllm_cuda_graph_memory": ["512MiB"],
    "vllm_tensor_parallel_size": [2], "num_beams": [3],
}
GEN = {"mode": "generate"}
SERVE = {"serve": True, "gpu": "h100-80gb"}
# what an option needs to apply (the library refuses it alone, saying so: checked too)
NEEDS = {
    "lora_targets": {"lora": 8}, "lora_alpha": {"lora": 8}, "lora_dropout": {"lora": 8},
    "sp": {"tp": 2, "gpus": 2}, "tp": {"gpus": 2}, "pp": {"gpus": 2}, "micro_batches": {"pp": 2, "gpus": 2},
    "pp_virtual": {"pp": 2, "gpus": 2, "micro_batches": 4}, "ep": {"gpus": 8, "parallel": "ddp"},
    "offload": {"parallel": "zero3", "gpus": 8}, "offload_device": {"parallel": "zero3", "gpus": 8, "offload": "optimizer"},
    "nvme_gds": {"parallel": "zero3", "gpus": 8, "offload": "params", "offload_device": "nvme"},
    "fsdp_param_dtype": {"parallel": "fsdp2", "gpus": 8}, "fsdp_reduce_dtype": {"parallel": "fsdp2", "gpus": 8},
    "fsdp_use_orig_params": {"parallel": "fsdp", "gpus": 8}, "fsdp_reshard_after_forward": {"parallel": "fsdp2", "gpus": 8},
    "fsdp_replicate": {"parallel": "fsdp2", "gpus": 8}, "gradient_as_bucket_view": {"parallel": "ddp", "gpus": 2},
    "parameters_as_bucket_view": {"parallel": "zero1-torch", "gpus": 2}, "ds_overlap_comm": {"parallel": "zero2", "gpus": 8},
    "parallel": {"gpus": 8}, "gpus": {"parallel": "ddp"},
    "max_batch": {"gpu": "rtx4090"}, "max_seq": {"gpu": "rtx4090", "precision": "bf16"},
    "prompt": GEN, "new_tokens": GEN, "cache": GEN, "num_beams": GEN, "kv_bits": dict(GEN, cache="quantized"),
    "kv_group_size": dict(GEN, cache="quantized"), "kv_residual_length": dict(GEN, cache="quantized"),
    "max_context": dict(GEN, gpu="rtx4090"), "serve": {"gpu": "h100-80gb"},
    "gpu_memory_utilization": SERVE, "max_num_batched_tokens": SERVE, "max_num_seqs": SERVE, "block_size": SERVE,
    "kv_cache_dtype": SERVE, "enforce_eager": SERVE, "cuda_graph_memory": SERVE, "plot": {"sweep": "1,2"}, "force": {"sweep": "1,2", "plot": "PLOT"},
    "moe_imbalance": {"experts_implementation": "per_expert"}, "loss_chunks": {"loss": "chunked"}, "lora_dtype": {"lora": 8},
    "columns": {"format": "csv"}, "activations": {"params": 10 ** 9}, "no_hints": {"gpu": "1GiB"},
    "modules_to_save": {"lora": 8}, "liger_kernels": {"liger": True},
    "grad_ckpt_every": {"grad_ckpt": True}, "grad_ckpt_ops": {"grad_ckpt": True}, "grad_ckpt_kind": {"grad_ckpt": True},
    "images": {"image": "640x480"},
    "packing": {"batch": 2, "seq": 256, "precision": "bf16"},
    "nccl_topology": {"parallel": "ddp", "gpus": 2}, "nccl_channels": {"parallel": "ddp", "gpus": 2},
    "beta": {"loss": "grpo", "prompt": 64, "new_tokens": 16}, "num_generations": {"loss": "grpo", "prompt": 64, "new_tokens": 16},
    "gpus_per_node": {"parallel": "ddp", "gpus": 16}, "nccl_nvls": {"parallel": "ddp", "gpus": 8, "gpu": "h100-80gb"},
    "use_vllm": {"loss": "grpo", "prompt": 64, "new_tokens": 16, "gpu": "h100-80gb"},
    "vllm_gpu_memory_utilization": {"loss": "grpo", "prompt": 64, "new_tokens": 16, "gpu": "h100-80gb", "use_vllm": True},
    "vllm_sleep": {"loss": "grpo", "prompt": 64, "new_tokens": 16, "gpu": "h100-80gb", "use_vllm": True},
    "vllm_cuda_graph_memory": {"loss": "grpo", "prompt": 64, "new_tokens": 16, "gpu": "h100-80gb", "use_vllm": True},
    "vllm_tensor_parallel_size": {"loss": "grpo", "prompt": 64, "new_tokens": 16, "gpu": "h100-80gb", "use_vllm": True,
                                  "parallel": "ddp", "gpus": 2},
    "trl": {"recipe": "trl:sft", "seq": 256},
}
MODEL_OF = {"recipe": CFG, "trl": CFG, "peft": CFG, "liger": CFG, "liger_kernels": CFG, "modules_to_save": CFG, "ep": MOE, "moe_imbalance": MOE, "experts_implementation": MOE, "transformers": MOE, "pp": GPT, "micro_batches": GPT, "pp_virtual": GPT, "tp": CFG,
            "input": FILE, "image": VLM, "images": VLM, "target_seq": T5, "num_beams": CFG}


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what)
    return cond


def cli_args(kw, tmp):
    out = []
    for name, v in kw.items():
        o = OPTS[name]
        if o.type == "flag":
            if v:
                out.append("--" + o.flag)
            continue
        if name == "plot":
            v = os.path.join(tmp, "cli.svg")
        text = ("true" if v else "false") if isinstance(v, bool) else \
            ",".join(str(d) for d in v) if isinstance(v, tuple) else str(v)
        out += ["--" + o.flag, text]
    return out


def cli(args):
    p = subprocess.run([A.cli] + args, capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
    return p.returncode, p.stdout, p.stderr


def compare(vc, model, kw, tmp):
    """Runs kw both ways; True when both answered (and agreed), False when both refused alike."""
    where = "%s %s" % (os.path.basename(model) if model else "(no model)", kw)
    args = ([model] if model else []) + cli_args(kw, tmp)
    py = dict(kw)
    for f in ("cli.svg", "py.svg"):  # --plot refuses an existing file without --force: each call starts afresh
        if os.path.exists(os.path.join(tmp, f)):
            os.remove(os.path.join(tmp, f))
    if "plot" in py:
        py["plot"] = os.path.join(tmp, "py.svg")
    try:
        r = vc.estimate(model, **py)
        err = None
    except vc.VramcalcError as e:
        r, err = None, e
    fmt = kw.get("format")
    rc, out, stderr = cli(args + ([] if fmt or "emit_model" in kw or "trace" in kw else ["-f", "json"]))
    if err is not None:
        check(rc == 2 and stderr == "vramcalc: %s\n" % getattr(err, "cli_message", None),
              "%s: Python refuses (%s), the CLI %s" % (where, err, "exits %d: %s" % (rc, (stderr or out)[:300])))
        # spelt for Python: no --flag of vramcalc's (Megatron's --fp16 may stay), and .option one of the
        # keywords the message names
        flags = [f for f in re.findall(r"(?<![\w/.-])--([a-z][a-z0-9-]*)", str(err)) if f in FLAGS]
        check(not flags and err.option and err.option + "=" in str(err),
              "%s: %r (option %r) is not spelt for Python" % (where, str(err), err.option))
        return False
    if not check(rc in (0, 1), "%s: the CLI refuses (%s), Python answers" % (where, stderr.strip())):
        return False
    check(rc == r.status, "%s: CLI exit %d, Python status %d" % (where, rc, r.status))
    if fmt or "emit_model" in kw or "trace" in kw:
        check(out == str(r), "%s: str(r) is not the CLI's output:\n%s\n---\n%s" % (where, str(r)[:1500], out[:1500]))
        return True
    check(out == r.to_json(), "%s: to_json() is not the CLI's -f json:\n%s\n---\n%s" % (where, r.to_json()[:1500],
                                                                                       out[:1500]))
    if "plot" in kw:
        with open(os.path.join(tmp, "cli.svg")) as a, open(os.path.join(tmp, "py.svg")) as b:
            check(a.read() == b.read(), "%s: the SVGs differ" % where)
        return True
    rc, out, _ = cli(args)
    check(out == r.table(), "%s: table() is not the CLI's table:\n%s\n---\n%s" % (where, r.table()[:1500], out[:1500]))
    if "serve" not in kw and "max_context" not in kw:
        rc, out, _ = cli(args + ["-f", "csv"])
        check(out == r.csv(), "%s: csv() is not the CLI's -f csv:\n%s\n---\n%s" % (where, r.csv()[:800], out[:800]))
    return True


def samples(o):
    if o.name in SAMPLES:
        return SAMPLES[o.name]
    if o.type == "flag":
        return [True]
    if o.choices:
        return [c if not (o.choices == ["true", "false"]) else c == "true" for c in o.choices]
    raise SystemExit("option %s (%s): no sample value in test_parity.py's SAMPLES" % (o.name, o.type))


def models(o):
    if o.name in MODEL_OF:
        return [MODEL_OF[o.name]]
    if o.applies & {"model_file", "config"} == set():  # counts only (params=), or no model (list_gpus)
        return [None]
    out = []
    if "config" in o.applies:
        out.append(CFG)
    if "model_file" in o.applies and o.name not in ("serve",) and not NEEDS.get(o.name, {}).get("serve"):
        out.append(FILE)
    return out


def main():
    global A, OPTS, FLAGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("-v", action="store_true")
    A = ap.parse_args()
    os.environ["VRAMCALC_LIB"] = os.path.abspath(A.lib)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import vramcalc as vc
    OPTS = vc.options()
    FLAGS = {o.flag for o in OPTS.values()}
    answered, calls = {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        for o in OPTS.values():
            if "front_end" in o.applies:
                try:
                    vc.estimate(CFG, **{o.name: True})
                    check(False, "%s: a front end's option, accepted by Python" % o.name)
                except vc.VramcalcError as e:
                    check(e.option == o.name and o.name in str(e), "%s: refused as %r" % (o.name, str(e)))
                continue
            answered[o.name] = 0
            for model in models(o):
                for v in samples(o):
                    kw = dict(NEEDS.get(o.name, {}))
                    kw[o.name] = v
                    if model is None and "counts" in o.applies and "params" not in kw:
                        kw["params"] = 10 ** 9
                    ok = compare(vc, model, kw, tmp)
                    answered[o.name] += ok
                    calls += 1
                    if A.v:
                        print("%s %s %s" % ("ok     " if ok else "refused", os.path.basename(model or "-"), kw))
                # alone (without what it needs): both refuse alike, or both answer alike
                if o.name in NEEDS and o.type != "flag":
                    compare(vc, model, {o.name: samples(o)[0]}, tmp)
                    calls += 1
                if o.type == "count":  # out of range: refused by both, in the same words
                    for bad in (0 if o.name not in ("kv_residual_length", "params", "activations") else -1, 2 ** 64):
                        if bad < 0:
                            continue
                        kw = dict(NEEDS.get(o.name, {}), **{o.name: bad})
                        if model is None and "counts" in o.applies:
                            kw.setdefault("params", 10 ** 9)
                        check(not compare(vc, model, kw, tmp), "%s=%d: answered" % (o.name, bad))
                        calls += 1
    for name, n in answered.items():
        check(n > 0, "%s: no call of it that both the CLI and Python answer" % name)
    print("parity: %d options, %d calls, each both ways; %d failure(s)" % (len(answered), calls, len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
