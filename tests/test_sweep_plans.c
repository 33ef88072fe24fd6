/*
 * test_sweep_plans.c — sweeps and the max-batch search over models whose plan
 * depends on the batch (issue 16): the estimator (src/engine/sweep.c) replays a plan
 * for every batch its layers declared it holds for (vc_batch_range) and
 * builds another only outside, so
 *  - every row of a sweep must equal vc_estimate() at that batch (the
 *    sweep's contract, include/vramcalc/vramcalc.h): memory, the peak and
 *    its breakdown, the attention kernel's note, the per-layer rows;
 *  - the max-batch answer must be the largest batch whose vc_estimate()
 *    total fits, the next one not;
 *  - and the plans built stay few: one per range of batches over which the
 *    layers' choices hold, each range derived below from the layer's rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "engine.h" /* vc_bytes, and layer.h's vc_numel */

typedef struct {
    const char *name;
    const char *json;
    vc_mode mode;
    vc_precision prec;
    vc_attention attn;
    int hopper;
    const int64_t *batches; /* NULL: 1 .. 40 */
    size_t nbatches;
    size_t max_builds;      /* plans the sweep may build (the derivation is at the case) */
} sweep_case;

static vc_model *load(const sweep_case *c)
{
    vc_model *m = NULL;
    vc_error err;
    if (c->json[0] != '{') { /* a file of examples/ */
        char path[600];
        snprintf(path, sizeof path, "%s/%s", VC_EXAMPLES, c->json);
        if (vc_model_load_file(path, &m, &err)) fail_msg("%s: load: %s", path, err.msg);
        return m;
    }
    if (vc_model_load_string(c->json, strlen(c->json), c->name, &m, &err)) fail_msg("%s: load: %s", c->name, err.msg);
    return m;
}

static void options(const sweep_case *c, vc_options *o)
{
    vc_options_init(o);
    o->mode = c->mode;
    o->precision = c->prec;
    o->attention = c->attn;
    o->hopper = c->hopper;
}

/* The estimator's row at `batch` is vc_estimate's. */
static void check_row(const sweep_case *c, vc_estimator *e, const vc_model *m, vc_options *o, int64_t batch)
{
    vc_result a, f;
    vc_error err;
    o->batch = batch;
    if (vc_estimator_run(e, batch, &a, &err)) fail_msg("%s: batch %lld: %s", c->name, (long long)batch, err.msg);
    if (vc_estimate(m, o, &f, &err)) fail_msg("%s: estimate %lld: %s", c->name, (long long)batch, err.msg);
    if (memcmp(&a.memory, &f.memory, sizeof a.memory) || memcmp(&a.peak, &f.peak, sizeof a.peak))
        fail_msg("%s: batch %lld: sweep row %lld total, fresh estimate %lld", c->name, (long long)batch,
                 (long long)a.memory.total, (long long)f.memory.total);
    assert_string_equal(a.attention, f.attention);
    assert_int_equal(a.nlayers, f.nlayers);
    for (size_t i = 0; i < a.nlayers; i++) {
        assert_int_equal(a.layers[i].activations, f.layers[i].activations);
        assert_int_equal(a.layers[i].parameters, f.layers[i].parameters);
    }
    vc_result_free(&a);
    vc_result_free(&f);
}

static int64_t fresh_total(const vc_model *m, vc_options *o, int64_t batch)
{
    vc_result r;
    vc_error err;
    o->batch = batch;
    if (vc_estimate(m, o, &r, &err)) fail_msg("estimate %lld: %s", (long long)batch, err.msg);
    int64_t t = r.memory.total;
    vc_result_free(&r);
    return t;
}

static void run_loaded(const sweep_case *c, vc_model *m);

static void run_case(const sweep_case *c) { run_loaded(c, load(c)); }

/* A Hugging Face config of tests/data/hf at `seq` tokens with `loss`. */
static void run_hf(const sweep_case *c, int64_t seq, vc_loss_impl loss)
{
    char path[600];
    snprintf(path, sizeof path, "%s/hf/%s", VC_TEST_DATA, c->json);
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    hf.seq = seq;
    hf.loss = loss;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(path, &hf, &m, &err)) fail_msg("%s: load: %s", path, err.msg);
    run_loaded(c, m);
}

