/*
 * test_nvme.c — DeepSpeed ZeRO-Infinity's NVMe offload (--offload-device nvme,
 * --nvme-gds; docs/parallel.md 1.9), every byte derived by hand from
 * deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641:
 * runtime/swap_tensor/partitioned_param_swapper.py (AsyncPartitionedParameterSwapper:
 * _configure_aio's buffers, swappable_tensor, get_buffer, swap_in),
 * runtime/swap_tensor/utils.py (MIN_AIO_BYTES 1 MiB, AIO_ALIGNED_BYTES 1024),
 * runtime/zero/offload_config.py (buffer_count 5, buffer_size 1e8, max_in_cpu 1e9),
 * runtime/zero/stage3.py (_configure_offloading, _create_param_groups_fp16_flat_cpu_memory,
 * _move_to_flat_buffer), runtime/zero/partition_parameters.py (_partition_param,
 * _ensure_availability_of_partitioned_params), runtime/zero/partitioned_param_coordinator.py
 * (fetch_sub_module's "nvme prefetch is handled elsewhere" break,
 * __prefetch_nvme_param_partitions), runtime/zero/stage_1_and_2.py (cpu_offload for any
 * device but none).
 *
 * The model of test_zero1.c: Linear(1000 -> 999) then Linear(999 -> 1000), both
 * with bias, fp32, batch 1. At world 2: W1 and W2 partitions of 499,500
 * elements (1,998,000 B >= 1 MiB: swappable), b1 and b2 of 500 (persistent:
 * <= 1e5 elements, gathered whole and kept on the GPU, 1,000 elements each,
 * 4,000 B -> 4,096). Sizes in 512-byte blocks: 3,996,000 B -> 3,996,160 (a
 * gathered W, ceil(999,000 / 2) x 2 elements); 1,998,000 B -> 1,998,336 (a
 * partition copied to the GPU, ds_tensor.to(device)).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

static const char *const two =
    "{\"input\": [1000], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 999},"
    " {\"type\": \"Linear\", \"in_features\": 999, \"out_features\": 1000}]}";

static vc_status estimate(const char *json, const vc_options *o, vc_result *r, vc_error *err)
{
    vc_model *m = NULL;
    if (vc_model_load_string(json, strlen(json), "m.json", &m, err)) fail_msg("load failed: %s", err->msg);
    vc_status st = vc_estimate(m, o, r, err);
    vc_model_free(m);
    return st;
}

static vc_result run(const char *json, const vc_options *o)
{
    vc_result r;
    vc_error err = {0};
    if (estimate(json, o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    return r;
}

static vc_options opts(vc_parallel par, int64_t gpus, vc_offload off, int dev, int gds)
{
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_ADAM;
    o.workspace = 0;
    o.parallel = par;
    o.gpus = gpus;
    o.offload = off;
    o.offload_device = dev;
    o.nvme_gds = gds;
    return o;
}

static void assert_same(const vc_result *a, const vc_result *b)
{
    assert_int_equal(a->memory.weights, b->memory.weights);
    assert_int_equal(a->memory.gradients, b->memory.gradients);
    assert_int_equal(a->memory.optimizer_states, b->memory.optimizer_states);
    assert_int_equal(a->memory.activations, b->memory.activations);
    assert_int_equal(a->memory.peak_allocated, b->memory.peak_allocated);
    assert_int_equal(a->memory.reserved, b->memory.reserved);
}

/* Training: the trainable partitions, 499,500 + 500 + 499,500 + 500 = 1,000,000
 * elements, are within max_in_cpu (1e9): _create_param_groups_fp16_flat_cpu_memory
 * makes one pinned CPU buffer of all of them and _move_to_flat_buffer swaps every
 * sub-group in "permanently to CPU" (final_location 'not-nvme'). Nothing is on
 * NVMe during the step: the parameters' side is --offload params' byte for byte.
 * The optimizer's is not quite: its sub-group is swappable, so partition_grads ->
 * _offload_grad_partition_at_boundary appends each fp32 gradient (in fp32 training
 * the GPU copy grad_buffer itself) to offload_fp32_gradients, and lengths of 499,500
 * and 500 elements, not multiples of 256 (AIO_ALIGNED_BYTES / 4), stay on the GPU in
 * unswapped_gradients until the step (optimizer_utils.py _swap_out_gradients). With
 * CPU offload each GPU copy goes as the next parameter's iteration rebinds
 * grad_buffer. So the resident figures are equal, and the peak, at the second
 * Linear's float64 norm copy (_constant_buffered_norm2, 3,996,160 B), is higher by
 * the first Linear's two kept partitions: 1,998,336 + 2,048 B. */
