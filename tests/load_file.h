/*
 * load_file.h — a model file or config.json loaded through the public API (vc_model_load_file), the test failing
 * with the loader's message when it does not load. Include after <cmocka.h> and "vramcalc/vramcalc.h".
 */
#ifndef VC_TEST_LOAD_FILE_H
#define VC_TEST_LOAD_FILE_H

static inline vc_model *load_file(const char *name)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(name, &m, &err)) fail_msg("load %s: %s", name, err.msg);
    return m;
}

#endif
