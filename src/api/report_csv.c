/*
 * report_csv.c — CSV output (--format csv): a report's columns as cells,
 * --columns' choice of them, the header and a row (report.c has the table
 * and JSON).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* CSV: the columns of a report as cells, each named by its header (the
 * names --columns chooses by, docs/scripting.md), in the default order. */
#define CSV_MAX_COLS 64
#define CSV_CELL 64 /* a number's or an option name's cell, kept in the cells' own store */
typedef struct {
    const char *name[CSV_MAX_COLS];
    char *val[CSV_MAX_COLS]; /* NULL: the names alone (the header), or out of memory */
    bool owned[CSV_MAX_COLS]; /* val malloc'd (a string cell), not in store */
    char store[CSV_MAX_COLS][CSV_CELL];
    int n;
    bool values, nomem;
} csv_cells;

/* The cells of a sweep's rows are written without vsnprintf and malloc
 * (a Mixtral --sweep 1:256 -f csv spent 11.2 M of its 86 M instructions
 * formatting them): a short text is copied as "%s" into 64 bytes would
 * print it (its first 63 characters), a number written as "%" PRId64 would. */
static void cell_text(csv_cells *c, const char *name, const char *s)
{
    if (c->n >= CSV_MAX_COLS) return;
    c->name[c->n] = name;
    c->val[c->n] = NULL;
    c->owned[c->n] = false;
    if (c->values) {
        char *w = c->store[c->n];
        size_t len = 0;
        for (; len < CSV_CELL - 1 && s[len]; len++) w[len] = s[len];
        w[len] = 0;
        c->val[c->n] = w;
    }
    c->n++;
}

static void cell_i(csv_cells *c, const char *name, int64_t v)
{
    char buf[24], *w = buf + sizeof buf;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    *--w = 0;
    do *--w = (char)('0' + u % 10); while (u /= 10);
    if (v < 0) *--w = '-';
    cell_text(c, name, w);
}

/* a string cell, quoted as RFC 4180 does when it holds a comma, a quote or a
 * newline; one a spreadsheet would read as a formula (it starts with =, +, -,
 * @, a tab or a carriage return: a model named =HYPERLINK(...)) gets a
 * leading ' (OWASP's CSV injection advice), issue 29 */
static void cell_s(csv_cells *c, const char *name, const char *s)
{
    if (c->n >= CSV_MAX_COLS) return;
    char *q = NULL;
    bool formula = *s && strchr("=+-@\t\r", *s);
    if (c->values && !formula && !strpbrk(s, ",\"\n")) q = strdup(s);
    else if (c->values && (q = malloc(2 * strlen(s) + 4))) {
        char *w = q;
        *w++ = '"';
        if (formula) *w++ = '\'';
        for (; *s; s++) {
            if (*s == '"') *w++ = '"';
            *w++ = *s;
        }
        *w++ = '"';
        *w = 0;
    }
    if (c->values && !q) c->nomem = true;
    c->name[c->n] = name;
    c->owned[c->n] = true;
    c->val[c->n++] = q;
}