static void test_train_nvme_vs_cpu_offload(void **state)
{
    (void)state;
    vc_options c = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_CPU, 0);
    vc_options n = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 0);
    vc_result rc = run(two, &c), rn = run(two, &n);
    assert_int_equal(rc.memory.weights, rn.memory.weights);
    assert_int_equal(rc.memory.gradients, rn.memory.gradients);
    assert_int_equal(rc.memory.optimizer_states, rn.memory.optimizer_states);
    assert_int_equal(rc.memory.activations, rn.memory.activations);
    assert_int_equal(rn.memory.peak_allocated, rc.memory.peak_allocated + 1998336 + 2048);
    vc_result_free(&rc); vc_result_free(&rn);
}

/* use_gds: the parameter swapper's buffers on the GPU (_configure_aio:
 * buffer_device = device_name() if use_gds), buffer_count x _io_aligned_numel(
 * buffer_size) elements of the model's dtype, made at Init and kept. fp32: the
 * alignment is 1024 / 4 = 256 elements, which divide 1e8: 5 x 1e8 x 4 B =
 * 2,000,000,000 B (a multiple of 512) more resident and at the peak. */
static void test_gds_buffers_fp32(void **state)
{
    (void)state;
    vc_options n = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 0);
    vc_options g = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 1);
    vc_result rn = run(two, &n), rg = run(two, &g);
    assert_int_equal(rg.memory.weights - rn.memory.weights, INT64_C(2000000000));
    assert_int_equal(rg.memory.peak_allocated - rn.memory.peak_allocated, INT64_C(2000000000));
    vc_result_free(&rn); vc_result_free(&rg);
}

/* bf16: the alignment is 1024 / 2 = 512 elements; 1e8 is 195,312.5 of them, so
 * each buffer is 195,313 x 512 = 100,000,256 elements: 5 x 100,000,256 x 2 B =
 * 1,000,002,560 B (a multiple of 512). */
static void test_gds_buffers_bf16_aligned(void **state)
{
    (void)state;
    vc_options n = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 0);
    vc_options g = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 1);
    n.precision = g.precision = VC_PREC_BF16;
    vc_result rn = run(two, &n), rg = run(two, &g);
    assert_int_equal(rg.memory.weights - rn.memory.weights, INT64_C(1000002560));
    vc_result_free(&rn); vc_result_free(&rg);
}

/* Inference: no optimizer, so no CPU flat buffer: W1 and W2 stay on NVMe.
 * CPU offload (fetch_sub_module of layers[0]): W1 gathered and W2 prefetched
 * (within prefetch_bucket_size), both 3,996,160, with the persistent biases
 * 8,192: weights 8,000,512 at the peak in layers[0], the prefetch's H2D copy of
 * W2's partition 1,998,336 the temporaries.
 * NVMe: the prefetch loop stops at W2, whose partition is on NVMe ("nvme
 * prefetch is handled elsewhere"); __prefetch_nvme_param_partitions swaps it in
 * (numel_in_flight 0: only the first of the queue); layers[0]'s W1 is released
 * (not used again) and layers[1]'s fetch gathers W2 then: the peak is in
 * layers[1], W2 3,996,160 + the biases 8,192 = 4,004,352 of weights, its H2D copy
 * 1,998,336, the input and layers[0]'s output 4,096 each: 6,010,880.
 * NVMe + GDS: W2's partition is in a GPU swap buffer, .to(device) is a view, no
 * copy: temporaries 0; the buffers 2,000,000,000 resident; the peak at layers[1]'s
 * output, 2,000,000,000 + 4,004,352 + three activations of 4,096 = 2,004,016,640. */
