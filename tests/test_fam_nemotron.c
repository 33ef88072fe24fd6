/*
 * test_fam_nemotron.c — the nemotron row of src/hf/hf.c (issue 31, "the models people run in 2026"):
 * NemotronForCausalLM (Minitron-8B / 4B, Nemotron-Mini-4B-Instruct, Mistral-NeMo-Minitron-8B): LlamaDecoderLayer's
 * template with NemotronLayerNorm1P (nn.LayerNorm with weight and bias, computed with weight + 1: LayerNorm
 * one_plus, layers/norm.c), partial rotary (rot_dim = int(head_dim * partial_rotary_factor), the rest of each head
 * passed through torch.cat), and NemotronMLP's up_proj / relu2 / down_proj (arcee's ReLU then Square).
 *
 * Sources: huggingface/transformers models/nemotron/modeling_nemotron.py @ 0233e509531ace915c8241b4c16c8032a583279c
 * and configuration_nemotron.py @ 05cd1ec14dbe16127778060fb68c34105873015c (NemotronConfig's defaults: vocab 256000,
 * hidden 6144, FFN 24576, 32 layers, 48 heads, head_dim None -> hidden // heads, num_key_value_heads None kept None,
 * hidden_act "relu2", norm_eps 1e-5, partial_rotary_factor 0.5, untied, no biases); vLLM's
 * model_executor/models/nemotron.py @ 02762914d1127e79eabdd64ccc85adf7ce9ca206 (--serve: QKVParallelLinear, the
 * same NemotronLayerNorm1P, get_rope with rotary_percent, a plain KV cache).
 *
 * tests/data/hf/minitron-8b-base.json is NOT the Hub's config.json (no network here): its sizes (hidden 4096, 48
 * query / 8 kv heads of head_dim 128, FFN 16384, 32 layers, vocab 256000, 4096 positions, partial_rotary_factor 0.5,
 * untied) were written from the nvidia/Minitron-8B-Base model card's architecture section as remembered, with
 * NemotronConfig's defaults for the rest. The count, 8,271,699,968, is derived exactly from modeling_nemotron.py's
 * modules below (it agrees with the card's "8B" class), not read from a safetensors index.
 * The measured peaks are bench/accuracy/llm/measured.json's nemotron_small cases (near_llama_replica.py's
 * NemotronLayerNorm1P / NemotronAttention / NemotronDecoderLayer, written from the same file, measured with the
 * accuracy harness's allocator counter on torch 1.13 CPU; compare.py's settings: --attention math --workspace 0).
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

/* a tiny Nemotron: vocab 1000, hidden 64, FFN 128, 2 layers, 4 heads / 2 kv heads of 16 */
#define NM "{\"model_type\":\"nemotron\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
           "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* NemotronForCausalLM's named_parameters() (modeling_nemotron.py @ 0233e509: embed_tokens, the layers, norm and an
 * untied lm_head; every norm a NemotronLayerNorm1P with weight and bias; NemotronMLP up_proj and down_proj only), by
 * hand. Minitron-8B: embed_tokens and lm_head 2 x 256000 x 4096 = 2,097,152,000, norm 8,192; a layer: q_proj 4096 x
 * 6144 = 25,165,824, k_proj and v_proj 2 x 4096 x 1024 = 8,388,608, o_proj 25,165,824, up_proj and down_proj 2 x
 * 4096 x 16384 = 134,217,728, two LayerNorms 16,384: 192,954,368; x 32 = 6,174,539,776. Total 8,271,699,968 */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "minitron-8b-base.json", 0); /* --seq 0: the default */
    assert_int_equal(vc_model_parameters(m), INT64_C(8271699968));
    vc_model_free(m);
    /* tiny: embeddings and lm_head 2 x 64,000, norm 128 (weight and bias); a layer: q 4,096, k/v 2 x 2,048, o 4,096,
     * up/down 2 x 8,192, two LayerNorms 256: 28,928 */
    assert_int_equal(count_of(NM "}"), 128000 + 128 + 2 * 28928);
    /* mlp_bias: up_proj's 128 and down_proj's 64; attention_bias: q/k/v/o's 64 + 32 + 32 + 64; tied: no lm_head */
    assert_int_equal(count_of(NM ",\"mlp_bias\":true}"), 128000 + 128 + 2 * (28928 + 192));
    assert_int_equal(count_of(NM ",\"attention_bias\":true}"), 128000 + 128 + 2 * (28928 + 192));
    assert_int_equal(count_of(NM ",\"tie_word_embeddings\":true}"), 64000 + 128 + 2 * 28928);
    /* head_dim given (32: q/o 64 x 128, k/v 64 x 64): a layer 8,192 x 2 + 4,096 x 2 + 16,384 + 256 = 41,216 */
    assert_int_equal(count_of(NM ",\"head_dim\":32}"), 128000 + 128 + 2 * 41216);
}

