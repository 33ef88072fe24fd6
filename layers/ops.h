/*
 * ops.h — aten ops as autograd nodes, shared by the layer families.
 *
 * Each helper records what PyTorch 2.x (CUDA, eager) allocates, saves for
 * backward and allocates in backward for that op; the comments name the
 * derivatives.yaml entry or module source it follows.
 */
#ifndef VC_OPS_H
#define VC_OPS_H

#include "layer.h"

enum { VC_SAVE_NONE, VC_SAVE_IN, VC_SAVE_OUT };

/* y = f(x), same size and dtype. save: VC_SAVE_IN (self) or VC_SAVE_OUT
 * (result). inplace: y shares x's storage (relu_, ...). */
vc_t vc__op_unary(vc_build *b, const char *name, vc_t x, int save, bool inplace);
/* A view of x (reshape/permute/transpose/select/...): no allocation; the
 * backward passes a view of the gradient. */
vc_t vc__op_view(vc_build *b, vc_t x, vc_numel n, bool contiguous);
/* x.clone() (and reshape() of a tensor it cannot view): a copy; the gradient passes. */
vc_t vc__op_clone(vc_build *b, vc_t x);
/* x.contiguous(): a copy when x is not contiguous, else x. */
vc_t vc__op_contiguous(vc_build *b, vc_t x);
/* A view whose backward builds a zero tensor of the input's size
 * (select/slice backward). */
vc_t vc__op_select(vc_build *b, vc_t x, vc_numel n, bool contiguous);
/* dst.copy_(src) (and dst[...] = src, a copy_ into a slice of dst): in place in dst's storage, nothing saved
 * (CopyBackwards / CopySlices) */
vc_t vc__op_copy_into(vc_build *b, vc_t dst, vc_t src);
/* _to_copy to dt (no-op when already dt). */
vc_t vc__op_cast(vc_build *b, vc_t x, vc_dtype dt);
/* Under autocast: cast a float activation to the low-precision dtype, or
 * (to_f32) an fp16/bf16 one to fp32 for ops on autocast's fp32 list. */
vc_t vc__op_autocast(vc_build *b, vc_t x);
vc_t vc__op_autocast_f32(vc_build *b, vc_t x);
/* Under autocast: a parameter's low-precision copy, cast once per forward. */
vc_t vc__op_autocast_weight(vc_build *b, vc_t w);

/* Linear on x whose per-sample numel is rows*in (rows per sample; rows may
 * be 1). bias may be -1. Follows Linear.cpp: addmm / _flatten_nd_linear for
 * contiguous input with bias, matmul folding (a saved copy of a
 * non-contiguous input) otherwise. */
vc_t vc__op_linear(vc_build *b, vc_t x, vc_t w, vc_t bias, int64_t rows, int64_t in, int64_t out);
/* Megatron sequence parallelism (docs/parallel.md 2.6). vc__op_linear_gather: a
 * ColumnParallelLinear with sequence_parallel on x, the rank's [rows, in]
 * shard of the sequence: the input all-gathered t-fold into a buffer for the
 * matmul, the shard saved, re-gathered in backward, whose full-size grad_input
 * is reduce-scattered into the shard's gradient. vc__op_seq_scatter: the
 * reduce-scatter (or split) of x to its 1/t along the sequence, a new
 * tensor; backward all-gathers the gradient (a new full-size tensor). */
vc_t vc__op_linear_gather(vc_build *b, vc_t x, vc_t w, vc_t bias, int64_t rows, int64_t in, int64_t out, int64_t t);
vc_t vc__op_seq_scatter(vc_build *b, vc_t x, int64_t t);
/* bmm/matmul of a [.., n, m] and c [.., m, p] into out elements. */
vc_t vc__op_bmm(vc_build *b, vc_t a, vc_t c, vc_numel out);
/* The same without autocast casts (inside an op that was autocast itself). */
vc_t vc__op_bmm_raw(vc_build *b, vc_t a, vc_t c, vc_numel out);
/* convolution (any dims, transposed or not): saves input and weight. */
vc_t vc__op_conv(vc_build *b, vc_t x, vc_t w, vc_t bias, vc_numel out);
/* x + y (or x * y) broadcast to `out` elements; inplace writes into x. */
vc_t vc__op_add(vc_build *b, vc_t x, vc_t y, vc_numel out, bool inplace);
vc_t vc__op_mul(vc_build *b, vc_t x, vc_t y, vc_numel out, bool inplace);
/* x * y broadcast to `out` elements in dtype dt (a new tensor: a per-row or per-feature factor,
 * type promotion): each operand saved when the other needs its gradient, a broadcast operand's
 * output-sized gradient reduced by the engine; a full-size operand of another dtype than dt gets
 * its gradient as the engine's cast of the output-sized product in dt (a backward temporary). */
vc_t vc__op_mul_dt(vc_build *b, vc_t x, vc_t y, vc_numel out, vc_dtype dt);
/* torch.square(x) / x.pow(2): pow.Tensor_Scalar (fp32 under autocast); keeps x; its
 * backward (pow_backward) makes two x-sized temporaries beside the gradient. */
