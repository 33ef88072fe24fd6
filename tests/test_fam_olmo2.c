/*
 * test_fam_olmo2.c — the olmo2 family row (issue 31): OLMo-2-1124-7B / 13B / 32B.
 *
 * Sources: huggingface/transformers models/olmo2/modeling_olmo2.py @ 0233e509531ace915c8241b4c16c8032a583279c:
 *  - Olmo2RMSNorm.forward: hidden_states.to(torch.float32), * rsqrt(variance + eps), then
 *    `return (self.weight * hidden_states).to(input_dtype)`: the weight product in float32 (Olmo3RMSNorm's ops,
 *    HFRMSNorm variant "olmo"), not LlamaRMSNorm's weight * hidden_states.to(input_dtype);
 *  - Olmo2RotaryEmbedding.forward: cos = emb.cos() * attention_scaling, sin likewise, `return cos, sin`: float32
 *    (no .to(x.dtype) as LlamaRotaryEmbedding has): RotaryEmbedding "f32";
 *  - apply_rotary_pos_emb: q_type, k_type = q.dtype, k.dtype; (q * cos) + (rotate_half(q) * sin) in float32 (type
 *    promotion), `return q_embed.to(q_type), k_embed.to(k_type)`: RotaryAttention "rope_f32";
 *  - Olmo2DecoderLayer: no norm before the sublayers, post_attention_layernorm / post_feedforward_layernorm after;
 *    Olmo2Attention: q_norm / k_norm over the whole q / k projections.
 * The measured peaks are bench/accuracy/llm/measured.json's olmo2_small cases (near_llama_replica.py's Olmo2 classes,
 * written from the same file, measured with the accuracy harness's allocator counter on torch 1.13 CPU).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"
#include "cli_run.h"
#include "fam_hf.h"

#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

#define SMALL "\"model_type\":\"olmo2\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
              "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* The layers written (the four identical decoder layers written once, repeat 4): Olmo2RMSNorm's variant on the
 * layer's two norms, on model.norm and on the q/k norms; no input_layernorm; the rotary embedding's float32 pair
 * and the attention's float32 rotation */
static void test_emitted(void **state)
{
    (void)state;
    static const char js[] = "{" SMALL "}";
    assert_int_equal(emitted(js, "\"name\":\t\"input_layernorm\""), 0);
    assert_int_equal(emitted(js, "\"repeat\":\t4"), 1);
    assert_int_equal(emitted(js, "\"variant\":\t\"olmo\""), 3); /* 2 layer norms, model.norm */
    assert_int_equal(emitted(js, "\"qk_norm_variant\":\t\"olmo\""), 1);
    assert_int_equal(emitted(js, "\"qk_norm_whole\":\ttrue"), 1);
    assert_int_equal(emitted(js, "\"f32\":\ttrue"), 1);      /* model.rotary_emb */
    assert_int_equal(emitted(js, "\"rope_f32\":\ttrue"), 1); /* self_attn's attention */
}

/* The new layer arguments refuse what they do not model, naming the argument: "f32" with gpt-oss's half pair or
 * Llama 4's complex one; "rope_f32" with another rotation style (glm4's interleaved partial one here) */
