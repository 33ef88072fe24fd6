/*
 * load.c — model files: JSON -> validated, shape-checked instances.
 *
 * The loader owns everything about the file format that is not a layer
 * kind's own fields: the model keys, scopes and names, `inputs`, `repeat`,
 * `frozen`, `checkpoint`, `tie`, Sequential, and every error's JSON path and
 * position. A model file is untrusted input: every error is one line naming
 * the file, the line:col, the JSON path and what was expected and found
 * (docs/limits.md lists the limits and their errors).
 *
 * Loading runs in three steps:
 *  1. jv_*: a strict RFC 8259 validator over the raw text, with a precise
 *     message and position for every syntax error (cJSON reports neither
 *     well), a nesting limit, and nothing cJSON would parse differently;
 *  2. cJSON builds the tree (it cannot fail on validated text except for
 *     memory);
 *  3. the semantic walk below. Its errors carry a JSON path only; on the
 *     way out, loc_* walks the (valid) text along that path to give the
 *     error its line:col.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "hf.h"
#include "model.h"
#include "util.h"

/* JSON nesting: every Sequential level is two (its object and its list), the
 * top level three (root, layers, layer), and values inside a layer
 * (inputs: {"x": {"shape": [..]}}) a few more. */
#define JSON_MAX_DEPTH (2 * VC_MAX_DEPTH + 16)
/* cJSON 1.7 reads at most 63 characters of a number (parse_number). */
#define JSON_MAX_NUMBER 63
/* JSON values in a file: cJSON takes ~100 bytes per value, so this bounds
 * the tree at ~400 MiB (a 64 MiB file of "0,0,0,..." would need ~3 GiB).
 * A flat list of a million ReLU layers is 2 million values. */
#define JSON_MAX_VALUES 4000000
/* Parameters / buffers of one model: byte counts of 2^56 elements still fit
 * 64-bit arithmetic with room for every copy (gradients, states, masters). */
#define MAX_TENSOR_ELEMS (INT64_C(1) << 56)

/* ----------------------------------------------------- positions in text */

/* 1-based line and column (in characters: UTF-8 continuation bytes do not
 * count) of `at` in text. */
static void line_col(const char *text, size_t len, const char *at, int *line, int *col)
{
    int l = 1, c = 1;
    if (at < text) at = text;
    if (at > text + len) at = text + len;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)*p & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* --------------------------------------------------- 1. the JSON validator */

typedef struct {
    const char *b, *p, *e; /* text, cursor, end */
    const char *at;        /* error position */
    char msg[300];
    int depth;
    long values;
} jv;

static int jv_fail(jv *v, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int jv_fail(jv *v, const char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
    v->at = at;
    return -1;
}

static void jv_ws(jv *v)
{
    while (v->p < v->e && (*v->p == ' ' || *v->p == '\t' || *v->p == '\n' || *v->p == '\r')) v->p++;
}

static bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* What is at p, for "expected X, got Y". */
static void jv_token(const jv *v, const char *p, char *buf, size_t n)
{
    if (p >= v->e) {
        snprintf(buf, n, "the end of the file");
        return;
    }
    unsigned char c = (unsigned char)*p;
    if (is_word((char)c) || c == '-') {
        int len = 0;
        while (p + len < v->e && len < 24 && (is_word(p[len]) || p[len] == '-' || p[len] == '.' || p[len] == '+')) len++;
        snprintf(buf, n, "'%.*s'", len, p);
    } else if (c == '\'') {
        snprintf(buf, n, "a single quote");
    } else if (c >= 0x20 && c < 0x7f) {
        snprintf(buf, n, "'%c'", c);
    } else {
        snprintf(buf, n, "the byte 0x%02x", c);
    }
}

/* An explanation for tokens people write in JSON by mistake; NULL if none. */
static const char *jv_hint(const jv *v, const char *p)
{
    if (p >= v->e) return NULL;
    size_t rest = (size_t)(v->e - p);
#define STARTS(s) (rest >= sizeof(s) - 1 && !memcmp(p, s, sizeof(s) - 1) && \
                   (rest == sizeof(s) - 1 || !is_word(p[sizeof(s) - 1])))
    if (STARTS("NaN") || STARTS("nan") || STARTS("Infinity") || STARTS("-Infinity") || STARTS("inf") || STARTS("-inf"))
        return "NaN and Infinity are not JSON numbers";
    if (STARTS("True") || STARTS("False") || STARTS("TRUE") || STARTS("FALSE")) return "JSON writes true and false in lower case";
    if (STARTS("None") || STARTS("NULL") || STARTS("Null")) return "JSON writes null";
    if (STARTS("undefined")) return "use null";
#undef STARTS
    if (is_word(*p)) { /* a misspelt literal: "tru", "flase", "nul" */
        char w[16];
        size_t n = 0;
        while (n < rest && n < sizeof w - 1 && is_word(p[n])) n++;
        memcpy(w, p, n);
        w[n] = '\0';
        if (vc_edit_distance(w, "true") <= 2) return "did you mean true?";
        if (vc_edit_distance(w, "false") <= 2) return "did you mean false?";
        if (vc_edit_distance(w, "null") <= 2) return "did you mean null?";
    }
    if (*p == '\'') return "JSON strings use double quotes";
    if (*p == '/') return "JSON has no comments";
    if (*p == '+') return "JSON numbers have no '+' sign";
    if (*p == '.') return "a JSON number starts with a digit (0.5, not .5)";
    if (rest >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) return "a byte-order mark may only start the file";
    return NULL;
}

static int jv_unexpected(jv *v, const char *p, const char *expected)
{
    char tok[64];
    jv_token(v, p, tok, sizeof tok);
    const char *hint = jv_hint(v, p);
    return jv_fail(v, p, "invalid JSON: expected %s, got %s%s%s", expected, tok, hint ? "; " : "", hint ? hint : "");
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* 4 hex digits at p (p + 4 <= e checked by the caller): the code unit or -1. */
static long hex4(const char *p)
{
    long u = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return -1;
        u = u * 16 + h;
    }
    return u;
}

static int jv_string(jv *v)
{
    const char *start = v->p++;
    for (;;) {
        if (v->p >= v->e) return jv_fail(v, start, "invalid JSON: this string is not closed (no '\"' before the end of the file)");
        unsigned char c = (unsigned char)*v->p;
        if (c == '"') {
            v->p++;
            return 0;
        }
        if (c == '\n' || c == '\r') return jv_fail(v, start, "invalid JSON: this string is not closed on its line (a missing '\"'?)");
        if (c < 0x20) return jv_fail(v, v->p, "invalid JSON: control character 0x%02x in a string (write it as \\u%04x)", c, c);
        if (c != '\\') {
            v->p++;
            continue;
        }
        const char *esc = v->p++;
        if (v->p >= v->e) return jv_fail(v, start, "invalid JSON: this string is not closed (no '\"' before the end of the file)");
        switch (*v->p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            v->p++;
            break;
        case 'u': {
            long u = v->e - v->p > 4 ? hex4(v->p + 1) : -1;
            if (u < 0) return jv_fail(v, esc, "invalid JSON: \\u must be followed by 4 hex digits");
            v->p += 5;
            if (u == 0) return jv_fail(v, esc, "invalid JSON: \\u0000 (a NUL character) is not allowed in a string");
            if (u >= 0xDC00 && u <= 0xDFFF) return jv_fail(v, esc, "invalid JSON: \\u%04lx is a lone low surrogate", u);
            if (u >= 0xD800 && u <= 0xDBFF) {
                long lo = v->e - v->p > 5 && v->p[0] == '\\' && v->p[1] == 'u' ? hex4(v->p + 2) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return jv_fail(v, esc, "invalid JSON: \\u%04lx is a high surrogate without a low surrogate after it", u);
                v->p += 6;
            }
            break;
        }
        default: {
            unsigned char x = (unsigned char)*v->p;
            if (x >= 0x20 && x < 0x7f) return jv_fail(v, esc, "invalid JSON: unknown escape '\\%c' in a string", x);
            return jv_fail(v, esc, "invalid JSON: unknown escape in a string");
        }
        }
    }
}

static bool digit(const jv *v, const char *p) { return p < v->e && *p >= '0' && *p <= '9'; }

static int jv_number(jv *v)
{
    const char *s = v->p;
    if (*v->p == '-') v->p++;
    if (!digit(v, v->p)) return jv_unexpected(v, s, "a value");
    if (*v->p == '0' && digit(v, v->p + 1)) return jv_fail(v, s, "invalid JSON: a number may not start with 0 (write it without leading zeros)");
    while (digit(v, v->p)) v->p++;
    if (v->p < v->e && *v->p == '.') {
        v->p++;
        if (!digit(v, v->p)) return jv_fail(v, s, "invalid JSON: a digit must follow the '.' of a number");
        while (digit(v, v->p)) v->p++;
    }
    if (v->p < v->e && (*v->p == 'e' || *v->p == 'E')) {
        v->p++;
        if (v->p < v->e && (*v->p == '+' || *v->p == '-')) v->p++;
        if (!digit(v, v->p)) return jv_fail(v, s, "invalid JSON: a digit must follow the exponent of a number");
        while (digit(v, v->p)) v->p++;
    }
    if (v->p - s > JSON_MAX_NUMBER) return jv_fail(v, s, "invalid JSON: a number longer than %d characters", JSON_MAX_NUMBER);
    if (v->p < v->e && (is_word(*v->p) || *v->p == '.')) return jv_unexpected(v, v->p, "',' or the end of the value after a number");
    return 0;
}

static int jv_value(jv *v);

static void jv_where(const jv *v, const char *open, char *buf, size_t n)
{
    int l, c;
    line_col(v->b, (size_t)(v->e - v->b), open, &l, &c);
    snprintf(buf, n, "%d:%d", l, c);
}

