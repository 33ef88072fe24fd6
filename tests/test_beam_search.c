/*
 * test_beam_search.c — --num-beams (issue 31; src/engine/generate.c "Beam search"): generate()'s beam search as
 * transformers' GenerationMixin._beam_search runs it (generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f).
 *
 * By hand: the decoding peak of llama-small-measured.json (llama_small: 2 layers, 2 kv heads of 16, vocab 384),
 * fp32, batch 1, prompt 32, 8 new tokens, 2 beams, against greedy generation at batch 2 (the same B x N = 2 rows
 * through the model and the same caches: _expand_inputs_for_generation's repeat_interleave): the difference is
 * what _beam_search holds through the last step's forward that _sample does not, and the reverse.
 * Measured: bench/accuracy/llm/measured.json (measure_llm.py --num-beams, generate_beams, written from the
 * transformers source), the llama_small case at batch 2, prompt 64, 6 new tokens, fp32, 4 beams.
 * Refusals: the option outside generate, with --serve, 0, negative, not a number, and what the beams are not
 * modelled with (an encoder-decoder, another cache).
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
#include "cli_spelt.h"
#include "tf_load.h"

#define HF VC_TEST_DATA "/hf/"

/* at transformers 4.57: the cases and derivations here are of 4.x's generate() (the loop's first step over the
 * whole prompt); 5.0's GenerationMixin._prefill is tests/test_prefill_release.c's */
static vc_model *load_file(const char *name) { return load_at_release(name, 457); }

static vc_result gen(const vc_model *m, int64_t batch, vc_precision p, int64_t prompt, int64_t new_tokens, int64_t beams)
{
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.batch = batch;
    o.precision = p;
    o.prompt = prompt;
    o.new_tokens = new_tokens;
    o.num_beams = beams;
    o.workspace = 0;            /* the harness runs on a CPU: no cuBLAS */
    o.attention = VC_ATTN_MATH; /* the CPU's SDPA */
    vc_result r;
    vc_error err;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    return r;
}

/* bytes of an allocation: 512-byte blocks */
static int64_t blk(int64_t bytes) { return (bytes + 511) / 512 * 512; }

static void by_hand(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-small-measured.json");
    const int64_t B = 1, N = 2, P = 32, M = 8, V = 384;
    const int64_t ml = P + M; /* generation_config.max_length: max_new_tokens + the input's length */
    const int64_t T = ml - P; /* running_beam_indices' last dimension: max_length - cur_len at the start */
    vc_result beam = gen(m, B, VC_PREC_FP32, P, M, N);
    vc_result greedy = gen(m, B * N, VC_PREC_FP32, P, M, 1);
    /* the caches: B x N rows of prompt + new tokens - 1 tokens, 512 B a token (fp32: 2 layers x 2 x 2 heads x 16 x 4) */
    assert_int_equal(beam.generate.kv_cache, B * N * (P + M - 1) * 512);
    assert_int_equal(beam.generate.kv_cache, greedy.generate.kv_cache);
    assert_int_equal(beam.generate.decode_step, M - 1);
    /* _beam_search's tensors alive through the last step's forward (the last step's model forward is the decode
     * peak at this vocab: every one of them is held across it) */
    const int64_t held =
        blk(B * N * V * 4)         /* log_probs = log_probs + running_beam_scores[:, :, None]: [B, N x V] fp32, a local */
        + blk(B * 2 * N * 4)       /* topk_log_probs [B, 2N] fp32 (torch.topk k = beams_to_keep = 2N, one eos token) */
        + blk(B * 2 * N * ml * 8)  /* topk_running_sequences: _gather_beams of running_sequences [B, 2N, max_length] int64 */
        + blk(B * 2 * N * T * 4)   /* topk_running_beam_indices [B, 2N, T] int32 */
        + blk(B * 2 * N)           /* next_token_hits_stopping_criteria [B, 2N] bool */
        + 2 * blk(B * N * ml * 8)  /* running_sequences and sequences: torch.full((B, N, max_length)) int64, its clone */
        + 2 * blk(B * N * 4)       /* running_beam_scores and beam_scores [B, N] fp32 */
        + blk(B * N)               /* is_sent_finished [B, N] bool */
        + blk(B)                   /* is_early_stop_heuristic_unsatisfied [B, 1] bool */
        + blk(2 * N)               /* top_num_beam_mask [2N] bool */
        + 2 * blk(B * N * T * 4);  /* running_beam_indices and beam_indices [B, N, T] int32 */
    /* _sample's that beam search has not: next_tokens [B] int64 (a local) and unfinished_sequences [B] int64;
     * both hold the fp32 logits' copy [rows, V], the attention mask, cache_position, the pad token and the ids
     * fed (_sample's input_ids [rows, cur_len], beam search's flat_running_sequences, the same shape) */
    const int64_t greedy_only = blk(B * N * 8) + blk(B * N * 8);
    assert_int_equal(held - greedy_only, 10752);
    assert_int_equal(beam.generate.decode_peak - greedy.generate.decode_peak, held - greedy_only);
    vc_result_free(&beam);
    vc_result_free(&greedy);
    vc_model_free(m);
}

