/*
 * tf_load.h — a config.json loaded as the CLI loads it at --transformers `release` (100*major + minor; the request's
 * load, src/model/model.h vc__model_load_file_split, one rank): for the tests whose expected values were measured or
 * derived under an older release's behaviour (4.x's generate(): its loop's first step over the whole prompt,
 * src/policy/release.c VC_TF_PREFILL_BUT_LAST). A model file loads as vc_model_load_file does.
 * Include after <cmocka.h>.
 */
#ifndef VC_TEST_TF_LOAD_H
#define VC_TEST_TF_LOAD_H

#include "model.h"

static inline vc_model *load_at_release(const char *path, int release)
{
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    vc_hf_release rel = {release, false, true, false}; /* the experts as hf sets them; loaded for --mode generate */
    vc_model *m = NULL;
    vc_error err;
    if (vc__model_load_file_split(path, &hf, &rel, 1, 0, 0, 0, &m, &err)) fail_msg("load %s: %s", path, err.msg);
    return m;
}

#endif
