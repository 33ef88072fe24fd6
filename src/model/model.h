/*
 * model.h — a loaded model: expanded layer instances over a value graph.
 *
 * Loading flattens Sequential blocks and `repeat` copies into a list of
 * instances in execution order. Values are the model inputs and every
 * instance's output; parameters and buffers live in model-wide tables so
 * that tied weights are one entry.
 */
#ifndef VC_MODEL_H
#define VC_MODEL_H

#include "hf.h"
#include "layer.h"


#define VC_MAX_PARAMS 256 /* per instance (an LSTM has up to 5 per layer and direction) */

typedef struct {
    vc_shape shape;
    vc_dtype dt;    /* VC_DT_FLOAT or VC_DT_I64 */
    int producer;   /* instance index, -1 for a model input */
} vc_value;

typedef struct {
    int64_t numel;
    bool trainable;
    int8_t nd;          /* shape as the module creates it */
    uint8_t flags;      /* VC_PARAM_* */
    int owner;          /* instance that declared it */
    const char *name;   /* below the module: "weight" (the full name is owner's path + "." + name) */
    const int64_t *dims;
    uint8_t fmt;        /* storage format (vc_weights; src/policy/quant.c): VC_WEIGHTS_DENSE unless quantized */
} vc_param_entry;

typedef struct {
    int64_t numel;
    vc_dtype dt;
} vc_buffer_entry;

typedef struct {
    const vc_kind *kind;
    void *cfg;          /* parsed config (shared by repeat copies) */
    char *path;         /* "layers[3]", "layers[2][1].layers[0]" */
    char *module;       /* "module": the source's qualified name (layer4.2.relu, from the exporter); NULL none */
    int nin;
    int *in;            /* nin value indices (in the arena) */
    int out;            /* value index */
    int np, nb;
    int *params;        /* indices into the param table */
    int *bufs;          /* indices into the buffer table */
    int64_t nparams;    /* numel of own (non-tied) parameters */
    int ckpt;           /* checkpoint region, -1 none */
    int ops;            /* the autograd ops one copy may record in a step: vc_kind.ops plus what its setup added */
    bool frozen;
    const char *name;   /* the layer's `name` (in the arena), NULL none */
} vc_inst;

/* The model's loss: a row of src/engine/loss.c's table each. VOCAB_PARALLEL: Megatron's
 * vocab-parallel cross-entropy of a tensor-parallel rank's logits (src/hf/hf.c writes it for --tp). */
typedef enum { VC_LOSS_MEAN, VC_LOSS_CROSS_ENTROPY, VC_LOSS_CAUSAL_LM, VC_LOSS_VOCAB_PARALLEL, VC_LOSS_LIGER, VC_LOSS_CCE, VC_LOSS_CHUNKED, VC_LOSS_LOGITS_MEAN,
               VC_LOSS_DPO, VC_LOSS_DPO_PRECOMPUTED, VC_LOSS_ORPO, VC_LOSS_KTO, VC_LOSS_SEQ2SEQ_LM,
               VC_LOSS_CHUNKED_NLL, VC_LOSS_GRPO, VC_LOSS_LIGER_CE, VC_LOSS_PALIGEMMA, VC_LOSS_SIGLIP,
               VC_LOSS_CLIP, VC_LOSS_TRL_NLL, VC_LOSS_LOGITS_SUM } vc_loss;

