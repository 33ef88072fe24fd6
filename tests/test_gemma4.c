/*
 * test_gemma4.c — Gemma 4 (model_type gemma4_text, gemma4; issue 31; src/hf/hf_gemma4.c).
 *
 * The parameters are counted from the modules' __init__s of huggingface/transformers
 * modeling_gemma4.py @ 0246b4f3335464614ef1de66531f9131a44ec801 and the defaults of
 * configuration_gemma4.py (v5.5: Gemma4TextConfig, Gemma4VisionConfig, Gemma4AudioConfig); the
 * memory is not modelled yet, so every build exits 2 naming model_type with the counts in its line.
 *
 * 1. The four checkpoints (tests/data/hf/gemma-4-*.json: each google/gemma-4-*-it config's text, vision
 *    and audio geometry as public third-party loaders transcribe it from the checkpoints' config.json --
 *    31B: hidden 5376, 60 layers, ffn 21504, 32 heads, 16 kv heads, 4 global kv heads, attention_k_eq_v,
 *    no per-layer embeddings; 26B-A4B: hidden 2816, 30 layers, ffn 2112, 16 heads, 8 / 2 kv heads,
 *    attention_k_eq_v, 128 experts of 704, top 8; E2B: hidden 1536, 35 layers (full every 5th), ffn 6144,
 *    8 heads, 1 kv head, 20 kv-shared layers, double-wide MLP, per-layer embeddings of 256; E4B: hidden
 *    2560, 42 layers, ffn 10240, 8 heads, 2 kv heads, 18 kv-shared layers, per-layer embeddings of 256;
 *    head_dim 256 / global_head_dim 512, vocab 262144 tied everywhere; the 31B's and 26B's vision tower
 *    hidden 1152, 27 layers, ffn 4304, 16 heads of 72; the E models' Gemma4VisionConfig's and
 *    Gemma4AudioConfig's defaults) are counted by hand below. bench/accuracy/llm/gemma4_params.py builds
 *    the modules on the meta device and gets the same counts; the published sizes are 30.7B, 25.2B with
 *    3.8B active, E2B 5.1B with its per-layer embeddings, E4B 8B.
 * 2. Gemma4TextConfig()'s defaults, and small configs for each rule (the last layer forced full, the
 *    full layers' head_dim and kv heads, k_eq_v, kv-shared layers, the double-wide MLP, the per-layer
 *    embeddings, the MoE block), by hand.
 * 3. Every bad value of the keys exits 2 naming the key; --image is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

#define HF VC_TEST_DATA "/hf/"

static void file_refused(const char *file, const char *want)
{
    vc_error err;
    vc_model *m = NULL;
    assert_int_equal(vc_model_load_file_hf(file, NULL, &m, &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "model_type");
    if (!strstr(CLI_MSG(&err), want)) fail_msg("%s: %s\n  wanted: %s", file, CLI_MSG(&err), want);
    assert_non_null(strstr(CLI_MSG(&err), "is not modelled yet"));
}

/* The message (path model_type) or the path a config gives. */
static void js_refused(const char *js, const vc_hf_options *o, const char *path, const char *want)
{
    vc_error err;
    vc_model *m = NULL;
    vc_status st = vc_model_load_string_hf(js, strlen(js), "config.json", o, &m, &err);
    assert_null(m);
    assert_true(st == VC_ERR_MODEL || st == VC_ERR_USAGE);
    if (strcmp(CLI_PATH(&err), path) || !strstr(CLI_MSG(&err), want))
        fail_msg("%s\n  got %s: %s\n  wanted %s: ...%s", js, CLI_PATH(&err), CLI_MSG(&err), path, want);
}

