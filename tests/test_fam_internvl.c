/*
 * test_fam_internvl.c — model_type "internvl" (issue 31, towers; src/hf/hf.c's two rows, src/hf/hf_internvl.c):
 * InternVLForConditionalGeneration (models/internvl/modeling_internvl.py @ 2fd44548, configuration_internvl.py @
 * 04ea98d5) without an image: the Qwen2Model (InternVL3) or Qwen3Model (InternVL3.5) text model and lm_head run,
 * InternVLVisionModel and the multi-modal projector are loaded, not run.
 *
 * 1. The parameters, by hand from those __init__s. tests/data/hf/internvl3-1b-hf.json is written (no network) from
 *    memory of the Hub's config.json for OpenGVLab/InternVL3-1B-hf (the sizes below; not read from the Hub here, so
 *    unverified); its total, 938,193,024, is derived exactly here from the modeling source (not the published
 *    safetensors total, which could not be read; the model card's "1B" / the Hub's "0.9B params" as remembered) and
 *    equals bench/accuracy/llm/internvl_replica.py --check's torch count of the same modules.
 * 2. What a text-only forward runs: Qwen2ForCausalLM's / Qwen3ForCausalLM's layers (the KV cache of generate() a qwen2
 *    / qwen3 config's). With --image: GotOcr2ImageProcessor's tiles (image_processing_got_ocr2.py @ 0b97ca8d) and the
 *    prompt's tokens (processing_internvl.py @ 024fd4ce), worked by hand below; the tower and projector run on them.
 * 3. The measured cases of bench/accuracy/llm/measured.json (internvl_replica.py), on text and with images, those not
 *    held out within 1%.
 * 4. Refusals: exit 2 and one line naming the key or option.
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

#define HF VC_TEST_DATA "/hf/"
#define I1B HF "internvl3-1b-hf.json"

/* a small config: text 64 wide, 2 layers, 4 heads of 16, 2 kv heads, MLP 128, vocab 128, untied; vision 32 wide, MLP
 * 64, 2 layers, 4 heads, 32 x 32 images of 8 x 8 patches; downsample_ratio 0.5 */
#define SMALL_TEXT(t)                                                                                                 \
    "\"text_config\": {\"model_type\": \"" t "\", \"vocab_size\": 128, \"hidden_size\": 64, \"intermediate_size\": "   \
    "128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16}"
#define SMALL_VISION                                                                                                  \
    "\"vision_config\": {\"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2, "                  \
    "\"num_attention_heads\": 4, \"image_size\": 32, \"patch_size\": [8, 8]"
#define SMALL "{\"model_type\": \"internvl\", " SMALL_TEXT("qwen2") ", " SMALL_VISION "}}"

