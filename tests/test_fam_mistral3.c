/*
 * test_fam_mistral3.c — the mistral3 family row (issue 31; src/hf/hf.c's row, src/hf/hf_pixtral.c):
 * Mistral3ForConditionalGeneration, a MistralConfig language model under text_config, the Pixtral
 * vision tower of vision_config and Mistral3MultiModalProjector, counted and loaded frozen (not run).
 *
 * 1. Mistral-Small-3.2-24B-Instruct-2506's parameters, exactly, by hand from the modules (the derivation
 *    below), against the published count.
 * 2. The defaults: vision_config absent (Mistral3Config's PixtralVisionConfig(...)) and present without keys
 *    (PixtralVisionConfig's own), vision_feature_layer as a list, multimodal_projector_bias.
 * 3. The language model is MistralForCausalLM's: the same activations as the mistral row's model of the same
 *    text_config, the tower's weights on top (frozen, bf16).
 * 4. Every bad or inconsistent value of a key the row reads exits 2 naming the key; Megatron's --tp, --image above
 *    batch 1 or with another vision_feature_layer are refused with one line; --image's tokens by hand (the
 *    processor's); -m infer, -m generate and --serve run.
 * 5. --serve: the tower's weights (and a rank's shards under --tp, as vLLM splits them) and vLLM's encoder
 *    profiling's dummy batch, by hand from vLLM's mistral3.py.
 *
 * tests/data/hf/mistral-small-3.2-24b-instruct-2506.json: the checkpoint's config.json as the FLUX.2 text
 * encoder loader embeds it (a third-party copy of mistralai/Mistral-Small-3.2-24B-Instruct-2506's
 * config.json, transformers_version 4.57.1, found with the code search); Mistral-Small-3.1-24B-Instruct-2503
 * publishes the same shapes (Mistral3Config's defaults, configuration_mistral3.py @ 0db25542, are its
 * text_config and vision_config).
 */
#define _GNU_SOURCE
#include <math.h>
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
#include <cjson/cJSON.h>

#include "cli_run.h"
#include "vramcalc/vramcalc.h"

#define SMALL32 VC_TEST_DATA "/hf/mistral-small-3.2-24b-instruct-2506.json"

/* A small text_config (MistralConfig keys), the language model of the JSON cases below */
#define TEXT "\"text_config\":{\"vocab_size\":1000,\"hidden_size\":256,\"intermediate_size\":512," \
             "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":64," \
             "\"sliding_window\":null}"

static int64_t params_of(const char *js, int64_t *trainable)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err) != VC_OK)
        fail_msg("%s: %s: %s", js, err.path, err.msg);
    const int64_t n = vc_model_parameters(m);
    if (trainable) *trainable = vc_model_trainable_parameters(m);
    vc_model_free(m);
    return n;
}

/* Mistral-Small-3.2-24B-Instruct-2506 (text_config: vocab 131,072, hidden 5,120, 40 layers, 32 heads of 128, 8 kv
 * heads, intermediate 32,768, tie_word_embeddings absent: MistralConfig's False; vision_config: hidden 1,024,
 * intermediate 4,096, 24 layers, 16 heads, patch 14 over 3 channels; spatial_merge_size 2, no projector bias,
 * vision_feature_layer -1), module by module (modeling_mistral.py's MistralForCausalLM, modeling_pixtral.py @ 0233e509,
 * modeling_mistral3.py @ 00dcc6dd):
 *   language model: embed_tokens 131,072 x 5,120 = 671,088,640; a MistralDecoderLayer: q_proj 5,120 x 4,096 =
 *   20,971,520, k_proj and v_proj 5,120 x 1,024 = 5,242,880 each, o_proj 4,096 x 5,120 = 20,971,520, gate_proj and
 *   up_proj 5,120 x 32,768 = 167,772,160 each, down_proj 167,772,160, two RMSNorms 10,240: 555,755,520, x 40 =
 *   22,230,220,800; norm 5,120; lm_head 671,088,640: 23,572,403,200;
 *   vision tower: patch_conv 1,024 x 3 x 14 x 14 = 602,112 (no bias); ln_pre 1,024; a PixtralAttentionLayer:
 *   q/k/v/o 4 x 1,024^2 = 4,194,304, gate/up/down 3 x 4,096 x 1,024 = 12,582,912, two norms 2,048: 16,779,264,
 *   x 24 = 402,702,336: 403,305,472;
 *   projector: norm 1,024; patch_merger.merging_layer 4,096 x 1,024 = 4,194,304; linear_1 1,024 x 5,120 =
 *   5,242,880; linear_2 5,120 x 5,120 = 26,214,400: 35,652,608;
 *   in all 24,011,361,280, of which the language model's 23,572,403,200 trainable (the tower and projector frozen).
 * The model card gives 24B ("Mistral Small 3.1 ... With 24 billion parameters", transformers'
 * docs/source/en/model_doc/mistral3.md): 24,011,361,280 is 24.0B. */
