#!/usr/bin/python3
"""gen_models.py -- writes the accuracy suite's model files (bench/accuracy/suite/models/).

    /usr/bin/python3 bench/accuracy/suite/gen_models.py

Each model is a reduced-size instance of a real architecture (the block structure
of its reference implementation, with fewer channels, smaller inputs and fewer
blocks) so that a CPU measurement takes seconds.  The `source` key of each file
names what it follows.  The JSON files are committed; this script is how they
were written (run it after editing, then bench/accuracy/suite/measure_all.py).
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "models")


def conv(cin, cout, k, stride=1, padding=0, groups=1, bias=False, **kw):
    d = {"type": "Conv2d", "in_channels": cin, "out_channels": cout, "kernel_size": k}
    if stride != 1:
        d["stride"] = stride
    if padding:
        d["padding"] = padding
    if groups != 1:
        d["groups"] = groups
    d["bias"] = bias
    d.update(kw)
    return d


def bn(c, **kw):
    return dict({"type": "BatchNorm2d", "num_features": c}, **kw)


def relu(inplace=True, **kw):
    return dict({"type": "ReLU", "inplace": inplace}, **kw)


# ---------------------------------------------------------------- CNNs

def resnet():
    """torchvision resnet.py BasicBlock, CIFAR layout (He et al. 2016, section 4.2):
    3x3 stem, three stages of 2 BasicBlocks (16, 32, 64 channels), 1x1 conv + BN
    downsample shortcut where the shape changes, global pool, Linear."""
    def block(cin, cout, stride):
        layers = [conv(cin, cout, 3, stride, 1), bn(cout), relu(),
                  conv(cout, cout, 3, 1, 1), bn(cout, name="out")]
        ident = "input"
        if stride != 1 or cin != cout:
            layers += [conv(cin, cout, 1, stride, inputs=["input"]), bn(cout, name="downsample")]
            ident = "downsample"
        layers += [{"type": "Add", "inputs": ["out", ident], "inplace": True}, relu()]
        return {"type": "Sequential", "layers": layers}
    layers = [conv(3, 16, 3, 1, 1), bn(16), relu()]
    cin = 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        layers.append(block(cin, cout, stride))
        layers.append(block(cout, cout, 1))
        cin = cout
    layers += [{"type": "AdaptiveAvgPool2d", "output_size": 1}, {"type": "Flatten"},
               {"type": "Linear", "in_features": 64, "out_features": 10}]
    return {"name": "resnet14-cifar",
            "source": "torchvision 0.14 models/resnet.py BasicBlock; CIFAR-style stem and widths (He et al. 2016 sec. 4.2)",
            "description": "ResNet with BasicBlocks: 3 stages x 2 blocks, 16/32/64 channels, 1x1 conv + BN shortcut on downsampling, in-place residual add and ReLU, 32x32 RGB, 10 classes",
            "input": [3, 32, 32], "layers": layers}


def vgg_bn():
    """torchvision vgg.py make_layers(cfg, batch_norm=True) + classifier, widths / 2..8."""
    cfg = [32, "M", 64, "M", 128, 128, "M", 256, 256, "M", 256, 256, "M"]
    layers = []
    cin = 3
    for v in cfg:
        if v == "M":
            layers.append({"type": "MaxPool2d", "kernel_size": 2, "stride": 2})
        else:
            layers += [conv(cin, v, 3, padding=1, bias=True), bn(v), relu()]
            cin = v
    layers += [{"type": "AdaptiveAvgPool2d", "output_size": [2, 2]}, {"type": "Flatten"},
               {"type": "Linear", "in_features": 256 * 4, "out_features": 512}, relu(),
               {"type": "Dropout", "p": 0.5},
               {"type": "Linear", "in_features": 512, "out_features": 512}, relu(),
               {"type": "Dropout", "p": 0.5},
               {"type": "Linear", "in_features": 512, "out_features": 10}]
    return {"name": "vgg11-bn-small",
            "source": "torchvision 0.14 models/vgg.py, cfg 'A' (VGG-11) with batch_norm=True, channels halved to eighth, avgpool 2x2, classifier 512",
            "description": "VGG-11 with BatchNorm: conv3x3-BN-ReLU(inplace) stacks, 5 max pools, AdaptiveAvgPool2d(2), classifier Linear-ReLU-Dropout(0.5) x2 + Linear, 32x32 RGB",
            "input": [3, 32, 32], "layers": layers}


def unet():
    """milesial/Pytorch-UNet unet_model.py UNet(bilinear=False): DoubleConv (conv-BN-ReLU x2),
    Down = MaxPool + DoubleConv, Up = ConvTranspose2d(stride 2) + cat([skip, up]) + DoubleConv."""
    def dconv(cin, cout, name=None):
        l = [conv(cin, cout, 3, padding=1), bn(cout), relu(), conv(cout, cout, 3, padding=1), bn(cout)]
        last = relu()
        if name:
            last["name"] = name
        return l + [last]
    c = [16, 32, 64, 128]
    layers = dconv(3, c[0], "x1")
    layers += [{"type": "MaxPool2d", "kernel_size": 2}] + dconv(c[0], c[1], "x2")
    layers += [{"type": "MaxPool2d", "kernel_size": 2}] + dconv(c[1], c[2], "x3")
    layers += [{"type": "MaxPool2d", "kernel_size": 2}] + dconv(c[2], c[3], "x4")
    for i, (cin, skip) in enumerate(((c[3], "x3"), (c[2], "x2"), (c[1], "x1"))):
        cout = cin // 2
        layers.append({"type": "ConvTranspose2d", "in_channels": cin, "out_channels": cout,
                       "kernel_size": 2, "stride": 2, "name": "up%d" % (i + 1)})
        layers.append({"type": "Cat", "inputs": [skip, "up%d" % (i + 1)], "dim": 1})
        layers += dconv(cin, cout)
    layers.append({"type": "Conv2d", "in_channels": c[0], "out_channels": 2, "kernel_size": 1})
    return {"name": "unet-small",
            "source": "milesial/Pytorch-UNet unet/unet_model.py UNet(n_channels=3, n_classes=2, bilinear=False), 3 downs, base width 16",
            "description": "U-Net: DoubleConv (conv-BN-ReLU x2), 3 max-pool downs, 3 ConvTranspose2d(k2, s2) ups, each concatenated with its skip (torch.cat) before a DoubleConv, 1x1 output conv, 64x64 RGB, 2 classes",
            "input": [3, 64, 64], "layers": layers}


def densenet():
    """torchvision densenet.py: _DenseLayer (cat of all earlier maps -> BN-ReLU-conv1x1
    (bn_size*growth) -> BN-ReLU-conv3x3 (growth)), _Transition (BN-ReLU-conv1x1-AvgPool2)."""
    growth, bn_size = 12, 4
    layers = [conv(3, 24, 3, padding=1)]
    cin = 24
    for blk, nlayers in enumerate((4, 4, 4)):
        inner = []
        feats = ["input"]
        c = cin
        for i in range(nlayers):
            # torchvision's _DenseLayer cats its list of inputs, a single map included (a copy)
            inner.append({"type": "Cat", "inputs": list(feats), "dim": 1})
            inner += [bn(c), relu(), conv(c, bn_size * growth, 1), bn(bn_size * growth), relu(),
                      conv(bn_size * growth, growth, 3, padding=1, name="f%d" % (i + 1))]
            feats.append("f%d" % (i + 1))
            c += growth
        inner.append({"type": "Cat", "inputs": list(feats), "dim": 1})
        layers.append({"type": "Sequential", "name": "denseblock%d" % (blk + 1), "layers": inner})
        cin = c
        if blk < 2:
            layers += [bn(cin), relu(), conv(cin, cin // 2, 1), {"type": "AvgPool2d", "kernel_size": 2, "stride": 2}]
            cin //= 2
    layers += [bn(cin), relu(), {"type": "AdaptiveAvgPool2d", "output_size": 1}, {"type": "Flatten"},
               {"type": "Linear", "in_features": cin, "out_features": 10}]
    return {"name": "densenet-bc-small",
            "source": "torchvision 0.14 models/densenet.py _DenseLayer/_DenseBlock/_Transition (memory_efficient=False), DenseNet-BC growth 12, 3 blocks of 4 layers",
            "description": "DenseNet-BC: each dense layer concatenates all earlier maps of its block (a new tensor each time, the single map of the first layer included) then BN-ReLU-1x1 conv-BN-ReLU-3x3 conv; transitions halve channels and pool; 32x32 RGB",
            "input": [3, 32, 32], "layers": layers}


def mobilenet():
    """torchvision mobilenetv2.py InvertedResidual (expand 1x1 - depthwise 3x3 - project 1x1,
    ReLU6, `x + self.conv(x)` when stride 1 and channels match), width 0.5."""
    def ir(cin, cout, stride, t):
        hid = cin * t
        l = []
        if t != 1:
            l.append({"type": "Sequential", "layers": [conv(cin, hid, 1), bn(hid), {"type": "ReLU6", "inplace": True}]})
        l.append({"type": "Sequential", "layers": [conv(hid, hid, 3, stride, 1, groups=hid), bn(hid),
                                                    {"type": "ReLU6", "inplace": True}]})
        l += [conv(hid, cout, 1), bn(cout, name="proj")]
        if stride == 1 and cin == cout:
            l.append({"type": "Add", "inputs": ["input", "proj"]})
        return {"type": "Sequential", "layers": l}
    layers = [{"type": "Sequential", "layers": [conv(3, 16, 3, 1, 1), bn(16), {"type": "ReLU6", "inplace": True}]}]
    cin = 16
    for t, c, n, s in ((1, 8, 1, 1), (6, 12, 2, 1), (6, 16, 3, 2), (6, 32, 2, 2), (6, 48, 2, 1), (6, 80, 2, 2)):
        for i in range(n):
            layers.append(ir(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += [{"type": "Sequential", "layers": [conv(cin, 320, 1), bn(320), {"type": "ReLU6", "inplace": True}]},
               {"type": "AdaptiveAvgPool2d", "output_size": 1}, {"type": "Flatten"},
               {"type": "Dropout", "p": 0.2}, {"type": "Linear", "in_features": 320, "out_features": 10}]
    return {"name": "mobilenetv2-small",
            "source": "torchvision 0.14 models/mobilenetv2.py InvertedResidual, width 0.5, CIFAR strides",
            "description": "MobileNetV2: inverted residuals (1x1 expand x6, 3x3 depthwise conv with groups=channels, 1x1 linear projection), ReLU6 in place, residual adds, Dropout(0.2) + Linear head, 32x32 RGB",
            "input": [3, 32, 32], "layers": layers}


def efficientnet():
    """torchvision efficientnet.py MBConv (EfficientNet-B0 stage layout, width x0.5, fewer
    blocks): 1x1 expand (BN, SiLU), depthwise kxk (BN, SiLU), SqueezeExcitation (avgpool,
    1x1 fc1, SiLU, 1x1 fc2, Sigmoid, scale * input: a broadcast Mul), 1x1 project (BN);
    StochasticDepth(p, "row") and `result += input` where stride 1 and channels match."""
    cfg = [(1, 3, 1, 16, 8, 1), (6, 3, 2, 8, 12, 2), (6, 5, 2, 12, 20, 2), (6, 3, 2, 20, 40, 2),
           (6, 5, 1, 40, 56, 1), (6, 5, 2, 56, 96, 1), (6, 3, 1, 96, 160, 1)]
    total = sum(c[5] for c in cfg)
    layers = [conv(3, 16, 3, 1, 1), bn(16), {"type": "SiLU", "inplace": True}]
    bid = 0
    for t, k, s0, cin, cout, n in cfg:
        for i in range(n):
            ci = cin if i == 0 else cout
            st = s0 if i == 0 else 1
            exp = ci * t
            sq = max(1, ci // 4)
            blk = []
            if t != 1:
                blk.append({"type": "Sequential", "layers": [conv(ci, exp, 1), bn(exp), {"type": "SiLU", "inplace": True}]})
            blk.append({"type": "Sequential", "name": "dw", "layers": [conv(exp, exp, k, st, (k - 1) // 2, groups=exp), bn(exp),
                                                                       {"type": "SiLU", "inplace": True}]})
            blk.append({"type": "Sequential", "name": "se", "layers": [
                {"type": "AdaptiveAvgPool2d", "output_size": 1},
                conv(exp, sq, 1, bias=True), {"type": "SiLU", "inplace": True},
                conv(sq, exp, 1, bias=True), {"type": "Sigmoid", "name": "scale"},
                {"type": "Mul", "inputs": ["scale", "input"]}]})
            blk += [conv(exp, cout, 1), bn(cout, name="proj")]
            if st == 1 and ci == cout:
                p = round(0.2 * bid / total, 4)
                blk += [{"type": "StochasticDepth", "p": p, "mode": "row"},
                        {"type": "Add", "inputs": ["layers[%d]" % len(blk), "input"], "inplace": True}]
            layers.append({"type": "Sequential", "layers": blk})
            bid += 1
    layers += [conv(160, 640, 1), bn(640), {"type": "SiLU", "inplace": True},
               {"type": "AdaptiveAvgPool2d", "output_size": 1}, {"type": "Flatten"},
               {"type": "Dropout", "p": 0.2, "inplace": True}, {"type": "Linear", "in_features": 640, "out_features": 10}]
    return {"name": "efficientnet-small",
            "source": "torchvision 0.14 models/efficientnet.py MBConv + SqueezeExcitation + StochasticDepth (EfficientNet-B0 stages, width 0.5, 10 blocks, CIFAR stem)",
            "description": "EfficientNet-style MBConv blocks: 1x1 expand, depthwise kxk, squeeze-excitation (global pool, 1x1 convs, SiLU, Sigmoid, broadcast multiply), 1x1 projection, stochastic depth and in-place residual add; SiLU head, Dropout(0.2, in place), Linear; 32x32 RGB",
            "input": [3, 32, 32], "layers": layers}


def m5():
    """M5 (Dai et al. 2017, 'Very deep CNNs for raw waveforms'), as in the torchaudio
    speech-command tutorial: Conv1d(k80, s16) stem, 3 conv blocks, BN1d, ReLU, MaxPool1d(4)."""
    def blk(cin, cout, k, stride=1):
        return [{"type": "Conv1d", "in_channels": cin, "out_channels": cout, "kernel_size": k, "stride": stride},
                {"type": "BatchNorm1d", "num_features": cout}, {"type": "ReLU"},
                {"type": "MaxPool1d", "kernel_size": 4}]
    layers = blk(1, 32, 80, 16) + blk(32, 32, 3) + blk(32, 64, 3) + blk(64, 64, 3)
    layers += [{"type": "AdaptiveAvgPool1d", "output_size": 1}, {"type": "Flatten"},
               {"type": "Linear", "in_features": 64, "out_features": 35}, {"type": "LogSoftmax", "dim": -1}]
    return {"name": "m5-audio",
            "source": "torchaudio speech-command tutorial M5(n_input=1, n_output=35, stride=16, n_channel=32)",
            "description": "M5 raw-waveform classifier: Conv1d(1->32, k80, s16)-BN1d-ReLU-MaxPool1d(4), three Conv1d(k3) blocks, global average pool, Linear, LogSoftmax; 1 s of 16 kHz audio",
            "input": [1, 16000], "layers": layers}


# ---------------------------------------------------------------- MLP / embeddings

def mlp():
    """A GELU MLP block stack (timm Mlp / transformer FFN style): Linear-LayerNorm-GELU-Dropout."""
    layers = []
    dims = [784, 1024, 1024, 512]
    for a, b in zip(dims, dims[1:]):
        layers += [{"type": "Linear", "in_features": a, "out_features": b}, {"type": "LayerNorm", "normalized_shape": b},
                   {"type": "GELU"}, {"type": "Dropout", "p": 0.1}]
    layers.append({"type": "Linear", "in_features": dims[-1], "out_features": 10})
    return {"name": "mlp-gelu-ln",
            "source": "MLP classifier with LayerNorm, GELU and Dropout (timm layers/mlp.py Mlp pattern), MNIST-sized input",
            "description": "3 hidden layers (784-1024-1024-512), each Linear-LayerNorm-GELU-Dropout(0.1), Linear head, 10 classes, cross-entropy loss",
            "input": [784], "loss": "cross_entropy", "layers": layers}


def emb_bag():
    """fastText-style text classifier (Joulin et al. 2017): embedding, mean over tokens, MLP."""
    return {"name": "embedding-mean-classifier",
            "source": "fastText-style classifier (torchtext text-classification tutorial: EmbeddingBag(mean) + Linear), with an MLP head",
            "description": "Embedding(20000, 128) of 256 int64 token ids, mean over the sequence, Linear-ReLU-Dropout-Linear to 4 classes, cross-entropy",
            "input": {"shape": [256], "dtype": "int64"}, "loss": "cross_entropy",
            "layers": [{"type": "Embedding", "num_embeddings": 20000, "embedding_dim": 128},
                       {"type": "Mean", "dim": 1},
                       {"type": "Linear", "in_features": 128, "out_features": 256}, relu(False),
                       {"type": "Dropout", "p": 0.3},
                       {"type": "Linear", "in_features": 256, "out_features": 4}]}


def textcnn():
    """Kim 2014 CNN for sentence classification: embedding, Conv1d filters of widths
    3/4/5, ReLU, max-over-time pooling, concatenation, dropout, Linear."""
    layers = [{"type": "Embedding", "num_embeddings": 10000, "embedding_dim": 96, "name": "emb"},
              {"type": "Transpose", "dim0": 1, "dim1": 2, "name": "x"}]
    names = []
    for k in (3, 4, 5):
        layers += [{"type": "Conv1d", "in_channels": 96, "out_channels": 64, "kernel_size": k, "inputs": ["x"]},
                   relu(False), {"type": "AdaptiveMaxPool1d", "output_size": 1},
                   {"type": "Flatten", "name": "p%d" % k}]
        names.append("p%d" % k)
    layers += [{"type": "Cat", "inputs": names, "dim": 1}, {"type": "Dropout", "p": 0.5},
               {"type": "Linear", "in_features": 192, "out_features": 5}]
    return {"name": "textcnn",
            "source": "Kim 2014, 'Convolutional Neural Networks for Sentence Classification' (CNN-rand), 64 filters per width",
            "description": "Embedding(10000, 96) of 128 token ids, transposed to channels-first, Conv1d k=3/4/5 (64 each) + ReLU + max-over-time, concatenated, Dropout(0.5), Linear to 5 classes, cross-entropy",
            "input": {"shape": [128], "dtype": "int64"}, "loss": "cross_entropy", "layers": layers}


# ---------------------------------------------------------------- attention

def encoder_postnorm():
    """BERT-style post-norm encoder classifier: token + learned position embeddings,
    nn.TransformerEncoderLayer(norm_first=False, ReLU), mean pooling, Linear."""
    L, d = 64, 128
    return {"name": "transformer-postnorm-classifier",
            "source": "torch.nn.TransformerEncoderLayer (norm_first=False, activation relu) x3, BERT-style embeddings",
            "description": "Embedding(4000, 128) + learned positions [64, 128], Dropout(0.1), 3 post-norm TransformerEncoderLayers (4 heads, ff 512, dropout 0.1), mean over tokens, Linear to 10 classes, cross-entropy",
            "input": {"shape": [L], "dtype": "int64"}, "loss": "cross_entropy",
            "layers": [{"type": "Embedding", "num_embeddings": 4000, "embedding_dim": d, "name": "tok"},
                       {"type": "Parameter", "shape": [L, d], "name": "pos"},
                       {"type": "Add", "inputs": ["tok", "pos"]},
                       {"type": "Dropout", "p": 0.1},
                       {"type": "TransformerEncoderLayer", "d_model": d, "nhead": 4, "dim_feedforward": 512,
                        "dropout": 0.1, "repeat": 3},
                       {"type": "Mean", "dim": 1},
                       {"type": "Linear", "in_features": d, "out_features": 10}]}


def gpt_prenorm(ckpt=False):
    """GPT-2-style pre-norm decoder-only LM: token + position embeddings, pre-norm GELU
    blocks (nn.TransformerEncoderLayer(norm_first=True) with a causal-free stack), final
    LayerNorm, tied LM head, cross-entropy over the vocabulary."""
    L, d, V = 64, 128, 2000
    m = {"name": "gpt-prenorm-ckpt" if ckpt else "gpt-prenorm",
         "source": "GPT-2 layout (final LayerNorm, tied head) with torch.nn.TransformerEncoderLayer(norm_first=True, activation gelu)"
                   + ("; torch.utils.checkpoint(use_reentrant=False) around each block" if ckpt else ""),
         "description": "Embedding(2000, 128) + learned positions, Dropout(0.1), %d pre-norm GELU TransformerEncoderLayers (4 heads, ff 512, dropout 0.1)%s, LayerNorm, tied Linear head, cross-entropy over 64 tokens"
                        % (4 if ckpt else 3, ", each checkpointed" if ckpt else ""),
         "input": {"shape": [L], "dtype": "int64"}, "loss": "cross_entropy",
         "layers": [{"type": "Embedding", "num_embeddings": V, "embedding_dim": d, "name": "tok"},
                    {"type": "Parameter", "shape": [L, d], "name": "pos"},
                    {"type": "Add", "inputs": ["tok", "pos"]},
                    {"type": "Dropout", "p": 0.1},
                    dict({"type": "TransformerEncoderLayer", "d_model": d, "nhead": 4, "dim_feedforward": 512,
                          "dropout": 0.1, "activation": "gelu", "norm_first": True, "repeat": 4 if ckpt else 3},
                         **({"checkpoint": True} if ckpt else {})),
                    {"type": "LayerNorm", "normalized_shape": d},
                    {"type": "Linear", "in_features": d, "out_features": V, "bias": False, "tie": "tok"}]}
    return m


def mha_selfattn():
    """nn.MultiheadAttention as users call it (need_weights=True, the default: the
    explicit L x L path) in a residual self-attention block with a feed-forward."""
    L, E = 128, 128
    return {"name": "mha-self-attention",
            "source": "torch.nn.MultiheadAttention(128, 8) called as attn(x, x, x) (need_weights=True default, averaged weights), residual + LayerNorm + FFN",
            "description": "Input [128, 128]; Linear projection, MultiheadAttention(128, 8 heads, need_weights=True), residual Add, LayerNorm, Linear-ReLU-Linear FFN, residual Add, mean over tokens, Linear head",
            "input": [L, 96],
            "layers": [{"type": "Linear", "in_features": 96, "out_features": E, "name": "x"},
                       {"type": "MultiheadAttention", "embed_dim": E, "num_heads": 8, "inputs": ["x"]},
                       {"type": "Add", "inputs": ["x", "layers[1]"]},
                       {"type": "LayerNorm", "normalized_shape": E, "name": "h"},
                       {"type": "Linear", "in_features": E, "out_features": 256}, relu(False),
                       {"type": "Linear", "in_features": 256, "out_features": E},
                       {"type": "Add", "inputs": ["h", "layers[6]"]},
                       {"type": "Mean", "dim": 1},
                       {"type": "Linear", "in_features": E, "out_features": 10}]}


def mha_cross():
    """Cross-attention (a perceiver / decoder cross-attention block): queries attend to a
    memory of another width through nn.MultiheadAttention(kdim, vdim), need_weights=False
    (SDPA math path), attention dropout."""
    return {"name": "mha-cross-attention",
            "source": "torch.nn.MultiheadAttention(128, 4, dropout=0.1, kdim=96, vdim=96) called with need_weights=False (as nn.TransformerDecoderLayer does), two stacked cross-attention blocks",
            "description": "Queries [64, 128] and memory [96, 96]; two blocks of MultiheadAttention(q, mem, mem; kdim=vdim=96, 4 heads, dropout 0.1, need_weights=False) + residual + LayerNorm; Linear head",
            "inputs": {"q": [64, 128], "mem": [96, 96]},
            "layers": [{"type": "MultiheadAttention", "embed_dim": 128, "num_heads": 4, "dropout": 0.1,
                        "kdim": 96, "vdim": 96, "need_weights": False, "inputs": ["q", "mem", "mem"]},
                       {"type": "Add", "inputs": ["q", "layers[0]"]},
                       {"type": "LayerNorm", "normalized_shape": 128, "name": "h1"},
                       {"type": "MultiheadAttention", "embed_dim": 128, "num_heads": 4, "dropout": 0.1,
                        "kdim": 96, "vdim": 96, "need_weights": False, "inputs": ["h1", "mem", "mem"]},
                       {"type": "Add", "inputs": ["h1", "layers[3]"]},
                       {"type": "LayerNorm", "normalized_shape": 128},
                       {"type": "Linear", "in_features": 128, "out_features": 32}]}


def vit():
    """ViT (Dosovitskiy et al. 2021; torchvision vision_transformer.py): patch conv,
    flatten + transpose, class token, position embedding, pre-norm encoder, class head."""
    d, P = 128, 4
    n = (32 // P) ** 2
    return {"name": "vit-tiny",
            "source": "torchvision 0.14 models/vision_transformer.py (conv_proj, class_token, pos_embedding, EncoderBlock = pre-norm GELU), patch 4 on 32x32, 3 layers",
            "description": "Conv2d patch embedding (k4, s4) to 128 channels, flatten(2).transpose(1, 2), class token concatenated, learned position embedding, Dropout, 3 pre-norm GELU TransformerEncoderLayers (4 heads, ff 384), class token selected, LayerNorm, Linear",
            "input": [3, 32, 32],
            "layers": [{"type": "Conv2d", "in_channels": 3, "out_channels": d, "kernel_size": P, "stride": P},
                       {"type": "Flatten", "start_dim": 2},
                       {"type": "Transpose", "dim0": 1, "dim1": 2, "name": "patches"},
                       {"type": "Parameter", "shape": [1, d], "name": "cls"},
                       {"type": "Cat", "inputs": ["cls", "patches"], "dim": 1},
                       {"type": "Parameter", "shape": [n + 1, d], "name": "pos"},
                       {"type": "Add", "inputs": ["layers[4]", "pos"]},
                       {"type": "Dropout", "p": 0.1},
                       {"type": "TransformerEncoderLayer", "d_model": d, "nhead": 4, "dim_feedforward": 384,
                        "dropout": 0.1, "activation": "gelu", "norm_first": True, "repeat": 3},
                       {"type": "Select", "dim": 1, "index": 0},
                       {"type": "LayerNorm", "normalized_shape": d},
                       {"type": "Linear", "in_features": d, "out_features": 10}]}


# ---------------------------------------------------------------- fine-tune / checkpoint

def frozen_finetune():
    """Transfer learning (torchvision fine-tuning tutorial pattern): a frozen
    convolutional backbone (requires_grad=False, BatchNorm still in train mode) and a
    trainable head."""
    def blk(cin, cout):
        return [conv(cin, cout, 3, padding=1), bn(cout), relu(), conv(cout, cout, 3, padding=1), bn(cout), relu(),
                {"type": "MaxPool2d", "kernel_size": 2}]
    backbone = blk(3, 32) + blk(32, 64) + blk(64, 128)
    return {"name": "frozen-backbone-finetune",
            "source": "PyTorch transfer-learning tutorial pattern (feature extractor: requires_grad=False on the backbone, new head trained)",
            "description": "Frozen VGG-style backbone (3 stages of 2 conv-BN-ReLU + max pool, 32/64/128 channels; BatchNorm in train mode) and a trainable head: conv3x3-BN-ReLU, global pool, Dropout, Linear, 64x64 RGB",
            "input": [3, 64, 64],
            "layers": [{"type": "Sequential", "frozen": True, "layers": backbone},
                       conv(128, 128, 3, padding=1), bn(128), relu(),
                       {"type": "AdaptiveAvgPool2d", "output_size": 1}, {"type": "Flatten"},
                       {"type": "Dropout", "p": 0.2},
                       {"type": "Linear", "in_features": 128, "out_features": 20}]}


def ckpt_resmlp():
    """Residual pre-norm MLP blocks (MLP-Mixer channel MLP / transformer FFN) each under
    torch.utils.checkpoint (non-reentrant)."""
    d = 512
    return {"name": "ckpt-residual-mlp",
            "source": "pre-norm residual FFN blocks x + Dropout(W2 GELU(W1 LN(x))), each wrapped in torch.utils.checkpoint(use_reentrant=False)",
            "description": "Linear 256->512, 4 checkpointed residual blocks (LayerNorm, Linear 512->2048, GELU, Linear 2048->512, Dropout 0.1, Add), LayerNorm, Linear head",
            "input": [32, 256],
            "layers": [{"type": "Linear", "in_features": 256, "out_features": d},
                       {"type": "Sequential", "repeat": 4, "checkpoint": True, "layers": [
                           {"type": "LayerNorm", "normalized_shape": d},
                           {"type": "Linear", "in_features": d, "out_features": 4 * d},
                           {"type": "GELU"},
                           {"type": "Linear", "in_features": 4 * d, "out_features": d},
                           {"type": "Dropout", "p": 0.1},
                           {"type": "Add", "inputs": ["input", "layers[4]"]}]},
                       {"type": "LayerNorm", "normalized_shape": d},
                       {"type": "Mean", "dim": 1},
                       {"type": "Linear", "in_features": d, "out_features": 10}]}


# ---------------------------------------------------------------- issue 17: inference fast paths, in-place activations

def mha_native():
    """The 256-wide, 8-head MultiheadAttention block of issue 17 (T = 128): self-attention,
    even heads, biases: in eval under no_grad PyTorch 2.x runs _native_multi_head_attention."""
    return {"name": "mha-native-256x8",
            "source": "torch.nn.MultiheadAttention(256, 8, batch_first=True) called as attn(x, x, x) (need_weights=True default)",
            "description": "Input [128, 256]; MultiheadAttention(256, 8 heads, need_weights=True)",
            "input": [128, 256],
            "layers": [{"type": "MultiheadAttention", "embed_dim": 256, "num_heads": 8}]}


def encoder_native():
    """A post-norm TransformerEncoderLayer whose inference takes 2.x's fast path
    (_transformer_encoder_layer_fwd): even heads, biases, relu."""
    return {"name": "encoder-native-256x8",
            "source": "torch.nn.TransformerEncoderLayer(256, 8, dim_feedforward=1024, batch_first=True) x2",
            "description": "Input [128, 256]; 2 post-norm TransformerEncoderLayers (8 heads, ff 1024, dropout 0.1, relu)",
            "input": [128, 256],
            "layers": [{"type": "TransformerEncoderLayer", "d_model": 256, "nhead": 8, "dim_feedforward": 1024,
                        "dropout": 0.1, "repeat": 2}]}


def vit3_block():
    """A ViT-Ti/16 encoder block (3 heads, width 192, 197 tokens, MLP 768, pre-norm GELU):
    odd heads, so no fast path; the math SDPA's _safe_softmax depends on the release."""
    return {"name": "vit-ti-block",
            "source": "ViT-Ti/16 (DeiT-Tiny) encoder block as torch.nn.TransformerEncoderLayer(192, 3, 768, gelu, norm_first=True)",
            "description": "Input [197, 192]; one pre-norm GELU TransformerEncoderLayer (3 heads, ff 768, dropout 0)",
            "input": [197, 192],
            "layers": [{"type": "TransformerEncoderLayer", "d_model": 192, "nhead": 3, "dim_feedforward": 768,
                        "dropout": 0.0, "activation": "gelu", "norm_first": True}]}