static void within(int64_t est, int64_t measured, double pct)
{
    double e = 100.0 * (double)(est - measured) / (double)measured;
    if (e > pct || e < -pct) fail_msg("estimate %lld vs measured %lld: %+.2f%%", (long long)est, (long long)measured, e);
}

/* measured.json: llama_small, batch 2, prompt 64, 6 new tokens, fp32, 4 beams (measure_llm.py generate_beams):
 * prefill 2,979,328 B, decode 1,354,752 B. Bound 1%. */
static void measured(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-small-measured.json");
    vc_result r = gen(m, 2, VC_PREC_FP32, 64, 6, 4);
    within(r.generate.prefill_peak, 2979328, 1.0);
    within(r.generate.decode_peak, 1354752, 1.0);
    vc_result_free(&r);
    vc_model_free(m);
}

static void refusals(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {HF "llama-3.1-8b.json --num-beams 2", "--num-beams is generate()'s beam search: it goes with --mode generate"},
        {HF "llama-3.1-8b.json -m infer --num-beams 2", "--num-beams is generate()'s beam search"},
        {HF "llama-3.1-8b.json --serve --gpu h100-80gb --num-beams 2", "(vLLM's serving is modelled without it)"},
        {HF "llama-3.1-8b.json -m generate --num-beams 0", "--num-beams: expected a positive integer, got '0'"},
        {HF "llama-3.1-8b.json -m generate --num-beams -2", "--num-beams: expected a positive integer, got '-2'"},
        {HF "llama-3.1-8b.json -m generate --num-beams four", "--num-beams: expected a positive integer, got 'four'"},
        {HF "llama-3.1-8b.json -m generate --num-beams 2x", "--num-beams: expected a positive integer, got '2x'"},
        {HF "llama-3.1-8b.json -m generate --num-beams 2 --cache static", "--num-beams: beam search is modelled with --cache dynamic"},
        {HF "llama-3.1-8b.json -m generate --num-beams 2 --cache quantized", "--num-beams: beam search is modelled with --cache dynamic"},
        {HF "t5-small.json -m generate --num-beams 2", "--num-beams: beam search of an encoder-decoder"},
        {HF "whisper-tiny.json -m generate --num-beams 3", "--num-beams: beam search of an encoder-decoder"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) assert_usage(cases[i][0], cases[i][1]);
    /* the library: the same path */
    vc_model *m = load_file(HF "t5-small.json");
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.num_beams = 2;
    vc_result r;
    vc_error err;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--num-beams");
    vc_model_free(m);
    m = load_file(HF "llama-small-measured.json");
    o.num_beams = 0; /* a library caller's 0: refused, as the CLI's */
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--num-beams");
    vc_model_free(m);
}

/* The report names the beams: the header line and -f json's generate.num_beams (absent at 1) */
static void report(void **state)
{
    (void)state;
    const char *out = cli_output(HF "llama-small-measured.json -m generate --prompt 32 --new-tokens 8 --num-beams 3 --no-color");
    assert_non_null(strstr(out, "prompt 32 + 8 new tokens, dynamic cache, 3 beams"));
    out = cli_output(HF "llama-small-measured.json -m generate --prompt 32 --new-tokens 8 --num-beams 3 -f json");
    assert_non_null(strstr(out, "\"num_beams\": 3"));
    out = cli_output(HF "llama-small-measured.json -m generate --prompt 32 --new-tokens 8 -f json");
    assert_null(strstr(out, "num_beams"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(by_hand),
        cmocka_unit_test(measured),
        cmocka_unit_test(refusals),
        cmocka_unit_test(report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
