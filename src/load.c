/*
 * load.c — model files: JSON -> validated, shape-checked instances.
 *
 * The loader owns everything about the file format that is not a layer
 * kind's own fields: the model keys, scopes and names, `inputs`, `repeat`,
 * `frozen`, `checkpoint`, `tie`, Sequential, and every error's JSON path.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model.h"
#include "util.h"

/* ------------------------------------------------------ JSON value helpers */

#define MAX_EXACT 9007199254740992.0 /* 2^53 */

static void describe(const cJSON *v, char *buf, size_t n)
{
    if (!v) snprintf(buf, n, "nothing");
    else if (cJSON_IsNumber(v)) snprintf(buf, n, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v)) snprintf(buf, n, "\"%.40s%s\"", v->valuestring, strlen(v->valuestring) > 40 ? "..." : "");
    else if (cJSON_IsBool(v)) snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v)) snprintf(buf, n, "null");
    else if (cJSON_IsArray(v)) snprintf(buf, n, "a list");
    else if (cJSON_IsObject(v)) snprintf(buf, n, "an object");
    else snprintf(buf, n, "an invalid value");
}

/* An exact integer: 0 ok, -1 not a number / not integral / beyond 2^53. */
static int json_int(const cJSON *v, int64_t *out)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || fabs(d) > MAX_EXACT) return -1;
    *out = (int64_t)d;
    return 0;
}

static const char *int_expect(int64_t min)
{
    return min >= 1 ? "a positive integer" : min == 0 ? "a non-negative integer" : "an integer";
}

/* ------------------------------------------------------------------ vc_args */

#define MAX_KNOWN 48

struct vc_args {
    const cJSON *obj;
    vc_error *err;
    const char *path;   /* the layer's JSON path */
    const char *kind;
    const char *known[MAX_KNOWN];
    int nknown;
};

static void known(vc_args *a, const char *key)
{
    for (int i = 0; i < a->nknown; i++)
        if (!strcmp(a->known[i], key)) return;
    if (a->nknown < MAX_KNOWN) a->known[a->nknown++] = key;
}

void vc_arg_known(vc_args *a, const char *key) { known(a, key); }

static int arg_failv(vc_args *a, const char *key, const char *fmt, va_list ap)
{
    char path[256], msg[400];
    if (key) snprintf(path, sizeof path, "%s.%s", a->path, key);
    else snprintf(path, sizeof path, "%s", a->path);
    vsnprintf(msg, sizeof msg, fmt, ap);
    vc_set_error(a->err, VC_ERR_MODEL, path, "%s", msg);
    return -1;
}

int vc_arg_fail(vc_args *a, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    arg_failv(a, key, fmt, ap);
    va_end(ap);
    return -1;
}

static const cJSON *get(vc_args *a, const char *key)
{
    known(a, key);
    return cJSON_GetObjectItemCaseSensitive(a->obj, key);
}

int vc_arg_type(vc_args *a, const char *key)
{
    const cJSON *v = get(a, key);
    if (!v) return 0;
    if (cJSON_IsNumber(v)) return 1;
    if (cJSON_IsString(v)) return 2;
    if (cJSON_IsArray(v)) return 3;
    if (cJSON_IsBool(v)) return 4;
    if (cJSON_IsNull(v)) return 5;
    return 6;
}

static int one_int(vc_args *a, const char *key, const cJSON *v, int64_t min, int64_t *out)
{
    char got[80];
    int64_t x;
    if (json_int(v, &x) || x < min) {
        describe(v, got, sizeof got);
        if (cJSON_IsNumber(v) && fabs(v->valuedouble) > MAX_EXACT && v->valuedouble == floor(v->valuedouble))
            return vc_arg_fail(a, key, "expected %s of at most 2^53, got %s", int_expect(min), got);
        return vc_arg_fail(a, key, "expected %s, got %s", int_expect(min), got);
    }
    if (x > VC_MAX_DIM_SIZE) return vc_arg_fail(a, key, "%lld is larger than the limit 2^40", (long long)x);
    *out = x;
    return 0;
}

int vc_arg_int(vc_args *a, const char *key, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        if (def == VC_REQUIRED) return vc_arg_fail(a, key, "missing (%s is required for %s)", int_expect(min), a->kind);
        *out = def;
        return 0;
    }
    return one_int(a, key, v, min, out);
}

int vc_arg_ints(vc_args *a, const char *key, int n, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        if (def == VC_REQUIRED) return vc_arg_fail(a, key, "missing (required for %s)", a->kind);
        for (int i = 0; i < n; i++) out[i] = def;
        return 0;
    }
    if (!cJSON_IsArray(v)) {
        int64_t x;
        if (one_int(a, key, v, min, &x)) return -1;
        for (int i = 0; i < n; i++) out[i] = x;
        return 0;
    }
    int len = cJSON_GetArraySize(v);
    if (len != n) return vc_arg_fail(a, key, "expected %s or a list of %d, got a list of %d", int_expect(min), n, len);
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char k[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        if (one_int(a, k, e, min, &out[i])) return -1;
    }
    return 0;
}

