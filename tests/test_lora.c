/*
 * test_lora.c — LoRA adapters and the other PEFT methods (vc_model_set_lora): which layers get them,
 * their parameters and dtypes, what is frozen, and the errors. Expected
 * values are worked out from PEFT's LoraLayer.update_layer (lora_A [r, in],
 * lora_B [out, r], bias-free, fp32 on a 16-bit model) and
 * mark_only_lora_as_trainable (everything else frozen).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

/* q (1024 -> 1024, no bias), a ReLU, v (1024 -> 512, bias), a LayerNorm. */
static const char *const model =
    "{\"input\": [16, 1024], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false, \"name\": \"q_proj\"},"
    "{\"type\": \"ReLU\"},"
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 512, \"name\": \"attn.v_proj\"},"
    "{\"type\": \"LayerNorm\", \"normalized_shape\": [512]}]}";

static vc_model *load(void)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(model, strlen(model), "lora.json", &m, &err)) fail_msg("load: %s", err.msg);
    return m;
}

static vc_status set_lora(vc_model *m, int64_t r, const char *targets, double dropout, vc_error *err)
{
    vc_lora l;
    vc_lora_init(&l);
    l.r = r;
    l.dropout = dropout;
    snprintf(l.targets, sizeof l.targets, "%s", targets);
    return vc_model_set_lora(m, &l, err);
}

static vc_result estimate(const vc_model *m, vc_precision prec)
{
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_ADAMW;
    o.precision = prec;
    o.workspace = 0;
    vc_result r;
    vc_error err;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    return r;
}

/* PEFT's defaults. */
static void test_defaults(void **state)
{
    (void)state;
    vc_lora l;
    vc_lora_init(&l);
    assert_int_equal(l.r, 0);
    assert_true(l.alpha == 8.0 && l.dropout == 0.0);
    assert_string_equal(l.targets, "");
}

/* r = 8 on both: q gets 8x1024 + 1024x8, v 8x1024 + 512x8 = 16,384 + 12,288
 * trainable; the model's own 1,572,864 + 512 + 1,024 stay and are frozen. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = load();
    int64_t base = vc_model_parameters(m);
    assert_int_equal(base, 1048576 + 524288 + 512 + 1024);
    vc_error err;
    assert_int_equal(set_lora(m, 8, "q_proj,v_proj", 0, &err), VC_OK);
    assert_int_equal(vc_model_parameters(m), base + 16384 + 12288);
    assert_int_equal(vc_model_trainable_parameters(m), 16384 + 12288);
    /* fp32, AdamW: gradients and the two states only for the adapters, each
     * tensor in 512-byte blocks (all four are multiples of 512 here) */
    vc_result r = estimate(m, VC_PREC_FP32);
    assert_int_equal(r.memory.gradients, (16384 + 12288) * 4);
    assert_int_equal(r.memory.optimizer_states, 2 * (16384 + 12288) * 4);
    vc_result_free(&r);
    /* back to no adapters: everything trains again */
    assert_int_equal(set_lora(m, 0, "", 0, &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), base);
    vc_model_free(m);
}

/* bf16: the base weights are 2 bytes, the adapters 4 (autocast_adapter_dtype);
 * their gradients and AdamW states are fp32 too (zeros_like(p)). */
static void test_bf16_adapters_fp32(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_error err;
    assert_int_equal(set_lora(m, 8, "q_proj", 0, &err), VC_OK);
    vc_result r = estimate(m, VC_PREC_BF16);
    /* q 2 MiB, v 1 MiB + its bias (1 KiB -> 1,024), LayerNorm 2 x 1 KiB (each 1,024): bf16; adapters 64 KiB fp32 */
    assert_int_equal(r.memory.weights, 2097152 + 1048576 + 1024 + 2 * 1024 + 16384 * 4);
    assert_int_equal(r.memory.gradients, 16384 * 4);
    assert_int_equal(r.memory.optimizer_states, 2 * 16384 * 4);
    vc_result_free(&r);
    vc_model_free(m);
}

/* PEFT matches a target by the whole name or a "."-separated suffix:
 * "v_proj" adapts "attn.v_proj"; "proj" and "q" adapt nothing. */
