/*
 * test_errors.c — hostile input (issue 5).
 *
 *   test_errors corpus   every tests/bad/NAME.json against tests/bad/expected.txt
 *                        (NAME<TAB>expected substring[<TAB>extra arguments]):
 *                        the CLI (VC_CLI) must exit 2, print nothing on stdout
 *                        and exactly one line on stderr containing the text
 *   test_errors cli      bad command-line values, same rule
 *   test_errors api      the library: positions, escaping, limits, recovery
 *
 * Without an argument all three run.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"
#include "vramcalc/vramcalc.h"

#ifndef VC_BAD_DIR
#error "VC_BAD_DIR (tests/bad) must be defined"
#endif

#define MIN_BAD_FILES 60

/* ------------------------------------------------------- running the CLI */

typedef struct {
    int status;      /* exit status, or -1 when killed by a signal */
    int signal;
    char out[4096];  /* stdout (truncated) */
    size_t out_len;
    char err[4096];  /* stderr (truncated) */
    size_t err_len;
} run_result;

static char tmpdir[256];

static size_t slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t len = 0;
    if (f) {
        len = fread(buf, 1, n - 1, f);
        /* count what did not fit, so a long output still fails "one line" checks */
        char tmp[4096];
        size_t more;
        while ((more = fread(tmp, 1, sizeof tmp, f)) > 0) len += more;
        fclose(f);
    }
    buf[len < n ? len : n - 1] = '\0';
    return len;
}

/* Runs VC_CLI argv[] with stdin from `in` (NULL: /dev/null). */
static void run_cli(const char *const *args, const char *in, run_result *r)
{
    char outp[300], errp[300];
    snprintf(outp, sizeof outp, "%s/stdout", tmpdir);
    snprintf(errp, sizeof errp, "%s/stderr", tmpdir);
    memset(r, 0, sizeof *r);
    const char *argv[64];
    int n = 0;
    argv[n++] = VC_CLI;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fi = open(in ? in : "/dev/null", O_RDONLY);
        int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fi < 0 || fo < 0 || fe < 0) _exit(127);
        alarm(60); /* a run that hangs (a FIFO's open) dies of SIGALRM and fails its check */
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(VC_CLI, (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    r->out_len = slurp(outp, r->out, sizeof r->out);
    r->err_len = slurp(errp, r->err, sizeof r->err);
}

/* The rule for every bad input: exit 2, nothing on stdout, one line on
 * stderr ("vramcalc: ...\n") that contains `expected`. */
static int check_usage_error(const char *what, const run_result *r, const char *expected)
{
    const char *nl = memchr(r->err, '\n', r->err_len < sizeof r->err ? r->err_len : sizeof r->err - 1);
    bool one_line = nl && (size_t)(nl - r->err) + 1 == r->err_len;
    bool ok = r->status == 2 && r->out_len == 0 && one_line && !strncmp(r->err, "vramcalc: ", 10) &&
              strstr(r->err, expected) != NULL;
    if (!ok) {
        print_error("%s:\n  expected: exit 2, no stdout, one stderr line containing: %s\n"
                    "  got:      exit %d%s%s, %zu bytes on stdout, stderr (%zu bytes): %s\n",
                    what, expected, r->status, r->signal ? ", signal " : "", r->signal ? strsignal(r->signal) : "",
                    r->out_len, r->err_len, r->err);
    }
    return ok ? 0 : -1;
}

/* ----------------------------------------------------------- the corpus */

typedef struct {
    char name[128];
    char expected[2048]; /* a substring of the stderr line: the whole of hf_unknown_model_type's list */
    char args[256];
} bad_case;

static bad_case *cases;
static int ncases;

static void split_args(char *s, const char **argv, int max)
{
    int n = 0;
    for (char *tok = strtok(s, " "); tok && n < max - 1; tok = strtok(NULL, " ")) argv[n++] = tok;
    argv[n] = NULL;
}

static void test_bad_file(void **state)
{
    const bad_case *c = *state;
    char path[512], argbuf[256];
    snprintf(path, sizeof path, "%s/%s.json", VC_BAD_DIR, c->name);
    snprintf(argbuf, sizeof argbuf, "%s", c->args);
    const char *argv[40];
    argv[0] = path;
    split_args(argbuf, argv + 1, 39);
    run_result r;
    run_cli(argv, NULL, &r);
    assert_int_equal(check_usage_error(c->name, &r, c->expected), 0);
}

static int load_expected(void)
{
    char path[512], line[4096]; /* the hf_unknown_model_type line lists every supported model_type (over 1,000 characters) */
    snprintf(path, sizeof path, "%s/expected.txt", VC_BAD_DIR);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char *tab = strchr(line, '\t');
        if (!tab) {
            fprintf(stderr, "expected.txt: no TAB in '%s'\n", line);
            fclose(f);
            return -1;
        }
        *tab = '\0';
        char *args = strchr(tab + 1, '\t');
        if (args) *args++ = '\0';
        if (ncases == cap) {
            cap = cap ? cap * 2 : 64;
            cases = realloc(cases, (size_t)cap * sizeof *cases);
            if (!cases) abort();
        }
        bad_case *c = &cases[ncases++];
        snprintf(c->name, sizeof c->name, "%s", line);
        snprintf(c->expected, sizeof c->expected, "%s", tab + 1);
        snprintf(c->args, sizeof c->args, "%s", args ? args : "");
    }
    fclose(f);
    return 0;
}

