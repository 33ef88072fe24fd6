"""reference_models -- the reference implementation behind every examples/*.json, in torch.

REFERENCES maps a zoo file to (builder, inputs, how).  builder() returns the reference
torch.nn.Module; inputs is a list of (shape, dtype) per forward argument (per sample);
`how` says where the parameter count comes from.

torchvision models are torchvision's own (Debian's python3-torchvision 0.14).  The
others are re-implementations, module for module, of the code named in each zoo file's
"source" (the original repositories are not dependencies of this project); where a
count is published, `how` quotes it and check_zoo.py confirms the re-implementation
reaches it.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

F32, I64 = torch.float32, torch.int64


def _tv(name, **kw):
    def build():
        import torchvision
        return getattr(torchvision.models, name)(**kw)
    return build


# --------------------------------------------------------------------------
# U-Net: milesial/Pytorch-UNet (unet/unet_parts.py, unet/unet_model.py), bilinear=False
# --------------------------------------------------------------------------

def _double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True))


class UNet(nn.Module):
    def __init__(self, n_channels=3, n_classes=2):
        super().__init__()
        self.inc = _double_conv(n_channels, 64)
        self.downs = nn.ModuleList(nn.Sequential(nn.MaxPool2d(2), _double_conv(c, 2 * c)) for c in (64, 128, 256, 512))
        self.ups = nn.ModuleList(nn.ConvTranspose2d(c, c // 2, 2, stride=2) for c in (1024, 512, 256, 128))
        self.up_convs = nn.ModuleList(_double_conv(c, c // 2) for c in (1024, 512, 256, 128))
        self.outc = nn.Conv2d(64, n_classes, 1)

    def forward(self, x):
        xs = [self.inc(x)]
        for d in self.downs:
            xs.append(d(xs[-1]))
        x = xs.pop()
        for up, conv in zip(self.ups, self.up_convs):
            x = conv(torch.cat([xs.pop(), up(x)], dim=1))
        return self.outc(x)


# --------------------------------------------------------------------------
# BERT-base: transformers/models/bert/modeling_bert.py BertModel (with pooler), BertConfig() defaults
# --------------------------------------------------------------------------

class _BertLayer(nn.Module):
    def __init__(self, h=768, heads=12, inter=3072, eps=1e-12, p=0.1):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out, self.attn_ln = nn.Linear(h, h), nn.LayerNorm(h, eps=eps)
        self.intermediate, self.output = nn.Linear(h, inter), nn.Linear(inter, h)
        self.out_ln = nn.LayerNorm(h, eps=eps)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        n, L, h = x.shape

        def split(t):
            return t.view(n, L, self.heads, -1).transpose(1, 2)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        a = self.drop(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(h // self.heads), -1)) @ v
        a = a.transpose(1, 2).reshape(n, L, h)
        x = self.attn_ln(self.drop(self.attn_out(a)) + x)
        return self.out_ln(self.drop(self.output(F.gelu(self.intermediate(x)))) + x)


class BertModel(nn.Module):
    def __init__(self, vocab=30522, h=768, layers=12, max_pos=512, type_vocab=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, h, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, h)
        self.token_type_embeddings = nn.Embedding(type_vocab, h)
        self.ln = nn.LayerNorm(h, eps=1e-12)
        self.drop = nn.Dropout(0.1)
        self.layers = nn.ModuleList(_BertLayer(h) for _ in range(layers))
        self.pooler = nn.Linear(h, h)

    def forward(self, input_ids, token_type_ids):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = self.drop(self.ln(x + self.position_embeddings(pos)))
        for l in self.layers:
            x = l(x)
        return torch.tanh(self.pooler(x[:, 0]))


# --------------------------------------------------------------------------
# GPT-2 small: transformers/models/gpt2/modeling_gpt2.py GPT2LMHeadModel, GPT2Config() defaults
# (Conv1D layers are Linear layers with transposed weights: same counts)
# --------------------------------------------------------------------------

class _GPT2Block(nn.Module):
    def __init__(self, h=768, heads=12):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.c_fc, self.mlp_proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        n, L, h = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
        q, k, v = (t.view(n, L, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(h // self.heads)
        s = s.masked_fill(torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        a = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(n, L, h)
        x = x + self.drop(self.c_proj(a))
        return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, vocab=50257, ctx=1024, h=768, layers=12):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, h), nn.Embedding(ctx, h)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList(_GPT2Block(h) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        x = self.drop(self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device)))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


# --------------------------------------------------------------------------
# Whisper base encoder: openai/whisper whisper/model.py AudioEncoder(80, 1500, 512, 8, 6)
# --------------------------------------------------------------------------

class _WhisperBlock(nn.Module):
    def __init__(self, n, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key = nn.Linear(n, n), nn.Linear(n, n, bias=False)
        self.value, self.out = nn.Linear(n, n), nn.Linear(n, n)
        self.attn_ln, self.mlp_ln = nn.LayerNorm(n), nn.LayerNorm(n)
        self.mlp = nn.Sequential(nn.Linear(n, 4 * n), nn.GELU(), nn.Linear(4 * n, n))

    def forward(self, x):
        b, L, n = x.shape
        y = self.attn_ln(x)
        q, k, v = (t.view(b, L, self.heads, -1).permute(0, 2, 1, 3)
                   for t in (self.query(y), self.key(y), self.value(y)))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(n // self.heads), -1) @ v
        x = x + self.out(a.permute(0, 2, 1, 3).flatten(start_dim=2))
        return x + self.mlp(self.mlp_ln(x))


class AudioEncoder(nn.Module):
    def __init__(self, n_mels=80, n_ctx=1500, n_state=512, n_head=8, n_layer=6):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, n_state, 3, padding=1)
        self.conv2 = nn.Conv1d(n_state, n_state, 3, stride=2, padding=1)
        self.register_buffer("positional_embedding", torch.zeros(n_ctx, n_state))
        self.blocks = nn.ModuleList(_WhisperBlock(n_state, n_head) for _ in range(n_layer))
        self.ln_post = nn.LayerNorm(n_state)

    def forward(self, x):
        x = F.gelu(self.conv2(F.gelu(self.conv1(x)))).permute(0, 2, 1)
        x = x + self.positional_embedding
        for b in self.blocks:
            x = b(x)
        return self.ln_post(x)


# --------------------------------------------------------------------------
# LSTM LM: pytorch/examples word_language_model/model.py RNNModel('LSTM', 33278, 650, 650, 2, 0.5, tied)
# --------------------------------------------------------------------------

class RNNModel(nn.Module):
    def __init__(self, ntoken=33278, ninp=650, nhid=650, nlayers=2, dropout=0.5):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight

    def forward(self, ids):
        out, _ = self.rnn(self.drop(self.encoder(ids)))
        return self.decoder(self.drop(out))


class GRUEncoder(nn.Module):
    """RNNsearch encoder (Bahdanau et al. 2015, appendix A.2)."""

    def __init__(self, vocab=30000, emb=620, hidden=1000):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.gru = nn.GRU(emb, hidden, bidirectional=True, batch_first=True)

    def forward(self, ids):
        return self.gru(self.embedding(ids))[0]


# --------------------------------------------------------------------------
# diffusers ResnetBlock2D(320, temb 1280) + Attention(320, heads=8, dim_head=40, groups 32, residual)
# --------------------------------------------------------------------------

class DiffusionBlock(nn.Module):
    def __init__(self, c=320, temb=1280, groups=32, heads=8, eps=1e-6):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, c, eps=eps)
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb, c)
        self.norm2 = nn.GroupNorm(groups, c, eps=eps)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)
        self.heads = heads
        self.group_norm = nn.GroupNorm(groups, c, eps=eps)
        self.to_q, self.to_k, self.to_v = nn.Linear(c, c), nn.Linear(c, c), nn.Linear(c, c)
        self.to_out = nn.Sequential(nn.Linear(c, c), nn.Dropout(0.0))

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = x + self.conv2(F.silu(self.norm2(h)))
        b, c, H, W = h.shape
        t = self.group_norm(h.view(b, c, H * W)).transpose(1, 2)
        q, k, v = (m(t).view(b, -1, self.heads, c // self.heads).transpose(1, 2) for m in (self.to_q, self.to_k, self.to_v))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(c // self.heads), -1) @ v
        a = self.to_out(a.transpose(1, 2).reshape(b, -1, c))
        return a.transpose(-1, -2).reshape(b, c, H, W) + h


# --------------------------------------------------------------------------
# Small models
# --------------------------------------------------------------------------

def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 512),
                         nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 10))


class TinyResNet(nn.Module):
    """docs/contract.md section 2's example model."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(True))
        self.blocks = nn.ModuleList(nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16))
                                    for _ in range(2))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = F.relu(b(x) + x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def _transformer_encoder():
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, batch_first=True), num_layers=4,
                                 enable_nested_tensor=False)


