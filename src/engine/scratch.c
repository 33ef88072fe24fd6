/*
 * scratch.c — what a CUDA reduction kernel takes from the caching allocator
 * while it runs.
 *
 * A reduction that splits its input across thread blocks combines their
 * partial results through global memory: gpu_reduce_kernel
 * (aten/src/ATen/native/cuda/Reduce.cuh) allocates `buffer`
 * (ReduceConfig::global_memory_size()) and `semaphores` (semaphore_size())
 * through c10::cuda::CUDACachingAllocator when
 * config.should_global_reduce(), launches, and frees both when it returns.
 * The launch configuration is setReduceConfig's, followed here step by step
 * for a reduction over one dimension of a contiguous tensor; the
 * multiprocessor count and threads per multiprocessor come from the GPU
 * (vc_gpu.sms, .sm_threads). Three sizes measured on an H200 with torch
 * 2.11 (VRAMCALC_CUDA_HISTORY, docs/accuracy.md "GPU measurements") are
 * reproduced to the byte: 8,388,608 B for torch.linalg.vector_norm(grad,
 * dim=-2) of a 1024 x 1024 weight (Adafactor's column mean), 2,457,600 B and
 * 1,114,112 B for the bias-gradient sums of a 192- and a 128-wide Linear over
 * 8 x 197 and 16 x 65 tokens.
 *
 * Not modelled: ROCm (its wavefront of 64 and its own tuning: no scratch is
 * counted on AMD presets), the AccumulationBuffer of a 16-bit reduction
 * larger than 32-bit indexing allows, and reductions other than the ones
 * the layers and optimizers ask for (vc_op_grad_reduce_rows, Adafactor).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "plan.h"

/* The device CUDA kernels are sized for: --gpu's preset, else an A100's
 * (108 multiprocessors of 2048 threads), the data-centre GPU of the
 * defaults elsewhere (the non-Hopper cuBLAS workspace). */
