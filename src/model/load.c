/*
 * load.c — loading step 3: the semantic walk from the parsed JSON to
 * validated, shape-checked layer instances.
 *
 * The loader owns everything about the file format that is not a layer
 * kind's own fields: the model keys, scopes and names, `inputs`, `repeat`,
 * `frozen`, `checkpoint`, `tie`, Sequential, and every error's JSON path and
 * position (names and what references resolve to: scope.c). A model file is
 * untrusted input: every error is one line naming the file, the line:col,
 * the JSON path and what was expected and found (docs/limits.md lists the
 * limits and their errors).
 *
 * Loading runs in three steps:
 *  1. jv_* (json_check.c): a strict RFC 8259 validator over the raw text,
 *     with a precise message and position for every syntax error (cJSON
 *     reports neither well), a nesting limit, and nothing cJSON would parse
 *     differently;
 *  2. which, in the same pass, builds cJSON's tree of the text, in one
 *     block (vc__json_read; freed when the text is refused);
 *  3. the semantic walk below. Its errors carry a JSON path only; on the
 *     way out, loc_* walks the (valid) text along that path to give the
 *     error its line:col.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hf.h"
#include "load.h"
#include "util.h"

/* ------------------------------------------------------------- the loader */

vc_status vc__fail(loader *L, vc_status code, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vc_set_errorv(L->err, code, path, fmt, ap);
    va_end(ap);
    return code;
}

void *vc__realloc_or_free(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) free(p);
    return q;
}

/* A new value (a layer output or a model input) in the model's table; -1 out of memory. */
int vc__new_value(loader *L, const vc_shape *s, vc_dtype dt, int producer)
{
    vc_model *m = L->m;
    if (GROWV(m->val, m->nval, m->cap_val)) return -1;
    m->val[m->nval] = (vc_value){*s, dt, producer};
    return (int)m->nval++;
}

/* cJSON_GetObjectItemCaseSensitive (cJSON.c get_object_item): obj's first member named key, NULL at a
 * member without a name; the first bytes compared before strcmp (each layer's object is asked for its
 * common keys, most of them absent) */
static const cJSON *member(const cJSON *obj, const char *key)
{
    if (!obj || !key) return NULL;
    const cJSON *c = obj->child;
    while (c && c->string && (c->string[0] != key[0] || strcmp(key, c->string))) c = c->next;
    return c && c->string ? c : NULL;
}

void vc__join(char *buf, size_t n, const char *path, const char *key)
{
    vc_cat3(buf, n, path, path[0] ? "." : "", key);
}

/* A list index as "[i]", counted up in place: idx->at[idx->from..] is the text of the current one. */
typedef struct {
    char at[24];
    int from;
} index_text;

static void index_first(index_text *x)
{
    memcpy(x->at + sizeof x->at - 4, "[0]", 4);
    x->from = (int)sizeof x->at - 4;
}

static void index_next(index_text *x)
{
    int d = (int)sizeof x->at - 3; /* the last digit */
    while (d > x->from && x->at[d] == '9') x->at[d--] = '0';
    if (d > x->from) {
        x->at[d]++;
    } else { /* all nines: one digit more */
        x->at[x->from] = '1';
        x->at[--x->from] = '[';
    }
}

/* buf[0..nb) (nb < n) followed by the index: vc_cat_index(buf, n, base, "", i) of that base, cut alike */
static void put_index(char *buf, size_t n, size_t nb, const index_text *x)
{
    size_t len = sizeof x->at - 1 - (size_t)x->from, room = n - 1 - nb;
    if (len > room) len = room;
    memcpy(buf + nb, x->at + x->from, len);
    buf[nb + len] = '\0';
}

/* Duplicate keys: the one whose second occurrence comes first. O(n log n) (up to 16 keys: O(n^2), no sort). */
typedef struct {
    const char *key;
    int idx;
} key_ref;

static int cmp_key_ref(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static vc_status check_duplicates(loader *L, const cJSON *obj, const char *path)
{
    int n = 0;
    for (const cJSON *c = obj->child; c; c = c->next) n++;
    if (n < 2) return VC_OK;
    if (n <= 16) { /* a layer's few keys: the first key equal to an earlier one is the answer, with no sort */
        const cJSON *c = obj->child->next;
        for (; c; c = c->next) {
            const char *kc = c->string ? c->string : "";
            for (const cJSON *e = obj->child; e != c; e = e->next)
                if (kc[0] == (e->string ? e->string[0] : 0) && !strcmp(kc, e->string ? e->string : "")) {
                    char p[300];
                    vc__join(p, sizeof p, path, kc);
                    L->at_key = true;
                    L->nth = 2;
                    return vc__fail(L, VC_ERR_MODEL, p, "duplicate key: \"%.60s\" is given twice in this object", kc);
                }
        }
        return VC_OK;
    }
    key_ref *k = malloc((size_t)n * sizeof *k);
    if (!k) return vc__fail(L, VC_ERR_NOMEM, path, "out of memory");
    int i = 0;
    for (const cJSON *c = obj->child; c; c = c->next, i++) k[i] = (key_ref){c->string ? c->string : "", i};
    qsort(k, (size_t)n, sizeof *k, cmp_key_ref);
    int best = -1;
    const char *dup = NULL;
    for (i = 1; i < n; i++)
        if (!strcmp(k[i].key, k[i - 1].key) && (i < 2 || strcmp(k[i].key, k[i - 2].key)) && (best < 0 || k[i].idx < best)) {
            best = k[i].idx;
            dup = k[i].key;
        }
    vc_status st = VC_OK;
    if (dup) {
        char p[300];
        vc__join(p, sizeof p, path, dup);
        L->at_key = true;
        L->nth = 2;
        st = vc__fail(L, VC_ERR_MODEL, p, "duplicate key: \"%.60s\" is given twice in this object", dup);
    }
    free(k);
    return st;
}

/* Whether every key of obj is in ok[0..nok) (unknown_keys finds no error). hit: obj's members (of its first
 * 64) already found named in ok[]: when they are all of them, no key is looked up. */
static bool all_known(const cJSON *obj, const char *const *ok, int nok, uint64_t hit)
{
    uint64_t all = 0;
    unsigned j = 0;
    for (const cJSON *c = obj->child; c && j < 64; c = c->next, j++) all |= (uint64_t)1 << j;
    if (j < 64 && (hit & all) == all) return true;
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool found = false; /* from the end: a kind's own keys come after the common ones */
        for (int i = nok - 1; i >= 0 && !found; i--) found = c->string[0] == ok[i][0] && !strcmp(c->string, ok[i]);
        if (!found) return false;
    }
    return true;
}

/* Unknown keys of obj (not in ok[0..nok)): an error at the first, with the
 * nearest known key, or the list of keys ok[list_from..nok) when none is near. */
static vc_status unknown_keys(loader *L, const cJSON *obj, const char *path, const char *const *ok, int nok,
                              int list_from, const char *what)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool found = false;
        for (int i = 0; i < nok && !found; i++) found = c->string[0] == ok[i][0] && !strcmp(c->string, ok[i]);
        if (found) continue;
        const char *s = vc__nearest(c->string, ok, nok);
        char p[300];
        vc__join(p, sizeof p, path, c->string);
        L->at_key = true;
        L->nth = 1;
        if (s) return vc__fail(L, VC_ERR_MODEL, p, "unknown field %s (did you mean \"%s\"?)", what, s);
        char list[300] = "";
        size_t used = 0;
        for (int i = list_from; i < nok; i++) {
            int w = snprintf(list + used, sizeof list - used, "%s%s", i > list_from ? ", " : "", ok[i]);
            if (w > 0) used = used + (size_t)w < sizeof list ? used + (size_t)w : sizeof list - 1;
        }
        if (list_from >= nok) return vc__fail(L, VC_ERR_MODEL, p, "unknown field %s (it takes only the common fields)", what);
        return vc__fail(L, VC_ERR_MODEL, p, "unknown field %s (expected %s)", what, list);
    }
    return VC_OK;
}

