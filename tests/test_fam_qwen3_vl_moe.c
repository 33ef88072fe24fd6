/*
 * test_fam_qwen3_vl_moe.c — model_type "qwen3_vl_moe" (issue 31): Qwen3VLMoeForConditionalGeneration
 * (Qwen3-VL-30B-A3B-Instruct / -Thinking, Qwen3-VL-235B-A22B-Instruct) as the row of src/hf/hf.c and
 * src/hf/hf_qwen3_vl_moe.c build it from configuration_qwen3_vl_moe.py @ 008e5743 and
 * modeling_qwen3_vl_moe.py @ 0142cff2: Qwen3-VL's decoder with Qwen3VLMoeTextSparseMoeBlock (stacked
 * experts through grouped_mm, no shared expert) and Qwen3-VL's vision tower with its deepstack mergers.
 *
 * Configs: tests/data/hf/qwen3-vl-30b-a3b-instruct.json and qwen3-vl-235b-a22b-instruct.json. The published
 * config.json files were not in the stored sources; they are written in the layout of the published
 * Qwen3-VL-8B-Instruct config (tests/data/hf/qwen3-vl-8b-instruct.json) with the values published for the
 * two checkpoints: the 30B's text_config as a transcription of its config.json gives it (hidden 2048,
 * intermediate 6144, 48 layers, 32 heads, 4 kv heads, head_dim 128, 128 experts, top-8, moe 768, rope_theta
 * 5e6, mrope [24, 20, 20], vocab 151936, max_position_embeddings 262144, tie_word_embeddings false at the top,
 * vision out_hidden_size 2048, deepstack [8, 16, 24]); the 235B's from its published training arguments
 * (94 layers, hidden 4096, ffn 12288, 64 heads, 4 query groups, kv channels 128, moe 1536, top-8, 128 experts,
 * untied) and vision out_hidden_size 4096, its LM's width.
 *
 * 1. Parameters, exact, by hand from the module shapes (= bench/accuracy/llm/qwen3vl_replica.py's count on
 *    the meta device), against the model cards' 31.1B and 236B; the language model trainable, the tower not.
 * 2. The measured cases of bench/accuracy/llm/measured.json llm632-llm649 (run_suite.py's q3vm and q3vmi
 *    rows: training, LoRA r=8 on q_proj,v_proj, checkpointing, inference, generate, on text and on images;
 *    torch 1.13 CPU, the allocator counter).
 * 3. Every path a decoder family runs: --mode generate, --serve on an H100 (vLLM's qwen3_vl_moe.py), an
 *    image, --ep with --moe-imbalance.
 * 4. Refusals, exit 2 naming the key or the option.
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

#include "cli_run.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define Q30 HF "qwen3-vl-30b-a3b-instruct.json"
#define Q235 HF "qwen3-vl-235b-a22b-instruct.json"

static vc_model *load(const char *file)
{
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(file, NULL, &m, &err) != VC_OK) fail_msg("%s: %s %s", file, err.path, err.msg);
    return m;
}

/* named_parameters() of Qwen3VLMoeForConditionalGeneration (modeling_qwen3_vl_moe.py @ 0142cff2), module by
 * module.
 * Qwen3-VL-30B-A3B (V 151936, H 2048, 48 layers, 32 heads x 128, 4 kv heads, 128 experts of 768):
 *   embed_tokens and the untied lm_head 2 x 151936 x 2048 = 622,329,856;
 *   a layer: Qwen3VLMoeTextAttention q_proj 2048 x 4096 = 8,388,608, k_proj and v_proj 2 x 2048 x 512 =
 *   2,097,152, o_proj 4096 x 2048 = 8,388,608, q_norm / k_norm 2 x 128 = 256: 18,874,624;
 *   Qwen3VLMoeTextSparseMoeBlock: gate.weight [128, 2048] = 262,144, experts.gate_up_proj [128, 1536, 2048]
 *   = 402,653,184, experts.down_proj [128, 2048, 768] = 201,326,592: 604,241,920; input_layernorm and
 *   post_attention_layernorm 2 x 2048: 623,120,640, x 48 = 29,909,790,720; norm 2048:
 *   language model 30,532,122,624 (= Qwen3-30B-A3B's, tests/test_hf.c).
 *   The tower (Qwen3VLMoeVisionModel, Qwen3-VL's: tests/test_qwen3vl.c) with out_hidden_size 2048:
 *   patch_embed 1152 x 1536 + 1152 = 1,770,624; pos_embed 2304 x 1152 = 2,654,208; 27 blocks x 15,239,504 =
 *   411,466,608; merger norm 2 x 1152, linear_fc1 4608 x 4608 + 4608, linear_fc2 4608 x 2048 + 2048:
 *   30,679,808; 3 deepstack mergers (norm 2 x 4608): 3 x 30,686,720 = 92,060,160: 538,631,408.
 *   Total 31,070,754,032: the model card's 31.1B.
 * Qwen3-VL-235B-A22B (H 4096, 94 layers, 64 heads x 128, 4 kv heads, 128 experts of 1536):
 *   embed_tokens and lm_head 2 x 151936 x 4096 = 1,244,659,712;
 *   a layer: q_proj 4096 x 8192 = 33,554,432, k_proj and v_proj 2 x 4096 x 512 = 4,194,304, o_proj
 *   33,554,432, q_norm / k_norm 256: 71,303,424; gate 128 x 4096 = 524,288, gate_up_proj 128 x 3072 x 4096 =
 *   1,610,612,736, down_proj 128 x 4096 x 1536 = 805,306,368: 2,416,443,392; the norms 8192:
 *   2,487,755,008, x 94 = 233,848,970,752; norm 4096: language model 235,093,634,560.
 *   The tower with out_hidden_size 4096: 576,388,336 (Qwen3-VL-8B's, tests/test_qwen3vl.c).
 *   Total 235,670,022,896: the model card's 236B. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = load(Q30);
    assert_int_equal(vc_model_parameters(m), INT64_C(31070754032));
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(30532122624));
    vc_model_free(m);
    m = load(Q235);
    assert_int_equal(vc_model_parameters(m), INT64_C(235670022896));
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(235093634560));
    vc_model_free(m);
    /* lm_head tied by the config's own tie_word_embeddings (hf_qwen3_vl_moe.c), whatever text_config's says
     * (transformers 5 gates the tie from the outer config): one embedding matrix fewer */
    char path[] = "/tmp/vc_q3vmXXXXXX.json";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"model_type\": \"qwen3_vl_moe\", \"tie_word_embeddings\": true, \"text_config\": {\"vocab_size\": 1000, "
               "\"hidden_size\": 128, \"intermediate_size\": 256, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
               "\"num_key_value_heads\": 2, \"num_experts\": 8, \"moe_intermediate_size\": 64, \"tie_word_embeddings\": false}, "
               "\"vision_config\": "
               "{\"depth\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, \"num_heads\": 4, \"out_hidden_size\": 128, "
               "\"deepstack_visual_indexes\": [0]}}");
    fclose(f);
    m = load(path);
    /* head_dim None: hidden // heads = 32. 2 layers x (q 128 x 128 = 16,384, k / v 2 x 128 x 64 = 16,384,
     * o 16,384, q/k norms 2 x 32, gate 8 x 128 = 1,024, gate_up 8 x 128 x 128 = 131,072, down 8 x 128 x 64 =
     * 65,536, norms 256) = 2 x 247,104 = 494,208; embed_tokens 1000 x 128 = 128,000, lm_head the same tensor;
     * norm 128: 622,336, the trainable language model */
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(622336));
    vc_model_free(m);
    remove(path);
    /* the other way: the top-level false (transformers 5.5's saved configs may carry text_config's true):
     * untied, lm_head 1000 x 128 more */
    char path2[] = "/tmp/vc_q3vmXXXXXX.json";
    fd = mkstemps(path2, 5);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    fprintf(f, "{\"model_type\": \"qwen3_vl_moe\", \"tie_word_embeddings\": false, \"text_config\": {\"vocab_size\": 1000, "
               "\"hidden_size\": 128, \"intermediate_size\": 256, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
               "\"num_key_value_heads\": 2, \"num_experts\": 8, \"moe_intermediate_size\": 64, \"tie_word_embeddings\": true}, "
               "\"vision_config\": {\"depth\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, \"num_heads\": 4, "
               "\"out_hidden_size\": 128, \"deepstack_visual_indexes\": [0]}}");
    fclose(f);
    m = load(path2);
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(622336) + 128000);
    vc_model_free(m);
    remove(path2);
}

