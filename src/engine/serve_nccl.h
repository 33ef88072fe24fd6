/*
 * serve_nccl.h — vLLM's tensor-parallel logits gather in the profiling run
 * (src/engine/serve_nccl.c; issue 27).
 */
#ifndef VC_SERVE_NCCL_H
#define VC_SERVE_NCCL_H

#include "plan.h"

/* The profiling run's LogitsProcessor._gather_logits at --tp > 1: emits the
 * all-gather of the rank's logits x (cols columns a row) and its reshape;
 * returns the gathered logits, *sampled the columns the sampler copies to
 * fp32 (the model's vocab_size, the padding sliced off). */
vc_t vc__vllm_gather_logits(vc_build *b, vc_t x, int64_t cols, int64_t *sampled);

/* The NCCL bytes the logits' all-gather sets up after vLLM's snapshot: the
 * TP group's torch.distributed communicator, its first collective; n: the
 * TP group's vc_nccl_per_gpu. */
int64_t vc__vllm_logits_nccl(const vc_nccl_info *n);

#endif
