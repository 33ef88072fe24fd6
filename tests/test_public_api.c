/*
 * The public header's version: the numeric macros, VC_VERSION and what the
 * linked library reports agree with each other and with CMakeLists.txt's
 * project(VERSION), passed in as VC_PROJECT_VERSION.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"

static void test_version_matches_project(void **state)
{
    (void)state;
    unsigned major, minor, patch;
    /* CMake's PROJECT_VERSION, "MAJOR.MINOR.PATCH" */
    assert_int_equal(sscanf(VC_PROJECT_VERSION, "%u.%u.%u", &major, &minor, &patch), 3);
    assert_int_equal(VC_VERSION_MAJOR, major);
    assert_int_equal(VC_VERSION_MINOR, minor);
    assert_int_equal(VC_VERSION_PATCH, patch);
    assert_string_equal(VC_VERSION, VC_PROJECT_VERSION);
    assert_int_equal(VC_VERSION_HEX, (major << 16) | (minor << 8) | patch);
}

static void test_library_reports_header_version(void **state)
{
    (void)state;
    assert_int_equal(vc_version(), VC_VERSION_HEX);
    assert_string_equal(vc_version_string(), VC_VERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_matches_project),
        cmocka_unit_test(test_library_reports_header_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
