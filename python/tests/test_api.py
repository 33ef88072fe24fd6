#!/usr/bin/python3
"""Tests of the Python API (python/vramcalc) against the C compiler and the CLI.

    test_api.py --lib build/libvramcalc.so --cli build/vramcalc --abi build/tests/abi_layout \
                [--torch] [--install]

* layout: every struct the API mirrors with ctypes has the size and field offsets the
  C compiler gives it (abi_layout prints them from include/vramcalc/vramcalc.h);
* the API's JSON and table equal `vramcalc -f json`'s and `vramcalc`'s, byte for byte, over a
  matrix of zoo models and options;
* errors are VramcalcError with the CLI's message (e.cli_message: the CLI's spelling);
* --torch: an nn.Module exported on the fly gives what the CLI gives on the file the
  exporter writes (exit 77 when torch is absent);
* --install: `pip install --no-build-isolation --target` of python/ (its pyproject.toml, with
  VRAMCALC_LIB set to the built library) gives a package that imports and estimates outside
  the checkout.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(ROOT, "examples")
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what)


def cli(args, env=None):
    e = dict(os.environ, NO_COLOR="1")
    p = subprocess.run([A.cli] + args, capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def test_layout(vc):
    from vramcalc import _capi, _request
    out = subprocess.run([A.abi], capture_output=True, text=True, check=True).stdout
    c = {}
    for line in out.splitlines():
        k, v = line.split()
        c[k] = int(v)
    py = {}
    for name, st in dict(_capi.STRUCTS, **_request.STRUCTS).items():
        py[name] = __import__("ctypes").sizeof(st)
        for f in st._fields_:
            py["%s.%s" % (name, f[0])] = getattr(st, f[0]).offset
    for k in sorted(set(c) | set(py)):
        check(c.get(k) == py.get(k), "layout %s: C %s, ctypes %s" % (k, c.get(k), py.get(k)))
    print("layout: %d sizes and offsets compared" % len(c))


# (model file, CLI options, API keyword arguments): the same estimate both ways
MATRIX = [
    ("mlp.json", [], {}),
    ("resnet18.json", ["-b", "32"], dict(batch=32)),
    ("resnet18.json", ["-b", "8", "-o", "sgd", "-p", "amp-fp16"], dict(batch=8, optim="sgd", precision="amp-fp16")),
    ("resnet50.json", ["-b", "16", "-o", "adamw", "-p", "amp-bf16", "-g", "rtx4090"],
     dict(batch=16, optim="adamw", precision="amp-bf16", gpu="rtx4090")),
    ("resnet50.json", ["-g", "h100-80gb:90%", "--max-batch"], dict(gpu="h100-80gb:90%", max_batch=True)),
    ("resnet18.json", ["-b", "4", "-g", "24GiB", "--max-batch"], dict(batch=4, gpu="24GiB", max_batch=True)),
    ("gpt2_small.json", ["-b", "4", "-p", "mixed-bf16", "--optim-impl", "fused", "--attention", "math"],
     dict(batch=4, precision="mixed-bf16", optim_impl="fused", attention="math")),
    ("gpt2_small.json", ["-b", "2", "-m", "infer", "-p", "fp16"], dict(batch=2, mode="infer", precision="fp16")),
    ("bert_base.json", ["-b", "8", "--accumulate", "4", "-o", "momentum", "--optim-impl", "forloop"],
     dict(batch=8, accumulate=4, optim="momentum", optim_impl="forloop")),
    ("lstm_lm.json", ["-b", "16", "--workspace", "0", "--context", "300MiB"],
     dict(batch=16, workspace=0, context="300MiB")),
    ("tiny_resnet.json", ["-b", "3", "--per-layer"], dict(batch=3, per_layer=True)),
    ("tiny_resnet.json", ["-b", "5", "--input", "3,64,64", "--per-layer", "-o", "none"],
     dict(batch=5, input_size=(3, 64, 64), per_layer=True, optim="none")),
    ("vit_b_16.json", ["-b", "2", "-p", "bf16", "-g", "a100-40gb"], dict(batch=2, precision="bf16", gpu="a100-40gb")),
    ("unet.json", ["-b", "2", "--input", "3,128,128"], dict(batch=2, input_size="3,128,128")),
    ("gpt2_small.json", ["-b", "2", "-o", "adafactor"], dict(batch=2, optim="adafactor")),
    ("resnet18.json", ["-b", "4", "-o", "adafactor", "--optim-impl", "foreach"],
     dict(batch=4, optim="adafactor", optim_impl="foreach")),
    ("resnet50.json", ["-b", "2", "-o", "paged_adamw8bit", "-p", "bf16"],
     dict(batch=2, optim="paged_adamw8bit", precision="bf16")),
    # --pp (docs/parallel.md 2.6): the ranks list and the per-rank lines
    ("gpt2_small.json", ["-b", "2", "--pp", "4", "--gpus", "8", "--parallel", "ddp", "--per-layer"],
     dict(batch=2, pp=4, gpus=8, parallel="ddp", per_layer=True)),
    ("resnet18.json", ["-b", "4", "--pp", "2", "--gpus", "2", "--micro-batches", "6", "-g", "24GiB", "--max-batch"],
     dict(batch=4, pp=2, gpus=2, micro_batches=6, gpu="24GiB", max_batch=True)),
    ("gpt2_small.json", ["-b", "2", "--pp", "4", "--gpus", "4", "--micro-batches", "8", "--pp-virtual", "3"],
     dict(batch=2, pp=4, gpus=4, micro_batches=8, pp_virtual=3)),
]


def test_matrix(vc):
    n = 0
    for f, args, kw in MATRIX:
        path = os.path.join(EXAMPLES, f)
        rc, out, err = cli([path, "-f", "json"] + args)
        check(rc in (0, 1), "%s %s: CLI exit %d: %s" % (f, args, rc, err.strip()))
        r = vc.estimate(path, **kw)
        api = r.to_json()
        check(api == out, "%s %s: API JSON differs from the CLI's:\n%s\n---\n%s" % (f, args, api, out))
        check(json.loads(out) == r.to_dict(), "%s %s: to_dict() != the CLI's JSON" % (f, args))
        # the table: the library's, as the CLI prints it on a pipe (80 columns, ASCII), bar included
        rc, tab, _ = cli([path] + args)
        api_tab = str(r)
        check(api_tab == tab, "%s %s: table differs:\n%s\n---\n%s" % (f, args, api_tab, tab))
        if kw.get("max_batch"):
            check(("max batch on %s: %d" % (r.gpu.name, r.max_batch())) in tab,
                  "%s: max batch %d not in the CLI's table" % (f, r.max_batch()))
        if kw.get("per_layer"):
            per_layer = lambda t: t[t.index("\n  layer "):]
            check(per_layer(api_tab) == per_layer(tab), "%s: per-layer rows differ:\n%s\n---\n%s"
                  % (f, per_layer(api_tab), per_layer(tab)))
            for l in r.layers:
                check(("\n  " + l["name"][:12]) in tab, "%s: layer %s not in the table" % (f, l["name"]))
        n += 1
    # a model document (dict) gives what its file gives
    path = os.path.join(EXAMPLES, "resnet18.json")
    with open(path) as fh:
        doc = json.load(fh)
    check(vc.estimate(doc, batch=7).to_json() == vc.estimate(path, batch=7).to_json(),
          "a dict and its file give different estimates")
    # a Hugging Face config.json as a dict gives what the CLI gives on the file
    hf = os.path.join(ROOT, "tests", "data", "hf", "gpt2.json")
    with open(hf) as fh:
        cfg = json.load(fh)
    rc, out, err = cli([hf, "-f", "json", "-b", "2"])
    check(rc == 0, "gpt2.json: CLI exit %d: %s" % (rc, err.strip()))
    got = json.loads(vc.estimate(cfg, batch=2).to_json())
    want = json.loads(out)
    check(got["memory"] == want["memory"] and got["parameters"] == want["parameters"],
          "an HF config dict and its file give different estimates")
    # --seq and --max-seq on a config.json: the API's JSON and table are the CLI's
    llama = os.path.join(ROOT, "tests", "data", "hf", "llama-3.1-8b.json")
    for args, kw in ((["-p", "bf16", "--seq", "4096", "-b", "2"], dict(precision="bf16", seq=4096, batch=2)),
                     (["-p", "bf16", "-g", "rtx4090", "--max-seq"], dict(precision="bf16", gpu="rtx4090", max_seq=True)),
                     (["-b", "2", "-g", "h100-80gb:90%", "--max-seq", "-o", "adamw"],
                      dict(batch=2, gpu="h100-80gb:90%", max_seq=True, optim="adamw")),
                     (["-p", "bf16", "--seq", "8192", "--loss", "liger"], dict(precision="bf16", seq=8192, loss="liger")),
                     (["-p", "bf16", "-g", "rtx4090", "--max-seq", "--loss", "cce"],
                      dict(precision="bf16", gpu="rtx4090", max_seq=True, loss="cce"))):
        rc, out, err = cli([llama, "-f", "json"] + args)
        check(rc in (0, 1), "llama-3.1-8b.json %s: CLI exit %d: %s" % (args, rc, err.strip()))
        r = vc.estimate(llama, **kw)
        check(r.to_json() == out, "llama-3.1-8b.json %s: API JSON differs from the CLI's:\n%s\n---\n%s"
              % (args, r.to_json(), out))
        rc, tab, _ = cli([llama] + args)
        if kw.get("max_seq"):
            line = "max seq on %s, batch %d: %d tokens" % (r.gpu.name, r.batch, r.max_seq())
            check(line in tab and line in str(r), "llama-3.1-8b.json %s: %r not in both tables" % (args, line))
    # tensor and sequence parallelism (--tp, --sp): the API's JSON and table are the CLI's
    for args, kw in ((["-p", "bf16", "--seq", "1024", "--tp", "8", "--gpus", "8"], dict(precision="bf16", seq=1024, tp=8, gpus=8)),
                     (["-p", "bf16", "--seq", "1024", "--tp", "4", "--sp", "--gpus", "16", "--parallel", "zero2"],
                      dict(precision="bf16", seq=1024, tp=4, sp=True, gpus=16, parallel="zero2"))):
        rc, out, err = cli([llama, "-f", "json"] + args)
        check(rc == 0, "llama-3.1-8b.json %s: CLI exit %d: %s" % (args, rc, err.strip()))
        r = vc.estimate(llama, **kw)
        check(r.to_json() == out, "llama-3.1-8b.json %s: API JSON differs from the CLI's:\n%s\n---\n%s"
              % (args, r.to_json(), out))
        rc, tab, _ = cli([llama] + args)
        check(str(r).splitlines()[2] == tab.splitlines()[2], "%s: header differs: %r vs %r"
              % (args, str(r).splitlines()[2], tab.splitlines()[2]))
    # max_seq() on a GPU not given to estimate(), from a dict
    with open(llama) as fh:
        cfg = json.load(fh)
    rc, out, _ = cli([llama, "-f", "json", "-g", "a100-40gb", "--max-seq"])
    check(vc.estimate(cfg).max_seq("a100-40gb") == json.loads(out)["max_seq"], "max_seq('a100-40gb') != --max-seq")
    # max_batch() against --max-batch on a GPU not given to estimate()
    r = vc.estimate(path, batch=2)
    rc, out, _ = cli([path, "-f", "json", "-g", "rtx3090", "--max-batch"])
    check(r.max_batch("rtx3090") == json.loads(out)["max_batch"], "max_batch('rtx3090') != --max-batch")
    # and on the estimate's own GPU
    check(vc.estimate(path, batch=2, gpu="rtx3090").max_batch() == json.loads(out)["max_batch"],
          "estimate(gpu='rtx3090').max_batch() != --max-batch")
    rc, out, _ = cli([llama, "-f", "json", "-g", "rtx4090", "--max-seq", "-p", "bf16"])
    check(vc.estimate(llama, gpu="rtx4090", precision="bf16", seq=100).max_seq() == json.loads(out)["max_seq"],
          "estimate(gpu='rtx4090', seq=100).max_seq() != --max-seq")
    print("matrix: %d option sets, JSON byte-identical to the CLI's" % n)


def test_errors(vc):
    bad = os.path.join(ROOT, "tests", "bad")
    files = sorted(f for f in os.listdir(bad) if f.endswith(".json"))[:12]
    for f in files:
        p = os.path.join(bad, f)
        rc, out, err = cli([p])
        try:
            vc.estimate(p)
            check(rc == 0, "%s: the CLI refuses it (%s), the API does not" % (f, err.strip()))
        except vc.VramcalcError as e:
            check(rc == 2 and err == "vramcalc: %s\n" % getattr(e, "cli_message", None),
                  "%s: API error %r, CLI %r" % (f, str(e), err.strip()))
    for kw, what in ((dict(optim="adamx"), "optim"), (dict(precision="fp8"), "precision"),
                     (dict(batch=0), "batch"), (dict(gpu="rtx9999"), "gpu"), (dict(workspace="12 parsecs"), "workspace"),
                     (dict(max_batch=True), "max_batch"), (dict(input_size=(3, 0, 0)), "input_size"),
                     (dict(max_seq=True), "max_seq"), (dict(max_seq=True, gpu="rtx4090"), "config.json"),
                     (dict(seq=128), "config.json"), (dict(loss="liger"), "config.json"),
                     (dict(loss="fused"), "loss"), (dict(tp=2, gpus=2), "tp"), (dict(tp=0), "tp="),
                     (dict(input_size="3,0,0"), "input_size=")):
        try:
            vc.estimate(os.path.join(EXAMPLES, "resnet18.json"), **kw)
            check(False, "%r accepted" % (kw,))
        except vc.VramcalcError as e:
            check(what in str(e), "%r: message %r does not name %s" % (kw, str(e), what))
    # generation (issue 13): the API's answers are the CLI's
    hf = os.path.join(ROOT, "tests", "data", "hf", "llama-3.1-8b.json")
    # --loss liger/cce on a tensor-parallel rank: refused naming --loss (src/engine/loss.c tp_why), as the CLI
    for loss in ("liger", "cce"):
        rc, out, err = cli([hf, "--loss", loss, "--tp", "2", "--gpus", "2"])
        try:
            vc.estimate(hf, loss=loss, tp=2, gpus=2)
            check(False, "loss=%s with tp=2 accepted" % loss)
        except vc.VramcalcError as e:
            check(rc == 2 and err == "vramcalc: %s\n" % getattr(e, "cli_message", None) and
                  ": --loss: %s with --tp is not modelled" % loss in e.cli_message,
                  "loss=%s tp=2: API error %r, CLI %d %r" % (loss, str(e), rc, err.strip()))
    rc, out, _ = cli([hf, "--serve", "--gpu", "h100-80gb", "-p", "bf16", "--prompt", "7168", "--new-tokens", "1024",
                      "-f", "json"])
    s = vc.serve(hf, "h100-80gb", prompt=7168, new_tokens=1024)
    check(rc == 0 and json.loads(out)["serve"]["blocks"] == s.blocks and s.concurrency == s.blocks // 512,
          "serve() != vramcalc --serve")
    # offload and FSDP2's policy by their CLI names, as the CLI gives them
    rc, out, _ = cli([hf, "--gpus", "8", "--parallel", "fsdp2", "--fsdp-param-dtype", "bf16", "--fsdp-reduce-dtype", "fp32",
                      "-f", "json"])
    r = vc.estimate(hf, gpus=8, parallel="fsdp2", fsdp_param_dtype="bf16", fsdp_reduce_dtype="fp32")
    check(rc == 0 and json.loads(out)["memory"]["peak_allocated"] == r.memory.peak_allocated,
          "estimate(fsdp_param_dtype=...) != vramcalc --fsdp-param-dtype")
    # fully_shard's reshard_after_forward and HSDP's replicas: the same estimate, and the JSON names them
    rc, out, _ = cli([hf, "--gpus", "8", "--parallel", "fsdp2", "--fsdp-reshard-after-forward", "2", "--fsdp-replicate",
                      "2", "-f", "json"])
    r = vc.estimate(hf, gpus=8, parallel="fsdp2", fsdp_reshard_after_forward=2, fsdp_replicate=2)
    check(rc == 0 and json.loads(out)["memory"]["peak_allocated"] == r.memory.peak_allocated and
          json.loads(out)["parallel"] == {"layout": "fsdp2", "gpus": 8, "reshard_after_forward": 2, "replicate": 2},
          "estimate(fsdp_reshard_after_forward=2, fsdp_replicate=2) != vramcalc --fsdp-reshard-after-forward 2 "
          "--fsdp-replicate 2")
    # DDP's and ZeroRedundancyOptimizer's bucket views: the same estimate, and the JSON names them
    rc, out, _ = cli([hf, "--gpus", "4", "--parallel", "zero1-torch", "--gradient-as-bucket-view",
                      "--parameters-as-bucket-view", "-f", "json"])
    r = vc.estimate(hf, gpus=4, parallel="zero1-torch", gradient_as_bucket_view=True, parameters_as_bucket_view=True)
    check(rc == 0 and json.loads(out)["memory"]["peak_allocated"] == r.memory.peak_allocated and
          json.loads(out)["parallel"] == {"layout": "zero1-torch", "gpus": 4, "gradient_as_bucket_view": True,
                                          "parameters_as_bucket_view": True},
          "estimate(gradient_as_bucket_view=True, parameters_as_bucket_view=True) != vramcalc --gradient-as-bucket-view "
          "--parameters-as-bucket-view")
    # DeepSpeed ZeRO's overlap_comm: the same estimate, and the JSON names it (docs/parallel.md 1.7)
    rc, out, _ = cli([hf, "--gpus", "8", "--parallel", "zero2", "--ds-overlap-comm", "true", "-f", "json"])
    r = vc.estimate(hf, gpus=8, parallel="zero2", ds_overlap_comm=True)
    check(rc == 0 and json.loads(out)["memory"]["peak_allocated"] == r.memory.peak_allocated and
          json.loads(out)["parallel"] == {"layout": "zero2", "gpus": 8, "overlap_comm": True},
          "estimate(ds_overlap_comm=True) != vramcalc --ds-overlap-comm true")
    rc, out, _ = cli([hf, "--gpus", "8", "--parallel", "zero3", "--offload", "params", "-f", "json"])
    r = vc.estimate(hf, gpus=8, parallel="zero3", offload="params")
    check(rc == 0 and json.loads(out)["memory"]["peak_allocated"] == r.memory.peak_allocated,
          "estimate(offload='params') != vramcalc --offload params")
    # ZeRO-Infinity: the same estimate, and the JSON names the device (docs/parallel.md 1.9)
    rc, out, _ = cli([hf, "--gpus", "8", "--parallel", "zero3", "--offload", "params", "--offload-device", "nvme",
                      "--nvme-gds", "-f", "json"])
    r = vc.estimate(hf, gpus=8, parallel="zero3", offload="params", offload_device="nvme", nvme_gds=True)
    check(rc == 0 and json.loads(out)["memory"]["peak_allocated"] == r.memory.peak_allocated and
          json.loads(out)["parallel"] == {"layout": "zero3", "gpus": 8, "offload": "params", "offload_device": "nvme",
                                          "use_gds": True},
          "estimate(offload_device='nvme', nvme_gds=True) != vramcalc --offload-device nvme --nvme-gds")
    # no precision: vLLM's --dtype auto, the same in both (a float32 config on a T4, sm75: fp16)
    small = os.path.join(ROOT, "tests", "data", "hf", "llama-small-measured.json")
    rc, out, _ = cli([small, "--serve", "--gpu", "t4", "-f", "json"])
    s = vc.serve(small, "t4")
    check(rc == 0 and json.loads(out)["serve"]["precision"] == "fp16" and json.loads(out)["serve"]["blocks"] == s.blocks,
          "serve() without precision != vramcalc --serve without -p (vLLM's dtype auto)")
    rc, out, _ = cli([hf, "--mode", "generate", "--new-tokens", "1024", "-p", "bf16", "--gpu", "rtx4090",
                      "--max-context", "-f", "json"])
    n = vc.max_context(hf, "rtx4090", new_tokens=1024, precision="bf16")
    check(json.loads(out)["max_context"]["prompt"] == n, "max_context() != vramcalc --max-context")
    r = vc.estimate(hf, mode="generate", prompt=1024, new_tokens=64, precision="bf16")
    rc, out, _ = cli([hf, "--mode", "generate", "--prompt", "1024", "--new-tokens", "64", "-p", "bf16", "-f", "json"])
    check(json.loads(out)["generate"] == r.to_dict()["generate"], "estimate(mode='generate') != the CLI's")
    rc, out, _ = cli(["--list-layers"])
    check([k for k, _ in vc.kinds()] == [l.split()[0] for l in out.splitlines() if l.strip()],
          "kinds() != vramcalc --list-layers")
    print("errors: %d bad files and 17 bad options" % len(files))


def test_torch(vc):
    try:
        import torch
        import torchvision
    except ImportError:
        print("torch/torchvision absent: skipped")
        sys.exit(77)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import torch2vramcalc as t2v
    torch.manual_seed(0)
    cases = [(torchvision.models.resnet18(), (3, 96, 96), dict(batch=4, optim="adamw", precision="amp-bf16",
                                                               gpu="rtx4090"),
              ["-b", "4", "-o", "adamw", "-p", "amp-bf16", "-g", "rtx4090"]),
             (torchvision.models.mobilenet_v3_small(), "3,64,64", dict(batch=2, per_layer=True),
              ["-b", "2", "--per-layer"])]
    for m, size, kw, args in cases:
        r = vc.estimate(m, input_size=size, **kw)
        doc, info = t2v.export(m, [t2v.parse_input(size if isinstance(size, str) else ",".join(map(str, size)))],
                               name=type(m).__name__)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            fh.write(t2v.dumps(doc))
        try:
            rc, out, err = cli([fh.name, "-f", "json"] + args)
        finally:
            os.unlink(fh.name)
        check(r.to_json() == out, "%s: API on the module != CLI on the exported file" % type(m).__name__)
        check(r.parameters == sum(p.numel() for p in m.parameters()),
              "%s: parameters %d, torch %d" % (type(m).__name__, r.parameters, sum(p.numel() for p in m.parameters())))
    # reports name layers by the module's qualified name: resnet18's last ReLU is layer4.1.relu
    r = vc.estimate(torchvision.models.resnet18(), input_size=(3, 64, 64), batch=2, per_layer=True)
    relus = [r.module_of(l["name"]) for l in r.layers if l["kind"] == "ReLU"]
    check(relus[-1] == "layer4.1.relu" and relus[0] == "relu", "qualified names: %s" % relus[-3:])
    check(r.module_of(r.layers[-1]["name"]) == "fc", "last layer: %s" % r.module_of(r.layers[-1]["name"]))
    check(r.peak_module in str(r), "the table names the peak by module")
    test_torch_errors(vc, t2v, torch)
    print("torch: %d modules exported on the fly, equal to the CLI on the exported files" % len(cases))


def test_torch_errors(vc, t2v, torch):
    """The exporter's failures are VramcalcErrors (ExportError) and still their own classes; the
    exporter options are export()'s; tracing inputs are made on the meta device."""
    import inspect
    from vramcalc import _options
    nn = torch.nn
    params = inspect.signature(t2v.export).parameters
    for k in _options.EXPORT:
        check(k in params, "vramcalc._options.EXPORT's %s is no parameter of torch2vramcalc.export" % k)

    class Branchy(nn.Module):  # Python control flow on a tensor's value: torch.fx cannot trace it
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x) if x.sum() > 0 else x

    for module, size, cls in ((Branchy(), (4,), t2v.TraceError),
                              (nn.Sequential(nn.Linear(4, 4)), (5,), RuntimeError)):  # a shape mismatch
        try:
            vc.estimate(module, input_size=size)
            check(False, "%s: exported" % type(module).__name__)
        except vc.VramcalcError as e:
            check(isinstance(e, vc.ExportError) and isinstance(e, cls) and e.option == "model" and str(e),
                  "%s: %s is not an ExportError and a %s: %s" % (type(module).__name__, type(e).__mro__,
                                                                 cls.__name__, e))
    # an op without a kind: Unmapped, its items readable
    sys.path.insert(0, os.path.join(ROOT, "tests", "roundtrip"))
    import user_models
    spectral = dict((n, (c, s)) for n, c, s in user_models.MODELS)["spectral_pool"]
    try:
        vc.estimate(spectral[0](), input_size=spectral[1])
        check(False, "spectral_pool exported without allow_unknown")
    except vc.VramcalcError as e:
        check(isinstance(e, t2v.Unmapped) and e.items and "no vramcalc kind" in str(e),
              "spectral_pool: %s %s" % (type(e).__mro__, e))
    r = vc.estimate(spectral[0](), input_size=spectral[1], allow_unknown=True)
    check("approximate" in r.model, "allow_unknown=True: %s" % r.model)
    # the exporter's options are checked too; bad input sizes name input_size
    for kw, name in ((dict(flatt=True), "flatt"), (dict(input_size=(4, 2 ** 64)), "input_size"),
                     (dict(input_size="4:float16"), "input_size"), (dict(input_size=(4, True)), "input_size"),
                     (dict(input_size=(4,), name="a\0b"), "name")):
        try:
            vc.estimate(nn.Linear(4, 4), **dict(dict(input_size=(4,)), **kw))
            check(False, "%r accepted" % kw)
        except vc.VramcalcError as e:
            check(e.option == name and name in str(e), "%r: %s (option %s)" % (kw, e, e.option))
    try:
        vc.export(nn.Linear(4, 4), (4,), flatt=True)
        check(False, "export(flatt=True) accepted")
    except TypeError as e:
        check("did you mean 'flat'?" in str(e), "export(flatt=True): %s" % e)
    # tracing allocates nothing for the input: 2**26 x 4 floats at the exporter's batch 2 were
    # 2 GiB of CPU memory (torch.randn, then .to("meta")) and 4.4 GB before the process was killed
    code = ("import os, resource, sys, torch; sys.path.insert(0, %r); import vramcalc as vc\n"
            "m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n"
            "vc.estimate(m, input_size=(4, 4))\n"
            "a = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "r = vc.estimate(m, input_size=(2 ** 26, 4))\n"
            "b = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "print((b - a) // 1024, r.parameters)" % os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    grew = p.stdout.split()
    check(p.returncode == 0 and len(grew) == 2 and int(grew[0]) < 64 and grew[1] == "20",
          "input_size=(2**26, 4): peak RSS grew %s MiB (want < 64): %s" % (grew[:1], p.stderr[-300:]))


def test_install():
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, VRAMCALC_LIB=os.path.abspath(A.lib))
        # a PEP 517 build (python/pyproject.toml) with the setuptools installed, nothing fetched
        p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-build-isolation",
                            "--target", tmp, os.path.join(ROOT, "python")], capture_output=True, text=True, env=env,
                           cwd=tmp)
        check(p.returncode == 0, "pip install failed: %s" % p.stderr[-2000:])
        if p.returncode:
            return
        env = {k: v for k, v in os.environ.items() if k != "VRAMCALC_LIB"}
        env["PYTHONPATH"] = tmp
        code = ("import vramcalc, sys; r = vramcalc.estimate(sys.argv[1], batch=3); "
                "sys.stdout.write(vramcalc.__file__ + '\\n' + r.to_json())")
        q = subprocess.run([sys.executable, "-c", code, os.path.join(EXAMPLES, "resnet18.json")],
                           capture_output=True, text=True, env=env, cwd=tmp)
        first, _, rest = q.stdout.partition("\n")
        check(q.returncode == 0 and first.startswith(tmp), "installed package: %s %s" % (q.stdout[:200], q.stderr[-500:]))
        rc, out, _ = cli([os.path.join(EXAMPLES, "resnet18.json"), "-f", "json", "-b", "3"])
        check(rest == out, "the installed package's JSON differs from the CLI's")
        for f in ("libvramcalc.so", "_t2v.py"):
            check(os.path.exists(os.path.join(tmp, "vramcalc", f)), "the installed package has no %s" % f)
    print("install: pip install --target gives a working package")


