/*
 * util.c — errors, arena, edit distance; reading a model file (vc_read_file).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static const char *const status_msg[] = {
#define VC_STATUS_MSG(name, msg) msg,
    VC_STATUS_MAP(VC_STATUS_MSG)
#undef VC_STATUS_MSG
};

unsigned vc_version(void) { return VC_VERSION_HEX; }

const char *vc_version_string(void) { return VC_VERSION; }

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

/* The length of the option mark at s ("\x1f" "tp" "\x1f", "\x1f" "mode=generate"
 * "\x1f", "\x1f" "-precision=fp32" "\x1f": util.h's O, OV, OS) naming an option
 * of the table, or 0. */
static size_t option_mark_len(const char *s)
{
    if (*s != VC_OPTION_MARK) return 0;
    const char *p = s + 1 + (s[1] == '-'), *end = strchr(p, VC_OPTION_MARK);
    size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
    char name[64];
    if (!end || !n || n >= sizeof name || (p[n] != '=' && p + n != end)) return 0;
    for (const char *v = p + n; v < end; v++)
        if ((unsigned char)*v < 0x20 || *v == 0x7f) return 0;
    memcpy(name, p, n);
    name[n] = '\0';
    const vc_option_info *o = vc_option_find(name);
    if (!o || (s[1] == '-' && !o->letter)) return 0;
    return (size_t)(end - s) + 1;
}

