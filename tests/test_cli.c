/*
 * test_cli.c — the command line against SPEC §2/§3 and issue 4: exit codes,
 * JSON and CSV shapes, --gpu fit checks, --max-batch's and --max-seq's exact boundaries,
 * --sweep output, --list-gpus, and the table's ASCII bar on a pipe.
 *
 * Runs the built CLI (VC_CLI) on small models written to a temporary
 * directory (Linear, activations, Identity, Flatten: the kinds every build
 * has).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "vramcalc/vramcalc.h"

static char tmpdir[256];
static char mlp[300], flat[300], wide[300], fixed_in[300];

typedef struct {
    int status;
    char *out, *err;
    size_t out_len, err_len;
} run_result;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    if (f) {
        size_t k;
        while ((k = fread(b + n, 1, cap - n - 1, f)) > 0) {
            n += k;
            if (cap - n < 2) {
                b = realloc(b, cap *= 2);
                assert_non_null(b);
            }
        }
        fclose(f);
    }
    b[n] = '\0';
    *len = n;
    return b;
}

static void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* Runs VC_CLI with the NULL-terminated arguments; stdout and stderr captured. */
static void run_argv(const char *const *args, run_result *r)
{
    char outp[320], errp[320];
    snprintf(outp, sizeof outp, "%s/stdout", tmpdir);
    snprintf(errp, sizeof errp, "%s/stderr", tmpdir);
    const char *argv[64];
    int n = 0;
    argv[n++] = VC_CLI;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fi = open("/dev/null", O_RDONLY);
        int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fi < 0 || fo < 0 || fe < 0) _exit(127);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(VC_CLI, (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r->out = slurp(outp, &r->out_len);
    r->err = slurp(errp, &r->err_len);
}

#define RUN(r, ...)                                                   \
    do {                                                              \
        const char *a_[] = {__VA_ARGS__, NULL};                       \
        run_argv(a_, (r));                                            \
    } while (0)

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vc_test_cli.XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    snprintf(mlp, sizeof mlp, "%s/mlp.json", tmpdir);
    snprintf(flat, sizeof flat, "%s/flat.json", tmpdir);
    snprintf(wide, sizeof wide, "%s/wide.json", tmpdir);
    snprintf(fixed_in, sizeof fixed_in, "%s/fixed_in.json", tmpdir);
    write_file(fixed_in, "{\"input\": [3, 64, 64], \"input_fixed\": \"Upsample size of interpolate\",\n"
                         "  \"layers\": [{\"type\": \"Upsample\", \"size\": [128, 128]}]}\n");
    write_file(mlp, "{\"name\": \"tiny-mlp\", \"input\": [64], \"layers\": [\n"
                    "  {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 256},\n"
                    "  {\"type\": \"ReLU\"},\n"
                    "  {\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 10}]}\n");
    write_file(flat, "{\"name\": \"flat\", \"input\": [3, 8, 8], \"layers\": [\n"
                     "  {\"type\": \"Flatten\"},\n"
                     "  {\"type\": \"Linear\", \"in_features\": 192, \"out_features\": 96, \"bias\": false},\n"
                     "  {\"type\": \"GELU\"}, {\"type\": \"Identity\"},\n"
                     "  {\"type\": \"Linear\", \"in_features\": 96, \"out_features\": 4}]}\n");
    write_file(wide, "{\"name\": \"wide\", \"input\": [1024], \"layers\": [\n"
                     "  {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 4096},\n"
                     "  {\"type\": \"SiLU\"},\n"
                     "  {\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 4096},\n"
                     "  {\"type\": \"Tanh\"},\n"
                     "  {\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 1024}]}\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- helpers on JSON ---- */

static cJSON *parse(const run_result *r)
{
    cJSON *j = cJSON_Parse(r->out);
    if (!j) fail_msg("not JSON (exit %d): %.300s / %.300s", r->status, r->out, r->err);
    return j;
}

static int64_t num(const cJSON *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *c = o;
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, ".")) {
        c = cJSON_GetObjectItemCaseSensitive(c, tok);
        if (!c) fail_msg("missing key %s", path);
    }
    if (cJSON_IsBool(c)) return cJSON_IsTrue(c);
    if (!cJSON_IsNumber(c)) fail_msg("%s is not a number", path);
    return (int64_t)c->valuedouble;
}

static bool has(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key) != NULL; }

/* SPEC §3: the keys of one estimate, and the identities between them. */
static void check_estimate(const cJSON *j, bool gpu)
{
    static const char *const top[] = {"schema_version", "model", "mode", "batch", "precision", "optimizer",
                                      "parameters", "trainable_parameters", "memory", "peak"};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++)
        if (!has(j, top[i])) fail_msg("missing key %s", top[i]);
    assert_int_equal(num(j, "schema_version"), 1);
    static const char *const mem[] = {"weights", "gradients", "optimizer_states", "activations", "workspace",
                                      "peak_allocated", "reserved", "cuda_context", "total"};
    const cJSON *m = cJSON_GetObjectItem(j, "memory");
    for (size_t i = 0; i < sizeof mem / sizeof *mem; i++)
        if (!cJSON_IsNumber(cJSON_GetObjectItem(m, mem[i]))) fail_msg("memory.%s missing", mem[i]);
    const cJSON *p = cJSON_GetObjectItem(j, "peak");
    static const char *const pk[] = {"phase", "layer", "kind"};
    for (size_t i = 0; i < 3; i++)
        if (!cJSON_IsString(cJSON_GetObjectItem(p, pk[i]))) fail_msg("peak.%s missing", pk[i]);
    int64_t sum = num(j, "peak.weights") + num(j, "peak.gradients") + num(j, "peak.optimizer_states") +
                  num(j, "peak.activations") + num(j, "peak.temporaries") + num(j, "peak.workspace");
    assert_int_equal(sum, num(j, "memory.peak_allocated"));
    assert_int_equal(num(j, "memory.total"), num(j, "memory.reserved") + num(j, "memory.cuda_context"));
    assert_true(has(j, "gpu") == gpu);
    if (gpu) {
        const cJSON *g = cJSON_GetObjectItem(j, "gpu");
        assert_true(cJSON_IsString(cJSON_GetObjectItem(g, "name")));
        assert_true(cJSON_IsBool(cJSON_GetObjectItem(g, "fits")));
        assert_int_equal(num(j, "gpu.free"), num(j, "gpu.capacity") - num(j, "memory.total"));
        assert_int_equal(num(j, "gpu.fits"), num(j, "memory.total") <= num(j, "gpu.capacity"));
    }
}

/* The rule for bad usage: exit 2, nothing on stdout, one line on stderr. */
static void check_usage_error(const run_result *r, const char *expected)
{
    if (r->status != 2 || r->out_len != 0 || strncmp(r->err, "vramcalc: ", 10) ||
        !memchr(r->err, '\n', r->err_len) || (size_t)((char *)memchr(r->err, '\n', r->err_len) - r->err) + 1 != r->err_len ||
        (expected && !strstr(r->err, expected)))
        fail_msg("expected exit 2, no stdout, one stderr line with '%s'; got exit %d, stdout %zu bytes, stderr: %s",
                 expected ? expected : "", r->status, r->out_len, r->err);
}

/* ---- tests ---- */

static void test_exit_codes(void **state)
{
    (void)state;
    run_result r;
    RUN(&r, mlp, "-b", "4");
    assert_int_equal(r.status, 0);
    assert_true(r.out_len > 0);
    run_free(&r);
    RUN(&r, mlp, "--batch", "0");
    check_usage_error(&r, "--batch");
    run_free(&r);
    RUN(&r, mlp, "--batch", "-1");
    check_usage_error(&r, "--batch");
    run_free(&r);
    RUN(&r, mlp, "--batch", "1e99");
    check_usage_error(&r, "--batch");
    run_free(&r);
    RUN(&r, mlp, "--batch", "99999999999999999999999");
    check_usage_error(&r, "--batch");
    run_free(&r);
    RUN(&r, mlp, "--optim", "adamm");
    check_usage_error(&r, "adamm");
    run_free(&r);
    /* torch.optim.Adafactor is new in 2.5 (torch/optim/_adafactor.py; src/policy/release.c VC_REL_ADAFACTOR) */
    RUN(&r, mlp, "--optim", "adafactor", "--torch", "2.4");
    check_usage_error(&r, "--optim: adafactor is torch.optim.Adafactor, new in PyTorch 2.5");
    run_free(&r);
    RUN(&r, mlp, "--gpu", "h100-80gbb");
    check_usage_error(&r, "did you mean 'h100-80gb'");
    run_free(&r);
    RUN(&r, mlp, "--gpu", "a100");
    check_usage_error(&r, "did you mean 'a100-40gb' or 'a100-80gb'");
    run_free(&r);
    RUN(&r, mlp, "--gpu", "24Gb");
    check_usage_error(&r, "unknown unit");
    run_free(&r);
    RUN(&r, mlp, "--gpu", "h100-80gb:0%");
    check_usage_error(&r, "percentage");
    run_free(&r);
    RUN(&r, mlp, "--max-batch");
    check_usage_error(&r, "--max-batch needs --gpu");
    run_free(&r);
    RUN(&r, mlp, "--plot", "x.svg");
    check_usage_error(&r, "--plot needs --sweep");
    run_free(&r);
    static const char *const bad_sweeps[] = {"0", "1:0", "4:2", "1:8:x1", "1:8:0", "1,,2", "1:", "a", "1:2:3:4", "-1"};
    for (size_t i = 0; i < sizeof bad_sweeps / sizeof *bad_sweeps; i++) {
        RUN(&r, mlp, "--sweep", bad_sweeps[i]);
        check_usage_error(&r, "--sweep");
        run_free(&r);
    }
    RUN(&r, mlp, "--sweep", "1:1000000000");
    check_usage_error(&r, "more than");
    run_free(&r);
    RUN(&r, mlp, "--sweep", "1:4", "-b", "2");
    check_usage_error(&r, "--batch or --sweep");
    run_free(&r);
    /* does not fit: exit 1, the report still printed */
    RUN(&r, mlp, "--gpu", "1MiB");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "DOES NOT FIT"));
    run_free(&r);
    RUN(&r, mlp, "--gpu", "1MiB", "-f", "json");
    assert_int_equal(r.status, 1);
    cJSON *j = parse(&r);
    check_estimate(j, true);
    assert_int_equal(num(j, "gpu.fits"), 0);
    assert_true(num(j, "gpu.free") < 0);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, mlp, "--gpu", "h100-80gb", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    check_estimate(j, true);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "gpu"), "name")->valuestring, "h100-80gb");
    assert_int_equal(num(j, "gpu.capacity"), INT64_C(81559) * 1048576);
    cJSON_Delete(j);
    run_free(&r);
    /* a sweep exits 0 although some rows do not fit */
    RUN(&r, wide, "--sweep", "1,1000000", "--gpu", "24GiB", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    cJSON *rows = cJSON_GetObjectItem(j, "sweep");
    assert_int_equal(cJSON_GetArraySize(rows), 2);
    assert_int_equal(num(cJSON_GetArrayItem(rows, 0), "gpu.fits"), 1);
    assert_int_equal(num(cJSON_GetArrayItem(rows, 1), "gpu.fits"), 0);
    cJSON_Delete(j);
    run_free(&r);
    /* existing modes still work */
    RUN(&r, "--params", "1000000", "--activations", "5000", "-b", "8", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    check_estimate(j, false);
    assert_int_equal(num(j, "memory.weights"), 4000000);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, mlp, "--trace");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "end of forward"));
    run_free(&r);
    RUN(&r, mlp, "--per-layer", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "layers")), 3);
    cJSON_Delete(j);
    run_free(&r);
}

