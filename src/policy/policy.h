/*
 * policy.h — the tables that say what an optimizer, a precision and a
 * parallel layout do to a training step. The engine (autograd.c, plan.c)
 * reads rows; it has no if-ladder over names. Adding an optimizer: a line
 * in VC_OPTIM_MAP (vramcalc.h), a row in optim.c, tests
 * (docs/contributing.md, "Adding an optimizer").
 */
#ifndef VC_POLICY_H
#define VC_POLICY_H

#include "model.h"

/* A tensor by element count and dtype (VC_DT_* values). */
typedef struct {
    vc_numel n;
    uint8_t dt;
    /* 1: optimizer state allocated outside PyTorch's caching allocator
     * (bitsandbytes' paged state, cudaMallocManaged): in none of the
     * allocator's figures, reported as memory.optimizer_states_paged */
    uint8_t outside;
} vc_tspec;

#define VC_OPTIM_MAX 24 /* tensors or step ops per parameter */

/* One allocation or free of the optimizer step, for one parameter: slot k
 * names the tensor an ALLOC made, so a later FREE of slot k frees it. The
 * slots are the step function's Python locals: forloop and fused keep one
 * set for the whole step (a local bound for one parameter lives until the
 * next parameter's program rebinds it), foreach one set per parameter (the
 * elements of a list). Whatever a slot still holds when the step ends is
 * dropped then (the function returns).
 *   ALLOC  a tensor into slot k
 *   FREE   drop slot k's tensor (`del x`, the end of a temporary)
 *   BIND   `x = f(...)`: a new tensor into slot k, then the one k held before
 *          (this parameter's or an earlier one's) is dropped
 *   ALIAS  `y = x` (or an in-place op's result): slot k takes a reference to
 *          slot src's tensor, the one k held before is dropped
 *   TEMP   a tensor made and dropped within one statement (`p.norm().item()`)
 *   NOP    nothing: foreach programs keep op positions with it, so that one
 *          group's ops all run before another group's */
enum { VC_STEP_ALLOC, VC_STEP_FREE, VC_STEP_BIND, VC_STEP_ALIAS, VC_STEP_TEMP, VC_STEP_NOP };
typedef struct {
    uint8_t op, slot;
    vc_tspec t;  /* ALLOC, BIND, TEMP */
    uint8_t src; /* ALIAS */
    /* ALLOC, BIND, TEMP: bytes the op's kernel takes while it runs, after
     * its result is allocated (a reduction's scratch: vc_reduce_scratch) */
    int64_t scratch;
} vc_step_op;

/* What a row's functions are told besides the parameter. */
typedef struct {
    vc_optim_impl impl;
    vc_dtype state_dt; /* the parameter's dtype (zeros_like(p)), or fp32 under master weights */
    const vc_options *o; /* the estimate's options (the device kernels' scratch is sized for) */
} vc_optim_ctx;

/* scratch.c: bytes a CUDA reduction of nin values into each of nout outputs
 * takes from the caching allocator while it runs (fastest: the reduced
 * dimension is the contiguous one); 0 without a global reduction, under
 * --workspace 0 and on AMD. */
int64_t vc_reduce_scratch(const vc_options *o, int64_t nout, int64_t nin, bool fastest, int in_size, int acc_size);
/* The multiprocessors a kernel sized by the device's multi_processor_count launches over (scratch.c) */
int64_t vc_kernel_sms(const vc_options *o);
/* An upper bound a + c x batch of vc_reduce_scratch for nin = ps x batch + fx. */
void vc_reduce_scratch_bounds(int64_t nout, int64_t ps, int64_t fx, int acc_size, int64_t *a, int64_t *c);