struct vc_model {
    char *name;
    char *file;         /* for error messages */
    char *text;         /* the JSON source, kept for vc_model_set_input_shape */
    size_t text_len;
    vc_inst *inst;
    size_t ninst, cap_inst;
    vc_value *val;
    size_t nval, cap_val;
    vc_param_entry *par;
    size_t npar, cap_par;
    vc_buffer_entry *buf;
    size_t nbuf, cap_buf;
    int ninputs;        /* values 0..ninputs-1 are the model inputs */
    char **input_names;
    int output;         /* value index of the model output */
    int nregions;       /* checkpoint regions */
    /* A block's input stays referenced by the caller until the block returns
     * (nn.Sequential's `input`): value blk_val[i] lives through instance blk_last[i]. */
    int *blk_val, *blk_last;
    size_t nblk, cap_blk;
    /* "held_until" (a Python variable of the source: a decoder layer's normed hidden_states, the
     * attention's argument until o_proj returns): value hold_val[i] lives through instance
     * hold_last[i]. Not applied to vLLM's profiling run (--serve: vLLM's own model code, whose
     * fused in-place add + norm the engine does not model). */
    int *hold_val, *hold_last;
    size_t nhold, cap_hold;
    vc_loss loss;
    int loss_head;      /* a fused loss: the LM head's instance (vc__loss_head), -1 */
    int64_t loss_chunks; /* "loss_chunks": chunked_ce's num_output_chunks (default 8) */
    int64_t max_positions; /* "max_positions": the longest sequence generation may reach; 0 none */
    const char *input_fixed; /* "input_fixed": why the sizes do not follow --input (arena), NULL */
    int64_t nparams, ntrainable;
    /* what loading applies on top of the file (vc_model_set_input_shape, vc_model_set_lora) */
    bool has_override;
    vc_shape override;
    vc_lora lora;
    vc_quant quant;     /* --weights (vc_model_set_weights), used when has_quant */
    bool has_quant;
    vc_quant cfg_quant; /* a config.json's quantization_config (src/policy/quant.c), format DENSE when none */
    int nlora;          /* layers that got adapters */
    int nsaved;         /* layers copied by modules_to_save (vc_lora.modules_to_save) */
    vc_hf_options hf;   /* a Hugging Face config.json: its options (src/hf/hf.c) */
    vc_hf_release tf;   /* ... and the transformers release it runs as (--transformers; zeroed: the newest) */
    char *gen_json;     /* ... and the model it became (malloc'd), NULL otherwise */
    bool hf_part;       /* a part of such a model (a pipeline stage, src/parallel/pipeline.c): its hf options hold */
    const char *lora_targets; /* PEFT's default target_modules for it (static), NULL otherwise */
    bool images_one_sequence; /* its vision tower runs a batch's images as one sequence (vc_hf_images_one_sequence) */
    bool image_decode;        /* a twin for generate()'s decoding steps after the images' prefill (vc__model_twin_decode) */
    int whisper_part;         /* a part of a whisper model for --serve's profiling run (vc_hf_split.whisper_part) */
    const char *ia3_targets, *ia3_feedforward, *ln_targets; /* PEFT's IA3 and LN tuning defaults for its model_type
                                                          * (static, src/model/peft.c), NULL none */
    int64_t ep;         /* --ep: the expert-parallel ranks its SparseMoE layers are split over (vc_model_set_ep), 0/1 none */
    int64_t tp;         /* a config.json: the tensor-parallel ranks it was built for one of (vc_model_set_tp), 0/1 none */
    int sp;             /* ... with sequence parallelism */
    int vllm;           /* ... as vLLM's ranks (--serve, src/hf/hf_tp.c), not Megatron's: 0 at tp <= 1 */
    int mxfp4_align;    /* ... vLLM's MXFP4 experts padded to it per rank (vc__vllm_mxfp4_align), 0 none */
    struct vc_model *split; /* m built at the other splits estimates asked for, a list through their own .split
                             * (vc__model_at; freed with m, or when m is built again), NULL */
    int nmoe;           /* SparseMoE layers set up for ep > 1 (layers/llm.c) */
    int cfg_dtype;      /* its config's dtype (vc_hf_dtype), -1 none: --serve's default precision */
    vc_hf_logits gen_lp; /* generate()'s logits processors from its config's keys (vc_hf_logits_processors), zero none */
    bool cfg_no_fp16;   /* vLLM refuses float16 for its model_type */
    struct vc_arena *arena;
    /* what vc__twin_reshape read from the tree m's text builds at m's options (reshape.c), kept for m's next
     * twins: made by the load (model.c load_text) for the struct at that address, emptied by every reload
     * (reset_model); a copy of the struct (generate.c's `at`) or a model made otherwise has none of its own */
    struct vc_twin_facts *twin_facts;
    /* A pipeline stage of a larger model (src/parallel/pipeline.c, --pp): the
     * instances it runs, as a model of their own, and what its step does
     * that a whole model's does not. */
    struct {
        bool on;
        bool last;            /* it computes the loss; otherwise its backward starts from a received gradient */
        bool recv;            /* its inputs are received from the stage before, one per micro-batch */
        bool *input_rg;       /* per input: received with requires_grad (a float activation that needs one) */
        int64_t index;        /* the stage */
        int64_t blocks;       /* the layers (split units) it holds */
        int64_t in_flight;    /* micro-batches forwarded and not yet backwarded at its peak */
        int64_t micro_batches;
        /* the schedule's holds (pipeline_hold.c): the stage's instances in nchunks
         * model chunks (the interleaved schedule's; 1 otherwise), chunk c from instance
         * chunk_first[c]; hold: the engine's state at each chunk's backwards (its
         * layout: pipeline.h, vc__pp_schedule) */
        int32_t nchunks;
        int32_t *chunk_first;
        int64_t *hold;
    } stage;
};

/* src/hf/hf_t5.c: what a T5 model's estimate refuses (precision, quantized weights, pipeline stages). */
vc_status vc__t5_check(const vc_model *m, const vc_options *o, vc_error *err);
/* src/hf/hf_mpnet.c: what an MPNet model's estimate does not model (autocast, pipeline stages); vc__t5_check
 * calls it for a model with T5Attention and no T5LayerNorm. */
