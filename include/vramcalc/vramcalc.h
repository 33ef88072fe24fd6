/*
 * vramcalc — GPU memory estimates for PyTorch models.
 *
 * Public API. The library never prints and never exits: every function
 * reports problems through a vc_status and, where given, a vc_error. Only
 * what this header declares VC_EXTERN is exported; names with two
 * underscores (vc__*, VC__*) are internal.
 *
 * Typical use, a request (options by name, the way the CLI and Python go):
 *     vc_error err;
 *     vc_request *q = vc_request_new();
 *     vc_response *r = NULL;
 *     char *text = NULL, buf[1024];
 *     size_t len;
 *     if (vc_request_add_model(q, "model.json", &err) == VC_OK && vc_request_set(q, "batch", "32", &err) == VC_OK &&
 *         vc_request_run(q, &r, &err) == VC_OK &&
 *         vc_response_render(r, VC_FORMAT_JSON, NULL, &text, &len, &err) == VC_OK) { use text; }
 *     else { vc_error_format_for(&err, VC_SPELL_CLI, buf, sizeof buf); report buf; }
 *     vc_text_free(text); vc_response_free(r); vc_request_free(q);
 *
 * The request is the ABI-stable way in: vc_request and vc_response are
 * opaque, and a new option is a new name for vc_request_set (a row of the
 * option table, vc_option_at), not a new field. The structs vc_options
 * and vc_hf_options with vc_estimate and the functions taking them are the
 * legacy struct API, kept for programs that use them. Each begins with its
 * size: vc_options_init and vc_hf_options_init (macros) set it to the size
 * the program was compiled with, and the library reads no byte past it,
 * taking the defaults for the fields a smaller struct lacks. Fields are only
 * appended (never removed, moved or retyped within a major version), so a
 * program built against an older header runs with a newer library; a struct
 * whose size is not one a release had (not set up by its init, or from a
 * newer header than the library) is refused with VC_ERR_USAGE. Such a struct
 * is set up by its init before any field is set.
 *
 * Threads: the library keeps no global state a call changes, but one: the
 * JSON arena of vc_request_set_json_arena, which swaps cJSON's process-wide
 * allocator hooks (off by default). So separate objects may be used in
 * separate threads at once: each thread with its own vc_request and
 * vc_response, or its own vc_model, vc_estimator and results. One object
 * (a request, a response, a model, an estimator) belongs to one thread at a
 * time. The constant tables (vc_gpu_get, vc_option_at, the name functions)
 * may be read from any thread.
 */
#ifndef VRAMCALC_H
#define VRAMCALC_H

#include <stddef.h>
#include <stdint.h>

/* VC_EXTERN marks the public API: the only symbols the shared library
 * exports (the library is compiled with hidden visibility). On Windows a
 * build of the DLL defines VC_BUILDING_SHARED and its users VC_USING_SHARED
 * (the CMake target vramcalc_shared does both); a static build needs
 * neither. */
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(VC_BUILDING_SHARED)
#define VC_EXTERN __declspec(dllexport)
#elif defined(VC_USING_SHARED)
#define VC_EXTERN __declspec(dllimport)
#else
#define VC_EXTERN /* nothing */
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define VC_EXTERN __attribute__((visibility("default")))
#else
#define VC_EXTERN /* nothing */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header. CMakeLists.txt's project(vramcalc VERSION ...)
 * is the one source: configuring fails when these three differ from it. The
 * library compiled may be another release than the header: vc_version() and
 * vc_version_string() say which (same major version: compatible ABI). */
#define VC_VERSION_MAJOR 0
#define VC_VERSION_MINOR 1
#define VC_VERSION_PATCH 0
/* 0xMMmmpp: (major << 16) | (minor << 8) | patch, for comparisons. */
#define VC_VERSION_HEX ((VC_VERSION_MAJOR << 16) | (VC_VERSION_MINOR << 8) | VC_VERSION_PATCH)
#define VC__STRINGIFY(v) #v
#define VC__VERSION_TEXT(major, minor, patch) VC__STRINGIFY(major) "." VC__STRINGIFY(minor) "." VC__STRINGIFY(patch)
/* "0.1.0" */
#define VC_VERSION VC__VERSION_TEXT(VC_VERSION_MAJOR, VC_VERSION_MINOR, VC_VERSION_PATCH)
/* The linked library's VC_VERSION_HEX and VC_VERSION. */
VC_EXTERN unsigned vc_version(void);
VC_EXTERN const char *vc_version_string(void);

/* Status codes: X(name, message). */
#define VC_STATUS_MAP(X)                                              \
    X(OK, "success")                                                  \
    X(ERR_USAGE, "invalid argument")                                  \
    X(ERR_IO, "cannot read file")                                     \
    X(ERR_PARSE, "invalid JSON")                                      \
    X(ERR_MODEL, "invalid model")                                     \
    X(ERR_OVERFLOW, "size overflows 64-bit arithmetic")               \
    X(ERR_NOMEM, "out of memory")                                     \
    X(ERR_LIMIT, "a documented limit was exceeded")

typedef enum {
#define VC_STATUS_ENUM(name, msg) VC_##name,
    VC_STATUS_MAP(VC_STATUS_ENUM)
#undef VC_STATUS_ENUM
} vc_status;

/* A static description of a status code. */
VC_EXTERN const char *vc_strerror(vc_status s);

/* Everything known about the first error: where and what. Every function that
 * takes a vc_error * clears it first, then holds the first error of that call
 * (none on success); it may be NULL. */
typedef struct {
    vc_status code;
    char file[256];   /* model file name ("-" for stdin), "" when not file-related */
    int line, col;    /* 1-based position in the file, 0 when unknown */
    char path[256];   /* JSON path, e.g. "layers[3].kernel_size"; "" when none */
    char msg[2048];   /* what is wrong, one line, no trailing newline (the supported model_types fit) */
} vc_error;

/* Copies s into buf (n bytes, always terminated) so that it is safe to show
 * on a terminal and valid UTF-8: control bytes (C0, DEL, C1) and bytes that
 * are not well-formed UTF-8 become \n, \t, \xNN or \uNNNN escapes; text
 * that does not fit is cut at a character boundary. */
VC_EXTERN void vc_escape_text(char *buf, size_t n, const char *s);

/* Formats err as one line: "FILE:LINE:COL: PATH: MSG" (absent parts left out),
 * the options it names spelt as the CLI writes them (vc_error_format_for with
 * VC_SPELL_CLI). */
VC_EXTERN void vc_error_format(const vc_error *err, char *buf, size_t n);

/* ---- limits (documented in README) ---- */
#define VC_MAX_FILE_BYTES   (64u << 20) /* model files up to 64 MiB */
#define VC_MAX_LAYERS       1000000     /* expanded layer instances */
#define VC_MAX_DEPTH        64          /* Sequential nesting */
#define VC_MAX_DIMS         8           /* per-sample dimensions */
#define VC_MAX_DIM_SIZE     (INT64_C(1) << 40)
/* The cost of one simulated step, whatever the kinds (docs/limits.md): the
 * autograd ops the layers record and the allocations and frees the step
 * makes (a million Linear layers trained with Adam: 1,000,001 ops and
 * 18,000,007 events); and, for a plan that depends on the batch (rebuilt
 * per batch size by --sweep and --max-batch), the events of all the plans
 * one estimator builds. */
#define VC_MAX_PLAN_OPS          4000000
#define VC_MAX_PLAN_EVENTS       20000000
#define VC_MAX_REBUILT_EVENTS    100000000

/* ---- model ---- */
typedef struct vc_model vc_model;

/* Loads and validates a model file ("-" reads standard input). On success
 * *out is a model the caller frees with vc_model_free. */
VC_EXTERN vc_status vc_model_load_file(const char *path, vc_model **out, vc_error *err);

/* Same from memory; `name` is used in error messages as the file name. */
VC_EXTERN vc_status vc_model_load_string(const char *json, size_t len, const char *name,
                                         vc_model **out, vc_error *err);

VC_EXTERN void vc_model_free(vc_model *m);

/* Replaces the per-sample shape of the model's single input (CLI --input),
 * then re-checks every layer. */
VC_EXTERN vc_status vc_model_set_input_shape(vc_model *m, const int64_t *dims, int ndim,
                                             vc_error *err);

/* LoRA adapters as PEFT's get_peft_model(model, LoraConfig(...)) adds them
 * (peft/tuners/lora): each Linear whose name is one of `targets` (or ends
 * with "." and one, as PEFT matches target_modules) gets lora_A [r, in] and
 * lora_B [out, r]; every other parameter is frozen (mark_only_lora_as_trainable,
 * bias="none"). The adapters' dtype (and so their gradients' and optimizer
 * states') is `dtype`: auto, PEFT's default (get_peft_model's
 * autocast_adapter_dtype=True: float32, also for a 16-bit model); fp32, bf16,
 * fp16 whatever the precision; model, the base weights' (PEFT with
 * autocast_adapter_dtype=False, torchtune's LoRALinear). */
#define VC_LORA_DTYPE_MAP(X) X(AUTO, "auto") X(FP32, "fp32") X(BF16, "bf16") X(FP16, "fp16") X(MODEL, "model")
#define VC__ENUM_LORA_DT(e, n) VC_LORA_DTYPE_##e,
typedef enum { VC_LORA_DTYPE_MAP(VC__ENUM_LORA_DT) VC_LORA_DTYPE__N } vc_lora_dtype;
VC_EXTERN int vc_lora_dtype_from_name(const char *s); /* -1 when unknown */
/* The PEFT method (--peft; src/model/peft.c's table, one row each, written
 * from huggingface/peft @5d602fdb): lora; rslora (LoraConfig use_rslora=True:
 * scaling alpha / sqrt(r)) and pissa (init_lora_weights="pissa": the adapters
 * initialised from the weight's SVD), LoRA's memory; dora (use_dora=True: a
 * magnitude vector per adapted Linear and the weight-norm temporaries of
 * tuners/lora/dora.py); ia3 (IA3Config: a learned vector per target Linear,
 * scaling its input for a feedforward module, its output otherwise);
 * ln_tuning (LNTuningConfig: a trainable deepcopy of each target module, the
 * original frozen). */
#define VC_PEFT_MAP(X) \
    X(LORA, "lora") X(RSLORA, "rslora") X(PISSA, "pissa") X(DORA, "dora") X(IA3, "ia3") X(LN_TUNING, "ln_tuning")
#define VC__ENUM_PEFT(e, n) VC_PEFT_##e,
typedef enum { VC_PEFT_MAP(VC__ENUM_PEFT) VC_PEFT__N } vc_peft;
VC_EXTERN int vc_peft_from_name(const char *s); /* -1 when unknown */
typedef struct {
    int64_t r;           /* rank; 0: no adapters */
    double alpha;        /* lora_alpha: the update is scaled by alpha / r */
    double dropout;      /* lora_dropout: p > 0 keeps a dropped-out copy of each adapter's input */
    char targets[512];   /* target_modules, comma-separated ("q_proj,v_proj") */
    vc_lora_dtype dtype; /* the adapters' dtype (default auto) */
    vc_peft method;      /* the PEFT method (default lora); ia3 and ln_tuning take no rank (r 0) */
    char modules_to_save[512]; /* modules_to_save: modules trained as full copies (ModulesToSaveWrapper), "" none */
} vc_lora;

/* PEFT's LoraConfig defaults: r 8, alpha 8, dropout 0, no targets, method lora. */
VC_EXTERN void vc_lora_init(vc_lora *l);

/* PEFT's default target_modules for a model read from a Hugging Face
 * config.json ("q_proj,v_proj" for llama); "" for a model file. */
VC_EXTERN const char *vc_model_lora_targets(const vc_model *m);

/* Adds (or with l->r == 0 and a LoRA method removes) adapters and re-checks
 * the model. Fails with VC_ERR_USAGE when no layer matches the targets (or
 * l->modules_to_save). l->method picks the PEFT method (ia3 and ln_tuning:
 * r must be 0); l->modules_to_save names layers trained as full copies, the
 * originals kept frozen (PEFT's ModulesToSaveWrapper). */
VC_EXTERN vc_status vc_model_set_lora(vc_model *m, const vc_lora *l, vc_error *err);

/* ---- quantized weights (docs/quantization.md) ----
 * The storage format of the model's nn.Linear weights, one row each in
 * src/policy/quant.c: the tensors a library keeps per weight (packed data, block
 * scales, zeros, code books) and the temporaries its linear makes. The
 * format replaces every Linear weight but the ones the method leaves in
 * 16-bit (the output layer: transformers' get_keys_to_not_convert) and
 * those named in `skip`. */
