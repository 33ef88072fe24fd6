/*
 * test_engine.c — the timeline engine on small models whose every
 * allocation can be followed by hand (rules: README "How the estimate
 * works" and docs/autograd.md). The MLP is Linear(1024, 4096), ReLU,
 * Linear(4096, 1024) at batch 64, fp32, workspace 0:
 *   parameters W = 16,777,216 + 16,384 + 16,777,216 + 4,096 = 33,574,912 B
 *   input x = 64*1024*4 = 262,144; y1 = relu = 64*4096*4 = 1,048,576;
 *   y2 = 262,144.
 * (The harness in bench/accuracy measures the same MLP with PyTorch.)
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
#include "mem_test.h"

#define W INT64_C(33574912)
#define X INT64_C(262144)
#define H INT64_C(1048576)

static const char *mlp(bool ckpt_relu)
{
    return ckpt_relu ? "{\"input\":[1024],\"layers\":[{\"type\":\"Linear\",\"in_features\":1024,\"out_features\":4096},"
                       "{\"type\":\"ReLU\",\"checkpoint\":true},{\"type\":\"Linear\",\"in_features\":4096,\"out_features\":1024}]}"
                     : "{\"input\":[1024],\"layers\":[{\"type\":\"Linear\",\"in_features\":1024,\"out_features\":4096},"
                       "{\"type\":\"ReLU\"},{\"type\":\"Linear\",\"in_features\":4096,\"out_features\":1024}]}";
}

static vc_result run(const char *json, vc_optim optim, vc_mode mode, int64_t accumulate)
{
    vc_model *m;
    vc_error err;
    assert_int_equal(vc_model_load_string(json, strlen(json), "mlp", &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.batch = 64;
    o.workspace = 0;
    o.optim = optim;
    o.mode = mode;
    o.accumulate = accumulate;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    vc_model_free(m);
    return r;
}

/* Adam: the peak is the foreach step: weights + grads + 2 states + the
 * exp_avg_sq_sqrt list (1x params) = 5W, plus the resident input. */
