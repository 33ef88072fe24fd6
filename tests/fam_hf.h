/*
 * fam_hf.h — what the family tests (tests/test_fam_*.c) share: a config given as a JSON string loaded
 * as vramcalc's Hugging Face reader loads config.json (no options), its parameter count, how often a
 * string occurs in the model JSON it becomes (--emit-model), a config refused naming a key, generate()'s
 * KV cache, a config written to a temporary file, a config file or string loaded at a --seq (the
 * encoder-decoders' tests), and tables of config edits and options the CLI must refuse.
 * Static: each test program its own copy.
 * Include after <cmocka.h> (fail_msg).
 */
#ifndef VC_TEST_FAM_HF_H
#define VC_TEST_FAM_HF_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vramcalc/vramcalc.h"
#include "cli_run.h"
#include "cli_spelt.h"

static inline vc_status load_js(const char *js, vc_model **m, vc_error *err)
{
    *m = NULL;
    return vc_model_load_string_hf(js, strlen(js), "config.json", NULL, m, err);
}

static inline int64_t count_of(const char *js)
{
    vc_model *m = NULL;
    vc_error err;
    if (load_js(js, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    int64_t n = vc_model_parameters(m);
    vc_model_free(m);
    return n;
}

/* occurrences of needle in the model JSON the config becomes (--emit-model) */
static inline int emitted(const char *js, const char *needle)
{
    vc_model *m = NULL;
    vc_error err;
    if (load_js(js, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    int n = 0;
    for (const char *p = vc_model_generated_json(m); (p = strstr(p, needle)); p++) n++;
    vc_model_free(m);
    return n;
}

/* js refused as a model error whose path is key (as the CLI spells it) */
static inline void fam_refused(const char *js, const char *key)
{
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js(js, &m, &err), VC_ERR_MODEL);
    assert_null(m);
    if (strcmp(CLI_PATH(&err), key)) fail_msg("%s: path %s (%s)", js, err.path, err.msg);
}

/* generate()'s KV cache bytes for js at the default options, --prompt prompt, --new-tokens new_tokens */
static inline int64_t fam_kv_cache(const char *js, int64_t prompt, int64_t new_tokens)
{
    vc_model *m = NULL;
    vc_error err;
    if (load_js(js, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.prompt = prompt;
    o.new_tokens = new_tokens;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: %s", err.path, err.msg);
    int64_t kv = r.generate.kv_cache;
    vc_result_free(&r);
    vc_model_free(m);
    return kv;
}

/* the config file at path (or the config string js) loaded as the CLI's --seq seq loads it; a failure fails
 * the test with the error as the CLI prints it */
static inline vc_model *fam_loaded(vc_status st, vc_model *m, const vc_error *err)
{
    if (st != VC_OK) {
        char msg[1200];
        vc_error_format(err, msg, sizeof msg);
        fail_msg("%s", msg);
    }
    return m;
}

static inline vc_model *fam_load_file(const char *path, int64_t seq)
{
    vc_hf_options o;
    vc_hf_options_init(&o);
    o.seq = seq;
    vc_model *m = NULL;
    vc_error err;
    vc_status st = vc_model_load_file_hf(path, &o, &m, &err);
    return fam_loaded(st, m, &err);
}

static inline vc_model *fam_load_string(const char *js, int64_t seq)
{
    vc_hf_options o;
    vc_hf_options_init(&o);
    o.seq = seq;
    vc_model *m = NULL;
    vc_error err;
    vc_status st = vc_model_load_string_hf(js, strlen(js), "config.json", &o, &m, &err);
    return fam_loaded(st, m, &err);
}

/* body written to a new file named from path's mkstemp template (XXXXXX last), for the CLI to read */
static inline void fam_write(char *path, const char *body)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(body);
    assert_int_equal(write(fd, body, n), (ssize_t)n);
    close(fd);
}

/* A refusal table's row: a config edit (or command-line options) and what the CLI's one-line error must contain. */
typedef struct {
    const char *in, *want;
} fam_refusal;

/* Each row's edit spliced after head (a config's opening keys, "{... , " without the closing brace) into a
 * temporary file, which the CLI must refuse: exit 2, its line containing the row's want. */
static inline void fam_refuse_edits(const char *head, const fam_refusal *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[] = "/tmp/vc_famXXXXXX", body[1024];
        assert_true(snprintf(body, sizeof body, "%s%s}", head, c[i].in) < (int)sizeof body);
        fam_write(path, body);
        assert_usage(path, c[i].want);
        remove(path);
    }
}

/* Each row's options after file, which the CLI must refuse: exit 2, its line containing the row's want. */
static inline void fam_refuse_options(const char *file, const fam_refusal *o, size_t n)
{
    char a[1024];
    for (size_t i = 0; i < n; i++) {
        assert_true(snprintf(a, sizeof a, "%s %s", file, o[i].in) < (int)sizeof a);
        assert_usage(a, o[i].want);
    }
}

#endif
