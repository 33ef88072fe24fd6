/*
 * parse.c — the command line's error line and checked writes: die() and
 * die_err() (one line on the error stream, exit 2) and flush_out.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "main.h"

/* Where reports and the error line go: vc_cli_main's out and err (stdout
 * and stderr for the program; memory streams for fuzz/fuzz_cli.c). */
FILE *cli_out, *cli_err;

/* One line on stderr; whatever the user gave (option values, file names)
 * is shown escaped (vc_escape_text): no raw control byte, valid UTF-8. */
int die(const char *fmt, ...)
{
    char raw[4096], safe[4 * sizeof raw];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    vc_escape_text(safe, sizeof safe, raw);
    fprintf(cli_err, "vramcalc: %s\n", safe);
    return EXIT_USAGE;
}

int die_err(const vc_error *err)
{
    char msg[sizeof err->file + sizeof err->path + sizeof err->msg + 64];
    vc_error_format_for(err, VC_SPELL_CLI, msg, sizeof msg);
    return die("%s", msg);
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

void put_text(const char *text, size_t n) { fwrite(text, 1, n, cli_out); }
