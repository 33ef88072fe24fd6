/*
 * test_fam_ernie.c — ERNIE 4.5 (model_types "ernie4_5" and "ernie4_5_moe", issue 31): the family rows of src/hf/hf.c
 * (Ernie4_5's interleaved rotation on float32 upcasts: RotaryAttention rope_style glm4 with rope_f32; use_bias), the
 * SparseMoE style ernie4_5_moe (layers/llm.c moe_ernie_emit) and the keys of src/hf/hf_ernie.c.
 *
 * Sources: huggingface/transformers models/ernie4_5/modeling_ernie4_5.py and models/ernie4_5_moe/modeling_ernie4_5_moe.py
 * @ 0233e509, configuration_ernie4_5.py @ 008e5743, configuration_ernie4_5_moe.py @ 001f85b3 (the files' headers cite
 * them).
 *
 * tests/data/hf/ernie-4.5-0.3b-pt.json, ernie-4.5-21b-a3b-pt.json, ernie-4.5-300b-a47b-pt.json: written here, without
 * network, from the model cards of baidu/ERNIE-4.5-0.3B-PT, ERNIE-4.5-21B-A3B-PT and ERNIE-4.5-300B-A47B-PT and the
 * configuration classes' defaults (Ernie4_5Config's are the 0.3B's, Ernie4_5_MoeConfig's the 21B's), not copied from
 * the checkpoints' config.json: the 300B's widths (hidden 8192, 54 layers, 64 heads / 8 kv heads, intermediate 28672,
 * 64 experts of 3584, top-8, MoE from layer 3, no shared experts, untied) are the model card's and public copies'.
 * The parameter counts below are derived from the modeling source by hand and agree with the published sizes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_run.h"
#include "fam_hf.h"
#include "cli_spelt.h"

#define HF VC_TEST_DATA "/hf/"

/* a tiny ERNIE 4.5 by hand: vocab 1000, hidden 64, intermediate 128, 2 layers, 4 heads / 2 kv heads */
#define DENSE "{\"model_type\":\"ernie4_5\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
              "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
/* a tiny ERNIE 4.5 MoE: the same widths, 4 layers, 8 experts of 32, top-2 (the class's other defaults: 2 shared
 * experts, MoE from layer 1 to the last, every layer, tied) */
#define MOE "{\"model_type\":\"ernie4_5_moe\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
            "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"moe_num_experts\":8," \
            "\"moe_k\":2,\"moe_intermediate_size\":32"

/* Ernie4_5ForCausalLM / Ernie4_5_MoeForCausalLM named_parameters() (modeling_ernie4_5*.py @ 0233e509), by hand.
 *  - ERNIE-4.5-0.3B (head_dim 128, tied): embed_tokens 103424 x 1024 = 105,906,176; a layer: q_proj 1024 x 2048
 *    2,097,152, k/v_proj 2 x 1024 x 256 524,288, o_proj 2,097,152, mlp 3 x 1024 x 3072 9,437,184, two norms 2,048:
 *    14,157,824; x 18 = 254,840,832; norm 1,024. Total 360,748,032: the published 0.36B.
 *  - ERNIE-4.5-21B-A3B (tied): embed_tokens 103424 x 2560 = 264,765,440; attention q/o 2 x 2560 x 2560, k/v
 *    2 x 2560 x 512 and two norms: 15,733,760 a layer; layer 0 dense: + 3 x 2560 x 12288 = 110,105,600; layers
 *    1-27: + gate.weight 64 x 2560 163,840, moe_statics 64, experts 64 x 3 x 2560 x 1536 754,974,720, shared_experts
 *    (1536 x 2) 3 x 2560 x 3072 23,592,960: 794,465,344, x 27 = 21,450,564,288; norm 2,560. Total 21,825,437,888
 *    (published "21B total"; active: 6 of 64 experts, 3,352,150,208 with the embeddings: "3B"); 27 x 64 of them
 *    the frozen e_score_correction_bias (requires_grad=False).
 *  - ERNIE-4.5-300B-A47B (untied): embed_tokens and lm_head 2 x 103424 x 8192 = 1,694,498,816; attention
 *    q/o 2 x 8192 x 8192, k/v 2 x 8192 x 1024, two norms: 151,011,328; layers 0-2 dense (+ 3 x 8192 x 28672):
 *    855,654,400 each; layers 3-53: + gate 524,288, moe_statics 64, experts 64 x 3 x 8192 x 3584 5,637,144,576:
 *    5,788,680,256, x 51 = 295,222,693,056; norm 8,192. Total 299,484,163,264 (published 300B; active: 8 of 64
 *    experts, 47,926,586,560: "47B"). */
