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
 *   compressed-tensors (github neuralmagic/compressed-tensors @52792be0): quantization/quant_args.py
 *     QuantizationArgs (validate_model_after, pytorch_dtype), quantization/quant_scheme.py (the
 *     presets), quantization/lifecycle/apply.py apply_quantization_config, lifecycle/initialize.py
 *     initialize_module_for_quantization, initialize_qparams, linear/compressed_linear.py
 *     CompressedLinear.from_linear and forward, compressors/quantized_compressors/pack_quantized.py and
 *     naive_quantized.py compression_param_info, utils/match.py is_match, _match_name, _match_class;
 *     transformers quantizers/quantizer_compressed_tensors.py @1f6ed71f CompressedTensorsHfQuantizer;
 *     vLLM compressed_tensors/schemes/compressed_tensors_w8a8_fp8.py @00cb05c3 CompressedTensorsW8A8Fp8,
 *     compressed_tensors_w8a8_int8.py @00ba7ff1 CompressedTensorsW8A8Int8.create_weights and
 *     process_weights_after_loading, utils/fp8_utils.py create_fp8_scale_parameter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <regex.h>
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

/* ---- MXFP4 experts under vLLM (--serve): Mxfp4MoEMethod (vllm-project/vllm @ 007d5005,
 * vllm/model_executor/layers/quantization/mxfp4.py) on the card's backend (src/engine/serve.c
 * vc__vllm_mxfp4_backend). create_weights makes, per FusedMoE layer of the rank (E experts, I_pad / H_pad the
 * backend's round_up of intermediate_size_per_partition and hidden_size: serve.c):
 *   w13_weight uint8 [E, 2 I_pad, H_pad / 2], w13_weight_scale uint8 [E, 2 I_pad, H_pad / 32],
 *   w13_bias bfloat16 [E, 2 I_pad], w2_weight uint8 [E, H_pad, I_pad / 2], w2_weight_scale uint8
 *   [E, H_pad, I_pad / 32], w2_bias bfloat16 [E, H_pad];
 * process_weights_after_loading then leaves, per backend:
 *  - TRITON (Hopper; ROCm): _swizzle_mxfp4's re-laid weights and scales (the same bytes, as mxfp4_tensors
 *    says of transformers' matmul_ogs), w13_bias and w2_bias replaced by .to(torch.float32) copies;
 *  - SM100_FI_MXFP4_BF16 (B200): the shuffled weights and scales torch.stack()ed (the same shapes, the scales
 *    viewed as float8_e4m3fn: the same bytes), the biases .to(torch.float32), shuffled and stacked:
 *    float32 [E, 2 I_pad] and [E, H_pad]; and gemm1_alpha, gemm1_beta, gemm1_clamp_limit float32 [E] each;
 *  - MARLIN (other cards): prepare_moe_fp4_layer_for_marlin (quantization/utils/marlin_utils_fp4.py, read at
 *    00d52e93: not stored at 007d5005): gptq_marlin_repack's int32 [size_k / 16, size_n x 2] per expert
 *    (size_k x size_n / 2 bytes: the same; _pad_to_marlin_tile's 64 adds nothing, 2 I_pad and H_pad being
 *    multiples of 256), the scales marlin_permute_scales'd and made float8_e8m0fnu (one byte each: the same),
 *    the biases .to(params_dtype) (bfloat16: the same), and layer.workspace = marlin_make_workspace_new(device,
 *    4): int32 [4 x multiprocessors] per layer.
 * The checkpoint's experts here are gate_up_proj [E, H, 2I] and down_proj [E, I, H] (I the split's,
 * already I_pad at tp > 1: src/hf/hf_tp.c; at tp 1 the checkpoint's, padded here), their biases dense
 * parameters of the model's dtype [E, 2I] and [E, H]: what the kept biases hold beyond those is counted
 * here, with the projection (a multiple of the allocator's 512 bytes in gpt-oss's checkpoints, E 32 or 128).
 * The repacking's and shuffling's temporaries (one layer's copies: the per-expert lists beside the
 * stacked result) run in load_model, before the profiling run that determine_available_memory measures,
 * and are not counted; nor is FusedMoE's padding of the hidden states to H_pad in the forward. */
static int64_t rup(int64_t v, int64_t m) { return m > 1 ? cdiv(v, m) * m : v; }

static int mxfp4_vllm_tensors(const vc_model *m, size_t i, const vc_quant *q, vc_dtype dense, const vc_gpu *dev,
                              vc_tspec out[VC_QUANT_MAX])
{
    const vc_param_entry *p = &m->par[i];
    const int b = vc__vllm_mxfp4_backend(dev);
    if (b == VC_MXFP4_NONE || p->nd != 3) return mxfp4_tensors(p, q, dense, out);
    const bool down = strstr(p->name, "down") != NULL; /* down_proj [E, I, H], else gate_up_proj */
    const int64_t E = p->dims[0], I = down ? p->dims[1] : p->dims[2] / 2, H = down ? p->dims[2] : p->dims[1];
    const int64_t Ip = rup(I, vc__vllm_mxfp4_pad(b, 0)), Hp = rup(H, vc__vllm_mxfp4_pad(b, 1));
    const int64_t rows = down ? Hp : 2 * Ip, in = down ? Ip : Hp; /* [E, rows, in / 2] and [E, rows, in / 32] */
    const int64_t bias = down ? Hp : 2 * Ip, had = down ? H : 2 * I;
    const vc_dtype bdt = b == VC_MXFP4_MARLIN ? VC_DT_BF16 : VC_DT_F32;
    int k = 0;
    out[k++] = T(E * rows * cdiv(in, 2), VC_DT_U8);
    out[k++] = T(E * rows * cdiv(in, 32), VC_DT_U8);
    const int64_t more = E * bias * (int64_t)vc_dtype_size(bdt) - E * had * (int64_t)vc_dtype_size(dense);
    if (more > 0) out[k++] = T(more, VC_DT_U8); /* the kept bias beyond the model's [E, 2I] / [E, H] */
    if (!down && b == VC_MXFP4_SM100_FI_BF16)
        for (int g = 0; g < 3; g++) out[k++] = T(E, VC_DT_F32); /* gemm1_alpha, gemm1_beta, gemm1_clamp_limit */
    if (!down && b == VC_MXFP4_MARLIN && dev) out[k++] = T(INT64_C(4) * dev->sms, VC_DT_I32); /* the workspace */
    return k;
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

/* ---- compressed-tensors: a config group's weights as transformers' CompressedLinear holds them
 * (run_compressed, CompressedTensorsConfig's default, on a checkpoint whose quantization_status is
 * "compressed": CompressedTensorsHfQuantizer._process_model_before_weight_loading calls
 * apply_quantization_config(model, config, run_compressed=True), which turns each targeted
 * nn.Linear into CompressedLinear.from_linear). In order of registration:
 *   input_scale   [1]   (input_activations static: initialize_qparams "input", strategy tensor)
 *   weight_scale  per strategy (initialize_qparams "weight": tensor (1,), channel (out, 1), group
 *                 (out, strategy_cdiv(in, group_size)), block (cdiv(out, b0), cdiv(in, b1))), in the
 *                 Linear's dtype (scale_dtype = observed_dtype: fp16, bf16 or fp32)
 *   weight_zero_point  the scale's shape, pytorch_dtype() (int8; float8_e4m3fn for type float), when
 *                 symmetric is false (force_zero_point=False for a compressed checkpoint)
 *   weight_g_idx  int32 [in] (actorder "group")
 * then compression_param_info's tensors: naive/int/float-quantized "weight" [out, in] in
 * pytorch_dtype(); pack-quantized weight_packed int32 [out, ceil(in / (32 // num_bits))],
 * weight_shape int32 [2] and, asymmetric with group or channel, weight_zero_point int32
 * [ceil(out / (32 // num_bits)), in // group] in place of the one above.
 * CompressedLinear.forward decompresses on its first call (compressor.decompress_module:
 * dequantize to the scale's dtype) and registers the result as "weight", kept from then on
 * (quantization_status FROZEN): for naive formats it replaces the stored weight, for pack-quantized
 * it is held beside weight_packed. What is modelled is that state, from the first forward on: the
 * dense weight first, then the others. The decompression's own temporaries, during each layer's
 * first call, are not. */
static int64_t ct_scale_n(const vc_param_entry *p, const vc_quant *q)
{
    int64_t o = out_of(p), in = in_of(p);
    switch (q->ct_strategy) {
    case VC_CT_CHANNEL: return lead_of(p) * o;
    case VC_CT_GROUP: return lead_of(p) * o * cdiv(in, q->group);
    case VC_CT_BLOCK: return lead_of(p) * cdiv(o, q->block[0]) * cdiv(in, q->block[1]);
    default: return lead_of(p);
    }
}

static int ct_tensors(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX])
{
    /* initialize_qparams: scale_dtype = observed_dtype, bf16 unless one of fp16, bf16, fp32 (fp64) */
    vc_dtype sdt = dense == VC_DT_F16 || dense == VC_DT_BF16 || dense == VC_DT_F32 ? dense : VC_DT_BF16;
    int64_t in = in_of(p), o = out_of(p), s = ct_scale_n(p, q), pf = 32 / (q->bits > 0 ? q->bits : 8);
    bool packed_zp = q->ct_packed && q->ct_asymmetric && (q->ct_strategy == VC_CT_GROUP || q->ct_strategy == VC_CT_CHANNEL);
    int k = 0;
    out[k++] = T(p->numel, sdt); /* the decompressed weight (CompressedLinear.forward) */
    if (q->ct_input == 2) out[k++] = T(1, sdt);
    out[k++] = T(s, sdt);
    if (q->ct_asymmetric && !packed_zp) out[k++] = T(s, q->ct_float ? VC_DT_F8 : VC_DT_I8);
    if (q->ct_actorder) out[k++] = T(in, VC_DT_I32);
    if (q->ct_packed) {
        out[k++] = T(o * cdiv(in, pf), VC_DT_I32);
        out[k++] = T(2, VC_DT_I32);
        if (packed_zp) out[k++] = T(cdiv(o, pf) * (in / (q->ct_strategy == VC_CT_GROUP ? q->group : in)), VC_DT_I32);
    }
    return k;
}

