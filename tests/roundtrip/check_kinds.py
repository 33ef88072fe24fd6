#!/usr/bin/python3
"""The Python tools' kind tables against `vramcalc --list-layers` (issue 11, item 6).

    check_kinds.py --cli build/vramcalc

* tools/torch2vramcalc.py KINDS (how the exporter writes each kind) has exactly the CLI's
  kinds: a kind added in C and not in the exporter's table fails here, naming the kind;
* every kind the exporter's code emits (`(node, "Kind"` in its source) is a CLI kind, and
  every op handler KINDS names exists (_Exporter.op_NAME);
* tools/vctorch.py _KINDS (the builder the round trips measure with) plus its Sequential
  handling has exactly the CLI's kinds.
Exit 77 when torch is absent (both tools import it).
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("check_kinds: torch not importable; skipping")
        return 77
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import torch2vramcalc as t2v
    import vctorch
    out = subprocess.run([a.cli, "--list-layers"], capture_output=True, text=True, check=True).stdout
    cli = [l.split()[0] for l in out.splitlines() if l.strip()]
    fails = []
    for k in cli:
        if k not in t2v.KINDS:
            fails.append("kind %s is in vramcalc --list-layers but not in tools/torch2vramcalc.py KINDS "
                         "(add how the exporter writes it: a module in _module_table, an op in _OP_KINDS)" % k)
    for k, e in t2v.KINDS.items():
        if k not in cli:
            fails.append("torch2vramcalc KINDS has %s, which vramcalc does not know" % k)
        if not (e["modules"] or e["ops"] or e["other"]):
            fails.append("torch2vramcalc KINDS[%s] says nothing about how it is written" % k)
        for op in e["ops"]:
            if op != "output" and not hasattr(t2v._Exporter, "op_" + op) and op != "getitem":
                fails.append("torch2vramcalc KINDS[%s] names op %r, which has no _Exporter.op_%s" % (k, op, op))
    with open(t2v.__file__) as fh:
        src = fh.read()
    emitted = set(re.findall(r'\(node, "([A-Z]\w+)"', src)) | set(re.findall(r'\("([A-Z]\w+)", "(?:a new|saves)', src))
    for k in sorted(emitted):
        if k not in cli:
            fails.append("torch2vramcalc emits kind %r, which vramcalc does not know" % k)
    vk = set(vctorch._KINDS) | {"Sequential"}  # vctorch builds Sequential scopes itself
    for k in cli:
        if k not in vk:
            fails.append("kind %s is in vramcalc --list-layers but not in tools/vctorch.py _KINDS" % k)
    for k in sorted(vk - set(cli)):
        fails.append("vctorch _KINDS has %s, which vramcalc does not know" % k)
    for f in fails:
        print("FAIL: " + f)
    print("check_kinds: %d CLI kinds; exporter table %d, emitted by its code %d, vctorch %d; %d problem(s)"
          % (len(cli), len(t2v.KINDS), len(emitted), len(vk), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
