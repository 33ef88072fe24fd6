/*
 * util.h — errors, checked arithmetic, a string arena, edit distance.
 */
#ifndef VC_UTIL_H
#define VC_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vramcalc/vramcalc.h"

#ifndef VC_OPTION_MARKS /* the same in src/util/util.h and layers/layer.h (layers/ includes only its own headers) */
#define VC_OPTION_MARKS
/* An option named in a message, between option marks (VC_OPTION_MARK), by its
 * table name (src/api/options.def): vc_error_format_for spells it as the front
 * end does. O("tp"): --tp, tp=; OV("mode", "generate"): --mode generate,
 * mode=generate; OS("precision", "fp32"): the CLI's short form, -p fp32,
 * precision=fp32. vc_set_error keeps marks that name an option of the table
 * (and escapes any other control byte, as before). */
#define O(name) "\x1f" name "\x1f"
#define OV(name, value) "\x1f" name "=" value "\x1f"
#define OS(name, value) "\x1f-" name "=" value "\x1f"
#endif

/* Fills err (if not NULL and not already set) and returns code. `path` may be NULL. */
vc_status vc_set_error(vc_error *err, vc_status code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
vc_status vc_set_errorv(vc_error *err, vc_status code, const char *path, const char *fmt, va_list ap);
void vc_error_clear(vc_error *err);
/* Copies s into buf (size n) with control bytes escaped (\n, \xNN): user text
 * quoted in an error stays on one line. Truncates to fit. */
void vc_escape(char *buf, size_t n, const char *s);
/* vc_escape, keeping the option marks that name an option of the table (O, OV, OS). */
void vc__escape_marked(char *buf, size_t n, const char *s);
/* vc_error_format, keeping the option marks of path and msg (for a message that quotes another). */
void vc__error_format_marked(const vc_error *err, char *buf, size_t n);
/* vc_error_format with every control byte escaped, marks too (what vc_error_format_for formats
 * once it has spelt them). */
void vc__error_format_plain(const vc_error *err, char *buf, size_t n);

/* buf = a + b + c, truncated to n - 1 bytes like snprintf (for hot paths:
 * a layer's JSON path is built several times per layer while loading). */
void vc_cat3(char *buf, size_t n, const char *a, const char *b, const char *c);
/* buf = a + b + "[" + i + "]", truncated likewise. */
void vc_cat_index(char *buf, size_t n, const char *a, const char *b, long long i);

/* Edit distance (Levenshtein plus adjacent swaps); 99 for strings over 64 bytes. */
int vc_edit_distance(const char *a, const char *b);

/* A model file's bytes, at most `limit` of them (one more than a size limit
 * is enough to refuse it): *buf (malloc'd, the caller frees) and *len.
 * "-" reads standard input. What the path names is checked before it is
 * read (vc_file_kind_refusal): a directory or a device is refused, a FIFO is
 * opened without blocking (cat and jq would wait for a writer for ever) and
 * refused when no program writes it. Errors: VC_ERR_IO (or VC_ERR_NOMEM),
 * the message without the path (err->file holds it). */
vc_status vc_read_file(const char *path, size_t limit, char **buf, size_t *len, vc_error *err);
/* Why a file of this st_mode cannot be read as a model, NULL when it can
 * (a regular file, or a FIFO / pipe). The one place that decides. */
const char *vc_file_kind_refusal(unsigned mode);

/* Bump allocator for strings and configs freed together with the model. */
typedef struct vc_arena vc_arena;
vc_arena *vc_arena_new(void);
void *vc_arena_alloc(vc_arena *a, size_t n); /* zeroed */
void *vc_arena_take(vc_arena *a, size_t n);  /* not cleared: 16-byte aligned, NULL out of memory */
char *vc_arena_strdup(vc_arena *a, const char *s);
char *vc_arena_printf(vc_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vc_arena_free(vc_arena *a);

#endif
