/*
 * layout.c — the parallel layouts' registry (policy.h, vc_layout_desc): how
 * one rank's training step differs from a single GPU's. This file holds the
 * registry, the single GPU's descriptor (which changes nothing), the checks
 * the descriptors' capabilities drive (--offload and its device, the bucket
 * views) and helpers the layout files share. Each layout is in its own file,
 * ending with its descriptor: layout_ddp.c (ddp, zero1-torch),
 * layout_zero12.c (DeepSpeed stages 1 and 2), layout_zero3.c,
 * layout_megatron.c (megatron, megatron-dist), layout_fsdp1.c (fsdp,
 * shard-grad-op, hybrid), layout_fsdp2.c; tensor and pipeline parallelism
 * are hf_tp.c and pipeline.c. docs/parallel.md says what each allocates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "util.h"

/* A single GPU: nothing changes, nothing is sharded to offload. */
static const vc_layout_desc vc_layout_none = {
    .id = VC_PARALLEL_NONE,
    .caps = VC_LAYOUT_PP | VC_LAYOUT_EP,
    .offload_why = "offload needs a sharded " O("parallel") " layout (zero1, zero2, zero3, fsdp)",
};

/* The registry: every layout's descriptor, in the order the refusals list
 * them (vc__layout_names: "ddp, zero1, zero1-torch, megatron and
 * megatron-dist"). A new layout adds its line here and in VC_PARALLEL_MAP. */
extern const vc_layout_desc vc_layout_ddp, vc_layout_zero1_torch;              /* layout_ddp.c */
extern const vc_layout_desc vc_layout_zero1, vc_layout_zero2;                  /* layout_zero12.c */
extern const vc_layout_desc vc_layout_zero3;                                   /* layout_zero3.c */
extern const vc_layout_desc vc_layout_megatron, vc_layout_megatron_dist;       /* layout_megatron.c */
extern const vc_layout_desc vc_layout_fsdp, vc_layout_shard_grad_op, vc_layout_hybrid; /* layout_fsdp1.c */
extern const vc_layout_desc vc_layout_fsdp2;                                   /* layout_fsdp2.c */

static const vc_layout_desc *const layouts[] = {
    &vc_layout_none,     &vc_layout_ddp,      &vc_layout_zero1,         &vc_layout_zero1_torch,
    &vc_layout_zero2,    &vc_layout_zero3,    &vc_layout_megatron,      &vc_layout_megatron_dist,
    &vc_layout_fsdp,     &vc_layout_shard_grad_op, &vc_layout_hybrid,   &vc_layout_fsdp2,
};

const vc_layout_desc *vc__layout_desc(vc_parallel p)
{
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++)
        if (layouts[i]->id == p) return layouts[i];
    return NULL;
}

