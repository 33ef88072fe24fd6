/*
 * test_fam_granitemoehybrid.c — IBM Granite 4.0 (model_type granitemoehybrid; issue 31; src/hf/hf_granite4.c,
 * layers/mamba2.c, src/engine/generate.c's HybridMambaAttentionDynamicCache states).
 *
 * The configs (tests/data/hf/granite-4.0-*.json) are not the checkpoints' files, which are not in reach
 * here: each is written from the values the model cards and public copies of the config publish
 * (hidden_size, num_hidden_layers, heads, kv heads, intermediate_size, shared_intermediate_size,
 * num_local_experts, num_experts_per_tok, vocab_size, mamba_n_heads, mamba_d_head, mamba_d_state,
 * mamba_n_groups, mamba_d_conv, layer_types with "attention" at 5, 15, 25, 35 for the H models,
 * position_embedding_type) and GraniteMoeHybridConfig's defaults for the rest (configuration_granitemoehybrid.py
 * @ 008f5c8c); Granite-4.0-Micro's mamba_* keys are left to the defaults (an attention-only model reads
 * none of them); H-Small's attention positions are assumed to be H-Tiny's (36 mamba, 4 attention,
 * published); the multipliers change no size.
 *
 * 1. Parameters, by hand from the modules' shapes (modeling_granitemoehybrid.py @ 00511f5d), against the
 *    published totals: per layer input_layernorm + post_attention_layernorm 2H; a Mamba2 layer in_proj
 *    H x (Di + conv_dim + heads), conv1d conv_dim x d_conv + conv_dim (bias), dt_bias + A_log + D 3 heads,
 *    norm Di, out_proj Di x H, with Di = heads x head_dim, conv_dim = Di + 2 groups x state; an attention
 *    layer q, o H x H (heads x head_dim = H), k, v H x kv x head_dim; shared_mlp 3 x shared x H; with
 *    experts block_sparse_moe E x 3 x intermediate x H + the router E x H; embed_tokens V x H (lm_head
 *    tied), model.norm H.
 *    - H-Micro (H 2048, Di 4096, conv_dim 4352, 64 heads; 32 heads x 64, 8 kv; shared 8192; V 100352):
 *      mamba 2048 x 8512 + 4352 x 5 + 192 + 4096 + 4096 x 2048 = 25,847,232; attention 4,194,304 x 2 +
 *      1,048,576 x 2 = 10,485,760; every layer 4,096 + 50,331,648; 40 x 50,335,744 + 36 x 25,847,232 +
 *      4 x 10,485,760 + 205,520,896 + 2,048 = 3,191,396,096 (published 3.2B);
 *    - Micro (H 2560, 40 x 64 heads, 8 kv, shared 8192, V 100352, attention only): 40 x (15,728,640 +
 *      62,914,560 + 5,120) + 256,901,120 + 2,560 = 3,402,836,480 (the published count of Ollama's
 *      granite4:3b, the same weights);
 *    - H-Tiny (H 1536, Di 3072, conv_dim 3328, 48 heads; 12 x 128, 4 kv; shared 1024; 64 experts of 512,
 *      top 6): mamba 14,642,576; attention 6,291,456; every layer 3,072 + 4,718,592 + 150,994,944 +
 *      98,304 = 155,814,912; 40 x 155,814,912 + 36 x 14,642,576 + 4 x 6,291,456 + 154,140,672 + 1,536 =
 *      6,939,037,248 (published 7B, 6.9B on the card); active: 58 of 64 experts of 2,359,296 left out in
 *      40 layers: 6,939,037,248 - 5,473,566,720 = 1,465,470,528 ("A1B");
 *    - H-Small (H 4096, Di 8192, conv_dim 8448, 128 heads; 32 x 128, 8 kv; shared 1536; 72 experts of
 *      768, top 10): mamba 102,286,976; attention 41,943,040; every layer 8,192 + 18,874,368 +
 *      679,477,248 + 294,912 = 698,654,720; 40 x 698,654,720 + 36 x 102,286,976 + 4 x 41,943,040 +
 *      411,041,792 + 4,096 = 32,207,337,984 (published 32.2B); active: 62 of 72 experts of 9,437,184
 *      left out in 40 layers: 32,207,337,984 - 23,404,216,320 = 8,803,121,664 ("A9B").
 * 2. The layers H-Micro becomes: 36 Mamba2Mixer (in_proj of 8,512), 4 attention layers without rotary
 *    (position_embedding_type "nope"), shared_mlp on each; H-Small's block_sparse_moe (GraniteMoE) beside
 *    shared_mlp on each layer, their sum; Micro's rotary attention.
 * 3. --mode generate: HybridMambaAttentionDynamicCache's states, by hand: per Mamba2 layer conv_states
 *    [conv_dim, d_conv] + ssm_states [heads, head_dim, state] in the model's dtype: H-Micro fp32 36 x (4,352
 *    x 4 + 64 x 64 x 128) x 4 B = 78,004,224 B; its 4 attention layers' keys and values over 1,279 tokens:
 *    4 x 1,279 x 2 x 8 x 64 x 4 B = 20,955,136 B; bf16 half of each.
 * 4. Every bad value of a new key exits 2 naming the key; what is not modelled is refused in one line;
 *    the two new kinds (Mamba2Mixer, GraniteMoE) written by hand: their bad values named, Mamba2Mixer's
 *    parameters by hand.
 * 5. --serve of Micro on h200: vLLM's plain-decoder pages (block size 16, a block 1,310,720 B), by hand.
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
#include "hf_arch.h" /* vc__hf_granite4_parameters */
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define H_SMALL HF "granite-4.0-h-small.json"
#define H_TINY HF "granite-4.0-h-tiny.json"
#define H_MICRO HF "granite-4.0-h-micro.json"
#define MICRO HF "granite-4.0-micro.json"

