/*
 * test_resolve.c — naming a model (issue 31 item 5; src/model/resolve.c): a model
 * directory (its config.json), a Hugging Face id ORG/NAME read from the local hub cache
 * only, and the errors when neither is there. Each test builds its own cache in a fresh
 * temporary directory and points the environment at it.
 *
 * The cache's layout and variables are huggingface_hub's (constants.py HF_HUB_CACHE:
 * $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub; file_download.py: models--ORG--NAME/refs/main holding the
 * commit, snapshots/<commit>/config.json). The expected parameter counts are those of
 * the same config.json loaded by its path (the fixture is tests/data/hf/qwen3-8b.json and
 * llama-3.1-8b.json), so a resolved name must read exactly that file.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"

static char root[64];

static void put(const char *dir, const char *name, const char *src_file, const char *text)
{
    char p[1024], cmd[2048];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (src_file) {
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src_file, p);
        assert_int_equal(system(cmd), 0);
    } else {
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
    }
}

static void set_mtime(const char *path, long sec)
{
    struct timeval tv[2] = {{sec, 0}, {sec, 0}};
    assert_int_equal(utimes(path, tv), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/vc_resolveXXXXXX");
    if (!mkdtemp(root)) return -1;
    unsetenv("HF_HUB_CACHE");
    unsetenv("HUGGINGFACE_HUB_CACHE");
    unsetenv("HF_HOME");
    unsetenv("XDG_CACHE_HOME");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) ? -1 : 0;
}

static int64_t params_of(const char *path)
{
    vc_model *m = NULL;
    vc_error e;
    if (vc_model_load_file(path, &m, &e) != VC_OK) fail_msg("%s: %s", path, e.msg);
    int64_t n = vc_model_parameters(m);
    vc_model_free(m);
    return n;
}

/* Loads `arg`: VC_OK and its parameter count, or the error (e). */
static vc_status load(const char *arg, int64_t *n, vc_error *e)
{
    vc_model *m = NULL;
    vc_status st = vc_model_load_file(arg, &m, e);
    *n = st == VC_OK ? vc_model_parameters(m) : -1;
    vc_model_free(m);
    return st;
}

static void test_directory(void **state)
{
    (void)state;
    char d[256];
    int64_t n;
    vc_error e;
    snprintf(d, sizeof d, "%s/Qwen3-8B", root);
    put(d, "config.json", HF "qwen3-8b.json", NULL);
    assert_int_equal(load(d, &n, &e), VC_OK);
    assert_int_equal(n, params_of(HF "qwen3-8b.json"));
    /* with a trailing slash too */
    char d2[300];
    snprintf(d2, sizeof d2, "%s/", d);
    assert_int_equal(load(d2, &n, &e), VC_OK);
    /* a directory without config.json: an I/O error naming the directory */
    snprintf(d, sizeof d, "%s/empty", root);
    put(d, "README.md", NULL, "no config here\n");
    assert_int_equal(load(d, &n, &e), VC_ERR_IO);
    assert_string_equal(e.file, d);
    assert_non_null(strstr(e.msg, "a directory without a config.json"));
    /* a ModelOpt hf_quant_config.json beside a config without quantization_config: refused, not estimated dense */
    snprintf(d, sizeof d, "%s/fp8", root);
    put(d, "config.json", HF "qwen3-8b.json", NULL);
    put(d, "hf_quant_config.json", NULL, "{\"producer\": {\"name\": \"modelopt\"}, \"quantization\": {\"quant_algo\": \"FP8\"}}");
    assert_int_equal(load(d, &n, &e), VC_ERR_MODEL);
    assert_string_equal(e.path, "quantization.quant_algo");
    assert_non_null(strstr(e.file, "fp8/hf_quant_config.json"));
    assert_non_null(strstr(e.msg, "\"FP8\""));
    /* the config.json named itself is read as it is */
    char c[300];
    snprintf(c, sizeof c, "%s/config.json", d);
    assert_int_equal(load(c, &n, &e), VC_OK);
}

static void test_cache_precedence(void **state)
{
    (void)state;
    char a[256], b[256], c[256];
    int64_t n, qwen = params_of(HF "qwen3-8b.json"), llama = params_of(HF "llama-3.1-8b.json");
    vc_error e;
    assert_true(qwen != llama);
    /* HF_HOME/hub holds the qwen config, HF_HUB_CACHE the llama one under the same id */
    snprintf(a, sizeof a, "%s/home/hub/models--Org--Model/snapshots/1111", root);
    put(a, "config.json", HF "qwen3-8b.json", NULL);
    snprintf(b, sizeof b, "%s/hubcache/models--Org--Model/snapshots/2222", root);
    put(b, "config.json", HF "llama-3.1-8b.json", NULL);
    snprintf(c, sizeof c, "%s/home", root);
    setenv("HF_HOME", c, 1);
    assert_int_equal(load("Org/Model", &n, &e), VC_OK);
    assert_int_equal(n, qwen);
    snprintf(c, sizeof c, "%s/hubcache", root);
    setenv("HF_HUB_CACHE", c, 1); /* HF_HUB_CACHE over HF_HOME */
    assert_int_equal(load("Org/Model", &n, &e), VC_OK);
    assert_int_equal(n, llama);
    unsetenv("HF_HUB_CACHE");
    unsetenv("HF_HOME");
    /* the legacy HUGGINGFACE_HUB_CACHE when HF_HUB_CACHE is not set; XDG_CACHE_HOME/huggingface/hub
     * when no variable names the cache or HF_HOME */
    snprintf(c, sizeof c, "%s/hubcache", root);
    setenv("HUGGINGFACE_HUB_CACHE", c, 1);
    assert_int_equal(load("Org/Model", &n, &e), VC_OK);
    assert_int_equal(n, llama);
    unsetenv("HUGGINGFACE_HUB_CACHE");
    snprintf(a, sizeof a, "%s/xdg/huggingface/hub/models--Org--Model/snapshots/4444", root);
    put(a, "config.json", HF "llama-3.1-8b.json", NULL);
    snprintf(c, sizeof c, "%s/xdg", root);
    setenv("XDG_CACHE_HOME", c, 1);
    assert_int_equal(load("Org/Model", &n, &e), VC_OK);
    assert_int_equal(n, llama);
    unsetenv("XDG_CACHE_HOME");
    /* neither: ~/.cache/huggingface/hub, with HOME pointing at the fixture */
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    snprintf(a, sizeof a, "%s/user/.cache/huggingface/hub/models--Org--Model/snapshots/3333", root);
    put(a, "config.json", HF "qwen3-8b.json", NULL);
    snprintf(c, sizeof c, "%s/user", root);
    setenv("HOME", c, 1);
    assert_int_equal(load("Org/Model", &n, &e), VC_OK);
    assert_int_equal(n, qwen);
    if (home) setenv("HOME", home, 1);
    free(home);
}

