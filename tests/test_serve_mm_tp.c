/*
 * test_serve_mm_tp.c — --serve --tp for Gemma 3's, PaliGemma's and Llama 4's vision towers (issue 31): a rank's shards of the
 * tower's weights as vLLM splits them and the encoder phase of the profiling run on one rank
 * (src/hf/hf_vision.c vision_tp, src/hf/hf_llama4.c vc__hf_llama4_vision_read, src/engine/serve_mm.c).
 *
 * Every value below is derived by hand from vLLM's model files under the default mm_encoder_tp_mode "weights"
 * (vllm-project/vllm vllm/config/multimodal.py @ 01230b40 MultiModalConfig.mm_encoder_tp_mode):
 *  - siglip.py @ 0c028ba4 (Gemma 3's tower; gemma3_mm.py @ e5fa9450 Gemma3ForConditionalGeneration.__init__ builds
 *    SiglipVisionModel and Gemma3MultiModalProjector): SiglipAttention.qkv_proj QKVParallelLinear (bias) and
 *    out_proj RowParallelLinear, num_heads_per_partition = divide(num_heads, tp_size); SiglipMLP.fc1
 *    ColumnParallelLinear and fc2 RowParallelLinear; SiglipVisionEmbeddings (Conv2dLayer, nn.Embedding), the
 *    nn.LayerNorms and the projector (mm_input_projection_weight, an nn.Parameter; mm_soft_emb_norm) whole;
 *  - mllama4.py @ 00dd5493 (Llama 4's): Llama4VisionAttention.qkv_proj QKVParallelLinear and o_proj
 *    RowParallelLinear, with biases; Llama4VisionMLP fc1 ColumnParallelLinear and fc2 RowParallelLinear (the
 *    encoder layers' with biases, the vision adapter's without: multi_modal_projector_bias false);
 *    Llama4UnfoldConvolution.linear and Llama4MultiModalProjector.linear_1 ColumnParallelLinear(gather_output=True);
 *    class_embedding, positional_embedding_vlm and the LayerNorms whole;
 *  - vllm/model_executor/layers/linear.py: ColumnParallelLinear divide(output_size, tp) rows and as many bias values,
 *    RowParallelLinear divide(input_size, tp) columns and its whole bias;
 *  - a RowParallelLinear's all-reduce is out-of-place (parallel_state.py GroupCoordinator.all_reduce; pynccl.py
 *    @ 9a4b60a4 PyNcclCommunicator.all_reduce: torch.empty_like), its input and output alive as it returns; a
 *    gather_output all-gather (base_device_communicator.py @ a12c7345 DeviceCommunicatorBase.all_gather) holds its
 *    input, the [k x rows, .., n / k] buffer and the reshape's copy after movedim.
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

#include <cjson/cJSON.h>

#include "vramcalc/vramcalc.h"
#include "cli_run.h"

#define HF VC_TEST_DATA "/hf/"

/* The parameters of the VisionWeights layers (the tower and projector, loaded and not run) of the model the CLI
 * builds for `args` (--emit-model): each weight's elements and, with "bias", shape[0] more. */
static int64_t tower_parameters(const char *args)
{
    char a[1024];
    snprintf(a, sizeof a, "%s %s --emit-model", VC_CLI, args);
    FILE *f = popen(a, "r"); /* the model JSON passes cli_run's buffer */
    assert_non_null(f);
    size_t n_out = 0, cap = 1 << 20;
    char *out = malloc(cap);
    assert_non_null(out);
    for (size_t k; (k = fread(out + n_out, 1, cap - 1 - n_out, f)) > 0;) {
        n_out += k;
        if (n_out == cap - 1) {
            char *g = realloc(out, cap *= 2);
            assert_non_null(g);
            out = g;
        }
    }
    out[n_out] = 0;
    int st = pclose(f);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("%s: exit %d", a, st);
    cJSON *m = cJSON_Parse(out);
    free(out);
    assert_non_null(m);
    int64_t n = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(m, "layers"))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(l, "type");
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "VisionWeights")) continue;
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(l, "shape"), *d;
        int64_t p = 1;
        cJSON_ArrayForEach(d, sh) p *= (int64_t)d->valuedouble;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "bias"))) p += (int64_t)sh->child->valuedouble;
        n += p;
    }
    cJSON_Delete(m);
    return n;
}

static void serve(const char *cfg, int tp, vc_serve_result *r)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(cfg, &m, &err)) fail_msg("load %s: %s", cfg, err.msg);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16; /* the configs' torch_dtype: vLLM's --dtype auto */
    o.prompt = 1024;
    o.new_tokens = 256;
    o.tp = o.gpus = tp;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec g;
    assert_int_equal(vc_gpu_parse("h100-80gb", &g, &err), VC_OK);
    if (vc_serve(m, &o, &so, &g, r, &err)) fail_msg("vc_serve: %s", err.msg);
    vc_model_free(m);
}

