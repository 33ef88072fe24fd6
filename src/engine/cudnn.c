/*
 * cudnn.c — cuDNN's convolution workspaces (issue 27 item 2; docs/context.md
 * "cuDNN workspaces").
 *
 * What PyTorch does (aten/src/ATen/native/cudnn/Conv_v8.cpp at
 * pytorch/pytorch@06ca69ca4e9b0fd02bf42f134440d33076bd1464, the v8 API that
 * 2.x runs): run_single_conv, without torch.backends.cudnn.benchmark, takes
 * the engine configs of cuDNN's heuristics (get_configs_from_heuristics,
 * CUDNN_HEUR_MODE_INSTANT) and try_configs runs the first that builds and
 * executes, falling to the next only on a cuDNN error or an OutOfMemoryError;
 * run_conv_plan allocates plan.getWorkspaceSize() bytes from the caching
 * allocator (CUDACachingAllocator::get()->allocate: in max_memory_allocated
 * and in a segment of its own when no cached block fits) and frees them when
 * the call returns. Nothing caps the size but free memory. Three calls make
 * one convolution's step: forward (raw_cudnn_convolution_forward_out), and in
 * backward the data gradient (raw_cudnn_convolution_backward_input_out, when
 * the input needs one) and the filter gradient (..._backward_weight_out),
 * one after the other, each with its own workspace.
 *
 * Which engine the heuristics rank first, and its workspace, is cuDNN's and
 * the GPU's: not derivable from the source. vramcalc gives an interval:
 *  - low: no workspace (the figures as before);
 *  - high: each call's workspace at a bound, a multiple of the larger of the
 *    convolution's input and output (bytes): FWD_FACTOR for forward and
 *    BWD_FACTOR for the backward calls. FIT on the H200 run
 *    (bench/accuracy/logs/gpu_h200_torch211.raw.json, torch 2.11, cuDNN 9.19),
 *    its 47 cases with a convolution, with the smallest whole factors that
 *    put the most measured peaks inside [low, high]: 42 of 47 (forward 2 leaves
 *    the frozen backbone's and ResNet's inference peaks 9-37 KiB above high:
 *    their forward workspace is just over twice the output; backward 8 leaves
 *    4 more training peaks above high, ResNet b64 and EfficientNet's depthwise
 *    convolutions, 12 one more).
 *    The 5 outside: textcnn_b16_adamw_fp32, a Conv1d backward whose engine
 *    took 776 MiB (no shape bound covers it: --cudnn-table does); three whose
 *    peak is not at a convolution (high = low) and 0.2-0.5 MiB above it
 *    (vit_b8_infer_fp32, vgg_bn_b1_adam_fp32, textcnn_b4_momentum_fp32); one
 *    where low is already above the measured peak (vit_b1_adafactor_bf16).
 *    These are constants fitted on those cases, not a bound cuDNN guarantees.
 *  - --cudnn-table FILE: the workspaces measured on one GPU and cuDNN
 *    (bench/accuracy/cudnn_calibrate.py), exact there: both ends the same.
 * Each workspace is a transient of the call (layers/ops.c vc__op_conv), so
 * the allocator model (src/engine/alloc.c) sees its segment: a 1-10 MiB
 * request that fits no cached block opens a 20 MiB one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "layer.h"
#include "plan.h"
#include "util.h"

#define FWD_FACTOR 3 /* FIT on the H200 run's 47 convolution cases (docs/context.md) */
#define BWD_FACTOR 16 /* FIT, the same cases */
#define TABLE_MAX_BYTES (64 << 20)

typedef struct {
    char *layer;
    int64_t batch;
    int64_t ws[3]; /* forward, backward data, backward filter */
} table_row;

struct vc_cudnn_table {
    char *file;
    char *precision;
    table_row *row;
    size_t n;
};

void vc_cudnn_table_free(vc_cudnn_table *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) free(t->row[i].layer);
    free(t->row);
    free(t->file);
    free(t->precision);
    free(t);
}