static cJSON *load(const char *file)
{
    FILE *fp = fopen(file, "rb");
    assert_non_null(fp);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    cJSON *cfg = cJSON_Parse(buf);
    assert_non_null(cfg);
    return cfg;
}

/* the config read as the family's reader reads it, counted by vc__hf_granite4_parameters */
static void assert_params(const char *file, int64_t total, int64_t active)
{
    cJSON *cfg = load(file);
    vc_error err;
    rd r = {cfg, &err, "granitemoehybrid", false, 1, NULL};
    arch a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < vc__hf_nfamilies; k++)
        if (!strcmp(vc__hf_families[k].model_type, "granitemoehybrid")) a.f = &vc__hf_families[k];
    assert_non_null(a.f);
    if (vc__hf_read(&r, &a)) fail_msg("%s: %s", err.path, err.msg);
    int64_t act = 0;
    assert_int_equal(vc__hf_granite4_parameters(&a, &act), total);
    assert_int_equal(act, active);
    cJSON_Delete(cfg);
}

static cJSON *cli_json(const char *args)
{
    char a[1024];
    snprintf(a, sizeof a, "%s -f json", args);
    cJSON *j = cJSON_Parse(cli_output(a));
    assert_non_null(j);
    return j;
}

static int64_t num_at(const cJSON *j, const char *obj, const char *key)
{
    const cJSON *o = obj ? cJSON_GetObjectItemCaseSensitive(j, obj) : j;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) fail_msg("no number %s.%s", obj ? obj : "", key);
    return (int64_t)v->valuedouble;
}

static void test_parameters(void **state)
{
    (void)state;
    assert_params(H_SMALL, INT64_C(32207337984), INT64_C(8803121664));
    assert_params(H_TINY, INT64_C(6939037248), INT64_C(1465470528));
    assert_params(H_MICRO, INT64_C(3191396096), INT64_C(3191396096));
    assert_params(MICRO, INT64_C(3402836480), INT64_C(3402836480));
    /* the dense models' generated layers hold the same count (the CLI's report) */
    cJSON *j = cli_json(H_MICRO " -m infer");
    assert_int_equal(num_at(j, NULL, "parameters"), INT64_C(3191396096));
    cJSON_Delete(j);
    j = cli_json(MICRO " -m infer");
    assert_int_equal(num_at(j, NULL, "parameters"), INT64_C(3402836480));
    cJSON_Delete(j);
}

