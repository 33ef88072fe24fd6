/*
 * json_check.c — loading step 1: a strict RFC 8259 validator over the raw text,
 * with a precise message and position for every syntax error (cJSON reports
 * neither well), a nesting limit, and nothing cJSON would parse differently.
 */
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdint.h>
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

/* The validator builds cJSON 1.7.15's tree (cJSON.c, DaveGamble/cJSON v1.7.15,
 * 8e774f9) of the text as it checks it, when asked (vc__json_read): every node
 * and string in one block (cJSON allocates each node and each string through
 * its hooks, and its parse_number calls localeconv for each number), one pass
 * over the text. The tree is the one cJSON_ParseWithLengthOpts builds, field
 * by field:
 *  - parse_array / parse_object: children linked by next and prev, the first
 *    child's prev the last child; an object member's key in `string`;
 *  - parse_value: true is cJSON_True with valueint 1, false cJSON_False,
 *    null cJSON_NULL;
 *  - parse_number: valuedouble is strtod of the number's characters with '.'
 *    replaced by the locale's decimal point; valueint saturates at INT_MAX and
 *    INT_MIN. A number of at most 15 digits and no exponent is read here
 *    (jv_number: strtod's correctly rounded value, by one division);
 *  - parse_string / utf16_literal_to_utf8: escapes decoded, \uXXXX (and a
 *    surrogate pair) written as UTF-8, every other byte copied.
 * The validator refuses what cJSON would read differently or not at all
 * (control characters, \u0000, lone surrogates, numbers over 63 characters,
 * a text after the value); a refused text's partial tree is freed. */
