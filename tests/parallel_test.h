/*
 * parallel_test.h — what test_parallel.c (the sharded layouts) and
 * test_parallel_mp.c (tensor and pipeline parallelism) share: the two-Linear
 * model, its options and estimate, and a trace reader that counts a category's
 * allocations of one size per phase. See test_parallel.c for the model's sizes.
 */
#ifndef VC_PARALLEL_TEST_H
#define VC_PARALLEL_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "pipeline.h"

static const char *const two =
    "{\"input\": [1000], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 999},"
    " {\"type\": \"Linear\", \"in_features\": 999, \"out_features\": 1000}]}";

/* What the trace says, per phase: the largest running total, and how many
 * allocations of `bytes` in category `cat` it makes. */
typedef struct {
    const char *cat;
    int64_t bytes;
    int64_t max[4];   /* forward, backward, optimizer, idle */
    int gathers[4];
} trace_t;

static inline int phase_index(const char *p)
{
    return !strcmp(p, "forward") ? 0 : !strcmp(p, "backward") ? 1 : !strcmp(p, "optimizer") ? 2 : 3;
}

static inline void on_line(void *ctx, const char *text)
{
    trace_t *t = ctx;
    char phase[32], op[16], cat[16];
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld", phase, op, cat, &bytes, &total) != 5) return;
    int k = phase_index(phase);
    if (total > t->max[k]) t->max[k] = total;
    if (!strcmp(op, "alloc") && !strcmp(cat, t->cat) && bytes == t->bytes) t->gathers[k]++;
}

static inline vc_model *load(void)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(two, strlen(two), "two.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    return m;
}

static inline vc_options opts(vc_parallel par, int64_t gpus, vc_optim optim)
{
    vc_options o;
    vc_options_init(&o);
    o.optim = optim;
    o.workspace = 0;
    o.parallel = par;
    o.gpus = gpus;
    return o;
}

static inline trace_t trace(vc_parallel par, int64_t gpus, vc_optim optim, const char *cat, int64_t bytes)
{
    vc_model *m = load();
    vc_options o = opts(par, gpus, optim);
    vc_error err;
    trace_t t = {cat, bytes, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_line, &t, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return t;
}

static inline vc_result estimate(vc_parallel par, int64_t gpus, vc_optim optim)
{
    vc_model *m = load();
    vc_options o = opts(par, gpus, optim);
    vc_error err;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

#endif
