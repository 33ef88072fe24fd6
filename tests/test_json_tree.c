/*
 * test_json_tree.c — the loader's JSON tree (src/model/json_check.c
 * vc__json_read) against cJSON's own parser, node by node.
 *
 * The loader builds cJSON 1.7.15's tree of a validated text without
 * cJSON_ParseWithLengthOpts (one block instead of a malloc per node and
 * string). The truth is cJSON's parse of the same text: for every text the
 * validator accepts, both trees must have the same shape (child, next, the
 * first child's prev pointing at the last, as parse_array / parse_object
 * link them), the same types, keys and strings, the same valueint and the
 * same valuedouble bit for bit (-0 included). The texts: every JSON file of
 * examples/, tests/data/hf/, tests/bad/, fuzz/corpus/ and fuzz/corpus_hf/ (the
 * ones the validator accepts), hand-written escapes and numbers at the edges
 * of the integer fast path and of valueint's saturation, and 3,000
 * generated documents of random numbers, strings and nesting. And the list
 * indices the walk counts up in place: error paths at each digit boundary.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "load.h"
#include "vramcalc/vramcalc.h"

static int nodes_seen;

static void same_tree(const cJSON *a, const cJSON *b)
{
    nodes_seen++;
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->valueint, b->valueint);
    assert_memory_equal(&a->valuedouble, &b->valuedouble, sizeof a->valuedouble);
    assert_int_equal(a->string == NULL, b->string == NULL);
    if (a->string) assert_string_equal(a->string, b->string);
    assert_int_equal(a->valuestring == NULL, b->valuestring == NULL);
    if (a->valuestring) assert_string_equal(a->valuestring, b->valuestring);
    assert_int_equal(a->child == NULL, b->child == NULL);
    if (!a->child) return;
    const cJSON *ca = a->child, *cb = b->child, *pa = NULL, *pb = NULL;
    for (; ca && cb; pa = ca, pb = cb, ca = ca->next, cb = cb->next) {
        if (pa) { /* a later child's prev: the one before it */
            assert_ptr_equal(ca->prev, pa);
            assert_ptr_equal(cb->prev, pb);
        }
        same_tree(ca, cb);
    }
    assert_null(ca);
    assert_null(cb);
    /* the first child's prev: the last child (parse_array / parse_object's head->prev = current_item) */
    assert_ptr_equal(a->child->prev, pa);
    assert_ptr_equal(b->child->prev, pb);
}

/* 1 when the validator accepted text and both trees matched, 0 when it refused it */
static int check_text(const char *json, size_t len)
{
    if (len >= 3 && !memcmp(json, "\xEF\xBB\xBF", 3)) { /* as vc_model_load_*: the BOM is not part of the JSON */
        json += 3;
        len -= 3;
    }
    char *text = malloc(len + 1);
    assert_non_null(text);
    memcpy(text, json, len);
    text[len] = '\0';
    const char *at = NULL;
    char msg[300];
    long values = 0;
    cJSON *got = NULL;
    int rc = vc__json_read(text, len, &got, &at, msg, sizeof msg, &values);
    /* building the tree changes nothing of the validator's answer */
    const char *at2 = NULL;
    char msg2[300];
    long values2 = 0;
    assert_int_equal(vc__json_validate(text, len, &at2, msg2, sizeof msg2, &values2), rc);
    assert_int_equal(values2, values);
    if (rc) {
        assert_null(got);
        assert_ptr_equal(at2, at);
        assert_string_equal(msg2, msg);
        free(text);
        return 0;
    }
    cJSON *want = cJSON_ParseWithLengthOpts(text, len + 1, NULL, 1);
    assert_non_null(want);
    assert_non_null(got);
    int before = nodes_seen;
    same_tree(want, got);
    assert_int_equal(nodes_seen - before, values); /* one node per value the validator counted */
    cJSON_Delete(want);
    vc__json_free(got);
    free(text);
    return 1;
}

static int check_dir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int ok = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        char *buf = NULL;
        size_t n = 0, cap = 0;
        for (;;) {
            if (n == cap) {
                cap = cap ? cap * 2 : 65536;
                buf = realloc(buf, cap);
                assert_non_null(buf);
            }
            size_t r = fread(buf + n, 1, cap - n, f);
            if (!r) break;
            n += r;
        }
        fclose(f);
        ok += check_text(buf ? buf : "", n);
        free(buf);
    }
    closedir(d);
    return ok;
}

static void test_files(void **state)
{
    (void)state;
    static const char *const dirs[] = {VC_SRC_ROOT "/examples", VC_SRC_ROOT "/tests/data/hf", VC_SRC_ROOT "/tests/bad",
                                       VC_SRC_ROOT "/fuzz/corpus", VC_SRC_ROOT "/fuzz/corpus_hf"};
    int ok = 0;
    nodes_seen = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) ok += check_dir(dirs[i]);
    /* examples/ (19) and tests/data/hf/ (64) alone are valid JSON: most of the corpora are too */
    assert_true(ok > 19 + 64);
    print_message("json_tree: %d files accepted by the validator, %d nodes compared\n", ok, nodes_seen);
}

