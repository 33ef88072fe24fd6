/*
 * test_fam_apertus.c — the apertus row of src/hf/hf.c (issue 31, "the models people run in 2026"):
 * ApertusForCausalLM (swiss-ai Apertus-8B / 70B): LlamaDecoderLayer's template with q_norm / k_norm per head,
 * ApertusMLP's up_proj, XIELUActivation, down_proj, and the XIELU layer kind it needs (layers/activation.c: bfloat16
 * alpha_p / alpha_n [1] Parameters, beta / eps buffers, torch.where of its two branches).
 *
 * Sources: huggingface/transformers models/apertus/modeling_apertus.py @ 6e4054ae4d2748051a0080ccb6eebfbcc0848d88
 * and configuration_apertus.py @ ecbf7a09240905537bfdf25d35a80ccb24ddcbf1 (ApertusConfig's defaults: vocab 131072,
 * hidden 4096, FFN 14336, 32 layers, 32 heads, kv None -> the heads, hidden_act "xielu", rms_norm_eps 1e-5, llama3
 * rope_scaling, untied, no attention bias); XIELUActivation from src/transformers/activations.py as the library's
 * search returned it (its commit not identified: the stored activations.py @ d60525f3 predates xIELU); vLLM's
 * model_executor/models/apertus.py @ 055e47c28003156421365af985d676fc921cb075 (--serve: QKVParallelLinear, q_norm /
 * k_norm, vLLM's XIELU, a plain KV cache).
 *
 * tests/data/hf/apertus-8b-2509.json is NOT the Hub's config.json (no network here): its sizes (hidden 4096, 32
 * layers, 32 query / 8 kv heads, FFN 21504, vocab 131072, 65536 positions, llama3 rope of factor 8 over 8192,
 * rope_theta 12e6, untied) were written from memory of swiss-ai/Apertus-8B-2509's published config, with
 * ApertusConfig's defaults for the rest. The count, 8,053,338,176, is derived exactly from modeling_apertus.py's
 * modules below (the model card's "8B" class), not read from a safetensors index.
 * The measured peaks are bench/accuracy/llm/measured.json's apertus_small cases (near_llama_replica.py's
 * ApertusAttention / ApertusMLP / XIELUActivation, written from the same files, measured with the accuracy harness's
 * allocator counter on torch 1.13 CPU; compare.py's settings: --attention math --workspace 0).
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

/* a tiny Apertus: vocab 1000, hidden 64, FFN 128, 2 layers, 4 heads / 2 kv heads of 16 */
#define AP "{\"model_type\":\"apertus\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
           "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* ApertusForCausalLM's named_parameters() (modeling_apertus.py @ 6e4054ae: embed_tokens, the layers, norm and an
 * untied lm_head; a layer's q/k/v/o, q_norm / k_norm of head_dim, ApertusMLP's up_proj, act_fn.alpha_p,
 * act_fn.alpha_n ([1] each) and down_proj, attention_layernorm, feedforward_layernorm), by hand. Apertus-8B:
 * embed_tokens and lm_head 2 x 131072 x 4096 = 1,073,741,824, norm 4,096; a layer: q_proj and o_proj 2 x 4096 x
 * 4096 = 33,554,432, k_proj and v_proj 2 x 4096 x 1024 = 8,388,608, q/k norms 256, up_proj and down_proj 2 x 4096 x
 * 21504 = 176,160,768, the xIELU's 2, two RMSNorms 8,192: 218,112,258; x 32 = 6,979,592,256. Total 8,053,338,176 */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "apertus-8b-2509.json", 0); /* --seq 0: the default */
    assert_int_equal(vc_model_parameters(m), INT64_C(8053338176));
    vc_model_free(m);
    /* tiny: embeddings and lm_head 2 x 64,000, norm 64; a layer: q 4,096, k/v 2 x 2,048, o 4,096, q/k norms 32,
     * up/down 2 x 8,192, xIELU 2, norms 128: 28,834 */
    assert_int_equal(count_of(AP "}"), 128000 + 64 + 2 * 28834);
    /* attention_bias: q/k/v/o's 64 + 32 + 32 + 64; tied: no lm_head; mlp_bias is not read (ApertusMLP: bias=False) */
    assert_int_equal(count_of(AP ",\"attention_bias\":true}"), 128000 + 64 + 2 * (28834 + 192));
    assert_int_equal(count_of(AP ",\"tie_word_embeddings\":true}"), 64000 + 64 + 2 * 28834);
    assert_int_equal(count_of(AP ",\"mlp_bias\":true}"), 128000 + 64 + 2 * 28834);
    /* num_key_value_heads absent: the heads (ApertusConfig's backward compatibility): k/v 2 x 4,096 */
    assert_int_equal(count_of("{\"model_type\":\"apertus\",\"vocab_size\":1000,\"hidden_size\":64,"
                              "\"intermediate_size\":128,\"num_hidden_layers\":2,\"num_attention_heads\":4}"),
                     128000 + 64 + 2 * (28834 + 4096));
}

