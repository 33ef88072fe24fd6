"""DeepSeek-V3's multi-head latent attention (MLA) and the exact parameter counts of the
deepseek_v3 / kimi_k2 checkpoints, written from the transformers source (issue 31).

Source: huggingface/transformers @ 00b676f8f0489b88652a31d70751cc540dd06305,
src/transformers/models/deepseek_v3/modeling_deepseek_v3.py:
  DeepseekV3RMSNorm          weight [hidden], x.to(float32), pow(2).mean, rsqrt, weight * x.to(dtype)
  DeepseekV3Attention        q_proj [H*qk, hidden] when q_lora_rank is None, else q_a_proj [q_lora_rank,
                             hidden] (bias=attention_bias), q_a_layernorm [q_lora_rank], q_b_proj
                             [H*qk, q_lora_rank]; kv_a_proj_with_mqa [kv_lora_rank + rope, hidden]
                             (bias=attention_bias), kv_a_layernorm [kv_lora_rank], kv_b_proj
                             [H*(nope + v), kv_lora_rank], o_proj [hidden, H*v] (bias=attention_bias);
                             forward as below (MLA.forward)
  DeepseekV3MLP              gate/up [I, hidden], down [hidden, I]
  DeepseekV3TopkRouter       weight [E, hidden]; e_score_correction_bias a buffer [E] (in the checkpoint,
                             not in named_parameters())
  DeepseekV3MoE              experts (E MLPs of moe_intermediate_size), gate, shared_experts (an MLP of
                             moe_intermediate_size * n_shared_experts)
  DeepseekV3DecoderLayer     input_layernorm, self_attn, post_attention_layernorm, mlp: DeepseekV3MLP below
                             first_k_dense_replace, DeepseekV3MoE from it on
  DeepseekV3ForCausalLM      embed_tokens, layers, norm, lm_head (untied)
configuration_deepseek_v3.py @ 001f85b3: head_dim = qk_rope_head_dim, qk_head_dim = nope + rope,
rope_interleave defaults to True.
The checkpoint's MTP layer (num_nextn_predict_layers, model.layers.61: enorm, hnorm, eh_proj
[hidden, 2*hidden], a MoE decoder layer, shared_head.norm, shared_head.head and its own
embed_tokens, as DeepSeek-V3's model.safetensors.index.json lists it) is counted apart:
DeepseekV3Model._keys_to_ignore_on_load_unexpected = [r"model\\.layers\\.61.*"].

python3 mla_replica.py prints the counts; `--check` asserts the figures tests/test_hf.c uses.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def keys(cfg):
    g = lambda k, d: cfg[k] if cfg.get(k) is not None else d  # noqa: E731  (DeepseekV3Config defaults)
    return dict(V=cfg["vocab_size"], H=cfg["hidden_size"], N=cfg["num_hidden_layers"], NH=cfg["num_attention_heads"],
                I=cfg["intermediate_size"], qlr=cfg.get("q_lora_rank", 1536), kvl=g("kv_lora_rank", 512),
                R=g("qk_rope_head_dim", 64), nope=g("qk_nope_head_dim", 128), vd=g("v_head_dim", 128),
                E=g("n_routed_experts", 256), shared=g("n_shared_experts", 1), moeI=g("moe_intermediate_size", 2048),
                fkd=g("first_k_dense_replace", 3), bias=bool(g("attention_bias", False)),
                tie=bool(g("tie_word_embeddings", False)), mtp=g("num_nextn_predict_layers", 0))


def counts(cfg):
    """(named_parameters() of DeepseekV3ForCausalLM, e_score_correction_bias values, one MTP layer)."""
    k = keys(cfg)
    H, NH, qk = k["H"], k["NH"], k["nope"] + k["R"]
    b = H if k["bias"] else 0  # attention_bias: q_a_proj / kv_a_proj_with_mqa / o_proj biases
    if k["qlr"]:
        attn = H * k["qlr"] + (k["qlr"] if k["bias"] else 0) + k["qlr"] + k["qlr"] * NH * qk
    else:
        attn = H * NH * qk
    attn += H * (k["kvl"] + k["R"]) + ((k["kvl"] + k["R"]) if k["bias"] else 0) + k["kvl"]
    attn += k["kvl"] * NH * (k["nope"] + k["vd"]) + NH * k["vd"] * H + b
    norms = 2 * H
    dense = 3 * H * k["I"]
    moe = k["E"] * 3 * H * k["moeI"] + k["E"] * H + 3 * H * k["moeI"] * k["shared"]
    n_moe = max(k["N"] - k["fkd"], 0)
    layers = min(k["fkd"], k["N"]) * (attn + norms + dense) + n_moe * (attn + norms + moe)
    main = k["V"] * H + layers + H + (0 if k["tie"] else k["V"] * H)
    mtp = attn + norms + moe + k["E"] + 2 * H + 2 * H * H + H + 2 * k["V"] * H
    return main, n_moe * k["E"], mtp


def mla_module(cfg):
    """DeepseekV3Attention as torch modules (for a meta-device count or a measurement)."""
    import torch.nn as nn
    import torch
    import torch.nn.functional as F
    k = keys(cfg)

    class RMSNorm(nn.Module):
        def __init__(self, n, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):
            dt = x.dtype
            x = x.to(torch.float32)
            v = x.pow(2).mean(-1, keepdim=True)
            x = x * torch.rsqrt(v + self.eps)
            return self.weight * x.to(dt)

    class MLA(nn.Module):
        def __init__(self):
            super().__init__()
            H, NH = k["H"], k["NH"]
            self.qk, self.nope, self.R, self.vd, self.kvl = k["nope"] + k["R"], k["nope"], k["R"], k["vd"], k["kvl"]
            if not k["qlr"]:
                self.q_proj = nn.Linear(H, NH * self.qk, bias=False)
            else:
                self.q_a_proj = nn.Linear(H, k["qlr"], bias=k["bias"])
                self.q_a_layernorm = RMSNorm(k["qlr"])
                self.q_b_proj = nn.Linear(k["qlr"], NH * self.qk, bias=False)
            self.kv_a_proj_with_mqa = nn.Linear(H, self.kvl + self.R, bias=k["bias"])
            self.kv_a_layernorm = RMSNorm(self.kvl)
            self.kv_b_proj = nn.Linear(self.kvl, NH * (self.nope + self.vd), bias=False)
            self.o_proj = nn.Linear(NH * self.vd, H, bias=k["bias"])
            self.interleave = bool(cfg.get("rope_interleave", True))

        def forward(self, x, cos, sin, attention):
            """DeepseekV3Attention.forward, statement by statement; `attention` is the
            sdpa_attention_forward the harness supplies (query, key, value) -> [B, L, H, v]."""
            B, L = x.shape[:-1]
            q = self.q_proj(x) if not hasattr(self, "q_a_proj") else self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
            q = q.view(B, L, -1, self.qk).transpose(1, 2)
            q_pass, q_rot = torch.split(q, [self.nope, self.R], dim=-1)
            ckv = self.kv_a_proj_with_mqa(x)
            k_pass, k_rot = torch.split(ckv, [self.kvl, self.R], dim=-1)
            k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(B, L, -1, self.nope + self.vd).transpose(1, 2)
            k_pass, value = torch.split(k_pass, [self.nope, self.vd], dim=-1)
            k_rot = k_rot.view(B, 1, L, self.R)
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)

            def rot(t):
                if self.interleave:  # apply_rotary_pos_emb_interleave
                    b, h, s, d = t.shape
                    t = t.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
                half = t.shape[-1] // 2
                return (t * cos) + (torch.cat((-t[..., half:], t[..., :half]), dim=-1) * sin)

            q_rot, k_rot = rot(q_rot), rot(k_rot)
            k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
            query = torch.cat((q_pass, q_rot), dim=-1)
            key = torch.cat((k_pass, k_rot), dim=-1)
            out = attention(query, key, value)
            return self.o_proj(out.reshape(B, L, -1).contiguous())

    return MLA()


CASES = [  # (config under tests/data/hf, named_parameters() count test_hf.c asserts)
    ("deepseek-v3.json", 671026404352),
    ("kimi-k2.json", 1026408209408),
    ("deepseek-v2-lite-shape.json", 15706484224),
]


def main(argv):
    ok = True
    for name, want in CASES:
        with open(os.path.join(ROOT, "tests", "data", "hf", name)) as f:
            cfg = json.load(f)
        main_n, bias, mtp = counts(cfg)
        nextn = cfg.get("num_nextn_predict_layers", 0) or 0
        print("%-28s named_parameters %d, + e_score_correction_bias %d = %d stored; MTP %d x %d; with MTP %d"
              % (name, main_n, bias, main_n + bias, nextn, mtp, main_n + bias + nextn * mtp))
        ok &= main_n == want
    if "--meta" in argv:  # the attention's count from the modules themselves (torch's meta device)
        import torch
        with open(os.path.join(ROOT, "tests", "data", "hf", "deepseek-v3.json")) as f:
            cfg = json.load(f)
        k = keys(cfg)
        with torch.device("meta") if hasattr(torch, "device") and hasattr(torch.device, "__enter__") else _Meta():
            m = mla_module(cfg)
        n = sum(p.numel() for p in m.parameters())
        qk = k["nope"] + k["R"]
        want = (k["H"] * k["qlr"] + k["qlr"] + k["qlr"] * k["NH"] * qk + k["H"] * (k["kvl"] + k["R"]) + k["kvl"]
                + k["kvl"] * k["NH"] * (k["nope"] + k["vd"]) + k["NH"] * k["vd"] * k["H"])
        print("DeepseekV3Attention modules: %d parameters (the count's attention: %d)" % (n, want))
        ok &= n == want
    if "--check" in argv and not ok:
        sys.exit("mismatch")


class _Meta:
    """torch 1.13: no `with torch.device(...)`; build on the CPU instead (small enough for one layer)."""

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


if __name__ == "__main__":
    main(sys.argv[1:])
