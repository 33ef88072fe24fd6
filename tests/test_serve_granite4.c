/*
 * test_serve_granite4.c — --serve of IBM Granite 4.0-H (model_type granitemoehybrid; issue 31) as vLLM runs it:
 * src/engine/serve.c mamba_state (the Mamba state pages and the page-size unification shared with the Gated
 * DeltaNet models, hybrid_state), layers/mamba2.c emit_vllm_profile (MambaMixer2's profiling run),
 * layers/granitemoe.c gm_vllm_emit (GraniteMoeMoE's FusedMoE).
 *
 * Every figure below is derived by hand from the vLLM source (requests of 1024 + 1024 tokens, bf16: the
 * configs' dtype, vLLM's defaults on an H100 80 GB: 8192 batched tokens, 1024 sequences, prefix caching off for
 * the Mamba layers: mamba_cache_mode "none"):
 *  - the state of one MambaMixer2 layer per request (vllm-project/vllm @ 2afe1e85,
 *    vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator.mamba2_state_shape): conv
 *    (d_conv - 1, intermediate + 2 n_groups d_state), temporal (mamba_n_heads, mamba_d_head, d_state), both in
 *    the model's dtype (_mamba_state_dtype with mamba_cache_dtype and mamba_ssm_cache_dtype "auto"), MambaSpec
 *    .page_size_bytes their sum (vllm/v1/kv_cache_interface.py @ bc8282e6);
 *  - one attention token: FullAttentionSpec's 2 x kv heads x head_dim (hidden_size // num_attention_heads,
 *    GraniteMoeHybridAttention.__init__ @ 0195c9ec) x 2 bytes;
 *  - the attention block size (vllm/model_executor/models/config.py @ 1936cf38
 *    HybridAttentionMambaModelConfig.verify_and_update_config, no prefix caching): 16 x cdiv(state,
 *    16 x one token), the state page padded to the attention page;
 *  - 36 Mamba and 4 attention layers (layer_types: attention at 5, 15, 25, 35): 36 >= 1.5 x 4, so
 *    group_size 4 (_get_kv_cache_groups_uniform_page_size), 1 attention group and 9 Mamba groups, a block 4
 *    pages; blocks = pool // block (get_num_blocks); a request needs cdiv(2048, block size) attention
 *    blocks and one per Mamba group (get_max_concurrency_for_kv_cache_config); tokens = blocks // 10 x
 *    block size (_report_kv_cache_config).
 * H-Tiny (hidden 1536, 12 heads, 4 kv heads, Mamba 48 heads x 64, d_state 128, 1 group, d_conv 4): conv
 * 3 x (3,072 + 256) = 9,984, temporal 48 x 64 x 128 = 393,216: (9,984 + 393,216) x 2 = 806,400 bytes; one
 * token 2 x 4 x 128 x 2 = 2,048 bytes; block 16 x cdiv(806,400, 32,768) = 16 x 25 = 400 tokens, a page
 * 400 x 2,048 = 819,200, a block 4 x 819,200 = 3,276,800 bytes; a request cdiv(2048, 400) = 6 + 9 = 15 blocks.
 * Under --kv-cache-dtype fp8 (one byte an attention element; the state keeps the model's dtype): one token
 * 1,024 bytes, block 16 x cdiv(806,400, 16,384) = 16 x 50 = 800 tokens, a block 4 x 800 x 1,024 = 3,276,800,
 * a request cdiv(2048, 800) = 3 + 9 = 12 blocks.
 * H-Small (hidden 4096, 32 heads, 8 kv heads, Mamba 128 heads x 64, d_state 128, 1 group, d_conv 4): conv
 * 3 x (8,192 + 256) = 25,344, temporal 128 x 64 x 128 = 1,048,576: (25,344 + 1,048,576) x 2 = 2,147,840
 * bytes; one token 2 x 8 x 128 x 2 = 4,096 bytes; block 16 x cdiv(2,147,840, 65,536) = 16 x 33 = 528 tokens,
 * a page 528 x 4,096 = 2,162,688, a block 8,650,752 bytes; a request cdiv(2048, 528) = 4 + 9 = 13 blocks.
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

#define HF VC_TEST_DATA "/hf/"

static vc_serve_result serve(const char *file, vc_kv_dtype kv)
{
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(file, NULL, &m, &err)) fail_msg("%s: %s", file, err.msg);
    vc_options o;
    vc_options_init(&o);
    o.precision = vc_serve_auto_precision(m, NULL);
    o.prompt = 1024;
    o.new_tokens = 1024;
    vc_serve_options so;
    vc_serve_options_init(&so);
    so.kv_cache_dtype = kv;
    vc_gpu_spec g;
    assert_int_equal(vc_gpu_parse("h100-80gb", &g, &err), VC_OK);
    vc_serve_result r;
    if (vc_serve(m, &o, &so, &g, &r, &err)) fail_msg("serve: %s", err.msg);
    vc_model_free(m);
    return r;
}

static void test_tiny(void **state)
{
    (void)state;
    vc_serve_result r = serve(HF "granite-4.0-h-tiny.json", VC_KV_AUTO);
    assert_int_equal(r.state_mamba, 1);
    assert_int_equal(r.state_layers, 36);
    assert_int_equal(r.state_bytes, 806400);
    assert_int_equal(r.block_size, 400);
    assert_int_equal(r.page_bytes, 3276800);
    assert_true(r.kv_cache > 0);
    assert_int_equal(r.blocks, r.kv_cache / 3276800);
    assert_int_equal(r.concurrency, r.blocks / 15);
    assert_int_equal(r.tokens, r.blocks / 10 * 400);
    /* the profiling run's Mamba layers are vLLM's (no scan: "V1 profile run"): transformers' chunked scan over
     * the 1024 dummy requests of 8 tokens would hold the float32 chunk states [1024, 1, 48, 64, 128] alone,
     * 1.5 GiB a layer; vLLM's layer holds its in_proj output, ssm_output and two [8192, 3328] copies, under
     * 0.3 GiB, and the whole run (the sampler's logits of 1024 rows included) stays under 1 GiB above the weights */
    assert_true(r.profile_peak - r.weights < (INT64_C(1) << 30));
    r = serve(HF "granite-4.0-h-tiny.json", VC_KV_FP8);
    assert_int_equal(r.state_bytes, 806400);
    assert_int_equal(r.block_size, 800);
    assert_int_equal(r.page_bytes, 3276800);
    assert_int_equal(r.blocks, r.kv_cache / 3276800);
    assert_int_equal(r.concurrency, r.blocks / 12);
    assert_int_equal(r.tokens, r.blocks / 10 * 800);
}