static void run_loaded(const sweep_case *c, vc_model *m)
{
    vc_options o;
    options(c, &o);
    vc_estimator *e;
    vc_error err;
    if (vc_estimator_new(m, &o, 0, &e, &err)) fail_msg("%s: %s", c->name, err.msg);
    size_t n = c->batches ? c->nbatches : 40;
    int64_t rows[64];
    for (size_t i = 0; i < n && i < 64; i++) rows[i] = c->batches ? c->batches[i] : (int64_t)i + 1;
    /* a sweep as the CLI runs it (src/api/request.c run_sweep): each row told the rows after it, so that a plan
     * the sweep replays more than CAND_AFTER times reads its candidate events from its first row on
     * (src/engine/replay.c vc__plan_expect_replays); without the per-layer rows (the candidates' lean pass) */
    vc_estimator *told;
    if (vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &told, &err)) fail_msg("%s: %s", c->name, err.msg);
    for (size_t i = 0; i < n; i++) {
        check_row(c, e, m, &o, c->batches ? c->batches[i] : (int64_t)i + 1);
        if (i >= 64) continue;
        vc_result a, t;
        vc__estimator_expect(told, rows + i, (n < 64 ? n : 64) - i);
        if (vc_estimator_run(told, rows[i], &t, &err) || vc_estimator_run(e, rows[i], &a, &err))
            fail_msg("%s: batch %lld: %s", c->name, (long long)rows[i], err.msg);
        if (memcmp(&a.memory, &t.memory, sizeof a.memory) || memcmp(&a.peak, &t.peak, sizeof a.peak))
            fail_msg("%s: batch %lld: the told sweep's row %lld total, the row %lld", c->name, (long long)rows[i],
                     (long long)t.memory.total, (long long)a.memory.total);
        vc_result_free(&a);
        vc_result_free(&t);
    }
    vc_estimator_free(told);
    size_t built = vc_estimator_plans_built(e);
    if (built > c->max_builds) fail_msg("%s: the sweep built %zu plans, expected at most %zu", c->name, built, c->max_builds);
    vc_estimator_free(e);

    /* --max-batch on a card that holds about batch 29: the answer is where
     * the fresh estimates cross the capacity */
    options(c, &o);
    int64_t cap = fresh_total(m, &o, 29) + (fresh_total(m, &o, 30) - fresh_total(m, &o, 29)) / 2;
    if (vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e, &err)) fail_msg("%s: %s", c->name, err.msg);
    int64_t best;
    int probes;
    if (vc_estimator_max_batch(e, cap, &best, &probes, &err)) fail_msg("%s: max batch: %s", c->name, err.msg);
    assert_true(best >= 1);
    assert_true(fresh_total(m, &o, best) <= cap);
    assert_true(fresh_total(m, &o, best + 1) > cap);
    built = vc_estimator_plans_built(e);
    if (built > c->max_builds)
        fail_msg("%s: the search built %zu plans, expected at most %zu", c->name, built, c->max_builds);
    vc_estimator_free(e);
    vc_model_free(m);
}

/* MultiheadAttention, need_weights (the explicit bmm path), training: its
 * in-projection reads the module's transposed input, contiguous only for
 * batch 1 (attention.c tr_contig): two plans, batch 1 and 2 and above. */
static const char *const mha_json =
    "{\"input\": [16, 64], \"layers\": [{\"type\": \"MultiheadAttention\", \"embed_dim\": 64, \"num_heads\": 4},"
    " {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 8}]}";

/* The same without need_weights: the SDPA path (math, flash, memory-efficient). */
static const char *const mha_sdpa_json =
    "{\"input\": [16, 64], \"layers\": [{\"type\": \"MultiheadAttention\", \"embed_dim\": 64, \"num_heads\": 4,"
    " \"dropout\": 0.1, \"need_weights\": false}]}";

/* scaled_dot_product_attention on [2 heads, 64, 64]: with p = 0 flash splits
 * the keys when batch x 2 heads x 1 query block is under 0.8 x 216 SMs
 * (sdpa.c flash_splits: batches 1 .. 86), with counts that change with the
 * batch; the efficient kernel merges its backward's temporaries (rounded
 * one by one) into one block. */
static const char *const sdpa_json =
    "{\"inputs\": {\"q\": [2, 64, 64], \"k\": [2, 64, 64], \"v\": [2, 64, 64]}, \"layers\": [{\"type\": \"Linear\","
    " \"name\": \"pq\", \"inputs\": [\"q\"], \"in_features\": 64, \"out_features\": 64}, {\"type\":"
    " \"ScaledDotProductAttention\", \"inputs\": [\"pq\", \"k\", \"v\"]}]}";

