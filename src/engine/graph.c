/*
 * graph.c — the builder API of layers/layer.h: the layers' forward passes
 * recorded as autograd ops (tensors, inputs, outputs, saved tensors,
 * temporaries), and the loss after the model's output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

int vc_dtype_size(vc_dtype dt)
{
    switch (dt) {
    case VC_DT_FLOAT: case VC_DT_F32: return 4;
    case VC_DT_F16: case VC_DT_BF16: return 2;
    case VC_DT_I64: return 8;
    case VC_DT_BOOL: case VC_DT_U8: case VC_DT_I8: case VC_DT_F8: return 1;
    case VC_DT_I32: return 4;
    }
    return 4;
}

vc_numel vc_n_sample(int64_t per_sample) { return (vc_numel){per_sample, 0, 0, 0}; }
vc_numel vc_n_fixed(int64_t n) { return (vc_numel){0, n, 0, 0}; }
vc_numel vc_n_floor(int64_t per_sample, int64_t fixed, int32_t div)
{
    if (div <= 1) return (vc_numel){per_sample, fixed, 0, 0};
    return (vc_numel){per_sample, fixed, div, 1};
}

vc_numel vc_n_scale(vc_numel n, int64_t k)
{
    vc_numel r = n;
    if (n.div > 1) { /* floor(...) x mul x k */
        int64_t m;
        if (__builtin_mul_overflow((int64_t)(n.mul > 0 ? n.mul : 1), k, &m) || m > INT32_MAX)
            return (vc_numel){INT64_MAX, 0, 0, 0};
        r.mul = (int32_t)m;
        return r;
    }
    if (__builtin_mul_overflow(n.ps, k, &r.ps) || __builtin_mul_overflow(n.fx, k, &r.fx))
        return (vc_numel){INT64_MAX, 0, 0, 0};
    return r;
}

int64_t vc_n_at(vc_numel n, int64_t batch)
{
    int64_t e;
    if (__builtin_mul_overflow(n.ps, batch, &e) || __builtin_add_overflow(e, n.fx, &e)) return -1;
    if (n.div > 1 && __builtin_mul_overflow(e / n.div, (int64_t)(n.mul > 0 ? n.mul : 1), &e)) return -1;
    return e;
}

bool vc_n_same(vc_numel a, vc_numel b)
{
    int32_t ad = a.div > 1 ? a.div : 1, bd = b.div > 1 ? b.div : 1;
    int32_t am = ad > 1 && a.mul > 0 ? a.mul : 1, bm = bd > 1 && b.mul > 0 ? b.mul : 1;
    return a.ps == b.ps && a.fx == b.fx && ad == bd && am == bm;
}

int64_t vc_bytes(vc_numel n, vc_dtype dt, int64_t batch)
{
    int64_t e = vc_n_at(n, batch), b;
    if (e < 0 || __builtin_mul_overflow(e, (int64_t)vc_dtype_size(dt), &b) || b > INT64_MAX - 511) return -1;
    if (b == 0) return 0; /* zero-element tensors take no block */
    return (b + 511) / 512 * 512;
}

static vc_dtype resolve(const vc_build *b, vc_dtype dt)
{
    return dt == VC_DT_FLOAT ? b->act_dt : dt;
}

/* ------------------------------------------------------------ builder API */

const vc_options *vc_opts(const vc_build *b) { return &b->o; }
int64_t vc_sm_count(const vc_build *b) { return vc_kernel_sms(&b->o); }
int64_t vc_batch(const vc_build *b) { return b->batch; }
vc_dtype vc_act_dt(const vc_build *b) { return b->act_dt; }
vc_dtype vc_param_dt(const vc_build *b) { return b->param_dt; }
vc_dtype vc_autocast_dt(const vc_build *b) { return b->amp_dt; }
bool vc_training(const vc_build *b) { return b->train; }
bool vc_checkpointed(const vc_build *b) { return b->train && b->m->nregions > 0; }
bool vc_adapters_disabled(const vc_build *b) { return b->adapters_off; }
const vc_lora *vc_lora_of(const vc_build *b) { return &b->m->lora; }