#define VC_WEIGHTS_MAP(X)                                                   \
    X(DENSE, "dense") X(INT8, "int8") X(NF4, "nf4") X(FP4, "fp4")           \
    X(GPTQ, "gptq") X(AWQ, "awq") X(FP8, "fp8") X(FP8_CHANNEL, "fp8-channel") \
    X(FP8_BLOCK, "fp8-block") X(MXFP4, "mxfp4") X(CT, "compressed-tensors")
/* What --weights accepts, in --help's order: a format's name, with its bits
 * for the formats that have several widths (vc_quant_from_name reads these;
 * the option table's choices are this list). */
#define VC_WEIGHTS_SPELLING_MAP(X)                                               \
    X(NF4, "nf4") X(FP4, "fp4") X(INT8, "int8") X(GPTQ, "gptq4") X(GPTQ, "gptq8") \
    X(GPTQ, "gptq3") X(GPTQ, "gptq2") X(AWQ, "awq4") X(FP8, "fp8")                \
    X(FP8_CHANNEL, "fp8-channel") X(FP8_BLOCK, "fp8-block") X(MXFP4, "mxfp4")    \
    X(CT, "compressed-tensors") X(DENSE, "dense")
#define VC__ENUM_W(e, n) VC_WEIGHTS_##e,
typedef enum { VC_WEIGHTS_MAP(VC__ENUM_W) VC_WEIGHTS__N } vc_weights;
/* One weights format with its settings. Unlike vc_options, vc_quant does not begin with its size:
 * it grows between 0.x releases (the compressed-tensors fields), so a program that passes one to
 * vc_quant_from_name, vc_model_set_weights or vc_model_weights is built with this header; the
 * request's "weights" option (vc_request_set) is the ABI-stable way to choose a format. */
typedef struct {
    vc_weights format;
    int64_t bits;        /* gptq, awq: bits per weight (gptq 2, 3, 4, 8; awq 4) */
    int64_t group;       /* gptq, awq: group_size (-1: one group per input row); nf4/fp4: blocksize */
    int double_quant;    /* nf4/fp4: bnb_4bit_use_double_quant (compress_statistics) */
    int64_t block[2];    /* fp8-block: weight_block_size [out, in] */
    char skip[512];      /* modules_to_not_convert, comma-separated, besides the output layer */
    /* compressed-tensors (a config.json's quant_method "compressed-tensors"; docs/quantization.md):
     * its config group's weights and input_activations; bits, group (group_size) and block
     * (block_structure) above hold num_bits and the group or block */
    int ct_float;        /* weights type "float" (fp8 e4m3), else "int" */
    int ct_strategy;     /* weights strategy: VC_CT_TENSOR, VC_CT_CHANNEL, VC_CT_GROUP, VC_CT_BLOCK */
    int ct_asymmetric;   /* weights symmetric false: a zero point beside each scale */
    int ct_actorder;     /* actorder "group": weight_g_idx */
    int ct_packed;       /* format "pack-quantized" (weights packed in int32 words), else one per element */
    int ct_input;        /* input_activations: 0 none (weights only), 1 dynamic (no parameter), 2 static (input_scale per tensor) */
    char ct_targets[512]; /* the config group's targets, newline-separated ("Linear"; its ignore list is skip,
                           * newline-separated too: a pattern may hold commas); "" under --weights: every Linear
                           * but the output layer and those in skip (comma-separated) */
} vc_quant;
enum { VC_CT_TENSOR, VC_CT_CHANNEL, VC_CT_GROUP, VC_CT_BLOCK };
/* A format by name with its defaults: "nf4" (blocksize 64, double quant, as
 * --qlora), "fp4", "int8", "gptq4"/"gptq8"/"gptq3"/"gptq2" (group 128),
 * "awq4" (group 128), "fp8", "fp8-channel", "fp8-block" (128x128), "mxfp4"
 * (gpt-oss's stacked experts only), "compressed-tensors" (its FP8_DYNAMIC preset:
 * fp8 weights per channel, dynamic activations), "dense".
 * -1 when unknown. */
VC_EXTERN int vc_quant_from_name(const char *name, vc_quant *q);
VC_EXTERN const char *vc_weights_name(vc_weights w);
/* Stores the model's Linear weights in q's format (format DENSE: as the
 * precision says, the default) and re-checks the model; this overrides a
 * config.json's quantization_config. VC_ERR_USAGE naming --weights when a
 * layer's shape does not fit the format (AWQ's group must divide in_features). */
VC_EXTERN vc_status vc_model_set_weights(vc_model *m, const vc_quant *q, vc_error *err);
/* The format the model's weights have now (a config.json's or --weights),
 * and its settings into q (may be NULL). */
VC_EXTERN vc_weights vc_model_weights(const vc_model *m, vc_quant *q);
/* "nf4 (block 64, double quant)", "gptq4 (group 128)", "fp8-block (128x128)". */
VC_EXTERN void vc_quant_describe(const vc_quant *q, char *buf, size_t n);

VC_EXTERN const char *vc_model_name(const vc_model *m);
VC_EXTERN int64_t vc_model_parameters(const vc_model *m);           /* sum(p.numel()) */
VC_EXTERN int64_t vc_model_trainable_parameters(const vc_model *m); /* requires_grad */
VC_EXTERN size_t vc_model_layer_count(const vc_model *m);           /* expanded instances */

/* ---- Hugging Face config.json input (docs/llm.md) ----
 * A JSON object with "model_type" and no "layers" is a Hugging Face
 * config.json: the loader turns it into the equivalent model (the same
 * layer format, vc_model_generated_json) and loads that. */
#define VC_HF_DEFAULT_SEQ 2048 /* tokens per sample unless --seq says (fewer for learned positions) */
/* The causal-LM loss a config.json trains with (--loss; docs/llm.md "The loss"): hf =
 * transformers' ForCausalLMLoss (the model JSON's "loss": "causal_lm"), liger = Liger-Kernel's
 * fused linear cross-entropy ("liger_fused_linear_ce"), cce = Apple's Cut Cross-Entropy
 * ("cut_cross_entropy"), chunked = torchtune's chunked output projection and
 * CEWithChunkedOutputLoss ("chunked_ce", loss_chunks chunks), mean = the simplest loop's
 * outputs.logits.mean() ("logits_mean"), sum = outputs.logits.sum() ("logits_sum"), chunked-nll = TRL SFTTrainer's default loss_type "chunked_nll"
 * ("chunked_nll": 256-token chunks, each under a checkpoint), a row each of src/engine/loss.c's table. */
#define VC_LOSS_MAP(X) X(HF, "hf") X(LIGER, "liger") X(CCE, "cce") X(CHUNKED, "chunked") X(MEAN, "mean") \
    X(DPO, "dpo") X(DPO_PRECOMPUTED, "dpo-precomputed") X(ORPO, "orpo") X(KTO, "kto") \
    X(CHUNKED_NLL, "chunked-nll") X(GRPO, "grpo") X(NLL, "nll") X(SUM, "sum")
#define VC__ENUM_LOSS(e, n) VC_LOSS_IMPL_##e,
typedef enum { VC_LOSS_MAP(VC__ENUM_LOSS) VC_LOSS_IMPL__N } vc_loss_impl;
VC_EXTERN int vc_loss_impl_from_name(const char *s); /* -1 when unknown */
/* How a config's MoE experts run (--experts-implementation; docs/llm.md "Mixture of experts"):
 * grouped_mm = transformers 5's default, the experts stacked in 3-D weights through one grouped
 * matmul; per_expert = transformers 4.x's nn.ModuleList of experts, a loop over them. */
#define VC_EXPERTS_MAP(X) X(GROUPED_MM, "grouped_mm") X(PER_EXPERT, "per_expert")
#define VC__ENUM_EXPERTS(e, n) VC_EXPERTS_##e,
typedef enum { VC_EXPERTS_MAP(VC__ENUM_EXPERTS) VC_EXPERTS__N } vc_experts_impl;
VC_EXTERN int vc_experts_impl_from_name(const char *s); /* -1 when unknown */
/* A config.json's load options: part of the legacy struct API (the top of
 * this header: set up by vc_hf_options_init, fields only appended); the
 * request sets every load option by name (vc_request_set). */
typedef struct {
    size_t size;          /* the struct's size as the program was compiled: vc_hf_options_init sets it */
    int64_t seq;          /* tokens per sample; 0: VC_HF_DEFAULT_SEQ or the model's position limit */
    double moe_imbalance; /* busiest expert's share of the routed tokens over the even share (>= 1) */
    int checkpoint;       /* 1: gradient_checkpointing_enable(), each decoder layer checkpointed */
    vc_loss_impl loss;    /* a causal LM's loss (default hf); an encoder refuses another */
    vc_experts_impl experts; /* the MoE experts' implementation (default grouped_mm) */
    int64_t loss_chunks;  /* loss chunked: torchtune's num_output_chunks (default 8) */
    int64_t ckpt_every;   /* with checkpoint: only every ckpt_every-th decoder layer (counting from 1) checkpointed
                           * (torchtune's ac_mode selective, ac_option N; torchtitan's selective_ac_option N); 0, 1: all */
    int64_t image_w, image_h; /* --image WxH: each image's size before the processor resizes it (0: no image) */
    int64_t images;           /* --images N: images per sample (default 1 with --image) */
    int64_t target_seq;       /* --target-seq N: an encoder-decoder's (t5) decoder tokens per sample; 0: seq */
    int liger;                /* --liger: Liger-Kernel's patch set (use_liger_kernel=True), its loss included */
    char liger_kernels[128];  /* --liger-kernels: the kernels switched on, e.g. "rope,rms_norm" ("": the defaults) */
} vc_hf_options;
/* Defaults into the first `size` bytes of o (size: sizeof(vc_hf_options) as
 * the caller was compiled), o->size = size. vc_hf_options_init(o) is it with
 * the caller's sizeof; as a function (for bindings that cannot use the
 * macro), the library's. */
VC_EXTERN void vc_hf_options_init_size(vc_hf_options *o, size_t size);
VC_EXTERN void vc_hf_options_init(vc_hf_options *o);
#define vc_hf_options_init(o) vc_hf_options_init_size((o), sizeof(vc_hf_options))
/* vc_model_load_file / vc_model_load_string with options for a config.json
 * (hf may be NULL: the defaults; the options do nothing to other files). */
VC_EXTERN vc_status vc_model_load_file_hf(const char *path, const vc_hf_options *hf, vc_model **out, vc_error *err);
VC_EXTERN vc_status vc_model_load_string_hf(const char *json, size_t len, const char *name, const vc_hf_options *hf,
                                            vc_model **out, vc_error *err);
/* The vramcalc model JSON a config.json was turned into; NULL for a model file. */
VC_EXTERN const char *vc_model_generated_json(const vc_model *m);
/* Reloads a config.json model at `seq` tokens per sample (as --seq would
 * have loaded it), keeping its other options and its LoRA adapters; on
 * failure the model is left as it was. VC_ERR_USAGE for a model file. */
VC_EXTERN vc_status vc_model_set_seq(vc_model *m, int64_t seq, vc_error *err);
/* Reloads a config.json model with another causal-LM loss (as --loss would have loaded it),
 * keeping its other options and its LoRA adapters; on failure the model is left as it was.
 * VC_ERR_USAGE (naming --loss) for a model file or an encoder. */
VC_EXTERN vc_status vc_model_set_loss(vc_model *m, vc_loss_impl loss, vc_error *err);
/* A config.json's model built as one of tp Megatron tensor-parallel ranks (sp:
 * with sequence parallelism; docs/parallel.md), so that its parameters and
 * layers are one rank's. An estimate needs no call: vc_options.tp and .sp say
 * the split, and an estimate of a model built for another one builds it again
 * at the options' (kept with the model for the next estimate). A model file
 * refuses tp > 1 (VC_ERR_USAGE, "--tp"). */
VC_EXTERN vc_status vc_model_set_tp(vc_model *m, int64_t tp, int sp, vc_error *err);
/* The model as one of ep Megatron-Core expert-parallel ranks (docs/parallel.md
 * section 5): every SparseMoE layer holds num_experts / ep local experts and
 * runs Megatron's MoELayer with the all-to-all token dispatcher. Any model
 * with SparseMoE layers (a config.json or a model file); as with
 * vc_model_set_tp, an estimate follows vc_options.ep whatever the model was
 * built for. VC_ERR_USAGE naming --ep when ep does not divide a layer's
 * experts, the model has no SparseMoE layer, or a layer is of a form not
 * modelled (a shared expert, an activation other than SiLU, softmax-then-top-k
 * without renormalisation). */
VC_EXTERN vc_status vc_model_set_ep(vc_model *m, int64_t ep, vc_error *err);

