/*
 * test_ep.c — expert parallelism (--ep, vc_model_set_ep; layers/moe_ep.c,
 * docs/parallel.md section 6): one Megatron-Core expert-parallel rank of a
 * SparseMoE layer, its parameters and its dispatcher's buffers derived by hand
 * from Megatron-Core's source (NVIDIA/Megatron-LM@d98e8a64: moe/experts.py
 * SequentialMLP, transformer/mlp.py MLP, moe/router.py TopKRouter,
 * moe/token_dispatcher.py MoEAlltoAllTokenDispatcher, moe/moe_utils.py
 * permute / unpermute / sort_chunks_by_idxs, tensor_parallel/mappings.py
 * _AllToAll, training/arguments.py and core/parallel_state.py for the rules).
 *
 * The model: one SparseMoE layer on [16, 64] per sample (T = 16 tokens at
 * batch 1), hidden 64, intermediate 48, 4 experts, top-2, fp32.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

static const char *const moe =
    "{\"input\": [16, 64], \"layers\": [{\"type\": \"SparseMoE\", \"hidden_size\": 64, \"intermediate_size\": 48,"
    " \"num_experts\": 4, \"top_k\": 2%s}]}";

static vc_model *load_ep(const char *extra, int64_t ep, vc_status want, const char *want_path)
{
    char json[512];
    snprintf(json, sizeof json, moe, extra);
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "moe.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_status st = vc_model_set_ep(m, ep, &err);
    assert_int_equal(st, want);
    if (want_path) assert_string_equal(CLI_PATH(&err), want_path);
    return m;
}

static vc_options ep_opts(int64_t ep, vc_optim optim)
{
    vc_options o;
    vc_options_init(&o);
    o.optim = optim;
    o.workspace = 0;
    o.ep = ep;
    o.gpus = ep;
    o.parallel = ep > 1 ? VC_PARALLEL_DDP : VC_PARALLEL_NONE;
    return o;
}

/* A rank holds the router, [E, H] = [4, 64] (1,024 B), and E / ep local
 * experts, each linear_fc1 [2F, H] = [96, 64] (24,576 B) and linear_fc2
 * [H, F] = [64, 48] (12,288 B) (experts.py SequentialMLP, mlp.py MLP with the
 * gated fc1 of 2 x ffn_hidden_size). Without --ep: Hugging Face's gate [4, 64]
 * and 4 x 3 matrices of 48 x 64 (12,288 B each). */
static void test_ep_parameters(void **state)
{
    (void)state;
    const struct {
        int64_t ep, params, weights;
    } want[] = {
        {1, 256 + 12 * 3072, 1024 + 12 * 12288},
        {2, 256 + 2 * (6144 + 3072), 1024 + 2 * (24576 + 12288)},
        {4, 256 + (6144 + 3072), 1024 + (24576 + 12288)},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        vc_model *m = load_ep("", want[i].ep, VC_OK, NULL);
        assert_int_equal(vc_model_parameters(m), want[i].params);
        vc_options o = ep_opts(want[i].ep, VC_OPTIM_ADAM);
        vc_result r;
        vc_error err;
        if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
        assert_int_equal(r.memory.weights, want[i].weights);
        assert_int_equal(r.memory.optimizer_states, 2 * want[i].weights); /* Adam's exp_avg, exp_avg_sq */
        vc_result_free(&r);
        vc_model_free(m);
    }
}

typedef struct {
    int64_t bytes;
    int fwd, bwd;
} count_t;

static void on_line(void *ctx, const char *text)
{
    count_t *c = ctx;
    char phase[32], op[16], cat[16];
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld", phase, op, cat, &bytes, &total) != 5) return;
    if (strcmp(op, "alloc") || bytes != c->bytes) return;
    if (!strcmp(phase, "forward") && !strcmp(cat, "act")) c->fwd++;
    if (!strcmp(phase, "backward")) c->bwd++;
}

static count_t count(vc_model *m, int64_t ep, int64_t bytes)
{
    vc_options o = ep_opts(ep, VC_OPTIM_SGD);
    count_t c = {bytes, 0, 0};
    vc_error err;
    if (vc_trace(m, &o, on_line, &c, &err)) fail_msg("trace failed: %s", err.msg);
    return c;
}

