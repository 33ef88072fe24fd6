/* The Qwen vision towers under --serve --tp (src/hf/hf_vision.c vision_tp): a rank's share of the tower as
 * vLLM's default mm_encoder_tp_mode "weights" builds it, derived by hand from its source
 * (vllm-project/vllm):
 *  - vllm/config/multimodal.py @ 01230b40 MultiModalConfig.mm_encoder_tp_mode = "weights": "split the
 *    weights of each layer across TP ranks" (the default);
 *  - vllm/model_executor/models/qwen2_5_vl.py @ 002d181a: Qwen2_5_VisionAttention qkv QKVParallelLinear
 *    (total_num_kv_heads = num_heads, bias) -> [3 hidden / t, hidden] + its bias 3 hidden / t; proj
 *    RowParallelLinear -> [hidden, hidden / t] + its whole bias; Qwen2_5_VisionMLP gate_up_proj
 *    MergedColumnParallelLinear([intermediate] x 2, bias) -> gate and up [intermediate / t, hidden] + bias
 *    intermediate / t each, down_proj RowParallelLinear -> [hidden, intermediate / t] + bias hidden;
 *    Qwen2_5_VisionPatchMerger mlp.0 ColumnParallelLinear(4 hidden, 4 hidden) -> [4 hidden / t, 4 hidden] +
 *    4 hidden / t, mlp.2 RowParallelLinear(4 hidden, out) -> [out, 4 hidden / t] + out; patch_embed
 *    ReplicatedLinear (no bias) and the RMSNorms (weight only) whole;
 *  - vllm/model_executor/models/qwen3_vl.py @ 002d7b93: the same attention; Qwen3_VisionMLP linear_fc1
 *    ColumnParallelLinear, linear_fc2 RowParallelLinear (biases); Qwen3_VisionPatchMerger linear_fc1 column,
 *    linear_fc2 row, for the merger and each deepstack merger; patch_embed nn.Conv3d (bias), pos_embed
 *    nn.Embedding and the LayerNorms (weight and bias; the deepstack mergers' of 4 hidden) whole;
 *  - vllm/model_executor/models/qwen3_5.py @ 00def4f8: Qwen3.5 / 3.6 build Qwen3_VisionTransformer (no
 *    deepstack merger: deepstack_visual_indexes is empty in their configs).
 * Megatron's split (training, -m infer, -m generate) keeps refusing the towers. */
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

/* The parameters (weights and biases) of the tower's layers ("visual." ...) in the model vLLM's split makes at
 * tp ranks (vc__model_at_vllm, as vc_serve takes it); tp 1: the model as loaded. */
static int64_t tower_params(const vc_model *m, int64_t tp)
{
    vc_options o;
    vc_options_init(&o);
    o.tp = tp;
    o.gpus = tp;
    const vc_model *r = NULL;
    vc_error err;
    memset(&err, 0, sizeof err);
    if (vc__model_at_vllm(m, &o, 0, &r, &err)) fail_msg("vLLM's split at tp %lld: %s", (long long)tp, err.msg);
    int64_t s = 0;
    int n = 0;
    for (size_t i = 0; i < r->ninst; i++) {
        const char *nm = r->inst[i].name;
        if (!nm || strncmp(nm, "visual.", 7)) continue;
        n++;
        for (int k = 0; k < r->inst[i].np; k++) s += r->par[r->inst[i].params[k]].numel;
    }
    if (!n) fail_msg("no visual.* layer at tp %lld", (long long)tp);
    return s;
}

/* Qwen2.5-VL-7B's tower (tests/data/hf/qwen2.5-vl-7b-instruct.json vision_config: depth 32, hidden 1280,
 * 16 heads, intermediate 3420, patch 14, temporal 2, 3 channels, merge 2, out_hidden_size 3584) at t ranks */
static int64_t qwen2_5_vl_7b(int64_t t)
{
    const int64_t C = 1280, I = 3420, H4 = 4 * 1280, out = 3584;
    const int64_t block = 2 * C                     /* norm1, norm2 (RMSNorm) */
                          + 3 * C / t * C + 3 * C / t /* attn.qkv */
                          + C * (C / t) + C          /* attn.proj */
                          + 2 * (I / t * C + I / t)  /* mlp.gate_proj, mlp.up_proj */
                          + C * (I / t) + C;         /* mlp.down_proj */
    return C * 3 * 2 * 14 * 14 /* patch_embed.proj */ + 32 * block + C /* merger.ln_q */ + H4 / t * H4 + H4 / t +
           out * (H4 / t) + out;
}

/* Qwen3-VL's and Qwen3.5's tower (hidden 1152, 16 heads, intermediate 4304, depth 27, patch 16, temporal 2,
 * 3 channels, merge 2, 2304 positions) with out_hidden_size out and deep deepstack mergers, at t ranks */
static int64_t qwen3_tower(int64_t t, int64_t out, int64_t deep)
{
    const int64_t C = 1152, I = 4304, H4 = 4 * 1152;
    const int64_t block = 2 * 2 * C                   /* norm1, norm2 (LayerNorm: weight and bias) */
                          + 3 * C / t * C + 3 * C / t /* attn.qkv */
                          + C * (C / t) + C          /* attn.proj */
                          + I / t * C + I / t        /* mlp.linear_fc1 */
                          + C * (I / t) + C;         /* mlp.linear_fc2 */
    const int64_t merger = H4 / t * H4 + H4 / t + out * (H4 / t) + out; /* linear_fc1, linear_fc2 */
    return C * 3 * 2 * 16 * 16 + C /* patch_embed.proj (Conv3d, bias) */ + 2304 * C /* pos_embed */ + 27 * block +
           2 * C + merger /* merger (norm of hidden) */ + deep * (2 * H4 + merger) /* deepstack (norm of 4 hidden) */;
}