static void test_json_and_csv(void **state)
{
    (void)state;
    const char *const models[] = {mlp, flat, wide};
    const char *const precs[] = {"fp32", "fp16", "bf16", "amp-fp16", "amp-bf16", "mixed-fp16", "mixed-bf16"};
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t pi = 0; pi < sizeof precs / sizeof *precs; pi++)
            for (int mode = 0; mode < 2; mode++) {
                run_result r;
                RUN(&r, models[mi], "-b", "3", "-p", precs[pi], "-m", mode ? "infer" : "train", "-f", "json");
                assert_int_equal(r.status, 0);
                cJSON *j = parse(&r);
                check_estimate(j, false);
                assert_int_equal(num(j, "batch"), 3);
                cJSON_Delete(j);
                run_free(&r);
            }
    run_result r;
    RUN(&r, flat, "-b", "5", "-f", "csv", "--gpu", "rtx4090");
    assert_int_equal(r.status, 0);
    char *nl = strchr(r.out, '\n');
    assert_non_null(nl);
    *nl = '\0';
    char *row = nl + 1;
    char *end = strchr(row, '\n');
    assert_non_null(end);
    assert_string_equal(end + 1, ""); /* exactly one row */
    *end = '\0';
    assert_non_null(strstr(r.out, "memory.peak_allocated"));
    assert_non_null(strstr(r.out, "gpu.fits"));
    int hc = 1, rc = 1;
    for (char *p = r.out; *p; p++) hc += *p == ',';
    for (char *p = row; *p; p++) rc += *p == ',';
    assert_int_equal(hc, rc);
    run_free(&r);
}

/* The i-th comma-separated field of line (no quotes in it), into out. */
static void csv_field(const char *line, int i, char *out, size_t n)
{
    assert_null(strchr(line, '"'));
    for (; i > 0; i--) {
        line = strchr(line, ',');
        assert_non_null(line);
        line++;
    }
    size_t len = strcspn(line, ",\n");
    assert_true(len < n);
    memcpy(out, line, len);
    out[len] = '\0';
}

/* The index of column `name` in a CSV header line. */
static int csv_index(const char *header, const char *name)
{
    char f[64];
    for (int i = 0;; i++) {
        csv_field(header, i, f, sizeof f);
        if (!strcmp(f, name)) return i;
    }
}

/* --columns (issue 16): -f csv's columns chosen and ordered by header name.
 * The expected values are the same run's full CSV, column by name: the
 * option is a projection of it. */
static void test_csv_columns(void **state)
{
    (void)state;
    run_result full, r;
    RUN(&full, flat, "-b", "5", "-f", "csv", "--gpu", "rtx4090");
    assert_int_equal(full.status, 0);
    const char *row = strchr(full.out, '\n') + 1;
    RUN(&r, flat, "-b", "5", "-f", "csv", "--gpu", "rtx4090", "--columns", "gpu.fits,memory.total,batch,memory.total");
    assert_int_equal(r.status, 0);
    char want[512], f[64];
    size_t w = (size_t)snprintf(want, sizeof want, "gpu.fits,memory.total,batch,memory.total\n");
    const char *names[] = {"gpu.fits", "memory.total", "batch", "memory.total"};
    for (int i = 0; i < 4; i++) {
        csv_field(row, csv_index(full.out, names[i]), f, sizeof f);
        w += (size_t)snprintf(want + w, sizeof want - w, "%s%s", i ? "," : "", f);
    }
    snprintf(want + w, sizeof want - w, "\n");
    assert_string_equal(r.out, want);
    csv_field(strchr(r.out, '\n') + 1, 2, f, sizeof f);
    assert_string_equal(f, "5"); /* -b 5 */
    run_free(&r);
    run_free(&full);
    /* a sweep: the header once, a row per batch */
    RUN(&r, flat, "--sweep", "1,2", "-f", "csv", "--columns", "batch");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "batch\n1\n2\n");
    run_free(&r);
    /* max_batch exists with --max-batch only; a name with a comma stays quoted (RFC 4180) */
    char q[320];
    snprintf(q, sizeof q, "%s/quoted.json", tmpdir);
    write_file(q, "{\"name\":\"a,\\\"b\\\"\",\"input\":[4],\"layers\":[{\"type\":\"Linear\",\"in_features\":4,\"out_features\":2}]}");
    RUN(&r, q, "-f", "csv", "--columns", "model,batch");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "model,batch\n\"a,\"\"b\"\"\",1\n");
    run_free(&r);
    RUN(&r, q, "-f", "csv", "--columns", "max_batch");
    check_usage_error(&r, "--columns: unknown column 'max_batch' (choose from model, mode, batch, precision, optimizer,");
    assert_non_null(strstr(r.err, ", peak.workspace; gpu.* come with --gpu, max_batch* with --max-batch, max_context.* with --max-context, max_seq* with --max-seq"));
    run_free(&r);
    RUN(&r, q, "-f", "csv", "--columns", "bogus,batch");
    check_usage_error(&r, "--columns: unknown column 'bogus' (choose from model, mode, batch,");
    run_free(&r);
    RUN(&r, q, "-f", "csv", "--columns", "batch,");
    check_usage_error(&r, "--columns: unknown column '' (choose from");
    run_free(&r);
    RUN(&r, q, "-f", "csv", "--columns", "x\ny"); /* escaped: one stderr line */
    check_usage_error(&r, "--columns: unknown column 'x");
    run_free(&r);
    RUN(&r, q, "-f", "json", "--columns", "batch");
    check_usage_error(&r, "--columns chooses the estimate's CSV columns: it needs -f csv");
    run_free(&r);
    RUN(&r, "--list-gpus", "-f", "csv", "--columns", "batch");
    check_usage_error(&r, "--columns chooses the estimate's CSV columns: it needs -f csv, not --list-gpus");
    run_free(&r);
}

/* --max-batch N: N fits and N + 1 does not, checked with --batch N / N + 1. */
static void check_boundary(const char *const *extra, const char *gpu)
{
    const char *args[32];
    int n = 0;
    for (int i = 0; extra[i]; i++) args[n++] = extra[i];
    args[n++] = "--gpu";
    args[n++] = gpu;
    args[n++] = "-f";
    args[n++] = "json";
    int base = n;
    args[n++] = "--max-batch";
    args[n] = NULL;
    run_result r;
    run_argv(args, &r);
    cJSON *j = parse(&r);
    int64_t N = num(j, "max_batch");
    check_estimate(j, true);
    assert_int_equal(r.status, N > 0 ? 0 : 1);
    if (N > 0) assert_int_equal(num(j, "batch"), N);
    cJSON_Delete(j);
    run_free(&r);
    char b[32];
    for (int64_t k = N > 0 ? N : 1; k <= N + 1; k++) {
        snprintf(b, sizeof b, "%" PRId64, k);
        args[base] = "--batch";
        args[base + 1] = b;
        args[base + 2] = NULL;
        run_argv(args, &r);
        j = parse(&r);
        bool fits = num(j, "gpu.fits");
        if (fits != (k <= N)) fail_msg("%s on %s: max batch %" PRId64 " but batch %" PRId64 " %s", extra[0], gpu, N, k,
                                       fits ? "fits" : "does not fit");
        assert_int_equal(r.status, fits ? 0 : 1);
        cJSON_Delete(j);
        run_free(&r);
    }
}

/* Issue 4's acceptance check: for every example model, `--gpu rtx4090
 * --max-batch` prints N, `--batch N` fits and `--batch N + 1` does not (a
 * separate CTest entry, cli_examples). */
static void test_max_batch_examples(void **state)
{
    (void)state;
    DIR *d = opendir(VC_EXAMPLES);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") || !strcmp(de->d_name, "reference_counts.json")) continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", VC_EXAMPLES, de->d_name);
        const char *extra[] = {path, NULL};
        check_boundary(extra, "rtx4090");
        n++;
    }
    closedir(d);
    assert_true(n >= 15); /* the examples directory holds 18 models */
}

/* --max-seq N on a Hugging Face config.json: N fits and N + 1 does not,
 * each checked with --seq N / N + 1 (the exit status and gpu.fits); the
 * report is the estimate at N. */
static void check_seq_boundary(const char *const *extra, const char *gpu, int64_t *out)
{
    const char *args[32];
    int n = 0;
    for (int i = 0; extra[i]; i++) args[n++] = extra[i];
    args[n++] = "--gpu";
    args[n++] = gpu;
    args[n++] = "-f";
    args[n++] = "json";
    int base = n;
    args[n++] = "--max-seq";
    args[n] = NULL;
    run_result r;
    run_argv(args, &r);
    cJSON *j = parse(&r);
    int64_t N = num(j, "max_seq"), total = num(j, "memory.total");
    check_estimate(j, true);
    assert_int_equal(r.status, N > 0 ? 0 : 1);
    char name[64];
    snprintf(name, sizeof name, "seq %" PRId64 ")", N > 0 ? N : 1);
    assert_non_null(strstr(cJSON_GetObjectItem(j, "model")->valuestring, name));
    cJSON_Delete(j);
    run_free(&r);
    char b[32];
    for (int64_t k = N > 0 ? N : 1; k <= N + 1; k++) {
        snprintf(b, sizeof b, "%" PRId64, k);
        args[base] = "--seq";
        args[base + 1] = b;
        args[base + 2] = NULL;
        run_argv(args, &r);
        j = parse(&r);
        bool fits = num(j, "gpu.fits");
        if (fits != (k <= N)) fail_msg("%s on %s: max seq %" PRId64 " but seq %" PRId64 " %s", extra[0], gpu, N, k,
                                       fits ? "fits" : "does not fit");
        assert_int_equal(r.status, fits ? 0 : 1);
        if (k == N) assert_int_equal(num(j, "memory.total"), total);
        cJSON_Delete(j);
        run_free(&r);
    }
    *out = N;
}

static void test_max_seq(void **state)
{
    (void)state;
    const char *llama[] = {VC_TEST_DATA "/hf/llama-3.1-8b.json", "-p", "bf16", "--lora", "16", NULL};
    const char *llama_b2[] = {VC_TEST_DATA "/hf/llama-3.1-8b.json", "-p", "bf16", "--lora", "16", "-b", "2",
                              "--grad-ckpt", NULL};
    const char *gemma[] = {VC_TEST_DATA "/hf/gemma-2-9b.json", "-p", "amp-bf16", "-o", "adamw", "--lora", "8", NULL};
    const char *neox[] = {VC_TEST_DATA "/hf/pythia-1.4b.json", "-p", "mixed-bf16", "-o", "adamw", NULL};
    const char *const *cases[] = {llama, llama_b2, gemma, neox};
    const char *const gpus[] = {"rtx4090", "a100-80gb:90%", "40GiB"};
    int64_t n;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (size_t g = 0; g < sizeof gpus / sizeof *gpus; g++) check_seq_boundary(cases[c], gpus[g], &n);
    /* nothing fits: 0, the report at 1 token, exit 1 */
    const char *big[] = {VC_TEST_DATA "/hf/llama-3.1-70b.json", "-p", "bf16", NULL};
    check_seq_boundary(big, "h100-80gb", &n);
    assert_int_equal(n, 0);
    /* GPT-2's 1,024 learned positions (n_positions) end the search, not memory */
    run_result r;
    RUN(&r, VC_TEST_DATA "/hf/gpt2.json", "-g", "h100-80gb", "--max-seq", "-f", "json");
    assert_int_equal(r.status, 0);
    cJSON *j = parse(&r);
    assert_int_equal(num(j, "max_seq"), 1024);
    assert_int_equal(num(j, "max_seq_limited"), 1);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, VC_TEST_DATA "/hf/gpt2.json", "-g", "h100-80gb", "--max-seq");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "max seq on h100-80gb, batch 1: 1024 tokens (the longest the model takes"));
    run_free(&r);
}