typedef struct {
    const char *summary;   /* one line: the class followed, what it keeps */
    unsigned impls;        /* 1u << vc_optim_impl: the implementations it has */
    bool steps;            /* false: no optimizer.step() (gradients are only freed) */
    /* The persistent state optimizer.state[p] holds on the GPU for one
     * trainable parameter, in the order it is created. Returns the count. */
    int (*state)(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX]);
    /* The step's allocations and frees for one parameter, in program order.
     * foreach runs each op over every parameter before the next op (a
     * _foreach_* call takes the whole list); forloop and fused run one
     * parameter's whole program before the next. NULL: none. */
    int (*step)(const vc_param_entry *p, const vc_optim_ctx *c, vc_step_op out[VC_OPTIM_MAX]);
    /* State the optimizer keeps once for all parameters (bitsandbytes'
     * quantization maps), created with the first parameter that asks for
     * it: the tensors parameter p would need; NULL: none. */
    int (*shared)(const vc_param_entry *p, const vc_optim_ctx *c, vc_tspec out[VC_OPTIM_MAX]);
    /* The implementation the class runs when not told (vc_optim_default_impl,
     * what --optim-impl defaults to): foreach (0) for torch's 2.x optimizers on
     * CUDA; Adafactor's foreach=None means forloop. */
    vc_optim_impl default_impl;
    /* true: a torch.optim class whose foreach=None/fused=None default is
     * _default_to_fused_or_foreach's at the --torch release (release.c),
     * which then replaces default_impl */
    bool torch_default;
} vc_optim_row;

const vc_optim_row *vc_optim_row_get(vc_optim o);

/* A --precision preset: the dtype of each thing a step holds. */
typedef struct {
    vc_dtype param_dt;   /* parameters (and buffers of the model's float type) as stored */
    vc_dtype act_dt;     /* activations outside autocast */
    vc_dtype amp_dt;     /* autocast's low-precision dtype; VC_DT_F32 when not under autocast */
    bool master;         /* an fp32 master copy of each trainable 16-bit parameter; the optimizer
                          * (its state, its step temporaries) works on the masters */
    bool scaler;         /* torch.cuda.amp.GradScaler (scale, growth tracker, found_inf) */
} vc_precision_row;

const vc_precision_row *vc_precision_row_get(vc_precision p);

/* A flat parameter of a parallel layout (FSDP's FlatParameter): the shard a
 * rank keeps, and the storages the module hooks make for it. */
typedef struct {
    vc_param_entry e; /* the rank's shard as the optimizer sees it: numel, trainable; owner -1 */
    uint8_t dt;       /* its dtype (the unit's parameters') */
    int64_t numel;    /* the unit's parameters, unpadded */
    int64_t padded;   /* the gathered flat parameter: shard group size x shard */
    int32_t full;     /* storage of the gathered (unsharded, padded) flat parameter, -1 none */
    int32_t grad;     /* storage of the sharded gradient (.grad until zero_grad), -1 none */
    vc_tspec held;    /* the gradient it stands for between backward and step (the persistent figure) */
    bool alone;       /* stepped by an optimizer.step() call of its own (DeepSpeed ZeRO-3's sub-groups):
                       * the engine runs its step programs apart, between calls of the layout's
                       * module hook with inst = its index in phase VC_PHASE_OPTIMIZER */
} vc_flat_param;

/* A parallel layout's hooks: how one rank's step differs from a single
 * GPU's (DDP buckets, ZeRO and FSDP shards, Megatron's buffers). The engine
 * calls `module` as a layer instance starts and ends its forward and its
 * backward (instances are the model's expanded layers; the loss, instance
 * -1, is outside any): where FSDP gathers a unit's parameters and frees
 * them. A hook allocates and frees with vc__alloc/vc__free. It is also
 * called with inst -1 (the whole model, FSDP's root) as the forward, the
 * backward and the optimizer step begin and end, and, in the optimizer
 * step, with a flat parameter's index around its own step when the flat
 * parameter is stepped alone (vc_flat_param.alone). Every member may be
 * NULL (false): a single GPU's behaviour. */
