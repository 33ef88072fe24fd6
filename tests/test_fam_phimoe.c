/*
 * test_fam_phimoe.c — Phi-3.5-MoE (model_type "phimoe", issue 31): the family row of src/hf/hf.c, the keys of
 * src/hf/hf_phimoe.c and the SparseMoE style phimoe of layers/llm.c (sparsemixer).
 *
 * Sources: huggingface/transformers models/phimoe/modeling_phimoe.py @ 0233e509 (transformers 5) and
 * configuration_phimoe.py @ 23925e16 (the files' headers cite them).
 *
 * tests/data/hf/phi-3.5-moe-instruct.json: microsoft/Phi-3.5-MoE-instruct's config.json written from PhimoeConfig's
 * defaults (its sizes are Phi-3.5-MoE's: vocab 32064, hidden 4096, intermediate 6400, 32 layers, 32 heads / 8 kv
 * heads, 16 experts top-2, max_position_embeddings 131072, rms_norm_eps 1e-5) and the values public copies of the
 * checkpoint's config repeat (attention_bias and lm_head_bias true, input_jitter_noise and router_jitter_noise 0.01,
 * sliding_window 131072, original_max_position_embeddings 4096, eos 32000). Its longrope rope_scaling (64 short
 * and 64 long factors, short_mscale = long_mscale = 1.243163121016122) is left out: the factor lists could not be
 * transcribed, and they change inv_freq's values and a scalar, no tensor's size (test_bad_keys loads the form).
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

/* a tiny Phimoe by hand: vocab 1000, hidden 64, 2 layers, 4 heads / 2 kv heads of 16, 8 experts of 32 */
#define BASE "{\"model_type\":\"phimoe\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":32," \
             "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"max_position_embeddings\":4096,\"attention_bias\":true," \
             "\"lm_head_bias\":true"
#define TINY BASE ",\"num_key_value_heads\":2,\"num_local_experts\":8"

