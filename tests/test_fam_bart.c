/*
 * test_fam_bart.c — model_type "bart" (issue 31 item 4; src/hf/hf_bart.c, layers/bart.c's BartLogitsBias,
 * layers/whisper.c's WhisperAttention as BartSdpaAttention's core), BartForConditionalGeneration as
 * models/bart/modeling_bart.py runs it at huggingface/transformers @ efa7189c.
 *
 * 1. facebook/bart-large's parameters: by hand from the module shapes, which bench/accuracy/llm/bart_replica.py
 *    counts on the meta device too. tests/data/hf/bart-large.json is written from BartConfig's defaults and the
 *    values facebook/bart-large publishes (its dropouts 0.1; the label maps and task_specific_params of the
 *    Hub's file left out: no size depends on them): the real file was not found in the stored sources.
 * 2. The layers: post-LN, offset positions (max_position_embeddings + 2 rows), the logits bias a buffer.
 * 3. The measured cases of bench/accuracy/llm/measured.json (bart_replica.py, torch 1.13 CPU, the allocator
 *    counter; --attention math, --workspace 0).
 * 4. Refusals: exit 2 and one line naming the key or option.
 * 5. generate() (src/engine/generate.c "Encoder-decoders"; the logits processors of the config's keys,
 *    vc_hf_logits_processors in src/hf/hf_bart.c): the measured cases (bart_replica.generate and measure_llm.py
 *    generate_beams; bart_gen_small has facebook/bart-large's no_repeat_ngram_size 3, forced_bos_token_id 0 and
 *    forced_eos_token_id 2), a processor's tensor by hand, the refusals.
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
#include "fam_hf.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

/* BartForConditionalGeneration by hand (modeling_bart.py @ efa7189c __init__s), bart-large: V 50265, d_model
 * 1024, 12 + 12 layers, ffn 4096, 1024 positions:
 *   shared 50265 x 1024 = 51,471,360 (both stacks' embed_tokens and the tied lm_head: one tensor);
 *   embed_positions (1024 + 2) x 1024 = 1,050,624 per stack; layernorm_embedding 2 x 1024 per stack;
 *   encoder layer: q/k/v/out_proj 4 x (1024 x 1024 + 1024) = 4,198,400, self_attn_layer_norm 2,048,
 *     fc1 1024 x 4096 + 4096 = 4,198,400, fc2 4096 x 1024 + 1024 = 4,195,328, final_layer_norm 2,048:
 *     12,596,224; x 12 = 151,154,688;
 *   decoder layer: + encoder_attn 4,198,400 and its norm 2,048 = 16,796,672; x 12 = 201,560,064;
 *   total 406,291,456 (the model card's 406M; bart_replica.py counts the same). final_logits_bias is a buffer
 *   (50,265 more in the checkpoint's tensors, no parameter); KerasHub's bart_large_en preset publishes
 *   406,287,360: the same model without the positions' 2 offset rows per stack (4,096). */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "bart-large.json", 128);
    assert_int_equal(vc_model_parameters(m), INT64_C(406291456));
    assert_int_equal(vc_model_parameters(m) - 2 * 2 * 1024, INT64_C(406287360));
    vc_model_free(m);
    /* bart_nodrop_small: untied (lm_head its own V x d_model), 2 encoder layers of 4 heads, 3 decoder layers of
     * 6: 1500 x 96 x 2 + 2 x 302 x 96 + 2 x 192 + 2 x (4 x 9312 + 192 + 96 x 256 + 256 + 256 x 96 + 96 + 192) +
     * 3 x (8 x 9312 + 3 x 192 + 96 x 320 + 320 + 320 x 96 + 96) = 288,000 + 57,984 + 384 + 174,272 + 410,784
     * = 931,424 (bart_replica.py counts the same) */
    m = fam_load_file(LLMCFG "bart_nodrop_small.json", 64);
    assert_int_equal(vc_model_parameters(m), INT64_C(931424));
    vc_model_free(m);
}

/* the template: one BartLogitsBias, positions of max_position_embeddings + 2 rows, loop-run stacks */
static void test_layers(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "bart-large.json", 128);
    const char *js = vc_model_generated_json(m);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"BartLogitsBias\""));
    assert_non_null(strstr(js, "\"num_embeddings\":\t1026"));
    assert_non_null(strstr(js, "model.decoder.layers"));
    assert_non_null(strstr(js, "\"input_embeddings\":\tfalse"));
    vc_model_free(m);
}