/* The layers (the decoder layer written once and repeated): one XIELU in the MLP, no gate_proj, q/k norms per head;
 * another ACT2FN name is written as itself */
static void test_layers(void **state)
{
    (void)state;
    assert_int_equal(emitted(AP "}", "\"XIELU\""), 1);
    assert_int_equal(emitted(AP "}", "gate_proj"), 0);
    assert_int_equal(emitted(AP "}", "\"mlp.up_proj\""), 1);
    assert_int_equal(emitted(AP "}", "\"qk_norm\":\ttrue"), 1);
    assert_int_equal(emitted(AP ",\"hidden_act\":\"relu2\"}", "\"XIELU\""), 0);
    assert_int_equal(emitted(AP ",\"hidden_act\":\"relu2\"}", "\"Square\""), 1);
}

/* XIELU's alpha_p / alpha_n Parameters and beta / eps buffers (bfloat16 whatever the precision: XIELUActivation
 * .__init__'s dtype), each a tensor in its own 512 B block: apertus_small's weights are the harness's measured
 * weights_bytes (measured.json's apertus_small cases: 2,900,992 B in fp32, 1,459,200 B in bf16), 4 layers x 4 x
 * 512 B of them */
static void test_xielu_tensors(void **state)
{
    (void)state;
    const char *cfg = VC_TEST_DATA "/../../bench/accuracy/llm/configs/apertus_small.json --seq 64 -b 2";
    char a[512];
    snprintf(a, sizeof a, "%s -p fp32", cfg);
    assert_int_equal(cli_json_num(a, "memory", "weights"), 2900992);
    snprintf(a, sizeof a, "%s -p bf16", cfg);
    assert_int_equal(cli_json_num(a, "memory", "weights"), 1459200);
}

/* Every bad value of the keys the row reads exits 2 naming the key */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        {"\"hidden_act\":\"swiglu\"", "hidden_act"},
        {"\"hidden_act\":2", "hidden_act"},
        {"\"rms_norm_eps\":\"x\"", "rms_norm_eps"},
        {"\"attention_bias\":2", "attention_bias"},
        {"\"head_dim\":0", "head_dim"},
        {"\"num_key_value_heads\":3", "num_key_value_heads"},
        {"\"rope_scaling\":{\"rope_type\":\"llama9\"}", "rope_scaling.rope_type"},
        {"\"tie_word_embeddings\":\"no\"", "tie_word_embeddings"},
    };
    char js[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, AP ",%s}", bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    char path[] = "/tmp/vc_apertus_XXXXXX";
    fam_write(path, AP ",\"hidden_act\":\"xielu2\"}");
    assert_usage(path, "hidden_act");
    remove(path);
}

/* --serve as vLLM's apertus.py loads it: a 16-token block is 32 layers x 2 x 8 kv heads x 128 x 2 B x 16 =
 * 2,097,152 B. generate: DynamicCache of the tiny one, fp32, prompt 16 + 4 new tokens: 19 x 2 x 2 layers x 2 kv heads
 * x 16 x 4 B */
static void test_generate_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "apertus-8b-2509.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "2.0 MiB per block"));
    assert_int_equal(fam_kv_cache(AP "}", 16, 4), 19 * 2 * 2 * 2 * 16 * 4);
    /* vLLM's ApertusMLP accepts xielu alone (apertus.py @ 055e47c2: ValueError otherwise): refused naming hidden_act;
     * transformers' ACT2FN runs relu2 (generate above builds) */
    char path[] = "/tmp/vc_apertus_XXXXXX";
    fam_write(path, AP ",\"hidden_act\":\"relu2\"}");
    char a[256];
    snprintf(a, sizeof a, "%s --serve --gpu h100-80gb", path);
    assert_usage(a, "hidden_act");
    snprintf(a, sizeof a, "%s -m generate", path);
    assert_non_null(strstr(cli_output(a), "generate"));
    remove(path);
}

/* apertus_small's measured training and no_grad cases within 0.1% */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0.0 --lora-targets q_proj,v_proj"
    static const cli_measured c[] = {
        {"apertus_small.json --seq 64 -b 2 -o adamw -p fp32", 18061312},
        {"apertus_small.json --seq 96 -b 2 -o adamw -p bf16", 14054400},
        {"apertus_small.json --seq 128 -b 1 -o sgd -p fp32 --grad-ckpt", 8130048},
        {"apertus_small.json --seq 96 -b 2 -o adamw -p fp32" LQV, 12398080},
        {"apertus_small.json --seq 128 -b 2 -o adamw -p bf16 --grad-ckpt" LQV, 5251072},
        {"apertus_small.json --seq 48 -b 4 -o sgd -p fp32", 16510976},
        {"apertus_small.json -m infer --seq 128 -b 2 -p bf16", 3708928},
        {"apertus_small.json -m infer --seq 256 -b 1 -p fp32", 6642688},
    };
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0", 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_xielu_tensors),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_generate_serve),
        cmocka_unit_test(test_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
