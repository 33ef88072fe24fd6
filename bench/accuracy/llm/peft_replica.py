"""peft_replica.py -- PEFT's DoRA and IA3 layers in plain torch (1.13, CPU) for the accuracy
harness (measure_llm.py --peft dora|ia3|ln_tuning, --modules-to-save), statement by statement from the source, each
allocation where the source makes it (issue 26 item 1).

Source: github.com/huggingface/peft @ 5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40
  src/peft/tuners/lora/layer.py     Linear.forward (the variant branch), LoraLayer.update_layer
  src/peft/tuners/lora/variants.py  DoraLinearVariant.init / .forward
  src/peft/tuners/lora/dora.py      DoraLinearLayer.get_weight_norm, get_lora_weight, update_layer, forward
  src/peft/tuners/ia3/layer.py      IA3Layer.update_layer, Linear.forward
  src/peft/tuners/ln_tuning/layer.py LNTuningLayer.update_layer, forward
  src/peft/utils/other.py           ModulesToSaveWrapper.update, _forward_wrapped
  src/peft/tuners/tuners_utils.py   cast_adapter_dtype (adapter_layer_names: lora_A, lora_B,
                                    lora_magnitude_vector; ia3_l), _cast_input_dtype
  src/peft/utils/constants.py       TRANSFORMERS_MODELS_TO_IA3_{TARGET,FEEDFORWARD}_MODULES_MAPPING,
                                    TRANSFORMERS_MODELS_TO_LNTUNING_TARGET_MODULES_MAPPING

What is not the source's: the base layers are reference.py's (nn.Linear run as PyTorch 2.x's
at::linear, vctorch.linear2x), dropout the harness's replica of 2.x's fused dropout; DoRA's
caching (ENABLE_DORA_CACHING) is off, as in training; torch 1.13's CPU torch.eye has no
bfloat16 kernel, so a bf16 eye is zeros(n, n).fill_diagonal_(1) (the same single allocation). Written without reading vramcalc's engine.
"""
import copy
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

if __name__ == "__main__":  # run on its own (--qlora-dora): measure_llm.py's import paths
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(_here))), "tools"),
                    os.path.dirname(_here), os.path.join(os.path.dirname(_here), "quant"), _here]
import reference as R  # noqa: E402
import vctorch  # noqa: E402

COMMIT = "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40"

# utils/constants.py (the families of configs/)
IA3_TARGETS = {"llama": "k_proj,v_proj,down_proj", "mistral": "k_proj,v_proj,down_proj", "mixtral": "k_proj,v_proj,w2",
               "qwen2": "q_proj,v_proj,down_proj", "gemma2": "q_proj,v_proj,down_proj",
               "gpt_neox": "query_key_value,dense_4h_to_h"}
LN_TUNING_TARGETS = {"llama": "input_layernorm,post_attention_layernorm,norm", "qwen2": "post_attention_layernorm",
                     "gemma2": "input_layernorm,post_attention_layernorm,pre_feedforward_layernorm,post_feedforward_layernorm,norm",
                     "mistral": "input_layernorm,post_attention_layernorm,norm"}
IA3_FEEDFORWARD = {"llama": "down_proj", "mistral": "down_proj", "mixtral": "w2", "qwen2": "down_proj",
                   "gemma2": "down_proj", "gpt_neox": "dense_4h_to_h"}