/* measured.json's bart rows (run_suite.py's `bt`, after the mt5 rows; every third held out): each equal to
 * the measured peak (within 0.02%: the arange [L] of the positions). LoRA under checkpointing was +2.27% until
 * the held arguments of a checkpointed layer went with the last node its backward runs (src/engine/autograd.c
 * backward, `bfirst`): the first decoder layer's input and the encoder's output, frozen q_proj's base addmm
 * being no node, were held to the end of backward (8,855,552 B); torch frees them when that layer's frame
 * dies (8,658,944 B, measured) */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets q_proj,v_proj"
    static const cli_measured c[] = {
        {"bart_small.json --seq 128 --target-seq 64 -b 2 -o adamw -p fp32", 28941312},
        {"bart_small.json --seq 96 --target-seq 48 -b 4 -o sgd -p bf16", 16819712},
        {"bart_small.json -m infer --seq 200 --target-seq 50 -b 4 -p fp32", 13377536},
        {"bart_small.json --seq 128 --target-seq 96 -b 2 -o adamw -p bf16" LQV, 15660544},
        {"bart_small.json --seq 160 --target-seq 64 -b 2 -o adamw -p fp32 --grad-ckpt", 23655936},
        {"bart_nodrop_small.json --seq 96 --target-seq 80 -b 2 -o adamw -p fp32", 22868992},
        {"bart_nodrop_small.json -m infer --seq 200 --target-seq 40 -b 3 -p bf16", 7832576},
        {"bart_nodrop_small.json --seq 128 --target-seq 64 -b 2 -o sgd -p bf16 --grad-ckpt", 5683712},
        {"bart_nodrop_small.json --seq 300 --target-seq 100 -b 1 -o adamw -p fp32" LQV, 15795712},
        /* llm680: LoRA on fc2 alone, the attention frozen: with labels no cache keeps its keys and values */
        {"bart_small.json --seq 128 --target-seq 64 -b 2 -o adamw -p fp32 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets fc2", 14877696},
        {"bart_small.json --seq 128 --target-seq 64 -b 2 -o adamw -p fp32 --grad-ckpt" LQV, 8658944},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
#undef LQV
}