vc_t vc__op_pow2(vc_build *b, vc_t x);
/* Dropout(p) in training: native_dropout (bool mask saved); identity when
 * p == 0 or not training. */
vc_t vc__op_dropout(vc_build *b, vc_t x, double p);
/* softmax / log_softmax along a dim: saves the result (fp32 under autocast). */
vc_t vc__op_softmax(vc_build *b, vc_t x, bool log);
/* Reduction to out elements (mean/sum): saves nothing; backward expands. */
vc_t vc__op_mean(vc_build *b, vc_t x, vc_numel out);
/* native_layer_norm (docs/autograd.md §3.8; layer_norm is on autocast's fp32
 * list: a 16-bit input is cast first): keeps its input, weight and bias
 * (either may be -1) and mean/rstd of `stats` elements in fp32; a
 * non-contiguous input is copied in forward and again in backward. */
vc_t vc__op_layer_norm(vc_build *b, vc_t x, vc_t w, vc_t bias, vc_numel stats);
/* The same native_layer_norm on x as it comes (no autocast cast: a call under autocast(enabled=False)). */
vc_t vc__op_layer_norm_as_is(vc_build *b, vc_t x, vc_t w, vc_t bias, vc_numel stats);
/* A new tensor of n elements (x's dtype) computed from x, saving nothing;
 * backward makes x's gradient anew (mul by a scalar, pad, repeat, expand). */
vc_t vc__op_fresh(vc_build *b, const char *name, vc_t x, vc_numel n);
/* A fresh tensor no gradient flows into (zeros for hx, masks). */
vc_t vc__op_new(vc_build *b, const char *name, vc_numel n, vc_dtype dt);
/* A new tensor computed from x and y (-1: none) with no gradient: an op on
 * constants (a mask), or of generate()'s decoding loop. */
vc_t vc__op_nograd(vc_build *b, const char *name, vc_t x, vc_t y, vc_numel n, vc_dtype dt);

/* F.scaled_dot_product_attention(q, k, v, enable_gqa=True) on [B, H, L, D]
 * tensors (layers/attention.c, through the backend --attention picks): q
 * has H heads, k and v Hkv (dividing H). *_blhd: the tensor's storage is
 * [B, L, H, D] seen through transpose(1, 2). *out_blhd receives the same
 * for the result. */
typedef struct {
    int64_t H, Hkv, L, S, D;
    bool q_blhd, k_blhd, v_blhd, causal;
    double p;
    int64_t Dv; /* the value's head dim when it differs from D (MLA, layers/mla.c); 0: D */
    bool no_gqa; /* F.sdpa called without enable_gqa (FalconAttention): Hkv < H runs on the math backend */
    /* masked: an explicit float attn_mask, already in the query's dtype (ModernBERT's masks; --packing's
     * block-causal mask, layers/llm.c ra_emit): no flash backend, .mask is that tensor; varlen: the
     * number of sequences flash-attn's varlen kernel runs over (--packing under flash_attention_2) */
    bool masked;
    vc_t mask;
    int64_t varlen;
    /* mask_ld: the mask is a [B, 1, L, S] view, shared by the batch (stride 0), of rows mask_ld elements apart
     * (transformers 4.x's [L, S + 1] sliding mask sliced to S, layers/llm.c sliding_mask_4x); 0: a contiguous
     * mask of its own shape */
    int64_t mask_ld;
} vc_sdpa_args;
vc_t vc__op_sdpa_gqa(vc_build *b, vc_t q, vc_t k, vc_t v, const vc_sdpa_args *a, bool *out_blhd);
/* layers/llm.c's HF pieces, for layers/mla.c: LlamaRMSNorm.forward on x with
 * weight w over `rows` rows (variant 0 llama, 1 gemma), and
 * apply_rotary_pos_emb on x [B, heads, L, D] with the rotary part R and the
 * RotaryEmbedding's cos/sin cs. */
vc_t vc__hf_rmsnorm(vc_build *b, vc_t x, vc_t w, vc_numel rows, int variant);
vc_t vc__rope_apply(vc_build *b, vc_t x, vc_t cs, int64_t heads, int64_t L, int64_t D, int64_t R);
/* The rotation on the even / odd halves of x [B, heads, L, D] (GptOssAttention's _apply_rotary_emb; DeepSeek-V3.2's
 * apply_rotary_pos_emb_interleave): x1 * cos - x2 * sin, x2 * cos + x1 * sin, cat. */
vc_t vc__rope_apply_half(vc_build *b, vc_t x, vc_t cs, int64_t heads, int64_t L, int64_t D);
/* The PyTorch release followed (100*major + minor; --torch). */
int vc__op_torch(const vc_build *b);
/* Records the first attention layer's kernel choice and why (engine.c):
 * the result's `attention` line, prefixed with the layer's path. */
void vc_note(vc_build *b, const char *s);

#endif