typedef struct {
    const char *b, *p, *e; /* text, cursor, end */
    const char *at;        /* error position */
    char msg[300];
    int depth;
    long values;
    cJSON *node; /* building: the next free node, NULL when only validating */
    char *chars; /* building: the next free string byte */
    int dp;      /* the locale's decimal point (localeconv, read at the first fraction): 0 not read yet, -1 not one byte */
    bool failed; /* a number strtod did not read to its end (cJSON_ParseWithLengthOpts: NULL) */
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

/* The bytes JSON's whitespace is made of (RFC 8259 section 2). */
static const unsigned char json_ws[256] = {['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [' '] = 1};

/* 1 for a byte a string holds as it is (section 7): not a control character (the text's closing NUL
 * included), '"' or '\\' */
static const unsigned char json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

/* the text is NUL-terminated, and no whitespace is NUL: no bound to check */
static void jv_ws(jv *v)
{
    const char *p = v->p;
    while (json_ws[(unsigned char)*p]) p++;
    v->p = p;
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

/* cJSON's utf16_literal_to_utf8: code point cp as UTF-8 at o; the byte after it */
static char *put_utf8(char *o, unsigned long cp)
{
    int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    static const unsigned char mark[5] = {0, 0, 0xC0, 0xE0, 0xF0};
    for (int i = n - 1; i > 0; i--) {
        o[i] = (char)((cp | 0x80) & 0xBF);
        cp >>= 6;
    }
    o[0] = (char)(n > 1 ? (cp | mark[n]) & 0xFF : cp & 0x7F);
    return o + n;
}

/* A string at v->p; building, its decoded bytes in *out (v->chars) */
static int jv_string(jv *v, char **out)
{
    const char *start = v->p++;
    char *o = v->chars; /* NULL: only validating */
    for (;;) {
        const char *p = v->p; /* what the checks below let through: the text's closing NUL stops it */
        if (o) {
            while (json_plain[(unsigned char)*p]) *o++ = *p++;
        } else {
            while (json_plain[(unsigned char)*p]) p++;
        }
        v->p = p;
        if (v->p >= v->e) return jv_fail(v, start, "invalid JSON: this string is not closed (no '\"' before the end of the file)");
        unsigned char c = (unsigned char)*v->p;
        if (c == '"') {
            v->p++;
            if (o) {
                *o++ = '\0';
                *out = v->chars;
                v->chars = o;
            }
            return 0;
        }
        if (c == '\n' || c == '\r') return jv_fail(v, start, "invalid JSON: this string is not closed on its line (a missing '\"'?)");
        if (c < 0x20) return jv_fail(v, v->p, "invalid JSON: control character 0x%02x in a string (write it as \\u%04x)", c, c);
        /* c is '\\' */
        const char *esc = v->p++;
        if (v->p >= v->e) return jv_fail(v, start, "invalid JSON: this string is not closed (no '\"' before the end of the file)");
        switch (*v->p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            if (o) {
                char x = *v->p;
                *o++ = x == 'b' ? '\b' : x == 'f' ? '\f' : x == 'n' ? '\n' : x == 'r' ? '\r' : x == 't' ? '\t' : x;
            }
            v->p++;
            break;
        case 'u': {
            long u = v->e - v->p > 4 ? vc__hex4(v->p + 1) : -1;
            if (u < 0) return jv_fail(v, esc, "invalid JSON: \\u must be followed by 4 hex digits");
            v->p += 5;
            if (u == 0) return jv_fail(v, esc, "invalid JSON: \\u0000 (a NUL character) is not allowed in a string");
            if (u >= 0xDC00 && u <= 0xDFFF) return jv_fail(v, esc, "invalid JSON: \\u%04lx is a lone low surrogate", u);
            unsigned long cp = (unsigned long)u;
            if (u >= 0xD800 && u <= 0xDBFF) {
                long lo = v->e - v->p > 5 && v->p[0] == '\\' && v->p[1] == 'u' ? vc__hex4(v->p + 2) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return jv_fail(v, esc, "invalid JSON: \\u%04lx is a high surrogate without a low surrogate after it", u);
                v->p += 6;
                cp = 0x10000 + (((cp & 0x3FF) << 10) | ((unsigned long)lo & 0x3FF));
            }
            if (o) o = put_utf8(o, cp);
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

/* 10^0 .. 10^22: each exact in a double */
static const double pow10_exact[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int locale_point(void)
{
    const char *dp = localeconv()->decimal_point;
    return dp[0] && !dp[1] ? (unsigned char)dp[0] : -1;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* A number at v->p (the text's closing NUL is not a digit: no bound to check); building, its value in it
 * as cJSON's parse_number reads it */
static int jv_number(jv *v, cJSON *it)
{
    const char *s = v->p, *p = s;
    if (*p == '-') p++;
    if (!is_digit(*p)) return jv_unexpected(v, s, "a value");
    if (*p == '0' && is_digit(p[1])) return jv_fail(v, s, "invalid JSON: a number may not start with 0 (write it without leading zeros)");
    uint64_t u = 0; /* the digits, the fraction's too, as one integer: wraps beyond 19 digits, used up to 15 */
    int digits = 0, frac = 0;
    for (; is_digit(*p); p++, digits++) u = u * 10 + (uint64_t)(*p - '0');
    bool dot = *p == '.', ex = false;
    if (dot) {
        p++;
        if (!is_digit(*p)) return jv_fail(v, s, "invalid JSON: a digit must follow the '.' of a number");
        for (; is_digit(*p); p++, digits++, frac++) u = u * 10 + (uint64_t)(*p - '0');
    }
    if (*p == 'e' || *p == 'E') {
        ex = true;
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!is_digit(*p)) return jv_fail(v, s, "invalid JSON: a digit must follow the exponent of a number");
        while (is_digit(*p)) p++;
    }
    v->p = p;
    if (p - s > JSON_MAX_NUMBER) return jv_fail(v, s, "invalid JSON: a number longer than %d characters", JSON_MAX_NUMBER);
    if (is_word(*p) || *p == '.') return jv_unexpected(v, p, "',' or the end of the value after a number");
    if (!it) return 0;
    if (dot && !v->dp) v->dp = locale_point();
    double x;
    if (!ex && (!dot || v->dp > 0) && digits <= 15) {
        /* at most 15 digits: u < 2^53 and 10^frac exact, so u / 10^frac, rounded once, is the decimal's
         * correctly rounded value, which strtod returns (Clinger's fast path; an integer is u itself); cJSON
         * writes the locale's one-byte point for '.', which strtod reads back */
        x = frac ? (double)u / pow10_exact[frac] : (double)u;
        if (*s == '-') x = -x;
    } else { /* cJSON's parse_number: at most 63 characters (the validator's limit), '.' as the locale writes it */
        char buf[64], *stop = NULL;
        if (!v->dp) v->dp = locale_point();
        size_t i = 0, n = (size_t)(p - s);
        for (; i < n; i++) buf[i] = s[i] == '.' ? (char)(v->dp > 0 ? v->dp : localeconv()->decimal_point[0]) : s[i];
        buf[i] = '\0';
        x = strtod(buf, &stop);
        /* a locale whose point is not one byte: strtod stops at it, and cJSON's parse fails after the number */
        if (stop != buf + i) v->failed = true;
    }
    it->type = cJSON_Number;
    it->valuedouble = x;
    it->valueint = x >= INT_MAX ? INT_MAX : x <= (double)INT_MIN ? INT_MIN : (int)x;
    return 0;
}

static int jv_value(jv *v, cJSON **out);

static void jv_where(const jv *v, const char *open, char *buf, size_t n)
{
    int l, c;
    vc__line_col(v->b, (size_t)(v->e - v->b), open, &l, &c);
    snprintf(buf, n, "%d:%d", l, c);
}

static int jv_container(jv *v, cJSON *it)
{
    const char *open = v->p;
    bool obj = *v->p == '{';
    char close = obj ? '}' : ']';
    if (++v->depth > JSON_MAX_DEPTH)
        return jv_fail(v, v->p, "nesting deeper than %d levels of JSON lists and objects (Sequential blocks may nest %d deep)",
                       JSON_MAX_DEPTH, VC_MAX_DEPTH);
    if (it) it->type = obj ? cJSON_Object : cJSON_Array;
    v->p++;
    jv_ws(v);
    if (v->p < v->e && *v->p == close) {
        v->p++;
        v->depth--;
        return 0;
    }
    cJSON *head = NULL, *cur = NULL;
    for (;;) {
        char *key = NULL;
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
            if (jv_string(v, &key)) return -1;
            jv_ws(v);
            if (v->p >= v->e) goto eof;
            if (*v->p != ':') return jv_unexpected(v, v->p, "':' after the key");
            v->p++;
            jv_ws(v);
        } else if (v->p < v->e && *v->p == ']') {
            return jv_fail(v, v->p, "invalid JSON: a trailing comma before ']'");
        }
        if (v->p >= v->e) goto eof;
        cJSON *c = NULL;
        if (jv_value(v, &c)) return -1;
        if (c) {
            c->string = key;
            if (!head) {
                head = c;
                it->child = c;
            } else {
                cur->next = c;
                c->prev = cur;
            }
            cur = c;
            head->prev = cur;
        }
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

/* A value at v->p; building, its node in *out */
static int jv_value(jv *v, cJSON **out)
{
    if (v->p >= v->e) return jv_unexpected(v, v->p, "a value");
    if (++v->values > JSON_MAX_VALUES)
        return jv_fail(v, v->p, "more than %d JSON values in the file: the limit (a model needs far fewer)", JSON_MAX_VALUES);
    cJSON *it = NULL;
    if (v->node) {
        it = *out = v->node++;
        memset(it, 0, sizeof *it);
    }
    switch (*v->p) {
    case '{': case '[': return jv_container(v, it);
    case '"':
        if (it) it->type = cJSON_String;
        return jv_string(v, it ? &it->valuestring : NULL);
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        if (*v->p == '-' && jv_hint(v, v->p)) return jv_unexpected(v, v->p, "a value");
        return jv_number(v, it);
    default: break;
    }
    static const char *const lit[] = {"true", "false", "null"};
    static const int type[] = {cJSON_True, cJSON_False, cJSON_NULL};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lit[i]);
        if ((size_t)(v->e - v->p) >= n && !memcmp(v->p, lit[i], n) && (v->p + n == v->e || !is_word(v->p[n]))) {
            v->p += n;
            if (it) {
                it->type = type[i];
                it->valueint = i == 0;
            }
            return 0;
        }
    }
    return jv_unexpected(v, v->p, "a value");
}

int vc__json_read(const char *text, size_t len, cJSON **tree, const char **at, char *msg, size_t n, long *values)
{
    jv v = {text, text, text + len, NULL, "", 0, 0, NULL, NULL, 0, false};
    void *block = NULL;
    if (tree) {
        *tree = NULL;
        /* the nodes: one per value, at most one more than the text's '[', '{' and ',' (each item of a list
         * or member of an object but the first follows a ','), and never more than JSON_MAX_VALUES (the
         * validator refuses the value after them before it takes a node); then the strings, keys
         * included: each decoded string and its NUL take fewer bytes than its text with its quotes
         * (escapes only shrink), so all of them at most len. Pages of the block no value takes are never
         * touched. */
        size_t nodes = 1;
        const unsigned char *u = (const unsigned char *)text;
        for (size_t i = 0; i < len;) { /* counted in 32 bits, a block at a time: a loop the compiler vectorizes */
            size_t stop = len - i > 65535 ? i + 65535 : len;
            uint32_t c = 0;
            for (; i < stop; i++) c += (uint32_t)((u[i] == ',') | (u[i] == '[') | (u[i] == '{'));
            nodes += c;
        }
        if (nodes > JSON_MAX_VALUES) nodes = JSON_MAX_VALUES;
        if (len >= SIZE_MAX - nodes * sizeof(cJSON) || !(block = malloc(nodes * sizeof(cJSON) + len + 1))) {
            /* out of memory: still the validator's answer, without a tree */
        } else {
            v.node = block;
            v.chars = (char *)((cJSON *)block + nodes);
        }
    }
    cJSON *root = NULL;
    jv_ws(&v);
    int rc = jv_value(&v, &root);
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
    *values = v.values;
    if (tree && !rc && block && !v.failed) *tree = root; /* the first node: block itself */
    else free(block);
    return rc;
}

/* 0 when text[0..len) is one valid JSON value (*values of them, counted as
 * containers, strings, numbers and literals: keys not included); else -1 with *at and msg. */
int vc__json_validate(const char *text, size_t len, const char **at, char *msg, size_t n, long *values)
{
    return vc__json_read(text, len, NULL, at, msg, n, values);
}

void vc__json_free(cJSON *root) { free(root); }
