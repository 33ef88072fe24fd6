/* --serve --tp N: the logits' all-gather of vLLM's profiling run (issue 27; src/engine/serve_nccl.c),
 * its bytes in PyTorch's allocator and its NCCL communicator's outside it. Every expected value by hand:
 *  - vllm/model_executor/layers/logits_processor.py @ 00db1f12 LogitsProcessor._get_logits: the rank's
 *    logits [rows, padded vocab / tp], _gather_logits -> tensor_model_parallel_all_gather (vllm/platforms/
 *    interface.py @ c7761993 Platform.use_all_gather: True), then logits[..., :org_vocab_size];
 *  - base_device_communicator.py @ 00a18bc3 DeviceCommunicatorBase.all_gather (CudaCommunicator @ 089eca13
 *    has none of its own): torch.empty([tp x rows, cols]), dist.all_gather_into_tensor on the device group
 *    (torch.distributed's ProcessGroupNCCL, its communicator made at this first collective), then
 *    reshape/movedim/reshape: a copy [rows, tp x cols];
 *  - gpu_model_runner.py _dummy_sampler_run: the sampler's fp32 copy of [rows, vocab_size];
 *  - NCCL (NVIDIA/nccl@5067397c, src/engine/nccl.c, tests/test_nccl.c): NVLS credits at init (2 MiB after
 *    cuMem's rounding), NVLS buffers heads x 16 channels x 2 x 1 MiB on sm90 NVSwitch boards; a ring of
 *    24 channels x (10 + 2) MiB elsewhere on NVSwitch A100s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "load_file.h"

#define HF VC_TEST_DATA "/hf/"
#define MIB(n) ((int64_t)(n) << 20)

static void serve_on(const vc_model *m, const vc_options *o, const vc_serve_options *so, const char *gpu,
                     vc_serve_result *r)
{
    vc_gpu_spec g;
    vc_error err;
    assert_int_equal(vc_gpu_parse(gpu, &g, &err), VC_OK);
    if (vc_serve(m, o, so, &g, r, &err)) fail_msg("serve: %s", err.msg);
}

static void opts(vc_options *o, int64_t tp)
{
    vc_options_init(o);
    o->precision = VC_PREC_BF16;
    o->prompt = 1024;
    o->new_tokens = 256;
    o->tp = tp;
    o->gpus = tp;
}

/* Llama-3.1-8B (vocab_size 128256 = 2004 x 64: no padding) on 2 H100s, 1024 dummy requests of one token
 * each (max_num_batched_tokens = max_num_seqs = 1024): the run's peak is its end, the sampler's */
static void llama_tp2_peak(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    opts(&o, 2);
    vc_serve_options so;
    vc_serve_options_init(&so);
    so.max_num_batched_tokens = 1024;
    so.max_num_seqs = 1024;
    vc_serve_result r;
    serve_on(m, &o, &so, "h100-80gb", &r);
    /* at the end of the run: the gathered logits [1024, 128256] bf16 = 262,668,288 B, the sampler's fp32
     * copy [1024, 128256] = 525,336,576 B, and the dummy run's input ids, 1024 int64 = 8,192 B (held by
     * the run, src/engine/generate.c); the rank's logits [1024, 64128] bf16 died with the all-gather, whose
     * moment held 131,334,144 + 2 x 262,668,288 = 656,670,720 B, less. vLLM before the gather was
     * modelled: the rank's logits and their fp32 copy, 394,002,432 + 8,192 */
    assert_int_equal(r.profile_peak - r.weights, INT64_C(262668288) + INT64_C(525336576) + 8192);
    /* the all-reduce (1024 x 4096 x 2 B = 8 MiB) is not under the custom all-reduce's 8 MiB but under the
     * symmetric memory's 64 MiB: no NVLS all-reduce. The all-gather's communicator: NVLS credits 2 MiB +
     * 2 heads x 16 channels x 2 x 1 MiB */
    assert_int_equal(r.non_torch_nccl, 0);
    assert_int_equal(r.non_torch_logits_nccl, MIB(2) + MIB(64));
    assert_int_equal(r.non_torch, MIB(63) + MIB(9) + MIB(66)); /* cuBLAS, attention kernels (context.c) */
    assert_int_equal(r.graphs_subtracted, r.graphs_estimate); /* vLLM's default since v0.21.0: the graphs' measure, estimated */
    assert_int_equal(r.kv_cache, r.requested - r.profile_peak - r.non_torch - r.graphs_estimate);
    vc_model_free(m);
}

