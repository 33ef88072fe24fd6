#!/usr/bin/python3
"""Unit tests of tools/torch2vramcalc.py on small modules (one mapping rule each).

    /usr/bin/python3 tests/roundtrip/test_exporter.py [--cli build/vramcalc]

Each case exports a module and checks the layers written; where a vramcalc binary is
given (or found in build/), vramcalc must load the file and report torch's parameter
count, and where tools/vctorch.py exists, rebuilding the file must give the module's
output shape.  Exit status 77 (CTest skip) without torch.
"""

import inspect
import json
import os
import subprocess
import tempfile
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
except ImportError:
    print("test_exporter: torch not importable; skipping")
    sys.exit(77)

import torch2vramcalc as t2v  # noqa: E402
from fastinit import output_shape, skip_random_init  # noqa: E402

try:
    import vctorch
except ImportError:
    vctorch = None

CLI = None


def _find_cli():
    if "--cli" in sys.argv:
        i = sys.argv.index("--cli")
        path = sys.argv[i + 1]
        del sys.argv[i:i + 2]
        return path
    for d in ("build", "build-zoo"):
        p = os.path.join(ROOT, d, "vramcalc")
        if os.access(p, os.X_OK):
            return p
    return None


# ---- modules under test ----

class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


class Net(nn.Module):
    """Submodule calls: a stem, two residual blocks (nn.Sequential), a two-input helper."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(Residual(), Residual())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean([2, 3]))


class Functional(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = F.relu(self.conv(x), inplace=True)
        a, b = y.chunk(2, dim=1)
        z = torch.cat([a * torch.sigmoid(b), b], 1)
        z = F.adaptive_avg_pool2d(F.max_pool2d(z, 2), 2)
        z = torch.flatten(z, 2).permute(0, 2, 1)          # [N, 4, 16]
        z = z.reshape(z.shape[0], 4, 2, 8).mean([2])      # [N, 4, 8]
        return self.fc(F.dropout(z, 0.1, self.training)).softmax(dim=-1)


class Tokens(nn.Module):
    """ViT-style class token and positional Parameter, getitem select."""

    def __init__(self):
        super().__init__()
        self.cls = nn.Parameter(torch.zeros(1, 1, 32))
        self.pos = nn.Parameter(torch.zeros(1, 17, 32))
        self.proj = nn.Linear(32, 32)

    def forward(self, x):
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.proj(x)[:, 0]


class PosLM(nn.Module):
    """arange positions, MultiheadAttention returning a tuple, tied head."""

    def __init__(self, V=500, L=16, E=32):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, E), nn.Embedding(L, E)
        self.attn = nn.MultiheadAttention(E, 4, batch_first=True)
        self.head = nn.Linear(E, V, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device).unsqueeze(0))
        a, _ = self.attn(x, x, x, need_weights=False)
        return self.head(x + a)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 24, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(48, 3)

    def forward(self, x):
        out, h = self.gru(x)
        return self.fc(out[:, -1])


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(10, 20), nn.Linear(6, 20)

    def forward(self, x, y):
        return self.a(x) * self.b(y)


class Unmappable(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.roll(self.fc(x), 1, 1) * 0.5


class _Iterating(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.stack([self.fc(t) for t in x])


class IteratesTensor(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _Iterating()

    def forward(self, x):
        return self.inner(x)


def downloading_builder(weights=None):
    """A builder that downloads whatever it is given (test_no_download)."""
    torch.hub.load_state_dict_from_url("http://example.invalid/w.pth")
    return nn.Linear(2, 2)


def layers(doc):
    return [l["type"] for l in doc["layers"]]


class ExporterTest(unittest.TestCase):
    def export(self, module, *inputs, **kw):
        torch.manual_seed(0)
        doc, info = t2v.export(module, [t2v.parse_input(i) for i in inputs], name=type(module).__name__, **kw)
        n = sum(p.numel() for p in module.parameters())
        self.assertEqual(info["exported_parameters"], n)
        text = t2v.dumps(doc)
        self.assertEqual(json.loads(text), json.loads(json.dumps(doc)))
        if CLI:
            r = subprocess.run([CLI, "-", "--format", "json"], input=text, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["parameters"], n)
        if vctorch is not None:
            mod, mk = vctorch.build(json.loads(text))
            self.assertEqual(sum(p.numel() for p in mod.parameters()), n)
            xs = mk(2)
            self.assertEqual(output_shape(module, xs), output_shape(mod, xs))
        return doc

    def test_residual_inplace_add(self):
        doc = self.export(Residual(), "8,12,12")
        self.assertEqual(layers(doc), ["Conv2d", "BatchNorm2d", "ReLU", "Conv2d", "BatchNorm2d", "Add", "ReLU"])
        add = doc["layers"][5]
        self.assertEqual(add["inputs"], [doc["layers"][4]["name"], "input"])
        self.assertTrue(add["inplace"])             # `out += x` stays in place
        self.assertNotIn("inputs", doc["layers"][6])  # a linear chain stays unnamed

    def test_module_scopes(self):
        doc = self.export(Net(), "3,12,12")
        self.assertEqual(layers(doc), ["Conv2d", "Sequential", "Mean", "Linear"])
        blocks = doc["layers"][1]
        self.assertEqual(blocks["name"], "blocks")
        self.assertEqual([b["type"] for b in blocks["layers"]], ["Sequential", "Sequential"])
        self.assertEqual(blocks["layers"][1]["name"], "blocks_1")
        inner = blocks["layers"][0]["layers"]
        self.assertEqual(inner[5]["inputs"], [inner[4]["name"], "input"])  # the block's own input
        flat = t2v.export(Net(), [t2v.parse_input("3,12,12")], flat=True)[0]
        self.assertEqual(len(flat["layers"]), 1 + 14 + 2)
        if CLI:  # same estimates either way in training; scopes keep inputs longer in inference
            est = []
            for d in (doc, flat):
                r = subprocess.run([CLI, "-", "--format", "json", "--batch", "4"], input=t2v.dumps(d),
                                   capture_output=True, text=True)
                est.append(json.loads(r.stdout)["memory"]["peak_allocated"])
            self.assertEqual(est[0], est[1])

    def test_functional_ops(self):
        doc = self.export(Functional(), "3,16,16")
        self.assertEqual(layers(doc), ["Conv2d", "ReLU", "Slice", "Slice", "Sigmoid", "Mul", "Cat", "MaxPool2d",
                                       "AdaptiveAvgPool2d", "Flatten", "Permute", "Reshape", "Mean", "Dropout",
                                       "Linear", "Softmax"])
        self.assertTrue(doc["layers"][1]["inplace"])
        self.assertEqual(doc["layers"][3], {"type": "Slice", "name": doc["layers"][3]["name"], "inputs": [doc["layers"][1]["name"]],
                                            "module": doc["layers"][3]["module"], "dim": 1, "start": 8, "end": 16})
        self.assertEqual(doc["layers"][0]["module"], "conv")  # the source's qualified name, for the reports
        self.assertEqual(doc["layers"][11]["shape"], [4, 2, 8])
        self.assertEqual(doc["layers"][15]["dim"], 2)

    def test_tokens_parameters(self):
        doc = self.export(Tokens(), "16,32")
        self.assertEqual(layers(doc), ["Parameter", "Cat", "Parameter", "Add", "Linear", "Select"])
        self.assertEqual(doc["layers"][0]["shape"], [1, 32])
        self.assertEqual(doc["layers"][2]["shape"], [17, 32])
        self.assertEqual(doc["layers"][5], {"type": "Select", "module": doc["layers"][5]["module"], "dim": 1, "index": 0})

    def test_positions_and_tie(self):
        doc = self.export(PosLM(), "16:int64", loss="cross_entropy")
        self.assertEqual(doc["input"], {"shape": [16], "dtype": "int64"})
        self.assertEqual(doc["loss"], "cross_entropy")
        self.assertEqual(layers(doc), ["Embedding", "Parameter", "Add", "MultiheadAttention", "Add", "Linear"])
        self.assertEqual(doc["layers"][1]["shape"], [16, 32])
        self.assertFalse(doc["layers"][3]["need_weights"])
        self.assertEqual(doc["layers"][5]["tie"], doc["layers"][0]["name"])

    def test_positions_shorter_than_table(self):
        with self.assertRaises(t2v.Unmapped) as e:
            t2v.export(PosLM(L=32), [t2v.parse_input("16:int64")])
        self.assertIn("full length 32", e.exception.report())

    def test_recurrent_first_output(self):
        doc = self.export(Recurrent(), "12,16")
        self.assertEqual(layers(doc), ["GRU", "Select", "Linear"])
        self.assertTrue(doc["layers"][0]["bidirectional"])

    def test_two_inputs(self):
        doc = self.export(TwoInputs(), "x=10", "y=6")
        self.assertEqual(list(doc["inputs"]), ["x", "y"])
        self.assertEqual(doc["layers"][1]["inputs"], ["y"])
        self.assertEqual(doc["layers"][2]["inputs"], [doc["layers"][0]["name"], doc["layers"][1]["name"]])

    def test_root_is_a_leaf(self):
        doc = self.export(nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 3,
                                                enable_nested_tensor=False), "10,32")
        self.assertEqual(doc["layers"], [{"type": "TransformerEncoderLayer", "d_model": 32, "nhead": 4,
                                          "dim_feedforward": 64, "repeat": 3}])

    def test_batch_first_required(self):
        with self.assertRaises(t2v.Unmapped) as e:
            t2v.export(nn.LSTM(8, 8), [t2v.parse_input("5,8")])
        self.assertIn("batch_first", e.exception.report())

    def test_unmapped_list(self):
        with self.assertRaises(t2v.Unmapped) as e:
            t2v.export(Unmappable(), [t2v.parse_input("4,8")])
        rep = e.exception.report()
        # the op, the user's source line (the `return` of Unmappable.forward), what to do;
        # `* 0.5` after it is exported (a stand-in), so roll is the only item
        self.assertIn("torch.roll", rep)
        self.assertIn("test_exporter.py:%d" % (inspect.getsourcelines(Unmappable.forward)[1] + 1), rep)
        self.assertIn("--allow-unknown", rep)
        self.assertEqual(len(e.exception.items), 1)
        # --allow-unknown: the rest exported, roll as a new [8] tensor, the file says approximate
        doc, info = t2v.export(Unmappable(), [t2v.parse_input("4,8")], allow_unknown=True)
        self.assertIn("approximate", doc["name"])
        self.assertIn("torch.roll", doc["description"])
        self.assertEqual([a[1] for a in info["approximate"]], ["torch.roll"])
        self.assertEqual(info["exported_parameters"], 72)  # Linear(8, 8): 64 + 8

    def test_trace_error_location(self):
        # torch.fx cannot iterate a tensor: the error names the module and the user's line
        with self.assertRaises(t2v.TraceError) as e:
            t2v.export(IteratesTensor(), [t2v.parse_input("4,8")])
        line = inspect.getsourcelines(_Iterating.forward)[1] + 1
        self.assertRegex(str(e.exception), r"in module inner at \S*test_exporter\.py:%d: " % line)
        self.assertIn("for t in x", str(e.exception))

    def test_no_download(self):
        # fcn_resnet50's builder downloads ResNet-50 weights by default (weights_backbone);
        # load_target turns that off, and a builder that downloads anyway is refused
        m = t2v.load_target("torchvision.models.segmentation.fcn_resnet50")
        ref = torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None)
        self.assertEqual(sum(p.numel() for p in m.parameters()), sum(p.numel() for p in ref.parameters()))
        with self.assertRaises(ValueError) as e:
            t2v.load_target("test_exporter:downloading_builder")
        self.assertIn("tried to download weights (http://example.invalid/w.pth)", str(e.exception))

    def test_input_rederived(self):
        # fcn_resnet50 interpolates to the input's size: exported at 64, the file's Upsample is a
        # scale factor, so --input 3,96,96 gives the output PyTorch gives at 96 (the module run
        # on the meta device)
        m = torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None)
        doc, info = t2v.export(m, [t2v.parse_input("3,64,64")])
        up = [l for l in doc["layers"] if l["type"] == "Upsample"]
        self.assertEqual([("size" in l, l.get("scale_factor")) for l in up], [(False, 8)])
        self.assertIn("output['out']", doc["description"])
        with torch.no_grad():
            want = list(t2v._meta_copy(m)(torch.empty(1, 3, 96, 96, device="meta"))["out"].shape[1:])
        if CLI:
            r = subprocess.run([CLI, "-", "--input", "3,96,96", "--per-layer", "-f", "json"], input=t2v.dumps(doc),
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["layers"][-1]["output_shape"], want)
        # nanoGPT's sizes cannot follow the input (its positional table is 64 long): said in the file
        sys.path.insert(0, HERE)
        import user_models
        doc, info = t2v.export(user_models.NanoGPT(), [t2v.parse_input("64:int64")])
        self.assertIn("fixed at the exported input", doc["description"])

    def test_swin_window_attention(self):
        # torchvision's ShiftedWindowAttention(V2) are kinds (layers/window.c) and _patch_merging_pad
        # is written as it runs: Swin v1 and v2 export without --allow-unknown, parameters exact.
        # At 64x64 the last stages' maps (4x4, 2x2) are smaller than v2's 8x8 window: padded, unshifted
        for build, kind in ((torchvision.models.swin_t, "ShiftedWindowAttention"),
                            (torchvision.models.swin_v2_t, "ShiftedWindowAttentionV2")):
            doc = self.export(build(), "3,64,64")
            self.assertNotIn("approximate", doc["name"])
            kinds = []

            def walk(ls):
                for l in ls:
                    kinds.append(l["type"])
                    walk(l.get("layers", []))
            walk(doc["layers"])
            self.assertEqual(kinds.count(kind), 12)
            self.assertIn("constant_pad_nd clones", doc["description"])

    def test_mvit(self):
        # torchvision's video MViT (models/video/mvit.py): MultiscaleAttention, the blocks'
        # pool_skip (Pool with MaxPool3d) and PositionalEncoding are kinds (layers/mvit.c);
        # mvit_v1_b and mvit_v2_s with their own block lists (16 blocks, q strided in 3 of
        # them: 3 pool_skips) on 4x64x64 clips (the builders fix 16x224x224: _mvit's sizes
        # are replaced for the call), parameters exact, output shape the module's
        from torchvision.models.video import mvit
        orig = mvit._mvit

        def small(**kw):
            kw.update(spatial_size=(64, 64), temporal_size=4)
            return orig(**kw)
        for build in (mvit.mvit_v1_b, mvit.mvit_v2_s):
            mvit._mvit = small
            try:
                m = build()
            finally:
                mvit._mvit = orig
            doc = self.export(m, "3,4,64,64")
            self.assertNotIn("approximate", doc["name"])
            kinds = []

            def walk(ls):
                for l in ls:
                    kinds.append(l["type"])
                    walk(l.get("layers", []))
            walk(doc["layers"])
            self.assertEqual([kinds.count(k) for k in ("MultiscaleAttention", "MViTPool", "MViTPositionalEncoding")],
                             [16, 3, 1])

    def test_relative_position_bias(self):
        # MaxViT's attention (torchvision/models/maxvit.py RelativePositionalMultiHeadAttention):
        # table[index].view(N, N, -1).permute(2, 0, 1).contiguous().unsqueeze(0) added to the
        # scores: the RelativePositionBias kind (the table's parameters exact, no batch)
        from torchvision.models import maxvit
        doc = self.export(maxvit.RelativePositionalMultiHeadAttention(16, 8, 16), "3,16,16")
        rpb = [l for l in doc["layers"] if l["type"] == "RelativePositionBias"]
        self.assertEqual(len(rpb), 1)
        self.assertEqual((rpb[0]["num_heads"], rpb[0]["window_size"]), (2, 4))
        self.assertNotIn("approximate", doc["name"])

    def test_parameter_view_and_normalize(self):
        # SSD's L2Norm (torchvision detection/ssd.py SSDFeatureExtractorVGG.forward):
        # scale_weight.view(1, -1, 1, 1) * F.normalize(x): the view is the parameter broadcast
        # over the batch ([C, 1, 1] per sample, C parameters); F.normalize is the norm (Mean),
        # clamp_min (LeakyReLU: saves its input) and the division (Mul: saves both)
        class L2Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.scale_weight = nn.Parameter(torch.ones(8) * 20)

            def forward(self, x):
                x = F.relu(self.conv(x))
                return self.scale_weight.view(1, -1, 1, 1) * F.normalize(x)
        doc = self.export(L2Scale(), "3,10,10")
        self.assertEqual(layers(doc), ["Conv2d", "ReLU", "Mean", "LeakyReLU", "Mul", "Parameter", "Mul"])
        self.assertEqual(doc["layers"][2]["dim"], 1)
        self.assertEqual(doc["layers"][5]["shape"], [8, 1, 1])

    def test_topk_gather(self):
        # torch.topk -> TopK (derivatives.yaml topk: value_selecting_reduction_backward keeps
        # the indices); its .indices through unsqueeze/expand views into torch.gather -> Gather
        # with the index's viewed shape; what only feeds the indices gets no gradient (frozen)
        sys.path.insert(0, HERE)
        import user_models
        doc = self.export(user_models.GatherPool(), "12,32")
        self.assertEqual(layers(doc), ["Linear", "Reshape", "TopK", "Gather", "Cat", "Flatten", "Linear"])
        topk, gather = doc["layers"][2], doc["layers"][3]
        self.assertEqual((topk["k"], topk["output"]), (4, "indices"))
        self.assertEqual((gather["dim"], gather["shape"], gather["inputs"]), (-2, [4, 32], ["input", topk["name"]]))
        self.assertEqual([bool(l.get("frozen")) for l in doc["layers"][:3]], [True, True, True])
        self.assertNotIn("approximate", doc["name"])
        self.assertNotIn("input_fixed", doc)  # the squeeze's [12] follows the input: -1

        class TopValues(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(32, 32)

            def forward(self, x):
                return torch.topk(self.fc(x), 3, dim=1, largest=False).values
        doc = self.export(TopValues(), "12,32")
        self.assertEqual(layers(doc), ["Linear", "TopK"])
        self.assertEqual(doc["layers"][1], {"type": "TopK", "module": "topk", "k": 3, "dim": -2, "largest": False})

    def test_namedtuple_output(self):
        # GoogLeNet in training returns GoogLeNetOutputs(logits, aux2, aux1): the loss is on
        # the logits, the aux heads are exported (their parameters count), the description says so
        m = torchvision.models.googlenet(aux_logits=True, init_weights=False)
        doc = self.export(m, "3,96,96")
        self.assertIn("loss is taken on output[0]", doc["description"])

    def test_cli_exit_status(self):
        tool = os.path.join(ROOT, "tools", "torch2vramcalc.py")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sortnet.py")
            with open(path, "w") as f:
                f.write("import torch\nimport torch.nn as nn\n\n\nclass Inner(nn.Module):\n"
                        "    def forward(self, x):\n        return torch.sort(x, dim=-1)[0]\n\n\n"
                        "class SortNet(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                        "        self.fc = nn.Linear(8, 8)\n        self.inner = Inner()\n\n"
                        "    def forward(self, x):\n        return self.inner(self.fc(x))\n")
            r = subprocess.run([sys.executable, tool, path + ":SortNet", "--input", "4,8"],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        # the op without a kind, its module and the user's line
        self.assertIn("torch.sort", r.stderr)
        self.assertIn("in module inner (Inner) at %s:7" % path, r.stderr)
        r = subprocess.run([sys.executable, tool, "torchvision.models.squeezenet1_1", "--input", "3,64,64"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["input"], [3, 64, 64])
        r = subprocess.run([sys.executable, tool, "no.such.module", "--input", "3"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    CLI = _find_cli()
    with skip_random_init():  # kinds, counts and shapes only: the weights' values are never read
        unittest.main()