/* 1. The checkpoints, by hand (d = head_dim, the full layers' global_head_dim 512; every projection
 *    without bias; Gemma4RMSNorm a weight of its width; v_norm and the router's norm without weight;
 *    embed_tokens [262144, H] tied to lm_head).
 *  - 31B (H 5376): embed_tokens 1,409,286,144, norm 5,376. A sliding layer: q_proj and o_proj
 *    32 x 256 x 5376 = 44,040,192 each, k_proj and v_proj 16 x 256 x 5376 = 22,020,096 each, q_norm and
 *    k_norm 256 each (attention 132,121,088), mlp 3 x 5376 x 21504 = 346,816,512, four norms 21,504:
 *    478,959,104, 50 of them. A full layer (attention_k_eq_v: k_proj of 4 x 512, no v_proj): q_proj and
 *    o_proj 32 x 512 x 5376 = 88,080,384 each, k_proj 4 x 512 x 5376 = 11,010,048, q_norm and k_norm 512
 *    each (187,171,840), mlp and norms as above: 534,009,856, 10 of them (layers 5, 11, ..., 59).
 *    1,409,291,520 + 23,947,955,200 + 5,340,098,560 = 30,697,345,280.
 *    Vision tower (H 1152, 27 layers, 16 heads and kv heads of 72, ffn 4304, patch 16, 10240 positions):
 *    input_proj 3 x 16 x 16 x 1152 = 884,736, position_embedding_table 2 x 10240 x 1152 = 23,592,960; a
 *    layer: q/k/v/o 4 x 1152 x 1152 = 5,308,416, q_norm and k_norm 144, gate/up/down 3 x 1152 x 4304 =
 *    14,874,624, four norms 4,608: 20,187,792, x 27 = 545,070,384; embed_vision 1152 x 5376 = 6,193,152:
 *    575,741,232.
 *  - 26B-A4B (H 2816): embed_tokens 738,197,504, norm 2,816. A sliding layer: q_proj and o_proj
 *    16 x 256 x 2816 = 11,534,336 each, k_proj and v_proj 8 x 256 x 2816 = 5,767,168 each, norms 512
 *    (34,603,520); mlp 3 x 2816 x 2112 = 17,842,176; four norms 11,264; the MoE block: router proj
 *    128 x 2816 = 360,448, scale 2,816, per_expert_scale 128, experts 3 x 128 x 2816 x 704 = 761,266,176,
 *    three norms 8,448 (761,638,016): 814,094,976, 25 of them. A full layer: q_proj and o_proj
 *    16 x 512 x 2816 = 23,068,672 each, k_proj 2 x 512 x 2816 = 2,883,584, norms 1,024 (49,021,952):
 *    828,513,408, 5 of them. 738,200,320 + 20,352,374,400 + 4,142,567,040 = 25,233,141,760; a token runs
 *    8 of the 128 experts: 25,233,141,760 - 30 x 3 x 120 x 2816 x 704 = 3,822,530,560 active.
 *    The vision tower as the 31B's, embed_vision 1152 x 2816 = 3,244,032: 572,792,112.
 *  - E2B (H 1536, layer_types full every 5th, 20 kv-shared layers from layer 15): embed_tokens
 *    402,653,184, norm 1,536; the per-layer embeddings: embed_tokens_per_layer 262144 x 35 x 256 =
 *    2,348,810,240, per_layer_model_projection 1536 x 8960 = 13,762,560, per_layer_projection_norm 256
 *    (2,362,573,056). Every layer: four norms 6,144; per_layer_input_gate and per_layer_projection
 *    2 x 1536 x 256 and post_per_layer_input_norm 1,536 (787,968). Layers 0-14: a sliding layer q_proj and
 *    o_proj 8 x 256 x 1536 = 3,145,728 each, k_proj and v_proj 256 x 1536 = 393,216 each, norms 512
 *    (7,078,400), mlp 3 x 1536 x 6144 = 28,311,552: 36,184,064 (12 of them); a full layer q_proj and o_proj
 *    6,291,456 each, k_proj and v_proj 786,432 each, norms 1,024 (14,156,800): 43,262,464 (3). Layers
 *    15-34 (kv-shared: q_proj, q_norm, o_proj only; the MLP double-wide, 3 x 1536 x 12288 = 56,623,104):
 *    sliding 6,291,712 + 56,623,104 + 6,144 + 787,968 = 63,708,928 (16), full 12,583,424 + ... =
 *    70,000,640 (4). 402,654,720 + 2,362,573,056 + 434,208,768 + 129,787,392 + 1,019,342,848 +
 *    280,002,560 = 4,628,569,344. Vision tower (Gemma4VisionConfig(): H 768, 16 layers, 12 heads of 64,
 *    ffn 3072): 589,824 + 15,728,640 + 16 x 9,440,384 + embed_vision 768 x 1536 = 1,179,648:
 *    168,544,256. Audio tower (Gemma4AudioConfig(): H 1024, 12 layers, 8 heads of 128, channels
 *    [128, 32], kernel 5, output 1536): subsample_conv_projection 1,152 + 128 + 36,864 + 32 + 32 x 32 x 1024
 *    = 1,086,752; a layer: two feed-forwards 2 x (8 x 1024^2 + 2,048), attention 4 x 1024^2 + 1024^2 + 128,
 *    lconv1d 3 x 1024^2 + 1024 x 5 + 2,048, three norms 3,072: 25,180,288, x 12 = 302,163,456; output_proj
 *    1024 x 1536 + 1536 = 1,574,400; embed_audio 1536 x 1536 = 2,359,296: 307,183,904.
 *  - E4B (H 2560, 18 kv-shared layers from 24, no double-wide MLP): embed_tokens 671,088,640, norm 2,560,
 *    per-layer embeddings 262144 x 42 x 256 + 2560 x 10752 + 256 = 2,846,097,664; every layer four norms
 *    10,240, mlp 3 x 2560 x 10240 = 78,643,200, per-layer 2 x 2560 x 256 + 2560 = 1,313,280; attention:
 *    sliding 2 x 2048 x 2560 + 2 x 512 x 2560 + 512 = 13,107,712 (20 of layers 0-23), full 2 x 4096 x 2560
 *    + 2 x 1024 x 2560 + 1,024 = 26,215,424 (4), shared sliding 10,486,016 (15), shared full 20,972,032
 *    (3): 20 x 93,074,432 + 4 x 106,182,144 + 15 x 90,452,736 + 3 x 100,938,752 + 3,517,188,864 =
 *    7,463,013,376. The vision tower with embed_vision 768 x 2560: 169,330,688; the audio tower with
 *    embed_audio 1536 x 2560: 308,756,768. */
