/*
 * setup.c — vc_setup: what a kind's setup declares (layer.h): shape errors,
 * checked arithmetic, parameters with their names and shapes, buffers.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "load.h"
#include "util.h"

/* --------------------------------------------------------------- vc_setup */


int vc_fail(vc_setup *s, const char *key, const char *fmt, ...)
{
    char path[256], msg[400];
    if (key) snprintf(path, sizeof path, "%s.%s", s->priv->path, key);
    else snprintf(path, sizeof path, "%s", s->priv->path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vc_set_error(s->priv->err, VC_ERR_MODEL, path, "%s", msg);
    return -1;
}

int vc_mul(vc_setup *s, int64_t a, int64_t b, int64_t *out)
{
    if (__builtin_mul_overflow(a, b, out)) {
        vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path, "the size %lld * %lld overflows 64-bit arithmetic",
                     (long long)a, (long long)b);
        return -1;
    }
    return 0;
}

int vc_add(vc_setup *s, int64_t a, int64_t b, int64_t *out)
{
    if (__builtin_add_overflow(a, b, out)) {
        vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path, "the size %lld + %lld overflows 64-bit arithmetic",
                     (long long)a, (long long)b);
        return -1;
    }
    return 0;
}

static int check_tensor(vc_setup *s, const char *what, const char *name, int64_t numel)
{
    if (numel < 0)
        return vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path,
                            "%s %s: its size computation overflowed (got %lld elements)", what, name ? name : "", (long long)numel),
               -1;
    if (numel > MAX_TENSOR_ELEMS)
        return vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path,
                            "%s %s has %lld elements, more than the limit of 2^56 (its bytes would overflow 64-bit arithmetic)",
                            what, name ? name : "", (long long)numel),
               -1;
    return 0;
}

int vc_param_shape(vc_setup *s, const char *name, int nd, const int64_t *dims, unsigned flags)
{
    struct vc_setup_priv *P = s->priv;
    int64_t numel = 1;
    if (nd < 0 || nd > VC_MAX_DIMS) return vc_fail(s, NULL, "parameter %s has %d dimensions (0 to %d allowed)", name, nd, VC_MAX_DIMS);
    for (int i = 0; i < nd; i++)
        if (dims[i] < 0 || __builtin_mul_overflow(numel, dims[i], &numel)) numel = -1;
    if (check_tensor(s, "parameter", name, numel)) return -1;
    if (P->np >= VC_MAX_PARAMS) return vc_fail(s, NULL, "more than %d parameter tensors", VC_MAX_PARAMS);
    int i = P->np++;
    P->pn[i] = numel;
    P->pnd[i] = (int8_t)nd;
    P->pflags[i] = flags;
    memcpy(P->pdims[i], dims, (size_t)nd * sizeof *dims);
    size_t len = 0; /* vc_cat3(pname, 64, name, "", ""): at most 63 bytes of name and a NUL */
    while (len < sizeof P->pname[i] - 1 && name[len]) len++;
    memcpy(P->pname[i], name, len);
    P->pname[i][len] = '\0';
    P->plen[i] = (uint8_t)len;
    return 0;
}

int vc_param(vc_setup *s, const char *name, int64_t numel) { return vc_param_shape(s, name, 1, &numel, 0); }

int vc_param2(vc_setup *s, const char *name, int64_t rows, int64_t cols)
{
    int64_t d[2] = {rows, cols};
    return vc_param_shape(s, name, 2, d, 0);
}

int vc_buffer(vc_setup *s, const char *name, int64_t numel, vc_dtype dt)
{
    if (check_tensor(s, "buffer", name, numel)) return -1;
    if (s->priv->nb >= VC_MAX_PARAMS) return vc_fail(s, NULL, "more than %d buffers", VC_MAX_PARAMS);
    s->priv->bn[s->priv->nb] = numel;
    s->priv->bdt[s->priv->nb++] = dt;
    return 0;
}

/* Instance idx's parameters from its setup into the model's table (or the
 * tied weight for parameter 0), with their names, shapes and flags, and the
 * counts; whether each trains (on: vc__peft_on of the model's adapters, found once by the caller). */
enum { COPY_NONE, COPY_LN_TUNING, COPY_SAVED };

/* The pinned dtype of an LN tuning copy: cast_adapter_dtype (tuners_utils.py) upcasts a
 * 16-bit adapter module to fp32 under autocast_adapter_dtype=True (auto); --lora-dtype pins it. */