/* Balanced routing at ep 2: the rank sends T k = 32 rows and receives 32
 * (16 per local expert). The [32, 64] fp32 tensors (8,192 B) the forward
 * makes: permute's index_select (permuted_input), _AllToAll's output
 * (new_empty of the received rows), dispatch_postprocess's sort_chunks_by_idxs
 * (torch.cat: the rows by local expert), SequentialMLP's torch.cat of the two
 * experts' outputs, combine_preprocess's sort_chunks_by_idxs back, and
 * token_combine's _AllToAll: 6. Each expert's fc1 output is [16, 96]
 * (6,144 B), one per expert. At ep 4 (one local expert, no sort): the
 * index_select, the two all-to-alls and the expert's [32, 64] fc2 output: 4;
 * its fc1 output is [32, 96], 12,288 B. */
static void test_ep_dispatch_buffers(void **state)
{
    (void)state;
    vc_model *m = load_ep("", 2, VC_OK, NULL);
    assert_int_equal(count(m, 2, 8192).fwd, 6);
    assert_int_equal(count(m, 2, 6144).fwd, 2);
    vc_model_free(m);
    m = load_ep("", 4, VC_OK, NULL);
    assert_int_equal(count(m, 4, 8192).fwd, 4);
    assert_int_equal(count(m, 4, 12288).fwd, 1);
    vc_model_free(m);
}

/* --moe-imbalance 2 at ep 2: the EP group's ep T k = 64 assignments, expert
 * 0 gets min(ep T, ceil(2 x 64 / 4)) = 32, experts 1-3 share the other 32 as
 * 11, 11, 10. Rank 0 holds experts 0 and 1 and receives 43 rows: [43, 64]
 * fp32 = 11,008 B, 11,264 in 512-byte blocks, made by the dispatch
 * all-to-all, the sort by local expert, the experts' cat and the sort back:
 * 4. It still sends its own 32 rows (8,192 B: the index_select and the
 * combine all-to-all), and expert 0's 32 rows make an 8,192-B fc2 output:
 * 3. */
static void test_ep_imbalance(void **state)
{
    (void)state;
    vc_model *m = load_ep(", \"moe_imbalance\": 2", 2, VC_OK, NULL);
    assert_int_equal(count(m, 2, 11264).fwd, 4);
    assert_int_equal(count(m, 2, 8192).fwd, 3);
    vc_model_free(m);
}

