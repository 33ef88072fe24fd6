/*
 * test_whisper.c — whisper (issue 31 item 4; src/hf/hf_whisper.c, layers/whisper.c):
 * the parameters of the published checkpoints, WhisperForConditionalGeneration's
 * training and inference estimates against the peaks measured from
 * bench/accuracy/llm/whisper_replica.py (written from modeling_whisper.py @ efa7189c,
 * measured by measure_llm.py on torch 1.13 CPU: bench/accuracy/llm/measured.json, the
 * whisper cases after t5's; the held-out ones are not asserted here), the decoder's
 * length, and what is refused.
 *
 * The configs are bench/accuracy/llm/configs/whisper_small.json (tied, dropouts 0,
 * 300 source positions), whisper_v3_small.json (128 mel bins, untied, dropouts 0.1,
 * 6 encoder and 3 decoder heads, 2 + 3 layers) and whisper_30s_small.json (1500 source
 * positions: 30 s of frames), written out below as they are in those files.
 */
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
#include "hf_estimate.h"

#define HF VC_TEST_DATA "/hf/"

#define IDS "\"decoder_start_token_id\": 1, \"pad_token_id\": 0, \"bos_token_id\": 1, \"eos_token_id\": 2, "
static const char WH_SMALL[] =
    "{\"model_type\": \"whisper\", \"architectures\": [\"WhisperForConditionalGeneration\"], \"vocab_size\": 4096, "
    "\"num_mel_bins\": 80, \"d_model\": 256, \"encoder_layers\": 2, \"encoder_attention_heads\": 4, \"decoder_layers\": 2, "
    "\"decoder_attention_heads\": 4, \"encoder_ffn_dim\": 1024, \"decoder_ffn_dim\": 1024, \"max_source_positions\": 300, "
    "\"max_target_positions\": 448, \"activation_function\": \"gelu\", \"dropout\": 0.0, \"attention_dropout\": 0.0, "
    "\"activation_dropout\": 0.0, " IDS "\"is_encoder_decoder\": true, \"use_cache\": true, \"tie_word_embeddings\": true}";
static const char WH_V3_SMALL[] =
    "{\"model_type\": \"whisper\", \"architectures\": [\"WhisperForConditionalGeneration\"], \"vocab_size\": 3000, "
    "\"num_mel_bins\": 128, \"d_model\": 192, \"encoder_layers\": 2, \"encoder_attention_heads\": 6, \"decoder_layers\": 3, "
    "\"decoder_attention_heads\": 3, \"encoder_ffn_dim\": 768, \"decoder_ffn_dim\": 512, \"max_source_positions\": 250, "
    "\"max_target_positions\": 256, \"activation_function\": \"gelu\", \"dropout\": 0.1, \"attention_dropout\": 0.1, "
    "\"activation_dropout\": 0.1, " IDS "\"is_encoder_decoder\": true, \"use_cache\": true, \"tie_word_embeddings\": false}";
static const char WH_30S_SMALL[] =
    "{\"model_type\": \"whisper\", \"architectures\": [\"WhisperForConditionalGeneration\"], \"vocab_size\": 2048, "
    "\"num_mel_bins\": 80, \"d_model\": 128, \"encoder_layers\": 2, \"encoder_attention_heads\": 2, \"decoder_layers\": 2, "
    "\"decoder_attention_heads\": 2, \"encoder_ffn_dim\": 512, \"decoder_ffn_dim\": 512, \"max_source_positions\": 1500, "
    "\"max_target_positions\": 448, " IDS "\"is_encoder_decoder\": true}";

static vc_model *load(const char *js, int64_t target)
{
    vc_hf_options h;
    vc_hf_options_init(&h);
    h.target_seq = target;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string_hf(js, strlen(js), "config.json", &h, &m, &err)) fail_msg("load: %s: %s", err.path, err.msg);
    return m;
}

/* The published checkpoints (tests/data/hf/whisper-*.json: the architecture keys of openai/whisper-*'s
 * config.json, the token lists left out) hold exactly the parameters whisper_replica.py's modules
 * (modeling_whisper.py @ efa7189c, built on the meta device) count with sum(p.numel()): tiny 37.8M,
 * base 72.6M, small 242M, medium 764M, large-v3 1.55B and large-v3-turbo 809M as the model cards
 * round them. The encoder's embed_positions (max_source_positions x d_model) is frozen. */