/* Every .json file in tests/bad has an expectation and every expectation a file. */
static void test_corpus_complete(void **state)
{
    (void)state;
    assert_true(ncases >= MIN_BAD_FILES);
    for (int i = 0; i < ncases; i++) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s.json", VC_BAD_DIR, cases[i].name);
        if (stat(path, &st)) fail_msg("expected.txt names %s, which does not exist", path);
        for (int j = 0; j < i; j++)
            if (!strcmp(cases[i].name, cases[j].name)) fail_msg("expected.txt names %s twice", cases[i].name);
    }
    char cmd[600], line[512];
    snprintf(cmd, sizeof cmd, "ls '%s'", VC_BAD_DIR);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        size_t len = strlen(line);
        if (len < 6 || strcmp(line + len - 5, ".json")) continue;
        line[len - 5] = '\0';
        bool found = false;
        for (int i = 0; i < ncases && !found; i++) found = !strcmp(cases[i].name, line);
        if (!found) fail_msg("tests/bad/%s.json has no line in expected.txt", line);
    }
    pclose(p);
}

static int run_corpus(void)
{
    if (load_expected()) return 1;
    struct CMUnitTest *t = calloc((size_t)ncases + 1, sizeof *t);
    if (!t) return 1;
    t[0] = (struct CMUnitTest)cmocka_unit_test(test_corpus_complete);
    for (int i = 0; i < ncases; i++) {
        t[i + 1] = (struct CMUnitTest)cmocka_unit_test_prestate(test_bad_file, &cases[i]);
        t[i + 1].name = cases[i].name;
    }
    int rc = _cmocka_run_group_tests("bad model files", t, (size_t)ncases + 1, NULL, NULL);
    free(t);
    return rc;
}

/* -------------------------------------------------------- the command line */

static char model_path[300];  /* a small valid model: Linear 4 -> 2 */
static char broken_path[300]; /* broken JSON, for stdin */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

typedef struct {
    const char *args[8]; /* "@" stands for the valid model */
    const char *expected;
} cli_case;

static const cli_case cli_cases[] = {
    {{"@", "--batch", "0"}, "--batch: expected a positive integer, got '0'"},
    {{"@", "--batch", "-1"}, "--batch: expected a positive integer, got '-1'"},
    {{"@", "--batch", "1e99"}, "--batch: expected a positive integer, got '1e99'"},
    {{"@", "--batch", "1.5"}, "--batch: expected a positive integer, got '1.5'"},
    {{"@", "--batch", "abc"}, "--batch: expected a positive integer, got 'abc'"},
    {{"@", "--batch", ""}, "--batch: expected a positive integer, got ''"},
    {{"@", "-b", "99999999999999999999"}, "--batch: 99999999999999999999 is too large"},
    {{"@", "--batch", "4611686018427387904"}, "2^63"},
    {{"@", "--accumulate", "0"}, "--accumulate: expected a positive integer, got '0'"},
    {{"@", "--optim", "adamm"}, "--optim: unknown value 'adamm'"},
    {{"@", "-o", "Adam"}, "--optim: unknown value 'Adam'"},
    {{"@", "--optim-impl", "fast"}, "--optim-impl: unknown value 'fast'"},
    {{"@", "--precision", "fp64"}, "--precision: unknown value 'fp64'"},
    {{"@", "--mode", "eval"}, "--mode: unknown value 'eval'"},
    {{"@", "--attention", "fast"}, "--attention: unknown value 'fast'"},
    {{"@", "--format", "xml"}, "--format: unknown value 'xml'"},
    {{"@", "--workspace", "-5"}, "--workspace: expected a size such as 24GiB"},
    {{"@", "--workspace", "12XB"}, "--workspace: unknown unit in '12XB'"},
    {{"@", "--context", "1e400"}, "'1e400'"},
    {{"@", "--context", "99999999999TiB"}, "--context:"},
    {{"@", "--input", "0,4"}, "--input: expected positive dimensions, got '0,4'"},
    {{"@", "--input", "abc"}, "--input: expected dimensions such as 3,224,224, got 'abc'"},
    {{"@", "--input", "1,2,3,4,5,6,7,8,9"}, "--input: more than 8 dimensions"},
    {{"@", "--input", "2199023255552"}, "--input: dimension 1 is 2199023255552: expected 1 to 2^40"},
    {{"@", "--input", "8"}, "layers[0].in_features: in_features is 4 but the input has 8 features"},
    {{"@", "--frobnicate"}, "unknown option '--frobnicate'"},
    {{"@", "-z"}, "unknown option '-z'"},
    {{"@", "--batch"}, "--batch needs a value"},
    {{"@", "@"}, "unexpected argument"},
    {{"@", "--activations", "5"}, "--activations goes with --params"},
    {{"--params", "-5"}, "--params: expected a non-negative integer, got '-5'"},
    {{"--params", "9223372036854775807"}, "overflows 64-bit arithmetic"},
    {{"--params", "1000", "--activations", "9223372036854775807", "--batch", "4"}, "overflows 64-bit arithmetic"},
    {{"--batch", "2"}, "no model file"},
    {{"/nonexistent/model.json"}, "/nonexistent/model.json: cannot open: No such file or directory"},
    /* what a path names, checked before it is opened (src/util/util.c vc_read_file) */
    {{"/"}, "/: a directory without a config.json: give a model directory (a Hugging Face checkpoint's, with its config.json) or a model file"},
    {{"/dev/null"}, "/dev/null: a character device, not a model file (to read standard input, give '-')"},
    {{""}, "vramcalc: the model file's name is empty"},
};

