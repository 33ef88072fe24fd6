/*
 * cli_run.h — a test's run of the CLI (VC_CLI) through the shell: its exit
 * status, stdout and stderr; and the check of a usage error (exit 2, no
 * stdout, one stderr line); a JSON field of a run, and the check of measured cases.
 * Include after <cmocka.h>; needs <stdio.h>,
 * <stdlib.h>, <string.h>, <sys/wait.h>, <unistd.h>.
 */
#ifndef VC_TEST_CLI_RUN_H
#define VC_TEST_CLI_RUN_H

#include <stdint.h>

#include <cjson/cJSON.h>

/* The CLI's exit status, stdout and stderr for `args` (a shell word list). */
typedef struct {
    int status;
    char out[16384], err[2048];
} cli_run;

static inline void cli_slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
}

static inline void run(cli_run *r, const char *args)
{
    char cmd[2048], o[] = "/tmp/vc_cli_outXXXXXX", e[] = "/tmp/vc_cli_errXXXXXX";
    int fo = mkstemp(o), fe = mkstemp(e);
    assert_true(fo >= 0 && fe >= 0);
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", VC_CLI, args, o, e);
    int st = system(cmd);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    cli_slurp(o, r->out, sizeof r->out);
    cli_slurp(e, r->err, sizeof r->err);
    close(fo);
    close(fe);
    remove(o);
    remove(e);
}

/* exit 2, no stdout, one stderr line that contains `want` */
static inline void assert_usage(const char *args, const char *want)
{
    cli_run r;
    run(&r, args);
    if (r.status != 2 || r.out[0] || !strstr(r.err, want) || strchr(r.err, '\n') != r.err + strlen(r.err) - 1)
        fail_msg("vramcalc %s\n  exit %d, stdout %zu bytes, stderr: %s  wanted exit 2 and one line with: %s", args,
                 r.status, strlen(r.out), r.err, want);
}

/* The CLI's stdout for `args`, which must exit 0; stderr is reported when it does not. The buffer is
 * static: the next call reuses it. */
static inline const char *cli_output(const char *args)
{
    static cli_run r;
    run(&r, args);
    if (r.status != 0) fail_msg("vramcalc %s: exit %d: %s", args, r.status, r.err);
    return r.out;
}

/* The integer after `key` (e.g. "\"peak_allocated\": ") in the CLI's JSON for `args` run as the
 * harness measures (bench/accuracy/llm/measure_llm.py: SDPA's math backend, no cuBLAS workspace);
 * fails the test when the run fails or the key is missing. Static inline: an includer may not use it. */
static inline long long cli_json_field(const char *args, const char *key)
{
    cli_run r;
    char a[1024];
    snprintf(a, sizeof a, "%s --attention math --workspace 0 -f json", args);
    run(&r, a);
    if (r.status != 0) fail_msg("vramcalc %s: exit %d: %s", a, r.status, r.err);
    const char *p = strstr(r.out, key);
    assert_non_null(p);
    return strtoll(p + strlen(key), NULL, 10);
}

/* A generate case of bench/accuracy/llm/measured.json (cfg: a config of bench/accuracy/llm/configs/, without
 * ".json"): the integer after `key` in the CLI's -m generate JSON, run as cli_json_field runs it. */
static inline long long cli_generate_field(const char *cfg, int batch, int prompt, int new_tokens, const char *prec,
                                           const char *key)
{
    char args[512];
    snprintf(args, sizeof args,
             VC_TEST_DATA "/../../bench/accuracy/llm/configs/%s.json -m generate --prompt %d --new-tokens %d -b %d -p %s",
             cfg, prompt, new_tokens, batch, prec);
    return cli_json_field(args, key);
}

/* A case of bench/accuracy/llm/measured.json: the CLI's arguments (a config of
 * bench/accuracy/llm/configs/ first) and the harness's peak_allocated in bytes. */
typedef struct {
    const char *args;
    long long measured;
} cli_measured;

/* Each case's estimated peak_allocated (its arguments + `extra`) within +-bound percent of the measured. */
static inline void assert_measured(const cli_measured *cases, size_t n, const char *extra, double bound)
{
    char a[1024];
    for (size_t i = 0; i < n; i++) {
        snprintf(a, sizeof a, VC_TEST_DATA "/../../bench/accuracy/llm/configs/%s%s", cases[i].args, extra);
        long long e = cli_json_field(a, "\"peak_allocated\": ");
        double err = 100.0 * (double)(e - cases[i].measured) / (double)cases[i].measured;
        if (err < -bound || err > bound) fail_msg("%s: estimate %lld, measured %lld (%+.2f%%)", a, e, cases[i].measured, err);
    }
}

/* The number at obj.key (obj NULL: key at the top) of the CLI's JSON for `args` -f json, which must exit 0 */
static inline int64_t cli_json_num(const char *args, const char *obj, const char *key)
{
    char a[1024];
    snprintf(a, sizeof a, "%s -f json", args);
    cJSON *j = cJSON_Parse(cli_output(a));
    assert_non_null(j);
    const cJSON *o = obj ? cJSON_GetObjectItemCaseSensitive(j, obj) : j;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) fail_msg("no number %s.%s", obj ? obj : "", key);
    int64_t n = (int64_t)v->valuedouble;
    cJSON_Delete(j);
    return n;
}

/* --serve's figures (the CLI's JSON "serve" object for `args` -f json, which must exit 0), parsed once */
typedef struct {
    int64_t state_bytes, state_layers, block_size, page_bytes, kv_cache, blocks, tokens, concurrency, request_tokens;
} cli_serve_t;

static inline cli_serve_t cli_serve(const char *args)
{
    char a[1024];
    snprintf(a, sizeof a, "%s -f json", args);
    cJSON *j = cJSON_Parse(cli_output(a));
    assert_non_null(j);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "serve");
    static const char *const k[] = {"state_bytes_per_request_layer", "state_layers", "block_size", "page_bytes", "kv_cache",
                                    "blocks", "tokens", "concurrency", "request_tokens"};
    int64_t v[9];
    for (int i = 0; i < 9; i++) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, k[i]);
        if (!cJSON_IsNumber(n)) fail_msg("%s: no serve.%s", args, k[i]);
        v[i] = (int64_t)n->valuedouble;
    }
    cJSON_Delete(j);
    return (cli_serve_t){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
}

/* A hybrid model's --serve (src/engine/serve.c hybrid_state): one layer's state page `state` bytes, the attention
 * block size `blk`, a block `page` bytes (group_size pages), `ga` attention and `gs` state groups: blocks = pool //
 * block (get_num_blocks), a request cdiv(request tokens, blk) blocks per attention group and one per state group
 * (get_max_concurrency_for_kv_cache_config), tokens blocks // groups x blk (_report_kv_cache_config) */
static inline void cli_serve_hybrid(const char *args, int64_t layers, int64_t state, int64_t blk, int64_t page, int64_t ga,
                                    int64_t gs)
{
    const cli_serve_t r = cli_serve(args);
    assert_int_equal(r.state_layers, layers);
    assert_int_equal(r.state_bytes, state);
    assert_int_equal(r.block_size, blk);
    assert_int_equal(r.page_bytes, page);
    assert_true(r.kv_cache > 0);
    assert_int_equal(r.blocks, r.kv_cache / page);
    assert_int_equal(r.concurrency, r.blocks / (ga * ((r.request_tokens + blk - 1) / blk) + gs));
    assert_int_equal(r.tokens, r.blocks / (ga + gs) * blk);
}

#endif
