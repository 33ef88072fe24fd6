/*
 * test_fam_dinov2.c — model_type "dinov2" (issue 31, towers and encoders; src/hf/hf.c's row, hf_read.c read_vit /
 * read_dinov2, hf_layers.c build_vit / dinov2_layer), Dinov2ForImageClassification as
 * models/dinov2/modeling_dinov2.py runs it at huggingface/transformers @ 015e68769f9823df27f5f7372dc155277e6ff7e6
 * (Dinov2Config's defaults as read in pypi-data/pypi-mirror-396's copy of configuration_dinov2.py; the stored
 * huggingface/transformers version, 02d3b01c, predates use_swiglu_ffn and use_mask_token).
 *
 * 1. The checkpoints' parameters. tests/data/hf/dinov2-small.json, dinov2-base.json and dinov2-giant.json are the
 *    Hub's config.json of facebook/dinov2-small / -base / -giant as the docs search returned them (architectures
 *    Dinov2Model, image_size 518, patch_size 14; giant use_swiglu_ffn true); dinov2-large.json is written in the same
 *    form from the model card (ViT-L/14: 1024 wide, 24 layers, 16 heads), not read from the Hub. None has id2label:
 *    PretrainedConfig's num_labels 2 builds Dinov2ForImageClassification's head, and Dinov2Model (the checkpoints'
 *    class) is the count less that head. Counts by hand from modeling_dinov2.py's __init__s, equal to
 *    `sum(p.numel())` of bench/accuracy/llm/dinov2_replica.py on the meta device; the published sizes are ViT-S/14
 *    21M, B/14 86M, L/14 300M, g/14 1.1B (the paper's, without the 518-pixel position embeddings and mask token).
 * 2. The layers written: the Conv2d patch embedding, the CLS / mask / position parameters, two LayerScale
 *    parameters a layer, the SwiGLU FFN of use_swiglu_ffn, the [CLS, mean of patches] classifier input.
 * 3. The measured cases of bench/accuracy/llm/measured.json (dinov2_replica.py, torch 1.13 CPU, the allocator
 *    counter; --attention math, --workspace 0), held within 1%.
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

static int64_t file_count(const char *path)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(path, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    const int64_t n = vc_model_parameters(m);
    assert_int_equal(vc_model_trainable_parameters(m), n);
    vc_model_free(m);
    return n;
}

/* By hand from modeling_dinov2.py @ 015e6876's __init__s, 518 x 518 images of 14 x 14 patches (37^2 = 1369):
 * DINOv2-S/14 (H 384, fc1 4 x 384 = 1536, 12 layers):
 *   projection Conv2d(3, 384, 14, 14): 3 x 196 x 384 + 384 = 226,176; cls_token 384; mask_token 384;
 *   position_embeddings 1370 x 384 = 526,080;
 *   per Dinov2Layer: query/key/value/output.dense 4 x (384^2 + 384) = 591,360, fc1 384 x 1536 + 1536 = 591,360,
 *     fc2 1536 x 384 + 384 = 590,208, norm1/norm2 1,536, layer_scale1/2 lambda1 768: 1,775,232; x 12 = 21,302,784;
 *   layernorm 768: Dinov2Model 22,056,576; + classifier Linear(2 x 384, 2) 1,538 = 22,058,114.
 * DINOv2-B/14 (H 768, 12 layers): projection 3 x 196 x 768 + 768 = 452,352, cls 768, mask 768, positions
 *   1370 x 768 = 1,052,160, per layer 4 x (768^2 + 768) + (768 x 3072 + 3072) + (3072 x 768 + 768) + 3,072 + 1,536
 *   = 7,089,408, x 12 = 85,072,896, layernorm 1,536: Dinov2Model 86,580,480; + Linear(1536, 2) 3,074.
 * DINOv2-L/14 (H 1024, 24 layers): 588 x 1024 + 1024 = 603,136, 2,048 (cls, mask), 1370 x 1024 = 1,402,880, per layer
 *   4 x (1024^2 + 1024) + (1024 x 4096 + 4096) + (4096 x 1024 + 1024) + 4,096 + 2,048 = 12,598,272, x 24 =
 *   302,358,528, layernorm 2,048: Dinov2Model 304,368,640; + Linear(2048, 2) 4,098.
 * DINOv2-g/14 (H 1536, 40 layers, Dinov2SwiGLUFFN: int(6144 x 2 / 3) = 4096, (4096 + 7) // 8 x 8 = 4096):
 *   588 x 1536 + 1536 = 904,704, 3,072, 1370 x 1536 = 2,104,320, per layer 4 x (1536^2 + 1536) + weights_in
 *   (1536 x 8192 + 8192) + weights_out (4096 x 1536 + 1536) + 6,144 + 3,072 = 28,361,728, x 40 = 1,134,469,120,
 *   layernorm 3,072: Dinov2Model 1,136,480,768; + Linear(3072, 2) 6,146. */
