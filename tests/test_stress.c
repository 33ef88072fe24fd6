/*
 * test_stress.c — the oversized inputs of issue 28 (docs/limits.md), each run
 * in a child process so that its peak memory and CPU time are its own
 * (wait4's rusage):
 *  - TransformerDecoderLayer(d_model 8) x 100,000: refused by the loader
 *    before it makes the copies, the op count its kind declares (vc_kind.ops,
 *    layers/layer.h: 70 a copy, the most it records, under amp-fp16; 52 in fp32
 *    training) x 100,000 = 7,000,000 over VC_MAX_PLAN_OPS = 4,000,000. Before
 *    the counts were declared it was refused inside copy 76,923 of the build,
 *    after 1.0 s of CPU and 1.27 GiB; issue 28 asks for 100 ms and 64 MB;
 *  - every kind of limits_cases.h (a fixture x 1,000,000, the layer limit)
 *    whose declared count x 1,000,000 passes VC_MAX_PLAN_OPS: refused the
 *    same way, within 64 MB (issue 28: every kind at the limits within 2 s and
 *    512 MB). The kinds that declare at most 4 ops a copy are built as before
 *    (0.4 to 6.5 s, 0.26 to 3.5 GiB a kind): CTest limits_kinds, registered
 *    with -DVRAMCALC_HEAVY_TESTS=ON;
 *  - a Sequential block's `repeat`: refused after its first copy the same way;
 *    a repeat whose shape changes keeps its own error, checked first;
 *  - TransformerEncoderLayer(d_model 8) x 10,000 (38 ops a copy declared,
 *    380,000 in all: under the limit), a sweep of batches 1..40: answered
 *    (two plans: batch 1, and 2 and above, the first let go before the
 *    second is built: src/engine/sweep.c EST_KEEP_EVENTS), within issue
 *    28's 512 MB (414 MiB, 434 MB, measured 2026-12-06, RelWithDebInfo; 737 MiB
 *    while both plans were kept).
 * Memory is asserted; CPU time is asserted only where it is a loader's
 * refusal (under 0.1 s here, asserted under 1 s: the machine is shared), and
 * printed otherwise (timed figures belong in bench/speed).
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
#include "layer.h" /* vc_kind_find, vc_kind.ops */

#include "limits_cases.h"

#define MIB (1024L * 1024L)

static const char dec_json[] =
    "{\"inputs\":{\"tgt\":[4,8],\"memory\":[4,8]},\"layers\":[{\"type\":\"TransformerDecoderLayer\","
    "\"inputs\":[\"tgt\",\"memory\"],\"d_model\":8,\"nhead\":2,\"batch_first\":true,\"repeat\":100000}]}";
static const char enc_json[] =
    "{\"input\":[4,8],\"layers\":[{\"type\":\"TransformerEncoderLayer\",\"d_model\":8,\"nhead\":2,"
    "\"batch_first\":true,\"repeat\":10000}]}";

/* child: 0 when the decoder file is refused by the loader with the declared op counts */
static int run_dec(void)
{
    vc_model *m = NULL;
    vc_error err;
    vc_status st = vc_model_load_string(dec_json, strlen(dec_json), "dec.json", &m, &err);
    if (st == VC_OK) {
        vc_model_free(m);
        return 11;
    }
    if (st != VC_ERR_LIMIT) return 12;
    if (strcmp(err.path, "layers[0].repeat") ||
        !strstr(err.msg, "100000 copies of TransformerDecoderLayer record up to 70 autograd ops "
                         "each in one step (what its kinds declare): more than the limit of 4000000 in all "
                         "(docs/limits.md)"))
        return 13;
    return 0;
}

/* child: 0 when limits_cases.h's case `kase` is refused by the loader */
static size_t kase;
static int run_kind(void)
{
    const kind_case *c = &cases[kase];
    vc_model *m = NULL;
    vc_error err;
    vc_status st = vc_model_load_string(c->json, strlen(c->json), "kind.json", &m, &err);
    if (st == VC_OK) vc_model_free(m);
    return st == VC_ERR_LIMIT && strstr(err.msg, "autograd ops each in one step (what its kinds declare)") ? 0 : 1;
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
    printf("TransformerDecoderLayer x 100,000: refused, %.3f s CPU, %ld MiB peak\n", cpu, kib / 1024);
    assert_true(kib * 1024L < 64 * MIB);
    assert_true(cpu < 1.0);
}

