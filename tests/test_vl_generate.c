/*
 * test_vl_generate.c — --mode generate with images (issue 31; src/engine/generate.c "Images",
 * src/hf/hf_vision.c, src/hf/hf_layers.c, layers/vision.c): transformers' generate() of
 * Qwen3VLForConditionalGeneration, Qwen3_5ForConditionalGeneration and Qwen2_5_VLForConditionalGeneration
 * (modeling_qwen2_5_vl.py @efa7189c, qwen25vl_replica.py) with pixel_values
 * (modeling_qwen3_vl.py @00709b86 prepare_inputs_for_generation: pixel_values at the first step only;
 * Qwen3VLModel.forward: the tower, the merger and the deepstack mergers on the prefill, get_rope_index
 * once, rope_deltas after), against the peaks measured from bench/accuracy/llm/qwen3vl_tower_replica.py
 * through measure_llm.py --mode generate --image (torch 1.13 CPU; measured.json's cases after llm513,
 * appended at the end of run_suite.py), the cache and the decoding step's bytes derived by hand, and
 * what is refused.
 *
 * Configs: tests/data/hf/qwen3-vl-8b-instruct.json (the published Qwen3-VL-8B-Instruct config) and
 * bench/accuracy/llm/configs/qwen3_vl_img_small.json / qwen3_5_vl_small.json (the replica's small widths).
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
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_run.h"

#define CFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"
#define HF VC_TEST_DATA "/hf/"
#define Q3VL HF "qwen3-vl-8b-instruct.json -m generate -p bf16 "

/* The cache generate() leaves covers the image tokens: Qwen3-VL-8B's processor turns a 640x480 image into
 * smart_resize(480, 640, factor 16 x 2 = 32, min 65,536, max 16,777,216 pixels) = 480 x 640 (both multiples
 * of 32, 307,200 pixels within the bounds), a 30 x 40 grid of 16-pixel patches = 1,200 patches, merged 2 x 2
 * into 300 image tokens. With --prompt 64 and 8 new tokens the DynamicCache holds 64 + 300 + 8 - 1 = 371
 * tokens (the last token chosen is not fed back): 36 layers x 2 (K, V) x 8 kv heads x 128 x 2 bytes (bf16)
 * = 147,456 bytes a token. */
static void cache(void **state)
{
    (void)state;
    assert_int_equal(cli_json_field(Q3VL "--prompt 64 --new-tokens 8 --image 640x480", "\"kv_tokens\": "), 371);
    assert_int_equal(cli_json_field(Q3VL "--prompt 64 --new-tokens 8 --image 640x480", "\"kv_cache\": "),
                     36LL * 2 * 8 * 128 * 2 * 371);
    /* two images: 600 image tokens */
    assert_int_equal(cli_json_field(Q3VL "--prompt 64 --new-tokens 8 --image 640x480 --images 2", "\"kv_tokens\": "),
                     64 + 600 + 7);
    /* the text-only run at a prompt of the same length keeps the same cache */
    assert_int_equal(cli_json_field(Q3VL "--prompt 364 --new-tokens 8", "\"kv_cache\": "), 36LL * 2 * 8 * 128 * 2 * 371);
}

/* The decoding steps do not run the tower (pixel_values None once cache_position[0] != 0): the last step's
 * live set is the text-only run's at a prompt of the same total length (364 = 64 + 300 tokens: the same
 * cache, ids and mask) plus what generate() keeps in model_kwargs, the processor's pixel_values float32
 * [1,200 patches, 3 channels x 2 frames x 16 x 16 = 1,536] = 7,372,800 bytes (a multiple of 512). The
 * weights are compared apart: the run with images loads the tower's rotary inv_freq buffer, the one
 * without only its parameters. The prefill's peak is the tower's attention (sdpa per image, its scores). */
static void decode_without_tower(void **state)
{
    (void)state;
    const char *img = Q3VL "--prompt 64 --new-tokens 8 --image 640x480";
    const char *txt = Q3VL "--prompt 364 --new-tokens 8";
    long long di = cli_json_field(img, "\"decode_peak\": "), wi = cli_json_field(img, "\"weights\": ");
    long long dt = cli_json_field(txt, "\"decode_peak\": "), wt = cli_json_field(txt, "\"weights\": ");
    assert_int_equal((di - wi) - (dt - wt), 1200LL * 1536 * 4);
    cli_run r;
    run(&r, Q3VL "--prompt 64 --new-tokens 8 --image 640x480 --attention math --workspace 0 -f json");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"peak\": {\"phase\": \"prefill\""));
    assert_non_null(strstr(r.out, "\"kind\": \"VisionAttention\""));
}

/* Qwen2.5-VL the same (Qwen2_5_VLForConditionalGeneration.prepare_inputs_for_generation @ efa7189c: pixel_values
 * None once cache_position[0] != 0): Qwen2.5-VL-3B's processor turns 640x480 into smart_resize(480, 640, factor 28)
 * = 476 x 644, 34 x 46 = 1,564 patches of 3 x 2 x 14 x 14 = 1,176 float32 values (7,356,864 bytes, 7,357,440 in
 * 512-byte blocks) and 391 image tokens: the last step's live set is the text-only run's at --prompt 64 + 391 plus
 * those bytes; the tower's vision attention keeps no cache (the same kv_tokens). */
