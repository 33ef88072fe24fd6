/*
 * test_seq_floor.c — the floor --max-seq skips probes with (issue 28;
 * src/engine/plan.c vc__plan_state_floor, src/engine/maxseq.c).
 *
 * The search builds the first probe's plan and takes from it the bytes of
 * the weights and optimizer states that plan never frees; when they are
 * over the capacity, the later probes of a model with the same parameters
 * and buffers are "does not fit" without their plans. So the floor must be
 * under the allocated peak at every length, and the same at every length:
 * checked here against vc_estimate's peak_allocated (the engine's own
 * replay, the truth of "does not fit") for several configs of
 * tests/data/hf, each as loaded and with options that change what the
 * weights and states are (bf16 with AdamW, LoRA, ZeRO-3 over 8 GPUs, SGD),
 * at 1, 64 and 2,048 tokens. And the search's answer and count are the
 * ones the search made every plan for: Llama-3.1-8B in fp32 with Adam on
 * 80 GiB (no length fits: 32.1 GB of weights and 64.2 GB of Adam states
 * are the floor) answers 0 after 12 probes (2,048 halved down to 1), as
 * before the floor (bench/speed/README.md, issue 28).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"

static vc_model *load(const char *file, int64_t seq, int64_t lora)
{
    char path[512];
    snprintf(path, sizeof path, HF "%s", file);
    vc_hf_options h;
    vc_hf_options_init(&h);
    h.seq = seq;
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(path, &h, &m, &err)) fail_msg("%s: %s", file, err.msg);
    if (lora) {
        vc_lora l;
        vc_lora_init(&l);
        l.r = lora;
        snprintf(l.targets, sizeof l.targets, "%s", vc_model_lora_targets(m));
        if (vc_model_set_lora(m, &l, &err)) fail_msg("%s: %s", file, err.msg);
    }
    return m;
}

static void test_floor_under_peak(void **state)
{
    (void)state;
    static const char *const files[] = {"llama-3.1-8b.json", "gpt2.json", "mixtral-8x7b-v0.1.json",
                                        "phi-3-mini-4k-instruct.json", "qwen2-7b.json"};
    static const int64_t seqs[] = {1, 64, 2048};
    int checked = 0;
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        for (int k = 0; k < 5; k++) {
            int64_t floor0 = -1;
            for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++) {
                if (!strcmp(files[f], "gpt2.json") && seqs[i] > 1024) continue; /* its 1,024 learned positions */
                vc_model *m = load(files[f], seqs[i], k == 2 ? 8 : 0);
                vc_options o;
                vc_options_init(&o);
                if (k == 1 || k == 2) {
                    o.precision = VC_PREC_BF16;
                    o.optim = VC_OPTIM_ADAMW;
                }
                if (k == 3) {
                    o.gpus = 8;
                    o.parallel = VC_PARALLEL_ZERO3;
                }
                if (k == 4) o.optim = VC_OPTIM_SGD;
                vc_error err;
                vc_plan *p = NULL;
                if (vc_plan_build(m, &o, &p, &err)) fail_msg("%s: %s", files[f], err.msg);
                int64_t floor = vc__plan_state_floor(p);
                vc_plan_free(p);
                vc_result r;
                if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: %s", files[f], err.msg);
                printf("%-28s options %d seq %5lld: floor %15lld <= peak allocated %15lld\n", files[f], k,
                       (long long)seqs[i], (long long)floor, (long long)r.memory.peak_allocated);
                assert_true(floor > 0); /* every case here keeps weights */
                assert_true(floor <= r.memory.peak_allocated);
                if (floor0 >= 0) assert_int_equal(floor, floor0); /* the same at every length */
                floor0 = floor;
                checked++;
                vc_result_free(&r);
                vc_model_free(m);
            }
        }
    }
    assert_int_equal(checked, 5 * 3 * 5 - 5); /* gpt2 at 2,048 tokens is refused */
}

static void test_search_unchanged(void **state)
{
    (void)state;
    vc_model *m = load("llama-3.1-8b.json", 0, 0);
    vc_options o;
    vc_options_init(&o);
    vc_error err;
    int64_t n = -1;
    int limited = -1, count = 0;
    /* 8,030,261,248 parameters (Meta's card) x 4 B of fp32 weights + 8 B of Adam's exp_avg and exp_avg_sq:
     * 96.4 GB, over 80 GiB at any length */
    assert_int_equal(vc_model_max_seq(m, &o, INT64_C(80) << 30, &n, &limited, &count, &err), VC_OK);
    assert_int_equal(n, 0);
    assert_int_equal(limited, 0);
    assert_int_equal(count, 12); /* 2048, 1024, ..., 1: the halving search's probes, each counted */
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floor_under_peak),
        cmocka_unit_test(test_search_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
