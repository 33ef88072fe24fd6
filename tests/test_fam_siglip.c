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
 * 4. model_type "siglip" (SiglipModel, both towers and the sigmoid loss): the same three below.
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

/* the parameters of the config.json at path */
static void file_count(const char *path, int64_t want)
{
    vc_model *m = fam_load_file(path, 0);
    assert_int_equal(vc_model_parameters(m), want);
    vc_model_free(m);
}

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
    file_count(HF "siglip-base-patch16-224-vision.json", INT64_C(92884224));
    file_count(HF "siglip-so400m-patch14-384-vision.json", INT64_C(428225600));
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

/* model_type "siglip" (SiglipModel, configuration_siglip.py @ d5ab4d58 / modeling_siglip.py @ efa7189c; hf.c's row,
 * hf_layers.c build_siglip, layers/vision.c SiglipLogits, src/engine/loss.c's siglip row).
 * tests/data/hf/siglip-base-patch16-224.json is SiglipConfig's defaults written out (SiglipTextConfig's and
 * SiglipVisionConfig's __init__, which the conversion script's "base" sizes repeat); not read from the Hub.
 * google/siglip-base-patch16-224, by hand from the __init__s:
 *   vision_model: 92,884,224 (test_counts above);
 *   text_model: token_embedding 32000 x 768 = 24,576,000; position_embedding 64 x 768 = 49,152; 12 SiglipEncoderLayers
 *     of 7,087,872 (above) = 85,054,464; final_layer_norm 1,536; head nn.Linear(768, 768) 590,592: 110,271,744;
 *   logit_scale 1, logit_bias 1.
 *   Total 203,155,970 (siglip_replica.py's SiglipModel counts the same).
 * tests/data/hf/siglip-so400m-patch14-384.json: the vision tower's sizes as siglip-so400m-patch14-384-vision.json; the
 * text tower's from the published SigLIP So400m/14 shape (the text tower the vision tower's: 1152 wide, 4304, 27 layers,
 * 16 heads, as e.g. kvmm's SigLIPSo400mP14 preset lists it; one width is forced anyway by SiglipModel.forward's
 * matmul with the text head nn.Linear(H, H)), max_position_embeddings and vocab_size SiglipTextConfig's defaults
 * (64, 32000): written from those, not read from the Hub. By hand: text 36,864,000 + 73,728 + 27 x 15,239,504 =
 * 411,466,608 + 2,304 + head 1,328,256 = 449,734,896; vision 428,225,600 (above); + 2: 877,960,498 (keras-hub's
 * siglip_so400m_patch14_384 preset lists 877,961,291, its base preset 203,156,230: both a few hundred above, the
 * "878M" usually quoted). */
static void test_model_counts(void **state)
{
    (void)state;
    file_count(HF "siglip-base-patch16-224.json", INT64_C(203155970));
    file_count(HF "siglip-so400m-patch14-384.json", INT64_C(877960498));
    /* SiglipConfig(text_config=None, vision_config=None): both classes' defaults */
    assert_int_equal(count_of("{\"model_type\": \"siglip\"}"), INT64_C(203155970));
    assert_int_equal(count_of("{\"model_type\": \"siglip\", \"text_config\": null, \"vision_config\": null}"),
                     INT64_C(203155970));
    /* the two inputs, the text positions a lookup of the buffer, the logits and the loss */
    static const char js[] = "{\"model_type\": \"siglip\"}";
    assert_true(emitted(js, "\"pixel_values\""));
    assert_true(emitted(js, "\"input_ids\""));
    assert_true(emitted(js, "\"SiglipLogits\""));
    assert_int_equal(emitted(js, "\"siglip\""), 1); /* the model's "loss" (the name says "siglip SiglipModel") */
    /* SigLIP's text model has no causal mask: both towers' layers (two repeated Sequentials) say "causal" false (the
     * emitted JSON puts a tab after the colon: a needle with a space would never match) */
    assert_int_equal(emitted(js, "\"causal\":\ttrue"), 0);
    assert_int_equal(emitted(js, "\"causal\":\tfalse"), 2);
    /* --seq under max_position_embeddings: the table keeps its 64 rows (table_rows), the lookup 16 */
    static const char f[] = HF "siglip-base-patch16-224.json";
    char a[600];
    snprintf(a, sizeof a, "%s --seq 16 -f json", f);
    assert_int_equal(cli_json_field(a, "\"parameters\": "), INT64_C(203155970));
}

/* bench/accuracy/llm/measured.json's siglip cases (run_suite.py's siglip_small rows; siglip_replica.py SiglipModel,
 * torch 1.13 CPU, the allocator counter; --attention math, --workspace 0), held within 1% */