/* ---- compressed-tensors weight-only schemes under vLLM (--serve): W4A16 / W8A16, pack-quantized int
 * weights per channel or group without input quantization. vLLM's CompressedTensorsConfig.
 * _get_scheme_from_parts returns CompressedTensorsWNA16 for them (_is_wNa16_group_channel: strategy
 * channel or group, input_activations null, static weights; format pack-quantized), whose create_weights
 * (schemes/compressed_tensors_wNa16.py @ vllm-project/vllm main, the MPLinearKernel version) registers,
 * per vLLM layer of the rank ([N, K]: output_size_per_partition, input_size_per_partition):
 *   weight_packed      int32 [N, ceil(K x num_bits / 32)]  (PackedvLLMParameter, packed along the input)
 *   weight_scale       params_dtype (the model's) [N, K / group_size], [N, 1] per channel
 *                      (marlin_repeat_scales_on_all_ranks: act order, or channel and row-parallel, keep
 *                      input_size // group_size columns on every rank: the same 1 column per channel)
 *   weight_shape       int64 [2]
 *   weight_zero_point  int32 [ceil(N x num_bits / 32), K / group_size] when symmetric is false
 *   weight_g_idx       int32 [K] with actorder "group"
 * and picks its kernel with choose_mp_linear_kernel (vllm/model_executor/kernels/linear/__init__.py
 * @db0b8267): the first of _POSSIBLE_KERNELS[CUDA] = CutlassW4A8 (fp8 activations only: not these),
 * Machete, AllSpark, Marlin, Conch, Exllama whose get_min_capability and can_implement admit the layer.
 * vct_kernel follows those checks; process_weights_after_loading then leaves, per kernel:
 *  - MacheteLinearKernel (mixed_precision/machete.py @b4ca1ac1; can_implement: compute capability 9.0
 *    exactly, no act order when the input is split over ranks, group_size in
 *    query_machete_supported_group_sizes(fp16 / bf16) = [-1, 64, 128], machete_utils
 *    check_machete_supports_shape: K % 64, N % 128): machete_prepack_B's repacked weight (the same
 *    bytes, a new tensor replacing the old: _transform_param), the scales made contiguous in [K / g, N]
 *    (the same bytes), zero points pre-multiplied by the scales in the scales' dtype [K / g, N]
 *    (transform_w_zp), and with act order weight_g_idx kept beside perm = argsort(g_idx).to(int)
 *    int32 [K], held by self.act_perm;
 *  - AllSparkLinearKernel (allspark_utils.py check_allspark_supported_dtype_shape: compute capability
 *    8.0 to 8.9, group_size -1, 8-bit symmetric, no act order): its own repacking, not followed (refused);
 *  - MarlinLinearKernel (mixed_precision/marlin.py @a2f9569f; get_min_capability 75; can_implement:
 *    4 or 8 bits, group_size in MARLIN_SUPPORTED_GROUP_SIZES [-1, 32, 64, 128], check_marlin_supports_shape:
 *    N % 64, K % 128, K % group_size): gptq_marlin_repack's weight and marlin_permute_scales' scales (the
 *    same bytes), marlin_zero_points' int32 [K / g, N / (32 / bits)] (the same bytes), with act order
 *    marlin_sort_g_idx's sorted g_idx and g_idx_sort_indices, int32 [K] each; the empty g_idx, zero point
 *    and sort indices otherwise (torch.empty(0): no allocation); and self.workspace =
 *    marlin_make_workspace_new(device) (marlin_utils.py: torch.zeros(sms x max_blocks_per_sm, int32),
 *    max_blocks_per_sm 1): int32 [multiprocessors] per layer;
 *  - Conch (the conch-triton-kernels package) and Exllama: not followed (refused).
 * A vLLM layer is a fused one where the model's packed_modules_mapping fuses projections (llama.py
 * LlamaForCausalLM: qkv_proj = q_proj, k_proj, v_proj; gate_up_proj = gate_proj, up_proj): the kernel
 * checks see the fused N, and the per-layer tensors (scales, zero points, g_idx, weight_shape, the
 * workspace) are counted once, with its first projection, over the fused rows; each projection keeps its
 * own part of weight_packed (a multiple of 512 B, the allocator's rounding, in any real checkpoint: the
 * fused tensor's bytes). The repacking's temporaries run in load_model, before the profiling run that
 * determine_available_memory measures (Worker.load_model, then determine_available_memory), and are
 * not counted; nor are the GEMMs' own transients (gptq_marlin_gemm's fp32 reduction buffer). */
enum { VCT_NONE, VCT_MACHETE, VCT_MARLIN, VCT_ALLSPARK };

static bool ct_wna16(const vc_quant *q)
{
    return q->format == VC_WEIGHTS_CT && q->ct_packed && q->ct_input == 0 && !q->ct_float &&
           (q->ct_strategy == VC_CT_GROUP || q->ct_strategy == VC_CT_CHANNEL);
}

/* The module a parameter belongs to, its last name ("q_proj"): the parameter's prefix
 * (shared_expert.gate_proj.weight) or its instance's name (self_attn.q_proj) */
static const char *mod_name(const vc_model *m, const vc_param_entry *p, char *buf, size_t n)
{
    const char *dot = strrchr(p->name, '.');
    if (dot) snprintf(buf, n, "%.*s", (int)(dot - p->name), p->name);
    else snprintf(buf, n, "%s", m->inst[p->owner].name ? m->inst[p->owner].name : "");
    const char *last = strrchr(buf, '.');
    return last ? last + 1 : buf;
}

/* Weight i's vLLM layer: returns the number of the model's weights it fuses (1, or 3 for q_proj's
 * qkv_proj, 2 for gate_proj's gate_up_proj), 0 for a member after the first (k_proj, v_proj, up_proj);
 * *nout: the fused output nout */
