/*
 * load.h — the loader's private parts, shared by its files:
 *   json_check.c   1. a strict validator over the raw text (errors with positions);
 *   json_locate.c  an error's JSON path -> line:col in the (valid) text;
 *   args.c         vc_args: a layer kind's fields (layer.h vc_arg_*) and JSON value helpers;
 *   setup.c        vc_setup: a kind's shapes, parameters and buffers (layer.h vc_param ...);
 *   load.c         3. the semantic walk: model keys, Sequential, repeat, ...;
 *   scope.c        scopes and names: what a layer's inputs and tie refer to;
 *   model.c        the public model API (vramcalc.h): file/string -> validate, parse, walk.
 */
#ifndef VC_LOAD_H
#define VC_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "model.h"

/* JSON nesting: every Sequential level is two (its object and its list), the
 * top level three (root, layers, layer), and values inside a layer
 * (inputs: {"x": {"shape": [..]}}) a few more. */
#define JSON_MAX_DEPTH (2 * VC_MAX_DEPTH + 16)
/* cJSON 1.7 reads at most 63 characters of a number (parse_number). */
#define JSON_MAX_NUMBER 63
/* JSON values in a file: cJSON takes ~100 bytes per value, so this bounds
 * the tree at ~400 MiB (a 64 MiB file of "0,0,0,..." would need ~3 GiB).
 * A flat list of a million ReLU layers is 2 million values. */
#define JSON_MAX_VALUES 4000000
/* Parameters / buffers of one model: byte counts of 2^56 elements still fit
 * 64-bit arithmetic with room for every copy (gradients, states, masters). */
#define MAX_TENSOR_ELEMS (INT64_C(1) << 56)
/* the names one Sequential's "export" lists at most */
#define VC_MAX_EXPORT 8

/* json_check.c */
/* 1-based line and column (in characters: UTF-8 continuation bytes do not count) of `at` in text. */
void vc__line_col(const char *text, size_t len, const char *at, int *line, int *col);
/* 0 when text[0..len) (text[len] == '\0') is one valid JSON value (*values: how many, keys not counted);
 * else -1 with *at and msg. */
int vc__json_validate(const char *text, size_t len, const char **at, char *msg, size_t n, long *values);
/* vc__json_validate, which with tree also builds cJSON's tree of a valid text, in the same pass and in one
 * block (*tree NULL when out of memory); freed with vc__json_free, never cJSON_Delete. */
int vc__json_read(const char *text, size_t len, cJSON **tree, const char **at, char *msg, size_t n, long *values);
void vc__json_free(cJSON *root);
/* The value of the four hex digits at p (a \uXXXX escape), -1 when one is not a hex digit. */
long vc__hex4(const char *p);

/* json_locate.c: sets err->line/col from err->path: the value's position, or its key's
 * with at_key (unknown and duplicate keys); the deepest part of the path
 * that exists when the rest does not (a missing key: its object). */
void vc__locate_error(const char *text, size_t len, vc_error *err, bool at_key, int nth);

/* args.c: JSON value helpers */
/* Everything within +-2^40 (VC_MAX_DIM_SIZE) is exact in a double. */
#define MAX_INT VC_MAX_DIM_SIZE
/* The shortest text that reads back as d ("0.1", not 0.10000000000000001). */
void vc__fmt_double(double d, char *buf, size_t n);
/* What a JSON value is, for messages: "3", "the string \"x\"", "a list", ... */
void vc__describe(const cJSON *v, char *buf, size_t n);
/* An exact integer within +-2^40: 0 ok, -1 not a number / not integral /
 * not finite, -2 an integer beyond +-2^40. */
int vc__json_int(const cJSON *v, int64_t *out);
/* "a positive integer", "an integer of at least 3", ... */
const char *vc__int_expect(int64_t min, char *buf, size_t n);
/* The candidate nearest to word ("did you mean"), or NULL when none is close. */
const char *vc__nearest(const char *word, const char *const *cands, int n);
/* A stand-in value for a missing key while probing a kind's keys. */
int64_t vc__placeholder(int64_t min);

#define MAX_KNOWN 96

struct vc_args {
    const cJSON *obj;   /* must stay the first member: layers/pooling.c and resample.c read it */
    vc_error *err;
    const char *path;   /* the layer's JSON path */
    const char *kind;
    const char *known[MAX_KNOWN];
    int nknown;
    bool probe;         /* collecting the kind's keys: missing keys get placeholders */
    char failed[64];    /* the key of the first error */
    bool full;          /* known[] holds MAX_KNOWN distinct keys: a key not among them is not added */
    uint64_t hit;       /* bit j: obj's member j (of its first 64) is named by a key in known[] */
};
/* known[0..nknown) without its repeated keys (args.c known() appends a key asked again unchecked),
 * first occurrences in order: for the messages that list or search them */
void vc__args_known_unique(vc_args *a);

struct vc_setup_priv {
    vc_error *err;
    const char *path;
    int np, nb;
    int64_t pn[VC_MAX_PARAMS];
    char pname[VC_MAX_PARAMS][64];
    uint8_t plen[VC_MAX_PARAMS]; /* strlen(pname[i]) */
    int8_t pnd[VC_MAX_PARAMS];
    unsigned pflags[VC_MAX_PARAMS];
    int64_t pdims[VC_MAX_PARAMS][VC_MAX_DIMS];
    int64_t bn[VC_MAX_PARAMS];
    vc_dtype bdt[VC_MAX_PARAMS];
};