static void test_counts(void **state)
{
    (void)state;
    /* InternVL3-1B-hf, by hand (hf_internvl.c's header):
     * vision_tower (hidden 1024, intermediate 4096, 24 layers, 448 / 14 = 32 patches a side, attention_bias):
     *   cls_token 1,024; patch_embeddings.projection 1024 x 3 x 14 x 14 + 1024 = 603,136; position_embeddings 1025 x
     *   1024 = 1,049,600; per layer q/k/v_proj 3 x (1024^2 + 1024) = 3,148,800, projection_layer 1,049,600, fc1 4096 x
     *   1024 + 4096 = 4,198,400, fc2 1024 x 4096 + 1024 = 4,195,328, layernorm_before / after 4,096, lambda_1 / 2 2,048:
     *   12,598,272; x 24 = 302,358,528; layernorm nn.Identity (use_mean_pooling). Tower 304,012,288.
     * multi_modal_projector: layer_norm 1024 x (1 / 0.5)^2 = 4096 wide, 8,192; linear_1 4096 x 896 + 896 = 3,670,912;
     *   linear_2 896^2 + 896 = 803,712: 4,482,816.
     * language_model (Qwen2: hidden 896, 14 heads of 64, 2 kv heads, intermediate 4864, 24 layers, vocab 151674):
     *   embed_tokens 151674 x 896 = 135,899,904; per layer q 896^2 + 896 = 803,712, k / v 2 x (128 x 896 + 128) =
     *   229,632, o 802,816, MLP 3 x 896 x 4864 = 13,074,432, two norms 1,792: 14,912,384; x 24 = 357,897,216; norm 896;
     *   lm_head (untied) 135,899,904. 629,697,920.
     * Total 938,193,024. */
    assert_int_equal(cli_json_field(I1B " -f json", "\"parameters\": "), 938193024LL);
    /* trainable: what a text-only step gives a gradient (the language model and lm_head) */
    assert_int_equal(cli_json_field(I1B " -f json", "\"trainable_parameters\": "), 629697920LL);
    /* the small config: tower cls 32, 32 x 3 x 64 + 32 = 6,176, 17 x 32 = 544, 2 x (3 x 1,024 (no attention_bias) +
     * 1,056 + fc1 2,112 + fc2 2,080 + 2 x 64 + 2 x 32) = 17,024: 23,776; projector 2 x 128 + 128 x 64 + 64 + 64 x 64 +
     * 64 = 12,672; text (qwen2: q/k/v biases) embed_tokens and lm_head 2 x 8,192, 2 x (4,160 + 2 x 2,080 + 4,096 + 3 x
     * 8,192 + 128) = 74,240, norm 64: 90,688. Total 127,136. */
    assert_int_equal(count_of(SMALL), 127136);
    /* InternVL3.5's qwen3 text (no q/k/v biases, q_norm / k_norm 16 each): 2 x (4,096 + 2 x 2,048 + 4,096 + 32 + 24,576 +
     * 128) = 74,048 + 16,384 + 64 = 90,496; the tower with attention_bias (+ 2 x 96), use_qk_norm (+ 2 x 64), rms_norm
     * (the norms' biases - 2 x 64), use_mask_token (+ 32), use_mean_pooling false (the final nn.LayerNorm + 64): 24,064.
     * Total 127,232 */
    assert_int_equal(count_of("{\"model_type\": \"internvl\", " SMALL_TEXT("qwen3") ", " SMALL_VISION ", \"attention_bias\": "
                              "true, \"use_qk_norm\": true, \"norm_type\": \"rms_norm\", \"use_mask_token\": true, "
                              "\"use_mean_pooling\": false}}"),
                     127232);
    /* downsample_ratio 0.25: the projector 32 x 4^2 = 512 wide: 1,024 + 512 x 64 + 64 + 4,160 = 38,016 (+ 25,344) */
    assert_int_equal(count_of("{\"model_type\": \"internvl\", \"downsample_ratio\": 0.25, " SMALL_TEXT("qwen2") ", " SMALL_VISION
                              "}}"),
                     127136 + 25344);
    /* no absolute position embeddings: - 17 x 32 */
    assert_int_equal(count_of("{\"model_type\": \"internvl\", " SMALL_TEXT("qwen2") ", " SMALL_VISION
                              ", \"use_absolute_position_embeddings\": false}}"),
                     127136 - 544);
    /* the frozen modules, one VisionWeights layer each (hf_internvl.c), named as modeling_internvl.py's: 10 a layer
     * (lambda_1 / 2, q / k / v_proj, projection_layer, fc1, fc2, the two norms), 12 with use_qk_norm */
    assert_int_equal(emitted(SMALL, "model.vision_tower.encoder.layer.1."), 10);
    assert_int_equal(emitted(SMALL, "\"model.multi_modal_projector.linear_2\""), 1);
    assert_int_equal(emitted(SMALL, "\"model.vision_tower.layernorm\""), 0);
}

/* what a text-only forward runs: Qwen2ForCausalLM's / Qwen3ForCausalLM's layers */
static void test_text_only(void **state)
{
    (void)state;
    /* generate()'s cache: 2 layers x 2 (k, v) x 2 kv heads x 16 x fp32 4 B = 512 B per token, over the prompt's 64 and
     * 15 of the 16 new tokens; the same as the qwen2 config of the text model */
    const int64_t small = fam_kv_cache(SMALL, 64, 16);
    assert_int_equal(small, 2 * 2 * 2 * 16 * 4 * (64 + 15));
    const char *qwen2 = "{\"model_type\": \"qwen2\", \"vocab_size\": 128, \"hidden_size\": 64, \"intermediate_size\": 128, "
                        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16}";
    assert_int_equal(fam_kv_cache(qwen2, 64, 16), small);
    /* training: the text model's step as qwen2's, the tower's and projector's weights (36,448 fp32 parameters) beside */
    char a[] = "/tmp/vc_internvlXXXXXX", b[] = "/tmp/vc_internvlXXXXXX";
    fam_write(a, SMALL);
    fam_write(b, qwen2);
    char sa[128], sb[128];
    snprintf(sa, sizeof sa, "%s --seq 64 -b 2 -o adamw -f json", a);
    snprintf(sb, sizeof sb, "%s --seq 64 -b 2 -o adamw -f json", b);
    const int64_t wa = cli_json_field(sa, "\"weights\": "), wb = cli_json_field(sb, "\"weights\": ");
    assert_true(wa - wb >= 36448 * 4);
    assert_int_equal(cli_json_field(sa, "\"optimizer_states\": "), cli_json_field(sb, "\"optimizer_states\": "));
    assert_int_equal(cli_json_field(sa, "\"trainable_parameters\": "), cli_json_field(sb, "\"parameters\": "));
    unlink(a);
    unlink(b);
}

