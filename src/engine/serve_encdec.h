/*
 * serve_encdec.h — --serve for an encoder-decoder (whisper): vLLM's profiling run of its encoder and
 * its decoder, its weights, and its KV pool of self- and cross-attention layers (serve_encdec.c).
 */
#ifndef VC_SERVE_ENCDEC_H
#define VC_SERVE_ENCDEC_H

#include "engine.h"
#include "model.h"

/* The model vLLM's decoder dummy run is estimated on (a whisper config's decoder as vLLM runs it without
 * encoder outputs: src/hf/hf_whisper.c vllm_decoder), at len tokens a request; *part NULL (and VC_OK) for
 * a model that is not a whisper config. Checks what vLLM's config refuses for an encoder-decoder first.
 * The caller frees *part (vc_model_free) after the plan built on it. */
vc_status vc__serve_encdec_decoder(const vc_model *m, const vc_options *o, const vc_serve_result *r, int64_t len,
                                   vc_model **part, vc_error *err);

/* After the decoder's dummy run was simulated (dec: its sim): r->weights as vLLM loads the whole model,
 * the encoder phase (vLLM's encoder over the dummy clips, r->mm_*), r->profile_peak the higher phase. */
vc_status vc__serve_encdec_profile(const vc_model *m, const vc_options *o, const vc_sim *dec, vc_dtype act,
                                   vc_serve_result *r, vc_error *err);

/* After r->kv_cache is known: the pool of the decoder's self-attention (FullAttentionSpec) and
 * cross-attention (CrossAttentionSpec) layers, its blocks, tokens and the requests that fit; vLLM's CUDA
 * graphs for an encoder-decoder (FULL_DECODE_ONLY). */
vc_status vc__serve_encdec_pool(const vc_model *m, const vc_serve_options *so, vc_dtype act, int kv_bytes,
                                vc_serve_result *r, vc_error *err);

#endif