static void test_parameters(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(SMALL32, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(24011361280));
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(23572403200));
    assert_true(fabs((double)vc_model_parameters(m) / 1e9 - 24.0) < 0.05); /* the published 24.0B */
    vc_model_free(m);
}

/* The tower's and projector's defaults, by hand (the small text_config's hidden 256 is the projector's output):
 *  - vision_config absent: Mistral3Config's PixtralVisionConfig(hidden 1,024, intermediate 4,096, 24 layers, 16 heads,
 *    patch 14, image 1,540): the tower 403,305,472 (test_parameters); projector norm 1,024, merging_layer 4,194,304,
 *    linear_1 1,024 x 256 = 262,144, linear_2 256 x 256 = 65,536: 4,523,008;
 *  - vision_config {}: PixtralVisionConfig's own (patch 16): patch_conv 1,024 x 3 x 16 x 16 = 786,432, 184,320 more;
 *  - vision_feature_layer [-1, -2]: linear_1's input 2 x 1,024, another 1,024 x 256 = 262,144;
 *  - multimodal_projector_bias true: linear_1's and linear_2's biases, 256 each.
 * The language model: embed_tokens and lm_head 1,000 x 256 each = 512,000; a layer q 256 x 256, k and v 256 x 128,
 * o 256 x 256 = 196,608, the MLP 3 x 256 x 512 = 393,216, two norms 512: 590,336, x 2 = 1,180,672; norm 256:
 * 1,692,928. */
static void test_defaults(void **state)
{
    (void)state;
    const int64_t lm = 1692928, tower = 403305472, proj = 4523008;
    int64_t tr;
    assert_int_equal(params_of("{\"model_type\":\"mistral3\"," TEXT "}", &tr), lm + tower + proj);
    assert_int_equal(tr, lm);
    assert_int_equal(params_of("{\"model_type\":\"mistral3\"," TEXT ",\"vision_config\":null}", NULL), lm + tower + proj);
    assert_int_equal(params_of("{\"model_type\":\"mistral3\"," TEXT ",\"vision_config\":{}}", NULL),
                     lm + tower + proj + 184320);
    assert_int_equal(params_of("{\"model_type\":\"mistral3\"," TEXT ",\"vision_feature_layer\":[-1,-2]}", NULL),
                     lm + tower + proj + 262144);
    assert_int_equal(params_of("{\"model_type\":\"mistral3\"," TEXT ",\"multimodal_projector_bias\":true}", NULL),
                     lm + tower + proj + 512);
    /* text_config {}: MistralConfig()'s defaults (configuration_mistral.py: vocabulary 32,000, hidden 4,096, 32 layers,
     * 32 heads, 8 kv heads, intermediate 14,336, head_dim 128): embeddings 2 x 131,072,000, a layer 4,096^2 x 2 +
     * 4,096 x 1,024 x 2 + 3 x 4,096 x 14,336 + 8,192 = 218,112,000, x 32, norm 4,096: 7,241,732,096; the projector
     * to 4,096: norm 1,024 + merging_layer 4,194,304 + linear_1 1,024 x 4,096 + linear_2 4,096^2 = 25,166,848 */
    assert_int_equal(params_of("{\"model_type\":\"mistral3\",\"text_config\":{}}", NULL),
                     INT64_C(7241732096) + tower + INT64_C(25166848));
    /* num_key_value_heads absent: MistralConfig's 8, not the heads: with 16 heads head_dim is 4,096 / 16 = 256, k_proj
     * and v_proj 4,096 x 8 x 256 (2 x 4,194,304 more a layer than at head_dim 128; 16 kv heads would be twice that) */
    assert_int_equal(params_of("{\"model_type\":\"mistral3\",\"text_config\":{\"num_attention_heads\":16}}", NULL),
                     INT64_C(7241732096) + 32 * 2 * INT64_C(4194304) + tower + INT64_C(25166848));
}

