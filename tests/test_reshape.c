/*
 * test_reshape.c — the --max-seq search's probe models (src/model/reshape.c
 * vc__seq_probe_load) against the load they replace (vc__model_load_seq).
 *
 * The truth is the load: the config's text at the length loaded again, as
 * the search loaded every probe before. For every config of tests/data/hf,
 * as loaded, with LoRA adapters on PEFT's default targets (r 16) and at
 * --tp 2 where the config takes them, at lengths from 1 to past the model's
 * positions: the same status and, when both load, the same model field by
 * field (each instance's kind, parsed fields byte for byte, inputs,
 * parameters and buffers; each value's shape; the parameter and buffer
 * tables; the name, options and counts), and at three lengths the same
 * estimate (vc_estimate's memory, byte for byte). The probes must take the
 * reshaped path for most of them (a model that borrows m's file name), or
 * the test would compare the load with itself. The same for generate()'s
 * twins (vc__model_twin, m with its input replaced: vc__twin_reshape)
 * against vc__model_twin_load, their generated text included. A probe's
 * generated text (vc__seq_probe_json) is the load's. The --max-seq search's
 * model of its answer and its estimator (vc__model_max_seq_at, which the
 * report uses) against m loaded again at the answer (vc_model_set_seq) and a
 * new estimator's run there: the same model, the same result byte for byte.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "load.h"
#include "util.h"
#include "vramcalc/vramcalc.h"

static int compared, reshaped, refused, estimated, twins, twins_reshaped, twins_again, texts, answers, answers_none;

static void same_str(const char *a, const char *b)
{
    assert_int_equal(a == NULL, b == NULL);
    if (a) assert_string_equal(a, b);
}

static void same_model(const vc_model *a, const vc_model *b)
{
    same_str(a->name, b->name);
    same_str(a->file, b->file);
    assert_int_equal(a->text_len, b->text_len);
    assert_memory_equal(a->text, b->text, a->text_len + 1);
    assert_non_null(a->gen_json);
    assert_non_null(b->gen_json);
    assert_int_equal(a->ninst, b->ninst);
    assert_int_equal(a->nval, b->nval);
    assert_int_equal(a->npar, b->npar);
    assert_int_equal(a->nbuf, b->nbuf);
    assert_int_equal(a->ninputs, b->ninputs);
    assert_int_equal(a->output, b->output);
    assert_int_equal(a->nregions, b->nregions);
    assert_int_equal(a->nblk, b->nblk);
    assert_int_equal(a->nhold, b->nhold);
    assert_int_equal(a->loss, b->loss);
    assert_int_equal(a->loss_head, b->loss_head);
    assert_int_equal(a->loss_chunks, b->loss_chunks);
    assert_int_equal(a->max_positions, b->max_positions);
    same_str(a->input_fixed, b->input_fixed);
    assert_int_equal(a->nparams, b->nparams);
    assert_int_equal(a->ntrainable, b->ntrainable);
    assert_int_equal(a->has_override, b->has_override);
    assert_memory_equal(&a->lora, &b->lora, sizeof a->lora);
    assert_memory_equal(&a->quant, &b->quant, sizeof a->quant);
    assert_int_equal(a->has_quant, b->has_quant);
    assert_memory_equal(&a->cfg_quant, &b->cfg_quant, sizeof a->cfg_quant);
    assert_int_equal(a->nlora, b->nlora);
    assert_int_equal(a->nsaved, b->nsaved);
    assert_memory_equal(&a->hf, &b->hf, sizeof a->hf);
    assert_memory_equal(&a->tf, &b->tf, sizeof a->tf);
    assert_int_equal(a->hf_part, b->hf_part);
    assert_ptr_equal(a->lora_targets, b->lora_targets);
    assert_int_equal(a->images_one_sequence, b->images_one_sequence);
    assert_int_equal(a->image_decode, b->image_decode);
    assert_ptr_equal(a->ia3_targets, b->ia3_targets);
    assert_ptr_equal(a->ia3_feedforward, b->ia3_feedforward);
    assert_ptr_equal(a->ln_targets, b->ln_targets);
    assert_int_equal(a->ep, b->ep);
    assert_int_equal(a->tp, b->tp);
    assert_int_equal(a->sp, b->sp);
    assert_int_equal(a->vllm, b->vllm);
    assert_int_equal(a->mxfp4_align, b->mxfp4_align);
    assert_null(a->split);
    assert_null(b->split);
    assert_int_equal(a->nmoe, b->nmoe);
    assert_int_equal(a->cfg_dtype, b->cfg_dtype);
    assert_int_equal(a->cfg_no_fp16, b->cfg_no_fp16);
    assert_false(a->stage.on);
    assert_false(b->stage.on);
    for (int i = 0; i < a->ninputs; i++) same_str(a->input_names[i], b->input_names[i]);
    for (size_t i = 0; i < a->ninst; i++) {
        const vc_inst *x = &a->inst[i], *y = &b->inst[i];
        assert_ptr_equal(x->kind, y->kind);
        assert_memory_equal(x->cfg, y->cfg, x->kind->cfg_size ? x->kind->cfg_size : 1);
        same_str(x->path, y->path);
        same_str(x->module, y->module);
        same_str(x->name, y->name);
        assert_int_equal(x->nin, y->nin);
        if (x->nin) assert_memory_equal(x->in, y->in, (size_t)x->nin * sizeof *x->in);
        assert_int_equal(x->out, y->out);
        assert_int_equal(x->np, y->np);
        assert_int_equal(x->nb, y->nb);
        if (x->np) assert_memory_equal(x->params, y->params, (size_t)x->np * sizeof *x->params);
        if (x->nb) assert_memory_equal(x->bufs, y->bufs, (size_t)x->nb * sizeof *x->bufs);
        assert_int_equal(x->nparams, y->nparams);
        assert_int_equal(x->ckpt, y->ckpt);
        assert_int_equal(x->frozen, y->frozen);
    }
    for (size_t i = 0; i < a->nval; i++) {
        assert_true(vc_shape_eq(&a->val[i].shape, &b->val[i].shape));
        assert_int_equal(a->val[i].dt, b->val[i].dt);
        assert_int_equal(a->val[i].producer, b->val[i].producer);
    }
    for (size_t i = 0; i < a->npar; i++) {
        const vc_param_entry *x = &a->par[i], *y = &b->par[i];
        assert_int_equal(x->numel, y->numel);
        assert_int_equal(x->trainable, y->trainable);
        assert_int_equal(x->nd, y->nd);
        assert_int_equal(x->flags, y->flags);
        assert_int_equal(x->owner, y->owner);
        same_str(x->name, y->name);
        if (x->nd) assert_memory_equal(x->dims, y->dims, (size_t)x->nd * sizeof *x->dims);
        assert_int_equal(x->fmt, y->fmt);
    }
    for (size_t i = 0; i < a->nbuf; i++) {
        assert_int_equal(a->buf[i].numel, b->buf[i].numel);
        assert_int_equal(a->buf[i].dt, b->buf[i].dt);
    }
    if (a->nblk) {
        assert_memory_equal(a->blk_val, b->blk_val, a->nblk * sizeof *a->blk_val);
        assert_memory_equal(a->blk_last, b->blk_last, a->nblk * sizeof *a->blk_last);
    }
    if (a->nhold) {
        assert_memory_equal(a->hold_val, b->hold_val, a->nhold * sizeof *a->hold_val);
        assert_memory_equal(a->hold_last, b->hold_last, a->nhold * sizeof *a->hold_last);
    }
}

/* vc_estimate of both, byte for byte */
static void same_estimate(const vc_model *a, const vc_model *b)
{
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    vc_result ra, rb;
    vc_error ea, eb;
    vc_status sa = vc_estimate(a, &o, &ra, &ea), sb = vc_estimate(b, &o, &rb, &eb);
    assert_int_equal(sa, sb);
    if (sa) {
        assert_string_equal(ea.msg, eb.msg);
        return;
    }
    assert_memory_equal(&ra.memory, &rb.memory, sizeof ra.memory);
    assert_memory_equal(&ra.peak, &rb.peak, sizeof ra.peak);
    vc_result_free(&ra);
    vc_result_free(&rb);
    estimated++;
}

