/*
 * hf_text_config.h — a checkpoint's text_config read as its family's reader reads it (vc__hf_read with the
 * errors naming text_config.KEY), and the total and active parameters the family's counter gives for it
 * (test_gemma4, test_llama4). Include after <cmocka.h>, <cjson/cJSON.h> and "hf_arch.h"; needs <stdio.h>
 * and <string.h>.
 */
#ifndef VC_TEST_HF_TEXT_CONFIG_H
#define VC_TEST_HF_TEXT_CONFIG_H

/* file's text_config read as model_type fam, counted by count: its total and (*active) active parameters */
static inline void assert_text_config_params(const char *file, const char *fam,
                                             int64_t (*count)(const arch *, int64_t *), int64_t total, int64_t active)
{
    FILE *fp = fopen(file, "rb");
    assert_non_null(fp);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    cJSON *cfg = cJSON_Parse(buf);
    assert_non_null(cfg);
    vc_error err;
    rd r = {cJSON_GetObjectItemCaseSensitive(cfg, "text_config"), &err, fam, false, 1, "text_config"};
    arch a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < vc__hf_nfamilies; k++)
        if (!strcmp(vc__hf_families[k].model_type, fam) && !vc__hf_families[k].text_type) a.f = &vc__hf_families[k];
    assert_non_null(a.f);
    if (vc__hf_read(&r, &a)) fail_msg("%s: %s", err.path, err.msg);
    int64_t act = 0;
    assert_int_equal(count(&a, &act), total);
    assert_int_equal(act, active);
    cJSON_Delete(cfg);
}

#endif
