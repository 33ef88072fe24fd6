/*
 * report.c — table, JSON and CSV output, sweeps of them, and the table's
 * memory bar.
 */
#include <inttypes.h>
#include <string.h>

#include "report.h"

void format_bytes(int64_t bytes, char *buf, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while ((v >= 1024.0 || v <= -1024.0) && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, n, "%" PRId64 " B", bytes);
    else snprintf(buf, n, "%.1f %s", v, unit[u]);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void row(FILE *f, const char *label, int64_t v, const char *note)
{
    char b[32];
    format_bytes(v, b, sizeof b);
    fprintf(f, "  %-18s %12s  %18" PRId64 "%s%s\n", label, b, v, note ? "  " : "", note ? note : "");
}

bool report_fits(const vc_report *rep) { return !rep->gpu || rep->r->memory.total <= rep->gpu->capacity; }

/* ---- the memory bar ----
 * The total, split exactly into what is live at the peak, the allocator's
 * cache (reserved - peak allocated) and the CUDA context, drawn against the
 * GPU's capacity (or against the total without --gpu). */
enum { SEG_N = 8, BAR_W = 60 };
static const char *const seg_name[SEG_N] = {"weights", "gradients", "optimizer states", "activations",
                                            "temporaries", "workspace", "allocator cache", "cuda context"};
static const char seg_ascii[SEG_N] = {'W', 'G', 'O', 'A', 'T', 'S', 'C', 'X'};
static const char *const seg_utf8[SEG_N] = {"\u2588", "\u2593", "\u2592", "\u2591", "\u259a", "\u259e", "\u2584", "\u2580"};
static const int seg_color[SEG_N] = {34, 35, 33, 32, 36, 31, 37, 90};

static void segments(const vc_result *r, int64_t seg[SEG_N])
{
    const vc_peak *p = &r->peak;
    seg[0] = p->weights;
    seg[1] = p->gradients;
    seg[2] = p->optimizer_states;
    seg[3] = p->activations;
    seg[4] = p->temporaries;
    seg[5] = p->workspace;
    seg[6] = r->memory.reserved - r->memory.peak_allocated;
    seg[7] = r->memory.cuda_context;
    for (int i = 0; i < SEG_N; i++)
        if (seg[i] < 0) seg[i] = 0;
}

static void put_cell(FILE *f, const vc_term *t, int seg, int *cur_color)
{
    int want = seg < 0 ? 0 : seg_color[seg];
    if (t->color && want != *cur_color) {
        fprintf(f, "\033[%dm", want);
        *cur_color = want;
    }
    if (seg < 0) fputs(t->utf8 ? (t->color ? "\u2591" : "\u00b7") : ".", f);
    else if (t->utf8) fputs(t->color ? "\u2588" : seg_utf8[seg], f);
    else fputc(seg_ascii[seg], f);
}

/* A bar of `width` cells for parts summing to `total`, against `scale`
 * bytes; the capacity (if > 0) is marked with ']' (or '|' past the total). */
static void draw_bar(FILE *f, const vc_term *t, const int64_t seg[SEG_N], int64_t total, int64_t scale,
                     int64_t capacity, int width)
{
    int end[SEG_N];
    long double acc = 0;
    for (int i = 0; i < SEG_N; i++) {
        acc += seg[i];
        end[i] = scale > 0 ? (int)(acc * width / scale + 0.5L) : 0;
        if (end[i] > width) end[i] = width;
    }
    int cap_cell = capacity > 0 && scale > 0 ? (int)((long double)capacity * width / scale + 0.5L) : -1;
    (void)total;
    int cur = 0, s = 0;
    fputc('[', f);
    for (int c = 0; c < width; c++) {
        if (c == cap_cell && cap_cell < width) {
            if (t->color) fputs("\033[0;1;31m", f);
            fputs(t->utf8 ? "\u2502" : "|", f);
            if (t->color) fputs("\033[0m", f);
            cur = 0;
        }
        while (s < SEG_N && end[s] <= c) s++;
        put_cell(f, t, s < SEG_N ? s : -1, &cur);
    }
    if (t->color && cur) fputs("\033[0m", f);
    fputc(']', f);
}

static void bar(FILE *f, const vc_report *rep)
{
    const vc_result *r = rep->r;
    const vc_term *t = &rep->term;
    int64_t seg[SEG_N];
    segments(r, seg);
    int64_t total = r->memory.total;
    int64_t cap = rep->gpu ? rep->gpu->capacity : 0;
    int64_t scale = total > cap ? total : cap;
    char b[32], c[32];
    fputc('\n', f);
    if (rep->gpu) {
        format_bytes(cap, c, sizeof c);
        format_bytes(total, b, sizeof b);
        fprintf(f, "  %s: capacity %s", rep->gpu->name, c);
        if (rep->gpu->percent < 100) {
            char tb[32];
            format_bytes(rep->gpu->total, tb, sizeof tb);
            fprintf(f, " (%g%% of %s)", rep->gpu->percent, tb);
        }
        int64_t free_b = cap - total;
        format_bytes(free_b < 0 ? -free_b : free_b, c, sizeof c);
        if (free_b >= 0)
            fprintf(f, "; total %s %s, %s free (%.1f%% used)\n", b, t->color ? "\033[1;32mfits\033[0m" : "fits", c,
                    cap ? 100.0 * (double)total / (double)cap : 0.0);
        else
            fprintf(f, "; total %s %s, %s over\n", b, t->color ? "\033[1;31mDOES NOT FIT\033[0m" : "DOES NOT FIT", c);
    } else {
        format_bytes(total, b, sizeof b);
        fprintf(f, "  total %s (no --gpu: the bar is the total)\n", b);
    }
    fputs("  ", f);
    draw_bar(f, t, seg, total, scale, rep->gpu ? cap : 0, BAR_W);
    fputc('\n', f);
    /* legend, two entries per line */
    int shown = 0;
    for (int i = 0; i < SEG_N; i++) {
        if (!seg[i]) continue;
        int cur = 0;
        fputs(shown % 2 ? "   " : "   ", f);
        put_cell(f, t, i, &cur);
        if (t->color) fputs("\033[0m", f);
        format_bytes(seg[i], b, sizeof b);
        fprintf(f, " %-16s %10s", seg_name[i], b);
        if (++shown % 2 == 0) fputc('\n', f);
    }
    if (shown % 2) fputc('\n', f);
}

void report_table(FILE *f, const vc_report *rep)
{
    const vc_options *o = rep->opts;
    const vc_result *r = rep->r;
    const vc_memory *m = &r->memory;
    char b[64];
    if (rep->file) fprintf(f, "%s%s%s%s\n", rep->model[0] ? rep->model : rep->file, rep->model[0] ? " (" : "",
                           rep->model[0] ? rep->file : "", rep->model[0] ? ")" : "");
    else fprintf(f, "counts-only estimate (bytes per parameter and per activation element)\n");
    fprintf(f, "%s, batch %" PRId64 ", %s", vc_mode_name(o->mode), o->batch, vc_precision_name(o->precision));
    if (rep->weights) fprintf(f, ", weights %s", rep->weights);
    if (o->parallel != VC_PARALLEL_NONE) fprintf(f, ", %s on %" PRId64 " GPU%s (per GPU)", vc_parallel_name(o->parallel), o->gpus, o->gpus == 1 ? "" : "s");
    if (o->mode == VC_MODE_TRAIN) {
        fprintf(f, ", %s", vc_optim_name(o->optim));
        if (o->optim != VC_OPTIM_NONE && !rep->counts_only) fprintf(f, " (%s)", vc_optim_impl_name(o->optim_impl));
        if (o->accumulate > 1) fprintf(f, ", accumulate %" PRId64, o->accumulate);
    }
    if (!rep->counts_only) fprintf(f, ", attention %s", vc_attention_name(o->attention));
    fprintf(f, "\nparameters %" PRId64 " (trainable %" PRId64 ")\n\n", r->parameters, r->trainable_parameters);
    fprintf(f, "  %-18s %12s  %18s\n", "component", "size", "bytes");
    row(f, "weights", m->weights, NULL);
    row(f, "gradients", m->gradients, NULL);
    row(f, "optimizer states", m->optimizer_states, NULL);
    row(f, "activations", m->activations, o->mode == VC_MODE_TRAIN ? "(held at end of forward)" : "(largest live set)");
    if (!rep->counts_only) row(f, "workspace", m->workspace, "(cuBLAS)");
    char note[200];
    if (rep->counts_only) snprintf(note, sizeof note, "(sum of the above)");
    else if (r->peak.layer[0]) snprintf(note, sizeof note, "(%s, %s %s)", vc_phase_name(r->peak.phase), r->peak.layer, r->peak.kind);
    else snprintf(note, sizeof note, "(%s%s%s)", vc_phase_name(r->peak.phase), r->peak.kind[0] ? ", " : "", r->peak.kind);
    row(f, "peak allocated", m->peak_allocated, note);
    row(f, "reserved", m->reserved, rep->counts_only ? "(= peak: no allocator model)" : "(caching allocator model)");
    row(f, "cuda context", m->cuda_context, o->context >= 0 ? "(--context)" : "(estimate, not measured)");
    row(f, "total", m->total, "(reserved + context)");
    if (!rep->counts_only) {
        fprintf(f, "\n  at the peak:");
        const int64_t parts[] = {r->peak.weights, r->peak.gradients, r->peak.optimizer_states,
                                 r->peak.activations, r->peak.temporaries, r->peak.workspace};
        const char *const names[] = {"weights", "gradients", "states", "activations", "temporaries", "workspace"};
        for (int i = 0; i < 6; i++) {
            if (!parts[i]) continue;
            format_bytes(parts[i], b, sizeof b);
            fprintf(f, " %s %s;", names[i], b);
        }
        fputc('\n', f);
        if (r->attention[0]) fprintf(f, "  attention kernel: %s\n", r->attention);
    }
    bar(f, rep);
    if (rep->max_batch >= 0) {
        fprintf(f, "\n  max batch on %s: %" PRId64 "%s\n", rep->gpu->name, rep->max_batch,
                rep->max_batch == 0 ? " (batch 1 does not fit)"
                : rep->max_batch >= VC_MAX_BATCH_LIMIT ? " (the search's limit, 2^40: larger batches were not tried)"
                                                       : "");
    }
    if (rep->per_layer && r->nlayers) {
        fprintf(f, "\n  %-32s %-26s %-22s %14s %12s\n", "layer", "kind", "output", "parameters", "saved");
        for (size_t i = 0; i < r->nlayers; i++) {
            const vc_layer_info *l = &r->layers[i];
            char shape[128] = "[";
            size_t u = 1;
            for (int d = 0; d < l->ndim && u < sizeof shape; d++)
                u += (size_t)snprintf(shape + u, sizeof shape - u, "%s%" PRId64, d ? ", " : "", l->output_shape[d]);
            if (u < sizeof shape) snprintf(shape + u, sizeof shape - u, "]");
            format_bytes(l->activations, b, sizeof b);
            fprintf(f, "  %-32s %-26s %-22s %14" PRId64 " %12s\n", l->name, l->kind, shape, l->parameters, b);
        }
    }
}

static void json_body(FILE *f, const vc_report *rep, const char *ind)
{
    const vc_options *o = rep->opts;
    const vc_result *r = rep->r;
    const vc_memory *m = &r->memory;
    fprintf(f, "%s\"schema_version\": 1,\n%s\"model\": ", ind, ind);
    json_str(f, rep->model);
    fprintf(f, ", \"mode\": \"%s\", \"batch\": %" PRId64 ", \"precision\": \"%s\",\n", vc_mode_name(o->mode), o->batch,
            vc_precision_name(o->precision));
    char tv[16];
    fprintf(f, "%s\"optimizer\": \"%s\", \"optimizer_impl\": \"%s\", \"accumulate\": %" PRId64 ", \"attention\": \"%s\",\n",
            ind, vc_optim_name(o->optim), vc_optim_impl_name(o->optim_impl), o->accumulate, vc_attention_name(o->attention));
    if (rep->weights) fprintf(f, "%s\"weights\": \"%s\",\n", ind, rep->weights);
    fprintf(f, "%s\"torch_version\": \"%s\", \"attention_kernel\": ", ind, vc_torch_name(o->torch_version, tv, sizeof tv));
    json_str(f, r->attention);
    fprintf(f, ",\n");
    if (o->parallel != VC_PARALLEL_NONE)
        fprintf(f, "%s\"parallel\": {\"layout\": \"%s\", \"gpus\": %" PRId64 "},\n", ind, vc_parallel_name(o->parallel), o->gpus);
    fprintf(f, "%s\"parameters\": %" PRId64 ", \"trainable_parameters\": %" PRId64 ",\n", ind, r->parameters, r->trainable_parameters);
    fprintf(f, "%s\"memory\": {\"weights\": %" PRId64 ", \"gradients\": %" PRId64 ", \"optimizer_states\": %" PRId64
               ", \"activations\": %" PRId64 ", \"workspace\": %" PRId64 ", \"peak_allocated\": %" PRId64
               ", \"reserved\": %" PRId64 ", \"cuda_context\": %" PRId64 ", \"total\": %" PRId64 "},\n",
            ind, m->weights, m->gradients, m->optimizer_states, m->activations, m->workspace, m->peak_allocated,
            m->reserved, m->cuda_context, m->total);
    fprintf(f, "%s\"peak\": {\"phase\": \"%s\", \"layer\": ", ind, vc_phase_name(r->peak.phase));
    json_str(f, r->peak.layer);
    fprintf(f, ", \"kind\": ");
    json_str(f, r->peak.kind);
    fprintf(f, ", \"weights\": %" PRId64 ", \"gradients\": %" PRId64 ", \"optimizer_states\": %" PRId64
               ", \"activations\": %" PRId64 ", \"temporaries\": %" PRId64 ", \"workspace\": %" PRId64 "}",
            r->peak.weights, r->peak.gradients, r->peak.optimizer_states, r->peak.activations, r->peak.temporaries,
            r->peak.workspace);
    if (rep->gpu) {
        fprintf(f, ",\n%s\"gpu\": {\"name\": ", ind);
        json_str(f, rep->gpu->name);
        fprintf(f, ", \"capacity\": %" PRId64 ", \"free\": %" PRId64 ", \"fits\": %s}", rep->gpu->capacity,
                rep->gpu->capacity - m->total, report_fits(rep) ? "true" : "false");
    }
    if (rep->max_batch >= 0) fprintf(f, ",\n%s\"max_batch\": %" PRId64, ind, rep->max_batch);
    if (rep->per_layer) {
        fprintf(f, ",\n%s\"layers\": [", ind);
        for (size_t i = 0; i < r->nlayers; i++) {
            const vc_layer_info *l = &r->layers[i];
            fprintf(f, "%s\n%s  {\"name\": ", i ? "," : "", ind);
            json_str(f, l->name);
            fprintf(f, ", \"kind\": ");
            json_str(f, l->kind);
            fprintf(f, ", \"output_shape\": [");
            for (int d = 0; d < l->ndim; d++) fprintf(f, "%s%" PRId64, d ? ", " : "", l->output_shape[d]);
            fprintf(f, "], \"parameters\": %" PRId64 ", \"activations\": %" PRId64 "}", l->parameters, l->activations);
        }
        fprintf(f, "\n%s]", ind);
    }
}

void report_json(FILE *f, const vc_report *rep)
{
    fprintf(f, "{\n");
    json_body(f, rep, "  ");
    fprintf(f, "\n}\n");
}

static const char *const csv_cols =
    "model,mode,batch,precision,optimizer,optimizer_impl,accumulate,attention,parameters,trainable_parameters,"
    "memory.weights,memory.gradients,memory.optimizer_states,memory.activations,memory.workspace,"
    "memory.peak_allocated,memory.reserved,memory.cuda_context,memory.total,"
    "peak.phase,peak.layer,peak.kind,peak.weights,peak.gradients,peak.optimizer_states,peak.activations,"
    "peak.temporaries,peak.workspace";

void report_csv_header(FILE *f, const vc_report *rep)
{
    fputs(csv_cols, f);
    if (rep->gpu) fputs(",gpu.name,gpu.capacity,gpu.free,gpu.fits", f);
    if (rep->max_batch >= 0) fputs(",max_batch", f);
    fputc('\n', f);
}

void report_csv_row(FILE *f, const vc_report *rep)
{
    const vc_options *o = rep->opts;
    const vc_result *r = rep->r;
    const vc_memory *m = &r->memory;
    csv_str(f, rep->model);
    fprintf(f, ",%s,%" PRId64 ",%s,%s,%s,%" PRId64 ",%s,%" PRId64 ",%" PRId64, vc_mode_name(o->mode), o->batch,
            vc_precision_name(o->precision), vc_optim_name(o->optim), vc_optim_impl_name(o->optim_impl), o->accumulate,
            vc_attention_name(o->attention), r->parameters, r->trainable_parameters);
    fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64,
            m->weights, m->gradients, m->optimizer_states, m->activations, m->workspace, m->peak_allocated, m->reserved,
            m->cuda_context, m->total);
    fprintf(f, ",%s,", vc_phase_name(r->peak.phase));
    csv_str(f, r->peak.layer);
    fputc(',', f);
    csv_str(f, r->peak.kind);
    fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64, r->peak.weights,
            r->peak.gradients, r->peak.optimizer_states, r->peak.activations, r->peak.temporaries, r->peak.workspace);
    if (rep->gpu) {
        fputc(',', f);
        csv_str(f, rep->gpu->name);
        fprintf(f, ",%" PRId64 ",%" PRId64 ",%s", rep->gpu->capacity, rep->gpu->capacity - m->total,
                report_fits(rep) ? "true" : "false");
    }
    if (rep->max_batch >= 0) fprintf(f, ",%" PRId64, rep->max_batch);
    fputc('\n', f);
}

