/*
 * test_fam_mllama.c — model_type "mllama" (issue 31, VLM towers; src/hf/hf.c's row, src/hf/hf_mllama.c):
 * MllamaForConditionalGeneration as models/mllama/modeling_mllama.py runs it at huggingface/transformers @ befb7955
 * (configuration_mllama.py @ 032b32ab) without an image: MllamaTextModel.forward skips the cross-attention layers,
 * the tower, the projector and those layers are loaded, not run.
 *
 * 1. The parameters, by hand from those __init__s. tests/data/hf/llama-3.2-11b-vision.json is written (no network)
 *    from MllamaTextConfig's / MllamaVisionConfig's defaults and the published config.json's values as public copies
 *    of it quote them (vision image_size 560, attention_heads 16, supported_aspect_ratios, the llama3 rope_scaling;
 *    not read from the Hub itself); its total, 10,670,220,835, is the one the Hub lists for
 *    meta-llama/Llama-3.2-11B-Vision(-Instruct)'s safetensors (10.7B), derived exactly here.
 * 2. What a text-only forward runs: the self-attention layers alone, their KV cache in generate().
 * 3. The measured cases of bench/accuracy/llm/measured.json (mllama_replica.py), the four not held out within 1%.
 * 4. With --image: the tower, the projector and the cross-attention layers run (train, -m infer); the measured
 *    mllama_vision_small cases not held out within 1%.
 * 5. generate() with --image (src/engine/generate.c "Images"): the cross-attention layers' keys / values of the
 *    images cached beside the self-attention layers' (by hand), and the measured mllama_vision_small generate case
 *    not held out within 1%.
 * 6. Refusals: exit 2 and one line naming the key or option.
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
#define ML11 HF "llama-3.2-11b-vision.json"

/* a small MllamaConfig: text 64 wide, 4 layers (layer 1 cross-attention), 4 heads of 16, 2 kv heads, MLP 128,
 * vocab 256; vision 32 wide, MLP 64, 4 local + 1 global layers, 2 heads, 28 x 28 tiles of 14 x 14, 4 tiles, the
 * eight default aspect ratios, intermediate_layers_indices [1, 3]: output 32 x 3 = 96 */
#define SMALL_TEXT                                                                                                    \
    "\"text_config\": {\"vocab_size\": 256, \"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 4, " \
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"cross_attention_layers\": [1]}"
#define SMALL_VISION                                                                                                  \
    "\"vision_config\": {\"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 4, "                  \
    "\"num_global_layers\": 1, \"attention_heads\": 2, \"image_size\": 28, \"patch_size\": 14, "                       \
    "\"intermediate_layers_indices\": [1, 3], \"vision_output_dim\": 96}"