static void test_cli_case(void **state)
{
    const cli_case *c = *state;
    const char *argv[10];
    char what[300] = "vramcalc";
    int n = 0;
    for (int i = 0; c->args[i]; i++) {
        argv[n++] = strcmp(c->args[i], "@") ? c->args[i] : model_path;
        size_t used = strlen(what);
        snprintf(what + used, sizeof what - used, " %s", c->args[i]);
    }
    argv[n] = NULL;
    run_result r;
    run_cli(argv, NULL, &r);
    assert_int_equal(check_usage_error(what, &r, c->expected), 0);
}

static void test_cli_stdin(void **state)
{
    (void)state;
    const char *argv[] = {"-", NULL};
    run_result r;
    run_cli(argv, broken_path, &r);
    assert_int_equal(check_usage_error("vramcalc - < broken", &r, "-:3:1: invalid JSON: unexpected end of the file"), 0);
}

/* Standard input redirected from a directory: refused like a directory path. */
static void test_cli_stdin_directory(void **state)
{
    (void)state;
    const char *argv[] = {"-", NULL};
    run_result r;
    run_cli(argv, "/", &r);
    assert_int_equal(check_usage_error("vramcalc - < /", &r, "-: standard input is a directory, not a model file"), 0);
}

/* A FIFO no program writes: open(2) without O_NONBLOCK would wait for a
 * writer for ever (fifo(7)); it is opened without blocking and refused
 * with one line at once (run_cli's alarm fails a hang). */
static void test_cli_fifo_no_writer(void **state)
{
    (void)state;
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/nowriter.fifo", tmpdir);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *argv[] = {fifo, NULL};
    run_result r;
    run_cli(argv, NULL, &r);
    assert_int_equal(check_usage_error("vramcalc FIFO (no writer)", &r, "nowriter.fifo: a FIFO with nothing to read: no program wrote to it within 3 seconds"), 0);
    unlink(fifo);
}

/* A FIFO with a writer still reads as cat and jq read it: the writer blocks
 * in open until the reader comes, then writes slowly (in two parts with a
 * pause); the estimate is the regular file's, byte for byte. */
static void test_cli_fifo_with_writer(void **state)
{
    (void)state;
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/writer.fifo", tmpdir);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *argv_file[] = {model_path, NULL};
    run_result want;
    run_cli(argv_file, NULL, &want);
    assert_int_equal(want.status, 0);
    fflush(NULL);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        alarm(60);
        int fd = open(fifo, O_WRONLY); /* blocks until the CLI opens the FIFO */
        FILE *src = fopen(model_path, "rb");
        if (fd < 0 || !src) _exit(1);
        char buf[4096];
        size_t n = fread(buf, 1, sizeof buf, src);
        size_t half = n / 2;
        if (write(fd, buf, half) != (ssize_t)half) _exit(1);
        usleep(200000); /* the reader waits for the rest */
        if (write(fd, buf + half, n - half) != (ssize_t)(n - half)) _exit(1);
        _exit(0);
    }
    const char *argv[] = {fifo, NULL};
    run_result r;
    run_cli(argv, NULL, &r);
    int st;
    while (waitpid(w, &st, 0) < 0 && errno == EINTR) {}
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.err_len, 0);
    /* the report names the file it read: compare from its second line on */
    const char *a = strchr(r.out, '\n'), *b = strchr(want.out, '\n');
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    unlink(fifo);
}