static void probes_of(const vc_model *m, const char *what)
{
    vc_seq_probe *p = NULL;
    vc_error err;
    vc_error_clear(&err);
    assert_int_equal(vc__seq_probe_new(m, &p, &err), VC_OK);
    const int64_t s0 = m->val[0].shape.d[0];
    const int64_t seqs[] = {1, 2, 17, 100, s0 - 1, s0, 2 * s0, 3 * s0 + 5, 40000, INT64_C(1) << 40, (INT64_C(1) << 40) + 1};
    for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++) {
        if (seqs[i] < 1) continue;
        vc_model *a = NULL, *b = NULL;
        vc_error ea, eb;
        vc_error_clear(&ea);
        vc_error_clear(&eb);
        vc_status sa = vc__seq_probe_load(p, seqs[i], &a, &ea), sb = vc__model_load_seq(m, seqs[i], &b, &eb);
        if (sa != sb) fail_msg("%s at %lld: %d (%s) against the load's %d (%s)", what, (long long)seqs[i], sa, ea.msg, sb, eb.msg);
        if (sa) {
            assert_string_equal(ea.msg, eb.msg);
            assert_string_equal(ea.path, eb.path);
            refused++;
        } else {
            same_model(a, b);
            assert_int_equal(vc__seq_probe_json(p, a), VC_OK);
            assert_string_equal(a->gen_json, b->gen_json);
            texts++;
            compared++;
            if (a->file == m->file) reshaped++; /* the reshaped model borrows m's strings */
            if (i == 0 || i == 3 || i == 6) same_estimate(a, b);
        }
        vc_model_free(a);
        vc_model_free(b);
    }
    vc__seq_probe_free(p);
    /* generate()'s twins (vc__model_twin): m with its input replaced by [seq] */
    for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++) {
        if (seqs[i] < 1) continue;
        vc_model *a = NULL, *b = NULL;
        vc_error ea, eb;
        vc_error_clear(&ea);
        vc_error_clear(&eb);
        vc_status sa = vc__model_twin(m, seqs[i], &a, &ea), sb = vc__model_twin_load(m, seqs[i], &b, &eb);
        if (sa != sb) fail_msg("%s twin at %lld: %d (%s) against the load's %d (%s)", what, (long long)seqs[i], sa, ea.msg, sb, eb.msg);
        if (sa) {
            assert_string_equal(ea.msg, eb.msg);
            refused++;
        } else {
            same_model(a, b);
            assert_string_equal(a->gen_json, b->gen_json);
            twins++;
            if (a->file == m->file) twins_reshaped++;
            if (i == 3) same_estimate(a, b);
        }
        vc_model_free(a);
        vc_model_free(b);
    }
    /* a length asked for again, between others (generate()'s one-token twin in each estimate of the
     * --max-context search): from the third time on the twin is the kept one's copy (reshape.c clone_twin) */
    for (int r = 0; r < 4; r++) {
        for (int k = 0; k < 2; k++) {
            const int64_t at = k ? 7 + r : 1;
            vc_model *a = NULL, *b = NULL;
            vc_error ea, eb;
            vc_error_clear(&ea);
            vc_error_clear(&eb);
            vc_status sa = vc__model_twin(m, at, &a, &ea), sb = vc__model_twin_load(m, at, &b, &eb);
            if (sa != sb) fail_msg("%s twin at %lld, again: %d (%s) against the load's %d (%s)", what, (long long)at, sa, ea.msg, sb, eb.msg);
            if (!sa) {
                same_model(a, b);
                assert_string_equal(a->gen_json, b->gen_json);
                twins_again++;
                if (r == 3 && k == 0) same_estimate(a, b);
            }
            vc_model_free(a);
            vc_model_free(b);
        }
    }
}

