/*
 * main.h — what main.c (vc_cli_main) shares with parse.c (the error line,
 * checked writes) and help.c (--help and getopt's tables from the library's
 * option table). Private to the command line's files.
 */
#ifndef VC_CLI_MAIN_H
#define VC_CLI_MAIN_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "vramcalc/vramcalc.h"

#define EXIT_NOFIT 1
#define EXIT_USAGE 2

/* Where reports and the error line go (parse.c): vc_cli_main's out and err. */
extern FILE *cli_out, *cli_err;

/* ---- parse.c ----
 * Each returns EXIT_USAGE after one line on cli_err. */
int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A library error, its option marks spelt --like-this. */
int die_err(const vc_error *err);
int flush_out(int rc);
/* Writes n bytes of text to cli_out (checked by flush_out). */
void put_text(const char *text, size_t n);

/* ---- help.c ---- */
/* --help: the usage, one entry per visible option of the library's table
 * (vc_option_at), the notes; each description starts at column 25 and
 * every line ends by column 80. */
void cli_help(FILE *f);
/* getopt_long's tables from the library's option table: getopt returns
 * 256 + the row's index for every option (its letter too). */
#define CLI_MAX_OPTIONS 128
#define CLI_OPT_BASE 256
void cli_getopt_tables(struct option *lo, char *shorts);

#endif
