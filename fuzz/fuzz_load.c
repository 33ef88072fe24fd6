/*
 * fuzz_load.c — libFuzzer harness: model text -> vc_model_load_string ->
 * vc_estimate / vc_trace under several option sets.
 *
 * Build: cmake -DCMAKE_C_COMPILER=clang -DVRAMCALC_FUZZ=ON (see fuzz/run.sh).
 * Besides ASan/UBSan findings, the harness aborts when a successful call
 * breaks an invariant the report relies on (a negative or wrapped byte
 * figure, peak parts that do not sum to peak_allocated, an error without a
 * message), and when an error is not a single printable line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vramcalc/vramcalc.h"

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "fuzz_load: invariant failed at %s:%d: %s\n", __FILE__,     \
                    __LINE__, #cond);                                                   \
            abort();                                                                    \
        }                                                                               \
    } while (0)

static void check_error(vc_status st, const vc_error *err)
{
    CHECK(st != VC_OK);
    CHECK(err->code == st);
    char line[1400];
    vc_error_format(err, line, sizeof line);
    CHECK(line[0] != '\0');
    for (const char *p = line; *p; p++) CHECK(*p != '\n' && *p != '\r');
    CHECK(err->line >= 0 && err->col >= 0);
    CHECK(err->msg[0] != '\0');
}

static void check_result(const vc_model *m, const vc_result *r)
{
    const vc_memory *mm = &r->memory;
    CHECK(r->parameters >= 0 && r->trainable_parameters >= 0);
    CHECK(r->trainable_parameters <= r->parameters);
    CHECK(r->parameters == vc_model_parameters(m));
    CHECK(mm->weights >= 0 && mm->gradients >= 0 && mm->optimizer_states >= 0);
    CHECK(mm->activations >= 0 && mm->workspace >= 0);
    CHECK(mm->peak_allocated >= 0 && mm->reserved >= 0 && mm->cuda_context >= 0);
    CHECK(mm->total == mm->reserved + mm->cuda_context);
    const vc_peak *pk = &r->peak;
    CHECK(pk->weights >= 0 && pk->gradients >= 0 && pk->optimizer_states >= 0);
    CHECK(pk->activations >= 0 && pk->temporaries >= 0 && pk->workspace >= 0);
    /* SPEC §3: the parts sum exactly to peak_allocated (no wrap: all >= 0 and bounded by it). */
    int64_t sum = 0;
    CHECK(!__builtin_add_overflow(sum, pk->weights, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->gradients, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->optimizer_states, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->activations, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->temporaries, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->workspace, &sum));
    CHECK(sum == mm->peak_allocated);
    CHECK(mm->peak_allocated % 512 == 0);
    for (size_t i = 0; i < r->nlayers; i++) {
        CHECK(r->layers[i].parameters >= 0 && r->layers[i].activations >= 0);
        CHECK(r->layers[i].ndim >= 0 && r->layers[i].ndim <= VC_MAX_DIMS);
    }
}

static void sink(void *ctx, const char *text)
{
    (void)text;
    ++*(size_t *)ctx;
}

static void run(const vc_model *m, const vc_options *o, int trace)
{
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_result r;
    vc_status st = vc_estimate(m, o, &r, &err);
    if (st == VC_OK) check_result(m, &r);
    else check_error(st, &err);
    vc_result_free(&r);
    if (trace) {
        size_t n = 0;
        memset(&err, 0, sizeof err);
        st = vc_trace(m, o, sink, &n, &err);
        if (st != VC_OK) check_error(st, &err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vc_model *m = NULL;
    vc_error err;
    vc_status st = vc_model_load_string((const char *)data, size, "fuzz.json", &m, &err);
    if (st != VC_OK) {
        check_error(st, &err);
        CHECK(m == NULL);
        return 0;
    }
    CHECK(vc_model_parameters(m) >= 0 && vc_model_trainable_parameters(m) >= 0);
    CHECK(vc_model_layer_count(m) <= VC_MAX_LAYERS);
    /* Big models take seconds and gigabytes to simulate (1M Linear layers:
     * ~2 GiB natively, more under ASan); loading them is still fuzzed. */
    if (vc_model_layer_count(m) > 50000) {
        vc_model_free(m);
        return 0;
    }
    int small = vc_model_layer_count(m) <= 2000;

    vc_options o;
    vc_options_init(&o); /* train, adam, fp32, batch 1 */
    run(m, &o, small);

    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.batch = 7;
    o.precision = VC_PREC_FP16;
    run(m, &o, 0);

    if (small) {
        vc_options_init(&o);
        o.batch = 32;
        o.optim = VC_OPTIM_SGD;
        o.precision = VC_PREC_AMP_BF16;
        o.accumulate = 4;
        o.attention = VC_ATTN_MATH;
        o.workspace = 0;
        run(m, &o, 0);

        vc_options_init(&o);
        o.batch = 3;
        o.optim = VC_OPTIM_ADAMW;
        o.optim_impl = VC_IMPL_FORLOOP;
        o.precision = VC_PREC_MIXED_FP16;
        o.hopper = 1;
        run(m, &o, 0);

        /* a batch that overflows 64-bit byte counts for anything but tiny models */
        vc_options_init(&o);
        o.batch = INT64_C(1) << 62;
        o.optim = VC_OPTIM_MOMENTUM;
        run(m, &o, 1);

        /* --input override, then estimate again */
        int64_t dims[3] = {4, 8, (int64_t)(size % 13) + 1};
        memset(&err, 0, sizeof err);
        st = vc_model_set_input_shape(m, dims, 1 + (int)(size % 3), &err);
        if (st == VC_OK) {
            vc_options_init(&o);
            o.batch = 2;
            run(m, &o, 0);
        } else {
            check_error(st, &err);
        }
    }
    vc_model_free(m);
    return 0;
}