typedef struct vc_layout_row {
    void (*module)(struct vc_build *b, int inst, vc_phase phase, bool begin);
    /* What the layout keeps on every rank for the whole run, allocated after
     * the model's own persistent state (DDP's gradient buckets). */
    void (*resident)(struct vc_build *b);
    /* The parameters whose optimizer state and step this rank holds (the
     * busiest rank of a sharded optimizer): owned[p] for each of the model's
     * parameters. NULL: every trainable parameter. */
    void (*owns)(const struct vc_build *b, bool *owned);
    /* The flat parameters the rank holds instead of the model's own (FSDP's
     * FlatParameter shards, one per wrapped unit; FSDP2's sharded parameters,
     * one per parameter): fills b->flat (room for max(ninst, npar) + 1
     * entries, [0] the root's), b->nflat and b->unit_of (per instance). The model's parameters then have no resident storage (the
     * module hooks gather them), and the weights, master copies, optimizer
     * state and step are the entries'. NULL: the model's parameters. */
    void (*flat)(struct vc_build *b);
    /* Called as AccumulateGrad sets parameter p's .grad (b->pgrad[p]): a
     * post-accumulate-grad hook (ZeRO-2 copies it into its bucket). */
    void (*grad)(struct vc_build *b, size_t p, int32_t inst);
    /* The dtype the parameters are cast to for forward and backward, which
     * the activations then have (FSDP2's MixedPrecisionPolicy.param_dtype:
     * the unsharded parameters); *dt holds the precision's. NULL: that one. */
    void (*compute)(const vc_options *o, vc_dtype *dt);
    /* The optimizer's tensors for flat parameter i when they are not the
     * flat parameter itself (FSDP1's use_orig_params: the original
     * parameters' slices of the shard): their numels into out (room for
     * every parameter), the count; 0 (or NULL): the flat parameter. */
    size_t (*slices)(const struct vc_build *b, size_t i, int64_t *out);
    /* true: the root's pre-forward casts the model's floating-point inputs to
     * that compute dtype (FSDP2's MixedPrecisionPolicy.cast_forward_inputs,
     * default True): the caller's input stays in the precision's activation
     * dtype, a cast copy feeds the first layer and is held until the model's
     * forward returns (plan.c model_tensors). */
    bool cast_inputs;
    /* true: each trainable parameter's .grad is, between steps, a view into the
     * layout's resident gradient buffers (DDP's gradient_as_bucket_view=True),
     * not a tensor of its own: memory.gradients is those buffers only */
    bool grad_views;
} vc_layout_row;

/* What a layout takes (vc_layout_desc.caps), one bit per option or group of
 * options; the checks (options.c, layout.c, layout_fsdp2.c) read these bits
 * and list the layouts that have one in their refusals, so no check names a
 * layout. */
enum {
    VC_LAYOUT_PP = 1u << 0,          /* --pp: a pipeline stage's engine (Megatron's schedules, DeepSpeed's PipelineEngine, DDP per stage) */
    VC_LAYOUT_EP = 1u << 1,          /* --ep: expert parameters over the expert-data-parallel group */
    VC_LAYOUT_ZERO_CONFIG = 1u << 2, /* DeepSpeed ZeRO's config: --ds-overlap-comm, --offload-device nvme */
    VC_LAYOUT_GRAD_VIEW = 1u << 3,   /* --gradient-as-bucket-view (DistributedDataParallel's): views[1][0] */
    VC_LAYOUT_PARAM_VIEW = 1u << 4,  /* --parameters-as-bucket-view (ZeroRedundancyOptimizer's): views[0][1] */
    VC_LAYOUT_FSDP1_OPTIONS = 1u << 5, /* FSDP1's: --fsdp-use-orig-params; --fsdp-*-dtype as MixedPrecision */
    VC_LAYOUT_FSDP2_OPTIONS = 1u << 6, /* fully_shard's: --fsdp-*-dtype as MixedPrecisionPolicy, --fsdp-replicate,
                                        * --fsdp-reshard-after-forward */
};

/* A parallel layout (--parallel), FFmpeg's AVCodec way: each layout file
 * ends with its descriptor (`const vc_layout_desc vc_layout_zero3 = {...}`),
 * layout.c's registry lists them, and no code elsewhere tests which layout
 * an estimate has (the checks read the fields below). The enum
 * value and the --parallel name are VC_PARALLEL_MAP's (vramcalc.h). */
typedef struct vc_layout_desc {
    vc_parallel id;
    const char *aliases[3];   /* other --parallel names, lower case with '-' (vc_parallel_from_name) */
    vc_layout_row hooks;
    /* [gradient_as_bucket_view][parameters_as_bucket_view]: the hooks in
     * place of `hooks` under those settings ([0][0] unused); NULL where the
     * setting is refused (VC_LAYOUT_GRAD_VIEW, VC_LAYOUT_PARAM_VIEW say which
     * the layout has) */
    const vc_layout_row *views[2][2];
    unsigned caps;            /* VC_LAYOUT_*: the options it takes */
    unsigned offload;         /* 1u << vc_offload: the --offload values modelled (VC_OFFLOAD_NONE aside) */
    /* why the other --offload values are refused; NULL: the generic "keeps
     * everything on the GPU" (layout.c) */
    const char *offload_why;
    /* with VC_LAYOUT_PP: why --pp-virtual (Megatron's interleaved 1F1B) is
     * refused, NULL it is modelled */
    const char *interleaved_why;
    /* why --mode generate is refused, NULL: it is modelled where the other
     * options allow it */
    const char *generate_why;
    /* HYBRID_SHARD's node: the shard group is a node of this many GPUs, so
     * the data-parallel ranks are at most one node or whole nodes; 0 none */
    int node_gpus;
    /* the class --fsdp-param-dtype / --fsdp-reduce-dtype configure
     * ("MixedPrecision", "MixedPrecisionPolicy"; the report names it), NULL none */
    const char *mp_class;
    /* the layout's own refusals of the options (Megatron's mode, precision and
     * optimizer), VC_ERR_USAGE naming the option; run by vc__check_options
     * after the checks the fields above drive. NULL: none. */
    vc_status (*check)(const vc_options *o, vc_error *err);
} vc_layout_desc;

