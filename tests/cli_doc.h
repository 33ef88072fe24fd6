/*
 * cli_doc.h — the CLI's whole stdout for `args` (which must exit 0) parsed as JSON, for reports
 * larger than cli_run.h's buffer. Include after <cmocka.h> and <cjson/cJSON.h>; the caller frees.
 */
#ifndef VC_TEST_CLI_DOC_H
#define VC_TEST_CLI_DOC_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static inline cJSON *cli_doc(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", VC_CLI, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (size_t k; (k = fread(buf + n, 1, cap - n - 1, p)) > 0;) {
        n += k;
        if (cap - n < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    buf[n] = 0;
    int st = pclose(p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("vramcalc %s: exit %d", args, WEXITSTATUS(st));
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    assert_non_null(j);
    return j;
}

#endif