static void test_max_batch(void **state)
{
    (void)state;
    const char *const gpus[] = {"600MiB", "1GiB", "3GB", "rtx3060", "t4:90%", "h100-80gb"};
    const char *m_train[] = {wide, NULL};
    const char *m_infer[] = {wide, "-m", "infer", "-p", "fp16", NULL};
    const char *m_amp[] = {flat, "-p", "amp-bf16", "-o", "sgd", NULL};
    const char *m_mixed[] = {mlp, "-p", "mixed-bf16", "-o", "adamw", NULL};
    const char *m_counts[] = {"--params", "100000000", "--activations", "2000000", NULL};
    const char *const *cases[] = {m_train, m_infer, m_amp, m_mixed, m_counts};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (size_t g = 0; g < sizeof gpus / sizeof *gpus; g++) check_boundary(cases[c], gpus[g]);
    /* batch 1 does not fit: 0, exit 1 */
    run_result r;
    RUN(&r, wide, "--gpu", "100MiB", "--max-batch", "-f", "json");
    assert_int_equal(r.status, 1);
    cJSON *j = parse(&r);
    assert_int_equal(num(j, "max_batch"), 0);
    assert_int_equal(num(j, "gpu.fits"), 0);
    cJSON_Delete(j);
    run_free(&r);
    /* memory that does not grow with the batch: the documented search limit */
    RUN(&r, "--params", "1000", "--gpu", "1GiB", "--max-batch", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    assert_int_equal(num(j, "max_batch"), INT64_C(1) << 40);
    cJSON_Delete(j);
    run_free(&r);
}

static void test_sweep(void **state)
{
    (void)state;
    run_result r;
    /* list forms */
    struct {
        const char *spec;
        int n;
        int64_t first, last;
    } forms[] = {{"1,8,32", 3, 1, 32}, {"1:64", 64, 1, 64}, {"1:4096:x2", 13, 1, 4096}, {"1:64:8", 8, 1, 57},
                 {"32,1,8,8", 3, 1, 32}, {"3:100:x3", 4, 3, 81}, {"1:4,16:20", 9, 1, 20}};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        RUN(&r, mlp, "--sweep", forms[i].spec, "-f", "json");
        assert_int_equal(r.status, 0);
        cJSON *j = parse(&r);
        assert_int_equal(num(j, "schema_version"), 1);
        cJSON *rows = cJSON_GetObjectItem(j, "sweep");
        if (cJSON_GetArraySize(rows) != forms[i].n) fail_msg("%s: %d rows", forms[i].spec, cJSON_GetArraySize(rows));
        assert_int_equal(num(cJSON_GetArrayItem(rows, 0), "batch"), forms[i].first);
        assert_int_equal(num(cJSON_GetArrayItem(rows, forms[i].n - 1), "batch"), forms[i].last);
        cJSON_Delete(j);
        run_free(&r);
    }
    /* rows equal single estimates */
    const char *const models[] = {mlp, flat, wide};
    for (size_t mi = 0; mi < 3; mi++)
        for (int mode = 0; mode < 2; mode++) {
            RUN(&r, models[mi], "--sweep", "1:256:51", "-m", mode ? "infer" : "train", "-f", "json", "--gpu", "rtx4090");
            assert_int_equal(r.status, 0);
            cJSON *j = parse(&r);
            cJSON *rows = cJSON_GetObjectItem(j, "sweep");
            assert_int_equal(cJSON_GetArraySize(rows), 6);
            for (int i = 0; i < 6; i++) {
                cJSON *row = cJSON_GetArrayItem(rows, i);
                check_estimate(row, true);
                char bs[16];
                snprintf(bs, sizeof bs, "%d", 1 + 51 * i);
                run_result s;
                RUN(&s, models[mi], "-b", bs, "-m", mode ? "infer" : "train", "-f", "json", "--gpu", "rtx4090");
                cJSON *one = parse(&s);
                char *x = cJSON_PrintUnformatted(one), *y = cJSON_PrintUnformatted(row);
                assert_string_equal(x, y);
                free(x);
                free(y);
                cJSON_Delete(one);
                run_free(&s);
            }
            cJSON_Delete(j);
            run_free(&r);
        }
    /* CSV: one header, one row per batch, same columns */
    RUN(&r, wide, "--sweep", "1:4096:x2", "-f", "csv", "--gpu", "h100-80gb", "--max-batch");
    assert_int_equal(r.status, 0);
    int lines = 0, cols = -1;
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        int c = 1;
        for (char *p = line; *p; p++) c += *p == ',';
        if (cols < 0) {
            cols = c;
            assert_non_null(strstr(line, "memory.total"));
            assert_non_null(strstr(line, "max_batch"));
        } else assert_int_equal(c, cols);
        lines++;
    }
    assert_int_equal(lines, 1 + 13);
    run_free(&r);
    /* JSON sweep with --max-batch carries it once, at the top */
    RUN(&r, wide, "--sweep", "1,2", "-f", "json", "--gpu", "8GiB", "--max-batch");
    cJSON *j = parse(&r);
    assert_true(num(j, "max_batch") > 2);
    assert_false(has(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "sweep"), 0), "max_batch"));
    cJSON_Delete(j);
    run_free(&r);
    /* the table marks rows that do not fit */
    RUN(&r, wide, "--sweep", "1,1000000", "--gpu", "24GiB");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "   NO"));
    assert_non_null(strstr(r.out, "yes"));
    run_free(&r);
}

/* SPEC §3: total never decreases as the batch grows (what makes --max-batch
 * the one boundary). A separate CTest entry (cli_monotonic). The last two
 * models have plans that depend on the batch (attention): with the math
 * attention their totals fell at some batches (vit_b_16 from batch 24 to
 * 25, whisper_base_encoder from 22 to 23, by up to 6.5% further on) until
 * the allocator model's grid values came from the plan of each grid batch
 * (engine.c, grid_replay). */
static void test_monotonic(void **state)
{
    (void)state;
    run_result r;
    char vit[600], whisper[600];
    snprintf(vit, sizeof vit, "%s/vit_b_16.json", VC_EXAMPLES);
    snprintf(whisper, sizeof whisper, "%s/whisper_base_encoder.json", VC_EXAMPLES);
    const char *const models[] = {mlp, flat, wide, vit, whisper};
    const char *const sweeps[] = {"1:1100", "1:1100", "1:1100", "1:400", "1:400"};
    int bad = 0;
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++)
        for (int mode = 0; mode < 2; mode++) {
            RUN(&r, models[mi], "--sweep", sweeps[mi], "-m", mode ? "infer" : "train", "-f", "csv", "--attention", "math");
            assert_int_equal(r.status, 0);
            int col = -1, c = 0, line = 0;
            int64_t prev = 0, prev_b = 0;
            for (char *l = strtok(r.out, "\n"); l; l = strtok(NULL, "\n"), line++) {
                char *save = NULL;
                c = 0;
                int64_t b = 0, t = 0;
                for (char *f = strtok_r(l, ",", &save); f; f = strtok_r(NULL, ",", &save), c++) {
                    if (!line && !strcmp(f, "memory.total")) col = c;
                    if (line && c == 2) b = strtoll(f, NULL, 10);
                    if (line && c == col) t = strtoll(f, NULL, 10);
                }
                if (line && t < prev && bad++ < 10)
                    print_error("%s %s: total decreases from batch %" PRId64 " to %" PRId64 " (%" PRId64 " -> %" PRId64 ")\n",
                                models[mi], mode ? "infer" : "train", prev_b, b, prev, t);
                if (line) {
                    prev = t;
                    prev_b = b;
                }
            }
            assert_true(col > 0);
            run_free(&r);
        }
    if (bad) fail_msg("%d decreases of memory.total over batch sweeps (SPEC 3 says it never decreases)", bad);
}

static void test_gpus_and_sizes(void **state)
{
    (void)state;
    run_result r;
    RUN(&r, "--list-gpus", "-f", "json");
    assert_int_equal(r.status, 0);
    cJSON *j = parse(&r);
    cJSON *g = cJSON_GetObjectItem(j, "gpus");
    assert_true(cJSON_GetArraySize(g) >= 25);
    int amd = 0, nv = 0, hopper = 0;
    cJSON *it;
    cJSON_ArrayForEach(it, g) {
        assert_true(num(it, "capacity") > (INT64_C(8) << 30) - 1);
        assert_true(strlen(cJSON_GetObjectItem(it, "source")->valuestring) > 10);
        amd += !strcmp(cJSON_GetObjectItem(it, "vendor")->valuestring, "AMD");
        nv += !strcmp(cJSON_GetObjectItem(it, "vendor")->valuestring, "NVIDIA");
        hopper += num(it, "hopper") != 0;
        /* multiprocessors x resident threads (src/engine/gpu.c; the H200's 132 as torch reported it on the GPU run) */
        assert_true(num(it, "sms") >= 28 && (num(it, "sm_threads") == 1024 || num(it, "sm_threads") == 1536 ||
                                              num(it, "sm_threads") == 2048));
        if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, "h200")) assert_int_equal(num(it, "sms"), 132);
    }
    assert_true(amd >= 2 && nv >= 20 && hopper >= 4);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, "--list-gpus");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "h100-80gb"));
    assert_non_null(strstr(r.out, "mi300x"));
    run_free(&r);
    struct {
        const char *spec;
        int64_t cap;
    } sizes[] = {{"24GiB", INT64_C(25769803776)}, {"24GB", INT64_C(24000000000)}, {"24000MiB", INT64_C(25165824000)},
                 {"25769803776", INT64_C(25769803776)}, {"1.5TB", INT64_C(1500000000000)},
                 {"h100-80gb:90%", INT64_C(85520809984) * 9 / 10}, {"24GiB:50%", INT64_C(12884901888)},
                 {"H100", INT64_C(85520809984)}, {"rtx 4090", INT64_C(24564) * 1048576}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        RUN(&r, mlp, "--gpu", sizes[i].spec, "-f", "json");
        j = parse(&r);
        if (num(j, "gpu.capacity") != sizes[i].cap)
            fail_msg("%s: capacity %" PRId64 ", expected %" PRId64, sizes[i].spec, num(j, "gpu.capacity"), sizes[i].cap);
        cJSON_Delete(j);
        run_free(&r);
    }
    /* Hopper presets take cuBLAS's 32 MiB workspace (retained by ATen at torch 2.11: src/policy/release.c) */
    RUN(&r, wide, "--gpu", "h100-80gb", "--torch", "2.11", "-f", "json");
    j = parse(&r);
    int64_t ws_h = num(j, "memory.workspace");
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, wide, "--gpu", "a100-80gb", "--torch", "2.11", "-f", "json");
    j = parse(&r);
    int64_t ws_a = num(j, "memory.workspace");
    cJSON_Delete(j);
    run_free(&r);
    assert_true(ws_h > ws_a);
}

/* On a pipe the table's bar is plain ASCII, without escape codes. */
static void test_table_ascii(void **state)
{
    (void)state;
    run_result r;
    RUN(&r, wide, "-b", "64", "--gpu", "rtx3060");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "rtx3060: capacity"));
    assert_non_null(strstr(r.out, "\n  ["));
    assert_non_null(strstr(r.out, "W weights"));
    for (size_t i = 0; i < r.out_len; i++)
        if ((unsigned char)r.out[i] >= 0x80 || r.out[i] == 0x1b) fail_msg("non-ASCII byte at %zu", i);
    run_free(&r);
    RUN(&r, wide, "-b", "64", "--gpu", "900MiB", "--no-color");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "DOES NOT FIT"));
    assert_non_null(strchr(r.out, '|')); /* the capacity mark inside the bar */
    run_free(&r);
}

/* Issue 16's front-end defects, each a regression test. */

/* No raw control byte and no invalid UTF-8 in any report: a model name with
 * an OSC title sequence, BEL, ESC [2J, a C1 control and invalid UTF-8 comes
 * out escaped (\x1b, \u0085, \xff), and the JSON stays parseable. */
static void test_terminal_safety(void **state)
{
    (void)state;
    char evil[320];
    snprintf(evil, sizeof evil, "%s/evil.json", tmpdir);
    write_file(evil, "{\"name\": \"\\u001b]0;pwned\\u0007\\u001b[2J\\u0085z\xff\", \"input\": [4], \"layers\": "
                     "[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 2}]}");
    const char *const fmts[] = {"table", "csv", "json"};
    for (int i = 0; i < 3; i++) {
        run_result r;
        RUN(&r, evil, "-f", fmts[i]);
        assert_int_equal(r.status, 0);
        for (size_t k = 0; k < r.out_len; k++) {
            unsigned char c = (unsigned char)r.out[k];
            if ((c < 0x20 && c != '\n') || c == 0x7f || c >= 0x80) fail_msg("%s: byte 0x%02x at %zu", fmts[i], c, k);
        }
        if (i < 2) assert_non_null(strstr(r.out, "\\x1b]0;pwned\\x07\\x1b[2J\\u0085z\\xff"));
        if (i == 2) {
            cJSON *j = parse(&r);
            assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "\\x1b]0;pwned\\x07\\x1b[2J\\u0085z\\xff");
            cJSON_Delete(j);
        }
        run_free(&r);
    }
    /* an option value with a newline: one stderr line, the value escaped */
    run_result r;
    RUN(&r, evil, "-b", "x\ny");
    check_usage_error(&r, "--batch: expected a positive integer, got 'x\\ny'");
    run_free(&r);
}

/* Sizes with 19+ digits after the point (pow10i overflowed int64): 0.00123456789012345678
 * TiB is 0.00123456789012345678 x 2^40 = 1,357,421,750.4 bytes -> 1,357,421,750. */