/* layout.c: the registry. The descriptor of layout p, NULL out of range. */
const vc_layout_desc *vc__layout_desc(vc_parallel p);
/* The --parallel names of the layouts with every bit of caps (the single
 * GPU's "none" aside), in the registry's order, ", "-separated and `last`
 * before the last one ("ddp, megatron and megatron-dist"); "" none. */
const char *vc__layout_names(unsigned caps, const char *last, char *buf, size_t n);
/* The hooks of an estimate with these options (o->parallel and its bucket
 * views; NULL options: a single GPU's). */
const vc_layout_row *vc_layout_row_get(const vc_options *o);
/* --offload: VC_ERR_USAGE naming --offload when o->parallel cannot offload o->offload. */
vc_status vc__layout_offload_check(const vc_options *o, vc_error *err);
/* --gradient-as-bucket-view, --parameters-as-bucket-view: VC_ERR_USAGE naming the
 * option when the layout has no such setting or it is not modelled with the others. */
vc_status vc__layout_view_check(const vc_options *o, vc_error *err);
/* --fsdp-param-dtype, --fsdp-reduce-dtype, --fsdp-replicate,
 * --fsdp-reshard-after-forward, --fsdp-use-orig-params: VC_ERR_USAGE naming the
 * option where the layout or the precision cannot take them (layout_fsdp2.c). */
vc_status vc__fsdp_mp_check(const vc_options *o, vc_error *err);
/* A --fsdp-*-dtype value's dtype (fp32 for none). */
vc_dtype vc__fsdp_dtype(vc_fsdp_dtype d);

/* A storage format of Linear weights (vc_weights; src/policy/quant.c). Per-weight
 * tensors and temporaries are functions of the weight's shape p->dims =
 * [out, in] and the format's settings (bits, group, blocks). */
#define VC_QUANT_MAX 8
typedef struct {
    vc_tspec t;
    bool held; /* stays allocated until the op's other held temporaries are made, then all are freed */
} vc_qtemp;
/* The model's weights of one storage format, at their largest. */
typedef struct {
    int64_t max_in, max_out; /* the largest in_features and out_features */
    int64_t max_numel;       /* the largest weight's elements */
} vc_quant_extent;
struct cJSON;
/* A storage format of Linear weights, one row per vc_weights (quant.c), with
 * designated initializers; NULL and 0 members: none. Adding one:
 * docs/contributing.md, "Adding a quant format". */
