/*
 * test_recipe.c — --recipe NAME (src/policy/recipe.c, applied by
 * src/api/request.c): a preset is the same estimate as its options given by
 * hand (the JSON byte for byte but the "recipe" key), an option the user
 * gives wins over the preset's whatever the order, an unknown name is a
 * usage error naming the choices, and the table's pairs are options that
 * parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "recipe.h"
#include "vramcalc/vramcalc.h"

#define LLAMA31_8B VC_TEST_DATA "/hf/llama-3.1-8b.json"
#define LLAMA32_3B VC_TEST_DATA "/hf/llama-3.2-3b.json"
#define LLAMA31_70B VC_TEST_DATA "/hf/llama-3.1-70b.json"

/* the config.json each row's model stands for (tests/data/hf) */
static const char *model_of(const vc_recipe_row *r)
{
    return strstr(r->name, "llama3_2/3B") ? LLAMA32_3B : strstr(r->name, "llama3_1/70B") ? LLAMA31_70B : LLAMA31_8B;
}

typedef struct {
    const char *name, *value;
} kv;

/* Whether the report's recipe "set" object names option (quoted). */
static bool recipe_sets(const char *json, const char *option)
{
    const char *set = strstr(json, "\"set\": {");
    assert_non_null(set);
    const char *end = strchr(set, '}');
    assert_non_null(end);
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", option);
    const char *at = strstr(set, key);
    return at && at < end;
}

/* The request's JSON (seq 512 to keep it quick), or NULL with err set. The
 * "recipe" line, when drop_recipe, left out. */
static char *run_json(const kv *opts, size_t n, const char *model, bool drop_recipe, vc_error *err)
{
    vc_request *q = vc_request_new();
    vc_response *resp = NULL;
    char *text = NULL;
    size_t len = 0;
    assert_non_null(q);
    bool grpo = false; /* --loss grpo runs --prompt + --new-tokens tokens, no --seq (trl:grpo) */
    for (size_t i = 0; i < n; i++)
        grpo |= !strcmp(opts[i].value, "grpo") || !strcmp(opts[i].value, "trl:grpo");
    assert_int_equal(vc_request_set(q, grpo ? "prompt" : "seq", grpo ? "64" : "512", err), VC_OK);
    assert_int_equal(vc_request_set(q, "format", "json", err), VC_OK);
    for (size_t i = 0; i < n; i++)
        if (vc_request_set(q, opts[i].name, opts[i].value, err)) goto out;
    assert_int_equal(vc_request_add_model(q, model, err), VC_OK);
    if (vc_request_run(q, &resp, err)) goto out;
    assert_int_equal(vc_response_render(resp, VC_FORMAT_DEFAULT, NULL, &text, &len, err), VC_OK);
    if (drop_recipe) {
        char *at = strstr(text, "\n  \"recipe\": {");
        assert_non_null(at);
        char *end = strchr(at + 1, '\n');
        assert_non_null(end);
        memmove(at, end, strlen(end) + 1);
    }
out:
    vc_response_free(resp);
    vc_request_free(q);
    return text;
}

/* Every row (transformers:Trainer's on the 8B): --recipe NAME == its pairs given by hand, byte for byte but the "recipe" key. */
static void test_equals_by_hand(void **state)
{
    (void)state;
    vc_error err;
    for (size_t i = 0; i < vc__recipe_count(); i++) {
        const vc_recipe_row *r = vc__recipe_at(i);
        kv rec = {"recipe", r->name}, hand[VC_RECIPE_MAX_SET];
        size_t n = vc__recipe_npairs(r);
        for (size_t k = 0; k < n; k++) hand[k] = (kv){r->set[k].option, vc__recipe_value(&r->set[k], 0, NULL)};
        char *a = run_json(&rec, 1, model_of(r), true, &err);
        if (!a) fail_msg("%s: %s", r->name, err.msg);
        char *b = run_json(hand, n, model_of(r), false, &err);
        if (!b) fail_msg("%s by hand: %s", r->name, err.msg);
        if (strcmp(a, b)) fail_msg("%s: the preset's JSON differs from its options given by hand", r->name);
        vc_text_free(a);
        vc_text_free(b);
    }
}

