"""Hand-written modules, written the way people write them (not to suit the exporter):
the coverage set of docs/models.md and the exporter's tests.  Each entry of MODELS is
(name, factory, input spec for torch2vramcalc.parse_input)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- nanoGPT (karpathy/nanoGPT model.py, the pre-flash path of CausalSelfAttention) ----

class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout=0.1):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd = n_head, n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd, dropout=0.1):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = NewGELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class NanoGPT(nn.Module):
    def __init__(self, vocab_size=1024, block_size=64, n_layer=2, n_head=4, n_embd=64):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd), drop=nn.Dropout(0.1),
            h=nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)]), ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        return self.lm_head(x)


# ---- LLaMA-style: RMSNorm by hand, rotary embeddings, SwiGLU, GQA with repeat_interleave ----

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, max_len):
        super().__init__()
        self.n_heads, self.n_kv, self.hd = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        t = torch.arange(max_len).float()
        freqs = torch.outer(t, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        cos, sin = self.cos[:T], self.sin[:T]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        v = v.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        mask = torch.full((T, T), float("-inf"), device=x.device).triu(1)
        scores = F.softmax(scores + mask, dim=-1)
        out = torch.matmul(scores, v).transpose(1, 2).reshape(B, T, -1)
        return self.wo(out)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TinyLlama(nn.Module):
    def __init__(self, vocab=512, dim=64, n_layers=2, n_heads=4, n_kv=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            blk = nn.Module()
            blk.attn_norm, blk.attn = RMSNorm(dim), LlamaAttention(dim, n_heads, n_kv, max_len)
            blk.ffn_norm, blk.ffn = RMSNorm(dim), SwiGLU(dim, 172)
            self.layers.append(blk)
        self.norm = RMSNorm(dim)
        self.out = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        h = self.tok(ids)
        for blk in self.layers:
            h = h + blk.attn(blk.attn_norm(h))
            h = h + blk.ffn(blk.ffn_norm(h))
        return self.out(self.norm(h))


# ---- U-Net (milesial/Pytorch-UNet unet_parts.py: Up pads with F.pad) ----

class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.double_conv = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.double_conv(x)


class Up(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNetSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.inc = DoubleConv(3, 16)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(16, 32))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(32, 32))
        self.up1 = Up(64, 16)
        self.up2 = Up(32, 16)
        self.outc = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


# ---- other idioms ----

class EinsumAttention(nn.Module):
    """Attention written with einsum (as in lucidrains' repositories), heads by reshape."""

    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = [t.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3) for t in qkv]
        dots = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
        attn = dots.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        out = out.permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.to_out(out)


class StackHeads(nn.Module):
    """Several heads whose outputs are stacked and averaged; torch.stack and unbind."""

    def __init__(self, dim=32, n=3):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(dim, dim) for _ in range(n)])

    def forward(self, x):
        ys = torch.stack([h(x) for h in self.heads], dim=1)
        a, b, c = ys.unbind(dim=1)
        return (a + b + c) / 3 + ys.mean(dim=1)


class ScaledResidual(nn.Module):
    """Residual scaling, sub, division, clamp and cumsum: the small arithmetic people write."""

    def __init__(self, dim=32):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc1(x)
        h = 0.5 * h + x
        h = h - h.mean(dim=-1, keepdim=True)
        h = h / (h.std(dim=-1, keepdim=True) + 1e-5)
        h = torch.clamp(h, -3, 3)
        h = torch.cumsum(h, dim=1) / 2.0
        return self.fc2(F.relu(h)) * 2


class GatherPool(nn.Module):
    """Token selection with topk, gather and expand, where() and a flatten head."""

    def __init__(self, dim=32, k=4):
        super().__init__()
        self.k = k
        self.score = nn.Linear(dim, 1)
        self.head = nn.Linear(dim * k, 10)

    def forward(self, x):
        s = self.score(x).squeeze(-1)
        idx = s.topk(self.k, dim=1).indices
        sel = torch.gather(x, 1, idx.unsqueeze(-1).expand(-1, -1, x.size(-1)))
        sel = torch.where(sel > 0, sel, torch.zeros_like(sel))
        return self.head(sel.flatten(1))


class TopKGather(nn.Module):
    """GatherPool without the where(): the TopK and Gather kinds alone (docs/models.md's
    measured round trips; not in MODELS)."""

    def __init__(self, dim=32, k=4):
        super().__init__()
        self.k = k
        self.score = nn.Linear(dim, 1)
        self.head = nn.Linear(dim * k, 10)

    def forward(self, x):
        s = self.score(x).squeeze(-1)
        v, idx = s.topk(self.k, dim=1)
        sel = torch.gather(x, 1, idx.unsqueeze(-1).expand(-1, -1, x.size(-1)))
        return self.head(sel.flatten(1))


class TopKValues(nn.Module):
    """torch.topk(...).values into a head: TopK with its kept indices (docs/models.md's
    measured round trips; not in MODELS)."""

    def __init__(self, dim=32, k=4):
        super().__init__()
        self.k = k
        self.fc = nn.Linear(dim, dim)
        self.head = nn.Linear(dim * k, 10)

    def forward(self, x):
        h = self.fc(x).transpose(1, 2)
        return self.head(h.topk(self.k, dim=-1).values.flatten(1))


class SpectralPool(nn.Module):
    """Spectral features as people write them: torch.fft.rfft over the sequence, the
    magnitude, a Linear head. rfft has no vramcalc kind (a complex result): the
    --allow-unknown example of docs/models.md."""

    def __init__(self, dim=32, n=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear((n // 2 + 1) * dim, 10)

    def forward(self, x):
        h = self.proj(x)
        f = torch.fft.rfft(h, dim=1)
        return self.head(f.abs().flatten(1))


class ConvNeXtBlock(nn.Module):
    """ConvNeXt's block as its repository writes it: permute, LayerNorm, gamma * x."""

    def __init__(self, dim=32):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))

    def forward(self, x):
        inp = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
        x = self.gamma * x
        return inp + x.permute(0, 3, 1, 2)


class TupleOut(nn.Module):
    """Returns (logits, features) and a dict-returning variant's first value."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        f = self.body(x)
        return {"logits": self.fc(f), "features": f}


class PadConv1d(nn.Module):
    """Causal Conv1d by left padding (WaveNet / TCN style), with F.pad and a gated unit."""

    def __init__(self, ch=16, k=3):
        super().__init__()
        self.k = k
        self.conv = nn.Conv1d(ch, 2 * ch, k)
        self.out = nn.Conv1d(ch, ch, 1)

    def forward(self, x):
        h = self.conv(F.pad(x, (self.k - 1, 0)))
        a, b = torch.split(h, h.shape[1] // 2, dim=1)
        return x + self.out(torch.tanh(a) * torch.sigmoid(b))


MODELS = [
    ("nanogpt", NanoGPT, "64:int64"),
    ("tiny_llama", TinyLlama, "64:int64"),
    ("unet_pad", UNetSmall, "3,60,60"),
    ("einsum_attention", EinsumAttention, "16,64"),
    ("stack_heads", StackHeads, "8,32"),
    ("scaled_residual", ScaledResidual, "8,32"),
    ("gather_pool", GatherPool, "12,32"),
    ("convnext_block", ConvNeXtBlock, "32,14,14"),
    ("dict_output", TupleOut, "3,16,16"),
    ("tcn_pad", PadConv1d, "16,50"),
    ("spectral_pool", SpectralPool, "16,32"),
]