static void test_cache_revisions(void **state)
{
    (void)state;
    char repo[256], s[300], cfg[400];
    int64_t n, qwen = params_of(HF "qwen3-8b.json"), llama = params_of(HF "llama-3.1-8b.json");
    vc_error e;
    setenv("HF_HUB_CACHE", root, 1);
    snprintf(repo, sizeof repo, "%s/models--Org--Two", root);
    /* two snapshots without refs: the newest config.json (mtime) */
    snprintf(s, sizeof s, "%s/snapshots/aaaa", repo);
    put(s, "config.json", HF "qwen3-8b.json", NULL);
    snprintf(cfg, sizeof cfg, "%s/config.json", s);
    set_mtime(cfg, 2000000000);
    snprintf(s, sizeof s, "%s/snapshots/bbbb", repo);
    put(s, "config.json", HF "llama-3.1-8b.json", NULL);
    snprintf(cfg, sizeof cfg, "%s/config.json", s);
    set_mtime(cfg, 1000000000);
    assert_int_equal(load("Org/Two", &n, &e), VC_OK);
    assert_int_equal(n, qwen);
    /* refs/main names bbbb: main's snapshot, whatever the times */
    char refs[300];
    snprintf(refs, sizeof refs, "%s/refs", repo);
    put(refs, "main", NULL, "bbbb");
    assert_int_equal(load("Org/Two", &n, &e), VC_OK);
    assert_int_equal(n, llama);
    /* refs/main naming a snapshot not cached: the newest again */
    put(refs, "main", NULL, "cccc\n");
    assert_int_equal(load("Org/Two", &n, &e), VC_OK);
    assert_int_equal(n, qwen);
    unsetenv("HF_HUB_CACHE");
}

static void test_not_cached(void **state)
{
    (void)state;
    int64_t n;
    vc_error e;
    char want[512];
    setenv("HF_HUB_CACHE", root, 1);
    /* an id not cached: one line naming where it looked and how to fetch the config */
    assert_int_equal(load("Org/Absent", &n, &e), VC_ERR_IO);
    assert_string_equal(e.file, "Org/Absent");
    snprintf(want, sizeof want, "in %s/models--Org--Absent:", root);
    assert_non_null(strstr(e.msg, want));
    assert_non_null(strstr(e.msg, "'huggingface-cli download Org/Absent config.json'"));
    assert_null(strchr(e.msg, '\n'));
    /* a snapshot without config.json is not the config */
    char s[300];
    snprintf(s, sizeof s, "%s/models--Org--NoCfg/snapshots/aaaa", root);
    put(s, "tokenizer.json", NULL, "{}");
    assert_int_equal(load("Org/NoCfg", &n, &e), VC_ERR_IO);
    assert_non_null(strstr(e.msg, "huggingface-cli download Org/NoCfg config.json"));
    /* not an id (three parts, a leading dot, "..", a control byte): the file error as before */
    assert_int_equal(load("a/b/c", &n, &e), VC_ERR_IO);
    assert_non_null(strstr(e.msg, "cannot open"));
    assert_int_equal(load("../x", &n, &e), VC_ERR_IO);
    assert_non_null(strstr(e.msg, "cannot open"));
    assert_int_equal(load("Org/.x", &n, &e), VC_ERR_IO);
    assert_non_null(strstr(e.msg, "cannot open"));
    /* a cache path with a newline and a quote is escaped in the message: one line */
    char odd[300];
    snprintf(odd, sizeof odd, "%s/odd\ndir'x", root);
    setenv("HF_HUB_CACHE", odd, 1);
    assert_int_equal(load("Org/Absent", &n, &e), VC_ERR_IO);
    assert_null(strchr(e.msg, '\n'));
    assert_non_null(strstr(e.msg, "odd\\ndir'x/models--Org--Absent"));
    /* the CLI: exit 2, one line on stderr, nothing on stdout */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "HF_HUB_CACHE='%s' %s Org/Absent >/dev/null 2>%s/err.txt", root, VC_CLI, root);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    unsetenv("HF_HUB_CACHE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_revisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_cached, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
