/*
 * serve_nccl.c — the logits' all-gather of vLLM's profiling run under
 * --serve --tp N (issue 27): what it allocates in PyTorch's caching allocator
 * and the NCCL buffers its communicator sets up outside it.
 *
 * vLLM (vllm-project/vllm):
 *  - vllm/model_executor/layers/logits_processor.py @ 00db1f12
 *    LogitsProcessor._get_logits: logits = lm_head.quant_method.apply(...),
 *    the rank's [rows, num_embeddings_per_partition] (ParallelLMHead: the
 *    vocabulary padded to 64 and split, src/hf/hf_tp.c), then
 *    self._gather_logits(logits), then logits[..., :self.org_vocab_size]
 *    (a view: the padding sliced off); _gather_logits takes
 *    tensor_model_parallel_all_gather when self.use_all_gather, which is
 *    current_platform.use_all_gather(): vllm/platforms/interface.py
 *    @ c7761993 Platform.use_all_gather returns True, and neither the CUDA
 *    nor the ROCm platform overrides it (tensor_model_parallel_gather, to
 *    rank 0 only, is no default);
 *  - tensor_model_parallel_all_gather -> GroupCoordinator.all_gather ->
 *    the TP group's device communicator; CudaCommunicator
 *    (vllm/distributed/device_communicators/cuda_communicator.py @ 089eca13)
 *    has no all_gather of its own (PyNccl takes all_reduce, reduce_scatter,
 *    all_gatherv, send and recv only), so DeviceCommunicatorBase.all_gather
 *    (base_device_communicator.py @ 00a18bc3) runs:
 *      output_tensor = torch.empty((input_size[0] x world_size,) + rest)
 *      dist.all_gather_into_tensor(output_tensor, input_, group=self.device_group)
 *      output_tensor.reshape((world_size,) + input_size).movedim(0, dim)
 *        .reshape(... world_size x input_size[dim] ...)
 *    with dim = -1: the movedim makes the last reshape a copy ([rows, tp,
 *    cols] is not viewable as [rows, tp x cols] for rows > 1), so the empty
 *    [tp x rows, cols] and the copy [rows, tp x cols] are both alive at the
 *    copy, with the rank's logits (input_, the caller's until it returns);
 *    the empty dies when all_gather returns, the rank's logits when
 *    _get_logits rebinds them. One dummy request (rows 1) makes the last
 *    reshape a view; the plan is built for every batch alike and counts the
 *    copy there too (one row of the vocabulary, at most a few MiB);
 *  - gpu_model_runner.py _dummy_sampler_run: compute_logits on the last
 *    token of each dummy request (rows = min(max_num_seqs,
 *    max_num_batched_tokens), src/engine/serve.c), then the sampler's fp32
 *    copy of the sliced logits ([rows, vocab_size]; src/engine/generate.c).
 *  - the communicator: dist.all_gather_into_tensor on device_group runs
 *    torch.distributed's ProcessGroupNCCL, whose NCCL communicator is not
 *    PyNcclCommunicator's: ProcessGroupNCCL makes it at the group's first
 *    collective (vLLM's init_process_group passes no device_id: no eager
 *    init), which is this all-gather, in the profiling run, after vLLM's
 *    memory snapshot: in the non-torch increase. NCCL (NVIDIA/nccl@5067397c,
 *    src/engine/nccl.c): ncclNvlsSetup's credits at init where the GPUs have
 *    NVLS; the all-gather on one node takes NVLS there (the training
 *    layouts' assumption, nccl.c), whose buffers ncclNvlsBufferSetup sets up
 *    at that first NVLS collective (group.cc ncclCollPreconnect), and no ring
 *    (NCCL_RUNTIME_CONNECT: only the chosen algorithm connects); elsewhere
 *    (no NVLS, or the group spans nodes: tuning.cc disables NVLS across
 *    nodes without CollNet) the ring's connections of tp ranks.
 *    On AMD cards (ROCm) the same path runs (CudaCommunicator is the ROCm
 *    platform's communicator, serve.c), ProcessGroupNCCL over RCCL
 *    (ROCm/rccl@0cbce2a7): no NVLS, and RCCL connects every channel's rings
 *    and trees at the communicator's init (no runtime connect at that
 *    commit): nccl.c's RCCL ring bytes (trees included) of tp ranks, e.g.
 *    256 MiB on 2 MI300X, 896 on 8.
 * Later vLLM differs: copies of v0.30.0's cuda_communicator.py (forks; no
 * vllm-project/vllm commit of it could be read here) have a
 * CudaCommunicator.all_gather that runs PyNccl's all_gather on CUDA (the
 * base class's on ROCm), the same torch-side tensors. There the gather's
 * communicator is the all-reduce's, whose ring and NVLS credits are in the
 * snapshot: it adds the NVLS buffers only where the run's all-reduce went to
 * the custom all-reduce or symmetric memory, nothing elsewhere. Not modelled:
 * vLLM's commit here is the one serve.c cites for CudaCommunicator. */
#include <string.h>

#include <cjson/cJSON.h>

#include "ops.h"
#include "serve_nccl.h"
#include "util.h"

/* The language model's vocab_size (vllm/transformers_utils/config.py get_hf_text_config: a multimodal
 * config's text_config), 0 when the model has no config.json text */
static int64_t config_vocab(const vc_model *m)
{
    if (!m->gen_json || !m->text) return 0;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    if (!root) return 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(vc__vllm_text_config(root), "vocab_size");
    int64_t n = cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e12 ? (int64_t)v->valuedouble : 0;
    cJSON_Delete(root);
    return n;
}

vc_t vc__vllm_gather_logits(vc_build *b, vc_t x, int64_t cols, int64_t *sampled)
{
    const int64_t tp = b->o.tp, rows = b->gen.head_rows; /* rows of one sample (the dummy request): 1 */
    const vc_dtype dt = vc_dt_of(b, x);
    /* tp x cols <= the padded vocabulary the head was split from (hf_tp.c): no overflow */
    const vc_numel full = vc_n_sample(rows * tp * cols);
    vc_t out = vc__op_nograd(b, "all_gather_into_tensor", x, -1, full, dt); /* torch.empty, filled */
    vc_t gathered = vc__op_nograd(b, "reshape", out, x, full, dt);          /* the movedim's copy */
    const int64_t org = config_vocab(b->m);
    *sampled = org > 0 && org <= tp * cols ? org : tp * cols; /* logits[..., :org_vocab_size] */
    return gathered;
}

int64_t vc__vllm_logits_nccl(const vc_nccl_info *n)
{
    const int64_t buffers = n->nvls_bytes - n->nvls_credit_bytes; /* the TP group's (an all-reduce group) */
    if (n->nvls_credit_bytes > 0 && n->nodes == 1) return n->nvls_credit_bytes + buffers;
    return n->nvls_credit_bytes + n->ring_bytes;
}