static void test_counts(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int64_t n, trainable;
    } cp[] = {
        {"ernie-4.5-0.3b-pt.json", INT64_C(360748032), INT64_C(360748032)},
        {"ernie-4.5-21b-a3b-pt.json", INT64_C(21825437888), INT64_C(21825437888) - 27 * 64},
        {"ernie-4.5-300b-a47b-pt.json", INT64_C(299484163264), INT64_C(299484163264) - 51 * 64},
    };
    char a[256];
    for (size_t i = 0; i < sizeof cp / sizeof *cp; i++) {
        vc_model *m = NULL;
        vc_error err;
        snprintf(a, sizeof a, HF "%s", cp[i].file);
        if (vc_model_load_file_hf(a, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
        assert_int_equal(vc_model_parameters(m), cp[i].n);
        vc_model_free(m);
        snprintf(a, sizeof a, HF "%s -f json", cp[i].file);
        assert_int_equal(cli_json_field(a, "\"trainable_parameters\": "), cp[i].trainable);
    }
    /* tiny dense, head_dim absent: Ernie4_5Config's 128 (not hidden / heads): embeddings 64,000 (tied), final norm 64;
     * a layer: q 64 x 512, k/v 2 x 64 x 256, o 512 x 64, mlp 3 x 64 x 128, norms 128: 123,008 */
    const int64_t d_layer = 32768 + 2 * 16384 + 32768 + 24576 + 128;
    assert_int_equal(count_of(DENSE "}"), 64000 + 64 + 2 * d_layer);
    /* head_dim null: hidden / heads (16): q/o 2 x 64 x 64, k/v 2 x 64 x 32 */
    assert_int_equal(count_of(DENSE ",\"head_dim\":null}"), 64000 + 64 + 2 * (2 * 4096 + 2 * 2048 + 24576 + 128));
    /* use_bias: q/k/v/o 512 + 256 + 256 + 64 and the MLP's 128 + 128 + 64; lm_head has none */
    assert_int_equal(count_of(DENSE ",\"use_bias\":true}"), 64000 + 64 + 2 * (d_layer + 1408));
    /* untied: lm_head 64,000 */
    assert_int_equal(count_of(DENSE ",\"tie_word_embeddings\":false}"), 2 * 64000 + 64 + 2 * d_layer);
    /* tiny MoE (head_dim hidden / heads): attention and norms 12,416 a layer; layer 0 dense + 24,576; layers 1-3
     * + gate 512, moe_statics 8, experts 8 x (2 x 32 x 64 + 64 x 32) 49,152, shared_experts (2 x 32) 3 x 64 x 64
     * 12,288 */
    const int64_t attn = 12416, dense = attn + 24576, moe = attn + 512 + 8 + 49152 + 12288;
    assert_int_equal(count_of(MOE "}"), 64000 + 64 + dense + 3 * moe);
    /* moe_layer_interval 2: (i + 1) % 2 == 0 and i >= 1: layers 1 and 3 */
    assert_int_equal(count_of(MOE ",\"moe_layer_interval\":2}"), 64000 + 64 + 2 * dense + 2 * moe);
    /* moe_layer_end_index 2, start 0: layers 0-2 */
    assert_int_equal(count_of(MOE ",\"moe_layer_end_index\":2,\"moe_layer_start_index\":0}"), 64000 + 64 + dense + 3 * moe);
    /* no shared experts; one of 3 x 32 */
    assert_int_equal(count_of(MOE ",\"moe_num_shared_experts\":0}"), 64000 + 64 + dense + 3 * (moe - 12288));
    assert_int_equal(count_of(MOE ",\"moe_num_shared_experts\":3}"), 64000 + 64 + dense + 3 * (moe + 6144));
    /* num_experts / num_experts_per_tok are attribute_map aliases: moe_num_experts and moe_k are the keys read */
    assert_int_equal(count_of(MOE ",\"moe_norm_min\":1e-6,\"output_router_logits\":false}"), 64000 + 64 + dense + 3 * moe);
    /* the rotation (rope_style glm4 with float32 products) in every attention, one Sequential of the 3 MoE layers */
    assert_int_equal(emitted(DENSE "}", "\"rope_style\":\t\"glm4\""), 1);
    assert_int_equal(emitted(DENSE "}", "\"rope_f32\":\ttrue"), 1);
    assert_int_equal(emitted(MOE "}", "\"style\":\t\"ernie4_5_moe\""), 1);
    assert_int_equal(emitted(MOE "}", "\"shared_expert_intermediate_size\":\t64"), 1);
}

/* Every bad or inconsistent value of the keys the rows and hf_ernie.c read exits 2 naming the key. */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *base, *kv, *key;
    } bad[] = {
        {MOE, "\"use_bias\":true", "use_bias"}, /* lm_head's and the shared experts' biases are not modelled */
        {MOE, "\"moe_layer_end_index\":4", "moe_layer_end_index"}, /* past the last layer (3) */
        {MOE, "\"moe_layer_end_index\":-2", "moe_layer_end_index"},
        {MOE, "\"moe_layer_end_index\":\"3\"", "moe_layer_end_index"},
        {MOE, "\"moe_num_shared_experts\":-1", "moe_num_shared_experts"},
        {MOE, "\"moe_num_shared_experts\":1.5", "moe_num_shared_experts"},
        {MOE, "\"moe_norm_min\":0", "moe_norm_min"},
        {MOE, "\"moe_norm_min\":\"x\"", "moe_norm_min"},
        {MOE, "\"output_router_logits\":true", "output_router_logits"}, /* the auxiliary loss */
        {MOE, "\"output_router_logits\":1", "output_router_logits"},
        {MOE, "\"moe_k\":9", "moe_k"}, /* top-9 of 8 experts */
        {MOE, "\"moe_layer_interval\":0", "moe_layer_interval"},
        {MOE, "\"moe_layer_start_index\":-1", "moe_layer_start_index"},
        {MOE, "\"moe_intermediate_size\":0", "moe_intermediate_size"},
        {DENSE, "\"use_bias\":\"yes\"", "use_bias"},
        {DENSE, "\"head_dim\":\"x\"", "head_dim"},
        {DENSE, "\"head_dim\":0", "head_dim"},
    };
    char js[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, "%s,%s}", bad[i].base, bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    char path[] = "/tmp/vc_ernie_XXXXXX";
    fam_write(path, MOE ",\"use_bias\":true}");
    assert_usage(path, "use_bias");
    remove(path);
    /* transformers 4.x's Ernie4_5_MoeMLP list of experts is not written: per_expert refused naming the option */
    assert_usage(HF "ernie-4.5-21b-a3b-pt.json --experts-implementation per_expert", "--experts-implementation");
    assert_usage(HF "ernie-4.5-21b-a3b-pt.json --transformers 4.57", "--experts-implementation");
}

