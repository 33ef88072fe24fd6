/*
 * hints.c — when an estimate does not fit --gpu: what would, cheapest
 * first. Each hint is the same request with a few options changed, run
 * through the request layer like any other (so every rule, default and
 * refusal applies to it: a knob the model or mode cannot take is a refused
 * request and is not listed), kept when its total fits the GPU.
 *
 * The knobs, one row each, in the order of what they cost the run (speed
 * first, then what is trained, then hardware):
 *   the loss in chunks         torchtune's CEWithChunkedOutputLoss: no cost
 *   8-bit optimizer states     bitsandbytes Adam8bit/AdamW8bit: a little precision
 *   activation checkpointing   one more forward of each decoder layer
 *   a smaller micro-batch      the same effective batch by accumulation: slower steps
 *   LoRA, then QLoRA           adapters only (QLoRA: a 4-bit base)
 *   more GPUs                  FSDP2 (fully_shard) over 2, 4, ... 64 GPUs: per GPU
 * For inference and generation: 8-bit and 4-bit weights, a smaller batch,
 * more GPUs by tensor parallelism (a config.json).
 * When no single knob fits, the knobs are taken together in that order,
 * and the first set that fits is the one hint.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

enum { H_TRAIN = 1, H_INFER = 2 }; /* the modes a row applies to (INFER: infer and generate) */
enum { H_SET, H_MICRO_BATCH, H_GPUS };

typedef struct {
    int kind;
    unsigned modes;
    const char *name[2], *value[2]; /* H_SET: the options by table name; NULL: none */
    const char *what;               /* the report's words */
} hint_row;

static const hint_row rows[] = {
    {H_SET, H_TRAIN, {"loss"}, {"chunked"}, "the loss in chunks (torchtune's CEWithChunkedOutputLoss)"},
    {H_SET, H_TRAIN, {"optim"}, {"8bit"}, "8-bit optimizer states (bitsandbytes)"},
    {H_SET, H_TRAIN, {"grad_ckpt"}, {"true"}, "activation checkpointing (each layer's forward again)"},
    {H_MICRO_BATCH, H_TRAIN | H_INFER, {NULL}, {NULL}, "a smaller batch (training: the same batch by accumulation)"},
    {H_SET, H_INFER, {"weights"}, {"int8"}, "8-bit weights (bitsandbytes LLM.int8)"},
    {H_SET, H_INFER, {"weights"}, {"nf4"}, "4-bit weights (bitsandbytes nf4)"},
    {H_SET, H_TRAIN, {"lora"}, {"16"}, "LoRA r=16: only adapters train"},
    {H_SET, H_TRAIN, {"qlora"}, {"true"}, "QLoRA: LoRA r=8 on an nf4 base"},
    {H_GPUS, H_TRAIN | H_INFER, {NULL}, {NULL}, "more GPUs (the figures per GPU)"},
};

#define MAX_GPUS 64

/* The row's options made concrete for this request; false when the row
 * does not apply (already so, or another mode). */
static bool row_applies(const hint_row *h, const vc_request *q, bool together, const char **value)
{
    const vc_options *o = &q->o;
    unsigned mode = o->mode == VC_MODE_TRAIN ? H_TRAIN : H_INFER;
    if (!(h->modes & mode)) return false;
    *value = h->value[0];
    if (h->kind == H_MICRO_BATCH) return o->batch > 1;
    if (h->kind == H_GPUS) return o->parallel == VC_PARALLEL_NONE && o->gpus <= 1 && o->tp <= 1 && o->pp <= 1;
    const char *n = h->name[0];
    if (!strcmp(n, "loss")) return q->hf.loss == VC_LOSS_IMPL_HF;
    if (!strcmp(n, "grad_ckpt")) return !q->hf.checkpoint;
    if (!strcmp(n, "optim")) {
        *value = o->optim == VC_OPTIM_ADAM ? "adam8bit" : o->optim == VC_OPTIM_ADAMW ? "adamw8bit" : NULL;
        return *value != NULL;
    }
    if (!strcmp(n, "weights")) return !q->qlora && (!q->weights || (together && strcmp(q->weights, *value))); /* nf4 after int8 */
    if (!strcmp(n, "lora")) return q->lora.r == 0 && !q->qlora;
    if (!strcmp(n, "qlora")) return !q->qlora && !q->weights;
    return true;
}