static void csv_cells_of(const vc_report *rep, csv_cells *c)
{
    const vc_options *o = rep->opts;
    const vc_result *r = rep->r;
    const vc_memory *m = &r->memory;
    cell_s(c, "model", rep->model);
    cell_text(c, "mode", vc_mode_name(o->mode));
    cell_i(c, "batch", o->batch);
    cell_text(c, "precision", vc_precision_name(o->precision));
    cell_text(c, "optimizer", vc_optim_name(o->optim));
    cell_text(c, "optimizer_impl", vc_optim_impl_name(o->optim_impl));
    cell_i(c, "accumulate", o->accumulate);
    cell_text(c, "attention", vc_attention_name(o->attention));
    cell_i(c, "parameters", r->parameters);
    cell_i(c, "trainable_parameters", r->trainable_parameters);
    cell_i(c, "memory.weights", m->weights);
    cell_i(c, "memory.gradients", m->gradients);
    cell_i(c, "memory.optimizer_states", m->optimizer_states);
    cell_i(c, "memory.activations", m->activations);
    cell_i(c, "memory.workspace", m->workspace);
    cell_i(c, "memory.peak_allocated", m->peak_allocated);
    cell_i(c, "memory.reserved", m->reserved);
    cell_i(c, "memory.cuda_context", m->cuda_context);
    if (report_context_modelled(o, m)) {
        const vc_context_parts *p = &m->context_parts; /* src/engine/context.c's model: the JSON's context_parts */
        cell_i(c, "memory.context_parts.runtime", p->runtime);
        cell_i(c, "memory.context_parts.local_memory", p->local_memory);
        cell_i(c, "memory.context_parts.eager", p->eager);
        cell_i(c, "memory.context_parts.cublas", p->cublas);
        cell_i(c, "memory.context_parts.kernels", p->kernels);
        cell_i(c, "memory.context_parts.backward_local_memory", p->backward_local_memory);
        cell_i(c, "memory.context_parts.backward_kernels", p->backward_kernels);
        cell_text(c, "memory.context_parts.measured", p->measured ? "true" : "false");
    }
    cell_i(c, "memory.total", m->total);
    /* src/engine/cudnn.c: the JSON's memory.cudnn, where a convolution runs, or when --columns names
     * them (a model without a convolution: source none, both ends the figures) */
    if (m->cudnn.source != VC_CUDNN_NONE || (rep->columns && strstr(rep->columns, "memory.cudnn."))) {
        bool none = m->cudnn.source == VC_CUDNN_NONE;
        cell_text(c, "memory.cudnn.source", none ? "none" : m->cudnn.source == VC_CUDNN_TABLE ? "table" : "bound");
        cell_text(c, "memory.cudnn.bound", o->bound == VC_BOUND_HIGH ? "high" : "low");
        cell_i(c, "memory.cudnn.peak_allocated_low", none ? m->peak_allocated : m->cudnn.peak_allocated_low);
        cell_i(c, "memory.cudnn.reserved_low", none ? m->reserved : m->cudnn.reserved_low);
        cell_i(c, "memory.cudnn.total_low", none ? m->total : m->cudnn.total_low);
        cell_i(c, "memory.cudnn.peak_allocated_high", none ? m->peak_allocated : m->cudnn.peak_allocated_high);
        cell_i(c, "memory.cudnn.reserved_high", none ? m->reserved : m->cudnn.reserved_high);
        cell_i(c, "memory.cudnn.total_high", none ? m->total : m->cudnn.total_high);
    }
    /* --first-step: the JSON's memory.first_step when computed; empty cells when --columns names
     * them and it was not */
    if (m->first_step.computed) {
        cell_i(c, "memory.first_step.peak_allocated", m->first_step.peak_allocated);
        cell_i(c, "memory.first_step.reserved", m->first_step.reserved);
        cell_i(c, "memory.first_step.total", m->first_step.total);
    } else if (rep->columns && strstr(rep->columns, "memory.first_step.")) {
        cell_text(c, "memory.first_step.peak_allocated", "");
        cell_text(c, "memory.first_step.reserved", "");
        cell_text(c, "memory.first_step.total", "");
    }
    vc_nccl_info nc; /* src/engine/nccl.c: the JSON's memory.nccl */
    vc_nccl_per_gpu_of(o, m->nccl, &nc);
    if (nc.communicators) {
        cell_s(c, "memory.nccl.topology", vc_nccl_topology_name(nc.topology));
        cell_i(c, "memory.nccl.communicators", nc.communicators);
        cell_i(c, "memory.nccl.ring_communicators", nc.ring_communicators);
        cell_i(c, "memory.nccl.p2p_peers", nc.p2p_peers);
        cell_i(c, "memory.nccl.channels", nc.channels);
        cell_i(c, "memory.nccl.p2p_channels", nc.p2p_channels);
        cell_i(c, "memory.nccl.p2p_channels_per_peer", nc.p2p_channels_per_peer);
        cell_i(c, "memory.nccl.nvls_channels", nc.nvls_channels);
        cell_i(c, "memory.nccl.ring_bytes", nc.ring_bytes);
        cell_i(c, "memory.nccl.p2p_bytes", nc.p2p_bytes);
        cell_i(c, "memory.nccl.nvls_bytes", nc.nvls_bytes);
        cell_i(c, "memory.nccl.bytes", nc.bytes);
        if (nc.nvls_credit_bytes) cell_i(c, "memory.nccl.nvls_credit_bytes", nc.nvls_credit_bytes);
        if (nc.nodes > 1) { /* across nodes (--gpus-per-node) */
            cell_i(c, "memory.nccl.nodes", nc.nodes);
            cell_i(c, "memory.nccl.net_bytes", nc.net_bytes);
            cell_i(c, "memory.nccl.tree_communicators", nc.tree_communicators);
            cell_i(c, "memory.nccl.tree_bytes", nc.tree_bytes);
            cell_i(c, "memory.nccl.nvls_tree_bytes", nc.nvls_tree_bytes);
            if (nc.pat_communicators) { /* src/engine/nccl.c pat_group */
                cell_i(c, "memory.nccl.pat_communicators", nc.pat_communicators);
                cell_i(c, "memory.nccl.pat_bytes", nc.pat_bytes);
            }
        }
    }
    cell_text(c, "peak.phase", vc_phase_name(r->peak.phase));
    cell_s(c, "peak.layer", r->peak.layer);
    cell_s(c, "peak.kind", r->peak.kind);
    cell_i(c, "peak.weights", r->peak.weights);
    cell_i(c, "peak.gradients", r->peak.gradients);
    cell_i(c, "peak.optimizer_states", r->peak.optimizer_states);
    cell_i(c, "peak.activations", r->peak.activations);
    cell_i(c, "peak.temporaries", r->peak.temporaries);
    cell_i(c, "peak.workspace", r->peak.workspace);
    if (rep->gpu) {
        cell_s(c, "gpu.name", rep->gpu->name);
        cell_i(c, "gpu.capacity", rep->gpu->capacity);
        cell_i(c, "gpu.free", rep->gpu->capacity - m->total);
        cell_text(c, "gpu.fits", report_fits(rep) ? "true" : "false");
    }
    if (rep->max_batch >= 0) {
        cell_i(c, "max_batch", rep->max_batch);
        cell_text(c, "max_batch_limited", rep->max_batch >= VC_MAX_BATCH_LIMIT ? "true" : "false");
    }
    if (rep->max_prompt >= 0) {
        cell_i(c, "max_context.prompt", rep->max_prompt);
        cell_text(c, "max_context.limited", rep->max_prompt_limited ? "true" : "false");
    }
    if (rep->max_seq >= 0) {
        cell_i(c, "max_seq", rep->max_seq);
        cell_text(c, "max_seq_limited", rep->max_seq_limited ? "true" : "false");
    }
}

