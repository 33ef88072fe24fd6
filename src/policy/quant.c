/*
 * quant.c — storage formats of Linear weights (vc_weights), one row each:
 * the tensors a library keeps on the GPU for one weight [out, in] (packed
 * data, block scales, zeros, code books), what it keeps once for all of
 * them, and the temporaries its linear makes. Then which Linear weights a
 * format replaces (transformers' get_keys_to_not_convert), the checks of an
 * estimate, and a config.json's quantization_config. Every byte is read from
 * the library's source, cited per row; docs/quantization.md has the
 * formulas and worked examples.
 *
 * Sources (versions read):
 *   bitsandbytes 0.50.1 (github bitsandbytes-foundation/bitsandbytes, tag 0.50.1):
 *     functional.py quantize_4bit, quantize_blockwise, dequantize_4bit, get_4bit_type,
 *     create_dynamic_map, QuantState; backends/cuda/ops.py the quantize_4bit,
 *     quantize_blockwise, int8_vectorwise_quant and gemm_4bit kernels and
 *     _dequant_linear_fallback; autograd/_functions.py MatMul4Bit, matmul_4bit;
 *     nn/modules.py Params4bit._quantize, Int8Params._quantize, Linear4bit.forward.
 *   AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_exllama.py QuantLinear.__init__.
 *   AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM.__init__.
 *   transformers integrations/finegrained_fp8.py FP8Linear.__init__, Fp8Quantize.convert,
 *     replace_with_fp8_linear; integrations/fbgemm_fp8.py @000c33fd FbgemmFp8Linear.__init__,
 *     FbgemmFp8Llama4TextExperts.__init__, replace_with_fbgemm_fp8_linear;
 *     quantizers' get_keys_to_not_convert.
 *   transformers integrations/mxfp4.py @0189b1d0 Mxfp4GptOssExperts.__init__, mlp_forward,
 *     convert_moe_packed_tensors; quantizers/quantizer_mxfp4.py @0001b3ee
 *     Mxfp4HfQuantizer.validate_environment, param_needs_quantization, is_trainable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "load.h"
#include "policy.h"
#include "util.h"

#define T(n_, dt_) ((vc_tspec){vc_n_fixed(n_), (uint8_t)(dt_)})

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t out_of(const vc_param_entry *p) { return p->nd == 2 ? p->dims[0] : p->nd == 3 ? p->dims[1] : 1; }
static int64_t in_of(const vc_param_entry *p) { return p->nd == 2 ? p->dims[1] : p->nd == 3 ? p->dims[2] : p->numel; }
/* stacked experts [E, out, in] (VC_PARAM_EXPERTS): E weights of [out, in] */
static int64_t lead_of(const vc_param_entry *p) { return p->nd == 3 ? p->dims[0] : 1; }

/* ---- dense: the precision's dtype (nn.Linear's weight) */
static int dense_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    (void)q;
    out[0] = T(p->numel, dense);
    return 1;
}

/* ---- bitsandbytes 4-bit (nf4, fp4): Params4bit._quantize calls
 * quantize_4bit(w, blocksize, compress_statistics, quant_type, uint8), which
 * keeps:
 *   data     uint8 [(n + 1) // 2, 1]         (kernel quantize_4bit: out = torch.empty(((n + 1) // (itemsize * 2), 1)))
 *   code     fp32  [16]                      (get_4bit_type: torch.tensor(data, device) of 16 values)
 * without double quantization:
 *   absmax   fp32  [ceil(n / blocksize)]     (kernel quantize_4bit: absmax = torch.empty((blocks,)))
 * with it (compress_statistics=True): offset = _absmax.mean(); the absmax
 * quantized by quantize_blockwise(_absmax - offset, blocksize=256):
 *   offset   fp32  0-dim                     (_absmax.mean())
 *   absmax2  fp32  [ceil(blocks / 256)]      (kernel quantize_blockwise: absmax = torch.empty((blocks,)))
 *   absmax   uint8 [blocks]                  (kernel quantize_blockwise: out = torch.empty_like(A, uint8))
 *   code2    fp32  [256]                     (QuantState(code=code.to(device, copy=True)) of create_dynamic_map())
 * in that order of creation. */
static int bnb4_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    (void)dense;
    int64_t n = p->numel, blocks = cdiv(n, q->group);
    int k = 0;
    out[k++] = T((n + 1) / 2, VC_DT_U8);
    out[k++] = T(16, VC_DT_F32);
    if (!q->double_quant) {
        out[k++] = T(blocks, VC_DT_F32);
        return k;
    }
    out[k++] = T(1, VC_DT_F32);
    out[k++] = T(cdiv(blocks, 256), VC_DT_F32);
    out[k++] = T(blocks, VC_DT_U8);
    out[k++] = T(256, VC_DT_F32);
    return k;
}

/* quantize_blockwise with code=None caches create_dynamic_map() (256 fp32
 * values) on the device in the module-level name2qmap["dynamic"], once. */
static int bnb4_shared(const vc_quant *q, const vc_quant_extent *x, vc_tspec out[VC_QUANT_MAX])
{
    (void)x;
    if (!q->double_quant) return 0;
    out[0] = T(256, VC_DT_F32);
    return 1;
}

