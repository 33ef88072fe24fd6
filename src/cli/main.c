/*
 * main.c — the vramcalc command line (docs/contract.md): argv into a
 * request of the library (vc_request_set by the option table's names), its
 * run, the rendered text printed. Exit status: 0 estimated (and fits), 1
 * does not fit --gpu, 2 bad usage or a bad model file. A sweep exits 0
 * unless an error: each row carries its own fit. What the terminal can
 * show (UTF-8, colour, its width) is decided here and passed on.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "main.h"

#define TEXT_WIDTH 80

static bool mentions_utf8(const char *s)
{
    char low[128];
    size_t i = 0;
    for (; s[i] && i + 1 < sizeof low; i++) low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    low[i] = '\0';
    return strstr(low, "utf-8") || strstr(low, "utf8");
}

/* Unicode blocks on a UTF-8 terminal; colour on a terminal unless --no-color,
 * NO_COLOR (https://no-color.org) or TERM=dumb; --no-color also means ASCII. */
static vc_render_options detect_term(bool no_color)
{
    vc_render_options t = {TEXT_WIDTH, 0, 0};
    if (!isatty(fileno(cli_out))) return t;
    /* wider on a wider terminal (its size, else $COLUMNS); never narrower than 80 */
    struct winsize ws;
    const char *cols = getenv("COLUMNS");
    long w = ioctl(fileno(cli_out), TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : cols ? strtol(cols, NULL, 10) : 0;
    if (w > TEXT_WIDTH) t.width = w < 1000 ? (int)w : 1000;
    if (no_color) return t;
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            t.utf8 = mentions_utf8(v);
            break;
        }
    }
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
    t.color = !(nc && *nc) && !(term && !strcmp(term, "dumb"));
    return t;
}

/* A library text (a render, a listing): printed, or the error line. */
static int print_text(vc_status st, char *text, size_t n, const vc_error *err)
{
    if (st) return die_err(err);
    put_text(text, n);
    vc_text_free(text);
    return 0;
}

/* --plot's file: the chart the response draws. The request refused an
 * existing file without --force; the file is created with O_EXCL all the
 * same, so one that appears between that check and this write is not
 * replaced either. */
static int write_plot(const vc_response *resp, bool force)
{
    const char *path = vc_response_plot_path(resp);
    if (!path) return 0;
    char *svg;
    size_t n;
    vc_error err;
    memset(&err, 0, sizeof err);
    if (vc_response_plot_svg(resp, &svg, &n, &err)) return die_err(&err);
    int fd = open(path, O_WRONLY | O_CREAT | (force ? O_TRUNC : O_EXCL), 0666);
    int e = errno;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !f) {
        e = errno;
        close(fd);
    }
    int bad = !f || fwrite(svg, 1, n, f) != n;
    if (f) {
        bad |= ferror(f);
        if (bad) e = errno;
        if (fclose(f) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
    }
    vc_text_free(svg);
    if (!bad) return 0;
    static char shown[4 * 4096 + 1];
    vc_escape_text(shown, sizeof shown, path);
    if (fd < 0 && e == EEXIST) return die("--plot '%s' exists: give --force to replace it, or another file name", shown);
    return die("--plot: cannot write '%s': %s", shown, strerror(e));
}

/* An option getopt did not know: with the nearest one when one is close. */
static int unknown_option(const char *arg)
{
    const vc_option_info *near = vc_option_suggest(arg, VC_SPELL_CLI);
    if (near) return die("unknown option '%s'; did you mean '--%s'?", arg, near->flag);
    return die("unknown option '%s' (see vramcalc --help)", arg);
}

static int run(vc_request *q, bool no_color, bool force)
{
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_response *resp = NULL;
    if (vc_request_run(q, &resp, &err)) return die_err(&err);
    vc_render_options ro = detect_term(no_color);
    char *text = NULL;
    size_t n = 0;
    int rc = write_plot(resp, force);
    if (!rc) {
        vc_status st = vc_response_render(resp, VC_FORMAT_DEFAULT, &ro, &text, &n, &err);
        rc = print_text(st, text, n, &err);
    }
    if (!rc) rc = vc_response_status(resp) ? EXIT_NOFIT : 0;
    vc_response_free(resp);
    return rc;
}

