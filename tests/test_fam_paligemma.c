/*
 * test_fam_paligemma.c — model_type "paligemma" (issue 31, vision towers of VLMs; src/hf/hf.c's row, hf_vision.c
 * read_siglip / paligemma_keys / write_siglip, layers/llm.c prefix_mask_4x, src/engine/loss.c emit_paligemma):
 * PaliGemmaForConditionalGeneration as models/paligemma/modeling_paligemma.py runs it at huggingface/transformers
 * @ efa7189c (PaliGemmaMultiModalProjector, get_image_features, forward, _update_causal_mask), its SiglipVisionModel
 * the Gemma 3 tower of hf_vision.c (modeling_siglip.py @ efa7189c), its language model the gemma row's
 * GemmaForCausalLM; PaliGemmaConfig's defaults at configuration_paligemma.py @ 04d596e6.
 *
 * 1. The parameters, by hand from those __init__s. tests/data/hf/paligemma-3b-pt-224.json is written from
 *    google/paligemma-3b-pt-224's config.json as published on the Hub (not read from the Hub here: no network;
 *    the values as the model card's and transformers' conversion script's, the vocabulary 257,216).
 * 2. The measured cases of bench/accuracy/llm/measured.json (paligemma_replica.py), held within 1%.
 * 3. Refusals: exit 2 and one line naming the key (text_config.*, vision_config.*, projection_dim) or option.
 * 2b. generate() (greedy, DynamicCache) with and without an image, and --mode infer without one: measured.json's
 *    cases, the prefill's and the decoding steps' peaks within 0.5%.
 * 4. PaliGemma 2 (text_config model_type "gemma2": hf.c's text_type row, the gemma2 row's language model under this
 *    tower; modeling_gemma2.py @ efa7189c Gemma2DecoderLayer's sliding mask made from PaliGemma's, layers/llm.c
 *    prefix_sliding): the parameters by hand for the five google/paligemma2-* sizes, the measured paligemma2_small
 *    cases (training, and --mode infer with Gemma2Model.forward's HybridCache: layers/llm.c hybrid_update), its
 *    refusals (generate: Gemma2's HybridCache under generate(); transformers <= 4.46's eager Gemma 2).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "fam_hf.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"

/* google/paligemma-3b-pt-224, by hand:
 *   GemmaForCausalLM (text_config: hidden 2048, intermediate 16384, 18 layers, 8 heads of head_dim 256 (GemmaConfig's
 *     default), 1 kv head, vocab 257,216, lm_head tied): embed_tokens 257,216 x 2048 = 526,778,368; per GemmaDecoderLayer
 *     q_proj 2048 x 2048 = 4,194,304, k_proj and v_proj 256 x 2048 = 524,288 each, o_proj 4,194,304, gate/up/down
 *     3 x 2048 x 16384 = 100,663,296, two RMSNorms 4,096: 110,104,576; x 18 = 1,981,882,368; norm 2,048:
 *     2,508,662,784 (all trainable);
 *   SiglipVisionModel (hidden 1152, intermediate 4304, 27 layers, 224 / 14 = 16, 256 patches, no head):
 *     patch_embedding 3 x 14 x 14 x 1152 + 1152 = 678,528; position_embedding 256 x 1152 = 294,912; per layer
 *     4 x (1152^2 + 1152) + (1152 x 4304 + 4304) + (4304 x 1152 + 1152) + 4 x 1152 = 15,239,504, x 27 = 411,466,608;
 *     post_layernorm 2,304: 412,442,352;
 *   PaliGemmaMultiModalProjector.linear 1152 x 2048 + 2048 = 2,361,344.
 *   Total 2,923,466,480 (the model card's 2.92B; keras-hub's pali_gemma_3b_224 preset lists 2,923,335,408 for its
 *   257,152-token vocabulary, 64 x 2048 fewer: the same modules).
 * Without vision_config PaliGemmaConfig builds SiglipVisionConfig(intermediate_size=4096, hidden_size=1152,
 *   patch_size=14, image_size=224, num_hidden_layers=27, num_attention_heads=16, vision_use_head=False): per layer
 *   5,313,024 + (1152 x 4096 + 4096) + (4096 x 1152 + 1152) + 4,608 = 14,760,064, x 27 = 398,521,728; with the
 *   embeddings and post_layernorm 399,497,472. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "paligemma-3b-pt-224.json", 0);
    assert_int_equal(vc_model_parameters(m), INT64_C(2923466480));
    vc_model_free(m);
    static const char text[] = "\"text_config\": {\"hidden_size\": 2048, \"intermediate_size\": 16384, \"model_type\": "
                               "\"gemma\", \"num_attention_heads\": 8, \"num_hidden_layers\": 18, \"num_key_value_heads\": "
                               "1, \"vocab_size\": 257216}";
    char js[600];
    snprintf(js, sizeof js, "{\"model_type\": \"paligemma\", %s}", text);
    assert_int_equal(count_of(js), INT64_C(2508662784) + INT64_C(399497472) + INT64_C(2361344));
    /* the trainable ones: the language model's (the tower and projector frozen) */
    char a[600];
    snprintf(a, sizeof a, "%s -f json", HF "paligemma-3b-pt-224.json");
    assert_int_equal(cli_json_field(a, "\"trainable_parameters\": "), INT64_C(2508662784));
    /* LoRA r 8 on q_proj, v_proj with an image: PEFT matches the tower's SiglipAttention q_proj / v_proj too:
     * 18 x (8 x (2048 + 2048) + 8 x (2048 + 256)) = 921,600 and 27 x 2 x 8 x (1152 + 1152) = 995,328. Without --image
     * the tower is written as its weights alone (VisionWeights, as Gemma 3's), which --lora-targets does not reach:
     * the language model's 921,600 */
    snprintf(a, sizeof a, "%s --lora 8 --lora-targets q_proj,v_proj --image 224x224 -f json", HF "paligemma-3b-pt-224.json");
    assert_int_equal(cli_json_field(a, "\"trainable_parameters\": "), INT64_C(1916928));
    snprintf(a, sizeof a, "%s --lora 8 --lora-targets q_proj,v_proj -f json", HF "paligemma-3b-pt-224.json");
    assert_int_equal(cli_json_field(a, "\"trainable_parameters\": "), INT64_C(921600));
    /* the layers: the projector's Linear and its scaling, the forward's mask in every attention, its own loss */
    static const char small[] = "{\"model_type\": \"paligemma\", \"projection_dim\": 64, \"text_config\": {\"hidden_size\": "
                                "64, \"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"head_dim\": 16, "
                                "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"vocab_size\": 512}, "
                                "\"vision_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, \"vision_use_head\": false}}";
    assert_true(emitted(small, "multi_modal_projector.linear"));
    assert_true(emitted(small, "\"prefix_mask\""));
    assert_true(emitted(small, "\"paligemma_lm\""));
}