def hswish_wide():
    """Linear(256 -> 65536) + Hardswish(inplace=True) (issue 17): no clone of the input without grad."""
    return {"name": "hardswish-wide",
            "source": "torch.nn.Sequential(torch.nn.Linear(256, 65536), torch.nn.Hardswish(inplace=True))",
            "description": "Input [256]; Linear(256, 65536), in-place Hardswish",
            "input": [256],
            "layers": [{"type": "Linear", "in_features": 256, "out_features": 65536},
                       {"type": "Hardswish", "inplace": True}]}


def hswish_frozen():
    """A frozen Linear, an in-place Hardswish, a trained head: the activation's input does not
    require grad, so autograd records no node and makes no copy."""
    return {"name": "hardswish-frozen-prefix",
            "source": "frozen torch.nn.Linear(256, 4096) (requires_grad_(False)), Hardswish(inplace=True), Linear(4096, 10)",
            "description": "Input [256]; frozen Linear(256, 4096), in-place Hardswish, Linear(4096, 10)",
            "input": [256],
            "layers": [{"type": "Linear", "in_features": 256, "out_features": 4096, "frozen": True},
                       {"type": "Hardswish", "inplace": True},
                       {"type": "Linear", "in_features": 4096, "out_features": 10}]}


def swin(p=0.0):
    """Swin Transformer (Liu et al. 2021; torchvision 0.14 models/swin_transformer.py
    SwinTransformer, as tools/torch2vramcalc.py exports it): patch conv, channels-last
    LayerNorm, blocks x + attn(norm1(x)), x + mlp(norm2(x)) with ShiftedWindowAttention
    (shift 0, then window // 2), PatchMerging (_patch_merging_pad: pad's clone, four strided
    slices, cat; LayerNorm; Linear), head; window 4 on 32x32 (stage 2's 4x4 map: one window,
    shift zeroed).  p > 0: SwinTransformer(dropout=p, attention_dropout=p): the attention's
    F.dropout on the softmax and after proj, and the MLP's two nn.Dropout(p)
    (torchvision/ops/misc.py MLP: Linear, GELU, Dropout, Linear, Dropout)."""
    def block(dim, heads, shift):
        attn = {"type": "ShiftedWindowAttention", "dim": dim, "window_size": 4, "shift_size": shift, "num_heads": heads}
        if p:
            attn.update(attention_dropout=p, dropout=p)
        mlp = [{"type": "Linear", "in_features": dim, "out_features": 4 * dim}, {"type": "GELU"}]
        mlp += [{"type": "Dropout", "p": p}] if p else []
        mlp += [{"type": "Linear", "in_features": 4 * dim, "out_features": dim}]
        mlp += [{"type": "Dropout", "p": p}] if p else []
        return {"type": "Sequential", "layers": [
            {"type": "LayerNorm", "normalized_shape": dim}, attn,
            {"type": "Add", "inputs": ["input", "layers[1]"], "name": "h"},
            {"type": "LayerNorm", "normalized_shape": dim}] + mlp + [
            {"type": "Add", "inputs": ["h", "layers[%d]" % (3 + len(mlp))]}]}
    merge = [{"type": "Cat", "dim": 1, "name": "padded"}]
    for a, b in ((0, 0), (1, 0), (0, 1), (1, 1)):
        merge += [{"type": "Slice", "dim": 1, "start": a, "step": 2, "inputs": ["padded"]},
                  {"type": "Slice", "dim": 2, "start": b, "step": 2, "name": "m%d%d" % (a, b)}]
    merge += [{"type": "Cat", "dim": 3, "inputs": ["m00", "m10", "m01", "m11"]},
              {"type": "LayerNorm", "normalized_shape": 128},
              {"type": "Linear", "in_features": 128, "out_features": 64, "bias": False}]
    return {"name": "swin-tiny-32" + ("-dropout" if p else ""),
            "source": "torchvision 0.14 models/swin_transformer.py SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4], stochastic_depth_prob=0, num_classes=10%s)"
                      % (", dropout=%g, attention_dropout=%g" % (p, p) if p else ""),
            "description": "Conv2d patch embedding (k4, s4) to 32 channels, permute to [H, W, C], LayerNorm; 2 blocks (2 heads, window 4, shift 0 and 2) on 8x8; PatchMerging to 64 channels; 2 blocks (4 heads) on 4x4; LayerNorm, permute, AdaptiveAvgPool2d, Linear"
                           + ("; dropout %g in the attention (softmax, proj) and the MLP" % p if p else ""),
            "input": [3, 32, 32],
            "layers": [{"type": "Conv2d", "in_channels": 3, "out_channels": 32, "kernel_size": 4, "stride": 4},
                       {"type": "Permute", "dims": [0, 2, 3, 1]},
                       {"type": "LayerNorm", "normalized_shape": 32},
                       block(32, 2, 0), block(32, 2, 2)] + merge +
                      [block(64, 4, 0), block(64, 4, 2),
                       {"type": "LayerNorm", "normalized_shape": 64},
                       {"type": "Permute", "dims": [0, 3, 1, 2]},
                       {"type": "AdaptiveAvgPool2d", "output_size": 1},
                       {"type": "Flatten"},
                       {"type": "Linear", "in_features": 64, "out_features": 10}]}