static vc_status bad(vc_error *err, const char *file, const char *path, const char *msg)
{
    vc_set_error(err, VC_ERR_USAGE, path, "%s", msg);
    if (err) vc_escape_text(err->file, sizeof err->file, file);
    return VC_ERR_USAGE;
}

/* a whole number of bytes, 0 .. 2^50 (1 PiB: past any GPU) */
static bool bytes_of(const cJSON *v, int64_t max, int64_t *out)
{
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= (double)max) || d != (double)(int64_t)d) return false;
    *out = (int64_t)d;
    return true;
}

static const char *const dir_keys[3] = {"fwd", "bwd_data", "bwd_filter"};

vc_status vc_cudnn_table_load(const char *file, vc_cudnn_table **out, vc_error *err)
{
    vc_error_clear(err);
    *out = NULL;
    char *buf = NULL, path[96];
    size_t len = 0;
    vc_status st = vc_read_file(file, TABLE_MAX_BYTES, &buf, &len, err);
    if (st) {
        if (err) vc_escape_text(err->file, sizeof err->file, file);
        return st;
    }
    if (len > TABLE_MAX_BYTES) {
        free(buf);
        return bad(err, file, "", "larger than 64 MiB");
    }
    cJSON *root = cJSON_ParseWithLength(buf, len);
    free(buf);
    if (!root) return bad(err, file, "", "not valid JSON");
    vc_cudnn_table *t = calloc(1, sizeof *t);
    if (!t || !(t->file = strdup(file))) {
        cJSON_Delete(root);
        vc_cudnn_table_free(t);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *prec = cJSON_GetObjectItemCaseSensitive(root, "precision");
    const cJSON *convs = cJSON_GetObjectItemCaseSensitive(root, "convolutions");
    const char *msg = NULL, *at = "";
    if (!cJSON_IsObject(root)) msg = "expected an object (bench/accuracy/cudnn_calibrate.py's table)";
    else if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "vramcalc-cudnn-table-1") != 0)
        at = "format", msg = "expected \"vramcalc-cudnn-table-1\"";
    else if (!cJSON_IsString(prec) || vc_precision_from_name(prec->valuestring) < 0)
        at = "precision", msg = "expected a " O("precision") " name (fp32, bf16, amp-bf16, ...)";
    else if (!cJSON_IsArray(convs)) at = "convolutions", msg = "expected an array";
    if (msg) goto fail;
    static const char *const known[] = {"format", "precision", "convolutions", "gpu", "cudnn", "torch", "model", "command"};
    for (const cJSON *k = root->child; k; k = k->next) {
        size_t i = 0;
        while (i < sizeof known / sizeof *known && strcmp(k->string, known[i])) i++;
        if (i == sizeof known / sizeof *known) {
            snprintf(path, sizeof path, "%.80s", k->string);
            at = path, msg = "unknown key";
            goto fail;
        }
    }
    if (!(t->precision = strdup(prec->valuestring))) goto nomem;
    int n = cJSON_GetArraySize(convs);
    if (n > 0 && !(t->row = calloc((size_t)n, sizeof *t->row))) goto nomem;
    int i = 0;
    for (const cJSON *c = convs->child; c; c = c->next, i++) {
        table_row *r = &t->row[i];
        snprintf(path, sizeof path, "convolutions[%d]", i);
        at = path;
        if (!cJSON_IsObject(c)) {
            msg = "expected an object";
            goto fail;
        }
        int keys = 0;
        const cJSON *layer = cJSON_GetObjectItemCaseSensitive(c, "layer");
        const cJSON *batch = cJSON_GetObjectItemCaseSensitive(c, "batch");
        for (const cJSON *k = c->child; k; k = k->next) keys++;
        if (!cJSON_IsString(layer) || !layer->valuestring[0]) {
            snprintf(path, sizeof path, "convolutions[%d].layer", i);
            msg = "expected the layer's path (\"layers[3]\")";
            goto fail;
        }
        if (!bytes_of(batch, INT64_C(1) << 40, &r->batch) || r->batch < 1) {
            snprintf(path, sizeof path, "convolutions[%d].batch", i);
            msg = "expected a positive integer";
            goto fail;
        }
        for (int d = 0; d < 3; d++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, dir_keys[d]);
            if (!bytes_of(v, INT64_C(1) << 50, &r->ws[d])) {
                snprintf(path, sizeof path, "convolutions[%d].%s", i, dir_keys[d]);
                msg = "expected a whole number of bytes from 0 to 2^50";
                goto fail;
            }
        }
        if (keys != 5) {
            msg = "unknown key (a row has layer, batch, fwd, bwd_data, bwd_filter)";
            goto fail;
        }
        for (size_t j = 0; j < (size_t)i; j++)
            if (t->row[j].batch == r->batch && !strcmp(t->row[j].layer, layer->valuestring)) {
                msg = "the same layer and batch as an earlier row";
                goto fail;
            }
        if (!(r->layer = strdup(layer->valuestring))) goto nomem;
        t->n++;
    }
    cJSON_Delete(root);
    *out = t;
    return VC_OK;