static int vllm_layer(const vc_model *m, size_t i, int64_t *nout)
{
    static const char *const qkv[] = {"q_proj", "k_proj", "v_proj"}, *const gu[] = {"gate_proj", "up_proj"};
    char b[160];
    const char *nm = mod_name(m, &m->par[i], b, sizeof b);
    *nout = out_of(&m->par[i]);
    if (!strcmp(nm, "k_proj") || !strcmp(nm, "v_proj") || !strcmp(nm, "up_proj")) {
        for (size_t d = 1; d <= 2 && d <= i; d++) { /* its head just before it: a member */
            char b2[160];
            const char *h = mod_name(m, &m->par[i - d], b2, sizeof b2);
            if (m->par[i - d].fmt == m->par[i].fmt && (!strcmp(h, "q_proj") || !strcmp(h, "gate_proj"))) return 0;
        }
        return 1;
    }
    const char *const *set = !strcmp(nm, "q_proj") ? qkv : !strcmp(nm, "gate_proj") ? gu : NULL;
    int n = !set ? 1 : set == qkv ? 3 : 2, k = 1;
    for (; set && k < n && i + (size_t)k < m->npar; k++) {
        char b2[160];
        const vc_param_entry *s = &m->par[i + (size_t)k];
        if (s->fmt != m->par[i].fmt || strcmp(mod_name(m, s, b2, sizeof b2), set[k]) || in_of(s) != in_of(&m->par[i])) break;
        *nout += out_of(s);
    }
    return set ? k : 1;
}

/* choose_mp_linear_kernel for one vLLM layer of nout x in on dev; *why says why none admits it */
static int vct_kernel(const vc_quant *q, const vc_gpu *dev, int64_t nout, int64_t in, char *why, size_t n)
{
    const int sm = dev ? dev->sm : 0;
    const int64_t g = q->ct_strategy == VC_CT_GROUP ? q->group : -1;
    const bool sym = !q->ct_asymmetric;
    if (sm == 90 && (g == -1 || g == 64 || g == 128) && in % 64 == 0 && nout % 128 == 0) return VCT_MACHETE;
    if (sm >= 80 && sm <= 89 && g == -1 && q->bits == 8 && sym && !q->ct_actorder && in % 16 == 0 && nout % 16 == 0)
        return VCT_ALLSPARK;
    if (sm >= 75 && (g == -1 || g == 32 || g == 64 || g == 128) && nout % 64 == 0 && in % 128 == 0 && (g == -1 || in % g == 0))
        return VCT_MARLIN;
    snprintf(why, n, "%lld x %lld (group_size %lld) on compute capability %d.%d: Machete (9.0, group_size -1, 64 or 128, "
             "in_features %% 64, out_features %% 128) and Marlin (7.5 and up, group_size -1, 32, 64 or 128, out_features %% 64, "
             "in_features %% 128) do not take it; Conch and Exllama are not modelled",
             (long long)nout, (long long)in, (long long)g, sm / 10, sm % 10);
    return VCT_NONE;
}

static int ct_vllm_wna16(const vc_model *m, size_t i, const vc_quant *q, vc_dtype dense, const vc_gpu *dev,
                         vc_tspec out[VC_QUANT_MAX])
{
    const vc_param_entry *p = &m->par[i];
    int64_t nout, in = in_of(p);
    int fused = vllm_layer(m, i, &nout), k = 0;
    out[k++] = T(out_of(p) * cdiv(in * q->bits, 32), VC_DT_I32); /* this projection's part of weight_packed */
    if (!fused) return k;
    char why[400];
    const int kern = vct_kernel(q, dev, nout, in, why, sizeof why); /* vc__quant_vllm_check admitted it */
    const int64_t groups = q->ct_strategy == VC_CT_GROUP ? in / q->group : 1;
    out[k++] = T(nout * groups, dense);   /* weight_scale */
    out[k++] = T(2, VC_DT_I64);           /* weight_shape */
    if (q->ct_asymmetric)                 /* Machete: -scale x zero point in the scales' dtype; Marlin: packed int32 */
        out[k++] = kern == VCT_MACHETE ? T(nout * groups, dense) : T(cdiv(nout * q->bits, 32) * groups, VC_DT_I32);
    if (q->ct_actorder) {                 /* g_idx, and Machete's perm or Marlin's g_idx_sort_indices */
        out[k++] = T(in, VC_DT_I32);
        out[k++] = T(in, VC_DT_I32);
    }
    if (kern == VCT_MARLIN && dev) out[k++] = T(dev->sms, VC_DT_I32); /* marlin_make_workspace_new */
    return k;
}

/* ---- compressed-tensors MoE experts under vLLM (--serve): FusedMoE's quant method is
 * CompressedTensorsMoEMethod.get_moe_method (compressed_tensors_moe/compressed_tensors_moe.py @8a95a688),
 * by the scheme of layer_name + ".0.gate_proj" (ct_assign matches that name). The transformers-v5 stacked
 * weights here are vLLM's w13 [E, 2I, H] (gate_up_proj) and w2 [E, H, I] (down_proj), E the rank's
 * experts, I its intermediate_size_per_partition, H hidden_size:
 *  - W8A8 fp8 (fp8 weights per channel or block, dynamic activations): CompressedTensorsW8A8Fp8MoEMethod
 *    (compressed_tensors_moe_w8a8_fp8.py @d938d56f) create_weights: w13_weight / w2_weight float8_e4m3fn
 *    [E, 2I, H] / [E, H, I]; w13_weight_scale / w2_weight_scale fp32 per channel [E, 2I, 1] / [E, H, 1],
 *    per block [E, 2 cdiv(I, b0), cdiv(H, b1)] / [E, cdiv(H, b0), cdiv(I, b1)] (I % b0 == 0 or a
 *    ValueError: the cdiv of 2I). process_weights_after_loading's convert_to_fp8_moe_kernel_format
 *    (fused_moe/oracle/fp8.py @39aa9c41) leaves them for the TRITON and VLLM_CUTLASS backends, and
 *    FlashInfer's prepare_fp8_moe_layer_for_fi swaps and shuffles them in equal tensors (padding I to a
 *    multiple of 16 first, refused here when it would); the MARLIN backend (GPUs without fp8, compute
 *    capability below 8.9) repacks them to other shapes: refused. DeepGEMM's layout for block weights is
 *    taken as the same bytes (not read).
 *  - W4A16 / W8A16 (pack-quantized, symmetric): CompressedTensorsWNA16MarlinMoEMethod where
 *    check_moe_marlin_supports_layer admits the layer (marlin_utils.py: H % 128 == 0, I % max(64,
 *    group_size) == 0, group_size in [-1, 32, 64, 128], silu experts), else CompressedTensorsWNA16MoEMethod
 *    (Triton; refused). compressed_tensors_moe_wna16_marlin.py @483186f3 create_weights, for the Marlin
 *    backend (FlashInfer's MxInt4 needs VLLM_USE_FLASHINFER_MOE_INT4, off by default, and 10.x):
 *    w13_weight_packed int32 [E, H / pack, 2I], w2_weight_packed int32 [E, I / pack, H], w13_weight_scale
 *    [E, H / g, 2I] and w2_weight_scale [E, I / g, H] in params_dtype (1 group per channel),
 *    w13_weight_shape and w2_weight_shape torch.empty(E, 2) (the default dtype, the model's while vLLM
 *    builds it: set_default_torch_dtype), and four g_idx tensors int32 [E, H] / [E, I]; then
 *    process_weights_after_loading: gptq_marlin_moe_repack and marlin_moe_permute_scales (the same
 *    bytes, replace_parameter), the g_idx tensors replaced by torch.empty((E, 0)) (no allocation) or, with
 *    act order, by the sorted g_idx and sort indices (the same bytes), and layer.workspace =
 *    marlin_make_workspace_new(device, 4): int32 [4 x multiprocessors] per MoE layer. Asymmetric MoE
 *    weights are refused (the method asserts symmetric). */
static bool is_down(const vc_param_entry *p) { return strstr(p->name, "down") != NULL; }

