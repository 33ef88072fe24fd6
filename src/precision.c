/*
 * precision.c — the --precision presets, each a row of the dtypes a step
 * holds (the names come from VC_PRECISION_MAP in vramcalc.h). Gradients
 * take their parameter's dtype (AccumulateGrad). Per-parameter storage
 * formats (quantized weights) are not a preset: see the weight formats.
 */
#include "policy.h"

#define F32 VC_DT_F32
#define F16 VC_DT_F16
#define B16 VC_DT_BF16

static const vc_precision_row rows[VC_PREC__N] = {
    /*                    param act  amp  master scaler */
    [VC_PREC_FP32] =       {F32, F32, F32, false, false},
    [VC_PREC_FP16] =       {F16, F16, F32, false, false}, /* model.half() */
    [VC_PREC_BF16] =       {B16, B16, F32, false, false}, /* model.bfloat16() */
    [VC_PREC_AMP_FP16] =   {F32, F32, F16, false, true},  /* torch.autocast(fp16) + GradScaler */
    [VC_PREC_AMP_BF16] =   {F32, F32, B16, false, false}, /* torch.autocast(bf16) */
    [VC_PREC_MIXED_FP16] = {F16, F16, F32, true, false},  /* 16-bit model, fp32 master weights (and states) */
    [VC_PREC_MIXED_BF16] = {B16, B16, F32, true, false},
};

const vc_precision_row *vc_precision_row_get(vc_precision p) { return (unsigned)p < VC_PREC__N ? &rows[p] : NULL; }