static void test_counts(void **state)
{
    (void)state;
    /* Llama-3.2-11B-Vision, by hand from the __init__s (hf_mllama.c's header):
     * MllamaVisionModel (H 1280, I 5120, 560 / 14 = 40: num_patches 1601; 9 aspect-ratio ids, 4 tiles):
     *   patch_embedding 1280 x 3 x 14 x 14 = 752,640; class_embedding 1,280;
     *   gated_positional_embedding: gate 1, embedding 1601 x 1280 = 2,049,280, tile_embedding 9 x (4 x 1601 x 1280)
     *     = 73,774,080; pre_/post_tile_positional_embedding 2 x (9 x 4 x 1280 + 1) = 92,162; layernorm_pre/post 5,120;
     *   per MllamaVisionEncoderLayer: q/k/v/o 4 x 1280^2 = 6,553,600, fc1 1280 x 5120 + 5120 = 6,558,720, fc2
     *     5120 x 1280 + 1280 = 6,554,880, two LayerNorms 5,120: 19,672,320; x 32 = 629,514,240; the 8 global ones
     *     + 2 gates each: 157,378,576. Tower 863,567,379.
     * multi_modal_projector 7680 x 4096 + 4096 = 31,461,376.
     * MllamaForCausalLM (H 4096, 32 heads of 128, 8 kv heads, I 14336, vocab 128256):
     *   embed_tokens (128256 + 8) x 4096 = 525,369,344; lm_head 128256 x 4096 = 525,336,576; norm 4,096;
     *   per MllamaSelfAttentionDecoderLayer: q/o 2 x 4096^2 + k/v 2 x 1024 x 4096 = 41,943,040, MLP 3 x 4096 x
     *     14336 = 176,160,768, two norms 8,192: 218,112,000; x 32 = 6,979,584,000;
     *   per MllamaCrossAttentionDecoderLayer: the same + q_norm / k_norm 2 x 128 + two gates = 218,112,258; x 8 =
     *     1,744,898,064. Language model 9,775,192,080.
     * Total 10,670,220,835 (the Hub's safetensors total). */
    const char *argv = ML11 " -f json";
    assert_int_equal(cli_json_field(argv, "\"parameters\": "), 10670220835LL);
    /* trainable: the modules a text-only step gives a gradient: embed_tokens, the 32 self-attention layers, norm,
     * lm_head = 525,369,344 + 6,979,584,000 + 4,096 + 525,336,576 */
    assert_int_equal(cli_json_field(argv, "\"trainable_parameters\": "), 8030294016LL);
    /* MllamaConfig() itself: the vision defaults' image_size 448 (num_patches 1025): tile_embedding 9 x 4 x 1025 x
     * 1280 = 47,232,000 and embedding 1,312,000, 27,279,360 fewer than 560's */
    assert_int_equal(count_of("{\"model_type\": \"mllama\", \"text_config\": {}}"), 10642941475LL);
    /* the small config by hand: tower (H 32, I 64, 28 / 14 = 2: num_patches 5) patch_embedding 32 x 3 x 196 = 18,816,
     * class_embedding 32, gated_positional_embedding 1 + 5 x 32 + 9 x 4 x 5 x 32 = 5,921, the tile embeddings
     * 2 x (9 x 4 x 32 + 1) = 2,306, layernorm_pre/post 128, per layer 4 x 32^2 + (32 x 64 + 64) + (64 x 32 + 32) + 128
     * = 8,416: 4 local 33,664, 1 global + 2 gates 8,418: 69,285; projector 96 x 64 + 64 = 6,208; text: embed_tokens
     * 264 x 64 = 16,896, lm_head 256 x 64 = 16,384, norm 64, self-attention layers 3 x (2 x 64^2 + 2 x 32 x 64 + 3 x 64
     * x 128 + 128 = 36,992) = 110,976, the cross-attention layer 36,992 + 2 x 16 + 2 = 37,026: 181,346. Total 256,839. */
    assert_int_equal(count_of("{\"model_type\": \"mllama\", " SMALL_TEXT ", " SMALL_VISION "}"), 256839);
    /* the frozen modules, one VisionWeights layer each (hf_mllama.c), named as modeling_mllama.py's: the
     * cross-attention layer's 13 (cross_attn q/k/v/o_proj, q_norm, k_norm, mlp gate/up/down_proj, the two norms, the
     * two gates: each its own tensor, as the allocator rounds each), the projector, the global layers' gate_attn */
    const char *js = "{\"model_type\": \"mllama\", " SMALL_TEXT ", " SMALL_VISION "}";
    assert_int_equal(emitted(js, "language_model.model.layers.1."), 13);
    assert_int_equal(emitted(js, "\"multi_modal_projector\""), 1);
    assert_int_equal(emitted(js, "vision_model.global_transformer.layers.0.gate_attn"), 1);
}