/* load.c: the walk's state */
typedef struct {
    vc_model *m;
    vc_error *err;
    const vc_shape *override;
    bool at_key;        /* the error is about a key (unknown, duplicate), not its value */
    int nth;            /* ... and its nth occurrence */
    int64_t nbuffer;    /* buffer elements so far */
    int64_t ops;        /* the autograd ops the layers so far declare (vc_kind.ops) */
    const char *name;   /* the `name` of the layer being instantiated (LoRA targets), NULL none */
    const vc_kind *recent[8]; /* the kinds load.c found last, the latest first (find_kind) */
    int nrecent;
    /* a Sequential's "export" (load.c load_item): the names its list defines that the enclosing
     * list reads, looked up by the block's own list (the scope whose parent is exp_parent) before
     * it is freed; the last copy's under repeat */
    const cJSON *exp;
    const void *exp_parent;
    int exp_val[VC_MAX_EXPORT], exp_inst[VC_MAX_EXPORT];
} loader;

/* Records the first error (code, JSON path, message) in L->err; returns code. */
vc_status vc__fail(loader *L, vc_status code, const char *path, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void *vc__realloc_or_free(void *p, size_t n);
/* Grows arr (n used of cap) for one more element: 0, or -1 out of memory (arr freed). */
#define GROWV(arr, n, cap)                                                  \
    ((n) < (cap) ? 0                                                        \
     : ((cap) = (cap) ? (cap) * 2 : 16,                                     \
        ((arr) = vc__realloc_or_free((arr), (cap) * sizeof *(arr))) ? 0 : -1))
/* A new value (a layer output or a model input) in the model's table; -1 out of memory. */
int vc__new_value(loader *L, const vc_shape *s, vc_dtype dt, int producer);
/* buf = path + "." + key */
void vc__join(char *buf, size_t n, const char *path, const char *key);

/* scope.c: a list of layers' names, looked up through the enclosing lists */
typedef struct name_entry {
    const char *name;
    int val, inst;  /* inst: the first instance of the named layer, -1 none */
    bool seq;       /* names a Sequential */
} name_entry;

typedef struct scope {
    const struct scope *parent;
    int input;
    int *pos;           /* output value of item i */
    int npos;
    const cJSON *arr;   /* the scope's list of layers */
    name_entry *names;
    int nnames, cap;
    int *ht;            /* open-addressing hash of names: index into names, -1 empty */
    size_t htcap;       /* a power of two, or 0 */
} scope;
/* The entry for name in S or an enclosing scope, NULL when none. */
const name_entry *vc__scope_lookup(const scope *S, const char *name);
/* A name that list S itself defines (not an enclosing list's), or NULL. */
const name_entry *vc__scope_own(const scope *S, const char *name);
/* Adds a layer's name to S (val its output, inst its first instance, -1 none);
 * an error for a duplicate or reserved name, or a model input's. */
vc_status vc__add_name(loader *L, scope *S, const char *name, int val, int inst, bool seq, const char *path);
/* The value ref names inside S for item `item` of its list: an earlier name,
 * "input", "layers[k]" (k < item) or a model input; -1 with the error. */
int vc__resolve(loader *L, const scope *S, const char *ref, int item, const char *path);
/* Frees S's name table (not S->pos). */
void vc__scope_free(scope *S);

/* setup.c: one instance of kind k (a layer or a repeat copy): its setup on the
 * input values ins, the output shape's checks, its parameters (or the tied
 * one: tie_to, an index into m->inst, or -1) and buffers into the model's tables;
 * *out its output value. */
vc_status vc__instantiate(loader *L, const vc_kind *k, void *cfg, const char *jpath, const char *ipath,
                          const int *ins, int nin, bool frozen, int region, int tie_to, int *out);

/* quant.c: a config.json's quantization_config into q (format DENSE when
 * absent), errors naming its key; and, after loading, the storage format of
 * each Linear weight the format replaces (frozen, as Params4bit and
 * Int8Params are). */
vc_status vc__quant_from_config(const cJSON *cfg, vc_quant *q, vc_error *err);
vc_status vc__quant_assign(vc_model *m, vc_error *err);

/* load.c: the semantic walk over m->text (parsed), into m */
vc_status vc__load(vc_model *m, const vc_shape *override, vc_error *err);
/* load.c: the split vc__load builds m's config.json at (vc_hf_build): m's tensor-parallel ranks, vLLM's
 * split and MXFP4 alignment, generate()'s decoding twin */
vc_hf_split vc__load_split(const vc_model *m);

/* resolve.c: what a model argument names. *out: the config.json of a
 * directory or of a Hugging Face id's cached snapshot (malloc'd), NULL when
 * arg is to be read as it is (a file, "-", or a path vc_read_file refuses). */
vc_status vc__model_resolve(const char *arg, char **out, vc_error *err);
/* An hf_quant_config.json beside config_path (NVIDIA ModelOpt): refused, naming its quant_algo. */
vc_status vc__model_side_quant(const char *config_path, vc_error *err);

#endif