static void test_counts(void **state)
{
    (void)state;
    assert_int_equal(file_count(HF "dinov2-small.json"), INT64_C(22056576) + 768 * 2 + 2);
    assert_int_equal(file_count(HF "dinov2-base.json"), INT64_C(86580480) + 1536 * 2 + 2);
    assert_int_equal(file_count(HF "dinov2-large.json"), INT64_C(304368640) + 2048 * 2 + 2);
    assert_int_equal(file_count(HF "dinov2-giant.json"), INT64_C(1136480768) + 3072 * 2 + 2);
    /* dinov2_small (bench/accuracy/llm/configs): H 128, fc1 512, 4 layers, 112 x 112 of 14 x 14 (64 patches), 10
     * labels: 3 x 196 x 128 + 128 + 128 + 128 + 65 x 128 + 4 x (4 x (128^2 + 128) + 128 x 512 + 512 + 512 x 128
     * + 128 + 512 + 256) + 256 + 256 x 10 + 10 = 880,906 (dinov2_replica.py and the harness's params the same);
     * dinov2_swiglu_small: H 96, 3 layers, no qkv_bias, no mask_token, SwiGLU hidden (int(384 x 2 / 3) + 7) // 8 x 8
     * = 256, 64 x 64 of 8 x 8, 5 labels: 3 x 64 x 96 + 96 + 96 + 65 x 96 + 3 x (3 x 96^2 + 96^2 + 96 + 96 x 512
     * + 512 + 256 x 96 + 96 + 384 + 192) + 192 + 192 x 5 + 5 = 361,637 */
    static const char js_swiglu[] = "{\"model_type\": \"dinov2\", \"hidden_size\": 96, \"num_hidden_layers\": 3, "
                                    "\"num_attention_heads\": 3, \"image_size\": 64, \"patch_size\": 8, "
                                    "\"qkv_bias\": false, \"use_swiglu_ffn\": true, \"use_mask_token\": false, "
                                    "\"id2label\": {\"0\": \"a\", \"1\": \"b\", \"2\": \"c\", \"3\": \"d\", \"4\": \"e\"}}";
    assert_int_equal(count_of(js_swiglu), INT64_C(361637));
    /* Dinov2Config's defaults alone: 224 x 224 of 14 x 14 (256 patches), ViT-B/14's widths: 452,352 + 768 + 768
     * + 257 x 768 + 85,072,896 + 1,536 + Linear(1536, 2) */
    assert_int_equal(count_of("{\"model_type\": \"dinov2\"}"),
                     INT64_C(452352) + 768 + 768 + 257 * 768 + INT64_C(85072896) + 1536 + 1536 * 2 + 2);
    /* mlp_ratio 2.5 on H 64: int(160.0) = 160 wide; without the mask token 64 fewer */
    static const char js_r[] = "{\"model_type\": \"dinov2\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
                               "\"num_attention_heads\": 4, \"mlp_ratio\": 2.5, \"image_size\": 28}";
    assert_int_equal(count_of(js_r), INT64_C(3) * 196 * 64 + 64 + 64 + 64 + 5 * 64 + 4 * (64 * 64 + 64) + 64 * 160 +
                                         160 + 160 * 64 + 64 + 4 * 64 + 2 * 64 + 2 * 64 + 128 * 2 + 2);
}

/* the layers: one Conv2d, the CLS / mask / position Parameters and 2 lambda1 a layer (one Sequential's), the fused
 * SwiGLU of use_swiglu_ffn, the Mean over the patch tokens; the input pixel_values [3, 224, 224] float32, its cast
 * freed after the projection */
