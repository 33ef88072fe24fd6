/*
 * test_zoo.c — every model of the zoo (the examples/ JSON files) against its reference.
 *
 * For each model file: it loads (vc_model_load_file), its parameter count
 * (vc_model_parameters, sum(p.numel()) with tied weights counted once) equals
 * the reference implementation's exactly, and a batch-1 training estimate
 * runs, with weights, gradients and Adam states equal to what the model's
 * tensor list implies and the peak's parts summing to peak_allocated.
 * The table below is the same as examples/reference_counts.json (checked
 * too), and every JSON file in examples/ must have a row.
 *
 * Where each number comes from (tests/roundtrip/check_zoo.py recomputes all
 * of them from tests/roundtrip/reference_models.py):
 *   torchvision rows: sum(p.numel()) of torchvision.models.NAME() from Debian's
 *       python3-torchvision 0.14.1 (no weights needed: counts do not depend on them).
 *   bert_base: 109,482,240, the published count of bert-base-uncased
 *       (transformers BertModel with pooler); confirmed by a module-for-module
 *       re-implementation in torch.
 *   gpt2_small: 124,439,808, the published count of gpt2 (transformers
 *       GPT2LMHeadModel, lm_head tied to wte); confirmed the same way.
 *   unet, whisper_base_encoder, lstm_lm, gru_seq2seq_encoder,
 *   diffusion_unet_block: no exact published count; sum(p.numel()) of a
 *       re-implementation in torch 1.13 of the code named in the file's
 *       "source" (milesial/Pytorch-UNet, openai/whisper AudioEncoder base,
 *       pytorch/examples word_language_model, Bahdanau et al. 2015 A.2 with
 *       nn.GRU, diffusers ResnetBlock2D + Attention).
 *   mlp, tiny_resnet, transformer_encoder: the torch.nn modules in each
 *       file's "source", built in torch 1.13.
 */
#include <dirent.h>
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

typedef struct {
    const char *file;
    int64_t params;
} zoo_ref;

static const zoo_ref ZOO[] = {
    /* torchvision 0.14: sum(p.numel()) of torchvision.models.NAME() */
    {"resnet18.json", 11689512},
    {"resnet50.json", 25557032},
    {"resnet152.json", 60192808},
    {"vgg16.json", 138357544},
    {"mobilenet_v2.json", 3504872},
    {"efficientnet_b0.json", 5288548},
    {"densenet121.json", 7978856},
    {"vit_b_16.json", 86567656},
    /* published counts, confirmed by re-implementations in torch */
    {"bert_base.json", 109482240},  /* bert-base-uncased BertModel */
    {"gpt2_small.json", 124439808}, /* gpt2 GPT2LMHeadModel, tied lm_head */
    /* re-implementations of the named source, built in torch 1.13 */
    {"unet.json", 31037698},                 /* milesial/Pytorch-UNet UNet(3, 2, bilinear=False) */
    {"whisper_base_encoder.json", 19822592}, /* openai/whisper AudioEncoder(80, 1500, 512, 8, 6) */
    {"lstm_lm.json", 28434378},              /* pytorch/examples RNNModel('LSTM', 33278, 650, 650, 2, tied) */
    {"gru_seq2seq_encoder.json", 28332000},  /* RNNsearch encoder: Embedding(30000, 620) + bi-GRU(1000) */
    {"diffusion_unet_block.json", 2666560},  /* diffusers ResnetBlock2D(320, 1280) + Attention(320, 8x40) */
    /* small models: the torch.nn modules in each file's "source" */
    {"mlp.json", 669706},
    {"tiny_resnet.json", 5306},
    {"transformer_encoder.json", 12609536},
};
#define NZOO (sizeof ZOO / sizeof ZOO[0])

static void path_of(char *buf, size_t n, const char *file)
{
    snprintf(buf, n, "%s/%s", VC_EXAMPLES, file);
}

