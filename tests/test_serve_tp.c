/* --serve under tensor parallelism (src/hf/hf_tp.c, vLLM's split; src/engine/serve.c): a rank's
 * weights and KV cache as vLLM builds them, derived by hand from its source
 * (vllm-project/vllm):
 *  - vllm/model_executor/layers/linear.py @ 0036d38d QKVParallelLinear.__init__: num_heads =
 *    divide(total_num_heads, tp_size); tp_size >= total_num_kv_heads: num_kv_heads = 1 and
 *    num_kv_head_replicas = divide(tp_size, total_num_kv_heads) (a rank's k and v shards hold one
 *    head, copied to tp / kv ranks), else divide(total_num_kv_heads, tp_size);
 *  - vllm/model_executor/models/qwen3_moe.py @ 002456df Qwen3MoeAttention.__init__: num_kv_heads =
 *    max(1, total_num_kv_heads // tp_size) for Attention, so the cache page of a layer is
 *    vllm/v1/kv_cache_interface.py AttentionSpec.page_size_bytes: 2 x block_size x num_kv_heads x
 *    head_size x dtype size;
 *  - multi_query (gpt_bigcode): ModelConfig.get_total_num_kv_heads 1 (vllm/config/model.py @ 0052a5b8),
 *    gpt_bigcode.py @ 002800f0 GPTBigCodeAttention: the queries column-parallel, the one k/v head whole
 *    on every rank;
 *  - ModelConfig.verify_with_parallel_config (config/model.py @ 0052a5b8): the query heads must divide
 *    ("Total number of attention heads (...) must be divisible by tensor parallel size"): refused.
 * Megatron's split (training, -m infer, -m generate) keeps refusing fewer kv heads than ranks
 * (Megatron-LM transformer/attention.py: divide(num_query_groups, world_size)). */
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
#include "load_file.h"
#include "cli_run.h"
#include "model.h"

#define HF VC_TEST_DATA "/hf/"

static void serve_tp(const vc_model *m, int64_t tp, const char *gpu, vc_serve_result *r)
{
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.precision = VC_PREC_BF16; /* the configs' torch_dtype: vLLM's --dtype auto */
    o.prompt = 1024;
    o.new_tokens = 256;
    o.tp = tp;
    o.gpus = tp;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec g;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_gpu_parse(gpu, &g, &err), VC_OK);
    if (vc_serve(m, &o, &so, &g, r, &err)) fail_msg("serve at tp %lld on %s: %s", (long long)tp, gpu, err.msg);
}

/* The elements of the parameters of the first instance whose name ends in `suffix` (its weight and bias)
 * in the model vLLM's split makes at tp ranks (vc__model_at_vllm, as vc_serve takes it). */
static int64_t rank_params_at(const vc_model *m, int64_t tp, int mxfp4_align, const char *suffix)
{
    vc_options o;
    vc_options_init(&o);
    o.tp = tp;
    o.gpus = tp;
    const vc_model *r = NULL;
    vc_error err;
    memset(&err, 0, sizeof err);
    if (vc__model_at_vllm(m, &o, mxfp4_align, &r, &err)) fail_msg("vLLM's split at tp %lld: %s", (long long)tp, err.msg);
    size_t ls = strlen(suffix);
    for (size_t i = 0; i < r->ninst; i++) {
        const char *n = r->inst[i].name;
        if (!n || strlen(n) < ls || strcmp(n + strlen(n) - ls, suffix)) continue;
        int64_t s = 0;
        for (int k = 0; k < r->inst[i].np; k++) s += r->par[r->inst[i].params[k]].numel;
        return s;
    }
    fail_msg("no layer named *%s at tp %lld", suffix, (long long)tp);
    return 0;
}

static int64_t rank_params(const vc_model *m, int64_t tp, const char *suffix) { return rank_params_at(m, tp, 0, suffix); }

static int64_t up512(int64_t bytes) { return (bytes + 511) / 512 * 512; } /* the caching allocator's rounding */

/* Qwen3-30B-A3B (32 query heads, 4 kv heads of 128, 48 layers, hidden 2048, 128 experts of 768) on
 * 8 H200s: 4 query heads and 1 kv head per rank (replicated twice) */
