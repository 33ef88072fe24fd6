#!/usr/bin/python3
"""The Python API refuses what the CLI refuses, before anything reaches ctypes (issue 29, item 5).

    test_strict.py --lib build/libvramcalc.so --cli build/vramcalc

* every integer keyword argument: 2**64 + 1 (which ctypes would have passed as 1), 2**63, a bool,
  a float and a value below its minimum are refused with a VramcalcError naming the argument
  (the library's range check, on the text the CLI would pass; a bool or a float is refused in
  Python); INT64_MAX passes to the library, which answers as the CLI does;
* a NUL in a path (str, bytes, os.PathLike) or in a string option is refused, not cut;
* a keyword argument no option has raises UnknownOptionError, a TypeError and a VramcalcError,
  naming the closest option (`bach` -> `batch`); the options the Python API dropped silently
  (qlora, lora, grad_ckpt, weights) are taken and give the CLI's figures; the front end's own
  options (help, version, no_color, list_layers) are refused naming them;
* every long option of `vramcalc --help` is a row of the library's table (vramcalc.options())
  and a keyword argument of estimate();
* the options' names (kv_group_size, kv_residual_length) and their earlier aliases give the
  CLI's JSON;
* a refusal deep in the library (the config reader, a layer, a layout) names its options in
  Python's words (sp=, seq=, tp=2, precision=fp32), the CLI's line in the CLI's (--sp, -p fp32).
Exit 0 when every check passes; each failure is one FAIL line.
"""

import argparse
import inspect
import json
import os
import pathlib
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MLP = os.path.join(ROOT, "examples", "mlp.json")
CFG = os.path.join(ROOT, "tests", "data", "hf", "llama-3.1-8b.json")
FAILS = []
N = [0]


def check(cond, what):
    N[0] += 1
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what)


