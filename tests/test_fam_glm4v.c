/*
 * test_fam_glm4v.c — model_type "glm4v" (issue 31; src/hf/hf.c's row, src/hf/hf_glm4v.c): Glm4vForConditionalGeneration
 * (models/glm4v/modeling_glm4v.py @ 03eac6f6, configuration_glm4v.py @ 68c08116) without an image: Glm4vTextModel
 * (glm4's decoder layers with mrope) and lm_head run, Glm4vVisionModel is loaded, not run.
 *
 * 1. The parameters, by hand from those __init__s. tests/data/hf/glm-4.1v-9b-thinking.json is written (no network)
 *    from the model card of zai-org/GLM-4.1V-9B-Thinking and Glm4vVisionConfig's / Glm4vTextConfig's defaults (the
 *    sizes below; not read from the Hub, so unverified): its total 10,292,777,472 is derived exactly here (the model
 *    card's "10B", as the Hub's page rounds it) and equals bench/accuracy/llm/glm4v_replica.py's torch count of the
 *    same modules.
 * 2. What a text-only forward runs: glm4's decoder (its KV cache), with mrope's 3-row cos / sin (layers/llm.c).
 * 3. The measured cases of bench/accuracy/llm/measured.json (glm4v_replica.py), those not held out within 1%.
 * 4. Refusals: exit 2 and one line naming the key or option.
 * 5. --image / --images: Glm4vImageProcessor's smart_resize (image_processing_glm4v.py @ 1505215d, the class's
 *    min / max pixels) by hand, the image tokens in the sequence; the measured image cases (glm4v_replica.build_image).
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
#include "fam_hf.h"
#include "vramcalc/vramcalc.h"

#define GLM41V VC_TEST_DATA "/hf/glm-4.1v-9b-thinking.json"
#define SMALL_PATH VC_TEST_DATA "/../../bench/accuracy/llm/configs/glm4v_small.json"

/* bench/accuracy/llm/configs/glm4v_small.json's keys: text 128 wide, 3 layers, 4 heads of 32 over 2 kv heads, MLP 320,
 * vocab 512, partial_rotary_factor 0.5 (16 rotary dims), mrope_section [2, 3, 3]; vision 64 wide, 2 blocks, 4 heads,
 * out_hidden_size 128, intermediate_size 256, 56 x 56 images of 14 x 14 patches, spatial_merge_size 2, temporal 2 */
#define SMALL_TEXT                                                                                                     \
    "\"text_config\": {\"vocab_size\": 512, \"hidden_size\": 128, \"intermediate_size\": 320, \"num_hidden_layers\": " \
    "3, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"partial_rotary_factor\": 0.5, \"rope_scaling\": "     \
    "{\"rope_type\": \"default\", \"mrope_section\": [2, 3, 3]}}"
#define SMALL_VISION                                                                                                   \
    "\"vision_config\": {\"hidden_size\": 64, \"depth\": 2, \"num_heads\": 4, \"out_hidden_size\": 128, "              \
    "\"intermediate_size\": 256, \"image_size\": 56}"
#define SMALL "{\"model_type\": \"glm4v\", " SMALL_TEXT ", " SMALL_VISION "}"