/* The communicator by topology: 8 H100s (8 heads), NVLS off, A100s, an MI300X */
static void communicator(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    opts(&o, 8);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    serve_on(m, &o, &so, "h100-80gb", &r);
    assert_int_equal(r.non_torch_logits_nccl, MIB(2) + 8 * 16 * MIB(2)); /* credits + 8 heads x 16 x 2 MiB */
    o.nccl_nvls = VC_NCCL_NVLS_OFF; /* NCCL_NVLS_ENABLE=0: the ring, 24 channels x (10 + 2) MiB */
    serve_on(m, &o, &so, "h100-80gb", &r);
    assert_int_equal(r.non_torch_logits_nccl, 24 * MIB(12));
    o.nccl_nvls = VC_NCCL_NVLS_AUTO;
    /* two nodes of 4: tuning.cc disables NVLS across nodes without CollNet, so the all-gather runs the
     * ring: on each of 24 channels a P2P receive + send (12 MiB), and the 24 channels' network ends spread
     * over the node's 4 GPUs, 6 on the busiest, each a network receive + send (20 MiB) instead of a P2P
     * pair (+8 MiB; tests/test_nccl.c): 288 + 48 MiB; the NVLS credits at init (4 heads) 2 MiB */
    o.gpus_per_node = 4;
    serve_on(m, &o, &so, "h100-80gb", &r);
    assert_int_equal(r.non_torch_logits_nccl, MIB(2) + 24 * MIB(12) + 6 * MIB(8));
    o.gpus_per_node = 0;
    opts(&o, 2);
    serve_on(m, &o, &so, "a100-80gb", &r); /* no multicast: the ring */
    assert_int_equal(r.non_torch_logits_nccl, 24 * MIB(12));
    serve_on(m, &o, &so, "mi300x", &r); /* RCCL (tests/test_serve_rccl.c): 32 channels x 8 MiB, no tree beyond */
    assert_int_equal(r.non_torch_logits_nccl, 32 * MIB(8));
    opts(&o, 1); /* one GPU: no gather, no communicator */
    serve_on(m, &o, &so, "h100-80gb", &r);
    assert_int_equal(r.non_torch_logits_nccl, 0);
    vc_model_free(m);
}

/* A padded vocabulary: GPT-2's vocab_size 50257 is padded to 50304 = 786 x 64 (25152 a rank at tp 2); the
 * gathered logits hold the padding columns, the sampler's fp32 copy holds vocab_size columns. At the run's
 * end, tp 2 holds the gathered bf16 [1024, 50304] and the fp32 [1024, 50257], tp 1 the head's bf16
 * [1024, 50257] and the same fp32 copy; everything else the run holds at its end (the ids; the rest of
 * GPT-2's) is the same at both: the difference is 1024 x 47 x 2 B */
static void gpt2_padding(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "gpt2.json");
    vc_options o;
    opts(&o, 1);
    o.prompt = 512;
    vc_serve_options so;
    vc_serve_options_init(&so);
    so.max_num_batched_tokens = 1024;
    so.max_num_seqs = 1024;
    vc_serve_result r1, r2;
    serve_on(m, &o, &so, "h100-80gb", &r1);
    opts(&o, 2);
    o.prompt = 512;
    serve_on(m, &o, &so, "h100-80gb", &r2);
    assert_int_equal((r2.profile_peak - r2.weights) - (r1.profile_peak - r1.weights), 1024 * 47 * 2);
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_tp2_peak),
        cmocka_unit_test(communicator),
        cmocka_unit_test(gpt2_padding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
