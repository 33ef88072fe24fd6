/*
 * hf.h — Hugging Face config.json input (src/hf/hf.c), for the loader.
 * It sits in src/model/ beside the loader that calls it: src/hf/ implements
 * it and includes src/model/, never the other way round (include_cycles).
 */
#ifndef VC_HF_H
#define VC_HF_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "vramcalc/vramcalc.h"

/* A config.json: an object with "model_type" and no "layers". */
bool vc_hf_is_config(const cJSON *root);
/* The transformers release a config runs as (--transformers, src/policy/release.c): the
 * release, 100*major + minor (0: VC_TRANSFORMERS_DEFAULT), and whether the experts'
 * implementation is the release's default for the family (the option not given) rather than
 * vc_hf_options.experts as set. A zeroed one (the C API's loads): the newest release, the
 * options as set. */
typedef struct {
    int release;
    bool experts_default;
    bool generate; /* loaded for --mode generate (not --serve): an encoder's sequence classifier is refused (hf.c) */
    bool serve;    /* loaded for --serve (vLLM): what vLLM's model for the family does not run is refused (hf.c) */
} vc_hf_release;
/* The tensor-parallel split a config.json's model is built for (the estimate's
 * vc_options.tp and .sp): one of tp Megatron ranks (1: none), sp with sequence
 * parallelism; vllm: one of vLLM's tensor_parallel_size ranks instead (--serve:
 * the model files' split, src/hf/hf_tp.c), meaningful at tp > 1 only. */
typedef struct {
    int64_t tp;
    int sp;
    int vllm;
    int mxfp4_align; /* vllm: the multiple vLLM's MXFP4 MoE backend pads the experts' per-rank intermediate
                      * size to (hf_tp.c), 0 none or not modelled */
    int image_decode; /* the decoding steps of generate() after a prefill that ran the images (src/engine/generate.c):
                       * the tower written as for the prefill but never run, the sequence the text tokens only
                       * (src/hf/hf_vision.c) */
    int whisper_part; /* --serve's profiling run of a whisper model (src/engine/serve_encdec.c):
                       * 2 the decoder as vLLM's dummy run runs it (no encoder output: the cross-attention's keys and
                       * values not computed); 0 the whole model (src/hf/hf_whisper.c) */
} vc_hf_split;
/* A caller's vc_hf_options as this library's (policy.h's vc__options_in for vc_options). */
vc_status vc__hf_options_in(const vc_hf_options **o, vc_hf_options *full, vc_error *err);
/* The equivalent vramcalc model tree (the caller deletes it), or an error
 * naming the config key. rel may be NULL (a zeroed one). */
vc_status vc_hf_build(const cJSON *cfg, const vc_hf_options *o, vc_hf_split split, const vc_hf_release *rel, cJSON **model,
                      vc_error *err);
/* "llama, mistral, ..." */
const char *vc_hf_families(void);
/* PEFT's default LoRA target_modules for the config's model_type ("" when none). */
const char *vc_hf_lora_targets(const cJSON *cfg);
/* Whether the family's vision tower runs a batch's images as one sequence (Qwen2.5-VL's), so that
 * its memory is not per sample: --image is refused above batch 1 there (src/api/request.c). */
bool vc_hf_images_one_sequence(const cJSON *cfg);
/* The largest image vLLM's dummy inputs give a Qwen vision tower (the published processors' max_pixels, smart_resize):
 * its width and height, and its tokens (src/hf/hf_vision.c; --serve's encoder profiling, src/engine/serve.c). */
int64_t vc__hf_vision_max_image(bool qwen3, int64_t patch, int64_t merge, int64_t *w, int64_t *h);
/* The config's "dtype" (transformers v5) or "torch_dtype": float32, float16
 * or bfloat16 (with their torch aliases), -1 when absent or another name;
 * *no_fp16 when vLLM refuses float16 for its model_type. */
int vc_hf_dtype(const cJSON *cfg, bool *no_fp16);
/* generate()'s logits processors that a config.json's own generation keys make (GenerationConfig.from_model_config,
 * generation/utils.py @000034a _get_logits_processor), for the families whose generate() follows them (bart:
 * src/hf/hf_bart.c vc_hf_logits_processors); zeroed for the others. ngram: NoRepeatNGramLogitsProcessor's
 * no_repeat_ngram_size (0 none); bos, eos: forced_bos_token_id / forced_eos_token_id given (ForcedBOSTokenLogitsProcessor,
 * ForcedEOSTokenLogitsProcessor); bad: bad_words_ids of single tokens (NoBadWordsLogitsProcessor); other: the first key of another processor the config sets (not modelled: generate
 * refuses it), NULL none. */
typedef struct {
    int64_t ngram;
    bool bos, eos;
    bool bad; /* bad_words_ids given (NoBadWordsLogitsProcessor; single-token sequences: src/hf/hf_bart.c) */
    const char *other;
} vc_hf_logits;
void vc_hf_logits_processors(const cJSON *cfg, vc_hf_logits *lp);

/* DeepSeek-V3.2 (model_type deepseek_v32) under vLLM: the sizes of DeepSeek Sparse Attention's indexer that
 * --serve adds beside the model vc_hf_build makes of it (src/hf/hf_deepseek_v32.c; src/engine/serve.c). */
typedef struct {
    int64_t layers;        /* num_hidden_layers: one Indexer (and its key cache) per decoder layer */
    int64_t nh, hd, topk;  /* index_n_heads, index_head_dim, index_topk */
    int64_t shared;        /* glm_moe_dsa: the "shared" indexer layers (no Indexer, no indexer key cache) */
    const char *unread_key; /* the key that makes them when vLLM does not read it (indexer_types, a list
                             * index_topk_pattern): --serve refused; NULL none */
} vc_hf_dsa;
/* True, *d filled, when the config (its text, as vc_model keeps it) is a deepseek_v32 one; its keys are those
 * vc_hf_build checked. */
bool vc__hf_dsa_vllm(const cJSON *cfg, vc_hf_dsa *d);
/* True when layer i of a glm_moe_dsa config (one vc_hf_build checked) is a "shared" indexer layer: no indexer, the
 * previous full layer's top-k (GlmMoeDsaConfig.__post_init__'s indexer_types; src/hf/hf_deepseek_v32.c). */
bool vc__hf_glm_shared(const cJSON *cfg, int64_t i);

#endif
