/*
 * test_sliding_mask.c — transformers 5's sliding-window mask under sdpa (layers/llm.c sliding_mask_needed,
 * sliding_mask, sliding_mask_args; issue 31).
 *
 * Sources (huggingface/transformers @00c4411cbe15d4c56d54d3b56d4d171e9c289dac, masking_utils.py):
 * create_sliding_window_causal_mask passes local_size=sliding_window to sdpa_mask, whose
 * _ignore_causal_mask_sdpa skips the mask only while kv_length < local_attention_size; from a kv length of
 * sliding_window on a bool [B, 1, L, S] mask goes to every sliding layer's sdpa call
 * (integrations/sdpa_attention.py: repeat_kv, is_causal False). PyTorch (attention.cpp, cyyever/pytorch
 * @0d188885): convert_boolean_attn_mask makes a [B, 1, L, S] tensor of the query's dtype; flash takes no
 * mask (sdp_utils.cpp check_for_attn_mask); the memory-efficient kernel's attn_bias is saved for backward
 * (derivatives.yaml _scaled_dot_product_efficient_attention) as preprocess_mask leaves it: since 2.2 (PR
 * #114173) a mask whose strides are not multiples of 8 (S % 8 != 0) is padded as given by pad_bias<8>, a new
 * [B, 1, L, round8(S)], then expanded (a view); an aligned one is passed as it is. 2.1 (--torch 2.1, PR
 * #104310) expanded it to [B, H, L, S] first and padded that to a multiple of 16 (src/policy/release.c
 * VC_REL_MEFF_MASK). 2.0's efficient kernel took no mask (sdp_utils.h check_for_attn_mask): math runs.
 *
 * A CPU cannot measure the CUDA kernels' bytes (bench/accuracy/llm's harness runs the math backend on
 * torch 1.13), so these are derived by hand from that source: a small Mistral (8 heads over 2 kv heads,
 * head_dim 16, window 32, bf16, batch 2) against the same config without sliding_window under
 * --attention efficient, where the two differ in the saved bias alone (the efficient kernel runs on
 * [B, H, S, D] keys either way: repeat_kv with the mask, repeat_interleave for enable_gqa without it).
 * The CPU-measurable parts (the mask, repeat_kv, the converted mask under the math backend) are in
 * measured.json's sliding cases (run_suite.py, sliding_replica.py).
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
#define H 8
#define W 32

#include "sliding_cfg.h"

/* The CLI's JSON report for `cfg args` (cli_doc.h); the caller frees. */
static cJSON *cfg_doc(const char *cfg, const char *args)
{
    char a[1024];
    snprintf(a, sizeof a, "%s %s -f json", cfg, args);
    return cli_doc(a);
}

/* Training at seq s, bf16, batch 2, under `attn`: the two attention layers' activations (--per-layer) and
 * the step's peak. */
static void train_at(const char *cfg, int s, const char *attn, const char *torch, long long act[2], long long *peak)
{
    char a[256];
    snprintf(a, sizeof a, "--seq %d -b %d -p bf16 --attention %s --per-layer%s%s", s, B, attn, torch ? " --torch " : "",
             torch ? torch : "");
    sliding_train(cfg, a, act, peak);
}

/* The same at the default release (--torch 2.15, the newest source). */
static void train(const char *cfg, int s, const char *attn, long long act[2], long long *peak)
{
    train_at(cfg, s, attn, NULL, act, peak);
}

/* 1. Below the window (kv_length 31 < 32): _ignore_causal_mask_sdpa skips the mask; the step is the one
 * of the same model without sliding_window, byte for byte. */
static void test_below_window(void **state)
{
    (void)state;
    long long a[2], b[2], pa, pb;
    train(with_window, W - 1, "efficient", a, &pa);
    train(without_window, W - 1, "efficient", b, &pb);
    assert_int_equal(a[0], b[0]);
    assert_int_equal(a[1], b[1]);
    assert_int_equal(pa, pb);
}

/* 2. At the window (kv_length 32, not < local_attention_size 32): the mask exists although it masks
 * nothing yet; each layer's efficient kernel saves the converted mask, [B, 1, L, S] bf16 (S = 32, a
 * multiple of 16: no padding, the expanded view of it): 2 x 32 x 32 x 2 = 4,096 B more per layer. */
static void test_at_window(void **state)
{
    (void)state;
    long long a[2], b[2], pa, pb;
    train(with_window, W, "efficient", a, &pa);
    train(without_window, W, "efficient", b, &pb);
    for (int i = 0; i < 2; i++) assert_int_equal(a[i] - b[i], (long long)B * W * W * 2);
    assert_true(pa > pb);
}

