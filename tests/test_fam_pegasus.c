/*
 * test_fam_pegasus.c — model_type "pegasus" (issue 31; src/hf/hf_bart.c's pegasus variant of the bart row),
 * PegasusForConditionalGeneration as models/pegasus/modeling_pegasus.py runs it at huggingface/transformers @ 00b676f8:
 * marian's sinusoidal positions (PegasusSinusoidalPositionalEmbedding "Copied from" Marian's), MBart's pre-LN layers,
 * each stack's final layer_norm, the attention "Copied from" bart's (the bart row's BartSdpaAttention @ efa7189c).
 *
 * 1. google/pegasus-large's parameters: by hand from the module shapes, which bench/accuracy/llm/bart_replica.py
 *    (model_type pegasus) counts on the meta device too. tests/data/hf/pegasus-large.json is written from the Hub's
 *    config.json as a stored script quotes it (its label maps and task_specific_params left out: no size depends on
 *    them; its "use_cache": false and "return_dict": false, the script's own, not kept).
 * 2. The layers: pre-LN (each block's norm before its sublayer), the stacks' layer_norm, no layernorm_embedding.
 * 3. The measured cases of bench/accuracy/llm/measured.json (bart_replica.py, torch 1.13 CPU, the allocator counter;
 *    --attention math, --workspace 0).
 * 4. Refusals: exit 2 and one line naming the key or option.
 */
#include "fam_encdec.h"

/* PegasusForConditionalGeneration by hand (modeling_pegasus.py @00b676f8 __init__s), pegasus-large: V 96103, d_model
 * 1024, 16 + 16 layers, ffn 4096, 1024 positions:
 *   shared 96103 x 1024 = 98,409,472 (both stacks' embed_tokens and the tied lm_head: one tensor);
 *   embed_positions (an nn.Embedding whose weight has requires_grad False: counted, not trained) 1024 x 1024 =
 *     1,048,576 per stack;
 *   encoder layer (bart's modules): 12,596,224; x 16 = 201,539,584; decoder layer 16,796,672; x 16 = 268,746,752;
 *   the stacks' layer_norm 2 x 2048 = 4,096;
 *   total 570,797,056 (bart_replica.py counts the same); trainable 568,699,904 (less the two position tables: the
 *   ~568M published for the checkpoint). final_logits_bias is a buffer (96,103 values, no parameter). */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "pegasus-large.json", 128);
    assert_int_equal(vc_model_parameters(m), INT64_C(570797056));
    vc_model_free(m);
    assert_true(cli_json_num(HF "pegasus-large.json --seq 128", NULL, "trainable_parameters") == INT64_C(568699904));
}

/* the template: pre-LN (self_attn_layer_norm feeds q_proj), the stacks' final layer_norm, sinusoidal positions */
static void test_layers(void **state)
{
    (void)state;
    static const char *const has[] = {"\"model.encoder.layer_norm\"", "\"model.decoder.layer_norm\"", "\"frozen\":\ttrue",
                                      "\"num_embeddings\":\t1024,", NULL};
    static const char *const lacks[] = {"layernorm_embedding", NULL};
    encdec_template(HF "pegasus-large.json", has, lacks);
}

/* measured.json's pegasus rows (run_suite.py's last two mode_cases lists, after marian's; every third held out):
 * each within 0.1% of the measured peak_allocated (generate: the larger of the prefill and decode peaks) */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"pegasus_small.json --seq 96 -b 2 -o adamw -p fp32", 27933184},
        {"pegasus_small.json --seq 64 -b 2 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 8599552},
        {"pegasus_small.json -m infer --seq 128 -b 4 -p fp32", 15031296},
        {"pegasus_small.json --seq 96 -b 2 -o sgd -p fp32 --grad-ckpt", 10346496},
        {"pegasus_small.json -m generate --prompt 48 --new-tokens 8 -b 2 -p fp32", 4749312},
        {"pegasus_small.json -m generate --prompt 64 --new-tokens 10 -b 1 -p bf16", 2515968},
        {"pegasus_small.json -m generate --prompt 40 --new-tokens 6 -b 1 -p fp32 --num-beams 2", 4533248},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
}

/* the refusals: exit 2, one stderr line naming the key (or option) */
static void test_refusals(void **state)
{
    (void)state;
#define PEGASUS_HEAD "{\"model_type\": \"pegasus\", \"vocab_size\": 1000, \"d_model\": 64, \"encoder_ffn_dim\": 96, " \
                     "\"encoder_layers\": 2, \"encoder_attention_heads\": 4, "
    encdec_refusals("pegasus", "PegasusForConditionalGeneration", PEGASUS_HEAD, HF "pegasus-large.json");
    static const fam_refusal c[] = {
        {"\"encoder_layerdrop\": 2", "encoder_layerdrop: expected a probability from 0 to 1"},
    };
    fam_refuse_edits(PEGASUS_HEAD, c, sizeof c / sizeof *c);
#undef PEGASUS_HEAD
    static const fam_refusal o[] = {
        {"--seq 128 --target-seq 1025", "--target-seq: 1025 decoder tokens: pegasus's decoder has 1024 sinusoidal positions"},
        {"--seq 2048", "--seq: 2048 tokens: pegasus has 1024 sinusoidal positions"},
        {"-m generate --prompt 16 --new-tokens 1025", "--new-tokens: 1025: pegasus's decoder has max_position_embeddings (1024)"},
    };
    fam_refuse_options(HF "pegasus-large.json", o, sizeof o / sizeof *o);
    /* its forced_eos_token_id 1 (ForcedEOSTokenLogitsProcessor) runs; greedy and beams */
    encdec_beams_hold_more(HF "pegasus-large.json");
}

ENCDEC_MAIN(ENCDEC_TESTS)