/* "seq N" in the model's name: --seq's text and the images' tokens (hf.c) */
static bool seq_is(const char *args, const char *want)
{
    return strstr(cli_output(args), want) != NULL;
}

/* --image: the tiles and the tokens, by hand from image_processing_got_ocr2.py @ 0b97ca8d (get_optimal_tiled_canvas
 * over the 1..12-tile grids sorted by tiles; a tie favours more tiles while the image's area is more than half theirs;
 * crop_image_to_patches adds the thumbnail to more than one) with SMALL's image_size 32, and processing_internvl.py @
 * 024fd4ce (<img>, image_seq_length x tiles image tokens, </img>); a tile gives (32 / 8 x 0.5)^2 = 4 features */
static void test_images(void **state)
{
    (void)state;
    char p[] = "/tmp/vc_internvlXXXXXX", a[256];
    fam_write(p, "{\"model_type\": \"internvl\", \"image_seq_length\": 4, " SMALL_TEXT("qwen2") ", " SMALL_VISION "}}");
    /* 32x32: the 1 x 1 grid (a square's ties, 2 x 2 and 3 x 3, cover more than twice its 1,024 pixels): 1 tile, 4 + 2 */
    snprintf(a, sizeof a, "%s --seq 32 --image 32x32 -f json", p);
    assert_true(seq_is(a, "seq 38)"));
    /* 64x32: the 2 x 1 grid (aspect 2; 4 x 2 ties but 2,048 is not more than half its 8 tiles' 8,192), 2 tiles and the
     * thumbnail: 3 x 4 + 2 = 14 */
    snprintf(a, sizeof a, "%s --seq 32 --image 64x32 -f json", p);
    assert_true(seq_is(a, "seq 46)"));
    /* 1000x1000: the 3 x 3 grid (1,000,000 pixels are more than half of 9 x 1,024), 9 tiles and the thumbnail: 42 */
    snprintf(a, sizeof a, "%s --seq 32 --image 1000x1000 -f json", p);
    assert_true(seq_is(a, "seq 74)"));
    /* two 96x32 images: 3 x 1 grids and the thumbnails, 2 x (4 x 4 + 2) = 36 */
    snprintf(a, sizeof a, "%s --seq 32 --image 96x32 --images 2 -f json", p);
    assert_true(seq_is(a, "seq 68)"));
    /* the tower run on the tiles: their activations beside the text's (the same step without the image, its 14 tokens
     * given as text, has less) */
    snprintf(a, sizeof a, "%s --seq 32 --image 64x32 -m infer -f json", p);
    const int64_t with = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --seq 46 -m infer -f json", p);
    assert_true(with > cli_json_field(a, "\"peak_allocated\": "));
    /* the tower's layers as modeling_internvl.py names them, run once per repeat of the Sequential */
    snprintf(a, sizeof a, "%s --seq 32 --image 64x32 --emit-model", p);
    assert_non_null(strstr(cli_output(a), "\"model.multi_modal_projector.linear_2\""));
    /* generate: the tower in the prefill */
    snprintf(a, sizeof a, "%s --prompt 16 --image 64x32 -m generate --new-tokens 4 -f json", p);
    (void)cli_output(a);
    /* refusals naming the option or the key */
    snprintf(a, sizeof a, "%s --images 2", p);
    assert_usage(a, "--images: needs --image WxH");
    snprintf(a, sizeof a, "%s --image 1000x1000 --images 13", p);
    assert_usage(a, "--images: 13 image(s) of 10 tiles: more than 127 tiles per sample");
    unlink(p);
    static const fam_refusal c[] = {
        {SMALL_TEXT("qwen2") ", " SMALL_VISION "}", "image_seq_length: 256: a tile gives (4 / 2)^2 = 4 image features"},
        {"\"image_seq_length\": 4, " SMALL_TEXT("qwen2") ", " SMALL_VISION ", \"hidden_dropout_prob\": 0.1}",
         "vision_config.hidden_dropout_prob: with --image: only 0 is modelled"},
        {"\"image_seq_length\": 4, " SMALL_TEXT("qwen2") ", " SMALL_VISION ", \"hidden_act\": \"swish\"}",
         "vision_config.hidden_act"},
        {"\"image_seq_length\": 4, " SMALL_TEXT("qwen2") ", \"vision_config\": {\"hidden_size\": 32, \"image_size\": 40, "
         "\"patch_size\": 8, \"num_attention_heads\": 4}",
         "downsample_ratio: 0.5: the tower's 5 x 5 patches"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char q[] = "/tmp/vc_internvlXXXXXX", body[1024];
        snprintf(body, sizeof body, "{\"model_type\": \"internvl\", %s}", c[i].in);
        fam_write(q, body);
        snprintf(a, sizeof a, "%s --image 32x32", q);
        assert_usage(a, c[i].want);
        unlink(q);
    }
    /* InternVL3-1B-hf: 448x448 is one tile of 256 tokens, 896x448 three (a 2 x 1 grid and the thumbnail), 1000x1000
     * ten (3 x 3: 1,000,000 pixels are more than half of 9 x 448^2 = 903,168 x 2) */
    assert_true(seq_is(I1B " --seq 32 --image 448x448 -f json", "seq 290)"));
    assert_true(seq_is(I1B " --seq 32 --image 896x448 -f json", "seq 802)"));
    assert_true(seq_is(I1B " --seq 32 --image 1000x1000 -f json", "seq 2594)"));
}

/* bench/accuracy/llm/measured.json's internvl_small / internvl35_small cases (run_suite.py's last block;
 * internvl_replica.py, torch 1.13 CPU, the allocator counter; --attention math, --workspace 0), those not held out:
 * internvl_small fp32 -0.05%, bf16 -0.09%, LoRA r=8 on o_proj,down_proj -0.08%, SGD at batch 4 -0.06%; internvl35_small
 * fp32 -0.05% (the qwen rows' common 3,072 B or less) */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"internvl_small.json --seq 64 -b 2 -o adamw -p fp32", 5594624},
        {"internvl_small.json --seq 64 -b 2 -o adamw -p bf16", 3576320},
        {"internvl_small.json --seq 64 -b 2 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets o_proj,down_proj", 2632192},
        {"internvl_small.json --seq 48 -b 4 -o sgd -p fp32", 5507072},
        {"internvl35_small.json --seq 64 -b 2 -o adamw -p fp32", 6763008},
    };
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 1.0);
    /* with an image (run_suite.py's block after those; internvl_replica.build_image: GotOcr2ImageProcessor's tiles of
     * 64x32 (3), 32x32 (1) or two 96x32 (8), the tower and projector frozen, masked_scatter), not held out: train fp32
     * 0.00%, bf16 at batch 2 -0.12%, LoRA r=8 bf16 -0.13%, internvl35_small SGD fp32 -0.16%, 32x32 fp32 0.00%, two 96x32
     * -0.10%; -m infer fp32 -0.31%, internvl35_small bf16 at batch 2 -0.40%, 32x32 -0.14%. What is not modelled
     * (hf_internvl.c's header: special_image_mask, the boolean-index check's temporary, image_hidden_states kept to
     * the forward's end) is the few KB under. */
    static const cli_measured im[] = {
        {"internvl_small.json --seq 32 -b 1 -o adamw -p fp32 --image 64x32 --images 1", 3984384},
        {"internvl_small.json --seq 32 -b 2 -o adamw -p bf16 --image 64x32 --images 1", 2884608},
        {"internvl_small.json --seq 48 -b 1 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets o_proj,down_proj --image 64x32 --images 1", 1595904},
        {"internvl_small.json -m infer --seq 32 -b 1 -p fp32 --image 64x32 --images 1", 1144832},
        {"internvl35_small.json -m infer --seq 16 -b 2 -p bf16 --image 64x32 --images 1", 896512},
        {"internvl35_small.json --seq 32 -b 1 -o sgd -p fp32 --image 64x32 --images 1", 2571776},
        {"internvl_small.json --seq 32 -b 1 -o adamw -p fp32 --image 32x32 --images 1", 3959808},
        {"internvl_small.json -m infer --seq 32 -b 1 -p fp32 --image 32x32 --images 1", 1074176},
        {"internvl_small.json --seq 32 -b 1 -o adamw -p fp32 --image 96x32 --images 2", 4236800},
    };
    assert_measured(im, sizeof im / sizeof *im, " --attention math --workspace 0 -f json", 1.0);
}