int32_t vc__new_tensor(vc_build *b, vc_numel n, vc_dtype dt)
{
    GROW(b->t, b->nt, b->ct, b);
    if (b->st) return -1;
    tens_t *t = &b->t[b->nt];
    memset(t, 0, sizeof *t);
    t->n = n;
    t->dt = (uint8_t)resolve(b, dt);
    t->contig = true;
    t->op = t->base = t->param = t->release = t->rrelease = t->last = t->with = -1;
    t->stor = t->grad = -1;
    return (int32_t)b->nt++;
}

static const vc_inst *cur(const vc_build *b) { return &b->m->inst[b->cur_inst]; }

vc_t vc_input(vc_build *b, int i)
{
    const vc_inst *in = cur(b);
    return (i >= 0 && i < in->nin) ? b->val_t[in->in[i]] : -1;
}
const vc_shape *vc_input_shape(const vc_build *b, int i) { return &b->m->val[cur(b)->in[i]].shape; }
const vc_shape *vc_output_shape(const vc_build *b) { return &b->m->val[cur(b)->out].shape; }
bool vc_has_weight(const vc_build *b, int i) { return i >= 0 && i < cur(b)->np; }
vc_t vc_weight(vc_build *b, int i) { return vc_has_weight(b, i) ? b->par_t[cur(b)->params[i]] : -1; }
vc_t vc_buf(vc_build *b, int i) { return (i >= 0 && i < cur(b)->nb) ? b->buf_t[cur(b)->bufs[i]] : -1; }
void vc_set_output(vc_build *b, vc_t t) { b->out_t = t; }
void vc_input_unheld(vc_build *b, int i)
{
    if (i >= 0 && i < 32) b->unheld |= 1u << i;
}
void vc_refuse(vc_build *b, const char *opt, const char *fmt, ...)
{
    if (b->st) return;
    va_list ap;
    va_start(ap, fmt);
    b->st = VC_ERR_USAGE;
    b->why_opt = opt;
    vsnprintf(b->why, sizeof b->why, fmt, ap);
    va_end(ap);
}

