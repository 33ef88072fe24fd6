/*
 * context.c — the CUDA context: what nvidia-smi shows for a PyTorch process
 * beyond the caching allocator's segments (issue 27; docs/context.md).
 *
 * cuda_context = runtime + local_memory + eager + cublas + kernels
 *                + backward_local_memory + backward_kernels
 *
 * Where the constants come from. The H200 run (bench/accuracy/logs/
 * gpu_h200_torch211.raw.json: 87 cases, torch 2.11.0+cu130, cuDNN 9.19,
 * driver 580.159.04, lazy module loading, 132 SMs of 2048 threads) measured
 * the context as nvidia-smi's process total minus memory_reserved() at the
 * same moment. It takes nine values, 622-758 MiB, set by what the step runs
 * and not by batch, optimizer or model size. bench/accuracy/context_fit.py
 * fits them on the libraries each case's ops use (vramcalc's own op
 * sequence) and the mode; its "shared" fit, all 87 within 2 MiB and 68 to
 * the MiB, gives the constants marked FIT below:
 *   base 613, cuBLAS 63, cuDNN-or-flash kernels 9, training with GEMMs 66,
 *   training with cuDNN or flash kernels 7 (MiB).
 * cuDNN and flash attention are one part, not two: conv+GEMM training and
 * flash+GEMM training are both 758, and so is the one case that runs all
 * three (vit_b1_adafactor_bf16; an additive fit puts it at 774).
 *
 * EXTRAPOLATED, not measured:
 *  - the base split into `runtime` (613 - 264 = 349 MiB) and `local_memory`
 *    = SMs x resident threads x 1 KiB, the CUDA default stack size
 *    (cudaLimitStackSize: 1024 B a thread; the driver keeps local memory for
 *    every thread the device can hold), 264 MiB on 132 x 2048;
 *  - the 66 MiB training term as local memory grown by 256 B a thread
 *    (132 x 2048 x 256 B is exactly 66 MiB); the other reading, cuBLAS
 *    handles of autograd's device thread (CublasHandlePool.cpp's thread-local
 *    pool windows), would keep 66 MiB on every GPU: gpu_compare.py records
 *    what tells them apart (issue 27 item 5);
 *  - other CUDA runtimes from 11.7 (13.0's figures);
 *  - eager module loading: + 362 MiB, PyTorch PR #86509's two measurements
 *    (torch 1.13, CUDA 11.7, cudaMemGetInfo after one 6.4 MB tensor: lazy
 *    287,047,680 B, eager 666,632,192 B: 379,584,512 B apart); every module
 *    of every library loads at start-up, so the library parts are 0 there;
 *  - AMD GPUs: not modelled, the earlier 500 MiB estimate.
 * Lazy loading needs CUDA 11.7 (where CUDA_MODULE_LOADING=LAZY appeared);
 * PyTorch sets it when the user did not since 1.13 (PR #86509,
 * torch/cuda/__init__.py), and it is CUDA's own default since 12.2.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "util.h"

#define MIB(n) ((int64_t)(n) << 20)

/* The device without --gpu: src/engine/scratch.c's, an A100 (108 SMs of 2048 threads). */
#define DEFAULT_SMS 108
#define DEFAULT_SM_THREADS 2048
#define STACK_DEFAULT 1024   /* cudaLimitStackSize's default, bytes a thread */
#define STACK_GROWTH 256     /* the training GEMM step's growth, bytes a thread (FIT: 66 MiB on 132 x 2048) */

typedef struct {
    int cuda_from; /* first CUDA runtime (100*major + minor) of the row */
    int loading;   /* VC_MODULE_LOADING_LAZY or _EAGER */
    int64_t runtime, eager, cublas, kernels, backward_kernels;
    int measured;  /* fitted on this stack's measurements (on the H200) */
} ctx_row;

/* In CUDA order within each loading; a row holds until the next of the same loading. */
static const ctx_row rows[] = {
    /* eager: every module at start-up (PR #86509's +362 MiB), the library
     * parts in it; EXTRAPOLATED for every runtime */
    {1100, VC_MODULE_LOADING_EAGER, MIB(349), MIB(362), 0, 0, 0, 0},
    /* lazy from CUDA 11.7: the H200 run's FIT constants, EXTRAPOLATED to 11.7-12.x */
    {1107, VC_MODULE_LOADING_LAZY, MIB(349), 0, MIB(63), MIB(9), MIB(7), 0},
    /* CUDA 13.0 lazy: the H200 run (torch 2.11.0+cu130), FIT */
    {1300, VC_MODULE_LOADING_LAZY, MIB(349), 0, MIB(63), MIB(9), MIB(7), 1},
};

/* The earlier fixed estimate, kept where nothing is modelled (ROCm). */
#define UNMODELLED_CONTEXT MIB(500)