/* 3. Past the window, S = 64 (aligned): the saved bias is the converted mask, B x L x S x 2 = 16,384 B. */
static void test_saved_bias_aligned(void **state)
{
    (void)state;
    long long a[2], b[2], pa, pb;
    train(with_window, 64, "efficient", a, &pa);
    train(without_window, 64, "efficient", b, &pb);
    for (int i = 0; i < 2; i++) assert_int_equal(a[i] - b[i], (long long)B * 64 * 64 * 2);
}

/* The caching allocator's block for n bytes (CUDACachingAllocator.cpp round_size: multiples of 512). */
static long long block(long long n)
{
    return (n + 511) / 512 * 512;
}

/* 4. S = 72 (72 % 8 = 0): the converted [B, 1, L, S] mask is aligned_tensor<8> (strides L x S, L x S, S, 1),
 * so preprocess_mask only expands it (a view) and the kernel saves the mask itself: B x L x S x 2 = 20,736 B
 * per layer, a 20,992 B block. 2.1 (--torch 2.1) expanded it to [B, H, L, S] and, 72 % 16 being 8, padded that to 80 (a new
 * tensor, sliced back): B x H x L x 80 x 2 = 184,320 B per layer, the heads multiplied in. */
static void test_saved_bias_padded(void **state)
{
    (void)state;
    long long a[2], b[2], pa, pb;
    train(with_window, 72, "efficient", a, &pa);
    train(without_window, 72, "efficient", b, &pb);
    for (int i = 0; i < 2; i++) assert_int_equal(a[i] - b[i], block((long long)B * 72 * 72 * 2));
    assert_int_equal(a[0], 174592); /* 153,600 (the model without the window) + 20,992 */
    train_at(with_window, 72, "efficient", "2.1", a, &pa);
    train_at(without_window, 72, "efficient", "2.1", b, &pb);
    for (int i = 0; i < 2; i++) assert_int_equal(a[i] - b[i], (long long)B * H * 72 * 80 * 2);
    assert_int_equal(a[0], 337920); /* 153,600 + 184,320 */
}

/* 4b. S = 76 (76 % 8 = 4): the mask's stride S is not a multiple of 8: pad_bias<8> pads the [B, 1, L, S] mask
 * as given to [B, 1, L, 80] (at::pad_symint, then sliced back) and expands that (a view); the kernel saves the
 * padded tensor (the converted mask goes when the call returns): B x L x 80 x 2 = 24,320 B per layer (a
 * 24,576 B block), no heads. 2.1: [B, H, L, 80] (76 % 16 = 12): B x H x L x 80 x 2 = 194,560 B. */
static void test_saved_bias_pad8(void **state)
{
    (void)state;
    long long a[2], b[2], pa, pb;
    train(with_window, 76, "efficient", a, &pa);
    train(without_window, 76, "efficient", b, &pb);
    for (int i = 0; i < 2; i++) assert_int_equal(a[i] - b[i], block((long long)B * 76 * 80 * 2));
    train_at(with_window, 76, "efficient", "2.1", a, &pa);
    train_at(without_window, 76, "efficient", "2.1", b, &pb);
    for (int i = 0; i < 2; i++) assert_int_equal(a[i] - b[i], (long long)B * H * 76 * 80 * 2);
}

/* 4c. --torch 2.0: check_for_attn_mask ("Both fused kernels do not support non-null attn_mask") rules the
 * efficient kernel out for a masked call, so --attention efficient runs the math backend there (it keeps its
 * [B, H, L, S] attention weights: far more than any saved bias); without the window (no mask) the efficient
 * kernel still runs: the window's model is the larger by more than 2.1's padded bias. */
static void test_torch20_math(void **state)
{
    (void)state;
    long long a[2], b[2], pa, pb, m[2], pm;
    train_at(with_window, 72, "efficient", "2.0", a, &pa);
    train_at(without_window, 72, "efficient", "2.0", b, &pb);
    train_at(with_window, 72, "math", "2.0", m, &pm);
    for (int i = 0; i < 2; i++) assert_int_equal(a[i], m[i]);
    assert_int_equal(pa, pm);
    assert_true(a[0] - b[0] > (long long)B * H * 72 * 80 * 2);
}

/* 5. --attention flash: transformers' flash_attention_2 passes the window to its kernel
 * (flash_attention_mask: None without padding): no mask, the step of the model without sliding_window. */
static void test_flash_no_mask(void **state)
{
    (void)state;
    long long a[2], b[2], pa, pb;
    train(with_window, 72, "flash", a, &pa);
    train(without_window, 72, "flash", b, &pb);
    assert_int_equal(a[0], b[0]);
    assert_int_equal(pa, pb);
}

/* 6. generate() that never reaches the window: prompt 16, 8 new tokens (the last step's kv length 23 < 32):
 * no mask, and the sliding cache (window - 1 = 31 tokens kept) holds every token: the same peaks as
 * without sliding_window. */