static void kv_replicated_qwen3_moe(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "qwen3-30b-a3b.json");
    /* QKVParallelLinear's shards: q 4 x 128 outputs, k and v 1 x 128 each, over hidden 2048 */
    assert_int_equal(rank_params(m, 8, "q_proj"), 2048 * 4 * 128);
    assert_int_equal(rank_params(m, 8, "k_proj"), 2048 * 1 * 128);
    assert_int_equal(rank_params(m, 8, "v_proj"), 2048 * 1 * 128);
    assert_int_equal(rank_params(m, 8, "o_proj"), 4 * 128 * 2048);
    vc_serve_result r;
    serve_tp(m, 8, "h200", &r);
    /* page_size_bytes x 48 layers: 2 x 16 x 1 x 128 x 2 bytes x 48 = 393216 (384 KiB) */
    assert_int_equal(r.page_bytes, INT64_C(2) * 16 * 1 * 128 * 2 * 48);
    assert_int_equal(r.block_size, 16);
    assert_int_equal(r.blocks, r.kv_cache / INT64_C(393216)); /* get_num_blocks */
    assert_int_equal(r.concurrency, r.blocks / (1280 / 16));  /* cdiv(1024 + 256, 16) blocks a request */
    /* the weights of a rank, bf16, each tensor as the allocator rounds it (512 bytes):
     * a layer: q_proj 2048x512, k_proj and v_proj 2048x128, o_proj 512x2048, q_norm and k_norm 128 each,
     * two RMSNorms of 2048, the router 2048x128 (replicated: vLLM's ReplicatedLinear gate), the experts
     * 128 x (2048 x 2 x 96 + 96 x 2048) (moe_intermediate_size 768 / 8, FusedMoE's
     * intermediate_size_per_partition); the final norm; embed_tokens and lm_head of the vocabulary's rows
     * on the rank (vLLM's VocabParallelEmbedding: 151936 is a multiple of 64 already, 151936 / 8 = 18992
     * rows; Megatron's 128 x 8 padding would give 19072, the test vocab_rows_vllm below);
     * vLLM's rotary cos_sin_cache [40960, 128] (serve.c vllm_rope_cache) and the RotaryEmbedding's
     * inv_freq (64 fp32) */
    const int64_t layer = up512(2048 * 512 * 2) + 2 * up512(2048 * 128 * 2) + up512(512 * 2048 * 2) + 2 * up512(128 * 2) +
                          2 * up512(2048 * 2) + up512(2048 * 128 * 2) + up512(INT64_C(128) * 2048 * 192 * 2) +
                          up512(INT64_C(128) * 96 * 2048 * 2);
    const int64_t w = 48 * layer + up512(2048 * 2) + 2 * up512(INT64_C(18992) * 2048 * 2) + up512(64 * 4) +
                      INT64_C(40960) * 128 * 2;
    assert_int_equal(r.weights, w);
    /* at 4 ranks the kv heads divide (1 each): the same k and v per rank, twice the queries */
    assert_int_equal(rank_params(m, 4, "k_proj"), 2048 * 1 * 128);
    assert_int_equal(rank_params(m, 4, "q_proj"), 2048 * 8 * 128);
    vc_serve_result r4;
    serve_tp(m, 4, "h200", &r4);
    assert_int_equal(r4.page_bytes, INT64_C(393216));
    vc_model_free(m);
}

/* StarCoder (multi_query: one kv head; 48 query heads of 128, 40 layers, hidden 6144) on 8 H200s:
 * c_attn holds 6 query heads and the whole k and v head, with their biases */
static void mqa_starcoder(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "starcoder.json");
    assert_int_equal(rank_params(m, 8, "c_attn"), 6144 * (6 * 128 + 2 * 128) + (6 * 128 + 2 * 128));
    vc_serve_result r;
    serve_tp(m, 8, "h200", &r);
    assert_int_equal(r.page_bytes, INT64_C(2) * 16 * 1 * 128 * 2 * 40); /* 327680 */
    assert_int_equal(r.blocks, r.kv_cache / INT64_C(327680));
    vc_model_free(m);
}

/* Gemma 3 1B (4 query heads, 1 kv head of 256, 26 layers: 22 sliding, 4 full) on 4 H100s: 1 query and
 * 1 kv head per rank; the hybrid cache's page is 16 tokens x K and V of a head x the group size
 * (serve.c: 4 layers, the fewest of a kind) */