/* The language model is MistralForCausalLM's decoder: under -m infer, -m generate and training the same run as the
 * mistral row's model of the same keys, the frozen tower and projector's weights on top (407,828,480 parameters, in
 * the CLI's default fp32: 1,631,313,920 B; frozen: no gradient, no optimizer state) and PixtralRotaryEmbedding's two
 * float32 buffers [(1540 / 14)^2, 64]: 2 x 12,100 x 64 x 4 B = 6,195,200 B */
static void test_language_model(void **state)
{
    (void)state;
    static const char m3[] = "{\"model_type\":\"mistral3\",\"dtype\":\"bfloat16\"," TEXT "}";
    static const char mi[] = "{\"model_type\":\"mistral\",\"dtype\":\"bfloat16\",\"vocab_size\":1000,\"hidden_size\":256,"
                             "\"intermediate_size\":512,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                             "\"num_key_value_heads\":2,\"head_dim\":64,\"sliding_window\":null}";
    char p3[] = "/tmp/vc_m3_XXXXXX", pm[] = "/tmp/vc_mi_XXXXXX";
    int f3 = mkstemp(p3), fm = mkstemp(pm);
    assert_true(f3 >= 0 && fm >= 0);
    assert_int_equal(write(f3, m3, strlen(m3)), (ssize_t)strlen(m3));
    assert_int_equal(write(fm, mi, strlen(mi)), (ssize_t)strlen(mi));
    close(f3);
    close(fm);
    char a[512];
    static const char *const modes[] = {"-m infer --seq 128", "-m generate --prompt 64 --new-tokens 8", "--seq 128"};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        snprintf(a, sizeof a, "%s %s", p3, modes[i]);
        const long long peak3 = cli_json_field(a, "\"peak_allocated\": ");
        snprintf(a, sizeof a, "%s %s", pm, modes[i]);
        const long long peakm = cli_json_field(a, "\"peak_allocated\": ");
        if (peak3 - peakm != 4LL * (403305472 + 4523008) + 6195200)
            fail_msg("%s: mistral3 %lld, mistral %lld: the tower's weights are %lld B", modes[i], peak3, peakm,
                     4LL * (403305472 + 4523008) + 6195200);
    }
    remove(p3);
    remove(pm);
}