static void test_counts(void **state)
{
    (void)state;
    /* GLM-4.1V-9B-Thinking, by hand (hf_glm4v.c's header):
     * language model (hidden 4096, 32 heads of 128, 2 kv heads, intermediate 13696, 40 layers, vocab 151552, untied):
     *   embed_tokens and lm_head 2 x 151552 x 4096 = 1,241,513,984; per layer q 4096^2 + 4096 = 16,781,312, k / v 2 x
     *   (4096 x 256 + 256) = 2,097,664, o 16,777,216, gate_up 4096 x 27392 = 112,197,632, down 56,098,816, four norms
     *   16,384: 203,969,024; x 40 = 8,158,760,960; norm 4,096. 9,400,279,040 (GLM-4-9B-0414's, tests/test_fam_glm4.c).
     * tower (hidden 1536, 24 blocks, out_hidden_size 4096, intermediate_size 13696, 336 / 14 = 24 a side):
     *   position_embedding 576 x 1536 = 884,736; patch_embed Conv3d 1536 x 3 x 2 x 14 x 14 + 1536 = 1,807,872; per block
     *   norm1 / norm2 3,072, qkv 1536 x 4608 (no bias) 7,077,888, proj 2,359,296, gate / up 2 x 1536 x 4096 =
     *   12,582,912, down 6,291,456: 28,314,624; x 24 = 679,550,976; merger proj 4096^2 = 16,777,216, LayerNorm 8,192,
     *   gate / up 2 x 4096 x 13696 = 112,197,632, down 56,098,816: 185,081,856; post_conv_layernorm and post_layernorm
     *   2 x 1,536; downsample Conv2d 4096 x 1536 x 2 x 2 + 4096 = 25,169,920. 892,498,432.
     * Total 10,292,777,472. */
    assert_int_equal(cli_json_field(GLM41V " -f json", "\"parameters\": "), 10292777472LL);
    /* trainable: what a text-only step gives a gradient (the language model and lm_head) */
    assert_int_equal(cli_json_field(GLM41V " -f json", "\"trainable_parameters\": "), 9400279040LL);
    /* Glm4vConfig()'s sizes are GLM-4.1V's (the class defaults describe it): with rope_scaling (None by default, refused
     * in test_refusals) sectioned for partial_rotary_factor's absent 1.0 (128 rotary dims: sum 64) the same count */
    assert_int_equal(count_of("{\"model_type\": \"glm4v\", \"rope_scaling\": {\"rope_type\": \"default\", "
                              "\"mrope_section\": [16, 24, 24]}}"),
                     10292777472LL);
    /* the small config: text embed_tokens and lm_head 2 x 65,536, 3 x (q 16,512 + k / v 2 x 8,256 + o 16,384 + gate_up
     * 81,920 + down 40,960 + 512) = 518,400, norm 128: 649,600; tower 16 x 64 = 1,024, 64 x 1176 + 64 = 75,328, 2 x
     * (128 + 12,288 + 4,096 + 16,384 + 8,192) = 82,176, merger 16,384 + 256 + 65,536 + 32,768 = 114,944, 2 x 64,
     * downsample 128 x 256 + 128 = 32,896: 306,496. 956,096, glm4v_replica.py's count */
    assert_int_equal(count_of(SMALL), 956096);
    assert_int_equal(cli_json_field(SMALL_PATH " -f json", "\"parameters\": "), 956096);
    /* the tower's modules, one VisionWeights layer each, named as modeling_glm4v.py's */
    assert_int_equal(emitted(SMALL, "model.visual.blocks.1."), 7);
    assert_int_equal(emitted(SMALL, "\"model.visual.downsample\""), 1);
    /* vision_config.attention_bias: qkv's bias, 2 x 192 */
    assert_int_equal(count_of("{\"model_type\": \"glm4v\", " SMALL_TEXT ", \"vision_config\": {\"hidden_size\": 64, "
                              "\"depth\": 2, \"num_heads\": 4, \"out_hidden_size\": 128, \"intermediate_size\": 256, "
                              "\"image_size\": 56, \"attention_bias\": true}}"),
                     956096 + 2 * 192);
    /* without text_config the config's own keys (Glm4vConfig: Glm4vTextConfig(**kwargs)) */
    assert_int_equal(count_of("{\"model_type\": \"glm4v\", \"vocab_size\": 512, \"hidden_size\": 128, \"intermediate_size\": "
                              "320, \"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                              "\"partial_rotary_factor\": 0.5, \"rope_scaling\": {\"rope_type\": \"default\", "
                              "\"mrope_section\": [2, 3, 3]}, " SMALL_VISION "}"),
                     956096);
}

