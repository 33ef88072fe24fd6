/*
 * test_fam_qwen2_vl.c — the qwen2_vl family row (issue 31 item 4; src/hf/hf.c's row, src/hf/hf_vision.c read_qwen2):
 * Qwen2VLForConditionalGeneration, Qwen2-VL's vision tower (Qwen2VisionTransformerPretrainedModel: LayerNorm blocks,
 * VisionMlp fc1 / quick_gelu / fc2, every block over its image's cu_seqlens, PatchMerger with a LayerNorm ln_q) before
 * Qwen2's language model with M-RoPE.
 *
 * 1. Qwen2-VL-2B / 7B / 72B-Instruct's parameters: the Hub's safetensors totals (2,208,985,600; 8,291,375,616;
 *    73,405,560,320), derived exactly below from modeling_qwen2_vl.py @ efa7189c and checked by
 *    bench/accuracy/llm/qwen25vl_replica.py --check (the modules built on the meta device).
 * 2. The keys as transformers reads them: Qwen2VLVisionConfig's defaults (configuration_qwen2_vl.py @ 018c8e03),
 *    text_config (transformers 5) or the config's own keys (the released config.json, "for BC"), mlp_ratio as a
 *    float truncated by int().
 * 3. Every bad value of a key read exits 2 naming vision_config.KEY.
 * 4. --image: smart_resize with the checkpoints' min_pixels 3,136 / max_pixels 12,845,056 (the model card: "4-16384"
 *    visual tokens per image, of 28 x 28 pixels), the tokens by hand; the tower's modules as written.
 * 5. --serve: vLLM's dummy batch (qwen2_vl.py's Qwen2VLProcessingInfo), the encoder's own run not modelled.
 * 6. Measured: the replica's cases (bench/accuracy/llm/run_suite.py's qwen2_vl_small block, the ones not held out).
 *
 * tests/data/hf/qwen2-vl-{2b,7b,72b}-instruct.json: written from the model cards' and Qwen2VLConfig's values without
 * network (Qwen/Qwen2-VL-*-Instruct's config.json was not read): the language models are Qwen2-1.5B / 7B / 72B's
 * (2B: hidden 1,536, intermediate 8,960, 28 layers, 12 heads, 2 kv heads, vocabulary 151,936, tied embeddings; 7B:
 * 3,584, 18,944, 28, 28, 4, 152,064; 72B: 8,192, 29,568, 80, 64, 8, 152,064), the tower Qwen2VLVisionConfig's
 * defaults (depth 32, embed_dim 1,280, mlp_ratio 4, 16 heads, patch 14) with hidden_size the language model's; the
 * counts they give equal the Hub's totals exactly, which the shapes confirm.
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
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define SMALL VC_TEST_DATA "/../../bench/accuracy/llm/configs/qwen2_vl_small.json"

/* A small language model (Qwen2's keys at the top, as the released config.json has them) */
#define LM "\"model_type\":\"qwen2_vl\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
           "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"tie_word_embeddings\":true"
/* A small tower, its merger's output the language model's 64 */
#define VIS "\"depth\":2,\"embed_dim\":32,\"num_heads\":4,\"hidden_size\":64"

static int64_t file_params(const char *path, int64_t *trainable)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(path, NULL, &m, &err) != VC_OK) fail_msg("%s: %s: %s", path, err.path, err.msg);
    const int64_t n = vc_model_parameters(m);
    *trainable = vc_model_trainable_parameters(m);
    vc_model_free(m);
    return n;
}

/* The tower (embed_dim C 1,280, MLP int(1,280 x 4) = 5,120, depth 32, merge 2: H4 = 5,120), module by module
 * (modeling_qwen2_vl.py @ efa7189c): PatchEmbed's Conv3d 1,280 x 3 x 2 x 14 x 14 = 1,505,280 (no bias); a
 * Qwen2VLVisionBlock: norm1 and norm2 nn.LayerNorm 2 x 2,560, qkv 3,840 x 1,280 + 3,840 = 4,919,040, proj
 * 1,280^2 + 1,280 = 1,639,680, fc1 5,120 x 1,280 + 5,120 = 6,558,720, fc2 1,280 x 5,120 + 1,280 = 6,554,880:
 * 19,677,440, x 32 = 629,678,080; PatchMerger: ln_q 2,560, mlp.0 5,120^2 + 5,120 = 26,219,520, mlp.2 5,120 x out
 * + out. So the tower is 657,405,440 + 5,121 x out: out 1,536 (2B) 665,271,296; 3,584 (7B) 675,759,104; 8,192
 * (72B) 699,356,672. The language models (Qwen2's: q/k/v with biases, o_proj without, a gated MLP, two RMSNorms a
 * layer, the final norm; lm_head unless tied): 2B 1,543,714,304 (tied), 7B 7,615,616,512, 72B 72,706,203,648
 * (qwen25vl_replica.py text_count; the 7B's is Qwen2.5-VL-7B's, tests/test_hf.c). The sums are the Hub's totals;
 * the tower frozen (the trainable count the language model's). */
