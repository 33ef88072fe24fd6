#!/usr/bin/python3
"""check_params.py -- the flagship configs' parameter counts, two independent ways.

1. params.py: shapes listed by hand from the transformers modeling source (every family);
2. reference.py's CausalLM built on the meta device (no memory) for the families it
   implements (llama, mistral, qwen2, gemma2, mixtral, gpt_neox), counting
   model.parameters() (tied weights once), plus LoRA r=8 on PEFT's default targets.
Both are compared with configs/real/index.json's exact_params (and the published figure
there).  Exit 1 on any disagreement.   /usr/bin/python3 bench/accuracy/llm/check_params.py
"""
import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)

import torch  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import params  # noqa: E402
import reference as R  # noqa: E402

FACTORIES = {torch.empty, torch.zeros, torch.ones, torch.arange, torch.full, torch.tensor,
             torch.randn, torch.rand}


class MetaMode(TorchFunctionMode):
    """Every factory call makes a meta tensor: modules are built without storage."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in FACTORIES:
            kwargs["device"] = "meta"
        return func(*args, **kwargs)


def meta_numel(build):
    """The parameters of the module build() makes under MetaMode (no storage), each shared tensor once
    (parameters()): the checkpoints' counts of the encoder-decoder replicas (t5_replica.py, whisper_replica.py)."""
    with MetaMode():
        m = build()
    assert all(p.device.type == "meta" for p in m.parameters())
    return sum(p.numel() for p in m.parameters())


def meta_count(cfg, lora=0):
    if cfg["model_type"] == "qwen3_next":  # deltanet_replica.py: transformers 5's stacked experts
        cfg = dict(cfg, _experts_implementation="grouped_mm")
    with MetaMode():
        m = R.CausalLM(R.Config(cfg))
        if lora:
            R.apply_lora(m, r=lora, targets=("query_key_value",) if cfg["model_type"] == "gpt_neox"
                         else ("q_proj", "v_proj"))
    assert all(p.device.type == "meta" for p in m.parameters())
    return sum(p.numel() for p in m.parameters()), sum(p.numel() for p in m.parameters() if p.requires_grad)


def main():
    idx = json.load(open(os.path.join(HERE, "configs", "real", "index.json")))
    bad = 0
    print("%-30s %16s %16s %16s %12s" % ("config", "index exact", "params.py", "meta module", "LoRA r=8"))
    for e in idx["models"]:
        cfg = json.load(open(os.path.join(HERE, "configs", "real", e["file"])))
        n1 = params.count(cfg)
        n2 = lt = None
        if cfg["model_type"] in ("llama", "mistral", "qwen2", "gemma2", "mixtral", "gpt_neox", "qwen3_next"):
            n2, _ = meta_count(cfg)
            _, lt = meta_count(cfg, lora=8)
        ok = n1 == e["exact_params"] and (n2 is None or n2 == n1)
        bad += not ok
        print("%-30s %16s %16s %16s %12s %s" % (e["file"], "{:,}".format(e["exact_params"]), "{:,}".format(n1),
                                                 "-" if n2 is None else "{:,}".format(n2),
                                                 "-" if lt is None else "{:,}".format(lt),
                                                 "ok" if ok else "MISMATCH"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