/* ---- options ----
 * Each choice is an X-macro list X(ENUM, "cli-name"): the enum, the names
 * and the lookups below come from it. What an optimizer or a precision does
 * is one row of its table (src/policy/optim.c, src/policy/precision.c): adding one is a
 * line here, a row there, and its tests (docs/contributing.md). */
#define VC_OPTIM_MAP(X)            \
    X(SGD, "sgd")                  \
    X(MOMENTUM, "momentum")        \
    X(ADAM, "adam")                \
    X(ADAMW, "adamw")              \
    X(NONE, "none")                \
    X(LION, "lion")                \
    X(ADAM8BIT, "adam8bit")        \
    X(ADAMW8BIT, "adamw8bit")      \
    X(ADAFACTOR, "adafactor")      \
    X(PAGED_ADAM8BIT, "paged_adam8bit") \
    X(PAGED_ADAMW8BIT, "paged_adamw8bit")
#define VC_OPTIM_IMPL_MAP(X) X(FOREACH, "foreach") X(FUSED, "fused") X(FORLOOP, "forloop")
#define VC_PRECISION_MAP(X)                                                          \
    X(FP32, "fp32") X(FP16, "fp16") X(BF16, "bf16") X(AMP_FP16, "amp-fp16")           \
    X(AMP_BF16, "amp-bf16") X(MIXED_FP16, "mixed-fp16") X(MIXED_BF16, "mixed-bf16")
#define VC_MODE_MAP(X) X(TRAIN, "train") X(INFER, "infer") X(GENERATE, "generate")
/* The KV cache of --mode generate (docs/inference.md): transformers' DynamicCache
 * (grown by torch.cat each step), StaticCache (preallocated to prompt + new tokens),
 * DynamicCache(offloading=True), QuantizedCache (quanto backend; src/engine/kvquant.c). */
#define VC_CACHE_MAP(X) X(DYNAMIC, "dynamic") X(STATIC, "static") X(OFFLOADED, "offloaded") X(QUANTIZED, "quantized")
#define VC_ATTENTION_MAP(X) X(AUTO, "auto") X(FLASH, "flash") X(EFFICIENT, "efficient") X(MATH, "math")
/* Parallel layouts (docs/parallel.md): one row each in src/parallel/layout.c. */
#define VC_PARALLEL_MAP(X) X(NONE, "none") X(DDP, "ddp") X(ZERO1_TORCH, "zero1-torch") X(FSDP, "fsdp") \
    X(FSDP_GRAD_OP, "shard-grad-op") X(FSDP_HYBRID, "hybrid") \
    X(ZERO2, "zero2") X(ZERO3, "zero3") X(FSDP2, "fsdp2") X(ZERO1, "zero1") \
    X(MEGATRON, "megatron") X(MEGATRON_DIST, "megatron-dist")
/* --offload (docs/parallel.md): what a parallel layout keeps on the CPU. optimizer:
 * DeepSpeed's offload_optimizer (the fp32 partition, its gradient and state);
 * params: offload_param too (the 16-bit partitions). */
#define VC_OFFLOAD_MAP(X) X(NONE, "none") X(OPTIMIZER, "optimizer") X(PARAMS, "params")
/* --fsdp-param-dtype, --fsdp-reduce-dtype (docs/parallel.md 1.6, 2.5): FSDP2's
 * MixedPrecisionPolicy(param_dtype, reduce_dtype), FSDP1's MixedPrecision(param_dtype,
 * reduce_dtype); none: its default (None). */
#define VC_FSDP_DTYPE_MAP(X) X(NONE, "none") X(FP32, "fp32") X(BF16, "bf16") X(FP16, "fp16")

#define VC__ENUM(prefix) VC__ENUM_##prefix
#define VC__ENUM_OPTIM(e, n) VC_OPTIM_##e,
#define VC__ENUM_IMPL(e, n) VC_IMPL_##e,
#define VC__ENUM_PREC(e, n) VC_PREC_##e,
#define VC__ENUM_MODE(e, n) VC_MODE_##e,
#define VC__ENUM_ATTN(e, n) VC_ATTN_##e,
#define VC__ENUM_PAR(e, n) VC_PARALLEL_##e,
#define VC__ENUM_CACHE(e, n) VC_CACHE_##e,
#define VC__ENUM_OFFLOAD(e, n) VC_OFFLOAD_##e,
#define VC__ENUM_FSDP_DTYPE(e, n) VC_FSDP_DTYPE_##e,
typedef enum { VC_OPTIM_MAP(VC__ENUM_OPTIM) VC_OPTIM__N } vc_optim;
typedef enum { VC_OPTIM_IMPL_MAP(VC__ENUM_IMPL) VC_IMPL__N } vc_optim_impl;
typedef enum { VC_PRECISION_MAP(VC__ENUM_PREC) VC_PREC__N } vc_precision;
typedef enum { VC_MODE_MAP(VC__ENUM_MODE) VC_MODE__N } vc_mode;
typedef enum { VC_ATTENTION_MAP(VC__ENUM_ATTN) VC_ATTN__N } vc_attention;
typedef enum { VC_PARALLEL_MAP(VC__ENUM_PAR) VC_PARALLEL__N } vc_parallel;
typedef enum { VC_CACHE_MAP(VC__ENUM_CACHE) VC_CACHE__N } vc_cache;
typedef enum { VC_OFFLOAD_MAP(VC__ENUM_OFFLOAD) VC_OFFLOAD__N } vc_offload;
typedef enum { VC_FSDP_DTYPE_MAP(VC__ENUM_FSDP_DTYPE) VC_FSDP_DTYPE__N } vc_fsdp_dtype;

/* CUDA_MODULE_LOADING (vc_options.module_loading): AUTO lazy from CUDA 11.7, eager before. */
typedef enum { VC_MODULE_LOADING_AUTO, VC_MODULE_LOADING_LAZY, VC_MODULE_LOADING_EAGER } vc_module_loading;
/* NCCL's topology (vc_options.nccl_topology; src/engine/nccl.c): AUTO from --gpu's preset;
 * SHM: PCIe without peer access (NCCL's SHM transport, its buffers in host memory); XGMI: in
 * vc_nccl_info.topology only, AUTO's on one MI300X node (RCCL's xGMI channels), never an option. */
typedef enum {
    VC_NCCL_TOPO_AUTO, VC_NCCL_TOPO_NVSWITCH, VC_NCCL_TOPO_NVLINK, VC_NCCL_TOPO_PCIE, VC_NCCL_TOPO_SHM, VC_NCCL_TOPO_XGMI
} vc_nccl_topology;
/* Where --offload puts what it moves (vc_options.offload_device): "cpu", "nvme". */
typedef enum { VC_OFFLOAD_DEVICE_CPU, VC_OFFLOAD_DEVICE_NVME } vc_offload_device;
/* DeepSpeed's overlap_comm (vc_options.ds_overlap_comm): AUTO its default, ON and OFF given. */
typedef enum { VC_DS_OVERLAP_OFF = -1, VC_DS_OVERLAP_AUTO = 0, VC_DS_OVERLAP_ON = 1 } vc_ds_overlap;

/* An estimate's options: the legacy struct API (the top of this header: set
 * up by vc_options_init, fields only appended, a new one at the end); the
 * request sets every option by name (vc_request_set). */