static void test_parameters(void **state)
{
    (void)state;
    static const struct {
        const char *f;
        int64_t all, lm;
    } ck[] = {
        {HF "qwen2-vl-2b-instruct.json", INT64_C(2208985600), INT64_C(1543714304)},
        {HF "qwen2-vl-7b-instruct.json", INT64_C(8291375616), INT64_C(7615616512)},
        {HF "qwen2-vl-72b-instruct.json", INT64_C(73405560320), INT64_C(72706203648)},
    };
    for (size_t i = 0; i < sizeof ck / sizeof *ck; i++) {
        int64_t tr;
        assert_int_equal(file_params(ck[i].f, &tr), ck[i].all);
        assert_int_equal(tr, ck[i].lm);
    }
    assert_int_equal(INT64_C(657405440) + 5121 * 1536 + INT64_C(1543714304), INT64_C(2208985600));
}

/* The small model by hand: LM embeddings 1,000 x 64 = 64,000 (tied), a layer q 64 x 64 + 64, k and v 64 x 32 + 32
 * each, o 64 x 64: 12,416, the MLP 3 x 64 x 128 = 24,576, two norms 128: 37,120, x 2 = 74,240, norm 64: 138,304.
 * The tower (embed_dim 32, 4 heads, MLP 128, merge 2: H4 128): patch 32 x 1,176 = 37,632; a block 4 x 32 + 3,168 +
 * 1,056 + 4,224 + 4,128 = 12,704, x 2 = 25,408; merger ln_q 64, mlp.0 128^2 + 128 = 16,512, mlp.2 128 x 64 + 64 =
 * 8,256: 87,872. */
static void test_keys(void **state)
{
    (void)state;
    const int64_t lm = 138304, tower = 87872;
    assert_int_equal(count_of("{" LM ",\"vision_config\":{" VIS "}}"), lm + tower);
    /* text_config (Qwen2VLConfig's sub_config, transformers 5): the same language model */
    assert_int_equal(count_of("{\"model_type\":\"qwen2_vl\",\"text_config\":{\"vocab_size\":1000,\"hidden_size\":64,"
                              "\"intermediate_size\":128,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                              "\"num_key_value_heads\":2,\"tie_word_embeddings\":true},\"vision_config\":{" VIS "}}"),
                     lm + tower);
    /* mlp_ratio 2.5: int(32 x 2.5) = 80 wide: fc1 and fc2 (80 x 32 + 80) + (32 x 80 + 32) = 5,232 a block, not 8,352 */
    assert_int_equal(count_of("{" LM ",\"vision_config\":{" VIS ",\"mlp_ratio\":2.5}}"), lm + tower - 2 * (8352 - 5232));
    /* mlp_ratio 2.51: int(80.32) = 80, the same */
    assert_int_equal(count_of("{" LM ",\"vision_config\":{" VIS ",\"mlp_ratio\":2.51}}"), lm + tower - 2 * (8352 - 5232));
    /* in_chans (the checkpoints' key) is not the class's in_channels: ignored; in_channels 1: patch 32 x 392 */
    assert_int_equal(count_of("{" LM ",\"vision_config\":{" VIS ",\"in_chans\":1}}"), lm + tower);
    assert_int_equal(count_of("{" LM ",\"vision_config\":{" VIS ",\"in_channels\":1}}"), lm + tower - 32 * 784);
    /* vision_config absent: Qwen2VLVisionConfig() merges into 3,584, not this language model's 64 */
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js("{" LM "}", &m, &err), VC_ERR_MODEL);
    assert_string_equal(err.path, "vision_config.hidden_size");
    /* ... and with a 3,584-wide language model the tower is the default one (the 7B's: 675,759,104) */
    const int64_t big = count_of("{\"model_type\":\"qwen2_vl\",\"vocab_size\":1000,\"hidden_size\":3584,"
                                 "\"intermediate_size\":128,\"num_hidden_layers\":1,\"num_attention_heads\":28,"
                                 "\"num_key_value_heads\":4,\"tie_word_embeddings\":true}");
    assert_int_equal(big - count_of("{\"model_type\":\"qwen2_vl\",\"vocab_size\":1000,\"hidden_size\":3584,"
                                    "\"intermediate_size\":128,\"num_hidden_layers\":1,\"num_attention_heads\":28,"
                                    "\"num_key_value_heads\":4,\"tie_word_embeddings\":true,\"vision_config\":{"
                                    "\"depth\":1,\"embed_dim\":4,\"num_heads\":1,\"patch_size\":1,\"spatial_merge_size\":1}}"),
                     INT64_C(675759104) - (4 * 3 * 2 + 4 * 4 + (12 * 4 + 12) + (16 + 4) + (16 * 4 + 16) + (4 * 16 + 4) +
                                           8 + (16 + 4) + (4 * 3584 + 3584)));
    /* the weights-only tower: LayerNorms with biases, fc1 / fc2, no gate */
    const char *js = "{" LM ",\"vision_config\":{" VIS "}}";
    assert_int_equal(emitted(js, "\"visual.blocks.1.mlp.fc1\""), 1);
    assert_int_equal(emitted(js, "\"visual.merger.ln_q\""), 1);
    assert_int_equal(emitted(js, "\"visual.blocks.1.norm2\""), 1);
    assert_int_equal(emitted(js, "\"visual.blocks.0.mlp.gate_proj\""), 0);
}

