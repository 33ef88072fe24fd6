/*
 * fuzz_hf.c — structured libFuzzer harness (issue 29): Hugging Face
 * config.json files with interesting values swapped into their keys, run
 * through the command line with combinations of options.
 *
 * An input is a small program of bytes, read in turn (0 once they run out):
 *   family   which config to start from: six small ones, or one of
 *            tests/data/hf/ (read at start-up, cut to 4 decoder layers);
 *   edits    0 to 7 of: a key (one of the config's own, at the top level or
 *            one level down, or one of the keys transformers reads that the
 *            config may lack) and what it becomes (0, 1, -1, 2^31, 2^40,
 *            2^53 + 1, 2^63, 1e308, 1e400, -0, 0.5, strings, a dtype name,
 *            null, true, false, {}, [], nested objects, a rope_scaling or a
 *            quantization_config, or no key at all);
 *   options  0 to 7 of the options (--mode generate, --serve, --parallel,
 *            --tp/--pp/--ep, --lora, --qlora, --weights, --loss, --prompt,
 *            --max-seq, --max-context, --max-batch, --sweep, ...), each with
 *            a value chosen from its interesting ones;
 *   format   table, json or csv.
 * The config is written as c.json in a private directory and
 * vc_cli_main("vramcalc c.json OPTIONS") runs in process (as fuzz_cli.c).
 *
 * Besides ASan/UBSan/LeakSanitizer findings, the harness checks:
 *   - the exit status is 0, 1 or 2; exit 2: nothing on stdout and one line
 *     "vramcalc: ..." on stderr; 0 and 1: nothing on stderr;
 *   - JSON output (-f json) is one JSON document with no negative number
 *     but a GPU's "free", and wherever an object has "gpu" {capacity, free}
 *     and "memory" {total}: free = capacity - total;
 *   - no CSV cell (-f csv) begins with =, +, -, @, a tab or a CR but a
 *     number (OWASP's CSV injection; issue 29 item 4);
 *   - an error at a place in the config ("c.json:L:C: PATH: ...") names, in
 *     PATH, keys the config has (the option's name for an option), not a
 *     path of the model the config was turned into (issue 29 item 2).
 * With VC_FUZZ_KEEP_GOING set (fuzz/run.sh KEEP_GOING=1) a broken check is
 * reported once per kind (the check's line and the error's words, numbers
 * and quoted text left out) and the run goes on; the config and arguments
 * are written to $VC_FUZZ_ARTIFACTS/invariant-hf-LINE-KIND.txt.
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

#ifndef VC_HF_DIR
#error "VC_HF_DIR (tests/data/hf) must be defined"
#endif

/* ------------------------------------------------------------ the program */

typedef struct {
    const uint8_t *p;
    size_t n;
} bytes;

static unsigned take(bytes *b)
{
    if (!b->n) return 0;
    b->n--;
    return *b->p++;
}

/* ------------------------------------------------------------ the configs */

/* one byte picks the family: the inline configs and every tests/data/hf file (fuzz/make_corpus_hf.py numbers the seeds'
 * families the same way, in sorted order); more than fit is an error, not a silently shorter list (at 64, readdir's
 * first 64 files were kept, and the seeds' family bytes named other configs) */
#define MAX_FAMILIES 256
static cJSON *family[MAX_FAMILIES];
static char family_name[MAX_FAMILIES][128];
static int nfamilies;

/* Keys transformers' configs have that a family's file may lack (what
 * src/hf/hf*.c reads, and what a config of another family would bring). */
static const char *const extra_keys[] = {
    "head_dim", "sliding_window", "num_key_value_heads", "num_local_experts", "num_experts_per_tok",
    "num_experts", "moe_intermediate_size", "shared_expert_intermediate_size", "rope_scaling", "torch_dtype",
    "quantization_config", "tie_word_embeddings", "max_position_embeddings", "pad_token_id", "type_vocab_size",
    "layer_norm_eps", "rotary_pct", "partial_rotary_factor", "attention_bias", "mlp_bias", "vocab_size",
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "model_type", "architectures",
    "text_config", "final_logit_softcapping", "attn_logit_softcapping", "query_pre_attn_scalar", "layer_types",
    "max_window_layers", "use_sliding_window", "n_embd", "n_layer", "n_head", "n_positions", "n_inner",
    "hidden_act", "is_encoder_decoder", "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob",
    "rope_theta", "use_parallel_residual", "hidden_activation", "dtype",
};
#define NEXTRA (sizeof extra_keys / sizeof *extra_keys)