#define DEFAULT_SMS 108
#define DEFAULT_SM_THREADS 2048
#define WARP 32           /* at::cuda::warp_size() on NVIDIA */
#define MAX_NUM_THREADS 512 /* mnt_wrapper<T>::MAX_NUM_THREADS, every real dtype */
#define INPUT_VEC 4       /* ReduceConfig::input_vec_size (vt0 = 4) */

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Reduce.cuh last_pow2: floor to a power of two, at least 1 (n < 2^31) */
static int64_t last_pow2(int64_t n)
{
    int64_t p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

static int64_t round512(int64_t n) { return n <= 0 ? 0 : (n + 511) / 512 * 512; }

static bool device(const vc_options *o, int64_t *sms, int64_t *threads)
{
    if (o->workspace == 0) return false; /* --workspace 0: no CUDA kernel scratch (the CPU harness's scope) */
    const vc_gpu *g = o->device;
    if (g && strcmp(g->vendor, "NVIDIA") != 0) return false;
    *sms = g && g->sms > 0 ? g->sms : DEFAULT_SMS;
    *threads = g && g->sm_threads > 0 ? g->sm_threads : DEFAULT_SM_THREADS;
    return true;
}

/* torch.cuda.get_device_properties(device).multi_processor_count of the device estimated for (--gpu's preset,
 * an AMD one's compute units as ROCm reports them; without one DEFAULT_SMS); 1 with --workspace 0 (the CPU
 * harness, where a kernel written for "cuda" / "xpu" / "npu" devices falls back to its own count of 1) */
int64_t vc_kernel_sms(const vc_options *o)
{
    if (o->workspace == 0) return 1;
    return o->device && o->device->sms > 0 ? o->device->sms : DEFAULT_SMS;
}

int64_t vc_reduce_scratch(const vc_options *o, int64_t nout, int64_t nin, bool fastest, int in_size, int acc_size)
{
    int64_t sms, threads;
    if (nout <= 0 || nin <= 1 || in_size <= 0 || !device(o, &sms, &threads)) return 0;
    /* TensorIterator::with_32bit_indexing: an input past INT32_MAX bytes is
     * reduced in pieces, the reduced dimension halved until one fits; each
     * piece launches (and frees) on its own, so the largest piece counts */
    while (nin > 1 && (nin > INT32_MAX / nout || nin * nout > INT32_MAX / in_size)) nin = div_up(nin, 2);
    if (nout > INT32_MAX) return 0;
    /* setReduceConfig: block.x along the fastest-moving dimension */
    int64_t dim0 = fastest ? nin : nout, dim1 = fastest ? nout : nin, ovec = 1;
    if (fastest && dim0 > 128) {
        dim0 /= INPUT_VEC; /* "vectorize along input" */
    } else if (!fastest) {
        ovec = 4; /* get_output_vec_size: 4, halved until it divides the output size */
        while (nout % ovec) ovec /= 2;
        dim0 /= ovec; /* "vectorize along output" */
    }
    /* set_block_dimension */
    int64_t mnt = MAX_NUM_THREADS / ovec;
    int64_t d0 = dim0 < mnt ? last_pow2(dim0) : mnt, d1 = dim1 < mnt ? last_pow2(dim1) : mnt;
    int64_t bw = d0 < WARP ? d0 : WARP;
    int64_t bh = d1 < mnt / bw ? d1 : mnt / bw;
    bw = d0 < mnt / bh ? d0 : mnt / bh;
    int64_t step_in = 1, step_out = 1;
    bool block_x_reduce = fastest, split_warps = false;
    if (fastest) step_in *= bw; /* input_mult[0]: lanes share one reduction */
    else step_out *= bw;        /* output_mult[0]: a lane per output */
    int64_t vpt = div_up(nin, step_in); /* values_per_thread */
    if (vpt >= bh * 16 || vpt >= 256) {
        split_warps = true; /* input_mult[1]: the warps of a block share one reduction */
        step_in *= bh;
    } else {
        step_out *= bh;
    }
    int64_t target = sms * (threads / (bw * bh)); /* multiProcessorCount x blocks per SM */
    int64_t grid = div_up(nout / ovec, step_out);
    vpt = div_up(nin, step_in);
    if (!split_warps || vpt < 256 || grid > target) return 0;
    int64_t c1 = div_up(target, grid), c2 = div_up(vpt, 16), c3 = div_up(vpt, 256);
    int64_t ctas = c1 < c2 ? c1 : c2;
    if (c3 > ctas) ctas = c3;
    if (ctas <= 1) return 0; /* input_mult[2] stays 0: no global reduction */
    /* global_memory_size(): sizeof(arg_t) x outputs x ctas_per_output, x
     * block.x x output_vec_size when lanes do not reduce together; nout <
     * 2^31, ctas < 2^31, the rest <= 2^11: no overflow */
    int64_t global = (int64_t)acc_size * nout * ctas;
    if (!block_x_reduce) global *= bw * ovec;
    return round512(global) + round512(4 * grid); /* + semaphore_size(): an int per grid column */
}

/* The upper bound the replay needs (src/engine/replay.c comp_bounds): ctas <= vpt / 16 + 1 and
 * block.x x output_vec_size <= 512, so bytes <= a + c x batch for nin = ps x batch + fx. */
void vc_reduce_scratch_bounds(int64_t nout, int64_t ps, int64_t fx, int acc_size, int64_t *a, int64_t *c)
{
    const int64_t cap = INT64_C(1) << 62;
    int64_t per = 0; /* bytes per unit of ctas */
    if (__builtin_mul_overflow((int64_t)acc_size * 512, nout, &per) || per > cap) {
        *a = *c = cap;
        return;
    }
    int64_t x, y;
    if (__builtin_mul_overflow(per, fx / 16 + 2, &x) || __builtin_add_overflow(x, 4 * nout + 1024, &x) || x > cap) x = cap;
    if (__builtin_mul_overflow(per, ps / 16 + (ps > 0), &y) || y > cap) y = cap;
    *a = x;
    *c = y;
}