/* Linear4bit.forward -> matmul_4bit: with grad, MatMul4Bit.forward; without,
 * gemm_4bit directly; both call the gemm_4bit kernel, which past 1,536 rows
 * (and below on the GPUs _gemm_4bit_use_custom_cuda sends there) runs
 * _dequant_linear_fallback: absmax_dq = torch.empty_like(absmax_8bit,
 * float32), absmax = absmax_dq + offset (double quantization), B_dq =
 * torch.empty(shapeB, A.dtype), F.linear(A, B_dq, bias); all three live
 * until it returns. MatMul4Bit.backward: grad_A = torch.matmul(grad_output,
 * F.dequantize_4bit(B, state).to(grad_output.dtype)): dequantize_4bit makes
 * the fp32 absmax (dequantize_blockwise, then += offset) and frees it on
 * return, after the 16-bit weight is made. */
static void bnb4_temps(const vc_param_entry *p, const vc_quant *q, vc_dtype compute, vc_numel rows,
                       vc_qtemp fwd[VC_QUANT_MAX], int *nf, vc_qtemp bwd[VC_QUANT_MAX], int *nb)
{
    (void)rows;
    int64_t n = p->numel, blocks = cdiv(n, q->group);
    *nf = *nb = 0;
    if (q->double_quant) {
        fwd[(*nf)++] = (vc_qtemp){T(blocks, VC_DT_F32), true};
        fwd[(*nf)++] = (vc_qtemp){T(blocks, VC_DT_F32), true};
        bwd[(*nb)++] = (vc_qtemp){T(blocks, VC_DT_F32), false};
    }
    fwd[(*nf)++] = (vc_qtemp){T(n, compute), true};
    bwd[(*nb)++] = (vc_qtemp){T(n, compute), true};
}

/* ---- bitsandbytes int8 (LLM.int8). Inference only here: in training
 * MatMul8bitLt.forward keeps (CAt, subA, A) for backward, subA being the
 * input's outlier columns (|x| >= threshold, data-dependent), which no
 * shape-only model can size. Int8Params._quantize:
 * CB, SCB, _ = int8_vectorwise_quant(B.to(float16)); kernel
 * int8_vectorwise_quant: out_row int8 [out, in], row_stats fp32 [out]. */
static int int8_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    (void)q;
    (void)dense;
    out[0] = T(p->numel, VC_DT_I8);
    out[1] = T(out_of(p), VC_DT_F32);
    return 2;
}

/* ---- GPTQ: auto_gptq QuantLinear.__init__ (qlinear_exllama.py; the same
 * buffers in qlinear_cuda_old and transformers' GPTQ path):
 *   qweight int32 [in // 32 * bits, out]
 *   qzeros  int32 [ceil(in / group), out // 32 * bits]
 *   scales  fp16  [ceil(in / group), out]
 *   g_idx   int32 [in] */
static int64_t group_of(const vc_param_entry *p, const vc_quant *q) { return q->group > 0 ? q->group : in_of(p); }

static int gptq_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    (void)dense;
    int64_t in = in_of(p), o = out_of(p), g = cdiv(in, group_of(p, q));
    out[0] = T(in / 32 * q->bits * o, VC_DT_I32);
    out[1] = T(g * (o / 32 * q->bits), VC_DT_I32);
    out[2] = T(g * o, VC_DT_F16);
    out[3] = T(in, VC_DT_I32);
    return 4;
}

/* 4 bits: transformers' GPTQ path runs AutoGPTQ's ExLlama (v1) kernel
 * (GPTQConfig: exllama_config defaults to {"version": 1}), and
 * auto_gptq/modeling/_utils.py autogptq_post_init (AutoGPTQ@9f7d370)
 * allocates, once per device and for the whole run, temp_state fp16
 * [max_input_len, max_inner_outer_dim] (without act-order: [1, 1]) and
 * temp_dq fp16 [1, max(qweight.numel() * 8)] (the largest weight
 * dequantized, for the cuBLAS path of the prefill). desc_act (act-order,
 * temp_state [2048, max(in, out)]) is not modelled. */
static int gptq_shared(const vc_quant *q, const vc_quant_extent *x, vc_tspec out[VC_QUANT_MAX])
{
    if (q->bits != 4 || x->max_numel <= 0) return 0;
    out[0] = T(1, VC_DT_F16);
    out[1] = T(x->max_numel / 32 * q->bits * 8, VC_DT_F16); /* qweight [in / 32 * bits, out], x 8 */
    return 2;
}

static const char *gptq_misfit(const vc_param_entry *p, const vc_quant *q, char *buf, size_t n)
{
    (void)q;
    if (in_of(p) % 32 || out_of(p) % 32) { /* QuantLinear: assert infeatures % 32 == 0, outfeatures % 32 == 0 */
        snprintf(buf, n, "GPTQ packs 32 / bits weights per int32: in_features %lld and out_features %lld must be multiples of 32",
                 (long long)in_of(p), (long long)out_of(p));
        return buf;
    }
    return NULL;
}

/* ---- AWQ: WQLinear_GEMM.__init__ (awq/modules/linear/gemm.py):
 *   qweight int32 [in, out // (32 // bits)]
 *   qzeros  int32 [in // group, out // (32 // bits)]
 *   scales  fp16  [in // group, out] */
static int awq_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    (void)dense;
    int64_t in = in_of(p), o = out_of(p), g = in / group_of(p, q), packed = o / (32 / q->bits);
    out[0] = T(in * packed, VC_DT_I32);
    out[1] = T(g * packed, VC_DT_I32);
    out[2] = T(g * o, VC_DT_F16);
    return 3;
}