vc_status vc__mpnet_check(const vc_model *m, const vc_options *o, vc_error *err);
/* src/hf/hf_layers.c: what a DINOv2 model's estimate does not model (autocast: LayerScale's float32 promotion). */
vc_status vc__dinov2_check(const vc_model *m, const vc_options *o, vc_error *err);
/* src/hf/hf_whisper.c: what a Whisper model's estimate refuses (generate and serve, precision, quantized
 * weights, pipeline stages). */
vc_status vc__whisper_check(const vc_model *m, const vc_options *o, bool serve, vc_error *err);
/* DeepSeek-V3.2 (deepseek_v32; src/hf/hf_deepseek_v32.c): under transformers (serve false) its indexer is modelled
 * in fp32 and bf16, other precisions refused naming --precision. */
vc_status vc__dsa_check(const vc_model *m, const vc_options *o, bool serve, vc_error *err);
/* src/hf/hf_whisper.c: for a whisper config at path (a file, a directory, a Hugging Face id), what
 * WhisperGenerationMixin.generate decodes when --prompt / --new-tokens are not given: its forced decoder
 * prompt's length into *prompt, its new tokens into *new_tokens (those given are kept, and a given *prompt is
 * the one the new tokens follow); nothing for another file. VC_ERR_USAGE where generate() would fail. */
vc_status vc__whisper_gen_defaults(const char *path, bool prompt_given, int64_t *prompt, bool new_given, int64_t *new_tokens,
                                   vc_error *err);
/* --serve of a whisper config when --prompt or --new-tokens is not given: the request vLLM's
 * transcription endpoint builds, its 4-token decoder prompt and the rest of max_target_positions (the
 * derived max_model_len) as new tokens (src/hf/hf_whisper.c); nothing for another model. */
vc_status vc__whisper_serve_defaults(const char *path, bool prompt_given, int64_t *prompt, bool new_given,
                                     int64_t *new_tokens, vc_error *err);
/* model.c: m as the estimate's options split it (o->tp, o->sp, o->ep; they are the one
 * place that says so): m itself when it was built for that split (the request loads it so;
 * a pipeline stage is a part, as built), else m built again at it, kept in m's list (freed
 * with m) for the next estimate. Errors as vc_model_set_tp's and vc_model_set_ep's. */
vc_status vc__model_at(const vc_model *m, const vc_options *o, const vc_model **use, vc_error *err);
/* model.c: vc__model_at at vLLM's split of the options' tensor_parallel_size (--serve, src/hf/hf_tp.c), its
 * MXFP4 experts' intermediate size padded per rank to a multiple of mxfp4_align (vc__vllm_mxfp4_align). */
vc_status vc__model_at_vllm(const vc_model *m, const vc_options *o, int mxfp4_align, const vc_model **use, vc_error *err);
/* src/engine/serve.c: vLLM's MXFP4 MoE backend on a preset (get_mxfp4_backend), VC_MXFP4_NONE without one */
enum { VC_MXFP4_NONE, VC_MXFP4_TRITON, VC_MXFP4_SM100_FI_BF16, VC_MXFP4_MARLIN, VC_MXFP4_ROCM_TRITON };
int vc__vllm_mxfp4_backend(const vc_gpu *dev);
/* ... the multiple its Mxfp4MoEMethod.create_weights pads a rank's intermediate size (hidden 0) or the experts'
 * hidden size (hidden 1) to, 0 none; its name */
int vc__vllm_mxfp4_pad(int backend, int hidden);
const char *vc__vllm_mxfp4_name(int backend);
/* ... the intermediate size's multiple on the card (a preset's backend), 0 without a preset */
int vc__vllm_mxfp4_align(const vc_gpu_spec *gpu);
/* model.c: vc_model_load_file_hf at a tensor-parallel split (the request's: o->tp, o->sp), as the
 * transformers release the config runs as (tf: NULL, a zeroed one). */
vc_status vc__model_load_file_split(const char *path, const vc_hf_options *hf, const vc_hf_release *tf, int64_t tp, int sp,
                                    int vllm, int mxfp4_align, vc_model **out, vc_error *err);

/* model.c: m loaded again with its input [seq] (its text, Hugging Face
 * options and LoRA kept): the passes of --mode generate (src/engine/generate.c).
 * The caller frees *out with vc_model_free. */
vc_status vc__model_twin(const vc_model *m, int64_t seq, vc_model **out, vc_error *err);
/* model.c: vc__model_twin for the decoding steps of a config.json run with --image: the language model
 * at seq tokens with no image rows, the tower's layers as the prefill's (the same structure) and not run
 * (vc_hf_split.image_decode, src/hf/hf_vision.c). */