/* --gpu is another issue's; test its unknown-preset error once it exists. */
static void test_cli_unknown_gpu(void **state)
{
    (void)state;
    const char *list[] = {"--list-gpus", NULL};
    run_result r;
    run_cli(list, NULL, &r);
    if (r.status != 0 || !r.out_len) skip();
    /* a preset name: the first word of a table row (after the header line) of 6+ characters */
    char name[64] = "";
    const char *p = strchr(r.out, '\n');
    for (; p && *p; p = strchr(p, '\n')) {
        p++;
        size_t n = strcspn(p, " \t\n");
        if (*p >= 'a' && *p <= 'z' && n >= 6 && n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            break;
        }
    }
    if (!name[0]) skip();
    char typo[64];
    snprintf(typo, sizeof typo, "%.*sx", (int)strlen(name) - 1, name); /* "h100-80gb" -> "h100-80gx" */
    const char *argv[] = {model_path, "--gpu", typo, NULL};
    run_cli(argv, NULL, &r);
    char expected[128];
    snprintf(expected, sizeof expected, "%s", name);
    assert_int_equal(check_usage_error("vramcalc --gpu <misspelt preset>", &r, expected), 0);
    assert_non_null(strstr(r.err, "did you mean"));
}

static int cli_setup(void **state)
{
    (void)state;
    snprintf(model_path, sizeof model_path, "%s/tiny.json", tmpdir);
    snprintf(broken_path, sizeof broken_path, "%s/broken.json", tmpdir);
    write_file(model_path, "{\"input\": [4], \"layers\": [{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 2}]}\n");
    write_file(broken_path, "{\n  \"input\": [4],\n");
    return 0;
}

static int run_cli_tests(void)
{
    size_t n = sizeof cli_cases / sizeof *cli_cases;
    struct CMUnitTest *t = calloc(n + 5, sizeof *t);
    char (*names)[300] = calloc(n, sizeof *names);
    if (!t || !names) return 1;
    for (size_t i = 0; i < n; i++) {
        t[i] = (struct CMUnitTest)cmocka_unit_test_prestate(test_cli_case, (void *)&cli_cases[i]);
        int used = snprintf(names[i], sizeof names[i], "cli");
        for (int j = 0; cli_cases[i].args[j]; j++)
            used += snprintf(names[i] + used, sizeof names[i] - (size_t)used, " %s", cli_cases[i].args[j]);
        t[i].name = names[i];
    }
    t[n] = (struct CMUnitTest)cmocka_unit_test(test_cli_stdin);
    t[n + 1] = (struct CMUnitTest)cmocka_unit_test(test_cli_unknown_gpu);
    t[n + 2] = (struct CMUnitTest)cmocka_unit_test(test_cli_stdin_directory);
    t[n + 3] = (struct CMUnitTest)cmocka_unit_test(test_cli_fifo_no_writer);
    t[n + 4] = (struct CMUnitTest)cmocka_unit_test(test_cli_fifo_with_writer);
    int rc = _cmocka_run_group_tests("command line", t, n + 5, cli_setup, NULL);
    free(t);
    free(names);
    return rc;
}

/* ------------------------------------------------------------ the library */

static vc_status load(const char *text, vc_error *err)
{
    vc_model *m = NULL;
    vc_status st = vc_model_load_string(text, strlen(text), "m.json", &m, err);
    vc_model_free(m);
    return st;
}

static void expect_error(const char *text, vc_status code, int line, int col, const char *path, const char *msg)
{
    vc_error err;
    vc_status st = load(text, &err);
    if (st != code || err.code != code || err.line != line || err.col != col || strcmp(err.path, path) ||
        !strstr(err.msg, msg)) {
        char buf[1400];
        vc_error_format(&err, buf, sizeof buf);
        fail_msg("for %s\n  expected %d at %d:%d %s: ...%s...\n  got      %d: %s", text, code, line, col, path, msg, st, buf);
    }
}

