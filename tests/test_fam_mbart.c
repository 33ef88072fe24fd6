/*
 * test_fam_mbart.c — model_type "mbart" (issue 31; src/hf/hf_bart.c's mbart variant of the bart row),
 * MBartForConditionalGeneration as models/mbart/modeling_mbart.py runs it at huggingface/transformers @ efa7189c (the
 * bart row's commit; its classes are "Copied from" bart's but the pre-LN MBartEncoderLayer / MBartDecoderLayer and
 * each stack's final layer_norm, which pegasus's rows copy): bart's learned positions (+ 2) and layernorm_embedding,
 * MBartScaledWordEmbedding, its own shift_tokens_right (the labels' last non-pad token wrapped to the front).
 *
 * 1. facebook/mbart-large-50's and mbart-large-cc25's parameters, by hand from the module shapes (bench/accuracy/llm/
 *    bart_replica.py, model_type mbart, counts the same modules). tests/data/hf/mbart-large-50.json is written from the
 *    Hub values a stored script quotes for the mbart-large-50 checkpoints (PaddleNLP's MBART_PRETRAINED_INIT_CONFIGURATION:
 *    vocab_size 250054, d_model 1024, 12 + 12 layers of 16 heads, ffn 4096, 1024 positions, scale_embedding, pad 1,
 *    eos 2, decoder_start 2) and MBartConfig's forced_eos_token_id 2; its activation_function "gelu" and its dropouts
 *    are unverified (no size depends on them). mbart-large-cc25's vocab_size 250027 from the same script.
 * 2. The layers: pre-LN, the stacks' layer_norm, layernorm_embedding, learned positions of max_position_embeddings + 2.
 * 3. The measured cases of bench/accuracy/llm/measured.json (bart_replica.py, torch 1.13 CPU, the allocator counter).
 * 4. Refusals: exit 2 and one line naming the key or option.
 */
#include "fam_encdec.h"

/* MBartForConditionalGeneration by hand (modeling_mbart.py @efa7189c __init__s), mbart-large-50: V 250054, d_model 1024,
 * 12 + 12 layers, ffn 4096, 1024 positions:
 *   shared 250054 x 1024 = 256,055,296 (both stacks' embed_tokens share its weight; lm_head tied to it);
 *   embed_positions (MBartLearnedPositionalEmbedding: 1024 + 2 rows) 1026 x 1024 = 1,050,624 per stack: 2,101,248;
 *   layernorm_embedding 2 x 2048 = 4,096; the stacks' layer_norm 2 x 2048 = 4,096;
 *   encoder layer: q/k/v/out_proj 4 x (1024 x 1024 + 1024) = 4,198,400, fc1 1024 x 4096 + 4096 = 4,198,400, fc2
 *     4096 x 1024 + 1024 = 4,195,328, two LayerNorms 4,096: 12,596,224; x 12 = 151,154,688;
 *   decoder layer: + encoder_attn 4,198,400 and its LayerNorm 2,048 = 16,796,672; x 12 = 201,560,064;
 *   total 610,879,488 (the ~611M of the model card); final_logits_bias is a buffer.
 * mbart-large-cc25: V 250027: 27 x 1024 = 27,648 fewer: 610,851,840. */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "mbart-large-50.json", 128);
    assert_int_equal(vc_model_parameters(m), INT64_C(610879488));
    vc_model_free(m);
    assert_true(cli_json_num(HF "mbart-large-50.json --seq 128", NULL, "trainable_parameters") == INT64_C(610879488));
    assert_int_equal(count_of("{\"model_type\": \"mbart\", \"vocab_size\": 250027, \"scale_embedding\": true}"),
                     INT64_C(610851840));
}

/* the template: pre-LN, the stacks' final layer_norm, layernorm_embedding, learned positions (+ 2), mbart's shift */
static void test_layers(void **state)
{
    (void)state;
    static const char *const has[] = {"\"model.encoder.layer_norm\"", "\"model.decoder.layer_norm\"",
                                      "\"model.encoder.layernorm_embedding\"", "\"num_embeddings\":\t1026,",
                                      "\"mbart\":\ttrue", NULL};
    static const char *const lacks[] = {"\"frozen\":\ttrue", NULL};
    encdec_template(HF "mbart-large-50.json", has, lacks);
}

/* measured.json's mbart rows (run_suite.py's last two mode_cases lists, after pegasus's; every third held out):
 * each within 0.1% of the measured peak_allocated (generate: the larger of the prefill and decode peaks) */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"mbart_small.json --seq 96 -b 2 -o adamw -p fp32", 28673536},
        {"mbart_small.json --seq 64 -b 2 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 8602624},
        {"mbart_small.json -m infer --seq 128 -b 4 -p fp32", 15035392},
        {"mbart_small.json --seq 96 -b 2 -o sgd -p fp32 --grad-ckpt", 10585600},
        {"mbart_small.json -m generate --prompt 48 --new-tokens 8 -b 2 -p fp32", 4777984},
        {"mbart_small.json -m generate --prompt 64 --new-tokens 10 -b 1 -p bf16", 2519040},
        {"mbart_small.json -m generate --prompt 40 --new-tokens 6 -b 1 -p fp32 --num-beams 2", 4537856},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
}

/* the refusals: exit 2, one stderr line naming the key (or option) */
static void test_refusals(void **state)
{
    (void)state;
#define MBART_HEAD "{\"model_type\": \"mbart\", \"d_model\": 64, \"encoder_ffn_dim\": 96, \"encoder_layers\": 2, " \
                   "\"encoder_attention_heads\": 4, "
    encdec_refusals("mbart", "MBartForConditionalGeneration", MBART_HEAD, HF "mbart-large-50.json");
    static const fam_refusal c[] = {
        {"\"decoder_layerdrop\": -1", "decoder_layerdrop: expected a probability from 0 to 1"},
        {"\"forced_eos_token_id\": 50265", "forced_eos_token_id: expected a token id from 0 to vocab_size - 1 (50264)"},
        {"\"vocab_size\": 2", "forced_eos_token_id: MBartConfig's default 2 is not a token id of vocab_size 2"},
    };
    fam_refuse_edits(MBART_HEAD, c, sizeof c / sizeof *c);
#undef MBART_HEAD
    static const fam_refusal o[] = {
        {"--seq 128 --target-seq 1025", "--target-seq: 1025"},
        {"--seq 1025", "--seq: 1025"},
        {"-m generate --prompt 16 --new-tokens 1025", "--new-tokens: 1025: mbart's decoder has max_position_embeddings (1024)"},
    };
    fam_refuse_options(HF "mbart-large-50.json", o, sizeof o / sizeof *o);
    /* generate with forced_eos_token_id (MBartConfig's default 2 too: ForcedEOSTokenLogitsProcessor at the last step):
     * greedy and beams run; 4 beams hold more than one */
    encdec_beams_hold_more(HF "mbart-large-50.json");
}

ENCDEC_MAIN(ENCDEC_TESTS)
