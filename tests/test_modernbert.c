/*
 * test_modernbert.c — model_type "modernbert" (issue 31 item 4; src/hf/hf_modernbert.c, the
 * masks in layers/llm.c bidir_masks), ModernBertForSequenceClassification as
 * models/modernbert/modeling_modernbert.py runs it at huggingface/transformers @ 000c33fd.
 *
 * 1. The checkpoints' parameters: ModernBertModel's count by hand from the module shapes, which
 *    bench/accuracy/llm/modernbert_replica.py counts on the meta device too, + the head built.
 * 2. The layers: a local (sliding-window) attention wherever layer % global_attn_every_n_layers
 *    != 0, no attn_norm on layer 0, LayerNorms without bias unless norm_bias.
 * 3. The measured cases of bench/accuracy/llm/measured.json (llm327-llm338, torch 1.13 CPU, the
 *    allocator counter; --attention math, --workspace 0) within 2.5% (11 of 12 within 0.05%; llm337,
 *    checkpointing with LoRA, -1.94%).
 * 4. The masks on a GPU: flash takes no attn_mask, so auto runs the memory-efficient kernel.
 * 5. Refusals naming the key or option.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "hf_estimate.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

static vc_model *load(const char *path, int64_t seq)
{
    vc_hf_options o;
    vc_hf_options_init(&o);
    o.seq = seq;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(path, &o, &m, &err) != VC_OK) {
        char msg[1200];
        vc_error_format(&err, msg, sizeof msg);
        fail_msg("%s", msg);
    }
    return m;
}

/* ModernBertModel by hand (modeling_modernbert.py @ 000c33fd __init__s): tok_embeddings V x H;
 * per layer Wqkv 3H x H, Wo H x H, Wi 2I x H, mlp.Wo H x I (no biases), attn_norm and mlp_norm
 * weights H (no attn_norm on layer 0, no LayerNorm bias: norm_bias false); embeddings.norm and
 * final_norm H. ModernBERT-base (H 768, I 1152, 22 layers, V 50368): 38,682,624 + 22 x 5,013,504
 * + 43 x 768 = 149,014,272, the model card's 149M; -large (H 1024, I 2624, 28 layers):
 * 51,576,832 + 28 x 12,255,232 + 57 x 1024 = 394,781,696, its 395M. The head built:
 * ModernBertPredictionHead (dense H x H without classifier_bias, norm weight H) and classifier
 * (H x 2 + 2). */
static void test_counts(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int64_t H, base;
    } c[] = {{HF "modernbert-base.json", 768, INT64_C(149014272)}, {HF "modernbert-large.json", 1024, INT64_C(394781696)}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        vc_model *m = load(c[i].file, 0);
        const int64_t head = c[i].H * c[i].H + c[i].H + c[i].H * 2 + 2;
        assert_int_equal(vc_model_parameters(m), c[i].base + head);
        assert_int_equal(vc_model_trainable_parameters(m), vc_model_parameters(m));
        vc_model_free(m);
    }
}

/* modernbert_small (4 layers, global_attn_every_n_layers 3): layers 1 and 2 local, 0 and 3 global;
 * layer 0 without attn_norm; mean pooling and biased LayerNorms in modernbert_mean_small */
static void test_layers(void **state)
{
    (void)state;
    vc_model *m = load(LLMCFG "modernbert_small.json", 64);
    const char *js = vc_model_generated_json(m);
    assert_non_null(js);
    int locals = 0, norms = 0;
    for (const char *p = js; (p = strstr(p, "\"local_mask\"")); p++) locals++;
    for (const char *p = js; (p = strstr(p, "\"name\":\t\"attn_norm\"")); p++) norms++;
    /* one Sequential per layer: layers 1 and 2 local, attn_norm on layers 1 to 3 */
    assert_int_equal(locals, 2);
    assert_int_equal(norms, 3);
    assert_non_null(strstr(js, "\"bidir_masks\":\t32"));
    assert_non_null(strstr(js, "\"first_token\""));
    assert_null(strstr(js, "\"pool.mean\""));
    vc_model_free(m);
    m = load(LLMCFG "modernbert_mean_small.json", 64);
    assert_non_null(strstr(vc_model_generated_json(m), "\"pool.mean\""));
    /* 5 layers of H 96, I 160, every bias: 1200 x 96 + 5 x (96 x 288 + 288 + 96 x 96 + 96 + 96 x 320 + 320 +
     * 160 x 96 + 96 + 2 x 192) - 192 + 2 x 192 (embeddings.norm, final_norm) = 536,032 (modernbert_replica.py
     * counts the same), + head 96 x 96 + 96 + 192 + classifier 194 */
    assert_int_equal(vc_model_parameters(m), 536032 + 96 * 96 + 96 + 192 + 194);
    vc_model_free(m);
}