/* bench/accuracy/llm/measured.json's paligemma cases (run_suite.py's `pg` rows and the text-alone ones;
 * paligemma_replica.py, torch 1.13 CPU, the allocator counter; --attention math, --workspace 0) */
static void test_measured(void **state)
{
    (void)state;
#define IM " --image 224x224 --images 1"
#define LOD " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets o_proj,down_proj"
#define CK " --grad-ckpt --grad-ckpt-kind non-reentrant"
    static const cli_measured t[] = {
        {"paligemma_small.json --seq 32 -b 1 -o adamw -p fp32" IM, 5433856},
        {"paligemma_small.json --seq 64 -b 1 -o adamw -p bf16" IM, 4552704},
        {"paligemma_small.json --seq 32 -b 1 -o sgd -p fp32" CK IM, 2801152},
        {"paligemma_small.json --seq 32 -b 2 -o adamw -p fp32" IM LOD, 6060032},
        {"paligemma224_small.json --seq 16 -b 1 -o adamw -p fp32" IM, 9932288},
        {"paligemma224_small.json --seq 16 -b 1 -o adamw -p bf16" CK IM LOD, 5370368},
        {"paligemma_small.json --seq 64 -b 1 -o adamw -p fp32", 4288000},
        {"paligemma_small.json --seq 48 -b 2 -o sgd -p bf16", 2670080},
        {"paligemma_small.json --seq 96 -b 1 -o adamw -p fp32" CK, 4049920},
    };
    assert_measured(t, sizeof t / sizeof *t, " --attention math --workspace 0 -f json", 1.0);
    /* --mode infer (the image) */
    static const cli_measured i[] = {
        {"paligemma_small.json -m infer --seq 32 -b 1 -p fp32" IM, 1881600},
        {"paligemma224_small.json -m infer --seq 16 -b 1 -p bf16" IM, 4446208},
        {"paligemma_small.json -m infer --seq 48 -b 2 -p fp32" IM, 2817024},
    };
    assert_measured(i, sizeof i / sizeof *i, " --attention math --workspace 0 -f json", 1.0);
    /* --mode infer on the text alone (the forward's float mask over the prompt, no tower run) */
    static const cli_measured t2[] = {
        {"paligemma_small.json -m infer --seq 48 -b 1 -p fp32", 1370112},
        {"paligemma_small.json -m infer --seq 32 -b 2 -p bf16", 788480},
        {"paligemma_small.json -m infer --seq 96 -b 1 -p bf16", 1119744},
    };
    assert_measured(t2, sizeof t2 / sizeof *t2, " --attention math --workspace 0 -f json", 1.0);
#undef CK
#undef LOD
#undef IM
}

