/*
 * test_kind_ops.c — each layer kind's declared op count (vc_kind.ops,
 * layers/layer.h) against what it emits. The loader adds the declared counts
 * up over every layer and `repeat` copy and refuses a model whose sum passes
 * VC_MAX_PLAN_OPS before it expands the copies (docs/limits.md); a declared
 * count is therefore the most ops one copy records in a step.
 *
 * Every model of fuzz/corpus/ (the single-layer fixtures of every kind),
 * examples/, tests/data/hf/ and every case of tests/data/layers/ is built
 * (vc_plan_build) in training (fp32), inference, amp-fp16, mixed-bf16, bf16
 * with the flash kernel, the math and the memory-efficient kernels, and at
 * batch 1 (attention layouts that differ there); each instance's ops (op_t.inst)
 * are counted and must be at most what it declared (vc_inst.ops: its kind's count
 * plus what its setup added, as MLAttention's indexer does). The declared
 * counts are the most measured this way (2026-12-06; autocast's casts make the
 * largest: TransformerDecoderLayer 52 in fp32 training, 40 in inference, 70
 * under amp-fp16). SparseMoE, GatedDeltaNet, PixelValues and GraniteMoE declare none (their
 * ops grow with the experts, the sequence's chunks, the images): the build
 * counts them (VC_MAX_PLAN_OPS at each layer, src/engine/plan.c).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "engine.h"
#include "model.h"
#include "plan.h"

static const char *const undeclared[] = {"Identity", "SparseMoE", "GatedDeltaNet", "PixelValues", "GraniteMoE", NULL};

static int is_undeclared(const char *k)
{
    for (int i = 0; undeclared[i]; i++)
        if (!strcmp(undeclared[i], k)) return 1;
    return 0;
}

static int nmodels, nchecked;

/* builds m under each option set; every instance's ops at most its kind's count */
static void check_model(const vc_model *m, const char *name)
{
    for (int os = 0; os < 8; os++) {
        vc_options o;
        vc_options_init(&o);
        if (os == 1) o.mode = VC_MODE_INFER;
        if (os == 2) o.precision = VC_PREC_AMP_FP16;
        if (os == 3) o.precision = VC_PREC_MIXED_BF16;
        if (os == 4) o.attention = VC_ATTN_MATH;
        if (os == 5) o.attention = VC_ATTN_FLASH, o.precision = VC_PREC_BF16;
        if (os == 6) o.attention = VC_ATTN_EFFICIENT;
        if (os == 7) o.batch = 1;
        vc_plan *p = NULL;
        vc_error err;
        if (vc_plan_build(m, &o, &p, &err)) continue; /* a combination the model refuses */
        int64_t *cnt = calloc(m->ninst + 1, sizeof *cnt);
        assert_non_null(cnt);
        for (size_t k = 0; k < p->nop; k++)
            if (p->op[k].inst >= 0 && (size_t)p->op[k].inst < m->ninst) cnt[p->op[k].inst]++;
        for (size_t i = 0; i < m->ninst; i++) {
            const vc_kind *k = m->inst[i].kind;
            if (is_undeclared(k->name)) continue;
            if (cnt[i] > m->inst[i].ops) {
                fprintf(stderr, "%s, option set %d: %s %s records %lld ops, declares %d\n", name, os, k->name,
                        m->inst[i].path, (long long)cnt[i], m->inst[i].ops);
                fail();
            }
            nchecked++;
        }
        free(cnt);
        vc_plan_free(p);
    }
    nmodels++;
}

static void check_dir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".json") || !strcmp(e->d_name, "reference_counts.json")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        vc_model *m = NULL;
        vc_error err;
        if (vc_model_load_file(path, &m, &err)) continue; /* not a model (a corpus file of another harness) */
        check_model(m, path);
        vc_model_free(m);
    }
    closedir(d);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static void test_fixtures(void **state)
{
    (void)state;
    check_dir(VC_EXAMPLES "/../fuzz/corpus");
    check_dir(VC_EXAMPLES);
    check_dir(VC_TEST_DATA "/hf");
    /* tests/data/layers/ files: {"cases": [{"id", "model"}, ...]} */
    DIR *d = opendir(VC_TEST_DATA "/layers");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".json")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", VC_TEST_DATA "/layers", e->d_name);
        char *text = slurp(path);
        cJSON *root = cJSON_Parse(text);
        assert_non_null(root);
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases")) {
            const cJSON *model = cJSON_GetObjectItemCaseSensitive(c, "model");
            if (!model) continue;
            char *js = cJSON_PrintUnformatted(model);
            assert_non_null(js);
            vc_model *m = NULL;
            vc_error err;
            if (!vc_model_load_string(js, strlen(js), path, &m, &err)) {
                check_model(m, path);
                vc_model_free(m);
            }
            free(js);
        }
        cJSON_Delete(root);
        free(text);
    }
    closedir(d);
    printf("%d models, %d instance builds checked\n", nmodels, nchecked);
    assert_true(nmodels > 500);
}

/* every registered kind declares a count, but the ones the build counts (above) */
static void test_every_kind_declares(void **state)
{
    (void)state;
    for (size_t i = 0; i < vc_kind_count(); i++) {
        const vc_kind *k = vc_kind_find(vc_kind_name(i));
        assert_non_null(k);
        if (is_undeclared(k->name)) {
            assert_int_equal(k->ops, 0);
            continue;
        }
        if (k->ops < 1) fprintf(stderr, "%s declares no op count (vc_kind.ops)\n", k->name);
        assert_true(k->ops >= 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_declares),
        cmocka_unit_test(test_fixtures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