void vc_keep_to_here(vc_build *b, vc_t t)
{
    if (t >= 0 && !b->t[t].held) vc__extend_life(b, t);
}
void vc_keep_through_block(vc_build *b, vc_t t)
{
    const vc_model *m = b->m;
    const char *p = m->inst[b->cur_inst].path, *dot = strrchr(p, '.');
    size_t j = (size_t)b->cur_inst, n = dot ? (size_t)(dot - p) + 1 : 0;
    /* the instances of the enclosing block copy share its path ("layers[2][1].") */
    while (n && j + 1 < m->ninst && !strncmp(m->inst[j + 1].path, p, n)) j++;
    if (!n || j == (size_t)b->cur_inst || b->nblk_keep == (int)(sizeof b->blk_keep / sizeof *b->blk_keep)) {
        vc_keep_to_here(b, t);
        return;
    }
    b->blk_keep[b->nblk_keep] = t;
    b->blk_keep_at[b->nblk_keep++] = (int32_t)j;
}
vc_t vc_dsa_topk(const vc_build *b) { return b->dsa_topk; }
void vc_set_dsa_topk(vc_build *b, vc_t t)
{
    if (b->dsa_topk >= 0 && b->dsa_topk != t) vc_keep_through_block(b, b->dsa_topk);
    b->dsa_topk = t;
}
void vc_keep_with(vc_build *b, vc_t t, vc_t owner)
{
    if (t >= 0 && owner >= 0 && owner < t && !b->t[t].held) b->t[t].with = owner;
}
bool vc_input_arg_held_next(const vc_build *b, int i)
{
    const vc_inst *in = cur(b);
    if (i < 0 || i >= in->nin) return false;
    int p = b->m->val[in->in[i]].producer;
    if (p < 0 || b->m->inst[p].nin < 1) return false;
    int v = b->m->inst[p].in[0];
    for (size_t k = 0; k < b->m->nhold && !b->gen.profile; k++)
        if (b->m->hold_val[k] == v && b->m->hold_last[k] == b->cur_inst + 1) return true;
    return false;
}
vc_t vc_input_arg(const vc_build *b, int i)
{
    const vc_inst *in = cur(b);
    if (i < 0 || i >= in->nin) return -1;
    int p = b->m->val[in->in[i]].producer;
    if (p < 0 || b->m->inst[p].nin < 1) return -1;
    return b->val_t[b->m->inst[p].in[0]];
}
vc_t vc_forward_local(const vc_build *b) { return b->fwd_local; }
void vc_set_forward_local(vc_build *b, vc_t t) { b->fwd_local = t; }
vc_t vc_forward_local2(const vc_build *b) { return b->fwd_local2; }
void vc_set_forward_local2(vc_build *b, vc_t t) { b->fwd_local2 = t; }
void vc_kv_share_set(vc_build *b, int type, vc_t k, vc_t v, int64_t S, bool blhd)
{
    if (type < 0 || type > 1) return;
    b->kv_share[type].k = k;
    b->kv_share[type].v = v;
    b->kv_share[type].S = S;
    b->kv_share[type].blhd = blhd;
    if (b->train && b->nkvd + 2 <= (int)(sizeof b->kvd_t / sizeof *b->kvd_t)) { /* the training forward's stores */
        b->kvd_t[b->nkvd++] = k;
        if (v != k) b->kvd_t[b->nkvd++] = v;
    }
}
bool vc_kv_share_get(const vc_build *b, int type, vc_t *k, vc_t *v, int64_t *S, bool *blhd)
{
    if (type < 0 || type > 1 || b->kv_share[type].k < 0) return false;
    *k = b->kv_share[type].k;
    *v = b->kv_share[type].v;
    *S = b->kv_share[type].S;
    *blhd = b->kv_share[type].blhd;
    return true;
}
void vc_keep_forward(vc_build *b, vc_t t)
{
    if (t < 0) return;
    GROW(b->fwd_keep, b->nfwd_keep, b->cfwd_keep, b); /* a T5 decoder keeps 4 cache states per layer (layers/t5.c) */
    if (!b->st) b->fwd_keep[b->nfwd_keep++] = t;
}

void vc_keep_model_forward(vc_build *b, vc_t t)
{
    if (t < 0 || b->st) return;
    if (b->nmdl_keep == (int)(sizeof b->mdl_keep / sizeof *b->mdl_keep)) {
        vc_refuse(b, NULL, "more than %d tensors kept to the base model's return", b->nmdl_keep);
        return;
    }
    b->mdl_keep[b->nmdl_keep++] = t;
}

vc_numel vc_numel_of(const vc_build *b, vc_t t) { return t >= 0 ? b->t[t].n : (vc_numel){0, 0, 0, 0}; }
vc_dtype vc_dt_of(const vc_build *b, vc_t t) { return t >= 0 ? (vc_dtype)b->t[t].dt : VC_DT_F32; }
bool vc_requires_grad(const vc_build *b, vc_t t) { return t >= 0 && b->t[t].rg; }
bool vc_contiguous(const vc_build *b, vc_t t) { return t < 0 || b->t[t].contig; }

void vc_hold(vc_build *b, vc_t t)
{
    if (t >= 0) b->t[t].held = true;
}
/* t's latest release point inside its producer's checkpoint region (tens_t.rrelease) */
static void note_region_release(vc_build *b, vc_t t, int32_t k)
{
    tens_t *x = &b->t[t];
    if (k >= 0 && x->op >= 0 && b->op[x->op].region >= 0 && b->op[k].region == b->op[x->op].region && k > x->rrelease)
        x->rrelease = k;
}

void vc_release(vc_build *b, vc_t t)
{
    if (t < 0) return;
    b->t[t].release = (int32_t)b->nop - 1;
    note_region_release(b, t, (int32_t)b->nop - 1);
}
void vc_persist(vc_build *b, vc_t t)
{
    if (t >= 0) b->t[t].persistent = true;
}

