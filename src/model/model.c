/*
 * model.c — the model API of vramcalc.h: a file or a string through the
 * three loading steps (load.h), --input, and the model's accessors.
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

static void reset_model(vc_model *m)
{
    vc__twin_facts_clear(m); /* the tree vc__twin_reshape read is the old load's */
    free(m->inst);
    free(m->val);
    free(m->par);
    free(m->buf);
    free(m->blk_val);
    free(m->blk_last);
    m->blk_val = m->blk_last = NULL;
    m->nblk = m->cap_blk = 0;
    free(m->hold_val);
    free(m->hold_last);
    m->hold_val = m->hold_last = NULL;
    m->nhold = m->cap_hold = 0;
    m->inst = NULL;
    m->val = NULL;
    m->par = NULL;
    m->buf = NULL;
    m->ninst = m->nval = m->npar = m->nbuf = 0;
    m->cap_inst = m->cap_val = m->cap_par = m->cap_buf = 0;
    m->ninputs = 0;
    m->input_names = NULL;
    m->output = 0;
    m->nregions = 0;
    m->nparams = m->ntrainable = 0;
    m->nlora = 0;
    m->nsaved = 0;
    m->nmoe = 0;
    m->loss = VC_LOSS_MEAN;
    m->loss_head = -1;
    m->loss_chunks = 8; /* torchtune's CEWithChunkedOutputLoss default */
    m->max_positions = 0;
    m->input_fixed = NULL;
    vc_model_free(m->split); /* built from what m was */
    m->split = NULL;
}

vc_status vc_model_load_string(const char *json, size_t len, const char *name, vc_model **out, vc_error *err)
{
    return vc_model_load_string_hf(json, len, name, NULL, out, err);
}

const char *vc_model_generated_json(const vc_model *m) { return m->gen_json; }
const char *vc_model_lora_targets(const vc_model *m) { return m->lora_targets ? m->lora_targets : ""; }
const char *vc__model_peft_targets(const vc_model *m, vc_peft p)
{
    const char *t = p == VC_PEFT_IA3 ? m->ia3_targets : p == VC_PEFT_LN_TUNING ? m->ln_targets : m->lora_targets;
    return t ? t : "";
}

/* A model from text: hf its config.json options (NULL: the defaults), lora
 * the adapters to load it with (NULL: none), split its tensor-parallel split
 * (NULL: weights_of's, or none). */
static vc_status load_text(const char *json, size_t len, const char *name, const vc_hf_options *hf,
                           const vc_hf_release *tf, const vc_lora *lora, const vc_model *weights_of, const vc_hf_split *split,
                           vc_model **out,
                           vc_error *err);

vc_status vc_model_load_string_hf(const char *json, size_t len, const char *name, const vc_hf_options *hf,
                                  vc_model **out, vc_error *err)
{
    return load_text(json, len, name, hf, NULL, NULL, NULL, NULL, out, err);
}

vc_status vc__model_load_seq(const vc_model *m, int64_t seq, vc_model **out, vc_error *err)
{
    vc_hf_options hf = m->hf;
    hf.seq = seq;
    return load_text(m->text, m->text_len, m->file, &hf, &m->tf, vc__peft_on(&m->lora) ? &m->lora : NULL, m, NULL, out, err);
}

