/*
 * test_quant.c — quantized Linear weights (src/policy/quant.c): the bytes each
 * storage format keeps per weight, what stays 16-bit, the dequantization
 * temporaries, QLoRA on a small Hugging Face config, quantization_config,
 * and the errors. Every expected number is derived by hand from the
 * library's source as cited in src/policy/quant.c and docs/quantization.md, each
 * tensor rounded up to the caching allocator's 512-byte blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

/* proj: a 4096 x 4096 weight (16,777,216 elements) the format replaces;
 * lm_head: the last module, left in 16-bit (get_keys_to_not_convert):
 * 64 x 4096 bf16 = 524,288 bytes. */
static const char *const model =
    "{\"input\": [16, 4096], \"layers\": ["
    "{\"type\": \"Linear\", \"name\": \"proj\", \"in_features\": 4096, \"out_features\": 4096, \"bias\": false},"
    "{\"type\": \"Linear\", \"name\": \"lm_head\", \"in_features\": 4096, \"out_features\": 64, \"bias\": false}]}";
#define LM_HEAD 524288

static vc_model *load(const char *json)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "quant.json", &m, &err)) fail_msg("load: %s", err.msg);
    return m;
}

static vc_model *load_as(const char *fmt)
{
    vc_model *m = load(model);
    vc_quant q;
    vc_error err;
    assert_int_equal(vc_quant_from_name(fmt, &q), 0);
    if (vc_model_set_weights(m, &q, &err)) fail_msg("set_weights %s: %s", fmt, err.msg);
    return m;
}

static vc_result infer(const vc_model *m)
{
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.precision = VC_PREC_BF16;
    o.workspace = 0;
    vc_result r;
    vc_error err;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    return r;
}

static int64_t weights_of(const char *fmt)
{
    vc_model *m = load_as(fmt);
    vc_result r = infer(m);
    /* quantizing changes storage, not the parameter count: 4096*4096 + 64*4096 */
    assert_int_equal(r.parameters, 17039360);
    int64_t w = r.memory.weights;
    vc_result_free(&r);
    vc_model_free(m);
    return w;
}

/* bitsandbytes nf4, blocksize 64, double quant (quantize_4bit with
 * compress_statistics=True), n = 16,777,216, blocks = n / 64 = 262,144:
 *   data (n + 1) // 2 uint8          8,388,608
 *   code 16 fp32 = 64 B              512
 *   offset 0-dim fp32                512
 *   absmax2 ceil(262,144/256) fp32   4,096
 *   absmax 262,144 uint8             262,144
 *   code2 256 fp32 (a copy)          1,024
 *                                    8,656,896
 * plus name2qmap["dynamic"] (256 fp32), cached once: 1,024. */
static void test_nf4_bytes(void **state)
{
    (void)state;
    assert_int_equal(weights_of("nf4"), 8656896 + 1024 + LM_HEAD);
    assert_int_equal(weights_of("fp4"), 8656896 + 1024 + LM_HEAD); /* same layout, another code */
}

/* Without double quantization: data 8,388,608 + code 512 + absmax
 * 262,144 fp32 (1,048,576), nothing shared. */
static void test_nf4_single_quant(void **state)
{
    (void)state;
    vc_model *m = load(model);
    vc_quant q;
    vc_error err;
    assert_int_equal(vc_quant_from_name("nf4", &q), 0);
    q.double_quant = 0;
    assert_int_equal(vc_model_set_weights(m, &q, &err), VC_OK);
    vc_result r = infer(m);
    assert_int_equal(r.memory.weights, 8388608 + 512 + 1048576 + LM_HEAD);
    vc_result_free(&r);
    vc_model_free(m);
}

/* int8 (Int8Params: int8_vectorwise_quant): CB int8 16,777,216 + SCB fp32
 * [4096] 16,384. GPTQ 4-bit, group 128 (QuantLinear): qweight 4096/32*4 x
 * 4096 int32 = 8,388,608; qzeros 32 x 512 int32 = 65,536; scales 32 x 4096
 * fp16 = 262,144; g_idx 4096 int32 = 16,384. AWQ 4-bit, group 128
 * (WQLinear_GEMM): qweight 4096 x 512 int32 = 8,388,608; qzeros 32 x 512
 * int32 = 65,536; scales 32 x 4096 fp16 = 262,144. fp8 (float8_e4m3fn,
 * 16,777,216 B): per tensor one fp32 scale (512); per channel (FbgemmFp8Linear)
 * [4096, 1] fp32 16,384 + input_scale_ub 512; blocks of 128 x 128
 * (FP8Linear) 32 x 32 fp32 = 4,096. */