/* every layer object of `type` at any depth */
static int count_type(const cJSON *arr, const char *type, const char *name)
{
    int n = 0;
    for (const cJSON *l = arr ? arr->child : NULL; l; l = l->next) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(l, "type"), *nm = cJSON_GetObjectItemCaseSensitive(l, "name");
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(l, "repeat");
        int k = count_type(cJSON_GetObjectItemCaseSensitive(l, "layers"), type, name);
        n += k * (cJSON_IsNumber(rep) ? (int)rep->valuedouble : 1);
        if (cJSON_IsString(t) && !strcmp(t->valuestring, type) && (!name || (cJSON_IsString(nm) && !strcmp(nm->valuestring, name)))) n++;
    }
    return n;
}

static const cJSON *first_of(const cJSON *arr, const char *name)
{
    for (const cJSON *l = arr ? arr->child : NULL; l; l = l->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(l, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name)) return l;
        const cJSON *in = first_of(cJSON_GetObjectItemCaseSensitive(l, "layers"), name);
        if (in) return in;
    }
    return NULL;
}

static void test_layers(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(H_MICRO, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    cJSON *j = cJSON_Parse(vc_model_generated_json(m));
    assert_non_null(j);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
    assert_int_equal(count_type(layers, "Mamba2Mixer", NULL), 36);
    assert_int_equal(count_type(layers, "RotaryAttention", NULL), 4);
    assert_int_equal(count_type(layers, "Linear", "shared_mlp.input_linear"), 40);
    assert_int_equal(count_type(layers, "RotaryEmbedding", NULL), 0); /* position_embedding_type "nope" */
    const cJSON *in = first_of(layers, "mamba.in_proj");
    assert_non_null(in);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(in, "out_features")->valuedouble, 8512); /* 4096 + 4352 + 64 */
    const cJSON *at = first_of(layers, "self_attn.attention");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(at, "rotary_dim")->valuedouble, 0);
    cJSON_Delete(j);
    vc_model_free(m);
    /* H-Small: block_sparse_moe (GraniteMoE, layers/granitemoe.c) beside shared_mlp on each of the 40 layers */
    if (vc_model_load_file_hf(H_SMALL, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    j = cJSON_Parse(vc_model_generated_json(m));
    layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
    assert_int_equal(count_type(layers, "GraniteMoE", "block_sparse_moe"), 40);
    assert_int_equal(count_type(layers, "Add", "moe_shared_sum"), 40);
    const cJSON *moe = first_of(layers, "block_sparse_moe");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(moe, "num_experts")->valuedouble, 72);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(moe, "top_k")->valuedouble, 10);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(moe, "intermediate_size")->valuedouble, 768);
    cJSON_Delete(j);
    vc_model_free(m);
    /* the CLI's count of the generated H-Small and H-Tiny: the same totals */
    j = cli_json(H_SMALL " -m infer -p bf16");
    assert_int_equal(num_at(j, NULL, "parameters"), INT64_C(32207337984));
    cJSON_Delete(j);
    j = cli_json(H_TINY " -m infer -p bf16");
    assert_int_equal(num_at(j, NULL, "parameters"), INT64_C(6939037248));
    cJSON_Delete(j);
    /* Granite-4.0-Micro: position_embedding_type "rope", every layer attention */
    if (vc_model_load_file_hf(MICRO, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    j = cJSON_Parse(vc_model_generated_json(m));
    layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
    assert_int_equal(count_type(layers, "Mamba2Mixer", NULL), 0);
    assert_int_equal(count_type(layers, "RotaryEmbedding", NULL), 1);
    at = first_of(layers, "self_attn.attention");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(at, "rotary_dim")->valuedouble, 64);
    cJSON_Delete(j);
    vc_model_free(m);
}

