/*
 * test_fam_2026.c — near-llama families of 2026 (issue 31, "the models people run in 2026"): the rows of src/hf/hf.c
 * for exaone4 (EXAONE 4.0) and seed_oss (Seed-OSS).
 *
 * Sources: huggingface/transformers models/exaone4/modeling_exaone4.py @ 948448a0267c036370ef15663ac42dc15fbfa682 and
 * configuration_exaone4.py @ f503927de04b3c1dd739a6c6af54e36f68b777d7 (Exaone4DecoderLayer: post_attention_layernorm /
 * post_feedforward_layernorm after the sublayers, none before; Exaone4Attention: q_norm / k_norm = RMSNorm(head_dim)
 * per head, apply_rotary_pos_emb only `if self.sliding_window is None or self.is_sliding`).
 *
 * tests/data/hf/exaone-4.0-32b.json and exaone-4.0-1.2b.json are NOT the Hub's config.json (no network here): they are
 * written from the model cards' figures (32B: 64 layers, 40 heads / 8 kv heads, hidden 5120, FFN 27392, vocab 102400,
 * 131072 context, hybrid attention 3:1 sliding (window 4096) : global; 1.2B: 30 layers, 32 heads / 8 kv heads, hidden
 * 2048, FFN 4096, tied embeddings, 65536 context, global attention only), the keys public test fixtures of the two
 * configs carry ("sliding_window_pattern": "LLLG", llama3 rope_scaling, head_dim) and Exaone4Config's defaults.
 * seed_oss: models/seed_oss/modular_seed_oss.py @ 6e4054ae4d2748051a0080ccb6eebfbcc0848d88 and configuration_seed_oss.py
 * @ d9aa776fdbff67b32efa19e622bdb36756f99caf (SeedOssAttention: q/k/v bias=attention_bias, o_proj
 * bias=attention_out_bias, dropout(residual_dropout) after o_proj; SeedOssMLP: mlp_bias, dropout(residual_dropout) after
 * down_proj; LlamaDecoderLayer). tests/data/hf/seed-oss-36b-instruct.json is NOT the Hub's config.json either: the model
 * card's figures (64 layers, 80 query / 8 kv heads of 128, hidden 5120, FFN 27648, vocab 155136, 512K context, rope
 * theta 1e7, untied) with SeedOssConfig's defaults for the rest (attention_bias true, attention_out_bias false,
 * mlp_bias false, attention_dropout and residual_dropout 0.1, rms_norm_eps 1e-6).
 * The measured peaks are bench/accuracy/llm/measured.json's exaone4_small and seed_oss_small cases (near_llama_replica.py's Exaone4
 * and SeedOss classes, written from the same files, measured with the accuracy harness's allocator counter on torch 1.13 CPU).
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
#include "cli_spelt.h"
#include "fam_hf.h"

#define HF VC_TEST_DATA "/hf/"

/* a tiny EXAONE 4.0: vocab 1000, hidden 64, FFN 128, 4 layers, 4 heads / 2 kv heads of 16 */
#define EX "{\"model_type\":\"exaone4\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
           "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* Exaone4ForCausalLM's named_parameters() (modeling_exaone4.py @ 948448a0), by hand.
 * EXAONE-4.0-32B: embed_tokens 102400 x 5120 = 524,288,000, lm_head (untied) 524,288,000, model.norm 5,120; a layer:
 * q_proj and o_proj 2 x 5120 x 5120 = 52,428,800, k_proj and v_proj 2 x 5120 x 1024 = 10,485,760, q_norm and k_norm
 * 2 x 128, the two RMSNorms 2 x 5120, gate/up/down 3 x 5120 x 27392 = 420,741,120: 483,666,176; x 64 =
 * 30,954,635,264. Total 32,003,216,384: the model card's 32.0B, "30.95B without embeddings" (30,954,640,384).
 * EXAONE-4.0-1.2B (tied): embed_tokens 102400 x 2048 = 209,715,200, model.norm 2,048; a layer: q/o 2 x 2048 x 2048 =
 * 8,388,608, k/v 2 x 2048 x 512 = 2,097,152, q_norm and k_norm 2 x 64, norms 2 x 2048, MLP 3 x 2048 x 4096 =
 * 25,165,824: 35,655,808; x 30 = 1,069,674,240. Total 1,279,391,488: 1.28B, "1.07B without embeddings". */