static void qwen2_5_vl_tower(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "qwen2.5-vl-7b-instruct.json");
    for (int64_t t = 1; t <= 4; t *= 2) assert_int_equal(tower_params(m, t), qwen2_5_vl_7b(t));
    /* the whole tower: 676,550,144 parameters, Qwen2.5-VL's ~0.68B ViT */
    assert_int_equal(qwen2_5_vl_7b(1), INT64_C(676550144));
    vc_model_free(m);
}

static void qwen3_vl_tower(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "qwen3-vl-8b-instruct.json"); /* out_hidden_size 4096, deepstack [8, 16, 24] */
    for (int64_t t = 1; t <= 8; t *= 2) assert_int_equal(tower_params(m, t), qwen3_tower(t, 4096, 3));
    vc_model_free(m);
}

static void qwen3_6_moe_tower(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "qwen3.6-35b-a3b.json"); /* out_hidden_size 2048, deepstack_visual_indexes [] */
    for (int64_t t = 1; t <= 8; t *= 2) assert_int_equal(tower_params(m, t), qwen3_tower(t, 2048, 0));
    vc_model_free(m);
}

static int64_t up512(int64_t bytes) { return (bytes + 511) / 512 * 512; } /* the caching allocator's rounding */

/* Qwen2.5-VL-7B on 2 H200s (bf16): the serve figures of a rank, the tower's share included */
static void qwen2_5_vl_serve_tp2(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "qwen2.5-vl-7b-instruct.json");
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.precision = VC_PREC_BF16; /* torch_dtype bfloat16: vLLM's --dtype auto */
    o.prompt = 1024;
    o.new_tokens = 256;
    o.tp = 2;
    o.gpus = 2;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec g;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_gpu_parse("h200", &g, &err), VC_OK);
    vc_serve_result r;
    if (vc_serve(m, &o, &so, &g, &r, &err)) fail_msg("serve: %s", err.msg);
    /* the tower's tensors on a rank, 2 bytes each, each rounded to 512 by the allocator */
    const int64_t C = 1280, I = 3420 / 2, H4 = 5120, t = 2;
    const int64_t vblock = 2 * up512(C * 2) + up512(3 * C / t * C * 2) + up512(3 * C / t * 2) + up512(C * C / t * 2) +
                           up512(C * 2) + 2 * (up512(I * C * 2) + up512(I * 2)) + up512(C * I * 2) + up512(C * 2);
    const int64_t tower = up512(C * 1176 * 2) + 32 * vblock + up512(C * 2) + up512(H4 / t * H4 * 2) + up512(H4 / t * 2) +
                          up512(INT64_C(3584) * H4 / t * 2) + up512(3584 * 2);
    /* the language model's share (Megatron's table, hf_tp.c): 28 layers of q_proj 3584 x 14 heads of 128 (+ bias),
     * k_proj and v_proj 3584 x 2 kv heads of 128 (+ biases), o_proj, gate/up/down of 18944 / 2, two RMSNorms; the
     * final norm; embed_tokens and lm_head of 152064 / 2 rows (a multiple of 128 x 2 already); the rotary
     * inv_freq (64 fp32); no vLLM cos/sin cache for the mrope rope_scaling (serve.c vllm_rope_cache: plain
     * rope types only) */
    const int64_t H = 3584, q = 14 * 128, kv = 2 * 128, Il = 18944 / 2, V = 152064 / 2;
    const int64_t layer = up512(H * q * 2) + up512(q * 2) + 2 * (up512(H * kv * 2) + up512(kv * 2)) + up512(q * H * 2) +
                          2 * up512(H * Il * 2) + up512(Il * H * 2) + 2 * up512(H * 2);
    const int64_t lm = 28 * layer + up512(H * 2) + 2 * up512(V * H * 2) + up512(64 * 4);
    assert_int_equal(r.weights, tower + lm);
    /* page_size_bytes: 2 x 16 tokens x 2 kv heads (4 / 2) x 128 x 2 bytes x 28 layers = 458752 */
    assert_int_equal(r.page_bytes, INT64_C(2) * 16 * 2 * 128 * 2 * 28);
    assert_int_equal(r.blocks, r.kv_cache / INT64_C(458752));  /* get_num_blocks */
    assert_int_equal(r.concurrency, r.blocks / (1280 / 16)); /* cdiv(1024 + 256, 16) blocks a request */
    vc_model_free(m);
}

/* what stays refused, exit 2 naming the option */
static void refusals(void **state)
{
    (void)state;
    /* MergedColumnParallelLinear's divide(3420, 8) asserts */
    assert_usage(HF "qwen2.5-vl-7b-instruct.json --serve --gpu h200 --tp 8 --gpus 8", "--tp: 8 tensor-parallel ranks "
                 "do not divide vision_config.intermediate_size (3420)");
    /* Megatron's split (training, -m infer, -m generate): not modelled for the towers */
    assert_usage(HF "qwen3-vl-8b-instruct.json --tp 2 --gpus 2", "--tp: the vision tower of qwen3_vl on tensor-parallel "
                 "ranks is not modelled");
    assert_usage(HF "qwen2.5-vl-7b-instruct.json -m generate --tp 2 --gpus 2", "--tp: the vision tower of qwen2_5_vl on "
                 "tensor-parallel ranks is not modelled");
    assert_usage(HF "qwen3.6-35b-a3b.json -m infer --tp 2 --gpus 2", "--tp: the vision tower of qwen3_5_moe on "
                 "tensor-parallel ranks is not modelled");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(qwen2_5_vl_tower),
        cmocka_unit_test(qwen3_vl_tower),
        cmocka_unit_test(qwen3_6_moe_tower),
        cmocka_unit_test(qwen2_5_vl_serve_tp2),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
