/*
 * svg.c — `--plot FILE.svg` with `--sweep`: the memory components against
 * batch size, with the GPU's capacity and the largest batch that fits.
 *
 * A standalone SVG 1.1 document (no scripts, no external resources) with a
 * fixed 900x600 viewBox: lines for weights, gradients, optimizer states,
 * activations, peak allocated and total; the capacity as a horizontal line;
 * the max batch as a vertical line; batches that do not fit as hollow
 * markers on the total line. The batch axis is logarithmic (base 2) for a
 * geometric sweep spanning a factor of 32 or more, linear otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

enum { W = 900, H = 600, ML = 88, MR = 200, MT = 64, MB = 64 };

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            /* XML 1.0 forbids most control characters */
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n') fputc(*s, f);
        }
    }
}

typedef struct {
    double lo, hi;   /* data range */
    bool log2;
} axis;

static double xpos(const axis *a, double v)
{
    double t = a->log2 ? (log2(v) - log2(a->lo)) / (log2(a->hi) - log2(a->lo)) : (v - a->lo) / (a->hi - a->lo);
    return ML + t * (W - ML - MR);
}

static double ypos(double ymax, double v) { return H - MB - v / ymax * (H - MT - MB); }

/* A "nice" step (1, 2 or 5 times a power of ten) giving about n ticks over span. */
static double nice_step(double span, int n)
{
    double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void fmt_batch(char *b, size_t n, double v)
{
    if (v >= 4194304 && fmod(v, 1048576) == 0) snprintf(b, n, "%.0fMi", v / 1048576);
    else snprintf(b, n, "%.0f", v);
}

static const struct {
    const char *name, *color, *dash;
    double width;
} series[] = {
    {"weights", "#1f77b4", "", 2},
    {"gradients", "#9467bd", "", 2},
    {"optimizer states", "#ff7f0e", "", 2},
    {"activations", "#2ca02c", "", 2},
    {"peak allocated", "#444444", "6 4", 2},
    {"total (nvidia-smi)", "#d62728", "", 3},
};
enum { NSER = sizeof series / sizeof *series };

static int64_t value(const vc_plot_point *p, int s)
{
    switch (s) {
    case 0: return p->weights;
    case 1: return p->gradients;
    case 2: return p->optimizer_states;
    case 3: return p->activations;
    case 4: return p->peak_allocated;
    default: return p->total;
    }
}

/* The x axis: linear, or log2 for geometric sweeps (1:4096:x2: most steps
 * multiply by 1.5 or more); one point gets a small window around it. */
static axis x_axis(const vc_plot *p)
{
    axis ax = {(double)p->pts[0].batch, (double)p->pts[p->n - 1].batch, false};
    size_t geo = 0;
    for (size_t i = 1; i < p->n; i++)
        if ((double)p->pts[i].batch >= 1.5 * (double)p->pts[i - 1].batch) geo++;
    ax.log2 = ax.lo >= 1 && ax.hi / ax.lo >= 32 && 2 * geo >= p->n - 1;
    if (ax.hi <= ax.lo) {
        ax.lo = ax.lo > 1 ? ax.lo - 1 : ax.lo;
        ax.hi = ax.lo + 2;
        ax.log2 = false;
    }
    return ax;
}

/* The y axis: its top, tick step and unit. */
typedef struct {
    double max, step, unit;
    const char *uname;
} y_axis;

static y_axis make_y_axis(const vc_plot *p)
{
    y_axis y;
    double ymax = 0;
    for (size_t i = 0; i < p->n; i++)
        if ((double)p->pts[i].total > ymax) ymax = (double)p->pts[i].total;
    if (p->gpu_name && (double)p->capacity > ymax) ymax = (double)p->capacity;
    if (ymax <= 0) ymax = 1;
    y.unit = ymax >= 2.0 * 1073741824 ? 1073741824.0 : ymax >= 2.0 * 1048576 ? 1048576.0 : 1024.0;
    y.uname = y.unit == 1073741824.0 ? "GiB" : y.unit == 1048576.0 ? "MiB" : "KiB";
    y.step = nice_step(ymax / y.unit * 1.05, 6) * y.unit;
    y.max = ceil(ymax * 1.05 / y.step) * y.step;
    return y;
}

static void header(FILE *f, const vc_plot *p)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">\n",
            W, H, W, H);
    fprintf(f, "<title>");
    esc(f, p->title);
    fprintf(f, ": GPU memory against batch size (vramcalc %s)</title>\n", VC_VERSION);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
    /* a long title is squeezed into the chart's width (textLength) rather than cut at the edge:
     * 17 px bold DejaVu Sans is about 10.5 px a character */
    const char *tail = ": memory against batch size";
    size_t chars = strlen(tail);
    for (const char *c = p->title; *c; c++) chars += ((unsigned char)*c & 0xC0) != 0x80;
    fprintf(f, "<text x=\"%d\" y=\"26\" font-size=\"17\" font-weight=\"bold\"", ML);
    if ((double)chars * 10.5 > W - ML - 12) fprintf(f, " textLength=\"%d\" lengthAdjust=\"spacingAndGlyphs\"", W - ML - 12);
    fputc('>', f);
    esc(f, p->title);
    fprintf(f, "%s</text>\n<text x=\"%d\" y=\"46\" fill=\"#555555\">", tail, ML);
    esc(f, p->subtitle);
    fprintf(f, "</text>\n");
}

