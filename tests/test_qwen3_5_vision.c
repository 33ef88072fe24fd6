/*
 * test_qwen3_5_vision.c — Qwen3.5's vision tower run on images (issue 31 item 4): --image / --images
 * for model_type qwen3_5 and qwen3_5_moe (src/hf/hf_vision.c write_qwen3_tower; layers/vision.c
 * VisionPosEmbed, VisionRotary, VisionAttention, VisionOutputs), as modular_qwen3_5.py @ 8940358a and
 * modeling_qwen3_vl.py @ 68a7b7e2 run it.
 *
 * 1. The processor's resize: smart_resize (image_processing_qwen2_vl.py @ cb0fc56f) with the
 *    checkpoints' preprocessor_config.json (shortest_edge 65536 and longest_edge 16777216 pixels,
 *    factor patch_size 16 x merge_size 2 = 32): the image tokens, the language model's input length
 *    less --seq, are (h / 16) x (w / 16) / 4 per image of the resized size, as
 *    bench/accuracy/llm/qwen3vl_tower_replica.py smart_resize gives it: 640x480 -> 640x480, 300 tokens;
 *    224x224 -> 256x256 (under 65536 pixels: scaled up), 64; 1280x720 -> 1280x704 (720 / 32 = 22.5
 *    rounds to even, 22), 880; 8000x6000 -> 4704x3520 (over 16777216 pixels: scaled down), 16170;
 *    100x3000 -> 96x3008, 282; 32x32 -> 256x256, 64.
 * 2. The parameters with and without an image: the same (the tower's weights are counted either way,
 *    frozen).
 * 3. The measured cases of bench/accuracy/llm/measured.json llm484-llm494 (run_suite.py's q35v rows:
 *    training, LoRA r=8 on q_proj,v_proj, and --mode infer, 1 or 2 images, fp32 and bf16; torch 1.13 CPU,
 *    the allocator counter) within 1%.
 * 4. Refusals, exit 2 naming the option or key: an image under 32 pixels a side, an aspect ratio over
 *    200, --image above --batch 1 (the tower runs a batch's images as one sequence), an activation of
 *    the tower that is not modelled, a head_dim that is not a multiple of 4 (the 2-D rotary), more than
 *    64 images per sample.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "cli_run.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

static vc_model *load(const char *file, const vc_hf_options *o)
{
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(file, o, &m, &err) != VC_OK) fail_msg("%s: %s %s", file, err.path, err.msg);
    return m;
}

/* the generated model's input length: --seq text tokens and the image tokens */
static int64_t input_len(const vc_model *m)
{
    cJSON *j = cJSON_Parse(vc_model_generated_json(m));
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "input"), "shape");
    int64_t n = (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble;
    cJSON_Delete(j);
    return n;
}

static void test_tokens(void **state)
{
    (void)state;
    static const struct { int64_t w, h, images, tokens; } sizes[] = {
        {640, 480, 1, 300}, {224, 224, 1, 64}, {1280, 720, 1, 880}, {8000, 6000, 1, 16170},
        {100, 3000, 1, 282}, {32, 32, 1, 64}, {640, 480, 3, 900},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        vc_hf_options o;
        vc_hf_options_init(&o);
        o.seq = 64;
        o.image_w = sizes[i].w;
        o.image_h = sizes[i].h;
        o.images = sizes[i].images;
        vc_model *m = load(HF "qwen3.6-27b.json", &o);
        if (input_len(m) != 64 + sizes[i].tokens)
            fail_msg("%lldx%lld x %lld: %lld image tokens, expected %lld", (long long)sizes[i].w, (long long)sizes[i].h,
                     (long long)sizes[i].images, (long long)(input_len(m) - 64), (long long)sizes[i].tokens);
        vc_model_free(m);
    }
}

static void test_parameters(void **state)
{
    (void)state;
    static const char *const files[] = {HF "qwen3.6-27b.json", HF "qwen3.6-35b-a3b.json", LLMCFG "qwen3_5_vl_small.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        vc_model *a = load(files[i], NULL);
        vc_hf_options o;
        vc_hf_options_init(&o);
        o.image_w = 640;
        o.image_h = 480;
        vc_model *b = load(files[i], &o);
        assert_int_equal(vc_model_parameters(a), vc_model_parameters(b));
        assert_int_equal(vc_model_trainable_parameters(a), vc_model_trainable_parameters(b));
        vc_model_free(a);
        vc_model_free(b);
    }
    /* qwen3_5_vl_small: the replica's count (measured.json llm484 "params": 347608) */
    vc_model *m = load(LLMCFG "qwen3_5_vl_small.json", NULL);
    assert_int_equal(vc_model_parameters(m), 347608);
    assert_int_equal(vc_model_trainable_parameters(m), 254456);
    vc_model_free(m);
}