typedef struct {
    size_t size;            /* the struct's size as the program was compiled: vc_options_init sets it */
    int64_t batch;          /* samples per step, >= 1 */
    vc_optim optim;
    vc_optim_impl optim_impl;
    int64_t accumulate;     /* micro-batches per optimizer step, >= 1 */
    vc_precision precision;
    vc_mode mode;
    vc_attention attention;
    int64_t workspace;      /* bytes of cuBLAS/cuDNN workspace; -1: modelled */
    int64_t context;        /* bytes of CUDA context; -1: modelled */
    int hopper;             /* 1: sm90+ (cuBLAS 32 MiB workspace), 0: other GPUs */
    int torch_version;      /* PyTorch release followed, 100*major + minor (VC_TORCH_DEFAULT) */
    vc_parallel parallel;   /* the parallel layout (none: one GPU) */
    int64_t gpus;           /* ranks (data-parallel world size), >= 1 */
    /* --mode generate (docs/inference.md): greedy generate() of new_tokens
     * tokens after a prompt of `prompt` tokens, per sequence of the batch */
    int64_t prompt;         /* >= 1 (VC_GEN_DEFAULT_PROMPT) */
    int64_t new_tokens;     /* >= 1 (VC_GEN_DEFAULT_NEW_TOKENS) */
    vc_cache cache;
    /* Model parallelism (docs/parallel.md): --gpus is the whole world, its
     * data-parallel part gpus / (tp * pp) (vc_dp_world). */
    int64_t tp;             /* tensor-parallel ranks (Megatron), >= 1 */
    int64_t pp;             /* pipeline stages, >= 1 */
    int64_t micro_batches;  /* pipeline micro-batches per step, >= 1 (0: pp) */
    int sp;                 /* 1: sequence parallelism with tp (Megatron --sequence-parallel) */
    vc_offload offload;     /* what the parallel layout keeps on the CPU (none) */
    /* --cache quantized: QuantizedCache's cache_config (transformers' defaults:
     * nbits 4, q_group_size 64, residual_length 128; backend quanto, axis 0) */
    int kv_bits;            /* 2 or 4 (quanto's qint2 / qint4) */
    int64_t kv_group;       /* q_group_size: elements per scale and shift */
    int64_t kv_residual;    /* residual_length: tokens kept unquantized, >= 0 */
    /* --parallel fsdp2: MixedPrecisionPolicy's param_dtype and reduce_dtype (none: None);
     * fsdp, shard-grad-op, hybrid: MixedPrecision's */
    vc_fsdp_dtype fsdp_param_dtype, fsdp_reduce_dtype;
    /* Megatron-Core expert parallelism (docs/parallel.md section 6): the MoE
     * layers' experts split over ep ranks of the data-parallel group, >= 1 */
    int64_t ep;
    /* The GPU estimated for (--gpu): its multiprocessors size CUDA kernels'
     * own scratch (src/engine/scratch.c); NULL: the default device there. */
    const struct vc_gpu *device;
    /* --parallel fsdp2: fully_shard's reshard_after_forward, the same for every
     * call: VC_FSDP_RESHARD_AUTO (None, the default: True, the root's False),
     * _TRUE, _FALSE, or N >= 1 (an int: the world size after forward) */
    int64_t fsdp_reshard;
    /* --parallel fsdp2: HSDP, a (fsdp_replicate, world / fsdp_replicate) mesh:
     * sharded over the second dimension, replicated over the first (0, 1: none) */
    int64_t fsdp_replicate;
    /* --pp-virtual: model chunks per pipeline rank under Megatron's interleaved
     * 1F1B schedule (virtual_pipeline_model_parallel_size), 0 or 1: none */
    int64_t pp_virtual;
    /* --parallel ddp, zero1-torch: DistributedDataParallel(gradient_as_bucket_view=True),
     * each .grad a view into the reducer's gradient bucket (docs/parallel.md 1.3); 0: False */
    int gradient_as_bucket_view;
    /* --parallel zero1-torch: ZeroRedundancyOptimizer(parameters_as_bucket_view=True), the
     * trainable parameters views into one flat tensor per rank's partition; 0: False */
    int parameters_as_bucket_view;
    /* --fsdp-use-orig-params (fsdp, shard-grad-op, hybrid): FSDP1's
     * use_orig_params=True, 1; 0: False, the default (docs/parallel.md 1.6) */
    int fsdp_use_orig_params;
    /* --parallel zero1|zero2|zero3: DeepSpeedZeroConfig's overlap_comm
     * (VC_DS_OVERLAP_AUTO: its default, the validator overlap_comm_valid's
     * stage == 3; _ON, _OFF: given). docs/parallel.md 1.7, 1.9, 1.10 */
    vc_ds_overlap ds_overlap_comm;
    /* --offload-device (docs/parallel.md 1.9): DeepSpeed's offload_optimizer.device and
     * offload_param.device for what --offload moves, VC_OFFLOAD_DEVICE_CPU (0, "cpu") or _NVME
     * (1, "nvme": ZeRO-Infinity); --nvme-gds: the aio section's use_gds (1: true), which puts
     * the parameter swapper's buffers on the GPU (0: false, DeepSpeed's default) */
    vc_offload_device offload_device;
    int nvme_gds;
    /* The CUDA stack the process runs (src/engine/context.c, docs/context.md): the CUDA
     * runtime PyTorch was built with, 100*major + minor (--cuda 12.4: 1204;
     * VC_CUDA_DEFAULT), and its module loading (CUDA_MODULE_LOADING):
     * VC_MODULE_LOADING_AUTO (lazy from CUDA 11.7, eager before), _LAZY, _EAGER */
    int cuda_version;
    vc_module_loading module_loading;
    /* NCCL (src/engine/nccl.c): --nccl-topology (AUTO: --gpu's), --nccl-channels (0: NCCL's
     * search; N: NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = N); nccl_stages: a pipeline
     * stage's options (pp 1) keep the layout's stage count here for NCCL's P2P peers */
    vc_nccl_topology nccl_topology;
    int64_t nccl_channels;
    int64_t nccl_stages;
    /* --zero-grad (docs/llm.md): 0 ("none"), optimizer.zero_grad(set_to_none=True), the
     * gradients freed after each step (PyTorch 2.x's default); 1 ("zero"), set_to_none=False:
     * they stay allocated between steps, zeroed in place, and backward adds into them */
    int keep_grads;
    /* --hold-output (docs/llm.md): 1, the loop keeps the model's output (outputs.logits) until
     * loss.backward() returns (out = model(...); out.loss.backward()); 0, it is dropped when the
     * loss has been computed (transformers' Trainer.compute_loss returns the loss only) */
    int hold_output;
    /* --bound (docs/context.md "cuDNN workspaces"): which end of the cuDNN
     * workspace interval the figures (and the fit, --max-batch) follow:
     * VC_BOUND_LOW (0), no convolution workspace, the figures as without cuDNN;
     * VC_BOUND_HIGH (1), each convolution call's workspace at its bound
     * (src/engine/cudnn.c). Either way vc_memory.cudnn holds both ends. */
    int bound;
    /* --cudnn-table: each convolution's workspace as measured on one GPU and
     * cuDNN (bench/accuracy/cudnn_calibrate.py; vc_cudnn_table_load); NULL none.
     * Given, the workspaces are the table's, in both ends (exact). */
    const struct vc_cudnn_table *cudnn_table;
    /* --alloc-conf: PYTORCH_ALLOC_CONF's options that change `reserved`
     * (vc_alloc_conf_parse; src/engine/alloc.c); all 0: PyTorch's defaults */
    struct {
        int expandable_segments;      /* expandable_segments:True */
        int64_t max_split_size;       /* max_split_size_mb in bytes; 0: unlimited (SIZE_MAX) */
        double gc_threshold;          /* garbage_collection_threshold, 0: off (kept: no effect without a memory fraction) */
    } alloc_conf;
    /* --optim-in-bwd (docs/llm.md): 1, the optimizer runs inside backward, one parameter at a
     * time, from its post-accumulate-grad hook (torchtune's optimizer_in_bwd, the PyTorch
     * tutorial's pattern: Tensor.register_post_accumulate_grad_hook, torch 2.1+): each
     * gradient is stepped on and freed as soon as AccumulateGrad has made it; 0, one
     * optimizer.step() after backward */
    int optim_in_bwd;
    /* --first-step (docs/llm.md): 1, vc_estimate also simulates the run's first step and the one
     * after it (vc_memory.first_step): the optimizer's state made lazily inside the first step()
     * (torch/optim's _init_group: zeros_like(p) on the first call), so the caching allocator
     * places it among the blocks the first step's activations left. The result's other figures
     * are the steady state's (the state made before the step) either way; --max-batch and
     * --sweep search on those. */
    int first_step;
    /* --grad-ckpt-ops (docs/llm.md): 1, every checkpointed region runs torchtitan's op-level
     * selective activation checkpointing (SelectiveAC / _apply_op_sac): the outputs of its mm
     * (every other one, from the first) and SDPA kernels kept from forward, the rest recomputed,
     * the recompute run to the region's end (early_stop=False); 0, everything recomputed */
    int ckpt_ops;
    /* --grad-ckpt-kind (docs/llm.md "Gradient checkpointing"): 1, the model's checkpointed layers run
     * torch.utils.checkpoint's reentrant variant (use_reentrant=True, CheckpointFunction: the forward under
     * no_grad keeping the inputs, the backward recomputing the whole layer under enable_grad and running
     * torch.autograd.backward inside it); 0, the non-reentrant one (early stop). The loss's own
     * checkpoints stay non-reentrant. */
    int ckpt_reentrant;
    /* --act-offload (docs/llm.md): torchtune's OffloadActivations around the model's forward
     * (torchtune/training/_activation_offloading.py): VC_ACT_OFFLOAD_STREAMS (use_streams=True,
     * its default) or _SYNC (use_streams=False); _NONE (0) none */
    int act_offload;
    /* --compile (docs/autograd.md §13): VC_COMPILE_INDUCTOR, the model under torch.compile
     * (inductor, default mode, one graph): AOTAutograd's min-cut partitioner decides what is
     * saved for backward, inductor's fusion drops the fused kernels' intermediates;
     * VC_COMPILE_FUNCTORCH_113, the same with functorch 1.13's partitioner rules
     * (min_cut_rematerialization_partition, compiler="inductor"), the CPU validation's
     * (bench/accuracy/compile_partition.py); 0 eager */
    int compile;
    /* --packing (docs/llm.md "Packed sequences"): the number of sequences packed into the step's
     * one row (TRL's padding_free / packing, torchtune's packed=True): batch is then 1 and the
     * row's length their sum, the attention follows it (layers/llm.c ra_packed); 0 or 1: none */
    int64_t packing;
    /* --loss grpo (docs/llm.md, "--loss grpo"): TRL's GRPOTrainer step, its generation of prompt + new_tokens
     * tokens per sequence (max_completion_length = new_tokens) inside it. grpo_beta: GRPOConfig.beta,
     * the KL coefficient (0, its default: no reference model); num_generations: GRPOConfig's, the
     * completions per prompt (default 8), which must divide the generation batch */
    double grpo_beta;
    int64_t num_generations;
    /* NCCL across nodes (src/engine/nccl.c, docs/context.md "NCCL"): --gpus-per-node, the
     * GPUs of one node (0: 8); a world of more spans nodes joined by the network transport.
     * nccl_stage: a pipeline stage's options carry the stage, 1 to pp, for its neighbours
     * (0: the busiest stage's) */
    int64_t gpus_per_node;
    int64_t nccl_stage;
    /* --serve --enforce-eager (src/engine/serve.c vllm_graphs): vLLM's enforce_eager, which sets
     * cudagraph_mode NONE, so no CUDA graph is captured or profiled; 0: graphs (vLLM's default) */
    int64_t enforce_eager;
    /* --serve --cuda-graph-memory (src/engine/serve.c vllm_graphs): vLLM's start-up measure of its CUDA
     * graphs in bytes, as its log prints it ("Estimated CUDA graph memory: X GiB total"), subtracted
     * from the pool as Worker.determine_available_memory does; VC_CUDA_GRAPH_MEMORY_ESTIMATE (-2,
     * --cuda-graph-memory estimate): vramcalc's estimate of that measure taken off instead
     * (src/engine/serve_graphs.c, vc_serve_result.graphs_estimate); VC_CUDA_GRAPH_MEMORY_VLLM_DEFAULT (-1, the
     * default): not given, so vLLM's default, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 since v0.21.0: that
     * estimate taken off wherever vLLM measures the graphs (graphs_profiled) and vramcalc derives it */
    int64_t cuda_graph_memory;
    /* --use-vllm (with --loss grpo; docs/llm.md "--loss grpo"): TRL's use_vllm=True, vllm_mode "colocate": the
     * completions come from an in-process vLLM engine, not generate(), and the step adds the policy's own no-grad
     * log-probs (vllm_importance_sampling_correction) and their buffer (src/engine/grpo.c); 0 off */
    int grpo_vllm;
    /* --nccl-nvls (src/engine/nccl.c, docs/context.md "NCCL"): VC_NCCL_NVLS_AUTO (0), NCCL's
     * default NCCL_NVLS_ENABLE=2, NVLS where the GPUs' NVSwitch has multicast (the nvswitch
     * topology on sm90 and later, CUDA 12.1 or later); VC_NCCL_NVLS_OFF, NCCL_NVLS_ENABLE=0 */
    int nccl_nvls;
    /* --num-beams (docs/inference.md "Beam search"): generate()'s num_beams, beam search as transformers'
     * GenerationMixin._beam_search runs it (src/engine/generate.c "Beam search"); 1 (the default): greedy */
    int64_t num_beams;
} vc_options;
#define VC_NCCL_NVLS_AUTO 0
#define VC_NCCL_NVLS_OFF 1
#define VC_COMPILE_INDUCTOR 1
#define VC_COMPILE_FUNCTORCH_113 2
#define VC_BOUND_LOW 0
#define VC_BOUND_HIGH 1
#define VC_ACT_OFFLOAD_NONE 0
#define VC_ACT_OFFLOAD_STREAMS 1
#define VC_ACT_OFFLOAD_SYNC 2
/* The CUDA runtime of the measurements the context model is fitted on (the
 * H200 run: torch 2.11.0+cu130), and the oldest and newest --cuda accepts. */
#define VC_CUDA_DEFAULT 1300
#define VC_CUDA_OLDEST 1100
#define VC_CUDA_NEWEST 1309
/* vc_options.fsdp_reshard: a count N >= 1 or one of these */
#define VC_FSDP_RESHARD_AUTO 0
#define VC_FSDP_RESHARD_TRUE (-1)
#define VC_FSDP_RESHARD_FALSE (-2)
#define VC_GEN_DEFAULT_PROMPT 1024
#define VC_GEN_DEFAULT_NEW_TOKENS 256

/* The PyTorch release the estimate follows by default (the current stable
 * one), and the oldest one --torch accepts. */
#define VC_TORCH_DEFAULT 215
#define VC_TORCH_OLDEST 200

/* Defaults: batch 1, adam, foreach, no accumulation, fp32, train, auto
 * attention, modelled workspace and context, non-Hopper, PyTorch 2.15; into
 * the first `size` bytes of o (size: sizeof(vc_options) as the caller was
 * compiled), o->size = size. vc_options_init(o) is it with the caller's
 * sizeof; as a function (for bindings that cannot use the macro), the
 * library's. */
VC_EXTERN void vc_options_init_size(vc_options *o, size_t size);
VC_EXTERN void vc_options_init(vc_options *o);
#define vc_options_init(o) vc_options_init_size((o), sizeof(vc_options))

/* The data-parallel world size of o: gpus / (tp * pp), 1 when that does not
 * divide (vc_estimate refuses such options). */
VC_EXTERN int64_t vc_dp_world(const vc_options *o);

/* Name <-> enum helpers ("adam", "amp-bf16", ...). The from_name functions
 * return -1 when unknown; the name functions "?" for a value out of range
 * (so a loop up to VC_OPTIM__N lists every optimizer). */
VC_EXTERN int vc_optim_from_name(const char *s);
VC_EXTERN int vc_optim_impl_from_name(const char *s);
VC_EXTERN int vc_precision_from_name(const char *s);
VC_EXTERN int vc_mode_from_name(const char *s);
VC_EXTERN int vc_attention_from_name(const char *s);
VC_EXTERN int vc_parallel_from_name(const char *s);
VC_EXTERN int vc_cache_from_name(const char *s);
VC_EXTERN const char *vc_cache_name(vc_cache c);
VC_EXTERN int vc_offload_from_name(const char *s);
VC_EXTERN const char *vc_offload_name(vc_offload o);
VC_EXTERN int vc_fsdp_dtype_from_name(const char *s);
VC_EXTERN const char *vc_fsdp_dtype_name(vc_fsdp_dtype d);
VC_EXTERN const char *vc_parallel_name(vc_parallel p);
/* The class --fsdp-param-dtype / --fsdp-reduce-dtype configure under layout p:
 * "MixedPrecisionPolicy" (fsdp2), "MixedPrecision" (FSDP1's); "?" for a layout
 * without one. */
VC_EXTERN const char *vc_parallel_mixed_precision(vc_parallel p);
/* The --precision a model with weights q computes in when not told: fp16 for
 * gptq and awq (their kernels' dtype), bf16 for the other quantized formats,
 * fp32 (the default) for dense. */
VC_EXTERN vc_precision vc_quant_compute_precision(const vc_quant *q);
VC_EXTERN const char *vc_optim_name(vc_optim o);
VC_EXTERN const char *vc_optim_impl_name(vc_optim_impl i);
VC_EXTERN const char *vc_precision_name(vc_precision p);
VC_EXTERN const char *vc_mode_name(vc_mode m);
VC_EXTERN const char *vc_attention_name(vc_attention a);
/* One line on what an optimizer keeps and allocates ("torch.optim.Adam: ..."). */
VC_EXTERN const char *vc_optim_summary(vc_optim o);
/* The implementation the optimizer's class runs when not told: foreach, but
 * forloop for adafactor (torch.optim.Adafactor's foreach=None). vc_options_init
 * sets foreach; the CLI's --optim-impl defaults to vc_optim_default_impl_at
 * at --torch (this one is it at VC_TORCH_DEFAULT). */
