"""vllm_sync_replica.py -- TRL's sync_weights in colocate mode over a LoRA model, in plain torch (1.13, CPU), with
the accuracy harness's allocator counter (bench/accuracy/measure.py: memtrack preloaded), for `--loss grpo
--use-vllm` (src/engine/grpo.c merge_temp, src/api/request.c vllm_beside; tests/test_grpo.c test_measured_sync).

Source, statement by statement:
  huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8 trl/generation/vllm_generation.py
    VLLMGeneration.sync_weights (is_peft_model branch, not FSDP: gather_params is a no-op on one process):
      model.merge_adapter(); for name, param in model.named_parameters(): name.removeprefix("base_model.model.")
      .replace(".base_layer", ""), skip names holding model.prefix ("lora_"), _fix_param_name_to_vllm,
      _push_param_to_vllm(name, param.data) -> llm...model.load_weights([(name, param)]); model.unmerge_adapter()
    (the non-PEFT branch: the same pushes, no merge)
  huggingface/peft @ 5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40 src/peft/tuners/lora/layer.py
    Linear.merge (safe_merge=False): delta_weight = self.get_delta_weight(adapter); base_layer.weight.data += delta_weight
    Linear.unmerge: weight.data -= delta_weight.to(orig_dtype)
    Linear.get_delta_weight: cast_to_fp32 = device.type == "cpu" and dtype in (float16, bfloat16);
      output_tensor = transpose(weight_B @ weight_A, self.fan_in_fan_out) * self.scaling[adapter]
    LoraModel.merge_adapter / unmerge_adapter (tuners_utils.py BaseTuner._merge / _unmerge): every BaseTunerLayer
      in model.modules() order
  vllm-project/vllm @ 9aaf83ef502fc37bc647f6e474314d48ba36cd1c
    vllm/model_executor/models/llama.py LlamaModel.load_weights: stacked_params_mapping (q/k/v -> qkv_proj,
      gate/up -> gate_up_proj) through the parameter's weight_loader, else default_weight_loader;
      LlamaForCausalLM.load_weights skips lm_head. when tie_word_embeddings
    vllm/model_executor/parameter.py load_qkv_weight / load_merged_column_weight: param_data.narrow(output_dim,
      shard_offset, shard_size).copy_(loaded_weight) (tp 1: no narrowing of the loaded weight)
    vllm/model_executor/model_loader/weight_utils.py default_weight_loader: param.data.copy_(loaded_weight)

What is not the source's: the vLLM engine is replaced by its weights alone (its fused qkv_proj / gate_up_proj, the
other parameters, in the model's dtype: what sync_weights writes into); vLLM cannot run here. The model is
reference.py's CausalLM with reference.py's LoraLinear (lora_A / lora_B Linear modules, scaling alpha / r), as
measure_llm.py builds it. Only the float32 model with float32 adapters is measured: on a CPU device PEFT casts
16-bit adapters to fp32 (cast_to_fp32) and ATen's CPU TensorIterator makes cast temporaries for the mixed-dtype
in-place add, neither of which happens on CUDA (the figure vramcalc gives).

Prints one JSON object: sync_temp, the peak of the between-op readings over the sync (merge, pushes, unmerge) less
what was allocated before it (measure.py's Tracker with opobserver installed, as measure_llm.py reads a step: the
Python scaling factor's wrapped-number tensor, a CPU tensor on CUDA too, is not counted).
"""
import argparse
import json
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(_here))), "tools"),
                os.path.dirname(_here), _here]