/* One model: loads, parameter count equals the reference, batch-1 train estimate runs. */
static void test_model(void **state)
{
    const zoo_ref *z = *state;
    char path[1024], msg[1200];
    path_of(path, sizeof path, z->file);
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(path, &m, &err) != VC_OK) {
        vc_error_format(&err, msg, sizeof msg);
        fail_msg("%s: load failed: %s", z->file, msg);
    }
    int64_t got = vc_model_parameters(m);
    if (got != z->params) {
        vc_model_free(m);
        fail_msg("%s: %lld parameters, reference %lld", z->file, (long long)got, (long long)z->params);
    }
    assert_int_equal(vc_model_trainable_parameters(m), z->params);

    vc_options o;
    vc_options_init(&o);
    o.batch = 1;
    o.mode = VC_MODE_TRAIN;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err) != VC_OK) {
        vc_error_format(&err, msg, sizeof msg);
        vc_model_free(m);
        fail_msg("%s: estimate failed: %s", z->file, msg);
    }
    assert_int_equal(r.parameters, z->params);
    /* fp32 Adam, every parameter trainable: each parameter tensor (a tied
     * weight once) is stored, gets a gradient and two Adam states of its
     * size, each a block rounded up to 512 B; buffers are stored only
     * (float 4 bytes an element, int64 8). The tensor list is the loader's,
     * checked tensor by tensor against PyTorch for every kind in test_layers;
     * its sum is the reference count asserted above. */
    int64_t g = 0, bufs = 0, numel = 0;
    for (size_t i = 0; i < m->npar; i++) {
        g += (m->par[i].numel * 4 + 511) / 512 * 512;
        numel += m->par[i].numel;
    }
    for (size_t i = 0; i < m->nbuf; i++)
        bufs += (m->buf[i].numel * (m->buf[i].dt == VC_DT_I64 ? 8 : 4) + 511) / 512 * 512;
    assert_int_equal(numel, z->params);
    assert_int_equal(r.memory.gradients, g);
    assert_int_equal(r.memory.optimizer_states, 2 * g);
    assert_int_equal(r.memory.weights, g + bufs);
    /* weights and Adam states persist through the whole step, so they are live at the peak,
     * whose parts sum to peak_allocated */
    assert_int_equal(r.peak.weights, r.memory.weights);
    assert_int_equal(r.peak.optimizer_states, r.memory.optimizer_states);
    assert_int_equal(r.peak.weights + r.peak.gradients + r.peak.optimizer_states + r.peak.activations +
                         r.peak.temporaries + r.peak.workspace,
                     r.memory.peak_allocated);
    /* total is what nvidia-smi shows: the allocator's reserve plus the CUDA context, the sum
     * of its parts (src/engine/context.c); every model has the 349 MiB runtime and the default
     * stack's local memory of the default device (an A100's 108 SMs x 2048 threads x 1 KiB) */
    const vc_context_parts *cp = &r.memory.context_parts;
    assert_int_equal(cp->runtime, 349 * (INT64_C(1) << 20));
    assert_int_equal(cp->local_memory, INT64_C(108) * 2048 * 1024);
    assert_int_equal(r.memory.cuda_context, cp->runtime + cp->local_memory + cp->eager + cp->cublas + cp->kernels +
                                                cp->backward_local_memory + cp->backward_kernels);
    assert_int_equal(r.memory.total, r.memory.reserved + r.memory.cuda_context);
    /* the allocator holds at least what it hands out (max_memory_reserved >= max_memory_allocated) */
    assert_true(r.memory.reserved >= r.memory.peak_allocated);
    vc_result_free(&r);
    vc_model_free(m);
}

/* The table and examples/reference_counts.json agree; every zoo file has a row. */
static void test_reference_table(void **state)
{
    (void)state;
    char path[1024];
    path_of(path, sizeof path, "reference_counts.json");
    char *text = read_file(path);
    assert_non_null(text);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    assert_int_equal(cJSON_GetArraySize(doc), (int)NZOO);
    for (size_t i = 0; i < NZOO; i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, ZOO[i].file);
        if (!e) fail_msg("reference_counts.json has no %s", ZOO[i].file);
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "parameters");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "source");
        assert_true(cJSON_IsNumber(p));
        assert_true(cJSON_IsString(s) && strlen(s->valuestring) > 0);
        if ((int64_t)p->valuedouble != ZOO[i].params)
            fail_msg("%s: reference_counts.json says %.0f, test table %lld", ZOO[i].file, p->valuedouble,
                     (long long)ZOO[i].params);
    }
    cJSON_Delete(doc);

    DIR *d = opendir(VC_EXAMPLES);
    assert_non_null(d);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 5, ".json") != 0) continue;
        if (strcmp(de->d_name, "reference_counts.json") == 0) continue;
        files++;
        size_t i;
        for (i = 0; i < NZOO; i++)
            if (strcmp(ZOO[i].file, de->d_name) == 0) break;
        if (i == NZOO) {
            closedir(d);
            fail_msg("examples/%s has no reference count in tests/test_zoo.c", de->d_name);
        }
    }
    closedir(d);
    assert_int_equal(files, (int)NZOO);
}

/* Every zoo file names its source and has a line in examples/README.md. */
static void test_sources_and_readme(void **state)
{
    (void)state;
    char path[1024];
    path_of(path, sizeof path, "README.md");
    char *readme = read_file(path);
    assert_non_null(readme);
    for (size_t i = 0; i < NZOO; i++) {
        path_of(path, sizeof path, ZOO[i].file);
        char *text = read_file(path);
        assert_non_null(text);
        cJSON *doc = cJSON_Parse(text);
        free(text);
        assert_non_null(doc);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "source");
        if (!cJSON_IsString(s) || strlen(s->valuestring) < 10)
            fail_msg("%s: no \"source\" string", ZOO[i].file);
        cJSON_Delete(doc);
        if (!strstr(readme, ZOO[i].file)) fail_msg("examples/README.md does not list %s", ZOO[i].file);
    }
    free(readme);
}

int main(void)
{
    struct CMUnitTest tests[NZOO + 2];
    for (size_t i = 0; i < NZOO; i++) {
        struct CMUnitTest t = {ZOO[i].file, test_model, NULL, NULL, (void *)&ZOO[i]};
        tests[i] = t;
    }
    struct CMUnitTest t1 = cmocka_unit_test(test_reference_table);
    struct CMUnitTest t2 = cmocka_unit_test(test_sources_and_readme);
    tests[NZOO] = t1;
    tests[NZOO + 1] = t2;
    return _cmocka_run_group_tests("zoo", tests, NZOO + 2, NULL, NULL);
}
