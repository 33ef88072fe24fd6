/*
 * The public header's promises: the version (the numeric macros, VC_VERSION
 * and what the linked library reports agree with each other and with
 * CMakeLists.txt's project(VERSION), passed in as VC_PROJECT_VERSION); the
 * request of its "Typical use" gives vc_estimate's figures; separate
 * requests in separate threads give what they give one after another.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"

static void test_version_matches_project(void **state)
{
    (void)state;
    unsigned major, minor, patch;
    /* CMake's PROJECT_VERSION, "MAJOR.MINOR.PATCH" */
    assert_int_equal(sscanf(VC_PROJECT_VERSION, "%u.%u.%u", &major, &minor, &patch), 3);
    assert_int_equal(VC_VERSION_MAJOR, major);
    assert_int_equal(VC_VERSION_MINOR, minor);
    assert_int_equal(VC_VERSION_PATCH, patch);
    assert_string_equal(VC_VERSION, VC_PROJECT_VERSION);
    assert_int_equal(VC_VERSION_HEX, (major << 16) | (minor << 8) | patch);
}

static void test_library_reports_header_version(void **state)
{
    (void)state;
    assert_int_equal(vc_version(), VC_VERSION_HEX);
    assert_string_equal(vc_version_string(), VC_VERSION);
}

/* The "total" of a request's JSON rendering for examples/MODEL at `batch`
 * samples, as the header's "Typical use" runs it; -1 on any failure. */
static int64_t request_total(const char *model, const char *batch, const char *format)
{
    char path[1024], buf[1024];
    snprintf(path, sizeof path, "%s/%s", VC_EXAMPLES, model);
    vc_error err;
    vc_request *q = vc_request_new();
    vc_response *r = NULL;
    char *text = NULL;
    size_t len = 0;
    int64_t total = -1;
    if (q && vc_request_add_model(q, path, &err) == VC_OK && vc_request_set(q, "batch", batch, &err) == VC_OK &&
        vc_request_set(q, "format", format, &err) == VC_OK && vc_request_run(q, &r, &err) == VC_OK &&
        vc_response_render(r, VC_FORMAT_DEFAULT, NULL, &text, &len, &err) == VC_OK) {
        const char *t = strstr(text, "\"total\": ");
        if (t) total = strtoll(t + strlen("\"total\": "), NULL, 10);
    } else {
        vc_error_format_for(&err, VC_SPELL_CLI, buf, sizeof buf);
        fprintf(stderr, "%s\n", buf);
    }
    vc_text_free(text);
    vc_response_free(r);
    vc_request_free(q);
    return total;
}

static int64_t struct_total(const char *model, int64_t batch)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", VC_EXAMPLES, model);
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file(path, &m, &err) != VC_OK) return -1;
    vc_options o;
    vc_options_init(&o);
    o.batch = batch;
    vc_result r;
    int64_t total = vc_estimate(m, &o, &r, &err) == VC_OK ? r.memory.total : -1;
    vc_result_free(&r);
    vc_model_free(m);
    return total;
}

static void test_request_gives_struct_api_figures(void **state)
{
    (void)state;
    /* 744,488,960 B: `vramcalc examples/mlp.json -b 32 -f json` at this commit (reserved
     * 29,360,128 + CUDA context 715,128,832; torch 2.15 keeps no cuBLAS workspace in the
     * allocator, src/policy/release.c); the two ways in must agree on it. */
    assert_int_equal(request_total("mlp.json", "32", "json"), INT64_C(744488960));
    assert_int_equal(struct_total("mlp.json", 32), INT64_C(744488960));
}

/* The legacy structs begin with their size (the header's top): vc_options_init sets it to the
 * caller's sizeof, the library reads no byte past it and takes the defaults for the fields a
 * smaller struct lacks, and refuses a size no release had. The first release with the size
 * field ends at act_offload (vc_hf_options: at images); a program built then passes that. */
