/*
 * report.c — table and JSON output, sweeps of them (CSV's too), and the
 * table's memory bar; CSV's cells are report_csv.c's.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "release.h"
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

static int term_width(const vc_term *t) { return t->width > 0 ? t->width : VC_TEXT_WIDTH; }

/* Words of text wrapped to the width, further lines indented. */
static void wrap_words(FILE *f, const char *first, const char *text, int width, int indent)
{
    text_line l;
    line_begin(&l, f, width, indent, first);
    bool lead = true;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, " ");
        if (n) {
            line_itemn(&l, lead && !first[0] ? "" : " ", p, n);
            lead = false;
        }
        p += n;
        while (*p == ' ') p++;
    }
    line_end(&l);
}

/* A component row; a note that does not fit after it goes on the next line,
 * indented, cut in its middle if it is still too long. */
static void row(FILE *f, const vc_term *t, const char *label, int64_t v, const char *note)
{
    char b[32];
    format_bytes(v, b, sizeof b);
    fprintf(f, "  %-18s %12s  %18" PRId64, label, b, v);
    int width = term_width(t);
    if (note && 53 + 2 + text_cols(note) <= width) fprintf(f, "  %s", note);
    else if (note) {
        fputs("\n    ", f);
        text_fit(f, note, width - 4, FIT_MIDDLE | FIT_NOPAD, t->utf8);
    }
    fputc('\n', f);
}

bool report_fits(const vc_report *rep) { return !rep->gpu || rep->r->memory.total <= rep->gpu->capacity; }

/* ---- the memory bar ----
 * The total, split exactly into what is live at the peak, the allocator's
 * cache (reserved - peak allocated) and the CUDA context, drawn against the
 * GPU's capacity (or against the total without --gpu). */
enum { SEG_N = 9, BAR_W = 60 };
static const char *const seg_name[SEG_N] = {"weights", "gradients", "optimizer states", "activations",
                                            "temporaries", "workspace", "allocator cache", "cuda context", "nccl buffers"};
static const char seg_ascii[SEG_N] = {'W', 'G', 'O', 'A', 'T', 'S', 'C', 'X', 'N'};
static const char *const seg_utf8[SEG_N] = {"\u2588", "\u2593", "\u2592", "\u2591", "\u259a", "\u259e", "\u2584", "\u2580", "\u2596"};
static const int seg_color[SEG_N] = {34, 35, 33, 32, 36, 31, 37, 90, 94};

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
    seg[8] = r->memory.nccl; /* src/engine/nccl.c: 0 on one GPU */
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
        char first[256], it[96];
        format_bytes(cap, c, sizeof c);
        format_bytes(total, b, sizeof b);
        int k = snprintf(first, sizeof first, "  %s: capacity %s", rep->gpu->name, c);
        if (rep->gpu->percent < 100 && k > 0 && (size_t)k < sizeof first) {
            char tb[32];
            format_bytes(rep->gpu->total, tb, sizeof tb);
            snprintf(first + k, sizeof first - (size_t)k, " (%g%% of %s)", rep->gpu->percent, tb);
        }
        text_line l;
        line_begin(&l, f, term_width(t), 4, first);
        int64_t free_b = cap - total;
        format_bytes(free_b < 0 ? -free_b : free_b, c, sizeof c);
        snprintf(it, sizeof it, "total %s %s", b,
                 free_b >= 0 ? (t->color ? "\033[1;32mfits\033[0m" : "fits")
                             : (t->color ? "\033[1;31mDOES NOT FIT\033[0m" : "DOES NOT FIT"));
        line_item(&l, "; ", it);
        if (free_b >= 0)
            snprintf(it, sizeof it, "%s free (%.1f%% used)", c, cap ? 100.0 * (double)total / (double)cap : 0.0);
        else snprintf(it, sizeof it, "%s over", c);
        line_item(&l, ", ", it);
        line_end(&l);
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

static void hints_table(FILE *f, const vc_report *rep);

/* "model (file)", wrapped at spaces. */
static void title_line(FILE *f, const vc_report *rep)
{
    char t[4 * 4096 + 512];
    if (rep->file)
        snprintf(t, sizeof t, "%s%s%s%s", rep->model[0] ? rep->model : rep->file, rep->model[0] ? " (" : "",
                 rep->model[0] ? rep->file : "", rep->model[0] ? ")" : "");
    else snprintf(t, sizeof t, "counts-only estimate (bytes per parameter and per activation element)");
    wrap_words(f, "", t, term_width(&rep->term), 2);
}

/* --recipe: "recipe NAME sets --lora 8 ...; left to the options given: --batch" and its source, wrapped. */
static void recipe_lines(FILE *f, const vc_report *rep)
{
    const vc_recipe_row *r = rep->recipe;
    if (!r) return;
    char t[2048];
    size_t at = (size_t)snprintf(t, sizeof t, "recipe %s sets", r->name);
    bool mine = false;
    for (int pass = 0; pass < 2; pass++) /* what the recipe set, then the options given in its place */
        for (size_t k = 0; k < vc__recipe_npairs(r) && at < sizeof t; k++) {
            if ((rep->recipe_set[k] ? 0 : 1) != pass) continue;
            if (pass && !mine) at += (size_t)snprintf(t + at, sizeof t - at, "; left to the options given:"), mine = true;
            if (at >= sizeof t) break;
            const vc_option_info *info = vc_option_find(r->set[k].option);
            at += (size_t)snprintf(t + at, sizeof t - at, pass ? " --%s" : info->arg ? " --%s %s" : " --%s", info->flag,
                                   vc__recipe_value(&r->set[k], rep->trl, NULL));
        }
    wrap_words(f, "", t, term_width(&rep->term), 4);
    const int trl = rep->trl ? rep->trl : VC_TRL_DEFAULT;
    if (vc__recipe_follows_trl(r))
        snprintf(t, sizeof t, "from %s at tag v%d.%d.0 (not applied: vramcalc --recipe list)", r->source, trl / 100,
                 trl % 100);
    else
        snprintf(t, sizeof t, "from %s (not applied: vramcalc --recipe list)", r->source);
    wrap_words(f, "", t, term_width(&rep->term), 4);
}

