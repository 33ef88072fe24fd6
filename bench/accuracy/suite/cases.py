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
}

# model: [(batch, optim, mode, precision), ...]  -- the last entry of each list is held out
GROUPS = [
    ("resnet", [(32, "adam", "train", "fp32"), (8, "sgd", "train", "fp32"), (16, "adamw", "train", "bf16"),
                (64, "none", "infer", "fp32"), (64, "momentum", "train", "fp32")]),
    ("vgg_bn", [(32, "momentum", "train", "fp32"), (1, "adam", "train", "fp32"), (16, "none", "infer", "fp32"),
                (8, "sgd", "train", "bf16")]),
    ("unet", [(4, "adam", "train", "fp32"), (1, "sgd", "train", "fp32"), (8, "none", "infer", "fp32"),
              (8, "adamw", "train", "fp32")]),
    ("densenet", [(16, "adam", "train", "fp32"), (32, "none", "infer", "fp32"), (8, "sgd", "train", "fp32"),
                  (4, "momentum", "train", "fp32")]),
    ("mobilenet", [(32, "adamw", "train", "fp32"), (8, "sgd", "train", "fp32"), (64, "momentum", "train", "fp32"),
                   (16, "none", "infer", "fp32")]),
    ("m5_audio", [(16, "adam", "train", "fp32"), (64, "sgd", "train", "fp32"), (4, "none", "infer", "fp32"),
                  (32, "adamw", "train", "bf16")]),
    ("mlp", [(64, "adamw", "train", "fp32"), (1, "sgd", "train", "fp32"), (32, "adam", "train", "bf16"),
             (16, "none", "infer", "bf16"), (8, "momentum", "train", "fp32")]),
    ("emb_mean", [(32, "adam", "train", "fp32"), (64, "none", "infer", "fp32"), (8, "sgd", "train", "fp32")]),
    ("textcnn", [(16, "adamw", "train", "fp32"), (32, "none", "infer", "fp32"), (4, "momentum", "train", "fp32")]),
    ("encoder_postnorm", [(8, "adamw", "train", "fp32"), (16, "sgd", "train", "bf16"), (8, "none", "infer", "fp32"),
                          (2, "adam", "train", "fp32")]),
    ("gpt_prenorm", [(4, "adamw", "train", "fp32"), (8, "momentum", "train", "bf16"), (4, "none", "infer", "bf16"),
                     (16, "adam", "train", "fp32")]),
    ("gpt_prenorm_ckpt", [(8, "adamw", "train", "fp32"), (2, "momentum", "train", "fp32")]),
    ("mha_self", [(8, "adam", "train", "fp32"), (16, "none", "infer", "fp32"), (2, "sgd", "train", "fp32")]),
    ("mha_cross", [(8, "adamw", "train", "fp32"), (16, "none", "infer", "fp32"), (4, "momentum", "train", "bf16")]),
    ("vit", [(16, "adamw", "train", "fp32"), (8, "none", "infer", "fp32"), (4, "sgd", "train", "fp32")]),
    ("frozen_finetune", [(16, "adam", "train", "fp32"), (64, "sgd", "train", "fp32"), (8, "adamw", "train", "bf16"),
                         (32, "none", "infer", "fp32")]),
    ("ckpt_resmlp", [(32, "adam", "train", "fp32"), (8, "sgd", "train", "fp32"), (64, "adamw", "train", "bf16")]),
]

BOUND = 0.08  # SPEC.md section 4: every case within +-8%


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