static unsigned ln_pin(vc_lora_dtype d)
{
    return d == VC_LORA_DTYPE_BF16 ? VC_PARAM_BF16 : d == VC_LORA_DTYPE_FP16 ? VC_PARAM_F16 : d == VC_LORA_DTYPE_MODEL ? 0u : VC_PARAM_F32;
}

static vc_status add_params(loader *L, const struct vc_setup_priv *P, int idx, bool frozen, int tie_to,
                            const char *jpath, int copy, bool on)
{
    vc_model *m = L->m;
    vc_inst *in = &m->inst[idx];
    const char *tied = copy != COPY_NONE && tie_to >= 0 ? L->name : NULL;
    for (int i = 0; i < P->np; i++) {
        if (i == 0 && tie_to >= 0) {
            int tp = m->inst[tie_to].params[0];
            const vc_param_entry *T = &m->par[tp];
            /* a copy of a tied layer, or a layer tied to a copy (ModulesToSaveWrapper's deepcopy unties them;
             * its tied_module path is another): not modelled */
            if (!tied && on && T->trainable && !(T->flags & VC_PARAM_ADAPTER)) tied = m->inst[tie_to].name;
            if (tied)
                return vc__fail(L, VC_ERR_USAGE, m->lora.modules_to_save[0] ? O("modules_to_save") : O("peft"),
                                "%.200s's weight is tied: a trained copy of a tied layer is not modelled", tied);
            if (T->nd != P->pnd[0] || memcmp(T->dims, P->pdims[0], (size_t)T->nd * sizeof *T->dims)) {
                char p[300], a[200], c[200];
                vc_shape sa = vc_shape_make(P->pnd[0], P->pdims[0]), sc = vc_shape_make(T->nd, T->dims);
                vc_shape_str(&sa, a, sizeof a);
                vc_shape_str(&sc, c, sizeof c);
                vc__join(p, sizeof p, jpath, "tie");
                return vc__fail(L, VC_ERR_MODEL, p, "the weights differ in shape: this layer's is %s, %s's is %s",
                            a, m->inst[tie_to].path, c);
            }
            in->params[0] = tp;
            continue;
        }
        if (GROWV(m->par, m->npar, m->cap_par)) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        /* the dims (and a cleared one after them) and the name in one piece of the arena */
        size_t dn = (size_t)(P->pnd[i] + 1) * sizeof(int64_t), nl = (size_t)P->plen[i] + 1;
        int64_t *dims = vc_arena_take(m->arena, dn + nl);
        if (!dims) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        memcpy(dims, P->pdims[i], (size_t)P->pnd[i] * sizeof *dims);
        dims[P->pnd[i]] = 0;
        char *pname = (char *)dims + dn;
        memcpy(pname, P->pname[i], nl);
        unsigned fl = P->pflags[i];
        /* with LoRA (or IA3, DoRA), only the adapters train (peft BaseTuner._mark_only_adapters_as_trainable);
         * a copied layer's parameters are the copy the forward runs, trained */
        bool trainable = on ? (fl & VC_PARAM_ADAPTER) != 0 || (copy != COPY_NONE && !(fl & VC_PARAM_FROZEN))
                                               : !frozen && !(fl & VC_PARAM_FROZEN);
        if (copy == COPY_LN_TUNING && !(fl & VC_PARAM_PINNED)) fl |= ln_pin(m->lora.dtype);
        m->par[m->npar] = (vc_param_entry){P->pn[i], trainable, P->pnd[i], (uint8_t)fl, idx, pname, dims};
        in->params[i] = (int)m->npar++;
        if (__builtin_add_overflow(in->nparams, P->pn[i], &in->nparams) ||
            __builtin_add_overflow(m->nparams, P->pn[i], &m->nparams) || m->nparams > MAX_TENSOR_ELEMS)
            return vc__fail(L, VC_ERR_OVERFLOW, jpath, "the model has more than 2^56 parameters (the limit: byte counts would overflow 64-bit arithmetic)");
        if (trainable) m->ntrainable += P->pn[i];
    }
    /* the original beside the copy, frozen and kept (LNTuningLayer.base_layer; ModulesToSaveWrapper's
     * original_module.requires_grad_(False)): the instance's parameters after its own, which nothing
     * in the step reads */
    for (int i = 0; copy != COPY_NONE && i < P->np; i++) {
        if (GROWV(m->par, m->npar, m->cap_par)) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        char nm[300];
        snprintf(nm, sizeof nm, "%s%s", copy == COPY_SAVED ? "original_module." : "base_layer.", P->pname[i]);
        int64_t *dims = vc_arena_alloc(m->arena, (size_t)(P->pnd[i] + 1) * sizeof *dims);
        const char *pname = vc_arena_strdup(m->arena, nm);
        if (!dims || !pname) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        memcpy(dims, P->pdims[i], (size_t)P->pnd[i] * sizeof *dims);
        m->par[m->npar] = (vc_param_entry){P->pn[i], false, P->pnd[i], (uint8_t)(P->pflags[i] | VC_PARAM_FROZEN), idx, pname, dims};
        in->params[in->np++] = (int)m->npar++;
        if (__builtin_add_overflow(in->nparams, P->pn[i], &in->nparams) ||
            __builtin_add_overflow(m->nparams, P->pn[i], &m->nparams) || m->nparams > MAX_TENSOR_ELEMS)
            return vc__fail(L, VC_ERR_OVERFLOW, jpath, "the model has more than 2^56 parameters (the limit: byte counts would overflow 64-bit arithmetic)");
    }
    return VC_OK;
}