/* The layers (the decoder layer is written once and repeated): three NemotronLayerNorm1P (input_layernorm,
 * post_attention_layernorm, model.norm) as LayerNorm one_plus; relu2 as ReLU then Square; the rotary part
 * int(16 x 0.5) = 8 by default (RotaryEmbedding and RotaryAttention), the whole head at partial_rotary_factor 1.0 */
static void test_layers(void **state)
{
    (void)state;
    assert_int_equal(emitted(NM "}", "\"one_plus\":\ttrue"), 3);
    assert_int_equal(emitted(NM "}", "\"HFRMSNorm\""), 0);
    assert_int_equal(emitted(NM "}", "\"Square\""), 1);
    assert_int_equal(emitted(NM "}", "gate_proj"), 0);
    assert_int_equal(emitted(NM "}", "\"rotary_dim\":\t8"), 2);
    assert_int_equal(emitted(NM ",\"partial_rotary_factor\":1.0}", "\"rotary_dim\":\t16"), 2);
    /* LayerNorm one_plus needs a weight: refused naming the argument */
    static const char lm[] = "{\"input\":[8],\"layers\":[{\"type\":\"LayerNorm\",\"name\":\"n\",\"normalized_shape\":8,"
                             "\"elementwise_affine\":false,\"one_plus\":true}]}";
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_string(lm, strlen(lm), "m.json", &m, &err), VC_ERR_MODEL);
    assert_non_null(strstr(err.path, "one_plus"));
}

/* Every bad value of the keys the row reads exits 2 naming the key; num_key_value_heads absent or null is refused
 * (NemotronConfig keeps None and NemotronAttention's num_heads // None fails) */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        {"\"hidden_act\":\"swiglu\"", "hidden_act"},
        {"\"norm_eps\":\"x\"", "norm_eps"},
        {"\"partial_rotary_factor\":2", "partial_rotary_factor"},
        {"\"partial_rotary_factor\":\"half\"", "partial_rotary_factor"},
        {"\"mlp_bias\":\"x\"", "mlp_bias"},
        {"\"attention_bias\":2", "attention_bias"},
        {"\"head_dim\":0", "head_dim"},
        {"\"tie_word_embeddings\":\"no\"", "tie_word_embeddings"},
        {"\"num_key_value_heads\":null", "num_key_value_heads"},
        {"\"num_key_value_heads\":3", "num_key_value_heads"},
    };
    char js[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, NM ",%s}", bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    fam_refused("{\"model_type\":\"nemotron\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128,"
                "\"num_hidden_layers\":2,\"num_attention_heads\":4}",
                "num_key_value_heads");
    char path[] = "/tmp/vc_nemotron_XXXXXX";
    fam_write(path, NM ",\"norm_eps\":-1}");
    assert_usage(path, "norm_eps");
    remove(path);
}

/* --serve as vLLM's nemotron.py loads it: a 16-token block is 32 layers x 2 x 8 kv heads x 128 x 2 B x 16 =
 * 2,097,152 B. generate: DynamicCache of the tiny one, fp32, prompt 16 + 4 new tokens: 19 x 2 x 2 layers x 2 kv
 * heads x 16 x 4 B */
static void test_generate_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "minitron-8b-base.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "2.0 MiB per block"));
    assert_int_equal(fam_kv_cache(NM "}", 16, 4), 19 * 2 * 2 * 2 * 16 * 4);
}

/* nemotron_small's measured training and no_grad cases: within 0.1%. bf16 with --grad-ckpt and LoRA was +0.94%
 * (42 KB over) until a checkpointed layer's held input went with the last node its backward runs
 * (src/engine/autograd.c backward, `bfirst`): NemotronLayerNorm1P's `weight + 1` on the frozen weight, the
 * layer's first op, is no node under LoRA, so every layer's input was held to the end of backward; now -0.02% */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0.0 --lora-targets q_proj,v_proj"
    static const cli_measured c[] = {
        {"nemotron_small.json --seq 64 -b 2 -o adamw -p fp32", 14466560},
        {"nemotron_small.json --seq 96 -b 2 -o adamw -p bf16", 10190848},
        {"nemotron_small.json --seq 128 -b 1 -o sgd -p fp32 --grad-ckpt", 6987264},
        {"nemotron_small.json --seq 96 -b 2 -o adamw -p fp32" LQV, 8954880},
        {"nemotron_small.json --seq 48 -b 4 -o sgd -p fp32", 10465792},
        {"nemotron_small.json -m infer --seq 128 -b 2 -p bf16", 3693056},
        {"nemotron_small.json -m infer --seq 256 -b 1 -p fp32", 6602240},
        {"nemotron_small.json --seq 128 -b 2 -o adamw -p bf16 --grad-ckpt" LQV, 4476928},
    };
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0", 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_generate_serve),
        cmocka_unit_test(test_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