/* generate() (greedy, DynamicCache; transformers 4.x's loop: the first step over the whole prompt, --transformers
 * 4.57 as measure_llm.py runs it): PaliGemmaForConditionalGeneration.prepare_inputs_for_generation's pixel_values
 * in the prefill alone, _update_causal_mask from generate()'s 2-D attention_mask in every pass (the [B, 1, L, S]
 * clone, the padding sum, its == 0, the masked_fill; layers/llm.c prefix_mask_4x), every layer's sdpa with it.
 * measured.json's paligemma generate cases (run_suite.py's PaliGemma generate / infer block; paligemma_replica.py
 * through measure_llm.py --mode generate, torch 1.13 CPU, the allocator counter): the prefill's and the decoding
 * steps' peaks, each within 0.5%. */
static void test_generate_measured(void **state)
{
    (void)state;
    static const struct {
        const char *args;
        long long prefill, decode;
    } g[] = {
        {"paligemma_small.json -b 1 --prompt 16 --new-tokens 4 -p fp32 --image 224x224 --images 1", 1766400, 1412096},
        {"paligemma_small.json -b 2 --prompt 32 --new-tokens 8 -p bf16 --image 224x224 --images 1", 1969152, 1124352},
        {"paligemma224_small.json -b 1 --prompt 16 --new-tokens 4 -p fp32 --image 224x224 --images 1", 5148160, 1820672},
        {"paligemma_small.json -b 1 --prompt 32 --new-tokens 8 -p fp32", 1323008, 1229824},
        {"paligemma_small.json -b 2 --prompt 48 --new-tokens 8 -p bf16", 954368, 727040},
        {"paligemma_small.json -b 1 --prompt 64 --new-tokens 16 -p fp32", 1476096, 1256960},
    };
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        char a[600];
        snprintf(a, sizeof a, VC_TEST_DATA "/../../bench/accuracy/llm/configs/%s -m generate --transformers 4.57",
                 g[i].args);
        const long long p = cli_json_field(a, "\"prefill_peak\": "), d = cli_json_field(a, "\"decode_peak\": ");
        const double ep = 100.0 * (double)(p - g[i].prefill) / (double)g[i].prefill;
        const double ed = 100.0 * (double)(d - g[i].decode) / (double)g[i].decode;
        if (ep < -0.5 || ep > 0.5 || ed < -0.5 || ed > 0.5)
            fail_msg("%s: prefill %lld (measured %lld, %+.2f%%), decode %lld (measured %lld, %+.2f%%)", a, p, g[i].prefill,
                     ep, d, g[i].decode, ed);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    static const fam_refusal c[] = {
        {"\"vision_config\": 3", "vision_config: expected an object"},
        {"\"vision_config\": {\"hidden_size\": 64, \"num_attention_heads\": 5}", "vision_config.num_attention_heads"},
        {"\"vision_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, \"patch_size\": 300}",
         "vision_config.patch_size: 300: larger than image_size (224)"},
        {"\"vision_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, \"vision_use_head\": 1}",
         "vision_config.vision_use_head: expected true or false"},
        {"\"vision_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, \"hidden_act\": \"gelu_fast\"}",
         "vision_config.hidden_act"},
        {"\"vision_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, \"layer_norm_eps\": 2}",
         "vision_config.layer_norm_eps"},
    };
    fam_refuse_edits("{\"model_type\": \"paligemma\", \"projection_dim\": 64, \"text_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, "
                     "\"num_key_value_heads\": 1, \"head_dim\": 16, \"intermediate_size\": 128, \"num_hidden_layers\": 2, "
                     "\"vocab_size\": 512}, ", c, sizeof c / sizeof *c);
    static const fam_refusal t[] = {
        {"\"text_config\": 5", "text_config: expected an object"},
        {"\"text_config\": {\"model_type\": \"gemma3_text\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
         "\"num_key_value_heads\": 1}", "text_config.model_type: \"gemma3_text\": paligemma is modelled with a Gemma (\"gemma\") or"},
        {"\"text_config\": {\"model_type\": 2, \"hidden_size\": 64, \"num_attention_heads\": 4, "
         "\"num_key_value_heads\": 1}", "text_config.model_type: \"(not a string)\""},
        {"\"text_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 3}",
         "text_config.num_key_value_heads"},
        {"\"text_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"vocab_size\": 0}",
         "text_config.vocab_size"},
    };
    fam_refuse_edits("{\"model_type\": \"paligemma\", \"projection_dim\": 64, \"vision_config\": {\"hidden_size\": 64, "
                     "\"num_attention_heads\": 4, \"vision_use_head\": false}, ", t, sizeof t / sizeof *t);
    static const fam_refusal p[] = {
        {"\"projection_dim\": 32", "projection_dim: 32: the projector's image features must be text_config.hidden_size (64)"},
        {"\"projection_dim\": \"x\"", "projection_dim: expected a positive integer"},
        {"\"projection_dim\": 1.5", "projection_dim: expected a positive integer"},
    };
    fam_refuse_edits("{\"model_type\": \"paligemma\", \"text_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, "
                     "\"num_key_value_heads\": 1}, \"vision_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4}, ",
                     p, sizeof p / sizeof *p);
    static const char f[] = HF "paligemma-3b-pt-224.json";
    static const fam_refusal o[] = {
        {"-m generate --cache static", "--cache: paligemma's generate() is modelled with a DynamicCache"},
        {"-m generate --num-beams 2", "--num-beams: paligemma's beam search is not modelled"},
        /* --serve, with --tp too, is modelled (tests/test_serve_mm.c paligemma, tests/test_serve_mm_tp.c) */
        {"--tp 2 --gpus 2", "--tp: paligemma on tensor-parallel ranks is not modelled"},
        {"--loss liger", "--loss: paligemma: PaliGemmaForConditionalGeneration computes its own CrossEntropyLoss"},
        {"--liger", "--liger: paligemma: apply_liger_kernel_to_paligemma's patch set is not modelled"},
        {"--packing -b 2", "--packing: packed sequences through PaliGemma's 4-D float mask are not modelled"},
        {"--image 224x224 --images 2", "--images: 2: paligemma is modelled at one image per sample"},
        {"--images 2", "--images: needs --image WxH"},
        {"--lora 8", "--lora needs --lora-targets"},
    };
    fam_refuse_options(f, o, sizeof o / sizeof *o);
    /* honoured: any --image size is resized to image_size (SiglipImageProcessor), 256 image tokens before the text */
    char a[600];
    snprintf(a, sizeof a, "%s --image 224x224 -f json", f);
    const long long d = cli_json_field(a, "\"peak_allocated\": ");
    snprintf(a, sizeof a, "%s --image 640x480 -f json", f);
    assert_int_equal(cli_json_field(a, "\"peak_allocated\": "), d);
}