/* The preset's values, as the YAML at torchtune@bd2a0fc7 says them, reach the report:
 * llama3_1/8B_lora_single_device.yaml batch_size: 2, gradient_accumulation_steps: 8,
 * optimizer torch.optim.AdamW fused: True, dtype: bf16; the report's recipe key lists them. */
static void test_values_reported(void **state)
{
    (void)state;
    vc_error err;
    kv rec = {"recipe", "torchtune:llama3_1/8B_lora_single_device"};
    char *a = run_json(&rec, 1, LLAMA31_8B, false, &err);
    if (!a) fail_msg("%s", err.msg);
    assert_non_null(strstr(a, "\"batch\": 2, \"precision\": \"bf16\""));
    assert_non_null(strstr(a, "\"optimizer\": \"adamw\", \"optimizer_impl\": \"fused\", \"accumulate\": 8,"));
    assert_non_null(strstr(a, "\"recipe\": {\"name\": \"torchtune:llama3_1/8B_lora_single_device\", \"source\": "
                              "\"pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1 recipes/configs/llama3_1/"
                              "8B_lora_single_device.yaml\", \"set\": {\"lora\": \"8\", \"lora_alpha\": \"16\""));
    vc_text_free(a);
}

/* An option given wins over the preset's, before or after --recipe, a flag turned off included;
 * the recipe's "set" then leaves it out. */
static void test_explicit_wins(void **state)
{
    (void)state;
    vc_error err;
    const vc_recipe_row *r = vc__recipe_find("torchtune:llama3_1/8B_lora_single_device");
    assert_non_null(r);
    kv hand[VC_RECIPE_MAX_SET + 1];
    size_t n = 0;
    for (size_t k = 0; k < vc__recipe_npairs(r); k++) { /* by hand: batch 4 and no checkpointing instead */
        bool with_ckpt = r->set[k].needs && !strcmp(r->set[k].needs, "grad_ckpt"); /* grad_ckpt_kind: not applied */
        if (!strcmp(r->set[k].option, "batch")) hand[n++] = (kv){"batch", "4"};
        else if (strcmp(r->set[k].option, "grad_ckpt") && !with_ckpt) hand[n++] = (kv){r->set[k].option, vc__recipe_value(&r->set[k], 0, NULL)};
    }
    char *want = run_json(hand, n, LLAMA31_8B, false, &err);
    if (!want) fail_msg("%s", err.msg);
    assert_non_null(strstr(want, "\"batch\": 4,"));
    const kv before[] = {{"batch", "4"}, {"grad_ckpt", "false"}, {"recipe", r->name}};
    const kv after[] = {{"recipe", r->name}, {"batch", "4"}, {"grad_ckpt", "false"}};
    const kv *orders[] = {before, after};
    for (int o = 0; o < 2; o++) {
        char *got = run_json(orders[o], 3, LLAMA31_8B, false, &err);
        if (!got) fail_msg("%s", err.msg);
        assert_false(recipe_sets(got, "batch"));
        assert_false(recipe_sets(got, "grad_ckpt"));
        assert_true(recipe_sets(got, "accumulate"));
        assert_non_null(strstr(got, "\"accumulate\": \"8\""));
        char *at = strstr(got, "\n  \"recipe\": {"), *end = strchr(at + 1, '\n');
        memmove(at, end, strlen(end) + 1);
        if (strcmp(got, want)) fail_msg("order %d: the options given did not win over the preset", o);
        vc_text_free(got);
    }
    vc_text_free(want);
}

/* A pair that goes with another (loss_chunks with loss, optim_impl with optim) is left out with it:
 * --loss hf over a preset is the preset's other options with --loss hf, no --loss-chunks (which
 * --loss hf refuses). */