static void test_adam_peak_in_step(void **state)
{
    (void)state;
    vc_result r = run(mlp(false), VC_OPTIM_ADAM, VC_MODE_TRAIN, 1);
    assert_int_equal(r.memory.weights, W);
    assert_int_equal(r.memory.gradients, W);
    assert_int_equal(r.memory.optimizer_states, 2 * W);
    assert_int_equal(r.memory.peak_allocated, 5 * W + X);
    assert_int_equal(r.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(r.peak.temporaries, W);
    /* at the end of forward: x, and the ReLU output (saved by ReLU and by
     * Linear 2); y1 was freed (ReLU keeps its output, not its input) */
    assert_int_equal(r.memory.activations, X + H);
    vc_result_free(&r);
}

/* SGD: no state, no temporaries; the peak is Linear 1's backward: weights,
 * Linear 2's grads (16,781,312), grad of y1 (H), and Linear 1's new weight
 * and bias grads (16,793,600): 2W + X + H, plus `loss` and its root
 * gradient (512 B each), alive until loss.backward() returns. */
static void test_sgd_peak_in_backward(void **state)
{
    (void)state;
    vc_result r = run(mlp(false), VC_OPTIM_SGD, VC_MODE_TRAIN, 1);
    assert_int_equal(r.memory.optimizer_states, 0);
    assert_int_equal(r.memory.peak_allocated, 2 * W + X + H + 1024);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_string_equal(r.peak.layer, "layers[0]");
    assert_int_equal(r.peak.weights + r.peak.gradients + r.peak.optimizer_states + r.peak.activations +
                         r.peak.temporaries + r.peak.workspace,
                     r.memory.peak_allocated);
    vc_result_free(&r);
}

/* Inference: nothing saved; the largest live set is x + y1 + relu output
 * while ReLU runs (y1 is freed after it). */
static void test_infer(void **state)
{
    (void)state;
    vc_result r = run(mlp(false), VC_OPTIM_ADAM, VC_MODE_INFER, 1);
    assert_int_equal(r.memory.gradients, 0);
    assert_int_equal(r.memory.optimizer_states, 0);
    assert_int_equal(r.memory.activations, X + 2 * H);
    assert_int_equal(r.memory.peak_allocated, W + X + 2 * H);
    vc_result_free(&r);
}

/* Checkpointing only the ReLU keeps its input (y1) alive for the
 * recompute, while Linear 2 still saves the ReLU output: one more H at the
 * end of forward than without checkpointing. */
static void test_checkpoint_cheap_op_costs_memory(void **state)
{
    (void)state;
    vc_result r = run(mlp(true), VC_OPTIM_SGD, VC_MODE_TRAIN, 1);
    assert_int_equal(r.memory.activations, X + 2 * H);
    vc_result_free(&r);
}

/* Gradient accumulation: from the second micro-batch on, the gradients
 * stay allocated and each new gradient is added in place (then freed), so
 * Linear 2's backward holds weights and all grads (2W), x and grad of y2
 * (2X), the ReLU output and its grad (2H), and its new weight and bias
 * grads (16,781,312); plus loss and root gradient (1,024). */
static void test_accumulate(void **state)
{
    (void)state;
    vc_result r = run(mlp(false), VC_OPTIM_SGD, VC_MODE_TRAIN, 2);
    assert_int_equal(r.memory.peak_allocated, 2 * W + 2 * X + 2 * H + 16781312 + 1024);
    vc_result_free(&r);
}

/* peak_allocated never decreases as the batch grows: every tensor's size
 * is non-decreasing in the batch and the event order does not depend on
 * it. (The caching-allocator model itself can reserve less at a larger
 * batch, as PyTorch's can; `reserved` is a monotone envelope of it:
 * test_reserved_envelope.) */
static void test_monotonic_in_batch(void **state)
{
    (void)state;
    vc_model *m;
    vc_error err;
    const char *json = mlp(false);
    assert_int_equal(vc_model_load_string(json, strlen(json), "mlp", &m, &err), VC_OK);
    int64_t last = 0;
    for (int64_t b = 1; b <= 300; b += 7) {
        vc_options o;
        vc_options_init(&o);
        o.batch = b;
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
        assert_true(r.memory.peak_allocated >= last);
        assert_true(r.memory.reserved >= r.memory.peak_allocated);
        last = r.memory.peak_allocated;
        vc_result_free(&r);
    }
    vc_model_free(m);
}

/* `reserved` never falls as the batch grows (docs/contract.md, "Guarantees"), though the allocator
 * model alone does. In this MLP the [N, 1024] fp32 activations are 4 KiB per
 * sample: 1 MiB at batch 256, so at 257 they move from the small pool (2 MiB
 * segments) to the large one, where they fit in space already reserved: the
 * model alone reserves 4 MiB less at 257 than at 256 (and 2-4 MiB less at 65
 * than at 64, where the 16 KiB-per-sample activations reach 1 MiB; seen with
 * the replay printed per batch). `reserved` is the model's most over the grid
 * batches so far, interpolated between them (engine.c, reserved_envelope):
 * checked at every batch from 1 to 1,100, train and infer, with the 2 MiB
 * granularity of segments and the allocated peak as its floor. */
static void test_reserved_envelope(void **state)
{
    (void)state;
    static const char *const wide =
        "{\"input\": [1024], \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 4096}, {\"type\": \"SiLU\"},"
        "{\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 4096}, {\"type\": \"Tanh\"},"
        "{\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 1024}]}";
    vc_model *m;
    vc_error err;
    assert_int_equal(vc_model_load_string(wide, strlen(wide), "wide", &m, &err), VC_OK);
    for (int mode = 0; mode < 2; mode++) {
        int64_t last = 0;
        for (int64_t b = 1; b <= 1100; b++) {
            vc_options o;
            vc_options_init(&o);
            o.batch = b;
            o.mode = mode ? VC_MODE_INFER : VC_MODE_TRAIN;
            vc_result r;
            assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
            assert_true(r.memory.reserved >= last);
            assert_true(r.memory.reserved >= r.memory.peak_allocated);
            /* segments are multiples of 2 MiB, and so is the envelope unless the allocated peak sets it */
            assert_true(r.memory.reserved % (2 << 20) == 0 || r.memory.reserved == r.memory.peak_allocated);
            last = r.memory.reserved;
            vc_result_free(&r);
        }
    }
    vc_model_free(m);
}

/* An estimator keeps state between batches (the allocator model's grid
 * replays, the replay's batch-independent prefix, what is live at the last
 * peak event): whatever order the batches come in, every result must equal
 * a fresh vc_estimate at that batch. The MLP with Adam peaks in the
 * optimizer step at small batches and in backward at large ones, so the
 * peak event changes back and forth in this order. */
/* The estimator's result at o->batch equals vc_estimate's; returns the phase of its peak. */
static vc_phase check_matches_fresh(vc_estimator *e, const vc_model *m, const vc_options *o)
{
    vc_result a, f;
    vc_error err;
    assert_int_equal(vc_estimator_run(e, o->batch, &a, &err), VC_OK);
    assert_int_equal(vc_estimate(m, o, &f, &err), VC_OK);
    assert_memory_equal(&a.memory, &f.memory, sizeof a.memory);
    assert_memory_equal(&a.peak, &f.peak, sizeof a.peak);
    assert_int_equal(a.peak.weights + a.peak.gradients + a.peak.optimizer_states + a.peak.activations +
                         a.peak.temporaries + a.peak.workspace,
                     a.memory.peak_allocated);
    vc_phase ph = a.peak.phase;
    vc_result_free(&a);
    vc_result_free(&f);
    return ph;
}

static void test_estimator_matches_fresh(void **state)
{
    (void)state;
    static const int64_t order[] = {700, 1, 64, 2, 1024, 3, 256, 257, 5, 4096, 1, 48, 700, 9, 300};
    vc_model *m;
    vc_error err;
    const char *json = mlp(false);
    assert_int_equal(vc_model_load_string(json, strlen(json), "mlp", &m, &err), VC_OK);
    for (int mode = 0; mode < 2; mode++) {
        vc_options o;
        vc_options_init(&o);
        o.optim = VC_OPTIM_ADAM;
        o.mode = mode ? VC_MODE_INFER : VC_MODE_TRAIN;
        vc_estimator *e;
        assert_int_equal(vc_estimator_new(m, &o, 0, &e, &err), VC_OK);
        int phases = 0;
        for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
            o.batch = order[i];
            phases |= 1 << check_matches_fresh(e, m, &o);
        }
        /* training: the peak moved between phases (so the cached peak event was replaced) */
        if (!mode) assert_true(phases != (phases & -phases));
        vc_estimator_free(e);
    }
    vc_model_free(m);
}

