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
 * Encoder-decoders (generate.c encdec_beams): t5_small's 2-beam decoding peak by hand against greedy at batch 2,
 * and the measured t5 and whisper cases (measure_llm.py generate_beams over t5_replica.prepare_generation /
 * whisper_replica.prepare_generation, written from the transformers source).
 * Refusals: the option outside generate, with --serve, 0, negative, not a number, and what the beams are not
 * modelled with (another cache, an encoder-decoder's serving, more than 65536 beams of an encoder-decoder).
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

#define CFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

/* By hand: bench/accuracy/llm/configs/t5_small.json (vocab 2048, 2 + 2 blocks of 8 heads x 32), fp32, batch 1, an
 * encoder prompt of 4 tokens, 8 new tokens, 2 beams, against greedy generation at batch 2. _expand_inputs_for_generation
 * repeat_interleaves the decoder's start ids, the attention mask and the encoder's last_hidden_state to B x N = 2 rows
 * (generation/utils.py @000034a), so the decoder, its caches (the cross-attention's of the expanded output) and the
 * encoder's output are those of batch 2; the caller's input_ids [1, 4] and [2, 4] int64 are one 512-byte block each.
 * At this prompt both decoding peaks are at the last step's end, after the forward: beam search's at log_probs =
 * log_probs + running_beam_scores[:, :, None], greedy's at next_token_logits' fp32 copy. */
static void encdec_by_hand(void **state)
{
    (void)state;
    vc_model *m = load_file(CFG "t5_small.json");
    const int64_t B = 1, N = 2, D = 1, M = 8, V = 2048;
    const int64_t ml = D + M; /* max_length: max_new_tokens + the decoder's input length (decoder_start_token_id) */
    const int64_t T = M;      /* running_beam_indices' last dimension: max_length - cur_len at the start */
    vc_result beam = gen(m, B, VC_PREC_FP32, 4, M, N);
    vc_result greedy = gen(m, B * N, VC_PREC_FP32, 4, M, 1);
    assert_int_equal(beam.generate.kv_cache, greedy.generate.kv_cache);
    assert_int_equal(beam.generate.cross_cache, greedy.generate.cross_cache);
    assert_int_equal(beam.generate.cross_cache, 2 * 2 * B * N * 256 * 4 * 4); /* 2 layers x K, V x 2 rows x 256 x fp32 x 4 */
    const int64_t beam_held =
        2 * blk(B * N * V * 4)      /* log_probs: the step before's (a local until rebound) and the new sum, [B, N x V] fp32 */
        + blk(B * N * V * 4)        /* log_softmax's output [B x N, V] fp32, the sum's input */
        + blk(B * N * V * 4)        /* logits: outputs.logits[:, -1, :].to(copy=True, dtype=float32) (the step before's
                                     * freed as it was rebound; model_outputs deleted after log_softmax) */
        + 2 * blk(B * N * ml * 8)   /* running_sequences and sequences [B, N, max_length] int64 */
        + 2 * blk(B * N * 4)        /* running_beam_scores and beam_scores [B, N] fp32 */
        + blk(B * N) + blk(B)       /* is_sent_finished [B, N] bool, is_early_stop_heuristic_unsatisfied [B, 1] bool */
        + blk(B * 2 * N)            /* next_token_hits_stopping_criteria [B, 2N] bool (the step before's) */
        + 2 * blk(B * N * T * 4)    /* running_beam_indices and beam_indices [B, N, T] int32 */
        + blk(2 * N)                /* top_num_beam_mask [2N] bool */
        + blk(B * 2 * N * 4)        /* topk_log_probs [B, 2N] fp32 (the step before's) */
        + blk(B * 2 * N * ml * 8)   /* topk_running_sequences [B, 2N, max_length] int64 */
        + blk(B * 2 * N * T * 4)    /* topk_running_beam_indices [B, 2N, T] int32 */
        + blk(B * N * (D + M - 1) * 8) /* flat_running_sequences [B x N, cur_len] int64 */
        + blk(B * N * D * 8)        /* input_ids, the expanded decoder start ids, held to _beam_search's return */
        + blk(8) + blk(8);          /* cache_position [1], the pad token */
    const int64_t greedy_held =
        2 * blk(B * N * V * 4)      /* next_token_logits: the step before's (freed after the copy) and the new fp32 copy */
        + blk(B * N * V * 4)        /* outputs.logits [B x N, 1, V] fp32, the copy's input */
        + blk(B * N * (D + M - 1) * 8) /* input_ids [B x N, cur_len] int64 */
        + blk(8) + blk(8)           /* cache_position, the pad token */
        + blk(B * N * 8) + blk(B * N * 8); /* unfinished_sequences and next_tokens [B x N] int64 */
    assert_int_equal(beam_held - greedy_held, 22528);
    assert_int_equal(beam.generate.decode_peak - greedy.generate.decode_peak, beam_held - greedy_held);
    vc_result_free(&beam);
    vc_result_free(&greedy);
    vc_model_free(m);
}

/* measured.json (measure_llm.py --num-beams over t5_replica / whisper_replica): t5_small, batch 1, prompt 64, 8 new
 * tokens, fp32, 2 beams: prefill 17,712,640 B, decode 17,689,088 B (the decoding peak at reorder_cache's
 * index_select of a cross-attention key); whisper_small, batch 2, 4 init tokens, 8 new tokens, fp32, 2 beams:
 * prefill 32,294,912 B (the encoder over the batch's rows), decode 29,253,632 B. Bound 1%. */
static void encdec_measured(void **state)
{
    (void)state;
    vc_model *m = load_file(CFG "t5_small.json");
    vc_result r = gen(m, 1, VC_PREC_FP32, 64, 8, 2);
    within(r.generate.prefill_peak, 17712640, 1.0);
    within(r.generate.decode_peak, 17689088, 1.0);
    vc_result_free(&r);
    vc_model_free(m);
    m = load_file(CFG "whisper_small.json");
    r = gen(m, 2, VC_PREC_FP32, 4, 8, 2);
    within(r.generate.prefill_peak, 32294912, 1.0);
    within(r.generate.decode_peak, 29253632, 1.0);
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
        {HF "t5-small.json --serve --gpu h100-80gb --num-beams 2", "(vLLM's serving is modelled without it)"},
        {HF "whisper-tiny.json --serve --gpu h100-80gb --num-beams 3", "(vLLM's serving is modelled without it)"},
        {HF "t5-small.json -m generate --num-beams 65537", "--num-beams: an encoder-decoder's beam search is modelled up to 65536 beams"},
        {HF "bart-large.json -m generate --num-beams 65537", "--num-beams: an encoder-decoder's beam search is modelled up to 65536 beams"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) assert_usage(cases[i][0], cases[i][1]);
    /* the library: the same path */
    vc_model *m = load_file(HF "t5-small.json");
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.num_beams = 65537;
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
        cmocka_unit_test(encdec_by_hand),
        cmocka_unit_test(encdec_measured),
        cmocka_unit_test(refusals),
        cmocka_unit_test(report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