/* the search's answer (vc__model_max_seq_at) against m at the answer, loaded, and a new estimator's run */
static void answers_of(const char *file, int64_t tp, int64_t cap)
{
    vc_model *m = NULL, *b = NULL; /* (at borrows m's names: b is loaded again at the answer) */
    vc_error err;
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    assert_int_equal(vc_model_load_file_hf(file, &hf, &m, &err), VC_OK);
    assert_int_equal(vc_model_load_file_hf(file, &hf, &b, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    if (tp > 1) {
        assert_int_equal(vc_model_set_tp(m, tp, 0, &err), VC_OK);
        assert_int_equal(vc_model_set_tp(b, tp, 0, &err), VC_OK);
        o.tp = tp;
        o.gpus = tp;
    }
    int64_t n = 0, n2 = 0;
    int limited = 0, limited2 = 0;
    vc_model *at = NULL;
    vc_estimator *ae = NULL;
    if (vc__model_max_seq_at(m, &o, cap, &n, &limited, NULL, &at, &ae, &err)) fail_msg("%s: %s", file, err.msg);
    assert_int_equal(vc_model_max_seq(m, &o, cap, &n2, &limited2, NULL, &err), VC_OK);
    assert_int_equal(n, n2);
    assert_int_equal(limited, limited2);
    assert_non_null(at);
    assert_non_null(ae);
    vc_result ra, rb;
    assert_int_equal(vc_estimator_run(ae, o.batch, &ra, &err), VC_OK);
    assert_int_equal(vc_model_set_seq(b, n > 0 ? n : 1, &err), VC_OK);
    /* a model loaded again in place keeps reset_model's defaults (model.c: loss_head -1, loss_chunks 8) where a
     * new load (the probe's truth, vc__model_load_seq) has 0: read only under a fused loss (the head, loss.c) and
     * chunked_ce (its chunks, which hf.c always writes into the tree) */
    if (!vc_loss_row_get(b->loss)->fused) b->loss_head = at->loss_head;
    if (b->loss != VC_LOSS_CHUNKED) b->loss_chunks = at->loss_chunks;
    same_model(at, b);
    assert_string_equal(at->gen_json, b->gen_json);
    vc_estimator *be = NULL;
    assert_int_equal(vc_estimator_new(b, &o, VC_EST_NO_LAYERS, &be, &err), VC_OK);
    assert_int_equal(vc_estimator_run(be, o.batch, &rb, &err), VC_OK);
    assert_memory_equal(&ra.memory, &rb.memory, sizeof ra.memory);
    assert_memory_equal(&ra.peak, &rb.peak, sizeof ra.peak);
    assert_string_equal(ra.attention, rb.attention);
    vc_result_free(&ra);
    vc_result_free(&rb);
    vc_estimator_free(be);
    vc_estimator_free(ae);
    vc_model_free(at);
    vc_model_free(m);
    vc_model_free(b);
    answers++;
    if (!n) answers_none++;
}

static void test_answers(void **state)
{
    (void)state;
    /* lengths that fit (llama: tens of thousands of tokens at 80 GB, bf16; gpt2: its 1,024 positions), none
     * (1 GiB: the report at 1 token) */
    const char *files[] = {VC_TEST_DATA "/hf/llama-3.1-8b.json", VC_TEST_DATA "/hf/gpt2.json",
                           VC_TEST_DATA "/hf/mixtral-8x7b-v0.1.json"};
    const int64_t caps[] = {INT64_C(80) << 30, INT64_C(24) << 30, INT64_C(1) << 30};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        for (size_t j = 0; j < sizeof caps / sizeof *caps; j++) answers_of(files[i], 1, caps[j]);
    answers_of(VC_TEST_DATA "/hf/llama-3.1-8b.json", 2, INT64_C(80) << 30);
    printf("%d answers compared (%d with no length that fits)\n", answers, answers_none);
    assert_true(answers_none >= 1 && answers - answers_none >= 1);
}

static void test_every_config(void **state)
{
    (void)state;
    const char *dir = VC_TEST_DATA "/hf";
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int configs = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        vc_model *m = NULL;
        vc_error err;
        if (vc_model_load_file(path, &m, &err) != VC_OK) continue; /* a config this release refuses */
        configs++;
        probes_of(m, path);
        /* LoRA r 16 on PEFT's default targets */
        vc_lora l;
        vc_lora_init(&l);
        l.r = 16;
        snprintf(l.targets, sizeof l.targets, "%s", vc_model_lora_targets(m));
        if (l.targets[0] && vc_model_set_lora(m, &l, &err) == VC_OK) probes_of(m, path);
        /* tensor-parallel rank of 2 */
        if (vc_model_set_tp(m, 2, 0, &err) == VC_OK) probes_of(m, path);
        vc_model_free(m);
    }
    closedir(d);
    printf("%d configs: %d probes compared (%d reshaped, %d texts), %d twins (%d reshaped, %d asked again), %d refused by both, "
           "%d estimates\n", configs, compared, reshaped, texts, twins, twins_reshaped, twins_again, refused, estimated);
    assert_true(configs >= 50);
    assert_true(reshaped * 10 >= compared * 8);
    assert_true(twins_reshaped * 10 >= twins * 8);
    assert_true(twins_again * 10 >= twins * 8 * 8 / 11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_answers), cmocka_unit_test(test_every_config)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
