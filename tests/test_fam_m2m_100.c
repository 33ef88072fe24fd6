/*
 * test_fam_m2m_100.c — model_type "m2m_100" (issue 31; src/hf/hf_bart.c's m2m_100 variant of the bart row),
 * M2M100ForConditionalGeneration as models/m2m_100/modeling_m2m_100.py runs it at huggingface/transformers @ efa7189c
 * (the bart row's commit): facebook/m2m100_418M, m2m100_1.2B and NLLB-200 (facebook/nllb-200-distilled-600M,
 * nllb-200-distilled-1.3B, nllb-200-3.3B are m2m_100 configs). M2M100ScaledWordEmbedding (bart's), the pre-LN
 * M2M100EncoderLayer / M2M100DecoderLayer ("Copied from" MBart's) and each stack's final layer_norm, no
 * layernorm_embedding, no final_logits_bias, bart's shift_tokens_right, and M2M100SinusoidalPositionalEmbedding: a
 * non-persistent buffer (register_buffer("weights", ..., persistent=False), no parameter) of max_position_embeddings + 2
 * rows indexed by create_position_ids_from_input_ids (layers/bart.c M2M100Positions).
 *
 * 1. The checkpoints' parameters: exact, by hand from the __init__s (below); bench/accuracy/llm/bart_replica.py
 *    (model_type m2m_100) counts the same on the meta device. The configs are written without network:
 *    tests/data/hf/m2m100_418M.json from M2M100Config.__init__'s defaults (configuration_m2m_100.py @04591daa, the
 *    stored version: its docstring names m2m100_418M as the defaults' model) with the Hub's pad 1 / eos 2 / decoder
 *    start 2 and layerdrop 0.05; tests/data/hf/nllb-200-distilled-600M.json from the NLLB-200 model card's sizes
 *    (vocab_size 256206, d_model 1024, 12 + 12 layers of 16 heads, ffn 4096) and M2M100Config's defaults for the rest
 *    (its dropouts and layerdrop 0 unverified: no size depends on them). The 1.2B / 1.3B / 3.3B sizes (24 + 24 layers,
 *    ffn 8192; 3.3B d_model 2048) are from the model cards, written inline.
 * 2. The layers: the buffer (not a parameter), pre-LN, final norms, no layernorm_embedding, no final_logits_bias.
 * 3. The measured cases of bench/accuracy/llm/measured.json (bart_replica.py, torch 1.13 CPU, the allocator counter).
 * 4. Refusals: exit 2 and one line naming the key or option.
 */
#include "fam_encdec.h"

/* M2M100ForConditionalGeneration by hand (modeling_m2m_100.py @efa7189c __init__s), d_model 1024, 16 heads:
 *   shared V x 1024 (both stacks' embed_tokens are M2M100ScaledWordEmbedding modules given shared's weight; lm_head
 *     nn.Linear(d_model, V, bias=False) tied to it: one tensor);
 *   embed_positions: buffers, no parameters ((1024 + 2) x 1024 values per stack);
 *   encoder layer: q/k/v/out_proj 4 x (1024 x 1024 + 1024) = 4,198,400, two LayerNorms 4,096, fc1 1024 x F + F,
 *     fc2 F x 1024 + 1024: F 4096: 12,596,224; F 8192: 20,988,928;
 *   decoder layer: + encoder_attn 4,198,400 and its LayerNorm 2,048: F 4096: 16,796,672; F 8192: 25,189,376;
 *   the stacks' layer_norm 2 x 2,048 = 4,096.
 * m2m100_418M (V 128112, 12 + 12, F 4096): 131,186,688 + 151,154,688 + 201,560,064 + 4,096 = 483,905,536 (the
 *   checkpoint's name says 418M: the count the fairseq release gave, not sum(p.numel()) of this module);
 * nllb-200-distilled-600M (V 256206): 262,354,944 + 352,718,848 = 615,073,792 (published as "600M");
 * m2m100_1.2B (V 128112, 24 + 24, F 8192): 131,186,688 + 503,734,272 + 604,545,024 + 4,096 = 1,239,470,080;
 * nllb-200-distilled-1.3B (V 256206, 24 + 24, F 8192): 262,354,944 + 1,108,283,392 = 1,370,638,336;
 * nllb-200-3.3B (V 256206, d_model 2048, 24 + 24, F 8192): shared 524,709,888, encoder layer 4 x (2048^2 + 2048) +
 *   8,192 + 2048 x 8192 + 8192 + 8192 x 2048 + 2048 = 50,358,272 (x 24 = 1,208,598,528), decoder layer + 16,785,408 +
 *   4,096 = 67,147,776 (x 24 = 1,611,546,624), final norms 8,192: 3,344,863,232. */
