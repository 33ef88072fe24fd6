/*
 * test_fam_mamba2.c — Mamba2ForCausalLM (model_type "mamba2", issue 31): the family row of src/hf/hf.c and the keys
 * src/hf/hf_granite4.c reads for it (vc__hf_mamba2_read), the Mamba2 mixer of layers/mamba2.c, the Cast kind
 * (layers/tensor.c) of Mamba2Block's and Mamba2ForCausalLM's dtype changes, Mamba2Cache under generate.
 *
 * Sources: huggingface/transformers configuration_mamba2.py @ f2a39d49 (Mamba2Config's defaults), modeling_mamba2.py
 * @ 4711664e (Mamba2Mixer, Mamba2Cache, Mamba2Block, Mamba2Model) and @ 020a37d2 (Mamba2ForCausalLM.forward).
 *
 * tests/data/hf/Mamba-Codestral-7B-v0.1.json is not the checkpoint's file, which is not in reach here: it is written
 * from the model card's sizes and Mamba2Config's defaults (which were set from that checkpoint: num_heads 128,
 * head_dim 64, n_groups 8, state_size 128, 64 layers of 4096, vocab 32768, untied, residual_in_fp32).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_run.h"
#include "fam_hf.h"
#include "cli_spelt.h"

#define HF VC_TEST_DATA "/hf/"

/* hidden 64, expand 2 (intermediate 128 = 8 heads x 16), 2 groups of state 16 (conv_dim 128 + 64 = 192), 2 layers */
#define BASE "{\"model_type\":\"mamba2\",\"vocab_size\":256,\"hidden_size\":64,\"num_hidden_layers\":2"
#define TINY BASE ",\"num_heads\":8,\"head_dim\":16,\"n_groups\":2,\"state_size\":16,\"chunk_size\":16"

/* 1. Parameters by hand from Mamba2Mixer.__init__'s modules (named_parameters()). Mamba-Codestral-7B-v0.1: H 4096,
 * intermediate 8192, conv_dim 8192 + 2 x 8 x 128 = 10,240, 128 heads; a block: norm 4,096, in_proj 4096 x (8192 +
 * 10240 + 128) = 76,021,760, conv1d 10,240 x 4 + 10,240 (use_conv_bias) = 51,200, dt_bias + A_log + D 384, the gated
 * norm 8,192, out_proj 8192 x 4096 = 33,554,432: 109,640,064; x 64 = 7,016,964,096; embeddings and the untied lm_head
 * 2 x 32768 x 4096 = 268,435,456; norm_f 4,096. Total 7,285,403,648, the published 7.29B (the model card's size).
 * Mamba2Config's defaults are the same model. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(HF "Mamba-Codestral-7B-v0.1.json", NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(7285403648));
    vc_model_free(m);
    assert_int_equal(count_of("{\"model_type\":\"mamba2\"}"), INT64_C(7285403648));
    /* the tiny one: a block norm 64, in_proj 64 x (128 + 192 + 8) = 20,992, conv1d 192 x 4 + 192 = 960, 3 x 8 = 24,
     * gated norm 128, out_proj 128 x 64 = 8,192: 30,360; x 2; embeddings 16,384, lm_head 16,384, norm_f 64 */
    assert_int_equal(count_of(TINY "}"), 2 * 30360 + 2 * 16384 + 64);
    /* tie_word_embeddings: lm_head is the embeddings' matrix */
    assert_int_equal(count_of(TINY ",\"tie_word_embeddings\":true}"), 2 * 30360 + 16384 + 64);
    /* use_bias: in_proj's 328 and out_proj's 64 a layer; use_conv_bias false: conv1d's 192 less */
    assert_int_equal(count_of(TINY ",\"use_bias\":true}"), 2 * (30360 + 392) + 2 * 16384 + 64);
    assert_int_equal(count_of(TINY ",\"use_conv_bias\":false}"), 2 * (30360 - 192) + 2 * 16384 + 64);
    /* the keys only the initialisation reads change nothing */
    assert_int_equal(count_of(TINY ",\"time_step_rank\":\"auto\",\"time_step_min\":0.01,\"time_step_limit\":[0.0,100.0],"
                                   "\"rescale_prenorm_residual\":true}"),
                     2 * 30360 + 2 * 16384 + 64);
}

/* 2. The layers: a block's hidden_states.to(norm.weight.dtype) and residual.to(float32) (residual_in_fp32), then
 * lm_head's .to(lm_head.weight.dtype) and .float(): 4 Cast layers (the two blocks one Sequential with repeat 2); 3
 * without residual_in_fp32; the mixer's sizes */