/* what a text-only forward runs: glm4's decoder (hidden // heads = 32 per head, 16 rotary dims), mrope's cos / sin */
static void test_text_only(void **state)
{
    (void)state;
    /* generate()'s cache: 3 layers x 2 (k, v) x 2 kv heads x 32 x fp32 4 B = 1,536 B per token, over the prompt's 64
     * and 15 of the 16 new tokens: 121,344 a sample; the same as glm4's with those keys */
    const int64_t small = fam_kv_cache(SMALL, 64, 16);
    assert_int_equal(small, 3 * 2 * 2 * 32 * 4 * (64 + 15));
    const char *glm4 = "{\"model_type\": \"glm4\", \"vocab_size\": 512, \"hidden_size\": 128, \"intermediate_size\": 320, "
                       "\"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 32, "
                       "\"partial_rotary_factor\": 0.5, \"rms_norm_eps\": 1e-5}";
    assert_int_equal(fam_kv_cache(glm4, 64, 16), small);
    assert_int_equal(count_of(glm4), 649600); /* the language model and lm_head of SMALL */
    /* mrope: the rotary embedding's pair and each layer's cos / sin are the batch's (position_ids [3, B, L]), glm4's
     * one [1, L]: the model's RotaryEmbedding and its decoder layer's RotaryAttention (written once, repeated over the 3
     * layers) carry "mrope", glm4's do not */
    assert_int_equal(emitted(SMALL, "\"mrope\""), 2);
    assert_int_equal(emitted(glm4, "\"mrope\""), 0);
}

/* bench/accuracy/llm/measured.json's glm4v_small cases (run_suite.py's last block; glm4v_replica.py, torch 1.13 CPU,
 * the allocator counter; --attention math --workspace 0), those not held out: train fp32 -0.02%, bf16 -0.03%, LoRA r=8
 * on q_proj,v_proj at batch 4 -0.03%, checkpointed fp32 +0.00%, -m infer fp32 -0.03%; generate fp32 at batch 2: prefill
 * +0.00%, decode +0.00% (without the mrope sizes: -0.18%, -0.19%, -0.41%, 0.00%, -0.89%, -0.82%) */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"glm4v_small.json --seq 64 -b 2 -o adamw -p fp32", 15184896},
        {"glm4v_small.json --seq 96 -b 2 -o adamw -p bf16", 11423232},
        {"glm4v_small.json --seq 48 -b 4 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 7428096},
        {"glm4v_small.json --seq 64 -b 2 -o adamw -p fp32 --grad-ckpt --grad-ckpt-kind non-reentrant", 14230016},
        {"glm4v_small.json -m infer --seq 256 -b 1 -p fp32", 7602688},
    };
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 1.0);
    /* generate as 4.x runs it (compare.py: --transformers 4.57): measured prefill 4,995,072, decode 4,332,544 */
    const char *g = SMALL_PATH " -m generate --prompt 64 --new-tokens 16 -b 2 -p fp32 --attention math --workspace 0 "
                               "--transformers 4.57";
    const int64_t pre = cli_json_num(g, "generate", "prefill_peak"), dec = cli_json_num(g, "generate", "decode_peak");
    assert_true(pre > 4995072 * 0.99 && pre < 4995072 * 1.01);
    assert_true(dec > 4332544 * 0.99 && dec < 4332544 * 1.01);
}

/* "seq N" in the model's name: --seq's text and the images' tokens (hf.c) */
static bool seq_is(const char *args, const char *want) { return strstr(cli_output(args), want) != NULL; }

/* --image WxH: smart_resize(num_frames 2, h, w, temporal_factor 2, factor 14 x 2 = 28, min_pixels 112 x 112 = 12,544,
 * max_pixels 28 x 28 x 15000 = 11,760,000), by hand; grid_h x grid_w patches of 14, / 2^2 image tokens each image,
 * added to --seq's text */