/* "train, batch 8, fp32, adam (foreach), attention auto", wrapped between items. */
static void options_line(FILE *f, const vc_report *rep, bool with_batch)
{
    const vc_options *o = rep->opts;
    char it[96];
    text_line l;
    line_begin(&l, f, term_width(&rep->term), 2, vc_mode_name(o->mode));
    if (with_batch) {
        if (o->packing > 1) snprintf(it, sizeof it, "batch %" PRId64 " (%" PRId64 " sequences packed)", o->batch, o->packing);
        else snprintf(it, sizeof it, "batch %" PRId64, o->batch);
        line_item(&l, ", ", it);
    }
    line_item(&l, ", ", vc_precision_name(o->precision));
    if (rep->weights) {
        snprintf(it, sizeof it, "weights %s", rep->weights);
        line_item(&l, ", ", it);
    }
    if (o->parallel != VC_PARALLEL_NONE) {
        snprintf(it, sizeof it, "%s on %" PRId64 " GPU%s (per GPU)%s%s", vc_parallel_name(o->parallel), o->gpus,
                 o->gpus == 1 ? "" : "s", o->offload ? ", offload " : "", o->offload ? vc_offload_name(o->offload) : "");
        line_item(&l, ", ", it);
    }
    if (o->gradient_as_bucket_view) line_item(&l, ", ", "gradient_as_bucket_view"); /* DDP's, ZeRO's bucket views */
    if (o->parameters_as_bucket_view) line_item(&l, ", ", "parameters_as_bucket_view");
    if (o->fsdp_param_dtype || o->fsdp_reduce_dtype) { /* FSDP2's MixedPrecisionPolicy, FSDP1's MixedPrecision */
        snprintf(it, sizeof it, "%s(param %s, reduce %s)", vc_parallel_mixed_precision(o->parallel),
                 vc_fsdp_dtype_name(o->fsdp_param_dtype), vc_fsdp_dtype_name(o->fsdp_reduce_dtype));
        line_item(&l, ", ", it);
    }
    if (o->fsdp_use_orig_params) line_item(&l, ", ", "use_orig_params=True"); /* FSDP1's */
    if (o->fsdp_reshard) { /* fully_shard's reshard_after_forward, given */
        char n[24];
        snprintf(n, sizeof n, "%" PRId64, o->fsdp_reshard);
        /* False: the one real-GPU check measured more than this (docs/parallel.md 2.5), said where it is read */
        snprintf(it, sizeof it, "reshard_after_forward=%s", o->fsdp_reshard == VC_FSDP_RESHARD_TRUE ? "True"
                 : o->fsdp_reshard == VC_FSDP_RESHARD_FALSE
                     ? "False (7-13% low on an H200: parallel.md 2.5)"
                     : n);
        line_item(&l, ", ", it);
    }
    if (o->ds_overlap_comm) /* DeepSpeed ZeRO's overlap_comm, given */
        line_item(&l, ", ", o->ds_overlap_comm == VC_DS_OVERLAP_ON ? "overlap_comm=True" : "overlap_comm=False");
    if (o->offload_device == VC_OFFLOAD_DEVICE_NVME) /* ZeRO-Infinity (docs/parallel.md 1.9) */
        line_item(&l, ", ", o->nvme_gds ? "device nvme, use_gds" : "device nvme");
    if (o->fsdp_replicate > 1) { /* FSDP2's HSDP mesh: replicas x shards */
        snprintf(it, sizeof it, "HSDP %" PRId64 " x %" PRId64, o->fsdp_replicate, vc_dp_world(o) / o->fsdp_replicate);
        line_item(&l, ", ", it);
    }
    if (o->tp > 1) { /* Megatron tensor (and sequence) parallelism: one rank's share */
        snprintf(it, sizeof it, "tp %" PRId64 "%s%s", o->tp, o->sp ? " + sp" : "", o->parallel == VC_PARALLEL_NONE && o->pp < 2 ? " (per GPU)" : "");
        line_item(&l, ", ", it);
    }
    if (o->ep > 1) { /* Megatron-Core expert parallelism: one rank's experts */
        snprintf(it, sizeof it, "ep %" PRId64 " (per GPU)", o->ep);
        line_item(&l, ", ", it);
    }
    if (o->pp > 1) {
        char sched[64] = "1F1B"; /* --pp-virtual: Megatron's interleaved 1F1B */
        if (o->pp_virtual > 1) snprintf(sched, sizeof sched, "interleaved 1F1B, %" PRId64 " chunks per rank", o->pp_virtual);
        snprintf(it, sizeof it, "pipeline %" PRId64 " stages x %" PRId64 " micro-batches (%s; per GPU)", o->pp,
                 o->micro_batches ? o->micro_batches : o->pp, sched);
        line_item(&l, ", ", it);
    }
    if (o->mode == VC_MODE_TRAIN) {
        if (o->optim != VC_OPTIM_NONE && !rep->counts_only)
            snprintf(it, sizeof it, "%s (%s)", vc_optim_name(o->optim), vc_optim_impl_name(o->optim_impl));
        else snprintf(it, sizeof it, "%s", vc_optim_name(o->optim));
        line_item(&l, ", ", it);
        if (o->accumulate > 1) {
            snprintf(it, sizeof it, "accumulate %" PRId64, o->accumulate);
            line_item(&l, ", ", it);
        }
    }
    if (o->mode == VC_MODE_GENERATE) {
        snprintf(it, sizeof it, "prompt %" PRId64 " + %" PRId64 " new tokens", o->prompt, o->new_tokens);
        line_item(&l, ", ", it);
        snprintf(it, sizeof it, "%s cache", vc_cache_name(o->cache));
        line_item(&l, ", ", it);
        if (o->num_beams > 1) { /* beam search (src/engine/generate.c "Beam search") */
            snprintf(it, sizeof it, "%" PRId64 " beams", o->num_beams);
            line_item(&l, ", ", it);
        }
    }
    if (!rep->counts_only) {
        snprintf(it, sizeof it, "attention %s", vc_attention_name(o->attention));
        line_item(&l, ", ", it);
    }
    line_end(&l);
}

/* One line on what the three totals are (issue 16). */
#define VC_REPORT_LEGEND                                                                                    \
    "peak allocated is what torch.cuda.max_memory_allocated() reports; reserved, max_memory_reserved() "  \
    "(the caching allocator's segments); total adds the CUDA context (docs/context.md): what nvidia-smi shows"
/* ... where a multi-GPU layout holds NCCL's buffers (src/engine/nccl.c) */
#define VC_REPORT_LEGEND_NCCL                                                                               \
    "peak allocated is what torch.cuda.max_memory_allocated() reports; reserved, max_memory_reserved() "  \
    "(the caching allocator's segments); total adds the CUDA context and NCCL's buffers (docs/context.md): "   \
    "what nvidia-smi shows"

static void max_batch_line(FILE *f, const vc_report *rep, bool limit_note)
{
    char first[160];
    snprintf(first, sizeof first, "  max batch on %s: %" PRId64, rep->gpu->name, rep->max_batch);
    text_line l;
    line_begin(&l, f, term_width(&rep->term), 4, first);
    if (rep->max_batch == 0) line_item(&l, " ", "(batch 1 does not fit)");
    else if (limit_note && rep->max_batch >= VC_MAX_BATCH_LIMIT)
        line_item(&l, " ", "(the search's limit, 2^40: larger batches were not tried)");
    else if (limit_note && rep->opts->batch == rep->max_batch) { /* the headroom it leaves */
        char b[32], it[160];
        int64_t free_b = rep->gpu->capacity - rep->r->memory.total;
        format_bytes(free_b, b, sizeof b);
        if (free_b < rep->gpu->capacity / 20) /* under 5%: fragmentation or another process can tip it over */
            snprintf(it, sizeof it, "(leaves %s of the card free: keep headroom with --gpu %.60s:90%%)", b,
                     rep->gpu->preset ? rep->gpu->preset->name : "SIZE");
        else snprintf(it, sizeof it, "(leaves %s of the card free)", b);
        line_item(&l, " ", it);
    }
    line_end(&l);
}

/* ---- --per-layer: columns sized to their contents, within the width ---- */
typedef struct {
    int name, kind, shape, params, saved;
} layer_cols;

static void shape_text(const vc_layer_info *l, char *shape, size_t n)
{
    size_t u = 1;
    shape[0] = '[';
    shape[1] = '\0';
    for (int d = 0; d < l->ndim && u < n; d++)
        u += (size_t)snprintf(shape + u, n - u, "%s%" PRId64, d ? ", " : "", l->output_shape[d]);
    if (u < n) snprintf(shape + u, n - u, "]");
}

/* The natural widths; when the line would pass `width` the name column gives
 * way down to 24 columns, then the output and kind columns down to 12, then
 * the name down to 16 (cells then cut with an ellipsis: a name in its middle,
 * keeping its start and its leaf). */
static layer_cols layer_widths(const vc_result *r, int width, int indent)
{
    layer_cols c = {5, 4, 6, 10, 5};
    char b[128];
    for (size_t i = 0; i < r->nlayers; i++) {
        const vc_layer_info *l = &r->layers[i];
        int n;
        if ((n = text_cols(l->name)) > c.name) c.name = n;
        if ((n = text_cols(l->kind)) > c.kind) c.kind = n;
        shape_text(l, b, sizeof b);
        if ((n = (int)strlen(b)) > c.shape) c.shape = n;
        if ((n = snprintf(b, sizeof b, "%" PRId64, l->parameters)) > c.params) c.params = n;
        format_bytes(l->activations, b, sizeof b);
        if ((n = (int)strlen(b)) > c.saved) c.saved = n;
    }
    int over = indent + c.name + c.kind + c.shape + c.params + c.saved + 4 - width;
    int *give[4] = {&c.name, &c.shape, &c.kind, &c.name};
    const int least[4] = {24, 12, 12, 16};
    for (int k = 0; k < 4 && over > 0; k++) {
        int can = *give[k] - least[k];
        if (can <= 0) continue;
        int d = can < over ? can : over;
        *give[k] -= d;
        over -= d;
    }
    return c;
}

static void layer_row(FILE *f, const vc_term *t, const layer_cols *c, int indent, const char *name, const char *kind,
                      const char *shape, const char *params, const char *saved)
{
    fprintf(f, "%*s", indent, "");
    text_fit(f, name, c->name, FIT_MIDDLE, t->utf8);
    fputc(' ', f);
    text_fit(f, kind, c->kind, FIT_LEFT, t->utf8);
    fputc(' ', f);
    text_fit(f, shape, c->shape, FIT_LEFT, t->utf8);
    fputc(' ', f);
    text_fit(f, params, c->params, FIT_RIGHT, t->utf8);
    fputc(' ', f);
    text_fit(f, saved, c->saved, FIT_RIGHT, t->utf8);
    fputc('\n', f);
}