static int ct_vllm_moe(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, const vc_gpu *dev, vc_tspec out[VC_QUANT_MAX])
{
    const int64_t e = lead_of(p), o = out_of(p), in = in_of(p);
    int k = 0;
    if (q->ct_float) {
        out[k++] = T(p->numel, VC_DT_F8);
        out[k++] = T(e * (q->ct_strategy == VC_CT_BLOCK ? cdiv(o, q->block[0]) * cdiv(in, q->block[1]) : o), VC_DT_F32);
        return k;
    }
    out[k++] = T(e * o * cdiv(in * q->bits, 32), VC_DT_I32);              /* w13 / w2_weight_packed */
    out[k++] = T(e * o * (q->ct_strategy == VC_CT_GROUP ? in / q->group : 1), dense); /* the scales */
    out[k++] = T(e * 2, dense);                                              /* w13 / w2_weight_shape */
    if (q->ct_actorder) {                                                    /* sorted g_idx, sort indices */
        out[k++] = T(e * in, VC_DT_I32);
        out[k++] = T(e * in, VC_DT_I32);
    }
    if (!is_down(p) && dev) out[k++] = T(INT64_C(4) * dev->sms, VC_DT_I32); /* the layer's workspace */
    return k;
}

/* NULL when vLLM's method for stacked experts p (the rank's) is one ct_vllm_moe follows, else why not */
static const char *ct_moe_misfit(const vc_model *m, const vc_param_entry *p, const vc_quant *q, const vc_gpu *dev, char *buf, size_t n)
{
    const int64_t inter = is_down(p) ? in_of(p) : out_of(p) / 2, hidden = is_down(p) ? out_of(p) : in_of(p);
    const int sm = dev ? dev->sm : 0;
    if (q->ct_float) {
        if (q->ct_input != 1 || (q->ct_strategy != VC_CT_CHANNEL && q->ct_strategy != VC_CT_BLOCK))
            return "CompressedTensorsW8A8Fp8MoEMethod is modelled for channel or block weights with dynamic activations";
        if (sm < 89) {
            snprintf(buf, n, "on compute capability %d.%d vLLM's FP8 MoE backend is MARLIN, whose repacking is not modelled", sm / 10, sm % 10);
            return buf;
        }
        if (q->ct_strategy == VC_CT_BLOCK && (inter % q->block[0] || (m->tp > 1 && inter % q->block[1]))) {
            snprintf(buf, n, "vLLM refuses the experts' intermediate size per rank %lld: not a multiple of block_structure [%lld, %lld]",
                     (long long)inter, (long long)q->block[0], (long long)q->block[1]);
            return buf;
        }
        if (q->ct_strategy != VC_CT_BLOCK && inter % 16)
            return "FlashInfer's FP8 MoE pads an intermediate size per rank that is not a multiple of 16: not modelled";
        return NULL;
    }
    if (!ct_wna16(q)) return "vLLM's MoE methods other than W8A8 fp8 and WNA16 Marlin are not modelled";
    if (q->ct_asymmetric) return "CompressedTensorsWNA16MarlinMoEMethod takes symmetric weights only";
    const int64_t g = q->ct_strategy == VC_CT_GROUP ? q->group : -1;
    if (sm < 75 || hidden % 128 || inter % (g > 64 ? g : 64) || !(g == -1 || g == 32 || g == 64 || g == 128)) {
        snprintf(buf, n, "check_moe_marlin_supports_layer refuses hidden %lld, intermediate %lld per rank, group_size %lld%s: vLLM "
                 "runs CompressedTensorsWNA16MoEMethod (Triton), not modelled", (long long)hidden, (long long)inter, (long long)g,
                 sm < 75 ? " below compute capability 7.5" : "");
        return buf;
    }
    return NULL;
}

/* The same weights as vLLM keeps them (--serve): CompressedTensorsW8A8Fp8.create_weights (fp8 weights
 * with fp8 activations): weight float8_e4m3fn [out, in] and weight_scale fp32 (create_fp8_scale_parameter:
 * channel [out, 1], block [cdiv(out, b0), cdiv(in, b1)]); CompressedTensorsW8A8Int8.create_weights
 * (int8 weights with int8 activations): weight int8 [out, in], channel weight_scale fp32 [out, 1].
 * process_weights_after_loading transposes the weight (weight.t(), a view: the same bytes). Dynamic
 * activations only: a static input_scale is one per fused layer (qkv_proj), which the per-projection
 * weights here do not have; vc__quant_vllm_check refuses it and the other schemes not followed.
 * Weight-only (W4A16, W8A16): ct_vllm_wna16 above. */
static int ct_vllm_tensors(const vc_model *m, size_t i, const vc_quant *q, vc_dtype dense, const vc_gpu *dev,
                           vc_tspec out[VC_QUANT_MAX])
{
    const vc_param_entry *p = &m->par[i];
    if (p->flags & VC_PARAM_EXPERTS) return ct_vllm_moe(p, q, dense, dev, out);
    if (ct_wna16(q)) return ct_vllm_wna16(m, i, q, dense, dev, out);
    int k = 0;
    out[k++] = T(p->numel, q->ct_float ? VC_DT_F8 : VC_DT_I8);
    out[k++] = T(ct_scale_n(p, q), VC_DT_F32);
    return k;
}

/* pack-quantized: 32 // num_bits values per int32 (pack_to_int32); the checkpoint's groups and blocks
 * divide the weight (strategy_cdiv warns otherwise: the scales then cover a ragged last group) */
static const char *ct_misfit(const vc_param_entry *p, const vc_quant *q, char *buf, size_t n)
{
    if (q->ct_strategy == VC_CT_GROUP && in_of(p) % q->group) {
        snprintf(buf, n, "compressed-tensors: group_size %lld does not divide in_features %lld", (long long)q->group,
                 (long long)in_of(p));
        return buf;
    }
    if (q->ct_strategy == VC_CT_BLOCK && (out_of(p) % q->block[0] || in_of(p) % q->block[1])) {
        snprintf(buf, n, "compressed-tensors: block_structure [%lld, %lld] does not divide the weight [%lld, %lld]",
                 (long long)q->block[0], (long long)q->block[1], (long long)out_of(p), (long long)in_of(p));
        return buf;
    }
    return NULL;
}