/* generate: DynamicCache keeps full keys and values (2 kv heads x head_dim 128 per layer), fp32 by default: prompt 16
 * + 4 new tokens, 19 cached after the last step, x 2 (k, v) x 2 layers x 2 heads x 128 x 4 B */
static void test_generate(void **state)
{
    (void)state;
    assert_int_equal(fam_kv_cache(DENSE "}", 16, 4), 19 * 2 * 2 * 2 * 128 * 4);
}

/* --serve (vLLM's ernie45.py / ernie45_moe.py): a KV block of 16 tokens holds layers x 2 x kv heads x 128 x 2 B x 16:
 * 0.3B 18 x 2 x 2 -> 294,912 B; 21B 28 x 2 x 4 -> 917,504 B, under --tp 2 each rank 2 kv heads: 458,752 B */
static void test_serve(void **state)
{
    (void)state;
    assert_non_null(strstr(cli_output(HF "ernie-4.5-0.3b-pt.json --serve --gpu h100-80gb"), "288.0 KiB per block"));
    assert_non_null(strstr(cli_output(HF "ernie-4.5-21b-a3b-pt.json --serve --gpu h100-80gb"), "896.0 KiB per block"));
    assert_non_null(strstr(cli_output(HF "ernie-4.5-21b-a3b-pt.json --serve --gpu h100-80gb --tp 2 --gpus 2"),
                           "448.0 KiB per block"));
}

/* --ep and --moe-imbalance: Megatron-Core's MoELayer on 8 expert-parallel ranks (layers/moe_ep.c) without shared
 * experts; with them (the 21B's) --ep is refused naming it */
static void test_ep(void **state)
{
    (void)state;
    char path[] = "/tmp/vc_ernie_ep_XXXXXX";
    fam_write(path, MOE ",\"moe_num_shared_experts\":0}");
    char a[256];
    snprintf(a, sizeof a, "%s --parallel ddp --gpus 8 --ep 8", path);
    long long even = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --parallel ddp --gpus 8 --ep 8 --moe-imbalance 2", path);
    long long busy = cli_json_field(a, "\"peak_allocated\": ");
    assert_true(busy > even);
    remove(path);
    assert_usage(HF "ernie-4.5-21b-a3b-pt.json --parallel ddp --gpus 8 --ep 8", "--ep");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_ep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