/* PhimoeForCausalLM's named_parameters() (transformers 5, modeling_phimoe.py @ 0233e509), by hand: embed_tokens
 * 32064 x 4096 = 131,334,144, lm_head 131,334,144 + its bias 32,064, model.norm (nn.LayerNorm) 8,192; a layer:
 * q_proj and o_proj 2 x (4096 x 4096 + 4096) = 33,562,624, k_proj and v_proj 2 x (4096 x 1024 + 1024) = 8,390,656,
 * mlp.router.weight 16 x 4096 = 65,536, mlp.experts.gate_up_proj [16, 12800, 4096] 838,860,800 and down_proj
 * [16, 4096, 6400] 419,430,400, input_layernorm and post_attention_layernorm (nn.LayerNorm, weight and bias)
 * 16,384: 1,300,326,400; x 32 = 41,610,444,800. Total 41,873,153,344: the published 41.9B ("16x3.8B", 41.9B total /
 * 6.6B active on the model card), and every value the checkpoint stores (its layer norms are LayerNorms with biases,
 * as Phi-3.5-MoE's own modeling_phimoe.py and vLLM's PhiMoEDecoderLayer build them; transformers' 4a435530 built
 * weight-only RMSNorms and left out 32 x 2 x 4,096 = 262,144 of them). */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(HF "phi-3.5-moe-instruct.json", NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(41873153344));
    assert_true(vc_model_parameters(m) >= INT64_C(41850000000) && vc_model_parameters(m) < INT64_C(41950000000));
    vc_model_free(m);
    /* the tiny one: embeddings 64,000, lm_head 64,000 + 1,000, final LayerNorm 128; a layer: q 4,096 + 64, k 2,048 + 32,
     * v 2,048 + 32, o 4,096 + 64, two LayerNorms 2 x (64 + 64), router 512, experts 8 x (64 x 64 + 64 x 32) = 49,152:
     * 62,400; x 2 */
    assert_int_equal(count_of(TINY "}"), 64000 + 65000 + 128 + 2 * 62400);
    /* without the biases (PhimoeConfig's defaults: attention_bias and lm_head_bias false) */
    assert_int_equal(count_of("{\"model_type\":\"phimoe\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":32,"
                              "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                              "\"num_local_experts\":8,\"max_position_embeddings\":4096}"),
                     64000 + 65000 + 128 + 2 * 62400 - 1000 - 2 * 192);
    /* num_key_value_heads null: num_attention_heads (PhimoeConfig.__init__): k_proj and v_proj 2 x (64 x 64 + 64) */
    assert_int_equal(count_of(BASE ",\"num_key_value_heads\":null,\"num_local_experts\":8}"), 64000 + 65000 + 128 + 2 * (62400 + 2 * (2048 + 32)));
    /* absent: PhimoeConfig's 8, which 4 heads cannot share: exit 2 naming the key */
    vc_model *m8 = NULL;
    assert_int_equal(load_js(BASE ",\"num_local_experts\":8}", &m8, &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "num_key_value_heads");
    assert_int_equal(emitted(TINY "}", "\"style\":\t\"phimoe\""), 1);
    assert_int_equal(emitted(TINY ",\"input_jitter_noise\":0.01}", "\"input_jitter_noise\":\t0.01"), 1);
    /* the layers' input_layernorm and post_attention_layernorm (written once: the two identical layers are one
     * Sequential with repeat 2) and model.norm are LayerNorms, no RMSNorm */
    assert_int_equal(emitted(TINY "}", "\"type\":\t\"LayerNorm\""), 2 + 1);
    assert_int_equal(emitted(TINY "}", "\"type\":\t\"RMSNorm\""), 0);
    /* the checkpoint's longrope form is read and validated */
    assert_int_equal(count_of(TINY ",\"rope_scaling\":{\"type\":\"longrope\",\"short_factor\":[1,1,1,1,1,1,1,1],"
                              "\"long_factor\":[1,1,1,1,1,1,1,1],\"short_mscale\":1.2,\"long_mscale\":1.2,"
                              "\"original_max_position_embeddings\":4096}}"),
                     64000 + 65000 + 128 + 2 * 62400);
}

/* Every bad or inconsistent value of the keys hf_phimoe.c reads exits 2 naming the key. */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        {"\"num_experts_per_tok\":3", "num_experts_per_tok"}, /* sparsemixer picks two */
        {"\"num_experts_per_tok\":1", "num_experts_per_tok"},
        {"\"lm_head_bias\":1", "lm_head_bias"},
        {"\"input_jitter_noise\":-0.1", "input_jitter_noise"},
        {"\"input_jitter_noise\":\"0.01\"", "input_jitter_noise"},
        {"\"router_jitter_noise\":-1", "router_jitter_noise"},
        {"\"output_router_logits\":true", "output_router_logits"},
        {"\"output_router_logits\":0", "output_router_logits"},
        {"\"hidden_act\":\"gelu_new\"", "hidden_act"},
        {"\"rope_scaling\":{\"type\":\"longrope\",\"short_factor\":[1,1,1,1,1,1,1,1],\"long_factor\":[1,1,1,1,1,1,1,1],"
         "\"long_mscale\":1.2,\"original_max_position_embeddings\":4096}", "rope_scaling.short_mscale"},
    };
    char js[1024];
    vc_model *m1 = NULL;
    vc_error e1;
    assert_int_equal(load_js(BASE ",\"num_key_value_heads\":2,\"num_local_experts\":1}", &m1, &e1), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&e1), "num_experts_per_tok"); /* top-2 of one expert */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, TINY ",%s}", bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    char path[] = "/tmp/vc_phimoe_XXXXXX";
    fam_write(path, TINY ",\"num_experts_per_tok\":4}");
    char args[256];
    snprintf(args, sizeof args, "%s", path);
    assert_usage(args, "num_experts_per_tok");
    remove(path);
    /* transformers 4.x's per-expert loop is not written: the option, or a 4.x release's default, is refused */
    assert_usage(HF "phi-3.5-moe-instruct.json --experts-implementation per_expert", "--experts-implementation");
    assert_usage(HF "phi-3.5-moe-instruct.json --transformers 4.46", "--experts-implementation");
}

