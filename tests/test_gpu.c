/*
 * test_gpu.c — the library side of issue 4: GPU presets, sizes, --gpu
 * specs, and the estimator (one plan, many batches) against vc_estimate.
 */
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

static void test_presets(void **state)
{
    (void)state;
    assert_true(vc_gpu_count() >= 25);
    assert_null(vc_gpu_get(vc_gpu_count()));
    for (size_t i = 0; i < vc_gpu_count(); i++) {
        const vc_gpu *g = vc_gpu_get(i);
        assert_non_null(g);
        assert_true(g->capacity > (INT64_C(8) << 30) && g->capacity < (INT64_C(1) << 40));
        assert_true(strlen(g->source) > 10);
        assert_ptr_equal(vc_gpu_find(g->name), g);
        for (size_t k = 0; k < i; k++) assert_string_not_equal(vc_gpu_get(k)->name, g->name);
    }
    static const char *const required[] = {"t4", "v100-16gb", "v100-32gb", "a10", "a10g", "l4", "l40s", "a100-40gb",
                                           "a100-80gb", "h100-pcie", "h100-80gb", "h200", "b200", "rtx3060",
                                           "rtx3090", "rtx4070", "rtx4080", "rtx4090", "rtx5090", "mi250x", "mi300x"};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!vc_gpu_find(required[i])) fail_msg("no preset %s", required[i]);
    /* nvidia-smi MiB totals */
    assert_int_equal(vc_gpu_find("h100-80gb")->capacity, INT64_C(81559) << 20);
    assert_int_equal(vc_gpu_find("a100-80gb")->capacity, INT64_C(81920) << 20);
    assert_int_equal(vc_gpu_find("t4")->capacity, INT64_C(15360) << 20);
    assert_int_equal(vc_gpu_find("mi300x")->capacity, INT64_C(206141652992));
    /* Hopper and Blackwell take the 32 MiB cuBLAS workspace */
    assert_int_equal(vc_gpu_find("h100-80gb")->hopper, 1);
    assert_int_equal(vc_gpu_find("h200")->hopper, 1);
    assert_int_equal(vc_gpu_find("b200")->hopper, 1);
    assert_int_equal(vc_gpu_find("a100-80gb")->hopper, 0);
    assert_int_equal(vc_gpu_find("rtx4090")->hopper, 0);
    /* spellings */
    assert_ptr_equal(vc_gpu_find("H100"), vc_gpu_find("h100-80gb"));
    assert_ptr_equal(vc_gpu_find("RTX 4090"), vc_gpu_find("rtx4090"));
    assert_ptr_equal(vc_gpu_find("rtx_4090"), vc_gpu_find("rtx4090"));
    assert_null(vc_gpu_find("rtx9090"));
    assert_null(vc_gpu_find(""));
    assert_string_equal(vc_gpu_suggest("rtx4900"), "rtx4090");
    assert_string_equal(vc_gpu_suggest("h100-80"), "h100-80gb");
    assert_null(vc_gpu_suggest("zzzzzzzzzzzz"));
}

static void test_sizes(void **state)
{
    (void)state;
    struct {
        const char *s;
        int64_t v;
    } ok[] = {{"0", 0}, {"512", 512}, {"24GiB", INT64_C(24) << 30}, {"24gib", INT64_C(24) << 30}, {"24GB", 24000000000},
              {"24000MiB", INT64_C(24000) << 20}, {"1.5TB", 1500000000000}, {"1.5GiB", INT64_C(3) << 29},
              {".5KiB", 512}, {"1 GiB", INT64_C(1) << 30}, {"80GB", 80000000000}, {"1B", 1}, {"2KB", 2000}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        vc_error err;
        memset(&err, 0, sizeof err);
        int64_t v = -1;
        if (vc_parse_size(ok[i].s, &v, &err) != VC_OK) fail_msg("%s: %s", ok[i].s, err.msg);
        if (v != ok[i].v) fail_msg("%s: %lld", ok[i].s, (long long)v);
    }
    static const char *const bad[] = {"", "GiB", "24Gb", "24G", "-1", "1e9", "24 GiB ", "12..5GB", "9999999999TiB", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vc_error err;
        memset(&err, 0, sizeof err);
        int64_t v;
        if (vc_parse_size(bad[i], &v, &err) == VC_OK) fail_msg("'%s' accepted", bad[i]);
        assert_true(err.msg[0] != '\0');
    }
}

static void test_specs(void **state)
{
    (void)state;
    vc_gpu_spec g;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_gpu_parse("h100-80gb:90%", &g, &err), VC_OK);
    assert_string_equal(g.name, "h100-80gb:90%");
    assert_int_equal(g.total, INT64_C(81559) << 20);
    assert_int_equal(g.capacity, (INT64_C(81559) << 20) * 9 / 10);
    assert_ptr_equal(g.preset, vc_gpu_find("h100-80gb"));
    assert_int_equal(vc_gpu_parse("24GiB:12.5%", &g, &err), VC_OK);
    assert_int_equal(g.capacity, INT64_C(3) << 30);
    assert_null(g.preset);
    assert_int_equal(vc_gpu_parse("H100", &g, &err), VC_OK);
    assert_string_equal(g.name, "h100-80gb");
    static const char *const bad[] = {"h100:0%", "h100:101%", "h100:90", "h100:", "nope", "0GiB", "24GiB:x%", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        if (vc_gpu_parse(bad[i], &g, &err) == VC_OK) fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(err.code, VC_ERR_USAGE);
    }
    memset(&err, 0, sizeof err);
    vc_gpu_parse("a10q", &g, &err);
    assert_non_null(strstr(err.msg, "did you mean"));
}