VC_EXTERN vc_optim_impl vc_optim_default_impl(vc_optim o);
/* The same at a PyTorch release (100*major + minor; 0: VC_TORCH_DEFAULT):
 * what --optim-impl defaults to under --torch. */
VC_EXTERN vc_optim_impl vc_optim_default_impl_at(vc_optim o, int torch_version);
/* "2.5" -> 205 (VC_TORCH_OLDEST..VC_TORCH_DEFAULT), -1 otherwise; and back
 * ("2.15"; buf of at least 16 bytes). */
VC_EXTERN int vc_torch_from_name(const char *s);
VC_EXTERN const char *vc_torch_name(int version, char *buf, size_t n);

/* ---- results ---- */
/* SYNC: --use-vllm's sync_weights, VLLM: the colocated vLLM engine's generate() (src/api/request.c vllm_beside) */
typedef enum { VC_PHASE_FORWARD, VC_PHASE_BACKWARD, VC_PHASE_OPTIMIZER, VC_PHASE_IDLE, VC_PHASE_PREFILL, VC_PHASE_DECODE,
               VC_PHASE_SYNC, VC_PHASE_VLLM } vc_phase;
VC_EXTERN const char *vc_phase_name(vc_phase p);

/* What the process holds outside the caching allocator, as src/engine/context.c
 * models it (docs/context.md): cuda_context is the sum of the parts. */
typedef struct {
    int64_t runtime;         /* the driver's context, the CUDA runtime and PyTorch's own kernels as a step loads them */
    int64_t local_memory;    /* local memory of the default 1 KiB stack: SMs x resident threads x 1 KiB */
    int64_t eager;           /* eager module loading: every module of every library at start-up */
    int64_t cublas;          /* cuBLAS/cuBLASLt, loaded by the step's GEMMs (lazy loading) */
    int64_t kernels;         /* cuDNN (convolution, BatchNorm, RNN) or flash attention kernels: one part, either or both */
    int64_t backward_local_memory; /* training with GEMMs: local memory grown by 256 B a thread */
    int64_t backward_kernels;      /* training with cuDNN or flash kernels */
    int given;               /* 1: --context gave the whole figure (every part 0) */
    int measured;            /* 1: the card and stack the constants were fitted on (--gpu h200, CUDA 13.0, lazy); 0: extrapolated */
} vc_context_parts;

/* What a step runs, for the context model (vc_context_estimate): */
#define VC_USES_GEMM 1u     /* a cuBLAS/cuBLASLt GEMM (Linear, matmul, bmm) */
#define VC_USES_CUDNN 2u    /* a cuDNN op (convolution, cudnn_batch_norm, _cudnn_rnn) */
#define VC_USES_FLASH 4u    /* flash attention (_scaled_dot_product_flash_attention) */

typedef struct {
    int64_t weights;          /* parameters + buffers as stored (+ fp32 master copy) */
    int64_t gradients;        /* every trainable parameter's gradient */
    int64_t optimizer_states; /* persistent optimizer state */
    int64_t activations;      /* train: held at end of forward; infer: largest live set */
    int64_t workspace;        /* cuBLAS/cuDNN workspace taken from the allocator */
    int64_t peak_allocated;   /* max_memory_allocated() */
    int64_t reserved;         /* max_memory_reserved() */
    int64_t cuda_context;     /* context + library handles outside the allocator */
    int64_t total;            /* reserved + cuda_context + nccl */
    /* NCCL's buffers on this GPU (src/engine/nccl.c vc_nccl_per_gpu): outside the
     * caching allocator, in total; 0 on one GPU */
    int64_t nccl;
    /* optimizer state outside PyTorch's caching allocator: bitsandbytes'
     * paged optimizers (cudaMallocManaged); in none of the figures above
     * (torch.cuda.memory_allocated() does not see it; nvidia-smi does while
     * it is resident on the GPU) */
    int64_t optimizer_states_paged;
    /* cuda_context's parts (src/engine/context.c); all 0 when --context gave it */
    vc_context_parts context_parts;
    /* cuDNN convolution workspaces (src/engine/cudnn.c, docs/context.md): the
     * interval's two ends. low: no workspace; high: every convolution call's
     * workspace at its bound. source: VC_CUDNN_NONE (no convolution, or not
     * computed: both ends the figures above), _BOUND (the modelled bound),
     * _TABLE (--cudnn-table's measured workspaces: both ends the same, exact).
     * The figures above are the end vc_options.bound names. */
    struct {
        int source;
        int64_t peak_allocated_low, reserved_low, total_low;
        int64_t peak_allocated_high, reserved_high, total_high;
    } cudnn;
    /* --compile (src/engine/compile.c, docs/autograd.md §13): the figures above are the
     * compiled step's; these the same step run eagerly, and the saved activations both ways
     * (bytes, unrounded: eager's saved tensors, the partitioner's saved values); reorder 1:
     * the --torch release runs inductor's peak-memory reordering (not modelled). on 0: none */
    struct {
        int on, reorder;
        int64_t eager_activations, eager_peak_allocated, eager_reserved, eager_total;
        int64_t saved_eager, saved_compiled;
    } compile;
    /* --first-step (docs/llm.md): the run's first steps, where torch.optim makes the optimizer
     * state inside the first step() (after backward, among the blocks the activations left).
     * computed: 1 when asked (training with an optimizer that steps); peak_allocated: the first
     * step's max_memory_allocated() (its forward and backward run without the state);
     * reserved: max_memory_reserved() over the first two steps (the next forward's segments on
     * top of the state's); total: reserved + cuda_context. The figures above stay the steady
     * state's (the state made before the step, as on a resumed run) with or without it. */
    struct {
        int computed;
        int64_t peak_allocated, reserved, total;
    } first_step;
} vc_memory;
#define VC_CUDNN_NONE 0
#define VC_CUDNN_BOUND 1
#define VC_CUDNN_TABLE 2

typedef struct {
    vc_phase phase;
    char layer[128];          /* layer path, e.g. "layers[12]" ("" for optimizer) */
    char kind[32];            /* layer kind */
    /* What is live at the peak; the parts sum to peak_allocated. */
    int64_t weights, gradients, optimizer_states, activations, temporaries, workspace;
} vc_peak;

typedef struct {
    char name[128];
    char kind[32];
    int ndim;
    int64_t output_shape[VC_MAX_DIMS];
    int64_t parameters;
    int64_t activations;      /* bytes this layer's ops hold for backward at end of forward */
} vc_layer_info;

typedef struct {
    int64_t parameters, trainable_parameters;
    vc_memory memory;
    vc_peak peak;
    char attention[192];      /* the first attention layer's kernel and why ("" when none) */
    /* --mode generate: max_memory_allocated() during the prefill (the first
     * forward and its token selection) and during the decoding steps (the
     * last step, whose cache is the longest: steps only grow), and the KV
     * cache the last step leaves (all layers, the whole batch) */
    struct {
        int64_t prefill_peak, decode_peak;
        int64_t decode_step;  /* the step of decode_peak (1 .. new_tokens - 1), 0 none */
        int64_t kv_cache;     /* bytes */
        int64_t kv_tokens;    /* tokens it holds per sequence (prompt + new_tokens - 1) */
        int64_t kv_mla;       /* MLA layers among them: transformers caches their full per-head keys and values
                               * (DeepseekV3Attention's key_states / value_states), not the latent */
        /* a model with Gated DeltaNet layers (qwen3_next): their conv and recurrent states in
         * Qwen3NextDynamicCache (all of them, the whole batch; a fixed size whatever the length),
         * kv_cache then the full-attention layers' keys and values; 0 and 0 otherwise */
        int64_t ssm_state;    /* bytes */
        int64_t ssm_layers;
        int64_t ssm_mamba;    /* of ssm_layers, Mamba2 layers (granitemoehybrid): their conv_states and ssm_states in
                               * HybridMambaAttentionDynamicCache */
        int64_t ssm_conv;     /* or LFM2's conv_cache entries (lfm2's Lfm2HybridConvCache: one [hidden, conv_L_cache]
                               * per decoder layer, the attention layers' unused), ssm_layers of them */
        /* an encoder-decoder (t5): the cross-attention's keys and values of the encoder's output kept
         * beside the decoder's (part of kv_cache; every decoder layer, the whole batch) and the
         * encoder's tokens they hold; 0 and 0 otherwise */
        int64_t cross_cache;  /* bytes */
        int64_t cross_tokens;
        /* mllama with --image: cross_cache and cross_tokens are the cross-attention layers' keys and values of the
         * images' tokens (a DynamicCache's layers, not an EncoderDecoderCache) */
        int cross_images;
    } generate;
    size_t nlayers;           /* per-layer rows (top-level instances) */
    vc_layer_info *layers;    /* owned; freed by vc_result_free */
    /* --pp (docs/parallel.md 2.6): one entry per kind of rank, first stage,
     * middle stages (the figures of the busiest of them), last stage; the
     * figures above are the busiest rank's. 0 entries without --pp. */
    size_t nranks;
    struct vc_rank_info *ranks; /* owned; freed by vc_result_free */
    /* --loss grpo (src/engine/grpo.c): the step's phases apart. on 1 when computed; generation_batch:
     * the sequences generated together; generate_peak: the generation's max_memory_allocated() with the
     * training state resident (weights, optimizer state, the previous step's buffered batch; no
     * gradients: zero_grad(set_to_none=True)), generate_reserved its reserve; kv_cache: the cache's
     * bytes after the last decoding step; train_peak / train_reserved: the rest of the step (the
     * reference pass when beta > 0, the policy's forward and backward, the optimizer step).
     * peak_allocated and reserved above are the larger of the two. */
    struct {
        int on;
        int64_t generation_batch, generate_peak, generate_reserved, kv_cache, train_peak, train_reserved;
        /* --use-vllm (the response layer, src/api/request.c, from vc_serve): the colocated engine's
         * gpu_memory_utilization share of the card (requested), its weights and KV cache, and what of them stays
         * allocated beside the training step (weights + KV cache; 0 with --vllm-sleep: sleep(level=2)), added to
         * peak_allocated, reserved and total above; 0 without vLLM */
        int64_t vllm_requested, vllm_weights, vllm_kv_cache, vllm_beside;
        /* --use-vllm's phases outside the training step (src/engine/grpo.c vc__grpo_phases, src/api/request.c
         * vllm_beside; trl @f2cd5771 trl/generation/vllm_generation.py sync_weights and generate): resident, what
         * the trainer holds between its steps (weights, optimizer state, the buffered batch, the cuBLAS workspace,
         * gradients kept by --zero-grad zero); sync_temp, sync_weights' largest transient (the adapters' delta weights of
         * merge_adapter / unmerge_adapter; 0 for a full fine-tune, whose load_weights copies in place);
         * sync_peak, resident + what of vLLM is allocated while it runs (its weights, woken by
         * wake_up(tags=["weights"]) under sleep mode; its KV cache without sleep mode; its CUDA graphs) +
         * sync_temp; vllm_peak, resident + vLLM's weights, KV cache and graphs while it generates; graphs, the
         * graphs its cudagraph_mode captures (serve.c vllm_graphs: PIECEWISE + FULL); graph_memory, their pool:
         * --vllm-cuda-graph-memory's figure (vLLM's logged one), else vramcalc's estimate where vLLM subtracts its
         * measure or (the V2 model runner) captures them without one, else 0 */
        int64_t resident, sync_temp, sync_peak, vllm_peak, vllm_graphs, vllm_graph_memory;
        /* --vllm-tensor-parallel-size (vllm_tp, 1 without): the engine's tensor-parallel group, weights and KV cache
         * above its rank's; vllm_comm, the group's NCCL communicator and all-reduce buffers on the rank (serve.c
         * vllm_snapshot): in total, of them vllm_comm_allocated (the custom all-reduce's rank_data, torch.empty) in
         * the caching allocator, beside the step like the graphs */
        int64_t vllm_tp, vllm_comm, vllm_comm_allocated;
        /* 1: vllm_graph_memory was taken off the KV cache (vLLM subtracts its measure); 0: on top of the pool (the
         * V2 model runner, whose profile_cudagraph_memory is 0; not CUDA) or none */
        int64_t vllm_graphs_off_pool;
        /* of resident (and of the generation phase's state beside generate_peak), the gradient bytes the trainer
         * holds between steps: every one under --zero-grad zero, else a layout's buffers allocated once and kept
         * (DDP's buckets, ZeRO-3's gradient partitions and IPG bucket); 0 on one GPU */
        int64_t resident_grads;
        /* --parallel zero3 (src/engine/grpo.c): what deepspeed.zero.GatheredParameters gathers around TRL's
         * generate() (ds3_gather_for_generation: every non-persistent parameter whole), 0 otherwise */
        int64_t gathered;
    } grpo;
} vc_result;