/* The config.json readers (the rows' from_config, below), by quant_method. */
static vc_status qc_mxfp4(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_bnb(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_gptq(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_awq(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_fp8(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_fbgemm(const cJSON *qc, vc_quant *q, vc_error *err);
static vc_status qc_ct(const cJSON *qc, vc_quant *q, vc_error *err);

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
        .lora = VC_LORA_LINEAR, .tensors = mxfp4_tensors, .vllm_tensors = mxfp4_vllm_tensors, .misfit = mxfp4_misfit,
    },
    /* compressed-tensors (llm-compressor's checkpoints): CompressedLinear after its first forward; under
     * --weights, the FP8_DYNAMIC preset (quant_scheme.py: fp8 weights per channel, dynamic per-token fp8
     * activations). CompressedTensorsHfQuantizer.update_torch_dtype: torch_dtype None loads float16 */
    [VC_WEIGHTS_CT] = {
        .name = "compressed-tensors", .summary = "compressed-tensors CompressedLinear: the decompressed weight kept beside its scales (and packed int4)",
        .compute = VC_PREC_FP16, .method = "compressed-tensors", .from_config = qc_ct,
        .lora = VC_LORA_LINEAR, .tensors = ct_tensors, .vllm_tensors = ct_vllm_tensors, .misfit = ct_misfit,
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
        if (q->format == VC_WEIGHTS_CT) { /* quant_scheme.py FP8_DYNAMIC: fp8 weights per channel, dynamic activations */
            q->bits = 8;
            q->ct_float = 1;
            q->ct_strategy = VC_CT_CHANNEL;
            q->ct_input = 1;
            q->group = -1;
        }
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

/* ---- compressed-tensors' targets and ignore (utils/match.py is_match): an entry matches a module
 * when it equals the module's qualified name, when it starts with "re:" and the rest matches the
 * name from its start (_match_name: re.match), or when it names a class of the module
 * (_match_class: "Linear" for an nn.Linear). Targeted and not ignored: quantized. The qualified
 * name is the one transformers gives the module (model.layers.3.mlp.down_proj): the generated
 * model's layer names along the instance's path, with each repeat copy's index. (Families whose
 * generated layers are not one repeated block, Llama 4's, name a layer's modules without the
 * layers.N prefix: a pattern that needs it does not match them.) */
static bool qual_name(const cJSON *root, const char *path, char *out, size_t n)
{
    const cJSON *cur = root;
    const char *s = path;
    out[0] = 0;
    while (root && *s) {
        char key[64];
        size_t k = 0;
        while (*s && *s != '[' && *s != '.' && k < sizeof key - 1) key[k++] = *s++;
        key[k] = 0;
        if (*s != '[') return false;
        char *e;
        long i = strtol(s + 1, &e, 10);
        if (*e != ']') return false;
        s = e + 1;
        const cJSON *node = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cur, key), (int)i);
        if (!node) return false;
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(node, "name");
        size_t used = strlen(out);
        if (cJSON_IsString(nm)) snprintf(out + used, n - used, "%s%s", used ? "." : "", nm->valuestring);
        if (*s == '[') { /* a repeat copy */
            long c = strtol(s + 1, &e, 10);
            if (*e != ']') return false;
            s = e + 1;
            used = strlen(out);
            snprintf(out + used, n - used, "%s%ld", used ? "." : "", c);
        }
        if (*s == '.') s++;
        cur = node;
    }
    return root != NULL;
}

/* Whether one of the '\n'-separated entries matches module `name` of class "Linear" (linear) or other;
 * -1 (err set, naming key) for a pattern regcomp cannot read. */
static int ct_match(const char *entries, const char *name, bool linear, const char *key, vc_error *err)
{
    for (const char *k = entries; *k;) {
        const char *e = strchr(k, '\n');
        size_t len = e ? (size_t)(e - k) : strlen(k);
        char pat[520];
        snprintf(pat, sizeof pat, "%.*s", (int)len, k);
        k += len + (e ? 1 : 0);
        if (!strncmp(pat, "re:", 3)) {
            char anchored[3200]; /* each of 520 bytes becomes at most 6 */
            regex_t re;
            /* re.match: from the start; Python's \d, \w and \s as POSIX classes (ERE leaves them undefined) */
            size_t a = 0;
            anchored[a++] = '^';
            anchored[a++] = '(';
            for (const char *c = pat + 3; *c && a < sizeof anchored - 16; c++) {
                const char *cls = c[0] == '\\' ? (c[1] == 'd' ? "[0-9]" : c[1] == 'w' ? "[[:alnum:]_]" : c[1] == 's' ? "[[:space:]]" : NULL) : NULL;
                if (cls) {
                    a += (size_t)snprintf(anchored + a, sizeof anchored - a, "%s", cls);
                    c++;
                } else {
                    if (c[0] == '\\' && c[1]) anchored[a++] = *c++;
                    anchored[a++] = *c;
                }
            }
            anchored[a++] = ')';
            anchored[a] = 0;
            if (strstr(pat, "(?") || regcomp(&re, anchored, REG_EXTENDED | REG_NOSUB))
                return vc_set_error(err, VC_ERR_MODEL, key, "\"%.60s\": a pattern beyond POSIX extended regular expressions", pat),
                       -1;
            int hit = regexec(&re, name, 0, NULL, 0) == 0;
            regfree(&re);
            if (hit) return 1;
        } else if (!strcmp(pat, name) || (linear && (!strcmp(pat, "Linear") || !strcmp(pat, "Module")))) {
            return 1;
        } else if (!strchr(name, '.') && strlen(pat) > strlen(name) + 1 && !strcmp(pat + strlen(pat) - strlen(name), name) &&
                   pat[strlen(pat) - strlen(name) - 1] == '.') {
            /* a top-level module of the text model under a wrapper's prefix: Llama4ForConditionalGeneration's
             * language_model.lm_head is the generated model's lm_head */
            return 1;
        }
    }
    return 0;
}

/* One parameter under compressed-tensors: quantized when its module is an nn.Linear that the group's
 * targets match and ignore does not (apply_quantization_config: CompressedLinear.from_linear replaces
 * torch.nn.Linear modules only). Under --weights (no targets): every Linear but the model's last
 * module, as the other formats. */
static vc_status ct_assign(vc_model *m, vc_param_entry *p, const vc_quant *q, const cJSON *root, int last, size_t pl,
                           size_t *converted, vc_error *err)
{
    const vc_inst *in = &m->inst[p->owner];
    const char *key = m->has_quant ? O("weights") : "quantization_config";
    char name[300];
    if (!root || !qual_name(root, in->path, name, sizeof name)) snprintf(name, sizeof name, "%s", in->name ? in->name : in->path);
    if (pl) { /* a kind holding several modules: the parameter's prefix (experts.gate_up_proj: experts) */
        size_t used = strlen(name);
        snprintf(name + used, sizeof name - used, "%s%.*s", used ? "." : "", (int)pl, p->name);
    }
    bool experts = p->flags & (VC_PARAM_EXPERTS | VC_PARAM_LLAMA4_EXPERTS);
    if (!q->ct_targets[0]) { /* --weights compressed-tensors: as the other formats (skip: modules_to_not_convert) */
        if (!(p->flags & VC_PARAM_LINEAR) || p->owner == last || experts || skipped(name, q->skip)) return VC_OK;
    } else {
        if (!(p->flags & VC_PARAM_LINEAR) && !experts) return VC_OK;
        /* stacked experts: matched as the nn.Linear modules of one expert (the first stands for all): Llama 4's
         * as transformers' CompressedExpertsLinear holds them (experts.expert_modules.E.gate_proj); the others
         * by the checkpoint's per-expert names, which vLLM's CompressedTensorsMoEMethod.get_moe_method matches
         * (layer_name + ".0.gate_proj": mlp.experts.0.gate_proj), "Linear" standing for FusedMoE
         * (_add_fused_moe_to_target_scheme_map) */
        if (experts) {
            size_t used = strlen(name);
            snprintf(name + used, sizeof name - used, "%s", p->flags & VC_PARAM_LLAMA4_EXPERTS ? ".expert_modules.0.gate_proj" : ".0.gate_proj");
        }
        int t = ct_match(q->ct_targets, name, true, "quantization_config.config_groups", err);
        int i = t > 0 ? ct_match(q->skip, name, true, "quantization_config.ignore", err) : 0;
        if (t < 0 || i < 0) return err->code;
        if (!t || i) return VC_OK;
        /* other stacked experts: vLLM's FusedMoE methods under --serve; transformers' refusal is
         * vc__quant_check's (it knows which runtime the estimate is for) */
        if (p->flags & VC_PARAM_LLAMA4_EXPERTS)
            /* transformers (integrations/compressed_tensors.py @ae005ce1) swaps Llama4TextExperts for
             * CompressedExpertsLinear, a loop over num_local_experts Llama4TextMLP modules; stacked
             * experts have no nn.Linear for CompressedLinear to replace */
            return vc_set_error(err, VC_ERR_USAGE, key, "compressed-tensors (layer %s): quantized MoE experts are not modelled "
                                "(transformers runs Llama 4's as CompressedExpertsLinear, a loop over one Linear MLP per "
                                "expert); ignore them to estimate the rest", in->path);
    }
    char why[300];
    if (rows[VC_WEIGHTS_CT].misfit(p, q, why, sizeof why))
        return vc_set_error(err, VC_ERR_USAGE, key, "%s (layer %s): %s", name, in->path, why);
    if (p->trainable && vc__peft_on(&m->lora))
        return vc_set_error(err, VC_ERR_USAGE, O("modules_to_save"), "%s is stored as compressed-tensors: a quantized layer cannot "
                            "be trained in full", in->name ? in->name : in->path);
    p->fmt = (uint8_t)VC_WEIGHTS_CT;
    (*converted)++;
    if (p->trainable) {
        p->trainable = false;
        m->ntrainable -= p->numel;
    }
    return VC_OK;
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
    /* compressed-tensors matches qualified names (ct_assign): the generated model's, read once */
    cJSON *ct_root = q->format == VC_WEIGHTS_CT && m->gen_json ? cJSON_Parse(m->gen_json) : NULL;
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
        if (q->format == VC_WEIGHTS_CT) {
            vc_status cst = ct_assign(m, p, q, ct_root, last, pl, &converted, err);
            if (cst) {
                cJSON_Delete(ct_root);
                return cst;
            }
            continue;
        }
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
        if (r->misfit && r->misfit(p, q, why, sizeof why) && mx && m->vllm) /* vLLM's split without its backend */
            return vc_set_error(err, VC_ERR_USAGE, O("gpu"), "mxfp4 under " O("serve") " (layer %s): %s per rank: vLLM pads "
                                "the experts' intermediate size to its MoE backend's multiple (Mxfp4MoEMethod.create_weights: "
                                "TRITON 64 on compute capability 9.0, SM100_FI_MXFP4_BF16 256 on 10.x, MARLIN 128 on the "
                                "others), which follows the card: give a " O("gpu") " preset, not a size", in->path, why);
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
    cJSON_Delete(ct_root);
    if (q->format == VC_WEIGHTS_MXFP4 && converted == 0) /* replace_with_mxfp4_linear swaps GptOssExperts only */
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config",
                            "mxfp4 stores gpt-oss's stacked experts (GptOssExperts); this model has none");
    return VC_OK;
}

/* vc_serve's builds and replays of its profiling run, on this thread (the allocator model's replays of
 * other batches build plans too): vLLM's modules, not transformers' */
static _Thread_local int vllm_scope;
void vc__quant_vllm_scope(bool on) { vllm_scope += on ? 1 : -1; }
bool vc__quant_vllm_in(void) { return vllm_scope > 0; }

vc_status vc__quant_check(const vc_model *m, const vc_options *o, vc_error *err)
{
    const bool vllm = vllm_scope > 0;
    vc_weights w = VC_WEIGHTS_DENSE;
    for (size_t i = 0; i < m->npar && w == VC_WEIGHTS_DENSE; i++) w = (vc_weights)m->par[i].fmt;
    if (w == VC_WEIGHTS_DENSE) return VC_OK;
    /* compressed-tensors' stacked experts under transformers: apply_quantization_config replaces
     * torch.nn.Linear modules with CompressedLinear; transformers' stacked experts module (Qwen3MoeExperts'
     * gate_up_proj [E, 2I, H]) is none, so nothing holds the checkpoint's per-expert weight_packed /
     * weight_scale. vLLM's FusedMoE (--serve) does: ct_vllm_moe */
    for (size_t i = 0; i < m->npar && !vllm && w == VC_WEIGHTS_CT; i++)
        if (m->par[i].fmt == VC_WEIGHTS_CT && m->par[i].flags & VC_PARAM_EXPERTS)
            return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config",
                                "compressed-tensors (layer %s): quantized MoE experts are modelled under " O("serve")
                                " (vLLM's FusedMoE), not under transformers (stacked experts hold no nn.Linear for "
                                "CompressedLinear to replace); ignore them to estimate the rest", m->inst[m->par[i].owner].path);
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
    /* CompressedLinear's forward decompresses into a frozen Parameter (requires_grad=False) and keeps it;
     * the quantizer's QAT path (run_compressed=False) decompresses the whole model: neither is modelled */
    if (o->mode == VC_MODE_TRAIN && w == VC_WEIGHTS_CT)
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : O("mode"),
                            "compressed-tensors weights are modelled for inference (" OV("mode", "infer") ", generate and "
                            O("serve") "); training over CompressedLinear, or over the model decompressed for "
                            "quantization-aware training, is not");
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

/* --serve over compressed-tensors weights: vLLM's CompressedTensorsConfig._get_scheme_from_parts picks
 * CompressedTensorsW8A8Fp8 (fp8 weights and fp8 activations) and CompressedTensorsW8A8Int8 (int8 weights
 * and int8 activations), which ct_vllm_tensors follows for channel and block scales, and
 * CompressedTensorsWNA16 (pack-quantized int weights per channel or group, no input quantization), whose
 * kernel each layer's shape and the GPU pick (ct_vllm_wna16); the others are refused */
static bool ct_experts(const vc_model *m) /* stacked experts in compressed-tensors */
{
    for (size_t i = 0; i < m->npar; i++)
        if (m->par[i].fmt == VC_WEIGHTS_CT && m->par[i].flags & VC_PARAM_EXPERTS) return true;
    return false;
}

bool vc__quant_vllm_needs_device(const vc_model *m)
{
    return ct_wna16(vc__model_quant(m)) || ct_experts(m) || vc__model_quant(m)->format == VC_WEIGHTS_MXFP4; /* mxfp4_vllm_tensors */
}

vc_status vc__quant_vllm_check(const vc_model *m, const vc_gpu *dev, vc_error *err)
{
    const vc_quant *q = vc__model_quant(m);
    /* Mxfp4Config.get_min_capability() is 80 (mxfp4.py @ 007d5005); VllmConfig._get_quantization_config
     * (vllm/config/vllm.py) raises "The quantization method mxfp4 is not supported for the current GPU. Minimum
     * capability: 80. Current capability: 75." before any layer is made */
    if (q->format == VC_WEIGHTS_MXFP4 && dev && !strcmp(dev->vendor, "NVIDIA") && dev->sm < 80)
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config", "mxfp4 under "
                            O("serve") ": vLLM refuses it on %s: the quantization method mxfp4 is not supported for the "
                            "current GPU (Mxfp4Config's minimum capability 80, the card's %d)", dev->name, dev->sm);
    if (q->format != VC_WEIGHTS_CT) return VC_OK;
    const char *key = m->has_quant ? O("weights") : "quantization_config", *why = NULL;
    if (ct_experts(m) && (!dev || strcmp(dev->vendor, "NVIDIA")))
        return vc_set_error(err, VC_ERR_USAGE, O("gpu"), "compressed-tensors MoE experts under " O("serve") ": vLLM's FusedMoE "
                            "backend follows the GPU's compute capability; give an NVIDIA " O("gpu") " preset%s",
                            dev ? " (ROCm's are not modelled)" : ", not a size");
    for (size_t i = 0; i < m->npar; i++) {
        char buf[300];
        const char *w = m->par[i].fmt == VC_WEIGHTS_CT && m->par[i].flags & VC_PARAM_EXPERTS
                            ? ct_moe_misfit(m, &m->par[i], q, dev, buf, sizeof buf) : NULL;
        if (w)
            return vc_set_error(err, VC_ERR_USAGE, key, "compressed-tensors MoE experts under " O("serve") " (layer %s): %s; "
                                "ignore them to estimate the rest", m->inst[m->par[i].owner].path, w);
    }
    if (ct_wna16(q)) {
        if (!dev || strcmp(dev->vendor, "NVIDIA"))
            return vc_set_error(err, VC_ERR_USAGE, O("gpu"), "compressed-tensors W%lldA16 under " O("serve") ": vLLM's kernel "
                                "(Machete on compute capability 9.0, else Marlin) follows the GPU's compute capability; "
                                "give an NVIDIA " O("gpu") " preset%s", (long long)q->bits, dev ? " (ROCm's Conch and Exllama "
                                "kernels are not modelled)" : ", not a size");
        if (q->ct_actorder && m->tp > 1) /* Machete's can_implement refuses it; Marlin's is_k_full is false */
            return vc_set_error(err, VC_ERR_USAGE, key, "compressed-tensors under " O("serve") ": act order (weight_g_idx) "
                                "with the input features split over " O("tp") " ranks (Marlin's scales repeated on every "
                                "rank, is_k_full false) is not modelled");
        for (size_t i = 0; i < m->npar; i++) {
            int64_t nout;
            char buf[400];
            if (m->par[i].fmt != VC_WEIGHTS_CT || m->par[i].flags & VC_PARAM_EXPERTS || !vllm_layer(m, i, &nout)) continue;
            int k = vct_kernel(q, dev, nout, in_of(&m->par[i]), buf, sizeof buf);
            if (k == VCT_MARLIN || k == VCT_MACHETE) continue;
            const vc_inst *in = &m->inst[m->par[i].owner];
            return vc_set_error(err, VC_ERR_USAGE, key, "compressed-tensors W%lldA16 under " O("serve") " (layer %s): %s",
                                (long long)q->bits, in->name ? in->name : in->path,
                                k == VCT_ALLSPARK ? "vLLM runs AllSparkLinearKernel on compute capability 8.x for 8-bit "
                                                    "channel weights, whose repacking is not modelled" : buf);
        }
        return VC_OK;
    }
    if (q->ct_packed || q->ct_input == 0)
        why = "weight-only schemes other than CompressedTensorsWNA16's (pack-quantized int weights per channel or group: "
              "naive-quantized or fp8 weight-only, CompressedTensorsW8A16Fp8) and packed weights with quantized "
              "activations are not followed";
    else if (q->ct_strategy == VC_CT_TENSOR)
        why = "per-tensor weight scales are merged across vLLM's fused projections (qkv_proj, gate_up_proj) after loading";
    else if (q->ct_strategy == VC_CT_GROUP || (!q->ct_float && q->ct_strategy == VC_CT_BLOCK))
        why = "CompressedTensorsW8A8Fp8 takes tensor, channel and block scales, CompressedTensorsW8A8Int8 tensor and channel";
    else if (q->ct_asymmetric)
        why = "asymmetric weights (weight_zero_point) have no W8A8 scheme";
    else if (q->ct_input == 2) /* create_fp8_input_scale: one per logical partition, max() per fused layer */
        why = "static activations keep one input_scale per fused layer (qkv_proj, gate_up_proj), not per projection";
    if (!why) return VC_OK;
    return vc_set_error(err, VC_ERR_USAGE, key, "compressed-tensors under " O("serve") ": %s; not modelled", why);
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
    else if (q->format == VC_WEIGHTS_CT) {
        static const char *const st[] = {"tensor", "channel", "group", "block"};
        char how[64];
        if (q->ct_strategy == VC_CT_GROUP) snprintf(how, sizeof how, "group %lld", (long long)q->group);
        else if (q->ct_strategy == VC_CT_BLOCK) snprintf(how, sizeof how, "block %lldx%lld", (long long)q->block[0], (long long)q->block[1]);
        else snprintf(how, sizeof how, "per %s", st[q->ct_strategy & 3]);
        snprintf(buf, n, "%s (%s%lld %s, %s%s)", name, q->ct_float ? "fp" : "int", (long long)q->bits, how,
                 q->ct_packed ? "packed, " : "", q->ct_input == 0 ? "weights only" : q->ct_input == 1 ? "dynamic activations" : "static activations");
    }
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

/* ---- compressed-tensors' quantization_config (compressed_tensors quant_config.py QuantizationConfig as
 * transformers' CompressedTensorsConfig.to_dict writes it): format, quantization_status, config_groups
 * (one group modelled: targets, weights, input_activations, output_activations), ignore,
 * kv_cache_scheme, sparsity_config. Each value is checked as QuantizationArgs' validators do. */
static vc_status ct_fail(vc_error *err, const char *group, const char *sub, const char *key, const char *fmt, const char *a)
{
    char path[160];
    snprintf(path, sizeof path, "config_groups.%.40s%s%s%s%s", group, sub ? "." : "", sub ? sub : "", key ? "." : "", key ? key : "");
    return qc_fail(err, path, fmt, a, "");
}

/* A list of strings into buf, '\n'-separated (a pattern may hold commas). */
static vc_status ct_names(const cJSON *v, char *buf, size_t n, vc_error *err, const char *group, const char *key)
{
    const cJSON *e;
    buf[0] = 0;
    if (!cJSON_IsArray(v)) return group ? ct_fail(err, group, NULL, key, "expected a list of names%s", "")
                                        : qc_fail(err, key, "expected a list of module names%s%s", "", "");
    cJSON_ArrayForEach(e, v) {
        size_t used = strlen(buf);
        if (!cJSON_IsString(e) || !e->valuestring[0])
            return group ? ct_fail(err, group, NULL, key, "expected a list of names%s", "")
                         : qc_fail(err, key, "expected a list of module names%s%s", "", "");
        if (used + strlen(e->valuestring) + 2 > n)
            return group ? ct_fail(err, group, NULL, key, "the names are longer than %s characters in all", "510")
                         : qc_fail(err, key, "the names are longer than %s characters in all%s", "510", "");
        snprintf(buf + used, n - used, "%s%s", used ? "\n" : "", e->valuestring);
    }
    return VC_OK;
}

static const char *ct_str(const cJSON *o, const char *key) /* a string member, NULL when absent or null */
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool ct_present(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v && !cJSON_IsNull(v);
}

/* QuantizationArgs: num_bits (8), type ("int"), symmetric (true), group_size, strategy (inferred from
 * group_size when null: none tensor, > 0 group, -1 channel), block_structure, dynamic (false), actorder. */
static vc_status ct_weights(const cJSON *w, const char *g, vc_quant *q, vc_error *err)
{
    static const char *const strategies[] = {"tensor", "channel", "group", "block"};
    const char *W = "weights";
    if (!cJSON_IsObject(w)) return ct_fail(err, g, W, NULL, "expected an object (weight-less schemes are not modelled)%s", "");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(w, "num_bits");
    int64_t bits = 8, gs = 0;
    if (v && (vc__json_int(v, &bits) || bits < 1 || bits > 32)) return ct_fail(err, g, W, "num_bits", "expected an integer from 1 to 32%s", "");
    const char *type = ct_str(w, "type");
    if (ct_present(w, "type") && !type) return ct_fail(err, g, W, "type", "expected \"int\" or \"float\"%s", "");
    bool fl = type && !strcasecmp(type, "float");
    if (type && !fl && strcasecmp(type, "int")) return ct_fail(err, g, W, "type", "expected \"int\" or \"float\", not \"%.40s\"", type);
    if (fl && bits != 8)
        return ct_fail(err, g, W, "num_bits", "float weights of %s bits are not modelled (fp8 e4m3, 8 bits, is; nvfp4 is another format)",
                       bits == 4 ? "4" : "other than 8");
    if (!fl && bits != 4 && bits != 8) return ct_fail(err, g, W, "num_bits", "int weights of 4 or 8 bits are modelled%s", "");
    v = cJSON_GetObjectItemCaseSensitive(w, "symmetric");
    if (v && !cJSON_IsBool(v)) return ct_fail(err, g, W, "symmetric", "expected true or false%s", "");
    v = cJSON_GetObjectItemCaseSensitive(w, "group_size");
    bool has_gs = v && !cJSON_IsNull(v);
    if (has_gs && (vc__json_int(v, &gs) || gs < -1 || gs == 0 || gs > VC_MAX_DIM_SIZE))
        return ct_fail(err, g, W, "group_size", "expected a positive integer, or -1 for channel%s", "");
    const char *st = ct_str(w, "strategy");
    if (ct_present(w, "strategy") && !st) return ct_fail(err, g, W, "strategy", "expected a string such as \"channel\"%s", "");
    int strat = -1;
    if (!st) strat = !has_gs ? VC_CT_TENSOR : gs > 0 ? VC_CT_GROUP : VC_CT_CHANNEL; /* validate_model_after */
    for (int k = 0; st && k < 4; k++)
        if (!strcasecmp(st, strategies[k])) strat = k;
    if (strat < 0) return ct_fail(err, g, W, "strategy", "\"%.40s\" is not modelled (tensor, channel, group and block are)", st);
    if (strat == VC_CT_GROUP && (!has_gs || gs <= 0)) return ct_fail(err, g, W, "group_size", "strategy group needs a positive group_size%s", "");
    if (has_gs && gs > 0 && strat != VC_CT_GROUP) return ct_fail(err, g, W, "group_size", "group_size requires strategy group%s", "");
    v = cJSON_GetObjectItemCaseSensitive(w, "block_structure");
    bool has_bs = v && !cJSON_IsNull(v);
    if (has_bs != (strat == VC_CT_BLOCK))
        return ct_fail(err, g, W, "block_structure", has_bs ? "block_structure requires strategy block%s" : "strategy block needs a block_structure%s", "");
    if (has_bs) {
        int64_t b0, b1;
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 || vc__json_int(cJSON_GetArrayItem(v, 0), &b0) ||
            vc__json_int(cJSON_GetArrayItem(v, 1), &b1) || b0 < 1 || b1 < 1 || b0 > VC_MAX_DIM_SIZE || b1 > VC_MAX_DIM_SIZE)
            return ct_fail(err, g, W, "block_structure", "expected two positive integers, e.g. [128, 128]%s", "");
        q->block[0] = b0;
        q->block[1] = b1;
    }
    v = cJSON_GetObjectItemCaseSensitive(w, "dynamic");
    if (v && !cJSON_IsFalse(v) && !cJSON_IsNull(v)) return ct_fail(err, g, W, "dynamic", "dynamic weights are not modelled (a checkpoint's are static: false)%s", "");
    v = cJSON_GetObjectItemCaseSensitive(w, "actorder");
    const char *ao = cJSON_IsString(v) ? v->valuestring : NULL;
    if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v) && !(ao && (!strcasecmp(ao, "group") || !strcasecmp(ao, "weight") ||
                                                               !strcasecmp(ao, "static") || !strcasecmp(ao, "dynamic"))))
        return ct_fail(err, g, W, "actorder", "expected null, true, false, \"group\", \"weight\", \"static\" or \"dynamic\"%s", "");
    /* validate_actorder: true is GROUP; "dynamic" aliases GROUP, "static" WEIGHT (ActivationOrdering) */
    bool actorder_set = cJSON_IsTrue(v) || ao;
    if (actorder_set && strat != VC_CT_GROUP) return ct_fail(err, g, W, "actorder", "activation ordering needs strategy group%s", "");
    q->ct_actorder = cJSON_IsTrue(v) || (ao && (!strcasecmp(ao, "group") || !strcasecmp(ao, "dynamic")));
    q->ct_float = fl;
    q->bits = bits;
    q->ct_strategy = strat;
    q->group = strat == VC_CT_GROUP ? gs : -1;
    q->ct_asymmetric = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(w, "symmetric"));
    return VC_OK;
}