/* Gemma 3 27B (vision_config: hidden 1152, intermediate 4304, 16 heads, 27 layers, image 896, patch 14; text
 * hidden 5376), --tp 2 on h100-80gb.
 * Weights on a rank: patch_embedding 1152 x 588 + 1152 = 678,528; position_embedding 64^2 x 1152 = 4,718,592; a
 * layer: layer_norm1 and layer_norm2 2,304 each, q/k/v [576, 1152] + 576 = 664,128 each, out_proj [1152, 576] +
 * 1152 = 664,704, fc1 [2152, 1152] + 2152 = 2,481,256, fc2 [1152, 2152] + 1152 = 2,480,256: 7,623,208, x 27 =
 * 205,826,616; post_layernorm 2,304; mm_soft_emb_norm 1,152; mm_input_projection_weight 1152 x 5376 = 6,193,152:
 * 217,420,344 (at --tp 1 the layer is 15,239,504, the tower 423,060,336).
 * The encoder phase (32 dummy items of 4096 patches: 131,072 patches; tests/test_serve_mm.c gemma3 for the batch),
 * bytes per patch on a rank: the pixel values 3 x 14 x 14 x 2 = 1176, the embeddings' output 2304 (held by
 * SiglipVisionTransformer.forward and SiglipEncoder.forward's hidden_states_pool from the second layer on, siglip.py
 * @ 0c028ba4), and the worst op, SiglipMLP.fc2's all-reduce: the layer's input, the attention block's sum,
 * layer_norm2's output 3 x 2304, the activation 2152 x 2, fc2's output and the all-reduce's 2 x 2304: 1176 + 2304 +
 * 6912 + 4304 + 4608 = 19,304 (the attention's: 1176 + 2304 + x, layer_norm1 2 x 2304 + qkv and its output 4 x 576
 * x 2 + lse 4 x 8 = 12,728; out_proj's with its all-reduce 17,304; fc1's activation 1176 + 2304 + 6912 + 2 x 4304 =
 * 19,000): 19,304 x 131,072 = 2,530,213,888 B above the weights (27,608 B a patch at --tp 1: tests/test_serve_mm.c). */
static void gemma3_27b_tp2(void **state)
{
    (void)state;
    assert_int_equal(tower_parameters(HF "gemma-3-27b-it.json --serve --gpu h100-80gb --tp 2 --gpus 2"), INT64_C(217420344));
    assert_int_equal(tower_parameters(HF "gemma-3-27b-it.json --serve --gpu h100-80gb"), INT64_C(423060336));
    vc_serve_result r;
    serve(HF "gemma-3-27b-it.json", 2, &r);
    assert_int_equal(r.mm_items, 32);
    assert_int_equal(r.mm_encoder_peak - r.weights, INT64_C(2530213888));
    assert_true(r.profile_peak >= r.mm_encoder_peak);
}

/* Llama 4 Scout (vision_config: hidden 1408, intermediate 5632, 16 heads, 34 layers, image 336, patch 14,
 * projector_input_dim = projector_output_dim = vision_output_dim 4096, pixel_shuffle_ratio 0.5; text hidden 5120),
 * --tp 4 on h100-80gb.
 * Weights on a rank: patch_embedding.linear [352, 588] = 206,976; class_embedding 1,408; positional_embedding_vlm
 * 577 x 1408 = 812,416; layernorm_pre and layernorm_post 2,816 each; a layer: q/k/v [352, 1408] + 352 = 495,968
 * each, o_proj [1408, 352] + 1408 = 497,024, fc1 [1408, 1408] + 1408 = 1,983,872, fc2 [1408, 1408] + 1408 =
 * 1,983,872, two LayerNorms 5,632: 5,958,304, x 34 = 202,582,336; the adapter's fc1 [1024, 5632] = 5,767,168 and
 * fc2 [4096, 1024] = 4,194,304; multi_modal_projector.linear_1 [1280, 4096] = 5,242,880: 218,813,120.
 * The encoder phase: one dummy item of 17 tiles (tests/test_serve_mm.c llama4), per tile S = 576 patches, s = 577
 * rows, 144 tokens after the pixel shuffle; e = 2: the pixel values X = 576 x 588 x 2 = 677,376, sC = 577 x 1408
 * x 2 = 1,624,832, a rank's [s, 352] 406,208. The worst op is a layer's fc2 all-reduce from the second layer on:
 * X, the encoder's input (layernorm_pre's output) sC, and in the layer its input, the attention block's sum,
 * post_attention_layernorm's output 3 sC, the GELU's [577, 1408] 1,624,832, fc2's output and the all-reduce's 2
 * sC: 677,376 + 1,624,832 + 4,874,496 + 1,624,832 + 3,249,664 = 12,051,200 a tile (the rotary's: 2 sC + qkv 3 x
 * 406,208 + the float32 copies 2 x 577 x 352 x 4 + the complex products as many + the casts 2 x 406,208 =
 * 8,530,368 in the layer; o_proj with its all-reduce 2 sC + 6 x 406,208 + 2 sC = 8,936,576; the patch embedding's
 * all-gather 2 X + 405,504 + 2 x 1,622,016 = 5,004,288; linear_1's X + 144 x 4096 x 2 + 144 x 1280 x 2 + 2 x 144
 * x 5120 x 2 = 5,174,784): 17 x 12,051,200 = 204,870,400 B above the weights. */