class DoraLinear(R.LoraLinear):
    """LoraConfig(use_dora=True) over a dense Linear: LoraLinear's lora_A / lora_B plus
    lora_magnitude_vector (DoraLinearVariant.init -> DoraLinearLayer.update_layer:
    weight = nn.Parameter(get_weight_norm(W, lora_B @ lora_A, scaling)), cast like the adapters)."""

    def __init__(self, base_layer, r, lora_alpha, lora_dropout, adapter_dtype):
        super().__init__(base_layer, r, lora_alpha, lora_dropout, adapter_dtype)
        with torch.no_grad():  # dora.py update_layer: lora_weight = lora_B @ lora_A; the norm
            w = base_layer.weight.float()
            lw = self.lora_B.weight.float() @ self.lora_A.weight.float()
            norm = torch.linalg.norm(w + self.scaling * lw, dim=1)
        self.magnitude = nn.Parameter(norm.to(adapter_dtype))  # lora_magnitude_vector["default"].weight

    def get_weight_norm(self, weight, lora_weight, scaling):
        # dora.py DoraLinearLayer.get_weight_norm (fan_in_fan_out False: transpose is the identity)
        weight = weight + scaling * lora_weight
        weight_norm = torch.linalg.norm(weight, dim=1).to(weight.dtype)
        return weight_norm

    def get_lora_weight(self):
        # dora.py DoraLinearLayer.get_lora_weight: "Don't use lora_B.weight @ lora_A.weight ... FSDP";
        # the same through forward
        n, dt = self.lora_A.weight.shape[1], self.lora_A.weight.dtype
        if dt == torch.bfloat16:  # torch 1.13 CPU has no bf16 eye: the same one [n, n] allocation
            x_eye = torch.zeros(n, n, device=self.lora_A.weight.device, dtype=dt).fill_diagonal_(1)
        else:
            x_eye = torch.eye(n, device=self.lora_A.weight.device, dtype=dt)
        lora_weight = self.lora_B(self.lora_A(x_eye)).T
        return lora_weight

    def dora_forward(self, x, base_result):
        # dora.py DoraLinearLayer.forward
        lora_weight = self.get_lora_weight()
        lora_weight = lora_weight.to(x.dtype)
        magnitude = self.magnitude
        weight = self.base_layer.weight  # dequantize_module_weight: the Parameter itself for a dense Linear
        weight = weight.to(x.dtype)
        weight_norm = self.get_weight_norm(weight, lora_weight.detach(), self.scaling)
        weight_norm = weight_norm.detach()
        mag_norm_scale = (magnitude / weight_norm).view(1, -1)
        lora_result = self.lora_B(self.lora_A(x))
        bias = None
        if base_result is not None:
            bias = self.base_layer.bias
            if bias is not None:
                base_result = base_result - bias
        else:
            base_result = F.linear(x, weight)
        result_dora = (mag_norm_scale - 1) * base_result + mag_norm_scale * lora_result * self.scaling
        return result_dora

    def variant_forward(self, x, result):
        # variants.py DoraLinearVariant.forward (its own frame: the caller's x, the cast input,
        # stays referenced while this one's x is the dropped-out copy)
        if self.lora_dropout_p == 0 or not self.training:
            base_result = result
        else:
            x = vctorch.dropout2x(x, self.lora_dropout_p, self.training)
            base_result = None
        result = result + self.dora_forward(x, base_result)
        return result

    def forward(self, x):
        # layer.py Linear.forward: result = base_layer(x); x = _cast_input_dtype(x, lora_A.weight.dtype);
        # result = lora_variant.forward(...); result = result.to(torch_result_dtype)
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        if x.dtype != self.lora_A.weight.dtype:
            x = x.to(dtype=self.lora_A.weight.dtype)
        result = self.variant_forward(x, result)
        result = result.to(torch_result_dtype)
        return result


class IA3Linear(nn.Module):
    """ia3/layer.py Linear over a dense Linear: update_layer's ia3_l (1, in) for a feedforward
    module, (out, 1) otherwise, initialised to 1.0 (reset_ia3_parameters), cast like an adapter."""

    def __init__(self, base_layer, is_feedforward, adapter_dtype):
        super().__init__()
        self.base_layer = base_layer
        for p in base_layer.parameters():
            p.requires_grad_(False)
        self.is_feedforward = is_feedforward
        shape = (1, base_layer.in_features) if is_feedforward else (base_layer.out_features, 1)
        self.ia3_l = nn.Parameter(torch.ones(shape, dtype=adapter_dtype))

    @property
    def in_features(self):
        return self.base_layer.in_features

    @property
    def out_features(self):
        return self.base_layer.out_features

    def forward(self, x):
        dtype = previous_dtype = x.dtype
        ia3_scaling = 1
        dtype = self.ia3_l.dtype
        ia3_scaling *= self.ia3_l.flatten()
        if self.is_feedforward:
            x = x.to(dtype)
            interm = (x * ia3_scaling).to(previous_dtype)
            result = self.base_layer(interm)
        else:
            result = self.base_layer(x)
            result_dtype = result.dtype
            result = (result * ia3_scaling).to(result_dtype)
        return result