static void test_other_formats(void **state)
{
    (void)state;
    assert_int_equal(weights_of("int8"), 16777216 + 16384 + LM_HEAD);
    /* + ExLlama v1's buffers, 4 bits only (AutoGPTQ autogptq_post_init): temp_state
     * fp16 [1, 1] (512 B as allocated) and temp_dq fp16 [1, qweight.numel() * 8] of
     * the largest weight = 4096 x 4096 x 2 = 33,554,432 */
    assert_int_equal(weights_of("gptq4"), 8388608 + 65536 + 262144 + 16384 + LM_HEAD + 512 + 33554432);
    /* 8 bits: qweight 4096/32*8 x 4096 int32 = 16,777,216; qzeros 32 x 1024 int32 = 131,072 */
    assert_int_equal(weights_of("gptq8"), 16777216 + 131072 + 262144 + 16384 + LM_HEAD);
    assert_int_equal(weights_of("awq4"), 8388608 + 65536 + 262144 + LM_HEAD);
    assert_int_equal(weights_of("fp8"), 16777216 + 512 + LM_HEAD);
    assert_int_equal(weights_of("fp8-channel"), 16777216 + 16384 + 512 + LM_HEAD);
    assert_int_equal(weights_of("fp8-block"), 16777216 + 4096 + LM_HEAD);
    /* dense bf16: both weights at 2 bytes */
    assert_int_equal(weights_of("dense"), 33554432 + LM_HEAD);
}

/* The forward of a 4-bit Linear (gemm_4bit -> _dequant_linear_fallback):
 * absmax_dq fp32 [262,144] (1,048,576), absmax = absmax_dq + offset
 * (1,048,576) and B_dq bf16 [4096, 4096] (33,554,432) live with the input
 * (16 x 4096 bf16 = 131,072) and the output (131,072) at the peak. */
static void test_nf4_forward_temporaries(void **state)
{
    (void)state;
    vc_model *m = load_as("nf4");
    vc_result r = infer(m);
    int64_t w = 8656896 + 1024 + LM_HEAD;
    assert_int_equal(r.memory.peak_allocated, w + 131072 + 131072 + 1048576 + 1048576 + 33554432);
    assert_int_equal(r.peak.temporaries, 1048576 + 1048576 + 33554432);
    vc_result_free(&r);
    vc_model_free(m);
}

static void count_line(void *ctx, const char *text)
{
    int *n = ctx;
    /* a dequantized bf16 copy of a 4096 x 4096 weight */
    if (strstr(text, "alloc temp") && strstr(text, " 33554432 ")) n[strncmp(text, "backward", 8) == 0]++;
}

/* Training with LoRA on q (its input needs no gradient) and a frozen nf4
 * proj2 after it: forward dequantizes q and proj2; MatMul4Bit.backward
 * dequantizes again only where the input's gradient is needed (proj2). */