static item_t *add_item(vc_op *o, int type)
{
    vc_build *b = o->b;
    GROW(b->it, b->nit, b->cit, b);
    if (b->st) return NULL;
    item_t *it = &b->it[b->nit++];
    memset(it, 0, sizeof *it);
    it->type = (uint8_t)type;
    it->in = -1;
    it->t = -1;
    it->comp = -1;
    b->op[o->idx].nit++;
    return it;
}

vc_op *vc_op_begin(vc_build *b, const char *name)
{
    /* returned after an allocation failure: all calls no-op (one per thread: builds in
     * separate threads may fail at once) */
    static _Thread_local vc_op dead;
    if (b->st) { dead.b = b; dead.idx = -1; return &dead; }
    GROW(b->op, b->nop, b->cop, b);
    if (b->st) { dead.b = b; dead.idx = -1; return &dead; }
    op_t *op = &b->op[b->nop];
    memset(op, 0, sizeof *op);
    op->name = name;
    op->inst = b->cur_inst;
    op->region = b->cur_region;
    op->it0 = (int32_t)b->nit;
    vc_op *o = b->op_pool;
    if (o) b->op_pool = o->next;
    else if (!(o = malloc(sizeof *o))) { b->st = VC_ERR_NOMEM; dead.b = b; dead.idx = -1; return &dead; }
    o->b = b;
    o->idx = (int32_t)b->nop++;
    return o;
}

static bool live_op(vc_op *o) { return o->idx >= 0 && !o->b->st; }

static int op_input(vc_op *o, vc_t t, bool diff)
{
    if (!live_op(o) || t < 0) return -1;
    int idx = 0;
    for (int32_t i = 0; i < o->b->op[o->idx].nit; i++)
        if (op_items(o->b, o->idx)[i].type == IT_IN) idx++;
    item_t *it = add_item(o, IT_IN);
    if (!it) return -1;
    it->t = t;
    it->diff = diff;
    it->how = VC_GRAD_NEW;
    if (diff && o->b->t[t].rg && o->b->train) o->b->op[o->idx].rg = true;
    return idx;
}

int vc_op_in(vc_op *o, vc_t t) { return op_input(o, t, true); }
int vc_op_in_nodiff(vc_op *o, vc_t t) { return op_input(o, t, false); }

static item_t *find_in(vc_op *o, int in)
{
    if (!live_op(o)) return NULL;
    item_t *its = op_items(o->b, o->idx);
    int idx = 0;
    for (int32_t i = 0; i < o->b->op[o->idx].nit; i++)
        if (its[i].type == IT_IN && idx++ == in) return &its[i];
    return NULL;
}

void vc_op_grad(vc_op *o, int in, int how)
{
    item_t *it = find_in(o, in);
    if (it) it->how = (uint8_t)how;
}

void vc_op_grad_size(vc_op *o, int in, vc_numel n, vc_dtype dt)
{
    item_t *it = find_in(o, in);
    if (!it) return;
    it->in = 1;
    it->n = n;
    it->dt = (uint8_t)resolve(o->b, dt);
}

/* The gradient of input `in` is the incoming one summed over its leading
 * rows (the engine's sum_to in validate_outputs): a contiguous [rows, out]
 * reduced to [out] by a CUDA reduction, whose scratch (src/engine/scratch.c) lives
 * while it runs. */
void vc_op_grad_reduce_rows(vc_op *o, int in, vc_numel rows, int64_t out)
{
    item_t *it = find_in(o, in);
    if (!it) return;
    it->how = VC_GRAD_REDUCE;
    vc_build *b = o->b;
    if (rows.div > 1) return; /* a floor count: not a plain row count (no such caller) */
    GROW(b->comp, b->ncomp, b->ccomp, b);
    if (b->st) return;
    comp_t *k = &b->comp[b->ncomp];
    memset(k, 0, sizeof *k);
    vc_dtype dt = (vc_dtype)b->t[it->t].dt;
    k->red_in = (int8_t)vc_dtype_size(dt);
    k->rps = rows.ps;
    k->rfx = rows.fx;
    k->rout = out;
    it->comp = (int32_t)b->ncomp++;
}