static vc_status parse_shape_value(loader *L, const cJSON *v, const char *path, vc_shape *s, vc_dtype *dt)
{
    *dt = VC_DT_FLOAT;
    const cJSON *shape = v;
    char p[300];
    if (cJSON_IsObject(v)) {
        if (check_duplicates(L, v, path)) return L->err->code;
        static const char *const ok[] = {"shape", "dtype", "cast"};
        if (unknown_keys(L, v, path, ok, 3, 0, "for an input")) return L->err->code;
        shape = member(v, "shape");
        const cJSON *d = member(v, "dtype"), *cast = member(v, "cast");
        if (d) {
            vc__join(p, sizeof p, path, "dtype");
            char got[80];
            vc__describe(d, got, sizeof got);
            if (!cJSON_IsString(d)) return vc__fail(L, VC_ERR_MODEL, p, "expected \"float32\" or \"int64\", got %s", got);
            if (!strcmp(d->valuestring, "int64") || !strcmp(d->valuestring, "long")) *dt = VC_DT_I64;
            else if (strcmp(d->valuestring, "float32") && strcmp(d->valuestring, "float"))
                return vc__fail(L, VC_ERR_MODEL, p, "expected \"float32\" or \"int64\", got %s", got);
        }
        /* "cast": false -- a float input made in float32 whatever --precision (an image processor's pixel_values,
         * which the model casts itself: the Hugging Face vit row); by default a float input is made in the
         * activations' dtype */
        if (cast) {
            vc__join(p, sizeof p, path, "cast");
            if (!cJSON_IsBool(cast)) return vc__fail(L, VC_ERR_MODEL, p, "expected true or false");
            if (*dt == VC_DT_I64) return vc__fail(L, VC_ERR_MODEL, p, "applies to a float input only");
            if (cJSON_IsFalse(cast)) *dt = VC_DT_F32;
        }
        if (!shape) return vc__fail(L, VC_ERR_MODEL, path, "missing \"shape\" (the per-sample shape, e.g. [3, 224, 224])");
        vc__join(p, sizeof p, path, "shape");
    } else {
        snprintf(p, sizeof p, "%s", path);
    }
    if (!cJSON_IsArray(shape)) {
        char got[80];
        vc__describe(shape, got, sizeof got);
        return vc__fail(L, VC_ERR_MODEL, p, "expected a per-sample shape such as [3, 224, 224] (or {\"shape\": [...], \"dtype\": \"int64\"}), got %s", got);
    }
    int n = cJSON_GetArraySize(shape);
    if (n < 1) return vc__fail(L, VC_ERR_MODEL, p, "the shape is empty: give 1 to %d dimensions (without the batch)", VC_MAX_DIMS);
    if (n > VC_MAX_DIMS)
        return vc__fail(L, VC_ERR_LIMIT, p, "%d dimensions: more than the limit of %d (without the batch)", n, VC_MAX_DIMS);
    s->nd = n;
    int i = 0;
    for (const cJSON *e = shape->child; e; e = e->next, i++) {
        int64_t x = 0;
        char got[80], pi[320];
        vc__describe(e, got, sizeof got);
        snprintf(pi, sizeof pi, "%s[%d]", p, i);
        int rc = vc__json_int(e, &x);
        if (rc == -2 && e->valuedouble > 0)
            return vc__fail(L, VC_ERR_LIMIT, pi, "expected a positive integer of at most 2^40 (%lld), got %s", (long long)VC_MAX_DIM_SIZE, got);
        if (rc || x < 1) return vc__fail(L, VC_ERR_MODEL, pi, "expected a positive integer, got %s", got);
        s->d[i] = x;
    }
    int64_t numel = vc_shape_numel(s);
    if (numel < 0 || numel > (INT64_C(1) << 56)) {
        char sh[200];
        vc_shape_str(s, sh, sizeof sh);
        return vc__fail(L, VC_ERR_OVERFLOW, p, "the shape %s has more than 2^56 elements per sample", sh);
    }
    return VC_OK;
}

/* Value `val` stays alive through the last instance loaded so far. */
static vc_status hold_block_input(loader *L, int val, const char *path)
{
    vc_model *m = L->m;
    if (GROWV(m->blk_val, m->nblk, m->cap_blk)) return vc__fail(L, VC_ERR_NOMEM, path, "out of memory");
    m->blk_last = vc__realloc_or_free(m->blk_last, m->cap_blk * sizeof *m->blk_last);
    if (!m->blk_last) return vc__fail(L, VC_ERR_NOMEM, path, "out of memory");
    m->blk_val[m->nblk] = val;
    m->blk_last[m->nblk++] = (int)m->ninst - 1;
    return VC_OK;
}

/* "held_until": value `val` stays alive through instance `last`. */
static vc_status hold_value(loader *L, int val, int last, const char *path)
{
    vc_model *m = L->m;
    if (GROWV(m->hold_val, m->nhold, m->cap_hold)) return vc__fail(L, VC_ERR_NOMEM, path, "out of memory");
    m->hold_last = vc__realloc_or_free(m->hold_last, m->cap_hold * sizeof *m->hold_last);
    if (!m->hold_last) return vc__fail(L, VC_ERR_NOMEM, path, "out of memory");
    m->hold_val[m->nhold] = val;
    m->hold_last[m->nhold++] = last;
    return VC_OK;
}

static vc_status load_scope(loader *L, const cJSON *arr, const char *prefix, const char *iprefix,
                            const scope *parent, int input, int depth, bool frozen, int region, int *out);

/* Instantiates one copy of a leaf layer. */

/* strcmp(s, "type") == 0, without a call: every layer object is asked for it, usually its first key */
static inline bool is_type_key(const char *s) { return s[0] == 't' && s[1] == 'y' && s[2] == 'p' && s[3] == 'e' && !s[4]; }

/* A layer's common keys (common_keys below, and Sequential's loop), found in one pass over its members: each
 * the member member() finds (the first of that name, none after a member without a name) */
typedef struct {
    const cJSON *type, *name, *inputs, *repeat, *frozen, *checkpoint, *tie, *module, *loop;
    uint64_t common; /* bit j: member j (of the first 64) is named by one of common_keys (below) */
} common_t;

static void common_members(const cJSON *item, common_t *cm)
{
    memset(cm, 0, sizeof *cm);
    unsigned j = 0;
    for (const cJSON *c = item->child; c && c->string; c = c->next, j++) {
        const char *s = c->string;
        const cJSON **slot = NULL;
        bool common = false; /* "held_until" is a common key without a slot; "loop" is Sequential's own */
        switch (s[0]) {
        case 't': slot = is_type_key(s) ? &cm->type : !strcmp(s, "tie") ? &cm->tie : NULL; break;
        case 'n': slot = !strcmp(s, "name") ? &cm->name : NULL; break;
        case 'i': slot = !strcmp(s, "inputs") ? &cm->inputs : NULL; break;
        case 'r': slot = !strcmp(s, "repeat") ? &cm->repeat : NULL; break;
        case 'f': slot = !strcmp(s, "frozen") ? &cm->frozen : NULL; break;
        case 'c': slot = !strcmp(s, "checkpoint") ? &cm->checkpoint : NULL; break;
        case 'm': slot = !strcmp(s, "module") ? &cm->module : NULL; break;
        case 'l': slot = !strcmp(s, "loop") ? &cm->loop : NULL; break;
        case 'h': common = !strcmp(s, "held_until"); break;
        default: break;
        }
        if (slot && slot != &cm->loop) common = true;
        if (common && j < 64) cm->common |= (uint64_t)1 << j;
        if (slot && !*slot) *slot = c;
    }
}