static void test_bad_args(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (load_js("{" SMALL "}", &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    const char *g = vc_model_generated_json(m);
    static const struct {
        const char *from, *to, *key;
    } bad[] = {
        {"\"f32\":\ttrue", "\"f32\": true, \"half\": true", "f32"},
        {"\"f32\":\ttrue", "\"f32\": true, \"complex\": true", "f32"},
        /* rope_style glm4 with rope_f32 is Ernie4_5's rotation (test_fam_ernie.c); gpt_oss's chunked one is not */
        {"\"rope_f32\":\ttrue", "\"rope_f32\": true, \"rope_style\": \"gpt_oss\"", "rope_f32"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *p = strstr(g, bad[i].from);
        assert_non_null(p);
        size_t pre = (size_t)(p - g), nf = strlen(bad[i].from), nt = strlen(bad[i].to), n = strlen(g);
        char *js = malloc(n - nf + nt + 1);
        assert_non_null(js);
        memcpy(js, g, pre);
        memcpy(js + pre, bad[i].to, nt);
        memcpy(js + pre + nt, p + nf, n - pre - nf + 1);
        vc_model *b = NULL;
        vc_error e;
        vc_status st = vc_model_load_string(js, strlen(js), "model.json", &b, &e);
        vc_model_free(b);
        free(js);
        assert_int_equal(st, VC_ERR_MODEL);
        const char *path = CLI_PATH(&e);
        size_t lp = strlen(path), lk = strlen(bad[i].key);
        if (lp < lk || strcmp(path + lp - lk, bad[i].key)) fail_msg("case %zu: path %s, wanted ...%s", i, path, bad[i].key);
    }
    vc_model_free(m);
}

/* float32 cos / sin against the cast pair. olmo2_small with olmo3's row and every layer full (the same modules:
 * Olmo3's norms, LlamaRotaryEmbedding's cos.to(x.dtype)): in fp32 the two are the same run (no cast either way);
 * in bf16 training (b 2, seq 96) the peak is at the loss's backward, where the cos / sin pair is still held (saved
 * by the rotations' products until their backward): [2, 96, head_dim 16] in float32 is 12,288 B against bf16's
 * 6,144 B, the only difference there: + 6,144 B */
static void test_rope_f32(void **state)
{
    (void)state;
    char p[] = "/tmp/vc_o3_XXXXXX";
    int fd = mkstemp(p);
    assert_true(fd >= 0);
    static const char o3[] = "{\"model_type\":\"olmo3\",\"attention_bias\":false,\"hidden_act\":\"silu\",\"hidden_size\":128,"
                             "\"intermediate_size\":320,\"max_position_embeddings\":4096,\"num_attention_heads\":8,"
                             "\"num_hidden_layers\":4,\"num_key_value_heads\":2,\"rms_norm_eps\":1e-06,"
                             "\"rope_theta\":500000,\"tie_word_embeddings\":false,\"vocab_size\":512,\"layer_types\":"
                             "[\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\"]}";
    assert_int_equal(write(fd, o3, strlen(o3)), (ssize_t)strlen(o3));
    close(fd);
    char a[512], b[512];
    static const char *const prec[] = {"fp32", "bf16"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, LLMCFG "olmo2_small.json --seq 96 -b 2 -o adamw -p %s", prec[i]);
        snprintf(b, sizeof b, "%s --seq 96 -b 2 -o adamw -p %s", p, prec[i]);
        long long d = cli_json_field(a, "\"peak_allocated\": ") - cli_json_field(b, "\"peak_allocated\": ");
        assert_int_equal(d, i ? 6144 : 0);
    }
    unlink(p);
}

/* The measured cases (bench/accuracy/llm/measured.json, olmo2_small: training full, LoRA r 8 on q_proj / v_proj,
 * checkpointed, --mode infer) within 0.1%. Before this row used Olmo2RMSNorm's and Olmo2RotaryEmbedding's float32
 * ops, the first was 4.70% low (14,160,896 B) */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0.0 --lora-targets q_proj,v_proj"
    static const cli_measured c[] = {
        {"olmo2_small.json --seq 96 -b 2 -o adamw -p bf16", 14859264},
        {"olmo2_small.json --seq 64 -b 2 -o adamw -p fp32", 17417728},
        {"olmo2_small.json --seq 128 -b 1 -o sgd -p bf16 --grad-ckpt" LQV, 3811328},
        {"olmo2_small.json --seq 48 -b 4 -o adamw -p bf16" LQV, 8874496},
        {"olmo2_small.json --seq 80 -b 2 -o adamw -p bf16 --grad-ckpt", 7973888},
        {"olmo2_small.json -m infer --seq 128 -b 2 -p bf16", 4848640},
        {"olmo2_small.json -m infer --seq 256 -b 1 -p fp32", 9027584},
    };
#undef LQV
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emitted),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_rope_f32),
        cmocka_unit_test(test_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
