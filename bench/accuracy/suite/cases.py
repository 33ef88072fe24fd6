"""cases.py -- the accuracy suite: which configurations are measured and checked.

Each case is (model file under models/, batch, optimizer, mode, precision).  The
architecture label and the per-model notes are in ARCH.  `cases()` returns the list
in a fixed order, with the held-out flag set by the rule below.

HELD-OUT RULE (fixed when the list was written, before any estimate of these cases
was looked at): within each model's group of cases, in the order listed here, the
LAST case is held out.  Held-out cases are measured like the others and are in the
C test, but they are never used while tuning the engine (bench/accuracy/suite/
tune.py prints tuning cases only) and are reported separately in docs/accuracy.md.
"""

# model -> (architecture label, what the case exercises / harness remarks)
ARCH = {
    "resnet": ("ResNet (BasicBlock, residual CNN)", ""),
    "vgg_bn": ("VGG-11 with BatchNorm", ""),
    "unet": ("U-Net (ConvTranspose2d, Cat skips)", ""),
    "densenet": ("DenseNet-BC (concatenation)", ""),
    "mobilenet": ("MobileNetV2 (depthwise, inverted residual)", ""),
    "efficientnet": ("EfficientNet (MBConv, squeeze-excitation)", ""),
    "m5_audio": ("M5 Conv1d audio", ""),
    "mlp": ("MLP (GELU, LayerNorm, Dropout)", ""),
    "emb_mean": ("Embedding classifier (fastText-style mean)", ""),
    "textcnn": ("Embedding classifier (TextCNN, Conv1d)", ""),
    "encoder_postnorm": ("Transformer encoder, post-norm", ""),
    "gpt_prenorm": ("Transformer, pre-norm (GPT-style, tied head)", ""),
    "gpt_prenorm_ckpt": ("Checkpointed transformer blocks", ""),
    "mha_self": ("MultiheadAttention, need_weights=True", ""),
    "mha_cross": ("MultiheadAttention cross-attention (kdim/vdim, SDPA)", ""),
    "vit": ("ViT (patch conv, class token)", ""),
    "frozen_finetune": ("Frozen-backbone fine-tune", ""),
    "ckpt_resmlp": ("Checkpointed residual MLP blocks", ""),
    "mha_native": ("MultiheadAttention inference fast path (_native_multi_head_attention)", ""),
    "encoder_native": ("TransformerEncoderLayer inference fast path", ""),
    "vit3_block": ("ViT-Ti block (3 heads: no fast path; safe-softmax by release)", ""),
    "hswish_wide": ("In-place Hardswish without grad", ""),
    "hswish_frozen": ("In-place Hardswish after a frozen layer", ""),
    "swin": ("Swin Transformer (shifted window attention, patch merging)", ""),
    "swin_dropout": ("Swin Transformer with dropout 0.1 (attention and MLP)", ""),
    "mvit_v1": ("MViT v1 video transformer (pooling attention, positional table)", ""),
    "mvit_v2": ("MViT v2 video transformer (relative positions, residual pooling)", ""),
}