int vc_arg_list(vc_args *a, const char *key, bool required, int64_t min, int64_t *out, int *n)
{
    const cJSON *v = get(a, key);
    *n = 0;
    if (!v) return required ? vc_arg_fail(a, key, "missing (a list of integers is required for %s)", a->kind) : 0;
    if (!cJSON_IsArray(v)) {
        char got[80];
        describe(v, got, sizeof got);
        return vc_arg_fail(a, key, "expected a list of integers, got %s", got);
    }
    int len = cJSON_GetArraySize(v);
    if (len < 1 || len > VC_MAX_DIMS)
        return vc_arg_fail(a, key, "expected a list of 1 to %d integers, got %d", VC_MAX_DIMS, len);
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char k[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        if (one_int(a, k, e, min, &out[i])) return -1;
    }
    *n = len;
    return 0;
}

int vc_arg_bool(vc_args *a, const char *key, bool def, bool *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) {
        char got[80];
        describe(v, got, sizeof got);
        return vc_arg_fail(a, key, "expected true or false, got %s", got);
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

int vc_arg_float(vc_args *a, const char *key, double def, double min, double max, double *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < min || v->valuedouble > max) {
        char got[80];
        describe(v, got, sizeof got);
        return vc_arg_fail(a, key, "expected a number from %g to %g, got %s", min, max, got);
    }
    *out = v->valuedouble;
    return 0;
}

int vc_arg_enum(vc_args *a, const char *key, const char *const *choices, int def, int *out)
{
    const cJSON *v = get(a, key);
    if (!v) {
        if (def < 0) return vc_arg_fail(a, key, "missing (required for %s)", a->kind);
        *out = def;
        return 0;
    }
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; choices[i]; i++) {
        if (cJSON_IsString(v) && !strcmp(v->valuestring, choices[i])) {
            *out = i;
            return 0;
        }
        used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, "%s\"%s\"",
                                 i ? ", " : "", choices[i]);
    }
    char got[80];
    describe(v, got, sizeof got);
    return vc_arg_fail(a, key, "expected one of %s, got %s", list, got);
}

/* --------------------------------------------------------------- vc_setup */

struct vc_setup_priv {
    vc_error *err;
    const char *path;
    int np, nb;
    int64_t pn[VC_MAX_PARAMS];
    int64_t bn[VC_MAX_PARAMS];
    vc_dtype bdt[VC_MAX_PARAMS];
};

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
        s->priv->err && s->priv->err->code == VC_OK
            ? (void)vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path, "sizes overflow 64-bit arithmetic")
            : (void)0;
        return -1;
    }
    return 0;
}

int vc_add(vc_setup *s, int64_t a, int64_t b, int64_t *out)
{
    if (__builtin_add_overflow(a, b, out)) {
        vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path, "sizes overflow 64-bit arithmetic");
        return -1;
    }
    return 0;
}

int vc_param(vc_setup *s, const char *name, int64_t numel)
{
    (void)name;
    if (numel < 0) return vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path, "parameter size overflows"), -1;
    if (s->priv->np >= VC_MAX_PARAMS) return vc_fail(s, NULL, "too many parameter tensors");
    s->priv->pn[s->priv->np++] = numel;
    return 0;
}

int vc_buffer(vc_setup *s, const char *name, int64_t numel, vc_dtype dt)
{
    (void)name;
    if (numel < 0) return vc_set_error(s->priv->err, VC_ERR_OVERFLOW, s->priv->path, "buffer size overflows"), -1;
    if (s->priv->nb >= VC_MAX_PARAMS) return vc_fail(s, NULL, "too many buffers");
    s->priv->bn[s->priv->nb] = numel;
    s->priv->bdt[s->priv->nb++] = dt;
    return 0;
}

/* ------------------------------------------------------------- the loader */

typedef struct name_entry {
    const char *name;
    int val, inst;
} name_entry;

typedef struct scope {
    const struct scope *parent;
    int input;
    int *pos;         /* output value of item i */
    int npos;
    name_entry *names;
    int nnames, cap;
} scope;

typedef struct {
    vc_model *m;
    vc_error *err;
    const vc_shape *override;
    int64_t total_params;
} loader;

static vc_status fail(loader *L, vc_status code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static vc_status fail(loader *L, vc_status code, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vc_set_errorv(L->err, code, path, fmt, ap);
    va_end(ap);
    return code;
}

#define GROWV(arr, n, cap)                                                  \
    ((n) < (cap) ? 0                                                        \
     : ((cap) = (cap) ? (cap) * 2 : 16,                                     \
        ((arr) = realloc_or_free((arr), (cap) * sizeof *(arr))) ? 0 : -1))

static void *realloc_or_free(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) free(p);
    return q;
}

static int new_value(loader *L, const vc_shape *s, vc_dtype dt, int producer)
{
    vc_model *m = L->m;
    if (GROWV(m->val, m->nval, m->cap_val)) return -1;
    m->val[m->nval] = (vc_value){*s, dt, producer};
    return (int)m->nval++;
}

static const char *const common_keys[] = {"type", "name", "inputs", "repeat", "frozen", "checkpoint", "tie", NULL};

