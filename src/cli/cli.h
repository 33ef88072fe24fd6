/*
 * cli.h — the vramcalc command line as a function: main() is
 * vc_cli_main(argc, argv, stdout, stderr); fuzz/fuzz_cli.c calls it in
 * process with memory streams. It never exits the process and may be called
 * again (getopt and the file-level state are reset on entry).
 *
 * Returns the exit status: 0 estimated (and fits), 1 does not fit --gpu,
 * 2 bad usage, a bad model file or an output that could not be written
 * (then exactly one line on err, nothing on err otherwise).
 */
#ifndef VC_CLI_H
#define VC_CLI_H

#include <getopt.h>
#include <stdio.h>

#define VC_EXIT_OK 0
#define VC_EXIT_NOFIT 1
#define VC_EXIT_USAGE 2

int vc_cli_main(int argc, char **argv, FILE *out, FILE *err);

/* ---- the options table (help.c): one row per option ----
 * --help prints from it, getopt_long's tables are built from it and
 * tools/gen_docs.py writes README's option table from --help's output, so
 * adding an option is adding a row (and its case in vc_cli_main's switch). */
typedef struct {
    const char *name;    /* long name, without "--" */
    char letter;         /* short option (-b), or 0 */
    const char *arg;     /* the argument's placeholder in --help ("N", "SIZE"); NULL: takes none */
    int id;              /* what getopt_long returns for it: the letter, or an OPT_ value */
    const char *choices; /* a closed set of values, VC_CHOICES(map) ("sgd, momentum, "), or NULL */
    const char *help;    /* --help's text, one paragraph (wrapped to 80 columns); "{}" stands for the
                          * choices ("a, b, c"); NULL: a hidden alias */
} cli_option;

/* "sgd, momentum, adam, " from an X-macro map of vramcalc.h (VC_OPTIM_MAP, ...). */
#define VC__CHOICE(e, n) n ", "
#define VC_CHOICES(map) map(VC__CHOICE)

/* --help: head, one entry per visible row of t[0..n), tail; each description
 * starts at column 25 and every line ends by column 80. */
void cli_help(FILE *f, const char *head, const cli_option *t, size_t n, const char *tail);

/* getopt_long's tables from t[0..n): lo needs n + 1 entries, shorts 3n + 2 chars. */
void cli_getopt_tables(const cli_option *t, size_t n, struct option *lo, char *shorts);

#endif
