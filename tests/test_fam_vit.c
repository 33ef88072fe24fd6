/*
 * test_fam_vit.c — model_type "vit" (issue 31 item 4; src/hf/hf.c's row, hf_read.c read_vit, hf_layers.c
 * build_vit / vit_layer), ViTForImageClassification as models/vit/modeling_vit.py runs it at
 * huggingface/transformers @ 005db8208dee358fe8fe63ae3cc49dd054aad48d (ViTConfig's defaults: configuration_vit.py
 * @ 04ae75715f2cca2d87bbaf07c1d8e9fb2ab20bfd).
 *
 * 1. The checkpoints' parameters. tests/data/hf/vit-base-patch16-224.json and vit-large-patch16-224.json are
 *    written from the model cards (google/vit-base-patch16-224, google/vit-large-patch16-224: ImageNet-1k
 *    classifiers, 1000 labels) and ViTConfig's defaults, not transcribed from the Hub's config.json (no network
 *    here): their id2label names are LABEL_0..LABEL_999, not the ImageNet classes (only their number is read).
 *    Counts by hand from the module shapes, equal to `sum(p.numel())` of bench/accuracy/llm/
 *    vision_encoder_replica.py on the meta device (its counts() prints ViTModel with and without the pooler).
 * 2. The layers written: the Conv2d patch embedding, the CLS token and position parameters, pre-LN ViTLayers on
 *    sdpa (not causal, no rotary), no pooler.
 * 3. The measured cases of bench/accuracy/llm/measured.json (vision_encoder_replica.py, torch 1.13 CPU, the
 *    allocator counter; --attention math, --workspace 0), held within 1%.
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

static vc_model *load(const char *path)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(path, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    return m;
}

/* ViT-B/16 at 224 (H 768, I 3072, 12 layers, 196 patches), by hand from modeling_vit.py @ 005db820's __init__s:
 *   patch_embeddings.projection Conv2d(3, 768, 16, 16): 3 x 16 x 16 x 768 + 768 = 590,592; cls_token 768;
 *   position_embeddings (196 + 1) x 768 = 151,296;
 *   per ViTLayer: query/key/value/output.dense 4 x (768 x 768 + 768) = 2,362,368, intermediate.dense
 *     768 x 3072 + 3072 = 2,362,368, output.dense 3072 x 768 + 768 = 2,360,064, layernorm_before/after 2 x 1,536:
 *     7,087,872; x 12 = 85,054,464;
 *   ViTModel.layernorm 1,536: ViTModel(add_pooling_layer=False) 85,798,656; with ViTPooler (dense 768 x 768 + 768)
 *   86,389,248 (the model card's 86M);
 *   ViTForImageClassification: + classifier 768 x 1000 + 1000 = 86,567,656.
 * ViT-L/16 at 224 (H 1024, I 4096, 24 layers, 16 heads): projection 3 x 256 x 1024 + 1024 = 787,456, cls 1,024,
 *   positions 197 x 1024 = 201,728, per layer 4 x (1024^2 + 1024) + (1024 x 4096 + 4096) + (4096 x 1024 + 1024)
 *   + 4 x 1024 = 12,596,224, x 24 = 302,309,376, layernorm 2,048: 303,301,632 without the pooler, 304,351,232
 *   with it (the published 304M); + classifier 1024 x 1000 + 1000 = 304,326,632. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = load(HF "vit-base-patch16-224.json");
    assert_int_equal(vc_model_parameters(m), INT64_C(86567656));
    assert_int_equal(vc_model_parameters(m) - (768 * 1000 + 1000), INT64_C(85798656));
    assert_int_equal(vc_model_parameters(m) - (768 * 1000 + 1000) + 768 * 768 + 768, INT64_C(86389248));
    assert_int_equal(vc_model_trainable_parameters(m), vc_model_parameters(m));
    vc_model_free(m);
    m = load(HF "vit-large-patch16-224.json");
    assert_int_equal(vc_model_parameters(m), INT64_C(304326632));
    assert_int_equal(vc_model_parameters(m) - (1024 * 1000 + 1000) + 1024 * 1024 + 1024, INT64_C(304351232));
    vc_model_free(m);
    /* vit_small (bench/accuracy/llm/configs): H 128, I 512, 4 layers, 64 x 64 images of 8 x 8 patches, 10 labels:
     * 3 x 64 x 128 + 128 + 128 + 65 x 128 + 4 x (4 x (128 x 128 + 128) + 128 x 512 + 512 + 512 x 128 + 128 + 512)
     * + 256 + 128 x 10 + 10 = 827,786 (vision_encoder_replica.py prints the same); vit_nodrop_small without
     * qkv_bias: H 96, I 384, 3 layers, 96 x 96 of 16 x 16, 5 labels: 3 x 256 x 96 + 96 + 96 + 37 x 96
     * + 3 x (3 x 96 x 96 + 96 x 96 + 96 + 96 x 384 + 384 + 384 x 96 + 96 + 384) + 192 + 96 x 5 + 5 = 412,805 */
    static const char js_small[] = "{\"model_type\": \"vit\", \"hidden_size\": 128, \"num_hidden_layers\": 4, "
                                   "\"num_attention_heads\": 4, \"intermediate_size\": 512, \"image_size\": 64, "
                                   "\"patch_size\": 8, \"id2label\": {\"0\": \"a\", \"1\": \"b\", \"2\": \"c\", "
                                   "\"3\": \"d\", \"4\": \"e\", \"5\": \"f\", \"6\": \"g\", \"7\": \"h\", \"8\": \"i\", "
                                   "\"9\": \"j\"}}";
    assert_int_equal(count_of(js_small), INT64_C(827786));
    static const char js_nobias[] = "{\"model_type\": \"vit\", \"hidden_size\": 96, \"num_hidden_layers\": 3, "
                                    "\"num_attention_heads\": 3, \"intermediate_size\": 384, \"image_size\": 96, "
                                    "\"qkv_bias\": false, \"id2label\": {\"0\": \"a\", \"1\": \"b\", \"2\": \"c\", "
                                    "\"3\": \"d\", \"4\": \"e\"}}";
    assert_int_equal(count_of(js_nobias), INT64_C(412805));
    /* ViTConfig's defaults alone (ViT-B/16 at 224) and PretrainedConfig's num_labels 2 */
    assert_int_equal(count_of("{\"model_type\": \"vit\"}"), INT64_C(85798656) + 768 * 2 + 2);
}