static const char *awq_misfit(const vc_param_entry *p, const vc_quant *q, char *buf, size_t n)
{
    /* WQLinear_GEMM: assert in_features % group_size == 0; assert out_features % (32 // w_bit) == 0 */
    if (in_of(p) % group_of(p, q)) {
        snprintf(buf, n, "AWQ needs in_features (%lld) to be a multiple of group_size %lld", (long long)in_of(p), (long long)group_of(p, q));
        return buf;
    }
    if (out_of(p) % (32 / q->bits)) {
        snprintf(buf, n, "AWQ packs %lld weights per int32: out_features (%lld) must be a multiple of it", (long long)(32 / q->bits),
                 (long long)out_of(p));
        return buf;
    }
    return NULL;
}

/* ---- fp8 (float8_e4m3fn weight): transformers FP8Linear.__init__
 * (finegrained_fp8.py): weight [out, in] and weight_scale_inv fp32
 * [ceil(out / block[0]), ceil(in / block[1])]; per-tensor is the block of
 * the whole weight (Fp8Quantize.convert: block_size None -> (rows, cols),
 * one scale). FbgemmFp8Linear.__init__ (fbgemm_fp8.py), per channel:
 * weight_scale fp32 [out, 1] and the buffer input_scale_ub fp32 [1]. */
static void fp8_block(const vc_param_entry *p, const vc_quant *q, int64_t *bo, int64_t *bi)
{
    *bo = q->format == VC_WEIGHTS_FP8_BLOCK ? q->block[0] : out_of(p);
    *bi = q->format == VC_WEIGHTS_FP8_BLOCK ? q->block[1] : in_of(p);
}

static int fp8_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    (void)dense;
    int64_t bo, bi;
    fp8_block(p, q, &bo, &bi);
    out[0] = T(p->numel, VC_DT_F8);
    /* FP8Experts: gate_up_proj_scale_inv / down_proj_scale_inv [E, ceil(out / b0), ceil(in / b1)] */
    out[1] = T(lead_of(p) * cdiv(out_of(p), bo) * cdiv(in_of(p), bi), VC_DT_F32);
    return 2;
}

static int fp8_channel_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    (void)q;
    (void)dense;
    out[0] = T(p->numel, VC_DT_F8);
    if (p->flags & VC_PARAM_LLAMA4_EXPERTS) {
        /* FbgemmFp8Llama4TextExperts.__init__ (fbgemm_fp8.py @000c33fd), in registration order:
         * gate_up_proj fp8 [E, H, 2I], gate_up_proj_scale fp32 [E, 1, 2I]; down_proj fp8 [E, I, H],
         * down_proj_scale fp32 [E, H, 1]; then the module's one buffer input_scale_ub fp32 [1]
         * (register_buffer, persistent=False), counted with down_proj. Both scales: E x dims[2]. */
        out[1] = T(p->dims[0] * p->dims[2], VC_DT_F32);
        if (strstr(p->name, "gate_up_proj")) return 2;
        out[2] = T(1, VC_DT_F32);
        return 3;
    }
    out[1] = T(out_of(p), VC_DT_F32);
    out[2] = T(1, VC_DT_F32);
    return 3;
}

/* FP8Linear.forward: qinput, scale = act_quant(input, block_size[1]) (an
 * fp8 copy of the input and one fp32 scale per row and block of block[1]
 * columns), w8a8_block_fp8_matmul_triton writes the output, then
 * torch.nan_to_num(output) makes the returned copy: the kernel's output is
 * the held temporary here. */
static void fp8_temps(const vc_param_entry *p, const vc_quant *q, vc_dtype compute, vc_numel rows,
                      vc_qtemp fwd[VC_QUANT_MAX], int *nf, vc_qtemp bwd[VC_QUANT_MAX], int *nb)
{
    (void)bwd;
    int64_t bo, bi;
    fp8_block(p, q, &bo, &bi);
    vc_numel r = rows;
    fwd[0] = (vc_qtemp){{vc_n_scale(r, in_of(p)), VC_DT_F8}, true};
    fwd[1] = (vc_qtemp){{vc_n_scale(r, cdiv(in_of(p), bi)), VC_DT_F32}, true};
    fwd[2] = (vc_qtemp){{vc_n_scale(r, out_of(p)), (uint8_t)compute}, true};
    *nf = 3;
    *nb = 0;
}

/* ---- MXFP4 (OCP microscaling FP4, gpt-oss's checkpoints): Mxfp4GptOssExperts
 * replaces GptOssExperts' gate_up_proj [E, H, 2I] and down_proj [E, I, H] with
 *   <proj>_blocks uint8 [E, out, in / 32, 16]   (32 FP4 values, two per byte, per block)
 *   <proj>_scales uint8 [E, out, in / 32]       (one E8M0 exponent per block)
 * (param_needs_quantization: the experts' weights only; the biases, attention,
 * router, embeddings and lm_head stay in the model's dtype). With the Triton
 * kernels (load_and_swizzle_mxfp4) the two are re-laid out for matmul_ogs
 * (swizzled, the same bytes here). in: the stacked weight's dims[1]. */
static int mxfp4_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    (void)q;
    (void)dense;
    int64_t in = p->nd == 3 ? p->dims[1] : in_of(p), blocks = p->numel / in * cdiv(in, 32);
    out[0] = T(blocks * 16, VC_DT_U8);
    out[1] = T(blocks, VC_DT_U8);
    return 2;
}

/* the checkpoint's blocks hold whole 32-value blocks of the input dimension (hidden_size // 32) */
static const char *mxfp4_misfit(const vc_param_entry *p, const vc_quant *q, char *buf, size_t n)
{
    (void)q;
    int64_t in = p->nd == 3 ? p->dims[1] : in_of(p);
    if (in % 32 == 0) return NULL;
    snprintf(buf, n, "the input dimension (%lld) is not a multiple of MXFP4's 32-value blocks", (long long)in);
    return buf;
}