static void test_needs(void **state)
{
    (void)state;
    vc_error err;
    const vc_recipe_row *r = vc__recipe_find("torchtune:llama3_2/3B_lora_single_device");
    assert_non_null(r);
    kv hand[VC_RECIPE_MAX_SET + 2];
    size_t n = 0;
    for (size_t k = 0; k < vc__recipe_npairs(r); k++)
        if (strncmp(r->set[k].option, "loss", 4) && strncmp(r->set[k].option, "optim", 5))
            hand[n++] = (kv){r->set[k].option, vc__recipe_value(&r->set[k], 0, NULL)};
    hand[n++] = (kv){"loss", "hf"};
    hand[n++] = (kv){"optim", "adamw8bit"};
    char *want = run_json(hand, n, LLAMA32_3B, false, &err);
    if (!want) fail_msg("%s", err.msg);
    const kv given[] = {{"loss", "hf"}, {"recipe", r->name}, {"optim", "adamw8bit"}};
    char *got = run_json(given, 3, LLAMA32_3B, true, &err);
    if (!got) fail_msg("%s", err.msg);
    assert_string_equal(got, want);
    vc_text_free(got);
    vc_text_free(want);
}

/* --sweep and --max-batch choose the batch: the preset's is left out (not "give either --batch or --sweep"). */
static void test_sweep(void **state)
{
    (void)state;
    vc_error err;
    const kv sweep[] = {{"recipe", "torchtune:llama3_1/8B_qlora_single_device"}, {"sweep", "1,2"}};
    char *a = run_json(sweep, 2, LLAMA31_8B, false, &err);
    if (!a) fail_msg("%s", err.msg);
    assert_non_null(strstr(a, "\"sweep\": ["));
    assert_false(recipe_sets(a, "batch"));
    assert_true(recipe_sets(a, "accumulate"));
    vc_text_free(a);
    const kv maxb[] = {{"gpu", "rtx4090"}, {"max_batch", "true"}, {"recipe", "torchtune:llama3_1/8B_qlora_single_device"}};
    a = run_json(maxb, 3, LLAMA31_8B, false, &err);
    if (!a) fail_msg("%s", err.msg);
    assert_false(recipe_sets(a, "batch"));
    assert_true(recipe_sets(a, "accumulate"));
    vc_text_free(a);
}

/* Refusals: an unknown name (the choices named), a mode the recipes do not train in, a model file. */
static void test_refusals(void **state)
{
    (void)state;
    vc_error err;
    vc_request *q = vc_request_new();
    assert_int_equal(vc_request_set(q, "recipe", "torchtune:lora_single_device", &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "unknown recipe 'torchtune:lora_single_device' (choose "
                                    "torchtune:llama3_1/8B_lora_single_device, torchtune:llama3_1/8B_qlora_single_device,"));
    assert_null(strchr(err.msg, '\n'));
    vc_request_free(q);

    const kv infer[] = {{"mode", "infer"}, {"recipe", "torchtune:llama3_1/8B_full_single_device"}};
    assert_null(run_json(infer, 2, LLAMA31_8B, false, &err));
    assert_non_null(strstr(err.msg, "is a training config: not with"));

    q = vc_request_new();
    vc_response *resp = NULL;
    assert_int_equal(vc_request_set(q, "recipe", "torchtune:llama3_1/8B_full_single_device", &err), VC_OK);
    assert_int_equal(vc_request_add_model(q, VC_EXAMPLES "/mlp.json", &err), VC_OK);
    assert_int_equal(vc_request_run(q, &resp, &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "applies to a Hugging Face config.json; this is a vramcalc model file"));
    vc_request_free(q);
}

/* The table: every pair an option that parses its value (a trl: row's at the default --trl release) on a fresh
 * request, none of those whose value the request strdup()s (apply_recipe sets them on a shallow copy); each row a
 * source at a commit. */