static void test_infer_nvme_prefetch(void **state)
{
    (void)state;
    vc_options c = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_CPU, 0);
    vc_options n = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 0);
    vc_options g = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 1);
    c.mode = n.mode = g.mode = VC_MODE_INFER;
    vc_result rc = run(two, &c), rn = run(two, &n), rg = run(two, &g);
    assert_int_equal(rc.peak.weights, 8000512);
    assert_int_equal(rc.peak.temporaries, 1998336);
    assert_string_equal(rn.peak.layer, "layers[1]");
    assert_int_equal(rn.peak.weights, 4004352);
    assert_int_equal(rn.peak.temporaries, 1998336);
    assert_int_equal(rn.memory.peak_allocated, 6010880);
    assert_int_equal(rg.peak.weights, INT64_C(2004004352));
    assert_int_equal(rg.peak.temporaries, 0);
    assert_int_equal(rg.memory.peak_allocated, INT64_C(2004016640));
    vc_result_free(&rc); vc_result_free(&rn); vc_result_free(&rg);
}

/* offload_optimizer {device: nvme} under stages 1 and 2: DeepSpeedZeroOptimizer
 * takes any device but none as cpu_offload (no swapper): the same estimate. */
static void test_optimizer_nvme_stage12_equals_cpu(void **state)
{
    (void)state;
    vc_parallel ps[] = {VC_PARALLEL_ZERO2, VC_PARALLEL_ZERO1};
    for (size_t i = 0; i < 2; i++) {
        vc_options c = opts(ps[i], 4, VC_OFFLOAD_OPTIMIZER, VC_OFFLOAD_DEVICE_CPU, 0);
        vc_options n = opts(ps[i], 4, VC_OFFLOAD_OPTIMIZER, VC_OFFLOAD_DEVICE_NVME, 1);
        vc_result rc = run(two, &c), rn = run(two, &n);
        assert_same(&rc, &rn);
        vc_result_free(&rc); vc_result_free(&rn);
    }
}

/* Allocations and frees of `bytes` in category `cat` per phase (forward, backward,
 * optimizer) in vc_trace's timeline. */
typedef struct {
    const char *cat;
    int64_t bytes;
    int allocs[3], frees[3];
} count_t;

static void on_count(void *ctx, const char *text)
{
    count_t *c = ctx;
    char phase[32], op[16], cat[16];
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld", phase, op, cat, &bytes, &total) != 5) return;
    if (strcmp(cat, c->cat) || bytes != c->bytes) return;
    int k = !strcmp(phase, "forward") ? 0 : !strcmp(phase, "backward") ? 1 : !strcmp(phase, "optimizer") ? 2 : -1;
    if (k < 0) return;
    if (!strcmp(op, "alloc")) c->allocs[k]++;
    else if (!strcmp(op, "free")) c->frees[k]++;
}