/* The config.json readers (the rows' from_config, below), by quant_method. */
static vc_status qc_mxfp4(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_bnb(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_gptq(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_awq(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_fp8(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_fbgemm(const cJSON *qc, vc_quant *q, vc_error *err);

/* bitsandbytes' quantize_4bit blocksizes: 32 to 4096, powers of two (bits 5 to 12) */
#define BNB4_BLOCKS (((1u << 13) - 1) & ~((1u << 5) - 1))

/* The formats, one row each (policy.h vc_weight_row). Compute precision: quantized weights
 * keep the other parameters and the compute in 16-bit (torch_dtype, bnb_4bit_compute_dtype),
 * fp16 for GPTQ and AWQ (their kernels' dtype: the scales are fp16), else bf16. */
static const vc_weight_row rows[VC_WEIGHTS__N] = {
    [VC_WEIGHTS_DENSE] = {
        .name = "dense", .summary = "torch.nn.Linear: the weight in the precision's dtype",
        .compute = VC_PREC_FP32, .trains = true, .lora = VC_LORA_LINEAR, .tensors = dense_tensors,
    },
    [VC_WEIGHTS_INT8] = {
        .name = "int8", .summary = "bitsandbytes Linear8bitLt / Int8Params: int8 weight, fp32 scale per output row (SCB)",
        .compute = VC_PREC_BF16, .method = "bitsandbytes", .from_config = qc_bnb,
        .lora = VC_LORA_BNB8, .tensors = int8_tensors,
    },
    /* Params4bit(blocksize=64); under --weights (and --qlora) BitsAndBytesConfig(bnb_4bit_use_double_quant=True) */
    [VC_WEIGHTS_NF4] = {
        .name = "nf4", .summary = "bitsandbytes Linear4bit / Params4bit, quant_type nf4: packed 4-bit data and its QuantState",
        .blocks = BNB4_BLOCKS, .group = 64, .double_quant = 1,
        .compute = VC_PREC_BF16, .method = "bitsandbytes", .from_config = qc_bnb,
        .trains = true, .lora = VC_LORA_BNB4, .tensors = bnb4_tensors, .shared = bnb4_shared, .temps = bnb4_temps,
    },
    [VC_WEIGHTS_FP4] = {
        .name = "fp4", .summary = "bitsandbytes Linear4bit / Params4bit, quant_type fp4: packed 4-bit data and its QuantState",
        .blocks = BNB4_BLOCKS, .group = 64, .double_quant = 1,
        .compute = VC_PREC_BF16, .method = "bitsandbytes", .from_config = qc_bnb,
        .trains = true, .lora = VC_LORA_BNB4, .tensors = bnb4_tensors, .shared = bnb4_shared, .temps = bnb4_temps,
    },
    /* GPTQConfig bits: 2, 3, 4, 8 */
    [VC_WEIGHTS_GPTQ] = {
        .name = "gptq", .summary = "auto_gptq QuantLinear: qweight, qzeros, scales, g_idx",
        .bits = (1u << 2) | (1u << 3) | (1u << 4) | (1u << 8),
        .compute = VC_PREC_FP16, .method = "gptq", .from_config = qc_gptq,
        .lora = VC_LORA_LINEAR, .tensors = gptq_tensors, .shared = gptq_shared, .misfit = gptq_misfit,
    },
    /* WQLinear_GEMM: w_bit 4 */
    [VC_WEIGHTS_AWQ] = {
        .name = "awq", .summary = "AutoAWQ WQLinear_GEMM: qweight, qzeros, scales",
        .bits = 1u << 4,
        .compute = VC_PREC_FP16, .method = "awq", .from_config = qc_awq,
        .lora = VC_LORA_LINEAR, .tensors = awq_tensors, .misfit = awq_misfit,
    },
    [VC_WEIGHTS_FP8] = {
        .name = "fp8", .summary = "transformers FP8Linear, one scale per tensor (weight_scale_inv)",
        .compute = VC_PREC_BF16, .method = "fp8", .from_config = qc_fp8,
        .lora = VC_LORA_LINEAR, .tensors = fp8_tensors, .temps = fp8_temps,
    },
    [VC_WEIGHTS_FP8_CHANNEL] = {
        .name = "fp8-channel", .summary = "transformers FbgemmFp8Linear: weight_scale per output row, input_scale_ub",
        .compute = VC_PREC_BF16, .method = "fbgemm_fp8", .from_config = qc_fbgemm,
        .lora = VC_LORA_LINEAR, .tensors = fp8_channel_tensors,
    },
    /* DeepSeek-V3's weight_block_size [128, 128] by default */
    [VC_WEIGHTS_FP8_BLOCK] = {
        .name = "fp8-block", .summary = "transformers FP8Linear, weight_block_size blocks (weight_scale_inv)",
        .blocked = true, .block = 128,
        .compute = VC_PREC_BF16, .method = "fp8", .from_config = qc_fp8,
        .lora = VC_LORA_LINEAR, .tensors = fp8_tensors, .temps = fp8_temps,
    },
    /* Mxfp4HfQuantizer with the Triton kernels (triton >= 3.4 and the kernels package, compute
     * capability >= 7.5: the gpt-oss model card's `pip install -U transformers kernels torch` on a
     * Hopper GPU): the experts stay MXFP4 and run matmul_ogs (SparseMoE style gpt_oss, layers/llm.c);
     * is_trainable False. Without the kernels, below 7.5, with use_kernels=True or
     * Mxfp4Config(dequantize=True) it dequantizes to bf16 at load (convert_moe_packed_tensors):
     * the dense model, --weights dense or "dequantize": true. */
    [VC_WEIGHTS_MXFP4] = {
        .name = "mxfp4", .summary = "transformers Mxfp4GptOssExperts: stacked experts as FP4 blocks + E8M0 scales (Triton matmul_ogs)",
        .compute = VC_PREC_BF16, .method = "mxfp4", .from_config = qc_mxfp4,
        .lora = VC_LORA_LINEAR, .tensors = mxfp4_tensors, .misfit = mxfp4_misfit,
    },
};

const vc_weight_row *vc_weight_row_get(vc_weights w) { return (unsigned)w < VC_WEIGHTS__N ? &rows[w] : NULL; }

const char *vc_weights_name(vc_weights w) { return (unsigned)w < VC_WEIGHTS__N ? rows[w].name : "?"; }

vc_precision vc_quant_compute_precision(const vc_quant *q)
{
    return q && (unsigned)q->format < VC_WEIGHTS__N ? rows[q->format].compute : VC_PREC_FP32;
}

/* A row's --weights names: its name, or with bits, its name followed by one of them ("gptq4"). */
int vc_quant_from_name(const char *name, vc_quant *q)
{
    memset(q, 0, sizeof *q);
    q->group = 128; /* GPTQConfig / AwqConfig group_size */
    if (!name) return -1;
#define SPELLING(e, n) {VC_WEIGHTS_##e, n},
    static const struct {
        vc_weights format;
        const char *name;
    } spellings[] = {VC_WEIGHTS_SPELLING_MAP(SPELLING)}; /* vramcalc.h: what --weights accepts */
#undef SPELLING
    for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
        if (strcmp(name, spellings[i].name)) continue;
        const vc_weight_row *r = &rows[spellings[i].format];
        q->format = spellings[i].format;
        if (r->bits) q->bits = atoi(name + strlen(r->name)); /* "gptq4": the row's name, then its bits */
        if (r->group) q->group = r->group;
        q->double_quant = r->double_quant;
        q->block[0] = q->block[1] = r->block;
        return 0;
    }
    return -1;
}

vc_status vc__quant_settings_check(const vc_quant *q, vc_error *err)
{
    const vc_weight_row *r = vc_weight_row_get(q->format);
    if (!r) return vc_set_error(err, VC_ERR_USAGE, O("weights"), "unknown storage format");
    bool bits_ok = !r->bits || (q->bits >= 0 && q->bits < 32 && (r->bits & (1u << q->bits)));
    bool group_ok = q->group == -1 || (q->group >= 1 && q->group <= VC_MAX_DIM_SIZE);
    if (r->blocks) { /* a power of two among the row's */
        group_ok = q->group >= 1 && q->group <= (INT64_C(1) << 31) && !(q->group & (q->group - 1));
        for (int k = 0; group_ok && k < 32; k++)
            if (q->group == INT64_C(1) << k) group_ok = (r->blocks >> k) & 1u;
    }
    if (!bits_ok) return vc_set_error(err, VC_ERR_USAGE, O("weights"), "%s: %lld bits is not a supported width", r->name, (long long)q->bits);
    if (!group_ok) return vc_set_error(err, VC_ERR_USAGE, O("weights"), "%s: group/block size %lld is not supported", r->name, (long long)q->group);
    if (r->blocked && (q->block[0] < 1 || q->block[1] < 1 || q->block[0] > VC_MAX_DIM_SIZE || q->block[1] > VC_MAX_DIM_SIZE))
        return vc_set_error(err, VC_ERR_USAGE, O("weights"), "%s: the block sizes must be positive", r->name);
    return VC_OK;
}

/* transformers' replace functions skip a module when a key of
 * modules_to_not_convert is in its name (`key in current_key_name`): here a
 * key matching whole dot-separated parts of the layer's name. */
static bool skipped(const char *name, const char *keys)
{
    if (!name) return false;
    size_t n = strlen(name);
    for (const char *k = keys; *k;) {
        const char *e = strchr(k, ',');
        size_t len = e ? (size_t)(e - k) : strlen(k);
        for (size_t i = 0; len && i + len <= n; i++)
            if ((i == 0 || name[i - 1] == '.') && (i + len == n || name[i + len] == '.') && !strncmp(name + i, k, len))
                return true;
        k += len + (e ? 1 : 0);
    }
    return false;
}

vc_status vc__quant_assign(vc_model *m, vc_error *err)
{
    const vc_quant *q = vc__model_quant(m);
    const vc_weight_row *r = vc_weight_row_get(q->format);
    if (!r || q->format == VC_WEIGHTS_DENSE) return VC_OK;
    /* get_keys_to_not_convert: the module of the model's last parameter
     * (the LM head, or GPT-NeoX's embed_out) stays in 16-bit, as do tied
     * weights (a tied Linear's weight is its Embedding's, not a Linear's) */
    int last = -1;
    size_t converted = 0;
    for (size_t i = m->npar; i-- > 0 && last < 0;)
        if (!(m->par[i].flags & VC_PARAM_ADAPTER)) last = m->par[i].owner;
    for (size_t i = 0; i < m->npar; i++) {
        vc_param_entry *p = &m->par[i];
        const vc_inst *in = &m->inst[p->owner];
        /* the module's name: the layer's, and for a kind holding several
         * Linear modules (SparseMoE: gate, experts.0.w1) the parameter's prefix */
        char full[300];
        size_t pl = strlen(p->name) > 7 ? strlen(p->name) - 7 : 0; /* without ".weight" */
        if (p->flags & (VC_PARAM_EXPERTS | VC_PARAM_LLAMA4_EXPERTS)) { /* experts.gate_up_proj: the module is experts (FP8Experts) */
            const char *dot = strrchr(p->name, '.');
            pl = dot ? (size_t)(dot - p->name) : 0;
        }
        snprintf(full, sizeof full, "%s%s%.*s", in->name ? in->name : "", in->name && pl ? "." : "", (int)pl, p->name);
        /* transformers' _replace_with_fp8_linear (finegrained_fp8.py @0095b976) swaps the module of any
         * parameter named gate_up_proj for FP8Expert(config=model.config): FP8Expert's gate_up_proj is
         * [E, 2I, H] and its forward(hidden_states, top_k_index, top_k_weights), which Llama4TextMoe's
         * self.experts(routed_in) cannot call (modeling_llama4.py @000c33fd): refused, not estimated */
        if (p->flags & VC_PARAM_LLAMA4_EXPERTS && (q->format == VC_WEIGHTS_FP8 || q->format == VC_WEIGHTS_FP8_BLOCK) &&
            !skipped(full, q->skip))
            return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config",
                                "%s (layer %s): transformers' finegrained FP8 replaces Llama4TextExperts by FP8Expert, "
                                "whose forward Llama4TextMoe cannot call; Llama 4's FP8 experts are modelled as "
                                "fbgemm_fp8 (" OV("weights", "fp8-channel") ")", r->name, in->path);
        /* stacked experts (VC_PARAM_EXPERTS): the FP8 formats (transformers replace_with_fp8_linear swaps the
         * experts module for FP8Experts) and MXFP4, which replaces them alone (gpt-oss's GptOssExperts);
         * bitsandbytes, GPTQ and AWQ replace nn.Linear modules alone */
        bool mx = q->format == VC_WEIGHTS_MXFP4;
        bool experts = p->flags & VC_PARAM_EXPERTS && (mx || q->format == VC_WEIGHTS_FP8 || q->format == VC_WEIGHTS_FP8_BLOCK);
        /* replace_with_fbgemm_fp8_linear (fbgemm_fp8.py @000c33fd): a module whose class is Llama4TextExperts
         * becomes FbgemmFp8Llama4TextExperts (no other stacked experts: they stay 16-bit), unless
         * should_convert_module finds it in modules_to_not_convert */
        experts |= p->flags & VC_PARAM_LLAMA4_EXPERTS && q->format == VC_WEIGHTS_FP8_CHANNEL;
        bool linear = !mx && p->flags & VC_PARAM_LINEAR && p->owner != last;
        if (!(linear || experts) || skipped(full, q->skip)) continue;
        char why[300];
        if (r->misfit && r->misfit(p, q, why, sizeof why))
            return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config", "%s (layer %s): %s",
                                r->name, in->path, why);
        /* a modules_to_save copy of a quantized Linear (the only trained Linear weight under PEFT):
         * _set_layer_requires_grad on Params4bit / Int8Params, integer storage, fails */
        if (p->trainable && vc__peft_on(&m->lora))
            return vc_set_error(err, VC_ERR_USAGE, O("modules_to_save"), "%s is stored as %s: a quantized layer cannot be trained in "
                                "full (its integer weight takes no gradient)", in->name ? in->name : in->path, r->name);
        p->fmt = (uint8_t)q->format;
        converted++;
        if (p->trainable) { /* Params4bit / Int8Params: requires_grad=False */
            p->trainable = false;
            m->ntrainable -= p->numel;
        }
    }
    if (q->format == VC_WEIGHTS_MXFP4 && converted == 0) /* replace_with_mxfp4_linear swaps GptOssExperts only */
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config",
                            "mxfp4 stores gpt-oss's stacked experts (GptOssExperts); this model has none");
    return VC_OK;
}

vc_status vc__quant_check(const vc_model *m, const vc_options *o, vc_error *err)
{
    vc_weights w = VC_WEIGHTS_DENSE;
    for (size_t i = 0; i < m->npar && w == VC_WEIGHTS_DENSE; i++) w = (vc_weights)m->par[i].fmt;
    if (w == VC_WEIGHTS_DENSE) return VC_OK;
    const vc_precision_row *pr = vc_precision_row_get(o->precision);
    if (pr && (pr->param_dt == VC_DT_F32 || pr->master || pr->amp_dt != VC_DT_F32))
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : O("precision"),
                            "%s weights%s keep the other parameters and the compute in 16-bit (torch_dtype, bnb_4bit_compute_dtype): "
                            "use " OV("precision", "bf16") " or fp16, not %s", vc_weights_name(w),
                            m->has_quant ? "" : " (the config's quantization_config)", vc_precision_name(o->precision));
    /* --peft over quantized weights: DoRA's dequantize_module_weight (peft utils/integrations.py) is
     * modelled for bitsandbytes' Params4bit and Int8Params; IA3's bnb layers (tuners/ia3/bnb.py) not */
    if (vc__peft_on(&m->lora) && (m->lora.method == VC_PEFT_IA3 || (m->lora.method == VC_PEFT_DORA && rows[w].lora == VC_LORA_LINEAR)))
        return vc_set_error(err, VC_ERR_USAGE, O("peft"), "%s over %s weights is not modelled%s", vc_peft_row_get(m->lora.method)->name,
                            vc_weights_name(w), m->lora.method == VC_PEFT_DORA ? " (DoRA is, over nf4, fp4 and int8)" : "");
    if (o->mode == VC_MODE_TRAIN && !vc__peft_on(&m->lora))
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : O("mode"),
                            "%s weights are frozen: training them needs " O("lora") " (transformers refuses to fine-tune a purely "
                            "quantized model), or use " OV("mode", "infer"), vc_weights_name(w));
    if (o->mode == VC_MODE_TRAIN && !rows[w].trains) {
        char names[128] = "";
        int n = 0, k = 0;
        for (int f = 1; f < VC_WEIGHTS__N; f++) n += rows[f].trains; /* the formats a LoRA trains over (dense aside) */
        for (int f = 1; f < VC_WEIGHTS__N; f++)
            if (rows[f].trains) {
                size_t l = strlen(names);
                snprintf(names + l, sizeof names - l, "%s%s", ++k == 1 ? "" : k == n ? " and " : ", ", rows[f].name);
            }
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : O("mode"),
                            "%s weights are modelled for inference only (" OV("mode", "infer") "); LoRA training is modelled on %s",
                            vc_weights_name(w), names);
    }
    return VC_OK;
}

