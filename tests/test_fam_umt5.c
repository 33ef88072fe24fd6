/*
 * test_fam_umt5.c — model_type "umt5" (issue 31 item 4): UMT5ForConditionalGeneration (models/umt5/modeling_umt5.py
 * @ de0f5d1e), T5 v1.1's modules with a relative_attention_bias in the SelfAttention of EVERY block
 * (UMT5LayerSelfAttention: has_relative_attention_bias=True), each UMT5Attention computing its own bias; written by
 * src/hf/hf_t5.c (t5_every) as the t5 and mt5 rows are.
 *
 * 1. The checkpoints' parameters (google/umt5-small, umt5-base and umt5-xl config.json: vocab 256384, gated-gelu,
 *    untied lm_head): by hand from the module shapes; equal to bench/accuracy/llm/t5_replica.py's count on the
 *    meta device (named_parameters()), and to the published sizes (umt5-base "0.6B": 592,043,520).
 * 2. UMT5Config's defaults (configuration_umt5.py @ 0d7e95d9): gated-gelu, tied (transformers 5.x forces
 *    tie_word_embeddings True; a file without the key reads so); the bias table in every block of both stacks.
 * 3. The measured cases of bench/accuracy/llm/measured.json (t5_replica.py with its umt5 flag on
 *    configs/umt5_small.json, torch 1.13 CPU, the allocator counter): training, inference, generation.
 * 4. Refusals naming the key or option.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "fam_hf.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"

/* UMT5ForConditionalGeneration by hand (modeling_umt5.py __init__s): shared V x d_model; per encoder block
 * SelfAttention q, k, v (inner x d_model), o, relative_attention_bias 32 x heads, layer_norm d_model,
 * DenseReluDense wi_0, wi_1 (d_ff x d_model) and wo, layer_norm; a decoder block adds EncDecAttention's four
 * (no bias table) and its layer_norm; final_layer_norm per stack; lm_head V x d_model (untied).
 * umt5-base (V 256384, d_model 768, d_ff 2048, 12 + 12 blocks, 12 heads of 64): shared 196,902,912; encoder
 * 12 x (2,359,296 + 384 + 768 + 4,718,592 + 768) + 768 = 84,958,464; decoder 12 x (7,079,808 + 2,359,296 + 768)
 * + 768 = 113,279,232; lm_head 196,902,912: 592,043,520 (the model card's 0.6B).
 * umt5-small (d_model 512, d_ff 1024, 8 + 8 blocks, 6 heads of 64): 2 x 131,268,608 + 8 x 2,360,512 + 512 +
 * 8 x 3,147,456 + 512 = 306,601,984.
 * umt5-xl (d_model 2048, d_ff 5120, 24 + 24 blocks, 32 heads of 64): 2 x 525,074,432 + 24 x 48,239,616 + 2,048
 * + 24 x 65,018,880 + 2,048 = 3,768,356,864.
 * t5_replica.py's count of the three files: the same. */
static void test_counts(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int64_t params;
    } c[] = {{HF "umt5-base.json", INT64_C(592043520)},
             {HF "umt5-small.json", INT64_C(306601984)},
             {HF "umt5-xl.json", INT64_C(3768356864)}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        vc_model *m = fam_load_file(c[i].file, 128);
        assert_int_equal(vc_model_parameters(m), c[i].params);
        vc_model_free(m);
    }
}

/* UMT5Config(): V 250112, d_model 512, d_ff 1024, 8 + 8 blocks of 6 heads, "gated-gelu" (wi_0, wi_1, gelu_new),
 * tied: shared 128,057,344 + 8 x 2,360,512 + 512 + 8 x 3,147,456 + 512 = 172,122,112, with the decoder output's
 * d_model ** -0.5 rescale; every block its own bias (no stack-level one). */