/* what a text-only forward runs: LlamaForCausalLM's layers on the self-attention layers */
static void test_text_only(void **state)
{
    (void)state;
    /* generate()'s cache: DynamicCache.update is called by the self-attention layers only (a skipped cross-attention
     * layer never reaches its cross_attn): 3 layers x 2 (k, v) x 2 kv heads x 16 x fp32 4 B = 768 B per token, over
     * the prompt's 64 and 15 of the 16 new tokens (the last one is never fed back): 60,672 */
    const char *js = "{\"model_type\": \"mllama\", " SMALL_TEXT ", " SMALL_VISION "}";
    const int64_t small = fam_kv_cache(js, 64, 16);
    assert_int_equal(small, 3 * 2 * 2 * 16 * 4 * (64 + 15));
    /* the same layers as a llama config of the 3 self-attention layers: the cache equal */
    const char *llama = "{\"model_type\": \"llama\", \"vocab_size\": 264, \"hidden_size\": 64, \"intermediate_size\": 128, "
                        "\"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                        "\"rms_norm_eps\": 1e-5, \"max_position_embeddings\": 131072}";
    assert_int_equal(fam_kv_cache(llama, 64, 16), small);
    /* the decoder stack written is the 3 self-attention layers (a Sequential repeated 3 times), on an embedding of
     * vocab_size + 8 = 264 rows */
    assert_int_equal(emitted(js, "\"repeat\":\t3"), 1);
    assert_int_equal(emitted(js, "\"num_embeddings\":\t264"), 1);
}

/* bench/accuracy/llm/measured.json's mllama_small cases (run_suite.py's last block; mllama_replica.py, torch 1.13 CPU,
 * the allocator counter; --attention math, --workspace 0), those not held out: full fp32 -0.06%, bf16 -0.09%, SGD at
 * batch 4 -0.06% (the llama rows' common 4,096 B); LoRA -0.91%: PEFT also wraps the tower's and the cross-attention
 * layer's q_proj / v_proj, whose fp32 adapters (5 x 2 x (1,024 + 1,024) + (2,048 + 2,048) + (2,048 + 1,024) =
 * 27,648 B) the estimate does not count (those modules are bare VisionWeights) */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"mllama_small.json --seq 64 -b 2 -o adamw -p fp32", 7312384},
        {"mllama_small.json --seq 64 -b 2 -o adamw -p bf16", 4583424},
        {"mllama_small.json --seq 64 -b 2 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 3439616},
        {"mllama_small.json --seq 48 -b 4 -o sgd -p fp32", 7220736},
    };
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 1.0);
}

/* With --image (hf_mllama.c, layers/mllama.c): the tower, the projector and the cross-attention layers run. */
static void test_images(void **state)
{
    (void)state;
    /* the parameters are the same modules (the cross-attention layers now real layers, the tower's weights as
     * before): the Hub's 10,670,220,835; trainable adds the 8 cross-attention layers, which get a gradient once they
     * run: 8,030,294,016 + 8 x 218,112,258 (test_counts) = 9,775,192,080 (the tower and projector frozen) */
    const char *argv = ML11 " --image 560x560 -f json";
    assert_int_equal(cli_json_field(argv, "\"parameters\": "), 10670220835LL);
    assert_int_equal(cli_json_field(argv, "\"trainable_parameters\": "), 9775192080LL);
    /* MllamaImageProcessor pads pixel_values to max_image_tiles whatever the canvas get_optimal_tiled_canvas picks
     * (image_processing_mllama.py @ 0350540d pack_images): a 1x1-tile image and a 2x2-tile one cost the same */
    assert_int_equal(cli_json_field(ML11 " --image 56x56 -f json", "\"peak_allocated\": "),
                     cli_json_field(ML11 " --image 1120x1120 -f json", "\"peak_allocated\": "));
    /* a second image per sample: more tiles through the tower, a longer cross-attention key */
    assert_true(cli_json_field(ML11 " --image 560x560 --images 2 -f json", "\"peak_allocated\": ") >
                cli_json_field(argv, "\"peak_allocated\": "));
}

/* bench/accuracy/llm/measured.json's mllama_vision_small cases (run_suite.py's images block; mllama_replica.py,
 * torch 1.13 CPU, the allocator counter; --attention math, --workspace 0), those not held out: train fp32 600x400
 * -0.08%, bf16 560x560 at batch 2 -0.09%, LoRA r=8 on gate/up/down_proj bf16 -0.11%, 56x56 -0.08%, infer bf16 two
 * 300x900 images at batch 2 -0.13% */