static int jv_container(jv *v)
{
    const char *open = v->p;
    bool obj = *v->p == '{';
    char close = obj ? '}' : ']';
    if (++v->depth > JSON_MAX_DEPTH)
        return jv_fail(v, v->p, "nesting deeper than %d levels of JSON lists and objects (Sequential blocks may nest %d deep)",
                       JSON_MAX_DEPTH, VC_MAX_DEPTH);
    v->p++;
    jv_ws(v);
    if (v->p < v->e && *v->p == close) {
        v->p++;
        v->depth--;
        return 0;
    }
    for (;;) {
        jv_ws(v);
        if (obj) {
            if (v->p < v->e && *v->p == '}') return jv_fail(v, v->p, "invalid JSON: a trailing comma before '}'");
            if (v->p >= v->e || *v->p != '"') {
                if (v->p < v->e && is_word(*v->p) && !jv_hint(v, v->p)) {
                    char tok[64];
                    jv_token(v, v->p, tok, sizeof tok);
                    return jv_fail(v, v->p, "invalid JSON: an object key must be in double quotes, got %s", tok);
                }
                if (v->p >= v->e) goto eof;
                return jv_unexpected(v, v->p, "a key in double quotes");
            }
            if (jv_string(v)) return -1;
            jv_ws(v);
            if (v->p >= v->e) goto eof;
            if (*v->p != ':') return jv_unexpected(v, v->p, "':' after the key");
            v->p++;
            jv_ws(v);
        } else if (v->p < v->e && *v->p == ']') {
            return jv_fail(v, v->p, "invalid JSON: a trailing comma before ']'");
        }
        if (v->p >= v->e) goto eof;
        if (jv_value(v)) return -1;
        jv_ws(v);
        if (v->p >= v->e) goto eof;
        if (*v->p == ',') {
            v->p++;
            continue;
        }
        if (*v->p == close) {
            v->p++;
            v->depth--;
            return 0;
        }
        if (obj && (*v->p == '"' || is_word(*v->p))) return jv_unexpected(v, v->p, "',' between the members of an object");
        if (!obj && (*v->p == '"' || *v->p == '{' || *v->p == '[' || is_word(*v->p) || *v->p == '-'))
            return jv_unexpected(v, v->p, "',' between the items of a list");
        return jv_unexpected(v, v->p, obj ? "',' or '}'" : "',' or ']'");
    }
eof: {
    char w[32];
    jv_where(v, open, w, sizeof w);
    return jv_fail(v, v->e, "invalid JSON: unexpected end of the file: the %s opened at %s is not closed",
                   obj ? "object" : "list", w);
}
}

static int jv_value(jv *v)
{
    if (v->p >= v->e) return jv_unexpected(v, v->p, "a value");
    if (++v->values > JSON_MAX_VALUES)
        return jv_fail(v, v->p, "more than %d JSON values in the file: the limit (a model needs far fewer)", JSON_MAX_VALUES);
    switch (*v->p) {
    case '{': case '[': return jv_container(v);
    case '"': return jv_string(v);
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        if (*v->p == '-' && jv_hint(v, v->p)) return jv_unexpected(v, v->p, "a value");
        return jv_number(v);
    default: break;
    }
    static const char *const lit[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lit[i]);
        if ((size_t)(v->e - v->p) >= n && !memcmp(v->p, lit[i], n) && (v->p + n == v->e || !is_word(v->p[n]))) {
            v->p += n;
            return 0;
        }
    }
    return jv_unexpected(v, v->p, "a value");
}

/* 0 when text[0..len) is one valid JSON value; else -1 with *at and msg. */
static int json_validate(const char *text, size_t len, const char **at, char *msg, size_t n)
{
    jv v = {text, text, text + len, NULL, "", 0, 0};
    jv_ws(&v);
    int rc = jv_value(&v);
    if (!rc) {
        jv_ws(&v);
        if (v.p < v.e) {
            char tok[64];
            jv_token(&v, v.p, tok, sizeof tok);
            rc = jv_fail(&v, v.p, "invalid JSON: %s after the end of the top-level value (one JSON object per file)", tok);
        }
    }
    if (rc) {
        *at = v.at;
        snprintf(msg, n, "%s", v.msg);
    }
    return rc;
}

/* ------------------------------------------- 2. locating a JSON path in text */

/* These walk text already accepted by json_validate. */

static const char *loc_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static const char *loc_skip_string(const char *p, const char *e)
{
    for (p++; p < e && *p != '"'; p++)
        if (*p == '\\') p++;
    return p < e ? p + 1 : e;
}

static const char *loc_skip_value(const char *p, const char *e)
{
    if (p >= e) return e;
    if (*p == '"') return loc_skip_string(p, e);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; p < e; p++) {
            if (*p == '"') {
                p = loc_skip_string(p, e) - 1;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0) return p + 1;
            }
        }
        return e;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') p++;
    return p;
}

static void put_utf8(char *buf, size_t n, size_t *o, unsigned long u)
{
    unsigned char t[4];
    size_t k;
    if (u < 0x80) t[0] = (unsigned char)u, k = 1;
    else if (u < 0x800) t[0] = (unsigned char)(0xC0 | (u >> 6)), t[1] = (unsigned char)(0x80 | (u & 0x3F)), k = 2;
    else if (u < 0x10000)
        t[0] = (unsigned char)(0xE0 | (u >> 12)), t[1] = (unsigned char)(0x80 | ((u >> 6) & 0x3F)),
        t[2] = (unsigned char)(0x80 | (u & 0x3F)), k = 3;
    else
        t[0] = (unsigned char)(0xF0 | (u >> 18)), t[1] = (unsigned char)(0x80 | ((u >> 12) & 0x3F)),
        t[2] = (unsigned char)(0x80 | ((u >> 6) & 0x3F)), t[3] = (unsigned char)(0x80 | (u & 0x3F)), k = 4;
    for (size_t i = 0; i < k && *o + 1 < n; i++) buf[(*o)++] = (char)t[i];
}

/* Decodes the (valid) JSON string at p into buf as cJSON does, then escapes
 * it as error paths are escaped (vc_escape), so it compares with a path. */
static void loc_key(const char *p, const char *e, char *buf, size_t n)
{
    char raw[600];
    size_t o = 0;
    for (p++; p < e && *p != '"' && o + 1 < sizeof raw; p++) {
        if (*p != '\\') {
            raw[o++] = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'b': raw[o++] = '\b'; break;
        case 'f': raw[o++] = '\f'; break;
        case 'n': raw[o++] = '\n'; break;
        case 'r': raw[o++] = '\r'; break;
        case 't': raw[o++] = '\t'; break;
        case 'u': {
            unsigned long u = (unsigned long)hex4(p + 1);
            p += 4;
            if (u >= 0xD800 && u <= 0xDBFF && p + 6 < e) {
                unsigned long lo = (unsigned long)hex4(p + 3);
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            put_utf8(raw, sizeof raw, &o, u);
            break;
        }
        default: raw[o++] = *p; break;
        }
    }
    raw[o] = '\0';
    vc_escape(buf, n, raw);
}

/* Walks `path` (escaped, as in vc_error.path: "layers[3].kernel_size",
 * "inputs.src.shape[1]") from the value at p. Sets *val to the deepest value
 * reached and *key to its key (NULL for list items and the root); `nth`
 * picks the nth occurrence (1-based) of a duplicated last key. Returns true
 * when the whole path was found. */
static bool loc_walk(const char *p, const char *e, const char *path, int nth, const char **val, const char **key)
{
    p = loc_ws(p, e);
    *val = p;
    if (!*path) return true;
    if (*path == '[') {
        char *end;
        long idx = strtol(path + 1, &end, 10);
        if (p >= e || *p != '[' || end == path + 1 || *end != ']' || idx < 0) return false;
        const char *q = loc_ws(p + 1, e);
        for (long i = 0; q < e && *q != ']'; i++) {
            if (i == idx) {
                *key = NULL;
                return loc_walk(q, e, end + 1, nth, val, key);
            }
            q = loc_ws(loc_skip_value(q, e), e);
            if (q < e && *q == ',') q = loc_ws(q + 1, e);
        }
        return false;
    }
    if (*path == '.') path++;
    if (p >= e || *p != '{') return false;
    const char *q = loc_ws(p + 1, e);
    const char *best_val = NULL, *best_key = NULL;
    int seen = 0;
    while (q < e && *q == '"') {
        char k[300];
        loc_key(q, e, k, sizeof k);
        const char *kp = q;
        q = loc_ws(loc_skip_string(q, e), e);
        if (q < e && *q == ':') q = loc_ws(q + 1, e);
        size_t kl = strlen(k);
        if (!strncmp(path, k, kl) && (path[kl] == '\0' || path[kl] == '.' || path[kl] == '[')) {
            if (path[kl] == '\0' && ++seen < nth) {
                best_val = q;
                best_key = kp;
            } else {
                const char *v2 = NULL, *k2 = kp;
                if (loc_walk(q, e, path + kl, nth, &v2, &k2)) {
                    *val = v2;
                    *key = k2;
                    return true;
                }
                if (!best_val) {
                    best_val = v2;
                    best_key = k2;
                }
            }
        }
        q = loc_ws(loc_skip_value(q, e), e);
        if (q < e && *q == ',') q = loc_ws(q + 1, e);
    }
    if (best_val) {
        *val = best_val;
        *key = best_key;
    }
    return false;
}

/* Sets err->line/col from err->path: the value's position, or its key's
 * with at_key (unknown and duplicate keys); the deepest part of the path
 * that exists when the rest does not (a missing key: its object). */
static void locate_error(const char *text, size_t len, vc_error *err, bool at_key, int nth)
{
    if (!err || err->code == VC_OK || err->line > 0 || !text) return;
    const char *val = NULL, *key = NULL;
    bool full = loc_walk(text, text + len, err->path, nth > 0 ? nth : 1, &val, &key);
    const char *at = full && at_key && key ? key : val;
    if (!at || at >= text + len) return;
    line_col(text, len, at, &err->line, &err->col);
}

/* ------------------------------------------------------ JSON value helpers */

/* Everything within ±2^40 (VC_MAX_DIM_SIZE) is exact in a double. */
#define MAX_INT VC_MAX_DIM_SIZE

/* The shortest text that reads back as d ("0.1", not 0.10000000000000001). */
static void fmt_double(double d, char *buf, size_t n)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) return;
    }
}

static void describe(const cJSON *v, char *buf, size_t n)
{
    if (!v) snprintf(buf, n, "nothing");
    else if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) snprintf(buf, n, "a number beyond the range of a double");
    else if (cJSON_IsNumber(v)) fmt_double(v->valuedouble, buf, n);
    else if (cJSON_IsString(v))
        snprintf(buf, n, "the string \"%.40s%s\"", v->valuestring, strlen(v->valuestring) > 40 ? "..." : "");
    else if (cJSON_IsBool(v)) snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v)) snprintf(buf, n, "null");
    else if (cJSON_IsArray(v)) snprintf(buf, n, "a list");
    else if (cJSON_IsObject(v)) snprintf(buf, n, "an object");
    else snprintf(buf, n, "an invalid value");
}

/* An exact integer within ±2^40: 0 ok, -1 not a number / not integral /
 * not finite, -2 an integer beyond ±2^40. */
static int json_int(const cJSON *v, int64_t *out)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!isfinite(d)) return -1;
    if (d != floor(d)) return -1;
    if (fabs(d) > (double)MAX_INT) return -2;
    *out = (int64_t)d;
    return 0;
}

