/*
 * hf_encdec_writer.h — the layer writers the encoder-decoders' files (hf_whisper.c, hf_bart.c) share: a
 * layer appended to the model's array (vc__hf_layer) with its inputs and keys, and the Linear, LayerNorm,
 * Dropout and activation layers their modules are written from. Static: each file gets its own copy.
 */
#ifndef VC_HF_ENCDEC_WRITER_H
#define VC_HF_ENCDEC_WRITER_H

#include <cjson/cJSON.h>

#include "hf_arch.h"

typedef struct {
    rd *r;
    cJSON *arr;
} edw;

static inline cJSON *lay(edw *w, const char *type, const char *name) { return vc__hf_layer(w->r, w->arr, type, name); }
static inline void num(edw *w, cJSON *o, const char *k, double v) { vc__hf_num(w->r, o, k, v); }
static inline void flag(edw *w, cJSON *o, const char *k, bool v) { vc__hf_flag(w->r, o, k, v); }
static inline void str(edw *w, cJSON *o, const char *k, const char *v) { vc__hf_str(w->r, o, k, v); }
static inline void ins(edw *w, cJSON *o, const char *a, const char *b, const char *c) { vc__hf_ins(w->r, o, a, b, c, NULL); }

static inline void linear(edw *w, const char *name, const char *in, int64_t nin, int64_t nout, bool bias)
{
    cJSON *o = lay(w, "Linear", name);
    if (in) ins(w, o, in, NULL, NULL);
    num(w, o, "in_features", (double)nin);
    num(w, o, "out_features", (double)nout);
    flag(w, o, "bias", bias);
}

static inline void layer_norm(edw *w, const arch *a, const char *name, const char *in, const char *held_until)
{
    cJSON *o = lay(w, "LayerNorm", name);
    if (in) ins(w, o, in, NULL, NULL);
    num(w, o, "normalized_shape", (double)a->H);
    if (held_until) str(w, o, "held_until", held_until);
}

/* nn.functional.dropout(h, p, training): nothing when p is 0 (returns `in`), else the layer's name */
static inline const char *dropout(edw *w, const char *name, const char *in, double p)
{
    if (p <= 0) return in;
    cJSON *o = lay(w, "Dropout", name);
    ins(w, o, in, NULL, NULL);
    num(w, o, "p", p);
    return name;
}

/* ACT2FN[activation_function] (GELUActivation: F.gelu for "gelu") */
static inline void act_layer(edw *w, const arch *a, const char *name)
{
    if (a->act == A_GELU_NEW || a->act == A_GELU_FAST) {
        str(w, lay(w, "NewGELU", name), "variant", a->act == A_GELU_NEW ? "new" : "fast");
    } else if (a->act == A_SILU) {
        lay(w, "SiLU", name);
    } else if (a->act == A_RELU) {
        lay(w, "ReLU", name);
    } else {
        str(w, lay(w, "GELU", name), "approximate", a->act == A_GELU_TANH ? "tanh" : "none");
    }
}

#endif
