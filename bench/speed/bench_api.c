/*
 * bench_api.c — where an estimate's time goes, in-process (bench/speed).
 *
 *   cc -O2 -Iinclude bench/speed/bench_api.c build-cli/libvramcalc.a -lcjson -lm -o /tmp/bench_api
 *   /tmp/bench_api /tmp/m2000.json
 *
 * Times, as medians of repeated runs: loading the model, one vc_estimate,
 * building an estimator (the plan), one replay per batch (vc_estimator_total),
 * a full result per batch (vc_estimator_run without layers), a sweep and a
 * max-batch search from a fresh estimator (the allocator replays at the grid
 * batches included), and a max-batch search on an 80 GiB card.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vramcalc/vramcalc.h"
#include "bench_util.h"

#define REPS 5
#define TIME(label, per, stmt)                                                      \
    do {                                                                            \
        double t_[REPS];                                                            \
        for (int r_ = 0; r_ < REPS; r_++) {                                         \
            double t0_ = now();                                                     \
            stmt;                                                                   \
            t_[r_] = now() - t0_;                                                   \
        }                                                                           \
        qsort(t_, REPS, sizeof *t_, cmp);                                           \
        printf("%-44s %10.3f ms", label, t_[REPS / 2] * 1e3);                       \
        if (per > 1) printf("  (%.2f us each)", t_[REPS / 2] * 1e6 / (per));        \
        printf("\n");                                                               \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_api MODEL.json\n");
        return 2;
    }
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_model *m = NULL;
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    if (vc_model_load_file(argv[1], &m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    printf("%s: %zu layer instances\n", argv[1], vc_model_layer_count(m));
    TIME("load (read + parse + shapes)", 1, {
        vc_model *m2 = NULL;
        vc_model_load_file(argv[1], &m2, &err);
        vc_model_free(m2);
    });
    TIME("vc_estimate (build + 1 replay + layers)", 1, {
        vc_estimate(m, &o, &r, &err);
        vc_result_free(&r);
    });
    vc_estimator *e = NULL;
    TIME("vc_estimator_new (plan build)", 1, {
        vc_estimator_free(e);
        vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e, &err);
    });
    int64_t t;
    TIME("vc_estimator_total x1024 (batch 1..1024)", 1024, {
        for (int b = 1; b <= 1024; b++) vc_estimator_total(e, b, &t, &err);
    });
    TIME("vc_estimator_run x1024, no layers", 1024, {
        for (int b = 1; b <= 1024; b++) {
            vc_estimator_run(e, b, &r, &err);
            vc_result_free(&r);
        }
    });
    TIME("a sweep: new estimator + totals 1..1024", 1, {
        vc_estimator *e2 = NULL;
        vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e2, &err);
        for (int b = 1; b <= 1024; b++) vc_estimator_total(e2, b, &t, &err);
        vc_estimator_free(e2);
    });
    TIME("a max-batch search: new estimator + search", 1, {
        vc_estimator *e2 = NULL;
        int64_t mb2;
        int n2;
        vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e2, &err);
        vc_estimator_max_batch(e2, INT64_C(80) << 30, &mb2, &n2, &err);
        vc_estimator_free(e2);
    });
    int64_t mb = 0;
    int n = 0;
    TIME("vc_estimator_max_batch (80 GiB)", 1, vc_estimator_max_batch(e, INT64_C(80) << 30, &mb, &n, &err));
    printf("max batch on 80 GiB: %lld (%d estimates)\n", (long long)mb, n);
    vc_estimator_free(e);
    vc_model_free(m);
    return 0;
}