static void test_generate_state(void **state)
{
    (void)state;
    cJSON *j = cli_json(H_MICRO " -m generate --prompt 1024 --new-tokens 256");
    assert_int_equal(num_at(j, "generate", "mamba_state"), INT64_C(78004224));
    assert_int_equal(num_at(j, "generate", "mamba_layers"), 36);
    assert_int_equal(num_at(j, "generate", "kv_cache"), INT64_C(20955136));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "generate"), "cache_class")->valuestring,
                        "HybridMambaAttentionDynamicCache");
    cJSON_Delete(j);
    j = cli_json(H_MICRO " -m generate --prompt 1024 --new-tokens 256 -p bf16");
    assert_int_equal(num_at(j, "generate", "mamba_state"), INT64_C(39002112));
    assert_int_equal(num_at(j, "generate", "kv_cache"), INT64_C(10477568));
    cJSON_Delete(j);
    /* the state does not grow with the length; the attention layers' K/V does */
    j = cli_json(H_MICRO " -m generate --prompt 4096 --new-tokens 256 -p bf16");
    assert_int_equal(num_at(j, "generate", "mamba_state"), INT64_C(39002112));
    assert_int_equal(num_at(j, "generate", "kv_cache"), INT64_C(4) * 4351 * 2 * 8 * 64 * 2);
    cJSON_Delete(j);
}

/* H-Micro's config with key set to the JSON text val (NULL: removed), written to a temporary file */
static void with_key(char *path, size_t n, const char *key, const char *val)
{
    cJSON *cfg = load(H_MICRO);
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, key);
    if (val) {
        cJSON *v = cJSON_Parse(val);
        assert_non_null(v);
        cJSON_AddItemToObject(cfg, key, v);
    }
    snprintf(path, n, "/tmp/vc_granite4_XXXXXX.json");
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    char *txt = cJSON_Print(cfg);
    assert_true(write(fd, txt, strlen(txt)) == (ssize_t)strlen(txt));
    close(fd);
    free(txt);
    cJSON_Delete(cfg);
}

static void test_bad_keys(void **state)
{
    (void)state;
    static const struct { const char *key, *val, *want; } c[] = {
        {"layer_types", "[\"mamba\", \"linear_attention\"]", "layer_types: "},
        {"layer_types", "[\"mamba\"]", "layer_types: "},
        {"layer_types", "\"mamba\"", "layer_types: "},
        {"mamba_n_heads", "60", "mamba_n_heads: "},
        {"mamba_n_heads", "0", "mamba_n_heads: "},
        {"mamba_d_head", "32", "mamba_d_head: "},
        {"mamba_d_head", "\"big\"", "mamba_d_head: "},
        {"mamba_n_groups", "3", "mamba_n_groups: "},
        {"mamba_d_state", "-1", "mamba_d_state: "},
        {"mamba_d_conv", "1.5", "mamba_d_conv: "},
        {"mamba_expand", "\"two\"", "mamba_expand: "},
        {"mamba_expand", "0", "mamba_expand: "},
        {"mamba_chunk_size", "0", "mamba_chunk_size: "},
        {"mamba_conv_bias", "1", "mamba_conv_bias: "},
        {"mamba_proj_bias", "\"no\"", "mamba_proj_bias: "},
        {"position_embedding_type", "\"alibi\"", "position_embedding_type: "},
        {"attention_multiplier", "0", "attention_multiplier: "},
        {"shared_intermediate_size", "0", "shared_intermediate_size: "},
        {"num_local_experts", "-1", "num_local_experts: "},
        {"num_local_experts", "8", "num_experts_per_tok: "}, /* H-Micro's top-k 0 with experts */
        {"layers_block_type", "[1]", NULL},                 /* layer_types wins when both are given */
    };
    char path[64], args[256];
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        with_key(path, sizeof path, c[i].key, c[i].val);
        snprintf(args, sizeof args, "%s -m infer", path);
        if (c[i].want) assert_usage(args, c[i].want);
        else (void)cli_output(args);
        remove(path);
    }
    /* layers_block_type (attribute_map) read when layer_types is absent */
    with_key(path, sizeof path, "layer_types", NULL);
    cJSON *cfg = load(path);
    cJSON_AddItemToObject(cfg, "layers_block_type", cJSON_Parse("[\"attention\"]"));
    char *txt = cJSON_Print(cfg);
    FILE *f = fopen(path, "w");
    fputs(txt, f);
    fclose(f);
    free(txt);
    cJSON_Delete(cfg);
    snprintf(args, sizeof args, "%s -m infer", path);
    assert_usage(args, "layers_block_type: ");
    remove(path);
    /* the experts with top-k out of range */
    with_key(path, sizeof path, "num_experts_per_tok", "9");
    cfg = load(path);
    cJSON_ReplaceItemInObjectCaseSensitive(cfg, "num_local_experts", cJSON_CreateNumber(8));
    txt = cJSON_Print(cfg);
    f = fopen(path, "w");
    fputs(txt, f);
    fclose(f);
    free(txt);
    cJSON_Delete(cfg);
    snprintf(args, sizeof args, "%s -m infer", path);
    assert_usage(args, "num_experts_per_tok: ");
    remove(path);
}