static vc_status check_duplicates(loader *L, const cJSON *obj, const char *path)
{
    for (const cJSON *a = obj->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (a->string && b->string && !strcmp(a->string, b->string))
                return fail(L, VC_ERR_MODEL, path, "duplicate key \"%s\"", a->string);
    return VC_OK;
}

static const char *nearest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int bd = 99;
    for (int i = 0; i < n; i++) {
        int d = vc_edit_distance(word, cands[i]);
        if (d < bd) {
            bd = d;
            best = cands[i];
        }
    }
    size_t len = strlen(word);
    return bd <= (len < 5 ? 1 : len < 9 ? 2 : 3) ? best : NULL;
}

static vc_status unknown_keys(loader *L, const cJSON *obj, const char *path, const char *const *ok, int nok,
                              const char *kind)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool found = false;
        for (int i = 0; i < nok && !found; i++) found = !strcmp(c->string, ok[i]);
        if (found) continue;
        const char *s = nearest(c->string, ok, nok);
        char p[300];
        snprintf(p, sizeof p, "%s.%s", path, c->string);
        if (s) return fail(L, VC_ERR_MODEL, p, "unknown field for %s (did you mean \"%s\"?)", kind, s);
        return fail(L, VC_ERR_MODEL, p, "unknown field for %s", kind);
    }
    return VC_OK;
}

static const name_entry *lookup(const scope *S, const char *name)
{
    for (const scope *s = S; s; s = s->parent)
        for (int i = 0; i < s->nnames; i++)
            if (!strcmp(s->names[i].name, name)) return &s->names[i];
    return NULL;
}

/* Resolves a reference inside scope S: a local name, "input", "layers[k]"
 * (k < item), an enclosing scope's name, or a model input name. */
static int resolve(loader *L, const scope *S, const char *ref, int item, const char *path)
{
    const name_entry *e = lookup(S, ref);
    if (e) return e->val;
    if (!strcmp(ref, "input")) return S->input;
    long long k;
    char close, extra;
    if (sscanf(ref, "layers[%lld%c%c", &k, &close, &extra) == 2 && close == ']') {
        if (k < 0 || k >= item) {
            fail(L, VC_ERR_MODEL, path, "\"%s\" is not an earlier layer of this scope (this is layers[%d])", ref, item);
            return -1;
        }
        return S->pos[k];
    }
    for (int i = 0; i < L->m->ninputs; i++)
        if (L->m->input_names[i] && !strcmp(L->m->input_names[i], ref)) return i;
    fail(L, VC_ERR_MODEL, path, "unknown input \"%s\" (not a name defined earlier, \"input\", or \"layers[k]\")", ref);
    return -1;
}

static vc_status parse_shape_value(loader *L, const cJSON *v, const char *path, vc_shape *s, vc_dtype *dt)
{
    *dt = VC_DT_FLOAT;
    const cJSON *shape = v;
    if (cJSON_IsObject(v)) {
        if (check_duplicates(L, v, path)) return L->err->code;
        static const char *const ok[] = {"shape", "dtype"};
        if (unknown_keys(L, v, path, ok, 2, "an input")) return L->err->code;
        shape = cJSON_GetObjectItemCaseSensitive(v, "shape");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "dtype");
        if (d) {
            char p[300];
            snprintf(p, sizeof p, "%s.dtype", path);
            if (!cJSON_IsString(d)) return fail(L, VC_ERR_MODEL, p, "expected \"float32\" or \"int64\"");
            if (!strcmp(d->valuestring, "int64") || !strcmp(d->valuestring, "long")) *dt = VC_DT_I64;
            else if (strcmp(d->valuestring, "float32") && strcmp(d->valuestring, "float"))
                return fail(L, VC_ERR_MODEL, p, "expected \"float32\" or \"int64\", got \"%.40s\"", d->valuestring);
        }
        if (!shape) return fail(L, VC_ERR_MODEL, path, "missing \"shape\"");
    }
    char p[300];
    snprintf(p, sizeof p, "%s%s", path, shape == v ? "" : ".shape");
    if (!cJSON_IsArray(shape)) {
        char got[80];
        describe(shape, got, sizeof got);
        return fail(L, VC_ERR_MODEL, p, "expected a per-sample shape such as [3, 224, 224], got %s", got);
    }
    int n = cJSON_GetArraySize(shape);
    if (n < 1 || n > VC_MAX_DIMS)
        return fail(L, VC_ERR_MODEL, p, "expected 1 to %d dimensions (without the batch), got %d", VC_MAX_DIMS, n);
    s->nd = n;
    int i = 0;
    for (const cJSON *e = shape->child; e; e = e->next, i++) {
        int64_t x;
        char got[80];
        describe(e, got, sizeof got);
        if (json_int(e, &x) || x < 1)
            return fail(L, VC_ERR_MODEL, p, "dimension %d: expected a positive integer, got %s", i, got);
        if (x > VC_MAX_DIM_SIZE) return fail(L, VC_ERR_LIMIT, p, "dimension %d: %lld is larger than the limit 2^40", i, (long long)x);
        s->d[i] = x;
    }
    if (vc_shape_numel(s) < 0 || vc_shape_numel(s) > (INT64_C(1) << 56))
        return fail(L, VC_ERR_OVERFLOW, p, "the shape has more than 2^56 elements");
    return VC_OK;
}

static vc_status load_scope(loader *L, const cJSON *arr, const char *prefix, const char *iprefix,
                            const scope *parent, int input, int depth, bool frozen, int region, int *out);

