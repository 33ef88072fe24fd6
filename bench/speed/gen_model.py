#!/usr/bin/python3
"""Writes a synthetic vramcalc model with N layers to stdout (bench/speed).

    /usr/bin/python3 bench/speed/gen_model.py 2000 > m2000.json     # ~100 KB
    /usr/bin/python3 bench/speed/gen_model.py 10000 > m10000.json   # ~520 KB
    /usr/bin/python3 bench/speed/gen_model.py 2000 --names > m2000n.json
    /usr/bin/python3 bench/speed/gen_model.py 2000 --seq > s2000.json      # issue 28's MLP

An MLP of alternating Linear (1024 -> 1024, bias on every other one) and
activation layers (ReLU, GELU, SiLU, Tanh), one layer per line, so that 2,000
layers come to about 100 KB of JSON. --names gives every layer a "name"
(fc0, act1, ...), which exercises the loader's name table. Only Linear and
activation kinds are used: every build of vramcalc has them.

--seq writes issue 28's sequence-shaped MLP instead: N/4 blocks of Linear
(512 -> 512), LayerNorm(512), GELU, Dropout(0.1), per-sample input [64, 512]
(2,000 layers: about 85 KB).
"""
import json
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    names = "--names" in sys.argv
    n = int(args[0]) if args else 2000
    if "--seq" in sys.argv:
        block = [{"type": "Linear", "in_features": 512, "out_features": 512},
                 {"type": "LayerNorm", "normalized_shape": [512]}, {"type": "GELU"}, {"type": "Dropout", "p": 0.1}]
        layers = [block[i % 4] for i in range(n)]
        sys.stdout.write('{\n  "name": %s,\n  "input": [64, 512],\n  "layers": [\n' % json.dumps("seq-mlp-%d" % n))
        sys.stdout.write(",\n".join("    " + json.dumps(l) for l in layers))
        sys.stdout.write("\n  ]\n}\n")
        return
    width = int(args[1]) if len(args) > 1 else 1024
    acts = ["ReLU", "GELU", "SiLU", "Tanh"]
    layers = []
    for i in range(n):
        if i % 2 == 0:
            layer = {"type": "Linear", "in_features": width, "out_features": width, "bias": i % 4 == 0}
            if names:
                layer["name"] = "fc%d" % i
        else:
            layer = {"type": acts[(i // 2) % len(acts)]}
            if names:
                layer["name"] = "act%d" % i
        layers.append(layer)
    out = sys.stdout
    out.write('{\n  "name": %s,\n  "input": [%d],\n  "layers": [\n' % (json.dumps("synthetic-mlp-%d" % n), width))
    out.write(",\n".join("    " + json.dumps(l) for l in layers))
    out.write("\n  ]\n}\n")


if __name__ == "__main__":
    main()
