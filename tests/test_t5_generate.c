/*
 * test_t5_generate.c — --mode generate of t5 / flan-t5 (issue 31 item 4; src/engine/generate.c
 * "Encoder-decoders", layers/t5.c): generate() as transformers runs it for
 * T5ForConditionalGeneration (generation/utils.py @000034a: the encoder once over --prompt, the decoder
 * from decoder_start_token_id one token a step, EncoderDecoderCache), against the peaks measured from
 * bench/accuracy/llm/t5_replica.py's generate() (written from that source and modeling_t5.py @6b8b757d,
 * measured by measure_llm.py --mode generate on torch 1.13 CPU: bench/accuracy/llm/measured.json, cases
 * llm392 to llm400; the held-out llm394, llm397 and llm399 are not asserted here), the cache it reports,
 * and what is refused.
 *
 * The configs are bench/accuracy/llm/configs/t5_small.json (relu, tied: the d_model ** -0.5 rescale;
 * 2 + 2 blocks, 8 heads of 32) and flan_t5_small.json (gated-gelu, untied, 2 encoder and 3 decoder
 * blocks, 6 heads of 32), run through the CLI as compare.py runs them.
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

#define CFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

/* The prefill peak (generate's attention mask, the encoder over the prompt, the decoder's first step)
 * and the decoding peak (the last step: the self-attention cache longest, its torch.cat's old and new
 * tensors together) against measured.json's. The estimates are 1,536 to 2,560 bytes (3 to 5 allocations
 * of 512 bytes) low: T5Stack's small mask tensors of the decoder (its float32 ones(B, past + 1), the
 * arange and the comparison of _prepare_4d_causal_attention_mask_with_cache_position) are freed at their
 * last use rather than when the stack returns, as in -m infer (test_t5.c infer_measured), and block 0's
 * real_seq_length (cache_position[-1] + 1, a local of its self-attention) is not modelled. */
