#!/usr/bin/env python3
"""fuzz/make_corpus_hf.py: writes fuzz/corpus_hf/, the seed programs of
fuzz/fuzz_hf.c (bytes: family, edits, options, format; see its header).
The option and value indices are read from fuzz_hf.c, so the seeds mean
what their names say. Run it again after changing the tables."""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
src = open(os.path.join(here, "fuzz_hf.c")).read()
block = src[src.index("static const option options[]"):src.index("#define NOPTIONS")]
opts = re.findall(r'\{"(--[a-z0-9-]+)", (NULL|V\((.*?)\))\}', block, re.S)
names = [o[0] for o in opts]
vals = {o[0]: re.findall(r'"((?:[^"\\]|\\.)*)"', o[2]) if o[2] else None for o in opts}
ninline = src[src.index("inline_families[] = {"):src.index("static int add_family")].count('"{\\"')
families = ["inline-%d" % i for i in range(ninline)] + sorted(
    f for f in os.listdir(os.path.join(here, "..", "tests", "data", "hf")) if f.endswith(".json"))


def opt(name, value=None):
    return [names.index(name), vals[name].index(value) if value is not None else 0]


def program(fam, options=(), fmt=1, edits=()):
    b = [families.index(fam), len(edits)]
    for k, v in edits:
        b += [k, v]
    b.append(len(options))
    for o in options:
        b += o
    b.append(fmt)
    return bytes(b)


seeds = {}
for f in families:
    base = f.replace(".json", "")
    seeds[base + "-train"] = program(f)
    seeds[base + "-generate"] = program(f, [opt("--mode", "generate"), opt("--gpu", "h100-80gb")])
seeds["gemma6-serve"] = program("inline-0", [opt("--serve"), opt("--gpu", "h100-80gb")])
seeds["gemma6-table"] = program("inline-0", fmt=0)
seeds["llama-zero3"] = program("inline-1", [opt("--parallel", "zero3"), opt("--gpus", "8"), opt("--gpu", "a100-40gb")])
seeds["llama-megatron-pp"] = program("inline-1", [opt("--parallel", "megatron"), opt("--gpus", "8"), opt("--tp", "2"),
                                                  opt("--pp", "2"), opt("--precision", "mixed-bf16")])
seeds["llama-qlora-csv"] = program("inline-1", [opt("--qlora"), opt("--grad-ckpt"), opt("--sweep", "1:4")], fmt=2)
seeds["llama-maxseq"] = program("inline-1", [opt("--max-seq"), opt("--gpu", "rtx4090")])
seeds["llama-maxcontext"] = program("inline-1", [opt("--mode", "generate"), opt("--max-context"), opt("--gpu", "rtx4090")])
seeds["llama-cache-quantized"] = program("inline-1", [opt("--mode", "generate"), opt("--cache", "quantized"), opt("--kv-bits", "2")])
seeds["mixtral-ep"] = program("inline-2", [opt("--ep", "2"), opt("--gpus", "2"), opt("--parallel", "megatron"),
                                           opt("--moe-imbalance", "1.5")])
seeds["qwen-moe-lora"] = program("inline-3", [opt("--lora", "8"), opt("--loss", "liger"), opt("--max-batch"),
                                              opt("--gpu", "h100-80gb")])
seeds["gpt2-serve-prompt"] = program("inline-4", [opt("--serve"), opt("--gpu", "h100-80gb"), opt("--prompt", "512"),
                                                  opt("--new-tokens", "256")])
seeds["roberta-seq"] = program("inline-5", [opt("--seq", "131072")])
seeds["llama-edit-maxpos-2p40"] = program("inline-1", [opt("--mode", "generate")], edits=[(2 * 12, 10)])  # max_position_embeddings: 2^40

out = os.path.join(here, "corpus_hf")
os.makedirs(out, exist_ok=True)
for name, data in sorted(seeds.items()):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print("%d seeds in %s" % (len(seeds), out), file=sys.stderr)