# MViT's reduced block list: (num_heads, input_channels, output_channels, stride_q, stride_kv), every
# kernel [3, 3, 3] as in torchvision's mvit_v1_b / mvit_v2_s; on 4x32x32 clips the patch conv
# (k [3, 7, 7], s [2, 4, 4]) gives 2x8x8 tokens, pooled to 2x4x4 and 2x2x2 by the q strides.
MVIT_BLOCKS = [(1, 32, 32, [1, 1, 1], [1, 4, 4]), (2, 32, 64, [1, 2, 2], [1, 2, 2]),
               (2, 64, 64, [1, 1, 1], [1, 2, 2]), (4, 64, 128, [1, 2, 2], [1, 1, 1])]


def mvit(v2):
    """Multiscale Vision Transformer (Fan et al. 2021; Li et al. 2022 for v2): torchvision 0.14
    models/video/mvit.py MViT with mvit_v1_b's (v2: mvit_v2_s's) flags and a reduced block
    list, as tools/torch2vramcalc.py exports it (the only model here written by the exporter:
    MultiscaleAttention, MViTPool and MViTPositionalEncoding layers and the traced rest; torch
    is imported for these two only)."""
    import sys
    import torch
    from torchvision.models.video import mvit as tv
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
    import torch2vramcalc
    torch.manual_seed(0)
    cfg = [tv.MSBlockConfig(num_heads=h, input_channels=i, output_channels=o, kernel_q=[3, 3, 3],
                            kernel_kv=[3, 3, 3], stride_q=sq, stride_kv=skv) for h, i, o, sq, skv in MVIT_BLOCKS]
    m = tv.MViT(spatial_size=(32, 32), temporal_size=4, block_setting=cfg, residual_pool=v2,
                residual_with_cls_embed=False, rel_pos_embed=v2, proj_after_attn=v2, stochastic_depth_prob=0.0,
                num_classes=10)
    doc, _info = torch2vramcalc.export(m, [(None, [3, 4, 32, 32], torch.float32)], name="mvit-%s-tiny-32" % ("v2" if v2 else "v1"))
    flags = "residual_pool=%s, residual_with_cls_embed=False, rel_pos_embed=%s, proj_after_attn=%s" % (v2, v2, v2)
    doc["source"] = ("torchvision 0.14 models/video/mvit.py MViT(spatial_size=(32, 32), temporal_size=4, "
                     "block_setting=[MSBlockConfig(num_heads, input_channels, output_channels, kernel_q=[3, 3, 3], "
                     "kernel_kv=[3, 3, 3], stride_q, stride_kv) for %s], %s, stochastic_depth_prob=0, "
                     "num_classes=10), exported by tools/torch2vramcalc.py" % (MVIT_BLOCKS, flags))
    doc["description"] = ("Conv3d patch embedding (k [3, 7, 7], s [2, 4, 4]) to 32 channels on 4x32x32 clips (2x8x8 "
                          "tokens), flatten, transpose, class token%s; 4 MultiscaleBlocks (LayerNorm, "
                          "MultiscaleAttention with Conv3d pooling of q/k/v%s, MViTPool skip where q is strided, "
                          "MLP) to 128 channels on 2x2x2; LayerNorm, class token, Dropout(0.5), Linear"
                          % ("" if v2 else " and positional table",
                             ", relative positions and residual pooling; the block's projection after the "
                             "attention" if v2 else ""))
    return doc


