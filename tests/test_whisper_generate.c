/*
 * test_whisper_generate.c — --mode generate of whisper (issue 31 item 4; src/engine/generate.c
 * "Encoder-decoders", layers/whisper.c, src/hf/hf_whisper.c): WhisperGenerationMixin.generate's
 * short-form path (generation_whisper.py @000dccdb: the features' segment copy, the encoder once, the
 * decoder from the --prompt init tokens one token a step with EncoderDecoderCache) against the peaks
 * measured from bench/accuracy/llm/whisper_replica.py's generate() (written from that source,
 * generation/utils.py @000034a's encoder-decoder loop and modeling_whisper.py @efa7189c's cached sdpa
 * attention; measured by measure_llm.py --mode generate on torch 1.13 CPU: bench/accuracy/llm/measured.json,
 * cases llm505 to llm513; the held-out llm507, llm510 and llm513 are not asserted here), the cache it
 * reports, and what is refused.
 *
 * The configs are bench/accuracy/llm/configs/whisper_small.json (d_model 256, 2 + 2 layers, 300 source
 * positions: 600 mel frames, tied), whisper_v3_small.json (128 mel bins, d_model 192, 2 + 3 layers, 250
 * positions, untied) and whisper_30s_small.json (d_model 128, the real 1500 positions: 3000 frames), run
 * through the CLI as compare.py runs them.
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
#define HF VC_TEST_DATA "/hf/"

/* The prefill peak (the segment copy of the features, the encoder, the decoder's first step over the
 * --prompt init tokens: every measured one equal) and the decoding peak (the last step: the
 * self-attention cache longest) against measured.json's. The decoding estimates are within 1,024 bytes
 * (two allocations of 512 bytes) either way of the measured (3,072 in the held-out llm510): small int64
 * tensors of the loop and of WhisperDecoder.forward (position_ids) whose lifetimes are not yet attributed
 * one by one. */
