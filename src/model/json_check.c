/*
 * json_check.c — loading step 1: a strict RFC 8259 validator over the raw text,
 * with a precise message and position for every syntax error (cJSON reports
 * neither well), a nesting limit, and nothing cJSON would parse differently.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "load.h"
#include "util.h"

/* ----------------------------------------------------- positions in text */

/* 1-based line and column (in characters: UTF-8 continuation bytes do not
 * count) of `at` in text. */
void vc__line_col(const char *text, size_t len, const char *at, int *line, int *col)
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
long vc__hex4(const char *p)
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
            long u = v->e - v->p > 4 ? vc__hex4(v->p + 1) : -1;
            if (u < 0) return jv_fail(v, esc, "invalid JSON: \\u must be followed by 4 hex digits");
            v->p += 5;
            if (u == 0) return jv_fail(v, esc, "invalid JSON: \\u0000 (a NUL character) is not allowed in a string");
            if (u >= 0xDC00 && u <= 0xDFFF) return jv_fail(v, esc, "invalid JSON: \\u%04lx is a lone low surrogate", u);
            if (u >= 0xD800 && u <= 0xDBFF) {
                long lo = v->e - v->p > 5 && v->p[0] == '\\' && v->p[1] == 'u' ? vc__hex4(v->p + 2) : -1;
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
    vc__line_col(v->b, (size_t)(v->e - v->b), open, &l, &c);
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
int vc__json_validate(const char *text, size_t len, const char **at, char *msg, size_t n)
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