static void test_table(void **state)
{
    (void)state;
    static const char *const copied[] = {"input", "gpu", "sweep", "plot", "columns", "weights", "cudnn_table"};
    vc_error err;
    assert_true(vc__recipe_count() >= 5);
    for (size_t i = 0; i < vc__recipe_count(); i++) {
        const vc_recipe_row *r = vc__recipe_at(i);
        assert_true(strstr(r->source, "@") || vc__recipe_follows_trl(r)); /* a trl: row's tag is --trl's */
        assert_true(r->not_applied && r->not_applied[0]);
        assert_true(vc__recipe_npairs(r) < VC_RECIPE_MAX_SET);
        vc_request *q = vc_request_new();
        for (size_t k = 0; k < vc__recipe_npairs(r); k++) {
            for (size_t c = 0; c < sizeof copied / sizeof *copied; c++) assert_string_not_equal(r->set[k].option, copied[c]);
            if (vc_request_set(q, r->set[k].option, vc__recipe_value(&r->set[k], 0, NULL), &err)) fail_msg("%s: %s", r->name, err.msg);
        }
        vc_request_free(q);
    }
}

/* --recipe list: a text response, every row's name and source. */
static void test_list(void **state)
{
    (void)state;
    vc_error err;
    vc_request *q = vc_request_new();
    vc_response *resp = NULL;
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(vc_request_set(q, "recipe", "list", &err), VC_OK);
    assert_int_equal(vc_request_run(q, &resp, &err), VC_OK);
    assert_int_equal(vc_response_render(resp, VC_FORMAT_DEFAULT, NULL, &text, &len, &err), VC_OK);
    for (size_t i = 0; i < vc__recipe_count(); i++) {
        assert_non_null(strstr(text, vc__recipe_at(i)->name));
        assert_non_null(strstr(text, vc__recipe_at(i)->source));
    }
    assert_non_null(strstr(text, "--optim paged_adamw8bit --optim-in-bwd --grad-ckpt --grad-ckpt-kind non-reentrant --loss chunked --loss-chunks 8"));
    vc_text_free(text);
    vc_response_free(resp);
    vc_request_free(q);
}

/* The CLI: sh's output of cmd (stderr too) and its exit status. */
static char *sh(const char *cmd, int *rc)
{
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    for (size_t k; (k = fread(out + n, 1, cap - 1 - n, p)) > 0;) {
        n += k;
        if (n + 1 == cap) assert_non_null(out = realloc(out, cap *= 2));
    }
    out[n] = 0;
    int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

/* On the command line: a flag the recipe turns on is turned off with =false (the same estimate as the
 * options by hand without it), and an unknown recipe exits 2 with one line naming the choices. */
static void test_cli(void **state)
{
    (void)state;
    int rc;
    char *a = sh(VC_CLI " " LLAMA31_8B " --seq 512 -f json --recipe torchtune:llama3_1/8B_full_single_device --grad-ckpt=false", &rc);
    assert_int_equal(rc, 0);
    char *b = sh(VC_CLI " " LLAMA31_8B " --seq 512 -f json -p bf16 -b 2 --optim paged_adamw8bit --optim-in-bwd --loss chunked "
                 "--loss-chunks 8", &rc);
    assert_int_equal(rc, 0);
    char *at = strstr(a, "\n  \"recipe\": {"), *end = at ? strchr(at + 1, '\n') : NULL;
    assert_non_null(end);
    assert_null(strstr(at, "\"grad_ckpt\":"));
    memmove(at, end, strlen(end) + 1);
    assert_string_equal(a, b);
    free(a);
    free(b);
    a = sh(VC_CLI " " LLAMA31_8B " --recipe torchtune:8B_lora", &rc);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(a, "vramcalc: --recipe: unknown recipe 'torchtune:8B_lora' (choose torchtune:llama3_1/8B_lora_single_device, "));
    assert_int_equal(strchr(a, '\n') - a + 1, (long)strlen(a)); /* one line */
    free(a);
}

/* The JSON number after key (quoted, with ": ") in text's "memory" object. */
static long long num_after(const char *text, const char *key)
{
    text = strstr(text, "\"memory\": {");
    assert_non_null(text);
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *at = strstr(text, k);
    if (!at) fail_msg("no %s", key);
    return atoll(at + strlen(k));
}