static void kv_replicated_gemma3(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "gemma-3-1b-it.json");
    assert_int_equal(rank_params(m, 4, "k_proj"), 1152 * 256);
    vc_serve_result r;
    serve_tp(m, 4, "h100-80gb", &r);
    assert_int_equal(r.page_bytes, INT64_C(2) * 16 * 1 * 256 * 2 * 4);
    vc_model_free(m);
}

/* gpt-oss-20b's MXFP4 experts (32 of intermediate_size 2880, hidden 2880, 24 layers) under vLLM's Triton
 * kernels on Hopper (serve.c vc__vllm_mxfp4_align: mxfp4.py @ 007d5005 get_mxfp4_backend, TRITON for
 * capability 9.0; Mxfp4MoEMethod.create_weights: round_up(intermediate_size_per_partition, 64)) */
static void mxfp4_padded_gpt_oss(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "gpt-oss-20b.json");
    /* 8 ranks: 2880 / 8 = 360 -> 384; the SparseMoE block of a rank: the router (replicated) 2880 x 32 + 32,
     * gate_up_proj [32, 2880, 2 x 384] + its bias [32, 2 x 384], down_proj [32, 384, 2880] + its bias [32, 2880] */
    assert_int_equal(rank_params_at(m, 8, 64, "mlp"),
                     2880 * 32 + 32 + 32 * (2880 * 2 * 384 + 2 * 384) + 32 * (384 * 2880 + 2880));
    /* FlashInfer's round_up(360, 256) = 512 (the B200); the hidden size's padding is in the weights' bytes only
     * (src/policy/quant.c mxfp4_vllm_tensors), not in the parameters */
    assert_int_equal(rank_params_at(m, 8, 256, "mlp"),
                     2880 * 32 + 32 + 32 * (2880 * 2 * 512 + 2 * 512) + 32 * (512 * 2880 + 2880));
    vc_serve_result r8;
    serve_tp(m, 8, "h200", &r8);
    /* 8 kv heads of 64 on 8 ranks: one each; 12 sliding and 12 full layers, groups of 12:
     * page 2 x 16 x 1 x 64 x 2 bytes x 12 */
    assert_int_equal(r8.page_bytes, INT64_C(2) * 16 * 64 * 2 * 12);
    vc_model_free(m);
}

/* Every --gpu preset's MXFP4 MoE backend under vLLM (serve.c vc__vllm_mxfp4_backend, from mxfp4.py @ 007d5005
 * get_mxfp4_backend with vLLM's default environment): TRITON on compute capability 9.0, SM100_FI_MXFP4_BF16 on
 * the 10.x family, ROCm's Triton on AMD, MARLIN on every other NVIDIA card (8.x; 12.0, outside triton_kernels'
 * (9, 0) <= capability < (11, 0); below 8.0 too, where vLLM refuses mxfp4 first: mxfp4_refused below) */