nomem:
    cJSON_Delete(root);
    vc_cudnn_table_free(t);
    return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
fail:
    cJSON_Delete(root);
    vc_cudnn_table_free(t);
    return bad(err, file, at, msg);
}

const char *vc_cudnn_table_precision(const vc_cudnn_table *t) { return t->precision; }

void vc_conv_workspace(vc_build *b, vc_conv_ws *ws)
{
    const vc_options *o = &b->o;
    memset(ws, 0, sizeof *ws);
    const vc_cudnn_table *t = o->cudnn_table;
    if (t) {
        const vc_inst *in = b->cur_inst >= 0 ? &b->m->inst[b->cur_inst] : NULL;
        vc_batch_dependent(b); /* the table's bytes are this batch's */
        /* the row of this batch; at a batch the table lacks (the allocator model's grid
         * batches, simulate.c, which `reserved` interpolates between), the layer's rows
         * interpolated linearly in the batch, or scaled from the nearest one outside them */
        const table_row *lo = NULL, *hi = NULL;
        for (size_t i = 0; in && i < t->n; i++) {
            const table_row *r = &t->row[i];
            if (strcmp(r->layer, in->path)) continue;
            if (r->batch == b->batch) {
                ws->how = VC_CONV_WS_BYTES;
                memcpy(&ws->fwd, r->ws, sizeof r->ws);
                return;
            }
            if (r->batch < b->batch && (!lo || r->batch > lo->batch)) lo = r;
            if (r->batch > b->batch && (!hi || r->batch < hi->batch)) hi = r;
        }
        if (lo || hi) {
            ws->how = VC_CONV_WS_BYTES;
            for (int d = 0; d < 3; d++) {
                double v = lo && hi ? lo->ws[d] + (double)(hi->ws[d] - lo->ws[d]) * (double)(b->batch - lo->batch) /
                                                      (double)(hi->batch - lo->batch)
                         : lo ? (double)lo->ws[d] * (double)b->batch / (double)lo->batch
                              : (double)hi->ws[d] * (double)b->batch / (double)hi->batch;
                (&ws->fwd)[d] = v > 0x1p52 ? INT64_C(1) << 52 : (int64_t)v;
            }
            return;
        }
        if (!b->st) {
            b->st = VC_ERR_USAGE;
            b->why_opt = O("cudnn_table");
            char f[96];
            vc_escape_text(f, sizeof f, t->file);
            snprintf(b->why, sizeof b->why, "%s has no row for the convolution %s", f, in ? in->path : "(outside the model)");
        }
        return;
    }
    if (o->bound == VC_BOUND_HIGH) {
        ws->how = VC_CONV_WS_FACTORS;
        ws->fwd = FWD_FACTOR;
        ws->bwd_data = ws->bwd_filter = BWD_FACTOR;
    }
}

bool vc__plan_has_conv(const vc_plan *p)
{
    for (size_t k = 0; k < p->nop; k++)
        if (p->op[k].name && !strcmp(p->op[k].name, "convolution")) return true;
    return false;
}