static void measured(void **state)
{
    (void)state;
    static const struct {
        const char *cfg;
        int batch, prompt, new_tokens;
        const char *prec;
        long long prefill, decode; /* measured.json prefill_peak, decode_peak */
        int decode_diff;           /* bytes the decoding estimate is above it (negative: below) */
    } cases[] = {
        {"whisper_small", 2, 4, 8, "fp32", 32294912, 25347072, 1024},     /* llm505 */
        {"whisper_small", 2, 4, 8, "bf16", 21541888, 14237696, 0},        /* llm506 */
        {"whisper_v3_small", 1, 4, 64, "bf16", 12606464, 9313792, -512},  /* llm508 */
        {"whisper_30s_small", 1, 4, 32, "fp32", 53873152, 12699136, -512}, /* llm509 */
        {"whisper_30s_small", 2, 1, 8, "bf16", 96730624, 13484032, -512}, /* llm511 */
        {"whisper_small", 1, 4, 2, "fp32", 26519552, 23021568, 0},        /* llm512 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        long long p = cli_generate_field(cases[i].cfg, cases[i].batch, cases[i].prompt, cases[i].new_tokens, cases[i].prec,
                            "\"prefill_peak\": ");
        long long d = cli_generate_field(cases[i].cfg, cases[i].batch, cases[i].prompt, cases[i].new_tokens, cases[i].prec,
                            "\"decode_peak\": ");
        if (p != cases[i].prefill || d != cases[i].decode + cases[i].decode_diff)
            fail_msg("case %zu: prefill %lld (measured %lld), decode %lld (measured %lld)", i, p, cases[i].prefill, d,
                     cases[i].decode);
    }
}

/* The cache generate() leaves, derived by hand: EncoderDecoderCache's self-attention keys and values of
 * the decoder's tokens (the --prompt init tokens and the new tokens but the last) and the
 * cross-attention's of the encoder's max_source_positions outputs, per decoder layer, sample and dtype
 * (d_model each: decoder_attention_heads x head_dim). */
static void cache(void **state)
{
    (void)state;
    /* whisper_small, batch 2, fp32, prompt 4, 8 new tokens: 2 layers x 2 (K, V) x 2 x 256 x 4 bytes x (11 + 300) */
    assert_int_equal(cli_generate_field("whisper_small", 2, 4, 8, "fp32", "\"kv_cache\": "), 2LL * 2 * 2 * 256 * 4 * (4 + 8 - 1 + 300));
    assert_int_equal(cli_generate_field("whisper_small", 2, 4, 8, "fp32", "\"kv_tokens\": "), 11);
    assert_int_equal(cli_generate_field("whisper_small", 2, 4, 8, "fp32", "\"cross_cache\": "), 2LL * 2 * 2 * 256 * 4 * 300);
    assert_int_equal(cli_generate_field("whisper_small", 2, 4, 8, "fp32", "\"cross_tokens\": "), 300);
    /* whisper_v3_small, bf16, batch 1, prompt 4, 64 new tokens: 3 decoder layers x 2 x 192 x 2 bytes x (67 + 250) */
    assert_int_equal(cli_generate_field("whisper_v3_small", 1, 4, 64, "bf16", "\"kv_cache\": "), 3LL * 2 * 192 * 2 * (67 + 250));
    /* whisper_30s_small, bf16, batch 2, prompt 1: 2 x 2 x 2 x 128 x 2 bytes x (8 + 1500): the 30 s encoder's
     * cross-attention states are the cache's bulk */
    assert_int_equal(cli_generate_field("whisper_30s_small", 2, 1, 8, "bf16", "\"kv_cache\": "), 2LL * 2 * 2 * 128 * 2 * (8 + 1500));
    /* one new token: the first step only (the prompt's keys and values, the cross-attention's) */
    assert_int_equal(cli_generate_field("whisper_small", 2, 4, 1, "fp32", "\"kv_cache\": "), 2LL * 2 * 2 * 256 * 4 * (4 + 300));
    assert_int_equal(cli_generate_field("whisper_small", 2, 4, 1, "fp32", "\"decode_step\": "), 0);
    /* the first step runs the --prompt tokens at once (no decoding step of its own); the prefill peak is
     * the encoder's over its frames (its last layer's MLP), which the decoder's few tokens stay below */
    assert_int_equal(cli_generate_field("whisper_small", 2, 4, 8, "fp32", "\"prefill_peak\": "),
                     cli_generate_field("whisper_small", 2, 1, 8, "fp32", "\"prefill_peak\": "));
    assert_int_equal(cli_generate_field("whisper_small", 2, 1, 8, "fp32", "\"decode_step\": "), 7);
}

/* A model directory: config.json (whisper-large-v3's keys, tests/data/hf/whisper-large-v3.json, with `extra`
 * keys put first when given) and a generation_config.json when gen is not NULL; its path into dir. */
static void model_dir(char *dir, size_t n, const char *extra, const char *gen)
{
    char tmpl[] = "/tmp/vc_whisper_genXXXXXX", cfg[4096], path[512];
    assert_non_null(mkdtemp(tmpl));
    snprintf(dir, n, "%s", tmpl);
    cli_slurp(HF "whisper-large-v3.json", cfg, sizeof cfg);
    assert_true(cfg[0] == '{');
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{%s%s", extra ? extra : "", cfg + 1);
    fclose(f);
    if (gen) {
        snprintf(path, sizeof path, "%s/generation_config.json", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(gen, f);
        fclose(f);
    }
}

static void rm_dir(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", dir);
    remove(p);
    snprintf(p, sizeof p, "%s/generation_config.json", dir);
    remove(p);
    rmdir(dir);
}

/* the decoder prompt and new tokens -m generate runs for `args` (given neither, or one) */
static void assert_gen(const char *args, long long prompt, long long new_tokens)
{
    char a[512];
    snprintf(a, sizeof a, "%s -m generate", args);
    long long p = cli_json_field(a, "\"prompt\": "), m = cli_json_field(a, "\"new_tokens\": ");
    if (p != prompt || m != new_tokens)
        fail_msg("vramcalc %s: prompt %lld, new tokens %lld (wanted %lld, %lld)", a, p, m, prompt, new_tokens);
}

/* generate()'s own defaults when --prompt and --new-tokens are not given (src/hf/hf_whisper.c
 * vc__whisper_gen_defaults: generation_whisper.py @000dccdb _retrieve_init_tokens and
 * _set_max_new_tokens_and_length, generation/utils.py @000034a4 _prepare_generated_length and
 * _validate_generated_length, configuration_utils.py @008f5c8c GenerationConfig.__init__), derived by hand. */
static void defaults(void **state)
{
    (void)state;
    /* a config.json alone (GenerationConfig.from_model_config): decoder_start_token_id, no forced_decoder_ids in
     * these configs: 1 token; max_length 448 (the config's): 448 - 1 new tokens */
    assert_gen(HF "whisper-tiny.json", 1, 447);
    assert_gen(HF "whisper-large-v3.json", 1, 447);
    /* no max_length: GenerationConfig's 20, made 20 + the prompt: 20 new tokens, whatever the prompt */
    assert_gen(CFG "whisper_small.json", 1, 20);
    assert_gen(CFG "whisper_small.json --prompt 4", 4, 20);
    /* --new-tokens given: the prompt's default alone; --prompt given: max_length - it */
    assert_gen(HF "whisper-tiny.json --new-tokens 100", 1, 100);
    assert_gen(HF "whisper-tiny.json --prompt 4", 4, 444);
    char dir[64], args[128];
    /* openai/whisper-large-v3's generation_config.json (the keys _retrieve_init_tokens reads; lang_to_id cut to
     * three of its languages): forced [[1, null], [2, <|transcribe|>]] -> [<|startoftranscript|>, None,
     * <|transcribe|>], the language detected into slot 1 (lang_to_id), <|notimestamps|> appended: 4; 448 - 4 */
    model_dir(dir, sizeof dir, NULL,
              "{\"decoder_start_token_id\": 50258, \"forced_decoder_ids\": [[1, null], [2, 50360]], \"is_multilingual\": true, "
              "\"lang_to_id\": {\"<|en|>\": 50259, \"<|zh|>\": 50260, \"<|de|>\": 50261}, \"task_to_id\": {\"translate\": "
              "50359, \"transcribe\": 50360}, \"no_timestamps_token_id\": 50364, \"max_length\": 448}");
    assert_gen(dir, 4, 444);
    rm_dir(dir);
    /* an English-only checkpoint's (openai/whisper-tiny.en's ids: <|startoftranscript|> 50257, <|notimestamps|>
     * 50362 forced at index 1, no lang_to_id): [50257, 50362], already ending in <|notimestamps|>: 2 */
    model_dir(dir, sizeof dir, NULL,
              "{\"decoder_start_token_id\": 50257, \"forced_decoder_ids\": [[1, 50362]], \"is_multilingual\": false, "
              "\"no_timestamps_token_id\": 50362, \"max_length\": 448}");
    assert_gen(dir, 2, 446);
    rm_dir(dir);
    /* the generation config's language and task drop the forced ids: [start, language, task], then
     * <|notimestamps|>: 4; max_new_tokens set: it */
    model_dir(dir, sizeof dir, NULL,
              "{\"decoder_start_token_id\": 50258, \"forced_decoder_ids\": [[1, null], [2, 50360]], \"language\": \"de\", "
              "\"task\": \"translate\", \"lang_to_id\": {\"<|de|>\": 50261}, \"task_to_id\": {\"translate\": 50359, "
              "\"transcribe\": 50360}, \"no_timestamps_token_id\": 50364, \"max_length\": 448, \"max_new_tokens\": 128}");
    assert_gen(dir, 4, 128);
    rm_dir(dir);
    /* no generation_config.json: config.json's forced_decoder_ids (the older published configs': language,
     * transcribe, notimestamps) -> 4 tokens; no_timestamps_token_id is not a GenerationConfig attribute */
    model_dir(dir, sizeof dir, "\"forced_decoder_ids\": [[1, 50259], [2, 50359], [3, 50363]],", NULL);
    assert_gen(dir, 4, 444);
    rm_dir(dir);
    /* generation_config.json's null forced_decoder_ids: config.json's ("elif hasattr(config, ...)") */
    model_dir(dir, sizeof dir, "\"forced_decoder_ids\": [[1, 50259], [2, 50359]],",
              "{\"decoder_start_token_id\": 50258, \"forced_decoder_ids\": null, \"max_length\": 448}");
    assert_gen(dir, 3, 445);
    rm_dir(dir);
    /* refused: max_length or max_new_tokens past max_target_positions, a gap in forced_decoder_ids (ValueError),
     * a prompt not shorter than max_length (ValueError) */
    model_dir(dir, sizeof dir, NULL, "{\"decoder_start_token_id\": 50258, \"max_length\": 500}");
    snprintf(args, sizeof args, "%s -m generate", dir);
    assert_usage(args, "--new-tokens: not given: the generation config's max_length (500) passes whisper's "
                       "max_target_positions (448)");
    rm_dir(dir);
    model_dir(dir, sizeof dir, NULL, "{\"decoder_start_token_id\": 50258, \"max_new_tokens\": 448}");
    snprintf(args, sizeof args, "%s -m generate", dir);
    assert_usage(args, "--new-tokens: not given: the generation config's max_new_tokens (448) and the 1-token decoder "
                       "prompt pass whisper's max_target_positions (448)");
    rm_dir(dir);
    model_dir(dir, sizeof dir, NULL, "{\"decoder_start_token_id\": 50258, \"forced_decoder_ids\": [[1, 5], [3, 6]]}");
    snprintf(args, sizeof args, "%s -m generate", dir);
    assert_usage(args, "forced_decoder_ids: index 3 after 1: generate() raises ValueError");
    rm_dir(dir);
    assert_usage(HF "whisper-tiny.json -m generate --prompt 448", "--prompt: 448 decoder tokens: not fewer than the "
                                                                   "generation config's max_length (448)");
}

/* Bad or unmodelled values exit 2 with one line naming the option. */
static void refusals(void **state)
{
    (void)state;
    /* WhisperGenerationMixin._set_max_new_tokens_and_length: ValueError past max_target_positions (448) */
    assert_usage(CFG "whisper_small.json -m generate --prompt 4 --new-tokens 445",
                 "--new-tokens: 445 with a decoder prompt (--prompt) of 4: whisper's generate() allows at most "
                 "max_target_positions (448)");
    assert_usage(CFG "whisper_small.json -m generate --prompt 449 --new-tokens 1", "--prompt: 449 decoder tokens");
    assert_usage(CFG "whisper_small.json -m generate --prompt 0", "--prompt");
    assert_usage(CFG "whisper_small.json -m generate --prompt 4 --new-tokens 0", "--new-tokens");
    assert_usage(CFG "whisper_small.json -m generate --prompt 4 --cache static",
                 "--cache: an encoder-decoder's generate() is modelled with the EncoderDecoderCache");
    assert_usage(CFG "whisper_small.json -m generate --prompt 4 -p fp16", "--precision: whisper is modelled in fp32 and bf16");
    /* --serve (src/engine/serve_encdec.c): compute_mm_encoder_budget's ValueError for a clip's encoder tokens (this config's 300) */
    assert_usage(CFG "whisper_small.json --serve --gpu h100-80gb --prompt 4 --new-tokens 100 --max-num-batched-tokens 200 "
                 "--max-num-seqs 128", "--max-num-batched-tokens: 200 is less than a clip's 300 encoder tokens (max_source_positions)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(measured),
        cmocka_unit_test(cache),
        cmocka_unit_test(refusals),
        cmocka_unit_test(defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