static const char mlp_json[] =
    "{\"name\": \"m\", \"input\": [128], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 128, \"out_features\": 512},"
    "{\"type\": \"GELU\"},"
    "{\"type\": \"Linear\", \"in_features\": 512, \"out_features\": 512, \"bias\": false},"
    "{\"type\": \"ReLU\", \"inplace\": true},"
    "{\"type\": \"Identity\"},"
    "{\"type\": \"Linear\", \"in_features\": 512, \"out_features\": 10}]}";

static void same_result(const vc_result *a, const vc_result *b, int64_t batch)
{
    if (memcmp(&a->memory, &b->memory, sizeof a->memory) || a->peak.phase != b->peak.phase ||
        strcmp(a->peak.layer, b->peak.layer) || strcmp(a->peak.kind, b->peak.kind) ||
        a->peak.activations != b->peak.activations || a->peak.temporaries != b->peak.temporaries ||
        a->parameters != b->parameters || a->trainable_parameters != b->trainable_parameters)
        fail_msg("batch %lld: estimator and vc_estimate differ", (long long)batch);
    assert_int_equal(a->nlayers, b->nlayers);
    for (size_t i = 0; i < a->nlayers; i++) {
        assert_string_equal(a->layers[i].name, b->layers[i].name);
        assert_int_equal(a->layers[i].activations, b->layers[i].activations);
    }
}

static void test_estimator(void **state)
{
    (void)state;
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_model *m = NULL;
    assert_int_equal(vc_model_load_string(mlp_json, sizeof mlp_json - 1, "mlp", &m, &err), VC_OK);
    for (int p = VC_PREC_FP32; p <= VC_PREC_MIXED_BF16; p++)
        for (int mode = 0; mode < 2; mode++) {
            vc_options o;
            vc_options_init(&o);
            o.precision = (vc_precision)p;
            o.mode = (vc_mode)mode;
            o.batch = 7; /* the first batch tried */
            vc_estimator *e = NULL;
            assert_int_equal(vc_estimator_new(m, &o, 0, &e, &err), VC_OK);
            for (int64_t b = 1; b <= 300; b += (b < 20 ? 1 : 37)) {
                vc_result r1, r2;
                o.batch = b;
                assert_int_equal(vc_estimator_run(e, b, &r1, &err), VC_OK);
                assert_int_equal(vc_estimate(m, &o, &r2, &err), VC_OK);
                same_result(&r1, &r2, b);
                int64_t t;
                assert_int_equal(vc_estimator_total(e, b, &t, &err), VC_OK);
                assert_int_equal(t, r2.memory.total);
                vc_result_free(&r1);
                vc_result_free(&r2);
            }
            /* max batch: N fits, N + 1 does not */
            for (int64_t cap = INT64_C(400) << 20; cap < (INT64_C(64) << 30); cap = cap * 3 / 2) {
                int64_t n = -1, t;
                int count = 0;
                assert_int_equal(vc_estimator_max_batch(e, cap, &n, &count, &err), VC_OK);
                assert_true(count > 0 && count <= 100);
                if (n > 0) {
                    assert_int_equal(vc_estimator_total(e, n, &t, &err), VC_OK);
                    assert_true(t <= cap);
                }
                assert_int_equal(vc_estimator_total(e, n + 1, &t, &err), VC_OK);
                assert_true(t > cap);
            }
            vc_estimator_free(e);
        }
    /* bad batch sizes and capacities */
    vc_options o;
    vc_options_init(&o);
    vc_estimator *e = NULL;
    assert_int_equal(vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e, &err), VC_OK);
    vc_result r;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimator_run(e, 0, &r, &err), VC_ERR_USAGE);
    int64_t n;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimator_max_batch(e, -1, &n, NULL, &err), VC_ERR_USAGE);
    assert_int_equal(vc_estimator_run(e, 5, &r, &err), VC_OK);
    assert_int_equal(r.nlayers, 0); /* VC_EST_NO_LAYERS */
    vc_result_free(&r);
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimator_run(e, INT64_C(1) << 62, &r, &err), VC_ERR_OVERFLOW);
    vc_estimator_free(e);
    vc_model_free(m);
    /* counts-only behind the same interface */
    assert_int_equal(vc_estimator_new_counts(1000000, 1000, &o, &e, &err), VC_OK);
    assert_int_equal(vc_estimator_run(e, 10, &r, &err), VC_OK);
    vc_result r2;
    o.batch = 10;
    assert_int_equal(vc_estimate_counts(1000000, 1000, &o, &r2, &err), VC_OK);
    assert_memory_equal(&r.memory, &r2.memory, sizeof r.memory);
    vc_result_free(&r);
    vc_result_free(&r2);
    assert_int_equal(vc_estimator_max_batch(e, INT64_C(1) << 30, &n, NULL, &err), VC_OK);
    assert_true(n > 1000);
    vc_estimator_free(e);
    assert_int_equal(vc_estimator_new_counts(1000, 0, &o, &e, &err), VC_OK);
    assert_int_equal(vc_estimator_max_batch(e, INT64_C(1) << 30, &n, NULL, &err), VC_OK);
    assert_int_equal(n, VC_MAX_BATCH_LIMIT);
    vc_estimator_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_specs),
        cmocka_unit_test(test_estimator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
