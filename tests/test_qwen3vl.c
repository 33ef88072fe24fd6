/*
 * test_qwen3vl.c — model_type "qwen3_vl" (issue 31 item 4): Qwen3VLForConditionalGeneration's language
 * model (Qwen3's decoder from text_config, interleaved MRoPE) and its vision tower's weights, frozen
 * (src/hf/hf_vision.c write_qwen3_weights), as modeling_qwen3_vl.py @ 00709b86 and
 * configuration_qwen3_vl.py @ 000c33fd build them; images are refused for now.
 *
 * 1. Qwen3-VL-8B-Instruct's parameters by hand from the module shapes (= bench/accuracy/llm/
 *    qwen3vl_replica.py's count on the meta device), the model card's 8.77B; the language model
 *    trainable, the tower not.
 * 2. The measured text-only training cases of bench/accuracy/llm/measured.json (llm339-llm344, torch
 *    1.13 CPU, the allocator counter; --attention math, --workspace 0) within 1%.
 * 3. Refusals naming the option or the key.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "hf_estimate.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

/* Qwen3-VL-8B-Instruct (tests/data/hf/qwen3-vl-8b-instruct.json):
 * the language model is Qwen3-8B's shape: embed_tokens and the untied lm_head 2 x 151936 x 4096
 * = 1,244,659,712; a layer q 4096 x 4096, k and v 1024 x 4096, o 4096 x 4096, q_norm / k_norm 2 x 128,
 * the MLP 3 x 4096 x 12288, two norms 8192: 192,946,432, x 36 = 6,946,071,552; the norm 4096:
 * 8,190,735,360 (= Qwen3-8B's, tests/test_hf.c). The tower: patch_embed 1152 x 1536 + 1152 =
 * 1,770,624; pos_embed 2304 x 1152 = 2,654,208; a block norm1 / norm2 4 x 1152, qkv 1152 x 3456 + 3456,
 * proj 1152 x 1152 + 1152, linear_fc1 1152 x 4304 + 4304, linear_fc2 4304 x 1152 + 1152: 15,239,504,
 * x 27 = 411,466,608; merger norm 2 x 1152, linear_fc1 4608 x 4608 + 4608, linear_fc2 4608 x 4096 + 4096:
 * 40,119,040; 3 deepstack mergers (norm 2 x 4608): 3 x 40,125,952 = 120,377,856: 576,388,336.
 * Total 8,767,123,696, the model card's 8.77B. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_file_hf(HF "qwen3-vl-8b-instruct.json", NULL, &m, &err), VC_OK);
    assert_int_equal(vc_model_parameters(m), INT64_C(8767123696));
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(8190735360));
    vc_model_free(m);
}

static int64_t estimate(int64_t batch, int64_t seq, vc_optim opt, vc_precision p, bool ckpt, int64_t lora)
{
    return hf_estimate(
        &(hf_case){LLMCFG "qwen3_vl_small.json", VC_MODE_TRAIN, batch, seq, opt, p, ckpt, lora, "q_proj,v_proj", VC_ATTN_MATH});
}

/* measured.json llm339-llm344 (run_suite.py's q3vl rows, qwen3vl_replica.py) */
static void test_measured(void **state)
{
    (void)state;
    static const struct {
        int64_t batch, seq;
        vc_optim opt;
        vc_precision p;
        bool ckpt;
        int64_t lora, measured;
    } c[] = {
        {2, 64, VC_OPTIM_ADAMW, VC_PREC_FP32, false, 0, 17483264}, {2, 128, VC_OPTIM_ADAMW, VC_PREC_BF16, true, 0, 9626112},
        {4, 96, VC_OPTIM_SGD, VC_PREC_BF16, false, 0, 18310144},   {2, 64, VC_OPTIM_ADAMW, VC_PREC_FP32, false, 8, 9855488},
        {1, 200, VC_OPTIM_ADAMW, VC_PREC_BF16, true, 8, 5743616},  {3, 80, VC_OPTIM_ADAM, VC_PREC_FP32, false, 0, 23428096},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        int64_t e = estimate(c[i].batch, c[i].seq, c[i].opt, c[i].p, c[i].ckpt, c[i].lora);
        double err = 100.0 * (double)(e - c[i].measured) / (double)c[i].measured;
        printf("llm%zu %+.2f%%\n", 312 + i, err);
        if (err > 1.0 || err < -1.0) fail_msg("llm%zu: estimate %lld, measured %lld", 312 + i, (long long)e, (long long)c[i].measured);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    assert_usage(HF "qwen3-vl-8b-instruct.json --image 640x480", "qwen3_vl: the images' memory is not modelled yet");
    {
        char path[] = "/tmp/vc_q3tXXXXXX.json", args[600];
        int fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fprintf(f, "{\"model_type\": \"qwen3_vl\", \"tie_word_embeddings\": true, \"text_config\": {\"vocab_size\": 1000, "
                   "\"hidden_size\": 128, \"intermediate_size\": 256, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2}, "
                   "\"vision_config\": {\"depth\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, \"num_heads\": 4, "
                   "\"out_hidden_size\": 128, \"deepstack_visual_indexes\": [0]}}");
        fclose(f);
        snprintf(args, sizeof args, "%s --seq 64", path);
        assert_usage(args, "tie_word_embeddings: true, but text_config's is false");
        remove(path);
    }
    static const struct {
        const char *vision, *want;
    } c[] = {
        {"\"out_hidden_size\": 128, \"deepstack_visual_indexes\": [0, 9]",
         "vision_config.deepstack_visual_indexes: expected block indices from 0 to depth - 1 (1)"},
        {"\"out_hidden_size\": 128", "vision_config.deepstack_visual_indexes: absent: Qwen3VLVisionConfig's default [8, 16, 24] "
                                    "names blocks past depth 2"},
        {"\"out_hidden_size\": 96, \"deepstack_visual_indexes\": [0]",
         "vision_config.out_hidden_size: 96: the merger's output must be the language model's hidden_size (128)"},
        {"\"out_hidden_size\": 128, \"deepstack_visual_indexes\": [0], \"hidden_act\": \"tanh\"",
         "vision_config.hidden_act: activation \"tanh\" is not modelled"},
        {"\"out_hidden_size\": 128, \"deepstack_visual_indexes\": [0], \"num_position_embeddings\": 0",
         "vision_config.num_position_embeddings: expected an integer of at least 1"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char path[] = "/tmp/vc_q3XXXXXX.json", args[600];
        int fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fprintf(f, "{\"model_type\": \"qwen3_vl\", \"text_config\": {\"vocab_size\": 1000, \"hidden_size\": 128, "
                   "\"intermediate_size\": 256, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                   "\"head_dim\": 32}, \"vision_config\": {\"depth\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, "
                   "\"num_heads\": 4, %s}}", c[i].vision);
        fclose(f);
        snprintf(args, sizeof args, "%s --seq 64", path);
        assert_usage(args, c[i].want);
        remove(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