/* The per-layer rows of r (with their header line when header), indented. */
static void layer_table(FILE *f, const vc_report *rep, const vc_result *r, int indent, bool header)
{
    layer_cols c = layer_widths(r, term_width(&rep->term), indent);
    if (header) layer_row(f, &rep->term, &c, indent, "layer", "kind", "output", "parameters", "saved");
    for (size_t i = 0; i < r->nlayers; i++) {
        const vc_layer_info *l = &r->layers[i];
        char shape[128], params[24], saved[32];
        shape_text(l, shape, sizeof shape);
        snprintf(params, sizeof params, "%" PRId64, l->parameters);
        format_bytes(l->activations, saved, sizeof saved);
        layer_row(f, &rep->term, &c, indent, l->name, l->kind, shape, params, saved);
    }
}

void report_sweep_layers(FILE *f, const vc_report *rep) { layer_table(f, rep, rep->r, 6, false); }

/* "a-b" or "a" */
static void range_text(char *buf, size_t n, int64_t a, int64_t b)
{
    if (a == b) snprintf(buf, n, "%" PRId64, a);
    else snprintf(buf, n, "%" PRId64 "-%" PRId64, a, b);
}

/* --pp: a line per kind of rank (the figures of its busiest stage). */
static void ranks_table(FILE *f, const vc_result *r)
{
    if (!r->nranks) return;
    fprintf(f, "\n  per rank      stages  ranks          layers  in flight  peak allocated       total\n");
    bool marked = false;
    for (size_t i = 0; i < r->nranks; i++) {
        const vc_rank_info *k = &r->ranks[i];
        bool busiest = !marked && k->memory.total == r->memory.total && k->memory.peak_allocated == r->memory.peak_allocated;
        marked |= busiest;
        char st[48], rk[48], pa[32], tt[32];
        range_text(st, sizeof st, k->stage_first, k->stage_last);
        range_text(rk, sizeof rk, k->rank_first, k->rank_last);
        format_bytes(k->memory.peak_allocated, pa, sizeof pa);
        format_bytes(k->memory.total, tt, sizeof tt);
        fprintf(f, "  %-12s %7s  %-13s %7" PRId64 "  %9" PRId64 "  %14s  %10s%s\n", k->kind, st, rk, k->layers, k->in_flight,
                pa, tt, busiest ? "  (busiest)" : "");
    }
}

bool report_context_modelled(const vc_options *o, const vc_memory *m)
{
    return !m->context_parts.given && o->context < 0 && !(o->device && strcmp(o->device->vendor, "NVIDIA"));
}

/* The cuda context row, and under it the model's parts that are not 0
 * (src/engine/context.c, docs/context.md): measured on this card and stack, or
 * extrapolated. */
static void context_rows(FILE *f, const vc_report *rep, const vc_memory *m)
{
    const vc_options *o = rep->opts;
    const vc_term *t = &rep->term;
    const vc_context_parts *p = &m->context_parts;
    if (!report_context_modelled(o, m)) {
        row(f, t, "cuda context", m->cuda_context, o->context >= 0 ? "(--context)" : "(estimate, not modelled)");
        return;
    }
    row(f, t, "cuda context", m->cuda_context,
        p->measured ? "(model, fitted: this GPU)" : "(model, extrapolated)");
    char note[64];
    if (p->runtime) row(f, t, "  runtime", p->runtime, "(driver, runtime, ATen)");
    snprintf(note, sizeof note, "(1 KiB x %" PRId64 " threads)", p->local_memory >> 10);
    if (p->local_memory) row(f, t, "  local memory", p->local_memory, note);
    if (p->eager) row(f, t, "  eager loading", p->eager, "(every module at start)");
    if (p->cublas) row(f, t, "  cuBLAS", p->cublas, "(the step's GEMMs)");
    if (p->kernels) row(f, t, "  cuDNN/flash", p->kernels, "(the step's kernels)");
    snprintf(note, sizeof note, "(256 B x %" PRId64 " threads)", p->backward_local_memory >> 8);
    if (p->backward_local_memory) row(f, t, "  backward stack", p->backward_local_memory, note);
    if (p->backward_kernels) row(f, t, "  backward kernels", p->backward_kernels, "(cuDNN/flash, training)");
}

/* NCCL's buffers on one GPU of a multi-GPU layout (src/engine/nccl.c): outside
 * the caching allocator, in total */
static void nccl_row(FILE *f, const vc_report *rep)
{
    vc_nccl_info n;
    vc_nccl_per_gpu_of(rep->opts, rep->r->memory.nccl, &n);
    if (!n.communicators) return;
    char note[128], nodes[40] = "";
    if (n.nodes > 1) snprintf(nodes, sizeof nodes, ", %" PRId64 " nodes", n.nodes);
    snprintf(note, sizeof note, "(%" PRId64 " comm%s, %" PRId64 " ch%s%s)", n.communicators,
             n.communicators == 1 ? "" : "s", n.channels, n.nvls_bytes ? ", NVLS" : "", nodes);
    row(f, &rep->term, "nccl buffers", rep->r->memory.nccl, note);
    if (!n.tree_communicators && !n.pat_bytes) return; /* across nodes: the parts, trees and PAT among them */
    const vc_term *t = &rep->term;
    if (n.ring_bytes) row(f, t, "  rings", n.ring_bytes, "(ring connections)");
    if (n.p2p_bytes) row(f, t, "  send/recv", n.p2p_bytes, "(pipeline, all-to-all)");
    if (n.nvls_bytes) row(f, t, "  NVLS", n.nvls_bytes, "(NVLink SHARP buffers)");
    if (n.tree_communicators) row(f, t, "  trees", n.tree_bytes, "(all-reduce across nodes)");
    if (n.nvls_tree_bytes) row(f, t, "  NVLS trees", n.nvls_tree_bytes, "(NVLS_TREE all-reduce)");
    if (n.pat_bytes) row(f, t, "  PAT", n.pat_bytes, "(one GPU a node)");
}

/* cuDNN's convolution workspaces (src/engine/cudnn.c): the interval's other
 * end under the figures, or where they come from a --cudnn-table */
static void cudnn_rows(FILE *f, const vc_report *rep, const vc_memory *m)
{
    const vc_term *t = &rep->term;
    if (m->cudnn.source == VC_CUDNN_TABLE) {
        fprintf(f, "  %-18s (convolution workspaces: --cudnn-table)\n", "");
        return;
    }
    if (m->cudnn.source != VC_CUDNN_BOUND) return;
    bool high = rep->opts->bound == VC_BOUND_HIGH;
    row(f, t, high ? "  cuDNN low peak" : "  cuDNN high peak", high ? m->cudnn.peak_allocated_low : m->cudnn.peak_allocated_high,
        high ? "(no convolution workspace)" : "(workspaces at bound)");
    row(f, t, high ? "  cuDNN low total" : "  cuDNN high total", high ? m->cudnn.total_low : m->cudnn.total_high,
        high ? "(--bound high: above)" : "(--bound high)");
}

/* --compile (src/engine/compile.c): the eager step's figures under the compiled ones, the
 * saved activations both ways, and what the model leaves out */
static const char *const compile_modelled = "the min-cut partitioner's saved values, inductor's fusion (forward and backward)";
static const char *const compile_not = "graph breaks, dynamic shapes, custom kernels, inductor's buffer reuse, its peak-memory reordering";

static void compile_rows(FILE *f, const vc_report *rep, const vc_memory *m)
{
    const vc_term *t = &rep->term;
    if (!m->compile.on) return;
    row(f, t, "  eager peak", m->compile.eager_peak_allocated, "(not compiled)");
    row(f, t, "  eager total", m->compile.eager_total, "(not compiled)");
    if (rep->opts->mode == VC_MODE_TRAIN) {
        row(f, t, "  saved, eager", m->compile.saved_eager, "(autograd's)");
        row(f, t, "  saved, compiled", m->compile.saved_compiled, "(partitioner's)");
    }
    fprintf(f, "  torch.compile, modelled: %s\n  not modelled: %s\n", compile_modelled, compile_not);
    if (m->compile.reorder) fputs("  (the reordering is on at this --torch release: the figures are its upper end)\n", f);
}

