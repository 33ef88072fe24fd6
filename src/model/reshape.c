/*
 * reshape.c — a config.json's model at another sequence length, without
 * loading it again (the --max-seq search's probes, src/engine/maxseq.c).
 *
 * vc__model_load_seq loads m's text again at seq tokens: the config parsed,
 * its model tree built (vc_hf_build), printed, every layer's fields parsed
 * and every instance set up. When the tree built at seq differs from m's only
 * in its "name" and its input's length (the layers' fields do not depend on
 * the length: hf.c writes the length into the input shape alone), that load
 * is m's instances, values, parameters and buffers with the input [seq]: the
 * instances' setups run again, in order, on the new shapes (vc__instantiate's
 * setup call and its checks), over copies of m's parsed fields. Whatever the
 * loader checks that depends on a shape is checked again (each setup, the
 * output shapes' limits, the ops limit, repeat's "output shape equals input
 * shape"); the parameters and buffers must come out as m's. Anything else, or
 * any check that fails, and the probe is the full load, whose model or error
 * is the answer. test_reshape compares the two loads of every config in
 * tests/data/hf field by field and estimate by estimate.
 *
 * generate()'s twins (vc__twin_reshape, two per estimate) read m's tree once
 * per load (issue 28): whether the tree m's text builds at m's options is the
 * text m->gen_json prints, and the name and "loss_chunks" reshape reads of
 * it, do not depend on the length, so they are kept in m (vc_model.twin_facts,
 * emptied by every reload) instead of parsing, building and printing the tree
 * for every twin; and a length asked for again (the one-token twin, once per
 * estimate of the --max-context search) is kept from its second reshape and
 * copied from the third time on (clone_twin: its tables and its layers'
 * parsed fields, the setups not run again). On llama-3.1-8b's --max-context
 * job (bench/speed/jobs.py) 394.8 -> 366.2 M instructions.
 */
#include <stdlib.h>
#include <string.h>

#include "hf.h"
#include "load.h"
#include "util.h"

/* What reshape reads from a tree: its "name" (0 none, 1 a string: name, -1 another type) and whether it has
 * "loss_chunks" */
typedef struct {
    int name_kind;
    const char *name;
    bool loss_chunks;
} tree_facts;

static tree_facts facts_of(const cJSON *g)
{
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(g, "name");
    tree_facts f = {nm ? (cJSON_IsString(nm) ? 1 : -1) : 0, nm && cJSON_IsString(nm) ? nm->valuestring : NULL,
                    cJSON_GetObjectItemCaseSensitive(g, "loss_chunks") != NULL};
    return f;
}

/* vc_model.twin_facts: vc__twin_reshape's reading of the tree m's text builds at m's options (json read,
 * vc_hf_build, cJSON_Print compared with m->gen_json): the same for every length, so read once per load. Only
 * plain data (the tree itself is not kept: cJSON's allocator may be a request's arena, vc_request_set_json_arena) */
struct vc_twin_facts {
    const vc_model *owner; /* the struct it was made for: a copy of the struct (other options) does not use it */
    bool done;             /* read: ok and f hold */
    bool ok;               /* the tree's text is m->gen_json (else every twin is loaded) */
    tree_facts f;          /* f.name malloc'd */
    /* a twin asked for again at a length (generate()'s one-token twin, one per estimate: the --max-context
     * search's 30 estimates) is kept and cloned (clone_twin) from the third time on: */
    int64_t asked[2];      /* the last two lengths asked */
    vc_model *hot;         /* the twin kept, at hot_seq tokens, NULL */
    int64_t hot_seq;
};

struct vc_twin_facts *vc__twin_facts_new(const vc_model *m)
{
    struct vc_twin_facts *t = calloc(1, sizeof *t);
    if (t) t->owner = m;
    return t;
}

void vc__twin_facts_clear(vc_model *m)
{
    struct vc_twin_facts *t = m->twin_facts;
    if (!t || t->owner != m) return;
    free((char *)t->f.name);
    memset(&t->f, 0, sizeof t->f);
    t->done = t->ok = false;
    vc_model_free(t->hot);
    t->hot = NULL;
    t->hot_seq = t->asked[0] = t->asked[1] = 0;
}