static void bad(const char *vis, const char *path, const char *want)
{
    char js[1024];
    snprintf(js, sizeof js, "{" LM ",\"vision_config\":{%s}}", vis);
    vc_model *m = NULL;
    vc_error err;
    if (load_js(js, &m, &err) != VC_ERR_MODEL) fail_msg("%s: loaded", js);
    if (strcmp(err.path, path) || !strstr(err.msg, want))
        fail_msg("%s: %s: %s (wanted %s: ...%s...)", js, err.path, err.msg, path, want);
}

/* Each key read, and the values transformers' modules reject or vramcalc cannot hold */
static void test_bad_keys(void **state)
{
    (void)state;
    bad("\"depth\":0,\"embed_dim\":32,\"num_heads\":4,\"hidden_size\":64", "vision_config.depth", "at least 1");
    bad("\"depth\":2000,\"embed_dim\":32,\"num_heads\":4,\"hidden_size\":64", "vision_config.depth", "more than the limit of 1024");
    bad("\"depth\":2,\"embed_dim\":\"32\",\"num_heads\":4,\"hidden_size\":64", "vision_config.embed_dim", "expected an integer");
    bad("\"depth\":2,\"embed_dim\":30,\"num_heads\":4,\"hidden_size\":64", "vision_config.num_heads",
        "embed_dim (30) must be divisible by num_heads (4)");
    bad("\"depth\":2,\"embed_dim\":24,\"num_heads\":4,\"hidden_size\":64", "vision_config.num_heads", "must be a multiple of 4");
    bad("\"depth\":2,\"embed_dim\":32,\"num_heads\":4,\"hidden_size\":96", "vision_config.hidden_size",
        "the merger's output must be the language model's hidden_size (64)");
    bad(VIS ",\"mlp_ratio\":-1", "vision_config.mlp_ratio", "expected a positive number");
    bad(VIS ",\"mlp_ratio\":\"4\"", "vision_config.mlp_ratio", "expected a positive number");
    bad(VIS ",\"mlp_ratio\":0.01", "vision_config.mlp_ratio", "is no MLP width");
    bad(VIS ",\"hidden_act\":\"tanh\"", "vision_config.hidden_act", "or quick_gelu");
    bad(VIS ",\"hidden_act\":4", "vision_config.hidden_act", "expected a string");
    bad(VIS ",\"patch_size\":0", "vision_config.patch_size", "at least 1");
    bad(VIS ",\"spatial_merge_size\":1.5", "vision_config.spatial_merge_size", "expected an integer");
    bad(VIS ",\"temporal_patch_size\":-2", "vision_config.temporal_patch_size", "at least 1");
    bad(VIS ",\"in_channels\":0", "vision_config.in_channels", "at least 1");
    bad("\"depth\":2,\"embed_dim\":32,\"num_heads\":0,\"hidden_size\":64", "vision_config.num_heads", "at least 1");
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js("{" LM ",\"vision_config\":[]}", &m, &err), VC_ERR_MODEL);
    assert_string_equal(err.path, "vision_config");
    /* the CLI: exit 2, one line naming the key */
    char path[] = "/tmp/vc_q2vl_XXXXXX";
    fam_write(path, "{" LM ",\"vision_config\":{" VIS ",\"mlp_ratio\":0}}");
    char args[128];
    snprintf(args, sizeof args, "%s", path);
    assert_usage(args, "vision_config.mlp_ratio: expected a positive number");
    remove(path);
}

/* --image: smart_resize(factor 28, min_pixels 3,136, max_pixels 12,845,056: image_processing_qwen2_vl.py
 * @ cb0fc56f with the checkpoints' values): 1280x960 becomes round(960 / 28) = 34 x 28 = 952 high and
 * round(1280 / 28) = 46 x 28 = 1,288 wide: 68 x 92 = 6,256 patches, 1,564 tokens (merge 2 x 2) before the
 * default 2,048: seq 3,612; 2 images 3,128 tokens. 20000x20000 passes max_pixels: beta = sqrt(4e8 / 12,845,056),
 * floor(20000 / beta / 28) = 127: 3,556 x 3,556, 254^2 / 4 = 16,129 tokens. */
