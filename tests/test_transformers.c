/*
 * test_transformers.c — the transformers release as a table (issue 31 item 6;
 * src/policy/release.c's second table, --transformers X.Y).
 *
 * 1. The names the table takes and the values of its rows: the MoE experts run as
 *    transformers 4.x's per-expert loop (modeling_mixtral.py MixtralSparseMoeBlock @5dd4a63)
 *    before 5.0 and through grouped_mm on stacked weights from 5.0
 *    (get_correct_experts_implementation @8b584a67).
 * 2. Through the CLI (the request API, as Python): --transformers 4.57 on Mixtral-8x7B gives
 *    exactly what --experts-implementation per_expert gives, the default exactly grouped_mm's,
 *    an explicit --experts-implementation wins over the release; a model file and a release
 *    outside the table exit 2 with one line naming --transformers.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "release.h"
#include "vramcalc/vramcalc.h"

#define MIXTRAL VC_TEST_DATA "/hf/mixtral-8x7b-v0.1.json"
#define SCOUT VC_TEST_DATA "/hf/llama-4-scout-17b-16e-instruct.json"

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(vc_transformers_from_name("4.46"), 446);
    assert_int_equal(vc_transformers_from_name("4.57"), 457);
    assert_int_equal(vc_transformers_from_name("5.0"), 500);
    /* outside the table, or not a release's name */
    const char *bad[] = {"4.45", "4.58", "5.1", "5.00", "4.5", "4.046", "3.0", "6.0", "4.", "4", "x", "", " 4.57", "4.57 ", "+4.57", NULL};
    for (int i = 0; bad[i]; i++)
        if (vc_transformers_from_name(bad[i]) != -1) fail_msg("'%s' taken", bad[i]);
    assert_int_equal(vc_transformers_from_name(NULL), -1);
}

static void test_rows(void **state)
{
    (void)state;
    /* per_expert through 4.x, grouped_mm from 5.0; 0 is the default release, 5.0 */
    assert_int_equal(vc_transformers_value(446, VC_TF_EXPERTS), VC_EXPERTS_PER_EXPERT);
    assert_int_equal(vc_transformers_value(457, VC_TF_EXPERTS), VC_EXPERTS_PER_EXPERT);
    assert_int_equal(vc_transformers_value(500, VC_TF_EXPERTS), VC_EXPERTS_GROUPED_MM);
    assert_int_equal(vc_transformers_value(0, VC_TF_EXPERTS), VC_EXPERTS_GROUPED_MM);
    /* generate()'s prefill: the loop's first step over the whole prompt through 4.x, GenerationMixin._prefill over
     * input_ids[:, :-1] from 5.0 (generation/utils.py @000034a4; tests/test_prefill_release.c) */
    assert_int_equal(vc_transformers_value(446, VC_TF_PREFILL_BUT_LAST), 0);
    assert_int_equal(vc_transformers_value(457, VC_TF_PREFILL_BUT_LAST), 0);
    assert_int_equal(vc_transformers_value(500, VC_TF_PREFILL_BUT_LAST), 1);
    assert_int_equal(vc_transformers_value(0, VC_TF_PREFILL_BUT_LAST), 1);
    assert_int_equal(VC_TRANSFORMERS_DEFAULT, 500);
}

/* the CLI's JSON report for args, which must succeed */
static void json_of(const char *args, char *out, size_t n)
{
    cli_run r;
    run(&r, args);
    if (r.status != 0) fail_msg("vramcalc %s: exit %d: %s", args, r.status, r.err);
    snprintf(out, n, "%s", r.out);
}

static void test_cli(void **state)
{
    (void)state;
    static char a[16384], b[16384];
    /* 4.57 runs the experts as the per-expert loop: the same report as asking for it */
    json_of(MIXTRAL " -m infer -f json --transformers 4.57", a, sizeof a);
    json_of(MIXTRAL " -m infer -f json --experts-implementation per_expert", b, sizeof b);
    assert_string_equal(a, b);
    json_of(MIXTRAL " -m infer -f json --transformers 4.46", b, sizeof b);
    assert_string_equal(a, b);
    /* the default (5.0) is grouped_mm, and differs from the loop here (inference, batch 1) */
    json_of(MIXTRAL " -m infer -f json", a, sizeof a);
    json_of(MIXTRAL " -m infer -f json --experts-implementation grouped_mm", b, sizeof b);
    assert_string_equal(a, b);
    json_of(MIXTRAL " -m infer -f json --transformers 5.0", b, sizeof b);
    assert_string_equal(a, b);
    json_of(MIXTRAL " -m infer -f json --transformers 4.57", b, sizeof b);
    assert_true(strcmp(a, b) != 0);
    /* an explicit --experts-implementation wins over the release's */
    json_of(MIXTRAL " -m infer -f json --transformers 4.57 --experts-implementation grouped_mm", b, sizeof b);
    assert_string_equal(a, b);
    /* refused */
    assert_usage(MIXTRAL " --transformers 4.45", "--transformers: unknown value '4.45' (choose a release from 4.46 to 4.57, or 5.0)");
    assert_usage(MIXTRAL " --transformers 5.1", "--transformers");
    assert_usage(VC_EXAMPLES "/tiny_resnet.json --transformers 4.57",
                 "--transformers applies to a Hugging Face config.json; this is a vramcalc model file");
}

/* The release's MoE default applies to the families whose experts it governs: Llama 4's
 * Llama4TextExperts runs torch.bmm over stacked weights in every release since 4.51 added it
 * (modeling_llama4.py @000c33fd; the family row's experts_fixed), so --transformers 4.51 or 4.57
 * gives Llama-4-Scout the report of the default release, not 4.x's per_expert refusal; asking for
 * per_expert is still refused, and so is --moe-imbalance (every token goes through every expert). */
static void test_llama4_release(void **state)
{
    (void)state;
    static char a[16384], b[16384];
    json_of(SCOUT " -m infer -f json", a, sizeof a);
    json_of(SCOUT " -m infer -f json --transformers 4.51", b, sizeof b);
    assert_string_equal(a, b);
    json_of(SCOUT " -m infer -f json --transformers 4.57", b, sizeof b);
    assert_string_equal(a, b);
    assert_usage(SCOUT " -m infer --transformers 4.57 --experts-implementation per_expert",
                 "--experts-implementation: per_expert: llama4's experts are stacked");
    assert_usage(SCOUT " -m infer --transformers 4.51 --moe-imbalance 2",
                 "--moe-imbalance: llama4 runs every token through every expert");
    /* Mixtral's experts are the release's: 4.57 still changes its report (test_cli) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_llama4_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
