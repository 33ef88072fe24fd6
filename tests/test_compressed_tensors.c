/*
 * test_compressed_tensors.c — config.json checkpoints of quant_method "compressed-tensors" (issue 31
 * item 3; src/policy/quant.c, docs/quantization.md). Under transformers (-m infer, -m generate) each
 * targeted nn.Linear becomes compressed-tensors' CompressedLinear (linear/compressed_linear.py
 * @52792be0), which after its first forward holds the decompressed weight in the model's dtype beside
 * weight_scale (the model's dtype; initialize.py initialize_qparams), any zero point and g_idx, and for
 * pack-quantized weight_packed int32 [out, in / 8] and weight_shape int32 [2]
 * (pack_quantized.py compression_param_info). Under vLLM (--serve), CompressedTensorsW8A8Fp8 and
 * CompressedTensorsW8A8Int8 keep the fp8 or int8 weight and fp32 scales. Every expected byte count below
 * is derived by hand from those shapes, each tensor rounded up to the caching allocator's 512 B, as the
 * difference from the same model's dense estimate (the unquantized parameters are the same on both).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <stdlib.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"
#include "read_file.h"

#define HF VC_TEST_DATA "/hf/"

static vc_model *load(const char *file)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(file, &m, &err)) fail_msg("%s: %s", file, CLI_MSG(&err));
    return m;
}

static int64_t infer_weights(const vc_model *m, vc_mode mode)
{
    vc_options o;
    vc_options_init(&o);
    o.mode = mode;
    o.precision = VC_PREC_FP16;
    o.new_tokens = 8;
    vc_result r;
    vc_error err;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("%s", CLI_MSG(&err));
    int64_t w = r.memory.weights;
    vc_result_free(&r);
    return w;
}

static vc_status serve_tp(const vc_model *m, int64_t tp, vc_serve_result *sr, vc_error *err)
{
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_FP16;
    o.tp = o.gpus = tp;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec gpu;
    assert_int_equal(vc_gpu_parse("h100-80gb", &gpu, err), VC_OK);
    return vc_serve(m, &o, &so, &gpu, sr, err);
}

static vc_status serve(const vc_model *m, vc_serve_result *sr, vc_error *err) { return serve_tp(m, 1, sr, err); }

/* Llama-3.1-8B's Linear weights per decoder layer, [out, in]: q_proj and o_proj [4096, 4096], k_proj and
 * v_proj [1024, 4096], gate_proj and up_proj [14336, 4096], down_proj [4096, 14336]: 43,008 output rows,
 * 218,103,808 elements; 32 layers. lm_head is in "ignore" (fp16, as in the dense model). */
static void test_llama_transformers(void **state)
{
    (void)state;
    vc_model *dense = load(HF "llama-3.1-8b.json");
    int64_t d = infer_weights(dense, VC_MODE_INFER);
    vc_model_free(dense);
    /* FP8_DYNAMIC (float-quantized, channel): per Linear the fp16 decompressed weight (the dense
     * model's bytes) and weight_scale fp16 [out, 1]: 8,192 + 2,048 + 2,048 + 8,192 + 28,672 + 28,672 +
     * 8,192 = 86,016 B a layer (each a multiple of 512), x 32 = 2,752,512 B. Dynamic activations: no
     * input_scale. */
    vc_model *m = load(HF "llama-3.1-8b-fp8-dynamic.json");
    assert_int_equal(infer_weights(m, VC_MODE_INFER) - d, 2752512);
    assert_int_equal(infer_weights(m, VC_MODE_GENERATE) - infer_weights(m, VC_MODE_INFER), 0); /* the same weights */
    vc_model_free(m);
    /* W8A8 (int-quantized, int8 channel weights, dynamic int8 activations): the same tensors */
    m = load(HF "llama-3.1-8b-w8a8.json");
    assert_int_equal(infer_weights(m, VC_MODE_INFER) - d, 2752512);
    vc_model_free(m);
    /* W4A16 (pack-quantized, int4, group 128, symmetric): per Linear weight_scale fp16 [out, in / 128],
     * weight_packed int32 [out, in / 8], weight_shape int32 [2] (512 B), beside the fp16 weight:
     *   q_proj, o_proj  262,144 + 8,388,608 + 512 = 8,651,264 each
     *   k_proj, v_proj   65,536 + 2,097,152 + 512 = 2,163,200 each
     *   gate, up        917,504 + 29,360,128 + 512 = 30,278,144 each
     *   down [4096, 14336]: 4,096 x 112 x 2 = 917,504 + 4,096 x 1,792 x 4 = 29,360,128 + 512 = 30,278,144
     * a layer 2 x 8,651,264 + 2 x 2,163,200 + 3 x 30,278,144 = 112,463,360 B, x 32 = 3,598,827,520 B. */
    m = load(HF "llama-3.1-8b-w4a16.json");
    assert_int_equal(infer_weights(m, VC_MODE_INFER) - d, INT64_C(3598827520));
    vc_quant q;
    assert_int_equal(vc_model_weights(m, &q), VC_WEIGHTS_CT);
    assert_int_equal(q.bits, 4);
    assert_int_equal(q.group, 128);
    assert_int_equal(q.ct_strategy, VC_CT_GROUP);
    assert_true(q.ct_packed);
    char d_buf[128];
    vc_quant_describe(&q, d_buf, sizeof d_buf);
    assert_string_equal(d_buf, "compressed-tensors (int4 group 128, packed, weights only)");
    vc_model_free(m);
}