/* measured.json llm484-llm494 (run_suite.py's q35v rows; qwen3vl_tower_replica.py) */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"qwen3_5_vl_small.json --seq 64 -o adamw -p fp32 --image 224x224", 22436352},
        {"qwen3_5_vl_small.json --seq 64 -o adamw -p bf16 --image 224x224", 19189760},
        {"qwen3_5_vl_small.json --seq 32 -o sgd -p fp32 --image 640x480", 61109760},
        {"qwen3_5_vl_small.json --seq 64 -o adamw -p bf16 --image 448x336 --images 2 --lora 8 --lora-alpha 16 "
         "--lora-dropout 0 --lora-targets q_proj,v_proj", 17924608},
        {"qwen3_5_vl_small.json --seq 96 -o adamw -p fp32 --image 320x320", 38445056},
        {"qwen3_5_vl_small.json --seq 48 -o adamw -p fp32 --image 512x512 --images 2 --lora 8 --lora-alpha 16 "
         "--lora-dropout 0 --lora-targets q_proj,v_proj", 35880960},
        {"qwen3_5_vl_small.json -m infer --seq 64 -p fp32 --image 640x480", 36450816},
        {"qwen3_5_vl_small.json -m infer --seq 32 -p fp32 --image 1280x960", 452559360},
        {"qwen3_5_vl_small.json -m infer --seq 32 -p fp32 --image 1024x768 --images 2", 217900544},
        {"qwen3_5_vl_small.json -m infer --seq 64 -p bf16 --image 448x448", 20021760},
        {"qwen3_5_vl_small.json -m infer --seq 32 -p bf16 --image 1024x768", 202846208},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 1.0);
}

static void test_refusals(void **state)
{
    (void)state;
    assert_usage(HF "qwen3.6-27b.json --image 31x480", "--image: 31x480: height and width must be at least 32");
    assert_usage(HF "qwen3.6-27b.json --image 40x9000", "--image: 40x9000: the aspect ratio must be at most 200");
    assert_usage(HF "qwen3.6-27b.json --image 640x480 --batch 2", "--image is modelled at --batch 1 for this vision tower");
    assert_usage(HF "qwen3.6-27b.json --images 2", "--images: needs --image WxH");
    assert_usage(HF "qwen3.6-27b.json --image 64x64 --images 65", "--images: 65 images per sample: the Qwen3 towers are modelled with at most 64");
    char path[] = "/tmp/vc_q35vXXXXXX.json", args[600];
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"model_type\": \"qwen3_5\", \"text_config\": {\"vocab_size\": 256, \"hidden_size\": 64, \"intermediate_size\": 128, "
               "\"num_hidden_layers\": 4, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 32}, "
               "\"vision_config\": {\"depth\": 1, \"hidden_size\": 32, \"intermediate_size\": 64, \"num_heads\": 2, "
               "\"num_position_embeddings\": 64, \"out_hidden_size\": 64, \"hidden_act\": \"tanh\"}}");
    fclose(f);
    snprintf(args, sizeof args, "%s --seq 64", path);
    cli_run r;
    run(&r, args); /* without an image the tower does not run: its activation is not read */
    assert_int_equal(r.status, 0);
    snprintf(args, sizeof args, "%s --seq 64 --image 64x64", path);
    assert_usage(args, "vision_config.hidden_act: activation \"tanh\" is not modelled");
    remove(path);
    /* head_dim 32 / 16 = 2: rot_pos_emb's quarters per axis need a multiple of 4 */
    char p2[] = "/tmp/vc_q35hXXXXXX.json";
    fd = mkstemps(p2, 5);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    fprintf(f, "{\"model_type\": \"qwen3_5\", \"text_config\": {\"vocab_size\": 256, \"hidden_size\": 64, \"intermediate_size\": 128, "
               "\"num_hidden_layers\": 4, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 32}, "
               "\"vision_config\": {\"depth\": 1, \"hidden_size\": 32, \"intermediate_size\": 64, \"num_heads\": 16, "
               "\"num_position_embeddings\": 64, \"out_hidden_size\": 64}}");
    fclose(f);
    snprintf(args, sizeof args, "%s --seq 64 --image 64x64", p2);
    assert_usage(args, "vision_config.num_heads: head_dim 2 (hidden_size / num_heads) must be a multiple of 4");
    remove(p2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_parameters),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