static const char *int_expect(int64_t min, char *buf, size_t n)
{
    if (min == 1) return "a positive integer";
    if (min == 0) return "a non-negative integer";
    if (min < -MAX_INT) return "an integer";
    snprintf(buf, n, "an integer of at least %lld", (long long)min);
    return buf;
}

/* The candidate nearest to word ("did you mean"), or NULL when none is close. */
static const char *nearest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int bd = 99;
    for (int i = 0; i < n; i++) {
        if (!strcasecmp(word, cands[i])) return cands[i];
        int d = vc_edit_distance(word, cands[i]);
        if (d < bd) {
            bd = d;
            best = cands[i];
        }
    }
    size_t len = strlen(word);
    return bd <= (len < 5 ? 1 : len < 9 ? 2 : 3) ? best : NULL;
}

/* ------------------------------------------------------------------ vc_args */

#define MAX_KNOWN 96

struct vc_args {
    const cJSON *obj;   /* must stay the first member: layers/pooling.c and resample.c read it */
    vc_error *err;
    const char *path;   /* the layer's JSON path */
    const char *kind;
    const char *known[MAX_KNOWN];
    int nknown;
    bool probe;         /* collecting the kind's keys: missing keys get placeholders */
    char failed[64];    /* the key of the first error */
};

static void known(vc_args *a, const char *key)
{
    for (int i = 0; i < a->nknown; i++)
        if (!strcmp(a->known[i], key)) return;
    if (a->nknown < MAX_KNOWN) a->known[a->nknown++] = key;
}

void vc_arg_known(vc_args *a, const char *key) { known(a, key); }

static int arg_failv(vc_args *a, const char *key, const char *fmt, va_list ap)
{
    char path[256], msg[400];
    if (key) snprintf(path, sizeof path, "%s.%s", a->path, key);
    else snprintf(path, sizeof path, "%s", a->path);
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (!a->failed[0] && key) snprintf(a->failed, sizeof a->failed, "%s", key);
    vc_set_error(a->err, VC_ERR_MODEL, path, "%s", msg);
    return -1;
}

int vc_arg_fail(vc_args *a, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    arg_failv(a, key, fmt, ap);
    va_end(ap);
    return -1;
}

static const cJSON *get(vc_args *a, const char *key)
{
    known(a, key);
    return cJSON_GetObjectItemCaseSensitive(a->obj, key);
}

static int json_type(const cJSON *v)
{
    if (!v) return 0;
    if (cJSON_IsNumber(v)) return 1;
    if (cJSON_IsString(v)) return 2;
    if (cJSON_IsArray(v)) return 3;
    if (cJSON_IsBool(v)) return 4;
    if (cJSON_IsNull(v)) return 5;
    return 6;
}

int vc_arg_type(vc_args *a, const char *key) { return json_type(get(a, key)); }

int vc_arg_len(vc_args *a, const char *key)
{
    const cJSON *v = get(a, key);
    return cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
}

int vc_arg_elem(vc_args *a, const char *key, int i, double *num)
{
    const cJSON *v = get(a, key);
    const cJSON *e = cJSON_IsArray(v) && i >= 0 ? cJSON_GetArrayItem(v, i) : NULL;
    if (cJSON_IsNumber(e)) *num = e->valuedouble;
    return json_type(e);
}

static int one_int(vc_args *a, const char *key, const cJSON *v, int64_t min, int64_t *out)
{
    char got[80], eb[48];
    int64_t x = 0;
    int rc = json_int(v, &x);
    if (rc == 0 && x >= min) {
        *out = x;
        return 0;
    }
    describe(v, got, sizeof got);
    if (rc == -2 && min >= 0 && !(v->valuedouble < 0))
        return vc_arg_fail(a, key, "expected %s of at most 2^40 (%lld), got %s", int_expect(min, eb, sizeof eb),
                           (long long)MAX_INT, got);
    if (rc == -2 && min < 0) return vc_arg_fail(a, key, "expected an integer from -2^40 to 2^40, got %s", got);
    return vc_arg_fail(a, key, "expected %s, got %s", int_expect(min, eb, sizeof eb), got);
}

static int64_t placeholder(int64_t min) { return min > 1 ? min : 1; }

int vc_arg_int(vc_args *a, const char *key, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        if (def == VC_REQUIRED && a->probe) def = placeholder(min);
        char eb[48];
        if (def == VC_REQUIRED)
            return vc_arg_fail(a, key, "missing (%s requires %s, %s)", a->kind, key, int_expect(min, eb, sizeof eb));
        *out = def;
        return 0;
    }
    return one_int(a, key, v, min, out);
}

int vc_arg_ints(vc_args *a, const char *key, int n, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = get(a, key);
    char eb[48];
    if (!v) {
        if (def == VC_REQUIRED && a->probe) def = placeholder(min);
        if (def == VC_REQUIRED)
            return vc_arg_fail(a, key, "missing (%s requires %s, %s or a list of %d)", a->kind, key,
                               int_expect(min, eb, sizeof eb), n);
        for (int i = 0; i < n; i++) out[i] = def;
        return 0;
    }
    if (!cJSON_IsArray(v)) {
        int64_t x;
        if (!cJSON_IsNumber(v)) {
            char got[80];
            describe(v, got, sizeof got);
            return vc_arg_fail(a, key, "expected %s or a list of %d, got %s", int_expect(min, eb, sizeof eb), n, got);
        }
        if (one_int(a, key, v, min, &x)) return -1;
        for (int i = 0; i < n; i++) out[i] = x;
        return 0;
    }
    int len = cJSON_GetArraySize(v);
    if (len != n)
        return vc_arg_fail(a, key, "expected %s or a list of %d, got a list of %d", int_expect(min, eb, sizeof eb), n, len);
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char k[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        if (one_int(a, k, e, min, &out[i])) return -1;
    }
    return 0;
}

int vc_arg_list(vc_args *a, const char *key, bool required, int64_t min, int64_t *out, int *n)
{
    const cJSON *v = get(a, key);
    *n = 0;
    if (!v && required && a->probe) {
        out[0] = placeholder(min);
        *n = 1;
        return 0;
    }
    if (!v) return required ? vc_arg_fail(a, key, "missing (%s requires %s, a list of integers)", a->kind, key) : 0;
    if (!cJSON_IsArray(v)) {
        char got[80];
        describe(v, got, sizeof got);
        return vc_arg_fail(a, key, "expected a list of integers, got %s", got);
    }
    int len = cJSON_GetArraySize(v);
    if (len < 1 || len > VC_MAX_DIMS)
        return len ? vc_arg_fail(a, key, "expected a list of 1 to %d integers, got a list of %d", VC_MAX_DIMS, len)
                   : vc_arg_fail(a, key, "expected a list of 1 to %d integers, got an empty list", VC_MAX_DIMS);
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char k[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        if (one_int(a, k, e, min, &out[i])) return -1;
    }
    *n = len;
    return 0;
}

int vc_arg_bool(vc_args *a, const char *key, bool def, bool *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) {
        char got[80];
        describe(v, got, sizeof got);
        return vc_arg_fail(a, key, "expected true or false, got %s", got);
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

int vc_arg_float(vc_args *a, const char *key, double def, double min, double max, double *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !(v->valuedouble >= min) || !(v->valuedouble <= max)) {
        char got[80], lo[32], hi[32];
        describe(v, got, sizeof got);
        fmt_double(min, lo, sizeof lo);
        fmt_double(max, hi, sizeof hi);
        if (min <= -1e300 && max >= 1e300) return vc_arg_fail(a, key, "expected a number, got %s", got);
        if (max >= 1e300) return vc_arg_fail(a, key, "expected a number of at least %s, got %s", lo, got);
        if (min <= -1e300) return vc_arg_fail(a, key, "expected a number of at most %s, got %s", hi, got);
        return vc_arg_fail(a, key, "expected a number from %s to %s, got %s", lo, hi, got);
    }
    *out = v->valuedouble;
    return 0;
}

int vc_arg_enum(vc_args *a, const char *key, const char *const *choices, int def, int *out)
{
    const cJSON *v = get(a, key);
    if (!v && def < 0 && a->probe) def = 0;
    char list[256] = "";
    size_t used = 0;
    int nc = 0;
    for (int i = 0; choices[i]; i++, nc++) {
        if (v && cJSON_IsString(v) && !strcmp(v->valuestring, choices[i])) {
            *out = i;
            return 0;
        }
        int w = snprintf(list + used, sizeof list - used, "%s\"%s\"", i ? ", " : "", choices[i]);
        if (w > 0) used = used + (size_t)w < sizeof list ? used + (size_t)w : sizeof list - 1;
    }
    if (!v) {
        if (def < 0) return vc_arg_fail(a, key, "missing (%s requires %s, one of %s)", a->kind, key, list);
        *out = def;
        return 0;
    }
    char got[80];
    describe(v, got, sizeof got);
    const char *s = cJSON_IsString(v) ? nearest(v->valuestring, choices, nc) : NULL;
    if (s) return vc_arg_fail(a, key, "expected one of %s, got %s (did you mean \"%s\"?)", list, got, s);
    return vc_arg_fail(a, key, "expected one of %s, got %s", list, got);
}

/* --------------------------------------------------------------- vc_setup */

struct vc_setup_priv {
    vc_error *err;
    const char *path;
    int np, nb;
    int64_t pn[VC_MAX_PARAMS];
    char pname[VC_MAX_PARAMS][64];
    int8_t pnd[VC_MAX_PARAMS];
    unsigned pflags[VC_MAX_PARAMS];
    int64_t pdims[VC_MAX_PARAMS][VC_MAX_DIMS];
    int64_t bn[VC_MAX_PARAMS];
    vc_dtype bdt[VC_MAX_PARAMS];
};

int vc_fail(vc_setup *s, const char *key, const char *fmt, ...)
{
    char path[256], msg[400];
    if (key) snprintf(path, sizeof path, "%s.%s", s->priv->path, key);
    else snprintf(path, sizeof path, "%s", s->priv->path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vc_set_error(s->priv->err, VC_ERR_MODEL, path, "%s", msg);
    return -1;
}

int vc_mul(vc_setup *s, int64_t a, int64_t b, int64_t *out)
{
    if (__builtin_mul_overflow(a, b, out)) {
        vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path, "the size %lld * %lld overflows 64-bit arithmetic",
                     (long long)a, (long long)b);
        return -1;
    }
    return 0;
}