static void mxfp4_backend_per_card(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int backend, inter; /* create_weights' round_up of intermediate_size_per_partition */
    } want[] = {
        {"t4", VC_MXFP4_MARLIN, 128},        {"v100-16gb", VC_MXFP4_MARLIN, 128}, {"v100-32gb", VC_MXFP4_MARLIN, 128},
        {"a10", VC_MXFP4_MARLIN, 128},       {"a10g", VC_MXFP4_MARLIN, 128},      {"l4", VC_MXFP4_MARLIN, 128},
        {"l40", VC_MXFP4_MARLIN, 128},       {"l40s", VC_MXFP4_MARLIN, 128},      {"a100-40gb", VC_MXFP4_MARLIN, 128},
        {"a100-80gb", VC_MXFP4_MARLIN, 128}, {"h100-pcie", VC_MXFP4_TRITON, 64},  {"h100-80gb", VC_MXFP4_TRITON, 64},
        {"h100-nvl", VC_MXFP4_TRITON, 64},   {"h200", VC_MXFP4_TRITON, 64},       {"b200", VC_MXFP4_SM100_FI_BF16, 256},
        {"rtx-a6000", VC_MXFP4_MARLIN, 128}, {"rtx3060", VC_MXFP4_MARLIN, 128},   {"rtx3090", VC_MXFP4_MARLIN, 128},
        {"rtx4070", VC_MXFP4_MARLIN, 128},   {"rtx4080", VC_MXFP4_MARLIN, 128},   {"rtx4090", VC_MXFP4_MARLIN, 128},
        {"rtx5070", VC_MXFP4_MARLIN, 128},   {"rtx5090", VC_MXFP4_MARLIN, 128},   {"mi210", VC_MXFP4_ROCM_TRITON, 128},
        {"mi250x", VC_MXFP4_ROCM_TRITON, 128}, {"mi300x", VC_MXFP4_ROCM_TRITON, 128},
    };
    assert_int_equal(vc_gpu_count(), sizeof want / sizeof *want); /* a new preset gets its row here */
    for (size_t i = 0; i < vc_gpu_count(); i++) {
        const vc_gpu *g = vc_gpu_get(i);
        size_t k = 0;
        while (k < sizeof want / sizeof *want && strcmp(want[k].name, g->name)) k++;
        if (k == sizeof want / sizeof *want) fail_msg("no expected backend for %s", g->name);
        if (vc__vllm_mxfp4_backend(g) != want[k].backend) fail_msg("%s: backend %s", g->name, vc__vllm_mxfp4_name(vc__vllm_mxfp4_backend(g)));
        vc_gpu_spec s;
        vc_error err;
        memset(&err, 0, sizeof err);
        assert_int_equal(vc_gpu_parse(g->name, &s, &err), VC_OK);
        assert_int_equal(vc__vllm_mxfp4_align(&s), want[k].inter);
    }
    /* create_weights' hidden_size padding: FlashInfer and Marlin round_up(..., 256), ROCm 128, Triton none */
    assert_int_equal(vc__vllm_mxfp4_pad(VC_MXFP4_SM100_FI_BF16, 1), 256);
    assert_int_equal(vc__vllm_mxfp4_pad(VC_MXFP4_MARLIN, 1), 256);
    assert_int_equal(vc__vllm_mxfp4_pad(VC_MXFP4_ROCM_TRITON, 1), 128);
    assert_int_equal(vc__vllm_mxfp4_pad(VC_MXFP4_TRITON, 1), 0);
    vc_gpu_spec s;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_gpu_parse("80GiB", &s, &err), VC_OK);
    assert_int_equal(vc__vllm_mxfp4_align(&s), 0); /* a size: no backend */
}

static int64_t r512(int64_t b) { return (b + 511) / 512 * 512; } /* the caching allocator's rounding */
static int64_t rup(int64_t v, int64_t m) { return m > 1 ? (v + m - 1) / m * m : v; }

/* One FusedMoE layer's experts on a rank as vLLM keeps them after process_weights_after_loading, by hand from
 * mxfp4.py @ 007d5005 Mxfp4MoEMethod.create_weights (I_pad = round_up(I, ai), H_pad = round_up(H, ah)):
 * w13_weight uint8 [E, 2 I_pad, H_pad / 2], w13_weight_scale uint8 [E, 2 I_pad, H_pad / 32], w13_bias
 * [E, 2 I_pad], w2_weight uint8 [E, H_pad, I_pad / 2], w2_weight_scale uint8 [E, H_pad, I_pad / 32], w2_bias
 * [E, H_pad], the biases of bias_size bytes (TRITON and SM100_FI_MXFP4_BF16: .to(torch.float32); MARLIN:
 * .to(params_dtype), bf16), with FlashInfer's gemm1_alpha / gemm1_beta / gemm1_clamp_limit float32 [E]
 * (fi 1), and Marlin's marlin_make_workspace_new(device, 4) int32 [4 x sms] (marlin_utils_fp4.py @ 00d52e93
 * prepare_moe_fp4_layer_for_marlin; its repacked weights and e8m0 scales keep the bytes). The checkpoint's
 * own (no backend: a size for --gpu): ai = ah = 1, bf16 biases. */