static void test_model_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets q_proj,v_proj"
#define CK " --grad-ckpt --grad-ckpt-kind non-reentrant"
    static const cli_measured c[] = {
        {"siglip_small.json --seq 16 -b 4 -o adamw -p fp32", 6146048},
        {"siglip_small.json --seq 16 -b 4 -o sgd -p bf16", 1563136},
        {"siglip_small.json --seq 16 -b 4 -o adamw -p fp32" CK, 6146048},
        {"siglip_small.json -m infer --seq 16 -b 4 -p fp32", 1483776},
        {"siglip_small.json --seq 16 -b 2 -o adamw -p bf16" LQV, 1121280},
        {"siglip_small.json -m infer --seq 16 -b 3 -p bf16", 802304},
        {"siglip_small.json --seq 10 -b 3 -o sgd -p fp32", 2599424},
        {"siglip_small.json --seq 16 -b 4 -o sgd -p bf16" CK, 1458688},
        {"siglip_small.json -m infer --seq 8 -b 2 -p fp32", 1343488},
    };
#undef CK
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 1.0);
}

static void test_model_refusals(void **state)
{
    (void)state;
    static const fam_refusal t[] = { /* text_config's keys (the edit closes text_config) */
        {"\"num_attention_heads\": 5}", "text_config.num_attention_heads: hidden_size (96) must be divisible by"},
        {"\"vocab_size\": 0}", "text_config.vocab_size"},
        {"\"max_position_embeddings\": 0}", "text_config.max_position_embeddings"},
        {"\"hidden_act\": \"swish_x\"}", "text_config.hidden_act"},
        {"\"attention_dropout\": 2}", "text_config.attention_dropout"},
        {"\"layer_norm_eps\": \"x\"}", "text_config.layer_norm_eps"},
        {"\"intermediate_size\": 0}", "text_config.intermediate_size"},
    };
    fam_refuse_edits("{\"model_type\": \"siglip\", \"vision_config\": {\"hidden_size\": 96, \"num_attention_heads\": 4, "
                     "\"image_size\": 32, \"patch_size\": 8}, \"text_config\": {\"hidden_size\": 96, ",
                     t, sizeof t / sizeof *t);
    static const fam_refusal v[] = { /* vision_config's keys */
        {"\"num_attention_heads\": 5}", "vision_config.num_attention_heads: hidden_size (768: absent, the default of SiglipVisionConfig) must be"},
        {"\"image_size\": 4, \"patch_size\": 8}", "vision_config.patch_size: 8: larger than image_size (4)"},
        {"\"hidden_size\": 1536}", "vision_config.hidden_size: text_config's 768 and vision_config's 1536 differ"},
        {"\"vision_use_head\": false}", "vision_config.vision_use_head: false: SiglipModel.forward's image_embeds"},
        {"\"vision_use_head\": 1}", "vision_config.vision_use_head: expected true or false"},
        {"\"num_channels\": 0}", "vision_config.num_channels"},
        {"\"attention_dropout\": -1}", "vision_config.attention_dropout"},
    };
    fam_refuse_edits("{\"model_type\": \"siglip\", \"text_config\": {\"num_hidden_layers\": 1}, "
                     "\"vision_config\": {\"num_hidden_layers\": 1, ", v, sizeof v / sizeof *v);
    static const fam_refusal w[] = {
        {"\"text_config\": []", "text_config: expected an object"},
        {"\"vision_config\": 3", "vision_config: expected an object: SiglipConfig builds SiglipVisionConfig"},
        {"\"text_config\": {\"hidden_size\": 1536}", "text_config.hidden_size: text_config's 1536 and vision_config's 768"},
    };
    fam_refuse_edits("{\"model_type\": \"siglip\", ", w, sizeof w / sizeof *w);
    static const char f[] = HF "siglip-base-patch16-224.json";
    static const fam_refusal o[] = {
        {"-m generate", "--mode: generate: siglip is an encoder (SiglipModel)"},
        {"--serve --gpu h100-80gb", "--serve: generate needs a causal language model"},
        {"--loss liger", "--loss: siglip: SiglipModel computes its own sigmoid loss"},
        {"--loss mean", "--loss: siglip: SiglipModel computes its own sigmoid loss"},
        {"--seq 65", "--seq: 65 tokens: siglip has 64 learned positions (max_position_embeddings)"},
        {"--image 256x256", "--image: 256x256: siglip runs vision_config's image_size (224 x 224"},
        {"--images 2", "--images: 2: SiglipModel pairs one image with each text"},
        {"--tp 2 --gpus 2", "--tp: siglip: tensor parallelism is not modelled"},
        {"--grad-ckpt --grad-ckpt-every 2", "--grad-ckpt-every: siglip: SiglipEncoder checkpoints every"},
        {"-p amp-bf16", "--precision: amp: SiglipModel's norm, div and logits under torch.autocast"},
        {"--lora 8", "--lora needs --lora-targets"},
        {"--lora 8 --lora-targets q_proj --grad-ckpt", "--grad-ckpt: with --lora: PEFT's enable_input_require_grads"},
    };
    fam_refuse_options(f, o, sizeof o / sizeof *o);
    /* honoured: --image at vision_config's size and --seq at max_position_embeddings give the default's estimate */
    char a[600];
    snprintf(a, sizeof a, "%s -f json", f);
    const long long d = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --image 224x224 --seq 64 -f json", f);
    assert_int_equal(cli_json_field(a, "\"peak_allocated\": "), d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_model_counts),
        cmocka_unit_test(test_model_measured),
        cmocka_unit_test(test_model_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
