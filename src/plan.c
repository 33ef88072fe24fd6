/*
 * plan.c — builds a plan for (model, options): the layers record their ops
 * (graph.c), the loss follows, and the graph is executed once (autograd.c);
 * and frees it.
 */
#include <string.h>

#include "plan.h"
#include "util.h"

vc_status vc_plan_build(const vc_model *m, const vc_options *o, vc_plan **out, vc_error *err)
{
    return vc__plan_build_layout(m, o, vc_layout_row_get(o), out, err);
}

vc_status vc__plan_build_layout(const vc_model *m, const vc_options *o, const vc_layout_row *layout, vc_plan **out,
                                vc_error *err)
{
    vc_status qst = vc__quant_check(m, o, err); /* quantized weights: their precision and mode (src/quant.c) */
    if (qst) return qst;
    vc_build *b = calloc(1, sizeof *b);
    if (!b) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    b->m = m;
    b->o = *o;
    b->batch = o->batch;
    b->memo = calloc(1, sizeof *b->memo);
    if (!b->memo) {
        free(b);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    b->memo->grid = &b->memo->own;
    b->train = o->mode == VC_MODE_TRAIN;
    b->loss_t = -1;
    b->target_t = -1;
    b->prec = vc_precision_row_get(o->precision);
    b->optim = vc_optim_row_get(o->optim);
    b->layout = layout;
    b->hook_inst = -1;
    if (!b->prec || !b->optim || !b->layout) {
        vc_plan_free(b);
        return vc_set_error(err, VC_ERR_USAGE, NULL, "invalid option value");
    }
    b->act_dt = b->prec->act_dt;
    b->param_dt = b->prec->param_dt;
    b->amp_dt = b->prec->amp_dt;

    b->val_t = malloc((m->nval + 1) * sizeof *b->val_t);
    b->par_t = malloc((m->npar + 1) * sizeof *b->par_t);
    b->buf_t = malloc((m->nbuf + 1) * sizeof *b->buf_t);
    b->amp_cache = malloc((m->npar + 1) * sizeof *b->amp_cache);
    if (!b->val_t || !b->par_t || !b->buf_t || !b->amp_cache) {
        vc_plan_free(b);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    for (size_t p = 0; p < m->npar; p++) {
        vc_dtype dt = (m->par[p].flags & VC_PARAM_F32) ? VC_DT_F32 : b->param_dt;
        int32_t t = vc__new_tensor(b, vc_n_fixed(m->par[p].numel), dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->t[t].param = (int32_t)p;
        b->t[t].rg = m->par[p].trainable && b->train;
        b->par_t[p] = t;
        b->amp_cache[p] = -1;
    }
    for (size_t i = 0; i < m->nbuf; i++) {
        vc_dtype dt = m->buf[i].dt == VC_DT_FLOAT ? b->param_dt : m->buf[i].dt;
        int32_t t = vc__new_tensor(b, vc_n_fixed(m->buf[i].numel), dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->buf_t[i] = t;
    }
    for (int i = 0; i < m->ninputs; i++) {
        int64_t n = vc_shape_numel(&m->val[i].shape);
        int32_t t = vc__new_tensor(b, vc_n_sample(n), m->val[i].dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->val_t[i] = t;
    }
    for (size_t i = 0; i < m->ninst && !b->st; i++) {
        const vc_inst *in = &m->inst[i];
        b->cur_inst = (int)i;
        b->cur_region = in->ckpt;
        b->out_t = -1;
        in->kind->emit(b, in->cfg);
        if (b->out_t < 0 && !b->st) {
            vc_plan_free(b);
            return vc_set_error(err, VC_ERR_MODEL, in->path, "internal error: %s produced no output",
                                in->kind->name);
        }
        b->val_t[in->out] = b->out_t;
        /* the caller holds a module's inputs until it returns */
        for (int k = 0; k < in->nin; k++) vc__extend_life(b, b->val_t[in->in[k]]);
        for (size_t k = 0; k < m->nblk; k++)
            if (m->blk_last[k] == (int)i) vc__extend_life(b, b->val_t[m->blk_val[k]]);
    }
    /* autocast's weight cache is cleared when the forward's autocast region exits */
    for (size_t p = 0; p < m->npar && !b->st; p++)
        if (b->amp_cache[p] >= 0 && b->t[b->amp_cache[p]].release < 0) b->t[b->amp_cache[p]].release = (int32_t)b->nop - 1;
    if (!b->st && b->train) vc__emit_loss(b); /* infer: model(x) only */
    if (!b->st) vc__execute(b);
    if (b->st) {
        vc_status st = b->st;
        vc_plan_free(b);
        return vc_set_error(err, st, NULL, "%s", vc_strerror(st));
    }
    *out = b;
    return VC_OK;
}

bool vc_plan_batch_dependent(const vc_plan *p) { return p->batch_dep; }
const char *vc_plan_note(const vc_plan *p) { return p->note; }

vc_grid *vc_grid_new(void) { return calloc(1, sizeof(vc_grid)); }

void vc_grid_free(vc_grid *g)
{
    if (!g) return;
    free(g->cum);
    free(g);
}

void vc_plan_use_grid(vc_plan *p, vc_grid *g) { p->memo->grid = g ? g : &p->memo->own; }

void vc_plan_free(vc_plan *p)
{
    vc_build *b = p;
    if (!b) return;
    free(b->t); free(b->op); free(b->it); free(b->val_t); free(b->par_t); free(b->buf_t);
    free(b->amp_cache); free(b->s); free(b->ev); free(b->sv); free(b->rel_off); free(b->rel);
    free(b->rrel_off); free(b->rrel); free(b->reg); free(b->hold); free(b->pgrad); free(b->fwd_live);
    free(b->pedges); free(b->parrived); free(b->ppending); free(b->owned);
    vc__memo_free(b->memo);
    free(b);
}
