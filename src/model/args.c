/*
 * args.c — vc_args: a layer kind reads its JSON fields (layer.h vc_arg_*),
 * each error naming the key, what was expected and what was found; and the
 * JSON value helpers the loader shares.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "load.h"
#include "util.h"

/* ------------------------------------------------------ JSON value helpers */


/* The shortest text that reads back as d ("0.1", not 0.10000000000000001). */
void vc__fmt_double(double d, char *buf, size_t n)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) return;
    }
}

void vc__describe(const cJSON *v, char *buf, size_t n)
{
    if (!v) snprintf(buf, n, "nothing");
    else if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) snprintf(buf, n, "a number beyond the range of a double");
    else if (cJSON_IsNumber(v)) vc__fmt_double(v->valuedouble, buf, n);
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
int vc__json_int(const cJSON *v, int64_t *out)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!isfinite(d)) return -1;
    if (d != floor(d)) return -1;
    if (fabs(d) > (double)MAX_INT) return -2;
    *out = (int64_t)d;
    return 0;
}

const char *vc__int_expect(int64_t min, char *buf, size_t n)
{
    if (min == 1) return "a positive integer";
    if (min == 0) return "a non-negative integer";
    if (min < -MAX_INT) return "an integer";
    snprintf(buf, n, "an integer of at least %lld", (long long)min);
    return buf;
}

/* The candidate nearest to word ("did you mean"), or NULL when none is close. */
const char *vc__nearest(const char *word, const char *const *cands, int n)
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


void vc__args_known_unique(vc_args *a)
{
    int n = 0;
    for (int i = 0; i < a->nknown; i++) {
        int j = 0;
        while (j < n && strcmp(a->known[j], a->known[i])) j++;
        if (j == n) a->known[n++] = a->known[i];
    }
    a->nknown = n;
}

/* key into known[]: whether it is there (it was, or it is added: known[] holds at most MAX_KNOWN distinct
 * keys). A key is appended unchecked (a kind asks each key once, or a few twice): the repeats are removed
 * when known[] fills, and before a message reads it (vc__args_known_unique), so that its distinct keys
 * and their order are those of a list that never held a repeat. */
static bool known(vc_args *a, const char *key)
{
    if (a->nknown < MAX_KNOWN) {
        a->known[a->nknown++] = key;
        return true;
    }
    if (!a->full) {
        vc__args_known_unique(a);
        a->full = a->nknown == MAX_KNOWN;
        if (!a->full) {
            a->known[a->nknown++] = key;
            return true;
        }
    }
    for (int i = 0; i < a->nknown; i++)
        if (!strcmp(a->known[i], key)) return true;
    return false;
}

/* cJSON_GetObjectItemCaseSensitive (cJSON.c get_object_item): the first member named key, NULL at a member
 * without a name; the first bytes compared before strcmp (a layer object has a dozen keys, read one by one).
 * With is_known, the member's bit in a->hit. */
static const cJSON *member_hit(vc_args *a, const char *key, bool is_known)
{
    if (!a->obj) return NULL;
    const cJSON *c = a->obj->child;
    unsigned j = 0;
    for (; c && c->string && (c->string[0] != key[0] || strcmp(key, c->string)); c = c->next) j++;
    if (!c || !c->string) return NULL;
    if (is_known && j < 64) a->hit |= (uint64_t)1 << j;
    return c;
}

void vc_arg_known(vc_args *a, const char *key) { (void)member_hit(a, key, known(a, key)); }

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

static const cJSON *get(vc_args *a, const char *key) { return member_hit(a, key, known(a, key)); }

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
    int rc = vc__json_int(v, &x);
    if (rc == 0 && x >= min) {
        *out = x;
        return 0;
    }
    vc__describe(v, got, sizeof got);
    if (rc == -2 && min >= 0 && !(v->valuedouble < 0))
        return vc_arg_fail(a, key, "expected %s of at most 2^40 (%lld), got %s", vc__int_expect(min, eb, sizeof eb),
                           (long long)MAX_INT, got);
    if (rc == -2 && min < 0) return vc_arg_fail(a, key, "expected an integer from -2^40 to 2^40, got %s", got);
    return vc_arg_fail(a, key, "expected %s, got %s", vc__int_expect(min, eb, sizeof eb), got);
}