static void test_image(void **state)
{
    (void)state;
    const char *out = cli_output(HF "qwen2-vl-2b-instruct.json --image 1280x960 -p bf16");
    assert_non_null(strstr(out, "seq 3612)"));
    out = cli_output(HF "qwen2-vl-2b-instruct.json --image 1280x960 --images 2 -p bf16 -m infer");
    assert_non_null(strstr(out, "seq 5176)"));
    out = cli_output(HF "qwen2-vl-2b-instruct.json --image 20000x20000 --seq 16 -p bf16 -m infer");
    assert_non_null(strstr(out, "seq 16145)"));
    /* the tower as run: LayerNorms, fc1 -> quick_gelu (NewGELU variant quick) -> fc2, no gate */
    out = cli_output(SMALL " --image 224x224 -m infer --seq 16 --emit-model");
    assert_non_null(strstr(out, "\"quick\""));
    assert_non_null(strstr(out, "\"mlp.fc1\""));
    assert_non_null(strstr(out, "\"mlp.fc2\""));
    assert_non_null(strstr(out, "\"visual.merger.ln_q\""));
    (void)cli_output(SMALL " --image 448x336 -m generate --prompt 32 --new-tokens 8 -p bf16");
    (void)cli_output(SMALL " --image 448x336 --seq 64 --lora 8 --lora-targets q_proj,v_proj --grad-ckpt");
    assert_usage(SMALL " --image 224x224 --batch 2", "--image is modelled at --batch 1 for this vision tower");
    assert_usage(SMALL " --image 20x20", "--image: 20x20: height and width must be at least 28");
}

/* --serve: Qwen2VLProcessingInfo.get_image_size_with_most_features (vLLM qwen2_vl.py @ 002d181a): smart_resize of
 * 9,999,999 square under max_pixels 12,845,056: 3,584 x 3,584, (256 x 256) / 4 = 16,384 tokens, one dummy item;
 * the tower's own run is refused in one line ("not modelled for this family") */
static void test_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "qwen2-vl-7b-instruct.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "1 dummy item of 16384 tokens, 3584x3584"));
    assert_non_null(strstr(out, "not modelled for this family"));
}

/* run_suite.py's qwen2_vl_small cases not held out (measured.json's last fifteen, measure_llm.py on
 * qwen25vl_replica.py's qwen2_vl build; cited by their settings): all within 0.5% (compare.py: -0.31% the worst, the
 * bf16 LoRA case with an image; the held-out five within 0.04%); generate's peak_allocated is the prefill's */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured cases[] = {
        {"qwen2_vl_small.json --seq 64 -b 1 -o adamw -p fp32 --image 224x224 --images 1", 11546624},
        {"qwen2_vl_small.json --seq 64 -b 1 -o adamw -p bf16", 4389376},
        {"qwen2_vl_small.json --seq 64 -b 1 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0.0 "
         "--lora-targets q_proj,v_proj --image 224x224 --images 1", 6375424},
        {"qwen2_vl_small.json --seq 64 -b 2 -o adamw -p fp32 --lora 8 --lora-alpha 16 --lora-dropout 0.0 "
         "--lora-targets q_proj,v_proj", 6033920},
        {"qwen2_vl_small.json --seq 64 -b 1 -o sgd -p bf16 --grad-ckpt --grad-ckpt-kind non-reentrant", 2399744},
        {"qwen2_vl_small.json --seq 32 -b 1 -o adamw -p fp32 --grad-ckpt --grad-ckpt-kind non-reentrant --lora 8 "
         "--lora-alpha 16 --lora-dropout 0.0 --lora-targets q_proj,v_proj --image 320x320 --images 2", 47989248},
        {"qwen2_vl_small.json -m infer --seq 32 -b 1 -p bf16 --image 448x336 --images 2", 107349504},
        {"qwen2_vl_small.json -m infer --seq 128 -b 1 -p fp32 --image 448x336 --images 1", 32293888},
        {"qwen2_vl_small.json -m generate --prompt 32 --new-tokens 8 -b 1 -p fp32 --image 224x224 --images 1", 7188992},
        {"qwen2_vl_small.json -m generate --prompt 64 --new-tokens 16 -b 1 -p bf16 --image 448x336 --images 1", 31367168},
    };
    assert_measured(cases, sizeof cases / sizeof *cases, " --attention math --workspace 0", 0.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters), cmocka_unit_test(test_keys),  cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_image),      cmocka_unit_test(test_serve), cmocka_unit_test(test_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