static void test_refusals(void **state)
{
    (void)state;
    static const fam_refusal c[] = {
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"num_attention_heads\": 5}",
         "vision_config.num_attention_heads: hidden_size (1024) must be divisible by num_attention_heads (5)"},
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"image_size\": 8}", "vision_config.patch_size: 14: larger than image_size"},
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"image_size\": [448, 224]}",
         "vision_config.image_size: [448, 224]: a non-square image_size is not modelled"},
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"patch_size\": [14]}",
         "vision_config.patch_size: expected an integer or a [height, width] pair"},
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"patch_size\": [1.5, 1.5]}",
         "vision_config.patch_size: [1.5, 1.5]: expected integers"},
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"hidden_size\": 0}", "vision_config.hidden_size: expected an integer of at least 1"},
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"use_qk_norm\": \"yes\"}", "vision_config.use_qk_norm: expected true or false"},
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"norm_type\": \"batch_norm\"}",
         "vision_config.norm_type: \"batch_norm\": expected \"layer_norm\" or \"rms_norm\""},
        {SMALL_TEXT("qwen2") ", \"vision_config\": {\"num_hidden_layers\": 2000}", "vision_config.num_hidden_layers: 2000 layers"},
        {SMALL_TEXT("qwen2") ", \"vision_config\": 3", "vision_config: expected an object"},
        {SMALL_TEXT("qwen2") ", \"downsample_ratio\": 0.3", "downsample_ratio: 0.29999999999999999: pixel_shuffle's"},
        {SMALL_TEXT("qwen2") ", \"downsample_ratio\": 0", "downsample_ratio: expected a number in (0, 1]"},
        {SMALL_TEXT("qwen2") ", \"projector_hidden_act\": \"relu\"", "projector_hidden_act: \"relu\": expected \"gelu\""},
        {SMALL_TEXT("qwen2") ", \"vision_feature_select_strategy\": \"full\"",
         "vision_feature_select_strategy: \"full\": get_image_features keeps the CLS row"},
        {SMALL_TEXT("qwen2") ", \"vision_feature_layer\": -2", "vision_feature_layer: only -1"},
        {SMALL_TEXT("qwen2") ", \"image_seq_length\": 0", "image_seq_length: 0: expected 1 to"},
        {SMALL_TEXT("qwen2") ", \"tie_word_embeddings\": true", "tie_word_embeddings: true, but text_config's is false"},
        {SMALL_TEXT("qwen2") ", \"tie_word_embeddings\": 1", "tie_word_embeddings: expected true or false"},
        {SMALL_TEXT("llama"), "text_config.model_type: \"llama\": internvl is modelled with a Qwen2"},
        {"\"text_config\": 1", "text_config: expected an object"},
        {"\"vision_config\": {}", "text_config: expected an object"},
    };
    fam_refuse_edits("{\"model_type\": \"internvl\", ", c, sizeof c / sizeof *c);
    static const fam_refusal o[] = {
        {"--serve --gpu h100-80gb", "--serve: internvl under vLLM"},
        {"--tp 2 --gpus 2", "--tp: internvl on tensor-parallel ranks is not modelled"},
        {"--lora 8", "--lora needs --lora-targets"},
        /* MODEL_TYPE_TO_APPLY_LIGER_FN["internvl"] (monkey_patch.py through the code search, no pinned commit) */
        {"--liger", "--liger: internvl: apply_liger_kernel_to_internvl's patch set is not modelled"},
        {"--image 448x448 --serve --gpu h100-80gb", "--image with --serve"},
    };
    fam_refuse_options(I1B, o, sizeof o / sizeof *o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_text_only),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