/* PaliGemma 2's configs. tests/data/hf/paligemma2-3b-pt-224.json and the text configs below are written from the
 * google/paligemma2-* model cards and the Gemma 2 checkpoints' config.json values as published (not read from the Hub
 * here: no network): the language models of gemma-2-2b (hidden 2304, intermediate 9216, 26 layers, 8 heads, 4 kv
 * heads, head_dim 256), gemma-2-9b (3584, 14336, 42 layers, 16 heads, 8 kv heads, head_dim 256) and gemma-2-27b
 * (4608, 36864, 46 layers, 32 heads, 16 kv heads, head_dim 128), PaliGemma's 257,216-token vocabulary, projection_dim
 * the text hidden size; the SigLIP-So400m tower (hidden 1152, intermediate 4304, 27 layers, 16 heads, patch 14, no
 * head) at image_size 224, 448 or 896. */
#define PG2_TEXT_3B "\"hidden_size\": 2304, \"intermediate_size\": 9216, \"num_attention_heads\": 8, \"num_hidden_layers\": 26, " \
                    "\"num_key_value_heads\": 4"
#define PG2_TEXT_10B "\"hidden_size\": 3584, \"intermediate_size\": 14336, \"num_attention_heads\": 16, \"num_hidden_layers\": " \
                     "42, \"num_key_value_heads\": 8"
#define PG2_TEXT_28B "\"hidden_size\": 4608, \"intermediate_size\": 36864, \"num_attention_heads\": 32, \"num_hidden_layers\": " \
                     "46, \"num_key_value_heads\": 16, \"head_dim\": 128"