/* The columns rep->columns names ("a,b,c"), as indices into the cells, in
 * its order: the count, or -1 with the first unknown name in bad. */
static int csv_pick(const vc_report *rep, const csv_cells *c, int pick[CSV_MAX_COLS], char *bad, size_t nbad)
{
    if (!rep->columns) {
        for (int i = 0; i < c->n; i++) pick[i] = i;
        return c->n;
    }
    int n = 0;
    for (const char *s = rep->columns;;) {
        size_t len = strcspn(s, ",");
        int k = -1;
        for (int i = 0; i < c->n && k < 0; i++)
            if (strlen(c->name[i]) == len && !memcmp(c->name[i], s, len)) k = i;
        if (k < 0 || n == CSV_MAX_COLS) {
            snprintf(bad, nbad, "%.*s", (int)(len < 200 ? len : 200), s);
            return -1;
        }
        pick[n++] = k;
        if (!s[len]) return n;
        s += len + 1;
    }
}

int report_csv_check(const vc_report *rep, char *msg, size_t n)
{
    csv_cells c = {.n = 0};
    int pick[CSV_MAX_COLS];
    char bad[204];
    static const vc_result none; /* the names alone: no value is read */
    vc_report names = *rep;
    names.r = &none;
    csv_cells_of(&names, &c);
    if (csv_pick(rep, &c, pick, bad, sizeof bad) >= 0) return 0;
    /* the options between marks (vramcalc.h VC_OPTION_MARK), what the user typed escaped: no mark in it */
    char safe[4 * sizeof bad];
    vc_escape_text(safe, sizeof safe, bad);
    size_t w = (size_t)snprintf(msg, n, "\x1f" "columns" "\x1f: unknown column '%s' (choose from", safe);
    /* memory.context_parts.* as one item, memory.context_parts.{runtime,...,measured}: the message stays within
     * what vc_error holds */
    static const char parts[] = "memory.context_parts.";
    const size_t np = sizeof parts - 1;
    for (int i = 0; i < c.n && w < n; i++) {
        bool in = !strncmp(c.name[i], parts, np), prev = i && !strncmp(c.name[i - 1], parts, np);
        bool last = in && (i + 1 == c.n || strncmp(c.name[i + 1], parts, np));
        if (in && prev) w += (size_t)snprintf(msg + w, n - w, ",%s%s", c.name[i] + np, last ? "}" : "");
        else if (in) w += (size_t)snprintf(msg + w, n - w, "%s %s{%s%s", i ? "," : "", parts, c.name[i] + np, last ? "}" : "");
        else w += (size_t)snprintf(msg + w, n - w, "%s %s", i ? "," : "", c.name[i]);
    }
    if (w < n)
        snprintf(msg + w, n - w, "; gpu.* come with \x1f" "gpu" "\x1f, max_batch* with \x1f" "max_batch" "\x1f, max_context.* with "
                                 "\x1f" "max_context" "\x1f, max_seq* with \x1f" "max_seq" "\x1f, memory.context_parts.* without "
                                 "\x1f" "context" "\x1f)");
    return -1;
}

