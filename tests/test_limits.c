/*
 * test_limits.c — every layer kind at the layer limit (docs/limits.md), each
 * in a forked child so that its peak memory is its own (wait4's rusage, the
 * child's ru_maxrss and CPU time).
 *
 * For each kind, a single-layer model of fuzz/corpus/ (its fixture, named
 * beside it: the first one whose output shape equals its input's, which
 * `repeat` needs; a square Linear for Linear) repeated 1,000,000 times
 * (VC_MAX_LAYERS) is trained with the default options. docs/limits.md says
 * that whatever the file holds, vramcalc gives an estimate or refuses it with
 * a limit, and that the op and event limits bound one plan at ~20 M events,
 * ~3.7 GB, whatever the kinds. Asserted: the answer is an estimate or
 * VC_ERR_LIMIT (never out of memory or another error), and the child's peak
 * resident memory is under 6 GiB, a generous ceiling: the largest measured
 * here (2026-12-06, this test on a RelWithDebInfo build) was 4,244 MiB (RNN,
 * refused by VC_MAX_PLAN_EVENTS), then GRU 4,099, TransformerDecoderLayer
 * 3,997 (loading its 1,000,000 copies takes 1.72 GiB), Conv2d
 * 3,544 (answered), down to 497 MiB for Identity, ELU and Add (vc_estimate's
 * per-layer rows included; through the CLI, bench/speed/limits.py, Identity
 * takes 258 MiB). CPU time is printed, not asserted (timed figures belong in
 * bench/speed, not in a test on a shared machine): 0.3 to 6.6 s a kind, 65 s
 * in all, 230 s of wall time on the shared 2-core container.
 * Issue 28 wants every kind within 2 s and 512 MB, which needs a kind's op
 * and tensor count before its copies are expanded and emitted: not met
 * (through the CLI, 1 of 39 kinds: Identity).
 *
 * The kinds with no fixture whose output shape is its input's (a pooling
 * that shrinks, Embedding, Flatten, LSTM, the tensor ops that reshape) reach
 * the layer limit only among other layers and are not run here.
 *
 * Skipped (cmocka's skip) in a sanitizer build: AddressSanitizer's shadow memory and
 * quarantine multiply the peaks past any ceiling that means something.
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
#define CEILING_MIB 6144L

#include "limits_cases.h"

/* child: 0 answered, 1 refused with a limit (loading or estimating), 10 not loaded, 20 + status another error */
static int run_case(const kind_case *c)
{
    vc_model *m = NULL;
    vc_error err;
    vc_status ls = vc_model_load_string(c->json, strlen(c->json), "kind.json", &m, &err);
    if (ls == VC_ERR_LIMIT) return 1; /* the ops its kind declares (vc_kind.ops), before the copies are made */
    if (ls) return 10;
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    vc_status st = vc_estimate(m, &o, &r, &err);
    vc_model_free(m);
    if (st == VC_OK) {
        vc_result_free(&r);
        return 0;
    }
    if (st == VC_ERR_LIMIT) return 1;
    fprintf(stderr, "%s: %s\n", c->kind, err.msg);
    return 20 + (int)st;
}

static void test_every_kind(void **state)
{
    (void)state;
#ifdef VC_SANITIZE
    skip();
#endif
    long worst = 0;
    const char *worst_kind = "";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) _exit(run_case(&cases[i]));
        int status = 0;
        struct rusage ru;
        assert_int_equal(wait4(pid, &status, 0, &ru), pid);
        assert_true(WIFEXITED(status));
        int code = WEXITSTATUS(status);
        double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                     ru.ru_stime.tv_usec / 1e6;
        printf("%-26s x 1,000,000: %-8s %6.2f s CPU, %5ld MiB peak\n", cases[i].kind,
               code == 0 ? "answered" : code == 1 ? "refused" : "ERROR", cpu, ru.ru_maxrss / 1024);
        if (code > 1) fail_msg("%s: exit %d (10: not loaded; 20 + status: not a limit)", cases[i].kind, code);
        if (ru.ru_maxrss > worst) {
            worst = ru.ru_maxrss;
            worst_kind = cases[i].kind;
        }
        if (ru.ru_maxrss * 1024L >= CEILING_MIB * MIB)
            fail_msg("%s: %ld MiB peak, over the ceiling of %ld MiB", cases[i].kind, ru.ru_maxrss / 1024, CEILING_MIB);
    }
    printf("largest peak: %s, %ld MiB (ceiling %ld MiB)\n", worst_kind, worst / 1024, CEILING_MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