/* What a key becomes: JSON text (cJSON_CreateRaw keeps it as written: 2^53 + 1
 * and 1e400 stay what a file would hold); NULL: the key goes. */
static const char *const values[] = {
    "0", "1", "-1", "2", "3", "7", "64", "2147483647", "2147483648", "4294967297", "1099511627776",
    "1099511627777", "9007199254740992", "9007199254740993", "9223372036854775807", "9223372036854775808",
    "18446744073709551616", "1e308", "-1e308", "1e400", "1e-300", "-0", "0.5", "1.5", "4096.0", "1e3", "\"\"",
    "\"x\"", "\"bfloat16\"", "\"float16\"", "\"float32\"", "\"float8_e4m3\"", "\"int8\"", "\"silu\"",
    "\"gelu_pytorch_tanh\"", "\"llama\"", "\"gemma\"", "\"mixtral\"", "\"=HYPERLINK(\\\"x\\\")\"", "\"\\u0000\"",
    "null", "true", "false", "{}", "[]", "[0]", "[1, 2]", "[\"LlamaForCausalLM\"]", "[\"=cmd|' /C calc'!A0\"]",
    "{\"type\": \"linear\", \"factor\": 2.0}", "{\"rope_type\": \"dynamic\", \"factor\": -1}",
    "{\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
    "\"original_max_position_embeddings\": 8192}",
    "{\"rope_type\": \"yarn\", \"factor\": 1e308, \"original_max_position_embeddings\": 0}",
    "{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true, \"bnb_4bit_quant_type\": \"nf4\"}",
    "{\"quant_method\": \"gptq\", \"bits\": 3, \"group_size\": -1}",
    "{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 0}",
    "{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 0]}",
    "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
    "\"intermediate_size\": 128, \"vocab_size\": 100}",
    "{\"a\": {\"b\": {\"c\": [[], {}, null]}}}",
    "[\"sliding_attention\", \"full_attention\"]",
    NULL,
};
#define NVALUES (sizeof values / sizeof *values)

/* The config's keys, top level and one level down ("rope_scaling.factor"),
 * that an edit may pick. */
typedef struct {
    cJSON *obj;
    const char *key;
} slot;

static int collect(cJSON *root, slot *s, int max)
{
    int n = 0;
    for (cJSON *c = root->child; c && n < max; c = c->next) {
        s[n++] = (slot){root, c->string};
        if (cJSON_IsObject(c))
            for (cJSON *d = c->child; d && n < max; d = d->next) s[n++] = (slot){c, d->string};
    }
    return n;
}

static void set_key(cJSON *obj, const char *key, const char *text)
{
    char k[128];
    snprintf(k, sizeof k, "%s", key); /* key may be the item's own string, freed below */
    cJSON_DeleteItemFromObjectCaseSensitive(obj, k);
    if (!text) return;
    cJSON *v = cJSON_CreateRaw(text);
    if (v) cJSON_AddItemToObject(obj, k, v);
}

/* ------------------------------------------------------------ the options */

typedef struct {
    const char *name;
    const char *const *vals; /* NULL: a flag */
} option;