static int64_t experts_bytes(int64_t E, int64_t H, int64_t I, int ai, int ah, int bias_size, int fi, int64_t sms)
{
    const int64_t Ip = rup(I, ai), Hp = rup(H, ah);
    return r512(E * 2 * Ip * Hp / 2) + r512(E * 2 * Ip * Hp / 32) + r512(E * 2 * Ip * bias_size) + r512(E * Hp * Ip / 2) +
           r512(E * Hp * Ip / 32) + r512(E * Hp * bias_size) + (fi ? 3 * r512(E * 4) : 0) + (sms ? r512(4 * sms * 4) : 0);
}

/* gpt-oss-20b (32 experts, 24 layers) and gpt-oss-120b (128 experts, 36 layers), hidden and intermediate 2880
 * (the published config.json files: tests/data/hf), served at tp 1, 2, 4, 8 on an H200 (TRITON), a B200
 * (SM100_FI_MXFP4_BF16) and an A100 80GB (MARLIN, 108 multiprocessors): the rest of a rank's weights is the
 * same on every card, so the weights differ by the layers x the experts' bytes above; at tp 1 the H200's
 * Triton weights differ from the checkpoint's (a size for --gpu: no backend) by the float32 biases alone
 * (round_up(2880, 64) = 2880). Per rank I = 2880 / tp: 2880, 1440, 720, 360 -> Triton 2880, 1472, 768, 384;
 * FlashInfer 3072, 1536, 768, 512 (H 3072); Marlin 2944, 1536, 768, 384 (H 3072). */
static void mxfp4_weights_per_card(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int64_t E, L;
    } models[] = {{HF "gpt-oss-20b.json", 32, 24}, {HF "gpt-oss-120b.json", 128, 36}};
    for (size_t k = 0; k < 2; k++) {
        vc_model *m = load_file(models[k].file);
        const int64_t E = models[k].E, L = models[k].L;
        for (int64_t tp = 1; tp <= 8; tp *= 2) {
            const int64_t I = 2880 / tp;
            const int64_t tri = experts_bytes(E, 2880, I, 64, 1, 4, 0, 0), fi = experts_bytes(E, 2880, I, 256, 256, 4, 1, 0),
                          mar = experts_bytes(E, 2880, I, 128, 256, 2, 0, 108);
            vc_serve_result h, b, a, h1;
            serve_tp(m, tp, "h200", &h);
            serve_tp(m, tp, "b200", &b);
            serve_tp(m, tp, "a100-80gb", &a);
            serve_tp(m, tp, "h100-80gb", &h1);
            assert_int_equal(h1.weights, h.weights); /* the same backend */
            if (b.weights - h.weights != L * (fi - tri) || a.weights - h.weights != L * (mar - tri))
                fail_msg("%s tp %lld: B200 - H200 %lld (by hand %lld), A100 - H200 %lld (by hand %lld)", models[k].file,
                         (long long)tp, (long long)(b.weights - h.weights), (long long)(L * (fi - tri)),
                         (long long)(a.weights - h.weights), (long long)(L * (mar - tri)));
            if (tp == 1) {
                vc_serve_result c;
                serve_tp(m, 1, "80GiB", &c);
                assert_int_equal(h.weights - c.weights, L * (tri - experts_bytes(E, 2880, 2880, 1, 1, 2, 0, 0)));
                /* 24 or 36 layers x E x (2 x 2880 + 2880) bias values x 2 more bytes */
                assert_int_equal(h.weights - c.weights, L * E * (2 * 2880 + 2880) * 2);
            }
        }
        vc_model_free(m);
    }
}

/* what vLLM refuses, named with its reason: Mxfp4Config.get_min_capability() 80 (mxfp4.py @ 007d5005, checked by
 * vllm/config/vllm.py _get_quantization_config) on the T4 and V100 at every split; a size for --gpu at a split the
 * checkpoint's 32-value blocks do not hold (720, 360 values a rank) names the backend's padding it lacks */
static void mxfp4_refused(void **state)
{
    (void)state;
    for (int tp = 1; tp <= 8; tp *= 2) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, HF "gpt-oss-120b.json --serve --gpu t4 --tp %d --gpus %d", tp, tp);
        assert_usage(cmd, "quantization_config: mxfp4 under --serve: vLLM refuses it on t4: the quantization method mxfp4 is "
                     "not supported for the current GPU (Mxfp4Config's minimum capability 80, the card's 75)");
    }
    assert_usage(HF "gpt-oss-20b.json --serve --gpu v100-32gb --tp 2 --gpus 2", "minimum capability 80, the card's 70");
    assert_usage(HF "gpt-oss-20b.json --serve --gpu 80GiB --tp 8 --gpus 8", "--gpu: mxfp4 under --serve (layer "
                 "layers[2].layers[8]): the input dimension (360) is not a multiple of MXFP4's 32-value blocks per rank: "
                 "vLLM pads the experts' intermediate size to its MoE backend's multiple");
}