typedef struct vc_weight_row {
    const char *name, *summary; /* the --weights name (VC_WEIGHTS_MAP's); the class followed and its source */
    /* The settings it has, which the --weights names, the checks of a vc_quant
     * (vc__quant_settings_check) and its description (vc_quant_describe) follow:
     * bits   1u << b for each bits per weight it takes: the --weights names are
     *        the name followed by one of them ("gptq4"); 0: a fixed width;
     * blocks 1u << k: its group (blocksize) must be 2^k for a bit k set
     *        (bitsandbytes' quantize_4bit); 0: -1 or any positive group;
     * blocked  a 2-D block, vc_quant.block (weight_block_size). */
    unsigned bits;
    uint32_t blocks;
    bool blocked;
    /* Its defaults under --weights (vc_quant_from_name): group (0: 128,
     * GPTQConfig / AwqConfig group_size), double_quant, block (each side). */
    int64_t group;
    int double_quant;
    int64_t block;
    /* The --precision a model with these weights computes in when not told
     * (vc_quant_compute_precision). */
    vc_precision compute;
    /* A config.json's quantization_config.quant_method naming it, and the
     * reader of that method's keys into q (it sets q->format: one method
     * may name several rows, bitsandbytes' load_in_8bit / bnb_4bit_quant_type);
     * errors VC_ERR_MODEL naming the key. NULL: no config names it. */
    const char *method;
    vc_status (*from_config)(const struct cJSON *qc, vc_quant *q, vc_error *err);
    bool trains;  /* a linear over it has a backward for its input (LoRA on top) */
    uint8_t lora; /* PEFT's LoRA layer over it (VC_LORA_*, layers/layer.h) */
    /* What the GPU keeps for weight p, data first (dense: one tensor of the
     * precision's dtype). Returns the count. */
    int (*tensors)(const vc_param_entry *p, const vc_quant *q, vc_dtype dense, vc_tspec out[VC_QUANT_MAX]);
    /* What vLLM keeps for weight i of m (--serve's profiling run, m the rank's model), when that differs
     * from tensors; NULL: tensors. dev: the GPU (vc_options.device), whose compute capability picks
     * vLLM's kernel and its multiprocessors size the kernel's workspace; NULL: none known.
     * vc__quant_vllm_check refuses the settings it does not cover. */
    int (*vllm_tensors)(const vc_model *m, size_t i, const vc_quant *q, vc_dtype dense, const struct vc_gpu *dev,
                        vc_tspec out[VC_QUANT_MAX]);
    /* Kept once for every weight in the format (a cached code book, a kernel's
     * scratch sized by the largest weight, x); NULL none. */
    int (*shared)(const vc_quant *q, const vc_quant_extent *x, vc_tspec out[VC_QUANT_MAX]);
    /* Temporaries of a linear over `rows` rows per sample, in the compute
     * dtype (rows per sample, or a fixed count: an expert's tokens): forward,
     * and backward for the input's gradient; NULL none. */
    void (*temps)(const vc_param_entry *p, const vc_quant *q, vc_dtype compute, vc_numel rows,
                  vc_qtemp fwd[VC_QUANT_MAX], int *nf, vc_qtemp bwd[VC_QUANT_MAX], int *nb);
    /* NULL when weight p's shape suits the format, else why not (buf). */
    const char *(*misfit)(const vc_param_entry *p, const vc_quant *q, char *buf, size_t n);
} vc_weight_row;

const vc_weight_row *vc_weight_row_get(vc_weights w);
/* The model's storage format and its settings: --weights (vc_model_set_weights), else its config's quantization_config. */
const vc_quant *vc__model_quant(const vc_model *m);
/* quant.c: the checks of an estimate of a model with quantized weights
 * (VC_ERR_USAGE naming --weights). */
vc_status vc__quant_check(const vc_model *m, const vc_options *o, vc_error *err);
/* quant.c: on (true) while vc_serve builds and simulates its profiling run, off (false) after: the plans
 * built meanwhile on this thread are vLLM's (vc__quant_check admits compressed-tensors MoE experts). */
void vc__quant_vllm_scope(bool on);
/* Whether a vLLM scope is open on this thread (the plans built in it are vLLM's: serve.c's profiling run). */
bool vc__quant_vllm_in(void);
/* quant.c: what --serve refuses of the model's quantized weights (vLLM's schemes not modelled, a
 * kernel no GPU-side check admits on dev, the --gpu preset: NULL a GPU given by size), VC_ERR_USAGE
 * naming --weights, the config's key or --gpu. */
vc_status vc__quant_vllm_check(const vc_model *m, const struct vc_gpu *dev, vc_error *err);
/* quant.c: whether --serve's profiling build of m needs the GPU in its options (vc_options.device):
 * compressed-tensors weight-only schemes, whose vLLM kernel follows the GPU, and MXFP4 experts, whose MoE backend
 * does (mxfp4_vllm_tensors). */
bool vc__quant_vllm_needs_device(const vc_model *m);

/* options.c: the checks every estimate makes of its options (VC_ERR_USAGE naming the option). */
vc_status vc__check_options(const vc_options *o, vc_error *err);
/* options.c: a caller's vc_options as this library's: *o itself when it has the library's
 * size, else its o->size bytes over the defaults in *full, and *o = full (the legacy struct
 * API's rule, vramcalc.h); VC_ERR_USAGE for a size no release had. Every public function
 * taking a vc_options runs it before reading a field. */
vc_status vc__options_in(const vc_options **o, vc_options *full, vc_error *err);

#endif
