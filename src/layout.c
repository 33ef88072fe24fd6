/*
 * layout.c — the parallel-layout table (policy.h, vc_layout_row): how one
 * rank's training step differs from a single GPU's. One row today, a
 * single GPU, which changes nothing; the multi-GPU strategies (DDP, ZeRO,
 * FSDP, tensor and pipeline parallelism) are rows to come, each with its
 * module hooks and its share of the persistent state.
 */
#include "policy.h"

static const vc_layout_row single = {"single", 1, NULL};

const vc_layout_row *vc_layout_row_get(const vc_options *o)
{
    (void)o; /* no option selects another layout yet */
    return &single;
}