static vc_status add_name(loader *L, scope *S, const char *name, int val, int inst, const char *path)
{
    for (int i = 0; i < S->nnames; i++)
        if (!strcmp(S->names[i].name, name))
            return fail(L, VC_ERR_MODEL, path, "duplicate name \"%s\" in this scope", name);
    if (!strcmp(name, "input") || !strncmp(name, "layers[", 7))
        return fail(L, VC_ERR_MODEL, path, "\"%s\" is reserved; choose another name", name);
    if (GROWV(S->names, S->nnames, S->cap)) return fail(L, VC_ERR_NOMEM, path, "out of memory");
    S->names[S->nnames++] = (name_entry){name, val, inst};
    return VC_OK;
}

/* Instantiates one copy of a leaf layer. */
static vc_status instantiate(loader *L, const vc_kind *k, void *cfg, const char *jpath, const char *ipath,
                             const int *ins, int nin, bool frozen, int region, const vc_inst *tie_to, int *out)
{
    vc_model *m = L->m;
    if (m->ninst >= VC_MAX_LAYERS) return fail(L, VC_ERR_LIMIT, jpath, "more than %d layers", VC_MAX_LAYERS);
    vc_shape shapes[VC_MAX_INPUTS];
    vc_dtype dts[VC_MAX_INPUTS];
    for (int i = 0; i < nin; i++) {
        shapes[i] = m->val[ins[i]].shape;
        dts[i] = m->val[ins[i]].dt;
        bool want_int = k->flags & VC_KIND_INT_INPUT;
        if (i == 0 && want_int && dts[i] != VC_DT_I64)
            return fail(L, VC_ERR_MODEL, jpath, "%s takes int64 token ids; declare the input as {\"shape\": [...], \"dtype\": \"int64\"}", k->name);
        if (!want_int && dts[i] == VC_DT_I64)
            return fail(L, VC_ERR_MODEL, jpath, "%s takes a float tensor, but input %d holds int64 token ids (add an Embedding first)", k->name, i);
    }
    struct vc_setup_priv priv;
    memset(&priv, 0, sizeof priv);
    priv.err = L->err;
    priv.path = jpath;
    vc_setup s = {nin, shapes, dts, {0, {0}}, VC_DT_FLOAT, &priv};
    if (k->setup(&s, cfg)) {
        if (L->err->code == VC_OK) fail(L, VC_ERR_MODEL, jpath, "invalid %s", k->name);
        return L->err->code;
    }
    int64_t numel = vc_shape_numel(&s.out);
    if (s.out.nd < 0 || numel < 0 || numel > (INT64_C(1) << 56))
        return fail(L, VC_ERR_OVERFLOW, jpath, "the output has more than 2^56 elements per sample");
    if (GROWV(m->inst, m->ninst, m->cap_inst)) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    int idx = (int)m->ninst++;
    vc_inst *in = &m->inst[idx];
    memset(in, 0, sizeof *in);
    in->kind = k;
    in->cfg = cfg;
    in->path = vc_arena_strdup(m->arena, ipath);
    in->nin = nin;
    memcpy(in->in, ins, (size_t)nin * sizeof *ins);
    in->ckpt = region;
    in->frozen = frozen;
    in->np = priv.np;
    in->nb = priv.nb;
    in->params = vc_arena_alloc(m->arena, (size_t)(priv.np + 1) * sizeof(int));
    in->bufs = vc_arena_alloc(m->arena, (size_t)(priv.nb + 1) * sizeof(int));
    if (!in->path || !in->params || !in->bufs) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    for (int i = 0; i < priv.np; i++) {
        if (i == 0 && tie_to) {
            int tp = tie_to->params[0];
            if (m->par[tp].numel != priv.pn[0])
                return fail(L, VC_ERR_MODEL, jpath, "tie: the weight has %lld elements but %s's has %lld",
                            (long long)priv.pn[0], tie_to->path, (long long)m->par[tp].numel);
            in->params[0] = tp;
            continue;
        }
        if (GROWV(m->par, m->npar, m->cap_par)) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        m->par[m->npar] = (vc_param_entry){priv.pn[i], !frozen, idx};
        in->params[i] = (int)m->npar++;
        if (__builtin_add_overflow(in->nparams, priv.pn[i], &in->nparams) ||
            __builtin_add_overflow(m->nparams, priv.pn[i], &m->nparams))
            return fail(L, VC_ERR_OVERFLOW, jpath, "the parameter count overflows 64-bit arithmetic");
        if (!frozen) m->ntrainable += priv.pn[i];
    }
    for (int i = 0; i < priv.nb; i++) {
        if (GROWV(m->buf, m->nbuf, m->cap_buf)) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        m->buf[m->nbuf] = (vc_buffer_entry){priv.bn[i], priv.bdt[i]};
        in->bufs[i] = (int)m->nbuf++;
    }
    int v = new_value(L, &s.out, s.out_dt, idx);
    if (v < 0) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    m->inst[idx].out = v;
    *out = v;
    return VC_OK;
}

static vc_status get_bool_key(loader *L, const cJSON *item, const char *key, const char *path, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, key);
    if (!v) return VC_OK;
    if (!cJSON_IsBool(v)) {
        char got[80], p[300];
        describe(v, got, sizeof got);
        snprintf(p, sizeof p, "%s.%s", path, key);
        return fail(L, VC_ERR_MODEL, p, "expected true or false, got %s", got);
    }
    *out = cJSON_IsTrue(v);
    return VC_OK;
}