/* measured.json llm632-llm642 (run_suite.py's q3vm rows, qwen3vl_replica.py with moe_v5_replica.py's stacked
 * experts through grouped_mm): within 1%, but llm636 (bf16, batch 1, 200 tokens, checkpointing and LoRA),
 * 202,240 B (2.49%) below. Its measured peak, 8,118,784 B, is the last op of the last layer's recomputation
 * in backward; the harness (measure_llm.py --per-op-file) holds one [T x k, H] bf16 gradient more through that
 * recomputation (200 x 4 x 128 x 2 = 204,800 B): the backward of the block's `.view(T, k, H).sum(dim=1)`
 * (SumBackward1, then the view's reshape of the expanded gradient: a clone), which saves no tensor and so
 * runs before torch.utils.checkpoint's first unpack triggers the recompute, where vramcalc recomputes at the
 * region's first backward node whatever it saved (src/engine/autograd.c run_node). Recomputing only at a node
 * that unpacks gives 8,117,760 B here (-0.01%) but moves other families' checkpointed cases (gemma4's up to
 * +1.7%), so it is not made here. Held to the suite's 5% (compare.py) */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured train[] = {
        {"qwen3_vl_moe_small.json --seq 64 -b 2 -o adamw -p fp32", 37675008},                      /* llm632 */
        {"qwen3_vl_moe_small.json --seq 128 -b 2 -o adamw -p bf16 --grad-ckpt", 18867712},         /* llm633 */
        {"qwen3_vl_moe_small.json --seq 96 -b 4 -o sgd -p bf16", 26308096},                        /* llm634 */
        {"qwen3_vl_moe_small.json --seq 64 -b 2 -o adamw -p fp32 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 15956992},                                                 /* llm635 */
        {"qwen3_vl_moe_small.json --seq 80 -b 3 -o adam -p fp32", 41906176},                       /* llm637 */
        {"qwen3_vl_moe_small.json --seq 128 -b 2 -m infer -p fp32", 12677120},                     /* llm638 */
        {"qwen3_vl_moe_small.json --seq 64 -b 4 -m infer -p bf16", 6364160},                       /* llm639 */
        {"qwen3_vl_moe_small.json --seq 256 -b 1 -m infer -p bf16", 8168960},                      /* llm640 */
    };
    assert_measured(train, sizeof train / sizeof *train, "", 1.0);
    static const cli_measured ckpt_lora[] = {
        {"qwen3_vl_moe_small.json --seq 200 -b 1 -o adamw -p bf16 --grad-ckpt --lora 8 --lora-alpha 16 "
         "--lora-dropout 0 --lora-targets q_proj,v_proj", 8118784},                                 /* llm636 */
    };
    assert_measured(ckpt_lora, 1, "", 5.0);
    /* generate: llm641 prefill 10,084,864 decode 9,331,712; llm642 prefill 5,055,488 decode 4,887,040 */
    static const struct {
        int batch, prompt, new_tokens;
        const char *prec;
        long long prefill, decode;
    } gen[] = {{1, 64, 16, "fp32", 10084864, 9331712}, {2, 32, 24, "bf16", 5055488, 4887040}};
    for (size_t i = 0; i < sizeof gen / sizeof *gen; i++) {
        long long p = cli_generate_field("qwen3_vl_moe_small", gen[i].batch, gen[i].prompt, gen[i].new_tokens, gen[i].prec,
                                         "\"prefill_peak\": ");
        long long d = cli_generate_field("qwen3_vl_moe_small", gen[i].batch, gen[i].prompt, gen[i].new_tokens, gen[i].prec,
                                         "\"decode_peak\": ");
        double ep = 100.0 * (double)(p - gen[i].prefill) / (double)gen[i].prefill;
        double ed = 100.0 * (double)(d - gen[i].decode) / (double)gen[i].decode;
        if (ep < -1 || ep > 1 || ed < -1 || ed > 1)
            fail_msg("generate case %zu: prefill %lld (measured %lld), decode %lld (measured %lld)", i, p, gen[i].prefill, d,
                     gen[i].decode);
    }
}