const vc_quant *vc__model_quant(const vc_model *m) { return m->has_quant ? &m->quant : &m->cfg_quant; }

vc_weights vc_model_weights(const vc_model *m, vc_quant *q)
{
    const vc_quant *e = vc__model_quant(m);
    if (q) *q = *e;
    return e->format;
}

/* From the settings the format has: bits and a group (gptq, awq), blocks (bitsandbytes), a 2-D block (fp8-block). */
void vc_quant_describe(const vc_quant *q, char *buf, size_t n)
{
    const vc_weight_row *r = vc_weight_row_get(q->format);
    const char *name = vc_weights_name(q->format);
    if (r && r->bits) snprintf(buf, n, "%s%lld (group %lld)", name, (long long)q->bits, (long long)q->group);
    else if (r && r->blocks) snprintf(buf, n, "%s (block %lld%s)", name, (long long)q->group, q->double_quant ? ", double quant" : "");
    else if (r && r->blocked) snprintf(buf, n, "%s (%lldx%lld)", name, (long long)q->block[0], (long long)q->block[1]);
    else snprintf(buf, n, "%s", name);
}

/* ---- a config.json's quantization_config (transformers'
 * utils/quantization_config.py: BitsAndBytesConfig, GPTQConfig, AwqConfig,
 * FineGrainedFP8Config, FbgemmFp8Config, as to_dict() writes them) */

