/*
 * parse.c — the command line's error line and option values (split out of
 * main.c): die() and die_err() (one line on the error stream, exit 2),
 * checked writes (flush_out), and the parsers of counts, sizes, numbers,
 * shapes, --sweep lists and closed choices.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "main.h"

/* Where reports and the error line go: vc_cli_main's out and err (stdout
 * and stderr for the program; memory streams for fuzz/fuzz_cli.c). */
FILE *cli_out, *cli_err;

/* One line on stderr; whatever the user gave (option values, file names)
 * is shown escaped (vc_escape_text): no raw control byte, valid UTF-8. */
int die(const char *fmt, ...)
{
    char raw[2048], safe[4 * sizeof raw];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    vc_escape_text(safe, sizeof safe, raw);
    fprintf(cli_err, "vramcalc: %s\n", safe);
    return EXIT_USAGE;
}

/* The model file being estimated, for errors that arise after loading
 * (a sweep's or a search's batch): they name it too. */
const char *model_file;

int die_err(const vc_error *err)
{
    char msg[1200];
    vc_error e = *err;
    if (!e.file[0] && model_file) snprintf(e.file, sizeof e.file, "%s", model_file);
    vc_error_format(&e, msg, sizeof msg);
    return die("%s", msg);
}

/* A whole positive (or non-negative) decimal integer; no signs, exponents or junk. */
int parse_count(const char *opt, const char *s, int64_t min, int64_t *out)
{
    char *end;
    if (!s || !*s || !(*s >= '0' && *s <= '9')) goto bad;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE) return die("%s: %s is too large", opt, s);
    if (*end || v < min) goto bad;
    *out = v;
    return 0;
bad:
    return die("%s: expected a %s integer, got '%s'", opt, min > 0 ? "positive" : "non-negative", s ? s : "");
}

/* Every write to stdout is checked: a report that could not be written
 * (a full disk, a closed pipe with SIGPIPE ignored) is an error, one line
 * on stderr and exit 2, never a silent success. */
int flush_out(int rc)
{
    if (fflush(cli_out) == 0 && !ferror(cli_out)) return rc;
    int e = errno ? errno : EIO;
    return die("cannot write the output: %s", strerror(e));
}

/* --fsdp-reshard-after-forward: true, false or a positive integer (fully_shard's
 * reshard_after_forward: bool | int); the library checks the integer against the world. */
int parse_reshard(const char *s, int64_t *out)
{
    if (s && !strcmp(s, "true")) *out = VC_FSDP_RESHARD_TRUE;
    else if (s && !strcmp(s, "false")) *out = VC_FSDP_RESHARD_FALSE;
    else if (s && *s >= '0' && *s <= '9') return parse_count("--fsdp-reshard-after-forward", s, 1, out);
    else return die("--fsdp-reshard-after-forward: expected true, false or a positive integer, got '%s'", s ? s : "");
    return 0;
}

/* --ds-overlap-comm: true or false (DeepSpeedZeroConfig's overlap_comm: Optional[bool]). */
int parse_overlap(const char *s, int *out)
{
    if (s && !strcmp(s, "true")) *out = VC_DS_OVERLAP_ON;
    else if (s && !strcmp(s, "false")) *out = VC_DS_OVERLAP_OFF;
    else return die("--ds-overlap-comm: expected true or false, got '%s'", s ? s : "");
    return 0;
}

/* Bytes with an optional unit (the library's vc_parse_size). */
int parse_size(const char *opt, const char *s, int64_t *out)
{
    vc_error err;
    memset(&err, 0, sizeof err);
    if (vc_parse_size(s, out, &err)) return die("%s: %s", opt, err.msg);
    return 0;
}

/* A decimal number in [lo, hi]. */
int parse_real(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return die("%s: expected a number from %g to %g, got '%s'", opt, lo, hi, s);
    *out = v;
    return 0;
}

int parse_shape(const char *s, int64_t *dims, int *nd)
{
    *nd = 0;
    const char *p = s;
    while (*p) {
        if (*nd == VC_MAX_DIMS) return die("--input: more than %d dimensions in '%s'", VC_MAX_DIMS, s);
        char *end;
        if (!(*p >= '0' && *p <= '9')) return die("--input: expected dimensions such as 3,224,224, got '%s'", s);
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || v < 1) return die("--input: expected positive dimensions, got '%s'", s);
        dims[(*nd)++] = v;
        p = end;
        if ((*p == ',' || *p == 'x') && p[1]) p++; /* a separator needs a dimension after it: not "784," */
        else if (*p) return die("--input: expected dimensions such as 3,224,224, got '%s'", s);
    }
    return *nd ? 0 : die("--input: expected dimensions such as 3,224,224");
}

/* A positive integer inside a --sweep item: digits only, at most 2^53. */
static const char *sweep_int(const char *p, int64_t *v)
{
    int64_t x = 0;
    const char *q = p;
    for (; *q >= '0' && *q <= '9'; q++) {
        x = x * 10 + (*q - '0');
        if (x > (INT64_C(1) << 53)) return NULL;
    }
    if (q == p || x < 1) return NULL;
    *v = x;
    return q;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* "1,8,32", "1:64", "1:64:8", "1:4096:x2", and lists of them: sorted, without repeats. */
int parse_sweep(const char *s, int64_t **out, size_t *n)
{
    size_t cap = 64, k = 0;
    int64_t *v = malloc(cap * sizeof *v);
    if (!v) return die("out of memory");
    const char *p = s;
    int rc = 0;
    for (;;) {
        int64_t a, b, step = 1;
        bool geo = false;
        const char *q = sweep_int(p, &a);
        if (!q) goto bad;
        b = a;
        if (*q == ':') {
            if (!(q = sweep_int(q + 1, &b)) || b < a) goto bad;
            if (*q == ':') {
                q++;
                if (*q == 'x' || *q == '*') {
                    geo = true;
                    q++;
                }
                if (!(q = sweep_int(q, &step)) || (geo && step < 2)) goto bad;
            }
        }
        for (int64_t x = a; x <= b;) {
            if (k == MAX_SWEEP) {
                rc = die("--sweep: more than %d batch sizes in '%s'", MAX_SWEEP, s);
                goto fail;
            }
            if (k == cap) {
                int64_t *nv = realloc(v, (cap *= 2) * sizeof *v);
                if (!nv) {
                    rc = die("out of memory");
                    goto fail;
                }
                v = nv;
            }
            v[k++] = x;
            if (geo ? x > b / step : x > b - step) break;
            x = geo ? x * step : x + step;
        }
        if (!*q) break;
        if (*q != ',') goto bad;
        p = q + 1;
    }
    qsort(v, k, sizeof *v, cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || v[u - 1] != v[i]) v[u++] = v[i];
    *out = v;
    *n = u;
    return 0;
bad:
    rc = die("--sweep: expected batch sizes such as 1,8,32 or 1:64 or 1:64:8 or 1:4096:x2, got '%s'", s);
fail:
    free(v);
    return rc;
}

/* choices: the options table's VC_CHOICES list ("a, b, c, "), or prose. */
int choose(const char *opt, const char *s, int v, const char *choices)
{
    size_t n = strlen(choices);
    while (n && (choices[n - 1] == ' ' || choices[n - 1] == ',')) n--;
    if (v < 0) return die("%s: unknown value '%s' (choose %.*s)", opt, s, (int)n, choices);
    return 0;
}