/* the layers: one Conv2d (the patch embedding), two Parameters (CLS token and positions), the 12 layers one
 * Sequential, sdpa without rotary and not causal, no pooler; the input pixel_values [3, 224, 224] float32 */
static void test_layers(void **state)
{
    (void)state;
    static const char js[] = "{\"model_type\": \"vit\"}";
    assert_int_equal(emitted(js, "\"Conv2d\""), 1);
    assert_int_equal(emitted(js, "\"Parameter\""), 2);
    assert_int_equal(emitted(js, "\"repeat\":\t12"), 1);
    assert_int_equal(emitted(js, "\"causal\":\tfalse"), 1);
    assert_int_equal(emitted(js, "\"rotary_dim\":\t0"), 1);
    assert_int_equal(emitted(js, "pooler"), 0);
    assert_int_equal(emitted(js, "\"shape\":\t[3, 224, 224]"), 1);
    assert_int_equal(emitted(js, "\"dtype\":\t\"float32\""), 1);
    assert_int_equal(emitted(js, "\"held_until\":\t\"vit.layernorm\""), 1); /* ViTModel.forward's pixel_values */
}

/* measured.json's vit cases (vision_encoder_replica.py; run_suite.py's `vt` rows, every third held out): held
 * within 1% here (compare.py's bound is 5%) */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets query,value"