static void test_positions(void **state)
{
    (void)state;
    /* an escaped key still locates (in\u005ffeatures is in_features) */
    expect_error("{\"input\": [4], \"layers\": [{\"type\": \"Linear\", \"in\\u005ffeatures\": 4, \"out_features\": -1}]}",
                 VC_ERR_MODEL, 1, 85, "layers[0].out_features", "expected a positive integer, got -1");
    /* input names with dots: the path inputs.a.b[0] finds "a.b", whichever comes first */
    expect_error("{\"inputs\": {\"a\": [4], \"a.b\": [0]}, \"layers\": [{\"type\": \"ReLU\"}]}", VC_ERR_MODEL, 1, 31,
                 "inputs.a.b[0]", "got 0");
    expect_error("{\"inputs\": {\"a.b\": [0], \"a\": [4]}, \"layers\": [{\"type\": \"ReLU\"}]}", VC_ERR_MODEL, 1, 21,
                 "inputs.a.b[0]", "got 0");
    /* multi-line: CRLF line ends, tabs count as one column */
    expect_error("{\r\n\t\"input\": [4],\r\n\t\"layers\": [{\"type\": \"ReLU\", \"inplace\": 3}]\r\n}", VC_ERR_MODEL, 3, 41,
                 "layers[0].inplace", "expected true or false, got 3");
    /* a missing key points at its object */
    expect_error("{\"input\": [4],\n \"layers\": [\n  {\"type\": \"Linear\", \"in_features\": 4}]}", VC_ERR_MODEL, 3, 3,
                 "layers[0].out_features", "missing");
    /* a duplicate key points at its second occurrence */
    expect_error("{\"input\": [4], \"layers\": [{\"type\": \"ReLU\", \"inplace\": true, \"inplace\": false}]}", VC_ERR_MODEL,
                 1, 61, "layers[0].inplace", "duplicate key");
    /* a repeat copy's error points at the layer in the file */
    expect_error("{\"input\": [4], \"layers\": [{\"type\": \"Sequential\", \"repeat\": 3, \"layers\": [{\"type\": \"Linear\", "
                 "\"in_features\": 4, \"out_features\": 5}]}]}",
                 VC_ERR_MODEL, 1, 60, "layers[0].repeat", "[4] becomes [5]");
    /* syntax errors */
    expect_error("{\"input\": [4], \"layers\": [{\"type\": \"ReLU\"}]", VC_ERR_PARSE, 1, 44, "", "unexpected end of the file");
    expect_error("\n\n   {\"input\" [4]}", VC_ERR_PARSE, 3, 13, "", "expected ':' after the key");
}

static void test_one_line(void **state)
{
    (void)state;
    /* control characters from the file (escaped in JSON) never reach the message raw */
    vc_error err;
    assert_int_equal(load("{\"input\": [4], \"layers\": [{\"type\": \"ReLU\", \"name\": \"a\\nb\"}, "
                          "{\"type\": \"ReLU\", \"name\": \"a\\nb\"}]}",
                          &err),
                     VC_ERR_MODEL);
    char buf[1400];
    vc_error_format(&err, buf, sizeof buf);
    assert_null(strchr(buf, '\n'));
    assert_non_null(strstr(buf, "duplicate name \"a\\nb\""));
    assert_int_equal(load("{\"input\": [4], \"layers\": [{\"type\": \"Re\\tLU\\u001b[31m\"}]}", &err), VC_ERR_MODEL);
    vc_error_format(&err, buf, sizeof buf);
    assert_non_null(strstr(buf, "unknown layer kind \"Re\\tLU\\x1b[31m\""));
    /* a key with a control character: path escaped, still located */
    assert_int_equal(load("{\"input\": [4], \"layers\": [{\"type\": \"ReLU\", \"in\\nplace\": true}]}", &err), VC_ERR_MODEL);
    assert_string_equal(err.path, "layers[0].in\\nplace");
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 44);
    /* a raw file name with a newline */
    vc_error e2;
    memset(&e2, 0, sizeof e2);
    e2.code = VC_ERR_IO;
    snprintf(e2.file, sizeof e2.file, "evil\nname.json");
    snprintf(e2.msg, sizeof e2.msg, "cannot open");
    vc_error_format(&e2, buf, sizeof buf);
    assert_string_equal(buf, "evil\\nname.json: cannot open");
}

static void test_format(void **state)
{
    (void)state;
    vc_error e;
    memset(&e, 0, sizeof e);
    char buf[1400];
    e.code = VC_ERR_MODEL;
    snprintf(e.file, sizeof e.file, "model.json");
    e.line = 12;
    e.col = 5;
    snprintf(e.path, sizeof e.path, "layers[3].kernel_size");
    snprintf(e.msg, sizeof e.msg, "expected a positive integer, got -1");
    vc_error_format(&e, buf, sizeof buf);
    assert_string_equal(buf, "model.json:12:5: layers[3].kernel_size: expected a positive integer, got -1");
    e.line = 0;
    e.path[0] = '\0';
    vc_error_format(&e, buf, sizeof buf);
    assert_string_equal(buf, "model.json: expected a positive integer, got -1");
    e.file[0] = '\0';
    e.msg[0] = '\0';
    vc_error_format(&e, buf, sizeof buf);
    assert_string_equal(buf, vc_strerror(VC_ERR_MODEL));
    char small[8];
    snprintf(e.msg, sizeof e.msg, "a long message");
    vc_error_format(&e, small, sizeof small);
    assert_string_equal(small, "a long ");
}