/* Each item of the list v, named key[i] in errors: an integer of at least min. */
static int list_ints(vc_args *a, const char *key, const cJSON *v, int64_t min, int64_t *out)
{
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        int64_t x = 0;
        if (!vc__json_int(e, &x) && x >= min) { /* one_int's answer without an error: no name needed */
            out[i] = x;
            continue;
        }
        char k[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        if (one_int(a, k, e, min, &out[i])) return -1;
    }
    return 0;
}

int64_t vc__placeholder(int64_t min) { return min > 1 ? min : 1; }

int vc_arg_int(vc_args *a, const char *key, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        if (def == VC_REQUIRED && a->probe) def = vc__placeholder(min);
        char eb[48];
        if (def == VC_REQUIRED)
            return vc_arg_fail(a, key, "missing (%s requires %s, %s)", a->kind, key, vc__int_expect(min, eb, sizeof eb));
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
        if (def == VC_REQUIRED && a->probe) def = vc__placeholder(min);
        if (def == VC_REQUIRED)
            return vc_arg_fail(a, key, "missing (%s requires %s, %s or a list of %d)", a->kind, key,
                               vc__int_expect(min, eb, sizeof eb), n);
        for (int i = 0; i < n; i++) out[i] = def;
        return 0;
    }
    if (!cJSON_IsArray(v)) {
        int64_t x;
        if (!cJSON_IsNumber(v)) {
            char got[80];
            vc__describe(v, got, sizeof got);
            return vc_arg_fail(a, key, "expected %s or a list of %d, got %s", vc__int_expect(min, eb, sizeof eb), n, got);
        }
        if (one_int(a, key, v, min, &x)) return -1;
        for (int i = 0; i < n; i++) out[i] = x;
        return 0;
    }
    int len = cJSON_GetArraySize(v);
    if (len != n)
        return vc_arg_fail(a, key, "expected %s or a list of %d, got a list of %d", vc__int_expect(min, eb, sizeof eb), n, len);
    return list_ints(a, key, v, min, out);
}

int vc_arg_list(vc_args *a, const char *key, bool required, int64_t min, int64_t *out, int *n)
{
    const cJSON *v = get(a, key);
    *n = 0;
    if (!v && required && a->probe) {
        out[0] = vc__placeholder(min);
        *n = 1;
        return 0;
    }
    if (!v) return required ? vc_arg_fail(a, key, "missing (%s requires %s, a list of integers)", a->kind, key) : 0;
    if (!cJSON_IsArray(v)) {
        char got[80];
        vc__describe(v, got, sizeof got);
        return vc_arg_fail(a, key, "expected a list of integers, got %s", got);
    }
    int len = cJSON_GetArraySize(v);
    if (len < 1 || len > VC_MAX_DIMS)
        return len ? vc_arg_fail(a, key, "expected a list of 1 to %d integers, got a list of %d", VC_MAX_DIMS, len)
                   : vc_arg_fail(a, key, "expected a list of 1 to %d integers, got an empty list", VC_MAX_DIMS);
    if (list_ints(a, key, v, min, out)) return -1;
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
        vc__describe(v, got, sizeof got);
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
        vc__describe(v, got, sizeof got);
        vc__fmt_double(min, lo, sizeof lo);
        vc__fmt_double(max, hi, sizeof hi);
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
    int nc = 0;
    for (int i = 0; choices[i]; i++, nc++) {
        if (v && cJSON_IsString(v) && !strcmp(v->valuestring, choices[i])) {
            *out = i;
            return 0;
        }
    }
    if (!v && def >= 0) {
        *out = def;
        return 0;
    }
    char list[256] = ""; /* the choices, for the message (formatted only when there is one) */
    size_t used = 0;
    for (int i = 0; i < nc; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s\"%s\"", i ? ", " : "", choices[i]);
        if (w > 0) used = used + (size_t)w < sizeof list ? used + (size_t)w : sizeof list - 1;
    }
    if (!v) {
        if (def < 0) return vc_arg_fail(a, key, "missing (%s requires %s, one of %s)", a->kind, key, list);
        *out = def;
        return 0;
    }
    char got[80];
    vc__describe(v, got, sizeof got);
    const char *s = cJSON_IsString(v) ? vc__nearest(v->valuestring, choices, nc) : NULL;
    if (s) return vc_arg_fail(a, key, "expected one of %s, got %s (did you mean \"%s\"?)", list, got, s);
    return vc_arg_fail(a, key, "expected one of %s, got %s", list, got);
}
