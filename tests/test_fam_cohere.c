/*
 * test_fam_cohere.c — the cohere and cohere2 family rows (issue 31): Command R / R+ 08-2024 (CohereForCausalLM),
 * Command R7B 12-2024 and Command A 03-2025 (Cohere2ForCausalLM).
 *
 * Sources: huggingface/transformers @ 0233e509531ace915c8241b4c16c8032a583279c, models/cohere/modeling_cohere.py
 * and models/cohere2/modeling_cohere2.py; configuration_cohere.py / configuration_cohere2.py @ 008e5743:
 *  - CohereLayerNorm: weight only (no bias), float32, mean-subtracted (HFRMSNorm variant "cohere");
 *  - CohereDecoderLayer: one input_layernorm feeds self_attn and mlp, residual + attn + mlp (no
 *    post_attention_layernorm);
 *  - CohereAttention: use_qk_norm's q_norm / k_norm CohereLayerNorm((heads, head_dim)): a weight per head
 *    (RotaryAttention qk_norm_heads); apply_rotary_pos_emb's q.float(), k.float() (rope_upcast);
 *  - CohereForCausalLM: logits * logit_scale (a Scale layer), tie_word_embeddings True by default;
 *  - Cohere2: layer_types from sliding_window_pattern (4: three sliding layers, then a full one), rotary only on
 *    the sliding layers (the full ones NoPE: rotary_dim 0).
 * tests/data/hf/c4ai-command-*.json are written from the model cards and the configuration classes' defaults (no
 * network here: the checkpoints' config.json files were not read); their parameter counts below are exact counts
 * from the modeling source by hand, which agree with the published sizes (32B, 104B, 7B / 8.03B, 111B).
 * The measured peaks are bench/accuracy/llm/measured.json's cohere_small / cohere2_small cases (cohere_replica.py,
 * written from the same files, measured with the accuracy harness's allocator counter on torch 1.13 CPU).
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

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"
#include "cli_run.h"
#include "fam_hf.h"

#define HF VC_TEST_DATA "/hf/"

/* a tiny Cohere by hand: vocab 1000, hidden 64, intermediate 128, 2 layers, 4 heads / 2 kv heads of 16 */
#define TINY "{\"model_type\":\"cohere\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
             "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define TINY2W "{\"model_type\":\"cohere2\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
               "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define TINY2 TINY2W ",\"sliding_window\":8"

/* The four checkpoints, CohereForCausalLM's / Cohere2ForCausalLM's named_parameters() by hand (embed_tokens tied
 * to lm_head, no biases, one CohereLayerNorm weight of hidden a layer and model.norm's):
 * Command R 08-2024 (hidden 8192, intermediate 24576, 40 layers, 64 heads / 8 kv of 128): a layer q 8192^2 +
 * k, v 2 x 8192 x 1024 + o 8192^2 + MLP 3 x 8192 x 24576 + 8192 = 754,982,912; x 40 + 256000 x 8192 + 8192 =
 * 32,296,476,672 (published: 32B; 32.3B on the hub);
 * Command R+ 08-2024 (12288, 33792, 64 layers, 96 / 8 heads of 128, use_qk_norm): a layer 2 x 12288^2 +
 * 2 x 12288 x 1024 + 3 x 12288 x 33792 + 12288 + q_norm 96 x 128 + k_norm 8 x 128 = 1,572,889,600; x 64 +
 * 256000 x 12288 + 12288 = 103,810,674,688 (published: 104B);
 * Command R7B 12-2024 (4096, 14336, 32 layers, 32 / 8 heads of 128): 218,107,904 a layer; x 32 + 256000 x 4096 +
 * 4096 = 8,028,033,024 (published: 7B, 8.03B on the hub);
 * Command A 03-2025 (12288, 36864, 64 layers, 96 / 8 heads): 1,686,122,496 a layer; x 64 + 3,145,728,000 + 12288 =
 * 111,057,580,032 (published: 111B). */
static void test_counts(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int64_t n;
    } c[] = {
        {HF "c4ai-command-r-08-2024.json", INT64_C(32296476672)},
        {HF "c4ai-command-r-plus-08-2024.json", INT64_C(103810674688)},
        {HF "c4ai-command-r7b-12-2024.json", INT64_C(8028033024)},
        {HF "c4ai-command-a-03-2025.json", INT64_C(111057580032)},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        vc_model *m = NULL;
        vc_error err;
        if (vc_model_load_file_hf(c[i].file, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
        assert_int_equal(vc_model_parameters(m), c[i].n);
        vc_model_free(m);
    }
    /* the tiny one: embeddings 64,000 (tied), model.norm 64; a layer q 4,096, k 2,048, v 2,048, o 4,096, MLP
     * 3 x 64 x 128 = 24,576, input_layernorm 64: 36,928 */
    assert_int_equal(count_of(TINY "}"), 64000 + 64 + 2 * 36928);
    /* use_qk_norm: q_norm (4, 16) 64 and k_norm (2, 16) 32 a layer */
    assert_int_equal(count_of(TINY ",\"use_qk_norm\":true}"), 64000 + 64 + 2 * (36928 + 96));
    /* attention_bias: q/k/v/o biased, 64 + 32 + 32 + 64 a layer; tie_word_embeddings false: lm_head's 64,000 */
    assert_int_equal(count_of(TINY ",\"attention_bias\":true}"), 64000 + 64 + 2 * (36928 + 192));
    assert_int_equal(count_of(TINY ",\"tie_word_embeddings\":false}"), 2 * 64000 + 64 + 2 * 36928);
    /* CohereConfig() from model_type alone: vocab 256000, hidden 8192, intermediate 22528, 40 layers, 64 heads (kv
     * None: 64): a layer 4 x 8192^2 + 3 x 8192 x 22528 + 8192 = 822,091,776; x 40 + 256000 x 8192 + 8192 */
    assert_int_equal(count_of("{\"model_type\":\"cohere\"}"), INT64_C(822091776) * 40 + INT64_C(2097152000) + 8192);
    /* cohere2: the same modules, no q/k norm; 4 layers */
    assert_int_equal(count_of(TINY2 "}"), 64000 + 64 + 4 * 36928);
}

/* The layers written: the parallel block (no post_attention_layernorm, one Add of residual, attention and MLP),
 * CohereLayerNorm on the layers' norm and model.norm, the per-head q/k norm weights, the float32 rotation, the
 * logit scale; cohere2: three sliding layers with rotary (a Sequential repeated 3) and a NoPE full layer */
static void test_emitted(void **state)
{
    (void)state;
    static const char js[] = TINY ",\"use_qk_norm\":true}";
    assert_int_equal(emitted(js, "post_attention_layernorm"), 0);
    assert_int_equal(emitted(js, "\"variant\":\t\"cohere\""), 2);
    assert_int_equal(emitted(js, "\"qk_norm_variant\":\t\"cohere\""), 1);
    assert_int_equal(emitted(js, "\"qk_norm_heads\":\ttrue"), 1);
    assert_int_equal(emitted(js, "\"rope_upcast\":\ttrue"), 1);
    assert_int_equal(emitted(js, "\"name\":\t\"logit_scale\""), 1);
    assert_int_equal(emitted(js, "\"factor\":\t0.0625"), 1);
    assert_int_equal(emitted(js, "\"inputs\":\t[\"input\", \"self_attn.o_proj\", \"mlp.down_proj\"]"), 1);
    assert_int_equal(emitted(TINY "}", "qk_norm"), 0); /* use_qk_norm False: CohereConfig's default */
    static const char j2[] = TINY2 "}";
    assert_int_equal(emitted(j2, "\"repeat\":\t3"), 1);
    assert_int_equal(emitted(j2, "\"sliding_window\":\t8"), 1);
    assert_int_equal(emitted(j2, "\"rotary_dim\":\t0"), 1); /* the full layer (i + 1) % 4 == 0 */
    assert_int_equal(emitted(j2, "\"rope_upcast\":\ttrue"), 1);
    assert_int_equal(emitted(j2, "\"factor\":\t0.0625"), 1);
    /* layer_types given: the config's own list (a full layer first, NoPE; then three sliding with rotary) */
    assert_int_equal(emitted(TINY2 ",\"layer_types\":[\"full_attention\",\"sliding_attention\",\"sliding_attention\","
                                   "\"sliding_attention\"]}", "\"rotary_dim\":\t0"), 1);
    /* sliding_window null: Cohere2Attention's sliding_window None on every layer, so no layer rotates */
    assert_int_equal(emitted(TINY2W ",\"sliding_window\":null}", "\"rope_upcast\":\ttrue"), 0);
}

/* Every bad value of the keys the rows read exits 2 naming the key (in the library and the CLI). */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *base, *kv, *key;
    } bad[] = {
        {TINY, "\"logit_scale\":null", "logit_scale"}, /* logits * None */
        {TINY, "\"logit_scale\":0", "logit_scale"},
        {TINY, "\"logit_scale\":\"x\"", "logit_scale"},
        {TINY, "\"layer_norm_eps\":null", "layer_norm_eps"}, /* variance + None */
        {TINY, "\"layer_norm_eps\":-1", "layer_norm_eps"},
        {TINY, "\"use_qk_norm\":\"yes\"", "use_qk_norm"},
        {TINY, "\"attention_bias\":2", "attention_bias"},
        {TINY, "\"head_dim\":\"16\"", "head_dim"},
        {TINY, "\"num_key_value_heads\":3", "num_key_value_heads"},
        {TINY2, "\"logit_scale\":null", "logit_scale"},
        {TINY2, "\"sliding_window\":-1", "sliding_window"},
        {TINY2, "\"sliding_window_pattern\":0", "sliding_window_pattern"},
        {TINY2, "\"layer_types\":[\"sliding_attention\"]", "layer_types"},
        {TINY2, "\"layer_types\":[\"a\",\"b\",\"c\",\"d\"]", "layer_types"},
        {TINY2, "\"tie_word_embeddings\":\"no\"", "tie_word_embeddings"},
    };
    char js[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, "%s,%s}", bad[i].base, bad[i].kv);
        fam_refused(js, bad[i].key);
    }
    char path[] = "/tmp/vc_cohere_XXXXXX";
    fam_write(path, TINY ",\"logit_scale\":null}");
    assert_usage(path, "logit_scale");
    remove(path);
}