/* ---- sweeps ---- */

void report_json_sweep_begin(FILE *f) { fputs("{\n  \"schema_version\": 1,\n  \"sweep\": [", f); }

void report_json_sweep_row(FILE *f, const vc_report *rep, bool first)
{
    fprintf(f, "%s\n    {\n", first ? "" : ",");
    vc_report row = *rep;
    row.max_batch = -1; /* once, at the top */
    json_body(f, &row, "      ");
    fputs("\n    }", f);
}

void report_json_sweep_end(FILE *f, const vc_report *rep)
{
    fputs("\n  ]", f);
    if (rep->gpu && rep->max_batch >= 0) {
        fputs(",\n  \"gpu\": {\"name\": ", f);
        json_str(f, rep->gpu->name);
        fprintf(f, ", \"capacity\": %" PRId64 "}", rep->gpu->capacity);
    }
    if (rep->max_batch >= 0) fprintf(f, ",\n  \"max_batch\": %" PRId64, rep->max_batch);
    fputs("\n}\n", f);
}

enum { SWEEP_BAR_W = 24 };

static void header_lines(FILE *f, const vc_report *rep, bool with_batch)
{
    const vc_options *o = rep->opts;
    if (rep->file) fprintf(f, "%s%s%s%s\n", rep->model[0] ? rep->model : rep->file, rep->model[0] ? " (" : "",
                           rep->model[0] ? rep->file : "", rep->model[0] ? ")" : "");
    else fprintf(f, "counts-only estimate (bytes per parameter and per activation element)\n");
    fprintf(f, "%s", vc_mode_name(o->mode));
    if (with_batch) fprintf(f, ", batch %" PRId64, o->batch);
    fprintf(f, ", %s", vc_precision_name(o->precision));
    if (rep->weights) fprintf(f, ", weights %s", rep->weights);
    if (o->mode == VC_MODE_TRAIN) {
        fprintf(f, ", %s", vc_optim_name(o->optim));
        if (o->optim != VC_OPTIM_NONE && !rep->counts_only) fprintf(f, " (%s)", vc_optim_impl_name(o->optim_impl));
        if (o->accumulate > 1) fprintf(f, ", accumulate %" PRId64, o->accumulate);
    }
    if (!rep->counts_only) fprintf(f, ", attention %s", vc_attention_name(o->attention));
    fputc('\n', f);
}