/* grid and y ticks, x ticks, the frame */
static void axes(FILE *f, const axis *ax, const y_axis *y)
{
    const double ymax = y->max, ystep = y->step;
    fprintf(f, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (double v = 0; v <= ymax * 1.0001; v += ystep)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", ML, ypos(ymax, v), W - MR, ypos(ymax, v));
    fprintf(f, "</g>\n<g text-anchor=\"end\" fill=\"#333333\">\n");
    for (double v = 0; v <= ymax * 1.0001; v += ystep)
        fprintf(f, "<text x=\"%d\" y=\"%.1f\">%g</text>\n", ML - 8, ypos(ymax, v) + 4, v / y->unit);
    fprintf(f, "</g>\n<text x=\"20\" y=\"%d\" transform=\"rotate(-90 20 %d)\" text-anchor=\"middle\">memory (%s)</text>\n",
            (H - MB + MT) / 2, (H - MB + MT) / 2, y->uname);
    fprintf(f, "<g text-anchor=\"middle\" fill=\"#333333\">\n");
    char tb[32];
    if (ax->log2) {
        for (double v = exp2(ceil(log2(ax->lo))); v <= ax->hi * 1.0001; v *= 2) {
            int skip = (int)ceil((log2(ax->hi) - log2(ax->lo)) / 12); /* at most ~12 labels */
            if (skip > 1 && (int)llround(log2(v)) % skip) continue;
            fmt_batch(tb, sizeof tb, v);
            double x = xpos(ax, v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999999\"/>", x, H - MB, x, H - MB + 5);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s</text>\n", x, H - MB + 20, tb);
        }
    } else {
        double st = nice_step(ax->hi - ax->lo, 8);
        if (st < 1) st = 1;
        for (double v = ceil(ax->lo / st) * st; v <= ax->hi * 1.0001; v += st) {
            fmt_batch(tb, sizeof tb, v);
            double x = xpos(ax, v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999999\"/>", x, H - MB, x, H - MB + 5);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s</text>\n", x, H - MB + 20, tb);
        }
    }
    fprintf(f, "</g>\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">batch size%s</text>\n", (ML + W - MR) / 2, H - 18,
            ax->log2 ? " (log scale)" : "");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888888\"/>\n", ML, MT,
            W - ML - MR, H - MT - MB);
}