static int64_t pg2_count(const char *text, int64_t H, int64_t img)
{
    char js[800];
    snprintf(js, sizeof js, "{\"model_type\": \"paligemma\", \"projection_dim\": %lld, \"text_config\": {\"model_type\": "
             "\"gemma2\", %s, \"vocab_size\": 257216}, \"vision_config\": {\"hidden_size\": 1152, \"image_size\": %lld, "
             "\"intermediate_size\": 4304, \"num_attention_heads\": 16, \"num_hidden_layers\": 27, \"patch_size\": 14, "
             "\"vision_use_head\": false}}", (long long)H, text, (long long)img);
    return count_of(js);
}

/* By hand from Gemma2ForCausalLM's __init__s (modeling_gemma2.py @ efa7189c: embed_tokens V x H, per Gemma2DecoderLayer
 * q_proj H x heads x head_dim, k_proj and v_proj H x kv x head_dim, o_proj, gate / up / down 3 x H x I, four
 * Gemma2RMSNorms 4 x H; norm H; lm_head tied), the tower as in test_counts (412,442,352 at 224: 256 positions;
 * 448: 1024 positions, + 884,736; 896: 4096 positions, + 4,423,680) and the projector 1152 x H + H:
 *   3B: per layer 2 x 4,718,592 + 2 x 2,359,296 + 63,700,992 + 9,216 = 77,865,984; x 26 = 2,024,515,584; embed
 *       257,216 x 2304 = 592,625,664; norm 2,304: 2,617,143,552; projector 2,656,512: 224 3,032,242,416 (the model
 *       card's "3B"), 448 3,033,127,152, 896 3,036,666,096;
 *   10B: per layer 2 x 14,680,064 + 2 x 7,340,032 + 154,140,672 + 14,336 = 198,195,200; x 42 = 8,324,198,400; embed
 *       921,862,144; norm 3,584: 9,246,064,128; projector 4,132,352: 9,662,638,832 (the card's "10B");
 *   28B: per layer 2 x 18,874,368 + 2 x 9,437,184 + 509,607,936 + 18,432 = 566,249,472; x 46 = 26,047,475,712;
 *       embed 1,185,251,328; norm 4,608: 27,232,731,648; projector 5,313,024: 27,650,487,024 (the card's "28B"). */
static void test_pg2_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "paligemma2-3b-pt-224.json", 0);
    assert_int_equal(vc_model_parameters(m), INT64_C(3032242416));
    vc_model_free(m);
    char a[600];
    snprintf(a, sizeof a, "%s -f json", HF "paligemma2-3b-pt-224.json"); /* the language model's alone */
    assert_int_equal(cli_json_field(a, "\"trainable_parameters\": "), INT64_C(2617143552));
    /* LoRA r 16 on q_proj, v_proj without --image (the tower's weights alone, not reached): 26 x 16 x ((2304 + 2048)
     * + (2304 + 1024)) = 3,194,880 */
    snprintf(a, sizeof a, "%s --lora 16 --lora-targets q_proj,v_proj -f json", HF "paligemma2-3b-pt-224.json");
    assert_int_equal(cli_json_field(a, "\"trainable_parameters\": "), INT64_C(3194880));
    assert_int_equal(pg2_count(PG2_TEXT_3B, 2304, 224), INT64_C(3032242416));
    assert_int_equal(pg2_count(PG2_TEXT_3B, 2304, 448), INT64_C(3033127152));
    assert_int_equal(pg2_count(PG2_TEXT_3B, 2304, 896), INT64_C(3036666096));
    assert_int_equal(pg2_count(PG2_TEXT_10B, 3584, 224), INT64_C(9662638832));
    assert_int_equal(pg2_count(PG2_TEXT_28B, 4608, 224), INT64_C(27650487024));
    /* the layers: Gemma 2's (sandwich norms, the sliding window on even layers) with PaliGemma's mask in each */
    static const char small[] = "{\"model_type\": \"paligemma\", \"projection_dim\": 64, \"text_config\": {\"model_type\": "
                                "\"gemma2\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                                "\"head_dim\": 16, \"intermediate_size\": 128, \"num_hidden_layers\": 2, \"vocab_size\": 512, "
                                "\"sliding_window\": 32}, \"vision_config\": {\"hidden_size\": 64, \"num_attention_heads\": 4, "
                                "\"vision_use_head\": false}}";
    assert_int_equal(emitted(small, "\"prefix_mask\""), 3); /* the rotary embedding's and both layers' */
    assert_int_equal(emitted(small, "\"sliding_window\""), 1); /* layer 0 (Gemma2Attention: not layer_idx % 2) */
    assert_int_equal(emitted(small, "\"name\":\t\"pre_feedforward_layernorm\""), 2); /* Gemma2DecoderLayer's, one a layer */
    assert_true(emitted(small, "\"paligemma_lm\""));
}

