/*
 * bench_moe.c — sweeps and max-batch searches over a Hugging Face MoE config
 * (issue 16): wall time and the plans the estimator built
 * (vc_estimator_plans_built), in-process.
 *
 *   cc -O2 -Iinclude bench/speed/bench_moe.c build-rel/libvramcalc.a -lcjson -lm -o /tmp/bench_moe
 *   /tmp/bench_moe tests/data/hf/mixtral-8x7b-v0.1.json 256 [SEQ [infer]]
 *
 * Prints, as medians of REPS runs from a fresh estimator each: the sweep
 * 1 .. N (vc_estimator_total at each batch, the allocator model's grid
 * replays included) and a max-batch search on a card of 4x the batch-1
 * total, with the plans each built. Training, fp32 (the CLI's defaults),
 * or --mode infer in bf16 with "infer".
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vramcalc/vramcalc.h"
#include "bench_util.h"

#define REPS 3

static vc_estimator *fresh(const vc_model *m, const vc_options *o)
{
    vc_estimator *e;
    vc_error err;
    if (vc_estimator_new(m, o, VC_EST_NO_LAYERS, &e, &err)) {
        fprintf(stderr, "estimator: %s\n", err.msg);
        exit(1);
    }
    return e;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_moe CONFIG.json N [SEQ [infer]]\n");
        return 2;
    }
    int64_t n = atoll(argv[2]);
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    if (argc > 3) hf.seq = atoll(argv[3]);
    vc_model *m;
    vc_error err;
    if (vc_model_load_file_hf(argv[1], &hf, &m, &err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err.msg);
        return 1;
    }
    vc_options o;
    vc_options_init(&o);
    if (argc > 4 && !strcmp(argv[4], "infer")) {
        o.mode = VC_MODE_INFER;
        o.precision = VC_PREC_BF16;
    }
    double ts[REPS], tm[REPS];
    size_t sweep_plans = 0, mb_plans = 0;
    int64_t best = 0, t1 = 0;
    int probes = 0;
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        vc_estimator *e = fresh(m, &o);
        for (int64_t b = 1; b <= n; b++) {
            int64_t t;
            if (vc_estimator_total(e, b, &t, &err)) {
                fprintf(stderr, "batch %lld: %s\n", (long long)b, err.msg);
                return 1;
            }
            if (b == 1) t1 = t;
        }
        ts[r] = now() - t0;
        sweep_plans = vc_estimator_plans_built(e);
        vc_estimator_free(e);
        t0 = now();
        e = fresh(m, &o);
        if (vc_estimator_max_batch(e, 4 * t1, &best, &probes, &err)) {
            fprintf(stderr, "max batch: %s\n", err.msg);
            return 1;
        }
        tm[r] = now() - t0;
        mb_plans = vc_estimator_plans_built(e);
        vc_estimator_free(e);
    }
    qsort(ts, REPS, sizeof *ts, cmp);
    qsort(tm, REPS, sizeof *tm, cmp);
    printf("%s seq %lld %s: sweep 1..%lld %.3f s, %zu plans; max batch on %.1f GiB: %lld (%d estimates) %.3f s, %zu plans\n",
           argv[1], (long long)(hf.seq ? hf.seq : VC_HF_DEFAULT_SEQ), o.mode == VC_MODE_INFER ? "infer bf16" : "train fp32", (long long)n,
           ts[REPS / 2], sweep_plans, 4.0 * (double)t1 / (1 << 30), (long long)best, probes, tm[REPS / 2], mb_plans);
    vc_model_free(m);
    return 0;
}