/* input_activations: null (weights only), dynamic (per token, tensor or group: no parameter), or static
 * per tensor, symmetric (input_scale [1]) */
static vc_status ct_inputs(const cJSON *a, const char *g, vc_quant *q, vc_error *err)
{
    const char *A = "input_activations";
    q->ct_input = 0;
    if (!a || cJSON_IsNull(a)) return VC_OK;
    q->ct_input = 1;
    if (!cJSON_IsObject(a)) return ct_fail(err, g, A, NULL, "expected an object or null%s", "");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(a, "dynamic");
    if (d && !cJSON_IsBool(d) && !cJSON_IsNull(d)) /* "local": tensor_group (nvfp4) */
        return ct_fail(err, g, A, "dynamic", "expected true or false (\"local\" is nvfp4's, not modelled)%s", "");
    if (cJSON_IsTrue(d)) return VC_OK;
    const char *st = ct_str(a, "strategy");
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(a, "group_size");
    if ((st && strcasecmp(st, "tensor")) || (!st && gs && !cJSON_IsNull(gs)))
        return ct_fail(err, g, A, "strategy", "static activations are modelled per tensor (one input_scale)%s", "");
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(a, "symmetric")))
        return ct_fail(err, g, A, "symmetric", "static asymmetric activations (input_zero_point) are not modelled%s", "");
    q->ct_input = 2;
    return VC_OK;
}