void vc_op_grad_view(vc_op *o, int in)
{
    item_t *it = find_in(o, in);
    if (it) it->gview = 1;
}

vc_t vc_op_out(vc_op *o, vc_numel n, vc_dtype dt)
{
    if (!live_op(o)) return -1;
    vc_build *b = o->b;
    int32_t t = vc__new_tensor(b, n, dt);
    item_t *it = add_item(o, IT_OUT);
    if (t < 0 || !it) return -1;
    it->t = t;
    b->t[t].op = o->idx;
    b->t[t].rg = b->op[o->idx].rg;
    return t;
}

vc_t vc_op_out_view(vc_op *o, int in, vc_numel n, bool contiguous)
{
    item_t *src = find_in(o, in);
    if (!src) return -1;
    int32_t base = src->t;
    vc_t t = vc_op_out(o, n, (vc_dtype)o->b->t[base].dt);
    if (t < 0) return -1;
    o->b->t[t].base = base;
    o->b->t[t].contig = contiguous;
    return t;
}

static void sized_item(vc_op *o, int type, vc_numel n, vc_dtype dt)
{
    if (!live_op(o)) return;
    item_t *it = add_item(o, type);
    if (!it) return;
    it->n = n;
    it->dt = (uint8_t)resolve(o->b, dt);
}

/* ------------------------------------------------------ merged transients */

#define PART_BIG (INT64_C(1) << 60)

static int64_t part_mul(int64_t a, int64_t b)
{
    int64_t r;
    return (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > PART_BIG) ? PART_BIG : r;
}

/* One part's bytes at `batch`: layers/attention_int.h's former rbytes, the
 * caching allocator's 512-byte rounding of the part's own request */
static int64_t part_bytes(const part_t *p, int64_t batch)
{
    int64_t e = part_mul(p->ps, batch);
    e = e > PART_BIG - p->fx ? PART_BIG : e + p->fx;
    int64_t by = part_mul(part_mul(e / p->div, p->mul), p->dts);
    return by == 0 ? 0 : part_mul((by + 511) / 512, 512);
}

int64_t vc__comp_bytes(const vc_build *b, int32_t c, int64_t batch)
{
    const comp_t *k = &b->comp[c];
    if (k->red_in > 0) { /* a reduction's scratch (vc_op_grad_reduce_rows) */
        int64_t rows = part_mul(k->rps, batch);
        rows = rows > PART_BIG - k->rfx ? PART_BIG : rows + k->rfx;
        return vc_reduce_scratch(&b->o, k->rout, rows, false, k->red_in, 4);
    }
    int64_t sum[VC_MAX_PARTS] = {0}, best = 0;
    for (int32_t i = 0; i < k->np; i++) {
        const part_t *p = &b->part[k->p0 + i];
        if (__builtin_add_overflow(sum[p->alt], part_bytes(p, batch), &sum[p->alt])) sum[p->alt] = INT64_MAX - 511;
        if (sum[p->alt] > best) best = sum[p->alt];
    }
    return k->cap && best > PART_BIG ? PART_BIG : best;
}

int64_t vc__stor_bytes(const vc_build *b, int32_t s, int64_t batch)
{
    const stor_t *t = &b->s[s];
    if (t->comp < 0) return vc_bytes(t->n, (vc_dtype)t->dt, batch);
    return vc_bytes(vc_n_fixed(vc__comp_bytes(b, t->comp, batch)), VC_DT_U8, 1);
}