/* vLLM: fp8 (or int8) weight [out, in], 1 B an element, and weight_scale fp32 [out, 1]. Against the dense
 * fp16 model: -6,979,321,856 B of weights (2 B -> 1 B an element) and 4 x 43,008 x 32 = 5,505,024 B of
 * scales (each a multiple of 512): -6,973,816,832 B. */
static void test_llama_vllm(void **state)
{
    (void)state;
    vc_error err = {0}; /* vc_serve leaves it as it finds it on success */
    vc_serve_result sr;
    vc_model *dense = load(HF "llama-3.1-8b.json");
    assert_int_equal(serve(dense, &sr, &err), VC_OK);
    int64_t d = sr.weights;
    vc_model_free(dense);
    const char *files[] = {HF "llama-3.1-8b-fp8-dynamic.json", HF "llama-3.1-8b-w8a8.json"};
    for (int i = 0; i < 2; i++) {
        vc_model *m = load(files[i]);
        if (serve(m, &sr, &err)) fail_msg("%s: %s", files[i], CLI_MSG(&err));
        assert_int_equal(sr.weights - d, -INT64_C(6973816832));
        vc_model_free(m);
    }
    /* tensor_parallel_size 2: each rank's half of the Linear weights (3,489,660,928 B saved by fp8) and the
     * fp32 scales [out / 2, 1] of the column-parallel q, k, v, gate, up, [out, 1] of the row-parallel o and
     * down (ChannelQuantScaleParameter, output_dim 0): 8,192 + 2,048 + 2,048 + 16,384 + 28,672 + 28,672 +
     * 16,384 = 102,400 B a layer, x 32 = 3,276,800 B: -3,486,384,128 B against the dense rank */
    dense = load(HF "llama-3.1-8b.json");
    assert_int_equal(serve_tp(dense, 2, &sr, &err), VC_OK);
    d = sr.weights;
    vc_model_free(dense);
    vc_model *t2 = load(files[0]);
    if (serve_tp(t2, 2, &sr, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(sr.weights - d, -INT64_C(3486384128));
    vc_model_free(t2);
}

static vc_status serve_on(const vc_model *m, const char *gpu_name, int64_t tp, vc_serve_result *sr, vc_error *err)
{
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_FP16;
    o.tp = o.gpus = tp;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec gpu;
    assert_int_equal(vc_gpu_parse(gpu_name, &gpu, err), VC_OK);
    return vc_serve(m, &o, &so, &gpu, sr, err);
}

/* W4A16 (pack-quantized int4, group 128, symmetric) under vLLM: CompressedTensorsWNA16, whose kernel
 * choose_mp_linear_kernel picks per vLLM layer (src/policy/quant.c ct_vllm_wna16). vLLM's layers are
 * qkv_proj [6144, 4096], o_proj [4096, 4096], gate_up_proj [28672, 4096] and down_proj [4096, 14336]:
 * on an H100 (compute capability 9.0) Machete takes all four (group 128; in_features % 64, out_features
 * % 128). Per decoder layer:
 *   weight_packed int32 [out, in / 8], per projection: 2 x 8,388,608 (q, o) + 2 x 2,097,152 (k, v)
 *     + 3 x 29,360,128 (gate, up, down) = 109,051,904 B
 *   weight_scale fp16 [out, in / 128], per vLLM layer: qkv 6,144 x 32 x 2 = 393,216, o 4,096 x 32 x 2 =
 *     262,144, gate_up 28,672 x 32 x 2 = 1,835,008, down 4,096 x 112 x 2 = 917,504: 3,407,872 B
 *   weight_shape int64 [2], one per vLLM layer: 4 x 512 B = 2,048 B
 * 112,461,824 B a layer (1,536 B less than transformers' 112,463,360 B of packed data, scales and
 * shapes: three weight_shape fewer, qkv's and gate_up's projections fused), x 32 = 3,598,778,368 B,
 * against the dense fp16 Linears' 32 x 218,103,808 x 2 = 13,958,643,712 B: -10,359,865,344 B. The
 * profiling run's activations are the dense model's (no kernel temporaries modelled), so the KV cache
 * pool gains the same bytes, and the blocks are the pool over 2 MiB (32 layers x K and V x 8 KV heads x
 * 128 x 2 B x 16 tokens = 2,097,152 B). On an A100 (8.0) Marlin takes them (Machete needs 9.0, AllSpark
 * 8-bit channel weights), and each vLLM layer keeps marlin_make_workspace_new's int32 [108
 * multiprocessors] (432 B, 512 B allocated): + 4 x 32 x 512 = 65,536 B. */
static void test_w4a16_vllm(void **state)
{
    (void)state;
    vc_error err = {0};
    vc_serve_result d, w;
    vc_model *dense = load(HF "llama-3.1-8b.json"), *m = load(HF "llama-3.1-8b-w4a16.json");
    if (serve_on(dense, "h100-80gb", 1, &d, &err) || serve_on(m, "h100-80gb", 1, &w, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(w.weights - d.weights, -INT64_C(10359865344));
    assert_int_equal(w.profile_peak - d.profile_peak, -INT64_C(10359865344));
    assert_int_equal(w.kv_cache - d.kv_cache, INT64_C(10359865344));
    assert_int_equal(w.page_bytes, 2097152);
    assert_int_equal(w.blocks, (d.kv_cache + INT64_C(10359865344)) / 2097152);
    if (serve_on(dense, "a100-80gb", 1, &d, &err) || serve_on(m, "a100-80gb", 1, &w, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(w.weights - d.weights, -INT64_C(10359865344) + 65536);
    /* tensor_parallel_size 2 on H100s: each rank's qkv_proj [3072, 4096], o_proj [4096, 2048] (row-parallel:
     * its scales [4096, 2048 / 128]), gate_up_proj [14336, 4096], down_proj [4096, 7168], all Machete's:
     *   weight_packed 2 x 4,194,304 + 2 x 1,048,576 + 3 x 14,680,064 = 54,525,952 B
     *   weight_scale  3,072 x 32 x 2 + 4,096 x 16 x 2 + 14,336 x 32 x 2 + 4,096 x 56 x 2 = 196,608 + 131,072
     *                 + 917,504 + 458,752 = 1,703,936 B; weight_shape 2,048 B
     * 56,231,936 B a layer, x 32 = 1,799,421,952 B, against the dense rank's 32 x 109,051,904 x 2 =
     * 6,979,321,856 B: -5,179,899,904 B */
    if (serve_on(dense, "h100-80gb", 2, &d, &err) || serve_on(m, "h100-80gb", 2, &w, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(w.weights - d.weights, -INT64_C(5179899904));
    vc_model_free(dense);
    vc_model_free(m);
}

/* A llama of hidden 256, intermediate 512, 4 heads of 64, 2 KV heads, 2 layers (fp16), W4A16 with lm_head
 * ignored, under vLLM: its layers qkv_proj [256 + 128 + 128, 256], o_proj [256, 256], gate_up_proj
 * [1024, 256], down_proj [256, 512] (k_proj's 128 rows alone would fail Machete's out_features % 128: the
 * checks see the fused layer). Per decoder layer, group 128:
 *   weight_packed 2 x 32,768 (q, o) + 2 x 16,384 (k, v) + 3 x 65,536 (gate, up, down) = 294,912 B
 *   weight_scale  fp16 512 x 2 x 2 + 256 x 2 x 2 + 1,024 x 2 x 2 + 256 x 4 x 2 = 2,048 + 1,024 + 4,096
 *                 + 2,048 = 9,216 B; weight_shape 4 x 512 B
 * 306,176 B a layer, 612,352 B for two, against the dense 2 x 589,824 x 2 = 2,359,296 B: -1,746,944 B. */
static vc_status mid(const char *weights, const char *gpu_name, int64_t tp, int64_t *delta, vc_error *err)
{
    char js[4096];
    const char *base = "{\"model_type\": \"llama\", \"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 256, "
                       "\"intermediate_size\": 512, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                       "\"num_key_value_heads\": 2, \"vocab_size\": 256, \"max_position_embeddings\": 4096, "
                       "\"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\"";
    snprintf(js, sizeof js, "%s}", base);
    vc_model *d = NULL, *m = NULL;
    vc_status st = vc_model_load_string(js, strlen(js), "dense", &d, err);
    if (st) return st;
    snprintf(js, sizeof js, "%s, \"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": "
             "\"pack-quantized\", \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": %s, "
             "\"input_activations\": null}}, \"ignore\": [\"lm_head\"]}}", base, weights);
    if ((st = vc_model_load_string(js, strlen(js), "mid", &m, err))) {
        vc_model_free(d);
        return st;
    }
    vc_serve_result a, b;
    if (!(st = serve_on(d, gpu_name, tp, &a, err)) && !(st = serve_on(m, gpu_name, tp, &b, err))) *delta = b.weights - a.weights;
    vc_model_free(d);
    vc_model_free(m);
    return st;
}

#define W4G(g, extra) "{\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": " g extra "}"

static void test_wna16_kernels(void **state)
{
    (void)state;
    vc_error err = {0};
    int64_t x = 0;
    if (mid(W4G("128", ""), "h100-80gb", 1, &x, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -1746944); /* Machete */
    /* Marlin on an A100: + int32 [108] (512 B) per vLLM layer, 8 of them */
    if (mid(W4G("128", ""), "a100-80gb", 1, &x, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -1746944 + 4096);
    /* group 32 on an H100: not Machete's ([-1, 64, 128]), Marlin's: int32 [132] (528 B, 1,024 B allocated) a
     * layer; the scales 4 x as many columns: 4 x 9,216 = 36,864 B a layer */
    if (mid(W4G("32", ""), "h100-80gb", 1, &x, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -1746944 + 2 * (36864 - 9216) + 8 * 1024);
    /* asymmetric (zero points): Machete pre-multiplies them by the scales, fp16 [in / 128, out]: the scales'
     * bytes again, + 2 x 9,216; Marlin's marlin_zero_points int32 [in / 128, out / 8]: qkv 512, o 256 (512
     * allocated), gate_up 1,024, down 512 B: + 2 x 2,560 */
    if (mid(W4G("128", ", \"symmetric\": false"), "h100-80gb", 1, &x, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -1746944 + 2 * 9216);
    if (mid(W4G("128", ", \"symmetric\": false"), "a100-80gb", 1, &x, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -1746944 + 4096 + 2 * 2560);
    /* actorder "group": weight_g_idx int32 [in] and Machete's argsort perm (Marlin: sorted g_idx and
     * g_idx_sort_indices) int32 [in]: 2 x 1,024 B for qkv, o and gate_up (in 256), 2 x 2,048 for down:
     * + 2 x 10,240 */
    if (mid(W4G("128", ", \"actorder\": \"group\""), "h100-80gb", 1, &x, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -1746944 + 2 * 10240);
    /* refusals: group 256 (neither Machete nor Marlin takes it), act order split over ranks, a GPU given by
     * size (the kernel follows the compute capability), an AMD GPU */
    memset(&err, 0, sizeof err);
    assert_int_equal(mid(W4G("256", ""), "h100-80gb", 1, &x, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "quantization_config");
    assert_non_null(strstr(CLI_MSG(&err), "group_size 256"));
    memset(&err, 0, sizeof err);
    assert_int_equal(mid(W4G("128", ", \"actorder\": \"group\""), "h100-80gb", 2, &x, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "act order"));
    memset(&err, 0, sizeof err);
    assert_int_equal(mid(W4G("128", ""), "80GB", 1, &x, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--gpu");
    memset(&err, 0, sizeof err);
    assert_int_equal(mid(W4G("128", ""), "mi300x", 1, &x, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--gpu");
    /* W8A16 per channel on an A100: vLLM runs AllSparkLinearKernel, not modelled; on an H100, Machete:
     * int32 [out, in / 4], fp16 scales [out, 1] (qkv 1,024, o 512, gate_up 2,048, down 512 B) */
    const char *w8 = "{\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"channel\"}";
    memset(&err, 0, sizeof err);
    assert_int_equal(mid(w8, "a100-80gb", 1, &x, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "AllSparkLinearKernel"));
    if (mid(w8, "h100-80gb", 1, &x, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -2359296 + 2 * (2 * 294912 + 1024 + 512 + 2048 + 512 + 2048));
}

/* Qwen3-30B-A3B (tests/data/hf/qwen3-30b-a3b.json: hidden 2048, 48 layers, 32 heads of 128, 4 KV heads,
 * 128 experts of moe_intermediate_size 768) with a compressed-tensors block targeting "Linear" and ignoring
 * lm_head and the routers (re:.*mlp.gate$), as llm-compressor's recipes write them; fp16. */
static vc_status qwen3_moe(const char *weights, const char *inputs, const char *fmt, const char *gpu_name, int64_t tp,
                           int64_t *delta, vc_mode infer, vc_error *err)
{
    char *text = read_file(HF "qwen3-30b-a3b.json");
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    char qc[2048];
    snprintf(qc, sizeof qc, "{\"quant_method\": \"compressed-tensors\", \"format\": \"%s\", \"quantization_status\": \"compressed\", "
             "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": %s, \"input_activations\": %s}}, "
             "\"ignore\": [\"lm_head\", \"re:.*mlp.gate$\"]}", fmt, weights, inputs);
    cJSON_AddItemToObject(root, "quantization_config", cJSON_Parse(qc));
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    vc_model *m = NULL, *d = load(HF "qwen3-30b-a3b.json");
    vc_status st = vc_model_load_string(js, strlen(js), "qwen3-30b-a3b", &m, err);
    free(js);
    if (!st && infer) {
        vc_options o;
        vc_options_init(&o);
        o.mode = infer;
        o.precision = VC_PREC_FP16;
        vc_result r;
        st = vc_estimate(m, &o, &r, err);
        if (!st) vc_result_free(&r);
    } else if (!st) {
        vc_serve_result a, b;
        if (!(st = serve_on(d, gpu_name, tp, &a, err)) && !(st = serve_on(m, gpu_name, tp, &b, err))) *delta = b.weights - a.weights;
    }
    vc_model_free(d);
    vc_model_free(m);
    return st;
}

/* Per decoder layer (the rank's; tp 2: 16 heads, 2 KV heads, intermediate 384 per rank):
 * FP8 dynamic (fp8 channel weights, dynamic per-token fp8 activations):
 *   attention, CompressedTensorsW8A8Fp8: 1 B an element instead of 2 and fp32 [out] scales: q [4096, 2048],
 *     k, v [512, 2048], o [2048, 4096]: -18,874,368 + 16,384 + 2,048 + 2,048 + 8,192 = -18,845,696 B
 *     (tp 2: -9,437,184 + 8,192 + 1,024 + 1,024 + 8,192 = -9,418,752)
 *   experts, CompressedTensorsW8A8Fp8MoEMethod: w13 fp8 [128, 1536, 2048] and w2 fp8 [128, 2048, 768],
 *     -402,653,184 - 201,326,592 B, scales fp32 [128, 1536, 1] 786,432 + [128, 2048, 1] 1,048,576 B:
 *     -602,144,768 B (tp 2: w13 [128, 768, 2048], w2 [128, 2048, 384]: -301,989,888 + 393,216 +
 *     1,048,576 = -300,548,096)
 *   -620,990,464 B a layer, x 48 = -29,807,542,272 B (tp 2: -309,966,848 x 48 = -14,878,408,704 B)
 * W4A16 group 128 (H100: Machete for the attention, Marlin MoE for the experts):
 *   attention: weight_packed q 4,194,304, k, v 524,288, o 4,194,304; scales qkv_proj 5,120 x 16 x 2 =
 *     163,840, o 2,048 x 32 x 2 = 131,072; weight_shape 2 x 512: 9,733,120 B against 37,748,736 dense:
 *     -28,015,616 B (tp 2: 4,718,592 + qkv 2,560 x 16 x 2 + o 2,048 x 16 x 2 + 1,024 = 4,867,072 against
 *     18,874,368: -14,007,296)
 *   experts: w13_weight_packed int32 [128, 2048 / 8, 1536] 201,326,592, w2 [128, 768 / 8, 2048]
 *     100,663,296, scales fp16 [128, 16, 1536] 6,291,456 and [128, 6, 2048] 3,145,728, the two
 *     weight_shape fp16 [128, 2] 512 each, the workspace int32 [4 x 132] (2,112 B, 2,560 allocated):
 *     311,430,656 B against 1,207,959,552 dense: -896,528,896 B (tp 2: 100,663,296 + 50,331,648 +
 *     [128, 16, 768] 3,145,728 + [128, 3, 2048] 1,572,864 + 1,024 + 2,560 = 155,717,120 against
 *     603,979,776: -448,262,656)
 *   -924,544,512 B a layer, x 48 = -44,378,136,576 B (tp 2: -462,269,952 x 48 = -22,188,957,696 B) */
static void test_qwen3_moe_vllm(void **state)
{
    (void)state;
    vc_error err = {0};
    int64_t x = 0;
    const char *fp8 = "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"channel\", \"symmetric\": true, \"dynamic\": false}",
               *dyn = "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"token\", \"dynamic\": true}",
               *w4 = "{\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 128, \"symmetric\": true}";
    if (qwen3_moe(fp8, dyn, "float-quantized", "h100-80gb", 1, &x, 0, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -INT64_C(29807542272));
    if (qwen3_moe(fp8, dyn, "float-quantized", "h100-80gb", 2, &x, 0, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -INT64_C(14878408704));
    if (qwen3_moe(w4, "null", "pack-quantized", "h100-80gb", 1, &x, 0, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -INT64_C(44378136576));
    if (qwen3_moe(w4, "null", "pack-quantized", "h100-80gb", 2, &x, 0, &err)) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(x, -INT64_C(22188957696));
    /* transformers (-m infer): the stacked experts hold no nn.Linear for CompressedLinear: refused */
    memset(&err, 0, sizeof err);
    assert_int_equal(qwen3_moe(fp8, dyn, "float-quantized", NULL, 1, &x, VC_MODE_INFER, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "quantization_config");
    assert_non_null(strstr(CLI_MSG(&err), "modelled under --serve"));
    /* FP8 experts on an A100 (8.0): vLLM's FP8 MoE backend is Marlin's: refused */
    memset(&err, 0, sizeof err);
    assert_int_equal(qwen3_moe(fp8, dyn, "float-quantized", "a100-80gb", 1, &x, 0, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "MARLIN"));
    /* asymmetric W4A16 experts: CompressedTensorsWNA16MarlinMoEMethod asserts symmetric */
    memset(&err, 0, sizeof err);
    assert_int_equal(qwen3_moe("{\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 128, \"symmetric\": false}",
                               "null", "pack-quantized", "h100-80gb", 1, &x, 0, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "symmetric"));
    /* group 256 experts: check_moe_marlin_supports_layer refuses it (Triton's method, not modelled) */
    memset(&err, 0, sizeof err);
    assert_int_equal(qwen3_moe("{\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 256, \"symmetric\": true}",
                               "null", "pack-quantized", "h100-80gb", 1, &x, 0, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "check_moe_marlin_supports_layer"));
}

/* A small llama (hidden 64, intermediate 128, 2 layers, 4 heads of 16, 2 KV heads, vocab 256):
 * Linear [out, in] q_proj and o_proj [64, 64], k_proj and v_proj [32, 64], gate_proj and up_proj
 * [128, 64], down_proj [64, 128]. */
static int64_t small_q(const char *qc, const char *weights, const char *skip);
static int64_t small(const char *qc) { return small_q(qc, NULL, NULL); }

static int64_t small_q(const char *qc, const char *weights, const char *skip)
{
    char js[4096];
    snprintf(js, sizeof js,
             "{\"model_type\": \"llama\", \"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, "
             "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
             "\"vocab_size\": 256, \"max_position_embeddings\": 512, \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": false, "
             "\"torch_dtype\": \"bfloat16\"%s%s}",
             qc ? ", \"quantization_config\": " : "", qc ? qc : "");
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(js, strlen(js), "small", &m, &err)) fail_msg("%s: %s", err.path, CLI_MSG(&err));
    if (weights) { /* --weights: vc_quant_from_name's preset, skip as modules_to_not_convert */
        vc_quant q;
        assert_int_equal(vc_quant_from_name(weights, &q), 0);
        if (skip) snprintf(q.skip, sizeof q.skip, "%s", skip);
        if (vc_model_set_weights(m, &q, &err)) fail_msg("%s", CLI_MSG(&err));
    }
    int64_t w = infer_weights(m, VC_MODE_INFER);
    vc_model_free(m);
    return w;
}

#define CT(fmt, weights, inputs, targets, ignore)                                                                     \
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"" fmt "\", \"quantization_status\": \"compressed\", " \
    "\"config_groups\": {\"group_0\": {\"targets\": " targets ", \"weights\": " weights ", \"input_activations\": " \
    inputs "}}, \"ignore\": " ignore "}"
#define FP8_CH "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"channel\", \"symmetric\": true, \"dynamic\": false}"
#define DYN "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"token\", \"dynamic\": true}"

static void test_targets_ignore(void **state)
{
    (void)state;
    int64_t d = small(NULL);
    /* ignore lm_head, everything in layer 1 (model.layers.1.*: the qualified name transformers gives,
     * the repeat copy's index included) and k_proj: layer 0's q, v, o, gate, up and down get a scale
     * fp16 [out, 1] of 128, 64, 128, 256, 256 and 128 B, each 512 B: 3,072 B */
    assert_int_equal(small(CT("float-quantized", FP8_CH, DYN, "[\"Linear\"]",
                              "[\"lm_head\", \"re:model\\\\.layers\\\\.1\\\\..*\", \"re:.*k_proj$\"]")) - d, 3072);
    /* Python's \d in a pattern (model.layers.<n>.self_attn.*): the attention of both layers ignored, the
     * six MLP Linears quantized (gate, up 256 B, down 128 B of scales: 512 B each): 3,072 B */
    assert_int_equal(small(CT("float-quantized", FP8_CH, DYN, "[\"Linear\"]",
                              "[\"lm_head\", \"re:model\\\\.layers\\\\.\\\\d+\\\\.self_attn\\\\..*\"]")) - d, 3072);
    /* targets by pattern: the two down_proj, 2 x 512 B; lm_head is not matched */
    assert_int_equal(small(CT("float-quantized", FP8_CH, DYN, "[\"re:.*down_proj$\"]", "[]")) - d, 1024);
    /* --weights compressed-tensors (FP8_DYNAMIC): every Linear but the output layer, 14 x 512 B of scales;
     * skip (modules_to_not_convert) "k_proj": 12 x 512 B */
    assert_int_equal(small_q(NULL, "compressed-tensors", NULL) - d, 7168);
    assert_int_equal(small_q(NULL, "compressed-tensors", "k_proj") - d, 6144);
    /* "Linear" with nothing ignored: lm_head [256, 64] too (compressed-tensors does not spare the last
     * module): 14 x 512 + 512 B */
    assert_int_equal(small(CT("float-quantized", FP8_CH, DYN, "[\"Linear\"]", "[]")) - d, 7680);
}

#define W4(sym, extra) "{\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 32, \"symmetric\": " sym extra "}"

static void test_pack_quantized(void **state)
{
    (void)state;
    int64_t d = small(NULL);
    /* W4A16 group 32, symmetric, lm_head ignored; per Linear weight_packed int32 [out, in / 8],
     * weight_scale fp16 [out, in / 32], weight_shape 512 B:
     *   q, o   [64, 64]:   2,048 + 256 -> 512 + 512 = 3,072
     *   k, v   [32, 64]:   1,024 + 128 -> 512 + 512 = 2,048
     *   gate, up [128, 64]: 4,096 + 512 + 512 = 5,120
     *   down   [64, 128]:  4,096 + 512 + 512 = 5,120
     * a layer 2 x 3,072 + 2 x 2,048 + 3 x 5,120 = 25,600 B; 2 layers 51,200 B */
    assert_int_equal(small(CT("pack-quantized", W4("true", ""), "null", "[\"Linear\"]", "[\"lm_head\"]")) - d, 51200);
    /* asymmetric: weight_zero_point int32 [ceil(out / 8), in / 32] (at most 16 x 4 x 4 = 256 B) in place
     * of the int8 one, 512 B for each of the 14: + 7,168 B */
    assert_int_equal(small(CT("pack-quantized", W4("false", ""), "null", "[\"Linear\"]", "[\"lm_head\"]")) - d, 58368);
    /* actorder "group": weight_g_idx int32 [in] (256 or 512 B): + 14 x 512 B */
    assert_int_equal(small(CT("pack-quantized", W4("true", ", \"actorder\": \"group\""), "null", "[\"Linear\"]", "[\"lm_head\"]")) - d,
                     58368);
    /* naive int8 per tensor with a static per-tensor input (the FP8 preset's shape, int): weight_scale [1]
     * and input_scale [1], fp16, 512 B each, beside the fp16 weight: 14 x 1,024 B */
    assert_int_equal(small(CT("int-quantized", "{\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"tensor\"}",
                              "{\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"tensor\", \"dynamic\": false}",
                              "[\"Linear\"]", "[\"lm_head\"]")) - d, 14336);
}

/* Llama 4 Maverick (tests/data/hf/llama-4-maverick-17b-128e-instruct.json) with an FP8-dynamic
 * compressed-tensors block targeting "Linear" and ignoring attention, routers, the vision tower, the
 * projector and language_model.lm_head (Llama4ForConditionalGeneration's name of lm_head), bf16:
 * - the experts matched: transformers' CompressedExpertsLinear (a loop over one Llama4TextMLP per expert)
 *   is refused, naming the config;
 * - the experts ignored too: the quantized Linears are the 24 dense layers' feed_forward gate_proj and
 *   up_proj [16384, 5120] and down_proj [5120, 16384], and the 24 MoE layers' shared_expert gate_proj
 *   and up_proj [8192, 5120] and down_proj [5120, 8192]; each adds a bf16 weight_scale [out, 1]:
 *   24 x (32,768 + 32,768 + 10,240) + 24 x (16,384 + 16,384 + 10,240) = 1,818,624 + 1,032,192 =
 *   2,850,816 B over the bf16 model. */
static vc_status maverick(const char *extra_ignore, int64_t *weights, vc_error *err)
{
    char *text = read_file(HF "llama-4-maverick-17b-128e-instruct.json");
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    char qc[2048];
    snprintf(qc, sizeof qc, CT("float-quantized", FP8_CH, DYN, "[\"Linear\"]",
                               "[\"re:.*self_attn.*\", \"re:.*router\", \"re:vision_model.*\", \"re:multi_modal_projector.*\", "
                               "\"language_model.lm_head\"%s]"),
             extra_ignore);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "quantization_config");
    cJSON_AddItemToObject(root, "quantization_config", cJSON_Parse(qc));
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    vc_model *m = NULL;
    vc_status st = vc_model_load_string(js, strlen(js), "maverick", &m, err);
    free(js);
    if (st) return st;
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.precision = VC_PREC_BF16;
    vc_result r;
    if (vc_estimate(m, &o, &r, err)) fail_msg("%s", CLI_MSG(err));
    *weights = r.memory.weights;
    vc_result_free(&r);
    vc_model_free(m);
    return VC_OK;
}

static void test_maverick(void **state)
{
    (void)state;
    vc_error err = {0};
    int64_t w = 0, d;
    vc_model *dense = load(HF "llama-4-maverick-17b-128e-instruct.json");
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.precision = VC_PREC_BF16;
    vc_result r;
    if (vc_estimate(dense, &o, &r, &err)) fail_msg("%s", CLI_MSG(&err));
    d = r.memory.weights;
    vc_result_free(&r);
    vc_model_free(dense);
    assert_int_equal(maverick("", &w, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "quantization_config");
    assert_non_null(strstr(CLI_MSG(&err), "CompressedExpertsLinear"));
    memset(&err, 0, sizeof err);
    assert_int_equal(maverick(", \"re:.*feed_forward\\\\.experts.*\"", &w, &err), VC_OK);
    assert_int_equal(w - d, 2850816);
}

/* --serve refuses a static per-tensor activation scale (vLLM keeps one per fused qkv_proj / gate_up_proj) */
static void test_serve_static(void **state)
{
    (void)state;
    const char *js = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 1, "
                     "\"num_attention_heads\": 4, \"vocab_size\": 256, \"max_position_embeddings\": 512, \"quantization_config\": " CT(
                         "int-quantized", "{\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"channel\"}",
                         "{\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"tensor\", \"dynamic\": false}", "[\"Linear\"]",
                         "[\"lm_head\"]") "}";
    vc_model *m = NULL;
    vc_error err = {0};
    if (vc_model_load_string(js, strlen(js), "static", &m, &err)) fail_msg("%s", CLI_MSG(&err));
    vc_serve_result sr;
    assert_int_equal(serve(m, &sr, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "quantization_config");
    assert_non_null(strstr(CLI_MSG(&err), "static activations"));
    vc_model_free(m);
}

/* Refusals: training, and the keys' errors name the key */
static void test_refusals(void **state)
{
    (void)state;
    vc_model *m = load(HF "llama-3.1-8b-fp8-dynamic.json");
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_FP16;
    vc_result r;
    vc_error err;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--mode");
    assert_non_null(strstr(CLI_MSG(&err), "modelled for inference"));
    vc_model_free(m);
    const char *js = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 1, "
                     "\"num_attention_heads\": 4, \"vocab_size\": 256, \"quantization_config\": " CT(
                         "pack-quantized", "{\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 48}",
                         "null", "[\"Linear\"]", "[]") "}";
    assert_int_equal(vc_model_load_string(js, strlen(js), "bad", &m, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "quantization_config");
    assert_non_null(strstr(CLI_MSG(&err), "group_size 48 does not divide in_features 64"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_transformers), cmocka_unit_test(test_llama_vllm), cmocka_unit_test(test_w4a16_vllm),
        cmocka_unit_test(test_wna16_kernels), cmocka_unit_test(test_qwen3_moe_vllm),
        cmocka_unit_test(test_targets_ignore),
        cmocka_unit_test(test_pack_quantized), cmocka_unit_test(test_maverick), cmocka_unit_test(test_serve_static),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