#define V(...) (const char *const[]){__VA_ARGS__, NULL}
static const option options[] = {
    {"--batch", V("1", "2", "3", "64", "2147483648", "1099511627776", "0")},
    {"--seq", V("1", "2", "7", "128", "2048", "131072", "2147483648", "1099511627776")},
    {"--mode", V("train", "infer", "generate")},
    {"--serve", NULL},
    {"--gpu", V("h100-80gb", "a100-40gb", "rtx4090", "mi300x", "1000TB", "1GB", "24GiB", "h100-80gb:50%")},
    {"--gpus", V("1", "2", "8", "64", "3")},
    {"--tp", V("1", "2", "4", "3", "8")},
    {"--pp", V("1", "2", "4", "3")},
    {"--ep", V("1", "2", "8")},
    {"--sp", NULL},
    {"--micro-batches", V("1", "4", "7")},
    {"--pp-virtual", V("2", "3")},
    {"--parallel", V("ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp2", "megatron", "megatron-dist", "zero1-torch",
                     "shard-grad-op", "hybrid", "none")},
    {"--offload", V("optimizer", "params")},
    {"--lora", V("1", "8", "1024", "1099511627776")},
    {"--lora-targets", V("q_proj,v_proj", "all-linear", "x", "lm_head", "gate_proj,up_proj,down_proj")},
    {"--lora-alpha", V("16", "0")},
    {"--lora-dropout", V("0.1", "0")},
    {"--qlora", NULL},
    {"--grad-ckpt", NULL},
    {"--loss", V("hf", "liger", "cce")},
    {"--weights", V("nf4", "int8", "gptq4", "gptq3", "awq4", "fp8", "fp8-block", "dense")},
    {"--precision", V("fp32", "bf16", "fp16", "amp-bf16", "mixed-bf16", "mixed-fp16")},
    {"--optim", V("adamw", "sgd", "adam8bit", "adafactor", "lion", "none", "paged_adamw8bit")},
    {"--prompt", V("1", "512", "1048576", "1099511627776")},
    {"--new-tokens", V("1", "256", "2147483648")},
    {"--cache", V("dynamic", "static", "offloaded", "quantized")},
    {"--kv-bits", V("2", "4", "8")},
    {"--max-context", NULL},
    {"--max-seq", NULL},
    {"--max-batch", NULL},
    {"--sweep", V("1:4", "1,8,32", "9999999999999999", "1:3:x2")},
    {"--max-num-batched-tokens", V("1", "8192", "1099511627776")},
    {"--max-num-seqs", V("1", "256", "0")},
    {"--block-size", V("16", "1", "32")},
    {"--kv-cache-dtype", V("auto", "fp8", "bf16")},
    {"--gpu-memory-utilization", V("0.9", "1", "0.01", "2")},
    {"--moe-imbalance", V("1", "1.5", "100")},
    {"--accumulate", V("1", "4")},
    {"--attention", V("flash", "math", "efficient")},
    {"--input", V("100", "1,2")},
    {"--per-layer", NULL},
    {"--emit-model", NULL},
    {"--use-distributed-optimizer", NULL},
    {"--workspace", V("0", "1GiB")},
};
#define NOPTIONS (sizeof options / sizeof *options)

/* ------------------------------------------------------------ the checks */

static char workdir[256];
static int home_fd = -1;
static const char *cur_config, *cur_family; /* for reports */
static char cur_args[2048];

/* A finding's kind: the check's line and its error message with the
 * numbers and the quoted text taken out ("the sequence (N) is longer than
 * the N learned positions"), so that keep-going mode reports each kind once. */
static uint64_t finding_kind(int line, const char *err)
{
    uint64_t h = 1469598103934665603u ^ (uint64_t)line;
    bool quote = false;
    for (const char *p = err ? err : ""; *p && *p != '\n'; p++) {
        if (*p == '"' || *p == '\'') quote = !quote;
        if (quote || (*p >= '0' && *p <= '9')) continue;
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    }
    return h;
}

static void check_failed(int line, const char *what, int rc, const char *out, const char *err)
{
    static uint64_t seen[256];
    static int nseen;
    const char *keep = getenv("VC_FUZZ_KEEP_GOING");
    bool go_on = keep && *keep;
    uint64_t kind = finding_kind(line, err);
    if (go_on) {
        for (int i = 0; i < nseen; i++)
            if (seen[i] == kind) return;
        if (nseen == 256) return;
        seen[nseen++] = kind;
    }
    fprintf(stderr, "fuzz_hf: check failed at %s:%d: %s (exit %d)\n  config: %s, edited\n  args: %s\n--- stdout (first 600 bytes) ---\n%.600s\n"
                    "--- stderr ---\n%.600s\n",
            __FILE__, line, what, rc, cur_family, cur_args, out ? out : "", err ? err : "");
    if (!go_on) {
        if (fchdir(home_fd)) {} /* libFuzzer writes the input where it was started */
        abort();
    }
    const char *dir = getenv("VC_FUZZ_ARTIFACTS");
    char path[1024];
    snprintf(path, sizeof path, "%s/invariant-hf-%d-%016llx.txt", dir && *dir ? dir : ".", line, (unsigned long long)kind);
    if (fchdir(home_fd) == 0) {
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%s: %s\nfrom %s: vramcalc c.json%s\n%s%s\n--- c.json ---\n%s\n", __FILE__, what, cur_family, cur_args,
                    err ? err : "", out && *out ? out : "", cur_config);
            fclose(f);
            fprintf(stderr, "fuzz_hf: written to %s\n", path);
        }
        if (chdir(workdir)) abort();
    }
}