static void test_exaone4_counts(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int64_t n;
    } f[] = {{"exaone-4.0-32b.json", INT64_C(32003216384)}, {"exaone-4.0-1.2b.json", INT64_C(1279391488)}};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
        vc_model *m = NULL;
        vc_error err;
        char path[256];
        snprintf(path, sizeof path, HF "%s", f[i].file);
        if (vc_model_load_file_hf(path, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
        assert_int_equal(vc_model_parameters(m), f[i].n);
        vc_model_free(m);
    }
    /* the tiny one: embeddings and lm_head 2 x 64,000, final norm 64; a layer: q/o 2 x 4,096, k/v 2 x 2,048, q_norm and
     * k_norm 2 x 16, norms 2 x 64, MLP 3 x 8,192: 37,024 */
    assert_int_equal(count_of(EX "}"), 128000 + 64 + 4 * 37024);
    /* tie_word_embeddings: lm_head is embed_tokens */
    assert_int_equal(count_of(EX ",\"tie_word_embeddings\":true}"), 64000 + 64 + 4 * 37024);
    /* head_dim 32 (getattr(config, "head_dim", ...)): q/o 2 x 64 x 128, k/v 2 x 64 x 64, q_norm and k_norm 2 x 32 */
    assert_int_equal(count_of(EX ",\"head_dim\":32}"), 128000 + 64 + 4 * (16384 + 8192 + 64 + 128 + 24576));
}

/* The layers written: no input_layernorm; the class defaults (sliding_window 4096, pattern 4) make layers 0-2 sliding
 * with the rotary and layer 3 full attention without it (global NoPE); sliding_window null with layer_types: every
 * layer full attention and rotary */
static void test_exaone4_layers(void **state)
{
    (void)state;
    assert_int_equal(emitted(EX "}", "\"name\":\t\"input_layernorm\""), 0);
    assert_int_equal(emitted(EX "}", "\"name\":\t\"post_feedforward_layernorm\""), 1 + 1); /* the sliding Sequential, layer 3 */
    assert_int_equal(emitted(EX "}", "\"rotary_dim\":\t0"), 1);
    assert_int_equal(emitted(EX "}", "\"rotary_dim\":\t16"), 2); /* model.rotary_emb, the sliding layers' */
    assert_int_equal(emitted(EX "}", "\"sliding_window\":\t4096"), 1);
    assert_int_equal(emitted(EX "}", "\"qk_norm\":\ttrue"), 2);
    static const char full[] = EX ",\"sliding_window\":null,\"sliding_window_pattern\":\"LLLG\",\"layer_types\":"
                                  "[\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\"]}";
    assert_int_equal(emitted(full, "\"rotary_dim\":\t0"), 0);
    assert_int_equal(emitted(full, "\"sliding_window\""), 0);
    /* layer_types with the window: its full layers NoPE, its sliding ones rotary, the string pattern unread */
    static const char lt[] = EX ",\"sliding_window\":64,\"sliding_window_pattern\":\"LLLG\",\"layer_types\":"
                                "[\"sliding_attention\",\"full_attention\",\"sliding_attention\",\"full_attention\"]}";
    assert_int_equal(emitted(lt, "\"rotary_dim\":\t0"), 2);          /* layers 1 and 3 */
    assert_int_equal(emitted(lt, "\"sliding_window\":\t64"), 2);    /* layers 0 and 2 */
}

/* Every bad value of the keys the row reads for the window exits 2 naming the key */
static void test_exaone4_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        {"\"sliding_window\":null", "sliding_window"},          /* Exaone4Config: (i + 1) % 0 without layer_types */
        {"\"sliding_window_pattern\":\"LLLG\"", "sliding_window_pattern"}, /* (i + 1) % "LLLG": a TypeError */
        {"\"sliding_window_pattern\":0", "sliding_window_pattern"},
        {"\"sliding_window\":0", "sliding_window"},
        {"\"layer_types\":[\"full_attention\"]", "layer_types"}, /* layer_type_validation: one per layer */
        {"\"layer_types\":[\"full_attention\",\"x\",\"full_attention\",\"full_attention\"]", "layer_types"},
        {"\"head_dim\":\"16\"", "head_dim"},
    };
    char js[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, EX ",%s}", bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    char path[] = "/tmp/vc_exaone4_XXXXXX";
    fam_write(path, EX ",\"sliding_window\":null}");
    assert_usage(path, "sliding_window");
    remove(path);
}