static vc_status qc_fail(vc_error *err, const char *key, const char *fmt, const char *a, const char *b)
{
    char path[128];
    snprintf(path, sizeof path, "quantization_config%s%s", key ? "." : "", key ? key : "");
    return vc_set_error(err, VC_ERR_MODEL, path, fmt, a, b);
}

/* An integer key: *out unchanged when absent; an error when not an integer in [min, max]. */
static vc_status qc_int(const cJSON *qc, const char *key, int64_t min, int64_t max, int64_t *out, vc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(qc, key);
    int64_t x;
    if (!v || cJSON_IsNull(v)) return VC_OK;
    if (vc__json_int(v, &x) || x < min || x > max) {
        char lo[32], hi[32];
        snprintf(lo, sizeof lo, "%lld", (long long)min);
        snprintf(hi, sizeof hi, "%lld", (long long)max);
        return qc_fail(err, key, "expected an integer from %s to %s", lo, hi);
    }
    *out = x;
    return VC_OK;
}

static bool qc_bool(const cJSON *qc, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(qc, key);
    return cJSON_IsTrue(v);
}

/* modules_to_not_convert (llm_int8_skip_modules for bitsandbytes): a list of names. */
static vc_status qc_skip(const cJSON *qc, const char *key, vc_quant *q, vc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(qc, key), *e;
    if (!v || cJSON_IsNull(v)) return VC_OK;
    if (!cJSON_IsArray(v)) return qc_fail(err, key, "expected a list of module names%s%s", "", "");
    cJSON_ArrayForEach(e, v) {
        size_t used = strlen(q->skip);
        if (!cJSON_IsString(e)) return qc_fail(err, key, "expected a list of module names%s%s", "", "");
        if (used + strlen(e->valuestring) + 2 > sizeof q->skip)
            return qc_fail(err, key, "the names are longer than %s characters in all%s", "511", "");
        snprintf(q->skip + used, sizeof q->skip - used, "%s%s", used ? "," : "", e->valuestring);
    }
    return VC_OK;
}