/* generate: DynamicCache keeps full keys and values (2 kv heads x 16 per layer), fp32 by default: prompt 16 +
 * 4 new tokens, 19 cached after the last step, x 2 (k, v) x 2 layers x 2 heads x 16 x 4 B */
static void test_generate(void **state)
{
    (void)state;
    assert_int_equal(fam_kv_cache(TINY "}", 16, 4), 19 * 2 * 2 * 2 * 16 * 4);
}

/* --serve (vLLM's phimoe.py: QKVParallelLinear over the heads, FusedMoE over intermediate_size / tp): on 8 H100 a
 * rank holds 1 of the 8 kv heads, a KV block of 16 tokens 32 layers x 2 x 1 x 128 x 2 B x 16 = 262,144 B; the
 * bf16 weights do not fit one H100 */
static void test_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "phi-3.5-moe-instruct.json --serve --gpu h100-80gb --tp 8 --gpus 8");
    assert_non_null(strstr(out, "256.0 KiB per block"));
    assert_usage(HF "phi-3.5-moe-instruct.json --serve --gpu h100-80gb", "no memory is left for the KV cache");
}

/* --ep and --moe-imbalance: Megatron-Core's MoELayer on 8 expert-parallel ranks (layers/moe_ep.c) */
static void test_ep(void **state)
{
    (void)state;
    char path[] = "/tmp/vc_phimoe_ep_XXXXXX";
    fam_write(path, TINY "}");
    char a[256];
    snprintf(a, sizeof a, "%s --parallel ddp --gpus 8 --ep 8", path);
    long long even = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --parallel ddp --gpus 8 --ep 8 --moe-imbalance 2", path);
    long long busy = cli_json_field(a, "\"peak_allocated\": ");
    assert_true(busy > even);
    remove(path);
}

/* sparsemixer under gradient checkpointing (TINY, bf16, --grad-ckpt): PhimoeMultiplier.backward returns None for
 * multiplier and masked_gates, which require grad (the gather's and the softmax's outputs), and autograd still runs
 * their producers' nodes with undefined gradients once their consumers have run (torch/csrc/autograd/engine.cpp
 * @ e1253a95 Engine::evaluate_function queues every next edge whatever the output; release_variables after each
 * node), so gather, softmax, masked_fill and the second pick's scatter release their saved index, result and mask in
 * the layer's backward (torch 1.13 here: GatherBackward0, SoftmaxBackward0 and MaskedFillBackward0 run, their
 * grad_outputs None, in a hooked backward of the replica's PhimoeMultiplier). Counted in the trace: each layer's two
 * masks freed by their masked_fill nodes (2 x 2), none of the layers' activations left to the graph's teardown
 * (which kept 2 layers x 2 picks x (mask, softmax result, index) = 12 when those nodes were taken never to run). */
static void test_undef_release(void **state)
{
    (void)state;
    char path[] = "/tmp/vc_phimoe_undef_XXXXXX";
    fam_write(path, TINY "}");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s --seq 64 -b 2 -o sgd -p bf16 --attention math --workspace 0 --grad-ckpt --trace",
             VC_CLI, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    int masks = 0, teardown = 0;
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "backward  free  act", 19)) continue;
        masks += strstr(line, " masked_fill") != NULL;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == ' ')) line[--n] = 0;
        teardown += n >= 2 && !strcmp(line + n - 2, " -");
    }
    assert_int_equal(pclose(p), 0);
    remove(path);
    assert_int_equal(masks, 2 * 2);
    assert_int_equal(teardown, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_ep),
        cmocka_unit_test(test_undef_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