void report_sweep_table_begin(FILE *f, const vc_report *rep)
{
    header_lines(f, rep, false);
    fprintf(f, "parameters %" PRId64 " (trainable %" PRId64 ")\n", rep->r->parameters, rep->r->trainable_parameters);
    if (rep->gpu) {
        char c[32];
        format_bytes(rep->gpu->capacity, c, sizeof c);
        fprintf(f, "gpu %s: capacity %s (%" PRId64 " bytes)\n", rep->gpu->name, c, rep->gpu->capacity);
    }
    fprintf(f, "\n  %10s %12s %12s %12s %12s %12s", "batch", "weights", "activations", "peak alloc", "reserved",
            "total");
    if (rep->gpu) fprintf(f, " %12s %5s  %-*s", "free", "fits", SWEEP_BAR_W + 2, "of capacity");
    fputc('\n', f);
}

void report_sweep_table_row(FILE *f, const vc_report *rep)
{
    const vc_memory *m = &rep->r->memory;
    char w[32], a[32], p[32], rs[32], t[32];
    format_bytes(m->weights, w, sizeof w);
    format_bytes(m->activations, a, sizeof a);
    format_bytes(m->peak_allocated, p, sizeof p);
    format_bytes(m->reserved, rs, sizeof rs);
    format_bytes(m->total, t, sizeof t);
    fprintf(f, "  %10" PRId64 " %12s %12s %12s %12s %12s", rep->opts->batch, w, a, p, rs, t);
    if (rep->gpu) {
        int64_t free_b = rep->gpu->capacity - m->total;
        char fb[32];
        format_bytes(free_b < 0 ? -free_b : free_b, fb, sizeof fb);
        if (free_b < 0) {
            char neg[34];
            snprintf(neg, sizeof neg, "-%s", fb);
            fprintf(f, " %12s %s  ", neg, rep->term.color ? "\033[1;31m   no\033[0m" : "   NO");
        } else {
            fprintf(f, " %12s %5s  ", fb, "yes");
        }
        int64_t seg[SEG_N];
        segments(rep->r, seg);
        int64_t scale = m->total > rep->gpu->capacity ? m->total : rep->gpu->capacity;
        draw_bar(f, &rep->term, seg, m->total, scale, rep->gpu->capacity, SWEEP_BAR_W);
    }
    fputc('\n', f);
}

void report_sweep_table_end(FILE *f, const vc_report *rep)
{
    if (rep->gpu) {
        fputs("\n  bar: ", f);
        int64_t seg[SEG_N] = {0};
        for (int i = 0; i < SEG_N; i++) {
            int cur = 0;
            (void)seg;
            put_cell(f, &rep->term, i, &cur);
            if (rep->term.color) fputs("\033[0m", f);
            fprintf(f, " %s  ", seg_name[i]);
            if (i == 3) fputs("\n       ", f);
        }
        fprintf(f, "\n       %s capacity\n", rep->term.utf8 ? "\u2502 or ]" : "| or ]");
    }
    if (rep->max_batch >= 0 && rep->gpu)
        fprintf(f, "\n  max batch on %s: %" PRId64 "%s\n", rep->gpu->name, rep->max_batch,
                rep->max_batch == 0 ? " (batch 1 does not fit)" : "");
}
