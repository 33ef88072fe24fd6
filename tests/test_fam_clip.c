/*
 * test_fam_clip.c — CLIP (model_type "clip", issue 31, towers; src/hf/hf_clip.c, hf.c's clip row and
 * vc__hf_clip_vision, hf_layers.c build_clip_vision / build_siglip, layers/vision.c SiglipLogits' clip variant,
 * src/engine/loss.c's clip row): CLIPModel as modeling_clip.py @ 000f1ffdbf1ce6190cc8863af9a2fff817590937 runs it.
 * 1. CLIPModel's exact parameter count (sum(p.numel() for p in model.parameters()), buffers excluded) by hand from the
 *    __init__s of that file and CLIPConfig / CLIPTextConfig / CLIPVisionConfig (configuration_clip.py @
 *    01841b341b64ab547cd2e30f09cb9c74929f50f2); bench/accuracy/llm/clip_replica.py counts the same.
 * 2. The measured cases of bench/accuracy/llm/measured.json (clip_replica.py), each exact.
 * 3. Refusals: each bad key named (text_config.* / vision_config.*), the options that make no sense named.
 *
 * Per CLIPEncoderLayer of width H and MLP width I: q/k/v/out_proj 4 (H^2 + H), layer_norm1/2 4H, fc1 HI + I, fc2
 * IH + H: 4H^2 + 2HI + 9H + I.
 */
#define _GNU_SOURCE
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

#include "cli_run.h"
#include "fam_hf.h"

#define HF VC_TEST_DATA "/hf/"

/* clip_count of the config file at path */
static int64_t clip_file_count(const char *path)
{
    static char buf[16384];
    cli_slurp(path, buf, sizeof buf);
    return count_of(buf);
}

/* A tiny config by hand: text V 10, H 4, I 8, 1 layer, 2 heads, 5 positions; vision H 6, I 12, 2 layers, 3 heads,
 * 1 channel, image 4 of patch 2 (4 patches + the class position); projection_dim 3.
 *   text: token_embedding 40, position_embedding 20, one layer 4x16 + 2x4x8 + 9x4 + 8 = 172, final_layer_norm 8,
 *     text_projection 4x3 = 12: 252;
 *   vision: class_embedding 6, patch_embedding 1x6x2x2 = 24 (no bias), position_embedding 5x6 = 30, pre_layrnorm and
 *     post_layernorm 24, two layers 2 x (4x36 + 2x6x12 + 9x6 + 12) = 2 x 354 = 708, visual_projection 6x3 = 18: 810;
 *   logit_scale 1: 1063. */
#define TINY                                                                                                          \
    "{\"model_type\": \"clip\", \"projection_dim\": 3, \"text_config\": {\"vocab_size\": 10, \"hidden_size\": 4, "    \
    "\"intermediate_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"max_position_embeddings\": 5}, " \
    "\"vision_config\": {\"hidden_size\": 6, \"intermediate_size\": 12, \"num_hidden_layers\": 2, "                   \
    "\"num_attention_heads\": 3, \"num_channels\": 1, \"image_size\": 4, \"patch_size\": 2"

static void test_counts(void **state)
{
    (void)state;
    assert_int_equal(count_of(TINY "}}"), 1063);
    /* image_size 5 of patch 2: (5 // 2)^2 = 4 patches still (floor), the same count */
    assert_int_equal(count_of(TINY ", \"image_size\": 5}}"), 1063);
    /* CLIPConfig(): both sub-configs absent or null take their classes' defaults, openai/clip-vit-base-patch32's
     * shape (test_checkpoints) */
    assert_int_equal(count_of("{\"model_type\": \"clip\"}"), INT64_C(151277313));
    assert_int_equal(count_of("{\"model_type\": \"clip\", \"text_config\": null, \"vision_config\": null}"),
                     INT64_C(151277313));
}

/* The checkpoints. tests/data/hf/clip-vit-base-patch32.json and clip-vit-large-patch14.json are NOT the Hub's files
 * (no network here): base-patch32's keys as a public copy of the Hub's config.json quotes them (whaler404/Hf-Learn
 * clip.md: projection_dim 512, text 512 / 2048 / 8 heads / 12 layers / 77 positions / 49408, vision 768 / 3072 /
 * 12 heads / 12 layers / patch 32 / 224), large-patch14's from the published shapes (ViT-L/14: text 768 / 3072 / 12
 * heads / 12 layers, vision 1024 / 4096 / 16 heads / 24 layers / patch 14 / 224, projection_dim 768), the keys
 * unverified against the Hub's file. The published totals: 151,277,313 and 427,616,513 (the checkpoints' parameter
 * counts the issue quotes).
 *   base-patch32: text 49408x512 + 77x512 + 12 x 3,152,384 + 1,024 = 63,165,952, text_projection 512x512 = 262,144;
 *     vision 768 + 3x768x32x32 + 50x768 + 1,536 + 12 x 7,087,872 + 1,536 = 87,456,000, visual_projection 768x512 =
 *     393,216; logit_scale 1: 151,277,313.
 *   large-patch14: text 49408x768 + 77x768 + 12 x 7,087,872 + 1,536 = 123,060,480, text_projection 768x768 = 589,824;
 *     vision 1,024 + 3x1024x14x14 + 257x1024 + 2,048 + 24 x 12,596,224 + 2,048 = 303,179,776, visual_projection
 *     1024x768 = 786,432; logit_scale 1: 427,616,513. */
