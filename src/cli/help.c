/*
 * help.c — the library's option table put to use by the command line:
 * --help's text (each description wrapped to 80 columns) and getopt_long's
 * tables.
 */
#include <stdbool.h>
#include <string.h>

#include "main.h"

#define HELP_WIDTH 79 /* the last column a --help line may use */
#define HELP_DESC 25  /* where a description starts */

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

/* --help: the usage, a few examples, the options table (the library's,
 * vc_option_at) by section, the notes. */
static const char usage_head[] =
    "usage: vramcalc MODEL.json [options]        (MODEL may be - for standard input)\n"
    "       vramcalc --params N [--activations N] [options]\n"
    "\n"
    "examples:\n"
    "  vramcalc examples/resnet50.json -b 32 --gpu a100-80gb      does batch 32 fit?\n"
    "  vramcalc config.json -p bf16 --gpu rtx4090 --max-batch     the largest batch\n"
    "  vramcalc config.json --qlora --gpu rtx4090                 QLoRA fine-tuning\n"
    "  vramcalc config.json --serve --gpu h100-80gb               vLLM's KV cache\n"
    "  vramcalc --params 7000000000 -p mixed-bf16 --parallel zero3 --gpus 8\n"
    "\n"
    "options:\n";
static const char usage_tail[] =
    "\n"
    "SIZE is bytes, or a number with a unit: 512MiB, 24GiB, 80GB, 1.5TB (KB/MB/GB/TB\n"
    "are powers of 1000, KiB/MiB/GiB/TiB powers of 1024).\n"
    "Exit status: 0 estimated (and fits), 1 does not fit --gpu, 2 bad usage or bad\n"
    "model file; with --sweep, 0 unless an error (each row says whether it fits).\n";

static void help_entry(FILE *f, const vc_option_info *o)
{
    char desc[1024], opt[96];
    snprintf(opt, sizeof opt, "--%s%s%s", o->flag, o->arg ? " " : "", o->arg ? o->arg : "");
    int col = o->letter ? fprintf(f, "  -%c, %s", o->letter, opt) : fprintf(f, "      %s", opt);
    if (col + 2 > HELP_DESC) { /* a long option: its description on the next line */
        fprintf(f, "\n%*s", HELP_DESC, "");
    } else fprintf(f, "%*s", HELP_DESC - col, "");
    vc_option_help(o, desc, sizeof desc);
    wrap(f, desc, HELP_DESC);
}

void cli_help(FILE *f)
{
    fputs(usage_head, f);
    for (int s = 0; s < VC_SECTION__N; s++) { /* each section's rows in the table's order */
        fprintf(f, "%s%s:\n", s ? "\n" : "", vc_option_section_title((vc_option_section)s));
        for (size_t i = 0; i < vc_option_count(); i++) {
            const vc_option_info *o = vc_option_at(i);
            if (o->help && (int)o->section == s) help_entry(f, o);
        }
    }
    fputs(usage_tail, f);
}

void cli_getopt_tables(struct option *lo, char *shorts)
{
    size_t k = 0, n = vc_option_count();
    shorts[k++] = ':'; /* a missing value is ':', not '?' */
    for (size_t i = 0; i < n; i++) {
        const vc_option_info *o = vc_option_at(i);
        /* a request's flag also takes =false (=true): how a flag --recipe turns on is turned off */
        int has = o->arg ? required_argument : (o->applies & VC_APPLIES_FRONT_END) ? no_argument : optional_argument;
        lo[i] = (struct option){o->flag, has, NULL, CLI_OPT_BASE + (int)i};
        if (o->letter) {
            shorts[k++] = o->letter;
            if (o->arg) shorts[k++] = ':';
        }
    }
    shorts[k] = '\0';
    lo[n] = (struct option){NULL, 0, NULL, 0};
}
