/*
 * test_fam_mt5.c — model_type "mt5" (issue 31 item 4): MT5ForConditionalGeneration, whose modules
 * models/mt5/modeling_mt5.py (@ 00b676f8) copies from modeling_t5.py ("Copied from ... with T5->MT5"), so the
 * row is written by src/hf/hf_t5.c as t5's is, with MT5Config's defaults (gated-gelu, untied lm_head).
 *
 * 1. The checkpoints' parameters (google/mt5-base's and google/mt5-small's config.json as published): by hand
 *    from the module shapes, equal to the published totals (mt5-base 582,401,280: the model card's 582M;
 *    mt5-small 300,176,768: its 300M).
 * 2. MT5Config's defaults: a config without feed_forward_proj is gated (wi_0, wi_1), untied.
 * 3. The measured cases of bench/accuracy/llm/measured.json (t5_replica.py on model_type mt5, torch 1.13 CPU,
 *    the allocator counter; --attention math, --workspace 0), training, inference and generation.
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

/* MT5ForConditionalGeneration by hand (modeling_mt5.py __init__s, T5's): shared V x d_model; per encoder block
 * SelfAttention q, k, v (inner x d_model) and o, layer_norm d_model, DenseReluDense wi_0, wi_1 (d_ff x d_model)
 * and wo, layer_norm; a decoder block adds EncDecAttention's four and its layer_norm; block 0 of each stack
 * relative_attention_bias 32 x heads; final_layer_norm per stack; lm_head V x d_model (untied).
 * mt5-base (V 250112, d_model 768, d_ff 2048, 12 + 12 blocks, 12 heads of 64): shared 192,086,016; encoder
 * 12 x (2,359,296 + 768 + 4,718,592 + 768) + 384 + 768 = 84,954,240; decoder 12 x 9,439,488 + 384 + 768 =
 * 113,275,008; lm_head 192,086,016: 582,401,280.
 * mt5-small (d_model 512, d_ff 1024, 8 + 8 blocks, 6 heads of 64): 2 x 128,057,344 + 8 x 2,360,320 + 704 +
 * 8 x 3,147,264 + 704 = 300,176,768. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "mt5-base.json", 128);
    assert_int_equal(vc_model_parameters(m), INT64_C(582401280));
    vc_model_free(m);
    m = fam_load_file(HF "mt5-small.json", 128);
    assert_int_equal(vc_model_parameters(m), INT64_C(300176768));
    vc_model_free(m);
}

/* MT5Config(): feed_forward_proj "gated-gelu" (wi_0, wi_1 and gelu_new), tie_word_embeddings False (lm_head its
 * own, no d_model ** -0.5 rescale): V 250112, d_model 512, d_ff 1024, 8 + 8 blocks of 6 heads = mt5-small */
static void test_defaults(void **state)
{
    (void)state;
    vc_model *m = fam_load_string("{\"model_type\": \"mt5\"}", 64);
    const char *js = vc_model_generated_json(m);
    assert_non_null(strstr(js, "DenseReluDense.wi_1"));
    assert_non_null(strstr(js, "\"variant\":\t\"new\""));
    assert_null(strstr(js, "lm_head_rescale"));
    assert_int_equal(vc_model_parameters(m), INT64_C(300176768));
    vc_model_free(m);
}

/* measured.json's mt5 rows (run_suite.py's `m5`, appended after the mpnet rows; 2 training / inference and one
 * generation case held out): training exact (full, LoRA q,v, every T5Block checkpointed), inference and
 * generation as the t5 row's (its small mask tensors: at most 0.62% low here, a bf16 [B, L] float32 ones and
 * [B, 1, 1, L] copies the estimate frees sooner); held within 1% */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"mt5_small.json --seq 128 --target-seq 64 -b 2 -o adamw -p fp32", 44530176},
        {"mt5_small.json --seq 96 --target-seq 48 -b 4 -o sgd -p bf16", 23766528},
        {"mt5_small.json --seq 128 --target-seq 96 -b 2 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q,v", 20394496},
        {"mt5_small.json --seq 160 --target-seq 64 -b 2 -o adamw -p fp32 --grad-ckpt", 37154304},
        {"mt5_small.json -m infer --seq 200 --target-seq 50 -b 4 -p fp32", 17986048},
        {"mt5_small.json -m infer --seq 128 --target-seq 128 -b 2 -p bf16", 6369280},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 1.0);
    static const struct {
        int batch, prompt, new_tokens;
        const char *prec;
        long long prefill, decode;
    } g[] = {{2, 96, 16, "fp32", 8885760, 7716352}, {1, 64, 32, "bf16", 3829248, 3659776},
             {3, 128, 8, "fp32", 10953728, 8317952}};
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        long long p = cli_generate_field("mt5_small", g[i].batch, g[i].prompt, g[i].new_tokens, g[i].prec, "\"prefill_peak\": ");
        long long d = cli_generate_field("mt5_small", g[i].batch, g[i].prompt, g[i].new_tokens, g[i].prec, "\"decode_peak\": ");
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
        {"\"feed_forward_proj\": \"relu\", \"is_gated_act\": true", "is_gated_act: true disagrees with feed_forward_proj"},
        {"\"relative_attention_num_buckets\": 2", "relative_attention_num_buckets: 2: at least 4"},
        {"\"d_kv\": 0", "d_kv"},
        {"\"is_encoder_decoder\": false", "is_encoder_decoder: false"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char path[] = "/tmp/vc_m5XXXXXX.json", args[600];
        int fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fprintf(f, "{\"model_type\": \"mt5\", \"vocab_size\": 1000, \"d_model\": 64, \"d_ff\": 96, \"num_layers\": 2, "
                   "\"num_heads\": 4, \"d_kv\": 16, %s}", c[i].edit);
        fclose(f);
        snprintf(args, sizeof args, "%s --seq 64", path);
        assert_usage(args, c[i].want);
        remove(path);
    }
    assert_usage(HF "mt5-base.json --serve --gpu h100-80gb", "--serve: vLLM has no T5ForConditionalGeneration");
    assert_usage(HF "mt5-base.json -p fp16", "--precision");
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
