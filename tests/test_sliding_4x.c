/*
 * test_sliding_4x.c — Mistral's sliding-window mask under sdpa at --transformers 4.46 to 4.52 (src/policy/release.c
 * VC_TF_SLIDING_FLOAT_MASK; layers/llm.c sliding_mask_4x; layers/sdpa.c's mask_ld), derived by hand.
 *
 * Sources: huggingface/transformers modeling_mistral.py @93e0020c96f1aaf6c380491c943fcf57502c5e19 (a main commit
 * between 4.46 and 4.52; the tags were not read) MistralModel._update_causal_mask: with sdpa and no
 * attention_mask, AttentionMaskConverter._ignore_causal_mask_sdpa (modeling_attn_mask_utils.py @c2766555) drops
 * the mask only while kv_length < sliding_window; past that target_length = past + L + 1 and
 * _prepare_4d_causal_attention_mask_with_cache_position makes causal_mask = torch.full((L, T), min_dtype) in the
 * embeddings' dtype (T = S + 1), a bool diagonal_attend_mask [L, T] (arange(T) > cache_position[:, None]) or'ed in
 * place with a bool sliding_attend_mask [L, T] (arange(T) <= cache_position[:, None] - window, an int64 [L, 1]
 * between), multiplied into causal_mask in place and expanded to [B, 1, L, T]. The attention slices it to S
 * columns (a view whose rows are T apart) and F.scaled_dot_product_attention takes the float mask as it is.
 * PyTorch >= 2.2's preprocess_mask (aten/src/ATen/native/transformers/attention.cpp, as tests/test_sliding_mask.c
 * cites it): aligned_tensor<8> reads the strides (0, L x T, T, 1), so the view is aligned only when T % 8 == 0;
 * otherwise pad_bias<8> pads it by 8 - S % 8 columns (8 when S % 8 == 0) into a new [B, 1, L, S + pad], which
 * the memory-efficient kernel saves for backward.
 *
 * Compared with the same config without sliding_window (no mask: the kernels then differ by the saved bias
 * alone, as in tests/test_sliding_mask.c): a small Mistral, 8 heads over 2 kv heads, head_dim 16, window 32,
 * bf16, batch 2, --attention efficient, training.
 */
#define _GNU_SOURCE
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
#include "cli_doc.h"

#define B 2
#define W 32

#include "sliding_cfg.h"

/* Training at seq s (bf16, batch 2, --attention efficient, `extra` added): the two attention layers'
 * activations (--per-layer) and the step's peak. */
static void train(const char *cfg, int s, const char *extra, long long act[2], long long *peak)
{
    char a[512];
    snprintf(a, sizeof a, "--seq %d -b %d -p bf16 --attention efficient --per-layer %s", s, B, extra);
    sliding_train(cfg, a, act, peak);
}

/* The caching allocator's block for n bytes (CUDACachingAllocator.cpp round_size: multiples of 512). */
static long long block(long long n)
{
    return (n + 511) / 512 * 512;
}

/* 1. Below the window (S = 31 < 32): _ignore_causal_mask_sdpa drops the mask at every release: 4.46 is 5.0
 * is the model without a window, byte for byte. */
static void test_below_window(void **state)
{
    (void)state;
    long long a[2], b[2], c[2], pa, pb, pc;
    train(with_window, W - 1, "--transformers 4.46", a, &pa);
    train(with_window, W - 1, "--transformers 5.0", b, &pb);
    train(without_window, W - 1, "", c, &pc);
    assert_int_equal(pa, pb);
    assert_int_equal(pa, pc);
    assert_int_equal(a[0], c[0]);
    assert_int_equal(a[1], c[1]);
}

/* 2. S = 64: T = 65, the view's row stride is not a multiple of 8, so each layer's kernel saves the padded
 * copy, [B, 1, 64, 64 + 8] bf16 = 18,432 B (a whole block), where 5.x's converted [B, 1, L, S] bool mask is
 * aligned and saved as it is (16,384 B). 4.52 is 4.46's; 4.53 (masking_utils) is 5.0's. */
static void test_padded_by_8(void **state)
{
    (void)state;
    long long a[2], b[2], c[2], d[2], e[2], pa, pb, pc, pd, pe;
    train(with_window, 64, "--transformers 4.46", a, &pa);
    train(with_window, 64, "--transformers 4.52", b, &pb);
    train(with_window, 64, "--transformers 4.53", c, &pc);
    train(with_window, 64, "--transformers 5.0", d, &pd);
    train(without_window, 64, "", e, &pe);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(a[i] - e[i], (long long)B * 64 * (64 + 8) * 2);
        assert_int_equal(d[i] - e[i], (long long)B * 64 * 64 * 2);
        assert_int_equal(b[i], a[i]);
        assert_int_equal(c[i], d[i]);
    }
    assert_int_equal(pb, pa);
    assert_int_equal(pc, pd);
}

/* 3. S = 63: T = 64, the view is aligned_tensor<8> (strides 0, 63 x 64, 64, 1): no copy; the kernels save the
 * model's mask itself, [63, 64] bf16 = 8,064 B (an 8,192 B block), shared by the layers: the first layer's
 * activations count it, the second's nothing more. */
static void test_aligned_shared(void **state)
{
    (void)state;
    long long a[2], e[2], pa, pe;
    train(with_window, 63, "--transformers 4.46", a, &pa);
    train(without_window, 63, "", e, &pe);
    assert_int_equal(a[0] - e[0], block(63LL * 64 * 2));
    assert_int_equal(a[1], e[1]);
}

/* 4. S = 76 (76 % 8 = 4): pad_count 4, [B, 1, 76, 80] bf16 = 24,320 B (a 24,576 B block): the same bytes as
 * 5.x's converted mask padded to 80. */
static void test_padded_by_4(void **state)
{
    (void)state;
    long long a[2], e[2], pa, pe;
    train(with_window, 76, "--transformers 4.46", a, &pa);
    train(without_window, 76, "", e, &pe);
    for (int i = 0; i < 2; i++) assert_int_equal(a[i] - e[i], block((long long)B * 76 * 80 * 2));
}

/* 5. The mask itself in the step's events (--trace): torch.full((64, 65)) in bf16, 8,320 B (an 8,704 B block),
 * the two [64, 65] bool locals (4,160 B, 4,608 B blocks) and the int64 [64, 1] difference (512 B); 5.0 makes
 * no float mask (its bool mask is and-ed from [L, S] comparisons). */
static int count_lines(const char *args, const char *needle)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", VC_CLI, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, p))
        if (strstr(line, needle)) n++;
    int st = pclose(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return n;
}

static void test_mask_events(void **state)
{
    (void)state;
    char a[512];
    snprintf(a, sizeof a, "%s --seq 64 -b %d -p bf16 --attention efficient --transformers 4.46 --trace", with_window, B);
    assert_int_equal(count_lines(a, "alloc act               8704"), 1);
    assert_int_equal(count_lines(a, "alloc act               4608"), 2);
    snprintf(a, sizeof a, "%s --seq 64 -b %d -p bf16 --attention efficient --transformers 5.0 --trace", with_window, B);
    assert_int_equal(count_lines(a, "] full\n"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_below_window), cmocka_unit_test(test_padded_by_8), cmocka_unit_test(test_aligned_shared),
        cmocka_unit_test(test_padded_by_4), cmocka_unit_test(test_mask_events),
    };
    return cmocka_run_group_tests(tests, sliding_setup, sliding_teardown);
}