/* The layout rules, each exit 2 (VC_ERR_USAGE) naming the option. */
static void test_ep_rules(void **state)
{
    (void)state;
    /* arguments.py: "Number of experts should be a multiple of expert model parallel_size" */
    vc_model *m = load_ep("", 3, VC_ERR_USAGE, "--ep");
    assert_int_equal(vc_model_parameters(m), 256 + 12 * 3072); /* left as it was */
    vc_model_free(m);
    /* a model without SparseMoE layers */
    vc_model *d = NULL;
    vc_error err;
    const char *lin = "{\"input\": [8], \"layers\": [{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8}]}";
    if (vc_model_load_string(lin, strlen(lin), "lin.json", &d, &err)) fail_msg("load failed: %s", err.msg);
    assert_int_equal(vc_model_set_ep(d, 2, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--ep");
    vc_model_free(d);
    m = load_ep("", 2, VC_OK, NULL);
    vc_result r;
    const struct {
        int64_t gpus, tp, ep;
        vc_parallel par;
        const char *opt;
    } bad[] = {
        {3, 1, 2, VC_PARALLEL_DDP, "--ep"},      /* parallel_state.py: world_size % (etp x ep x pp) */
        {2, 2, 2, VC_PARALLEL_NONE, "--ep"},     /* with --tp: not modelled */
        {2, 1, 2, VC_PARALLEL_ZERO1_TORCH, "--parallel"}, /* only ddp's replicas are modelled with --ep */
        {4, 1, 2, VC_PARALLEL_ZERO2, "--parallel"}, /* the expert-data-parallel group: not modelled */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vc_options o = ep_opts(bad[i].ep, VC_OPTIM_SGD);
        o.gpus = bad[i].gpus;
        o.tp = bad[i].tp;
        o.parallel = bad[i].par;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), bad[i].opt);
    }
    /* the options say the split (vc_options.ep): the model set up for ep 2, estimated at ep 1, gives
     * the model's own ep 1 figures to the byte (src/model/model.c vc__model_at) and stays at ep 2 */
    vc_model *one = load_ep("", 1, VC_OK, NULL);
    vc_options o = ep_opts(1, VC_OPTIM_ADAM);
    vc_result r1;
    if (vc_estimate(m, &o, &r, &err) || vc_estimate(one, &o, &r1, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.peak_allocated, r1.memory.peak_allocated);
    assert_int_equal(r.memory.total, r1.memory.total);
    assert_int_equal(r.parameters, vc_model_parameters(one));
    vc_result_free(&r);
    vc_result_free(&r1);
    assert_true(vc_model_parameters(m) < vc_model_parameters(one)); /* still one rank's experts */
    vc_model_free(one);
    vc_model_free(m);
}

/* ep 1 is the model as it was: the same estimate byte for byte. */
static void test_ep_one(void **state)
{
    (void)state;
    vc_model *a = load_ep("", 1, VC_OK, NULL), *b = NULL;
    char json[512];
    snprintf(json, sizeof json, moe, "");
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "moe.json", &b, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o = ep_opts(1, VC_OPTIM_ADAM);
    vc_result ra, rb;
    if (vc_estimate(a, &o, &ra, &err) || vc_estimate(b, &o, &rb, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(ra.memory.peak_allocated, rb.memory.peak_allocated);
    assert_int_equal(ra.memory.activations, rb.memory.activations);
    vc_result_free(&ra);
    vc_result_free(&rb);
    vc_model_free(a);
    vc_model_free(b);
}

/* --ep with --pp: two SparseMoE layers (each as test_ep_parameters' one) on
 * 2 stages x 2 expert-parallel ranks (4 GPUs, Megatron numbers the pipeline
 * rank outermost: stage 0 is ranks 0-1). Each stage holds one layer's router
 * [4, 64] and E / ep = 2 local experts (fc1 [96, 64], fc2 [64, 48]): 256 +
 * 2 x (6,144 + 3,072) = 18,688 parameters, 74,752 B in fp32; SGD keeps no
 * state. The stages' sum is the --ep 2 model's 37,376. */
static void test_ep_pipeline(void **state)
{
    (void)state;
    const char *two = "{\"input\": [16, 64], \"layers\": ["
                      "{\"type\": \"SparseMoE\", \"hidden_size\": 64, \"intermediate_size\": 48, \"num_experts\": 4, \"top_k\": 2},"
                      "{\"type\": \"SparseMoE\", \"hidden_size\": 64, \"intermediate_size\": 48, \"num_experts\": 4, \"top_k\": 2}]}";
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(two, strlen(two), "moe2.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    if (vc_model_set_ep(m, 2, &err)) fail_msg("set_ep failed: %s", err.msg);
    assert_int_equal(vc_model_parameters(m), 2 * 18688);
    vc_options o = ep_opts(2, VC_OPTIM_SGD);
    o.gpus = 4;
    o.pp = 2;
    o.micro_batches = 2;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.nranks, 2);
    for (size_t i = 0; i < r.nranks; i++) {
        assert_int_equal(r.ranks[i].parameters, 18688);
        assert_int_equal(r.ranks[i].memory.weights, 74752);
        assert_int_equal(r.ranks[i].memory.optimizer_states, 0);
        assert_int_equal(r.ranks[i].rank_first, 2 * (int64_t)i);
        assert_int_equal(r.ranks[i].rank_last, 2 * (int64_t)i + 1);
    }
    assert_string_equal(r.ranks[0].kind, "first");
    assert_int_equal(r.ranks[0].in_flight, 2); /* 1F1B: min(pp - stage, M) */
    assert_int_equal(r.ranks[1].in_flight, 1);
    vc_result_free(&r);
    /* gpus not a multiple of tp x ep x pp (parallel_state.py): 4 = 2 x 2 holds, 6 does not */
    o.gpus = 6;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--ep");
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ep_parameters),
        cmocka_unit_test(test_ep_dispatch_buffers),
        cmocka_unit_test(test_ep_imbalance),
        cmocka_unit_test(test_ep_rules),
        cmocka_unit_test(test_ep_one),
        cmocka_unit_test(test_ep_pipeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