static void parts_item(vc_op *o, int type, const vc_part *p, int np, bool cap)
{
    if (!live_op(o) || np < 0 || np > VC_MAX_PARTS) return;
    vc_build *b = o->b;
    GROW(b->comp, b->ncomp, b->ccomp, b);
    if (!b->st && b->npart + VC_MAX_PARTS > b->cpart) {
        size_t nc = b->cpart * 2 + 64;
        part_t *np_ = realloc(b->part, nc * sizeof *np_);
        if (!np_) b->st = VC_ERR_NOMEM;
        else {
            b->part = np_;
            b->cpart = nc;
        }
    }
    item_t *it = b->st ? NULL : add_item(o, type);
    if (!it) return;
    comp_t *k = &b->comp[b->ncomp];
    memset(k, 0, sizeof *k);
    k->p0 = (int32_t)b->npart;
    k->np = 0;
    k->cap = cap;
    for (int i = 0; i < np; i++) {
        if (p[i].alt < 0 || p[i].alt >= VC_MAX_PARTS) continue;
        b->part[b->npart++] = (part_t){p[i].n.ps, p[i].n.fx, p[i].div > 0 ? p[i].div : 1, p[i].mul > 0 ? p[i].mul : 1,
                                       vc_dtype_size(resolve(b, p[i].dt)), p[i].alt};
        k->np++;
    }
    it->comp = (int32_t)b->ncomp++;
    it->dt = VC_DT_U8;
    it->n = vc_n_fixed(vc__comp_bytes(b, it->comp, b->batch)); /* its size at this batch, for any reader of n */
}

void vc_op_ftemp_parts(vc_op *o, const vc_part *p, int np, bool cap) { parts_item(o, IT_FTEMP, p, np, cap); }
void vc_op_btemp_parts(vc_op *o, const vc_part *p, int np, bool cap) { parts_item(o, IT_BTEMP, p, np, cap); }

void vc_op_extra(vc_op *o, vc_numel n, vc_dtype dt) { sized_item(o, IT_EXTRA, n, dt); }
void vc_op_ftemp(vc_op *o, vc_numel n, vc_dtype dt) { sized_item(o, IT_FTEMP, n, dt); }
void vc_op_btemp(vc_op *o, vc_numel n, vc_dtype dt) { sized_item(o, IT_BTEMP, n, dt); }

void vc_op_btemp_held(vc_op *o, vc_numel n, vc_dtype dt)
{
    if (!live_op(o)) return;
    sized_item(o, IT_BTEMP, n, dt);
    if (!o->b->st) o->b->it[o->b->nit - 1].in = 1; /* autograd.c run_temps: held until the op's last temporary */
}

void vc_op_extra_grad(vc_op *o, int in, vc_numel n, vc_dtype dt)
{
    item_t *src = find_in(o, in);
    if (!src) return;
    src->how = VC_GRAD_SAVED;
    sized_item(o, IT_EXTRA, n, dt);
    if (!o->b->st) o->b->it[o->b->nit - 1].in = (int16_t)in;
}

int vc_op_ftemp_keep(vc_op *o, vc_numel n, vc_dtype dt)
{
    if (!live_op(o)) return -1;
    sized_item(o, IT_FTEMP, n, dt);
    if (o->b->st) return -1;
    o->b->it[o->b->nit - 1].in = 2;
    return o->b->op[o->idx].nit - 1;
}

void vc_op_ftemp_free(vc_op *o, int handle)
{
    if (!live_op(o) || handle < 0) return;
    item_t *it = add_item(o, IT_FFREE);
    if (it) it->t = handle;
}

void vc_op_weight_temps(vc_op *o, vc_t w, vc_numel rows)
{
    if (!live_op(o) || w < 0 || o->b->t[w].param < 0) return;
    vc_build *b = o->b;
    const vc_model *m = b->m;
    const vc_param_entry *p = &m->par[b->t[w].param];
    const vc_weight_row *r = vc_weight_row_get((vc_weights)p->fmt);
    vc_qtemp f[VC_QUANT_MAX], k[VC_QUANT_MAX];
    int nf = 0, nk = 0;
    if (!r->temps) return;
    r->temps(p, vc__model_quant(m), (vc_dtype)b->t[w].dt, rows, f, &nf, k, &nk);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < (pass ? nk : nf); i++) {
            const vc_qtemp *q = pass ? &k[i] : &f[i];
            item_t *it = add_item(o, pass ? IT_BTEMP : IT_FTEMP);
            if (!it) return;
            it->n = q->t.n;
            it->dt = q->t.dt;
            it->in = q->held ? 1 : -1; /* held: freed with the op's other temporaries (run_temps) */
        }
}

