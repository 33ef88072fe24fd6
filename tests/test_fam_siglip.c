/*
 * test_fam_siglip.c — model_type "siglip_vision_model" (issue 31, towers; src/hf/hf.c's row, hf_read.c read_vit,
 * hf_layers.c build_siglip_vision / siglip_layer): SiglipVisionModel as models/siglip/modeling_siglip.py runs it at
 * huggingface/transformers @ efa7189c (the classes hf_vision.c's Gemma 3 tower reads; the shapes checked against
 * @ 1c51a62f's __init__s: SiglipVisionEmbeddings, SiglipAttention, SiglipMLP, SiglipEncoderLayer,
 * SiglipMultiheadAttentionPoolingHead).
 *
 * 1. The parameters, by hand from those __init__s. tests/data/hf/siglip-base-patch16-224-vision.json is
 *    SiglipVisionConfig's defaults (configuration_siglip.py @ d5ab4d58), google/siglip-base-patch16-224's vision
 *    tower; siglip-so400m-patch14-384-vision.json is written from the so400m model card's sizes (1152 wide, 4304,
 *    27 layers, 16 heads, 384 x 384 of 14 x 14): neither read from the Hub.
 * 2. The measured cases of bench/accuracy/llm/measured.json (siglip_replica.py), held within 1%.
 * 3. Refusals: exit 2 and one line naming the key or option.
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

/* google/siglip-base-patch16-224's SiglipVisionModel (H 768, 3072, 12 layers, 224 / 16 = 14, 196 patches):
 *   patch_embedding Conv2d(3, 768, 16, 16) 3 x 256 x 768 + 768 = 590,592; position_embedding 196 x 768 = 150,528;
 *   per SiglipEncoderLayer: q/k/v/out_proj 4 x (768^2 + 768) = 2,362,368, fc1 768 x 3072 + 3072 = 2,362,368,
 *     fc2 3072 x 768 + 768 = 2,360,064, layer_norm1/2 3,072: 7,087,872; x 12 = 85,054,464; post_layernorm 1,536;
 *   head: probe 768, MultiheadAttention in_proj 3 x 768^2 + 3 x 768 = 1,771,776, out_proj 590,592, layernorm 1,536,
 *     mlp 4,722,432: 7,087,104.
 *   Total 92,884,224; without the head (vision_use_head false) 85,797,120.
 * so400m-patch14-384 (H 1152, 4304, 27 layers, 27^2 = 729 patches): 588 x 1152 + 1152 = 678,528; 729 x 1152 =
 *   839,808; per layer 4 x (1152^2 + 1152) + (1152 x 4304 + 4304) + (4304 x 1152 + 1152) + 4,608 = 15,239,504, x 27 =
 *   411,466,608; post_layernorm 2,304; head 1,152 + 3,984,768 + 1,328,256 + 2,304 + 9,921,872 = 15,238,352:
 *   428,225,600 (the count usually quoted for the so400m vision tower, 428M). */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "siglip-base-patch16-224-vision.json", 0);
    assert_int_equal(vc_model_parameters(m), INT64_C(92884224));
    vc_model_free(m);
    m = fam_load_file(HF "siglip-so400m-patch14-384-vision.json", 0);
    assert_int_equal(vc_model_parameters(m), INT64_C(428225600));
    vc_model_free(m);
    assert_int_equal(count_of("{\"model_type\": \"siglip_vision_model\"}"), INT64_C(92884224));
    assert_int_equal(count_of("{\"model_type\": \"siglip_vision_model\", \"vision_use_head\": false}"),
                     INT64_C(92884224) - INT64_C(7087104));
    /* the layers: no CLS token, the position table a lookup, the head's probe repeated, nn.MultiheadAttention */
    static const char js[] = "{\"model_type\": \"siglip_vision_model\"}";
    assert_true(emitted(js, "\"lookup\""));
    assert_true(emitted(js, "\"repeat\""));
    assert_true(emitted(js, "\"MultiheadAttention\""));
    assert_false(emitted(js, "cls_token"));
}

/* bench/accuracy/llm/measured.json's siglip_vision_model cases (run_suite.py's `sg` rows; siglip_replica.py, torch
 * 1.13 CPU, the allocator counter; --attention math, --workspace 0): the 9 equal the estimate, held within 1% */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets q_proj,v_proj"
#define CK " --grad-ckpt --grad-ckpt-kind non-reentrant"
    static const cli_measured c[] = {
        {"siglip_vision_small.json --seq 64 -b 2 -o adamw -p fp32", 16621056},
        {"siglip_vision_small.json --seq 64 -b 4 -o sgd -p bf16", 8333312},
        {"siglip_vision_small.json --seq 64 -b 2 -o adamw -p fp32" CK, 16621056},
        {"siglip_vision_small.json -m infer --seq 64 -b 4 -p fp32", 5074432},
        {"siglip_vision_small.json --seq 64 -b 2 -o adamw -p bf16" LQV, 4721664},
        {"siglip_vision_small.json -m infer --seq 64 -b 2 -p bf16", 2546688},
        {"siglip_vision_nohead_small.json --seq 36 -b 3 -o adam -p fp32", 5014016},
        {"siglip_vision_nohead_small.json -m infer --seq 36 -b 4 -p fp32", 1760768},
        {"siglip_vision_small.json --seq 64 -b 4 -o sgd -p fp32", 13287424},
    };
#undef CK
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 1.0);
}

static void test_refusals(void **state)
{
    (void)state;
    static const fam_refusal c[] = {
        {"\"vision_use_head\": 1", "vision_use_head: expected true or false"},
        {"\"image_size\": 8, \"patch_size\": 16", "patch_size: 16: larger than image_size (8)"},
        {"\"num_attention_heads\": 5", "num_attention_heads"},
        {"\"hidden_act\": \"swish_x\"", "hidden_act"},
        {"\"attention_dropout\": 2", "attention_dropout"},
        {"\"layer_norm_eps\": \"x\"", "layer_norm_eps"},
    };
    fam_refuse_edits("{\"model_type\": \"siglip_vision_model\", \"hidden_size\": 64, "
                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, ", c, sizeof c / sizeof *c);
    static const char f[] = HF "siglip-base-patch16-224-vision.json";
    char a[600];
    static const fam_refusal o[] = {
        {"-m generate", "--mode: generate: siglip_vision_model is an encoder (SiglipVisionModel)"},
        {"--loss liger", "--loss: liger: SiglipVisionModel returns no loss"},
        {"--image 256x256", "--image: 256x256: siglip_vision_model runs the config's image_size (224 x 224"},
        {"--seq 197", "--seq: 197: siglip_vision_model's sequence is the image's patches"},
        {"--images 2", "--images: 2: siglip_vision_model takes one image per sample"},
        {"--tp 2 --gpus 2", "--tp: siglip_vision_model: tensor parallelism is not modelled"},
        {"--lora 8", "--lora needs --lora-targets"},
    };
    fam_refuse_options(f, o, sizeof o / sizeof *o);
    /* honoured: --image at the config's size and --seq at its 196 patches give the default's estimate */
    snprintf(a, sizeof a, "%s -f json", f);
    const long long d = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --image 224x224 --seq 196 -f json", f);
    assert_int_equal(cli_json_field(a, "\"peak_allocated\": "), d);
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