/* Qwen3-Next-80B-A3B (36 Gated DeltaNet layers of 16 key and 32 value heads of 128, conv kernel 4; 12 attention
 * layers of 16 query and 2 kv heads of 256; hidden 2048) on 8 H200s, vLLM's split (vllm-project/vllm @ 00545a8a,
 * vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py QwenGatedDeltaNetAttention.__init__): 2 key and
 * 4 value heads a rank */
static void deltanet_qwen3_next(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "qwen3-next-80b-a3b-instruct.json");
    /* in_proj_qkvz MergedColumnParallelLinear: (2 x 16 x 128 + 2 x 32 x 128) / 8 outputs; in_proj_ba 2 x 32 / 8;
     * out_proj RowParallelLinear: 32 x 128 / 8 inputs */
    assert_int_equal(rank_params(m, 8, "linear_attn.in_proj_qkvz"), 2048 * 1536);
    assert_int_equal(rank_params(m, 8, "linear_attn.in_proj_ba"), 2048 * 8);
    assert_int_equal(rank_params(m, 8, "linear_attn.out_proj"), 512 * 2048);
    /* dt_bias and A_log divide(32, 8) = 4 each, conv1d ColumnParallelLinear [conv_dim / 8 = 1024, 1, 4], the
     * gated norm's head_v_dim 128 whole */
    assert_int_equal(rank_params(m, 8, "linear_attn"), 4 + 4 + 1024 * 4 + 128);
    vc_serve_result r;
    serve_tp(m, 8, "h200", &r);
    /* gated_delta_net_state_shape(tp_size 8, ...): conv state [1024, 4 - 1], recurrent [32 / 8, 128, 128], in
     * the model's dtype (bf16): (3072 + 65536) x 2 = 137216 bytes a layer and request */
    assert_int_equal(r.state_layers, 36);
    assert_int_equal(r.state_bytes, (1024 * 3 + 4 * 128 * 128) * 2);
    /* the attention layers' one kv head (2 kv heads on 8 ranks) of 256: 1024 bytes a token and layer; the block
     * raised to hold a state page, 16 x cdiv(137216, 16 x 1024) = 144 tokens; groups of 12 layers (12 attention,
     * 36 DeltaNet: 36 is not under 1.5 x 12): a block 144 x 1024 x 12 bytes; a request takes cdiv(1280, 144)
     * blocks of the attention group and one of each of the 3 DeltaNet groups */
    assert_int_equal(r.block_size, 144);
    assert_int_equal(r.page_bytes, INT64_C(144) * 1024 * 12);
    assert_int_equal(r.blocks, r.kv_cache / (INT64_C(144) * 1024 * 12));
    assert_int_equal(r.concurrency, r.blocks / (9 + 3));
    vc_model_free(m);
}

