/*
 * test_fam_olmoe.c — OLMoE (model_type "olmoe", issue 31): the family row of src/hf/hf.c (the SparseMoE style qwen2
 * without a shared expert, q_norm / k_norm over the whole projections) and the keys of src/hf/hf_olmoe.c.
 *
 * Sources: huggingface/transformers models/olmoe/modeling_olmoe.py @ 0233e509 and configuration_olmoe.py @ 008e5743
 * (the files' headers cite them).
 *
 * tests/data/hf/olmoe-1b-7b-0924.json: allenai/OLMoE-1B-7B-0924's config.json as public copies of it give it (vocab
 * 50304, hidden 2048, intermediate 1024, 16 layers, 16 heads / 16 kv heads, 64 experts top-8, norm_topk_prob false,
 * clip_qkv null, untied embeddings).
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

/* a tiny OLMoE by hand: vocab 1000, hidden 64, 2 layers, 4 heads / 2 kv heads of 16, 8 experts of 32, top-2 */
#define BASE "{\"model_type\":\"olmoe\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":32," \
             "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_experts\":8,\"num_experts_per_tok\":2"
#define TINY BASE ",\"num_key_value_heads\":2"

/* OlmoeForCausalLM's named_parameters() (modeling_olmoe.py @ 0233e509), by hand: embed_tokens 50304 x 2048 =
 * 103,022,592, lm_head (untied) 103,022,592, model.norm 2,048; a layer: q/k/v/o_proj 4 x 2048 x 2048 = 16,777,216,
 * q_norm (OlmoeRMSNorm(hidden_size)) 2,048, k_norm (head_dim 128 x 16 kv heads) 2,048, input_layernorm and
 * post_attention_layernorm 4,096, mlp.gate.weight (OlmoeTopKRouter) 64 x 2048 = 131,072, mlp.experts.gate_up_proj
 * [64, 2048, 2048] 268,435,456 and down_proj [64, 2048, 1024] 134,217,728: 419,569,664; x 16 = 6,713,114,624.
 * Total 6,919,161,856: the published 6.92B (OLMoE-1B-7B: "6.9B total, 1.3B active"). */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(HF "olmoe-1b-7b-0924.json", NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(6919161856));
    vc_model_free(m);
    /* the tiny one: embeddings 64,000, lm_head 64,000, final norm 64; a layer: q 4,096, k 2,048, v 2,048, o 4,096,
     * q_norm 64 (the whole projection), k_norm 32 (2 kv heads x 16), norms 128, router 512, experts 8 x (2 x 32 x 64
     * + 64 x 32) = 49,152: 62,176; x 2 */
    assert_int_equal(count_of(TINY "}"), 64000 + 64000 + 64 + 2 * 62176);
    /* attention_bias: q/k/v/o biased, 64 + 32 + 32 + 64 a layer */
    assert_int_equal(count_of(TINY ",\"attention_bias\":true}"), 64000 + 64000 + 64 + 2 * (62176 + 192));
    /* num_key_value_heads null: num_attention_heads (OlmoeConfig.__post_init__): k/v 2 x 64 x 64, k_norm 64 */
    assert_int_equal(count_of(BASE ",\"num_key_value_heads\":null}"), 64000 + 64000 + 64 + 2 * (62176 + 2 * 2048 + 32));
    /* clip_qkv null and a head_dim of hidden / heads are the defaults' */
    assert_int_equal(count_of(TINY ",\"clip_qkv\":null,\"head_dim\":16}"), 64000 + 64000 + 64 + 2 * 62176);
    /* q_norm and k_norm over the whole projections (the attention's qk_norm_whole), the routed experts of the
     * qwen2_moe style without a shared expert, the two identical layers one Sequential with repeat 2 */
    assert_int_equal(emitted(TINY "}", "\"qk_norm_whole\":\ttrue"), 1);
    assert_int_equal(emitted(TINY "}", "\"style\":\t\"qwen2_moe\""), 1);
    assert_int_equal(emitted(TINY "}", "shared_expert"), 0);
}