int vc_weight_format(const vc_build *b, vc_t w)
{
    return w < 0 || b->t[w].param < 0 ? VC_WEIGHTS_DENSE : b->m->par[b->t[w].param].fmt;
}

int vc_weight_lora_style(const vc_build *b, vc_t w)
{
    if (w < 0 || b->t[w].param < 0) return VC_LORA_LINEAR;
    return vc_weight_row_get((vc_weights)b->m->par[b->t[w].param].fmt)->lora;
}

void vc_op_save_if(vc_op *o, vc_t t, int in)
{
    if (!live_op(o) || t < 0) return;
    item_t *it = add_item(o, IT_SAVE);
    if (!it) return;
    it->t = t;
    it->in = (int16_t)in;
}
void vc_op_save(vc_op *o, vc_t t) { vc_op_save_if(o, t, -1); }

void vc_op_leaf_grad(vc_op *o)
{
    if (live_op(o) && o->b->train) o->b->op[o->idx].rg = o->b->op[o->idx].leaf = true;
}

bool vc_peft_input_grads(const vc_build *b)
{
    const vc_model *m = b->m;
    return b->train && (m->nlora > 0 || m->nsaved > 0) && m->nregions > 0 && m->hf.ckpt_every <= 1 && !b->o.ckpt_ops &&
           (m->gen_json || m->hf_part);
}

bool vc_input_is_model_input(const vc_build *b, int i)
{
    const vc_inst *in = cur(b);
    return i >= 0 && i < in->nin && b->m->val[in->in[i]].producer < 0;
}

void vc_op_gemm(vc_op *o)
{
    if (live_op(o)) o->b->op[o->idx].gemm = true;
}

void vc_op_gemm_lt(vc_op *o)
{
    if (live_op(o)) o->b->op[o->idx].gemm = o->b->op[o->idx].lt = true;
}

void vc_op_end(vc_op *o)
{
    if (o->idx < 0) return;
    o->next = o->b->op_pool;
    o->b->op_pool = o;
}

/* The autocast weight cache (ops.c): one cast copy per parameter per forward. */
int32_t *vc__amp_cache(vc_build *b, vc_t w)
{
    return (w >= 0 && b->t[w].param >= 0) ? &b->amp_cache[b->t[w].param] : NULL;
}

void vc_batch_range(vc_build *b, int64_t lo, int64_t hi)
{
    if (lo > b->batch || hi < b->batch) lo = hi = b->batch; /* a range without this batch: only this one is known */
    if (lo > b->blo) b->blo = lo;
    if (hi < b->bhi) b->bhi = hi;
}

void vc_batch_dependent(vc_build *b) { vc_batch_range(b, b->batch, b->batch); }

bool vc_batch_is_one(vc_build *b)
{
    bool one = b->batch == 1;
    vc_batch_range(b, one ? 1 : 2, one ? 1 : VC_BATCH_ANY);
    return one;
}

void vc_note(vc_build *b, const char *s)
{
    if (!b->note[0]) snprintf(b->note, sizeof b->note, "%s: %s", cur(b)->path, s);
}

/* ------------------------------------------------------------ the graph */

/* Keeps t's Python reference until the last op recorded so far. */
void vc__extend_life(vc_build *b, vc_t t)
{
    if (t >= 0 && b->nop > 0 && b->t[t].release < (int32_t)b->nop - 1) b->t[t].release = (int32_t)b->nop - 1;
    if (t >= 0 && b->nop > 0) note_region_release(b, t, (int32_t)b->nop - 1);
}