static vc_status load_item(loader *L, scope *S, const cJSON *item, int i, const char *jpath, const char *ipath,
                           int depth, bool frozen, int region)
{
    vc_model *m = L->m;
    char p[300];
    if (!cJSON_IsObject(item)) {
        char got[80];
        describe(item, got, sizeof got);
        return fail(L, VC_ERR_MODEL, jpath, "expected a layer object such as {\"type\": \"Linear\", ...}, got %s", got);
    }
    if (check_duplicates(L, item, jpath)) return L->err->code;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(item, "type");
    snprintf(p, sizeof p, "%s.type", jpath);
    if (!type) return fail(L, VC_ERR_MODEL, jpath, "missing \"type\" (the layer kind, e.g. \"Conv2d\")");
    if (!cJSON_IsString(type)) return fail(L, VC_ERR_MODEL, p, "expected a layer kind name");
    bool seq = !strcmp(type->valuestring, "Sequential");
    const vc_kind *k = seq ? NULL : vc_kind_find(type->valuestring);
    if (!seq && !k) {
        const char *s = vc_kind_suggest(type->valuestring);
        if (s) return fail(L, VC_ERR_MODEL, p, "unknown layer kind \"%.60s\" (did you mean \"%s\"?)", type->valuestring, s);
        return fail(L, VC_ERR_MODEL, p, "unknown layer kind \"%.60s\" (vramcalc --list-layers lists them)", type->valuestring);
    }
    const char *kname = seq ? "Sequential" : k->name;

    /* common keys */
    const char *name = NULL;
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(item, "name");
    if (nv) {
        snprintf(p, sizeof p, "%s.name", jpath);
        if (!cJSON_IsString(nv) || !nv->valuestring[0]) return fail(L, VC_ERR_MODEL, p, "expected a non-empty string");
        name = nv->valuestring;
    }
    int64_t repeat = 1;
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(item, "repeat");
    if (rv) {
        snprintf(p, sizeof p, "%s.repeat", jpath);
        char got[80];
        describe(rv, got, sizeof got);
        if (json_int(rv, &repeat) || repeat < 1)
            return fail(L, VC_ERR_MODEL, p, "expected a positive integer, got %s", got);
        if (repeat > VC_MAX_LAYERS) return fail(L, VC_ERR_LIMIT, p, "%lld copies exceed the limit of %d layers", (long long)repeat, VC_MAX_LAYERS);
    }
    bool fz = false, ck = false;
    if (get_bool_key(L, item, "frozen", jpath, &fz) || get_bool_key(L, item, "checkpoint", jpath, &ck))
        return L->err->code;
    fz = fz || frozen;

    int ins[VC_MAX_INPUTS], nin = 0;
    const cJSON *iv = cJSON_GetObjectItemCaseSensitive(item, "inputs");
    snprintf(p, sizeof p, "%s.inputs", jpath);
    if (iv) {
        if (cJSON_IsString(iv)) {
            ins[nin] = resolve(L, S, iv->valuestring, i, p);
            if (ins[nin++] < 0) return L->err->code;
        } else if (cJSON_IsArray(iv)) {
            int n = cJSON_GetArraySize(iv);
            if (n < 1 || n > VC_MAX_INPUTS) return fail(L, VC_ERR_MODEL, p, "expected 1 to %d input names, got %d", VC_MAX_INPUTS, n);
            int j = 0;
            for (const cJSON *e = iv->child; e; e = e->next, j++) {
                char pj[320];
                snprintf(pj, sizeof pj, "%s[%d]", p, j);
                if (!cJSON_IsString(e)) return fail(L, VC_ERR_MODEL, pj, "expected a layer name, \"input\" or \"layers[k]\"");
                ins[nin] = resolve(L, S, e->valuestring, i, pj);
                if (ins[nin++] < 0) return L->err->code;
            }
        } else {
            return fail(L, VC_ERR_MODEL, p, "expected a list of input names");
        }
    } else if (!k || !(k->flags & VC_KIND_NO_INPUT)) {
        ins[nin++] = i == 0 ? S->input : S->pos[i - 1];
    }
    if (k) {
        if (nin < k->min_inputs || nin > k->max_inputs) {
            if (k->min_inputs == k->max_inputs)
                return fail(L, VC_ERR_MODEL, p, "%s takes %d input%s, got %d", kname, k->min_inputs, k->min_inputs == 1 ? "" : "s", nin);
            return fail(L, VC_ERR_MODEL, p, "%s takes %d to %d inputs, got %d", kname, k->min_inputs, k->max_inputs, nin);
        }
    } else if (nin != 1) {
        return fail(L, VC_ERR_MODEL, p, "Sequential takes 1 input, got %d", nin);
    }
    if (repeat > 1 && nin != 1)
        return fail(L, VC_ERR_MODEL, jpath, "repeat needs a layer with one input (its output feeds the next copy)");

    const vc_inst *tie_to = NULL;
    const cJSON *tv = cJSON_GetObjectItemCaseSensitive(item, "tie");
    if (tv) {
        snprintf(p, sizeof p, "%s.tie", jpath);
        if (!k || !(k->flags & VC_KIND_TIEABLE)) return fail(L, VC_ERR_MODEL, p, "only Linear and Embedding accept tie");
        if (!cJSON_IsString(tv)) return fail(L, VC_ERR_MODEL, p, "expected the name of an earlier Linear or Embedding");
        const name_entry *e = lookup(S, tv->valuestring);
        if (!e || e->inst < 0) return fail(L, VC_ERR_MODEL, p, "no earlier layer is named \"%.60s\"", tv->valuestring);
        tie_to = &m->inst[e->inst];
        if (!(tie_to->kind->flags & VC_KIND_TIEABLE) || tie_to->np < 1)
            return fail(L, VC_ERR_MODEL, p, "\"%.60s\" is a %s; tie needs a Linear or Embedding", tv->valuestring, tie_to->kind->name);
    }

    int out = -1, first_inst = (int)m->ninst;
    if (seq) {
        static const char *const ok[] = {"type", "name", "inputs", "repeat", "frozen", "checkpoint", "layers"};
        if (unknown_keys(L, item, jpath, ok, 7, "Sequential")) return L->err->code;
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(item, "layers");
        if (!layers) return fail(L, VC_ERR_MODEL, jpath, "missing \"layers\" (the block's layers)");
        if (depth + 1 > VC_MAX_DEPTH) return fail(L, VC_ERR_LIMIT, jpath, "Sequential blocks nest deeper than %d", VC_MAX_DEPTH);
        int cur = ins[0];
        for (int64_t c = 0; c < repeat; c++) {
            char ip[300];
            if (repeat > 1) snprintf(ip, sizeof ip, "%s[%lld]", ipath, (long long)c);
            else snprintf(ip, sizeof ip, "%s", ipath);
            int r = region >= 0 ? region : ck ? m->nregions++ : -1;
            if (load_scope(L, layers, jpath, ip, S, cur, depth + 1, fz, r, &out)) return L->err->code;
            if (repeat > 1 && !vc_shape_eq(&m->val[out].shape, &m->val[cur].shape)) {
                char a[96], b2[96];
                vc_shape_str(&m->val[cur].shape, a, sizeof a);
                vc_shape_str(&m->val[out].shape, b2, sizeof b2);
                return fail(L, VC_ERR_MODEL, jpath, "repeat needs the output shape to equal the input shape, but %s becomes %s", a, b2);
            }
            cur = out;
        }
    } else {
        void *cfg = vc_arena_alloc(m->arena, k->cfg_size ? k->cfg_size : 1);
        if (!cfg) return fail(L, VC_ERR_NOMEM, jpath, "out of memory");
        vc_args a;
        memset(&a, 0, sizeof a);
        a.obj = item;
        a.err = L->err;
        a.path = jpath;
        a.kind = kname;
        for (int j = 0; common_keys[j]; j++) known(&a, common_keys[j]);
        if (k->parse(&a, cfg)) {
            if (L->err->code == VC_OK) fail(L, VC_ERR_MODEL, jpath, "invalid %s", kname);
            return L->err->code;
        }
        if (unknown_keys(L, item, jpath, a.known, a.nknown, kname)) return L->err->code;
        int cur[VC_MAX_INPUTS];
        memcpy(cur, ins, sizeof ins);
        for (int64_t c = 0; c < repeat; c++) {
            char ip[300];
            if (repeat > 1) snprintf(ip, sizeof ip, "%s[%lld]", ipath, (long long)c);
            else snprintf(ip, sizeof ip, "%s", ipath);
            int r = region >= 0 ? region : ck ? m->nregions++ : -1;
            if (instantiate(L, k, cfg, jpath, ip, cur, nin, fz, r, tie_to, &out))
                return L->err->code;
            if (repeat > 1 && !vc_shape_eq(&m->val[out].shape, &m->val[cur[0]].shape)) {
                char a2[96], b2[96];
                vc_shape_str(&m->val[cur[0]].shape, a2, sizeof a2);
                vc_shape_str(&m->val[out].shape, b2, sizeof b2);
                return fail(L, VC_ERR_MODEL, jpath, "repeat needs the output shape to equal the input shape, but %s becomes %s", a2, b2);
            }
            cur[0] = out;
        }
    }
    S->pos[i] = out;
    if (name) return add_name(L, S, name, out, first_inst < (int)m->ninst ? first_inst : -1, jpath);
    return VC_OK;
}