void vc__twin_facts_free(vc_model *m)
{
    vc__twin_facts_clear(m);
    if (m->twin_facts && m->twin_facts->owner == m) free(m->twin_facts);
    m->twin_facts = NULL;
}

struct vc_seq_probe {
    const vc_model *m;
    cJSON *cfg; /* m's config.json, parsed (vc__json_read) */
    cJSON *gen; /* ... and the tree m was loaded from (vc_hf_build at m's options) */
    bool on;    /* probes are m reshaped when their tree allows it */
};

/* a and b are the same JSON: types, keys in order, numbers and strings exactly */
static bool same_json(const cJSON *a, const cJSON *b)
{
    if ((a->type & 0xFF) != (b->type & 0xFF)) return false;
    if (cJSON_IsNumber(a)) return a->valuedouble == b->valuedouble && a->valueint == b->valueint;
    if (cJSON_IsString(a) || cJSON_IsRaw(a)) return a->valuestring && b->valuestring && !strcmp(a->valuestring, b->valuestring);
    if (!cJSON_IsArray(a) && !cJSON_IsObject(a)) return true;
    const cJSON *x = a->child, *y = b->child;
    for (; x && y; x = x->next, y = y->next)
        if ((cJSON_IsObject(a) && (!x->string || !y->string || strcmp(x->string, y->string))) || !same_json(x, y)) return false;
    return !x && !y;
}

/* The length of a one-dimensional input {"shape": [N], ...}: N, else 0. */
static int64_t input_length(const cJSON *in)
{
    const cJSON *sh = cJSON_IsObject(in) ? cJSON_GetObjectItemCaseSensitive(in, "shape") : NULL;
    int64_t d;
    if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != 1 || vc__json_int(sh->child, &d) || d < 1 || d > VC_MAX_DIM_SIZE) return 0;
    return d;
}

/* the tree g is ref but for its "name" and its input's length: that length, else 0 */
static int64_t same_but_length(const cJSON *ref, const cJSON *g)
{
    if (!cJSON_IsObject(ref) || !cJSON_IsObject(g)) return 0;
    int64_t len = 0;
    const cJSON *x = ref->child, *y = g->child;
    for (; x && y; x = x->next, y = y->next) {
        if (!x->string || !y->string || strcmp(x->string, y->string)) return 0;
        if (!strcmp(x->string, "name")) {
            if (!cJSON_IsString(x) || !cJSON_IsString(y)) return 0;
        } else if (!strcmp(x->string, "input")) {
            if (!cJSON_IsObject(x) || !cJSON_IsObject(y) || len) return 0;
            const cJSON *u = x->child, *v = y->child;
            for (; u && v; u = u->next, v = v->next)
                if (!u->string || !v->string || strcmp(u->string, v->string) || (strcmp(u->string, "shape") && !same_json(u, v)))
                    return 0;
            if (u || v || !input_length(x) || !(len = input_length(y))) return 0;
        } else if (!same_json(x, y)) {
            return 0;
        }
    }
    return x || y ? 0 : len;
}

/* Whether repeat's shape checks (load.c load_layer, load_block) hold in m: the instances of one layer's
 * copies (they share its parsed fields) keep their input's shape, and so does each copy of a block
 * (blk_val[i], the copy's input, against its last instance's output). */
static bool repeats_keep_shape(const vc_model *m)
{
    for (size_t i = 0; i < m->ninst; i++) {
        const vc_inst *in = &m->inst[i];
        bool copy = (i > 0 && m->inst[i - 1].cfg == in->cfg) || (i + 1 < m->ninst && m->inst[i + 1].cfg == in->cfg);
        if (copy && (in->nin < 1 || !vc_shape_eq(&m->val[in->out].shape, &m->val[in->in[0]].shape))) return false;
    }
    for (size_t i = 0; i < m->nblk; i++)
        if (m->blk_last[i] < 0 || !vc_shape_eq(&m->val[m->inst[m->blk_last[i]].out].shape, &m->val[m->blk_val[i]].shape))
            return false;
    return true;
}