static int csv_line(FILE *f, const vc_report *rep, bool values)
{
    csv_cells c = {.n = 0, .values = values};
    int pick[CSV_MAX_COLS];
    char bad[204];
    csv_cells_of(rep, &c);
    int n = csv_pick(rep, &c, pick, bad, sizeof bad); /* report_csv_check has refused unknown names */
    char line[4096]; /* written at once (a sweep's rows: not a stdio call per cell) */
    size_t w = 0;
    const int nc = n > 0 ? n : 0;
    for (int i = 0; i <= nc; i++) {
        const char *t = i == nc ? "\n" : values ? (c.val[pick[i]] ? c.val[pick[i]] : "") : c.name[pick[i]];
        size_t len = strlen(t);
        if (w + len + 1 > sizeof line) {
            fwrite(line, 1, w, f);
            w = 0;
        }
        if (i && i < nc) line[w++] = ',';
        if (len > sizeof line - w) { /* a longer cell than the line holds: after what is before it */
            fwrite(line, 1, w, f);
            w = 0;
            fputs(t, f);
        } else {
            memcpy(line + w, t, len);
            w += len;
        }
    }
    fwrite(line, 1, w, f);
    for (int i = 0; i < c.n; i++)
        if (c.owned[i]) free(c.val[i]);
    return c.nomem || n < 0 ? -1 : 0;
}

int report_csv_header(FILE *f, const vc_report *rep) { return csv_line(f, rep, false); }
int report_csv_row(FILE *f, const vc_report *rep) { return csv_line(f, rep, true); }