static void checkpoint_params(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int64_t params, frozen;
    } ck[] = {
        {"whisper-tiny.json", INT64_C(37760640), 1500 * 384},
        {"whisper-base.json", INT64_C(72593920), 1500 * 512},
        {"whisper-small.json", INT64_C(241734912), 1500 * 768},
        {"whisper-medium.json", INT64_C(763857920), 1500 * 1024},
        {"whisper-large-v3.json", INT64_C(1543490560), 1500 * 1280},
        {"whisper-large-v3-turbo.json", INT64_C(808878080), 1500 * 1280},
    };
    for (size_t i = 0; i < sizeof ck / sizeof *ck; i++) {
        char path[512];
        snprintf(path, sizeof path, HF "%s", ck[i].file);
        vc_hf_options h;
        vc_hf_options_init(&h);
        vc_model *m = NULL;
        vc_error err;
        if (vc_model_load_file_hf(path, &h, &m, &err)) fail_msg("%s: %s: %s", ck[i].file, err.path, err.msg);
        if (vc_model_parameters(m) != ck[i].params)
            fail_msg("%s: %lld parameters, the replica counts %lld", ck[i].file, (long long)vc_model_parameters(m),
                     (long long)ck[i].params);
        assert_int_equal(vc_model_trainable_parameters(m), ck[i].params - ck[i].frozen);
        /* the decoder's tokens default to max_target_positions (448), the encoder's input is 30 s of frames */
        assert_non_null(strstr(vc_model_name(m), "x 3000 frames, target 448"));
        vc_model_free(m);
    }
}