static void test_generate_below(void **state)
{
    (void)state;
    long long v[2][2];
    const char *cfg[2] = {with_window, without_window};
    for (int i = 0; i < 2; i++) {
        cJSON *j = cfg_doc(cfg[i], "-m generate --prompt 16 --new-tokens 8 -b 2 -p bf16");
        v[i][0] = num(j, "generate", "prefill_peak");
        v[i][1] = num(j, "generate", "decode_peak");
        cJSON_Delete(j);
    }
    assert_int_equal(v[0][0], v[1][0]);
    assert_int_equal(v[0][1], v[1][1]);
}

/* The repeat_kv allocations --trace shows for `cfg` (-m infer at seq 64, past the window): B x H x S x D x 2 each. */
static int repeat_allocs(const char *cfg, long long *bytes)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s --seq 64 -b %d -p bf16 -m infer --trace 2>/dev/null", VC_CLI, cfg, B);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, p)) {
        long long sz, total;
        char what[256];
        if (strstr(line, " repeat_kv") && sscanf(line, "forward alloc act %lld %lld %255s", &sz, &total, what) == 3) {
            *bytes = sz;
            n++;
        }
    }
    pclose(p);
    return n;
}

/* 7. repeat_kv (sdpa_attention_forward with a mask): hidden_states[:, :, None].expand(B, KV, n_rep, S, D)
 * .reshape(B, KV * n_rep, S, D). With 2 kv heads the reshape cannot merge the kv dim with the stride-0 one: a
 * copy, [2, 8, 64, 16] bf16 = 32,768 B, for keys and values in each of the 2 layers; with one kv head the size-1
 * dim merges: a view, no allocation. */
static void test_repeat_kv(void **state)
{
    (void)state;
    long long sz = 0;
    assert_int_equal(repeat_allocs(with_window, &sz), 4);
    assert_int_equal(sz, (long long)B * H * 64 * 16 * 2);
    char mqa[64];
    strcpy(mqa, "/tmp/vc_sliding_XXXXXX");
    int fd = mkstemp(mqa);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    char text[1024];
    snprintf(text, sizeof text, cfg_text, "32");
    char *kv = strstr(text, "\"num_key_value_heads\": 2");
    assert_non_null(kv);
    kv[strlen("\"num_key_value_heads\": ")] = '1';
    fputs(text, f);
    fclose(f);
    sz = 0;
    int n = repeat_allocs(mqa, &sz);
    unlink(mqa);
    assert_int_equal(n, 0);
}

/* 8. --grad-ckpt: transformers makes causal_mask_mapping in MistralModel.forward before the decoder layers
 * (masking_utils.py @00c4411c create_sliding_window_causal_mask) and GradientCheckpointingLayer binds the mask in
 * each checkpointed layer's partial (modeling_layers.py), so the recompute reads it and never makes it again. At
 * --seq 64 (past the window of 32) the mask's first comparison, kv_idx > q_idx - window, is one [1, 1, 64, 64]
 * bool (4,096 B) made once, in the forward, by the model before its layers (the trace's layers[1], the rotary
 * embedding, where layers[2][i] are the decoder layers), and never in the backward's recomputes. */
static void test_grad_ckpt(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s --seq 64 -b %d -p bf16 --attention math --grad-ckpt --trace 2>/dev/null", VC_CLI,
             with_window, B);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    int fwd = 0, bwd = 0, before_layers = 0;
    while (fgets(line, sizeof line, p)) {
        long long sz, total;
        char phase[32], where[256], op[64];
        if (sscanf(line, "%31s alloc act %lld %lld %255s %63s", phase, &sz, &total, where, op) != 5 || strcmp(op, "gt"))
            continue;
        assert_int_equal(sz, 64 * 64);
        if (!strcmp(phase, "forward")) fwd++;
        if (!strcmp(phase, "backward")) bwd++;
        if (!strcmp(where, "layers[1]")) before_layers++;
    }
    pclose(p);
    assert_int_equal(fwd, 1);
    assert_int_equal(bwd, 0);
    assert_int_equal(before_layers, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_below_window),      cmocka_unit_test(test_at_window),
        cmocka_unit_test(test_saved_bias_aligned), cmocka_unit_test(test_saved_bias_padded),
        cmocka_unit_test(test_saved_bias_pad8),     cmocka_unit_test(test_torch20_math),
        cmocka_unit_test(test_flash_no_mask),      cmocka_unit_test(test_generate_below),
        cmocka_unit_test(test_repeat_kv),          cmocka_unit_test(test_grad_ckpt),
    };
    return cmocka_run_group_tests(tests, sliding_setup, sliding_teardown);
}