static vc_status qc_ct(const cJSON *qc, vc_quant *q, vc_error *err)
{
    vc_status st;
    q->format = VC_WEIGHTS_CT;
    const char *fmt = ct_str(qc, "format");
    if (ct_present(qc, "format") && !fmt) return qc_fail(err, "format", "expected a string such as \"pack-quantized\"%s%s", "", "");
    /* CompressionFormat: naive-quantized, int-quantized and float-quantized share NaiveQuantizationCompressor */
    if (!fmt) return qc_fail(err, "format", "missing: the compression format (e.g. \"float-quantized\", \"pack-quantized\")%s%s", "", "");
    bool packed = !strcmp(fmt, "pack-quantized");
    if (!packed && strcmp(fmt, "naive-quantized") && strcmp(fmt, "int-quantized") && strcmp(fmt, "float-quantized"))
        return qc_fail(err, "format", "\"%.40s\" is not modelled (float-quantized, int-quantized, naive-quantized and pack-quantized are)%s", fmt, "");
    const char *status = ct_str(qc, "quantization_status");
    if (ct_present(qc, "quantization_status") && (!status || strcmp(status, "compressed")))
        return qc_fail(err, "quantization_status", "only a compressed checkpoint (\"compressed\") is modelled%s%s", "", "");
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(qc, "kv_cache_scheme");
    if (kv && !cJSON_IsNull(kv))
        return qc_fail(err, "kv_cache_scheme", "a quantized KV cache (k_scale, v_scale) is not modelled%s%s", "", "");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(qc, "sparsity_config");
    if (sp && !cJSON_IsNull(sp) && !(cJSON_IsObject(sp) && !sp->child)) {
        const char *sf = cJSON_IsObject(sp) ? ct_str(sp, "format") : NULL;
        if (!sf || strcmp(sf, "dense")) return qc_fail(err, "sparsity_config", "sparse compression is not modelled%s%s", "", "");
    }
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(qc, "config_groups");
    if (!groups || cJSON_IsNull(groups)) return qc_fail(err, "config_groups", "missing: the quantization schemes%s%s", "", "");
    if (!cJSON_IsObject(groups) || !groups->child)
        return qc_fail(err, "config_groups", "expected an object of schemes, e.g. {\"group_0\": {...}}%s%s", "", "");
    if (groups->child->next) return qc_fail(err, "config_groups", "several config groups (mixed schemes) are not modelled: one is%s%s", "", "");
    const cJSON *grp = groups->child;
    const char *g = grp->string;
    if (!cJSON_IsObject(grp)) return ct_fail(err, g, NULL, NULL, "expected an object (targets, weights, input_activations)%s", "");
    const char *gf = ct_str(grp, "format"); /* QuantizationScheme.format (a per-group override), when given */
    if (gf && strcmp(gf, fmt)) return ct_fail(err, g, NULL, "format", "a group's format other than the config's is not modelled%s", "");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(grp, "targets");
    if (!t) return ct_fail(err, g, NULL, "targets", "missing: the modules the scheme quantizes%s", "");
    if ((st = ct_names(t, q->ct_targets, sizeof q->ct_targets, err, g, "targets"))) return st;
    if (!q->ct_targets[0]) return ct_fail(err, g, NULL, "targets", "expected at least one target%s", "");
    if ((st = ct_weights(cJSON_GetObjectItemCaseSensitive(grp, "weights"), g, q, err)) ||
        (st = ct_inputs(cJSON_GetObjectItemCaseSensitive(grp, "input_activations"), g, q, err)))
        return st;
    if (ct_present(grp, "output_activations")) return ct_fail(err, g, "output_activations", NULL, "output quantization is not modelled%s", "");
    if (packed && q->ct_float) return ct_fail(err, g, "weights", "type", "pack-quantized packs int weights; float weights are float-quantized%s", "");
    q->ct_packed = packed;
    const cJSON *ig = cJSON_GetObjectItemCaseSensitive(qc, "ignore");
    if (ig && !cJSON_IsNull(ig) && (st = ct_names(ig, q->skip, sizeof q->skip, err, NULL, "ignore"))) return st;
    return VC_OK;
}

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