/* v, the value of `key` (NULL: absent), a bool into *out */
static vc_status get_bool_key(loader *L, const cJSON *v, const char *key, const char *path, bool *out)
{
    if (!v) return VC_OK;
    if (!cJSON_IsBool(v)) {
        char got[80], p[300];
        vc__describe(v, got, sizeof got);
        vc__join(p, sizeof p, path, key);
        return vc__fail(L, VC_ERR_MODEL, p, "expected true or false, got %s", got);
    }
    *out = cJSON_IsTrue(v);
    return VC_OK;
}

static const char *const common_keys[] = {"type", "name", "inputs", "repeat", "frozen", "checkpoint", "tie", "module",
                                          "held_until", NULL};
#define NCOMMON 9
_Static_assert(sizeof common_keys / sizeof *common_keys == NCOMMON + 1, "NCOMMON counts common_keys");

static void args_init(vc_args *a, const cJSON *item, vc_error *err, const char *jpath, const char *kname)
{
    a->hit = 0;
    a->probe = false;
    a->failed[0] = '\0';
    a->obj = item;
    a->err = err;
    a->path = jpath;
    a->kind = kname;
    /* the fields vc_args has, set one by one: known[] is read up to nknown only; the common keys are
     * distinct: no need for known() */
    memcpy(a->known, common_keys, NCOMMON * sizeof *a->known);
    a->nknown = NCOMMON;
    a->full = false;
}

/* A kind's parse failed on a key the layer lacks ("missing"): when another
 * key of the layer is a misspelling of it, say that instead. The kind's
 * full key set comes from parsing again in probe mode, where missing keys
 * get placeholder values. */
static void prefer_misspelling(loader *L, const vc_kind *k, const cJSON *item, const char *jpath, const vc_args *a)
{
    if (!a->failed[0] || strchr(a->failed, '[') || member(item, a->failed)) return;
    vc_error scratch;
    memset(&scratch, 0, sizeof scratch);
    vc_args probe;
    args_init(&probe, item, &scratch, jpath, a->kind);
    probe.probe = true;
    void *cfg = calloc(1, k->cfg_size ? k->cfg_size : 1);
    if (!cfg) return;
    (void)k->parse(&probe, cfg);
    free(cfg);
    vc_arg_known(&probe, a->failed);
    vc__args_known_unique(&probe);
    for (const cJSON *c = item->child; c; c = c->next) {
        bool found = false;
        for (int i = 0; i < probe.nknown && !found; i++) found = !strcmp(c->string, probe.known[i]);
        if (found) continue;
        const char *s = vc__nearest(c->string, probe.known, probe.nknown);
        if (!s || strcmp(s, a->failed)) continue;
        char p[300];
        vc__join(p, sizeof p, jpath, c->string);
        L->err->code = VC_OK; /* replace the "missing" error */
        L->at_key = true;
        L->nth = 1;
        vc__fail(L, VC_ERR_MODEL, p, "unknown field for %s (did you mean \"%s\"?)", a->kind, s);
        return;
    }
}

/* vc_kind_find (layers/registry.c: the kind whose name is `name`, NULL none) through the loader's last
 * kinds found: a model repeats a few kinds, each found once in the registry's list */
static const vc_kind *find_kind(loader *L, const char *name)
{
    for (int j = 0; j < L->nrecent; j++)
        if (L->recent[j]->name[0] == name[0] && !strcmp(L->recent[j]->name, name)) return L->recent[j];
    const vc_kind *k = vc_kind_find(name);
    if (k) {
        if (L->nrecent < (int)(sizeof L->recent / sizeof L->recent[0])) L->nrecent++;
        memmove(L->recent + 1, L->recent, (size_t)(L->nrecent - 1) * sizeof L->recent[0]);
        L->recent[0] = k;
    }
    return k;
}

/* A layer's `type`: Sequential (*seq) or a registered kind (*k). */
static vc_status item_kind(loader *L, const cJSON *item, const cJSON *type, const char *jpath, bool *seq_out,
                           const vc_kind **k_out)
{
    char p[300], got[80];
    if (!type) {
        for (const cJSON *c = item->child; c; c = c->next)
            if (!strcasecmp(c->string, "type") || !strcmp(c->string, "kind") || vc_edit_distance(c->string, "type") == 1) {
                vc__join(p, sizeof p, jpath, c->string);
                L->at_key = true;
                return vc__fail(L, VC_ERR_MODEL, p, "unknown field (did you mean \"type\"?)");
            }
        return vc__fail(L, VC_ERR_MODEL, jpath, "missing \"type\" (the layer kind, e.g. \"Conv2d\")");
    }
    if (!cJSON_IsString(type)) { /* the paths written on the error paths only */
        vc__join(p, sizeof p, jpath, "type");
        vc__describe(type, got, sizeof got);
        return vc__fail(L, VC_ERR_MODEL, p, "expected a layer kind such as \"Linear\", got %s", got);
    }
    bool seq = type->valuestring[0] == 'S' && !strcmp(type->valuestring, "Sequential");
    const vc_kind *k = seq ? NULL : find_kind(L, type->valuestring);
    if (!seq && !k) {
        vc__join(p, sizeof p, jpath, "type");
        const char *s = vc_kind_suggest(type->valuestring);
        if (s) return vc__fail(L, VC_ERR_MODEL, p, "unknown layer kind \"%.60s\" (did you mean \"%s\"?)", type->valuestring, s);
        return vc__fail(L, VC_ERR_MODEL, p, "unknown layer kind \"%.60s\" (vramcalc --list-layers lists them)", type->valuestring);
    }
    *seq_out = seq;
    *k_out = k;
    return VC_OK;
}

/* A layer's `tie`: the earlier Linear or Embedding whose weight it shares (NULL: none). */
static vc_status item_tie(loader *L, const scope *S, const cJSON *tv, const char *jpath, const vc_kind *k,
                          int *tie_out)
{
    vc_model *m = L->m;
    char p[300], got[80];
    const char *kname = k ? k->name : "Sequential";
    int tie_to = -1; /* an index: m->inst grows (realloc) while the layer is built */
    if (tv) {
        vc__join(p, sizeof p, jpath, "tie");
        if (!k || !(k->flags & VC_KIND_TIEABLE)) return vc__fail(L, VC_ERR_MODEL, p, "only Linear and Embedding accept tie, this is a %s", kname);
        if (!cJSON_IsString(tv)) {
            vc__describe(tv, got, sizeof got);
            return vc__fail(L, VC_ERR_MODEL, p, "expected the name of an earlier Linear or Embedding, got %s", got);
        }
        const name_entry *e = vc__scope_lookup(S, tv->valuestring);
        if (!e) return vc__fail(L, VC_ERR_MODEL, p, "no earlier layer is named \"%.60s\"", tv->valuestring);
        if (e->seq || e->inst < 0)
            return vc__fail(L, VC_ERR_MODEL, p, "\"%.60s\" is a Sequential; tie needs a Linear or Embedding", tv->valuestring);
        const vc_inst *t = &m->inst[e->inst];
        if (!(t->kind->flags & VC_KIND_TIEABLE) || t->np < 1)
            return vc__fail(L, VC_ERR_MODEL, p, "\"%.60s\" is a %s; tie needs a Linear or Embedding", tv->valuestring, t->kind->name);
        tie_to = e->inst;
    }
    *tie_out = tie_to;
    return VC_OK;
}

/* A layer's inputs (its `inputs` key, or the previous layer's output),
 * resolved to values and counted against the kind's. */