/* An alternative request: the given one (its strings shared, never freed
 * here) with options set; weights, the one string a row sets, is its own. */
typedef struct {
    vc_request q;
    const vc_request *given;
} alt_request;

static void alt_begin(alt_request *a, const vc_request *given)
{
    a->q = *given;
    a->given = given;
    a->q.no_hints = true;
    a->q.format = VC_FORMAT_JSON; /* no table to draw */
}

static void alt_end(alt_request *a)
{
    if (a->q.weights != a->given->weights) free(a->q.weights);
    a->q.weights = a->given->weights;
}

static bool alt_set(alt_request *a, const char *name, const char *value)
{
    vc_error e;
    if (!strcmp(name, "weights") && a->q.weights == a->given->weights) a->q.weights = NULL; /* keep() frees the old */
    return vc_request_set(&a->q, name, value, &e) == VC_OK;
}

/* name=value in the hint (replacing an earlier value of name: nf4 after int8). */
static void hint_option(vc_hint *h, const char *name, const char *value)
{
    int i = 0;
    while (i < h->n && strcmp(h->name[i], name)) i++;
    if (i == VC_HINT_OPTIONS) return;
    snprintf(h->name[i], sizeof h->name[i], "%s", name);
    snprintf(h->value[i], sizeof h->value[i], "%s", value);
    if (i == h->n) h->n++;
}

static void hint_keep(vc_response *resp, vc_hint *h, const vc_response *r)
{
    if (resp->nhints >= VC_MAX_HINTS) return;
    h->total = r->r.memory.total;
    h->peak_allocated = r->r.memory.peak_allocated;
    resp->hints[resp->nhints++] = *h;
}

/* The given request with the hint's options set (false: one refused). */
static bool hint_apply(alt_request *a, const vc_hint *h)
{
    for (int i = 0; i < h->n; i++)
        if (!alt_set(a, h->name[i], h->value[i])) return false;
    return true;
}

/* Runs the given request with the hint's options: 1 fits (*out its
 * response), 0 taken but does not fit, -1 refused. */
static int run_hint(const vc_request *given, const vc_hint *h, vc_response **out)
{
    alt_request a;
    alt_begin(&a, given);
    int got = -1;
    vc_error e;
    vc_response *r = NULL;
    if (hint_apply(&a, h) && !vc_request_run(&a.q, &r, &e)) {
        got = r->kind == VC_RESP_ESTIMATE && !r->status;
        if (got) *out = r;
        else vc_response_free(r);
    }
    alt_end(&a);
    return got;
}

/* The largest batch that fits (0: none), by the library's own search. */
static int64_t max_batch(const vc_request *given)
{
    alt_request a;
    alt_begin(&a, given);
    a.q.max_batch = true;
    a.q.batch_given = false;
    vc_error e;
    vc_response *r = NULL;
    int64_t mb = 0;
    if (!vc_request_run(&a.q, &r, &e)) mb = r->rep.max_batch;
    vc_response_free(r);
    alt_end(&a);
    return mb;
}

/* A smaller batch that fits: in training the given batch by accumulation,
 * split into the fewest equal micro-batches that fit (k micro-batches of
 * batch / k, k dividing the batch: 512 into 4 of 128 where 251 is the
 * largest that fits); for inference the largest batch that fits. */
static bool try_micro_batch(const vc_request *given, vc_hint *h, vc_response **out)
{
    int64_t b = given->o.batch, mb = max_batch(given);
    if (mb < 1 || mb >= b) return false;
    if (given->o.mode == VC_MODE_TRAIN) {
        int64_t k = (b + mb - 1) / mb;
        while (b % k) k++;
        mb = b / k;
        if (given->o.accumulate > INT64_MAX / k) return false;
    }
    vc_hint c = *h;
    char v[32];
    snprintf(v, sizeof v, "%" PRId64, mb);
    hint_option(&c, "batch", v);
    if (given->o.mode == VC_MODE_TRAIN) {
        snprintf(v, sizeof v, "%" PRId64, given->o.accumulate * (b / mb));
        hint_option(&c, "accumulate", v);
    }
    if (run_hint(given, &c, out) != 1) return false;
    *h = c;
    return true;
}

/* The fewest GPUs (2, 4, ... 64) that fit: FSDP2 for training, tensor
 * parallelism for a config's inference. */
