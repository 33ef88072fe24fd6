#!/usr/bin/python3
"""Optimizer rows against the harness: each case measured by measure.py with the
optimizer replicated from its library's source (optim2x.py), compared with
`vramcalc MODEL --workspace 0 --attention math` for the same options.

    /usr/bin/python3 bench/accuracy/optim_compare.py [--cli build/vramcalc] [--remeasure]

Measurements are kept in bench/accuracy/logs/<optim>/<model>_b<batch>_<precision>_<impl>.json
and re-used unless --remeasure (--no-measure: only those). Prints one line per case; exits 1
when an optimizer state differs, or a peak that the harness measured in the optimizer step
(what the row decides) differs; a peak elsewhere (forward, backward) is reported only.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (harness optimizer, vramcalc --optim, --optim-impl)
OPTIMS = {"adafactor": [("adafactor", "adafactor", "forloop"), ("adafactor-foreach", "adafactor", "foreach")]}
MODELS = [("optim_mix", 1), ("optim_mix", 16), ("mlp", 8), ("mlp", 1), ("resnet_small", 1), ("gpt_tiny", 1), ("encoder_layer", 1), ("seq2seq", 1),
          ("gpt2_headsplit", 1), ("attn_ops", 1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"))
    ap.add_argument("--optim", default="adafactor", choices=sorted(OPTIMS))
    ap.add_argument("--remeasure", action="store_true")
    ap.add_argument("--no-measure", action="store_true", help="compare only the cases already measured")
    a = ap.parse_args()
    logs = os.path.join(HERE, "logs", a.optim)
    os.makedirs(logs, exist_ok=True)
    bad = n = other = 0
    for model, batch in MODELS:
        path = os.path.join(HERE, "models", model + ".json")
        for prec in ("fp32", "bf16"):
            for hkind, optim, impl in OPTIMS[a.optim]:
                log = os.path.join(logs, "%s_b%d_%s_%s.json" % (model, batch, prec, impl))
                if a.no_measure and not os.path.exists(log):
                    continue
                if a.remeasure or not os.path.exists(log):
                    out = subprocess.run([sys.executable, os.path.join(HERE, "measure.py"), path, "-b", str(batch),
                                          "-p", prec, "-o", hkind, "--json"], capture_output=True, text=True,
                                         check=True).stdout
                    with open(log, "w") as f:
                        f.write(out)
                with open(log) as f:
                    m = json.load(f)
                est = json.loads(subprocess.run([a.cli, path, "-b", str(batch), "-p", prec, "-o", optim,
                                                 "--optim-impl", impl, "--workspace", "0", "--attention", "math",
                                                 "-f", "json"], capture_output=True, text=True, check=True).stdout)
                d = est["memory"]["peak_allocated"] - m["peak_allocated"]
                ds = est["memory"]["optimizer_states"] - m["optimizer_state_bytes"]
                n += 1
                bad += ds != 0 or (d != 0 and m["peak_where"].startswith("s2.opt"))
                other += d != 0 and not m["peak_where"].startswith("s2.opt")
                print("%-15s b%-2d %-5s %-8s measured %11d (%-28s) vramcalc %11d (%-9s) diff %+d; states %d diff %+d"
                      % (model, batch, prec, impl, m["peak_allocated"], m["peak_where"].replace("\t", " ")[:28],
                         est["memory"]["peak_allocated"], est["peak"]["phase"], d, m["optimizer_state_bytes"], ds))
    print("%d cases: %d differ in the state or an optimizer-step peak; %d differ in a peak outside the step"
          % (n, bad, other))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