static vc_status item_inputs(loader *L, const scope *S, const cJSON *iv, int i, const char *jpath, const vc_kind *k,
                             int ins[VC_MAX_INPUTS], int *nin_out)
{
    char p[300], got[80];
    const char *kname = k ? k->name : "Sequential";
    int nin = 0;
    ins[0] = -1; /* read only below nin, but for load_item's ins[0], which holds -1 when nin is 0 */
    if (iv) {
        vc__join(p, sizeof p, jpath, "inputs"); /* without inputs, written on the error paths only */
        if (cJSON_IsString(iv)) {
            ins[nin] = vc__resolve(L, S, iv->valuestring, i, p);
            if (ins[nin++] < 0) return L->err->code;
        } else if (cJSON_IsArray(iv)) {
            int n = cJSON_GetArraySize(iv);
            if (n < 1 || n > VC_MAX_INPUTS)
                return vc__fail(L, n ? VC_ERR_LIMIT : VC_ERR_MODEL, p, "expected 1 to %d input names, got %d", VC_MAX_INPUTS, n);
            int j = 0;
            for (const cJSON *e = iv->child; e; e = e->next, j++) {
                char pj[320];
                vc_cat_index(pj, sizeof pj, p, "", j); /* snprintf "%s[%d]": the same bytes */
                if (!cJSON_IsString(e)) {
                    vc__describe(e, got, sizeof got);
                    return vc__fail(L, VC_ERR_MODEL, pj, "expected a layer name, \"input\" or \"layers[k]\", got %s", got);
                }
                ins[nin] = vc__resolve(L, S, e->valuestring, i, pj);
                if (ins[nin++] < 0) return L->err->code;
            }
        } else {
            vc__describe(iv, got, sizeof got);
            return vc__fail(L, VC_ERR_MODEL, p, "expected a list of input names, got %s", got);
        }
    } else if (!k || !(k->flags & VC_KIND_NO_INPUT)) {
        ins[nin++] = i == 0 ? S->input : S->pos[i - 1];
    }
    if (k) {
        if (nin < k->min_inputs || nin > k->max_inputs) {
            vc__join(p, sizeof p, jpath, "inputs");
            if (k->min_inputs == k->max_inputs)
                return vc__fail(L, VC_ERR_MODEL, p, "%s takes %d input%s, got %d", kname, k->min_inputs, k->min_inputs == 1 ? "" : "s", nin);
            return vc__fail(L, VC_ERR_MODEL, p, "%s takes %d to %d inputs, got %d", kname, k->min_inputs, k->max_inputs, nin);
        }
    } else if (nin != 1) {
        vc__join(p, sizeof p, jpath, "inputs");
        return vc__fail(L, VC_ERR_MODEL, p, "Sequential takes 1 input, got %d", nin);
    }
    *nin_out = nin;
    return VC_OK;
}

/* What load_item has read of a layer, for making its copies. */
typedef struct {
    const char *jpath, *ipath; /* its JSON path, its instance path */
    scope *S;
    const int *ins;
    int nin;
    int64_t repeat;
    int depth;
    bool frozen, ckpt;
    int region;
    int tie_to; /* the tied instance's index in m->inst, or -1 */
    uint64_t common; /* common_t's: its members named by a common key */
} copies_t;

/* After the first of `repeat` copies, which declared `per` autograd ops (vc_kind.ops):
 * refuses the copies when all of them would pass VC_MAX_PLAN_OPS, before they are made. */
static vc_status check_copies_ops(loader *L, const char *jpath, const char *what, int64_t repeat, int64_t per)
{
    int64_t rest, all;
    if (repeat < 2 || per <= 0) return VC_OK;
    if (!__builtin_mul_overflow(per, repeat - 1, &rest) && !__builtin_add_overflow(L->ops, rest, &all) &&
        all <= VC_MAX_PLAN_OPS)
        return VC_OK;
    char p[300];
    vc__join(p, sizeof p, jpath, "repeat");
    return vc__fail(L, VC_ERR_LIMIT, p, "%lld copies of %s record up to %lld autograd ops each in one step (what its "
                    "kinds declare): more than the limit of %d in all (docs/limits.md)",
                    (long long)repeat, what, (long long)per, VC_MAX_PLAN_OPS);
}

/* A Sequential's `repeat` copies, each a scope of its own. */
static vc_status load_block(loader *L, const cJSON *item, const copies_t *cp, int *out_val)
{
    vc_model *m = L->m;
    char p[300];
    const char *jpath = cp->jpath, *ipath = cp->ipath;
    int64_t repeat = cp->repeat;
    int depth = cp->depth, region = cp->region, first_inst = (int)m->ninst, out = -1;
    bool fz = cp->frozen, ck = cp->ckpt;
    scope *S = cp->S;

    static const char *const ok[] = {"layers", "type", "name", "inputs", "repeat", "frozen", "checkpoint", "loop", "keep",
                                     "export"};
    if (unknown_keys(L, item, jpath, ok, 10, 0, "for Sequential")) return L->err->code;
    const cJSON *layers = member(item, "layers");
    if (!layers) return vc__fail(L, VC_ERR_MODEL, jpath, "missing \"layers\" (the block's list of layers)");
    if (depth + 1 > VC_MAX_DEPTH)
        return vc__fail(L, VC_ERR_LIMIT, jpath, "Sequential blocks nest deeper than the limit of %d", VC_MAX_DEPTH);
    int cur = cp->ins[0];
    for (int64_t c = 0; c < repeat; c++) {
        char ip[300];
        if (repeat > 1) vc_cat_index(ip, sizeof ip, ipath, "", (long long)c);
        else vc_cat3(ip, sizeof ip, ipath, "", "");
        int r = region >= 0 ? region : ck ? m->nregions++ : -1;
        size_t copy_first = m->ninst;
        int64_t ops0 = L->ops;
        if (load_scope(L, layers, jpath, ip, S, cur, depth + 1, fz, r, &out)) return L->err->code;
        /* x = block(x): x lives until this copy returns */
        if (repeat > 1 && m->ninst > copy_first && hold_block_input(L, cur, jpath)) return L->err->code;
        /* refuse a repeat that will exceed the layer limit now, not after a million copies */
        int64_t per = (int64_t)m->ninst - first_inst, rest;
        if (c == 0 && repeat > 1 &&
            (__builtin_mul_overflow(per, repeat - 1, &rest) || rest > (int64_t)VC_MAX_LAYERS - (int64_t)m->ninst))
            return vc__fail(L, VC_ERR_LIMIT, jpath, "more than %d layers (after expanding repeat): the limit", VC_MAX_LAYERS);
        if (repeat > 1 && !vc_shape_eq(&m->val[out].shape, &m->val[cur].shape)) {
            char a[96], b2[96];
            vc_shape_str(&m->val[cur].shape, a, sizeof a);
            vc_shape_str(&m->val[out].shape, b2, sizeof b2);
            vc__join(p, sizeof p, jpath, "repeat");
            return vc__fail(L, VC_ERR_MODEL, p, "repeat needs the output shape to equal the input shape, but %s becomes %s", a, b2);
        }
        /* the ops the copies declare, before the other copies are made */
        if (c == 0 && check_copies_ops(L, jpath, "the block", repeat, L->ops - ops0)) return L->err->code;
        cur = out;
    }
    *out_val = out;
    return VC_OK;
}

