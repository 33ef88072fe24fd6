/*
 * maxseq.c — the longest sequence that fits a GPU (issue 12, --max-seq).
 *
 * A model read from a Hugging Face config.json is built for one sequence
 * length (vc_hf_options.seq, the CLI's --seq: hf.c writes it into the input
 * shape and every layer's shapes follow). So each length tried is the
 * config loaded again at that length (vc__model_load_seq: m's options and
 * LoRA adapters, as the CLI's --seq would load it) and one estimate at
 * o->batch (an estimator, as --max-batch uses). The search keeps a bracket
 * lo (fits) < hi (does not fit, or refused by the model) and ends when
 * hi = lo + 1: that is the boundary whatever the shape of total(seq), so
 * "N fits and N + 1 does not" holds by construction. An exponential search
 * from m's own length finds the bracket, bisection closes it: about
 * 2 log2(range) estimates.
 *
 * A probe's model is m set up again at the length (vc__seq_probe_load,
 * src/model/reshape.c: the same model as the load, its layers' fields
 * parsed once for the search) where the config's tree allows it, else the
 * load.
 *
 * A probe whose answer is known is not estimated (issue 28): the first
 * probe's plan gives a floor under every total of a model with m's
 * parameters and buffers (vc__estimator_state_floor: the weights and
 * optimizer states it never frees, whose sizes do not follow the length);
 * when that floor is over the capacity no length fits, and each later
 * probe whose model has those parameters and buffers is "does not fit"
 * without its plan (its load still runs: a length the model refuses is
 * still refused). The probes and so the answer are the search's as before;
 * 1 token is still estimated (the answer's report is made from it). On an
 * 8B config in fp32 with Adam on an 80 GB card that is 1 plan and 2
 * estimates where it was 12.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "model.h"
#include "policy.h"
#include "util.h"

/* The longest length hf.c accepts (its --seq check, "more than 2^40"). */
#define SEQ_LIMIT (INT64_C(1) << 40)

typedef struct {
    const vc_model *m;
    vc_seq_probe *p;  /* m's models at other lengths */
    const vc_options *o;
    int64_t cap;
    int64_t s0;       /* the length m was loaded at */
    int n;            /* estimates made */
    vc_status st;     /* an error other than "does not fit" */
    vc_error *err;
    int64_t lo, hi;   /* longest known to fit (0: none), shortest known not to (0: none) */
    bool hi_refused;  /* hi was refused by the model (learned positions, the limit), not by memory */
    int64_t unit;     /* lengths are searched in units of this: --sp's TP degree (hf_tp.c), else 1 */
    int64_t floor;    /* under every total of a model with m's parameters and buffers (the first probe's plan), 0 none */
    bool keep;        /* the answer's model and estimator are kept (vc__model_max_seq_at): */
    vc_model *lo_m;   /* ... the model at lo, NULL: none */
    vc_estimator *lo_e; /* ... and its estimator */
    vc_model *one_m;  /* ... the model at 1 token, when it does not fit (the answer is then 0, reported at 1) */
    vc_estimator *one_e;
} search;

/* Whether a and b have the same parameters (count, shape, flags, owner, format) and buffers. */
static bool same_weights(const vc_model *a, const vc_model *b)
{
    if (a->npar != b->npar || a->nbuf != b->nbuf || a->ninst != b->ninst) return false;
    for (size_t q = 0; q < a->npar; q++) {
        const vc_param_entry *x = &a->par[q], *y = &b->par[q];
        if (x->numel != y->numel || x->trainable != y->trainable || x->nd != y->nd || x->flags != y->flags ||
            x->owner != y->owner || x->fmt != y->fmt || (x->nd > 0 && (!x->dims || !y->dims)) ||
            (x->nd > 0 && memcmp(x->dims, y->dims, (size_t)x->nd * sizeof *x->dims)))
            return false;
    }
    for (size_t q = 0; q < a->nbuf; q++)
        if (a->buf[q].numel != b->buf[q].numel || a->buf[q].dt != b->buf[q].dt) return false;
    return true;
}