static vc_status load_scope(loader *L, const cJSON *arr, const char *prefix, const char *iprefix,
                            const scope *parent, int input, int depth, bool frozen, int region, int *out)
{
    char path[300];
    snprintf(path, sizeof path, "%s%slayers", prefix, prefix[0] ? "." : "");
    if (!cJSON_IsArray(arr)) {
        char got[80];
        describe(arr, got, sizeof got);
        return fail(L, VC_ERR_MODEL, path, "expected a list of layers, got %s", got);
    }
    int n = cJSON_GetArraySize(arr);
    if (n == 0) return fail(L, VC_ERR_MODEL, path, "the list of layers is empty");
    scope S = {parent, input, calloc((size_t)n, sizeof(int)), n, NULL, 0, 0};
    if (!S.pos) return fail(L, VC_ERR_NOMEM, path, "out of memory");
    vc_status st = VC_OK;
    int i = 0;
    for (const cJSON *item = arr->child; item && !st; item = item->next, i++) {
        char jp[300], ip[300];
        snprintf(jp, sizeof jp, "%s[%d]", path, i);
        snprintf(ip, sizeof ip, "%s%slayers[%d]", iprefix, iprefix[0] ? "." : "", i);
        st = load_item(L, &S, item, i, jp, ip, depth, frozen, region);
    }
    if (!st) *out = S.pos[n - 1];
    free(S.pos);
    free(S.names);
    return st;
}