/* A layer kind's `repeat` copies: its fields parsed once, an instance per copy. */
static vc_status load_layer(loader *L, const vc_kind *k, const cJSON *item, const copies_t *cp, int *out_val)
{
    vc_model *m = L->m;
    char p[300];
    const char *jpath = cp->jpath, *ipath = cp->ipath, *kname = k->name;
    int64_t repeat = cp->repeat;
    int region = cp->region, out = -1;
    bool fz = cp->frozen, ck = cp->ckpt;
    void *cfg = vc_arena_alloc(m->arena, k->cfg_size ? k->cfg_size : 1);
    if (!cfg) return vc__fail(L, VC_ERR_NOMEM, jpath, "out of memory");
    vc_args a;
    args_init(&a, item, L->err, jpath, kname);
    if (k->parse(&a, cfg)) {
        if (L->err->code == VC_OK) vc__fail(L, VC_ERR_MODEL, jpath, "invalid %s", kname);
        else prefer_misspelling(L, k, item, jpath, &a);
        return L->err->code;
    }
    if (!all_known(item, a.known, a.nknown, a.hit | cp->common)) {
        char what[64];
        vc_cat3(what, sizeof what, "for ", kname, "");
        vc__args_known_unique(&a);
        if (unknown_keys(L, item, jpath, a.known, a.nknown, NCOMMON, what)) return L->err->code;
    }
    if (repeat > (int64_t)VC_MAX_LAYERS - (int64_t)m->ninst)
        return vc__fail(L, VC_ERR_LIMIT, jpath, "more than %d layers (after expanding repeat): the limit", VC_MAX_LAYERS);
    int cur[VC_MAX_INPUTS];
    memcpy(cur, cp->ins, (size_t)cp->nin * sizeof *cur); /* vc__instantiate reads cur[0..nin) */
    for (int64_t c = 0; c < repeat; c++) {
        char ip[300];
        if (repeat > 1) vc_cat_index(ip, sizeof ip, ipath, "", (long long)c); /* one copy: ipath itself, a string of < 300 bytes */
        int r = region >= 0 ? region : ck ? m->nregions++ : -1;
        int64_t ops0 = L->ops;
        if (vc__instantiate(L, k, cfg, jpath, repeat > 1 ? ip : ipath, cur, cp->nin, fz, r, cp->tie_to, &out))
            return L->err->code;
        if (repeat > 1 && !vc_shape_eq(&m->val[out].shape, &m->val[cur[0]].shape)) {
            char a2[96], b2[96];
            vc_shape_str(&m->val[cur[0]].shape, a2, sizeof a2);
            vc_shape_str(&m->val[out].shape, b2, sizeof b2);
            vc__join(p, sizeof p, jpath, "repeat");
            return vc__fail(L, VC_ERR_MODEL, p, "repeat needs the output shape to equal the input shape, but %s becomes %s", a2, b2);
        }
        /* the ops the copies declare, before the other copies are made */
        if (c == 0 && check_copies_ops(L, jpath, kname, repeat, L->ops - ops0)) return L->err->code;
        cur[0] = out;
    }
    *out_val = out;
    return VC_OK;
}

static vc_status load_item(loader *L, scope *S, const cJSON *item, int i, const char *jpath, const char *ipath,
                           int depth, bool frozen, int region)
{
    vc_model *m = L->m;
    char p[300], got[80];
    if (!cJSON_IsObject(item)) {
        vc__describe(item, got, sizeof got);
        return vc__fail(L, VC_ERR_MODEL, jpath, "expected a layer object such as {\"type\": \"Linear\", ...}, got %s", got);
    }
    if (check_duplicates(L, item, jpath)) return L->err->code;
    bool seq = false;
    const vc_kind *k = NULL;
    common_t cm;
    common_members(item, &cm);
    if (item_kind(L, item, cm.type, jpath, &seq, &k)) return L->err->code;
    const char *kname = seq ? "Sequential" : k->name;

    /* common keys */
    const char *name = NULL;
    const cJSON *nv = cm.name;
    if (nv && (!cJSON_IsString(nv) || !nv->valuestring[0])) {
        vc__join(p, sizeof p, jpath, "name");
        if (cJSON_IsString(nv)) return vc__fail(L, VC_ERR_MODEL, p, "a name may not be empty");
        vc__describe(nv, got, sizeof got);
        return vc__fail(L, VC_ERR_MODEL, p, "expected a name (a non-empty string), got %s", got);
    }
    if (nv) name = nv->valuestring;
    const char *module = NULL; /* the module's qualified name in the source (the exporter writes it) */
    const cJSON *mv = cm.module;
    if (mv && (!cJSON_IsString(mv) || !mv->valuestring[0] || strlen(mv->valuestring) > 200)) {
        vc__join(p, sizeof p, jpath, "module");
        vc__describe(mv, got, sizeof got);
        return vc__fail(L, VC_ERR_MODEL, p, "expected the module's qualified name (a string of 1 to 200 bytes), got %s", got);
    }
    if (mv) module = mv->valuestring;
    int64_t repeat = 1;
    const cJSON *rv = cm.repeat;
    if (rv) {
        vc__join(p, sizeof p, jpath, "repeat");
        vc__describe(rv, got, sizeof got);
        int rc = vc__json_int(rv, &repeat);
        if ((rc == -2 && rv->valuedouble > 0) || (!rc && repeat > VC_MAX_LAYERS))
            return vc__fail(L, VC_ERR_LIMIT, p, "%.0f copies: more than the limit of %d layers", rv->valuedouble, VC_MAX_LAYERS);
        if (rc || repeat < 1) return vc__fail(L, VC_ERR_MODEL, p, "expected a positive integer, got %s", got);
    }
    bool fz = false, ck = false, loop = false;
    if (get_bool_key(L, cm.frozen, "frozen", jpath, &fz) || get_bool_key(L, cm.checkpoint, "checkpoint", jpath, &ck) ||
        (seq && get_bool_key(L, cm.loop, "loop", jpath, &loop)))
        return L->err->code;
    fz = fz || frozen;

    int ins[VC_MAX_INPUTS], nin = 0;
    if (item_inputs(L, S, cm.inputs, i, jpath, k, ins, &nin)) return L->err->code;
    /* With repeat, each copy's output replaces input 0 of the next copy;
     * further inputs (a decoder's memory) are shared by every copy. */
    if (repeat > 1 && nin < 1) {
        vc__join(p, sizeof p, jpath, "repeat");
        return vc__fail(L, VC_ERR_MODEL, p, "repeat needs a layer with an input (each copy's output feeds the next); %s has none", kname);
    }

    int tie_to = -1;
    if (item_tie(L, S, cm.tie, jpath, k, &tie_to)) return L->err->code;

    /* "export": names of the block's list (its last copy's under repeat) that this list reads
     * after the block, as values a module returns beside its output: T5Block 0's position
     * biases under checkpointing (src/hf/hf_t5.c), outputs of its checkpoint that later blocks
     * take as arguments */
    const cJSON *xv = seq ? cJSON_GetObjectItemCaseSensitive(item, "export") : NULL;
    int nexp = 0;
    if (xv) {
        vc__join(p, sizeof p, jpath, "export");
        bool ok = cJSON_IsString(xv) || (cJSON_IsArray(xv) && cJSON_GetArraySize(xv) >= 1 &&
                                         cJSON_GetArraySize(xv) <= VC_MAX_EXPORT);
        for (const cJSON *e = cJSON_IsArray(xv) ? xv->child : NULL; ok && e; e = e->next) ok = cJSON_IsString(e);
        if (!ok) {
            vc__describe(xv, got, sizeof got);
            return vc__fail(L, VC_ERR_MODEL, p, "expected a layer name or a list of 1 to %d layer names, got %s",
                            VC_MAX_EXPORT, got);
        }
        nexp = cJSON_IsArray(xv) ? cJSON_GetArraySize(xv) : 1;
    }
    const cJSON *exp0 = L->exp; /* an enclosing block's export, restored after this block */
    const void *expp0 = L->exp_parent;
    L->exp = xv;
    L->exp_parent = S;

    int out = -1, first_inst = (int)m->ninst;
    copies_t cp = {jpath, ipath, S, ins, nin, repeat, depth, fz, ck, region, tie_to, cm.common};
    L->name = name;
    vc_status bst = seq ? load_block(L, item, &cp, &out) : load_layer(L, k, item, &cp, &out);
    int xval[VC_MAX_EXPORT], xinst[VC_MAX_EXPORT];
    memcpy(xval, L->exp_val, sizeof xval);
    memcpy(xinst, L->exp_inst, sizeof xinst);
    L->exp = exp0;
    L->exp_parent = expp0;
    if (bst) return L->err->code;
    for (size_t t = (size_t)first_inst; module && !seq && t < m->ninst; t++) { /* a repeat copy: module.N */
        char qn[224], shown[224 * 4 + 1];
        if (repeat > 1) snprintf(qn, sizeof qn, "%s.%zu", module, t - (size_t)first_inst);
        else vc_cat3(qn, sizeof qn, module, "", ""); /* snprintf "%s": the same bytes, cut alike */
        vc_escape(shown, sizeof shown, qn); /* reports print it: control bytes and invalid UTF-8 escaped */
        if (!(m->inst[t].module = vc_arena_strdup(m->arena, shown))) return vc__fail(L, VC_ERR_NOMEM, NULL, "out of memory");
    }
    /* the caller holds the block's input until the whole block returns: nn.Sequential's caller
     * (`x = self.blocks(x)`) and Module._call_impl's args do (torch/nn/modules/module.py). A
     * "loop" Sequential is a Python loop over the copies instead (`for layer in self.layers:
     * hidden_states = layer(hidden_states)`): the name is rebound as each copy returns, so the
     * block's input lives through its first copy only (load_block's hold of each copy's input) */
    if ((seq || repeat > 1) && !(loop && repeat > 1) && (int)m->ninst > first_inst && hold_block_input(L, ins[0], jpath))
        return L->err->code;
    /* "keep": an earlier value that a Python local of the enclosing forward still references while
     * this block runs (LlamaModel.forward's inputs_embeds through its layer loop): alive until the
     * block returns */
    const cJSON *kv = seq ? cJSON_GetObjectItemCaseSensitive(item, "keep") : NULL;
    if (kv) {
        vc__join(p, sizeof p, jpath, "keep");
        if (!cJSON_IsString(kv)) {
            vc__describe(kv, got, sizeof got);
            return vc__fail(L, VC_ERR_MODEL, p, "expected a layer name, \"input\" or \"layers[k]\", got %s", got);
        }
        int kval = vc__resolve(L, S, kv->valuestring, i, p);
        if (kval < 0) return L->err->code;
        if ((int)m->ninst > first_inst && hold_block_input(L, kval, p)) return L->err->code;
    }
    S->pos[i] = out;
    for (int j = 0; j < nexp; j++) {
        const cJSON *e = cJSON_IsArray(xv) ? cJSON_GetArrayItem(xv, j) : xv;
        vc__join(p, sizeof p, jpath, "export");
        if (vc__add_name(L, S, e->valuestring, xval[j], xinst[j], false, p)) return L->err->code;
    }
    if (name) return vc__add_name(L, S, name, out, !seq && first_inst < (int)m->ninst ? first_inst : -1, seq, jpath);
    return VC_OK;
}

