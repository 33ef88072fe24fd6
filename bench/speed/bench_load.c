/*
 * bench_load.c — what loading a model file costs, alone (bench/speed, issue 28 item 3).
 *
 *   cc -O2 -Iinclude bench/speed/bench_load.c build-rel/libvramcalc.a -lcjson -lm -o /tmp/bench_load
 *   /tmp/bench_load /tmp/s2000.json [REPS]
 *
 * Prints the minor page faults of the process's first load (getrusage around
 * vc_model_load_file, with the CLI's malloc settings: src/cli/main.c), the
 * layer instances, and the median wall time of REPS further loads (default 21).
 * Instructions: run it under callgrind with --toggle-collect=vc_model_load_file
 * (each load once: REPS 0).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "vramcalc/vramcalc.h"
#include "bench_util.h"

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_load MODEL.json [REPS]\n");
        return 2;
    }
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 4 << 20); /* as the CLI's main() */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
    int reps = argc > 2 ? atoi(argv[2]) : 21;
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_model *m = NULL;
    long f0 = minflt();
    if (vc_model_load_file(argv[1], &m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    long f1 = minflt();
    printf("%s: %zu layer instances, first load %ld minor page faults\n", argv[1], vc_model_layer_count(m), f1 - f0);
    vc_model_free(m);
    if (reps < 1) return 0;
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) return 2;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        vc_model_load_file(argv[1], &m, &err);
        t[r] = now() - t0;
        vc_model_free(m);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    printf("load: %.3f ms (median of %d)\n", t[reps / 2] * 1e3, reps);
    free(t);
    return 0;
}