# model: [(batch, optim, mode, precision), ...]  -- the last entry of each list is held out
GROUPS = [
    ("resnet", [(32, "adam", "train", "fp32"), (8, "sgd", "train", "fp32"), (16, "adamw", "train", "bf16"),
                (64, "none", "infer", "fp32"), (2, "adafactor", "train", "fp32"), (64, "momentum", "train", "fp32")]),
    ("vgg_bn", [(32, "momentum", "train", "fp32"), (1, "adam", "train", "fp32"), (16, "none", "infer", "fp32"),
                (8, "sgd", "train", "bf16")]),
    ("unet", [(4, "adam", "train", "fp32"), (1, "sgd", "train", "fp32"), (8, "none", "infer", "fp32"),
              (8, "adamw", "train", "fp32")]),
    ("densenet", [(16, "adam", "train", "fp32"), (32, "none", "infer", "fp32"), (8, "sgd", "train", "fp32"),
                  (4, "momentum", "train", "fp32")]),
    ("mobilenet", [(32, "adamw", "train", "fp32"), (8, "sgd", "train", "fp32"), (64, "momentum", "train", "fp32"),
                   (16, "none", "infer", "fp32")]),
    # added after the SE-block fix (a broadcast Mul's output-sized gradient, VC_GRAD_NEW_REDUCE),
    # found with a probe model outside the suite; its cases were measured afterwards
    ("efficientnet", [(16, "adamw", "train", "fp32"), (32, "none", "infer", "fp32"), (8, "sgd", "train", "fp32"),
                      (4, "momentum", "train", "fp32")]),
    ("m5_audio", [(16, "adam", "train", "fp32"), (64, "sgd", "train", "fp32"), (4, "none", "infer", "fp32"),
                  (32, "adamw", "train", "bf16")]),
    ("mlp", [(64, "adamw", "train", "fp32"), (1, "sgd", "train", "fp32"), (32, "adam", "train", "bf16"),
             (16, "none", "infer", "bf16"), (1, "adafactor", "train", "fp32"), (4, "adafactor", "train", "bf16"),
             (8, "momentum", "train", "fp32")]),
    ("emb_mean", [(32, "adam", "train", "fp32"), (64, "none", "infer", "fp32"), (8, "sgd", "train", "fp32")]),
    ("textcnn", [(16, "adamw", "train", "fp32"), (32, "none", "infer", "fp32"), (4, "momentum", "train", "fp32")]),
    ("encoder_postnorm", [(8, "adamw", "train", "fp32"), (16, "sgd", "train", "bf16"), (8, "none", "infer", "fp32"),
                          (2, "adam", "train", "fp32")]),
    ("gpt_prenorm", [(4, "adamw", "train", "fp32"), (8, "momentum", "train", "bf16"), (4, "none", "infer", "bf16"),
                     (2, "adafactor", "train", "fp32"), (16, "adam", "train", "fp32")]),
    # (2, momentum) was this group's held-out case until it revealed the tied-weight
    # gradient accumulation gap (-4.36% when first evaluated, after tuning; see
    # docs/accuracy.md).  The engine was fixed using it, so it became a tuning case
    # and (4, adam, bf16) was appended, by the same rule, as the new held-out case.
    ("gpt_prenorm_ckpt", [(8, "adamw", "train", "fp32"), (2, "momentum", "train", "fp32"),
                          (4, "adam", "train", "bf16")]),
    ("mha_self", [(8, "adam", "train", "fp32"), (16, "none", "infer", "fp32"), (2, "sgd", "train", "fp32")]),
    ("mha_cross", [(8, "adamw", "train", "fp32"), (16, "none", "infer", "fp32"), (4, "momentum", "train", "bf16")]),
    ("vit", [(16, "adamw", "train", "fp32"), (8, "none", "infer", "fp32"), (1, "adafactor", "train", "bf16"),
             (4, "sgd", "train", "fp32")]),
    ("frozen_finetune", [(16, "adam", "train", "fp32"), (64, "sgd", "train", "fp32"), (8, "adamw", "train", "bf16"),
                         (32, "none", "infer", "fp32")]),
    ("ckpt_resmlp", [(32, "adam", "train", "fp32"), (8, "sgd", "train", "fp32"), (64, "adamw", "train", "bf16")]),
    # issue 17 (added after the fast paths were modelled; each group's last case, the
    # inference case of each fast path, is held out, chosen before its estimate was computed)
    ("mha_native", [(8, "sgd", "train", "fp32"), (32, "none", "infer", "fp32")]),
    ("encoder_native", [(8, "adam", "train", "fp32"), (4, "none", "infer", "bf16"), (16, "none", "infer", "fp32")]),
    ("vit3_block", [(8, "sgd", "train", "fp32"), (32, "none", "infer", "fp32")]),
    ("hswish_wide", [(32, "none", "infer", "fp32")]),
    ("hswish_frozen", [(32, "sgd", "train", "fp32")]),
    # issue 15 (added with the ShiftedWindowAttention kinds; the last case held out, chosen
    # before its estimate was computed)
    ("swin", [(8, "adamw", "train", "fp32"), (16, "none", "infer", "fp32"), (4, "sgd", "train", "fp32")]),
    # issue 15, Swin with dropout > 0 (torchvision calls F.dropout in the attention without
    # `training`; the MLP's nn.Dropout); the last case held out, chosen before its estimate
    # was computed
    ("swin_dropout", [(8, "adamw", "train", "fp32"), (16, "none", "infer", "fp32"), (4, "sgd", "train", "fp32")]),
    # issue 15 (added with the MultiscaleAttention / MViTPool / MViTPositionalEncoding kinds; the
    # last case of each group held out, chosen before its estimate was computed: the other
    # configurations' estimates had been compared while the kinds were written)
    ("mvit_v1", [(16, "none", "infer", "fp32"), (2, "momentum", "train", "fp32")]),
    ("mvit_v2", [(8, "adamw", "train", "fp32"), (32, "none", "infer", "fp32")]),
]