/* measured.json's paligemma2_small cases (run_suite.py's PaliGemma 2 block; paligemma_replica.py with the gemma2
 * language model, torch 1.13 CPU, the allocator counter; --attention math, --workspace 0) */
static void test_pg2_measured(void **state)
{
    (void)state;
#define IM " --image 224x224 --images 1"
#define LOD " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets o_proj,down_proj"
#define CK " --grad-ckpt --grad-ckpt-kind non-reentrant"
    static const cli_measured t[] = {
        {"paligemma2_small.json --seq 32 -b 1 -o adamw -p fp32" IM, 7456256},
        {"paligemma2_small.json --seq 64 -b 1 -o adamw -p bf16" IM, 6302720},
        {"paligemma2_small.json --seq 32 -b 1 -o sgd -p fp32" CK IM, 3313664},
        {"paligemma2_small.json --seq 32 -b 2 -o adamw -p fp32" IM LOD, 8316928},
        {"paligemma2_small.json --seq 48 -b 2 -o adamw -p bf16" CK IM, 4132352},
        {"paligemma2_small.json --seq 96 -b 1 -o sgd -p fp32" IM, 8948224},
        {"paligemma2_small.json --seq 64 -b 1 -o adamw -p fp32", 5833216},
        {"paligemma2_small.json --seq 48 -b 2 -o adamw -p bf16", 4652544},
        {"paligemma2_small.json --seq 96 -b 1 -o sgd -p fp32" CK, 3162624},
    };
    assert_measured(t, sizeof t / sizeof *t, " --attention math --workspace 0 -f json", 1.0);
    /* --mode infer: Gemma2Model.forward's HybridCache (layers/llm.c hybrid_update; paligemma_replica.py HybridCache),
     * the image's 96 and 112 tokens past sliding_window 32, the text's 16 within it */
    static const cli_measured i[] = {
        {"paligemma2_small.json -m infer --seq 32 -b 1 -p fp32" IM, 2257408},
        {"paligemma2_small.json -m infer --seq 16 -b 2 -p bf16", 824832},
        {"paligemma2_small.json -m infer --seq 48 -b 1 -p bf16" IM, 1644544},
    };
    assert_measured(i, sizeof i / sizeof *i, " --attention math --workspace 0 -f json", 1.0);
#undef CK
#undef LOD
#undef IM
}

static void test_pg2_refusals(void **state)
{
    (void)state;
    static const char f[] = HF "paligemma2-3b-pt-224.json";
    static const fam_refusal o[] = {
        {"--transformers 4.46", "--transformers: PaliGemma 2 under eager attention"},
        {"-m generate", "--mode: generate: PaliGemma 2's generate() (Gemma2's HybridCache"},
        {"--loss liger", "--loss: paligemma: PaliGemmaForConditionalGeneration computes its own CrossEntropyLoss"},
        {"--packing -b 2", "--packing: packed sequences through PaliGemma's 4-D float mask are not modelled"},
    };
    fam_refuse_options(f, o, sizeof o / sizeof *o);
    static const fam_refusal t[] = {
        {"\"text_config\": {\"model_type\": \"gemma2\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
         "\"num_key_value_heads\": 3}", "text_config.num_key_value_heads"},
        {"\"text_config\": {\"model_type\": \"gemma2\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
         "\"num_key_value_heads\": 1, \"sliding_window\": \"x\"}", "text_config.sliding_window"},
        {"\"text_config\": {\"model_type\": \"gemma2\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
         "\"num_key_value_heads\": 1, \"final_logit_softcapping\": \"x\"}", "text_config.final_logit_softcapping"},
    };
    fam_refuse_edits("{\"model_type\": \"paligemma\", \"projection_dim\": 64, \"vision_config\": {\"hidden_size\": 64, "
                     "\"num_attention_heads\": 4, \"vision_use_head\": false}, ", t, sizeof t / sizeof *t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_generate_measured),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_pg2_counts),
        cmocka_unit_test(test_pg2_measured),
        cmocka_unit_test(test_pg2_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