/* One kind of pipeline rank: its stages and global ranks (the pipeline rank
 * outermost, as Megatron numbers them), and the figures of one of its
 * stages, the busiest. */
typedef struct vc_rank_info {
    char kind[16];            /* "first", "middle", "last" */
    int64_t stage_first, stage_last; /* the stages of this kind */
    int64_t rank_first, rank_last;   /* their ranks: stage s has s x gpus/pp .. (s + 1) x gpus/pp - 1 */
    int64_t stage;            /* the stage whose figures follow */
    int64_t layers;           /* the layers it holds (decoder layers of a config.json; docs/parallel.md 2.6) */
    int64_t in_flight;        /* micro-batches whose activations it holds at its peak (1F1B) */
    int64_t parameters;       /* parameters on the stage (a tied weight on both ends counts on each) */
    vc_memory memory;
    vc_peak peak;
} vc_rank_info;

/* Simulates one steady-state training step (or an inference forward pass).
 * On success the caller frees r with vc_result_free. err is cleared first (as
 * vc_estimate_counts, vc_trace and vc_estimator_new clear theirs), then holds
 * the first error. */
VC_EXTERN vc_status vc_estimate(const vc_model *m, const vc_options *o, vc_result *r, vc_error *err);

/* The counts-only calculator, without a model: params weights + grads (+ optimizer
 * state per o->optim) + activation elements per sample x batch. */
VC_EXTERN vc_status vc_estimate_counts(int64_t params, int64_t activations_per_sample,
                                       const vc_options *o, vc_result *r, vc_error *err);

VC_EXTERN void vc_result_free(vc_result *r);

/* The simulated timeline, one line per allocation or free (phase, alloc or
 * free, category, bytes, running total, layer, aten op), for debugging and
 * for diffing against a measured per-op log. */
VC_EXTERN vc_status vc_trace(const vc_model *m, const vc_options *o, void (*line)(void *ctx, const char *text),
                             void *ctx, vc_error *err);

/* --mode generate (--max-context): the longest prompt that fits `capacity`
 * bytes (the total: reserved + context) with o's other settings, o->new_tokens
 * among them. *max_prompt = N: prompt N fits, N + 1 does not (0: a
 * one-token prompt does not fit). Each try is one estimate (their count in
 * *estimates, which may be NULL): the search doubles from 1, then bisects. */
VC_EXTERN vc_status vc_max_prompt(const vc_model *m, const vc_options *o, int64_t capacity, int64_t *max_prompt,
                                  int *estimates, vc_error *err);

/* ---- layer kinds ---- */
VC_EXTERN size_t vc_kind_count(void);
VC_EXTERN const char *vc_kind_name(size_t i);
VC_EXTERN const char *vc_kind_summary(size_t i);

/* ==== GPUs, sizes, batch sweeps and the largest batch ====
 *
 * A GPU is a preset (vc_gpu_find("h100-80gb")) or a size; vc_gpu_parse()
 * reads what the CLI's --gpu takes. An estimator builds the step's plan once
 * for (model, options) and replays it per batch size, which is what sweeps
 * and the max-batch search need: `vc_estimator_run(e, b, ...)` gives exactly
 * what vc_estimate() gives with o->batch = b. */

typedef struct vc_gpu {
    const char *name;     /* CLI name, lower case: "h100-80gb", "rtx4090" */
    const char *label;    /* product name: "NVIDIA H100 80GB HBM3 (SXM5)" */
    const char *vendor;   /* "NVIDIA" or "AMD" */
    int64_t capacity;     /* bytes: the total nvidia-smi / rocm-smi reports */
    int hopper;           /* 1: Hopper or Blackwell (sm90+): set vc_options.hopper */
    const char *source;   /* where the capacity comes from */
    int sm;               /* NVIDIA compute capability x 10 (70 Volta, 75 Turing, 80 Ampere, 89 Ada, 90 Hopper); 0 AMD */
    int sms;              /* multiprocessors (cudaDeviceProp.multiProcessorCount; AMD: compute units) */
    int sm_threads;       /* resident threads per multiprocessor (maxThreadsPerMultiProcessor) */
} vc_gpu;

VC_EXTERN size_t vc_gpu_count(void);
VC_EXTERN const vc_gpu *vc_gpu_get(size_t i);            /* NULL when i >= vc_gpu_count() */
/* A preset by name or alias, case-insensitive ("H100", "a10g"); NULL when unknown. */
VC_EXTERN const vc_gpu *vc_gpu_find(const char *name);
/* The preset name nearest to an unknown name, for "did you mean"; NULL when none is close. */
VC_EXTERN const char *vc_gpu_suggest(const char *name);

/* A byte size: plain bytes ("25769803776") or a number with a unit: B, KB,
 * MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024), e.g.
 * "24GiB", "24GB", "24000MiB", "1.5TB". A unit is written as here or in
 * lower case ("24gib"); "Gb" (gigabits) is not a unit. */
VC_EXTERN vc_status vc_parse_size(const char *s, int64_t *bytes, vc_error *err);

typedef struct {
    char name[80];          /* the preset name, with ":P%" when given; or the size as given */
    const vc_gpu *preset;   /* NULL for a plain size */
    int64_t total;          /* the card's memory in bytes */
    int64_t capacity;       /* what the fit check uses: total, or P% of it (rounded down) */
    double percent;         /* 100 unless ":P%" was given */
} vc_gpu_spec;

/* Reads "h100-80gb", "h100-80gb:90%", "24GiB", "24GiB:90%". Unknown names
 * fail with VC_ERR_USAGE and a message with the nearest preset, if any. */
VC_EXTERN vc_status vc_gpu_parse(const char *spec, vc_gpu_spec *out, vc_error *err);

/* ---- the CUDA context (src/engine/context.c, docs/context.md) ---- */
/* What nvidia-smi shows beyond the caching allocator's segments, for options
 * o (o->device: --gpu's preset, else an A100's 108 SMs; o->cuda_version,
 * o->module_loading, o->mode) and what the step runs (VC_USES_* bits): its
 * parts, and *total their sum; o->context >= 0 (--context) is the total as
 * given, every part 0. VC_ERR_USAGE for a CUDA version out of range or lazy
 * loading before CUDA 11.7 (the option named in err). */
VC_EXTERN vc_status vc_context_estimate(const vc_options *o, unsigned uses, vc_context_parts *parts, int64_t *total,
                                        vc_error *err);
/* "12.4" -> 1204 (VC_CUDA_OLDEST..VC_CUDA_NEWEST, minor 0-9), -1 otherwise; and back
 * ("12.4"; buf of at least 16 bytes). */
VC_EXTERN int vc_cuda_from_name(const char *s);
VC_EXTERN const char *vc_cuda_name(int version, char *buf, size_t n);
/* "auto", "lazy", "eager" <-> VC_MODULE_LOADING_*; -1 / "?" otherwise */
VC_EXTERN int vc_module_loading_from_name(const char *s);
VC_EXTERN const char *vc_module_loading_name(int m);

/* ---- cuDNN's convolution workspaces (src/engine/cudnn.c, docs/context.md) ---- */
/* A table of measured workspaces (bench/accuracy/cudnn_calibrate.py's output):
 * per convolution (its layer path) and batch, the bytes of the forward, the
 * backward-data and the backward-filter calls. */
typedef struct vc_cudnn_table vc_cudnn_table;
/* Reads and checks a table file strictly: on error VC_ERR_USAGE (or
 * VC_ERR_IO, VC_ERR_NOMEM) with err->file the file and err->path the JSON
 * path of what is wrong. *out is freed with vc_cudnn_table_free. */
VC_EXTERN vc_status vc_cudnn_table_load(const char *path, vc_cudnn_table **out, vc_error *err);
VC_EXTERN void vc_cudnn_table_free(vc_cudnn_table *t);
/* The --precision name the table was measured at ("fp32", "amp-bf16"). */
VC_EXTERN const char *vc_cudnn_table_precision(const vc_cudnn_table *t);
/* Parses a PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF string ("key:value,
 * key:value") into o->alloc_conf (src/engine/alloc_conf.c); VC_ERR_USAGE naming
 * an unknown key or a bad value. */
VC_EXTERN vc_status vc_alloc_conf_parse(const char *s, vc_options *o, vc_error *err);

/* ---- NCCL's buffers (src/engine/nccl.c, docs/context.md "NCCL") ---- */
/* Bytes one P2P-transport connection (GPUs of one node) holds on this GPU,
 * outside the caching allocator: *recv for a receive, *send for a send; read:
 * NCCL's P2P read mode (NVLink between sm80 GPUs), else write mode. */
VC_EXTERN void vc_nccl_p2p_connection(int read, int64_t *recv, int64_t *send);
/* One GPU's NCCL buffers in a multi-GPU layout (o->gpus, parallel, tp, pp, ep,
 * fsdp_replicate; o->nccl_topology, nccl_channels, device): its communicators
 * at the channels NCCL's topology search opens (src/engine/nccl.c
 * vc_nccl_per_gpu, docs/context.md "NCCL"); in memory.total. All 0 on one GPU. */
typedef struct {
    int64_t communicators;      /* process groups with an NCCL communicator on this GPU */
    int64_t ring_communicators; /* ... of them, those whose collectives run as rings (DP, TP) */
    int64_t p2p_peers;          /* peers of send/recv and all-to-all (pipeline neighbours, ep - 1) */
    int64_t channels;           /* collective channels per communicator (comm->nChannels; RCCL: the largest group's) */
    int64_t p2p_channels;       /* p2pnChannels */
    int64_t p2p_channels_per_peer; /* p2pnChannelsPerPeer */
    int64_t nvls_channels;      /* nvlsChannels: 0 where NVLS is not opened (no multicast, --nccl-nvls off) */
    int64_t ring_bytes;         /* ring_communicators x channels x (receive + send); RCCL on one MI300X node:
                                 * each group at its own channels, with the trees RCCL connects at init */
    int64_t p2p_bytes;          /* p2p_peers x p2p_channels_per_peer x (receive + send) */
    int64_t nvls_bytes;         /* per ring communicator with NVLS: its credits (2 MiB, at init), and where
                                 * its collectives run NVLS (one node; across nodes, its all-reduce's NVLS
                                 * trees) heads x nvls_channels x 2 x 1 MiB */
    int64_t bytes;              /* ring_bytes + p2p_bytes + nvls_bytes + tree_bytes + nvls_tree_bytes + pat_bytes */
    vc_nccl_topology topology;  /* the one used: --nccl-topology or --gpu's */
    const char *topology_row;   /* the table's row, in words */
    int64_t nodes;              /* nodes the world spans (--gpus-per-node) */
    int64_t net_bytes;          /* ... of ring_bytes, p2p_bytes, tree_bytes and nvls_tree_bytes, the network
                                 * transport's device buffers */
    /* Across nodes (issue 27): the ring communicators whose all-reduce spans nodes (DDP's,
     * Megatron's DP and TP groups, HSDP's replicate group) also connect NCCL's trees at their
     * first tree all-reduce: tree_bytes, the connections the trees add to the rings' (intra-node
     * chains both ways, the double binary tree's network links); with NVLS, the NVLS trees'
     * network links of each NVLS channel: nvls_tree_bytes */
    int64_t tree_communicators;
    int64_t tree_bytes;
    int64_t nvls_tree_bytes;
    int64_t nvls_credit_bytes;  /* ... of nvls_bytes, the credits ncclNvlsSetup allocates at init */
    /* PAT (NCCL 2.23+: reduce-scatter and all-gather of a communicator with one GPU per node; src/engine/
     * nccl.c pat_group): the data-parallel communicators whose all-gather / reduce-scatter spans nodes
     * one GPU a node (FSDP, HSDP's shard group, fsdp2, DeepSpeed ZeRO-1/2/3, megatron-dist under
     * --gpus-per-node 1), and the network connections PAT adds to their rings (in bytes and net_bytes) */
    int64_t pat_communicators;
    int64_t pat_bytes;
} vc_nccl_info;
VC_EXTERN void vc_nccl_per_gpu(const vc_options *o, vc_nccl_info *n);
/* The breakdown whose bytes are `bytes` (a pipeline's memory.nccl: the stage its total
 * is of; o->pp stages, o->nccl_stage 0), else vc_nccl_per_gpu's. */
VC_EXTERN void vc_nccl_per_gpu_of(const vc_options *o, int64_t bytes, vc_nccl_info *n);
/* VC_ERR_USAGE where the options name a topology with no row for the GPU, or
 * channels outside 1-64. */