static count_t count(const vc_options *o, const char *cat, int64_t bytes)
{
    vc_model *m = NULL;
    vc_error err = {0};
    count_t c = {cat, bytes, {0, 0, 0}, {0, 0, 0}};
    if (vc_model_load_string(two, strlen(two), "two.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    if (vc_trace(m, o, on_count, &c, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return c;
}

/* offload_optimizer {device: nvme} under stage 3, fp32, world 4: one sub-group of
 * 500,000 elements (2,000,000 B >= 1 MiB: _swappable_optimizer_subgroup). partition_grads
 * -> _offload_grad_partition_at_boundary appends grad_buffer.to(float32) (the GPU copy
 * itself in fp32) to offload_fp32_gradients; OptimizerSwapper._swap_out_gradients keeps
 * a tensor under MIN_AIO_BYTES in swap_info.unswapped_gradients, on the GPU, until
 * the sub-group's step reads it (_retrieve_unswapped_grad_partitions). W1's partition
 * is 249,750 elements (999,000 B -> 999,424), b1's 250 (1,000 B -> 1,024), W2's and
 * b2's the same: all four under 1 MiB, so their fp32 gradients, made in backward, go
 * in the optimizer step (category grad: 2 of 999,424 and 2 of 1,024), where with
 * device cpu each is copied into the CPU fp32 gradient and freed in backward. The
 * peak (backward, before the reduce) and the resident figures do not move. */
static void test_optimizer_nvme_stage3_unswapped(void **state)
{
    (void)state;
    vc_options c = opts(VC_PARALLEL_ZERO3, 4, VC_OFFLOAD_OPTIMIZER, VC_OFFLOAD_DEVICE_CPU, 0);
    vc_options n = opts(VC_PARALLEL_ZERO3, 4, VC_OFFLOAD_OPTIMIZER, VC_OFFLOAD_DEVICE_NVME, 0);
    count_t cw = count(&c, "grad", 999424), nw = count(&n, "grad", 999424);
    count_t nb = count(&n, "grad", 1024);
    assert_int_equal(cw.frees[2], 0);
    assert_int_equal(nw.frees[2], 2);
    assert_int_equal(nb.frees[2], 2);
    vc_result rc = run(two, &c), rn = run(two, &n);
    assert_same(&rc, &rn);
    vc_result_free(&rc); vc_result_free(&rn);
}

static void expect_refusal(const char *json, const vc_options *o, const char *opt, const char *words)
{
    vc_result r;
    vc_error err = {0};
    assert_int_equal(estimate(json, o, &r, &err), VC_ERR_USAGE);
    if (!strstr(CLI_MSG(&err), opt) && !strstr(CLI_PATH(&err), opt)) fail_msg("'%s' not named in: %s", opt, err.msg);
    if (!strstr(CLI_MSG(&err), words)) fail_msg("'%s' not in: %s", words, err.msg);
}

/* What DeepSpeed refuses, and what has no NVMe. */
static void test_refusals(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_NONE, VC_OFFLOAD_DEVICE_NVME, 0);
    expect_refusal(two, &o, "--offload-device", "give --offload");
    o = opts(VC_PARALLEL_FSDP, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 0);
    expect_refusal(two, &o, "--offload-device", "CPU only");
    o = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_CPU, 1);
    expect_refusal(two, &o, "--nvme-gds", "--offload-device nvme");
    /* ZeRO stage 2 has no offload_param, whatever the device */
    o = opts(VC_PARALLEL_ZERO2, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 0);
    expect_refusal(two, &o, "--offload", "stage 2");
}

/* get_buffer asserts numel <= buffer_size (1e8) for every swappable partition
 * Init makes: Linear(20000 -> 10001, bias=False) is 200,020,000 elements, at
 * world 2 a partition of 100,010,000 (refused), at world 4 of 50,005,000. */
static void test_buffer_size(void **state)
{
    (void)state;
    const char *big = "{\"input\": [20000], \"layers\": [{\"type\": \"Linear\", \"in_features\": 20000, "
                      "\"out_features\": 10001, \"bias\": false}]}";
    vc_options o = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 0);
    expect_refusal(big, &o, "--offload-device", "100010000 elements");
    o.gpus = 4;
    vc_result r = run(big, &o);
    assert_true(r.memory.peak_allocated > 0);
    vc_result_free(&r);
}

/* swap_in asserts a free buffer for each partition it brings in: an LSTM of
 * hidden 512 over input 512 has weight_ih_l{k} and weight_hh_l{k} of 2048 x 512
 * elements, a partition of 524,288 (2 MiB, swappable) at world 2; one module,
 * fetched at once. num_layers 2: 4 buffers of the 5 (accepted); 3: 6 (refused). */
static void test_swap_buffers(void **state)
{
    (void)state;
    const char *l2 = "{\"input\": [16, 512], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 512, "
                     "\"hidden_size\": 512, \"num_layers\": 2}]}";
    const char *l3 = "{\"input\": [16, 512], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 512, "
                     "\"hidden_size\": 512, \"num_layers\": 3}]}";
    vc_options o = opts(VC_PARALLEL_ZERO3, 2, VC_OFFLOAD_PARAMS, VC_OFFLOAD_DEVICE_NVME, 0);
    o.mode = VC_MODE_INFER;
    vc_result r = run(l2, &o);
    assert_true(r.memory.peak_allocated > 0);
    vc_result_free(&r);
    expect_refusal(l3, &o, "--offload-device", "needs 6 parameter swap buffers");
}