/* -m generate, bf16, an 8,000-token prompt and 16 new tokens on Command R7B: the 8 full layers keep 8,015 tokens
 * (DynamicLayer: the last token not yet cached), the 24 sliding layers 4,096 (DynamicSlidingWindowLayer.update,
 * cache_utils.py @ 004999d9: the last sliding_window - 1, and a step's cat adds one); a token of a layer is K and V
 * of 8 kv heads x 128 in bf16, 4,096 B: 8 x 8,015 x 4,096 + 24 x 4,096 x 4,096 = 665,288,704 B. Command R keeps
 * every token in its 40 layers: 40 x 1,015 x 4,096 */
static void test_generate(void **state)
{
    (void)state;
    assert_int_equal(cli_json_field(HF "c4ai-command-r7b-12-2024.json -m generate --prompt 8000 --new-tokens 16 -p bf16",
                                    "\"kv_cache\": "), 665288704LL);
    assert_int_equal(cli_json_field(HF "c4ai-command-r-08-2024.json -m generate --prompt 1000 --new-tokens 16 -p bf16",
                                    "\"kv_cache\": "), 40LL * 1015 * 4096);
}

/* --serve (vLLM's commandr.py @ 1f7c5555, CohereForCausalLM): Command R's KV block of 16 tokens is 40 layers x 2 x
 * 8 kv heads x 128 x 2 B x 16 = 2,621,440 B; Command R+ on 4 ranks 64 x 2 x 2 x 128 x 2 x 16 = 1 MiB. What vLLM's
 * model does not load is refused naming the key (qkv_proj / o_proj without bias, head_dim = hidden / heads, the
 * logits from embed_tokens).
 * cohere2 (vllm-project/vllm#11203 and #11583: CohereForCausalLM, per_layer_sliding_window 4096 on 3 layers of 4,
 * None on every 4th; src/hf/hf.c) is paged as vLLM's hybrid KV cache manager pages sliding and full layers (no vLLM
 * installed: derived by hand from vllm/v1/core/kv_cache_utils.py and kv_cache_interface.py as src/engine/serve.c
 * cites them). Command R7B: 24 sliding and 8 full layers of 2 x 8 kv heads x 128 x 2 B = 4,096 B a token, a page of
 * 16 tokens 65,536 B; 24 >= 1.5 x 8, so group_size 8 (_get_kv_cache_groups_uniform_page_size): 1 full and 3 sliding
 * groups, a block 8 x 65,536 = 524,288 B; tokens = blocks // 4 x 16; a request of 1,024 + 256 tokens needs
 * cdiv(1280, 16) = 80 blocks per full group and cdiv(min(4096 - 1 + 8192, 1280), 16) + 1 = 81 per sliding group
 * (SlidingWindowSpec.max_memory_usage_bytes): 80 + 3 x 81 = 323; a request of 16,000 + 256: 1,016 and
 * cdiv(4095 + 8192, 16) + 1 = 769, 1,016 + 3 x 769 = 3,323. Command A on 4 H100 ranks (64 layers, 48 sliding, 16
 * full; 8 kv heads over 4 ranks: 2 a rank): a token 2 x 2 x 128 x 2 = 1,024 B, a page 16,384 B, group_size 16, a
 * block 16 x 16,384 = 262,144 B, 1 + 3 groups */