/* Every bad or inconsistent value names its key (VC_ERR_MODEL, the CLI's exit 2) */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct { const char *extra, *path; } bad[] = {
        {"\"vision_config\":[]", "vision_config"},
        {"\"vision_config\":{\"model_type\":\"siglip_vision_model\"}", "vision_config.model_type"},
        {"\"vision_config\":{\"num_attention_heads\":15}", "vision_config.num_attention_heads"},
        {"\"vision_config\":{\"hidden_size\":1020,\"num_attention_heads\":20}", "vision_config.num_attention_heads"},
        {"\"vision_config\":{\"head_dim\":80}", "vision_config.head_dim"},
        {"\"vision_config\":{\"patch_size\":0}", "vision_config.patch_size"},
        {"\"vision_config\":{\"patch_size\":2000}", "vision_config.patch_size"},
        {"\"vision_config\":{\"image_size\":[1540]}", "vision_config.image_size"},
        {"\"vision_config\":{\"hidden_act\":\"quick_gelu\"}", "vision_config.hidden_act"},
        {"\"vision_config\":{\"hidden_act\":1}", "vision_config.hidden_act"},
        {"\"vision_config\":{\"num_hidden_layers\":5000}", "vision_config.num_hidden_layers"},
        {"\"vision_config\":{\"num_hidden_layers\":1.5}", "vision_config.num_hidden_layers"},
        {"\"vision_config\":{\"rope_theta\":-1}", "vision_config.rope_theta"},
        {"\"vision_config\":{\"hidden_size\":1099511627776}", "vision_config.hidden_size"},
        {"\"vision_config\":{\"image_size\":1099511627776,\"patch_size\":1}", "vision_config.image_size"},
        {"\"spatial_merge_size\":0", "spatial_merge_size"},
        {"\"spatial_merge_size\":1000", "spatial_merge_size"},
        {"\"projector_hidden_act\":\"swish\"", "projector_hidden_act"},
        {"\"multimodal_projector_bias\":\"no\"", "multimodal_projector_bias"},
        {"\"image_token_index\":1000", "image_token_index"},
        {"\"image_token_index\":-1", "image_token_index"},
        {"\"vision_feature_layer\":25", "vision_feature_layer"},
        {"\"vision_feature_layer\":-26", "vision_feature_layer"},
        {"\"vision_feature_layer\":[]", "vision_feature_layer"},
        {"\"vision_feature_layer\":\"last\"", "vision_feature_layer"},
        {"\"vision_feature_layer\":[-1,\"x\"]", "vision_feature_layer"},
    };
    char js[1024];
    vc_model *m = NULL;
    vc_error err;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, "{\"model_type\":\"mistral3\"," TEXT ",%s}", bad[i].extra);
        assert_int_equal(vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err), VC_ERR_MODEL);
        if (strcmp(err.path, bad[i].path)) fail_msg("%s: %s: %s (wanted %s)", js, err.path, err.msg, bad[i].path);
    }
    /* text_config.model_type: Mistral3Config builds that class; MistralConfig is read here, Ministral3Config by the
     * ministral3 row of mistral3 (tests/test_fam_ministral3.c), any other refused */
    static const char *const texts[] = {"mistral4", "llama"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        snprintf(js, sizeof js, "{\"model_type\":\"mistral3\",\"text_config\":{\"model_type\":\"%s\",\"vocab_size\":1000,"
                 "\"hidden_size\":256,\"intermediate_size\":512,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                 "\"num_key_value_heads\":2}}", texts[i]);
        assert_int_equal(vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err), VC_ERR_MODEL);
        assert_string_equal(err.path, "text_config.model_type");
    }
    /* the language model's keys are text_config's, named so: 3 heads and no num_key_value_heads, whose
     * MistralConfig default (8) does not divide them (refused at the heads, the key the config has) */
    snprintf(js, sizeof js, "{\"model_type\":\"mistral3\",\"text_config\":{\"vocab_size\":1000,\"hidden_size\":256,"
             "\"intermediate_size\":512,\"num_hidden_layers\":2,\"num_attention_heads\":3}}");
    assert_int_equal(vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err), VC_ERR_MODEL);
    assert_string_equal(err.path, "text_config.num_attention_heads");
    /* with images only the last hidden state (vision_feature_layer -1) is modelled */
    vc_hf_options ho;
    vc_hf_options_init(&ho);
    ho.image_w = ho.image_h = 64;
    snprintf(js, sizeof js, "{\"model_type\":\"mistral3\",\"vision_feature_layer\":-2," TEXT "}");
    assert_int_equal(vc_model_load_string_hf(js, strlen(js), "config.json", &ho, &m, &err), VC_ERR_USAGE);
    snprintf(js, sizeof js, "{\"model_type\":\"mistral3\",\"text_config\":[]}");
    assert_int_equal(vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err), VC_ERR_MODEL);
    assert_string_equal(err.path, "text_config");
}