int vc_add(vc_setup *s, int64_t a, int64_t b, int64_t *out)
{
    if (__builtin_add_overflow(a, b, out)) {
        vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path, "the size %lld + %lld overflows 64-bit arithmetic",
                     (long long)a, (long long)b);
        return -1;
    }
    return 0;
}

static int check_tensor(vc_setup *s, const char *what, const char *name, int64_t numel)
{
    if (numel < 0)
        return vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path,
                            "%s %s: its size computation overflowed (got %lld elements)", what, name ? name : "", (long long)numel),
               -1;
    if (numel > MAX_TENSOR_ELEMS)
        return vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path,
                            "%s %s has %lld elements, more than the limit of 2^56 (its bytes would overflow 64-bit arithmetic)",
                            what, name ? name : "", (long long)numel),
               -1;
    return 0;
}

int vc_param_shape(vc_setup *s, const char *name, int nd, const int64_t *dims, unsigned flags)
{
    struct vc_setup_priv *P = s->priv;
    int64_t numel = 1;
    if (nd < 0 || nd > VC_MAX_DIMS) return vc_fail(s, NULL, "parameter %s has %d dimensions (0 to %d allowed)", name, nd, VC_MAX_DIMS);
    for (int i = 0; i < nd; i++)
        if (dims[i] < 0 || __builtin_mul_overflow(numel, dims[i], &numel)) numel = -1;
    if (check_tensor(s, "parameter", name, numel)) return -1;
    if (P->np >= VC_MAX_PARAMS) return vc_fail(s, NULL, "more than %d parameter tensors", VC_MAX_PARAMS);
    int i = P->np++;
    P->pn[i] = numel;
    P->pnd[i] = (int8_t)nd;
    P->pflags[i] = flags;
    memcpy(P->pdims[i], dims, (size_t)nd * sizeof *dims);
    vc_cat3(P->pname[i], sizeof P->pname[i], name, "", "");
    return 0;
}

int vc_param(vc_setup *s, const char *name, int64_t numel) { return vc_param_shape(s, name, 1, &numel, 0); }

int vc_param2(vc_setup *s, const char *name, int64_t rows, int64_t cols)
{
    int64_t d[2] = {rows, cols};
    return vc_param_shape(s, name, 2, d, 0);
}

int vc_buffer(vc_setup *s, const char *name, int64_t numel, vc_dtype dt)
{
    if (check_tensor(s, "buffer", name, numel)) return -1;
    if (s->priv->nb >= VC_MAX_PARAMS) return vc_fail(s, NULL, "more than %d buffers", VC_MAX_PARAMS);
    s->priv->bn[s->priv->nb] = numel;
    s->priv->bdt[s->priv->nb++] = dt;
    return 0;
}

/* ------------------------------------------------------------- the loader */

typedef struct name_entry {
    const char *name;
    int val, inst;  /* inst: the first instance of the named layer, -1 none */
    bool seq;       /* names a Sequential */
} name_entry;

typedef struct scope {
    const struct scope *parent;
    int input;
    int *pos;           /* output value of item i */
    int npos;
    const cJSON *arr;   /* the scope's list of layers */
    name_entry *names;
    int nnames, cap;
    int *ht;            /* open-addressing hash of names: index into names, -1 empty */
    size_t htcap;       /* a power of two, or 0 */
} scope;

typedef struct {
    vc_model *m;
    vc_error *err;
    const vc_shape *override;
    bool at_key;        /* the error is about a key (unknown, duplicate), not its value */
    int nth;            /* ... and its nth occurrence */
    int64_t nbuffer;    /* buffer elements so far */
} loader;

static vc_status fail(loader *L, vc_status code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static vc_status fail(loader *L, vc_status code, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vc_set_errorv(L->err, code, path, fmt, ap);
    va_end(ap);
    return code;
}

#define GROWV(arr, n, cap)                                                  \
    ((n) < (cap) ? 0                                                        \
     : ((cap) = (cap) ? (cap) * 2 : 16,                                     \
        ((arr) = realloc_or_free((arr), (cap) * sizeof *(arr))) ? 0 : -1))

static void *realloc_or_free(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) free(p);
    return q;
}

static int new_value(loader *L, const vc_shape *s, vc_dtype dt, int producer)
{
    vc_model *m = L->m;
    if (GROWV(m->val, m->nval, m->cap_val)) return -1;
    m->val[m->nval] = (vc_value){*s, dt, producer};
    return (int)m->nval++;
}

static size_t hash_str(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static const name_entry *scope_find(const scope *S, const char *name)
{
    if (!S->htcap) return NULL;
    for (size_t h = hash_str(name) & (S->htcap - 1);; h = (h + 1) & (S->htcap - 1)) {
        int i = S->ht[h];
        if (i < 0) return NULL;
        if (!strcmp(S->names[i].name, name)) return &S->names[i];
    }
}

static int scope_insert(scope *S, name_entry e)
{
    if (GROWV(S->names, S->nnames, S->cap)) return -1;
    S->names[S->nnames++] = e;
    if ((size_t)S->nnames * 2 > S->htcap) {
        size_t cap = S->htcap ? S->htcap * 2 : 16;
        int *ht = malloc(cap * sizeof *ht);
        if (!ht) return -1;
        memset(ht, 0xff, cap * sizeof *ht);
        free(S->ht);
        S->ht = ht;
        S->htcap = cap;
        for (int i = 0; i < S->nnames - 1; i++) {
            size_t h = hash_str(S->names[i].name) & (cap - 1);
            while (ht[h] >= 0) h = (h + 1) & (cap - 1);
            ht[h] = i;
        }
    }
    size_t h = hash_str(e.name) & (S->htcap - 1);
    while (S->ht[h] >= 0) h = (h + 1) & (S->htcap - 1);
    S->ht[h] = S->nnames - 1;
    return 0;
}

static const name_entry *lookup(const scope *S, const char *name)
{
    for (const scope *s = S; s; s = s->parent) {
        const name_entry *e = scope_find(s, name);
        if (e) return e;
    }
    return NULL;
}

static void join(char *buf, size_t n, const char *path, const char *key)
{
    vc_cat3(buf, n, path, path[0] ? "." : "", key);
}

/* Duplicate keys: the one whose second occurrence comes first. O(n log n). */
typedef struct {
    const char *key;
    int idx;
} key_ref;

static int cmp_key_ref(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static vc_status check_duplicates(loader *L, const cJSON *obj, const char *path)
{
    int n = 0;
    for (const cJSON *c = obj->child; c; c = c->next) n++;
    if (n < 2) return VC_OK;
    key_ref *k = malloc((size_t)n * sizeof *k);
    if (!k) return fail(L, VC_ERR_NOMEM, path, "out of memory");
    int i = 0;
    for (const cJSON *c = obj->child; c; c = c->next, i++) k[i] = (key_ref){c->string ? c->string : "", i};
    qsort(k, (size_t)n, sizeof *k, cmp_key_ref);
    int best = -1;
    const char *dup = NULL;
    for (i = 1; i < n; i++)
        if (!strcmp(k[i].key, k[i - 1].key) && (i < 2 || strcmp(k[i].key, k[i - 2].key)) && (best < 0 || k[i].idx < best)) {
            best = k[i].idx;
            dup = k[i].key;
        }
    vc_status st = VC_OK;
    if (dup) {
        char p[300];
        join(p, sizeof p, path, dup);
        L->at_key = true;
        L->nth = 2;
        st = fail(L, VC_ERR_MODEL, p, "duplicate key: \"%.60s\" is given twice in this object", dup);
    }
    free(k);
    return st;
}

/* Unknown keys of obj (not in ok[0..nok)): an error at the first, with the
 * nearest known key, or the list of keys ok[list_from..nok) when none is near. */
static vc_status unknown_keys(loader *L, const cJSON *obj, const char *path, const char *const *ok, int nok,
                              int list_from, const char *what)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool found = false;
        for (int i = 0; i < nok && !found; i++) found = !strcmp(c->string, ok[i]);
        if (found) continue;
        const char *s = nearest(c->string, ok, nok);
        char p[300];
        join(p, sizeof p, path, c->string);
        L->at_key = true;
        L->nth = 1;
        if (s) return fail(L, VC_ERR_MODEL, p, "unknown field %s (did you mean \"%s\"?)", what, s);
        char list[300] = "";
        size_t used = 0;
        for (int i = list_from; i < nok; i++) {
            int w = snprintf(list + used, sizeof list - used, "%s%s", i > list_from ? ", " : "", ok[i]);
            if (w > 0) used = used + (size_t)w < sizeof list ? used + (size_t)w : sizeof list - 1;
        }
        if (list_from >= nok) return fail(L, VC_ERR_MODEL, p, "unknown field %s (it takes only the common fields)", what);
        return fail(L, VC_ERR_MODEL, p, "unknown field %s (expected %s)", what, list);
    }
    return VC_OK;
}

/* Index k of "layers[k]" (digits only), or -1. */
static long long layer_ref(const char *ref)
{
    if (strncmp(ref, "layers[", 7)) return -1;
    const char *p = ref + 7;
    long long k = 0;
    if (*p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (k > 100000000) return -1;
        k = k * 10 + (*p - '0');
    }
    return p[0] == ']' && p[1] == '\0' ? k : -1;
}

/* Resolves a reference inside scope S: a name defined earlier (this scope
 * or an enclosing one), "input", "layers[k]" (k < item), or a model input. */
static int resolve(loader *L, const scope *S, const char *ref, int item, const char *path)
{
    const name_entry *e = lookup(S, ref);
    if (e) return e->val;
    if (!strcmp(ref, "input")) return S->input;
    long long k = layer_ref(ref);
    if (k >= 0) {
        if (k < item) return S->pos[k];
        if (k == item) fail(L, VC_ERR_MODEL, path, "\"%s\" is this layer itself; inputs must come from earlier layers", ref);
        else if (k < S->npos)
            fail(L, VC_ERR_MODEL, path, "\"%s\" is a later layer (this is layers[%d]); inputs must come from earlier layers", ref, item);
        else
            fail(L, VC_ERR_MODEL, path, "\"%s\" does not exist: this list has layers[0] to layers[%d]", ref, S->npos - 1);
        return -1;
    }
    for (int i = 0; i < L->m->ninputs; i++)
        if (L->m->input_names[i] && !strcmp(L->m->input_names[i], ref)) return i;
    /* a later layer's name? */
    int j = 0;
    for (const cJSON *it = S->arr ? S->arr->child : NULL; it; it = it->next, j++) {
        const cJSON *nv = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "name") : NULL;
        if (j >= item && cJSON_IsString(nv) && !strcmp(nv->valuestring, ref)) {
            if (j == item) fail(L, VC_ERR_MODEL, path, "\"%.60s\" is this layer's own name; inputs must come from earlier layers", ref);
            else fail(L, VC_ERR_MODEL, path, "\"%.60s\" names a later layer (layers[%d]; this is layers[%d]); inputs must come from earlier layers",
                      ref, j, item);
            return -1;
        }
    }
    /* did you mean: names in scope, "input", model inputs */
    const char *cands[256];
    int nc = 0;
    cands[nc++] = "input";
    for (int i = 0; i < L->m->ninputs && nc < 256; i++)
        if (L->m->input_names[i]) cands[nc++] = L->m->input_names[i];
    for (const scope *s = S; s; s = s->parent)
        for (int i = 0; i < s->nnames && nc < 256; i++) cands[nc++] = s->names[i].name;
    const char *s = nearest(ref, cands, nc);
    if (s) fail(L, VC_ERR_MODEL, path, "unknown input \"%.60s\" (did you mean \"%.60s\"?)", ref, s);
    else fail(L, VC_ERR_MODEL, path, "unknown input \"%.60s\": not the name of an earlier layer, \"input\", a model input or \"layers[k]\"", ref);
    return -1;
}

