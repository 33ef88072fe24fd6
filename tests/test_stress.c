/*
 * test_stress.c — the oversized inputs of issue 28 (docs/limits.md), each run
 * in a child process so that its peak memory is its own (wait4's ru_maxrss):
 *  - TransformerDecoderLayer(d_model 8) x 100,000, trained: refused with the
 *    autograd-op limit inside copy 76,923 (52 ops a copy: 76,923 x 52 =
 *    3,999,996, one more copy passes VC_MAX_PLAN_OPS = 4,000,000; the same
 *    message as CTest cli_limits);
 *  - TransformerEncoderLayer(d_model 8) x 10,000, a sweep of batches 1..40:
 *    answered (two plans: batch 1, and 2 and above).
 * What is asserted is the answer and a generous memory ceiling (about 1.6x
 * the peak measured here on the development container, 2026-12-06, a
 * RelWithDebInfo build: 1,295 MiB and 737 MiB; ceilings 2,048 and 1,200
 * MiB); the CPU time is printed, not asserted (timed figures belong in
 * bench/speed, not in a test on a shared machine). Issue 28 wants both within
 * 2 s and 512 MB, which needs each kind's op count before emission: not yet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"

#define MIB (1024L * 1024L)

static const char dec_json[] =
    "{\"inputs\":{\"tgt\":[4,8],\"memory\":[4,8]},\"layers\":[{\"type\":\"TransformerDecoderLayer\","
    "\"inputs\":[\"tgt\",\"memory\"],\"d_model\":8,\"nhead\":2,\"batch_first\":true,\"repeat\":100000}]}";
static const char enc_json[] =
    "{\"input\":[4,8],\"layers\":[{\"type\":\"TransformerEncoderLayer\",\"d_model\":8,\"nhead\":2,"
    "\"batch_first\":true,\"repeat\":10000}]}";

/* child: 0 when the decoder file is refused with the op limit at copy 76,923 */
static int run_dec(void)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(dec_json, strlen(dec_json), "dec.json", &m, &err)) return 10;
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    vc_status st = vc_estimate(m, &o, &r, &err);
    vc_model_free(m);
    if (st == VC_OK) {
        vc_result_free(&r);
        return 11;
    }
    if (st != VC_ERR_LIMIT) return 12;
    if (!strstr(err.msg, "layers[0][76923]: the model records more than 4000000 autograd ops in one step by this layer"))
        return 13;
    return 0;
}

/* child: 0 when every batch of 1..40 of the encoder file is answered, totals not falling */
static int run_enc(void)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(enc_json, strlen(enc_json), "enc.json", &m, &err)) return 10;
    vc_options o;
    vc_options_init(&o);
    vc_estimator *e = NULL;
    if (vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e, &err)) return 11;
    int64_t last = 0;
    for (int64_t b = 1; b <= 40; b++) {
        int64_t t;
        if (vc_estimator_total(e, b, &t, &err)) return 12;
        if (t < last) return 13; /* docs/contract.md: total never falls as the batch grows */
        last = t;
    }
    vc_estimator_free(e);
    vc_model_free(m);
    return 0;
}

/* runs fn in a child: its exit status, peak resident KiB and CPU seconds */
static int in_child(int (*fn)(void), long *maxrss_kib, double *cpu_s)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(fn());
    int status = 0;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status));
    *maxrss_kib = ru.ru_maxrss;
    *cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
             ru.ru_stime.tv_usec / 1e6;
    return WEXITSTATUS(status);
}

static void test_decoder_refused(void **state)
{
    (void)state;
    long kib;
    double cpu;
    assert_int_equal(in_child(run_dec, &kib, &cpu), 0);
    printf("TransformerDecoderLayer x 100,000: refused, %.2f s CPU, %ld MiB peak\n", cpu, kib / 1024);
    assert_true(kib * 1024L < 2048 * MIB);
}

static void test_encoder_sweep(void **state)
{
    (void)state;
    long kib;
    double cpu;
    assert_int_equal(in_child(run_enc, &kib, &cpu), 0);
    printf("TransformerEncoderLayer x 10,000, batches 1..40: answered, %.2f s CPU, %ld MiB peak\n", cpu, kib / 1024);
    assert_true(kib * 1024L < 1200 * MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decoder_refused),
        cmocka_unit_test(test_encoder_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
