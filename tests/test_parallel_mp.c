/*
 * test_parallel_mp.c — model parallelism: Megatron's tensor and sequence
 * parallelism (--tp, --sp; src/hf/hf_tp.c) and its pipeline parallelism (--pp;
 * src/parallel/pipeline.c), each expected value derived by hand from Megatron's source
 * (docs/parallel.md 2.6) or from the single-GPU estimate it must equal.
 */
#include "cli_spelt.h"
#include "parallel_test.h"

/* ---- Megatron tensor and sequence parallelism (--tp, --sp; src/hf/hf_tp.c) ----
 * MEG = NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553; K =
 * Korthikanti et al., arXiv:2205.05198, Table 2 (docs/parallel.md 2.6, 3). */

#define TP_DATA VC_TEST_DATA "/"

static vc_model *load_tp(const char *file, int64_t seq, int64_t tp, int sp, vc_status *st, vc_error *err)
{
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    hf.seq = seq;
    vc_model *m = NULL;
    *st = vc_model_load_file_hf(file, &hf, &m, err);
    if (!*st && (tp > 1 || sp) && (*st = vc_model_set_tp(m, tp, sp, err))) {
        vc_model_free(m);
        m = NULL;
    }
    return m;
}

/* Parameters on one rank of Llama-3.1-70B (h 8192, 80 layers, 64 heads, 8 kv
 * heads of 128, ffn 28672, vocab 128256, untied, no biases) at TP 8, by
 * Megatron's split (MEG attention.py, layers.py, mlp.py, vocab_utils.py):
 * per layer q 8192 x 1024 + k, v 8192 x 128 each + o 1024 x 8192 = 18,874,368;
 * MLP 3 x 8192 x 3584 = 88,080,384; two RMSNorms 16,384 (replicated):
 * 106,971,136 x 80 = 8,557,690,880; the vocabulary padded to a multiple of
 * 128 x 8 = 129,024, 16,128 rows per rank, embedding and lm_head 2 x 16,128 x
 * 8192 = 264,241,152; the final norm 8192: 8,821,940,224 in all. Over the 8
 * ranks: the model's 70,553,706,496 + 7 copies of the 1,318,912 replicated
 * norm weights + the 2 x 768 x 8192 padding rows. */
static void test_tp_params_llama70b(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(VC_TEST_DATA "/hf/llama-3.1-70b.json", 8192, 8, 0, &st, &err);
    assert_int_equal(st, VC_OK);
    assert_int_equal(vc_model_parameters(m), INT64_C(8821940224));
    assert_int_equal(8 * vc_model_parameters(m), INT64_C(70553706496) + 7 * INT64_C(1318912) + 2 * 768 * 8192);
    vc_model_free(m);
    /* with --sp the weights are the same */
    m = load_tp(VC_TEST_DATA "/hf/llama-3.1-70b.json", 8192, 8, 1, &st, &err);
    assert_int_equal(st, VC_OK);
    assert_int_equal(vc_model_parameters(m), INT64_C(8821940224));
    vc_model_free(m);
}

/* The saved bytes of one GPT block (the second, layers[4][1]) on a TP rank of
 * tests/data/parallel/gpt2-medium-k.json (s 1024, h 1024, a 16, b 1, bf16,
 * dropout 0.1, gelu_pytorch_tanh: one saved input as Megatron's fused GELU).
 * Flash attention keeps no s x s tensor: K's "selective recompute" rows,
 * sbh(10 + 24/t) without SP and 34sbh/t with it, plus what K leaves out: the
 * two LayerNorms' mean and rstd (fp32, s/t' each: 2 x 2 x 4 x s/t' B, t' = t
 * with SP, else 1) and flash's softmax_lse (fp32 [a/t, s]) and rng state (two
 * 512-byte blocks). The math backend upcasts 16-bit q, k, v to fp32
 * (docs/autograd.md 4.8): its attention core keeps 9as^2b/t + 14sbh/t bytes
 * (fp32 softmax and dropped probabilities, the 1-byte mask; fp32 q, k, v, the
 * 16-bit output) where K counts 5as^2b/t + 8sbh/t; the rest is K's 26sbh
 * (/t with SP). */