static vc_status parse_shape_value(loader *L, const cJSON *v, const char *path, vc_shape *s, vc_dtype *dt)
{
    *dt = VC_DT_FLOAT;
    const cJSON *shape = v;
    char p[300];
    if (cJSON_IsObject(v)) {
        if (check_duplicates(L, v, path)) return L->err->code;
        static const char *const ok[] = {"shape", "dtype"};
        if (unknown_keys(L, v, path, ok, 2, 0, "for an input")) return L->err->code;
        shape = cJSON_GetObjectItemCaseSensitive(v, "shape");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "dtype");
        if (d) {
            join(p, sizeof p, path, "dtype");
            char got[80];
            describe(d, got, sizeof got);
            if (!cJSON_IsString(d)) return fail(L, VC_ERR_MODEL, p, "expected \"float32\" or \"int64\", got %s", got);
            if (!strcmp(d->valuestring, "int64") || !strcmp(d->valuestring, "long")) *dt = VC_DT_I64;
            else if (strcmp(d->valuestring, "float32") && strcmp(d->valuestring, "float"))
                return fail(L, VC_ERR_MODEL, p, "expected \"float32\" or \"int64\", got %s", got);
        }
        if (!shape) return fail(L, VC_ERR_MODEL, path, "missing \"shape\" (the per-sample shape, e.g. [3, 224, 224])");
        join(p, sizeof p, path, "shape");
    } else {
        snprintf(p, sizeof p, "%s", path);
    }
    if (!cJSON_IsArray(shape)) {
        char got[80];
        describe(shape, got, sizeof got);
        return fail(L, VC_ERR_MODEL, p, "expected a per-sample shape such as [3, 224, 224] (or {\"shape\": [...], \"dtype\": \"int64\"}), got %s", got);
    }
    int n = cJSON_GetArraySize(shape);
    if (n < 1) return fail(L, VC_ERR_MODEL, p, "the shape is empty: give 1 to %d dimensions (without the batch)", VC_MAX_DIMS);
    if (n > VC_MAX_DIMS)
        return fail(L, VC_ERR_LIMIT, p, "%d dimensions: more than the limit of %d (without the batch)", n, VC_MAX_DIMS);
    s->nd = n;
    int i = 0;
    for (const cJSON *e = shape->child; e; e = e->next, i++) {
        int64_t x = 0;
        char got[80], pi[320];
        describe(e, got, sizeof got);
        snprintf(pi, sizeof pi, "%s[%d]", p, i);
        int rc = json_int(e, &x);
        if (rc == -2 && e->valuedouble > 0)
            return fail(L, VC_ERR_LIMIT, pi, "expected a positive integer of at most 2^40 (%lld), got %s", (long long)VC_MAX_DIM_SIZE, got);
        if (rc || x < 1) return fail(L, VC_ERR_MODEL, pi, "expected a positive integer, got %s", got);
        s->d[i] = x;
    }
    int64_t numel = vc_shape_numel(s);
    if (numel < 0 || numel > (INT64_C(1) << 56)) {
        char sh[200];
        vc_shape_str(s, sh, sizeof sh);
        return fail(L, VC_ERR_OVERFLOW, p, "the shape %s has more than 2^56 elements per sample", sh);
    }
    return VC_OK;
}

/* Value `val` stays alive through the last instance loaded so far. */
static vc_status hold_block_input(loader *L, int val, const char *path)
{
    vc_model *m = L->m;
    if (GROWV(m->blk_val, m->nblk, m->cap_blk)) return fail(L, VC_ERR_NOMEM, path, "out of memory");
    m->blk_last = realloc_or_free(m->blk_last, m->cap_blk * sizeof *m->blk_last);
    if (!m->blk_last) return fail(L, VC_ERR_NOMEM, path, "out of memory");
    m->blk_val[m->nblk] = val;
    m->blk_last[m->nblk++] = (int)m->ninst - 1;
    return VC_OK;
}

static vc_status load_scope(loader *L, const cJSON *arr, const char *prefix, const char *iprefix,
                            const scope *parent, int input, int depth, bool frozen, int region, int *out);

/* The error's path ("...name") is built only on an error: a model may name
 * every layer, and formatting it each time cost more than the name table. */
static vc_status add_name(loader *L, scope *S, const char *name, int val, int inst, bool seq, const char *path)
{
    char p[300];
    if (scope_find(S, name)) {
        join(p, sizeof p, path, "name");
        return fail(L, VC_ERR_MODEL, p, "duplicate name \"%.60s\": an earlier layer of this list has it", name);
    }
    if (!strcmp(name, "input") || !strncmp(name, "layers[", 7)) {
        join(p, sizeof p, path, "name");
        return fail(L, VC_ERR_MODEL, p, "\"%.60s\" is reserved; choose another name", name);
    }
    for (int i = 0; i < L->m->ninputs; i++)
        if (L->m->input_names[i] && !strcmp(L->m->input_names[i], name)) {
            join(p, sizeof p, path, "name");
            return fail(L, VC_ERR_MODEL, p, "\"%.60s\" is already the name of a model input", name);
        }
    if (scope_insert(S, (name_entry){name, val, inst, seq})) return fail(L, VC_ERR_NOMEM, path, "out of memory");
    return VC_OK;
}

/* Instantiates one copy of a leaf layer. */
static vc_status instantiate(loader *L, const vc_kind *k, void *cfg, const char *jpath, const char *ipath,
                             const int *ins, int nin, bool frozen, int region, const vc_inst *tie_to, int *out)
{
    vc_model *m = L->m;
    if (m->ninst >= VC_MAX_LAYERS)
        return fail(L, VC_ERR_LIMIT, jpath, "more than %d layers (after expanding repeat): the limit", VC_MAX_LAYERS);
    vc_shape shapes[VC_MAX_INPUTS];
    vc_dtype dts[VC_MAX_INPUTS];
    for (int i = 0; i < nin; i++) {
        shapes[i] = m->val[ins[i]].shape;
        dts[i] = m->val[ins[i]].dt;
        bool want_int = k->flags & VC_KIND_INT_INPUT;
        if (i == 0 && want_int && dts[i] != VC_DT_I64)
            return fail(L, VC_ERR_MODEL, jpath, "%s takes int64 token ids; declare the input as {\"shape\": [...], \"dtype\": \"int64\"}", k->name);
        if (!want_int && dts[i] == VC_DT_I64)
            return fail(L, VC_ERR_MODEL, jpath, "%s takes a float tensor, but input %d holds int64 token ids (add an Embedding first)", k->name, i);
    }
    struct vc_setup_priv priv;
    memset(&priv, 0, sizeof priv);
    priv.err = L->err;
    priv.path = jpath;
    vc_setup s = {nin, shapes, dts, {0, {0}}, VC_DT_FLOAT, &priv};
    if (k->setup(&s, cfg)) {
        if (L->err->code == VC_OK) fail(L, VC_ERR_MODEL, jpath, "invalid %s", k->name);
        return L->err->code;
    }
    if (s.out.nd < 1 || s.out.nd > VC_MAX_DIMS)
        return fail(L, VC_ERR_MODEL, jpath, "the output would have %d dimensions per sample (1 to %d allowed)", s.out.nd, VC_MAX_DIMS);
    for (int i = 0; i < s.out.nd; i++)
        if (s.out.d[i] < 1) {
            char sh[200];
            vc_shape_str(&s.out, sh, sizeof sh);
            return fail(L, VC_ERR_MODEL, jpath, "the output shape %s is empty (a dimension below 1)", sh);
        } else if (s.out.d[i] > VC_MAX_DIM_SIZE) {
            char sh[200];
            vc_shape_str(&s.out, sh, sizeof sh);
            return fail(L, VC_ERR_LIMIT, jpath, "the output shape %s has a dimension larger than the limit of 2^40", sh);
        }
    int64_t numel = vc_shape_numel(&s.out);
    if (numel < 0 || numel > (INT64_C(1) << 56)) {
        char sh[200];
        vc_shape_str(&s.out, sh, sizeof sh);
        return fail(L, VC_ERR_OVERFLOW, jpath, "the output %s has more than 2^56 elements per sample", sh);
    }
    if (GROWV(m->inst, m->ninst, m->cap_inst)) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    int idx = (int)m->ninst++;
    vc_inst *in = &m->inst[idx];
    memset(in, 0, sizeof *in);
    in->kind = k;
    in->cfg = cfg;
    in->path = vc_arena_strdup(m->arena, ipath);
    in->nin = nin;
    in->in = vc_arena_alloc(m->arena, (size_t)(nin + 1) * sizeof *ins);
    if (in->in) memcpy(in->in, ins, (size_t)nin * sizeof *ins);
    in->ckpt = region;
    in->frozen = frozen;
    in->np = priv.np;
    in->nb = priv.nb;
    in->params = vc_arena_alloc(m->arena, (size_t)(priv.np + 1) * sizeof(int));
    in->bufs = vc_arena_alloc(m->arena, (size_t)(priv.nb + 1) * sizeof(int));
    if (!in->path || !in->in || !in->params || !in->bufs) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    for (int i = 0; i < priv.np; i++) {
        if (i == 0 && tie_to) {
            int tp = tie_to->params[0];
            const vc_param_entry *T = &m->par[tp];
            if (T->nd != priv.pnd[0] || memcmp(T->dims, priv.pdims[0], (size_t)T->nd * sizeof *T->dims)) {
                char p[300], a[200], c[200];
                vc_shape sa = vc_shape_make(priv.pnd[0], priv.pdims[0]), sc = vc_shape_make(T->nd, T->dims);
                vc_shape_str(&sa, a, sizeof a);
                vc_shape_str(&sc, c, sizeof c);
                join(p, sizeof p, jpath, "tie");
                return fail(L, VC_ERR_MODEL, p, "the weights differ in shape: this layer's is %s, %s's is %s",
                            a, tie_to->path, c);
            }
            in->params[0] = tp;
            continue;
        }
        if (GROWV(m->par, m->npar, m->cap_par)) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        int64_t *dims = vc_arena_alloc(m->arena, (size_t)(priv.pnd[i] + 1) * sizeof *dims);
        const char *pname = vc_arena_strdup(m->arena, priv.pname[i]);
        if (!dims || !pname) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        memcpy(dims, priv.pdims[i], (size_t)priv.pnd[i] * sizeof *dims);
        bool trainable = !frozen && !(priv.pflags[i] & VC_PARAM_FROZEN);
        m->par[m->npar] = (vc_param_entry){priv.pn[i], trainable, priv.pnd[i], idx, pname, dims};
        in->params[i] = (int)m->npar++;
        if (__builtin_add_overflow(in->nparams, priv.pn[i], &in->nparams) ||
            __builtin_add_overflow(m->nparams, priv.pn[i], &m->nparams) || m->nparams > MAX_TENSOR_ELEMS)
            return fail(L, VC_ERR_OVERFLOW, jpath, "the model has more than 2^56 parameters (the limit: byte counts would overflow 64-bit arithmetic)");
        if (trainable) m->ntrainable += priv.pn[i];
    }
    for (int i = 0; i < priv.nb; i++) {
        if (GROWV(m->buf, m->nbuf, m->cap_buf)) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        m->buf[m->nbuf] = (vc_buffer_entry){priv.bn[i], priv.bdt[i]};
        in->bufs[i] = (int)m->nbuf++;
        if (__builtin_add_overflow(L->nbuffer, priv.bn[i], &L->nbuffer) || L->nbuffer > MAX_TENSOR_ELEMS)
            return fail(L, VC_ERR_OVERFLOW, jpath, "the model has more than 2^56 buffer elements (the limit: byte counts would overflow 64-bit arithmetic)");
    }
    int v = new_value(L, &s.out, s.out_dt, idx);
    if (v < 0) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    m->inst[idx].out = v;
    *out = v;
    return VC_OK;
}