/* The CLI: what is not modelled is refused with one line; the runs and --serve run.
 * --image WxH (PixtralImageProcessor's resize to longest_edge 1540, each side rounded up to 14 x 2 = 28; the
 * processor's rows x (cols + 1) tokens), by hand: 1024x768: (1024 - 1) // 28 + 1 = 37 cols, (768 - 1) // 28 + 1 = 28
 * rows, 28 x 38 = 1,064 tokens beside --seq 512: 1,576; 3000x2000: ratio 3000 / 1540, floor: 1540 x 1026, 55 cols,
 * 37 rows, 37 x 56 = 2,072: 2,584; 100x50 (no resize): 4 cols, 2 rows, 2 x 5 = 10: 522. The memory is the replica's
 * (bench/accuracy/llm/mistral3_replica.py build_image; CTest llm_train_measured, generate_measured, the infer cases) */
static void test_cli(void **state)
{
    (void)state;
    static const struct { const char *img, *want; } im[] = {
        {"1024x768", "seq 1576)"}, {"3000x2000", "seq 2584)"}, {"100x50", "seq 522)"},
    };
    char a[512];
    for (size_t i = 0; i < sizeof im / sizeof *im; i++) {
        snprintf(a, sizeof a, "%s --image %s --seq 512 -m infer -p bf16", SMALL32, im[i].img);
        const char *out = cli_output(a);
        if (!strstr(out, im[i].want)) fail_msg("%s: wanted %s in:\n%s", a, im[i].want, out);
    }
    (void)cli_output(SMALL32 " --image 1024x768 --seq 256 -p bf16 --lora 16 --lora-targets self_attn.q_proj,self_attn.v_proj");
    (void)cli_output(SMALL32 " --image 1024x768 --images 2 -m generate -p bf16 --prompt 128 --new-tokens 16");
    assert_usage(SMALL32 " --images 2", "--images: needs --image WxH");
    assert_usage(SMALL32 " --image 1024x768 --batch 2", "--image is modelled at --batch 1 for this vision tower");
    assert_usage(SMALL32 " --image 1024x768 --images 65", "--images: 65 images per sample: modelled with at most 64");
    assert_usage(SMALL32 " --tp 2 --gpus 2", "--tp: the vision tower of mistral3 on Megatron tensor-parallel ranks is not "
                 "modelled");
    static const char *const ok[] = {
        " --seq 512 --lora 16 --lora-targets q_proj,v_proj",
        " -m infer --seq 512",
        " -m generate --prompt 512 --new-tokens 64",
        " --serve --gpu h100-80gb",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        snprintf(a, sizeof a, "%s%s", SMALL32, ok[i]);
        (void)cli_output(a);
    }
}

/* The JSON integer after key in the CLI's output for args */
static long long json_int(const char *args, const char *key)
{
    char a[1024];
    snprintf(a, sizeof a, "%s -f json", args);
    const char *out = cli_output(a);
    const char *p = strstr(out, key);
    if (!p) fail_msg("no %s in: %s", key, out);
    return strtoll(p + strlen(key), NULL, 10);
}

/* --serve (vllm-project/vllm @ 02677fd9 mistral3.py, pixtral.py; src/hf/hf_pixtral.c, src/engine/serve_mm.c):
 *  - the weights: the tower and projector's 438,958,080 parameters in bf16 (877,916,160 B) and PixtralRotaryEmbedding's
 *    two float32 buffers (6,195,200 B, whole on every rank) beside the language model's, which the mistral row's
 *    model of the same text_config gives; over 2 ranks a rank's shards:
 *    patch_conv 602,112, ln_pre 1,024, a layer's norms 2,048 + q/k/v 3 x 512 x 1,024 + o_proj 1,024 x 512 +
 *    gate/up 2 x 2,048 x 1,024 + down 1,024 x 2,048 = 8,390,656, x 24 = 201,375,744; the projector's norm 1,024,
 *    merging_layer 4,194,304 (whole), linear_1 2,560 x 1,024 = 2,621,440, linear_2 5,120 x 2,560 = 13,107,200:
 *    221,902,848 parameters, 443,805,696 B;
 *  - the encoder profiling's dummy batch: one 1540 x 1540 image (longest_edge), ncols = nrows = (1540 - 1) // 28 + 1
 *    = 55, 3,025 image tokens; its pixel values 3 x 1540 x 1540 x 2 B = 14,229,600 B and its embeddings 3,025 x
 *    5,120 x 2 B = 30,976,000 B, held through the language model's dummy run: the profiling peak is the mistral
 *    model's + the tower's weights and buffers + 45,205,600 B; vLLM's run of the tower is not modelled (said so). */