static void test_checkpoints(void **state)
{
    (void)state;
    file_refused(HF "gemma-4-31b-it.json", "gemma4: the language model has 30697345280 parameters (30697345280 "
                 "active per token, lm_head tied to embed_tokens) + 575741232 vision tower + 0 audio tower = 31273086512");
    file_refused(HF "gemma-4-26b-a4b-it.json", "the language model has 25233141760 parameters (3822530560 active "
                 "per token, lm_head tied to embed_tokens) + 572792112 vision tower + 0 audio tower = 25805933872");
    file_refused(HF "gemma-4-e2b-it.json", "the language model has 4628569344 parameters (4628569344 active per "
                 "token, lm_head tied to embed_tokens) + 168544256 vision tower + 307183904 audio tower = 5104297504");
    file_refused(HF "gemma-4-e4b-it.json", "the language model has 7463013376 parameters (7463013376 active per "
                 "token, lm_head tied to embed_tokens) + 169330688 vision tower + 308756768 audio tower = 7941100832");
}

/* The small text config of section 2: vocab 100, hidden 16, ffn 32, 4 layers, 2 heads of 8, 1 kv head,
 * global_head_dim 16, no per-layer embeddings; embed_tokens 1,600 (tied) and norm 16. A sliding layer:
 * q_proj and o_proj 2 x 8 x 16 = 256 each, k_proj and v_proj 128 each, q_norm and k_norm 8 each (784),
 * mlp 3 x 16 x 32 = 1,536, four norms 64: 2,384. A full layer (head_dim 16): q_proj and o_proj 512 each,
 * k_proj and v_proj 256 each, norms 16 each (1,568): 3,168. */
#define CORE "\"vocab_size\":100,\"hidden_size\":16,\"intermediate_size\":32,\"num_hidden_layers\":4," \
             "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":8"
#define SMALL CORE ",\"global_head_dim\":16,\"hidden_size_per_layer_input\":0"
#define SLIDE "\"sliding_attention\""
#define FULL "\"full_attention\""
#define T(extra) "{\"model_type\":\"gemma4_text\"," SMALL extra "}"
#define T_NO_GD(extra) "{\"model_type\":\"gemma4_text\"," CORE ",\"hidden_size_per_layer_input\":0" extra "}"
#define T_NO_P(extra) "{\"model_type\":\"gemma4_text\"," CORE ",\"global_head_dim\":16" extra "}"