/* vc_cat3 and vc_cat_index build layer paths while loading; they must agree
 * with snprintf("%s%s%s") and snprintf("%s%s[%lld]"), truncation included
 * (the expected strings are snprintf's output). */
static void test_path_concat(void **state)
{
    (void)state;
    char buf[300], ref[300], small[10];
    vc_cat3(buf, sizeof buf, "layers[3]", ".", "kernel_size");
    assert_string_equal(buf, "layers[3].kernel_size");
    vc_cat3(buf, sizeof buf, "", "", "");
    assert_string_equal(buf, "");
    vc_cat_index(buf, sizeof buf, "layers[2]", ".layers", 17);
    assert_string_equal(buf, "layers[2].layers[17]");
    vc_cat_index(buf, sizeof buf, "x", "", 0);
    assert_string_equal(buf, "x[0]");
    vc_cat_index(buf, sizeof buf, "", "layers", -12);
    assert_string_equal(buf, "layers[-12]");
    vc_cat_index(buf, sizeof buf, "r", "", INT64_MAX);
    snprintf(ref, sizeof ref, "r[%lld]", (long long)INT64_MAX);
    assert_string_equal(buf, ref);
    vc_cat_index(buf, sizeof buf, "r", "", INT64_MIN);
    snprintf(ref, sizeof ref, "r[%lld]", (long long)INT64_MIN);
    assert_string_equal(buf, ref);
    /* truncation: n - 1 bytes and a terminating NUL, as snprintf */
    vc_cat3(small, sizeof small, "abcdef", "ghij", "kl");
    assert_string_equal(small, "abcdefghi");
    vc_cat_index(small, sizeof small, "layers", "", 12345);
    assert_string_equal(small, "layers[12");
    vc_cat_index(small, 1, "layers", "", 1);
    assert_string_equal(small, "");
}

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(vc_edit_distance("bais", "bias"), 1);
    assert_int_equal(vc_edit_distance("", "abc"), 3);
    assert_int_equal(vc_edit_distance("kernal_size", "kernel_size"), 1);
    assert_int_equal(vc_edit_distance("in_feature", "in_features"), 1);
    assert_int_equal(vc_edit_distance("Conv2D", "Conv2d"), 1);
    char longs[100];
    memset(longs, 'a', 99);
    longs[99] = '\0';
    assert_int_equal(vc_edit_distance(longs, "a"), 99);
    char esc[16];
    vc_escape(esc, sizeof esc, "a\tb\x01\x7f");
    assert_string_equal(esc, "a\\tb\\x01\\x7f");
    vc_escape(esc, 5, "\n\n\n");
    assert_string_equal(esc, "\\n\\n");
}

static void test_limits(void **state)
{
    (void)state;
    vc_error err;
    vc_model *m = NULL;
    /* file size: an over-long text is refused before it is read */
    size_t big = (size_t)VC_MAX_FILE_BYTES + 1;
    char *text = malloc(big);
    assert_non_null(text);
    memset(text, ' ', big);
    assert_int_equal(vc_model_load_string(text, big, "big.json", &m, &err), VC_ERR_LIMIT);
    free(text);
    assert_null(m);
    assert_non_null(strstr(err.msg, "64 MiB"));
    /* an endless file (a FIFO whose writer never stops; /dev/zero, a
     * character device, is refused before it is read) is read only up to
     * the limit */
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/endless.fifo", tmpdir);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    fflush(NULL);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        alarm(60);
        signal(SIGPIPE, SIG_DFL);
        int fd = open(fifo, O_WRONLY);
        static char zeros[65536];
        while (fd >= 0 && write(fd, zeros, sizeof zeros) > 0) {}
        _exit(0); /* the reader closed it: EPIPE or SIGPIPE */
    }
    assert_int_equal(vc_model_load_file(fifo, &m, &err), VC_ERR_LIMIT);
    assert_null(m);
    kill(w, SIGTERM); /* if the reader's close has not ended it yet */
    int wst;
    while (waitpid(w, &wst, 0) < 0 && errno == EINTR) {}
    unlink(fifo);
    /* nesting, layers, dims, dim size: see tests/bad; here the depth limit exactly */
    char seq[8192] = "{\"type\": \"ReLU\"}";
    for (int i = 0; i < VC_MAX_DEPTH; i++) {
        char tmp[8192];
        snprintf(tmp, sizeof tmp, "{\"type\": \"Sequential\", \"layers\": [%s]}", seq);
        memcpy(seq, tmp, sizeof seq);
    }
    char model[9000];
    snprintf(model, sizeof model, "{\"input\": [4], \"layers\": [%s]}", seq);
    assert_int_equal(vc_model_load_string(model, strlen(model), "deep.json", &m, &err), VC_OK); /* 64: allowed */
    vc_model_free(m);
    /* a NULL error pointer is allowed */
    assert_int_equal(vc_model_load_string("[", 1, "x", &m, NULL), VC_ERR_PARSE);
}