/* A Sequential block's copies: refused after the first copy (2 x 38 declared ops a copy of
 * two TransformerEncoderLayers, x 60,000 = 4,560,000); a repeat whose output shape is not its
 * input's is refused for that first, as before the counts (the loader's checks keep their order). */
static void test_block_and_order(void **state)
{
    (void)state;
    static const char blk[] =
        "{\"input\":[4,8],\"layers\":[{\"type\":\"Sequential\",\"repeat\":60000,\"layers\":["
        "{\"type\":\"TransformerEncoderLayer\",\"d_model\":8,\"nhead\":2,\"batch_first\":true},"
        "{\"type\":\"TransformerEncoderLayer\",\"d_model\":8,\"nhead\":2,\"batch_first\":true}]}]}";
    static const char shape[] =
        "{\"input\":[24,40],\"layers\":[{\"type\":\"Conv1d\",\"in_channels\":24,\"out_channels\":12,"
        "\"kernel_size\":1,\"repeat\":1000000}]}";
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_string(blk, strlen(blk), "blk.json", &m, &err), VC_ERR_LIMIT);
    assert_string_equal(err.path, "layers[0].repeat");
    assert_non_null(strstr(err.msg, "60000 copies of the block record up to 76 autograd ops each in one step"));
    /* Conv1d 24 -> 12 channels x 1,000,000 (5 ops declared a copy): its shape error first */
    assert_int_equal(vc_model_load_string(shape, strlen(shape), "shape.json", &m, &err), VC_ERR_MODEL);
    assert_string_equal(err.path, "layers[0].repeat");
    assert_non_null(strstr(err.msg, "repeat needs the output shape to equal the input shape, but [24, 40] becomes [12, 40]"));
}

/* every kind whose declared ops x 1,000,000 pass the limit: refused before the copies are made */
static void test_kinds_refused_early(void **state)
{
    (void)state;
    int n = 0;
    for (kase = 0; kase < sizeof cases / sizeof cases[0]; kase++) {
        const vc_kind *k = vc_kind_find(cases[kase].kind);
        assert_non_null(k);
        if ((int64_t)k->ops * VC_MAX_LAYERS <= VC_MAX_PLAN_OPS) continue; /* built: limits_kinds */
        long kib;
        double cpu;
        int code = in_child(run_kind, &kib, &cpu);
        printf("%-26s x 1,000,000 (%d ops declared a copy): %s, %.3f s CPU, %ld MiB peak\n", k->name, k->ops,
               code ? "NOT REFUSED BY THE LOADER" : "refused", cpu, kib / 1024);
        assert_int_equal(code, 0);
        assert_true(kib * 1024L < 64 * MIB);
        assert_true(cpu < 1.0);
        n++;
    }
    printf("%d of %zu kinds refused by the loader\n", n, sizeof cases / sizeof cases[0]);
    assert_true(n > 0);
}

static void test_encoder_sweep(void **state)
{
    (void)state;
    long kib;
    double cpu;
    assert_int_equal(in_child(run_enc, &kib, &cpu), 0);
    printf("TransformerEncoderLayer x 10,000, batches 1..40: answered, %.2f s CPU, %ld MiB peak\n", cpu, kib / 1024);
#ifndef VC_SANITIZE
    assert_true(kib * 1024L < 512L * 1000 * 1000); /* issue 28: 512 MB */
#else
    /* ASan's shadow memory and redzones are not the estimator's (684 MiB measured there, 414 MiB
     * uninstrumented): the bound is the uninstrumented builds' */
    assert_true(kib > 0);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decoder_refused),
        cmocka_unit_test(test_kinds_refused_early),
        cmocka_unit_test(test_block_and_order),
        cmocka_unit_test(test_encoder_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
