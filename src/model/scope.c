/*
 * scope.c — the loader's names: each list of layers is a scope (load.h
 * `scope`) with a hash table of the names its layers define; a layer's
 * `inputs` and `tie` resolve through the enclosing scopes, "input",
 * "layers[k]" and the model's named inputs, with an error that says what a
 * reference that resolves to nothing is closest to.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

/* 64-bit FNV-1a, cut to size_t (the same hash where size_t has 64 bits;
 * its low bits where 32, as in WebAssembly: web/). */
static size_t hash_str(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return (size_t)h;
}

/* name (hash_str hash) in S's table */
static const name_entry *scope_find_h(const scope *S, const char *name, size_t hash)
{
    if (!S->htcap) return NULL;
    for (size_t h = hash & (S->htcap - 1);; h = (h + 1) & (S->htcap - 1)) {
        int i = S->ht[h];
        if (i < 0) return NULL;
        if (!strcmp(S->names[i].name, name)) return &S->names[i];
    }
}

static const name_entry *scope_find(const scope *S, const char *name)
{
    return S->htcap ? scope_find_h(S, name, hash_str(name)) : NULL;
}

/* e (its name's hash_str hash) into S's table. The first name sizes the table for every item of the
 * scope's list having one (S->npos, at most 4,096 first), so that it is not grown and rehashed name by
 * name. */
static int scope_insert(scope *S, name_entry e, size_t hash)
{
    if (!S->cap && S->npos > 0 && !S->names) {
        int cap = S->npos < 4096 ? S->npos : 4096;
        if (!(S->names = malloc((size_t)cap * sizeof *S->names))) return -1;
        S->cap = cap;
    }
    if (GROWV(S->names, S->nnames, S->cap)) return -1;
    S->names[S->nnames++] = e;
    if ((size_t)S->nnames * 2 > S->htcap) {
        size_t cap = S->htcap ? S->htcap * 2 : 16;
        while (cap < (size_t)S->cap * 2) cap *= 2;
        int *ht = malloc(cap * sizeof *ht);
        if (!ht) return -1;
        memset(ht, 0xff, cap * sizeof *ht);
        free(S->ht);
        S->ht = ht;
        S->htcap = cap;
        for (int i = 0; i < S->nnames - 1; i++) {
            size_t h = hash_str(S->names[i].name) & (cap - 1);
            while (ht[h] >= 0) h = (h + 1) & (cap - 1);
            ht[h] = i;
        }
    }
    size_t h = hash & (S->htcap - 1);
    while (S->ht[h] >= 0) h = (h + 1) & (S->htcap - 1);
    S->ht[h] = S->nnames - 1;
    return 0;
}

const name_entry *vc__scope_lookup(const scope *S, const char *name)
{
    for (const scope *s = S; s; s = s->parent) {
        const name_entry *e = scope_find(s, name);
        if (e) return e;
    }
    return NULL;
}

const name_entry *vc__scope_own(const scope *S, const char *name) { return scope_find(S, name); }

/* Index k of "layers[k]" (digits only), or -1. */
static long long layer_ref(const char *ref)
{
    if (strncmp(ref, "layers[", 7)) return -1;
    const char *p = ref + 7;
    long long k = 0;
    if (*p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (k > 100000000) return -1;
        k = k * 10 + (*p - '0');
    }
    return p[0] == ']' && p[1] == '\0' ? k : -1;
}

/* Resolves a reference inside scope S: a name defined earlier (this scope
 * or an enclosing one), "input", "layers[k]" (k < item), or a model input. */
int vc__resolve(loader *L, const scope *S, const char *ref, int item, const char *path)
{
    const name_entry *e = vc__scope_lookup(S, ref);
    if (e) return e->val;
    if (!strcmp(ref, "input")) return S->input;
    long long k = layer_ref(ref);
    if (k >= 0) {
        if (k < item) return S->pos[k];
        if (k == item) vc__fail(L, VC_ERR_MODEL, path, "\"%s\" is this layer itself; inputs must come from earlier layers", ref);
        else if (k < S->npos)
            vc__fail(L, VC_ERR_MODEL, path, "\"%s\" is a later layer (this is layers[%d]); inputs must come from earlier layers", ref, item);
        else
            vc__fail(L, VC_ERR_MODEL, path, "\"%s\" does not exist: this list has layers[0] to layers[%d]", ref, S->npos - 1);
        return -1;
    }
    for (int i = 0; i < L->m->ninputs; i++)
        if (L->m->input_names[i] && !strcmp(L->m->input_names[i], ref)) return i;
    /* a later layer's name? */
    int j = 0;
    for (const cJSON *it = S->arr ? S->arr->child : NULL; it; it = it->next, j++) {
        const cJSON *nv = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "name") : NULL;
        if (j >= item && cJSON_IsString(nv) && !strcmp(nv->valuestring, ref)) {
            if (j == item) vc__fail(L, VC_ERR_MODEL, path, "\"%.60s\" is this layer's own name; inputs must come from earlier layers", ref);
            else vc__fail(L, VC_ERR_MODEL, path, "\"%.60s\" names a later layer (layers[%d]; this is layers[%d]); inputs must come from earlier layers",
                      ref, j, item);
            return -1;
        }
    }
    /* did you mean: names in scope, "input", model inputs */
    const char *cands[256];
    int nc = 0;
    cands[nc++] = "input";
    for (int i = 0; i < L->m->ninputs && nc < 256; i++)
        if (L->m->input_names[i]) cands[nc++] = L->m->input_names[i];
    for (const scope *s = S; s; s = s->parent)
        for (int i = 0; i < s->nnames && nc < 256; i++) cands[nc++] = s->names[i].name;
    const char *s = vc__nearest(ref, cands, nc);
    if (s) vc__fail(L, VC_ERR_MODEL, path, "unknown input \"%.60s\" (did you mean \"%.60s\"?)", ref, s);
    else vc__fail(L, VC_ERR_MODEL, path, "unknown input \"%.60s\": not the name of an earlier layer, \"input\", a model input or \"layers[k]\"", ref);
    return -1;
}

/* The error's path ("...name") is built only on an error: a model may name
 * every layer, and formatting it each time cost more than the name table. */
vc_status vc__add_name(loader *L, scope *S, const char *name, int val, int inst, bool seq, const char *path)
{
    char p[300];
    size_t hash = hash_str(name);
    if (scope_find_h(S, name, hash)) {
        vc__join(p, sizeof p, path, "name");
        return vc__fail(L, VC_ERR_MODEL, p, "duplicate name \"%.60s\": an earlier layer of this list has it", name);
    }
    if (!strcmp(name, "input") || !strncmp(name, "layers[", 7)) {
        vc__join(p, sizeof p, path, "name");
        return vc__fail(L, VC_ERR_MODEL, p, "\"%.60s\" is reserved; choose another name", name);
    }
    for (int i = 0; i < L->m->ninputs; i++)
        if (L->m->input_names[i] && !strcmp(L->m->input_names[i], name)) {
            vc__join(p, sizeof p, path, "name");
            return vc__fail(L, VC_ERR_MODEL, p, "\"%.60s\" is already the name of a model input", name);
        }
    if (scope_insert(S, (name_entry){name, val, inst, seq}, hash)) return vc__fail(L, VC_ERR_NOMEM, path, "out of memory");
    return VC_OK;
}

void vc__scope_free(scope *S)
{
    free(S->names);
    free(S->ht);
    S->names = NULL;
    S->ht = NULL;
    S->nnames = S->cap = 0;
    S->htcap = 0;
}