def cli(args):
    p = subprocess.run([A.cli] + args, capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
    return p.returncode, p.stdout, p.stderr


def refused(vc, fn, args, kw, name, words=()):
    """fn(*args, **kw) raises a VramcalcError whose .option is name and whose message starts
    with `name:` (or names it) and contains every word of words."""
    try:
        fn(*args, **kw)
    except vc.VramcalcError as e:
        msg = str(e)
        check(e.option == name and name in msg and all(w in msg for w in words),
              "%s(%r): %s (option %r), want %r and %r" % (fn.__name__, kw, msg, e.option, name, words))
        return e
    except Exception as e:  # noqa: BLE001
        check(False, "%s(%r): %s %s, not a VramcalcError" % (fn.__name__, kw, type(e).__name__, e))
        return None
    check(False, "%s(%r) accepted" % (fn.__name__, kw))
    return None


# keyword argument -> its smallest value (the CLI's parse_count minimum, src/cli/main.c)
ESTIMATE_INTS = {"batch": 1, "accumulate": 1, "gpus": 1, "tp": 1, "pp": 1, "micro_batches": 1, "pp_virtual": 1,
                 "prompt": 1, "new_tokens": 1, "kv_bits": 1, "kv_group_size": 1, "kv_residual_length": 0, "ep": 1,
                 "fsdp_replicate": 1, "fsdp_reshard_after_forward": 1, "seq": 1, "workspace": 0, "context": 0}
SERVE_INTS = {"max_num_batched_tokens": 1, "max_num_seqs": 1, "block_size": 1, "prompt": 1, "new_tokens": 1}


def test_integers(vc):
    for name, lo in ESTIMATE_INTS.items():
        need = {"fsdp_reshard_after_forward": dict(parallel="fsdp2", gpus=8)}.get(name, {})
        for bad, words in ((2 ** 64 + 1, ("too large",)), (2 ** 63, ("too large",)),
                           (-(2 ** 64) + 1, ()), (lo - 1, ()), (True, ("integer",)), (1.5, ("integer",))):
            if name == "fsdp_reshard_after_forward" and isinstance(bad, bool):
                continue  # True, False or N: fully_shard's reshard_after_forward
            if name == "fsdp_reshard_after_forward" and bad == 1.5:
                words = ("string",)  # a string option (true, false or N)
            refused(vc, vc.estimate, (CFG,), dict(need, **{name: bad}), name, words)
    for bad in (2 ** 64 + 1, (3, 2 ** 64), (3, True), (3, 0), "3,x,4", 3.0):
        refused(vc, vc.estimate, (MLP,), {"input_size": bad}, "input_size")
    for name, lo in SERVE_INTS.items():
        for bad in (2 ** 64 + 1, lo - 1, False):
            refused(vc, vc.serve, (CFG, "h100-80gb"), {name: bad}, name)
    for bad in (0, 2 ** 64 + 1, 1.0):
        refused(vc, vc.max_context, (CFG, "h100-80gb"), {"batch": bad}, "batch")
    refused(vc, vc.serve, (CFG, "h100-80gb"), {"gpu_memory_utilization": float("nan")}, "gpu_memory_utilization")
    refused(vc, vc.serve, (CFG, "h100-80gb"), {"gpu_memory_utilization": 1.5}, "gpu_memory_utilization")
    refused(vc, vc.serve, (CFG, "h100-80gb"), {"gpu_memory_utilization": True}, "gpu_memory_utilization")
    # INT64_MAX reaches the library: what it says then is what the CLI says
    big = (1 << 63) - 1
    rc, _, err = cli([MLP, "-b", str(big)])
    try:
        vc.estimate(MLP, batch=big)
        check(rc in (0, 1), "batch=INT64_MAX: the API accepts it, the CLI exits %d" % rc)
    except vc.VramcalcError as e:
        check(rc == 2 and err == "vramcalc: %s\n" % getattr(e, "cli_message", None),
              "batch=INT64_MAX: API %r, CLI %d %r" % (str(e), rc, err.strip()))
    # the flags take True or False only (sp="no" would be true)
    for name in ("sp", "per_layer", "max_batch", "max_seq", "nvme_gds", "fsdp_use_orig_params",
                 "gradient_as_bucket_view", "parameters_as_bucket_view", "grad_ckpt", "qlora"):
        refused(vc, vc.estimate, (CFG,), {name: "no"}, name, ("True or False",))
        refused(vc, vc.estimate, (CFG,), {name: 1}, name, ("True or False",))
    refused(vc, vc.estimate, (CFG,), {"ds_overlap_comm": "no"}, "ds_overlap_comm")
    refused(vc, vc.estimate, (CFG,), {"ds_overlap_comm": 1}, "ds_overlap_comm")
    r1 = json.loads(vc.estimate(MLP, batch=1).to_json())
    check(r1["batch"] == 1, "batch=1: %r" % r1["batch"])


def test_nul(vc):
    for p in (MLP + "\0junk", os.fsencode(MLP) + b"\0", pathlib.Path(MLP + "\0x")):
        refused(vc, vc.estimate, (p,), {}, "model", ("NUL",))
    refused(vc, vc.estimate, ("",), {}, "model", ("empty",))
    for name, v in (("optim", "adam\0x"), ("precision", "fp32\0"), ("gpu", "rtx4090\0"), ("mode", "train\0x"),
                    ("attention", "auto\0"), ("torch", "2.5\0"), ("workspace", "1MiB\0x"), ("parallel", "ddp\0"),
                    ("loss", "hf\0"), ("cache", "static\0"), ("input_size", "3,4\0")):
        refused(vc, vc.estimate, (MLP,), {name: v}, name, ("NUL",))
    refused(vc, vc.serve, (CFG, "h100-80gb\0x"), {}, "gpu", ("NUL",))
    refused(vc, vc.serve, (CFG, "h100-80gb"), {"kv_cache_dtype": "auto\0"}, "kv_cache_dtype", ("NUL",))
    # a path that exists after the NUL is not loaded either: the prefix exists, the path does not
    check(os.path.exists(MLP), "examples/mlp.json exists")


def test_unknown(vc):
    for kw, name, want in ((dict(bach=64), "bach", "did you mean 'batch'?"),
                           (dict(optimizer="sgd"), "optimizer", "did you mean 'optim'?"),
                           (dict(precison="bf16"), "precison", "did you mean 'precision'?"),
                           (dict(grad_chkpt=True), "grad_chkpt", "did you mean 'grad_ckpt'?"),
                           (dict(xyzzy=1), "xyzzy", "unexpected keyword argument 'xyzzy'")):
        e = refused(vc, vc.estimate, (CFG,), kw, name, (want,))
        check(isinstance(e, TypeError) and isinstance(e, vc.UnknownOptionError),
              "%r: %s is not an UnknownOptionError (TypeError)" % (kw, type(e).__name__))
        check(str(e).startswith("estimate() got an unexpected keyword argument %r" % name), "%r: %s" % (kw, e))
    e = refused(vc, vc.serve, (CFG, "h100-80gb"), dict(max_num_seq=4), "max_num_seq", ("did you mean 'max_num_seqs'?",))
    check(isinstance(e, TypeError), "serve(max_num_seq=): not a TypeError")
    refused(vc, vc.max_context, (CFG, "h100-80gb"), dict(new_token=4), "new_token", ("did you mean 'new_tokens'?",))
    # the brief's cases, each the plain 117,161,590,784 B before: now the CLI's figure for the same option
    plain = vc.estimate(CFG).memory.total
    for kw, args in ((dict(qlora=True), ["--qlora"]), (dict(lora=16), ["--lora", "16"]),
                     (dict(grad_ckpt=True), ["--grad-ckpt"]), (dict(weights="nf4", mode="infer"), ["--weights", "nf4", "-m", "infer"]),
                     (dict(optim="sgd"), ["-o", "sgd"]), (dict(batch=64), ["-b", "64"])):
        r = vc.estimate(CFG, **kw)
        rc, out, err = cli([CFG, "-f", "json"] + args)
        check(rc == 0 and r.to_json() == out and r.memory.total != plain,
              "%r: %d (plain %d), the CLI's %s" % (kw, r.memory.total, plain, args))
    # the front end's own options: refused naming them (and what Python has instead)
    for name, want in (("help", "help(vramcalc.estimate)"), ("version", "__version__"), ("no_color", "colours"),
                       ("list_layers", "kinds()")):
        e = refused(vc, vc.estimate, (CFG,), {name: True}, name, (want,))
        check(not isinstance(e, TypeError), "%s: a TypeError (it is an option)" % name)
    # the exporter's options need an nn.Module
    refused(vc, vc.estimate, (MLP,), dict(name="x"), "name", ("nn.Module",))
    refused(vc, vc.estimate, (MLP,), dict(allow_unknown=True), "allow_unknown", ("nn.Module",))
    # an earlier name and the option's name together
    refused(vc, vc.estimate, (CFG,), dict(kv_group=32, kv_group_size=32), "kv_group_size", ("twice",))


def test_table(vc):
    """Every long option of `vramcalc --help` is a row of the table and a keyword of estimate()."""
    rc, out, _ = cli(["--help"])
    flags = set(re.findall(r"^  (?:-\w, |    )--([a-z0-9-]+)", out, re.M))  # an option's line, not its help's
    opts = vc.options()
    check(rc == 0 and len(flags) > 50, "--help lists %d options" % len(flags))
    by_flag = {o.flag: o for o in opts.values()}
    params = inspect.signature(vc.estimate).parameters
    for f in sorted(flags):
        o = by_flag.get(f)
        if not check(o is not None, "--%s (vramcalc --help) is no row of vramcalc.options()" % f):
            continue
        if "front_end" not in o.applies:
            py = "input_size" if o.name == "input" else o.name
            check(py in params and params[py].kind == params[py].KEYWORD_ONLY or py == "input_size",
                  "--%s: estimate() has no keyword argument %s" % (f, py))
            from vramcalc import _request
            check(o.help and o.help in vc.estimate.__doc__,
                  "--%s: help(vramcalc.estimate) has not its help" % f)


def test_names(vc):
    """kv_group_size / kv_residual_length (the CLI's names) and kv_group / kv_residual (earlier) give the CLI's JSON."""
    args = ["-m", "generate", "--cache", "quantized", "--kv-bits", "2", "--kv-group-size", "32",
            "--kv-residual-length", "64", "-p", "bf16", "--prompt", "512", "--new-tokens", "200"]
    rc, out, err = cli([CFG, "-f", "json"] + args)
    check(rc == 0, "CLI %s: %d %s" % (args, rc, err))
    base = dict(mode="generate", cache="quantized", kv_bits=2, precision="bf16", prompt=512, new_tokens=200)
    for kw in (dict(kv_group_size=32, kv_residual_length=64), dict(kv_group=32, kv_residual=64)):
        got = vc.estimate(CFG, **base, **kw).to_json()
        check(got == out, "%r: the API's JSON is not the CLI's:\n%s\n%s" % (kw, got, out))
    d = dict(json.loads(vc.estimate(CFG, **base).to_json())["generate"])
    check(d != json.loads(out)["generate"], "kv_group_size and kv_residual_length change nothing")
    # kv_bits over the CLI's clamp: the library's refusal, the same words as the CLI's
    rc, _, err = cli([CFG, "-m", "generate", "--cache", "quantized", "--kv-bits", "99999999999"])
    try:
        vc.estimate(CFG, mode="generate", cache="quantized", kv_bits=99999999999)
        check(False, "kv_bits=99999999999 accepted")
    except vc.VramcalcError as e:
        check(rc == 2 and err == "vramcalc: %s\n" % getattr(e, "cli_message", None),
              "kv_bits=99999999999: API %r, CLI %r" % (str(e), err))


def test_hostile(vc):
    """Odd calls: each a VramcalcError naming what is wrong, never another exception."""
    cases = [(lambda: vc.estimate(123), "model"), (lambda: vc.estimate({"a": float("nan")}), "model"),
             (lambda: vc.estimate({"a": {1, 2}}), "model"), (lambda: vc.estimate(CFG, torch=2.5), "torch"),
             (lambda: vc.estimate(CFG, lora=8, lora_targets=["q_proj", None]), "lora_targets"),
             (lambda: vc.estimate(MLP, trace=True).max_batch(), "gpu"),
             (lambda: vc.estimate(CFG, sweep="1:2", plot="/nonexistent-dir/x.svg"), "plot"),
             (lambda: vc.estimate(CFG, gpu="\udcff"), "gpu"), (lambda: vc.estimate(CFG, sweep=[]), "sweep"),
             (lambda: vc.estimate(None), None), (lambda: vc.estimate(MLP, input_size=3.5), "input_size"),
             (lambda: vc.estimate(CFG, lora=8, lora_alpha=float("inf")), "lora_alpha")]
    # a search on a result whose request printed something else: the search of its estimate
    rc, out, _ = cli([MLP, "-f", "json", "-g", "rtx4090", "--max-batch"])
    for kw in (dict(trace=True), dict(format="csv"), dict(sweep="1,2")):
        check(vc.estimate(MLP, gpu="rtx4090", **kw).max_batch() == json.loads(out)["max_batch"],
              "estimate(%r).max_batch() != --max-batch" % kw)
    for i, (fn, name) in enumerate(cases):
        try:
            fn()
            check(False, "hostile case %d accepted" % i)
        except vc.VramcalcError as e:
            check(e.option == name and (name is None or name in str(e)) and "--" not in str(e),
                  "hostile case %d: %r (option %r), want %r" % (i, str(e), e.option, name))
        except Exception as e:  # noqa: BLE001
            check(False, "hostile case %d: %s %s" % (i, type(e).__name__, e))


def test_deep_errors(vc):
    """A refusal deep in the library (its model loader, a layer, a layout) names the option in
    Python's words, as the CLI names it in its own: the library marks the option by its table name
    (src/util/util.h's O/OV/OS) and each front end spells it (vc_error_format_for). The expected
    CLI lines are what build/vramcalc printed before the marks (the messages' own text)."""
    hf = os.path.join(ROOT, "tests", "data", "hf")
    cases = [  # model, keyword arguments, the option, Python's message after "model: ", the CLI's
        ("llama-3.1-8b.json", dict(sp=True), "sp",  # src/policy/options.c vc_options_check
         "sp=: sequence parallelism needs tp=2 or more", "--sp: sequence parallelism needs --tp 2 or more"),
        ("gpt2.json", dict(seq=2000), "seq",  # src/hf/hf.c, the config reader
         "seq=: 2000 tokens: gpt2 has 1024 learned positions (n_positions)",
         "--seq: 2000 tokens: gpt2 has 1024 learned positions (n_positions)"),
        ("qwen3-30b-a3b.json", dict(ep=3, gpus=3, parallel="ddp"), "ep",  # layers/moe_ep.c, a layer's setup
         "ep=: 3 expert-parallel ranks do not divide num_experts (128)",
         "--ep: 3 expert-parallel ranks do not divide num_experts (128)"),
        ("llama-3.1-8b.json", dict(tp=2, gpus=2, sp=True, seq=1023), "sp",  # src/hf/hf_tp.c
         "sp=: the sequence (1023 tokens) is not divisible by tp=2",
         "--sp: the sequence (1023 tokens) is not divisible by --tp 2"),
        ("llama-3.1-8b.json", dict(gpus=8, parallel="megatron"), "precision",  # the CLI's short form: -p
         "precision=: megatron with precision=fp32: Megatron's bf16 mode (bf16 parameters, fp32 main_grad and "
         "main params) is precision=mixed-bf16, the only precision modelled (--fp16's fp16 main_grad and loss "
         "scaler are not)",
         "--precision: megatron with -p fp32: Megatron's bf16 mode (bf16 parameters, fp32 main_grad and main "
         "params) is -p mixed-bf16, the only precision modelled (--fp16's fp16 main_grad and loss scaler are not)"),
    ]
    for model, kw, option, py, cli_words in cases:
        path = os.path.join(hf, model)
        try:
            vc.estimate(path, **kw)
            check(False, "%s %r: no error" % (model, kw))
            continue
        except vc.VramcalcError as e:
            err = e
        check(str(err) == "%s: %s" % (path, py) and err.option == option,
              "%s %r: %r (option %r), want %r" % (model, kw, str(err), err.option, py))
        check("--" + option not in str(err), "%s %r: %r spells --%s" % (model, kw, str(err), option))
        args = [path]
        for k, v in kw.items():
            args += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
        rc, out, stderr = cli(args)
        check(rc == 2 and stderr == "vramcalc: %s: %s\n" % (path, cli_words) and err.cli_message == stderr[10:-1],
              "%s %r: the CLI exits %d: %r (Python's cli_message %r)" % (model, kw, rc, stderr, err.cli_message))


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cli", required=True)
    A = ap.parse_args()
    os.environ["VRAMCALC_LIB"] = os.path.abspath(A.lib)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import vramcalc as vc
    for t in (test_integers, test_nul, test_unknown, test_table, test_names, test_hostile, test_deep_errors):
        t(vc)
    print("%d checks, %d failed" % (N[0], len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