class LNTuningLayer(nn.Module):
    """ln_tuning/layer.py LNTuningLayer: update_layer's ln_tuning_layers["default"] = deepcopy(layer), trained
    (the adapter; cast_adapter_dtype upcasts a 16-bit one to fp32 unless autocast_adapter_dtype=False);
    base_layer frozen and kept; forward runs the copy alone (one active adapter, not merged)."""

    def __init__(self, base_layer, adapter_dtype):
        super().__init__()
        self.base_layer = base_layer
        self.ln_tuning_layer = copy.deepcopy(base_layer).to(adapter_dtype)
        for p in self.ln_tuning_layer.parameters():
            p.requires_grad_(True)

    def forward(self, x, *args, **kwargs):
        return self.ln_tuning_layer(x, *args, **kwargs)


class ModulesToSaveWrapper(nn.Module):
    """utils/other.py ModulesToSaveWrapper.update: modules_to_save["default"] = copy.deepcopy(original_module)
    trained (not a BaseTunerLayer: cast_adapter_dtype leaves it in the model's dtype);
    original_module.requires_grad_(False) and kept; _forward_wrapped runs the copy. weight: the copy's
    (__getattr__ goes to the active copy, _getattr_wrapped)."""

    def __init__(self, original_module):
        super().__init__()
        self.original_module = original_module
        self.modules_to_save = copy.deepcopy(original_module)
        for p in self.modules_to_save.parameters():
            p.requires_grad_(True)

    @property
    def weight(self):
        return self.modules_to_save.weight

    def forward(self, *args, **kwargs):
        return self.modules_to_save(*args, **kwargs)


def apply_peft(model, method, r=8, lora_alpha=16, lora_dropout=0.0, targets=None, feedforward=None,
               autocast_adapter_dtype=True, adapter_dtype=None, modules_to_save=()):
    """get_peft_model(model, LoraConfig(use_dora=True, ...)) or get_peft_model(model, IA3Config(...)):
    everything frozen, the targets wrapped, the adapters fp32 with autocast_adapter_dtype (cast_adapter_dtype),
    else the base weights' dtype; as reference.apply_lora."""
    for p in model.parameters():
        p.requires_grad_(False)
    base_dtype = next(model.parameters()).dtype
    if adapter_dtype is None:
        adapter_dtype = torch.float32 if (autocast_adapter_dtype or base_dtype == torch.float32) else base_dtype
    n = 0
    for name, mod in list(model.named_modules()):
        for cname, child in list(mod.named_children()):
            if cname in modules_to_save:
                setattr(mod, cname, ModulesToSaveWrapper(child))
                continue
            if method == "ln_tuning" and cname in targets:
                setattr(mod, cname, LNTuningLayer(child, adapter_dtype))
                n += 1
            elif cname in targets and isinstance(child, nn.Linear):
                if method == "lora":
                    new = R.LoraLinear(child, r, lora_alpha, lora_dropout, adapter_dtype)
                elif method == "dora":
                    new = DoraLinear(child, r, lora_alpha, lora_dropout, adapter_dtype)
                else:
                    new = IA3Linear(child, cname in feedforward, adapter_dtype)
                setattr(mod, cname, new)
                n += 1
    if n == 0:
        raise ValueError("no %s target found" % method)
    if model.gradient_checkpointing:  # PeftModel.__init__: enable_input_require_grads
        model.get_input_embeddings().register_forward_hook(lambda m, i, o: o.requires_grad_(True))
    return model


