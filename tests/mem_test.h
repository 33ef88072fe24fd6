/*
 * mem_test.h — the estimate the op-level memory tests (test_mem_*.c) derive
 * by hand: SGD (no optimizer state or temporaries) and no cuBLAS/cuDNN
 * workspace, so every byte comes from the layers under test. Include after
 * <cmocka.h>.
 */
#ifndef VC_MEM_TEST_H
#define VC_MEM_TEST_H

#include <string.h>

#include "vramcalc/vramcalc.h"

static vc_result mem_run(const char *json, int64_t batch, vc_mode mode, vc_precision prec, vc_attention attn)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "test.json", &m, &err)) {
        char msg[1200];
        vc_error_format(&err, msg, sizeof msg);
        fail_msg("load failed: %s", msg);
    }
    vc_options o;
    vc_options_init(&o);
    o.batch = batch;
    o.mode = mode;
    o.precision = prec;
    o.attention = attn;
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

#endif