#define CHECK(cond, what)                                              \
    do {                                                               \
        if (!(cond)) check_failed(__LINE__, what, rc, out, err);      \
    } while (0)

/* Every number in the JSON output not negative (a GPU's "free" may be);
 * free = capacity - total where an object has both. */
static void check_json(const cJSON *j, int rc, const char *out, const char *err)
{
    for (const cJSON *c = j->child; c; c = c->next) {
        if (cJSON_IsNumber(c) && !(c->string && !strcmp(c->string, "free"))) CHECK(c->valuedouble >= 0, "a negative figure in the JSON");
        if (cJSON_IsObject(c) || cJSON_IsArray(c)) check_json(c, rc, out, err);
    }
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(j, "gpu"), *mem = cJSON_GetObjectItemCaseSensitive(j, "memory");
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(gpu, "capacity"), *fr = cJSON_GetObjectItemCaseSensitive(gpu, "free");
    const cJSON *tot = cJSON_GetObjectItemCaseSensitive(mem, "total");
    if (cJSON_IsNumber(cap) && cJSON_IsNumber(fr) && cJSON_IsNumber(tot)) /* bytes, exact in a double below 2^53 */
        CHECK(fr->valuedouble == cap->valuedouble - tot->valuedouble, "free is not capacity - total");
}

/* CSV cells a spreadsheet would evaluate (OWASP "CSV Injection": a cell
 * that begins with =, +, -, @, a tab or a carriage return), but numbers. */
static void check_csv(const char *csv, size_t len, int rc, const char *out, const char *err)
{
    const char *p = csv, *e = csv + len;
    while (p < e) {
        bool quoted = *p == '"';
        const char *cell = p + quoted, *q = cell;
        if (quoted) {
            while (q < e && !(*q == '"' && (q + 1 >= e || q[1] != '"'))) q += *q == '"' ? 2 : 1;
            p = q < e ? q + 1 : e;
        } else {
            while (q < e && *q != ',' && *q != '\n') q++;
            p = q;
        }
        if (cell < e && strchr("=+-@\t\r", *cell) && *cell) {
            char *end;
            (void)strtod(cell, &end);
            bool number = end > cell && (end >= e || *end == ',' || *end == '\n' || *end == '"');
            CHECK(number, "a CSV cell a spreadsheet would evaluate");
        }
        if (p < e && (*p == ',' || *p == '\n')) p++;
    }
}

/* Whether `name` is a key anywhere in the config. */
static bool has_key(const cJSON *j, const char *name, size_t len)
{
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next) {
        if (c->string && strlen(c->string) == len && !memcmp(c->string, name, len)) return true;
        if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && has_key(c, name, len)) return true;
    }
    return false;
}

/* "vramcalc: c.json:L:C: PATH: message": PATH's names are the config's keys. */
static void check_error_path(const cJSON *cfg, int rc, const char *out, const char *err)
{
    const char *p = err + strlen("vramcalc: ");
    if (strncmp(p, "c.json:", 7)) return;
    p += 7;
    if (*p < '1' || *p > '9') return; /* no position: about the whole file or an option */
    p += strspn(p, "0123456789");
    if (*p != ':') return;
    p++;
    p += strspn(p, "0123456789");
    if (strncmp(p, ": ", 2)) return;
    p += 2;
    const char *end = strstr(p, ": ");
    if (!end || memchr(p, ' ', (size_t)(end - p)) || !strncmp(p, "--", 2)) return; /* a message, or an option */
    /* "KEY: missing: ...": the last name is the key the config lacks */
    bool missing = !strncmp(end + 2, "missing", 7);
    for (const char *q = p; q < end;) {
        size_t n = strcspn(q, ".[");
        if (q + n > end) n = (size_t)(end - q);
        bool last = q + n >= end;
        if (n && !(*q >= '0' && *q <= '9') && !(last && missing))
            CHECK(has_key(cfg, q, n), "an error names a key the config does not have");
        q += n;
        if (q < end && *q == '[') q += strcspn(q, "]") + 1;
        else if (q < end) q++;
    }
}

/* ------------------------------------------------------------ set-up */