static void test_struct_size(void **state)
{
    (void)state;
    const size_t first = offsetof(vc_options, act_offload) + sizeof(int);
    vc_options o;
    vc_options_init(&o);
    assert_int_equal(o.size, sizeof(vc_options));
    memset(&o, 0, sizeof o);
    (vc_options_init)(&o); /* the function, for bindings: the library's size */
    assert_int_equal(o.size, sizeof(vc_options));
    /* init writes nothing past the size it is given */
    union {
        vc_options o;
        unsigned char b[sizeof(vc_options) + 64];
    } u;
    memset(u.b, 0xab, sizeof u.b);
    vc_options_init_size(&u.o, first);
    for (size_t i = first; i < sizeof u.b; i++) assert_int_equal(u.b[i], 0xab);
    /* a struct of the first size gives the full struct's figures (mlp.json at batch 32: 744,488,960 B,
     * test_request_gives_struct_api_figures) */
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", VC_EXAMPLES, "mlp.json");
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file(path, &m, &err)) fail_msg("%s", err.msg);
    vc_options *old = &u.o;
    old->batch = 32;
    vc_result r;
    if (vc_estimate(m, old, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.memory.total, INT64_C(744488960));
    vc_result_free(&r);
    /* not set up by vc_options_init, or from a newer header: refused, naming vc_options_init */
    vc_options_init(&o);
    o.size = 0;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "vc_options_init"));
    o.size = sizeof o + 8;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    o.size = first - 1;
    assert_int_equal(vc_estimator_new(m, &o, 0, &(vc_estimator *){NULL}, &err), VC_ERR_USAGE);
    vc_model_free(m);
    /* vc_hf_options the same */
    vc_hf_options h;
    vc_hf_options_init(&h);
    assert_int_equal(h.size, sizeof(vc_hf_options));
    const char *cfg = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, "
                      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                      "\"vocab_size\": 1000, \"max_position_embeddings\": 256}";
    h.seq = 128;
    if (vc_model_load_string_hf(cfg, strlen(cfg), "tiny.json", &h, &m, &err)) fail_msg("%s", err.msg);
    const int64_t params = vc_model_parameters(m);
    vc_model_free(m);
    h.size = 0;
    assert_int_equal(vc_model_load_string_hf(cfg, strlen(cfg), "tiny.json", &h, &m, &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "vc_hf_options_init"));
    h.size = offsetof(vc_hf_options, images) + sizeof(int64_t);
    if (vc_model_load_string_hf(cfg, strlen(cfg), "tiny.json", &h, &m, &err)) fail_msg("%s", err.msg);
    assert_int_equal(vc_model_parameters(m), params);
    vc_model_free(m);
}

/* Separate requests in separate threads (the header's "Threads"): each gives
 * what it gives alone. */
typedef struct {
    const char *model, *batch;
    int64_t total;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    for (int i = 0; i < 4; i++) {
        int64_t t = request_total(j->model, j->batch, "json");
        if (i > 0 && t != j->total) t = -2;
        j->total = t;
    }
    return NULL;
}

static void test_requests_in_threads(void **state)
{
    (void)state;
    job jobs[4] = {{"mlp.json", "32", 0}, {"gpt2_small.json", "2", 0}, {"bert_base.json", "4", 0}, {"mlp.json", "1", 0}};
    int64_t alone[4];
    for (int i = 0; i < 4; i++) alone[i] = request_total(jobs[i].model, jobs[i].batch, "json");
    pthread_t th[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 4; i++) {
        assert_true(alone[i] > 0);
        assert_int_equal(jobs[i].total, alone[i]);
    }
}

/* A library error names an option by its table name between option marks
 * (src/util/util.h's O("seq")): vc_error_format writes it as the CLI always
 * printed it (--seq, --input: the message of src/model/model.c's
 * vc_model_set_seq before the marks), vc_error_format_for as Python does. */