static void test_long_decimals(void **state)
{
    (void)state;
    run_result r;
    RUN(&r, mlp, "-f", "json", "--context", "0.00123456789012345678TiB");
    assert_int_equal(r.status, 0);
    cJSON *j = parse(&r);
    assert_int_equal(num(j, "memory.cuda_context"), 1357421750);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, mlp, "-f", "json", "--gpu", "0.0123456789012345678TiB");
    j = parse(&r);
    assert_int_equal(num(j, "gpu.capacity"), 13574217505); /* x 2^40 = 13,574,217,504.9 */
    cJSON_Delete(j);
    run_free(&r);
    /* a doubled colon, and a percentage of a size below one byte, are refused */
    RUN(&r, mlp, "--gpu", "rtx4090::90%");
    check_usage_error(&r, "expected a percentage after ':'");
    run_free(&r);
    RUN(&r, mlp, "--gpu", "1B:50%");
    check_usage_error(&r, "less than a byte");
    run_free(&r);
}

/* Combinations that were silently ignored are refused with the reason. */
static void test_refused_combinations(void **state)
{
    (void)state;
    const struct { const char *args[10]; const char *msg; } cases[] = {
        {{mlp, "--input", "784,", NULL}, "--input: expected dimensions such as 3,224,224, got '784,'"},
        {{mlp, "--sweep", "1:4", "--plot", "-", NULL}, "--plot writes an SVG file: give a file name, not '-'"},
        {{"--params", "100", "--trace", NULL}, "--trace needs a model file"},
        {{"--params", "100", "--per-layer", NULL}, "--per-layer needs a model file"},
        {{mlp, "--trace", "-f", "json", NULL}, "does not go with --format"},
        {{mlp, "--trace", "--max-batch", "-g", "rtx4090", NULL}, "does not go with --max-batch"},
        /* --max-seq: a config.json's length at one batch, on a GPU */
        {{mlp, "--max-seq", "-g", "rtx4090", NULL}, "mlp.json: --max-seq applies to a Hugging Face config.json"},
        {{VC_TEST_DATA "/hf/gpt2.json", "--max-seq", NULL}, "--max-seq needs --gpu"},
        {{VC_TEST_DATA "/hf/gpt2.json", "--max-seq", "-g", "rtx4090", "--seq", "64", NULL}, "does not go with --seq"},
        {{VC_TEST_DATA "/hf/gpt2.json", "--max-seq", "-g", "rtx4090", "--max-batch", NULL}, "does not go with --max-batch"},
        {{VC_TEST_DATA "/hf/gpt2.json", "--max-seq", "-g", "rtx4090", "--sweep", "1:4", NULL}, "does not go with --sweep"},
        {{VC_TEST_DATA "/hf/gpt2.json", "--max-seq", "-g", "rtx4090", "--input", "64", NULL}, "does not go with --input"},
        {{VC_TEST_DATA "/hf/gpt2.json", "--max-seq", "-g", "rtx4090", "--trace", NULL}, "does not go with --trace"},
        {{"--params", "100", "--max-seq", "-g", "rtx4090", NULL}, "does not go with --params"},
        /* a sweep's error names the file, then the batch */
        {{mlp, "--sweep", "1,4503599627370496", NULL}, "mlp.json: batch 4503599627370496: "},
        /* generation (issue 13) */
        {{mlp, "--prompt", "64", NULL}, "--prompt, --new-tokens and --cache go with --mode generate"},
        {{mlp, "--mode", "generate", "--max-context", NULL}, "--max-context needs --mode generate and --gpu"},
        {{mlp, "--mode", "generate", "--max-context", "-g", "rtx4090", "--max-batch", NULL}, "does not go with --max-batch"},
        {{mlp, "--mode", "generate", NULL}, "--mode: generate needs a causal language model"},
        {{mlp, "--mode", "generate", "--cache", "paged", NULL}, "--cache"},
        {{"--params", "100", "--mode", "generate", NULL}, "--mode generate needs a model file"},
        {{mlp, "--mode", "generate", "--per-layer", NULL}, "it does not go with --per-layer"},
        {{mlp, "--mode", "generate", "--parallel", "ddp", "--gpus", "2", NULL}, "it does not go with --parallel"},
        {{mlp, "--mode", "generate", "--seq", "64", NULL}, "--seq does not go with --mode generate"},
        /* an exported file whose sizes were fixed at its input refuses another (issue 15) */
        {{fixed_in, "--input", "3,32,32", NULL}, "--input: this file's sizes were exported for its input"},
        {{mlp, "--serve", NULL}, "--serve sizes vLLM's KV cache on one --gpu for a model file: it does not go with no --gpu"},
        {{mlp, "--gpu-memory-utilization", "0.8", NULL}, "go with --serve"},
        {{mlp, "--serve", "-g", "rtx4090", "--gpu-memory-utilization", "1.5", NULL}, "--gpu-memory-utilization"},
        {{mlp, "--serve", "-g", "rtx4090", NULL}, "--serve: generate needs a causal language model"},
        {{mlp, "--serve", "-g", "rtx4090", "--parallel", "ddp", "--gpus", "2", NULL}, "--serve models one vLLM engine"},
        {{mlp, "--serve", "-g", "rtx4090", "--tp", "2", "--gpus", "4", NULL}, "tensor_parallel_size N is --tp N --gpus N"},
        /* --cache quantized (docs/inference.md "Cache formats"): transformers' caches keep the model's dtype */
        {{mlp, "--mode", "generate", "--kv-cache-dtype", "fp8", NULL}, "--kv-cache-dtype: transformers' generate() has no cache dtype"},
        {{mlp, "--mode", "generate", "--kv-bits", "2", NULL}, "go with --cache quantized"},
        {{mlp, "--serve", "-g", "rtx4090", "--cache", "quantized", NULL}, "--cache quantized is transformers' QuantizedCache"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run_result r;
        run_argv(cases[i].args, &r);
        check_usage_error(&r, cases[i].msg);
        run_free(&r);
    }
}

/* Writes are checked: into /dev/full, --help, --version, --list-layers and a
 * report exit 2 with one stderr line (they used to exit 0, or 2 silently). */
static void test_write_errors(void **state)
{
    (void)state;
    const char *const cmds[] = {"--help", "--version", "--list-layers", "-f json"};
    for (int i = 0; i < 4; i++) {
        char cmd[1024], errp[320];
        snprintf(errp, sizeof errp, "%s/full.err", tmpdir);
        snprintf(cmd, sizeof cmd, "'%s' %s %s >/dev/full 2>'%s'", VC_CLI, i == 3 ? mlp : "", cmds[i], errp);
        int st = system(cmd);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 2);
        size_t n;
        char *err = slurp(errp, &n);
        assert_non_null(strstr(err, "vramcalc: cannot write the output: No space left on device\n"));
        assert_ptr_equal(strchr(err, '\n'), err + n - 1);
        free(err);
    }
}

/* --help comes from the options table (src/cli/main.c): every line within 80
 * columns (help.c wraps at 79), each option on a line of its own (--lora-dropout
 * used to share --lora-alpha's), a hidden alias (--no-colour) left out, and
 * the choices listed from the library's X-macro maps (include/vramcalc/vramcalc.h:
 * VC_OPTIM_MAP ends with lion, adam8bit, adamw8bit, which the old help and the
 * --optim error did not list). */
static void test_help_table(void **state)
{
    (void)state;
    run_result r;
    RUN(&r, "--help");
    assert_int_equal(r.status, 0);
    for (const char *p = r.out; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        if (nl - p > 79) fail_msg("help line of %d columns: %.*s", (int)(nl - p), (int)(nl - p), p);
        p = nl + 1;
    }
    assert_non_null(strstr(r.out, "\n      --lora-dropout P   lora_dropout (default 0)\n"));
    assert_non_null(strstr(r.out, "\n  -o, --optim NAME       sgd, momentum, adam, adamw, none, lion, adam8bit,\n"));
    assert_null(strstr(r.out, "no-colour"));
    assert_null(strstr(r.out, "%%"));
    run_free(&r);
    RUN(&r, mlp, "-o", "sgdd");
    check_usage_error(&r, "--optim: unknown value 'sgdd' (choose sgd, momentum, adam, adamw, none, lion, adam8bit, adamw8bit, adafactor, paged_adam8bit, paged_adamw8bit)");
    run_free(&r);
    RUN(&r, mlp, "--no-colour"); /* the alias still works */
    assert_int_equal(r.status, 0);
    run_free(&r);
}

/* Every line of r's stdout within 80 columns (a column per code point). */
static void check_width(const run_result *r, const char *what)
{
    int col = 0, line = 1;
    for (size_t i = 0; i < r->out_len; i++) {
        unsigned char c = (unsigned char)r->out[i];
        if (c == '\n') {
            col = 0;
            line++;
        } else if ((c & 0xc0) != 0x80 && ++col > 80)
            fail_msg("%s: line %d passes 80 columns:\n%.300s", what, line, r->out + i - 80);
    }
}

/* Output within 80 columns (issue 16: the table was 131 columns, --per-layer 131,
 * --sweep 124, --list-gpus 133): five nested Sequentials name their Linear
 * layers[0].layers[0].layers[0].layers[0].layers[0].layers[0] (59 columns), the
 * peak note then passes the row, and a 2^40 batch gives 13-digit and PiB figures. */
static void test_width(void **state)
{
    (void)state;
    char deep[320];
    snprintf(deep, sizeof deep, "%s/deep.json", tmpdir);
    write_file(deep, "{\"name\": \"deep\", \"input\": [16, 64], \"layers\": [{\"type\": \"Sequential\", \"layers\": ["
                     "{\"type\": \"Sequential\", \"layers\": [{\"type\": \"Sequential\", \"layers\": ["
                     "{\"type\": \"Sequential\", \"layers\": [{\"type\": \"Sequential\", \"layers\": ["
                     "{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}]}]}]}]}]},"
                     "{\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"batch_first\": true,"
                     " \"dim_feedforward\": 64}]}");
    const struct { const char *args[10]; } cmds[] = {
        {{deep, "-b", "2", NULL}},
        {{deep, "--per-layer", "--gpu", "rtx4090:90%", "--max-batch", NULL}},
        {{deep, "--sweep", "1:4096:x8", "--gpu", "1GiB", NULL}},
        {{deep, "--sweep", "1,7", "--per-layer", NULL}},
        {{mlp, "--gpu", "8388607TiB", "--max-batch", NULL}},
        {{mlp, "--sweep", "1,1099511627776", "--gpu", "8388607TiB", "--max-batch", NULL}},
        {{mlp, "--gpus", "4", "--parallel", "zero1-torch", "--accumulate", "16", "--optim-impl", "forloop", NULL}},
        {{"--list-gpus", NULL}},
        {{"--help", NULL}},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        run_result r;
        run_argv(cmds[i].args, &r);
        if (r.status > 1) fail_msg("%s %s: exit %d: %s", cmds[i].args[0], cmds[i].args[1], r.status, r.err);
        check_width(&r, cmds[i].args[1]);
        run_free(&r);
    }
    /* the long name is cut in its middle, keeping its start and its leaf; JSON keeps it whole */
    run_result r;
    RUN(&r, deep, "--per-layer");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\n  layers[...rs[0].layers[0] Linear "));
    /* the peak's note does not fit after its row: it has a line of its own */
    assert_non_null(strstr(r.out, "\n  peak allocated "));
    assert_null(strstr(r.out, "bytes  (backward"));
    run_free(&r);
    RUN(&r, deep, "--per-layer", "-f", "json");
    assert_non_null(strstr(r.out, "\"layers[0].layers[0].layers[0].layers[0].layers[0].layers[0]\""));
    run_free(&r);
    /* a path longer than a line is not cut: the title wraps before it (words are written whole) */
    char longdir[1024], longfile[1100];
    int k = snprintf(longdir, sizeof longdir, "%s/", tmpdir);
    for (int d = 0; d < 3; d++) {
        memset(longdir + k, 'a' + d, 200);
        k += 200;
        longdir[k] = '\0';
        assert_int_equal(mkdir(longdir, 0700), 0);
        longdir[k++] = '/';
        longdir[k] = '\0';
    }
    snprintf(longfile, sizeof longfile, "%sm.json", longdir);
    rename(deep, longfile);
    RUN(&r, longfile);
    assert_int_equal(r.status, 0);
    char want[1200];
    snprintf(want, sizeof want, "deep\n  (%s)\n", longfile);
    assert_non_null(strstr(r.out, want));
    run_free(&r);
    rename(longfile, deep);
    /* the search's cap is said, on its own line when it does not fit the first */
    RUN(&r, mlp, "--gpu", "8388607TiB", "--max-batch");
    assert_non_null(strstr(r.out, "max batch on 8388607TiB: 1099511627776\n    (the search's limit, 2^40"));
    run_free(&r);
}

/* Runs VC_CLI with stdout and stderr on a pseudo-terminal of `cols` columns
 * (NO_COLOR, LANG=C: plain ASCII); the output with the terminal's \r removed. */
static void run_tty(const char *const *args, int cols, run_result *r)
{
    const char *argv[64];
    int n = 0, master;
    argv[n++] = VC_CLI;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    struct winsize ws = {24, (unsigned short)cols, 0, 0};
    fflush(NULL);
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("NO_COLOR", "1", 1);
        setenv("LANG", "C", 1);
        unsetenv("LC_ALL");
        unsetenv("LC_CTYPE");
        unsetenv("COLUMNS");
        execv(VC_CLI, (char *const *)argv);
        _exit(127);
    }
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap), buf[4096];
    assert_non_null(out);
    for (;;) { /* until the terminal closes (EIO once the child has exited) */
        ssize_t k = read(master, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        for (ssize_t i = 0; i < k; i++) {
            if (buf[i] == '\r') continue;
            if (len + 2 > cap) {
                out = realloc(out, cap *= 2);
                assert_non_null(out);
            }
            out[len++] = buf[i];
        }
    }
    out[len] = '\0';
    close(master);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r->out = out;
    r->out_len = len;
    r->err = calloc(1, 1);
    r->err_len = 0;
}