static int64_t block_saved(const char *file, int64_t tp, int sp, vc_attention att)
{
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(file, 1024, tp, sp, &st, &err);
    if (st) fail_msg("load: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.attention = att;
    o.tp = tp;
    o.sp = sp;
    o.gpus = tp;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    int64_t sum = 0;
    for (size_t i = 0; i < r.nlayers; i++)
        if (!strncmp(r.layers[i].name, "layers[4][1].", 13)) sum += r.layers[i].activations;
    vc_result_free(&r);
    vc_model_free(m);
    return sum;
}

static void test_tp_korthikanti(void **state)
{
    (void)state;
    const char *f = TP_DATA "parallel/gpt2-medium-k.json";
    const int64_t s = 1024, h = 1024, a = 16, sbh = s * h;
    for (int64_t t = 1; t <= 8; t *= 2)
        for (int sp = 0; sp <= (t > 1); sp++) {
            int64_t ts = sp ? t : 1;
            int64_t k_sel = sp ? 34 * sbh / t : sbh * 10 + 24 * sbh / t; /* K Table 2, selective */
            int64_t ln = 2 * 2 * 4 * s / ts, lse = 4 * (a / t) * s + 1024;
            assert_int_equal(block_saved(f, t, sp, VC_ATTN_FLASH), k_sel + ln + lse);
            int64_t k_full = sp ? (34 * sbh + 5 * a * s * s) / t : sbh * 10 + (24 * sbh + 5 * a * s * s) / t; /* K, no recompute */
            int64_t core_k = (8 * sbh + 5 * a * s * s) / t, core_fp32 = (14 * sbh + 9 * a * s * s) / t;
            assert_int_equal(block_saved(f, t, sp, VC_ATTN_MATH), k_full - core_k + core_fp32 + ln);
        }
}

/* Megatron's vocab-parallel cross-entropy (src/engine/loss.c emit_vocab_parallel, MEG cross_entropy.py)
 * on gpt2-medium-k at TP 8, s 1024, bf16: the vocabulary 50,257 padded to a
 * multiple of 128 x 8 (vocab_utils.py) = 51,200, 6,400 per rank. logits.float()
 * is fp32 [1024, 6400] = 26,214,400 B, which becomes the saved softmax; the
 * bf16 logits (13,107,200 B) live until the loss returns; the int64 labels,
 * masked target (8,192 B) and bool mask (1,024 B) are [s] each. Backward:
 * the fp32 gradient (a new tensor here, Megatron's in-place update of the
 * softmax), then the .float()'s backward makes the bf16 gradient. */
typedef struct {
    int fwd_fp32, bwd_fp32, bwd_bf16, saved_small;
} ce_trace;

static void on_ce(void *ctx, const char *text)
{
    ce_trace *c = ctx;
    char phase[32], op[16], cat[16], layer[64], name[64] = "";
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld %63s %63s", phase, op, cat, &bytes, &total, layer, name) < 6 || strcmp(op, "alloc"))
        return;
    bool f = !strcmp(phase, "forward"), bw = !strcmp(phase, "backward");
    if (f && bytes == 26214400 && !strcmp(name, "_to_copy")) c->fwd_fp32++;
    if (bw && bytes == 26214400 && !strcmp(name, "vocab_parallel_cross_entropy")) c->bwd_fp32++;
    if (bw && bytes == 13107200 && !strcmp(name, "_to_copy")) c->bwd_bf16++;
    if (f && !strcmp(cat, "act") && !strcmp(name, "vocab_parallel_cross_entropy") && (bytes == 1024 || bytes == 8192)) c->saved_small++;
}

static void test_tp_vocab_parallel_loss(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(TP_DATA "parallel/gpt2-medium-k.json", 1024, 8, 0, &st, &err);
    assert_non_null(m);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.attention = VC_ATTN_FLASH;
    o.tp = 8;
    o.gpus = 8;
    ce_trace c = {0, 0, 0, 0};
    assert_int_equal(vc_trace(m, &o, on_ce, &c, &err), VC_OK);
    assert_int_equal(c.fwd_fp32, 1);
    assert_int_equal(c.bwd_fp32, 1);
    assert_int_equal(c.bwd_bf16, 1);
    assert_int_equal(c.saved_small, 2); /* target_mask (1,024 B), masked_target_1d (8,192 B) */
    vc_model_free(m);
}

/* Impossible layouts name --tp / --sp (src/hf/hf_tp.c; MEG divide() asserts). */
static void test_tp_errors(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    const char *l70 = VC_TEST_DATA "/hf/llama-3.1-70b.json";
    assert_null(load_tp(l70, 0, 3, 0, &st, &err)); /* 64 heads */
    assert_int_equal(st, VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--tp");
    assert_non_null(strstr(CLI_MSG(&err), "num_attention_heads (64)"));
    assert_null(load_tp(l70, 0, 16, 0, &st, &err)); /* 8 kv heads */
    assert_string_equal(CLI_PATH(&err), "--tp");
    assert_non_null(strstr(CLI_MSG(&err), "num_key_value_heads (8)"));
    assert_null(load_tp(l70, 0, 1, 1, &st, &err));
    assert_string_equal(CLI_PATH(&err), "--sp");
    assert_null(load_tp(l70, 1001, 8, 1, &st, &err)); /* 1001 tokens over 8 ranks */
    assert_string_equal(CLI_PATH(&err), "--sp");
    assert_null(load_tp(VC_TEST_DATA "/hf/bert-base-uncased.json", 128, 2, 1, &st, &err));
    assert_string_equal(CLI_PATH(&err), "--sp");
    /* a model file with --tp */
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    vc_model *m = load();
    o.tp = 2;
    o.gpus = 2;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--tp");
    vc_model_free(m);
    /* generation's decoding step has one token: no sequence to split */
    m = load_tp(l70, 512, 8, 1, &st, &err);
    assert_non_null(m);
    o.tp = 8;
    o.gpus = 8;
    o.sp = 1;
    o.mode = VC_MODE_GENERATE;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--sp");
    vc_model_free(m);
}

/* The options say the split, once (vc_options.tp, .sp): a model built for another split is
 * estimated as the options split it (src/model/model.c vc__model_at), to the byte what a
 * model built for the options' split gives, and the model stays as it was built. */
static void test_tp_split_follows_options(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    const char *l70 = VC_TEST_DATA "/hf/llama-3.1-70b.json";
    vc_model *one = load_tp(l70, 512, 1, 0, &st, &err), *eight = load_tp(l70, 512, 8, 1, &st, &err);
    assert_non_null(one);
    assert_non_null(eight);
    const int64_t params_one = vc_model_parameters(one), params_eight = vc_model_parameters(eight);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    vc_result a, b;
    for (int pass = 0; pass < 2; pass++) { /* the second estimate of each reuses the model built at the other split */
        o.tp = 1;
        o.sp = 0;
        o.gpus = 1;
        if (vc_estimate(eight, &o, &a, &err) || vc_estimate(one, &o, &b, &err)) fail_msg("%s", err.msg);
        assert_int_equal(a.memory.total, b.memory.total);
        assert_int_equal(a.memory.peak_allocated, b.memory.peak_allocated);
        assert_int_equal(a.parameters, params_one);
        vc_result_free(&a);
        vc_result_free(&b);
        o.tp = 8;
        o.sp = 1;
        o.gpus = 8;
        if (vc_estimate(one, &o, &a, &err) || vc_estimate(eight, &o, &b, &err)) fail_msg("%s", err.msg);
        assert_int_equal(a.memory.total, b.memory.total);
        assert_int_equal(a.memory.peak_allocated, b.memory.peak_allocated);
        assert_int_equal(a.parameters, params_eight); /* test_tp_params_llama70b's 8,821,940,224 */
        vc_result_free(&a);
        vc_result_free(&b);
    }
    assert_int_equal(vc_model_parameters(one), params_one);
    assert_int_equal(vc_model_parameters(eight), params_eight);
    assert_int_equal(params_eight, INT64_C(8821940224));
    /* an estimator at one split keeps its model while estimates ask for others */
    vc_estimator *e = NULL;
    if (vc_estimator_new(one, &o, 0, &e, &err)) fail_msg("%s", err.msg); /* tp 8 + sp */
    o.tp = 2;
    o.sp = 0;
    o.gpus = 2;
    if (vc_estimate(one, &o, &b, &err)) fail_msg("%s", err.msg);
    vc_result_free(&b);
    o.tp = 8;
    o.sp = 1;
    o.gpus = 8;
    if (vc_estimator_run(e, 1, &a, &err) || vc_estimate(eight, &o, &b, &err)) fail_msg("%s", err.msg);
    assert_int_equal(a.memory.total, b.memory.total);
    vc_result_free(&a);
    vc_result_free(&b);
    vc_estimator_free(e);
    vc_model_free(one);
    vc_model_free(eight);
}

/* --max-seq with --sp searches lengths the TP degree divides (src/engine/maxseq.c;
 * hf_tp.c refuses the others), and the answer is a length that loads and
 * fits while the next multiple of t does not. */
static void test_tp_max_seq(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(VC_TEST_DATA "/hf/llama-3.1-8b.json", 0, 8, 1, &st, &err);
    assert_non_null(m);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.tp = 8;
    o.sp = 1;
    o.gpus = 8;
    int64_t cap = INT64_C(80) << 30, n = 0;
    int limited = 0;
    assert_int_equal(vc_model_max_seq(m, &o, cap, &n, &limited, NULL, &err), VC_OK);
    assert_true(n > 0);
    assert_int_equal(n % 8, 0);
    for (int64_t k = 0; k < 2; k++) {
        vc_model *c = load_tp(VC_TEST_DATA "/hf/llama-3.1-8b.json", n + 8 * k, 8, 1, &st, &err);
        assert_non_null(c);
        vc_result r;
        assert_int_equal(vc_estimate(c, &o, &r, &err), VC_OK);
        if (k == 0) assert_true(r.memory.total <= cap);
        else assert_true(r.memory.total > cap);
        vc_result_free(&r);
        vc_model_free(c);
    }
    vc_model_free(m);
}

/* ---- pipeline parallelism (--pp; src/parallel/pipeline.c, docs/parallel.md 2.6) ----
 * The model: four Linear(1000 -> 1000, bias=False), fp32, batch 1, SGD,
 * workspace 0. --pp 2 puts two on each stage. Sizes in 512-byte blocks: a
 * weight or its gradient 4,000,000 B -> 4,000,256; an activation [1, 1000]
 * 4,000 B -> 4,096; the loss and the root gradient 4 B -> 512. */
static const char *const four =
    "{\"input\": [1000], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 1000, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 1000, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 1000, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 1000, \"bias\": false}]}";

static vc_result pp_estimate(const char *json, int64_t pp, int64_t micro, int64_t gpus, vc_parallel par)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "pp.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o = opts(par, gpus, VC_OPTIM_SGD);
    o.pp = pp;
    o.micro_batches = micro;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

/* Stage 0 (first): weights 2 x 4,000,256 = 8,000,512, the input batch 4,096
 * resident. Each micro-batch leaves h1 (saved by the second Linear) alive
 * until its backward; its output h2 is sent and its storage replaced by a
 * one-element tensor, 512 B, kept until the backward (deallocate_output_tensor).
 * In flight: min(pp - 0, M) (schedules.py: num_warmup_microbatches =
 * min(pp - rank - 1, M), one more forward in each 1F1B pair).
 *  M = 1: one micro-batch, no accumulation. The peak is the first Linear's
 *    backward: weights 8,000,512 + input 4,096 + the received output gradient
 *    4,096 + dW2 4,000,256 + dh1 4,096 + dW1 4,000,256 + the sent output's
 *    512 = 16,013,824.
 *  M = 2: two in flight, then a cooldown backward into existing gradients
 *    (one held micro-batch fewer): the second Linear's backward, weights
 *    8,000,512 + gradients 8,000,512 + input, h1, received gradient, dh1
 *    4 x 4,096 + the new dW2 4,000,256 (added in place, then freed) + 512 =
 *    20,018,176.
 *  M = 4: a 1F1B pair follows, the other micro-batch's h1 and sent output
 *    still held: 20,018,176 + 4,096 + 512 = 20,022,784.
 * Stage 1 (last, one in flight): the received input h2 (requires_grad, saved
 * by the third Linear), h3, the loss 512 and the root gradient 512.
 *  M = 1: the third Linear's backward: weights 8,000,512 + h2 4,096 + dW4
 *    4,000,256 + dh3 4,096 + dW3 4,000,256 + dh2 4,096 (the gradient sent
 *    back) + loss and root 1,024 = 16,014,336.
 *  M >= 2: the fourth Linear's backward into existing gradients: 16,001,024
 *    + h2, h3, dh4, dh3 4 x 4,096 + loss and root 1,024 + the new dW4
 *    4,000,256 = 20,018,688. */
static void test_pp_stage_timeline(void **state)
{
    (void)state;
    const int64_t first[3] = {16013824, 20018176, 20022784}, last[3] = {16014336, 20018688, 20018688};
    const int64_t micro[3] = {1, 2, 4}, flight[3] = {1, 2, 2}, held[3] = {8704, 13312, 13312};
    for (int i = 0; i < 3; i++) {
        vc_result r = pp_estimate(four, 2, micro[i], 2, VC_PARALLEL_NONE);
        assert_int_equal(r.nranks, 2);
        assert_string_equal(r.ranks[0].kind, "first");
        assert_string_equal(r.ranks[1].kind, "last");
        assert_int_equal(r.ranks[0].in_flight, flight[i]);
        assert_int_equal(r.ranks[1].in_flight, 1);
        assert_int_equal(r.ranks[0].memory.weights, 8000512);
        assert_int_equal(r.ranks[1].memory.weights, 8000512);
        assert_int_equal(r.ranks[0].parameters, 2000000);
        /* held at the end of forward: the input batch, h1 and the sent output's 512 B of each
         * micro-batch in flight; the last stage: h2 and h3 */
        assert_int_equal(r.ranks[0].memory.activations, held[i]);
        assert_int_equal(r.ranks[1].memory.activations, 8192);
        assert_int_equal(r.ranks[0].memory.peak_allocated, first[i]);
        assert_int_equal(r.ranks[1].memory.peak_allocated, last[i]);
        /* the figures reported are the busiest rank's (the larger total, then the larger peak) */
        const vc_rank_info *b = &r.ranks[r.ranks[1].memory.total > r.ranks[0].memory.total ||
                                         (r.ranks[1].memory.total == r.ranks[0].memory.total &&
                                          r.ranks[1].memory.peak_allocated > r.ranks[0].memory.peak_allocated)];
        assert_int_equal(r.memory.peak_allocated, b->memory.peak_allocated);
        assert_int_equal(r.parameters, 4000000); /* the whole model's count */
        vc_result_free(&r);
    }
}

/* The ranks of each kind, Megatron's order (pp outermost): with 8 GPUs and
 * pp 4 each stage has 2 data-parallel ranks; stage s is ranks 2s, 2s + 1.
 * In flight: 4, 3 (the busiest middle stage, 1), 1. */
static void test_pp_ranks(void **state)
{
    (void)state;
    char json[4096];
    snprintf(json, sizeof json, "{\"input\": [64], \"layers\": [{\"type\": \"Sequential\", \"repeat\": 8, \"layers\": "
             "[{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}]}]}");
    vc_result r = pp_estimate(json, 4, 0, 8, VC_PARALLEL_DDP);
    assert_int_equal(r.nranks, 3);
    const char *kinds[3] = {"first", "middle", "last"};
    const int64_t s0[3] = {0, 1, 3}, s1[3] = {0, 2, 3}, r0[3] = {0, 2, 6}, r1[3] = {1, 5, 7}, fl[3] = {4, 3, 1};
    for (int k = 0; k < 3; k++) {
        assert_string_equal(r.ranks[k].kind, kinds[k]);
        assert_int_equal(r.ranks[k].stage_first, s0[k]);
        assert_int_equal(r.ranks[k].stage_last, s1[k]);
        assert_int_equal(r.ranks[k].rank_first, r0[k]);
        assert_int_equal(r.ranks[k].rank_last, r1[k]);
        assert_int_equal(r.ranks[k].in_flight, fl[k]);
        assert_int_equal(r.ranks[k].layers, 2);
        assert_int_equal(r.ranks[k].parameters, 2 * (64 * 64 + 64));
    }
    assert_int_equal(r.ranks[1].stage, 1);
    vc_result_free(&r);
}

/* The split (get_num_layers_to_build): even when pp divides the layers
 * (80 / 8 = 10); otherwise ceil(L / pp) on each middle stage and the rest
 * halved over the first and last, Megatron's num_layers_in_first/last_
 * pipeline_stage: 126 over 16 is 7 + 14 x 8 + 7 (Llama 3 405B's layout in
 * the Llama 3 paper, one layer fewer on the first and last stage); 10 over
 * 4 is 2 + 3 + 3 + 2. */
static void test_pp_split(void **state)
{
    (void)state;
    int64_t c[16];
    vc_error err;
    memset(&err, 0, sizeof err); /* vc_set_error keeps a first error: err starts clear */
    assert_int_equal(vc__pp_split(80, 8, c, &err), VC_OK);
    for (int r = 0; r < 8; r++) assert_int_equal(c[r], 10);
    assert_int_equal(vc__pp_split(126, 16, c, &err), VC_OK);
    assert_int_equal(c[0], 7);
    assert_int_equal(c[15], 7);
    for (int r = 1; r < 15; r++) assert_int_equal(c[r], 8);
    assert_int_equal(vc__pp_split(10, 4, c, &err), VC_OK);
    assert_int_equal(c[0], 2);
    assert_int_equal(c[1], 3);
    assert_int_equal(c[2], 3);
    assert_int_equal(c[3], 2);
    assert_int_equal(vc__pp_split(3, 4, c, &err), VC_ERR_USAGE); /* more stages than layers */
    assert_string_equal(CLI_PATH(&err), "--pp");
    memset(&err, 0, sizeof err);
    assert_int_equal(vc__pp_split(5, 4, c, &err), VC_ERR_USAGE); /* 2 on each middle stage leaves 1 for both ends */
    assert_string_equal(CLI_PATH(&err), "--pp");
}

/* GPT-2 small with tied embeddings (examples/gpt2_small.json; counts from
 * its config: wte 50,257 x 768 = 38,597,376, wpe 786,432, a block 7,087,872,
 * ln_f 1,536): --pp 4 puts 3 blocks on each stage, the embeddings on the
 * first, ln_f and the head on the last, which keeps its own copy of the tied
 * word embedding (LanguageModule.setup_embeddings_and_output_layer). */
static void test_pp_tied(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(VC_EXAMPLES "/gpt2_small.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o = opts(VC_PARALLEL_NONE, 4, VC_OPTIM_ADAM);
    o.pp = 4;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    assert_int_equal(r.nranks, 3);
    assert_int_equal(r.ranks[0].parameters, 38597376 + 786432 + 3 * 7087872);
    assert_int_equal(r.ranks[1].parameters, 3 * 7087872);
    assert_int_equal(r.ranks[2].parameters, 3 * 7087872 + 1536 + 38597376);
    assert_int_equal(r.parameters, 124439808);
    vc_result_free(&r);
    vc_model_free(m);
}

/* Impossible layouts: exit 2 naming the option (the CLI's message is err.msg). */
static void test_pp_refused(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(four, strlen(four), "four.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    struct {
        int64_t pp, micro, gpus;
        vc_parallel par;
        vc_mode mode;
        const char *opt;
    } cases[] = {
        {1, 4, 1, VC_PARALLEL_NONE, VC_MODE_TRAIN, "--micro-batches"}, /* micro-batches without a pipeline */
        {2, 0, 3, VC_PARALLEL_NONE, VC_MODE_TRAIN, "--gpus"},          /* 3 GPUs, 2 stages */
        {8, 0, 8, VC_PARALLEL_NONE, VC_MODE_TRAIN, "--pp"},            /* 8 stages, 4 layers */
        {2, 0, 2, VC_PARALLEL_NONE, VC_MODE_INFER, "--pp"},            /* training only */
        {2, 0, 4, VC_PARALLEL_ZERO2, VC_MODE_TRAIN, "--parallel"},     /* DeepSpeed's pipeline refuses ZeRO-2 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = opts(cases[i].par, cases[i].gpus, VC_OPTIM_SGD);
        o.pp = cases[i].pp;
        o.micro_batches = cases[i].micro;
        o.mode = cases[i].mode;
        vc_result r;
        memset(&err, 0, sizeof err);
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), cases[i].opt);
    }
    /* the counts-only calculator has no layers to split */
    vc_options o = opts(VC_PARALLEL_NONE, 2, VC_OPTIM_SGD);
    o.pp = 2;
    vc_result r;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimate_counts(1000, 10, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--pp");
    vc_model_free(m);
}

/* --max-batch answers per GPU: the largest micro-batch at which every stage
 * fits, so the busiest stage's total at it fits and one more does not. */
/* --tp with --pp: the stages of a config split for tensor parallelism keep the
 * split (src/parallel/pipeline.c stage_model copies it; src/model/model.c vc__model_at). Llama-3.1-405B
 * (126 layers) at tp 8 and pp 16 on 1,024 GPUs: the stages hold 7, 14 x 8
 * and 7 layers (test_pp_split), each of a tensor-parallel rank's width, so the
 * ranks' parameters add up to the tp-8 rank's whole model. */
static void test_tp_pp(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(VC_TEST_DATA "/hf/llama-3.1-405b.json", 1024, 8, 1, &st, &err);
    assert_non_null(m);
    vc_options o = opts(VC_PARALLEL_DDP, 1024, VC_OPTIM_ADAM);
    o.precision = VC_PREC_BF16;
    o.tp = 8;
    o.sp = 1;
    o.pp = 16;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    assert_int_equal(r.nranks, 3);
    assert_int_equal(r.ranks[0].layers, 7);
    assert_int_equal(r.ranks[1].layers, 8);
    assert_int_equal(r.ranks[2].layers, 7);
    /* first + 14 middle stages + last: every parameter of the rank's shard once, but the
     * last stage's own copy of nothing (Llama's embedding and head are untied) */
    assert_int_equal(r.ranks[0].parameters + 14 * r.ranks[1].parameters + r.ranks[2].parameters, vc_model_parameters(m));
    vc_result_free(&r);
    vc_model_free(m);
}

static void test_pp_max_batch(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(VC_EXAMPLES "/gpt2_small.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o = opts(VC_PARALLEL_NONE, 4, VC_OPTIM_ADAM);
    o.pp = 4;
    vc_estimator *e = NULL;
    assert_int_equal(vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e, &err), VC_OK);
    const int64_t cap = INT64_C(8) << 30;
    int64_t n = 0, t0 = 0, t1 = 0;
    assert_int_equal(vc_estimator_max_batch(e, cap, &n, NULL, &err), VC_OK);
    assert_true(n > 0);
    assert_int_equal(vc_estimator_total(e, n, &t0, &err), VC_OK);
    assert_int_equal(vc_estimator_total(e, n + 1, &t1, &err), VC_OK);
    assert_true(t0 <= cap && t1 > cap);
    vc_result r;
    o.batch = n + 1;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.total, t1); /* the estimator's total is the busiest stage's */
    vc_result_free(&r);
    vc_estimator_free(e);
    vc_model_free(m);
}

/* ---- the interleaved schedule (--pp-virtual; pipeline_sched.c vc__pp_schedule) ----
 * MEG schedules.py get_pp_rank_microbatches: rank r runs num_warmup_microbatches
 * = (pp - r - 1) x 2 + (V - 1) x microbatch_group_size_per_vp_stage (pp by
 * default, model_parallel_config.py __post_init__) forwards, capped at the
 * M x V virtual micro-batches, then 1F1B pairs: at its first backward w + 1
 * virtual micro-batches are in flight, each one chunk's. pp 4, V 2, M 8: w =
 * 10, 8, 6, 4 of 16, so 11, 9, 7, 5 (1F1B: 4, 3, 2, 1). Against
 * theoretical_memory_usage.py's interleaved penalty, the first stage's
 * activations x (1 + (pp - 1) / (pp V)): 11 chunk micro-batches of L / (pp V)
 * layers are 11/8 of L, 1F1B's pp micro-batches of L / pp layers; 1 + 3/8. */
static void test_pp_interleaved_in_flight(void **state)
{
    (void)state;
    const char *json = "{\"input\": [64], \"layers\": [{\"type\": \"Sequential\", \"repeat\": 8, \"layers\": "
                       "[{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}]}]}";
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "pp8.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    const int64_t fl[2][3] = {{4, 3, 1}, {11, 9, 5}}; /* first, the busiest middle (stage 1), last */
    for (int v = 0; v < 2; v++) {
        vc_options o = opts(VC_PARALLEL_NONE, 4, VC_OPTIM_SGD);
        o.pp = 4;
        o.micro_batches = 8;
        o.pp_virtual = v ? 2 : 0;
        vc_result r;
        if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
        assert_int_equal(r.nranks, 3);
        for (int k = 0; k < 3; k++) {
            assert_int_equal(r.ranks[k].in_flight, fl[v][k]);
            assert_int_equal(r.ranks[k].layers, 2); /* 8 / pp: V chunks of 8 / (pp V) each */
            assert_int_equal(r.ranks[k].parameters, 2 * (64 * 64 + 64));
        }
        vc_result_free(&r);
    }
    /* in flight x L / (pp V) layers = L x (1 + (pp - 1) / (pp V)): 11 x 1 x 8 = 8 x (8 + 3), L = 8 */
    assert_int_equal(fl[1][0] * (8 / (4 * 2)) * (4 * 2), 8 * (4 * 2 + 4 - 1));
    vc_model_free(m);
}

/* The four Linears of test_pp_stage_timeline at pp 2, V 2, M 4: rank 0's
 * chunks run layer 0 (virtual stage 0) and layer 2 (virtual stage 2); the
 * engine runs the contiguous stage, layers 0 and 1, chunk 1 the second
 * (the same layer). w = 1 x 2 + 1 x 2 = 4 of 8; forwards (get_schedule_table)
 * chunk 0 mb 0, 1, chunk 1 mb 0, 1, chunk 0 mb 2, 3, chunk 1 mb 2, 3;
 * backwards the chunks reversed: chunk 1 mb 0, 1, chunk 0 mb 0, 1, ...
 * A chunk-0 micro-batch keeps only its output's one-element tensor (512 B;
 * its Linear saves the resident input batch), a chunk-1 one its received
 * input (4,096, saved by its Linear) and its output's 512. The forward of a
 * 1F1B pair is whole during the pair's backward (deallocated in the next
 * pp_pre_forward): its output 4,096 instead of 512. Each backward has its
 * received gradient (4,096).
 *  - The first backward (chunk 1 mb 0, makes dW2): chunk 0 mb 0, 1 (512
 *    each) and mb 2 (the pair's forward, 4,096), chunk 1 mb 0, 1 (4,608
 *    each): 8,000,512 + the batch 4,096 + 14,336 + 4,096 + dW2 4,000,256 +
 *    dX 4,096 = 12,027,392.
 *  - The fourth (chunk 0 mb 1, a 1F1B pair, into dW0 made by the third;
 *    dW2 made): chunk 0 mb 1, 2, 3 (512 each), chunk 1 mb 2 (4,608) and mb 3
 *    (the pair's forward, input and whole output: 8,192); no input gradient
 *    kept (the third was chunk 0 on rank 0: pp_post_backward), no receive
 *    after the last pair: 16,001,024 + 4,096 + 14,336 + 4,096 + the new
 *    dW0 4,000,256 = 20,023,808, the peak (the fifth, chunk 1 mb 2 into dW2,
 *    is as high: its dX 4,096 where the fourth keeps mb 3's whole output).
 * pp_replica.py measured 20,023,808 on this model (a repeated Linear).
 * Held at the end of the forward: the input batch 4,096 + chunk 0 mb 0, 1,
 * 2 (512, 512, 4,096) + chunk 1 mb 0, 1 (4,608 each) = 18,432. */
static void test_pp_interleaved_timeline(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(four, strlen(four), "four.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o = opts(VC_PARALLEL_NONE, 2, VC_OPTIM_SGD);
    o.pp = 2;
    o.micro_batches = 4;
    o.pp_virtual = 2;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.nranks, 2);
    assert_int_equal(r.ranks[0].in_flight, 5);
    assert_int_equal(r.ranks[1].in_flight, 3); /* w = 0 + 2 */
    assert_int_equal(r.ranks[0].layers, 2);
    assert_int_equal(r.ranks[0].memory.weights, 8000512);
    assert_int_equal(r.ranks[0].memory.activations, 18432);
    assert_int_equal(r.ranks[0].memory.peak_allocated, 20023808);
    vc_result_free(&r);
    vc_model_free(m);
}

/* M = pp (pipeline_sched.c, pipeline_hold.c): the four Linears at pp 2, V 2,
 * M 2. Rank 0: w = 1 x 2 + 1 x 2 = 4 = M x V, every forward is warm-up
 * (are_all_microbatches_in_warmup): chunk 0 mb 0, 1, chunk 1 mb 0, 1; then
 * the backwards chunk 1 mb 0, 1, chunk 0 mb 0, 1. Weights 8,000,512, the input
 * batch 4,096; a chunk-0 micro-batch keeps its output's one-element tensor
 * (512), a chunk-1 one its received input (4,096) and its output's 512; each
 * backward has its received gradient (4,096), and the one before's input
 * gradient stays in input_tensor_grad until it returns (none after chunk 0
 * on rank 0: pp_post_backward). Each peak is the Linear's backward, dW
 * (4,000,256) and, on chunk 1 (a received input), dX (4,096) made:
 *  - j 0 (chunk 1 mb 0, makes dW2): 8,000,512 + 4,096 + 2 x 512 + 2 x 4,608
 *    + 4,096 + dW 4,000,256 + dX 4,096 = 12,023,296;
 *  - j 1 (chunk 1 mb 1, into dW2; chunk 0 has no gradient yet): 8,000,512 +
 *    dW2 4,000,256 + 4,096 + 2 x 512 + 4,608 + 4,096 + mb 0's dX 4,096 + the
 *    new dW and dX = 16,023,040;
 *  - j 2 (chunk 0 mb 0, makes dW0): 8,000,512 + 4,000,256 + 4,096 + 2 x 512
 *    + mb 1's dX 4,096 + 4,096 + 4,000,256 = 16,014,336;
 *  - j 3 (chunk 0 mb 1, into dW0): 8,000,512 + 8,000,512 + 4,096 + 512 +
 *    4,096 + 4,000,256 = 20,009,984, the peak.
 * pp_replica.py (run_case_vp) measured the same four figures on this model.
 * Two candidates (the first backward, the one with every chunk's gradients)
 * gave 20,018,688; the engine now runs j 0 and j 2 in its first backward and
 * j 1, j 3 (the second's most bytes for each chunk) in its second: 20,014,080,
 * 4,096 over the schedule, the gradient the stand-in passes from chunk 1 to
 * chunk 0 alive with the root gradient that stands for the received one
 * (docs/parallel.md 1.8). Held at the end of the forward: 4,096 + 2 x 512 +
 * 2 x 4,608 = 14,336. */
static void test_pp_interleaved_m_pp(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(four, strlen(four), "four.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o = opts(VC_PARALLEL_NONE, 2, VC_OPTIM_SGD);
    o.pp = 2;
    o.micro_batches = 2;
    o.pp_virtual = 2;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.ranks[0].in_flight, 4);
    assert_int_equal(r.ranks[0].memory.activations, 14336);
    assert_int_equal(r.ranks[0].memory.peak_allocated, 20009984 + 4096);
    assert_true(r.ranks[0].memory.peak_allocated < 20018688);
    vc_result_free(&r);
    vc_model_free(m);
}

/* What the interleaved schedule refuses, exit 2 naming the option: layers not
 * a multiple of pp x V (get_num_layers_to_build's asserts), micro-batches not
 * a multiple of pp (forward_backward_pipelining_with_interleaving: "The
 * remainder of M ... should be 0, or larger than or equal to the
 * pipeline-parallel size"), no pipeline, DeepSpeed's zero1 (its
 * PipelineEngine has no interleaved schedule), and chunks whose layers differ
 * from the contiguous stage the engine runs for them. */
static void test_pp_interleaved_refused(void **state)
{
    (void)state;
    const char *uneven = "{\"input\": [8], \"layers\": ["
                         "{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8},"
                         "{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 16},"
                         "{\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 8},"
                         "{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8}]}";
    struct {
        const char *json;
        int64_t pp, v, micro, gpus;
        vc_parallel par;
        const char *opt;
    } cases[] = {
        {four, 2, 4, 0, 2, VC_PARALLEL_NONE, "--pp-virtual"},       /* 4 layers, 2 x 4 chunks */
        {four, 2, 2, 3, 2, VC_PARALLEL_NONE, "--micro-batches"},    /* 3 micro-batches, pp 2 */
        {four, 1, 2, 0, 1, VC_PARALLEL_NONE, "--pp-virtual"},       /* no pipeline */
        {four, 2, 2, 0, 4, VC_PARALLEL_ZERO1, "--pp-virtual"},      /* DeepSpeed's */
        {uneven, 2, 2, 0, 2, VC_PARALLEL_NONE, "--pp-virtual"},     /* rank 0 runs layer 2 (16 -> 8), not layer 1 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_model *m = NULL;
        vc_error err;
        if (vc_model_load_string(cases[i].json, strlen(cases[i].json), "v.json", &m, &err)) fail_msg("load: %s", err.msg);
        vc_options o = opts(cases[i].par, cases[i].gpus, VC_OPTIM_SGD);
        o.pp = cases[i].pp;
        o.pp_virtual = cases[i].v;
        o.micro_batches = cases[i].micro;
        vc_result r;
        memset(&err, 0, sizeof err);
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), cases[i].opt);
        vc_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_params_llama70b),
        cmocka_unit_test(test_tp_korthikanti),
        cmocka_unit_test(test_tp_vocab_parallel_loss),
        cmocka_unit_test(test_tp_errors),
        cmocka_unit_test(test_tp_split_follows_options),
        cmocka_unit_test(test_tp_max_seq),
        cmocka_unit_test(test_pp_stage_timeline),
        cmocka_unit_test(test_pp_ranks),
        cmocka_unit_test(test_pp_split),
        cmocka_unit_test(test_pp_tied),
        cmocka_unit_test(test_pp_refused),
        cmocka_unit_test(test_tp_pp),
        cmocka_unit_test(test_pp_max_batch),
        cmocka_unit_test(test_pp_interleaved_in_flight),
        cmocka_unit_test(test_pp_interleaved_timeline),
        cmocka_unit_test(test_pp_interleaved_m_pp),
        cmocka_unit_test(test_pp_interleaved_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