/* Head dim 160 in 16 bits: the efficient backward accumulates dK/dV outside
 * registers, with num_splits_key = min(ceil(S / 128), 200 / (batch x heads))
 * for batch x heads <= 200 (sdpa.c eff_splits_at): 3 heads, S = 300. */
static const char *const sdpa160_json =
    "{\"inputs\": {\"q\": [3, 300, 160], \"k\": [3, 300, 160], \"v\": [3, 300, 160]}, \"layers\": [{\"type\":"
    " \"Linear\", \"name\": \"pq\", \"inputs\": [\"q\"], \"in_features\": 160, \"out_features\": 160}, {\"type\":"
    " \"ScaledDotProductAttention\", \"inputs\": [\"pq\", \"k\", \"v\"], \"is_causal\": true}]}";

static const char *const tel_json =
    "{\"input\": [16, 64], \"layers\": [{\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4,"
    " \"dim_feedforward\": 128, \"batch_first\": true, \"repeat\": 3}]}";

static const char *const tdl_json =
    "{\"inputs\": {\"tgt\": [12, 32], \"memory\": [20, 32]}, \"layers\": [{\"type\": \"TransformerDecoderLayer\","
    " \"inputs\": [\"tgt\", \"memory\"], \"d_model\": 32, \"nhead\": 4, \"dim_feedforward\": 64,"
    " \"batch_first\": true, \"repeat\": 2}]}";

/* Embedding over 512 ids per sample: the backward's direct path up to 3072
 * ids (batches 1 .. 6), the sort path above (embedding.c), whose sizes follow
 * the batch while max_segments = min(ids, num_embeddings) stays on one side:
 * num_embeddings 1000 is passed from batch 2 on, so batches 7 and above share
 * a plan; with 50,000, batches 7 .. 97 (512 x 97 = 49,664 ids) and 98 and
 * above. scale_grad_by_freq takes the sort path at any batch: 16 ids per
 * sample against 1000 rows, batches 1 .. 62 and 63 and above. */
static const char *const emb_json =
    "{\"input\": {\"shape\": [512], \"dtype\": \"int64\"}, \"layers\": [{\"type\": \"Embedding\", \"num_embeddings\":"
    " 1000, \"embedding_dim\": 16}, {\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 4}]}";
static const char *const emb_big_json =
    "{\"input\": {\"shape\": [512], \"dtype\": \"int64\"}, \"layers\": [{\"type\": \"Embedding\", \"num_embeddings\":"
    " 50000, \"embedding_dim\": 24}]}";
static const int64_t emb_big_batches[] = {1, 6, 7, 8, 96, 97, 98, 99, 150, 2, 97};
static const char *const emb_freq_json =
    "{\"input\": {\"shape\": [16], \"dtype\": \"int64\"}, \"layers\": [{\"type\": \"Embedding\", \"num_embeddings\":"
    " 1000, \"embedding_dim\": 64, \"scale_grad_by_freq\": true}]}";
static const int64_t emb_freq_batches[] = {1, 2, 61, 62, 63, 64, 100, 3};

/* BatchNorm2d on a permuted (non-contiguous) [8, 1024, 1024] input: cuDNN
 * while N x 8,388,608 elements stay under 2^31 - 1 (N <= 255), native above
 * (norm.c batch_norm): two plans. */
static const char *const bn_json =
    "{\"input\": [8, 1024, 1024], \"layers\": [{\"type\": \"Permute\", \"dims\": [0, 1, 3, 2]},"
    " {\"type\": \"BatchNorm2d\", \"num_features\": 8}]}";
static const int64_t bn_batches[] = {1, 2, 254, 255, 256, 257, 300, 3, 255};

static void test_mha(void **state)
{
    (void)state;
    /* batch 1, then 2 and above (tr_contig) */
    run_case(&(sweep_case){"mha", mha_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 2});
    run_case(&(sweep_case){"mha-infer", mha_json, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 2});
}