static vc_status load_inputs(loader *L, const cJSON *root)
{
    vc_model *m = L->m;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    if (in && ins) return fail(L, VC_ERR_MODEL, "inputs", "give either \"input\" or \"inputs\", not both");
    if (!in && !ins) return fail(L, VC_ERR_MODEL, "input", "missing: the per-sample input shape, e.g. \"input\": [3, 224, 224]");
    if (in) {
        vc_shape s;
        vc_dtype dt;
        if (parse_shape_value(L, in, "input", &s, &dt)) return L->err->code;
        if (L->override) s = *L->override;
        m->ninputs = 1;
        m->input_names = vc_arena_alloc(m->arena, sizeof(char *));
        if (!m->input_names || new_value(L, &s, dt, -1) < 0) return fail(L, VC_ERR_NOMEM, NULL, "out of memory");
        return VC_OK;
    }
    if (!cJSON_IsObject(ins) || !ins->child)
        return fail(L, VC_ERR_MODEL, "inputs", "expected an object of named inputs, e.g. {\"src\": [128, 512]}");
    if (check_duplicates(L, ins, "inputs")) return L->err->code;
    int n = cJSON_GetArraySize(ins);
    if (n > 64) return fail(L, VC_ERR_LIMIT, "inputs", "more than 64 inputs");
    if (L->override && n != 1) return fail(L, VC_ERR_USAGE, "inputs", "--input needs a model with a single input, this one has %d", n);
    m->input_names = vc_arena_alloc(m->arena, (size_t)n * sizeof(char *));
    if (!m->input_names) return fail(L, VC_ERR_NOMEM, NULL, "out of memory");
    for (const cJSON *c = ins->child; c; c = c->next) {
        char p[300];
        snprintf(p, sizeof p, "inputs.%s", c->string);
        if (!strcmp(c->string, "input") || !strncmp(c->string, "layers[", 7))
            return fail(L, VC_ERR_MODEL, p, "\"%s\" is reserved; choose another name", c->string);
        vc_shape s;
        vc_dtype dt;
        if (parse_shape_value(L, c, p, &s, &dt)) return L->err->code;
        if (L->override) s = *L->override;
        m->input_names[m->ninputs++] = vc_arena_strdup(m->arena, c->string);
        if (new_value(L, &s, dt, -1) < 0) return fail(L, VC_ERR_NOMEM, NULL, "out of memory");
    }
    return VC_OK;
}

static void line_col(const char *text, size_t len, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    if (!at || at < text) return;
    for (const char *p = text; p < at && p < text + len; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static vc_status load(vc_model *m, const vc_shape *override, vc_error *err)
{
    loader L = {m, err, override, 0};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(m->text, m->text_len + 1, &end, 1) /* + the NUL */;
    if (!root) {
        int line, col;
        line_col(m->text, m->text_len, end ? end : cJSON_GetErrorPtr(), &line, &col);
        const char *at = end ? end : cJSON_GetErrorPtr();
        bool eof = !at || at >= m->text + m->text_len || !*at;
        bool blank = true;
        for (size_t i = 0; i < m->text_len && blank; i++) blank = strchr(" \t\r\n", m->text[i]) != NULL;
        fail(&L, VC_ERR_PARSE, NULL, blank ? "the file is empty" : eof ? "invalid JSON: unexpected end of file" : "invalid JSON near '%.12s'", at);
        if (!blank) {
            err->line = line;
            err->col = col;
        }
        return VC_ERR_PARSE;
    }
    vc_status st = VC_OK;
    if (!cJSON_IsObject(root)) {
        st = fail(&L, VC_ERR_MODEL, NULL, "expected a JSON object with \"input\" and \"layers\" at the top level");
        goto done;
    }
    if ((st = check_duplicates(&L, root, "")) != VC_OK) goto done;
    static const char *const ok[] = {"name", "description", "source", "input", "inputs", "layers", "loss"};
    for (const cJSON *c = root->child; c; c = c->next) {
        bool found = false;
        for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) found |= !strcmp(c->string, ok[i]);
        if (!found) {
            const char *s = nearest(c->string, ok, (int)(sizeof ok / sizeof *ok));
            st = s ? fail(&L, VC_ERR_MODEL, c->string, "unknown top-level field (did you mean \"%s\"?)", s)
                   : fail(&L, VC_ERR_MODEL, c->string, "unknown top-level field");
            goto done;
        }
    }
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (nm && !cJSON_IsString(nm)) {
        st = fail(&L, VC_ERR_MODEL, "name", "expected a string");
        goto done;
    }
    m->name = vc_arena_strdup(m->arena, nm ? nm->valuestring : "");
    for (const char *key = "description"; key; key = strcmp(key, "description") ? NULL : "source") {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, key);
        if (d && !cJSON_IsString(d)) {
            st = fail(&L, VC_ERR_MODEL, key, "expected a string");
            goto done;
        }
    }
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(root, "loss");
    if (loss) {
        if (cJSON_IsString(loss) && !strcmp(loss->valuestring, "mean")) m->loss = VC_LOSS_MEAN;
        else if (cJSON_IsString(loss) && !strcmp(loss->valuestring, "cross_entropy")) m->loss = VC_LOSS_CROSS_ENTROPY;
        else {
            st = fail(&L, VC_ERR_MODEL, "loss", "expected \"mean\" or \"cross_entropy\"");
            goto done;
        }
    }
    if ((st = load_inputs(&L, root)) != VC_OK) goto done;
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!layers) {
        st = fail(&L, VC_ERR_MODEL, "layers", "missing: the list of layers");
        goto done;
    }
    scope top = {NULL, 0, NULL, 0, NULL, 0, 0};
    if ((st = load_scope(&L, layers, "", "", &top, 0, 0, false, -1, &m->output)) != VC_OK) goto done;
    if (m->loss == VC_LOSS_CROSS_ENTROPY && m->val[m->output].shape.nd < 1)
        st = fail(&L, VC_ERR_MODEL, "loss", "cross_entropy needs an output with a class dimension");
