/*
 * options.c — the CLI's options, one row each (cli.h cli_option): --help,
 * getopt_long's tables and README's option table are made from it.
 */
#include "vramcalc/vramcalc.h"
#include "cli.h"

/* Every option, in --help's order: adding one is a row here and its case in
 * vc_cli_main's switch (main.c; docs/contributing.md). */
const cli_option cli_options[] = {
    {"batch", 'b', "N", 'b', NULL, "samples per step (default 1); with --pp, per micro-batch"},
    {"input", 0, "SHAPE", OPT_INPUT, NULL, "override the per-sample input shape, e.g. 3,224,224"},
    {"seq", 0, "N", OPT_SEQ, NULL, "Hugging Face config.json: tokens per sample (default 2048)"},
    {"moe-imbalance", 0, "F", OPT_MOE, NULL,
     "config.json MoE: the busiest expert gets F x the even share (default 1)"},
    {"emit-model", 0, NULL, OPT_EMIT, NULL, "config.json: print the equivalent vramcalc model JSON and exit"},
    {"optim", 'o', "NAME", 'o', VC_CHOICES(VC_OPTIM_MAP),
     "{} (default adam; what each keeps: docs/optimizers.md)"},
    {"optim-impl", 0, "I", OPT_IMPL, VC_CHOICES(VC_OPTIM_IMPL_MAP),
     "{} (default: what the optimizer runs at --torch when not told, foreach; forloop for adafactor; refused where the optimizer has no such implementation)"},
    {"accumulate", 0, "N", OPT_ACCUM, NULL, "gradient accumulation over N micro-batches"},
    {"precision", 'p', "P", 'p', VC_CHOICES(VC_PRECISION_MAP),
     "{} (default fp32; --serve: vLLM's dtype auto, the config's torch_dtype; amp: torch.autocast; mixed: "
     "16-bit weights and gradients, fp32 master weights and optimizer states)"},
    {"mode", 'm', "M", 'm', VC_CHOICES(VC_MODE_MAP),
     "{} (default train; --optim does not apply to infer and generate; generate: docs/inference.md)"},
    {"lora", 0, "R", OPT_LORA, NULL, "LoRA adapters of rank R (PEFT); every other parameter frozen"},
    {"lora-targets", 0, "L", OPT_LORA_TARGETS, NULL,
     "the Linear layers to adapt, by name: q_proj,v_proj (default for a config.json: PEFT's for its "
     "model_type)"},
    {"lora-alpha", 0, "A", OPT_LORA_ALPHA, NULL, "lora_alpha (default 8)"},
    {"lora-dropout", 0, "P", OPT_LORA_DROPOUT, NULL, "lora_dropout (default 0)"},
    {"grad-ckpt", 0, NULL, OPT_GRAD_CKPT, NULL,
     "config.json: gradient checkpointing per decoder layer, non-reentrant"},
    {"loss", 0, "L", OPT_LOSS, VC_CHOICES(VC_LOSS_MAP),
     "config.json: the causal-LM loss, {} (default hf: ForCausalLMLoss, fp32 logits; liger: Liger-Kernel's "
     "fused linear cross-entropy; cce: Apple's Cut Cross-Entropy; docs/llm.md)"},
    {"weights", 0, "W", OPT_WEIGHTS, NULL,
     "Linear weights stored as nf4, fp4, int8 (bitsandbytes), gptq4, gptq8, gptq3, gptq2, awq4, fp8, "
     "fp8-channel, fp8-block or dense (default: a config.json's quantization_config, else dense); the LM head "
     "stays 16-bit (docs/quantization.md)"},
    {"qlora", 0, NULL, OPT_QLORA, NULL, "QLoRA: --weights nf4 (double quant) under --lora R (default 8), bf16"},
    {"gpus", 0, "N", OPT_GPUS, NULL,
     "GPUs in all; gpus / (tp x pp) of them data-parallel, with --parallel (the busiest rank's memory)"},
    {"tp", 0, "N", OPT_TP, NULL, "tensor-parallel ranks (Megatron; default 1)"},
    {"sp", 0, NULL, OPT_SP, NULL, "sequence parallelism with --tp (Megatron --sequence-parallel)"},
    {"ep", 0, "N", OPT_EP, NULL,
     "MoE: expert-parallel ranks (Megatron-Core, all-to-all dispatcher; default 1): each holds num_experts / N experts; --gpus a multiple of N x --pp"},
    {"pp", 0, "N", OPT_PP, NULL, "pipeline stages (Megatron 1F1B, or interleaved with --pp-virtual; default 1): --gpus is tp x pp x data-parallel ranks; the report is per GPU, with a line per kind of rank"},
    {"micro-batches", 0, "N", OPT_MICRO, NULL, "with --pp: micro-batches per step, each of --batch samples (default: --pp)"},
    {"pp-virtual", 0, "V", OPT_PP_VIRTUAL, NULL, "with --pp: V model chunks per rank, Megatron's interleaved 1F1B (virtual pipeline stages; default 1)"},
    {"parallel", 0, "L", OPT_PARALLEL, VC_CHOICES(VC_PARALLEL_MAP),
     "the parallel layout: {} (docs/parallel.md; FSDP's FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD and hsdp are aliases; "
     "megatron: Megatron-Core's DDP and bf16 optimizer, megatron-dist: with --use-distributed-optimizer, both -p mixed-bf16)"},
    {"offload", 0, "X", OPT_OFFLOAD, VC_CHOICES(VC_OFFLOAD_MAP),
     "{}: what the parallel layout keeps on the CPU (optimizer: DeepSpeed's offload_optimizer, zero1, zero2 and zero3; "
     "params: zero3's offload_param too, or FSDP's CPUOffload(offload_params=True))"},
    {"offload-device", 0, "D", OPT_OFFLOAD_DEV, "cpu, nvme, ",
     "with --offload: DeepSpeed's offload_optimizer / offload_param device, {} (default cpu; nvme: ZeRO-Infinity, "
     "zero1, zero2 and zero3 optimizer, zero3 params)"},
    {"nvme-gds", 0, NULL, OPT_NVME_GDS, NULL,
     "with --offload params --offload-device nvme: DeepSpeed's aio use_gds, the parameter swap buffers "
     "(5 x 1e8 elements) on the GPU (default false: pinned CPU memory)"},
    {"fsdp-param-dtype", 0, "D", OPT_FSDP_PARAM_DT, VC_CHOICES(VC_FSDP_DTYPE_MAP),
     "--parallel fsdp2: MixedPrecisionPolicy's param_dtype; fsdp, shard-grad-op, hybrid: MixedPrecision's; {} "
     "(default none: the model's dtype)"},
    {"fsdp-reduce-dtype", 0, "D", OPT_FSDP_REDUCE_DT, VC_CHOICES(VC_FSDP_DTYPE_MAP),
     "--parallel fsdp2: MixedPrecisionPolicy's reduce_dtype; fsdp, shard-grad-op, hybrid: MixedPrecision's; {} "
     "(default none: the param dtype)"},
    {"fsdp-use-orig-params", 0, NULL, OPT_FSDP_ORIG, NULL,
     "--parallel fsdp, shard-grad-op, hybrid: FSDP1's use_orig_params=True (each parameter 16-byte aligned in "
     "the flat parameter, padded to the world size)"},
    {"fsdp-reshard-after-forward", 0, "R", OPT_FSDP_RESHARD, NULL,
     "--parallel fsdp2: fully_shard's reshard_after_forward for every call, true, false or N (the world size to "
     "reshard to after forward, dividing the data-parallel world; default: None, true for all but the root)"},
    {"fsdp-replicate", 0, "N", OPT_FSDP_REPLICATE, NULL,
     "--parallel fsdp2: HSDP, a 2-D mesh of N replicas x (data-parallel world / N) shards (default 1: none)"},
    {"gradient-as-bucket-view", 0, NULL, OPT_GRAD_VIEW, NULL,
     "--parallel ddp, zero1-torch: DistributedDataParallel's gradient_as_bucket_view=True, each .grad a view into "
     "its gradient bucket (default False)"},
    {"parameters-as-bucket-view", 0, NULL, OPT_PARAM_VIEW, NULL,
     "--parallel zero1-torch: ZeroRedundancyOptimizer's parameters_as_bucket_view=True, the parameters views into "
     "one flat tensor per rank (default False)"},
    {"ds-overlap-comm", 0, "B", OPT_DS_OVERLAP, NULL,
     "--parallel zero1, zero2, zero3: DeepSpeed's overlap_comm, true or false (default: DeepSpeed's, true for "
     "zero3, false for zero1 and zero2; true makes stages 1-2 hold two IPG buffers)"},
    {"attention", 0, "A", OPT_ATTN, VC_CHOICES(VC_ATTENTION_MAP),
     "{} (default auto: flash for fp16/bf16, memory-efficient for fp32, math where need_weights)"},
    {"torch", 0, "X.Y", OPT_TORCH, NULL, "PyTorch release to follow, 2.0 to 2.15 (default 2.15): the math SDPA's softmax, flash's head-dim limit, --optim-impl's default, adafactor (2.5+)"},
    {"workspace", 0, "SIZE", OPT_WS, NULL, "one cuBLAS handle's workspace bytes (default: modelled; training adds the backward thread's, biased Linears cuBLASLt's 1 MiB, and CUDA reductions their scratch; 0 leaves them all out)"},
    {"context", 0, "SIZE", OPT_CTX, NULL, "CUDA context bytes (default: a 500 MiB estimate)"},
    {"gpu", 'g', "G", 'g', NULL,
     "check the fit: a preset (h100-80gb, rtx4090, ...; see --list-gpus) or a SIZE (24GiB, 80GB), "
     "either with :P% for headroom (h100-80gb:90%); exit status 1 when it does not fit"},
    {"max-batch", 0, NULL, OPT_MAX_BATCH, NULL, "with --gpu: the largest batch size that fits (exact: it fits, one more does not)"},
    {"max-seq", 0, NULL, OPT_MAX_SEQ, NULL,
     "with --gpu, a config.json: the longest sequence (tokens) that fits at --batch (exact)"},
    {"prompt", 0, "N", OPT_PROMPT, NULL, "--mode generate: prompt tokens per sequence (default 1024)"},
    {"new-tokens", 0, "M", OPT_NEW_TOKENS, NULL, "--mode generate: tokens generated per sequence (default 256)"},
    {"cache", 0, "C", OPT_CACHE, VC_CHOICES(VC_CACHE_MAP),
     "--mode generate: the KV cache, {} (default dynamic: DynamicCache; static: preallocated; offloaded: "
     "in host memory, a layer at a time on the GPU; quantized: QuantizedCache, quanto backend)"},
    {"kv-bits", 0, "B", OPT_KV_BITS, NULL, "--cache quantized: bits per key and value, 2 or 4 (nbits, default 4)"},
    {"kv-group-size", 0, "N", OPT_KV_GROUP, NULL, "--cache quantized: elements per scale and shift (q_group_size, default 64)"},
    {"kv-residual-length", 0, "N", OPT_KV_RESIDUAL, NULL,
     "--cache quantized: tokens kept unquantized before the cache is requantized (residual_length, default 128)"},
    {"max-context", 0, NULL, OPT_MAX_CONTEXT, NULL,
     "--mode generate with --gpu: the longest prompt that fits for --new-tokens (exact; docs/inference.md)"},
    {"serve", 0, NULL, OPT_SERVE, NULL,
     "with --gpu: vLLM's KV cache pool, blocks, tokens and concurrent --prompt + --new-tokens requests"},
    {"gpu-memory-utilization", 0, "U", OPT_GPU_UTIL, NULL, "--serve: the share of the card vLLM may use (default 0.9)"},
    {"max-num-batched-tokens", 0, "T", OPT_MAX_TOKENS, NULL,
     "--serve: the profiling run's tokens (default vLLM's: 8192 on >= 70 GiB cards but A100s, else 2048)"},
    {"max-num-seqs", 0, "S", OPT_MAX_SEQS, NULL, "--serve: the sampled requests (default 1024 or 256, as the tokens)"},
    {"block-size", 0, "N", OPT_BLOCK, NULL, "--serve: tokens per KV block (default 16)"},
    {"kv-cache-dtype", 0, "D", OPT_KV_DTYPE, VC_CHOICES(VC_KV_DTYPE_MAP), "--serve: {} (default auto: the model's dtype; vLLM's setting: transformers' caches keep the model's dtype)"},
    {"sweep", 0, "LIST", OPT_SWEEP, NULL, "one row per batch size: 1,8,32 or 1:64 or 1:64:8 (step) or 1:4096:x2"},
    {"plot", 0, "FILE.svg", OPT_PLOT, NULL, "with --sweep: draw the components against batch size as an SVG chart"},
    {"format", 'f', "F", 'f', "table, json, csv, ", "{} (default table)"},
    {"columns", 0, "LIST", OPT_COLUMNS, NULL,
     "with -f csv: these columns, by header name, in this order: batch,memory.total,gpu.fits"},
    {"per-layer", 0, NULL, OPT_PER_LAYER, NULL, "a row per layer: output shape, parameters, saved activations"},
    {"no-color", 0, NULL, OPT_NO_COLOR, NULL, "plain ASCII table, no colours (also: NO_COLOR=1)"},
    {"no-colour", 0, NULL, OPT_NO_COLOR, NULL, NULL},
    {"params", 0, "N", OPT_PARAMS, NULL,
     "counts-only estimate without a model: bytes per parameter and per activation element, no "
     "per-tensor model"},
    {"activations", 0, "N", OPT_ACTS, NULL, "with --params: activation elements per sample"},
    {"list-gpus", 0, NULL, OPT_LIST_GPUS, NULL, "the GPU presets, their memory and its source (with -f json/csv too)"},
    {"list-layers", 0, NULL, OPT_LIST_LAYERS, NULL, "the supported layer kinds"},
    {"trace", 0, NULL, OPT_TRACE, NULL, "print the simulated timeline (one line per allocation or free)"},
    {"help", 'h', NULL, 'h', NULL, "this help"},
    {"version", 0, NULL, OPT_VERSION, NULL, "print the version"},
};
const size_t cli_noptions = sizeof cli_options / sizeof *cli_options;
_Static_assert(sizeof cli_options / sizeof *cli_options <= CLI_MAX_OPTIONS, "CLI_MAX_OPTIONS is too small");