/* The distributed torchtune presets and trl:sft: what each sets, as its config says it (recipe.c's
 * comments cite the files), reaches the report, and the estimate's persistent state follows from it.
 * 16,060,522,496 bytes: Llama 3.1 8B's 8,030,261,248 parameters in bf16 (the config's shapes). */
static void test_distributed_and_trl(void **state)
{
    (void)state;
    vc_error err;
    const long long w8 = 16060522496LL;
    /* llama3_1/8B_full.yaml: dtype bf16, batch_size 2, AdamW fused, activation checkpointing, 4 devices
     * (tune run --nproc_per_node 4), fully_shard per layer and the root: FSDP2 keeps a 1/4 shard of each
     * parameter (padded to the world, F2P chunk(world, dim 0)), its gradient and AdamW's two states per rank */
    kv rec = {"recipe", "torchtune:llama3_1/8B_full"};
    char *a = run_json(&rec, 1, LLAMA31_8B, false, &err);
    if (!a) fail_msg("%s", err.msg);
    assert_non_null(strstr(a, "\"batch\": 2, \"precision\": \"bf16\""));
    assert_non_null(strstr(a, "\"optimizer\": \"adamw\", \"optimizer_impl\": \"fused\", \"accumulate\": 1,"));
    assert_non_null(strstr(a, "\"parallel\": {\"layout\": \"fsdp2\", \"gpus\": 4"));
    assert_true(recipe_sets(a, "grad_ckpt") && recipe_sets(a, "loss_chunks"));
    long long w = num_after(a, "weights");
    assert_true(w >= w8 / 4 && w < w8 / 4 + (1 << 20)); /* each tensor's padding: under 1 MiB in all */
    /* exp_avg and exp_avg_sq shaped as the shards, and fused AdamW's `step` tensor per parameter on the
     * device (a 512-byte block each, 291 parameters: under 512 KiB) */
    assert_true(num_after(a, "optimizer_states") >= 2 * w && num_after(a, "optimizer_states") < 2 * w + (512 << 10));
    vc_text_free(a);
    /* llama3_1/70B_full.yaml: fsdp_cpu_offload True (CPUOffloadPolicy: the sharded parameters, their
     * gradients and the optimizer on the CPU), AdamW fused False, 8 devices: no gradient or state on the GPU */
    rec.value = "torchtune:llama3_1/70B_full";
    a = run_json(&rec, 1, LLAMA31_70B, false, &err);
    if (!a) fail_msg("%s", err.msg);
    assert_non_null(strstr(a, "\"optimizer\": \"adamw\", \"optimizer_impl\": \"foreach\", \"accumulate\": 1,"));
    assert_non_null(strstr(a, "\"parallel\": {\"layout\": \"fsdp2\", \"gpus\": 8, \"offload\": \"params\"}"));
    assert_int_equal(num_after(a, "gradients"), 0);
    assert_int_equal(num_after(a, "optimizer_states"), 0);
    vc_text_free(a);
    /* trl:sft: SFTConfig's defaults at trl v1.9.0 (--trl's default) with TrainingArguments' per_device_train_batch_size 8 and
     * adamw_torch, the model loaded in bf16: a full fine-tune's bf16 weights, gradients and two AdamW states */
    rec.value = "trl:sft";
    a = run_json(&rec, 1, LLAMA31_8B, false, &err);
    if (!a) fail_msg("%s", err.msg);
    assert_non_null(strstr(a, "\"batch\": 8, \"precision\": \"bf16\""));
    assert_non_null(strstr(a, "\"optimizer\": \"adamw\", \"optimizer_impl\": \"foreach\""));
    assert_non_null(strstr(a, "\"loss\": \"chunked-nll\""));
    assert_true(recipe_sets(a, "grad_ckpt"));
    assert_int_equal(num_after(a, "weights"), w8 + 512); /* and the rotary embedding's inv_freq buffer */
    assert_int_equal(num_after(a, "gradients"), w8);
    assert_int_equal(num_after(a, "optimizer_states"), 2 * w8);
    vc_text_free(a);
}

