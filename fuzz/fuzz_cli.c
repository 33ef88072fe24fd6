/*
 * fuzz_cli.c — libFuzzer harness over the command line itself (issue 16):
 * an input is an argument vector (arguments separated by NUL bytes: option
 * names, their values, model files) run through vc_cli_main, in process,
 * with stdout and stderr captured in memory streams.
 *
 * Build: cmake -DCMAKE_C_COMPILER=clang -DVRAMCALC_FUZZ=ON; fuzz/run.sh cli
 * runs it. Besides ASan/UBSan/LeakSanitizer findings the harness aborts when
 * a run breaks the front end's contract (src/cli/cli.h, README "Exit status"):
 *   - the exit status is 0, 1 or 2;
 *   - exit 2 leaves exactly one line on stderr, "vramcalc: ..."; 0 and 1
 *     leave stderr empty;
 *   - neither stream carries a raw control byte (anything below 0x20 but a
 *     newline or tab, DEL, C1) or invalid UTF-8;
 *   - an output that starts with '{' is one valid JSON document;
 *   - a failed write (stdout on /dev/full, chosen by the first byte) is
 *     exit 2 with its one line;
 *   - a file the run wrote (--plot's SVG) is clean text too.
 *
 * Each run happens in a private working directory holding the model files
 * the arguments may name (m.json, t.json, c.json, hf.json, bad.json, d.json,
 * g.json, e.json, x.json; '-' reads m.json on standard input). An argument
 * with a '/' is skipped (not run): --plot may only write inside that
 * directory, which is restored after every run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../src/cli/cli.h"

#define MAX_ARGS 24
#define MAX_ARG_LEN 512

typedef struct {
    const char *name, *text;
} model_file;

/* Small models of the kinds the CLI treats differently: a plain MLP whose
 * names carry control bytes and invalid UTF-8 (escaping in every format), an
 * attention model (batch-dependent plans), a convolution net, a Hugging Face
 * config.json (--seq, --lora, --grad-ckpt, --emit-model) and a bad file. */
static const model_file files[] = {
    {"m.json", "{\"name\": \"mlp\\u001b]0;x\\u0007\\u001b[2J\xff\", \"input\": [64], \"layers\": [\n"
               "  {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 256, \"name\": \"q_proj\\u009b\\r\"},\n"
               "  {\"type\": \"ReLU\"},\n"
               "  {\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 10, \"name\": \"v_proj\"}]}\n"},
    {"t.json", "{\"name\": \"enc\", \"input\": [16, 32], \"layers\": [\n"
               "  {\"type\": \"TransformerEncoderLayer\", \"d_model\": 32, \"nhead\": 4, \"dim_feedforward\": 64,"
               " \"batch_first\": true, \"repeat\": 2}]}\n"},
    {"c.json", "{\"name\": \"conv\", \"input\": [3, 16, 16], \"layers\": [\n"
               "  {\"type\": \"Conv2d\", \"in_channels\": 3, \"out_channels\": 8, \"kernel_size\": 3, \"padding\": 1},\n"
               "  {\"type\": \"BatchNorm2d\", \"num_features\": 8}, {\"type\": \"ReLU\", \"inplace\": true},\n"
               "  {\"type\": \"AdaptiveAvgPool2d\", \"output_size\": 1}, {\"type\": \"Flatten\"},\n"
               "  {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 10}]}\n"},
    {"hf.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_act\": \"silu\",\n"
                " \"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4,\n"
                " \"num_hidden_layers\": 2, \"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-05,\n"
                " \"max_position_embeddings\": 256, \"tie_word_embeddings\": false, \"vocab_size\": 1000}\n"},
    {"bad.json", "{\"name\": \"bad\", \"input\": [4], \"layers\": [{\"type\": \"Linear\", \"in_features\": 5}]}\n"},
    /* layer names longer than a --per-layer column: cut with an ellipsis */
    {"d.json", "{\"name\": \"deep \u2026 \u4e2d\u6587\", \"input\": [16, 64], \"layers\": [{\"type\": \"Sequential\", \"layers\": "
               "[{\"type\": \"Sequential\", \"layers\": [{\"type\": \"Sequential\", \"layers\": [{\"type\": \"Sequential\", "
               "\"layers\": [{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}]}]}]}]}, "
               "{\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"batch_first\": true}]}\n"},
    /* issue 29: the six-key Gemma config (a tied embedding: the use-after-free
     * of item_tie), a hand-written model whose tied layer is instance 16 (where
     * the instance table first grows), a small Mixtral (MoE: --ep,
     * --moe-imbalance) */
    {"g.json", "{\"model_type\":\"gemma\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128,"
               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2}\n"},
    {"e.json", "{\"name\": \"tied at 16\", \"input\": {\"shape\": [4], \"dtype\": \"int64\"}, \"layers\": [\n"
               "  {\"type\": \"Embedding\", \"num_embeddings\": 100, \"embedding_dim\": 8, \"name\": \"emb\"},\n"
               "  {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8, \"repeat\": 15},\n"
               "  {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 100, \"bias\": false, \"tie\": \"emb\"}]}\n"},
    {"x.json", "{\"architectures\": [\"MixtralForCausalLM\"], \"model_type\": \"mixtral\", \"hidden_size\": 64,"
               " \"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"num_key_value_heads\": 2,"
               " \"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"vocab_size\": 1000, \"torch_dtype\": \"bfloat16\"}\n"},
};
#define NFILES (sizeof files / sizeof *files)

static char workdir[256];
static int home_fd = -1; /* libFuzzer's working directory: corpora and artifacts may be relative to it */