static void test_rules(void **state)
{
    (void)state;
    /* Gemma4TextConfig(): vocab 262144, hidden 2304, 30 layers (full at 5, 11, 17, 23, 29), ffn 9216,
     * 8 heads, 4 kv heads, head_dim 256 / 512, per-layer embeddings of 256 over 262144 tokens. embed_tokens
     * 603,979,776, norm 2,304, embed_tokens_per_layer 262144 x 7680 = 2,013,265,920,
     * per_layer_model_projection 2304 x 7680 = 17,694,720, its norm 256; a sliding layer: q_proj and o_proj
     * 4,718,592 each, k_proj and v_proj 2,359,296 each, norms 512, mlp 63,700,992, four norms 9,216,
     * per-layer 1,181,952: 79,048,448 (25); a full layer: q_proj and o_proj 9,437,184 each, k_proj and v_proj
     * 4,718,592 each, norms 1,024: 93,204,736 (5). 5,077,177,856. */
    js_refused("{\"model_type\":\"gemma4_text\"}", NULL, "model_type", "the language model has 5077177856 parameters "
               "(5077177856 active per token, lm_head tied to embed_tokens); the memory");
    /* every layer listed sliding: __post_init__ forces the last to full: 1,616 + 3 x 2,384 + 3,168 = 11,936
     * (11,152 were it sliding) */
    js_refused(T(",\"layer_types\":[" SLIDE "," SLIDE "," SLIDE "," SLIDE "]"), NULL, "model_type", " 11936 parameters");
    /* untied: lm_head [100, 16] more */
    js_refused(T(",\"tie_word_embeddings\":false"), NULL, "model_type", " 13536 parameters (13536 active per token, "
               "lm_head untied)");
    /* global_head_dim 0 (falsy): the full layers keep head_dim 8: 1,616 + 4 x 2,384 = 11,152 */
    js_refused(T_NO_GD(",\"global_head_dim\":0"), NULL, "model_type", " 11152 parameters");
    /* attention_k_eq_v with 1 global kv head: the full layer's k_proj 1 x 16 x 16 = 256, no v_proj:
     * 3,168 - 256 = 2,912; 1,616 + 3 x 2,384 + 2,912 = 11,680 */
    js_refused(T(",\"attention_k_eq_v\":true,\"num_global_key_value_heads\":1"), NULL, "model_type", " 11680 parameters");
    /* 2 kv-shared layers and the double-wide MLP (layers 2, 3: no k_proj, v_proj, k_norm; ffn 64):
     * sliding, full, shared sliding 256 + 256 + 8 + 3 x 16 x 64 + 64 = 3,656, shared full 512 + 512 + 16 +
     * 3,072 + 64 = 4,176: 1,616 + 2,384 + 3,168 + 3,656 + 4,176 = 15,000 */
    js_refused(T(",\"layer_types\":[" SLIDE "," FULL "," SLIDE "," FULL "],\"num_kv_shared_layers\":2,"
                 "\"use_double_wide_mlp\":true"), NULL, "model_type", " 15000 parameters");
    /* per-layer embeddings of 4 over 50 tokens: embed_tokens_per_layer 50 x 16, per_layer_model_projection
     * 16 x 16, norm 4 (1,060); per layer 2 x 16 x 4 + 16 = 144: 11,936 + 1,060 + 576 = 13,572 */
    js_refused(T_NO_P(",\"hidden_size_per_layer_input\":4,\"vocab_size_per_layer_input\":50"), NULL, "model_type",
               " 13572 parameters");
    /* the MoE block, 4 experts of 8, top 2: per layer router 16 x 4 + 16 + 4, experts 3 x 4 x 16 x 8 = 1,536,
     * three norms 48 (1,668): 11,936 + 6,672 = 18,608; active: 2 idle experts x 384 x 4 layers less */
    js_refused(T(",\"enable_moe_block\":true,\"num_experts\":4,\"top_k_experts\":2,\"moe_intermediate_size\":8"), NULL,
               "model_type", " 18608 parameters (15536 active per token");
    /* gemma4 without towers: the language model alone, "+ 0 vision tower + 0 audio tower" */
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL "}}", NULL, "model_type",
               " 11936 parameters (11936 active per token, lm_head tied to embed_tokens) + 0 vision tower + 0 audio "
               "tower = 11936");
    /* gemma4: the lm_head tied by Gemma4Config's tie_word_embeddings, not text_config's (transformers 5's
     * get_expanded_tied_weights_keys reads the model's own config): untied, 100 x 16 more */
    js_refused("{\"model_type\":\"gemma4\",\"tie_word_embeddings\":false,\"text_config\":{" SMALL
               ",\"tie_word_embeddings\":true}}", NULL, "model_type", " 13536 parameters (13536 active per token, "
               "lm_head untied)");
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL ",\"tie_word_embeddings\":false}}", NULL,
               "model_type", " 11936 parameters (11936 active per token, lm_head tied");
    /* Gemma4VisionConfig() with this text model: 589,824 + 15,728,640 + 16 x 9,440,384 + 768 x 16 = 167,376,896 */
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL "},\"vision_config\":{}}", NULL, "model_type",
               "+ 167376896 vision tower + 0 audio tower = 167388832");
}