static void test_mha_sdpa(void **state)
{
    (void)state;
    /* math (2.5+ safe softmax temporaries), efficient fp32 and 16-bit, flash in bf16 (dropout 0.1:
     * no split-KV): batch 1 (a size-1 batch dim changes the layouts) and the rest */
    run_case(&(sweep_case){"mha-math", mha_sdpa_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_MATH, 0, NULL, 0, 2});
    run_case(&(sweep_case){"mha-eff", mha_sdpa_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_EFFICIENT, 0, NULL, 0, 2});
    run_case(&(sweep_case){"mha-eff16", mha_sdpa_json, VC_MODE_TRAIN, VC_PREC_AMP_FP16, VC_ATTN_EFFICIENT, 0, NULL, 0, 2});
    run_case(&(sweep_case){"mha-flash", mha_sdpa_json, VC_MODE_TRAIN, VC_PREC_BF16, VC_ATTN_FLASH, 0, NULL, 0, 2});
    /* inference: the native fast path, SDPA-backed */
    run_case(&(sweep_case){"mha-native", mha_sdpa_json, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 2});
}

static void test_sdpa_kind(void **state)
{
    (void)state;
    /* flash, p = 0, 2 heads, L = 64 (one query block), D 64 (block_n 256: one key block):
     * num_splits_heuristic returns 1 when nblocks = 1 (max_splits 1), for every batch:
     * the ranges are batch 1 and 2 and above */
    run_case(&(sweep_case){"sdpa-flash", sdpa_json, VC_MODE_TRAIN, VC_PREC_BF16, VC_ATTN_FLASH, 0, NULL, 0, 2});
    run_case(&(sweep_case){"sdpa-eff", sdpa_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_EFFICIENT, 0, NULL, 0, 2});
    run_case(&(sweep_case){"sdpa-math", sdpa_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_MATH, 0, NULL, 0, 2});
    /* efficient, fp16, D 160, 3 heads, S 300 (bj 128): splits = min(3, 200 / (3N)) for 3N <= 200:
     * 3 for N 1..22, 2 for N 23..33, 1 above (200 / 3N = 1 for N 34..66, 0 -> 1 above):
     * ranges {1}, 2..22, 23..33, 34.. : 4 plans */
    run_case(&(sweep_case){"sdpa-eff160", sdpa160_json, VC_MODE_TRAIN, VC_PREC_FP16, VC_ATTN_EFFICIENT, 0, NULL, 0, 4});
    /* flash, fp16, D 160 (block_n 64: 5 key blocks), S 300, 3 heads, 5 query blocks: bhm = 15N is
     * under 0.8 x 216 = 172.8 for N <= 11 and the split count follows the batch there; the
     * sweep's plans are at most 11 + 1 (and batch 1 is one of the 11) */
    run_case(&(sweep_case){"sdpa-flash160", sdpa160_json, VC_MODE_INFER, VC_PREC_FP16, VC_ATTN_FLASH, 0, NULL, 0, 12});
    run_case(&(sweep_case){"sdpa-flash160-h", sdpa160_json, VC_MODE_INFER, VC_PREC_FP16, VC_ATTN_FLASH, 1, NULL, 0, 15});
}

static void test_transformer_layers(void **state)
{
    (void)state;
    run_case(&(sweep_case){"tel", tel_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 2});
    run_case(&(sweep_case){"tel-amp", tel_json, VC_MODE_TRAIN, VC_PREC_AMP_BF16, VC_ATTN_AUTO, 0, NULL, 0, 2});
    run_case(&(sweep_case){"tel-infer", tel_json, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 2});
    run_case(&(sweep_case){"tdl", tdl_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 2});
    run_case(&(sweep_case){"tdl-math", tdl_json, VC_MODE_TRAIN, VC_PREC_MIXED_FP16, VC_ATTN_MATH, 0, NULL, 0, 2});
}

static void test_embedding_and_norm(void **state)
{
    (void)state;
    run_case(&(sweep_case){"emb", emb_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 2});
    run_case(&(sweep_case){"emb-big", emb_big_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, emb_big_batches,
                           sizeof emb_big_batches / sizeof *emb_big_batches, 3});
    run_case(&(sweep_case){"emb-freq", emb_freq_json, VC_MODE_TRAIN, VC_PREC_BF16, VC_ATTN_AUTO, 0, emb_freq_batches,
                           sizeof emb_freq_batches / sizeof *emb_freq_batches, 2});
    run_case(&(sweep_case){"bn", bn_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, bn_batches,
                           sizeof bn_batches / sizeof *bn_batches, 2});
}

/* Whole models of examples/: GPT-2 small (1024 ids per sample against 50,257
 * rows: the direct path up to batch 3, then the sort path with max_segments
 * = ids up to batch 49 (50,176 ids), then the rows; flash attention in 16
 * bits): batch 1, 2 .. 3, 4 .. 49, 50 and above, 4 plans. BERT-base (512
 * ids against 30,522 rows: batch 1, 2 .. 6, 7 .. 59, 60 and above) and
 * ViT-B/16 (197 tokens, not a multiple of 8: the kernels' temporaries are
 * rounded one by one; batch 1 and the rest). */