TV = "sum(p.numel()) of torchvision.models.%s() (Debian python3-torchvision 0.14.1)"
REIMPL = "sum(p.numel()) of tests/roundtrip/reference_models.py %s, a module-for-module re-implementation of "

REFERENCES = {
    "resnet18.json": (_tv("resnet18"), [([3, 224, 224], F32)], TV % "resnet18"),
    "resnet50.json": (_tv("resnet50"), [([3, 224, 224], F32)], TV % "resnet50"),
    "resnet152.json": (_tv("resnet152"), [([3, 224, 224], F32)], TV % "resnet152"),
    "vgg16.json": (_tv("vgg16"), [([3, 224, 224], F32)], TV % "vgg16"),
    "mobilenet_v2.json": (_tv("mobilenet_v2"), [([3, 224, 224], F32)], TV % "mobilenet_v2"),
    "efficientnet_b0.json": (_tv("efficientnet_b0"), [([3, 224, 224], F32)], TV % "efficientnet_b0"),
    "densenet121.json": (_tv("densenet121"), [([3, 224, 224], F32)], TV % "densenet121"),
    "vit_b_16.json": (_tv("vit_b_16"), [([3, 224, 224], F32)], TV % "vit_b_16"),
    "unet.json": (UNet, [([3, 512, 512], F32)],
                  REIMPL % "UNet()" + "milesial/Pytorch-UNet UNet(3, 2, bilinear=False) (no published count)"),
    "bert_base.json": (BertModel, [([512], I64), ([512], I64)],
                       REIMPL % "BertModel()" + "transformers BertModel(BertConfig()); equals the published "
                       "bert-base-uncased count 109,482,240 (paper: 110M)"),
    "gpt2_small.json": (GPT2LMHeadModel, [([1024], I64)],
                        REIMPL % "GPT2LMHeadModel()" + "transformers GPT2LMHeadModel(GPT2Config()), lm_head "
                        "tied; equals the published gpt2 count 124,439,808 (paper: 117M, nanoGPT: 124M)"),
    "whisper_base_encoder.json": (AudioEncoder, [([80, 3000], F32)],
                                  REIMPL % "AudioEncoder()" + "openai/whisper AudioEncoder for the base model "
                                  "(the paper gives 74M for encoder + decoder)"),
    "lstm_lm.json": (RNNModel, [([35], I64)],
                     REIMPL % "RNNModel()" + "pytorch/examples word_language_model RNNModel('LSTM', 33278, "
                     "650, 650, 2, 0.5, tie_weights=True)"),
    "gru_seq2seq_encoder.json": (GRUEncoder, [([50], I64)],
                                 REIMPL % "GRUEncoder()" + "the RNNsearch encoder of Bahdanau et al. 2015 "
                                 "(appendix A.2) with torch.nn.Embedding and torch.nn.GRU"),
    "diffusion_unet_block.json": (DiffusionBlock, [([320, 32, 32], F32), ([1280], F32)],
                                  REIMPL % "DiffusionBlock()" + "diffusers ResnetBlock2D(320, temb 1280) + "
                                  "Attention(320, heads=8, dim_head=40, norm_num_groups=32, bias=True)"),
    "mlp.json": (_mlp, [([1, 28, 28], F32)], "sum(p.numel()) of the torch.nn.Sequential in the file's source"),
    "tiny_resnet.json": (TinyResNet, [([3, 32, 32], F32)],
                         "sum(p.numel()) of tests/roundtrip/reference_models.py TinyResNet() (SPEC.md section 1's "
                         "example in torch)"),
    "transformer_encoder.json": (_transformer_encoder, [([128, 512], F32)],
                                 "sum(p.numel()) of torch.nn.TransformerEncoder(TransformerEncoderLayer(512, 8), 4) "
                                 "(torch 1.13)"),
}


def count(module):
    return sum(p.numel() for p in module.parameters())


def sample_inputs(inputs, batch, device="cpu", vocab=2):
    out = []
    for shape, dt in inputs:
        if dt == I64:
            out.append(torch.randint(0, vocab, (batch, *shape), device=device))
        else:
            out.append(torch.randn((batch, *shape), device=device, dtype=dt))
    return out