/* The CLI's exit status, its stdout and its stderr for `args`,
 * under MALLOC_PERTURB_=254: glibc fills every fresh malloc/realloc block with
 * 254 ^ 0xff = 0x01 bytes, so a read of a never-written int32 is 0x01010101 (a
 * storage index far past the end) instead of whatever the heap held. */
static int cli_perturbed(const char *args, char *out, size_t nout, char *err, size_t nerr)
{
    char cmd[2048], e[] = "/tmp/vc_nvme_errXXXXXX";
    int fe = mkstemp(e);
    assert_true(fe >= 0);
    snprintf(cmd, sizeof cmd, "MALLOC_PERTURB_=254 %s %s 2>%s", VC_CLI, args, e);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t k = fread(out, 1, nout - 1, p);
    out[k] = 0;
    int st = pclose(p);
    FILE *f = fdopen(fe, "rb");
    assert_non_null(f);
    k = fread(err, 1, nerr - 1, f);
    err[k] = 0;
    fclose(f);
    remove(e);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* A refusal in the middle of forward, while ops hold saved tensors. DeepSeek-V2-Lite
 * (tests/data/hf/deepseek-v2-lite-shape.json, model_type deepseek_v3: hidden 2048, vocab
 * 102400, 27 layers, 64 routed experts of moe_intermediate 1408, 2 shared) under zero3 at
 * 8 GPUs, fp32 (the default), offload_param nvme with use_gds (without it the same
 * refusal, the same crash before). At lm_head's pre-forward fetch the last decoder
 * layer's five swappable partitions are still swapped in, each holding one of
 * buffer_count's 5 buffers: experts.gate_up_proj (64 x 2 x 1408 x 2048 = 369,098,752
 * elements, a partition of 46,137,344), experts.down_proj (184,549,376 -> 23,068,672)
 * and the three shared_experts weights (2816 x 2048 = 5,767,168 -> 720,896 elements,
 * 2,883,584 B >= MIN_AIO_BYTES), all kept AVAILABLE because backward uses them again
 * within stage3_max_reuse_distance (1e9 elements: only the final norm and lm_head's
 * 209,715,200, forward then backward, come between; partitioned_param_coordinator.py
 * __params_to_release).
 * lm_head.weight (102400 x 2048 = 209,715,200 -> 26,214,400 elements, 104,857,600 B)
 * is on NVMe and needs a sixth: AsyncPartitionedParameterSwapper.swap_in asserts
 * 'Not enough buffers' (the counts checked in gdb at the refusal: nheld 5, need 1).
 * The build stopped there used to unwind saved-tensor counts whose entries were never
 * written (autograd.c push_saved) and crashed in s_unref: the CLI gives exit 2, one
 * line, no stdout. */
static void test_refusal_mid_forward(void **state)
{
    (void)state;
    char out[4096], err[2048];
    int st = cli_perturbed(VC_TEST_DATA "/hf/deepseek-v2-lite-shape.json --parallel zero3 --gpus 8 --offload params "
                           "--offload-device nvme --nvme-gds", out, sizeof out, err, sizeof err);
    assert_int_equal(st, 2);
    assert_string_equal(out, "");
    assert_string_equal(err, "vramcalc: " VC_TEST_DATA "/hf/deepseek-v2-lite-shape.json: --offload-device: nvme: "
                             "a gather needs 1 parameter swap buffers with 5 of offload_param's buffer_count (5) in "
                             "use (DeepSpeed's swap_in asserts 'Not enough buffers')\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_nvme_vs_cpu_offload),
        cmocka_unit_test(test_gds_buffers_fp32),
        cmocka_unit_test(test_gds_buffers_bf16_aligned),
        cmocka_unit_test(test_infer_nvme_prefetch),
        cmocka_unit_test(test_optimizer_nvme_stage12_equals_cpu),
        cmocka_unit_test(test_optimizer_nvme_stage3_unswapped),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_buffer_size),
        cmocka_unit_test(test_swap_buffers),
        cmocka_unit_test(test_refusal_mid_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