static vc_status load_scope(loader *L, const cJSON *arr, const char *prefix, const char *iprefix,
                            const scope *parent, int input, int depth, bool frozen, int region, int *out)
{
    char path[300];
    vc__join(path, sizeof path, prefix, "layers");
    if (!cJSON_IsArray(arr)) {
        char got[80];
        vc__describe(arr, got, sizeof got);
        return vc__fail(L, VC_ERR_MODEL, path, "expected a list of layers, got %s", got);
    }
    int n = cJSON_GetArraySize(arr);
    if (n == 0) return vc__fail(L, VC_ERR_MODEL, path, "the list of layers is empty");
    if (n > VC_MAX_LAYERS) return vc__fail(L, VC_ERR_LIMIT, path, "%d layers: more than the limit of %d", n, VC_MAX_LAYERS);
    scope S;
    memset(&S, 0, sizeof S);
    S.parent = parent;
    S.input = input;
    S.pos = calloc((size_t)n, sizeof(int));
    S.npos = n;
    S.arr = arr;
    if (!S.pos) return vc__fail(L, VC_ERR_NOMEM, path, "out of memory");
    vc_status st = VC_OK;
    int i = 0;
    /* each item's paths: the scope's two bases written once, then their index per item */
    char jpi[300], ipi[300];
    vc_cat3(jpi, sizeof jpi, path, "", "");
    vc_cat3(ipi, sizeof ipi, iprefix, iprefix[0] ? ".layers" : "layers", "");
    size_t njp = strlen(jpi), nip = strlen(ipi);
    index_text idx;
    index_first(&idx);
    for (const cJSON *item = arr->child; item && !st; item = item->next, i++) {
        if (i) index_next(&idx);
        put_index(jpi, sizeof jpi, njp, &idx);
        put_index(ipi, sizeof ipi, nip, &idx);
        st = load_item(L, &S, item, i, jpi, ipi, depth, frozen, region);
    }
    /* "held_until": "name": the layer's output stays referenced until that later layer returns
     * (a Python variable: LlamaDecoderLayer.forward's hidden_states, the attention's argument,
     * until self_attn returns, o_proj its last layer here) */
    i = 0;
    for (const cJSON *item = arr->child; item && !st; item = item->next, i++) {
        const cJSON *h = cJSON_IsObject(item) ? member(item, "held_until") : NULL;
        if (!h) continue;
        char jp[300], p[300], got[80];
        vc_cat_index(jp, sizeof jp, path, "", i);
        vc__join(p, sizeof p, jp, "held_until");
        const name_entry *e = cJSON_IsString(h) ? vc__scope_lookup(&S, h->valuestring) : NULL;
        int prod = L->m->val[S.pos[i]].producer;
        if (!e || e->seq || e->inst < 0 || e->inst <= prod) {
            vc__describe(h, got, sizeof got);
            st = vc__fail(L, VC_ERR_MODEL, p, "expected the name of a later layer (not a Sequential), got %s", got);
        } else {
            st = hold_value(L, S.pos[i], e->inst, p);
        }
    }
    if (!st) *out = S.pos[n - 1];
    /* the exporting block's own list (load_item "export"): its names' values, before S goes */
    if (!st && L->exp && L->exp_parent == (const void *)parent) {
        int j = 0;
        for (const cJSON *e = cJSON_IsArray(L->exp) ? L->exp->child : L->exp; e && !st; e = e->next, j++) {
            const name_entry *ne = vc__scope_own(&S, e->valuestring);
            char p[300];
            vc__join(p, sizeof p, prefix, "export");
            if (!ne || ne->seq || ne->inst < 0)
                st = vc__fail(L, VC_ERR_MODEL, p, "\"%.60s\" is not the name of a layer (not a Sequential) in this block's "
                              "list", e->valuestring);
            else {
                L->exp_val[j] = ne->val;
                L->exp_inst[j] = ne->inst;
            }
            if (!cJSON_IsArray(L->exp)) break;
        }
    }
    free(S.pos);
    vc__scope_free(&S);
    return st;
}

/* The layer instances a list of layers makes (repeat and Sequential blocks expanded), at most cap: read
 * from the JSON before the walk checks it, so a wrong count only misjudges the tables' first size. */
static size_t count_layers(const cJSON *arr, size_t cap, int depth)
{
    size_t n = 0;
    if (!cJSON_IsArray(arr) || depth > VC_MAX_DEPTH) return 0;
    for (const cJSON *it = arr->child; it && n < cap; it = it->next) {
        if ((it->type & 0xFF) != cJSON_Object) continue; /* cJSON_IsObject */
        const cJSON *t = NULL, *r = NULL; /* member(it, "type"), member(it, "repeat"), in one pass */
        for (const cJSON *c = it->child; c && c->string; c = c->next)
            if (!t && is_type_key(c->string)) t = c;
            else if (c->string[0] == 'r' && !r && !strcmp(c->string, "repeat")) r = c;
        int64_t copies = 1;
        if (r && (vc__json_int(r, &copies) || copies < 1)) copies = 1;
        size_t each = t && (t->type & 0xFF) == cJSON_String && t->valuestring[0] == 'S' && !strcmp(t->valuestring, "Sequential")
                      ? count_layers(member(it, "layers"), cap, depth + 1) : 1;
        if (each && (uint64_t)copies > (cap - n) / each) n = cap;
        else n += (size_t)copies * each;
    }
    return n;
}

/* The model's instance, value and parameter tables sized from its layer count (at most 2^16 entries
 * first: 15 MB; GROWV doubles them beyond), so that they are not copied and faulted in again as they
 * grow (issue 28: a 2,000-layer file grew them through 8 reallocs each). A parameter a layer is assumed. */