/* Wider on a wider terminal: at 200 columns the deep model's 59-column name
 * is shown whole and the --gpu sweep has its weights and reserved columns
 * (125 wide); at 80, on a terminal as on a pipe, the name is cut. */
static void test_width_terminal(void **state)
{
    (void)state;
    char deep[320];
    snprintf(deep, sizeof deep, "%s/deep2.json", tmpdir);
    write_file(deep, "{\"name\": \"deep\", \"input\": [16, 64], \"layers\": [{\"type\": \"Sequential\", \"layers\": ["
                     "{\"type\": \"Sequential\", \"layers\": [{\"type\": \"Sequential\", \"layers\": ["
                     "{\"type\": \"Sequential\", \"layers\": [{\"type\": \"Sequential\", \"layers\": ["
                     "{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}]}]}]}]}]}]}");
    const char *pl[] = {deep, "--per-layer", NULL};
    run_result r;
    run_tty(pl, 200, &r);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\n  layers[0].layers[0].layers[0].layers[0].layers[0].layers[0] Linear "));
    run_free(&r);
    run_tty(pl, 80, &r);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "layers[0].layers[0].layers[0].layers[0].layers[0].layers[0]"));
    check_width(&r, "tty 80");
    run_free(&r);
    const char *sw[] = {deep, "--sweep", "1,2", "--gpu", "rtx4090", NULL};
    run_tty(sw, 200, &r);
    assert_non_null(strstr(r.out, "     batch      weights  activations   peak alloc     reserved        total"));
    run_free(&r);
}

/* Cost bounds for every kind (issue 16, docs/limits.md). A 169-byte file of
 * TransformerDecoderLayer(d_model 8) x 100,000 took 24.6 s and 4.9 GB (the
 * issue: 16 s, 4.8 GB; ~48 GB at the 10^6-layer limit): a decoder layer records
 * 52 autograd ops in fp32 training and up to 70 under amp-fp16, the count its
 * kind declares (vc_kind.ops, checked by CTest kind_ops); 100,000 x 70 =
 * 7,000,000 passes VC_MAX_PLAN_OPS = 4,000,000, so the loader refuses the
 * `repeat` after its first copy (issue 28; before, the build refused it inside
 * copy 76,923). A plan that holds for one batch only
 * (SparseMoE with moe_imbalance > 1 sizes its busiest expert, ceil(F T k / E)
 * in floating point, for the batch it is built for: vc_batch_dependent; evenly
 * spread tokens are a floor count valid at every batch, test_sweep_plans) is
 * built again for each batch size: SparseMoE(hidden 8,
 * 2 experts, top 1, moe_imbalance 1.5) x 10,000 makes 1,609,994 events a plan (`--trace` lists
 * them), and a plan is refused when the events built so far plus the last
 * plan's would pass VC_MAX_REBUILT_EVENTS = 100,000,000, i.e. when 63 plans
 * would be built (62 x 1,609,994 = 99,819,628): the rows of --sweep 1:100 and
 * the grid batches (src/engine/simulate.c) each build one, so it is refused at
 * a batch of at most 63. TransformerEncoderLayer x 10,000, whose plan holds for
 * batch 1 and for 2 and above, used to be rebuilt per batch and refused at
 * batch 56: it now builds two plans. */
static void test_cost_limits(void **state)
{
    (void)state;
    char dec[320], enc[320];
    snprintf(dec, sizeof dec, "%s/dec.json", tmpdir);
    snprintf(enc, sizeof enc, "%s/enc.json", tmpdir);
    write_file(dec, "{\"inputs\":{\"tgt\":[4,8],\"memory\":[4,8]},\"layers\":[{\"type\":\"TransformerDecoderLayer\","
                    "\"inputs\":[\"tgt\",\"memory\"],\"d_model\":8,\"nhead\":2,\"batch_first\":true,\"repeat\":100000}]}");
    write_file(enc, "{\"input\":[4,8],\"layers\":[{\"type\":\"SparseMoE\",\"hidden_size\":8,\"intermediate_size\":8,"
                    "\"num_experts\":2,\"top_k\":1,\"moe_imbalance\":1.5,\"repeat\":10000}]}");
    run_result r;
    RUN(&r, dec);
    check_usage_error(&r, "dec.json:1:160: layers[0].repeat: 100000 copies of TransformerDecoderLayer record up to 70 "
                          "autograd ops each in one step (what its kinds declare): more than the limit of 4000000 in "
                          "all (docs/limits.md)");
    run_free(&r);
    RUN(&r, enc, "--sweep", "1:100");
    check_usage_error(&r, "enc.json: batch ");
    const char *at = strstr(r.err, "enc.json: batch ");
    assert_non_null(at);
    long refused = strtol(at + strlen("enc.json: batch "), NULL, 10);
    assert_true(refused >= 2 && refused <= 63);
    assert_non_null(strstr(r.err, ": this model's plan depends on the batch size (an attention kernel or a layer that "
                                  "chooses by it) and is rebuilt for each one: more than 100000000 events rebuilt in "
                                  "all, the limit (docs/limits.md); ask for fewer batch sizes\n"));
    run_free(&r);
    /* --per-layer in a sweep keeps nsweep x layers rows (vc_layer_info, ~250 bytes each: 1:50 over
     * 100,000 layers took 1.56 GB); 100,000 x 41 = 4,100,000 passes MAX_SWEEP_LAYER_ROWS (4,000,000) */
    char relu[320];
    snprintf(relu, sizeof relu, "%s/relu.json", tmpdir);
    write_file(relu, "{\"input\":[8],\"layers\":[{\"type\":\"ReLU\",\"repeat\":100000}]}");
    RUN(&r, relu, "--sweep", "1:41", "--per-layer");
    check_usage_error(&r, "--per-layer with --sweep keeps a row per layer and batch size: 100000 layers x 41 batch "
                          "sizes is more than the limit of 4000000 rows (docs/limits.md)");
    run_free(&r);
}


/* ---- the option table and requests (src/api/, issue 25) ---- */

/* Every row well-formed: a table name that is its flag with '_' for '-', found
 * by both names; letters unique; a closed set's choices given; "{}" only
 * where there are choices. The CLI's --help lists exactly the visible rows. */
static void test_option_table(void **state)
{
    (void)state;
    size_t n = vc_option_count();
    assert_true(n >= 71); /* options.def: 71 rows when this test was written */
    assert_null(vc_option_at(n));
    char letters[128];
    memset(letters, 0, sizeof letters);
    run_result h;
    RUN(&h, "--help");
    assert_int_equal(h.status, 0);
    for (size_t i = 0; i < n; i++) {
        const vc_option_info *o = vc_option_at(i);
        char flag[80];
        snprintf(flag, sizeof flag, "%s", o->name);
        for (char *c = flag; *c; c++)
            if (*c == '_') *c = '-';
        assert_string_equal(flag, o->flag);
        assert_ptr_equal(vc_option_find(o->name), o);
        assert_ptr_equal(vc_option_find_flag(o->flag), o);
        if (o->letter) {
            assert_int_equal(letters[(unsigned char)o->letter], 0);
            letters[(unsigned char)o->letter] = 1;
        }
        assert_true((o->arg == NULL) == (o->type == VC_OPTION_FLAG));
        if (o->type == VC_OPTION_CHOICE) assert_non_null(o->choices);
        if (o->help && strstr(o->help, "{}")) assert_non_null(o->choices);
        assert_non_null(o->default_text);
        assert_true((unsigned)o->section < VC_SECTION__N);
        assert_true(vc_option_section_title(o->section)[0] != '\0');
        char line[120];
        snprintf(line, sizeof line, "--%s%s%s", o->flag, o->arg ? " " : "", o->arg ? o->arg : "");
        if (o->help) assert_non_null(strstr(h.out, line));
    }
    /* the choices are the library's names: each one accepted by a request */
    vc_request *q = vc_request_new();
    assert_non_null(q);
    vc_error err;
    const vc_option_info *optim = vc_option_find("optim");
    char choices[256];
    snprintf(choices, sizeof choices, "%s", optim->choices);
    for (char *t = strtok(choices, ", "); t; t = strtok(NULL, ", ")) assert_int_equal(vc_request_set(q, "optim", t, &err), VC_OK);
    vc_request_free(q);
    run_free(&h);
}

/* The nearest option to a misspelt one, in each front end's spelling; none
 * for a word that is no option's typo. */
static void test_option_suggest(void **state)
{
    (void)state;
    assert_string_equal(vc_option_suggest("--bach", VC_SPELL_CLI)->flag, "batch");
    assert_string_equal(vc_option_suggest("--bach=4", VC_SPELL_CLI)->flag, "batch");
    assert_string_equal(vc_option_suggest("--max-bach", VC_SPELL_CLI)->flag, "max-batch");
    assert_string_equal(vc_option_suggest("--lora-aplha", VC_SPELL_CLI)->flag, "lora-alpha"); /* a swap costs 1 */
    assert_string_equal(vc_option_suggest("bach", VC_SPELL_PYTHON)->name, "batch");
    assert_string_equal(vc_option_suggest("max_bach", VC_SPELL_PYTHON)->name, "max_batch");
    assert_null(vc_option_suggest("--frobnicate", VC_SPELL_CLI));
    assert_null(vc_option_suggest("help", VC_SPELL_PYTHON)); /* the CLI's own options are not Python's */
    run_result r;
    RUN(&r, mlp, "--bach", "4");
    check_usage_error(&r, "unknown option '--bach'; did you mean '--batch'?");
    run_free(&r);
    RUN(&r, mlp, "--frobnicate");
    check_usage_error(&r, "unknown option '--frobnicate' (see vramcalc --help)");
    run_free(&r);
}

/* One message, two spellings: what the CLI prints and what Python shows. */
static void check_spelt(const vc_error *err, const char *cli, const char *py)
{
    char buf[1200];
    vc_error_format_for(err, VC_SPELL_CLI, buf, sizeof buf);
    assert_string_equal(buf, cli);
    vc_error_format_for(err, VC_SPELL_PYTHON, buf, sizeof buf);
    assert_string_equal(buf, py);
}

/* A request through the API renders the bytes the CLI prints, in each
 * format; its refusals name options by table name, spelt per front end. */