/* body written over the file at path */
static void rewrite(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(body, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* generate() of bart */
static void test_generate(void **state)
{
    (void)state;
    /* bench/accuracy/llm/measured.json: the six cases appended after apertus's (their peak_allocated, the larger of
     * the prefill and decode peaks; compare.py runs generate cases at --transformers 4.57, which changes nothing for
     * an encoder-decoder: no _prefill split) */
    static const cli_measured c[] = {
        {"bart_gen_small.json -m generate --prompt 64 --new-tokens 8 -b 2 -p fp32", 6027776},
        {"bart_small.json -m generate --prompt 96 --new-tokens 12 -b 1 -p fp32", 5417984},
        {"bart_gen_small.json -m generate --prompt 128 --new-tokens 6 -b 1 -p bf16", 3705856},
        {"bart_gen_small.json -m generate --prompt 48 --new-tokens 10 -b 2 -p bf16", 3184128},
        {"bart_gen_small.json -m generate --prompt 64 --new-tokens 8 -b 1 -p fp32 --num-beams 2", 5895680},
        {"bart_small.json -m generate --prompt 32 --new-tokens 6 -b 2 -p fp32 --num-beams 2", 5270528},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
    /* NoRepeatNGramLogitsProcessor by hand: greedy, the same model with and without no_repeat_ngram_size 3. _sample's
     * next_token_scores is then the processor's scores.clone(), [1, 1000] float32 = 4,000 B (4,096 in 512-B blocks),
     * held from the step before the last through the last step's forward, where the decode peak is; without it
     * next_token_scores is next_token_logits itself. The prefill peak (in the encoder) does not move. */
#define BART_SMALL "{\"model_type\": \"bart\", \"vocab_size\": 1000, \"d_model\": 64, \"encoder_ffn_dim\": 96, " \
                   "\"encoder_layers\": 2, \"encoder_attention_heads\": 4, \"decoder_layers\": 2, " \
                   "\"decoder_attention_heads\": 4, \"decoder_ffn_dim\": 96"
    char p0[] = "/tmp/vc_bgXXXXXX", p1[] = "/tmp/vc_bgXXXXXX", a[300];
    fam_write(p0, BART_SMALL "}");
    fam_write(p1, BART_SMALL ", \"no_repeat_ngram_size\": 3}");
    int64_t pk[2][2];
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s -m generate --prompt 32 --new-tokens 8 --attention math --workspace 0", i ? p1 : p0);
        pk[i][0] = cli_json_num(a, "generate", "prefill_peak");
        pk[i][1] = cli_json_num(a, "generate", "decode_peak");
    }
    assert_int_equal(pk[1][0], pk[0][0]);
    assert_int_equal(pk[1][1] - pk[0][1], 4096);
    /* another processor's key is refused under generate (min_length: MinLengthLogitsProcessor), not in training;
     * the processors' keys checked */
    rewrite(p1, BART_SMALL ", \"min_length\": 30}");
    snprintf(a, sizeof a, "%s -m generate", p1);
    assert_usage(a, "min_length: bart: generate()'s logits processor for this key is not modelled");
    snprintf(a, sizeof a, "%s --seq 32", p1);
    assert_true(cli_json_num(a, "memory", "peak_allocated") > 0);
    rewrite(p1, BART_SMALL ", \"no_repeat_ngram_size\": -1}");
    assert_usage(p1, "no_repeat_ngram_size: expected a whole number from 0 to 1000000");
    rewrite(p1, BART_SMALL ", \"no_repeat_ngram_size\": 2.5}");
    assert_usage(p1, "no_repeat_ngram_size: expected a whole number from 0 to 1000000");
    rewrite(p1, BART_SMALL ", \"forced_bos_token_id\": 1000}");
    assert_usage(p1, "forced_bos_token_id: expected a token id from 0 to vocab_size - 1 (999)");
    rewrite(p1, BART_SMALL ", \"forced_eos_token_id\": \"2\"}");
    assert_usage(p1, "forced_eos_token_id: expected a token id from 0 to vocab_size - 1 (999)");
#undef BART_SMALL
    remove(p0);
    remove(p1);
    /* facebook/bart-large's own config (its processors) runs; --serve stays refused */
    assert_true(cli_json_num(HF "bart-large.json -m generate --prompt 512 --new-tokens 64", "generate", "decode_peak") > 0);
    assert_usage(HF "bart-large.json -m generate --serve --gpu h100-80gb", "--serve: vLLM has no BartForConditionalGeneration");
    /* the decoder's positions: max_position_embeddings 1024 new tokens at most (the last one is never fed) */
    assert_true(cli_json_num(HF "bart-large.json -m generate --prompt 16 --new-tokens 1024", "generate", "decode_peak") > 0);
    assert_usage(HF "bart-large.json -m generate --prompt 16 --new-tokens 1025",
                 "--new-tokens: 1025: bart's decoder has max_position_embeddings (1024) positions");
}

/* the refusals: exit 2, one stderr line naming the key (or option) */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *edit, *want;
    } c[] = {
        {"\"decoder_attention_heads\": 5", "decoder_attention_heads: d_model (64) must be divisible by decoder_attention_heads"},
        {"\"encoder_layerdrop\": 2", "encoder_layerdrop: expected a probability from 0 to 1"},
        {"\"scale_embedding\": 1", "scale_embedding: expected true or false"},
        {"\"is_encoder_decoder\": false", "is_encoder_decoder: false"},
        {"\"decoder_layers\": 0", "decoder_layers"},
        {"\"decoder_ffn_dim\": -1", "decoder_ffn_dim"},
        {"\"max_position_embeddings\": 32", "max_position_embeddings"}, /* --seq 64: past the positions */
        {"\"decoder_ffn_dim\": 1099511627776, \"decoder_layers\": 1024", "decoder_layers: 1024 decoder layers of d_model 64"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char path[] = "/tmp/vc_btXXXXXX.json", args[600];
        int fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fprintf(f, "{\"model_type\": \"bart\", \"vocab_size\": 1000, \"d_model\": 64, \"encoder_ffn_dim\": 96, "
                   "\"encoder_layers\": 2, \"encoder_attention_heads\": 4, %s}", c[i].edit);
        fclose(f);
        snprintf(args, sizeof args, "%s --seq 64", path);
        assert_usage(args, c[i].want);
        remove(path);
    }
    assert_usage(HF "bart-large.json --serve --gpu h100-80gb", "--serve: vLLM has no BartForConditionalGeneration");
    assert_usage(HF "bart-large.json -p fp16", "--precision: bart is modelled in fp32 and bf16");
    assert_usage(HF "bart-large.json --tp 2 --gpus 2", "--tp: bart: tensor parallelism");
    assert_usage(HF "bart-large.json --target-seq 1025", "--target-seq: 1025 decoder tokens");
    assert_usage(HF "bart-large.json --qlora", "bart: quantized weights are not modelled");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_generate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
