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

vc_status vc_set_errorv(vc_error *err, vc_status code, const char *path, const char *fmt, va_list ap)
{
    if (!err || err->code != VC_OK) return code;
    err->code = code;
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
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
    if (err->file[0]) {
        APPEND("%s", err->file);
        if (err->line > 0) APPEND(":%d:%d", err->line, err->col);
        APPEND(": ");
    }
    if (err->path[0]) APPEND("%s: ", err->path);
    APPEND("%s", err->msg[0] ? err->msg : vc_strerror(err->code));
#undef APPEND
}

int vc_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    int row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int tmp = row[j];
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            int best = prev + cost;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            prev = tmp;
        }
    }
    return row[lb];
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