static vc_status get_bool_key(loader *L, const cJSON *item, const char *key, const char *path, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, key);
    if (!v) return VC_OK;
    if (!cJSON_IsBool(v)) {
        char got[80], p[300];
        describe(v, got, sizeof got);
        join(p, sizeof p, path, key);
        return fail(L, VC_ERR_MODEL, p, "expected true or false, got %s", got);
    }
    *out = cJSON_IsTrue(v);
    return VC_OK;
}

static const char *const common_keys[] = {"type", "name", "inputs", "repeat", "frozen", "checkpoint", "tie", NULL};
#define NCOMMON 7

static void args_init(vc_args *a, const cJSON *item, vc_error *err, const char *jpath, const char *kname)
{
    memset(a, 0, sizeof *a);
    a->obj = item;
    a->err = err;
    a->path = jpath;
    a->kind = kname;
    for (int j = 0; common_keys[j]; j++) a->known[a->nknown++] = common_keys[j]; /* distinct: no need for known() */
}

/* A kind's parse failed on a key the layer lacks ("missing"): when another
 * key of the layer is a misspelling of it, say that instead. The kind's
 * full key set comes from parsing again in probe mode, where missing keys
 * get placeholder values. */
static void prefer_misspelling(loader *L, const vc_kind *k, const cJSON *item, const char *jpath, const vc_args *a)
{
    if (!a->failed[0] || strchr(a->failed, '[') || cJSON_GetObjectItemCaseSensitive(item, a->failed)) return;
    vc_error scratch;
    memset(&scratch, 0, sizeof scratch);
    vc_args probe;
    args_init(&probe, item, &scratch, jpath, a->kind);
    probe.probe = true;
    void *cfg = calloc(1, k->cfg_size ? k->cfg_size : 1);
    if (!cfg) return;
    (void)k->parse(&probe, cfg);
    free(cfg);
    known(&probe, a->failed);
    for (const cJSON *c = item->child; c; c = c->next) {
        bool found = false;
        for (int i = 0; i < probe.nknown && !found; i++) found = !strcmp(c->string, probe.known[i]);
        if (found) continue;
        const char *s = nearest(c->string, probe.known, probe.nknown);
        if (!s || strcmp(s, a->failed)) continue;
        char p[300];
        join(p, sizeof p, jpath, c->string);
        L->err->code = VC_OK; /* replace the "missing" error */
        L->at_key = true;
        L->nth = 1;
        fail(L, VC_ERR_MODEL, p, "unknown field for %s (did you mean \"%s\"?)", a->kind, s);
        return;
    }
}