const char *vc__layout_names(unsigned caps, const char *last, char *buf, size_t n)
{
    size_t count = 0, k = 0, len = 0;
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++)
        count += layouts[i]->id != VC_PARALLEL_NONE && (layouts[i]->caps & caps) == caps;
    if (n) buf[0] = '\0';
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts && len < n; i++) {
        if (layouts[i]->id == VC_PARALLEL_NONE || (layouts[i]->caps & caps) != caps) continue;
        k++;
        int w = snprintf(buf + len, n - len, "%s%s", k == 1 ? "" : k == count ? last : ", ", vc_parallel_name(layouts[i]->id));
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* --offload: what the layout keeps on the CPU (vc_layout_desc.offload; DeepSpeed's
 * offload_optimizer for stages 1-3, offload_param for stage 3 only, config.py
 * DeepSpeedZeroConfig; FSDP1's CPUOffload(offload_params=True) moves the parameters and
 * with them their gradients and optimizer state, there is no optimizer-only setting),
 * and why not (its offload_why, or this). NULL: modelled. */
static const char *offload_refusal(const vc_layout_desc *d, vc_offload f)
{
    if (d->offload & (1u << f)) return NULL;
    return d->offload_why ? d->offload_why
                          : "this layout keeps everything on the GPU (no CPU offload): zero1, zero2, zero3 and fsdp offload";
}

/* --offload-device nvme (ZeRO-Infinity; docs/parallel.md 1.9, deepspeedai/DeepSpeed@edaa7221).
 * DeepSpeed's offload devices are none, cpu, nvme (zero/offload_config.py
 * OffloadDeviceEnum); no validator ties nvme to a stage: stages 1 and 2 take
 * any device but none as CPU offload (stage_1_and_2.py DeepSpeedZeroOptimizer
 * .__init__: cpu_offload = True), stage 3 swaps to NVMe (stage3.py
 * _configure_offloading: swap_optimizer, params_in_nvme_and_cpu). FSDP's
 * CPUOffload and CPUOffloadPolicy have no device: the CPU only. aio.use_gds
 * (swap_tensor/aio_config.py, default false) is read by the parameter swapper
 * (partitioned_param_swapper.py _configure_aio) and ignored by the optimizer
 * swappers (AsyncIOBuilder's handle always). NULL: modelled. */
static const char *nvme_refusal(const vc_options *o, const char **opt)
{
    *opt = O("offload_device");
    if (o->offload_device != VC_OFFLOAD_DEVICE_CPU && o->offload_device != VC_OFFLOAD_DEVICE_NVME) return "invalid value";
    if (o->offload_device == VC_OFFLOAD_DEVICE_NVME && o->offload == VC_OFFLOAD_NONE)
        return "nvme is where " OV("offload", "optimizer") " or params puts what leaves the GPU: give " O("offload");
    if (o->offload_device == VC_OFFLOAD_DEVICE_NVME && !(vc__layout_desc(o->parallel)->caps & VC_LAYOUT_ZERO_CONFIG))
        return "nvme is DeepSpeed ZeRO's (offload_optimizer / offload_param device): FSDP offloads to the CPU only";
    *opt = O("nvme_gds");
    if (o->nvme_gds != 0 && o->nvme_gds != 1) return "invalid value";
    if (o->nvme_gds && o->offload_device != VC_OFFLOAD_DEVICE_NVME)
        return "use_gds is the NVMe swapper's (aio section): give " OV("offload_device", "nvme");
    return NULL;
}

vc_status vc__layout_offload_check(const vc_options *o, vc_error *err)
{
    if ((unsigned)o->offload >= VC_OFFLOAD__N) return vc_set_error(err, VC_ERR_USAGE, O("offload"), "invalid value");
    const char *why = o->offload == VC_OFFLOAD_NONE ? NULL : offload_refusal(vc__layout_desc(o->parallel), o->offload);
    if (why)
        return vc_set_error(err, VC_ERR_USAGE, O("offload"), "%s with " OV("parallel", "%s") ": %s", vc_offload_name(o->offload),
                            vc_parallel_name(o->parallel), why);
    const char *nopt, *nwhy = nvme_refusal(o, &nopt); /* the device of an offload the layout has */
    return nwhy ? vc_set_error(err, VC_ERR_USAGE, nopt, "%s", nwhy) : VC_OK;
}

/* The bucket views: which layouts have them (VC_LAYOUT_GRAD_VIEW: DistributedDataParallel's
 * gradient_as_bucket_view, ddp and zero1-torch, whose model is wrapped in it;
 * VC_LAYOUT_PARAM_VIEW: ZeroRedundancyOptimizer's parameters_as_bucket_view), and what is
 * not modelled with them. */
vc_status vc__layout_view_check(const vc_options *o, vc_error *err)
{
    unsigned caps = vc__layout_desc(o->parallel)->caps;
    char names[128];
    if (o->gradient_as_bucket_view && !(caps & VC_LAYOUT_GRAD_VIEW))
        return vc_set_error(err, VC_ERR_USAGE, O("gradient_as_bucket_view"), "a DistributedDataParallel setting: " O("parallel") " "
                            "%s, not %s", vc__layout_names(VC_LAYOUT_GRAD_VIEW, " or ", names, sizeof names),
                            vc_parallel_name(o->parallel));
    if (o->parameters_as_bucket_view && !(caps & VC_LAYOUT_PARAM_VIEW))
        return vc_set_error(err, VC_ERR_USAGE, O("parameters_as_bucket_view"), "a ZeroRedundancyOptimizer setting: " O("parallel") " "
                            "%s, not %s", vc__layout_names(VC_LAYOUT_PARAM_VIEW, " or ", names, sizeof names),
                            vc_parallel_name(o->parallel));
    const char *opt = o->gradient_as_bucket_view ? O("gradient_as_bucket_view") : O("parameters_as_bucket_view");
    if ((o->gradient_as_bucket_view || o->parameters_as_bucket_view) && o->pp > 1)
        return vc_set_error(err, VC_ERR_USAGE, opt, "not modelled with " O("pp"));
    /* under no_sync() DDP's hook returns early (autograd_hook: !expect_autograd_hooks_) and .grad stays
     * AccumulateGrad's own until the last micro-batch; without no_sync it is the view from the first */
    if (o->gradient_as_bucket_view && o->accumulate > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("gradient_as_bucket_view"), "not modelled with " O("accumulate") " (what "
                            ".grad is between micro-batches depends on no_sync())");
    return VC_OK;
}

/* For a layout that casts or reshards every parameter (FSDP1's MixedPrecision,
 * fsdp2): only dense parameters of the precision's dtype are modelled. The
 * first quantized, dtype-pinned or LoRA adapter one refuses the estimate (b->st, naming opt
 * and the parameter); false then. */
bool vc__layout_dense_only(vc_build *b, const char *opt, const char *what)
{
    const vc_model *m = b->m;
    for (size_t p = 0; p < m->npar; p++)
        if (m->par[p].fmt != VC_WEIGHTS_DENSE || (m->par[p].flags & (VC_PARAM_PINNED | VC_PARAM_ADAPTER))) {
            b->st = VC_ERR_USAGE;
            b->why_opt = opt;
            snprintf(b->why, sizeof b->why, "%s over %s parameters (%s) is not modelled", what,
                     m->par[p].fmt != VC_WEIGHTS_DENSE ? "quantized" : m->par[p].flags & VC_PARAM_F32 ? "fp32-pinned"
                     : m->par[p].flags & VC_PARAM_PINNED ? "16-bit-pinned" : "LoRA adapter", m->par[p].name ? m->par[p].name : "?");
            return false;
        }
    return true;
}

const vc_layout_row *vc_layout_row_get(const vc_options *o)
{
    if (!o) return &vc_layout_none.hooks;
    const vc_layout_desc *d = vc__layout_desc(o->parallel);
    if (!d) return NULL;
    const vc_layout_row *v = d->views[o->gradient_as_bucket_view != 0][o->parameters_as_bucket_view != 0];
    return v ? v : &d->hooks;
}

/* --fsdp-param-dtype, --fsdp-reduce-dtype: the class the report names (vramcalc.h). */
const char *vc_parallel_mixed_precision(vc_parallel p)
{
    const vc_layout_desc *d = vc__layout_desc(p);
    return d && d->mp_class ? d->mp_class : "?";
}