/* The same for a model whose plan depends on the batch (attention): the
 * estimator rebuilds the plan per batch and shares the allocator model's
 * grid values between the plans, vc_estimate builds the plans of the grid
 * batches it needs; both must agree, whatever the order. */
static void test_estimator_matches_fresh_batch_dependent(void **state)
{
    (void)state;
    static const int64_t order[] = {300, 1, 25, 24, 2, 64, 63, 700, 12, 300};
    char path[600];
    snprintf(path, sizeof path, "%s/vit_b_16.json", VC_EXAMPLES);
    vc_model *m;
    vc_error err;
    assert_int_equal(vc_model_load_file(path, &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.attention = VC_ATTN_MATH;
    vc_estimator *e;
    assert_int_equal(vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e, &err), VC_OK);
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        o.batch = order[i];
        check_matches_fresh(e, m, &o);
    }
    /* and its total never falls from one batch to the next (it did, at 24 -> 25, see engine.c grid_replay) */
    int64_t last = 0;
    for (int64_t bt = 1; bt <= 80; bt++) {
        int64_t t;
        assert_int_equal(vc_estimator_total(e, bt, &t, &err), VC_OK);
        assert_true(t >= last);
        last = t;
    }
    vc_estimator_free(e);
    vc_model_free(m);
}

/* An absurd batch overflows 64-bit byte counts: an error, never a wrapped number. */
/* A branch the loss does not use: Linear "a" (64 -> 64), Linear b on a, ReLU
 * on b (keeps its output r), and the last Linear c on a again; batch 2, SGD,
 * workspace 0. Every activation is 2*64*4 = 512 B; each Linear's weight
 * 16384 + bias 256 -> 512: weights 50688. At the end of forward x, a, r and
 * the loss are alive (52736). The nodes of b and the ReLU cannot reach the
 * loss: they go with the model's return value before backward, and r with
 * them (PyTorch frees a Node's saved tensors with the Node). The peak is A's
 * backward: weights + x + loss + root grad + c's gradient for a (512) + c's
 * and a's weight and bias gradients (2 * 16896) = 86528 (r still alive
 * would make it 87040). */
static void test_unreached_branch_freed_before_backward(void **state)
{
    (void)state;
    const char *json = "{\"input\": [64], \"layers\": ["
                       "{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64, \"name\": \"a\"},"
                       "{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}, {\"type\": \"ReLU\"},"
                       "{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64, \"inputs\": [\"a\"]}]}";
    vc_result r = mem_run(json, 2, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 50688);
    assert_int_equal(r.memory.peak_allocated, 86528);
    vc_result_free(&r);
}

static void test_overflow(void **state)
{
    (void)state;
    vc_model *m;
    vc_error err;
    const char *json = mlp(false);
    assert_int_equal(vc_model_load_string(json, strlen(json), "mlp", &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.batch = INT64_C(4611686018427387904);
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_OVERFLOW);
    vc_model_free(m);
}

/* "module" (issue 15): the source's qualified name, which the exporter writes, names the layer in
 * the result's rows and at the peak; repeat copies get .0, .1; a layer without one keeps its path. */
static void test_module_names(void **state)
{
    (void)state;
    static const char *const txt =
        "{\"input\": [16], \"layers\": [{\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 16,"
        " \"module\": \"encoder.fc\", \"repeat\": 2}, {\"type\": \"ReLU\"}]}";
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(txt, strlen(txt), "named.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    assert_int_equal(r.nlayers, 3);
    assert_string_equal(r.layers[0].name, "encoder.fc.0");
    assert_string_equal(r.layers[1].name, "encoder.fc.1");
    assert_string_equal(r.layers[2].name, "layers[1]");
    vc_result_free(&r);
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_module_names),
        cmocka_unit_test(test_adam_peak_in_step), cmocka_unit_test(test_sgd_peak_in_backward),
        cmocka_unit_test(test_infer),             cmocka_unit_test(test_checkpoint_cheap_op_costs_memory),
        cmocka_unit_test(test_accumulate),        cmocka_unit_test(test_monotonic_in_batch), cmocka_unit_test(test_reserved_envelope),
        cmocka_unit_test(test_estimator_matches_fresh),
        cmocka_unit_test(test_estimator_matches_fresh_batch_dependent),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_unreached_branch_freed_before_backward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
