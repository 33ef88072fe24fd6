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
    [VC_PREC_FP32] = {.param_dt = F32, .act_dt = F32, .amp_dt = F32},
    [VC_PREC_FP16] = {.param_dt = F16, .act_dt = F16, .amp_dt = F32},              /* model.half() */
    [VC_PREC_BF16] = {.param_dt = B16, .act_dt = B16, .amp_dt = F32},              /* model.bfloat16() */
    [VC_PREC_AMP_FP16] = {.param_dt = F32, .act_dt = F32, .amp_dt = F16, .scaler = true}, /* torch.autocast(fp16) + GradScaler */
    [VC_PREC_AMP_BF16] = {.param_dt = F32, .act_dt = F32, .amp_dt = B16},          /* torch.autocast(bf16) */
    /* 16-bit model, fp32 master weights (and states) */
    [VC_PREC_MIXED_FP16] = {.param_dt = F16, .act_dt = F16, .amp_dt = F32, .master = true},
    [VC_PREC_MIXED_BF16] = {.param_dt = B16, .act_dt = B16, .amp_dt = F32, .master = true},
};

const vc_precision_row *vc_precision_row_get(vc_precision p) { return (unsigned)p < VC_PREC__N ? &rows[p] : NULL; }
