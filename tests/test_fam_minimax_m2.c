/*
 * test_fam_minimax_m2.c — MiniMax-M2 / M2.1 (model_type "minimax_m2", issue 31): the family row of
 * src/hf/hf.c, the keys of src/hf/hf_minimax_m2.c and the SparseMoE style minimax_m2 of layers/llm.c.
 *
 * Sources: huggingface/transformers models/minimax_m2/modeling_minimax_m2.py @ 0205eec1 and
 * configuration_minimax_m2.py @ 3e108993; vllm-project/vllm vllm/model_executor/models/minimax_m2.py
 * @ 01d99586 (the files' headers cite them line by line).
 *
 * tests/data/hf/minimax-m2.json: MiniMaxAI/MiniMax-M2's config.json as public copies transcribe it (no
 * Hub access here): the shapes MiniMaxM2Config's defaults declare to be MiniMax-M2's (vocab 200064,
 * hidden 3072, 62 layers, 48 heads / 8 kv heads of head_dim 128, intermediate_size 1536, 256 experts
 * top-8, max_position_embeddings 196608, rms_norm_eps 1e-6, untied), rotary_dim 64, the checkpoint's
 * use_qk_norm / qk_norm_type "per_layer" / scoring_func "sigmoid" / use_routing_bias /
 * shared_intermediate_size 0 / attn_type_list of 62 ones / 3 MTP modules of one layer, and its FP8
 * block quantization_config (128 x 128, modules_to_not_convert gate, e_score_correction_bias,
 * lm_head), as vLLM plugins' and converters' fixtures of the checkpoint repeat them.
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

/* a tiny MiniMax-M2 by hand: vocab 1000, hidden 64, 2 layers, 4 heads / 2 kv heads of 16, 8 experts of 32, top-2 */
#define TINY "{\"model_type\":\"minimax_m2\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":32," \
             "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16," \
             "\"num_local_experts\":8,\"num_experts_per_tok\":2,\"max_position_embeddings\":4096"

/* MiniMaxM2ForCausalLM's named_parameters(), by hand from the modules (modeling_minimax_m2.py @ 0205eec1):
 * embed_tokens and the untied lm_head 2 x 200064 x 3072 = 1,229,193,216; model.norm 3,072; a layer:
 * q_proj and o_proj 2 x 3072 x 6144 = 37,748,736, k_proj and v_proj 2 x 3072 x 1024 = 6,291,456,
 * q_norm 6,144 (48 heads x 128) and k_norm 1,024 (8 x 128), input_layernorm and post_attention_layernorm
 * 6,144, mlp.gate.weight 256 x 3072 = 786,432, mlp.experts.gate_up_proj [256, 3072, 3072] 2,415,919,104
 * and down_proj [256, 3072, 1536] 1,207,959,552: 3,668,718,592; x 62 = 227,460,552,704. Total
 * 228,689,748,992, the published "229B" (the model card's 230B total / 10B active, the Hub's safetensors
 * 229B; e_score_correction_bias, 62 x 256 buffer values, and the FP8 scales are stored beside them, not
 * parameters; no MTP weights: with the 3 MTP layers the count would pass 239B). Activated per token:
 * 8 of 256 experts. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(HF "minimax-m2.json", NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(228689748992));
    assert_true(vc_model_parameters(m) >= INT64_C(228500000000) && vc_model_parameters(m) < INT64_C(229500000000));
    vc_model_free(m);
    /* the tiny one: embeddings and head 128,000, final norm 64; a layer: q 4,096 + k 2,048 + v 2,048 + o 4,096,
     * q_norm 64 + k_norm 32, norms 128, gate 512, experts 8 x (64 x 64 + 64 x 32) = 49,152: 62,176; x 2 */
    assert_int_equal(count_of(TINY "}"), 128000 + 64 + 2 * 62176);
    /* q_norm / k_norm span all heads (RMSNorm of heads x head_dim), the rotary part rotary_dim, else head_dim // 2
     * (MiniMaxM2Config.convert_rope_params_to_dict) */
    /* (the two decoder layers are one repeated block of the generated model) */
    assert_int_equal(emitted(TINY "}", "\"qk_norm_whole\":\ttrue"), 1);
    assert_int_equal(emitted(TINY "}", "\"rotary_dim\":\t8"), 2); /* the rotary embedding and the layer */
    assert_int_equal(emitted(TINY ",\"rotary_dim\":4}", "\"rotary_dim\":\t4"), 2);
    assert_int_equal(emitted(TINY "}", "\"style\":\t\"minimax_m2\""), 1);
    /* the MTP modules are read, not built; the checkpoint's keys with the values transformers builds are accepted */
    assert_int_equal(count_of(TINY ",\"use_mtp\":true,\"num_mtp_modules\":3,\"mtp_transformer_layers\":1,\"use_qk_norm\":true,"
                              "\"qk_norm_type\":\"per_layer\",\"scoring_func\":\"sigmoid\",\"use_routing_bias\":true,"
                              "\"shared_intermediate_size\":0,\"attn_type_list\":[1,1]}"),
                     128000 + 64 + 2 * 62176);
}