/* Small configs besides tests/data/hf's (fast to estimate, so many more
 * runs a second): the six-key Gemma config of issue 29's use-after-free
 * (a tied embedding at instance 16), a tied llama, a Mixtral and a
 * Qwen2-MoE with shared experts, a GPT-2 and a RoBERTa. */
static const char *const inline_families[] = {
    "{\"model_type\": \"gemma\", \"vocab_size\": 1000, \"hidden_size\": 64, \"intermediate_size\": 128, "
    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2}",
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 64, "
    "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_hidden_layers\": 3, \"num_key_value_heads\": 2, "
    "\"max_position_embeddings\": 256, \"tie_word_embeddings\": true, \"vocab_size\": 1000, \"torch_dtype\": \"bfloat16\"}",
    "{\"architectures\": [\"MixtralForCausalLM\"], \"model_type\": \"mixtral\", \"hidden_size\": 64, "
    "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"num_key_value_heads\": 2, "
    "\"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"vocab_size\": 1000, \"sliding_window\": 64}",
    "{\"architectures\": [\"Qwen2MoeForCausalLM\"], \"model_type\": \"qwen2_moe\", \"hidden_size\": 64, "
    "\"intermediate_size\": 128, \"moe_intermediate_size\": 32, \"shared_expert_intermediate_size\": 128, "
    "\"num_experts\": 4, \"num_experts_per_tok\": 2, \"num_attention_heads\": 4, \"num_hidden_layers\": 2, "
    "\"num_key_value_heads\": 4, \"vocab_size\": 1000}",
    "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": 64, \"n_head\": 4, "
    "\"n_layer\": 2, \"n_positions\": 128, \"vocab_size\": 1000}",
    "{\"architectures\": [\"RobertaForMaskedLM\"], \"model_type\": \"roberta\", \"hidden_size\": 64, "
    "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 1000, "
    "\"max_position_embeddings\": 130, \"pad_token_id\": 1, \"type_vocab_size\": 1}",
};

static int add_family(const char *text, const char *name)
{
    cJSON *j = cJSON_Parse(text);
    if (!cJSON_IsObject(j) || nfamilies >= MAX_FAMILIES) {
        cJSON_Delete(j);
        return -1;
    }
    /* at most 4 decoder layers: a layer's shapes, not their count, make a
     * family (Gemma 2's alternating windows survive), and a run of a
     * 126-layer config under ASan takes seconds; an edit may set any count */
    static const char *const depth[] = {"num_hidden_layers", "n_layer", "num_layers"};
    for (int i = 0; i < 3; i++) {
        cJSON *d = cJSON_GetObjectItemCaseSensitive(j, depth[i]);
        if (cJSON_IsNumber(d) && d->valuedouble > 4) cJSON_SetNumberValue(d, 4);
    }
    snprintf(family_name[nfamilies], sizeof family_name[nfamilies], "%s", name);
    family[nfamilies++] = j;
    return 0;
}

static int read_family(const char *path, const char *name)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return add_family(buf, name);
}

static void remove_dir(void)
{
    if (chdir(workdir)) return;
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(e->d_name);
    if (d) closedir(d);
    if (fchdir(home_fd) == 0) rmdir(workdir);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* the families: the inline ones, then tests/data/hf's in name order (an
     * input means the same config on every machine) */
    for (size_t i = 0; i < sizeof inline_families / sizeof *inline_families; i++) {
        char name[32];
        snprintf(name, sizeof name, "inline-%zu", i);
        if (add_family(inline_families[i], name)) abort();
    }
    DIR *d = opendir(VC_HF_DIR);
    char *names[MAX_FAMILIES];
    int nn = 0;
    struct dirent *e;
    const int room = MAX_FAMILIES - nfamilies;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 5 || strcmp(e->d_name + l - 5, ".json")) continue;
        if (nn >= room) {
            fprintf(stderr, "fuzz_hf: more configs in %s than the %d families a byte picks (MAX_FAMILIES)\n", VC_HF_DIR,
                    MAX_FAMILIES);
            abort();
        }
        names[nn++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    for (int i = 0; i < nn; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", VC_HF_DIR, names[i]);
        if (read_family(path, names[i])) fprintf(stderr, "fuzz_hf: %s: not a JSON object, skipped\n", path);
        free(names[i]);
    }
    if (nfamilies <= (int)(sizeof inline_families / sizeof *inline_families)) {
        fprintf(stderr, "fuzz_hf: no config in %s\n", VC_HF_DIR);
        abort();
    }
    snprintf(workdir, sizeof workdir, "/tmp/vc_fuzz_hf.XXXXXX");
    if (!mkdtemp(workdir) || (home_fd = open(".", O_RDONLY | O_DIRECTORY)) < 0) {
        perror("fuzz_hf: work directory");
        abort();
    }
    atexit(remove_dir);
    setenv("NO_COLOR", "1", 1);
    return 0;
}