/* what stays refused, exit 2 naming the option and the key */
static void refusals(void **state)
{
    (void)state;
    /* verify_with_parallel_config: 71 query heads, 8 ranks */
    assert_usage(HF "falcon-7b.json --serve --gpu h200 --tp 8 --gpus 8", "--tp: 8 tensor-parallel ranks do not divide "
                 "num_attention_heads (71)");
    assert_usage(HF "gpt2.json --serve --gpu h200 --tp 8 --gpus 8", "--tp: 8 tensor-parallel ranks do not divide n_head (12)");
    /* Megatron's split (no --serve) keeps refusing fewer kv heads than ranks */
    assert_usage(HF "qwen3-30b-a3b.json -m infer --tp 8 --gpus 8", "--tp: 8 tensor-parallel ranks do not divide "
                 "num_key_value_heads (4)");
    assert_usage(HF "starcoder.json -m infer --tp 2 --gpus 2", "--tp: multi_query keeps one kv head");
    /* Megatron's split of the DeltaNet layers, and vLLM's uneven one (head_partition.py), are not modelled */
    assert_usage(HF "qwen3-next-80b-a3b-instruct.json -m infer --tp 2 --gpus 2", "--tp: qwen3_next: tensor parallelism over "
                 "the Gated DeltaNet layers is not modelled");
    char gdn[] = "/tmp/vc_serve_tp_gdn_XXXXXX.json";
    int gfd = mkstemps(gdn, 5);
    assert_true(gfd >= 0);
    close(gfd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sed -e 's/\"linear_num_key_heads\": 16/\"linear_num_key_heads\": 2/' -e "
             "'s/\"linear_num_value_heads\": 32/\"linear_num_value_heads\": 4/' %s > %s",
             HF "qwen3-next-80b-a3b-instruct.json", gdn);
    assert_int_equal(system(cmd), 0);
    char gargs[256];
    snprintf(gargs, sizeof gargs, "%s --serve --gpu h200 --tp 4 --gpus 4", gdn);
    assert_usage(gargs, "--tp: 4 tensor-parallel ranks do not divide linear_num_key_heads (2) and linear_num_value_heads (4)");
    remove(gdn);
    /* 3 kv heads on 4 ranks: QKVParallelLinear's divide(tp_size, total_num_kv_heads) asserts */
    char path[] = "/tmp/vc_serve_tp_XXXXXX.json";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    const char *cfg = "{\"model_type\": \"llama\", \"hidden_size\": 96, \"intermediate_size\": 256, \"num_attention_heads\": 12, "
                      "\"num_key_value_heads\": 3, \"num_hidden_layers\": 2, \"vocab_size\": 384, \"max_position_embeddings\": 4096}";
    assert_int_equal(write(fd, cfg, strlen(cfg)), (ssize_t)strlen(cfg));
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "%s --serve --gpu h200 --tp 4 --gpus 4", path);
    assert_usage(args, "--tp: 4 tensor-parallel ranks are not a multiple of num_key_value_heads (3)");
    remove(path);
    /* a vocabulary of 320 (5 x 64) on 3 ranks: VocabParallelEmbedding's divide(num_embeddings_padded, tp_size)
     * asserts (vllm/distributed/utils.py ensure_divisibility); the heads and widths divide */
    char vpath[] = "/tmp/vc_serve_tp_vocab_XXXXXX.json";
    int vfd = mkstemps(vpath, 5);
    assert_true(vfd >= 0);
    const char *vcfg = "{\"model_type\": \"llama\", \"hidden_size\": 96, \"intermediate_size\": 384, "
                       "\"num_attention_heads\": 6, \"num_key_value_heads\": 3, \"num_hidden_layers\": 2, "
                       "\"vocab_size\": 300, \"max_position_embeddings\": 4096}";
    assert_int_equal(write(vfd, vcfg, strlen(vcfg)), (ssize_t)strlen(vcfg));
    close(vfd);
    snprintf(args, sizeof args, "%s --serve --gpu h200 --tp 3 --gpus 3", vpath);
    assert_usage(args, "--tp: 3 tensor-parallel ranks do not divide the vocabulary padded to a multiple of 64 (320 of "
                 "vocab_size 300)");
    /* Megatron's split pads to 128 x 3 instead: -m infer at tp 3 runs */
    snprintf(args, sizeof args, "%s -m infer --tp 3 --gpus 3", vpath);
    cli_run ok;
    run(&ok, args);
    if (ok.status != 0) fail_msg("vramcalc %s: exit %d: %s", args, ok.status, ok.err);
    remove(vpath);
}

/* The elements of the first instance whose name ends in `suffix` in Megatron's split at tp ranks (vc__model_at:
 * training, -m infer, -m generate). */
static int64_t megatron_params(const vc_model *m, int64_t tp, const char *suffix)
{
    vc_options o;
    vc_options_init(&o);
    o.tp = tp;
    o.gpus = tp;
    const vc_model *r = NULL;
    vc_error err;
    memset(&err, 0, sizeof err);
    if (vc__model_at(m, &o, &r, &err)) fail_msg("Megatron's split at tp %lld: %s", (long long)tp, err.msg);
    size_t ls = strlen(suffix);
    for (size_t i = 0; i < r->ninst; i++) {
        const char *n = r->inst[i].name;
        if (!n || strlen(n) < ls || strcmp(n + strlen(n) - ls, suffix)) continue;
        int64_t s = 0;
        for (int k = 0; k < r->inst[i].np; k++) s += r->par[r->inst[i].params[k]].numel;
        return s;
    }
    fail_msg("no layer named *%s at tp %lld", suffix, (long long)tp);
    return 0;
}