#define BIG "\"model_type\": \"m2m_100\", \"encoder_layers\": 24, \"decoder_layers\": 24, \"encoder_ffn_dim\": 8192, " \
            "\"decoder_ffn_dim\": 8192"
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = fam_load_file(HF "m2m100_418M.json", 128);
    assert_int_equal(vc_model_parameters(m), INT64_C(483905536));
    vc_model_free(m);
    m = fam_load_file(HF "nllb-200-distilled-600M.json", 128);
    assert_int_equal(vc_model_parameters(m), INT64_C(615073792));
    vc_model_free(m);
    assert_true(cli_json_num(HF "nllb-200-distilled-600M.json --seq 128", NULL, "trainable_parameters") ==
                INT64_C(615073792));
    /* M2M100Config's defaults are m2m100_418M's sizes */
    assert_int_equal(count_of("{\"model_type\": \"m2m_100\"}"), INT64_C(483905536));
    assert_int_equal(count_of("{" BIG "}"), INT64_C(1239470080));
    assert_int_equal(count_of("{" BIG ", \"vocab_size\": 256206}"), INT64_C(1370638336));
    assert_int_equal(count_of("{" BIG ", \"vocab_size\": 256206, \"d_model\": 2048}"), INT64_C(3344863232));
    /* the two position buffers are weights' bytes beside the parameters: 2 x 1026 x 1024 fp32 values */
    assert_true(cli_json_num(HF "m2m100_418M.json --seq 128 -m infer", "memory", "weights") ==
                INT64_C(483905536) * 4 + 2 * 1026 * 1024 * 4);
}
#undef BIG

/* the template: the positions' buffer of max_position_embeddings + 2 rows indexed from padding_idx, pre-LN, the
 * stacks' final layer_norm; no layernorm_embedding, no final_logits_bias, no learned or frozen position table */
static void test_layers(void **state)
{
    (void)state;
    static const char *const has[] = {"\"M2M100Positions\"", "\"num_embeddings\":\t1026,", "\"padding_idx\":\t1",
                                      "\"model.encoder.layer_norm\"", "\"model.decoder.layer_norm\"", "\"ReLU\"", NULL};
    static const char *const lacks[] = {"layernorm_embedding", "\"BartLogitsBias\"", "\"PositionEmbedding\"",
                                        "\"frozen\":\ttrue", "\"mbart\":\ttrue", NULL};
    encdec_template(HF "nllb-200-distilled-600M.json", has, lacks);
}

/* measured.json's m2m_100 rows (run_suite.py's last two mode_cases lists, after mbart's; every third held out): each
 * within 0.1% of the measured peak_allocated (generate: the larger of the prefill and decode peaks; training and infer
 * equal, generation -0.06%..-0.02%) */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured c[] = {
        {"m2m100_small.json --seq 96 -b 2 -o adamw -p fp32", 26698240},
        {"m2m100_small.json --seq 64 -b 2 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 8432640},
        {"m2m100_small.json -m infer --seq 128 -b 4 -p fp32", 10929152},
        {"m2m100_small.json --seq 96 -b 2 -o sgd -p fp32 --grad-ckpt", 10168832},
        {"m2m100_small.json -m generate --prompt 48 --new-tokens 8 -b 2 -p fp32", 4767744},
        {"m2m100_small.json -m generate --prompt 64 --new-tokens 10 -b 1 -p bf16", 2512896},
        {"m2m100_small.json -m generate --prompt 40 --new-tokens 6 -b 1 -p fp32 --num-beams 2", 4527616},
    };
    assert_measured(c, sizeof c / sizeof *c, "", 0.1);
}

