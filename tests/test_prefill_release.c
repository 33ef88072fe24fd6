/*
 * test_prefill_release.c — --transformers' prefill row (issue 31 item 6; src/policy/release.c VC_TF_PREFILL_BUT_LAST,
 * src/engine/generate.c "The prefill"): transformers 5.0's GenerationMixin._prefill (generation/utils.py
 * @000034a44ef887621d9b36001a5eb7c46e64cb3f) runs the model over input_ids[:, :-1] and drops its outputs, the loop's
 * first step then feeding the last prompt token; 4.46-4.57 run the loop's first step over the whole prompt.
 *
 * By hand: the prefill peak of llama_small (bench/accuracy/llm/configs/llama_small.json: 2 layers, 4 heads and 2 kv
 * heads of 16, hidden 64, vocab 384), fp32, batch 1, prompt 64, 16 new tokens, under 5.0 against 4.57: both peaks are
 * in the second layer's attention of the forward over the prompt (4.57: 64 tokens; 5.0: _prefill's 63, the step over
 * the last token after it being smaller), so they differ by what changes size between 63 and 64 tokens there.
 * Measured: bench/accuracy/llm/measured.json, measure_llm.py --transformers 5.0 (prefill() written from _prefill), the
 * llama_small case at these settings, and the same case measured before the option (4.57's flow).
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

#define CFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"
#define LLAMA CFG "llama_small.json -m generate --prompt 64 --new-tokens 16 -p fp32"

/* bytes of an allocation: 512-byte blocks (c10's CPU allocations as the harness counts them, and the plan's) */
static long long blk(long long bytes) { return (bytes + 511) / 512 * 512; }

static void by_hand(void **state)
{
    (void)state;
    const long long old = cli_json_field(LLAMA " --transformers 4.57", "\"prefill_peak\": ");
    const long long now = cli_json_field(LLAMA " --transformers 5.0", "\"prefill_peak\": ");
    const long long L = 64, H = 4, fp32 = 4;
    /* At the peak (the second layer's attention under SDPA's math backend, aten/src/ATen/native/transformers/
     * attention.cpp _scaled_dot_product_attention_math), the tensors whose 512-byte blocks differ between L and
     * L - 1 tokens are the two [1, H, L, L] fp32 ones: attn = at::matmul(q, k.transpose(-2, -1) * scale) with the
     * mask added, and at::softmax(attn, -1) (4 x 64 x 64 x 4 = 65,536 B against 4 x 63 x 63 x 4 = 63,504 B, 125
     * blocks). Every other live tensor fits the same blocks at 63 and 64 tokens: the hidden states and q [L, 64]
     * fp32 (16,384 B / 16,128 B: 32 blocks), the layers' cached keys and values [1, 2, L, 16] fp32 (8,192 / 8,064:
     * 16 blocks), the rotary cos / sin [L, 16] fp32 (4,096 / 4,032), the bool causal mask [L, L] (4,096 / 3,969),
     * the int64 ids and mask [64] / [63] (512 / 504), the weights (the same). _prefill's logits ([1, 1, 384],
     * logits_to_keep=1) come after the peak, as 4.57's did. */
    const long long scores = blk(H * L * L * fp32) - blk(H * (L - 1) * (L - 1) * fp32);
    assert_int_equal(scores, 1536);
    assert_int_equal(old - now, 2 * scores);
    /* measure_llm.py's prefill peaks: 891,904 (the case measured with the loop's first step over the prompt,
     * 4.57's flow) and 888,832 (--transformers 5.0): both exact */
    assert_int_equal(old, 891904);
    assert_int_equal(now, 888832);
    /* the default (no --transformers) is 5.0 */
    assert_int_equal(cli_json_field(LLAMA, "\"prefill_peak\": "), now);
    /* the decoding steps hold the same in both flows: the last step's ids, mask and caches are prompt + 15 tokens long
     * either way (5.0's loop steps 0 .. 15 each feed one token after the 63 prefilled) */
    assert_int_equal(cli_json_field(LLAMA " --transformers 4.57", "\"decode_peak\": "),
                     cli_json_field(LLAMA " --transformers 5.0", "\"decode_peak\": "));
}

/* No _prefill where input_ids holds one token (prefill_input_ids.numel() == 0): a one-token prompt, and an
 * encoder-decoder's decoder, which starts from decoder_start_token_id alone */
static void one_token(void **state)
{
    (void)state;
    assert_int_equal(cli_json_field(CFG "llama_small.json -m generate --prompt 1 --new-tokens 8 --transformers 4.57",
                                    "\"prefill_peak\": "),
                     cli_json_field(CFG "llama_small.json -m generate --prompt 1 --new-tokens 8 --transformers 5.0",
                                    "\"prefill_peak\": "));
    assert_int_equal(cli_json_field(CFG "flan_t5_small.json -m generate --prompt 48 --new-tokens 8 --transformers 4.57",
                                    "\"prefill_peak\": "),
                     cli_json_field(CFG "flan_t5_small.json -m generate --prompt 48 --new-tokens 8 --transformers 5.0",
                                    "\"prefill_peak\": "));
}

/* QuantizedCache (quanto): the first update quantizes _prefill's prompt - 1 tokens, whose elements the group size
 * must divide (optimum-quanto grouped.py group); the harness fails there alike (measure_llm.py --transformers 5.0,
 * kvq_replica.py group: "Group size (64) must be a divisor of (4560)") */
static void quantized_group(void **state)
{
    (void)state;
    const char *q = CFG "qwen2_small.json -m generate --prompt 96 --new-tokens 34 --cache quantized --kv-bits 4 "
                        "--kv-residual-length 32";
    char a[512];
    snprintf(a, sizeof a, "%s --transformers 5.0", q);
    assert_usage(a, "at 95 tokens");
    snprintf(a, sizeof a, "%s --transformers 4.57", q);
    assert_true(cli_json_field(a, "\"prefill_peak\": ") > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(by_hand),
        cmocka_unit_test(one_token),
        cmocka_unit_test(quantized_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