static void test_serve(void **state)
{
    (void)state;
    assert_non_null(strstr(cli_output(HF "c4ai-command-r-08-2024.json --serve --gpu h100-80gb"), "2.5 MiB per block"));
    assert_non_null(strstr(cli_output(HF "c4ai-command-r-plus-08-2024.json --serve --gpu h200 --tp 4 --gpus 4"),
                           "1.0 MiB per block"));
    static const struct { const char *args; int64_t page, need; } c[] = {
        {HF "c4ai-command-r7b-12-2024.json --serve --gpu h100-80gb", 524288, 323},
        {HF "c4ai-command-r7b-12-2024.json --serve --gpu h100-80gb --prompt 16000 --new-tokens 256", 524288, 3323},
        {HF "c4ai-command-a-03-2025.json --serve --gpu h100-80gb --tp 4 --gpus 4", 262144, 323},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        assert_int_equal(cli_json_num(c[i].args, "serve", "page_bytes"), c[i].page);
        const int64_t pool = cli_json_num(c[i].args, "serve", "kv_cache"), blocks = cli_json_num(c[i].args, "serve", "blocks");
        assert_true(pool > 0);
        assert_int_equal(blocks, pool / c[i].page);
        assert_int_equal(cli_json_num(c[i].args, "serve", "tokens"), blocks / 4 * 16);
        assert_int_equal(cli_json_num(c[i].args, "serve", "concurrency"), blocks / c[i].need);
    }
    /* Command A's 111B in bf16 do not fit one H100 */
    assert_usage(HF "c4ai-command-a-03-2025.json --serve --gpu h100-80gb", "no memory is left for the KV cache");
    static const char *const kv[][2] = {
        {"\"attention_bias\":true", "attention_bias"},
        {"\"tie_word_embeddings\":false", "tie_word_embeddings"},
        {"\"head_dim\":20", "head_dim"},
    };
    char body[512], args[256];
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++) {
        char path[] = "/tmp/vc_cohere_serve_XXXXXX";
        snprintf(body, sizeof body, TINY ",%s}", kv[i][0]);
        fam_write(path, body);
        snprintf(args, sizeof args, "%s --serve --gpu h100-80gb", path);
        assert_usage(args, kv[i][1]);
        remove(path);
    }
}

/* The measured cases (bench/accuracy/llm/measured.json, cohere_small with use_qk_norm and cohere2_small with
 * sliding_window 48: training full, --grad-ckpt, LoRA r 8 on q_proj / v_proj, --mode infer) within 0.1% */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0.0 --lora-targets q_proj,v_proj"
    static const cli_measured c[] = {
        {"cohere_small.json --seq 64 -b 2 -o adamw -p bf16", 10579968},
        {"cohere_small.json --seq 96 -b 2 -o adamw -p fp32", 21212160},
        {"cohere_small.json --seq 128 -b 1 -o sgd -p bf16 --grad-ckpt", 5209088},
        {"cohere_small.json --seq 96 -b 2 -o adamw -p bf16" LQV, 9943552},
        {"cohere_small.json -m infer --seq 128 -b 2 -p bf16", 4772864},
        {"cohere2_small.json --seq 64 -b 2 -o adamw -p bf16", 9556992},
        {"cohere2_small.json --seq 96 -b 2 -o adamw -p bf16" LQV, 8970240},
    };
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_emitted),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