static void test_small(void **state)
{
    (void)state;
    vc_serve_result r = serve(HF "granite-4.0-h-small.json", VC_KV_AUTO);
    assert_int_equal(r.state_mamba, 1);
    assert_int_equal(r.state_layers, 36);
    assert_int_equal(r.state_bytes, 2147840);
    assert_int_equal(r.block_size, 528);
    assert_int_equal(r.page_bytes, 8650752);
    assert_true(r.kv_cache > 0);
    assert_int_equal(r.blocks, r.kv_cache / 8650752);
    assert_int_equal(r.concurrency, r.blocks / 13);
    assert_int_equal(r.tokens, r.blocks / 10 * 528);
}

/* the report names the cache kind: the table's line and the JSON's kv_cache_kind */
static void test_report(void **state)
{
    (void)state;
    cli_run c;
    run(&c, HF "granite-4.0-h-tiny.json --serve --gpu h100-80gb");
    assert_int_equal(c.status, 0);
    assert_non_null(strstr(c.out, "Mamba state  (36 Mamba2 layers: conv + SSM state, 787.5 KiB per request and layer"));
    assert_non_null(strstr(c.out, "(400 tokens each, 3.1 MiB per block)"));
    run(&c, HF "granite-4.0-h-tiny.json --serve --gpu h100-80gb -f json");
    assert_int_equal(c.status, 0);
    assert_non_null(strstr(c.out, "\"kv_cache_kind\": \"mamba_state+paged_kv\", \"state_layers\": 36, "
                                  "\"state_bytes_per_request_layer\": 806400"));
    /* a Gated DeltaNet model keeps its kind */
    run(&c, HF "qwen3.6-35b-a3b.json --serve --gpu h200 -f json");
    assert_int_equal(c.status, 0);
    assert_non_null(strstr(c.out, "\"kv_cache_kind\": \"deltanet_state+paged_kv\""));
}

/* Mixer2RMSNormGated.forward_cuda takes forward_native when n_groups > 1 (mamba_mixer2.py @ 2e0714af; layers/mamba2.c
 * emit_vllm_profile): served. H-Tiny's config with mamba_n_groups 2 (48 heads: divisible): conv 3 x (3,072 + 2 x 2 x
 * 128) = 10,752, temporal 393,216: (10,752 + 393,216) x 2 = 807,936 bytes; block 16 x cdiv(807,936, 32,768) = 16 x 25
 * = 400 tokens, a block 4 x 400 x 2,048 = 3,276,800 bytes, a request 6 + 9 = 15 blocks */
static void test_groups(void **state)
{
    (void)state;
    FILE *f = fopen(HF "granite-4.0-h-tiny.json", "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *at = strstr(buf, "\"mamba_n_groups\": 1");
    assert_non_null(at);
    at[strlen("\"mamba_n_groups\": ")] = '2';
    vc_error err;
    vc_model *m = NULL;
    assert_int_equal(vc_model_load_string_hf(buf, n, "tiny-groups", NULL, &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.prompt = 1024;
    o.new_tokens = 1024;
    o.precision = vc_serve_auto_precision(m, NULL);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec g;
    assert_int_equal(vc_gpu_parse("h100-80gb", &g, &err), VC_OK);
    vc_serve_result r;
    if (vc_serve(m, &o, &so, &g, &r, &err)) fail_msg("serve: %s", err.msg);
    vc_model_free(m);
    assert_int_equal(r.state_bytes, 807936);
    assert_int_equal(r.block_size, 400);
    assert_int_equal(r.page_bytes, 3276800);
    assert_int_equal(r.blocks, r.kv_cache / 3276800);
    assert_int_equal(r.concurrency, r.blocks / 15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny),
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