static void test_measured_images(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"mllama_vision_small.json --seq 64 -b 1 -o adamw -p fp32 --image 600x400 --images 1", 7133696},
        {"mllama_vision_small.json --seq 64 -b 2 -o adamw -p bf16 --image 560x560 --images 1", 6176256},
        {"mllama_vision_small.json --seq 96 -b 1 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets gate_proj,up_proj,down_proj --image 600x400 --images 1", 4254720},
        {"mllama_vision_small.json --seq 64 -b 1 -o adamw -p fp32 --image 56x56 --images 1", 7133696},
        {"mllama_vision_small.json -m infer --seq 32 -b 2 -p bf16 --image 300x900 --images 2", 4002816},
    };
    assert_measured(c, sizeof c / sizeof *c, " --attention math --workspace 0 -f json", 1.0);
}

/* generate() with --image: MllamaTextCrossSdpaAttention.forward (modeling_mllama.py @ befb7955) puts the prefill's
 * key_states / value_states of cross_attention_states into the layer's DynamicCache layer and reads them back in the
 * decoding steps (k_proj / v_proj not run); the self-attention layers' cache grows as without an image */
static void test_generate_images(void **state)
{
    (void)state;
    char path[] = "/tmp/vc_famXXXXXX";
    fam_write(path, "{\"model_type\": \"mllama\", " SMALL_TEXT ", " SMALL_VISION "}");
    char a[512];
    snprintf(a, sizeof a, "%s -m generate --prompt 64 --new-tokens 16 --image 560x560 -f json", path);
    /* the image's tokens: 1 image x max_num_tiles 4 (pixel_values padded to them) x num_patches (28 / 14)^2 + 1 = 5:
     * 20; the one cross-attention layer (index 1) caches k and v of 2 kv heads x 16 x 20 tokens x fp32 4 B: 5,120 */
    assert_int_equal(cli_json_num(a, "generate", "cross_tokens"), 20);
    assert_int_equal(cli_json_num(a, "generate", "cross_cache"), 2 * 2 * 16 * 20 * 4);
    /* and kv_cache adds them to the 3 self-attention layers' 60,672 of test_text_only (the <|image|> token is one of
     * --prompt's) */
    assert_int_equal(cli_json_num(a, "generate", "kv_cache"), 3 * 2 * 2 * 16 * 4 * (64 + 15) + 2 * 2 * 16 * 20 * 4);
    /* two images a sample: 40 tokens, 10,240 B */
    snprintf(a, sizeof a, "%s -m generate --prompt 64 --new-tokens 16 --image 560x560 --images 2 -f json", path);
    assert_int_equal(cli_json_num(a, "generate", "cross_cache"), 2 * 2 * 16 * 40 * 4);
    remove(path);
    /* bench/accuracy/llm/measured.json's mllama_vision_small generate case not held out (mllama_replica.py through
     * measure_llm.py, torch 1.13 CPU; as 4.x runs it, compare.py's --transformers 4.57): bf16, batch 2, two 400x800
     * images, prompt 24 + 8 new tokens: prefill 4,003,840 (the tower), decode 2,080,256 */
    const char *g = VC_TEST_DATA "/../../bench/accuracy/llm/configs/mllama_vision_small.json -m generate --prompt 24 "
                    "--new-tokens 8 -b 2 -p bf16 --image 400x800 --images 2 --attention math --workspace 0 "
                    "--transformers 4.57 -f json";
    const int64_t pre = cli_json_num(g, "generate", "prefill_peak"), dec = cli_json_num(g, "generate", "decode_peak");
    assert_true(pre > 4003840 * 0.99 && pre < 4003840 * 1.01);
    assert_true(dec > 2080256 * 0.99 && dec < 2080256 * 1.01);
}