static void qwen2_5_vl_decode_without_tower(void **state)
{
    (void)state;
    const char *img = HF "qwen2.5-vl-3b-instruct.json -m generate -p bf16 --prompt 64 --new-tokens 8 --image 640x480";
    const char *txt = HF "qwen2.5-vl-3b-instruct.json -m generate -p bf16 --prompt 455 --new-tokens 8";
    long long di = cli_json_field(img, "\"decode_peak\": "), wi = cli_json_field(img, "\"weights\": ");
    long long dt = cli_json_field(txt, "\"decode_peak\": "), wt = cli_json_field(txt, "\"weights\": ");
    assert_int_equal((di - wi) - (dt - wt), (1564LL * 1176 * 4 + 511) / 512 * 512);
    assert_int_equal(cli_json_field(img, "\"kv_tokens\": "), 64 + 391 + 7);
    assert_int_equal(cli_json_field(txt, "\"kv_tokens\": "), 64 + 391 + 7);
}

/* measured.json's generate cases with images that are not held out (run_suite.py's blocks: Qwen3.5, Qwen3-VL,
 * then Qwen2.5-VL at the end; every third held out and not asserted): the decoding peaks within 0.1% (1,024
 * bytes low: the [batch, 1] int64 position tensors of rope_deltas), the prefill peaks within 0.1% (1,536 bytes low:
 * cu_seqlens, image_grid_thw and a position tensor, 512-byte blocks not modelled). */
static void measured(void **state)
{
    (void)state;
    static const struct {
        const char *cfg;
        int prompt, new_tokens;
        const char *image;
        int images;
        const char *prec;
        long long prefill, decode; /* measured.json prefill_peak, decode_peak */
    } cases[] = {
        {"qwen3_5_vl_small", 32, 16, "640x480", 1, "fp32", 36449792, 9545728}, /* llm514 */
        {"qwen3_5_vl_small", 64, 24, "224x224", 1, "bf16", 4595712, 2679296}, /* llm515 */
        {"qwen3_5_vl_small", 128, 96, "320x320", 1, "fp32", 7362560, 4580352}, /* llm517 */
        {"qwen3_5_vl_small", 8, 200, "224x224", 1, "bf16", 4588544, 2959872}, /* llm518 */
        {"qwen3_vl_img_small", 32, 16, "640x480", 1, "fp32", 67600384, 13478912}, /* llm520 */
        {"qwen3_vl_img_small", 64, 24, "224x224", 1, "bf16", 7874048, 4534784}, /* llm521 */
        {"qwen3_vl_img_small", 128, 96, "320x320", 1, "fp32", 14420992, 8488960}, /* llm523 */
        {"qwen3_vl_img_small", 8, 200, "224x224", 1, "bf16", 7859712, 4876800}, /* llm524 */
        /* Qwen2.5-VL (qwen25vl_replica.py, run_suite.py's last block): the prefill 2,048-5,632 bytes low, the decode
         * 1,024 (the tower's small index tensors, window_index, cu_seqlens, cu_window_seqlens, image_grid_thw, and
         * the positions: not modelled) */
        {"qwen2_5_vl_small", 32, 8, "224x224", 1, "fp32", 7353344, 4317184},       /* llm565 */
        {"qwen2_5_vl_small", 16, 8, "640x480", 1, "fp32", 114094080, 11200000},    /* llm567 */
        {"qwen2_5_vl_small", 32, 16, "320x320", 2, "bf16", 46806016, 6628352},     /* llm568 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char a[512];
        snprintf(a, sizeof a, CFG "%s.json -m generate --prompt %d --new-tokens %d --image %s --images %d -p %s",
                 cases[i].cfg, cases[i].prompt, cases[i].new_tokens, cases[i].image, cases[i].images, cases[i].prec);
        long long p = cli_json_field(a, "\"prefill_peak\": "), d = cli_json_field(a, "\"decode_peak\": ");
        double ep = 100.0 * (double)(p - cases[i].prefill) / (double)cases[i].prefill;
        double ed = 100.0 * (double)(d - cases[i].decode) / (double)cases[i].decode;
        if (ep < -0.1 || ep > 0.1 || ed < -0.1 || ed > 0.1)
            fail_msg("%s: prefill %lld (measured %lld, %+.2f%%), decode %lld (measured %lld, %+.2f%%)", a, p,
                     cases[i].prefill, ep, d, cases[i].decode, ed);
    }
}

/* What is not modelled exits 2 with one line naming the option. */
static void refusals(void **state)
{
    (void)state;
    /* the positions: prompt + image tokens + new tokens - 1 past max_position_embeddings (4,096): 3,700 + 300 + 99 */
    assert_usage(CFG "qwen3_vl_img_small.json -m generate --prompt 3700 --new-tokens 100 --image 640x480",
                 "--prompt: prompt + new tokens - 1 (4099 tokens fed to the model, the image tokens included) pass its "
                 "4096 positions");
    /* the tower runs a batch's images as one sequence: batch 1, as in training and inference */
    assert_usage(Q3VL "--image 640x480 -b 2", "--image is modelled at --batch 1 for this vision tower");
    /* vLLM profiles the encoder on its own dummy images: --image under --serve is refused (src/api/request.c) */
    assert_usage(HF "qwen3-vl-8b-instruct.json --serve --gpu h100-80gb --image 640x480", "--image with --serve: vLLM profiles the vision encoder");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cache),
        cmocka_unit_test(decode_without_tower),
        cmocka_unit_test(qwen2_5_vl_decode_without_tower),
        cmocka_unit_test(measured),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