int vc_cli_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static struct option longopts[CLI_MAX_OPTIONS + 1];
    static char shortopts[3 * CLI_MAX_OPTIONS + 2];
    cli_out = out;
    cli_err = errf;
    if (vc_option_count() > CLI_MAX_OPTIONS) return flush_out(die("more options than CLI_MAX_OPTIONS (src/cli/main.h)"));
    cli_getopt_tables(longopts, shortopts);
    optind = 0; /* glibc: start afresh (vc_cli_main may run more than once in a process) */
    opterr = 0;
    vc_request *q = vc_request_new();
    if (!q) return flush_out(die("out of memory"));
    vc_request_set_json_arena(q, 1); /* the CLI owns the process (request.c) */
    bool no_color = false, force = false;
    int ch, rc = 0;
    vc_error err;
    memset(&err, 0, sizeof err);
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        const vc_option_info *o = NULL;
        if (ch >= CLI_OPT_BASE) o = vc_option_at((size_t)(ch - CLI_OPT_BASE));
        else
            for (size_t i = 0; !o && ch != ':' && ch != '?' && i < vc_option_count(); i++)
                if (vc_option_at(i)->letter == ch) o = vc_option_at(i);
        if (ch == ':') {
            rc = die("%s needs a value (see vramcalc --help)", argv[optind - 1]);
            goto out;
        }
        if (!o) {
            rc = optopt ? die("unknown option '-%c' (see vramcalc --help)", optopt) : unknown_option(argv[optind - 1]);
            goto out;
        }
        if (!strcmp(o->name, "help")) {
            cli_help(cli_out);
            goto out;
        }
        if (!strcmp(o->name, "version")) {
            fprintf(cli_out, "vramcalc %s\n", VC_VERSION);
            goto out;
        }
        if (!strcmp(o->name, "list_layers")) { /* on a terminal, the summaries wrapped to its width */
            char *text;
            size_t n;
            vc_status st = vc_layer_list_text(isatty(fileno(cli_out)) ? detect_term(true).width : 0, &text, &n, &err);
            rc = print_text(st, text, n, &err);
            goto out;
        }
        if (!strcmp(o->name, "force")) /* write_plot's O_EXCL; the request checks it too */
            force = !optarg || (strcmp(optarg, "false") && strcmp(optarg, "0"));
        if (!strcmp(o->name, "no_color") || !strcmp(o->name, "no_colour")) {
            no_color = true;
            continue;
        }
        if (vc_request_set(q, o->name, optarg, &err)) { /* a flag's optarg: NULL, or its =false */
            rc = die_err(&err);
            goto out;
        }
    }
    for (int i = optind; i < argc; i++)
        if (vc_request_add_model(q, argv[i], &err)) {
            rc = die_err(&err);
            goto out;
        }
    rc = run(q, no_color, force);
out:
    vc_request_free(q);
    return flush_out(rc);
}

#ifndef VC_CLI_NO_MAIN
int main(int argc, char **argv)
{
#ifdef __GLIBC__
    /* One short-lived process: blocks under 4 MiB that a plan frees are reused by the next plan (a --max-seq
     * probe's, a grid batch's) instead of going back to the kernel and being faulted in again: glibc's default
     * mmap threshold starts at 128 KiB and rises only after such a block is freed (llama-3.1-8b --max-seq: 4,033
     * page faults -> 886); larger blocks stay mmap'd, as before (resident memory of 10,000 encoder layers
     * --sweep 1:40 unchanged, 759 MB), and the heap's top is trimmed past 64 MiB. */
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
    return vc_cli_main(argc, argv, stdout, stderr);
}
#endif