/* The vocabulary rows of a rank under --serve: vllm/model_executor/layers/vocab_parallel_embedding.py @ 7f5d141a
 * VocabParallelEmbedding.__init__ (ParallelLMHead likewise): num_embeddings_padded = pad_vocab_size(vocab_size,
 * DEFAULT_VOCAB_PADDING_SIZE 64), num_embeddings_per_partition = divide(num_embeddings_padded, tp_size); the
 * training split keeps Megatron's (training/vocab_utils.py: padded to a multiple of 128 x tp, then / tp). */
static void vocab_rows_vllm(void **state)
{
    (void)state;
    /* Qwen3-30B-A3B, vocab 151936 (2374 x 64), hidden 2048, untied: 151936 / 8 = 18992 rows a rank under vLLM
     * (Megatron's 128 x 8 padding, 152576 / 8 = 19072, is not reachable: its split refuses 4 kv heads on 8
     * ranks); tp 4: 151936 / 4 = 37984 under vLLM, Megatron 151936 up to a multiple of 512 = 152064, / 4 = 38016 */
    vc_model *q = load_file(HF "qwen3-30b-a3b.json");
    assert_int_equal(rank_params(q, 8, "embed_tokens"), INT64_C(18992) * 2048);
    assert_int_equal(rank_params(q, 8, "lm_head"), INT64_C(18992) * 2048);
    assert_int_equal(rank_params(q, 4, "embed_tokens"), INT64_C(37984) * 2048);
    assert_int_equal(rank_params(q, 4, "lm_head"), INT64_C(37984) * 2048);
    assert_int_equal(megatron_params(q, 4, "embed_tokens"), INT64_C(38016) * 2048);
    vc_model_free(q);
    /* Llama-3.1-8B, vocab 128256 (2004 x 64), hidden 4096, untied: tp 2 64128 rows (Megatron: a multiple of
     * 256 is 128256 too, the same 64128), tp 8 16032 (Megatron: 129024 / 8 = 16128) */
    vc_model *l = load_file(HF "llama-3.1-8b.json");
    assert_int_equal(rank_params(l, 2, "embed_tokens"), INT64_C(64128) * 4096);
    assert_int_equal(rank_params(l, 2, "lm_head"), INT64_C(64128) * 4096);
    assert_int_equal(megatron_params(l, 2, "embed_tokens"), INT64_C(64128) * 4096);
    assert_int_equal(rank_params(l, 8, "embed_tokens"), INT64_C(16032) * 4096);
    assert_int_equal(rank_params(l, 8, "lm_head"), INT64_C(16032) * 4096);
    assert_int_equal(megatron_params(l, 8, "embed_tokens"), INT64_C(16128) * 4096);
    vc_model_free(l);
    /* Llama-3.2-3B, tied (tie_word_embeddings: lm_head is embed_tokens), vocab 128256, hidden 3072: tp 8
     * 16032 rows (Megatron 16128) in the one tensor */
    vc_model *t = load_file(HF "llama-3.2-3b.json");
    assert_int_equal(rank_params(t, 8, "embed_tokens"), INT64_C(16032) * 3072);
    assert_int_equal(megatron_params(t, 8, "embed_tokens"), INT64_C(16128) * 3072);
    vc_model_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kv_replicated_qwen3_moe),
        cmocka_unit_test(mqa_starcoder),
        cmocka_unit_test(kv_replicated_gemma3),
        cmocka_unit_test(mxfp4_padded_gpt_oss),
        cmocka_unit_test(mxfp4_backend_per_card),
        cmocka_unit_test(mxfp4_weights_per_card),
        cmocka_unit_test(mxfp4_refused),
        cmocka_unit_test(deltanet_qwen3_next),
        cmocka_unit_test(refusals),
        cmocka_unit_test(vocab_rows_vllm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