static void test_layers(void **state)
{
    (void)state;
    static const char js[] = "{\"model_type\": \"dinov2\"}";
    assert_int_equal(emitted(js, "\"Conv2d\""), 1);
    assert_int_equal(emitted(js, "\"Parameter\""), 3 + 2);
    assert_int_equal(emitted(js, "\"Mul\""), 2);
    assert_int_equal(emitted(js, "\"repeat\":\t12"), 1);
    assert_int_equal(emitted(js, "\"causal\":\tfalse"), 1);
    assert_int_equal(emitted(js, "\"Mean\""), 1);
    assert_int_equal(emitted(js, "\"GatedActivation\""), 0);
    assert_int_equal(emitted(js, "\"shape\":\t[3, 224, 224]"), 1);
    assert_int_equal(emitted(js, "\"held_until\":\t\"dinov2.embeddings.patch_embeddings.projection\""), 1);
    assert_int_equal(emitted(js, "\"held_until\":\t\"classifier\""), 1); /* sequence_output */
    assert_int_equal(emitted("{\"model_type\": \"dinov2\", \"use_mask_token\": false}", "\"Parameter\""), 2 + 2);
    assert_int_equal(emitted("{\"model_type\": \"dinov2\", \"use_swiglu_ffn\": true}", "\"GatedActivation\""), 1);
    /* drop_path_rate > 0: Dinov2DropPath on both branches of a layer (StochasticDepth "row" with scale_input) */
    assert_int_equal(emitted(js, "\"StochasticDepth\""), 0);
    assert_int_equal(emitted("{\"model_type\": \"dinov2\", \"drop_path_rate\": 0.1}", "\"StochasticDepth\""), 2);
    assert_int_equal(emitted("{\"model_type\": \"dinov2\", \"drop_path_rate\": 0.1}", "\"scale_input\":\ttrue"), 2);
    /* the config's square image: the position embeddings themselves, no bicubic_from */
    assert_int_equal(emitted(js, "\"bicubic_from\""), 0);
}

/* measured.json's dinov2 cases (dinov2_replica.py; run_suite.py's `dn` rows, every third held out): held within
 * 1% here (compare.py's bound is 5%) */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets query,value"
#define CK " --grad-ckpt --grad-ckpt-kind non-reentrant"
    static const cli_measured c[] = {
        {"dinov2_small.json --seq 65 -b 2 -o adamw -p fp32", 17920000},
        {"dinov2_small.json --seq 65 -b 4 -o sgd -p bf16", 11372544},
        {"dinov2_small.json --seq 65 -b 2 -o adamw -p fp32" CK, 17920000},
        {"dinov2_small.json --seq 65 -b 2 -o adamw -p bf16" LQV, 6060032},
        {"dinov2_small.json -m infer --seq 65 -b 4 -p fp32", 5989888},
        {"dinov2_small.json -m infer --seq 65 -b 2 -p bf16", 2877440},
        {"dinov2_swiglu_small.json --seq 65 -b 3 -o adam -p fp32", 10130432},
        {"dinov2_swiglu_small.json --seq 65 -b 2 -o adamw -p bf16" CK, 3764736},
        {"dinov2_swiglu_small.json --seq 65 -b 4 -o adamw -p fp32" LQV, 7329280},
        {"dinov2_swiglu_small.json -m infer --seq 65 -b 8 -p fp32", 5172224},
        {"dinov2_small.json --seq 65 -b 1 -o adamw -p fp32" CK LQV, 4815872},
        {"dinov2_swiglu_small.json -m infer --seq 65 -b 2 -p bf16", 1435136},
        /* run_suite.py's `dn2` rows: dinov2_dp_small (drop_path_rate 0.2) and dinov2_small at other images
         * (interpolate_pos_encoding); measured.json's values */
        {"dinov2_dp_small.json --seq 65 -b 8 -o sgd -p fp32", 30754816},
        {"dinov2_dp_small.json --seq 65 -b 4 -o adamw -p bf16", 14925312},
        {"dinov2_dp_small.json --seq 65 -b 8 -o sgd -p fp32" CK, 14872064},
        {"dinov2_dp_small.json --seq 65 -b 4 -o sgd -p fp32" LQV, 13116928},
        {"dinov2_dp_small.json -m infer --seq 65 -b 8 -p fp32", 8455680},
        {"dinov2_dp_small.json --seq 65 -b 16 -o sgd -p fp32", 57691136},
        {"dinov2_small.json --image 140x140 --images 1 --seq 101 -b 8 -o sgd -p fp32", 49866752},
        {"dinov2_small.json --image 168x112 --images 1 --seq 97 -b 4 -o sgd -p bf16", 17816576},
        {"dinov2_small.json --image 112x84 --images 1 --seq 49 -b 8 -o adamw -p fp32", 30259712},
        {"dinov2_small.json -m infer --image 196x196 --images 1 --seq 197 -b 4 -p fp32", 13786624},
        {"dinov2_small.json --image 140x140 --images 1 --seq 101 -b 4 -o sgd -p fp32" CK, 13462528},
        {"dinov2_small.json --image 126x154 --images 1 --seq 100 -b 4 -o sgd -p fp32" LQV, 20245504},
    };