VC_EXTERN vc_status vc_nccl_check(const vc_options *o, vc_error *err);
VC_EXTERN int vc_nccl_topology_from_name(const char *s); /* -1 when unknown */
VC_EXTERN const char *vc_nccl_topology_name(int t);
/* The rings of `communicators` communicators of `channels` channels each
 * (1-64): one receive and one send per channel on every GPU. */
VC_EXTERN vc_status vc_nccl_ring_bytes(int64_t channels, int64_t communicators, int read, int64_t *bytes,
                                       vc_error *err);

/* ==== serving capacity (--serve; docs/inference.md) ====
 * vLLM's KV cache sizing on one card: the share gpu_memory_utilization of
 * it, less the weights and a profiling run over max_num_batched_tokens
 * tokens, is cut into blocks of block_size tokens (all layers). src/engine/serve.c
 * names the vLLM functions followed. */
#define VC_KV_DTYPE_MAP(X) X(AUTO, "auto") X(FP16, "fp16") X(BF16, "bf16") X(FP8, "fp8")
#define VC__ENUM_KV(e, n) VC_KV_##e,
typedef enum { VC_KV_DTYPE_MAP(VC__ENUM_KV) VC_KV__N } vc_kv_dtype;
VC_EXTERN int vc_kv_dtype_from_name(const char *s);
VC_EXTERN const char *vc_kv_dtype_name(vc_kv_dtype k);

typedef struct {
    double gpu_memory_utilization;  /* the share of the card vLLM may use (0.9) */
    int64_t max_num_batched_tokens; /* the profiling run's tokens; 0: vLLM's default for the card */
    int64_t max_num_seqs;           /* its sampled requests (at most the tokens); 0: the default */
    int64_t block_size;             /* tokens per KV block (16) */
    vc_kv_dtype kv_cache_dtype;     /* auto: the model's dtype; fp8: one byte */
} vc_serve_options;
VC_EXTERN void vc_serve_options_init(vc_serve_options *s);

typedef struct {
    int64_t max_num_batched_tokens, max_num_seqs; /* as used (the defaults filled in) */
    int64_t weights;          /* parameters and buffers */
    int64_t profile_peak;     /* the profiling run's max_memory_allocated, weights included */
    int64_t requested;        /* gpu_memory_utilization x the card's memory */
    int64_t kv_cache;         /* requested - profile_peak: the KV cache pool */
    int64_t page_bytes;       /* one block: block_size tokens of every layer's keys and values */
    int64_t blocks, tokens;   /* blocks in the pool; tokens = blocks x block_size */
    int64_t request_tokens;   /* prompt + new tokens (o->prompt + o->new_tokens) */
    int64_t concurrency;      /* such requests at once: blocks / ceil(request_tokens / block_size) */
    /* the cache's kind: layers whose page is MLA's compressed latent (vLLM's
     * MLAAttentionSpec: kv_lora_rank + qk_rope_head_dim per token, one head),
     * 0 when every layer keeps full keys and values; latent, the elements of
     * one token's latent in one such layer */
    int64_t latent_layers, latent;
    /* vLLM's non-torch memory increase (memory_profiling's non_torch_increase,
     * vllm-project/vllm @ a6d5c390 vllm/utils/mem_utils.py; gpu_worker.py @
     * 35d5cda1): what the process holds outside PyTorch's allocator after the
     * profiling run beyond what it held at vLLM's snapshot, subtracted from the
     * pool (kv_cache = requested - profile_peak - non_torch). Its parts are the
     * library modules the profiling run loads lazily (src/engine/context.c's
     * cublas and kernels parts); 0 under eager module loading. NCCL's buffers
     * and the custom all-reduce's (set up before the snapshot) and the CUDA
     * graphs (captured after the pool is sized) are not in it at that commit. */
    int64_t non_torch, non_torch_cublas, non_torch_kernels;
    /* a hybrid model's Gated DeltaNet layers (qwen3_next, qwen3_5; src/engine/serve.c): vLLM keeps each
     * one's conv and recurrent state per request (MambaSpec), one page beside the attention layers'
     * paged keys and values; block_size is the attention block size vLLM then uses (raised so that an
     * attention page holds a state page: HybridAttentionMambaModelConfig), state_layers the DeltaNet
     * layers (0: none), state_bytes one layer's state of one request before padding to the page */
    int64_t block_size, state_layers, state_bytes;
    /* vLLM's CUDA graphs (vllm-project/vllm @ 9aaf83ef; src/engine/serve.c vllm_graphs): the
     * graphs its cudagraph_mode FULL_AND_PIECEWISE captures, PIECEWISE for every capture size and
     * FULL for the uniform-decode sizes up to max_num_seqs, each mode's largest (0 and 0 with
     * enforce_eager); graphs_profiled 1: Worker.determine_available_memory subtracts its measure
     * of them (profile_cudagraph_memory, on the GPU) from the pool, which vramcalc estimates
     * (graphs_estimate below) and takes off as vLLM does (graphs_subtracted); graphs_floor, that
     * measure's least (one MiB a graph past each mode's first);
     * graphs_why: why they are not profiled (VC_SERVE_GRAPHS_*) */
    int64_t graphs_piecewise, graphs_full, graphs_largest_piecewise, graphs_largest_full;
    int64_t graphs_profiled, graphs_floor, graphs_why;
    int64_t graphs_subtracted; /* what the pool had taken off for them: vc_options.cuda_graph_memory as given,
                                * else graphs_estimate where graphs_profiled (0 where not derived: an
                                * encoder-decoder's), else 0 */
    /* What the process holds at vLLM's memory snapshot (Worker.init_device, after the
     * distributed set-up; src/engine/serve.c vllm_snapshot): the CUDA context before the
     * first forward (src/engine/context.c's runtime, local memory and eager parts), and for
     * --tp the TP group's NCCL ring (PyNcclCommunicator's warm-up all-reduce), the custom
     * all-reduce's IPC buffers and rank data, and the symmetric-memory buffer. Not
     * subtracted from the pool; vLLM refuses to start when the card's memory less these is
     * under gpu_memory_utilization x the card's */
    int64_t snapshot_context, snapshot_nccl, snapshot_custom_ar, snapshot_symm_mem;
    /* A multimodal model's encoder profiling (src/engine/serve_mm.c; vLLM's profile_run
     * runs the vision encoder on a dummy batch before the language model's dummy run, under vLLM's
     * default limit_mm_per_prompt): mm_encoder 1 when derived (the Qwen towers, Gemma 3, Llama 4, Gemma 4, PaliGemma,
     * SmolVLM / Idefics3), 2 when the dummy batch is derived and the tower's run is not (mistral3's Pixtral tower), -1 for a multimodal
     * config whose dummy batch is not derived, 0 a text-only model; mm_items dummy items of
     * mm_item_tokens tokens each (mm_item_width x mm_item_height pixels), mm_budget the encoder budget
     * in tokens (MultiModalBudget.get_encoder_budget); mm_outputs the encoder outputs' bytes, held in
     * the encoder cache through the language model's dummy run and counted in profile_peak. */
    int64_t mm_encoder, mm_items, mm_item_tokens, mm_item_width, mm_item_height, mm_budget, mm_outputs;
    /* ... of non_torch, NCCL's NVLS buffers (src/engine/serve.c vllm_snapshot): the TP group's
     * first NVLS all-reduce in the profiling run, where neither the custom all-reduce nor the
     * symmetric-memory one takes the run's all-reduce (max_num_batched_tokens x hidden_size) and
     * the GPUs have NVLS (src/engine/nccl.c); 0 otherwise */
    int64_t non_torch_nccl;
    int64_t snapshot_nvls_credits; /* ... of snapshot_nccl, NCCL's NVLS credits (ncclNvlsSetup, at init) */
    /* An encoder-decoder (whisper; src/engine/serve_encdec.c): the profiling run's two phases, weights
     * included (encoder_peak: vLLM's encoder over the mm_items dummy clips; decoder_peak: the decoder's
     * dummy run beside the encoder's outputs; profile_peak the higher), cross_layers the decoder's
     * CrossAttention layers (CrossAttentionSpec, one KV cache group beside the self-attention layers'),
     * cross_tokens the encoder positions a request's cross-attention keeps, blocks_per_request the blocks
     * a request takes from both groups; all 0 for a decoder-only model */
    int64_t encoder_peak, decoder_peak, cross_layers, cross_tokens, blocks_per_request;
    /* ... of non_torch, the NCCL communicator of the profiling run's logits all-gather (--tp > 1 on
     * NVIDIA GPUs; src/engine/serve_nccl.c): torch.distributed's over the TP group, made at that
     * first collective; its NVLS credits and buffers where the GPUs have NVLS on one node, else its
     * ring; 0 otherwise */
    int64_t non_torch_logits_nccl;
    /* ... of the encoder profiling (mm_encoder 1; src/engine/serve_mm.c): mm_inputs the dummy batch's pixel
     * values on the GPU, held (profile_run's locals) through the language model's run too; mm_encoder_peak
     * the encoder phase's peak, weights included (the tower's live tensors at its worst op, the pixel values
     * and any outputs already made), profile_peak the larger of it and the language model phase's; -1 where
     * not modelled (--tp, an AMD card) and not in profile_peak; profile_lm the language model phase's peak,
     * weights included (the encoder's inputs and outputs with it): profile_peak for a text-only model */
    int64_t mm_inputs, mm_encoder_peak, profile_lm;
    /* vLLM's estimate of its CUDA graphs (profile_cudagraph_memory) derived from the capture's forward
     * (src/engine/serve_graphs.c): graphs_activations the activation peak of the model's forward at the
     * largest PIECEWISE size (the graph pool's first capture), graphs_workspace the capture stream's
     * cuBLAS workspace, graphs_estimate their sum + graphs_floor; all 0 with enforce_eager. Taken off the
     * pool (graphs_subtracted) where graphs_profiled, unless --cuda-graph-memory gives vLLM's logged measure */
    int64_t graphs_activations, graphs_workspace, graphs_estimate;
    /* the kind of state_layers above: 0 Gated DeltaNet layers (qwen3_next, qwen3_5), 1 MambaMixer2 layers
     * beside attention layers (granitemoehybrid, nemotron_h, falcon_h1: conv state (d_conv - 1, conv_dim) +
     * temporal state (heads, head_dim, d_state), src/engine/serve.c), 2 MambaMixer2 layers alone (mamba2,
     * attention-free: one block of every layer's state a request, block_size the request's tokens), 3 ShortConv
     * layers (lfm2, lfm2_moe: conv state (conv_L_cache - 1, hidden)) */
    int64_t state_mamba;
    /* DeepSeek-V4 (deepseek_v4; src/engine/serve_dsv4.c), all 0 for another model: v4_layers the sliding-only, CSA
     * (compress ratio 4) and HCA (128) layers; v4_block_bytes[k] one layer of kind k's fp8_ds_mla pages per 256 tokens
     * of context (CSA: latent + indexer keys; HCA: latent; sliding-only: none); v4_swa_request every layer's
     * sliding-window pages and v4_state_request the compressors' state pages one request holds (bounded by the window,
     * not its length); v4_request_bytes one request's pages of every kind (concurrency = kv_cache / it); v4_buffers
     * the top-k and MTP hidden buffers allocated with the model (in weights); v4_workspace the profiling run's kept
     * workspace and v4_activations its live tensors at the worst point (both in profile_peak) */
    int64_t v4_layers[3], v4_block_bytes[3], v4_swa_request, v4_state_request, v4_request_bytes;
    int64_t v4_buffers, v4_workspace, v4_activations;
} vc_serve_result;
/* vc_options.cuda_graph_memory: take vramcalc's estimate of vLLM's measure off the pool */
#define VC_CUDA_GRAPH_MEMORY_ESTIMATE (-2)
/* vc_options.cuda_graph_memory: not given: vLLM's default, the estimate taken off where vLLM measures the
 * graphs, nothing elsewhere (src/engine/serve.c) */
#define VC_CUDA_GRAPH_MEMORY_VLLM_DEFAULT (-1)
/* vc_serve_result.graphs_why */
#define VC_SERVE_GRAPHS_PROFILED 0  /* captured, and measured and subtracted by vLLM */
#define VC_SERVE_GRAPHS_EAGER 1     /* --enforce-eager: none */
#define VC_SERVE_GRAPHS_NOT_CUDA 2  /* an AMD card: vLLM profiles them on CUDA only */
#define VC_SERVE_GRAPHS_V2_RUNNER 3 /* the V2 model runner, whose profile_cudagraph_memory returns 0 */