static void llama4_scout_tp4(void **state)
{
    (void)state;
    assert_int_equal(tower_parameters(HF "llama-4-scout-17b-16e-instruct.json --serve --gpu h100-80gb --tp 4 --gpus 4"),
                     INT64_C(218813120));
    vc_serve_result r;
    serve(HF "llama-4-scout-17b-16e-instruct.json", 4, &r);
    assert_int_equal(r.mm_items, 1);
    assert_int_equal(r.mm_encoder_peak - r.weights, INT64_C(204870400));
}

/* PaliGemma 3B (paligemma-3b-pt-224: vision hidden 1152, intermediate 4304, 16 heads, 27 layers, image 224, patch
 * 14; projection_dim = text hidden 2048), --tp 2: vLLM's PaliGemmaForConditionalGeneration builds the same
 * SiglipVisionModel (split as Gemma 3's, above) and PaliGemmaMultiModalProjector's nn.Linear, whole on every rank
 * (vllm/model_executor/models/paligemma.py as 1CatAI/1Cat-vLLM @ 92a785cb holds it; vllm-project/vllm @ fd472a64).
 * Weights on a rank: patch_embedding 1152 x 588 + 1152 = 678,528; position_embedding 16^2 x 1152 = 294,912; a layer
 * 7,623,208 (as Gemma 3 27B's above), x 27 = 205,826,616; post_layernorm 2,304; the projector [2048, 1152] + 2048 =
 * 2,361,344: 209,163,704 (at --tp 1 the layer 15,239,504: 414,803,696).
 * The encoder phase (32 dummy items of 256 patches, 8,192 patches; tests/test_serve_mm.c paligemma): 19,304 B a patch
 * as Gemma 3 27B's above (the projector's 1176 + 1152 x 2 + 2048 x 2 = 7,576 and the scaling's 1176 + 2 x 2048 x 2
 * = 9,368 below): 158,138,368 B above the weights. */
static void paligemma_tp2(void **state)
{
    (void)state;
    assert_int_equal(tower_parameters(HF "paligemma-3b-pt-224.json --serve --gpu h100-80gb --tp 2 --gpus 2"), INT64_C(209163704));
    assert_int_equal(tower_parameters(HF "paligemma-3b-pt-224.json --serve --gpu h100-80gb"), INT64_C(414803696));
    vc_serve_result r;
    serve(HF "paligemma-3b-pt-224.json", 2, &r);
    assert_int_equal(r.mm_items, 32);
    assert_int_equal(r.mm_encoder_peak - r.weights, INT64_C(158138368));
    assert_usage(HF "paligemma-3b-pt-224.json --serve --gpu h100-80gb --tp 3 --gpus 3",
                 "3 tensor-parallel ranks do not divide vision_config.num_attention_heads (16)");
}

/* Ranks vLLM's divide() refuses: 16 heads over 3 (Gemma 3's SigLIP, Llama 4's tower), exit 2 naming --tp */
static void refused(void **state)
{
    (void)state;
    assert_usage(HF "gemma-3-27b-it.json --serve --gpu h100-80gb --tp 3 --gpus 3",
                 "3 tensor-parallel ranks do not divide vision_config.num_attention_heads (16)");
    assert_usage(HF "llama-4-scout-17b-16e-instruct.json --serve --gpu h100-80gb --tp 3 --gpus 3",
                 "3 tensor-parallel ranks do not divide vision_config.num_attention_heads (16)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gemma3_27b_tp2),
        cmocka_unit_test(llama4_scout_tp4),
        cmocka_unit_test(paligemma_tp2),
        cmocka_unit_test(refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