/* generate: DynamicCache keeps prompt 16 + 4 new tokens (19 cached after the last step, all within the 4096 window),
 * fp32: x 2 (k, v) x 4 layers x 2 kv heads x 16 x 4 B. --serve as vLLM's exaone4.py loads it (Exaone4Attention:
 * per_layer_sliding_window on the sliding layers, the hybrid allocator's groups of 16 layers): one 16-token block of a
 * group is 16 layers x 2 x 8 kv heads x 128 x 2 B x 16 = 1 MiB on the 32B. */
static void test_exaone4_generate_serve(void **state)
{
    (void)state;
    assert_int_equal(fam_kv_cache(EX "}", 16, 4), 19 * 2 * 4 * 2 * 16 * 4);
    const char *out = cli_output(HF "exaone-4.0-32b.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "1.0 MiB per block"));
}

/* The measured cases (bench/accuracy/llm/measured.json, exaone4_small: window 32, layers 0-2 sliding, layer 3 global
 * NoPE; training full, LoRA r 8 on q_proj / v_proj, checkpointed, --mode infer; the held-out ones too) within 0.1% */
static void test_exaone4_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0.0 --lora-targets q_proj,v_proj"
    static const cli_measured c[] = {
        {"exaone4_small.json --seq 96 -b 2 -o adamw -p bf16", 14184448},
        {"exaone4_small.json --seq 64 -b 2 -o adamw -p fp32", 17431040},
        {"exaone4_small.json --seq 128 -b 1 -o sgd -p bf16 --grad-ckpt" LQV, 3823616},
        {"exaone4_small.json --seq 48 -b 4 -o adamw -p bf16" LQV, 8890880},
        {"exaone4_small.json --seq 80 -b 2 -o adamw -p bf16 --grad-ckpt", 7911424},
        {"exaone4_small.json -m infer --seq 128 -b 2 -p bf16", 4922368},
        {"exaone4_small.json -m infer --seq 256 -b 1 -p fp32", 9093120},
    };
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
}

/* a tiny Seed-OSS: vocab 1000, hidden 64, FFN 128, 2 layers, 4 heads / 2 kv heads of 16 (head_dim given: the class's
 * default is 128) */
#define SO_BASE "{\"model_type\":\"seed_oss\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
                "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"head_dim\":16"
#define SO SO_BASE ",\"num_key_value_heads\":2"

/* SeedOssForCausalLM's named_parameters() (modular_seed_oss.py @ 6e4054ae), by hand. Seed-OSS-36B: embed_tokens and
 * lm_head 2 x 155136 x 5120 = 1,588,592,640, model.norm 5,120; a layer: q_proj 5120 x 10240 + bias 10,240 =
 * 52,439,040, k_proj and v_proj 2 x (5120 x 1024 + 1,024) = 10,487,808, o_proj (no bias) 52,428,800, MLP 3 x 5120 x
 * 27648 = 424,673,280, two RMSNorms 10,240: 540,039,168; x 64 = 34,562,506,752. Total 36,151,104,512 (the model card's
 * 36B, 36.2B on the Hub page) */