static vc_status qc_bnb(const cJSON *qc, vc_quant *q, vc_error *err)
{
    bool b4 = qc_bool(qc, "load_in_4bit") || qc_bool(qc, "_load_in_4bit");
    bool b8 = qc_bool(qc, "load_in_8bit") || qc_bool(qc, "_load_in_8bit");
    if (b4 == b8) return qc_fail(err, "load_in_4bit", "bitsandbytes needs exactly one of load_in_4bit and load_in_8bit true%s%s", "", "");
    if (b8) {
        q->format = VC_WEIGHTS_INT8;
        return qc_skip(qc, "llm_int8_skip_modules", q, err);
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(qc, "bnb_4bit_quant_type");
    /* BitsAndBytesConfig: bnb_4bit_quant_type="fp4", bnb_4bit_use_double_quant=False by default */
    if (t && !(cJSON_IsString(t) && (!strcmp(t->valuestring, "nf4") || !strcmp(t->valuestring, "fp4"))))
        return qc_fail(err, "bnb_4bit_quant_type", "expected \"nf4\" or \"fp4\"%s%s", "", "");
    q->format = t && !strcmp(t->valuestring, "nf4") ? VC_WEIGHTS_NF4 : VC_WEIGHTS_FP4;
    q->group = 64; /* Linear4bit -> Params4bit(blocksize=64) */
    q->double_quant = qc_bool(qc, "bnb_4bit_use_double_quant");
    return qc_skip(qc, "llm_int8_skip_modules", q, err);
}

static vc_status qc_gptq_awq(const cJSON *qc, bool awq, vc_quant *q, vc_error *err)
{
    vc_status st;
    q->format = awq ? VC_WEIGHTS_AWQ : VC_WEIGHTS_GPTQ;
    q->bits = -1;
    if ((st = qc_int(qc, "bits", 2, 8, &q->bits, err)) || (awq && (st = qc_int(qc, "w_bit", 4, 4, &q->bits, err))) ||
        (st = qc_int(qc, "group_size", -1, INT64_C(1) << 40, &q->group, err)) ||
        (awq && (st = qc_int(qc, "q_group_size", -1, INT64_C(1) << 40, &q->group, err))))
        return st;
    if (q->bits < 0) return qc_fail(err, "bits", "missing: the bits per weight%s%s", "", "");
    if (!(rows[q->format].bits & (1u << q->bits)))
        return qc_fail(err, "bits", awq ? "AWQ's WQLinear_GEMM supports 4 bits only%s%s" : "GPTQ supports 2, 3, 4 and 8 bits%s%s", "", "");
    if (q->group == 0 || q->group < -1) return qc_fail(err, "group_size", "expected a positive integer or -1%s%s", "", "");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(qc, "version");
    if (awq && ver && !(cJSON_IsString(ver) && !strcasecmp(ver->valuestring, "gemm")))
        return qc_fail(err, "version", "only AWQ's GEMM layout (WQLinear_GEMM) is modelled%s%s", "", "");
    return qc_skip(qc, "modules_to_not_convert", q, err);
}
static vc_status qc_gptq(const cJSON *qc, vc_quant *q, vc_error *err) { return qc_gptq_awq(qc, false, q, err); }
static vc_status qc_awq(const cJSON *qc, vc_quant *q, vc_error *err) { return qc_gptq_awq(qc, true, q, err); }

static vc_status qc_fp8_fbgemm(const cJSON *qc, bool fbgemm, vc_quant *q, vc_error *err)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(qc, "weight_block_size");
    q->format = fbgemm ? VC_WEIGHTS_FP8_CHANNEL : VC_WEIGHTS_FP8;
    if (!fbgemm && b && !cJSON_IsNull(b)) {
        int64_t v[2];
        if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) != 2 || vc__json_int(cJSON_GetArrayItem(b, 0), &v[0]) ||
            vc__json_int(cJSON_GetArrayItem(b, 1), &v[1]) || v[0] < 1 || v[1] < 1)
            return qc_fail(err, "weight_block_size", "expected two positive integers, e.g. [128, 128]%s%s", "", "");
        q->format = VC_WEIGHTS_FP8_BLOCK;
        q->block[0] = v[0];
        q->block[1] = v[1];
    }
    return qc_skip(qc, "modules_to_not_convert", q, err);
}
static vc_status qc_fp8(const cJSON *qc, vc_quant *q, vc_error *err) { return qc_fp8_fbgemm(qc, false, q, err); }

