/*
 * text.c — text that fits the terminal's width (issue 16): cells padded or
 * cut with an ellipsis, and lines of items that wrap between items.
 *
 * A column is a code point: what reaches these functions was escaped
 * (vc_escape_text: no control byte, valid UTF-8), and the CLI's own text
 * is ASCII (wide East Asian characters are counted as one, a known limit).
 */
#include <string.h>

#include "report.h"

int text_cols(const char *s)
{
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (p[0] == 0x1b && p[1] == '[') { /* the report's own colour codes take no column */
            p += 2;
            while (*p && !(*p >= 0x40 && *p <= 0x7e)) p++;
            if (!*p) break;
            continue;
        }
        n += (*p & 0xc0) != 0x80;
    }
    return n;
}

/* The byte offset where column `cols` of s starts (its end if shorter). */
static size_t col_offset(const char *s, int cols)
{
    const unsigned char *p = (const unsigned char *)s;
    int n = 0;
    size_t i = 0;
    for (; p[i]; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            if (n == cols) break;
            n++;
        }
    }
    return i;
}

void text_fit(FILE *f, const char *s, int w, int flags, bool utf8)
{
    int n = text_cols(s);
    if (n <= w) {
        if (flags & FIT_RIGHT) fprintf(f, "%*s%s", w - n, "", s);
        else fprintf(f, "%s%*s", s, (flags & FIT_NOPAD) ? 0 : w - n, "");
        return;
    }
    const char *ell = utf8 ? "\u2026" : "...";
    int e = utf8 ? 1 : 3;
    if (w <= e) { /* no room for an ellipsis: the first w columns */
        fwrite(s, 1, col_offset(s, w), f);
        return;
    }
    int keep = w - e;
    if (flags & FIT_MIDDLE) { /* a third from the start, the rest from the end (a layer's leaf name) */
        int head = keep / 3, tail = keep - head;
        fwrite(s, 1, col_offset(s, head), f);
        fputs(ell, f);
        fputs(s + col_offset(s, n - tail), f);
    } else {
        fwrite(s, 1, col_offset(s, keep), f);
        fputs(ell, f);
    }
}

void line_begin(text_line *l, FILE *f, int width, int indent, const char *first)
{
    l->f = f;
    l->width = width;
    l->indent = indent;
    fputs(first, f);
    l->col = text_cols(first);
}

void line_itemn(text_line *l, const char *sep, const char *item, size_t n)
{
    int cols = 0;
    for (size_t i = 0; i < n; i++) cols += ((unsigned char)item[i] & 0xc0) != 0x80;
    int need = text_cols(sep) + cols;
    if (l->col + need > l->width && l->col > l->indent) { /* the item on a new line, its separator's spaces dropped */
        size_t k = strlen(sep);
        while (k && sep[k - 1] == ' ') k--;
        fwrite(sep, 1, k, l->f);
        fprintf(l->f, "\n%*s", l->indent, "");
        fwrite(item, 1, n, l->f);
        l->col = l->indent + cols;
        return;
    }
    fputs(sep, l->f);
    fwrite(item, 1, n, l->f);
    l->col += need;
}

void line_item(text_line *l, const char *sep, const char *item) { line_itemn(l, sep, item, strlen(item)); }

void line_end(text_line *l) { fputc('\n', l->f); }