static const int64_t model_batches[] = {1, 2, 3, 8, 17, 49, 50, 64};

static void test_example_models(void **state)
{
    (void)state;
    const size_t nb = sizeof model_batches / sizeof *model_batches;
    run_case(&(sweep_case){"gpt2", "gpt2_small.json", VC_MODE_TRAIN, VC_PREC_AMP_BF16, VC_ATTN_AUTO, 0, model_batches, nb, 4});
    run_case(&(sweep_case){"bert", "bert_base.json", VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, model_batches, nb, 4});
    run_case(&(sweep_case){"vit", "vit_b_16.json", VC_MODE_TRAIN, VC_PREC_AMP_FP16, VC_ATTN_AUTO, 1, model_batches, nb, 2});
    run_case(&(sweep_case){"vit-math", "vit_b_16.json", VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_MATH, 0, model_batches, nb, 2});
}

/* SparseMoE (layers/llm.c moe_rows): expert e of E gets the assignments j in
 * [0, B x L x k) with j mod E = e, floor((B L k + E - 1 - e) / E) of them, a
 * floor count (vc_n_floor) evaluated per batch: one plan for every batch. L k
 * = 10 against E = 6 leaves a remainder at most batches (B = 1: 2, 2, 2, 2,
 * 1, 1 rows); L = 1, k = 1, E = 4 gives experts with no rows (B = 1: 1, 0, 0,
 * 0), and the shared expert (qwen2_moe style) adds per-sample tensors. */
static const char *const moe_json =
    "{\"input\": [5, 16], \"layers\": [{\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 16},"
    " {\"type\": \"SparseMoE\", \"hidden_size\": 16, \"intermediate_size\": 24, \"num_experts\": 6, \"top_k\": 2}]}";
static const char *const moe_zero_json =
    "{\"input\": [1, 8], \"layers\": [{\"type\": \"SparseMoE\", \"hidden_size\": 8, \"intermediate_size\": 40,"
    " \"num_experts\": 4, \"top_k\": 1, \"style\": \"qwen2_moe\", \"shared_expert_intermediate_size\": 12}]}";
/* moe_imbalance > 1: the busiest expert's ceil(F T k / E) is computed in floating point, not a
 * floor count: the plan holds for its batch only, one per row (40) and at most a few grid
 * batches more for the search */
static const char *const moe_imb_json =
    "{\"input\": [3, 8], \"layers\": [{\"type\": \"SparseMoE\", \"hidden_size\": 8, \"intermediate_size\": 8,"
    " \"num_experts\": 4, \"top_k\": 2, \"moe_imbalance\": 1.7}]}";

/* The floor count's evaluation rule (layers/layer.h vc_numel): floor((ps B +
 * fx) / div) x mul elements, counted here by brute force over the routing's
 * assignments j = 0 .. B L k - 1 (expert j mod E, moe_tokens' round robin). */