static int64_t estimate(const char *cfg, vc_mode mode, int64_t batch, int64_t seq, vc_optim opt, vc_precision p,
                        bool ckpt, int64_t lora, vc_attention attn)
{
    char path[512];
    snprintf(path, sizeof path, LLMCFG "%s", cfg);
    return hf_estimate(&(hf_case){path, mode, batch, seq, opt, p, ckpt, lora, "Wqkv,Wo", attn});
}

/* measured.json llm327-llm338 (run_suite.py's modernbert rows): within 2.5% (compare.py's bound is 5%) */
static void test_measured(void **state)
{
    (void)state;
    static const struct {
        const char *cfg;
        vc_mode mode;
        int64_t batch, seq;
        vc_optim opt;
        vc_precision p;
        bool ckpt;
        int64_t lora, measured;
    } c[] = {
        {"modernbert_small.json", VC_MODE_TRAIN, 2, 64, VC_OPTIM_ADAMW, VC_PREC_FP32, false, 0, 14576640},
        {"modernbert_small.json", VC_MODE_TRAIN, 4, 128, VC_OPTIM_SGD, VC_PREC_BF16, false, 0, 16474112},
        {"modernbert_small.json", VC_MODE_INFER, 2, 256, VC_OPTIM_ADAMW, VC_PREC_FP32, false, 0, 10920960},
        {"modernbert_mean_small.json", VC_MODE_TRAIN, 2, 96, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0, 9747456},
        {"modernbert_mean_small.json", VC_MODE_TRAIN, 2, 128, VC_OPTIM_ADAMW, VC_PREC_FP32, true, 0, 11133952},
        {"modernbert_small.json", VC_MODE_INFER, 1, 512, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0, 14055936},
        {"modernbert_small.json", VC_MODE_TRAIN, 2, 128, VC_OPTIM_ADAMW, VC_PREC_FP32, false, 8, 13084160},
        {"modernbert_mean_small.json", VC_MODE_INFER, 4, 100, VC_OPTIM_ADAMW, VC_PREC_FP32, false, 0, 4881408},
        {"modernbert_small.json", VC_MODE_TRAIN, 1, 200, VC_OPTIM_ADAM, VC_PREC_BF16, true, 0, 8008704},
        {"modernbert_mean_small.json", VC_MODE_TRAIN, 4, 64, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 8, 9598976},
        {"modernbert_small.json", VC_MODE_TRAIN, 3, 80, VC_OPTIM_ADAMW, VC_PREC_FP32, true, 8, 6451200},
        {"modernbert_mean_small.json", VC_MODE_INFER, 2, 300, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0, 8507392},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        int64_t e = estimate(c[i].cfg, c[i].mode, c[i].batch, c[i].seq, c[i].opt, c[i].p, c[i].ckpt, c[i].lora,
                             VC_ATTN_MATH);
        double err = 100.0 * (double)(e - c[i].measured) / (double)c[i].measured;
        printf("llm%zu %s %+.2f%%\n", 300 + i, c[i].cfg, err);
        if (err > 2.5 || err < -2.5) fail_msg("llm%zu: estimate %lld, measured %lld", 300 + i, (long long)e, (long long)c[i].measured);
    }
}