/* --first-step: the run's first steps beside the steady figures above, where they differ */
static void first_step_rows(FILE *f, const vc_report *rep, const vc_memory *m)
{
    const vc_term *t = &rep->term;
    if (!m->first_step.computed) return;
    if (m->first_step.peak_allocated != m->peak_allocated)
        row(f, t, "  first step peak", m->first_step.peak_allocated, "(state made in step())");
    if (m->first_step.total != m->total)
        row(f, t, "  two-step total", m->first_step.total, "(reserve of steps 1-2)");
    if (m->first_step.peak_allocated == m->peak_allocated && m->first_step.total == m->total)
        fprintf(f, "  %-18s (--first-step: the first two steps' peak and total are the same)\n", "");
}

void report_table(FILE *f, const vc_report *rep)
{
    const vc_options *o = rep->opts;
    const vc_result *r = rep->r;
    const vc_memory *m = &r->memory;
    const vc_term *t = &rep->term;
    char b[64];
    title_line(f, rep);
    options_line(f, rep, true);
    recipe_lines(f, rep);
    fprintf(f, "parameters %" PRId64 " (trainable %" PRId64 ")\n\n", r->parameters, r->trainable_parameters);
    fprintf(f, "  %-18s %12s  %18s\n", "component", "size", "bytes");
    row(f, t, "weights", m->weights, NULL);
    row(f, t, "gradients", m->gradients, NULL);
    row(f, t, "optimizer states", m->optimizer_states, NULL);
    row(f, t, "activations", m->activations, o->mode == VC_MODE_TRAIN ? "(held at end of forward)" : "(largest live set)");
    if (!rep->counts_only) row(f, t, "workspace", m->workspace, "(cuBLAS)");
    char note[200];
    if (rep->counts_only) snprintf(note, sizeof note, "(sum of the above)");
    else if (r->peak.layer[0]) snprintf(note, sizeof note, "(%s, %s %s)", vc_phase_name(r->peak.phase), r->peak.layer, r->peak.kind);
    else snprintf(note, sizeof note, "(%s%s%s)", vc_phase_name(r->peak.phase), r->peak.kind[0] ? ", " : "", r->peak.kind);
    row(f, t, "peak allocated", m->peak_allocated, note);
    if (o->mode == VC_MODE_GENERATE && (r->generate.kv_tokens || r->generate.ssm_layers)) { /* issue 13: the phases apart */
        /* GenerationMixin._prefill (--transformers 5.0, src/engine/generate.c "The prefill"): prompt - 1 tokens,
         * then the last one's step */
        const bool encdec = r->generate.cross_cache && !r->generate.cross_images;
        const int shift = !encdec && o->prompt > 1 && vc_transformers_value(rep->transformers, VC_TF_PREFILL_BUT_LAST);
        row(f, t, "  prefill peak", r->generate.prefill_peak,
            encdec                  ? "(the encoder over the prompt, the decoder's first token)"
            : shift                 ? "(_prefill over prompt - 1 tokens, the last one's step)"
                                    : "(the prompt's forward, logits of its last token)");
        if (r->generate.decode_step) {
            snprintf(note, sizeof note, "(step %" PRId64 " of %" PRId64 ": %s)", r->generate.decode_step, o->new_tokens - 1,
                     o->cache == VC_CACHE_QUANTIZED &&
                             (r->generate.decode_step + shift) % (o->kv_residual > 2 ? o->kv_residual : 2) == 0
                         ? "the cache is requantized"
                     /* generate.c prefill_storage_held: the first step emitted before the last */
                     : r->generate.decode_step == 1 && o->new_tokens > 2 ? "sliding layers hold the prompt's K/V"
                                                                         : "the cache is longest");
            row(f, t, "  decode peak", r->generate.decode_peak, note);
        }
        snprintf(note, sizeof note, "(%" PRId64 " tokens per sequence, %s%s%s)", r->generate.kv_tokens,
                 r->generate.ssm_layers ? "full-attention layers" /* Qwen3NextDynamicCache: K/V on those only */ : "all layers",
                 o->cache == VC_CACHE_OFFLOADED ? ", in host memory" : "",
                 r->generate.kv_mla ? "; MLA: full per-head K/V, not the latent" : "");
        if (r->generate.cross_cache) /* an encoder-decoder: EncoderDecoderCache's two parts; mllama's image tokens */
            snprintf(note, sizeof note, "(%" PRId64 " decoder + %" PRId64 " %s tokens, %s)", r->generate.kv_tokens,
                     r->generate.cross_tokens, r->generate.cross_images ? "image" : "encoder",
                     r->generate.cross_images ? "self- and cross-attention layers" : "all decoder layers");
        if (r->generate.kv_tokens) row(f, t, "  KV cache", r->generate.kv_cache, note); /* none in mamba2's Mamba2Cache */
        if (r->generate.cross_cache) {
            row(f, t, "    cross K/V", r->generate.cross_cache, r->generate.cross_images ? "(of it: the cross-attention layers' K/V of the images)"
                                                                                        : "(of it: K/V of the encoder output)");
        }
        if (r->generate.ssm_layers && r->generate.ssm_mamba) { /* granitemoehybrid's HybridMambaAttentionDynamicCache */
            snprintf(note, sizeof note, "(conv_states + ssm_states of %" PRId64 " Mamba2 layers, fixed size)",
                     r->generate.ssm_mamba);
            row(f, t, "  Mamba state", r->generate.ssm_state, note);
        } else if (r->generate.ssm_conv) { /* lfm2's Lfm2HybridConvCache */
            snprintf(note, sizeof note, "(conv_cache of %" PRId64 " layers, fixed size)", r->generate.ssm_conv);
            row(f, t, "  conv state", r->generate.ssm_state, note);
        } else if (r->generate.ssm_layers) {
            snprintf(note, sizeof note, "(conv + recurrent state of %" PRId64 " Gated DeltaNet layers, fixed size)",
                     r->generate.ssm_layers);
            row(f, t, "  DeltaNet state", r->generate.ssm_state, note);
        }
    }
    if (r->grpo.on) { /* --loss grpo (src/engine/grpo.c): the step's phases apart */
        snprintf(note, sizeof note, "(%" PRId64 " x %" PRId64 " tokens sampled)", r->grpo.generation_batch, o->new_tokens);
        if (!o->grpo_vllm) { /* with --use-vllm the completions are vLLM's (below) */
            row(f, t, "  generation peak", r->grpo.generate_peak, note);
            /* with --grad-ckpt too: TRL turns checkpointing off around generate() (src/engine/grpo.c) */
            row(f, t, "  KV cache", r->grpo.kv_cache, "(its last decoding step)");
            if (r->grpo.gathered) /* zero3: GatheredParameters around generate(); fsdp, fsdp2: the unsharded
                                   * parameters at the generation's peak (src/engine/grpo.c) */
                row(f, t, "    gathered weights", r->grpo.gathered, o->parallel == VC_PARALLEL_FSDP ? "(summoned root, a unit)"
                                                                  : o->parallel == VC_PARALLEL_FSDP2 ? "(all-gathers at peak)"
                                                                  : "(GatheredParameters)");
        }
        row(f, t, "  training peak", r->grpo.train_peak, o->grpo_beta != 0.0 ? "(reference, policy, step)" : "(policy, step)");
        if (o->grpo_vllm) { /* --use-vllm: the colocated engine (src/api/request.c vllm_beside) */
            row(f, t, "  vLLM engine", r->grpo.vllm_requested, "(its share of the card)");
            row(f, t, "    its weights", r->grpo.vllm_weights, "(vLLM's copy)");
            row(f, t, "    its KV cache", r->grpo.vllm_kv_cache, r->grpo.vllm_graphs_off_pool ? "(less its graphs)" : "(its pool)");
            snprintf(note, sizeof note, "(%" PRId64 " graphs%s)", r->grpo.vllm_graphs,
                     !r->grpo.vllm_graph_memory ? ", not counted" : r->grpo.vllm_graphs_off_pool ? "" : ", not in share");
            row(f, t, "    its CUDA graphs", r->grpo.vllm_graph_memory, note);
            if (r->grpo.vllm_tp > 1) { /* --vllm-tensor-parallel-size: the rank's figures above, its group's buffers */
                snprintf(note, sizeof note, "(tp %" PRId64 ": NCCL, all-reduce)", r->grpo.vllm_tp);
                row(f, t, "    its TP group", r->grpo.vllm_comm, note);
            }
            row(f, t, "  vLLM beside", r->grpo.vllm_beside, r->grpo.vllm_beside > r->grpo.vllm_graph_memory ? "(in peak)"
                                                   : r->grpo.vllm_graph_memory ? "(sleep: its graphs)" : "(sleep: released)");
            if (r->grpo.gathered) /* zero3, fsdp, fsdp2: sync_weights' gathers (src/engine/grpo.c) */
                row(f, t, "    gathered weights", r->grpo.gathered, o->parallel == VC_PARALLEL_FSDP ? "(a unit's summon_full_params)"
                                                                  : o->parallel == VC_PARALLEL_FSDP2 ? "(a parameter's full_tensor())"
                                                                  : "(GatheredParameters)");
            row(f, t, "  sync peak", r->grpo.sync_peak, r->grpo.sync_temp > r->grpo.gathered ? "(sync_weights, merge)"
                                                        : r->grpo.gathered ? "(sync_weights, gathered)" : "(sync_weights)");
            row(f, t, "  vLLM generate", r->grpo.vllm_peak, "(its generate())");
        }
    }
    row(f, t, "reserved", m->reserved, rep->counts_only ? "(= peak: no allocator model)" : "(caching allocator model)");
    context_rows(f, rep, m);
    nccl_row(f, rep);
    row(f, t, "total", m->total, m->nccl ? "(reserved+context+nccl)" : "(reserved + context)");
    first_step_rows(f, rep, m);
    cudnn_rows(f, rep, m);
    compile_rows(f, rep, m);
    if (m->optimizer_states_paged) /* bitsandbytes' paged state: not in the allocator, not in total */
        row(f, t, "paged states", m->optimizer_states_paged, "(cudaMallocManaged: nvidia-smi only, not in total)");
    ranks_table(f, r);
    if (!rep->counts_only) {
        fputc('\n', f);
        text_line l;
        line_begin(&l, f, term_width(t), 15, "  at the peak:");
        const int64_t parts[] = {r->peak.weights, r->peak.gradients, r->peak.optimizer_states,
                                 r->peak.activations, r->peak.temporaries, r->peak.workspace};
        const char *const names[] = {"weights", "gradients", "states", "activations", "temporaries", "workspace"};
        for (int i = 0; i < 6; i++) {
            if (!parts[i]) continue;
            char item[64];
            format_bytes(parts[i], b, sizeof b);
            snprintf(item, sizeof item, "%s %s;", names[i], b);
            line_item(&l, " ", item);
        }
        line_end(&l);
        if (r->attention[0]) wrap_words(f, "  attention kernel:", r->attention, term_width(t), 4);
        wrap_words(f, "  legend:", m->nccl ? VC_REPORT_LEGEND_NCCL : VC_REPORT_LEGEND, term_width(t), 4);
    }
    bar(f, rep);
    hints_table(f, rep);
    if (rep->max_batch >= 0) {
        fputc('\n', f);
        max_batch_line(f, rep, true);
    }
    if (rep->max_prompt >= 0)
        fprintf(f, "\n  max context on %s: prompt %" PRId64 " + %" PRId64 " new tokens%s\n", rep->gpu->name, rep->max_prompt,
                o->new_tokens, rep->max_prompt == 0 ? " (a one-token prompt does not fit)"
                : rep->max_prompt_limited ? " (the search's limit, the model's positions or 2^40: longer prompts were not tried)"
                                          : "");
    if (rep->max_seq >= 0)
        fprintf(f, "\n  max seq on %s, batch %" PRId64 ": %" PRId64 " tokens%s\n", rep->gpu->name, o->batch, rep->max_seq,
                rep->max_seq == 0 ? " (1 token does not fit)"
                : rep->max_seq_limited ? " (the longest the model takes: one more is refused, not for memory)"
                                       : "");
    if (rep->per_layer && r->nlayers) {
        fputc('\n', f);
        layer_table(f, rep, r, 2, true);
    }
}

