/*
 * test_fam_marian.c — model_type "marian" (issue 31; src/hf/hf_bart.c's marian variant of the bart row),
 * MarianMTModel as models/marian/modeling_marian.py runs it at huggingface/transformers @ 00b676f8 (MarianAttention
 * and the layers "Copied from" bart's: the bart row's BartSdpaAttention @ efa7189c).
 *
 * 1. Helsinki-NLP/opus-mt-en-de's parameters: by hand from the module shapes, which
 *    bench/accuracy/llm/bart_replica.py (model_type marian) counts on the meta device too.
 *    tests/data/hf/opus-mt-en-de.json is written from the keys of the Hub's config.json as a stored page quotes them
 *    (d_model 512, 6 + 6 layers of 8 heads, ffn 2048, vocab_size = decoder_vocab_size 58101, 512 positions, swish,
 *    scale_embedding, share_encoder_decoder_embeddings, bad_words_ids [[58100]]): the file itself was not read.
 * 2. The layers: sinusoidal positions (max_position_embeddings rows, frozen), no layernorm_embedding.
 * 3. The measured cases of bench/accuracy/llm/measured.json (bart_replica.py, torch 1.13 CPU, the allocator counter;
 *    --attention math, --workspace 0): training, LoRA, infer, generate (greedy, 2 beams).
 * 4. Refusals: exit 2 and one line naming the key or option.
 */
#include "fam_encdec.h"
#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

/* MarianMTModel by hand (modeling_marian.py @00b676f8 __init__s), opus-mt-en-de: V 58101, d_model 512, 6 + 6 layers,
 * ffn 2048, 512 positions:
 *   shared 58101 x 512 = 29,747,712 (both stacks' embed_tokens and the tied lm_head: one tensor);
 *   embed_positions (MarianSinusoidalPositionalEmbedding, an nn.Embedding whose weight is an nn.Parameter with
 *     requires_grad False: counted by sum(p.numel()), not trained) 512 x 512 = 262,144 per stack;
 *   encoder layer: q/k/v/out_proj 4 x (512 x 512 + 512) = 1,050,624, self_attn_layer_norm 1,024,
 *     fc1 512 x 2048 + 2048 = 1,050,624, fc2 2048 x 512 + 512 = 1,049,088, final_layer_norm 1,024: 3,152,384;
 *     x 6 = 18,914,304;
 *   decoder layer: + encoder_attn 1,050,624 and its norm 1,024 = 4,204,032; x 6 = 25,224,192;
 *   total 74,410,496 (the ~74 M published for the checkpoint; bart_replica.py counts the same), trainable
 *   73,886,208 (less the two position tables). final_logits_bias is a buffer (58,101 values, no parameter). */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "opus-mt-en-de.json", 128);
    assert_int_equal(vc_model_parameters(m), INT64_C(74410496));
    vc_model_free(m);
    assert_true(cli_json_num(HF "opus-mt-en-de.json --seq 128", NULL, "trainable_parameters") == INT64_C(73886208));
    /* marian_unshared_small (share_encoder_decoder_embeddings false): the encoder's and decoder's embed_tokens deep
     * copies of shared (1500 x 96 each), lm_head tied to the decoder's; 384 positions per stack; 2 encoder layers
     * of 4 heads, 3 decoder layers of 6: 2 x 144,000 + 2 x 36,864 + 2 x (4 x 9312 + 192 + 96 x 256 + 256 + 256 x
     * 96 + 96 + 192) + 3 x (8 x 9312 + 3 x 192 + 96 x 320 + 320 + 320 x 96 + 96) = 288,000 + 73,728 + 174,272 +
     * 410,784 = 946,784 (bart_replica.py counts the same) */
    m = fam_load_file(LLMCFG "marian_unshared_small.json", 64);
    assert_int_equal(vc_model_parameters(m), INT64_C(946784));
    vc_model_free(m);
}

/* the template: sinusoidal positions of max_position_embeddings rows (frozen), no layernorm_embedding, the bias */
static void test_layers(void **state)
{
    (void)state;
    static const char *const has[] = {"\"BartLogitsBias\"", "\"num_embeddings\":\t512,", "\"frozen\":\ttrue",
                                      "\"SiLU\"" /* activation_function swish: ACT2FN's SiLU */, NULL};
    static const char *const lacks[] = {"\"num_embeddings\":\t514", "layernorm_embedding", NULL};
    encdec_template(HF "opus-mt-en-de.json", has, lacks);
}

/* measured.json's marian rows (run_suite.py's last two mode_cases lists, after the mixtral --liger rows; every third
 * held out): each equal to the measured peak_allocated (the larger of the prefill and decode peaks under generate) */