/* The distributed LoRA presets (lora_finetune_distributed, recipe.c): the yaml's values reach the report,
 * and the per-GPU persistent state is derived by hand. Adapters on q, v, o, gate, up, down (rank r):
 * lora_A [r, in] + lora_B [out, r]; 8B (hidden 4096, kv 1024, intermediate 14336, 32 layers) at r 8:
 * 614,400 per layer, 19,660,800 in all; 70B (8192, 1024, 28672, 80 layers; 70,553,706,496 parameters) at
 * r 16: 2,441,216 per layer, 195,297,280. fully_shard over 2 (8B) or 8 (70B) ranks, no shard padded (every
 * dim 0 divides): weights 1/world of every parameter in bf16 (frozen and adapters: F2P sharded
 * parameters) + the inv_freq buffer's 512 B; gradients 1/world of the adapters (only they are
 * reduce-scattered: F2G post_backward's fsdp_params_with_grad); fused AdamW's exp_avg and exp_avg_sq as
 * the adapters' shards and a `step` tensor on the device (a 512-byte block) per adapter parameter
 * (32 x 12 = 384 for 8B, 80 x 12 = 960 for 70B): no state for a frozen parameter (no .grad). */
static void test_distributed_lora(void **state)
{
    (void)state;
    vc_error err;
    kv rec = {"recipe", "torchtune:llama3_1/8B_lora"};
    char *a = run_json(&rec, 1, LLAMA31_8B, false, &err);
    if (!a) fail_msg("%s", err.msg);
    assert_non_null(strstr(a, "\"batch\": 2, \"precision\": \"bf16\""));
    assert_non_null(strstr(a, "\"optimizer\": \"adamw\", \"optimizer_impl\": \"fused\", \"accumulate\": 8,"));
    assert_non_null(strstr(a, "\"parallel\": {\"layout\": \"fsdp2\", \"gpus\": 2"));
    assert_false(recipe_sets(a, "grad_ckpt")); /* enable_activation_checkpointing: False */
    const long long l8 = 19660800LL;
    assert_int_equal(num_after(a, "weights"), (8030261248LL + l8) * 2 / 2 + 512);
    assert_int_equal(num_after(a, "gradients"), l8 * 2 / 2);
    assert_int_equal(num_after(a, "optimizer_states"), 2 * (l8 * 2 / 2) + 384 * 512);
    vc_text_free(a);
    rec.value = "torchtune:llama3_1/70B_lora";
    a = run_json(&rec, 1, LLAMA31_70B, false, &err);
    if (!a) fail_msg("%s", err.msg);
    assert_non_null(strstr(a, "\"optimizer\": \"adamw\", \"optimizer_impl\": \"fused\", \"accumulate\": 1,"));
    assert_non_null(strstr(a, "\"parallel\": {\"layout\": \"fsdp2\", \"gpus\": 8"));
    assert_true(recipe_sets(a, "grad_ckpt") && recipe_sets(a, "lora_dtype"));
    const long long l70 = 195297280LL;
    assert_int_equal(num_after(a, "weights"), (70553706496LL + l70) * 2 / 8 + 512);
    assert_int_equal(num_after(a, "gradients"), l70 * 2 / 8);
    assert_int_equal(num_after(a, "optimizer_states"), 2 * (l70 * 2 / 8) + 960 * 512);
    vc_text_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_by_hand), cmocka_unit_test(test_values_reported), cmocka_unit_test(test_explicit_wins),
        cmocka_unit_test(test_refusals),       cmocka_unit_test(test_table),           cmocka_unit_test(test_list),
        cmocka_unit_test(test_cli),            cmocka_unit_test(test_needs),
        cmocka_unit_test(test_sweep),          cmocka_unit_test(test_distributed_and_trl),
        cmocka_unit_test(test_distributed_lora),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