BOUND = 0.08  # SPEC.md section 4: every case within +-8%

# What happened to the held-out set (reported in docs/accuracy.md).
HELD_OUT_HISTORY = (
    "First evaluation of the 17 held-out cases, after tuning on the others had ended: 16 exact, "
    "gpt_prenorm_ckpt_b2_momentum_fp32 at -4.36% (measured 14,741,504 B, estimated 14,098,432 B). "
    "Its peak is the tied embedding/LM-head weight's second gradient: PyTorch adds the two gradients "
    "out of place in AccumulateGrad's InputBuffer because the LM head's weight gradient is a view "
    "(mm(...).t().t()) sharing its storage, which vramcalc added in place. The engine was fixed with "
    "this case (src/engine.c deliver, layers/ops.c vc_op_grad_view), so it became a tuning case and "
    "gpt_prenorm_ckpt_b4_adam_bf16, appended to its group, is held out in its place (chosen before its "
    "estimate was computed). The held-out mha_cross_b4_momentum_bf16 was +2.66% from its first evaluation "
    "until 2026-11-26, when the harness, not the engine, was found to differ from the source: its port of "
    "_scaled_dot_product_attention_math (tools/vctorch.py _sdpa_math_2x) freed the fp32 attn @ v result "
    "before making the discarded second output attn.to(origin_dtype), where C++ keeps every temporary of "
    "attention.cpp's `return std::make_tuple(...)` until the full-expression ends. With the port "
    "corrected it measures 5,051,392 B (was 4,920,320 B), vramcalc's unchanged estimate; the six other "
    "16-bit attention cases measure the same bytes as before. It stays held out: no engine change was "
    "made for it.")


def case_id(model, batch, optim, mode, precision):
    what = "infer" if mode == "infer" else optim
    return "%s_b%d_%s_%s" % (model, batch, what, precision)


def cases():
    out = []
    for model, lst in GROUPS:
        for i, (batch, optim, mode, precision) in enumerate(lst):
            out.append({
                "id": case_id(model, batch, optim, mode, precision),
                "model": model,
                "architecture": ARCH[model][0],
                "batch": batch,
                "optim": optim if mode == "train" else "none",
                "mode": mode,
                "precision": precision,
                "held_out": i == len(lst) - 1,
            })
    return out


if __name__ == "__main__":
    cs = cases()
    print("%d cases, %d architectures, %d held out" % (
        len(cs), len({c["architecture"] for c in cs}), sum(c["held_out"] for c in cs)))
    for c in cs:
        print(("H " if c["held_out"] else "  ") + c["id"])