vc_status vc__seq_probe_new(const vc_model *m, vc_seq_probe **out, vc_error *err)
{
    *out = NULL;
    vc_seq_probe *p = calloc(1, sizeof *p);
    if (!p) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    p->m = m;
    *out = p;
    /* a model of one input [N] from a config.json, as loaded (no --input, not a part or a decoding twin) */
    if (!m->gen_json || !m->text || m->has_override || m->stage.on || m->hf_part || m->image_decode || m->ninputs != 1 ||
        m->val[0].shape.nd != 1 || !repeats_keep_shape(m))
        return VC_OK;
    const char *at;
    char msg[300];
    long values = 0;
    if (vc__json_read(m->text, m->text_len, &p->cfg, &at, msg, sizeof msg, &values) || !p->cfg) return VC_OK;
    vc_error tmp;
    vc_error_clear(&tmp);
    if (!vc_hf_is_config(p->cfg) || vc_hf_build(p->cfg, &m->hf, vc__load_split(m), &m->tf, &p->gen, &tmp) != VC_OK) return VC_OK;
    /* the tree m was loaded from: its input is m's */
    p->on = cJSON_IsObject(p->gen) && input_length(cJSON_GetObjectItemCaseSensitive(p->gen, "input")) == m->val[0].shape.d[0];
    return VC_OK;
}

void vc__seq_probe_free(vc_seq_probe *p)
{
    if (!p) return;
    if (p->cfg) vc__json_free(p->cfg);
    cJSON_Delete(p->gen);
    free(p);
}

/* a malloc'd copy of n elements of size sz (NULL for none), *ok false when out of memory */
static void *dup_array(const void *a, size_t n, size_t sz, bool *ok)
{
    if (!n || !a) return NULL;
    void *d = malloc(n * sz);
    if (!d) *ok = false;
    else memcpy(d, a, n * sz);
    return d;
}

/* A copy of the model src that owns its tables, arena, text and generated text (m's names, paths and index
 * lists borrowed): NULL when out of memory */
static vc_model *copy_of(const vc_model *m)
{
    vc_model *c = malloc(sizeof *c);
    if (!c) return NULL;
    *c = *m;
    /* what this model owns (vc_model_free), copied; the rest is m's (in m's arena): names, paths, index lists */
    bool ok = true;
    c->inst = dup_array(m->inst, m->ninst, sizeof *m->inst, &ok);
    c->val = dup_array(m->val, m->nval, sizeof *m->val, &ok);
    c->par = dup_array(m->par, m->npar, sizeof *m->par, &ok);
    c->buf = dup_array(m->buf, m->nbuf, sizeof *m->buf, &ok);
    c->blk_val = dup_array(m->blk_val, m->nblk, sizeof *m->blk_val, &ok);
    c->blk_last = dup_array(m->blk_last, m->nblk, sizeof *m->blk_last, &ok);
    c->hold_val = dup_array(m->hold_val, m->nhold, sizeof *m->hold_val, &ok);
    c->hold_last = dup_array(m->hold_last, m->nhold, sizeof *m->hold_last, &ok);
    c->cap_inst = m->ninst;
    c->cap_val = m->nval;
    c->cap_par = m->npar;
    c->cap_buf = m->nbuf;
    c->cap_blk = m->nblk;
    c->cap_hold = m->nhold;
    c->split = NULL;
    c->twin_facts = NULL; /* m's (its owner's) */
    c->text = NULL;
    c->gen_json = NULL;
    c->arena = vc_arena_new();
    if (c->arena) c->text = malloc(m->text_len + 1);
    if (c->text) memcpy(c->text, m->text, m->text_len + 1);
    /* the generated text of m's options: only its name and input differ (vc_model_generated_json) */
    if (c->text) c->gen_json = strdup(m->gen_json);
    if (!ok || !c->gen_json) {
        vc_model_free(c);
        return NULL;
    }
    return c;
}

/* Instance in of c given its own copy of its parsed fields (copied into c's arena; a run of instances sharing
 * theirs, a repeat's copies, shares one copy: *old_cfg and *new_cfg the run's): false when out of memory */