MODELS = {
    "resnet": resnet, "vgg_bn": vgg_bn, "unet": unet, "densenet": densenet, "mobilenet": mobilenet, "efficientnet": efficientnet,
    "m5_audio": m5, "mlp": mlp, "emb_mean": emb_bag, "textcnn": textcnn,
    "encoder_postnorm": encoder_postnorm, "gpt_prenorm": gpt_prenorm,
    "gpt_prenorm_ckpt": lambda: gpt_prenorm(ckpt=True),
    "mha_self": mha_selfattn, "mha_cross": mha_cross, "vit": vit,
    "frozen_finetune": frozen_finetune, "ckpt_resmlp": ckpt_resmlp,
    "mha_native": mha_native, "encoder_native": encoder_native, "vit3_block": vit3_block,
    "hswish_wide": hswish_wide, "hswish_frozen": hswish_frozen, "swin": swin,
    "swin_dropout": lambda: swin(p=0.1),
    "mvit_v1": lambda: mvit(False), "mvit_v2": lambda: mvit(True),
}


def dump(m):
    """One layer per line (readable diffs)."""
    return json.dumps(m, indent=1) + "\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, f in MODELS.items():
        with open(os.path.join(OUT, name + ".json"), "w") as fh:
            fh.write(dump(f()))
    print("wrote %d models to %s" % (len(MODELS), OUT))


if __name__ == "__main__":
    main()
