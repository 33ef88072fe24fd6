#!/usr/bin/python3
"""zoo.py -- writes the model zoo (examples/*.json) from compact Python descriptions.

    /usr/bin/python3 examples/zoo.py            # rewrite every examples/*.json
    /usr/bin/python3 examples/zoo.py --check    # exit 1 if a file differs from what it would write

Each builder below transcribes one reference implementation (named in the model's
"source") module by module, in the order its forward() runs, using Sequential scopes and
`repeat` where the reference repeats identical blocks.  The parameter counts are checked
against the references by tests/roundtrip/check_zoo.py and tests/test_zoo.c
(examples/reference_counts.json).  Where the model format cannot say exactly what the
reference does, the model's "description" says what was left out.
"""

import argparse
import os
import sys
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
from torch2vramcalc import dumps  # noqa: E402  (the exporter's JSON layout; needs torch)

_GRAPH_FIRST = ("type", "name", "inputs")


def L(kind, **kw):
    """A layer: type, name, inputs first, then constructor arguments, then repeat/flags."""
    d = OrderedDict(type=kind)
    for k in ("name", "inputs"):
        if k in kw:
            d[k] = kw.pop(k)
    tail = OrderedDict((k, kw.pop(k)) for k in ("repeat", "frozen", "checkpoint", "tie") if k in kw)
    d.update(kw)
    d.update(tail)
    return d


def Seq(layers, **kw):
    d = L("Sequential", **kw)
    d["layers"] = layers
    return d


def model(name, source, description, inp, layers, loss=None, inputs=None):
    d = OrderedDict(name=name, source=source, description=description)
    if inputs is not None:
        d["inputs"] = inputs
    else:
        d["input"] = inp
    if loss:
        d["loss"] = loss
    d["layers"] = layers
    return d


def tokens(n):
    return OrderedDict(shape=[n], dtype="int64")


def conv(cin, cout, k, stride=1, padding=0, bias=False, groups=1, **kw):
    a = OrderedDict(in_channels=cin, out_channels=cout, kernel_size=k)
    if stride != 1:
        a["stride"] = stride
    if padding != 0:
        a["padding"] = padding
    if groups != 1:
        a["groups"] = groups
    if not bias:
        a["bias"] = False
    a.update(kw)
    return L("Conv2d", **a)


def bn(c, **kw):
    return L("BatchNorm2d", num_features=c, **kw)


def relu(**kw):
    return L("ReLU", inplace=True, **kw)


def linear(i, o, **kw):
    return L("Linear", in_features=i, out_features=o, **kw)


# --------------------------------------------------------------------------
# torchvision 0.14 classifiers
# --------------------------------------------------------------------------

TV = "torchvision 0.14 torchvision/models/%s (%s, no pretrained weights)"


# Scopes follow torchvision's module nesting: a Sequential here is an nn.Sequential (or
# a module's forward) there.  That matters for inference: a Python caller holds a
# submodule's input until the submodule returns, and a Sequential scope does the same.


def resnet_basic(cin, cout, stride):
    body = [conv(cin, cout, 3, stride, 1), bn(cout), relu(), conv(cout, cout, 3, 1, 1), bn(cout, name="main")]
    if stride != 1 or cin != cout:
        body += [Seq([conv(cin, cout, 1, stride), bn(cout)], inputs=["input"], name="downsample"),
                 L("Add", inputs=["main", "downsample"], inplace=True)]
    else:
        body.append(L("Add", inputs=["main", "input"], inplace=True))
    body.append(relu())
    return body


def resnet_bottleneck(cin, width, stride):
    cout = width * 4
    body = [conv(cin, width, 1), bn(width), relu(),
            conv(width, width, 3, stride, 1), bn(width), relu(),
            conv(width, cout, 1), bn(cout, name="main")]
    if stride != 1 or cin != cout:
        body += [Seq([conv(cin, cout, 1, stride), bn(cout)], inputs=["input"], name="downsample"),
                 L("Add", inputs=["main", "downsample"], inplace=True)]
    else:
        body.append(L("Add", inputs=["main", "input"], inplace=True))
    body.append(relu())
    return body