/* Every bad or inconsistent value of the keys hf_minimax_m2.c reads exits 2 naming the key. */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        {"\"rotary_dim\":3", "rotary_dim"},          /* odd: rotate_half splits the rotated part in two */
        {"\"rotary_dim\":32", "rotary_dim"},         /* more than head_dim */
        {"\"rotary_dim\":null", "rotary_dim"},       /* None / head_dim fails */
        {"\"rotary_dim\":\"64\"", "rotary_dim"},
        {"\"use_qk_norm\":false", "use_qk_norm"},    /* MiniMaxM2Attention builds q_norm / k_norm anyway */
        {"\"use_qk_norm\":1", "use_qk_norm"},
        {"\"qk_norm_type\":\"per_head\"", "qk_norm_type"},
        {"\"scoring_func\":\"softmax\"", "scoring_func"},
        {"\"use_routing_bias\":false", "use_routing_bias"},
        {"\"attention_bias\":true", "attention_bias"},
        {"\"output_router_logits\":true", "output_router_logits"},
        {"\"shared_intermediate_size\":512", "shared_intermediate_size"},
        {"\"shared_intermediate_size\":-1", "shared_intermediate_size"},
        {"\"router_jitter_noise\":0.01", "router_jitter_noise"},
        {"\"router_jitter_noise\":-1", "router_jitter_noise"},
        {"\"attn_type_list\":[1,0]", "attn_type_list"}, /* MiniMax-Text-01's lightning attention */
        {"\"attn_type_list\":[1]", "attn_type_list"},
        {"\"num_mtp_modules\":-3", "num_mtp_modules"},
        {"\"mtp_transformer_layers\":1.5", "mtp_transformer_layers"},
        {"\"use_mtp\":\"yes\"", "use_mtp"},
        {"\"hidden_act\":\"gelu_new\"", "hidden_act"},
        {"\"num_experts_per_tok\":9", "num_experts_per_tok"},
        {"\"num_local_experts\":0", "num_local_experts"},
    };
    char js[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, TINY ",%s}", bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    /* the CLI: exit 2, one line naming the file and the key */
    char path[] = "/tmp/vc_minimax_XXXXXX";
    fam_write(path, TINY ",\"scoring_func\":\"softmax\"}");
    char args[256];
    snprintf(args, sizeof args, "%s", path);
    assert_usage(args, "scoring_func");
    /* per_expert: MiniMaxM2Experts are stacked (transformers 5 only) */
    snprintf(args, sizeof args, "%s --experts-implementation per_expert", path);
    remove(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    const char good[] = TINY "}";
    assert_int_equal(write(fd, good, sizeof good - 1), (ssize_t)(sizeof good - 1));
    close(fd);
    assert_usage(args, "--experts-implementation");
    remove(path);
}

/* generate: DynamicCache keeps full keys and values (2 kv heads x 16 per layer), fp32 by default: prompt 16 +
 * 4 new tokens, 19 cached after the last step, x 2 (k, v) x 2 layers x 2 heads x 16 x 4 B */
static void test_generate(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js(TINY "}", &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.prompt = 16;
    o.new_tokens = 4;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(r.generate.kv_cache, 19 * 2 * 2 * 2 * 16 * 4);
    assert_int_equal(r.generate.kv_mla, 0);
    vc_result_free(&r);
    vc_model_free(m);
}

/* --serve on 8 H100 (vLLM's MiniMaxM2Attention: 48 / 8 heads and 8 / 8 kv heads a rank; q_norm / k_norm
 * MiniMaxText01RMSNormTP shards): a KV block of 16 tokens is 62 layers x 2 x 1 kv head x 128 x 2 B x 16 =
 * 507,904 B (496.0 KiB). 16 ranks are more than the 8 kv heads, which MiniMaxText01RMSNormTP's k_norm shard
 * cannot cover: refused naming --tp. */
static void test_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "minimax-m2.json --serve --gpu h100-80gb --tp 8 --gpus 8");
    assert_non_null(strstr(out, "496.0 KiB per block"));
    assert_usage(HF "minimax-m2.json --serve --gpu h100-80gb --tp 16 --gpus 16", "--tp");
    /* one card: 230 GB of FP8 weights do not fit, said in one line */
    assert_usage(HF "minimax-m2.json --serve --gpu h100-80gb", "no memory is left for the KV cache");
}