/* Training: the whole step's peak, equal to the measured one (measured.json). */
static void train_measured(void **state)
{
    (void)state;
    static const struct {
        const char *cfg;
        int64_t batch, target;
        vc_optim optim;
        vc_precision p;
        const char *lora; /* NULL: full fine-tuning */
        int64_t measured; /* measured.json peak_allocated */
    } cases[] = {
        {WH_SMALL, 2, 64, VC_OPTIM_ADAMW, VC_PREC_FP32, NULL, INT64_C(113200128)}, /* llm436 */
        {WH_SMALL, 2, 64, VC_OPTIM_ADAMW, VC_PREC_BF16, NULL, INT64_C(61691392)},  /* llm437 */
        {WH_SMALL, 2, 64, VC_OPTIM_ADAMW, VC_PREC_FP32, "q_proj,v_proj", INT64_C(53446656)}, /* llm439 */
        {WH_V3_SMALL, 1, 96, VC_OPTIM_ADAM, VC_PREC_BF16, NULL, INT64_C(43088896)},            /* llm440, dropouts 0.1 */
        {WH_30S_SMALL, 1, 128, VC_OPTIM_ADAMW, VC_PREC_FP32, NULL, INT64_C(114393600)},        /* llm442, 3000 frames */
        {WH_SMALL, 3, 200, VC_OPTIM_SGD, VC_PREC_BF16, "q_proj,v_proj", INT64_C(75843072)},   /* llm443 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_model *m = load(cases[i].cfg, cases[i].target);
        if (cases[i].lora) hf_set_lora(m, cases[i].lora);
        int64_t got = hf_peak(m, VC_MODE_TRAIN, cases[i].batch, cases[i].optim, cases[i].p);
        if (got != cases[i].measured)
            fail_msg("case %zu: estimate %lld, measured %lld", i, (long long)got, (long long)cases[i].measured);
        vc_model_free(m);
    }
}

/* Inference (model.eval(), no_grad, decoder_input_ids given): the estimate is B x T x 8 bytes low, the
 * decoder's position_ids ([B, T] int64: cache_position.unsqueeze(0).repeat(B, 1)), a local of
 * WhisperDecoder.forward until it returns, freed here after the lookup. */
static void infer_measured(void **state)
{
    (void)state;
    vc_model *m = load(WH_SMALL, 64);
    assert_int_equal(hf_peak(m, VC_MODE_INFER, 2, VC_OPTIM_ADAM, VC_PREC_FP32), INT64_C(31907840) - 2 * 64 * 8); /* llm445 */
    vc_model_free(m);
    m = load(WH_V3_SMALL, 96);
    assert_int_equal(hf_peak(m, VC_MODE_INFER, 2, VC_OPTIM_ADAM, VC_PREC_BF16), INT64_C(17323520) - 2 * 96 * 8); /* llm446 */
    vc_model_free(m);
}

/* --grad-ckpt: every WhisperEncoderLayer and WhisperDecoderLayer through _gradient_checkpointing_func
 * (non-reentrant), the decoder's use_cache off (WhisperDecoder.forward). Full fine-tuning (llm448, llm449;
 * llm450 held out) and LoRA on q_proj,v_proj (llm451, llm452; llm453 held out) are exact. With LoRA, PEFT's
 * enable_input_require_grads hooks get_input_embeddings(), WhisperModel's decoder.embed_tokens
 * ("input_embeddings" in the model hf_whisper.c writes): its output is a leaf that requires grad, so the
 * first decoder layer's self_attn_layer_norm backward runs and the checkpoint frame of that layer, holding
 * the encoder's output, goes when it ends (without the leaf that node never ran and the frame, with the
 * [batch, max_source_positions, d_model] output, stayed to the end of backward: the +0.82% to +1.02% of
 * before), and the leaf and its .grad stay, held by its AccumulateGrad node, until backward ends (the encoder's
 * backward still runs after it: layers/embedding.c, autograd.c op_t.leaf). */
static void ckpt_measured(void **state)
{
    (void)state;
    static const struct {
        const char *cfg;
        int64_t batch, target;
        vc_optim optim;
        vc_precision p;
        bool lora;
        int64_t measured;
        double bound; /* percent */
    } cases[] = {
        {WH_SMALL, 2, 64, VC_OPTIM_ADAMW, VC_PREC_FP32, false, INT64_C(102846464), 0.0}, /* llm448 */
        {WH_V3_SMALL, 2, 48, VC_OPTIM_SGD, VC_PREC_BF16, false, INT64_C(28122624), 0.0}, /* llm449 */
        {WH_SMALL, 2, 64, VC_OPTIM_ADAMW, VC_PREC_BF16, true, INT64_C(24394240), 0.0},   /* llm451 */
        {WH_V3_SMALL, 2, 40, VC_OPTIM_ADAMW, VC_PREC_FP32, true, INT64_C(31571968), 0.0}, /* llm452 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_hf_options h;
        vc_hf_options_init(&h);
        h.target_seq = cases[i].target;
        h.checkpoint = true;
        vc_model *m = NULL;
        vc_error err;
        if (vc_model_load_string_hf(cases[i].cfg, strlen(cases[i].cfg), "config.json", &h, &m, &err))
            fail_msg("load: %s: %s", err.path, err.msg);
        /* both stacks' layers checkpointed, the decoder's attention without its cache */
        const char *js = vc_model_generated_json(m);
        const char *enc = strstr(js, "\"model.encoder.layers\""), *dec = strstr(js, "\"model.decoder.layers\"");
        assert_non_null(enc);
        assert_non_null(dec);
        assert_non_null(strstr(enc, "\"checkpoint\":\ttrue"));
        assert_non_null(strstr(dec, "\"checkpoint\":\ttrue"));
        assert_null(strstr(js, "\"cache\""));
        if (cases[i].lora) hf_set_lora(m, "q_proj,v_proj");
        int64_t got = hf_peak(m, VC_MODE_TRAIN, cases[i].batch, cases[i].optim, cases[i].p);
        double e = 100.0 * (double)(got - cases[i].measured) / (double)cases[i].measured;
        if (e > cases[i].bound || e < -cases[i].bound)
            fail_msg("case %zu: estimate %lld, measured %lld (%+.2f%%)", i, (long long)got, (long long)cases[i].measured, e);
        vc_model_free(m);
    }
    assert_usage(HF "whisper-tiny.json --grad-ckpt --grad-ckpt-every 2", "--grad-ckpt-every: whisper: WhisperEncoder and "
                 "WhisperDecoder checkpoint every layer");
}

/* --seq and --target-seq both give the decoder's tokens (the labels; T5DecoderIds' "length"); without
 * either it is max_target_positions; past it WhisperForConditionalGeneration.forward raises ValueError,
 * refused naming the option; the two options disagreeing is refused. The encoder's input is fixed:
 * [num_mel_bins, 2 x max_source_positions]. */
static void decoder_length(void **state)
{
    (void)state;
    vc_hf_options h;
    vc_hf_options_init(&h);
    h.seq = 96;
    vc_model *a = NULL, *b = load(WH_SMALL, 96);
    vc_error err;
    assert_int_equal(vc_model_load_string_hf(WH_SMALL, strlen(WH_SMALL), "config.json", &h, &a, &err), VC_OK);
    assert_int_equal(hf_peak(a, VC_MODE_TRAIN, 1, VC_OPTIM_SGD, VC_PREC_FP32), hf_peak(b, VC_MODE_TRAIN, 1, VC_OPTIM_SGD, VC_PREC_FP32));
    assert_non_null(strstr(vc_model_generated_json(a), "\"name\":\t\"decoder_input_ids\",\n\t\t\t\"length\":\t96\n"));
    assert_non_null(strstr(vc_model_name(a), "80 mel bins x 600 frames, target 96"));
    vc_model_free(a);
    vc_model_free(b);
    a = load(WH_V3_SMALL, 0);
    assert_non_null(strstr(vc_model_name(a), "128 mel bins x 500 frames, target 256"));
    vc_model_free(a);
    assert_usage(HF "whisper-tiny.json --seq 449", "--seq: 449 decoder tokens: whisper's decoder has 448 learned positions");
    assert_usage(HF "whisper-tiny.json --target-seq 500", "--target-seq: 500 decoder tokens");
    assert_usage(HF "whisper-tiny.json --seq 64 --target-seq 32", "--seq: 64 and --target-seq 32");
}

/* What is not modelled is refused with one line naming the option and why. */
static void refusals(void **state)
{
    (void)state;
    vc_model *m = load(WH_SMALL, 32);
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    vc_error err;
    static const struct { vc_mode mode; vc_precision p; const char *path, *why; } bad[] = {
        {VC_MODE_TRAIN, VC_PREC_FP16, "--precision", "isinf / isnan clamp"}, /* WhisperEncoderLayer's fp16 clamp */
        {VC_MODE_TRAIN, VC_PREC_AMP_BF16, "--precision", "autocast"},
        {VC_MODE_TRAIN, VC_PREC_MIXED_BF16, "--precision", "master weights"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        o.mode = bad[i].mode;
        o.precision = bad[i].p;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), bad[i].path);
        if (!strstr(CLI_MSG(&err), bad[i].why)) fail_msg("%zu: %s", i, err.msg);
    }
    vc_model_free(m);
    /* WhisperGenerationMixin._set_max_new_tokens_and_length: decoder_input_ids + max_new_tokens <= max_target_positions (448) */
    assert_usage(HF "whisper-tiny.json -m generate --prompt 4 --new-tokens 445", "--new-tokens: 445 with a decoder prompt "
                 "(--prompt) of 4: whisper's generate() allows at most max_target_positions (448)");
    /* --prompt is the decoder's: a prompt past its 448 positions (the default is generate()'s forced prompt:
     * test_whisper_generate's defaults) */
    assert_usage(HF "whisper-tiny.json -m generate --prompt 1024 --new-tokens 1", "--prompt: 1024 decoder tokens: whisper's decoder has 448 learned positions");
    /* --serve (src/engine/serve_encdec.c, tests/test_whisper_serve.c): vLLM's derived max_model_len is max_target_positions */
    assert_usage(HF "whisper-tiny.json --serve --gpu h100-80gb --prompt 4 --new-tokens 445", "--prompt: prompt + new tokens "
                 "(449 tokens) pass whisper's max_target_positions (448): vLLM refuses a max_model_len over it");
    assert_usage(HF "whisper-tiny.json --tp 2", "--tp: whisper: tensor parallelism");
    assert_usage(HF "whisper-tiny.json --pp 2 --gpus 2", "--pp: whisper: pipeline stages");
    assert_usage(HF "whisper-tiny.json --loss liger", "--loss: whisper:");
    assert_usage(HF "whisper-tiny.json --act-offload sync", "--act-offload: whisper: offloading");
    assert_usage(HF "whisper-tiny.json --qlora --lora-targets q_proj,v_proj", "--weights: whisper: quantized weights");
    /* PEFT's mapping has no whisper: the targets must be named */
    assert_usage(HF "whisper-tiny.json --lora 8", "--lora needs --lora-targets");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checkpoint_params),
        cmocka_unit_test(train_measured),
        cmocka_unit_test(infer_measured),
        cmocka_unit_test(ckpt_measured),
        cmocka_unit_test(decoder_length),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