#undef CK
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 1.0);
}

/* the refusals: exit 2, one stderr line naming the key (or option) */
static void test_refusals(void **state)
{
    (void)state;
    static const fam_refusal c[] = {
        {"\"mlp_ratio\": 0", "mlp_ratio: 0: int(hidden_size (64) * mlp_ratio) is 0"},
        {"\"mlp_ratio\": \"4\"", "mlp_ratio"},
        {"\"mlp_ratio\": 1e14", "mlp_ratio"},
        {"\"use_swiglu_ffn\": 1", "use_swiglu_ffn: expected true or false"},
        {"\"use_mask_token\": \"yes\"", "use_mask_token: expected true or false"},
        {"\"drop_path_rate\": 1", "drop_path_rate: 1: Dinov2DropPath divides by 1 - drop_path_rate, 0"},
        {"\"drop_path_rate\": -1", "drop_path_rate"},
        {"\"image_size\": 8, \"patch_size\": 14", "patch_size: 14: larger than image_size (8)"},
        {"\"image_size\": [224, 224]", "image_size: expected an integer"},
        {"\"patch_size\": 0", "patch_size"},
        {"\"num_channels\": 0", "num_channels"},
        {"\"num_attention_heads\": 5", "num_attention_heads"},
        {"\"qkv_bias\": 1", "qkv_bias"},
        {"\"hidden_act\": \"swish_x\"", "hidden_act"},
        {"\"hidden_dropout_prob\": 2", "hidden_dropout_prob"},
        {"\"attention_probs_dropout_prob\": -1", "attention_probs_dropout_prob"},
        {"\"layer_norm_eps\": \"x\"", "layer_norm_eps"},
        {"\"id2label\": {}", "id2label"},
    };
    fam_refuse_edits("{\"model_type\": \"dinov2\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                     "\"num_attention_heads\": 4, ", c, sizeof c / sizeof *c);
    static const char f[] = HF "dinov2-small.json";
    char a[600];
    static const fam_refusal o[] = {
        {"-m generate", "--mode: generate: dinov2 is an encoder (Dinov2ForImageClassification)"},
        {"--serve --gpu h100-80gb", "generate needs a causal language model"},
        {"--image 13x224", "--image: 13x224: smaller than dinov2's patch_size (14), no patch"},
        {"--image 224x224 --seq 1370", "--seq: 1370: dinov2's sequence is the image's 256 patches and the CLS token"},
        {"--images 2", "--images: 2: dinov2 takes one image per sample"},
        {"--seq 257", "--seq: 257: dinov2's sequence is the image's 1369 patches and the CLS token"},
        {"--tp 2 --gpus 2", "--tp: dinov2: tensor parallelism is not modelled"},
        {"-p amp-bf16", "--precision: dinov2: under autocast LayerScale's float32 lambda1 promotes"},
        {"-p amp-fp16", "--precision: dinov2: under autocast"},
        {"--lora 8", "--lora needs --lora-targets"},
    };
    fam_refuse_options(f, o, sizeof o / sizeof *o);
    /* what is honoured: --image at the config's size and --seq at its patches + 1 give the default's estimate */
    snprintf(a, sizeof a, "%s -f json", f);
    const long long d = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --image 518x518 --seq 1370 -f json", f);
    assert_int_equal(cli_json_field(a, "\"peak_allocated\": "), d);
    /* another size: the (224 // 14)^2 = 256 patches + CLS, --seq at that count honoured */
    snprintf(a, sizeof a, "%s --image 224x224 -f json", f);
    const long long d224 = cli_json_field(a, "\"peak_allocated\": ");
    assert_true(d224 < d);
    snprintf(a, sizeof a, "%s --image 224x224 --seq 257 -f json", f);
    assert_int_equal(cli_json_field(a, "\"peak_allocated\": "), d224);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
