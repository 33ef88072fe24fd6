#!/usr/bin/python3
"""Writes a synthetic vramcalc model with N layers to stdout (bench/speed).

An MLP of alternating Linear and activation layers, every layer named, so
that 2,000 layers come to about 100 KB of JSON:

    /usr/bin/python3 bench/speed/gen_model.py 2000 > /tmp/m2000.json
    /usr/bin/python3 bench/speed/gen_model.py 10000 > /tmp/m10000.json

Only Linear and activation kinds are used so that the file loads with the
smallest set of layer families.
"""
import json
import sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    width = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    acts = ["ReLU", "GELU", "SiLU", "Tanh"]
    layers = []
    for i in range(n):
        if i % 2 == 0:
            layers.append({"type": "Linear", "in_features": width, "out_features": width,
                           "bias": i % 4 == 0, "name": "fc%d" % i})
        else:
            layers.append({"type": acts[(i // 2) % len(acts)], "name": "act%d" % i})
    model = {"name": "synthetic-mlp-%d" % n, "input": [width], "layers": layers}
    out = sys.stdout
    out.write('{\n  "name": %s,\n  "input": %s,\n  "layers": [\n' % (json.dumps(model["name"]), json.dumps(model["input"])))
    out.write(",\n".join("    " + json.dumps(l) for l in layers))
    out.write("\n  ]\n}\n")


if __name__ == "__main__":
    main()