/* --serve of Granite-4.0-Micro (every layer_types entry "attention") on h200: vLLM serves it as a plain decoder.
 * GraniteMoeHybridForCausalLM is IsHybrid (vllm/model_executor/models/granitemoehybrid.py @ 0195c9ec), but
 * ModelConfig.is_hybrid (vllm/config/model.py @ 0052a5b8, "Handle granite-4.0-micro case") is False when every
 * layer_types entry is "attention", so VllmConfig.try_verify_and_update_config skips
 * HybridAttentionMambaModelConfig.verify_and_update_config: the block size is not raised to the Mamba page of the
 * config's default mamba_* keys (that page would be (3 x 5,632 + 128 x 40 x 256) x 2 B = 2,655,232 B, a block size
 * of 16 x cdiv(2,655,232, 16 x 2,048) = 1,312), no Mamba layer is built, no MambaSpec: one group of the 40
 * FullAttentionSpec layers (src/engine/serve.c). */
static void test_serve_micro(void **state)
{
    (void)state;
    const char *a = MICRO " --serve --gpu h200";
    /* CacheConfig's default block size, 16 tokens, left as it is */
    assert_int_equal(cli_json_num(a, "serve", "block_size"), 16);
    /* a block of every layer (one KV cache group, get_num_blocks: available // page // 40 layers): 40 layers x K and V
     * x 8 kv heads x head_dim 64 (GraniteMoeHybridAttention: hidden_size 2560 // 40 heads) x 2 B (bf16) x 16 tokens */
    const int64_t page = INT64_C(40) * 2 * 8 * 64 * 2 * 16;
    assert_int_equal(page, 1310720);
    assert_int_equal(cli_json_num(a, "serve", "page_bytes"), page);
    const int64_t kv = cli_json_num(a, "serve", "kv_cache"), blocks = kv / page;
    assert_true(kv > 0);
    assert_int_equal(cli_json_num(a, "serve", "blocks"), blocks);
    /* _report_kv_cache_config: blocks x 16 tokens; get_max_concurrency_for_kv_cache_config: a request of 1,024 +
     * 256 tokens (the defaults) holds cdiv(1,280, 16) = 80 blocks */
    assert_int_equal(cli_json_num(a, "serve", "request_tokens"), 1280);
    assert_int_equal(cli_json_num(a, "serve", "tokens"), blocks * 16);
    assert_int_equal(cli_json_num(a, "serve", "concurrency"), blocks / 80);
    /* no state pages: the JSON names no hybrid cache kind */
    char j[256];
    snprintf(j, sizeof j, "%s -f json", a);
    assert_null(strstr(cli_output(j), "kv_cache_kind"));
}