static void test_refusals(void **state)
{
    (void)state;
    static const fam_refusal c[] = {
        {SMALL_TEXT ", \"vision_config\": {\"max_num_tiles\": 3}",
         "vision_config.max_num_tiles: 3: MllamaVisionConfig raises ValueError"},
        {SMALL_TEXT ", \"vision_config\": {\"vision_output_dim\": 7000}", "vision_config.vision_output_dim: 7000"},
        {SMALL_TEXT ", \"vision_config\": {\"attention_heads\": 3}", "vision_config.attention_heads: 3 must divide"},
        {SMALL_TEXT ", \"vision_config\": {\"image_size\": 10}", "vision_config.patch_size: 14: larger than image_size"},
        {SMALL_TEXT ", \"vision_config\": {\"num_hidden_layers\": 8}", "vision_config.num_hidden_layers: 8: "
                                                                         "intermediate_layers_indices"},
        {SMALL_TEXT ", \"vision_config\": {\"intermediate_layers_indices\": [3, 40]}",
         "vision_config.intermediate_layers_indices: expected indices from 0 to 32"},
        {SMALL_TEXT ", \"vision_config\": {\"supported_aspect_ratios\": [[1, 5]]}",
         "vision_config.supported_aspect_ratios: expected [width, height] pairs"},
        {SMALL_TEXT ", \"vision_config\": {\"hidden_act\": \"tanh\"}", "vision_config.hidden_act: activation \"tanh\""},
        {SMALL_TEXT ", \"vision_config\": {\"norm_eps\": -1}", "vision_config.norm_eps: expected a positive number"},
        {SMALL_TEXT ", \"vision_config\": 3", "vision_config: expected an object"},
        {"\"text_config\": {\"num_hidden_layers\": 4, \"cross_attention_layers\": [4]}",
         "text_config.cross_attention_layers: expected layer indices from 0 to 3"},
        {"\"text_config\": {\"num_hidden_layers\": 4, \"cross_attention_layers\": [1, 1]}",
         "text_config.cross_attention_layers: layer 1 is listed twice"},
        {"\"text_config\": {\"num_hidden_layers\": 2, \"cross_attention_layers\": [0, 1]}",
         "text_config.cross_attention_layers: every layer is a cross-attention layer"},
        {"\"text_config\": {\"num_hidden_layers\": 30}", "text_config.num_hidden_layers: 30: cross_attention_layers"},
        {"\"text_config\": {\"tie_word_embeddings\": true}", "text_config.tie_word_embeddings: true"},
        {"\"text_config\": 1", "text_config: expected an object"},
    };
    fam_refuse_edits("{\"model_type\": \"mllama\", ", c, sizeof c / sizeof *c);
    static const fam_refusal o[] = {
        {"--images 2", "--images: needs --image WxH"},
        {"-m generate --image 560x560 --cache static", "--cache: mllama: generate() with images is modelled greedy"},
        {"-m generate --image 560x560 --num-beams 2", "--num-beams: mllama: generate() with images is modelled greedy"},
        {"--image 560x560 --images 1000000", "--images: 1000000 images of 4 tiles: the tower's tensors would have more "
                                             "than 2^48 elements"},
        {"--serve --gpu h100-80gb", "--serve: vLLM no longer serves MllamaForConditionalGeneration"},
        {"--tp 2 --gpus 2", "--tp: mllama: tensor parallelism is not modelled"},
        {"--lora 8", "--lora needs --lora-targets"},
        {"--liger", "--liger: mllama: apply_liger_kernel_to_mllama's patch set is not modelled"},
        /* PEFT matches the tower's MllamaVisionAttention / MllamaVisionMLP Linears by name too (layers/mllama.c
         * frozen_linears): adapters there are not modelled, so with an image such targets are refused */
        {"--image 560x560 --lora 8 --lora-targets q_proj,v_proj", "--lora-targets: q_proj also names the q_proj modules "
                                                                  "inside MllamaVision"},
        {"--image 560x560 --lora 8 --lora-targets gate_proj,fc2", "--lora-targets: fc2 also names the fc2 modules"},
    };
    fam_refuse_options(ML11, o, sizeof o / sizeof *o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_text_only),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_measured_images),
        cmocka_unit_test(test_generate_images),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