static void test_edges(void **state)
{
    (void)state;
    static const char *const texts[] = {
        /* escapes: every one cJSON's parse_string decodes, \u to 1-4 UTF-8 bytes, a surrogate pair */
        "{\"a\\\"b\": \"\\b\\f\\n\\r\\t\\\"\\\\\\/\", \"u\": \"\\u0041\\u00e9\\u07ff\\u0800\\u20ac\\uffff\\ud83d\\ude00\\udbff\\udfff\"}",
        "[\"caf\xc3\xa9\", \"\xff\xfe raw bytes\", \"\", \"\\u0001\"]",
        /* the integer fast path's edge: 15 digits (read here) and 16 (strtod), -0, 2^53 + 1 */
        "[0, -0, 1, -1, 999999999999999, -999999999999999, 1000000000000000, 9007199254740993, 12345678901234567890]",
        /* valueint's saturation: INT_MAX, INT_MIN and past them */
        "[2147483646, 2147483647, 2147483648, -2147483647, -2147483648, -2147483649, 1e10, -1e10]",
        /* fractions and exponents: strtod with the locale's decimal point */
        "[0.1, -0.5, 1e3, 1E3, 1e+3, 1e-3, 1.5E-7, 2.5e308, 1e400, -1e400, 4.9e-324, 1e-400, 0.30000000000000004]",
        /* the fraction fast path's edge: 15 digits (u / 10^frac) and 16 (strtod), -0.0, leading zeros counted */
        "[0.0, -0.0, 0.5, 0.2, 0.3, 0.7, 0.9, 1.1, 3.14159265358979, 123456789.012345, 1234567890.123456, "
        "0.00000000000001, 0.000000000000001, 99999999999999.9, 0.1e1, 2.2250738585072014]",
        "{\"x\": {\"y\": [[], {}, [[[1]]], {\"z\": null}], \"t\": true, \"f\": false}, \"n\": null}",
        "  \r\n\t[ 1 , 2 ,\n 3 ]\n  ",
        "\"top-level string\"",
        "17",
        "{\"dup\": 1, \"dup\": 2}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) assert_int_equal(check_text(texts[i], strlen(texts[i])), 1);
}

/* A deterministic generator of valid JSON: numbers of every form the grammar allows, strings with escapes. */
static uint64_t rng = 0x9E3779B97F4A7C15u;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

typedef struct {
    char *s;
    size_t n, cap;
} sb;

static void put(sb *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int w = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if ((size_t)w < b->cap - b->n) {
            b->n += (size_t)w;
            return;
        }
        b->cap = b->cap * 2 + (size_t)w + 64;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
}

static void gen_number(sb *b)
{
    if (rnd(2)) put(b, "-");
    int digits = 1 + (int)rnd(20);
    put(b, "%u", 1 + rnd(9));
    for (int i = 1; i < digits; i++) put(b, "%u", rnd(10));
    if (rnd(3) == 0) {
        put(b, ".");
        for (int i = 0, n = 1 + (int)rnd(17); i < n; i++) put(b, "%u", rnd(10));
    }
    if (rnd(4) == 0) put(b, "%c%s%u", rnd(2) ? 'e' : 'E', rnd(3) == 0 ? "-" : rnd(2) ? "+" : "", rnd(330));
}

static void gen_string(sb *b)
{
    static const char *const pieces[] = {"a", "Z", " ", "\\n", "\\t", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\r",
                                         "\\u00e9", "\\u4e2d", "\\ud83d\\ude00", "\xc3\xa9", "\xe2\x82\xac", "\\u007f"};
    put(b, "\"");
    for (int i = 0, n = (int)rnd(12); i < n; i++) put(b, "%s", pieces[rnd(sizeof pieces / sizeof *pieces)]);
    put(b, "\"");
}

static void gen_value(sb *b, int depth)
{
    unsigned k = rnd(depth > 4 ? 5 : 7);
    if (k == 0) gen_number(b);
    else if (k == 1) gen_string(b);
    else if (k == 2) put(b, "%s", rnd(3) == 0 ? "null" : rnd(2) ? "true" : "false");
    else if (k == 3) put(b, "%u", rnd(100));
    else if (k == 4) put(b, "0");
    else {
        bool obj = k == 5;
        put(b, obj ? "{" : "[");
        for (int i = 0, n = (int)rnd(6); i < n; i++) {
            if (i) put(b, rnd(2) ? ", " : ",");
            if (obj) {
                gen_string(b);
                put(b, rnd(2) ? ": " : ":");
            }
            gen_value(b, depth + 1);
        }
        put(b, obj ? "}" : "]");
    }
}

static void test_generated(void **state)
{
    (void)state;
    sb b = {NULL, 0, 0};
    for (int i = 0; i < 3000; i++) {
        b.n = 0;
        put(&b, "%s", "");
        gen_value(&b, 0);
        assert_int_equal(check_text(b.s, b.n), 1);
    }
    free(b.s);
}

/* The walk writes a list's "[i]" by counting up in place (load.c index_next): an error in the last of n
 * layers names layers[0].layers[n-1], at each digit boundary (38a134e formatted each index with
 * vc_cat_index; these paths are its output on the same files) */
static void test_list_index_paths(void **state)
{
    (void)state;
    static const int ns[] = {1, 2, 10, 11, 100, 101, 1000, 1001, 10000, 10001};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        sb b = {NULL, 0, 0};
        put(&b, "{\"input\": [4], \"layers\": [{\"type\": \"Sequential\", \"layers\": [");
        for (int i = 0; i < ns[t]; i++) put(&b, i + 1 < ns[t] ? "{\"type\": \"ReLU\"}, " : "{\"type\": \"ReLU\", \"bogus\": 1}");
        put(&b, "]}]}");
        vc_model *m = NULL;
        vc_error err;
        assert_int_equal(vc_model_load_string(b.s, b.n, "paths.json", &m, &err), VC_ERR_MODEL);
        char want[64];
        snprintf(want, sizeof want, "layers[0].layers[%d].bogus", ns[t] - 1);
        assert_string_equal(err.path, want);
        free(b.s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_index_paths),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_generated),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