/* measured.json llm643-llm649: the same on images (configs/qwen3_vl_moe_img_small.json: qwen3_vl_img_small's
 * tower with deepstack after blocks 0 and 2, so after decoder layers 0 and 1, before the MoE layers;
 * qwen3vl_tower_replica.py build_qwen3_vl on qwen3vl_replica.py's MoE language model), within 0.1% */
static void test_images(void **state)
{
    (void)state;
    static const cli_measured cases[] = {
        {"qwen3_vl_moe_img_small.json --seq 64 -b 1 -o adamw -p fp32 --image 224x224 --images 1", 30486016}, /* llm643 */
        {"qwen3_vl_moe_img_small.json --seq 64 -b 1 -o adamw -p bf16 --image 448x336 --images 2 --lora 8 --lora-alpha 16 "
         "--lora-dropout 0 --lora-targets q_proj,v_proj", 28174848},                                         /* llm644 */
        {"qwen3_vl_moe_img_small.json --seq 96 -b 1 -o sgd -p bf16 --grad-ckpt --image 640x480 --images 1", 69523456}, /* llm645 */
        {"qwen3_vl_moe_img_small.json --seq 64 -b 1 -m infer -p fp32 --image 640x480 --images 1", 69985280}, /* llm646 */
        {"qwen3_vl_moe_img_small.json --seq 32 -b 1 -m infer -p bf16 --image 1024x768 --images 1", 379157504}, /* llm647 */
    };
    assert_measured(cases, sizeof cases / sizeof *cases, "", 0.1);
    /* generate with an image: llm648 prefill 69,976,064 decode 15,854,592; llm649 prefill 9,061,888 decode 5,722,624 */
    static const struct {
        const char *args;
        long long prefill, decode;
    } gen[] = {
        {"-p fp32 --prompt 32 --new-tokens 16 --image 640x480", 69976064, 15854592},
        {"-p bf16 --prompt 64 --new-tokens 24 --image 224x224", 9061888, 5722624},
    };
    for (size_t i = 0; i < sizeof gen / sizeof *gen; i++) {
        char a[512];
        snprintf(a, sizeof a, VC_TEST_DATA "/../../bench/accuracy/llm/configs/qwen3_vl_moe_img_small.json -m generate -b 1 %s",
                 gen[i].args);
        long long p = cli_json_field(a, "\"prefill_peak\": "), d = cli_json_field(a, "\"decode_peak\": ");
        double ep = 100.0 * (double)(p - gen[i].prefill) / (double)gen[i].prefill;
        double ed = 100.0 * (double)(d - gen[i].decode) / (double)gen[i].decode;
        if (ep < -0.1 || ep > 0.1 || ed < -0.1 || ed > 0.1)
            fail_msg("%s: prefill %lld (measured %lld), decode %lld (measured %lld)", a, p, gen[i].prefill, d, gen[i].decode);
    }
}