static bool own_cfg(vc_model *c, vc_inst *in, const void **old_cfg, void **new_cfg)
{
    if (in->cfg != *old_cfg) {
        size_t n = in->kind->cfg_size ? in->kind->cfg_size : 1;
        *old_cfg = in->cfg;
        if (!(*new_cfg = vc_arena_alloc(c->arena, n))) return false;
        memcpy(*new_cfg, *old_cfg, n);
    }
    in->cfg = *new_cfg;
    return true;
}

/* m at the input [len], what its tree says (facts_of; same_but_length): VC_OK with *out, or any error (the caller loads it).
 * twin: as vc__model_twin loads it (its input replaced by [len], m's options and adapters as they are), else
 * as vc__model_load_seq does (the options hf, the adapters only when on). */
static vc_status reshape(const vc_model *m, const tree_facts *g, int64_t len, const vc_hf_options *hf, bool twin, vc_model **out)
{
    *out = NULL;
    vc_model *c = copy_of(m);
    if (!c) return VC_ERR_NOMEM;
    /* as vc__model_load_seq's load_text sets them */
    c->hf = *hf;
    c->has_override = twin;
    if (twin) c->override = vc_shape_make(1, &len);
    else memset(&c->override, 0, sizeof c->override);
    if (!twin && !vc__peft_on(&m->lora)) memset(&c->lora, 0, sizeof c->lora);
    c->hf_part = false;
    c->image_decode = false;
    /* what a fresh load leaves where the tree says nothing (reset_model, which m may have been through, sets
     * other defaults): the fused loss's head and chunked_ce's chunks */
    if (!vc_loss_row_get(c->loss)->fused) c->loss_head = 0;
    if (!g->loss_chunks) c->loss_chunks = 0;
    /* the name, as vc__load escapes it (none: "", not a string: its error, from the load) */
    const char *name = g->name_kind > 0 ? g->name : "";
    size_t nlen = strlen(name), nb = (nlen < 1024 ? nlen : 1024) * 4 + 1;
    if (g->name_kind < 0 || !(c->name = vc_arena_alloc(c->arena, nb))) {
        vc_model_free(c);
        return g->name_kind < 0 ? VC_ERR_MODEL : VC_ERR_NOMEM;
    }
    vc_escape(c->name, nb, name);

    c->val[0].shape = vc_shape_make(1, &len);
    vc_error tmp;
    vc_error_clear(&tmp);
    struct vc_setup_priv priv;
    const vc_peft_row *pr = vc_peft_row_get(c->lora.method);
    const bool on = vc__peft_on(&c->lora);
    const void *old_cfg = NULL;
    void *new_cfg = NULL;
    int64_t ops = 0;
    int nmoe = 0;
    vc_status st = VC_OK;
    for (size_t i = 0; i < c->ninst && !st; i++) {
        vc_inst *in = &c->inst[i];
        const vc_kind *k = in->kind;
        /* the parsed fields, copied (a repeat's copies share theirs): setup may write into them */
        if (!own_cfg(c, in, &old_cfg, &new_cfg)) {
            st = VC_ERR_NOMEM;
            break;
        }
        vc_shape shapes[VC_MAX_INPUTS];
        vc_dtype dts[VC_MAX_INPUTS];
        for (int j = 0; j < in->nin; j++) {
            shapes[j] = c->val[in->in[j]].shape;
            dts[j] = c->val[in->in[j]].dt;
        }
        /* vc__instantiate's adapters and copies, by the layer's name */
        priv.err = &tmp;
        priv.path = in->path;
        priv.np = priv.nb = 0;
        bool copy = on && (vc__peft_match(in->name, c->lora.modules_to_save) || (pr->copy && vc__peft_match(in->name, c->lora.targets)));
        const vc_lora *lora = !copy && on && (pr->lora || pr->ia3) && (k->flags & VC_KIND_LORA) && vc__peft_match(in->name, c->lora.targets)
                            ? &c->lora : NULL;
        bool ff = lora && lora->method == VC_PEFT_IA3 && vc__ia3_feedforward(c->ia3_feedforward, in->name);
        vc_setup s = {in->nin, shapes, dts, {0, {0}}, VC_DT_FLOAT, lora, &priv, c->ep > 1 ? c->ep : 1, false, ff};
        s.ops = k->ops;
        if (k->setup(&s, in->cfg) || s.ops < 0 || __builtin_add_overflow(ops, s.ops, &ops) || ops > VC_MAX_PLAN_OPS ||
            s.out.nd < 1 || s.out.nd > VC_MAX_DIMS || s.out_dt != c->val[in->out].dt || priv.nb != in->nb ||
            priv.np * (copy ? 2 : 1) != in->np) {
            st = VC_ERR_MODEL;
            break;
        }
        for (int j = 0; j < s.out.nd; j++)
            if (s.out.d[j] < 1 || s.out.d[j] > VC_MAX_DIM_SIZE) st = VC_ERR_MODEL;
        int64_t numel = vc_shape_numel(&s.out);
        if (numel < 0 || numel > (INT64_C(1) << 56)) st = VC_ERR_MODEL;
        /* the parameters and buffers m has: the same shapes, names and flags */
        for (int j = 0; j < priv.np && !st; j++) {
            const vc_param_entry *p = &c->par[in->params[j]];
            if (p->numel != priv.pn[j] || p->nd != priv.pnd[j] || memcmp(p->dims, priv.pdims[j], (size_t)p->nd * sizeof *p->dims) ||
                (p->owner == (int)i && (strcmp(p->name, priv.pname[j]) || ((p->flags ^ priv.pflags[j]) & ~(unsigned)VC_PARAM_PINNED))))
                st = VC_ERR_MODEL;
        }
        for (int j = 0; j < priv.nb && !st; j++)
            if (c->buf[in->bufs[j]].numel != priv.bn[j] || c->buf[in->bufs[j]].dt != priv.bdt[j]) st = VC_ERR_MODEL;
        nmoe += s.ep_used;
        c->val[in->out].shape = s.out;
    }
    if (!st && (nmoe != c->nmoe || !repeats_keep_shape(c))) st = VC_ERR_MODEL;
    const vc_loss_row *lr = vc_loss_row_get(c->loss);
    if (!st && lr->classes && c->val[c->output].shape.nd < 1) st = VC_ERR_MODEL;
    if (st) {
        vc_model_free(c);
        return st;
    }
    *out = c;
    return VC_OK;
}

