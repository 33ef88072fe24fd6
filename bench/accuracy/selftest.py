#!/usr/bin/python3
"""selftest.py -- checks tools/vctorch.py: every SPEC kind builds, runs forward and
backward, and has the parameter count, buffers and output shape of the PyTorch
module it stands for.  Run: /usr/bin/python3 bench/accuracy/selftest.py"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ next to tools/vctorch.py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools"))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import vctorch  # noqa: E402

B = 2
# (layer, per-sample input shape, reference module or None, expected per-sample output shape)
CASES = [
    ({"type": "Conv1d", "in_channels": 4, "out_channels": 6, "kernel_size": 3, "groups": 2, "dilation": 2},
     [4, 20], nn.Conv1d(4, 6, 3, groups=2, dilation=2), [6, 16]),
    ({"type": "Conv2d", "in_channels": 3, "out_channels": 8, "kernel_size": [3, 5], "padding": "same", "bias": False},
     [3, 9, 9], nn.Conv2d(3, 8, (3, 5), padding="same", bias=False), [8, 9, 9]),
    ({"type": "Conv3d", "in_channels": 2, "out_channels": 4, "kernel_size": 3, "stride": 2},
     [2, 7, 7, 7], nn.Conv3d(2, 4, 3, stride=2), [4, 3, 3, 3]),
    ({"type": "ConvTranspose1d", "in_channels": 4, "out_channels": 2, "kernel_size": 4, "stride": 2, "output_padding": 1},
     [4, 5], nn.ConvTranspose1d(4, 2, 4, stride=2, output_padding=1), [2, 13]),
    ({"type": "ConvTranspose2d", "in_channels": 4, "out_channels": 4, "kernel_size": 2, "stride": 2, "groups": 2},
     [4, 5, 5], nn.ConvTranspose2d(4, 4, 2, stride=2, groups=2), [4, 10, 10]),
    ({"type": "ConvTranspose3d", "in_channels": 2, "out_channels": 2, "kernel_size": 3, "padding": 1, "bias": False},
     [2, 4, 4, 4], nn.ConvTranspose3d(2, 2, 3, padding=1, bias=False), [2, 4, 4, 4]),
    ({"type": "Linear", "in_features": 8, "out_features": 5}, [3, 8], nn.Linear(8, 5), [3, 5]),
    ({"type": "Identity"}, [4], None, [4]),
    ({"type": "Flatten"}, [2, 3, 4], None, [24]),
    ({"type": "RNN", "input_size": 6, "hidden_size": 5, "num_layers": 2, "nonlinearity": "relu"},
     [7, 6], nn.RNN(6, 5, 2, nonlinearity="relu"), [7, 5]),
    ({"type": "LSTM", "input_size": 6, "hidden_size": 8, "proj_size": 3, "bidirectional": True},
     [7, 6], nn.LSTM(6, 8, proj_size=3, bidirectional=True), [7, 6]),
    ({"type": "GRU", "input_size": 6, "hidden_size": 5, "num_layers": 2, "bias": False, "bidirectional": True},
     [7, 6], nn.GRU(6, 5, 2, bias=False, bidirectional=True), [7, 10]),
    ({"type": "MultiheadAttention", "embed_dim": 16, "num_heads": 4, "add_bias_kv": True},
     [5, 16], nn.MultiheadAttention(16, 4, add_bias_kv=True), [5, 16]),
    ({"type": "MultiheadAttention", "embed_dim": 16, "num_heads": 4, "need_weights": False, "bias": False, "dropout": 0.1},
     [5, 16], nn.MultiheadAttention(16, 4, bias=False), [5, 16]),
    ({"type": "TransformerEncoderLayer", "d_model": 16, "nhead": 2, "dim_feedforward": 32},
     [5, 16], nn.TransformerEncoderLayer(16, 2, 32), [5, 16]),
    ({"type": "TransformerEncoderLayer", "d_model": 16, "nhead": 2, "dim_feedforward": 32, "norm_first": True,
      "activation": "gelu", "bias": False}, [5, 16], None, [5, 16]),
    ({"type": "BatchNorm1d", "num_features": 4}, [4, 6], nn.BatchNorm1d(4), [4, 6]),
    ({"type": "BatchNorm2d", "num_features": 4, "affine": False}, [4, 3, 3], nn.BatchNorm2d(4, affine=False), [4, 3, 3]),
    ({"type": "BatchNorm3d", "num_features": 2}, [2, 3, 3, 3], nn.BatchNorm3d(2), [2, 3, 3, 3]),
    ({"type": "LayerNorm", "normalized_shape": [6]}, [3, 6], nn.LayerNorm(6), [3, 6]),
    ({"type": "LayerNorm", "normalized_shape": 6, "bias": False}, [3, 6], None, [3, 6]),
    ({"type": "LayerNorm", "normalized_shape": 6, "one_plus": True}, [3, 6], nn.LayerNorm(6), [3, 6]),
    ({"type": "GroupNorm", "num_groups": 2, "num_channels": 4}, [4, 5], nn.GroupNorm(2, 4), [4, 5]),
    ({"type": "InstanceNorm1d", "num_features": 4}, [4, 5], nn.InstanceNorm1d(4), [4, 5]),
    ({"type": "InstanceNorm2d", "num_features": 4, "affine": True, "track_running_stats": True},
     [4, 5, 5], nn.InstanceNorm2d(4, affine=True, track_running_stats=True), [4, 5, 5]),
    ({"type": "RMSNorm", "normalized_shape": [6]}, [3, 6], None, [3, 6]),
    ({"type": "MaxPool1d", "kernel_size": 2}, [3, 8], None, [3, 4]),
    ({"type": "MaxPool2d", "kernel_size": 3, "stride": 2, "padding": 1}, [3, 8, 8], None, [3, 4, 4]),
    ({"type": "MaxPool3d", "kernel_size": 2}, [2, 4, 4, 4], None, [2, 2, 2, 2]),
    ({"type": "AvgPool1d", "kernel_size": 2}, [3, 8], None, [3, 4]),
    ({"type": "AvgPool2d", "kernel_size": 2, "ceil_mode": True}, [3, 7, 7], None, [3, 4, 4]),
    ({"type": "AvgPool3d", "kernel_size": 2}, [2, 4, 4, 4], None, [2, 2, 2, 2]),
    ({"type": "AdaptiveAvgPool1d", "output_size": 3}, [2, 9], None, [2, 3]),
    ({"type": "AdaptiveAvgPool2d", "output_size": [2, 3]}, [2, 8, 9], None, [2, 2, 3]),
    ({"type": "AdaptiveAvgPool3d", "output_size": 1}, [2, 4, 4, 4], None, [2, 1, 1, 1]),
    ({"type": "AdaptiveMaxPool1d", "output_size": 3}, [2, 9], None, [2, 3]),
    ({"type": "AdaptiveMaxPool2d", "output_size": 2, "return_indices": True}, [2, 8, 8], None, [2, 2, 2]),
    ({"type": "ReLU"}, [5], None, [5]),
    ({"type": "ReLU6"}, [5], None, [5]),
    ({"type": "LeakyReLU", "negative_slope": 0.2}, [5], None, [5]),
    ({"type": "ELU"}, [5], None, [5]),
    ({"type": "GELU", "approximate": "tanh"}, [5], None, [5]),
    ({"type": "SiLU"}, [5], None, [5]),
    ({"type": "Mish"}, [5], None, [5]),
    ({"type": "Hardswish"}, [5], None, [5]),
    ({"type": "Hardsigmoid"}, [5], None, [5]),
    ({"type": "Sigmoid"}, [5], None, [5]),
    ({"type": "Tanh"}, [5], None, [5]),
    ({"type": "Square"}, [5], None, [5]),
    ({"type": "XIELU"}, [5], None, [5]),
    ({"type": "Softmax", "dim": -1}, [3, 5], None, [3, 5]),
    ({"type": "LogSoftmax", "dim": 1}, [3, 5], None, [3, 5]),
    ({"type": "Dropout", "p": 0.2}, [3, 5], None, [3, 5]),
    ({"type": "Dropout2d", "p": 0.2}, [3, 4, 4], None, [3, 4, 4]),
    ({"type": "StochasticDepth", "p": 0.2, "mode": "row"}, [3, 4], None, [3, 4]),
    # torchvision's own modules (the factory builds them: no other reference)
    ({"type": "ShiftedWindowAttention", "dim": 8, "window_size": 4, "shift_size": 2, "num_heads": 2},
     [6, 8, 8], None, [6, 8, 8]),
    ({"type": "ShiftedWindowAttentionV2", "dim": 8, "window_size": [2, 4], "shift_size": [1, 2], "num_heads": 2},
     [4, 8, 8], None, [4, 8, 8]),
    ({"type": "MultiscaleAttention", "thw": [2, 4, 4], "embed_dim": 8, "output_dim": 16, "num_heads": 2,
      "kernel_q": [3, 3, 3], "kernel_kv": [3, 3, 3], "stride_q": [1, 2, 2], "stride_kv": [1, 2, 2],
      "residual_pool": True, "residual_with_cls_embed": False, "rel_pos_embed": True}, [33, 8], None, [9, 16]),
    ({"type": "MViTPool", "thw": [2, 4, 4], "kernel_size": [1, 3, 3], "stride": [1, 2, 2], "padding": [0, 1, 1]},
     [33, 8], None, [9, 8]),
    ({"type": "MViTPositionalEncoding", "embed_size": 8, "temporal_size": 2, "spatial_size": [4, 4]},
     [32, 8], None, [33, 8]),
    ({"type": "Upsample", "scale_factor": 2, "mode": "bilinear", "align_corners": False}, [2, 3, 3], None, [2, 6, 6]),
    ({"type": "PixelShuffle", "upscale_factor": 2}, [8, 3, 3], None, [2, 6, 6]),
    ({"type": "Reshape", "shape": [4, -1]}, [2, 3, 4], None, [4, 6]),
    ({"type": "Permute", "dims": [0, 2, 1]}, [3, 4], None, [4, 3]),
    ({"type": "Transpose", "dim0": 1, "dim1": 2}, [3, 4], None, [4, 3]),
    ({"type": "Select", "dim": 1, "index": 0}, [3, 4], None, [4]),
    ({"type": "Slice", "dim": -1, "start": 1, "end": 7, "step": 2}, [3, 8], None, [3, 3]),
    ({"type": "Mean", "dim": 1, "keepdim": True}, [3, 4], None, [1, 4]),
]


def check(layer, shape, ref, out_shape, compat):
    spec = {"name": layer["type"], "input": shape, "layers": [dict(layer)]}
    m, mk = vctorch.build(spec, compat=compat)
    n = sum(p.numel() for p in m.parameters())
    if ref is not None:
        nref = sum(p.numel() for p in ref.parameters())
        assert n == nref, "%s: %d params, PyTorch %d" % (layer["type"], n, nref)
        nb = sorted(tuple(b.shape) for b in m.buffers())
        nbr = sorted(tuple(b.shape) for b in ref.buffers())
        assert nb == nbr, "%s: buffers %s vs %s" % (layer["type"], nb, nbr)
    x = mk(B)[0].requires_grad_()
    y = m(x)
    assert list(y.shape) == [B] + out_shape, "%s: output %s, expected %s" % (
        layer["type"], list(y.shape), [B] + out_shape)
    y.float().mean().backward()
    return n


def main():
    for compat in ("2x", "stock"):
        for layer, shape, ref, out in CASES:
            if compat == "stock" and layer.get("bias") is False and layer["type"].startswith("Transformer"):
                continue
            check(layer, shape, ref, out, compat)
    # multi-input kinds and graph features
    specs = [os.path.join(HERE, "models", f) for f in sorted(os.listdir(os.path.join(HERE, "models")))]
    for path in specs:
        import json
        spec = json.load(open(path))
        for compat in ("2x", "stock"):
            m, mk = vctorch.build(spec, compat=compat)
            y = m(*mk(B))
            y.float().mean().backward()
    # errors
    bad = [
        {"input": [4], "layers": [{"type": "Nope"}]},
        {"input": [4], "layers": [{"type": "Linear", "in_features": 4, "out_features": 2, "bogus": 1}]},
        {"input": [4], "layers": [{"type": "ReLU", "inputs": ["layers[0]"]}]},
        {"input": [4, 4], "layers": [{"type": "Transpose", "dim0": 0, "dim1": 1}]},
        {"input": [4], "layers": [{"type": "ReLU", "name": "a"}, {"type": "ReLU", "name": "a"}]},
    ]
    for spec in bad:
        try:
            vctorch.build(spec)
        except vctorch.ModelError:
            continue
        raise AssertionError("accepted a bad model: %r" % (spec,))
    print("selftest: %d kinds x 2 compat modes, %d model files: ok" % (len(CASES), len(specs)))


if __name__ == "__main__":
    main()