done:
    cJSON_Delete(root);
    return st;
}

static void reset_model(vc_model *m)
{
    free(m->inst);
    free(m->val);
    free(m->par);
    free(m->buf);
    m->inst = NULL;
    m->val = NULL;
    m->par = NULL;
    m->buf = NULL;
    m->ninst = m->nval = m->npar = m->nbuf = 0;
    m->cap_inst = m->cap_val = m->cap_par = m->cap_buf = 0;
    m->ninputs = 0;
    m->nregions = 0;
    m->nparams = m->ntrainable = 0;
    m->loss = VC_LOSS_MEAN;
}

vc_status vc_model_load_string(const char *json, size_t len, const char *name, vc_model **out, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    *out = NULL;
    snprintf(err->file, sizeof err->file, "%s", name ? name : "");
    if (len > VC_MAX_FILE_BYTES) {
        err->code = VC_ERR_LIMIT;
        snprintf(err->msg, sizeof err->msg, "the file is larger than the %u MiB limit", VC_MAX_FILE_BYTES >> 20);
        return VC_ERR_LIMIT;
    }
    vc_model *m = calloc(1, sizeof *m);
    if (!m || !(m->arena = vc_arena_new())) {
        free(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    m->text = malloc(len + 1);
    if (!m->text) {
        vc_model_free(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    memcpy(m->text, json, len);
    m->text[len] = '\0';
    m->text_len = len;
    m->file = vc_arena_strdup(m->arena, name ? name : "");
    vc_status st = load(m, NULL, err);
    if (st) {
        vc_model_free(m);
        return st;
    }
    *out = m;
    return VC_OK;
}

vc_status vc_model_load_file(const char *path, vc_model **out, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    *out = NULL;
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    snprintf(err->file, sizeof err->file, "%s", path);
    if (!f) {
        err->code = VC_ERR_IO;
        snprintf(err->msg, sizeof err->msg, "cannot open: %s", strerror(errno));
        return VC_ERR_IO;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
        if (len > VC_MAX_FILE_BYTES) break;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    bool bad = ferror(f);
    if (f != stdin) fclose(f);
    if (!buf) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    if (bad) {
        free(buf);
        err->code = VC_ERR_IO;
        snprintf(err->msg, sizeof err->msg, "cannot read: %s", strerror(errno));
        return VC_ERR_IO;
    }
    vc_status st = vc_model_load_string(buf, len, path, out, err);
    free(buf);
    return st;
}

vc_status vc_model_set_input_shape(vc_model *m, const int64_t *dims, int ndim, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (ndim < 1 || ndim > VC_MAX_DIMS)
        return vc_set_error(err, VC_ERR_USAGE, "--input", "expected 1 to %d dimensions, got %d", VC_MAX_DIMS, ndim);
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 1 || dims[i] > VC_MAX_DIM_SIZE)
            return vc_set_error(err, VC_ERR_USAGE, "--input", "dimension %d must be from 1 to 2^40", i);
    vc_shape s = vc_shape_make(ndim, dims);
    if (vc_shape_numel(&s) < 0 || vc_shape_numel(&s) > (INT64_C(1) << 56))
        return vc_set_error(err, VC_ERR_OVERFLOW, "--input", "the shape has more than 2^56 elements");
    /* Reload from the source with the new shape; the arena keeps old configs. */
    reset_model(m);
    return load(m, &s, err);
}

void vc_model_free(vc_model *m)
{
    if (!m) return;
    reset_model(m);
    free(m->text);
    vc_arena_free(m->arena);
    free(m);
}

const char *vc_model_name(const vc_model *m) { return m->name ? m->name : ""; }
int64_t vc_model_parameters(const vc_model *m) { return m->nparams; }
int64_t vc_model_trainable_parameters(const vc_model *m) { return m->ntrainable; }
size_t vc_model_layer_count(const vc_model *m) { return m->ninst; }