/* Mxfp4Config (utils/quantization_config.py): modules_to_not_convert, dequantize (false by
 * default); dequantize true loads the experts as bf16 (the dense model). */
static vc_status qc_mxfp4(const cJSON *qc, vc_quant *q, vc_error *err)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(qc, "dequantize");
    if (d && !cJSON_IsNull(d) && !cJSON_IsBool(d)) return qc_fail(err, "dequantize", "expected true or false%s%s", "", "");
    q->format = cJSON_IsTrue(d) ? VC_WEIGHTS_DENSE : VC_WEIGHTS_MXFP4;
    return qc_skip(qc, "modules_to_not_convert", q, err);
}
static vc_status qc_fbgemm(const cJSON *qc, vc_quant *q, vc_error *err) { return qc_fp8_fbgemm(qc, true, q, err); }

/* The reader of the first row whose method the config names (rows[].method). */
vc_status vc__quant_from_config(const cJSON *cfg, vc_quant *q, vc_error *err)
{
    const cJSON *qc = cJSON_GetObjectItemCaseSensitive(cfg, "quantization_config");
    memset(q, 0, sizeof *q);
    q->group = 128; /* GPTQConfig / AwqConfig group_size */
    if (!qc || cJSON_IsNull(qc)) return VC_OK;
    if (!cJSON_IsObject(qc)) return qc_fail(err, NULL, "expected an object%s%s", "", "");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(qc, "quant_method");
    const char *name = cJSON_IsString(m) ? m->valuestring : NULL;
    if (!name && (qc_bool(qc, "load_in_4bit") || qc_bool(qc, "load_in_8bit"))) name = "bitsandbytes";
    if (m && !name) return qc_fail(err, "quant_method", "expected a string such as \"bitsandbytes\"%s%s", "", "");
    if (!name) return qc_fail(err, "quant_method", "missing: the quantization method%s%s", "", "");
    char methods[128] = "";
    for (int w = 0; w < VC_WEIGHTS__N; w++) {
        if (!rows[w].method) continue;
        if (!strcmp(name, rows[w].method)) return rows[w].from_config(qc, q, err);
        bool again = false; /* a method several rows share (bitsandbytes: int8, nf4, fp4) is listed once */
        for (int v = 0; v < w; v++) again |= rows[v].method && !strcmp(rows[v].method, rows[w].method);
        size_t l = strlen(methods);
        if (!again) snprintf(methods + l, sizeof methods - l, "%s%s", l ? ", " : "", rows[w].method);
    }
    return qc_fail(err, "quant_method", "\"%.60s\" is not modelled (%s are)", name, methods);
}