static void test_request_api(void **state)
{
    (void)state;
    vc_error err;
    vc_request *q = vc_request_new();
    assert_non_null(q);
    assert_int_equal(vc_request_set(q, "batch", "0", &err), VC_ERR_USAGE);
    check_spelt(&err, "--batch: expected a positive integer, got '0'", "batch=: expected a positive integer, got '0'");
    assert_int_equal(vc_request_set(q, "bach", "4", &err), VC_ERR_USAGE);
    check_spelt(&err, "unknown option 'bach'; did you mean --batch?", "unknown option 'bach'; did you mean batch=?");
    assert_int_equal(vc_request_set(q, "frobnicate", "4", &err), VC_ERR_USAGE);
    check_spelt(&err, "unknown option 'frobnicate'", "unknown option 'frobnicate'");
    assert_int_equal(vc_request_set(q, "help", NULL, &err), VC_ERR_USAGE); /* the CLI's own */
    assert_int_equal(vc_request_set(q, "batch", NULL, &err), VC_ERR_USAGE);
    assert_int_equal(vc_request_set(q, "per_layer", "maybe", &err), VC_ERR_USAGE);
    /* a refusal of a combination */
    assert_int_equal(vc_request_set(q, "max_batch", NULL, &err), VC_OK);
    assert_int_equal(vc_request_add_model(q, mlp, &err), VC_OK);
    vc_response *resp = NULL;
    assert_int_equal(vc_request_run(q, &resp, &err), VC_ERR_USAGE);
    assert_null(resp);
    check_spelt(&err, "--max-batch needs --gpu (a preset such as h100-80gb, or a size such as 24GiB)",
                "max_batch= needs gpu= (a preset such as h100-80gb, or a size such as 24GiB)");
    assert_int_equal(vc_request_set(q, "max_batch", "false", &err), VC_OK);
    assert_int_equal(vc_request_set(q, "mode", "generate", &err), VC_OK);
    assert_int_equal(vc_request_set(q, "seq", "64", &err), VC_OK);
    assert_int_equal(vc_request_run(q, &resp, &err), VC_ERR_USAGE);
    check_spelt(&err, "--seq does not go with --mode generate: --prompt is the sequence's length",
                "seq= does not go with mode=generate: prompt= is the sequence's length");
    vc_request_free(q);

    /* an estimate, a sweep and a fit: the same bytes as the CLI, the status its exit status */
    static const char *const cases[][8] = {
        {"batch", "4", "gpu", "rtx4090"},
        {"sweep", "1:8:x2", "gpu", "1MiB", "precision", "bf16"},
        {"mode", "infer", "gpu", "1MiB", "per_layer", "true"},
    };
    static const char *const formats[] = {"table", "json", "csv"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        for (int f = 0; f < 3; f++) {
            q = vc_request_new();
            const char *argv[20];
            int k = 0;
            argv[k++] = mlp;
            for (int i = 0; cases[c][i]; i += 2) {
                assert_int_equal(vc_request_set(q, cases[c][i], cases[c][i + 1], &err), VC_OK);
                const vc_option_info *o = vc_option_find(cases[c][i]);
                static char flags[8][64];
                snprintf(flags[i / 2], sizeof flags[i / 2], "--%s", o->flag);
                argv[k++] = flags[i / 2];
                if (o->arg) argv[k++] = cases[c][i + 1];
            }
            argv[k++] = "-f";
            argv[k++] = formats[f];
            argv[k] = NULL;
            assert_int_equal(vc_request_add_model(q, mlp, &err), VC_OK);
            assert_int_equal(vc_request_set(q, "format", formats[f], &err), VC_OK);
            assert_int_equal(vc_request_run(q, &resp, &err), VC_OK);
            char *text = NULL;
            size_t len = 0;
            assert_int_equal(vc_response_render(resp, VC_FORMAT_DEFAULT, NULL, &text, &len, &err), VC_OK);
            run_result r;
            run_argv(argv, &r);
            assert_int_equal(r.status, vc_response_status(resp));
            assert_int_equal(r.out_len, len);
            assert_memory_equal(r.out, text, len);
            vc_text_free(text);
            /* rendered again in another format: what -f gives */
            assert_int_equal(vc_response_render(resp, VC_FORMAT_JSON, NULL, &text, &len, &err), VC_OK);
            assert_non_null(strstr(text, "\"schema_version\": 1"));
            vc_text_free(text);
            run_free(&r);
            vc_response_free(resp);
            /* a request runs again to the same answer (the defaults apply to a copy) */
            assert_int_equal(vc_request_run(q, &resp, &err), VC_OK);
            vc_response_free(resp);
            vc_request_free(q);
        }
    }
}

/* Every option applies or is refused with one line naming it and what it
 * needs (issue 29 item 1, from the option table's applies-to column), and
 * --plot never replaces the model file (item 4). Before, each of these
 * exited 0 with the option ignored (or, for --plot, the model file replaced
 * by the chart). */
