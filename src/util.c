/*
 * util.c — errors, arena, edit distance.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const status_msg[] = {
#define VC_STATUS_MSG(name, msg) msg,
    VC_STATUS_MAP(VC_STATUS_MSG)
#undef VC_STATUS_MSG
};

const char *vc_strerror(vc_status s)
{
    if ((unsigned)s >= sizeof status_msg / sizeof *status_msg) return "unknown status";
    return status_msg[s];
}

/* Copies s into buf (size n), escaping control bytes (\n, \t, \xNN) so that
 * an error built from user text stays one printable line. */
/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong forms, no surrogates, at most U+10FFFF), 0 when it is not one. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F))) return 0;
    if (n == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))) return 0;
    return n;
}

void vc_escape(char *buf, size_t n, const char *s)
{
    size_t o = 0;
    if (n == 0) return;
    while (*s) {
        const unsigned char *u = (const unsigned char *)s;
        unsigned char c = u[0];
        char e[8];
        int len = utf8_len(u);
        if (c == '\n') snprintf(e, sizeof e, "\\n");
        else if (c == '\r') snprintf(e, sizeof e, "\\r");
        else if (c == '\t') snprintf(e, sizeof e, "\\t");
        else if (c < 0x20 || c == 0x7f || len == 0) snprintf(e, sizeof e, "\\x%02x", c);
        else if (len == 2 && c == 0xC2 && u[1] < 0xA0) snprintf(e, sizeof e, "\\u%04x", u[1]); /* C1 controls */
        else {
            memcpy(e, s, (size_t)len);
            e[len] = '\0';
        }
        size_t l = strlen(e);
        if (o + l >= n) break;
        memcpy(buf + o, e, l);
        o += l;
        s += len ? len : 1;
    }
    buf[o] = '\0';
}

void vc_escape_text(char *buf, size_t n, const char *s) { vc_escape(buf, n, s ? s : ""); }

vc_status vc_set_errorv(vc_error *err, vc_status code, const char *path, const char *fmt, va_list ap)
{
    if (!err || err->code != VC_OK) return code;
    char tmp[sizeof err->msg];
    err->code = code;
    vc_escape(err->path, sizeof err->path, path ? path : "");
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    vc_escape(err->msg, sizeof err->msg, tmp);
    return code;
}

vc_status vc_set_error(vc_error *err, vc_status code, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vc_set_errorv(err, code, path, fmt, ap);
    va_end(ap);
    return code;
}

void vc_error_clear(vc_error *err)
{
    if (err) memset(err, 0, sizeof *err);
}

void vc_error_format(const vc_error *err, char *buf, size_t n)
{
    size_t used = 0;
    if (n == 0) return;
    buf[0] = '\0';
#define APPEND(...)                                                         \
    do {                                                                    \
        int w_ = snprintf(buf + used, n - used, __VA_ARGS__);               \
        if (w_ > 0) used += (size_t)w_ < n - used ? (size_t)w_ : n - used - 1; \
    } while (0)
    char esc[sizeof err->msg];
    if (err->file[0]) {
        vc_escape(esc, sizeof esc, err->file);
        APPEND("%s", esc);
        if (err->line > 0) APPEND(":%d:%d", err->line, err->col);
        APPEND(": ");
    }
    if (err->path[0]) {
        vc_escape(esc, sizeof esc, err->path);
        APPEND("%s: ", esc);
    }
    vc_escape(esc, sizeof esc, err->msg[0] ? err->msg : vc_strerror(err->code));
    APPEND("%s", esc);
#undef APPEND
}

/* Optimal-string-alignment distance: insertions, deletions, substitutions
 * and swaps of adjacent characters ("bais" -> "bias" is 1) each cost 1. */
int vc_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    int d[65][65];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            int best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

struct vc_arena {
    struct chunk *head;
};
struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

vc_arena *vc_arena_new(void) { return calloc(1, sizeof(vc_arena)); }

void *vc_arena_alloc(vc_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        struct chunk *c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    memset(p, 0, n);
    return p;
}

static size_t put_str(char *buf, size_t n, size_t at, const char *s)
{
    size_t len = strlen(s);
    if (at + 1 >= n) return at;
    if (len > n - 1 - at) len = n - 1 - at;
    memcpy(buf + at, s, len);
    return at + len;
}

void vc_cat3(char *buf, size_t n, const char *a, const char *b, const char *c)
{
    if (!n) return;
    size_t at = put_str(buf, n, 0, a);
    at = put_str(buf, n, at, b);
    at = put_str(buf, n, at, c);
    buf[at] = 0;
}

void vc_cat_index(char *buf, size_t n, const char *a, const char *b, long long i)
{
    char num[32], *d = num + sizeof num;
    unsigned long long u = i < 0 ? 0ULL - (unsigned long long)i : (unsigned long long)i;
    *--d = 0;
    *--d = ']';
    do *--d = (char)('0' + u % 10);
    while (u /= 10);
    if (i < 0) *--d = '-';
    *--d = '[';
    if (!n) return;
    size_t at = put_str(buf, n, 0, a);
    at = put_str(buf, n, at, b);
    at = put_str(buf, n, at, d);
    buf[at] = 0;
}

char *vc_arena_strdup(vc_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = vc_arena_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}

char *vc_arena_printf(vc_arena *a, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    return vc_arena_strdup(a, tmp);
}

void vc_arena_free(vc_arena *a)
{
    if (!a) return;
    for (struct chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}
