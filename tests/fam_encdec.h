/*
 * fam_encdec.h — what the tests of the bart row's encoder-decoder variants (src/hf/hf_bart.c: test_fam_marian.c,
 * test_fam_pegasus.c, test_fam_mbart.c, test_fam_m2m_100.c) share: the includes, the template's names present and
 * absent, the refusals every variant has (the config edits vc__hf_bart_read names, the options bart_check and hf.c
 * refuse, each message carrying the family's name and class), generate() with beams holding more than greedy, and
 * main over the tests. Include first (it defines _GNU_SOURCE before the system headers).
 */
#ifndef VC_TEST_FAM_ENCDEC_H
#define VC_TEST_FAM_ENCDEC_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "fam_hf.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"

/* file's generated model JSON (at --seq 128): each string of has (NULL-terminated) in it, none of lacks */
static inline void encdec_template(const char *file, const char *const *has, const char *const *lacks)
{
    vc_model *m = fam_load_file(file, 128);
    const char *js = vc_model_generated_json(m);
    assert_non_null(js);
    for (; has && *has; has++)
        if (!strstr(js, *has)) fail_msg("%s: no %s in the template", file, *has);
    for (; lacks && *lacks; lacks++)
        if (strstr(js, *lacks)) fail_msg("%s: %s in the template", file, *lacks);
    vc_model_free(m);
}

/* The refusals of every variant: the config edits after head (a config of d_model 64, "{..., " unclosed) and the
 * options after file; fam the model_type, cls the class. */
static inline void encdec_refusals(const char *fam, const char *cls, const char *head, const char *file)
{
    static const fam_refusal c[] = {
        /* BartAttention's ValueError */
        {"\"decoder_attention_heads\": 5", "decoder_attention_heads: d_model (64) must be divisible by decoder_attention_heads"},
        {"\"scale_embedding\": 1", "scale_embedding: expected true or false"},
        {"\"is_encoder_decoder\": false", "is_encoder_decoder: false"},
    };
    fam_refuse_edits(head, c, sizeof c / sizeof *c);
    char w[4][160];
    snprintf(w[0], sizeof w[0], "--serve: vLLM has no %s", cls);
    snprintf(w[1], sizeof w[1], "--precision: %s is modelled in fp32 and bf16", fam);
    snprintf(w[2], sizeof w[2], "--tp: %s: tensor parallelism", fam);
    snprintf(w[3], sizeof w[3], "--loss: %s: %s computes its own CrossEntropyLoss", fam, cls);
    const fam_refusal o[] = {
        {"--seq 128 --serve --gpu h100-80gb", w[0]},
        {"--seq 128 -p fp16", w[1]},
        {"--seq 128 --tp 2 --gpus 2", w[2]},
        {"--seq 128 --loss chunked", w[3]},
    };
    fam_refuse_options(file, o, sizeof o / sizeof *o);
}

/* generate() of file (a 512-token prompt, 64 new tokens): greedy runs, and 4 beams hold more than it */
static inline void encdec_beams_hold_more(const char *file)
{
    char a[512];
    snprintf(a, sizeof a, "%s -m generate --prompt 512 --new-tokens 64", file);
    const int64_t g = cli_json_num(a, "generate", "decode_peak");
    assert_true(g > 0);
    snprintf(a, sizeof a, "%s -m generate --prompt 512 --new-tokens 64 --num-beams 4", file);
    assert_true(cli_json_num(a, "generate", "decode_peak") > g);
}

/* the tests every variant's program runs (test_counts, test_layers, test_measured, test_refusals), then its own */
#define ENCDEC_TESTS                                                                                            \
    cmocka_unit_test(test_counts), cmocka_unit_test(test_layers), cmocka_unit_test(test_measured),            \
        cmocka_unit_test(test_refusals)
#define ENCDEC_MAIN(...)                                                                                        \
    int main(void)                                                                                             \
    {                                                                                                          \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                                                       \
        return cmocka_run_group_tests(tests, NULL, NULL);                                                      \
    }

#endif