#define CK " --grad-ckpt --grad-ckpt-kind non-reentrant"
    static const cli_measured c[] = {
        {"vit_small.json --seq 65 -b 2 -o adamw -p fp32", 16656896},
        {"vit_small.json --seq 65 -b 4 -o sgd -p bf16", 10286592},
        {"vit_small.json --seq 65 -b 2 -o adamw -p fp32" CK, 16656896},
        {"vit_small.json --seq 65 -b 2 -o adamw -p bf16" LQV, 5848576},
        {"vit_small.json -m infer --seq 65 -b 4 -p fp32", 5110272},
        {"vit_small.json -m infer --seq 65 -b 2 -p bf16", 2615296},
        {"vit_nodrop_small.json --seq 37 -b 3 -o adam -p fp32", 8606208},
        {"vit_nodrop_small.json --seq 37 -b 2 -o adamw -p bf16" CK, 4391936},
        {"vit_nodrop_small.json --seq 37 -b 4 -o adamw -p fp32" LQV, 4551168},
        {"vit_nodrop_small.json -m infer --seq 37 -b 8 -p fp32", 3903488},
        {"vit_small.json --seq 65 -b 1 -o adamw -p fp32" CK LQV, 4502016},
        {"vit_nodrop_small.json -m infer --seq 37 -b 2 -p bf16", 1485824},
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
        {"\"image_size\": 8, \"patch_size\": 16", "patch_size: 16: larger than image_size (8)"},
        {"\"image_size\": 0", "image_size"},
        {"\"image_size\": [224, 224]", "image_size: expected an integer"},
        {"\"image_size\": 67108864", "image_size: 67108864 / patch_size 16: the position embeddings"},
        {"\"patch_size\": 0", "patch_size"},
        {"\"patch_size\": \"16\"", "patch_size"},
        {"\"num_channels\": 0", "num_channels"},
        {"\"num_channels\": 1099511627776", "num_channels"},
        {"\"num_attention_heads\": 5", "num_attention_heads"},
        {"\"qkv_bias\": 1", "qkv_bias"},
        {"\"hidden_act\": \"swish_x\"", "hidden_act"},
        {"\"hidden_dropout_prob\": 2", "hidden_dropout_prob"},
        {"\"attention_probs_dropout_prob\": -1", "attention_probs_dropout_prob"},
        {"\"layer_norm_eps\": \"x\"", "layer_norm_eps"},
        {"\"id2label\": {}", "id2label"},
        {"\"intermediate_size\": 0", "intermediate_size"},
    };
    fam_refuse_edits("{\"model_type\": \"vit\", \"hidden_size\": 64, \"intermediate_size\": 96, "
                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, ", c, sizeof c / sizeof *c);
    static const char f[] = HF "vit-base-patch16-224.json";
    char a[600];
    static const fam_refusal o[] = {
        {"-m generate", "--mode: generate: vit is an encoder (ViTForImageClassification)"},
        {"--serve --gpu h100-80gb", "generate needs a causal language model"},
        {"--image 384x384", "--image: 384x384: vit runs the config's image_size (224 x 224"},
        {"--images 2", "--images: 2: vit takes one image per sample"},
        {"--seq 100", "--seq: 100: vit's sequence is the image's 196 patches and the CLS token"},
        {"--tp 2 --gpus 2", "--tp: vit: tensor parallelism is not modelled"},
        {"--lora 8", "--lora needs --lora-targets"},
    };
    fam_refuse_options(f, o, sizeof o / sizeof *o);
    /* what is honoured: --image at the config's size and --seq at its patches + 1 give the default's estimate */
    snprintf(a, sizeof a, "%s -f json", f);
    const long long d = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --image 224x224 --seq 197 -f json", f);
    assert_int_equal(cli_json_field(a, "\"peak_allocated\": "), d);
}

/* the model file's input "cast": false (src/model/load.c), which the vit row writes: the input stays float32 under
 * bf16 (its 3 x 8 x 8 x 4 = 768 B a sample, not 384), and bad values are refused naming input.cast */
static void test_input_cast(void **state)
{
    (void)state;
    static const char *const bad[] = {"\"cast\": 0, \"dtype\": \"float32\"", "\"cast\": false, \"dtype\": \"int64\""};
    char js[300];
    for (size_t i = 0; i < 2; i++) {
        snprintf(js, sizeof js, "{\"input\": {\"shape\": [3, 8, 8], %s}, \"layers\": [{\"type\": \"Flatten\"}]}", bad[i]);
        vc_model *m = NULL;
        vc_error err;
        assert_int_equal(vc_model_load_string(js, strlen(js), "m.json", &m, &err), VC_ERR_MODEL);
        assert_non_null(strstr(err.path, "input.cast"));
    }
    char path[] = "/tmp/vc_vitcXXXXXX", a[300];
    fam_write(path, "{\"input\": {\"shape\": [3, 8, 8], \"dtype\": \"float32\", \"cast\": false}, "
                    "\"layers\": [{\"type\": \"Flatten\"}, {\"type\": \"Linear\", \"in_features\": 192, "
                    "\"out_features\": 2}]}");
    snprintf(a, sizeof a, "%s -m infer -p bf16 -b 4 -f json", path);
    const long long f32 = cli_json_field(a, "\"peak_allocated\": ");
    remove(path);
    char path2[] = "/tmp/vc_vitcXXXXXX";
    fam_write(path2, "{\"input\": [3, 8, 8], \"layers\": [{\"type\": \"Flatten\"}, {\"type\": \"Linear\", "
                     "\"in_features\": 192, \"out_features\": 2}]}");
    snprintf(a, sizeof a, "%s -m infer -p bf16 -b 4 -f json", path2);
    const long long act = cli_json_field(a, "\"peak_allocated\": ");
    remove(path2);
    /* the float32 batch (4 x 768 = 3,072 B) against its bf16 (4 x 384 = 1,536 B), each a 512-byte multiple; the
     * Linear's weight converted alike (the Flatten a view, the model has no Cast layer) */
    assert_int_equal(f32 - act, 3072 - 1536);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_input_cast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