/* --mode generate, --serve (vLLM's Qwen3VLMoeForConditionalGeneration: the Qwen3-VL encoder profiling of
 * src/engine/serve_mm.c), an image through the tower and deepstack, expert parallelism with imbalance */
static void test_paths(void **state)
{
    (void)state;
    const char *out = cli_output(Q30 " -m generate -p bf16 --prompt 512 --new-tokens 64");
    assert_non_null(strstr(out, "decode peak"));
    out = cli_output(Q30 " --serve --gpu h100-80gb");
    /* the dummy image of Qwen3VLProcessingInfo: 16384 tokens (4096x4096), its embeddings with the 3 deepstack
     * features cat'ed: 16384 x 2048 x (1 + 3) x 2 bytes = 256 MiB, and the pixel values 65536 patches x 1536
     * x 2 bytes = 192 MiB: 448 MiB, as for qwen3_vl (tests/test_serve_mm.c) at this out_hidden_size */
    assert_non_null(strstr(out, "encoder profiling         448.0 MiB  (1 dummy item of 16384 tokens, 4096x4096"));
    assert_non_null(strstr(out, "KV cache pool"));
    out = cli_output(Q235 " --serve --gpu h100-80gb --tp 8 --gpus 8");
    assert_non_null(strstr(out, "KV cache pool"));
    /* an image adds the tower's run: more than the text alone */
    long long text = cli_json_field(Q30 " -m infer -p bf16 --seq 256", "\"peak_allocated\": ");
    long long img = cli_json_field(Q30 " -m infer -p bf16 --seq 256 --image 640x480", "\"peak_allocated\": ");
    assert_true(img > text);
    /* --ep 8: each rank holds 16 of the 128 experts; --moe-imbalance scales the busiest rank's tokens */
    long long ep = cli_json_field(Q30 " -p bf16 --parallel ddp --gpus 8 --ep 8 --seq 512", "\"peak_allocated\": ");
    long long ep2 = cli_json_field(Q30 " -p bf16 --parallel ddp --gpus 8 --ep 8 --seq 512 --moe-imbalance 2", "\"peak_allocated\": ");
    assert_true(ep2 >= ep);
}