/* vLLM's MiniMaxM2MoE keeps the router in float32 (minimax_m2.py @ 01d99586: gate a ReplicatedLinear with
 * params_dtype=torch.float32, e_score_correction_bias a float32 parameter): the SparseMoE key router_f32, which
 * --serve's model sets. 16 experts on hidden 64 in bf16: gate.weight 1,024 values, 4,096 B instead of 2,048; the
 * bias 16 values, 64 B or 32 B, each 512 B as the caching allocator rounds them: 2,048 B more in all. On
 * MiniMax-M2 under --serve --tp 8 that is 62 x (256 x 3072 x 2 B + 512 B) = 97,549,312 B more than the
 * weights' dtype would give. */
static void test_router_f32(void **state)
{
    (void)state;
    static const char *const js[2] = {
        "{\"input\": [32, 64], \"layers\": [{\"type\": \"SparseMoE\", \"hidden_size\": 64, \"intermediate_size\": 16,"
        " \"num_experts\": 16, \"top_k\": 4, \"style\": \"minimax_m2\", \"experts_implementation\": \"grouped_mm\"}]}",
        "{\"input\": [32, 64], \"layers\": [{\"type\": \"SparseMoE\", \"hidden_size\": 64, \"intermediate_size\": 16,"
        " \"num_experts\": 16, \"top_k\": 4, \"style\": \"minimax_m2\", \"experts_implementation\": \"grouped_mm\","
        " \"router_f32\": true}]}"};
    int64_t w[2];
    for (int i = 0; i < 2; i++) {
        vc_model *m = NULL;
        vc_error err;
        if (vc_model_load_string(js[i], strlen(js[i]), "moe", &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
        vc_options o;
        vc_options_init(&o);
        o.mode = VC_MODE_INFER;
        o.precision = VC_PREC_BF16;
        vc_result r;
        if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: %s", err.path, err.msg);
        w[i] = r.memory.weights;
        vc_result_free(&r);
        vc_model_free(m);
    }
    assert_int_equal(w[1] - w[0], 2048);
}

/* --ep and --moe-imbalance: Megatron-Core's MoELayer on 8 expert-parallel ranks (layers/moe_ep.c); the busiest
 * expert taking twice the even share raises the peak; under transformers' grouped_mm (no --ep) the option
 * changes no allocation and is refused. */
static void test_ep(void **state)
{
    (void)state;
    char path[] = "/tmp/vc_minimax_ep_XXXXXX";
    fam_write(path, TINY "}");
    char a[256];
    snprintf(a, sizeof a, "%s --parallel ddp --gpus 8 --ep 8", path);
    long long even = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --parallel ddp --gpus 8 --ep 8 --moe-imbalance 2", path);
    long long busy = cli_json_field(a, "\"peak_allocated\": ");
    assert_true(busy > even);
    snprintf(a, sizeof a, "%s --moe-imbalance 2", path);
    assert_usage(a, "--moe-imbalance");
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_ep),
        cmocka_unit_test(test_router_f32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