import measure  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--lora", type=int, default=0, help="rank (0: a full fine-tune's sync, no merge)")
    ap.add_argument("--lora-alpha", type=float, default=16)
    ap.add_argument("--lora-targets", default="q_proj,v_proj")
    args = ap.parse_args(argv)
    measure.reexec_with_preload()
    import torch
    import reference as R

    torch.manual_seed(0)
    tr = measure.Tracker()
    tr.start(install=True)  # the between-op readings, wrapped-number scalars (CPU on CUDA too) forgotten
    with open(args.config) as f:
        cfg = R.Config(json.load(f))
    model = R.CausalLM(cfg, "math")
    if args.lora:
        R.apply_lora(model, r=args.lora, lora_alpha=args.lora_alpha, lora_dropout=0.0,
                     targets=tuple(args.lora_targets.split(",")))
    tied = cfg.d.get("tie_word_embeddings", False)

    # vLLM's model: its parameters, fused as llama.py stacks them (tp 1)
    stacked = [(".qkv_proj", ".q_proj", "q"), (".qkv_proj", ".k_proj", "k"), (".qkv_proj", ".v_proj", "v"),
               (".gate_up_proj", ".gate_proj", 0), (".gate_up_proj", ".up_proj", 1)]
    pushed = []
    for name, p in model.named_parameters():
        name = name.removeprefix("base_model.model.").replace(".base_layer", "")
        if "lora_" in name:
            continue
        pushed.append((name, p))
    parts, tensors, shard = {}, {}, {}
    for name, p in pushed:
        if tied and name.startswith("lm_head."):
            continue
        hit = [(i, fused, part) for i, (fused, part, _) in enumerate(stacked) if part in name]
        if hit:
            i, fused, part = hit[0]
            parts.setdefault(name.replace(part, fused), []).append((i, name, p))
        else:
            tensors[name] = torch.empty_like(p)
    for fname, ps in parts.items():  # the shards in q, k, v / gate, up order
        off = 0
        for _, name, p in sorted(ps, key=lambda t: t[0]):
            shard[name] = (fname, off)
            off += p.shape[0]
        tensors[fname] = torch.empty((off,) + tuple(ps[0][2].shape[1:]), dtype=ps[0][2].dtype)

    def load_weights(name, w):  # LlamaModel.load_weights for one (name, loaded_weight)
        if name in shard:
            fname, off = shard[name]
            tensors[fname].data.narrow(0, off, w.shape[0]).copy_(w)  # load_qkv_weight / load_merged_column_weight
        elif name in tensors:
            tensors[name].data.copy_(w)  # default_weight_loader

    def get_delta_weight(m):
        dtype = m.lora_B.weight.dtype
        cast_to_fp32 = m.lora_B.weight.device.type == "cpu" and dtype in (torch.float16, torch.bfloat16)
        weight_A, weight_B = m.lora_A.weight, m.lora_B.weight
        if cast_to_fp32:
            weight_A, weight_B = weight_A.float(), weight_B.float()
        output_tensor = (weight_B @ weight_A) * m.scaling  # transpose(..., fan_in_fan_out=False): itself
        if cast_to_fp32:
            output_tensor = output_tensor.to(dtype=dtype)
        return output_tensor

    def merge(m):
        delta_weight = get_delta_weight(m)
        m.base_layer.weight.data += delta_weight

    def unmerge(m):
        weight = m.base_layer.weight
        orig_dtype = weight.dtype
        delta_weight = get_delta_weight(m)
        weight.data -= delta_weight.to(orig_dtype)

    loras = [m for m in model.modules() if isinstance(m, R.LoraLinear)]
    before = tr.O.opobs_current()
    tr.O.opobs_reset_peak()
    for m in loras:  # model.merge_adapter()
        merge(m)
    for name, p in pushed:  # the pushes
        load_weights(name, p.data)
    for m in loras:  # model.unmerge_adapter()
        unmerge(m)
    peak = tr.O.opobs_peak()
    print(json.dumps({"config": os.path.basename(args.config), "lora": args.lora, "targets": args.lora_targets,
                      "precision": "fp32", "allocated_before": before, "peak": peak, "sync_temp": peak - before,
                      "trl": "f2cd57710ae345ea6428ae95363267fcf38a3dc8", "peft": "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