/* A twin t (reshape's, twin true) again: its tables copied and its layers' parsed fields copied into the new
 * model's arena (as reshape copies them: one copy per run of instances sharing theirs), its setups not run
 * again (they ran on the same shapes in t) */
static vc_model *clone_twin(const vc_model *t)
{
    vc_model *c = copy_of(t);
    if (!c) return NULL;
    size_t nb = strlen(t->name) + 1;
    bool ok = (c->name = vc_arena_take(c->arena, nb)) != NULL;
    if (ok) memcpy(c->name, t->name, nb);
    const void *old_cfg = NULL;
    void *new_cfg = NULL;
    for (size_t i = 0; ok && i < c->ninst; i++) ok = own_cfg(c, &c->inst[i], &old_cfg, &new_cfg);
    if (!ok) {
        vc_model_free(c);
        return NULL;
    }
    return c;
}

vc_status vc__seq_probe_load(vc_seq_probe *p, int64_t seq, vc_model **out, vc_error *err)
{
    *out = NULL;
    const vc_model *m = p->m;
    if (p->on) {
        vc_hf_options hf = m->hf;
        hf.seq = seq;
        cJSON *g = NULL;
        vc_error tmp;
        vc_error_clear(&tmp);
        if (vc_hf_build(p->cfg, &hf, vc__load_split(m), &m->tf, &g, &tmp) == VC_OK) {
            int64_t len = same_but_length(p->gen, g);
            tree_facts f = facts_of(g);
            vc_status st = len ? reshape(m, &f, len, &hf, false, out) : VC_ERR_MODEL;
            cJSON_Delete(g);
            if (st == VC_OK) return VC_OK;
        }
    }
    return vc__model_load_seq(m, seq, out, err); /* the load, or its error */
}