/* A UTF-16 or UTF-32 text is named as such (by its byte-order mark, or the
 * NUL bytes around JSON's first ASCII characters, RFC 4627 section 3), not
 * reported as "got the byte 0xff"; a UTF-8 text with a NUL byte is not. */
static void test_wide_encodings(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t len;
        const char *msg; /* NULL: not a wide encoding */
    } c[] = {
        {"\xff\xfe{\0}\0", 6, "the file is UTF-16 (little-endian); save it as UTF-8"},
        {"\xfe\xff\0{\0}", 6, "the file is UTF-16 (big-endian); save it as UTF-8"},
        {"{\0 \0}\0", 6, "the file is UTF-16 (little-endian); save it as UTF-8"},
        {"\0{\0 \0}", 6, "the file is UTF-16 (big-endian); save it as UTF-8"},
        {"\xff\xfe\0\0{\0\0\0", 8, "the file is UTF-32 (little-endian); save it as UTF-8"},
        {"\0\0\xfe\xff\0\0\0{", 8, "the file is UTF-32 (big-endian); save it as UTF-8"},
        {"{\0\0\0}\0\0\0", 8, "the file is UTF-32 (little-endian); save it as UTF-8"},
        {"\0\0\0{\0\0\0}", 8, "the file is UTF-32 (big-endian); save it as UTF-8"},
        {"\xff\xfe", 2, "the file is UTF-16 (little-endian); save it as UTF-8"}, /* the BOM alone */
        {"{\0", 2, NULL},                                                       /* too short to tell */
        {"{\"a\0", 4, NULL},                                                     /* UTF-8 with a NUL */
        {"\x10\0\0\0\0\0\0\0{}", 10, NULL}, /* a binary header (a little-endian length) is not UTF-32 */
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        vc_model *m = NULL;
        vc_error err;
        vc_status st = vc_model_load_string(c[i].text, c[i].len, "m.json", &m, &err);
        assert_int_equal(st, VC_ERR_PARSE);
        assert_null(m);
        if (c[i].msg) {
            assert_string_equal(err.msg, c[i].msg);
            assert_int_equal(err.line, 0); /* the whole file: no position */
        } else {
            assert_null(strstr(err.msg, "UTF-"));
            assert_true(err.line > 0);
        }
    }
}

/* The loader's tables (src/model/load.h GROWV: instances, values, parameters,
 * buffers, a scope's names, the held block inputs) double at 16, 32, 64,
 * 128 entries: a pointer kept into one across its growth dangles (issue 29:
 * item_tie's). Models that cross each doubling at every step, by a layer
 * that ties, names its input, or repeats a block; the counts are by hand.
 * Run under ASan by tests/run_sanitizers.sh. */
static void test_growth_boundaries(void **state)
{
    (void)state;
    static const int ns[] = {14, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
    static char text[65536];
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int n = ns[k];
        /* Embedding(50, 8) named emb, n - 1 named Linear(8, 8) each reading the
         * one before by name, then a Linear(8, 50, bias=False) tied to emb:
         * 400 + 72 (n - 1) parameters, the tied weight counted once */
        int at = snprintf(text, sizeof text, "{\"input\": {\"shape\": [4], \"dtype\": \"int64\"}, \"layers\": ["
                          "{\"type\": \"Embedding\", \"num_embeddings\": 50, \"embedding_dim\": 8, \"name\": \"l0\"}");
        for (int i = 1; i < n; i++)
            at += snprintf(text + at, sizeof text - (size_t)at,
                           ", {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8, \"name\": \"l%d\", \"inputs\": \"l%d\"}",
                           i, i - 1);
        snprintf(text + at, sizeof text - (size_t)at,
                 ", {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 50, \"bias\": false, \"tie\": \"l0\"}]}");
        vc_model *m = NULL;
        vc_error err;
        assert_int_equal(vc_model_load_string(text, strlen(text), "grow.json", &m, &err), VC_OK);
        assert_int_equal(vc_model_parameters(m), 400 + 72 * (n - 1));
        vc_model_free(m);
        /* the same with a repeated block (each copy holds its input: the held
         * block-input table grows) and a tie after it: 400 + 72 n */
        snprintf(text, sizeof text, "{\"input\": {\"shape\": [4], \"dtype\": \"int64\"}, \"layers\": ["
                 "{\"type\": \"Embedding\", \"num_embeddings\": 50, \"embedding_dim\": 8, \"name\": \"emb\"}, "
                 "{\"type\": \"Sequential\", \"repeat\": %d, \"layers\": [{\"type\": \"Linear\", \"in_features\": 8, "
                 "\"out_features\": 8}, {\"type\": \"ReLU\"}]}, "
                 "{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 50, \"bias\": false, \"tie\": \"emb\"}]}", n);
        assert_int_equal(vc_model_load_string(text, strlen(text), "grow.json", &m, &err), VC_OK);
        assert_int_equal(vc_model_parameters(m), 400 + 72 * n);
        vc_options o;
        vc_options_init(&o);
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
        assert_int_equal(r.parameters, 400 + 72 * n);
        vc_result_free(&r);
        vc_model_free(m);
        /* n BatchNorm1d(8): 16 parameters and 3 buffers each (the buffer table) */
        snprintf(text, sizeof text, "{\"input\": [8, 4], \"layers\": [{\"type\": \"BatchNorm1d\", \"num_features\": 8, "
                 "\"repeat\": %d}]}", n);
        assert_int_equal(vc_model_load_string(text, strlen(text), "grow.json", &m, &err), VC_OK);
        assert_int_equal(vc_model_parameters(m), 16 * n);
        vc_model_free(m);
    }
}