static void test_checkpoints(void **state)
{
    (void)state;
    assert_int_equal(clip_file_count(HF "clip-vit-base-patch32.json"), INT64_C(151277313));
    assert_int_equal(clip_file_count(HF "clip-vit-large-patch14.json"), INT64_C(427616513));
}

/* The layers the clip row writes: the two inputs, the vision tower's class token and pre_layrnorm, the causal text
 * attention (and the vision tower's not), the bias-free projections, SiglipLogits' clip variant (no logit_bias: the
 * count above has 1 scalar) and the "clip" loss */
static void test_layers(void **state)
{
    (void)state;
    static const char js[] = "{\"model_type\": \"clip\"}";
    assert_true(emitted(js, "\"pixel_values\""));
    assert_true(emitted(js, "\"input_ids\""));
    assert_true(emitted(js, "vision_model.embeddings.class_embedding"));
    assert_true(emitted(js, "vision_model.pre_layrnorm"));
    assert_int_equal(emitted(js, "\"causal\":\ttrue"), 1);  /* the text tower's layers (one repeated Sequential) */
    assert_int_equal(emitted(js, "\"causal\":\tfalse"), 1); /* the vision tower's */
    assert_int_equal(emitted(js, "\"clip\":\ttrue"), 1);    /* SiglipLogits */
    assert_int_equal(emitted(js, "\"loss\":\t\"clip\""), 1);
    assert_int_equal(emitted(js, "\"variant\":\t\"quick\""), 2); /* quick_gelu in both towers */
    /* --seq at max_position_embeddings and --image at image_size: the default's estimate */
    char a[600];
    snprintf(a, sizeof a, "%s -f json", HF "clip-vit-base-patch32.json");
    const long long d = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --seq 77 --image 224x224 -f json", HF "clip-vit-base-patch32.json");
    assert_int_equal(cli_json_field(a, "\"peak_allocated\": "), d);
    /* the parameters in the CLI's estimate: the count */
    snprintf(a, sizeof a, "%s -m infer -f json", HF "clip-vit-large-patch14.json");
    assert_int_equal(cli_json_field(a, "\"parameters\": "), INT64_C(427616513));
}

/* bench/accuracy/llm/measured.json's clip cases (run_suite.py's clip_small rows; clip_replica.py CLIPModel, torch 1.13
 * CPU, the allocator counter; --attention math, --workspace 0), each exact. Before visual_projection was written after
 * the text tower (CLIPModel.forward's order, which autograd's sequence numbers keep in backward) the bf16 sgd case was
 * 2,560 B low (-0.18%: visual_projection's weight gradient and its input's gradient made, its saved input freed,
 * before the text tower's backward) and the two inference cases 512 B high */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets q_proj,v_proj"
#define CK " --grad-ckpt --grad-ckpt-kind non-reentrant"
    static const cli_measured c[] = {
        {"clip_small.json --seq 16 -b 4 -o adamw -p fp32", 4205568},
        {"clip_small.json --seq 16 -b 4 -o sgd -p bf16", 1441792},
        {"clip_small.json --seq 16 -b 4 -o adamw -p fp32" CK, 4205568},
        {"clip_small.json -m infer --seq 16 -b 4 -p fp32", 1158144},
        {"clip_small.json --seq 16 -b 2 -o adamw -p bf16" LQV, 950784},
        {"clip_small.json -m infer --seq 16 -b 3 -p bf16", 607232},
        {"clip_small.json --seq 10 -b 3 -o sgd -p fp32", 2033664},
        {"clip_small.json --seq 16 -b 4 -o sgd -p bf16" CK, 1129984},
        {"clip_small.json -m infer --seq 10 -b 2 -p fp32", 962048},
    };
#undef CK
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 0.0);
}