static void measured(void **state)
{
    (void)state;
    static const struct {
        const char *cfg;
        int batch, prompt, new_tokens;
        const char *prec;
        long long prefill, decode; /* measured.json prefill_peak, decode_peak */
        int prefill_low, decode_low; /* bytes the estimate is below them */
    } cases[] = {
        {"t5_small", 2, 128, 16, "fp32", 22042112, 18560512, 2560, 1536},   /* llm392 */
        {"t5_small", 2, 128, 16, "bf16", 12335104, 9293312, 2560, 1536},    /* llm393 */
        {"flan_t5_small", 1, 64, 48, "bf16", 7335936, 7211008, 2048, 1536}, /* llm395 */
        {"t5_small", 4, 32, 64, "fp32", 18500096, 18833408, 2048, 2048},    /* llm396: the decoding peak is the larger */
        {"t5_small", 3, 100, 2, "bf16", 12206592, 9391104, 2560, 1536},     /* llm398 */
        {"t5_small", 1, 16, 96, "fp32", 16999936, 17389056, 2048, 1536},    /* llm400 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        long long p = cli_generate_field(cases[i].cfg, cases[i].batch, cases[i].prompt, cases[i].new_tokens, cases[i].prec,
                            "\"prefill_peak\": ");
        long long d = cli_generate_field(cases[i].cfg, cases[i].batch, cases[i].prompt, cases[i].new_tokens, cases[i].prec,
                            "\"decode_peak\": ");
        if (p != cases[i].prefill - cases[i].prefill_low || d != cases[i].decode - cases[i].decode_low)
            fail_msg("case %zu: prefill %lld (measured %lld), decode %lld (measured %lld)", i, p, cases[i].prefill, d,
                     cases[i].decode);
    }
}

/* The cache generate() leaves: EncoderDecoderCache's self-attention keys and values of the decoder's
 * tokens (decoder_start_token_id and the new tokens but the last: --new-tokens) and the cross-attention's
 * of the encoder's --prompt tokens, per decoder layer, batch and dtype. t5_small, batch 2, fp32, prompt
 * 128, 16 new tokens: 2 layers x 2 (K, V) x 2 x 256 (8 heads x 32) x 4 bytes x (16 + 128) = 1,179,648. */
static void cache(void **state)
{
    (void)state;
    assert_int_equal(cli_generate_field("t5_small", 2, 128, 16, "fp32", "\"kv_cache\": "), 2LL * 2 * 2 * 256 * 4 * (16 + 128));
    assert_int_equal(cli_generate_field("t5_small", 2, 128, 16, "fp32", "\"kv_tokens\": "), 16);
    /* of it the cross-attention's: 2 layers x 2 x 2 x 256 x 4 bytes x 128 encoder tokens */
    assert_int_equal(cli_generate_field("t5_small", 2, 128, 16, "fp32", "\"cross_cache\": "), 2LL * 2 * 2 * 256 * 4 * 128);
    assert_int_equal(cli_generate_field("t5_small", 2, 128, 16, "fp32", "\"cross_tokens\": "), 128);
    /* flan_t5_small, bf16, batch 1, prompt 64, 48 new tokens: 3 decoder layers x 2 x 192 (6 x 32) x 2 bytes */
    assert_int_equal(cli_generate_field("flan_t5_small", 1, 64, 48, "bf16", "\"kv_cache\": "), 3LL * 2 * 192 * 2 * (48 + 64));
    /* one new token: the first step only (the start token's keys and values, the cross-attention's) */
    assert_int_equal(cli_generate_field("t5_small", 2, 128, 1, "fp32", "\"kv_cache\": "), 2LL * 2 * 2 * 256 * 4 * (1 + 128));
    assert_int_equal(cli_generate_field("t5_small", 2, 128, 1, "fp32", "\"decode_step\": "), 0);
    /* the timeline: the encoder's activations are freed before decoding, so a long prompt's prefill peak
     * (its attention scores) stays above the decoding peak, which the cache's growth sets for a short one */
    assert_true(cli_generate_field("t5_small", 1, 256, 8, "fp32", "\"prefill_peak\": ") >
                cli_generate_field("t5_small", 1, 256, 8, "fp32", "\"decode_peak\": "));
    assert_true(cli_generate_field("t5_small", 4, 32, 64, "fp32", "\"decode_peak\": ") >
                cli_generate_field("t5_small", 4, 32, 64, "fp32", "\"prefill_peak\": "));
}

static const char T5_SMALL[] =
    "{\"model_type\": \"t5\", \"architectures\": [\"T5ForConditionalGeneration\"], \"vocab_size\": 2048, "
    "\"d_model\": 256, \"d_kv\": 32, \"d_ff\": 1024, \"num_layers\": 2, \"num_heads\": 8, "
    "\"relative_attention_num_buckets\": 32, \"relative_attention_max_distance\": 128, \"dropout_rate\": 0.1, "
    "\"layer_norm_epsilon\": 1e-6, \"feed_forward_proj\": \"relu\", \"is_encoder_decoder\": true, "
    "\"tie_word_embeddings\": true, \"decoder_start_token_id\": 0, \"pad_token_id\": 0, \"eos_token_id\": 1}";

static vc_status gen(const vc_model *m, vc_result *r, vc_error *err)
{
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.batch = 2;
    o.prompt = 128;
    o.new_tokens = 16;
    o.workspace = 0;
    o.attention = VC_ATTN_MATH;
    return vc_estimate(m, &o, r, err);
}

/* The encoder-decoder path is the engine's, not the t5 row's: the model t5_small's config.json becomes
 * (its decoder one token long, --target-seq 1) loaded as a model file generates to the same figures; it
 * keys on the layers named "encoder" and "decoder_input_ids" (src/engine/generate.c "Encoder-decoders"),
 * and without the second the model is no encoder-decoder: generate refuses it as for any model that is
 * not a causal LM. */
static void model_file(void **state)
{
    (void)state;
    vc_hf_options h;
    vc_hf_options_init(&h);
    h.seq = 128;
    h.target_seq = 1;
    vc_model *hf = NULL, *file = NULL, *bad = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_string_hf(T5_SMALL, strlen(T5_SMALL), "config.json", &h, &hf, &err), VC_OK);
    const char *js = vc_model_generated_json(hf);
    assert_int_equal(vc_model_load_string(js, strlen(js), "t5.json", &file, &err), VC_OK);
    vc_result a, b;
    assert_int_equal(gen(hf, &a, &err), VC_OK);
    assert_int_equal(gen(file, &b, &err), VC_OK);
    assert_int_equal(a.generate.prefill_peak, b.generate.prefill_peak);
    assert_int_equal(a.generate.decode_peak, b.generate.decode_peak);
    assert_int_equal(b.generate.kv_cache, 2LL * 2 * 2 * 256 * 4 * (16 + 128));
    vc_result_free(&a);
    vc_result_free(&b);
    char *renamed = strdup(js), *at = strstr(renamed, "\"decoder_input_ids\"");
    assert_non_null(at);
    memcpy(at + 1, "decoder_input_idz", 17);
    assert_int_equal(vc_model_load_string(renamed, strlen(renamed), "t5.json", &bad, &err), VC_OK);
    assert_int_equal(gen(bad, &a, &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "generate needs a causal language model"));
    free(renamed);
    vc_model_free(bad);
    vc_model_free(file);
    vc_model_free(hf);
}

/* Bad or unmodelled values exit 2 with one line naming the option. */
static void refusals(void **state)
{
    (void)state;
    assert_usage(CFG "t5_small.json -m generate --cache static",
                 "--cache: an encoder-decoder's generate() is modelled with the EncoderDecoderCache");
    assert_usage(CFG "t5_small.json -m generate --cache quantized", "--cache:");
    assert_usage(CFG "t5_small.json -m generate --new-tokens 0", "--new-tokens");
    assert_usage(CFG "t5_small.json -m generate --prompt 0", "--prompt");
    assert_usage(CFG "t5_small.json -m generate --seq 64", "--seq does not go with --mode generate");
    assert_usage(CFG "t5_small.json -m generate --target-seq 8", "--target-seq");
    assert_usage(CFG "t5_small.json -m generate -p fp16", "--precision: t5 is modelled in fp32 and bf16");
    assert_usage(CFG "t5_small.json --serve --gpu h100-80gb", "--serve: vLLM has no T5ForConditionalGeneration");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(measured),
        cmocka_unit_test(cache),
        cmocka_unit_test(model_file),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
