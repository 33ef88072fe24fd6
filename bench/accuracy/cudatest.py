#!/usr/bin/python3
"""cudatest.py -- checks the CUDA measurement path's code where no GPU is available.

    /usr/bin/python3 bench/accuracy/cudatest.py [--cli build/vramcalc]

It cannot check any number a GPU would give.  It checks:
  * `measure.py --device cuda` without CUDA exits 2 with one line on stderr;
  * the per-interval peak bookkeeping (cudameasure.Peaks) against a scripted device;
  * the nvidia-smi parsing, with a stand-in nvidia-smi on PATH (this process listed,
    not listed, no number, nvidia-smi missing);
  * the preset match of gpu_compare.py (with --cli, or build/vramcalc when present);
  * every example model through the whole CUDA path in dry-run mode
    (VRAMCALC_CUDA_DRYRUN=1: on the CPU, no statistics), train and infer, with the
    stand-in nvidia-smi reporting the measuring process, and that the kinds vctorch
    builds are restored afterwards;
  * gpu_compare.py end to end in dry-run mode on two suite cases, and --from-raw.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
PY = sys.executable
MEASURE = os.path.join(HERE, "measure.py")

passed, failed = [0], [0]


def check(ok, what):
    if ok:
        passed[0] += 1
    else:
        failed[0] += 1
        print("FAIL: %s" % what)


def fake_smi(dirpath, body):
    path = os.path.join(dirpath, "nvidia-smi")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)


def env_with(path_dir=None, dry=False, path=None):
    env = dict(os.environ)
    env.pop("VRAMCALC_CUDA_DRYRUN", None)
    if dry:
        env["VRAMCALC_CUDA_DRYRUN"] = "1"
    if path is not None:
        env["PATH"] = path
    elif path_dir:
        env["PATH"] = path_dir + os.pathsep + env.get("PATH", "")
    return env


def test_no_cuda():
    import torch
    if torch.cuda.is_available():
        print("skip: CUDA is available here, the no-CUDA exit is not tested")
        return
    p = subprocess.run([PY, MEASURE, os.path.join(HERE, "models", "mlp.json"), "--device", "cuda", "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with())
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and p.stdout == "" and len(lines) == 1 and "CUDA is not available" in lines[0],
          "--device cuda without CUDA: rc %d, stdout %r, stderr %r" % (p.returncode, p.stdout[:80], p.stderr))
    p = subprocess.run([PY, MEASURE, os.path.join(HERE, "models", "mlp.json"), "--precision", "amp-bf16"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with())
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, "amp on the CPU path: exit 2, one line")


def test_peaks():
    import cudameasure

    class Dev:
        def __init__(self):
            self.cur, self.peak, self.res, self.rpeak, self.resets, self.syncs = 0, 0, 0, 0, 0, 0

        def alloc(self, n):
            self.cur += n
            self.peak = max(self.peak, self.cur)
            if self.cur > self.res:
                self.res = self.cur
            self.rpeak = max(self.rpeak, self.res)

        def sync(self):
            self.syncs += 1

        def reset_peak(self):
            self.resets += 1
            self.peak, self.rpeak = self.cur, self.res

        def max_allocated(self):
            return self.peak

        def max_reserved(self):
            return self.rpeak

    d = Dev()
    pk = cudameasure.Peaks(d)
    d.alloc(100)
    pk.mark("s1.fwd")      # not started: no reading
    d.alloc(1000)          # step 1's high point must not count
    d.alloc(-1000)
    pk.start("s2.fwd")
    d.alloc(50)
    pk.mark("s2.bwd")
    d.alloc(300)
    d.alloc(-300)          # transient inside s2.bwd: 450
    pk.mark("s2.opt")
    d.alloc(200)
    d.alloc(-200)          # 350 in s2.opt
    pk.stop()
    check(pk.best == 450 and pk.where == "s2.bwd", "Peaks: best %r at %r, want 450 at s2.bwd" % (pk.best, pk.where))
    check(pk.reserved == 1100, "Peaks: reserved %r, want 1100 (step 1's segment stays cached)" % pk.reserved)
    check(pk.reads == 3 and d.syncs == 2, "Peaks: %d readings, %d syncs" % (pk.reads, d.syncs))


def test_smi(tmp):
    import cudameasure
    pid = os.getpid()
    old = os.environ.get("PATH", "")
    try:
        os.environ["PATH"] = tmp + os.pathsep + old
        fake_smi(tmp, 'echo "1, 10"\necho "%d, 1234"\necho "%d, 6"\necho "77, 9"' % (pid, pid))
        total, why = cudameasure.smi_process_total(pid)
        check(total == 1240 * 1048576 and why is None, "smi: %r %r" % (total, why))
        total, why = cudameasure.smi_process_total(pid + 100000)
        check(total is None and "not in nvidia-smi" in why, "smi, pid not listed: %r %r" % (total, why))
        fake_smi(tmp, 'echo "%d, [N/A]"' % pid)
        total, why = cudameasure.smi_process_total(pid)
        check(total is None and "no number" in why, "smi, [N/A]: %r %r" % (total, why))
        fake_smi(tmp, 'echo "boom" >&2; exit 9')
        total, why = cudameasure.smi_process_total(pid)
        check(total is None and "exited 9" in why, "smi fails: %r %r" % (total, why))
        os.environ["PATH"] = os.path.join(tmp, "nothing-here")
        total, why = cudameasure.smi_process_total(pid)
        check(total is None and "not found" in why, "smi missing: %r %r" % (total, why))
    finally:
        os.environ["PATH"] = old
        os.unlink(os.path.join(tmp, "nvidia-smi"))


def test_preset(cli):
    import gpu_compare
    want = {"NVIDIA H100 80GB HBM3": "h100-80gb", "NVIDIA H100 PCIe": "h100-pcie", "NVIDIA A100-SXM4-40GB": "a100-40gb",
            "NVIDIA A100-SXM4-80GB": "a100-80gb", "NVIDIA GeForce RTX 4090": "rtx4090", "Tesla T4": "t4",
            "NVIDIA L4": "l4", "NVIDIA H200": "h200", "NVIDIA A100 80GB PCIe": "a100-80gb",
            "Some Unknown GPU": None, None: None}
    for name, preset in want.items():
        got = gpu_compare.match_preset(cli, name)
        check(got == preset, "preset for %r: %r, want %r" % (name, got, preset))


MODELS = [("mlp.json", ["-b", "4", "-o", "adam"]), ("gpt_tiny.json", ["-b", "2", "-o", "adamw"]),
          ("seq2seq.json", ["-b", "2", "-o", "momentum"]), ("attn_ops.json", ["-b", "2", "-o", "sgd"]),
          ("frozen_ckpt.json", ["-b", "2", "-o", "adam"]), ("encoder_layer.json", ["-b", "2", "-o", "none"]),
          ("resnet_small.json", ["-b", "2", "--mode", "infer", "--precision", "bf16"]),
          ("encoder_layer.json", ["-b", "2", "-o", "adamw", "--precision", "amp-bf16", "--attention", "math"]),
          ("mlp.json", ["-b", "2", "--mode", "infer", "--precision", "amp-bf16"])]


def test_dry_models(tmp):
    fake_smi(tmp, 'case "$*" in *compute-apps*) echo "$PPID, 700";; *) echo "555.42";; esac')
    for model, extra in MODELS:
        cmd = [PY, MEASURE, os.path.join(HERE, "models", model), "--device", "cuda", "--json"] + extra
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env_with(tmp, dry=True))
        what = "dry run %s %s" % (model, " ".join(extra))
        if p.returncode != 0:
            check(False, "%s: rc %d: %s" % (what, p.returncode, p.stderr.strip()[-400:]))
            continue
        r = json.loads(p.stdout)
        ok = (r["device"] == "cpu (dry run)" and r["compat"] == "native" and r["params"] > 0
              and r["nvidia_smi_total"] == 700 * 1048576 and r["gpu"]["driver"] == "555.42"
              and r["peak_allocated"] is None and r["reads"] > 0
              and all(k in r for k in ("reserved", "cuda_context", "torch_cuda", "cudnn", "steady_bytes")))
        check(ok, "%s: %s" % (what, {k: r.get(k) for k in ("device", "nvidia_smi_total", "reads", "gpu")}))
        if "-o" in extra and extra[extra.index("-o") + 1] in ("adam", "adamw"):
            # Adam keeps two states the size of the trainable parameters (fp32 here)
            check(r["optimizer_state_bytes"] >= 2 * 4 * r["trainable_params"] and
                  r["optimizer_state_bytes"] < 2 * 4 * r["trainable_params"] + 2 * 512 * 200,
                  "%s: optimizer_state_bytes %d for %d trainable" % (what, r["optimizer_state_bytes"],
                                                                     r["trainable_params"]))
    os.unlink(os.path.join(tmp, "nvidia-smi"))


def test_kinds_restored():
    import torch
    import cudameasure
    import vctorch
    before = dict(vctorch._KINDS)
    with cudameasure.native_kinds(vctorch, torch, []):
        pass
    check(vctorch._KINDS == before, "native_kinds restores vctorch._KINDS")


def test_compare(tmp, cli):
    out = os.path.join(tmp, "gpu.md")
    ids = "mlp_b64_adamw_fp32,gpt_prenorm_ckpt_b4_adam_bf16"
    p = subprocess.run([PY, os.path.join(HERE, "gpu_compare.py"), "--cli", cli, "--out", out, "--only", ids,
                        "--python", PY], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=env_with(dry=True))
    check(p.returncode == 0, "gpu_compare dry run: rc %d: %s" % (p.returncode, p.stderr.strip()[-400:]))
    if p.returncode != 0:
        return
    txt = open(out).read()
    check(txt.startswith("## GPU measurements") and "DRY RUN" in txt and txt.count("| `mlp_b64_adamw_fp32` |") == 1
          and "| `gpt_prenorm_ckpt_b4_adam_bf16` |" in txt, "gpu_compare table")
    raw = os.path.join(tmp, "gpu.raw.json")
    check(os.path.exists(raw), "gpu_compare wrote %s" % raw)
    out2 = os.path.join(tmp, "gpu2.md")
    p = subprocess.run([PY, os.path.join(HERE, "gpu_compare.py"), "--cli", cli, "--out", out2, "--from-raw", raw],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with())
    check(p.returncode == 0 and open(out2).read() == txt, "--from-raw renders the same table")
    import torch
    if not torch.cuda.is_available():
        p = subprocess.run([PY, os.path.join(HERE, "gpu_compare.py"), "--cli", cli, "--out", out, "--only", ids,
                            "--python", PY], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env_with())
        check(p.returncode == 2 and "CUDA is not available" in p.stderr, "gpu_compare without CUDA: exit 2")


def main(argv):
    cli = argv[argv.index("--cli") + 1] if "--cli" in argv else os.path.join(ROOT, "build", "vramcalc")
    have_cli = os.access(cli, os.X_OK)
    with tempfile.TemporaryDirectory() as tmp:
        test_no_cuda()
        test_peaks()
        test_smi(tmp)
        test_kinds_restored()
        test_dry_models(tmp)
        if have_cli:
            test_preset(cli)
            test_compare(tmp, cli)
        else:
            print("skip: no vramcalc at %s (preset match, gpu_compare)" % cli)
    print("%d passed, %d failed" % (passed[0], failed[0]))
    return 1 if failed[0] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