/* sdp_utils.cpp check_for_attn_mask: flash refuses an attn_mask, so a bf16 step with --attention auto
 * (or flash) runs the memory-efficient kernel, which saves the masks for backward: the same estimate
 * as --attention efficient, and more than the math backend's at a long sequence is not implied */
static void test_no_flash(void **state)
{
    (void)state;
    int64_t aut = estimate("modernbert_small.json", VC_MODE_TRAIN, 2, 512, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0, VC_ATTN_AUTO);
    int64_t eff = estimate("modernbert_small.json", VC_MODE_TRAIN, 2, 512, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0,
                           VC_ATTN_EFFICIENT);
    int64_t fl = estimate("modernbert_small.json", VC_MODE_TRAIN, 2, 512, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0, VC_ATTN_FLASH);
    assert_int_equal(aut, eff);
    assert_int_equal(fl, eff);
    /* the saved masks: 2 masks of [2, 1, 512, 512] bf16 (2 MiB together) kept through backward by the
     * efficient kernel; xlm-roberta's unmasked sdpa at the same shape goes to flash */
    assert_true(eff > estimate("modernbert_small.json", VC_MODE_INFER, 2, 512, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0,
                               VC_ATTN_EFFICIENT));
    /* attention.cpp preprocess_mask (PyTorch >= 2.2, PR #114173; src/policy/release.c VC_REL_MEFF_MASK): a
     * [B, 1, L, S] mask whose stride S is a multiple of 8 is passed as it is (expanded: a view), so 504
     * tokens (504 % 16 = 8, which 2.1 padded over the heads) cost less than 512; at 500 pad_bias<8> pads
     * each layer's mask as given to [2, 1, 500, 504] bf16 (1,008,000 B, a 1,008,128 B block) and the kernel
     * keeps that copy for backward: more than 504 tokens, by at most the 4 layers' copies (2.1's
     * [2, 4, 500, 512] copies were 4,096,000 B each) */
    int64_t e504 = estimate("modernbert_small.json", VC_MODE_TRAIN, 2, 504, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0,
                            VC_ATTN_EFFICIENT);
    int64_t e500 = estimate("modernbert_small.json", VC_MODE_TRAIN, 2, 500, VC_OPTIM_ADAMW, VC_PREC_BF16, false, 0,
                            VC_ATTN_EFFICIENT);
    assert_true(e504 < eff);
    assert_true(e500 > e504);
    assert_true(e500 - e504 <= 4 * INT64_C(1008128));
}

/* the refusals: exit 2, one stderr line naming the key (or option) */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *edit, *want;
    } c[] = {
        {"\"reference_compile\": true", "reference_compile: true (torch.compile"},
        {"\"classifier_pooling\": \"max\"", "classifier_pooling: expected \"cls\" or \"mean\""},
        {"\"classifier_activation\": \"tanh\"", "classifier_activation: activation \"tanh\" is not modelled"},
        {"\"norm_bias\": 1", "norm_bias: expected true or false"},
        {"\"global_rope_theta\": -1", "global_rope_theta: expected a positive number"},
        {"\"layer_types\": [\"full_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\"]",
         "layer_types: layer 1 is \"full_attention\" but global_attn_every_n_layers (3) makes it local"},
        {"\"local_attention\": 0", "local_attention: expected an integer of at least 1"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char path[] = "/tmp/vc_mbXXXXXX.json", args[600];
        int fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fprintf(f, "{\"model_type\": \"modernbert\", \"vocab_size\": 1000, \"hidden_size\": 64, \"intermediate_size\": 96, "
                   "\"num_hidden_layers\": 4, \"num_attention_heads\": 4, %s}", c[i].edit);
        fclose(f);
        snprintf(args, sizeof args, "%s --seq 64", path);
        assert_usage(args, c[i].want);
        remove(path);
    }
    assert_usage(HF "modernbert-base.json --tp 2", "modernbert: tensor parallelism is not modelled");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),   cmocka_unit_test(test_layers),   cmocka_unit_test(test_measured),
        cmocka_unit_test(test_no_flash), cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
