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

#endif
