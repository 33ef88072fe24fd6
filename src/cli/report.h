/*
 * report.h — the CLI's output formats: a table for people, JSON and CSV
 * for scripts (SPEC §3).
 */
#ifndef VC_REPORT_H
#define VC_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "vramcalc/vramcalc.h"

typedef struct {
    const char *model;        /* model name ("" when none) */
    const char *file;         /* model file, NULL in counts mode */
    const vc_options *opts;
    const vc_result *r;
    bool per_layer;
    bool counts_only;         /* --params mode: a formula, not a simulation */
} vc_report;

void report_table(FILE *f, const vc_report *rep);
void report_json(FILE *f, const vc_report *rep);
void report_csv_header(FILE *f);
void report_csv_row(FILE *f, const vc_report *rep);
/* "1.5 GiB", "512 B" */
void format_bytes(int64_t bytes, char *buf, size_t n);

#endif