def resnet(name, depth, blocks, bottleneck):
    layers = [conv(3, 64, 7, 2, 3), bn(64), relu(), L("MaxPool2d", kernel_size=3, stride=2, padding=1)]
    cin = 64
    for stage, (width, n) in enumerate(zip((64, 128, 256, 512), blocks)):
        block = resnet_bottleneck if bottleneck else resnet_basic
        cout = width * 4 if bottleneck else width
        stage_layers = []
        for i in range(n):  # nn.Sequential of blocks: written out, as `repeat` would be one more scope
            stage_layers.append(Seq(block(cin if i == 0 else cout, width, 2 if (stage and not i) else 1),
                                    name="block%d" % i))
        layers.append(Seq(stage_layers, name="layer%d" % (stage + 1)))
        cin = cout
    layers += [L("AdaptiveAvgPool2d", output_size=1), L("Flatten"), linear(cin, 1000)]
    return model(name, TV % ("resnet.py", "resnet%d()" % depth),
                 "ResNet-%d (He et al. 2015, v1.5: stride on the 3x3 conv), ImageNet 224x224, 1000 classes. "
                 "Scopes as in torchvision: each stage (layerN) a Sequential of its blocks, each block "
                 "a Sequential with its 1x1 downsample branch where shapes change; `out += identity` "
                 "is an in-place Add." % depth,
                 [3, 224, 224], layers)


def vgg16():
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    layers, c = [], 3
    for v in cfg:
        if v == "M":
            layers.append(L("MaxPool2d", kernel_size=2, stride=2))
        else:
            layers += [conv(c, v, 3, 1, 1, bias=True), relu()]
            c = v
    layers += [L("AdaptiveAvgPool2d", output_size=7), L("Flatten"),
               Seq([linear(512 * 7 * 7, 4096), relu(), L("Dropout"),
                    linear(4096, 4096), relu(), L("Dropout"),
                    linear(4096, 1000)], name="classifier")]
    return model("vgg16", TV % ("vgg.py", "vgg16()"),
                 "VGG-16 (configuration D, Simonyan & Zisserman 2014), no batch norm, ImageNet 224x224.",
                 [3, 224, 224], layers)