static void fail(const char *what, int rc, const char *out, const char *err)
{
    fprintf(stderr, "fuzz_cli: %s (exit %d)\n--- stdout (first 600 bytes) ---\n%.600s\n--- stderr ---\n%.600s\n", what,
            rc, out ? out : "", err ? err : "");
    abort();
}

static void write_files(void)
{
    for (size_t i = 0; i < NFILES; i++) {
        FILE *f = fopen(files[i].name, "w");
        if (!f || fputs(files[i].text, f) < 0 || fclose(f)) {
            perror(files[i].name);
            abort();
        }
    }
}

static const char *bad_text(const unsigned char *s, size_t n);

/* A file a run wrote (--plot's SVG) must be text as clean as the streams. */
static void check_written(const char *name)
{
    static unsigned char buf[1 << 20];
    FILE *f = fopen(name, "rb");
    if (!f) return; /* a directory */
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *why = bad_text(buf, n);
    if (why) {
        fprintf(stderr, "fuzz_cli: %s in the file '%s' the run wrote\n", why, name);
        abort();
    }
}

/* Back to the model files alone: whatever a run wrote (--plot) is checked and goes. */
static void restore_dir(void)
{
    DIR *d = opendir(".");
    if (!d) abort();
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        bool model = false;
        for (size_t i = 0; i < NFILES; i++) model |= !strcmp(e->d_name, files[i].name);
        if (model) continue;
        check_written(e->d_name);
        if (unlink(e->d_name)) rmdir(e->d_name);
    }
    closedir(d);
    write_files(); /* --plot m.json may have replaced one */
}

/* At exit the work directory goes. */
static void remove_dir(void)
{
    if (chdir(workdir)) return;
    for (size_t i = 0; i < NFILES; i++) unlink(files[i].name);
    if (fchdir(home_fd) == 0) rmdir(workdir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(workdir, sizeof workdir, "/tmp/vc_fuzz_cli.XXXXXX");
    if (!mkdtemp(workdir) || (home_fd = open(".", O_RDONLY | O_DIRECTORY)) < 0 || chdir(workdir)) {
        perror("fuzz_cli: work directory");
        abort();
    }
    write_files();
    if (fchdir(home_fd)) abort();
    atexit(remove_dir);
    setenv("NO_COLOR", "1", 1);
    return 0;
}

/* UTF-8 and no control byte but newline and tab. Returns NULL or what is wrong. */
static const char *bad_text(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c == '\n' || c == '\t') { /* --emit-model's JSON is indented with tabs */
            i++;
            continue;
        }
        if (c < 0x20 || c == 0x7f) return "a raw control byte";
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!len || i + len > n) return "invalid UTF-8";
        uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return "invalid UTF-8";
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return "invalid UTF-8";
        if (cp >= 0x80 && cp <= 0x9f) return "a raw C1 control character";
        i += len;
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return -1;
    bool full = data[0] & 1; /* stdout on /dev/full: every write fails */
    data++;
    size--;

    /* The arguments: NUL-separated; a '/' anywhere is not run (see above). */
    char *argv[MAX_ARGS + 2];
    char buf[MAX_ARGS][MAX_ARG_LEN];
    int argc = 0;
    argv[argc++] = "vramcalc";
    size_t i = size ? 0 : 1; /* no bytes: no arguments */
    while (i <= size && argc <= MAX_ARGS) {
        size_t j = i;
        while (j < size && data[j]) j++;
        if (j - i >= MAX_ARG_LEN) return -1;
        if (memchr(data + i, '/', j - i)) return -1;
        memcpy(buf[argc - 1], data + i, j - i);
        buf[argc - 1][j - i] = '\0';
        argv[argc] = buf[argc - 1];
        argc++;
        i = j + 1;
    }
    if (i <= size) return -1; /* more arguments than MAX_ARGS */
    argv[argc] = NULL;

    if (chdir(workdir)) abort();
    if (!freopen("m.json", "r", stdin)) abort(); /* '-' reads a model */
    char *out = NULL, *err = NULL;
    size_t out_len = 0, err_len = 0;
    FILE *fo = full ? fopen("/dev/full", "w") : open_memstream(&out, &out_len);
    FILE *fe = open_memstream(&err, &err_len);
    if (!fo || !fe) abort();
    int rc = vc_cli_main(argc, argv, fo, fe);
    fclose(fo);
    fclose(fe);

    if (rc < VC_EXIT_OK || rc > VC_EXIT_USAGE) fail("exit status outside 0, 1, 2", rc, out, err);
    if (rc == VC_EXIT_USAGE) {
        if (err_len < 11 || strncmp(err, "vramcalc: ", 10)) fail("exit 2 without a 'vramcalc: ' line", rc, out, err);
        if (memchr(err, '\n', err_len) != err + err_len - 1) fail("the error is not one line", rc, out, err);
    } else if (err_len) fail("stderr written on success", rc, out, err);
    if (full && rc != VC_EXIT_USAGE) fail("a failed write not reported", rc, out, err);
    const char *why = bad_text((const unsigned char *)err, err_len);
    if (why) fail(why, rc, out, err);
    if (out) {
        if ((why = bad_text((const unsigned char *)out, out_len))) fail(why, rc, out, err);
        if (out_len && out[0] == '{') {
            cJSON *j = cJSON_ParseWithLength(out, out_len);
            if (!j) fail("output starting with '{' is not JSON", rc, out, err);
            cJSON_Delete(j);
        }
    }
    free(out);
    free(err);
    restore_dir();
    if (fchdir(home_fd)) abort();
    return 0;
}
