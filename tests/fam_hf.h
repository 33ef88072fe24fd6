/*
 * fam_hf.h — what the family tests (tests/test_fam_*.c) share: a config given as a JSON string loaded
 * as vramcalc's Hugging Face reader loads config.json (no options), its parameter count, how often a
 * string occurs in the model JSON it becomes (--emit-model), and a config written to a temporary file.
 * Static: each test program its own copy.
 * Include after <cmocka.h> (fail_msg).
 */
#ifndef VC_TEST_FAM_HF_H
#define VC_TEST_FAM_HF_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vramcalc/vramcalc.h"

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

/* body written to a new file named from path's mkstemp template (XXXXXX last), for the CLI to read */
static inline void fam_write(char *path, const char *body)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(body);
    assert_int_equal(write(fd, body, n), (ssize_t)n);
    close(fd);
}

#endif