static void test_layers(void **state)
{
    (void)state;
    assert_int_equal(emitted(TINY "}", "\"type\":\t\"Cast\""), 4);
    assert_int_equal(emitted(TINY ",\"residual_in_fp32\":false}", "\"type\":\t\"Cast\""), 3);
    assert_int_equal(emitted(TINY "}", "\"dtype\":\t\"float32\""), 2);
    assert_int_equal(emitted(TINY "}", "\"type\":\t\"Mamba2Mixer\""), 1);
    assert_int_equal(emitted(TINY "}", "\"repeat\":\t2"), 1);
    assert_int_equal(emitted(TINY "}", "\"out_features\":\t328"), 1); /* in_proj */
    assert_int_equal(emitted(TINY "}", "max_positions"), 0);          /* no positions bound generate() */
}

/* 3. Every bad or inconsistent value of a key the row reads for mamba2 exits 2 naming the key. */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        /* the mixer's sizes on BASE (the others their defaults: 128 heads of 64, 8 groups, state 128) */
        {"B\"num_heads\":7,\"head_dim\":16", "num_heads"}, /* 7 x 16 is not int(2 x 64) */
        {"B\"num_heads\":0", "num_heads"},
        {"B\"num_heads\":8,\"head_dim\":\"16\"", "head_dim"},
        {"B\"num_heads\":8,\"head_dim\":32", "num_heads"},         /* 8 x 32 is not 128 */
        {"B\"num_heads\":8,\"head_dim\":16,\"n_groups\":3", "n_groups"}, /* does not divide 8 heads */
        {"B\"num_heads\":8,\"head_dim\":16,\"n_groups\":0", "n_groups"},
        {"B\"num_heads\":8,\"head_dim\":16,\"n_groups\":1,\"state_size\":0", "state_size"},
        {"B\"num_heads\":8,\"head_dim\":16,\"n_groups\":1,\"chunk_size\":0", "chunk_size"},
        {"\"conv_kernel\":0", "conv_kernel"},
        {"\"expand\":0", "expand"},
        {"\"expand\":\"2\"", "expand"},
        {"\"use_bias\":1", "use_bias"},
        {"\"use_conv_bias\":\"true\"", "use_conv_bias"},
        {"\"residual_in_fp32\":\"yes\"", "residual_in_fp32"},
        {"\"rms_norm\":false", "rms_norm"}, /* Mamba2Mixer builds its norm whatever it says */
        {"\"rms_norm\":1", "rms_norm"},
        {"\"rescale_prenorm_residual\":2", "rescale_prenorm_residual"},
        {"\"hidden_act\":\"gelu\"", "hidden_act"}, /* nn.Conv1d and act instead of causal_conv1d_fn */
        {"\"time_step_rank\":\"big\"", "time_step_rank"},
        {"\"time_step_rank\":0", "time_step_rank"},
        {"\"time_step_min\":-1", "time_step_min"},
        {"\"time_step_max\":\"0.1\"", "time_step_max"},
        {"\"time_step_floor\":-0.5", "time_step_floor"},
        {"\"time_step_limit\":[1.0,0.5]", "time_step_limit"},
        {"\"time_step_limit\":[0.0]", "time_step_limit"},
        {"\"time_step_limit\":\"inf\"", "time_step_limit"},
    };
    char js[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (bad[i].kv[0] == 'B') snprintf(js, sizeof js, BASE ",%s}", bad[i].kv + 1);
        else snprintf(js, sizeof js, TINY ",%s}", bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    char path[] = "/tmp/vc_mamba2_XXXXXX";
    fam_write(path, TINY ",\"rms_norm\":false}");
    assert_usage(path, "rms_norm");
    remove(path);
}

/* 4. generate: Mamba2Cache's conv_states [layers, B, conv_dim, conv_kernel] and ssm_states [layers, B, heads,
 * head_dim, state] in the model's dtype, no keys or values: the tiny one fp32 2 x (192 x 4 + 8 x 16 x 16) x 4 B =
 * 22,528 B; Mamba-Codestral-7B-v0.1 bf16 64 x (10,240 x 4 + 128 x 64 x 128) x 2 B = 139,460,608 B. */
static void test_generate(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js(TINY "}", &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.prompt = 16;
    o.new_tokens = 4;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(r.generate.ssm_state, 22528);
    assert_int_equal(r.generate.ssm_mamba, 2);
    assert_int_equal(r.generate.kv_cache, 0);
    assert_true(r.generate.prefill_peak > 0 && r.generate.decode_peak > 0);
    vc_result_free(&r);
    vc_model_free(m);
    const char *out = cli_output(HF "Mamba-Codestral-7B-v0.1.json -m generate -p bf16 -f json");
    assert_non_null(strstr(out, "\"cache_class\": \"Mamba2Cache\", \"mamba_state\": 139460608, \"mamba_layers\": 64"));
}

/* 5. What is not modelled is refused in one line naming the option: --tp outside --serve (vLLM's split under --serve:
 * tests/test_serve_mamba2_tp.c) */
static void test_refused(void **state)
{
    (void)state;
    assert_usage(HF "Mamba-Codestral-7B-v0.1.json --tp 2 --gpus 2", "--tp");
    assert_usage(HF "Mamba-Codestral-7B-v0.1.json --serve --gpu h100-80gb --tp 16 --gpus 16", "--tp: 16 tensor-parallel ranks "
                 "do not divide n_groups (8)");
}

/* 6. --serve (vLLM, no replica: no vLLM here; every figure derived from its source, src/engine/serve.c mamba_alone).
 * Mamba-Codestral-7B on h100-80gb, requests of 1024 + 256 tokens (the CLI's defaults), bf16:
 *  - one layer's state a request (vllm/model_executor/models/mamba2.py @ 055e47c2 Mamba2ForCausalLM
 *    .get_mamba_state_shape_from_config -> mamba_utils.py @ 2afe1e85 MambaStateShapeCalculator.mamba2_state_shape):
 *    conv (conv_kernel - 1, expand x hidden + 2 n_groups state) = (3, 8,192 + 2 x 8 x 128) = 30,720 elements,
 *    temporal (num_heads, head_dim, state_size) = 128 x 64 x 128 = 1,048,576; both in the model's dtype
 *    (mamba2_state_dtype with mamba_cache_dtype and mamba_ssm_cache_dtype "auto"): (30,720 + 1,048,576) x 2 =
 *    2,158,592 bytes (MambaSpec.page_size_bytes, not padded: no attention page to meet);
 *  - attention-free: one KV cache group of the 64 layers (_get_kv_cache_groups_uniform_spec), a block 64 x
 *    2,158,592 = 138,149,888 bytes, num_blocks = pool // 2,158,592 // 64; block_size max_model_len (mamba_block_size
 *    with mamba_cache_mode "none"): 1,280; a request takes one block: concurrency = blocks, tokens = blocks x 1,280;
 *  - no attention backend runs: the non-torch increase holds cuBLAS alone;
 *  - --kv-cache-dtype fp8 changes nothing (cache_dtype is the attention layers'; the states' is mamba_cache_dtype);
 *  - the profiling run's 8,192 tokens hold, above the weights, at least in_proj's output [8192, 2 x 8,192 + 2 x 8 x
 *    128 + 128] (304,087,040 bytes), ssm_output [8192, 8192] (134,217,728) and Mixer2RMSNormGated.forward_native's
 *    two float32 [8192, 8192] (536,870,912; n_groups 8 > 1): 975,175,680 bytes. */
static void test_serve(void **state)
{
    (void)state;
    const char *a = HF "Mamba-Codestral-7B-v0.1.json --serve --gpu h100-80gb";
    const cli_serve_t r = cli_serve(a);
    assert_int_equal(r.state_layers, 64);
    assert_int_equal(r.state_bytes, INT64_C(2158592));
    assert_int_equal(r.page_bytes, INT64_C(138149888));
    assert_int_equal(r.block_size, 1280);
    assert_true(r.kv_cache > 0);
    assert_int_equal(r.blocks, r.kv_cache / INT64_C(138149888));
    assert_int_equal(r.concurrency, r.blocks);
    assert_int_equal(r.tokens, r.blocks * 1280);
    assert_true(cli_json_num(a, "serve", "profile_peak") - cli_json_num(a, "serve", "weights") >= INT64_C(975175680));
    const cli_serve_t f = cli_serve(HF "Mamba-Codestral-7B-v0.1.json --serve --gpu h100-80gb --kv-cache-dtype fp8");
    assert_int_equal(f.page_bytes, r.page_bytes);
    assert_int_equal(f.blocks, r.blocks);
    /* the report's cache kind */
    assert_non_null(strstr(cli_output(a), "Mamba state  (64 Mamba2 layers: conv + SSM state, 2.1 MiB per request and layer, "
                                          "one block each; attention-free: no K/V, a block a request)"));
    char j[512];
    snprintf(j, sizeof j, "%s -f json", a);
    assert_non_null(strstr(cli_output(j), "\"kv_cache_kind\": \"mamba_state\", \"state_layers\": 64"));
    /* no Attention layer: no attention backend kernels loaded in the profiling run (the non-torch increase) */
    assert_non_null(strstr(cli_output(j), "\"attention_kernels\": 0}"));
}

/* 6. The Cast kind (layers/tensor.c): Tensor.to(dtype) is _to_copy, a new tensor in the target dtype, x itself when
 * it has it. After a Linear's [64, 1024] output in a bf16 forward (-m infer), Cast float32 adds its fp32 copy,
 * 64 x 1024 x 4 B = 262,144 B at the peak (the Linear's output its input, alive); in fp32 nothing; "parameters" in
 * bf16 (pure bf16: the parameters' dtype) nothing. Its bad values name dtype. */
static int64_t cast_peak(const char *cast, vc_precision p)
{
    char js[512];
    snprintf(js, sizeof js, "{\"input\":[8],\"layers\":[{\"type\":\"Linear\",\"in_features\":8,\"out_features\":1024}%s]}",
             cast);
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(js, strlen(js), "cast", &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    vc_options o;
    vc_options_init(&o);
    o.batch = 64;
    o.workspace = 0;
    o.mode = VC_MODE_INFER;
    o.precision = p;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    int64_t peak = r.memory.peak_allocated;
    vc_result_free(&r);
    vc_model_free(m);
    return peak;
}

static void test_cast(void **state)
{
    (void)state;
    const char *f32 = ",{\"type\":\"Cast\",\"dtype\":\"float32\"}", *par = ",{\"type\":\"Cast\",\"dtype\":\"parameters\"}";
    assert_int_equal(cast_peak(f32, VC_PREC_BF16) - cast_peak("", VC_PREC_BF16), 262144);
    assert_int_equal(cast_peak(f32, VC_PREC_FP32), cast_peak("", VC_PREC_FP32));
    assert_int_equal(cast_peak(par, VC_PREC_BF16), cast_peak("", VC_PREC_BF16));
    static const char *const bad[] = {
        "{\"input\":[8],\"layers\":[{\"type\":\"Cast\"}]}",
        "{\"input\":[8],\"layers\":[{\"type\":\"Cast\",\"dtype\":\"int8\"}]}",
        "{\"input\":[8],\"layers\":[{\"type\":\"Cast\",\"dtype\":32}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vc_model *m = NULL;
        vc_error err;
        assert_int_not_equal(vc_model_load_string(bad[i], strlen(bad[i]), "cast", &m, &err), VC_OK);
        assert_null(m);
        if (!strstr(err.path, "dtype")) fail_msg("%s: path %s (%s)", bad[i], err.path, err.msg);
    }
}

/* 7. The measured training cases (bench/accuracy/llm/measured.json's mamba2_small / mamba2_tied_small training cases,
 * mamba2_replica.py measured with the accuracy harness on torch 1.13 CPU), each exact. Before three fixes they were
 * up to 1.21% low (mamba2_small, bf16, LoRA r 8 on in_proj, 2 x 64: 1,668,096 B of 1,688,576 B): A = -exp(A_log
 * .float()) is among MambaSplitConv1dScanCombinedFn's saved tensors (512 B a layer); the fp32 residual + bf16 mixer
 * output hands the mixer a bf16 cast of the gradient (validate_outputs; 16,384 B here); the backward makes dnorm, dD,
 * dA and ddt_bias of the frozen parameters too (4 x 512 B under LoRA). */
static void test_measured(void **state)
{
    (void)state;
#define LIN " --lora 8 --lora-alpha 16 --lora-dropout 0.0 --lora-targets in_proj"
#define CK " --grad-ckpt --grad-ckpt-kind non-reentrant"
    static const cli_measured c[] = {
        {"mamba2_small.json --seq 64 -b 2 -o adamw -p fp32", 4041728},
        {"mamba2_small.json --seq 40 -b 2 -o adamw -p bf16", 1786880},
        {"mamba2_small.json --seq 96 -b 1 -o sgd -p fp32" CK, 1886208},
        {"mamba2_small.json --seq 64 -b 2 -o adamw -p bf16" LIN, 1688576},
        {"mamba2_tied_small.json --seq 64 -b 2 -o adamw -p fp32", 2310144},
        {"mamba2_tied_small.json --seq 48 -b 4 -o adam -p bf16" CK, 1402880},
        {"mamba2_tied_small.json --seq 128 -b 1 -o adamw -p fp32" LIN, 1667584},
    };
#undef LIN
#undef CK
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0", 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