static void size_tables(vc_model *m, const cJSON *layers)
{
    size_t n = count_layers(layers, (size_t)1 << 16, 0);
    if (!n || m->inst || m->val || m->par) return;
    if ((m->inst = malloc(n * sizeof *m->inst))) m->cap_inst = n;
    if ((m->val = malloc((n + 64) * sizeof *m->val))) m->cap_val = n + 64; /* + the inputs (at most 64) */
    if ((m->par = malloc(n * sizeof *m->par))) m->cap_par = n;
}

static vc_status load_inputs(loader *L, const cJSON *root)
{
    vc_model *m = L->m;
    const cJSON *in = member(root, "input");
    const cJSON *ins = member(root, "inputs");
    if (in && ins) {
        L->at_key = true;
        return vc__fail(L, VC_ERR_MODEL, "inputs", "give either \"input\" or \"inputs\", not both");
    }
    if (!in && !ins) return vc__fail(L, VC_ERR_MODEL, "input", "missing: the per-sample input shape, e.g. \"input\": [3, 224, 224]");
    if (in) {
        vc_shape s;
        vc_dtype dt;
        if (parse_shape_value(L, in, "input", &s, &dt)) return L->err->code;
        if (L->override) s = *L->override;
        m->ninputs = 1;
        m->input_names = vc_arena_alloc(m->arena, sizeof(char *));
        if (!m->input_names || vc__new_value(L, &s, dt, -1) < 0) return vc__fail(L, VC_ERR_NOMEM, NULL, "out of memory");
        return VC_OK;
    }
    if (!cJSON_IsObject(ins) || !ins->child) {
        char got[80];
        vc__describe(ins, got, sizeof got);
        if (cJSON_IsObject(ins)) snprintf(got, sizeof got, "an empty object");
        return vc__fail(L, VC_ERR_MODEL, "inputs", "expected an object of named inputs, e.g. {\"src\": [128, 512]}, got %s", got);
    }
    if (check_duplicates(L, ins, "inputs")) return L->err->code;
    int n = cJSON_GetArraySize(ins);
    if (n > 64) return vc__fail(L, VC_ERR_LIMIT, "inputs", "%d inputs: more than the limit of 64", n);
    if (L->override && n != 1) return vc__fail(L, VC_ERR_USAGE, "inputs", O("input") " needs a model with a single input, this one has %d", n);
    m->input_names = vc_arena_alloc(m->arena, (size_t)n * sizeof(char *));
    if (!m->input_names) return vc__fail(L, VC_ERR_NOMEM, NULL, "out of memory");
    for (const cJSON *c = ins->child; c; c = c->next) {
        char p[300];
        vc__join(p, sizeof p, "inputs", c->string);
        if (!c->string[0]) {
            L->at_key = true;
            return vc__fail(L, VC_ERR_MODEL, p, "an input name may not be empty");
        }
        if (!strcmp(c->string, "input") || !strncmp(c->string, "layers[", 7)) {
            L->at_key = true;
            return vc__fail(L, VC_ERR_MODEL, p, "\"%.60s\" is reserved; choose another name", c->string);
        }
        vc_shape s;
        vc_dtype dt;
        if (parse_shape_value(L, c, p, &s, &dt)) return L->err->code;
        if (L->override) s = *L->override;
        m->input_names[m->ninputs++] = vc_arena_strdup(m->arena, c->string);
        if (!m->input_names[m->ninputs - 1] || vc__new_value(L, &s, dt, -1) < 0) return vc__fail(L, VC_ERR_NOMEM, NULL, "out of memory");
    }
    return VC_OK;
}

/* "max_positions": the longest sequence generation may reach (optional). */
/* "input_fixed": why the file's sizes do not follow --input (the exporter's
 * note; vc_model_set_input_shape refuses then). Optional. */
static vc_status load_input_fixed(loader *L, const cJSON *root)
{
    const cJSON *fx = member(root, "input_fixed");
    if (!fx) return VC_OK;
    if (!cJSON_IsString(fx) || !fx->valuestring[0] || strlen(fx->valuestring) > 1000) {
        char got[80];
        vc__describe(fx, got, sizeof got);
        return vc__fail(L, VC_ERR_MODEL, "input_fixed",
                        "expected why the sizes do not follow the input (a string of 1 to 1000 bytes), got %s", got);
    }
    char *t = vc_arena_alloc(L->m->arena, strlen(fx->valuestring) * 4 + 1);
    if (!t) return vc__fail(L, VC_ERR_NOMEM, NULL, "out of memory");
    vc_escape(t, strlen(fx->valuestring) * 4 + 1, fx->valuestring);
    L->m->input_fixed = t;
    return VC_OK;
}

static vc_status load_max_positions(loader *L, const cJSON *root)
{
    const cJSON *mp = member(root, "max_positions");
    if (mp && (vc__json_int(mp, &L->m->max_positions) || L->m->max_positions < 1)) {
        char got[80];
        vc__describe(mp, got, sizeof got);
        return vc__fail(L, VC_ERR_MODEL, "max_positions",
                        "expected a positive integer (the longest sequence generation may reach), got %s", got);
    }
    return VC_OK;
}

/* The "loss" key: a row of the loss table (src/engine/loss.c) by its name. */
static vc_status load_loss(loader *L, const cJSON *root)
{
    const cJSON *loss = member(root, "loss");
    if (!loss && member(root, "loss_chunks"))
        return vc__fail(L, VC_ERR_MODEL, "loss_chunks", "goes with \"loss\": \"chunked_ce\"");
    if (!loss) return VC_OK;
    const char *losses[24];
    int nl = vc__loss_count() < 24 ? vc__loss_count() : 24;
    char all[480] = "", got[80];
    for (int i = 0; i < nl; i++) {
        losses[i] = vc_loss_row_get((vc_loss)i)->name;
        size_t l = strlen(all);
        snprintf(all + l, sizeof all - l, "%s\"%s\"", i ? (i == nl - 1 ? " or " : ", ") : "", losses[i]);
    }
    int k = cJSON_IsString(loss) ? vc__loss_from_name(loss->valuestring) : -1;
    if (k >= 0) {
        L->m->loss = (vc_loss)k;
        /* "loss_chunks": chunked_ce's num_output_chunks (torchtune's CEWithChunkedOutputLoss) */
        const cJSON *nc = member(root, "loss_chunks");
        if (nc && (k != VC_LOSS_CHUNKED || vc__json_int(nc, &L->m->loss_chunks) || L->m->loss_chunks < 1 ||
                   L->m->loss_chunks > (INT64_C(1) << 40))) {
            vc__describe(nc, got, sizeof got);
            return vc__fail(L, VC_ERR_MODEL, "loss_chunks", k != VC_LOSS_CHUNKED ? "goes with \"loss\": \"chunked_ce\", not %s"
                            : "expected a positive integer (the chunks of the output projection), got %s",
                            k != VC_LOSS_CHUNKED ? loss->valuestring : got);
        }
        return VC_OK;
    }
    vc__describe(loss, got, sizeof got);
    const char *s = cJSON_IsString(loss) ? vc__nearest(loss->valuestring, losses, nl) : NULL;
    return s ? vc__fail(L, VC_ERR_MODEL, "loss", "expected %s, got %s (did you mean \"%s\"?)", all, got, s)
             : vc__fail(L, VC_ERR_MODEL, "loss", "expected %s, got %s", all, got);
}

/* The encoding of a text that is UTF-16 or UTF-32, not UTF-8, NULL
 * otherwise: its byte-order mark (Unicode 15, 23.8 "Byte Order Mark"), or
 * without one the pattern of NUL bytes JSON's first two ASCII characters
 * make (RFC 4627 section 3). PowerShell 5's '>' and Out-File write UTF-16LE
 * with a BOM. JSON text is UTF-8 (RFC 8259 section 8.1). */
