/*
 * json_locate.c — an error's JSON path found in the (valid) text, to give it
 * a line:col: the semantic walk reports paths only.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "load.h"
#include "util.h"

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
            unsigned long u = (unsigned long)vc__hex4(p + 1);
            p += 4;
            if (u >= 0xD800 && u <= 0xDBFF && p + 6 < e) {
                unsigned long lo = (unsigned long)vc__hex4(p + 3);
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
void vc__locate_error(const char *text, size_t len, vc_error *err, bool at_key, int nth)
{
    if (!err || err->code == VC_OK || err->line > 0 || !text) return;
    if (err->code == VC_ERR_USAGE && err->path[0] == VC_OPTION_MARK) return; /* an option (O("seq"), O("tp")) has no place in the file */
    const char *val = NULL, *key = NULL;
    bool full = loc_walk(text, text + len, err->path, nth > 0 ? nth : 1, &val, &key);
    const char *at = full && at_key && key ? key : val;
    if (!at || at >= text + len) return;
    vc__line_col(text, len, at, &err->line, &err->col);
}