static void test_applies(void **state)
{
    (void)state;
#define HF_GPT2 VC_TEST_DATA "/hf/gpt2.json"
    const struct { const char *args[10]; const char *msg; } cases[] = {
        {{mlp, "--lora-alpha", "16", NULL}, "--lora-alpha sets the LoRA adapters: it needs --lora R (or --qlora)"},
        {{HF_GPT2, "--lora-targets", "c_attn", NULL}, "--lora-targets sets the LoRA adapters: it needs --lora R (or --qlora)"},
        {{HF_GPT2, "--lora-dropout", "0.1", NULL}, "--lora-dropout sets the LoRA adapters: it needs --lora R (or --qlora)"},
        {{HF_GPT2, "--serve", "-g", "h100-80gb", "--per-layer", NULL},
         "--per-layer does not apply to --serve (vLLM's engine): it goes with --mode train, infer and generate"},
        {{HF_GPT2, "--serve", "-g", "h100-80gb", "--grad-ckpt", NULL}, "--grad-ckpt does not apply to --serve (vLLM's engine): it goes with --mode train"},
        {{HF_GPT2, "--serve", "-g", "h100-80gb", "--loss", "liger", NULL}, "--loss does not apply to --serve"},
        {{HF_GPT2, "--serve", "-g", "h100-80gb", "--accumulate", "5", NULL}, "--accumulate does not apply to --serve"},
        {{mlp, "-m", "infer", "--accumulate", "4", NULL}, "--accumulate does not apply to --mode infer: it goes with --mode train"},
        {{HF_GPT2, "--moe-imbalance", "2", NULL},
         "--moe-imbalance sets how a mixture-of-experts model routes its tokens: " HF_GPT2 " has no SparseMoE layer"},
        {{"--params", "7500000000", "--gpus", "64", "--parallel", "zero3", NULL},
         "--gpus needs a model file: --params makes a counts-only estimate"},
        {{"--params", "7500000000", "--parallel", "zero3", NULL}, "--parallel needs a model file: --params makes a counts-only estimate"},
        {{"--params", "100", "--lora", "8", NULL}, "--lora needs a model file: --params makes a counts-only estimate"},
        /* grouped_mm (transformers 5, the default) allocates [tokens x top-k, width] whatever the routing */
        {{VC_TEST_DATA "/hf/mixtral-8x7b-v0.1.json", "--moe-imbalance", "2", NULL},
         "--moe-imbalance changes no allocation under --experts-implementation grouped_mm (transformers 5's default: one "
         "grouped matmul over every routed token): it applies with --experts-implementation per_expert or --ep"},
        {{HF_GPT2, "--experts-implementation", "per_expert", NULL},
         "--experts-implementation sets how a mixture-of-experts model runs its experts: " HF_GPT2 " has no SparseMoE layer"},
        {{mlp, "--experts-implementation", "per_expert", NULL},
         "--experts-implementation applies to a Hugging Face config.json; this is a vramcalc model file"},
        {{VC_TEST_DATA "/hf/mixtral-8x7b-v0.1.json", "--experts-implementation", "loop", NULL},
         "--experts-implementation: unknown value 'loop' (choose grouped_mm, per_expert)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run_result r;
        run_argv(cases[i].args, &r);
        check_usage_error(&r, cases[i].msg);
        run_free(&r);
    }
    /* what does apply still runs: the LoRA settings with --lora, a MoE config's imbalance */
    run_result r;
    RUN(&r, HF_GPT2, "--lora", "8", "--lora-alpha", "16", "--lora-dropout", "0.1");
    assert_int_equal(r.status, 0);
    run_free(&r);
    RUN(&r, VC_TEST_DATA "/hf/mixtral-8x7b-v0.1.json", "--moe-imbalance", "2", "--experts-implementation", "per_expert");
    assert_int_equal(r.status, 0);
    run_free(&r);
    /* per_expert is transformers 4.x's loop, the engine's only MoE before grouped_mm: Mixtral-8x7B
     * in bf16 with Adam totals 486,642,024,448 B, f088d1c's figure (its 4.x replica cases are
     * bench/accuracy/llm/measured.json's per_expert rows), with f088d1c's fixed 500 MiB context and
     * its retained cuBLAS workspaces (--torch 2.11: src/policy/release.c) */
    RUN(&r, VC_TEST_DATA "/hf/mixtral-8x7b-v0.1.json", "-p", "bf16", "--experts-implementation", "per_expert", "--context",
        "500MiB", "--torch", "2.11", "-f", "csv",
        "--columns", "memory.total");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "memory.total\n486642024448\n");
    run_free(&r);
    /* --plot naming the model file: refused, the file untouched */
    char copy[320];
    snprintf(copy, sizeof copy, "%s/model.json", tmpdir);
    size_t len, len2;
    char *orig = slurp(mlp, &len);
    write_file(copy, orig);
    RUN(&r, copy, "--sweep", "1:2", "--plot", copy);
    check_usage_error(&r, "is the model file: the chart would replace it; give another file name");
    run_free(&r);
    char *after = slurp(copy, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(orig, after, len);
    free(orig);
    free(after);
#undef HF_GPT2
}

/* Issue 29, the request layer's rest: outputs that cannot hurt (--plot and
 * --force; the searches' caps flagged in JSON and CSV), serving validated as
 * vLLM validates it, and errors in the user's words. */
static void test_issue29_outputs_serve_words(void **state)
{
    (void)state;
#define HF(name) VC_TEST_DATA "/hf/" name ".json"
    const struct { const char *args[12]; const char *msg; } cases[] = {
        {{mlp, "--sweep", "1:2", "--force", NULL}, "--force lets --plot replace an existing file: it needs --plot"},
        /* vllm/config/scheduler.py @ 01230b40 SchedulerConfig.verify_max_model_len: max_num_batched_tokens <
         * max_num_seqs is a ValueError */
        {{HF("llama-3.1-8b"), "--serve", "-g", "h100-80gb", "--max-num-batched-tokens", "1", "--max-num-seqs", "1024", NULL},
         "--max-num-batched-tokens: 1 is less than --max-num-seqs 1024: vLLM refuses to start"},
        /* h100-80gb: max_num_batched_tokens 8192 (EngineArgs defaults, src/engine/serve.c); one dummy request of
         * 8192 tokens passes GPT-2's 1024 learned positions: the options named, not the emitted model's
         * layers[1]; cdiv(8192, 1024) = 8 requests fit */
        {{HF("gpt2"), "--serve", "-g", "h100-80gb", "--max-num-seqs", "1", "--prompt", "512", "--new-tokens", "256", NULL},
         "--max-num-seqs: the profiling run's 1 dummy request of 8192 tokens passes the model's 1024 positions, and "
         "vramcalc builds each as one sequence: give --max-num-seqs 8 or more, or a smaller --max-num-batched-tokens"},
        /* vllm/config/model.py @ 0052a5b8 _get_and_verify_max_len: max_position_embeddings 131072 (rope
         * type llama3: no factor) */
        {{HF("llama-3.1-8b"), "--serve", "-g", "1000TB", "--prompt", "1000000", NULL},
         "--prompt: prompt + new tokens (1000256 tokens) pass the model's length, 131072 (max_position_embeddings in its "
         "config.json): vLLM refuses a max_model_len over it"},
        {{HF("llama-3.1-8b"), "--serve", "-g", "1000TB", "--prompt", "130817", NULL}, "(131073 tokens) pass the model's length, 131072"},
        {{HF("llama-3.1-8b"), "--serve", "-g", "h100-80gb", "--lora", "16", NULL},
         "--lora with --serve: vLLM's LoRA serving (max_loras x max_lora_rank adapter slots per module) is not modelled"},
        {{HF("llama-3.1-8b"), "--serve", "-g", "h100-80gb", "--qlora", NULL}, "--qlora with --serve: vLLM's LoRA serving"},
        {{HF("llama-3.1-8b"), "--serve", "-g", "h100-80gb", "--context", "1GiB", NULL},
         "--context does not apply to --serve (vLLM's engine): it goes with --mode train, infer and generate"},
        {{HF("llama-3.1-8b"), "--input", "100", NULL},
         "--input sets a vramcalc model file's input shape; a config.json's input is its tokens: use --seq"},
        {{HF("roberta-base"), "--input", "1,2", NULL}, "a config.json's input is its tokens: use --seq"},
        {{HF("llama-3.1-8b"), "-m", "generate", "--input", "8", NULL}, "a config.json's input is its tokens: use --prompt"},
        /* generate loads the config at the prompt's length: its limits are --prompt's */
        {{HF("llama-3.1-8b"), "-m", "generate", "--prompt", "1099511627777", NULL}, "--prompt: 1099511627777 tokens: more than 2^40"},
        {{HF("llama-3.1-8b"), "-m", "generate", "--prompt", "1099511627776", NULL}, "--prompt: 1099511627776 tokens: the attention scores"},
        {{HF("llama-3.1-8b"), "-m", "generate", "--max-context", "--max-seq", "-g", "h100-80gb", NULL},
         "--max-seq searches the sequence length of a config.json at one --batch: it does not go with --max-context"},
        {{mlp, "--sweep", "9999999999999999", NULL}, "--sweep: a number in '9999999999999999' is over the limit of 2^53 (9007199254740992)"},
        {{mlp, "--sweep", "1:9007199254740993", NULL}, "over the limit of 2^53"},
        {{HF("llama-3.1-8b"), "--lora", "1099511627776", NULL}, HF("llama-3.1-8b") ": --lora: the model has more than 2^56 parameters"},
        {{mlp, "--gpu", "9223372036854775807", NULL},
         "--gpu: '9223372036854775807' is over the limit: a size has at most 18 significant digits (and is at most 2^63 bytes)"},
        {{mlp, "--gpu", "12x", NULL}, "--gpu: unknown unit in '12x'"},
        /* a model that cannot generate: that refusal, before any length */
        {{HF("bert-base-uncased"), "--serve", "-g", "h100-80gb", NULL}, "--serve: generate needs a causal language model"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run_result r;
        run_argv(cases[i].args, &r);
        check_usage_error(&r, cases[i].msg);
        assert_null(strstr(r.err, "layers[")); /* no path of an emitted model */
        run_free(&r);
    }
    run_result r;
    /* --sweep's well-formed items still parse up to the limit */
    RUN(&r, "--params", "1", "--sweep", "9007199254740992", "-f", "csv", "--columns", "batch");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "batch\n9007199254740992\n");
    run_free(&r);
    /* without --max-num-seqs, vLLM's default is at most max_num_batched_tokens (arg_utils.py @ 99d7eb5d
     * EngineArgs._set_default_args: min(1024, 512) on an H100) */
    RUN(&r, HF("llama-3.1-8b"), "--serve", "-g", "h100-80gb", "--max-num-batched-tokens", "512", "-f", "json");
    assert_int_equal(r.status, 0);
    cJSON *j = parse(&r);
    assert_int_equal(num(j, "serve.max_num_seqs"), 512);
    assert_int_equal(num(j, "serve.max_num_batched_tokens"), 512);
    cJSON_Delete(j);
    run_free(&r);
    /* 131072 - 256 tokens of prompt: the model's length exactly, served */
    RUN(&r, HF("llama-3.1-8b"), "--serve", "-g", "1000TB", "--prompt", "130816", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    assert_int_equal(num(j, "serve.request_tokens"), 131072);
    cJSON_Delete(j);
    run_free(&r);
    /* vLLM's profiling run is 1024 dummy requests of 8 tokens on an H100 (gpu_model_runner.py @ 4e179065
     * profile_run -> _dummy_run: min(8192, 1024) requests of 8192 // 1024 tokens), not one 8192-token
     * sequence: GPT-2's 1024 learned positions serve requests of 512 + 256 tokens */
    RUN(&r, HF("gpt2"), "--serve", "-g", "h100-80gb", "--prompt", "512", "--new-tokens", "256", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    assert_int_equal(num(j, "serve.request_tokens"), 768);
    assert_true(num(j, "serve.concurrency") > 0);
    cJSON_Delete(j);
    run_free(&r);
    /* GPT-2's n_positions 1024 (vllm/config/model.py _get_and_verify_max_len's keys): 1024 + 1 refused */
    RUN(&r, HF("gpt2"), "--serve", "-g", "h100-80gb", "--prompt", "769", "--new-tokens", "256");
    check_usage_error(&r, "--prompt: prompt + new tokens (1025 tokens) pass the model's length, 1024 (n_positions in its config.json)");
    run_free(&r);
    /* the searches' caps, in every format: --max-batch stops at 2^40 (sweep.c, VC_MAX_BATCH_LIMIT); one
     * parameter on 1000 TB fits any batch */
    RUN(&r, "--params", "1", "--max-batch", "-g", "1000TB", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    assert_int_equal(num(j, "max_batch"), INT64_C(1) << 40);
    assert_int_equal(num(j, "max_batch_limited"), 1);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, "--params", "1", "--max-batch", "-g", "1000TB", "-f", "csv", "--columns", "max_batch,max_batch_limited");
    assert_string_equal(r.out, "max_batch,max_batch_limited\n1099511627776,true\n");
    run_free(&r);
    RUN(&r, "--params", "1", "--max-batch", "-g", "1000TB", "--sweep", "1,2", "-f", "json");
    j = parse(&r);
    assert_int_equal(num(j, "max_batch_limited"), 1);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, mlp, "--max-batch", "-g", "rtx4090", "-f", "csv", "--columns", "max_batch_limited");
    assert_string_equal(r.out, "max_batch_limited\nfalse\n");
    run_free(&r);
    /* --max-context: gpt2's 1024 positions hold prompt + 256 new tokens - 1 (generate.c): 769, the
     * search's limit, not memory, on 1000 TB */
    RUN(&r, HF("gpt2"), "-m", "generate", "--max-context", "-g", "1000TB", "-f", "json");
    assert_int_equal(r.status, 0);
    j = parse(&r);
    assert_int_equal(num(j, "max_context.prompt"), 769);
    assert_int_equal(num(j, "max_context.limited"), 1);
    assert_int_equal(num(j, "generate.prompt"), 769);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, HF("gpt2"), "-m", "generate", "--max-context", "-g", "1000TB", "-f", "csv", "--columns",
        "max_context.prompt,max_context.limited");
    assert_string_equal(r.out, "max_context.prompt,max_context.limited\n769,true\n");
    run_free(&r);
    RUN(&r, HF("gpt2"), "-m", "generate", "--max-context", "-g", "1GiB", "-f", "json");
    j = parse(&r);
    assert_true(num(j, "max_context.prompt") < 769);
    assert_int_equal(num(j, "max_context.limited"), 0);
    cJSON_Delete(j);
    run_free(&r);
    /* --plot replaces an existing file only with --force, and never the model file */
    char model[320], svg[320];
    snprintf(model, sizeof model, "%s/i29-model.json", tmpdir);
    snprintf(svg, sizeof svg, "%s/i29.svg", tmpdir);
    size_t len, len2;
    char *orig = slurp(mlp, &len);
    write_file(model, orig);
    write_file(svg, "keep me");
    RUN(&r, model, "--sweep", "1:2", "--plot", svg);
    check_usage_error(&r, "exists: give --force to replace it, or another file name");
    run_free(&r);
    char *kept = slurp(svg, &len2);
    assert_string_equal(kept, "keep me");
    free(kept);
    RUN(&r, "--params", "100", "--sweep", "1:2", "--plot", svg); /* counts only alike */
    check_usage_error(&r, "exists: give --force to replace it");
    run_free(&r);
    RUN(&r, model, "--sweep", "1:2", "--plot", svg, "--force");
    assert_int_equal(r.status, 0);
    run_free(&r);
    kept = slurp(svg, &len2);
    assert_non_null(strstr(kept, "<svg"));
    free(kept);
    RUN(&r, model, "--sweep", "1:2", "--plot", model, "--force");
    check_usage_error(&r, "is the model file: the chart would replace it; give another file name");
    run_free(&r);
    char *after = slurp(model, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(orig, after, len);
    free(orig);
    free(after);
#undef HF
}

/* A CSV cell a spreadsheet would evaluate (a model named =HYPERLINK(...))
 * starts with a quote inside a quoted cell, as OWASP's CSV injection advice
 * says (issue 29 item 4); other names are as before. */
static void test_csv_formula_cells(void **state)
{
    (void)state;
    char path[320];
    snprintf(path, sizeof path, "%s/formula.json", tmpdir);
    write_file(path, "{\"name\": \"=HYPERLINK(\\\"http://x\\\")\", \"input\": [4], \"layers\": [\n"
                     "  {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 2}]}\n");
    run_result r;
    RUN(&r, path, "-f", "csv", "--columns", "model,batch");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "model,batch\n\"'=HYPERLINK(\"\"http://x\"\")\",1\n");
    run_free(&r);
    RUN(&r, mlp, "-f", "csv", "--columns", "model,batch");
    assert_string_equal(r.out, "model,batch\ntiny-mlp,1\n");
    run_free(&r);
}

/* The CUDA context model in the reports (src/engine/context.c, docs/context.md; issue 27), the figures by
 * hand from context.c's table: the runtime 349 MiB, the 1 KiB default stack of every resident thread
 * (no --gpu: an A100's 108 SMs x 2048; h200: 132 x 2048), cuBLAS 63 MiB for the Linears' GEMMs, in
 * training + 256 B a thread; eager loading + 362 MiB (PyTorch PR #86509) and no library part. */
static void test_context_model(void **state)
{
    (void)state;
    const int64_t MiB = INT64_C(1) << 20;
    run_result r;
    RUN(&r, mlp, "-f", "json");
    assert_int_equal(r.status, 0);
    cJSON *j = parse(&r);
    assert_string_equal(cJSON_GetObjectItem(j, "cuda_version")->valuestring, "13.0");
    assert_string_equal(cJSON_GetObjectItem(j, "module_loading")->valuestring, "lazy"); /* auto from 11.7 */
    assert_int_equal(num(j, "memory.context_parts.runtime"), 349 * MiB);
    assert_int_equal(num(j, "memory.context_parts.local_memory"), INT64_C(108) * 2048 * 1024);
    assert_int_equal(num(j, "memory.context_parts.eager"), 0);
    assert_int_equal(num(j, "memory.context_parts.cublas"), 63 * MiB);
    assert_int_equal(num(j, "memory.context_parts.kernels"), 0); /* no convolution, no flash attention */
    assert_int_equal(num(j, "memory.context_parts.backward_local_memory"), INT64_C(108) * 2048 * 256);
    assert_int_equal(num(j, "memory.context_parts.backward_kernels"), 0);
    assert_int_equal(num(j, "memory.context_parts.measured"), 0);
    assert_int_equal(num(j, "memory.cuda_context"), 349 * MiB + INT64_C(108) * 2048 * 1280 + 63 * MiB);
    cJSON_Delete(j);
    run_free(&r);
    /* the card and stack of the fit: measured, in the table's note too; 742 MiB, as the H200 run
     * measured for GEMM-only training steps (740 or 742, docs/context.md) */
    RUN(&r, mlp, "--gpu", "h200", "-f", "json");
    j = parse(&r);
    assert_int_equal(num(j, "memory.context_parts.local_memory"), INT64_C(132) * 2048 * 1024);
    assert_int_equal(num(j, "memory.context_parts.backward_local_memory"), INT64_C(132) * 2048 * 256);
    assert_int_equal(num(j, "memory.context_parts.measured"), 1);
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, mlp, "--gpu", "h200", "--no-color");
    assert_non_null(strstr(r.out, "  cuda context          742.0 MiB           778043392  (model, fitted: this GPU)\n"
                                  "    runtime             349.0 MiB           365953024  (driver, runtime, ATen)\n"
                                  "    local memory        264.0 MiB           276824064  (1 KiB x 270336 threads)\n"
                                  "    cuBLAS               63.0 MiB            66060288  (the step's GEMMs)\n"
                                  "    backward stack       66.0 MiB            69206016  (256 B x 270336 threads)\n"
                                  "  total "));
    run_free(&r);
    /* eager loading on CUDA 11.8, inference: runtime + local memory + 362 MiB; CSV names the parts */
    RUN(&r, mlp, "-m", "infer", "--cuda", "11.8", "--module-loading", "eager", "-f", "csv", "--columns",
        "memory.cuda_context,memory.context_parts.eager,memory.context_parts.cublas,memory.context_parts.measured");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "memory.cuda_context,memory.context_parts.eager,memory.context_parts.cublas,"
                               "memory.context_parts.measured\n972029952,379584512,0,false\n");
    run_free(&r);
    RUN(&r, mlp, "-m", "infer", "--cuda", "11.8", "--module-loading", "eager");
    assert_non_null(strstr(r.out, "(model, extrapolated)\n    runtime "));
    assert_non_null(strstr(r.out, "\n    eager loading       362.0 MiB           379584512  (every module at start)\n"));
    assert_null(strstr(r.out, "\n    cuBLAS ")); /* the part: the workspace row's note names cuBLAS too */
    run_free(&r);
    /* --context: the bytes given, no parts anywhere */
    RUN(&r, mlp, "--context", "1GiB", "-f", "json");
    j = parse(&r);
    assert_int_equal(num(j, "memory.cuda_context"), 1024 * MiB);
    assert_false(has(cJSON_GetObjectItem(j, "memory"), "context_parts"));
    cJSON_Delete(j);
    run_free(&r);
    RUN(&r, mlp, "--context", "1GiB", "--no-color");
    assert_non_null(strstr(r.out, "  cuda context            1.0 GiB          1073741824  (--context)\n  total "));
    run_free(&r);
    RUN(&r, mlp, "--context", "1GiB", "-f", "csv", "--columns", "memory.context_parts.runtime");
    check_usage_error(&r, "--columns: unknown column 'memory.context_parts.runtime' (choose from model,");
    assert_non_null(strstr(r.err, "memory.context_parts.* without --context)"));
    run_free(&r);
    RUN(&r, mlp, "-f", "csv", "--columns", "x");
    assert_non_null(strstr(r.err, ", memory.cuda_context, memory.context_parts.{runtime,local_memory,eager,cublas,kernels,"
                                  "backward_local_memory,backward_kernels,measured}, memory.total,"));
    run_free(&r);
    /* what does not go together */
    RUN(&r, mlp, "--context", "1GiB", "--cuda", "12.4");
    check_usage_error(&r, "--context gives the CUDA context's bytes: it does not go with --cuda, which sets the model it replaces");
    run_free(&r);
    RUN(&r, mlp, "--context", "1GiB", "--module-loading", "eager");
    check_usage_error(&r, "--context gives the CUDA context's bytes: it does not go with --module-loading, which sets the model "
                          "it replaces");
    run_free(&r);
    RUN(&r, mlp, "--cuda", "11.6", "--module-loading", "lazy");
    check_usage_error(&r, "--module-loading lazy needs CUDA 11.7 or later (CUDA_MODULE_LOADING=LAZY appeared there): --cuda is 11.6");
    run_free(&r);
    RUN(&r, mlp, "--cuda", "14.0");
    check_usage_error(&r, "--cuda: unknown value '14.0' (choose a CUDA release from 11.0 to 13.9, e.g. 12.4)");
    run_free(&r);
    RUN(&r, mlp, "--gpu", "mi300x", "--cuda", "12.4");
    check_usage_error(&r, "--cuda sets the CUDA context model: --gpu mi300x is an AMD GPU, whose context is not modelled (a 500 "
                          "MiB estimate; --context sets it)");
    run_free(&r);
    /* auto on CUDA 11.6 is eager (lazy loading appeared in 11.7) */
    RUN(&r, mlp, "--cuda", "11.6", "-f", "json");
    j = parse(&r);
    assert_string_equal(cJSON_GetObjectItem(j, "module_loading")->valuestring, "eager");
    assert_int_equal(num(j, "memory.context_parts.eager"), 362 * MiB);
    cJSON_Delete(j);
    run_free(&r);
}