static void test_defaults(void **state)
{
    (void)state;
    vc_model *m = fam_load_string("{\"model_type\": \"umt5\"}", 64);
    const char *js = vc_model_generated_json(m);
    assert_non_null(strstr(js, "DenseReluDense.wi_1"));
    assert_non_null(strstr(js, "\"variant\":\t\"new\""));
    assert_non_null(strstr(js, "lm_head_rescale"));
    assert_non_null(strstr(js, "\"layer.0.SelfAttention.relative_attention_bias\""));
    assert_non_null(strstr(js, "\"layer.1.EncDecAttention.position_bias\""));
    assert_null(strstr(js, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias"));
    assert_null(strstr(js, "decoder.encoder_decoder_position_bias"));
    assert_int_equal(vc_model_parameters(m), INT64_C(172122112));
    vc_model_free(m);
}

/* measured.json's umt5 rows (run_suite.py's `u5`, appended after the granitemoehybrid rows; every third held
 * out): training exact (full, LoRA q,v, every UMT5Block checkpointed with its own biases inside), inference and
 * generation as the mt5 row's (its small mask tensors: at most 0.61% low here); held within 1% */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"umt5_small.json --seq 128 --target-seq 64 -b 2 -o adamw -p fp32", 44697088},
        {"umt5_small.json --seq 96 --target-seq 48 -b 4 -o sgd -p bf16", 23859712},
        {"umt5_small.json --seq 128 --target-seq 96 -b 2 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q,v", 20395520},
        {"umt5_small.json --seq 160 --target-seq 64 -b 2 -o adamw -p fp32 --grad-ckpt", 35757568},
        {"umt5_small.json --seq 100 --target-seq 40 -b 2 -o adamw -p bf16 --grad-ckpt", 17554432},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 0.0);
    static const cli_measured inf[] = {
        {"umt5_small.json -m infer --seq 200 --target-seq 50 -b 4 -p fp32", 17987072},
        {"umt5_small.json -m infer --seq 128 --target-seq 128 -b 2 -p bf16", 6108160},
    };
    assert_measured(inf, sizeof inf / sizeof *inf, "", 1.0);
    static const struct {
        int batch, prompt, new_tokens;
        const char *prec;
        long long prefill, decode;
    } g[] = {{2, 96, 16, "fp32", 8690176, 7716864}, {1, 64, 32, "bf16", 3846656, 3660800},
             {3, 128, 8, "fp32", 10954752, 8318464}};
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        long long p = cli_generate_field("umt5_small", g[i].batch, g[i].prompt, g[i].new_tokens, g[i].prec, "\"prefill_peak\": ");
        long long d = cli_generate_field("umt5_small", g[i].batch, g[i].prompt, g[i].new_tokens, g[i].prec, "\"decode_peak\": ");
        double ep = 100.0 * (double)(p - g[i].prefill) / (double)g[i].prefill;
        double ed = 100.0 * (double)(d - g[i].decode) / (double)g[i].decode;
        if (ep < -1 || ep > 1 || ed < -1 || ed > 1)
            fail_msg("generate case %zu: prefill %lld vs %lld, decode %lld vs %lld", i, p, g[i].prefill, d, g[i].decode);
    }
}

/* the refusals: exit 2, one stderr line naming the key (or option) */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *edit, *want;
    } c[] = {
        {"\"feed_forward_proj\": \"gated-gelu-new\"", "feed_forward_proj: \"gated-gelu-new\" is not of the form"},
        {"\"relative_attention_num_buckets\": 2", "relative_attention_num_buckets: 2: at least 4"},
        {"\"is_encoder_decoder\": false", "is_encoder_decoder: false"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char path[] = "/tmp/vc_u5XXXXXX.json", args[600];
        int fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fprintf(f, "{\"model_type\": \"umt5\", \"vocab_size\": 1000, \"d_model\": 64, \"d_ff\": 96, \"num_layers\": 2, "
                   "\"num_heads\": 4, \"d_kv\": 16, %s}", c[i].edit);
        fclose(f);
        snprintf(args, sizeof args, "%s --seq 64", path);
        assert_usage(args, c[i].want);
        remove(path);
    }
    assert_usage(HF "umt5-base.json --serve --gpu h100-80gb", "--serve: vLLM has no T5ForConditionalGeneration");
    assert_usage(HF "umt5-base.json --lora 8", "--lora needs --lora-targets");
    assert_usage(HF "umt5-base.json -p fp16", "--precision");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