/* memory.total of the model at seq tokens; *refused when the model does
 * not take that length: the loader's --seq error (learned positions, the
 * 2^40 limit), or, longer than the length m was loaded at, a size past the
 * documented limits (an attention matrix over 2^56 elements, an overflow) */
static vc_status total_at(search *S, int64_t seq, int64_t *total, bool *refused, vc_model **cm, vc_estimator **ce,
                          vc_error *err)
{
    *refused = false;
    *cm = NULL;
    *ce = NULL;
    vc_model *c = NULL;
    vc_status st = __builtin_mul_overflow(seq, S->unit, &seq) ? vc_set_error(err, VC_ERR_USAGE, O("seq"), "too long")
                                                              : vc__seq_probe_load(S->p, seq, &c, err);
    if ((st == VC_ERR_USAGE && !strcmp(err->path, O("seq"))) ||
        (seq > S->s0 && (st == VC_ERR_MODEL || st == VC_ERR_OVERFLOW || st == VC_ERR_LIMIT))) {
        *refused = true;
        return VC_OK;
    }
    if (st) return st;
    if (S->floor > S->cap && !(seq == 1 && S->keep) && same_weights(c, S->m)) { /* it does not fit (S->floor) */
        vc_model_free(c);
        *total = S->floor;
        return VC_OK;
    }
    vc_estimator *e = NULL;
    /* only "total <= cap" matters: past the capacity by its allocated peak the allocator model is not replayed (as
     * the max-batch search does, sweep.c); such a total is still over the capacity */
    if (!(st = vc_estimator_new(c, S->o, VC_EST_NO_LAYERS, &e, err)))
        st = vc__estimator_total_limit(e, S->o->batch, S->cap, total, err);
    if (!st && S->n == 1 && *total > S->cap && same_weights(c, S->m)) S->floor = vc__estimator_state_floor(e);
    if (!st && S->keep) { /* the caller's: kept when seq is the new lo */
        *cm = c;
        *ce = e;
        return VC_OK;
    }
    vc_estimator_free(e);
    vc_model_free(c);
    return st;
}

/* 1: fits, 0: does not (too large, an overflow, or refused), -1: another
 * error (kept in S). Moves the bracket. */
static int probe(search *S, int64_t seq)
{
    vc_error tmp;
    vc_error_clear(&tmp);
    int64_t t = 0;
    bool refused;
    vc_model *c;
    vc_estimator *e;
    S->n++;
    vc_status st = total_at(S, seq, &t, &refused, &c, &e, &tmp);
    if (st == VC_ERR_OVERFLOW) t = INT64_MAX; /* past 2^63 bytes: it does not fit */
    else if (st) {
        if (S->err) *S->err = tmp;
        S->st = st;
        return -1;
    }
    if (!refused && t <= S->cap) {
        if (seq > S->lo) {
            S->lo = seq;
            if (c) { /* (the estimator before the model it holds) */
                vc_estimator_free(S->lo_e);
                vc_model_free(S->lo_m);
                S->lo_m = c;
                S->lo_e = e;
                c = NULL;
                e = NULL;
            }
        }
        vc_estimator_free(e);
        vc_model_free(c);
        return 1;
    }
    if (c && seq == 1 && S->unit == 1 && !S->one_m) {
        S->one_m = c;
        S->one_e = e;
        c = NULL;
        e = NULL;
    }
    vc_estimator_free(e);
    vc_model_free(c);
    if (!S->hi || seq < S->hi) {
        S->hi = seq;
        S->hi_refused = refused;
    }
    return 0;
}

vc_status vc_model_max_seq(const vc_model *m, const vc_options *o, int64_t capacity, int64_t *max_seq,
                           int *limited, int *estimates, vc_error *err)
{
    return vc__model_max_seq_at(m, o, capacity, max_seq, limited, estimates, NULL, NULL, err);
}