static vc_status load_item(loader *L, scope *S, const cJSON *item, int i, const char *jpath, const char *ipath,
                           int depth, bool frozen, int region)
{
    vc_model *m = L->m;
    char p[300], got[80];
    if (!cJSON_IsObject(item)) {
        describe(item, got, sizeof got);
        return fail(L, VC_ERR_MODEL, jpath, "expected a layer object such as {\"type\": \"Linear\", ...}, got %s", got);
    }
    if (check_duplicates(L, item, jpath)) return L->err->code;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(item, "type");
    join(p, sizeof p, jpath, "type");
    if (!type) {
        for (const cJSON *c = item->child; c; c = c->next)
            if (!strcasecmp(c->string, "type") || !strcmp(c->string, "kind") || vc_edit_distance(c->string, "type") == 1) {
                join(p, sizeof p, jpath, c->string);
                L->at_key = true;
                return fail(L, VC_ERR_MODEL, p, "unknown field (did you mean \"type\"?)");
            }
        return fail(L, VC_ERR_MODEL, jpath, "missing \"type\" (the layer kind, e.g. \"Conv2d\")");
    }
    if (!cJSON_IsString(type)) {
        describe(type, got, sizeof got);
        return fail(L, VC_ERR_MODEL, p, "expected a layer kind such as \"Linear\", got %s", got);
    }
    bool seq = !strcmp(type->valuestring, "Sequential");
    const vc_kind *k = seq ? NULL : vc_kind_find(type->valuestring);
    if (!seq && !k) {
        const char *s = vc_kind_suggest(type->valuestring);
        if (s) return fail(L, VC_ERR_MODEL, p, "unknown layer kind \"%.60s\" (did you mean \"%s\"?)", type->valuestring, s);
        return fail(L, VC_ERR_MODEL, p, "unknown layer kind \"%.60s\" (vramcalc --list-layers lists them)", type->valuestring);
    }
    const char *kname = seq ? "Sequential" : k->name;

    /* common keys */
    const char *name = NULL;
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(item, "name");
    if (nv && (!cJSON_IsString(nv) || !nv->valuestring[0])) {
        join(p, sizeof p, jpath, "name");
        if (cJSON_IsString(nv)) return fail(L, VC_ERR_MODEL, p, "a name may not be empty");
        describe(nv, got, sizeof got);
        return fail(L, VC_ERR_MODEL, p, "expected a name (a non-empty string), got %s", got);
    }
    if (nv) name = nv->valuestring;
    int64_t repeat = 1;
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(item, "repeat");
    if (rv) {
        join(p, sizeof p, jpath, "repeat");
        describe(rv, got, sizeof got);
        int rc = json_int(rv, &repeat);
        if ((rc == -2 && rv->valuedouble > 0) || (!rc && repeat > VC_MAX_LAYERS))
            return fail(L, VC_ERR_LIMIT, p, "%.0f copies: more than the limit of %d layers", rv->valuedouble, VC_MAX_LAYERS);
        if (rc || repeat < 1) return fail(L, VC_ERR_MODEL, p, "expected a positive integer, got %s", got);
    }
    bool fz = false, ck = false;
    if (get_bool_key(L, item, "frozen", jpath, &fz) || get_bool_key(L, item, "checkpoint", jpath, &ck))
        return L->err->code;
    fz = fz || frozen;

    int ins[VC_MAX_INPUTS], nin = 0;
    for (int j = 0; j < VC_MAX_INPUTS; j++) ins[j] = -1;
    const cJSON *iv = cJSON_GetObjectItemCaseSensitive(item, "inputs");
    join(p, sizeof p, jpath, "inputs");
    if (iv) {
        if (cJSON_IsString(iv)) {
            ins[nin] = resolve(L, S, iv->valuestring, i, p);
            if (ins[nin++] < 0) return L->err->code;
        } else if (cJSON_IsArray(iv)) {
            int n = cJSON_GetArraySize(iv);
            if (n < 1 || n > VC_MAX_INPUTS)
                return fail(L, n ? VC_ERR_LIMIT : VC_ERR_MODEL, p, "expected 1 to %d input names, got %d", VC_MAX_INPUTS, n);
            int j = 0;
            for (const cJSON *e = iv->child; e; e = e->next, j++) {
                char pj[320];
                snprintf(pj, sizeof pj, "%s[%d]", p, j);
                if (!cJSON_IsString(e)) {
                    describe(e, got, sizeof got);
                    return fail(L, VC_ERR_MODEL, pj, "expected a layer name, \"input\" or \"layers[k]\", got %s", got);
                }
                ins[nin] = resolve(L, S, e->valuestring, i, pj);
                if (ins[nin++] < 0) return L->err->code;
            }
        } else {
            describe(iv, got, sizeof got);
            return fail(L, VC_ERR_MODEL, p, "expected a list of input names, got %s", got);
        }
    } else if (!k || !(k->flags & VC_KIND_NO_INPUT)) {
        ins[nin++] = i == 0 ? S->input : S->pos[i - 1];
    }
    if (k) {
        if (nin < k->min_inputs || nin > k->max_inputs) {
            if (k->min_inputs == k->max_inputs)
                return fail(L, VC_ERR_MODEL, p, "%s takes %d input%s, got %d", kname, k->min_inputs, k->min_inputs == 1 ? "" : "s", nin);
            return fail(L, VC_ERR_MODEL, p, "%s takes %d to %d inputs, got %d", kname, k->min_inputs, k->max_inputs, nin);
        }
    } else if (nin != 1) {
        return fail(L, VC_ERR_MODEL, p, "Sequential takes 1 input, got %d", nin);
    }
    /* With repeat, each copy's output replaces input 0 of the next copy;
     * further inputs (a decoder's memory) are shared by every copy. */
    if (repeat > 1 && nin < 1) {
        join(p, sizeof p, jpath, "repeat");
        return fail(L, VC_ERR_MODEL, p, "repeat needs a layer with an input (each copy's output feeds the next); %s has none", kname);
    }

    const vc_inst *tie_to = NULL;
    const cJSON *tv = cJSON_GetObjectItemCaseSensitive(item, "tie");
    if (tv) {
        join(p, sizeof p, jpath, "tie");
        if (!k || !(k->flags & VC_KIND_TIEABLE)) return fail(L, VC_ERR_MODEL, p, "only Linear and Embedding accept tie, this is a %s", kname);
        if (!cJSON_IsString(tv)) {
            describe(tv, got, sizeof got);
            return fail(L, VC_ERR_MODEL, p, "expected the name of an earlier Linear or Embedding, got %s", got);
        }
        const name_entry *e = lookup(S, tv->valuestring);
        if (!e) return fail(L, VC_ERR_MODEL, p, "no earlier layer is named \"%.60s\"", tv->valuestring);
        if (e->seq || e->inst < 0)
            return fail(L, VC_ERR_MODEL, p, "\"%.60s\" is a Sequential; tie needs a Linear or Embedding", tv->valuestring);
        tie_to = &m->inst[e->inst];
        if (!(tie_to->kind->flags & VC_KIND_TIEABLE) || tie_to->np < 1)
            return fail(L, VC_ERR_MODEL, p, "\"%.60s\" is a %s; tie needs a Linear or Embedding", tv->valuestring, tie_to->kind->name);
    }

    int out = -1, first_inst = (int)m->ninst;
    if (seq) {
        static const char *const ok[] = {"layers", "type", "name", "inputs", "repeat", "frozen", "checkpoint"};
        if (unknown_keys(L, item, jpath, ok, 7, 0, "for Sequential")) return L->err->code;
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(item, "layers");
        if (!layers) return fail(L, VC_ERR_MODEL, jpath, "missing \"layers\" (the block's list of layers)");
        if (depth + 1 > VC_MAX_DEPTH)
            return fail(L, VC_ERR_LIMIT, jpath, "Sequential blocks nest deeper than the limit of %d", VC_MAX_DEPTH);
        int cur = ins[0];
        for (int64_t c = 0; c < repeat; c++) {
            char ip[300];
            if (repeat > 1) vc_cat_index(ip, sizeof ip, ipath, "", (long long)c);
            else vc_cat3(ip, sizeof ip, ipath, "", "");
            int r = region >= 0 ? region : ck ? m->nregions++ : -1;
            size_t copy_first = m->ninst;
            if (load_scope(L, layers, jpath, ip, S, cur, depth + 1, fz, r, &out)) return L->err->code;
            /* x = block(x): x lives until this copy returns */
            if (repeat > 1 && m->ninst > copy_first && hold_block_input(L, cur, jpath)) return L->err->code;
            /* refuse a repeat that will exceed the layer limit now, not after a million copies */
            int64_t per = (int64_t)m->ninst - first_inst, rest;
            if (c == 0 && repeat > 1 &&
                (__builtin_mul_overflow(per, repeat - 1, &rest) || rest > (int64_t)VC_MAX_LAYERS - (int64_t)m->ninst))
                return fail(L, VC_ERR_LIMIT, jpath, "more than %d layers (after expanding repeat): the limit", VC_MAX_LAYERS);
            if (repeat > 1 && !vc_shape_eq(&m->val[out].shape, &m->val[cur].shape)) {
                char a[96], b2[96];
                vc_shape_str(&m->val[cur].shape, a, sizeof a);
                vc_shape_str(&m->val[out].shape, b2, sizeof b2);
                join(p, sizeof p, jpath, "repeat");
                return fail(L, VC_ERR_MODEL, p, "repeat needs the output shape to equal the input shape, but %s becomes %s", a, b2);
            }
            cur = out;
        }
    } else {
        void *cfg = vc_arena_alloc(m->arena, k->cfg_size ? k->cfg_size : 1);
        if (!cfg) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        vc_args a;
        args_init(&a, item, L->err, jpath, kname);
        if (k->parse(&a, cfg)) {
            if (L->err->code == VC_OK) fail(L, VC_ERR_MODEL, jpath, "invalid %s", kname);
            else prefer_misspelling(L, k, item, jpath, &a);
            return L->err->code;
        }
        char what[64];
        vc_cat3(what, sizeof what, "for ", kname, "");
        if (unknown_keys(L, item, jpath, a.known, a.nknown, NCOMMON, what)) return L->err->code;
        if (repeat > (int64_t)VC_MAX_LAYERS - (int64_t)m->ninst)
            return fail(L, VC_ERR_LIMIT, jpath, "more than %d layers (after expanding repeat): the limit", VC_MAX_LAYERS);
        int cur[VC_MAX_INPUTS];
        memcpy(cur, ins, sizeof ins);
        for (int64_t c = 0; c < repeat; c++) {
            char ip[300];
            if (repeat > 1) vc_cat_index(ip, sizeof ip, ipath, "", (long long)c);
            else vc_cat3(ip, sizeof ip, ipath, "", "");
            int r = region >= 0 ? region : ck ? m->nregions++ : -1;
            if (instantiate(L, k, cfg, jpath, ip, cur, nin, fz, r, tie_to, &out))
                return L->err->code;
            if (repeat > 1 && !vc_shape_eq(&m->val[out].shape, &m->val[cur[0]].shape)) {
                char a2[96], b2[96];
                vc_shape_str(&m->val[cur[0]].shape, a2, sizeof a2);
                vc_shape_str(&m->val[out].shape, b2, sizeof b2);
                join(p, sizeof p, jpath, "repeat");
                return fail(L, VC_ERR_MODEL, p, "repeat needs the output shape to equal the input shape, but %s becomes %s", a2, b2);
            }
            cur[0] = out;
        }
    }
    /* the caller holds the block's input until the whole block returns */
    if ((seq || repeat > 1) && (int)m->ninst > first_inst && hold_block_input(L, ins[0], jpath)) return L->err->code;
    S->pos[i] = out;
    if (name) return add_name(L, S, name, out, !seq && first_inst < (int)m->ninst ? first_inst : -1, seq, jpath);
    return VC_OK;
}

static vc_status load_scope(loader *L, const cJSON *arr, const char *prefix, const char *iprefix,
                            const scope *parent, int input, int depth, bool frozen, int region, int *out)
{
    char path[300];
    join(path, sizeof path, prefix, "layers");
    if (!cJSON_IsArray(arr)) {
        char got[80];
        describe(arr, got, sizeof got);
        return fail(L, VC_ERR_MODEL, path, "expected a list of layers, got %s", got);
    }
    int n = cJSON_GetArraySize(arr);
    if (n == 0) return fail(L, VC_ERR_MODEL, path, "the list of layers is empty");
    if (n > VC_MAX_LAYERS) return fail(L, VC_ERR_LIMIT, path, "%d layers: more than the limit of %d", n, VC_MAX_LAYERS);
    scope S;
    memset(&S, 0, sizeof S);
    S.parent = parent;
    S.input = input;
    S.pos = calloc((size_t)n, sizeof(int));
    S.npos = n;
    S.arr = arr;
    if (!S.pos) return fail(L, VC_ERR_NOMEM, path, "out of memory");
    vc_status st = VC_OK;
    int i = 0;
    for (const cJSON *item = arr->child; item && !st; item = item->next, i++) {
        char jp[300], ip[300];
        vc_cat_index(jp, sizeof jp, path, "", i);
        vc_cat_index(ip, sizeof ip, iprefix, iprefix[0] ? ".layers" : "layers", i);
        st = load_item(L, &S, item, i, jp, ip, depth, frozen, region);
    }
    if (!st) *out = S.pos[n - 1];
    free(S.pos);
    free(S.names);
    free(S.ht);
    return st;
}

static vc_status load_inputs(loader *L, const cJSON *root)
{
    vc_model *m = L->m;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    if (in && ins) {
        L->at_key = true;
        return fail(L, VC_ERR_MODEL, "inputs", "give either \"input\" or \"inputs\", not both");
    }
    if (!in && !ins) return fail(L, VC_ERR_MODEL, "input", "missing: the per-sample input shape, e.g. \"input\": [3, 224, 224]");
    if (in) {
        vc_shape s;
        vc_dtype dt;
        if (parse_shape_value(L, in, "input", &s, &dt)) return L->err->code;
        if (L->override) s = *L->override;
        m->ninputs = 1;
        m->input_names = vc_arena_alloc(m->arena, sizeof(char *));
        if (!m->input_names || new_value(L, &s, dt, -1) < 0) return fail(L, VC_ERR_NOMEM, NULL, "out of memory");
        return VC_OK;
    }
    if (!cJSON_IsObject(ins) || !ins->child) {
        char got[80];
        describe(ins, got, sizeof got);
        if (cJSON_IsObject(ins)) snprintf(got, sizeof got, "an empty object");
        return fail(L, VC_ERR_MODEL, "inputs", "expected an object of named inputs, e.g. {\"src\": [128, 512]}, got %s", got);
    }
    if (check_duplicates(L, ins, "inputs")) return L->err->code;
    int n = cJSON_GetArraySize(ins);
    if (n > 64) return fail(L, VC_ERR_LIMIT, "inputs", "%d inputs: more than the limit of 64", n);
    if (L->override && n != 1) return fail(L, VC_ERR_USAGE, "inputs", "--input needs a model with a single input, this one has %d", n);
    m->input_names = vc_arena_alloc(m->arena, (size_t)n * sizeof(char *));
    if (!m->input_names) return fail(L, VC_ERR_NOMEM, NULL, "out of memory");
    for (const cJSON *c = ins->child; c; c = c->next) {
        char p[300];
        join(p, sizeof p, "inputs", c->string);
        if (!c->string[0]) {
            L->at_key = true;
            return fail(L, VC_ERR_MODEL, p, "an input name may not be empty");
        }
        if (!strcmp(c->string, "input") || !strncmp(c->string, "layers[", 7)) {
            L->at_key = true;
            return fail(L, VC_ERR_MODEL, p, "\"%.60s\" is reserved; choose another name", c->string);
        }
        vc_shape s;
        vc_dtype dt;
        if (parse_shape_value(L, c, p, &s, &dt)) return L->err->code;
        if (L->override) s = *L->override;
        m->input_names[m->ninputs++] = vc_arena_strdup(m->arena, c->string);
        if (!m->input_names[m->ninputs - 1] || new_value(L, &s, dt, -1) < 0) return fail(L, VC_ERR_NOMEM, NULL, "out of memory");
    }
    return VC_OK;
}