/* a small config with text_config's `extra` keys (and the top-level `top` ones), and the usage error it must give */
static void assert_cfg(const char *top, const char *extra, const char *want)
{
    char path[] = "/tmp/vc_q3vmXXXXXX.json", args[600];
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"model_type\": \"qwen3_vl_moe\", %s\"text_config\": {\"vocab_size\": 1000, \"hidden_size\": 128, "
               "\"intermediate_size\": 256, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
               "%s}, \"vision_config\": {\"depth\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, \"num_heads\": 4, "
               "\"out_hidden_size\": 128, \"deepstack_visual_indexes\": [0]}}", top, extra);
    fclose(f);
    snprintf(args, sizeof args, "%s", path);
    assert_usage(args, want);
    remove(path);
}

static void test_refusals(void **state)
{
    (void)state;
    /* the experts: transformers 4.x's Qwen3VLMoeTextExperts is not a per-expert module list */
    assert_usage(Q30 " --transformers 4.57", "--transformers: a release before 5.0 runs the experts as 4.x did; per_expert "
                                             "is not modelled for qwen3_vl_moe");
    assert_usage(Q30 " --transformers 4.46", "--transformers: 4.46 has no qwen3_vl_moe: Qwen3VLMoeForConditionalGeneration "
                                             "came with transformers 4.57");
    assert_usage(Q30 " --experts-implementation per_expert", "--experts-implementation: per_expert is not modelled for qwen3_vl_moe");
    /* the keys, named as text_config.KEY */
    assert_cfg("", "\"num_experts\": 0", "text_config.num_experts: expected an integer of at least 1, got 0");
    assert_cfg("", "\"num_experts\": 2.5", "text_config.num_experts: expected an integer");
    assert_cfg("", "\"num_experts\": 8, \"num_experts_per_tok\": 9", "text_config.num_experts_per_tok: top-k (9) is more "
                                                                     "than the 8 experts");
    assert_cfg("", "\"moe_intermediate_size\": 0", "text_config.moe_intermediate_size: expected an integer of at least 1");
    assert_cfg("", "\"decoder_sparse_step\": 0", "text_config.decoder_sparse_step: expected an integer of at least 1");
    assert_cfg("", "\"mlp_only_layers\": \"x\"", "text_config.mlp_only_layers: expected a list of layer indices");
    assert_cfg("", "\"mlp_only_layers\": [0.5]", "text_config.mlp_only_layers: expected layer indices from 0 to "
                                                 "num_hidden_layers - 1 (1)");
    assert_cfg("", "\"mlp_only_layers\": [2]", "text_config.mlp_only_layers: expected layer indices from 0");
    /* the tie: the config's own, text_config's checked (a bool) */
    assert_cfg("\"tie_word_embeddings\": 3, ", "\"num_experts\": 8", "tie_word_embeddings: expected true or false");
    assert_cfg("", "\"tie_word_embeddings\": \"no\"", "text_config.tie_word_embeddings: expected true or false");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