/* the refusals: exit 2, one stderr line naming the key (or option) */
static void test_refusals(void **state)
{
    (void)state;
#define M2M_HEAD "{\"model_type\": \"m2m_100\", \"vocab_size\": 1000, \"d_model\": 64, \"encoder_ffn_dim\": 96, " \
                 "\"encoder_layers\": 2, \"encoder_attention_heads\": 4, \"max_position_embeddings\": 128, "
    encdec_refusals("m2m_100", "M2M100ForConditionalGeneration", M2M_HEAD, HF "nllb-200-distilled-600M.json");
    static const fam_refusal c[] = {
        {"\"encoder_layerdrop\": 1.5", "encoder_layerdrop: expected a probability from 0 to 1"},
        /* the positions' padding_idx: below vocab_size, a row of the max_position_embeddings + 2 table */
        {"\"pad_token_id\": 1000", "pad_token_id: expected a token id from 0 to 128"},
        {"\"pad_token_id\": 129", "pad_token_id: expected a token id from 0 to 128"},
        {"\"pad_token_id\": -1", "pad_token_id: expected a token id"},
        {"\"pad_token_id\": \"1\"", "pad_token_id: expected a token id"},
        {"\"forced_bos_token_id\": 1000", "forced_bos_token_id: expected a token id from 0 to vocab_size - 1 (999)"},
    };
    fam_refuse_edits(M2M_HEAD, c, sizeof c / sizeof *c);
    /* pad_token_id 3: the buffer is rebuilt once 3 + 1 + the positions pass its 130 rows: 126 positions at most */
    char p[] = "/tmp/vc_m2mXXXXXX", a[300];
    fam_write(p, M2M_HEAD "\"pad_token_id\": 3}");
    snprintf(a, sizeof a, "%s --seq 126", p);
    assert_true(cli_json_num(a, "memory", "peak_allocated") > 0);
    snprintf(a, sizeof a, "%s --seq 127", p);
    assert_usage(a, "--seq: 127 tokens: past max_position_embeddings + 1 - pad_token_id (126)");
    snprintf(a, sizeof a, "%s --seq 64 --target-seq 127", p);
    assert_usage(a, "--target-seq: 127 tokens: past max_position_embeddings + 1 - pad_token_id (126)");
    snprintf(a, sizeof a, "%s -m generate --prompt 16 --new-tokens 127", p);
    assert_usage(a, "--new-tokens: 127: past max_position_embeddings + 1 - pad_token_id (126)");
    snprintf(a, sizeof a, "%s -m generate --prompt 16 --new-tokens 126", p);
    assert_true(cli_json_num(a, "generate", "decode_peak") > 0);
    remove(p);
#undef M2M_HEAD
    static const fam_refusal o[] = {
        {"--seq 1025", "--seq: 1025 tokens: m2m_100 has 1024 sinusoidal positions"},
        {"--seq 128 --target-seq 1025", "--target-seq: 1025 tokens: past max_position_embeddings + 1 - pad_token_id (1024)"},
        {"-m generate --prompt 16 --new-tokens 1025", "--new-tokens: 1025: past max_position_embeddings + 1 - pad_token_id"},
        /* PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no m2m_100 */
        {"--seq 128 --lora 8", "--lora needs --lora-targets"},
    };
    fam_refuse_options(HF "nllb-200-distilled-600M.json", o, sizeof o / sizeof *o);
    encdec_beams_hold_more(HF "nllb-200-distilled-600M.json");
}

ENCDEC_MAIN(ENCDEC_TESTS)