/* A hint's options as the CLI spells them: "--grad-ckpt --batch 2". */
static void hint_flags(const vc_hint *h, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < h->n && k < n; i++) {
        const vc_option_info *o = vc_option_find(h->name[i]);
        const char *flag = o ? o->flag : h->name[i];
        int w = !o || o->arg ? snprintf(buf + k, n - k, "%s--%s %s", i ? " " : "", flag, h->value[i])
                             : snprintf(buf + k, n - k, "%s--%s", i ? " " : "", flag);
        if (w < 0) break;
        k += (size_t)w;
    }
}

/* Does not fit: what would (src/api/hints.c), cheapest first. */
static void hints_table(FILE *f, const vc_report *rep)
{
    if (!rep->hints_tried) return;
    const int width = term_width(&rep->term);
    fprintf(f, "\n  what would fit the %s, cheapest first:\n", rep->gpu->name);
    if (!rep->nhints) {
        wrap_words(f, "   ", "nothing: not one knob alone, nor all together (checkpointing, a chunked loss, 8-bit states, a "
                               "smaller batch, LoRA, QLoRA, quantized weights, up to 64 GPUs)", width, 4);
        return;
    }
    for (size_t i = 0; i < rep->nhints; i++) {
        const vc_hint *h = &rep->hints[i];
        char flags[512], head[640], b[32];
        hint_flags(h, flags, sizeof flags);
        format_bytes(h->total, b, sizeof b);
        snprintf(head, sizeof head, "    %s: total %s,", flags, b);
        wrap_words(f, head, h->what, width, 6);
    }
}

/* ---- the options echoed (options.def's VC_OPTION_JSON rows) ---- */

enum { SAME_LINE, NEW_LINE };

typedef struct {
    FILE *f;
    const char *ind;
    bool lead;          /* the next key of the place needs no separator (its object was just opened) */
    const char *object; /* the object of the rows read last (NULL: none) */
    bool in_object;     /* ... and it is there (its first row was) */
} json_echo_state;