/* Sizes vLLM's KV cache for m on gpu (its total memory) with o's precision
 * and attention; o->prompt + o->new_tokens is one request's length; o->tp > 1:
 * one of vLLM's tensor_parallel_size workers, m split as vLLM splits it (kv
 * heads replicated below o->tp, MXFP4 experts padded on Hopper, Gated DeltaNet
 * heads: src/hf/hf_tp.c), not as Megatron does. Fails
 * with VC_ERR_USAGE when nothing is left for the cache or one request does
 * not fit in it (vLLM refuses to start). */
VC_EXTERN vc_status vc_serve(const vc_model *m, const vc_options *o, const vc_serve_options *s, const vc_gpu_spec *gpu,
                             vc_serve_result *r, vc_error *err);
/* The precision vLLM serves m in on gpu with its default --dtype auto: the
 * config.json's torch_dtype, float32 (or none) as bf16 (fp16 before sm80),
 * a dtype the card lacks as its first supported one (src/engine/serve.c). A model
 * file that is not a config.json counts as float32. */
VC_EXTERN vc_precision vc_serve_auto_precision(const vc_model *m, const vc_gpu_spec *gpu);

typedef struct vc_estimator vc_estimator;

#define VC_EST_NO_LAYERS 1u   /* results carry no per-layer rows (faster sweeps) */

/* Builds the plan for (m, o) once. o->batch is only the first batch tried;
 * m must outlive the estimator. */
VC_EXTERN vc_status vc_estimator_new(const vc_model *m, const vc_options *o, unsigned flags, vc_estimator **out,
                                     vc_error *err);
/* The counts-only calculator (vc_estimate_counts) behind the same interface. */
VC_EXTERN vc_status vc_estimator_new_counts(int64_t params, int64_t activations_per_sample, const vc_options *o,
                                            vc_estimator **out, vc_error *err);
/* The estimate for `batch` samples; the caller frees r with vc_result_free. */
VC_EXTERN vc_status vc_estimator_run(vc_estimator *e, int64_t batch, vc_result *r, vc_error *err);
/* memory.total for `batch`; VC_ERR_OVERFLOW when it exceeds 2^63 bytes. */
VC_EXTERN vc_status vc_estimator_total(vc_estimator *e, int64_t batch, int64_t *total, vc_error *err);
VC_EXTERN void vc_estimator_free(vc_estimator *e);
/* Plans the estimator has built so far (the first included): one per range
 * of batches over which the model's plan holds (src/engine/sweep.c). */
VC_EXTERN size_t vc_estimator_plans_built(const vc_estimator *e);

/* The largest batch searched for (2^40): where memory does not grow with the
 * batch (a counts-only estimate without activations), max batch stops here. */
#define VC_MAX_BATCH_LIMIT (INT64_C(1) << 40)

/* The largest batch N <= VC_MAX_BATCH_LIMIT whose memory.total is at most
 * `capacity` while N + 1's is not (or N + 1 overflows); 0 when batch 1 does
 * not fit. Exponential search then bisection: about 2 log2(N) estimates.
 * *estimates (may be NULL) receives how many were made. */
VC_EXTERN vc_status vc_estimator_max_batch(vc_estimator *e, int64_t capacity, int64_t *max_batch, int *estimates,
                                           vc_error *err);

/* ---- the longest sequence that fits (--max-seq) ----
 * For a model read from a config.json (the sequence length is a load
 * option, vc_hf_options.seq): the largest N whose memory.total with
 * o->batch samples of N tokens is at most `capacity` while N + 1's is not
 * (or N + 1 is refused by the model: *limited = 1 then, e.g. GPT-2's 1,024
 * learned positions, or the 2^40 limit); 0 when one token does not fit.
 * Each length tried is the config loaded at that length (with m's LoRA
 * adapters) and one estimate: an exponential search from m's length, then
 * bisection, about 2 log2 of the range's estimates (*estimates). m itself
 * is not changed (vc_model_set_seq loads it at the answer). VC_ERR_USAGE
 * for a vramcalc model file, or one whose input --input replaced. */
VC_EXTERN vc_status vc_model_max_seq(const vc_model *m, const vc_options *o, int64_t capacity, int64_t *max_seq,
                                     int *limited, int *estimates, vc_error *err);

/* ---- the option table and requests (src/api/) ----
 * One table of every option (src/api/options.def): the command line's
 * parser and --help, Python's keyword arguments and the docs are made from
 * it. A request is a set of options by their table name, values as text
 * (parsed and range-checked here, as the command line always did), and the
 * model file(s); vc_request_run applies the defaults and the combination
 * rules, loads the model and runs the estimate, sweep or search asked for;
 * the response renders as the CLI's table, JSON or CSV text (and the SVG of
 * a plot). Messages of the request name options by their table name
 * between VC_OPTION_MARK bytes ("\x1f" "max_batch" "\x1f", or "\x1f"
 * "mode=generate" "\x1f" with a value): vc_error_format_for spells them as
 * the front end does (--max-batch, --mode generate; max_batch=,
 * mode=generate). Nothing here prints, exits or keeps global state; a
 * request and its response belong to one thread at a time. */
typedef enum {
    VC_OPTION_COUNT,  /* a whole decimal number (a positive one unless said) */
    VC_OPTION_REAL,   /* a decimal number in a range */
    VC_OPTION_SIZE,   /* bytes, or a number with a unit (vc_parse_size) */
    VC_OPTION_CHOICE, /* one of `choices` */
    VC_OPTION_STRING, /* free text (a GPU, a file name, a release) */
    VC_OPTION_FLAG,   /* no value: given or not */
    VC_OPTION_SHAPE,  /* dimensions: 3,224,224 */
    VC_OPTION_LIST    /* a comma-separated list (names, batch sizes) */
} vc_option_type;

typedef enum {
    VC_SECTION_MODEL, VC_SECTION_TRAINING, VC_SECTION_FINETUNE, VC_SECTION_PARALLEL, VC_SECTION_GENERATE,
    VC_SECTION_SERVE, VC_SECTION_GPU, VC_SECTION_OUTPUT, VC_SECTION_COUNTS, VC_SECTION_INFO, VC_SECTION__N
} vc_option_section;
/* The section's title in --help ("parallel training"). */
VC_EXTERN const char *vc_option_section_title(vc_option_section s);

/* What an option applies to (vc_option_info.applies): the inputs, the
 * modes, the multi-GPU layouts; FRONT_END: the front end's own (--help,
 * --no-color), never given to a request. */
#define VC_APPLIES_MODEL_FILE 0x001u /* a vramcalc model JSON */
#define VC_APPLIES_CONFIG 0x002u     /* a Hugging Face config.json */
#define VC_APPLIES_COUNTS 0x004u     /* --params: counts only, no model */
#define VC_APPLIES_TRAIN 0x008u
#define VC_APPLIES_INFER 0x010u
#define VC_APPLIES_GENERATE 0x020u
#define VC_APPLIES_SERVE 0x040u
#define VC_APPLIES_PARALLEL 0x080u   /* a multi-GPU layout's setting */
#define VC_APPLIES_FRONT_END 0x100u

typedef struct {
    const char *name;         /* table name, snake_case: "lora_targets" (messages, Python) */
    const char *flag;         /* the CLI's long option without "--": "lora-targets" */
    char letter;              /* the CLI's short option ('b'), or 0 */
    const char *arg;          /* the value's placeholder in --help ("N"); NULL: a flag, no value */
    vc_option_type type;
    vc_option_section section;
    unsigned applies;         /* VC_APPLIES_* bits */
    const char *default_text; /* the default in words ("1", "adam"); "" when none */
    const char *choices;      /* "a, b, c" for a closed set, else NULL */
    const char *help;         /* one paragraph; "{}" stands for the choices; NULL: a hidden alias */
} vc_option_info;

VC_EXTERN size_t vc_option_count(void);
/* Row i of the table (--help's order), NULL past the end. */
VC_EXTERN const vc_option_info *vc_option_at(size_t i);
/* By table name ("max_batch"), or NULL. */
VC_EXTERN const vc_option_info *vc_option_find(const char *name);
/* By the CLI's long name without "--" ("max-batch"), or NULL. */
VC_EXTERN const vc_option_info *vc_option_find_flag(const char *flag);

typedef enum { VC_SPELL_CLI, VC_SPELL_PYTHON } vc_spelling;
/* The option nearest to a misspelt one (by the CLI's long name, "--bach" or
 * "bach", or by the table name, "bach"), within an edit distance of 2 and a
 * third of its length; NULL when none is that close. */
VC_EXTERN const vc_option_info *vc_option_suggest(const char *name, vc_spelling how);
/* The help text with "{}" replaced by the choices and its options spelt as
 * the CLI writes them (--mode generate); returns its length. */
VC_EXTERN size_t vc_option_help(const vc_option_info *o, char *buf, size_t n);
/* The same, its options spelt for a front end (VC_SPELL_PYTHON: mode=generate). */
VC_EXTERN size_t vc_option_help_for(const vc_option_info *o, vc_spelling how, char *buf, size_t n);
/* A section's title spelt for a front end (vc_option_section_title: the CLI's); returns its length. */
VC_EXTERN size_t vc_option_section_title_for(vc_option_section s, vc_spelling how, char *buf, size_t n);
/* vc_error_format, the option marks spelt for a front end: --max-batch and
 * --mode generate (CLI), max_batch= and mode=generate (Python). A request's
 * message longer than msg continues in path (then line is -1, file ""):
 * this joins them. */
VC_EXTERN void vc_error_format_for(const vc_error *err, vc_spelling how, char *buf, size_t n);
#define VC_OPTION_MARK '\x1f'

typedef struct vc_request vc_request;
typedef struct vc_response vc_response;

/* A request with every option at its default (NULL: out of memory). */
VC_EXTERN vc_request *vc_request_new(void);
VC_EXTERN void vc_request_free(vc_request *q);
/* Sets option `name` (its table name) to `value`, text parsed and checked
 * as the CLI does (a flag takes NULL, "true" or "1"; "false" or "0" unsets
 * it). VC_ERR_USAGE naming the option for an unknown name, a bad value, a
 * front end's own option. */
VC_EXTERN vc_status vc_request_set(vc_request *q, const char *name, const char *value, vc_error *err);
/* The model: a vramcalc model JSON or a Hugging Face config.json ("-":
 * standard input). Once; run refuses a second (or one with --params). */
VC_EXTERN vc_status vc_request_add_model(vc_request *q, const char *path, vc_error *err);
/* Checks the whole request (the defaults, every combination rule), loads
 * the model with its options (tensor-parallel share, LoRA, expert
 * parallelism, quantized weights, input shape) and runs what it asks:
 * --list-gpus, --emit-model, --trace, --sweep, --max-batch, --max-seq,
 * --max-context, --serve or one estimate. On VC_OK *out is a response the
 * caller frees with vc_response_free. */
VC_EXTERN vc_status vc_request_run(const vc_request *q, vc_response **out, vc_error *err);
/* A program that owns its process (the CLI) may let the load build its JSON
 * tree in one arena freed whole: cJSON's hooks are process-wide, so only
 * where no other thread uses cJSON meanwhile. Off by default. */
VC_EXTERN void vc_request_set_json_arena(vc_request *q, int on);

typedef enum { VC_FORMAT_DEFAULT, VC_FORMAT_TABLE, VC_FORMAT_JSON, VC_FORMAT_CSV } vc_format;
/* How a table may draw (the front end's terminal): width in columns (0:
 * 80), UTF-8 block characters, ANSI colours. NULL: 80 columns, ASCII. */
typedef struct {
    int width;
    int utf8, color;
} vc_render_options;
/* The response as the CLI prints it in format f (DEFAULT: the request's
 * --format): *text (NUL-terminated, *len bytes without it; free with
 * vc_text_free). A trace or an emitted model is the same text in every
 * format. */
VC_EXTERN vc_status vc_response_render(const vc_response *r, vc_format f, const vc_render_options *ro, char **text,
                                       size_t *len, vc_error *err);
/* --plot: the file the request named (NULL: none) and the chart's SVG text. */
VC_EXTERN const char *vc_response_plot_path(const vc_response *r);
VC_EXTERN vc_status vc_response_plot_svg(const vc_response *r, char **svg, size_t *len, vc_error *err);
/* 0: estimated and fits (or no --gpu, or a sweep); 1: does not fit --gpu,
 * or a search found nothing that fits: the CLI's exit status. */
VC_EXTERN int vc_response_status(const vc_response *r);
VC_EXTERN void vc_response_free(vc_response *r);
/* The layer kinds, one a line, each summary wrapped to width (0: none). */
VC_EXTERN vc_status vc_layer_list_text(int width, char **text, size_t *len, vc_error *err);
VC_EXTERN void vc_text_free(char *text);

#ifdef __cplusplus
}
#endif
#endif /* VRAMCALC_H */