def adapter_dtype_of(model):
    for m in model.modules():
        if isinstance(m, LNTuningLayer):
            return next(m.ln_tuning_layer.parameters()).dtype
        if isinstance(m, R.LoraLinear) and not isinstance(m, DoraLinear):
            return m.lora_A.weight.dtype
        if isinstance(m, DoraLinear):
            return m.lora_A.weight.dtype
        if isinstance(m, IA3Linear):
            return m.ia3_l.dtype
    return None


# --------------------------------------------------------------------------
# QLoRA + DoRA: bitsandbytes' allocations replayed (bench/accuracy/quant/measure_quant.py's
# functions, bitsandbytes 0.50.1) under peft's lora.bnb.Linear4bit with use_dora=True
# --------------------------------------------------------------------------

QF, QR, QHEAD = 1024, 2048, 64  # measure_quant.py's sizes: [F, F] nf4 weights, R rows, a bf16 head


def run_qlora_dora(torch, tr, MQ, dropout=0.0):
    """measure_quant.py run_train's model with q under DoRA: q (nf4 + LoRA r 8 + magnitude, fp32
    adapters), proj2 (nf4), lm_head (bf16); loss output.float().mean(); SGD (foreach), zero_grad(set_to_none);
    the highest between-op reading over steps 2 and 3. peft bnb.py Linear4bit.forward: result =
    base_layer(x).clone(); requires_conversion (no autocast): x = _cast_input_dtype(x, lora_A.weight.dtype);
    result = DoraLinearVariant.forward(...); result = result.to(expected_dtype). dora.py's
    dequantize_module_weight: dequantize_bnb_weight -> bnb.functional.dequantize_4bit."""
    MQ.name2qmap.clear()
    MM = MQ.matmul4bit_class(torch)
    base = tr.current()
    q_w, q_qs = MQ.quantize_4bit(torch, torch.empty((QF, QF), dtype=torch.bfloat16))
    lora_A = torch.nn.Linear(QF, 8, bias=False)   # fp32 (autocast_adapter_dtype)
    lora_B = torch.nn.Linear(8, QF, bias=False)
    magnitude = torch.nn.Parameter(torch.ones(QF))  # lora_magnitude_vector: [out], fp32 like the adapters
    p_w, p_qs = MQ.quantize_4bit(torch, torch.empty((QF, QF), dtype=torch.bfloat16))
    head = torch.nn.Linear(QF, QHEAD, bias=False).to(torch.bfloat16).requires_grad_(False)
    opt = torch.optim.SGD(list(lora_A.parameters()) + list(lora_B.parameters()) + [magnitude], lr=0.1, foreach=True)
    x = torch.empty((QR, QF), dtype=torch.bfloat16)
    scaling = 1.0
    base_obs = tr.O.opobs_current() - (tr.current() - base)

    def dora_forward(x, base_result):
        x_eye = torch.eye(lora_A.weight.shape[1], dtype=lora_A.weight.dtype)     # get_lora_weight
        lora_weight = lora_B(lora_A(x_eye)).T
        del x_eye
        lora_weight = lora_weight.to(x.dtype)
        weight = MQ.dequantize_4bit(torch, q_w, q_qs)                             # dequantize_module_weight
        weight = weight.to(x.dtype)
        w2 = weight + scaling * lora_weight.detach()                              # get_weight_norm
        weight_norm = torch.linalg.norm(w2, dim=1).to(w2.dtype)
        del w2
        weight_norm = weight_norm.detach()
        mag_norm_scale = (magnitude / weight_norm).view(1, -1)
        lora_result = lora_B(lora_A(x))
        if base_result is None:  # lora_dropout > 0: F.linear(x, transpose(weight, fan_in_fan_out))
            base_result = F.linear(x, weight)
        return (mag_norm_scale - 1) * base_result + mag_norm_scale * lora_result * scaling

    def variant_forward(x, result):  # DoraLinearVariant.forward, its own frame
        if dropout == 0:
            base_result = result
        else:
            x = vctorch.dropout2x(x, dropout, True)
            base_result = None
        return result + dora_forward(x, base_result)

    for step in range(3):
        if step == 1:
            tr.O.opobs_reset_peak()
        result = MQ.linear4bit(torch, MM, x, q_w, q_qs)
        result = result.clone()
        expected_dtype = result.dtype
        xa = x.to(lora_A.weight.dtype)
        result = variant_forward(xa, result)
        result = result.to(expected_dtype)
        del xa
        h = MQ.linear4bit(torch, MM, result, p_w, p_qs)
        del result
        out = torch.nn.functional.linear(h, head.weight)
        del h
        loss = out.float().mean()
        del out
        loss.backward()
        del loss
        opt.step()
        opt.zero_grad(set_to_none=True)
    return tr.O.opobs_peak() - base_obs