/* weights_of: a model whose --weights (vc_model_set_weights) and split (--ep, --tp, --sp) the new one takes, or NULL. */
static vc_status load_text(const char *json, size_t len, const char *name, const vc_hf_options *hf,
                           const vc_hf_release *tf, const vc_lora *lora, const vc_model *weights_of, const vc_hf_split *split,
                           vc_model **out,
                           vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    *out = NULL;
    snprintf(err->file, sizeof err->file, "%s", name ? name : "");
    vc_hf_options full_hf;
    vc_status in_st = hf ? vc__hf_options_in(&hf, &full_hf, err) : VC_OK; /* the legacy struct's size (vramcalc.h) */
    if (in_st) return in_st;
    if (len > VC_MAX_FILE_BYTES)
        return vc_set_error(err, VC_ERR_LIMIT, NULL, "the file is larger than the limit of %u MiB", VC_MAX_FILE_BYTES >> 20);
    if (!json && len) return vc_set_error(err, VC_ERR_USAGE, NULL, "no text");
    /* A UTF-8 byte-order mark (Windows editors) is not part of the JSON; line:col count from after it. */
    if (len >= 3 && !memcmp(json, "\xEF\xBB\xBF", 3)) {
        json += 3;
        len -= 3;
    }
    vc_model *m = calloc(1, sizeof *m);
    if (!m || !(m->arena = vc_arena_new())) {
        free(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    m->twin_facts = vc__twin_facts_new(m); /* NULL: none kept, each twin reads the tree */
    m->text = malloc(len + 1);
    if (!m->text) {
        vc_model_free(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    if (len) memcpy(m->text, json, len);
    m->text[len] = '\0';
    m->text_len = len;
    if (hf) m->hf = *hf;
    else vc_hf_options_init(&m->hf);
    if (tf) m->tf = *tf;
    if (lora) m->lora = *lora;
    if (weights_of) {
        m->quant = weights_of->quant;
        m->has_quant = weights_of->has_quant;
        m->ep = weights_of->ep; /* --ep (vc_model_set_ep) */
        m->tp = weights_of->tp; /* --tp, --sp (vc_model_set_tp) */
        m->sp = weights_of->sp;
        m->vllm = weights_of->vllm;
        m->mxfp4_align = weights_of->mxfp4_align;
    }
    if (split) {
        m->tp = split->tp;
        m->sp = split->sp;
        m->vllm = split->vllm && split->tp > 1;
        m->mxfp4_align = m->vllm ? split->mxfp4_align : 0;
    }
    m->file = vc_arena_strdup(m->arena, name ? name : "");
    if (!m->file) {
        vc_model_free(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    vc_status st = vc__load(m, NULL, err);
    if (st) {
        vc_model_free(m);
        return st;
    }
    if (!m->gen_json) { /* a model file: the split is a config.json's (vc__model_at refuses --tp for it) */
        m->tp = 1;
        m->sp = 0;
        m->vllm = 0;
        m->mxfp4_align = 0;
    }
    *out = m;
    return VC_OK;
}

static vc_status twin(const vc_model *m, int64_t seq, bool image_decode, int part, vc_model **out, vc_error *err);

vc_status vc__model_twin(const vc_model *m, int64_t seq, vc_model **out, vc_error *err)
{
    /* m's instances set up again at [seq] (src/model/reshape.c) where m's tree allows it: the same model */
    return vc__twin_reshape(m, seq, out) == VC_OK ? VC_OK : twin(m, seq, false, -1, out, err);
}

vc_status vc__model_twin_load(const vc_model *m, int64_t seq, vc_model **out, vc_error *err)
{
    return twin(m, seq, false, -1, out, err);
}

vc_status vc__model_part(const vc_model *m, int part, int64_t seq, vc_model **out, vc_error *err)
{
    return twin(m, seq, false, part, out, err);
}

vc_status vc__model_twin_decode(const vc_model *m, int64_t seq, vc_model **out, vc_error *err)
{
    return twin(m, seq, true, -1, out, err);
}

/* m's text loaded again at [seq]: a twin (part -1: the same model, its structure checked), or whisper's
 * part `part` (vc_hf_split.whisper_part; src/engine/serve_encdec.c), which vLLM loads without m's adapters */
static vc_status twin(const vc_model *m, int64_t seq, bool image_decode, int part, vc_model **out, vc_error *err)
{
    *out = NULL;
    vc_model *t = calloc(1, sizeof *t);
    if (!t || !(t->arena = vc_arena_new()) || !(t->text = malloc(m->text_len + 1))) {
        vc_model_free(t);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    memcpy(t->text, m->text, m->text_len + 1);
    t->text_len = m->text_len;
    t->hf = m->hf;
    t->tf = m->tf;
    if (part < 0) t->lora = m->lora;
    t->quant = m->quant; /* --weights */
    t->has_quant = m->has_quant;
    t->ep = m->ep;
    t->tp = m->tp;
    t->sp = m->sp;
    t->vllm = m->vllm;
    t->mxfp4_align = m->mxfp4_align;
    t->image_decode = image_decode;
    t->whisper_part = part >= 0 ? part : m->whisper_part; /* a whisper part's twin is the same part */
    t->file = vc_arena_strdup(t->arena, m->file);
    t->has_override = true;
    t->override = vc_shape_make(1, &seq);
    vc_status st = t->file ? vc__load(t, &t->override, err) : vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    if (st == VC_OK && part < 0 && (t->npar != m->npar || t->nbuf != m->nbuf || t->ninst != m->ninst || t->nval != m->nval))
        st = vc_set_error(err, VC_ERR_MODEL, NULL, "the model changes its structure with the sequence length");
    if (st != VC_OK) {
        vc_model_free(t);
        return st;
    }
    *out = t;
    return VC_OK;
}

vc_status vc_model_load_file(const char *path, vc_model **out, vc_error *err)
{
    return vc_model_load_file_hf(path, NULL, out, err);
}

static vc_status load_file(const char *path, const vc_hf_options *hf, const vc_hf_release *tf, const vc_hf_split *split,
                           vc_model **out, vc_error *err);

vc_status vc_model_load_file_hf(const char *path, const vc_hf_options *hf, vc_model **out, vc_error *err)
{
    return load_file(path, hf, NULL, NULL, out, err);
}

vc_status vc__model_load_file_split(const char *path, const vc_hf_options *hf, const vc_hf_release *tf, int64_t tp, int sp,
                                    int vllm, int mxfp4_align, vc_model **out, vc_error *err)
{
    vc_hf_split s = {tp, sp, vllm, mxfp4_align};
    return load_file(path, hf, tf, &s, out, err);
}

static vc_status load_file(const char *path, const vc_hf_options *hf, const vc_hf_release *tf, const vc_hf_split *split,
                           vc_model **out, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    *out = NULL;
    snprintf(err->file, sizeof err->file, "%s", path);
    /* a directory's config.json, a Hugging Face id's cached one (resolve.c) */
    char *resolved;
    vc_status rst = vc__model_resolve(path, &resolved, err);
    if (rst != VC_OK) return rst;
    if (resolved) {
        path = resolved;
        snprintf(err->file, sizeof err->file, "%s", path);
    }
    /* Read at most VC_MAX_FILE_BYTES + 1 bytes: one more than the limit is enough to refuse it. */
    char *buf;
    size_t len;
    vc_status st = vc_read_file(path, (size_t)VC_MAX_FILE_BYTES + 1, &buf, &len, err);
    if (st == VC_OK) {
        st = load_text(buf, len, path, hf, tf, NULL, NULL, split, out, err);
        free(buf);
    }
    /* a config without quantization_config beside an hf_quant_config.json (resolve.c) */
    if (st == VC_OK && resolved && (*out)->gen_json && (*out)->cfg_quant.format == VC_WEIGHTS_DENSE &&
        (st = vc__model_side_quant(path, err)) != VC_OK) {
        vc_model_free(*out);
        *out = NULL;
    }
    free(resolved);
    return st;
}

/* Loads m again from its text with its current settings (input shape,
 * LoRA). On failure the previous settings are put back and loaded, so the
 * model stays usable, and the failure is returned. */
static vc_status reload(vc_model *m, bool had_override, const vc_shape *old_shape, const vc_lora *old_lora, vc_error *err)
{
    reset_model(m);
    vc_status st = vc__load(m, m->has_override ? &m->override : NULL, err);
    if (st != VC_OK) {
        vc_error again;
        vc_error_clear(&again);
        m->has_override = had_override;
        m->override = *old_shape;
        m->lora = *old_lora;
        reset_model(m);
        if (vc__load(m, had_override ? old_shape : NULL, &again) != VC_OK) reset_model(m);
    }
    return st;
}

vc_status vc_model_set_input_shape(vc_model *m, const int64_t *dims, int ndim, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (ndim < 1 || ndim > VC_MAX_DIMS)
        return vc_set_error(err, VC_ERR_USAGE, O("input"), "expected 1 to %d dimensions, got %d", VC_MAX_DIMS, ndim);
    if (m->input_fixed)
        return vc_set_error(err, VC_ERR_USAGE, O("input"),
                            "this file's sizes were exported for its input and do not follow another one (%.600s): "
                            "export the model again at the new input size", m->input_fixed);
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 1 || dims[i] > VC_MAX_DIM_SIZE)
            return vc_set_error(err, VC_ERR_USAGE, O("input"), "dimension %d is %lld: expected 1 to 2^40", i + 1, (long long)dims[i]);
    vc_shape s = vc_shape_make(ndim, dims);
    if (vc_shape_numel(&s) < 0 || vc_shape_numel(&s) > (INT64_C(1) << 56))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("input"), "the shape has more than 2^56 elements");
    bool had = m->has_override;
    vc_shape old = m->override;
    m->has_override = true;
    m->override = s;
    return reload(m, had, &old, &m->lora, err);
}

/* A config.json's model built again with the options hf (its --seq, its --loss)
 * and the tensor-parallel split s; on failure the old ones are put back. */
static vc_status set_hf_split(vc_model *m, const vc_hf_options *hf, vc_hf_split s, vc_error *err)
{
    vc_hf_options old = m->hf;
    vc_hf_split old_split = {m->tp, m->sp, m->vllm, m->mxfp4_align};
    m->hf = *hf;
    m->tp = s.tp;
    m->sp = s.sp;
    m->vllm = s.vllm && s.tp > 1;
    m->mxfp4_align = m->vllm ? s.mxfp4_align : 0;
    free(m->gen_json); /* the model JSON of the new options */
    m->gen_json = NULL;
    vc_status st = reload(m, m->has_override, &m->override, &m->lora, err);
    if (st != VC_OK) {
        m->hf = old;
        m->tp = old_split.tp;
        m->sp = old_split.sp;
        m->vllm = old_split.vllm;
        m->mxfp4_align = old_split.mxfp4_align;
        vc_error again;
        free(m->gen_json);
        m->gen_json = NULL;
        reload(m, m->has_override, &m->override, &m->lora, &again);
    }
    return st;
}

static vc_status set_hf(vc_model *m, const vc_hf_options *hf, vc_error *err)
{
    return set_hf_split(m, hf, (vc_hf_split){m->tp, m->sp, m->vllm, m->mxfp4_align}, err);
}

vc_status vc_model_set_seq(vc_model *m, int64_t seq, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (!m->gen_json)
        return vc_set_error(err, VC_ERR_USAGE, O("seq"), "the sequence length applies to a Hugging Face config.json; this is a vramcalc model file (use " O("input") ")");
    if (seq < 1) return vc_set_error(err, VC_ERR_USAGE, O("seq"), "%lld tokens: expected a positive integer", (long long)seq);
    vc_hf_options hf = m->hf;
    hf.seq = seq;
    return set_hf(m, &hf, err);
}

vc_status vc_model_set_tp(vc_model *m, int64_t tp, int sp, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (!m->gen_json)
        return tp == 1 && !sp ? VC_OK
                              : vc_set_error(err, VC_ERR_USAGE, tp > 1 ? O("tp") : O("sp"),
                                             "tensor parallelism needs a Hugging Face config.json: a model file does not say which Linears are column- or row-parallel");
    return set_hf_split(m, &m->hf, (vc_hf_split){tp, sp}, err);
}

vc_status vc_model_set_loss(vc_model *m, vc_loss_impl loss, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (!m->gen_json)
        return vc_set_error(err, VC_ERR_USAGE, O("loss"), "the loss option applies to a Hugging Face config.json; a vramcalc "
                            "model file names its loss in its \"loss\" key");
    if ((unsigned)loss >= VC_LOSS_IMPL__N) return vc_set_error(err, VC_ERR_USAGE, O("loss"), "unknown loss");
    vc_hf_options hf = m->hf;
    hf.loss = loss;
    return set_hf(m, &hf, err);
}

void vc_lora_init(vc_lora *l)
{
    memset(l, 0, sizeof *l);
    l->alpha = 8; /* LoraConfig: r=8, lora_alpha=8, lora_dropout=0.0 */
    l->dropout = 0;
    l->dtype = VC_LORA_DTYPE_AUTO; /* get_peft_model(autocast_adapter_dtype=True) */
}

int vc_lora_dtype_from_name(const char *s)
{
#define VC__LDNAME(e, n) n,
    static const char *const names[] = {VC_LORA_DTYPE_MAP(VC__LDNAME) NULL};
#undef VC__LDNAME
    for (int i = 0; s && names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

vc_status vc_model_set_lora(vc_model *m, const vc_lora *l, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (l->r < 0 || l->r > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("lora"), "the rank is %lld: expected 1 to 2^40 (0: no adapters)", (long long)l->r);
    if ((unsigned)l->method >= VC_PEFT__N) return vc_set_error(err, VC_ERR_USAGE, O("peft"), "unknown PEFT method");
    const vc_peft_row *pr = vc_peft_row_get(l->method);
    if (!pr->lora && l->r > 0) /* IA3Config and LNTuningConfig have no r */
        return vc_set_error(err, VC_ERR_USAGE, O("peft"), "%s %s: it takes no rank (" O("lora") " R)", pr->name,
                            pr->ia3 ? "learns one vector per target module" : "trains a copy of each target module");
    if (!pr->lora && !memchr(l->targets, 0, sizeof l->targets))
        return vc_set_error(err, VC_ERR_USAGE, O("lora_targets"), "expected the names of the modules to adapt, e.g. k_proj,v_proj,down_proj");
    if (!pr->lora && (unsigned)l->dtype >= VC_LORA_DTYPE__N)
        return vc_set_error(err, VC_ERR_USAGE, O("lora_dtype"), "expected auto, fp32, bf16, fp16 or model");
    if (!memchr(l->modules_to_save, 0, sizeof l->modules_to_save))
        return vc_set_error(err, VC_ERR_USAGE, O("modules_to_save"), "expected the names of the modules to train in full, e.g. lm_head");
    if (l->r > 0) {
        if (!(l->alpha > 0) || l->alpha > 1e12)
            return vc_set_error(err, VC_ERR_USAGE, O("lora_alpha"), "expected a positive number");
        if (!(l->dropout >= 0 && l->dropout < 1))
            return vc_set_error(err, VC_ERR_USAGE, O("lora_dropout"), "expected a probability in [0, 1)");
        if (!l->targets[0] || !memchr(l->targets, 0, sizeof l->targets))
            return vc_set_error(err, VC_ERR_USAGE, O("lora_targets"), "expected the names of the Linear layers to adapt, e.g. q_proj,v_proj");
        if ((unsigned)l->dtype >= VC_LORA_DTYPE__N)
            return vc_set_error(err, VC_ERR_USAGE, O("lora_dtype"), "expected auto, fp32, bf16, fp16 or model");
    }
    vc_lora old = m->lora;
    m->lora = *l;
    vc_status st = reload(m, m->has_override, &m->override, &old, err);
    if (st == VC_OK && vc__peft_on(l) && m->nlora == 0) {
        m->lora = old;
        reload(m, m->has_override, &m->override, &old, err);
        vc_error_clear(err);
        snprintf(err->file, sizeof err->file, "%s", m->file);
        if (pr->copy)
            return vc_set_error(err, VC_ERR_USAGE, O("lora_targets"), "no layer is named %.200s (LN tuning copies layers by their \"name\")",
                                l->targets);
        return vc_set_error(err, VC_ERR_USAGE, O("lora_targets"), "no Linear layer is named %.200s (LoRA adapts Linear layers by their \"name\")",
                            l->targets);
    }
    for (size_t i = 0; st == VC_OK && vc__peft_on(l) && i < m->ninst; i++) {
        const char *fl = m->inst[i].kind->frozen_linears, *e;
        for (const char *p = fl; p && *p; p = *e ? e + 1 : e) { /* each inner name against the targets */
            char one[64];
            e = strchr(p, ',');
            if (!e) e = p + strlen(p);
            snprintf(one, sizeof one, "%.*s", (int)(e - p), p);
            if (!vc__peft_match(one, l->targets)) continue;
            m->lora = old;
            reload(m, m->has_override, &m->override, &old, err);
            vc_error_clear(err);
            snprintf(err->file, sizeof err->file, "%s", m->file);
            return vc_set_error(err, VC_ERR_USAGE, O("lora_targets"), "%s also names the %s modules inside %s, which PEFT "
                                "would adapt there too: adapters inside it are not modelled (it runs frozen, without "
                                "autograd); name other modules", one, one, m->inst[i].kind->name);
        }
    }
    if (st == VC_OK && vc__peft_on(l) && l->modules_to_save[0] && m->nsaved == 0) {
        m->lora = old;
        reload(m, m->has_override, &m->override, &old, err);
        vc_error_clear(err);
        snprintf(err->file, sizeof err->file, "%s", m->file);
        return vc_set_error(err, VC_ERR_USAGE, O("modules_to_save"), "no layer is named %.200s (modules_to_save names layers by their \"name\")",
                            l->modules_to_save);
    }
    return st;
}

vc_status vc_model_set_weights(vc_model *m, const vc_quant *q, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (vc__quant_settings_check(q, err)) return VC_ERR_USAGE; /* bits, group, block against the format's row */
    if (!memchr(q->skip, 0, sizeof q->skip)) return vc_set_error(err, VC_ERR_USAGE, O("weights"), "the module list is not terminated");
    vc_quant old = m->quant;
    bool had = m->has_quant;
    m->quant = *q;
    m->has_quant = true;
    vc_status st = reload(m, m->has_override, &m->override, &m->lora, err);
    if (st != VC_OK) { /* back to the previous format, still loadable */
        m->quant = old;
        m->has_quant = had;
        vc_error again;
        reload(m, m->has_override, &m->override, &m->lora, &again);
        if (!strcmp(err->path, O("weights"))) err->line = err->col = 0; /* an option's error: no place in the file */
    }
    return st;
}

/* --ep: every SparseMoE layer is set up as one expert-parallel rank's share
 * (layers/llm.c moe_setup, layers/moe_ep.c); its checks fail the load, and
 * their errors name --ep. */
vc_status vc_model_set_ep(vc_model *m, int64_t ep, vc_error *err)
{
    vc_error local;
    if (!err) err = &local;
    vc_error_clear(err);
    snprintf(err->file, sizeof err->file, "%s", m->file);
    if (ep < 1 || ep > (INT64_C(1) << 20))
        return vc_set_error(err, VC_ERR_USAGE, O("ep"), "expected 1 to 2^20 expert-parallel ranks, got %lld", (long long)ep);
    int64_t old = m->ep;
    m->ep = ep;
    vc_status st = reload(m, m->has_override, &m->override, &m->lora, err);
    if (st == VC_OK && ep > 1 && m->nmoe == 0) {
        vc_error_clear(err);
        snprintf(err->file, sizeof err->file, "%s", m->file);
        st = vc_set_error(err, VC_ERR_USAGE, O("ep"), "expert parallelism needs mixture-of-experts layers (SparseMoE): this model has none");
    }
    if (st != VC_OK) {
        m->ep = old;
        vc_error again;
        reload(m, m->has_override, &m->override, &m->lora, &again);
        if (strstr(err->msg, O("ep"))) { /* a SparseMoE layer's refusal: the option's error */
            char msg[sizeof err->msg];
            const char *w = strstr(err->msg, O("ep") ": ");
            snprintf(msg, sizeof msg, "%s", w ? w + 6 : err->msg);
            vc_error_clear(err);
            snprintf(err->file, sizeof err->file, "%s", m->file);
            st = vc_set_error(err, VC_ERR_USAGE, O("ep"), "%s", msg);
        }
    }
    return st;
}

/* vllm: vLLM's split (0 Megatron's, else 1 + the MXFP4 alignment): whether m's tensor-parallel split is the
 * options' (tp_at) and its expert-parallel one too (at_split) */
static bool tp_at(const vc_model *m, const vc_options *o, int vllm)
{
    const bool v = vllm && o->tp > 1;
    return (m->tp > 1 ? m->tp : 1) == o->tp && !m->sp == !o->sp && !m->vllm == !v && m->mxfp4_align == (v ? vllm - 1 : 0);
}

static bool at_split(const vc_model *m, const vc_options *o, int vllm)
{
    return tp_at(m, o, vllm) && (m->ep > 1 ? m->ep : 1) == o->ep;
}

static vc_status model_at(const vc_model *m, const vc_options *o, int vllm, const vc_model **use, vc_error *err);

vc_status vc__model_at(const vc_model *m, const vc_options *o, const vc_model **use, vc_error *err)
{
    return model_at(m, o, 0, use, err);
}

vc_status vc__model_at_vllm(const vc_model *m, const vc_options *o, int mxfp4_align, const vc_model **use, vc_error *err)
{
    return model_at(m, o, 1 + (mxfp4_align > 0 ? mxfp4_align : 0), use, err);
}

/* vllm: vLLM's split of the tensor-parallel ranks (--serve, src/hf/hf_tp.c), 1 + its MXFP4 alignment; 0
 * Megatron's */
static vc_status model_at(const vc_model *m, const vc_options *o, int vllm, const vc_model **use, vc_error *err)
{
    *use = m;
    if (m->stage.on) return VC_OK; /* a pipeline stage: made from a model at the split */
    if (!m->gen_json && (o->tp > 1 || o->sp)) /* the split is made when a config.json is read */
        return vc_set_error(err, VC_ERR_USAGE, o->tp > 1 ? O("tp") : O("sp"),
                            "tensor parallelism needs a Hugging Face config.json: a model file does not say which Linears are column- or row-parallel");
    if (at_split(m, o, vllm)) return VC_OK;
    for (const vc_model *s = m->split; s; s = s->split) /* built before: kept, an estimator may hold it */
        if (at_split(s, o, vllm)) {
            *use = s;
            return VC_OK;
        }
    /* m's text with its options, adapters, weights and input, at the options' split */
    vc_model *c = NULL;
    vc_status st = load_text(m->text, m->text_len, m->file, &m->hf, &m->tf, vc__peft_on(&m->lora) ? &m->lora : NULL, m, NULL, &c, err);
    if (!st && m->has_override) st = vc_model_set_input_shape(c, m->override.d, m->override.nd, err);
    if (!st && !tp_at(c, o, vllm)) {
        vc_error_clear(err);
        snprintf(err->file, sizeof err->file, "%s", c->file);
        st = set_hf_split(c, &c->hf, (vc_hf_split){o->tp, o->sp, vllm > 0, vllm > 0 ? vllm - 1 : 0}, err);
    }
    if (!st && (c->ep > 1 ? c->ep : 1) != o->ep) st = vc_model_set_ep(c, o->ep, err);
    if (st) {
        vc_model_free(c);
        return st;
    }
    vc_model *mm = (vc_model *)m; /* the cache: a model belongs to one thread at a time (vramcalc.h) */
    c->split = mm->split;
    mm->split = c;
    *use = c;
    return VC_OK;
}

void vc_model_free(vc_model *m)
{
    if (!m) return;
    reset_model(m);
    vc__twin_facts_free(m);
    free(m->gen_json);
    free(m->text);
    vc_arena_free(m->arena);
    free(m);
}

const char *vc_model_name(const vc_model *m) { return m->name ? m->name : ""; }
int64_t vc_model_parameters(const vc_model *m) { return m->nparams; }
int64_t vc_model_trainable_parameters(const vc_model *m) { return m->ntrainable; }
size_t vc_model_layer_count(const vc_model *m) { return m->ninst; }