vc_status vc__twin_reshape(const vc_model *m, int64_t seq, vc_model **out)
{
    *out = NULL;
    if (!m->gen_json || !m->text || m->has_override || m->stage.on || m->hf_part || m->image_decode || m->ninputs != 1 ||
        m->val[0].shape.nd != 1 || seq < 1 || seq > VC_MAX_DIM_SIZE || !repeats_keep_shape(m))
        return VC_ERR_MODEL;
    /* the tree read by an earlier twin of this load (m's own facts: not a copy of its struct) */
    struct vc_twin_facts *kept = m->twin_facts && m->twin_facts->owner == m ? m->twin_facts : NULL;
    if (kept && kept->done) {
        if (!kept->ok) return VC_ERR_MODEL;
        if (kept->hot && kept->hot_seq == seq) return (*out = clone_twin(kept->hot)) ? VC_OK : VC_ERR_NOMEM;
        vc_status st = reshape(m, &kept->f, seq, &m->hf, true, out);
        /* asked before: kept (a clone of it) for the next time */
        if (st == VC_OK && (kept->asked[0] == seq || kept->asked[1] == seq)) {
            vc_model *h = clone_twin(*out);
            if (h) {
                vc_model_free(kept->hot);
                kept->hot = h;
                kept->hot_seq = seq;
            }
        }
        kept->asked[1] = kept->asked[0];
        kept->asked[0] = seq;
        return st;
    }
    const char *at;
    char msg[300];
    long values = 0;
    cJSON *cfg = NULL, *g = NULL;
    if (vc__json_read(m->text, m->text_len, &cfg, &at, msg, sizeof msg, &values)) return VC_ERR_MODEL;
    if (!cfg) return VC_ERR_NOMEM;
    vc_error tmp;
    vc_error_clear(&tmp);
    vc_status st = vc_hf_is_config(cfg) ? vc_hf_build(cfg, &m->hf, vc__load_split(m), &m->tf, &g, &tmp) : VC_ERR_MODEL;
    vc__json_free(cfg);
    /* m's instances are the tree of its options (every reload builds it again); the twin's is that tree too,
     * as m->gen_json prints it when that text is still the tree's (a caller may pass m's struct with other
     * options: then the texts differ) */
    char *t = st ? NULL : cJSON_Print(g);
    bool nomem = !st && !t;
    if (!st && (!t || strcmp(t, m->gen_json))) st = VC_ERR_MODEL;
    cJSON_free(t);
    tree_facts f = facts_of(g);
    /* kept for the next twins: whether the tree is m's, and what reshape reads of it (an out-of-memory is not
     * kept: the next twin reads the tree again) */
    if (kept && !nomem && (st == VC_OK || st == VC_ERR_MODEL)) {
        char *name = f.name_kind > 0 ? strdup(f.name) : NULL;
        if (f.name_kind <= 0 || name) {
            kept->done = true;
            kept->ok = st == VC_OK;
            kept->f = f;
            kept->f.name = name;
        }
    }
    if (!st) st = reshape(m, &f, seq, &m->hf, true, out);
    cJSON_Delete(g);
    return st;
}

vc_status vc__seq_probe_json(vc_seq_probe *p, vc_model *c)
{
    const vc_model *m = p->m;
    /* a load's text is its own; a reshape's is m's (an equal text at another length: rebuilt) */
    if (!p->on || !c->gen_json || !m->gen_json || strcmp(c->gen_json, m->gen_json)) return VC_OK;
    cJSON *g = NULL;
    vc_error tmp;
    vc_error_clear(&tmp);
    /* vc__load's text: the tree vc_hf_build makes at c's options (those reshape gave c: m's, at c's length), printed */
    vc_status st = vc_hf_build(p->cfg, &c->hf, vc__load_split(c), &m->tf, &g, &tmp);
    char *t = st ? NULL : cJSON_Print(g);
    char *s = t ? strdup(t) : NULL;
    cJSON_free(t);
    cJSON_Delete(g);
    if (st) return st;
    if (!s) return VC_ERR_NOMEM;
    free(c->gen_json);
    c->gen_json = s;
    return VC_OK;
}