vc_status vc__model_twin_decode(const vc_model *m, int64_t seq, vc_model **out, vc_error *err);
/* model.c: m's text loaded again at [seq] tokens as whisper's part `part` (vc_hf_split.whisper_part, without
 * m's adapters): the decoder vLLM's dummy run uses (src/engine/serve_encdec.c) */
vc_status vc__model_part(const vc_model *m, int part, int64_t seq, vc_model **out, vc_error *err);

/* model.c: a new model from m's text with its config.json options but
 * seq tokens, and m's LoRA adapters (the --max-seq search, maxseq.c). */
vc_status vc__model_load_seq(const vc_model *m, int64_t seq, vc_model **out, vc_error *err);

/* reshape.c: the --max-seq search's models of m (a config.json's, at the options' split) at other lengths:
 * vc__seq_probe_load is vc__model_load_seq(m, seq), the same model or error, made from m's instances
 * set up again at the new input when the config's tree at seq differs from m's only in its name and
 * input length. The models it returns borrow m's names and index lists: free them before m. */
typedef struct vc_seq_probe vc_seq_probe;
vc_status vc__seq_probe_new(const vc_model *m, vc_seq_probe **out, vc_error *err);
vc_status vc__seq_probe_load(vc_seq_probe *p, int64_t seq, vc_model **out, vc_error *err);
void vc__seq_probe_free(vc_seq_probe *p);
/* reshape.c: c, a model vc__seq_probe_load(p, ...) made, given the generated text (vc_model_generated_json)
 * the load at its length has: a reshape keeps m's, whose name and input are m's length's */
vc_status vc__seq_probe_json(vc_seq_probe *p, vc_model *c);
/* reshape.c: vc__model_twin's model (m loaded again with its input [seq]) made from m's instances set up
 * again at [seq], when m's config builds the tree m->gen_json prints at m's options; otherwise an error and
 * nothing made (the caller loads it). It borrows m's names and index lists: free it before m. */
vc_status vc__twin_reshape(const vc_model *m, int64_t seq, vc_model **out);
/* reshape.c: m's twin_facts (vc_model.twin_facts): made for m (NULL when out of memory: none kept), emptied,
 * freed (each only m's own) */
struct vc_twin_facts *vc__twin_facts_new(const vc_model *m);
void vc__twin_facts_clear(vc_model *m);
void vc__twin_facts_free(vc_model *m);
/* model.c: vc__model_twin by loading m's text again (the reference test_reshape compares with) */
vc_status vc__model_twin_load(const vc_model *m, int64_t seq, vc_model **out, vc_error *err);

/* quant.c: a vc_quant's settings against its row (bits, group, block), VC_ERR_USAGE
 * naming --weights (vc_model_set_weights). */
vc_status vc__quant_settings_check(const vc_quant *q, vc_error *err);

/* PEFT methods (src/model/peft.c). vc__peft_on: l adds adapters (a rank, or IA3
 * or LN tuning with targets). vc__peft_match: PEFT's target_modules match of `name` against a
 * comma-separated list. */
bool vc__peft_on(const vc_lora *l);
bool vc__peft_match(const char *name, const char *list);
void vc__peft_defaults(const char *model_type, const char **ia3, const char **feedforward, const char **ln);
bool vc__ia3_feedforward(const char *feedforward, const char *name);
/* PEFT's default target_modules for method p (LoRA's, IA3's, LN tuning's) for its model_type, "" none. */
const char *vc__model_peft_targets(const vc_model *m, vc_peft p);

/* A loss (the model's "loss"; src/engine/loss.c), one row per vc_loss: what follows the
 * model's forward in a training step. A fused row computes the LM head itself: in
 * training the model's forward stops before the head (the last Linear, with the
 * Scale/Tanh soft-capping after it: vc__loss_head) and the row's op takes the head's
 * input and weight. */
typedef struct vc_loss_row {
    const char *name;    /* the model JSON's "loss" value */
    const char *option;  /* its --loss name for a config.json's causal LM, NULL none */
    const char *summary;
    bool classes;        /* needs an output with a class dimension */
    bool causal;         /* a causal-LM loss: token ids in, generation possible */
    bool fused;          /* replaces the LM head in training */
    void (*emit)(struct vc_build *b);
    const char *tp_why;  /* why a tensor-parallel rank (--tp) cannot run it, NULL it can */
} vc_loss_row;
const vc_loss_row *vc_loss_row_get(vc_loss l);
int vc__loss_count(void);
int vc__loss_from_name(const char *name);  /* a row by its JSON name, -1 */
int vc__loss_from_option(const char *opt); /* a row by its --loss name, -1 */
/* The LM head a fused loss replaces: the last Linear instance, when every later one is a
 * Scale or Tanh on the previous one's output and the last gives the model's output; -1. */
int vc__loss_head(const vc_model *m);

#endif
