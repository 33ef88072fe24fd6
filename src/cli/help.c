/*
 * help.c — the CLI's options table put to use: --help's text (each
 * description wrapped to 80 columns) and getopt_long's tables.
 */
#include <stdbool.h>
#include <string.h>

#include "cli.h"

#define HELP_WIDTH 79 /* the last column a --help line may use */
#define HELP_DESC 25  /* where a description starts */

/* The choices without their trailing ", " (VC_CHOICES leaves one). */
static size_t choices_len(const char *c)
{
    size_t n = strlen(c);
    while (n && (c[n - 1] == ' ' || c[n - 1] == ',')) n--;
    return n;
}

/* The description with "{}" replaced by the choices, into buf. */
static void expand(const cli_option *o, char *buf, size_t cap)
{
    size_t k = 0;
    for (const char *p = o->help; *p && k + 1 < cap; p++) {
        if (p[0] == '{' && p[1] == '}' && o->choices) {
            size_t n = choices_len(o->choices);
            if (n > cap - 1 - k) n = cap - 1 - k;
            memcpy(buf + k, o->choices, n);
            k += n;
            p++;
        } else buf[k++] = *p;
    }
    buf[k] = '\0';
}

/* Words of text from column col (already written) to HELP_WIDTH, further
 * lines indented to HELP_DESC; a word longer than a line gets one alone. */
static void wrap(FILE *f, const char *text, int col)
{
    const char *p = text;
    bool first = true;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t w = strcspn(p, " ");
        if (!first && col + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_DESC, "");
            col = HELP_DESC;
            first = true;
        }
        if (!first) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, w, f);
        col += (int)w;
        p += w;
        first = false;
    }
    fputc('\n', f);
}

void cli_help(FILE *f, const char *head, const cli_option *t, size_t n, const char *tail)
{
    char desc[1024], opt[96];
    fputs(head, f);
    for (size_t i = 0; i < n; i++) {
        const cli_option *o = &t[i];
        if (!o->help) continue;
        snprintf(opt, sizeof opt, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        int col = o->letter ? fprintf(f, "  -%c, %s", o->letter, opt) : fprintf(f, "      %s", opt);
        if (col + 2 > HELP_DESC) { /* a long option: its description on the next line */
            fprintf(f, "\n%*s", HELP_DESC, "");
        } else fprintf(f, "%*s", HELP_DESC - col, "");
        expand(o, desc, sizeof desc);
        wrap(f, desc, HELP_DESC);
    }
    fputs(tail, f);
}

void cli_getopt_tables(const cli_option *t, size_t n, struct option *lo, char *shorts)
{
    size_t k = 0;
    shorts[k++] = ':'; /* a missing value is ':', not '?' */
    for (size_t i = 0; i < n; i++) {
        lo[i] = (struct option){t[i].name, t[i].arg ? required_argument : no_argument, NULL, t[i].id};
        if (t[i].letter) {
            shorts[k++] = t[i].letter;
            if (t[i].arg) shorts[k++] = ':';
        }
    }
    shorts[k] = '\0';
    lo[n] = (struct option){NULL, 0, NULL, 0};
}