def test_naming(vc):
    """A model directory and a Hugging Face id from the local cache (src/model/resolve.c): the
    library resolves them, so the API answers as the CLI does, and refuses alike."""
    import shutil
    import tempfile
    cfg = os.path.join(ROOT, "tests", "data", "hf", "qwen3-8b.json")
    tmp = tempfile.mkdtemp(prefix="vc_naming")
    old = os.environ.get("HF_HUB_CACHE")
    try:
        snap = os.path.join(tmp, "models--Org--Model", "snapshots", "abc")
        os.makedirs(snap)
        shutil.copy(cfg, os.path.join(snap, "config.json"))
        os.environ["HF_HUB_CACHE"] = tmp
        want = json.loads(vc.estimate(cfg).to_json())
        for name in ("Org/Model", snap):
            got = json.loads(vc.estimate(name).to_json())
            check(got["memory"] == want["memory"] and got["parameters"] == want["parameters"],
                  "%s: not the estimate of the config it names" % name)
        rc, out, err = cli(["Org/Absent"], env=dict(os.environ))
        try:
            vc.estimate("Org/Absent")
            check(False, "Org/Absent: the API answered")
        except vc.VramcalcError as e:
            check(rc == 2 and err == "vramcalc: %s\n" % getattr(e, "cli_message", None),
                  "Org/Absent: API error %r, CLI %r" % (str(e), err.strip()))
            check("huggingface-cli download Org/Absent config.json" in str(e), "Org/Absent: %r" % str(e))
    finally:
        if old is None:
            os.environ.pop("HF_HUB_CACHE", None)
        else:
            os.environ["HF_HUB_CACHE"] = old
        shutil.rmtree(tmp)


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--abi")
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--install", action="store_true")
    A = ap.parse_args()
    os.environ["VRAMCALC_LIB"] = os.path.abspath(A.lib)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import vramcalc as vc
    if A.torch:
        test_torch(vc)
    elif A.install:
        test_install()
    else:
        test_layout(vc)
        test_matrix(vc)
        test_errors(vc)
        test_naming(vc)
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