static bool same_object(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static void echo_close(json_echo_state *e)
{
    if (e->in_object) fputc('}', e->f);
    e->in_object = false;
}

/* The separator before a key or an object at the place's level: none first (lead), else
 * ", " or ",\n" and the indent. */
static void echo_sep(json_echo_state *e, int line)
{
    if (e->lead) e->lead = false;
    else if (line == NEW_LINE) fprintf(e->f, ",\n%s", e->ind);
    else fputs(", ", e->f);
}

/* Before a row's value: its separator and key, and its object's opening; false: the row is not there. */
static bool echo_key(json_echo_state *e, const char *object, bool when, int line, const char *key)
{
    if (!same_object(object, e->object)) { /* the object's first row: the object is there when this row is */
        echo_close(e);
        e->object = object;
        if (object && when) {
            echo_sep(e, line);
            fprintf(e->f, "\"%s\": {", object);
            e->in_object = e->lead = true;
        }
    }
    if (!when || (object && !e->in_object)) return false;
    echo_sep(e, object ? SAME_LINE : line); /* inside an object: one line */
    fprintf(e->f, "\"%s\": ", key);
    return true;
}

static void echo_int(FILE *f, int64_t v) { fprintf(f, "%" PRId64, v); }
static void echo_real(FILE *f, double v) { fprintf(f, "%.6g", v); }
static void echo_bool(FILE *f, bool v) { fputs(v ? "true" : "false", f); }

void json_echo(FILE *f, const vc_json_echo *ctx, vc_json_place place, const char *ind, bool lead)
{
    const vc_options *o = ctx->o;
    const vc_report *rep = ctx->rep;
    const vc_serve_options *so = ctx->so;
    const vc_serve_result *sr = ctx->sr;
    char buf[64];
    json_echo_state e = {f, ind, lead, NULL, false};
#define JSON_INT(v) echo_int(f, (int64_t)(v))
#define JSON_REAL(v) echo_real(f, (double)(v))
#define JSON_BOOL(v) echo_bool(f, (v) != 0)
#define JSON_STR(s) json_str(f, (s))
#define VC_OPTION_JSON(id, pl, object, key, when, value, line) \
    if ((void)VC_OPT_##id, pl == place && echo_key(&e, object, (when) != 0, line, key)) value;
#include "options.def"
#undef VC_OPTION_JSON
#undef JSON_INT
#undef JSON_REAL
#undef JSON_BOOL
#undef JSON_STR
    echo_close(&e);
    (void)o, (void)rep, (void)so, (void)sr, (void)buf; /* what no row reads */
}

static void echo(FILE *f, const vc_report *rep, vc_json_place place, const char *ind, bool lead)
{
    vc_json_echo ctx = {rep->opts, rep, NULL, NULL};
    json_echo(f, &ctx, place, ind, lead);
}

/* "would_fit": [{"options": {"grad_ckpt": true}, "total": N, "peak_allocated": N}, ...] */
static void json_hints(FILE *f, const vc_report *rep, const char *ind)
{
    if (!rep->hints_tried) return;
    fprintf(f, ",\n%s\"would_fit\": [", ind);
    for (size_t i = 0; i < rep->nhints; i++) {
        const vc_hint *h = &rep->hints[i];
        fprintf(f, "%s\n%s  {\"options\": {", i ? "," : "", ind);
        for (int k = 0; k < h->n; k++) {
            const vc_option_info *o = vc_option_find(h->name[k]);
            bool quoted = o && (o->type == VC_OPTION_CHOICE || o->type == VC_OPTION_STRING);
            fprintf(f, "%s\"%s\": %s%s%s", k ? ", " : "", h->name[k], quoted ? "\"" : "", h->value[k], quoted ? "\"" : "");
        }
        fprintf(f, "}, \"total\": %" PRId64 ", \"peak_allocated\": %" PRId64 ", \"what\": ", h->total, h->peak_allocated);
        json_str(f, h->what);
        fputc('}', f);
    }
    fprintf(f, "%s%s]", rep->nhints ? "\n" : "", rep->nhints ? ind : "");
}

/* "context_parts" after "cuda_context" (src/engine/context.c's parts), but where
 * --context gave the bytes or the GPU's context is not modelled; then "total". */
static void json_context_total(FILE *f, const vc_options *o, const vc_memory *m)
{
    const vc_context_parts *p = &m->context_parts;
    if (report_context_modelled(o, m))
        fprintf(f, ", \"context_parts\": {\"runtime\": %" PRId64 ", \"local_memory\": %" PRId64 ", \"eager\": %" PRId64
                   ", \"cublas\": %" PRId64 ", \"kernels\": %" PRId64 ", \"backward_local_memory\": %" PRId64
                   ", \"backward_kernels\": %" PRId64 ", \"measured\": %s}",
                p->runtime, p->local_memory, p->eager, p->cublas, p->kernels, p->backward_local_memory, p->backward_kernels,
                p->measured ? "true" : "false");
    fprintf(f, ", \"total\": %" PRId64, m->total);
}

/* src/engine/cudnn.c: the convolution workspaces' interval, where the step runs a convolution */
static void json_cudnn(FILE *f, const vc_options *o, const vc_memory *m)
{
    if (m->cudnn.source == VC_CUDNN_NONE) return;
    fprintf(f, ", \"cudnn\": {\"source\": \"%s\", \"bound\": \"%s\", \"peak_allocated_low\": %" PRId64
                   ", \"reserved_low\": %" PRId64 ", \"total_low\": %" PRId64 ", \"peak_allocated_high\": %" PRId64
                   ", \"reserved_high\": %" PRId64 ", \"total_high\": %" PRId64 "}",
                m->cudnn.source == VC_CUDNN_TABLE ? "table" : "bound", o->bound == VC_BOUND_HIGH ? "high" : "low",
                m->cudnn.peak_allocated_low, m->cudnn.reserved_low, m->cudnn.total_low, m->cudnn.peak_allocated_high,
                m->cudnn.reserved_high, m->cudnn.total_high);
}

static void json_compile(FILE *f, const vc_memory *m)
{
    if (!m->compile.on) return;
    fprintf(f, ", \"compile\": {\"eager_activations\": %" PRId64 ", \"eager_peak_allocated\": %" PRId64
               ", \"eager_reserved\": %" PRId64 ", \"eager_total\": %" PRId64 ", \"saved_eager\": %" PRId64
               ", \"saved_compiled\": %" PRId64 ", \"reorder_for_peak_memory\": %s, \"modelled\": ",
            m->compile.eager_activations, m->compile.eager_peak_allocated, m->compile.eager_reserved,
            m->compile.eager_total, m->compile.saved_eager, m->compile.saved_compiled,
            m->compile.reorder ? "true" : "false");
    json_str(f, compile_modelled);
    fputs(", \"not_modelled\": ", f);
    json_str(f, compile_not);
    fputc('}', f);
}

/* --first-step: the run's first steps (src/engine/estimate.c vc__first_step); the figures beside it are the steady step's */
static void json_first_step(FILE *f, const vc_memory *m)
{
    if (!m->first_step.computed) return;
    fprintf(f, ", \"first_step\": {\"peak_allocated\": %" PRId64 ", \"reserved\": %" PRId64 ", \"total\": %" PRId64 "}",
            m->first_step.peak_allocated, m->first_step.reserved, m->first_step.total);
}

static void json_memory(FILE *f, const vc_options *o, const vc_memory *m)
{
    fprintf(f, "{\"weights\": %" PRId64 ", \"gradients\": %" PRId64 ", \"optimizer_states\": %" PRId64
               ", \"activations\": %" PRId64 ", \"workspace\": %" PRId64 ", \"peak_allocated\": %" PRId64
               ", \"reserved\": %" PRId64 ", \"cuda_context\": %" PRId64,
            m->weights, m->gradients, m->optimizer_states, m->activations, m->workspace, m->peak_allocated,
            m->reserved, m->cuda_context);
    json_context_total(f, o, m);
    if (m->optimizer_states_paged) fprintf(f, ", \"optimizer_states_paged\": %" PRId64, m->optimizer_states_paged);
    json_cudnn(f, o, m);
    json_compile(f, m);
    json_first_step(f, m);
    fputc('}', f);
}

static void json_peak(FILE *f, const vc_peak *p)
{
    fprintf(f, "{\"phase\": \"%s\", \"layer\": ", vc_phase_name(p->phase));
    json_str(f, p->layer);
    fprintf(f, ", \"kind\": ");
    json_str(f, p->kind);
    fprintf(f, ", \"weights\": %" PRId64 ", \"gradients\": %" PRId64 ", \"optimizer_states\": %" PRId64
               ", \"activations\": %" PRId64 ", \"temporaries\": %" PRId64 ", \"workspace\": %" PRId64 "}",
            p->weights, p->gradients, p->optimizer_states, p->activations, p->temporaries, p->workspace);
}

/* --pp: "pipeline" and the "ranks" list (one object per kind of rank). */
static void json_ranks(FILE *f, const vc_report *rep, const vc_result *r, const char *ind)
{
    if (!r->nranks) return;
    const vc_options *o = rep->opts;
    echo(f, rep, VC_JSON_PIPELINE, ind, false);
    fprintf(f, ",\n%s\"ranks\": [", ind);
    for (size_t i = 0; i < r->nranks; i++) {
        const vc_rank_info *k = &r->ranks[i];
        fprintf(f, "%s\n%s  {\"kind\": \"%s\", \"stages\": [%" PRId64 ", %" PRId64 "], \"ranks\": [%" PRId64 ", %" PRId64
                   "], \"stage\": %" PRId64 ", \"layers\": %" PRId64 ", \"in_flight\": %" PRId64 ", \"parameters\": %" PRId64
                   ",\n%s   \"memory\": ",
                i ? "," : "", ind, k->kind, k->stage_first, k->stage_last, k->rank_first, k->rank_last, k->stage, k->layers,
                k->in_flight, k->parameters, ind);
        json_memory(f, o, &k->memory);
        fprintf(f, ",\n%s   \"peak\": ", ind);
        json_peak(f, &k->peak);
        fputc('}', f);
    }
    fprintf(f, "\n%s]", ind);
}

static void json_body(FILE *f, const vc_report *rep, const char *ind)
{
    const vc_options *o = rep->opts;
    const vc_result *r = rep->r;
    const vc_memory *m = &r->memory;
    fprintf(f, "%s\"schema_version\": 1,\n%s\"model\": ", ind, ind);
    json_str(f, rep->model);
    echo(f, rep, VC_JSON_STEP, ind, false);
    if (rep->recipe) { /* --recipe: its name, source, the options it set (the rest the user gave) */
        fprintf(f, ",\n%s\"recipe\": {\"name\": ", ind);
        json_str(f, rep->recipe->name);
        fprintf(f, ", \"source\": ");
        json_str(f, rep->recipe->source);
        if (vc__recipe_follows_trl(rep->recipe)) /* the TRL release its values are (--trl) */
            fprintf(f, ", \"trl\": \"%d.%d\"", (rep->trl ? rep->trl : VC_TRL_DEFAULT) / 100,
                    (rep->trl ? rep->trl : VC_TRL_DEFAULT) % 100);
        fprintf(f, ", \"set\": {");
        bool first = true;
        for (size_t k = 0; k < vc__recipe_npairs(rep->recipe); k++) {
            if (!rep->recipe_set[k]) continue;
            fprintf(f, "%s", first ? "" : ", ");
            json_str(f, rep->recipe->set[k].option);
            fprintf(f, ": ");
            json_str(f, vc__recipe_value(&rep->recipe->set[k], rep->trl, NULL));
            first = false;
        }
        fprintf(f, "}, \"not_applied\": ");
        json_str(f, rep->recipe->not_applied);
        fprintf(f, "}");
    }
    echo(f, rep, VC_JSON_STACK, ind, false);
    fprintf(f, ", \"attention_kernel\": ");
    json_str(f, r->attention);
    echo(f, rep, VC_JSON_LAYOUT, ind, false);
    fprintf(f, ",\n");
    fprintf(f, "%s\"parameters\": %" PRId64 ", \"trainable_parameters\": %" PRId64 ",\n", ind, r->parameters, r->trainable_parameters);
    fprintf(f, "%s\"memory\": {\"weights\": %" PRId64 ", \"gradients\": %" PRId64 ", \"optimizer_states\": %" PRId64
               ", \"activations\": %" PRId64 ", \"workspace\": %" PRId64 ", \"peak_allocated\": %" PRId64
               ", \"reserved\": %" PRId64 ", \"cuda_context\": %" PRId64,
            ind, m->weights, m->gradients, m->optimizer_states, m->activations, m->workspace, m->peak_allocated,
            m->reserved, m->cuda_context);
    json_context_total(f, o, m);
    if (m->optimizer_states_paged) fprintf(f, ", \"optimizer_states_paged\": %" PRId64, m->optimizer_states_paged);
    json_cudnn(f, o, m);
    json_compile(f, m);
    json_first_step(f, m);
    vc_nccl_info n; /* src/engine/nccl.c: one GPU's NCCL buffers in a multi-GPU layout */
    vc_nccl_per_gpu_of(o, m->nccl, &n);
    if (n.communicators)
        fprintf(f, ", \"nccl\": {\"topology\": \"%s\", \"communicators\": %" PRId64 ", \"ring_communicators\": %" PRId64
                   ", \"p2p_peers\": %" PRId64 ", \"channels\": %" PRId64 ", \"p2p_channels\": %" PRId64
                   ", \"p2p_channels_per_peer\": %" PRId64 ", \"nvls_channels\": %" PRId64 ", \"ring_bytes\": %" PRId64
                   ", \"p2p_bytes\": %" PRId64 ", \"nvls_bytes\": %" PRId64 ", \"bytes\": %" PRId64 ", \"in_total\": true",
                vc_nccl_topology_name(n.topology), n.communicators, n.ring_communicators, n.p2p_peers, n.channels,
                n.p2p_channels, n.p2p_channels_per_peer, n.nvls_channels, n.ring_bytes, n.p2p_bytes, n.nvls_bytes, n.bytes);
    if (n.nvls_credit_bytes) fprintf(f, ", \"nvls_credit_bytes\": %" PRId64, n.nvls_credit_bytes); /* of nvls_bytes */
    if (n.communicators && n.nodes > 1) /* across nodes (--gpus-per-node): the network transport's part, the trees */
        fprintf(f, ", \"nodes\": %" PRId64 ", \"net_bytes\": %" PRId64 ", \"tree_communicators\": %" PRId64
                   ", \"tree_bytes\": %" PRId64 ", \"nvls_tree_bytes\": %" PRId64,
                n.nodes, n.net_bytes, n.tree_communicators, n.tree_bytes, n.nvls_tree_bytes);
    if (n.pat_communicators) /* PAT: all-gather / reduce-scatter one GPU a node (src/engine/nccl.c pat_group) */
        fprintf(f, ", \"pat_communicators\": %" PRId64 ", \"pat_bytes\": %" PRId64, n.pat_communicators, n.pat_bytes);
    if (n.communicators) fputc('}', f);
    fputs("},\n", f);
    fprintf(f, "%s\"peak\": {\"phase\": \"%s\", \"layer\": ", ind, vc_phase_name(r->peak.phase));
    json_str(f, r->peak.layer);
    fprintf(f, ", \"kind\": ");
    json_str(f, r->peak.kind);
    fprintf(f, ", \"weights\": %" PRId64 ", \"gradients\": %" PRId64 ", \"optimizer_states\": %" PRId64
               ", \"activations\": %" PRId64 ", \"temporaries\": %" PRId64 ", \"workspace\": %" PRId64 "}",
            r->peak.weights, r->peak.gradients, r->peak.optimizer_states, r->peak.activations, r->peak.temporaries,
            r->peak.workspace);
    json_ranks(f, rep, r, ind);
    if (o->mode == VC_MODE_GENERATE) {
        fprintf(f, ",\n%s\"generate\": {", ind);
        echo(f, rep, VC_JSON_GENERATE, ind, true);
        fprintf(f, ", \"prefill_peak\": %" PRId64 ", \"decode_peak\": %" PRId64 ", \"decode_step\": %" PRId64 ", \"kv_cache\": %" PRId64
                   ", \"kv_tokens\": %" PRId64,
                r->generate.prefill_peak, r->generate.decode_peak, r->generate.decode_step, r->generate.kv_cache,
                r->generate.kv_tokens);
        if (r->generate.kv_mla) /* MLA layers: transformers caches their full per-head K/V (layers/mla.c) */
            fprintf(f, ", \"kv_cache_kind\": \"mla_full_kv\", \"mla_layers\": %" PRId64, r->generate.kv_mla);
        if (r->generate.ssm_mamba) /* Mamba2 layers: granitemoehybrid's hybrid cache, mamba2's Mamba2Cache (no attention) */
            fprintf(f, ", \"cache_class\": \"%s\", \"mamba_state\": %" PRId64 ", \"mamba_layers\": %" PRId64,
                    r->generate.kv_tokens ? "HybridMambaAttentionDynamicCache" : "Mamba2Cache", r->generate.ssm_state,
                    r->generate.ssm_mamba);
        else if (r->generate.ssm_conv) /* lfm2's short convolutions */
            fprintf(f, ", \"cache_class\": \"Lfm2HybridConvCache\", \"conv_state\": %" PRId64 ", \"conv_layers\": %" PRId64,
                    r->generate.ssm_state, r->generate.ssm_conv);
        else if (r->generate.ssm_layers) /* Gated DeltaNet layers (a model without them prints as before) */
            fprintf(f, ", \"cache_class\": \"Qwen3NextDynamicCache\", \"deltanet_state\": %" PRId64 ", \"deltanet_layers\": %" PRId64,
                    r->generate.ssm_state, r->generate.ssm_layers);
        if (r->generate.cross_cache) /* an encoder-decoder: EncoderDecoderCache's cross-attention part of kv_cache */
            fprintf(f, ", \"cache_class\": \"%s\", \"cross_cache\": %" PRId64 ", \"cross_tokens\": %" PRId64,
                    r->generate.cross_images ? "DynamicCache" : "EncoderDecoderCache", r->generate.cross_cache,
                    r->generate.cross_tokens);
        fprintf(f, "}");
    }
    if (r->grpo.on) /* --loss grpo: the step's phases (src/engine/grpo.c) */
        fprintf(f, ",\n%s\"grpo\": {\"beta\": %.6g, \"num_generations\": %" PRId64 ", \"prompt\": %" PRId64
                   ", \"max_completion_length\": %" PRId64 ", \"generation_batch\": %" PRId64 ", \"generate_peak\": %" PRId64
                   ", \"generate_reserved\": %" PRId64 ", \"kv_cache\": %" PRId64 ", \"train_peak\": %" PRId64
                   ", \"train_reserved\": %" PRId64 "%s",
                ind, o->grpo_beta, o->num_generations, o->prompt, o->new_tokens, r->grpo.generation_batch,
                r->grpo.generate_peak, r->grpo.generate_reserved, r->grpo.kv_cache, r->grpo.train_peak, r->grpo.train_reserved,
                "");
    if (r->grpo.on && (o->parallel == VC_PARALLEL_DDP || o->parallel == VC_PARALLEL_ZERO2 || o->parallel == VC_PARALLEL_ZERO3 ||
                       o->parallel == VC_PARALLEL_FSDP || o->parallel == VC_PARALLEL_FSDP2))
        /* a layout's phases outside the step (src/engine/grpo.c vc__grpo_phases) */
        fprintf(f, ", \"layout\": {\"parallel\": \"%s\", \"gathered\": %" PRId64 ", \"resident_grads\": %" PRId64 "}",
                vc_parallel_name(o->parallel), r->grpo.gathered, r->grpo.resident_grads);
    if (r->grpo.on && o->grpo_vllm) /* --use-vllm: the colocated engine (src/api/request.c vllm_beside) */
        fprintf(f, ", \"vllm\": {\"requested\": %" PRId64 ", \"weights\": %" PRId64 ", \"kv_cache\": %" PRId64
                   ", \"beside\": %" PRId64 ", \"graphs\": %" PRId64 ", \"graph_memory\": %" PRId64 ", \"resident\": %" PRId64
                   ", \"sync_temp\": %" PRId64 ", \"sync_peak\": %" PRId64 ", \"generate_peak\": %" PRId64 "%s",
                r->grpo.vllm_requested, r->grpo.vllm_weights, r->grpo.vllm_kv_cache, r->grpo.vllm_beside, r->grpo.vllm_graphs,
                r->grpo.vllm_graph_memory, r->grpo.resident, r->grpo.sync_temp, r->grpo.sync_peak, r->grpo.vllm_peak,
                r->grpo.vllm_tp > 1 ? "" : "}");
    if (r->grpo.on && o->grpo_vllm && r->grpo.vllm_tp > 1) /* --vllm-tensor-parallel-size: its group */
        fprintf(f, ", \"tensor_parallel_size\": %" PRId64 ", \"comm\": %" PRId64 ", \"comm_allocated\": %" PRId64 "}",
                r->grpo.vllm_tp, r->grpo.vllm_comm, r->grpo.vllm_comm_allocated);
    if (r->grpo.on) fprintf(f, "}");
    if (rep->gpu) {
        fprintf(f, ",\n%s\"gpu\": {\"name\": ", ind);
        json_str(f, rep->gpu->name);
        fprintf(f, ", \"capacity\": %" PRId64 ", \"free\": %" PRId64 ", \"fits\": %s}", rep->gpu->capacity,
                rep->gpu->capacity - m->total, report_fits(rep) ? "true" : "false");
    }
    json_hints(f, rep, ind);
    if (rep->max_batch >= 0)
        fprintf(f, ",\n%s\"max_batch\": %" PRId64 ", \"max_batch_limited\": %s", ind, rep->max_batch,
                rep->max_batch >= VC_MAX_BATCH_LIMIT ? "true" : "false");
    if (rep->max_prompt >= 0)
        fprintf(f, ",\n%s\"max_context\": {\"prompt\": %" PRId64 ", \"new_tokens\": %" PRId64 ", \"limited\": %s}", ind,
                rep->max_prompt, o->new_tokens, rep->max_prompt_limited ? "true" : "false");
    if (rep->max_seq >= 0)
        fprintf(f, ",\n%s\"max_seq\": %" PRId64 ", \"max_seq_limited\": %s", ind, rep->max_seq,
                rep->max_seq_limited ? "true" : "false");
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
    if (rep->max_batch >= 0)
        fprintf(f, ",\n  \"max_batch\": %" PRId64 ", \"max_batch_limited\": %s", rep->max_batch,
                rep->max_batch >= VC_MAX_BATCH_LIMIT ? "true" : "false");
    fputs("\n}\n", f);
}

enum { SWEEP_BAR_W = 24, SWEEP_WIDE = 125 };

/* With --gpu a sweep row is 125 columns wide; in fewer the weights (the same
 * for every batch) go to the header, reserved goes, and the bar shrinks (to 9
 * cells in 80 columns). */
static bool sweep_narrow(const vc_report *rep) { return rep->gpu && term_width(&rep->term) < SWEEP_WIDE; }

static int sweep_bar_cells(const vc_report *rep)
{
    int w = term_width(&rep->term) - 68 - 3; /* '[', ']', and the capacity mark draw_bar may add */
    return w > SWEEP_BAR_W ? SWEEP_BAR_W : w < 8 ? 8 : w;
}

void report_sweep_table_begin(FILE *f, const vc_report *rep)
{
    title_line(f, rep);
    options_line(f, rep, false);
    recipe_lines(f, rep);
    fprintf(f, "parameters %" PRId64 " (trainable %" PRId64 ")", rep->r->parameters, rep->r->trainable_parameters);
    if (sweep_narrow(rep)) {
        char w[32];
        format_bytes(rep->r->memory.weights, w, sizeof w);
        fprintf(f, ", weights %s", w);
    }
    fputc('\n', f);
    if (rep->gpu) {
        char c[32];
        format_bytes(rep->gpu->capacity, c, sizeof c);
        fprintf(f, "gpu %s: capacity %s (%" PRId64 " bytes)\n", rep->gpu->name, c, rep->gpu->capacity);
    }
    if (sweep_narrow(rep)) {
        fprintf(f, "\n  %13s %11s %10s %10s %11s %4s  %s\n", "batch", "activations", "peak alloc", "total", "free", "fits",
                "of capacity");
        return;
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
    bool narrow = sweep_narrow(rep);
    if (narrow) fprintf(f, "  %13" PRId64 " %11s %10s %10s", rep->opts->batch, a, p, t); /* up to 2^40 */
    else fprintf(f, "  %10" PRId64 " %12s %12s %12s %12s %12s", rep->opts->batch, w, a, p, rs, t);
    if (rep->gpu) {
        int64_t free_b = rep->gpu->capacity - m->total;
        char fb[32];
        format_bytes(free_b < 0 ? -free_b : free_b, fb, sizeof fb);
        const char *no = rep->term.color ? (narrow ? "\033[1;31m  no\033[0m" : "\033[1;31m   no\033[0m")
                                         : (narrow ? "  NO" : "   NO");
        if (free_b < 0) {
            char neg[34];
            snprintf(neg, sizeof neg, "-%s", fb);
            fprintf(f, narrow ? " %11s %s  " : " %12s %s  ", neg, no);
        } else {
            fprintf(f, narrow ? " %11s %4s  " : " %12s %5s  ", fb, "yes");
        }
        int64_t seg[SEG_N];
        segments(rep->r, seg);
        int64_t scale = m->total > rep->gpu->capacity ? m->total : rep->gpu->capacity;
        draw_bar(f, &rep->term, seg, m->total, scale, rep->gpu->capacity, narrow ? sweep_bar_cells(rep) : SWEEP_BAR_W);
    }
    fputc('\n', f);
}

void report_sweep_table_end(FILE *f, const vc_report *rep)
{
    if (rep->gpu) {
        fputs("\n  bar: ", f);
        vc_nccl_info n; /* the nccl segment, on the last line, where the layout has one */
        vc_nccl_per_gpu(rep->opts, &n);
        for (int i = 0; i < SEG_N; i++) {
            int cur = 0;
            if (i == SEG_N - 1 && !n.communicators) continue;
            if (i == SEG_N - 1) fputs("\n       ", f);
            put_cell(f, &rep->term, i, &cur);
            if (rep->term.color) fputs("\033[0m", f);
            fprintf(f, " %s  ", seg_name[i]);
            if (i == 3) fputs("\n       ", f);
        }
        fprintf(f, "%s%s capacity\n", n.communicators ? "" : "\n       ", rep->term.utf8 ? "\u2502 or ]" : "| or ]");
    }
    if (rep->max_batch >= 0 && rep->gpu) {
        fputc('\n', f);
        max_batch_line(f, rep, false);
    }
}