static void test_nf4_backward_dequant(void **state)
{
    (void)state;
    static const char *const json =
        "{\"input\": [16, 4096], \"layers\": ["
        "{\"type\": \"Linear\", \"name\": \"q\", \"in_features\": 4096, \"out_features\": 4096, \"bias\": false},"
        "{\"type\": \"Linear\", \"name\": \"proj2\", \"in_features\": 4096, \"out_features\": 4096, \"bias\": false},"
        "{\"type\": \"Linear\", \"name\": \"lm_head\", \"in_features\": 4096, \"out_features\": 64, \"bias\": false}]}";
    vc_model *m = load(json);
    vc_lora l;
    vc_lora_init(&l);
    l.r = 8; /* LoraConfig r=8 */
    snprintf(l.targets, sizeof l.targets, "q");
    vc_quant q;
    vc_error err;
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
    assert_int_equal(vc_quant_from_name("nf4", &q), 0);
    assert_int_equal(vc_model_set_weights(m, &q, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    int n[2] = {0, 0};
    assert_int_equal(vc_trace(m, &o, count_line, n, &err), VC_OK);
    assert_int_equal(n[0], 2);
    assert_int_equal(n[1], 1);
    vc_model_free(m);
}

/* A Llama config (2 layers, hidden 64, intermediate 128, 4 heads, 2 KV
 * heads of 16, vocab 256, untied) with QLoRA (nf4 double quant, LoRA r 8 on
 * PEFT's q_proj,v_proj). Each quantized weight of n elements keeps data
 * n/2 B, code 512, offset 512, absmax2 512, absmax n/64 B (one block),
 * code2 1,024: q, o (4,096 el.) 2,048 + 3,072 = 5,120; k, v (2,048) 1,024
 * + 3,072 = 4,096; gate, up, down (8,192) 4,096 + 3,072 = 7,168; a layer
 * 39,936, two 79,872, and the 1,024 shared code: 80,896. The same weights
 * in bf16: 2 x (8,192 + 4,096 + 4,096 + 8,192 + 3 x 16,384) = 147,456. So
 * QLoRA holds 147,456 - 80,896 = 66,560 bytes less than bf16 LoRA; the
 * parameter count is unchanged and only the adapters train: per layer
 * q (8x64 + 64x8 = 1,024) and v (8x64 + 32x8 = 768), 3,584 in all, whose
 * fp32 gradients are 2 x (2,048 + 2,048 + 2,048 + 1,024) = 14,336 B. */
static const char *const llama =
    "{\"model_type\": \"llama\", \"vocab_size\": 256, \"hidden_size\": 64, \"intermediate_size\": 128,"
    " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-05,"
    " \"tie_word_embeddings\": false%s}";

static vc_result qlora_run(const char *extra, bool quantize, int64_t *params)
{
    char json[1024];
    snprintf(json, sizeof json, llama, extra);
    vc_model *m = load(json);
    vc_lora l;
    vc_lora_init(&l);
    l.r = 8; /* LoraConfig r=8 */
    vc_error err;
    snprintf(l.targets, sizeof l.targets, "%s", vc_model_lora_targets(m));
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
    if (quantize) {
        vc_quant q;
        assert_int_equal(vc_quant_from_name("nf4", &q), 0);
        assert_int_equal(vc_model_set_weights(m, &q, &err), VC_OK);
    }
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.optim = VC_OPTIM_ADAMW;
    o.workspace = 0;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    *params = vc_model_parameters(m);
    vc_model_free(m);
    return r;
}

static void test_qlora_llama(void **state)
{
    (void)state;
    int64_t pd, pq, pc;
    vc_result dense = qlora_run("", false, &pd), q = qlora_run("", true, &pq);
    assert_int_equal(pd, pq);
    assert_int_equal(dense.memory.weights - q.memory.weights, 147456 - 80896);
    assert_int_equal(q.trainable_parameters, 3584);
    assert_int_equal(q.memory.gradients, 14336);
    /* the same from the config's quantization_config (BitsAndBytesConfig as
     * to_dict writes it), no --weights */
    vc_result c = qlora_run(", \"quantization_config\": {\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true,"
                            " \"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_use_double_quant\": true}", false, &pc);
    assert_int_equal(c.memory.weights, q.memory.weights);
    assert_int_equal(c.memory.peak_allocated, q.memory.peak_allocated);
    vc_result_free(&dense);
    vc_result_free(&q);
    vc_result_free(&c);
}

static vc_status load_config(const char *extra, vc_error *err)
{
    char json[1024];
    snprintf(json, sizeof json, llama, extra);
    vc_model *m = NULL;
    vc_status st = vc_model_load_string(json, strlen(json), "config.json", &m, err);
    vc_model_free(m);
    return st;
}

/* quantization_config: the method and its keys, and errors naming the key. */
static void test_config_keys(void **state)
{
    (void)state;
    char json[1024];
    vc_error err;
    vc_model *m = NULL;
    snprintf(json, sizeof json, llama, ", \"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 32}");
    assert_int_equal(vc_model_load_string(json, strlen(json), "c.json", &m, &err), VC_OK);
    assert_int_equal(vc_model_weights(m, NULL), VC_WEIGHTS_GPTQ);
    vc_model_free(m);
    assert_int_equal(load_config(", \"quantization_config\": {\"quant_method\": \"hqq\"}", &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "quantization_config.quant_method");
    assert_int_equal(load_config(", \"quantization_config\": {\"quant_method\": \"gptq\"}", &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "quantization_config.bits");
    assert_int_equal(load_config(", \"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 3}", &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "quantization_config.bits");
    assert_int_equal(load_config(", \"quantization_config\": {\"quant_method\": \"fp8\", \"weight_block_size\": [128]}", &err),
                     VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "quantization_config.weight_block_size");
    assert_int_equal(load_config(", \"quantization_config\": {\"quant_method\": \"bitsandbytes\"}", &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "quantization_config.load_in_4bit");
}

/* What an estimate with quantized weights refuses. */
static void test_errors(void **state)
{
    (void)state;
    vc_model *m = load_as("nf4");
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    vc_result r;
    vc_error err;
    /* fp32 precision: the compute dtype is 16-bit */
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--weights");
    /* training a purely quantized model */
    o.mode = VC_MODE_TRAIN;
    o.precision = VC_PREC_BF16;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--weights");
    vc_model_free(m);
    /* int8 under LoRA: MatMul8bitLt keeps the input's outlier columns (data-dependent): inference only */
    m = load(model);
    vc_lora l;
    vc_lora_init(&l);
    l.r = 8;
    snprintf(l.targets, sizeof l.targets, "proj");
    vc_quant q8;
    assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
    assert_int_equal(vc_quant_from_name("int8", &q8), 0);
    assert_int_equal(vc_model_set_weights(m, &q8, &err), VC_OK);
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--weights");
    vc_model_free(m);
    /* AWQ: 100 input features is no multiple of the group of 128 (WQLinear_GEMM's assert) */
    static const char *const odd = "{\"input\": [100], \"layers\": ["
                                   "{\"type\": \"Linear\", \"name\": \"a\", \"in_features\": 100, \"out_features\": 128},"
                                   "{\"type\": \"Linear\", \"name\": \"lm_head\", \"in_features\": 128, \"out_features\": 8}]}";
    m = load(odd);
    vc_quant q;
    assert_int_equal(vc_quant_from_name("awq4", &q), 0);
    assert_int_equal(vc_model_set_weights(m, &q, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--weights");
    assert_int_equal(vc_model_weights(m, NULL), VC_WEIGHTS_DENSE); /* the model is left as it was */
    assert_int_equal(vc_quant_from_name("gptq5", &q), -1);
    assert_int_equal(vc_quant_from_name("nf3", &q), -1);
    vc_model_free(m);
}

/* modules_to_not_convert: a skipped Linear stays bf16. */
static void test_skip(void **state)
{
    (void)state;
    vc_model *m = load(model);
    vc_quant q;
    vc_error err;
    assert_int_equal(vc_quant_from_name("int8", &q), 0);
    snprintf(q.skip, sizeof q.skip, "proj");
    assert_int_equal(vc_model_set_weights(m, &q, &err), VC_OK);
    vc_result r = infer(m);
    assert_int_equal(r.memory.weights, 33554432 + LM_HEAD);
    vc_result_free(&r);
    vc_model_free(m);
}

/* A Mixtral config (2 layers, hidden 64, intermediate 96, 4 experts, 4
 * heads, 1 KV head of 16) as transformers 5 builds it: the router
 * (MixtralTopKRouter.weight) and the stacked experts (MixtralExperts
 * gate_up_proj / down_proj) are nn.Parameters, not nn.Linear, so
 * bitsandbytes (_replace_with_bnb_linear: nn.Linear modules only) leaves
 * them dense (bitsandbytes-foundation/bitsandbytes issue 1849, "Failed to
 * quant MoE models with fused expert weights in transformers v5": the fused
 * experts are skipped and stay full precision; PR 1965's Experts4bit is not
 * merged); only the attention projections are quantized. nf4 (double
 * quant) bytes by the formula of test_nf4_bytes, each tensor at least 512:
 * q, o 64x64: 5,120 (bf16 8,192); k, v 16x64: 3,584 (bf16 2,048). Per
 * layer dense - nf4 = 2 x 3,072 - 2 x 1,536 = 3,072; two layers 6,144,
 * less the shared 1,024: 5,120. Leaving the router out
 * (modules_to_not_convert ["gate"]) changes nothing: it is no Linear. */
static int64_t moe_weights(const char *qc)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"model_type\": \"mixtral\", \"vocab_size\": 256, \"hidden_size\": 64, \"intermediate_size\": 96,"
             " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"num_local_experts\": 4,"
             " \"num_experts_per_tok\": 2%s}", qc);
    vc_model *m = load(json);
    vc_result r = infer(m);
    int64_t w = r.memory.weights;
    vc_result_free(&r);
    vc_model_free(m);
    return w;
}

static void test_moe(void **state)
{
    (void)state;
    int64_t dense = moe_weights("");
    int64_t q = moe_weights(", \"quantization_config\": {\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true,"
                            " \"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_use_double_quant\": true}");
    int64_t skip = moe_weights(", \"quantization_config\": {\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true,"
                               " \"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_use_double_quant\": true,"
                               " \"llm_int8_skip_modules\": [\"gate\"]}");
    assert_int_equal(dense - q, 5120);
    assert_int_equal(q - skip, 0);
}

/* Swin V2's cpb_mlp (torchvision swin_transformer.py ShiftedWindowAttentionV2:
 * nn.Sequential(nn.Linear(2, 512), nn.ReLU(inplace=True), nn.Linear(512,
 * num_heads, bias=False))) is two nn.Linear modules, which bitsandbytes
 * replaces as any other (transformers integrations/bitsandbytes.py
 * _replace_with_bnb_linear: every nn.Linear not in modules_to_not_convert);
 * the bias table input, the logit scale and the buffers are no Linear and stay
 * 16-bit. dim 64, 8 heads, window 7 on 14 x 14; the head Linear is the last
 * module (left dense). nf4 bytes by the formula of test_nf4_bytes:
 * cpb_mlp.0.weight [512, 2] (1,024 el.) 512 + 512 + 512 + 512 + 512 + 1,024 =
 * 3,584 (bf16 2,048); cpb_mlp.2.weight [8, 512] (4,096 el.) 2,048 + 4 x 512
 * + 1,024 = 5,120 (bf16 8,192): leaving cpb_mlp out (modules_to_not_convert)
 * keeps 2,048 + 8,192 - 3,584 - 5,120 = 1,536 bytes more. Their forward
 * (gemm_4bit's _dequant_linear_fallback on the 169-row coordinate table)
 * makes each weight's dequantized bf16 copy: 2,048 B in cpb_mlp.0's addmm,
 * 8,192 B in cpb_mlp.2's mm, once per forward (no batch). */
static const char *const swin_v2 =
    "{\"input\": [14, 14, 64], \"layers\": ["
    "{\"type\": \"ShiftedWindowAttentionV2\", \"name\": \"attn\", \"dim\": 64, \"window_size\": 7, \"shift_size\": 0, \"num_heads\": 8},"
    "{\"type\": \"Flatten\"}, {\"type\": \"Linear\", \"name\": \"head\", \"in_features\": 12544, \"out_features\": 10}]}";

static void count_cpb(void *ctx, const char *text)
{
    int *n = ctx;
    if (strncmp(text, "forward", 7) || !strstr(text, "alloc temp") || !strstr(text, "layers[0] ")) return; /* the window attention */
    if (strstr(text, " 2048 ") && strstr(text, " addmm")) n[0]++;
    if (strstr(text, " 8192 ") && strstr(text, " mm")) n[1]++;
}

static int64_t swin_cpb(const char *skip, int n[2])
{
    vc_model *m = load(swin_v2);
    vc_quant q;
    vc_error err;
    assert_int_equal(vc_quant_from_name("nf4", &q), 0);
    snprintf(q.skip, sizeof q.skip, "%s", skip);
    assert_int_equal(vc_model_set_weights(m, &q, &err), VC_OK);
    vc_result r = infer(m);
    int64_t w = r.memory.weights;
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.precision = VC_PREC_BF16;
    o.workspace = 0;
    n[0] = n[1] = 0;
    assert_int_equal(vc_trace(m, &o, count_cpb, n, &err), VC_OK);
    vc_result_free(&r);
    vc_model_free(m);
    return w;
}

static void test_swin_cpb_mlp(void **state)
{
    (void)state;
    int n[2], ns[2];
    int64_t q = swin_cpb("", n), kept = swin_cpb("cpb_mlp", ns);
    assert_int_equal(kept - q, 1536);
    assert_int_equal(n[0], 1); /* cpb_mlp.0's dequantized weight */
    assert_int_equal(n[1], 1); /* cpb_mlp.2's */
    assert_int_equal(ns[0], 0); /* left dense: no dequantization */
    assert_int_equal(ns[1], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nf4_bytes),
        cmocka_unit_test(test_nf4_single_quant),
        cmocka_unit_test(test_other_formats),
        cmocka_unit_test(test_nf4_forward_temporaries),
        cmocka_unit_test(test_nf4_backward_dequant),
        cmocka_unit_test(test_qlora_llama),
        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_skip),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_swin_cpb_mlp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