static const char *wide_encoding(const unsigned char *s, size_t n)
{
    if (n >= 4 && !memcmp(s, "\xFF\xFE\0\0", 4)) return "UTF-32 (little-endian)";
    if (n >= 4 && !memcmp(s, "\0\0\xFE\xFF", 4)) return "UTF-32 (big-endian)";
    if (n >= 2 && s[0] == 0xFF && s[1] == 0xFE) return "UTF-16 (little-endian)";
    if (n >= 2 && s[0] == 0xFE && s[1] == 0xFF) return "UTF-16 (big-endian)";
    if (n < 4) return NULL;
    /* without a BOM, only when the first character is one a JSON text starts
     * with (a binary file's header is not taken for UTF-32) */
#define JSON_FIRST(c) ((c) && strchr("{[\" \t\r\n", (c)))
    if (!s[0] && !s[1] && !s[2] && JSON_FIRST(s[3])) return "UTF-32 (big-endian)";
    if (JSON_FIRST(s[0]) && !s[1] && !s[2] && !s[3]) return "UTF-32 (little-endian)";
    if (!s[0] && JSON_FIRST(s[1]) && !s[2] && s[3]) return "UTF-16 (big-endian)";
    if (JSON_FIRST(s[0]) && !s[1] && s[2] && !s[3]) return "UTF-16 (little-endian)";
#undef JSON_FIRST
    return NULL;
}

vc_hf_split vc__load_split(const vc_model *m)
{
    return (vc_hf_split){m->tp > 1 ? m->tp : 1, m->sp, m->vllm,
                         /* vLLM's MXFP4 experts padded per rank (hf_tp.c): the format the experts load as */
                         (m->has_quant ? m->quant.format : m->cfg_quant.format) == VC_WEIGHTS_MXFP4 ? m->mxfp4_align : 0,
                         m->image_decode, m->whisper_part};
}

vc_status vc__load(vc_model *m, const vc_shape *override, vc_error *err)
{
    loader L = {m, err, override, false, 1, 0};
    m->cfg_dtype = -1; /* a config.json sets it (vc_hf_dtype) */
    const char *enc = wide_encoding((const unsigned char *)m->text, m->text_len);
    if (enc) return vc_set_error(err, VC_ERR_PARSE, NULL, "the file is %s; save it as UTF-8", enc);
    bool blank = true;
    for (size_t i = 0; i < m->text_len && blank; i++) blank = strchr(" \t\r\n", m->text[i]) != NULL;
    if (blank) return vc_set_error(err, VC_ERR_PARSE, NULL, m->text_len ? "the file has only whitespace: no JSON object" : "the file is empty");
    const char *at = NULL;
    char msg[300];
    long values = 0;
    cJSON *tree = NULL;
    if (vc__json_read(m->text, m->text_len, &tree, &at, msg, sizeof msg, &values)) {
        vc_set_error(err, VC_ERR_PARSE, NULL, "%s", msg);
        vc__line_col(m->text, m->text_len, at, &err->line, &err->col);
        return VC_ERR_PARSE;
    }
    cJSON *root = tree; /* root: a config's generated model after vc_hf_build */
    if (!root) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory while parsing the JSON text");
    vc_status st = VC_OK;
    char got[80];
    if (!cJSON_IsObject(root)) {
        vc__describe(root, got, sizeof got);
        st = vc__fail(&L, VC_ERR_MODEL, NULL, "expected a JSON object with \"input\" and \"layers\" at the top level, got %s", got);
        goto done;
    }
    if ((st = check_duplicates(&L, root, "")) != VC_OK) goto done;
    if (vc_hf_is_config(root)) { /* a Hugging Face config.json (src/hf/hf.c): load the model it describes */
        cJSON *gen = NULL;
        if ((st = vc__quant_from_config(root, &m->cfg_quant, err)) != VC_OK) goto done;
        if ((st = vc_hf_build(root, &m->hf, vc__load_split(m), &m->tf, &gen, err)) != VC_OK)
            goto done;
        m->lora_targets = vc_hf_lora_targets(root);
        m->images_one_sequence = vc_hf_images_one_sequence(root);
        const cJSON *mt = member(root, "model_type");
        vc__peft_defaults(cJSON_IsString(mt) ? mt->valuestring : NULL, &m->ia3_targets, &m->ia3_feedforward, &m->ln_targets);
        m->cfg_dtype = vc_hf_dtype(root, &m->cfg_no_fp16);
        vc_hf_logits_processors(root, &m->gen_lp);
        vc__json_free(tree);
        tree = NULL;
        root = gen;
        if (!m->gen_json) {
            char *t = cJSON_Print(root); /* through the caller's cJSON hooks: copied to malloc'd memory */
            m->gen_json = t ? strdup(t) : NULL;
            cJSON_free(t);
            if (!m->gen_json) {
                st = vc__fail(&L, VC_ERR_NOMEM, NULL, "out of memory");
                goto done;
            }
        }
    }
    static const char *const ok[] = {"name", "description", "source", "input", "inputs", "layers", "loss", "max_positions",
                                     "input_fixed", "loss_chunks"};
    if ((st = unknown_keys(&L, root, "", ok, 10, 0, "at the top level")) != VC_OK) goto done;
    if ((st = load_max_positions(&L, root)) != VC_OK || (st = load_input_fixed(&L, root)) != VC_OK) goto done;
    const cJSON *nm = member(root, "name");
    if (nm && !cJSON_IsString(nm)) {
        vc__describe(nm, got, sizeof got);
        st = vc__fail(&L, VC_ERR_MODEL, "name", "expected a string, got %s", got);
        goto done;
    }
    /* the name is shown in every report: kept as safe text (control bytes and
     * invalid UTF-8 escaped, vc_escape_text), at most 4 KiB of it */
    size_t nlen = nm ? strlen(nm->valuestring) : 0;
    char *name = vc_arena_alloc(m->arena, (nlen < 1024 ? nlen : 1024) * 4 + 1);
    if (name) vc_escape(name, (nlen < 1024 ? nlen : 1024) * 4 + 1, nm ? nm->valuestring : "");
    m->name = name;
    if (!m->name) {
        st = vc__fail(&L, VC_ERR_NOMEM, NULL, "out of memory");
        goto done;
    }
    for (const char *key = "description"; key; key = strcmp(key, "description") ? NULL : "source") {
        const cJSON *d = member(root, key);
        if (d && !cJSON_IsString(d)) {
            vc__describe(d, got, sizeof got);
            st = vc__fail(&L, VC_ERR_MODEL, key, "expected a string, got %s", got);
            goto done;
        }
    }
    if ((st = load_loss(&L, root)) != VC_OK) goto done;
    const cJSON *layers = member(root, "layers");
    size_tables(m, layers);
    if ((st = load_inputs(&L, root)) != VC_OK) goto done;
    if (!layers) {
        st = vc__fail(&L, VC_ERR_MODEL, "layers", "missing: the list of layers");
        goto done;
    }
    scope top;
    memset(&top, 0, sizeof top);
    if ((st = load_scope(&L, layers, "", "", &top, 0, 0, false, -1, &m->output)) != VC_OK) goto done;
    if ((st = vc__quant_assign(m, err)) != VC_OK) goto done; /* the storage format of each Linear weight (src/policy/quant.c) */
    const vc_loss_row *lr = vc_loss_row_get(m->loss);
    if (lr->classes && m->val[m->output].shape.nd < 1)
        st = vc__fail(&L, VC_ERR_MODEL, "loss", "%s needs an output with a class dimension", lr->name);
    else if (lr->fused && (m->loss_head = vc__loss_head(m)) < 0)
        st = vc__fail(&L, VC_ERR_MODEL, "loss", "%s computes the LM head itself: the model must end in it, a Linear "
                      "layer (followed only by Scale/Tanh soft-capping)", lr->name);
done:
    if (tree) vc__json_free(tree);
    else cJSON_Delete(root);
    if (st != VC_OK) vc__locate_error(m->text, m->text_len, err, L.at_key, L.nth);
    return st;
}