static void test_refused(void **state)
{
    (void)state;
    /* --serve of the H models: tests/test_serve_granite4.c; of Micro: test_serve_micro below */
    /* --serve --tp: vLLM's split (tests/test_serve_mamba2_tp.c); 3 ranks do not divide mamba_n_heads (128) */
    assert_usage(H_SMALL " --serve --gpu h100-80gb --tp 3 --gpus 3", "3 tensor-parallel ranks do not divide mamba_n_heads (128)");
    assert_usage(H_MICRO " --tp 2", "tensor parallelism of the Mamba2 layers is modelled only as vLLM splits them");
    assert_usage(H_MICRO " -m generate --cache static", "HybridMambaAttentionDynamicCache");
    /* bitsandbytes replaces out_proj, which mamba_split_conv1d_scan_combined reads as a dense matrix */
    assert_usage(H_MICRO " --qlora --lora-targets in_proj", "out_proj quantized in training");
    assert_usage(H_SMALL " --ep 2 --gpus 2 --parallel ddp", "expert parallelism is not modelled for granitemoehybrid");
    assert_usage(H_SMALL " --moe-imbalance 2", "tokens spread evenly");
}

/* the two kinds written by hand: each bad value exits 2 naming layers[0].KEY */
static void write_model(char *path, size_t n, const char *layer, int64_t width)
{
    snprintf(path, n, "/tmp/vc_granite4_kind_XXXXXX.json");
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    char txt[1024];
    int k = snprintf(txt, sizeof txt, "{\"name\": \"k\", \"input\": {\"shape\": [64, %lld]}, \"layers\": [%s]}",
                     (long long)width, layer);
    assert_true(write(fd, txt, (size_t)k) == k);
    close(fd);
}

static void test_kinds(void **state)
{
    (void)state;
    /* in_proj's output width: 128 + (128 + 2 x 2 x 16) + 8 = 328 */
    static const char m2[] = "{\"type\": \"Mamba2Mixer\", \"num_heads\": 8, \"head_dim\": 16, "
                             "\"state_size\": 16, \"chunk_size\": 16, \"hidden_size\": 64%s}";
    static const char gm[] = "{\"type\": \"GraniteMoE\", \"hidden_size\": 64, \"intermediate_size\": 32, "
                             "\"num_experts\": 4%s}";
    static const struct { const char *tmpl, *extra; int64_t width; const char *want; } c[] = {
        {m2, ", \"n_groups\": 2", 328, NULL},
        {m2, ", \"n_groups\": 2, \"forward\": \"torch\"", 328, "layers[0].forward: torch"},
        {m2, ", \"n_groups\": 3", 328, "layers[0].n_groups: must divide num_heads"},
        {m2, ", \"n_groups\": 2", 300, "layers[0].inputs: in_proj's output must be [L, 328]"},
        {gm, ", \"top_k\": 2", 64, NULL},
        {gm, ", \"top_k\": 5", 64, "layers[0].top_k: top_k (5) is more than num_experts (4)"},
        {gm, ", \"top_k\": 2, \"activation\": \"tanh\"", 64, "layers[0].activation"},
    };
    char path[64], args[128], layer[512];
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        snprintf(layer, sizeof layer, c[i].tmpl, c[i].extra);
        write_model(path, sizeof path, layer, c[i].width);
        snprintf(args, sizeof args, "%s -b 2", path);
        if (c[i].want) assert_usage(args, c[i].want);
        else (void)cli_output(args);
        remove(path);
    }
    /* Mamba2Mixer's parameters: conv1d 192 x 4 + 192, dt_bias, A_log, D 3 x 8, norm 128, out_proj 64 x 128 = 9,304 */
    snprintf(layer, sizeof layer, m2, ", \"n_groups\": 2");
    write_model(path, sizeof path, layer, 328);
    cJSON *j = cli_json(path);
    assert_int_equal(num_at(j, NULL, "parameters"), 9304);
    cJSON_Delete(j);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters), cmocka_unit_test(test_layers), cmocka_unit_test(test_generate_state),
        cmocka_unit_test(test_bad_keys), cmocka_unit_test(test_refused), cmocka_unit_test(test_serve_micro), cmocka_unit_test(test_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