vc_status vc__model_max_seq_at(const vc_model *m, const vc_options *o, int64_t capacity, int64_t *max_seq, int *limited,
                               int *estimates, vc_model **at, vc_estimator **at_e, vc_error *err)
{
    if (at) *at = NULL;
    if (at_e) *at_e = NULL;
    *max_seq = 0;
    if (limited) *limited = 0;
    if (estimates) *estimates = 0;
    if (err) vc_error_clear(err);
    if (!m || !o) return vc_set_error(err, VC_ERR_USAGE, NULL, "no model or no options");
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    if (in_st) return in_st;
    if (err) snprintf(err->file, sizeof err->file, "%s", m->file);
    if (!m->gen_json)
        return vc_set_error(err, VC_ERR_USAGE, O("max_seq"),
                            "the sequence length is a Hugging Face config.json's option; this is a vramcalc model file");
    if (m->has_override)
        return vc_set_error(err, VC_ERR_USAGE, O("max_seq"), O("input") " replaced the model's input: the length is what " O("max_seq") " searches");
    if (capacity < 0) return vc_set_error(err, VC_ERR_USAGE, O("gpu"), "capacity must not be negative");
    /* start from the model's own length (its input: [seq] token ids) */
    int64_t s0 = m->ninputs > 0 && m->val[0].shape.nd == 1 ? m->val[0].shape.d[0] : VC_HF_DEFAULT_SEQ;
    const vc_model *given = m;
    vc_status st = vc__model_at(m, o, &m, err); /* the model at the options' tp, sp and ep */
    if (st) return st;
    /* with --sp the sequence splits over the TP ranks: lengths in units of tp */
    int64_t unit = m->sp && m->tp > 1 ? m->tp : 1;
    s0 = s0 / unit > 0 ? s0 / unit : 1;
    /* the answer's model and estimator, for a caller whose model is the one searched (its probes borrow it) */
    search S = {m, NULL, o, capacity, s0 * unit, 0, VC_OK, err, 0, 0, false, unit, 0, at && at_e && m == given, NULL, NULL, NULL, NULL};
    if ((st = vc__seq_probe_new(m, &S.p, err))) return st;
    int f = probe(&S, s0);
    /* exponential search for the bracket: doubling up from a length that
     * fits (the model refuses past SEQ_LIMIT), halving down from one that
     * does not */
    while (f == 1 && !S.hi) f = probe(&S, S.lo < SEQ_LIMIT ? 2 * S.lo : SEQ_LIMIT + 1);
    while (f == 0 && !S.lo && S.hi > 1) f = probe(&S, S.hi / 2);
    /* bisection: lo fits, hi does not */
    while (f >= 0 && S.lo && S.hi - S.lo > 1) f = probe(&S, S.lo + (S.hi - S.lo) / 2);
    /* the model the answer is reported at (lo, else 1 token) with the text its load has; else none (the caller
     * loads it) */
    vc_model *am = S.lo ? S.lo_m : S.one_m;
    vc_estimator *ae = S.lo ? S.lo_e : S.one_e;
    if (S.lo) {
        vc_estimator_free(S.one_e);
        vc_model_free(S.one_m);
    } else {
        vc_estimator_free(S.lo_e);
        vc_model_free(S.lo_m);
    }
    if (am && (f < 0 || vc__seq_probe_json(S.p, am))) {
        vc_estimator_free(ae);
        vc_model_free(am);
        am = NULL;
        ae = NULL;
    }
    vc__seq_probe_free(S.p);
    if (am) {
        *at = am;
        *at_e = ae;
    }
    if (estimates) *estimates = S.n;
    if (f < 0) return S.st;
    *max_seq = S.lo * unit;
    if (limited) *limited = S.lo && S.hi_refused;
    return VC_OK;
}