static bool try_gpus(const vc_request *given, vc_hint *h, vc_response **out)
{
    bool train = given->o.mode == VC_MODE_TRAIN;
    for (int64_t n = 2; n <= MAX_GPUS; n *= 2) {
        vc_hint c = *h;
        char v[32];
        snprintf(v, sizeof v, "%" PRId64, n);
        hint_option(&c, train ? "parallel" : "tp", train ? "fsdp2" : v);
        hint_option(&c, "gpus", v);
        if (run_hint(given, &c, out) == 1) {
            *h = c;
            return true;
        }
    }
    return false;
}

/* An option of a hint in a few words. */
static const char *knob_words(const char *name)
{
    static const struct {
        const char *name, *words;
    } w[] = {{"loss", "a chunked loss"}, {"optim", "8-bit states"}, {"grad_ckpt", "checkpointing"}, {"batch", "a smaller batch"},
             {"accumulate", "accumulation"}, {"weights", "quantized weights"}, {"lora", "LoRA"}, {"qlora", "QLoRA"},
             {"parallel", "FSDP2"}, {"gpus", "more GPUs"}, {"tp", "tensor parallelism"}};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        if (!strcmp(w[i].name, name)) return w[i].words;
    return name;
}

void vc__hints(const vc_request *given, vc_response *resp)
{
    resp->hints_tried = true;
    const size_t nrows = sizeof rows / sizeof *rows;
    /* each knob alone */
    for (size_t i = 0; i < nrows; i++) {
        const hint_row *row = &rows[i];
        const char *value;
        if (!row_applies(row, given, false, &value)) continue;
        vc_hint h;
        memset(&h, 0, sizeof h);
        snprintf(h.what, sizeof h.what, "%s", row->what);
        vc_response *r = NULL;
        bool ok = false;
        if (row->kind == H_MICRO_BATCH) {
            ok = try_micro_batch(given, &h, &r);
        } else if (row->kind == H_GPUS) {
            ok = try_gpus(given, &h, &r);
        } else {
            hint_option(&h, row->name[0], value);
            ok = run_hint(given, &h, &r) == 1;
        }
        if (ok) hint_keep(resp, &h, r);
        vc_response_free(r);
    }
    if (resp->nhints) return;
    /* none alone: the set-knobs together, in order, until they fit (a
     * smaller batch or more GPUs on top of them all when they do not), then
     * each dropped, the dearest first, where the rest still fit */
    vc_hint h;
    memset(&h, 0, sizeof h);
    vc_response *r = NULL;
    for (size_t i = 0; i < nrows && !r; i++) {
        const hint_row *row = &rows[i];
        const char *value;
        if (row->kind != H_SET) continue;
        alt_request a;
        alt_begin(&a, given);
        bool ok = hint_apply(&a, &h) && row_applies(row, &a.q, true, &value);
        alt_end(&a);
        if (!ok) continue;
        vc_hint more = h;
        hint_option(&more, row->name[0], value);
        if (run_hint(given, &more, &r) < 0) continue; /* refused with the others: left out */
        h = more;
    }
    if (!r && h.n) {
        alt_request a;
        alt_begin(&a, given);
        if (hint_apply(&a, &h)) {
            vc_hint more = h;
            if ((a.q.o.batch > 1 && try_micro_batch(&a.q, &more, &r)) || try_gpus(&a.q, &more, &r)) h = more;
        }
        alt_end(&a);
    }
    if (!r) return;
    for (int k = h.n - 1; k >= 0 && h.n > 1; k--) { /* the dearest first */
        vc_hint less = h;
        memmove(&less.name[k], &less.name[k + 1], (size_t)(less.n - k - 1) * sizeof less.name[0]);
        memmove(&less.value[k], &less.value[k + 1], (size_t)(less.n - k - 1) * sizeof less.value[0]);
        less.n--;
        vc_response *r2 = NULL;
        if (run_hint(given, &less, &r2) == 1) {
            h = less;
            vc_response_free(r);
            r = r2;
        } else {
            vc_response_free(r2);
        }
    }
    size_t k = (size_t)snprintf(h.what, sizeof h.what, "together (no one knob fits alone):");
    for (int i = 0; i < h.n && k < sizeof h.what; i++) {
        int w = snprintf(h.what + k, sizeof h.what - k, "%s %s", i ? "," : "", knob_words(h.name[i]));
        if (w < 0) break;
        k += (size_t)w;
    }
    hint_keep(resp, &h, r);
    vc_response_free(r);
}