int vc_cuda_from_name(const char *s)
{
    if (!s) return -1;
    int major = 0, minor = 0, n = 0;
    if (sscanf(s, "%2d.%1d%n", &major, &minor, &n) != 2 || s[n] != '\0' || !(s[0] >= '0' && s[0] <= '9'))
        return -1;
    for (const char *p = s; *p; p++)
        if (!(*p == '.' || (*p >= '0' && *p <= '9'))) return -1;
    int v = 100 * major + minor;
    return v >= VC_CUDA_OLDEST && v <= VC_CUDA_NEWEST ? v : -1;
}

const char *vc_cuda_name(int version, char *buf, size_t n)
{
    if (version == 0) version = VC_CUDA_DEFAULT;
    snprintf(buf, n, "%d.%d", version / 100, version % 100);
    return buf;
}

static const char *const loading_names[] = {"auto", "lazy", "eager"};

int vc_module_loading_from_name(const char *s)
{
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, loading_names[i]) == 0) return i;
    return -1;
}

const char *vc_module_loading_name(int m) { return m >= 0 && m < 3 ? loading_names[m] : "?"; }

vc_status vc_context_estimate(const vc_options *o, unsigned uses, vc_context_parts *parts, int64_t *total,
                              vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    memset(parts, 0, sizeof *parts);
    *total = 0;
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    if (in_st) return in_st;
    int cuda = o->cuda_version ? o->cuda_version : VC_CUDA_DEFAULT;
    if (cuda < VC_CUDA_OLDEST || cuda > VC_CUDA_NEWEST || cuda % 100 > 9)
        return vc_set_error(err, VC_ERR_USAGE, O("cuda"), "must be a CUDA release from 11.0 to 13.9 (e.g. 12.4)");
    int loading = o->module_loading;
    if (loading < VC_MODULE_LOADING_AUTO || loading > VC_MODULE_LOADING_EAGER)
        return vc_set_error(err, VC_ERR_USAGE, O("module_loading"), "must be auto, lazy or eager");
    if (loading == VC_MODULE_LOADING_AUTO) loading = cuda >= 1107 ? VC_MODULE_LOADING_LAZY : VC_MODULE_LOADING_EAGER;
    if (loading == VC_MODULE_LOADING_LAZY && cuda < 1107)
        return vc_set_error(err, VC_ERR_USAGE, O("module_loading"),
                            "lazy needs CUDA 11.7 or later (CUDA_MODULE_LOADING=LAZY); " O("cuda") " is %d.%d", cuda / 100,
                            cuda % 100);
    if (o->context >= 0) {
        parts->given = 1;
        *total = o->context;
        return VC_OK;
    }
    const vc_gpu *g = o->device;
    if (g && strcmp(g->vendor, "NVIDIA") != 0) {
        parts->runtime = UNMODELLED_CONTEXT;
        *total = UNMODELLED_CONTEXT;
        return VC_OK;
    }
    const ctx_row *row = NULL;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].loading == loading && rows[i].cuda_from <= cuda) row = &rows[i];
    /* every (runtime, loading) that passed the checks above has a row */
    int64_t threads = (int64_t)(g && g->sms > 0 ? g->sms : DEFAULT_SMS) *
                      (g && g->sm_threads > 0 ? g->sm_threads : DEFAULT_SM_THREADS);
    bool train = o->mode == VC_MODE_TRAIN, kern = uses & (VC_USES_CUDNN | VC_USES_FLASH);
    parts->runtime = row->runtime;
    parts->local_memory = threads * STACK_DEFAULT;
    parts->eager = row->eager;
    parts->cublas = uses & VC_USES_GEMM ? row->cublas : 0;
    parts->kernels = kern ? row->kernels : 0;
    parts->backward_local_memory = train && (uses & VC_USES_GEMM) ? threads * STACK_GROWTH : 0;
    parts->backward_kernels = train && kern ? row->backward_kernels : 0;
    parts->measured = row->measured && g && strcmp(g->name, "h200") == 0; /* the one card measured */
    *total = parts->runtime + parts->local_memory + parts->eager + parts->cublas + parts->kernels +
             parts->backward_local_memory + parts->backward_kernels; /* < 2^40: threads <= 2^31 */
    return VC_OK;
}

/* What a plan's ops run (VC_USES_*): GEMMs (vc_op_gemm), cuDNN ops by their
 * ATen names (layers/ops.c vc__op_conv's "convolution", layers/norm.c's
 * "cudnn_batch_norm", layers/rnn.c's "_cudnn_rnn*"), and flash attention
 * (layers/sdpa.c sdpa_flash). */
unsigned vc__plan_uses(const vc_plan *p)
{
    unsigned u = 0;
    for (size_t k = 0; k < p->nop; k++) {
        const op_t *op = &p->op[k];
        if (op->gemm) u |= VC_USES_GEMM;
        if (!op->name || (op->name[0] != 'c' && op->name[0] != '_')) continue; /* none of the names below */
        if (strcmp(op->name, "convolution") == 0 || strncmp(op->name, "cudnn_", 6) == 0 ||
            strncmp(op->name, "_cudnn", 6) == 0)
            u |= VC_USES_CUDNN;
        else if (strcmp(op->name, "_scaled_dot_product_flash_attention") == 0)
            u |= VC_USES_FLASH;
    }
    return u;
}