static void test_matching(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_error err;
    assert_int_equal(set_lora(m, 4, "v_proj", 0, &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), 4 * 1024 + 512 * 4);
    assert_int_equal(set_lora(m, 4, "proj,q", 0, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--lora-targets");
    assert_string_equal(CLI_MSG(&err), "no Linear layer is named proj,q (LoRA adapts Linear layers by their \"name\")");
    /* the failed call left the previous adapters in place */
    assert_int_equal(vc_model_trainable_parameters(m), 4 * 1024 + 512 * 4);
    vc_model_free(m);
}

/* Bad settings name the option. */
static void test_errors(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_error err;
    assert_int_equal(set_lora(m, -1, "q_proj", 0, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--lora");
    assert_int_equal(set_lora(m, 8, "", 0, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--lora-targets");
    assert_int_equal(set_lora(m, 8, "q_proj", 1.0, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--lora-dropout");
    vc_model_free(m);
}

/* lora_dropout > 0 keeps the dropped-out copy of each adapter's input
 * (lora_A's mm saves it, 16 x 1024 floats); native_dropout's bool mask
 * (16 x 1024 bytes) only where the input requires grad: not for q_proj,
 * whose input is the batch (no autograd node, the mask is freed at once),
 * but for v_proj, whose input comes from q_proj's adapters. */
static void test_dropout_saves(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_error err;
    assert_int_equal(set_lora(m, 8, "q_proj,v_proj", 0, &err), VC_OK);
    vc_result r0 = estimate(m, VC_PREC_FP32);
    assert_int_equal(set_lora(m, 8, "q_proj,v_proj", 0.1, &err), VC_OK);
    vc_result r1 = estimate(m, VC_PREC_FP32);
    assert_int_equal(r1.memory.activations - r0.memory.activations, 16 * 1024 * 4 + (16 * 1024 * 4 + 16 * 1024));
    vc_result_free(&r0);
    vc_result_free(&r1);
    vc_model_free(m);
}

static vc_result estimate_dt(vc_model *m, vc_lora_dtype dt, vc_precision prec)
{
    vc_lora l;
    vc_lora_init(&l);
    l.r = 8;
    l.dtype = dt;
    snprintf(l.targets, sizeof l.targets, "q_proj");
    vc_error err;
    if (vc_model_set_lora(m, &l, &err)) fail_msg("set_lora: %s", err.msg);
    return estimate(m, prec);
}

/* --lora-dtype: q_proj's adapters, 8 x 1024 + 1024 x 8 = 16,384 elements, in
 * the asked dtype, and so their gradients (AccumulateGrad: the parameter's
 * dtype) and AdamW's exp_avg and exp_avg_sq (zeros_like(p)); every tensor a
 * multiple of 512 bytes. The base: q 1,048,576 + v 524,288 + its bias 512 +
 * LayerNorm 2 x 512 elements, in the precision's dtype. */
static void test_lora_dtype(void **state)
{
    (void)state;
    const int64_t base = 1048576 + 524288 + 512 + 1024, ad = 16384;
    vc_model *m = load();
    /* auto (PEFT's autocast_adapter_dtype=True) and fp32 on a bf16 model: fp32 adapters */
    for (int dt = VC_LORA_DTYPE_AUTO; dt <= VC_LORA_DTYPE_FP32; dt++) {
        vc_result r = estimate_dt(m, (vc_lora_dtype)dt, VC_PREC_BF16);
        assert_int_equal(r.memory.weights, base * 2 + ad * 4);
        assert_int_equal(r.memory.gradients, ad * 4);
        assert_int_equal(r.memory.optimizer_states, 2 * ad * 4);
        vc_result_free(&r);
    }
    /* model (torchtune; PEFT with autocast_adapter_dtype=False), bf16 and fp16 on a bf16
     * model: 2-byte adapters, gradients and states */
    for (int dt = VC_LORA_DTYPE_BF16; dt <= VC_LORA_DTYPE_MODEL; dt++) {
        vc_result r = estimate_dt(m, (vc_lora_dtype)dt, VC_PREC_BF16);
        assert_int_equal(r.memory.weights, base * 2 + ad * 2);
        assert_int_equal(r.memory.gradients, ad * 2);
        assert_int_equal(r.memory.optimizer_states, 2 * ad * 2);
        vc_result_free(&r);
    }
    /* bf16 adapters on an fp32 model: pinned whatever the precision */
    vc_result r = estimate_dt(m, VC_LORA_DTYPE_BF16, VC_PREC_FP32);
    assert_int_equal(r.memory.weights, base * 4 + ad * 2);
    assert_int_equal(r.memory.gradients, ad * 2);
    assert_int_equal(r.memory.optimizer_states, 2 * ad * 2);
    vc_result_free(&r);
    /* model on an fp32 model: fp32, as auto */
    r = estimate_dt(m, VC_LORA_DTYPE_MODEL, VC_PREC_FP32);
    assert_int_equal(r.memory.weights, base * 4 + ad * 4);
    assert_int_equal(r.memory.optimizer_states, 2 * ad * 4);
    vc_result_free(&r);
    /* model under mixed-bf16: bf16 adapters and gradients, an fp32 master copy of
     * them (a weight) and fp32 AdamW states (the master's) */
    r = estimate_dt(m, VC_LORA_DTYPE_MODEL, VC_PREC_MIXED_BF16);
    assert_int_equal(r.memory.weights, base * 2 + ad * 2 + ad * 4);
    assert_int_equal(r.memory.gradients, ad * 2);
    assert_int_equal(r.memory.optimizer_states, 2 * ad * 4);
    vc_result_free(&r);
    /* names, and a value out of range */
    assert_int_equal(vc_lora_dtype_from_name("model"), VC_LORA_DTYPE_MODEL);
    assert_int_equal(vc_lora_dtype_from_name("auto"), VC_LORA_DTYPE_AUTO);
    assert_int_equal(vc_lora_dtype_from_name("float32"), -1);
    vc_lora l;
    vc_lora_init(&l);
    assert_int_equal(l.dtype, VC_LORA_DTYPE_AUTO);
    l.r = 8;
    l.dtype = VC_LORA_DTYPE__N;
    snprintf(l.targets, sizeof l.targets, "q_proj");
    vc_error err;
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--lora-dtype");
    vc_model_free(m);
}

static vc_status set_peft(vc_model *m, vc_peft method, int64_t r, const char *targets, vc_error *err)
{
    vc_lora l;
    vc_lora_init(&l);
    l.method = method;
    l.r = r;
    snprintf(l.targets, sizeof l.targets, "%s", targets);
    return vc_model_set_lora(m, &l, err);
}

/* --peft: the trainable and total counts, by hand from peft @5d602fdb. The model: q_proj
 * [1024, 1024] no bias, attn.v_proj [512, 1024] + bias 512, a LayerNorm (1,024): 1,574,400.
 *  dora r 8 on q, v: LoRA's 8x1024 + 1024x8 and 8x1024 + 512x8 (28,672) and
 *      lora_magnitude_vector of out_features each (DoraLinearVariant.init: dora.py
 *      update_layer's nn.Parameter(weight_norm), [out]): 1,024 + 512
 *  rslora, pissa: LoRA's tensors (use_rslora changes the scaling; pissa_init the values)
 *  ia3 on q, v (neither a feedforward module): ia3_l [out, 1] each (ia3/layer.py
 *      IA3Layer.update_layer), 1,024 + 512; everything else frozen (_mark_only_adapters_as_trainable) */
static void test_peft_counts(void **state)
{
    (void)state;
    const int64_t base = 1048576 + 524288 + 512 + 1024;
    vc_model *m = load();
    vc_error err;
    assert_int_equal(set_peft(m, VC_PEFT_DORA, 8, "q_proj,v_proj", &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), 28672 + 1024 + 512);
    assert_int_equal(vc_model_parameters(m), base + 28672 + 1024 + 512);
    /* fp32 AdamW: the magnitude vectors' gradients and two states beside the adapters' */
    vc_result r = estimate(m, VC_PREC_FP32);
    assert_int_equal(r.memory.gradients, (28672 + 1536) * 4);
    assert_int_equal(r.memory.optimizer_states, 2 * (28672 + 1536) * 4);
    vc_result_free(&r);
    for (vc_peft p = VC_PEFT_RSLORA; p <= VC_PEFT_PISSA; p++) {
        assert_int_equal(set_peft(m, p, 8, "q_proj,v_proj", &err), VC_OK);
        assert_int_equal(vc_model_trainable_parameters(m), 28672);
        assert_int_equal(vc_model_parameters(m), base + 28672);
    }
    assert_int_equal(set_peft(m, VC_PEFT_IA3, 0, "q_proj,v_proj", &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), 1024 + 512);
    assert_int_equal(vc_model_parameters(m), base + 1536);
    r = estimate(m, VC_PREC_BF16); /* the vectors fp32 (cast_adapter_dtype), their gradients and states too */
    assert_int_equal(r.memory.gradients, 1024 * 4 + 512 * 4);
    assert_int_equal(r.memory.optimizer_states, 2 * (1024 * 4 + 512 * 4));
    vc_result_free(&r);
    vc_model_free(m);
}

/* DoRA's saved tensors and forward temporaries, from dora.py DoraLinearLayer.forward (peft 5d602fdb),
 * fp32, r 8 on q_proj (in = out = 1,024, no bias; the input a batch of 16 x 1,024, needing no grad):
 *  held for backward beyond LoRA's: lora_result [16, 1024] (mag_norm_scale * lora_result saves it for
 *  the magnitude's gradient), base_result, q_proj's own output [16, 1024] ((mag_norm_scale - 1) *
 *  base_result keeps it), mag_norm_scale [1024] (lora_result needs a gradient) and weight_norm [1024]
 *  (the division's, for the magnitude): 65,536 + 65,536 + 4,096 + 4,096 = 139,264 bytes;
 *  the forward peak, at get_weight_norm's add: torch.eye(1024), lora_weight, scaling * lora_weight and
 *  the sum (4 x 4 MiB, fp32 like the adapters, the weight itself needing no cast), lora_A(eye) [1024, 8],
 *  with the input and base_result live: 16,777,216 + 32,768 + 2 x 65,536 = 16,941,056 bytes. */
static void test_dora_memory(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_error err;
    assert_int_equal(set_peft(m, VC_PEFT_LORA, 8, "q_proj", &err), VC_OK);
    vc_result r0 = estimate(m, VC_PREC_FP32);
    assert_int_equal(set_peft(m, VC_PEFT_DORA, 8, "q_proj", &err), VC_OK);
    vc_result r1 = estimate(m, VC_PREC_FP32);
    assert_int_equal(r1.memory.activations - r0.memory.activations, 139264);
    assert_int_equal(r1.peak.phase, VC_PHASE_FORWARD);
    assert_int_equal(r1.peak.activations + r1.peak.temporaries, 4 * 4194304 + 32768 + 2 * 65536);
    vc_result_free(&r0);
    vc_result_free(&r1);
    vc_model_free(m);
}

/* IA3 on a feedforward module (a down_proj: PEFT's feedforward_modules for llama, mistral, qwen2,
 * gemma) learns [1, in_features] and scales the input: x.to(fp32) * ia3_scaling keeps the fp32
 * input for the vector's gradient (MulBackward0 saves self when other needs grad), 16 x 1024 x 4
 * bytes here on a bf16 model, and ia3_scaling [1024] fp32 (its input needs a gradient); the up
 * Linear's vector ([out, 1]) scales its output, whose bf16 result the mul keeps: 16 x 1024 x 2
 * (ia3_scaling not: that output needs no gradient, the batch feeding a frozen weight). */
static void test_ia3_feedforward(void **state)
{
    (void)state;
    static const char *const mlp =
        "{\"input\": [16, 1024], \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false, \"name\": \"up_proj\"},"
        "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 256, \"bias\": false, \"name\": \"mlp.down_proj\"}]}";
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(mlp, strlen(mlp), "ia3.json", &m, &err)) fail_msg("load: %s", err.msg);
    assert_int_equal(set_peft(m, VC_PEFT_IA3, 0, "down_proj", &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), 1024); /* [1, in] */
    assert_int_equal(set_peft(m, VC_PEFT_IA3, 0, "up_proj,down_proj", &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), 1024 + 1024); /* up: [out, 1]; down: [1, in] */
    vc_result r = estimate(m, VC_PREC_BF16);
    assert_int_equal(r.nlayers, 2);
    assert_int_equal(r.layers[0].activations, 16 * 1024 * 2);
    assert_int_equal(r.layers[1].activations, 16 * 1024 * 4 + 1024 * 4);
    vc_result_free(&r);
    vc_model_free(m);
}

/* LN tuning (ln_tuning/layer.py LNTuningLayer.update_layer: ln_tuning_layers["default"] =
 * deepcopy(layer), trained; base_layer frozen and kept) and modules_to_save (utils/other.py
 * ModulesToSaveWrapper.update: modules_to_save["default"] = copy.deepcopy(original_module), trained;
 * original_module.requires_grad_(False) and kept), peft @5d602fdb. The model: q_proj [1024, 1024],
 * attn.v_proj [512, 1024] + bias 512, a LayerNorm named "norm" (weight and bias of 512). */
static void test_copies(void **state)
{
    (void)state;
    static const char *const named =
        "{\"input\": [16, 1024], \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false, \"name\": \"q_proj\"},"
        "{\"type\": \"ReLU\"},"
        "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 512, \"name\": \"attn.v_proj\"},"
        "{\"type\": \"LayerNorm\", \"normalized_shape\": [512], \"name\": \"model.norm\"}]}";
    const int64_t base = 1048576 + 524288 + 512 + 1024;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(named, strlen(named), "copies.json", &m, &err)) fail_msg("load: %s", err.msg);
    /* LN tuning of "norm" (PEFT's llama target matches model.norm by its suffix): the copy's 1,024
     * trained, the original's 1,024 kept frozen */
    vc_lora l;
    vc_lora_init(&l);
    l.method = VC_PEFT_LN_TUNING;
    l.dtype = VC_LORA_DTYPE_MODEL; /* autocast_adapter_dtype=False: the copy in the model's dtype */
    snprintf(l.targets, sizeof l.targets, "norm");
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), 1024);
    assert_int_equal(vc_model_parameters(m), base + 1024);
    /* bf16, AdamW: every weight 2 bytes (each tensor a multiple of 512 bytes), the copy's gradient and two states */
    vc_result r = estimate(m, VC_PREC_BF16);
    assert_int_equal(r.memory.weights, (base + 1024) * 2);
    assert_int_equal(r.memory.gradients, 1024 * 2);
    assert_int_equal(r.memory.optimizer_states, 2 * 1024 * 2);
    vc_result_free(&r);
    /* autocast_adapter_dtype=True (auto): cast_adapter_dtype upcasts the copy to fp32 */
    l.dtype = VC_LORA_DTYPE_AUTO;
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
    r = estimate(m, VC_PREC_FP32);
    assert_int_equal(r.memory.weights, (base + 1024) * 4);
    vc_result_free(&r);
    /* LoRA r 8 on q_proj with modules_to_save attn.v_proj: the adapters (16,384) and v_proj's
     * copy (524,288 + 512) trained, v_proj's original kept frozen */
    vc_lora_init(&l);
    l.r = 8;
    snprintf(l.targets, sizeof l.targets, "q_proj");
    snprintf(l.modules_to_save, sizeof l.modules_to_save, "v_proj");
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), 16384 + 524800);
    assert_int_equal(vc_model_parameters(m), base + 16384 + 524800);
    r = estimate(m, VC_PREC_FP32);
    assert_int_equal(r.memory.gradients, (16384 + 524800) * 4);
    assert_int_equal(r.memory.optimizer_states, 2 * (16384 + 524800) * 4);
    vc_result_free(&r);
    /* a module to save is no adapter's target (tuners_utils.py check_target_module_exists returns
     * _ExcludedModule for it): q_proj named in both gets its copy (1,048,576) and no adapters */
    snprintf(l.targets, sizeof l.targets, "q_proj,v_proj");
    snprintf(l.modules_to_save, sizeof l.modules_to_save, "q_proj");
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
    assert_int_equal(vc_model_trainable_parameters(m), 1048576 + 12288);
    assert_int_equal(vc_model_parameters(m), base + 1048576 + 12288);
    /* a name no layer has */
    snprintf(l.targets, sizeof l.targets, "q_proj");
    snprintf(l.modules_to_save, sizeof l.modules_to_save, "lm_head");
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--modules-to-save");
    vc_model_free(m);
    /* a copy of either side of a tied weight (ModulesToSaveWrapper's deepcopy unties them; its
     * tied_module path is another): refused, naming the layer */
    static const char *const tied =
        "{\"input\": {\"shape\": [16], \"dtype\": \"int64\"}, \"layers\": ["
        "{\"type\": \"Embedding\", \"num_embeddings\": 512, \"embedding_dim\": 64, \"name\": \"embed_tokens\"},"
        "{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64, \"bias\": false, \"name\": \"q_proj\"},"
        "{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 512, \"bias\": false, \"name\": \"lm_head\", \"tie\": \"embed_tokens\"}]}";
    if (vc_model_load_string(tied, strlen(tied), "tied.json", &m, &err)) fail_msg("load: %s", err.msg);
    for (int i = 0; i < 2; i++) {
        snprintf(l.targets, sizeof l.targets, "q_proj");
        snprintf(l.modules_to_save, sizeof l.modules_to_save, "%s", i ? "lm_head" : "embed_tokens");
        assert_int_equal(vc_model_set_lora(m, &l, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), "--modules-to-save");
        assert_non_null(strstr(CLI_MSG(&err), i ? "lm_head's weight is tied" : "embed_tokens's weight is tied"));
    }
    l.modules_to_save[0] = 0;
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK); /* the previous settings are back */
    assert_int_equal(vc_model_trainable_parameters(m), 8 * 64 + 64 * 8); /* r 8 on q_proj */
    vc_model_free(m);
}

/* A PEFT setting nobody honours is refused, naming the option, in one line. */
static void test_peft_refusals(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_error err;
    assert_int_equal(set_peft(m, VC_PEFT_IA3, 8, "q_proj", &err), VC_ERR_USAGE); /* IA3Config has no r */
    assert_string_equal(CLI_PATH(&err), "--peft");
    assert_int_equal(set_peft(m, VC_PEFT__N, 8, "q_proj", &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--peft");
    assert_int_equal(set_peft(m, VC_PEFT_IA3, 0, "k_proj", &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--lora-targets");
    vc_model_free(m);
    assert_int_equal(vc_peft_from_name("dora"), VC_PEFT_DORA);
    assert_int_equal(vc_peft_from_name("adalora"), -1);
    /* through the request (the CLI's checks): each refusal is one line naming the options */
    static const char *const bad[][4] = {
        {"ia3", "lora_alpha", "16", "peft=ia3 learns one vector per target module: it has no lora_alpha"},
        {"ia3", "qlora", "true", "peft=ia3 over quantized weights (peft/tuners/ia3/bnb.py) is not modelled: it does not go with qlora"},
        {"dora", "weights", "gptq4", "dora over gptq weights is not modelled (DoRA is, over nf4, fp4 and int8)"},
        {"rslora", "serve", "true", "peft with serve: vLLM's LoRA serving"},
        {"ln_tuning", "lora", "8", "peft=ln_tuning trains a copy of each target module: it has no rank"},
        /* cast_adapter_dtype's fp32 copy: LlamaRMSNorm's weight * x.to(input_dtype) returns fp32, refused by a bf16 Linear */
        {"ln_tuning", "lora_dtype", "auto", "peft=ln_tuning on 16-bit weights: PEFT upcasts the copied norms to fp32"},
        {"lora", "modules_to_save", "wte", "no layer is named wte"},
    };
    /* a copy of a quantized Linear: _set_layer_requires_grad on Params4bit (uint8) fails */
    {
        vc_request *q = vc_request_new();
        vc_response *resp = NULL;
        assert_int_equal(vc_request_set(q, "qlora", "true", &err), VC_OK);
        assert_int_equal(vc_request_set(q, "modules_to_save", "q_proj", &err), VC_OK);
        assert_int_equal(vc_request_add_model(q, VC_TEST_DATA "/hf/llama-3.1-8b.json", &err), VC_OK);
        assert_int_equal(vc_request_run(q, &resp, &err), VC_ERR_USAGE);
        assert_non_null(strstr(CLI_MSG(&err), "self_attn.q_proj is stored as nf4: a quantized layer cannot be trained in full"));
        vc_request_free(q);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vc_request *q = vc_request_new();
        vc_response *resp = NULL;
        assert_int_equal(vc_request_set(q, "peft", bad[i][0], &err), VC_OK);
        assert_int_equal(vc_request_set(q, "precision", "bf16", &err), VC_OK);
        if (!strcmp(bad[i][1], "serve")) assert_int_equal(vc_request_set(q, "gpu", "h100-80gb", &err), VC_OK);
        assert_int_equal(vc_request_set(q, bad[i][1], bad[i][2], &err), VC_OK);
        assert_int_equal(vc_request_add_model(q, VC_TEST_DATA "/hf/llama-3.1-8b.json", &err), VC_OK);
        assert_int_equal(vc_request_run(q, &resp, &err), VC_ERR_USAGE);
        assert_null(strchr(err.msg, '\n'));
        char plain[sizeof err.msg];
        size_t k = 0;
        for (const char *c = err.msg; *c && k + 1 < sizeof plain; c++) /* the option marks: --name=value as the CLI writes */
            if (*c != VC_OPTION_MARK) plain[k++] = *c;
        plain[k] = 0;
        if (bad[i][3] && !strstr(plain, bad[i][3])) fail_msg("%s: got '%s'", bad[i][3], plain);
        vc_request_free(q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults), cmocka_unit_test(test_counts),   cmocka_unit_test(test_bf16_adapters_fp32),
        cmocka_unit_test(test_matching), cmocka_unit_test(test_errors),   cmocka_unit_test(test_dropout_saves),
        cmocka_unit_test(test_lora_dtype), cmocka_unit_test(test_peft_counts), cmocka_unit_test(test_ia3_feedforward),
        cmocka_unit_test(test_peft_refusals), cmocka_unit_test(test_copies), cmocka_unit_test(test_dora_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
