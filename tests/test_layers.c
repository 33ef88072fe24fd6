/*
 * test_layers.c — every layer kind against PyTorch.
 *
 * `test_layers FAMILY` runs the cases of tests/data/layers/FAMILY.json,
 * written by tests/fixtures/gen_layer_fixtures.py from real torch.nn modules
 * (a forward pass at batch 2; kinds torch 1.13 lacks from PyTorch 2.x's
 * source, as each case's "source" says). For each case it checks the
 * parameter count (sum(p.numel())), every parameter tensor and buffer in
 * named_parameters()/named_buffers() order, and the per-sample output
 * shape; then it runs train and infer estimates (fp32 and amp-bf16): they
 * must succeed, with weights, gradients and Adam states equal to what that
 * tensor list implies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "model.h"
#include "read_file.h"

static void run_case(void **state)
{
    const cJSON *c = *state;
    const char *id = cJSON_GetObjectItem(c, "id")->valuestring;
    char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "model"));
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(text, strlen(text), id, &m, &err)) {
        char msg[1200];
        vc_error_format(&err, msg, sizeof msg);
        free(text);
        fail_msg("%s: load failed: %s", id, msg);
    }
    free(text);

    /* parameters: total and per tensor, in named_parameters() order */
    int64_t params = (int64_t)cJSON_GetObjectItem(c, "params")->valuedouble;
    if (vc_model_parameters(m) != params)
        fail_msg("%s: parameters %lld, PyTorch %lld", id, (long long)vc_model_parameters(m), (long long)params);
    const cJSON *pt = cJSON_GetObjectItem(c, "param_tensors");
    if ((size_t)cJSON_GetArraySize(pt) != m->npar)
        fail_msg("%s: %zu parameter tensors, PyTorch %d", id, m->npar, cJSON_GetArraySize(pt));
    size_t i = 0;
    for (const cJSON *e = pt->child; e; e = e->next, i++) {
        int64_t n = (int64_t)cJSON_GetObjectItem(e, "numel")->valuedouble;
        if (m->par[i].numel != n)
            fail_msg("%s: parameter %zu (%s) has %lld elements, PyTorch %lld", id, i,
                     cJSON_GetObjectItem(e, "name")->valuestring, (long long)m->par[i].numel, (long long)n);
    }
    const cJSON *bt = cJSON_GetObjectItem(c, "buffers");
    if ((size_t)cJSON_GetArraySize(bt) != m->nbuf)
        fail_msg("%s: %zu buffers, PyTorch %d", id, m->nbuf, cJSON_GetArraySize(bt));
    i = 0;
    for (const cJSON *e = bt->child; e; e = e->next, i++) {
        int64_t n = (int64_t)cJSON_GetObjectItem(e, "numel")->valuedouble;
        const char *dt = cJSON_GetObjectItem(e, "dtype")->valuestring;
        vc_dtype want = !strcmp(dt, "int64") ? VC_DT_I64 : VC_DT_FLOAT;
        if (m->buf[i].numel != n || m->buf[i].dt != want)
            fail_msg("%s: buffer %zu (%s): %lld elements dtype %d, PyTorch %lld %s", id, i,
                     cJSON_GetObjectItem(e, "name")->valuestring, (long long)m->buf[i].numel, (int)m->buf[i].dt,
                     (long long)n, dt);
    }

    /* per-sample output shape of a real forward pass */
    const cJSON *out = cJSON_GetObjectItem(c, "output");
    const vc_shape *s = &m->val[m->output].shape;
    char got[160], want[160] = "[";
    vc_shape_str(s, got, sizeof got);
    size_t u = 1;
    for (const cJSON *e = out->child; e; e = e->next)
        u += (size_t)snprintf(want + u, sizeof want - u, "%s%lld", u > 1 ? ", " : "", (long long)e->valuedouble);
    snprintf(want + u, sizeof want - u, "]");
    if (strcmp(got, want)) fail_msg("%s: output %s, PyTorch %s", id, got, want);

    /* The persistent bytes follow from PyTorch's own tensor list: every
     * parameter and buffer is stored as its own block rounded up to 512 B
     * (fp32 parameters and float buffers 4 bytes an element, int64 buffers
     * 8); no fixture freezes or ties a parameter, so in training each one
     * gets an fp32 gradient of its size (amp-bf16 keeps fp32 parameters and
     * gradients) and Adam, the default optimizer, two fp32 states of its
     * size. Inference keeps neither. */
    int64_t want_w = 0, want_g = 0;
    for (const cJSON *e = pt->child; e; e = e->next)
        want_g += (((int64_t)cJSON_GetObjectItem(e, "numel")->valuedouble * 4 + 511) / 512) * 512;
    want_w = want_g;
    for (const cJSON *e = bt->child; e; e = e->next) {
        int64_t esz = strcmp(cJSON_GetObjectItem(e, "dtype")->valuestring, "int64") ? 4 : 8;
        want_w += (((int64_t)cJSON_GetObjectItem(e, "numel")->valuedouble * esz + 511) / 512) * 512;
    }

    /* the kind's ops execute in every mode, with those persistent bytes */
    static const vc_precision precs[] = {VC_PREC_FP32, VC_PREC_AMP_BF16};
    for (int mode = 0; mode < 2; mode++)
        for (int p = 0; p < 2; p++) {
            vc_options o;
            vc_options_init(&o);
            o.batch = 2;
            o.mode = mode ? VC_MODE_INFER : VC_MODE_TRAIN;
            o.precision = precs[p];
            vc_result r;
            if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: estimate failed: %s", id, err.msg);
            int64_t g = mode ? 0 : want_g;
            if (r.memory.weights != want_w || r.memory.gradients != g || r.memory.optimizer_states != 2 * g)
                fail_msg("%s (%s, %s): weights/gradients/states %lld/%lld/%lld, expected %lld/%lld/%lld", id,
                         vc_mode_name(o.mode), vc_precision_name(o.precision), (long long)r.memory.weights,
                         (long long)r.memory.gradients, (long long)r.memory.optimizer_states, (long long)want_w,
                         (long long)g, (long long)(2 * g));
            /* parameters and buffers are live throughout, so at the peak too; its parts sum to it */
            assert_int_equal(r.peak.weights, want_w);
            assert_int_equal(r.peak.weights + r.peak.gradients + r.peak.optimizer_states + r.peak.activations +
                                 r.peak.temporaries + r.peak.workspace,
                             r.memory.peak_allocated);
            vc_result_free(&r);
        }
    vc_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_layers FAMILY\n");
        return 2;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/layers/%s.json", VC_TEST_DATA, argv[1]);
    char *text = read_file(path);
    if (!text) {
        fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    int n = cJSON_GetArraySize(cases);
    struct CMUnitTest *tests = calloc((size_t)n, sizeof *tests);
    int i = 0;
    for (cJSON *c = cases->child; c; c = c->next, i++) {
        tests[i].name = cJSON_GetObjectItem(c, "id")->valuestring;
        tests[i].test_func = run_case;
        tests[i].initial_state = c;
    }
    int rc = _cmocka_run_group_tests(argv[1], tests, (size_t)n, NULL, NULL);
    free(tests);
    cJSON_Delete(root);
    return rc;
}