def mobilenet_v2():
    def cna(cin, cout, k, stride=1, groups=1):  # Conv2dNormActivation: conv, BN, ReLU6
        return Seq([conv(cin, cout, k, stride, (k - 1) // 2, groups=groups), bn(cout), L("ReLU6", inplace=True)])

    def block(cin, cout, stride, t):  # InvertedResidual
        hidden = int(round(cin * t))
        body = []
        if t != 1:
            body.append(cna(cin, hidden, 1))
        body += [cna(hidden, hidden, 3, stride, groups=hidden), conv(hidden, cout, 1), bn(cout)]
        if stride == 1 and cin == cout:
            return Seq([Seq(body), L("Add", inputs=["input", "layers[0]"])])  # x + self.conv(x)
        return Seq(body)

    layers = [cna(3, 32, 3, 2)]
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            b = block(cin, c, s if i == 0 else 1, t)
            b["name"] = "block%d" % len(layers)
            layers.append(b)
            cin = c
    layers.append(cna(320, 1280, 1))
    layers += [L("AdaptiveAvgPool2d", output_size=1), L("Flatten"),
               Seq([L("Dropout", p=0.2), linear(1280, 1000)], name="classifier")]
    return model("mobilenet_v2", TV % ("mobilenetv2.py", "mobilenet_v2()"),
                 "MobileNetV2 (Sandler et al. 2018), width 1.0, ImageNet 224x224: inverted residual "
                 "blocks (1x1 expand, 3x3 depthwise, 1x1 project, ReLU6), residual `x + conv(x)` "
                 "where stride is 1 and channels match. Scopes as torchvision's modules.",
                 [3, 224, 224], layers)


def efficientnet_b0():
    def cna(cin, cout, k, stride=1, groups=1, act=True):  # Conv2dNormActivation
        out = [conv(cin, cout, k, stride, (k - 1) // 2, groups=groups), bn(cout)]
        if act:
            out.append(L("SiLU", inplace=True))
        return Seq(out)

    setting = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
               (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
    total = sum(st[5] for st in setting)
    layers = [cna(3, 32, 3, 2)]
    block_id = 0
    for t, k, s, cin, cout, n in setting:
        stage = []
        for i in range(n):
            bin_, stride = (cin, s) if i == 0 else (cout, 1)
            exp = bin_ * t
            sq = max(1, bin_ // 4)
            p = 0.2 * float(block_id) / total
            body = []
            if exp != bin_:
                body.append(cna(bin_, exp, 1))
            body.append(cna(exp, exp, k, stride, groups=exp))
            # SqueezeExcitation: scale = sigmoid(fc2(silu(fc1(avgpool(x))))); return scale * x
            body.append(Seq([L("AdaptiveAvgPool2d", output_size=1), conv(exp, sq, 1, bias=True),
                             L("SiLU", inplace=True), conv(sq, exp, 1, bias=True), L("Sigmoid"),
                             L("Mul", inputs=["layers[4]", "input"])], name="se"))
            body.append(cna(exp, cout, 1, act=False))
            if stride == 1 and bin_ == cout:  # MBConv: result = block(x); stochastic depth; result += x
                stage.append(Seq([Seq(body), L("StochasticDepth", p=p, mode="row"),
                                  L("Add", inputs=["layers[1]", "input"], inplace=True)]))
            else:
                stage.append(Seq(body))
            block_id += 1
        layers.append(Seq(stage, name="stage%d" % (len(layers))))
    layers.append(cna(320, 1280, 1))
    layers += [L("AdaptiveAvgPool2d", output_size=1), L("Flatten"),
               Seq([L("Dropout", p=0.2, inplace=True), linear(1280, 1000)], name="classifier")]
    return model("efficientnet_b0", TV % ("efficientnet.py", "efficientnet_b0()"),
                 "EfficientNet-B0 (Tan & Le 2019), ImageNet 224x224: 16 MBConv blocks in 7 stages, with "
                 "squeeze-and-excitation (SiLU) and stochastic depth growing linearly to 0.2. Scopes as "
                 "torchvision's modules.", [3, 224, 224], layers)


def densenet121():
    growth, bn_size = 32, 4
    layers = [conv(3, 64, 7, 2, 3), bn(64), relu(), L("MaxPool2d", kernel_size=3, stride=2, padding=1)]
    c = 64
    for b, n in enumerate((6, 12, 24, 16)):
        body = []
        feats = ["input"]
        for i in range(n):
            cin = c + i * growth
            # _DenseLayer: bn_function(cat(prev_features)) = conv1(relu1(norm1(cat))), then
            # conv2(relu2(norm2(.))); the concatenation lives until bn_function returns
            body += [L("Cat", inputs=list(feats), dim=1),
                     Seq([bn(cin), relu(), conv(cin, bn_size * growth, 1)]),
                     bn(bn_size * growth), relu(), conv(bn_size * growth, growth, 3, 1, 1, name="f%d" % (i + 1))]
            feats.append("f%d" % (i + 1))
        body.append(L("Cat", inputs=feats, dim=1))
        layers.append(Seq(body, name="denseblock%d" % (b + 1)))
        c += n * growth
        if b < 3:
            layers.append(Seq([bn(c), relu(), conv(c, c // 2, 1), L("AvgPool2d", kernel_size=2, stride=2)],
                              name="transition%d" % (b + 1)))
            c //= 2
    layers += [bn(c), relu(), L("AdaptiveAvgPool2d", output_size=1), L("Flatten"), linear(c, 1000)]
    return model("densenet121", TV % ("densenet.py", "densenet121()"),
                 "DenseNet-121 (Huang et al. 2017), growth 32, bn_size 4, ImageNet 224x224. Each dense "
                 "layer concatenates all earlier feature maps of its block (torch.cat, a new tensor "
                 "each time, also of a single map; memory_efficient=False).", [3, 224, 224], layers)


def vit_b_16():
    block = [L("LayerNorm", normalized_shape=768, eps=1e-6),
             L("MultiheadAttention", embed_dim=768, num_heads=12, need_weights=False),
             L("Dropout", p=0.0),
             L("Add", name="x", inputs=["layers[2]", "input"]),
             L("LayerNorm", normalized_shape=768, eps=1e-6),
             Seq([linear(768, 3072), L("GELU"), L("Dropout", p=0.0), linear(3072, 768), L("Dropout", p=0.0)]),
             L("Add", inputs=["x", "layers[5]"])]
    encoder = [L("Parameter", name="pos_embedding", shape=[197, 768]),
               L("Add", inputs=["input", "pos_embedding"]),
               L("Dropout", p=0.0),
               # encoder.layers, an nn.Sequential of 12 blocks: written out (as a `repeat` does
               # not keep each copy's input until the copy returns, nn.Sequential does)
               Seq([Seq(block) for _ in range(12)], name="layers"),
               L("LayerNorm", normalized_shape=768, eps=1e-6)]
    layers = [conv(3, 768, 16, 16, bias=True),
              L("Reshape", shape=[768, 196]),
              L("Permute", name="patches", dims=[0, 2, 1]),
              L("Parameter", name="class_token", shape=[1, 768]),
              L("Cat", inputs=["class_token", "patches"], dim=1),
              Seq(encoder, name="encoder"),
              L("Select", dim=1, index=0),
              linear(768, 1000)]
    return model("vit_b_16", TV % ("vision_transformer.py", "vit_b_16()"),
                 "ViT-B/16 (Dosovitskiy et al. 2020), 224x224: 16x16 patch embedding, class token, "
                 "learned positional embedding, 12 pre-norm encoder blocks (MultiheadAttention with "
                 "need_weights=False, as torchvision calls it), classification from the class token.",
                 [3, 224, 224], layers)


# --------------------------------------------------------------------------
# Other reference implementations
# --------------------------------------------------------------------------

def unet():
    def double(cin, cout, **kw):
        return [conv(cin, cout, 3, 1, 1), bn(cout), relu(), conv(cout, cout, 3, 1, 1), bn(cout), relu(**kw)]

    layers = double(3, 64, name="x1")
    c = 64
    for i in range(4):  # Down: MaxPool2d(2) + DoubleConv
        layers += [L("MaxPool2d", kernel_size=2)] + double(c, c * 2, name="x%d" % (i + 2))
        c *= 2
    prev = "x5"
    for i, skip in enumerate(("x4", "x3", "x2", "x1")):  # Up: ConvTranspose2d, cat([skip, up]), DoubleConv
        layers += [L("ConvTranspose2d", inputs=[prev], in_channels=c, out_channels=c // 2, kernel_size=2, stride=2,
                     name="up%d" % (i + 1)),
                   L("Cat", inputs=[skip, "up%d" % (i + 1)], dim=1)]
        layers += double(c, c // 2, name="u%d" % (i + 1))
        prev = "u%d" % (i + 1)
        c //= 2
    layers.append(conv(64, 2, 1, bias=True))
    return model("unet", "milesial/Pytorch-UNet unet/unet_model.py UNet(n_channels=3, n_classes=2, bilinear=False) "
                 "(commit 21d7850f2af30a9695bbeea75f3136aa538cfc4a)",
                 "U-Net (Ronneberger et al. 2015) as in the most used PyTorch implementation: padded 3x3 "
                 "convs with batch norm, 4 max-pool downs, 4 transposed-conv ups with skip "
                 "concatenation, 512x512 RGB input, 2 classes. Left out: Up's F.pad, which pads by "
                 "zero here (input divisible by 16) but still makes a copy of the upsampled map.",
                 [3, 512, 512], layers)


def bert_base():
    layers = [L("Embedding", inputs=["input_ids"], num_embeddings=30522, embedding_dim=768, padding_idx=0,
                name="word_embeddings"),
              L("Embedding", inputs=["token_type_ids"], num_embeddings=2, embedding_dim=768,
                name="token_type_embeddings"),
              L("Add", inputs=["word_embeddings", "token_type_embeddings"], name="embeddings"),
              L("Parameter", shape=[512, 768], name="position_embeddings"),
              L("Add", inputs=["embeddings", "position_embeddings"], inplace=True),
              L("LayerNorm", normalized_shape=768, eps=1e-12),
              L("Dropout", p=0.1),
              # BertEncoder: BertModel.forward holds the embeddings while encoder(...) loops over layers
              Seq([L("TransformerEncoderLayer", d_model=768, nhead=12, dim_feedforward=3072, dropout=0.1,
                     activation="gelu", layer_norm_eps=1e-12, repeat=12)], name="encoder"),
              L("Select", dim=1, index=0),
              linear(768, 768),
              L("Tanh")]
    inputs = OrderedDict(input_ids=tokens(512), token_type_ids=tokens(512))
    return model("bert_base", "huggingface/transformers src/transformers/models/bert/modeling_bert.py "
                 "BertModel(BertConfig()) = bert-base-uncased (Devlin et al. 2018); 109,482,240 parameters "
                 "as the bert-base-uncased checkpoint",
                 "BERT-base encoder with pooler at its full 512-token length: word, token-type and "
                 "(learned, 512x768) position embeddings, LayerNorm(eps 1e-12), 12 post-norm GELU "
                 "encoder layers (TransformerEncoderLayer has BERT's exact parameters: fused q/k/v "
                 "projection, output projection, 3072-wide FFN, two LayerNorms), tanh pooler on the "
                 "[CLS] token. Inputs: token ids and token-type ids.",
                 None, layers, inputs=inputs)


def gpt2_small():
    block = [L("LayerNorm", normalized_shape=768),                                   # 0 ln_1
             linear(768, 3 * 768, name="qkv"),                                       # 1 c_attn
             L("Slice", inputs=["qkv"], dim=2, start=0, end=768),                    # 2
             L("Reshape", shape=[1024, 12, 64]),
             L("Transpose", dim0=1, dim1=2, name="q"),
             L("Slice", inputs=["qkv"], dim=2, start=768, end=1536),
             L("Reshape", shape=[1024, 12, 64]),
             L("Transpose", dim0=1, dim1=2, name="k"),
             L("Slice", inputs=["qkv"], dim=2, start=1536, end=2304),
             L("Reshape", shape=[1024, 12, 64]),
             L("Transpose", dim0=1, dim1=2, name="v"),
             L("ScaledDotProductAttention", inputs=["q", "k", "v"], dropout_p=0.1, is_causal=True),  # attn_pdrop
             L("Transpose", dim0=1, dim1=2),
             L("Reshape", shape=[1024, 768]),
             linear(768, 768),                                                       # c_proj
             L("Dropout", p=0.1),                                                    # resid_dropout
             L("Add", inputs=["input", "layers[15]"], name="h"),
             L("LayerNorm", normalized_shape=768),                                   # ln_2
             linear(768, 3072), L("GELU", approximate="tanh"), linear(3072, 768),    # mlp
             L("Dropout", p=0.1),
             L("Add", inputs=["h", "layers[21]"])]
    layers = [L("Embedding", num_embeddings=50257, embedding_dim=768, name="wte"),
              L("Parameter", shape=[1024, 768], name="wpe"),
              L("Add", inputs=["wte", "wpe"]),
              L("Dropout", p=0.1),
              Seq(block, repeat=12),
              L("LayerNorm", normalized_shape=768),
              linear(768, 50257, bias=False, tie="wte")]
    return model("gpt2_small", "huggingface/transformers src/transformers/models/gpt2/modeling_gpt2.py "
                 "GPT2LMHeadModel(GPT2Config()) = gpt2 (Radford et al. 2019; nanoGPT model.py has the same "
                 "layout); 124,439,808 parameters with lm_head tied to wte",
                 "GPT-2 small language model at its full 1024-token context: token embedding plus "
                 "learned positional Parameter, 12 pre-norm blocks (fused qkv projection split into "
                 "12 heads, causal scaled-dot-product attention with attention dropout 0.1, as "
                 "GPT2SdpaAttention calls it, tanh-GELU MLP), final LayerNorm, "
                 "lm_head tied to the token embedding, cross-entropy loss over the 50257-token vocabulary.",
                 tokens(1024), layers, loss="cross_entropy")


def whisper_encoder():
    block = [L("LayerNorm", normalized_shape=512, name="ln"),                      # attn_ln
             linear(512, 512, inputs=["ln"]),                                      # query
             L("Reshape", shape=[1500, 8, 64]),
             L("Permute", dims=[0, 2, 1, 3], name="q"),
             linear(512, 512, bias=False, inputs=["ln"]),                         # key (no bias)
             L("Reshape", shape=[1500, 8, 64]),
             L("Permute", dims=[0, 2, 1, 3], name="k"),
             linear(512, 512, inputs=["ln"]),                                      # value
             L("Reshape", shape=[1500, 8, 64]),
             L("Permute", dims=[0, 2, 1, 3], name="v"),
             L("ScaledDotProductAttention", inputs=["q", "k", "v"]),
             L("Permute", dims=[0, 2, 1, 3]),
             L("Flatten", start_dim=2),
             linear(512, 512),                                                     # out
             L("Add", inputs=["input", "layers[13]"], name="x"),
             L("LayerNorm", normalized_shape=512),                                 # mlp_ln
             linear(512, 2048), L("GELU"), linear(2048, 512),
             L("Add", inputs=["x", "layers[18]"])]
    layers = [L("Conv1d", in_channels=80, out_channels=512, kernel_size=3, padding=1), L("GELU"),
              L("Conv1d", in_channels=512, out_channels=512, kernel_size=3, stride=2, padding=1), L("GELU"),
              L("Permute", dims=[0, 2, 1]),
              Seq(block, repeat=6),
              L("LayerNorm", normalized_shape=512)]
    return model("whisper_base_encoder", "openai/whisper whisper/model.py AudioEncoder(n_mels=80, n_ctx=1500, "
                 "n_state=512, n_head=8, n_layer=6) = the encoder of Whisper base (Radford et al. 2022) "
                 "(commit c0d2f624c09dc18e709e37c2ad90c039a4eb72a2)",
                 "Whisper-style speech encoder: two Conv1d+GELU over an 80x3000 log-mel spectrogram "
                 "(30 s), the second with stride 2, then 6 pre-norm residual attention blocks over "
                 "1500 frames (separate q/k/v projections, key without bias, scaled-dot-product "
                 "attention as model.py uses when available, GELU MLP), final LayerNorm. Left out: "
                 "the sinusoidal positional embedding is a buffer, not a parameter; its add "
                 "(one 1500x512 tensor per sample) has no kind in the format.",
                 [80, 3000], layers)


def lstm_lm():
    layers = [L("Embedding", num_embeddings=33278, embedding_dim=650, name="encoder"),
              L("Dropout", p=0.5),
              L("LSTM", input_size=650, hidden_size=650, num_layers=2, dropout=0.5),
              L("Dropout", p=0.5),
              linear(650, 33278, tie="encoder")]
    return model("lstm_lm", "pytorch/examples word_language_model/model.py RNNModel('LSTM', ntoken=33278, "
                 "ninp=650, nhid=650, nlayers=2, dropout=0.5, tie_weights=True) -- the README's medium "
                 "tied LSTM on Wikitext-2 (33278-word vocabulary) "
                 "(commit 77f55b912142e11fcfdf5b530231fb9c52f181e8)",
                 "Word-level LSTM language model (Zaremba et al. 2014 medium size, tied weights as "
                 "Press & Wolf 2016), 35-step BPTT windows (main.py --bptt 35). The example's "
                 "log_softmax + NLLLoss is the format's cross_entropy loss.",
                 tokens(35), layers, loss="cross_entropy")


def gru_encoder():
    layers = [L("Embedding", num_embeddings=30000, embedding_dim=620),
              L("GRU", input_size=620, hidden_size=1000, bidirectional=True)]
    return model("gru_seq2seq_encoder", "Bahdanau, Cho & Bengio 2015, Neural Machine Translation by Jointly "
                 "Learning to Align and Translate (arXiv:1409.0473), appendix A.2: RNNsearch encoder "
                 "(30000-word vocabulary, 620-dim embeddings, bidirectional GRU with 1000 hidden units), "
                 "as torch.nn.Embedding + torch.nn.GRU",
                 "GRU seq2seq encoder (RNNsearch-50): token embedding and a bidirectional GRU whose "
                 "concatenated forward/backward states (2000 per word) are the annotations the "
                 "attention decoder reads. Sentences of 50 tokens. torch's GRU has two bias vectors "
                 "per gate where the paper has one.", tokens(50), layers)


def diffusion_block():
    layers = [L("GroupNorm", inputs=["x"], num_groups=32, num_channels=320, eps=1e-6),   # norm1
              L("SiLU"),
              conv(320, 320, 3, 1, 1, bias=True, name="h1"),                              # conv1
              L("SiLU", inputs=["temb"]),
              linear(1280, 320),                                                          # time_emb_proj
              L("Reshape", shape=[320, 1, 1], name="t"),                                  # [:, :, None, None]
              L("Add", inputs=["h1", "t"]),
              L("GroupNorm", num_groups=32, num_channels=320, eps=1e-6),                  # norm2
              L("SiLU"),
              L("Dropout", p=0.0),
              conv(320, 320, 3, 1, 1, bias=True),                                         # conv2
              L("Add", inputs=["x", "layers[10]"], name="res"),                           # input + hidden
              # Attention (AttnProcessor2_0): view + transpose to tokens, group norm over channels
              L("Reshape", shape=[320, 1024]),
              L("Transpose", dim0=1, dim1=2),
              L("Transpose", dim0=1, dim1=2),
              L("GroupNorm", num_groups=32, num_channels=320, eps=1e-6),
              L("Transpose", dim0=1, dim1=2, name="hs"),
              linear(320, 320, inputs=["hs"]), L("Reshape", shape=[1024, 8, 40]), L("Transpose", dim0=1, dim1=2, name="q"),
              linear(320, 320, inputs=["hs"]), L("Reshape", shape=[1024, 8, 40]), L("Transpose", dim0=1, dim1=2, name="k"),
              linear(320, 320, inputs=["hs"]), L("Reshape", shape=[1024, 8, 40]), L("Transpose", dim0=1, dim1=2, name="v"),
              L("ScaledDotProductAttention", inputs=["q", "k", "v"]),
              L("Transpose", dim0=1, dim1=2),
              L("Reshape", shape=[1024, 320]),
              linear(320, 320),                                                           # to_out[0]
              L("Dropout", p=0.0),                                                        # to_out[1]
              L("Transpose", dim0=1, dim1=2),
              L("Reshape", shape=[320, 32, 32]),
              L("Add", inputs=["layers[32]", "res"])]
    inputs = OrderedDict(x=[320, 32, 32], temb=[1280])
    return model("diffusion_unet_block", "huggingface/diffusers src/diffusers/models/resnet.py ResnetBlock2D("
                 "in_channels=320, temb_channels=1280, eps=1e-6) followed by src/diffusers/models/"
                 "attention_processor.py Attention(320, heads=8, dim_head=40, norm_num_groups=32, eps=1e-6, "
                 "residual_connection=True, bias=True) with AttnProcessor2_0 -- one layer of "
                 "unets/unet_2d_blocks.py AttnDownBlock2D (commit 58eb52c0803ea9af3abec60841c2a093bdf1f951)",
                 "One diffusion-UNet block at Stable-Diffusion width (320 channels, 1280-dim time "
                 "embedding) on a 32x32 latent: a ResNet block (GroupNorm-SiLU-conv, time embedding "
                 "added per channel, GroupNorm-SiLU-dropout-conv, residual) and a spatial "
                 "self-attention block (group norm, 8 heads of 40 over 1024 positions, output "
                 "projection, residual). Left out: the two `/ output_scale_factor` divisions "
                 "(by 1.0, each one copy of the 320x32x32 map) -- the format has no scalar ops.",
                 None, layers, inputs=inputs)


# --------------------------------------------------------------------------
# Small models for quick use
# --------------------------------------------------------------------------

def mlp():
    layers = [L("Flatten"), linear(784, 512), L("ReLU"), L("Dropout", p=0.2), linear(512, 512), L("ReLU"),
              L("Dropout", p=0.2), linear(512, 10)]
    return model("mlp", "torch.nn.Sequential(Flatten(), Linear(784, 512), ReLU(), Dropout(0.2), Linear(512, 512), "
                 "ReLU(), Dropout(0.2), Linear(512, 10))",
                 "A small MNIST classifier: two hidden layers of 512 with ReLU and dropout, 1x28x28 input.",
                 [1, 28, 28], layers)


def tiny_resnet():
    layers = [conv(3, 16, 3, 1, 1),
              bn(16),
              L("ReLU", inplace=True, name="stem"),
              Seq([conv(16, 16, 3, 1, 1), bn(16), L("Add", inputs=["layers[1]", "input"], inplace=True),
                   L("ReLU", inplace=True)], repeat=2),
              L("AdaptiveAvgPool2d", output_size=1),
              L("Flatten"),
              linear(16, 10)]
    d = model("tiny-resnet", "SPEC.md section 1 (the format's own example)",
              "The example model of the format specification: a 3x3 conv stem and two residual "
              "conv-BN blocks on 32x32 RGB, global average pooling, 10 classes.", [3, 32, 32], layers)
    return d


def transformer_encoder():
    layers = [L("TransformerEncoderLayer", d_model=512, nhead=8, repeat=4)]
    return model("transformer_encoder", "torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(d_model=512, "
                 "nhead=8, batch_first=True), num_layers=4)",
                 "Four post-norm encoder layers of the original Transformer base size (Vaswani et al. "
                 "2017: d_model 512, 8 heads, FFN 2048, ReLU, dropout 0.1) over 128 tokens of "
                 "512-dim embeddings.", [128, 512], layers)


ZOO = OrderedDict([
    ("resnet18.json", lambda: resnet("resnet18", 18, (2, 2, 2, 2), False)),
    ("resnet50.json", lambda: resnet("resnet50", 50, (3, 4, 6, 3), True)),
    ("resnet152.json", lambda: resnet("resnet152", 152, (3, 8, 36, 3), True)),
    ("vgg16.json", vgg16),
    ("mobilenet_v2.json", mobilenet_v2),
    ("efficientnet_b0.json", efficientnet_b0),
    ("densenet121.json", densenet121),
    ("vit_b_16.json", vit_b_16),
    ("unet.json", unet),
    ("bert_base.json", bert_base),
    ("gpt2_small.json", gpt2_small),
    ("whisper_base_encoder.json", whisper_encoder),
    ("lstm_lm.json", lstm_lm),
    ("gru_seq2seq_encoder.json", gru_encoder),
    ("diffusion_unet_block.json", diffusion_block),
    ("mlp.json", mlp),
    ("tiny_resnet.json", tiny_resnet),
    ("transformer_encoder.json", transformer_encoder),
])


def main():
    ap = argparse.ArgumentParser(description="write the model zoo")
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when a file differs")
    ap.add_argument("files", nargs="*", help="only these (e.g. resnet50.json)")
    a = ap.parse_args()
    bad = 0
    for fname, build in ZOO.items():
        if a.files and fname not in a.files:
            continue
        text = dumps(build())
        path = os.path.join(HERE, fname)
        old = open(path).read() if os.path.exists(path) else None
        if a.check:
            if old != text:
                print("differs: %s" % fname)
                bad += 1
        elif old != text:
            with open(path, "w") as f:
                f.write(text)
            print("wrote %s" % fname)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
