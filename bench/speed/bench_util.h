/*
 * bench_util.h — what the in-process benchmarks (bench_api.c, bench_load.c,
 * bench_moe.c) share: a monotonic clock in seconds and the comparison that
 * sorts their timings for the median. Include after <stdlib.h> and <time.h>.
 */
#ifndef VC_BENCH_UTIL_H
#define VC_BENCH_UTIL_H

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