static void test_images(void **state)
{
    (void)state;
    char a[512];
    /* 640 x 480: h_bar round(480 / 28 = 17.14) x 28 = 476, w_bar round(640 / 28 = 22.86) x 28 = 644; t_bar 2, 2 x 476 x
     * 644 = 613,088 within the bounds; grid 34 x 46 = 1,564 patches, 391 tokens; 512 + 391 */
    snprintf(a, sizeof a, "%s --seq 512 --image 640x480 -f json", GLM41V);
    assert_true(seq_is(a, "seq 903)"));
    /* 64 x 64: h_bar = w_bar = round(2.29) x 28 = 56, 2 x 56 x 56 = 6,272 under 12,544: beta = sqrt(12,544 / (2 x 64 x
     * 64)) = 1.2374, ceil(64 x 1.2374 / 28 = 2.83) x 28 = 84; 6 x 6 = 36 patches, 9 tokens an image; 3 images: 100 + 27 */
    snprintf(a, sizeof a, "%s --seq 100 --image 64x64 --images 3 -f json", GLM41V);
    assert_true(seq_is(a, "seq 127)"));
    /* 3000 x 2000: h_bar round(71.43) x 28 = 1,988, w_bar round(107.14) x 28 = 2,996, 2 x 1,988 x 2,996 = 11,912,096
     * over 11,760,000: beta = sqrt(2 x 2000 x 3000 / 11,760,000) = 1.01015, floor(2000 / 1.01015 / 28 = 70.7) x 28 =
     * 1,960, floor(3000 / 1.01015 / 28 = 106.07) x 28 = 2,968; 140 x 212 = 29,680 patches, 7,420 tokens */
    snprintf(a, sizeof a, "%s --seq 100 --image 3000x2000 -m infer -f json", GLM41V);
    assert_true(seq_is(a, "seq 7520)"));
    /* SMALL_PATH (bench/accuracy/llm/configs/glm4v_small.json): 112 x 112 stays (2 x 112^2 = 25,088 within the bounds) */
    snprintf(a, sizeof a, "%s --seq 64 --image 112x112 -f json", SMALL_PATH);
    assert_true(seq_is(a, "seq 80)")); /* 112 x 112: 8 x 8 patches, 16 tokens */
    /* bench/accuracy/llm/measured.json's glm4v_small image cases not held out (glm4v_replica.build_image; --attention
     * math --workspace 0): train bf16 -0.05%, fp32 two images -0.02%, -m infer bf16 -0.06%, fp32 two images -0.04% */
    static const cli_measured c[] = {
        {"glm4v_small.json --seq 64 -b 1 -o adamw -p bf16 --image 112x112 --images 1", 7649792},
        {"glm4v_small.json --seq 48 -b 2 -o sgd -p fp32 --image 224x168 --images 2", 22401536},
        {"glm4v_small.json -m infer --seq 32 -b 1 -p bf16 --image 336x336 --images 1", 19227136},
        {"glm4v_small.json -m infer --seq 64 -b 2 -p fp32 --image 140x84 --images 2", 6514688},
    };
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 1.0);
}