static void test_floor_numel(void **state)
{
    (void)state;
    for (int64_t E = 1; E <= 9; E++)
        for (int64_t Lk = 1; Lk <= 12; Lk++)
            for (int64_t B = 1; B <= 7; B++) {
                int64_t sum = 0;
                for (int64_t e = 0; e < E; e++) {
                    int64_t count = 0;
                    for (int64_t j = 0; j < B * Lk; j++) count += j % E == e;
                    vc_numel n = vc_n_floor(Lk, E - 1 - e, (int32_t)E);
                    assert_int_equal(vc_n_at(n, B), count);
                    assert_int_equal(vc_n_at(vc_n_scale(n, 16), B), 16 * count); /* rows x hidden */
                    assert_int_equal(vc_n_at(vc_n_scale(vc_n_scale(n, 2), 3), B), 6 * count);
                    sum += vc_n_at(n, B);
                }
                assert_int_equal(sum, B * Lk); /* every assignment goes to one expert */
            }
    /* bytes: the caching allocator's 512-byte blocks of the count at the batch: B = 3, 7 x 3 + 2 =
     * 23 elements / 4 = 5 (floor) x 100 = 500 fp32 elements = 2,000 bytes -> 2,048; zero stays zero */
    vc_numel n = vc_n_scale(vc_n_floor(7, 2, 4), 100);
    assert_int_equal(vc_bytes(n, VC_DT_F32, 3), 2048);
    assert_int_equal(vc_bytes(vc_n_floor(1, 0, 4), VC_DT_F32, 3), 0); /* floor(3 / 4) = 0 elements */
    /* cut cross-entropy's lock table: cdiv(N, 128) for N = 999 x B tokens, B = 5: 4,995 -> 40 */
    assert_int_equal(vc_n_at(vc_n_floor(999, 127, 128), 5), 40);
    /* overflow: -1, as vc_bytes' */
    assert_int_equal(vc_n_at(vc_n_floor(INT64_MAX / 2, 0, 3), 3), -1);
    assert_int_equal(vc_bytes(vc_n_floor(INT64_MAX / 2, 0, 3), VC_DT_F32, 3), -1);
    /* div 1 is a plain count: scale multiplies ps and fx */
    vc_numel p = vc_n_scale(vc_n_floor(3, 4, 1), 5);
    assert_int_equal(p.ps, 15);
    assert_int_equal(p.fx, 20);
    /* the same count at every batch, not equal values at one batch */
    assert_true(vc_n_same(vc_n_floor(3, 4, 1), vc_n_sample(3)) == false);
    assert_true(vc_n_same(vc_n_floor(3, 0, 1), vc_n_sample(3)));
    assert_true(vc_n_same(vc_n_scale(vc_n_floor(3, 1, 2), 1), vc_n_floor(3, 1, 2)));
    assert_false(vc_n_same(vc_n_scale(vc_n_floor(3, 1, 2), 2), vc_n_floor(3, 1, 2)));
}

static void test_moe(void **state)
{
    (void)state;
    /* one plan for every batch, training and inference, fp32 and bf16 */
    run_case(&(sweep_case){"moe", moe_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 1});
    run_case(&(sweep_case){"moe-bf16", moe_json, VC_MODE_TRAIN, VC_PREC_AMP_BF16, VC_ATTN_AUTO, 0, NULL, 0, 1});
    run_case(&(sweep_case){"moe-infer", moe_json, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 1});
    run_case(&(sweep_case){"moe-zero", moe_zero_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 1});
    run_case(&(sweep_case){"moe-imbalance", moe_imb_json, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, NULL, 0, 64});
}

/* The Hugging Face MoE configs (tests/data/hf) at short sequences: Mixtral (8 experts, top 2;
 * seq 12: L k = 24 is a multiple of 8, seq 13: it is not) and Qwen1.5-MoE (60 experts, top 4,
 * the shared expert; seq 13: 52 assignments a sample). Their attention (sdpa, auto) picks its
 * kernel by the batch: batch 1 and the rest (the sdpa cases above), so at most 2 plans; under
 * 16-bit flash the split count follows the batch while batch x heads x query blocks is under
 * 0.8 x SMs. Cut Cross-Entropy's lock tables (cdiv(N, 128), N = (L - 1) x B) are floor counts
 * too. */
static const int64_t hf_batches[] = {1, 2, 3, 5, 8, 13, 21, 34, 40, 64, 100, 7};

static void test_moe_hf(void **state)
{
    (void)state;
    const size_t nb = sizeof hf_batches / sizeof *hf_batches;
    run_hf(&(sweep_case){"mixtral", "mixtral-8x7b-v0.1.json", VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, hf_batches, nb, 2},
           12, VC_LOSS_IMPL_HF);
    run_hf(&(sweep_case){"mixtral-13", "mixtral-8x7b-v0.1.json", VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO, 0, hf_batches, nb, 2},
           13, VC_LOSS_IMPL_HF);
    run_hf(&(sweep_case){"qwen-moe", "qwen1.5-moe-a2.7b.json", VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO, 0, hf_batches, nb, 2},
           13, VC_LOSS_IMPL_HF);
    run_hf(&(sweep_case){"qwen-moe-cce", "qwen1.5-moe-a2.7b.json", VC_MODE_TRAIN, VC_PREC_BF16, VC_ATTN_MATH, 0, hf_batches, nb, 2},
           13, VC_LOSS_IMPL_CCE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mha),           cmocka_unit_test(test_mha_sdpa),
        cmocka_unit_test(test_sdpa_kind),     cmocka_unit_test(test_transformer_layers),
        cmocka_unit_test(test_embedding_and_norm), cmocka_unit_test(test_example_models),
        cmocka_unit_test(test_floor_numel), cmocka_unit_test(test_moe), cmocka_unit_test(test_moe_hf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
