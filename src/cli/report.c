/*
 * report.c — table, JSON and CSV output.
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

void report_table(FILE *f, const vc_report *rep)
{
    const vc_options *o = rep->opts;
    const vc_result *r = rep->r;
    const vc_memory *m = &r->memory;
    char b[64];
    if (rep->file) fprintf(f, "%s%s%s%s\n", rep->model[0] ? rep->model : rep->file, rep->model[0] ? " (" : "",
                           rep->model[0] ? rep->file : "", rep->model[0] ? ")" : "");
    else fprintf(f, "counts-only estimate (seed 003 formula)\n");
    fprintf(f, "%s, batch %" PRId64 ", %s", vc_mode_name(o->mode), o->batch, vc_precision_name(o->precision));
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
    fprintf(f, "%s\"optimizer\": \"%s\", \"optimizer_impl\": \"%s\", \"accumulate\": %" PRId64 ", \"attention\": \"%s\",\n",
            ind, vc_optim_name(o->optim), vc_optim_impl_name(o->optim_impl), o->accumulate, vc_attention_name(o->attention));
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

void report_csv_header(FILE *f) { fprintf(f, "%s\n", csv_cols); }

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
    fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n", r->peak.weights,
            r->peak.gradients, r->peak.optimizer_states, r->peak.activations, r->peak.temporaries, r->peak.workspace);
}