/* The options that make no sense for CLIPModel: one line naming the option */
static void test_options(void **state)
{
    (void)state;
    static const char f[] = HF "clip-vit-base-patch32.json";
    static const fam_refusal o[] = {
        {"-m generate", "--mode: generate: clip is an encoder (CLIPModel)"},
        {"--serve --gpu h100-80gb", "--serve: generate needs a causal language model"},
        {"--loss liger", "--loss: clip: CLIPModel computes its own contrastive (clip_loss) loss"},
        {"--loss mean", "--loss: clip: CLIPModel computes its own contrastive (clip_loss) loss"},
        {"--seq 78", "--seq: 78 tokens: clip has 77 learned positions (max_position_embeddings)"},
        {"--image 256x256", "--image: 256x256: clip runs vision_config's image_size (224 x 224"},
        {"--images 2", "--images: 2: CLIPModel pairs one image with each text"},
        {"--tp 2 --gpus 2", "--tp: clip: tensor parallelism is not modelled"},
        {"--grad-ckpt --grad-ckpt-every 2", "--grad-ckpt-every: clip: CLIPEncoder checkpoints every"},
        {"-p amp-bf16", "--precision: amp: CLIPModel's norm, div and logits under torch.autocast"},
        {"--lora 8", "--lora needs --lora-targets"},
        {"--lora 8 --lora-targets q_proj --grad-ckpt", "--grad-ckpt: with --lora: PEFT's enable_input_require_grads"},
    };
    fam_refuse_options(f, o, sizeof o / sizeof *o);
}

/* Each bad or inconsistent key the count depends on, named */
static void test_bad_keys(void **state)
{
    (void)state;
    /* vision_config's keys: the body of TINY's text_config beside a vision_config of these keys (the rest its
     * class's defaults) */
    static const fam_refusal vis[] = {
        {"\"hidden_size\": 6, \"num_attention_heads\": 4", "vision_config.num_attention_heads"}, /* 4 into 6 */
        {"\"image_size\": 4, \"patch_size\": 8", "vision_config.patch_size"}, /* no patches */
        {"\"hidden_size\": 0", "vision_config.hidden_size"},
        {"\"num_channels\": 1.5", "vision_config.num_channels"},
        {"\"image_size\": null", "vision_config.image_size"},
        {"\"num_hidden_layers\": \"2\"", "vision_config.num_hidden_layers"},
        {"\"intermediate_size\": 1099511627777", "vision_config.intermediate_size"},
    };
    /* CLIPConfig's own keys and text_config's, beside vision_config {} */
    static const fam_refusal top[] = {
        {"\"projection_dim\": 0", "projection_dim"},
        {"\"text_config\": {\"num_attention_heads\": 3}", "text_config.num_attention_heads"}, /* 3 into 512 */
        {"\"text_config\": {\"vocab_size\": -1}", "text_config.vocab_size"},
        {"\"text_config\": {\"max_position_embeddings\": 0}", "text_config.max_position_embeddings"},
        {"\"text_config\": [1]", "text_config"},
        {"\"vision_config\": 3", "vision_config"},
        {"\"text_config_dict\": {\"hidden_size\": 8}", "text_config_dict"},
        {"\"vision_config_dict\": {}", "vision_config_dict"},
        {"\"text_config\": {\"vocab_size\": 1099511627776, \"hidden_size\": 1099511627776, "
         "\"num_attention_heads\": 1}", "text_config.hidden_size"}, /* the parameters pass 2^62 */
        /* the keys the towers' rows read after the count */
        {"\"text_config\": {\"hidden_act\": \"swish_x\"}", "text_config.hidden_act"},
        {"\"vision_config\": {\"hidden_act\": \"gelu_x\"}", "vision_config.hidden_act"},
        {"\"text_config\": {\"attention_dropout\": 2}", "text_config.attention_dropout"},
        {"\"vision_config\": {\"layer_norm_eps\": \"x\"}", "vision_config.layer_norm_eps"},
    };
    char js[1024];
    for (size_t i = 0; i < sizeof vis / sizeof vis[0]; i++) {
        snprintf(js, sizeof js, "{\"model_type\": \"clip\", \"text_config\": {\"hidden_size\": 4, "
                 "\"num_attention_heads\": 2}, \"vision_config\": {%s}}", vis[i].in);
        fam_refused(js, vis[i].want);
    }
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        snprintf(js, sizeof js, "{\"model_type\": \"clip\", %s}", top[i].in);
        fam_refused(js, top[i].want);
    }
    /* the CLI: exit 2, the line naming the key */
    static const fam_refusal cli[] = {
        {"\"vision_config\": {\"patch_size\": 448}", "vision_config.patch_size"},
        {"\"text_config\": {\"hidden_size\": 100}", "text_config.num_attention_heads"},
    };
    fam_refuse_edits("{\"model_type\": \"clip\", ", cli, sizeof cli / sizeof cli[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_checkpoints),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_bad_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