/* ------------------------------------------------------------ one input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bytes b = {data, size};
    unsigned fam = take(&b) % (unsigned)nfamilies;
    cur_family = family_name[fam];
    cJSON *cfg = cJSON_Duplicate(family[fam], 1);
    if (!cfg) return 0;

    int nedits = (int)(take(&b) % 8);
    for (int i = 0; i < nedits; i++) {
        slot s[256];
        int ns = collect(cfg, s, 256);
        unsigned k = take(&b), v = take(&b);
        const char *text = values[v % NVALUES];
        if (k % 2 && ns) { /* a key the config has */
            slot *t = &s[(k / 2) % (unsigned)ns];
            set_key(t->obj, t->key, text);
        } else {
            set_key(cfg, extra_keys[(k / 2) % NEXTRA], text);
        }
    }
    char *config = cJSON_Print(cfg);
    if (!config) {
        cJSON_Delete(cfg);
        return 0;
    }

    char *argv[64];
    int argc = 0;
    argv[argc++] = "vramcalc";
    argv[argc++] = "c.json";
    bool emit = false, json = false;
    int nopts = (int)(take(&b) % 8);
    for (int i = 0; i < nopts; i++) {
        const option *o = &options[take(&b) % NOPTIONS];
        unsigned v = take(&b);
        argv[argc++] = (char *)o->name;
        if (o->vals) {
            int nv = 0;
            while (o->vals[nv]) nv++;
            argv[argc++] = (char *)o->vals[v % (unsigned)nv];
        }
        emit |= !strcmp(o->name, "--emit-model");
    }
    static const char *const formats[] = {"table", "json", "csv"};
    unsigned fmt = take(&b) % 3;
    argv[argc++] = "-f";
    argv[argc++] = (char *)formats[fmt];
    json = fmt == 1 && !emit;
    argv[argc] = NULL;
    cur_args[0] = '\0';
    for (int i = 2; i < argc; i++) {
        size_t u = strlen(cur_args);
        snprintf(cur_args + u, sizeof cur_args - u, " %s", argv[i]);
    }
    cur_config = config;

    if (chdir(workdir)) abort();
    FILE *cf = fopen("c.json", "w");
    if (!cf || fputs(config, cf) < 0 || fclose(cf)) abort();
    char *out = NULL, *err = NULL;
    size_t out_len = 0, err_len = 0;
    FILE *fo = open_memstream(&out, &out_len), *fe = open_memstream(&err, &err_len);
    if (!fo || !fe) abort();
    int rc = vc_cli_main(argc, argv, fo, fe);
    fclose(fo);
    fclose(fe);

    CHECK(rc >= VC_EXIT_OK && rc <= VC_EXIT_USAGE, "exit status outside 0, 1, 2");
    if (rc == VC_EXIT_USAGE) {
        CHECK(out_len == 0, "stdout written on exit 2");
        CHECK(err_len > 10 && !strncmp(err, "vramcalc: ", 10), "exit 2 without a 'vramcalc: ' line");
        CHECK(err_len && memchr(err, '\n', err_len) == err + err_len - 1, "the error is not one line");
        cJSON *as_read = cJSON_Parse(config); /* the edits' raw values as objects */
        if (err_len > 10 && as_read) check_error_path(as_read, rc, out, err);
        cJSON_Delete(as_read);
    } else {
        CHECK(err_len == 0, "stderr written on success");
        if (fmt == 2 && !emit && out_len) check_csv(out, out_len, rc, out, err);
        if (json && out_len && out[0] == '{') {
            cJSON *j = cJSON_ParseWithLength(out, out_len);
            CHECK(j != NULL, "the JSON output does not parse");
            if (j) check_json(j, rc, out, err);
            cJSON_Delete(j);
        }
    }
    free(out);
    free(err);
    unlink("c.json");
    if (fchdir(home_fd)) abort();
    cJSON_free(config);
    cJSON_Delete(cfg);
    return 0;
}