static void test_measured(void **state)
{
    (void)state;
#define LQV " --lora 8 --lora-alpha 16 --lora-dropout 0 --lora-targets q_proj,v_proj"
    static const cli_measured c[] = {
        {"marian_small.json --seq 96 -b 2 -o adamw -p fp32", 27726336},
        {"marian_small.json --seq 64 -b 2 -o adamw -p bf16" LQV, 8597504},
        {"marian_small.json -m infer --seq 128 -b 4 -p fp32", 15029248},
        {"marian_small.json --seq 96 -b 2 -o adamw -p fp32 --grad-ckpt" LQV, 9851904},
        {"marian_unshared_small.json --seq 80 -b 2 -o sgd -p fp32 --grad-ckpt", 7946752},
        {"marian_unshared_small.json --seq 64 -b 2 -o adamw -p bf16", 10506752},
        {"marian_unshared_small.json -m infer --seq 96 -b 2 -p bf16", 3859456},
        /* generate: the larger of the prefill and decode peaks (each within -0.07%..-0.02% of its own) */
        {"marian_small.json -m generate --prompt 48 --new-tokens 8 -b 2 -p fp32", 4698112},
        {"marian_unshared_small.json -m generate --prompt 64 --new-tokens 10 -b 1 -p bf16", 2242048},
        {"marian_small.json -m generate --prompt 40 --new-tokens 6 -b 1 -p fp32 --num-beams 2", 4530176},
        {"marian_unshared_small.json -m generate --prompt 32 --new-tokens 6 -b 2 -p fp32 --num-beams 2", 4322304},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
#undef LQV
}

/* the refusals: exit 2, one stderr line naming the key (or option) */
static void test_refusals(void **state)
{
    (void)state;
    static const fam_refusal c[] = {
        {"\"share_encoder_decoder_embeddings\": 1", "share_encoder_decoder_embeddings: expected true or false"},
        {"\"decoder_vocab_size\": -1", "decoder_vocab_size: expected a whole number from 0 (vocab_size) to 2^40"},
        {"\"decoder_vocab_size\": 2.5", "decoder_vocab_size: expected a whole number from 0 (vocab_size) to 2^40"},
        {"\"decoder_vocab_size\": \"1000\"", "decoder_vocab_size: expected a whole number from 0 (vocab_size) to 2^40"},
        /* shared: lm_head has vocab_size rows, the loss views the logits as (-1, decoder_vocab_size) */
        {"\"decoder_vocab_size\": 999", "decoder_vocab_size: 999 with share_encoder_decoder_embeddings"},
        /* not shared, tied: tie_weights gives lm_head the decoder's vocab_size rows */
        {"\"share_encoder_decoder_embeddings\": false, \"decoder_vocab_size\": 999",
         "decoder_vocab_size: 999 beside vocab_size 1000 with tie_word_embeddings"},
        /* NoBadWordsLogitsProcessor._validate_arguments / _prepare_bias_variables: ValueError */
        {"\"bad_words_ids\": []", "bad_words_ids: expected a non-empty list of non-empty lists of token ids from 0 to 999"},
        {"\"bad_words_ids\": [5]", "bad_words_ids: expected a non-empty list of non-empty lists of token ids from 0 to 999"},
        {"\"bad_words_ids\": [[1000]]", "bad_words_ids: expected a non-empty list of non-empty lists of token ids"},
        {"\"bad_words_ids\": [[-1]]", "bad_words_ids: expected a non-empty list of non-empty lists of token ids"},
    };
#define MARIAN_BASE "{\"model_type\": \"marian\", \"vocab_size\": 1000, \"d_model\": 64, \"encoder_ffn_dim\": 96, " \
                    "\"encoder_layers\": 2, \"encoder_attention_heads\": 4, "
#define MARIAN_HEAD MARIAN_BASE "\"decoder_layers\": 2, \"decoder_attention_heads\": 4, \"decoder_ffn_dim\": 96, " \
                                "\"max_position_embeddings\": 128, "
    fam_refuse_edits(MARIAN_HEAD, c, sizeof c / sizeof *c);
    /* not shared and untied: decoder_vocab_size is lm_head's (and final_logits_bias's) alone: 999 x 64 more than
     * the tied model's none, the decoder's embed_tokens a second 1000 x 64 copy */
    char p[] = "/tmp/vc_mrXXXXXX";
    fam_write(p, MARIAN_HEAD "\"share_encoder_decoder_embeddings\": false, \"decoder_vocab_size\": 999, "
                             "\"tie_word_embeddings\": false}");
    char a[200];
    snprintf(a, sizeof a, "%s --seq 64", p);
    const int64_t untied = cli_json_num(a, NULL, "parameters");
    remove(p);
    strcpy(p, "/tmp/vc_mrXXXXXX");
    fam_write(p, MARIAN_HEAD "\"decoder_vocab_size\": 0}"); /* `decoder_vocab_size or vocab_size` */
    snprintf(a, sizeof a, "%s --seq 64", p);
    assert_int_equal(untied - cli_json_num(a, NULL, "parameters"), 999 * 64 + 1000 * 64);
    remove(p);
    /* a bad word of two tokens (SequenceBiasLogitsProcessor's per-step matching) is refused under generate alone */
    strcpy(p, "/tmp/vc_mrXXXXXX");
    fam_write(p, MARIAN_HEAD "\"bad_words_ids\": [[5, 6], [7]]}");
    snprintf(a, sizeof a, "%s -m generate --prompt 32 --new-tokens 16", p);
    assert_usage(a, "bad_words_ids: marian: generate()'s logits processor for this key is not modelled");
    snprintf(a, sizeof a, "%s --seq 32", p);
    assert_true(cli_json_num(a, "memory", "peak_allocated") > 0);
    remove(p);
    encdec_refusals("marian", "MarianMTModel", MARIAN_BASE, HF "opus-mt-en-de.json");
#undef MARIAN_HEAD
#undef MARIAN_BASE
    static const fam_refusal o[] = {
        {"--seq 128 --target-seq 513", "--target-seq: 513 decoder tokens: marian's decoder has 512 sinusoidal positions"},
        {"--seq 1024", "--seq: 1024 tokens: marian has 512 sinusoidal positions"},
    };
    fam_refuse_options(HF "opus-mt-en-de.json", o, sizeof o / sizeof *o);
}

/* generate() of opus-mt-en-de: its bad_words_ids [[58100]] make NoBadWordsLogitsProcessor (length_1_bias [V] once,
 * zeros_like and an add of [rows, V] float32 every step: more than without the key); greedy and beams run; the
 * decoder's sinusoidal table has max_position_embeddings rows (no offset): 512 new tokens at most (the last one is
 * never fed) */
static void test_generate(void **state)
{
    (void)state;
    /* measured.json's marian_gen_small rows (marian_small with bad_words_ids [[1999]], its pad): greedy fp32 and bf16,
     * 2 beams; the larger of the prefill and decode peaks */
    static const cli_measured c[] = {
        {"marian_gen_small.json -m generate --prompt 48 --new-tokens 8 -b 2 -p fp32", 4698112},
        {"marian_gen_small.json -m generate --prompt 64 --new-tokens 10 -b 1 -p bf16", 2497536},
        /* 2 beams: +0.32% until the previous step's `log_probs + running_beam_scores` was freed at the next
         * log_softmax that rebinds its name (src/engine/generate.c beam_step_end), not after this step's sum */
        {"marian_gen_small.json -m generate --prompt 40 --new-tokens 6 -b 1 -p fp32 --num-beams 2", 4539392},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
    FILE *f = fopen(HF "opus-mt-en-de.json", "r");
    assert_non_null(f);
    char body[4096];
    size_t n = fread(body, 1, sizeof body - 1, f);
    fclose(f);
    body[n] = 0;
    char *b = strstr(body, "\"bad_words_ids\"");
    assert_non_null(b);
    memmove(b, strchr(b, '\n') + 1, strlen(strchr(b, '\n') + 1) + 1); /* that line out */
    char p[] = "/tmp/vc_mgXXXXXX", a[300];
    fam_write(p, body);
    snprintf(a, sizeof a, "%s -m generate --prompt 128 --new-tokens 64", p);
    const int64_t plain = cli_json_num(a, "generate", "decode_peak");
    const int64_t greedy = cli_json_num(HF "opus-mt-en-de.json -m generate --prompt 128 --new-tokens 64", "generate", "decode_peak");
    assert_true(greedy > plain);
    assert_true(cli_json_num(HF "opus-mt-en-de.json -m generate --prompt 128 --new-tokens 64 --num-beams 4", "generate",
                             "decode_peak") > greedy);
    snprintf(a, sizeof a, "%s -m generate --prompt 16 --new-tokens 512", p);
    assert_true(cli_json_num(a, "generate", "decode_peak") > 0);
    snprintf(a, sizeof a, "%s -m generate --prompt 16 --new-tokens 513", p);
    assert_usage(a, "--new-tokens: 513: marian's decoder has max_position_embeddings (512) positions");
    remove(p);
}

ENCDEC_MAIN(ENCDEC_TESTS, cmocka_unit_test(test_generate))
