/*
 * test_args_known.c — vc_args' known-key list (src/model/args.c known,
 * vc__args_known_unique): the keys a kind asks are appended unchecked and
 * made unique when the list fills or a message reads it; the list must
 * then be what a list that never held a repeat would be (issue 28's
 * loader change): the distinct keys in the order first asked, at most
 * MAX_KNOWN (96) of them, and a key asked once the list holds 96 distinct
 * keys is not known (its member is not marked in vc_args.hit).
 * The expected lists are written from that rule, not from the code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "load.h"

static char keys[120][8];

static void init_keys(void)
{
    for (int i = 0; i < 120; i++) snprintf(keys[i], sizeof keys[i], "k%d", i);
}

static vc_args fresh(const cJSON *obj)
{
    vc_args a;
    memset(&a, 0, sizeof a);
    a.obj = obj;
    return a;
}

/* ten keys asked twenty times each, interleaved (200 asks: the list fills and is made unique twice) */
static void test_repeats(void **state)
{
    (void)state;
    init_keys();
    cJSON *obj = cJSON_Parse("{\"k3\": 1, \"zz\": 2, \"k7\": 3}");
    assert_non_null(obj);
    vc_args a = fresh(obj);
    for (int r = 0; r < 20; r++)
        for (int i = 0; i < 10; i++) vc_arg_known(&a, keys[i]);
    vc__args_known_unique(&a);
    assert_int_equal(a.nknown, 10);
    for (int i = 0; i < 10; i++) assert_string_equal(a.known[i], keys[i]);
    /* members 0 (k3) and 2 (k7) named by known keys, member 1 (zz) not */
    assert_int_equal(a.hit, (1u << 0) | (1u << 2));
    cJSON_Delete(obj);
}

/* 110 distinct keys, each asked twice in a row: the first 96 are kept in order, the rest are not known */
static void test_full(void **state)
{
    (void)state;
    init_keys();
    cJSON *obj = cJSON_Parse("{\"k100\": 1, \"k5\": 2, \"k95\": 3, \"k96\": 4}");
    assert_non_null(obj);
    vc_args a = fresh(obj);
    for (int i = 0; i < 110; i++) {
        vc_arg_known(&a, keys[i]);
        vc_arg_known(&a, keys[i]);
    }
    vc__args_known_unique(&a);
    assert_int_equal(a.nknown, MAX_KNOWN);
    for (int i = 0; i < MAX_KNOWN; i++) assert_string_equal(a.known[i], keys[i]);
    /* k5 and k95 are among the first 96 keys (members 1 and 2); k96 and k100 are not (members 3 and 0) */
    assert_int_equal(a.hit, (1u << 1) | (1u << 2));
    /* asked again once full: a known key is still known, an unknown one still not */
    a.hit = 0;
    vc_arg_known(&a, keys[95]);
    vc_arg_known(&a, keys[100]);
    assert_int_equal(a.hit, 1u << 2);
    assert_int_equal(a.nknown, MAX_KNOWN);
    cJSON_Delete(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeats),
        cmocka_unit_test(test_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