static vc_status load(vc_model *m, const vc_shape *override, vc_error *err)
{
    loader L = {m, err, override, false, 1, 0};
    bool blank = true;
    for (size_t i = 0; i < m->text_len && blank; i++) blank = strchr(" \t\r\n", m->text[i]) != NULL;
    if (blank) return vc_set_error(err, VC_ERR_PARSE, NULL, m->text_len ? "the file has only whitespace: no JSON object" : "the file is empty");
    const char *at = NULL;
    char msg[300];
    if (json_validate(m->text, m->text_len, &at, msg, sizeof msg)) {
        vc_set_error(err, VC_ERR_PARSE, NULL, "%s", msg);
        line_col(m->text, m->text_len, at, &err->line, &err->col);
        return VC_ERR_PARSE;
    }
    cJSON *root = cJSON_ParseWithLengthOpts(m->text, m->text_len + 1, NULL, 1) /* + the NUL */;
    if (!root) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory while parsing the JSON text");
    vc_status st = VC_OK;
    char got[80];
    if (!cJSON_IsObject(root)) {
        describe(root, got, sizeof got);
        st = fail(&L, VC_ERR_MODEL, NULL, "expected a JSON object with \"input\" and \"layers\" at the top level, got %s", got);
        goto done;
    }
    if ((st = check_duplicates(&L, root, "")) != VC_OK) goto done;
    if (vc_hf_is_config(root)) { /* a Hugging Face config.json (src/hf.c): load the model it describes */
        cJSON *gen = NULL;
        if ((st = vc_hf_build(root, &m->hf, &gen, err)) != VC_OK) goto done;
        cJSON_Delete(root);
        root = gen;
        if (!m->gen_json) {
            char *t = cJSON_Print(root); /* through the caller's cJSON hooks: copied to malloc'd memory */
            m->gen_json = t ? strdup(t) : NULL;
            cJSON_free(t);
            if (!m->gen_json) {
                st = fail(&L, VC_ERR_NOMEM, NULL, "out of memory");
                goto done;
            }
        }
    }
    static const char *const ok[] = {"name", "description", "source", "input", "inputs", "layers", "loss"};
    if ((st = unknown_keys(&L, root, "", ok, 7, 0, "at the top level")) != VC_OK) goto done;
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (nm && !cJSON_IsString(nm)) {
        describe(nm, got, sizeof got);
        st = fail(&L, VC_ERR_MODEL, "name", "expected a string, got %s", got);
        goto done;
    }
    m->name = vc_arena_strdup(m->arena, nm ? nm->valuestring : "");
    if (!m->name) {
        st = fail(&L, VC_ERR_NOMEM, NULL, "out of memory");
        goto done;
    }
    for (const char *key = "description"; key; key = strcmp(key, "description") ? NULL : "source") {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, key);
        if (d && !cJSON_IsString(d)) {
            describe(d, got, sizeof got);
            st = fail(&L, VC_ERR_MODEL, key, "expected a string, got %s", got);
            goto done;
        }
    }
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(root, "loss");
    if (loss) {
        static const char *const losses[] = {"mean", "cross_entropy", "causal_lm"};
        if (cJSON_IsString(loss) && !strcmp(loss->valuestring, "mean")) m->loss = VC_LOSS_MEAN;
        else if (cJSON_IsString(loss) && !strcmp(loss->valuestring, "cross_entropy")) m->loss = VC_LOSS_CROSS_ENTROPY;
        else if (cJSON_IsString(loss) && !strcmp(loss->valuestring, "causal_lm")) m->loss = VC_LOSS_CAUSAL_LM;
        else {
            describe(loss, got, sizeof got);
            const char *s = cJSON_IsString(loss) ? nearest(loss->valuestring, losses, 3) : NULL;
            st = s ? fail(&L, VC_ERR_MODEL, "loss", "expected \"mean\", \"cross_entropy\" or \"causal_lm\", got %s (did you mean \"%s\"?)", got, s)
                   : fail(&L, VC_ERR_MODEL, "loss", "expected \"mean\", \"cross_entropy\" or \"causal_lm\", got %s", got);
            goto done;
        }
    }
    if ((st = load_inputs(&L, root)) != VC_OK) goto done;
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!layers) {
        st = fail(&L, VC_ERR_MODEL, "layers", "missing: the list of layers");
        goto done;
    }
    scope top;
    memset(&top, 0, sizeof top);
    if ((st = load_scope(&L, layers, "", "", &top, 0, 0, false, -1, &m->output)) != VC_OK) goto done;
    if ((m->loss == VC_LOSS_CROSS_ENTROPY || m->loss == VC_LOSS_CAUSAL_LM) && m->val[m->output].shape.nd < 1)
        st = fail(&L, VC_ERR_MODEL, "loss", "%s needs an output with a class dimension",
                  m->loss == VC_LOSS_CAUSAL_LM ? "causal_lm" : "cross_entropy");
done:
    cJSON_Delete(root);
    if (st != VC_OK) locate_error(m->text, m->text_len, err, L.at_key, L.nth);
    return st;
}

static void reset_model(vc_model *m)
{
    free(m->inst);
    free(m->val);
    free(m->par);
    free(m->buf);
    free(m->blk_val);
    free(m->blk_last);
    m->blk_val = m->blk_last = NULL;
    m->nblk = m->cap_blk = 0;
    m->inst = NULL;
    m->val = NULL;
    m->par = NULL;
    m->buf = NULL;
    m->ninst = m->nval = m->npar = m->nbuf = 0;
    m->cap_inst = m->cap_val = m->cap_par = m->cap_buf = 0;
    m->ninputs = 0;
    m->input_names = NULL;
    m->output = 0;
    m->nregions = 0;
    m->nparams = m->ntrainable = 0;
    m->loss = VC_LOSS_MEAN;
}

vc_status vc_model_load_string(const char *json, size_t len, const char *name, vc_model **out, vc_error *err)
{
    return vc_model_load_string_hf(json, len, name, NULL, out, err);
}

const char *vc_model_generated_json(const vc_model *m) { return m->gen_json; }

vc_status vc_model_load_string_hf(const char *json, size_t len, const char *name, const vc_hf_options *hf,
                                  vc_model **out, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    *out = NULL;
    snprintf(err->file, sizeof err->file, "%s", name ? name : "");
    if (len > VC_MAX_FILE_BYTES)
        return vc_set_error(err, VC_ERR_LIMIT, NULL, "the file is larger than the limit of %u MiB", VC_MAX_FILE_BYTES >> 20);
    if (!json && len) return vc_set_error(err, VC_ERR_USAGE, NULL, "no text");
    /* A UTF-8 byte-order mark (Windows editors) is not part of the JSON; line:col count from after it. */
    if (len >= 3 && !memcmp(json, "\xEF\xBB\xBF", 3)) {
        json += 3;
        len -= 3;
    }
    vc_model *m = calloc(1, sizeof *m);
    if (!m || !(m->arena = vc_arena_new())) {
        free(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    m->text = malloc(len + 1);
    if (!m->text) {
        vc_model_free(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    if (len) memcpy(m->text, json, len);
    m->text[len] = '\0';
    m->text_len = len;
    if (hf) m->hf = *hf;
    else vc_hf_options_init(&m->hf);
    m->file = vc_arena_strdup(m->arena, name ? name : "");
    if (!m->file) {
        vc_model_free(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    vc_status st = load(m, NULL, err);
    if (st) {
        vc_model_free(m);
        return st;
    }
    *out = m;
    return VC_OK;
}

vc_status vc_model_load_file(const char *path, vc_model **out, vc_error *err)
{
    return vc_model_load_file_hf(path, NULL, out, err);
}

vc_status vc_model_load_file_hf(const char *path, const vc_hf_options *hf, vc_model **out, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    *out = NULL;
    snprintf(err->file, sizeof err->file, "%s", path);
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return vc_set_error(err, VC_ERR_IO, NULL, "cannot open: %s", strerror(errno));
    /* Read at most VC_MAX_FILE_BYTES + 1 bytes: one more than the limit is enough to refuse it. */
    size_t cap = 65536, len = 0, limit = (size_t)VC_MAX_FILE_BYTES + 1;
    char *buf = malloc(cap);
    int rerr = 0;
    while (buf) {
        if (len == cap) {
            if (cap >= limit) break;
            size_t nc = cap * 2 < limit ? cap * 2 : limit;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap = nc;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) rerr = errno ? errno : EIO;
            break;
        }
    }
    if (f != stdin) fclose(f);
    if (!buf) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    if (rerr) {
        free(buf);
        return vc_set_error(err, VC_ERR_IO, NULL, "cannot read: %s", strerror(rerr));
    }
    vc_status st = vc_model_load_string_hf(buf, len, path, hf, out, err);
    free(buf);
    return st;
}

vc_status vc_model_set_input_shape(vc_model *m, const int64_t *dims, int ndim, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (ndim < 1 || ndim > VC_MAX_DIMS)
        return vc_set_error(err, VC_ERR_USAGE, "--input", "expected 1 to %d dimensions, got %d", VC_MAX_DIMS, ndim);
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 1 || dims[i] > VC_MAX_DIM_SIZE)
            return vc_set_error(err, VC_ERR_USAGE, "--input", "dimension %d is %lld: expected 1 to 2^40", i + 1, (long long)dims[i]);
    vc_shape s = vc_shape_make(ndim, dims);
    if (vc_shape_numel(&s) < 0 || vc_shape_numel(&s) > (INT64_C(1) << 56))
        return vc_set_error(err, VC_ERR_OVERFLOW, "--input", "the shape has more than 2^56 elements");
    /* Reload from the source with the new shape; the arena keeps old configs. */
    reset_model(m);
    vc_status st = load(m, &s, err);
    if (st != VC_OK) {
        /* Leave a usable model behind: the file's own input shape (loaded before, so it loads again). */
        vc_error again;
        vc_error_clear(&again);
        reset_model(m);
        if (load(m, NULL, &again) != VC_OK) reset_model(m);
    }
    return st;
}

void vc_model_free(vc_model *m)
{
    if (!m) return;
    reset_model(m);
    free(m->gen_json);
    free(m->text);
    vc_arena_free(m->arena);
    free(m);
}

const char *vc_model_name(const vc_model *m) { return m->name ? m->name : ""; }
int64_t vc_model_parameters(const vc_model *m) { return m->nparams; }
int64_t vc_model_trainable_parameters(const vc_model *m) { return m->ntrainable; }
size_t vc_model_layer_count(const vc_model *m) { return m->ninst; }