def vramcalc_qlora_dora(cli, dropout=0.0):
    """vramcalc on the same model: q, proj2 [F, F], lm_head [64, F], input [R, F]; --qlora with DoRA on q."""
    import subprocess
    import tempfile
    model = {"name": "quant", "input": [QR, QF], "layers": [
        {"type": "Linear", "name": "q", "in_features": QF, "out_features": QF, "bias": False},
        {"type": "Linear", "name": "proj2", "in_features": QF, "out_features": QF, "bias": False},
        {"type": "Linear", "name": "lm_head", "in_features": QF, "out_features": QHEAD, "bias": False}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(model, f)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    try:
        out = subprocess.run([cli, f.name, "-p", "bf16", "--qlora", "--peft", "dora", "--lora-targets", "q", "-o", "sgd",
                              "--lora-dropout", str(dropout), "--workspace", "0", "-f", "json"], check=True, capture_output=True, text=True, env=env).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)["memory"]["peak_allocated"]


QMEASURED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peft_qlora.json")


def main(argv):
    """peft_replica.py --qlora-dora [--cli build/vramcalc] [--write]: QLoRA + DoRA (lora_dropout 0 and
    0.1) replayed and measured with bench/accuracy's allocator counter, each beside vramcalc's figure
    (exit 1 when one differs, or a measurement differs from peft_qlora.json; --write stores them).
    --compare --cli: the committed measurements (peft_qlora.json) against vramcalc, no measuring."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--qlora-dora", action="store_true", required=True)
    ap.add_argument("--cli")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    if args.compare and (args.write or not args.cli):
        ap.error("--compare needs --cli and measures nothing (no --write)")
    with open(QMEASURED) as f:
        stored = json.load(f)["cases"]
    if args.compare:
        measured = stored
    else:
        import measure  # bench/accuracy/measure.py
        measure.reexec_with_preload()
        import measure_quant as MQ  # bench/accuracy/quant/measure_quant.py: bitsandbytes 0.50.1's allocations
        tr = measure.Tracker()
        tr.start(True)
        torch.set_num_threads(1)
        measured = {"dropout %g" % d: run_qlora_dora(torch, tr, MQ, d) for d in (0.0, 0.1)}
        if args.write:
            with open(QMEASURED, "w") as f:
                json.dump({"source": "bench/accuracy/llm/peft_replica.py --qlora-dora --write (torch %s, CPU)"
                           % torch.__version__, "cases": measured}, f, indent=1)
                f.write("\n")
    bad = 0 if args.write or measured == stored else 1
    for k, peak in measured.items():
        line = "qlora-dora %-12s peak measured %12d" % (k, peak)
        if args.cli:
            v = vramcalc_qlora_dora(os.path.abspath(args.cli), float(k.split()[1]))
            line += "  vramcalc %12d  %s" % (v, "same" if v == peak else "DIFFERS")
            bad += v != peak
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