/* Every bad or inconsistent value of the keys hf_olmoe.c reads exits 2 naming the key. */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        {"\"clip_qkv\":8.0", "clip_qkv"}, /* the in-place clamp_ is not modelled */
        {"\"clip_qkv\":\"8\"", "clip_qkv"},
        {"\"clip_qkv\":-1", "clip_qkv"},
        {"\"head_dim\":32", "head_dim"}, /* q_norm is OlmoeRMSNorm(hidden_size): 4 x 32 does not run */
        {"\"head_dim\":\"16\"", "head_dim"},
        {"\"output_router_logits\":true", "output_router_logits"},
        {"\"output_router_logits\":1", "output_router_logits"},
        {"\"num_experts_per_tok\":9", "num_experts_per_tok"}, /* top-9 of 8 experts */
    };
    char js[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, TINY ",%s}", bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    char path[] = "/tmp/vc_olmoe_XXXXXX";
    fam_write(path, TINY ",\"clip_qkv\":8}");
    assert_usage(path, "clip_qkv");
    remove(path);
}

/* generate: DynamicCache keeps full keys and values (2 kv heads x 16 per layer), fp32 by default: prompt 16 +
 * 4 new tokens, 19 cached after the last step, x 2 (k, v) x 2 layers x 2 heads x 16 x 4 B */
static void test_generate(void **state)
{
    (void)state;
    assert_int_equal(fam_kv_cache(TINY "}", 16, 4), 19 * 2 * 2 * 2 * 16 * 4);
}

/* --serve (vLLM's olmoe.py): a KV block of 16 tokens holds 16 layers x 2 x 16 kv heads x 128 x 2 B x 16 =
 * 2,097,152 B on one GPU. --tp 8 (vllm/model_executor/models/olmoe.py @ 048a32c7 OlmoeAttention, OlmoeMoE, read by
 * hand: no vLLM here, no torch replica of its tensor parallelism): qkv_proj / o_proj over 16 / 8 = 2 heads, q_norm
 * and k_norm RMSNorm(16 x 128) whole on every rank (_apply_qk_norm all-gathers q and k), FusedMoE's experts over
 * intermediate_size 1024 / 8 = 128 (tp_size, no expert parallelism), the gate (ReplicatedLinear) whole, the
 * untied embed_tokens / lm_head over 50304 (a multiple of 64) / 8 = 6288 rows. One rank's parameters:
 *   2 x 6288 x 2048 + 16 x (3 x 2048 x 256 + 256 x 2048 + 2048 + 2048 + 64 x 3 x 2048 x 128 + 64 x 2048 + 2 x 2048)
 *   + 2048 = 866,846,720,
 * against the exact 6,919,161,856 on one GPU (the CLI's count): the weights' bytes differ by 2 B x their difference
 * (the rotary cache and the allocator's rounding cancel); the KV block 2,097,152 / 8 = 262,144 B. */
static void test_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "olmoe-1b-7b-0924.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "2.0 MiB per block"));
    const char *tp8 = HF "olmoe-1b-7b-0924.json --serve --gpu h200 --gpus 8 --tp 8 -f json";
    assert_int_equal(cli_json_num(HF "olmoe-1b-7b-0924.json --serve --gpu h200 -f json", "serve", "weights") -
                         cli_json_num(tp8, "serve", "weights"),
                     INT64_C(2) * (INT64_C(6919161856) - 866846720));
    assert_int_equal(cli_json_num(tp8, "serve", "page_bytes"), 262144);
    assert_usage(HF "olmoe-1b-7b-0924.json --tp 2", "q_norm / k_norm span the whole projection"); /* Megatron's */
}

/* --ep and --moe-imbalance: Megatron-Core's MoELayer on 8 expert-parallel ranks (layers/moe_ep.c) */
static void test_ep(void **state)
{
    (void)state;
    char path[] = "/tmp/vc_olmoe_ep_XXXXXX";
    fam_write(path, TINY ",\"norm_topk_prob\":true}"); /* Megatron's router renormalises the top-k */
    char a[256];
    snprintf(a, sizeof a, "%s --parallel ddp --gpus 8 --ep 8", path);
    long long even = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --parallel ddp --gpus 8 --ep 8 --moe-imbalance 2", path);
    long long busy = cli_json_field(a, "\"peak_allocated\": ");
    assert_true(busy > even);
    remove(path);
    /* OLMoE-1B-7B's top-k without renormalisation (norm_topk_prob false) is refused under --ep */
    assert_usage(HF "olmoe-1b-7b-0924.json --parallel ddp --gpus 8 --ep 8", "--ep");
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