static void test_seed_oss_counts(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(HF "seed-oss-36b-instruct.json", NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(36151104512));
    vc_model_free(m);
    /* tiny: embeddings and lm_head 2 x 64,000, norm 64; a layer: q 4,096 + 64, k/v 2 x (2,048 + 32), o 4,096, MLP
     * 3 x 8,192, norms 128: 37,120 */
    assert_int_equal(count_of(SO "}"), 128000 + 64 + 2 * 37120);
    /* attention_out_bias: o_proj's 64; mlp_bias: gate/up 2 x 128 + down 64; attention_bias false: q/k/v's 128 less */
    assert_int_equal(count_of(SO ",\"attention_out_bias\":true}"), 128000 + 64 + 2 * (37120 + 64));
    assert_int_equal(count_of(SO ",\"mlp_bias\":true}"), 128000 + 64 + 2 * (37120 + 320));
    assert_int_equal(count_of(SO ",\"attention_bias\":false}"), 128000 + 64 + 2 * (37120 - 128));
    /* num_key_value_heads null: the heads (SeedOssConfig.__init__), k/v 2 x (4,096 + 64) */
    assert_int_equal(count_of(SO_BASE ",\"num_key_value_heads\":null}"), 128000 + 64 + 2 * (37120 + 2 * 2080));
    /* the residual dropouts after o_proj and the MLP, and the attention's, at the class's 0.1 */
    assert_int_equal(emitted(SO "}", "\"p\":\t0.1"), 2);
    assert_int_equal(emitted(SO "}", "\"dropout\":\t0.1"), 1);
    assert_int_equal(emitted(SO ",\"residual_dropout\":0}", "\"p\":\t0.1"), 0);
}

/* Every bad value of the keys the row reads exits 2 naming the key */
static void test_seed_oss_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        {"\"attention_out_bias\":\"no\"", "attention_out_bias"},
        {"\"attention_bias\":2", "attention_bias"},
        {"\"mlp_bias\":\"x\"", "mlp_bias"},
        {"\"residual_dropout\":1.5", "residual_dropout"},
        {"\"residual_dropout\":-0.1", "residual_dropout"},
        {"\"attention_dropout\":\"0.1\"", "attention_dropout"},
        {"\"head_dim\":0", "head_dim"},
    };
    char js[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, SO ",%s}", bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    char path[] = "/tmp/vc_seed_oss_XXXXXX";
    fam_write(path, SO ",\"residual_dropout\":2}");
    assert_usage(path, "residual_dropout");
    remove(path);
}

/* --serve as vLLM's seed_oss.py loads it (SeedOssForCausalLM: Qwen2's layers with the checkpoint's head_dim): a
 * 16-token block is 64 layers x 2 x 8 kv heads x 128 x 2 B x 16 = 4 MiB on one GPU. generate: DynamicCache of the
 * tiny one, fp32, prompt 16 + 4 new tokens: 19 x 2 x 2 layers x 2 kv heads x 16 x 4 B */
static void test_seed_oss_generate_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "seed-oss-36b-instruct.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "4.0 MiB per block"));
    assert_int_equal(fam_kv_cache(SO "}", 16, 4), 19 * 2 * 2 * 2 * 16 * 4);
}

/* seed_oss_small's measured cases (q/k/v biases, attention and residual dropouts 0.1) within 0.1% */
static void test_seed_oss_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0.0 --lora-targets q_proj,v_proj"
    static const cli_measured c[] = {
        {"seed_oss_small.json --seq 96 -b 2 -o adamw -p bf16", 16571392},
        {"seed_oss_small.json --seq 64 -b 2 -o adamw -p fp32", 18206208},
        {"seed_oss_small.json --seq 128 -b 1 -o sgd -p bf16 --grad-ckpt" LQV, 4066816},
        {"seed_oss_small.json --seq 48 -b 4 -o adamw -p bf16" LQV, 9971200},
        {"seed_oss_small.json --seq 80 -b 2 -o adamw -p bf16 --grad-ckpt", 8220672},
        {"seed_oss_small.json -m infer --seq 128 -b 2 -p bf16", 4908032},
        {"seed_oss_small.json -m infer --seq 256 -b 1 -p fp32", 9160704},
    };
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exaone4_counts),
        cmocka_unit_test(test_exaone4_layers),
        cmocka_unit_test(test_exaone4_bad_keys),
        cmocka_unit_test(test_exaone4_generate_serve),
        cmocka_unit_test(test_exaone4_measured),
        cmocka_unit_test(test_seed_oss_counts),
        cmocka_unit_test(test_seed_oss_bad_keys),
        cmocka_unit_test(test_seed_oss_generate_serve),
        cmocka_unit_test(test_seed_oss_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