/* A hint's options as arguments: {"grad_ckpt": true, "lora": 16} is
 * --grad-ckpt --lora 16 (the flags through the option table). */
static int hint_args(const cJSON *opts, const char **args, int n, char store[][32])
{
    const cJSON *o;
    int k = 0;
    cJSON_ArrayForEach(o, opts) {
        const vc_option_info *info = vc_option_find(o->string);
        assert_non_null(info);
        snprintf(store[k], 32, "--%s", info->flag);
        args[n++] = store[k++];
        if (cJSON_IsTrue(o)) continue;
        if (cJSON_IsNumber(o)) snprintf(store[k], 32, "%lld", (long long)o->valuedouble);
        else snprintf(store[k], 32, "%s", o->valuestring);
        args[n++] = store[k++];
    }
    return n;
}

/* src/api/hints.c: an estimate that does not fit --gpu lists what would;
 * each hint is checked against the CLI's own estimate with its options
 * (same total, and it fits), and a "together" hint is minimal (each of its
 * knobs alone does not fit). The expected sets are what the library's own
 * estimates give for llama-3.1-8b bf16 on a 24 GiB rtx4090. */
#define HF(name) VC_TEST_DATA "/hf/" name ".json"
static void test_hints(void **state)
{
    (void)state;
    run_result r;
    static const struct {
        const char *args[12];
        const char *sets[4]; /* the hints' options, as the CLI spells them */
    } cases[] = {
        {{HF("llama-3.1-8b"), "-p", "bf16", "--gpu", "rtx4090", "--seq", "512"}, {"--lora 16", "--qlora", "--parallel fsdp2 --gpus 4"}},
        {{HF("llama-3.1-8b"), "-p", "bf16", "--gpu", "rtx4090", "--seq", "2048", "-b", "4"}, {"--grad-ckpt --qlora"}},
        {{VC_EXAMPLES "/resnet50.json", "-b", "512", "--gpu", "rtx4090"}, {"--batch 128 --accumulate 4"}},
        /* inference: quantized weights, then tensor parallelism (Llama-3.1-70B bf16 on an 80 GB H100) */
        {{HF("llama-3.1-70b"), "-m", "infer", "-p", "bf16", "--gpu", "h100-80gb", "--seq", "2048"},
         {"--weights int8", "--weights nf4", "--tp 2 --gpus 2"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const char *args[24];
        int n = 0;
        for (int i = 0; cases[c].args[i]; i++) args[n++] = cases[c].args[i];
        args[n++] = "-f";
        args[n++] = "json";
        args[n] = NULL;
        run_argv(args, &r);
        assert_int_equal(r.status, 1);
        cJSON *j = parse(&r);
        const cJSON *hints = cJSON_GetObjectItem(j, "would_fit");
        assert_true(cJSON_IsArray(hints));
        int nh = 0;
        const cJSON *h;
        cJSON_ArrayForEach(h, hints) {
            assert_non_null(cases[c].sets[nh]);
            char store[16][32], words[256] = "";
            const char *more[40];
            int m = n - 2; /* the case's arguments, then the hint's, then -f json */
            memcpy(more, args, (size_t)m * sizeof *more);
            int m2 = hint_args(cJSON_GetObjectItem(h, "options"), more, m, store);
            for (int i = m; i < m2; i++) snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s", i > m ? " " : "", more[i]);
            assert_string_equal(words, cases[c].sets[nh]);
            more[m2++] = "-f";
            more[m2++] = "json";
            more[m2] = NULL;
            run_result r2;
            run_argv(more, &r2);
            assert_int_equal(r2.status, 0);
            cJSON *j2 = parse(&r2);
            assert_int_equal(num(j2, "memory.total"), num(h, "total"));
            assert_int_equal(num(j2, "memory.peak_allocated"), num(h, "peak_allocated"));
            cJSON_Delete(j2);
            run_free(&r2);
            if (strstr(cJSON_GetObjectItem(h, "what")->valuestring, "together")) /* minimal: no knob alone fits */
                for (int i = m; i < m2 - 2; i++) {
                    if (more[i][0] != '-') continue;
                    const char *one[24];
                    int k = 0;
                    for (int a = 0; a < m; a++) one[k++] = args[a];
                    one[k++] = more[i];
                    if (i + 1 < m2 - 2 && more[i + 1][0] != '-') one[k++] = more[i + 1];
                    one[k++] = "--no-hints";
                    one[k] = NULL;
                    run_argv(one, &r2);
                    assert_int_equal(r2.status, 1);
                    run_free(&r2);
                }
            nh++;
        }
        assert_null(cases[c].sets[nh]);
        cJSON_Delete(j);
        run_free(&r);
    }
    /* the table says the same; --no-hints and a fit list nothing */
    RUN(&r, HF("llama-3.1-8b"), "-p", "bf16", "--gpu", "rtx4090", "--seq", "512");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "\n  what would fit the rtx4090, cheapest first:\n    --lora 16: total "));
    run_free(&r);
    RUN(&r, HF("llama-3.1-8b"), "-p", "bf16", "--gpu", "rtx4090", "--seq", "512", "--no-hints", "-f", "json");
    assert_int_equal(r.status, 1);
    assert_null(strstr(r.out, "would_fit"));
    run_free(&r);
    RUN(&r, HF("llama-3.1-8b"), "-p", "bf16", "--gpu", "h200", "--seq", "512", "--lora", "16", "-f", "json");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "would_fit"));
    run_free(&r);
    RUN(&r, HF("llama-3.1-8b"), "--no-hints", "--serve", "--gpu", "h100-80gb");
    check_usage_error(&r, "--no-hints does not apply to --serve");
    run_free(&r);
}

/* --image above batch 1: refused for Qwen2.5-VL, whose tower runs a batch's patches as one sequence
 * (measured 21.8% low at batch 2: measured.json llm288), taken for Gemma 3, whose SigLIP tower runs
 * the images as a batch dimension (within 0.07% at batch 2: llm298, llm299) */
static void test_image_batch(void **state)
{
    (void)state;
    run_result r;
    RUN(&r, HF("qwen2.5-vl-3b-instruct"), "--image", "640x480", "-b", "2");
    check_usage_error(&r, "--image is modelled at --batch 1 for this vision tower");
    run_free(&r);
    RUN(&r, HF("qwen2.5-vl-3b-instruct"), "--image", "640x480", "--gpu", "h100-80gb", "--max-batch");
    check_usage_error(&r, "not --max-batch");
    run_free(&r);
    RUN(&r, HF("gemma-3-4b-it"), "--image", "640x480", "-b", "2", "-p", "bf16", "-f", "json");
    assert_int_equal(r.status, 0);
    cJSON *j = parse(&r);
    assert_int_equal(num(j, "batch"), 2);
    cJSON_Delete(j);
    run_free(&r);
}

#undef HF

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes),   cmocka_unit_test(test_json_and_csv), cmocka_unit_test(test_max_batch),
        cmocka_unit_test(test_csv_columns),
        cmocka_unit_test(test_sweep),        cmocka_unit_test(test_gpus_and_sizes),
        cmocka_unit_test(test_table_ascii),  cmocka_unit_test(test_terminal_safety), cmocka_unit_test(test_long_decimals),
        cmocka_unit_test(test_write_errors), cmocka_unit_test(test_refused_combinations),
        cmocka_unit_test(test_max_seq),
        cmocka_unit_test(test_help_table),   cmocka_unit_test(test_width), cmocka_unit_test(test_width_terminal),
        cmocka_unit_test(test_option_table), cmocka_unit_test(test_option_suggest), cmocka_unit_test(test_request_api),
        cmocka_unit_test(test_applies),      cmocka_unit_test(test_csv_formula_cells),
        cmocka_unit_test(test_context_model),
        cmocka_unit_test(test_issue29_outputs_serve_words),
        cmocka_unit_test(test_hints),        cmocka_unit_test(test_image_batch),
    };
    const struct CMUnitTest mono[] = {cmocka_unit_test(test_monotonic)};
    const struct CMUnitTest examples[] = {cmocka_unit_test(test_max_batch_examples)};
    const struct CMUnitTest limits[] = {cmocka_unit_test(test_cost_limits)};
    if (argc > 1 && !strcmp(argv[1], "monotonic")) return cmocka_run_group_tests(mono, setup, teardown);
    if (argc > 1 && !strcmp(argv[1], "examples")) return cmocka_run_group_tests(examples, setup, teardown);
    if (argc > 1 && !strcmp(argv[1], "limits")) return cmocka_run_group_tests(limits, setup, teardown);
    return cmocka_run_group_tests(tests, setup, teardown);
}