static void test_refusals(void **state)
{
    (void)state;
    static const fam_refusal c[] = {
        /* Glm4vConfig()'s rope_scaling None: Glm4vTextAttention indexes it in every forward */
        {"\"vocab_size\": 512", "rope_scaling: absent: Glm4vTextAttention reads rope_scaling[\"mrope_section\"]"},
        {"\"text_config\": {\"rope_scaling\": null}", "text_config.rope_scaling: absent"},
        {"\"text_config\": {\"rope_scaling\": {\"rope_type\": \"default\", \"mrope_section\": [8, 12, 12]}}",
         "text_config.rope_scaling.mrope_section: sums to 32; twice that must be the 128 rotary dimensions"},
        {"\"text_config\": {\"partial_rotary_factor\": 0.5, \"rope_scaling\": {\"rope_type\": \"default\", "
         "\"mrope_section\": [8, 12]}}",
         "text_config.rope_scaling.mrope_section: expected a list of three integers"},
        {"\"text_config\": {\"partial_rotary_factor\": 0.5, \"rope_scaling\": {\"rope_type\": \"default\", "
         "\"mrope_section\": [8, 12, 0]}}",
         "text_config.rope_scaling.mrope_section: expected a list of three positive integers"},
        {"\"text_config\": {\"partial_rotary_factor\": 0.5, \"rope_scaling\": {\"rope_type\": \"mrope\", "
         "\"mrope_section\": [8, 12, 12]}}",
         "text_config.rope_scaling.rope_type: \"mrope\": Glm4vTextRotaryEmbedding looks it up in ROPE_INIT_FUNCTIONS"},
        {"\"text_config\": {\"partial_rotary_factor\": 0.3046875, \"rope_scaling\": {\"rope_type\": \"default\", "
         "\"mrope_section\": [8, 12, 12]}}",
         "text_config.partial_rotary_factor: 0.304688 x head_dim 128 gives 39 rotary dimensions"},
        {SMALL_TEXT ", \"vision_config\": {\"out_hidden_size\": 64}",
         "vision_config.out_hidden_size: 64: the merger's output must be text_config.hidden_size (128)"},
        {SMALL_TEXT ", \"vision_config\": {\"out_hidden_size\": 128, \"image_size\": 10}",
         "vision_config.patch_size: 14: larger than image_size (10)"},
        {SMALL_TEXT ", \"vision_config\": {\"out_hidden_size\": 128, \"depth\": 2000}", "vision_config.depth: 2000 blocks"},
        {SMALL_TEXT ", \"vision_config\": {\"out_hidden_size\": 128, \"hidden_size\": 0}",
         "vision_config.hidden_size: expected an integer of at least 1"},
        {SMALL_TEXT ", \"vision_config\": {\"out_hidden_size\": 128, \"temporal_patch_size\": 1.5}",
         "vision_config.temporal_patch_size: expected an integer"},
        {SMALL_TEXT ", \"vision_config\": {\"out_hidden_size\": 128, \"attention_bias\": 1}",
         "vision_config.attention_bias: expected true or false"},
        {SMALL_TEXT ", \"vision_config\": {\"out_hidden_size\": 128, \"spatial_merge_size\": 0}",
         "vision_config.spatial_merge_size: expected an integer of at least 1"},
        {SMALL_TEXT ", \"vision_config\": 3", "vision_config: expected an object"},
        {SMALL_TEXT ", " SMALL_VISION ", \"tie_word_embeddings\": true", "tie_word_embeddings: true, but text_config's is false"},
        {SMALL_TEXT ", " SMALL_VISION ", \"tie_word_embeddings\": 1", "tie_word_embeddings: expected true or false"},
    };
    fam_refuse_edits("{\"model_type\": \"glm4v\", ", c, sizeof c / sizeof *c);
    static const fam_refusal o[] = {
        /* generate() with images: the decoding steps' pixel_values and cached rope_deltas, not modelled */
        {"--image 448x448 -m generate --prompt 64 --new-tokens 8", "--image: glm4v's generate() with images"},
        {"--images 2", "--images: needs --image WxH"},
        /* smart_resize's ValueErrors: a side under 28 (patch_size x spatial_merge_size), an aspect ratio over 200 */
        {"--image 27x600", "--image: 27x600: height and width must be at least 28"},
        {"--image 6000x28", "--image: 6000x28: the aspect ratio must be at most 200"},
        {"--image 448x448 --images 65", "--images: 65 images per sample: glm4v's tower is modelled with at most 64"},
        {"--serve --gpu h100-80gb", "--serve: glm4v under vLLM"},
        {"--tp 2 --gpus 2", "--tp: glm4v on tensor-parallel ranks is not modelled"},
        {"--lora 8", "--lora needs --lora-targets"},
        {"--packing -b 2", "--packing: packed sequences through Glm4v's mrope"},
        /* apply_liger_kernel_to_glm4v (hf.c liger_family) */
        {"--liger", "--liger: glm4v: apply_liger_kernel_to_glm4v's patch set is not modelled"},
    };
    fam_refuse_options(GLM41V, o, sizeof o / sizeof *o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_text_only),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_images),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
