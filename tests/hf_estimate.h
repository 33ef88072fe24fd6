/*
 * hf_estimate.h — peak_allocated of a Hugging Face config.json estimated through the library
 * as a test's table of harness cases runs it (bench/accuracy/llm/measure_llm.py: --seq,
 * --grad-ckpt, LoRA r with lora_alpha 16 and lora_dropout 0 on the named targets, no cuBLAS
 * workspace), and hf_peak / hf_set_lora for a model a test loads itself. Include after <cmocka.h>;
 * needs <stdio.h>.
 */
#ifndef VC_TEST_HF_ESTIMATE_H
#define VC_TEST_HF_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

#include "vramcalc/vramcalc.h"

typedef struct {
    const char *path; /* the config.json */
    vc_mode mode;
    int64_t batch, seq;
    vc_optim opt;
    vc_precision p;
    bool ckpt;          /* gradient checkpointing per layer */
    int64_t lora;       /* LoRA r, 0: none */
    const char *targets; /* the LoRA target modules */
    vc_attention attn;
} hf_case;

static inline int64_t hf_estimate(const hf_case *c)
{
    vc_hf_options h;
    vc_hf_options_init(&h);
    h.seq = c->seq;
    h.checkpoint = c->ckpt;
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_file_hf(c->path, &h, &m, &err), VC_OK);
    if (c->lora) {
        vc_lora l;
        vc_lora_init(&l);
        l.r = c->lora;
        l.alpha = 16;
        l.dropout = 0.0;
        snprintf(l.targets, sizeof l.targets, "%s", c->targets);
        assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
    }
    vc_options o;
    vc_options_init(&o);
    o.mode = c->mode;
    o.batch = c->batch;
    o.optim = c->opt;
    o.precision = c->p;
    o.attention = c->attn;
    o.workspace = 0;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    int64_t v = r.memory.peak_allocated;
    vc_result_free(&r);
    vc_model_free(m);
    return v;
}

/* peak_allocated of a loaded model under the harness's settings (compare.py: no cuBLAS workspace, the
 * math SDPA on a CPU) */
static inline int64_t hf_peak(const vc_model *m, vc_mode mode, int64_t batch, vc_optim optim, vc_precision p)
{
    vc_options o;
    vc_options_init(&o);
    o.mode = mode;
    o.batch = batch;
    o.optim = optim;
    o.precision = p;
    o.workspace = 0;
    o.attention = VC_ATTN_MATH;
    vc_result r;
    vc_error err;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s: %s", err.path, err.msg);
    int64_t v = r.memory.peak_allocated;
    vc_result_free(&r);
    return v;
}

/* The replicas' --lora 8: LoRA r 8, lora_alpha 16 on targets */
static inline void hf_set_lora(vc_model *m, const char *targets)
{
    vc_lora l;
    vc_lora_init(&l);
    l.r = 8;
    l.alpha = 16;
    snprintf(l.targets, sizeof l.targets, "%s", targets);
    vc_error err;
    if (vc_model_set_lora(m, &l, &err)) fail_msg("lora: %s", err.msg);
}

#endif