static void test_serve(void **state)
{
    (void)state;
    static const char *const m3 = SMALL32 " --serve --gpu h100-80gb";
    /* the mistral row's model of the checkpoint's text_config, in bf16 */
    char pm[] = "/tmp/vc_mi_XXXXXX";
    int fm = mkstemp(pm);
    assert_true(fm >= 0);
    static const char mi[] = "{\"model_type\":\"mistral\",\"dtype\":\"bfloat16\",\"head_dim\":128,\"hidden_size\":5120,"
                             "\"intermediate_size\":32768,\"max_position_embeddings\":131072,\"num_attention_heads\":32,"
                             "\"num_hidden_layers\":40,\"num_key_value_heads\":8,\"rms_norm_eps\":1e-05,"
                             "\"rope_theta\":1000000000.0,\"sliding_window\":null,\"vocab_size\":131072}";
    assert_int_equal(write(fm, mi, strlen(mi)), (ssize_t)strlen(mi));
    close(fm);
    char a[512], b[512];
    snprintf(b, sizeof b, "%s --serve --gpu h100-80gb", pm);
    assert_int_equal(json_int(m3, "\"weights\": ") - json_int(b, "\"weights\": "), 877916160LL + 6195200LL);
    assert_int_equal(json_int(m3, "\"profile_peak\": ") - json_int(b, "\"profile_peak\": "),
                     877916160LL + 6195200LL + 45205600LL);
    assert_int_equal(json_int(m3, "\"item_tokens\": "), 3025);
    assert_int_equal(json_int(m3, "\"items\": "), 1);
    assert_int_equal(json_int(m3, "\"inputs\": "), 14229600);
    assert_int_equal(json_int(m3, "\"outputs\": "), 30976000);
    snprintf(a, sizeof a, "%s --tp 2 --gpus 2", m3);
    snprintf(b, sizeof b, "%s --serve --gpu h100-80gb --tp 2 --gpus 2", pm);
    assert_int_equal(json_int(a, "\"weights\": ") - json_int(b, "\"weights\": "), 443805696LL + 6195200LL);
    remove(pm);
    const char *out = cli_output(m3);
    if (!strstr(out, "1 dummy item of 3025 tokens, 1540x1540") || !strstr(out, "not modelled for this family"))
        fail_msg("%s", out);
    /* a rank count that does not divide the tower's heads: vLLM's divide() asserts */
    static const char v6[] = "{\"model_type\":\"mistral3\",\"vision_config\":{\"hidden_size\":1020,\"num_attention_heads\":6}," TEXT "}";
    char pv[] = "/tmp/vc_m3v_XXXXXX";
    int fv = mkstemp(pv);
    assert_true(fv >= 0);
    assert_int_equal(write(fv, v6, strlen(v6)), (ssize_t)strlen(v6));
    close(fv);
    snprintf(a, sizeof a, "%s --serve --gpu h100-80gb --tp 4 --gpus 4", pv);
    assert_usage(a, "--tp: 4 tensor-parallel ranks do not divide vision_config.num_attention_heads (6)");
    remove(pv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters), cmocka_unit_test(test_defaults), cmocka_unit_test(test_language_model),
        cmocka_unit_test(test_bad_keys),   cmocka_unit_test(test_cli),      cmocka_unit_test(test_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