/* the capacity and max-batch lines */
static void marks(FILE *f, const vc_plot *p, const axis *ax, double ymax)
{
    if (p->gpu_name) {
        double y = ypos(ymax, (double)p->capacity);
        char cb[32];
        format_bytes(p->capacity, cb, sizeof cb);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000000\" stroke-width=\"1.5\" "
                   "stroke-dasharray=\"2 3\"/>\n", ML, y, W - MR, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\">capacity: ", ML + 6, y - 6);
        esc(f, p->gpu_name);
        fprintf(f, " (%s)</text>\n", cb);
    }
    if (p->max_batch > 0 && (double)p->max_batch >= ax->lo && (double)p->max_batch <= ax->hi) {
        double x = xpos(ax, (double)p->max_batch);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#2b8a3e\" stroke-width=\"1.5\" "
                   "stroke-dasharray=\"5 3\"/>\n", x, MT, x, H - MB);
        bool left = x > (ML + W - MR) / 2.0;
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" fill=\"#2b8a3e\" font-weight=\"bold\" "
                   "font-size=\"12\">max batch %" PRId64 "</text>\n", left ? x - 5 : x + 5, MT + 16,
                left ? "end" : "start", p->max_batch);
    }
}

/* the series, the total's markers (filled where it fits, hollow where it does not) */
static void lines(FILE *f, const vc_plot *p, const axis *ax, double ymax)
{
    for (int s = 0; s < NSER; s++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%g\" stroke-linejoin=\"round\"%s%s%s points=\"",
                series[s].color, series[s].width, series[s].dash[0] ? " stroke-dasharray=\"" : "", series[s].dash,
                series[s].dash[0] ? "\"" : "");
        for (size_t i = 0; i < p->n; i++)
            fprintf(f, "%s%.1f,%.1f", i ? " " : "", xpos(ax, (double)p->pts[i].batch),
                    ypos(ymax, (double)value(&p->pts[i], s)));
        fprintf(f, "\"/>\n");
    }
    if (p->n <= 400) {
        fprintf(f, "<g stroke=\"%s\" stroke-width=\"1.5\">\n", series[NSER - 1].color);
        for (size_t i = 0; i < p->n; i++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", xpos(ax, (double)p->pts[i].batch),
                    ypos(ymax, (double)p->pts[i].total), p->pts[i].fits ? series[NSER - 1].color : "#ffffff");
        fprintf(f, "</g>\n");
    }
}

static void legend(FILE *f, const vc_plot *p)
{
    int lx = W - MR + 16, ly = MT + 8;
    for (int s = 0; s < NSER; s++, ly += 22) {
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%g\"%s%s%s/>", lx, ly,
                lx + 26, ly, series[s].color, series[s].width, series[s].dash[0] ? " stroke-dasharray=\"" : "",
                series[s].dash, series[s].dash[0] ? "\"" : "");
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", lx + 32, ly + 4, series[s].name);
    }
    if (!p->gpu_name) return;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\" stroke-width=\"1.5\" "
               "stroke-dasharray=\"2 3\"/><text x=\"%d\" y=\"%d\">GPU capacity</text>\n",
            lx, ly, lx + 26, ly, lx + 32, ly + 4);
    ly += 22;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#2b8a3e\" stroke-width=\"1.5\" "
               "stroke-dasharray=\"5 3\"/><text x=\"%d\" y=\"%d\">max batch</text>\n",
            lx, ly, lx + 26, ly, lx + 32, ly + 4);
    ly += 22;
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"3.5\" fill=\"#ffffff\" stroke=\"%s\" stroke-width=\"1.5\"/>"
               "<text x=\"%d\" y=\"%d\">does not fit</text>\n",
            lx + 13, ly, series[NSER - 1].color, lx + 32, ly + 4);
}

void svg_render(FILE *f, const vc_plot *p)
{
    axis ax = x_axis(p);
    y_axis y = make_y_axis(p);
    header(f, p);
    axes(f, &ax, &y);
    marks(f, p, &ax, y.max);
    lines(f, p, &ax, y.max);
    legend(f, p);
    fprintf(f, "</svg>\n");
}
