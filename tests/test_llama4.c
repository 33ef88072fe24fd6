/*
 * test_llama4.c — Llama 4's memory (issue 31; src/hf/hf_llama4.c, src/hf/hf_layers.c, layers/llm.c
 * SparseMoE style llama4 and RotaryAttention's llama4 options, src/engine/generate.c
 * vc_kv_update_chunked).
 *
 * 1. The layers a config becomes, as modeling_llama4.py @ 000c33fd builds them: Llama4TextMoe in
 *    config.moe_layers, Llama4TextMLP elsewhere; apply_rotary_emb, the L2 qk norm and the chunked
 *    cache on the rope layers, the temperature tuning on the NoPE ones.
 * 2. The active parameters (hf_llama4.c), by hand.
 * 3. Scout's KV cache under --mode generate (transformers' DynamicCache(config): a
 *    DynamicSlidingWindowLayer of attention_chunk_size on each chunked layer) and under --serve
 *    (vLLM: every token on every layer), derived by hand.
 * 4. llama4's vision tower and projector, counted (frozen, not run), by hand; --image refused.
 * 5. What is refused: --ep, --moe-imbalance, per_expert.
 * The activations are checked against llama4_replica.py's measured cases (llm311-llm326,
 * bench/accuracy/llm/measured.json) by CTest's llm_train_measured / generate_measured.
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
#include <cjson/cJSON.h>

#include "cli_run.h"
#include "hf_arch.h" /* vc__hf_llama4_parameters */
#include "hf_text_config.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define SCOUT HF "llama-4-scout-17b-16e-instruct.json"
#define MAVERICK HF "llama-4-maverick-17b-128e-instruct.json"
#define SMALL VC_TEST_DATA "/../../bench/accuracy/llm/configs/llama4_small.json"

/* The CLI's -f json for args, parsed (the caller frees). */
static cJSON *cli_json(const char *args)
{
    cli_run r;
    char a[1024];
    snprintf(a, sizeof a, "%s -f json", args);
    run(&r, a);
    if (r.status != 0) fail_msg("vramcalc %s: exit %d: %s", a, r.status, r.err);
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    return j;
}

static int64_t num_at(const cJSON *j, const char *obj, const char *key)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, obj);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) fail_msg("no number %s.%s", obj, key);
    return (int64_t)v->valuedouble;
}

/* Every layer object named `name` (at any depth of the Sequentials), in order. */
static int find_layers(const cJSON *arr, const char *name, const cJSON **out, int max, int n)
{
    for (const cJSON *l = arr ? arr->child : NULL; l; l = l->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(l, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name) && n < max) out[n++] = l;
        n = find_layers(cJSON_GetObjectItemCaseSensitive(l, "layers"), name, out, max, n);
    }
    return n;
}

static bool has(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k) != NULL; }
static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* llama4_small.json: 4 layers, interleave_moe_layer_step 2 (moe_layers 1, 3: range(1, 4, 2)),
 * no_rope_layer_interval 4 (layer 3 NoPE: (3 + 1) % 4 == 0), use_qk_norm, attention_chunk_size 128,
 * attn_temperature_tuning. The generated model writes its decoder layers in runs of identical ones
 * (hf_layers.c layer_stack): layers 0, 1, 2 differ from their neighbours (dense / MoE), so each run is
 * one layer and the names below appear once per layer. */
static void test_layers(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(SMALL, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    cJSON *j = cJSON_Parse(vc_model_generated_json(m));
    assert_non_null(j);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
    const cJSON *f[8];
    /* Llama4TextDecoderLayer.feed_forward: Llama4TextMoe on layers 1 and 3 */
    assert_int_equal(find_layers(layers, "feed_forward", f, 8, 0), 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(str_of(f[i], "type"), "SparseMoE");
        assert_string_equal(str_of(f[i], "style"), "llama4");
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(f[i], "num_experts")->valuedouble, 8);
        /* shared_expert = Llama4TextMLP(config): intermediate_size (64), not intermediate_size_mlp */
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(f[i], "shared_expert_intermediate_size")->valuedouble, 64);
    }
    /* Llama4TextMLP(intermediate_size_mlp = 128) on layers 0 and 2 */
    assert_int_equal(find_layers(layers, "feed_forward.gate_proj", f, 8, 0), 2);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(f[0], "out_features")->valuedouble, 128);
    /* the attention of layers 0, 1, 2 (rope) and 3 (NoPE) */
    assert_int_equal(find_layers(layers, "self_attn.attention", f, 8, 0), 4);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(str_of(f[i], "rope_style"), "llama4");
        assert_true(has(f[i], "l2_qk_norm") && !has(f[i], "temperature_tuning"));
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(f[i], "attention_chunk_size")->valuedouble, 128);
    }
    assert_false(has(f[3], "rope_style") || has(f[3], "l2_qk_norm") || has(f[3], "attention_chunk_size"));
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(f[3], "rotary_dim")->valuedouble, 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f[3], "temperature_tuning")));
    /* Llama4TextRotaryEmbedding: freqs_cis, complex */
    assert_int_equal(find_layers(layers, "model.rotary_emb", f, 8, 0), 1);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f[0], "complex")));
    cJSON_Delete(j);
    vc_model_free(m);
}