/* vc_model_load_file on what is not a file: refused, at once, as VC_ERR_IO. */
static void test_file_kinds(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_file(tmpdir, &m, &err), VC_ERR_IO);
    assert_non_null(strstr(err.msg, "a directory without a config.json")); /* src/model/resolve.c: a directory is a model directory */
    assert_string_equal(err.file, tmpdir);
    assert_int_equal(vc_model_load_file("/dev/zero", &m, &err), VC_ERR_IO);
    assert_non_null(strstr(err.msg, "a character device"));
    /* a Unix socket (open(2) would fail with ENXIO) and a symbolic-link loop */
    char sock[300], loop[300];
    snprintf(sock, sizeof sock, "%s/api.sock", tmpdir);
    snprintf(loop, sizeof loop, "%s/loop.json", tmpdir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock) < sizeof sa.sun_path) { /* a long $TMPDIR: no socket there */
        int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
        assert_true(sfd >= 0 && bind(sfd, (struct sockaddr *)&sa, sizeof sa) == 0);
        assert_int_equal(vc_model_load_file(sock, &m, &err), VC_ERR_IO);
        assert_string_equal(err.msg, "a socket, not a model file");
        close(sfd);
        unlink(sock);
    }
    assert_int_equal(symlink(loop, loop), 0);
    assert_int_equal(vc_model_load_file(loop, &m, &err), VC_ERR_IO);
    assert_string_equal(err.msg, "cannot open: Too many levels of symbolic links");
    unlink(loop);
    assert_int_equal(vc_model_load_file("", &m, &err), VC_ERR_IO);
    assert_string_equal(err.msg, "the model file's name is empty");
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/api.fifo", tmpdir);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(60); /* a blocking open would hang here */
    assert_int_equal(vc_model_load_file(fifo, &m, &err), VC_ERR_IO);
    alarm(0);
    assert_non_null(strstr(err.msg, "a FIFO with nothing to read"));
    assert_null(m);
    unlink(fifo);
}

static void test_input_override_recovers(void **state)
{
    (void)state;
    const char *text = "{\"input\": [4], \"layers\": [{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 2}]}";
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_string(text, strlen(text), "m.json", &m, &err), VC_OK);
    int64_t dims[1] = {8};
    assert_int_equal(vc_model_set_input_shape(m, dims, 1, &err), VC_ERR_MODEL);
    assert_int_equal(err.line, 1);
    assert_string_equal(err.path, "layers[0].in_features");
    /* the model still works, with the file's own input shape */
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.parameters, 10);
    vc_result_free(&r);
    vc_model_free(m);
}

static int run_api_tests(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_positions), cmocka_unit_test(test_one_line),
        cmocka_unit_test(test_format),    cmocka_unit_test(test_edit_distance), cmocka_unit_test(test_path_concat),
        cmocka_unit_test(test_limits),    cmocka_unit_test(test_input_override_recovers),
        cmocka_unit_test(test_wide_encodings), cmocka_unit_test(test_file_kinds),
        cmocka_unit_test(test_growth_boundaries),
    };
    return cmocka_run_group_tests_name("library", t, NULL, NULL);
}

int main(int argc, char **argv)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/vc_errors.XXXXXX", base);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    const char *which = argc > 1 ? argv[1] : "all";
    int rc = 0;
    if (!strcmp(which, "corpus") || !strcmp(which, "all")) rc |= run_corpus();
    if (!strcmp(which, "cli") || !strcmp(which, "all")) rc |= run_cli_tests();
    if (!strcmp(which, "api") || !strcmp(which, "all")) rc |= run_api_tests();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) rc |= 0;
    free(cases);
    return rc ? 1 : 0;
}