static void test_error_names_options_per_front_end(void **state)
{
    (void)state;
    char path[1024], buf[1024];
    snprintf(path, sizeof path, "%s/mlp.json", VC_EXAMPLES);
    vc_error err;
    vc_model *m = NULL;
    assert_int_equal(vc_model_load_file(path, &m, &err), VC_OK);
    assert_int_equal(vc_model_set_seq(m, 128, &err), VC_ERR_USAGE);
    const char *cli = ": --seq: the sequence length applies to a Hugging Face config.json; this is a vramcalc model "
                      "file (use --input)";
    const char *py = ": seq=: the sequence length applies to a Hugging Face config.json; this is a vramcalc model "
                     "file (use input=)";
    vc_error_format(&err, buf, sizeof buf);
    assert_true(strlen(buf) > strlen(cli) && !strcmp(buf + strlen(buf) - strlen(cli), cli));
    vc_error_format_for(&err, VC_SPELL_CLI, buf, sizeof buf);
    assert_true(strlen(buf) > strlen(cli) && !strcmp(buf + strlen(buf) - strlen(cli), cli));
    vc_error_format_for(&err, VC_SPELL_PYTHON, buf, sizeof buf);
    assert_true(strlen(buf) > strlen(py) && !strcmp(buf + strlen(buf) - strlen(py), py));
    vc_model_free(m);
}

/* Every function that takes a vc_error * clears it first (vramcalc.h, at vc_error): an error struct
 * reused after a refusal holds the new call's own error, or none. A stale error used to survive in
 * vc_serve, vc_gpu_parse, the estimator, the request and render calls: vc_set_error keeps the first
 * error, so a second call that failed reported the first call's message. The expected messages are
 * each function's own (src/engine/gpu.c, nccl.c, sweep.c, serve.c; src/api/request.c). */
static void stale(vc_error *err)
{
    memset(err, 0, sizeof *err);
    err->code = VC_ERR_USAGE;
    snprintf(err->msg, sizeof err->msg, "stale");
}

static void test_error_cleared_first(void **state)
{
    (void)state;
    vc_error err;
    int64_t n = 0;
    vc_gpu_spec gpu;
    stale(&err);
    assert_int_equal(vc_gpu_parse("h100-80gb", &gpu, &err), VC_OK);
    assert_int_equal(err.code, VC_OK);
    stale(&err);
    assert_int_equal(vc_parse_size("12XB", &n, &err), VC_ERR_USAGE);
    assert_string_not_equal(err.msg, "stale");
    stale(&err);
    assert_int_equal(vc_nccl_ring_bytes(0, 1, 0, &n, &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "MAXCHANNELS"));

    char path[1024];
    snprintf(path, sizeof path, "%s/mlp.json", VC_EXAMPLES);
    vc_model *m = NULL;
    assert_int_equal(vc_model_load_file(path, &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    vc_estimator *e = NULL;
    assert_int_equal(vc_estimator_new(m, &o, 0, &e, &err), VC_OK);
    int64_t total = 0;
    stale(&err);
    assert_int_equal(vc_estimator_total(e, 32, &total, &err), VC_OK);
    assert_int_equal(err.code, VC_OK);
    vc_estimator_free(e);
    /* --serve without a card: vc_serve's own refusal, not the stale one */
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec none;
    memset(&none, 0, sizeof none);
    vc_serve_result sr;
    o.mode = VC_MODE_GENERATE;
    stale(&err);
    assert_int_equal(vc_serve(m, &o, &so, &none, &sr, &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "the card vLLM runs on"));
    vc_model_free(m);

    vc_request *q = vc_request_new();
    assert_non_null(q);
    stale(&err);
    assert_int_equal(vc_request_set(q, "batch", "8", &err), VC_OK);
    assert_int_equal(err.code, VC_OK);
    vc_request_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_matches_project),
        cmocka_unit_test(test_library_reports_header_version),
        cmocka_unit_test(test_request_gives_struct_api_figures),
        cmocka_unit_test(test_requests_in_threads),
        cmocka_unit_test(test_error_names_options_per_front_end),
        cmocka_unit_test(test_struct_size),
        cmocka_unit_test(test_error_cleared_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