vc_status vc__instantiate(loader *L, const vc_kind *k, void *cfg, const char *jpath, const char *ipath,
                             const int *ins, int nin, bool frozen, int region, int tie_to, int *out)
{
    vc_model *m = L->m;
    if (m->ninst >= VC_MAX_LAYERS)
        return vc__fail(L, VC_ERR_LIMIT, jpath, "more than %d layers (after expanding repeat): the limit", VC_MAX_LAYERS);
    vc_shape shapes[VC_MAX_INPUTS];
    vc_dtype dts[VC_MAX_INPUTS];
    for (int i = 0; i < nin; i++) {
        shapes[i] = m->val[ins[i]].shape;
        dts[i] = m->val[ins[i]].dt;
        bool want_int = k->flags & VC_KIND_INT_INPUT;
        if (i == 0 && want_int && dts[i] != VC_DT_I64)
            return vc__fail(L, VC_ERR_MODEL, jpath, "%s takes int64 token ids; declare the input as {\"shape\": [...], \"dtype\": \"int64\"}", k->name);
        bool index_in = (k->flags & VC_KIND_INDEX_INPUT) && i > 0 && i == nin - 1;
        if (index_in && dts[i] != VC_DT_I64)
            return vc__fail(L, VC_ERR_MODEL, jpath, "%s's input %d is its index and must be int64 (a TopK layer with \"output\": \"indices\")", k->name, i);
        if (!want_int && !index_in && dts[i] == VC_DT_I64)
            return vc__fail(L, VC_ERR_MODEL, jpath, "%s takes a float tensor, but input %d holds int64 token ids (add an Embedding first)", k->name, i);
    }
    /* the per-tensor arrays (40 KiB) are written before they are read, up
     * to np / nb: clearing them all cost 80 MB of memset on 2,000 layers */
    struct vc_setup_priv priv;
    priv.err = L->err;
    priv.path = jpath;
    priv.np = priv.nb = 0;
    const vc_peft_row *pr = vc_peft_row_get(m->lora.method);
    bool on = vc__peft_on(&m->lora);
    /* modules_to_save and LN tuning's targets (any module, LNTuningModel._create_new_module): trained copies;
     * a module to save is never an adapter's target (tuners_utils.py check_target_module_exists: _ExcludedModule) */
    int copy = on && vc__peft_match(L->name, m->lora.modules_to_save) ? COPY_SAVED
             : on && pr->copy && vc__peft_match(L->name, m->lora.targets) ? COPY_LN_TUNING : COPY_NONE;
    const vc_lora *lora = copy == COPY_NONE && on && (pr->lora || pr->ia3) && (k->flags & VC_KIND_LORA) &&
                          vc__peft_match(L->name, m->lora.targets) ? &m->lora : NULL;
    if (lora || copy == COPY_LN_TUNING) m->nlora++;
    if (copy == COPY_SAVED) m->nsaved++;
    /* IA3Model._create_and_replace: is_feedforward = the target is one of feedforward_modules */
    bool ff = lora && lora->method == VC_PEFT_IA3 && vc__ia3_feedforward(m->ia3_feedforward, L->name);
    vc_setup s = {nin, shapes, dts, {0, {0}}, VC_DT_FLOAT, lora, &priv, m->ep > 1 ? m->ep : 1, false, ff};
    s.ops = k->ops;
    if (k->setup(&s, cfg)) {
        if (L->err->code == VC_OK) vc__fail(L, VC_ERR_MODEL, jpath, "invalid %s", k->name);
        return L->err->code;
    }
    /* the ops the kind declares (docs/limits.md): refused here, before the plan is built */
    if (s.ops < 0 || __builtin_add_overflow(L->ops, s.ops, &L->ops) || L->ops > VC_MAX_PLAN_OPS)
        return vc__fail(L, VC_ERR_LIMIT, jpath, "the layers up to this one record up to %lld autograd ops in one step "
                        "(what their kinds declare): more than the limit of %d (docs/limits.md)",
                        (long long)L->ops, VC_MAX_PLAN_OPS);
    if (s.ep_used) m->nmoe++;
    if (s.out.nd < 1 || s.out.nd > VC_MAX_DIMS)
        return vc__fail(L, VC_ERR_MODEL, jpath, "the output would have %d dimensions per sample (1 to %d allowed)", s.out.nd, VC_MAX_DIMS);
    for (int i = 0; i < s.out.nd; i++)
        if (s.out.d[i] < 1) {
            char sh[200];
            vc_shape_str(&s.out, sh, sizeof sh);
            return vc__fail(L, VC_ERR_MODEL, jpath, "the output shape %s is empty (a dimension below 1)", sh);
        } else if (s.out.d[i] > VC_MAX_DIM_SIZE) {
            char sh[200];
            vc_shape_str(&s.out, sh, sizeof sh);
            return vc__fail(L, VC_ERR_LIMIT, jpath, "the output shape %s has a dimension larger than the limit of 2^40", sh);
        }
    int64_t numel = vc_shape_numel(&s.out);
    if (numel < 0 || numel > (INT64_C(1) << 56)) {
        char sh[200];
        vc_shape_str(&s.out, sh, sizeof sh);
        return vc__fail(L, VC_ERR_OVERFLOW, jpath, "the output %s has more than 2^56 elements per sample", sh);
    }
    if (GROWV(m->inst, m->ninst, m->cap_inst)) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    int idx = (int)m->ninst++;
    vc_inst *in = &m->inst[idx];
    memset(in, 0, sizeof *in);
    in->kind = k;
    in->cfg = cfg;
    in->nin = nin;
    in->ckpt = region;
    in->ops = (int)s.ops;
    in->frozen = frozen;
    in->np = priv.np;
    in->nb = priv.nb;
    /* the input, parameter and buffer indices (each list with a cleared entry after it) and the path,
     * in one piece of the arena */
    size_t nins = (size_t)nin + 1, npars = (size_t)(priv.np * (copy != COPY_NONE ? 2 : 1) + 1),
           nbufs = (size_t)priv.nb + 1, pl = strlen(ipath) + 1, ints = (nins + npars + nbufs) * sizeof(int);
    int *ix = vc_arena_take(m->arena, ints + pl);
    if (!ix) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    memset(ix, 0, ints);
    memcpy(ix, ins, (size_t)nin * sizeof *ins);
    in->in = ix;
    in->params = ix + nins;
    in->bufs = ix + nins + npars;
    in->path = memcpy((char *)ix + ints, ipath, pl);
    in->name = L->name ? vc_arena_strdup(m->arena, L->name) : NULL;
    if (L->name && !in->name) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    if (add_params(L, &priv, idx, frozen, tie_to, jpath, copy, on)) return L->err->code;
    for (int i = 0; i < priv.nb; i++) {
        if (GROWV(m->buf, m->nbuf, m->cap_buf)) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        m->buf[m->nbuf] = (vc_buffer_entry){priv.bn[i], priv.bdt[i]};
        in->bufs[i] = (int)m->nbuf++;
        if (__builtin_add_overflow(L->nbuffer, priv.bn[i], &L->nbuffer) || L->nbuffer > MAX_TENSOR_ELEMS)
            return vc__fail(L, VC_ERR_OVERFLOW, jpath, "the model has more than 2^56 buffer elements (the limit: byte counts would overflow 64-bit arithmetic)");
    }
    int v = vc__new_value(L, &s.out, s.out_dt, idx);
    if (v < 0) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    m->inst[idx].out = v;
    *out = v;
    return VC_OK;
}