/* Active parameters per token (hf_llama4.c), by hand from the module shapes (the derivation of the
 * totals is test_hf test_llama4's): one expert's gate, up and down are 3 x 5120 x 8192 = 125,829,120;
 * Scout leaves out 15 of 16 in each of 48 layers: 107,769,861,120 - 48 x 15 x 125,829,120 =
 * 17,172,894,720 ("17B active" on the model card); Maverick 127 of 128 in 24 layers:
 * 400,711,848,960 - 24 x 127 x 125,829,120 = 17,184,691,200. */
static void test_active(void **state)
{
    (void)state;
    static const struct { const char *file; int64_t total, active; } c[] = {
        {SCOUT, INT64_C(107769861120), INT64_C(17172894720)},
        {MAVERICK, INT64_C(400711848960), INT64_C(17184691200)},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        assert_text_config_params(c[i].file, "llama4", vc__hf_llama4_parameters, c[i].total, c[i].active);
}

/* Scout's cache in bf16 under --mode generate. One layer's keys and values per token: 2 x 8 kv heads
 * x 128 x 2 bytes = 4,096 B. no_rope_layers empty: every 4th layer (3, 7, ..., 47) is NoPE and
 * "full_attention", the other 36 "chunked_attention" with attention_chunk_size 8192
 * (Llama4TextConfig.__post_init__), each a DynamicSlidingWindowLayer(8192) in DynamicCache(config)
 * (cache_utils.py @ 004999d9).
 *  - prompt 1024 + 256 new: 1,279 tokens fed, under the chunk: every layer keeps all,
 *    48 x 1,279 x 4,096 = 251,461,632 B;
 *  - prompt 8192 + 1808 new: 9,999 tokens fed. The 12 full layers keep all: 12 x 9,999 x 4,096 =
 *    491,470,848; a chunked layer's last update cats the 8,191 kept tokens and the new one and keeps
 *    a view of the last 8,191, the 8,192-token storage alive: 36 x 8,192 x 4,096 = 1,207,959,552;
 *    1,699,430,400 B in all. */
static void test_generate_cache(void **state)
{
    (void)state;
    cJSON *j = cli_json(SCOUT " -p bf16 -m generate --prompt 1024 --new-tokens 256");
    assert_int_equal(num_at(j, "generate", "kv_cache"), INT64_C(251461632));
    assert_int_equal(num_at(j, "generate", "kv_tokens"), 1279);
    cJSON_Delete(j);
    j = cli_json(SCOUT " -p bf16 -m generate --prompt 8192 --new-tokens 1808");
    assert_int_equal(num_at(j, "generate", "kv_cache"), INT64_C(491470848) + INT64_C(1207959552));
    cJSON_Delete(j);
}

/* Scout served by vLLM on 8 H100s (--tp 8): one rank's kv heads 8 / 8 = 1, K and V of 128 in bf16:
 * 512 B per token and layer. The chunked local attention layers do not shrink the pool: vLLM turns
 * off its hybrid KV cache manager for chunked local attention by default and unify_hybrid_kv_cache_specs
 * makes their ChunkedLocalAttentionSpec a FullAttentionSpec (src/engine/generate.c
 * vc_kv_update_chunked): a block of 16 tokens holds all 48 layers, 16 x 48 x 512 = 393,216 B, and a
 * request of 1024 + 256 tokens takes cdiv(1280, 16) = 80 blocks. */
static void test_serve(void **state)
{
    (void)state;
    cJSON *j = cli_json(SCOUT " -p bf16 --serve --gpu h100-80gb --tp 8 --gpus 8");
    assert_int_equal(num_at(j, "serve", "page_bytes"), 393216);
    int64_t blocks = num_at(j, "serve", "blocks");
    assert_int_equal(blocks, num_at(j, "serve", "kv_cache") / 393216);
    assert_int_equal(num_at(j, "serve", "tokens"), blocks * 16);
    assert_int_equal(num_at(j, "serve", "concurrency"), blocks / 80);
    /* the weights: 107,769,861,120 bf16 parameters over 8 ranks, the replicated router and norms */
    assert_true(num_at(j, "serve", "weights") > INT64_C(107769861120) * 2 / 8);
    /* the profiling run's MoE layers are vLLM's FusedMoE (layers/llm.c moe_llama4_vllm_emit): no
     * [E x tokens, H] tensor, whose one copy transformers' Llama4TextMoe would make 16 x 8,192 x 5,120 x 2 B
     * = 1,342,177,280 B at the profile's 8,192 tokens; the language model's activations stay below it (the
     * encoder profiling's dummy pixel values and outputs, held through that run, aside: src/engine/serve_mm.c) */
    const cJSON *serve = cJSON_GetObjectItemCaseSensitive(j, "serve");
    const int64_t held = num_at(serve, "mm_encoder", "outputs") + num_at(serve, "mm_encoder", "inputs");
    assert_int_equal(held, INT64_C(25067520) + INT64_C(11515392)); /* tests/test_serve_mm.c llama4: one dummy item */
    assert_true(num_at(j, "serve", "profile_peak") - num_at(j, "serve", "weights") - held < INT64_C(1342177280));
    cJSON_Delete(j);
}

/* llama4 is Llama4ForConditionalGeneration: its vision_model and multi_modal_projector are loaded (frozen,
 * never run). By hand from modeling_llama4.py @ 000c33fd for the checkpoints' vision_config (hidden 1408,
 * intermediate 5632, 34 layers, patch 14 over 3 channels, image 336, projector dims 4096, vision_output_dim
 * 4096) and the text hidden size 5120:
 *   patch_embedding.linear 3 x 14 x 14 x 1,408 = 827,904; class_embedding 1,408;
 *   positional_embedding_vlm ((336 // 14)^2 + 1) x 1,408 = 577 x 1,408 = 812,416; layernorm_pre/post 5,632;
 *   a Llama4VisionEncoderLayer: q/k/v/o 4 x (1,408^2 + 1,408) = 7,935,488, fc1 1,408 x 5,632 + 5,632 =
 *   7,935,488, fc2 5,632 x 1,408 + 1,408 = 7,931,264, two LayerNorms 5,632: 23,807,872, x 34 = 809,467,648;
 *   vision_adapter.mlp fc1 5,632 x 4,096 + fc2 4,096 x 4,096 = 39,845,888;
 *   multi_modal_projector.linear_1 4,096 x 5,120 = 20,971,520;
 *   in all 871,932,416 (llama4_params.py counts the same modules on the meta device to it).
 * Scout: 107,769,861,120 + 871,932,416 = 108,641,793,536, of which the language model's trainable. */
static void test_vision(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(SCOUT, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(108641793536));
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(107769861120));
    vc_model_free(m);
    /* bad vision_config keys name the key; no image is run */
    assert_usage(SCOUT " --image 336x336", "--image: llama4: Llama4VisionModel's forward");
    char js[256];
    static const struct { const char *vc, *path; } bad[] = {
        {"{\"num_attention_heads\":15}", "vision_config.num_attention_heads"},
        {"{\"patch_size\":0}", "vision_config.patch_size"},
        {"{\"image_size\":[336,336]}", "vision_config.image_size"},
        {"{\"patch_size\":500}", "vision_config.patch_size"},
        {"[]", "vision_config"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, "{\"model_type\":\"llama4\",\"text_config\":{},\"vision_config\":%s}", bad[i].vc);
        assert_int_equal(vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err), VC_ERR_MODEL);
        if (strcmp(err.path, bad[i].path)) fail_msg("%s: %s: %s", js, err.path, err.msg);
    }
    /* vision_config absent: Llama4VisionConfig()'s defaults (hidden 768, image 448, vision_output_dim 7680):
     * patch 588 x 768 = 451,584; class 768; positions (32^2 + 1) x 768 = 787,200; norms 3,072; a layer
     * 4 x (768^2 + 768) + (768 x 5,632 + 5,632) + (5,632 x 768 + 768) + 3,072 = 11,022,592, x 34 =
     * 374,768,128; adapter 39,845,888; projector 7,680 x 5,120 = 39,321,600: 455,178,240 over
     * Llama4TextConfig()'s 107,769,861,120 */
    snprintf(js, sizeof js, "{\"model_type\":\"llama4\",\"text_config\":{}}");
    assert_int_equal(vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err), VC_OK);
    assert_int_equal(vc_model_parameters(m), INT64_C(107769861120) + INT64_C(455178240));
    vc_model_free(m);
}

/* What is not modelled is refused naming the option. */
static void test_refused(void **state)
{
    (void)state;
    /* Llama4TextMoe runs every expert on every token: no dispatcher to split over expert-parallel ranks */
    assert_usage(SMALL " --seq 64 --ep 2 --gpus 2", "--ep: expert parallelism is not modelled for style llama4");
    /* an activation the experts' kind does not run */
    vc_model *m = NULL;
    vc_error err;
    const char *js = "{\"model_type\":\"llama4_text\",\"hidden_act\":\"gelu_new\"}";
    assert_int_equal(vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err), VC_ERR_MODEL);
    assert_string_equal(err.path, "hidden_act");
    /* the routing changes no allocation */
    assert_usage(SMALL " --seq 64 --moe-imbalance 2", "--moe-imbalance");
    /* Llama4TextExperts is stacked: no per-expert loop */
    assert_usage(SMALL " --seq 64 --experts-implementation per_expert", "--experts-implementation");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_active),
        cmocka_unit_test(test_generate_cache),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_vision),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