static void escape(char *buf, size_t n, const char *s, bool marks)
{
    size_t o = 0;
    if (n == 0) return;
    while (*s) {
        const unsigned char *u = (const unsigned char *)s;
        unsigned char c = u[0];
        char e[8];
        int len = utf8_len(u);
        size_t mark = marks ? option_mark_len(s) : 0;
        if (mark) {
            if (o + mark >= n) break;
            memcpy(buf + o, s, mark);
            o += mark;
            s += mark;
            continue;
        }
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

void vc_escape(char *buf, size_t n, const char *s) { escape(buf, n, s, false); }

void vc__escape_marked(char *buf, size_t n, const char *s) { escape(buf, n, s, true); }

void vc_escape_text(char *buf, size_t n, const char *s) { vc_escape(buf, n, s ? s : ""); }

vc_status vc_set_errorv(vc_error *err, vc_status code, const char *path, const char *fmt, va_list ap)
{
    if (!err || err->code != VC_OK) return code;
    char tmp[sizeof err->msg];
    err->code = code;
    vc__escape_marked(err->path, sizeof err->path, path ? path : "");
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    vc__escape_marked(err->msg, sizeof err->msg, tmp);
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

static void error_format(const vc_error *err, char *buf, size_t n, bool marks);

/* The option marks spelt as the CLI writes them (--tp): vc_error_format_for
 * spells them, then formats with vc__error_format_plain. */
void vc_error_format(const vc_error *err, char *buf, size_t n) { vc_error_format_for(err, VC_SPELL_CLI, buf, n); }

void vc__error_format_plain(const vc_error *err, char *buf, size_t n) { error_format(err, buf, n, false); }

void vc__error_format_marked(const vc_error *err, char *buf, size_t n) { error_format(err, buf, n, true); }

static void error_format(const vc_error *err, char *buf, size_t n, bool marks)
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
        escape(esc, sizeof esc, err->path, marks);
        APPEND("%s: ", esc);
    }
    escape(esc, sizeof esc, err->msg[0] ? err->msg : vc_strerror(err->code), marks);
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

/* n bytes (rounded up to 16) of the arena, not cleared */
void *vc_arena_take(vc_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct chunk *h = a->head;
    if (!h || h->cap - h->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        struct chunk *c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = h;
        c->used = 0;
        c->cap = cap;
        a->head = h = c;
    }
    void *p = h->data + h->used;
    h->used += n;
    return p;
}

void *vc_arena_alloc(vc_arena *a, size_t n)
{
    void *p = vc_arena_take(a, n);
    if (p) memset(p, 0, (n + 15) & ~(size_t)15); /* cleared as before, the rounding's tail too */
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
    char *p = vc_arena_take(a, n); /* every byte written below */
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

/* ------------------------------------------------------------- model files */

const char *vc_file_kind_refusal(unsigned mode)
{
    if (S_ISREG(mode) || S_ISFIFO(mode)) return NULL;
    if (S_ISDIR(mode)) return "a directory, not a model file: give the model's .json file (for a Hugging Face model, its config.json)";
    if (S_ISCHR(mode)) return "a character device, not a model file (to read standard input, give '-')";
    if (S_ISBLK(mode)) return "a block device, not a model file";
    if (S_ISSOCK(mode)) return "a socket, not a model file";
    return "not a regular file";
}

/* Reads f to its end after the `len` bytes already in buf (cap of them
 * allocated), at most limit bytes in all: 0, or an errno (ENOMEM included);
 * buf is freed on failure. */
static int read_all(FILE *f, size_t limit, char **bufp, size_t cap, size_t *lenp)
{
    char *buf = *bufp;
    size_t len = *lenp;
    int rerr = 0;
    while (!rerr) {
        if (len == cap) {
            if (cap >= limit) break;
            size_t nc = cap * 2 < limit ? cap * 2 : limit;
            char *nb = realloc(buf, nc);
            if (!nb) {
                rerr = ENOMEM;
                break;
            }
            buf = nb;
            cap = nc;
        }
        errno = 0;
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) rerr = errno ? errno : EIO;
            break;
        }
    }
    if (rerr) {
        free(buf);
        buf = NULL;
        len = 0;
    }
    *bufp = buf;
    *lenp = len;
    return rerr;
}

/* fifo(7): opened for reading without O_NONBLOCK, a FIFO waits in open(2)
 * for a writer, for ever when none comes. Opened with O_NONBLOCK, open
 * returns at once and a read gives data, EAGAIN (a writer has it open but
 * has written nothing yet) or 0 (no writer: pipe(7)). A writer started just
 * before the reader (`cat m.json > FIFO & vramcalc FIFO`) may not have
 * reached its open yet: it is given FIFO_WAIT_MS to come. Returns 0 (a
 * writer, *got bytes of its data in buf), -1 (no writer came) or an errno. */
#define FIFO_WAIT_MS 3000
static int fifo_first_read(int fd, char *buf, size_t cap, size_t *got)
{
    *got = 0;
    for (int waited = 0;;) {
        ssize_t n = read(fd, buf, cap);
        if (n > 0) {
            *got = (size_t)n;
            return 0;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (n < 0 && errno != EINTR) return errno;
        if (n == 0) {
            if (waited >= FIFO_WAIT_MS) return -1;
            struct pollfd p = {fd, POLLIN, 0};
            (void)poll(&p, 1, 50); /* wakes when a writer writes (or comes and goes) */
            waited += 50;
        }
    }
}

/* Opens path for vc_read_file: its descriptor, reads blocking, with the
 * first bytes of a FIFO already read into b (*got). -1 with the error set. */
static int open_model_file(const char *path, char *b, size_t cap, size_t *got, vc_error *err)
{
    /* What the path names, before opening it: opening a device can do
     * something (a tape rewinds), opening a FIFO waits for a writer. */
    struct stat st;
    if (stat(path, &st)) return vc_set_error(err, VC_ERR_IO, NULL, "cannot open: %s", strerror(errno)), -1;
    const char *no = vc_file_kind_refusal(st.st_mode);
    if (no) return vc_set_error(err, VC_ERR_IO, NULL, "%s", no), -1;
    /* O_NONBLOCK: open(2) of a FIFO returns at once, writer or not */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return vc_set_error(err, VC_ERR_IO, NULL, "cannot open: %s", strerror(errno)), -1;
    int e = fstat(fd, &st) ? errno : 0;
    if (!e && (no = vc_file_kind_refusal(st.st_mode))) { /* the path names something else by now */
        close(fd);
        return vc_set_error(err, VC_ERR_IO, NULL, "%s", no), -1;
    }
    int fr = !e && S_ISFIFO(st.st_mode) ? fifo_first_read(fd, b, cap, got) : 0;
    if (fr < 0) {
        close(fd);
        return vc_set_error(err, VC_ERR_IO, NULL,
                            "a FIFO with nothing to read: no program wrote to it within %d seconds "
                            "(start the writer first, e.g. 'cat model.json > FIFO &', or pipe the model into '-')",
                            FIFO_WAIT_MS / 1000),
               -1;
    }
    if (fr > 0) {
        close(fd);
        return vc_set_error(err, VC_ERR_IO, NULL, "cannot read: %s", strerror(fr)), -1;
    }
    /* reads block again: a FIFO's writer may be slow */
    int fl = e ? -1 : fcntl(fd, F_GETFL);
    if (e || fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        e = e ? e : errno;
        close(fd);
        return vc_set_error(err, VC_ERR_IO, NULL, "cannot open: %s", strerror(e)), -1;
    }
    return fd;
}

vc_status vc_read_file(const char *path, size_t limit, char **buf, size_t *len, vc_error *err)
{
    *buf = NULL;
    *len = 0;
    size_t cap = limit > 65536 ? 65536 : limit ? limit : 1, got = 0;
    char *b = malloc(cap);
    if (!b) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    FILE *f = stdin;
    if (!path[0]) {
        free(b);
        return vc_set_error(err, VC_ERR_IO, NULL, "the model file's name is empty");
    }
    if (!strcmp(path, "-")) {
        /* standard input as it is (a terminal, a pipe, a file, /dev/null): as jq and cat read it */
        struct stat st;
        if (fstat(STDIN_FILENO, &st) == 0 && S_ISDIR(st.st_mode)) {
            free(b);
            return vc_set_error(err, VC_ERR_IO, NULL, "standard input is %s", vc_file_kind_refusal(st.st_mode));
        }
    } else {
        int fd = open_model_file(path, b, cap, &got, err);
        if (fd < 0 || !(f = fdopen(fd, "rb"))) {
            if (fd >= 0) {
                vc_set_error(err, VC_ERR_IO, NULL, "cannot open: %s", strerror(errno));
                close(fd);
            }
            free(b);
            return err ? err->code : VC_ERR_IO;
        }
    }
    int rerr = read_all(f, limit, &b, cap, &got);
    if (f != stdin) fclose(f);
    if (rerr == ENOMEM) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    if (rerr) return vc_set_error(err, VC_ERR_IO, NULL, "cannot read: %s", strerror(rerr));
    *buf = b;
    *len = got;
    return VC_OK;
}