static void test_refusals(void **state)
{
    (void)state;
    js_refused(T(",\"attention_k_eq_v\":true"), NULL, "num_global_key_value_heads", "null with attention_k_eq_v");
    js_refused(T(",\"attention_k_eq_v\":true,\"num_global_key_value_heads\":3"), NULL, "num_global_key_value_heads",
               "must be divisible");
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL ",\"attention_k_eq_v\":true}}", NULL,
               "text_config.num_global_key_value_heads", "null with attention_k_eq_v");
    /* layers 2, 3 shared, layer 3 (full, forced) with no full layer among 0, 1 */
    js_refused(T(",\"num_kv_shared_layers\":2"), NULL, "num_kv_shared_layers", "layer 3 (full_attention)");
    js_refused(T(",\"num_kv_shared_layers\":-1"), NULL, "num_kv_shared_layers", "expected an integer");
    js_refused(T(",\"enable_moe_block\":true,\"top_k_experts\":2,\"moe_intermediate_size\":8"), NULL, "num_experts",
               "required with enable_moe_block");
    js_refused(T(",\"enable_moe_block\":true,\"num_experts\":4,\"top_k_experts\":5,\"moe_intermediate_size\":8"), NULL,
               "top_k_experts", "more than the 4 experts");
    js_refused("{\"model_type\":\"gemma4_text\",\"num_hidden_layers\":1099511627776}", NULL, "num_hidden_layers",
               "more than the limit of 1024");
    js_refused(T(",\"enable_moe_block\":1"), NULL, "enable_moe_block", "expected true or false");
    js_refused(T(",\"layer_types\":[" SLIDE "]"), NULL, "layer_types", "expected a list of 4 layer types");
    js_refused(T(",\"layer_types\":[" SLIDE "," SLIDE "," SLIDE ",\"chunked_attention\"]"), NULL, "layer_types",
               "expected \"sliding_attention\" or \"full_attention\"");
    js_refused(T(",\"use_bidirectional_attention\":\"both\""), NULL, "use_bidirectional_attention", "expected \"all\"");
    js_refused(T_NO_P(",\"hidden_size_per_layer_input\":-4"), NULL, "hidden_size_per_layer_input", "expected an integer");
    js_refused(T_NO_GD(",\"global_head_dim\":1.5"), NULL, "global_head_dim", "expected an integer");
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL "},\"vision_config\":{\"num_key_value_heads\":5}}",
               NULL, "vision_config.num_key_value_heads", "must be divisible");
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL "},\"vision_config\":[]}", NULL, "vision_config",
               "expected an object");
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL "},\"audio_config\":{\"num_attention_heads\":3}}",
               NULL, "audio_config.num_attention_heads", "must divide hidden_size");
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL "},\"audio_config\":{\"subsampling_conv_channels\":"
               "[128]}}", NULL, "audio_config.subsampling_conv_channels", "expected a list of two");
    vc_hf_options o;
    vc_hf_options_init(&o);
    o.image_w = o.image_h = 896;
    js_refused("{\"model_type\":\"gemma4\",\"text_config\":{" SMALL "},\"vision_config\":{}}", &o, "--image",
               "the tower's weights are counted, no image is run");
    js_refused(T(""), &o, "--image", "gemma4_text has no vision tower");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoints),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
