/*
 * test_qwen3vl.c — model_type "qwen3_vl" (issue 31 item 4): Qwen3VLForConditionalGeneration's language
 * model (Qwen3's decoder from text_config, interleaved MRoPE) and its vision tower's weights, frozen
 * (src/hf/hf_vision.c write_qwen3_weights), as modeling_qwen3_vl.py @ 00709b86 and
 * configuration_qwen3_vl.py @ 000c33fd build them; with --image the tower and its deepstack run.
 *
 * 1. Qwen3-VL-8B-Instruct's parameters by hand from the module shapes (= bench/accuracy/llm/
 *    qwen3vl_replica.py's count on the meta device), the model card's 8.77B; the language model
 *    trainable, the tower not.
 * 2. The measured text-only training cases of bench/accuracy/llm/measured.json (llm339-llm344, torch
 *    1.13 CPU, the allocator counter; --attention math, --workspace 0) within 1%.
 * 3. Refusals naming the option or the key.
 * 4. Images: the tower with its deepstack mergers and the features added after the first decoder
 *    layers (test_images), measured (llm495-llm504) within 1%.
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
    /* images (test_images): above batch 1, a block listed twice in deepstack_visual_indexes */
    assert_usage(HF "qwen3-vl-8b-instruct.json --image 640x480 --batch 2", "--image is modelled at --batch 1 for this vision tower");
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
        /* with an image: one merger would run for block 1, the other not */
        {"\"out_hidden_size\": 128, \"deepstack_visual_indexes\": [1, 1]", "vision_config.deepstack_visual_indexes: block 1 is listed twice"},
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
        snprintf(args, sizeof args, "%s --seq 64%s", path, strstr(c[i].vision, "[1, 1]") ? " --image 64x64" : "");
        assert_usage(args, c[i].want);
        remove(path);
    }
}

/* Images (src/hf/hf_vision.c write_qwen3_tower with the deepstack mergers; src/hf/hf_layers.c
 * deepstack_add; layers/vision.c DeepstackAdd): the image tokens as Qwen3.5's processor gives them
 * (smart_resize with 65536 / 16777216 pixels, factor 32: 640x480 -> 300 tokens, 224x224 -> 256x256,
 * 64; tests/test_qwen3_5_vision.c), the parameters unchanged, and measured.json llm495-llm504
 * (run_suite.py's q3vi rows, qwen3vl_tower_replica.py build_qwen3_vl: the tower with deepstack mergers
 * after blocks 0 and 2, the features added after decoder layers 0 and 1) within 1%. */
static void test_images(void **state)
{
    (void)state;
    static const struct { int64_t w, h, n, tokens; } sz[] = {{640, 480, 1, 300}, {224, 224, 1, 64}, {640, 480, 2, 600}};
    for (size_t i = 0; i < sizeof sz / sizeof *sz; i++) {
        vc_hf_options o;
        vc_hf_options_init(&o);
        o.seq = 100;
        o.image_w = sz[i].w;
        o.image_h = sz[i].h;
        o.images = sz[i].n;
        vc_model *m = NULL;
        vc_error err;
        assert_int_equal(vc_model_load_file_hf(HF "qwen3-vl-8b-instruct.json", &o, &m, &err), VC_OK);
        assert_int_equal(vc_model_parameters(m), INT64_C(8767123696));
        assert_int_equal(vc_model_trainable_parameters(m), INT64_C(8190735360));
        char args[300];
        snprintf(args, sizeof args, HF "qwen3-vl-8b-instruct.json --seq 100 --image %lldx%lld --images %lld -m infer -p bf16",
                 (long long)sz[i].w, (long long)sz[i].h, (long long)sz[i].n);
        cli_run r;
        run(&r, args);
        char want[64];
        snprintf(want, sizeof want, "seq %lld)", (long long)(100 + sz[i].tokens));
        if (r.status != 0 || !strstr(r.out, want)) fail_msg("%s: exit %d, no \"%s\" in %s", args, r.status, want, r.out);
        vc_model_free(m);
    }
    static const cli_measured c[] = {
        {"qwen3_vl_img_small.json --seq 64 -o adamw -p fp32 --image 224x224", 19602944},
        {"qwen3_vl_img_small.json --seq 64 -o adamw -p bf16 --image 448x336 --images 2", 30753280},
        {"qwen3_vl_img_small.json --seq 96 -o sgd -p fp32 --image 640x480", 67630080},
        {"qwen3_vl_img_small.json --seq 64 -o adamw -p fp32 --image 320x320 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 14629888},
        {"qwen3_vl_img_small.json --seq 128 -o adamw -p bf16 --image 224x224 --grad-ckpt", 10900992},
        {"qwen3_vl_img_small.json --seq 48 -o adam -p fp32 --image 512x512 --images 2 --lora 8 --lora-alpha 16 "
         "--lora-dropout 0 --lora-targets q_proj,v_proj", 61215232},
        {"qwen3_vl_img_small.json -m infer --seq 64 -p fp32 --image 640x480", 67609600},
        {"qwen3_vl_img_small.json -m infer --seq 32 -p fp32 --image 1280x960", 877355520},
        {"qwen3_vl_img_small.json -m infer --seq 256 -p bf16 --image 224x224", 9603072},
        {"qwen3_vl_img_small.json -m infer --seq 32 -p bf16 --image 1024x768 --images 2", 410907648},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_images),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
